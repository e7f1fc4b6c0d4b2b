#define _GNU_SOURCE
#include "thumb.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "imgsize.h"
#include "proc.h"
#include "util.h"

/* The PNG in a memory file, read from its start: the helper's stdin, which
 * it reads whole while nobody waits on a pipe for it to. */
static int input_file(const unsigned char *png, size_t len)
{
	int fd = memfd_create("sbx-thumb", MFD_CLOEXEC);
	if (fd >= 0 && (util_write_all(fd, png, len) < 0 || lseek(fd, 0, SEEK_SET) < 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Start the helper with in as stdin, out as stdout, /dev/null as stderr
 * and nothing else open. */
static pid_t spawn(int in, int out, int64_t uid, size_t max)
{
	char *path = util_libexec("sbx-thumb");
	char u[24], m[24];
	snprintf(u, sizeof u, "%lld", (long long)uid);
	snprintf(m, sizeof m, "%zu", max);
	char *argv[] = { "sbx-thumb", u, m, NULL };
	pid_t parent = getpid(), pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (proc_child_prepare(parent, SIGKILL) < 0 || null < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(null, 2) < 0 || proc_keep_fds(NULL, 0) < 0)
			_exit(1);
		execv(path, argv);
		_exit(127);
	}
	free(path);
	return pid;
}

bool thumb_make(const unsigned char *png, size_t len, size_t max, double deadline, int64_t uid, unsigned char **out,
		size_t *outlen, struct thumb *t, char *err, size_t errlen)
{
	*out = NULL;
	*outlen = 0;
	*t = (struct thumb){ 0 };
	if (!imgsize_png(png, len, &t->width, &t->height)) {
		snprintf(err, errlen, "not a PNG");
		return false;
	}
	if ((uint64_t)t->width * t->height > IMGSIZE_INLINE_PIXELS) {
		snprintf(err, errlen, "%ux%u pixels: too many to scale down", t->width, t->height);
		return false;
	}
	if (len > THUMB_MAX_INPUT) {
		snprintf(err, errlen, "larger than %u MiB", THUMB_MAX_INPUT >> 20);
		return false;
	}
	if (util_now_ms() >= deadline) {
		snprintf(err, errlen, "no time left to scale it down (%d ms for a result's images)", THUMB_MS);
		return false;
	}
	int p[2] = { -1, -1 }, in = input_file(png, len);
	if (in < 0 || pipe2(p, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "memfd or pipe: %s", strerror(errno));
		if (in >= 0)
			close(in);
		return false;
	}
	pid_t pid = spawn(in, p[1], uid, max);
	close(in);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return false;
	}
	size_t cap = max + 8, got = 0;
	unsigned char *buf = util_xalloc(cap + 1);
	bool late = false;
	for (;;) {
		double left = deadline - util_now_ms();
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int r = left > 0 ? poll(&pf, 1, (int)left + 1) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			late = r == 0;
			break;
		}
		ssize_t n = read(p[0], buf + got, cap + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got > cap)
			break; /* more than it may send: the answer is not trusted */
	}
	close(p[0]);
	if (late || got > cap)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	uint32_t dim[2] = { 0, 0 };
	if (got >= 8)
		memcpy(dim, buf, sizeof dim);
	/* a copy is smaller than what it copies: a header that says more is
	 * the helper's lie, and would be the client's to decode */
	bool ok = !late && got > 8 && got <= cap && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		  imgsize_png(buf + 8, got - 8, &t->thumb_w, &t->thumb_h) && t->thumb_w == dim[0] && t->thumb_h == dim[1] &&
		  t->thumb_w <= t->width && t->thumb_h <= t->height;
	if (!ok) {
		if (late)
			snprintf(err, errlen, "no time left to scale it down (%d ms for a result's images)", THUMB_MS);
		else if (WIFSIGNALED(status))
			snprintf(err, errlen, "its decoder was killed (%s)", strsignal(WTERMSIG(status)));
		else
			snprintf(err, errlen, "it could not be decoded or made small enough (%d)",
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		free(buf);
		return false;
	}
	memmove(buf, buf + 8, got - 8);
	*out = buf;
	*outlen = got - 8;
	return true;
}
