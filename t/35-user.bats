#!/usr/bin/env bats
# sbx-run as an ordinary user, where the kernel allows unprivileged user
# namespaces: the same isolation, with the limits the user's cgroup allows.
# As root, the tests become nobody (whose cgroup is root's: no cgroups,
# rlimits only), with a group of another number (65533) than its uid, as
# ordinary users have (the package's sbx user is uid 100, gid 107).
# t/guest/suite runs them as nobody itself, in a cgroup v2
# group delegated to it whose parent enables only memory and pids
# (SBX_TEST_DELEGATED names it): memory and pids for the whole tree then,
# and no CPU quota, said in --check, on stderr and in limits_enforced.
load helpers

local_setup() {
	if [ "$(id -u)" = 0 ]; then
		AS=(setpriv --reuid 65534 --regid 65533 --clear-groups)
		"${AS[@]}" test -x "$BIN/sbx-run" -a -r "$SBX_CONF" || skip "nobody cannot reach $BIN or $SBX_CONF"
	else
		AS=()
	fi
	"${AS[@]}" unshare -U true 2>/dev/null || skip "unprivileged user namespaces are disabled here"
}
teardown() {
	[ -z "${U_DIR:-}" ] || rm -rf "$U_DIR"
	assert_no_leftovers
}

# user_dir: $U_DIR, a directory the user can reach (the test's own is
# root's, 0700), with ro.conf, a configuration whose state directory no
# ordinary user can write (as with a root-owned checkout or an installed
# tree), and $h, the user's home.
user_dir() {
	U_DIR=$(mktemp -d /tmp/sbx-user.XXXXXX)
	chmod 0755 "$U_DIR"
	grep -v '^history *=' "$SBX_CONF" | sed 's|^state_dir *=.*|state_dir = "/proc/sbx-not-yours"|' > "$U_DIR/ro.conf"
	chmod 0644 "$U_DIR/ro.conf"
	h=$U_DIR/home
	mkdir "$h"
	[ "$(id -u)" != 0 ] || chown 65534:65534 "$h"
}

delegated() { [ "$(id -u)" != 0 ] && [ -n "${SBX_TEST_DELEGATED:-}" ]; }
skip_unless_delegated() {
	delegated || skip "needs a cgroup v2 group delegated to this user (t/guest/suite makes one)"
}

user_run() {
	run --separate-stderr bash -c "'$BIN/sbx-validate' | ${AS[*]} '$BIN/sbx-run' $*"
}

# bats test_tags=kernel
@test "as an ordinary user: --check says usable, with the cgroup fix" {
	run --separate-stderr "${AS[@]}" "$BIN/sbx-run" --check
	jqe 0 '.usable == true and .probe.ok == true and .root == false'
	jqe 0 '.shared_roots.shared == false and (.shared_roots.why | test("only root"))'
	if delegated; then
		jqe 0 '.cgroup.ok == true and .cgroup.version == "v2" and .cgroup.controllers == ["memory", "pids"]'
		jqe 0 '.cgroup.missing == ["cpu"] and (.cgroup.why | test("offers no cpu controller"))'
		jqe 0 '.fixes | any(test("no CPU quota"))'
	else
		jqe 0 '.cgroup.ok == false and (.fixes | length) >= 1'
	fi
}

# bats test_tags=kernel
@test "as an ordinary user: runs, isolated, with rlimits" {
	user_run <<< '{"language":"python","code":"import os\ns = open(\"/proc/self/status\").read()\nprint(os.getuid(), \"CapEff:\\t0000000000000000\" in s, \"NoNewPrivs:\\t1\" in s, sorted(os.listdir(\"/\")))"}'
	[ "$status" -eq 0 ]
	jqe 0 '.status == "success" and (.stdout | startswith("1000 True True [\u0027bin\u0027"))'
	if delegated; then
		jqe 0 '.limits_enforced | index("memory") and index("pids") and (index("cpus") | not) and (index("memory_rlimit") | not)'
		# said once, on stderr, as well as in the result
		[[ "$stderr" == *"offers no cpu controller: no CPU quota"* ]]
	else
		jqe 0 '.limits_enforced | index("memory_rlimit") and (index("memory") | not)'
		[[ "$stderr" == *"cgroups unusable"* ]]
	fi
}

# bats test_tags=kernel
@test "as an ordinary user: timeouts, memory ceilings and compiled languages work" {
	user_run -j 3 < <(printf '%s\n' \
		'{"id":"t","language":"bash","code":"trap \"\" TERM; sleep 30","timeout":1}' \
		'{"id":"m","language":"python","code":"x = bytearray(1 << 30)","memory":"64m","timeout":60}' \
		'{"id":"c","language":"cpp","code":"#include <cstdio>\nint main(){ std::puts(\"hi\"); }"}')
	for i in 0 1 2; do
		case $(jqn "$i" .id) in
		t) jqe "$i" '.status == "timeout"' ;;
		m) if delegated; then jqe "$i" '.status == "memory_limit"'
		   else jqe "$i" '.status == "error" and (.stderr | test("MemoryError"))'; fi ;;
		c) jqe "$i" '.status == "success" and .stdout == "hi\n"' ;;
		esac
	done
	! our_pgrep 65534 '^sleep' || false
}

# bats test_tags=kernel
@test "in a delegated group that also holds the caller: its processes move to a leaf, runs get groups of their own, none is left" {
	skip_unless_delegated
	# The suite's own shells share the group (as in a user's scope): cgroup
	# v2 allows no controllers for the children of a group with processes,
	# so sbx moves them into sbx-leaf, and an sbx started there uses the
	# leaf's parent again.
	echo '{"language":"bash","code":"cat /proc/self/cgroup; sleep 1"}' | "$BIN/sbx-validate" > job
	"$BIN/sbx-run" < job > out 2> err
	jq -e '.status == "success" and .stdout == "0::/\n"' out
	[ "$(cat /proc/self/cgroup)" = "0::${SBX_TEST_DELEGATED#/sys/fs/cgroup}/sbx-leaf" ]
	[ "$(cat "$SBX_TEST_DELEGATED/cgroup.subtree_control")" = "memory pids" ]
	[ ! -s "$SBX_TEST_DELEGATED/cgroup.procs" ]
	"$BIN/sbx-run" < job > out2 2> err2
	jq -e '.status == "success"' out2
	# the leaf, and the runs' parent (this file's, CG_PARENT) with no run's group left in it
	[ -d "$SBX_TEST_DELEGATED/sbx-leaf" ]
	[ -d "$SBX_TEST_DELEGATED/$CG_PARENT" ]
	[ -z "$(find "$SBX_TEST_DELEGATED/sbx-leaf" "$SBX_TEST_DELEGATED/$CG_PARENT" -mindepth 1 -type d)" ]
}

# bats test_tags=kernel
@test "in a delegated group: 1 GiB under memory 64m is memory_limit, the group's memory.max says 64m" {
	skip_unless_delegated
	py 'import time
time.sleep(1)
x = bytearray(1 << 30)' '{memory:"64m",timeout:20}' | "$BIN/sbx-validate" | "$BIN/sbx-run" > out 2> err &
	local max=
	for i in $(seq 100); do
		g=$(find "$SBX_TEST_DELEGATED/$CG_PARENT" -mindepth 1 -maxdepth 1 -name 'r*' -type d | head -1)
		[ -n "$g" ] && max=$(cat "$g/memory.max" 2> /dev/null) && [ "$max" = 67108864 ] && break
		sleep 0.05
	done
	wait
	[ "$max" = 67108864 ] || { echo "memory.max: '$max'"; false; }
	jq -e '.status == "memory_limit" and .memory_peak_bytes <= 67108864' out
}

@test "as an ordinary user: state the user cannot write moves to ~/.local/state/sbx (the account's home without HOME), said in --check" {
	# a configuration whose state directory no ordinary user can write
	# (as with a root-owned checkout or an installed tree)
	user_dir
	U=(env -u SBX_HISTORY -u XDG_STATE_HOME HOME="$h" "${AS[@]}")
	run --separate-stderr "${U[@]}" "$BIN/sbx-run" -c "$U_DIR/ro.conf" --check
	jqe 0 ".state.per_user == true and .state.dir == \"$h/.local/state/sbx\" and .state.history == \"$h/.local/state/sbx/sandbox_history.db\""
	jqe 0 '.state.why | test("/proc/sbx-not-yours is not writable by uid [0-9]+")'
	# the pipeline and the history use it
	run --separate-stderr bash -c "echo '{\"language\":\"bash\",\"code\":\"echo mine\"}' | ${U[*]} '$BIN/sbx-validate' -c '$U_DIR/ro.conf' |
		${U[*]} '$BIN/sbx-run' -c '$U_DIR/ro.conf' | ${U[*]} '$BIN/sbx-log' -c '$U_DIR/ro.conf'"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	jqe 0 '.status == "success" and .history_id == 1'
	[ -s "$h/.local/state/sbx/sandbox_history.db" ]
	[ "$(stat -c %a "$h/.local/state/sbx")" = 700 ]
	run --separate-stderr "${U[@]}" "$BIN/sbx-history" -c "$U_DIR/ro.conf" --jq .status
	[ "$status" -eq 0 ]
	[ "$output" = "\"success\"" ]
	# XDG_STATE_HOME wins over HOME; with neither, --check says what to do
	mkdir -p "$U_DIR/xdg"
	[ "$(id -u)" != 0 ] || chown 65534:65534 "$U_DIR/xdg"
	run --separate-stderr env XDG_STATE_HOME="$U_DIR/xdg" HOME="$h" "${AS[@]}" "$BIN/sbx-run" -c "$U_DIR/ro.conf" --check
	jqe 0 ".state.dir == \"$U_DIR/xdg/sbx\""
	# With neither (an MCP host may start its servers so), the account's
	# home; where it has none (nobody's /nonexistent), --check says what
	# to do.  (A writable home of the user running the suite is left alone.)
	pwhome=$("${AS[@]}" sh -c 'getent passwd "$(id -u)"' | cut -d: -f6)
	if ! "${AS[@]}" test -w "$pwhome"; then
		run --separate-stderr env -u XDG_STATE_HOME -u HOME "${AS[@]}" "$BIN/sbx-run" -c "$U_DIR/ro.conf" --check
		jqe 0 '.state.per_user == false and (.fixes | any(test("set XDG_STATE_HOME or HOME")))'
	fi
	[ "$(id -u)" = 0 ] || return 0
	# as root: nobody's home in the account database is $h, in a mount
	# namespace of the test's own
	awk -F: -v OFS=: -v h="$h" '$1 == "nobody" { $6 = h } 1' /etc/passwd > "$U_DIR/passwd"
	run --separate-stderr unshare -m sh -c 'mount --bind "$0" /etc/passwd && exec "$@"' "$U_DIR/passwd" \
		env -u XDG_STATE_HOME -u HOME "${AS[@]}" "$BIN/sbx-run" -c "$U_DIR/ro.conf" --check
	jqe 0 ".state.per_user == true and .state.dir == \"$h/.local/state/sbx\""
}

@test "as an ordinary user with no state directory at all: sbx-mcp says what to set, at start and when a session cannot be made" {
	user_dir
	pwhome=$("${AS[@]}" sh -c 'getent passwd "$(id -u)"' | cut -d: -f6)
	if "${AS[@]}" test -w "$pwhome"; then skip "this user's account home ($pwhome) is writable"; fi
	run --separate-stderr env -u SBX_HISTORY -u XDG_STATE_HOME -u HOME "${AS[@]}" "$BIN/sbx-mcp" -c "$U_DIR/ro.conf" < <(printf '%s\n' \
		'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}' \
		'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_initialize","arguments":{"language":"python"}}}')
	[[ $stderr == *"/proc/sbx-not-yours is not writable by uid "*"set XDG_STATE_HOME or HOME"* ]]
	jq -e 'select(.id == 1) | .result.isError == true and (.result.content[0].text | test("cannot create /proc/sbx-not-yours/sessions: .*; .*set XDG_STATE_HOME or HOME"))' <<< "$output"
}

# bats test_tags=kernel
@test "as an ordinary user: an MCP session works with the per-user state, its workspace a tmpfs of the server's with its quota; checkpoints are copies" {
	user_dir
	sed -i 's/^workspace_size *=.*/workspace_size = "8m"/' "$U_DIR/ro.conf"
	mkfifo in
	env -u SBX_HISTORY -u XDG_STATE_HOME HOME="$h" "${AS[@]}" "$BIN/sbx-mcp" -c "$U_DIR/ro.conf" < in > out 2> err &
	server=$!
	exec 7> in
	msg() { jq -nc --argjson id "$1" --arg n "$2" --argjson a "$3" '{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: $n, arguments: $a}}' >&7; }
	got() { for _ in $(seq 600); do jq -e --argjson id "$1" 'select(.id == $id)' out > /dev/null 2>&1 && { jq -c --argjson id "$1" 'select(.id == $id)' out; return; }; sleep 0.1; done; cat err >&2; return 1; }
	printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}' '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&7
	# a run first: the server's sbx-run starts before any workspace is mounted
	msg 9 run_code '{"language":"python","code":"print(1)"}'
	got 9 | jq -e '.result.structuredContent.stdout == "1\n"'
	# what this host does not enforce (no CPU quota for this user, as
	# --check says), told in every result and in the tools' descriptions
	got 9 | jq -e '.result.structuredContent.limits_missing | index("cpus")'
	got 9 | jq -e '.result.content[0].text | test("\nnot enforced on this host: ([a-z]+, )*cpus")'
	echo '{"jsonrpc":"2.0","id":8,"method":"tools/list"}' >&7
	got 8 | jq -e '[.result.tools[] | select(.name == "run_code" or .name == "sandbox_exec" or .name == "run_cell") |
		.description | test("This host does not enforce ([a-z]+, )*cpus(, [a-z]+)* [(]each result.s limits_missing; check_backend says how to fix it[)]")] == [true, true, true]'
	msg 1 sandbox_initialize '{"language":"python"}'
	got 1 > a1
	sid=$(jq -r .result.structuredContent.session_id a1)
	[ ${#sid} -eq 32 ] || { cat a1 err >&2; false; }
	jq -e '.result.structuredContent | .workspace_filesystem == "tmpfs" and .workspace_bytes == 8388608
		and (.workspace_note | test("tmpfs .*count against its memory limit"))' a1
	msg 2 write_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: "in/put/data.txt", content: "41"}')"
	got 2 | jq -e '.result.isError == false'
	# The workspace is mounted in the server's own namespaces: the host
	# sees an empty directory, the server (/proc/PID/root) the files, its
	# own as it made them (nothing to chown).
	ws=$h/.local/state/sbx/sessions/$sid
	[ -d "$ws" ]
	[ -z "$(ls -A "$ws")" ]
	in_server=/proc/$server/root$ws
	me=$("${AS[@]}" id -u):$("${AS[@]}" id -g)
	[ "$(stat -c %u:%g "$in_server/in")" = "$me" ]
	[ "$(stat -c %u:%g "$in_server/in/put/data.txt")" = "$me" ]
	msg 3 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, code: "print(int(open(\"in/put/data.txt\").read()) + 1)"}')"
	got 3 | jq -e '.result.structuredContent.status == "success" and .result.structuredContent.stdout == "42\n"'
	# the quota: 16 MB into 8 MiB ends in ENOSPC, and no more is kept
	msg 4 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, command: ["sh", "-c", "head -c 16000000 /dev/zero > big || exit 9"]}')"
	got 4 | jq -e '.result.structuredContent | .exit_code == 9 and (.stderr | test("No space left on device"))'
	[ "$(du -s -B1 "$in_server" | cut -f1)" -le 8388608 ]
	msg 5 get_execution_history '{"limit": 5}'
	got 5 | jq -e '.result.structuredContent.runs | length >= 1'
	# checkpoints are copies in the server's tmpfs: taken, restored, forked
	msg 6 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, command: ["sh", "-c", "rm -f big; echo one > v"]}')"
	got 6 | jq -e '.result.structuredContent.status == "success"'
	msg 10 checkpoint_create "$(jq -nc --arg s "$sid" '{session_id: $s, name: "one"}')"
	got 10 | jq -e '.result.structuredContent | .method == "copy" and .copied_bytes == 6'
	msg 11 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, command: ["sh", "-c", "echo two > v"]}')"
	got 11 > /dev/null
	msg 12 checkpoint_restore "$(jq -nc --arg s "$sid" '{session_id: $s, checkpoint: "one"}')"
	got 12 | jq -e '.result.structuredContent.restored'
	msg 13 checkpoint_fork "$(jq -nc --arg s "$sid" '{session_id: $s, checkpoint: "one"}')"
	fork=$(got 13 | jq -r '.result.structuredContent.session_ids[0]')
	msg 14 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, command: ["cat", "v", "in/put/data.txt"]}')"
	got 14 | jq -e '.result.structuredContent.stdout == "one\n41"'
	msg 15 read_file "$(jq -nc --arg s "$fork" '{session_id: $s, path: "v"}')"
	got 15 | jq -e '.result.structuredContent.content == "one\n"'
	exec 7>&-
	wait "$server"
}
