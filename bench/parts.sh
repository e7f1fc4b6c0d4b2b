#!/usr/bin/env bash
# bench/parts.sh [PART...]: the benchmark's parts in order, or only those
# named (make bench BENCH_ONLY="run guest": the sandbox's own rows, on the
# host and in the guests, without the hour the rest takes).  Run by make
# bench-run from the top of the tree with BUILD set.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
all=(sha256 run guest history mcp_rtt mcp_tokens live kernel checkpoint judge memory http docker languages scale dashboard)
if [ $# -eq 0 ] || [ "$1" = all ]; then set -- "${all[@]}"; fi
for p in "$@"; do
	case " ${all[*]} " in *" $p "*) ;; *) echo "bench: no part $p (parts: ${all[*]})" >&2; exit 2 ;; esac
done
first=1
for p in "$@"; do
	[ -n "$first" ] || echo
	first=
	case $p in
	sha256) echo "# SHA-256 (bench/sha256.c)"; "$B/bench/sha256" ;;
	run | guest | history | http | docker | languages | scale | dashboard) "bench/$p.sh" ;;
	mcp_rtt) echo "# MCP over stdio (bench/mcp_rtt.py)"; SBX_HISTORY=$PWD/$B/bench/mcp-history.db bench/mcp_rtt.py ;;
	mcp_tokens) bench/mcp_tokens.mjs ;;
	live) SBX_HISTORY=$PWD/$B/bench/mcp-history.db bench/live.py ;;
	kernel | checkpoint | judge | memory) "bench/$p.py" ;;
	esac
done
