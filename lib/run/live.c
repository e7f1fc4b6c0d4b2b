#define _GNU_SOURCE
#include "live.h"

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "req.h"
#include "utf8.h"
#include "util.h"

struct job {
	char *id;
	char buf[2][LIVE_EVENT];
	size_t len[2];
	size_t sent;           /* bytes let out so far (LIVE_MAX) */
	bool capped;
	bool unbounded;        /* live_unbounded */
	size_t budget[2];      /* its bytes to let out until the next tick */
	uint64_t skipped[2];   /* dropped since its last event */
	struct job *next;
};

struct live {
	struct loop *loop;
	live_emit_fn emit;
	void *arg;
	int timer;             /* armed while something is pending */
	bool armed;
	struct job *jobs;
};

static void on_timer(struct loop *l, int fd, short rev, void *arg);

struct live *live_new(struct loop *l, live_emit_fn emit, void *arg)
{
	struct live *lv = util_xalloc(sizeof *lv);
	*lv = (struct live){ .loop = l, .emit = emit, .arg = arg };
	lv->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (lv->timer >= 0)
		loop_watch(l, lv->timer, POLLIN, on_timer, lv);
	return lv;
}

static void job_free(struct job *j)
{
	free(j->id);
	free(j);
}

void live_free(struct live *lv)
{
	if (!lv)
		return;
	for (struct job *j = lv->jobs, *next; j; j = next) {
		next = j->next;
		job_free(j);
	}
	if (lv->timer >= 0) {
		loop_unwatch(lv->loop, lv->timer);
		close(lv->timer);
	}
	free(lv);
}

static struct job *find(struct live *lv, const char *id, bool make)
{
	for (struct job *j = lv->jobs; j; j = j->next)
		if (!strcmp(j->id, id))
			return j;
	if (!make)
		return NULL;
	struct job *j = util_xalloc(sizeof *j);
	*j = (struct job){ .id = util_strdup(id), .next = lv->jobs };
	lv->jobs = j;
	return j;
}

/* Let out stream s of job j: its whole characters (all of it if final). */
static void flush(struct live *lv, struct job *j, int s, bool final)
{
	size_t n = final ? j->len[s] : utf8_floor(j->buf[s], j->len[s]);
	if (n == 0 && j->len[s] == LIVE_EVENT)
		n = LIVE_EVENT; /* not UTF-8 at all: let it out repaired */
	if (n == 0)
		return;
	size_t clean;
	char *text = utf8_sanitize(j->buf[s], n, &clean);
	jv ev = jv_object_set(jv_object(), jv_string(REQ_KEY(id)), jv_string(j->id));
	ev = jv_object_set(ev, jv_string("event"), jv_string("output"));
	ev = jv_object_set(ev, jv_string("stream"), jv_string(s ? "stderr" : "stdout"));
	if (j->skipped[s]) {
		ev = jv_object_set(ev, jv_string("skipped"), jv_number((double)j->skipped[s]));
		j->skipped[s] = 0;
	}
	lv->emit(jv_object_set(ev, jv_string("data"), jv_string_sized(text, (int)clean)), lv->arg);
	free(text);
	memmove(j->buf[s], j->buf[s] + n, j->len[s] - n);
	j->len[s] -= n;
}

static void arm(struct live *lv)
{
	if (lv->armed || lv->timer < 0)
		return;
	struct itimerspec its = { .it_value = { 0, LIVE_MS * 1000000L } };
	timerfd_settime(lv->timer, 0, &its, NULL);
	lv->armed = true;
}

void live_unbounded(struct live *lv, const char *id)
{
	struct job *j = find(lv, id, true);
	j->unbounded = true;
	j->budget[0] = j->budget[1] = LIVE_BG_BURST;
}

/* A background job's output: out while its budget lasts; past it the
 * buffer keeps the newest bytes (the oldest counted as skipped). */
static void add_unbounded(struct live *lv, struct job *j, int s, const char *data, size_t len)
{
	while (len) {
		if (j->len[s] == LIVE_EVENT) {
			if (j->budget[s] >= LIVE_EVENT) {
				j->budget[s] -= LIVE_EVENT;
				flush(lv, j, s, false);
			}
			if (j->len[s] == LIVE_EVENT) { /* no budget, or no whole character: drop the oldest */
				size_t drop = len < LIVE_EVENT ? len : LIVE_EVENT;
				memmove(j->buf[s], j->buf[s] + drop, LIVE_EVENT - drop);
				j->len[s] -= drop;
				j->skipped[s] += drop;
			}
		}
		size_t take = LIVE_EVENT - j->len[s];
		if (take > len)
			take = len;
		memcpy(j->buf[s] + j->len[s], data, take);
		j->len[s] += take;
		data += take;
		len -= take;
	}
}

void live_add(struct live *lv, const char *id, int stream, const char *data, size_t len)
{
	struct job *j = find(lv, id, true);
	int s = stream == 2;
	if (j->unbounded) {
		add_unbounded(lv, j, s, data, len);
		if (!lv->armed && j->budget[s] >= j->len[s]) {
			j->budget[s] -= j->len[s];
			flush(lv, j, s, false);
		}
		arm(lv);
		return;
	}
	while (len && !j->capped) {
		size_t room = LIVE_MAX - j->sent;
		if (room == 0) {
			flush(lv, j, 0, true);
			flush(lv, j, 1, true);
			jv ev = jv_object_set(jv_object(), jv_string(REQ_KEY(id)), jv_string(j->id));
			ev = jv_object_set(ev, jv_string("event"), jv_string("output"));
			lv->emit(jv_object_set(ev, jv_string("truncated"), jv_true()), lv->arg);
			j->capped = true;
			break;
		}
		size_t take = LIVE_EVENT - j->len[s];
		if (take > len)
			take = len;
		if (take > room)
			take = room;
		memcpy(j->buf[s] + j->len[s], data, take);
		j->len[s] += take;
		j->sent += take;
		data += take;
		len -= take;
		if (j->len[s] == LIVE_EVENT)
			flush(lv, j, s, false);
	}
	/* Leading edge: output after a quiet interval goes at once; more
	 * within LIVE_MS waits for the timer. */
	if (!lv->armed)
		flush(lv, j, s, false);
	arm(lv);
}

static void on_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct live *lv = arg;
	uint64_t n;
	(void)!read(fd, &n, sizeof n);
	lv->armed = false;
	bool any = false;
	for (struct job *j = lv->jobs; j; j = j->next)
		for (int s = 0; s < 2; s++) {
			size_t before = j->len[s];
			if (j->unbounded)
				j->budget[s] = LIVE_BG_BURST;
			flush(lv, j, s, false);
			any |= j->len[s] != before;
		}
	if (any)
		arm(lv); /* still busy: the next output waits for the next tick */
	(void)l;
	(void)rev;
}

void live_end(struct live *lv, const char *id)
{
	for (struct job **p = &lv->jobs; *p; p = &(*p)->next)
		if (!strcmp((*p)->id, id)) {
			struct job *j = *p;
			flush(lv, j, 0, true);
			flush(lv, j, 1, true);
			*p = j->next;
			job_free(j);
			return;
		}
}
