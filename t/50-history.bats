#!/usr/bin/env bats
# sbx-log and sbx-history against a real SQLite file: every field round
# trips, the seed's database migrates, concurrent writers lose nothing,
# failures of the store never eat records, filters are parameters (no SQL
# injection), and the exit codes work for cron.
load helpers

local_setup() {
	export SBX_HISTORY=$BATS_TEST_TMPDIR/var/h.db
}

# n result records for language $2 (default python), ids $3-1 … $3-n.
results() {
	jq -nc --argjson n "$1" --arg lang "${2:-python}" --arg p "${3:-r}" '
		range($n) as $i | {id: "\($p)-\($i)", language: $lang, code: "print(\($i))", status: "success",
		exit_code: 0, signal: null, stdout: "\($i)\n", stderr: "", stdout_bytes: 2, stderr_bytes: 0,
		duration_ms: ($i + 1), cpu_ms: 1.5, memory_peak_bytes: 1048576, backend: "native", compile: null,
		started_at: "2026-11-29T10:00:00.000Z"}'
}

hist() { "$BIN/sbx-history" "$@"; }
logr() { "$BIN/sbx-log" "$@"; }

@test "sbx-log: every record gets a history_id and is passed on unchanged otherwise" {
	results 3 > in
	run --separate-stderr logr < in
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -s 'map(.history_id)')" = "$(jq -n '[1,2,3]')" ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -sc 'map(del(.history_id))')" = "$(jq -sc . in)" ]
	[ -z "$stderr" ]
	[ "$(stat -c %a "$SBX_HISTORY")" = 600 ]
}

# bats test_tags=valgrind
@test "round trip: every column from a real pipeline, and the stored record" {
	# 1 MiB touched: more than the kernel's charge batches, which can make
	# a tiny program's peak 0 in a slot's kept cgroup (doc/contract.md)
	printf '%s\n' '{"id":"rt","language":"c","code":"#include <stdio.h>\n#include <string.h>\nstatic char b[1 << 20];\nint main(void){ memset(b, 1, sizeof b); puts(\"hé\"); return 3 + b[9]; }"}' |
		"$BIN/sbx-validate" | "$BIN/sbx-run" --no-cache | "$BIN/sbx-cap" | logr > out
	run --separate-stderr hist --id rt --record
	[ "$status" -eq 0 ]
	jqe 0 '.history_id == 1 and .id == "rt" and .language == "c" and .status == "error" and .exit_code == 4'
	jqe 0 '.signal == null and .duration_ms > 0 and .cpu_ms >= 0 and .memory_peak_bytes > 0 and .memory_peak_bytes == .record.memory_peak_bytes'
	jqe 0 '.stdout_size == 4 and .stderr_size == 0 and .backend == "native"'
	jqe 0 '.compile_status == "success" and .compile_ms > 0 and .error == null and .session_id == null'
	jqe 0 '(.timestamp | test("^2[0-9]{3}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"))'
	jqe 0 '.code_snippet | startswith("#include <stdio.h>")'
	want=$(jq -j .code out | sha256sum | cut -d' ' -f1)
	jqe 0 ".code_sha256 == \"$want\""
	# preview mode: the record is kept without code, stdin, files, output
	jqe 0 '.record.status == "error" and .record.exit_code == 4 and .record.limits.memory_bytes > 0'
	jqe 0 '(.record | has("code") or has("stdout") or has("stderr")) | not'
	jqe 0 '.code == null'
	[ "$(jq .started_at out)" = "$(printf '%s' "${lines[0]}" | jq .record.started_at)" ]
}

@test "--store-code full keeps the whole code and the capped output; preview keeps 500 characters" {
	code=$(printf 'é%.0s' $(seq 600))
	jq -nc --arg c "$code" '{id: "full", language: "python", code: $c, status: "success", stdout: "out"}' |
		logr --store-code full > /dev/null
	jq -nc --arg c "$code" '{id: "prev", language: "python", code: $c, status: "success", stdout: "out"}' |
		logr > /dev/null
	run --separate-stderr hist --record --id full
	jqe 0 ".code == \"$code\" and .record.code == \"$code\" and .record.stdout == \"out\""
	jqe 0 '.code_snippet | length == 500'
	run --separate-stderr hist --record --id prev
	jqe 0 '.code == null and (.record | has("code") | not) and (.code_snippet | length == 500)'
	conf=$(conf_with 's/^history_code *=.*/history_code = "full"/')
	jq -nc '{id: "conf", language: "python", code: "x", status: "success"}' | logr -c "$conf" -d "$SBX_HISTORY" > /dev/null
	run --separate-stderr hist --record --id conf
	jqe 0 '.code == "x"'
}

@test "invalid records and lines that are not JSON are logged too, with their error" {
	printf '%s\n' '{"language":"cobol","code":"x"}' | "$BIN/sbx-validate" > in || true
	printf 'not json\n' >> in
	run --separate-stderr logr < in
	[ "$status" -eq 1 ]
	jqe 0 '.status == "invalid" and .history_id == 1'
	jqe 1 '.status == "invalid" and .history_id == 2'
	run --separate-stderr hist --status invalid
	[ "${#lines[@]}" -eq 2 ]
	jqe 0 '.error | startswith("line 2: not valid JSON")'
	jqe 1 '.language == "cobol" and (.error | contains("unsupported language"))'
}

@test "schema: user_version, WAL, the columns and the indexes" {
	results 1 | logr > /dev/null
	[ "$(sqlite3 "$SBX_HISTORY" 'PRAGMA user_version')" = 6 ]
	[ "$(sqlite3 "$SBX_HISTORY" 'PRAGMA journal_mode')" = wal ]
	cols=$(sqlite3 "$SBX_HISTORY" "SELECT group_concat(name, ' ') FROM pragma_table_info('runs')")
	[ "$cols" = "id timestamp language code_snippet status exit_code duration_ms stdout_size stderr_size run_id signal cpu_ms memory_peak_bytes backend compile_status compile_ms code_sha256 error session_id code record principal execution_count verdict tests_passed tests_total host shard attempt origin_db origin_id" ]
	idx=$(sqlite3 "$SBX_HISTORY" "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'runs_%' ORDER BY name)")
	[ "$idx" = "runs_origin runs_principal runs_run_id runs_session runs_stats runs_time runs_verdict" ]
	# version 6: sessions' checkpoint events
	cols=$(sqlite3 "$SBX_HISTORY" "SELECT group_concat(name, ' ') FROM pragma_table_info('session_events')")
	[ "$cols" = "id timestamp session_id kind checkpoint_id parent name from_session method duration_ms bytes principal" ]
	# the file's identity, made with it
	[[ "$(sqlite3 "$SBX_HISTORY" "SELECT value FROM meta WHERE key = 'uuid'")" =~ ^[0-9a-f]{32}$ ]]
	# --stats reads the covering index, never the table
	plan=$(sqlite3 "$SBX_HISTORY" "EXPLAIN QUERY PLAN SELECT NULL, language, status, duration_ms FROM runs ORDER BY language, status, duration_ms")
	[[ "$plan" == *"COVERING INDEX runs_stats"* ]]
	# --stats=verdict the partial index of the judged runs
	plan=$(sqlite3 "$SBX_HISTORY" "EXPLAIN QUERY PLAN SELECT NULL, language, verdict, duration_ms FROM runs WHERE verdict IS NOT NULL ORDER BY language, verdict, duration_ms")
	[[ "$plan" == *"COVERING INDEX runs_verdict"* ]]
}

@test "migration: the seed's database keeps its rows and gains our columns" {
	mkdir -p "$(dirname "$SBX_HISTORY")"
	sqlite3 "$SBX_HISTORY" <<-'EOF'
	CREATE TABLE IF NOT EXISTS runs (
	    id           INTEGER PRIMARY KEY AUTOINCREMENT,
	    timestamp    REAL    NOT NULL,
	    language     TEXT    NOT NULL,
	    code_snippet TEXT    NOT NULL,
	    status       TEXT    NOT NULL,
	    exit_code    INTEGER,
	    duration_ms  REAL    NOT NULL,
	    stdout_size  INTEGER NOT NULL DEFAULT 0,
	    stderr_size  INTEGER NOT NULL DEFAULT 0
	);
	INSERT INTO runs (timestamp, language, code_snippet, status, exit_code, duration_ms, stdout_size, stderr_size)
	VALUES (1764410400.5, 'python', 'print(1)', 'success', 0, 120.5, 2, 0),
	       (1764410460.0, 'cpp', 'int main(){}', 'error', 1, 900.0, 0, 33),
	       (1764410520.0, 'javascript', 'while(1){}', 'timeout', NULL, 10000.0, 0, 0);
	EOF
	# a reader alone migrates the file if it may write it
	run --separate-stderr hist --limit 0
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	jqe 0 '.history_id == 3 and .language == "javascript" and .status == "timeout" and .exit_code == null'
	jqe 2 '.history_id == 1 and .timestamp == "2025-11-29T10:00:00.500Z" and .duration_ms == 120.5 and .id == null'
	[ "$(sqlite3 "$SBX_HISTORY" 'PRAGMA user_version')" = 6 ]
	results 1 | logr > /dev/null
	run --separate-stderr hist --limit 0 --jq .history_id
	[ "$(printf '%s,' "${lines[@]}")" = "4,3,2,1," ]
}

@test "migration from version 1: rows kept, the principal column added; --principal filters by it" {
	results 2 | logr > /dev/null
	# back to what version 1 was
	sqlite3 "$SBX_HISTORY" 'DROP INDEX runs_principal; ALTER TABLE runs DROP COLUMN principal; PRAGMA user_version = 1'
	jq -nc '{id: "p-1", language: "python", code: "1", status: "success", principal: "0123456789abcdef"}' | logr > /dev/null
	[ "$(sqlite3 "$SBX_HISTORY" 'PRAGMA user_version')" = 6 ]
	[ "$(hist --limit 0 | wc -l)" = 3 ]
	run --separate-stderr hist --principal 0123456789abcdef --limit 0
	[ "${#lines[@]}" -eq 1 ]
	jqe 0 '.id == "p-1"'
	run --separate-stderr hist --principal fedcba9876543210
	[ "$status" -eq 1 ]
}

@test "a database from a newer sbx is refused, not damaged" {
	mkdir -p "$(dirname "$SBX_HISTORY")"
	sqlite3 "$SBX_HISTORY" 'PRAGMA user_version = 99; CREATE TABLE runs (id INTEGER PRIMARY KEY)'
	sum=$(sha256sum "$SBX_HISTORY")
	results 1 > in
	run --separate-stderr logr < in
	[ "$status" -eq 4 ]
	[[ "$stderr" == *"schema version 99 is newer than this sbx knows (6)"* ]]
	jqe 0 '.history_id == null and .id == "r-0"'
	run --separate-stderr hist
	[ "$status" -eq 2 ]
	[ "$sum" = "$(sha256sum "$SBX_HISTORY")" ]
}

@test "8 concurrent writers x 500 records: nothing lost, no 'locked', while a reader runs --stats" {
	for w in $(seq 8); do results 500 python "w$w" > "in$w"; done
	results 1 | logr > /dev/null # create the file first: the writers race on the rows, not on creation
	for w in $(seq 8); do logr < "in$w" > "out$w" 2> "err$w" & done
	reads=0
	while jobs -r | grep -q .; do
		hist --stats > stats 2> rerr || { cat rerr >&2; [ $? -eq 1 ]; }
		reads=$((reads + 1))
	done
	wait
	for w in $(seq 8); do
		[ ! -s "err$w" ] || { cat "err$w" >&2; false; }
		[ "$(jq -s 'map(select(.history_id != null)) | length' "out$w")" = 500 ]
	done
	[ "$reads" -ge 1 ]
	[ "$(sqlite3 "$SBX_HISTORY" 'SELECT count(*), count(DISTINCT run_id) FROM runs')" = "4001|4001" ]
	# every history_id a writer printed is that writer's row
	cat out* | jq -r '"\(.history_id) \(.id)"' | sort > printed
	sqlite3 -separator ' ' "$SBX_HISTORY" 'SELECT id, run_id FROM runs WHERE id > 1' | sort > stored
	diff printed stored
	run --separate-stderr hist --stats --language python --jq 'select(.status == "all") | .count'
	[ "${lines[0]}" = 4001 ]
}

@test "a read-only database: one clear error, records still flow, exit 4" {
	skip_unless_root
	results 2 | logr > /dev/null
	chmod 0444 "$SBX_HISTORY"
	chmod 0555 "$(dirname "$SBX_HISTORY")"
	results 3 python ro > in
	run --separate-stderr setpriv --reuid 65534 --regid 65534 --clear-groups "$BIN/sbx-log" < in
	[ "$status" -eq 4 ]
	[ "${#lines[@]}" -eq 3 ]
	jqe 2 '.id == "ro-2" and .history_id == null'
	[ "$(printf '%s\n' "$stderr" | grep -c .)" -eq 1 ]
	[[ "$stderr" == "sbx-log: history $SBX_HISTORY: "* ]]
	chmod 0755 "$(dirname "$SBX_HISTORY")"
}

@test "a corrupt database: one clear error, records still flow, exit 4; the reader exits 2" {
	mkdir -p "$(dirname "$SBX_HISTORY")"
	head -c 8192 /dev/urandom > "$SBX_HISTORY"
	results 2 > in
	run --separate-stderr logr < in
	[ "$status" -eq 4 ]
	[ "${#lines[@]}" -eq 2 ]
	jqe 1 '.id == "r-1" and .history_id == null'
	[[ "$stderr" == *"file is not a database"* ]]
	run --separate-stderr hist
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"file is not a database"* ]]
}

@test "a full disk: the error is reported and the records still flow" {
	skip_unless_root
	mkdir -p small
	mount -t tmpfs -o size=200k tmpfs small
	results 400 python big | jq -c '.stdout = ("x" * 2000)' > in
	run --separate-stderr "$BIN/sbx-log" -d small/h.db --store-code full < in
	umount small
	[ "$status" -eq 4 ]
	[ "${#lines[@]}" -eq 400 ]
	[[ "$stderr" == *"full"* ]]
	[ "$(printf '%s\n' "${lines[@]}" | jq -s 'map(.id) == [range(400) | "big-\(.)"]')" = true ]
}

@test "filters: --since/--until (ISO and relative), --language (aliases), --status, --id, --limit" {
	{
		jq -nc '{id: "old", language: "python", code: "1", status: "success", duration_ms: 5, started_at: "2020-01-01T00:00:00.000Z"}'
		jq -nc '{id: "mid", language: "c", code: "2", status: "error", duration_ms: 7, started_at: "2024-06-01T12:00:00.000Z"}'
		jq -nc --arg t "$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" '{id: "new", language: "python", code: "3", status: "timeout", duration_ms: 9, started_at: $t}'
	} | logr > /dev/null
	ids() { printf '%s\n' "${lines[@]}" | jq -sc 'map(.id)'; }
	run --separate-stderr hist; [ "$(ids)" = '["new","mid","old"]' ]
	run --separate-stderr hist --since 1h; [ "$(ids)" = '["new"]' ]
	run --separate-stderr hist --since 2024-01-01 --until 2025-01-01T00:00Z; [ "$(ids)" = '["mid"]' ]
	run --separate-stderr hist --until 2024-06-01T14:01:00+02:00; [ "$(ids)" = '["mid","old"]' ]
	run --separate-stderr hist --until 2024-06-01T14:00:00+02:00; [ "$(ids)" = '["old"]' ]
	run --separate-stderr hist --language py; [ "$(ids)" = '["new","old"]' ]
	run --separate-stderr hist --status error; [ "$(ids)" = '["mid"]' ]
	run --separate-stderr hist --id old; [ "$(ids)" = '["old"]' ]
	run --separate-stderr hist -n 2; [ "$(ids)" = '["new","mid"]' ]
	run --separate-stderr hist --limit 0 --language python --status timeout; [ "$(ids)" = '["new"]' ]
	# several values: repeated, or a comma-separated list
	run --separate-stderr hist --status error --status timeout; [ "$(ids)" = '["new","mid"]' ]
	run --separate-stderr hist --status error,timeout; [ "$(ids)" = '["new","mid"]' ]
	run --separate-stderr hist --language c,py --status success --status error; [ "$(ids)" = '["mid","old"]' ]
	run --separate-stderr hist --status error,timout
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == *'"timout" is not a status'* ]]
	# today and yesterday are midnights (UTC); a date is its midnight
	run --separate-stderr hist --since today; [ "$(ids)" = '["new"]' ]
	run --separate-stderr hist --since yesterday --until today; [ "$(ids)" = '[]' ]
	# a bare number is no time: "2026" is neither a year nor 2026 seconds ago
	for t in 2026 30 0; do
		run --separate-stderr hist --since "$t"
		[ "$status" -eq 2 ]
		[[ "${stderr_lines[0]}" == *"--since: \"$t\" needs a unit: ${t}d (days), ${t}h, ${t}m or ${t}s" ]]
	done
	run --separate-stderr hist --since 2024-02-30
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == *'"2024-02-30" is neither a date'* ]]
}

@test "--egress-refused: runs whose proxy refused a connection; --verdict is checked; --prune takes no filter" {
	{
		jq -nc '{id: "plain", language: "python", code: "1", status: "success", duration_ms: 5}'
		jq -nc '{id: "clean", language: "python", code: "2", status: "success", duration_ms: 5,
			egress: [{host: "pypi.org", port: 443, allowed: true, bytes_sent: 10, bytes_received: 20, duration_ms: 3}]}'
		jq -nc '{id: "refused", language: "python", code: "3", status: "error", duration_ms: 5,
			egress: [{host: "pypi.org", port: 443, allowed: true, bytes_sent: 10, bytes_received: 20, duration_ms: 3},
				{host: "evil.example", port: 443, allowed: false, why: "evil.example is not among the registries", bytes_sent: 0, bytes_received: 0, duration_ms: 0}]}'
		jq -nc '{id: "failed", language: "python", code: "4", status: "error", duration_ms: 5,
			egress: [{host: "pypi.org", port: 443, allowed: true, why: "cannot resolve pypi.org", bytes_sent: 0, bytes_received: 0, duration_ms: 1}]}'
		# a hostile record (merged in, or logged by hand) breaks no query
		jq -nc '{id: "junk", language: "python", code: "5", status: "success", duration_ms: 5, egress: ["why", 7, null, [1]]}'
		jq -nc '{id: "junk2", language: "python", code: "6", status: "success", duration_ms: 5, egress: "why"}'
	} | logr > /dev/null
	ids() { printf '%s\n' "${lines[@]}" | jq -sc 'map(.id)'; }
	run --separate-stderr hist --egress-refused; [ "$(ids)" = '["failed","refused"]' ]
	run --separate-stderr hist --egress-refused --status error --id refused; [ "$(ids)" = '["refused"]' ]
	# the record keeps each connection, in the default (preview) mode too
	run --separate-stderr hist --id refused --record
	jqe 0 '.record.egress[1] | .host == "evil.example" and .allowed == false and (.why | contains("registries"))'
	# a verdict's typo is a usage error, as a status's is, never "no rows"
	run --separate-stderr hist --verdict acepted
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == *'"acepted" is not a verdict (accepted, wrong_answer,'* ]]
	run --separate-stderr hist --verdict accepted,judge_error
	[ "$status" -eq 1 ]
	# retention takes no filter: a --principal or --egress-refused given
	# to --prune would have pruned every principal's runs
	for f in "--principal abc" --egress-refused "--verdict accepted"; do
		run --separate-stderr hist --prune --older-than 1d $f
		[ "$status" -eq 2 ]
		[[ "${stderr_lines[0]}" == *"--prune and --vacuum take no filters"* ]]
	done
	run --separate-stderr hist --limit 0; [ "$(ids)" = '["junk2","junk","failed","refused","clean","plain"]' ]
}

@test "cron exit codes: 0 with rows, 1 with none, 1 with no history yet, 2 on errors" {
	run --separate-stderr hist --status internal_error --since 1h
	[ "$status" -eq 1 ]
	[ "$stderr" = "sbx-history: no history at $SBX_HISTORY (from SBX_HISTORY): sbx-log makes it at its first run" ]
	# -d the same: exit 1, the path, no usage
	run --separate-stderr hist -d "$BATS_TEST_TMPDIR/missing.db"
	[ "$status" -eq 1 ]
	[ "$stderr" = "sbx-history: no history at $BATS_TEST_TMPDIR/missing.db (from -d): sbx-log makes it at its first run" ]
	results 1 | logr > /dev/null
	run --separate-stderr hist --status internal_error --since 1h
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	jq -nc '{id: "ie", language: "python", code: "x", status: "internal_error", error: "boom"}' | logr > /dev/null
	run --separate-stderr hist --status internal_error --since 1h
	[ "$status" -eq 0 ]
	jqe 0 '.id == "ie" and .error == "boom"'
	run --separate-stderr hist --jq 'select(false)'
	[ "$status" -eq 1 ]
	run --separate-stderr hist --jq '.['
	[ "$status" -eq 2 ]
	run --separate-stderr hist --jq '.id | tonumber'
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"--jq: row 1:"* ]]
	run --separate-stderr hist --format xml
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[1]}" == usage:* ]]
	# a typo in a cron query is a usage error naming what is valid, never "no rows"
	run --separate-stderr hist --status timout
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == *'"timout" is not a status (success, error, rejected, timeout,'* ]]
	run --separate-stderr hist --language cobol
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == *'"cobol" is not a configured language ('*python* ]]
	# a mistyped option: the one it nearly is
	run --separate-stderr hist --staus error
	[ "$status" -eq 2 ]
	[ "${stderr_lines[0]}" = "sbx-history: unknown option --staus: did you mean --status?" ]
	run --separate-stderr hist --older_than=30d
	[ "${stderr_lines[0]}" = "sbx-history: unknown option --older_than=30d: did you mean --older-than?" ]
	run --separate-stderr hist --bogus
	[ "${stderr_lines[0]}" = "sbx-history: unknown option --bogus" ]
}

# bats test_tags=valgrind
@test "formats: table aligned for people, csv quoted per RFC 4180, json by default" {
	jq -nc '{id: "q", language: "python", code: "print(\"a,b\")\nprint(2)", status: "success", duration_ms: 3}' | logr > /dev/null
	results 1 | logr > /dev/null
	run --separate-stderr hist --format csv
	[ "${lines[0]}" = "history_id,timestamp,id,language,status,exit_code,signal,duration_ms,cpu_ms,memory_peak_bytes,stdout_size,stderr_size,backend,compile_status,compile_ms,code_sha256,code_snippet,error,session_id,execution_count,verdict,tests_passed,tests_total,host,shard,attempt,checkpoint" ]
	# the quoted field holds a comma, a quote and a newline: parse it back
	python3 -c 'import csv,sys; rows = list(csv.DictReader(open(sys.argv[1]))); assert rows[0]["code_snippet"] == "print(\"a,b\")\nprint(2)", rows' <(hist --format csv)
	run --separate-stderr hist --format table
	[[ "${lines[0]}" == "history_id  timestamp"* ]]
	[ "${#lines[@]}" -eq 3 ]
	# columns line up: "status" starts at the same offset on every line
	col=$(printf '%s\n' "${lines[0]}" | awk '{ print index($0, "status") }')
	[ "$(printf '%s\n' "${lines[2]}" | cut -c"$col"-)" != "" ]
	[[ "$(printf '%s\n' "${lines[1]}" | cut -c"$col"-)" == success* ]]
	[[ "$(printf '%s\n' "${lines[2]}" | cut -c"$col"-)" == success* ]]
	# newlines in a cell never break a table row
	[[ "${lines[1]}" == *'print("a,b") print(2)' ]]
	# numbers in plain decimals, never 1.235e+04: four places at most in a
	# table, exact in csv
	jq -nc '{id: "n", language: "python", code: "1", status: "success", duration_ms: 12345.678912, memory_peak_bytes: 123456789012}' | logr > /dev/null
	run --separate-stderr hist --id n --format table --jq '{duration_ms, memory_peak_bytes, r: 0.1}'
	[ "${lines[1]}" = "12345.6789   123456789012       0.1" ]
	run --separate-stderr hist --id n --format csv --jq '{duration_ms, memory_peak_bytes}'
	[ "${lines[1]}" = "12345.678912,123456789012" ]
}

@test "control characters from a snippet never reach the terminal: escaped in table and csv, kept in json" {
	# ESC ] 0 ; … BEL retitles a terminal; ESC [ and C1's CSI (U+009B) program it
	jq -nc '{id: "esc", language: "python", code: "print(\"\u001b]0;pwned\u0007\u001b[31mred\u009b2J\u007f\")\n", status: "error", error: "bad \u001b[2J"}' | logr > /dev/null
	for f in table csv; do
		hist --format "$f" > "out.$f"
		hist --format "$f" --jq '{(.code_snippet): .error}' >> "out.$f"
		# not one C0 control but newline (and CSV's quoted ones), no DEL, no C1
		! LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "out.$f" || false
		grep -qF '\x1b]0;pwned\x07\x1b[31mred\u009b2J\x7f' "out.$f"
	done
	[ "$(hist --format json | jq -r .code_snippet)" = "$(printf 'print("\033]0;pwned\007\033[31mred\302\2332J\177")')" ]
	# text that reads other than it runs ("Trojan Source"): the bidi
	# controls and the line separator shown, not obeyed
	jq -nc '{id: "admin\u202e\u2066txt.exe\u2069\u200f", language: "python", code: "ok = 1 #\u202e } \u2066if admin\u2069\u2028x", status: "success"}' | logr > /dev/null
	for f in table csv; do
		hist --format "$f" --limit 1 > "bidi.$f"
		! LC_ALL=C.UTF-8 grep -qP '[\x{061c}\x{200e}\x{200f}\x{2028}\x{2029}\x{202a}-\x{202e}\x{2066}-\x{2069}]' "bidi.$f" || false
		grep -qF 'admin\u202e\u2066txt.exe\u2069\u200f' "bidi.$f"
		grep -qF 'ok = 1 #\u202e } \u2066if admin\u2069' "bidi.$f"
	done
	grep -qF 'ok = 1 #\u202e } \u2066if admin\u2069\u2028x' bidi.csv
	# the csv still parses, to the escaped text
	python3 -c 'import csv,sys; rows = list(csv.DictReader(open(sys.argv[1]))); assert rows[0]["error"] == "bad \\x1b[2J", rows' out.csv
}

# bats test_tags=valgrind
@test "--stats: counts, success rate, nearest-rank p50/p95/max; --by day series" {
	{
		for d in $(seq 1 100); do jq -nc --argjson d "$d" '{language: "python", code: "x", status: "success", duration_ms: $d, started_at: "2026-11-28T10:00:00.000Z"}'; done
		jq -nc '{language: "python", code: "x", status: "timeout", duration_ms: 10000, started_at: "2026-11-29T10:00:00.000Z"}'
		jq -nc '{language: "c", code: "x", status: "compile_error", duration_ms: 0, started_at: "2026-11-29T11:00:00.000Z"}'
		# neither a verdict on the code nor a program that ran: out of the rate and the "all" durations
		for i in 1 2 3; do jq -nc '{language: "python", code: "x", status: "invalid", duration_ms: 0, started_at: "2026-11-28T10:00:00.000Z"}'; done
		jq -nc '{language: "python", code: "x", status: "cancelled", duration_ms: 1, started_at: "2026-11-28T10:00:00.000Z"}'
	} | logr > /dev/null
	run --separate-stderr hist --stats
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 7 ]
	jqe 0 '.language == "c" and .status == "compile_error" and .count == 1 and .success_rate == 0'
	# "all": every run; the durations of those that ran (none: null)
	jqe 1 '.language == "c" and .status == "all" and .count == 1 and .p50_ms == null and .max_ms == null'
	jqe 2 '.language == "python" and .status == "cancelled" and .count == 1'
	jqe 3 '.language == "python" and .status == "invalid" and .count == 3'
	jqe 4 '.language == "python" and .status == "success" and .count == 100 and .p50_ms == 50 and .p95_ms == 95 and .max_ms == 100'
	jqe 5 '.language == "python" and .status == "timeout" and .count == 1 and .max_ms == 10000'
	jqe 6 '.status == "all" and .count == 105 and .success_rate == 0.9901 and .p50_ms == 51 and .max_ms == 10000'
	run --separate-stderr hist --stats --by day --language python --jq '"\(.bucket) \(.status) \(.count)"'
	[ "$(printf '%s\n' "${lines[@]}" | jq -r . | paste -sd' ')" = "2026-11-28T00:00:00.000Z cancelled 1 2026-11-28T00:00:00.000Z invalid 3 2026-11-28T00:00:00.000Z success 100 2026-11-28T00:00:00.000Z all 104 2026-11-29T00:00:00.000Z timeout 1 2026-11-29T00:00:00.000Z all 1" ]
	run --separate-stderr hist --stats --since 2026-11-29
	[ "${#lines[@]}" -eq 4 ]
	run --separate-stderr hist --by day
	[ "$status" -eq 2 ]
}

@test "--prune --older-than removes old runs, silently unless -v; never every run without --force; --vacuum" {
	{
		jq -nc '{id: "ancient", language: "python", code: "1", status: "success", started_at: "2019-01-01T00:00:00.000Z"}'
		jq -nc '{id: "old", language: "python", code: "1", status: "success", started_at: "2020-01-01T00:00:00.000Z"}'
		jq -nc '{id: "2021", language: "python", code: "1", status: "success", started_at: "2021-06-01T00:00:00.000Z"}'
	} | logr > /dev/null
	results 2 python fresh | jq -c --arg t "$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" '.started_at = $t' | logr > /dev/null
	# a cron line's typo: a bare number (meant as days), a unit too small
	for t in 30 0; do
		run --separate-stderr hist --prune --older-than "$t"
		[ "$status" -eq 2 ]
		[[ "${stderr_lines[0]}" == *"\"$t\" needs a unit"* ]]
	done
	run --separate-stderr hist --prune --older-than "$(date -u -d tomorrow +%F)"
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == "sbx-history: not pruned: every run in $SBX_HISTORY (5) is older than "*"; add --force if that is meant" ]]
	[ "$(sqlite3 "$SBX_HISTORY" 'SELECT count(*) FROM runs')" = 5 ]
	# a date, silently (cron mails only what matters)
	run --separate-stderr hist --prune --older-than 2020-06-01
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -z "$stderr" ]
	[ "$(sqlite3 "$SBX_HISTORY" 'SELECT count(*) FROM runs')" = 3 ]
	run --separate-stderr hist --prune --older-than 30d -v
	[ "$status" -eq 0 ]
	jqe 0 '.pruned == 1'
	run --separate-stderr hist --limit 0 --jq .id
	[ "${lines[*]}" = '"fresh-1" "fresh-0"' ]
	run --separate-stderr hist --prune --older-than 30d --vacuum --format table --verbose
	[[ "${lines[0]}" == "pruned 0 runs older than "* ]]
	# every run, meant: --force
	run --separate-stderr hist --prune --older-than 0s --force
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(sqlite3 "$SBX_HISTORY" 'SELECT count(*) FROM runs')" = 0 ]
	run --separate-stderr hist --force
	[ "$status" -eq 2 ]
	run --separate-stderr hist --prune
	[ "$status" -eq 2 ]
	run --separate-stderr hist --prune --older-than 30d --status error
	[ "$status" -eq 2 ]
}

@test "SQL injection through every filter value finds nothing and harms nothing" {
	results 3 | logr > /dev/null
	sum=$(sqlite3 "$SBX_HISTORY" 'SELECT count(*) FROM runs')
	for evil in "' OR '1'='1" "python' --" "x'; DROP TABLE runs; --" '" OR 1=1 --' "1 OR 1=1" "%" "_"; do
		# no such language or status: a usage error, before any SQL
		for opt in --language --status; do
			run --separate-stderr hist "$opt" "$evil"
			[ "$status" -eq 2 ] || { echo "$opt $evil: $output" >&2; false; }
		done
		for opt in --id --session; do
			run --separate-stderr hist "$opt" "$evil"
			[ "$status" -eq 1 ] || { echo "$opt $evil: $output" >&2; false; }
		done
		run --separate-stderr hist --stats --language "$evil"
		[ "$status" -eq 2 ]
		run --separate-stderr hist --since "$evil"
		[ "$status" -eq 2 ]
		run --separate-stderr hist --limit "$evil"
		[ "$status" -eq 2 ]
	done
	[ "$(sqlite3 "$SBX_HISTORY" 'SELECT count(*) FROM runs')" = "$sum" ]
	# and a record whose every field is hostile is stored as data
	jq -nc '{id: "x\u0027); DROP TABLE runs; --", language: "py\u0027thon", code: "\u0000\u0027\"", status: "success\u0027"}' | logr > /dev/null
	run --separate-stderr hist --id "x'); DROP TABLE runs; --"
	[ "$status" -eq 0 ]
	jqe 0 '.language == "py'"'"'thon" and .code_snippet == "\u0000'"'"'\""'
}

@test "the database location: -d, then SBX_HISTORY, then the configuration's history" {
	results 1 | logr -d "$BATS_TEST_TMPDIR/explicit.db" > /dev/null
	[ -s "$BATS_TEST_TMPDIR/explicit.db" ]
	[ ! -e "$SBX_HISTORY" ]
	results 1 | logr > /dev/null
	[ -s "$SBX_HISTORY" ]
	# relative to the configuration file's directory, wherever it is: the
	# shipped file's "../var" beside a copy, never a doubled path
	mkdir -p proj/etc copy
	sed 's|^history *=.*|history = "../var/from-conf.db"|' "$ROOT/etc/sandbox.conf" > proj/etc/sandbox.conf
	(unset SBX_HISTORY; results 1 | logr -c proj/etc/sandbox.conf > /dev/null)
	[ -s proj/var/from-conf.db ]
	cp "$ROOT/etc/sandbox.conf" copy/sandbox.conf
	(unset SBX_HISTORY; results 1 | logr -c copy/sandbox.conf > /dev/null)
	[ -s var/sandbox_history.db ]
	[ ! -e copy/var ]
	[ ! -e var/var ]
	# unset, it is in the state directory
	grep -v '^history *=' "$ROOT/etc/sandbox.conf" | sed 's|^state_dir *=.*|state_dir = "st"|' > copy/nohist.conf
	(unset SBX_HISTORY; results 1 | logr -c copy/nohist.conf > /dev/null)
	[ -s copy/st/sandbox_history.db ]
}

@test "sbx-log and sbx-history: --help, misuse" {
	run --separate-stderr logr --help
	[ "$status" -eq 0 ]
	[[ "$output" == usage:\ sbx-log* ]]
	run --separate-stderr logr --store-code everything
	[ "$status" -eq 2 ]
	[ "${stderr_lines[0]}" = 'sbx-log: --store-code: "everything" is not preview or full' ]
	run --separate-stderr hist --help
	[ "$status" -eq 0 ]
	run --separate-stderr hist --limit -1
	[ "$status" -eq 2 ]
	run --separate-stderr hist extra
	[ "$status" -eq 2 ]
}

@test "checkpoint events: sbx-log --event logs them, sbx-history --events lists them, a run's row names the checkpoint its session came from" {
	s=0123456789abcdef0123456789abcdef
	f=fedcba9876543210fedcba9876543210
	# a run of session s before anything, then a checkpoint, a fork, a restore, and runs after each
	jq -nc --arg s "$s" '{id: "r1", language: "python", status: "success", exit_code: 0, duration_ms: 1, session: $s}' | logr > /dev/null
	"$BIN/sbx-log" --event "$(jq -nc --arg s "$s" '{kind: "checkpoint", session_id: $s, checkpoint_id: "00000000000000aa", name: "base", method: "snapshot", duration_ms: 3.5}')"
	# (an event's time is when it happened, given by its maker: here now)
	"$BIN/sbx-log" --event "$(jq -nc --arg s "$s" --arg f "$f" --argjson t "$(date +%s.%N)" '[{kind: "fork", session_id: $f, from_session: $s, checkpoint_id: "00000000000000aa", timestamp: $t},
		{kind: "restore", session_id: $s, checkpoint_id: "00000000000000aa", timestamp: $t}]')"
	jq -nc --arg s "$s" --arg f "$f" '{id: "r2", language: "python", status: "success", exit_code: 0, duration_ms: 1, session: $s},
		{id: "r3", language: "python", status: "success", exit_code: 0, duration_ms: 1, session: $f},
		{id: "r4", language: "python", status: "success", exit_code: 0, duration_ms: 1}' | logr > /dev/null
	run --separate-stderr hist --events --jq '[.kind, .session_id[0:4], .checkpoint_id, .from_session, .name]'
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[2]}" = '["checkpoint","0123","00000000000000aa",null,"base"]' ]
	printf '%s\n' "${lines[@]}" | grep -qx '\["fork","fedc","00000000000000aa","0123456789abcdef0123456789abcdef",null\]'
	run --separate-stderr hist --events --session "$f"
	[ "${#lines[@]}" -eq 1 ]
	jqe 0 '.kind == "fork" and (has("principal") | not) and (.timestamp | test("Z$"))'
	# each run's row: the checkpoint its session's files came from when it ran
	run --separate-stderr hist --limit 0 --jq '[.id, .checkpoint]'
	[ "$(printf '%s ' "${lines[@]}")" = '["r4",null] ["r3","00000000000000aa"] ["r2","00000000000000aa"] ["r1",null] ' ]
	run --separate-stderr hist --events --format table
	[[ "${lines[0]}" == timestamp*session_id*kind*checkpoint_id* ]]
	# misuse
	run --separate-stderr hist --events --status success
	[ "$status" -eq 2 ]
	run --separate-stderr "$BIN/sbx-log" --event '{"kind": "nap", "session_id": "x", "checkpoint_id": "y"}'
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"known \"kind\""* ]]
	[ "$(sqlite3 "$SBX_HISTORY" 'SELECT count(*) FROM session_events')" = 3 ]
	# a field of another JSON type than its column's is stored as NULL
	"$BIN/sbx-log" --event "$(jq -nc --arg s "$s" '{kind: "delete", session_id: $s, checkpoint_id: "00000000000000bb", name: 7, duration_ms: "slow", bytes: 1.5}')"
	[ "$(sqlite3 "$SBX_HISTORY" "SELECT quote(name), quote(duration_ms), quote(bytes) FROM session_events WHERE kind = 'delete'")" = "NULL|NULL|NULL" ]
}
