#define _GNU_SOURCE
#include "cg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

enum { I_MEM, I_CPU, I_PIDS, I_V2 = CG_NHIER }; /* I_V2: the v2 slot of scan's table */

const char *cg_mode_name(enum cg_mode m)
{
	return m == CG_V2 ? "v2" : m == CG_V1 ? "v1" : "none";
}

static ssize_t read_at(int dfd, const char *file, char *buf, size_t len)
{
	int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = util_read_full(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* The same by path, for the one-time set-up. */
static int write_file(const char *dir, const char *file, const char *val)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	return util_write_text(AT_FDCWD, path, val);
}

static ssize_t read_file(const char *dir, const char *file, char *buf, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	return read_at(AT_FDCWD, path, buf, len);
}

static int open_dir(const char *path)
{
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* "key value" line in a flat-keyed file (memory.events, cpu.stat, …). */
static bool keyed(const char *text, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			*out = strtoull(p + kl + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

/* ---- detection ---------------------------------------------------------- */

struct hier {
	char *mount;   /* where the hierarchy is mounted */
	char *root;    /* the mount's root within the hierarchy */
	char *self;    /* our cgroup within the hierarchy */
};

static void hier_free(struct hier *h)
{
	free(h->mount);
	free(h->root);
	free(h->self);
}

/* Our directory in a hierarchy: mount + (self relative to the mount root). */
static char *self_dir(const struct hier *h)
{
	const char *rel = h->self;
	size_t rl = strlen(h->root);
	if (strcmp(h->root, "/") && !strncmp(rel, h->root, rl))
		rel += rl;
	if (!strcmp(rel, "/"))
		rel = "";
	return util_fmt("%s%s", h->mount, rel);
}

static bool has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += wl)
		if ((p == list || p[-1] == ',' || p[-1] == ' ') && (p[wl] == ',' || p[wl] == ' ' || !p[wl] || p[wl] == '\n'))
			return true;
	return false;
}

/* Find the v1 hierarchy holding each controller (idx into hs) and the v2
 * one (I_V2). */
static void scan(struct hier hs[CG_NHIER + 1])
{
	static const char *ctrls[CG_NHIER] = { "memory", "cpu", "pids" };
	memset(hs, 0, (CG_NHIER + 1) * sizeof *hs);
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint opts [optional…] - fstype source superopts */
		char *fields[6] = { 0 };
		char *save, *tok = strtok_r(line, " ", &save);
		for (int i = 0; tok && i < 6; i++, tok = strtok_r(NULL, " ", &save))
			fields[i] = tok;
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " ", &save);
		char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
		char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
		char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
		if (!fstype || !fields[4])
			continue;
		if (!strcmp(fstype, "cgroup2") && !hs[I_V2].mount) {
			hs[I_V2].mount = util_strdup(fields[4]);
			hs[I_V2].root = util_strdup(fields[3]);
		} else if (!strcmp(fstype, "cgroup") && super) {
			for (int i = 0; i < CG_NHIER; i++)
				if (!hs[i].mount && has_word(super, ctrls[i])) {
					hs[i].mount = util_strdup(fields[4]);
					hs[i].root = util_strdup(fields[3]);
				}
		}
	}
	fclose(f);
	f = fopen("/proc/self/cgroup", "re");
	while (f && getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		char *path = c2 + 1;
		path[strcspn(path, "\n")] = 0;
		const char *list = c1 + 1;
		if (!*list && hs[I_V2].mount && !hs[I_V2].self)
			hs[I_V2].self = util_strdup(path);
		for (int i = 0; i < CG_NHIER; i++)
			if (hs[i].mount && !hs[i].self && has_word(list, ctrls[i]))
				hs[i].self = util_strdup(path);
	}
	if (f)
		fclose(f);
	free(line);
}

/* Remove run groups left by supervisors that no longer exist. */
static void remove_stale(const char *parent)
{
	DIR *d = opendir(parent);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		int pid;
		unsigned long n;
		if (sscanf(e->d_name, "r%d-%lu", &pid, &n) != 2 || pid <= 0)
			continue;
		if (kill(pid, 0) == 0 || errno == EPERM)
			continue;
		char *p = util_fmt("%s/%s", parent, e->d_name);
		rmdir(p);
		free(p);
	}
	closedir(d);
}

static bool writable_dir(const char *dir)
{
	return access(dir, W_OK | X_OK) == 0;
}

/* The controllers (CG_* bits) named in a cgroup.controllers or
 * subtree_control text. */
static unsigned ctl_bits(const char *text)
{
	return (has_word(text, "memory") ? CG_MEM : 0) | (has_word(text, "cpu") ? CG_CPU : 0) |
	       (has_word(text, "pids") ? CG_PIDS : 0);
}

static void ctl_text(unsigned bits, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", bits & CG_MEM ? "+memory " : "", bits & CG_PIDS ? "+pids " : "",
		 bits & CG_CPU ? "+cpu " : "");
	size_t n = strlen(buf);
	if (n && buf[n - 1] == ' ')
		buf[n - 1] = 0;
}

/* cgroup v2's "no internal processes" rule: a group whose children have
 * controllers holds no process itself (the top of the hierarchy
 * excepted).  A group delegated to a user usually holds that user's
 * processes (systemd-run --scope puts the command there, a login shell is
 * there too), so they are moved into a leaf of it, CG_LEAF, which sbx
 * recognizes as its own: an sbx process started there uses the leaf's
 * parent.  Moving stays within the delegated group (its limits still hold
 * for all of them).  0, or -1 with errno set at the first process that
 * could not be moved. */
#define CG_LEAF "sbx-leaf"
static int move_into_leaf(const char *base)
{
	char *leaf = util_fmt("%s/" CG_LEAF, base);
	int rc = mkdir(leaf, 0755) < 0 && errno != EEXIST ? -1 : 0;
	char *procs = util_fmt("%s/cgroup.procs", base);
	FILE *f = rc ? NULL : fopen(procs, "re");
	if (!rc && !f)
		rc = -1;
	char line[32];
	while (!rc && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		/* A process that exited meanwhile is no error. */
		if (*line && write_file(leaf, "cgroup.procs", line) < 0 && errno != ESRCH)
			rc = -1;
	}
	int e = errno;
	if (f)
		fclose(f);
	free(procs);
	free(leaf);
	errno = e;
	return rc;
}

/* Earlier versions moved each ordinary user's sbx-run into a group
 * "sbx-supervisor-PID" of its own and never removed it: remove those that
 * are empty (rmdir refuses the others). */
static void remove_supervisor_groups(const char *base)
{
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "sbx-supervisor-", 15)) {
			char *p = util_fmt("%s/%s", base, e->d_name);
			rmdir(p);
			free(p);
		}
	closedir(d);
}

static int init_v2(struct cg_sys *s, struct hier *h, const char *parent)
{
	/* As root: a parent at the top of the hierarchy, whose subtree_control
	 * is exempt from the no-internal-processes rule.  Otherwise: our own
	 * group, if it was delegated to us (systemd Delegate=yes), or the
	 * group whose leaf sbx moved us into earlier. */
	char *base;
	if (geteuid() == 0)
		base = util_strdup(h->mount);
	else {
		base = self_dir(h);
		size_t bl = strlen(base), ll = strlen("/" CG_LEAF);
		if (bl > ll && !strcmp(base + bl - ll, "/" CG_LEAF))
			base[bl - ll] = 0;
		if (!writable_dir(base)) {
			snprintf(s->why, sizeof s->why,
				 "cgroup %s is not delegated to this user",
				 base);
			free(base);
			return -1;
		}
	}
	/* What the group offers is what its parent delegates to it, not what
	 * the hierarchy has at its top. */
	char ctl[512] = "", want[64];
	if (read_file(base, "cgroup.controllers", ctl, sizeof ctl) < 0) {
		snprintf(s->why, sizeof s->why, "cannot read %s/cgroup.controllers: %s", base, strerror(errno));
		free(base);
		return -1;
	}
	unsigned have = ctl_bits(ctl) & (CG_MEM | CG_CPU | CG_PIDS);
	if (!(have & CG_MEM) || !(have & CG_PIDS)) {
		snprintf(s->why, sizeof s->why,
			 "cgroup %s offers no %s controller (it has \"%.*s\"): its parent must delegate memory and pids "
			 "(systemd: Delegate=yes, or Delegate=memory pids cpu)",
			 base, !(have & CG_MEM) ? "memory" : "pids", (int)strcspn(ctl, "\n"), ctl);
		free(base);
		return -1;
	}
	ctl_text(have, want, sizeof want);
	int rc = write_file(base, "cgroup.subtree_control", want);
	for (int tries = 0; rc < 0 && errno == EBUSY && tries < 3; tries++) {
		if (move_into_leaf(base) < 0) {
			snprintf(s->why, sizeof s->why, "cgroup %s holds processes that cannot be moved into %s/" CG_LEAF ": %s",
				 base, base, strerror(errno));
			free(base);
			return -1;
		}
		rc = write_file(base, "cgroup.subtree_control", want);
	}
	if (rc < 0) {
		snprintf(s->why, sizeof s->why, "cannot enable controllers in %s: %s", base, strerror(errno));
		free(base);
		return -1;
	}
	char *dir = util_fmt("%s/%s", base, parent);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(s->why, sizeof s->why, "cannot create %s: %s", dir, strerror(errno));
		free(dir);
		free(base);
		return -1;
	}
	if (write_file(dir, "cgroup.subtree_control", want) < 0) {
		snprintf(s->why, sizeof s->why, "cannot enable controllers in %s: %s", dir, strerror(errno));
		free(dir);
		free(base);
		return -1;
	}
	if ((s->dfd[0] = open_dir(dir)) < 0) {
		snprintf(s->why, sizeof s->why, "cannot open %s: %s", dir, strerror(errno));
		free(dir);
		free(base);
		return -1;
	}
	if (geteuid() != 0)
		remove_supervisor_groups(base);
	if (!(have & CG_CPU))
		snprintf(s->partial, sizeof s->partial,
			 "cgroup %s offers no cpu controller: no CPU quota (its parent must delegate cpu: systemd Delegate=yes%s)",
			 base, geteuid() == 0 ? "" : ", or run as root");
	s->mode = CG_V2;
	s->dir[0] = dir;
	s->have = have;
	remove_stale(dir);
	free(base);
	return 0;
}

static int init_v1(struct cg_sys *s, struct hier hs[CG_NHIER + 1], const char *parent)
{
	static const unsigned bits[CG_NHIER] = { CG_MEM, CG_CPU, CG_PIDS };
	for (int i = 0; i < CG_NHIER; i++) {
		if (!hs[i].mount || !hs[i].self)
			continue;
		char *self = self_dir(&hs[i]);
		char *dir = util_fmt("%s/%s", self, parent);
		free(self);
		if ((mkdir(dir, 0755) < 0 && errno != EEXIST) || !writable_dir(dir) || (s->dfd[i] = open_dir(dir)) < 0) {
			if (!s->why[0])
				snprintf(s->why, sizeof s->why, "cannot create %s: %s", dir, strerror(errno));
			free(dir);
			continue;
		}
		s->dir[i] = dir;
		s->have |= bits[i];
		remove_stale(dir);
	}
	if (!(s->have & CG_MEM) || !(s->have & CG_PIDS)) {
		if (!s->why[0])
			snprintf(s->why, sizeof s->why, "no usable memory and pids cgroup controllers");
		for (int i = 0; i < CG_NHIER; i++) {
			free(s->dir[i]);
			s->dir[i] = NULL;
			if (s->dfd[i] >= 0)
				close(s->dfd[i]);
			s->dfd[i] = -1;
		}
		s->have = 0;
		return -1;
	}
	if (!(s->have & CG_CPU))
		snprintf(s->partial, sizeof s->partial, "no usable cpu cgroup hierarchy: no CPU quota (mount the cpu controller%s)",
			 geteuid() == 0 ? "" : ", and run as root");
	s->mode = CG_V1;
	return 0;
}

int cg_sys_init(struct cg_sys *s, const char *parent, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	for (int i = 0; i < CG_NHIER; i++)
		s->dfd[i] = -1;
	struct hier hs[CG_NHIER + 1];
	scan(hs);
	int rc = -1;
	if (hs[I_V2].mount && hs[I_V2].self)
		rc = init_v2(s, &hs[I_V2], parent);
	if (rc < 0 && hs[0].mount) {
		char why[sizeof s->why];
		snprintf(why, sizeof why, "%s", s->why);
		s->why[0] = 0;
		rc = init_v1(s, hs, parent);
		if (rc < 0 && why[0] && !s->why[0])
			snprintf(s->why, sizeof s->why, "%s", why);
	}
	if (rc < 0 && !s->why[0])
		snprintf(s->why, sizeof s->why, "no cgroup hierarchy is mounted");
	/* Groups can be kept from one run to the next if each run's memory
	 * peak can still be told apart: v1 resets it; v2 only since Linux
	 * 6.12 (a writable memory.peak), or has none (before 5.19: the peak
	 * comes from rusage either way). */
	if (rc == 0 && s->mode == CG_V2) {
		/* (root opens it for writing whatever its mode: only a write
		 * tells; it resets the peak for this fd's reads alone.) */
		int fd = openat(s->dfd[0], "memory.peak", O_WRONLY | O_CLOEXEC);
		s->keep = fd >= 0 ? util_write_all(fd, "reset\n", 6) == 0 : errno == ENOENT;
		if (fd >= 0)
			close(fd);
		if (!s->keep)
			snprintf(s->keep_why, sizeof s->keep_why,
				 "cgroup v2 before Linux 6.12 cannot reset a group's memory.peak: each run gets new cgroups");
	} else
		s->keep = rc == 0;
	if (rc < 0)
		snprintf(s->keep_why, sizeof s->keep_why, "no cgroups");
	for (int i = 0; i <= CG_NHIER; i++)
		hier_free(&hs[i]);
	if (rc < 0)
		s->mode = CG_NONE;
	return rc;
}

void cg_sys_free(struct cg_sys *s)
{
	for (int i = 0; i < CG_NHIER; i++) {
		if (s->dir[i] && s->dfd[i] >= 0)
			close(s->dfd[i]);
		free(s->dir[i]);
	}
	memset(s, 0, sizeof *s);
	for (int i = 0; i < CG_NHIER; i++)
		s->dfd[i] = -1;
}

/* ---- per run ---------------------------------------------------------------- */

/* force_cpu: write the CPU quota even if unchanged (it refills the
 * quota's runtime). */
static int limits(struct cg_sys *s, struct cg_run *r, bool fresh, bool force_cpu, uint64_t memory, double cpus,
		  uint64_t pids, char *err, size_t errlen)
{
	char val[64];
	long long quota = cpus > 0 ? (long long)(cpus * 100000) : -1;
	if (quota > 0 && quota < 1000)
		quota = 1000;
	bool known = r->limited;
	bool wmem = !known || r->memory != memory, wpids = !known || r->pids != pids;
	bool wcpu = force_cpu || !known || r->cpus != cpus;
	r->limited = false; /* unknown until all are written */
	for (int i = 0; i < CG_NHIER; i++) {
		if (!r->path[i])
			continue;
		const char *what = NULL;
		if (s->mode == CG_V2) {
			snprintf(val, sizeof val, "%llu", (unsigned long long)memory);
			if (wmem && util_write_text(r->dfd[i], "memory.max", val) < 0)
				what = "memory.max";
			else if (wmem && fresh && util_write_text(r->dfd[i], "memory.swap.max", "0") < 0 && errno != ENOENT)
				what = "memory.swap.max";
			snprintf(val, sizeof val, "%llu", (unsigned long long)pids);
			if (!what && wpids && util_write_text(r->dfd[i], "pids.max", val) < 0)
				what = "pids.max";
			if (!what && wcpu && (s->have & CG_CPU)) {
				if (quota > 0)
					snprintf(val, sizeof val, "%lld 100000", quota);
				else
					snprintf(val, sizeof val, "max 100000");
				if (util_write_text(r->dfd[i], "cpu.max", val) < 0)
					what = "cpu.max";
			}
		} else if (i == I_MEM && wmem) {
			/* memsw must stay >= memory: lower memsw last, raise it
			 * first (a fresh group's are both unlimited). */
			snprintf(val, sizeof val, "%llu", (unsigned long long)memory);
			bool swap = true;
			if (!fresh && util_write_text(r->dfd[i], "memory.memsw.limit_in_bytes", val) < 0) {
				swap = errno != ENOENT;
				if (swap && errno != EINVAL)
					what = "memory.memsw.limit_in_bytes";
			}
			if (!what && util_write_text(r->dfd[i], "memory.limit_in_bytes", val) < 0)
				what = "memory.limit_in_bytes";
			/* memsw exists only with swap accounting; equal means no swap. */
			if (!what && swap && util_write_text(r->dfd[i], "memory.memsw.limit_in_bytes", val) < 0 && errno != ENOENT)
				what = "memory.memsw.limit_in_bytes";
		} else if (i == I_PIDS && wpids) {
			snprintf(val, sizeof val, "%llu", (unsigned long long)pids);
			if (util_write_text(r->dfd[i], "pids.max", val) < 0)
				what = "pids.max";
		} else if (i == I_CPU && wcpu) {
			snprintf(val, sizeof val, "%lld", quota);
			/* A fresh group has the default period, 100 ms; a group
			 * limited before has it already. */
			if ((!fresh && !known && util_write_text(r->dfd[i], "cpu.cfs_period_us", "100000") < 0) ||
			    util_write_text(r->dfd[i], "cpu.cfs_quota_us", val) < 0)
				what = "cpu.cfs_quota_us";
		}
		if (what) {
			snprintf(err, errlen, "cgroup %s/%s: %s", r->path[i], what, strerror(errno));
			return -1;
		}
		if (s->mode == CG_V2)
			break;
	}
	r->limited = true;
	r->memory = memory;
	r->cpus = cpus;
	r->pids = pids;
	return 0;
}

int cg_run_limits(struct cg_sys *s, struct cg_run *r, bool fresh, uint64_t memory, double cpus, uint64_t pids,
		  char *err, size_t errlen)
{
	return limits(s, r, fresh, false, memory, cpus, pids, err, errlen);
}

void cg_run_init(struct cg_run *r)
{
	memset(r, 0, sizeof *r);
	for (int i = 0; i < CG_NHIER; i++)
		r->dfd[i] = -1;
	r->peak_fd = -1;
}

int cg_run_clone_fd(const struct cg_sys *s, const struct cg_run *r)
{
	return s->mode == CG_V2 ? r->dfd[0] : -1;
}

/* The groups r->name in each parent; existing: may they exist already? */
static int make_groups(struct cg_sys *s, struct cg_run *r, bool existing, char *err, size_t errlen)
{
	for (int i = 0; i < CG_NHIER; i++) {
		if (!s->dir[i] || (s->mode == CG_V2 && i > 0))
			continue;
		r->path[i] = util_fmt("%s/%s", s->dir[i], r->name);
		if ((mkdirat(s->dfd[i], r->name, 0755) < 0 && (!existing || errno != EEXIST)) ||
		    (r->dfd[i] = openat(s->dfd[i], r->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			snprintf(err, errlen, "cgroup %s: %s", r->path[i], strerror(errno));
			cg_run_destroy(s, r);
			return -1;
		}
	}
	return 0;
}

int cg_run_create(struct cg_sys *s, struct cg_run *r, uint64_t memory, double cpus, uint64_t pids, char *err,
		  size_t errlen)
{
	cg_run_init(r);
	if (s->mode == CG_NONE)
		return 0;
	snprintf(r->name, sizeof r->name, "r%d-%lu", (int)getpid(), ++s->seq);
	if (make_groups(s, r, false, err, errlen) < 0)
		return -1;
	if (cg_run_limits(s, r, true, memory, cpus, pids, err, errlen) < 0) {
		cg_run_destroy(s, r);
		return -1;
	}
	return 0;
}

/* ---- groups kept from one run to the next -------------------------------
 *
 * A slot (slot.h) keeps its groups: each run's limits are rewritten and
 * its statistics reset, instead of a mkdir and an rmdir per hierarchy
 * (and the kernel's work behind them: a memory cgroup's allocation, its
 * offlining and freeing by kworkers).  What a run leaves in a group, and
 * how the next one is kept from seeing it:
 *
 *  - processes: none can be left (the run's pid namespace is gone when
 *    its init is reaped); checked all the same, else the groups go.
 *  - memory still charged: page cache and kernel objects (dentries) the
 *    run brought in, which outlive it (0.6 to 1.1 MiB after a Python, C or
 *    shell run here).  Memory it cannot give back (anon, shmem: a session
 *    workspace's files, mlocked pages) would shrink the next run's limit:
 *    the groups go.  So they do when more than 2 MiB is left (a run that
 *    read libraries no one had read: they stay cached, charged to the old
 *    group, rather than be reclaimed here): what is left is mostly page
 *    cache the next run's limit reclaims before any OOM, and what is not
 *    (kernel objects a live workspace pins) is at most that.  The next
 *    run's peak is counted from what is charged at its start (that charge
 *    is subtracted), so it is its own, as in a new group.  Which host
 *    files an earlier run read is no news: the page cache is shared by all
 *    runs anyway.
 *  - the peak (v1 max_usage_in_bytes; v2 memory.peak, resettable per fd
 *    since Linux 6.12: before, v2 groups are not kept), the OOM kill count
 *    (a baseline), the CPU quota's runtime (rewriting the quota refills it
 *    and unthrottles: a run that spent it leaves the next none).
 *  - the scheduler's memory of the group: its placement (CFS's vruntime
 *    before 6.6, EEVDF's lag after, bounded by a few time slices) and its
 *    load averages (a 32 ms half-life): how much CPU an earlier run used in
 *    its last moments shifts, briefly, how the next one is scheduled.
 */
#define CG_RESIDUE_MAX (2 << 20)

int cg_run_keep(struct cg_sys *s, struct cg_run *r, const char *name, char *err, size_t errlen)
{
	cg_run_init(r);
	if (!s->keep) {
		snprintf(err, errlen, "%s", s->keep_why);
		return -1;
	}
	snprintf(r->name, sizeof r->name, "%s", name);
	r->kept = true;
	if (make_groups(s, r, true, err, errlen) < 0)
		return -1;
	if (s->mode == CG_V2 && util_write_text(r->dfd[0], "memory.swap.max", "0") < 0 && errno != ENOENT) {
		snprintf(err, errlen, "cgroup %s/memory.swap.max: %s", r->path[0], strerror(errno));
		cg_run_destroy(s, r);
		return -1;
	}
	return 0;
}

/* A number file's value, or -1. */
static int64_t read_num(int dfd, const char *file)
{
	char buf[64];
	if (read_at(dfd, file, buf, sizeof buf) <= 0)
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(buf, &end, 10);
	return errno || end == buf || v < 0 ? -1 : v;
}

/* The OOM kills counted in the memory group so far; false if unknown
 * (kernels before 4.13 count none in v1's oom_control). */
static bool oom_count(struct cg_sys *s, struct cg_run *r, uint64_t *v)
{
	char buf[4096];
	*v = 0;
	int mem = s->mode == CG_V2 ? 0 : I_MEM;
	return r->path[mem] && read_at(r->dfd[mem], s->mode == CG_V2 ? "memory.events" : "memory.oom_control", buf, sizeof buf) > 0 &&
	       keyed(buf, "oom_kill", v);
}

/* The memory peak as a run's result reads it (a kept v2 group's through
 * its fd), or -1. */
static int64_t peak_now(struct cg_sys *s, struct cg_run *r)
{
	if (r->kept && s->mode == CG_V2) {
		char buf[64];
		ssize_t n = r->peak_fd >= 0 ? pread(r->peak_fd, buf, sizeof buf - 1, 0) : -1;
		if (n <= 0)
			return -1;
		buf[n] = 0;
		char *end;
		long long v = strtoll(buf, &end, 10);
		return end == buf || v < 0 ? -1 : v;
	}
	return read_num(r->dfd[s->mode == CG_V2 ? 0 : I_MEM], s->mode == CG_V2 ? "memory.peak" : "memory.max_usage_in_bytes");
}

bool cg_run_reuse(struct cg_sys *s, struct cg_run *r, uint64_t memory, double cpus, uint64_t pids)
{
	char buf[8192], err[256];
	uint64_t v;
	if (!r->kept)
		return false;
	int mem = s->mode == CG_V2 ? 0 : I_MEM;
	/* No process, in them or below. */
	if (s->mode == CG_V2) {
		if (read_at(r->dfd[0], "cgroup.events", buf, sizeof buf) <= 0 || !keyed(buf, "populated", &v) || v)
			return false;
	} else
		for (int i = 0; i < CG_NHIER; i++)
			if (r->path[i] && read_at(r->dfd[i], "tasks", buf, sizeof buf) != 0)
				return false;
	/* No charge a run cannot give back, and little else. */
	static const char *const fixed[2][3] = { { "rss", "shmem", "unevictable" }, { "anon", "shmem", "unevictable" } };
	if (read_at(r->dfd[mem], "memory.stat", buf, sizeof buf) <= 0)
		return false;
	for (int k = 0; k < 3; k++)
		if (!keyed(buf, fixed[s->mode == CG_V2][k], &v) || v)
			return false;
	const char *usage = s->mode == CG_V2 ? "memory.current" : "memory.usage_in_bytes";
	int64_t left = read_num(r->dfd[mem], usage);
	if (left < 0 || left > CG_RESIDUE_MAX)
		return false;
	if (limits(s, r, false, true, memory, cpus, pids, err, sizeof err) < 0)
		return false;
	/* The peak from now: v1 sets it to the charge now; v2 does so for
	 * reads through the fd that was written to.  Read back, that is the
	 * charge this run starts with. */
	if (s->mode == CG_V2) {
		if (r->peak_fd < 0 && (r->peak_fd = openat(r->dfd[0], "memory.peak", O_RDWR | O_CLOEXEC)) < 0 && errno != ENOENT)
			return false;
		if (r->peak_fd >= 0 && util_write_all(r->peak_fd, "reset\n", 6) < 0)
			return false;
	} else if (util_write_text(r->dfd[mem], "memory.max_usage_in_bytes", "0") < 0)
		return false;
	r->mem_base = peak_now(s, r);
	if (r->mem_base < 0)
		r->mem_base = left; /* v2 before 5.19: no peak, nothing to subtract from */
	return oom_count(s, r, &r->oom_base);
}

void cg_run_kill(struct cg_sys *s, struct cg_run *r)
{
	if (s->mode == CG_V2 && r->path[0])
		util_write_text(r->dfd[0], "cgroup.kill", "1");
}

void cg_run_stats(struct cg_sys *s, struct cg_run *r, struct cg_stats *st)
{
	st->mem_peak = -1;
	st->oom_kills = 0;
	int mem = s->mode == CG_V2 ? 0 : I_MEM;
	if (s->mode == CG_NONE || !r->path[mem])
		return;
	st->mem_peak = peak_now(s, r);
	/* A kept group's: what this run added.  (Kernels without oom_kill in
	 * v1's oom_control: a hit limit shows only as a SIGKILL, which the
	 * caller checks; groups are not kept there.) */
	oom_count(s, r, &st->oom_kills);
	if (r->kept) {
		st->oom_kills = st->oom_kills > r->oom_base ? st->oom_kills - r->oom_base : 0;
		if (st->mem_peak >= 0)
			st->mem_peak = st->mem_peak > r->mem_base ? st->mem_peak - r->mem_base : 0;
	}
}

bool cg_run_destroy(struct cg_sys *s, struct cg_run *r)
{
	bool gone = true;
	if (r->peak_fd >= 0)
		close(r->peak_fd);
	r->peak_fd = -1;
	r->kept = r->limited = false;
	for (int i = 0; i < CG_NHIER; i++) {
		if (!r->path[i])
			continue;
		if (r->dfd[i] >= 0)
			close(r->dfd[i]);
		r->dfd[i] = -1;
		/* The last task may still be on its way out of the group. */
		int rc, tries = 0;
		while ((rc = unlinkat(s->dfd[i], r->name, AT_REMOVEDIR)) < 0 && errno == EBUSY && tries++ < 200) {
			struct timespec ts = { 0, 500000 };
			nanosleep(&ts, NULL);
		}
		gone &= rc == 0 || errno == ENOENT;
		free(r->path[i]);
		r->path[i] = NULL;
	}
	return gone;
}

void cg_run_forget(struct cg_run *r)
{
	if (r->peak_fd >= 0)
		close(r->peak_fd);
	for (int i = 0; i < CG_NHIER; i++) {
		if (r->dfd[i] >= 0)
			close(r->dfd[i]);
		free(r->path[i]);
	}
	cg_run_init(r);
}
