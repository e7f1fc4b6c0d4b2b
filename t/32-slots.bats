#!/usr/bin/env bats
# Slots (lib/sandbox/slot.h): a network namespace and cgroups kept from one
# run to the next.  Each crossing issue 32 names is attempted by one run and
# looked for by the next in the same slot, from the host's side where the
# host can see it (the pinned namespace, through nsenter; the slot's
# cgroups) and from inside the next run.  One job per sbx-run process and
# max_slots = 1: every run takes slot 0, and the tests first prove that it
# did (the same namespace inode, the same cgroup), so that "nothing
# crossed" is not "nothing was reused".
#
# Every test is kernel-dependent.  Those tagged netns prove what a slot
# keeps of its network and IPC namespaces, the same code on every kernel:
# the guests run them under Debian 13's kernel; the others (what a slot
# does with its cgroups, kept from Linux 6.12 on cgroup v2 and made anew
# before) under Debian 12's too.
# bats file_tags=kernel
load helpers

PIN=/run/sbx/slots/0.net

local_setup() {
	skip_on_docker "slots are the native backend's"
	skip_unless_root
	CONF=$(conf_with -e 's/^max_slots .*/max_slots = 1/')
}

# A killed sbx-run's sandboxes are zombies for a moment, until the
# machine's init reaps them.
teardown() {
	umount "$BATS_TEST_TMPDIR/shm" 2> /dev/null || true
	for _ in $(seq 50); do assert_no_leftovers 2> /dev/null && return 0; sleep 0.1; done
	assert_no_leftovers
}

# slot_run CODE [EXTRA]: one Python job in its own sbx-run; ${lines[0]}.
slot_run() {
	run --separate-stderr sbx -c "$CONF" --timings <<< "$(py "import os
print(os.readlink('/proc/self/ns/net'), flush=True)
$1" "${2:-{\}}")"
}
# slot_cg FILE: slot 0's cgroup directory that has FILE (v1: one per
# controller, under this process's own group, as sbx-run's are; v2 as
# root: at the top; under this file's own parent, CG_PARENT),
# and whether this kernel keeps cgroups in slots at all.
slot_cg() {
	local ctl p d
	while IFS=: read -r _ ctl p; do
		if [ -n "$ctl" ]; then d=/sys/fs/cgroup/${ctl#name=}${p%/}/$CG_PARENT/slot0; else d=/sys/fs/cgroup/$CG_PARENT/slot0; fi
		[ -e "$d/$1" ] && echo "$d" && return 0
	done < /proc/self/cgroup
	return 1
}
# settled DIR: await memory.stat of the slot's memory cgroup DIR showing
# nothing a run cannot give back.  The kernel batches its memory
# statistics per CPU and flushes them every 2 s, or at a read once enough
# have piled up: the last pages an exiting run frees can stay in them
# that long, and a slot whose statistics still show them is made anew
# (safe, but the test is about the kept ones).
settled() {
	for _ in $(seq 50); do
		awk '$1 == "anon" || $1 == "rss" || $1 == "shmem" || $1 == "unevictable" { n += $2 } END { exit n != 0 }' "$1/memory.stat" && return 0
		sleep 0.1
	done
}
skip_unless_kept_cgroups() {
	local why
	why=$("$BIN/sbx-run" -c "$CONF" --check | jq -r 'if .slots.cgroups then "" else .slots.why // "no" end')
	[ -z "$why" ] || skip "slots keep no cgroups here: $why"
}
# The run's stage timings: did it run in the slot's cgroups?
in_slot_cg() { jqe 0 '.timings.run_stage.slot == 0 and .timings.run_stage.slot_cgroups'; }
# The namespace inode the last run ran in, and the pinned slot's.
ran_in() { jqn 0 '.stdout' | head -1 | tr -dc 0-9; }
pinned() { stat -L -c %i "$PIN"; }
in_slot() { nsenter --net="$PIN" "$@"; }

# bats test_tags=netns
@test "slots: one run after another reuses the pinned namespace, lo up, TIME_WAIT and metrics off" {
	slot_run 'print(open("/sys/class/net/lo/operstate").read() if os.path.exists("/sys/class/net") else "")'
	jqe 0 '.status == "success"'
	first=$(ran_in)
	[ "$first" = "$(pinned)" ]
	slot_run 'pass'
	jqe 0 '.status == "success"'
	[ "$(ran_in)" = "$first" ]
	[ "$(in_slot cat /proc/sys/net/ipv4/tcp_max_tw_buckets)" = 0 ]
	[ "$(in_slot cat /proc/sys/net/ipv4/tcp_no_metrics_save)" = 1 ]
	[ "$(in_slot cat /proc/sys/net/ipv4/tcp_fastopen)" = 0 ]
	in_slot ip -o link show lo | grep -q 'UP'
	# not reachable from the host's namespace by a path anyone but root can open
	[ "$(stat -c %a /run/sbx/slots)" = 700 ]
}

# bats test_tags=netns
@test "slots: TCP connections, TIME_WAIT, a daemon's listener and metrics do not reach the next run" {
	slot_run 'import socket, subprocess
s = socket.socket(); s.bind(("127.0.0.1", 5000)); s.listen()
for i in range(20):
    c = socket.create_connection(("127.0.0.1", 5000)); a, _ = s.accept()
    c.sendall(b"x" * 100000); a.recv(10); c.close(); a.close()
s.close()
# a listener held by a detached grandchild, to outlive the program if it could
subprocess.Popen(["python3", "-c", "import socket,os,time\nos.setsid()\nl=socket.socket()\nl.bind((\"127.0.0.1\",5001))\nl.listen()\ntime.sleep(60)"], start_new_session=True)
import time; time.sleep(0.3)
print(len(open("/proc/net/tcp").read().splitlines()) - 1)'
	jqe 0 '.status == "success"'
	first=$(ran_in)
	# from the host: no socket, no metrics in the kept namespace
	[ -z "$(in_slot ss -Htan)" ]
	[ -z "$(in_slot ip tcp_metrics show)" ]
	slot_run 'import socket, errno
print(len(open("/proc/net/tcp").read().splitlines()) - 1, len(open("/proc/net/tcp6").read().splitlines()) - 1)
s = socket.socket(); s.bind(("127.0.0.1", 5000)); print("bound")
try: socket.create_connection(("127.0.0.1", 5001)); print("connected")
except OSError as e: print(errno.errorcode[e.errno])'
	jqe 0 '.status == "success"'
	[ "$(ran_in)" = "$first" ]
	[ "$(jqn 0 .stdout | sed -n 2,4p | tr '\n' ' ')" = "0 0 bound ECONNREFUSED " ]
}

# bats test_tags=netns
@test "slots: SysV and POSIX IPC, keys and /dev/shm of one run are not in the next" {
	slot_run 'import ctypes, ctypes.util
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
shm = libc.shmget(0x5b0c, 1 << 20, 0o1600); print("shm", shm)
print("msg", libc.msgget(0x5b0d, 0o1600))
rt.mq_open.restype = ctypes.c_int
print("mq", rt.mq_open(b"/sbxslot", 0o100 | 0o2, 0o600, None))
key = libc.syscall(248, b"user", b"sbxslot", b"secret", 6, -4); print("key", key)
open("/dev/shm/sbxslot", "w").write("secret")'
	jqe 0 '.status == "success"'
	jqn 0 .stdout | grep -q '^shm [0-9]'
	first=$(ran_in)
	slot_run 'import ctypes, ctypes.util
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
for f in ("shm", "msg", "sem"): print(f, len(open("/proc/sysvipc/" + f).read().splitlines()) - 1)
print("shmget", libc.shmget(0x5b0c, 0, 0), ctypes.get_errno())
print("mq", rt.mq_open(b"/sbxslot", 0), ctypes.get_errno())
k = libc.syscall(249, b"user", b"sbxslot", None, 0)
print("key", k, ctypes.get_errno() if k < 0 else "")
print("devshm", os.listdir("/dev/shm"))'
	jqe 0 '.status == "success"'
	[ "$(ran_in)" = "$first" ]
	[ "$(jqn 0 .stdout | sed 1d | grep -v ^key)" = "shm 0
msg 0
sem 0
shmget -1 2
mq -1 2
devshm []" ]
	# a key either was refused (seccomp) or is not found by the next run
	jqn 0 .stdout | grep -Eq '^key -1 (1|126)$'
}

# bats test_tags=netns
@test "slots: the program cannot change the kept namespace: sysctls, hostname, lo, routes" {
	slot_run 'import socket, subprocess
for p in ("ipv4/tcp_max_tw_buckets", "ipv4/tcp_no_metrics_save", "ipv4/tcp_fastopen", "ipv4/ip_local_port_range", "core/somaxconn"):
    try: open("/proc/sys/net/" + p, "w").write("100"); print("wrote", p)
    except OSError as e: print("refused", p)
try: socket.sethostname("x"); print("hostname set")
except OSError: print("refused hostname")
r = subprocess.run(["ip", "link", "set", "lo", "down"], capture_output=True); print("lo down", r.returncode)
r = subprocess.run(["ip", "addr", "add", "10.9.9.9/32", "dev", "lo"], capture_output=True); print("addr", r.returncode)'
	jqe 0 '.status == "success"'
	! jqn 0 .stdout | grep -E '^wrote|hostname set|lo down 0|addr 0' || false
	[ "$(in_slot cat /proc/sys/net/ipv4/tcp_max_tw_buckets)" = 0 ]
	[ "$(in_slot cat /proc/sys/net/core/somaxconn)" = "$(unshare -n cat /proc/sys/net/core/somaxconn)" ]
	! in_slot ip -o addr | grep -q 10.9.9.9 || false
}

# bats test_tags=netns
@test "slots: protocols whose state the check cannot see are refused: DCCP, SCTP, UDP-Lite, L2TP, SMC, socketpair but unix" {
	slot_run 'import socket
for fam in (socket.AF_INET, socket.AF_INET6):
    for t, p in ((6, 33), (6, 0), (5, 0), (1, 132), (5, 132), (2, 136), (2, 115), (1, 256)):
        try: socket.socket(fam, t, p); print("opened", fam, t, p)
        except OSError as e: print("refused", e.errno)
for fam in (socket.AF_INET, 30):
    try: socket.socketpair(fam, socket.SOCK_STREAM); print("pair", fam)
    except OSError as e: print("refused", e.errno)
socket.socket(); socket.socket(type=socket.SOCK_DGRAM); socket.socketpair(); print("tcp udp unix")'
	jqe 0 '.status == "success"'
	! jqn 0 .stdout | grep -E '^(opened|pair)' || false
	[ "$(jqn 0 .stdout | grep -c '^refused 1$')" = 18 ]
	jqn 0 .stdout | grep -q '^tcp udp unix$'
}

@test "slots: memory charge and CPU of one run are not counted in the next" {
	slot_run 'b = bytearray(120 << 20)
for i in range(0, len(b), 4096): b[i] = 1
open("/dev/shm/fill", "wb").write(b"x" * (30 << 20))
x = 0
for i in range(1000000): x += i' '{timeout: 30}'
	jqe 0 '.status == "success" and .memory_peak_bytes > 150000000'
	first=$(ran_in)
	cpu=$(jqn 0 .cpu_ms)
	slot_run 'pass'
	# A CPU count carried over would be the first run's and more; below
	# it is enough (on a loaded VM a short run's CPU time takes in stolen
	# time, and once measured 370 ms for "pass").
	jqe 0 ".status == \"success\" and .memory_peak_bytes < 40000000 and .cpu_ms < $cpu"
	[ "$(ran_in)" = "$first" ]
}

@test "slots: cgroups are kept, with each job's limits, and its own peak, OOM count and CPU" {
	skip_unless_kept_cgroups
	slot_run 'x = bytearray(100 << 20)
for i in range(0, len(x), 4096): x[i] = 1' '{memory: "64m", cpus: 0.25, timeout: 30}'
	jqe 0 '.status == "memory_limit"'
	in_slot_cg
	mem=$(slot_cg memory.stat)
	ino=$(stat -c %i "$mem")
	[ "$(cat "$(slot_cg pids.max)/pids.max")" = 64 ]
	# the default limits again; an OOM kill of an earlier run is not this one's
	settled "$mem"
	slot_run 'x = bytearray(100 << 20)
for i in range(0, len(x), 4096): x[i] = 1
raise SystemExit(3)' '{timeout: 30}'
	jqe 0 '.status == "error" and .exit_code == 3 and .memory_peak_bytes > 100000000'
	in_slot_cg
	[ "$(stat -c %i "$mem")" = "$ino" ]
	if [ -e "$mem/memory.limit_in_bytes" ]; then
		[ "$(cat "$mem/memory.limit_in_bytes")" = 268435456 ]
		[ "$(cat "$(slot_cg cpu.cfs_quota_us)/cpu.cfs_quota_us")" = 50000 ]
	else
		[ "$(cat "$mem/memory.max")" = 268435456 ]
		[ "$(cat "$mem/cpu.max")" = "50000 100000" ]
	fi
	# a small run's peak is its own
	settled "$mem"
	slot_run 'pass'
	jqe 0 '.status == "success" and .memory_peak_bytes < 40000000'
	in_slot_cg
	[ "$(stat -c %i "$mem")" = "$ino" ]
	# the smallest limit still fits beside what earlier runs left
	settled "$mem"
	run --separate-stderr sbx -c "$CONF" --timings <<< '{"language":"bash","code":"echo $((6 * 7))","memory":"4m"}'
	jqe 0 '.status == "success" and .stdout == "42\n" and .timings.run_stage.slot_cgroups'
	[ "$(stat -c %i "$mem")" = "$ino" ]
	# empty between runs, from the host's side
	for f in memory.stat pids.max; do
		d=$(slot_cg "$f")
		[ -z "$(cat "$d/cgroup.procs")" ]
	done
}

# charged_then_new COMMAND: COMMAND run by the host in the slot's memory
# cgroup charges it; the next run in the slot gets new groups, and a peak
# of its own.
charged_then_new() {
	local mem ino
	mem=$(slot_cg memory.stat)
	ino=$(stat -c %i "$mem")
	sh -c "echo \$\$ > $mem/cgroup.procs && $1"
	slot_run 'pass'
	jqe 0 '.status == "success" and .memory_peak_bytes < 20000000'
	in_slot_cg
	[ "$(stat -c %i "$(slot_cg memory.stat)")" != "$ino" ]
}

@test "slots: cgroups holding memory a run cannot give back, or processes, are made anew" {
	skip_unless_kept_cgroups
	slot_run 'pass'
	in_slot_cg
	# the host charges a small tmpfs file to the slot's memory cgroup (as
	# a session's workspace written by a run would be)
	mkdir -p shm && mount -t tmpfs -o size=64m tmpfs shm
	charged_then_new 'head -c 600000 /dev/zero > shm/f'
	umount shm
	# page cache it could give back, but more than a little
	charged_then_new 'head -c 30000000 /dev/urandom > cache'
	mem2=$(slot_cg memory.stat)
	# a process of the host's in the slot's cgroups: not lent (the run
	# makes its own), and once it is gone, the slot's are made anew
	sleep 60 &
	pid=$!
	echo $pid > "$mem2/cgroup.procs"
	slot_run 'pass'
	jqe 0 '.status == "success" and .timings.run_stage.slot == 0 and .timings.run_stage.slot_cgroups == false'
	kill $pid
	wait $pid || true
	slot_run 'pass'
	in_slot_cg
}

# bats test_tags=netns
@test "slots: an abstract unix socket held in an fd cycle does not reach the next run" {
	slot_run 'import socket, array
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); l.bind("\0sbx-slot"); l.listen()
# each end in flight on the other: freed only by the unix garbage collector
for s, t in ((a, b), (b, a), (a, l)):
    s.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [t.fileno()]))])
print("cycle")'
	jqe 0 '.status == "success"'
	slot_run 'import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0sbx-slot"); print("bound")'
	jqe 0 '.status == "success" and (.stdout | test("bound"))'
}

@test "slots: two runs at once never share one; a timed-out run's slot is made anew" {
	slot_run 'import time; time.sleep(3)' '{timeout: 10}' &
	# the first run holds slot 0 once its program runs
	for i in $(seq 100); do our_pgrep "$SBX_PROG_UID" python3 > /dev/null && break; sleep 0.1; done
	held=$(pinned)
	slot_run 'pass'
	jqe 0 '.status == "success"'
	[ "$(ran_in)" != "$held" ]
	wait
	slot_run 'while True: pass' '{timeout: 3}'
	jqe 0 '.status == "timeout"'
	[ "$(ran_in)" = "$held" ]
	[ "$(pinned)" != "$held" ]
	[ "$(in_slot cat /proc/sys/net/ipv4/tcp_max_tw_buckets)" = 0 ]
}

@test "slots: a slot whose sbx-run was SIGKILLed mid-run, or that was tampered with, is checked before its next run" {
	CODE=$(py 'import socket, time
l = socket.socket(); l.bind(("127.0.0.1", 5002)); l.listen()
print("up", flush=True); time.sleep(30)' '{timeout: 60}')
	"$BIN/sbx-validate" -c "$CONF" <<< "$CODE" > job.json
	"$BIN/sbx-run" -c "$CONF" < job.json > out.json &
	pid=$!
	for i in $(seq 100); do [ -n "$(in_slot ss -Htln 2>/dev/null)" ] && break; sleep 0.05; done
	in_slot ss -Htln | grep -q 5002
	before=$(pinned)
	cg_before=$(stat -c %i "$(slot_cg memory.stat)" 2> /dev/null) || cg_before=
	kill -9 "$pid"
	wait "$pid" || true
	for i in $(seq 100); do [ -z "$(in_slot ss -Htan)" ] && break; sleep 0.05; done
	slot_run 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 5002)); print("bound")'
	jqe 0 '.status == "success" and (.stdout | test("bound"))'
	kept=$(pinned)
	[ "$(ran_in)" = "$kept" ]
	# lent when its supervisor died: not lent again (its sandbox may have
	# outlived the lock for a moment), made anew, its cgroups too
	[ "$kept" != "$before" ]
	[ -z "$cg_before" ] || [ "$(stat -c %i "$(slot_cg memory.stat)")" != "$cg_before" ]
	# the host (root) changes the kept namespace: the next run does not use it
	in_slot sh -c 'echo 5 > /proc/sys/net/ipv4/tcp_max_tw_buckets'
	slot_run 'print(open("/proc/sys/net/ipv4/tcp_max_tw_buckets").read())'
	jqe 0 '.status == "success"'
	[ "$(ran_in)" != "$kept" ]
	[ "$(jqn 0 .stdout | sed -n 2p)" = 0 ]
	[ "$(in_slot cat /proc/sys/net/ipv4/tcp_max_tw_buckets)" = 0 ]
}

# bats test_tags=netns
@test "slots = false: every run gets a namespace of its own" {
	slot_run 'pass'
	kept=$(pinned)
	[ "$(ran_in)" = "$kept" ]
	CONF=$(conf_with -e 's/^slots .*/slots = false/')
	slot_run 'pass'
	jqe 0 '.status == "success"'
	[ "$(ran_in)" != "$kept" ]
	[ "$(pinned)" = "$kept" ]
}
