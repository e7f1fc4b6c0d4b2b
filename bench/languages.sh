#!/usr/bin/env bash
# The language matrix (make bench): for each configured language and each
# backend that is usable here, whether all of t/lang's cases meet
# t/lang/expect.jq (the tests' own programs and expectations), the version
# the sandbox sees, and the median wall time of one hello world through
# sbx-run (one job per process; for a compiled language that is a
# compile-cache hit after the warm-up run, so the last column times it
# compiling, with --no-cache).
# Prints a Markdown table, the README's.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bench
mkdir -p "$B"
cc -O2 -o "$B/timeit" bench/timeit.c
rm -f "$B"/cases-*.jsonl "$B"/check-*.json "$B"/hello-*.m
N=${N:-10}
# the docker backend runs on t/docker/engine's engine and test image
# stop the engine afterwards only if this script started it
[ -f build/docker/started ] && own=false || own=true
t/docker/engine start 2> /dev/null
if $own; then trap 't/docker/engine stop' EXIT; fi
[ -f build/docker/host ] && export DOCKER_HOST=$(cat build/docker/host)
conf_of() { if [ "$1" = docker ]; then echo "$PWD/build/docker/sandbox.conf"; else echo "$PWD/etc/sandbox.conf"; fi; }

backends=()
for be in native docker; do
	export SBX_CONF=$(conf_of "$be")
	[ -f "$SBX_CONF" ] || continue
	if SBX_BACKEND=$be bin/sbx-run --check 2> /dev/null | jq -e --arg b "$be" '.backend == $b and .usable' > /dev/null 2>&1; then
		backends+=("$be")
		SBX_BACKEND=$be bin/sbx-run --check > "$B/check-$be.json" 2> /dev/null || true
		# sbx-run exits 1 when a job failed, as most cases do by design
		t/lang/requests.sh | SBX_BACKEND=$be bin/sbx-validate | SBX_BACKEND=$be bin/sbx-run -j 2 > "$B/cases-$be.jsonl" || true
	fi
done
langs=$(jq -r '.languages[].name' "$B/check-native.json")
export SBX_CONF=$PWD/etc/sandbox.conf

# cell BACKEND LANG: ✓, ✗ with the cases that missed, or why it is absent
cell() {
	local be=$1 l=$2 f="$B/cases-$1.jsonl" missed
	[ -f "$f" ] || { echo "–"; return; }
	if jq -e --arg l "$l" 'select(.id == "\($l)/hello" and .status == "invalid")' "$f" > /dev/null; then
		echo "✗ absent"; return
	fi
	missed=$(jq -c --arg l "$l" 'select(.id | startswith($l + "/"))' "$f" | jq -r -f t/lang/expect.jq | jq -rs 'map(.id | split("/")[1]) | join(", ")')
	if [ -z "$missed" ]; then echo "✓"; else echo "✗ ($missed)"; fi
}

# hello BACKEND LANG [sbx-run options]: median ms of a hello world, one
# sbx-run per job
hello() {
	local be=$1 l=$2 prog tag=${3:-}
	prog=$(ls t/lang/"$l"/hello.*)
	export SBX_CONF=$(conf_of "$be")
	jq -cn --rawfile c "$prog" --arg l "$l" '{language: $l, code: $c}' | SBX_BACKEND=$be bin/sbx-validate > "$B/hello-$l.json"
	if jq -e '.status == "invalid"' "$B/hello-$l.json" > /dev/null; then echo "–"; return; fi
	SBX_BACKEND=$be "$B/timeit" -n "$N" -w 1 -i "$B/hello-$l.json" -o "$B/hello-$be-$l$tag.m" -l "$be $l hello" -- bin/sbx-run $tag > /dev/null
	awk '{printf "%.0f ms", $2}' "$B/hello-$be-$l$tag.m"
}

echo "# languages: $(nproc) CPUs, Linux $(uname -r), backends measured: ${backends[*]}; hello world median of $N, one sbx-run per job, default limits (cpus = 0.5)"
echo
echo "| language | version in the sandbox | native | docker | hello world, native | hello world, docker | native, compiling (--no-cache) |"
echo "|---|---|---|---|---|---|---|"
for l in $langs; do
	v=$(jq -r --arg l "$l" '.languages[] | select(.name == $l) | .version // "–"' "$B/check-native.json")
	hn=$(hello native "$l")
	hc="–"
	compgen -G "t/lang/$l/compile_error.*" > /dev/null && hc=$(hello native "$l" --no-cache)
	hd="–"
	[[ " ${backends[*]} " == *" docker "* ]] && hd=$(hello docker "$l")
	echo "| $l | $v | $(cell native "$l") | $(cell docker "$l") | $hn | $hd | $hc |"
done
