# A session's web app for port.mjs: a page that talks to it over a
# WebSocket, an echo of what a request brought, a redirect; and answers a
# hostile or broken app gives (RAW); stdlib only.
import base64, hashlib, http.server, json, socket, struct, sys

PAGE = b"""<!doctype html><meta charset=utf-8><title>sbx port test</title>
<p id=s>waiting</p><script>
const ws = new WebSocket(location.href.replace(/^http/, "ws").replace(/[^/]*$/, "") + "ws");
ws.onopen = () => ws.send("ping from the page");
ws.onmessage = (e) => { document.getElementById("s").textContent = "echo: " + e.data; };
ws.onerror = () => { document.getElementById("s").textContent = "websocket failed"; };
</script>"""

RAW = {
    "/interim": b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal",
    "/switch": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nraw bytes",
    "/chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "/garbage": b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
    "/empty": b"\r\n\r\n",
    "/lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello",
    "/tabcookie": b"HTTP/1.1 200 OK\r\nSet-Cookie: sbx_dash\t=evil; Path=/\r\nSet-Cookie: SBX_DASH=evil\r\nContent-Length: 2\r\n\r\nok",
}


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # a WebSocket's 101 is HTTP/1.1's

    def reply(self, code, ctype, body, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        if self.path in RAW:
            self.wfile.write(RAW[self.path])
            self.wfile.flush()
            self.close_connection = True
            return
        if self.path == "/reset":  # a length, part of the body, then a reset
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if self.path == "/redirect":
            return self.reply(302, "text/plain", b"", [("Location", "/target")])
        if self.path.startswith("/big"):
            return self.reply(200, "application/octet-stream", b"x" * (3 << 20))
        if self.path == "/":
            return self.reply(200, "text/html; charset=utf-8", PAGE,
                              [("Set-Cookie", "sbx_dash=stolen; Path=/"), ("Set-Cookie", " sbx_dash =stolen"),
                               ("Set-Cookie", "app=1; Path=/")])
        self.reply(404, "text/plain", b"no\n")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        seen = {k.lower(): ", ".join(self.headers.get_all(k)) for k in set(self.headers.keys())}
        out = json.dumps({"body": body.decode(), "path": self.path, "headers": seen}).encode()
        self.reply(200, "application/json", out)

    def websocket(self):
        key = self.headers["Sec-WebSocket-Key"].encode()
        accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            op, n = head[0] & 15, head[1] & 127
            if n == 126:
                n = struct.unpack(">H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 128 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op == 8:
                self.wfile.write(b"\x88\x00")
                return
            reply = b"echo " + data if op == 1 else data
            self.wfile.write(bytes([0x80 | op, len(reply)]) + reply if len(reply) < 126 else
                             bytes([0x80 | op, 126]) + struct.pack(">H", len(reply)) + reply)
            self.wfile.flush()

    def log_message(self, *a):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8000), H)
print("listening on", srv.server_address[1], flush=True)
srv.serve_forever()
