/* cg: a control group per sandbox run, for the limits rlimits cannot give
 * (memory of a whole process tree without swap, a CPU quota, a process
 * count) and for the accounting the result reports (memory peak, OOM
 * kills; CPU time comes from init's rusage, see box.c).
 *
 * cg_sys_init detects at run time what the machine offers: cgroup v2 with
 * the memory and pids controllers (and cpu where offered), else the v1
 * hierarchies (memory, cpu, pids), else nothing (an ordinary user without
 * a delegated cgroup), and creates the parent under which every run gets
 * its own group ("r<supervisor pid>-<n>").  On v2 the parent's base is
 * the top of the hierarchy as root, else the caller's own group if it is
 * delegated to it: there exactly the controllers the group offers are
 * enabled, after the group's processes are moved into its leaf "sbx-leaf"
 * (cgroup v2 allows no controllers below a group holding processes).
 * What is missing is in `why` (unusable) or `partial` (no cpu: no CPU
 * quota).  Parents are created once and kept; leftovers of a supervisor
 * that was killed are removed by the next cg_sys_init.
 *
 * A struct cg_sys is process-wide and read-only after init; a struct cg_run
 * belongs to one stage of one job, or (cg_run_keep) to a slot (slot.h),
 * which lends it to one run after another: made once, and before each run
 * checked empty and reset (cg_run_reuse), instead of made and removed.  Both hold O_PATH descriptors of their
 * directories: a run's groups are made, written, read and removed relative
 * to them, not by walking the hierarchy's path again each time (every
 * component of which takes the kernel's kernfs lock, which the network
 * namespaces and cgroups of parallel runs take for writing).
 */
#ifndef SBX_CG_H
#define SBX_CG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum cg_mode { CG_NONE, CG_V1, CG_V2 };

enum {
	CG_MEM = 1,
	CG_CPU = 2,
	CG_PIDS = 4,
};
#define CG_NHIER 3 /* v1 hierarchies used: memory, cpu, pids */

struct cg_sys {
	enum cg_mode mode;
	unsigned have;       /* CG_* bits usable */
	char *dir[CG_NHIER]; /* v1: parent per controller (mem, cpu, pids); v2: dir[0] */
	int dfd[CG_NHIER];   /* dir[i] opened O_PATH; -1 where dir[i] is NULL */
	char why[512];       /* unusable: what is missing (host.h says what to do) */
	char partial[512];   /* usable without cpu: why, and how to fix it; else "" */
	bool keep;           /* groups may be kept from one run to the next (cg_run_keep) */
	char keep_why[200];  /* if not, why */
	unsigned long seq;
};

struct cg_run {
	char *path[CG_NHIER]; /* this run's groups, parallel to cg_sys.dir (for messages) */
	int dfd[CG_NHIER];    /* the same, opened O_PATH; -1 where path[i] is NULL */
	char name[32];        /* "r<pid>-<n>" (or a kept group's name), in each parent */
	bool kept;            /* cg_run_keep's: reused, not removed after a run */
	int peak_fd;          /* kept, v2: memory.peak, reset through this fd; else -1 */
	int64_t mem_base;     /* kept: the charge at this run's start (its peak's base) */
	uint64_t oom_base;    /* kept: OOM kills before this run */
	/* The limits last written (limited: some were), so that a rewrite
	 * of the same values is skipped. */
	bool limited;
	uint64_t memory, pids;
	double cpus;
};

struct cg_stats {
	int64_t mem_peak;    /* < 0 if unknown */
	uint64_t oom_kills;
};

int cg_sys_init(struct cg_sys *s, const char *parent, char *err, size_t errlen);
void cg_sys_free(struct cg_sys *s);
const char *cg_mode_name(enum cg_mode m);

/* An empty run (nothing to destroy). */
void cg_run_init(struct cg_run *r);
/* v2: the run's group, for clone3's CLONE_INTO_CGROUP; else -1. */
int cg_run_clone_fd(const struct cg_sys *s, const struct cg_run *r);
/* Create the groups of one run with its limits; cpus <= 0: no quota. */
int cg_run_create(struct cg_sys *s, struct cg_run *r, uint64_t memory, double cpus, uint64_t pids,
		  char *err, size_t errlen);
/* Set the limits of a group; fresh: just made, with the kernel's defaults
 * (which spares writes that would restate them). */
int cg_run_limits(struct cg_sys *s, struct cg_run *r, bool fresh, uint64_t memory, double cpus, uint64_t pids,
		  char *err, size_t errlen);
/* Groups named `name` kept for one run after another (a slot's): made if
 * missing, else taken over as they are (from an earlier process); each
 * run must pass cg_run_reuse first.  cg_run_destroy removes them. */
int cg_run_keep(struct cg_sys *s, struct cg_run *r, const char *name, char *err, size_t errlen);
/* Before each run in kept groups: true if they are as new ones would be
 * for what a run can see (no process; no charge a run cannot give back:
 * anon, shmem; the rest small) and are reset for the run: memory peak and
 * OOM count counted from now, the CPU quota's runtime refilled (a run that
 * spent it leaves the next none throttled), limits as given.  False: the
 * groups must be discarded (cg_run_destroy), also when their OOM count
 * cannot be read (it would be this run's). */
bool cg_run_reuse(struct cg_sys *s, struct cg_run *r, uint64_t memory, double cpus, uint64_t pids);
/* Kill every process in the run's groups (v2 cgroup.kill; no-op on v1,
 * where the pid namespace does it). */
void cg_run_kill(struct cg_sys *s, struct cg_run *r);
void cg_run_stats(struct cg_sys *s, struct cg_run *r, struct cg_stats *st);
/* Remove the groups (waits briefly for the kernel to finish with them);
 * false if one is still there (a process still in it). */
bool cg_run_destroy(struct cg_sys *s, struct cg_run *r);
/* Let go of the groups, leaving them where they are (kept ones for the
 * next process). */
void cg_run_forget(struct cg_run *r);

#endif
