#!/usr/bin/env bats
# The Debian package (issue 31): `make deb` builds it, lintian finds no
# error in it, and it is installed with apt into a fresh Debian 12 root
# (t/pkg/root: mmdebstrap from Debian's archive), where the README's first
# pipeline runs as root and as an ordinary user, and the root is booted
# under a real systemd (systemd-nspawn --boot) to start sbx-mcp.socket,
# get sbx-mcp.service started by a connection as the user sbx, call
# run_code over HTTP with the token the package made, and run the
# retention service.  Everything is checked from the host's side.
load helpers

PKG=$ROOT/build/pkg
R=$PKG/root

setup_file() {
	if [ "$(id -u)" != 0 ]; then
		echo "building and booting a root needs root" > "$BATS_FILE_TMPDIR/skip"
	elif [ -n "${SBX_GUEST:-}" ]; then
		# the guest has no network: it boots the root the host made
		[ -f "$PKG/ready" ] || echo "no package root: the host's suite makes it (t/pkg/root)" > "$BATS_FILE_TMPDIR/skip"
	elif ! (cd "$ROOT" && make -s deb) > "$BATS_FILE_TMPDIR/deb.log" 2>&1; then
		echo "make deb failed: $(tail -3 "$BATS_FILE_TMPDIR/deb.log")" > "$BATS_FILE_TMPDIR/fail"
	else
		rm -f "$PKG/unavailable"
		"$ROOT/t/pkg/root" "$(ls "$ROOT"/build/deb/sbx_*.deb)" > "$BATS_FILE_TMPDIR/root.log" 2>&1 ||
			echo "t/pkg/root failed: $(tail -5 "$BATS_FILE_TMPDIR/root.log")" > "$BATS_FILE_TMPDIR/fail"
		[ ! -f "$PKG/unavailable" ] || cp "$PKG/unavailable" "$BATS_FILE_TMPDIR/skip"
	fi
}

local_setup() {
	[ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
	if [ -f "$BATS_FILE_TMPDIR/fail" ]; then cat "$BATS_FILE_TMPDIR/fail" >&2; return 1; fi
	DEB=$(ls "$ROOT"/build/deb/sbx_*_*.deb 2> /dev/null | grep -v dbgsym | head -1)
}

# Nothing of the root may outlive a test: no process whose root it is.
teardown() {
	local left
	left=$(for p in /proc/[0-9]*; do [ "$(readlink "$p/root" 2> /dev/null)" = "$R" ] && echo "${p#/proc/}"; done)
	[ -z "$left" ] || { echo "processes left in the root: $left" >&2; return 1; }
}

# nspawn ARGS: systemd-nspawn without a systemd on the host (--keep-unit:
# its own cgroup is the container's).  At the top of a cgroup v2 tree (the
# guest's init) it is first moved into a group of its own, which it splits
# into its supervisor and the payload (it cannot split the root), and which
# goes with it.
nspawn() {
	if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] || [ "$(cat /proc/self/cgroup)" != "0::/" ]; then
		systemd-nspawn -q --register=no --keep-unit "$@"
		return
	fi
	local cg=/sys/fs/cgroup/sbx-nspawn-$$-$RANDOM rc=0
	mkdir "$cg"
	sh -c 'echo $$ > "$0/cgroup.procs" && exec systemd-nspawn -q --register=no --keep-unit "$@"' "$cg" "$@" || rc=$?
	find "$cg" -depth -type d -exec rmdir {} + 2> /dev/null
	return $rc
}

# in_root CMD...: CMD in the root (its /proc, /dev, no boot), stdin passed.
in_root() { nspawn -D "$R" --pipe "$@"; }

# boot_root SCRIPT: boot the root under its systemd, run SCRIPT (sh) as a
# unit once the system is up, power off; its output in ./boot.out, the
# console in ./console.log.
boot_root() {
	printf '#!/bin/sh\nexec > /srv/boot.out 2>&1\n%s\n' "$1" > "$R/usr/local/sbin/sbx-boot-test"
	chmod 0755 "$R/usr/local/sbin/sbx-boot-test"
	cat > "$R/etc/systemd/system/sbx-boot-test.service" <<-'UNIT'
	[Unit]
	After=multi-user.target
	[Service]
	Type=oneshot
	ExecStart=/usr/local/sbin/sbx-boot-test
	ExecStopPost=/bin/systemctl poweroff --no-block
	UNIT
	mkdir -p "$R/etc/systemd/system/multi-user.target.wants"
	ln -sf ../sbx-boot-test.service "$R/etc/systemd/system/multi-user.target.wants/sbx-boot-test.service"
	rm -f "$R/srv/boot.out"
	local rc=0
	SECONDS=0
	nspawn -D "$R" --boot < /dev/null > console.log 2>&1 &
	local pid=$!
	while kill -0 $pid 2> /dev/null && [ $SECONDS -lt 600 ]; do sleep 0.2; done
	kill -TERM $pid 2> /dev/null && echo "the boot took over 600 s" >&2
	wait $pid || rc=$?
	rm -f "$R/etc/systemd/system/multi-user.target.wants/sbx-boot-test.service" "$R/etc/systemd/system/sbx-boot-test.service"
	cp "$R/srv/boot.out" boot.out 2> /dev/null || : > boot.out
	[ "$rc" = 0 ] || { echo "the boot ended with $rc" >&2; tail -20 console.log >&2; return 1; }
}

@test "make deb: lintian finds no error; tools, configuration (a conffile), man pages, units, completion where Debian puts them; libraries declared" {
	[ -z "${SBX_GUEST:-}" ] || skip "built on the host"
	! grep '^E:' "$ROOT/build/deb/lintian.log" || false
	run dpkg-deb -f "$DEB" Depends
	# (libseccomp is used at build time: the filters are compiled into the tools)
	for lib in libjq1 libsqlite3-0 libmicrohttpd12 adduser; do [[ $output == *"$lib "* || $output == *"$lib" ]]; done
	run dpkg-deb -f "$DEB" Recommends
	[[ $output == *python3* ]]
	run dpkg-deb -f "$DEB" Suggests
	[[ $output == *golang-go* && $output == *rustc* && $output == *default-jdk-headless* ]]
	dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles > conffiles
	grep -x /etc/sbx/sandbox.conf conffiles
	dpkg-deb -c "$DEB" | awk '{print $6}' > files
	for t in sbx-validate sbx-run sbx-cap sbx-log sbx-history sbx-mcp sbx-shard sbx-batch sbx-merge; do
		grep -x "./usr/bin/$t" files
		grep -x "./usr/share/man/man1/$t.1.gz" files
		grep -x "./usr/share/bash-completion/completions/$t" files
	done
	for u in sbx-mcp.socket sbx-mcp.service sbx-history-prune.service sbx-history-prune.timer; do
		grep -x "./lib/systemd/system/$u" files
	done
	grep -x ./usr/share/zsh/vendor-completions/_sbx files
	grep -x ./usr/libexec/sbx/sbx-egress files
	grep -x ./usr/libexec/sbx/sbx-thumb files
	grep -x ./var/lib/sbx/ files
	# the maintainer scripts stop the units on removal and restart them on upgrade
	dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./prerm ./postinst ./postrm > scripts
	grep -q 'deb-systemd-invoke stop.*sbx-mcp.socket' scripts
	grep -q 'deb-systemd-helper purge.*sbx-mcp' scripts
	# nothing of the build machine: no /usr/local, no bytecode
	! grep -E '^\./usr/local|__pycache__|\.pyc$' files || false
	dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./etc/sbx/sandbox.conf > sandbox.conf
	grep -E '^state_dir *= *"/var/lib/sbx"' sandbox.conf
	! grep -n /usr/local/share/sbx sandbox.conf || false
}

@test "the AppArmor profile for Ubuntu's user namespace restriction: AppArmor 4 (Debian 13's) parses it, it attaches to sbx-run and sbx-mcp" {
	[ -z "${SBX_GUEST:-}" ] || skip "the guest has no network for a Debian 13 root"
	# Debian 12's parser (AppArmor 3.0) has no "userns" rule: the profile
	# is parsed in a Debian 13 root with AppArmor 4.1, made once per
	# machine (as t/docker/engine keeps its images) and only read here
	a=${SBX_TEST_CACHE:-/var/cache/sbx-test}/apparmor-trixie
	mkdir -p "${a%/*}"
	(
		flock 9
		[ -x "$a/usr/sbin/apparmor_parser" ] && exit 0
		rm -rf "$a" "$a.new" && mkdir -p "$a.new" &&
			mmdebstrap --variant=essential --include=apparmor --dpkgopt='path-exclude=/usr/share/doc/*' \
				--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/man/*' \
				trixie "$a.new" "deb ${SBX_DEBIAN_MIRROR:-http://deb.debian.org/debian} trixie main" > "$a.log" 2>&1 &&
			mv "$a.new" "$a"
	) 9> "$a.lock" || { rm -rf "$a.new"; skip "no Debian 13 root with AppArmor 4 here: $(tail -n 1 "$a.log")"; }
	dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/share/sbx/apparmor/sbx > sbx.profile
	# the profile on the root's stdin: nothing of the test is written there
	run --separate-stderr chroot "$a" apparmor_parser --skip-kernel-load --skip-cache < sbx.profile
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; false; }
	run --separate-stderr chroot "$a" apparmor_parser --preprocess < sbx.profile
	[[ $output == *"profile sbx /usr/{,local/}bin/sbx-{run,mcp} flags=(unconfined) {"* ]]
	[[ $output == *"  userns,"* ]]
	# installed by the package only where the kernel restricts user
	# namespaces (Debian's kernels do not): Debian 12's parser would
	# refuse it at boot
	[ ! -e "$R/etc/apparmor.d/sbx" ]
	[ -e "$R/usr/share/sbx/apparmor/sbx" ]
}

@test "apt install ./sbx_*.deb in a fresh Debian 12 root: installed, a system user sbx, a token only root can read, bytecode every sandbox can" {
	run --separate-stderr in_root dpkg-query -W -f '${Status} ${Version}' sbx
	[ "$output" = "install ok installed $(dpkg-deb -f "$DEB" Version)" ]
	grep -q "apt-get install -y ./sbx_\|Setting up sbx " "$PKG/install.log"
	run --separate-stderr in_root getent passwd sbx
	[[ $output == sbx:*:/var/lib/sbx-mcp:* ]]
	[ "$(stat -c '%a %u %g' "$R/etc/sbx/mcp-tokens")" = "600 0 0" ]
	[ "$(grep -vc '^#' "$R/etc/sbx/mcp-tokens")" = 1 ]
	grep -Eqx '[0-9a-f]{64}' "$R/etc/sbx/mcp-tokens"
	# bytecode made by postinst for the installed Python, as sandboxes need it
	ls "$R"/usr/share/sbx/python/__pycache__/sitecustomize.*.pyc
	[ "$(stat -c %a "$R/usr/share/sbx/python/__pycache__")" = 755 ]
	[ "$(stat -c %a "$R"/usr/share/sbx/python/__pycache__/sitecustomize.*.pyc)" = 644 ]
	# nothing is listening, or enabled, before the administrator says so
	[ ! -e "$R/etc/systemd/system/sockets.target.wants/sbx-mcp.socket" ]
	[ ! -e "$R/etc/systemd/system/timers.target.wants/sbx-history-prune.timer" ]
}

# The README's example, with an id of this test's own (the root keeps its
# history from one test, and one suite, to the next).
readme_example() { jq -nc --arg id "r-$BATS_TEST_NUMBER-$$-$RANDOM" '{id: $id, language: "python", code: "print(sum([1,2,3]))"}' | tee req.jsonl; }

# bats test_tags=kernel
@test "the README's first pipeline in the root, as root: success, 6, logged in /var/lib/sbx" {
	run --separate-stderr in_root sh -c 'sbx-validate | sbx-run | sbx-cap | sbx-log' < <(readme_example)
	[ "$status" = 0 ]
	[ "$(jqn 0 .status)" = success ]
	[ "$(jqn 0 .stdout)" = 6 ]
	[ "$(jqn 0 .backend)" = native ]
	[ "$(jqn 0 '.history_id > 0')" = true ]
	[ -s "$R/var/lib/sbx/sandbox_history.db" ]
	run --separate-stderr in_root sbx-history --id "$(jq -r .id req.jsonl)"
	[ "${#lines[@]}" = 1 ]
	[ "$(jqn 0 .language)" = python ]
	# The root is a systemd-nspawn container: --check knows it, and where
	# its cgroups are unusable (a cgroup v1 host mounts them read-only),
	# says what to do there (lib/sandbox/host.c)
	run --separate-stderr in_root sbx-run --check
	jqe 0 '.host.container == "systemd-nspawn"'
	if [ "$(jqn 0 .cgroup.ok)" = false ]; then
		jqe 0 '.fixes | any(test("cgroups unusable .*; to fix: systemd-nspawn"))'
		! grep -q "run as root" <<< "$output" || false
	fi
}

# bats test_tags=kernel
@test "the same as an ordinary user: per-user state in ~/.local/state/sbx, nothing in /var/lib/sbx" {
	in_root sh -c 'getent passwd alice > /dev/null || useradd -m alice'
	before=$(stat -c %Y "$R/var/lib/sbx")
	run --separate-stderr in_root su alice -c 'cd && sbx-validate | sbx-run | sbx-cap | sbx-log' < <(readme_example)
	[ "$status" = 0 ]
	[ "$(jqn 0 .status)" = success ]
	[ "$(jqn 0 .stdout)" = 6 ]
	[ -s "$R/home/alice/.local/state/sbx/sandbox_history.db" ]
	[ "$(in_root stat -c %U /home/alice/.local/state/sbx/sandbox_history.db)" = alice ]
	[ "$(stat -c %Y "$R/var/lib/sbx")" = "$before" ]
	run --separate-stderr in_root su alice -c "sbx-history --id $(jq -r .id req.jsonl)"
	[ "${#lines[@]}" = 1 ]
	[ "$(jqn 0 .status)" = success ]
}

# bats test_tags=kernel
@test "under systemd: the socket starts sbx-mcp.service as sbx, run_code and a session's files over HTTP with the package's token; root reads its history; the retention timer's service prunes; the units verify" {
	boot_root '
tok=$(grep -v "^#" /etc/sbx/mcp-tokens)
systemctl enable --now sbx-mcp.socket
echo "socket: $(systemctl is-active sbx-mcp.socket) service-before: $(systemctl is-active sbx-mcp.service)"
h="-H Content-Type:application/json -H Accept:application/json,text/event-stream"
curl -sS -D /tmp/h -o /tmp/init $h -H "Authorization: Bearer $tok" http://127.0.0.1:8000/mcp \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"boot\",\"version\":\"1\"}}}"
sid=$(sed -n "s/^mcp-session-id: *//Ip" /tmp/h | tr -d "\r")
curl -sS $h -H "Authorization: Bearer $tok" -H "Mcp-Session-Id: $sid" http://127.0.0.1:8000/mcp \
  --data-binary "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
printf "run_code: %s\n" "$(curl -sS $h -H "Authorization: Bearer $tok" -H "Mcp-Session-Id: $sid" http://127.0.0.1:8000/mcp \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"run_code\",\"arguments\":{\"language\":\"python\",\"code\":\"import os, pty; m, s = pty.openpty(); print(sum([1,2,3]), os.getuid(), os.ttyname(s))\"}}}")"
printf "check_backend: %s\n" "$(curl -sS $h -H "Authorization: Bearer $tok" -H "Mcp-Session-Id: $sid" http://127.0.0.1:8000/mcp \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"check_backend\",\"arguments\":{}}}")"
init=$(curl -sS $h -H "Authorization: Bearer $tok" -H "Mcp-Session-Id: $sid" http://127.0.0.1:8000/mcp \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_initialize\",\"arguments\":{\"language\":\"python\"}}}")
ws=$(printf "%s" "$init" | grep -o "\"session_id\":\"[0-9a-f]*\"" | head -1 | cut -d\" -f4)
printf "write_file: %s\n" "$(curl -sS $h -H "Authorization: Bearer $tok" -H "Mcp-Session-Id: $sid" http://127.0.0.1:8000/mcp \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\",\"arguments\":{\"session_id\":\"$ws\",\"path\":\"src/main.py\",\"content\":\"print(42)\"}}}")"
printf "sandbox_exec: %s\n" "$(curl -sS $h -H "Authorization: Bearer $tok" -H "Mcp-Session-Id: $sid" http://127.0.0.1:8000/mcp \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_exec\",\"arguments\":{\"session_id\":\"$ws\",\"file\":\"src/main.py\"}}}")"
echo "admin: $(sbx-history --server --limit 1 --jq .status)"
echo "controllers: $(cat /sys/fs/cgroup/system.slice/sbx-mcp.service/cgroup.controllers 2> /dev/null) top: $(cat /sys/fs/cgroup/cgroup.controllers 2> /dev/null)"
echo "unauthorized: $(curl -sS -o /dev/null -w %{http_code} $h http://127.0.0.1:8000/mcp --data-binary "{}")"
echo "service: $(systemctl is-active sbx-mcp.service) user: $(stat -c %U /proc/$(systemctl show -p MainPID --value sbx-mcp.service))"
echo "history: $(ls /var/lib/sbx-mcp/sbx/sandbox_history.db)"
systemctl start sbx-history-prune.service
echo "prune: $(systemctl show -p Result --value sbx-history-prune.service)"
journalctl -u sbx-history-prune.service --no-pager | grep -o "\"pruned\".*" | head -1
systemd-analyze verify --man=no /usr/lib/systemd/system/sbx-mcp.socket /usr/lib/systemd/system/sbx-mcp.service \
  /usr/lib/systemd/system/sbx-history-prune.service /usr/lib/systemd/system/sbx-history-prune.timer && echo "verify: clean"
systemctl stop sbx-mcp.service sbx-mcp.socket
echo "left: $(for p in /proc/[0-9]*; do [ "$(stat -c %U $p 2> /dev/null)" = sbx ] && echo $p; done | wc -l)"
journalctl -u sbx-mcp.service --no-pager | tail -5'
	cat boot.out
	grep -x "socket: active service-before: inactive" boot.out
	grep -x "unauthorized: 401" boot.out
	grep -x "service: active user: sbx" boot.out
	grep -x "history: /var/lib/sbx-mcp/sbx/sandbox_history.db" boot.out
	grep -x "prune: success" boot.out
	# the package's user (its gid not its uid) writes a session's files;
	# root finds the server's runs by name
	sed -n 's/^write_file: //p' boot.out | jq -e '.result.isError == false'
	sed -n 's/^sandbox_exec: //p' boot.out | jq -e '.result.structuredContent.stdout == "42\n"'
	grep -x 'admin: "success"' boot.out
	grep -x "verify: clean" boot.out
	grep -x "left: 0" boot.out
	sed -n 's/^run_code: //p' boot.out > rpc.json
	[ "$(jq -r '.result.structuredContent.status' rpc.json)" = success ]
	# a pseudo-terminal in the sandbox, under the unit's device policy
	[[ $(jq -r '.result.structuredContent.stdout' rpc.json) == "6 "*" /dev/pts/"* ]]
	# the server's sandboxes as sbx: cgroup limits where systemd delegated a
	# cgroup v2 subtree (the guest); else (this machine's v1, read-only in
	# the container) the reason, never silence
	sed -n 's/^check_backend: //p' boot.out > check.json
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		[ "$(jq -c '.result.structuredContent.cgroup | .ok and .version == "v2" and (.controllers | index("memory") != null and index("pids") != null and index("cpu") != null)' check.json)" = true ]
	else
		[ "$(jq -r '.result.structuredContent.cgroup.ok' check.json)" = false ]
		[ -n "$(jq -r '.result.structuredContent.cgroup.why // .result.structuredContent.cgroup.error // empty' check.json)" ]
	fi
}

@test "an edited configuration is kept on reinstall; purge removes the token, the state and the mounts, the user stays" {
	# in a snapshot of the root (systemd-nspawn -x), which stays installed;
	# runs as root first, so that /run/sbx holds their mounts (pinned roots,
	# slots), and the stamp systemd writes when the retention timer elapsed
	run --separate-stderr in_root -x sh -c '
echo "# edited by the administrator" >> /etc/sbx/sandbox.conf
cd /srv && DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall -o Dpkg::Options::=--force-confold ./sbx_*.deb > /dev/null 2>&1
echo "kept: $(tail -n 1 /etc/sbx/sandbox.conf)"
printf "%s\n" "{\"language\":\"bash\",\"code\":\"echo hi\"}" "{\"language\":\"bash\",\"code\":\"echo hi\"}" | sbx-validate | sbx-run -j 2 > /dev/null
echo "mounts before: $(findmnt -rn -o TARGET | grep -c "^/run/sbx")"
mkdir -p /var/lib/systemd/timers && touch /var/lib/systemd/timers/stamp-sbx-history-prune.timer
DEBIAN_FRONTEND=noninteractive apt-get purge -y sbx > /dev/null 2>&1
for f in /etc/sbx/mcp-tokens /var/lib/sbx /var/lib/sbx-mcp /usr/bin/sbx-run /usr/share/sbx /run/sbx \
	/var/lib/systemd/timers/stamp-sbx-history-prune.timer; do [ -e $f ] && echo "left: $f"; done
findmnt -rn -o TARGET | grep "^/run/sbx" | sed "s/^/left: mount /"
getent passwd sbx > /dev/null && echo "user: kept"'
	echo "$output"
	[[ $output == *"kept: # edited by the administrator"* ]]
	[[ $output == *"mounts before: "[1-9]* ]]
	[[ $output != *"left:"* ]]
	[[ $output == *"user: kept"* ]]
	[ -e "$R/usr/bin/sbx-run" ]
}
