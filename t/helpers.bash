# Shared set-up for the bats files: where the tools are, a per-test temp
# directory as the working directory, and small JSON helpers (through jq).
bats_require_minimum_version 1.5.0

ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
BIN=$(cd "${SBX_BIN:-$ROOT/bin}" && pwd)
export SBX_CONF=$ROOT/etc/sandbox.conf
unset SBX_BACKEND SBX_HISTORY

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	if declare -F local_setup >/dev/null; then local_setup; fi
}

# jqn N FILTER: apply FILTER to the Nth (0-based) stdout line of the last run.
jqn() {
	printf '%s\n' "${lines[$1]}" | jq -r "$2"
}

# jqe N FILTER: assert FILTER is true on line N, showing the line if not.
jqe() {
	if ! printf '%s\n' "${lines[$1]}" | jq -e "$2" >/dev/null; then
		echo "line $1 fails $2: ${lines[$1]:0:2000}" >&2
		return 1
	fi
}

# A configuration derived from the shipped one: conf_with 'sed expression'.
conf_with() {
	sed "$@" "$ROOT/etc/sandbox.conf" > "$BATS_TEST_TMPDIR/test.conf"
	# keep state out of the checkout
	sed -i -e "s|^state_dir *=.*|state_dir = \"$BATS_TEST_TMPDIR/var\"|" \
		-e "s|^history *=.*|history = \"$BATS_TEST_TMPDIR/var/h.db\"|" "$BATS_TEST_TMPDIR/test.conf"
	echo "$BATS_TEST_TMPDIR/test.conf"
}
