#!/usr/bin/env bats
# Cells ("cell": true): a session's kernel through the pipeline,
# sbx-validate | sbx-run, without sbx-mcp.  State from cell to cell,
# interrupts, deaths and restarts, the idle stop, max_kernels, and the
# attacks on the kernel's channel, each checked from the host: the kernel
# broken by it ends, nothing else does, nothing is left behind.
load helpers

teardown() { assert_no_leftovers; }

local_setup() {
	skip_on_docker "kernels need the native backend (t/70-docker.bats checks the refusal)"
	cmp -s "$ROOT/share/python/sbx_kernel.py" /usr/local/share/sbx/python/sbx_kernel.py ||
		skip "the kernels are not installed where etc/sandbox.conf says (make deps)"
	conf=$(conf_with "${CONF_SED:-s/^$//}")
	sid=$(printf '%032x' 7)
	other=$(printf '%032x' 8)
	for s in "$sid" "$other"; do
		mkdir -p "var/sessions/$s/.deps"
		owner=$(id -u)
		[ "$owner" = 0 ] && owner=$SBX_PROG_UID
		chown -R "$owner:$owner" "var/sessions/$s"
	done
}

# cell CODE [JQ-OBJECT]: a cell request of the session $sid (python).
cell() { jq -cn --arg c "$1" --arg s "$sid" "{language: \"python\", session: \$s, cell: true, code: \$c} + ${2:-{\}}"; }

# Python finding the kernel's channel, the one socket among its fds (its
# stdin moved off it), as fd.
chan='import os, stat
def sock(f):
    try:
        return stat.S_ISSOCK(os.fstat(f).st_mode)
    except OSError:
        return False
fd = next(f for f in range(3, 256) if sock(f))'

# cells < requests: through sbx-validate | sbx-run.
cells() { run --separate-stderr sbx -c "$conf" "$@"; }

# survivors ERE: the cells of cells.jsonl through the pipeline, results in
# out.jsonl; once two are out (the second an interrupted cell's), while
# the third runs, $kept gets the command lines matching ERE of this
# test's sandboxed processes, as the host sees them.
survivors() {
	local pid ours
	sbx -c "$conf" < cells.jsonl > out.jsonl 2> err &
	pid=$!
	for _ in $(seq 600); do [ "$(wc -l < out.jsonl)" -ge 2 ] && break; sleep 0.05; done
	[ "$(wc -l < out.jsonl)" -ge 2 ] || { cat err >&2; wait "$pid"; return 1; }
	ours=$(id -u)
	[ "$ours" = 0 ] && ours=$SBX_PROG_UID
	kept=$(our_procs "$ours" "$1" | awk '{ $1 = $2 = $3 = ""; print }' | sed 's/^ *//')
	wait "$pid"
}

# bats test_tags=kernel
@test "state from cell to cell; Out[n] is the last expression's repr; an exception keeps the state" {
	cells < <(cell 'import math
r = 2.0
math.pi * r ** 2'; cell 'print(r); r = r / 0'; cell 'r')
	[ "${#lines[@]}" -eq 3 ]
	jqe 0 '.status == "success" and (.value | startswith("12.566")) and .execution_count == 1 and .kernel == "started"'
	jqe 1 '.status == "error" and .exit_code == 1 and .stdout == "2.0\n" and (.stderr | contains("File \"<cell 2>\", line 1")) and (.stderr | contains("ZeroDivisionError: float division by zero"))'
	jqe 2 '.status == "success" and .value == "2.0" and .execution_count == 3 and .kernel == "live"'
	jqe 2 '.limits_enforced | index("namespaces") and index("seccomp")'
}

@test "JavaScript: var, function and globalThis persist; a promise's value is awaited; an error keeps the state" {
	command -v node > /dev/null || skip "Node.js is not installed"
	js() { cell "$1" '{language: "javascript"}'; }
	cells < <(js 'var n = 20; function twice(x) { return 2 * x }'; js 'Promise.resolve(twice(n) + 2)'; js 'undefinedThing()'; js 'n')
	jqe 0 '.status == "success" and .value == null'
	jqe 1 '.status == "success" and .value == "42"'
	jqe 2 '.status == "error" and (.stderr | test("ReferenceError: undefinedThing is not defined")) and (.stderr | test("sbx_kernel") | not)'
	jqe 3 '.value == "20" and .execution_count == 4'
}

@test "JavaScript: top-level await, its declarations seen by later cells, the last expression its value" {
	command -v node > /dev/null || skip "Node.js is not installed"
	js() { cell "$1" "{language: \"javascript\"} + ${2:-{\}}"; }
	cells < <(js 'const r = await Promise.resolve(41); r + 1'; js 'r'
		js 'let {a, b: [c, ...d]} = await Promise.resolve({a: 1, b: [2, 3, 4]})
function f() { return a + c }
class K { get k() { return "k" } }
var v = await f(), u
if (v) { var w = await 5 }
for (var i of [7, 8]) await i'
		js '[a, c, d, f(), new K().k, v, u, w, i]'
		js 'g(); function g() { return "hoisted" }
await new Promise((res) => setTimeout(res, 20)); g() + "!"'
		js 'await Promise.reject(new Error("boom"))'; js 'await 1; const r = 2'; js 'function h() { await 1 }'
		js 'await new Promise(() => {})' '{timeout: 1}'; js '[r, typeof g]')
	[ "${#lines[@]}" -eq 10 ]
	jqe 0 '.status == "success" and .value == "42"'
	jqe 1 '.status == "success" and .value == "41" and .kernel == "live"'
	jqe 2 '.status == "success" and .value == null'
	jqe 3 '.value == "[ 1, 2, [ 3, 4 ], 3, \u0027k\u0027, 3, undefined, 5, 8 ]"'
	jqe 4 '.value == "\u0027hoisted!\u0027"'
	jqe 5 '.status == "error" and (.stderr | test("Error: boom")) and .kernel_alive'
	# as a script: a name declared twice; await where it is no keyword
	jqe 6 '.status == "error" and (.stderr | test("Identifier .r. has already been declared"))'
	jqe 7 '.status == "error" and (.stderr | test("SyntaxError: await is only valid in async functions"))'
	jqe 8 '.status == "timeout" and .kernel_alive'
	jqe 9 '.value == "[ 41, \u0027function\u0027 ]" and .execution_count == 10'
}

# bats test_tags=kernel
@test "a cell past its timeout is interrupted (status timeout, state kept); one that ignores SIGINT costs its kernel" {
	cells < <(cell 'x = 1'; cell 'import time; time.sleep(60)' '{timeout: 1}'; cell 'x + 1'
		cell 'import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)
while True: pass' '{timeout: 1}'; cell "'x' in dir()")
	jqe 1 '.status == "timeout" and (.stderr | test("KeyboardInterrupt")) and .duration_ms < 2000 and (.kernel_note | test("interrupted"))'
	jqe 1 '.kernel == "live" and .kernel_alive'
	jqe 2 '.status == "success" and .value == "2"'
	jqe 3 '.status == "timeout" and .duration_ms < 4500 and (.kernel_note | test("did not stop within 2 s.*state is lost"))'
	jqe 3 '.kernel == "died" and (.kernel_alive | not)'
	jqe 4 '.value == "False" and .kernel == "restarted" and .execution_count == 1'
}

@test "an interrupted cell's processes go with it, however detached (a setsid double fork); an earlier cell's stay" {
	{
		cell 'import subprocess; keep = subprocess.Popen(["sleep", "300"])'
		cell 'import os, subprocess, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "301"])
    os._exit(0)
os.wait()
child = subprocess.Popen(["sleep", "302"])
time.sleep(60)' '{timeout: 2}'
		cell 'import time; time.sleep(6); print("done")' '{timeout: 30}'
	} > cells.jsonl
	survivors '^sleep 30[0-2]$'
	[ "$kept" = "sleep 300" ] || { echo "left: $kept" >&2; false; }
	jq -se '.[1].status == "timeout" and .[2].stdout == "done\n"' out.jsonl
}

@test "JavaScript: an interrupted cell's processes go with it, however detached; an earlier cell's stay" {
	js='{language: "javascript"}'
	{
		cell 'const cp = require("child_process"); cp.spawn("sleep", ["310"], {stdio: "ignore"}); 1' "$js"
		cell 'require("child_process").spawn("sh", ["-c", "setsid sleep 311 & sleep 312"], {stdio: "ignore"}); while (true) {}' \
			'{language: "javascript", timeout: 3}'
		cell 'new Promise((r) => setTimeout(() => r("done"), 6000))' '{language: "javascript", timeout: 30}'
	} > cells.jsonl
	survivors '^sleep 31[0-2]$'
	[ "$kept" = "sleep 310" ] || { echo "left: $kept" >&2; cut -c1-600 out.jsonl >&2; false; }
	jq -se '.[1].status == "timeout" and .[2].value == "'"'"'done'"'"'"' out.jsonl || { cat out.jsonl >&2; false; }
}

@test "a kernel that dies (os._exit, a segfault) is reported in its cell; the next cell says it was restarted" {
	cells < <(cell 'import os; os._exit(9)'; cell '1'; cell 'import ctypes; ctypes.string_at(0)'; cell '2'
		cell 'import os; os._exit(0)')
	jqe 0 '.status == "error" and .exit_code == 9 and (.kernel_note | test("exited with code 9")) and .kernel == "died"'
	jqe 1 '.value == "1" and .kernel == "restarted" and (.kernel_note | test("restarted, state lost: the last one exited with code 9"))'
	jqe 2 '.status == "error" and .signal == "SIGSEGV" and (.kernel_note | test("died of SIGSEGV")) and .kernel == "died"'
	jqe 3 '.kernel == "restarted" and .execution_count == 1'
	jqe 4 '.status == "error" and .exit_code == 0 and (.kernel_note | test("exited with code 0")) and .kernel == "died"'
}

@test "\"kernel\" is \"died\" when the kernel does not outlive its cell (an exit, a kill at the timeout, process.exit); \"live\" when it does" {
	cells < <(cell 'x = 1'; cell 'import time; time.sleep(30)' '{timeout: 1}'; cell 'import os; os._exit(0)'
		cell 'x'; cell 'import os; os._exit(4)'; cell 'import os; os._exit(5)'; cell '2')
	[ "${#lines[@]}" -eq 7 ]
	# interrupted, and alive: what it was at the start
	jqe 1 '.status == "timeout" and .kernel == "live" and .kernel_alive and (.kernel_note | test("live on"))'
	jqe 2 '.status == "error" and .exit_code == 0 and .kernel == "died" and (.kernel_alive | not) and (.kernel_note | test("exited with code 0: its state is lost"))'
	jqe 3 '.status == "error" and .kernel == "restarted" and .kernel_alive and (.stderr | test("NameError"))'
	jqe 4 '.kernel == "died" and .execution_count == 2'
	# restarted by this cell, and dead in it: "died", the note saying both
	jqe 5 '.kernel == "died" and .execution_count == 1 and (.kernel_note | test("^kernel restarted, state lost: the last one exited with code 4; then the kernel exited with code 5"))'
	jqe 6 '.value == "2" and .kernel == "restarted" and .kernel_alive'
	command -v node > /dev/null || skip "Node.js is not installed"
	js() { cell "$1" '{language: "javascript"}'; }
	cells < <(js 'var k = 1'; js 'process.exit(3)'; js 'typeof k')
	[ "${#lines[@]}" -eq 3 ]
	jqe 0 '.kernel == "started" and .kernel_alive'
	jqe 1 '.status == "error" and .exit_code == 3 and .kernel == "died" and (.kernel_alive | not) and (.kernel_note | test("exited with code 3"))'
	jqe 2 '.value == "\u0027undefined\u0027" and .kernel == "restarted"'
}

@test "a cell that gives other memory, cpus or pids than its live kernel's restarts it with them, and says so; one that gives none or the same keeps it" {
	cells < <(cell 'x = 1' '{memory: "128m", cpus: 1}'; cell 'x'; cell 'x + 1' '{memory: 134217728, cpus: 1, pids: null}'
		cell 'b = bytearray(150 << 20); len(b)' '{memory: "300m"}'; cell 'y = 2' '{cpus: 0.5}'; cell 'y' '{timeout: 5}'
		cell 'y' '{reset: true}')
	[ "${#lines[@]}" -eq 7 ]
	jqe 0 '.kernel == "started" and .limits.memory_bytes == 134217728 and .limits.cpus == 1'
	# no limits given: the kernel's, and its result says which it ran under
	jqe 1 '.kernel == "live" and .value == "1" and .limits.memory_bytes == 134217728 and .limits.cpus == 1'
	# the same ones given (another spelling): the same kernel
	jqe 2 '.kernel == "live" and .value == "2" and .execution_count == 3 and .kernel_note == null'
	# more memory: a fresh kernel with it (150 MiB fit), cpus kept; the state is gone
	jqe 3 '.status == "success" and .value == "157286400" and .kernel == "restarted" and .execution_count == 1'
	jqe 3 '.kernel_note == "kernel restarted for this cell'"'"'s limits, state lost: memory changed from 128 MiB to 300 MiB"'
	jqe 3 '.limits.memory_bytes == 314572800 and .limits.cpus == 1 and .kernel_alive'
	jqe 4 '.kernel == "restarted" and (.kernel_note | test("state lost: cpus changed from 1 to 0.5$")) and .limits.memory_bytes == 314572800 and .limits.cpus == 0.5'
	jqe 5 '.kernel == "live" and .value == "2" and .limits.timeout_ms == 5000 and .limits.memory_bytes == 314572800'
	# a reset takes the cell's limits, given or not (here memory's default), and names what changed
	jqe 6 '.kernel == "restarted" and .status == "error" and .limits.memory_bytes != 314572800'
	jqe 6 '.kernel_note | test("^reset: a fresh kernel, nothing of the last one.s state; memory changed from 300 MiB to [0-9]+ MiB$")'
}

# bats test_tags=kernel
@test "a kernel flooding memory is stopped by its cgroup and reported; a fork bomb meets the pids limit" {
	skip_unless_cgroups
	# (the timeouts are only bounds: some 60 forks of Python took 6 s in
	# QEMU without KVM, and filling 256 MiB at half a CPU there took more
	# than 10 s on a busy machine)
	cells < <(cell 'a = []
while True: a.append(bytearray(1 << 20))' '{timeout: 40}'; cell 'import os
n = 0
try:
    while True:
        if os.fork() == 0:
            import time; time.sleep(60)
        n += 1
except OSError as e:
    print("refused after", n, e.errno)' '{timeout: 20}')
	jqe 0 '.status == "memory_limit" and (.kernel_note | test("memory limit")) and .kernel == "died"'
	jqe 1 '.status == "success" and (.stdout | test("^refused after [0-9]+ 11"))'
	n=$(jqn 1 '.stdout' | awk '{print $3}')
	[ "$n" -lt 64 ]
}

@test "the channel: garbage on it, a forged reply for another cell, or its fd closed or reused ends that kernel alone" {
	cells < <(cell "$chan"'
os.write(fd, b"garbage\n")
import time; time.sleep(5)'
		cell "$chan"'
os.write(fd, b"{\"cell\": 99, \"status\": \"ok\", \"value\": \"forged\"}\n")
import time; time.sleep(5)'
		cell "$chan"'
os.dup2(1, fd)' '{timeout: 2}'
		cell "$chan"'
os.close(fd)'
		jq -cn --arg s "$other" '{language: "python", session: $s, cell: true, code: "6 * 7"}')
	[ "${#lines[@]}" -eq 5 ]
	jqe 0 '.status != "success" and (.kernel_note | test("broke its protocol.*state is lost"))'
	# (the guest under emulation and ASan: seconds more to notice and restart)
	jqe 0 ".duration_ms < $(bound 4000 12000)"
	# restarted, and broken in its turn: both in its note
	jqe 1 '.kernel == "died" and (.kernel_note | test("^kernel restarted, state lost: the last one broke its protocol.*; then the kernel broke its protocol"))'
	jqe 1 ".status != \"success\" and .value == null and .duration_ms < $(bound 4000 12000)"
	# writing over the fd sends the reply elsewhere: the cell times out and
	# the kernel, which can no longer read, is gone
	jqe 2 '.status == "timeout" or .status == "error"'
	jqe 3 '.status != "success" and (.kernel_note | test("state is lost"))'
	jqe 4 '.status == "success" and .value == "42" and .kernel == "started"'
}

@test "a cell can replace what the kernel uses (json.dumps, sys.stdout, stderr), fork, or make a lone surrogate: the kernel lives on" {
	cells < <(cell 'import json, functools
json.dumps = functools.partial(json.dumps, indent=2)
"abc\udc80"'
		cell 'import sys
class Sink:
    def write(self, s): return len(s)
sys.stdout = Sink()
print("swallowed")'
		cell 'import sys; sys.stdout = sys.__stdout__; sys.stderr.close(); 1 / 0'
		cell 'import os, sys; sys.stderr = sys.__stderr__ if not sys.__stderr__.closed else open(2, "w", closefd=False)
pid = os.fork()
"parent" if pid else "child"'
		cell 'import time; time.sleep(0.2); "still here"')
	[ "${#lines[@]}" -eq 5 ]
	jqe 0 '.status == "success" and .value == ("\u0027abc" + "\\" + "udc80\u0027") and .kernel_alive'
	jqe 1 '.status == "success" and .stdout == "" and .kernel_alive'
	jqe 2 '.status == "error" and .kernel_alive'
	jqe 3 '.status == "success" and .value == "\u0027parent\u0027" and .kernel_alive'
	jqe 4 '.value == "\u0027still here\u0027" and .kernel == "live" and .execution_count == 5'
}

@test "a timeout shorter than the kernel's start interrupts the first cell all the same; a network cell is refused" {
	cells < <(cell 'import time; time.sleep(5)' '{timeout: 0.02}'; cell '7'; cell '1' '{network: true}')
	# interrupted, not run out (it sleeps 5 s); QEMU without KVM can take
	# longer than that to start Python: there only the kernel's life counts
	jqe 0 ".status == \"timeout\" and .duration_ms < $(bound 4000 30000) and .kernel_alive"
	jqe 1 '.value == "7" and .kernel == "live"'
	jqe 2 '.status == "invalid" and (.error | test("\"network\" does not go with \"cell\""))'
}

@test "a kernel slower to start than its cell's timeout plus 2 s is waited for, not killed; a second \"ready\" breaks it" {
	# The kernel's start made 3 s slower; the cell's interrupt comes at
	# 0.3 s, long before the kernel reads it: the grace counts from its ready.
	local py='kernel  = ["python3", "/usr/local/share/sbx/python/sbx_kernel.py"]'
	grep -qxF "$py" "$SBX_CONF" || skip "etc/sandbox.conf's Python kernel line changed"
	conf=$(conf_with 's|^kernel  = \["python3", |kernel  = ["sh", "-c", "sleep 3; exec python3 $0", |')
	grep -q 'sleep 3; exec python3' "$conf"
	cells < <(cell 'import time; time.sleep(5)' '{timeout: 0.3}'; cell '7'
		cell "$chan"'
os.write(fd, b"{\"ready\": true}\n")
import time; time.sleep(5)'; cell '8')
	[ "${#lines[@]}" -eq 4 ]
	jqe 0 ".status == \"timeout\" and .kernel_alive and .duration_ms >= 3000 and .duration_ms < $(bound 4500 30000) and (.kernel_note | test(\"interrupted\"))"
	jqe 1 '.value == "7" and .kernel == "live"'
	jqe 2 '.status != "success" and (.kernel_note | test("broke its protocol.*state is lost")) and .duration_ms < 4000'
	jqe 3 '.value == "8" and .kernel == "restarted"'
}

@test "a line past 1 MiB on the channel, or 64 MiB printed between cells, ends the kernel at once" {
	cells < <(cell "$chan"'
os.write(fd, b"x" * (2 << 20))
import time; time.sleep(8)'
		cell '1')
	jqe 0 ".status == \"error\" and .signal == \"SIGKILL\" and (.kernel_note | test(\"broke its protocol\")) and .duration_ms < $(bound 5000 7500)"
	jqe 1 '.kernel == "restarted"'
	# a flood from a thread while no cell runs (the next comes 6 s later,
	# 20 s in the guest: 64 MiB through a pipe takes a QEMU guest without
	# KVM seconds, and more than 6 under ASan)
	run --separate-stderr bash -c '{ printf "%s\n" "$2"; sleep "$4"; printf "%s\n" "$3"; } | "$0" -c "$1"' \
		"$BIN/sbx-run" "$conf" "$(cell 'import threading, os, time
def flood():
    time.sleep(0.5)
    b = b"y" * (1 << 20)
    for _ in range(200):
        os.write(1, b)
threading.Thread(target=flood).start()' | "$BIN/sbx-validate" -c "$conf")" "$(cell '1' | "$BIN/sbx-validate" -c "$conf")" "$(bound 6 20)"
	jqe 0 '.status == "success" and .stdout == ""'
	jqe 1 '.kernel == "restarted" and (.kernel_note | test("printed more than 64 MiB while no cell ran"))'
}

@test "--control end_session: the session's kernel is killed, and a cell of it that comes later starts none" {
	# end_session once the first cell's result is out, the second cell after it
	mkfifo ctl
	{
		exec 6> ctl
		cell 'x = 1'
		for _ in $(seq 600); do [ -s out ] && break; sleep 0.1; done
		printf '{"end_session":"%s"}\n' "$sid" >&6
		sleep 0.5
		cell 'x'
	} | "$BIN/sbx-validate" -c "$conf" | "$BIN/sbx-run" -c "$conf" --control 5 5< ctl > out || st=$?
	# 1: a record is an internal_error
	[ "${st:-0}" -eq 1 ]
	mapfile -t lines < out
	jqe 0 '.status == "success" and .kernel == "started"'
	jqe 1 '.status == "internal_error" and (.error | test("the session ended"))'
}

# bats test_tags=kernel
@test "the kernel's environment is the language's, not the host's; no capabilities; no network" {
	export SBX_TEST_SECRET=hunter2
	cells < <(cell 'import os
print(sorted(k for k in os.environ if "SECRET" in k))
print(open("/proc/self/status").read().split("CapEff:")[1].split()[0])
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2); print("network")
except OSError as e:
    print("no network")')
	jqe 0 '.status == "success" and .stdout == "[]\n0000000000000000\nno network\n"'
}

@test "output: printed between cells goes first in the next cell's; a cell's output is capped like any run's" {
	cells < <(cell 'import threading, time
threading.Thread(target=lambda: (time.sleep(0.3), print("late", flush=True))).start()'
		cell 'import time; time.sleep(0.6); print("mine")'; cell 'print("y" * 500000)')
	jqe 0 '.stdout == ""'
	jqe 1 '.stdout == "late\nmine\n"'
	jqe 2 '.stdout_truncated == true and .stdout_bytes == 500001 and (.stdout | length) < 110000'
}

@test "figures: a cell that draws one returns it; a cell that does not touch it neither draws nor returns it; a change returns it again" {
	[ -z "${SBX_GUEST:-}" ] || skip "QEMU without KVM draws figures too slowly, and nothing here is the kernel's"
	[ -d /usr/lib/python3/dist-packages/matplotlib ] || skip "python3-matplotlib is not installed (make deps installs it)"
	cmp -s "$ROOT/share/python/sitecustomize.py" /usr/local/share/sbx/python/sitecustomize.py ||
		skip "the sandboxes' Python hook is not installed (make deps installs it)"
	# each draw of the figure is counted in it (matplotlib's draw_event):
	# the cells after one that changed nothing must have drawn nothing
	fig() { cell "$1" '{artifacts: true, timeout: 30}'; }
	cells < <(fig 'import matplotlib.pyplot as plt
draws = []
fig, ax = plt.subplots(); fig.canvas.mpl_connect("draw_event", lambda e: draws.append(1)); ax.plot([1, 4, 9])
other = plt.figure(); plt.plot([3, 1]); plt.sca(ax)'
		fig 'n = len(draws); n'; fig 'len(draws) - n'; fig 'ax.plot([9, 4, 1])'; fig 'x = 1'; fig 'ax.set_title("squares")'
		fig 'fig.canvas.draw(); ax.set_xlim(0, 5); fig.canvas.draw()'; fig 'plt.show()'; fig 'plt.gcf() is fig, len(draws)')
	[ "${#lines[@]}" -eq 9 ]
	jqe 0 '.status == "success" and ([.artifacts[] | [.path, .mime_type]] == [["figure-1.png", "image/png"], ["figure-2.png", "image/png"]])'
	jqe 1 '.value == "1" and .artifacts == []'
	jqe 2 '.value == "0" and .artifacts == []'
	jqe 3 '[.artifacts[].path] == ["figure-3.png"]'
	jqe 4 '.artifacts == []'
	jqe 5 '[.artifacts[].path] == ["figure-4.png"]'
	# drawn by the cell itself: a change all the same
	jqe 6 '[.artifacts[].path] == ["figure-5.png"]'
	# plt.show() draws every figure, and writes none unchanged
	jqe 7 '.status == "success" and .artifacts == []'
	# the current figure is still the one the program chose, not the last drawn
	jqe 8 '.value == "(True, 7)"'
}

@test "cells of one session wait their turn, in order; another session's kernel runs beside them" {
	# Each cell prints when it ran (the host's clock, which the sandbox
	# shares): concurrency is the overlap of the intervals, not a wall-clock
	# budget, which a slow machine (QEMU without KVM) would miss.
	span='import json, time
t0 = time.time(); time.sleep(3); t1 = time.time(); print(json.dumps([t0, t1]))'
	cells -j 4 --unordered < <(cell "$span"'
x = 1' '{id: "a"}'; cell 'import json, time; print(json.dumps([time.time()])); x + 1' '{id: "b"}'
		jq -cn --arg s "$other" --arg c "$span" '{id: "c", language: "python", session: $s, cell: true, code: $c}')
	printf '%s\n' "${lines[@]}" > results
	at() { jq -e -s "map({(.id): (.stdout | fromjson)}) | add | $1" results > /dev/null || { cat results >&2; return 1; }; }
	[ "$(jq -r 'select(.id == "b") | .value' results)" = 2 ]
	at '.b[0] >= .a[1]'
	at '.c[0] < .a[1] and .a[0] < .c[1]'
}

@test "max_kernels: a kernel past it is refused with the reason; kernel_idle stops an idle kernel and the next cell says so" {
	CONF_SED='s/^max_kernels  *=.*/max_kernels = 1/; s/^kernel_idle  *=.*/kernel_idle = 1/' local_setup
	cells -j 1 < <(cell 'x = 1'; jq -cn --arg s "$other" '{language: "python", session: $s, cell: true, code: "1"}'
		jq -cn '{language: "bash", code: "sleep 1.5"}'; cell "'x' in dir()")
	jqe 0 '.status == "success"'
	jqe 1 '.status == "internal_error" and (.error | test("too many live kernels \\(max_kernels 1"))'
	jqe 3 '.value == "False" and .kernel == "restarted" and (.kernel_note | test("stopped after 1 s without a cell"))'
}

@test "history: each cell is a row with its session and execution count" {
	cells < <(cell 'a = 1'; cell 'a')
	printf '%s\n' "${lines[@]}" | "$BIN/sbx-log" -c "$conf" > /dev/null
	run --separate-stderr "$BIN/sbx-history" -c "$conf" --session "$sid" --jq '[.execution_count, .code_snippet, .status]'
	[ "${lines[0]}" = '[2,"a","success"]' ]
	[ "${lines[1]}" = '[1,"a = 1","success"]' ]
}

@test "bad cells: no session, a language without a kernel, stdin or args, reset without cell" {
	run --separate-stderr "$BIN/sbx-validate" -c "$conf" < <(jq -cn '{language: "python", cell: true, code: "1"}'
		cell 'int x;' '{language: "c"}'; cell '1' '{stdin: "x"}'; cell '1' '{args: ["a"]}'
		jq -cn --arg s "$sid" '{language: "python", session: $s, code: "1", reset: true}'; cell '1' '{cell: "yes"}')
	jqe 0 '.status == "invalid" and (.error | test("give \"session\""))'
	jqe 1 '.status == "invalid" and (.error | test("has no kernel"))'
	jqe 2 '.status == "invalid" and (.error | test("\"stdin\" does not go with \"cell\""))'
	jqe 3 '.status == "invalid" and (.error | test("\"args\" does not go with \"cell\""))'
	jqe 4 '.status == "invalid" and (.error | test("goes with \"cell\": true"))'
	jqe 5 '.status == "invalid" and (.error | test("\"cell\" must be true"))'
}
