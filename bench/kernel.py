#!/usr/bin/env python3
"""run_cell against sandbox_exec through bin/sbx-mcp over stdio (part of
make bench), in one session:

  1. print(1): a cell in a warm kernel against a fresh run (sandbox_exec),
     one call at a time after a warm-up; wall time from writing the request
     to reading its answer.
  2. a pandas workflow: a CSV of ROWS rows (made in the workspace first),
     loaded once in the kernel and asked ten questions, against ten fresh
     runs that each load it and answer one; both with 1 GiB and one CPU.

  bench/kernel.py [N] [ROWS]   (N calls for 1, default 30; ROWS default 400000)
"""
import json, os, shutil, statistics, subprocess, sys, time

from benchconf import ROOT, temp_conf

n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 400000
tmp, conf = temp_conf("kernel")
p = subprocess.Popen([os.path.join(ROOT, "bin", "sbx-mcp"), "-c", conf], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
seq = 0


def call(name, args):
    global seq
    seq += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": seq, "method": "tools/call",
                              "params": {"name": name, "arguments": args}}) + "\n")
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == seq:
            r = m["result"].get("structuredContent", m["result"])
            if r.get("status", "success") != "success":
                sys.exit("bench/kernel.py: %s failed: %s" % (name, json.dumps(r)[:500]))
            return r


def timed(name, args):
    t0 = time.perf_counter()
    call(name, args)
    return (time.perf_counter() - t0) * 1000


def pct(v, q):
    return sorted(v)[max(0, int(len(v) * q) - 1)]


p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}) + "\n")
p.stdin.flush()
json.loads(p.stdout.readline())
sid = call("sandbox_initialize", {"language": "python"})["session_id"]
# Both sides get the same sandbox: 1 GiB, one CPU.
size_args = {"memory": "1g", "cpus": 1}
cell = {"session_id": sid, "code": "print(1)"}
for _ in range(3):
    call("run_cell", cell)
    call("sandbox_exec", cell)
warm = [timed("run_cell", cell) for _ in range(n)]
fresh = [timed("sandbox_exec", cell) for _ in range(n)]

call("sandbox_exec", {"session_id": sid, "timeout": 60, "code":
     "import random\nrandom.seed(1)\nwith open('data.csv', 'w') as f:\n    f.write('a,b,c,d\\n')\n"
     "    for i in range(%d):\n        f.write('%%d,%%.3f,%%s,%%d\\n' %% (i, random.random(), 'xyz'[i %% 3], i %% 97))\n" % rows})
size = call("list_files", {"session_id": sid})["files"]
size = sum(x["size"] for x in size if x["path"] == "data.csv")
queries = ["len(df)", "round(df.b.mean(), 6)", "df.groupby('c').d.sum().to_dict()", "int(df[df.d > 50].a.count())",
           "round(df.b.quantile(0.9), 6)", "df.d.value_counts().head(3).to_dict()", "int(df.sort_values('b').a.iloc[-1])",
           "round((df.a * df.b).sum(), 3)", "int(df[df.c == 'x'].d.max())", "round(df.describe().loc['std', 'b'], 6)"]
load = "import pandas as pd\ndf = pd.read_csv('data.csv')\n"
call("run_cell", {"session_id": sid, "reset": True, "code": "1", **size_args})
t0 = time.perf_counter()
kern = [call("run_cell", {"session_id": sid, "code": load, "timeout": 60})]
kern += [call("run_cell", {"session_id": sid, "code": q}) for q in queries]
kernel_ms = (time.perf_counter() - t0) * 1000
t0 = time.perf_counter()
runs = [call("sandbox_exec", {"session_id": sid, "code": load + "print(repr(%s))" % q, "timeout": 60, **size_args})
        for q in queries]
fresh_ms = (time.perf_counter() - t0) * 1000
for k, r, q in zip(kern[1:], runs, queries):
    if k["value"] != r["stdout"].rstrip("\n"):
        sys.exit("bench/kernel.py: %s: kernel %r, fresh run %r" % (q, k["value"], r["stdout"]))
call("sandbox_stop", {"session_id": sid})
p.stdin.close()
p.wait()
shutil.rmtree(tmp, ignore_errors=True)

w, f = statistics.median(warm), statistics.median(fresh)
print("# run_cell against sandbox_exec, MCP over stdio (bench/kernel.py)")
print("print(1), one call at a time (n=%d): run_cell in a warm kernel median %.1f ms (p95 %.1f), "
      "sandbox_exec median %.1f ms (p95 %.1f): %.1fx" % (n, w, pct(warm, 0.95), f, pct(fresh, 0.95), f / w))
print("pandas, a CSV of %d rows (%.1f MB): loaded once + 10 queries in the kernel %.0f ms (the load %.0f ms), "
      "10 fresh runs that each load it %.0f ms: %.1fx; the same 10 answers" %
      (rows, size / 1e6, kernel_ms, kern[0]["duration_ms"], fresh_ms, fresh_ms / kernel_ms))
print("each query in the kernel (ms, in the sandbox): " + ", ".join("%s %.1f" % (q, k["duration_ms"]) for k, q in zip(kern[1:], queries)))
print("each fresh run (ms, in the sandbox): " + ", ".join("%.0f" % r["duration_ms"] for r in runs))
if os.environ.get("SBX_BENCH_SUMMARY"):
    with open(os.environ["SBX_BENCH_SUMMARY"], "a") as s:
        s.write("`run_cell` `print(1)`, warm kernel (vs `sandbox_exec`)\tmedian %.1f ms (vs %.1f ms: %.0fx)\n" % (w, f, f / w))
        s.write("pandas: a CSV loaded once + 10 queries (vs 10 fresh runs)\t%.0f ms (vs %.0f ms: %.0fx)\n" %
                (kernel_ms, fresh_ms, fresh_ms / kernel_ms))
