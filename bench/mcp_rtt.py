#!/usr/bin/env python3
"""MCP round trip of run_code through bin/sbx-mcp over stdio (part of make
bench): a Python print(1), one call at a time (after a warm-up), and 8
calls at once; wall time from writing the request to reading its answer.

  bench/mcp_rtt.py [N]   (N sequential calls, default 30)
"""
import json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
conf = os.environ.get("SBX_CONF", os.path.join(ROOT, "etc", "sandbox.conf"))
p = subprocess.Popen([os.path.join(ROOT, "bin", "sbx-mcp"), "-c", conf], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
seq = 0


def send(method, params):
    global seq
    seq += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": seq, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return seq


def wait(ids):
    left, got = set(ids), {}
    while left:
        m = json.loads(p.stdout.readline())
        if m.get("id") in left:
            left.discard(m["id"])
            got[m["id"]] = m
    return got


run = {"name": "run_code", "arguments": {"language": "python", "code": "print(1)"}}
wait([send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})])
for _ in range(3):
    wait([send("tools/call", run)])
one = []
for _ in range(n):
    t0 = time.perf_counter()
    r = wait([send("tools/call", run)])
    one.append((time.perf_counter() - t0) * 1000)
    assert list(r.values())[0]["result"]["structuredContent"]["stdout"] == "1\n"
eight = []
for _ in range(5):
    t0 = time.perf_counter()
    wait([send("tools/call", run) for _ in range(8)])
    eight.append((time.perf_counter() - t0) * 1000)
p.stdin.close()
p.wait()
print("MCP run_code python print(1), one at a time: median %.1f ms, p95 %.1f ms, min %.1f ms (n=%d)" %
      (statistics.median(one), sorted(one)[int(len(one) * 0.95) - 1], min(one), n))
if os.environ.get("SBX_BENCH_SUMMARY"):
    with open(os.environ["SBX_BENCH_SUMMARY"], "a") as f:
        f.write("MCP `run_code` round trip (stdio)\tmedian %.1f ms\n" % statistics.median(one))
print("MCP run_code python print(1), 8 at once (max_concurrent %s): median %.1f ms for all 8 (n=5)" %
      (os.environ.get("MAXC", "from the configuration"), statistics.median(eight)))
