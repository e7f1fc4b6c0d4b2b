/* box_tmpl: the read-only roots.  Each tree (the host's, or a language's
 * rootfs, with its binds and network) is built once by a short-lived
 * builder in a mount namespace of its own, which is kept as a template
 * (and pinned for later processes as root, pin.h); a sandbox's mount
 * namespace is cloned from it (box_clone_from).  See box.c.
 */
#define _GNU_SOURCE
#include "box_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns.h"
#include "proc.h"
#include "util.h"

/* How often a long-running supervisor checks that its templates' keys
 * and mounts still hold (pin.h), so that host files replaced under them (a
 * new ld.so.cache, updated certificates) and mounts made or removed there
 * reach its sandboxes: a check is a few stat calls, a read of mountinfo
 * and a hash, and a root is rebuilt only when one of them changed or it
 * is older than PIN_REFRESH_NS. */
#define TMPL_CHECK_NS (60LL * 1000000000)

static bool strv_eq(char *const *a, char *const *b)
{
	size_t i = 0;
	for (; a && b && a[i] && b[i]; i++)
		if (strcmp(a[i], b[i]))
			return false;
	return !(a && a[i]) && !(b && b[i]);
}

/* Do two sandboxes (or a sandbox and a template) need the same root? */
bool box_same_tree(bool net_a, const char *rootfs_a, char *const *binds_a, bool net_b, const char *rootfs_b,
		      char *const *binds_b)
{
	return net_a == net_b && strv_eq(binds_a, binds_b) &&
	       ((!rootfs_a && !rootfs_b) || (rootfs_a && rootfs_b && !strcmp(rootfs_a, rootfs_b)));
}

void box_tmpl_clear(struct box_tmpl *t)
{
	if (t->mnt_fd >= 0)
		close(t->mnt_fd);
	free(t->rootfs);
	util_strv_free(t->binds);
	*t = (struct box_tmpl){ .mnt_fd = -1 };
}

static void tmpl_set(struct box_tmpl *t, int fd, bool network, const char *rootfs, char *const *binds, int64_t born_ns,
		     const char *key, const char *mounts)
{
	box_tmpl_clear(t);
	*t = (struct box_tmpl){
		.mnt_fd = fd, .network = network, .rootfs = rootfs ? util_strdup(rootfs) : NULL,
		.binds = util_strv_dup(binds), .born_ns = born_ns, .checked_ns = box_mono_ns(),
	};
	snprintf(t->key, sizeof t->key, "%s", key);
	snprintf(t->mounts, sizeof t->mounts, "%s", mounts);
}

/* A mount namespace made by a short-lived child of ours (clone flags:
 * CLONE_NEWNS and what else it needs), which runs make() there, reports
 * on a pipe and then waits for EOF on another while we open its
 * namespace.  make() returns 0, or -1 with errno set and what failed in
 * its err.  The namespace's fd, or -1 with err set (prefixed by what). */
static _Noreturn void ns_child(box_ns_make_fn make, void *arg, int rep, int hold)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int fds[2] = { rep, hold };
	if (proc_keep_fds(fds, 2) < 0)
		_exit(120);
	char text[sizeof ((struct msg *)0)->text] = "";
	if (make(arg, text, sizeof text) < 0)
		box_msg_send(KFD(0), MSG_FAIL, errno, 0, 0, 0, 0, text);
	else
		box_msg_send(KFD(0), MSG_MARK, 0, 0, 0, 0, 0, NULL);
	char x;
	while (read(KFD(1), &x, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

int box_ns_made(unsigned long flags, box_ns_make_fn make, void *arg, const char *what, char *err, size_t errlen)
{
	int rep[2] = { -1, -1 }, hold[2] = { -1, -1 }, fd = -1;
	if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(hold, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "%s: pipes: %s", what, strerror(errno));
		goto out;
	}
	pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0)
		ns_child(make, arg, rep[1], hold[0]);
	if (pid < 0) {
		snprintf(err, errlen, "%s: cannot create a mount namespace: %s", what, strerror(errno));
		goto out;
	}
	close(rep[1]);
	rep[1] = -1;
	struct pollfd pf = { .fd = rep[0], .events = POLLIN };
	struct msg m = { 0 };
	int n;
	while ((n = poll(&pf, 1, SETUP_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	ssize_t got = 0;
	if (n == 1)
		while ((got = read(rep[0], &m, sizeof m)) < 0 && errno == EINTR)
			;
	m.text[sizeof m.text - 1] = 0;
	if (got != (ssize_t)sizeof m)
		snprintf(err, errlen, "%s: no answer", what);
	else if (m.type != MSG_MARK)
		snprintf(err, errlen, "%s: %s: %s", what, m.text, strerror(m.err));
	else {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			snprintf(err, errlen, "%s: %s: %s", what, path, strerror(errno));
	}
	if (fd < 0)
		kill(pid, SIGKILL);
	close(hold[1]);
	hold[1] = -1;
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
out:;
	int all[] = { rep[0], rep[1], hold[0], hold[1] };
	for (size_t i = 0; i < 4; i++)
		if (all[i] >= 0)
			close(all[i]);
	return fd;
}

/* The template builder runs as pid 1 of a new pid namespace, whose procfs
 * then shows nothing once it is gone (see ns_build_root), with our
 * credentials. */
struct tmpl_args {
	const struct conf *conf;
	bool network;
	const char *rootfs;
	char *const *binds;
};

static int tmpl_make(void *arg, char *err, size_t errlen)
{
	const struct tmpl_args *a = arg;
	struct ns_root r = { .rootfs = a->rootfs ? a->rootfs : "", .etc = a->conf->etc, .binds = a->binds,
			     .network = a->network };
	return ns_build_root(&r, err, errlen);
}

static int tmpl_build(struct box_sys *s, struct box_tmpl *t, bool network, const char *rootfs, char *const *binds,
		      const char *key, char *err, size_t errlen)
{
	/* (the mounts as they are before the build: one made meanwhile is
	 * seen as a change at the next check) */
	char mounts[PIN_MNT_HEX + 1];
	pin_mounts(rootfs, binds, mounts);
	struct tmpl_args a = { .conf = s->conf, .network = network, .rootfs = rootfs, .binds = binds };
	int fd = box_ns_made(CLONE_NEWNS | CLONE_NEWPID, tmpl_make, &a, "building the sandbox's root", err, errlen);
	if (fd < 0)
		return -1;
	tmpl_set(t, fd, network, rootfs, binds, box_mono_ns(), key, mounts);
	/* Only real root pins (not root of a user namespace of our own). */
	if (s->root)
		pin_put(&s->pin, key, fd, mounts);
	return 0;
}

/* Another process's pin of this key, if it may be used: its mounts'
 * digest found to hold less than PIN_TRUST_NS ago, or now (*mounts:
 * computed here once, "" until then; the pin is then vouched for).  Its
 * fd, or -1. */
static int pinned(struct box_sys *s, const char *key, const char *rootfs, char *const *binds, char *mounts,
		  int64_t *age, char pm[PIN_MNT_HEX + 1])
{
	int64_t checked;
	int fd = pin_get(&s->pin, key, age, &checked, pm);
	if (fd < 0 || (pm[0] && checked < PIN_TRUST_NS))
		return fd;
	if (!*mounts)
		pin_mounts(rootfs, binds, mounts);
	if (!strcmp(pm, mounts)) {
		pin_vouch(&s->pin);
		return fd;
	}
	close(fd);
	return -1;
}

/* The mount namespace holding the root for (network, rootfs, binds): ours
 * if its key and mounts still hold (checked each TMPL_CHECK_NS), else one
 * another process pinned (pin.h), else one we build now (and pin).  A pin
 * older than PIN_REFRESH_NS is used all the same and marked stale:
 * box_tmpl_refresh rebuilds it after the jobs, or the next check here
 * does, so that no job waits for a root however long sbx sat idle.
 * TMPL_OWN when this process's first sandbox should rather build its own
 * (below); -1 on failure. */
int box_tmpl_get(struct box_sys *s, bool network, const char *rootfs, char *const *binds, char *err, size_t errlen)
{
	struct box_tmpl *t = NULL, *oldest = &s->tmpl[0];
	for (int i = 0; i < BOX_TMPLS && !t; i++) {
		if (s->tmpl[i].mnt_fd >= 0 && box_same_tree(s->tmpl[i].network, s->tmpl[i].rootfs, s->tmpl[i].binds, network, rootfs, binds))
			t = &s->tmpl[i];
		else if (s->tmpl[i].mnt_fd < 0 || (oldest->mnt_fd >= 0 && s->tmpl[i].born_ns < oldest->born_ns))
			oldest = &s->tmpl[i];
	}
	int64_t now = box_mono_ns();
	if (t && now - t->checked_ns < TMPL_CHECK_NS)
		return t->mnt_fd;
	char key[PIN_KEY_HEX + 1], mounts[PIN_MNT_HEX + 1] = "";
	pin_key(&s->pin, network, rootfs, s->conf->etc, binds, key);
	bool held = false;
	if (t && !strcmp(t->key, key)) {
		pin_mounts(rootfs, binds, mounts);
		held = !strcmp(t->mounts, mounts);
	}
	if (held && now - t->born_ns < PIN_REFRESH_NS) {
		t->checked_ns = now;
		return t->mnt_fd;
	}
	bool again = held && t->stale; /* used once stale already: rebuild now */
	if (!t)
		t = oldest;
	if (s->root) {
		int64_t age;
		char pm[PIN_MNT_HEX + 1];
		int fd = pinned(s, key, rootfs, binds, mounts, &age, pm);
		if (fd >= 0 && again && age >= PIN_REFRESH_NS) {
			close(fd); /* the same old one: nobody has refreshed it */
			fd = -1;
		}
		if (fd >= 0) {
			tmpl_set(t, fd, network, rootfs, binds, now - age, key, pm);
			t->stale = age >= PIN_REFRESH_NS;
			return fd;
		}
	}
	if (!(s->root && s->pin.state > 0) && s->spawned++ == 0) {
		/* Without pins a template pays off from the second sandbox on:
		 * the first builds its root itself, in parallel with us, so a
		 * one-job sbx-run pays nothing for it. */
		return TMPL_OWN;
	}
	if (tmpl_build(s, t, network, rootfs, binds, key, err, errlen) < 0)
		return -1;
	return t->mnt_fd;
}

void box_tmpl_refresh(struct box_sys *s)
{
	for (int i = 0; i < BOX_TMPLS; i++) {
		struct box_tmpl *t = &s->tmpl[i];
		if (t->mnt_fd < 0 || !t->stale)
			continue;
		char err[256], key[PIN_KEY_HEX + 1], mounts[PIN_MNT_HEX + 1] = "", pm[PIN_MNT_HEX + 1];
		pin_key(&s->pin, t->network, t->rootfs, s->conf->etc, t->binds, key);
		/* Another process may have done it since. */
		int64_t age;
		int fd = pinned(s, key, t->rootfs, t->binds, mounts, &age, pm);
		if (fd >= 0) {
			close(fd);
			if (age < PIN_REFRESH_NS)
				continue;
		}
		char *rootfs = t->rootfs, **binds = t->binds;
		t->rootfs = NULL;
		t->binds = NULL;
		if (tmpl_build(s, t, t->network, rootfs, binds, key, err, sizeof err) < 0)
			box_tmpl_clear(t);
		free(rootfs);
		util_strv_free(binds);
	}
}

static pid_t clone_plain(struct clone_args *cl)
{
	pid_t pid = (pid_t)syscall(SYS_clone3, cl, sizeof *cl);
	if (pid < 0 && errno == ENOSYS && !(cl->flags & CLONE_INTO_CGROUP)) {
		/* Kernels before 5.3, and valgrind: the old clone, fork-like (no
		 * stack), pidfd through the parent-tid argument. */
		pid = (pid_t)syscall(SYS_clone, (unsigned long)cl->flags | SIGCHLD, NULL, (int *)(uintptr_t)cl->pidfd,
				     NULL, 0);
	}
	return pid;
}

/* Step into the mount namespace mnt_fd, for a call or two that must be
 * made there, and back: setns resets root and cwd to the namespace's
 * root, so ours are restored on the way back.  *cwd holds ours meanwhile. */
int box_enter_mnt(int mnt_fd, int *cwd)
{
	*cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (setns(mnt_fd, CLONE_NEWNS) < 0) {
		int e = errno;
		if (*cwd >= 0)
			close(*cwd);
		errno = e;
		return -1;
	}
	return 0;
}

void box_leave_mnt(struct box_sys *s, int cwd)
{
	int e = errno;
	if (setns(s->self_mnt_fd, CLONE_NEWNS) < 0 || fchdir(s->root_fd) < 0 || chroot(".") < 0 ||
	    (cwd >= 0 && fchdir(cwd) < 0))
		util_die(EXIT_FAILURE, "cannot return to our own mount namespace: %s", strerror(errno));
	if (cwd >= 0)
		close(cwd);
	errno = e;
}

/* clone3 with the new mount namespace copied from the template's rather
 * than from ours (tmpl_fd TMPL_OWN: from ours). */
pid_t box_clone_from(struct box_sys *s, int tmpl_fd, struct clone_args *cl)
{
	if (tmpl_fd == TMPL_OWN)
		return clone_plain(cl);
	int cwd;
	if (box_enter_mnt(tmpl_fd, &cwd) < 0)
		return -1;
	pid_t pid = clone_plain(cl);
	if (pid == 0)
		return 0;
	box_leave_mnt(s, cwd);
	return pid;
}

/* The run's cgroups with the default limits (a job's own are set when it
 * comes). */
