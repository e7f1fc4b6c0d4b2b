#!/usr/bin/env bats
# run_cell through a real MCP client (the official TypeScript SDK from npm,
# t/mcp-client/kernel.mjs) against bin/sbx-mcp over stdio: state kept from
# cell to cell, exceptions and interrupts that keep it, a kernel's death
# reported and a fresh kernel after it, reset, figures as images, no
# network, limits, two sessions apart, history rows, and nothing of any
# kernel left after sandbox_stop (checked from the host, as root).
load helpers

teardown() { assert_no_leftovers; }

@test "run_cell through the official MCP SDK client: kernels keep state, fail, die and restart as documented" {
	command -v node > /dev/null || skip "Node.js is not installed"
	[ -d "$ROOT/t/mcp-client/node_modules/@modelcontextprotocol/sdk" ] || skip "the MCP SDK is not installed (make mcp-client)"
	cmp -s "$ROOT/share/python/sbx_kernel.py" /usr/local/share/sbx/python/sbx_kernel.py ||
		skip "the kernels are not installed where etc/sandbox.conf says (make deps)"
	if [ -d /usr/lib/python3/dist-packages/matplotlib ] && [ -z "${SBX_GUEST:-}" ]; then
		export SBX_TEST_MATPLOTLIB=1
	fi
	conf=$(conf_with 's/^$//')
	printf '#!/bin/sh\nexec "%s/sbx-mcp" -c "%s"\n' "$BIN" "$conf" > mcp.sh
	chmod +x mcp.sh
	uid=
	[ "$(id -u)" = 0 ] && uid=$SBX_PROG_UID
	run --separate-stderr node "$ROOT/t/mcp-client/kernel.mjs" "$PWD/mcp.sh" "$uid"
	printf '%s\n' "$output" | grep -v '^ok ' >&3 || true
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" =~ ^1\.\.2[0-9]$ ]]
	! printf '%s\n' "$output" | grep -q '^not ok' || false
}
