#!/usr/bin/env python3
"""Differential test: real programs, bare and in the sandbox, compared.

The corpus is CPython's own regression suite as Debian ships it
(libpython3.11-testsuite): hundreds of programs nobody on this project wrote,
exercising files, processes, threads, sockets, signals, locales, users,
temp files, mmap, deep recursion.  Each module runs twice with the same
interpreter (/usr/bin/python3): bare, as an unprivileged user with a clean
environment like the sandbox's, and through sbx-validate | sbx-run with
generous limits (see OVERRIDES: the question is whether programs
behave alike, not whether they fit the default limits).  Outcomes are
compared module by module: regrtest's verdict, and the number of test cases
run, failed and errored.  Prints one line per module and `agree N/M`;
every disagreement with its reason (the failing cases), and, for those the
README documents as deliberate policy, the policy.

  run.py [--slice | --all | --only MOD...] [--jobs N] [--json FILE]
"""
import argparse, concurrent.futures, json, os, re, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTDIR = "/usr/lib/python3.11/test"
PY = "/usr/bin/python3"
# The shipped configuration with generous limits (the question is whether
# programs behave alike, not whether they fit the default limits), its own
# uid and cgroup (so it can run beside the test suite), and its own state.
OVERRIDES = {
    "timeout": "600", "max_timeout": "900", "memory": '"2g"', "max_memory": '"4g"', "cpus": "2",
    "max_cpus": "2", "pids": "512", "max_pids": "1024", "output_limit": '"8m"', "file_size": '"1g"',
    "tmpfs_size": '"1g"', "scratch_size": '"1g"', "max_record_size": '"64m"', "uid": "61000",
    "cgroup_parent": '"sbx-differential"',
}
CONF = None  # written by main()


def write_conf(tmp):
    global CONF
    out = []
    with open(os.path.join(ROOT, "etc", "sandbox.conf")) as f:
        for line in f:
            key = line.split("=", 1)[0].strip()
            if "=" in line and key in OVERRIDES and not line.startswith("#"):
                line = "%s = %s\n" % (key, OVERRIDES[key])
            out.append(line)
    out = "".join(out).replace('state_dir       = "var"', 'state_dir = "%s/var"' % tmp)
    out = out.replace('history         = "var/sandbox_history.db"', 'history = "%s/var/history.db"' % tmp)
    CONF = os.path.join(tmp, "differential.conf")
    with open(CONF, "w") as f:
        f.write(out)
BIN = os.environ.get("SBX_BIN", os.path.join(ROOT, "bin"))
TIMEOUT = 600

# The quick slice run by make check: modules about what a sandbox can break
# (files, processes, users, locales, time, sockets on loopback, threads),
# none that only exercises the interpreter (json, ast, bdb: --all has them).
SLICE = [
    "test_os", "test_posix", "test_pwd", "test_grp", "test_getpass", "test_locale", "test_time",
    "test_tempfile", "test_mmap", "test_select", "test_selectors", "test_fcntl", "test_resource",
    "test_glob", "test_pathlib", "test_platform", "test_threading", "test_socketserver",
    "test_urllib2_localnet", "test_httpservers", "test_file", "test_fileio",
    "test_pty", "test_sys", "test_thread",
]

# Disagreements that are the sandbox's deliberate policy, each documented in
# the README's security section and pinned by a test in t/40-differential.bats.
# A policy explains a test case failing in the sandbox alone when the case's
# module and name match its globs and its traceback matches its regex (when
# it has one); a module is explained only if every such case is, and a new
# failure in the same module is never hidden by an old policy.  "skip"
# explains a module the sandbox skips as a whole, by its skip message.
WX = "W^X: what a program writes (scratch, /tmp, $HOME) is not executable"
FSIZE = "RLIMIT_FSIZE is the configured file_size, not unlimited"
EROFS = "the system tree is read-only: EROFS, even for unlinking a missing file"
POLICIES = [
    {"why": EROFS, "trace": r"\[Errno 30\] Read-only file system: '/(usr|etc|bin|sbin|lib)"},
    {"why": FSIZE, "trace": r"\[Errno 27\] File too large"},
    {"why": FSIZE, "modules": "test_resource", "cases": "test_fsize_ismax"},
    {"why": FSIZE, "modules": "test_largefile", "skip": r"skipped 'filesystem does not have largefile support'"},
    {"why": WX + " (mmap PROT_EXEC of a file it wrote: EPERM)", "modules": "test_mmap",
     "cases": "test_access_parameter", "trace": r"PermissionError: \[Errno 1\]"},
    {"why": WX + " (CGI scripts written to a temp directory)", "modules": "test_httpservers",
     "cases": "CGIHTTPServerTestCase.*"},
    {"why": WX + " (an extension module built in a temp directory, then imported)", "modules": "test_cppext",
     "cases": "test_build_cpp*"},
    {"why": WX + " (a script and an extension module built in a temp directory, then run)",
     "modules": "test_distutils", "cases": "test_spawn test_build_ext"},
    {"why": WX + " (scripts and a venv's interpreter copied to a temp directory, then executed: EACCES)",
     "modules": "test_subprocess test_venv",
     "trace": r"PermissionError: \[Errno 13\] Permission denied: '/(tmp|scratch|home/sandbox|dev/shm)/"},
    {"why": WX + " (a venv's interpreter, copied to a temp directory, run from a bash script)",
     "modules": "test_venv", "cases": "test_special_chars_bash"},
    {"why": WX + " (shutil.which skips files it may not execute: access(X_OK) is false on noexec mounts)",
     "modules": "test_shutil", "cases": "TestWhich.* TestWhichBytes.*"},
    {"why": WX + " (no memfd: its mount is not noexec, so memfd_create is ENOSYS)",
     "modules": "test_os", "cases": "MemfdCreateTests.*", "trace": r"OSError: \[Errno 38\] Function not implemented"},
]


def explained(mod, only_s, traces, ran_b, ran_s, out_s):
    """The policies covering every sandbox-only failure of mod, or None."""
    import fnmatch
    whys = []

    def match(p, case=None):
        if p.get("modules") and not any(fnmatch.fnmatch(mod, m) for m in p["modules"].split()):
            return False
        if case is not None:
            name, _, where = case.partition(" (")   # "FAIL test_x (test.mod.Class.test_x)"
            name = name.split(" ", 1)[1]
            klass = where.rstrip(")").split(".")[-2] if "." in where else ""
            if p.get("cases") and not any(fnmatch.fnmatch(name, c) or fnmatch.fnmatch("%s.%s" % (klass, name), c)
                                          for c in p["cases"].split()):
                return False
            if p.get("trace") and not re.search(p["trace"], traces.get(case, "")):
                return False
        return True

    if ran_s == 0 and ran_b > 0:
        for p in POLICIES:
            if p.get("skip") and match(p) and re.search(p["skip"], out_s):
                return p["why"]
        return None
    if ran_b != ran_s or not only_s:
        return None
    for c in only_s:
        p = next((p for p in POLICIES if not p.get("skip") and match(p, c)), None)
        if not p:
            return None
        if p["why"] not in whys:
            whys.append(p["why"])
    return "; ".join(whys)


def modules():
    names = []
    for n in sorted(os.listdir(TESTDIR)):
        if not n.startswith("test_"):
            continue
        p = os.path.join(TESTDIR, n)
        if n.endswith(".py"):
            names.append(n[:-3])
        elif os.path.isdir(p) and os.path.exists(os.path.join(p, "__init__.py")):
            names.append(n)
    return names


def program(mod):
    # The guard matters: multiprocessing's spawn and forkserver children
    # import the main module again.
    return ("import sys\n"
            "if __name__ == '__main__':\n"
            "    sys.argv = ['regrtest', '-v', '-u', 'network,subprocess', '--timeout', '%d', %r]\n"
            "    from test.libregrtest.main import main\n"
            "    main()\n") % (TIMEOUT - 30, mod)


RESULT = re.compile(r"^== Tests result: (.*) ==$|^Tests result: (.*)$", re.M)
RAN = re.compile(r"^Ran (\d+) tests? in", re.M)
FAILED = re.compile(r"^FAILED \((.*)\)$", re.M)
CASE = re.compile(r"^(FAIL|ERROR): (\S+) \((\S+)\)", re.M)


BAR = "=" * 70


def tracebacks(out):
    """Each failing case's report: the text after its "ERROR:"/"FAIL:"
    header (which follows a line of "="), up to the next such bar or the
    "Ran N tests" line."""
    found, case, buf = {}, None, []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = CASE.match(lines[i + 1]) if line == BAR and i + 1 < len(lines) else None
        if m or line.startswith("Ran ") or line == BAR:
            if case:
                found[case] = "\n".join(buf)
            case, buf = ("%s %s (%s)" % m.groups() if m else None), []
        elif case:
            buf.append(line)
    return found


def outcome(out):
    m = RESULT.findall(out)
    verdict = (m[-1][0] or m[-1][1]) if m else "NO RESULT"
    verdict = verdict.split(" then ")[-1]
    ran = sum(int(x) for x in RAN.findall(out))
    fails = errors = 0
    for f in FAILED.findall(out):
        for part in f.split(","):
            k, _, v = part.strip().partition("=")
            if k == "failures":
                fails += int(v)
            elif k == "errors":
                errors += int(v)
    cases = sorted({"%s %s (%s)" % c for c in CASE.findall(out)})
    return {"verdict": verdict, "ran": ran, "failures": fails, "errors": errors, "cases": cases,
            "traces": tracebacks(out)}


def bare(mod, tmp):
    """The module as an ordinary program: uid nobody, clean environment,
    a private temp directory as cwd, $HOME and $TMPDIR."""
    work = tempfile.mkdtemp(prefix="bare-", dir=tmp)
    home = os.path.join(work, "home")
    os.mkdir(home)
    with open(os.path.join(work, "main.py"), "w") as f:
        f.write(program(mod))
    for d, _, fs in os.walk(work):
        os.chown(d, 65534, 65534)
        for x in fs:
            os.chown(os.path.join(d, x), 65534, 65534)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "TMPDIR": work,
           "USER": "nobody", "LOGNAME": "nobody", "SHELL": "/bin/sh", "PWD": work}
    cmd = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--", PY, "main.py"]
    if os.geteuid() != 0:
        cmd = [PY, "main.py"]
    code, stdout, stderr = run_bare(cmd, work, env)
    out = "== Tests result: TIMEOUT ==" if code is None else stdout + stderr
    shutil.rmtree(work, ignore_errors=True)
    return outcome(out), out


def run_bare(cmd, cwd, env, timeout=TIMEOUT):
    """Run cmd in a session of its own; kill what is left of the session
    afterwards, as the sandbox does.  (exit code or None on timeout,
    stdout, stderr)."""
    # Every signal at its default, as in the sandbox: a runner started in
    # the background inherits SIGINT ignored, and tests that send it fail.
    cmd = ["env", "--default-signal"] + cmd
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        code = p.returncode
    except subprocess.TimeoutExpired:
        code = None
    try:
        os.killpg(p.pid, 9)
    except OSError:
        pass
    if code is None:
        out, err = p.communicate()
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def sandboxed(mod):
    req = json.dumps({"id": mod, "language": "python", "code": program(mod), "timeout": TIMEOUT})
    p = subprocess.run("'%s/sbx-validate' -c '%s' | '%s/sbx-run' -c '%s'" % (BIN, CONF, BIN, CONF), shell=True,
                       input=req.encode(), capture_output=True)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        return {"verdict": "NO RESULT", "ran": 0, "failures": 0, "errors": 0, "cases": [], "traces": {}}, \
            "sbx-run wrote no result: " + p.stderr.decode()
    if r.get("status") in ("timeout", "memory_limit", "internal_error", "invalid"):
        return {"verdict": r["status"].upper(), "ran": 0, "failures": 0, "errors": 0, "cases": [], "traces": {}}, \
            r.get("error", "")
    out = r.get("stdout", "") + r.get("stderr", "")
    return outcome(out), out


# ---- programs: t/diff/programs/*, under the shipped configuration ----------
#
# Programs in C, C++, JavaScript, Python and Bash that use threads, processes,
# loopback sockets and files.  Each is built and run bare with the same argv
# as etc/sandbox.conf gives (as uid nobody, clean environment, private temp
# directory), then sent through the pipeline with the shipped configuration's
# default limits; exit status and stdout must be identical.

PROGDIR = os.path.join(ROOT, "t", "diff", "programs")
SHIPPED = os.path.join(ROOT, "etc", "sandbox.conf")
EXT = {".c": "c", ".cpp": "cpp", ".js": "javascript", ".py": "python", ".sh": "bash"}


def programs():
    return sorted("programs/" + n for n in os.listdir(PROGDIR) if os.path.splitext(n)[1] in EXT)


def languages():
    import tomllib
    with open(SHIPPED, "rb") as f:
        return tomllib.load(f)["language"]


def bare_program(name, tmp):
    src = os.path.join(ROOT, "t", "diff", name)
    lang = languages()[EXT[os.path.splitext(name)[1]]]
    work = tempfile.mkdtemp(prefix="bare-", dir=tmp)
    home = os.path.join(work, "home")
    os.mkdir(home)
    shutil.copy(src, os.path.join(work, lang["file"]))
    for d, ds, fs in os.walk(work):
        for x in [d] + [os.path.join(d, f) for f in fs]:
            os.chown(x, 65534, 65534)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "TMPDIR": work}
    drop = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--"] if os.geteuid() == 0 else []
    out, code = "", None
    for stage in ("compile", "run"):
        if stage not in lang:
            continue
        code, out, err = run_bare(drop + lang[stage], work, env, timeout=60)
        if code is None:
            out = "TIMEOUT"
            break
        if code != 0:
            out += err
            break
    shutil.rmtree(work, ignore_errors=True)
    return {"exit_code": code, "stdout": out}


def sandboxed_program(name):
    with open(os.path.join(ROOT, "t", "diff", name)) as f:
        code = f.read()
    req = json.dumps({"id": os.path.basename(name), "language": EXT[os.path.splitext(name)[1]], "code": code})
    p = subprocess.run("'%s/sbx-validate' -c '%s' | '%s/sbx-run' -c '%s'" % (BIN, SHIPPED, BIN, SHIPPED), shell=True,
                       input=req.encode(), capture_output=True)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        return {"exit_code": None, "stdout": "NO RESULT " + p.stderr.decode()}
    if r.get("status") != "success" and r.get("status") != "error":
        return {"exit_code": None, "stdout": "%s %s %s" % (r.get("status"), r.get("error", ""),
                                                          (r.get("compile") or {}).get("stderr", ""))}
    out = r.get("stdout", "")
    if r.get("exit_code") != 0:
        out += r.get("stderr", "")
    return {"exit_code": r.get("exit_code"), "stdout": out}


def compare_program(name, tmp):
    t0 = time.time()
    b = bare_program(name, tmp)
    s = sandboxed_program(name)
    same = b == s
    reason = ""
    if not same:
        reason = "bare exit %s: %r | sandbox exit %s: %r" % (b["exit_code"], b["stdout"][-400:],
                                                             s["exit_code"], s["stdout"][-400:])
    return {"module": name, "agree": same, "bare": b, "sandbox": s, "reason": reason,
            "policy": None, "seconds": round(time.time() - t0, 1),
            "summary": "exit %s, %d lines" % (b["exit_code"], b["stdout"].count("\n"))}


def compare(mod, tmp):
    """Compare once; an unexplained disagreement is run again, both ways,
    and counts only if it is seen twice (timing-sensitive tests flake)."""
    r = compare_once(mod, tmp)
    if not r["agree"] and not r["policy"]:
        again = compare_once(mod, tmp)
        if again["agree"]:
            again["summary"] += " (disagreed once: %s)" % r["reason"][:200]
        r = again
    return r


def compare_once(mod, tmp):
    if mod.startswith("programs/"):
        return compare_program(mod, tmp)
    t0 = time.time()
    b, bout = bare(mod, tmp)
    s, sout = sandboxed(mod)
    same = (b["verdict"] == s["verdict"] and b["failures"] == s["failures"] and b["errors"] == s["errors"]
            and b["ran"] == s["ran"])
    reason, policy = "", None
    if not same:
        only_s = [c for c in s["cases"] if c not in b["cases"]]
        if not [c for c in b["cases"] if c not in s["cases"]]:
            policy = explained(mod, only_s, s["traces"], b["ran"], s["ran"], sout)
        only_b = [c for c in b["cases"] if c not in s["cases"]]
        parts = ["bare %(verdict)s ran %(ran)d failed %(failures)d errors %(errors)d" % b,
                 "sandbox %(verdict)s ran %(ran)d failed %(failures)d errors %(errors)d" % s]
        if only_s:
            parts.append("only in the sandbox: " + "; ".join(only_s[:8]) + (" …" if len(only_s) > 8 else ""))
        if only_b:
            parts.append("only bare: " + "; ".join(only_b[:8]))
        for name, v, text in (("bare", b, bout), ("sandbox", s, sout)):
            if v["verdict"] not in ("SUCCESS", "FAILURE"):
                parts.append("%s said: %s" % (name, text.strip()[-300:]))
        reason = " | ".join(parts)
    return {"module": mod, "agree": same, "bare": b, "sandbox": s, "reason": reason, "policy": policy,
            "seconds": round(time.time() - t0, 1), "summary": "%(verdict)s ran %(ran)d" % b}


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--slice", action="store_true")
    g.add_argument("--all", action="store_true")
    g.add_argument("--only", nargs="+")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.path.isdir(TESTDIR):
        print("skip: %s is missing (apt-get install libpython3.11-testsuite)" % TESTDIR)
        return 0
    mods = a.only or ((modules() + programs()) if a.all else SLICE + programs())
    tmp = tempfile.mkdtemp(prefix="sbx-diff-")
    os.chmod(tmp, 0o755)
    write_conf(tmp)
    results = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for r in ex.map(lambda m: compare(m, tmp), mods):
            results.append(r)
            tag = "agree" if r["agree"] else ("policy" if r["policy"] else "DISAGREE")
            print("%-8s %-32s %6.1fs  %s" % (tag, r["module"], r["seconds"],
                                             r["reason"] if not r["agree"] else r["summary"]), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    agree = sum(r["agree"] for r in results)
    print()
    for r in results:
        if not r["agree"]:
            print("disagreement: %s: %s" % (r["module"], r["reason"]))
            print("  reason: %s" % (r["policy"] or "not explained"))
    print("agree %d/%d" % (agree, len(results)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    unexplained = [r for r in results if not r["agree"] and not r["policy"]]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
