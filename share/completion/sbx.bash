# bash completion for the sbx tools (sbx-validate, sbx-run, sbx-cap,
# sbx-log, sbx-history, sbx-mcp, sbx-shard, sbx-batch, sbx-merge).
# Options per tool; languages are read from the configuration the command
# line names (-c), else $SBX_CONF, else the installed one, so they are the
# ones this machine runs.  Installed as one file per tool name (symlinks)
# in bash-completion's directory.

_sbx_conf() {
	local i
	for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
		case ${COMP_WORDS[i]} in
		-c | --config) printf '%s\n' "${COMP_WORDS[i + 1]/#\~/$HOME}"; return ;;
		--config=*) printf '%s\n' "${COMP_WORDS[i]#--config=}"; return ;;
		esac
	done
	if [[ -n ${SBX_CONF:-} ]]; then printf '%s\n' "$SBX_CONF"; return; fi
	local bin dir
	bin=$(command -v "${COMP_WORDS[0]}" 2>/dev/null) && dir=$(dirname "$(readlink -f "$bin")")
	for f in "$dir/../etc/sandbox.conf" "$dir/../etc/sbx/sandbox.conf" /usr/local/etc/sbx/sandbox.conf /etc/sbx/sandbox.conf; do
		[[ -r $f ]] && { printf '%s\n' "$f"; return; }
	done
}

# Language names and their aliases, from [language.NAME] and aliases = [...].
_sbx_languages() {
	local conf
	conf=$(_sbx_conf)
	[[ -r $conf ]] || return
	sed -n -e 's/^[[:space:]]*\[language\.\([A-Za-z0-9_+-]*\)\].*/\1/p' \
		-e '/^[[:space:]]*aliases[[:space:]]*=/{s/#.*//;s/^[^[]*\[//;s/\].*//;s/[",]/ /g;p;}' "$conf" | tr ' ' '\n' | sed '/^$/d'
}

_sbx() {
	local cur prev cmd opts
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	cmd=${COMP_WORDS[0]##*/}

	case $prev in
	-c | --config | -d | --database | --token-file | --history)
		COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
	-o | --output)
		COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
	--language) COMPREPLY=($(compgen -W "$(_sbx_languages)" -- "$cur")); return ;;
	--status) COMPREPLY=($(compgen -W "success error timeout memory_limit compile_error invalid internal_error" -- "$cur")); return ;;
	--verdict) COMPREPLY=($(compgen -W "accepted wrong_answer timeout memory_limit error output_limit judge_error compile_error" -- "$cur")); return ;;
	-f | --format) COMPREPLY=($(compgen -W "json table csv html" -- "$cur")); return ;;
	--by) COMPREPLY=($(compgen -W "hour day" -- "$cur")); return ;;
	--store-code) COMPREPLY=($(compgen -W "preview full" -- "$cur")); return ;;
	--sync) COMPREPLY=($(compgen -W "normal full" -- "$cur")); return ;;
	--transport) COMPREPLY=($(compgen -W "stdio http sse" -- "$cur")); return ;;
	--since | --until | --older-than) COMPREPLY=($(compgen -W "1h 24h 7d 30d 90d" -- "$cur")); return ;;
	--events | --control | -j | --jobs | -n | --bytes | --limit | -k | --shards | --shard | -l | --listen | \
		--id | --session | --principal | --jq) return ;;
	esac
	if [[ $cur == --stats=* ]]; then COMPREPLY=($(compgen -W "--stats=verdict" -- "$cur")); return; fi

	case $cmd in
	sbx-validate) opts="-c --config -h --help --version" ;;
	sbx-run) opts="-j --jobs --unordered --progress --no-progress --timings --no-cache --events --live --control --check --json --pull -c --config -h --help --version" ;;
	sbx-cap) opts="-n --bytes -c --config -h --help --version" ;;
	sbx-log) opts="-d --database --store-code --sync -c --config -h --help --version" ;;
	sbx-history) opts="--since --until --language --status --verdict --id --session --principal -n --limit --stats --stats=verdict --by --jq -f --format --record --prune --older-than --vacuum --merge -d --database -c --config -h --help --version" ;;
	sbx-mcp) opts="-c --config -l --listen --token-file --transport -h --help --version" ;;
	sbx-shard) opts="-k --shards -o --output -c --config -h --help --version" ;;
	sbx-batch) opts="-j --jobs --history --shard -c --config -h --help --version" ;;
	sbx-merge) opts="-k --shards -q --quiet -c --config -h --help --version" ;;
	*) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		# operands: files (sbx-batch SHARD OUT, sbx-merge RESULTS..., sbx-history --merge SRC...)
		COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null
	fi
}
complete -F _sbx sbx-validate sbx-run sbx-cap sbx-log sbx-history sbx-mcp sbx-shard sbx-batch sbx-merge
