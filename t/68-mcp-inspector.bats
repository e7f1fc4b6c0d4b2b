#!/usr/bin/env bats
# The official MCP Inspector's CLI (@modelcontextprotocol/inspector 2.12.0,
# t/mcp-inspector, installed by make mcp-client from its committed
# package-lock.json) against bin/sbx-mcp: tools/list over stdio and
# Streamable HTTP with --strict, whose schema portability lint (a `type`
# array, and the like: what a client that maps tool schemas onto a
# single-type dialect would reject) must find nothing, and tools/call of
# run_code, list_supported_languages and get_execution_history, each
# result (--format json: one object on stdout) read with jq.
load helpers

TOKEN=inspector-0123456789abcdef
INSPECTOR=$ROOT/t/mcp-inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js

teardown() {
	http_stop
	assert_no_leftovers
}

# need_inspector: node and the Inspector, a configuration of the test's
# own ($conf), and ./mcp.sh, which starts sbx-mcp on stdio with it.
need_inspector() {
	command -v node > /dev/null || skip "Node.js is not installed"
	[ -f "$INSPECTOR" ] || skip "the MCP Inspector is not installed (make mcp-client)"
	# it declares 22.19; what these tests use of it runs on 20, as its SDK does
	[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] || skip "the MCP Inspector needs Node.js 20 or later, not $(node --version)"
	conf=$(conf_with 's/^$//')
	printf '#!/bin/sh\nexec "%s/sbx-mcp" -c "%s"\n' "$BIN" "$conf" > mcp.sh
	chmod +x mcp.sh
}

# inspector ARGS: the Inspector's CLI, its result on stdout ($output), its
# own messages, findings and error envelope and a stdio server's stderr on
# stderr ($stderr).  Its home is the test's directory (it keeps a catalog
# and OAuth state in ~/.mcp-inspector); no proxy: the servers are on
# loopback, and through a proxy it loads undici 8, which needs Node.js 22.
inspector() {
	run --separate-stderr env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy HOME="$BATS_TEST_TMPDIR" \
		node "$INSPECTOR" --cli --format json "$@"
	# sbx-mcp on stdio writes to the Inspector's stderr (the ASan+UBSan build)
	if grep -E 'Sanitizer|runtime error' <<< "$stderr" >&2; then return 1; fi
}

# strict_list ARGS: tools/list --strict over ARGS' transport: exit 0, the
# twenty-four tools, and no portability finding: none of its "Warning: tool"
# or "Error: tool" blocks on stderr, no schemaFindings beside the result.
# What it found goes to the TAP output, one line each: severity, tool,
# schema path, issue.
strict_list() {
	local found
	inspector --strict --method tools/list "$@"
	found=$(grep -cE '^(Warning|Error): tool ' <<< "$stderr" || true)
	if [ "$found" -gt 0 ]; then
		{
			grep -E '^[0-9]+ errors?, [0-9]+ warnings? across ' <<< "$stderr" || echo "$found findings"
			jq -r '.schemaFindings[]? | .toolName as $t | .findings[] |
				"\(.severity) \($t) \(.schema).\(.path): \(.issue | split(". ")[0])"' <<< "$output" ||
				grep -A 1 -E '^(Warning|Error): tool ' <<< "$stderr"
		} | sed 's/^/# inspector --strict: /' >&3
	fi
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	jq -e '.result.tools | length == 24' <<< "$output" > /dev/null || { jq -c '[.result.tools[]?.name]' <<< "$output" >&2; return 1; }
	[ "$found" -eq 0 ]
	jq -e 'has("schemaFindings") | not' <<< "$output" > /dev/null
}

# call TOOL [--tool-arg KEY=VALUE...]: tools/call over stdio.
call() {
	local tool=$1
	shift
	inspector --method tools/call --tool-name "$tool" "$@" -- "$PWD/mcp.sh"
}

@test "the MCP Inspector's CLI lists the twenty-four tools over stdio, and --strict finds no portability problem in their schemas" {
	need_inspector
	strict_list -- "$PWD/mcp.sh"
}

@test "the same over Streamable HTTP (bearer token)" {
	need_inspector
	echo "$TOKEN" > tokens
	chmod 600 tokens
	http_serve
	strict_list --transport http --server-url "$URL/mcp" --header "Authorization: Bearer $TOKEN"
	grep -q '"POST /mcp" 200 .* token=1 .* rpc=tools/list' srv.log
}

@test "the Inspector's CLI calls run_code: print(6*7) says 42; a misspelt argument is a tool error that names it" {
	need_inspector
	call run_code --tool-arg language=python --tool-arg 'code=print(6*7)'
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	jq -e '.result.isError != true and .result.structuredContent.status == "success" and .result.structuredContent.stdout == "42\n"' <<< "$output" > /dev/null ||
		{ echo "$output" >&2; return 1; }
	# the Inspector exits 5 on a result with isError
	call run_code --tool-arg language=python --tool-arg 'code=print(1)' --tool-arg timout=5
	[ "$status" -eq 5 ] || { echo "exit $status: $output $stderr" >&2; return 1; }
	jq -e '.result.isError == true and (.result.content[0].text | contains("\"timout\""))' <<< "$output" > /dev/null ||
		{ echo "$output" >&2; return 1; }
	grep '^{' <<< "$stderr" | jq -e '.error.code == "tool_is_error"' > /dev/null
}

@test "the Inspector's CLI calls list_supported_languages and get_execution_history" {
	need_inspector
	call list_supported_languages
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	jq -e --arg b "$BACKEND" '.result.structuredContent | .backend == $b and
		(["python", "c", "cpp", "javascript", "typescript", "bash", "go", "rust", "java", "ruby", "php"] - [.languages[].name] == []) and
		all(.languages[]; (.available | type) == "boolean") and
		any(.languages[]; .name == "python" and .available)' <<< "$output" > /dev/null || { echo "$output" >&2; return 1; }
	# a run, then the history through the filters (limit: a number, as the Inspector reads "1")
	call run_code --tool-arg language=python --tool-arg 'code=print("inspected")'
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	id=$(jq -er '.result.structuredContent.history_id' <<< "$output")
	call get_execution_history --tool-arg language=python --tool-arg limit=1
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	jq -e --argjson id "$id" '.result.structuredContent.runs | length == 1 and .[0].history_id == $id and
		.[0].status == "success" and .[0].code_snippet == "print(\"inspected\")" and .[0].stdout_size == 10' <<< "$output" > /dev/null ||
		{ echo "$output" >&2; return 1; }
	call get_execution_history --tool-arg language=rust
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	jq -e '.result.structuredContent.runs == []' <<< "$output" > /dev/null || { echo "$output" >&2; return 1; }
}
