/* floor: the least a sandbox made per run can cost on this machine, to set
 * sbx-run's overhead against.  A launcher with nothing but what the kernel
 * charges for isolation: one process, linked against libc alone, that
 * clones each run's process into new user, mount, pid, IPC, UTS and
 * (unless -N) network namespaces, maps root to its own ids, brings
 * loopback up (-l), puts it in cgroups of its own with sbx's default
 * limits (-c: memory 256 MiB, 64 pids, half a CPU; removed after the run),
 * and has it exec the command as the namespace's pid 1.  No new root, no
 * seccomp, no rlimits, no supervisor, no JSON: none of what a sandbox
 * needs beyond its namespaces and cgroups.
 *
 *   floor [-N] [-l] [-c] [-S | -K] [-n COUNT [-j N]] -- command args...
 *
 * -S: isolate-style slots, the prototype of issue 32.  Per slot (one per
 * -j), a holder process made once keeps a user, network (loopback up),
 * IPC and UTS namespace, and the cgroups (-c) are made once; per run a
 * child joins the groups, setns()es into the holder's namespaces, makes
 * new mount and pid namespaces and forks the command there, and the
 * groups' limits are rewritten and their peak reset instead of an rmdir
 * and a mkdir.  What a run leaves for the next is not cleaned: a
 * measuring stick of what reuse can save, not a sandbox.
 *
 * -K: what sbx's slots keep (slot.h), to set -S against: per slot a holder
 * keeps a network namespace (loopback up) of the initial user namespace,
 * and the cgroups are kept as with -S; per run the parent steps into that
 * network namespace and clones the child into new user, mount, pid, IPC
 * and UTS namespaces there.  -S minus -K is what keeping the user, IPC
 * and UTS namespaces too would save (as root only).
 *
 * -n runs the command COUNT times, N at a time, from this one process (as
 * `sbx-run -j N` runs a batch), instead of once.  The exit status is the
 * last failed run's, or 0.  Not a sandbox: a measuring stick for
 * bench/run.sh, run under bench/timeit like the commands it compares.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sched.h>

#define MAXJ 64

/* reuse: 1 for -S, 2 for -K */
static int net = 1, lo, cg, v2, reuse, self_net = -1;
static char **cmd;

/* A run in flight: its process and its cgroups' directories (one under
 * cgroup v2's root, or one in each of v1's memory, pids and cpu
 * hierarchies, as sbx-run makes them). */
static struct slot {
	pid_t pid;
	int ncg;
	char dir[3][64];
	pid_t holder;              /* -S: the holder of its namespaces */
	int holder_fd;             /* its pidfd */
} slots[MAXJ];

static pid_t parent;

/* On a failure the parent kills and reaps the runs in flight and removes
 * every cgroup it made, so that nothing is left on the host. */
static void die(const char *what)
{
	fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
	if (getpid() == parent)
		for (int k = 0; k < MAXJ; k++) {
			if (slots[k].pid > 0 && kill(slots[k].pid, SIGKILL) == 0)
				while (waitpid(slots[k].pid, NULL, 0) < 0 && errno == EINTR)
					;
			if (slots[k].holder > 0 && kill(slots[k].holder, SIGKILL) == 0)
				while (waitpid(slots[k].holder, NULL, 0) < 0 && errno == EINTR)
					;
			for (int i = 0; i < slots[k].ncg; i++)
				rmdir(slots[k].dir[i]);
		}
	exit(127);
}

static void put(const char *dir, const char *file, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s%s%s", dir, *dir ? "/" : "", file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

/* The parent makes the groups and writes the limits; the child joins by
 * itself, as sbx-run's init does (a thread moving itself through v1's
 * tasks does not take the threadgroup lock that moving a process does). */
static void cg_make(struct slot *s, int k)
{
	const char *roots[] = { "memory", "pids", "cpu" };
	for (int i = 0; i < (v2 ? 1 : 3); i++) {
		snprintf(s->dir[i], sizeof s->dir[i], "/sys/fs/cgroup/%s%sfloor.%d.%d", v2 ? "" : roots[i],
			 v2 ? "" : "/", (int)getpid(), k);
		if (mkdir(s->dir[i], 0755) < 0)
			die(s->dir[i]);
		s->ncg = i + 1;
	}
}

/* The limits, written to new groups, or again to a slot's (-S), whose
 * peak is reset too. */
static void cg_limit(struct slot *s)
{
	if (v2) {
		put(s->dir[0], "memory.max", "268435456");
		put(s->dir[0], "pids.max", "64");
		put(s->dir[0], "cpu.max", "50000 100000");
	} else {
		put(s->dir[0], "memory.limit_in_bytes", "268435456");
		put(s->dir[1], "pids.max", "64");
		put(s->dir[2], "cpu.cfs_quota_us", "50000");
		if (reuse)
			put(s->dir[0], "memory.max_usage_in_bytes", "0");
	}
}

static void loopback_up(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { .ifr_name = "lo", .ifr_flags = IFF_UP | IFF_RUNNING };
	if (fd < 0 || ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		die("loopback up");
	close(fd);
}

/* Root of a new user namespace: its maps, written by the parent. */
static void map_root(pid_t pid)
{
	char path[64], map[64];
	snprintf(map, sizeof map, "0 %d 1\n", (int)getuid());
	snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
	put("", path, map);
	snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
	put("", path, "deny");
	snprintf(map, sizeof map, "0 %d 1\n", (int)getgid());
	snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
	put("", path, map);
}

/* -S: slot k's holder, in new user, network, IPC and UTS namespaces with
 * loopback up, and its groups. */
static void hold(struct slot *s, int k)
{
	int go[2], ready[2];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0)
		die("pipe");
	struct clone_args ca = {
		.flags = (reuse == 2 ? 0 : CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWUTS) | CLONE_NEWNET | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&s->holder_fd,
		.exit_signal = SIGCHLD,
	};
	s->holder = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
	if (s->holder < 0)
		die("clone3 (holder)");
	if (s->holder == 0) {
		char c;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		loopback_up();
		if (write(ready[1], "", 1) != 1)
			_exit(127);
		for (;;)
			pause();
	}
	if (reuse == 1)
		map_root(s->holder);
	char c;
	if (write(go[1], "", 1) != 1 || read(ready[0], &c, 1) != 1)
		die("start a holder");
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
	s->ncg = 0;
	if (cg) {
		cg_make(s, k);
		cg_limit(s);
	}
}

/* -S: the run's child: into the slot's groups and namespaces, new mount
 * and pid namespaces, the command as their pid 1. */
static void enter(struct slot *s)
{
	for (int i = 0; i < s->ncg; i++)
		put(s->dir[i], v2 ? "cgroup.procs" : "tasks", "0");
	if (setns(s->holder_fd, CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		die("setns");
	if (unshare(CLONE_NEWNS | CLONE_NEWPID) < 0)
		die("unshare");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execvp(cmd[0], cmd);
		die(cmd[0]);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("wait");
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static void child(struct slot *s, int go)
{
	char c;
	if (read(go, &c, 1) != 1)
		_exit(127);
	for (int i = 0; i < s->ncg; i++)
		put(s->dir[i], v2 ? "cgroup.procs" : "tasks", "0");
	if (lo && net && !reuse)
		loopback_up();
	execvp(cmd[0], cmd);
	die(cmd[0]);
}

static void start(struct slot *s, int k)
{
	if (reuse == 1) {
		if (cg)
			cg_limit(s);
		struct clone_args ca = { .exit_signal = SIGCHLD };
		if ((s->pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca)) < 0)
			die("clone3");
		if (s->pid == 0)
			enter(s);
		return;
	}
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0)
		die("pipe");
	if (!reuse) {
		s->ncg = 0;
		if (cg)
			cg_make(s, k);
	}
	if (cg)
		cg_limit(s);
	if (reuse && setns(s->holder_fd, CLONE_NEWNET) < 0)
		die("setns (the slot's network namespace)");
	struct clone_args ca = {
		.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
			 (net && !reuse ? CLONE_NEWNET : 0),
		.exit_signal = SIGCHLD,
	};
	s->pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
	if (s->pid < 0)
		die("clone3");
	if (s->pid == 0) {
		close(go[1]);
		child(s, go[0]);
	}
	if (reuse && setns(self_net, CLONE_NEWNET) < 0)
		die("setns (back)");
	close(go[0]);
	map_root(s->pid);
	if (write(go[1], "", 1) != 1)
		die("start the child");
	close(go[1]);
}

static long number(const char *s, long max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max) {
		fprintf(stderr, "floor: %s: not a number from 1 to %ld\n", s, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long count = 1, par = 1;
	int opt;
	while ((opt = getopt(argc, argv, "+NlcSKn:j:")) != -1) {
		switch (opt) {
		case 'N': net = 0; break;
		case 'S': reuse = 1; break;
		case 'K': reuse = 2; break;
		case 'l': lo = 1; break;
		case 'c': cg = 1; break;
		case 'n': count = number(optarg, INT_MAX); break;
		case 'j': par = number(optarg, MAXJ); break;
		default: return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: floor [-N] [-l] [-c] [-S | -K] [-n COUNT [-j N]] -- command args...\n");
		return 2;
	}
	if (reuse == 2 && ((self_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0 || geteuid() != 0)) {
		fprintf(stderr, "floor: -K needs root\n");
		return 2;
	}
	cmd = argv + optind;
	parent = getpid();
	v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
	long started = 0, done = 0;
	int rc = 0;
	for (int k = 0; reuse && k < par && k < count; k++)
		hold(&slots[k], k);
	for (int k = 0; k < par && started < count; k++, started++)
		start(&slots[k], k);
	while (done < count) {
		int st;
		pid_t pid = wait(&st);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			die("wait");
		}
		int k = 0;
		while (k < par && slots[k].pid != pid)
			k++;
		if (k == par)
			continue;
		slots[k].pid = 0;
		for (int i = 0; !reuse && i < slots[k].ncg; i++)
			if (rmdir(slots[k].dir[i]) < 0)
				die(slots[k].dir[i]);
		if (!reuse)
			slots[k].ncg = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		done++;
		if (started < count) {
			start(&slots[k], k);
			started++;
		}
	}
	/* -S: the holders and the slots' groups go now. */
	for (int k = 0; reuse && k < par; k++) {
		if (slots[k].holder > 0 && kill(slots[k].holder, SIGKILL) == 0)
			while (waitpid(slots[k].holder, NULL, 0) < 0 && errno == EINTR)
				;
		slots[k].holder = 0;
		for (int i = 0; i < slots[k].ncg; i++)
			rmdir(slots[k].dir[i]);
		slots[k].ncg = 0;
	}
	return rc;
}
