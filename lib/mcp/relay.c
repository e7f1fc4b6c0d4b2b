#define _GNU_SOURCE
#include "relay.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "proc.h"
#include "util.h"

/* One way: bytes read from `from`, not yet written to `to`. */
struct way {
	int from, to;
	char *buf;
	size_t len, cap;
	bool eof;      /* from has nothing more */
	bool shut;     /* and to was told (shutdown) */
};

struct relay {
	struct loop *loop;
	int a, b;
	int linger;        /* a timerfd once one way is done, or -1 */
	unsigned flags;
	struct way w[2];   /* [0]: a to b, [1]: b to a */
	relay_done_fn done;
	void *arg;
};

static void way_init(struct way *w, int from, int to, const char *first, size_t n)
{
	w->from = from;
	w->to = to;
	w->cap = n > RELAY_BUF ? n : RELAY_BUF;
	w->buf = util_xalloc(w->cap);
	if (n)
		memcpy(w->buf, first, n);
	w->len = n;
}

/* What each side waits for: reading while its way has room, writing while
 * the other way has bytes for it. */
static void on_side(struct loop *l, int fd, short rev, void *arg);
static void arm(struct relay *r)
{
	int fds[2] = { r->a, r->b };
	for (int s = 0; s < 2; s++) {
		const struct way *in = &r->w[s], *out = &r->w[!s];
		short ev = (short)((!in->eof && in->len < in->cap ? POLLIN : 0) | (out->len ? POLLOUT : 0));
		if (ev)
			loop_watch(r->loop, fds[s], ev, on_side, r);
		else
			loop_unwatch(r->loop, fds[s]);
	}
}

void relay_close(struct relay *r)
{
	loop_unwatch(r->loop, r->a);
	loop_unwatch(r->loop, r->b);
	if (r->linger >= 0) {
		loop_unwatch(r->loop, r->linger);
		close(r->linger);
	}
	if (!(r->flags & RELAY_KEEP_A))
		close(r->a);
	close(r->b);
	free(r->w[0].buf);
	free(r->w[1].buf);
	if (r->done)
		r->done(r->arg);
	free(r);
}

/* false: the side failed (reset, gone): the relay ends. */
static bool pump_in(struct way *w)
{
	ssize_t n;
	do
		n = read(w->from, w->buf + w->len, w->cap - w->len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		w->len += (size_t)n;
	else if (n == 0)
		w->eof = true;
	return n >= 0 || errno == EAGAIN;
}

static bool pump_out(struct way *w)
{
	ssize_t n;
	do
		n = send(w->to, w->buf, w->len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		memmove(w->buf, w->buf + n, w->len - (size_t)n);
		w->len -= (size_t)n;
	}
	return n >= 0 || errno == EAGAIN;
}

static void on_linger(struct loop *l, int fd, short rev, void *arg)
{
	relay_close(arg);
	(void)l, (void)fd, (void)rev;
}

/* One way is done and the other is quiet: a side that left while the
 * other says nothing (a WebSocket's browser gone, an app that never
 * answers) would hold both sockets for ever.  Any byte either way puts
 * the end off again. */
static void linger(struct relay *r)
{
	if (r->linger < 0) {
		r->linger = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (r->linger < 0)
			return;
		loop_watch(r->loop, r->linger, POLLIN, on_linger, r);
	}
	struct itimerspec its = { .it_value = { RELAY_LINGER_MS / 1000, RELAY_LINGER_MS % 1000 * 1000000L } };
	timerfd_settime(r->linger, 0, &its, NULL);
}

static void on_side(struct loop *l, int fd, short rev, void *arg)
{
	struct relay *r = arg;
	int s = fd == r->a ? 0 : 1;
	struct way *in = &r->w[s], *out = &r->w[!s];
	bool ok = true;
	if ((rev & (POLLIN | POLLHUP | POLLERR)) && !in->eof && in->len < in->cap)
		ok = pump_in(in);
	if (ok && in->len)
		ok = pump_out(in); /* at once: the other side is most often ready */
	if (ok && (rev & (POLLOUT | POLLERR)) && out->len)
		ok = pump_out(out);
	for (int i = 0; ok && i < 2; i++)
		if (r->w[i].eof && !r->w[i].len && !r->w[i].shut) {
			shutdown(r->w[i].to, SHUT_WR);
			r->w[i].shut = true;
		}
	if (!ok || (r->w[0].shut && r->w[1].shut)) {
		relay_close(r);
		return;
	}
	if (r->w[0].shut || r->w[1].shut)
		linger(r);
	arm(r);
	(void)l;
}

struct relay *relay_new(struct loop *l, int a, int b, unsigned flags, const char *to_a, size_t to_a_len, const char *to_b,
			size_t to_b_len, relay_done_fn done, void *arg)
{
	struct relay *r = util_xalloc(sizeof *r);
	*r = (struct relay){ .loop = l, .a = a, .b = b, .linger = -1, .flags = flags, .done = done, .arg = arg };
	way_init(&r->w[0], a, b, to_b, to_b_len);
	way_init(&r->w[1], b, a, to_a, to_a_len);
	proc_set_nonblock(a, true);
	proc_set_nonblock(b, true);
	arm(r);
	return r;
}
