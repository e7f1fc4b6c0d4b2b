#!/usr/bin/env bash
# sbx-mcp over HTTP (make bench): wrk against /healthz and against
# tools/list and run_code on /mcp (one session, keep-alive connections),
# and the 50 clients x 20 calls of the official SDK (t/mcp-client/load.mjs).
# The server runs with rate and in-flight limits lifted, so what is
# measured is the server, not its quotas.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bench/http
rm -rf "$B"
mkdir -p "$B"
command -v wrk > /dev/null || { echo "# wrk is not installed (make deps): skipped"; exit 0; }
D=${DURATION:-5}
TOKEN=bench-token-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN" > "$B/tokens"
chmod 600 "$B/tokens"
sed -e "s|^state_dir *=.*|state_dir = \"$PWD/$B/var\"|" -e "s|^history *=.*|history = \"$PWD/$B/var/h.db\"|" \
	-e 's|^rate *=.*|rate = 1000000|' -e 's|^burst *=.*|burst = 1000000|' -e 's|^max_inflight *=.*|max_inflight = 100000|' \
	etc/sandbox.conf > "$B/sandbox.conf"
# serve TOKEN_FILE: a server on a free port; $URL, $srv.
serve() {
	bin/sbx-mcp -c "$B/sandbox.conf" --listen 127.0.0.1:0 --token-file "$1" 2> "$B/server.log" &
	srv=$!
	for _ in $(seq 100); do
		URL=$(sed -n 's|.*serving MCP at \(http://[^ ]*\)/mcp .*|\1|p' "$B/server.log")
		[ -n "$URL" ] && return 0
		sleep 0.05
	done
	cat "$B/server.log" >&2
	return 1
}
serve "$B/tokens"
trap 'kill -TERM $srv 2>/dev/null; wait $srv 2>/dev/null || true' EXIT
H=(-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
SID=$(curl -s -D - -o /dev/null -X POST "$URL/mcp" "${H[@]}" \
	-d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}' |
	sed -n 's/^mcp-session-id: *//Ip' | tr -d '\r')
# post.lua BODY: every wrk request a POST of BODY in the session.
lua() {
	cat > "$B/$1.lua" <<LUA
wrk.method = "POST"
wrk.body = '$2'
wrk.headers["Authorization"] = "Bearer $TOKEN"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Session-Id"] = "$SID"
LUA
}
lua list '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
lua run '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"bash","code":"echo hi"}}}'
# w NAME CONNECTIONS [wrk args]: one line: requests/s, latency p50/p99, non-2xx.
w() {
	local name=$1 c=$2
	shift 2
	local out=$B/$(echo "$name" | tr -c 'a-z0-9\n' _).out
	wrk -t 2 -c "$c" -d "${D}s" --latency "$@" > "$out" 2>&1
	awk -v n="$name" -v c="$c" '
		/Requests\/sec/ { rps = $2 }
		/^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 }
		/Non-2xx/ { bad = $NF }
		/Socket errors/ { err = $0 }
		END { printf "%-34s %4d conns  %9.0f req/s  p50 %-8s p99 %-8s non-2xx %s%s\n", n, c, rps, p50, p99, bad ? bad : 0, err ? "  " err : "" }' "$out"
}
echo "# sbx-mcp over HTTP: $(nproc) CPUs; wrk -t 2 for ${D} s per line; server and wrk share the machine"
w "GET /healthz" 32 "$URL/healthz"
w "POST /mcp tools/list" 32 -s "$B/list.lua" "$URL/mcp"
w "POST /mcp run_code (bash echo)" 8 -s "$B/run.lua" "$URL/mcp"
if command -v node > /dev/null && [ -d t/mcp-client/node_modules/@modelcontextprotocol/sdk ]; then
	for i in $(seq 50); do echo "load-$i-$TOKEN"; done > "$B/tokens50"
	kill -TERM $srv; wait $srv || true
	serve "$B/tokens50"
	node t/mcp-client/load.mjs "$URL" "$B/tokens50" 50 20 |
		jq -r '"SDK: \(.clients) clients x \(.calls) run_code calls: \(.ok) ok, \(.wrong) wrong, \(.failed) failed in \(.seconds) s (\(.calls_per_second) calls/s)"'
fi
