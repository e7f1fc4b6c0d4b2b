#!/usr/bin/env bats
# sbx-history --merge: the histories of a sharded batch (one file per shard
# task, each written by sbx-log on its own machine) merged into one.  Every
# column survives, merging again or back adds nothing, a bad source costs
# only itself, and sources are only read.
load helpers

hist() { "$BIN/sbx-history" "$@"; }
logr() { "$BIN/sbx-log" "$@"; }

# n result records with prefix $2, shard field $3 (a jq object, or null
# for none), durations $4 + i.
results() {
	jq -nc --argjson n "$1" --arg p "$2" --argjson shard "${3:-null}" --argjson d "${4:-1}" '
		range($n) as $i | {id: "\($p)-\($i)", language: (if $i % 2 == 0 then "python" else "c" end),
		code: "print(\($i))", status: (if $i % 3 == 2 then "error" else "success" end), exit_code: 0,
		stdout: "\($i)\n", stderr: "", duration_ms: ($d + $i), cpu_ms: 1.5, memory_peak_bytes: 1048576,
		backend: "native", started_at: "2026-11-29T10:00:0\($i % 10).000Z"}
		+ if $shard then {shard: $shard} else {} end'
}

uuid() { sqlite3 "$1" "SELECT value FROM meta WHERE key = 'uuid'"; }
count() { sqlite3 "$1" 'SELECT count(*) FROM runs'; }

# Every column a merge copies, as sqlite3 prints them.
COLS="timestamp, language, code_snippet, status, exit_code, duration_ms, stdout_size, stderr_size, run_id, signal, cpu_ms, memory_peak_bytes, backend, compile_status, compile_ms, code_sha256, error, session_id, principal, code, record, execution_count, verdict, tests_passed, tests_total, host, shard, attempt"

@test "merge: two shards' histories from sbx-log, every column kept, ids the target's own" {
	results 3 a '{"index": 0, "of": 2, "attempt": 1, "host": "node-a"}' | logr -d a.db --store-code full > /dev/null
	results 2 b '{"index": 1, "of": 2, "attempt": 2, "host": "node-b"}' 10 | logr -d b.db > /dev/null
	# the target has runs of its own first
	results 2 t | logr -d all.db > /dev/null
	run --separate-stderr hist -d all.db --merge a.db b.db
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jqn 0 tojson)" = '{"merged":"a.db","rows":3,"added":3}' ]
	[ "$(jqn 1 tojson)" = '{"merged":"b.db","rows":2,"added":2}' ]
	[ "$(count all.db)" = 7 ]
	# new history_ids, in source order; the origin is the source's uuid and id
	[ "$(sqlite3 all.db 'SELECT group_concat(id || ":" || run_id || ":" || ifnull(origin_id, "-"), " ") FROM runs')" = "1:t-0:- 2:t-1:- 3:a-0:1 4:a-1:2 5:a-2:3 6:b-0:1 7:b-1:2" ]
	[ "$(sqlite3 all.db "SELECT count(*) FROM runs WHERE origin_db = '$(uuid a.db)'")" = 3 ]
	[ "$(sqlite3 all.db "SELECT count(*) FROM runs WHERE origin_db = '$(uuid b.db)'")" = 2 ]
	# every column, byte for byte (the code and output too: a.db kept them)
	for s in a b; do
		[ -z "$(sqlite3 all.db "ATTACH '$s.db' AS s; SELECT $COLS FROM s.runs EXCEPT SELECT $COLS FROM main.runs")" ]
	done
	[ "$(sqlite3 all.db "SELECT count(*) FROM runs WHERE code IS NOT NULL AND record LIKE '%\"stdout\"%'")" = 3 ]
	# and sbx-history shows them, host, shard and attempt after tests_total
	run --separate-stderr hist -d all.db --id a-1 --record
	[ "$status" -eq 0 ]
	jqe 0 '.history_id == 4 and .host == "node-a" and .shard == 0 and .attempt == 1 and .code == "print(1)"'
	jqe 0 '.record.shard == {"index": 0, "of": 2, "attempt": 1, "host": "node-a"} and .record.stdout == "1\n"'
	jqe 0 '[keys_unsorted[]] | .[index("tests_total") + 1:index("tests_total") + 4] == ["host", "shard", "attempt"]'
	run --separate-stderr hist -d all.db --limit 0 --jq '"\(.id) \(.host) \(.shard) \(.attempt)"'
	[ "$(printf '%s\n' "${lines[@]}" | jq -r . | sort | paste -sd,)" = "a-0 node-a 0 1,a-1 node-a 0 1,a-2 node-a 0 1,b-0 node-b 1 2,b-1 node-b 1 2,t-0 null null null,t-1 null null null" ]
}

@test "merging twice adds nothing; A into B then B into A adds nothing back; a merged file merges elsewhere idempotently" {
	results 3 a | logr -d a.db > /dev/null
	results 2 b | logr -d b.db > /dev/null
	run --separate-stderr hist -d b.db --merge a.db
	[ "$(jqn 0 tojson)" = '{"merged":"a.db","rows":3,"added":3}' ]
	run --separate-stderr hist -d b.db --merge a.db
	[ "$status" -eq 0 ]
	[ "$(jqn 0 tojson)" = '{"merged":"a.db","rows":3,"added":0}' ]
	[ "$(count b.db)" = 5 ]
	# back: only b's own two are new to a
	run --separate-stderr hist -d a.db --merge b.db
	[ "$status" -eq 0 ]
	[ "$(jqn 0 tojson)" = '{"merged":"b.db","rows":5,"added":2}' ]
	[ "$(count a.db)" = 5 ]
	run --separate-stderr hist -d b.db --merge a.db
	[ "$(jqn 0 tojson)" = '{"merged":"a.db","rows":5,"added":0}' ]
	[ "$(count b.db)" = 5 ]
	# a third history takes a merged file, then the other: nothing twice
	run --separate-stderr hist -d c.db --merge a.db b.db a.db
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -sc 'map(.added)')" = '[5,0,0]' ]
	[ "$(sqlite3 c.db 'SELECT group_concat(run_id, " ") FROM (SELECT run_id FROM runs ORDER BY run_id)')" = "a-0 a-1 a-2 b-0 b-1" ]
	# and the keys travel: c's rows carry a's and b's uuids, none c's own
	[ "$(sqlite3 c.db "SELECT count(*) FROM runs WHERE origin_db IN ('$(uuid a.db)', '$(uuid b.db)')")" = 5 ]
	run --separate-stderr hist -d a.db --merge c.db
	[ "$(jqn 0 tojson)" = '{"merged":"c.db","rows":5,"added":0}' ]
}

@test "--stats over a merged history is --stats over all the runs" {
	results 6 a '{"index": 0, "of": 2, "attempt": 0, "host": "n1"}' 5 > a.in
	results 5 b '{"index": 1, "of": 2, "attempt": 0, "host": "n2"}' 50 > b.in
	logr -d a.db < a.in > /dev/null
	logr -d b.db < b.in > /dev/null
	cat a.in b.in | logr -d one.db > /dev/null
	run --separate-stderr hist -d all.db --merge a.db b.db
	[ "$status" -eq 0 ]
	hist -d one.db --stats > want
	run --separate-stderr hist -d all.db --stats
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}")" = "$(cat want)" ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -sc 'map(select(.status == "all") | [.language, .count])')" = '[["c",5],["python",6]]' ]
	[ "$(hist -d all.db --stats --jq 'select(.status == "all") | .count' | jq -s add)" = 11 ]
	[ "$(hist -d all.db --stats --by day | jq -s 'map(select(.status == "all") | .count) | add')" = 11 ]
}

@test "the record's shard field: host, index, attempt stored; absent or wrong-typed parts are NULL, never an abort" {
	{
		for s in '{"index": 0, "of": 4, "attempt": 0, "host": "h0"}' \
			'{"index": "1", "of": 4, "attempt": 1.5, "host": 7}' \
			'{"index": 4, "of": 4, "attempt": 3}' \
			'{"index": 5, "of": "x"}' \
			'{"index": 3, "of": -1, "attempt": 1000000000}' \
			'{"index": -1, "attempt": -2, "host": null}' \
			'{"index": true, "attempt": false, "host": ["h"]}' \
			'{"index": 99999999999999999999, "attempt": 1e2}' \
			'{"index": 3.0, "attempt": 2.5, "host": ""}' \
			'{"index": 4294967296, "attempt": 0e0}' \
			'"node-1"' '[1, 2]' 'null' '{}'; do
			# printf, not jq: the numbers as written (jq would print 1e2 as 100)
			printf '{"language":"python","code":"x","status":"success","shard":%s}\n' "$s"
		done
		printf '{"language":"python","code":"x","status":"success"}\n'
	} > in
	run --separate-stderr logr -d h.db < in
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 15 ]
	# passed on as they came
	[ "$(printf '%s\n' "${lines[@]}" | sed 's/,"history_id":[0-9]*}$/}/')" = "$(cat in)" ]
	run --separate-stderr hist -d h.db --limit 0 --jq '[.host, .shard, .attempt]'
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | tac | paste -sd' ')" = '["h0",0,0] [null,null,null] [null,null,3] [null,5,null] [null,3,1000000000] [null,null,null] [null,null,null] [null,null,null] ["",null,null] [null,4294967296,null] [null,null,null] [null,null,null] [null,null,null] [null,null,null] [null,null,null]' ]
	[ "$(sqlite3 h.db 'SELECT count(*) FROM runs WHERE typeof(shard) NOT IN ("integer", "null") OR typeof(attempt) NOT IN ("integer", "null") OR typeof(host) NOT IN ("text", "null")')" = 0 ]
}

@test "a version 4 file: as a source it is refused and left alone; a writer migrates it in place, keeping its rows; then it merges" {
	results 3 old '{"index": 2, "of": 3, "attempt": 1, "host": "n"}' | logr -d v4.db > /dev/null
	# back to what version 4 was
	sqlite3 v4.db 'DROP INDEX runs_origin; DROP TABLE meta; ALTER TABLE runs DROP COLUMN host; ALTER TABLE runs DROP COLUMN shard;
		ALTER TABLE runs DROP COLUMN attempt; ALTER TABLE runs DROP COLUMN origin_db; ALTER TABLE runs DROP COLUMN origin_id;
		PRAGMA user_version = 4'
	sum=$(sha256sum < v4.db)
	results 1 t | logr -d all.db > /dev/null
	run --separate-stderr hist -d all.db --merge v4.db
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "${stderr_lines[0]}" = "sbx-history: --merge: history v4.db: schema version 4 has no uuid to merge by; upgrade it in place first (sbx-log -d v4.db < /dev/null), then merge it (not merged)" ]
	[ "$(sha256sum < v4.db)" = "$sum" ]
	[ "$(sqlite3 v4.db 'PRAGMA user_version')" = 4 ]
	[ "$(count all.db)" = 1 ]
	# what the message says to do
	run --separate-stderr logr -d v4.db < /dev/null
	[ "$status" -eq 0 ]
	[ "$(sqlite3 v4.db 'PRAGMA user_version')" = 6 ]
	[[ "$(uuid v4.db)" =~ ^[0-9a-f]{32}$ ]]
	[ "$(count v4.db)" = 3 ]
	[ "$(sqlite3 v4.db 'SELECT count(*) FROM runs WHERE host IS NULL AND shard IS NULL AND origin_db IS NULL')" = 3 ]
	run --separate-stderr hist -d all.db --merge v4.db
	[ "$status" -eq 0 ]
	[ "$(jqn 0 tojson)" = '{"merged":"v4.db","rows":3,"added":3}' ]
	# a reader that may write the file migrates it too (the seed's path):
	# the uuid is made once, on the first migration, and kept
	u=$(uuid v4.db)
	sqlite3 v4.db 'PRAGMA user_version = 4'
	hist -d v4.db > /dev/null
	[ "$(sqlite3 v4.db 'PRAGMA user_version')" = 6 ]
	[ "$(uuid v4.db)" = "$u" ]
}

@test "bad sources: missing, not a database, not an sbx history, a directory, newer, the target itself or a copy of it: each named, the good ones merged, exit 2" {
	results 3 a | logr -d a.db > /dev/null
	results 2 b | logr -d b.db > /dev/null
	results 1 t | logr -d all.db > /dev/null
	head -c 8192 /dev/urandom > junk.db
	printf 'id,language\n1,python\n' > text.csv
	sqlite3 other.db 'CREATE TABLE t (x); INSERT INTO t VALUES (1)'
	sqlite3 notsbx.db 'CREATE TABLE runs (id INTEGER PRIMARY KEY, x); PRAGMA user_version = 5'
	sqlite3 newer.db 'CREATE TABLE runs (id INTEGER PRIMARY KEY); PRAGMA user_version = 9'
	: > empty.db
	mkdir dir.db
	cp all.db copy.db
	sums=$(sha256sum junk.db text.csv other.db notsbx.db newer.db a.db b.db)
	run --separate-stderr hist -d all.db --merge a.db missing.db junk.db text.csv other.db notsbx.db newer.db empty.db dir.db all.db ./all.db copy.db '' b.db
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jqn 0 tojson)" = '{"merged":"a.db","rows":3,"added":3}' ]
	[ "$(jqn 1 tojson)" = '{"merged":"b.db","rows":2,"added":2}' ]
	[ "$(count all.db)" = 6 ]
	# one line each, naming the file
	[ "${#stderr_lines[@]}" -eq 12 ]
	for l in "${stderr_lines[@]}"; do [[ "$l" == "sbx-history: --merge: history "*" (not merged)" ]]; done
	[[ "${stderr_lines[0]}" == *"history missing.db: No such file or directory"* ]]
	[[ "${stderr_lines[1]}" == *"history junk.db: file is not a database"* ]]
	[[ "${stderr_lines[2]}" == *"history text.csv: file is not a database"* ]]
	[[ "${stderr_lines[3]}" == *"history other.db: is not an sbx history (no runs table)"* ]]
	[[ "${stderr_lines[4]}" == *"history notsbx.db: is not an sbx history (no meta table"* ]]
	[[ "${stderr_lines[5]}" == *"history newer.db: schema version 9 is newer than this sbx knows (6)"* ]]
	[[ "${stderr_lines[6]}" == *"history empty.db: is not an sbx history (no runs table)"* ]]
	[[ "${stderr_lines[7]}" == *"history dir.db: is not a regular file"* ]]
	[[ "${stderr_lines[8]}" == *"history all.db: is the target history itself"* ]]
	[[ "${stderr_lines[9]}" == *"history ./all.db: is the target history itself"* ]]
	[[ "${stderr_lines[10]}" == *"history copy.db: has the target's own uuid $(uuid all.db) (a copy of the target?)"* ]]
	[[ "${stderr_lines[11]}" == *'history "": the path is empty'* ]]
	# sources are only read
	[ "$(sha256sum junk.db text.csv other.db notsbx.db newer.db a.db b.db)" = "$sums" ]
	[ ! -s empty.db ]
	# the target named by $SBX_HISTORY rather than -d is known too
	run --separate-stderr env SBX_HISTORY="$PWD/all.db" "$BIN/sbx-history" --merge all.db
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"is the target history itself"* ]]
}

@test "a corrupt source: nothing of it merged, the others are" {
	results 2 a | logr -d a.db > /dev/null
	jq -nc 'range(400) as $i | {id: "c-\($i)", language: "python", code: ("x" * 1500 + "\($i)"), status: "success", duration_ms: 1}' |
		logr -d big.db --store-code full > /dev/null
	cp big.db bad.db
	dd if=/dev/urandom of=bad.db bs=4096 seek=$(($(stat -c %s big.db) / 4096 / 2)) count=20 conv=notrunc 2> /dev/null
	run --separate-stderr hist -d all.db --merge bad.db a.db
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$(jqn 0 tojson)" = '{"merged":"a.db","rows":2,"added":2}' ]
	[[ "${stderr_lines[0]}" == "sbx-history: --merge: history bad.db: "*"malformed"*"(not merged)" ]]
	[ "$(count all.db)" = 2 ]
	run --separate-stderr hist -d all.db --merge big.db
	[ "$(jqn 0 tojson)" = '{"merged":"big.db","rows":400,"added":400}' ]
}

@test "two files with one uuid (a copied history): refused, never silently dropped" {
	logr -d template.db < /dev/null
	cp template.db s1.db
	cp template.db s2.db
	results 3 one | logr -d s1.db > /dev/null
	results 3 two | logr -d s2.db > /dev/null
	cp s1.db s1-again.db
	run --separate-stderr hist -d all.db --merge s1.db s1-again.db s2.db
	[ "$status" -eq 2 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -sc 'map([.merged, .added])')" = '[["s1.db",3],["s1-again.db",0]]' ]
	[ "${stderr_lines[0]}" = "sbx-history: --merge: history s2.db: its run keyed $(uuid s1.db)/1 is not the run merged before under that key (two history files with one uuid: was one copied from the other?) (not merged)" ]
	[ "$(sqlite3 all.db 'SELECT group_concat(run_id, " ") FROM runs')" = "one-0 one-1 one-2" ]
}

# bats test_tags=valgrind
@test "a hostile source: wrong-typed values become NULL or the defaults, malformed keys the source's own, no crash" {
	results 2 ok | logr -d src.db > /dev/null
	u=$(uuid src.db)
	sqlite3 src.db "
		INSERT INTO runs (timestamp, language, code_snippet, status, duration_ms, exit_code, stdout_size, shard, attempt, host,
		                  record, origin_db, origin_id, cpu_ms, tests_total, code)
		VALUES ('abc', x'00ff', x'00', 7, 'slow', 'zero', -5, 'three', -1, x'41', '{bad', 'nothex', 'x', 'fast', 2.5, x'00'),
		       (1764410400, 'python', 'p', 'success', 1, 0, 0, 2, 1, 'h', '{\"ok\":1}', 'ABCDEF0123456789abcdef0123456789', 9, 1, 1, 'c'),
		       (1764410400, 'python', 'q', 'success', 1, 0, 0, 9223372036854775807, 0, 'h', '[]', '0123456789abcdef0123456789abcdef', 4, 1, 1, NULL)"
	# and one made by hand, no types, no constraints, ids of every kind
	sqlite3 loose.db "CREATE TABLE runs (id, $COLS, origin_db, origin_id); CREATE TABLE meta (key, value);
		INSERT INTO meta VALUES ('uuid', 'fedcba9876543210fedcba9876543210'); PRAGMA user_version = 5;
		INSERT INTO runs (id, timestamp, language, status, shard) VALUES ('one', 1, 'python', 'success', 1), (2.5, 1, 'python', 'success', 1),
		       (NULL, NULL, NULL, NULL, NULL), (7, x'ff', 3.5, NULL, 'x'), (-3, -1e308, '', '', -0.0)"
	run --separate-stderr hist -d all.db --merge src.db loose.db
	[ "$status" -eq 0 ]
	[ "$(jqn 0 tojson)" = '{"merged":"src.db","rows":5,"added":5}' ]
	[ "$(jqn 1 tojson)" = '{"merged":"loose.db","rows":5,"added":2}' ]
	# the hostile row: NULLs and defaults, keyed by its own id in src
	row=$(sqlite3 all.db "SELECT typeof(timestamp), language, code_snippet, status, duration_ms, quote(exit_code), stdout_size,
		quote(shard), quote(attempt), quote(host), quote(record), origin_db = '$u', origin_id, quote(cpu_ms), quote(tests_total), quote(code)
		FROM runs WHERE origin_id = 3")
	[ "$row" = "real|||7|0.0|NULL|0|NULL|NULL|NULL|NULL|1|3|NULL|NULL|NULL" ] || { echo "$row" >&2; false; }
	# a well-formed origin is kept, a malformed one (upper case) is not
	[ "$(sqlite3 all.db "SELECT code_snippet || ':' || origin_db || '/' || origin_id FROM runs WHERE code_snippet IN ('p', 'q') ORDER BY 1")" = "p:$u/4
q:0123456789abcdef0123456789abcdef/4" ]
	[ "$(sqlite3 all.db "SELECT quote(shard) FROM runs WHERE code_snippet = 'q'")" = 9223372036854775807 ]
	[ "$(sqlite3 all.db "SELECT count(*) FROM runs WHERE origin_db = 'fedcba9876543210fedcba9876543210'")" = 2 ]
	# a time no reader could print (-1e308) is the time of merging, as a missing one
	[ "$(sqlite3 all.db "SELECT count(*) FROM runs WHERE abs(timestamp - strftime('%s', 'now')) < 600")" = 3 ]
	# every reader still works
	run --separate-stderr hist -d all.db --limit 0 --record
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 7 ]
	printf '%s\n' "${lines[@]}" | jq -e . > /dev/null
	run --separate-stderr hist -d all.db --stats
	[ "$status" -eq 0 ]
	run --separate-stderr hist -d all.db --format table
	[ "$status" -eq 0 ]
	run --separate-stderr hist -d all.db --merge src.db loose.db
	[ "$(printf '%s\n' "${lines[@]}" | jq -sc 'map(.added)')" = '[0,0]' ]
}

@test "a source that computes: a generated column, a recursive view, a trigger, a virtual table: refused at once, the target untouched" {
	results 3 base | logr -d all.db > /dev/null
	before=$(sqlite3 all.db "SELECT count(*), sum(length(code)) FROM runs")
	size=$(stat -c %s all.db)
	# 16 KiB that would write 8 MB of code per row into the target
	results 5 gen | logr -d gen.db > /dev/null
	sqlite3 gen.db "ALTER TABLE runs DROP COLUMN code;
		ALTER TABLE runs ADD COLUMN code TEXT GENERATED ALWAYS AS (hex(zeroblob(8000000))) VIRTUAL"
	# a meta that never ends
	results 1 view | logr -d view.db > /dev/null
	sqlite3 view.db "DROP TABLE meta; CREATE VIEW meta (key, value) AS
		WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT 'uuid', n FROM r"
	results 1 trig | logr -d trig.db > /dev/null
	sqlite3 trig.db "CREATE TABLE t (a); CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END"
	results 1 virt | logr -d virt.db > /dev/null
	sqlite3 virt.db "CREATE VIRTUAL TABLE v USING json_each('[1]')" 2> /dev/null ||
		sqlite3 virt.db "CREATE VIRTUAL TABLE v USING fts5(a)"
	t0=$(date +%s%N)
	# (a view that never ends would hang a merge that read it)
	run --separate-stderr timeout 120 "$BIN/sbx-history" -d all.db --merge gen.db view.db trig.db virt.db
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[[ $stderr == *"gen.db: runs is a table with the generated column code: a history holds plain tables only"* ]]
	[[ $stderr == *"view.db: meta is a view: a history holds plain tables only"* ]]
	[[ $stderr == *"trig.db: tr is a trigger: a history holds plain tables only"* ]]
	[[ $stderr == *"virt.db: v is a virtual table: a history holds plain tables only"* ]]
	[ "$(sqlite3 all.db "SELECT count(*), sum(length(code)) FROM runs")" = "$before" ]
	[ "$(stat -c %s all.db)" -le $((size + 65536)) ]
	[ "$ms" -lt "$(bound 5000 30000)" ]
}

@test "--merge: usage" {
	run --separate-stderr hist --merge
	[ "$status" -eq 2 ]
	[ "${stderr_lines[0]}" = "sbx-history: --merge needs the history files to merge" ]
	for extra in --stats --record "--jq ." "--format csv" "--status error" "--prune --older-than 1d" --vacuum; do
		run --separate-stderr hist -d all.db --merge a.db $extra
		[ "$status" -eq 2 ] || { echo "$extra: $status" >&2; false; }
		[[ "${stderr_lines[0]}" == *"--merge takes no filters"* ]] || [[ "${stderr_lines[0]}" == *"--prune and --vacuum take no"* ]]
	done
	[ ! -e all.db ]
	run --separate-stderr hist a.db
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == *'unexpected argument "a.db"'* ]]
	run --separate-stderr hist --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--merge SRC..."* ]]
	# the target is made if missing, like sbx-log's
	results 1 a | logr -d a.db > /dev/null
	run --separate-stderr hist -d new/all.db --merge a.db
	[ "$status" -eq 0 ]
	[ "$(stat -c %a new/all.db)" = 600 ]
	[ "$(sqlite3 new/all.db 'PRAGMA user_version')" = 6 ]
}
