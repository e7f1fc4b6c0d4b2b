#!/usr/bin/env bats
# sbx-run as an ordinary user (nobody), where the kernel allows unprivileged
# user namespaces: same isolation, rlimits instead of cgroups.
load helpers

local_setup() {
	if [ "$(id -u)" = 0 ]; then
		AS=(setpriv --reuid 65534 --regid 65534 --clear-groups)
		"${AS[@]}" test -x "$BIN/sbx-run" -a -r "$SBX_CONF" || skip "nobody cannot reach $BIN or $SBX_CONF"
	else
		AS=()
	fi
	"${AS[@]}" unshare -U true 2>/dev/null || skip "unprivileged user namespaces are disabled here"
}
teardown() { assert_no_leftovers; }

user_run() {
	run --separate-stderr bash -c "'$BIN/sbx-validate' | ${AS[*]} '$BIN/sbx-run' $*"
}

@test "as an ordinary user: --check says usable, with the cgroup fix" {
	run --separate-stderr "${AS[@]}" "$BIN/sbx-run" --check
	jqe 0 '.usable == true and .probe.ok == true and .root == false'
	jqe 0 '.cgroup.ok == false and (.fixes | length) >= 1'
	jqe 0 '.shared_roots.shared == false and (.shared_roots.why | test("only root"))'
}

@test "as an ordinary user: runs, isolated, with rlimits" {
	user_run <<< '{"language":"python","code":"import os\ns = open(\"/proc/self/status\").read()\nprint(os.getuid(), \"CapEff:\\t0000000000000000\" in s, \"NoNewPrivs:\\t1\" in s, sorted(os.listdir(\"/\")))"}'
	[ "$status" -eq 0 ]
	jqe 0 '.status == "success" and (.stdout | startswith("1000 True True [\u0027bin\u0027"))'
	jqe 0 '.limits_enforced | index("memory_rlimit") and (index("memory") | not)'
}

@test "as an ordinary user: timeouts, memory ceilings and compiled languages work" {
	user_run -j 3 < <(printf '%s\n' \
		'{"id":"t","language":"bash","code":"trap \"\" TERM; sleep 30","timeout":1}' \
		'{"id":"m","language":"python","code":"x = bytearray(1 << 30)","memory":"64m"}' \
		'{"id":"c","language":"cpp","code":"#include <cstdio>\nint main(){ std::puts(\"hi\"); }"}')
	for i in 0 1 2; do
		case $(jqn "$i" .id) in
		t) jqe "$i" '.status == "timeout"' ;;
		m) jqe "$i" '.status == "error" and (.stderr | test("MemoryError"))' ;;
		c) jqe "$i" '.status == "success" and .stdout == "hi\n"' ;;
		esac
	done
	! pgrep -u 65534 sleep
}
