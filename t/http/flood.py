#!/usr/bin/env python3
"""flood.py HOST PORT IDLE TRICKLE SECONDS: what issue 47 class 2 did to
sbx-mcp --listen, from one address: IDLE connections that send nothing and
TRICKLE connections that send a request head a line every half second,
never finishing it.  "ready" on stdout once all are open (or refused);
then, until every connection is closed or SECONDS pass, it keeps
trickling; at the end one JSON line: how many of each the server closed,
and the longest a trickling connection lived."""
import json, select, socket, sys, time

host, port, n_idle, n_trickle, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
conns = []  # [socket, kind, opened, closed_at]
for kind, n in (("idle", n_idle), ("trickle", n_trickle)):
    for _ in range(n):
        s = socket.socket()
        try:
            s.connect((host, port))
        except OSError:
            s.close()
            continue
        if kind == "trickle":
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
        conns.append([s, kind, time.time(), None])
print("ready", flush=True)
start = time.time()
line = 0
while time.time() - start < limit and any(c[3] is None for c in conns):
    line += 1
    for c in conns:
        if c[3] is not None:
            continue
        s = c[0]
        r, _, _ = select.select([s], [], [], 0)
        gone = False
        if r:
            try:
                gone = s.recv(4096) == b""
            except OSError:
                gone = True
        if not gone and c[1] == "trickle":
            try:
                s.sendall(b"X-Slow-%d: 1\r\n" % line)
            except OSError:
                gone = True
        if gone:
            c[3] = time.time()
            s.close()
    time.sleep(0.5)
out = {}
for kind in ("idle", "trickle"):
    mine = [c for c in conns if c[1] == kind]
    out[kind] = {"opened": len(mine), "closed": sum(c[3] is not None for c in mine),
                 "longest": max([c[3] - c[2] for c in mine if c[3] is not None] or [0])}
print(json.dumps(out), flush=True)
