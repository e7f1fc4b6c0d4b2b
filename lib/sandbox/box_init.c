/* box_init: the native sandbox from the inside: its init (pid 1 of the
 * sandbox's pid namespace: namespaces, mounts, cgroups, seccomp, then the
 * job) and the program child it forks, and the two ends of the protocol
 * they speak with the supervisor.  Everything here runs after clone3, in
 * the child's copy of the supervisor's memory; see box.c for the whole.
 */
#define _GNU_SOURCE
#include "box_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

#include "egress.h"
#include "filter.h"
#include "kern.h"
#include "ll.h"
#include "ns.h"
#include "proc.h"
#include "stage.h"
#include "util.h"

void box_msg_send(int fd, uint32_t type, int err, int64_t v0, int64_t v1, int64_t v2, int64_t v3, const char *text)
{
	struct msg m = { .type = type, .err = err, .v = { v0, v1, v2, v3 } };
	if (text)
		snprintf(m.text, sizeof m.text, "%s", text);
	/* < PIPE_BUF: atomic */
	(void)!write(fd, &m, sizeof m);
}

int64_t box_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int box_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd)
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

int box_recv_fds(int sock, void *buf, size_t len, int *fds)
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

	/* A new session: no controlling terminal, its own process group.
	 * With a terminal (a background job's, whose master the supervisor
	 * holds), that terminal becomes the session's: 0-2 are it, and ^C
	 * written to it interrupts the foreground group as on a desk. */
	setsid();
	bool tty = sp->h.flags & SPEC_TTY;
	if (dup2(sp->stdin_fd, 0) < 0 || dup2(tty ? sp->stdin_fd : KFD(K_OUT), 1) < 0 ||
	    dup2(tty ? sp->stdin_fd : KFD(K_ERR), 2) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "set up fds 0-2");
		_exit(127);
	}
	if (tty && ioctl(0, TIOCSCTTY, 0) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "make the terminal the program's own");
		_exit(127);
	}
	/* Only 0-2 and the (close-on-exec) status pipe survive, and the
	 * binary to run (close-on-exec too). */
	if (st != 3) {
		if (dup3(st, 3, O_CLOEXEC) < 0)
			_exit(127);
		st = 3;
	}
	int exe = sp->exe_fd;
	if (exe >= 0 && exe != 4) {
		if (dup3(exe, 4, O_CLOEXEC) < 0)
			_exit(127);
		exe = 4;
	}
	proc_close_from(exe >= 0 ? 5 : 4);

	/* Signals as a fresh process has them: the supervisor ignores SIGPIPE
	 * and blocks others, which programs must not inherit. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);

	/* A login shell's umask: set-up made its modes as written (umask 0),
	 * but what a program makes must not be writable by others (a
	 * session's files outlive the run). */
	umask(022);

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
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "switch to the sandbox user");
		_exit(127);
	}
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "drop capabilities");
		_exit(127);
	}
	if (sp->cwd && chdir(sp->cwd) < 0) {
		snprintf(what, sizeof what, "enter the directory %.100s (cwd)", sp->cwd);
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, what);
		_exit(127);
	}
	/* The seccomp filter (and no_new_privs) came from init: loading it costs
	 * the kernel a pass over every system call, so it is done once. */
	*t_execve = box_mono_ns(); /* init's memory, borrowed until the exec */
	/* A run's own binary through its descriptor (ns_work) */
	int err = exe >= 0		   ? (execveat(exe, "", sp->argv, sp->env, AT_EMPTY_PATH), errno)
		  : exe == NS_EXE_MISSING ? ENOENT
					   : exec_path(sp->argv, sp->env);
	snprintf(what, sizeof what, "%s", sp->argv[0]);
	box_msg_send(st, MSG_EXECFAIL, err, 0, 0, 0, 0, what);
	_exit(127);
}

/* ---- inside the sandbox: init --------------------------------------------- */

/* Read the job from the spec socket; false at EOF (the supervisor let the
 * warm sandbox go) or on any malformed message. */
static bool recv_spec(int fd, struct spec *sp)
{
	int fds[MSG_FDS];
	int nfd = box_recv_fds(fd, &sp->h, sizeof sp->h, fds);
	bool own = sp->h.flags & SPEC_OWN;
	if (nfd != 1 + !!(sp->h.flags & SPEC_SCRATCH) + own || (own && !(sp->h.flags & SPEC_SCRATCH)) ||
	    sp->h.len > SPEC_MAX || sp->h.argc == 0 || sp->h.argc + sp->h.envc > SPEC_MAX || sp->h.outc > NS_MAX_OUTPUTS)
		return false;
	sp->stdin_fd = fds[0];
	sp->scratch_fd = nfd > 1 ? fds[1] : -1;
	sp->own_fd = own ? fds[2] : -1;
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
	/* A top-level name of sbx's own (layout.h), never a path. */
	if (own && (p >= end || !ns_reserved(p) || strchr(p, '/')))
		return false;
	sp->own = own ? p : NULL;
	if (own)
		p += strlen(p) + 1;
	/* Where the program starts: beneath its working directory.  (chdir
	 * runs as the program's user, in the sandbox's own tree: a link
	 * there leads nowhere the program could not go itself.) */
	sp->cwd = NULL;
	if (sp->h.flags & SPEC_CWD) {
		if (p >= end || !*p || *p == '/')
			return false;
		sp->cwd = p;
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

/* init's SIGUSR2 handler: the supervisor's box_signal, a signal for the
 * program's process group (a background job's process_signal), its number
 * the value of an SI_QUEUE signal.  A program of the sandbox can queue
 * one too: all it gets is a signal to its own group, which it could send
 * itself.  Only signals a person would send; the group is the program's
 * (setsid made it its leader), never init's. */
static volatile sig_atomic_t prog_pid;
static void on_forward(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	int s = si->si_value.sival_int;
#define SIG_OK(name) s == SIG##name ||
	if (si->si_code == SI_QUEUE && prog_pid > 0 && (PROC_SIGNALS(SIG_OK) false))
		kill(-prog_pid, s);
#undef SIG_OK
}

/* Set-up steps, sent as marks once the job asks for them. */
enum { T_IDS, T_NS, T_ROOT, T_LO, T_N };
static const char *const t_name[T_N] = { "ids_mapped", "namespaces_made", "root_entered", "loopback_up" };

/* Root of the user namespace (as root: host uid conf.uid), and no
 * capability for anything exec'd here. */
static void init_ids(const struct child_args *a, int st)
{
	if (a->sys->root) {
		if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0 || setgroups(0, NULL) < 0) {
			box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "become root of the user namespace");
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
}

/* The namespaces clone3 did not make, the read-only root, lo. */
static void init_namespaces(const struct child_args *a, int st, int64_t t[T_N])
{
	char err[256];
	/* The remaining namespaces are made here rather than by clone3: their
	 * cost (a network namespace registers sysctls and a loopback device)
	 * is then paid in parallel, not by the supervisor's thread, which
	 * meanwhile makes the run's v1 cgroups.  (Made before the id maps,
	 * they gain nothing: init gets no CPU until the supervisor waits.
	 * With init started on the other CPU they overlap, but contend with
	 * the supervisor and the last run's teardown for the rtnl and cgroup
	 * locks, and the sandbox was ready later, not sooner.) */
	if (unshare(CLONE_NEWIPC | CLONE_NEWUTS | (a->network || a->slot_net ? 0 : CLONE_NEWNET)) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "new ipc, uts and network namespaces");
		_exit(122);
	}
	t[T_NS] = box_mono_ns();
	if (sethostname("sandbox", 7) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "hostname in the new uts namespace");
		_exit(122);
	}
	struct ns_root root = { .rootfs = a->rootfs ? a->rootfs : "", .etc = a->sys->conf->etc, .binds = a->binds,
				.network = a->network };
	if ((a->build_root && ns_build_root(&root, err, sizeof err) < 0) || ns_enter_root(err, sizeof err) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	t[T_ROOT] = box_mono_ns();
	if (!a->network && !a->slot_net && ns_loopback_up(err, sizeof err) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	t[T_LO] = a->network || a->slot_net ? 0 : box_mono_ns();
}

static void init_cgroups(int st)
{
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
	int got = box_recv_fds(KFD(K_SPEC), &ncg, sizeof ncg, cg);
	if (got < 0)
		_exit(0);
	if (got != (int)ncg) {
		box_msg_send(st, MSG_FAIL, EPROTO, 0, 0, 0, 0, "join the run's cgroup");
		_exit(122);
	}
	for (int i = 0; i < got; i++) {
		if (write(cg[i], "0", 1) != 1) {
			box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "join the run's cgroup");
			_exit(122);
		}
		close(cg[i]);
	}
	if (unshare(CLONE_NEWCGROUP) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "new cgroup namespace");
		_exit(122);
	}
}

/* The job's part of the set-up: its proxy socket, the marks, its work
 * directories, Landlock. */
static void init_job(const struct child_args *a, int st, struct spec *sp, const int64_t t[T_N], int64_t t_ready)
{
	char err[256];
	bool timings = sp->h.flags & SPEC_TIMINGS;
	/* An install reaches only its proxy, at 127.0.0.1:EGRESS_PORT of its
	 * own network namespace: the socket is made here, and served by the
	 * supervisor's side (egress.h), before the program runs. */
	if (sp->h.flags & SPEC_EGRESS) {
		int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons(EGRESS_PORT),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		if (a->network || lfd < 0 || bind(lfd, (struct sockaddr *)&la, sizeof la) < 0 || listen(lfd, 64) < 0 ||
		    box_send_fds(KFD(K_SPEC), "e", 1, &lfd, 1) < 0) {
			box_msg_send(st, MSG_FAIL, a->network ? EINVAL : errno, 0, 0, 0, 0, "make the install's proxy socket");
			_exit(123);
		}
		close(lfd);
	}
	if (timings) {
		for (int i = 0; i < T_N; i++)
			if (t[i])
				box_msg_send(st, MSG_MARK, 0, t[i], 0, 0, 0, t_name[i]);
		box_msg_send(st, MSG_MARK, 0, t_ready, 0, 0, 0, "root_built");
		box_msg_send(st, MSG_MARK, 0, box_mono_ns(), 0, 0, 0, "job_received");
	}
	struct ns_work work = { .tmpfs_bytes = sp->h.tmpfs, .scratch_fd = sp->scratch_fd, .own_fd = sp->own_fd, .own = sp->own,
				.outputs = sp->outputs, .exe = sp->argv[0], .deps = sp->h.flags & SPEC_DEPS,
				.work_exec = sp->h.flags & SPEC_WORK_EXEC };
	if (ns_attach_work(&work, err, sizeof err) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	sp->exe_fd = work.exe_fd;
	if (sp->scratch_fd >= 0)
		close(sp->scratch_fd);
	if (sp->own_fd >= 0)
		close(sp->own_fd);
	close(KFD(K_SPEC));
	/* Writes only where the sandbox may write (ll.h): no /proc/PID/mem of
	 * a sibling.  The program inherits it. */
	static const char *const writable[] = { NS_WORKDIR, "/tmp", NS_HOME, "/dev/shm", "/dev/pts", "/dev/null",
						"/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", NULL };
	if ((a->sys->kern & (1u << KF_LANDLOCK)) && ll_write_only_beneath(writable, err, sizeof err) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, err);
		_exit(123);
	}
	if (timings)
		box_msg_send(st, MSG_MARK, 0, box_mono_ns(), 0, 0, 0, "work_attached");
}

/* Run the program, reap everything, report: the last thing init does. */
static _Noreturn void init_run(const struct child_args *a, int st, const struct spec *sp)
{
	bool timings = sp->h.flags & SPEC_TIMINGS;
	/* At the timeout the supervisor asks init (SIGUSR1, which no process
	 * of the sandbox may send it) to kill everything: init then reaps it
	 * all and reports, the CPU time of the whole tree included.  Were the
	 * kernel to kill init instead, its pid-namespace teardown would reap
	 * the rest unaccounted. */
	struct sigaction sa = { .sa_sigaction = on_stop, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	struct sigaction fw = { .sa_sigaction = on_forward, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&fw.sa_mask);
	sigaction(SIGUSR2, &fw, NULL);
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigaddset(&usr1, SIGUSR2);
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
	/* The filter goes on before the fork: the program inherits it, and init
	 * runs nothing but fork, wait and kill from here on. */
	if (filter_load(&a->sys->filter) < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "load the seccomp filter");
		_exit(124);
	}
	int64_t t0 = box_mono_ns();
	volatile int64_t t_execve = 0;
	/* vfork: the program borrows init's memory until its exec, rather
	 * than getting a copy (page tables, copy-on-write faults on both
	 * sides, and its teardown at exec); init has nothing to do meanwhile.
	 * program_main changes only what is the child's own (fds, signal
	 * dispositions, ids, rlimits) and then execs or _exits. */
	pid_t prog = vfork();
	if (prog < 0) {
		box_msg_send(st, MSG_FAIL, errno, 0, 0, 0, 0, "fork the program");
		_exit(124);
	}
	if (prog == 0)
		program_main(a, sp, &t_execve);
	prog_pid = prog;
	close(sp->stdin_fd);
	close(KFD(K_OUT));
	close(KFD(K_ERR));
	box_msg_send(st, MSG_RUNNING, 0, prog, t0, 0, 0, NULL);
	/* The child's own set-up (ids, rlimits, signals) ended here. */
	if (timings && t_execve)
		box_msg_send(st, MSG_MARK, 0, t_execve, 0, 0, 0, "program_execve");

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
			t1 = box_mono_ns();
			/* The program is done: so is everything it started. */
			kill(-1, SIGKILL);
		}
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	int64_t cpu_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
			 (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
	box_msg_send(st, MSG_EXIT, 0, status, cpu_us, ru.ru_maxrss, t1 - t0, NULL);
	_exit(0);
}

_Noreturn void box_init_main(struct child_args *a)
{
	/* Die with the supervisor; then wait for it to write our id maps.  EOF
	 * on the go pipe means it is gone. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (proc_keep_fds(a->fds, K_N) < 0)
		_exit(120);
	int st = KFD(K_STATUS);
	char go;
	if (read(KFD(K_GO), &go, 1) != 1)
		_exit(121);
	int64_t t[T_N] = { 0 };
	t[T_IDS] = box_mono_ns();
	close(KFD(K_GO));
	proc_set_title(a->sys->argv, "sbx-init");
	init_ids(a, st);
	init_namespaces(a, st, t);
	init_cgroups(st);
	int64_t t_ready = box_mono_ns();

	/* Ready: wait for the job.  Marks go out only if it asks for them. */
	struct spec sp;
	if (!recv_spec(KFD(K_SPEC), &sp))
		_exit(0);
	init_job(a, st, &sp, t, t_ready);
	init_run(a, st, &sp);
}
