#!/usr/bin/env bats
# sbx-run with the native backend: results, statuses, stages, parallelism.
load helpers

local_teardown() { :; }
teardown() { assert_no_leftovers; }

# bats test_tags=kernel
@test "python: the DESIGN example result, field by field" {
	run_req '{"id":"r1","language":"python","code":"print(sum([1,2,3]))","task_id":"keep"}'
	[ "$status" -eq 0 ]
	jqe 0 '.id == "r1" and .task_id == "keep" and .language == "python" and .status == "success"'
	jqe 0 '.exit_code == 0 and .signal == null and .stdout == "6\n" and .stderr == ""'
	jqe 0 '.stdout_bytes == 2 and .stderr_bytes == 0 and .stdout_truncated == false and .stderr_truncated == false'
	jqe 0 '(.duration_ms | type) == "number" and .duration_ms > 0 and .cpu_ms > 0 and .memory_peak_bytes > 1000000'
	jqe 0 '(.started_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$")) and .backend == "'"$BACKEND"'" and .compile == null'
	jqe 0 '.exec == null and .compile_limits == null and .limits.output_bytes == 102400'
	jqe 0 '.limits_enforced | index("namespaces") and index("seccomp") and index("timeout") and index("rlimits")'
}

# (Not tagged kernel: t/25 compiles and runs every language in the guests.)
@test "c++: compiled in one sandbox and run in another (the seed's example)" {
	# its own state directory: an empty compile cache (t/27-cache.bats)
	conf=$(conf_with '')
	run_req '{"language":"cpp","code":"#include <iostream>\n#include <vector>\nint main(){ std::vector<int> v{1,2,3,4,5}; int s=0; for(int x: v) s+=x; std::cout << \"The sum of elements is: \" << s << std::endl; }"}' -c "$conf"
	[ "$status" -eq 0 ]
	jqe 0 '.status == "success" and .stdout == "The sum of elements is: 15\n"'
	jqe 0 '.compile.status == "success" and .compile.exit_code == 0 and .compile.cached == false and .compile.duration_ms > 0'
	jqe 0 '(.compile | has("stdout") and has("stderr") and has("cpu_ms") and has("memory_peak_bytes"))'
}

@test "compile_error: the compiler's own message, and the program never ran" {
	run_req '{"language":"c","code":"int main(void) { return undefined_name; }"}'
	[ "$status" -eq 0 ]
	jqe 0 '.status == "compile_error" and .exit_code == null and .stdout == "" and .stderr == ""'
	jqe 0 '.compile.status == "error" and .compile.exit_code == 1 and (.compile.stderr | test("undefined_name.*undeclared"))'
}

@test "a non-zero exit is error with its exit code; a crash is error with its signal" {
	run --separate-stderr sbx -j 1 < <(printf '%s\n' \
		'{"language":"bash","code":"echo out; echo err >&2; exit 3"}' \
		'{"language":"c","code":"int main(void){ volatile int *p = 0; return *p; }"}' \
		'{"language":"python","code":"import os, signal\nos.kill(os.getpid(), signal.SIGABRT)"}')
	jqe 0 '.status == "error" and .exit_code == 3 and .signal == null and .stdout == "out\n" and .stderr == "err\n"'
	jqe 1 '.status == "error" and .exit_code == null and .signal == "SIGSEGV"'
	jqe 2 '.status == "error" and .signal == "SIGABRT"'
}

@test "stdin, args and files reach the program; binary files arrive intact" {
	head -c 3000 /dev/urandom > blob
	b64=$(base64 -w0 blob)
	sum=$(sha256sum blob | cut -d' ' -f1)
	req=$(jq -cn --arg b "$b64" '{language:"python",code:"import sys,hashlib\nprint(sys.stdin.read().upper(), sys.argv[1:])\nprint(open(\"data/in.txt\").read())\nprint(hashlib.sha256(open(\"bin/blob\",\"rb\").read()).hexdigest())",stdin:"hello",args:["a b","c"],files:{"data/in.txt":"file content","bin/blob":{content:$b,encoding:"base64"}}}')
	run_req "$req"
	jqe 0 '.status == "success"'
	[ "$(jqn 0 .stdout)" = "HELLO ['a b', 'c']
file content
$sum" ]
}

@test "empty stdin is an immediate end of file" {
	run_req '{"language":"python","code":"import sys\nprint(repr(sys.stdin.read()))","timeout":3}'
	jqe 0 '.status == "success" and .stdout == "'"''"'\n"'
}

# bats test_tags=kernel
@test "timeout: killed at the wall-clock limit, on time" {
	start=$(date +%s%N)
	run_req '{"language":"python","code":"import time\ntime.sleep(30)","timeout":1}'
	elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
	jqe 0 '.status == "timeout" and .signal == "SIGKILL" and .exit_code == null'
	jqe 0 '.duration_ms >= 1000 and .duration_ms < 1300'
	[ "$elapsed" -lt "$(bound 3000 6000)" ]
}

# bats test_tags=kernel
@test "memory_limit: from the cgroup's OOM count" {
	skip_unless_cgroups
	# The timeout is a bound, not the test: a guest starved of CPU has taken
	# more than ten seconds to fill 64 MiB.
	run_req '{"language":"python","code":"x = bytearray(1 << 30)\nprint(len(x))","memory":"64m","timeout":60}'
	jqe 0 '.status == "memory_limit" and .stdout == "" and .memory_peak_bytes <= 67108864'
	jqe 0 '.limits_enforced | index("memory")'
}

@test "the program's OOM score: sbx-run's own when not negative" {
	skip_on_docker "the engine gives each container a score of its own"
	echo '{"language":"bash","code":"cat /proc/self/oom_score_adj"}' > req
	sbx < req > zero
	[ "$(jq -r .stdout zero)" = 0 ]
	# raising is anyone's right: a positive score passes on as it is
	(echo 300 > /proc/self/oom_score_adj && sbx < req > high)
	[ "$(jq -r .stdout high)" = 300 ]
}

# bats test_tags=kernel
@test "the program's OOM score is never negative, so the OOM killer can take it" {
	skip_on_docker "the engine gives each container a score of its own"
	skip_unless_root
	skip_unless_cgroups
	# A shielded parent (-1000) must not shield the program: a memory
	# cgroup with nothing the OOM killer may take stalls until the timeout.
	(echo -1000 > /proc/self/oom_score_adj) 2>/dev/null ||
		skip "lowering oom_score_adj needs CAP_SYS_RESOURCE, which this host withholds from root"
	echo '{"language":"bash","code":"cat /proc/self/oom_score_adj"}' > req
	(echo -1000 > /proc/self/oom_score_adj && sbx < req > low)
	[ "$(jq -r .stdout low)" = 0 ]
	echo '{"language":"python","code":"x = bytearray(512*1024*1024)","memory":"64m","timeout":60}' > big
	(echo -1000 > /proc/self/oom_score_adj && sbx < big > oom)
	[ "$(jq -r .status oom)" = memory_limit ]
}

@test "thread pools are the CPU quota's size: OpenMP and BLAS read it, a language's env may say otherwise" {
	# libgomp is GCC's OpenMP runtime, which OpenBLAS builds use too: what
	# it reports is what the program's thread pool would be
	code='import ctypes, os
omp = ctypes.CDLL("libgomp.so.1")
print(os.environ["OPENBLAS_NUM_THREADS"], os.environ["MKL_NUM_THREADS"], omp.omp_get_max_threads())'
	run_req "$(py "$code" '{cpus: 0.5}')"
	jqe 0 '.status == "success" and .stdout == "1 1 1\n"'
	run_req "$(py "$code" '{cpus: 2}')"
	jqe 0 '.status == "success" and .stdout == "2 2 2\n"'
	conf=$(conf_with '/^\[language.python\]/,/^env/s|^env *= *\[|env = ["OMP_NUM_THREADS=3", |')
	run_req "$(py "$code" '{cpus: 0.5}')" -c "$conf"
	jqe 0 '.status == "success" and .stdout == "1 1 3\n"'
}

# bats test_tags=kernel
@test "a crash that is not an OOM is not reported as memory_limit" {
	run_req '{"language":"python","code":"import os\nos._exit(137)","memory":"64m"}'
	# The docker engine reports a signal N as exit status 128+N, so there an
	# exit(137) reads as SIGKILL (README: the two backends); never an OOM.
	if on_docker; then
		jqe 0 '.status == "error" and (.exit_code == 137 or .signal == "SIGKILL")'
	else
		jqe 0 '.status == "error" and .exit_code == 137'
	fi
}

@test "-j 1 keeps the input order; records that are not jobs pass through in place" {
	run --separate-stderr sbx -j 1 < <(printf '%s\n' \
		'{"id":"a","language":"python","code":"import time; time.sleep(0.3); print(1)"}' \
		'not json' \
		'{"id":"b","language":"bash","code":"echo 2"}' \
		'{"id":"c","language":"cobol","code":"x"}' \
		'{"id":"d","language":"bash","code":"echo 4"}')
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 5 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r '.id // .line' | tr '\n' ' ')" = "a 2 b c d " ]
	jqe 1 '.status == "invalid"'
	jqe 3 '.status == "invalid"'
}

@test "-j 4 runs four one-second jobs in about one second; results in input order, each with its input_line" {
	# the first job is the slowest: the others wait for it in the window
	# (the blank lines are the file's: input_line counts them).  In the
	# guest, where four sandboxes are made one after another slowly enough
	# to spread the others' ends over seconds, it is slower still.
	slow=$(bound 1.5 3)
	jobs() {
		echo "{\"id\":\"s1\",\"language\":\"bash\",\"code\":\"sleep $slow; echo 1\"}"
		echo
		for i in 2 3 4; do echo "{\"id\":\"s$i\",\"language\":\"bash\",\"code\":\"sleep 1; echo $i\"}"; done
		echo
		echo 'not json'
	}
	start=$(date +%s%N)
	run --separate-stderr sbx -j 4 < <(jobs)
	elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
	[ "$status" -eq 1 ] # the line that is not JSON
	[ "${#lines[@]}" -eq 5 ]
	[ "$(printf '%s\n' "${lines[@]:0:4}" | jq -r '"\(.id)@\(.input_line)"' | tr '\n' ' ')" = "s1@1 s2@3 s3@4 s4@5 " ]
	jqe 4 '.status == "invalid" and (.error | contains("line 7")) and .input_line == 7'
	# at once: each other job started before the first ended (their own
	# started_at and duration, whatever the machine's speed); and here in
	# about the first job's time (under QEMU without KVM, making four
	# sandboxes takes seconds of its own)
	printf '%s\n' "${lines[@]:0:4}" | jq -se 'def ms: (.started_at[0:19] + "Z" | fromdate) * 1000 + (.started_at[20:23] | tonumber);
		(.[0] | ms + .duration_ms) as $stop | all(.[1:][]; ms < $stop)'
	[ "$elapsed" -lt "$(bound 3000 30000)" ]
	# --unordered: as they complete; input_line still matches them back
	run --separate-stderr sbx -j 4 --unordered < <(jobs)
	[ "$(printf '%s\n' "${lines[@]}" | jq -r 'select(.id) | .id' | tail -1)" = s1 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r 'select(.id == "s3") | .input_line')" = 4 ]
}

@test "the reader of the results going away stops sbx-run at once: sandboxes killed, exit 3" {
	for i in $(seq 20); do echo '{"language":"bash","code":"sleep 1; echo x"}'; done | "$BIN/sbx-validate" > jobs
	start=$(date +%s%N)
	"$BIN/sbx-run" -j 2 < jobs 2> err | head -1 > first
	st=${PIPESTATUS[0]}
	elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
	[ "$st" -eq 3 ] || { echo "exit $st"; cat err; false; }
	# the first result and the stop, not the 10 s of all twenty
	[ "$elapsed" -lt "$(bound 2500 6000)" ]
	jq -e '.stdout == "x\n"' first
	grep -q "stopping" err
}

@test "sbx-run refuses records that are not jobs, and jobs above the configuration's ceilings" {
	run --separate-stderr "$BIN/sbx-run" < <(printf '%s\n' \
		'{"language":"python","code":"print(1)"}' \
		"$(echo '{"language":"python","code":"1"}' | "$BIN/sbx-validate" | jq -c '.limits.memory_bytes = 1e12')" \
		"$(echo '{"language":"python","code":"1"}' | "$BIN/sbx-validate" | jq -c '.exec.binds = ["/root"]')")
	[ "$status" -eq 1 ]
	jqe 0 '.status == "invalid" and (.error | startswith("not a job"))'
	jqe 1 '.status == "invalid" and (.error | test("limits.memory_bytes 931.3 GiB exceeds the most the configuration grants"))'
	jqe 2 '.status == "invalid" and (.error | test("binds"))'
}

@test "a program that cannot be executed is an internal_error that says so" {
	job=$(echo '{"language":"bash","code":"1"}' | "$BIN/sbx-validate" | jq -c '.exec.run = ["no-such-program"]')
	run --separate-stderr "$BIN/sbx-run" <<< "$job"
	[ "$status" -eq 1 ]
	jqe 0 '.status == "internal_error" and (.error | test("cannot run \"no-such-program\" in the sandbox: No such file or directory"))'
}

@test "a program is looked up on the sandbox's PATH, not on sbx-run's" {
	job=$(echo '{"language":"bash","code":"1"}' | "$BIN/sbx-validate" | jq -c '.exec.run = ["true"]')
	# sbx-run's own PATH has no "true": the sandbox's default one has.
	run --separate-stderr env PATH=/nonexistent "$BIN/sbx-run" <<< "$job"
	[ "$status" -eq 0 ]
	jqe 0 '.status == "success"'
	# The job's PATH has no "true", sbx-run's has: not found.
	run --separate-stderr "$BIN/sbx-run" <<< "$(jq -c '.exec.env += ["PATH=/nonexistent:/scratch"]' <<< "$job")"
	[ "$status" -eq 1 ]
	jqe 0 '.status == "internal_error" and (.error | test("cannot run \"true\" in the sandbox: No such file or directory"))'
	# Found there but not executable: says so.
	run --separate-stderr "$BIN/sbx-run" <<< "$(jq -c '.exec.run = ["main.sh"] | .exec.env += ["PATH=/nonexistent:/scratch"]' <<< "$job")"
	jqe 0 '.status == "internal_error" and (.error | test("cannot run \"main.sh\" in the sandbox: Permission denied"))'
}

@test "a job its sandbox cannot be handed is an internal_error that says why" {
	skip_on_docker "about the native backend's spec socket"
	# A hand-made job (sbx-validate would refuse it) whose argv exceeds
	# what init accepts: the error must be that one, and init reaped.
	echo '{"language":"bash","code":"true"}' | "$BIN/sbx-validate" |
		jq -c '.exec.run += [range(12) | "x" * 100000]' > job
	run --separate-stderr "$BIN/sbx-run" < job
	jqe 0 '.status == "internal_error" and (.error | test("cannot hand the job to its sandbox: Argument list too long"))'
}

# bats test_tags=kernel
@test "--timings adds where the time went" {
	run_req '{"language":"bash","code":"true"}' --timings
	if on_docker; then
		jqe 0 '.timings.run_stage | .created > 0 and .started > .created and .exited >= .started and .removed >= .exited'
		return
	fi
	jqe 0 '.timings.run_stage.assigned > 0 and .timings.run_stage.program_start > .timings.run_stage.assigned and .timings.run_stage.program_exit >= .timings.run_stage.program_start and .timings.result > 0'
	# Init's steps in order; a sandbox made for its job (or made ahead
	# while the job was being read) has the steps of its making too, the
	# supervisor's before what depends on them.
	jqe 0 '.timings.run_stage as $t
		| ["ids_mapped", "namespaces_made", "root_entered", (if $t.slot == null then "loopback_up" else empty end), "root_built", "job_received",
		   "work_attached", "program_start", "program_execve", "program_exit", "drained"] | map($t[.]) as $chain
		| ($chain | map(select(. != null))) as $seen
		| $seen == ($seen | sort) and ($chain[-6:] | all(. != null and . > 0)) and $t.assigned < $t.job_received
		and (if $t.warm then true else ($chain | all(. != null)) and $t.cloned < $t.ids_mapped end)
		and (if $t.cgroups_made and $t.root_built then $t.cgroups_made < $t.root_built else true end)'
	# Init's exit and the cgroups' removal (where there are cgroups) come
	# after the result: stderr.
	[[ $stderr =~ timings:\ job\ [0-9a-f-]+:\ after\ its\ result,\ its\ sandbox.s\ init\ was\ reaped\ at\ [-+][0-9.]+\ ms ]]
	if has_cgroup_limits; then
		[[ $stderr =~ \ ms\ and\ its\ cgroups\ removed\ at\ \+[0-9.]+\ ms ]]
	else
		[[ $stderr != *"cgroups removed"* ]]
	fi
	[ "$(printf '%s\n' "$stderr" | grep -c 'timings:')" -eq 1 ]
	# A warm sandbox's steps before its job are not the job's time.
	for i in 1 2 3; do echo '{"language":"bash","code":"true"}'; done | "$BIN/sbx-validate" > jobs
	run --separate-stderr sbx -j 1 --timings < jobs
	jqe 2 '.timings.run_stage | .warm == true and .cloned == null and .program_execve > 0 and ([.[] | numbers] | min >= 0)'
}

@test "--check: a table on a terminal, JSON piped or with --json" {
	script -qec "'$BIN/sbx-run' --check" /dev/null > table || true
	grep -qE '^backend +(native|docker)' table
	grep -qE '^usable +yes' table
	# a list of objects in a section: bracketed, each by its name
	grep -qE '^kernels +.*languages=\[python [^];]*; javascript [^];]*\]' table
	script -qec "'$BIN/sbx-run' --check --json" /dev/null > json || true
	tr -d '\r' < json | jq -e '.usable == true'
}

# bats test_tags=kernel
@test "--check reports the backend as one JSON object" {
	run --separate-stderr "$BIN/sbx-run" --check
	[ "$status" -eq 0 ] || [ "$status" -eq 1 ]
	if on_docker; then
		jqe 0 '.backend == "docker" and (.engine.version | length > 0) and .usable == true and (.fixes | type) == "array"'
		return
	fi
	jqe 0 '.backend == "native" and .probe.ok == true and .usable == true and (.fixes | type) == "array"'
	jqe 0 '.cgroup.version == "v1" or .cgroup.version == "v2" or .cgroup.version == "none"'
	# every feature the backend needs is there (it is usable), each named
	# with its release; cloning a detached mount matches the version
	jqe 0 '.kernel_features | length >= 7 and all(.name and (.since | test("^[0-9]+\\.[0-9]+$")) and (.ok or .fallback))'
	local v direct=false
	v=$(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
	set -- $v
	{ [ "$1" -gt 6 ] || { [ "$1" -eq 6 ] && [ "$2" -ge 15 ]; }; } && direct=true
	jqe 0 ".kernel_features[] | select(.name == \"clone of a detached mount\") | .ok == $direct"
	# as root, roots are shared with later processes (t/30 tests how)
	if [ "$(id -u)" = 0 ]; then jqe 0 '.shared_roots == {"dir": "/run/sbx/roots", "shared": true}'; fi
}

# bats test_tags=kernel
@test "SIGTERM: every sandbox is killed, each job still gets a result" {
	sbx -j 2 --events 5 > out 5> events < <(printf '%s\n' '{"id":"x","language":"bash","code":"sleep 30"}' '{"id":"y","language":"bash","code":"sleep 30"}') 2> err &
	# both run stages started
	await_lines 2 events
	our_pkill TERM "$BIN/sbx-run"
	wait || true
	[ "$(jq -r .status out | sort | uniq -c | awk '{print $1, $2}')" = "2 cancelled" ]
	[ "$(jq -r .error out | sort -u)" = "cancelled" ]
}

# bats test_tags=kernel
@test "a stream: each init is reaped and its cgroups removed while sbx-run runs on" {
	skip_on_docker "about the native backend's inits"
	skip_unless_root
	# A result comes at init's report, before init's own exit; the
	# supervisor reaps it from its loop.  Only the warm sandboxes, waiting
	# for the next job, may remain while the input is open.
	mkfifo in
	sbx -j 2 < in > out 2> err &
	local w
	exec {w}> in
	for i in 1 2 3 4 5 6; do printf '{"id":"%s","language":"bash","code":"echo %s"}\n' $i $i >&"$w"; done
	for i in $(seq 100); do [ "$(wc -l < out)" -ge 6 ] && break; sleep 0.05; done
	[ "$(jq -r .status out | sort | uniq -c | awk '{print $1, $2}')" = "6 success" ]
	local zombies groups live
	for i in $(seq 50); do
		zombies=$(our_procs "$SBX_UID" | awk '$3 ~ /^Z/')
		live=$(our_procs "$SBX_UID" '^sbx-init' | awk '$3 !~ /^Z/' | wc -l)
		# a run's own groups, or its slot's with a task in them
		groups=$({ find /sys/fs/cgroup -path "*/$CG_PARENT/r*" -maxdepth 8 -type d -printf '%f\n'
			find /sys/fs/cgroup -maxdepth 9 -path "*/$CG_PARENT/slot*/cgroup.procs" -exec sh -c '[ -n "$(cat "$1")" ] && basename "${1%/cgroup.procs}"' _ {} \; ; } | sort -u | wc -l)
		[ -z "$zombies" ] && { [ "$groups" = "$live" ] || ! has_cgroup_limits; } && break
		sleep 0.05
	done
	exec {w}>&-
	wait
	[ -z "$zombies" ] || { echo "not reaped: $zombies"; false; }
	# (without cgroups, a container's root: inits alone)
	has_cgroup_limits || return 0
	[ "$groups" = "$live" ] || { echo "$groups run cgroups for $live live inits"; false; }
}

# bats test_tags=kernel
@test "SIGKILL of sbx-run takes its sandboxes with it" {
	skip_unless_root
	sbx -j 2 > /dev/null < <(printf '%s\n' '{"language":"bash","code":"sleep 30 & sleep 30"}' '{"language":"python","code":"import time; time.sleep(30)"}') 2>/dev/null &
	# (a guest's emulated CPU, shared by two guests, can take more than
	# 5 s to start both sandboxes: CI's run of 2026-12-06 at 527233a)
	for i in $(seq "$(bound 50 600)"); do sandbox_pgrep "$SBX_PROG_UID" '^sleep' > /dev/null && break; sleep 0.1; done
	sandbox_pgrep "$SBX_PROG_UID" > /dev/null
	# (what runs, should sbx-run not be among it: a guest's CI run once
	# found none here, 2026-12-06)
	our_pkill KILL "$BIN/sbx-run" || { our_procs >&2; false; }
	wait || true
	# The native sandboxes die with it (their inits' parent-death
	# signal); the docker backend's containers are swept by the next
	# sbx-run (dock.c), which also removes the dead one's cgroups.
	if ! on_docker; then
		for i in $(seq 50); do sandbox_pgrep "$SBX_PROG_UID,$SBX_UID" > /dev/null || break; sleep 0.1; done
		! sandbox_procs "$SBX_PROG_UID,$SBX_UID" | grep . || false
	fi
	run_req '{"language":"bash","code":"true"}'
	jqe 0 '.status == "success"'
	! sandbox_procs "$SBX_PROG_UID,$SBX_UID" | grep . || false
}

@test "an output flood costs the supervisor the ceiling, not the flood" {
	cat > rss.py <<'PY'
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdin=open("job"), capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.stdout.decode().count("\n"))
PY
	echo '{"language":"python","code":"import sys\nwhile True: sys.stdout.write(\"y\" * 65536)","timeout":3}' | "$BIN/sbx-validate" > job
	read -r rss n < <(python3 rss.py "$BIN/sbx-run")
	[ "$n" -eq 1 ]
	# the program wrote gigabytes; the supervisor stayed small (KiB)
	[ "$rss" -lt 300000 ]
}

@test "--events reports each stage as it starts; --control cancels one job by id" {
	mkfifo ctl
	# the cancel once slow's program runs, a line that is not a message
	# before it (after it, sbx-run may be done before reading it); the
	# control open until both results are out
	(await_program '^python3 main[.]py' && { echo 'not json'; echo '{"cancel":"slow"}'; }; echo '{"cancel":"nobody"}'; await_lines 2 out) > ctl &
	printf '%s\n' '{"id":"slow","language":"python","code":"import time; time.sleep(20)"}' \
		'{"id":"fast","language":"c","code":"int main(void){return 0;}"}' |
		"$BIN/sbx-validate" | "$BIN/sbx-run" -j 2 --no-cache --events 5 --control 6 5> events 6< ctl > out 2> err || rc=$?
	wait
	[ "${rc:-0}" -eq 1 ] # a cancelled job is a failed record
	[ "$(jq -sc 'map({id, status, error}) | sort_by(.id)' out)" = '[{"id":"fast","status":"success","error":null},{"id":"slow","status":"cancelled","error":"cancelled"}]' ]
	[ "$(jq -sc 'map(select(.id == "fast") | .event)' events)" = '["compile","run","done"]' ]
	[ "$(jq -sc 'map(select(.id == "slow") | [.event, .status])' events)" = '[["run",null],["done","cancelled"]]' ]
	grep -q 'sbx-run: --control: line 1 is not {"cancel": ID}' err
	run --separate-stderr "$BIN/sbx-run" --events 99 < /dev/null
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == 'sbx-run: --events: "99" is not an open file descriptor above 2' ]]
}

@test "the jobs of one session run one at a time, in the order they came; other jobs run beside them" {
	skip_on_docker "the same hold applies; this checks it once"
	sid=$(printf '%032x' 5)
	ws=$BATS_TEST_TMPDIR/var/sessions/$sid
	mkdir -p "$ws/.deps"
	owner=$(id -u)
	[ "$owner" = 0 ] && owner=$SBX_PROG_UID
	chown -R "$owner:$owner" "$ws"
	conf=$(conf_with 's/^$//')
	{
		jq -nc --arg s "$sid" '{id: "a", language: "bash", session: $s, code: "sleep 1; echo a > order"}'
		jq -nc --arg s "$sid" '{id: "b", language: "bash", session: $s, code: "cat order; echo b"}'
		jq -nc '{id: "c", language: "bash", code: "sleep 1; echo c"}'
	} | "$BIN/sbx-validate" -c "$conf" > jobs
	run --separate-stderr "$BIN/sbx-run" -c "$conf" -j 3 --unordered < jobs
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	# b waited for a: it read what a wrote and began after a's program ended;
	# c did not wait: it began while a's program ran (each sleeps 1 s). Start
	# times, not the order of the results: b takes milliseconds, so whether
	# it or c ends last is a race.
	[ "$(printf '%s\n' "${lines[@]}" | jq -r 'select(.id == "b") | .stdout')" = "a
b" ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r 'select(.id == "c") | .stdout')" = c ]
	printf '%s\n' "${lines[@]}" | jq -se 'def ms: (.started_at[0:19] + "Z" | fromdate) * 1000 + (.started_at[20:23] | tonumber);
		INDEX(.id) | (.b | ms) >= (.a | ms) + .a.duration_ms - 1 and (.c | ms) < (.a | ms) + .a.duration_ms' > /dev/null
}

@test "--progress: done/total, rate and counts by status on stderr, a summary at the end; --events says done" {
	{ for i in 1 2 3; do echo '{"language":"bash","code":"echo hi"}'; done; echo '{"language":"bash","code":"exit 3"}'; } |
		"$BIN/sbx-validate" > jobs.jsonl
	run --separate-stderr "$BIN/sbx-run" --progress -j 2 --events 7 jobs.jsonl 7> events
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]
	[[ "${stderr_lines[-1]}" =~ ^sbx-run:\ 4/4\ \(100%\)\ done\ in\ [0-9.]+\ s,\ [0-9.]+/s\;\ success\ 3,\ error\ 1$ ]]
	[ "$(jq -r 'select(.event == "done") | .status' events | sort | uniq -c | awk '{print $1 $2}' | paste -sd,)" = "1error,3success" ]
	# not on a pipe unless asked; on a terminal by default
	run --separate-stderr "$BIN/sbx-run" jobs.jsonl
	[[ "$stderr" != *"done in"* ]]
	script -qec "'$BIN/sbx-run' jobs.jsonl > /dev/null" /dev/null > tty
	tr '\r' '\n' < tty | grep -q 'done in'
	# the total where the pipeline reads a file: sbx-validate counts its
	# requests (blank lines are none) into each record's input_total
	{ echo; for i in 1 2 3 4 5; do echo '{"language":"bash","code":"true"}'; echo; done; } > reqs.jsonl
	run --separate-stderr bash -c "'$BIN/sbx-validate' < reqs.jsonl | '$BIN/sbx-run' --progress"
	[[ "${stderr_lines[-1]}" == "sbx-run: 5/5 (100%) done in "* ]]
	jqe 4 '.input_line == 10 and .input_total == 5'
	# a pipe's are not known ahead: a count, no total
	run --separate-stderr bash -c "cat reqs.jsonl | '$BIN/sbx-validate' | '$BIN/sbx-run' --progress"
	[[ "${stderr_lines[-1]}" == "sbx-run: 5 done in "* ]]
	jqe 4 '.input_line == 10 and has("input_total") == false'
}

@test "artifacts: the files a run made or changed, typed by content, bounded; links, FIFOs and unchanged inputs left out" {
	code='import os
open("out.txt", "w").write("hello")
open("img.png", "wb").write(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
os.makedirs("sub", exist_ok=True)
open("sub/x.svg", "w").write("<svg xmlns=\"http://www.w3.org/2000/svg\"/>")
open("in.txt", "a").write("+more")
open("big.bin", "wb").write(os.urandom(5 << 20))
os.symlink("/etc/shadow", "shadow")
os.mkfifo("fifo")'
	run_req "$(py "$code" '{artifacts: true, files: {"in.txt": "a", "keep.txt": "same"}}')"
	jqe 0 '.status == "success"'
	jqe 0 '[.artifacts[] | [.path, .mime_type, .bytes]] == [["img.png", "image/png", 264], ["in.txt", "text/plain", 6], ["out.txt", "text/plain", 5], ["sub/x.svg", "image/svg+xml", 41]]'
	jqe 0 '.artifacts_truncated == true'
	[ "$(jqn 0 '.artifacts[1].content' | base64 -d)" = "a+more" ]
	jqn 0 '.artifacts[0].content' | base64 -d | cmp - <(printf '\211PNG\r\n\032\n'; python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)))')
	# not asked: none; a compiled program's binary is not one of them
	run_req "$(py 'open("o", "w").write("x")')"
	jqe 0 'has("artifacts") | not'
	run_req "$(jq -nc '{language: "c", code: "#include <stdio.h>\nint main(void){FILE *f = fopen(\"r.txt\", \"w\"); fputs(\"c\", f); return 0;}", artifacts: true}')"
	jqe 0 '[.artifacts[].path] == ["r.txt"]'
	# max_artifacts
	conf=$(conf_with 's/^max_artifacts *=.*/max_artifacts = 1/')
	run_req "$(py 'open("a", "w").write("1"); open("b", "w").write("2")' '{artifacts: true}')" -c "$conf"
	jqe 0 '[.artifacts[].path] == ["a"] and .artifacts_truncated == true'
}

@test "matplotlib out of the box: Agg without a display, plt.show() gives each open figure as a PNG; numpy and pandas import" {
	skip_on_docker "a container's Python is its image's (this is the host's Debian matplotlib and sbx's hook)"
	[ -z "${SBX_GUEST:-}" ] || skip "QEMU without KVM draws figures too slowly, and nothing here is the kernel's"
	[ -d /usr/lib/python3/dist-packages/matplotlib ] || skip "python3-matplotlib is not installed (make deps installs it)"
	cmp -s "$ROOT/share/python/sitecustomize.py" /usr/local/share/sbx/python/sitecustomize.py ||
		skip "the sandboxes' Python hook is not installed (make deps installs it)"
	code='import matplotlib, matplotlib.pyplot as plt, numpy as np, pandas as pd
print(matplotlib.get_backend())
df = pd.DataFrame({"x": np.arange(5), "y": np.arange(5) ** 2})
df.plot(x="x", y="y")
plt.show()
plt.figure(); plt.bar(["a", "b"], [1, 2]); plt.figure(); plt.plot([3, 1])
plt.show()
plt.show()
plt.plot([1, 2])
plt.show()
plt.savefig("after.png")
print(len(plt.get_fignums()))'
	run_req "$(py "$code" '{artifacts: true, timeout: 60}')"
	# shown once each, again only when changed; left open, so savefig after show still draws
	jqe 0 '.status == "success" and .stdout == "agg\n3\n"'
	jqe 0 '[.artifacts[] | [.path, .mime_type]] == [["after.png", "image/png"], ["figure-1.png", "image/png"], ["figure-2.png", "image/png"], ["figure-3.png", "image/png"], ["figure-4.png", "image/png"]]'
	jqn 0 '.artifacts[1].content' | base64 -d > fig.png
	file fig.png | grep -q 'PNG image data, 640 x 480'
	# a program that chooses its backend keeps it; a name already taken is not written over
	run_req "$(py 'import matplotlib; matplotlib.use("svg"); import matplotlib.pyplot as plt
open("figure-1.png", "w").write("mine")
print(matplotlib.get_backend()); plt.plot([1]); plt.show()' '{artifacts: true, timeout: 30}')"
	jqe 0 '.stdout == "svg\n" and ([.artifacts[].path] == ["figure-1.png", "figure-2.png"])'
	[ "$(jqn 0 '.artifacts[0].content' | base64 -d)" = mine ]
}
