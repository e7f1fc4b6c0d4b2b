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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include "filter.h"
#include "kern.h"

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
	s->self_mnt_fd = s->root_fd = s->holder_fd = -1;
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
	for (int i = 0; i < BOX_TMPLS; i++)
		box_tmpl_clear(&s->tmpl[i]);
	if (s->self_mnt_fd >= 0)
		close(s->self_mnt_fd);
	if (s->root_fd >= 0)
		close(s->root_fd);
	if (s->holder_fd >= 0)
		close(s->holder_fd);
	cg_sys_free(&s->cg);
	slot_free(&s->slots);
	free(s->filter.filter);
	memset(s, 0, sizeof *s);
}

/* ---- the pool ---------------------------------------------------------------- */

void box_pool_refill(struct box_sys *s)
{
	while (s->loop && s->nwarm < s->pool) {
		struct box *b = box_spawn(s, s->loop, false, NULL, NULL);
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
