#!/usr/bin/env bats
# The container image (issue 31), for users whose machine cannot build
# sbx (Docker Desktop on macOS and Windows): `make image` over the package
# and a fresh Debian root, run on the project's own dockerd
# (t/docker/engine) exactly as a desktop MCP client runs it, by the
# official SDK client (t/mcp-client/docker.mjs): docker run -i --rm with
# the fewest privileges that work.  With fewer, sbx must say what it
# cannot enforce; the limits are checked from the host's side too.
load helpers

# The least that works (PRIV), with the seccomp profile make image writes.
PROFILE=$ROOT/build/image/sbx-seccomp.json
source "$ROOT/t/docker/image-args"
PRIV=("${IMAGE_ARGS[@]}")

setup_file() {
	if [ "$(id -u)" != 0 ]; then
		echo "building the image and starting dockerd need root" > "$BATS_FILE_TMPDIR/skip"; return
	fi
	# t/run --docker's engine, if it runs; else one of this file's own
	local st=$ROOT/build/docker/started
	[ -f "$st" ] && kill -0 "$(cat "$st")" 2> /dev/null || touch "$BATS_FILE_TMPDIR/own-engine"
	"$ROOT/t/docker/engine" start > "$BATS_FILE_TMPDIR/engine.log" 2>&1
	if [ -f "$ROOT/build/docker/unavailable" ]; then
		echo "no Docker engine: $(cat "$ROOT/build/docker/unavailable")" > "$BATS_FILE_TMPDIR/skip"; return
	fi
	export DOCKER_HOST=$(cat "$ROOT/build/docker/host")
	IMAGE=sbx:$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
	if ! (cd "$ROOT" && make -s image image-slim) > "$BATS_FILE_TMPDIR/image.log" 2>&1; then
		if grep -q 'mmdebstrap' "$BATS_FILE_TMPDIR/image.log" && ! curl -sfI -m 10 "${SBX_DEBIAN_MIRROR:-http://deb.debian.org/debian}/dists/bookworm/Release" > /dev/null; then
			echo "no Debian mirror to build the image from" > "$BATS_FILE_TMPDIR/skip"
		else
			echo "make image failed: $(tail -5 "$BATS_FILE_TMPDIR/image.log")" > "$BATS_FILE_TMPDIR/fail"
		fi
	fi
}

teardown_file() {
	[ ! -f "$BATS_FILE_TMPDIR/own-engine" ] || "$ROOT/t/docker/engine" stop > /dev/null 2>&1
}

local_setup() {
	[ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	if [ -f "$BATS_FILE_TMPDIR/fail" ]; then cat "$BATS_FILE_TMPDIR/fail" >&2; return 1; fi
	export DOCKER_HOST=$(cat "$ROOT/build/docker/host")
	IMAGE=sbx:$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
}

teardown() {
	[ -f "$BATS_FILE_TMPDIR/skip" ] && return 0
	local left
	left=$(docker ps -aq --filter ancestor="$IMAGE"; docker ps -aq --filter ancestor="$IMAGE-slim")
	[ -z "$left" ] || { docker rm -f $left > /dev/null; echo "containers left behind: $left" >&2; return 1; }
}

# sdk_client IMAGE: t/mcp-client/docker.mjs's checks against IMAGE, run
# as a desktop client runs it; its failures shown (LANGS: as there).
sdk_client() {
	[ -d "$ROOT/t/mcp-client/node_modules/@modelcontextprotocol/sdk" ] || skip "the MCP SDK is not installed (make mcp-client)"
	run --separate-stderr node "$ROOT/t/mcp-client/docker.mjs" docker run -i --rm "${PRIV[@]}" --network none "$1"
	printf '%s\n' "$output" | grep -v '^ok ' >&3 || true
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" =~ ^1\.\.[2-4][0-9]$ ]]
	! printf '%s\n' "$output" | grep -q '^not ok' || false
}

@test "the official SDK client over docker run -i: every language, the limits, a session and a kernel, the history" {
	sdk_client "$IMAGE"
}

@test "the slim image: Python, C, C++, JavaScript and Bash in at most 400 MB, the same client's checks" {
	size=$(docker image inspect -f '{{.Size}}' "$IMAGE-slim")
	echo "sbx:slim: $((size / 1000000)) MB uncompressed, sbx:latest: $(($(docker image inspect -f '{{.Size}}' "$IMAGE") / 1000000)) MB"
	[ "$size" -le 400000000 ]
	LANGS=python,c,cpp,javascript,bash sdk_client "$IMAGE-slim"
}

@test "the limits are the container's cgroups, seen from the host: a run's memory limit sits below the container's group" {
	echo '{"id":"slow","language":"python","code":"import time; time.sleep(4); print(1)","memory":"96m"}' > req.jsonl
	docker run -i --rm --cidfile cid "${PRIV[@]}" --network none "$IMAGE" sh -c 'sbx-validate | sbx-run' < req.jsonl > out.jsonl &
	for _ in $(seq 100); do [ -s cid ] && docker inspect -f '{{.State.Pid}}' "$(cat cid)" > pid 2> /dev/null && [ "$(cat pid)" != 0 ] && break; sleep 0.1; done
	cid=$(cat cid)
	# the container's memory cgroup as the host names it (v1: the memory
	# hierarchy's line; v2: the one line), and the runs' groups below it
	pid=$(cat pid)
	cg=$(sed -n 's/^[0-9]*:memory:\(.*\)/memory\1/p; s/^0::\(.*\)/\1/p' "/proc/$pid/cgroup" | head -1)
	found=
	for _ in $(seq 100); do
		found=$(grep -lx 100663296 /sys/fs/cgroup/$cg/sbx/*/memory.limit_in_bytes /sys/fs/cgroup/$cg/sbx/*/memory.max 2> /dev/null | head -1)
		[ -n "$found" ] && break
		sleep 0.05
	done
	echo "container cgroup: $cg; a run's limit: $found"
	wait
	[ -n "$found" ]
	[ "$(jq -r .status out.jsonl)" = success ]
	[ "$(jq -c '.limits_enforced | index("memory") != null and index("pids") != null and index("cpus") != null' out.jsonl)" = true ]
}

@test "the image's seccomp profile is Docker's default and pivot_root, nothing else; under Docker's own, sbx says it cannot work" {
	# every rule of the engine's default is there unchanged, and one more
	jq -e '.defaultAction == "SCMP_ACT_ERRNO" and (.syscalls[-1] | .names == ["pivot_root"] and .action == "SCMP_ACT_ALLOW"
		and .includes.caps == ["CAP_SYS_ADMIN"])' "$PROFILE"
	[ "$(jq '[.syscalls[].names[]] | map(select(. == "pivot_root")) | length' "$PROFILE")" = 1 ]
	# Docker's own profile (the engine's builtin), with the same
	# capabilities: no pivot_root, so no sandbox, and sbx says so
	builtin=()
	for a in "${PRIV[@]}"; do [ "$a" = "seccomp=$PROFILE" ] && unset 'builtin[-1]' || builtin+=("$a"); done
	run --separate-stderr docker run --rm -i "${builtin[@]}" --network none "$IMAGE" sbx-run --check --json
	[ "$(jq -r .usable <<< "$output")" = false ]
	[[ $(jq -r '.probe.error' <<< "$output") == *"pivot_root: Operation not permitted"* ]]
	# and under the image's profile, every language is there and nothing lacks
	run --separate-stderr docker run --rm -i "${PRIV[@]}" --network none "$IMAGE" sbx-run --check --json
	jq -e '.usable == true and .fixes == [] and ([.kernel_features[] | select(.ok | not)] == [])' <<< "$output"
}

@test "with fewer privileges sbx says what it cannot do, and never runs with less unsaid" {
	# Docker's own seccomp profile and its default capabilities: no sandbox
	run --separate-stderr docker run --rm -i --network none "$IMAGE" sbx-run --check --json
	[ "$(jq -r .usable <<< "$output")" = false ]
	[[ $(jq -r '.fixes | join(" ")' <<< "$output") != "" ]] || [[ $(jq -c . <<< "$output") == *clone3* ]]
	# any one of the capabilities dropped: the sandbox cannot be made, and the result says so
	for cap in SYS_ADMIN SETUID SETGID CHOWN DAC_OVERRIDE SYS_CHROOT; do
		fewer=()
		for a in "${PRIV[@]}"; do [ "$a" = "$cap" ] && unset 'fewer[-1]' || fewer+=("$a"); done
		run --separate-stderr docker run --rm -i "${fewer[@]}" --network none "$IMAGE" \
			sh -c 'echo "{\"language\":\"bash\",\"code\":\"echo 6\"}" | sbx-validate | sbx-run'
		st=$(jq -r .status <<< "$output")
		[ "$st" = internal_error ] || [ "$(jq -c '.limits_enforced | index("memory") == null' <<< "$output")" = true ] ||
			{ echo "without $cap: $st, $output" >&2; return 1; }
	done
	# no CAP_SYS_ADMIN at all (Docker's default set): Docker's profile
	# then hides clone3, so no sandbox (where one could be made, the
	# cgroups would stay read-only); either way sbx says what to do in a
	# Docker container (lib/sandbox/host.c), and every result what it lacks
	run --separate-stderr docker run --rm -i --security-opt "seccomp=$PROFILE" --network none "$IMAGE" \
		sh -c 'echo "{\"language\":\"bash\",\"code\":\"echo 6\"}" | sbx-validate | sbx-run'
	[[ $stderr == *"; to fix: "*"the options doc/install.md gives"* || $stderr == *"cgroups unusable"*"; to fix: "*"docker container"* ]]
	[[ $stderr != *"run as root"* ]]
	[ "$(jq -r .status <<< "$output")" != success ] || \
		[ "$(jq -c '.limits_enforced | index("memory") == null and index("cpus") == null' <<< "$output")" = true ]
}

@test "the Kubernetes pod of the image: the same privileges, stated in its securityContext" {
	python3 - "$ROOT/share/container/sbx-mcp-pod.yaml" <<-'PY'
	import sys, yaml
	docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
	pod = next(d for d in docs if d["kind"] == "Pod")
	c = pod["spec"]["containers"][0]
	sc = c["securityContext"]
	assert sc.get("privileged", False) is False, "not privileged"
	assert sc["capabilities"]["drop"] == ["ALL"], sc
	assert sorted(sc["capabilities"]["add"]) == ["CHOWN", "DAC_OVERRIDE", "SETGID", "SETUID", "SYS_ADMIN", "SYS_CHROOT"], sc
	assert sc["seccompProfile"] == {"type": "Localhost", "localhostProfile": "sbx-seccomp.json"}, sc
	assert c["image"].startswith("sbx:"), c["image"]
	assert c["args"][:3] == ["sbx-mcp", "--listen", "0.0.0.0:8000"], c["args"]
	assert any(v.get("secret") for v in pod["spec"]["volumes"]), "tokens from a Secret"
	PY
}
