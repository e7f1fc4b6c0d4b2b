#define _GNU_SOURCE
/* Unit tests for lib/run/live: output let out whole, in order, per stream,
 * in events that are valid UTF-8 and end on whole characters whatever the
 * chunks it came in; at most LIVE_MAX of a job, then one "truncated";
 * the leading edge at once, the rest at the timer's tick. */
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "loop.h"
#include "rec.h"
#include "tap.h"
#include "utf8.h"
#include "util.h"

struct got {
	char out[2][LIVE_MAX + 64];
	size_t len[2];
	int events, truncated, bad_utf8, split;
};

static void emit(jv ev, void *arg)
{
	struct got *g = arg;
	g->events++;
	bool t = false;
	rec_bool(ev, "truncated", &t);
	g->truncated += t;
	size_t n = 0;
	const char *d = rec_str(ev, "data", &n);
	const char *s = rec_str(ev, "stream", NULL);
	if (d && s) {
		int k = !strcmp(s, "stderr");
		g->bad_utf8 += !utf8_valid(d, n, NULL);
		g->split += n > LIVE_EVENT;
		memcpy(g->out[k] + g->len[k], d, n);
		g->len[k] += n;
	}
	jv_free(ev);
}

int main(void)
{
	struct loop *l = loop_new();
	struct got *g = calloc(1, sizeof *g);
	struct live *lv = live_new(l, emit, g);

	/* 3-byte characters fed a byte at a time and in odd chunks, on both
	 * streams, interleaved. */
	char text[9000];
	size_t tl = 0;
	while (tl + 3 <= sizeof text - 1) {
		memcpy(text + tl, "\xe2\x82\xac", 3); /* € */
		tl += 3;
	}
	for (size_t i = 0; i < 10; i++)
		live_add(lv, "a", 1, text + i, 1);
	live_add(lv, "a", 1, text + 10, tl - 10);
	for (size_t i = 0; i < tl; i += 7)
		live_add(lv, "a", 2, text + i, i + 7 <= tl ? 7 : tl - i);
	live_end(lv, "a");
	OK(g->len[0] == tl && !memcmp(g->out[0], text, tl), "stdout whole and in order (%zu of %zu bytes)", g->len[0], tl);
	OK(g->len[1] == tl && !memcmp(g->out[1], text, tl), "stderr whole and in order (%zu bytes)", g->len[1]);
	OK(g->bad_utf8 == 0, "every event is valid UTF-8 (split characters are held back)");
	OK(g->split == 0, "no event over LIVE_EVENT bytes");

	/* The cap: LIVE_MAX, then one truncated event and nothing more. */
	memset(g, 0, sizeof *g);
	char *big = malloc(LIVE_MAX + 5000);
	memset(big, 'x', LIVE_MAX + 5000);
	live_add(lv, "b", 1, big, LIVE_MAX + 5000);
	live_add(lv, "b", 2, "late", 4);
	live_end(lv, "b");
	OK(g->len[0] == LIVE_MAX && g->len[1] == 0 && g->truncated == 1, "capped at LIVE_MAX (%zu), then one truncated (%d)",
	   g->len[0], g->truncated);

	/* Invalid bytes are repaired, not dropped. */
	memset(g, 0, sizeof *g);
	live_add(lv, "c", 1, "ok\xff\xfe!", 5);
	live_end(lv, "c");
	OK(g->bad_utf8 == 0 && g->len[0] == 2 + 3 + 3 + 1, "invalid bytes become U+FFFD (%zu bytes: %.*s)", g->len[0],
	   (int)g->len[0], g->out[0]);

	/* The leading edge goes at once; what follows within LIVE_MS waits
	 * for the tick, and then comes.  First a quiet interval. */
	for (double q = util_now_ms(); util_now_ms() - q < LIVE_MS * 3;)
		loop_once(l, 50);
	memset(g, 0, sizeof *g);
	live_add(lv, "d", 1, "first\n", 6);
	OK(g->events == 1 && g->len[0] == 6, "after a quiet interval: at once");
	live_add(lv, "d", 1, "second\n", 7);
	OK(g->events == 1, "within LIVE_MS: held");
	double t0 = util_now_ms();
	while (g->events < 2 && util_now_ms() - t0 < 1000)
		loop_once(l, 200);
	double waited = util_now_ms() - t0;
	OK(g->events == 2 && g->len[0] == 13, "at the tick: out (%.0f ms)", waited);
	OK(waited < LIVE_MS * 3, "within a few LIVE_MS");
	live_end(lv, "d");
	OK(g->events == 2, "nothing left at the end");

	live_free(lv);
	loop_free(l);
	free(big);
	free(g);
	DONE();
}
