#!/usr/bin/env python3
"""t/net/server.py NETDIR: the servers of t/net/internet.bash's world.

Run by internet_up inside the world's network namespace, after the
addresses are on its loopback.  NETDIR/listeners has one listener a line,
"KIND ADDRESS PORT NAME [CERTS]":

  http   plain HTTP/1.1
  https  the same over TLS; CERTS is a comma-separated list of names whose
         certificates (NETDIR/certs/NAME.pem, key NETDIR/certs/key.pem)
         it serves, the one the ClientHello's SNI names, else the first
  echo   raw TCP: every byte read is written back, until the client's EOF
  flip   DNS over UDP for one name, NAME: its A record alternates between
         CERTS' two addresses query by query, with a TTL of 0 (a name
         that rebinds between a proxy's check and its connect, were it to
         look twice); every other question is refused

NAME is the server's, named in /hello's answer.  The server named a.test
also serves NETDIR/www as static files (the package indexes and the git
repository), which it first builds (build_www): pip's wheel and npm's
tarball are made here, so that set-up starts one Python, not three.

Every HTTP request, TLS handshake that failed, connection that ended
with no request and echo connection is appended as one JSON line to NETDIR/requests.log (one write of a line
opened O_APPEND, under a lock: lines of concurrent threads never mix),
before the answer is sent: once a client has its answer, its line is
there for the test to read.  (A handshake or connection the client
gave up on is recorded once the server sees it end, which may be after
the client is over: a test awaits that line.)  NETDIR/server.ready appears once every
listener listens.
"""

import base64
import hashlib
import http.server
import io
import json
import os
import socket
import socketserver
import struct
import ssl
import sys
import tarfile
import threading
import zipfile

NETDIR = sys.argv[1]
LOG_LOCK = threading.Lock()
LOG_FD = os.open(os.path.join(NETDIR, "requests.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
WWW = os.path.join(NETDIR, "www")


def log(rec):
    line = (json.dumps(rec, sort_keys=True) + "\n").encode()
    with LOG_LOCK:
        os.write(LOG_FD, line)


# --- what a.test serves as files: the pip index, the npm registry --------

def b64(digest):
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def build_wheel(path):
    """sbxdemo 1.0, pure Python: a valid wheel (METADATA, WHEEL, RECORD
    with each file's hash), made with zipfile."""
    files = {
        "sbxdemo/__init__.py": 'MESSAGE = "hello from sbxdemo 1.0 (pip)"\n\n\ndef hello():\n    print(MESSAGE)\n',
        "sbxdemo/__main__.py": "from sbxdemo import hello\n\nhello()\n",
        "sbxdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\nSummary: sbx's test package (t/net)\n",
        "sbxdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: sbx t/net/server.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for name, text in files.items():
        data = text.encode()
        record += "%s,sha256=%s,%d\n" % (name, b64(hashlib.sha256(data).digest()), len(data))
    files["sbxdemo-1.0.dist-info/RECORD"] = record + "sbxdemo-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), text)


def build_npm_tarball():
    """sbxdemo 1.0.0's .tgz (package/package.json, package/index.js)."""
    files = {
        "package/package.json": json.dumps({"name": "sbxdemo", "version": "1.0.0", "main": "index.js",
                                            "description": "sbx's test package (t/net)", "license": "MIT"}) + "\n",
        "package/index.js": 'module.exports = () => "hello from sbxdemo 1.0.0 (npm)";\n'
                            "if (require.main === module) console.log(module.exports());\n",
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 1577836800
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def build_www():
    whl = os.path.join(WWW, "files", "sbxdemo-1.0-py3-none-any.whl")
    os.makedirs(os.path.dirname(whl), exist_ok=True)
    build_wheel(whl)
    with open(whl, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    # PEP 503: the root lists the projects, a project's page its files
    write(os.path.join(WWW, "simple", "index.html"),
          '<!DOCTYPE html>\n<html><body><a href="/simple/sbxdemo/">sbxdemo</a></body></html>\n')
    write(os.path.join(WWW, "simple", "sbxdemo", "index.html"),
          '<!DOCTYPE html>\n<html><body><a href="/files/sbxdemo-1.0-py3-none-any.whl#sha256=%s">'
          "sbxdemo-1.0-py3-none-any.whl</a></body></html>\n" % sha)
    # npm: the package document (GET /npm/sbxdemo) and its tarball
    tgz = build_npm_tarball()
    write(os.path.join(WWW, "npm", "sbxdemo", "-", "sbxdemo-1.0.0.tgz"), tgz)
    doc = {"name": "sbxdemo", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
        "name": "sbxdemo", "version": "1.0.0", "main": "index.js",
        "dist": {"tarball": "https://a.test/npm/sbxdemo/-/sbxdemo-1.0.0.tgz",
                 "shasum": hashlib.sha1(tgz).hexdigest(),
                 "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}}}}
    write(os.path.join(WWW, "npm", "sbxdemo", "index.json"), json.dumps(doc))


TYPES = {".html": "text/html; charset=utf-8", ".json": "application/json"}


# --- HTTP and HTTPS -----------------------------------------------------

class HandshakeFailed(Exception):
    pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as pip's and npm's clients use it
    server_version = "sbx-t-net"
    sni = None

    def setup(self):
        srv = self.server
        if srv.tls:
            # the handshake here, in the connection's thread, not in the
            # accepting one (a client that never finishes it blocks no other)
            tls = srv.tls.wrap_socket(self.request, server_side=True, do_handshake_on_connect=False)
            tls.settimeout(30)
            try:
                tls.do_handshake()
            except (OSError, ssl.SSLError) as e:
                log(dict(self.where(), kind="tls", sni=getattr(tls, "sbx_sni", None), error=str(e)))
                tls.close()
                raise HandshakeFailed() from e
            self.request = tls
            self.sni = getattr(tls, "sbx_sni", None)
        super().setup()

    def handle(self):
        self.requests = 0
        try:
            super().handle()
        except (ConnectionError, ssl.SSLError, TimeoutError):
            pass
        if not self.requests:
            # a connection (a TLS one whose handshake was done) that ended
            # with no request: a client that gave up on the certificate,
            # a tunnel opened and left
            log(dict(self.where(), kind="no-request", tls=bool(self.server.tls), sni=self.sni))

    def where(self):
        return {"server": self.server.name, "addr": self.server.addr, "port": self.server.port,
                "client": self.client_address[0]}

    def log_message(self, *args):
        pass  # requests.log has them

    def record(self):
        self.requests += 1
        log(dict(self.where(), kind="https" if self.server.tls else "http", sni=self.sni,
                 host=self.headers.get("Host"), method=self.command, path=self.path))

    def answer(self, code, body, ctype="text/plain; charset=utf-8"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        self.record()
        path, _, query = self.path.partition("?")
        if path == "/hello":
            return self.answer(200, ("hello from %s via Host %s\n" % (self.server.name, self.headers.get("Host"))).encode())
        if path == "/big":
            args = dict(a.partition("=")[::2] for a in query.split("&") if a)
            try:
                n = int(args.get("n", ""))
            except ValueError:
                return self.answer(400, b"/big?n=BYTES\n")
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            while n > 0 and self.command != "HEAD":
                self.wfile.write(chunk[:n])
                n -= len(chunk)
            return None
        if self.server.www:
            return self.static(path)
        return self.answer(404, b"not found\n")

    do_HEAD = do_GET

    def static(self, path):
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") for p in parts):
            return self.answer(404, b"not found\n")
        f = os.path.join(WWW, *parts)
        if os.path.isdir(f):
            f = next((os.path.join(f, i) for i in ("index.html", "index.json") if os.path.isfile(os.path.join(f, i))), f)
        if not os.path.isfile(f):
            return self.answer(404, b"not found\n")
        with open(f, "rb") as fh:
            body = fh.read()
        return self.answer(200, body, TYPES.get(os.path.splitext(f)[1], "application/octet-stream"))

    def do_POST(self):
        self.record()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        if self.path.partition("?")[0] == "/echo":
            return self.answer(200, body, self.headers.get("Content-Type") or "application/octet-stream")
        return self.answer(404, b"not found\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, addr, port, name, tls, www):
        self.address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        self.addr, self.port, self.name, self.tls, self.www = addr, port, name, tls, www
        super().__init__((addr, port), Handler)

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], HandshakeFailed):  # recorded already
            super().handle_error(request, client_address)

    def server_bind(self):
        # HTTPServer's would look up the address's name (a DNS query, and
        # the world's own resolv.conf is the host's)
        socketserver.TCPServer.server_bind(self)


def tls_context(names):
    """A context serving the first name's certificate, or that of the name
    the client's SNI gives, when it is among names."""
    certs = os.path.join(NETDIR, "certs")
    ctxs = {}
    for n in names:
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        c.load_cert_chain(os.path.join(certs, n + ".pem"), os.path.join(certs, "key.pem"))
        ctxs[n] = c
    default = ctxs[names[0]]

    def pick(sock, name, _ctx):
        sock.sbx_sni = name  # recorded in requests.log
        if name in ctxs:
            sock.context = ctxs[name]

    default.sni_callback = pick
    return default


# --- echo ---------------------------------------------------------------

class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.server
        log({"server": s.name, "addr": s.addr, "port": s.port, "client": self.client_address[0], "kind": "echo"})
        try:
            while True:
                b = self.request.recv(65536)
                if not b:
                    break
                self.request.sendall(b)
        except OSError:
            pass


class EchoServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, port, name):
        self.address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        self.addr, self.port, self.name = addr, port, name
        super().__init__((addr, port), Echo)


# --- a rebinding name --------------------------------------------------------

class Flip(socketserver.BaseRequestHandler):
    def handle(self):
        q, sock = self.request
        s = self.server
        if len(q) < 12:
            return
        # the question: labels up to a zero byte, then type and class
        i, labels = 12, []
        while i < len(q) and q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
            i += 1 + q[i]
        if i + 5 > len(q):
            return
        qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
        question = q[12:i + 5]
        ok = ".".join(labels).lower() == s.name
        answer = b""
        if ok and qtype == 1:
            with s.lock:
                addr = s.addrs[s.count % 2]
                s.count += 1
            log({"server": s.name, "kind": "dns", "answer": addr})
            answer = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 0, 4) + socket.inet_aton(addr)
        flags = 0x8180 if ok else 0x8185  # a response, recursion available; else REFUSED
        head = q[:2] + struct.pack(">HHHHH", flags, 1, 1 if answer else 0, 0, 0)
        sock.sendto(head + question + answer, self.client_address)


class FlipServer(socketserver.ThreadingUDPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, port, name, addrs):
        self.addr, self.port, self.name, self.addrs = addr, port, name, addrs
        self.count, self.lock = 0, threading.Lock()
        super().__init__((addr, port), Flip)


def main():
    build_www()
    servers = []
    with open(os.path.join(NETDIR, "listeners")) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            kind, addr, port, name = w[0], w[1], int(w[2]), w[3]
            if kind == "echo":
                servers.append(EchoServer(addr, port, name))
            elif kind == "flip":
                servers.append(FlipServer(addr, port, name, w[4].split(",")))
            else:
                tls = tls_context(w[4].split(",")) if kind == "https" else None
                servers.append(Server(addr, port, name, tls, name == "a.test"))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    ready = os.path.join(NETDIR, "server.ready")
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(ready + ".tmp", ready)
    threading.Event().wait()


if __name__ == "__main__":
    main()
