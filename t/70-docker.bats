#!/usr/bin/env bats
# The docker backend's own behaviour, against the real engine t/docker/engine
# runs: the hardened container each stage gets (read back from the engine),
# no leftovers after timeouts and after sbx-run is SIGKILLed, an output flood
# that never reaches the daemon's disk, missing images, the compile cache
# keyed by the image's ID, --pull, and every
# "the engine is not there" case as an internal_error carrying the fix.
# (The shared suites, t/20, t/25 and t/30, also run against this backend:
# t/run --docker.)  Every test here is the docker backend's.
export SBX_TEST_BACKEND=docker
load helpers

local_setup() {
	skip_unless_docker
}

teardown() {
	if [ -f "$DOCKER_DIR/host" ]; then assert_no_leftovers; fi
}

# The engine's record of the container of a running job (by its id label).
container_of() {
	local id=$1 c
	for i in $(seq 100); do
		c=$(docker ps -q --filter "label=sbx=$id")
		[ -n "$c" ] && { echo "$c"; return 0; }
		sleep 0.1
	done
	return 1
}

@test "each stage's container is made as the policy says, read back from the engine" {
	(echo '{"id":"hard-1","language":"bash","code":"sleep 5","memory":"96m","cpus":0.5,"pids":20}' | sbx > out.jsonl) &
	c=$(container_of hard-1)
	docker inspect "$c" > inspect.json
	wait
	jq -e '.[0] | .HostConfig as $h | .Config as $c
		| $h.NetworkMode == "none" and $c.NetworkDisabled == true
		and $h.Memory == 100663296 and $h.MemorySwap == 100663296
		and $h.NanoCpus == 500000000 and $h.PidsLimit == 20
		and $h.ReadonlyRootfs == true
		and ($h.Tmpfs["/tmp"] | test("noexec") and test("nosuid") and test("size="))
		and ($h.Tmpfs["/home/sandbox"] | test("noexec"))
		and $h.CapDrop == ["ALL"]
		and ($h.SecurityOpt | index("no-new-privileges") != null)
		and ($h.SecurityOpt | map(select(startswith("seccomp="))) | length == 1)
		and $h.LogConfig.Type == "none"
		and $h.Init == true
		and $h.CgroupnsMode == "private"
		and ($c.User | test("^[0-9]+:[0-9]+$")) and ($c.User | startswith("0:") | not)
		and $c.Labels.sbx == "hard-1" and ($c.Labels["sbx.owner"] | test("^[0-9]+\\.[0-9]+$"))
		and ($h.Mounts | map(select(.Target == "/scratch")) | length == 1)' inspect.json
	# the program ran as the configured host uid, not root
	jq -e '.[0].Config.User == "'"$SBX_PROG_UID:$SBX_PROG_UID"'"' inspect.json
	jq -e '.status == "timeout" or .status == "success"' out.jsonl
}

@test "timeout: the container is killed and removed before the result is written" {
	echo '{"id":"to-1","language":"python","code":"while True: pass","timeout":1}' | sbx |
		while IFS= read -r line; do
			printf '%s\n' "$line" > result.json
			docker ps -aq --filter label=sbx=to-1 > at-result.txt
		done
	jq -e '.status == "timeout" and .signal == "SIGKILL" and .duration_ms >= 1000 and .duration_ms < 3000' result.json
	[ ! -s at-result.txt ]
}

@test "sbx-run killed with SIGKILL: the next sbx-run removes its containers and scratch directories" {
	mkfifo in
	"$BIN/sbx-run" < in > out.jsonl 2> err &
	pid=$!
	exec 7> in
	echo '{"id":"orphan-1","language":"bash","code":"sleep 60"}' | "$BIN/sbx-validate" >&7
	container_of orphan-1 > /dev/null
	kill -KILL "$pid"
	wait "$pid" || true
	exec 7>&-
	# left behind: the container (still running) and its scratch directory
	[ -n "$(docker ps -q --filter label=sbx=orphan-1)" ]
	[ -n "$(ls "$DOCKER_DIR/var/docker")" ]
	# the next start of sbx-run sweeps them
	run --separate-stderr bash -c "echo '{\"language\":\"bash\",\"code\":\"echo next\"}' | '$BIN/sbx-validate' | '$BIN/sbx-run'"
	[ "$status" -eq 0 ]
	jqe 0 '.status == "success" and .stdout == "next\n"'
	[ -z "$(docker ps -aq --filter label=sbx=orphan-1)" ]
	[ -z "$(ls "$DOCKER_DIR/var/docker")" ]
	! sandbox_pgrep "$SBX_PROG_UID" '^sleep' || false
}

@test "an output flood of 3 s reaches neither the daemon's disk nor the supervisor's memory" {
	root=$(docker info --format '{{.DockerRootDir}}')
	[ -d "$root" ] || skip "the engine's data root $root is not on this host"
	before=$(du -sk "$root" | cut -f1)
	run_req '{"language":"bash","code":"timeout 3 yes flood-flood-flood-flood-flood; echo done","timeout":10}'
	after=$(du -sk "$root" | cut -f1)
	jqe 0 '.status == "success" and .stdout_truncated and .stdout_bytes > 10000000 and (.stdout | length) < 120000'
	echo "data root grew by $((after - before)) KiB for $(jqn 0 .stdout_bytes) bytes of output" >&3
	[ $((after - before)) -lt 4096 ]
}

@test "a missing image is an internal_error that says how to pull it" {
	conf=$(conf_with 's|^image *= *".*"|image = "sbx-test:no-such-tag"|')
	run_req '{"language":"python","code":"print(1)"}' -c "$conf"
	[ "$status" -eq 1 ]
	jqe 0 '.status == "internal_error" and (.error | contains("sbx-test:no-such-tag") and contains("docker pull sbx-test:no-such-tag"))'
	run --separate-stderr "$BIN/sbx-run" -c "$conf" --check
	printf '%s\n' "$output" | jq -e '.languages[] | select(.name == "python") | .available == false and (.error | contains("docker pull"))'
}

@test "the compile cache: a hit on the same image, compiled again when the image's name means another image" {
	docker tag sbx-test:host sbx-test:cache
	conf=$(conf_with 's|^image *= *".*"|image = "sbx-test:cache"|')
	req='{"language":"c","code":"#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }"}'
	run_req "$req" -c "$conf"
	jqe 0 '.status == "success" and .stdout == "hi\n" and .compile.cached == false'
	run_req "$req" -c "$conf"
	jqe 0 '.status == "success" and .stdout == "hi\n" and .compile.cached == true and .compile.duration_ms < 50'
	# The same name, another image (as after a pull): its compiler may differ.
	c=$(docker create sbx-test:host true)
	docker commit "$c" sbx-test:cache > /dev/null
	docker rm "$c" > /dev/null
	run_req "$req" -c "$conf"
	jqe 0 '.status == "success" and .stdout == "hi\n" and .compile.cached == false'
	run_req "$req" -c "$conf"
	jqe 0 '.compile.cached == true'
	docker rmi sbx-test:cache > /dev/null
	# A name the engine does not know is not cached, and says why as before.
	run_req "$req" -c "$conf"
	jqe 0 '.status == "internal_error" and (.error | contains("docker pull sbx-test:cache"))'
}

@test "--pull: progress and failures on stderr, nothing on stdout, a failing exit status" {
	conf=$(conf_with 's|^image *= *".*"|image = "sbx-test-unreachable.invalid/none:1"|')
	run --separate-stderr timeout 120 "$BIN/sbx-run" -c "$conf" --pull
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[[ $stderr == *"sbx-run: pull sbx-test-unreachable.invalid/none:1"* ]]
	# one attempt per distinct image, each failure said
	[ "$(grep -c '^sbx-run: pull sbx-test-unreachable.invalid/none:1 (' <<< "$stderr")" -eq 1 ]
}

@test "no engine: each cause is an internal_error naming the fix, and --check says it too" {
	req='{"language":"bash","code":"echo hi"}'
	DOCKER_HOST=unix://$BATS_TEST_TMPDIR/none.sock run_req "$req"
	jqe 0 '.status == "internal_error" and (.error | contains("not running") and contains("no socket") and contains("dockerd"))'
	# a socket nobody listens on
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$BATS_TEST_TMPDIR/dead.sock"
	DOCKER_HOST=unix://$BATS_TEST_TMPDIR/dead.sock run_req "$req"
	jqe 0 '.status == "internal_error" and (.error | contains("refuses connections") and contains("start it"))'
	DOCKER_HOST=tcp://127.0.0.1:1 run_req "$req"
	jqe 0 '.status == "internal_error" and (.error | contains("DOCKER_HOST=tcp://127.0.0.1:1 is unreachable"))'
	DOCKER_HOST=ftp://x run_req "$req"
	jqe 0 '.status == "internal_error" and (.error | contains("not a unix:// or tcp:// address"))'
	DOCKER_HOST=unix://$BATS_TEST_TMPDIR/none.sock run --separate-stderr "$BIN/sbx-run" --check
	[ "$status" -eq 4 ]
	jqe 0 '.usable == false and (.fixes[0] | contains("not running"))'
}

@test "permission denied on the socket: the error says to join the docker group or run as root" {
	skip_unless_root
	sock=${DOCKER_HOST#unix://}
	[ "$sock" != "$DOCKER_HOST" ] || skip "the engine is not on a unix socket"
	chmod o-rw "$sock"
	run --separate-stderr setpriv --reuid=nobody --regid=nogroup --clear-groups env DOCKER_HOST="$DOCKER_HOST" \
		SBX_CONF="$SBX_CONF" SBX_BACKEND=docker "$BIN/sbx-run" --check
	[ "$status" -eq 4 ]
	jqe 0 '.usable == false and (.error | contains("permission denied") and contains("docker group"))'
}

@test "the engine stopping mid-run: an internal_error with the fix, not a hang; the next start cleans up" {
	[ -f "$DOCKER_DIR/started" ] || skip "the engine is not the test suite's own (it is not stopped by tests)"
	mkfifo in
	timeout 60 "$BIN/sbx-run" < in > out.jsonl 2> err &
	pid=$!
	exec 7> in
	echo '{"id":"mid-1","language":"bash","code":"sleep 30"}' | "$BIN/sbx-validate" >&7
	container_of mid-1 > /dev/null
	"$ROOT/t/docker/engine" stop
	exec 7>&-
	wait "$pid" || true
	jq -e '.status == "internal_error" and (.error | test("did it stop|not running|refuses"))' out.jsonl
	"$ROOT/t/docker/engine" start
	DOCKER_HOST=$(cat "$DOCKER_DIR/host")
	run_req '{"language":"bash","code":"echo back"}'
	jqe 0 '.status == "success" and .stdout == "back\n"'
	[ -z "$(docker ps -aq --filter label=sbx=mid-1)" ]
}

@test "an install's container reaches its registries only, through the proxy: not the host, not another host or port" {
	command -v npm > /dev/null || skip "npm is not installed"
	host_listener
	conf=$(conf_with 's/^install_specs *=.*/install_specs = "any"/')
	# a session's workspace, as sbx-mcp makes one
	sid=$(printf '%032x' "$$")
	ws=$BATS_TEST_TMPDIR/var/sessions/$sid
	mkdir -p "$ws/.deps"
	egress_package "$ws/mypkg"
	chown -R "$SBX_PROG_UID:$SBX_PROG_UID" "$ws"
	run_req "$(jq -nc --arg s "$sid" '{id: "inst-1", language: "javascript", session: $s, install: ["./mypkg"]}')" -c "$conf"
	kill "$LISTENER"
	[ ! -s hits ] || { echo "the host's listener was reached:"; cat hits; false; }
	diff "$ws/probe.out" <(egress_expected)
	# the result accounts for each request the proxy refused, as natively
	diff <(jq -r '.egress[] | select(.allowed | not) | "\(.host) \(.port) \(.why)"' <<< "${lines[0]}" | sort) <(egress_refused | sort)
	# the proxy and its socket are gone with the stage
	! our_pgrep "" '(^|/)sbx-egress( |$)' || false
	[ -z "$(find "$BATS_TEST_TMPDIR/var" -name sock -type s)" ]
}

@test "an install's container gets a registry package through the proxy" {
	command -v npm > /dev/null || skip "npm is not installed"
	timeout 10 npm view is-number@7.0.0 version > /dev/null 2>&1 || skip "the npm registry is not reachable from here"
	sid=$(printf '%032x' "$(( $$ + 1 ))")
	ws=$BATS_TEST_TMPDIR/var/sessions/$sid
	mkdir -p "$ws/.deps"
	chown -R "$SBX_PROG_UID:$SBX_PROG_UID" "$ws"
	conf=$(conf_with 's/^$//')
	run_req "$(jq -nc --arg s "$sid" '{id: "inst-2", language: "javascript", session: $s, install: ["is-number@7.0.0"]}')" -c "$conf"
	jqe 0 '.status == "success"'
	[ -f "$ws/.deps/node_modules/is-number/package.json" ]
}

@test "run_cell's kernels need the native backend: a cell is an internal_error saying so, and --check reports it" {
	sid=$(printf '%032x' 9)
	state=$(sed -n 's/^state_dir *= *"\(.*\)"/\1/p' "$SBX_CONF")
	mkdir -p "$state/sessions/$sid"
	run --separate-stderr sbx <<< "{\"language\":\"python\",\"session\":\"$sid\",\"cell\":true,\"code\":\"1\"}"
	rm -rf "${state:?}/sessions/$sid"
	jqe 0 '.status == "internal_error" and (.error | test("docker backend runs no kernels \\(run_cell needs the native backend\\)"))'
	run --separate-stderr "$BIN/sbx-run" --check
	jqe 0 '.kernels.supported == false and (.kernels.why | test("native backend"))'
}
