/* box: the native sandbox.
 *
 * Theory of operation
 * -------------------
 * The supervisor (sbx-run's single thread) starts a stage with one clone3()
 * that creates new user, mount, pid, ipc, uts and (unless the job has
 * network) net namespaces and returns a pidfd.  The child is the sandbox's
 * init: pid 1 of the new pid namespace.  It waits on a pipe until the
 * supervisor has written its uid/gid maps and put it into the run's cgroup,
 * then becomes root of its user namespace, enters a new cgroup namespace,
 * builds the filesystem (ns.c), brings up lo, and forks the program.
 *
 * The program child starts a new session (no controlling terminal, so no
 * TIOCSTI), gets stdin (a sealed memfd with the job's stdin), stdout and
 * stderr (pipes to the supervisor) as fds 0-2 and nothing else, its rlimits
 * (file size, open files, no core dumps, stack, processes), drops every
 * capability and the bounding set, switches to uid/gid 1000, sets
 * no_new_privs, loads the seccomp filter and execs the command with a clean
 * environment.  An exec failure is reported on a close-on-exec status pipe.
 *
 * init reaps everything (orphans reparent to it).  When the program exits,
 * init kills every other process of the namespace with kill(-1, SIGKILL),
 * reaps them, and reports the program's wait status, CPU time and times on
 * the status pipe.  When init itself dies (at the timeout the supervisor
 * kills it through the pidfd), the kernel kills the whole pid namespace and
 * does not let init's exit complete until every process in it is gone: so
 * when the supervisor has reaped init, the run is over, with no survivor,
 * whatever the program did (setsid, double fork, ignored signals).  init
 * also dies with the supervisor (PR_SET_PDEATHSIG), so nothing outlives a
 * killed sbx-run.
 *
 * The supervisor reads both output pipes as data arrives, into bounded
 * head+tail buffers (cap.c), so a flood costs it no more than the limit;
 * arms a timerfd when init says the program started (setup has its own,
 * longer watchdog); and writes nothing back into the sandbox.  The cgroup
 * gives memory (no swap), CPU quota and pids, and the accounting; rlimits
 * are the second wall, and the only one where cgroups are unavailable.
 *
 * Identities: as root, sandbox uid 0 maps to host uid conf.uid and uid 1000
 * (the program) to conf.uid+1; no privileged host id is mapped at all.  As
 * an ordinary user the supervisor first moves into a user namespace of its
 * own (box_sys_init) and maps its single uid to 1000 in each sandbox.
 */
#define _GNU_SOURCE
#include "box.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdarg.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "filter.h"
#include "ns.h"
#include "proc.h"
#include "util.h"

#define SETUP_TIMEOUT_MS 15000
#define READ_CHUNK 65536
#define READ_BUDGET (4 * READ_CHUNK) /* per callback, so one flood cannot starve others */

extern char **environ;

/* ---- messages from the sandbox's init ------------------------------------- */

enum { MSG_FAIL = 1, MSG_EXECFAIL, MSG_RUNNING, MSG_EXIT, MSG_MARK };

struct msg {
	uint32_t type;
	int32_t err;
	int64_t v[4];
	char text[200];
};

static void msg_send(int fd, uint32_t type, int err, int64_t v0, int64_t v1, int64_t v2, int64_t v3, const char *text)
{
	struct msg m = { .type = type, .err = err, .v = { v0, v1, v2, v3 } };
	if (text)
		snprintf(m.text, sizeof m.text, "%s", text);
	/* < PIPE_BUF: atomic */
	(void)!write(fd, &m, sizeof m);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the box ---------------------------------------------------------------- */

struct box {
	struct box_sys *sys;
	struct loop *loop;
	box_done_fn done;
	void *arg;
	pid_t pid;
	int pidfd, status_fd, out_fd, err_fd, timer_fd;
	struct cg_run cg;
	struct box_result res;
	uint64_t timeout_ms;
	int64_t t_start, t_running, t_exit, t_kill;
	bool running, exited, finished, timed_out, cancelled;
	struct msg fail, exit_msg;
	bool have_fail, have_exit;
	int64_t cpu_us, maxrss_kb;
	bool timings;
};

/* Fixed fd numbers inside the child after proc_keep_fds. */
enum { K_GO, K_STATUS, K_STDIN, K_OUT, K_ERR, K_SCRATCH, K_N };
#define KFD(i) (3 + (i))

struct child_args {
	struct box_sys *sys;
	const struct box_spec *spec;
	int fds[K_N];
	unsigned long flags;
};

/* ---- inside the sandbox: the program ------------------------------------- */

static void set_rlimit(int res, uint64_t v)
{
	struct rlimit rl = { .rlim_cur = v, .rlim_max = v };
	setrlimit(res, &rl);
}

static _Noreturn void program_main(const struct child_args *a)
{
	const struct box_spec *sp = a->spec;
	const struct job_limits *lim = sp->lim;
	int st = KFD(K_STATUS);
	char what[160];

	/* A new session: no controlling terminal, its own process group. */
	setsid();
	if (dup2(KFD(K_STDIN), 0) < 0 || dup2(KFD(K_OUT), 1) < 0 || dup2(KFD(K_ERR), 2) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "set up fds 0-2");
		_exit(127);
	}
	/* Only 0-2 and the (close-on-exec) status pipe survive. */
	int keep = fcntl(st, F_DUPFD_CLOEXEC, 3);
	if (keep != 3) {
		dup3(keep, 3, O_CLOEXEC);
		close(keep);
	}
	st = 3;
	syscall(SYS_close_range, 4u, ~0u, 0);

	/* Signals as a fresh process has them: the supervisor ignores SIGPIPE
	 * and blocks others, which programs must not inherit. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);

	/* rlimits: the second wall (the first where cgroups are missing). */
	set_rlimit(RLIMIT_CORE, 0);
	set_rlimit(RLIMIT_FSIZE, lim->file_size);
	set_rlimit(RLIMIT_NOFILE, lim->nofile);
	set_rlimit(RLIMIT_STACK, lim->stack);
	set_rlimit(RLIMIT_NPROC, lim->pids);
	if (!a->sys->cg_ok || !(a->sys->cg.have & CG_MEM))
		set_rlimit(RLIMIT_DATA, lim->memory);
	/* init is shielded from the OOM killer; the program is not. */
	int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (oom >= 0) {
		(void)!write(oom, "0", 1);
		close(oom);
	}

	/* Drop privilege: bounding set, then ids (which clears the capability
	 * sets), then whatever capset still shows, ambient included. */
	for (int cap = 0; cap <= 63; cap++)
		prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (a->sys->root)
		setgroups(0, NULL);
	if (setresgid(NS_UID, NS_UID, NS_UID) < 0 || setresuid(NS_UID, NS_UID, NS_UID) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "switch to the sandbox user");
		_exit(127);
	}
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "drop capabilities");
		_exit(127);
	}
	if (filter_load(&a->sys->filter) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "load the seccomp filter");
		_exit(127);
	}
	environ = (char **)sp->env;
	execvp(sp->argv[0], sp->argv);
	snprintf(what, sizeof what, "%s", sp->argv[0]);
	msg_send(st, MSG_EXECFAIL, errno, 0, 0, 0, 0, what);
	_exit(127);
}

/* ---- inside the sandbox: init --------------------------------------------- */

static _Noreturn void init_main(struct child_args *a)
{
	char err[256];
	int st;
	/* Die with the supervisor; then wait for it to finish our set-up (ids,
	 * cgroup).  EOF on the go pipe means it is gone. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (proc_keep_fds(a->fds, K_N) < 0)
		_exit(120);
	st = KFD(K_STATUS);
	char go;
	if (read(KFD(K_GO), &go, 1) != 1)
		_exit(121);
	close(KFD(K_GO));
	proc_set_title(a->sys->argv, "sbx-init");
	bool timings = a->spec->timings;
	if (timings)
		msg_send(st, MSG_MARK, 0, mono_ns(), 0, 0, 0, "init_go");

	if (a->sys->root) {
		if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0 || setgroups(0, NULL) < 0) {
			msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "become root of the user namespace");
			_exit(122);
		}
		/* Changing ids cleared the parent-death signal: set it again, then
		 * make sure the supervisor did not die in between (its end of the
		 * status pipe would be gone). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		struct pollfd pf = { .fd = st, .events = POLLOUT };
		if (poll(&pf, 1, 0) == 1 && (pf.revents & POLLERR))
			_exit(121);
	}
	/* The cgroup namespace is entered after the supervisor moved us into
	 * the run's group, so that group is our "/". */
	if (unshare(CLONE_NEWCGROUP) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "new cgroup namespace");
		_exit(122);
	}
	sethostname("sandbox", 7);
	const struct box_spec *sp = a->spec;
	struct ns_root root = {
		.rootfs = sp->rootfs ? sp->rootfs : "",
		.etc = a->sys->conf->etc,
		.binds = sp->binds,
		.scratch_fd = a->fds[K_SCRATCH] >= 0 ? KFD(K_SCRATCH) : -1,
		.workspace = sp->workspace,
		.scratch_rw = sp->scratch_rw,
		.tmpfs_bytes = sp->lim->tmpfs,
		.network = sp->network,
	};
	if (ns_build_root(&root, err, sizeof err) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	if (a->fds[K_SCRATCH] >= 0)
		close(KFD(K_SCRATCH));
	if (timings)
		msg_send(st, MSG_MARK, 0, mono_ns(), 0, 0, 0, "root_built");
	if ((a->flags & CLONE_NEWNET) && ns_loopback_up(err, sizeof err) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}

	int64_t t0 = mono_ns();
	pid_t prog = fork();
	if (prog < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "fork the program");
		_exit(124);
	}
	if (prog == 0)
		program_main(a);
	close(KFD(K_STDIN));
	close(KFD(K_OUT));
	close(KFD(K_ERR));
	msg_send(st, MSG_RUNNING, 0, prog, t0, 0, 0, NULL);
	/* init runs nothing but wait and kill from here on. */
	filter_load(&a->sys->filter);

	int status = 0;
	int64_t t1 = 0;
	bool prog_done = false;
	for (;;) {
		int s;
		pid_t p = waitpid(-1, &s, __WALL);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: everyone is reaped */
		}
		if (p == prog && !prog_done) {
			prog_done = true;
			status = s;
			t1 = mono_ns();
			/* The program is done: so is everything it started. */
			kill(-1, SIGKILL);
		}
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	int64_t cpu_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
			 (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
	msg_send(st, MSG_EXIT, 0, status, cpu_us, ru.ru_maxrss, t1 - t0, NULL);
	_exit(0);
}

/* ---- the supervisor ---------------------------------------------------------- */

static void finish(struct box *b);

static void mark(struct box *b, const char *what, int64_t t_ns)
{
	if (!b->timings)
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
		budget = (size_t)n < budget ? budget - (size_t)n : 0;
	}
}

static void kill_now(struct box *b)
{
	if (b->pidfd >= 0 && !b->exited) {
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
		cg_run_kill(&b->sys->cg, &b->cg);
	}
	b->t_kill = mono_ns();
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
	(void)fd;
}

static void on_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	uint64_t n;
	(void)!read(fd, &n, sizeof n);
	loop_unwatch(l, fd);
	if (b->exited)
		return;
	if (b->running)
		b->timed_out = true;
	else if (!b->have_fail) {
		b->fail.type = MSG_FAIL;
		snprintf(b->fail.text, sizeof b->fail.text, "sandbox set-up took longer than %d s", SETUP_TIMEOUT_MS / 1000);
		b->have_fail = true;
	}
	kill_now(b);
	(void)rev;
}

static void on_exit_ev(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (waitid(P_PIDFD, (id_t)b->pidfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
		return; /* poll again */
	b->exited = true;
	loop_unwatch(l, fd);
	mark(b, "init_reaped", mono_ns());
	finish(b);
	(void)rev;
}

static void decode_status(struct box *b, struct cg_stats *cs)
{
	struct box_result *r = &b->res;
	int ws = (int)b->exit_msg.v[0];
	if (b->have_exit) {
		r->duration_ms = (double)b->exit_msg.v[3] / 1e6;
		if (WIFEXITED(ws)) {
			r->status = BOX_EXITED;
			r->exit_code = WEXITSTATUS(ws);
		} else {
			r->status = BOX_SIGNALED;
			r->signal = WTERMSIG(ws);
		}
	} else {
		/* init died before reporting: killed with its namespace. */
		r->status = BOX_SIGNALED;
		r->signal = SIGKILL;
		r->duration_ms = b->running ? (double)((b->t_kill ? b->t_kill : mono_ns()) - b->t_running) / 1e6 : 0;
	}
	if (b->cancelled)
		r->status = BOX_CANCELLED;
	else if (b->timed_out) {
		r->status = BOX_TIMEOUT;
		r->signal = SIGKILL;
		r->duration_ms = (double)(b->t_kill - b->t_running) / 1e6;
	} else if (cs->oom_kills > 0 && !(r->status == BOX_EXITED && r->exit_code == 0))
		r->status = BOX_OOM;
}

static void finish(struct box *b)
{
	struct box_result *r = &b->res;
	/* Everything the sandbox wrote is in the pipes now: drain them. */
	read_msgs(b);
	read_output(b, b->out_fd, &r->out, true);
	read_output(b, b->err_fd, &r->err, true);
	loop_unwatch(b->loop, b->status_fd);
	loop_unwatch(b->loop, b->out_fd);
	loop_unwatch(b->loop, b->err_fd);
	loop_unwatch(b->loop, b->timer_fd);
	mark(b, "drained", mono_ns());

	struct cg_stats cs = { .cpu_ms = -1, .mem_peak = -1 };
	if (b->sys->cg_ok) {
		cg_run_stats(&b->sys->cg, &b->cg, &cs);
		cg_run_destroy(&b->sys->cg, &b->cg);
		mark(b, "cgroup_removed", mono_ns());
	}
	if (b->have_fail && !b->timed_out && !b->cancelled) {
		r->status = BOX_INTERNAL;
		if (b->fail.type == MSG_EXECFAIL)
			snprintf(r->error, sizeof r->error,
				 "cannot run \"%s\" in the sandbox: %s (is it installed, and on PATH inside the sandbox?)",
				 b->fail.text, strerror(b->fail.err));
		else if (b->fail.err)
			snprintf(r->error, sizeof r->error, "sandbox set-up failed: %s: %s", b->fail.text, strerror(b->fail.err));
		else
			snprintf(r->error, sizeof r->error, "sandbox set-up failed: %s", b->fail.text);
	} else
		decode_status(b, &cs);
	r->cpu_ms = cs.cpu_ms >= 0 ? cs.cpu_ms : b->have_exit ? (double)b->cpu_us / 1000.0 : -1;
	r->mem_peak = cs.mem_peak >= 0 ? cs.mem_peak : b->have_exit && b->maxrss_kb > 0 ? b->maxrss_kb * 1024 : -1;
	b->finished = true;
	b->done(b, b->arg);
}

/* A stage that could not even start still ends through the loop, so the
 * caller's done runs outside box_start. */
static void on_failed_start(struct loop *l, int fd, short rev, void *arg)
{
	struct box *b = arg;
	uint64_t n;
	(void)!read(fd, &n, sizeof n);
	loop_unwatch(l, fd);
	b->exited = true;
	b->finished = true;
	b->done(b, b->arg);
	(void)rev;
}

static void start_failed(struct box *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void start_failed(struct box *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->res.error, sizeof b->res.error, fmt, ap);
	va_end(ap);
	b->res.status = BOX_INTERNAL;
	if (b->timer_fd < 0)
		b->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec its = { .it_value = { 0, 1 } };
	timerfd_settime(b->timer_fd, 0, &its, NULL);
	loop_watch(b->loop, b->timer_fd, POLLIN, on_failed_start, b);
}

static int write_map(pid_t pid, const char *file, const char *text)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = util_write_all(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return rc;
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

struct box *box_start(struct box_sys *s, struct loop *l, const struct box_spec *sp, box_done_fn done, void *arg)
{
	struct box *b = util_xalloc(sizeof *b);
	b->sys = s;
	b->loop = l;
	b->done = done;
	b->arg = arg;
	b->pid = -1;
	b->pidfd = b->status_fd = b->out_fd = b->err_fd = b->timer_fd = -1;
	b->timeout_ms = sp->lim->timeout_ms;
	b->timings = sp->timings;
	b->res.timings = sp->timings ? jv_object() : jv_null();
	b->res.cpu_ms = -1;
	b->res.mem_peak = -1;
	cap_buf_init(&b->res.out, sp->lim->output);
	cap_buf_init(&b->res.err, sp->lim->output);
	b->t_start = mono_ns();
	b->res.enforced = ENF_NAMESPACES | ENF_SECCOMP | ENF_RLIMITS | ENF_TIMEOUT;

	char err[256];
	if (s->cg_ok) {
		if (cg_run_create(&s->cg, &b->cg, sp->lim->memory, sp->lim->cpus, sp->lim->pids, err, sizeof err) < 0) {
			start_failed(b, "%s", err);
			return b;
		}
		b->res.enforced |= (s->cg.have & CG_MEM ? ENF_MEMORY : 0) | (s->cg.have & CG_CPU ? ENF_CPU : 0) |
				   (s->cg.have & CG_PIDS ? ENF_PIDS : 0);
	}
	if (!(b->res.enforced & ENF_MEMORY))
		b->res.enforced |= ENF_MEMORY_RLIMIT;
	mark(b, "cgroup_created", mono_ns());

	int go[2] = { -1, -1 }, stp[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int in = -1;
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(stp, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0 ||
	    pipe2(errp, O_CLOEXEC) < 0 || (in = stdin_memfd(sp->stdin_data, sp->stdin_len)) < 0 ||
	    (b->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0) {
		start_failed(b, "pipes: %s", strerror(errno));
		goto close_all;
	}
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
			      (sp->network ? 0 : CLONE_NEWNET);
	struct child_args ca = {
		.sys = s, .spec = sp, .flags = flags,
		.fds = { go[0], stp[1], in, outp[1], errp[1], sp->scratch_fd },
	};
	int pidfd = -1;
	struct clone_args cl = {
		.flags = flags | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = SIGCHLD,
	};
	pid_t pid = (pid_t)syscall(SYS_clone3, &cl, sizeof cl);
	if (pid == 0)
		init_main(&ca);
	if (pid < 0) {
		int e = errno;
		start_failed(b, "cannot create the sandbox's namespaces: %s (see sbx-run --check)", strerror(e));
		goto close_all;
	}
	b->pid = pid;
	b->pidfd = pidfd;
	mark(b, "cloned", mono_ns());

	/* Ids first (the child cannot do anything useful before), then the
	 * cgroup, then OOM shielding of init, then go. */
	char map[128];
	int rc;
	if (s->root) {
		snprintf(map, sizeof map, "0 %llu 1\n%d %llu 1\n", (unsigned long long)s->conf->uid, NS_UID,
			 (unsigned long long)s->conf->uid + 1);
		rc = write_map(pid, "uid_map", map);
		if (!rc)
			rc = write_map(pid, "gid_map", map);
	} else {
		snprintf(map, sizeof map, "%d 0 1\n", NS_UID);
		rc = write_map(pid, "uid_map", map);
		if (!rc)
			rc = write_map(pid, "gid_map", map);
	}
	if (rc < 0) {
		start_failed(b, "cannot write the sandbox's uid/gid map: %s", strerror(errno));
		kill_now(b);
		goto close_all;
	}
	if (s->cg_ok && cg_run_attach(&s->cg, &b->cg, pid) < 0) {
		start_failed(b, "cannot move the sandbox into its cgroup: %s", strerror(errno));
		kill_now(b);
		goto close_all;
	}
	if (s->root)
		write_map(pid, "oom_score_adj", "-1000");
	mark(b, "mapped", mono_ns());
	if (write(go[1], "g", 1) != 1) {
		start_failed(b, "cannot start the sandbox: %s", strerror(errno));
		kill_now(b);
		goto close_all;
	}
	close(go[0]);
	close(go[1]);
	close(stp[1]);
	close(outp[1]);
	close(errp[1]);
	close(in);
	b->status_fd = stp[0];
	b->out_fd = outp[0];
	b->err_fd = errp[0];
	proc_set_nonblock(b->status_fd, true);
	proc_set_nonblock(b->out_fd, true);
	proc_set_nonblock(b->err_fd, true);
	struct itimerspec its = { .it_value = { SETUP_TIMEOUT_MS / 1000, 0 } };
	timerfd_settime(b->timer_fd, 0, &its, NULL);
	loop_watch(l, b->pidfd, POLLIN, on_exit_ev, b);
	loop_watch(l, b->status_fd, POLLIN, on_status, b);
	loop_watch(l, b->out_fd, POLLIN, on_out, b);
	loop_watch(l, b->err_fd, POLLIN, on_out, b);
	loop_watch(l, b->timer_fd, POLLIN, on_timer, b);
	return b;

close_all:
	/* start_failed already armed the timer; everything else goes. */
	if (b->pid > 0) {
		/* Reap the half-started child (it dies: go pipe EOF or SIGKILL). */
		close(go[1]);
		go[1] = -1;
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		waitid(P_PIDFD, (id_t)b->pidfd, &si, WEXITED | __WALL);
		close(b->pidfd);
		b->pidfd = -1;
		b->pid = -1;
	}
	if (s->cg_ok)
		cg_run_destroy(&s->cg, &b->cg);
	int all[] = { go[0], go[1], stp[0], stp[1], outp[0], outp[1], errp[0], errp[1], in };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i] >= 0)
			close(all[i]);
	return b;
}

void box_cancel(struct box *b)
{
	if (b->finished || b->exited)
		return;
	b->cancelled = true;
	kill_now(b);
}

const struct box_result *box_result(const struct box *b)
{
	return &b->res;
}

void box_free(struct box *b)
{
	if (!b)
		return;
	int fds[] = { b->pidfd, b->status_fd, b->out_fd, b->err_fd, b->timer_fd };
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (fds[i] >= 0) {
			loop_unwatch(b->loop, fds[i]);
			close(fds[i]);
		}
	if (b->pid > 0 && !b->exited) {
		/* Freed before it finished (the supervisor is shutting down). */
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
	}
	if (b->sys->cg_ok && !b->finished)
		cg_run_destroy(&b->sys->cg, &b->cg);
	cap_buf_free(&b->res.out);
	cap_buf_free(&b->res.err);
	jv_free(b->res.timings);
	free(b);
}

/* ---- scratch ------------------------------------------------------------------ */

static uid_t scratch_owner(struct box_sys *s)
{
	/* The program's uid 1000 as the supervisor sees it. */
	return s->root ? (uid_t)(s->conf->uid + 1) : 0;
}

int box_scratch(struct box_sys *s, uint64_t size, char *err, size_t errlen)
{
	char opt[64];
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0) {
		snprintf(err, errlen, "cannot create a scratch tmpfs: %s", strerror(errno));
		return -1;
	}
	snprintf(opt, sizeof opt, "%llu", (unsigned long long)size);
	char ino[32], id[32];
	snprintf(ino, sizeof ino, "%llu", (unsigned long long)(size / 4096 > 1024 ? size / 4096 : 1024));
	snprintf(id, sizeof id, "%u", (unsigned)scratch_owner(s));
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", opt, 0) < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", ino, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "uid", id, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "gid", id, 0) < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		snprintf(err, errlen, "cannot configure the scratch tmpfs: %s", strerror(errno));
		close(fs);
		return -1;
	}
	int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	int e = errno;
	close(fs);
	if (mnt < 0)
		snprintf(err, errlen, "cannot mount the scratch tmpfs: %s", strerror(e));
	return mnt;
}

int box_scratch_write(struct box_sys *s, int scratch, const char *path, const char *data, size_t len, mode_t mode)
{
	uid_t owner = scratch_owner(s);
	/* Walk the components from the scratch root, never following a link
	 * (there are none in a fresh scratch, and there never will be one we
	 * follow). */
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	int dir = dup(scratch);
	if (dir < 0)
		return -1;
	char *p = buf;
	for (char *slash; (slash = strchr(p, '/')); p = slash + 1) {
		*slash = 0;
		if (mkdirat(dir, p, 0755) < 0 && errno != EEXIST) {
			close(dir);
			return -1;
		}
		fchownat(dir, p, owner, owner, AT_SYMLINK_NOFOLLOW);
		int next = openat(dir, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dir);
		if (next < 0)
			return -1;
		dir = next;
	}
	int fd = openat(dir, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	close(dir);
	if (fd < 0)
		return -1;
	int rc = len ? util_write_all(fd, data, len) : 0;
	if (!rc)
		rc = fchown(fd, owner, owner);
	int e2 = errno;
	close(fd);
	errno = e2;
	return rc;
}

/* ---- the system --------------------------------------------------------------- */

/* As an ordinary user: become root of a user namespace of our own, so that
 * we may make tmpfs scratch directories; our uid maps to 0 there and to 1000
 * in each sandbox. */
static int enter_own_userns(char *err, size_t errlen)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		snprintf(err, errlen, "user namespaces are not available to this user (%s): run as root, or enable them: sysctl -w kernel.unprivileged_userns_clone=1 user.max_user_namespaces=10000",
			 strerror(errno));
		return -1;
	}
	char map[64];
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
	if (write_map(getpid(), "setgroups", "deny") < 0 || write_map(getpid(), "uid_map", map) < 0) {
		snprintf(err, errlen, "cannot map our uid in a user namespace: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
	if (write_map(getpid(), "gid_map", map) < 0) {
		snprintf(err, errlen, "cannot map our gid in a user namespace: %s", strerror(errno));
		return -1;
	}
	mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	return 0;
}

int box_sys_init(struct box_sys *s, const struct conf *c, char **argv, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->conf = c;
	s->argv = argv;
	s->root = geteuid() == 0;
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
	if (filter_build(c->seccomp_errno, &s->filter, err, errlen) < 0)
		return -1;
	return 0;
}

void box_sys_free(struct box_sys *s)
{
	cg_sys_free(&s->cg);
	free(s->filter.filter);
	memset(s, 0, sizeof *s);
}
