/* native: the native backend (box.c's sandboxes) behind backend.h.
 *
 * Theory of operation.  A job's scratch is a detached mount: a fresh,
 * size-limited tmpfs, or a clone of a session's workspace directory.  A
 * sandbox takes the mount it is handed (ns_attach_work moves it into its
 * tree), so each stage needs one of its own: before a compile stage a
 * tmpfs is cloned (the compile stage takes the clone; the run stage the
 * scratch itself, or on kernels before 6.15 a second clone, since only the
 * holder namespace can clone there), and a workspace is opened again
 * before each run stage.  A session's inline code gets a tmpfs of the
 * run's own (backend.h's `own`) for its directory, cloned per stage like a
 * fresh scratch, or for its program file, of which the stage gets a
 * mount; either goes over that name in each stage's workspace: the
 * program, and what the compiler leaves, no other sandbox of the session
 * sees.
 * The supervisor keeps `dir`, through which it
 * writes the job's files and reads what the compile made: a detached
 * mount's files stay reachable through any fd of it, and the whole tmpfs
 * goes with the last one, even if the supervisor is killed.
 *
 * --check asks this backend for the kernel's features, user namespaces,
 * cgroups, seccomp, a trivial program run in a real sandbox, and the
 * shared roots; sbx-run adds the rest (state, languages).
 */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "box.h"
#include "host.h"
#include "kern.h"
#include "layout.h"
#include "probe.h"
#include "util.h"

struct native {
	struct backend be;
	struct box_sys sys;
	struct host host;  /* what kind of host: what to do about what it lacks */
	bool host_known;   /* host probed (only when something is lacking, or for --check) */
	uid_t uid;         /* ours, before box_sys_init entered a user namespace */
};

static const struct host *host_of(struct native *n)
{
	if (!n->host_known)
		host_probe(&n->host, n->uid);
	n->host_known = true;
	return &n->host;
}

struct native_scratch {
	struct bk_scratch base;
	struct box_sys *sys;
	char *workspace;           /* a session's workspace, or NULL: a tmpfs */
	bool exec;
	int stage_mnt[2];          /* a tmpfs's clones for compile, run (-1: none) */
	int next;                  /* the mount the next stage takes */
	char *own;                 /* the run's own directory or file in the workspace, or NULL */
	bool own_dir;
	int own_fd;                /* its tmpfs (-1: none), the supervisor's view */
	int own_mnt[2];            /* its clones for compile, run (-1: none) */
	int own_next;              /* the mount of it the next stage takes */
};

static struct box_sys *sys_of(struct backend *be)
{
	return &((struct native *)be)->sys;
}

static void n_scratch_close(struct bk_scratch *sc);

static struct bk_scratch *n_scratch_open(struct backend *be, const char *workspace, const char *own, bool own_dir,
					 bool exec, uint64_t size, char *err, size_t errlen)
{
	struct box_sys *s = sys_of(be);
	int fd = workspace ? box_workspace(s, workspace, exec, err, errlen) : box_scratch(s, size, err, errlen);
	if (fd < 0)
		return NULL;
	struct native_scratch *n = util_xalloc(sizeof *n);
	*n = (struct native_scratch){ .base = { .be = be, .dir = fd }, .sys = s, .exec = exec, .stage_mnt = { -1, -1 },
				      .next = fd, .own_fd = -1, .own_mnt = { -1, -1 }, .own_next = -1 };
	n->workspace = workspace ? util_strdup(workspace) : NULL;
	if (workspace && own) {
		n->own = util_strdup(own);
		n->own_dir = own_dir;
		if ((n->own_fd = n->own_next = box_scratch(s, size, err, errlen)) < 0) {
			n_scratch_close(&n->base);
			return NULL;
		}
	}
	return &n->base;
}

/* The run's own directory or file for the next stage: its mount point in
 * the workspace (bk_own_placeholder), and a mount of its tmpfs (of the
 * file in it: a program file's run has one stage) for the stage to take. */
static int own_stage(struct native_scratch *n, bool compile, char *err, size_t errlen)
{
	if (bk_own_placeholder(n->base.dir, n->own, n->own_dir, err, errlen) < 0)
		return -1;
	if (!n->own_dir && n->own_mnt[0] >= 0) {
		snprintf(err, errlen, "a program file of the run's own has one stage (job.c requires exec.dir to compile)");
		return -1;
	}
	if (!n->own_dir || compile) {
		if ((n->own_mnt[0] = box_scratch_clone(n->sys, n->own_fd, n->own_dir ? NULL : n->own, &n->own_mnt[1], err,
						       errlen)) < 0)
			return -1;
		n->own_next = n->own_mnt[0];
	} else
		n->own_next = n->own_mnt[1] >= 0 ? n->own_mnt[1] : n->own_fd;
	return 0;
}

static int n_scratch_stage(struct bk_scratch *sc, bool compile, char *err, size_t errlen)
{
	struct native_scratch *n = (struct native_scratch *)sc;
	if (n->workspace && !compile) {
		int fresh = box_workspace(n->sys, n->workspace, n->exec, err, errlen);
		if (fresh < 0)
			return -1;
		close(n->base.dir);
		n->base.dir = n->next = fresh;
	}
	if (n->workspace)
		return n->own ? own_stage(n, compile, err, errlen) : 0;
	if (compile) {
		if ((n->stage_mnt[0] = box_scratch_clone(n->sys, n->base.dir, NULL, &n->stage_mnt[1], err, errlen)) < 0)
			return -1;
		n->next = n->stage_mnt[0];
		return 1;
	}
	n->next = n->stage_mnt[1] >= 0 ? n->stage_mnt[1] : n->base.dir;
	return 0;
}

static int n_scratch_write(struct bk_scratch *sc, const char *path, const char *data, size_t len, mode_t mode)
{
	struct native_scratch *n = (struct native_scratch *)sc;
	const char *mine = bk_own_path(n->own, n->own_dir, path);
	return util_write_beneath(mine ? n->own_fd : n->base.dir, mine ? mine : path, data, len, mode,
				  box_scratch_owner(n->sys));
}

static void n_scratch_close(struct bk_scratch *sc)
{
	struct native_scratch *n = (struct native_scratch *)sc;
	int fds[] = { n->base.dir, n->stage_mnt[0], n->stage_mnt[1], n->own_fd, n->own_mnt[0], n->own_mnt[1] };
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(n->workspace);
	free(n->own);
	free(n);
}

static struct bk_stage *n_start(struct backend *be, struct loop *l, const struct stage_spec *sp, stage_done_fn done,
				void *arg)
{
	const struct native_scratch *n = (const struct native_scratch *)sp->scratch;
	struct box_work w = { .scratch = n ? n->next : -1, .own = n && n->own ? n->own_next : -1, .own_name = n ? n->own : NULL };
	return (struct bk_stage *)box_start(sys_of(be), l, sp, &w, done, arg);
}

static void n_cancel(struct bk_stage *st)
{
	box_cancel((struct box *)st);
}

static int n_netns_new(struct backend *be, char *err, size_t errlen)
{
	return box_netns_new(&((struct native *)be)->sys, err, errlen);
}

static int n_netns_socket(struct backend *be, int netns, char *err, size_t errlen)
{
	return box_netns_socket(&((struct native *)be)->sys, netns, err, errlen);
}

static bool n_signal(struct bk_stage *st, int sig)
{
	return box_signal((struct box *)st, sig);
}

static const struct stage_result *n_result(const struct bk_stage *st)
{
	return box_result((const struct box *)st);
}

static void n_stage_free(struct bk_stage *st)
{
	box_free((struct box *)st);
}

static void n_flush(struct bk_stage *st)
{
	box_flush((struct box *)st);
}

static bool n_compiler_id(struct backend *be, const struct job *j, char *id, size_t len)
{
	char path[4096];
	struct stat st;
	(void)be;
	if (!probe_which(j->rootfs, j->env, j->compile[0], path, sizeof path) || stat(path, &st) < 0)
		return false;
	snprintf(id, len, "%s %llu %llu %lld %lld.%09ld %s", path, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, j->rootfs ? j->rootfs : "/");
	return true;
}

static bool n_lang_ready(struct backend *be, const struct conf_lang *l, jv *info, char *err, size_t errlen, bool *fix)
{
	const char *missing = probe_lang_missing(be->conf, l);
	if (missing)
		snprintf(err, errlen, "\"%s\" is not installed%s%s", missing, l->hint ? "; install it: " : "", l->hint ? l->hint : "");
	(void)info;
	*fix = false;
	return !missing;
}

static void n_pool(struct backend *be, struct loop *l, size_t n, bool one_now)
{
	if (!be->broken)
		box_pool(sys_of(be), l, n, one_now);
}

static void n_drain(struct backend *be)
{
	box_pool_drain(sys_of(be));
}

static int n_pull(struct backend *be, FILE *progress)
{
	(void)be;
	(void)progress;
	return 0; /* the host's runtimes are the languages': nothing to fetch */
}

static void n_free(struct backend *be)
{
	box_sys_free(sys_of(be));
	free(be);
}

/* ---- --check ----------------------------------------------------------------- */

/* What the kernel offers, feature by feature (kern.h), and how scratch
 * directories are cloned on it (box_scratch_clone). */
static jv check_kernel(struct box_sys *s)
{
	unsigned have = s->kern ? s->kern : kern_probe();
	jv a = jv_array();
	for (int i = 0; i < KF_N; i++) {
		const struct kern_feature *f = &kern_features[i];
		jv o = jv_object_set(jv_object(), jv_string("name"), jv_string(f->name));
		o = jv_object_set(o, jv_string("since"), jv_string(f->since));
		o = jv_object_set(o, jv_string("ok"), jv_bool(have & (1u << i)));
		if (!(have & (1u << i)))
			o = jv_object_set(o, jv_string(f->required ? "error" : "fallback"),
					  jv_string(f->required ? "required: the native backend needs Linux " KERN_MIN " or later" : f->fallback));
		a = jv_array_append(a, o);
	}
	if (s->self_mnt_fd >= 0) {
		bool direct = box_scratch_direct(s);
		jv o = jv_object_set(jv_object(), jv_string("name"), jv_string("clone of a detached mount"));
		o = jv_object_set(o, jv_string("since"), jv_string("6.15"));
		o = jv_object_set(o, jv_string("ok"), jv_bool(direct));
		if (!direct)
			o = jv_object_set(o, jv_string("fallback"), jv_string("scratch directories are cloned in a mount namespace of the supervisor's"));
		a = jv_array_append(a, o);
	}
	return a;
}

static jv check_cgroup(struct box_sys *s, const struct host *h, jv *fixes)
{
	jv cg = jv_object_set(jv_object(), jv_string("version"), jv_string(cg_mode_name(s->cg.mode)));
	jv ctl = jv_array();
	if (s->cg.have & CG_MEM)
		ctl = jv_array_append(ctl, jv_string("memory"));
	if (s->cg.have & CG_CPU)
		ctl = jv_array_append(ctl, jv_string("cpu"));
	if (s->cg.have & CG_PIDS)
		ctl = jv_array_append(ctl, jv_string("pids"));
	cg = jv_object_set(cg, jv_string("controllers"), ctl);
	cg = jv_object_set(cg, jv_string("ok"), jv_bool(s->cg_ok));
	if (!s->cg_ok && !s->cg.why[0])
		cg = jv_object_set(cg, jv_string("error"), jv_string("not probed: the sandbox backend is unusable here"));
	else if (!s->cg_ok) {
		char fix[1500], todo[800];
		host_cgroup_fix(h, todo, sizeof todo);
		snprintf(fix, sizeof fix,
			 "cgroups unusable (%s): runs get rlimits only, no memory/CPU/pids limit for the whole process tree; "
			 "to fix: %s", s->cg.why, todo);
		cg = jv_object_set(cg, jv_string("error"), jv_string(s->cg.why));
		*fixes = jv_array_append(*fixes, jv_string(fix));
	} else if (s->cg.partial[0]) {
		cg = jv_object_set(cg, jv_string("missing"), jv_array_append(jv_array(), jv_string("cpu")));
		cg = jv_object_set(cg, jv_string("why"), jv_string(s->cg.partial));
		*fixes = jv_array_append(*fixes, jv_string(s->cg.partial));
	}
	return cg;
}

struct probe {
	struct box *b;
	bool done;
};

static void probe_done(void *arg)
{
	((struct probe *)arg)->done = true;
}

/* A trivial program (true) in a real sandbox: how long it took, and which
 * limits held for it; err is left "" if it succeeded. */
static double probe_true(struct backend *be, unsigned *enforced, char *err, size_t errlen)
{
	struct box_sys *s = sys_of(be);
	struct loop *l = loop_new();
	struct limits lim = be->conf->lim.run;
	lim.timeout_ms = 10000;
	lim.output = 4096;
	char *pargv[] = { "true", NULL };
	char *penv[] = { "PATH=" NS_PATH, NULL };
	struct stage_spec spec = { .argv = pargv, .env = penv, .lim = &lim };
	struct probe p = { 0 };
	double t0 = util_now_ms();
	p.b = box_start(s, l, &spec, &(struct box_work){ .scratch = -1, .own = -1 }, probe_done, &p);
	while (!p.done && loop_once(l, 1000) >= 0)
		;
	double ms = util_now_ms() - t0;
	const struct stage_result *r = box_result(p.b);
	*enforced = r->enforced;
	if (r->status == STAGE_INTERNAL)
		snprintf(err, errlen, "%s", r->error);
	else if (!(r->status == STAGE_EXITED && r->exit_code == 0))
		snprintf(err, errlen, "a trivial program (true) did not succeed in the sandbox (status %d)", (int)r->status);
	box_free(p.b);
	box_pool_drain(s); /* its init may still be exiting, watched on l */
	loop_free(l);
	return ms;
}

/* err, with what to do on this host when the failure is the user
 * namespace's: an ordinary user's sandboxes all live in one, and a host
 * that refuses or cripples it (Ubuntu's AppArmor lets the namespace be
 * made but not used) fails there first.  In place, in err's errlen bytes;
 * returns err. */
static char *with_userns_fix(struct native *n, char *err, size_t errlen)
{
	const struct host *h = host_of(n);
	bool refused = n->sys.userns_why[0] || h->userns_max_zero || (h->root && h->container) ||
		       (!h->root && (h->apparmor_userns || h->userns_clone_off));
	if (refused && !strstr(err, "; to fix: ")) {
		char todo[700];
		host_userns_fix(h, todo, sizeof todo);
		size_t l = strlen(err);
		snprintf(err + l, errlen - l, "; to fix: %s", todo);
	}
	return err;
}

static jv n_check(struct backend *be, bool *degraded)
{
	struct native *n = (struct native *)be;
	struct box_sys *s = &n->sys;
	struct utsname u;
	uname(&u);
	jv o = jv_object_set(jv_object(), jv_string("backend"), jv_string("native"));
	o = jv_object_set(o, jv_string("kernel"), jv_string(u.release));
	o = jv_object_set(o, jv_string("kernel_features"), check_kernel(s));
	o = jv_object_set(o, jv_string("root"), jv_bool(geteuid() == 0 && !s->own_userns));
	jv fixes = jv_array();
	jv userns = jv_object_set(jv_object(), jv_string("ok"), jv_bool(!be->broken));
	if (be->broken) {
		userns = jv_object_set(userns, jv_string("error"), jv_string(be->why));
		fixes = jv_array_append(fixes, jv_string(be->why));
	}
	o = jv_object_set(o, jv_string("user_namespaces"), userns);
	o = jv_object_set(o, jv_string("cgroup"), check_cgroup(s, host_of(n), &fixes));
	o = jv_object_set(o, jv_string("seccomp"), jv_object_set(jv_object(), jv_string("ok"), jv_bool(s->filter.filter != NULL)));

	char why[sizeof be->why] = "";
	double ms = 0;
	unsigned enforced = 0;
	if (be->broken)
		snprintf(why, sizeof why, "%s", be->why);
	else
		ms = probe_true(be, &enforced, why, sizeof why);
	jv pr = jv_object_set(jv_object(), jv_string("ok"), jv_bool(!why[0]));
	pr = jv_object_set(pr, jv_string("ms"), jv_number(round(ms * 10) / 10));
	if (why[0]) {
		pr = jv_object_set(pr, jv_string("error"), jv_string(why));
		if (!be->broken)
			fixes = jv_array_append(fixes, jv_string(with_userns_fix(n, why, sizeof why)));
	}
	o = jv_object_set(o, jv_string("host"), host_json(host_of(n)));
	o = jv_object_set(o, jv_string("probe"), pr);
	/* What a run here holds of its limits: the probe's, which is what
	 * sbx-mcp tells agents in its tools' descriptions. */
	if (!why[0]) {
		o = jv_object_set(o, jv_string("limits_enforced"), backend_enforced_json(enforced));
		o = jv_object_set(o, jv_string("limits_missing"), backend_missing_json(enforced));
	}
	/* Roots shared with later processes (pin.h); the probe tried. */
	jv roots = jv_object_set(jv_object(), jv_string("dir"), jv_string(SBX_RUNDIR "/roots"));
	roots = jv_object_set(roots, jv_string("shared"), jv_bool(s->pin.state > 0));
	if (s->pin.state <= 0)
		roots = jv_object_set(roots, jv_string("why"),
				      jv_string(!s->root ? "only root shares roots between processes"
							 : "the directory is missing, not root's, or writable by others: each process builds its own root"));
	o = jv_object_set(o, jv_string("shared_roots"), roots);
	/* Slots (slot.h): what is kept from one run to the next; the probe
	 * took one. */
	jv sl = jv_object_set(jv_object(), jv_string("dir"), jv_string(SBX_RUNDIR "/slots"));
	bool net = s->slots.state > 0, cgs = net && s->cg_ok && s->cg.keep;
	sl = jv_object_set(sl, jv_string("network"), jv_bool(net));
	sl = jv_object_set(sl, jv_string("cgroups"), jv_bool(cgs));
	if (!net)
		sl = jv_object_set(sl, jv_string("why"),
				   jv_string(!s->conf->slots || !s->conf->max_slots ? "slots = false or max_slots = 0: every run gets a new network namespace and cgroups"
					     : !s->root	  ? "only root keeps slots: every run gets a new network namespace and cgroups"
							  : "the directory is unusable: every run gets a new network namespace and cgroups"));
	else if (!cgs)
		sl = jv_object_set(sl, jv_string("why"), jv_string(s->cg_ok ? s->cg.keep_why : "no cgroups"));
	o = jv_object_set(o, jv_string("slots"), sl);
	o = jv_object_set(o, jv_string("usable"), jv_bool(!be->broken && !why[0]));
	*degraded = !s->cg_ok || s->cg.partial[0];
	return jv_object_set(o, jv_string("fixes"), fixes);
}

static const struct backend_ops native_ops = {
	.scratch_open = n_scratch_open,
	.scratch_stage = n_scratch_stage,
	.scratch_write = n_scratch_write,
	.scratch_close = n_scratch_close,
	.start = n_start,
	.cancel = n_cancel,
	.signal = n_signal,
	.result = n_result,
	.stage_free = n_stage_free,
	.flush = n_flush,
	.compiler_id = n_compiler_id,
	.lang_ready = n_lang_ready,
	.netns_new = n_netns_new,
	.netns_socket = n_netns_socket,
	.pool = n_pool,
	.drain = n_drain,
	.check = n_check,
	.pull = n_pull,
	.free = n_free,
};

struct backend *backend_native(const struct conf *c, char **argv)
{
	struct native *n = util_xalloc(sizeof *n);
	n->be = (struct backend){ .name = "native", .where = "the sandbox", .ops = &native_ops, .conf = c, .kernels = true };
	struct backend *be = &n->be;
	n->uid = geteuid();
	if (box_sys_init(&n->sys, c, argv, be->why, sizeof be->why) < 0) {
		be->broken = true;
		with_userns_fix(n, be->why, sizeof be->why);
	} else if (!n->sys.cg_ok) {
		char todo[800];
		host_cgroup_fix(host_of(n), todo, sizeof todo);
		snprintf(be->warn, sizeof be->warn,
			 "cgroups unusable (%s): memory and pids are limited per process by rlimits only, not for the "
			 "whole process tree, and cpus not at all; to fix: %s", n->sys.cg.why, todo);
	} else if (n->sys.cg.partial[0])
		snprintf(be->warn, sizeof be->warn, "%s", n->sys.cg.partial);
	return be;
}
