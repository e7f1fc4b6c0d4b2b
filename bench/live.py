#!/usr/bin/env python3
"""Live output through bin/sbx-mcp over stdio (part of make bench): a Python
program prints the wall-clock time, 20 lines 250 ms apart (output after a
quiet interval goes out at once), then 40 lines 50 ms apart (within
LIVE_MS, 100 ms, lines wait for the next tick: lib/run/live.h); each line
comes back in a progress notification, and its latency is when the client
read it less when the program printed it (the sandbox and the client share
the machine's clock).

  bench/live.py [RUNS]   (RUNS calls of each, default 3)
"""
import json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
conf = os.environ.get("SBX_CONF", os.path.join(ROOT, "etc", "sandbox.conf"))
p = subprocess.Popen([os.path.join(ROOT, "bin", "sbx-mcp"), "-c", conf], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
code = "import time\nfor i in range(%d):\n    print('%%.6f' %% time.time(), flush=True)\n    time.sleep(%g)\n"


def send(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()


send(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
rid = 0


def measure(lines, gap):
    global rid
    lat = []
    for _ in range(runs):
        rid += 1
        send(rid, "tools/call", {"name": "run_code", "arguments": {"language": "python", "code": code % (lines, gap)},
                                 "_meta": {"progressToken": "live-%d" % rid}})
        while True:
            m = json.loads(p.stdout.readline())
            now = time.time()
            if m.get("id") == rid:
                break
            params = m.get("params", {})
            if m.get("method") != "notifications/progress" or "_meta" not in params:
                continue
            for line in params["message"].splitlines():
                lat.append((now - float(line)) * 1000)
    lat.sort()
    print("lines %3.0f ms apart: median %5.1f ms, p95 %5.1f ms, max %5.1f ms (%d lines)" %
          (gap * 1000, statistics.median(lat), lat[int(len(lat) * 0.95) - 1], lat[-1], len(lat)))
    return statistics.median(lat)


print("# live output over stdio: a print to its progress notification (%d runs each)" % runs)
sparse = measure(20, 0.25)
dense = measure(40, 0.05)
p.stdin.close()
p.wait()
if os.environ.get("SBX_BENCH_SUMMARY"):
    with open(os.environ["SBX_BENCH_SUMMARY"], "a") as f:
        f.write("MCP live output, a print to its notification (stdio): lines 250 ms / 50 ms apart\tmedian %.1f ms / %.0f ms\n"
                % (sparse, dense))
