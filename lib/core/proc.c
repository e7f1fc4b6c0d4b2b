#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <unistd.h>

void proc_close_from(int lo)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)lo, ~0u, 0) == 0)
		return;
#endif
	/* Kernels before 5.9: reading what /proc says is open is not
	 * async-signal-safe, so walk a generous range. */
	for (int fd = lo; fd < 65536; fd++)
		close(fd);
}

int proc_keep_fds(int *fds, size_t n)
{
	/* First lift every kept fd above the target range so that dup2 onto
	 * 3..3+n never clobbers one still to be moved. */
	int high = 3 + (int)n + 64;
	for (size_t i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		int f = fcntl(fds[i], F_DUPFD_CLOEXEC, high);
		if (f < 0)
			return -1;
		fds[i] = f;
		if (f >= high)
			high = f + 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		int target = 3 + (int)i;
		if (dup3(fds[i], target, O_CLOEXEC) < 0)
			return -1;
		fds[i] = target;
	}
	/* An unused slot is empty, whatever it held before. */
	for (size_t i = 0; i < n; i++)
		if (fds[i] < 0)
			close(3 + (int)i);
	proc_close_from(3 + (int)n);
	return 0;
}

int proc_child_prepare(int parent, int deathsig)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, deathsig);
	/* The parent may have died before prctl: then no signal will come. */
	return getppid() == parent ? 0 : -1;
}

int proc_stop_signals(void)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

int proc_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int proc_set_cloexec(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFD, on ? fl | FD_CLOEXEC : fl & ~FD_CLOEXEC);
}

void proc_set_title(char **argv, const char *title)
{
	if (!argv || !argv[0])
		return;
	/* argv strings are contiguous; the kernel reports that whole area. */
	char *start = argv[0], *end = argv[0] + strlen(argv[0]);
	for (int i = 1; argv[i] && argv[i] == end + 1; i++)
		end = argv[i] + strlen(argv[i]);
	size_t room = (size_t)(end - start);
	memset(start, 0, room);
	strncpy(start, title, room);
}

int proc_send_fd(int sock, const void *buf, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof cbuf);
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof cbuf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

ssize_t proc_recv_fd(int sock, char *buf, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { buf, len - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	*fd = -1;
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	buf[n] = 0;
	/* Only the first descriptor is kept: any more are closed. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int got;
				memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
				if (*fd < 0)
					*fd = got;
				else
					close(got);
			}
	return n;
}

/* (each name after ", ": the first's is skipped) */
#define SIG_NAME(s) ", " #s
static const char all_names[] = PROC_SIGNALS(SIG_NAME);
#undef SIG_NAME
const char *const proc_signal_names = all_names + 2;

int proc_signal_number(const char *name)
{
	if (!strncmp(name, "SIG", 3))
		name += 3;
#define SIG_IS(s) if (!strcmp(name, #s)) return SIG##s;
	PROC_SIGNALS(SIG_IS)
#undef SIG_IS
	return 0;
}
