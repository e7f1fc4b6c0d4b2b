#!/usr/bin/env bash
# The benchmark (make bench): what sbx-run costs beside the bare commands and
# bubblewrap, per run and in batches, on this machine, in one run.  Prints
# the measurements and a summary; the README quotes them.  Run as root so
# that the cgroup limits are on (they are part of the cost).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bench
mkdir -p "$B"
rm -f "$B"/*.m
cc -O2 -o "$B/timeit" bench/timeit.c
cc -O2 -o "$B/floor" bench/floor.c
# The floor: a launcher that makes a run's namespaces and cgroups and
# nothing else (bench/floor.c), what no sandbox made per run can go below.
if "$B/floor" -l -c -- true; then
	fl() { m "$@"; }
else
	echo "floor: cannot make namespaces and cgroups here: its rows are skipped"
	fl() { echo "0 0 0 0 0 0" >> "$B/$1.m"; }
fi
N=${N:-40}
# Jobs per batch.
NB=${NB:-200}
# Commands compared with each other are measured in ROUNDS interleaved
# rounds (bare, bubblewrap, sbx-run, bare, ...): this VM's speed drifts
# from one minute to the next, and back-to-back blocks would charge the
# drift to whichever command ran in the slow minute.
ROUNDS=${ROUNDS:-5}
export SBX_CONF=$PWD/etc/sandbox.conf
# The same with every sandbox's network namespace fresh (no slots, slot.h).
sed 's/^slots .*/slots = false/' etc/sandbox.conf > "$B/fresh.conf"
FRESH=(-c "$B/fresh.conf")
PY=/usr/bin/python3
# summary ROW VALUE: a row of the README's table (make bench writes them
# there, build-aux/bench-readme); nothing when not run by make bench.
summary() { [ -z "${SBX_BENCH_SUMMARY:-}" ] || printf '%s\t%s\n' "$1" "$2" >> "$SBX_BENCH_SUMMARY"; }
# m NAME ARGS...: measure, print, and add the mean to $B/NAME.m
m() { local name=$1; shift; "$B/timeit" -o "$B/$name.m" "$@"; }
# mean NAME [COLUMN]: the mean over every measurement of NAME (equal-sized
# rounds) of its wall time, or of COLUMN of timeit's -o line (5: the
# process tree's CPU, 6: the machine's)
mean() { awk -v k="${2:-1}" '{ s += $k; n++ } END { if (n) printf "%.3f\n", s / n }' "$B/$1.m"; }

echo "# $(nproc) CPUs, Linux $(uname -r), $(bin/sbx-run --check | jq -r '"cgroup " + .cgroup.version'), default configuration (cpus = 0.5 per run)"
echo "# wall ms per run, one process per run; cpu = user+system of the command's process tree,"
echo "# machine = the whole machine's busy time meanwhile (kernel workers included; 10 ms ticks)"
echo '{"language":"python","code":"print(1)"}' | bin/sbx-validate > "$B/py.json"
echo '{"language":"bash","code":"true"}' | bin/sbx-validate | jq -c '.exec.run = ["true"]' > "$B/true.json"
BWRAP=(bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/bin /bin
	--symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin --ro-bind /etc/ld.so.cache /etc/ld.so.cache
	--proc /proc --dev /dev --tmpfs /tmp --dir /scratch --chdir /scratch --clearenv --setenv PATH /usr/bin)
if command -v bwrap >/dev/null; then
	printf '#!/bin/sh\nexec %s %s -c "$1"\n' "${BWRAP[*]}" "$PY" > "$B/bwrap.sh"
	chmod +x "$B/bwrap.sh"
else
	echo "bwrap is not installed: skipped"
	echo "0 0 0 0 0" > "$B/bwrap.m"
	echo "0 0 0 0 0" > "$B/w2.m"
fi
per=$(((N + ROUNDS - 1) / ROUNDS))
for r in $(seq "$ROUNDS"); do
	echo "# round $r of $ROUNDS"
	m bare -n "$per" -l "bare: python3 -c 'print(1)'" -- $PY -c 'print(1)'
	if command -v bwrap >/dev/null; then
		m bwrap -n "$per" -l "bwrap, typical flags: print(1)" -- "${BWRAP[@]}" $PY -c 'print(1)'
	fi
	fl floor -n "$per" -l "floor (namespaces, loopback up, cgroups, exec: nothing else): print(1)" -- "$B/floor" -l -c -- $PY -c 'print(1)'
	m sbx -n "$per" -l "sbx-run, one job per process: print(1)" -i "$B/py.json" -- bin/sbx-run
	m sbxf -n "$per" -l "sbx-run, slots = false, one job per process: print(1)" -i "$B/py.json" -- bin/sbx-run "${FRESH[@]}"
	m truebare -n "$per" -l "bare: true" -- true
	fl floortrue -n "$per" -l "floor (namespaces, loopback up, cgroups, exec: nothing else): true" -- "$B/floor" -l -c -- true
	m sbxtrue -n "$per" -l "sbx-run, one job per process: true" -i "$B/true.json" -- bin/sbx-run
	m sbxtruef -n "$per" -l "sbx-run, slots = false, one job per process: true" -i "$B/true.json" -- bin/sbx-run "${FRESH[@]}"
done
awk -v bare="$(mean bare)" -v sbx="$(mean sbx)" -v bw="$(mean bwrap)" -v t="$(mean truebare)" -v st="$(mean sbxtrue)" \
    -v f="$(mean floor)" -v ft="$(mean floortrue)" 'BEGIN {
	printf "means over %d rounds: bare %.1f, floor %.1f, bwrap %.1f, sbx-run %.1f ms (print(1)); bare %.2f, floor %.1f, sbx-run %.1f ms (true)\n", '"$ROUNDS"', bare, f, bw, sbx, t, ft, st
}'

# The first run after sbx sat idle (a root built more than a minute ago,
# pin.h), beside the first bare `true` after as long: a machine idle for a
# minute is slower at anything for a moment (cold caches, a halted vCPU),
# and only what sbx-run pays beyond that is sbx's.  Rounds of 61 s each,
# so only on the host (not BENCH_SLOTS_ONLY).
if [ -z "${BENCH_SLOTS_ONLY:-}" ]; then
	echo
	echo "# one job per process (true), and bare true, each the first after 61 s with nothing running, against the runs right after it"
	for r in 1 2 3; do
		sleep 61
		m idlebare -n 1 -w 0 -l "bare true, first after 61 s idle" -- true
		m warmbare -n 5 -w 0 -l "bare true, the next 5" -- true
		sleep 61
		m idle -n 1 -w 0 -l "sbx-run, first run after 61 s idle: true" -i "$B/true.json" -- bin/sbx-run
		m warm -n 5 -w 0 -l "sbx-run, the next 5 runs: true" -i "$B/true.json" -- bin/sbx-run
	done
	awk -v i="$(mean idle)" -v w="$(mean warm)" -v bi="$(mean idlebare)" -v bw="$(mean warmbare)" 'BEGIN {
		printf "first run after idle: sbx-run %.2f ms against %.2f ms right after (%+.2f ms); bare true %.2f against %.2f ms (%+.2f ms)\n", i, w, i - w, bi, bw, bi - bw
	}'
fi

echo
echo "# batches of $NB print(1) jobs through one sbx-run (wall ms for all $NB)"
for i in $(seq "$NB"); do cat "$B/py.json"; done > "$B/pyNB.json"
for i in $(seq "$NB"); do echo 'print(1)'; done > "$B/pyNB.txt"
for i in $(seq "$NB"); do cat "$B/true.json"; done > "$B/trueNB.json"
for r in $(seq "$ROUNDS"); do
	echo "# round $r of $ROUNDS"
	m b1 -n 1 -w 0 -l "bare: $NB x python3, one at a time" -- xargs -a "$B/pyNB.txt" -d '\n' -n 1 -P 1 $PY -c
	m s1 -n 1 -w 0 -l "sbx-run -j 1: $NB jobs" -i "$B/pyNB.json" -- bin/sbx-run -j 1
	m s1f -n 1 -w 0 -l "sbx-run -j 1, slots = false: $NB jobs" -i "$B/pyNB.json" -- bin/sbx-run "${FRESH[@]}" -j 1
	fl f1 -n 1 -w 0 -l "floor: $NB x python3, one at a time, one process" -- "$B/floor" -l -c -n "$NB" -j 1 -- $PY -c 'print(1)'
	fl fs1 -n 1 -w 0 -l "floor -S (isolate-style slots): the same" -- "$B/floor" -S -l -c -n "$NB" -j 1 -- $PY -c 'print(1)'
	fl fk1 -n 1 -w 0 -l "floor -K (what sbx's slots keep): the same" -- "$B/floor" -K -l -c -n "$NB" -j 1 -- $PY -c 'print(1)'
	# The same with true: what a job costs when its program costs nothing.
	m tb1 -n 1 -w 0 -l "bare: $NB x true, one at a time" -- xargs -a "$B/pyNB.txt" -d '\n' -n 1 -P 1 true
	m ts1 -n 1 -w 0 -l "sbx-run -j 1: $NB true jobs" -i "$B/trueNB.json" -- bin/sbx-run -j 1
	fl tf1 -n 1 -w 0 -l "floor: $NB x true, one at a time, one process" -- "$B/floor" -l -c -n "$NB" -j 1 -- true
	fl tfs1 -n 1 -w 0 -l "floor -S (isolate-style slots): the same" -- "$B/floor" -S -l -c -n "$NB" -j 1 -- true
	fl tfk1 -n 1 -w 0 -l "floor -K (what sbx's slots keep): the same" -- "$B/floor" -K -l -c -n "$NB" -j 1 -- true
	m b2 -n 1 -w 0 -l "bare: $NB x python3, two at a time" -- xargs -a "$B/pyNB.txt" -d '\n' -n 1 -P 2 $PY -c
	m s2 -n 1 -w 0 -l "sbx-run -j 2: $NB jobs" -i "$B/pyNB.json" -- bin/sbx-run -j 2
	m s2f -n 1 -w 0 -l "sbx-run -j 2, slots = false: $NB jobs" -i "$B/pyNB.json" -- bin/sbx-run "${FRESH[@]}" -j 2
	fl f2 -n 1 -w 0 -l "floor: $NB x python3, two at a time, one process" -- "$B/floor" -l -c -n "$NB" -j 2 -- $PY -c 'print(1)'
	fl fn2 -n 1 -w 0 -l "floor without a network namespace: the same" -- "$B/floor" -N -c -n "$NB" -j 2 -- $PY -c 'print(1)'
	fl fs2 -n 1 -w 0 -l "floor -S (isolate-style slots): the same" -- "$B/floor" -S -l -c -n "$NB" -j 2 -- $PY -c 'print(1)'
	fl fk2 -n 1 -w 0 -l "floor -K (what sbx's slots keep): the same" -- "$B/floor" -K -l -c -n "$NB" -j 2 -- $PY -c 'print(1)'
	if command -v bwrap >/dev/null; then
		m w2 -n 1 -w 0 -l "bwrap: $NB x python3, two at a time" -- xargs -a "$B/pyNB.txt" -d '\n' -n 1 -P 2 "$B/bwrap.sh"
	fi
done

# BENCH_SLOTS_ONLY (bench/guest.sh): the sandboxes' rows above and their summary only.
if [ -z "${BENCH_SLOTS_ONLY:-}" ]; then
echo
echo "# the whole pipeline: sbx-validate | sbx-run | sbx-cap | sbx-log (print(1); its own history file)"
echo '{"language":"python","code":"print(1)"}' > "$B/req1.json"
for i in $(seq 1000); do echo '{"language":"python","code":"print(1)"}'; done > "$B/req1000.json"
PIPE="bin/sbx-validate | bin/sbx-run | bin/sbx-cap | SBX_HISTORY=$B/pipe.db bin/sbx-log"
m pipe1 -n 20 -l "pipeline, 1 job" -i "$B/req1.json" -- sh -c "$PIPE"
m pipe1000 -n 3 -w 1 -l "pipeline, 1000 jobs (-j default)" -i "$B/req1000.json" -- sh -c "$PIPE"
m run1000 -n 3 -w 1 -l "sbx-validate | sbx-run alone, 1000 jobs" -i "$B/req1000.json" -- sh -c "bin/sbx-validate | bin/sbx-run"
awk -v p="$(mean pipe1000)" -v r="$(mean run1000)" 'BEGIN { printf "sbx-cap + sbx-log add %.2f ms per job in a stream (wall, noisy)\n", (p - r) / 1000 }'
# Each record tool alone over the same 1,000 records (its own CPU per record).
bin/sbx-validate < "$B/req1000.json" > "$B/jobs1000.json"
bin/sbx-run < "$B/jobs1000.json" > "$B/res1000.json"
m val1000 -n 5 -l "sbx-validate alone, 1000 requests" -i "$B/req1000.json" -- bin/sbx-validate
m cap1000 -n 5 -l "sbx-cap alone, 1000 results" -i "$B/res1000.json" -- bin/sbx-cap
m log1000 -n 5 -l "sbx-log alone, 1000 results (a new file each time)" -i "$B/res1000.json" -- sh -c "rm -f $B/log1000.db && SBX_HISTORY=$B/log1000.db bin/sbx-log"
awk -v v="$(mean val1000)" -v c="$(mean cap1000)" -v l="$(mean log1000)" 'BEGIN { printf "per record: sbx-validate %.0f us, sbx-cap %.0f us, sbx-log %.0f us\n", v, c, l }'

echo
echo "# throughput: $NB print(1) jobs with -j 4 against bare with the same parallelism"
for r in $(seq 3); do
	m b4 -n 1 -w 0 -l "bare: $NB x python3, four at a time" -- xargs -a "$B/pyNB.txt" -d '\n' -n 1 -P 4 $PY -c
	m s4 -n 1 -w 0 -l "sbx-run -j 4: $NB jobs" -i "$B/pyNB.json" -- bin/sbx-run -j 4
done
awk -v b="$(mean b4)" -v s="$(mean s4)" 'BEGIN { printf "-j 4: %.0f%% of bare\n", 100 * b / s }'

echo
echo "# C++ hello world (g++ -O2): compile + run, and run only (a compile-cache hit)"
jq -cn '{language: "cpp", code: "#include <iostream>\nint main() { std::cout << \"hello\" << std::endl; }"}' | bin/sbx-validate > "$B/cpp.json"
printf '#include <iostream>\nint main() { std::cout << "hello" << std::endl; }\n' > "$B/hello.cpp"
m cppbare -n 10 -w 1 -l "bare: g++ -O2 + ./main" -- sh -c "g++ -std=c++17 -O2 -o $B/hello $B/hello.cpp && $B/hello"
m cppfull -n 10 -w 1 -l "sbx-run --no-cache: compile + run" -i "$B/cpp.json" -- bin/sbx-run --no-cache
bin/sbx-run < "$B/cpp.json" > /dev/null # store it
m cpphit -n 20 -l "sbx-run: cache hit + run" -i "$B/cpp.json" -- bin/sbx-run
m cppbarerun -n 20 -l "bare: ./main" -- "$B/hello"
awk -v f="$(mean cppfull)" -v h="$(mean cpphit)" 'BEGIN { printf "cache hit: %.1fx faster than compile + run\n", f / h }'
summary "C++ hello world, compile + run / compile-cache hit + run" "$(awk -v f="$(mean cppfull)" -v h="$(mean cpphit)" 'BEGIN { printf "%.0f ms / %.1f ms", f, h }')"
# Each stage takes a mount of the scratch of its own, cloned before the
# compile stage (directly since Linux 6.15; before, through a namespace of
# the supervisor's, whose detach waits for an RCU grace period).
for i in $(seq 20); do cat "$B/cpp.json"; done | bin/sbx-run --no-cache -j 1 --timings 2> /dev/null |
	jq -s -r '[.[].timings | .scratch_cloned - .files_written] | sort
		| "scratch cloned for the compile stage: \(.[length / 2 | floor] * 1000 | round) us (median of \(length))"'

fi
echo
echo "# where the time goes inside one run (ms since the stage was handed its job; warm sandbox)"
for i in $(seq 12); do cat "$B/py.json"; done | bin/sbx-run -j 1 --timings 2>/dev/null | tail -n 1 | jq -c '.timings.run_stage'
# A sandbox made for its job (one job per sbx-run process, `true`): the
# median of each mark over 30 runs, and the teardown after the result
# (sbx-run's stderr line).
for i in $(seq 30); do bin/sbx-run --timings < "$B/true.json" 2>> "$B/teardown.txt" | jq -c '.timings.run_stage'; done > "$B/cold.jsonl"
echo "# one job per process (true), medians over 30 runs, ms since the sandbox's making began:"
jq -s -r '(.[0] | keys_unsorted - ["warm", "slot", "slot_cgroups"]) as $k | [$k[] as $m | {m: $m, v: (map(.[$m] // empty) | sort | .[length / 2 | floor])}]
	| sort_by(.v) | map("\(.m) \(.v * 100 | round / 100)") | join(", ")' "$B/cold.jsonl"
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", v[int((NR + 1) / 2)] }'; }
sed -n 's/.*reaped at +\([0-9.]*\) ms and its cgroups removed at +\([0-9.]*\) ms/\1 \2/p' "$B/teardown.txt" > "$B/teardown.m"
echo "after the result: init reaped +$(cut -d' ' -f1 "$B/teardown.m" | median) ms, cgroups removed +$(cut -d' ' -f2 "$B/teardown.m" | median) ms (medians)"
rm -f "$B/teardown.txt" "$B/teardown.m"

summary "\`python3 -c 'print(1)'\`: bare / through \`sbx-run\`" "$(awk -v b="$(mean bare)" -v s="$(mean sbx)" 'BEGIN { printf "%.1f ms / %.1f ms", b, s }')"
summary "$NB Python jobs through one \`sbx-run\`, against bare: per job (-j 1) / throughput (-j 2)" "$(awk -v nb="$NB" -v b1="$(mean b1)" -v s1="$(mean s1)" -v b="$(mean b2)" -v s="$(mean s2)" 'BEGIN { printf "%+.2f ms / %.0f %%", (s1 - b1) / nb, 100 * b / s }')"

echo
echo "# summary"
awk -v nb="$NB" -v bare="$(mean bare)" -v sbx="$(mean sbx)" -v bw="$(mean bwrap)" -v t="$(mean truebare)" -v st="$(mean sbxtrue)" \
    -v barec="$(mean bare 5)" -v sbxc="$(mean sbx 5)" -v tc="$(mean truebare 5)" -v stc="$(mean sbxtrue 5)" \
    -v b1="$(mean b1)" -v s1="$(mean s1)" -v b2="$(mean b2)" -v s2="$(mean s2)" -v w2="$(mean w2)" \
    -v f="$(mean floor)" -v ft="$(mean floortrue)" -v f1="$(mean f1)" -v f2="$(mean f2)" -v fn2="$(mean fn2)" \
    -v fs1="$(mean fs1)" -v fs2="$(mean fs2)" \
    -v sf="$(mean sbxf)" -v stf="$(mean sbxtruef)" -v s1f="$(mean s1f)" -v s2f="$(mean s2f)" \
    -v tb1="$(mean tb1)" -v ts1="$(mean ts1)" -v tf1="$(mean tf1)" -v tfs1="$(mean tfs1)" -v tfk1="$(mean tfk1)" \
    -v fk1="$(mean fk1)" -v fk2="$(mean fk2)" 'BEGIN {
	printf "overhead per run, one job per sbx-run process: %+.1f ms (print(1)), %+.1f ms (true); bwrap %+.1f ms\n", sbx - bare, st - t, bw - bare
	printf "the same with slots = false (a fresh network namespace per run): %+.1f ms (print(1)), %+.1f ms (true)\n", sf - bare, stf - t
	if (f > 0) printf "the floor (namespaces, loopback up, cgroups, exec: nothing else): %+.1f ms (print(1)), %+.1f ms (true); sbx-run above it %+.1f, %+.1f ms\n", f - bare, ft - t, sbx - f, st - ft
	printf "CPU per run (process tree), one job per process: %+.1f ms (print(1)), %+.1f ms (true)\n", sbxc - barec, stc - tc
	printf "overhead per run inside a batch (-j 1):        %+.2f ms", (s1 - b1) / nb
	if (f1 > 0) printf "; the floor %+.2f ms, isolate-style slots (floor -S) %+.2f ms, what sbx keeps (floor -K) %+.2f ms", (f1 - b1) / nb, (fs1 - b1) / nb, (fk1 - b1) / nb
	printf "; slots = false %+.2f ms\n", (s1f - b1) / nb
	printf "the same with true:                            %+.2f ms", (ts1 - tb1) / nb
	if (tf1 > 0) printf "; the floor %+.2f ms, floor -S %+.2f ms, floor -K %+.2f ms", (tf1 - tb1) / nb, (tfs1 - tb1) / nb, (tfk1 - tb1) / nb
	printf "\n"
	printf "throughput with 2 at a time: sbx-run %.0f jobs/s = %.0f%% of bare (%.0f jobs/s)", 1000 * nb / s2, 100 * b2 / s2, 1000 * nb / b2
	if (w2 > 0) printf "; bwrap %.0f%%", 100 * b2 / w2
	if (f2 > 0) printf "; the floor %.0f%% (without a network namespace %.0f%%, isolate-style slots %.0f%%, what sbx keeps %.0f%%)", 100 * b2 / f2, 100 * b2 / fn2, 100 * b2 / fs2, 100 * b2 / fk2
	printf "; sbx-run slots = false %.0f%%\n", 100 * b2 / s2f
}'
# Where a batch's time goes: CPU per job of the process tree and of the
# whole machine (which adds kernel workers), and the CPUs' idle share.
ncpu=$(nproc)
for k in b1 s1 s1f f1 fs1 fk1 tb1 ts1 tf1 tfs1 tfk1 b2 s2 s2f f2 fn2 fs2 fk2 w2; do
	[ -s "$B/$k.m" ] && [ "$(mean $k)" != 0.000 ] || continue
	awk -v nb="$NB" -v k="$k" -v w="$(mean $k)" -v c="$(mean $k 5)" -v m="$(mean $k 6)" -v n="$ncpu" 'BEGIN {
		split("b1 bare -j1,s1 sbx-run -j 1,s1f fresh -j 1,f1 floor -j1,fs1 floor -S -j1,fk1 floor -K -j1,tb1 true bare,ts1 true sbx-run,tf1 true floor,tfs1 true floor -S,tfk1 true floor -K,b2 bare -j2,s2 sbx-run -j 2,s2f fresh -j 2,f2 floor -j2,fn2 floor -N -j2,fs2 floor -S -j2,fk2 floor -K -j2,w2 bwrap -j2", names, ",")
		for (i in names) if (index(names[i], k " ") == 1) name = substr(names[i], length(k) + 2)
		printf "CPU per job, %-13s process tree %5.1f ms, machine %5.1f ms; CPUs idle %2.0f%%\n", name ":", c / nb, m / nb, 100 * (1 - m / (n * w))
	}'
done
