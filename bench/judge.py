#!/usr/bin/env python3
"""Judging against one request per test (part of make bench), through the
pipeline a batch user runs, sbx-validate | sbx-run -j 2, wall time:

  1. a problem with 50 tests (C++, the sum of two numbers): one request with
     "tests" against 50 requests with "stdin", with the compile cache off
     (sbx-run --no-cache), cold (emptied before each run) and warm; ROUNDS
     interleaved rounds, the median of each;
  2. a batch of SUBMISSIONS distinct C programs x 10 tests, cold cache: one
     request per submission against one per test.

Every result is checked (the judged ones accepted; the separate ones
success with the expected stdout, the comparison a user of separate
requests must write, not timed).

  bench/judge.py [ROUNDS] [SUBMISSIONS]   (defaults 5 and 1000)
"""
import json, os, shutil, statistics, subprocess, sys, time

from benchconf import ROOT, temp_conf

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
subs = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
tmp, conf = temp_conf("judge")
BIN = os.path.join(ROOT, "bin")


def pipeline(lines, *run_args):
    """Wall ms of lines through sbx-validate | sbx-run -j 2, and the results."""
    data = "".join(json.dumps(l) + "\n" for l in lines).encode()
    t0 = time.perf_counter()
    v = subprocess.Popen([os.path.join(BIN, "sbx-validate"), "-c", conf], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    r = subprocess.Popen([os.path.join(BIN, "sbx-run"), "-c", conf, "-j", "2", *run_args], stdin=v.stdout,
                         stdout=subprocess.PIPE)
    v.stdout.close()
    v.stdin.write(data)
    v.stdin.close()
    out = r.stdout.read()
    r.wait()
    v.wait()
    ms = (time.perf_counter() - t0) * 1000
    return ms, [json.loads(l) for l in out.splitlines()]


def judged_ok(results, n):
    bad = [r for r in results if r.get("verdict") != "accepted" or r.get("tests_passed") != n]
    if bad:
        sys.exit("bench/judge.py: a judged request failed: %s" % json.dumps(bad[0])[:600])


def separate_ok(results, expected):
    for r, e in zip(results, expected):
        if r.get("status") != "success" or r.get("stdout", "").rstrip() != e:
            sys.exit("bench/judge.py: a separate request failed: %s" % json.dumps(r)[:600])
    if len(results) != len(expected):
        sys.exit("bench/judge.py: %d results for %d requests" % (len(results), len(expected)))


def cold():
    shutil.rmtree(os.path.join(tmp, "var", "cache"), ignore_errors=True)


# 1. one problem, 50 tests
CPP = "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; std::cout << a + b << '\\n'; }\n"
tests = [{"stdin": "%d %d\n" % (i, 7 * i), "expected_stdout": "%d\n" % (8 * i)} for i in range(50)]
one = [{"id": "p", "language": "cpp", "code": CPP, "tests": tests}]
sep = [{"id": "p%d" % i, "language": "cpp", "code": CPP, "stdin": t["stdin"]} for i, t in enumerate(tests)]
want = [t["expected_stdout"].rstrip() for t in tests]
modes = [("cache off", ["--no-cache"], False), ("cold cache", [], True), ("warm cache", [], False)]
times = {(m, f): [] for m, _, _ in modes for f in ("one", "sep")}
pipeline(one)  # the warm cache's entry, and the page cache
for r in range(rounds):
    for m, args, empty in modes:
        for form, lines in (("one", one), ("sep", sep)):
            if empty:
                cold()
            ms, res = pipeline(lines, *args)
            judged_ok(res, 50) if form == "one" else separate_ok(res, want)
            times[(m, form)].append(ms)

print("# judging: a problem with 50 tests (C++), sbx-validate | sbx-run -j 2, %d rounds, median wall ms" % rounds)
print("%-12s %14s %16s %8s" % ("compile", "one request", "50 requests", "ratio"))
med = {}
for m, _, _ in modes:
    a, b = statistics.median(times[(m, "one")]), statistics.median(times[(m, "sep")])
    med[m] = (a, b)
    print("%-12s %14.0f %16.0f %7.1fx" % (m, a, b, b / a))

# 2. a batch of distinct submissions
C = "#include <stdio.h>\nint main(void) { long a, b; if (scanf(\"%%ld %%ld\", &a, &b) != 2) return 1; printf(\"%%ld\\n\", a + b + %d * 0); }\n"
batch_one, batch_sep, batch_want = [], [], []
for k in range(subs):
    ts = [{"stdin": "%d %d" % (i, k), "expected_stdout": "%d" % (i + k)} for i in range(10)]
    batch_one.append({"id": "s%d" % k, "language": "c", "code": C % k, "tests": ts})
    for i, t in enumerate(ts):
        batch_sep.append({"id": "s%d-%d" % (k, i), "language": "c", "code": C % k, "stdin": t["stdin"]})
        batch_want.append(t["expected_stdout"])
cold()
b1, res = pipeline(batch_one)
judged_ok(res, 10)
cold()
b2, res = pipeline(batch_sep)
separate_ok(res, batch_want)
print()
print("# judging: %d distinct C submissions x 10 tests, cold cache, sbx-validate | sbx-run -j 2, wall s" % subs)
print("%-30s %8.1f  (%.1f ms per test)" % ("one request per submission", b1 / 1000, b1 / subs / 10))
print("%-30s %8.1f  (%.1f ms per test)" % ("one request per test", b2 / 1000, b2 / subs / 10))
print("%-30s %7.1fx" % ("ratio", b2 / b1))

if os.environ.get("SBX_BENCH_SUMMARY"):
    with open(os.environ["SBX_BENCH_SUMMARY"], "a") as s:
        (a0, b0), (a1, b1c) = med["cache off"], med["cold cache"]
        s.write("judging 50 tests (C++), one request vs 50: cache off / cold cache\t"
                "%.0f ms vs %.0f ms (%.1fx) / %.0f ms vs %.0f ms (%.1fx)\n" % (a0, b0, b0 / a0, a1, b1c, b1c / a1))
        s.write("judging %s C submissions x 10 tests, one request each vs one per test\t"
                "%.1f s vs %.1f s (%.1fx)\n" % (format(subs, ","), b1 / 1000, b2 / 1000, b2 / b1))
shutil.rmtree(tmp, ignore_errors=True)
