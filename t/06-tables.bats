#!/usr/bin/env bats
# The docs against the tables they describe: doc/contract.md's request
# fields against lib/core/req.h's REQ_FIELDS (read through t/unit/req_test
# --fields, which `make unit` builds), doc/mcp.md's methods against
# lib/mcp/mcp.c's (t/unit/method_test --methods).
load helpers

setup_file() {
	# the unit tests of the build the tools come from (build/asan/t for
	# build/asan/bin), else the plain build's
	fields=$BIN/../t/req_test
	[ -x "$fields" ] || fields=$ROOT/build/t/req_test
	[ -x "$fields" ] || { echo "no $fields: make unit" >&2; return 1; }
	"$fields" --fields > "$BATS_FILE_TMPDIR/fields"
	sed -n '/^## Request (input of sbx-validate)/,/^## /p' "$ROOT/doc/contract.md" > "$BATS_FILE_TMPDIR/request.md"
}

# The table's fields with all of the contexts given, in its order.
table() {
	awk -v want="$*" 'BEGIN { n = split(want, w, " ") }
		{ ok = 1; for (i = 1; i <= n; i++) { neg = w[i] ~ /^!/; c = neg ? substr(w[i], 2) : w[i]
			has = 0; for (j = 2; j <= NF; j++) if ($j == c) has = 1
			if (has == neg) ok = 0 }
		  if (ok) print $1 }' "$BATS_FILE_TMPDIR/fields"
}

# The doc's row for a field (its first column names it), or its rows' names.
row() { grep -E "^\| \`$1\` \|" "$BATS_FILE_TMPDIR/request.md"; }
# The names in backquotes in a piece of text, one a line.
names() { grep -oE '`[a-z_]+`' | tr -d '`'; }

@test "doc/contract.md's request fields are req.h's, in its order, each once" {
	doc=$(grep -E '^\| `' "$BATS_FILE_TMPDIR/request.md" | cut -d'|' -f2 | names)
	[ -n "$doc" ]
	diff <(echo "$doc") <(table req)
}

@test "doc/contract.md says what a cell, a judged request, a test and a checker take as req.h does" {
	# a cell: "no `entry`, `command`, ... or `network`"
	diff <(row cell | grep -oE 'no `[^(]*`network`' | names | sort) <(table req '!cell' | sort)
	# beside tests: "no `stdin`, ... or `artifacts` beside it"
	diff <(row tests | grep -oE 'no `[^;]* beside it' | names | sort) <(table req '!judged' | sort)
	# a test: "{stdin?, args?, ...}", a checker: "{language, code, timeout?, memory?}"
	diff <(row tests | grep -oE '`\{[a-z_?, ]*\}`' | tr -d '`{}? ' | tr , '\n') <(table test)
	diff <(row checker | grep -oE '`\{[a-z_?, ]*\}`' | tr -d '`{}? ' | tr , '\n') <(table checker)
	# only with tests: "with `tests`"
	for f in $(table judging); do row "$f" | grep -qE '\| with `(tests|compare)'; done
	# computed: the one row of them
	diff <(grep -E '^\| `[a-z_]+`(, `[a-z_]+`)+ \| computed \|' "$BATS_FILE_TMPDIR/request.md" | cut -d'|' -f2 | names) <(table computed)
}

@test "doc/mcp.md names every method the server answers, and no other" {
	methods=$BIN/../t/method_test
	[ -x "$methods" ] || methods=$ROOT/build/t/method_test
	"$methods" --methods > table
	sed -n '/^## What the server speaks/,/^## /p' "$ROOT/doc/mcp.md" > speaks.md
	# every method (a notification the server takes, too)
	while read -r m _; do grep -qF "\`$m\`" speaks.md || { echo "doc/mcp.md does not name $m" >&2; false; }; done < table
	# every method the section names is one; the notifications and the
	# request (elicitation) the server sends are named too, and are not in
	# the table
	for m in $(grep -oE '`[a-z]+(/[a-zA-Z]+)+`' speaks.md | tr -d '`' | sort -u); do
		grep -q "^$m " table && continue
		case $m in notifications/progress | notifications/message | notifications/resources/updated | notifications/tasks/status | elicitation/create) continue ;; esac
		echo "doc/mcp.md names $m, which the server does not answer" >&2
		false
	done
}
