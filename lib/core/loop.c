#define _GNU_SOURCE
#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct watch {
	int fd;
	short events;
	loop_fn fn;
	void *arg;
	unsigned gen; /* bumped when the slot is reused, to skip stale results */
};

struct loop {
	struct watch *w;
	size_t n, cap;
	struct pollfd *pfd;
	unsigned *pgen;
	size_t pcap;
	unsigned gen;
};

struct loop *loop_new(void)
{
	return util_xalloc(sizeof(struct loop));
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	free(l->w);
	free(l->pfd);
	free(l->pgen);
	free(l);
}

static struct watch *find(struct loop *l, int fd)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->w[i].fd == fd)
			return &l->w[i];
	return NULL;
}

void loop_watch(struct loop *l, int fd, short events, loop_fn fn, void *arg)
{
	struct watch *w = find(l, fd);
	if (!w) {
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 16;
			l->w = util_xrealloc(l->w, l->cap * sizeof *l->w);
		}
		w = &l->w[l->n++];
	}
	w->fd = fd;
	w->events = events;
	w->fn = fn;
	w->arg = arg;
	w->gen = ++l->gen;
}

void loop_unwatch(struct loop *l, int fd)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->w[i].fd == fd) {
			l->w[i] = l->w[--l->n];
			return;
		}
}

size_t loop_count(const struct loop *l)
{
	return l->n;
}

int loop_once(struct loop *l, int timeout_ms)
{
	size_t n = l->n;
	if (n > l->pcap) {
		l->pcap = n * 2;
		l->pfd = util_xrealloc(l->pfd, l->pcap * sizeof *l->pfd);
		l->pgen = util_xrealloc(l->pgen, l->pcap * sizeof *l->pgen);
	}
	for (size_t i = 0; i < n; i++) {
		l->pfd[i] = (struct pollfd){ .fd = l->w[i].fd, .events = l->w[i].events };
		l->pgen[i] = l->w[i].gen;
	}
	int r = poll(l->pfd, n, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -1;
	int ran = 0;
	for (size_t i = 0; i < n; i++) {
		if (!l->pfd[i].revents)
			continue;
		/* A callback may have removed or replaced this watch. */
		struct watch *w = find(l, l->pfd[i].fd);
		if (!w || w->gen != l->pgen[i])
			continue;
		w->fn(l, w->fd, l->pfd[i].revents, w->arg);
		ran++;
	}
	return ran;
}
