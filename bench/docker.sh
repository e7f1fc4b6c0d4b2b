#!/usr/bin/env bash
# The docker backend beside the native one (make bench): wall time of one
# Python print(1) per run, through sbx-run with each backend (one job per
# sbx-run process, and per job inside a batch), and the seeds' way: the
# docker CLI's `docker run --rm` with the same image.  Needs an engine:
# t/docker/engine start uses the machine's or starts one of its own (and
# bench stops it again).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bench
mkdir -p "$B"
cc -O2 -o "$B/timeit" bench/timeit.c
rm -f "$B"/dk-*.m
N=${N:-20}
# stop the engine afterwards only if this script started it
[ -f build/docker/started ] && own=false || own=true
t/docker/engine start 2> /dev/null
if $own; then trap 't/docker/engine stop' EXIT; fi
if [ ! -f build/docker/host ]; then
	echo "# docker backend: not measured ($(cat build/docker/unavailable))"
	exit 0
fi
export DOCKER_HOST=$(cat build/docker/host)
DCONF=$PWD/build/docker/sandbox.conf
m() { local name=$1; shift; "$B/timeit" -o "$B/dk-$name.m" "$@"; }
med() { awk '{printf "%.1f", $2}' "$B/dk-$1.m"; }

echo '{"language":"python","code":"print(1)"}' | SBX_CONF=$PWD/etc/sandbox.conf bin/sbx-validate > "$B/dk-native.json"
echo '{"language":"python","code":"print(1)"}' | SBX_CONF=$DCONF bin/sbx-validate > "$B/dk-docker.json"
for i in $(seq 20); do cat "$B/dk-native.json"; done > "$B/dk-native20.json"
for i in $(seq 20); do cat "$B/dk-docker.json"; done > "$B/dk-docker20.json"
echo "# $(nproc) CPUs, Linux $(uname -r), $(docker version --format 'Docker {{.Server.Version}}'), image sbx-test:host (t/docker/engine), median of $N"
m bare -n "$N" -l "bare: python3 -c 'print(1)'" -- /usr/bin/python3 -c 'print(1)'
SBX_CONF=$PWD/etc/sandbox.conf m native -n "$N" -l "sbx-run, native backend" -i "$B/dk-native.json" -- bin/sbx-run
SBX_CONF=$DCONF m docker -n "$N" -l "sbx-run, docker backend" -i "$B/dk-docker.json" -- bin/sbx-run
m cli -n "$N" -l "the seeds' way: docker run --rm (CLI)" -- docker run --rm --network none --read-only -v /usr:/usr:ro \
	--memory 256m --memory-swap 256m --pids-limit 64 --cpus 0.5 --cap-drop ALL --security-opt no-new-privileges \
	--user 60001:60001 --log-driver none --init sbx-test:host python3 -c 'print(1)'
SBX_CONF=$PWD/etc/sandbox.conf m native20 -n 5 -w 1 -l "sbx-run -j 1, native: 20 jobs" -i "$B/dk-native20.json" -- bin/sbx-run -j 1
SBX_CONF=$DCONF m docker20 -n 5 -w 1 -l "sbx-run -j 1, docker: 20 jobs" -i "$B/dk-docker20.json" -- bin/sbx-run -j 1
echo
echo "| print(1), wall time per run (median) | ms |"
echo "|---|---|"
echo "| bare python3 | $(med bare) |"
echo "| sbx-run, native backend | $(med native) |"
echo "| sbx-run, docker backend (Engine API) | $(med docker) |"
echo "| the seeds' way: docker run --rm via the CLI | $(med cli) |"
awk -v n="$(awk '{print $2}' "$B/dk-native20.m")" -v d="$(awk '{print $2}' "$B/dk-docker20.m")" \
	'BEGIN { printf "| per job in a batch of 20: native / docker | %.1f / %.1f |\n", n / 20, d / 20 }'
