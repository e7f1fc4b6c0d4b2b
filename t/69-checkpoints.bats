#!/usr/bin/env bats
# Checkpoints of a session's files in raw JSON-RPC (the SDK's view is
# t/65's): copies where the workspace is not btrfs, and what sandboxed code
# planted in it (links, FIFOs, setuid bits) copied, never followed; room
# shared and a full one refused with nothing changed; subvolumes a program
# would make refused; a restore refused under a running call, and the
# session's processes stopped by it; trees of a server that died removed by
# the next; names checked.  Everything is checked from the host's side.
load helpers

teardown() {
	# a failed test's server: its sessions end with it
	if [ -n "${server:-}" ]; then
		exec 7>&- 2> /dev/null || true
		wait "$server" 2> /dev/null || true
	fi
	assert_no_leftovers
}

local_setup() {
	sessions=$BATS_TEST_TMPDIR/var/sessions
}

answer() { jq -c --argjson id "$1" 'select(.id == $id)' out; }
wait_for() {
	for _ in $(seq $((${2:-20} * 10))); do [ -n "$(answer "$1")" ] && return 0; sleep 0.1; done
	echo "no answer $1" >&2
	return 1
}
call() {
	jq -nc --argjson id "$1" --arg name "$2" --argjson args "$3" \
		'{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: $name, arguments: $args}}'
}
# server: sbx-mcp on $conf fed through fd 7, a python session made: $sid.
# step TOOL ARGS-JQ: the next call in it, waited for; its result in $res
# (structuredContent, or {error: TEXT}).
server() {
	mkfifo in
	"$BIN/sbx-mcp" -c "$conf" < in > out 2> err &
	server=$!
	exec 7> in
	printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}' \
		'{"jsonrpc":"2.0","method":"notifications/initialized"}' >&7
	call 1 sandbox_initialize '{"language":"python"}' >&7
	wait_for 1
	sid=$(answer 1 | jq -r .result.structuredContent.session_id)
	n=1
}
step() {
	n=$((n + 1))
	call $n "$1" "$(jq -nc --arg s "$sid" "{session_id: \$s} + $2")" >&7
	wait_for $n "${3:-20}"
	res=$(answer $n | jq -c 'if .result.isError then {error: .result.content[0].text} else .result.structuredContent end')
}
stop_server() {
	exec 7>&-
	wait "$server"
}
tree_dir() { find "$sessions/.trees" -mindepth 1 -maxdepth 1 -type d; }

@test "where the workspace is not btrfs, a checkpoint is a copy: links, FIFOs and modes copied, never followed or run; restore brings it back" {
	skip_unless_root
	# below btrfs's least size: ext4, copied
	conf=$(conf_with 's/^workspace_size *=.*/workspace_size = "8m"/')
	server
	step sandbox_exec '{command: ["sh", "-c", "echo data > f && ln f hard && ln -s /etc/shadow secret && mkfifo pipe && cp /bin/true su && chmod 4755 su && mkdir -p a/b && echo deep > a/b/c"]}'
	[ "$(jq -r .status <<< "$res")" = success ]
	step checkpoint_create '{name: "planted"}'
	jq -e '.method == "copy" and .copied_bytes > 0' <<< "$res"
	ck=$(jq -r .checkpoint_id <<< "$res")
	c=$(tree_dir)/c/$ck
	# from the host: the link is a link to what it named, not the host file's bytes
	[ "$(readlink "$c/secret")" = /etc/shadow ]
	[ -p "$c/pipe" ]
	[ "$(stat -c %a "$c/su")" = 755 ]
	[ "$(cat "$c/a/b/c")" = deep ]
	[ "$(stat -c %U "$c/f")" = "$(stat -c %U "$sessions/$sid/f")" ]
	step sandbox_exec '{command: ["sh", "-c", "rm -r a secret pipe && echo changed > f"]}'
	step checkpoint_restore '{checkpoint: "planted"}'
	jq -e '.restored and .method == "copy"' <<< "$res"
	step sandbox_exec '{command: ["sh", "-c", "cat f a/b/c; readlink secret; test -p pipe && echo fifo"]}'
	[ "$(jq -r .stdout <<< "$res")" = "data
deep
/etc/shadow
fifo" ]
	stop_server
	grep -q ext4 /proc/filesystems || true
}

@test "a session, its forks and their checkpoints share workspace_size: a copy that does not fit is refused and changes nothing" {
	skip_unless_root
	conf=$(conf_with 's/^workspace_size *=.*/workspace_size = "8m"/')
	server
	step sandbox_exec '{command: ["sh", "-c", "head -c 5000000 /dev/urandom > big"]}'
	[ "$(jq -r .status <<< "$res")" = success ]
	step checkpoint_create '{}'
	jq -e '.error | test("No space left on device.*share workspace_size")' <<< "$res"
	[ -z "$(ls "$(tree_dir)/c")" ]
	step checkpoint_list '{}'
	jq -e '.checkpoints == []' <<< "$res"
	step sandbox_exec '{command: ["sh", "-c", "rm big; echo small > s"]}'
	step checkpoint_create '{}'
	jq -e '.method == "copy"' <<< "$res"
	stop_server
}

# bats test_tags=kernel
@test "btrfs: checkpoint, restore and fork are snapshots; a program can make no subvolume in its workspace, reflinks still work" {
	skip_unless_root
	command -v mkfs.btrfs > /dev/null || skip "no mkfs.btrfs (btrfs-progs): workspaces are ext4, checkpoints copies"
	[ -w /dev/loop-control ] || skip "no loop devices here"
	conf=$(conf_with 's/^$//')
	server
	answer 1 | jq -e '.result.structuredContent.workspace_filesystem == "btrfs"'
	step sandbox_exec '{code: "import fcntl, os\nBTRFS_IOC_SUBVOL_CREATE = 0x5000940e\nfor req in (BTRFS_IOC_SUBVOL_CREATE,):\n    fd = os.open(\".\", os.O_RDONLY)\n    try:\n        fcntl.ioctl(fd, req, bytearray(8) + b\"sub\" + bytearray(4085))\n        print(\"made\", flush=True)\n    except OSError as e:\n        print(e.errno, flush=True)\nopen(\"a\", \"w\").write(\"x\" * 100000)\nos.system(\"cp --reflink=always a b && echo cloned\")"}'
	[ "$(jq -r .stdout <<< "$res")" = "1
cloned" ] || { echo "$res" >&2; false; }
	# from the host: the tree holds the workspace and no other subvolume
	t=$(tree_dir)
	[ ! -e "$t/w/$sid/sub" ]
	[ "$(btrfs subvolume list "$t" | wc -l)" = 1 ]
	# the control: the program's uid, outside the sandbox's filter, can
	# (the workspace handed to it open: the test's directories are root's)
	setpriv --reuid="$(stat -c %u "$sessions/$sid")" --regid="$(stat -c %g "$sessions/$sid")" --clear-groups \
		/usr/bin/python3 -c 'import fcntl
fcntl.ioctl(9, 0x5000940e, bytearray(8) + b"sub" + bytearray(4085))' 9< "$sessions/$sid"
	[ "$(btrfs subvolume list "$t" | wc -l)" = 2 ]
	btrfs -q subvolume delete "$sessions/$sid/sub"
	step checkpoint_create '{}'
	jq -e '.method == "snapshot"' <<< "$res"
	ck=$(jq -r .checkpoint_id <<< "$res")
	[ "$(btrfs property get "$t/c/$ck" ro)" = ro=true ]
	step checkpoint_fork "{checkpoint: \"$ck\", count: 3}"
	jq -e '.session_ids | length == 3' <<< "$res"
	[ "$(btrfs subvolume list "$t" | wc -l)" = 5 ]
	step checkpoint_restore "{checkpoint: \"$ck\"}"
	jq -e '.restored and .method == "snapshot"' <<< "$res"
	stop_server
}

@test "a restore waits for no call: refused while one runs in the session; the session's processes stopped by it, seen from the host" {
	skip_unless_root
	conf=$(conf_with 's/^$//')
	server
	step checkpoint_create '{name: "empty"}'
	step process_start '{command: ["sleep", "6061"]}'
	jq -e '.state == "running"' <<< "$res"
	for _ in $(seq 100); do pgrep -x -f "sleep 6061" > /dev/null && break; sleep 0.1; done
	pgrep -x -f "sleep 6061" > /dev/null
	# a call that runs, and a restore while it does
	call 90 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, command: ["sleep", "3"]}')" >&7
	for _ in $(seq 100); do pgrep -x -f "sleep 3" > /dev/null && break; sleep 0.1; done
	step checkpoint_restore '{checkpoint: "empty"}'
	jq -e '.error | test("a call is running in this session")' <<< "$res"
	wait_for 90
	step checkpoint_restore '{checkpoint: "empty"}'
	jq -e '.restored and .processes_stopped == 1' <<< "$res"
	for _ in $(seq 100); do pgrep -x -f "sleep 6061" > /dev/null || break; sleep 0.1; done
	! pgrep -x -f "sleep 6061" || false
	step process_list '{}'
	jq -e '.processes[0].state == "exited"' <<< "$res"
	stop_server
}

@test "names: printable, at most 64, unique in the tree; a checkpoint is found by its id or its name" {
	skip_unless_root
	conf=$(conf_with 's/^$//')
	server
	step checkpoint_create '{name: "a\u0007b"}'
	jq -e '.error | test("printable")' <<< "$res"
	step checkpoint_create '{name: "x\u202ey"}'
	jq -e '.error | test("printable")' <<< "$res"
	step checkpoint_create "{name: \"$(printf 'n%.0s' $(seq 65))\"}"
	jq -e '.error | test("1 to 64")' <<< "$res"
	step checkpoint_create '{name: "été"}'
	id=$(jq -r .checkpoint_id <<< "$res")
	step checkpoint_create '{name: "été"}'
	jq -e '.error | test("already")' <<< "$res"
	step checkpoint_create "{name: \"$id\"}"
	jq -e '.error | test("already")' <<< "$res"
	step checkpoint_restore '{checkpoint: "été"}'
	jq -e --arg id "$id" '.checkpoint_id == $id' <<< "$res"
	step checkpoint_restore '{checkpoint: "nope"}'
	jq -e '.error | test("no checkpoint \"nope\"")' <<< "$res"
	stop_server
}

@test "a server that dies leaves its trees; the next one removes them: no mount, loop device or directory left" {
	skip_unless_root
	conf=$(conf_with 's/^$//')
	server
	step checkpoint_create '{}'
	step checkpoint_fork "{checkpoint: $(jq .checkpoint_id <<< "$res")}"
	[ -n "$(tree_dir)" ]
	kill -9 "$server"
	wait "$server" || true
	exec 7>&-
	# a new server, at its start
	printf '' | "$BIN/sbx-mcp" -c "$conf" > /dev/null 2> err2
	grep -q "removing the session tree no server holds" err2
	[ -z "$(tree_dir)" ]
	[ -z "$(find "$sessions" -mindepth 1 -maxdepth 1 -name '[0-9a-f]*')" ]
	! grep -qF " $sessions/" /proc/self/mountinfo || false
	[ -z "$(losetup -l -n -O BACK-FILE | grep -F "$sessions")" ]
}

@test "the history: each checkpoint, restore, fork and delete is logged; a run's row names the checkpoint its session came from (t/64: the dashboard's)" {
	skip_unless_root
	conf=$(conf_with 's/^$//')
	server
	step checkpoint_create '{name: "h"}'
	ck=$(jq -r .checkpoint_id <<< "$res")
	step checkpoint_fork '{checkpoint: "h"}'
	fork=$(jq -r '.session_ids[0]' <<< "$res")
	step checkpoint_restore '{checkpoint: "h"}'
	step sandbox_exec '{code: "print(1)"}'
	step checkpoint_delete '{checkpoint: "h"}'
	stop_server
	# the events are logged beside the answers, by sbx-log: awaited
	for _ in $(seq 100); do
		[ "$("$BIN/sbx-history" -c "$conf" --events -n 0 | wc -l)" -ge 4 ] && break
		sleep 0.1
	done
	got=$("$BIN/sbx-history" -c "$conf" --events -n 0 --jq '[.kind, .session_id, .checkpoint_id, .from_session // "-"] | join(" ")' | jq -r . | sort)
	[ "$got" = "$(printf '%s\n' "checkpoint $sid $ck -" "delete $sid $ck -" "fork $fork $ck $sid" "restore $sid $ck -" | sort)" ] || { echo "$got" >&2; false; }
	run --separate-stderr "$BIN/sbx-history" -c "$conf" --session "$sid" --jq .checkpoint
	[ "${lines[0]}" = "\"$ck\"" ]
	run --separate-stderr "$BIN/sbx-history" -c "$conf" --events --session "$fork" --jq .method
	[ "${lines[0]}" = '"snapshot"' ] || [ "${lines[0]}" = '"copy"' ]
}
