#!/usr/bin/env bats
# Ordinary programs behave alike bare and in the sandbox (t/diff/run.py):
# the quick slice of CPython's regression suite and t/diff/programs/ (C,
# C++, JavaScript, Python, Bash using threads, processes, loopback sockets
# and files).  Then each deliberate difference, the policies the README's
# security section lists, pinned one by one.
load helpers

teardown() { assert_no_leftovers; }

@test "differential slice: CPython's tests and the C/C++/JS/Python/Bash programs agree, bare and sandboxed" {
	skip_unless_root
	[ -d /usr/lib/python3.11/test ] || skip "libpython3.11-testsuite is not installed (make deps)"
	run --separate-stderr "$ROOT/t/diff/run.py" --slice --jobs 2
	printf '%s\n' "$output" | grep -E '^(DISAGREE|policy|agree [0-9])' | cut -c1-160 >&3 || true
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" =~ ^agree\ [0-9]+/[0-9]+$ ]]
}

@test "policy W^X: a program cannot execute or mmap(PROT_EXEC) what it wrote, anywhere" {
	run_req "$(py 'import mmap, os, subprocess
for d in (".", "/tmp", os.environ["HOME"], "/dev/shm"):
    p = os.path.join(d, "cgi.sh")
    with open(p, "w") as f: f.write("#!/bin/sh\necho ran\n")
    os.chmod(p, 0o755)
    try: subprocess.run([p]); print(d, "EXECUTED")
    except PermissionError as e: print(d, "exec", e.errno, os.access(p, os.X_OK))
    with open(p, "rb") as f:
        try: mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC); print(d, "MAPPED")
        except PermissionError as e: print(d, "mmap", e.errno)
    print(d, subprocess.run(["sh", p], capture_output=True, text=True).stdout.strip())')"
	jqe 0 '.status == "success"'
	[ "$(jqn 0 .stdout)" = ". exec 13 False
. mmap 1
. ran
/tmp exec 13 False
/tmp mmap 1
/tmp ran
/home/sandbox exec 13 False
/home/sandbox mmap 1
/home/sandbox ran
/dev/shm exec 13 False
/dev/shm mmap 1
/dev/shm ran" ]
}

@test "policy W^X for memfd: there is none (ENOSYS), with any flags" {
	run_req "$(py 'import os
for flags in (0, os.MFD_CLOEXEC, 0x10, 0x8):
    try: os.close(os.memfd_create("x", flags)); print(flags, "made")
    except OSError as e: print(flags, e.errno)')"
	jqe 0 '.status == "success" and .stdout == "0 38\n1 38\n16 38\n8 38\n"'
}

@test "policy RLIMIT_FSIZE: a program sees the configured file_size as its file size limit" {
	conf=$(conf_with 's/^file_size *=.*/file_size = "3m"/')
	run_req "$(py 'import resource; print(resource.getrlimit(resource.RLIMIT_FSIZE))')" -c "$conf"
	[ "$(jqn 0 .stdout)" = "(3145728, 3145728)" ]
}

@test "policy read-only system tree: writes under /usr fail with EROFS, even unlinking a missing file" {
	run_req "$(py 'import os
for p in ("/usr/lib/missing.pyc", "/usr/bin/python3"):
    try: os.unlink(p)
    except OSError as e: print(p, e.errno)')"
	[ "$(jqn 0 .stdout)" = "/usr/lib/missing.pyc 30
/usr/bin/python3 30" ]
}
