# bash completion for the sbx tools (sbx-validate, sbx-run, sbx-cap,
# sbx-log, sbx-history, sbx-mcp, sbx-shard, sbx-batch, sbx-merge).
# Options per tool; languages are read from the configuration the command
# line names (-c), else $SBX_CONF, else the installed one, so they are the
# ones this machine runs.  Installed as one file per tool name (symlinks)
# in bash-completion's directory.

# The words of the command line, with "--config" "=" "FILE" (bash splits
# at the = of COMP_WORDBREAKS) read as one option.
_sbx_conf() {
	local i w
	for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-c) printf '%s\n' "${COMP_WORDS[i + 1]/#\~/$HOME}"; return ;;
		--config)
			if [[ ${COMP_WORDS[i + 1]} == = ]]; then printf '%s\n' "${COMP_WORDS[i + 2]/#\~/$HOME}"
			else printf '%s\n' "${COMP_WORDS[i + 1]/#\~/$HOME}"; fi
			return ;;
		--config=*) printf '%s\n' "${w#--config=}"; return ;;
		esac
	done
	if [[ -n ${SBX_CONF:-} ]]; then printf '%s\n' "$SBX_CONF"; return; fi
	local bin dir f
	bin=$(command -v "${COMP_WORDS[0]}" 2>/dev/null) && dir=$(dirname "$(readlink -f "$bin")")
	for f in "$dir/../etc/sandbox.conf" "$dir/../etc/sbx/sandbox.conf" /usr/local/etc/sbx/sandbox.conf /etc/sbx/sandbox.conf; do
		[[ -r $f ]] && { printf '%s\n' "$f"; return; }
	done
}

# Language names and their aliases, from [language.NAME] and aliases = [...]:
# only words of letters, digits and + _ . - (a configuration is data, never
# code to the shell).
_sbx_languages() {
	local conf
	conf=$(_sbx_conf)
	[[ -r $conf ]] || return
	sed -n -e 's/^[[:space:]]*\[language\.\([A-Za-z0-9_+-]*\)\].*/\1/p' \
		-e '/^[[:space:]]*aliases[[:space:]]*=/{s/#.*//;s/^[^[]*\[//;s/\].*//;s/[",]/ /g;p;}' "$conf" |
		tr ' \t' '\n\n' | grep -E '^[A-Za-z0-9_+.-]+$'
}

# The names sbx-history --help lists for an option ("--status S  one of:
# a, b, ..."): its statuses and verdicts, from the tool itself, so that
# they are the table's (lib/core/status.h) and never a copy.
_sbx_listed() {
	"${COMP_WORDS[0]}" --help 2>/dev/null | sed -n "s/^ *$1 .*one of: //p" | tr ', ' '\n\n' | grep -E '^[a-z_]+$'
}

# _sbx_words WORD...: COMPREPLY = the words that start with $cur, taken as
# they are (compgen -W would expand them).
_sbx_words() {
	local w
	COMPREPLY=()
	for w in "$@"; do [[ $w == "$cur"* ]] && COMPREPLY+=("$w"); done
}

# _sbx_files [-d]: file (or directory) names, one per reply, spaces kept.
_sbx_files() {
	local IFS=$'\n'
	COMPREPLY=($(compgen "${1:--f}" -- "$cur"))
	compopt -o filenames 2>/dev/null
}

_sbx() {
	local cur prev cmd opts
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	cmd=${COMP_WORDS[0]##*/}
	# "--opt=" then the value: bash made "--opt" "=" "value" of it
	if [[ $cur == = ]]; then cur=; elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then prev=${COMP_WORDS[COMP_CWORD - 2]}; fi

	case $prev in
	-c | --config | -d | --database | --token-file | --history)
		_sbx_files; return ;;
	-o | --output) _sbx_files -d; return ;;
	--language) local IFS=$'\n'; _sbx_words $(_sbx_languages); return ;;
	--status | --verdict) local IFS=$'\n'; _sbx_words $(_sbx_listed "$prev"); return ;;
	-f | --format) _sbx_words json table csv html; return ;;
	--by) _sbx_words hour day; return ;;
	--store-code) _sbx_words preview full; return ;;
	--sync) _sbx_words normal full; return ;;
	--transport) _sbx_words stdio http sse; return ;;
	--since | --until | --older-than) _sbx_words 1h 24h 7d 30d 90d today yesterday; return ;;
	--events | --event | --control | --connect | -j | --jobs | -n | --bytes | --limit | -k | --shards | --shard | -l | --listen | \
		--id | --session | --principal | --jq) return ;;
	esac
	if [[ $prev == --stats ]] && [[ ${COMP_WORDS[COMP_CWORD]} == = || ${COMP_WORDS[COMP_CWORD - 1]} == = ]]; then
		_sbx_words verdict; return
	fi

	case $cmd in
	sbx-validate) opts="-c --config -h --help --version" ;;
	sbx-run) opts="-j --jobs --unordered --progress --no-progress --timings --no-cache --events --live --control --connect --check --json --pull -c --config -h --help --version" ;;
	sbx-cap) opts="-n --bytes -c --config -h --help --version" ;;
	sbx-log) opts="-d --database --store-code --sync --event -c --config -h --help --version" ;;
	sbx-history) opts="--since --until --language --status --verdict --egress-refused --id --session --principal -n --limit --stats --stats=verdict --by --jq -f --format --record --prune --older-than --force --vacuum -v --verbose --merge --events -d --database --server -c --config -h --help --version" ;;
	sbx-mcp) opts="-c --config -l --listen --token-file --transport -h --help --version" ;;
	sbx-shard) opts="-k --shards -o --output -c --config -h --help --version" ;;
	sbx-batch) opts="-j --jobs --history --shard -c --config -h --help --version" ;;
	sbx-merge) opts="-k --shards -q --quiet -c --config -h --help --version" ;;
	*) return ;;
	esac
	if [[ $cur == -* ]]; then
		_sbx_words $opts
	else
		# operands: files (sbx-batch SHARD OUT, sbx-merge RESULTS..., sbx-history --merge SRC...)
		_sbx_files
	fi
}
complete -F _sbx sbx-validate sbx-run sbx-cap sbx-log sbx-history sbx-mcp sbx-shard sbx-batch sbx-merge
