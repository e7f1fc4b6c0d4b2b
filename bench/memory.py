#!/usr/bin/env python3
"""The supervisor's memory over 10,000 runs (make bench): sbx-run -j 2 is
fed 10,000 bash `true` jobs, and its resident size (VmRSS) is read from
/proc as results come back, at 100 and then every 1,000; VmHWM (the peak)
at the end.  Flat means no leak: what a run allocates is freed with it."""
import os, subprocess, sys, tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
N = int(os.environ.get("RUNS", "10000"))
job = subprocess.run([os.path.join(root, "bin/sbx-validate")], input=b'{"language":"bash","code":"true"}\n',
                     capture_output=True, check=True).stdout
with tempfile.TemporaryFile() as f:
    f.write(job * N)
    f.seek(0)
    p = subprocess.Popen([os.path.join(root, "bin/sbx-run"), "-j", "2"], stdin=f, stdout=subprocess.PIPE)

    def status(key):
        with open(f"/proc/{p.pid}/status") as s:
            for line in s:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return -1

    marks, n, ok = [], 0, 0
    for line in p.stdout:
        n += 1
        ok += b'"status":"success"' in line
        # sbx-run exits after the last result: read just before it
        if n == 100 or (n % 1000 == 0 and n < N) or n == N - 1:
            marks.append((n, status("VmRSS")))
        if n == N - 1:
            hwm = status("VmHWM")
    p.wait()
print(f"# sbx-run -j 2, {N} runs of bash `true`: {ok} succeeded; resident size (KiB) after n results")
print(" ".join(f"{n}:{kb}" for n, kb in marks))
first, last = marks[1][1] if len(marks) > 1 else marks[0][1], marks[-1][1]
print(f"from 1,000 to {marks[-1][0]} runs: {last - first:+d} KiB; peak (VmHWM) {hwm} KiB")
sys.exit(0 if ok == N else 1)
