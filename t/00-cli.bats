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

# bats test_tags=valgrind
@test "every tool: a broken configuration exits 2 naming file, line and key" {
	printf '[sandbox]\ntimeout = 5\nmemroy = "1g"\n' > bad.conf
	for t in $(tools); do
		run --separate-stderr "$BIN/$t" -c bad.conf < /dev/null
		[ "$status" -eq 2 ] || { echo "$t: $status"; false; }
		[[ $stderr == *"bad.conf:3: key \"memroy\": unknown key in [sandbox]"* ]] || { echo "$t: $stderr"; false; }
		[ -z "$output" ]
	done
}

@test "as root, every tool refuses sandbox uids that are accounts, groups or system ids (a new group too); --check lists them" {
	skip_unless_root
	# nobody's uid is an account's; 1 is in the system's range; a group
	# of its own whose gid no account has
	groupadd -g 61234 "sbxt$$"
	for case in "uid = $(($(id -u nobody) - 2)):the account nobody's" "uid = 1:in the system's range" \
		"uid = 61231:the group sbxt$$'s"; do
		conf=$(conf_with "s/^uid *=.*/${case%%:*}/")
		line=$(grep -n '^uid' "$conf" | cut -d: -f1)
		for t in $(tools); do
			run --separate-stderr "$BIN/$t" -c "$conf" < /dev/null
			[ "$status" -eq 2 ] && [ -z "$output" ] || { echo "$t: $status $output"; groupdel "sbxt$$"; false; }
			[[ $stderr == *"test.conf:$line: ${case%%:*}: host id "*" is ${case#*:}"*"allow_host_uids = true"* ]] ||
				{ echo "$t: $stderr"; groupdel "sbxt$$"; false; }
		done
	done
	groupdel "sbxt$$"
	# A check that passed is remembered (conf_host.c): a group made on
	# those ids afterwards still counts.  (Other tools running meanwhile
	# keep their own pass in the same file, hence the tries; ids outside
	# systemd's range for dynamic users, where nothing is remembered.)
	conf=$(conf_with "s/^uid *=.*/uid = 59000/")
	mkdir -p /run/sbx
	local i
	for i in 1 2 3 4 5; do
		"$BIN/sbx-validate" -c "$conf" < /dev/null
		if grep -Eq '^sbx-uids-[0-9]+ [0-9]+ 59000 ' /run/sbx/uids.ok; then break; fi
	done
	[ "$i" -lt 5 ] || grep -Eq '^sbx-uids-[0-9]+ [0-9]+ 59000 ' /run/sbx/uids.ok
	groupadd -g 59002 "sbxc$$"
	run --separate-stderr "$BIN/sbx-validate" -c "$conf" < /dev/null
	groupdel "sbxc$$"
	[ "$status" -eq 2 ]
	[[ $stderr == *"host id 59002 (the mapped nobody) is the group sbxc$$'s"* ]] || { echo "$stderr"; false; }
	# the override, and the mapping as --check shows it
	conf=$(conf_with -e 's/^uid *=.*/uid = 1/' -e 's/^\[sandbox\]/[sandbox]\nallow_host_uids = true/')
	echo '{"language":"bash","code":"true"}' | "$BIN/sbx-validate" -c "$conf" | jq -e '.status == null'
	run --separate-stderr "$BIN/sbx-run" --check
	printf '%s\n' "$output" | jq -e --argjson u "$SBX_UID" '.host_ids == {init: $u, program: ($u + 1), nobody: ($u + 2), egress: ($u + 3)}'
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

# bats test_tags=valgrind
@test "record tools: files as arguments are read as one stream, as cat gives them; an unreadable one is exit 2" {
	printf '{"id":"a","language":"py","code":"1"}' > a.jsonl   # no final newline
	printf '{"id":"b","language":"sh","code":"2"}\n[]\n' > b.jsonl
	run --separate-stderr "$BIN/sbx-validate" a.jsonl - b.jsonl < <(echo '{"id":"s","language":"js","code":"3"}')
	[ "$status" -eq 1 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .id | paste -sd,)" = "a,s,b,null" ]
	jqe 3 '.status == "invalid" and (.error | startswith("line 4:"))'
	printf '{"id":"r","status":"success","stdout":"x"}\n' > r.jsonl
	run --separate-stderr "$BIN/sbx-cap" -n 1 r.jsonl r.jsonl
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	for tool in sbx-validate sbx-cap sbx-log sbx-run; do
		run --separate-stderr "$BIN/$tool" a.jsonl missing.jsonl
		[ "$status" -eq 2 ]
		[ -z "$output" ]
		[[ "${stderr_lines[0]}" == "$tool: cannot read missing.jsonl: No such file or directory" ]]
	done
	run --separate-stderr "$BIN/sbx-run" --check extra
	[ "$status" -eq 2 ]
}

@test "make install PREFIX=...: the installed tools work from any directory, state where configured" {
	command -v make > /dev/null || skip "no make"
	[ -f "$ROOT/bin/sbx-run" ] || skip "no build in $ROOT/bin"
	pfx=$BATS_TEST_TMPDIR/pfx
	make -s -C "$ROOT" install PREFIX="$pfx" STATEDIR="$pfx/state" > /dev/null
	[ -x "$pfx/bin/sbx-run" ]
	[ -x "$pfx/libexec/sbx/sbx-egress" ]
	[ -x "$pfx/libexec/sbx/sbx-thumb" ]
	[ -f "$pfx/share/sbx/examples/show.jq" ]
	grep -q "^state_dir *= \"$pfx/state\"" "$pfx/etc/sbx/sandbox.conf"
	mkdir elsewhere && cd elsewhere
	run --separate-stderr env -u SBX_CONF -u SBX_HISTORY bash -c "echo '{\"language\":\"bash\",\"code\":\"echo hi\"}' |
		'$pfx/bin/sbx-validate' | '$pfx/bin/sbx-run' | '$pfx/bin/sbx-log' | '$pfx/bin/sbx-cap'"
	[ "$status" -eq 0 ]
	jqe 0 '.status == "success" and .stdout == "hi\n" and .history_id == 1'
	[ -s "$pfx/state/sandbox_history.db" ]
	run --separate-stderr env -u SBX_CONF -u SBX_HISTORY "$pfx/bin/sbx-history" --jq .status
	[ "$output" = '"success"' ]
	# an edited configuration is kept on a second install
	echo "# mine" >> "$pfx/etc/sbx/sandbox.conf"
	run make -s -C "$ROOT" install PREFIX="$pfx" STATEDIR="$pfx/state"
	[ "$status" -eq 0 ]
	[[ "$output" == *"kept $pfx/etc/sbx/sandbox.conf"* ]]
	tail -1 "$pfx/etc/sbx/sandbox.conf" | grep -q mine && [ -f "$pfx/etc/sbx/sandbox.conf.new" ]
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
	# an installed tree: PREFIX/bin/../etc/sbx/sandbox.conf
	mkdir -p inst/bin inst/etc/sbx
	cp "$src" inst/bin/
	sed 's/^memory *=.*/memory = "400m"/' "$ROOT/etc/sandbox.conf" > inst/etc/sbx/sandbox.conf
	run --separate-stderr env -u SBX_CONF inst/bin/sbx-validate <<< "$req"
	jqe 0 '.limits.memory_bytes == 400*1048576'
}

# The keys a section takes, one a line, sorted: those an unknown key's
# error lists (lib/core/conf_key.h's table and limit.h's limits).
conf_keys() {
	printf '[%s]\nno_such_key = 1\n' "$1" > keys.conf
	"$BIN/sbx-validate" -c keys.conf < /dev/null 2>&1 | sed -n 's/.*unknown key in .* (known: \(.*\))$/\1/p' | tr -d ' ' | tr , '\n' | sort
}
# The keys documented for a section: the first column of the tables in
# README.md and doc/ headed "| key (`[SECTION]`)".
doc_keys() {
	awk -v head="| key (\`[$1]\`)" 'FNR == 1 { on = 0 } index($0, head) == 1 { on = 1; next } !/^\|/ { on = 0 } on' \
		"$ROOT/README.md" "$ROOT"/doc/*.md | cut -d'|' -f2 | grep -oE '`[a-z_]+`' | tr -d '`' | sort -u
}

@test "configuration keys: the tables in README.md and doc/ name every key of every section, and none the parser lacks" {
	conf_keys sandbox > sandbox.keys
	[ "$(wc -l < sandbox.keys)" -gt 40 ]
	for s in sandbox sessions http mcp language; do
		if [ "$s" = language ]; then
			# a language takes the limits' keys, documented once in
			# [sandbox]'s table, and its own
			conf_keys language.x | comm -23 - sandbox.keys > known
			doc_keys language.NAME > documented
		else
			conf_keys "$s" > known
			doc_keys "$s" > documented
		fi
		[ -s known ]
		[ -s documented ]
		comm -3 known documented > differ
		[ ! -s differ ] || { echo "[$s]: keys differ (left: the parser's only, right: the docs' only):" >&2; cat differ >&2; return 1; }
	done
}

@test "the suite's own assertions: a negated command is followed by || false (errexit ignores a bare one)" {
	bad=$(grep -nE '^\s+! ' "$ROOT"/t/*.bats "$ROOT"/t/helpers.bash | grep -v '|| false$' || true)
	[ -z "$bad" ] || { echo "negations that cannot fail a test: $bad"; false; }
}

@test "the suite's own assertions: no check is the left side of && (errexit ignores it there)" {
	# "[ a ] && [ b ]" fails the test only when b is false: write two lines.
	# A guard ("[ x ] && var=..."), or a chain with an || of its own, is fine.
	bad=$(grep -nE '^\s+(\[\[? .*\]\]?|grep -q[^|]*|jqe [^|]*) && (\[|grep -q|jqe )' "$ROOT"/t/*.bats "$ROOT"/t/helpers.bash |
		grep -v '|| ' || true)
	[ -z "$bad" ] || { echo "checks that cannot fail a test: $bad"; false; }
}
