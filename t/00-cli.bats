#!/usr/bin/env bats
# Every tool: --help, --version, misuse, config errors, write errors.
load helpers

tools() {
	local t
	for t in "$BIN"/sbx-*; do [ -x "$t" ] && basename "$t"; done
}

@test "every tool: --help prints usage on stdout and exits 0" {
	for t in $(tools); do
		run --separate-stderr "$BIN/$t" --help
		[ "$status" -eq 0 ] || { echo "$t: $status"; false; }
		[[ $output == usage:* ]] || { echo "$t: $output"; false; }
		[ -z "$stderr" ]
	done
}

@test "every tool: --version prints the version and exits 0" {
	for t in $(tools); do
		run --separate-stderr "$BIN/$t" --version
		[ "$status" -eq 0 ]
		[[ $output == "$t "[0-9]* ]]
	done
}

@test "every tool: an unknown option is one reason line plus the synopsis on stderr, exit 2" {
	for t in $(tools); do
		run --separate-stderr "$BIN/$t" --bogus
		[ "$status" -eq 2 ] || { echo "$t: $status"; false; }
		[ -z "$output" ]
		[[ ${stderr_lines[0]} == "$t: unknown option --bogus" ]] || { echo "$t: $stderr"; false; }
		[[ ${stderr_lines[1]} == usage:* ]]
	done
}

@test "every tool: a missing option argument is a usage error" {
	for t in $(tools); do
		run --separate-stderr "$BIN/$t" -c
		[ "$status" -eq 2 ]
		[[ ${stderr_lines[0]} == "$t: option -c needs an argument" ]] || { echo "$t: $stderr"; false; }
	done
}

@test "every tool: a broken configuration exits 2 naming file, line and key" {
	printf '[sandbox]\ntimeout = 5\nmemroy = "1g"\n' > bad.conf
	for t in $(tools); do
		run --separate-stderr "$BIN/$t" -c bad.conf < /dev/null
		[ "$status" -eq 2 ] || { echo "$t: $status"; false; }
		[[ $stderr == *"bad.conf:3: key \"memroy\": unknown key in [sandbox]"* ]] || { echo "$t: $stderr"; false; }
		[ -z "$output" ]
	done
}

@test "every tool: a missing configuration file exits 2 naming it" {
	for t in $(tools); do
		run --separate-stderr "$BIN/$t" -c /nonexistent.conf < /dev/null
		[ "$status" -eq 2 ]
		[[ $stderr == *"/nonexistent.conf: cannot open: No such file or directory"* ]]
	done
}

@test "record tools: a full disk on stdout is exit 3 with a message" {
	for t in sbx-validate sbx-cap sbx-log; do
		run --separate-stderr bash -c "'$BIN/$t' > /dev/full <<< '{\"language\":\"python\",\"code\":\"1\"}'"
		[ "$status" -eq 3 ] || { echo "$t: $status $stderr"; false; }
		[[ $stderr == *"$t: error writing output"* ]]
	done
}

@test "configuration lookup: -c, then SBX_CONF, then ../etc/sandbox.conf next to the binary" {
	mkdir -p tree/bin tree/etc
	src=$BIN/sbx-validate
	head -c 4 "$src" | grep -q ELF || src=$ROOT/bin/sbx-validate # a valgrind wrapper
	cp "$src" tree/bin/
	sed 's/^memory *=.*/memory = "100m"/' "$ROOT/etc/sandbox.conf" > tree/etc/sandbox.conf
	sed 's/^memory *=.*/memory = "200m"/' "$ROOT/etc/sandbox.conf" > env.conf
	sed 's/^memory *=.*/memory = "300m"/' "$ROOT/etc/sandbox.conf" > opt.conf
	req='{"language":"python","code":"1"}'
	run --separate-stderr env -u SBX_CONF tree/bin/sbx-validate <<< "$req"
	[ "$status" -eq 0 ]
	jqe 0 '.limits.memory_bytes == 100*1048576'
	run --separate-stderr env SBX_CONF=env.conf tree/bin/sbx-validate <<< "$req"
	jqe 0 '.limits.memory_bytes == 200*1048576'
	run --separate-stderr env SBX_CONF=env.conf tree/bin/sbx-validate -c opt.conf <<< "$req"
	jqe 0 '.limits.memory_bytes == 300*1048576'
}
