/* sbx-egress-shim SOCKET COMMAND [ARG...]: the docker backend's install
 * container's first process after docker-init.
 *
 * Theory of operation: an install container has no network (NetworkMode
 * "none": only its loopback), like the native backend's install sandbox.
 * Its way out is the proxy sbx-run serves (lib/sandbox/egress.h) on a unix socket
 * that the container sees at SOCKET.  Package managers speak to proxies
 * over TCP, so this shim listens on 127.0.0.1:3128 in the container's own
 * network namespace, relays each connection to SOCKET byte for byte, and
 * runs COMMAND (the package manager, found on PATH) as its child; when
 * COMMAND ends, so does the shim, with COMMAND's status (the container
 * ends with it, and every relay with the container).  It decides nothing:
 * what may be reached is the proxy's to say.
 *
 * Linked statically: it runs in the language's image, whatever its libc.
 * Exit status: COMMAND's; 127 if it cannot be run; 126 if the shim cannot
 * set up.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define PORT 3128

static void relay(int a, int b)
{
	int fds[2] = { a, b };
	int open_[2] = { 1, 1 };
	char buf[65536];
	while (open_[0] || open_[1]) {
		struct pollfd pf[2] = { { .fd = open_[0] ? a : -1, .events = POLLIN }, { .fd = open_[1] ? b : -1, .events = POLLIN } };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			if (!open_[i] || !pf[i].revents)
				continue;
			ssize_t r = read(fds[i], buf, sizeof buf);
			ssize_t off = 0;
			while (r > 0 && off < r) {
				ssize_t w = write(fds[1 - i], buf + off, (size_t)(r - off));
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0) {
					r = -1;
					break;
				}
				off += w;
			}
			if (r <= 0) {
				open_[i] = 0;
				shutdown(fds[1 - i], SHUT_WR);
			}
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 3 || strlen(argv[1]) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
		fprintf(stderr, "usage: sbx-egress-shim SOCKET COMMAND [ARG...]\n");
		return 126;
	}
	signal(SIGPIPE, SIG_IGN);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons(PORT), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&la, sizeof la) < 0 || listen(lfd, 64) < 0) {
		fprintf(stderr, "sbx-egress-shim: cannot listen on 127.0.0.1:%d: %s\n", PORT, strerror(errno));
		return 126;
	}
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	pid_t cmd = fork();
	if (cmd == 0) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "sbx-egress-shim: cannot run %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	if (cmd < 0 || sfd < 0) {
		fprintf(stderr, "sbx-egress-shim: cannot start %s: %s\n", argv[2], strerror(errno));
		return 126;
	}
	for (;;) {
		struct pollfd pf[2] = { { .fd = lfd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return 126;
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == sizeof si)
				;
			int st;
			pid_t p;
			while ((p = waitpid(-1, &st, WNOHANG)) > 0)
				if (p == cmd)
					return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		if (!(pf[0].revents & POLLIN))
			continue;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		if (fork() == 0) {
			close(lfd);
			struct sockaddr_un ua = { .sun_family = AF_UNIX };
			snprintf(ua.sun_path, sizeof ua.sun_path, "%s", argv[1]);
			int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (u >= 0 && connect(u, (struct sockaddr *)&ua, sizeof ua) == 0)
				relay(c, u);
			_exit(0);
		}
		close(c);
	}
}
