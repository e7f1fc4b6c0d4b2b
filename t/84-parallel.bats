#!/usr/bin/env bats
# A batch with GNU parallel over ssh (issue 29): sbx-parallel against a real
# sshd on localhost (t/ssh/server, started for this file, stopped after).
# A block whose remote task fails is retried; one that fails on every retry
# is missing from the merge, and the same command run again completes the
# batch without duplicating a record.
load helpers

setup_file() {
	if [ "$(id -u)" != 0 ]; then
		echo "the test sshd logs in as root" > "$BATS_FILE_TMPDIR/skip"
	elif ! "$ROOT/t/ssh/server" start > "$BATS_FILE_TMPDIR/start.log" 2>&1; then
		echo "no sshd: $(cat "$ROOT/build/ssh/unavailable" 2>/dev/null || tail -1 "$BATS_FILE_TMPDIR/start.log")" > "$BATS_FILE_TMPDIR/skip"
	fi
}

teardown_file() {
	[ -f "$BATS_FILE_TMPDIR/skip" ] || "$ROOT/t/ssh/server" stop > /dev/null 2>&1
}

local_setup() {
	[ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	eval "$("$ROOT/t/ssh/server" env)"
}

reqs() {
	local i
	for ((i = 1; i <= $1; i++)); do
		printf '{"id":"r%d","language":"bash","code":"echo $((%d * %d))"}\n' "$i" "$i" "$i"
	done
}

# The blocks' result files (DIR/out/N; N.err and N.seq beside them).
blocks() { find run/out -regex '.*/[0-9]+' -exec cat {} +; }

assert_exact() {
	[ "$(jq -r .id "$2")" = "$(jq -r .id "$1")" ] || { echo "ids differ" >&2; return 1; }
	jq -e -s 'all(.[]; .status == "success" and (.stdout | rtrimstr("\n")) == ((.id[1:] | tonumber) as $n | $n * $n | tostring))' "$2" > /dev/null
}

# A remote bin directory whose sbx-batch fails FAILS times (a machine that
# dies mid-block: it reads its block, writes part of a line, exits 255 as
# ssh does when the connection drops) for the block holding r57, then is
# the real one.
flaky_bin() {
	mkdir -p remote
	echo "$1" > remote/fails-left
	# the remote machine's own configuration (ssh passes no environment)
	cat > remote/sbx-batch <<-EOF
		#!/bin/bash
		export SBX_CONF="$SBX_CONF"
		block=\$(cat)
		left=\$(cat "$PWD/remote/fails-left")
		if [[ \$block == *'"r57"'* ]] && [ "\$left" -gt 0 ]; then
			echo \$((left - 1)) > "$PWD/remote/fails-left"
			printf '{"id":"r57","stat'
			exit 255
		fi
		printf '%s\n' "\$block" | exec "$BIN/sbx-batch" "\$@"
	EOF
	chmod +x remote/sbx-batch
}

@test "parallel over ssh: a block whose task fails once is retried; exactly one result per request" {
	reqs 200 > req.jsonl
	flaky_bin 1
	run --separate-stderr env HOME="$PWD" SBX_BIN="$BIN" SBX_REMOTE_BIN="$PWD/remote" \
		"$ROOT/share/launch/parallel/sbx-parallel" -N 25 -r 3 req.jsonl run --ssh "$SBX_SSH" -S "2/$SBX_SSH_HOST"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; false; }
	[ "$(cat remote/fails-left)" = 0 ]
	assert_exact req.jsonl run/merged.jsonl
	# the failed attempt's torn line is in no block's file
	[ "$(blocks | wc -l)" -eq 200 ]
	[[ $stderr == *"200 requests: 200 merged, 0 missing; 0 duplicates"* ]]
	# and they came over ssh: every result ran on this host, in a remote shell
	[ "$(awk -F'\t' 'NR > 1 { print $2 }' run/joblog | sort -u)" = "$SBX_SSH_HOST" ]
}

@test "parallel over ssh: a block that fails every retry is named missing; run again, the batch completes with no duplicate" {
	reqs 100 > req.jsonl
	flaky_bin 2
	run --separate-stderr env HOME="$PWD" SBX_BIN="$BIN" SBX_REMOTE_BIN="$PWD/remote" \
		"$ROOT/share/launch/parallel/sbx-parallel" -N 25 -r 1 req.jsonl run --ssh "$SBX_SSH" -S "2/$SBX_SSH_HOST"
	[ "$status" -eq 1 ]
	[[ $stderr == *"100 requests: 75 merged, 25 missing"* ]]
	[[ $stderr == *'request "r57"'*"no result"* ]]
	# the block torn mid-line tore only its own file
	[[ $stderr == *"torn line"* ]]
	[ "$(find run/out -regex '.*/[0-9]+' -exec jq -R 'fromjson? | select(.status) | .id' {} \; | wc -l)" -eq 75 ]
	# run again: only the failed block is sent (it fails once more, then
	# the real sbx-batch runs it)
	run --separate-stderr env HOME="$PWD" SBX_BIN="$BIN" SBX_REMOTE_BIN="$PWD/remote" \
		"$ROOT/share/launch/parallel/sbx-parallel" -N 25 -r 2 req.jsonl run --ssh "$SBX_SSH" -S "2/$SBX_SSH_HOST"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; false; }
	[ "$(blocks | wc -l)" -eq 100 ]
	assert_exact req.jsonl run/merged.jsonl
	[[ $stderr == *"100 requests: 100 merged, 0 missing; 0 duplicates"* ]]
}
