#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
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
