#!/usr/bin/env bats
# A real MCP client: the official TypeScript SDK from npm (Client +
# StdioClientTransport, t/mcp-client/client.mjs, installed by make
# mcp-client from the committed package-lock.json) against bin/sbx-mcp:
# every tool listed with its schemas and called, results checked, and the
# SDK's own validation of structuredContent against each outputSchema.
load helpers

teardown() { assert_no_leftovers; }

@test "the official MCP SDK client lists and calls all eleven tools" {
	command -v node > /dev/null || skip "Node.js is not installed"
	[ -d "$ROOT/t/mcp-client/node_modules/@modelcontextprotocol/sdk" ] || skip "the MCP SDK is not installed (make mcp-client)"
	conf=$(conf_with 's/^$//')
	printf '#!/bin/sh\nexec "%s/sbx-mcp" -c "%s"\n' "$BIN" "$conf" > mcp.sh
	chmod +x mcp.sh
	run --separate-stderr node "$ROOT/t/mcp-client/client.mjs" "$PWD/mcp.sh"
	printf '%s\n' "$output" | grep -v '^ok ' >&3 || true
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" =~ ^1\.\.2[0-9]$ ]]
	! printf '%s\n' "$output" | grep -q '^not ok'
}
