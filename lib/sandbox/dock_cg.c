/* dock_cg: the docker backend's accounting groups.  Where the daemon uses
 * the cgroupfs driver on this host, each stage's container gets a cgroup
 * parent of its own (a cg_run group, no limits, made by dock.c): the group
 * outlives the container, so its CPU time and memory peak are read here
 * after the container is gone, and then it is removed from every
 * hierarchy the daemon made it in, or kept for another try while still
 * busy.  See dock.c for the whole.
 */
#define _GNU_SOURCE
#include "dock_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Where a cg_run group lives, as the daemon names cgroup parents: the
 * path below the hierarchy's mount point. */
const char *dock_cg_relative(const char *path)
{
	const char *p = strncmp(path, "/sys/fs/cgroup/", 15) ? NULL : path + 14;
	if (p && p[1] && strchr(p + 1, '/')) {
		/* v1: skip the controller's directory */
		char mnt[4096];
		snprintf(mnt, sizeof mnt, "%.*s/cgroup.procs", (int)(p - path), path);
		if (access(mnt, F_OK) != 0)
			p = strchr(p + 1, '/');
	}
	return p;
}

/* The daemon makes a stage's group in every v1 hierarchy (cpuset, blkio,
 * ...), not only in those cg knows: remove it from all of them. */
bool dock_cg_remove_everywhere(const char *rel, int tries)
{
	DIR *dd = opendir("/sys/fs/cgroup");
	if (!dd)
		return true;
	struct dirent *e;
	char p[4096];
	bool all = true;
	snprintf(p, sizeof p, "/sys/fs/cgroup%s", rel);
	if (rmdir(p) < 0 && errno == EBUSY)
		all = false;
	while ((e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "/sys/fs/cgroup/%s%s", e->d_name, rel);
		int t = 0;
		/* The daemon may still be removing the container's own group
		 * inside it. */
		while (rmdir(p) < 0 && errno == EBUSY && t++ < tries)
			usleep(1000);
		if (t > tries)
			all = false;
	}
	closedir(dd);
	return all;
}

/* Groups that were still busy: retried after every stage and at exit. */
void dock_retry_pending(struct dock_sys *d, int tries)
{
	size_t keep = 0;
	for (size_t i = 0; i < d->npending; i++) {
		if (dock_cg_remove_everywhere(d->pending[i], tries))
			free(d->pending[i]);
		else
			d->pending[keep++] = d->pending[i];
	}
	d->npending = keep;
}

static bool read_u64(const char *path, const char *key, uint64_t *v)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *p = buf;
	if (key) {
		p = strstr(buf, key);
		if (!p)
			return false;
		p += strlen(key);
	}
	char *end;
	errno = 0;
	unsigned long long x = strtoull(p, &end, 10);
	if (errno || end == p)
		return false;
	*v = x;
	return true;
}

void dock_pending_add(struct dock_sys *d, const char *rel)
{
	d->pending = util_xrealloc(d->pending, (d->npending + 1) * sizeof *d->pending);
	d->pending[d->npending++] = util_strdup(rel);
}

/* CPU time, memory peak and OOM kills of a stage's group, after its
 * container.  v2's memory.events counts the kills in the group's
 * descendants too (the container's own group, gone by now); v1 counts
 * them only in the group where they happened. */
long long dock_cg_stats(struct dock_sys *d, const char *rel, struct stage_result *res)
{
	char p[4096];
	uint64_t v;
	if (d->cg.mode == CG_V2) {
		snprintf(p, sizeof p, "/sys/fs/cgroup%s/cpu.stat", rel);
		if (read_u64(p, "usage_usec ", &v))
			res->cpu_ms = (double)v / 1000.0;
		snprintf(p, sizeof p, "/sys/fs/cgroup%s/memory.peak", rel);
		if (read_u64(p, NULL, &v))
			res->mem_peak = (int64_t)v;
		snprintf(p, sizeof p, "/sys/fs/cgroup%s/memory.events", rel);
		return read_u64(p, "oom_kill ", &v) ? (long long)v : -1;
	}
	static const char *const acct[] = { "cpuacct", "cpu,cpuacct", "cpuacct,cpu", "cpu" };
	for (size_t i = 0; i < sizeof acct / sizeof acct[0]; i++) {
		snprintf(p, sizeof p, "/sys/fs/cgroup/%s%s/cpuacct.usage", acct[i], rel);
		if (read_u64(p, NULL, &v)) {
			res->cpu_ms = (double)v / 1e6;
			break;
		}
	}
	snprintf(p, sizeof p, "/sys/fs/cgroup/memory%s/memory.max_usage_in_bytes", rel);
	if (read_u64(p, NULL, &v))
		res->mem_peak = (int64_t)v;
	return -1;
}
