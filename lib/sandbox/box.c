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
 * supervisor spawns ahead of time when jobs come in a stream: namespace
 * creation, cgroup joining and root building then happen while the
 * previous job runs.  Each sandbox still serves
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
 * own (box_sys_init) and maps its single uid to 1000 in each sandbox.
 */
#define _GNU_SOURCE
#include "box.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
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
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "filter.h"
#include "egress.h"
#include "kern.h"
#include "ll.h"
#include "ns.h"
#include "proc.h"
#include "util.h"

#define SETUP_TIMEOUT_MS 15000
/* After asking init to kill everything at a timeout: then the kernel does.
 * Beyond the cpu quota's period, which may hold init back. */
#define KILL_GRACE_MS 250
#define READ_CHUNK 65536
#define READ_BUDGET (4 * READ_CHUNK) /* per callback, so one flood cannot starve others */

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
	int pidfd, status_fd, out_fd, err_fd, timer_fd, spec_fd;
	struct cg_run cg;
	char *const *egress;       /* the install's hosts, while its proxy is being started */
	pid_t egress_pid;          /* its proxy (egress.h), or 0 */
	uint64_t cg_mem, cg_pids;
	double cg_cpus;
	/* what the sandbox was built for (its "key") */
	bool network;
	char *rootfs;
	char **binds;
	struct box_result res;
	uint64_t timeout_ms;
	int64_t t_start, t_running, t_kill;
	/* --timings: the supervisor's steps of a sandbox made for its job, and
	 * its teardown after the result (reported on stderr: the result is
	 * out by then). */
	int64_t t_cloned, t_cgroups, t_done, t_reaped;
	char *label;
	bool assigned, warm, running, exited, finished, timed_out, cancelled, reaping, stopping;
	struct msg fail, exit_msg;
	bool have_fail, have_exit;
	int64_t cpu_us, maxrss_kb; /* from init's report */
	bool timings;
	struct box *next;
};

/* Fixed fd numbers inside the child after proc_keep_fds. */
enum { K_GO, K_STATUS, K_OUT, K_ERR, K_SPEC, K_N };
#define KFD(i) (3 + (i))

struct child_args {
	struct box_sys *sys;
	bool network;
	bool build_root;         /* no template: build the root here */
	const char *rootfs;
	char *const *binds;
	int fds[K_N];
	unsigned long flags;
};

/* Two messages go to a sandbox's init over its spec socket, each with its
 * fds as SCM_RIGHTS on its first byte.  First, as soon as the supervisor
 * has made the run's cgroups: a uint32_t count and (v1) that many tasks
 * files, opened by the supervisor (the sandbox's mount namespace has no
 * /sys).  Then the job: this header, then `len` bytes of NUL-terminated
 * argv and env strings, with the stdin memfd and (SPEC_SCRATCH) the
 * scratch mount. */
enum { SPEC_SCRATCH = 1, SPEC_RLIMIT_DATA = 4, SPEC_TIMINGS = 8, SPEC_DEPS = 16, SPEC_EGRESS = 32, SPEC_WORK_EXEC = 64 };
struct spec_hdr {
	uint64_t file_size, nofile, stack, pids, memory, tmpfs;
	uint32_t flags, argc, envc, outc, len;
};
#define SPEC_MAX (1u << 20)
#define MSG_FDS 4

struct spec {
	struct spec_hdr h;
	char **argv, **env, **outputs;
	int stdin_fd, scratch_fd;
};

/* Send len bytes with nfd fds (0..MSG_FDS) attached to the first. */
static int send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd)
{
	char cbuf[CMSG_SPACE(MSG_FDS * sizeof(int))];
	memset(cbuf, 0, sizeof cbuf);
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfd > 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

/* Receive exactly len bytes and the fds that came with them (at most
 * MSG_FDS; their number, or -1 at EOF or on a short read). */
static int recv_fds(int sock, void *buf, size_t len, int *fds)
{
	char cbuf[CMSG_SPACE(MSG_FDS * sizeof(int))];
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	int nfd = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && !nfd) {
			nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (nfd > MSG_FDS)
				nfd = MSG_FDS;
			memcpy(fds, CMSG_DATA(c), nfd * sizeof(int));
		}
	return n == (ssize_t)len ? nfd : -1;
}

/* ---- inside the sandbox: the program ------------------------------------- */

/* Exec argv[0] as the program's own environment finds it: on its PATH, not
 * on sbx-run's (execvpe searches the caller's), so that a program resolves
 * as it would in a docker container with the same environment.  No shell
 * fallback for a file without a #! line.  Returns the errno to report:
 * EACCES if a candidate was found but not executable, else the last. */
static int exec_path(char *const *argv, char *const *env)
{
	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, env);
		return errno;
	}
	char buf[PATH_MAX];
	const char *p = util_env_path(env, NS_PATH);
	int err = ENOENT;
	bool denied = false;
	while (util_path_next(&p, "", argv[0], buf, sizeof buf)) {
		execve(buf, argv, env);
		err = errno;
		if (err == EACCES)
			denied = true;
		else if (err != ENOENT && err != ENOTDIR && err != ENAMETOOLONG)
			return err;
	}
	return denied ? EACCES : err;
}

static void set_rlimit(int res, uint64_t v)
{
	struct rlimit rl = { .rlim_cur = v, .rlim_max = v };
	setrlimit(res, &rl);
}

static _Noreturn void program_main(const struct child_args *a, const struct spec *sp, volatile int64_t *t_execve)
{
	int st = KFD(K_STATUS);
	char what[160];

	/* A new session: no controlling terminal, its own process group. */
	setsid();
	if (dup2(sp->stdin_fd, 0) < 0 || dup2(KFD(K_OUT), 1) < 0 || dup2(KFD(K_ERR), 2) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "set up fds 0-2");
		_exit(127);
	}
	/* Only 0-2 and the (close-on-exec) status pipe survive. */
	if (st != 3) {
		if (dup3(st, 3, O_CLOEXEC) < 0)
			_exit(127);
		st = 3;
	}
	proc_close_from(4);

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
	set_rlimit(RLIMIT_FSIZE, sp->h.file_size);
	set_rlimit(RLIMIT_NOFILE, sp->h.nofile);
	set_rlimit(RLIMIT_STACK, sp->h.stack);
	set_rlimit(RLIMIT_NPROC, sp->h.pids);
	if (sp->h.flags & SPEC_RLIMIT_DATA)
		set_rlimit(RLIMIT_DATA, sp->h.memory);

	/* Drop privilege: ids (which clears the capability sets; init emptied
	 * the bounding and ambient sets we inherit), then whatever capset
	 * still shows. */
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
	/* The seccomp filter (and no_new_privs) came from init: loading it costs
	 * the kernel a pass over every system call, so it is done once. */
	*t_execve = mono_ns(); /* init's memory, borrowed until the exec */
	int err = exec_path(sp->argv, sp->env);
	snprintf(what, sizeof what, "%s", sp->argv[0]);
	msg_send(st, MSG_EXECFAIL, err, 0, 0, 0, 0, what);
	_exit(127);
}

/* ---- inside the sandbox: init --------------------------------------------- */

/* Read the job from the spec socket; false at EOF (the supervisor let the
 * warm sandbox go) or on any malformed message. */
static bool recv_spec(int fd, struct spec *sp)
{
	int fds[MSG_FDS];
	int nfd = recv_fds(fd, &sp->h, sizeof sp->h, fds);
	if (nfd != 1 + !!(sp->h.flags & SPEC_SCRATCH) || sp->h.len > SPEC_MAX || sp->h.argc == 0 ||
	    sp->h.argc + sp->h.envc > SPEC_MAX || sp->h.outc > NS_MAX_OUTPUTS)
		return false;
	sp->stdin_fd = fds[0];
	sp->scratch_fd = nfd > 1 ? fds[1] : -1;
	char *buf = malloc(sp->h.len + 1);
	sp->argv = calloc(sp->h.argc + 1, sizeof *sp->argv);
	sp->env = calloc(sp->h.envc + 1, sizeof *sp->env);
	sp->outputs = calloc(sp->h.outc + 1, sizeof *sp->outputs);
	if (!buf || !sp->argv || !sp->env || !sp->outputs || util_read_full(fd, buf, sp->h.len) != (ssize_t)sp->h.len)
		return false;
	buf[sp->h.len] = 0;
	char *p = buf, *end = buf + sp->h.len;
	for (uint32_t i = 0; i < sp->h.argc + sp->h.envc + sp->h.outc; i++) {
		if (p >= end)
			return false;
		if (i < sp->h.argc)
			sp->argv[i] = p;
		else if (i < sp->h.argc + sp->h.envc)
			sp->env[i - sp->h.argc] = p;
		else
			sp->outputs[i - sp->h.argc - sp->h.envc] = p;
		p += strlen(p) + 1;
	}
	return true;
}

/* init's SIGUSR1 handler: kill(2) is async-signal-safe, and doing it here
 * leaves no window between a flag's test and the next wait.  Only the
 * supervisor may ask: its pidfd_send_signal arrives as SI_USER from a pid
 * outside our namespace (si_pid 0).  A program of the sandbox has a pid
 * here, and as an ordinary user it even has init's uid (only one is
 * mapped), which kill(2) would otherwise let through; nor can it forge
 * SI_USER (rt_sigqueueinfo refuses codes >= 0 to other processes). */
static void on_stop(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	if (si->si_code == SI_USER && si->si_pid == 0)
		kill(-1, SIGKILL);
}

static _Noreturn void init_main(struct child_args *a)
{
	char err[256];
	int st;
	/* Die with the supervisor; then wait for it to write our id maps.  EOF
	 * on the go pipe means it is gone. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (proc_keep_fds(a->fds, K_N) < 0)
		_exit(120);
	st = KFD(K_STATUS);
	char go;
	if (read(KFD(K_GO), &go, 1) != 1)
		_exit(121);
	/* Set-up steps, sent as marks once the job asks for them. */
	enum { T_IDS, T_NS, T_ROOT, T_LO, T_N };
	static const char *const t_name[T_N] = { "ids_mapped", "namespaces_made", "root_entered", "loopback_up" };
	int64_t t[T_N] = { 0 };
	t[T_IDS] = mono_ns();
	close(KFD(K_GO));
	proc_set_title(a->sys->argv, "sbx-init");

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
	/* Nothing exec'd in the sandbox may gain a capability: empty the
	 * bounding and ambient sets now, once, rather than in every program's
	 * child between its fork and its exec (41 calls, each a new set of
	 * credentials).  Our own permitted and effective sets, which the
	 * mounts and kills below need, stay. */
	for (int cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
			break; /* past the kernel's last capability */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* The remaining namespaces are made here rather than by clone3: their
	 * cost (a network namespace registers sysctls and a loopback device)
	 * is then paid in parallel, not by the supervisor's thread, which
	 * meanwhile makes the run's v1 cgroups.  (Made before the id maps,
	 * they gain nothing: init gets no CPU until the supervisor waits.
	 * With init started on the other CPU they overlap, but contend with
	 * the supervisor and the last run's teardown for the rtnl and cgroup
	 * locks, and the sandbox was ready later, not sooner.) */
	if (unshare(CLONE_NEWIPC | CLONE_NEWUTS | (a->network ? 0 : CLONE_NEWNET)) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "new ipc, uts and network namespaces");
		_exit(122);
	}
	t[T_NS] = mono_ns();
	sethostname("sandbox", 7);
	struct ns_root root = { .rootfs = a->rootfs ? a->rootfs : "", .etc = a->sys->conf->etc, .binds = a->binds,
				.network = a->network };
	if ((a->build_root && ns_build_root(&root, err, sizeof err) < 0) || ns_enter_root(err, sizeof err) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	t[T_ROOT] = mono_ns();
	if (!a->network && ns_loopback_up(err, sizeof err) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	t[T_LO] = a->network ? 0 : mono_ns();
	/* cgroup v1: join the run's groups ourselves, as soon as the
	 * supervisor has made them.  We are a single thread, so we move just
	 * this thread ("0" to tasks): the kernel then skips its global
	 * threadgroup lock, whose write side waits for an RCU grace period
	 * (10-45 ms here, on every run that is not right after another);
	 * moving a process by pid, or through cgroup.procs, would take it.
	 * The kernel checks the permission of whoever opened the file (the
	 * supervisor, host root).  What we fork later is born in these groups.
	 * Then the cgroup namespace, so that the run's group is our "/". */
	uint32_t ncg;
	int cg[MSG_FDS];
	int got = recv_fds(KFD(K_SPEC), &ncg, sizeof ncg, cg);
	if (got < 0)
		_exit(0);
	if (got != (int)ncg) {
		msg_send(st, MSG_FAIL, EPROTO, 0, 0, 0, 0, "join the run's cgroup");
		_exit(122);
	}
	for (int i = 0; i < got; i++) {
		if (write(cg[i], "0", 1) != 1) {
			msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "join the run's cgroup");
			_exit(122);
		}
		close(cg[i]);
	}
	if (unshare(CLONE_NEWCGROUP) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "new cgroup namespace");
		_exit(122);
	}
	int64_t t_ready = mono_ns();

	/* Ready: wait for the job.  Marks go out only if it asks for them. */
	struct spec sp;
	if (!recv_spec(KFD(K_SPEC), &sp))
		_exit(0);
	bool timings = sp.h.flags & SPEC_TIMINGS;
	/* An install reaches only its proxy, at 127.0.0.1:EGRESS_PORT of its
	 * own network namespace: the socket is made here, and served by the
	 * supervisor's side (egress.h), before the program runs. */
	if (sp.h.flags & SPEC_EGRESS) {
		int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons(EGRESS_PORT),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		if (a->network || lfd < 0 || bind(lfd, (struct sockaddr *)&la, sizeof la) < 0 || listen(lfd, 64) < 0 ||
		    send_fds(KFD(K_SPEC), "e", 1, &lfd, 1) < 0) {
			msg_send(st, MSG_FAIL, a->network ? EINVAL : errno, 0, 0, 0, 0, "make the install's proxy socket");
			_exit(123);
		}
		close(lfd);
	}
	if (timings) {
		for (int i = 0; i < T_N; i++)
			if (t[i])
				msg_send(st, MSG_MARK, 0, t[i], 0, 0, 0, t_name[i]);
		msg_send(st, MSG_MARK, 0, t_ready, 0, 0, 0, "root_built");
		msg_send(st, MSG_MARK, 0, mono_ns(), 0, 0, 0, "job_received");
	}
	if (ns_attach_work(sp.h.tmpfs, sp.scratch_fd, sp.outputs, sp.h.flags & SPEC_DEPS, sp.h.flags & SPEC_WORK_EXEC, err,
			   sizeof err) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	if (sp.scratch_fd >= 0)
		close(sp.scratch_fd);
	close(KFD(K_SPEC));
	/* Writes only where the sandbox may write (ll.h): no /proc/PID/mem of
	 * a sibling.  The program inherits it. */
	static const char *const writable[] = { NS_WORKDIR, "/tmp", NS_HOME, "/dev/shm", "/dev/pts", "/dev/null",
						"/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", NULL };
	if ((a->sys->kern & (1u << KF_LANDLOCK)) && ll_write_only_beneath(writable, err, sizeof err) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	if (timings)
		msg_send(st, MSG_MARK, 0, mono_ns(), 0, 0, 0, "work_attached");

	/* At the timeout the supervisor asks init (SIGUSR1, which no process
	 * of the sandbox may send it) to kill everything: init then reaps it
	 * all and reports, the CPU time of the whole tree included.  Were the
	 * kernel to kill init instead, its pid-namespace teardown would reap
	 * the rest unaccounted. */
	struct sigaction sa = { .sa_sigaction = on_stop, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
	/* The filter goes on before the fork: the program inherits it, and init
	 * runs nothing but fork, wait and kill from here on. */
	if (filter_load(&a->sys->filter) < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "load the seccomp filter");
		_exit(124);
	}
	int64_t t0 = mono_ns();
	volatile int64_t t_execve = 0;
	/* vfork: the program borrows init's memory until its exec, rather
	 * than getting a copy (page tables, copy-on-write faults on both
	 * sides, and its teardown at exec); init has nothing to do meanwhile.
	 * program_main changes only what is the child's own (fds, signal
	 * dispositions, ids, rlimits) and then execs or _exits. */
	pid_t prog = vfork();
	if (prog < 0) {
		msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "fork the program");
		_exit(124);
	}
	if (prog == 0)
		program_main(a, &sp, &t_execve);
	close(sp.stdin_fd);
	close(KFD(K_OUT));
	close(KFD(K_ERR));
	msg_send(st, MSG_RUNNING, 0, prog, t0, 0, 0, NULL);
	/* The child's own set-up (ids, rlimits, signals) ended here. */
	if (timings && t_execve)
		msg_send(st, MSG_MARK, 0, t_execve, 0, 0, 0, "program_execve");

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
static void discard(struct box *b);

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
		budget = (size_t)n < budget ? budget - (size_t)n : 0;
	}
}

static void kill_now(struct box *b)
{
	if (b->pidfd >= 0 && !b->exited) {
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
		cg_run_kill(&b->sys->cg, &b->cg);
	}
	if (!b->t_kill)
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
	/* init reports the exit only when it has reaped every other process:
	 * nothing of the job runs any more, and the result need not wait for
	 * init's own exit, the namespaces' teardown (~0.5 ms).  box_free
	 * reaps init and removes the cgroups later, from the loop. */
	if (b->have_exit && b->assigned && !b->finished && !b->exited)
		finish(b);
}

static void on_timer(struct loop *l, int fd, short rev, void *arg);

/* Stop a running program: init is asked (SIGUSR1, see init_main) to kill
 * and reap everything, and reports as at a normal exit, the CPU time of the
 * whole tree included; the kernel kills init if it has not reported within
 * KILL_GRACE_MS.  Before the program runs, and when the grace is over, the
 * kernel kills at once. */
static void stop(struct box *b)
{
	if (b->running && !b->stopping && !b->exited) {
		struct itimerspec grace = { .it_value = { 0, KILL_GRACE_MS * 1000000L } };
		b->t_kill = mono_ns();
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
	b->t_reaped = mono_ns();
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
		discard(b);
		return;
	}
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
	/* Nothing of the sandbox runs any more: nor may its proxy. */
	egress_stop(b->egress_pid);
	b->egress_pid = 0;
	/* Everything the sandbox wrote is in the pipes now: drain them. */
	read_msgs(b);
	read_output(b, b->out_fd, &r->out, true);
	read_output(b, b->err_fd, &r->err, true);
	loop_unwatch(b->loop, b->status_fd);
	loop_unwatch(b->loop, b->out_fd);
	loop_unwatch(b->loop, b->err_fd);
	loop_unwatch(b->loop, b->timer_fd);
	mark(b, "drained", mono_ns());

	struct cg_stats cs = { .mem_peak = -1 };
	if (b->sys->cg_ok)
		cg_run_stats(&b->sys->cg, &b->cg, &cs);
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
	} else if (!b->have_exit && !b->running && !b->timed_out && !b->cancelled) {
		r->status = BOX_INTERNAL;
		snprintf(r->error, sizeof r->error, "the sandbox's init died during set-up");
	} else
		decode_status(b, &cs);
	/* CPU time: the program's tree, as init reaped it.  Unknown when init
	 * died without a report: the kernel's pid-namespace teardown reaps
	 * the rest with SIGCHLD ignored, which counts their time nowhere. */
	r->cpu_ms = b->have_exit ? (double)b->cpu_us / 1000.0 : -1;
	r->mem_peak = cs.mem_peak >= 0 ? cs.mem_peak : b->have_exit && b->maxrss_kb > 0 ? b->maxrss_kb * 1024 : -1;
	b->finished = true;
	b->t_done = mono_ns();
	/* The cgroup goes in box_free, after the caller has written the result:
	 * every process is gone already. */
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
	b->finished = true;
	b->done(b, b->arg);
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
	b->res.status = BOX_INTERNAL;
	/* The half-made sandbox must not outlive this. */
	if (b->pidfd >= 0 && !b->exited)
		reap_now(b);
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

static char **copy_strv(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	if (!n)
		return NULL;
	char **c = util_xalloc((n + 1) * sizeof *c);
	for (size_t i = 0; i < n; i++)
		c[i] = util_strdup(v[i]);
	return c;
}

static struct box *new_box(struct box_sys *s, struct loop *l)
{
	struct box *b = util_xalloc(sizeof *b);
	b->sys = s;
	b->loop = l;
	b->pid = -1;
	b->pidfd = b->status_fd = b->out_fd = b->err_fd = b->timer_fd = b->spec_fd = -1;
	cg_run_init(&b->cg);
	b->res.timings = jv_null();
	b->res.cpu_ms = -1;
	b->res.mem_peak = -1;
	b->t_start = mono_ns();
	return b;
}

/* ---- root templates ------------------------------------------------------------ */

/* A template older than this is rebuilt at the next spawn, so that host
 * files replaced under it (a new ld.so.cache, updated certificates) reach
 * the sandboxes of a long-running supervisor. */
#define TMPL_TTL_NS (60LL * 1000000000)
/* tmpl_get: no template, the sandbox builds its own root (not an error). */
#define TMPL_OWN (-2)

static bool strv_eq(char *const *a, char *const *b);

/* Do two sandboxes (or a sandbox and a template) need the same root? */
static bool same_tree(bool net_a, const char *rootfs_a, char *const *binds_a, bool net_b, const char *rootfs_b,
		      char *const *binds_b)
{
	return net_a == net_b && strv_eq(binds_a, binds_b) &&
	       ((!rootfs_a && !rootfs_b) || (rootfs_a && rootfs_b && !strcmp(rootfs_a, rootfs_b)));
}

static void tmpl_clear(struct box_tmpl *t)
{
	if (t->mnt_fd >= 0)
		close(t->mnt_fd);
	free(t->rootfs);
	util_strv_free(t->binds);
	*t = (struct box_tmpl){ .mnt_fd = -1 };
}

static void tmpl_set(struct box_tmpl *t, int fd, bool network, const char *rootfs, char *const *binds, int64_t born_ns)
{
	tmpl_clear(t);
	*t = (struct box_tmpl){
		.mnt_fd = fd, .network = network, .rootfs = rootfs ? util_strdup(rootfs) : NULL,
		.binds = copy_strv(binds), .born_ns = born_ns,
	};
}

/* A mount namespace made by a short-lived child of ours (clone flags:
 * CLONE_NEWNS and what else it needs), which runs make() there, reports
 * on a pipe and then waits for EOF on another while we open its
 * namespace.  make() returns 0, or -1 with errno set and what failed in
 * its text.  The namespace's fd, or -1 with err set (prefixed by what). */
typedef int (*ns_make_fn)(void *arg, char *text, size_t len);

static _Noreturn void ns_child(ns_make_fn make, void *arg, int rep, int hold)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int fds[2] = { rep, hold };
	if (proc_keep_fds(fds, 2) < 0)
		_exit(120);
	char text[sizeof ((struct msg *)0)->text] = "";
	if (make(arg, text, sizeof text) < 0)
		msg_send(KFD(0), MSG_FAIL, errno, 0, 0, 0, 0, text);
	else
		msg_send(KFD(0), MSG_MARK, 0, 0, 0, 0, 0, NULL);
	char x;
	while (read(KFD(1), &x, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

static int ns_made(unsigned long flags, ns_make_fn make, void *arg, const char *what, char *err, size_t errlen)
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

static int tmpl_make(void *arg, char *text, size_t len)
{
	const struct tmpl_args *a = arg;
	struct ns_root r = { .rootfs = a->rootfs ? a->rootfs : "", .etc = a->conf->etc, .binds = a->binds,
			     .network = a->network };
	return ns_build_root(&r, text, len);
}

static int tmpl_build(struct box_sys *s, struct box_tmpl *t, bool network, const char *rootfs, char *const *binds,
		      char *err, size_t errlen)
{
	struct tmpl_args a = { .conf = s->conf, .network = network, .rootfs = rootfs, .binds = binds };
	int fd = ns_made(CLONE_NEWNS | CLONE_NEWPID, tmpl_make, &a, "building the sandbox's root", err, errlen);
	if (fd < 0)
		return -1;
	tmpl_set(t, fd, network, rootfs, binds, mono_ns());
	return 0;
}

/* The mount namespace holding the root for (network, rootfs, binds): ours
 * if we have a fresh one, else one another process pinned (pin.h), else
 * one we build now (and pin).  TMPL_OWN when this process's first sandbox
 * should rather build its own (below); -1 on failure. */
static int tmpl_get(struct box_sys *s, bool network, const char *rootfs, char *const *binds, char *err, size_t errlen)
{
	struct box_tmpl *t = NULL, *oldest = &s->tmpl[0];
	for (int i = 0; i < BOX_TMPLS && !t; i++) {
		if (s->tmpl[i].mnt_fd >= 0 && same_tree(s->tmpl[i].network, s->tmpl[i].rootfs, s->tmpl[i].binds, network, rootfs, binds))
			t = &s->tmpl[i];
		else if (s->tmpl[i].mnt_fd < 0 || (oldest->mnt_fd >= 0 && s->tmpl[i].born_ns < oldest->born_ns))
			oldest = &s->tmpl[i];
	}
	if (t && mono_ns() - t->born_ns < TMPL_TTL_NS)
		return t->mnt_fd;
	if (!t)
		t = oldest;
	char name[PIN_NAME_MAX];
	int64_t age_ns;
	/* Only real root pins (not root of a user namespace of our own). */
	bool pinning = s->root && pin_name(&s->pin, network, rootfs, s->conf->etc, binds, name, &age_ns);
	if (pinning) {
		int fd = pin_get(&s->pin, name);
		if (fd >= 0) {
			/* It may be as old as its minute: expire it with it. */
			tmpl_set(t, fd, network, rootfs, binds, mono_ns() - age_ns);
			return fd;
		}
	} else if (s->spawned++ == 0) {
		/* Without pins a template pays off from the second sandbox on:
		 * the first builds its root itself, in parallel with us, so a
		 * one-job sbx-run pays nothing for it. */
		return TMPL_OWN;
	}
	if (tmpl_build(s, t, network, rootfs, binds, err, errlen) < 0)
		return -1;
	if (pinning)
		pin_put(&s->pin, name, t->mnt_fd);
	return t->mnt_fd;
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
static int enter_mnt(int mnt_fd, int *cwd)
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

static void leave_mnt(struct box_sys *s, int cwd)
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
static pid_t clone_from(struct box_sys *s, int tmpl_fd, struct clone_args *cl)
{
	if (tmpl_fd == TMPL_OWN)
		return clone_plain(cl);
	int cwd;
	if (enter_mnt(tmpl_fd, &cwd) < 0)
		return -1;
	pid_t pid = clone_plain(cl);
	if (pid == 0)
		return 0;
	leave_mnt(s, cwd);
	return pid;
}

/* The run's cgroups with the default limits (a job's own are set when it
 * comes). */
static int make_cgroup(struct box *b)
{
	struct box_sys *s = b->sys;
	const struct limits *dl = &s->conf->lim.run;
	char err[256];
	if (cg_run_create(&s->cg, &b->cg, dl->memory, dl->cpus, dl->pids, err, sizeof err) < 0) {
		b->res.status = BOX_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "%s", err);
		return -1;
	}
	b->cg_mem = dl->memory;
	b->cg_cpus = dl->cpus;
	b->cg_pids = dl->pids;
	b->t_cgroups = mono_ns();
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
		if (!b->cg.path[i])
			continue;
		if ((fds[n] = openat(b->cg.dfd[i], "tasks", O_WRONLY | O_CLOEXEC)) < 0) {
			b->res.status = BOX_INTERNAL;
			snprintf(b->res.error, sizeof b->res.error, "cgroup %.400s/tasks: %s", b->cg.path[i], strerror(errno));
			rc = -1;
		} else
			n++;
	}
	if (!rc && send_fds(sock, &n, sizeof n, fds, (int)n) < 0) {
		b->res.status = BOX_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "cannot hand the sandbox its cgroups: %s", strerror(errno));
		rc = -1;
	}
	for (uint32_t i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}

/* Make a sandbox for (network, rootfs, binds) up to "waiting for its job".
 * On failure the box carries the error (res.status BOX_INTERNAL) and no
 * process. */
static struct box *spawn(struct box_sys *s, struct loop *l, bool network, const char *rootfs, char *const *binds)
{
	struct box *b = new_box(s, l);
	b->network = network;
	b->rootfs = rootfs ? util_strdup(rootfs) : NULL;
	b->binds = copy_strv(binds);
	char err[256];
	int tmpl_fd = tmpl_get(s, network, rootfs, binds, err, sizeof err);
	if (tmpl_fd == -1) {
		b->res.status = BOX_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "%s", err);
		return b;
	}
	/* v2: clone3 puts init into the run's group, which must exist first.
	 * v1: the groups are made after the clone, while init makes its
	 * namespaces, and init joins them as soon as they exist. */
	bool cg_first = s->cg_ok && s->cg.mode != CG_V1;
	if (cg_first && make_cgroup(b) < 0)
		return b;
	int go[2] = { -1, -1 }, stp[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, sp[2] = { -1, -1 };
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(stp, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		b->res.status = BOX_INTERNAL;
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
	int cgfd = cg_run_clone_fd(&s->cg, &b->cg);
	if (cgfd >= 0) {
		cl.flags |= CLONE_INTO_CGROUP;
		cl.cgroup = (uint64_t)cgfd;
	}
	pid_t pid = clone_from(s, tmpl_fd, &cl);
	if (pid == 0)
		init_main(&ca);
	if (pid < 0) {
		b->res.status = BOX_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "cannot create the sandbox's namespaces: %s (see sbx-run --check)",
			 strerror(errno));
		goto close_all;
	}
	b->pid = pid;
	b->pidfd = pidfd;
	b->t_cloned = mono_ns();

	/* Ids first (the child can do nothing useful before), then the OOM
	 * score, then go. */
	char map[128];
	int rc;
	/* As root: init is 0, the program 1000, and nobody (65534, in the
	 * sandbox's passwd) exists too, so that setuid to it fails with EPERM
	 * as on a host rather than EINVAL (unmapped); nothing runs as it. */
	if (s->root)
		snprintf(map, sizeof map, "0 %llu 1\n%d %llu 1\n65534 %llu 1\n", (unsigned long long)s->conf->uid, NS_UID,
			 (unsigned long long)s->conf->uid + 1, (unsigned long long)s->conf->uid + 2);
	else
		snprintf(map, sizeof map, "%d 0 1\n", NS_UID);
	rc = write_map(pid, "uid_map", map);
	if (!rc)
		rc = write_map(pid, "gid_map", map);
	/* The program must be the OOM killer's first choice in its cgroup:
	 * a negative score of ours (say -1000, from a shielded parent) would
	 * pass to it through init, and a memory cgroup with nothing it may
	 * kill stalls until the timeout.  Raising needs no privilege, and only
	 * here: once init has changed ids, its /proc files are the host
	 * root's.  init itself gets no shield: if the OOM killer takes it,
	 * the namespace dies with it and the result still says
	 * memory_limit. */
	const char *what = "set up the sandbox's user namespace";
	if (!rc && s->oom_raise && (rc = write_map(pid, "oom_score_adj", "0")) < 0)
		what = "reset the sandbox's OOM score";
	if (rc < 0 || write(go[1], "g", 1) != 1) {
		b->res.status = BOX_INTERNAL;
		snprintf(b->res.error, sizeof b->res.error, "cannot %s: %s", what, strerror(errno));
		reap_now(b);
		goto close_all;
	}
	if ((s->cg_ok && !cg_first && make_cgroup(b) < 0) || send_cgroups(b, sp[0]) < 0) {
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
	return b;
}

static int send_spec(struct box *b, const struct box_spec *sp, int stdin_fd)
{
	struct spec_hdr h = {
		.file_size = sp->lim->file_size, .nofile = sp->lim->nofile, .stack = sp->lim->stack,
		.pids = sp->lim->pids, .memory = sp->lim->memory, .tmpfs = sp->lim->tmpfs,
		.flags = (sp->scratch_fd >= 0 ? SPEC_SCRATCH : 0) |
			 (sp->deps ? SPEC_DEPS : 0) | (sp->egress ? SPEC_EGRESS : 0) | (sp->work_exec ? SPEC_WORK_EXEC : 0) |
			 (b->res.enforced & ENF_MEMORY ? 0 : SPEC_RLIMIT_DATA) | (sp->timings ? SPEC_TIMINGS : 0),
	};
	size_t len = 0;
	for (char *const *a = sp->argv; *a; a++, h.argc++)
		len += strlen(*a) + 1;
	for (char *const *e = sp->env; e && *e; e++, h.envc++)
		len += strlen(*e) + 1;
	for (char *const *o = sp->outputs; o && *o && h.outc < NS_MAX_OUTPUTS; o++, h.outc++)
		len += strlen(*o) + 1;
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
	int fds[2] = { stdin_fd, sp->scratch_fd };
	/* The socket buffer holds a whole header; the strings follow (the
	 * child reads them as soon as it has the header). */
	int rc = send_fds(b->spec_fd, &h, sizeof h, fds, sp->scratch_fd >= 0 ? 2 : 1);
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
	if (recv_fds(fd, &c, 1, &lfd) == 1 && lfd >= 0) {
		char err[256];
		b->egress_pid = egress_start(lfd, b->egress, b->sys->root ? (int)(b->sys->conf->uid + 3) : -1, err, sizeof err);
		if (b->egress_pid < 0) {
			b->egress_pid = 0;
			util_warn("%s", err);
		}
	}
	loop_unwatch(l, fd);
	close(fd);
	b->spec_fd = -1;
	(void)rev;
}

/* Give a spawned sandbox its job. */
static void assign(struct box *b, const struct box_spec *sp, box_done_fn done, void *arg)
{
	struct box_sys *s = b->sys;
	b->assigned = true;
	b->done = done;
	b->arg = arg;
	b->timeout_ms = sp->lim->timeout_ms;
	b->timings = sp->timings;
	if (b->timings) {
		jv_free(b->res.timings);
		b->res.timings = jv_object_set(jv_object(), jv_string("warm"), jv_bool(b->warm));
	}
	if (b->warm)
		b->t_start = mono_ns();
	cap_buf_init(&b->res.out, sp->lim->output);
	cap_buf_init(&b->res.err, sp->lim->output);
	b->res.enforced = ENF_NAMESPACES | ENF_SECCOMP | ENF_RLIMITS | ENF_TIMEOUT;
	if (s->cg_ok)
		b->res.enforced |= (s->cg.have & CG_MEM ? ENF_MEMORY : 0) | (s->cg.have & CG_CPU ? ENF_CPU : 0) |
				   (s->cg.have & CG_PIDS ? ENF_PIDS : 0);
	if (!(b->res.enforced & ENF_MEMORY))
		b->res.enforced |= ENF_MEMORY_RLIMIT;
	if (b->res.status == BOX_INTERNAL) {
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
	if (s->cg_ok && (b->cg_mem != sp->lim->memory || b->cg_cpus != sp->lim->cpus || b->cg_pids != sp->lim->pids) &&
	    cg_run_limits(&s->cg, &b->cg, false, sp->lim->memory, sp->lim->cpus, sp->lim->pids, err, sizeof err) < 0) {
		fail_later(b, "%s", err);
		return;
	}
	int in = stdin_memfd(sp->stdin_data, sp->stdin_len);
	b->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	/* Before the send: init may run ahead of us with the job at once. */
	int64_t t_assigned = mono_ns();
	if (in < 0 || b->timer_fd < 0 || send_spec(b, sp, in) < 0) {
		int e = errno;
		if (in >= 0)
			close(in);
		fail_later(b, "cannot hand the job to its sandbox: %s", strerror(e));
		return;
	}
	close(in);
	if (sp->egress) {
		/* init answers with the proxy's listening socket (egress.h). */
		b->egress = sp->egress;
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

static bool strv_eq(char *const *a, char *const *b)
{
	size_t i = 0;
	for (; a && b && a[i] && b[i]; i++)
		if (strcmp(a[i], b[i]))
			return false;
	return !(a && a[i]) && !(b && b[i]);
}

static void refill(struct box_sys *s)
{
	while (s->loop && s->nwarm < s->pool) {
		struct box *b = spawn(s, s->loop, false, NULL, NULL);
		if (b->res.status == BOX_INTERNAL) {
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

static void unlink_warm(struct box *b)
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

static void discard(struct box *b)
{
	unlink_warm(b);
	box_free(b);
}

static void drain_warm(struct box_sys *s)
{
	while (s->warm) {
		struct box *b = s->warm;
		unlink_warm(b);
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
		refill(s);
		s->pool = n;
	}
}

static void release(struct box *b);

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
	release(b);
	(void)rev;
}

void box_pool_drain(struct box_sys *s)
{
	drain_warm(s);
	while (s->reaping) {
		struct box *b = s->reaping;
		s->reaping = b->next;
		loop_unwatch(b->loop, b->pidfd);
		release(b);
	}
}

struct box *box_start(struct box_sys *s, struct loop *l, const struct box_spec *sp, box_done_fn done, void *arg)
{
	struct box *b = NULL;
	const char *rootfs = sp->rootfs && *sp->rootfs ? sp->rootfs : NULL;
	for (struct box *w = s->warm; w; w = w->next)
		if (w->loop == l && !w->exited && same_tree(w->network, w->rootfs, w->binds, sp->network, rootfs, sp->binds)) {
			b = w;
			unlink_warm(b);
			break;
		}
	if (!b)
		b = spawn(s, l, sp->network, rootfs, sp->binds);
	assign(b, sp, done, arg);
	/* Warm up once jobs come in a stream: a single job gains nothing from a
	 * sandbox made for a successor that never comes. */
	if (++s->started >= 2)
		refill(s);
	return b;
}

void box_cancel(struct box *b)
{
	if (b->finished || b->exited)
		return;
	b->cancelled = true;
	stop(b);
}

const struct box_result *box_result(const struct box *b)
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
	release(b);
}

/* Kill and reap init if it still runs, then free everything. */
static void release(struct box *b)
{
	/* A warm one, shutdown, or an init still exiting when the process
	 * ends (killing it is harmless then). */
	if (b->pid > 0 && !b->exited)
		reap_now(b);
	egress_stop(b->egress_pid);
	close_io(b);
	if (b->pidfd >= 0) {
		loop_unwatch(b->loop, b->pidfd);
		close(b->pidfd);
	}
	if (b->sys->cg_ok)
		cg_run_destroy(&b->sys->cg, &b->cg);
	if (b->label && b->t_done && b->t_reaped) {
		char removed[64] = "";
		if (b->sys->cg_ok)
			snprintf(removed, sizeof removed, " and its cgroups removed at %+.3f ms",
				 (double)(mono_ns() - b->t_done) / 1e6);
		util_warn("timings: job %s: after its result, its sandbox's init was reaped at %+.3f ms%s", b->label,
			  (double)(b->t_reaped - b->t_done) / 1e6, removed);
	}
	free(b->label);
	cap_buf_free(&b->res.out);
	cap_buf_free(&b->res.err);
	jv_free(b->res.timings);
	free(b->rootfs);
	util_strv_free(b->binds);
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
	snprintf(ino, sizeof ino, "%llu", (unsigned long long)ns_tmpfs_inodes(size));
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

int box_workspace(struct box_sys *s, const char *dir, bool exec, char *err, size_t errlen)
{
	int fd = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open the workspace %s: %s", dir, strerror(errno));
		return -1;
	}
	/* The clone inherits the host mount's propagation (shared, on most
	 * systems): nothing the sandbox mounts may propagate back.  Its flags
	 * are set here, by us: the sandbox moves this very mount into its
	 * tree (a clone made in another mount namespace may not be cloned
	 * again there) and only adds to them. */
	struct mount_attr a = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (exec ? 0 : MOUNT_ATTR_NOEXEC),
				.attr_clr = exec ? MOUNT_ATTR_NOEXEC : 0, .propagation = MS_PRIVATE };
	if (mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot make the workspace %s private%s: %s", dir,
			 exec && e == EPERM ? " and executable (its filesystem is mounted noexec: set workspace_exec = false, "
					      "or put state_dir elsewhere)" : "", strerror(e));
		close(fd);
		return -1;
	}
	(void)s;
	return fd;
}

/* The holder: a mount namespace of ours with nothing in it but a small
 * tmpfs of mount points (ns_build_holder), where kernels before 6.15 let
 * us clone a scratch.  They clone only
 * mounts attached in the caller's namespace; a scratch made by fsmount is
 * attached nowhere, and attaching it in our own namespace would show it
 * to the host (as root, ours is the host's).  Made at the first need. */
static int holder_make(void *arg, char *text, size_t len)
{
	(void)arg;
	return ns_build_holder(text, len);
}

bool box_scratch_direct(struct box_sys *s)
{
	if (!s->clone_via_holder) {
		char err[256];
		int fd = box_scratch(s, 4096, err, sizeof err);
		int c = fd < 0 ? -1 : open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (c < 0 && fd >= 0 && errno == EINVAL)
			s->clone_via_holder = true;
		if (c >= 0)
			close(c);
		if (fd >= 0)
			close(fd);
	}
	return !s->clone_via_holder;
}

int box_scratch_clone(struct box_sys *s, int scratch, int *second, char *err, size_t errlen)
{
	*second = -1;
	if (!s->clone_via_holder) {
		int fd = open_tree(scratch, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (fd >= 0 || errno != EINVAL) {
			if (fd < 0)
				snprintf(err, errlen, "cannot clone the scratch directory: %s", strerror(errno));
			return fd;
		}
		s->clone_via_holder = true; /* Linux before 6.15 */
	}
	if (s->holder_fd < 0 &&
	    (s->holder_fd = ns_made(CLONE_NEWNS, holder_make, NULL, "making the namespace scratch directories are cloned in",
				    err, errlen)) < 0)
		return -1;
	/* There: attach it, clone it once per stage, detach it again (our fd
	 * still reaches its files), all on the supervisor's thread.  The
	 * detach waits for an RCU grace period, the price of these kernels. */
	char path[32];
	snprintf(path, sizeof path, "/%lu", ++s->holder_seq);
	int cwd, a = -1, b = -1;
	const char *what = "enter the holder namespace";
	if (enter_mnt(s->holder_fd, &cwd) == 0) {
		what = "mkdir in the holder namespace";
		if (mkdir(path, 0700) == 0) {
			what = "attach the scratch in the holder namespace";
			if (move_mount(scratch, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) == 0) {
				what = "clone the scratch";
				if ((a = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) >= 0)
					b = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
				int e = errno;
				umount2(path, MNT_DETACH);
				errno = e;
			}
			int e = errno;
			rmdir(path);
			errno = e;
		}
		leave_mnt(s, cwd);
	}
	if (b < 0) {
		snprintf(err, errlen, "cannot %s: %s", what, strerror(errno));
		if (a >= 0)
			close(a);
		return -1;
	}
	*second = b;
	return a;
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
	/* Replace whatever is there (a workspace may hold a planted symlink or
	 * FIFO under this name): unlink, then create exclusively. */
	unlinkat(dir, p, 0);
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
	/* Before anything can fail: box_sys_free follows a failed init. */
	s->self_mnt_fd = s->root_fd = s->holder_fd = -1;
	for (int i = 0; i < BOX_TMPLS; i++)
		s->tmpl[i].mnt_fd = -1;
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
		tmpl_clear(&s->tmpl[i]);
	if (s->self_mnt_fd >= 0)
		close(s->self_mnt_fd);
	if (s->root_fd >= 0)
		close(s->root_fd);
	if (s->holder_fd >= 0)
		close(s->holder_fd);
	cg_sys_free(&s->cg);
	free(s->filter.filter);
	memset(s, 0, sizeof *s);
}
