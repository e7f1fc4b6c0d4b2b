#!/usr/bin/env bash
# The dashboard on a big history (make bench): ROWS runs (1,000,000) over
# 30 days in one SQLite file, served by sbx-mcp --listen; each page fetched
# ROUNDS times with curl, the median wall time reported.  The rows are
# written by SQL in one transaction (sbx-log would take a minute for the
# same); the schema is sbx-log's own, made by logging one record first.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=$ROOT/${BUILD:-build}/bench/dashboard
ROWS=${ROWS:-1000000} ROUNDS=${ROUNDS:-7}
mkdir -p "$B"
summary() { [ -z "${SBX_BENCH_SUMMARY:-}" ] || printf '%s\t%s\n' "$1" "$2" >> "$SBX_BENCH_SUMMARY"; }
db=$B/h.db
if [ ! -s "$db" ] || [ "$(sqlite3 "$db" 'SELECT count(*) FROM runs')" -ne "$ROWS" ]; then
	rm -f "$db" "$db"-wal "$db"-shm
	echo '{"id":"seed","language":"python","status":"success","code":"print(1)","duration_ms":1}' | bin/sbx-log -d "$db" > /dev/null
	now=$(date +%s)
	sqlite3 "$db" <<-SQL
		DELETE FROM runs;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $ROWS)
		INSERT INTO runs (timestamp, language, code_snippet, status, exit_code, duration_ms, stdout_size, stderr_size,
		                  run_id, backend, code_sha256)
		SELECT $now - 30 * 86400.0 * (1 - i * 1.0 / $ROWS),
		       CASE i % 5 WHEN 0 THEN 'python' WHEN 1 THEN 'bash' WHEN 2 THEN 'cpp' WHEN 3 THEN 'javascript' ELSE 'go' END,
		       'print(' || i || ')  # a generated run',
		       CASE WHEN i % 17 = 0 THEN 'error' WHEN i % 53 = 0 THEN 'timeout' WHEN i % 97 = 0 THEN 'compile_error' ELSE 'success' END,
		       CASE WHEN i % 17 = 0 THEN 1 ELSE 0 END,
		       5 + (i * 7919 % 1000) / 10.0, 10, 0, 'run-' || i, 'native', printf('%064d', i)
		FROM n;
	SQL
fi
export SBX_HISTORY=$db
sed -e 's/^dashboard *=.*/dashboard = "all"/' -e "s|^state_dir *=.*|state_dir = \"$B/var\"|" etc/sandbox.conf > "$B/test.conf"
token=bench-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$token" > "$B/tokens"
chmod 600 "$B/tokens"
bin/sbx-mcp -c "$B/test.conf" --listen 127.0.0.1:0 --token-file "$B/tokens" 2> "$B/srv.log" &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null' EXIT
url=
for _ in $(seq 100); do
	url=$(sed -n 's|.*serving MCP at \(http://[^ ]*\)/mcp .*|\1|p' "$B/srv.log")
	[ -n "$url" ] && break
	sleep 0.05
done
[ -n "$url" ] || { cat "$B/srv.log" >&2; exit 1; }
# median PATH: the median of ROUNDS fetches, in ms (after one to warm the page cache)
median() {
	curl -sS -o /dev/null -H "Authorization: Bearer $token" "$url$1"
	for _ in $(seq "$ROUNDS"); do
		curl -sS -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $token" "$url$1"
	done | sort -n | awk '{ v[NR] = $1 * 1000 } END { printf "%.1f", v[int((NR + 1) / 2)] }'
}
last=$(sqlite3 "$db" 'SELECT max(id) FROM runs')
deep=$(sqlite3 "$db" "SELECT printf('%.17g:%d', timestamp, id) FROM runs ORDER BY timestamp DESC, id DESC LIMIT 1 OFFSET 900000")
echo "# the dashboard on $ROWS runs over 30 days (median of $ROUNDS, ms, curl on loopback)"
printf '%-44s %10s\n' page ms
o24=$(median "/?range=24h"); printf '%-44s %10s\n' "overview, last 24 h" "$o24"
o7=$(median "/?range=7d"); printf '%-44s %10s\n' "overview, last 7 days" "$o7"
oall=$(median "/?range=all"); printf '%-44s %10s\n' "overview, all 30 days" "$oall"
p1=$(median "/runs"); printf '%-44s %10s\n' "runs, first page (50)" "$p1"
pd=$(median "/runs?before=$deep"); printf '%-44s %10s\n' "runs, the page 900,000 rows down (keyset)" "$pd"
pl=$(median "/runs?language=go&status=timeout"); printf '%-44s %10s\n' "runs, language and status filter" "$pl"
pr=$(median "/runs/$((last / 2))"); printf '%-44s %10s\n' "one run's page" "$pr"
pq=$(median "/runs?q=999999"); printf '%-44s %10s\n' "runs, text in the code (a full scan)" "$pq"
summary "dashboard on $ROWS runs: overview (last 24 h) / first page of runs / a page 900,000 rows down" "$o24 ms / $p1 ms / $pd ms"
