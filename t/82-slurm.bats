#!/usr/bin/env bats
# A batch on a real Slurm (issue 29): a single-node cluster with munge on
# loopback, started for this file by t/slurm/cluster and stopped after.  A
# task requeued mid-run and a task that fails once must neither lose nor
# duplicate a record, and the tasks' histories merge idempotently.
load helpers

setup_file() {
	if [ "$(id -u)" != 0 ]; then
		echo "Slurm's daemons are started as root" > "$BATS_FILE_TMPDIR/skip"
	elif ! "$ROOT/t/slurm/cluster" start > "$BATS_FILE_TMPDIR/start.log" 2>&1; then
		echo "no Slurm cluster: $(cat "$ROOT/build/slurm/unavailable" 2>/dev/null || tail -1 "$BATS_FILE_TMPDIR/start.log")" > "$BATS_FILE_TMPDIR/skip"
	fi
}

teardown_file() {
	[ -f "$BATS_FILE_TMPDIR/skip" ] || "$ROOT/t/slurm/cluster" stop > /dev/null 2>&1
}

local_setup() {
	[ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	eval "$("$ROOT/t/slurm/cluster" env)"
}

# reqs N: N requests r1..rN printing their number squared (every fourth
# in Python, the rest in bash), each a little slow so tasks run for a while.
reqs() {
	local i
	for ((i = 1; i <= $1; i++)); do
		if ((i % 4 == 0)); then
			printf '{"id":"r%d","language":"python","code":"import time; time.sleep(0.02); print(%d * %d)"}\n' "$i" "$i" "$i"
		else
			printf '{"id":"r%d","language":"bash","code":"sleep 0.03; echo $((%d * %d))"}\n' "$i" "$i" "$i"
		fi
	done
}

# wait_lines FILE N: until FILE has N lines (60 s at most).
wait_lines() {
	for _ in $(seq 600); do
		[ "$(wc -l < "$1" 2> /dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "$1 never reached $2 lines" >&2
	return 1
}

# Nothing of the runs is left once the tasks ended (their sandboxes are
# reaped by the machine's init a moment after a kill).
settled_slurm() {
	for _ in $(seq 50); do assert_no_leftovers 2> /dev/null && return 0; sleep 0.1; done
	assert_no_leftovers
}

@test "Slurm: 400 requests over 4 array tasks, one requeued mid-run and one failing once, merge to exactly 400" {
	reqs 400 > req.jsonl
	SBX_BIN=$BIN SBX_BATCH_HISTORY=1 "$ROOT/share/launch/slurm/sbx-slurm" req.jsonl 4 run \
		--cpus-per-task=1 --output="$PWD/slurm-%A_%a.out" > driver.log 2>&1 &
	driver=$!
	# task 0: requeued while it runs; Slurm kills it and runs it again
	wait_lines run/results/shard-0-of-4.jsonl.partial 15
	task0=$(squeue -h -r -o '%i' | grep '_0$')
	scontrol requeue "$task0"
	# task 1: its sbx-run killed, so the task fails and Slurm does not retry it
	wait_lines run/results/shard-1-of-4.jsonl.partial 15
	batch1=$(pgrep -f 'sbx-batch .*shard-1-of-4.jsonl' | head -1)
	pkill -KILL -P "$batch1" -x sbx-run
	st=0
	timeout 400 tail --pid=$driver -f /dev/null || st=$?
	[ "$st" -eq 0 ] || { kill $driver; cat driver.log >&2; false; }
	wait $driver || { cat driver.log slurm-*.out >&2; false; }

	# exactly one correct result per request, in request order
	[ "$(wc -l < run/merged.jsonl)" -eq 400 ]
	[ "$(jq -r .id run/merged.jsonl)" = "$(jq -r .id req.jsonl)" ]
	jq -e -s 'all(.[]; .status == "success" and (.stdout | rtrimstr("\n")) == ((.id[1:] | tonumber) as $n | $n * $n | tostring))' run/merged.jsonl
	grep -q 'sbx-merge: 400 requests: 400 merged, 0 missing; 0 duplicates' driver.log
	# the failed task was the only one submitted again; the requeued one resumed
	grep -q 'round 2: sbatch --array=1$' driver.log
	! grep -q 'round 3' driver.log || false
	jq -e -s 'any(.[]; .shard.attempt == 1) and any(.[]; .shard.attempt == 2)' run/results/shard-0-of-4.jsonl
	jq -e -s 'any(.[]; .shard.attempt == 1) and any(.[]; .shard.attempt == 2)' run/results/shard-1-of-4.jsonl
	for i in 0 1 2 3; do
		[ "$(wc -l < "run/results/shard-$i-of-4.jsonl")" -eq "$(wc -l < "run/shards/shard-$i-of-4.jsonl")" ]
	done
	[ -z "$(ls run/results | grep -v '^shard-[0-3]-of-4.jsonl$')" ]

	# the tasks' histories, merged twice: the same rows
	run --separate-stderr "$BIN/sbx-history" -d all.db --merge run/history/*.db
	[ "$status" -eq 0 ]
	rows=$("$BIN/sbx-history" -d all.db --limit 100000 | wc -l)
	[ "$rows" -ge 400 ]
	run --separate-stderr "$BIN/sbx-history" -d all.db --merge run/history/*.db
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -s 'map(.added) | add')" -eq 0 ]
	[ "$("$BIN/sbx-history" -d all.db --limit 100000 | wc -l)" -eq "$rows" ]
	# every request has a successful row; the reruns are the other rows
	[ "$("$BIN/sbx-history" -d all.db --limit 100000 | jq -r 'select(.status == "success") | .id' | sort -u | wc -l)" -eq 400 ]
	"$BIN/sbx-history" -d all.db --limit 100000 | jq -e -s 'any(.[]; .attempt == 2 and .shard == 1)'
	run --separate-stderr "$BIN/sbx-history" -d all.db --stats
	[ "$status" -eq 0 ]
	[ -z "$(squeue -h)" ]
	settled_slurm
}

@test "Slurm: one request end to end; a hand-edited shard fails its task (exit 3) naming the line" {
	printf '%s\n' '{"id":"a","language":"bash","code":"echo 1"}' > req.jsonl
	SBX_BIN=$BIN "$ROOT/share/launch/slurm/sbx-slurm" req.jsonl 1 run --output="$PWD/slurm-%A_%a.out" > driver.log 2>&1
	[ "$(jq -r .stdout run/merged.jsonl)" = 1 ]
	# a hand-edited shard: the id twice
	mkdir -p bad/shards
	printf '%s\n' '{"id":"a","language":"bash","code":"echo 1"}' '{"id":"a","language":"bash","code":"echo 2"}' > bad/shards/shard-0-of-1.jsonl
	run --separate-stderr env SBX_BIN="$BIN" sbatch --wait --parsable --array=0 --output="$PWD/bad-%a.out" \
		"$ROOT/share/launch/slurm/sbx-array.sbatch" "$PWD/bad"
	[ "$status" -ne 0 ]
	grep -q 'shard-0-of-1.jsonl:2: its id is the id of an earlier line' bad-0.out
	# Slurm saw the task's own verdict: exit 3, not retried
	scontrol show job -o "${output%%;*}" | grep -q 'ExitCode=3:0'
	! scontrol show job -o "${output%%;*}" | grep -q 'Restarts=[1-9]' || false
	[ ! -e bad/results/shard-0-of-1.jsonl ]
}
