#!/usr/bin/env bats
# A real MCP client: the official TypeScript SDK from npm (Client with
# StdioClientTransport, StreamableHTTPClientTransport and SSEClientTransport;
# t/mcp-client/client.mjs, installed by make mcp-client from the committed
# package-lock.json) against bin/sbx-mcp: every tool listed with its schemas
# and called, results checked, and the SDK's own validation of
# structuredContent against each outputSchema.
load helpers

teardown() {
	http_stop
	assert_no_leftovers
}

need_sdk() {
	command -v node > /dev/null || skip "Node.js is not installed"
	# the figure check, where the sandboxes have matplotlib (make deps)
	if [ -d /usr/lib/python3/dist-packages/matplotlib ] &&
		cmp -s "$ROOT/share/python/sitecustomize.py" /usr/local/share/sbx/python/sitecustomize.py; then
		export SBX_TEST_MATPLOTLIB=1
	fi
	[ -d "$ROOT/t/mcp-client/node_modules/@modelcontextprotocol/sdk" ] || skip "the MCP SDK is not installed (make mcp-client)"
}

# tap_client SCRIPT PLAN ARGS: node t/mcp-client/SCRIPT ARGS, its TAP
# output checked: a plan matching PLAN (an ERE), no check failed.
tap_client() {
	run --separate-stderr node "$ROOT/t/mcp-client/$1" "${@:3}"
	printf '%s\n' "$output" | grep -v '^ok ' >&3 || true
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" =~ $2 ]]
	! printf '%s\n' "$output" | grep -q '^not ok' || false
}
# sdk ARGS: client.mjs, 20 to 49 checks.
sdk() { tap_client client.mjs '^1\.\.[2-4][0-9]$' "$@"; }
# approve ANSWER TRANSPORT...: approve.mjs.
approve() { tap_client approve.mjs '^1\.\.[0-9]+$' "$@"; }
# mcp_sh: ./mcp.sh, sbx-mcp on $conf, for the stdio transport.
mcp_sh() {
	printf '#!/bin/sh\nexec "%s/sbx-mcp" -c "%s"\n' "$BIN" "$conf" > mcp.sh
	chmod +x mcp.sh
}

@test "the official MCP SDK client lists and calls all twenty-four tools (stdio)" {
	need_sdk
	conf=$(conf_with 's/^$//')
	mcp_sh
	sdk "$PWD/mcp.sh"
}

@test "long runs and the SDK's request timeout: heartbeat progress, a max_timeout below its default, tasks" {
	need_sdk
	conf=$(conf_with 's/^progress_interval *=.*/progress_interval = 1/')
	mcp_sh
	run --separate-stderr node "$ROOT/t/mcp-client/timeouts.mjs" "$PWD/mcp.sh"
	printf '%s\n' "$output" | grep -v '^ok ' >&3 || true
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "1..5" ]
}

# sdk_over http|sse: the client against a server on a free port.
sdk_over() {
	need_sdk
	conf=$(conf_with 's/^$//')
	echo sdk-token-0123456789abcdef > tokens
	chmod 600 tokens
	http_serve
	sdk "$1" "$URL" sdk-token-0123456789abcdef
}

@test "the same over Streamable HTTP (StreamableHTTPClientTransport, bearer token), then DELETE of its session" {
	sdk_over http
	grep -q '"DELETE /mcp" 204' srv.log
}

@test "the same over HTTP+SSE of 2024-11-05 (SSEClientTransport)" {
	sdk_over sse
	grep -q '"POST /messages" 202' srv.log
}

@test "approve on deny: a session's refused host put to its user (elicitation), approved, declined, never asked without it" {
	need_sdk
	conf=$(conf_with 's/^network *=.*/network = ["10.9.9.9", "10.9.9.8"]/')
	mcp_sh
	for answer in accept decline none; do approve "$answer" "$PWD/mcp.sh"; done
	# over Streamable HTTP the question goes on the call's own event stream
	echo sdk-token-0123456789abcdef > tokens
	chmod 600 tokens
	http_serve
	approve accept http "$URL" sdk-token-0123456789abcdef
}

@test "a session's processes through the SDK: a server called from the next calls, a terminal, limits, sandbox_stop; over HTTP a new connection and another token" {
	need_sdk
	conf=$(conf_with 's/^$//')
	mcp_sh
	tap_client process.mjs '^1\.\.14$' "$PWD/mcp.sh"
	printf '%s\n' sdk-token-0123456789abcdef other-token-0123456789abcdef > tokens
	chmod 600 tokens
	http_serve
	tap_client process.mjs '^1\.\.1[0-9]$' http "$URL" sdk-token-0123456789abcdef other-token-0123456789abcdef
}

@test "checkpoints through the SDK: restore brings the files back, forks diverge, the tree listed, its bound; another token refused; nothing left after the tree" {
	need_sdk
	skip_unless_root
	conf=$(conf_with -e 's/^max_checkpoints *=.*/max_checkpoints = 4/' -e 's/^rate *=.*/rate = 500/' -e 's/^burst *=.*/burst = 500/')
	mcp_sh
	tap_client checkpoint.mjs '^1\.\.15$' "$PWD/mcp.sh" "$BATS_TEST_TMPDIR/var" 4
	printf '%s\n' sdk-token-0123456789abcdef other-token-0123456789abcdef > tokens
	chmod 600 tokens
	http_serve
	tap_client checkpoint.mjs '^1\.\.17$' http "$URL" sdk-token-0123456789abcdef other-token-0123456789abcdef "$BATS_TEST_TMPDIR/var" 4
}

@test "a session's port opened to a person: over stdio a local address, over HTTP a path for its token only; HTTP, a WebSocket, the person's credentials kept from the app" {
	need_sdk
	conf=$(conf_with 's/^$//')
	mcp_sh
	tap_client port.mjs '^1\.\.1[23]$' "$PWD/mcp.sh"
	printf '%s\n' sdk-token-0123456789abcdef other-token-0123456789abcdef > tokens
	chmod 600 tokens
	http_serve
	tap_client port.mjs '^1\.\.27$' http "$URL" sdk-token-0123456789abcdef other-token-0123456789abcdef
}

@test "a session's open port in headless Chromium: refused before the sign-in, the app and its WebSocket after, the dashboard's link, nothing for another token" {
	need_sdk
	[ -d "$ROOT/t/browser/node_modules/puppeteer-core" ] || skip "puppeteer-core is not installed (make mcp-client)"
	command -v "${CHROMIUM:-chromium}" > /dev/null || skip "no Chromium (Debian's chromium package; make deps installs it)"
	conf=$(conf_with 's/^$//')
	printf '%s\n' sdk-token-0123456789abcdef other-token-0123456789abcdef > tokens
	chmod 600 tokens
	http_serve
	tap_client port.mjs '^1\.\.32$' http "$URL" sdk-token-0123456789abcdef other-token-0123456789abcdef "$ROOT/t/browser/port.mjs"
}
