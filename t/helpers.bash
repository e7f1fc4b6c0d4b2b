# Shared set-up for the bats files: where the tools are, a per-test temp
# directory as the working directory, and small JSON helpers (through jq).
#
# Tags (bats 1.10 or later, t/bats; t/run picks tests by them):
#
#   # bats test_tags=kernel
#     The test's outcome could differ on another kernel or cgroup version:
#     it proves namespaces, cgroups (v1, v2 as root, v2 delegated to a
#     user), seccomp, the mount API, Landlock, slots, rlimits, OOM and pids
#     behaviour, a language's runtime compiled and run in a sandbox (once
#     per language), a kernel (run_cell) started and interrupted, or the
#     package's units under systemd.  Only these run in the guests (Debian
#     12's kernel as root and as a delegated user, Debian 13's for slots);
#     everything runs on the host.  Argument checks, comparison modes, the
#     history, the MCP protocol, dashboard pages and batch bookkeeping are
#     not kernel tests, even where they run a sandbox on the way: a
#     sandbox that works at all on a kernel is proven by the tagged ones.
#     In the guests their jq is gojq (a fifth of jq 1.6's start-up under
#     emulation: t/guest/suite), so what they ask of jq must mean the same
#     to both: no output compared as text where key order or number
#     formatting could differ, regular expressions without Oniguruma's
#     extensions (gojq's are Go's).
#   # bats test_tags=valgrind
#     Also run under valgrind (t/run --valgrind), against the build without
#     sanitizers: what memcheck sees that ASan and UBSan do not (reads of
#     uninitialised memory, in the optimised build users get), over one
#     test per path of each record tool's input, rather than every case.
#
# A negated command does not fail a test: bash's errexit ignores "! cmd",
# so an assertion that something is absent is written "! cmd || false"
# (t/00-cli.bats checks that every one is).
bats_require_minimum_version 1.5.0

# (Set up for every test: without a process of its own where the shell's
# builtins do, which counts in a guest under emulation.)
ROOT=${BATS_TEST_DIRNAME%/*}
case ${SBX_BIN:-} in
'') BIN=$ROOT/bin ;;
/*) BIN=$SBX_BIN ;;
*) BIN=$(cd "$SBX_BIN" && pwd) ;;
esac
unset SBX_BACKEND SBX_HISTORY
# SBX_TEST_BACKEND=docker (t/run --docker): the same files against the
# docker backend, on the engine and configuration t/docker/engine set up.
DOCKER_DIR=$ROOT/build/docker
BACKEND=${SBX_TEST_BACKEND:-native}
if [ "${SBX_TEST_BACKEND:-native}" = docker ]; then
	SHIPPED_CONF=$DOCKER_DIR/sandbox.conf
	export SBX_BACKEND=docker
	DOCKER_HOST=$(cat "$DOCKER_DIR/host" 2>/dev/null) && export DOCKER_HOST
else
	SHIPPED_CONF=$ROOT/etc/sandbox.conf
fi

# What this bats process makes is marked as its own, so that a test checks
# only that, never everything of a uid or of the machine (another checkout
# may be testing beside it, t/run runs files side by side):
#  - cgroups: the configuration every test uses is the shipped one with a
#    cgroup parent of this process's own, CG_PARENT (the runs' groups, the
#    slots' kept ones, the docker backend's accounting groups under
#    CG_PARENT-docker); t/bats1 removes them, and the file, after it (the
#    file is in the checkout, where nobody reads it as it reads the tools;
#    its directory is everyone's, as /tmp, and a file there that is not
#    this user's is never used);
#  - processes: those descending from bats itself (BATS_ROOT_PID), which
#    t/run starts as a child subreaper (t/subreaper), so that an orphan
#    (a sandbox's init whose supervisor died) stays below it;
#  - mounts: those below the run's temporary directory (BATS_RUN_TMPDIR,
#    where tests keep their state) or the checkout's state directory;
#  - slots: the machine's (/run/sbx/slots), which t/32 counts on having
#    to itself: a file t/run runs beside others (SBX_TEST_SIDE) has none.
CG_PARENT=sbx-t$BATS_ROOT_PID
export SBX_CONF=$ROOT/build/test/$CG_PARENT.conf
if [ ! -O "$SBX_CONF" ] && [ -f "$SHIPPED_CONF" ]; then
	[ -d "$ROOT/build/test" ] || mkdir -p -m 1777 "$ROOT/build/test"
	# (relative state paths made absolute: they are relative to the file)
	sed -E -e "s|^cgroup_parent *=.*|cgroup_parent   = \"$CG_PARENT\"|" \
		-e "${SBX_TEST_SIDE:+s|^slots *=.*|slots           = false|}" \
		-e "s|^(state_dir\|history)( *= *\")([^/\"])|\\1\\2${SHIPPED_CONF%/*}/\\3|" \
		"$SHIPPED_CONF" > "$SBX_CONF.$$" && mv -f "$SBX_CONF.$$" "$SBX_CONF"
	[ -O "$SBX_CONF" ] || { echo "helpers.bash: cannot write $SBX_CONF as $(id -un)" >&2; exit 1; }
fi

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	# sbx-log writes here, never into the checkout
	export SBX_HISTORY=$BATS_TEST_TMPDIR/var/history.db
	if declare -F local_setup >/dev/null; then local_setup; fi
}

# jqn N FILTER: apply FILTER to the Nth (0-based) stdout line of the last run.
jqn() {
	printf "%s\n" "${lines[$1]}" | jq -j "$2"
}

# jq -e, as jq 1.7 and its manual have it: exit 4 when the input held no
# value at all.  Debian 12's jq 1.6 exits 0 then, so that an assertion on a
# missing line or answer (empty input) would pass.  Other uses of jq are
# left as they are.
jq() {
	local a e=false out rc
	for a; do
		case $a in
		--exit-status) e=true ;;
		--*) ;;
		-*e*) e=true ;; # -e, -ce, -ne...
		esac
	done
	$e || { command jq "$@"; return; }
	out=$(command jq "$@"; rc=$?; echo .; exit $rc)
	rc=$?
	out=${out%.}
	if [ "$rc" -eq 0 ] && [ -z "$out" ]; then
		echo "jq -e: no value in its input (a missing line or answer?)" >&2
		return 4
	fi
	printf '%s' "$out"
	return "$rc"
}

# jqe N FILTER: assert FILTER is true on line N, showing the line if not.
jqe() {
	if ! printf '%s\n' "${lines[$1]}" | jq -e "$2" >/dev/null; then
		echo "line $1 fails $2: ${lines[$1]:0:2000}" >&2
		# a long record (code, files) hides its outcome past the cut: that first
		printf '%s\n' "${lines[$1]}" | jq -c '{status, error, exit_code, signal, duration_ms, stdout: (.stdout // "")[0:300],
			stderr: (.stderr // "")[0:300], compile: (.compile // {} | {status, duration_ms, stderr: (.stderr // "")[0:500]})}' >&2 2> /dev/null || true
		return 1
	fi
}

# A configuration derived from the shipped one: conf_with 'sed expression'.
conf_with() {
	sed "$@" "$SBX_CONF" > "$BATS_TEST_TMPDIR/test.conf"
	# keep state out of the checkout
	sed -i -e "s|^state_dir *=.*|state_dir = \"$BATS_TEST_TMPDIR/var\"|" \
		-e "s|^history *=.*|history = \"$BATS_TEST_TMPDIR/var/h.db\"|" "$BATS_TEST_TMPDIR/test.conf"
	echo "$BATS_TEST_TMPDIR/test.conf"
}

# sbx [-c FILE] [sbx-run options] < requests: sbx-validate | sbx-run.
sbx() {
	local conf=()
	if [ "${1:-}" = -c ]; then conf=(-c "$2"); shift 2; fi
	"$BIN/sbx-validate" "${conf[@]}" | "$BIN/sbx-run" "${conf[@]}" "$@"
}

# One request (a JSON object) through sbx; the result is ${lines[0]}.
run_req() {
	run --separate-stderr sbx "${@:2}" <<< "$1"
}

# Host uids of the sandbox's init and program (as root): uid, uid+1.
while IFS=" =" read -r sbx_key SBX_UID _; do [ "$sbx_key" != uid ] || break; done < "$ROOT/etc/sandbox.conf"
SBX_PROG_UID=$((SBX_UID + 1))

# our_procs [UIDS [ERE]]: this bats process's descendants ("pid uid stat
# args"), of the comma-separated UIDS if given, whose command line matches
# ERE if given.
our_procs() {
	# (the ERE through the environment: in awk's arguments, awk would match it)
	ps -eo pid=,ppid=,uid=,stat=,args= | RE=${2:-} awk -v root="$BATS_ROOT_PID" -v uids=",${1:-}," '
		{ pid[NR] = $1; up[$1] = $2; uid[$1] = $3; $2 = ""; line[$1] = $0 }
		END {
			for (i = 1; i <= NR; i++) {
				p = pid[i]; q = up[p]
				for (n = 0; q > 1 && q != root && n < 100; n++) q = up[q]
				if (q != root || (uids != ",," && index(uids, "," uid[p] ",") == 0)) continue
				a = line[p]; sub(/^ *[0-9]+ +[0-9]+ +[^ ]+ +/, "", a)
				if (ENVIRON["RE"] == "" || a ~ ENVIRON["RE"]) print line[p]
			}
		}'
}
# our_pgrep UIDS [ERE]: their pids, status 1 if none (as pgrep).
our_pgrep() { our_procs "$@" | awk '{ print $1; n++ } END { exit !n }'; }
# sandbox_procs UIDS [ERE] and sandbox_pgrep: the same for the processes
# of this bats process's sandboxes on either backend: below it (native),
# or in its runs' containers (docker: the engine's children, in the
# accounting groups sbx keeps under CG_PARENT-docker as root with the
# engine's cgroupfs driver, as t/docker/engine starts it).
sandbox_procs() {
	if ! on_docker; then our_procs "$@"; return; fi
	ps -eo pid=,uid=,stat=,args= | RE=${2:-} awk -v uids=",$1," '
		index(uids, "," $2 ",") { a = $0; sub(/^ *[0-9]+ +[0-9]+ +[^ ]+ +/, "", a); if (ENVIRON["RE"] == "" || a ~ ENVIRON["RE"]) print }' |
		while read -r line; do
			grep -q "/$CG_PARENT-docker/" "/proc/${line%% *}/cgroup" 2> /dev/null && echo "$line"
		done
}
sandbox_pgrep() { sandbox_procs "$@" | awk '{ print $1; n++ } END { exit !n }'; }
# our_pkill SIGNAL ERE: signal those whose command line matches ERE.
our_pkill() {
	local pids
	pids=$(our_pgrep "" "$2") || return 1
	kill "-$1" $pids 2> /dev/null
}
# await_program ERE [SECONDS]: until a sandboxed program of this bats
# process's own has a command line matching ERE (default: 30 s).
await_program() {
	local i
	for ((i = 0; i < ${2:-30} * 20; i++)); do
		if on_docker; then sandbox_pgrep "$SBX_PROG_UID" "$1"; else our_pgrep "" "$1"; fi > /dev/null && return 0
		sleep 0.05
	done
	echo "no process of ours runs $1" >&2
	return 1
}
# await_lines N FILE [SECONDS]: until FILE has N lines (default: 30 s).
await_lines() {
	local i
	for ((i = 0; i < ${3:-30} * 20; i++)); do
		[ "$(wc -l < "$2" 2> /dev/null || echo 0)" -ge "$1" ] && return 0
		sleep 0.05
	done
	echo "$2 has $(wc -l < "$2" 2> /dev/null || echo no) lines, not $1" >&2
	return 1
}

# cg_parents: the directories of this bats process's cgroup parents
# (CG_PARENT, CG_PARENT-docker), one per hierarchy, wherever sbx made them:
# looked for in the whole hierarchy until found, then remembered (they
# stay until t/bats1 removes them), which saves a walk of /sys/fs/cgroup
# per test (a second under emulation, in the guests).
cg_parents() { # into CG_DIRS
	local f=$BATS_RUN_TMPDIR/cg-parents
	if [ ! -s "$f" ] || on_docker; then
		find /sys/fs/cgroup -maxdepth 8 -type d \( -name "$CG_PARENT" -o -name "$CG_PARENT-docker" \) > "$f.$$" 2> /dev/null
		mv -f "$f.$$" "$f"
	fi
	mapfile -t CG_DIRS < "$f"
}

# Nothing of any run may survive it: no process of the sandbox uids, no
# run cgroup left behind (of this bats process's own: see CG_PARENT).
assert_no_leftovers() {
	local left f procs
	if [ "$EUID" = 0 ]; then
		left=$(sandbox_procs "$SBX_UID,$SBX_PROG_UID")
		if [ -n "$left" ]; then echo "processes left behind: $left" >&2; return 1; fi
	fi
	# a run's groups; the slots' stay, empty
	left=
	cg_parents
	[ ${#CG_DIRS[@]} -eq 0 ] || while IFS= read -r f; do
		case $f in
		*/cgroup.procs) procs= && read -r -d '' procs < "$f"; [ -z "$procs" ] || left+="processes left in a slot's cgroups: $f: $procs " ;;
		*) left+="cgroups left behind: $f " ;;
		esac
	done < <(find "${CG_DIRS[@]}" -mindepth 1 -maxdepth 2 \( -type d -name 'r*' -print -prune \) -o -path '*/slot*/cgroup.procs' -print 2> /dev/null)
	if [ -n "$left" ]; then echo "$left" >&2; return 1; fi
	# mounts (session workspaces) below this run's directories; mountinfo
	# escapes a space in a path as \040, which neither directory has
	left=$(awk -v a="$BATS_RUN_TMPDIR/" -v b="$ROOT/var/" \
		'index($5, a) == 1 || index($5, b) == 1 { printf "%s ", $5 }' /proc/self/mountinfo)
	if [ -n "$left" ]; then echo "mounts left behind: $left" >&2; return 1; fi
	if on_docker; then
		# containers of this process's runs: in its accounting groups,
		# or any of sbx's where the engine is the suite's own
		left=$(docker ps -aq --filter label=sbx.owner | while read -r c; do
			p=$(docker inspect -f '{{.HostConfig.CgroupParent}}' "$c" 2> /dev/null)
			case $p in *"/$CG_PARENT-docker/"* | "$CG_PARENT-docker/"*) echo "$c" ;;
			'') [ ! -f "$DOCKER_DIR/started" ] || echo "$c" ;; esac
		done)
		if [ -n "$left" ]; then echo "containers left behind: $left" >&2; return 1; fi
	fi
	return 0
}

on_docker() { [ "${SBX_TEST_BACKEND:-native}" = docker ]; }

# skip_on_docker WHY: this test is about the native backend's own mechanism;
# WHY says what the docker backend does instead (README: the two backends).
skip_on_docker() {
	if on_docker; then skip "native backend only: $1"; fi
}

# The docker tests need an engine (t/docker/engine start, run by t/run).
skip_unless_docker() {
	[ -f "$DOCKER_DIR/unavailable" ] && skip "no Docker engine: $(cat "$DOCKER_DIR/unavailable")"
	[ -f "$DOCKER_DIR/host" ] || skip "no Docker engine (t/docker/engine start was not run)"
	DOCKER_HOST=$(cat "$DOCKER_DIR/host")
	export DOCKER_HOST
}

skip_unless_root() {
	[ "$(id -u)" = 0 ] || skip "needs root"
}

# Limits for a run's whole process tree (cgroups): as root, or as an
# ordinary user in a cgroup v2 group delegated to it (t/guest/suite runs
# the suites so, and names the group in SBX_TEST_DELEGATED; its parent
# gives it memory and pids, not cpu).
# What sbx-run --check says of them is asked once per file: where root
# cannot have them (a container without its cgroups), tests that need them
# skip with its reason rather than fail.
cgroup_check() {
	local f=$BATS_RUN_TMPDIR/cgroup-check.json
	[ -s "$f" ] || { "$BIN/sbx-run" --check 2> /dev/null | jq -c '.cgroup // {}' > "$f.$$" && mv "$f.$$" "$f"; }
	jq -r "$1" "$f"
}
has_cgroup_limits() { on_docker || [ "$(cgroup_check '.ok == true')" = true ]; }
# ... and a CPU quota among them (not where a delegated group lacks cpu)
has_cpu_quota() { on_docker || [ "$(cgroup_check '.ok == true and (.missing // [] | index("cpu") | not)')" = true ]; }
skip_unless_cgroups() {
	has_cgroup_limits || skip "needs cgroup limits (root, or a cgroup v2 group delegated to this user): $(cgroup_check '.why // "sbx-run --check says none"')"
}

# bound HOST GUEST: a timing bound (ms or s): HOST here, GUEST in the QEMU
# guest (t/guest/suite sets SBX_GUEST), whose emulated CPUs start programs
# several times slower.  What the bound proves must hold at either.
bound() { if [ -n "${SBX_GUEST:-}" ]; then echo "$2"; else echo "$1"; fi; }

# py CODE [EXTRA]: a Python request, EXTRA (a jq object) merged into it.
py() { jq -cn --arg c "$1" "{language:\"python\",code:\$c} + ${2:-{\}}"; }

# http_serve [options]: sbx-mcp --listen on a free loopback port with
# $conf and the token file ${TOKENS-tokens} (TOKENS= for none); sets $URL
# and $SRV; its stderr (the access log) goes to ${SRV_LOG:-srv.log}.
# http_stop: SIGTERM and wait.
http_serve() {
	local tf=()
	[ -n "${TOKENS-tokens}" ] && tf=(--token-file "${TOKENS-tokens}")
	# emptied here, not only by the server's redirection: a log left by an
	# earlier server would otherwise give its (closed) address to the loop
	# below if it looked before the new server's shell had opened the file
	: > "${SRV_LOG:-srv.log}"
	"$BIN/sbx-mcp" -c "$conf" --listen "${LISTEN:-127.0.0.1:0}" "${tf[@]}" "$@" 2> "${SRV_LOG:-srv.log}" &
	SRV=$!
	for _ in $(seq 200); do
		URL=$(sed -n 's|.*serving MCP at \(http://[^ ]*\)/mcp .*|\1|p' "${SRV_LOG:-srv.log}")
		[ -n "$URL" ] && return 0
		kill -0 "$SRV" 2> /dev/null || break
		sleep 0.05
	done
	cat "${SRV_LOG:-srv.log}" >&2
	return 1
}

# The server must exit 0 and its log hold no sanitizer report (the suite
# runs the ASan+UBSan build).
# req METHOD PATH [curl args]: a request to the server http_serve started:
# $code, the headers in ./headers, the body in ./body.
req() {
	local m=$1 p=$2
	shift 2
	code=$(curl -sS -o body -D headers -w '%{http_code}' -X "$m" "$URL$p" "$@")
}
# hdr NAME: that header of the last req's answer.
hdr() { sed -n "s/^$1: *//Ip" headers | tr -d '\r'; }
http_stop() {
	local st=0
	if [ -n "${SRV:-}" ]; then
		kill -TERM "$SRV" 2> /dev/null || true
		wait "$SRV" || st=$?
		SRV=
		if [ "$st" -ne 0 ]; then echo "sbx-mcp exited with $st" >&2; cat "${SRV_LOG:-srv.log}" >&2; return 1; fi
	fi
	if grep -E 'Sanitizer|runtime error' "${SRV_LOG:-srv.log}" >&2 2> /dev/null; then return 1; fi
	return 0
}

# host_listener: a TCP listener on every address of the host (loopback
# too) on a free port, in the background; sets $LISTEN_PORT and
# $LISTENER (its pid); each connection it accepts is a line in ./hits.
# Nothing a sandbox does may ever add one.
host_listener() {
	python3 -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, a = s.accept()
    open(sys.argv[1], "a").write("%s:%d\n" % a); c.close()' "$BATS_TEST_TMPDIR/hits" > "$BATS_TEST_TMPDIR/listener.port" &
	LISTENER=$!
	for _ in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/listener.port" ] && break; sleep 0.1; done
	LISTEN_PORT=$(cat "$BATS_TEST_TMPDIR/listener.port")
	HOST_IP=$(ip -4 -o addr show scope global 2> /dev/null | awk '{ sub("/.*", "", $4); print $4; exit }')
}

# egress_package DIR: an npm package in DIR whose preinstall script is
# t/fixtures/egress-probe.js aimed at the host listener; egress_expected:
# what the probe must find (nothing reached, every proxy request refused).
egress_package() {
	mkdir -p "$1"
	echo '{"name":"mypkg","version":"1.0.0","scripts":{"preinstall":"node probe.js"}}' > "$1/package.json"
	sed -e "s/@PORT@/$LISTEN_PORT/g" -e "s/@HOSTIP@/${HOST_IP:-127.0.0.1}/g" "$ROOT/t/fixtures/egress-probe.js" > "$1/probe.js"
}
# egress_refused: the records the proxy keeps of the probe's requests
# ("host port why"), in any order.
egress_refused() {
	local ip=${HOST_IP:-127.0.0.1} not="is not in this sandbox's network allow-list (registry.npmjs.org): ask for it in the request's \"network\", within the configuration's"
	cat <<EOF
127.0.0.1 $LISTEN_PORT 127.0.0.1:$LISTEN_PORT $not
$ip $LISTEN_PORT $ip:$LISTEN_PORT $not
localhost 443 localhost:443 $not
registry.npmjs.org 80 registry.npmjs.org:80 $not
example.com 443 example.com:443 $not
127.0.0.1 $LISTEN_PORT 127.0.0.1:$LISTEN_PORT $not
EOF
}
egress_expected() {
	local ip=${HOST_IP:-127.0.0.1} unreach=ENETUNREACH
	[ -n "$HOST_IP" ] || unreach=ECONNREFUSED
	cat <<EOF
direct 127.0.0.1 ECONNREFUSED
direct $ip $unreach
CONNECT 127.0.0.1:$LISTEN_PORT -> HTTP/1.1 403 Forbidden
CONNECT $ip:$LISTEN_PORT -> HTTP/1.1 403 Forbidden
CONNECT localhost:443 -> HTTP/1.1 403 Forbidden
CONNECT registry.npmjs.org:80 -> HTTP/1.1 403 Forbidden
CONNECT example.com:443 -> HTTP/1.1 403 Forbidden
GET http://127.0.0.1:$LISTEN_PORT/ -> HTTP/1.1 403 Forbidden
EOF
}
