/* slot: network namespaces kept from one run to the next (see slot.h).
 *
 * Theory of operation
 * -------------------
 * What a run can leave in a network namespace it shares with the next is
 * bounded by what it may do there.  A slot's namespace belongs to the
 * initial user namespace; the sandbox's own user namespace is a fresh
 * child of it, so even the sandbox's init holds no capability over the
 * slot, and the program (uid 1000, no capabilities, no_new_privs) less:
 * no address, route, link, firewall or qdisc change, no raw or packet
 * socket, and the net sysctls are root's files (mode 0644 or 0444 to the
 * program's host uid).  What is left to an unprivileged process:
 *
 *  - sockets outliving the run: a closed TCP connection's TIME_WAIT (seen
 *    in /proc/net/tcp, holding the port for 60 s), orphaned connections
 *    still closing, unix sockets kept alive by an fd cycle until the
 *    garbage collector runs, an IPv6 flow label lingering after close, IP
 *    fragments waiting for reassembly (30 s);
 *  - caches: the TCP metrics (rtt, cwnd of past peers) and fast-open
 *    cookies.
 *
 * Made impossible when the slot is made: tcp_max_tw_buckets = 0 (a closing
 * connection skips TIME_WAIT), tcp_no_metrics_save = 1, tcp_fastopen = 0
 * (fast open's cookie cache lives in the metrics).  Checked before every
 * loan, from the supervisor inside the namespace: /proc/net/sockstat says
 * no socket of any family exists (the count drops only when a socket is
 * freed, orphans and GC-held unix sockets included), no TIME_WAIT and no
 * fragment queue (v4 and v6); no flow label; the three sysctls unchanged.
 * Any difference discards the slot: its pin is removed and a new namespace
 * is made.  So is a slot whose run was killed, timed out or failed in
 * set-up: its end was not init's own.
 *
 * Protocols with state of their own that this check would not see (DCCP
 * keeps TIME_WAIT sockets in a table of its own) are refused by the
 * seccomp filter (filter_gen.c).
 *
 * What does cross: the namespace's identity (its inode and cookie: a run
 * can tell it shares a slot with an earlier one), its traffic counters
 * (lo's packets and bytes, the SNMP counters of /proc/net/snmp), which
 * nothing can reset, and lo's neighbour entries with their times (when an
 * earlier run last used loopback): the volume and time of an earlier
 * run's loopback traffic, not its content, and between two runs that
 * collude a channel (they can count packets into the counters).  Where runs of different owners must not learn even that,
 * `[sandbox] slots = false` makes every namespace fresh (see
 * doc/security.md).
 *
 * Across processes: slot N is the bind mount SBX_RUNDIR/slots/N.net of the
 * namespace (as pin.h pins roots) and the lock N.lock; a process holds
 * N.lock (flock, released by the kernel if the process dies) for as long
 * as it keeps the slot, and the lock file's byte says whether the slot is
 * back from a run whose every process is gone.  A process killed mid-run
 * leaves the slot pinned and unlocked but not marked clean: the kernel drops its
 * flock before PR_SET_PDEATHSIG kills its sandbox, which may still run for
 * a moment, so the next process makes the slot a new namespace rather
 * than lend that one.
 */
#define _GNU_SOURCE
#include "slot.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ns.h"
#include "pin.h"
#include "util.h"

/* The sysctls a slot is made with, and checked for before each loan. */
static const struct {
	const char *path, *value;
} slot_sysctls[] = {
	{ "/proc/sys/net/ipv4/tcp_max_tw_buckets", "0" },
	{ "/proc/sys/net/ipv4/tcp_no_metrics_save", "1" },
	{ "/proc/sys/net/ipv4/tcp_fastopen", "0" },
};
#define NSYSCTL (sizeof slot_sysctls / sizeof slot_sysctls[0])

void slot_init(struct slot_sys *ss, int max, struct cg_sys *cg)
{
	memset(ss, 0, sizeof *ss);
	ss->dir_fd = ss->self_net_fd = -1;
	ss->max = max < 0 ? 0 : max > SLOT_MAX ? SLOT_MAX : max;
	ss->cg = cg;
	for (int i = 0; i < SLOT_MAX; i++) {
		ss->s[i].net_fd = ss->s[i].lock_fd = -1;
		for (int k = 0; k < SLOT_NCHECK; k++)
			ss->s[i].chk[k] = -1;
		cg_run_init(&ss->s[i].cg);
	}
	if (ss->max == 0 || geteuid() != 0)
		ss->state = -1;
}

static void close_checks(int chk[SLOT_NCHECK]);

static void drop(struct slot_ns *sl)
{
	if (sl->net_fd >= 0)
		close(sl->net_fd);
	close_checks(sl->chk);
	cg_run_forget(&sl->cg); /* left for whoever locks the slot next */
	if (sl->lock_fd >= 0)
		close(sl->lock_fd); /* the flock goes with it */
	sl->net_fd = sl->lock_fd = -1;
	sl->busy = sl->cg_dirty = false;
}

void slot_free(struct slot_sys *ss)
{
	for (int i = 0; i < SLOT_MAX; i++)
		drop(&ss->s[i]);
	if (ss->dir_fd >= 0)
		close(ss->dir_fd);
	if (ss->self_net_fd >= 0)
		close(ss->self_net_fd);
	ss->dir_fd = ss->self_net_fd = -1;
	ss->state = -1;
}

int slot_enter(int net_fd)
{
	return setns(net_fd, CLONE_NEWNET);
}

void slot_leave(struct slot_sys *ss)
{
	/* Cannot fail: we are root and it is our own namespace.  If it did,
	 * everything after would run in a slot: better to stop. */
	if (setns(ss->self_net_fd, CLONE_NEWNET) < 0)
		abort();
}

/* The files the check reads, opened once inside the slot's namespace:
 * a /proc/net file or a net sysctl opened there reads that namespace's
 * from anywhere, with no setns per check. */
static const char *const check_files[SLOT_NCHECK] = {
	"/proc/thread-self/net/sockstat",
	"/proc/thread-self/net/sockstat6",     /* absent without IPv6 */
	"/proc/thread-self/net/ip6_flowlabel", /* the same */
	"/proc/sys/net/ipv4/tcp_max_tw_buckets",
	"/proc/sys/net/ipv4/tcp_no_metrics_save",
	"/proc/sys/net/ipv4/tcp_fastopen",
};
enum { C_SOCKSTAT, C_SOCKSTAT6, C_FLOWLABEL, C_SYSCTL };

static void close_checks(int chk[SLOT_NCHECK])
{
	for (int i = 0; i < SLOT_NCHECK; i++) {
		if (chk[i] >= 0)
			close(chk[i]);
		chk[i] = -1;
	}
}

/* In the slot's namespace. */
static bool open_checks(int chk[SLOT_NCHECK])
{
	for (int i = 0; i < SLOT_NCHECK; i++) {
		chk[i] = open(check_files[i], O_RDONLY | O_CLOEXEC);
		if (chk[i] < 0 && (i == C_SOCKSTAT || i >= C_SYSCTL)) {
			close_checks(chk);
			return false;
		}
	}
	return true;
}

static bool read_small(int fd, char *buf, size_t len)
{
	ssize_t n;
	while ((n = pread(fd, buf, len - 1, 0)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return false;
	buf[n] = 0;
	return true;
}

/* The value of "key N" in a sockstat line starting with line, or -1 if it
 * is unreadable or (unless optional: sockstat6's, IPv6 may be off) absent. */
static long sockstat_line(const char *text, const char *line, const char *key, bool optional)
{
	const char *l = text;
	size_t ll = strlen(line);
	while (l && strncmp(l, line, ll) != 0)
		if ((l = strchr(l, '\n')))
			l++;
	if (!l)
		return optional ? 0 : -1;
	const char *end = strchr(l, '\n');
	char want[32];
	snprintf(want, sizeof want, " %s ", key);
	const char *k = strstr(l, want);
	if (!k || (end && k > end))
		return -1;
	char *e;
	errno = 0;
	long v = strtol(k + strlen(want), &e, 10);
	return errno || e == k + strlen(want) ? -1 : v;
}

/* Is the slot's namespace as a new one would be, for what matters? */
static bool is_clean(const int chk[SLOT_NCHECK])
{
	char buf[4096];
	if (!read_small(chk[C_SOCKSTAT], buf, sizeof buf))
		return false;
	if (sockstat_line(buf, "sockets:", "used", false) != 0 || sockstat_line(buf, "TCP:", "inuse", false) != 0 ||
	    sockstat_line(buf, "TCP:", "tw", false) != 0 || sockstat_line(buf, "UDP:", "inuse", false) != 0 ||
	    sockstat_line(buf, "FRAG:", "inuse", false) != 0)
		return false;
	if (chk[C_SOCKSTAT6] >= 0 && read_small(chk[C_SOCKSTAT6], buf, sizeof buf) &&
	    (sockstat_line(buf, "TCP6:", "inuse", true) != 0 || sockstat_line(buf, "UDP6:", "inuse", true) != 0 ||
	     sockstat_line(buf, "FRAG6:", "inuse", true) != 0))
		return false;
	/* Only the header line when there is no flow label. */
	if (chk[C_FLOWLABEL] >= 0 && read_small(chk[C_FLOWLABEL], buf, sizeof buf)) {
		char *nl = strchr(buf, '\n');
		if (nl && nl[1])
			return false;
	}
	for (size_t i = 0; i < NSYSCTL; i++) {
		char v[32];
		size_t n = strlen(slot_sysctls[i].value);
		if (!read_small(chk[C_SYSCTL + i], v, sizeof v) || strncmp(v, slot_sysctls[i].value, n) != 0 ||
		    (v[n] != '\n' && v[n] != 0))
			return false;
	}
	return true;
}

/* A pinned namespace taken over: its check files, and its check. */
static bool check_pinned(struct slot_sys *ss, int net_fd, int chk[SLOT_NCHECK])
{
	if (slot_enter(net_fd) < 0)
		return false;
	bool ok = open_checks(chk);
	slot_leave(ss);
	if (ok && !(ok = is_clean(chk)))
		close_checks(chk);
	return ok;
}

/* A new namespace, set up, as an fd, with its check files; we stay in
 * ours. */
static int make_ns(struct slot_sys *ss, int chk[SLOT_NCHECK])
{
	if (unshare(CLONE_NEWNET) < 0)
		return -1;
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	char err[128];
	bool ok = fd >= 0 && ns_loopback_up(err, sizeof err) == 0;
	for (size_t i = 0; ok && i < NSYSCTL; i++) {
		int s = open(slot_sysctls[i].path, O_WRONLY | O_CLOEXEC);
		ok = s >= 0 && util_write_all(s, slot_sysctls[i].value, strlen(slot_sysctls[i].value)) == 0;
		if (s >= 0)
			close(s);
	}
	ok = ok && open_checks(chk);
	slot_leave(ss);
	ok = ok && is_clean(chk);
	if (!ok) {
		close_checks(chk);
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	return fd;
}

static bool is_netns(int fd)
{
	struct statfs sf;
	return fstatfs(fd, &sf) == 0 && sf.f_type == NSFS_MAGIC && ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
}

/* Slot N's lock file holds one byte: '1' while its namespace was last
 * given back by a run that ended by itself, all its processes reaped.
 * It is '0' from each loan on, so that a process killed while its slot is
 * lent leaves it '0': its flock goes at the start of its exit, before
 * PR_SET_PDEATHSIG kills its sandbox, and a namespace its sandbox may
 * still be using is never lent again. */
static void mark_clean(struct slot_ns *sl, bool clean)
{
	(void)!pwrite(sl->lock_fd, clean ? "1" : "0", 1, 0);
}

static bool is_marked_clean(struct slot_ns *sl)
{
	char c = 0;
	return pread(sl->lock_fd, &c, 1, 0) == 1 && c == '1';
}

/* Pin a new namespace on N.net, replacing whatever is there. */
static void pin_new(struct slot_sys *ss, int i, int net_fd)
{
	char name[32], src[64], dst[128];
	snprintf(name, sizeof name, "%d.net", i);
	/* The old pin, if any: detached (a process that opened it keeps its
	 * fd, but no one holds it while we hold the lock). */
	snprintf(dst, sizeof dst, "%s/slots/%s", SBX_RUNDIR, name);
	umount2(dst, MNT_DETACH | UMOUNT_NOFOLLOW);
	int f = openat(ss->dir_fd, name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f < 0)
		return;
	close(f);
	snprintf(src, sizeof src, "/proc/self/fd/%d", net_fd);
	mount(src, dst, NULL, MS_BIND, NULL);
}

/* A new namespace for slot i, pinned in place of the old one (so that a
 * process that takes the slot over after us never sees that); on failure
 * the slot is let go. */
static bool make_slot(struct slot_sys *ss, int i)
{
	struct slot_ns *sl = &ss->s[i];
	if ((sl->net_fd = make_ns(ss, sl->chk)) < 0) {
		drop(sl);
		return false;
	}
	ss->made++;
	pin_new(ss, i, sl->net_fd);
	return true;
}

/* Discard slot i's namespace for a new one. */
static bool renew(struct slot_sys *ss, int i)
{
	ss->discarded++;
	mark_clean(&ss->s[i], false);
	close(ss->s[i].net_fd);
	close_checks(ss->s[i].chk);
	return make_slot(ss, i);
}

/* Lock slot i and take its namespace: the pinned one if it is clean, else
 * a new one (pinned). */
static bool hold(struct slot_sys *ss, int i)
{
	struct slot_ns *sl = &ss->s[i];
	char name[32];
	snprintf(name, sizeof name, "%d.lock", i);
	sl->lock_fd = openat(ss->dir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sl->lock_fd < 0 || flock(sl->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		drop(sl);
		return false;
	}
	snprintf(name, sizeof name, "%d.net", i);
	bool clean = is_marked_clean(sl);
	/* Its cgroups too (where slots keep them), if its last run's end is
	 * unknown. */
	sl->cg_dirty = !clean && ss->cg && ss->cg->keep;
	int fd = clean ? openat(ss->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
	if (fd >= 0 && is_netns(fd) && check_pinned(ss, fd, sl->chk)) {
		sl->net_fd = fd;
		ss->reused++;
		return true;
	}
	if (fd >= 0)
		close(fd);
	return make_slot(ss, i);
}

/* Slot i's cgroups for a run: its own, reset, or new ones in their
 * place; NULL if there can be none (the run makes its own). */
static struct cg_run *take_cg(struct slot_sys *ss, int i, uint64_t memory, double cpus, uint64_t pids)
{
	struct slot_ns *sl = &ss->s[i];
	char name[16], err[256];
	if (!ss->cg || !ss->cg->keep)
		return NULL;
	snprintf(name, sizeof name, "slot%d", i);
	if (!sl->cg.kept && cg_run_keep(ss->cg, &sl->cg, name, err, sizeof err) < 0)
		return NULL;
	if (!sl->cg_dirty && cg_run_reuse(ss->cg, &sl->cg, memory, cpus, pids))
		return &sl->cg;
	/* Removed (what is still charged to them stays accounted in the
	 * parent) and made anew. */
	ss->discarded++;
	if (cg_run_destroy(ss->cg, &sl->cg)) {
		sl->cg_dirty = false;
		if (cg_run_keep(ss->cg, &sl->cg, name, err, sizeof err) == 0 && cg_run_reuse(ss->cg, &sl->cg, memory, cpus, pids))
			return &sl->cg;
	}
	/* Still there, or not usable (a process of a killed run's still in
	 * them?): the run makes its own, the next take tries again. */
	cg_run_forget(&sl->cg);
	return NULL;
}

int slot_take(struct slot_sys *ss, int *net_fd, uint64_t memory, double cpus, uint64_t pids, struct cg_run **cg)
{
	*cg = NULL;
	if (ss->state == 0) {
		ss->self_net_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		ss->dir_fd = pin_rundir("slots");
		ss->state = ss->self_net_fd >= 0 && ss->dir_fd >= 0 ? 1 : -1;
		if (ss->state < 0)
			slot_free(ss);
	}
	if (ss->state < 0)
		return -1;
	/* First a slot we hold, then one we may lock. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < ss->max; i++) {
			struct slot_ns *sl = &ss->s[i];
			if (sl->busy || (pass == 0) != (sl->net_fd >= 0))
				continue;
			if (pass == 0 && !is_clean(sl->chk) && !renew(ss, i))
				continue;
			if (pass == 1 && !hold(ss, i))
				continue;
			sl->busy = true;
			mark_clean(sl, false);
			*net_fd = sl->net_fd;
			*cg = take_cg(ss, i, memory, cpus, pids);
			return i;
		}
	return -1;
}

void slot_give(struct slot_sys *ss, int idx, bool clean)
{
	if (idx < 0 || idx >= SLOT_MAX || !ss->s[idx].busy)
		return;
	struct slot_ns *sl = &ss->s[idx];
	sl->busy = false;
	/* Groups that could not be removed (now or before) stay marked for
	 * removal, and the slot unmarked: a process that takes it over
	 * removes them too. */
	if (!clean && sl->cg.kept && !cg_run_destroy(ss->cg, &sl->cg)) {
		cg_run_forget(&sl->cg);
		sl->cg_dirty = true;
	}
	if ((clean || renew(ss, idx)) && !sl->cg_dirty)
		mark_clean(sl, true);
}
