#!/usr/bin/env bats
# sbx-mcp --listen, spoken to with curl: every status code path of the
# Streamable HTTP transport (/mcp) and of HTTP+SSE (/sse, /messages), the
# token, Origin and Host checks, limits and quotas, sessions bound to their
# token, graceful shutdown, and sandboxed code trying to reach the server.
# The official SDK over HTTP is in t/65-mcp-sdk.bats.
load helpers

TOKEN=tok-aaaaaaaaaaaaaaaaaaaaaaaaaaaa
TOKEN2=tok-bbbbbbbbbbbbbbbbbbbbbbbbbbbb

local_setup() {
	conf=$(conf_with 's/^$//')
	printf '# two principals\n%s\n\n%s\n' "$TOKEN" "$TOKEN2" > tokens
	chmod 600 tokens
	SID=
	TOK=$TOKEN
}

teardown() {
	http_stop
	assert_no_leftovers
}

# set KEY VALUE: change a key of the test's configuration.
set_key() { sed -i "s|^$1 *=.*|$1 = $2|" "$conf"; }


# rpc JSON [curl args]: POST it to /mcp with the token ($TOK; AUTH replaces
# the whole header), session ($SID), Content-Type ($CT), Accept ($ACC).
rpc() {
	local json=$1 extra=()
	shift
	[ -n "$SID" ] && extra=(-H "Mcp-Session-Id: $SID")
	req POST /mcp -H "${AUTH-Authorization: Bearer $TOK}" -H "Content-Type: ${CT:-application/json}" \
		-H "Accept: ${ACC:-application/json, text/event-stream}" "${extra[@]}" "$@" --data-binary "$json"
}


initialize() {
	SID=
	rpc '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'
	[ "$code" = 200 ] || { echo "initialize: $code $(cat body)" >&2; return 1; }
	SID=$(hdr mcp-session-id)
}

# call ID TOOL ARGS [META]: a tools/call message.
call() {
	jq -nc --argjson id "$1" --arg name "$2" --argjson args "$3" --argjson meta "${4:-{\}}" \
		'{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: $name, arguments: $args, _meta: $meta}}'
}

# The JSON-RPC error message of an HTTP error body.
errmsg() { jq -r .error.message body; }

# bats test_tags=valgrind
@test "healthz needs no token and says nothing else; unknown paths 404; one access-log line per request" {
	http_serve
	req GET /healthz
	[ "$code" = 200 ]
	[ "$(cat body)" = '{"status":"ok"}' ]
	req POST /healthz
	[ "$code" = 405 ]
	req GET /admin -H "Authorization: Bearer $TOKEN"
	[ "$code" = 404 ]
	initialize
	# the log: peer, request line, status, size, time, token number, session
	grep -E '^sbx-mcp: 127\.0\.0\.1:[0-9]+ "GET /healthz" 200 16 [0-9.]+ms token=0 session=- rpc=-$' srv.log
	grep -E "\"POST /mcp\" 200 [0-9]+ [0-9.]+ms token=1 session=${SID:0:8} rpc=initialize$" srv.log
	[ "$(grep -c '^sbx-mcp: 127.0.0.1' srv.log)" -eq 4 ]
	# the token never appears in the log
	! grep -q "$TOKEN" srv.log || false
}

@test "401: no token, a wrong token, another scheme; WWW-Authenticate says Bearer" {
	http_serve
	AUTH= rpc '{"jsonrpc":"2.0","id":1,"method":"ping"}'
	[ "$code" = 401 ]
	[ "$(hdr www-authenticate)" = 'Bearer realm="sbx-mcp"' ]
	jq -e '.jsonrpc == "2.0" and .id == null and (.error.message | test("Bearer"))' body
	TOK=tok-cccccccccccccccccccccccccccc rpc '{"jsonrpc":"2.0","id":1,"method":"ping"}'
	[ "$code" = 401 ]
	hdr www-authenticate | grep -q 'error="invalid_token"'
	# a prefix of a good token is no good
	TOK=${TOKEN:0:20} rpc '{"jsonrpc":"2.0","id":1,"method":"ping"}'
	[ "$code" = 401 ]
	req POST /mcp -H "Authorization: Basic $(printf 'x:%s' "$TOKEN" | base64)" -H 'Content-Type: application/json' -d '{}'
	[ "$code" = 401 ]
	for p in /sse /messages; do
		req GET "$p"
		[ "$code" = 401 ]
	done
}

@test "403: a foreign Origin even with a good token, a DNS-rebinding Host; own origin, configured origins and hosts pass" {
	set_key origins '["https://app.example.com"]'
	set_key hosts '["mcp.internal"]'
	http_serve
	ping='{"jsonrpc":"2.0","id":1,"method":"ping"}'
	initialize
	rpc "$ping" -H 'Origin: https://evil.example'
	[ "$code" = 403 ]
	[[ "$(errmsg)" == *Origin* ]]
	rpc "$ping" -H 'Origin: null'
	[ "$code" = 403 ]
	# a page on another local port is another origin
	rpc "$ping" -H "Origin: http://127.0.0.1:1"
	[ "$code" = 403 ]
	rpc "$ping" -H 'Host: attacker.example:80'
	[ "$code" = 403 ]
	[[ "$(errmsg)" == *Host* ]]
	# a good name with anything but a port after it
	for h in '127.0.0.1:8000@evil.example' '127.0.0.1:80x' 'localhost:' '127.0.0.1:99999' '[::1]x' '[::1]:8000:1' 'mcp.internal.'; do
		rpc "$ping" -H "Host: $h"
		[ "$code" = 403 ] || { echo "Host: $h got $code"; false; }
	done
	# the server's own origin, a configured one (with CORS headers), IP and configured hosts
	rpc "$ping" -H "Origin: $URL"
	[ "$code" = 200 ]
	rpc "$ping" -H 'Origin: https://app.example.com'
	[ "$code" = 200 ]
	[ "$(hdr access-control-allow-origin)" = https://app.example.com ]
	[ "$(hdr access-control-expose-headers)" = Mcp-Session-Id ]
	rpc "$ping" -H 'Host: mcp.internal:8000'
	[ "$code" = 200 ]
	rpc "$ping" -H 'Host: [::1]:8000'
	[ "$code" = 200 ]
	# CORS preflight: only for an allowed origin, and it needs no token
	req OPTIONS /mcp -H 'Origin: https://app.example.com' -H 'Access-Control-Request-Method: POST'
	[ "$code" = 204 ]
	hdr access-control-allow-headers | grep -q Mcp-Session-Id
	req OPTIONS /mcp -H 'Origin: https://evil.example'
	[ "$code" = 403 ]
}

# bats test_tags=valgrind
@test "Streamable HTTP: a session at initialize; JSON answers; 202 for notifications; an event stream when the call sends progress" {
	http_serve
	initialize
	[[ "$SID" =~ ^[0-9a-f]{64}$ ]]
	jq -e '.id == 0 and .result.serverInfo.name == "sbx"' body
	[ "$(hdr content-type)" = application/json ]
	rpc '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	[ "$code" = 202 ]
	[ ! -s body ]
	rpc "$(call 1 run_code '{"language":"python","code":"print(6*7)"}')"
	[ "$code" = 200 ]
	[ "$(hdr content-type)" = application/json ]
	jq -e '.id == 1 and .result.structuredContent.stdout == "42\n"' body
	# progress requested and an event stream accepted: the progress, then the answer
	rpc "$(call 2 run_code '{"language":"c","code":"int main(void){return 3;}"}' '{"progressToken":"p"}')"
	[ "$code" = 200 ]
	[[ "$(hdr content-type)" == text/event-stream* ]]
	sed -n 's/^data: //p' body > events
	# (a heartbeat, "still running", comes between them past progress_interval: under valgrind's load)
	[ "$(jq -r 'select(.method == "notifications/progress" and .params.message != "still running") | .params.message' events | tr '\n' ,)" = "queued,compiling,running,done," ] || { cat events >&2; false; }
	jq -se '.[-1].id == 2 and .[-1].result.structuredContent.exit_code == 3' events
	beats=$(jq -s 'map(select(.params.message? == "still running")) | length' events)
	[ "$(grep -c '^event: message$' body)" -eq $((5 + beats)) ]
	# progress requested but only JSON accepted: just the answer
	ACC=application/json rpc "$(call 3 run_code '{"language":"python","code":"print(1)"}' '{"progressToken":"p"}')"
	[ "$code" = 200 ]
	[ "$(hdr content-type)" = application/json ]
	jq -e '.id == 3' body
	# a response from the client (nothing to match) is accepted too
	rpc '{"jsonrpc":"2.0","id":77,"result":{}}'
	[ "$code" = 202 ]
	# cancellation: the cancelled call's POST ends without an answer
	rpc "$(call 4 run_code '{"language":"python","code":"import time; time.sleep(30)"}')" &
	await_program '^python3 '
	code2=$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$URL/mcp" -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID" \
		-H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}')
	[ "$code2" = 202 ]
	wait $!
	[ "$code" = 202 ]
	[ ! -s body ]
}

@test "404: unknown, another token's, deleted and expired sessions; a token's sandbox sessions are its own" {
	set_key session_ttl 1
	http_serve
	ping='{"jsonrpc":"2.0","id":1,"method":"ping"}'
	SID=$(printf '%064d' 0)
	rpc "$ping"
	[ "$code" = 404 ]
	[[ "$(errmsg)" == *"initialize again"* ]]
	initialize
	a=$SID
	TOK=$TOKEN2 rpc "$ping"
	[ "$code" = 404 ]
	rpc "$ping"
	[ "$code" = 200 ]
	# a sandbox session made with one token is unknown to the other
	rpc "$(call 2 sandbox_initialize '{}')"
	ws=$(jq -r .result.structuredContent.session_id body)
	[[ "$ws" =~ ^[0-9a-f]{32}$ ]]
	TOK=$TOKEN2 initialize
	TOK=$TOKEN2 rpc "$(call 3 write_file "{\"session_id\":\"$ws\",\"path\":\"x\",\"content\":\"y\"}")"
	jq -e '.result.isError == true and (.result.content[0].text | test("unknown session"))' body
	b=$SID
	SID=$a
	rpc "$(call 4 write_file "{\"session_id\":\"$ws\",\"path\":\"x\",\"content\":\"y\"}")"
	jq -e '.result.structuredContent.bytes == 1' body
	# its files as resources: the owner's only
	rpc '{"jsonrpc":"2.0","id":5,"method":"resources/list"}'
	jq -e --arg u "sbx://session/$ws/x" '[.result.resources[].uri] == [$u]' body
	SID=$b
	TOK=$TOKEN2 rpc '{"jsonrpc":"2.0","id":6,"method":"resources/list"}'
	jq -e '.result.resources == []' body
	TOK=$TOKEN2 rpc "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/read\",\"params\":{\"uri\":\"sbx://session/$ws/x\"}}"
	jq -e '.error.code == -32002' body
	SID=$a
	# DELETE ends it
	req DELETE /mcp -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID"
	[ "$code" = 204 ]
	rpc "$ping"
	[ "$code" = 404 ]
	req DELETE /mcp -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID"
	[ "$code" = 404 ]
	# idle past session_ttl (1 s): expired
	initialize
	sleep 2.5
	rpc "$ping"
	[ "$code" = 404 ]
	grep -q "session ${SID:0:8} expired" srv.log
}

@test "405, 415, 406, 400: methods, media types, the protocol version header, a missing session, bad JSON, batches" {
	http_serve
	initialize
	auth=(-H "Authorization: Bearer $TOK")
	req GET /mcp "${auth[@]}" -H 'Accept: application/json' -H "Mcp-Session-Id: $SID"
	[ "$code" = 406 ]
	req GET /mcp "${auth[@]}" -H 'Accept: text/event-stream'
	[ "$code" = 400 ]
	req PUT /mcp "${auth[@]}"
	[ "$code" = 405 ]
	[ "$(hdr allow)" = "GET, POST, DELETE" ]
	req GET /messages "${auth[@]}"
	[ "$code" = 405 ]
	req POST /sse "${auth[@]}" -H 'Content-Type: application/json' -d '{}'
	[ "$code" = 405 ]
	ping='{"jsonrpc":"2.0","id":1,"method":"ping"}'
	CT=text/plain rpc "$ping"
	[ "$code" = 415 ]
	ACC=text/html rpc "$ping"
	[ "$code" = 406 ]
	rpc "$ping" -H 'MCP-Protocol-Version: 1999-01-01'
	[ "$code" = 400 ]
	[[ "$(errmsg)" == *MCP-Protocol-Version* ]]
	rpc "$ping" -H 'MCP-Protocol-Version: 2025-06-18'
	[ "$code" = 200 ]
	SID= rpc "$ping"
	[ "$code" = 400 ]
	[[ "$(errmsg)" == *Mcp-Session-Id* ]]
	rpc '{"jsonrpc":"2.0","id":1,'
	[ "$code" = 400 ]
	jq -e '.error.code == -32700 and .id == null' body
	rpc '[{"jsonrpc":"2.0","id":1,"method":"ping"}]'
	[ "$code" = 400 ]
	jq -e '.error.code == -32600' body
	rpc ''
	[ "$code" = 400 ]
	# JSON-RPC errors inside a good request are answers (200), as over stdio
	rpc '{"jsonrpc":"2.0","id":5,"method":"no/such"}'
	[ "$code" = 200 ]
	jq -e '.id == 5 and .error.code == -32601' body
}

# bats test_tags=valgrind
@test "413: a body over max_body, declared or streamed in chunks, is refused and not kept" {
	set_key max_body '"64k"'
	http_serve
	initialize
	head -c 70000 /dev/zero | tr '\0' x > big
	rpc @big
	[ "$code" = 413 ]
	[[ "$(errmsg)" == *max_body* ]]
	# chunked: no Content-Length to refuse up front
	code=$(head -c 200000 /dev/zero | tr '\0' x | curl -sS -o body -w '%{http_code}' -X POST "$URL/mcp" \
		-H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID" -H 'Content-Type: application/json' \
		-H 'Transfer-Encoding: chunked' --data-binary @-)
	[ "$code" = 413 ]
	# just under the limit is a message like any other
	code_ok=$(jq -nc --arg c "print(len('$(head -c 60000 /dev/zero | tr '\0' y)'))" \
		'{jsonrpc:"2.0",id:9,method:"tools/call",params:{name:"run_code",arguments:{language:"python",code:$c}}}' > ok.json; rpc @ok.json; echo "$code")
	[ "$code_ok" = 200 ]
	jq -e '.result.structuredContent.stdout == "60000\n"' body
	# the server is still there
	req GET /healthz
	[ "$code" = 200 ]
}

@test "sandbox sessions per token: max_sessions_per_token of them, whatever the others hold" {
	set_key max_sessions_per_token 2
	http_serve
	initialize
	for i in 1 2 3; do
		rpc "$(call $i sandbox_initialize '{}')"
		cp body "made.$i"
	done
	jq -e '.result.structuredContent.session_id | test("^[0-9a-f]{32}$")' made.1 made.2
	jq -e '.result.isError == true and (.result.content[0].text | contains("max_sessions_per_token 2"))' made.3
	# another token's quota is its own
	TOK=$TOKEN2 initialize
	TOK=$TOKEN2 rpc "$(call 4 sandbox_initialize '{}')"
	jq -e '.result.structuredContent.session_id | test("^[0-9a-f]{32}$")' body
	[ "$(ls "$BATS_TEST_TMPDIR/var/sessions" | grep -vc lock)" = 3 ]
}

@test "run_cell's kernels per token: max_kernels_per_token of them; a reset replaces its own; another token's are its own" {
	cmp -s "$ROOT/share/python/sbx_kernel.py" /usr/local/share/sbx/python/sbx_kernel.py || skip "the kernels are not installed (make deps)"
	set_key max_kernels_per_token 1
	http_serve
	initialize
	for i in 1 2; do
		rpc "$(call $i sandbox_initialize '{"language":"python"}')"
		jq -r .result.structuredContent.session_id body > "sid.$i"
	done
	rpc "$(call 3 run_cell "$(jq -nc --arg s "$(cat sid.1)" '{session_id: $s, code: "a = 1"}')")"
	jq -e '.result.structuredContent.status == "success" and .result.structuredContent.kernel == "started"' body
	rpc "$(call 4 run_cell "$(jq -nc --arg s "$(cat sid.2)" '{session_id: $s, code: "1"}')")"
	jq -e '.result.isError == true and (.result.content[0].text | contains("max_kernels_per_token 1"))' body
	rpc "$(call 5 run_cell "$(jq -nc --arg s "$(cat sid.1)" '{session_id: $s, code: "a", reset: true}')")"
	jq -e '.result.structuredContent.status == "error" and .result.structuredContent.kernel == "restarted"' body
	TOK=$TOKEN2 initialize
	TOK=$TOKEN2 rpc "$(call 6 sandbox_initialize '{"language":"python"}')"
	TOK=$TOKEN2 rpc "$(call 7 run_cell "$(jq -nc --arg s "$(jq -r .result.structuredContent.session_id body)" '{session_id: $s, code: "2"}')")"
	jq -e '.result.structuredContent.value == "2"' body
	# a session stopped frees its kernel's place
	initialize
	rpc "$(call 8 sandbox_stop "$(jq -nc --arg s "$(cat sid.1)" '{session_id: $s}')")"
	rpc "$(call 9 run_cell "$(jq -nc --arg s "$(cat sid.2)" '{session_id: $s, code: "3"}')")"
	jq -e '.result.structuredContent.value == "3"' body
}

@test "get_execution_history over HTTP: each token sees its own runs only; the command line sees them all" {
	http_serve
	initialize
	rpc "$(call 1 run_code '{"language":"python","code":"print(\"mine\")"}')"
	jq -e '.result.structuredContent.status == "success"' body
	rpc "$(call 2 get_execution_history '{}')"
	jq -e '.result.structuredContent.runs | length == 1 and .[0].code_snippet == "print(\"mine\")"' body
	TOK=$TOKEN2 initialize
	TOK=$TOKEN2 rpc "$(call 3 get_execution_history '{}')"
	jq -e '.result.structuredContent.runs == []' body
	TOK=$TOKEN2 rpc "$(call 4 get_execution_history '{"stats":true}')"
	jq -e '.result.structuredContent.stats == []' body
	TOK=$TOKEN2 rpc "$(call 5 run_code '{"language":"python","code":"print(\"theirs\")"}')"
	TOK=$TOKEN2 rpc "$(call 6 get_execution_history '{}')"
	jq -e '.result.structuredContent.runs | length == 1 and .[0].code_snippet == "print(\"theirs\")"' body
	# the operator's view: both, each with its principal
	[ "$("$BIN/sbx-history" -c "$conf" --limit 0 | wc -l)" = 2 ]
	[ "$(sqlite3 "$SBX_HISTORY" 'SELECT count(DISTINCT principal) FROM runs WHERE length(principal) = 16')" = 2 ]
}

@test "429: the rate limit, the in-flight quota and the session quota, each with Retry-After" {
	set_key rate 0.5
	set_key burst 3
	set_key max_inflight 1
	set_key max_sessions 2
	http_serve
	ping='{"jsonrpc":"2.0","id":1,"method":"ping"}'
	initialize
	rpc "$ping"
	[ "$code" = 200 ]
	rpc "$ping"
	[ "$code" = 200 ]
	rpc "$ping"
	[ "$code" = 429 ]
	[ "$(hdr retry-after)" -ge 1 ]
	[[ "$(errmsg)" == *rate* ]]
	wait_s=$(hdr retry-after)
	# the other token has its own bucket
	mine=$SID
	TOK=$TOKEN2 initialize
	SID=$mine
	# healthz is never limited
	req GET /healthz
	[ "$code" = 200 ]
	sleep "$wait_s"
	sleep 2.1 # two more requests' worth
	# in flight: one call at a time for this token
	curl -sS -o slow.json -X POST "$URL/mcp" -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID" \
		-H 'Content-Type: application/json' -d "$(call 2 run_code '{"language":"python","code":"import time; time.sleep(1.5)"}')" &
	sleep 0.5
	rpc "$(call 3 run_code '{"language":"python","code":"print(1)"}')"
	[ "$code" = 429 ]
	[ "$(hdr retry-after)" = 1 ]
	[[ "$(errmsg)" == *max_inflight* ]]
	wait $!
	# sessions: two per token
	set_key rate 100
	http_stop
	http_serve
	initialize
	initialize
	SID=
	rpc '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}'
	[ "$code" = 429 ]
	[[ "$(errmsg)" == *max_sessions* ]]
	[ -z "$(hdr mcp-session-id)" ]
}

@test "2026-07-28 needs no session: each request stands alone" {
	http_serve
	meta='{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'
	rpc "$(jq -nc --argjson m "$meta" '{jsonrpc:"2.0",id:1,method:"server/discover",params:{_meta:$m}}')" -H 'MCP-Protocol-Version: 2026-07-28'
	[ "$code" = 200 ]
	[ -z "$(hdr mcp-session-id)" ]
	jq -e '.result.resultType == "complete" and (.result.supportedVersions | index("2026-07-28"))' body
	rpc "$(call 2 run_code '{"language":"python","code":"print(2)"}' "$meta")" -H 'MCP-Protocol-Version: 2026-07-28'
	[ "$code" = 200 ]
	jq -e '.result.structuredContent.stdout == "2\n" and .result.resultType == "complete"' body
	# the tasks extension: a long run is a task, polled from later requests, each alone
	ext='{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}'
	rpc "$(call 3 run_code '{"language":"python","code":"import time\ntime.sleep(2)\nprint(3)"}' "$ext")" -H 'MCP-Protocol-Version: 2026-07-28'
	jq -e '.result.resultType == "task" and .result.status == "working"' body
	task=$(jq -r .result.taskId body)
	for _ in $(seq 40); do
		rpc "$(jq -nc --arg t "$task" --argjson m "$meta" '{jsonrpc:"2.0",id:4,method:"tasks/get",params:{taskId:$t,_meta:$m}}')" -H 'MCP-Protocol-Version: 2026-07-28'
		[ "$(jq -r .result.status body)" = working ] || break
		sleep 0.25
	done
	jq -e '.result.status == "completed" and .result.result.structuredContent.stdout == "3\n"' body
	# another token does not see it
	TOK=$TOKEN2 rpc "$(jq -nc --arg t "$task" --argjson m "$meta" '{jsonrpc:"2.0",id:5,method:"tasks/get",params:{taskId:$t,_meta:$m}}')" -H 'MCP-Protocol-Version: 2026-07-28'
	jq -e '.error.code == -32602' body
}

@test "the compile cache is each token's own: the same source compiled by another token is no hit, unless compile_cache_shared" {
	http_serve
	meta='{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'
	prog() { jq -nc --arg w "$1" '{language: "c", code: "#include <stdio.h>\nint main(void){puts(\"\($w)\");return 0;}"}'; }
	# cached ID PROGRAM: compile.cached of that run, as the token $TOK
	cached() {
		rpc "$(call "$1" run_code "$2" "$meta")" -H 'MCP-Protocol-Version: 2026-07-28'
		jq -r '.result.structuredContent | if .status == "success" then .compile.cached else tojson end' body
	}
	a=$(prog one)
	[ "$(cached 1 "$a")" = false ]
	[ "$(TOK=$TOKEN2 cached 2 "$a")" = false ]
	[ "$(cached 3 "$a")" = true ]
	[ "$(TOK=$TOKEN2 cached 4 "$a")" = true ]
	# one cache for all, where the configuration says so
	http_stop
	set_key compile_cache_shared true
	http_serve
	b=$(prog two)
	[ "$(cached 5 "$b")" = false ]
	[ "$(TOK=$TOKEN2 cached 6 "$b")" = true ]
}

@test "runs are shared fairly between tokens: another token's backlog of slow runs delays a one-line run by about one run" {
	sed -i 's/^max_concurrent .*/max_concurrent = 1/' "$conf"
	http_serve
	meta='{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'
	slow=$(call 1 run_code '{"language":"python","code":"import time; time.sleep(2)"}' "$meta")
	# six slow runs of the first token, queued one behind the other
	pids=()
	for i in 1 2 3 4 5 6; do
		curl -sS -o "slow$i.json" -X POST "$URL/mcp" -H "Authorization: Bearer $TOKEN" -H 'MCP-Protocol-Version: 2026-07-28' \
			-H 'Content-Type: application/json' -H 'Accept: application/json' -d "$slow" &
		pids+=($!)
	done
	# (once the first of them runs, the others queued behind it)
	await_program '^python3 main.py'
	t0=$(date +%s%N)
	TOK=$TOKEN2 rpc "$(call 2 run_code '{"language":"python","code":"print(2)"}' "$meta")" -H 'MCP-Protocol-Version: 2026-07-28'
	ms=$((($(date +%s%N) - t0) / 1000000))
	wait "${pids[@]}"
	jq -e '.result.structuredContent.stdout == "2\n"' body
	for i in 1 2 3 4 5 6; do jq -e '.result.structuredContent.status == "success"' "slow$i.json" > /dev/null; done
	# a FIFO made it wait for all six (12 s); fairly, for the one running
	echo "the other token's run took $ms ms" >&3
	[ "$ms" -lt "$(bound 5000 9000)" ]
}

@test "GET /mcp: a session's stream of what it is told unasked, with event ids; Last-Event-ID replays; one at a time; other tokens hear nothing" {
	http_serve
	initialize
	S1=$SID
	rpc "$(call 1 sandbox_initialize '{"language":"python"}')"
	box=$(jq -r '.result.structuredContent.session_id' body)
	uri="sbx://session/$box/out.txt"
	sub=$(jq -nc --arg u "$uri" '{jsonrpc: "2.0", id: 2, method: "resources/subscribe", params: {uri: $u}}')
	# a second MCP session of the same token, and one of another token, both subscribed
	initialize
	S2=$SID
	rpc "$sub"
	jq -e '.result == {}' body
	TOK=$TOKEN2 initialize
	S3=$SID
	TOK=$TOKEN2 rpc "$sub"
	get() { curl -sS -N "$URL/mcp" -H "Authorization: Bearer $1" -H "Mcp-Session-Id: $2" -H 'Accept: text/event-stream' "${@:3}"; }
	curl -sS -N "$URL/mcp" -H "Authorization: Bearer $TOKEN" -H "Mcp-Session-Id: $S2" -H 'Accept: text/event-stream' > s2 &
	g2=$!
	curl -sS -N "$URL/mcp" -H "Authorization: Bearer $TOKEN2" -H "Mcp-Session-Id: $S3" -H 'Accept: text/event-stream' > s3 &
	g3=$!
	for _ in $(seq 50); do grep -q '^id: ' s2 2> /dev/null && grep -q '^id: ' s3 2> /dev/null && break; sleep 0.1; done
	# one stream at a time per session
	req GET /mcp -H "Authorization: Bearer $TOKEN" -H "Mcp-Session-Id: $S2" -H 'Accept: text/event-stream'
	[ "$code" = 409 ]
	SID=$S1
	for i in 1 2; do
		rpc "$(call $((i + 2)) sandbox_exec "$(jq -nc --arg s "$box" --arg c "open('out.txt', 'w').write('$i')" '{session_id: $s, code: $c}')")"
		jq -e '.result.structuredContent.status == "success"' <(sed -n 's/^data: //p; /^{/p' body | tail -1) # JSON, or an event stream
		for _ in $(seq 50); do [ "$(grep -c '^data: {' s2)" -ge "$i" ] && break; sleep 0.1; done
	done
	kill $g2 $g3
	wait $g2 $g3 || true
	# three events: its first (an id, no data), then the two announcements, ids growing
	read -r p1 e1 e2 <<< "$(sed -n 's/^id: //p' s2 | tr '\n' ' ')"
	[ "$e1" -gt "$p1" ]
	[ "$e2" -gt "$e1" ]
	sed -n 's/^data: //p' s2 | grep '^{' | jq -se --arg u "$uri" 'length == 2 and all(.method == "notifications/resources/updated" and .params.uri == $u)'
	! grep -q resources/updated s3 || false
	# reconnect after the first announcement: the second again, then a first event of its own
	# (the server notices the hang-up within its next tick: 409 until then)
	for _ in $(seq 30); do
		get "$TOKEN" "$S2" -H "Last-Event-ID: $e1" -m 1 > again || true
		grep -q '^id:' again && break
		sleep 0.1
	done
	read -r r1 r2 <<< "$(sed -n 's/^id: //p' again | tr '\n' ' ')"
	[ "$r1" = "$e2" ]
	[ "$r2" -gt "$e2" ]
	grep -q resources/updated again
	# a GET names its session, of its own token
	req GET /mcp -H "Authorization: Bearer $TOKEN2" -H "Mcp-Session-Id: $S2" -H 'Accept: text/event-stream'
	[ "$code" = 404 ]
}

@test "a POST's event stream resumed: the client drops it mid-run, GETs with Last-Event-ID, and gets the rest and the answer, nothing twice" {
	http_serve
	initialize
	body=$(call 1 run_code '{"language":"python","code":"import time\nprint(\"a\", flush=True)\ntime.sleep(1.5)\nprint(\"b\", flush=True)\ntime.sleep(0.5)"}' '{"progressToken":"r1"}')
	# the first second of the stream, then the connection is gone
	curl -sS -N -m 1 "$URL/mcp" -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' --data-binary "$body" > first || true
	last=$(sed -n 's/^id: //p' first | tail -1)
	[ -n "$last" ]
	grep -q '"message":"a\\n"' first
	! grep -q '"id":1,' first || false
	curl -sS -N -m 10 "$URL/mcp" -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID" -H 'Accept: text/event-stream' \
		-H "Last-Event-ID: $last" > rest
	# the rest: "b", done, then the answer, which ends the stream
	sed -n 's/^data: //p' first rest | grep '^{' > all
	jq -se '[.[] | select(.method == "notifications/progress") | .params.message] == ["queued", "running", "a\n", "b\n", "done"]' all
	jq -se 'map(select(.id == 1)) | length == 1 and .[0].result.structuredContent.stdout == "a\nb\n"' all
	# ids grow, none twice
	[ "$(sed -n 's/^id: //p' first rest | sort -n | uniq -d | wc -l)" = 0 ]
}

@test "tasks over HTTP: a task outlives the session that started it; the token's other sessions get its result, other tokens do not" {
	http_serve
	initialize
	rpc '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"import time\ntime.sleep(1)\nprint(7)"},"task":{}}}'
	[ "$code" = 200 ]
	task=$(jq -r .result.task.taskId body)
	[[ "$task" =~ ^[0-9a-f]{32}$ ]]
	# the client goes away
	req DELETE /mcp -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID"
	[ "$code" = 204 ]
	initialize
	get='{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"'$task'"}}'
	rpc "$get"
	[ "$code" = 200 ]
	jq -e --arg t "$task" '.result.structuredContent.stdout == "7\n" and .result._meta["io.modelcontextprotocol/related-task"].taskId == $t' body
	TOK=$TOKEN2 initialize
	TOK=$TOKEN2 rpc "$get"
	jq -e '.error.code == -32602' body
	TOK=$TOKEN2 rpc '{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{}}'
	jq -e '.result.tasks == []' body
}

# bats test_tags=valgrind
@test "HTTP+SSE (2024-11-05): the endpoint event, 202 for posts, answers on the stream; a closed stream ends the session" {
	http_serve
	curl -sS -N "$URL/sse" -H "Authorization: Bearer $TOK" > stream &
	sse=$!
	for _ in $(seq 50); do grep -q '^data: /messages' stream 2> /dev/null && break; sleep 0.1; done
	head -2 stream | grep -qx 'event: endpoint'
	ep=$(sed -n 's/^data: //p' stream | head -1)
	[[ "$ep" =~ ^/messages\?sessionId=[0-9a-f]{64}$ ]]
	post() { req POST "$ep" -H "Authorization: Bearer ${2:-$TOK}" -H 'Content-Type: application/json' --data-binary "$1"; }
	post '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}'
	[ "$code" = 202 ]
	post "$(call 1 run_code '{"language":"python","code":"print(5)"}' '{"progressToken":"p"}')"
	[ "$code" = 202 ]
	for _ in $(seq 100); do grep -q '"id":1' stream && break; sleep 0.1; done
	sed -n 's/^data: //p' stream | grep '^{' > msgs
	jq -se 'map(select(.id == 0))[0].result.protocolVersion == "2024-11-05"' msgs
	jq -se 'map(select(.id == 1))[0].result.structuredContent.stdout == "5\n"' msgs
	# the progress, to its final "done", before the answer, as on the other transports
	[ "$(jq -r 'select(.method == "notifications/progress" and (.params._meta | not)) | .params.message' msgs | tr '\n' ,)" = "queued,running,done," ]
	# another token cannot post into it; a made-up session is unknown
	post '{"jsonrpc":"2.0","id":2,"method":"ping"}' "$TOKEN2"
	[ "$code" = 404 ]
	req POST "/messages?sessionId=$(printf '%064d' 1)" -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' -d '{}'
	[ "$code" = 404 ]
	kill "$sse"
	wait "$sse" || true
	# the server notices the hang-up within its next tick (1 s)
	for _ in $(seq 30); do grep -q '"GET /sse" 200' srv.log && break; sleep 0.1; done
	grep -q '"GET /sse" 200' srv.log
	post '{"jsonrpc":"2.0","id":3,"method":"ping"}'
	[ "$code" = 404 ]
}

@test "sandboxed code cannot reach the server's port, on loopback or the host's own addresses" {
	hosts=$(ip -o addr show scope global 2> /dev/null | awk '{split($4, a, "/"); print a[1]}' | grep -v : | head -2 | tr '\n' ' ')
	LISTEN=0.0.0.0:0 http_serve
	port=${URL##*:}
	initialize
	code_sh="for h in 127.0.0.1 $hosts; do if exec 3<>/dev/tcp/\$h/$port; then printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3; cat <&3; echo \"reached \$h\"; else echo \"no \$h\"; fi; done"
	rpc "$(call 1 run_code "$(jq -nc --arg c "$code_sh" '{language:"bash",code:$c}')")"
	[ "$code" = 200 ]
	out=$(jq -r .result.structuredContent.stdout body)
	echo "$out"
	[[ "$out" != *reached* ]]
	[[ "$out" == *"no 127.0.0.1"* ]]
	# and from the server's side: nobody but us asked for anything
	! grep -q '"GET /healthz"' srv.log || false
	# the same address from the host does reach it (the probe is a real one)
	for h in 127.0.0.1 $hosts; do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$h:$port/healthz")" = 200 ]
	done
}

@test "SIGTERM: calls in flight are answered, new connections refused; past the grace period the rest is killed; nothing left" {
	set_key shutdown_grace 5
	http_serve
	initialize
	curl -sS -o late.json -X POST "$URL/mcp" -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID" -H 'Content-Type: application/json' \
		-d "$(call 1 run_code '{"language":"python","code":"import time; time.sleep(2); print(\"finished\")"}')" &
	client=$!
	await_program '^python3 '
	kill -TERM "$SRV"
	sleep 0.3
	run curl -sS -o /dev/null "$URL/healthz"
	[ "$status" -ne 0 ] # the listening socket is closed
	wait "$client"
	jq -e '.result.structuredContent.stdout == "finished\n"' late.json
	wait "$SRV"
	SRV=
	grep -q 'draining: 1 request in flight' srv.log
	# grace 1 s and a call of 30 s: killed, the server exits soon after
	set_key shutdown_grace 1
	http_serve
	initialize
	curl -sS -o never.json -X POST "$URL/mcp" -H "Authorization: Bearer $TOK" -H "Mcp-Session-Id: $SID" -H 'Content-Type: application/json' \
		-d "$(call 2 run_code '{"language":"python","code":"import time; time.sleep(30)"}')" &
	client=$!
	await_program '^python3 '
	t0=$(date +%s%N)
	kill -TERM "$SRV"
	wait "$SRV"
	SRV=
	t1=$(date +%s%N)
	[ $(((t1 - t0) / 1000000)) -lt 4000 ]
	grep -q 'still running after the grace period: killed' srv.log
	wait "$client" || true
}

@test "tokens: generated and printed once, SBX_MCP_TOKEN, short tokens and unreadable files refused" {
	SRV_LOG=gen.log TOKENS= http_serve
	tok=$(sed -n "s/.*this run's token is \([0-9a-f]*\)$/\1/p" gen.log)
	[[ "$tok" =~ ^[0-9a-f]{64}$ ]]
	[ "$(grep -c "$tok" gen.log)" -eq 1 ]
	TOK=$tok initialize
	SRV_LOG=gen.log http_stop
	SBX_MCP_TOKEN=env-token-0123456789abcdef SRV_LOG=env.log TOKENS= http_serve
	! grep -q "token is" env.log || false
	TOK=env-token-0123456789abcdef initialize
	SRV_LOG=env.log http_stop
	echo short > weak
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --listen 127.0.0.1:0 --token-file weak
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"at least 16 characters"* ]]
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --listen 127.0.0.1:0 --token-file missing
	[ "$status" -eq 2 ]
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --listen 999.1.1.1:0 --token-file tokens
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"not an IP address"* ]]
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --token-file tokens
	[ "$status" -eq 2 ]
	chmod 644 tokens
	http_serve
	grep -q 'readable by others' srv.log
}

@test "--listen systemd: the socket systemd passes (socket activation), and a clear error without one" {
	command -v systemd-socket-activate > /dev/null || skip "systemd-socket-activate is not installed"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	systemd-socket-activate -l "127.0.0.1:$port" -E SBX_MCP_TOKEN="$TOKEN" -E ASAN_OPTIONS -E UBSAN_OPTIONS \
		"$BIN/sbx-mcp" -c "$conf" --listen systemd 2> srv.log &
	SRV=$!
	URL=http://127.0.0.1:$port
	for _ in $(seq 100); do grep -q "Listening on" srv.log && break; sleep 0.05; done
	# the first connection starts the server; it then answers as on its own socket
	req GET /healthz
	[ "$code" = 200 ]
	initialize
	[ -n "$SID" ]
	grep -q "serving MCP at http://127.0.0.1:$port/mcp" srv.log
	# the variables are not passed on to what the server runs
	rpc "$(call 1 run_code '{"language":"bash","code":"echo ${LISTEN_FDS:-none} ${LISTEN_PID:-none}; ls /proc/self/fd | wc -l"}')"
	[ "$code" = 200 ]
	[[ $(jq -r .result.structuredContent.stdout body) == "none none"* ]]
	pkill -TERM -P "$SRV" -x sbx-mcp || kill -TERM "$SRV"
	wait "$SRV" || true
	SRV=
	! grep -E 'Sanitizer|runtime error' srv.log || false
	# not started by systemd: LISTEN_PID names another process, or nothing
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --listen systemd
	[ "$status" -eq 2 ]
	[[ $stderr == *"no socket was passed to this process"* ]]
	run --separate-stderr env LISTEN_PID=1 LISTEN_FDS=1 "$BIN/sbx-mcp" -c "$conf" --listen systemd
	[ "$status" -eq 2 ]
	[[ $stderr == *"no socket was passed"* ]]
	# fd 3 is not a listening socket
	run --separate-stderr sh -c 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" -c "$1" --listen systemd 3< /dev/null' "$BIN/sbx-mcp" "$conf"
	[ "$status" -eq 2 ]
	[[ $stderr == *"fd 3 is not a listening TCP socket"* ]]
	run --separate-stderr sh -c 'LISTEN_PID=$$ LISTEN_FDS=2 exec "$0" -c "$1" --listen systemd 3< /dev/null 4< /dev/null' "$BIN/sbx-mcp" "$conf"
	[ "$status" -eq 2 ]
	[[ $stderr == *"exactly one socket"* ]]
}

@test "50 SDK clients x 20 calls each at once, one token each: every answer arrives, to its own caller" {
	command -v node > /dev/null || skip "Node.js is not installed"
	[ -d "$ROOT/t/mcp-client/node_modules/@modelcontextprotocol/sdk" ] || skip "the MCP SDK is not installed (make mcp-client)"
	for i in $(seq 50); do printf 'load-token-%02d-%s\n' "$i" "$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"; done > tokens
	http_serve
	run --separate-stderr node "$ROOT/t/mcp-client/load.mjs" "$URL" tokens 50 20
	echo "$output"
	[ "$status" -eq 0 ]
	jq -e '.ok == 1000 and .wrong == 0 and .failed == 0' <<< "$output"
	[ "$(grep -c '"POST /mcp" 200 .* rpc=tools/call$' srv.log)" -eq 1000 ]
}

@test "a flood of idle and trickling connections from one address: token holders are still answered" {
	# Issue 47, class 2: 300 idle connections and 256 that trickle a
	# header line every half second shut every token holder out for over a
	# minute.  Now a connection that has shown no valid token yet goes
	# first when connections run short, and has request_timeout for its
	# whole request, which trickling cannot extend.
	set_key request_timeout 3
	http_serve
	initialize
	# a token holder's open event stream, from before the flood
	curl -sS -N "$URL/mcp" -H "Authorization: Bearer $TOKEN" -H "Mcp-Session-Id: $SID" -H 'Accept: text/event-stream' > stream &
	stream=$!
	port=${URL##*:}
	coproc FLOOD { python3 "$ROOT/t/http/flood.py" 127.0.0.1 "$port" 300 256 30; }
	read -r -t 60 ready <&"${FLOOD[0]}"
	[ "$ready" = ready ]
	# while it is open, from the same address: answered within their normal time
	for i in 1 2 3 4 5; do
		t0=$(date +%s%N)
		rpc '{"jsonrpc":"2.0","id":'"$i"',"method":"tools/list"}' --max-time 10
		[ "$code" = 200 ]
		jq -e '.result.tools | length > 0' body > /dev/null
		ms=$((($(date +%s%N) - t0) / 1000000))
		echo "call $i: $ms ms" >> latency
	done
	cat latency
	# the first may wait for a sweep of the strangers (each second, of
	# those past a second's grace): 556 connections are past libmicrohttpd's
	# own limit, so it sits in the listen backlog until then
	[ "$(head -n 1 latency | cut -d' ' -f3)" -lt "$(bound 3000 8000)" ]
	[ "$(tail -n +2 latency | cut -d' ' -f3 | sort -n | tail -n 1)" -lt "$(bound 500 3000)" ]
	read -r -t 60 result <&"${FLOOD[0]}"
	wait "$FLOOD_PID" || true
	echo "$result" | jq -c .
	# every trickling connection was closed, within request_timeout of its
	# accept (give or take the sweep's second, and the flood's own half-second
	# rounds), though it kept sending: a head has a deadline, not an idle timeout
	echo "$result" | jq -e '.trickle.opened == 256 and .trickle.closed == 256 and .trickle.longest < 3 + 5'
	# the idle ones too: past the limits, or at request_timeout
	echo "$result" | jq -e '.idle.closed == .idle.opened and .idle.longest < 3 + 5'
	grep -q 'http: closed [0-9]* connections that showed no valid token' srv.log
	# the token holder's stream was never cut
	kill -0 "$stream"
	kill "$stream"
	wait "$stream" || true
	req GET /healthz
	[ "$code" = 200 ]
}

TOKEN3=tok-dddddddddddddddddddddddddddd

# A program that asks the run's proxy for 10.9.9.8 and 10.9.9.9 and prints
# the status line of each answer.  Neither is ever reached: a host the
# run's list leaves out gets 403, and one it allows is a private address,
# which the proxy refuses (502) without connecting.
PROXY_PROBE='import os, socket, urllib.parse
p = urllib.parse.urlparse(os.environ["HTTPS_PROXY"])
for h in ("10.9.9.8", "10.9.9.9"):
    s = socket.create_connection((p.hostname, p.port))
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\n\r\n" % h.encode())
    print(h, s.recv(200).split(b"\r\n")[0].decode())
    s.close()'

# network_tokens: the configuration allows 10.9.9.9 and 10.9.9.8; $TOKEN
# may reach 10.9.9.9 only, $TOKEN2 all of it, $TOKEN3 nothing.
network_tokens() {
	set_key network '["10.9.9.9", "10.9.9.8"]'
	printf '# one list each\n%s  network=10.9.9.9\n%s\n%s\tnetwork=false\n' "$TOKEN" "$TOKEN2" "$TOKEN3" > tokens
}

# probe ID: run PROXY_PROBE with network true as $TOK.
probe() {
	rpc "$(call "$1" run_code "$(jq -nc --arg c "$PROXY_PROBE" '{language: "python", code: $c, network: true}')")"
	[ "$code" = 200 ]
}

@test "a token's network=LIST: a call's true becomes its list, a list outside it is a tool error naming it" {
	skip_unless_root
	network_tokens
	http_serve
	grep -q 'for 3 tokens, 2 with a network of its own' srv.log
	initialize
	rpc "$(call 1 run_code '{"language":"python","code":"print(1)","network":["10.9.9.8"]}')"
	jq -e '.result.isError == true and (.result.content[0].text |
		contains("\"network\": \"10.9.9.8\" is not within what this token may reach (10.9.9.9)"))' body
	# true: the token's list, not the configuration's
	probe 2
	jq -e '.result.structuredContent.stdout == "10.9.9.8 HTTP/1.1 403 Forbidden\n10.9.9.9 HTTP/1.1 502 Bad Gateway\n"' body
	jq -e '.result.structuredContent.egress | map(select(.host == "10.9.9.8")) | length == 1 and (.[0].allowed | not)' body
	jq -e '.result.structuredContent.egress | map(select(.host == "10.9.9.9")) | length == 1 and .[0].allowed' body
	# a list within it passes as asked
	rpc "$(call 3 run_code '{"language":"python","code":"print(3)","network":["10.9.9.9"]}')"
	jq -e '.result.structuredContent.stdout == "3\n"' body
	# a session's default is held to it at sandbox_initialize, and true there
	# becomes the list that sandbox_exec then gets
	rpc "$(call 4 sandbox_initialize '{"language":"python","network":["10.9.9.8"]}')"
	jq -e '.result.isError == true and (.result.content[0].text | contains("not within what this token may reach (10.9.9.9)"))' body
	rpc "$(call 5 sandbox_initialize '{"language":"python","network":true}')"
	jq -e '.result.structuredContent.network == ["10.9.9.9"]' body
	sid=$(jq -r .result.structuredContent.session_id body)
	rpc "$(call 6 sandbox_exec "$(jq -nc --arg s "$sid" --arg c "$PROXY_PROBE" '{session_id: $s, code: $c}')")"
	jq -e '.result.structuredContent.stdout == "10.9.9.8 HTTP/1.1 403 Forbidden\n10.9.9.9 HTTP/1.1 502 Bad Gateway\n"' body
	rpc "$(call 7 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, code: "print(7)", network: ["10.9.9.8"]}')")"
	jq -e '.result.isError == true and (.result.content[0].text | contains("not within what this token may reach"))' body
	rpc "$(call 8 sandbox_stop "$(jq -nc --arg s "$sid" '{session_id: $s}')")"
}

@test "a token without network= gets the configuration's list; one with network=false gets none" {
	skip_unless_root
	network_tokens
	http_serve
	TOK=$TOKEN2 initialize
	TOK=$TOKEN2 probe 1
	jq -e '.result.structuredContent.stdout == "10.9.9.8 HTTP/1.1 502 Bad Gateway\n10.9.9.9 HTTP/1.1 502 Bad Gateway\n"' body
	jq -e '[.result.structuredContent.egress[] | select(.host | startswith("10.9.9.")) | .allowed] == [true, true]' body
	# the configuration still judges what it allows
	TOK=$TOKEN2 rpc "$(call 2 run_code '{"language":"python","code":"1","network":["10.9.9.7"]}')"
	jq -e '.result.isError == true and (.result.content[0].text | contains("not within what the configuration allows"))' body
	TOK=$TOKEN3 initialize
	for net in true '["10.9.9.9"]'; do
		TOK=$TOKEN3 rpc "$(call 3 run_code "{\"language\":\"python\",\"code\":\"1\",\"network\":$net}")"
		jq -e '.result.isError == true and (.result.content[0].text | contains("\"network\": this token has no network"))' body
		TOK=$TOKEN3 rpc "$(call 4 sandbox_initialize "{\"network\":$net}")"
		jq -e '.result.isError == true and (.result.content[0].text | contains("this token has no network"))' body
	done
	TOK=$TOKEN3 rpc "$(call 5 run_code '{"language":"python","code":"print(5)","network":false}')"
	jq -e '.result.structuredContent.stdout == "5\n"' body
	# no token is ever named in the log
	! grep -q -e "$TOKEN" -e "$TOKEN2" -e "$TOKEN3" srv.log || false
}

@test "a token file whose network is wider than the configuration's, or not one: sbx-mcp exits 2 naming the line" {
	network_tokens
	printf '%s\n# the second\n%s network=10.9.9.9,*.example.org\n' "$TOKEN" "$TOKEN2" > tokens
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --listen 127.0.0.1:0 --token-file tokens
	[ "$status" -eq 2 ]
	[[ $stderr == *'tokens: token on line 3: network: "*.example.org" is not within what the configuration allows (10.9.9.9, 10.9.9.8 in '* ]]
	set_key network false
	printf '%s network=10.9.9.9\n' "$TOKEN" > tokens
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --listen 127.0.0.1:0 --token-file tokens
	[ "$status" -eq 2 ]
	[[ $stderr == *'tokens: token on line 1: network: "10.9.9.9": the configuration allows runs no network'* ]]
	printf '%s network=10.9.9.9 colour=blue\n' "$TOKEN" > tokens
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --listen 127.0.0.1:0 --token-file tokens
	[ "$status" -eq 2 ]
	[[ $stderr == *'tokens: token on line 1: after the token (a token has no spaces) come only options'* ]]
	printf '%s network=10.9.9.9,bad_host\n' "$TOKEN" > tokens
	run --separate-stderr "$BIN/sbx-mcp" -c "$conf" --listen 127.0.0.1:0 --token-file tokens
	[ "$status" -eq 2 ]
	[[ $stderr == *'token on line 1: network=: "bad_host" is not a host pattern'* ]]
	[[ $stderr != *"$TOKEN"* ]]
	# network=false fits a configuration that allows none
	printf '%s network=false\n' "$TOKEN" > tokens
	http_serve
	grep -q 'for 1 token, 1 with a network of its own' srv.log
}
