#!/usr/bin/env bats
# A batch past one machine (issue 29), on this one: sbx-shard's split,
# sbx-batch's retry-safe run of a shard (killed, resumed, rerun), sbx-merge's
# exact merge and the faults it names, and the Kubernetes manifest.  The
# engines themselves (Slurm, parallel over ssh) are t/82 and t/84.
load helpers

# reqs N: N bash requests r1..rN, each printing its number squared.
reqs() {
	local i
	for ((i = 1; i <= $1; i++)); do
		printf '{"id":"r%d","language":"bash","code":"%secho $((%d * %d))"}\n' "$i" "${2:-}" "$i" "$i"
	done
}

# No process or cgroup of a run is left, once the init of the machine has
# reaped the sandboxes of a killed sbx-run (zombies for a moment).
settled() {
	for _ in $(seq 50); do assert_no_leftovers 2> /dev/null && return 0; sleep 0.1; done
	assert_no_leftovers
}

# Every request of FILE answered exactly once in RESULTS, correctly.
assert_exact() {
	local want got
	want=$(jq -r .id "$1" | sort)
	got=$(jq -r .id "$2" | sort)
	[ "$want" = "$got" ] || { echo "ids differ" >&2; diff <(echo "$want") <(echo "$got") | head >&2; return 1; }
	jq -e -s 'all(.[]; .status == "success" and (.stdout | rtrimstr("\n")) == ((.id[1:] | tonumber) as $n | $n * $n | tostring))' "$2" > /dev/null ||
		{ echo "a wrong result in $2" >&2; return 1; }
}

# bats test_tags=valgrind
@test "sbx-shard: by a hash of the id, every request once, byte for byte the same on a second run" {
	reqs 1000 > req.jsonl
	printf '%s\n' '{"language":"bash","code":"echo same"}' '{"language":"bash","code":"echo same"}' >> req.jsonl
	run --separate-stderr "$BIN/sbx-shard" -k 4 -o a req.jsonl
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]
	jqe 0 '.shard == 0 and .of == 4 and .path == "a/shard-0-of-4.jsonl"'
	[ "$(printf '%s\n' "${lines[@]}" | jq -s 'map(.requests) | add')" -eq 1002 ]
	# no straggler shard: each holds a quarter, give or take
	for f in a/shard-*-of-4.jsonl; do n=$(wc -l < "$f"); [ "$n" -gt 200 ] && [ "$n" -lt 300 ]; done
	# lines with an id are copied as they were
	[ "$(cat a/*.jsonl | grep -c '^{"id":"r')" -eq 1000 ]
	grep -qxF "$(sed -n 7p req.jsonl)" a/shard-*-of-4.jsonl
	# the two without one get ids of their own, the same every time
	cat a/*.jsonl | jq -r 'select(.code == "echo same") | .id' | sort > ids
	[ "$(sed -n 1p ids)" != "$(sed -n 2p ids)" ]
	grep -Eq '^sbx-[0-9a-f]{16}$' ids
	grep -Eq '^sbx-[0-9a-f]{16}-2$' ids
	"$BIN/sbx-shard" -k 4 -o b < req.jsonl > /dev/null
	diff -r a b
	# the hidden temporaries are gone
	[ -z "$(find a -name '.*' -type f)" ]
}

@test "sbx-shard: a line that is not a request, or an id used twice, is named and nothing is written" {
	printf '%s\n' '{"id":"a","language":"bash","code":"true"}' '[1]' '{"id":"a","language":"bash","code":"x"}' \
		'{"id":{"x":1}}' 'not json' '{"id":"b","language":"bash","code":"true"}' > req.jsonl
	run --separate-stderr "$BIN/sbx-shard" -k 3 -o out req.jsonl
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[[ $stderr == *"line 2: expected a JSON object, got array"* ]]
	[[ $stderr == *'line 3: id "a" is already the id of line 1'* ]]
	[[ $stderr == *'line 4: "id" is neither a string nor a number'* ]]
	[[ $stderr == *"line 5: not valid JSON"* ]]
	[ -z "$(ls -A out)" ]
}

@test "sbx-shard: usage errors and --help" {
	run --separate-stderr "$BIN/sbx-shard" -k 0 -o x
	[ "$status" -eq 2 ]
	[[ $stderr == *"-k: \"0\" is not a number of shards"* ]]
	run --separate-stderr "$BIN/sbx-shard" -k 2
	[ "$status" -eq 2 ]
	[[ $stderr == *"-o is required"* ]]
	run --separate-stderr "$BIN/sbx-shard" -k 10001 -o x
	[ "$status" -eq 2 ]
	run --separate-stderr "$BIN/sbx-shard" --help
	[ "$status" -eq 0 ]
	[[ $output == *"usage: sbx-shard"* ]]
}

# bats test_tags=valgrind
@test "sbx-batch: a shard's results appear whole; run again, it is complete and runs nothing" {
	reqs 20 > req.jsonl
	printf '%s\n' '{"id":"bad","language":"cobol","code":"x"}' >> req.jsonl
	"$BIN/sbx-shard" -k 2 -o s req.jsonl > /dev/null
	run --separate-stderr "$BIN/sbx-batch" --history h.db s/shard-1-of-2.jsonl out.jsonl
	[ "$status" -eq 0 ]
	# its progress, for the task's log (stderr is no terminal here): the total known
	n=$(wc -l < s/shard-1-of-2.jsonl)
	printf '%s\n' "${stderr_lines[@]}" | grep -qx "sbx-run: $n/$n (100%) done in .*"
	[ ! -e out.jsonl.partial ]
	[ ! -e out.jsonl.attempts ]
	[ ! -e out.jsonl.pending ]
	[ "$(wc -l < out.jsonl)" -eq "$(wc -l < s/shard-1-of-2.jsonl)" ]
	# in the shard's order, each saying where it ran
	[ "$(jq -r .id out.jsonl)" = "$(jq -r .id s/shard-1-of-2.jsonl)" ]
	jq -e -s --arg h "$(hostname)" 'all(.[]; .shard == {"index":1,"of":2,"attempt":1,"host":$h})' out.jsonl
	rows=$("$BIN/sbx-history" -d h.db --limit 1000 | wc -l)
	[ "$rows" -eq "$(wc -l < out.jsonl)" ]
	sum=$(sha256sum < out.jsonl)
	run --separate-stderr "$BIN/sbx-batch" --history h.db s/shard-1-of-2.jsonl out.jsonl
	[ "$status" -eq 0 ]
	[[ $stderr == *"complete already"* ]]
	[ "$(sha256sum < out.jsonl)" = "$sum" ]
	[ "$("$BIN/sbx-history" -d h.db --limit 1000 | wc -l)" -eq "$rows" ]
	# bad input is a result, not a failure: shard 0 or 1 holds "bad"
	"$BIN/sbx-batch" s/shard-0-of-2.jsonl out0.jsonl
	cat out0.jsonl out.jsonl | jq -e -s 'map(select(.id == "bad"))[0].status == "invalid"'
}

@test "sbx-batch: killed mid-run it keeps what finished; the next attempt runs only the rest" {
	reqs 40 'sleep 0.1; ' > req.jsonl
	"$BIN/sbx-batch" -j 2 --shard 0/1 req.jsonl out.jsonl 2> err &
	pid=$!
	for _ in $(seq 100); do [ "$(wc -l < out.jsonl.partial 2>/dev/null || echo 0)" -ge 8 ] && break; sleep 0.1; done
	kill -TERM $pid
	st=0
	wait $pid || st=$?
	[ "$st" -eq 1 ]
	grep -q 'attempt 1 interrupted' err
	[ ! -e out.jsonl ]
	kept=$(jq -s 'map(select(.status == "success")) | length' out.jsonl.partial)
	[ "$kept" -ge 8 ]
	[ "$kept" -lt 40 ]
	settled
	# a crash can tear the last line: the next attempt drops it
	printf '{"id":"r40","status":"succ' >> out.jsonl.partial
	run --separate-stderr "$BIN/sbx-batch" -j 2 --shard 0/1 req.jsonl out.jsonl
	[ "$status" -eq 0 ]
	assert_exact req.jsonl out.jsonl
	[ "$(jq -s 'map(select(.shard.attempt == 1)) | length' out.jsonl)" -eq "$kept" ]
	[ "$(jq -s 'map(select(.shard.attempt == 2)) | length' out.jsonl)" -eq $((40 - kept)) ]
	[[ $stderr == *"$kept from earlier attempts, $((40 - kept)) run in attempt 2"* ]]
}

@test "sbx-batch: a stage that dies fails the attempt (exit 1) and the retry completes it" {
	reqs 30 'sleep 0.1; ' > req.jsonl
	"$BIN/sbx-batch" req.jsonl out.jsonl 2> err &
	pid=$!
	for _ in $(seq 100); do [ "$(wc -l < out.jsonl.partial 2>/dev/null || echo 0)" -ge 5 ] && break; sleep 0.1; done
	pkill -KILL -P $pid -x sbx-run
	st=0
	wait $pid || st=$?
	[ "$st" -eq 1 ]
	grep -q 'sbx-run was killed by signal 9' err
	[ ! -e out.jsonl ]
	run --separate-stderr "$BIN/sbx-batch" req.jsonl out.jsonl
	[ "$status" -eq 0 ]
	assert_exact req.jsonl out.jsonl
	settled
}

@test "sbx-batch: a second attempt while one runs fails at once and touches nothing" {
	reqs 20 'sleep 0.2; ' > req.jsonl
	"$BIN/sbx-batch" -j 1 req.jsonl out.jsonl 2> /dev/null &
	pid=$!
	for _ in $(seq 300); do [ -s out.jsonl.partial ] && break; sleep 0.1; done
	[ -s out.jsonl.partial ]
	run --separate-stderr "$BIN/sbx-batch" req.jsonl out.jsonl
	[ "$status" -eq 1 ]
	[[ $stderr == *"another attempt at this shard is running"* ]]
	wait $pid
	assert_exact req.jsonl out.jsonl
	[ "$(jq -s 'map(select(.shard.attempt == 1)) | length' out.jsonl)" -eq 20 ]
	[ ! -e out.jsonl.lock ]
}

@test "sbx-batch: a shard it cannot run as it is exits 3, and an OUT of other requests is kept" {
	printf '%s\n' '{"id":"a","language":"bash","code":"true"}' '{"id":"a","language":"bash","code":"false"}' > dup.jsonl
	run --separate-stderr "$BIN/sbx-batch" dup.jsonl out.jsonl
	[ "$status" -eq 3 ]
	[[ $stderr == *"dup.jsonl:2: its id is the id of an earlier line"* ]]
	[ ! -e out.jsonl ]
	printf '%s\n' '{"id":"a","language":"bash","code":"true"}' 'nope' > bad.jsonl
	run --separate-stderr "$BIN/sbx-batch" bad.jsonl out.jsonl
	[ "$status" -eq 3 ]
	reqs 3 > req.jsonl
	echo '{"id":"zz","status":"success"}' > other.jsonl
	run --separate-stderr "$BIN/sbx-batch" req.jsonl other.jsonl
	[ "$status" -eq 3 ]
	[[ $stderr == *"other.jsonl exists and is not the results of req.jsonl"* ]]
	[ "$(cat other.jsonl)" = '{"id":"zz","status":"success"}' ]
	run --separate-stderr "$BIN/sbx-batch" --shard 3/3 req.jsonl o.jsonl
	[ "$status" -eq 2 ]
	run --separate-stderr "$BIN/sbx-batch" req.jsonl
	[ "$status" -eq 2 ]
}

@test "sbx-batch - -: results on stdout only once all are in" {
	reqs 12 > req.jsonl
	run --separate-stderr "$BIN/sbx-batch" - - < req.jsonl
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" > out.jsonl
	assert_exact req.jsonl out.jsonl
	# killed: nothing at all on stdout, and nothing left in TMPDIR
	export TMPDIR=$BATS_TEST_TMPDIR/tmp
	mkdir "$TMPDIR"
	reqs 60 'sleep 0.2; ' > slow.jsonl
	"$BIN/sbx-batch" - - < slow.jsonl > piped 2> /dev/null &
	pid=$!
	for _ in $(seq 100); do [ "$(cat "$TMPDIR"/sbx-batch.*/out.jsonl.partial 2>/dev/null | wc -l)" -ge 3 ] && break; sleep 0.1; done
	kill -TERM $pid
	st=0
	wait $pid || st=$?
	[ "$st" -eq 1 ]
	[ ! -s piped ]
	[ -z "$(ls -A "$TMPDIR")" ]
}

# bats test_tags=valgrind
@test "sbx-merge: one result per request in order; the newest attempt wins; missing shards listed" {
	reqs 30 > req.jsonl
	"$BIN/sbx-shard" -k 3 -o s req.jsonl > /dev/null
	for i in 0 1; do "$BIN/sbx-batch" "s/shard-$i-of-3.jsonl" "r$i.jsonl" 2> /dev/null; done
	# a retry's copy of r0.jsonl's results, newer, with other output
	jq -c '.shard.attempt = 2 | .stdout = "newer\n"' r0.jsonl > retry.jsonl
	run --separate-stderr "$BIN/sbx-merge" -k 3 req.jsonl r0.jsonl retry.jsonl r1.jsonl
	[ "$status" -eq 1 ]
	n2=$(wc -l < s/shard-2-of-3.jsonl)
	[ "${#lines[@]}" -eq $((30 - n2)) ]
	printf '%s\n' "${lines[@]}" > merged.jsonl
	# request order, the newer attempt's results, byte for byte
	[ "$(jq -r .id merged.jsonl)" = "$(grep -hF -f <(jq -r '"\"id\":\"" + .id + "\""' merged.jsonl) req.jsonl | jq -r .id)" ]
	[ "$(grep -c newer merged.jsonl)" -eq "$(wc -l < r0.jsonl)" ]
	grep -qxF "$(head -1 retry.jsonl)" merged.jsonl
	[[ $stderr == *"30 requests: $((30 - n2)) merged, $n2 missing; $(wc -l < r0.jsonl) duplicates dropped"* ]]
	[[ $stderr == *"sbx-merge: rerun: 2"$'\n'* || $stderr == *"sbx-merge: rerun: 2" ]]
	[[ $stderr == *"(line "*", shard 2): no result"* ]]
	"$BIN/sbx-batch" s/shard-2-of-3.jsonl r2.jsonl 2> /dev/null
	run --separate-stderr "$BIN/sbx-merge" -k 3 req.jsonl r*.jsonl retry.jsonl
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" > merged.jsonl
	[ "$(jq -r .id merged.jsonl)" = "$(jq -r .id req.jsonl)" ]
	[[ $stderr != *rerun* ]]
}

# bats test_tags=valgrind
@test "sbx-merge: a torn file, another batch's results, a repeated request id and a request file are each named" {
	reqs 6 > req.jsonl
	"$BIN/sbx-batch" req.jsonl res.jsonl 2> /dev/null
	# a crash mid-line
	head -c -40 res.jsonl > torn.jsonl
	# another batch: ids we do not have, and ids we have with other code
	printf '%s\n' '{"id":"x1","status":"success","code":"echo 1"}' > other.jsonl
	jq -c 'select(.id == "r2") | .code = "echo 2"' res.jsonl >> other.jsonl
	run --separate-stderr "$BIN/sbx-merge" req.jsonl torn.jsonl other.jsonl req.jsonl
	[ "$status" -eq 1 ]
	[[ $stderr == *"torn.jsonl:6: torn line"* ]]
	[[ $stderr == *'other.jsonl:1: id "x1" is no request'* ]]
	[[ $stderr == *'other.jsonl:2: id "r2" has code or stdin other than its request'* ]]
	[[ $stderr == *'req.jsonl:1: not a result (no "status")'* ]]
	[[ $stderr == *"6 requests: 5 merged, 1 missing"*"1 unknown, 1 foreign, 7 malformed"* ]]
	[[ $stderr == *'request "r6" (line 6): no result'* ]]
	# the foreign r2 did not win
	printf '%s\n' "${lines[@]}" | jq -e -s 'map(select(.id == "r2"))[0].code | test("echo \\$")'
	# a request id twice: named, and the merge is not exact
	{ cat req.jsonl; sed -n 2p req.jsonl; } > twice.jsonl
	run --separate-stderr "$BIN/sbx-merge" twice.jsonl res.jsonl
	[ "$status" -eq 1 ]
	[[ $stderr == *'twice.jsonl:7: request id "r2" is already the id of line 2'* ]]
	[ "${#lines[@]}" -eq 6 ]
	run --separate-stderr "$BIN/sbx-merge" req.jsonl
	[ "$status" -eq 1 ]
	[[ $stderr == *"6 missing"* ]]
	run --separate-stderr "$BIN/sbx-merge" req.jsonl - < /dev/null
	[ "$status" -eq 2 ]
	[[ $stderr == *"results must be regular files"* ]]
	run --separate-stderr "$BIN/sbx-merge"
	[ "$status" -eq 2 ]
}

@test "sbx-batch --history: rows say shard and attempt; sbx-history --merge twice adds nothing" {
	reqs 20 'sleep 0.05; ' > req.jsonl
	"$BIN/sbx-shard" -k 2 -o s req.jsonl > /dev/null
	for i in 0 1; do "$BIN/sbx-batch" --history "h$i.db" "s/shard-$i-of-2.jsonl" "r$i.jsonl" 2> /dev/null; done
	run --separate-stderr "$BIN/sbx-history" -d all.db --merge h0.db h1.db
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -s 'map(.added) | add')" -eq 20 ]
	run --separate-stderr "$BIN/sbx-history" -d all.db --merge h0.db h1.db
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -s 'map(.added) | add')" -eq 0 ]
	run --separate-stderr "$BIN/sbx-history" -d all.db --limit 100
	[ "${#lines[@]}" -eq 20 ]
	printf '%s\n' "${lines[@]}" | jq -e -s --arg h "$(hostname)" \
		'all(.[]; .host == $h and .attempt == 1 and (.shard == 0 or .shard == 1))'
	run --separate-stderr "$BIN/sbx-history" -d all.db --stats
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" | jq -e -s 'map(select(.language == "bash" and .status == "success"))[0].count == 20'
}

@test "sbx-shard: a generated id that takes a line past the record limit, and an id holding a NUL, are named" {
	conf=$(conf_with 's/^max_record_size *=.*/max_record_size = "4k"/')
	pad=$(head -c 4045 /dev/zero | tr '\0' x)
	printf '{"language":"bash","code":"true #%s"}\n' "$pad" > req.jsonl
	[ "$(wc -c < req.jsonl)" -le 4097 ]
	run --separate-stderr "$BIN/sbx-shard" -c "$conf" -k 2 -o s req.jsonl
	[ "$status" -eq 1 ]
	[[ $stderr == *"line 1: with its generated id the request is"*"over the record limit of 4096"* ]]
	[ -z "$(ls -A s)" ]
	# "a\u0000b" and "a\u0000c" are not one id "a", nor placed as "a"
	printf '%s\n' '{"id":"a\u0000b","code":"x"}' '{"id":"a\u0000c","code":"x"}' > nul.jsonl
	run --separate-stderr "$BIN/sbx-shard" -k 2 -o n nul.jsonl
	[ "$status" -eq 1 ]
	[[ $stderr == *'line 1: "id" holds a NUL character'* && $stderr == *'line 2: "id" holds a NUL character'* ]]
	[[ $stderr != *"already the id"* ]]
}

@test "sbx-shard: a stdout that fails does not stop the renames half way" {
	[ -w /dev/full ] || skip "no /dev/full"
	reqs 30 > req.jsonl
	"$BIN/sbx-shard" -k 3 -o old req.jsonl > /dev/null
	st=0
	"$BIN/sbx-shard" -k 3 -o s req.jsonl > /dev/full 2> err || st=$?
	[ "$st" -eq 3 ]
	grep -q 'error writing output' err
	diff -r old s
}

@test "sbx-batch: SHARD from a stdin read into already; the stages get no fd of ours" {
	reqs 5 'sleep 1; ' > req.jsonl
	# the shard's lines are where the file has them, not where reading began
	(read -r _; "$BIN/sbx-batch" -j 5 --shard 0/1 - out.jsonl 2> err) < req.jsonl &
	pid=$!
	for _ in $(seq 100); do our_pgrep "" '(^|/)sbx-cap( |$)' > /dev/null && [ -e out.jsonl.pending ] && break; sleep 0.1; done
	# only 0, 1, 2 and what each stage opens itself: not the shard
	for c in $(our_pgrep "" '(^|/)sbx-(run|cap)( |$)'); do
		! ls -l "/proc/$c/fd/" 2> /dev/null | grep -q req.jsonl || false
	done
	wait $pid
	[ "$(jq -r .id out.jsonl)" = "$(sed 1d req.jsonl | jq -r .id)" ]
	# and sbx-merge copies from such a stdin the lines that are there
	sed 1d req.jsonl > four.jsonl
	st=0
	(read -r _; "$BIN/sbx-merge" four.jsonl - > merged.jsonl 2> /dev/null) < out.jsonl || st=$?
	[ "$st" -eq 1 ]
	[ "$(sed 1d out.jsonl)" = "$(cat merged.jsonl)" ]
}

@test "sbx-batch: SHARD named as one of OUT's own files is refused, and kept" {
	reqs 2 > x.partial
	cp x.partial want
	for f in x.partial x.pending x.lock x.attempts x.tmp; do
		[ "$f" = x.partial ] || mv x.* "$f"
		run --separate-stderr "$BIN/sbx-batch" --shard 0/1 "$f" x
		[ "$status" -eq 2 ]
		[[ $stderr == *"$f is "*"which sbx-batch writes"* ]]
		cmp "$f" want
		[ ! -e x ]
	done
}

@test "sbx-batch: an OUT or OUT.partial that is a FIFO or a directory is exit 3 at once, an OUT directory missing is 2" {
	reqs 1 > req.jsonl
	for f in out.jsonl out.jsonl.partial out.jsonl.attempts; do
		for kind in fifo dir; do
			rm -rf out.jsonl*
			if [ $kind = fifo ]; then mkfifo "$f"; else mkdir "$f"; fi
			run --separate-stderr timeout 20 "$BIN/sbx-batch" --shard 0/1 req.jsonl out.jsonl
			[ "$status" -eq 3 ]
			[[ $stderr == *"$f: not a regular file"* ]]
		done
	done
	rm -rf out.jsonl*
	run --separate-stderr "$BIN/sbx-batch" --shard 0/1 req.jsonl nodir/out.jsonl
	[ "$status" -eq 2 ]
	[[ $stderr == *"nodir/out.jsonl.lock: No such file or directory"* ]]
	# sbx-merge names a FIFO of results rather than waiting for a writer
	mkfifo fifo
	run --separate-stderr timeout 20 "$BIN/sbx-merge" req.jsonl fifo
	[ "$status" -eq 2 ]
	[[ $stderr == *"results must be regular files"* ]]
}

@test "sbx-batch - -: a shard it cannot run, or a reader gone, leaves nothing in TMPDIR" {
	export TMPDIR=$BATS_TEST_TMPDIR/tmp
	mkdir "$TMPDIR"
	run --separate-stderr "$BIN/sbx-batch" - - <<< 'nope'
	[ "$status" -eq 3 ]
	[ -z "$(ls -A "$TMPDIR")" ]
	reqs 3 > req.jsonl
	st=$("$BIN/sbx-batch" - - < req.jsonl 2> err | true; echo "${PIPESTATUS[0]}")
	[ "$st" -eq 1 ]
	grep -q 'stdout: Broken pipe' err
	[ -z "$(ls -A "$TMPDIR")" ]
}

@test "sbx-batch: a request the pipeline refuses whole (over the record limit once validated) is exit 3, not a retry forever" {
	conf=$(conf_with 's/^max_record_size *=.*/max_record_size = "4k"/')
	pad=$(head -c 3900 /dev/zero | tr '\0' x)
	{ reqs 2; printf '{"id":"big","language":"bash","code":"true #%s"}\n' "$pad"; } > req.jsonl
	run --separate-stderr "$BIN/sbx-batch" -c "$conf" --shard 0/1 req.jsonl out.jsonl
	[ "$status" -eq 3 ]
	[[ $stderr == *"ran to its end, but 1 of 3 requests have no result it can match"*"exceeds the record limit"*"running it again will not help"* ]]
	[ ! -e out.jsonl ]
	# the two that ran are kept, and not run again
	[ "$(jq -s 'map(select(.status == "success")) | length' out.jsonl.partial)" -eq 2 ]
	run --separate-stderr "$BIN/sbx-batch" -c "$conf" --shard 0/1 req.jsonl out.jsonl
	[ "$status" -eq 3 ]
	[ "$(jq -s 'map(select(.status == "success" and .shard.attempt == 1)) | length' out.jsonl.partial)" -eq 2 ]
}

@test "sbx-batch: OUT complete beside what a kill before the clean-up left is complete, and the rest goes" {
	reqs 3 > req.jsonl
	"$BIN/sbx-batch" --shard 0/1 req.jsonl out.jsonl 2> /dev/null
	cp out.jsonl out.jsonl.partial
	echo 1 > out.jsonl.attempts
	touch out.jsonl.pending
	run --separate-stderr "$BIN/sbx-batch" --shard 0/1 req.jsonl out.jsonl
	[ "$status" -eq 0 ]
	[[ $stderr == *"complete already"* ]]
	[ ! -e out.jsonl.partial ]
	[ ! -e out.jsonl.attempts ]
	[ ! -e out.jsonl.pending ]
	[ ! -e out.jsonl.lock ]
}

@test "sbx-array.sbatch: given K, an earlier split's shards of another K beside them do not stop the task" {
	reqs 6 > req.jsonl
	"$BIN/sbx-shard" -k 2 -o run/shards req.jsonl > /dev/null
	"$BIN/sbx-shard" -k 3 -o run/shards req.jsonl > /dev/null
	a=$ROOT/share/launch/slurm/sbx-array.sbatch
	run --separate-stderr env SLURM_ARRAY_TASK_ID=1 SBX_BIN="$BIN" bash "$a" run
	[ "$status" -eq 3 ]
	[[ $stderr == *"found 2"* ]]
	run --separate-stderr env SLURM_ARRAY_TASK_ID=1 SBX_BIN="$BIN" bash "$a" run 3
	[ "$status" -eq 0 ]
	[ -s run/results/shard-1-of-3.jsonl ]
	[ ! -e run/results/shard-1-of-2.jsonl ]
	run --separate-stderr env SLURM_ARRAY_TASK_ID=1 SBX_BIN="$BIN" bash "$a" run 4
	[ "$status" -eq 3 ]
	run --separate-stderr env SLURM_ARRAY_TASK_ID=1 bash "$a" run '3; true'
	[ "$status" -eq 2 ]
	grep -q '"\$dir" "\$k"' "$ROOT/share/launch/slurm/sbx-slurm"
}

@test "sbx-parallel: an SBX_REMOTE_BIN with a space in it" {
	command -v parallel > /dev/null || skip "no GNU parallel"
	mkdir "b in"
	for t in sbx-batch sbx-validate sbx-run sbx-cap sbx-log; do ln -s "$BIN/$t" "b in/$t"; done
	reqs 6 > "req s.jsonl"
	run --separate-stderr env SBX_REMOTE_BIN="$PWD/b in" SBX_BIN="$BIN" \
		bash "$ROOT/share/launch/parallel/sbx-parallel" -N 3 -r 1 "req s.jsonl" "run x" -j 2
	[ "$status" -eq 0 ]
	assert_exact "req s.jsonl" "run x/merged.jsonl"
}

@test "the Kubernetes Indexed Job: its structure, and its command runs a shard" {
	m=$ROOT/share/launch/k8s/sbx-indexed-job.yaml
	run --separate-stderr "$ROOT/t/k8s/check-manifest" "$m" --print-command
	[ "$status" -eq 0 ]
	cmd=$output
	k=$(sed -n 's/^  completions: //p' "$m")
	reqs 16 > req.jsonl
	"$BIN/sbx-shard" -k "$k" -o batch/shards req.jsonl > /dev/null
	for i in $(seq 0 $((k - 1))); do
		JOB_COMPLETION_INDEX=$i PATH=$BIN:$PATH sh -c "${cmd//\/batch/$PWD/batch}" 2> /dev/null
	done
	run --separate-stderr "$BIN/sbx-merge" -k "$k" req.jsonl batch/results/shard-*-of-"$k".jsonl
	[ "$status" -eq 0 ]
	# and a broken manifest is refused
	sed 's/completionMode: Indexed/completionMode: NonIndexed/' "$m" > bad.yaml
	run --separate-stderr "$ROOT/t/k8s/check-manifest" bad.yaml
	[ "$status" -eq 1 ]
	[[ $stderr == *"spec.completionMode"* ]]
	sed 's/values: \[2, 3\]/values: [2]/' "$m" > bad.yaml
	run --separate-stderr "$ROOT/t/k8s/check-manifest" bad.yaml
	[ "$status" -eq 1 ]
}

@test "sbx-batch: internal_error is no result (a node that cannot make sandboxes); the next attempt, on a sound node, completes" {
	reqs 3 > req.jsonl
	run --separate-stderr env DOCKER_HOST=unix:///nonexistent SBX_BACKEND=docker "$BIN/sbx-batch" req.jsonl out.jsonl
	[ "$status" -eq 1 ]
	[[ $stderr == *"3 requests ended internal_error"*"run the shard again, on a sound node"* ]]
	[ ! -e out.jsonl ]
	[ "$(jq -r .status out.jsonl.partial | sort -u)" = internal_error ]
	run --separate-stderr "$BIN/sbx-batch" req.jsonl out.jsonl
	[ "$status" -eq 0 ]
	assert_exact req.jsonl out.jsonl
	jq -e -s 'all(.[]; .shard.attempt == 2)' out.jsonl
}

@test "sbx-merge: a cancelled or internal_error result loses to any final one, and alone it is missing" {
	reqs 2 > req.jsonl
	"$BIN/sbx-batch" req.jsonl res.jsonl 2> /dev/null
	# a later attempt's cut-short copies must not win
	jq -c '.status = (if .id == "r1" then "cancelled" else "internal_error" end) | .shard.attempt = 5' res.jsonl > late.jsonl
	run --separate-stderr "$BIN/sbx-merge" req.jsonl res.jsonl late.jsonl
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" | jq -e -s 'length == 2 and all(.[]; .status == "success")'
	[[ $stderr == *"2 not final"* ]]
	run --separate-stderr "$BIN/sbx-merge" -k 1 req.jsonl late.jsonl
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 0 ]
	[[ $stderr == *'request "r1" (line 1, shard 0): only cancelled or internal_error results'* ]]
	[[ $stderr == *"sbx-merge: rerun: 0"* ]]
}
