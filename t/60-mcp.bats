#!/usr/bin/env bats
# sbx-mcp spoken to in raw JSON-RPC over pipes: the handshake of every
# protocol revision, the stateless 2026-07-28 one, every tool, every error
# path, progress, cancellation, concurrency, sessions and their attacks.
load helpers

teardown() {
	local rc=0 pub
	assert_no_leftovers || rc=1
	# a test's state outside its directory (the workspace test's)
	if [ -f "$BATS_TEST_TMPDIR/pub" ]; then
		pub=$(cat "$BATS_TEST_TMPDIR/pub")
		if awk -v p="$pub/" 'index($5, p) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
			echo "mounts left behind in $pub" >&2
			rc=1
		else
			rm -rf "$pub"
		fi
	fi
	return $rc
}

# Sessions and history live in the test's directory.
local_setup() {
	conf=$(conf_with 's/^$//')
	sessions=$BATS_TEST_TMPDIR/var/sessions
}

# mcp: the requests on stdin (one per line) to a fresh server using $conf;
# its output in $BATS_TEST_TMPDIR/out, stderr in err.  The server answers
# everything in flight after stdin ends, then exits.
mcp() {
	"$BIN/sbx-mcp" -c "$conf" > out 2> err
}

# answer ID: the message with that id.
answer() { jq -c --argjson id "$1" 'select(.id == $id)' out; }

# wait_for ID [SECONDS]: until the answer with that id is in out (10 s at most).
wait_for() {
	for _ in $(seq $((${2:-10} * 10))); do [ -n "$(answer "$1")" ] && return 0; sleep 0.1; done
	echo "no answer $1" >&2
	return 1
}

init() {
	printf '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}\n' "${1:-2025-11-25}"
	printf '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
}

# call ID TOOL ARGS-JSON [META-JSON]
call() {
	jq -nc --argjson id "$1" --arg name "$2" --argjson args "$3" --argjson meta "${4:-{\}}" \
		'{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: $name, arguments: $args, _meta: $meta}}'
}

# session_server [LANGUAGE [ARGS-JQ]]: a server on $conf fed through fd 7 (close it,
# then wait "$server"), with a session made as call 1: $sid.  step TOOL
# ARGS-JQ: the next call (2, 3, ...) in that session, waited for.
session_server() {
	mkfifo in
	"$BIN/sbx-mcp" -c "$conf" < in > out 2> err &
	server=$!
	exec 7> in
	{ init; call 1 sandbox_initialize "$(jq -nc --arg l "${1:-python}" "{language: \$l} + ${2:-{\}}")"; } >&7
	wait_for 1
	sid=$(answer 1 | jq -r .result.structuredContent.session_id)
	n=1
}
step() { n=$((n + 1)); call $n "$1" "$(jq -nc --arg s "$sid" "{session_id: \$s} + $2")" >&7; wait_for $n; }

# install_job PROBE REGISTRIES [FIELDS-JQ] [SED]: ./job, an install
# (FIELDS merged in) into a session's workspace ($ws) of a package whose
# preinstall script is the node program PROBE, with install_specs "any"
# and the javascript registries REGISTRIES (a TOML list's inside) in
# $conf, edited further by the sed expression SED.
install_job() {
	conf=$(conf_with -e 's/^install_specs *=.*/install_specs = "any"/' \
		-e "s/^registries = \\[\"registry.npmjs.org\"\\]/registries = [$2]/" -e "${4:-}")
	sid=$(printf '%032x' 98)
	ws=$BATS_TEST_TMPDIR/var/sessions/$sid
	mkdir -p "$ws/.deps" "$ws/mypkg"
	echo '{"name":"mypkg","version":"1.0.0","scripts":{"preinstall":"node probe.js"}}' > "$ws/mypkg/package.json"
	cp "$1" "$ws/mypkg/probe.js"
	chown -R "$SBX_PROG_UID:$SBX_PROG_UID" "$ws"
	jq -nc --arg s "$sid" "{language: \"javascript\", session: \$s, install: [\"./mypkg\"]} + ${3:-{\}}" |
		"$BIN/sbx-validate" -c "$conf" > job
}

# registry_ns REGISTRY COMMAND...: COMMAND run in two network namespaces
# of the test's own joined by a veth pair: the proxy's (sbx-run's), and a
# "registry" at 198.18.0.5 (a range the proxy lets through) served by the
# python program REGISTRY, which creates ./ready once it listens.
registry_ns() {
	unshare --net sh -c '
		ip link set lo up || exit 9
		unshare --net sh -c "echo \$\$ > peer; exec sleep 120" &
		for i in $(seq 50); do [ -s peer ] && break; sleep 0.1; done
		peer=$(cat peer)
		ip link add va type veth peer name vb && ip link set vb netns "$peer" &&
			ip addr add 198.18.0.1/24 dev va && ip link set va up &&
			nsenter --net --target "$peer" sh -c "ip link set lo up && ip addr add 198.18.0.5/24 dev vb && ip link set vb up" || exit 9
		nsenter --net --target "$peer" python3 "$1" &
		r=$!
		for i in $(seq 50); do [ -e ready ] && break; sleep 0.1; done
		shift
		"$@"
		kill $r "$peer" 2> /dev/null; wait' sh "$@"
}

# need_registry_ns TOOL: what the tests with a registry in a network
# namespace of their own need (root, ip(8)), and TOOL (npm or node).
need_registry_ns() {
	skip_unless_root
	command -v "$1" > /dev/null || skip "$1 is not installed"
	command -v ip > /dev/null || skip "no ip(8)"
}

# registry_install PROBE REGISTRY [FIELDS-JQ] [SED]: an install whose
# package's preinstall script is the node program PROBE, run by sbx-run in
# registry_ns REGISTRY (198.18.0.5 the only registry allowed), $conf
# edited by SED (as install_job's).  The result in ./out, the probe's
# /scratch/probe.out in $ws.
registry_install() {
	install_job "$1" '"198.18.0.5"' "${3:-}" "${4:-}"
	registry_ns "$2" sh -c '"$1" -c "$2" < job > out' sh "$BIN/sbx-run" "$conf"
}

# registry_proxy PROBE REGISTRY BYTES CONNS RATE PATTERN...: the proxy
# itself (libexec's sbx-egress, as nobody) at 127.0.0.1:3128 for the
# host PATTERNs within those bounds, in registry_ns REGISTRY, with the
# node program PROBE run beside it (where the host patterns' ports are not
# yet the configuration's to give).  Its records in ./out, one a line,
# once it has been stopped as egress_stop does (SIGTERM to its group).
registry_proxy() {
	cat > proxy.py <<'PY'
import os, signal, socket, subprocess, sys
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("127.0.0.1", 3128)); l.listen(64)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.dup2(l.fileno(), 3); os.dup2(w, 4)
    os.execv(sys.argv[1], ["sbx-egress", "65534", str(os.getppid())] + sys.argv[3:])
os.close(w); l.close()
subprocess.run(["node", sys.argv[2]], check=True)
os.killpg(pid, signal.SIGTERM)
with open("out", "wb") as f:
    while True:
        d = os.read(r, 65536)
        if not d: break
        f.write(d)
os.waitpid(pid, 0)
PY
	local probe=$1 registry=$2
	shift 2
	registry_ns "$registry" python3 proxy.py "$ROOT/libexec/sbx/sbx-egress" "$probe" "$@"
}

@test "handshake: each supported revision is echoed, others get the newest; initialized needs no answer" {
	for v in 2024-11-05 2025-03-26 2025-06-18 2025-11-25; do
		init "$v" | mcp
		[ "$(answer 0 | jq -r .result.protocolVersion)" = "$v" ]
		answer 0 | jq -e '.jsonrpc == "2.0" and .result.serverInfo.name == "sbx" and .result.capabilities.tools and (.result.instructions | length > 0)'
		[ "$(wc -l < out)" -eq 1 ]
	done
	for v in 2099-01-01 2026-07-28 ""; do
		init "$v" | mcp
		[ "$(answer 0 | jq -r .result.protocolVersion)" = 2025-11-25 ]
	done
}

@test "2026-07-28: no handshake, server/discover, the revision in _meta, resultType in results" {
	meta='{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
	{
		jq -nc --argjson m "$meta" '{jsonrpc: "2.0", id: 1, method: "server/discover", params: {_meta: $m}}'
		jq -nc --argjson m "$meta" '{jsonrpc: "2.0", id: 2, method: "tools/list", params: {_meta: $m}}'
		call 3 run_code '{"language":"python","code":"print(6)"}' "$meta"
		jq -nc '{jsonrpc: "2.0", id: 4, method: "tools/list", params: {_meta: {"io.modelcontextprotocol/protocolVersion": "2031-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}}'
	} | mcp
	answer 1 | jq -e '.result.resultType == "complete" and (.result.supportedVersions | index("2026-07-28") and index("2024-11-05")) and .result.serverInfo.name == "sbx"'
	answer 2 | jq -e '.result.resultType == "complete" and (.result.tools | length == 24)'
	answer 3 | jq -e '.result.resultType == "complete" and .result.structuredContent.stdout == "6\n"'
	answer 4 | jq -e '.error.code == -32022 and .error.data.requested == "2031-01-01" and (.error.data.supported | index("2026-07-28"))'
}

@test "stdin closed at once: every request is answered first, those held for the host probe too" {
	# One write, then the end of input.  tools/list waits for the host's
	# probe (sbx-run --check, found beside sbx-mcp), here made to take half
	# a second so that the end of input surely comes first.
	mkdir slow
	cp "$BIN/sbx-mcp" slow/
	printf '#!/bin/sh\nsleep 0.5\nexec "%s/sbx-run" "$@"\n' "$BIN" > slow/sbx-run
	chmod +x slow/sbx-run
	printf '%s\n' "$(init)" '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' '{"jsonrpc":"2.0","id":2,"method":"ping"}' |
		slow/sbx-mcp -c "$conf" > out 2> err
	answer 0 | jq -e '.result.serverInfo.name == "sbx"'
	answer 1 | jq -e '.result.tools | length == 24'
	answer 2 | jq -e '.result == {}'
}

@test "tools/list: twenty-four tools, each with title, description, input and output schemas" {
	{ init; echo '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
	  echo '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"page-2"}}'; } | mcp
	# one page, no nextCursor; any cursor is unknown
	answer 1 | jq -e '.result | has("nextCursor") | not'
	answer 2 | jq -e '.error.code == -32602 and (.error.message | contains("cursor"))'
	answer 1 | jq -e '[.result.tools[].name] | sort == ["check_backend","checkpoint_create","checkpoint_delete","checkpoint_fork","checkpoint_list","checkpoint_restore","get_execution_history","install_packages","list_files","list_supported_languages","port_close","port_open","process_list","process_read","process_signal","process_start","process_write","read_file","run_cell","run_code","sandbox_exec","sandbox_initialize","sandbox_stop","write_file"]'
	answer 1 | jq -e 'all(.result.tools[]; (.title | length > 0) and (.description | length > 40) and .inputSchema.type == "object" and .outputSchema.type == "object")'
	# descriptions quote the configured limits
	answer 1 | jq -e '.result.tools[] | select(.name == "run_code") | .description | contains("256 MiB") and contains("10 s") and contains("up to 1 GiB")'
}

@test "errors: parse error, batch, bad request, unknown method, unknown tool, bad params; the server lives on" {
	{
		init
		echo 'this is not json'
		echo '[{"jsonrpc":"2.0","id":1,"method":"ping"}]'
		echo '{"jsonrpc":"1.0","id":2,"method":"ping"}'
		echo '{"jsonrpc":"2.0","id":3,"method":"prompts/list"}'
		call 4 no_such_tool '{}'
		call 5 run_code '{"language":"python"}'
		call 6 run_code '{"language":"python","code":1}'
		call 7 run_code '{"language":"python","code":"1","color":"red"}'
		echo '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{}}}'
		echo '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}'
		printf '{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"%s"}}\n' "$(head -c 20000000 /dev/zero | tr '\0' a)"
		echo '{"jsonrpc":"2.0","id":10,"method":"ping"}'
	} | mcp
	[ "$(jq -sc '[.[] | select(.id == null) | .error.code]' out)" = '[-32700,-32600,-32600,-32700]' ]
	answer 2 | jq -e '.error.code == -32600'
	answer 3 | jq -e '.error.code == -32601 and (.error.message | contains("prompts/list"))'
	answer 4 | jq -e '.error.code == -32602 and (.error.message | contains("no_such_tool"))'
	# arguments the schema refuses: since 2025-11-25 (SEP-1303) the tool's
	# error, which the model reads and corrects
	answer 5 | jq -e '.result.isError == true and (.result.content[0].text | contains("missing \"code\""))'
	answer 6 | jq -e '.result.isError == true and (.result.content[0].text | contains("\"code\" must be a string"))'
	answer 7 | jq -e '.result.isError == true and (.result.content[0].text | contains("unknown argument \"color\""))'
	answer 8 | jq -e '.error.code == -32602'
	answer 10 | jq -e '.result == {}'
	# stdout holds JSON-RPC only
	jq -e '.jsonrpc == "2.0"' out > /dev/null
	# earlier revisions: -32602, as their clients expect
	{ init 2025-06-18; call 5 run_code '{"language":"python"}'; } | mcp
	answer 5 | jq -e '.error.code == -32602 and (.error.message | contains("missing \"code\""))'
}

@test "run_code: success, the seed's C++ example, compile error, timeout, invalid input as a tool error" {
	cpp=$(jq -r 'select(.id == "cpp-seed") | .code' "$ROOT/etc/examples/tour.jsonl")
	{
		init
		call 1 run_code '{"language":"python","code":"print(sum([1,2,3]))"}'
		call 2 run_code "$(jq -nc --arg c "$cpp" '{language: "cpp", code: $c}')"
		call 3 run_code '{"language":"cpp","code":"int main() { return missing; }"}'
		call 4 run_code '{"language":"python","code":"import time\ntime.sleep(30)","timeout":1}'
		call 5 run_code '{"language":"cobol","code":"x"}'
		call 6 run_code '{"language":"python","code":"import sys; print(sys.stdin.read()[::-1]); open(\"d/f\").read()","stdin":"abc","files":{"d/f":"x"}}'
		# per-call memory and cpus, within the ceilings
		call 7 run_code '{"language":"python","code":"x = bytearray(100 << 20)","memory":"32m","cpus":1}'
		call 8 run_code '{"language":"python","code":"1","memory":"64g"}'
	} | mcp
	answer 1 | jq -e '.result.isError == false and .result.structuredContent.status == "success" and .result.structuredContent.stdout == "6\n" and .result.structuredContent.history_id > 0'
	# the text is for a model: a status line, then the output
	answer 1 | jq -e '.result.content[0].text | test("^success, exit 0, [0-9]+ ms, [0-9.]+ [KM]iB peak [(]python[)]\nstdout [(]2 bytes[)]:\n6\n$")'
	answer 1 | jq -e '.result.structuredContent | .limits_missing == [] and (.limits_enforced | index("namespaces")) != null'
	answer 3 | jq -e '.result.content[0].text | test("^compile_error.*\ncompile.stderr [(][0-9]+ bytes[)]:\n[\\s\\S]*missing")'
	answer 2 | jq -e '.result.structuredContent.stdout == "The sum of elements is: 15\n" and .result.structuredContent.compile.status == "success"'
	answer 3 | jq -e '.result.structuredContent.status == "compile_error" and (.result.structuredContent.compile.stderr | contains("missing")) and .result.isError == false'
	answer 4 | jq -e '.result.structuredContent.status == "timeout" and .result.structuredContent.signal == "SIGKILL"'
	answer 5 | jq -e '.result.isError == true and (.result.structuredContent.error | contains("unsupported language \"cobol\""))'
	answer 6 | jq -e '.result.structuredContent.stdout == "cba\n"'
	if has_cgroup_limits; then answer 7 | jq -e '.result.structuredContent.status == "memory_limit"'; fi
	answer 8 | jq -e '.result.isError == true and (.result.structuredContent.error | contains("exceeds max_memory"))'
}


@test "run results for a reader: max_output cuts both blocks, the text stays short by default; content-first clients get no structuredContent" {
	{
		init
		call 1 run_code '{"language":"python","code":"print(\"x\" * 30000); print(\"tail\")"}'
		call 2 run_code '{"language":"python","code":"print(\"y\" * 5000)","max_output":100}'
		call 3 run_code '{"language":"python","code":"print(1)","max_output":-5}'
		call 4 run_code '{"language":"python","code":"print(1)","timeout":55}'
	} | mcp
	# the record keeps the whole, the text a head and tail of [mcp] text_output
	answer 1 | jq -e '.result.structuredContent | .stdout_bytes == 30006 and (.stdout | length) == 30006 and .stdout_truncated == false'
	answer 1 | jq -e '.result.content[0].text | (length < 8400) and test("\\[[.]{3} 21814 bytes truncated [.]{3}\\]") and test("tail\n") and test("max_output asks for up to 100 KiB")'
	answer 2 | jq -e '.result.structuredContent | .stdout_bytes == 5001 and .stdout_truncated and (.stdout | test("^y{50}\n\\[[.]{3} 4901 bytes truncated [.]{3}\\]\ny{49}\n$"))'
	answer 3 | jq -e '.result.isError == true and (.result.content[0].text | contains("max_output"))'
	# a call that would outlast the client's wait is refused, saying what to do
	answer 4 | jq -e '.result.isError == true and (.result.content[0].text | contains("max_timeout") and contains("task"))'
	# Claude Code shows structuredContent alone when it is there: it gets
	# the text and the images instead, and schemas without outputSchema
	{
		echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1"}}}'
		echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
		echo '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
		call 2 run_code '{"language":"python","code":"print(6)"}'
		call 3 list_files '{"session_id":"00000000000000000000000000000000"}'
	} | mcp
	answer 1 | jq -e '[.result.tools[] | has("outputSchema")] | any | not'
	answer 2 | jq -e '(.result | has("structuredContent") | not) and (.result.content[0].text | test("^success, exit 0.*\nstdout [(]2 bytes[)]:\n6\n$"))'
	answer 3 | jq -e '.result | has("structuredContent") | not'
	# and an operator may choose for every client
	conf=$(conf_with 's/^structured *=.*/structured = "never"/')
	{ init; echo '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'; } | mcp
	answer 1 | jq -e '[.result.tools[] | has("outputSchema")] | any | not'
	# a default timeout past max_timeout is said at the start
	conf=$(conf_with '0,/^timeout *=.*/s//timeout = 55/')
	"$BIN/sbx-mcp" -c "$conf" < /dev/null 2> start.err
	grep -q "default timeout of python (55 s), c (55 s).* is more than \[mcp\] max_timeout (50 s)" start.err
	conf=$(conf_with 's/^structured *=.*/structured = "sometimes"/')
	run "$BIN/sbx-mcp" -c "$conf" < /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *'"sometimes" is not auto, always or never'* ]]
}
@test "progress: queued, compiling, running, done, in order, before the answer" {
	{ init; call 1 run_code '{"language":"c","code":"int main(void){return 0;}"}' '{"progressToken":"t1"}'; } | mcp
	[ "$(jq -sc '[.[] | select(.method == "notifications/progress") | .params | [.progressToken, .progress, .message]]' out)" = '[["t1",1,"queued"],["t1",2,"compiling"],["t1",3,"running"],["t1",4,"done"]]' ]
	[ "$(jq -sc 'map(.id // .method) | .[1:]' out)" = '["notifications/progress","notifications/progress","notifications/progress","notifications/progress",1]' ]
}

@test "cancellation kills the running sandbox and answers nothing for it; the rest goes on" {
	start=$(date +%s.%N)
	{
		init
		call 1 run_code '{"language":"bash","code":"sleep 30"}'
		await_program '^sleep 30$'
		echo '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"changed my mind"}}'
		echo '{"jsonrpc":"2.0","id":2,"method":"ping"}'
		call 3 run_code '{"language":"python","code":"print(1)"}'
	} | mcp
	took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
	[ -z "$(answer 1)" ]
	answer 2 | jq -e '.result == {}'
	answer 3 | jq -e '.result.structuredContent.stdout == "1\n"'
	awk -v t="$took" 'BEGIN { exit !(t < 8) }'
	# the history says what happened to it
	"$BIN/sbx-history" --status cancelled --jq .error | grep -q cancelled
	! "$BIN/sbx-history" --status internal_error || false
}

@test "8 concurrent run_code calls finish in about the time of one; ping is never held up" {
	conf=$(conf_with 's/^max_concurrent *=.*/max_concurrent = 8/')
	{
		init
		for i in $(seq 1 8); do call "$i" run_code '{"language":"python","code":"import time; time.sleep(2); print(\"done\")"}'; done
		sleep 0.5
		echo '{"jsonrpc":"2.0","id":100,"method":"ping"}'
	} | { start=$(date +%s.%N); "$BIN/sbx-mcp" -c "$conf" > out 2> err; awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }' > took; }
	[ "$(jq -s '[.[] | select(.result.structuredContent.stdout == "done\n")] | length' out)" -eq 8 ]
	# all eight ran at once: well under 8 x 2 s
	awk -v t="$(cat took)" 'BEGIN { exit !(t < 6) }'
	# ping came back before any run finished
	[ "$(jq -sc 'map(select(.id != null and .id != 0)) | .[0].id' out)" = 100 ]
}

@test "a queue beyond max_concurrent: runs wait their turn, all are answered" {
	conf=$(conf_with 's/^max_concurrent *=.*/max_concurrent = 1/')
	{
		init
		for i in 1 2 3; do call "$i" run_code '{"language":"bash","code":"echo '"$i"'; sleep 0.3"}' "{\"progressToken\":$i}"; done
	} | mcp
	for i in 1 2 3; do answer "$i" | jq -e ".result.structuredContent.stdout == \"$i\n\""; done
	# one at a time: each started running only after the one before was done
	jq -se '[.[] | select(.method == "notifications/progress") | .params | "\(.progressToken) \(.message)"] |
		index("1 done") < index("2 running") and index("2 done") < index("3 running")' out
}

@test "list_supported_languages, get_execution_history, check_backend" {
	{
		init
		call 1 run_code '{"language":"python","code":"print(1)"}'
		sleep 1
		call 2 list_supported_languages '{}'
		call 3 get_execution_history '{"limit":5}'
		call 4 get_execution_history '{"stats":true,"language":"py"}'
		call 5 check_backend '{}'
		call 6 get_execution_history '{"limit":-1}'
		call 7 get_execution_history '{"since":"30"}'
		call 8 get_execution_history '{"since":"yesterday"}'
	} | mcp
	answer 2 | jq -e '.result.structuredContent.languages[] | select(.name == "python") | .available and (.version | startswith("Python 3")) and (.aliases | index("py")) and .compiled == false'
	answer 2 | jq -e '.result.structuredContent.languages[] | select(.name == "cpp") | .compiled and (.version | contains("g++"))'
	answer 3 | jq -e '.result.structuredContent.runs | length == 1 and .[0].status == "success" and .[0].language == "python" and .[0].history_id == 1'
	answer 4 | jq -e '.result.structuredContent.stats | map(select(.status == "all")) | .[0].count == 1'
	answer 5 | jq -e '.result.isError == false and .result.structuredContent.usable == true and (.result.structuredContent.fixes | type == "array")'
	answer 6 | jq -e '.result.isError == true'
	# a time needs its unit; a day is a time
	answer 7 | jq -e '.result.isError == true'
	answer 8 | jq -e '.result.structuredContent.runs | length == 1'
}

@test "the history failing never fails a run" {
	mkdir -p "$(dirname "$SBX_HISTORY")"
	head -c 8192 /dev/urandom > "$SBX_HISTORY"
	{ init; call 1 run_code '{"language":"python","code":"print(1)"}'; } | mcp
	answer 1 | jq -e '.result.isError == false and .result.structuredContent.stdout == "1\n" and .result.structuredContent.history_id == null'
	grep -q "file is not a database" err
}

@test "sessions: files persist between runs; exec code, a file, a command; list, read, stop" {
	{
		init
		call 1 sandbox_initialize '{"language":"python"}'
	} > req
	mkfifo in
	"$BIN/sbx-mcp" -c "$conf" < in > out 2> err &
	exec 7> in
	cat req >&7
	for i in $(seq 50); do answer 1 | grep -q session_id && break; sleep 0.1; done
	sid=$(answer 1 | jq -r .result.structuredContent.session_id)
	[[ "$sid" =~ ^[0-9a-f]{32}$ ]]
	ws=$sessions/$sid
	[ "$(stat -c %a "$ws")" = 700 ]
	# one call at a time: each depends on the one before
	n=1
	step() { n=$((n + 1)); call $n "$1" "$2" >&7; wait_for $n; }
	step write_file "{\"session_id\":\"$sid\",\"path\":\"lib/util.py\",\"content\":\"def twice(x): return 2 * x\\n\"}"
	step sandbox_exec "{\"session_id\":\"$sid\",\"code\":\"import sys; sys.path.insert(0, 'lib'); from util import twice; open('state', 'w').write(str(twice(21)))\"}"
	step sandbox_exec "{\"session_id\":\"$sid\",\"command\":[\"cat\",\"state\"]}"
	step write_file "{\"session_id\":\"$sid\",\"path\":\"run.py\",\"content\":\"print('file ran', open('state').read())\"}"
	step sandbox_exec "{\"session_id\":\"$sid\",\"file\":\"run.py\"}"
	step list_files "{\"session_id\":\"$sid\"}"
	step read_file "{\"session_id\":\"$sid\",\"path\":\"state\"}"
	step sandbox_exec "{\"session_id\":\"$sid\",\"code\":\"x\",\"command\":[\"ls\"]}"
	step sandbox_stop "{\"session_id\":\"$sid\"}"
	step list_files "{\"session_id\":\"$sid\"}"
	exec 7>&-
	wait
	answer 2 | jq -e '.result.structuredContent.bytes == 27'
	answer 3 | jq -e '.result.structuredContent.status == "success" and .result.structuredContent.session_id == "'"$sid"'"'
	answer 4 | jq -e '.result.structuredContent.stdout == "42"'
	answer 6 | jq -e '.result.structuredContent.stdout == "file ran 42\n"'
	answer 7 | jq -e '[.result.structuredContent.files[].path] | index("lib/util.py") and index("state") and index("run.py")'
	answer 8 | jq -e '.result.structuredContent.content == "42" and .result.structuredContent.encoding == "utf-8"'
	answer 9 | jq -e '.result.isError == true and (.result.content[0].text | contains("exactly one of"))'
	answer 10 | jq -e '.result.structuredContent.stopped == true'
	answer 11 | jq -e '.result.isError == true and (.result.content[0].text | contains("unknown session"))'
	[ ! -e "$ws" ]
}

# Issue 24, items 1, 2, 9: inline code and wrappers never touch a user's
# file; a file runs by its extension; the history keeps what really ran;
# agents build and run their own programs in the workspace.
@test "sandbox_exec: inline code never replaces a workspace file, a file runs by its extension, builds run" {
	session_server python
	ws=$sessions/$sid
	step write_file '{path: "main.py", content: "print(\"mine\")\n"}'
	step sandbox_exec '{code: "print(\"inline\")"}'
	step sandbox_exec '{file: "main.py"}'
	step write_file '{path: "t.js", content: "console.log(\"node\", typeof require)\n"}'
	step sandbox_exec '{file: "t.js"}'
	step write_file '{path: "main.c", content: "#include <stdio.h>\nint main(void) { puts(\"my c\"); return 0; }\n"}'
	step sandbox_exec '{language: "c", code: "#include <stdio.h>\nint main(void) { puts(\"inline c\"); return 0; }\n"}'
	step write_file '{path: "run.sh", content: "#!/bin/sh\necho script ran\n"}'
	step sandbox_exec '{command: ["sh", "-c", "chmod +x run.sh && ./run.sh && gcc -o a.out main.c && ./a.out"]}'
	step list_files '{}'
	step read_file '{path: ".sbx-x/main.py"}'
	step write_file '{path: ".sbx-0123456789abcdef/main.py", content: "x"}'
	step write_file '{path: "noext", content: "import sys; print(sys.version_info[0])\n"}'
	step sandbox_exec '{file: "noext"}'
	# inline code sees the workspace's modules as a file there would
	step write_file '{path: "helper.py", content: "X = 7\n"}'
	step sandbox_exec '{code: "import helper; print(helper.X)"}'
	step write_file '{path: "h.js", content: "module.exports = 8\n"}'
	step sandbox_exec '{language: "javascript", code: "console.log(require(\"./h.js\"))"}'
	# an error about the file names the argument the agent gave
	step sandbox_exec '{file: "-x.py"}'
	# from the host's side: the user's files are theirs, nothing else was left
	[ "$(cat "$ws/main.py")" = 'print("mine")' ]
	grep -q 'my c' "$ws/main.c"
	[ -z "$(find "$ws" -maxdepth 1 \( -name '.sbx*' -o -name main.sh -o -name main \))" ]
	[ ! -e "$ws/.sbx-0123456789abcdef" ]
	exec 7>&-
	wait "$server"
	answer 3 | jq -e '.result.structuredContent.stdout == "inline\n"'
	answer 4 | jq -e '.result.structuredContent.stdout == "mine\n"'
	answer 6 | jq -e '.result.structuredContent.stdout == "node function\n" and .result.structuredContent.language == "javascript"'
	answer 8 | jq -e '.result.structuredContent.stdout == "inline c\n"'
	answer 10 | jq -e '.result.structuredContent.stdout == "script ran\nmy c\n"' || { answer 10 >&2; false; }
	answer 11 | jq -e '[.result.structuredContent.files[].path] | sort == [".deps", "a.out", "main.c", "main.py", "run.sh", "t.js"]'
	answer 12 | jq -e '.result.isError == true and (.result.content[0].text | contains("sbx"))'
	answer 13 | jq -e '.result.isError == true'
	# an extensionless file runs in the session's language (python here)
	answer 15 | jq -e '.result.structuredContent.stdout == "3\n"'
	answer 17 | jq -e '.result.structuredContent.stdout == "7\n"'
	answer 19 | jq -e '.result.structuredContent.stdout == "8\n"'
	answer 20 | jq -e '.result.isError and (.result.structuredContent.error | startswith("\"file\" \"-x.py\" begins with \"-\"")) and
		(.result.content[0].text | contains("entry") | not)'
	# the history has the real language and the file's code, not a bash wrapper
	"$BIN/sbx-history" -c "$conf" --session "$sid" --jq '[.language, .code_snippet]' > hist
	grep -qF '["javascript","console.log(\"node\", typeof require)\n"]' hist
	grep -qF '["python","print(\"mine\")\n"]' hist
	grep -qF '["python","sh -c '"'"'chmod +x run.sh && ./run.sh && gcc -o a.out main.c && ./a.out'"'"'"]' hist
	! grep -q '"bash"' hist || false
}

@test "workspace_exec = false keeps a session's workspace noexec; inline C still runs" {
	conf=$(conf_with 's/^workspace_exec .*/workspace_exec = false/')
	session_server python
	ws=$sessions/$sid
	step write_file '{path: "run.sh", content: "#!/bin/sh\necho script ran\n"}'
	step sandbox_exec '{command: ["sh", "-c", "chmod +x run.sh && ./run.sh"]}'
	step sandbox_exec '{language: "c", code: "#include <stdio.h>\nint main(void) { puts(\"inline c\"); return 0; }\n"}'
	exec 7>&-
	wait "$server"
	answer 3 | jq -e '.result.structuredContent.status == "error" and (.result.structuredContent.stderr | contains("Permission denied"))'
	answer 4 | jq -e '.result.structuredContent.stdout == "inline c\n"' || { answer 4 >&2; false; }
}

@test "resources: session files listed (paged), read as text or blob, one template; confined as the file tools; logging" {
	session_server python
	step write_file '{path: "a/b.py", content: "print(1)\n"}'
	step write_file '{path: "p.png", content: "iVBORw0KGgo=", encoding: "base64"}'
	step sandbox_exec '{code: "import os; os.symlink(\"/etc/passwd\", \"link\"); open(\"out.txt\", \"w\").write(\"made\")"}'
	for m in '"resources/list"' '"resources/templates/list"'; do
		n=$((n + 1)); echo "{\"jsonrpc\":\"2.0\",\"id\":$n,\"method\":$m}" >&7; wait_for $n
	done
	read_res() { n=$((n + 1)); jq -nc --argjson id $n --arg u "$1" '{jsonrpc: "2.0", id: $id, method: "resources/read", params: {uri: $u}}' >&7; wait_for $n; }
	read_res "sbx://session/$sid/a/b.py"
	read_res "sbx://session/$sid/p.png"
	read_res "sbx://session/$sid/link"
	read_res "sbx://session/$sid/../../../etc/passwd"
	read_res "sbx://session/00000000000000000000000000000000/x"
	n=$((n + 1)); echo "{\"jsonrpc\":\"2.0\",\"id\":$n,\"method\":\"resources/list\",\"params\":{\"cursor\":\"nope\"}}" >&7; wait_for $n
	# logging: nothing until asked; then what the agent should know
	n=$((n + 1)); echo "{\"jsonrpc\":\"2.0\",\"id\":$n,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"info\"}}" >&7; wait_for $n
	n=$((n + 1)); call $n run_code '{"language":"python","code":"1","timeout":999}' >&7; wait_for $n
	exec 7>&-
	wait "$server"
	answer 5 | jq -e --arg s "$sid" '[.result.resources[] | [.uri, .mimeType]] | sort == [["sbx://session/\($s)/a/b.py", "text/x-python"], ["sbx://session/\($s)/out.txt", "text/plain"], ["sbx://session/\($s)/p.png", "image/png"]]'
	answer 5 | jq -e '.result | has("nextCursor") | not'
	answer 6 | jq -e '.result.resourceTemplates[0].uriTemplate == "sbx://session/{session_id}/{path}"'
	answer 7 | jq -e '.result.contents[0].text == "print(1)\n" and .result.contents[0].mimeType == "text/x-python"'
	answer 8 | jq -e '.result.contents[0].blob == "iVBORw0KGgo=" and .result.contents[0].mimeType == "image/png"'
	answer 9 | jq -e '.error.code == -32002 and (.error.message | contains("symbolic links are not followed"))'
	answer 10 | jq -e '.error.code == -32002'
	answer 11 | jq -e '.error.code == -32002'
	answer 12 | jq -e '.error.code == -32602'
	answer 13 | jq -e '.result == {}'
	# one message, at warning, before the call's answer; none before setLevel
	[ "$(jq -sc '[.[] | select(.method == "notifications/message") | .params | [.level, .logger, (.data | contains("exceeds max_timeout"))]]' out)" = '[["warning","sbx",true]]' ]
	answer 0 | jq -e '.result.capabilities | has("resources") and has("logging")'
}

@test "resources/subscribe: a change a call makes is announced before its answer; unchanged, unsubscribed or unknown: nothing" {
	session_server python
	rpc() { n=$((n + 1)); jq -nc --argjson id $n --arg m "$1" --argjson p "$2" '{jsonrpc: "2.0", id: $id, method: $m, params: $p}' >&7; wait_for $n; }
	uri="sbx://session/$sid/out.txt"
	rpc resources/subscribe "$(jq -nc --arg u "$uri" '{uri: $u}')"; sub=$n
	rpc resources/subscribe '{"uri": "test://nothing-of-ours"}'
	rpc resources/subscribe "$(jq -nc --arg u "sbx://session/$sid/other.txt" '{uri: $u}')"
	step sandbox_exec '{code: "open(\"out.txt\", \"w\").write(\"1\")"}'; made=$n
	step sandbox_exec '{code: "print(open(\"out.txt\").read())"}'; same=$n
	step write_file '{path: "out.txt", content: "2"}'; wrote=$n
	rpc resources/unsubscribe "$(jq -nc --arg u "$uri" '{uri: $u}')"
	step sandbox_exec '{code: "open(\"out.txt\", \"w\").write(\"3\")"}'
	rpc resources/subscribe '{"uri": ""}'; bad=$n
	exec 7>&-
	wait "$server"
	answer $sub | jq -e '.result == {}'
	answer $bad | jq -e '.error.code == -32602'
	# exactly two announcements, of out.txt, each just before the answer of the call that made it
	jq -sc '[.[] | select(.method == "notifications/resources/updated") | .params.uri]' out | jq -e --arg u "$uri" '. == [$u, $u]'
	for id in $made $wrote; do
		jq -sc --argjson id $id 'map(select(.method == "notifications/resources/updated" or .id == $id)) | . as $a
			| [range(length - 1) | select($a[. + 1].id == $id)] | .[0] as $i | $a[$i].method' out | grep -q resources/updated
	done
	answer 0 | jq -e '.result.capabilities.resources.subscribe == true and .result.capabilities.completions == {}'
}

@test "live output: with a progress token, a program's output comes as progress notifications while it runs; the answer is unchanged" {
	code='import sys, time
for i in range(3):
    print("line", i, flush=True)
    time.sleep(0.4)
sys.stderr.write("warn\n"); sys.stderr.flush()
time.sleep(0.4)
print("x" * 70000)'
	{
		init
		call 1 run_code "$(jq -nc --arg c "$code" '{language: "python", code: $c}')" '{"progressToken": "t1"}'
		call 2 run_code '{"language":"python","code":"print(1)"}'
	} | mcp
	jq -sc '[.[] | select(.method == "notifications/progress" and .params.progressToken == "t1") | .params]' out > p
	# the stage notifications, and between "running" and "done" the output in order, each while it ran
	jq -e '[.[].message] | .[0:5] == ["queued", "running", "line 0\n", "line 1\n", "line 2\n"] and .[-1] == "done"' p
	jq -e '[.[] | select(._meta["io.github.sbx/output"].stream == "stderr") | .message] == ["warn\n"]' p
	jq -e '[.[].progress] as $v | [range(1; $v | length) | $v[.] > $v[. - 1]] | all' p
	# 64 KiB at most, then one notification that the rest is in the result
	jq -e '([.[] | select(._meta["io.github.sbx/output"]) | .message | length] | add) <= 65536 + 40' p
	jq -e 'any(.[]; .message == "(more output: in the result)")' p
	answer 1 | jq -e '.result.structuredContent.stdout | startswith("line 0\nline 1\nline 2\nxxx")'
	# no token, no notifications
	[ "$(jq -sc '[.[] | select(.method == "notifications/progress" and .params.progressToken != "t1")] | length' out)" = 0 ]
	answer 2 | jq -e '.result.structuredContent.stdout == "1\n"'
}

@test "tasks: a run as a task, polled, waited for, listed, cancelled; tools that do not run as tasks say so" {
	session_server python
	rpc() { n=$((n + 1)); jq -nc --argjson id $n --arg m "$1" --argjson p "$2" '{jsonrpc: "2.0", id: $id, method: $m, params: $p}' >&7; }
	tcall() { n=$((n + 1)); jq -nc --argjson id $n --arg t "$1" --argjson a "$2" '{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: $t, arguments: $a, task: {ttl: 60000}, _meta: {progressToken: "tp"}}}' >&7; wait_for $n; }
	rpc tools/list '{}'; wait_for $n; list=$n
	tcall run_code '{"language": "python", "code": "import time\ntime.sleep(1)\nprint(\"late\")"}'; made=$n
	task=$(answer $made | jq -r .result.task.taskId)
	rpc tasks/get "$(jq -nc --arg t "$task" '{taskId: $t}')"; wait_for $n; working=$n
	rpc tasks/result "$(jq -nc --arg t "$task" '{taskId: $t}')"; waited=$n
	wait_for $waited
	rpc tasks/get "$(jq -nc --arg t "$task" '{taskId: $t}')"; wait_for $n; done_get=$n
	tcall run_code '{"language": "python", "code": "import time\ntime.sleep(30)"}'; long=$n
	ltask=$(answer $long | jq -r .result.task.taskId)
	rpc tasks/cancel "$(jq -nc --arg t "$ltask" '{taskId: $t}')"; wait_for $n; cancel=$n
	rpc tasks/result "$(jq -nc --arg t "$ltask" '{taskId: $t}')"; wait_for $n; cres=$n
	rpc tasks/cancel "$(jq -nc --arg t "$ltask" '{taskId: $t}')"; wait_for $n; again=$n
	tcall run_code '{"language": "cobol", "code": "x"}'; bad=$n
	btask=$(answer $bad | jq -r .result.task.taskId)
	rpc tasks/result "$(jq -nc --arg t "$btask" '{taskId: $t}')"; wait_for $n; bres=$n
	rpc tasks/list '{}'; wait_for $n; listed=$n
	tcall list_files "$(jq -nc --arg s "$sid" '{session_id: $s}')"; notask=$n
	rpc tasks/get '{"taskId": "0123"}'; wait_for $n; unknown=$n
	exec 7>&-
	wait "$server"
	answer $list | jq -e '.result.tools | map(select(.execution.taskSupport == "optional") | .name) | sort == ["install_packages", "run_cell", "run_code", "sandbox_exec"]'
	answer $made | jq -e '.result.task.status == "working" and .result.task.ttl == 60000 and .result.task.pollInterval > 0 and (.result.task.taskId | test("^[0-9a-f]{32}$"))'
	answer $working | jq -e '.result.status == "working" and .result.createdAt'
	answer $waited | jq -e --arg t "$task" '.result.structuredContent.stdout == "late\n" and .result._meta["io.modelcontextprotocol/related-task"].taskId == $t'
	answer $done_get | jq -e '.result.status == "completed" and (has("pollInterval") | not)'
	# the answer waited: tasks/result came after the run, the task's status was announced
	jq -se --arg t "$task" 'map(select(.method == "notifications/tasks/status" and .params.taskId == $t)) | .[0].params.status == "completed"' out
	answer $cancel | jq -e '.result.status == "cancelled"'
	answer $cres | jq -e '.result.isError == true'
	answer $again | jq -e '.error.code == -32602'
	answer $bres | jq -e '.result.isError == true and (.result.content[0].text | test("unsupported language"))'
	answer $listed | jq -e --arg a "$task" --arg b "$ltask" --arg c "$btask" '[.result.tasks[] | {(.taskId): .status}] | add | .[$a] == "completed" and .[$b] == "cancelled" and .[$c] == "failed"'
	answer $notask | jq -e '.error.code == -32601'
	answer $unknown | jq -e '.error.code == -32602'
	answer 0 | jq -e '.result.capabilities.tasks == {list: {}, cancel: {}, requests: {tools: {call: {}}}}'
}

@test "tasks: a queued task survives notifications/cancelled for its request, and is cancelled by tasks/cancel; nothing dangles" {
	conf=$(conf_with 's/^max_concurrent .*/max_concurrent = 1/')
	session_server python
	tcall() { n=$((n + 1)); jq -nc --argjson id $n --arg c "$1" '{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: "run_code", arguments: {language: "python", code: $c}, task: {}}}' >&7; wait_for $n; }
	rpc() { n=$((n + 1)); jq -nc --argjson id $n --arg m "$1" --argjson p "$2" '{jsonrpc: "2.0", id: $id, method: $m, params: $p}' >&7; wait_for $n; }
	tcall 'import time; time.sleep(30)'; a=$n
	tcall 'print("queued")'; b=$n
	ta=$(answer $a | jq -r .result.task.taskId); tb=$(answer $b | jq -r .result.task.taskId)
	echo "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":$b}}" >&7
	rpc tasks/get "$(jq -nc --arg t "$tb" '{taskId: $t}')"; still=$n
	rpc tasks/cancel "$(jq -nc --arg t "$tb" '{taskId: $t}')"; cb=$n
	rpc tasks/cancel "$(jq -nc --arg t "$ta" '{taskId: $t}')"; ca=$n
	rpc tasks/list '{}'; listed=$n
	exec 7>&-
	wait "$server"
	answer $still | jq -e '.result.status == "working"'
	answer $cb | jq -e '.result.status == "cancelled"'
	answer $ca | jq -e '.result.status == "cancelled"'
	answer $listed | jq -e '[.result.tasks[].status] | sort == ["cancelled", "cancelled"]'
	! grep -E 'Sanitizer|runtime error' err || false
}

@test "2026-07-28 tasks extension: a run still going after a second becomes a task (resultType task), polled to its result with tasks/get" {
	ext='{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}'
	plain='{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
	mkfifo in
	"$BIN/sbx-mcp" -c "$conf" < in > out 2> err &
	server=$!
	exec 7> in
	jq -nc --argjson m "$ext" '{jsonrpc: "2.0", id: 1, method: "server/discover", params: {_meta: $m}}' >&7
	call 2 run_code '{"language":"python","code":"import time\ntime.sleep(2)\nprint(\"slow\")"}' "$ext" >&7
	call 3 run_code '{"language":"python","code":"print(\"fast\")"}' "$ext" >&7
	call 4 run_code '{"language":"python","code":"import time\ntime.sleep(1.5)\nprint(\"no ext\")"}' "$plain" >&7
	wait_for 2
	task=$(answer 2 | jq -r .result.taskId)
	# poll, as a client does, until it is terminal
	for i in $(seq 40); do
		jq -nc --argjson id $((100 + i)) --arg t "$task" --argjson m "$plain" '{jsonrpc: "2.0", id: $id, method: "tasks/get", params: {taskId: $t, _meta: $m}}' >&7
		wait_for $((100 + i))
		[ "$(answer $((100 + i)) | jq -r .result.status)" = working ] || break
		sleep 0.25
	done
	last=$((100 + i))
	call 5 run_code '{"language":"python","code":"import time\ntime.sleep(30)"}' "$ext" >&7
	wait_for 5
	long=$(answer 5 | jq -r .result.taskId)
	jq -nc --arg t "$long" --argjson m "$plain" '{jsonrpc: "2.0", id: 6, method: "tasks/cancel", params: {taskId: $t, _meta: $m}}' >&7
	wait_for 6
	jq -nc --arg t "$long" --argjson m "$plain" '{jsonrpc: "2.0", id: 7, method: "tasks/get", params: {taskId: $t, _meta: $m}}' >&7
	wait_for 7
	wait_for 4
	exec 7>&-
	wait "$server"
	answer 1 | jq -e '.result.capabilities.extensions["io.modelcontextprotocol/tasks"] == {}'
	answer 2 | jq -e '.result.resultType == "task" and .result.status == "working" and .result.ttlMs > 0 and .result.pollIntervalMs > 0'
	answer 3 | jq -e '.result.resultType == "complete" and .result.structuredContent.stdout == "fast\n"'
	answer $last | jq -e '.result.status == "completed" and .result.resultType == "complete" and .result.result.structuredContent.stdout == "slow\n"'
	answer 4 | jq -e '.result.resultType == "complete" and .result.structuredContent.stdout == "no ext\n"'
	answer 6 | jq -e '.result == {resultType: "complete"}'
	answer 7 | jq -e '.result.status == "cancelled"'
}

@test "completion/complete: the caller's session ids, a session's paths, language names; nothing for prompts" {
	session_server python
	rpc() { n=$((n + 1)); jq -nc --argjson id $n --arg m "$1" --argjson p "$2" '{jsonrpc: "2.0", id: $id, method: $m, params: $p}' >&7; wait_for $n; }
	step write_file '{path: "src/main.py", content: "1"}'
	step write_file '{path: "src/util.py", content: "2"}'
	step write_file '{path: "notes.txt", content: "3"}'
	tmpl='{"type": "ref/resource", "uri": "sbx://session/{session_id}/{path}"}'
	rpc completion/complete "$(jq -nc --argjson r "$tmpl" --arg v "${sid:0:4}" '{ref: $r, argument: {name: "session_id", value: $v}}')"; ids=$n
	rpc completion/complete "$(jq -nc --argjson r "$tmpl" --arg s "$sid" '{ref: $r, argument: {name: "path", value: "src/"}, context: {arguments: {session_id: $s}}}')"; paths=$n
	rpc completion/complete "$(jq -nc --argjson r "$tmpl" '{ref: $r, argument: {name: "path", value: ""}, context: {arguments: {session_id: "00000000000000000000000000000000"}}}')"; other=$n
	rpc completion/complete '{"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "language", "value": "py"}}'; langs=$n
	rpc completion/complete '{"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "a"}}'; prompt=$n
	rpc completion/complete '{"ref": {"type": "ref/tool"}, "argument": {"name": "a", "value": ""}}'; bad=$n
	rpc resources/templates/list '{"cursor": "1"}'; tcur=$n
	exec 7>&-
	wait "$server"
	answer $ids | jq -e --arg s "$sid" '.result.completion == {values: [$s], total: 1, hasMore: false}'
	answer $paths | jq -e '.result.completion.values == ["src/main.py", "src/util.py"]'
	answer $other | jq -e '.result.completion.values == []'
	answer $langs | jq -e '.result.completion.values | index("python") and index("py") and index("python3") and (map(startswith("py")) | all)'
	answer $prompt | jq -e '.result.completion == {values: [], total: 0, hasMore: false}'
	answer $bad | jq -e '.error.code == -32602'
	# every list method refuses a cursor it did not give
	answer $tcur | jq -e '.error.code == -32602'
}

@test "artifacts: an image a run makes comes back as an image, other files (an SVG too) as resources; the history keeps none of it" {
	{
		init
		call 1 run_code '{"language":"python","code":"import base64; open(\"plot.png\", \"wb\").write(base64.b64decode(\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC\")); open(\"notes.txt\", \"w\").write(\"n\"); open(\"x.svg\", \"w\").write(\"<svg onload=\\\"alert(1)\\\"><script>alert(2)</script></svg>\")"}'
	} | mcp
	answer 1 | jq -e '.result.structuredContent.artifacts | map(del(.bytes) | .uri |= test("^sbx://run/mcp-[0-9]+-[0-9]+-[0-9a-f]+/[a-z.]+$")) == [{"path": "notes.txt", "mime_type": "text/plain", "uri": true}, {"path": "plot.png", "mime_type": "image/png", "uri": true, "shown": "inline"}, {"path": "x.svg", "mime_type": "image/svg+xml", "uri": true}]'
	answer 1 | jq -e '.result.content[1].type == "resource" and (.result.content[1].resource.uri | test("^sbx://run/.*/notes.txt$")) and .result.content[1].resource.blob == "bg=="'
	answer 1 | jq -e '.result.content[2] == {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC", "mimeType": "image/png"}'
	# an SVG can carry script: a file, never image content a client renders
	answer 1 | jq -e '[.result.content[] | select(.type == "image")] | length == 1'
	answer 1 | jq -e '.result.content[3].type == "resource" and .result.content[3].resource.mimeType == "image/svg+xml" and (.result.content[3].resource.uri | endswith("/x.svg"))'
	"$BIN/sbx-history" -c "$conf" --record --jq '.record | has("artifacts")' | grep -qx false
	session_server python
	step sandbox_exec '{code: "open(\"r.txt\", \"w\").write(\"r\")"}'
	exec 7>&-
	wait "$server"
	answer 2 | jq -e --arg s "$sid" '.result.content[1] == {"type": "resource_link", "uri": "sbx://session/\($s)/r.txt", "name": "r.txt", "mimeType": "text/plain"}'
}

@test "artifacts: a large image comes scaled down inline and whole as a resource; hostile PNGs are refused by a confined decoder" {
	cat > png.py <<'EOF'
import random, struct, zlib
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
def png(w, h, idat):
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
random.seed(1)
w, h = 640, 480
rows = b"".join(b"\0" + random.randbytes(w * 3) for _ in range(h))
open("noise.png", "wb").write(png(w, h, zlib.compress(rows)))
# a header that claims 400 million pixels: never decoded
open("huge.png", "wb").write(png(20000, 20000, zlib.compress(b"\0" * 70000)))
# a valid header over garbage, and a PNG cut short
open("bad.png", "wb").write(png(640, 480, random.randbytes(70000)))
open("cut.png", "wb").write(png(w, h, zlib.compress(rows))[:60000])
# GIFs: decoders grow a 1x1 screen to hold a 5000x5000 frame; an honest one
def gif(fw, fh):
    return (b"GIF89a" + struct.pack("<HHBBB", 1, 1, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff" + b"\x2c" +
            struct.pack("<HHHHB", 0, 0, fw, fh, 0) + b"\x02\x02\x4c\x01\x00\x3b")
open("grow.gif", "wb").write(gif(5000, 5000))
open("dot.gif", "wb").write(gif(1, 1))
# a JPEG whose restart marker, read as a segment with a length, would jump
# to a 1x1 frame header where a decoder finds a 5000x5000 one
sof = lambda w, h: b"\xff\xc0\x00\x11\x08" + struct.pack(">HH", h, w) + b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
open("decoy.jpg", "wb").write(b"\xff\xd8\xff\xd0" + sof(5000, 5000)[:2] + b"\x00\x02" + sof(1, 1) + sof(5000, 5000) + b"\xff\xd9")
EOF
	{
		init
		call 1 run_code "$(jq -nc --rawfile c png.py '{language: "python", code: $c}')"
	} | mcp
	answer 1 | jq -e '.result.structuredContent.status == "success"' || { answer 1 | cut -c1-800 >&2; false; }
	# the noise: a copy within image_inline (48k of base64), scaled by a
	# whole factor, and the whole PNG as an embedded resource
	answer 1 | jq -e '[.result.content[] | select(.type == "image")] | length == 2 and (.[0].mimeType == "image/gif") and (.[1].data | length) <= 49152'
	answer 1 | jq -r '.result.content[] | select(.type == "image" and .mimeType == "image/png") | .data' | base64 -d > thumb.png
	python3 -c 'import struct,sys; d=open("thumb.png","rb").read(); w,h=struct.unpack(">II",d[16:24]); sys.exit(not (d[:8]==b"\x89PNG\r\n\x1a\n" and w<640 and h<480 and 640//w==480//h))'
	answer 1 | jq -e '.result.structuredContent.artifacts[] | select(.path == "noise.png") | .shown | test("^inline at [0-9]+x[0-9]+ of 640x480$")'
	# every file whole, as an embedded resource (its base64: 4 characters per 3 bytes)
	answer 1 | jq -e '(.result.structuredContent.artifacts | map({(.path): (((.bytes + 2) / 3 | floor) * 4)}) | add) as $b |
		[.result.content[] | select(.type == "resource") | .resource | {(.uri | split("/")[-1]): (.blob | length)}] | add == ($b | del(.["dot.gif"]))'
	# the others: not inline, and why
	answer 1 | jq -e '.result.structuredContent.artifacts | map({(.path): .shown}) | add |
		(.["huge.png"] == "not inline: 20000x20000 pixels, too many to show") and
		(.["bad.png"] | test("not inline .*could not be decoded")) and (.["cut.png"] | test("not inline .*could not be decoded")) and
		.["grow.gif"] == "not inline: 5000x5000 pixels, too many to show" and .["dot.gif"] == "inline" and
		.["decoy.jpg"] == "not inline: its header does not say its size"'
	answer 1 | jq -e '.result.content[0].text | test("noise.png [(]image/png, [0-9.]+ KiB, inline at [0-9]+x[0-9]+ of 640x480[)]")'
	! grep -q "Sanitizer\|runtime error" err || false
}

@test "sbx-thumb, seen from the host: a fresh exec as the sandboxes' nobody, under seccomp, no new privileges, three fds, before it reads the PNG" {
	skip_unless_root
	thumb=$BIN/../libexec/sbx/sbx-thumb
	nobody=$(( $(sed -n 's/^uid *= *\([0-9]*\).*/\1/p' "$SBX_CONF" | head -1) + 2 ))
	[ "$nobody" -gt 2 ] || nobody=60002
	python3 -c '
import struct, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
rows = b"".join(b"\0" + bytes((x * 7 + y * 3) % 256 for x in range(300 * 3)) for y in range(200))
open("in.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 300, 200, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))'
	mkfifo fifo
	# (its stdout a pipe, as sbx-mcp gives it: no file may grow)
	"$thumb" "$nobody" 4000 < fifo 2> /dev/null > >(cat > out) &
	pid=$!
	exec 8> fifo
	# blocked on its stdin, already confined: read from /proc
	for _ in $(seq 100); do grep -q '^Seccomp:[[:space:]]*2' /proc/$pid/status 2> /dev/null && break; sleep 0.05; done
	grep -q '^Seccomp:[[:space:]]*2$' /proc/$pid/status
	grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/$pid/status
	grep -qE "^Uid:[[:space:]]+$nobody[[:space:]]+$nobody[[:space:]]+$nobody[[:space:]]+$nobody$" /proc/$pid/status
	grep -qE "^Groups:[[:space:]]*$" /proc/$pid/status
	[ "$(ls /proc/$pid/fd | sort | tr '\n' ' ')" = "0 1 2 " ]
	cat in.png >&8
	exec 8>&-
	wait "$pid"
	for _ in $(seq 100); do [ -s out ] && break; sleep 0.05; done
	# its answer: the copy's size, then a PNG of it within 4000 bytes
	python3 -c 'import struct,sys; d=open("out","rb").read(); w,h=struct.unpack("=II",d[:8]); p=d[8:]; sys.exit(not (p[:8]==b"\x89PNG\r\n\x1a\n" and struct.unpack(">II",p[16:24])==(w,h) and w<300 and len(p)<=4000))'
	# misuse: the usage, exit 2
	run "$thumb"
	[ "$status" -eq 2 ]
	[[ "$output" == *"usage: sbx-thumb UID MAX"* ]]
}

@test "run_code with matplotlib: plt.show() is an image block the model sees" {
	[ -d /usr/lib/python3/dist-packages/matplotlib ] || skip "python3-matplotlib is not installed (make deps installs it)"
	cmp -s "$ROOT/share/python/sitecustomize.py" /usr/local/share/sbx/python/sitecustomize.py ||
		skip "the sandboxes' Python hook is not installed (make deps installs it)"
	{
		init
		call 1 run_code '{"language":"python","timeout":30,"code":"import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title(\"squares\")\nplt.show()\nprint(\"shown\")"}'
	} | mcp
	answer 1 | jq -e '(.result.isError // false) == false and .result.structuredContent.status == "success"'
	answer 1 | jq -e '[.result.content[] | select(.type == "image")] | length == 1 and .[0].mimeType == "image/png"'
	answer 1 | jq -r '.result.content[] | select(.type == "image") | .data' | base64 -d > fig.png
	file fig.png | grep -q 'PNG image data'
}

# A session with a planted tree: a symlink to /etc/shadow, a FIFO, a big
# file (1 GiB is refused by file_size), a symlinked directory.  Then every file tool is attacked.
@test "session attacks: traversal, planted symlink, FIFO, 1 GiB and 60 MiB files, symlinked directory, guessed ids" {
	skip_unless_root
	mkfifo in
	"$BIN/sbx-mcp" -c "$conf" < in > out 2> err &
	exec 7> in
	{ init; call 1 sandbox_initialize '{"language":"python"}'; } >&7
	for i in $(seq 50); do answer 1 | grep -q session_id && break; sleep 0.1; done
	sid=$(answer 1 | jq -r .result.structuredContent.session_id)
	plant='import os
os.symlink("/etc/shadow", "shadow")
os.symlink("/etc", "etcdir")
os.mkfifo("fifo")
import signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
try:
    with open("huge", "wb") as f: f.truncate(1 << 30)
except OSError as e: print("1 GiB refused:", e.errno)
with open("big", "wb") as f: f.write(b"\xff" * (60 << 20))
print("planted")'
	call 2 sandbox_exec "$(jq -nc --arg s "$sid" --arg c "$plant" '{session_id: $s, code: $c}')" >&7
	for i in $(seq 50); do answer 2 | grep -q planted && break; sleep 0.1; done
	n=10
	for path in ../../../etc/passwd /etc/passwd shadow etcdir/passwd fifo "a/../../x" "" "./." big; do
		n=$((n + 1)); call $n read_file "$(jq -nc --arg s "$sid" --arg p "$path" '{session_id: $s, path: $p}')" >&7
	done
	for path in ../escape /tmp/escape etcdir/owned "x/../../y"; do
		n=$((n + 1)); call $n write_file "$(jq -nc --arg s "$sid" --arg p "$path" '{session_id: $s, path: $p, content: "pwned"}')" >&7
	done
	for path in .. /etc etcdir; do
		n=$((n + 1)); call $n list_files "$(jq -nc --arg s "$sid" --arg p "$path" '{session_id: $s, path: $p}')" >&7
	done
	other=$(printf '%032x' 12345)
	for args in "read_file {\"path\":\"x\"}" "sandbox_exec {\"code\":\"1\"}" "list_files {}" "sandbox_stop {}"; do
		n=$((n + 1)); call $n "${args%% *}" "$(jq -c --arg s "$other" '. + {session_id: $s}' <<< "${args#* }")" >&7
	done
	n=$((n + 1)); call $n read_file "{\"session_id\":\"../$sid\",\"path\":\"big\"}" >&7
	last=$n
	# writing over the planted link replaces the link, not its target
	shadow=$(sha256sum /etc/shadow)
	call 99 write_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: "shadow", content: "pwned"}')" >&7
	call 98 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, command: ["stat", "-c", "%F", "shadow"]}')" >&7
	exec 7>&-
	wait
	for i in $(seq 11 $last); do
		[ "$i" = 19 ] && continue # "big": read, capped
		answer $i | jq -e '.result.isError == true' > /dev/null || { answer $i >&2; false; }
	done
	answer 13 | jq -e '.result.content[0].text | contains("symbolic links are not followed")'
	answer 15 | jq -e '.result.content[0].text | contains("not a regular file")'
	# a 1 GiB file cannot even be planted (file_size); the largest that can
	# comes back capped at max_files_size, marked truncated
	answer 2 | jq -e '.result.structuredContent.stdout == "1 GiB refused: 27\nplanted\n"'
	answer 19 | jq -e '.result.structuredContent.truncated == true and .result.structuredContent.bytes == 62914560 and .result.structuredContent.encoding == "base64" and (.result.structuredContent.content | length) <= 4 * 1048576 * 4 / 3 + 4'
	answer 99 | jq -e '.result.isError == false'
	answer 98 | jq -e '.result.structuredContent.stdout == "regular file\n"'
	[ "$shadow" = "$(sha256sum /etc/shadow)" ]
	# nothing outside the workspace was read or written
	! grep -q pwned /etc/passwd || false
	[ ! -e /tmp/escape ]
	[ ! -e "$BATS_TEST_TMPDIR/escape" ]
	[ ! -e /etc/owned ]
	! grep -q "$(head -c 20 /etc/shadow | base64)" out || false
	! grep -q 'root:' out || false
}

@test "session file tools: .deps is the installer's; NUL in a path or an argv is refused, not cut short" {
	session_server python
	ws=$sessions/$sid
	# native code planted where every later run may load it from
	call 2 write_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: ".deps/evil.so", content: "\u007fELF"}')" >&7
	call 3 write_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: ".deps", content: "x"}')" >&7
	# a NUL would make "a.py\u0000.txt" the file a.py, and the argv "rm\u0000 -rf" rm
	call 4 write_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: "a.py\u0000.txt", content: "print(1)"}')" >&7
	call 5 read_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: "x\u0000"}')" >&7
	call 6 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, command: ["touch", "made\u0000 -x"]}')" >&7
	call 7 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, file: "b.py\u0000"}')" >&7
	# "." parts meet the same checks
	call 9 write_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: "./.deps/evil.so", content: "\u007fELF"}')" >&7
	call 10 write_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: "./.sbx-0123456789abcdef/x", content: "x"}')" >&7
	# reading .deps and names that merely start with it stay allowed
	call 8 write_file "$(jq -nc --arg s "$sid" '{session_id: $s, path: ".deps-notes.txt", content: "ok"}')" >&7
	wait_for 8
	ls -la "$ws" > listing
	[ -z "$(ls -A "$ws/.deps")" ]
	[ ! -e "$ws/.sbx-0123456789abcdef" ]
	exec 7>&-
	wait
	for i in 2 3 4 5 6 7 9 10; do
		answer $i | jq -e '.result.isError == true or .error' > /dev/null || { answer $i >&2; false; }
	done
	answer 2 | jq -e '.result.content[0].text | contains("installed packages")'
	answer 4 | jq -e '.result.content[0].text // .error.message | contains("NUL")'
	answer 8 | jq -e '.result.isError == false'
	# from the host's side: nothing was made under the names the NUL would have cut to
	! grep -qE ' (a\.py|made|evil\.so)$' listing || false
	grep -q ' .deps-notes.txt$' listing
}

@test "an install reaches its registries and nothing else: not the host, not another host or port, not a local package" {
	command -v npm > /dev/null || skip "npm is not installed"
	host_listener
	cp "$conf" registry.conf # conf_with below rewrites the file $conf names
	conf_registry=$PWD/registry.conf
	# install_specs = "any" lets a local package and a URL through to the
	# proxy, which must stop what they try
	conf=$(conf_with 's/^install_specs *=.*/install_specs = "any"/')
	egress_package mypkg
	session_server javascript
	step write_file "$(jq -nc --rawfile c mypkg/package.json '{path: "mypkg/package.json", content: $c}')"
	step write_file "$(jq -nc --rawfile c mypkg/probe.js '{path: "mypkg/probe.js", content: $c}')"
	step install_packages '{packages: ["./mypkg"]}'
	step read_file '{path: "probe.out"}'
	step install_packages "$(jq -nc --arg u "http://127.0.0.1:$LISTEN_PORT/x.tgz" '{packages: [$u]}')"
	step sandbox_stop '{}'
	exec 7>&-
	wait "$server"
	kill "$LISTENER"
	[ ! -s hits ] || { echo "the host's listener was reached:"; cat hits; false; }
	diff <(answer 5 | jq -j .result.structuredContent.content) <(egress_expected)
	# the install's result accounts for each request the proxy refused, and
	# says why (npm's own, to its registry, may come too: allowed)
	answer 4 | jq -e 'all(.result.structuredContent.egress[]; (.allowed | type) == "boolean" and
		(.bytes_sent | type) == "number" and (.bytes_received | type) == "number" and .duration_ms >= 0)'
	diff <(answer 4 | jq -r '.result.structuredContent.egress[] | select(.allowed | not) | "\(.host) \(.port) \(.why)"' | sort) \
		<(egress_refused | sort)
	answer 4 | jq -e '.result.content[0].text | contains("connections refused or failed:\n") and
		contains("example.com:443: example.com:443 is not in this sandbox'"'"'s network allow-list (registry.npmjs.org)")'
	# npm asked the proxy for the URL, and the proxy said no
	answer 6 | jq -e '.result.structuredContent.status == "error" and (.result.structuredContent.stderr | contains("403 Forbidden"))'
	# with install_specs = "registry" (the default) none of these is even tried
	conf=$conf_registry
	for p in ./mypkg "http://127.0.0.1:$LISTEN_PORT/x.tgz" "git+https://example.com/x.git" "user/repo" "x.tgz" "-e ." "pkg@file:../x"; do
		{ init; call 2 run_code "$(jq -nc --arg p "$p" '{language: "javascript", code: "1", dependencies: [$p]}')"; } | mcp
		answer 2 | jq -e '.result.isError == true and (.result.content[0].text | contains("not a package of the registry"))' > /dev/null ||
			{ echo "$p:"; answer 2; false; }
	done
}

@test "an allowed registry name that resolves to this host is refused: loopback, a local route (AnyIP)" {
	need_registry_ns npm
	# In a network namespace of the test's own: 198.51.100.0/24 is routed
	# to this "host" itself without being any interface's address, and a
	# listener there must see nothing, though the names are allowed.
	cat > probe.js <<'JS'
const net = require("net"), fs = require("fs"), out = [];
const via = (h) => new Promise(r => {
	const s = net.connect(3128, "127.0.0.1"); let b = "";
	s.on("connect", () => s.write("CONNECT " + h + ":443 HTTP/1.1\r\n\r\n"));
	s.on("data", d => { b += d; });
	s.on("close", () => { out.push(h + " -> " + b.split("\r\n")[0]); r(); });
	s.on("error", e => { out.push(h + " " + e.code); r(); });
});
(async () => { await via("198.51.100.5"); await via("localhost"); fs.writeFileSync("/scratch/probe.out", out.join("\n") + "\n"); })();
JS
	install_job probe.js '"registry.npmjs.org", "198.51.100.5", "localhost"'
	unshare --net sh -c '
		ip link set lo up && ip route add local 198.51.100.0/24 dev lo table local || exit 9
		python3 -c "import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"0.0.0.0\", 443)); s.listen(8)
open(\"ready\", \"w\").close()
while True:
    c, a = s.accept(); open(\"hits\", \"a\").write(\"%s\n\" % a[0]); c.close()" &
		l=$!
		for i in $(seq 50); do [ -e ready ] && break; sleep 0.1; done
		"$1" -c "$2" < job > out
		kill $l' sh "$BIN/sbx-run" "$conf"
	[ ! -s hits ] || { echo "reached:"; cat hits; false; }
	[ "$(cat "$ws/probe.out")" = "198.51.100.5 -> HTTP/1.1 502 Bad Gateway
localhost -> HTTP/1.1 502 Bad Gateway" ]
	# the result's records: allowed by name, refused by address
	diff <(jq -r '.egress[] | select(.host != "registry.npmjs.org") | "\(.host) \(.port) \(.allowed) \(.why) \(.bytes_sent)"' out | sort) - <<-EOF
		198.51.100.5 443 true 198.51.100.5 has no address a sandbox may reach (loopback, private, link-local and this host's own are refused) 0
		localhost 443 true localhost has no address a sandbox may reach (loopback, private, link-local and this host's own are refused) 0
	EOF
}

@test "network: a session's default for sandbox_exec, a call's own narrower, refusals an agent can read" {
	conf=$(conf_with 's/^network *=.*/network = ["10.9.9.9", "*.allowed.example"]/')
	code='import os, socket, urllib.parse
p = urllib.parse.urlparse(os.environ.get("HTTPS_PROXY", "http://127.0.0.1:3128"))
for h in ("10.9.9.9", "denied.example"):
    s = socket.create_connection((p.hostname, p.port)); s.sendall(b"CONNECT %s:443 HTTP/1.1\r\n\r\n" % h.encode())
    print(h, s.recv(100).split(b"\r\n")[0].decode())'
	{
		init
		call 1 sandbox_initialize '{"language":"python","network":["evil.example"]}'
		call 2 sandbox_initialize '{"language":"python","network":["10.9.9.9"]}'
		call 3 run_code "$(jq -nc --arg c "$code" '{language: "python", code: $c, network: ["a.allowed.example"]}')"
		call 4 run_code "$(jq -nc --arg c "$code" '{language: "python", code: $c, network: ["a.allowed.example"],
			tests: [{expected_stdout: "x"}, {expected_stdout: "y"}]}')"
	} | mcp
	answer 1 | jq -e '.result.isError and (.result.content[0].text | test("\"evil.example\" is not within what the configuration allows"))'
	answer 2 | jq -e '.result.structuredContent.network == ["10.9.9.9"]'
	# run_code's own list: 10.9.9.9 is not in it, so both are refused, in words
	answer 3 | jq -e '.result.structuredContent.egress | length == 2 and all(.allowed == false)'
	answer 3 | jq -r '.result.content[0].text' > text
	grep -q '^connections refused or failed:' text
	grep -q 'denied.example:443: denied.example:443 is not in this sandbox.s network allow-list' text
	# a judged run's, test by test
	answer 4 | jq -r '.result.content[0].text' > text
	grep -q '^  test 2, denied.example:443: denied.example:443 is not in this sandbox.s network allow-list' text
	# a session's network is each sandbox_exec's that does not give its own:
	# 10.9.9.9 passes the list, and is then refused as a private address
	session_server python '{network: ["10.9.9.9"]}'
	step sandbox_exec "$(jq -nc --arg c "$code" '{code: $c}')"
	answer 2 | jq -e '.result.structuredContent | (.stdout | startswith("10.9.9.9 HTTP/1.1 502")) and
		(.stdout | endswith("denied.example HTTP/1.1 403 Forbidden\n")) and (.egress | length == 2)'
	step sandbox_exec "$(jq -nc --arg c "$code" '{code: $c, network: false}')"
	answer 3 | jq -e '.result.structuredContent | .status == "error" and .egress == null and (.stderr | test("ConnectionRefused"))'
	# the history finds the session's run whose proxy refused a connection
	step get_execution_history '{egress_refused: true}'
	answer 4 | jq -e '.result.structuredContent.runs | length == 1 and .[0].history_id != null'
	[ "$(answer 4 | jq -r '.result.structuredContent.runs[0].id')" = "$(answer 2 | jq -r .result.structuredContent.id)" ]
	exec 7>&-
	wait "$server"
}

@test "an install's proxy: TLS to the host allowed only (no fronting), a tunnel's bytes each way, still open at the stage's end" {
	need_registry_ns npm
	# Two network namespaces of the test's own joined by a veth pair: the
	# proxy's (sbx-run's), and a "registry" at 198.18.0.5 (a range the
	# proxy lets through).  Through the proxy, the probe sends a TLS
	# ClientHello naming another server (domain fronting), then bytes that
	# are not TLS, then a ClientHello naming none (an address was asked
	# for) and 950 bytes more, to which the registry answers 5000 and
	# keeps the connection open: the stage's end must close and record it.
	cat > probe.js <<'JS'
const net = require("net"), fs = require("fs"), out = [];
// A TLS 1.3-style ClientHello record: one cipher suite, and a server name if given.
const hello = (sni) => {
	let ext = Buffer.alloc(0);
	if (sni) {
		const n = Buffer.from(sni), e = Buffer.alloc(9 + n.length);
		e.writeUInt16BE(0, 0); e.writeUInt16BE(5 + n.length, 2); e.writeUInt16BE(3 + n.length, 4);
		e[6] = 0; e.writeUInt16BE(n.length, 7); n.copy(e, 9); ext = e;
	}
	const exts = Buffer.alloc(2); exts.writeUInt16BE(ext.length, 0);
	const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32), Buffer.from([0, 0, 2, 0x13, 1, 1, 0]), exts, ext]);
	const hs = Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 255]), body]);
	return Buffer.concat([Buffer.from([22, 3, 1, hs.length >> 8, hs.length & 255]), hs]);
};
// (a refused tunnel is closed, or reset when our bytes were unread: either way, closed)
const via = (payload, want) => new Promise(r => {
	const s = net.connect(3128, "127.0.0.1"); let b = Buffer.alloc(0), head = false, done = false;
	const end = (what) => { if (!done) { done = true; out.push(what); r(); } };
	s.on("connect", () => s.write("CONNECT 198.18.0.5:443 HTTP/1.1\r\n\r\n"));
	s.on("data", d => {
		b = Buffer.concat([b, d]);
		if (!head && b.indexOf("\r\n\r\n") >= 0) { head = true; b = b.subarray(b.indexOf("\r\n\r\n") + 4); s.write(payload); }
		if (head && want && b.length >= want) end("got " + b.length);
	});
	s.on("close", () => end("closed after " + b.length));
	s.on("error", () => end("closed after " + b.length));
});
(async () => {
	await via(hello("evil.example"), 0);
	await via(Buffer.from("GET / HTTP/1.1\r\nHost: 198.18.0.5\r\n\r\n"), 0);
	const h = hello(null);
	await via(Buffer.concat([h, Buffer.alloc(1000 - h.length, 120)]), 5000);
	fs.writeFileSync("/scratch/probe.out", out.join("\n") + "\n");
	process.exit(0);
})();
JS
	cat > registry.py <<'PY'
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("198.18.0.5", 443)); s.listen(8)
open("ready", "w").close()
def serve(c):
    n = 0
    while n < 1000:
        d = c.recv(4096)
        if not d: break
        n += len(d)
    open("took", "a").write("%d\n" % n)
    if n == 1000:
        c.sendall(b"y" * 5000)
        c.recv(1)  # held open until the proxy goes
while True:
    c, a = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
	registry_install probe.js registry.py
	# the refused ones never reached the registry (it was dialled, and left)
	[ "$(sort -n took | tr '\n' ' ')" = "0 0 1000 " ]
	[ "$(cat "$ws/probe.out")" = "closed after 0
closed after 0
got 5000" ]
	jq -e '.status == "success" and (.egress | length == 3)' out
	diff <(jq -r '.egress[] | "\(.allowed) \(.bytes_sent) \(.bytes_received) \(.why)"' out | sort) - <<-EOF
		false 0 0 the TLS ClientHello names evil.example, not 198.18.0.5, the host allowed
		false 0 0 what came through the tunnel is not TLS
		true 1000 5000 null
	EOF
	jq -e 'all(.egress[]; .host == "198.18.0.5" and .port == 443 and .duration_ms >= 0)' out
	! our_pgrep "" '(^|/)sbx-egress( |$)' || false
}

@test "an install's proxy: a tunnel whose registry stops reading is still closed and recorded at the stage's end" {
	need_registry_ns npm
	# The registry answers one line, then reads nothing more; the probe
	# sends 64 MiB: the proxy's writes to the registry block, and the
	# stage's end (its timeout) must still get the tunnel's record, with
	# the bytes it took from the sandbox, not lose it to a kill.
	cat > probe.js <<'JS'
const net = require("net");
const s = net.connect(3128, "127.0.0.1"); let b = "", head = false;
s.on("connect", () => s.write("CONNECT 198.18.0.5:443 HTTP/1.1\r\n\r\n"));
s.on("data", d => {
	b += d;
	if (!head && b.indexOf("\r\n\r\n") >= 0) {
		head = true;
		s.write(Buffer.from([22, 3, 1, 0, 45, 1, 0, 0, 41, 3, 3].concat(Array(32).fill(0), [0, 0, 2, 0x13, 1, 1, 0])));
	} else if (head && b.indexOf("ready\n") >= 0) {
		b = ""; s.write(Buffer.alloc(64 << 20, 120));
	}
});
JS
	cat > stall.py <<'PY'
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("198.18.0.5", 443)); s.listen(8)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
open("ready", "w").close()
c, a = s.accept()
c.recv(50)  # the hello
c.sendall(b"ready\n")
c.recv(0)   # and nothing more
import time
while True: time.sleep(60)
PY
	registry_install probe.js stall.py '{timeout: 3}'
	jq -e '.status == "timeout" and (.egress | length == 1) and (.egress[0] | .allowed == true and (has("why") | not) and
		.bytes_sent > 65536 and .bytes_sent < 64 * 1048576 and .bytes_received == 6)' out
	! our_pgrep "" '(^|/)sbx-egress( |$)' || false
}

# A registry at 198.18.0.5 for the proxy tests below: on 8080 a raw
# protocol whose server speaks first ("banner"), answering "ping" with
# "pong"; on 80 plain HTTP, appending each request it got (CRLF shown as
# "|") to ./seen and answering 5 bytes, or 5000 for /big.
web_registry() {
	cat > web.py <<'PY'
import socket, threading
def listen(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("198.18.0.5", port)); s.listen(16)
    return s
raw, web = listen(8080), listen(80)
open("ready", "w").close()
def serve_raw(c):
    c.sendall(b"banner\n")
    b = b""
    while not b.endswith(b"ping\n"):
        d = c.recv(100)
        if not d: return
        b += d
    c.sendall(b"pong\n"); c.close()
def serve_web(c):
    b = b""
    while b"\r\n\r\n" not in b:
        d = c.recv(4096)
        if not d: break
        b += d
    head, _, body = b.partition(b"\r\n\r\n")
    n = 0
    for l in head.split(b"\r\n")[1:]:
        k, _, v = l.partition(b":")
        if k.strip().lower() == b"content-length": n = int(v)
    while len(body) < n:
        d = c.recv(4096)
        if not d: break
        body += d
    with open("seen", "a") as f: f.write((head + b"\r\n\r\n" + body).decode().replace("\r\n", "|") + "\n")
    size = 5000 if b" /big " in head.split(b"\r\n")[0] else 5
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size + b"y" * size)
    c.close()
def loop(s, f):
    while True:
        c, a = s.accept()
        threading.Thread(target=f, args=(c,), daemon=True).start()
threading.Thread(target=loop, args=(raw, serve_raw), daemon=True).start()
loop(web, serve_web)
PY
}

# The probe's way to the proxy: ask(first bytes[, on data]) resolves with
# all the proxy answered once it closes.
EGRESS_ASK='const net = require("net"), fs = require("fs"), out = [];
const ask = (first, onData) => new Promise(r => {
	const s = net.connect(3128, "127.0.0.1"); let b = "";
	s.on("connect", () => s.write(first));
	s.on("data", d => { b += d; if (onData) onData(s, b); });
	s.on("close", () => r(b)); s.on("error", () => {});
});
const line = b => b.split("\r\n")[0];'

@test "an allow-list's ports: CONNECT to a listed port relays raw bytes, not to :80; plain HTTP with its Host held, once" {
	need_registry_ns node
	cat > probe.js <<JS
$EGRESS_ASK
(async () => {
	let pinged = false;
	const raw = await ask("CONNECT 198.18.0.5:8080 HTTP/1.1\r\n\r\n",
		(s, b) => { if (!pinged && b.endsWith("banner\n")) { pinged = true; s.write("ping\n"); } });
	out.push("raw " + JSON.stringify(raw.substring(raw.indexOf("\r\n\r\n") + 4)));
	out.push("80 " + line(await ask("CONNECT 198.18.0.5:80 HTTP/1.1\r\n\r\n")));
	out.push("get " + JSON.stringify(await ask("GET http://198.18.0.5/x HTTP/1.1\r\nHost: 198.18.0.5\r\nProxy-Connection: keep-alive\r\n\r\n")));
	out.push("other " + line(await ask("GET http://198.18.0.5/y HTTP/1.1\r\nHost: evil.example\r\n\r\n")));
	out.push("post " + line(await ask("POST http://198.18.0.5:80/p HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcdeGET http://198.18.0.5/z HTTP/1.1\r\n\r\n")));
	out.push("chunked " + line(await ask("POST http://198.18.0.5/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n")));
	out.push("443 " + line(await ask("CONNECT 198.18.0.5:443 HTTP/1.1\r\n\r\n")));
	fs.writeFileSync("probe.out", out.join("\n") + "\n");
})();
JS
	web_registry
	registry_proxy probe.js web.py 1048576 256 0 198.18.0.5:8080 198.18.0.5:80
	[ "$(cat probe.out)" = 'raw "banner\npong\n"
80 HTTP/1.1 403 Forbidden
get "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nyyyyy"
other HTTP/1.1 403 Forbidden
post HTTP/1.1 200 OK
chunked HTTP/1.1 411 Length Required
443 HTTP/1.1 403 Forbidden' ] || { cat probe.out; false; }
	# the server saw the head in origin form, hop-by-hop headers gone,
	# Connection: close; the body to its length and nothing after it
	[ "$(cat seen)" = 'GET /x HTTP/1.1|Host: 198.18.0.5|Connection: close||
POST /p HTTP/1.1|Content-Length: 5|Host: 198.18.0.5:80|Connection: close||abcde' ] || { cat seen; false; }
	get='GET /x HTTP/1.1\r\nHost: 198.18.0.5\r\nConnection: close\r\n\r\n' post='POST /p HTTP/1.1\r\nContent-Length: 5\r\nHost: 198.18.0.5:80\r\nConnection: close\r\n\r\nabcde'
	resp=$(printf 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nyyyyy' | wc -c)
	diff <(jq -r '"\(.port) \(.allowed) \(.bytes_sent) \(.bytes_received) \(.why)"' out) - <<-EOF
		8080 true 5 12 null
		80 false 0 0 CONNECT to port 80 is not passed: plain HTTP goes as an ordinary proxy request (http_proxy), where the proxy holds its Host header to the name allowed
		80 true $(printf "$get" | wc -c) $resp null
		80 false 0 0 the Host header names evil.example, not 198.18.0.5:80, the host the URL names
		80 true $(printf "$post" | wc -c) $resp null
		80 false 0 0 a body with Transfer-Encoding (chunked) is not passed over plain HTTP: send its Content-Length
		443 false 0 0 198.18.0.5:443 is not in this sandbox's network allow-list (198.18.0.5:8080, 198.18.0.5:80): ask for it in the request's "network", within the configuration's
	EOF
	jq -se 'all(.[]; .host == "198.18.0.5" and .duration_ms >= 0)' out
}

@test "an allow-list's egress_rate paces a run's bytes, whole" {
	need_registry_ns node
	cat > probe.js <<JS
$EGRESS_ASK
(async () => {
	const big = await ask("GET http://198.18.0.5/big HTTP/1.1\r\n\r\n");
	fs.writeFileSync("probe.out", big.length + "\n");
})();
JS
	web_registry
	# 2000 bytes a second from the proxy's start: some 5100 bytes take 2.5 s, whole
	registry_proxy probe.js web.py 1048576 256 2000 198.18.0.5:80
	[ "$(cat probe.out)" = 5041 ]
	jq -e '.allowed and .bytes_received == 5041 and .duration_ms > 1500' out
}

@test "an install's proxy keeps the run's egress_bytes (cut, then refused) and egress_connections" {
	need_registry_ns npm
	# TLS tunnels to the registry (a ClientHello naming no server: an
	# address was asked for), which answers 100 bytes, then 5000.
	cat > probe.js <<JS
$EGRESS_ASK
const hello = Buffer.from([22, 3, 1, 0, 45, 1, 0, 0, 41, 3, 3].concat(Array(32).fill(0), [0, 0, 2, 0x13, 1, 1, 0]));
const tls = () => ask("CONNECT 198.18.0.5:443 HTTP/1.1\r\n\r\n", (s, b) => { if (b.endsWith("\r\n\r\n")) s.write(hello); });
const body = b => b.length - b.indexOf("\r\n\r\n") - 4;
(async () => {
	out.push("small " + body(await tls()));
	const big = body(await tls());
	out.push("big " + (big < 5000 ? "short" : big));
	out.push("after " + line(await tls()));
	out.push("fourth " + line(await tls()));
	fs.writeFileSync("/scratch/probe.out", out.join("\n") + "\n");
})();
JS
	cat > tls.py <<'PY'
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("198.18.0.5", 443)); s.listen(8)
open("ready", "w").close()
n = 0
while True:
    c, a = s.accept()
    n += 1
    b = b""
    while len(b) < 50:
        d = c.recv(100)
        if not d: break
        b += d
    c.sendall(b"y" * (100 if n == 1 else 5000))
    c.close()
PY
	registry_install probe.js tls.py "" 's/^egress_bytes *=.*/egress_bytes = "2k"/; s/^egress_connections *=.*/egress_connections = 3/'
	[ "$(cat "$ws/probe.out")" = 'small 100
big short
after HTTP/1.1 403 Forbidden
fourth HTTP/1.1 503 Service Unavailable' ] || { cat "$ws/probe.out"; false; }
	jq -e '.egress | length == 4' out
	jq -e '.egress[0] | .allowed and (has("why") | not) and .bytes_sent == 50 and .bytes_received == 100' out
	jq -e '.egress[1] | .allowed and .bytes_received < 2048 and
		.why == "the run reached its egress_bytes: 2048 bytes both ways over all its connections (the configuration'"'"'s egress_bytes)"' out
	jq -e '.egress[2] | (.allowed | not) and .bytes_sent == 0 and (.why | startswith("the run reached its egress_bytes"))' out
	jq -e '.egress[3] | .host == null and (.why | contains("1 past the 3 a run may make (egress_connections)"))' out
	# the bytes both ways, in all, stayed within the bound
	jq -e '[.egress[] | .bytes_sent + .bytes_received] | add <= 2048' out
}

@test "a session's workspace bounds its inodes: a mkdir loop ends at the filesystem's count, seen on the host" {
	skip_unless_root
	conf=$(conf_with 's/^workspace_size *=.*/workspace_size = "16m"/')
	session_server python
	call 2 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, timeout: 50, code: "import os\nn = 0\ntry:\n    while True:\n        os.mkdir(\"d%d\" % n); n += 1\nexcept OSError as e: print(n, e.errno)"}')" >&7
	wait_for 2 60
	read -r total free < <(stat -f -c '%c %d' "$sessions/$sid")
	exec 7>&-
	wait
	# 16 MiB of workspace: an inode per 8 KiB of ext4 (per 4 KiB of a
	# tmpfs, where there are no loop devices), as the kernel counts them;
	# btrfs has no count of its own, its inodes take room of the 16 MiB
	case $(answer 1 | jq -r .result.structuredContent.workspace_filesystem) in
	btrfs)
		[ "$total" = 0 ]
		answer 2 | jq -e '.result.structuredContent.stdout | test("^[0-9]+ 28\n$") and (split(" ")[0] | tonumber) < 16 * 1048576 / 100'
		return 0
		;;
	ext4) [ "$total" = 2048 ] ;;
	tmpfs) [ "$total" = 4096 ] ;;
	*) false ;;
	esac
	# full but for what the run's own program took (its directory and file, gone with it)
	[ "$free" -le 3 ]
	answer 2 | jq -e --argjson t "$total" '.result.structuredContent.stdout | test("^[0-9]+ 28\n$") and (split(" ")[0] | tonumber) > $t - 20'
}

# bats test_tags=kernel
@test "a session's files are not its runs' memory: 5 x 60 MB kept under memory 64m (btrfs or ext4 on a loop device); the quota is ENOSPC" {
	skip_unless_root
	skip_unless_cgroups
	[ -w /dev/loop-control ] || skip "no loop devices here: workspaces are tmpfs, said in workspace_note"
	conf=$(conf_with 's/^workspace_size *=.*/workspace_size = "400m"/')
	session_server python
	call 2 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, memory: "64m", timeout: 50,
		command: ["sh", "-c", "for i in 1 2 3 4 5; do head -c 60000000 /dev/zero > f$i || exit 1; done; echo kept"]}')" >&7
	wait_for 2 150
	call 3 sandbox_exec "$(jq -nc --arg s "$sid" '{session_id: $s, timeout: 50,
		command: ["sh", "-c", "for i in 6 7; do head -c 60000000 /dev/zero > f$i || exit 9; done"]}')" >&7
	wait_for 3 150
	# from the host's side: the files, on the session's own ext4
	ws=$sessions/$sid
	fs=$(stat -f -c %T "$ws")
	sizes=$(stat -c %s "$ws"/f[1-5] | sort -u)
	exec 7>&-
	wait "$server"
	answer 1 | jq -e --arg fs "$(case $fs in btrfs) echo btrfs ;; *) echo ext4 ;; esac)" \
		'.result.structuredContent | .workspace_filesystem == $fs and .workspace_bytes == 419430400 and (has("workspace_note") | not)' ||
		{ answer 1 >&2; false; }
	answer 2 | jq -e '.result.structuredContent | .status == "success" and .stdout == "kept\n"' || { answer 2 | cut -c1-600 >&2; false; }
	answer 3 | jq -e '.result.structuredContent | .status == "error" and .exit_code == 9 and (.stderr | test("No space left on device"))'
	case $fs in btrfs | ext2/ext3) ;; *) false ;; esac
	[ "$sizes" = 60000000 ]
	# the image went with the server: no loop device holds a file of ours
	[ -z "$(losetup -l -n -O BACK-FILE | grep -F "$sessions")" ]
}

@test "a session's files are its own: another local account cannot list, read or change them; programs make files 0644" {
	skip_unless_root
	# state where any account can walk to it, as /var/lib/sbx is
	pub=$(mktemp -d /tmp/sbx-t-ws.XXXXXX)
	chmod 0755 "$pub"
	echo "$pub" > pub
	conf=$(conf_with 's/^$//')
	sed -i "s|^state_dir *=.*|state_dir = \"$pub/var\"|" "$conf"
	session_server python
	step sandbox_exec '{code: "import os\nopen(\"secret.txt\", \"w\").write(\"s3cret\")\nos.mkdir(\"d\")\nopen(\"main2.py\", \"w\").write(\"print(1)\")"}'
	ws=$pub/var/sessions/$sid
	# the attacker: nobody, from the host
	as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	! as_nobody ls "$ws" || false
	! as_nobody cat "$ws/secret.txt" || false
	! as_nobody sh -c "echo 'print(666)' > '$ws/main2.py'" || false
	modes=$(stat -c '%n %a' "$ws" "$ws/secret.txt" "$ws/d" | sed "s|$ws|ws|")
	step sandbox_exec '{code: "print(open(\"main2.py\").read())"}'
	exec 7>&-
	wait "$server"
	answer 3 | jq -e '.result.structuredContent.stdout == "print(1)\n"'
	[ "$modes" = "ws 700
ws/secret.txt 644
ws/d 755" ] || { echo "$modes" >&2; false; }
}

@test "write_file: made directories are the program's; a write that fails (the workspace full) leaves the workspace as it was" {
	skip_unless_root
	conf=$(conf_with 's/^workspace_size *=.*/workspace_size = "6m"/')
	session_server python
	ws=$sessions/$sid
	# zeros: SIZE bytes to PATH (too long for an argument: through a file)
	zeros() {
		head -c "$2" /dev/zero | base64 -w0 > zeros.b64
		n=$((n + 1))
		jq -nc --argjson id $n --arg s "$sid" --arg p "$1" --rawfile c zeros.b64 \
			'{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: "write_file",
			  arguments: {session_id: $s, path: $p, encoding: "base64", content: $c}}}' >&7
		wait_for $n
	}
	step write_file '{path: "keep.txt", content: "old"}'
	step write_file '{path: "d/e/f.txt", content: "nested"}'
	zeros fill 4M
	# 4 MiB of 6 kept: neither 3 MiB more in new directories, nor over keep.txt
	zeros a/b/c.bin 3M
	zeros keep.txt 3M
	step sandbox_exec '{command: ["sh", "-c", "cat keep.txt d/e/f.txt; id -u; stat -c %u:%g d d/e d/e/f.txt"]}'
	# from the host's side: the failed writes left nothing, the old file whole
	find "$ws" -mindepth 1 -not -path "$ws/.deps" -printf '%P %u:%g\n' | sort > tree
	exec 7>&-
	wait "$server"
	answer 3 | jq -e '.result.isError == false'
	for i in 5 6; do
		answer $i | jq -e '.result.isError == true and (.result.content[0].text | test("No space left on device \\(the workspace is full: its quota is workspace_size\\)"))' ||
			{ answer $i | cut -c1-400 >&2; false; }
	done
	p=$SBX_PROG_UID
	printf '%s\n' "d $p:$p" "d/e $p:$p" "d/e/f.txt $p:$p" "fill $p:$p" "keep.txt $p:$p" | diff - tree
	answer 7 | jq -e '.result.structuredContent.stdout == "oldnested1000\n1000:1000\n1000:1000\n1000:1000\n"'
}

@test "a user's mistakes are errors, never internal_error: a command that is not there or not executable; a full workspace still runs inline code" {
	skip_unless_root
	conf=$(conf_with 's/^workspace_size *=.*/workspace_size = "4m"/')
	session_server python
	step sandbox_exec '{command: ["no-such-program", "-x"]}'
	step write_file '{path: "data.txt", content: "x"}'
	step sandbox_exec '{command: ["./data.txt"]}'
	step sandbox_exec '{command: ["sh", "-c", "head -c 5000000 /dev/zero > fill; echo $?"]}'
	step sandbox_exec '{code: "print(1)"}'
	exec 7>&-
	wait "$server"
	answer 2 | jq -e '.result.structuredContent | .status == "error" and .exit_code == 127 and .signal == null
		and .error == "cannot run \"no-such-program\": No such file or directory (not on the sandbox'"'"'s PATH, nor a file of the workspace)"'
	answer 4 | jq -e '.result.structuredContent | .status == "error" and .exit_code == 126 and (.error | startswith("cannot run \"./data.txt\": Permission denied"))'
	# inline code is the run's own file, not the workspace's (issue 47, class 7)
	answer 6 | jq -e '.result.structuredContent | .status == "success" and .stdout == "1\n"'
	# and the history says so: no internal error among them
	[ "$("$BIN/sbx-history" --status error -n 0 | wc -l)" -eq 2 ]
	run "$BIN/sbx-history" --status internal_error
	[ "$status" -eq 1 ]
}

@test "sessions expire on time after their ttl, never under a run; max_sessions is enforced" {
	conf=$(conf_with 's/^max_sessions *=.*/max_sessions = 3/')
	mkfifo in
	"$BIN/sbx-mcp" -c "$conf" < in > out 2> err &
	exec 7> in
	{ init; call 1 sandbox_initialize '{"ttl":1}'; call 2 sandbox_initialize '{"ttl":1,"language":"bash"}'
	  call 3 sandbox_initialize '{}'; call 4 sandbox_initialize '{}'; } >&7
	for i in $(seq 50); do answer 4 | grep -q result && break; sleep 0.1; done
	sid=$(answer 1 | jq -r .result.structuredContent.session_id)
	busy=$(answer 2 | jq -r .result.structuredContent.session_id)
	answer 4 | jq -e '.result.isError == true and (.result.content[0].text | contains("max_sessions 3"))'
	[ -d "$sessions/$sid" ]
	# a run three times its session's ttl: the session outlives it
	call 5 sandbox_exec "$(jq -nc --arg s "$busy" '{session_id: $s, code: "sleep 3; echo > survived; echo ok"}')" >&7
	sleep 2
	# 1 s of idle time, then gone within a fraction of a second (not at a polling interval)
	[ ! -e "$sessions/$sid" ]
	wait_for 5
	answer 5 | jq -e '.result.structuredContent.stdout == "ok\n"'
	# its idle time starts at the run's end: the workspace is still there, with what the run wrote
	[ -e "$sessions/$busy/survived" ]
	sleep 1.6
	[ ! -e "$sessions/$busy" ]
	call 6 list_files "{\"session_id\":\"$sid\"}" >&7
	exec 7>&-
	wait
	answer 6 | jq -e '.result.isError == true'
	grep -q "session $sid expired" err
	grep -q "session $busy expired" err
	# a server's sessions go with it
	[ -z "$(ls "$sessions")" ]
}

@test "install_packages and run_code dependencies (npm), where the registry is reachable" {
	command -v npm > /dev/null || skip "npm is not installed"
	timeout 10 npm view is-number@7.0.0 version > /dev/null 2>&1 || skip "the npm registry is not reachable from here"
	{
		init
		call 1 run_code '{"language":"javascript","code":"console.log(require(\"is-number\")(\"7\"))","dependencies":["is-number@7.0.0"]}'
		call 2 run_code '{"language":"javascript","code":"require(\"is-number\")"}'
		call 3 run_code '{"language":"bash","code":"true","dependencies":["jq"]}'
		call 4 run_code '{"language":"javascript","code":"1","dependencies":["is-number@999.0.0"]}'
	} | mcp
	answer 1 | jq -e '.result.structuredContent.status == "success" and .result.structuredContent.stdout == "true\n"'
	# a one-off install is gone with its run
	answer 2 | jq -e '.result.structuredContent.status == "error" and (.result.structuredContent.stderr | contains("Cannot find module"))'
	# said up front, before any session or sandbox
	answer 3 | jq -e '.result.isError == true and (.result.content[0].text | contains("\"bash\" has no package manager") and contains("javascript"))'
	# a failed install says why in the installer's own words
	answer 4 | jq -e '.result.isError == true and (.result.structuredContent.error | contains("exit code") and contains("is-number"))' || { answer 4 >&2; false; }
	[ -z "$(ls "$sessions" 2>/dev/null | grep -v lock)" ]
}

@test "a session: install_packages (npm, real registry), then require, import and TypeScript find it; network only for the install" {
	command -v npm > /dev/null || skip "npm is not installed"
	timeout 10 npm view is-number@7.0.0 version > /dev/null 2>&1 || skip "the npm registry is not reachable from here"
	session_server javascript
	step install_packages '{packages: ["is-number@7.0.0", "ms@2.1.3", "@types/ms@0.7.34"]}'
	step sandbox_exec '{code: "const isNumber = require(\"is-number\"); console.log(isNumber(\"7\"), isNumber(\"x\"))"}'
	# the program itself has no network: the registry is unreachable
	step sandbox_exec '{code: "require(\"https\").get(\"https://registry.npmjs.org/is-number\", () => console.log(\"REACHED\")).on(\"error\", e => console.log(e.code))"}'
	# and cannot change what was installed
	step sandbox_exec '{code: "try { require(\"fs\").writeFileSync(\".deps/node_modules/is-number/index.js\", \"x\") } catch (e) { console.log(e.code) }"}'
	# an ES module and TypeScript (its types from @types) find them as in
	# a project's directory, from a subdirectory too
	step write_file '{path: "src/app.mjs", content: "import ms from \"ms\";\nimport isNumber from \"is-number\";\nconsole.log(ms(\"2h\"), isNumber(3));\n"}'
	step sandbox_exec '{file: "src/app.mjs"}'
	# (without @types/ms, --strict refuses the import: TS7016)
	step sandbox_exec '{language: "typescript", code: "import ms from \"ms\";\nconst n: number = ms(\"1m\");\nconsole.log(n);\n"}'
	step sandbox_stop '{}'
	exec 7>&-
	wait
	answer 2 | jq -e '(.result.isError // false) == false and .result.structuredContent.status == "success"'
	answer 3 | jq -e '.result.structuredContent.status == "success" and .result.structuredContent.stdout == "true false\n"'
	answer 4 | jq -e '.result.structuredContent.stdout | test("^(ENOTFOUND|EAI_AGAIN|ENETUNREACH|ECONNREFUSED)\n$")'
	answer 5 | jq -e '.result.structuredContent.stdout == "EROFS\n"'
	answer 7 | jq -e '.result.structuredContent.stdout == "7200000 true\n"'
	answer 8 | jq -e '.result.structuredContent | .status == "success" and .stdout == "60000\n"'
	[ -z "$(ls "$sessions" 2>/dev/null | grep -v lock)" ]
}

# Issue 52: a session's processes through the tools, their errors, and
# their end with their session and with the server, seen from the host.
# last: the answer to the last step, its structuredContent or its result.
last() { answer $n | jq -c '.result.structuredContent // .result'; }
@test "processes: started, read (waiting for a text), written, listed, signalled; their errors; max_processes" {
	conf=$(conf_with -e 's/^max_processes *=.*/max_processes = 2/')
	session_server python
	step write_file '{path: "sub/keep", content: ""}'
	step process_start '{code: "import sys\nprint(\"up\", flush=True)\nfor line in sys.stdin:\n    print(\"echo\", line.strip(), flush=True)", cwd: "sub"}'
	pid=$(last | jq -r .process_id)
	last | jq -e '.state == "running" and .cwd == "sub" and (.process_id | test("^p[0-9a-f]{16}$"))'
	step process_read "{process_id: \"$pid\", wait: 20, until: \"up\"}"
	last | jq -e '.output == "up\n" and .cursor == 3 and .until_found == true'
	step process_write "{process_id: \"$pid\", data: \"a\nb\n\"}"
	step process_read "{process_id: \"$pid\", cursor: 3, wait: 20, until: \"echo b\"}"
	last | jq -e '.output == "echo a\necho b\n" and .cursor == 17'
	# a read from 0 again: everything (the log keeps it), with max_bytes
	step process_read "{process_id: \"$pid\", max_bytes: 5}"
	last | jq -e '.output == "up\nec" and .cursor == 5 and .more == true'
	# nothing new: a read that waits 0.5 s returns empty at its cursor
	step process_read "{process_id: \"$pid\", cursor: 17, wait: 0.5}"
	last | jq -e '.output == "" and .cursor == 17 and .state == "running"'
	step process_start '{command: ["sleep", "311"]}'
	step process_start '{command: ["sleep", "312"]}'
	last | jq -e '(.content[0].text | contains("max_processes"))'
	step process_list '{}'
	last | jq -e '[.processes[].state] == ["running", "running"]'
	# errors an agent can act on
	step process_read '{process_id: "p0000000000000000"}'
	last | jq -e '.content[0].text | contains("unknown process")'
	step process_read "{process_id: \"$pid\", wait: 3600}"
	last | jq -e '.content[0].text | contains("max_timeout")'
	step process_start '{command: ["true"], cwd: "nowhere"}'
	last | jq -e '.content[0].text | contains("not a directory of the workspace")'
	step process_start '{command: ["true"], cwd: "sub/keep"}'
	last | jq -e '.content[0].text | contains("not a directory")'
	step process_signal "{process_id: \"$pid\", signal: \"TERM\"}"
	step process_read "{process_id: \"$pid\", cursor: 17, wait: 20}"
	[ "$(last | jq -r .state)" = exited ] || step process_read "{process_id: \"$pid\", cursor: 17, wait: 20}"
	last | jq -e '.state == "exited" and .end.signal == "SIGTERM" and .end.status == "error" and (.end.history_id | type) == "number"'
	step process_write "{process_id: \"$pid\", data: \"x\"}"
	last | jq -e '.content[0].text | contains("exited: it takes no input")'
	step process_signal "{process_id: \"$pid\", signal: \"SEGV\"}"
	last | jq -e '.content[0].text | contains("signal")'
	exec 7>&-
	wait "$server"
	# the ended one is a row of the history, in its session
	"$BIN/sbx-history" -c "$conf" --session "$sid" --jq '[.status, .signal]' | grep -qF '["error","SIGTERM"]'
}

# A sandbox_exec whose cwd is no directory of the workspace was refused
# with its request made and never freed: each such call kept its code (up
# to [http] max_body, 8 MiB) for the server's life.
@test "a refused cwd keeps nothing of the call: the server's memory, seen from the host" {
	# (ASan's quarantine would hold the freed requests a while)
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0
	session_server bash
	{ printf '#'; head -c 1048576 /dev/zero | tr '\0' x; } > big
	refused() { # N: calls n+1 .. n+N, each 1 MiB of code with a cwd that is not there
		local i
		for ((i = 0; i < $1; i++)); do
			n=$((n + 1))
			jq -nc --rawfile c big --arg s "$sid" --argjson id $n \
				'{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: "sandbox_exec", arguments: {session_id: $s, code: $c, cwd: "nowhere"}}}' >&7
		done
		wait_for $n 60
	}
	rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$server/status"; }
	refused 5
	last | jq -e '.content[0].text | contains("not a directory of the workspace")'
	before=$(rss)
	refused 60
	last | jq -e '.content[0].text | contains("not a directory of the workspace")'
	after=$(rss)
	[ $((after - before)) -lt 20000 ] || { echo "VmRSS grew by $((after - before)) kB over 60 refused calls of 1 MiB" >&2; false; }
	exec 7>&-
	wait "$server"
}

# process_write's input waits in the server's queue of --control lines
# until sbx-run reads it; that queue grew with every call while sbx-run
# was behind.  A stopped sbx-run stands in here for a busy one: a session
# whose processes flood their output keeps it behind, and pipelined
# writes grew the server to 1 GB.
@test "process_write while the pipeline is behind: refused past a bound, the server's memory bounded" {
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0
	session_server bash
	step process_start '{command: ["sleep", "315"]}'
	pid=$(last | jq -r .process_id)
	run_pid=$(pgrep -P "$server" -x sbx-run)
	rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$server/status"; }
	before=$(rss)
	kill -STOP "$run_pid"
	# 100 writes of 64 KiB of control characters: 38 MB as JSON
	head -c 65536 /dev/zero | tr '\0' '\1' > data
	first=$((n + 1))
	for _ in $(seq 100); do
		n=$((n + 1))
		jq -nc --argjson id $n --arg s "$sid" --arg p "$pid" --rawfile d data \
			'{jsonrpc: "2.0", id: $id, method: "tools/call", params: {name: "process_write", arguments: {session_id: $s, process_id: $p, data: $d}}}'
	done >&7
	wait_for $n 60
	after=$(rss)
	kill -CONT "$run_pid"
	[ $((after - before)) -lt 16000 ] || { echo "VmRSS grew by $((after - before)) kB" >&2; false; }
	answer $first | jq -e '.result.structuredContent.written_bytes == 65536'
	answer $n | jq -e '.result.isError and (.result.content[0].text | contains("try again"))'
	# it drains: the process still takes input and signals
	step process_signal "{process_id: \"$pid\", signal: \"KILL\"}"
	step process_read "{process_id: \"$pid\", wait: 20}"
	last | jq -e '.state == "exited" and .end.signal == "SIGKILL"'
	exec 7>&-
	wait "$server"
}

@test "processes keep their session alive past its ttl; sandbox_stop and the server's end end them, nothing left" {
	session_server bash '{ttl: 1}'
	step process_start '{command: ["sleep", "313"]}'
	await_program 'sleep 313'
	# three ttl's later the session is still there (its process holds it)
	sleep 3
	step process_list '{}'
	last | jq -e '.processes[0].state == "running"'
	# a read waiting on it when the session stops hears why it ends
	args=$(last | jq -c --arg s "$sid" '{session_id: $s, process_id: .processes[0].process_id, wait: 30}')
	n=$((n + 1)); reader=$n
	call $n process_read "$args" >&7
	step sandbox_stop '{}'
	wait_for $reader
	answer $reader | jq -e '.result.isError and (.result.content[0].text | contains("ended with its session"))'
	for _ in $(seq 100); do our_pgrep "" 'sleep 313' > /dev/null || break; sleep 0.05; done
	! our_pgrep "" 'sleep 313' || false
	# a new session's process, then the server's end (stdin closed)
	n=$((n + 1)); call $n sandbox_initialize '{}' >&7; wait_for $n
	sid=$(answer $n | jq -r .result.structuredContent.session_id)
	step process_start '{command: ["sleep", "314"]}'
	await_program 'sleep 314'
	exec 7>&-
	wait "$server"
	! our_pgrep "" 'sleep 31[34]' || false
	"$BIN/sbx-history" -c "$conf" --session "$sid" --jq .status | grep -qx '"cancelled"'
}

@test "SIGTERM stops the server at once: sandboxes killed, sessions removed, nothing left" {
	mkfifo in
	"$BIN/sbx-mcp" -c "$conf" < in > out 2> err &
	pid=$!
	exec 7> in
	{ init; call 1 sandbox_initialize '{}'; call 2 run_code '{"language":"bash","code":"sleep 60"}'; } >&7
	for i in $(seq 50); do our_pgrep "$SBX_PROG_UID" '^sleep' > /dev/null && break; sleep 0.1; done
	kill -TERM "$pid"
	wait "$pid"
	exec 7>&-
	[ -z "$(answer 2)" ]
	[ -z "$(ls "$sessions" 2>/dev/null | grep -v lock)" ]
}

@test "a client that dies (its end of stdout gone) stops the server within a second: runs cancelled, sandboxes and kernels killed" {
	mkfifo in pipe
	"$BIN/sbx-mcp" -c "$conf" < in > pipe 2> err &
	pid=$!
	# the client: reads the server's stdout, and holds its stdin open
	cat pipe > out &
	client=$!
	exec 7> in
	{ init; call 1 sandbox_initialize '{}'; } >&7
	await_lines 2 out
	sid=$(answer 1 | jq -r .result.structuredContent.session_id)
	{ call 2 run_code '{"language":"bash","code":"sleep 60"}'
	  call 3 run_cell "$(jq -nc --arg s "$sid" '{session_id: $s, language: "python", code: "import time\ntime.sleep(60)"}')"; } >&7
	await_program '^sleep 60'
	await_program 'sbx_kernel'
	# killed as a host is: its stdin stays open (a file descriptor another
	# process still holds), its reading end of stdout goes
	kill -KILL "$client"
	t0=$(date +%s%N)
	wait "$pid"
	[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt "$(bound 1000 5000)" ]
	exec 7>&-
	grep -q 'the client closed its end of stdout: stopping' err
	[ -z "$(ls "$sessions" 2>/dev/null | grep -v lock)" ]
	! our_pgrep "" '^sleep 60|sbx_kernel' > /dev/null || false
}

@test "sbx-mcp: --help, misuse" {
	run --separate-stderr "$BIN/sbx-mcp" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--listen"* ]]
	# every tool tools/list has, by name
	{ init; printf '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'; } | mcp
	for t in $(answer 1 | jq -r '.result.tools[].name'); do
		[[ "$output" == *"$t"[,.]* ]] || { echo "--help lacks $t" >&2; false; }
	done
	run --separate-stderr "$BIN/sbx-mcp" --listen
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == "sbx-mcp: "*"--listen"* ]]
	[[ "${stderr_lines[1]}" == "usage: sbx-mcp [-c FILE]"*"(MCP on stdin/stdout)" ]]
	run --separate-stderr "$BIN/sbx-mcp" --transport websocket
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == *"not stdio, http or sse"* ]]
	run --separate-stderr "$BIN/sbx-mcp" --token-file x
	[ "$status" -eq 2 ]
	run --separate-stderr "$BIN/sbx-mcp" --transport stdio --listen 1
	[ "$status" -eq 2 ]
}
