#!/usr/bin/env bats
# The doctor (lib/sandbox/host.c): where the host withholds what sandboxes
# need, sbx-run --check and every result say what to do on that kind of
# host, and never tell root to run as root.  The hosts are made here, in
# namespaces of the test's own: a user namespace whose
# user.max_user_namespaces is 0 refuses sbx's own, as a host that switched
# them off does; read-only cgroup mounts are remounted so in a mount
# namespace; and the sysctls this kernel lacks (Ubuntu's AppArmor switch,
# Debian's old unprivileged_userns_clone, a WSL2 kernel's release) are
# files of a tmpfs over /proc/sys/kernel there.  The machine's own
# settings are never touched.
load helpers

local_setup() {
	[ "$(id -u)" = 0 ] || skip "making a host's settings needs root (namespaces and mounts of the test's own)"
	skip_on_docker "the native backend's doctor"
	K=$BATS_TEST_TMPDIR/kernel
	mkdir -p "$K"
	cp /proc/sys/kernel/osrelease "$K/"
	chmod 0755 "$BATS_TEST_TMPDIR"
}
teardown() { assert_no_leftovers; }

# host [NAME=VALUE...] -- [--ro-cgroups] [--nobody] CMD...: CMD on a
# host made as the header says: each NAME=VALUE a file of
# /proc/sys/kernel; --ro-cgroups: every cgroup mount read-only; --nobody:
# as nobody, with user namespaces switched off.  Root's runs keep their
# roots and slots in a /run/sbx of their own.
host() {
	while [ "$1" != -- ]; do echo "${1#*=}" > "$K/${1%%=*}"; shift; done
	shift
	local ro=false nobody=false
	[ "$1" != --ro-cgroups ] || { ro=true; shift; }
	[ "$1" != --nobody ] || { nobody=true; shift; }
	# shellcheck disable=SC2016 # for the inner shell
	unshare -m --propagation private bash -c '
		K=$1 ro=$2 nobody=$3; shift 3
		mount -t tmpfs -o mode=0755 sbx-test /run/sbx 2> /dev/null || { mkdir -p /run/sbx && mount -t tmpfs sbx-test /run/sbx; } || exit 97
		if [ "$(ls "$K")" != osrelease ] || ! cmp -s "$K/osrelease" /proc/sys/kernel/osrelease; then
			mount -t tmpfs -o mode=0755 sbx-test /proc/sys/kernel && cp "$K"/* /proc/sys/kernel/ || exit 97
		fi
		if $ro; then
			findmnt -rn -t cgroup,cgroup2 -o TARGET | while read -r m; do mount -o remount,bind,ro "$m" || exit 97; done || exit 97
		fi
		$nobody || exec "$@"
		# nobody in a user namespace that may have no user namespaces
		# below it: its root (the host'"'"'s, mapped) sets that, then becomes
		# nobody; the map is written from outside once it is in there
		go=$(mktemp -u) && mkfifo "$go" || exit 97
		# (stdin given explicitly: a background job would get /dev/null)
		unshare -U bash -c '\''read -r _ < "$1"; exec bash -c "echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --reuid 65534 --regid 65534 --clear-groups \"\$@\"" bash "${@:2}"'\'' bash "$go" "$@" 0<&0 &
		child=$!
		until [ "$(readlink /proc/$child/ns/user)" != "$(readlink /proc/self/ns/user)" ]; do
			kill -0 $child 2> /dev/null || exit 97
			sleep 0.01
		done
		echo "0 0 65536" > /proc/$child/uid_map && echo "0 0 65536" > /proc/$child/gid_map && echo > "$go" || exit 97
		rm -f "$go"
		wait $child' bash "$K" "$ro" "$nobody" "$@"
}

# check [HOST-ARGS...]: sbx-run --check on that host, its report in ./check
check() {
	run --separate-stderr host "$@" env HOME=/tmp "$BIN/sbx-run" --check
	[ "$status" != 97 ] || { echo "could not make the host: $stderr" >&2; return 1; }
	echo "$output" > check
	jq -e . check > /dev/null
}

# bats test_tags=kernel
@test "user namespaces switched off (user.max_user_namespaces = 0): the sysctl to set, in --check and in every result" {
	check -- --nobody
	[ "$status" -eq 4 ]
	jq -e '.usable == false and (.user_namespaces.error | test("not available to this user \\(No space left on device\\); to fix: user namespaces are switched off: sysctl -w user.max_user_namespaces=15000"))' check
	jq -e '.host.user_namespaces.max_user_namespaces_zero == true' check
	run --separate-stderr host -- --nobody env HOME=/tmp sh -c '"$0/sbx-validate" | "$0/sbx-run"' "$BIN" <<< '{"language":"bash","code":"echo hi"}'
	[ -n "$output" ] || { echo "no result; stderr: $stderr" >&2; false; }
	jqe 0 '.status == "internal_error" and (.error | test("to fix: user namespaces are switched off: sysctl -w user.max_user_namespaces"))'
}

@test "Ubuntu's AppArmor restriction (kernel.apparmor_restrict_unprivileged_userns = 1): the doctor names sbx's profile" {
	check apparmor_restrict_unprivileged_userns=1 -- --nobody
	jq -e '.host.user_namespaces.apparmor_restricted == true' check
	jq -e '.user_namespaces.error | test("to fix: Ubuntu.s AppArmor refuses user namespaces to programs without a profile .*/etc/apparmor.d/sbx.*apparmor_parser -r")' check
}

@test "Debian's and Ubuntu's switch (kernel.unprivileged_userns_clone = 0): the sysctl to set" {
	check unprivileged_userns_clone=0 -- --nobody
	jq -e '.host.user_namespaces.unprivileged_userns_clone_off == true' check
	jq -e '.user_namespaces.error | test("to fix: user namespaces are switched off for ordinary users: sysctl -w kernel.unprivileged_userns_clone=1")' check
}

# bats test_tags=kernel
@test "root with a read-only cgroup tree: what to do on this kind of host, never \"run as root\"" {
	check -- --ro-cgroups
	jq -e '.host.cgroup_read_only == true and .cgroup.ok == false' check
	if [ "$(jq -r .host.container check)" = docker ]; then
		want='cgroups unusable \(.*Read-only file system\).*; to fix: .*docker container'
	else
		want='cgroups unusable \(.*Read-only file system\).*; to fix: /sys/fs/cgroup is mounted read-only: mount -o remount,rw /sys/fs/cgroup'
	fi
	# (v1: "cannot create .../sbx: Read-only file system"; v2, as root:
	# "cannot enable controllers in /sys/fs/cgroup: Read-only file system")
	jq -e --arg w "$want" '.fixes | any(test($w))' check || { jq .fixes check >&2; false; }
	! grep -i "run as root\|run it as root" check || false
	# the warning every run starts with says the same
	run --separate-stderr host -- --ro-cgroups sh -c '"$0/sbx-validate" | "$0/sbx-run"' "$BIN" <<< '{"language":"bash","code":"echo hi"}'
	[[ $stderr == *"cgroups unusable"*"; to fix: "* ]]
	[[ $stderr != *"run as root"* ]]
}

@test "a WSL2 kernel, root without cgroups: systemd and cgroup v2 in wsl.conf and .wslconfig" {
	check osrelease=5.15.167.4-microsoft-standard-WSL2 -- --ro-cgroups
	jq -e '.host.wsl2 == true' check
	jq -e '.fixes | any(test("to fix: WSL2: turn on systemd and cgroup v2, in /etc/wsl.conf \\(\\[boot\\] systemd=true\\) and in %UserProfile%\\\\.wslconfig"))' check
}

# bats test_tags=kernel
@test "an ordinary user without a delegated cgroup: how to get one on this host" {
	run --separate-stderr setpriv --reuid 65534 --regid 65534 --clear-groups env HOME=/tmp "$BIN/sbx-run" --check
	echo "$output" > check
	jq -e '.cgroup.ok == false or .cgroup.ok == true' check
	[ "$(jq -r .cgroup.ok check)" = false ] || skip "nobody has a delegated cgroup here"
	if [ "$(jq -r .host.cgroup_v2 check)" = true ]; then
		jq -e '.fixes | any(test("to fix: (run it in a cgroup systemd delegates to you|no systemd user manager runs for this user).*systemd-run --user --scope -p Delegate=yes"))' check
	else
		jq -e '.fixes | any(test("to fix: cgroup v1 delegates nothing to an ordinary user: run sbx as root"))' check
	fi
}
