#!/usr/bin/env python3
"""Checkpoints through bin/sbx-mcp over stdio (part of make bench): for a
workspace of 1 MB (a hundred 10 KB files) and of 1 GB (sixteen 64 MiB
files), the latency of checkpoint_create, checkpoint_restore and
checkpoint_fork against making the same state again from scratch (the
setup run again, the honest comparison), side by side in one run.

Each operation runs N times (median, p95): the client's wall time from
writing the request to reading its answer, and the server's own
duration_ms.  A checkpoint is taken twice per size: right after the setup
wrote its files (btrfs first writes the dirty pages out) and once they are
on disk.  Where the host gives btrfs (root, btrfs-progs) the method is
snapshot; a second server whose workspace is below btrfs's least size
(ext4) shows what a copy costs at 1 MB.  Kernels' memory is not
checkpointed yet: the last row is what a kernel holding a 100 MB data
frame costs to make again (a new kernel, the frame built), the figure a
kernel restore is to be compared with.

  bench/checkpoint.py [N]   (default 10)
"""
import json, os, shutil, statistics, subprocess, sys, time

from benchconf import ROOT, temp_conf

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10


class Server:
    def __init__(self, name, size):
        self.tmp, conf = temp_conf(name)
        with open(conf) as f:
            text = f.read()
        with open(conf, "w") as f:
            for line in text.splitlines(True):
                if line.startswith("workspace_size"):
                    line = 'workspace_size = "%s"\n' % size
                elif line.startswith("max_checkpoints"):
                    line = "max_checkpoints = 100\n"
                f.write(line)
        self.p = subprocess.Popen([os.path.join(ROOT, "bin", "sbx-mcp"), "-c", conf], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.seq = 0
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        json.loads(self.p.stdout.readline())

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def call(self, name, args):
        self.seq += 1
        self.send({"jsonrpc": "2.0", "id": self.seq, "method": "tools/call", "params": {"name": name, "arguments": args}})
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == self.seq:
                r = m["result"]
                if r.get("isError"):
                    sys.exit("bench/checkpoint.py: %s failed: %s" % (name, json.dumps(r)[:500]))
                r = r.get("structuredContent", r)
                if r.get("status", "success") != "success":
                    sys.exit("bench/checkpoint.py: %s failed: %s" % (name, json.dumps(r)[:500]))
                return r

    def timed(self, name, args):
        t0 = time.perf_counter()
        r = self.call(name, args)
        return (time.perf_counter() - t0) * 1000, r

    def close(self):
        self.p.stdin.close()
        self.p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def stats(v):
    s = sorted(v)
    return statistics.median(s), s[max(0, int(len(s) * 0.95) - 1)]


def setup_code(files, size):
    return ("import os\nfor i in range(%d):\n    with open('data/f%%03d' %% i, 'wb') as f:\n"
            "        f.write(os.urandom(%d))\n" % (files, size))


rows = []
summary = []


def measure(srv, label, files, size):
    sid = srv.call("sandbox_initialize", {"language": "python"})["session_id"]
    srv.call("sandbox_exec", {"session_id": sid, "command": ["mkdir", "-p", "data"]})
    code = {"session_id": sid, "code": setup_code(files, size), "timeout": 50}
    setup = []
    for _ in range(3):
        setup.append(srv.timed("sandbox_exec", code)[0])
    # right after the setup wrote its files
    dirty_ms, r = srv.timed("checkpoint_create", {"session_id": sid})
    method = r["method"]
    os.sync()
    made = []
    for i in range(n):
        made.append(srv.timed("checkpoint_create", {"session_id": sid}))
        if i:  # (a copy takes room: only the first is kept)
            srv.call("checkpoint_delete", {"session_id": sid, "checkpoint": made[-1][1]["checkpoint_id"]})
    ck = made[0][1]["checkpoint_id"]
    restored = [srv.timed("checkpoint_restore", {"session_id": sid, "checkpoint": ck}) for _ in range(n)]
    forked = []
    for _ in range(n):
        ms, r = srv.timed("checkpoint_fork", {"session_id": sid, "checkpoint": ck})
        forked.append((ms, r))
        srv.call("sandbox_stop", {"session_id": r["session_ids"][0]})
    check = srv.call("sandbox_exec", {"session_id": sid, "command": ["sh", "-c", "ls data | wc -l; cat data/* | wc -c"]})
    got = check["stdout"].split()
    if got != [str(files), str(files * size)]:
        sys.exit("bench/checkpoint.py: after the restores the workspace holds %s, not %d files of %d bytes" % (got, files, size))
    srv.call("sandbox_stop", {"session_id": sid})
    s_med, _ = stats(setup)
    print("%s (%d files, %s), method %s; the setup again (a fresh sandbox writing them): median %.0f ms of 3" %
          (label, files, "%.0f MB" % (files * size / 1e6), method, s_med))
    print("  checkpoint right after the setup's writes: %.1f ms" % dirty_ms)
    for name, v in (("checkpoint", made), ("restore", restored), ("fork", forked)):
        wall = [x[0] for x in v]
        server = [x[1]["duration_ms"] for x in v]
        w, wp = stats(wall)
        sv, _ = stats(server)
        print("  %-10s n=%d: median %.1f ms (p95 %.1f) at the client, %.1f ms in the server: %.0fx faster than the setup" %
              (name, n, w, wp, sv, s_med / w))
        if method == "snapshot":
            summary.append("checkpoint `%s`, %s workspace (vs the setup again)\tmedian %.1f ms (vs %.0f ms: %.0fx)" %
                           (name, label, w, s_med, s_med / w))


print("# Checkpoints: create, restore, fork against the setup again, MCP over stdio (bench/checkpoint.py)")
big = Server("checkpoint", "3g")
measure(big, "1 MB", 100, 10240)
measure(big, "1 GB", 16, 64 << 20)
# A kernel holding a 100 MB data frame, made again: the comparison for a
# kernel restore (not yet made: kernels restart after a restore).
sid = big.call("sandbox_initialize", {"language": "python"})["session_id"]
frame = ("import numpy as np, pandas as pd\ndf = pd.DataFrame(np.random.default_rng(1).random((1310720, 10)))\n"
         "int(df.memory_usage().sum() / 1e6)")
again = []
for i in range(3):
    t0 = time.perf_counter()
    r = big.call("run_cell", {"session_id": sid, "code": frame, "reset": True, "memory": "1g", "timeout": 50})
    again.append((time.perf_counter() - t0) * 1000)
print("a Python kernel holding a %s MB data frame, made again (a new kernel, the frame built): median %.0f ms of 3; "
      "kernels' memory is not checkpointed yet" % (r.get("value"), statistics.median(again)))
big.call("sandbox_stop", {"session_id": sid})
big.close()
small = Server("checkpoint-copy", "12m")
measure(small, "1 MB on ext4", 100, 10240)
small.close()
if os.environ.get("SBX_BENCH_SUMMARY"):
    with open(os.environ["SBX_BENCH_SUMMARY"], "a") as s:
        for line in summary:
            s.write(line + "\n")
