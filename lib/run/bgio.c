/* bgio: a background job's input and terminal; see bgio.h. */
#define _GNU_SOURCE
#include "bgio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "util.h"

struct bgio {
	struct loop *loop;
	int fd;              /* the pipe's write end, or the terminal's master; -1 once closed */
	bool tty;
	bool eof;            /* bgio_eof: close (or ^D) once the queue is out */
	char *q;             /* queued input */
	size_t qlen, qcap;
	bgio_out_fn out;
	void *arg;
};

static void on_fd(struct loop *l, int fd, short rev, void *arg);

static void watch(struct bgio *b)
{
	if (b->fd < 0)
		return;
	short ev = (b->tty ? POLLIN : 0) | (b->qlen ? POLLOUT : 0);
	if (ev)
		loop_watch(b->loop, b->fd, ev, on_fd, b);
	else
		loop_unwatch(b->loop, b->fd);
}

static void close_fd(struct bgio *b)
{
	if (b->fd < 0)
		return;
	loop_unwatch(b->loop, b->fd);
	close(b->fd);
	b->fd = -1;
}

/* What the descriptor takes now of the queue; at its end, the input's. */
static void flush(struct bgio *b)
{
	while (b->qlen && b->fd >= 0) {
		ssize_t w = write(b->fd, b->q, b->qlen);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			/* The program closed its input (EPIPE), or its terminal
			 * is gone (EIO): what is queued has nowhere to go. */
			b->qlen = 0;
			if (!b->tty)
				close_fd(b);
			break;
		}
		memmove(b->q, b->q + w, b->qlen - (size_t)w);
		b->qlen -= (size_t)w;
	}
	if (!b->qlen && b->eof && !b->tty)
		close_fd(b);
	watch(b);
}

/* A terminal's output: everything there is now (the program's tree
 * writes it; EIO once no one holds the other end). */
static void read_tty(struct bgio *b)
{
	char buf[16384];
	for (;;) {
		ssize_t n = read(b->fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		b->out(b->arg, buf, (size_t)n);
		if ((size_t)n < sizeof buf)
			return;
	}
}

static void on_fd(struct loop *l, int fd, short rev, void *arg)
{
	struct bgio *b = arg;
	(void)l;
	(void)fd;
	if (b->tty && (rev & (POLLIN | POLLHUP | POLLERR))) {
		read_tty(b);
		/* The last holder of the other end is gone: nothing more comes
		 * until a process of the job opens it again, which none can (it
		 * was never a name in their tree).  Polling on would spin. */
		if ((rev & (POLLHUP | POLLERR)) && !(rev & POLLIN)) {
			close_fd(b);
			return;
		}
	} else if (!b->tty && (rev & (POLLERR | POLLHUP))) {
		b->qlen = 0;
		close_fd(b);
		return;
	}
	if (rev & POLLOUT)
		flush(b);
}

struct bgio *bgio_new(struct loop *l, unsigned rows, unsigned cols, bgio_out_fn out, void *arg, int *child, char *err,
		      size_t errlen)
{
	*child = -1;
	struct bgio *b = util_xalloc(sizeof *b);
	*b = (struct bgio){ .loop = l, .fd = -1, .tty = rows > 0, .out = out, .arg = arg };
	if (b->tty) {
		b->fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
		if (b->fd < 0 || unlockpt(b->fd) < 0 || ioctl(b->fd, TIOCSWINSZ, &ws) < 0 ||
		    (*child = ioctl(b->fd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
			snprintf(err, errlen, "cannot open a terminal for the program: %s", strerror(errno));
			bgio_free(b);
			return NULL;
		}
	} else {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0) {
			snprintf(err, errlen, "cannot make the program's input: %s", strerror(errno));
			bgio_free(b);
			return NULL;
		}
		*child = p[0];
		b->fd = p[1];
		fcntl(b->fd, F_SETFL, O_NONBLOCK);
	}
	watch(b);
	return b;
}

bool bgio_write(struct bgio *b, const char *data, size_t len, char *err, size_t errlen)
{
	if (b->fd < 0 || b->eof) {
		snprintf(err, errlen, "its input is closed");
		return false;
	}
	if (len > BGIO_PENDING - b->qlen) {
		snprintf(err, errlen, "%zu bytes still wait for the program to read them (at most %u may)", b->qlen,
			 BGIO_PENDING);
		return false;
	}
	if (b->qlen + len > b->qcap) {
		b->qcap = (b->qlen + len) * 2;
		b->q = util_xrealloc(b->q, b->qcap);
	}
	memcpy(b->q + b->qlen, data, len);
	b->qlen += len;
	flush(b);
	return true;
}

void bgio_eof(struct bgio *b)
{
	if (b->eof || b->fd < 0)
		return;
	if (b->tty) {
		/* The terminal's end-of-file character, as typed: a line of
		 * its own reads as the end of the input. */
		struct termios t;
		char c = tcgetattr(b->fd, &t) == 0 && t.c_cc[VEOF] ? (char)t.c_cc[VEOF] : 4;
		char ignored[8];
		bgio_write(b, &c, 1, ignored, sizeof ignored);
		return; /* more may be typed after it */
	}
	b->eof = true;
	flush(b);
}

bool bgio_resize(struct bgio *b, unsigned rows, unsigned cols)
{
	struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
	return b->tty && b->fd >= 0 && ioctl(b->fd, TIOCSWINSZ, &ws) == 0;
}

void bgio_drain(struct bgio *b)
{
	if (b->tty && b->fd >= 0)
		read_tty(b);
}

void bgio_free(struct bgio *b)
{
	if (!b)
		return;
	close_fd(b);
	free(b->q);
	free(b);
}
