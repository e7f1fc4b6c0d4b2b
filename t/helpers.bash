# Shared set-up for the bats files: where the tools are, a per-test temp
# directory as the working directory, and small JSON helpers (through jq).
bats_require_minimum_version 1.5.0

ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
BIN=$(cd "${SBX_BIN:-$ROOT/bin}" && pwd)
unset SBX_BACKEND SBX_HISTORY
# SBX_TEST_BACKEND=docker (t/run --docker): the same files against the
# docker backend, on the engine and configuration t/docker/engine set up.
DOCKER_DIR=$ROOT/build/docker
BACKEND=${SBX_TEST_BACKEND:-native}
if [ "${SBX_TEST_BACKEND:-native}" = docker ]; then
	export SBX_CONF=$DOCKER_DIR/sandbox.conf SBX_BACKEND=docker
	DOCKER_HOST=$(cat "$DOCKER_DIR/host" 2>/dev/null) && export DOCKER_HOST
else
	export SBX_CONF=$ROOT/etc/sandbox.conf
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
SBX_UID=$(sed -n 's/^uid *= *\([0-9]*\).*/\1/p' "$ROOT/etc/sandbox.conf")
SBX_PROG_UID=$((SBX_UID + 1))

# Nothing of any run may survive it: no process of the sandbox uids, no
# run cgroup left behind.
assert_no_leftovers() {
	local left
	if [ "$(id -u)" = 0 ]; then
		left=$(ps -eo uid=,pid=,args= | awk -v a="$SBX_UID" -v b="$SBX_PROG_UID" '$1==a || $1==b')
		if [ -n "$left" ]; then echo "processes left behind: $left" >&2; return 1; fi
	fi
	left=$(find /sys/fs/cgroup -path '*/sbx/r*' -maxdepth 8 -type d 2>/dev/null | head -5)
	if [ -n "$left" ]; then echo "cgroups left behind: $left" >&2; return 1; fi
	# slots' cgroups stay, empty
	left=$(find /sys/fs/cgroup -maxdepth 9 -path '*/sbx/slot*/cgroup.procs' -exec cat {} + 2>/dev/null | head -5)
	if [ -n "$left" ]; then echo "processes left in a slot's cgroups: $left" >&2; return 1; fi
	if on_docker; then
		left=$(docker ps -aq --filter label=sbx.owner)
		if [ -n "$left" ]; then echo "containers left behind: $left" >&2; return 1; fi
		left=$(find /sys/fs/cgroup -path '*/sbx-docker/r*' -maxdepth 8 -type d 2>/dev/null | head -5)
		if [ -n "$left" ]; then echo "cgroups left behind: $left" >&2; return 1; fi
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
has_cgroup_limits() { [ "$(id -u)" = 0 ] || [ -n "${SBX_TEST_DELEGATED:-}" ]; }
skip_unless_cgroups() {
	has_cgroup_limits || skip "needs cgroup limits: root, or a cgroup v2 group delegated to this user (t/guest/suite)"
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
GET http://127.0.0.1:$LISTEN_PORT/ -> HTTP/1.1 405 Method Not Allowed
EOF
}
