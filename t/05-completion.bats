#!/usr/bin/env bats
# Shell completion (share/completion, installed by make install and the
# package): every option each tool's --help names is offered, in bash and
# in zsh; languages come from the configuration the command line names;
# statuses and verdicts are the ones sbx-history --help lists.
load helpers

TOOLS=(sbx-validate sbx-run sbx-cap sbx-log sbx-history sbx-mcp sbx-shard sbx-batch sbx-merge)

# complete WORD...: what bash completion offers for the last word.
# (the tools on PATH, as a user's are: statuses and verdicts come from
# sbx-history --help)
complete_bash() {
	PATH=$BIN:$PATH bash -c 'source "$1/share/completion/sbx.bash"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _sbx; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$ROOT" "$@"
}
# (another program's option in the prose, as "sbatch --array=", is not one)
long_options() { "$BIN/$1" --help | grep -oE -- '--[a-z][a-z-]*=?' | grep -v '=$' | sort -u; }

@test "bash: every long option of every tool's --help is offered, and none it lacks" {
	for t in "${TOOLS[@]}"; do
		complete_bash "$t" -- | grep -- '^--' | sed 's/=.*//' | sort -u > offered
		long_options "$t" > named
		diff named offered || { echo "$t: options differ (< --help only, > completion only)" >&2; return 1; }
	done
}

@test "bash: languages and their aliases from the configuration -c names; statuses and verdicts from sbx-history --help" {
	run complete_bash sbx-history -c "$SBX_CONF" --language ''
	[[ " $(echo $output) " == *" python py python3 "* ]]
	for l in $(sed -n 's/^\[language\.\([a-z+]*\)\]/\1/p' "$SBX_CONF"); do grep -qx "$l" <<< "$output"; done
	printf '[sandbox]\n[language.cobol]\ncommand = ["cobc"]\nextension = "cob"\naliases = ["cob"]\n' > one.conf
	run complete_bash sbx-history --config one.conf --language c
	[ "$(echo $output)" = "cobol cob" ]
	# without -c: $SBX_CONF
	[ "$(SBX_CONF=one.conf complete_bash sbx-history --language co | tr '\n' ' ')" = "cobol cob " ]
	help=$("$BIN/sbx-history" --help)
	# ("--status S  one of: a, b, ...": the tool's table, status.h)
	want=$(sed -n 's/^ *--status S .*one of: //p' <<< "$help" | grep -oE '[a-z_]+' | sort)
	[ "$(complete_bash sbx-history --status '' | sort)" = "$want" ]
	grep -qx rejected <<< "$want"
	grep -qx cancelled <<< "$want"
	want=$(sed -n 's/^ *--verdict V .*one of: //p' <<< "$help" | grep -oE '[a-z_]+' | sort)
	[ "$(complete_bash sbx-history --verdict '' | sort)" = "$want" ]
	grep -qx accepted <<< "$want"
	grep -qx judge_error <<< "$want"
	[ "$(complete_bash sbx-history --verdict acc)" = accepted ]
	[ "$(complete_bash sbx-history -f '' | tr '\n' ' ')" = "json table csv html " ]
	[ "$(complete_bash sbx-mcp --transport '' | tr '\n' ' ')" = "stdio http sse " ]
}

@test "zsh: the completion parses, names every tool, and offers every long option of each tool's --help" {
	command -v zsh > /dev/null || skip "zsh is not installed (make deps installs it)"
	zsh -n "$ROOT/share/completion/_sbx"
	[ "$(head -1 "$ROOT/share/completion/_sbx")" = "#compdef ${TOOLS[*]}" ]
	for t in "${TOOLS[@]}"; do
		# the tool's branch of the case, and the options every tool shares
		sed -n "/^  $t)/,/;;/p" "$ROOT/share/completion/_sbx" > branch
		sed -n '/^common=(/,/^)/p' "$ROOT/share/completion/_sbx" >> branch
		for o in $(long_options "$t"); do
			grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" branch || { echo "$t: $o is not offered by zsh" >&2; return 1; }
		done
	done
}

@test "bash: a hostile configuration is data (no expansion of its words); names with spaces stay whole; --config=FILE and --stats=" {
	printf '[sandbox]\n[language.x]\naliases = ["$(touch pwned)", "`touch pwned2`", "ok"]\n' > evil.conf
	run complete_bash sbx-history -c evil.conf --language ''
	[ "$(echo $output)" = "x ok" ]
	[ ! -e pwned ]
	[ ! -e pwned2 ]
	touch "my results.jsonl" other.txt
	run complete_bash sbx-merge my
	[ "$output" = "my results.jsonl" ]
	# bash splits --config=FILE at the = (COMP_WORDBREAKS)
	printf '[sandbox]\n[language.cobol]\ncommand = ["cobc"]\n' > one.conf
	run complete_bash sbx-history --config = one.conf --language c
	[ "$output" = cobol ]
	run complete_bash sbx-history --stats = ''
	[ "$output" = verdict ]
	run complete_bash sbx-history --format = t
	[ "$output" = table ]
}
