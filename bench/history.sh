#!/usr/bin/env bash
# The history benchmark (part of make bench): how many records per second
# one sbx-log stores (default durability, then synchronous=FULL, then 8
# writers at once), and how long sbx-history takes over 1,000,000 rows
# (--stats, --stats --by day, the default newest-20 listing).  The records
# are shaped like sbx-run's results (about 700 bytes each).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bench/history
ROWS=${ROWS:-1000000}
rm -rf "$B"
mkdir -p "$B"
export SBX_CONF=$PWD/etc/sandbox.conf

# records N PREFIX: N result records, 4 languages, 6 statuses, spread over 30 days
records() {
	awk -v n="$1" -v p="$2" 'BEGIN {
		split("python javascript c cpp", lang, " ");
		split("success success success error timeout compile_error", st, " ");
		srand(7);
		for (i = 0; i < n; i++) {
			t = 1761955200 + int(i * 2592000 / n);
			printf "{\"id\":\"%s-%d\",\"language\":\"%s\",\"code\":\"import sys\\nprint(%d)\\n\",\"status\":\"%s\",", p, i, lang[i % 4 + 1], i, st[i % 6 + 1];
			printf "\"exit_code\":0,\"signal\":null,\"stdout\":\"%d\\n\",\"stderr\":\"\",\"stdout_bytes\":7,\"stderr_bytes\":0,", i;
			printf "\"stdout_truncated\":false,\"stderr_truncated\":false,\"duration_ms\":%.1f,\"cpu_ms\":11.0,", 5 + rand() * 200;
			printf "\"memory_peak_bytes\":9437184,\"started_at\":\"%s.%03dZ\",\"backend\":\"native\",\"compile\":null,", strftime("%Y-%m-%dT%H:%M:%S", t, 1), i % 1000;
			printf "\"limits\":{\"timeout_ms\":10000,\"memory_bytes\":268435456,\"cpus\":0.5,\"pids\":64,\"output_bytes\":102400},";
			printf "\"limits_enforced\":[\"namespaces\",\"seccomp\",\"timeout\",\"memory\",\"cpus\",\"pids\",\"rlimits\"]}\n";
		}
	}'
}

# rate LABEL N SECONDS
rate() { awk -v l="$1" -v n="$2" -v s="$3" 'BEGIN { printf "%-52s %8d records in %6.2f s = %7.0f records/s\n", l, n, s, n / s }'; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

echo "# sbx-log: records per second into one database ($(nproc) CPUs, $(df -T "$B" | awk 'NR==2 {print $2}') file system)"
records "$ROWS" big > "$B/big.jsonl"
t0=$(now); bin/sbx-log -d "$B/h.db" < "$B/big.jsonl" > /dev/null; t1=$(now)
rate "one sbx-log, synchronous=NORMAL (default)" "$ROWS" "$(secs "$t0" "$t1")"
[ -z "${SBX_BENCH_SUMMARY:-}" ] || awk -v n="$ROWS" -v s="$(secs "$t0" "$t1")" 'BEGIN {
	r = sprintf("%d", n / s + 0.5); c = ""
	while (length(r) > 3) { c = "," substr(r, length(r) - 2) c; r = substr(r, 1, length(r) - 3) }
	printf "`sbx-log` into one SQLite file\t%s%s records/s\n", r, c }' >> "$SBX_BENCH_SUMMARY"
head -n 100000 "$B/big.jsonl" > "$B/100k.jsonl"
t0=$(now); bin/sbx-log -d "$B/full.db" --sync full < "$B/100k.jsonl" > /dev/null; t1=$(now)
rate "one sbx-log, synchronous=FULL" 100000 "$(secs "$t0" "$t1")"
for w in $(seq 8); do records 12500 "w$w" > "$B/w$w.jsonl"; done
t0=$(now)
for w in $(seq 8); do bin/sbx-log -d "$B/conc.db" < "$B/w$w.jsonl" > /dev/null & done
wait
t1=$(now)
rate "8 sbx-log at once into one file (together)" 100000 "$(secs "$t0" "$t1")"
# one record at a time, as an interactive pipeline sends them: a commit each
t0=$(now)
head -n 2000 "$B/big.jsonl" | while IFS= read -r l; do printf '%s\n' "$l"; sleep 0.001; done | bin/sbx-log -d "$B/slow.db" > /dev/null
t1=$(now)
echo "one record per millisecond: $(sqlite3 "$B/slow.db" 'SELECT count(*) FROM runs') rows, $(secs "$t0" "$t1") s for 2000 (bounded by the sender)"

echo
echo "# sbx-history over $ROWS rows ($(du -h "$B/h.db" | cut -f1) file); wall ms"
cc -O2 -o "$B/timeit" bench/timeit.c
"$B/timeit" -n 5 -w 1 -l "sbx-history --stats" -- bin/sbx-history -d "$B/h.db" --stats
"$B/timeit" -n 5 -w 1 -l "sbx-history --stats --since 7d-window" -- bin/sbx-history -d "$B/h.db" --stats --since 2025-11-24 --until 2025-12-01
"$B/timeit" -n 5 -w 1 -l "sbx-history --stats --by day" -- bin/sbx-history -d "$B/h.db" --stats --by day
"$B/timeit" -n 5 -w 1 -l "sbx-history (newest 20)" -- bin/sbx-history -d "$B/h.db"
"$B/timeit" -n 5 -w 1 -l "sbx-history --status timeout --language c -n 100" -- bin/sbx-history -d "$B/h.db" --status timeout --language c -n 100
