#!/bin/sh
# requests.sh [LANGUAGE...]: the requests of t/lang's cases as JSON lines,
# for all languages or the ones named.  Each LANGUAGE/CASE.EXT becomes one
# request with id "LANGUAGE/CASE"; expect.jq says what its result must be.
# The memory case has 30 s to reach its limit: a slow machine (a QEMU
# guest) takes seconds to grow bash's string to 128 MiB.
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
DATA=$(printf 'line one\nline two \303\274\n_') DATA=${DATA%_}
if [ $# -eq 0 ]; then
	set -- $(cd "$dir" && for d in */; do printf '%s\n' "${d%/}"; done)
fi
for lang; do
	for f in "$dir/$lang"/*.*; do
		[ -f "$f" ] || { echo "requests.sh: no programs for $lang" >&2; exit 2; }
		case=$(basename "$f"); case=${case%.*}
		jq -cn --rawfile code "$f" --arg lang "$lang" --arg case "$case" --arg data "$DATA" '
			{id: "\($lang)/\($case)", language: $lang, code: $code}
			+ (if $case == "stdin" then {stdin: $data}
			   elif $case == "file" then {files: {"data.txt": $data}}
			   elif $case == "timeout" then {timeout: 1}
			   elif $case == "memory" then {memory: "128m", timeout: 30}
			   else {} end)'
	done
done
