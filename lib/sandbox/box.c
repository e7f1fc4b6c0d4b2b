/* box: the native sandbox.
 *
 * Theory of operation
 * -------------------
 * A box is made in two steps.  spawn: the supervisor (sbx-run's single
 * thread) calls clone3() for new user, mount and pid namespaces, getting a
 * pidfd.  The child is the sandbox's init, pid 1 of the new pid namespace.
 * It waits on a pipe until the supervisor has written its uid/gid maps,
 * becomes root of its user namespace, makes new ipc, uts and (unless the
 * job has network) net namespaces, mounts its own devpts and procfs,
 * brings up lo, joins the run's cgroups, enters a new cgroup namespace,
 * and waits for its job on a socket.  The supervisor makes those cgroups
 * meanwhile (on v2 before the clone, which puts init there) and sends init
 * their tasks files on that socket (v1).
 *
 * The read-only root (ns.c) is built once, not per sandbox: a short-lived
 * builder process makes it in a mount namespace of its own, whose fd we
 * keep (a "template"); for each sandbox the supervisor setns()es into the
 * template around clone3, so the sandbox's mount namespace is a copy of
 * it, made by the kernel in one step.  The copy belongs to the sandbox's
 * user namespace, so every mount in it is locked (cannot be unmounted to
 * reveal what is below, nor made writable), and the shared tmpfs holding
 * /etc's generated files is read-only in every copy.  Templates are
 * rebuilt after a minute (host files replaced meanwhile, such as a new
 * ld.so.cache, then reach new sandboxes).  As root, templates are also
 * pinned (pin.h), so that the next sbx-run process copies the root the
 * previous one built.  Without pins (as an ordinary user) a process's
 * first sandbox builds its root itself, in parallel with the supervisor,
 * so that a one-job sbx-run does not wait for a template.
 *
 * assign: the supervisor sends the job (argv, environment, rlimits, sizes;
 * the stdin memfd and the scratch mount as SCM_RIGHTS).
 * Because spawn needs nothing of the job but its language's tree, the
 * supervisor spawns ahead of time when jobs come in a stream (the pool,
 * box_sys.c): namespace creation, cgroup joining and root building then
 * happen while the previous job runs.  Each sandbox still serves
 * exactly one job: nothing passes from one run to the next.
 *
 * With its job, init mounts a fresh size-limited tmpfs for /tmp, $HOME and
 * /dev/shm and the scratch directory, loads the seccomp filter (once, so
 * the program inherits it together with no_new_privs), and forks the
 * program.  The program child starts a new session (no controlling
 * terminal, so no TIOCSTI), gets stdin (a sealed memfd), stdout and stderr
 * (pipes to the supervisor) as fds 0-2 and nothing else, its rlimits (file
 * size, open files, no core dumps, stack, processes), drops every
 * capability and the bounding set, switches to uid/gid 1000 and execs the
 * command with a clean environment.  An exec failure is reported on a
 * close-on-exec status pipe.
 *
 * init reaps everything (orphans reparent to it).  When the program exits,
 * init kills every other process of the namespace with kill(-1, SIGKILL),
 * reaps them until it has no child left, and only then reports the
 * program's wait status, CPU time and times on the status pipe: at that
 * report nothing of the job runs any more, and the result is written then,
 * while init exits (its exit tears the namespaces down, ~0.5 ms); the
 * supervisor reaps it and removes the cgroups afterwards, from its loop,
 * and waits for any still exiting before it exits itself.  At a timeout
 * or cancel the supervisor asks init (SIGUSR1) to kill everything, and init
 * reports as above once all is reaped, so the CPU time it reports is the
 * whole tree's.  When init dies without a report (it did not answer within
 * a grace period and the supervisor killed it through the pidfd, or the
 * OOM killer took it), the kernel kills the whole pid namespace and does
 * not let init's exit complete until every process in it is gone: the
 * result then waits until the supervisor has reaped init (and its CPU time
 * is unknown).  Either way no process of the job survives its result,
 * whatever the program did (setsid, double fork, ignored signals).  init
 * also dies with the supervisor (PR_SET_PDEATHSIG), so nothing outlives a
 * killed sbx-run.
 *
 * The supervisor reads both output pipes as data arrives, into bounded
 * head+tail buffers (cap.c), so a flood costs it no more than the limit;
 * arms a timerfd when init says the program started (set-up has its own,
 * longer watchdog); and writes nothing back into the sandbox.  The cgroup
 * gives memory (no swap), CPU quota and pids, and the memory accounting
 * (CPU time comes from init's rusage); rlimits are the second wall, and the
 * only one where cgroups are unavailable.
 *
 * Identities: as root, sandbox uid 0 maps to host uid conf.uid and uid 1000
 * (the program) to conf.uid+1; no privileged host id is mapped at all.  As
 * an ordinary user the supervisor first moves into a user namespace of its
 * own (box_sys_init, box_sys.c) and maps its single uid to 1000 in each
 * sandbox.
 */
#define _GNU_SOURCE
#include "box_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"
#include "ns.h"
#include "proc.h"
#include "state.h"
#include "util.h"

/* After asking init to kill everything at a timeout: then the kernel does.
 * Beyond the cpu quota's period, which may hold init back. */
#define KILL_GRACE_MS 250
#define READ_CHUNK 65536
#define READ_BUDGET (4 * READ_CHUNK) /* per callback, so one flood cannot starve others */

/* ---- the supervisor ---------------------------------------------------------- */

static void finish(struct box *b);

static void mark(struct box *b, const char *what, int64_t t_ns)
{
	/* A warm sandbox's root was built before its job: not this job's time. */
	if (!b->timings || !b->assigned || t_ns < b->t_start)
		return;
	b->res.timings = jv_object_set(b->res.timings, jv_string(what), jv_number((double)(t_ns - b->t_start) / 1e6));
}

static void read_msgs(struct box *b)
{
	for (;;) {
		struct msg m;
		ssize_t n = read(b->status_fd, &m, sizeof m);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof m)
			return; /* EAGAIN, EOF, or a torn message (cannot happen below PIPE_BUF) */
		m.text[sizeof m.text - 1] = 0;
		switch (m.type) {
		case MSG_FAIL:
		case MSG_EXECFAIL:
			if (!b->have_fail) {
				b->fail = m;
				b->have_fail = true;
			}
			break;
		case MSG_RUNNING:
			b->running = true;
			b->t_running = m.v[1];
			mark(b, "program_start", m.v[1]);
			if (!b->timed_out && !b->cancelled) {
				/* The timeout counts from the program's start, in absolute
				 * time: a busy supervisor cannot stretch it. */
				int64_t deadline = m.v[1] + (int64_t)b->timeout_ms * 1000000;
				struct itimerspec its = { .it_value = { deadline / 1000000000, deadline % 1000000000 } };
				timerfd_settime(b->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
			}
			break;
		case MSG_EXIT:
			b->exit_msg = m;
			b->have_exit = true;
			b->cpu_us = m.v[1];
			b->maxrss_kb = m.v[2];
			mark(b, "program_exit", b->t_running + m.v[3]);
			break;
		case MSG_MARK:
			mark(b, m.text, m.v[0]);
			break;
		}
	}
}

static void read_output(struct box *b, int fd, struct cap_buf *cb, bool drain)
{
	char buf[READ_CHUNK];
	size_t budget = drain ? SIZE_MAX : READ_BUDGET;
	while (budget > 0) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN)
				loop_unwatch(b->loop, fd);
			return;
		}
		cap_buf_add(cb, buf, (size_t)n);
		if (b->on_output)
			b->on_output(b->output_arg, cb == &b->res.out ? 1 : 2, buf, (size_t)n);
		budget = (size_t)n < budget ? budget - (size_t)n : 0;
	}
}

static void kill_now(struct box *b)
{
	if (b->pidfd >= 0 && !b->exited) {
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
		cg_run_kill(&b->sys->cg, b->cg);
	}
	if (!b->t_kill)
		b->t_kill = box_mono_ns();
}

void box_flush(struct box *b)
{
	if (b->out_fd >= 0)
		read_output(b, b->out_fd, &b->res.out, false);
	if (b->err_fd >= 0)
		read_output(b, b->err_fd, &b->res.err, false);
}

static void on_out(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	read_output(b, fd, fd == b->out_fd ? &b->res.out : &b->res.err, false);
	(void)l;
	(void)rev;
}

static void on_status(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	read_msgs(b);
	if (rev & (POLLHUP | POLLERR))
		loop_unwatch(l, fd);
	/* init reports the exit only when it has reaped every other process:
	 * nothing of the job runs any more, and the result need not wait for
	 * init's own exit, the namespaces' teardown (~0.5 ms).  box_free
	 * reaps init and removes the cgroups later, from the loop. */
	if (b->have_exit && b->assigned && !b->finished && !b->exited)
		finish(b);
}

static void on_timer(struct loop *l, int fd, short rev, void *arg);

/* Stop a running program: init is asked (SIGUSR1, see box_init_main) to kill
 * and reap everything, and reports as at a normal exit, the CPU time of the
 * whole tree included; the kernel kills init if it has not reported within
 * KILL_GRACE_MS.  Before the program runs, and when the grace is over, the
 * kernel kills at once. */
static void stop(struct box *b)
{
	if (b->running && !b->stopping && !b->exited) {
		struct itimerspec grace = { .it_value = { 0, KILL_GRACE_MS * 1000000L } };
		b->t_kill = box_mono_ns();
		if (syscall(SYS_pidfd_send_signal, b->pidfd, SIGUSR1, NULL, 0) == 0 &&
		    timerfd_settime(b->timer_fd, 0, &grace, NULL) == 0) {
			b->stopping = true;
			loop_watch(b->loop, b->timer_fd, POLLIN, on_timer, b);
			return;
		}
	}
	kill_now(b);
}

static void on_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	uint64_t n;
	(void)!read(fd, &n, sizeof n);
	loop_unwatch(l, fd);
	if (b->exited)
		return;
	if (b->stopping)
		kill_now(b); /* init did not report in time */
	else if (b->running) {
		b->timed_out = true;
		stop(b);
	} else {
		if (!b->have_fail) {
			b->fail.type = MSG_FAIL;
			snprintf(b->fail.text, sizeof b->fail.text, "sandbox set-up took longer than %d s",
				 SETUP_TIMEOUT_MS / 1000);
			b->have_fail = true;
		}
		kill_now(b);
	}
	(void)rev;
}

/* Reap init; false if interrupted (poll or call again). */
static bool reap(struct box *b)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (waitid(P_PIDFD, (id_t)b->pidfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
		return false;
	b->exited = true;
	b->t_reaped = box_mono_ns();
	return true;
}

static void on_exit_ev(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	if (!reap(b))
		return; /* poll again */
	loop_unwatch(l, fd);
	if (b->finished)
		return; /* early, at init's report (on_status) */
	if (!b->assigned) {
		/* A warm sandbox died before it got a job. */
		box_pool_discard(b);
		return;
	}
	mark(b, "init_reaped", box_mono_ns());
	finish(b);
	(void)rev;
}

static void decode_status(struct box *b, struct cg_stats *cs)
{
	struct stage_result *r = &b->res;
	int ws = (int)b->exit_msg.v[0];
	if (b->have_exit) {
		r->duration_ms = (double)b->exit_msg.v[3] / 1e6;
		if (WIFEXITED(ws)) {
			r->status = STAGE_EXITED;
			r->exit_code = WEXITSTATUS(ws);
		} else {
			r->status = STAGE_SIGNALED;
			r->signal = WTERMSIG(ws);
		}
	} else {
		/* init died before reporting: killed with its namespace. */
		r->status = STAGE_SIGNALED;
		r->signal = SIGKILL;
		r->duration_ms = b->running ? (double)((b->t_kill ? b->t_kill : box_mono_ns()) - b->t_running) / 1e6 : 0;
	}
	if (b->cancelled)
		r->status = STAGE_CANCELLED;
	else if (b->timed_out) {
		r->status = STAGE_TIMEOUT;
		r->signal = SIGKILL;
		r->duration_ms = (double)(b->t_kill - b->t_running) / 1e6;
	} else if (cs->oom_kills > 0 && !(r->status == STAGE_EXITED && r->exit_code == 0))
		r->status = STAGE_OOM;
}

static void finish(struct box *b)
{
	struct stage_result *r = &b->res;
	/* Nothing of the sandbox runs any more: nor may its proxy. */
	jv_free(b->res.egress);
	b->res.egress = egress_stop(&b->proxy);
	/* Everything the sandbox wrote is in the pipes now: drain them. */
	read_msgs(b);
	read_output(b, b->out_fd, &r->out, true);
	read_output(b, b->err_fd, &r->err, true);
	loop_unwatch(b->loop, b->status_fd);
	loop_unwatch(b->loop, b->out_fd);
	loop_unwatch(b->loop, b->err_fd);
	loop_unwatch(b->loop, b->timer_fd);
	mark(b, "drained", box_mono_ns());

	struct cg_stats cs = { .mem_peak = -1 };
	if (b->sys->cg_ok)
		cg_run_stats(&b->sys->cg, b->cg, &cs);
	if (b->have_fail && !b->timed_out && !b->cancelled) {
		r->status = STAGE_INTERNAL;
		if (b->fail.type == MSG_EXECFAIL) {
			r->noexec = b->fail.err ? b->fail.err : ENOENT;
			snprintf(r->error, sizeof r->error,
				 "cannot run \"%s\" in the sandbox: %s (is it installed, and on PATH inside the sandbox?)",
				 b->fail.text, strerror(b->fail.err));
		} else if (b->fail.err)
			snprintf(r->error, sizeof r->error, "sandbox set-up failed: %s: %s", b->fail.text, strerror(b->fail.err));
		else
			snprintf(r->error, sizeof r->error, "sandbox set-up failed: %s", b->fail.text);
	} else if (!b->have_exit && !b->running && !b->timed_out && !b->cancelled) {
		r->status = STAGE_INTERNAL;
		snprintf(r->error, sizeof r->error, "the sandbox's init died during set-up");
	} else
		decode_status(b, &cs);
	/* CPU time: the program's tree, as init reaped it.  Unknown when init
	 * died without a report: the kernel's pid-namespace teardown reaps
	 * the rest with SIGCHLD ignored, which counts their time nowhere. */
	r->cpu_ms = b->have_exit ? (double)b->cpu_us / 1000.0 : -1;
	r->mem_peak = cs.mem_peak >= 0 ? cs.mem_peak : b->have_exit && b->maxrss_kb > 0 ? b->maxrss_kb * 1024 : -1;
	b->finished = true;
	b->t_done = box_mono_ns();
	/* The cgroup goes in box_free, after the caller has written the result:
	 * every process is gone already. */
	b->done(b->arg);
}

/* A stage that could not even start still ends through the loop, so the
 * caller's done runs outside box_start. */
static void on_failed_start(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	uint64_t n;
	(void)!read(fd, &n, sizeof n);
	loop_unwatch(l, fd);
	b->finished = true;
	b->done(b->arg);
	(void)rev;
}

/* Kill init through its pidfd and reap it: nothing of the sandbox
 * outlives the call.  Its exit is no event any more: on_exit_ev would
 * take it for init dying by itself, and finish the box with that. */
static void reap_now(struct box *b)
{
	syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
	while (!reap(b))
		;
	loop_unwatch(b->loop, b->pidfd);
}

/* Stop watching and close the box's pipes, timer and socket. */
static void close_io(struct box *b)
{
	int *fds[] = { &b->status_fd, &b->out_fd, &b->err_fd, &b->timer_fd, &b->spec_fd };
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (*fds[i] >= 0) {
			loop_unwatch(b->loop, *fds[i]);
			close(*fds[i]);
			*fds[i] = -1;
		}
}

static void fail_later(struct box *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_later(struct box *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->res.error, sizeof b->res.error, fmt, ap);
	va_end(ap);
	b->res.status = STAGE_INTERNAL;
	/* The half-made sandbox must not outlive this. */
	if (b->pidfd >= 0 && !b->exited)
		reap_now(b);
	if (b->timer_fd < 0)
		b->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec its = { .it_value = { 0, 1 } };
	timerfd_settime(b->timer_fd, 0, &its, NULL);
	loop_watch(b->loop, b->timer_fd, POLLIN, on_failed_start, b);
}

int box_write_map(pid_t pid, const char *file, const char *text)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	return util_write_text(AT_FDCWD, path, text);
}

static int stdin_memfd(const char *data, size_t len)
{
	int fd = memfd_create("sbx-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if ((len && util_write_all(fd, data, len) < 0) || lseek(fd, 0, SEEK_SET) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct box *new_box(struct box_sys *s, struct loop *l)
{
	struct box *b = util_xalloc(sizeof *b);
	b->sys = s;
	b->loop = l;
	b->pid = -1;
	b->pidfd = b->status_fd = b->out_fd = b->err_fd = b->timer_fd = b->spec_fd = -1;
	cg_run_init(&b->own_cg);
	b->cg = &b->own_cg;
	b->slot = -1;
	b->res.timings = jv_null();
	b->res.egress = jv_null();
	b->proxy = (struct egress){ .pid = 0, .log = -1 };
	b->res.cpu_ms = -1;
	b->res.mem_peak = -1;
	b->t_start = box_mono_ns();
	return b;
}

static int make_cgroup(struct box *b)
{
	struct box_sys *s = b->sys;
	const struct limits *dl = &s->conf->lim.run;
	char err[256];
	if (cg_run_create(&s->cg, &b->own_cg, dl->memory, dl->cpus, dl->pids, err, sizeof err) < 0) {
		b->res.status = STAGE_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "%s", err);
		return -1;
	}
	b->t_cgroups = box_mono_ns();
	return 0;
}

/* Tell init which groups to join: on v1 their tasks files, else none. */
static int send_cgroups(struct box *b, int sock)
{
	struct box_sys *s = b->sys;
	int fds[MSG_FDS];
	uint32_t n = 0;
	int rc = 0;
	for (int i = 0; s->cg_ok && s->cg.mode == CG_V1 && i < CG_NHIER && !rc; i++) {
		if (!b->cg->path[i])
			continue;
		if ((fds[n] = openat(b->cg->dfd[i], "tasks", O_WRONLY | O_CLOEXEC)) < 0) {
			b->res.status = STAGE_INTERNAL;
			snprintf(b->res.error, sizeof b->res.error, "cgroup %.400s/tasks: %s", b->cg->path[i], strerror(errno));
			rc = -1;
		} else
			n++;
	}
	if (!rc && box_send_fds(sock, &n, sizeof n, fds, (int)n) < 0) {
		b->res.status = STAGE_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "cannot hand the sandbox its cgroups: %s", strerror(errno));
		rc = -1;
	}
	for (uint32_t i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}

/* Make a sandbox for (network, rootfs, binds) up to "waiting for its job".
 * On failure the box carries the error (res.status STAGE_INTERNAL) and no
 * process. */
struct box *box_spawn(struct box_sys *s, struct loop *l, bool network, int netns, const char *rootfs, char *const *binds)
{
	struct box *b = new_box(s, l);
	b->network = network;
	b->rootfs = rootfs ? util_strdup(rootfs) : NULL;
	b->binds = util_strv_dup(binds);
	char err[256];
	int tmpl_fd = box_tmpl_get(s, network, rootfs, binds, err, sizeof err);
	if (tmpl_fd == -1) {
		b->res.status = STAGE_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "%s", err);
		return b;
	}
	/* No network: init is cloned into a slot's namespace if one is free
	 * (slot.h), instead of making its own, and put in the slot's cgroups
	 * if it keeps them. */
	const struct limits *dl = &s->conf->lim.run;
	int net_fd = -1;
	struct cg_run *kept = NULL;
	if (!network && netns <= 0)
		b->slot = slot_take(&s->slots, &net_fd, dl->memory, dl->cpus, dl->pids, &kept);
	else if (netns > 0)
		net_fd = netns; /* a session's: entered as a slot's is, and left to our own */
	if (kept) {
		b->cg = kept;
		b->t_cgroups = box_mono_ns();
	}
	/* v2: clone3 puts init into the run's group, which must exist first.
	 * v1: the groups are made after the clone, while init makes its
	 * namespaces, and init joins them as soon as they exist. */
	bool cg_first = s->cg_ok && s->cg.mode != CG_V1;
	if (cg_first && !kept && make_cgroup(b) < 0)
		goto give_slot;
	int go[2] = { -1, -1 }, stp[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, sp[2] = { -1, -1 };
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(stp, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		b->res.status = STAGE_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "pipes: %s", strerror(errno));
		goto close_all;
	}
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID;
	struct child_args ca = {
		.sys = s, .network = network, .build_root = tmpl_fd == TMPL_OWN, .rootfs = b->rootfs, .binds = b->binds, .flags = flags,
		.fds = { go[0], stp[1], outp[1], errp[1], sp[1] },
	};
	int pidfd = -1;
	struct clone_args cl = {
		.flags = flags | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = SIGCHLD,
	};
	/* v2: init is born in its group, no migration and none of its
	 * synchronize_rcu. */
	int cgfd = cg_run_clone_fd(&s->cg, b->cg);
	if (cgfd >= 0) {
		cl.flags |= CLONE_INTO_CGROUP;
		cl.cgroup = (uint64_t)cgfd;
	}
	bool joined = b->slot >= 0 || netns > 0;
	ca.slot_net = joined;
	pid_t pid;
	if (netns > 0 && !s->root)
		pid = box_clone_in(s, netns, tmpl_fd, &cl, &ca); /* (box_sys.c: we could not come back) */
	else {
		if (joined && slot_enter(net_fd) < 0) {
			b->res.status = STAGE_INTERNAL;
			snprintf(b->res.error, sizeof b->res.error, "cannot enter a %s network namespace: %s",
				 netns > 0 ? "session's" : "slot's", strerror(errno));
			goto close_all;
		}
		pid = box_clone_from(s, tmpl_fd, &cl);
		if (pid == 0)
			box_init_main(&ca);
		/* Back to our own (box_netns_new opened it for a session's) */
		if (joined && setns(netns > 0 ? s->self_net_fd : s->slots.self_net_fd, CLONE_NEWNET) < 0)
			abort(); /* (as slot_leave: our own namespace, which as root we may always enter) */
	}
	if (pid < 0) {
		b->res.status = STAGE_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "cannot create the sandbox's namespaces: %s (see sbx-run --check)",
			 strerror(errno));
		goto close_all;
	}
	b->pid = pid;
	b->pidfd = pidfd;
	b->t_cloned = box_mono_ns();

	/* Ids first (the child can do nothing useful before), then the OOM
	 * score, then go. */
	char map[128];
	int rc;
	/* As root: init is 0, the program 1000, and nobody (65534, in the
	 * sandbox's passwd) exists too, so that setuid to it fails with EPERM
	 * as on a host rather than EINVAL (unmapped); nothing runs as it. */
	if (s->root)
		snprintf(map, sizeof map, "0 %llu 1\n%d %llu 1\n65534 %llu 1\n", (unsigned long long)state_uid(s->conf, STATE_UID_INIT),
			 NS_UID, (unsigned long long)state_uid(s->conf, STATE_UID_PROGRAM),
			 (unsigned long long)state_uid(s->conf, STATE_UID_NOBODY));
	else
		snprintf(map, sizeof map, "%d 0 1\n", NS_UID);
	rc = box_write_map(pid, "uid_map", map);
	if (!rc)
		rc = box_write_map(pid, "gid_map", map);
	/* The program must be the OOM killer's first choice in its cgroup:
	 * a negative score of ours (say -1000, from a shielded parent) would
	 * pass to it through init, and a memory cgroup with nothing it may
	 * kill stalls until the timeout.  Raising needs no privilege, and only
	 * here: once init has changed ids, its /proc files are the host
	 * root's.  init itself gets no shield: if the OOM killer takes it,
	 * the namespace dies with it and the result still says
	 * memory_limit. */
	const char *what = "set up the sandbox's user namespace";
	if (!rc && s->oom_raise && (rc = box_write_map(pid, "oom_score_adj", "0")) < 0)
		what = "reset the sandbox's OOM score";
	if (rc < 0 || write(go[1], "g", 1) != 1) {
		b->res.status = STAGE_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "cannot %s: %s", what, strerror(errno));
		reap_now(b);
		goto close_all;
	}
	if ((s->cg_ok && !cg_first && !kept && make_cgroup(b) < 0) || send_cgroups(b, sp[0]) < 0) {
		reap_now(b);
		goto close_all;
	}
	close(go[0]);
	close(go[1]);
	close(stp[1]);
	close(outp[1]);
	close(errp[1]);
	close(sp[1]);
	b->status_fd = stp[0];
	b->out_fd = outp[0];
	b->err_fd = errp[0];
	b->spec_fd = sp[0];
	proc_set_nonblock(b->status_fd, true);
	proc_set_nonblock(b->out_fd, true);
	proc_set_nonblock(b->err_fd, true);
	loop_watch(l, b->pidfd, POLLIN, on_exit_ev, b);
	loop_watch(l, b->status_fd, POLLIN, on_status, b);
	return b;

close_all:;
	int all[] = { go[0], go[1], stp[0], stp[1], outp[0], outp[1], errp[0], errp[1], sp[0], sp[1] };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i] >= 0)
			close(all[i]);
give_slot:
	/* Nothing ran in it, but its set-up failed: made anew. */
	slot_give(&s->slots, b->slot, false);
	b->slot = -1;
	b->cg = &b->own_cg;
	return b;
}

static int send_spec(struct box *b, const struct stage_spec *sp, int stdin_fd, const struct box_work *w)
{
	bool own = w->scratch >= 0 && w->own >= 0 && w->own_name;
	struct spec_hdr h = {
		.file_size = sp->lim->file_size, .nofile = sp->lim->nofile, .stack = sp->lim->stack,
		.pids = sp->lim->pids, .memory = sp->lim->memory, .tmpfs = sp->lim->tmpfs,
		.flags = (w->scratch >= 0 ? SPEC_SCRATCH : 0) | (own ? SPEC_OWN : 0) | (sp->tty && sp->chan > 0 ? SPEC_TTY : 0) |
			 (sp->cwd ? SPEC_CWD : 0) |
			 (sp->deps ? SPEC_DEPS : 0) | (sp->egress && sp->egress_listen <= 0 ? SPEC_EGRESS : 0) | (sp->work_exec ? SPEC_WORK_EXEC : 0) |
			 (b->res.enforced & ENF_MEMORY ? 0 : SPEC_RLIMIT_DATA) | (sp->timings ? SPEC_TIMINGS : 0),
	};
	size_t len = 0;
	for (char *const *a = sp->argv; *a; a++, h.argc++)
		len += strlen(*a) + 1;
	for (char *const *e = sp->env; e && *e; e++, h.envc++)
		len += strlen(*e) + 1;
	for (char *const *o = sp->outputs; o && *o && h.outc < NS_MAX_OUTPUTS; o++, h.outc++)
		len += strlen(*o) + 1;
	if (own)
		len += strlen(w->own_name) + 1;
	if (sp->cwd)
		len += strlen(sp->cwd) + 1;
	if (len > SPEC_MAX) {
		errno = E2BIG;
		return -1;
	}
	h.len = (uint32_t)len;
	char *buf = util_xalloc(len + 1), *p = buf;
	for (char *const *a = sp->argv; *a; a++)
		p = stpcpy(p, *a) + 1;
	for (char *const *e = sp->env; e && *e; e++)
		p = stpcpy(p, *e) + 1;
	for (uint32_t i = 0; i < h.outc; i++)
		p = stpcpy(p, sp->outputs[i]) + 1;
	if (own)
		p = stpcpy(p, w->own_name) + 1;
	if (sp->cwd)
		stpcpy(p, sp->cwd);
	int fds[3] = { stdin_fd, w->scratch, w->own };
	/* The socket buffer holds a whole header; the strings follow (the
	 * child reads them as soon as it has the header). */
	int rc = box_send_fds(b->spec_fd, &h, sizeof h, fds, 1 + (w->scratch >= 0) + own);
	if (!rc)
		rc = util_write_all(b->spec_fd, buf, len);
	free(buf);
	return rc;
}

/* An install's init sends the listening socket of its proxy, made in the
 * sandbox's network namespace: the proxy is started with it. */
static void on_egress(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	char c;
	int lfd = -1;
	if (box_recv_fds(fd, &c, 1, &lfd) == 1 && lfd >= 0) {
		char err[256];
		if (!egress_start(&b->proxy, b->loop, lfd, b->egress, &b->egress_lim, b->sys->root ? (int)state_uid(b->sys->conf, STATE_UID_EGRESS) : -1,
				  err, sizeof err))
			util_warn("%s", err);
	}
	loop_unwatch(l, fd);
	close(fd);
	b->spec_fd = -1;
	(void)rev;
}

/* Give a spawned sandbox its job. */
static void assign(struct box *b, const struct stage_spec *sp, const struct box_work *w, stage_done_fn done, void *arg)
{
	struct box_sys *s = b->sys;
	b->assigned = true;
	b->done = done;
	b->arg = arg;
	b->timeout_ms = sp->lim->timeout_ms;
	b->timings = sp->timings;
	b->on_output = sp->on_output;
	b->output_arg = sp->output_arg;
	if (b->timings) {
		jv_free(b->res.timings);
		b->res.timings = jv_object_set(jv_object(), jv_string("warm"), jv_bool(b->warm));
		b->res.timings = jv_object_set(b->res.timings, jv_string("slot"), b->slot >= 0 ? jv_number(b->slot) : jv_null());
		b->res.timings = jv_object_set(b->res.timings, jv_string("slot_cgroups"), jv_bool(b->cg != &b->own_cg));
	}
	if (b->warm)
		b->t_start = box_mono_ns();
	cap_buf_init(&b->res.out, sp->lim->output);
	cap_buf_init(&b->res.err, sp->lim->output);
	b->res.enforced = ENF_NAMESPACES | ENF_SECCOMP | ENF_RLIMITS | ENF_TIMEOUT;
	if (s->cg_ok)
		b->res.enforced |= (s->cg.have & CG_MEM ? ENF_MEMORY : 0) | (s->cg.have & CG_CPU ? ENF_CPU : 0) |
				   (s->cg.have & CG_PIDS ? ENF_PIDS : 0);
	if (!(b->res.enforced & ENF_MEMORY))
		b->res.enforced |= ENF_MEMORY_RLIMIT;
	if (b->res.status == STAGE_INTERNAL) {
		/* spawn's error, reported now (not formatted into itself:
		 * vsnprintf's source and destination must not overlap). */
		char why[sizeof b->res.error];
		snprintf(why, sizeof why, "%s", b->res.error);
		fail_later(b, "%s", why);
		return;
	}
	if (b->exited) {
		fail_later(b, "the sandbox's init died before its job arrived");
		return;
	}
	char err[256];
	/* The job's limits, where they are not the defaults the sandbox was
	 * made with (cg_run_limits writes only what differs). */
	if (s->cg_ok && cg_run_limits(&s->cg, b->cg, false, sp->lim->memory, sp->lim->cpus, sp->lim->pids, err, sizeof err) < 0) {
		fail_later(b, "%s", err);
		return;
	}
	/* A kernel's stdin is its channel: a duplicate goes to init, the
	 * caller keeps its own. */
	int in = sp->chan > 0 ? fcntl(sp->chan, F_DUPFD_CLOEXEC, 3) : stdin_memfd(sp->stdin_data, sp->stdin_len);
	b->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	/* Before the send: init may run ahead of us with the job at once. */
	int64_t t_assigned = box_mono_ns();
	if (in < 0 || b->timer_fd < 0 || send_spec(b, sp, in, w) < 0) {
		int e = errno;
		if (in >= 0)
			close(in);
		fail_later(b, "cannot hand the job to its sandbox: %s", strerror(e));
		return;
	}
	close(in);
	if (sp->egress && sp->egress_listen > 0) {
		/* A session's: the caller made its socket, in the namespace the
		 * sandbox joins; the proxy serves a copy of it from now. */
		char why[256];
		int lfd = fcntl(sp->egress_listen, F_DUPFD_CLOEXEC, 3);
		b->egress_lim = *sp->lim;
		if (lfd < 0 || !egress_start(&b->proxy, b->loop, lfd, sp->egress, &b->egress_lim,
					     s->root ? (int)state_uid(s->conf, STATE_UID_EGRESS) : -1, why, sizeof why))
			util_warn("%s", lfd < 0 ? strerror(errno) : why);
		close(b->spec_fd);
		b->spec_fd = -1;
	} else if (sp->egress) {
		/* init answers with the proxy's listening socket (egress.h). */
		b->egress = sp->egress;
		b->egress_lim = *sp->lim;
		loop_watch(b->loop, b->spec_fd, POLLIN, on_egress, b);
	} else {
		close(b->spec_fd);
		b->spec_fd = -1;
	}
	mark(b, "assigned", t_assigned);
	/* A sandbox made for this job: its supervisor-side steps too. */
	mark(b, "cloned", b->t_cloned);
	mark(b, "cgroups_made", b->t_cgroups);
	if (b->timings)
		b->label = util_strdup(sp->label ? sp->label : "");
	struct itimerspec its = { .it_value = { SETUP_TIMEOUT_MS / 1000, 0 } };
	timerfd_settime(b->timer_fd, 0, &its, NULL);
	loop_watch(b->loop, b->out_fd, POLLIN, on_out, b);
	loop_watch(b->loop, b->err_fd, POLLIN, on_out, b);
	loop_watch(b->loop, b->timer_fd, POLLIN, on_timer, b);
}

/* A finished box whose init is still exiting: reaped here, then its
 * cgroups go. */
static void on_reaped(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	if (!reap(b))
		return; /* poll again */
	loop_unwatch(l, fd);
	for (struct box **p = &b->sys->reaping; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			break;
		}
	box_release(b);
	(void)rev;
}

struct box *box_start(struct box_sys *s, struct loop *l, const struct stage_spec *sp, const struct box_work *work,
		      stage_done_fn done, void *arg)
{
	struct box *b = NULL;
	const char *rootfs = sp->rootfs && *sp->rootfs ? sp->rootfs : NULL;
	/* (a session's sandbox is made in its namespace: never a warm one) */
	for (struct box *w = sp->netns > 0 ? NULL : s->warm; w; w = w->next)
		if (w->loop == l && !w->exited && box_same_tree(w->network, w->rootfs, w->binds, sp->network, rootfs, sp->binds)) {
			b = w;
			box_pool_unlink(b);
			break;
		}
	if (!b)
		b = box_spawn(s, l, sp->network, sp->netns, rootfs, sp->binds);
	assign(b, sp, work, done, arg);
	/* Warm up once jobs come in a stream: a single job gains nothing from a
	 * sandbox made for a successor that never comes. */
	if (++s->started >= 2)
		box_pool_refill(s);
	return b;
}

bool box_signal(struct box *b, int sig)
{
	if (!b->running || b->stopping || b->exited || b->finished)
		return false;
	/* SI_QUEUE is the one code a process may send another with a value:
	 * init reads the signal to forward from it. */
	siginfo_t si = { .si_signo = SIGUSR2, .si_code = SI_QUEUE };
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = sig;
	return syscall(SYS_pidfd_send_signal, b->pidfd, SIGUSR2, &si, 0) == 0;
}

void box_cancel(struct box *b)
{
	if (b->finished || b->exited)
		return;
	b->cancelled = true;
	stop(b);
}

const struct stage_result *box_result(const struct box *b)
{
	return &b->res;
}

void box_free(struct box *b)
{
	if (!b)
		return;
	if (b->pid > 0 && !b->exited && b->finished && b->have_exit && !b->reaping) {
		/* Finished at init's report: init is on its way out by itself.
		 * Keep only what reaping needs; the loop calls on_reaped. */
		close_io(b);
		cap_buf_free(&b->res.out);
		cap_buf_free(&b->res.err);
		b->reaping = true;
		b->next = b->sys->reaping;
		b->sys->reaping = b;
		loop_watch(b->loop, b->pidfd, POLLIN, on_reaped, b);
		return;
	}
	box_release(b);
}

/* Kill and reap init if it still runs, then free everything. */
void box_release(struct box *b)
{
	/* A warm one, shutdown, or an init still exiting when the process
	 * ends (killing it is harmless then). */
	if (b->pid > 0 && !b->exited)
		reap_now(b);
	jv_free(egress_stop(&b->proxy));
	/* Every process of the sandbox is gone now.  A slot goes back for the
	 * next run only after init's own end (or none: a warm one never
	 * ran anything). */
	slot_give(&b->sys->slots, b->slot,
		  !b->assigned || (b->have_exit && !b->timed_out && !b->cancelled && !b->have_fail));
	b->slot = -1;
	close_io(b);
	if (b->pidfd >= 0) {
		loop_unwatch(b->loop, b->pidfd);
		close(b->pidfd);
	}
	if (b->sys->cg_ok)
		cg_run_destroy(&b->sys->cg, &b->own_cg);
	b->cg = &b->own_cg;
	if (b->label && b->t_done && b->t_reaped) {
		char removed[64] = "";
		if (b->sys->cg_ok)
			snprintf(removed, sizeof removed, " and its cgroups removed at %+.3f ms",
				 (double)(box_mono_ns() - b->t_done) / 1e6);
		util_warn("timings: job %s: after its result, its sandbox's init was reaped at %+.3f ms%s", b->label,
			  (double)(b->t_reaped - b->t_done) / 1e6, removed);
	}
	free(b->label);
	cap_buf_free(&b->res.out);
	cap_buf_free(&b->res.err);
	jv_free(b->res.timings);
	jv_free(b->res.egress);
	free(b->rootfs);
	util_strv_free(b->binds);
	free(b);
}
