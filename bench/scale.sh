#!/usr/bin/env bash
# What a batch past one machine costs (make bench): the same requests on
# this machine three ways, with the same parallelism (two at a time):
#   one:      sbx-validate | sbx-run -j 2 | sbx-cap
#   slurm:    sbx-slurm, K shards as a job array on the suite's single-node
#             Slurm (t/slurm/cluster), two tasks at once, sbx-batch -j 1 each
#   parallel: sbx-parallel over ssh to localhost (t/ssh/server), -S 2/…
# Each way runs ROUNDS times, interleaved (this VM's speed drifts); the
# table gives the median wall time and the overhead against one.  The
# engines' fixed costs (Slurm's scheduling, ssh connections, a pipeline per
# task) are what this measures: each request is a small program.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=$ROOT/${BUILD:-build}/bench/scale
N=${N:-400} K=${K:-4} ROUNDS=${ROUNDS:-3}
rm -rf "$B" && mkdir -p "$B"
export SBX_CONF=$ROOT/etc/sandbox.conf SBX_BIN=$ROOT/bin SBX_REMOTE_BIN=$ROOT/bin HOME=$B
summary() { [ -z "${SBX_BENCH_SUMMARY:-}" ] || printf '%s\t%s\n' "$1" "$2" >> "$SBX_BENCH_SUMMARY"; }

for ((i = 1; i <= N; i++)); do
	if ((i % 4 == 0)); then
		printf '{"id":"r%d","language":"python","code":"print(%d * %d)"}\n' "$i" "$i" "$i"
	else
		printf '{"id":"r%d","language":"bash","code":"echo $((%d * %d))"}\n' "$i" "$i" "$i"
	fi
done > "$B/req.jsonl"

echo "# a batch past one machine: $N small requests (3/4 bash, 1/4 Python), $K shards, 2 at a time, $ROUNDS rounds"
slurm=false ssh=false
if t/slurm/cluster start > "$B/slurm.log" 2>&1; then
	slurm=true
	eval "$(t/slurm/cluster env)"
else
	echo "# slurm: skipped: $(cat build/slurm/unavailable 2>/dev/null)"
fi
if t/ssh/server start > "$B/ssh.log" 2>&1; then
	ssh=true
	eval "$(t/ssh/server env)"
else
	echo "# parallel over ssh: skipped: $(cat build/ssh/unavailable 2>/dev/null)"
fi
stop() { $slurm && t/slurm/cluster stop > /dev/null 2>&1; $ssh && t/ssh/server stop > /dev/null 2>&1; }
trap stop EXIT

# exact FILE: the run gave one correct result per request, or the bench fails.
exact() {
	[ "$(jq -r .id "$1" | sort | uniq | wc -l)" -eq "$N" ] && [ "$(wc -l < "$1")" -eq "$N" ] &&
		jq -e -s 'all(.[]; .status == "success")' "$1" > /dev/null ||
		{ echo "scale: $1 is not $N successful results" >&2; exit 1; }
}
# timed NAME CMD...: run, append the wall seconds to $B/NAME.t
timed() {
	local name=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	"$@" > /dev/null 2> "$B/$name.err" || { echo "scale: $name failed:" >&2; tail -5 "$B/$name.err" >&2; exit 1; }
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc >> "$B/$name.t"
}
one() { bin/sbx-validate < "$B/req.jsonl" | bin/sbx-run -j 2 | bin/sbx-cap > "$B/one.jsonl"; }
on_slurm() {
	rm -rf "$B/slurm"
	share/launch/slurm/sbx-slurm "$B/req.jsonl" "$K" "$B/slurm" --cpus-per-task=1 --output="$B/slurm-%A_%a.out"
}
on_parallel() {
	rm -rf "$B/par"
	share/launch/parallel/sbx-parallel -N $((N / K)) "$B/req.jsonl" "$B/par" --ssh "$SBX_SSH" -S "2/$SBX_SSH_HOST"
}
for ((r = 1; r <= ROUNDS; r++)); do
	timed one one && exact "$B/one.jsonl"
	if $slurm; then timed slurm on_slurm && exact "$B/slurm/merged.jsonl"; fi
	if $ssh; then timed parallel on_parallel && exact "$B/par/merged.jsonl"; fi
done
median() { sort -n "$B/$1.t" | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'; }
base=$(median one)
printf '%-34s %10s %10s\n' way "wall s" "vs one"
printf '%-34s %10s %10s\n' "one machine (sbx-run -j 2)" "$base" "1.00x"
row=""
for way in slurm parallel; do
	[ -s "$B/$way.t" ] || continue
	m=$(median "$way")
	x=$(echo "scale=2; $m / $base" | bc)
	case $way in
	slurm) label="Slurm array, $K tasks (sbx-slurm)" ;;
	parallel) label="GNU parallel over ssh (sbx-parallel)" ;;
	esac
	printf '%-34s %10s %9sx\n' "$label" "$m" "$x"
	row="$row${row:+; }$way $m s (${x}x)"
done
[ -z "$row" ] || summary "$N small requests, 2 at a time: one machine vs $K Slurm array tasks / parallel over ssh" "$base s vs $row"
