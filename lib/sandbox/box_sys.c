/* box_sys: the native backend's process-wide part: the system, made once
 * per process (what the machine offers, the cgroup parents, our own user
 * namespace as an ordinary user, the seccomp program), and the pool of
 * warm sandboxes, spawned ahead of their jobs once jobs come in a stream
 * and handed one each by box_start.  See box.c for the whole.
 */
#define _GNU_SOURCE
#include "box_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "filter.h"
#include "kern.h"
#include "ns.h"
#include "proc.h"
#include "util.h"

/* ---- the system --------------------------------------------------------------- */

/* As an ordinary user: become root of a user namespace of our own, so that
 * we may make tmpfs scratch directories; our uid maps to 0 there and to 1000
 * in each sandbox. */
static int enter_own_userns(char *err, size_t errlen)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		snprintf(err, errlen, "user namespaces are not available to this user (%s)", strerror(errno));
		return -1;
	}
	char map[64];
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
	if (box_write_map(getpid(), "setgroups", "deny") < 0 || box_write_map(getpid(), "uid_map", map) < 0) {
		snprintf(err, errlen, "cannot map our uid in a user namespace: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
	if (box_write_map(getpid(), "gid_map", map) < 0) {
		snprintf(err, errlen, "cannot map our gid in a user namespace: %s", strerror(errno));
		return -1;
	}
	/* A slave, not private: what we mount stays ours, and a session's
	 * workspace that an ordinary user's sbx-mcp mounts after we started
	 * still reaches us (lib/mcp/wsfs.c). */
	mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL);
	return 0;
}

int box_sys_init(struct box_sys *s, const struct conf *c, char **argv, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->conf = c;
	s->argv = argv;
	s->root = geteuid() == 0;
	/* Before anything can fail: box_sys_free follows a failed init. */
	s->self_mnt_fd = s->root_fd = s->holder_fd = s->self_net_fd = -1;
	s->spawn_req = s->spawn_rep = s->spawner_rd = s->spawner_wr = -1;
	for (int i = 0; i < BOX_TMPLS; i++)
		s->tmpl[i].mnt_fd = -1;
	slot_init(&s->slots, s->root && c->slots ? (int)c->max_slots : 0, &s->cg);
	/* A held slot keeps a dozen fds (slot.h): room for max_slots of them
	 * beside sessions and connections, within the hard limit.  (Sandboxes
	 * get their own limit: nofile.) */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 4096 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max < 4096 ? nofile.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	s->kern = kern_probe();
	if (!kern_usable(s->kern, err, errlen))
		return -1;
	char cgerr[256] = "";
	/* cgroups before the user namespace: delegation is checked against our
	 * real ids. */
	s->cg_ok = cg_sys_init(&s->cg, c->cgroup_parent, cgerr, sizeof cgerr) == 0;
	if (!s->root) {
		if (enter_own_userns(s->userns_why, sizeof s->userns_why) < 0) {
			snprintf(err, errlen, "%s", s->userns_why);
			return -1;
		}
		s->own_userns = true;
	}
	s->self_mnt_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	s->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->self_mnt_fd < 0 || s->root_fd < 0) {
		snprintf(err, errlen, "cannot open our own mount namespace: %s", strerror(errno));
		return -1;
	}
	if (filter_build(c->seccomp_errno, &s->filter, err, errlen) < 0)
		return -1;
	char adj[16];
	int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, adj, sizeof adj - 1) : -1;
	if (fd >= 0)
		close(fd);
	s->oom_raise = n > 0 && adj[0] == '-';
	return 0;
}

void box_sys_free(struct box_sys *s)
{
	box_pool_drain(s);
	if (s->root)
		box_tmpl_refresh(s);
	for (int i = 0; i < BOX_TMPLS; i++)
		box_tmpl_clear(&s->tmpl[i]);
	if (s->self_mnt_fd >= 0)
		close(s->self_mnt_fd);
	if (s->root_fd >= 0)
		close(s->root_fd);
	if (s->holder_fd >= 0)
		close(s->holder_fd);
	if (s->self_net_fd >= 0)
		close(s->self_net_fd);
	cg_sys_free(&s->cg);
	slot_free(&s->slots);
	free(s->filter.filter);
	memset(s, 0, sizeof *s);
}

/* In the calling thread: a new namespace, its loopback up, as an fd;
 * the thread stays in it.  -1 with err. */
static int netns_here(char *err, size_t errlen)
{
	if (unshare(CLONE_NEWNET) < 0) {
		snprintf(err, errlen, "cannot make a session's network namespace: %s", strerror(errno));
		return -1;
	}
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		snprintf(err, errlen, "cannot open a session's network namespace: %s", strerror(errno));
	else if (ns_loopback_up(err, errlen) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* As an ordinary user we cannot come back to our network namespace once
 * we leave it (it belongs to the initial user namespace, where we hold
 * no capability), so a session's sandboxes are cloned by a thread of ours
 * that goes into the session's namespace and need never come back: the
 * spawner.  It has a filesystem context of its own (setns into a mount
 * namespace refuses a shared one), every signal blocked, and lives as
 * long as the process: a sandbox's init dies with the thread that cloned
 * it (PR_SET_PDEATHSIG follows the thread, not the process).  The main
 * thread waits for each clone it asks for, so the two never run at once:
 * the child copies a process in which the other thread holds no lock. */
struct spawn {
	struct box_sys *s;
	int netns, tmpl_fd;        /* netns -1: make one (box_netns_new), into netns */
	bool socket;               /* a TCP socket in netns, into pid (box_netns_socket) */
	struct clone_args *cl;
	struct child_args *ca;
	pid_t pid;
	int err;
	char *why;                 /* making one: why it failed */
	size_t whylen;
};

static void *spawner_main(void *arg)
{
	struct box_sys *s = arg;
	int shared = unshare(CLONE_FS) < 0 ? errno : 0;
	struct spawn *sp;
	while (util_read_full(s->spawner_rd, &sp, sizeof sp) == (ssize_t)sizeof sp) {
		sp->pid = -1;
		if (sp->netns < 0)
			sp->netns = netns_here(sp->why, sp->whylen);
		else if (sp->socket) {
			if (setns(sp->netns, CLONE_NEWNET) < 0 ||
			    (sp->pid = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
				sp->err = errno;
		} else if (shared)
			sp->err = shared;
		else if (setns(sp->netns, CLONE_NEWNET) < 0)
			sp->err = errno;
		else {
			sp->pid = box_clone_from(sp->s, sp->tmpl_fd, sp->cl);
			if (sp->pid == 0)
				box_init_main(sp->ca);
			sp->err = errno;
		}
		if (util_write_all(s->spawner_wr, "", 1) < 0)
			break;
	}
	return NULL;
}

/* Hand sp to the spawner (started at the first call) and wait for it. */
static int spawner_call(struct box_sys *s, struct spawn *sp)
{
	if (s->spawn_req < 0) {
		int rq[2], rp[2];
		if (pipe2(rq, O_CLOEXEC) < 0)
			return -1;
		if (pipe2(rp, O_CLOEXEC) < 0) {
			close(rq[0]);
			close(rq[1]);
			return -1;
		}
		s->spawner_rd = rq[0];
		s->spawner_wr = rp[1];
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_t t;
		int rc = pthread_create(&t, NULL, spawner_main, s);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rc) {
			close(rq[0]), close(rq[1]), close(rp[0]), close(rp[1]);
			s->spawner_rd = s->spawner_wr = -1;
			errno = rc;
			return -1;
		}
		pthread_detach(t);
		s->spawn_req = rq[1];
		s->spawn_rep = rp[0];
	}
	char c;
	if (util_write_all(s->spawn_req, &sp, sizeof sp) < 0 || util_read_full(s->spawn_rep, &c, 1) != 1)
		return -1;
	return 0;
}

pid_t box_clone_in(struct box_sys *s, int netns, int tmpl_fd, struct clone_args *cl, struct child_args *ca)
{
	struct spawn sp = { .s = s, .netns = netns, .tmpl_fd = tmpl_fd, .cl = cl, .ca = ca, .pid = -1, .err = EIO };
	if (spawner_call(s, &sp) < 0)
		return -1;
	errno = sp.err;
	return sp.pid;
}

/* As root: a namespace owned by a user namespace of its own, made by a
 * child (a user namespace cannot be made by a process with threads, nor
 * entered back): there the child may bring its loopback up, which root
 * in a container without CAP_NET_ADMIN may not in one of the initial
 * user namespace's.  We own that user namespace, so we may enter the
 * network namespace around a clone; a sandbox's init, in a sibling user
 * namespace, holds no capability over it.  No uid is mapped in it: its
 * root is no uid of ours, and a program may write none of its sysctls. */
static int netns_of_child(char *err, size_t errlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot make a session's network namespace: pipe: %s", strerror(errno));
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		char why[128];
		close(p[0]);
		if (proc_child_prepare(parent, SIGKILL) < 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
			snprintf(why, sizeof why, "unshare: %s", strerror(errno));
			(void)!write(p[1], why, strlen(why));
			_exit(1);
		}
		if (ns_loopback_up(why, sizeof why) < 0) {
			(void)!write(p[1], why, strlen(why));
			_exit(1);
		}
		(void)!write(p[1], "", 1);
		for (;;)
			pause(); /* until we have its namespace: then killed */
	}
	close(p[1]);
	char why[128] = "";
	/* One message: its one byte (ready), or why not, then its exit. */
	ssize_t n = -1;
	while (pid > 0 && (n = read(p[0], why, sizeof why - 1)) < 0 && errno == EINTR)
		;
	if (n > 0)
		why[n] = 0;
	close(p[0]);
	int fd = -1;
	if (n == 1 && !why[0]) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
	} else if (n <= 0)
		snprintf(why, sizeof why, "%s", pid < 0 ? strerror(errno) : "its maker died");
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (fd < 0)
		snprintf(err, errlen, "cannot make a session's network namespace: %s", why);
	return fd;
}

/* A session's network namespace.  It belongs to a user namespace of ours
 * (as root a child's, netns_of_child; otherwise our own), where a
 * sandbox's init, in a user namespace of its own, holds no capability:
 * no program of the session can add an address, a route or a rule to
 * it, only use its loopback.  What one run leaves there (a listening socket of a process,
 * TIME_WAIT) the session's next runs see: that is its purpose.  As an
 * ordinary user the program's uid is the namespace owner's root, so its
 * net sysctls are writable to it: they are the session's own, and no other
 * session's runs join it. */
int box_netns_new(struct box_sys *s, char *err, size_t errlen)
{
	if (!s->root) {
		/* (the spawner makes it: we could not come back from it) */
		struct spawn sp = { .s = s, .err = EIO, .netns = -1, .why = err, .whylen = errlen };
		if (spawner_call(s, &sp) < 0) {
			snprintf(err, errlen, "cannot start the thread that makes a session's sandboxes: %s", strerror(errno));
			return -1;
		}
		return sp.netns;
	}
	/* (our own, to come back to after entering a session's: box.c) */
	if (s->self_net_fd < 0 && (s->self_net_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "cannot open our network namespace: %s", strerror(errno));
		return -1;
	}
	return netns_of_child(err, errlen);
}

int box_netns_socket(struct box_sys *s, int netns, char *err, size_t errlen)
{
	int fd = -1, e = 0;
	if (!s->root) {
		/* (the spawner, as for a clone: we could not come back) */
		struct spawn sp = { .s = s, .netns = netns, .socket = true, .pid = -1, .err = EIO };
		if (spawner_call(s, &sp) < 0)
			e = errno;
		else if ((fd = sp.pid) < 0)
			e = sp.err;
	} else if (s->self_net_fd < 0 || setns(netns, CLONE_NEWNET) < 0)
		e = s->self_net_fd < 0 ? EBADF : errno;
	else {
		/* A socket belongs to the namespace it was made in, wherever
		 * it is used after. */
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
			e = errno;
		if (setns(s->self_net_fd, CLONE_NEWNET) < 0)
			abort(); /* (as root we may; else everything after would run there) */
	}
	if (fd < 0)
		snprintf(err, errlen, "cannot make a socket in the session's network namespace: %s", strerror(e));
	return fd;
}

/* ---- the pool ---------------------------------------------------------------- */

void box_pool_refill(struct box_sys *s)
{
	while (s->loop && s->nwarm < s->pool) {
		struct box *b = box_spawn(s, s->loop, false, -1, NULL, NULL);
		if (b->res.status == STAGE_INTERNAL) {
			/* Do not spin: the next job will spawn (and report) itself. */
			box_free(b);
			return;
		}
		b->warm = true;
		/* At the tail: jobs take the oldest first, the one most likely
		 * to have finished making its namespaces and root. */
		struct box **p = &s->warm;
		while (*p)
			p = &(*p)->next;
		*p = b;
		s->nwarm++;
	}
}

void box_pool_unlink(struct box *b)
{
	struct box_sys *s = b->sys;
	for (struct box **p = &s->warm; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			b->next = NULL;
			s->nwarm--;
			return;
		}
}

void box_pool_discard(struct box *b)
{
	box_pool_unlink(b);
	box_free(b);
}

static void drain_warm(struct box_sys *s)
{
	while (s->warm) {
		struct box *b = s->warm;
		box_pool_unlink(b);
		box_free(b);
	}
}

void box_pool(struct box_sys *s, struct loop *l, size_t n, bool one_now)
{
	s->loop = l;
	s->pool = n;
	if (n == 0) {
		drain_warm(s);
		return;
	}
	if (one_now && s->nwarm == 0 && s->started == 0) {
		s->pool = 1;
		box_pool_refill(s);
		s->pool = n;
	}
}

void box_pool_drain(struct box_sys *s)
{
	drain_warm(s);
	while (s->reaping) {
		struct box *b = s->reaping;
		s->reaping = b->next;
		loop_unwatch(b->loop, b->pidfd);
		box_release(b);
	}
}
