#!/usr/bin/env bats
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# t/mcp-conformance, installed by make mcp-client from its committed
# package-lock.json): its active server scenarios against sbx-mcp --listen
# over Streamable HTTP.  Every scenario passes but those that test the
# suite's own reference server's fixtures (t/mcp-conformance/not-applicable.yaml,
# each with its reason); one of those passing would fail the baseline too.
load helpers

TOKEN=conformance-aaaaaaaaaaaaaaaaaaaaaa

teardown() {
	http_stop
	assert_no_leftovers
}

need_suite() {
	command -v node > /dev/null || skip "Node.js is not installed"
	[ -d "$ROOT/t/mcp-conformance/node_modules/@modelcontextprotocol/conformance" ] ||
		skip "the MCP conformance suite is not installed (make mcp-client)"
}

# conformance ARGS: the suite's CLI with the bearer token (register.mjs).
conformance() {
	SBX_MCP_TOKEN=$TOKEN node --import "$ROOT/t/mcp-conformance/register.mjs" \
		"$ROOT/t/mcp-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" "$@"
}

# The suite sends its requests as fast as it can: the rate limit, which
# t/62 tests, is raised out of its way.
serve() {
	conf=$(conf_with 's/^rate .*/rate = 10000/; s/^burst .*/burst = 10000/')
	echo "$TOKEN" > tokens
	chmod 600 tokens
	http_serve
}

@test "conformance: every applicable server scenario of the active suite passes (Streamable HTTP)" {
	need_suite
	serve
	run --separate-stderr conformance server --url "$URL/mcp" --expected-failures "$ROOT/t/mcp-conformance/not-applicable.yaml"
	printf '%s\n' "$output" | grep '^Total:' | sed 's/^/# conformance: /' >&3
	[ "$status" -eq 0 ]
	[[ "$output" == *"Baseline check passed: all failures are expected."* ]]
	# the ones sbx-mcp must pass, by name
	for s in server-initialize logging-set-level ping completion-complete tools-list server-sse-multiple-streams \
		resources-list resources-subscribe resources-unsubscribe dns-rebinding-protection; do
		grep -q "✓ $s:" <<< "$output"
	done
}

@test "conformance: the suite sees a token refused (it fails without one)" {
	need_suite
	serve
	run --separate-stderr env -u SBX_MCP_TOKEN node --import "$ROOT/t/mcp-conformance/register.mjs" \
		"$ROOT/t/mcp-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" server --url "$URL/mcp" --scenario ping
	[ "$status" -ne 0 ]
	grep -q '"POST /mcp" 401' srv.log
}
