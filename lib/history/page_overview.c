/* page_overview: the overview page, for the dashboard's / and for
 * sbx-history --format html: counts by status (table and bars), each
 * language's runs, success rate and percentiles, durations over time (an
 * SVG line chart drawn here), the latest runs.  Part of page (page.h);
 * what it shares with page.c is in page_int.h. */
#define _GNU_SOURCE
#include "page.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "page_int.h"
#include "rec.h"
#include "status.h"
#include "util.h"

/* ---- the overview --------------------------------------------------------- */

int64_t page_range_seconds(const char *range)
{
	static const struct { const char *name; int64_t s; } r[] = {
		{ "1h", 3600 }, { "24h", 86400 }, { "7d", 7 * 86400 }, { "30d", 30 * 86400 }, { "all", 0 },
	};
	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
		if (!strcmp(range, r[i].name))
			return r[i].s;
	return -1;
}

#define MAX_GROUPS 64

struct group {
	char name[64];
	double count, success, rated, p50, p95;
	bool has_all;
};

struct overview {
	struct group st[MAX_GROUPS], lang[MAX_GROUPS];
	int nst, nlang;
	double total;
};

/* Names are compared as far as they are kept (63 bytes): a longer one
 * must still find its own group.  Past MAX_GROUPS, the rest go to the
 * last, then named "other". */
static struct group *group_of(struct group *g, int *n, const char *name)
{
	for (int i = 0; i < *n; i++)
		if (!strncmp(g[i].name, name, sizeof g[i].name - 1))
			return &g[i];
	if (*n == MAX_GROUPS) {
		snprintf(g[MAX_GROUPS - 1].name, sizeof g[0].name, "other");
		return &g[MAX_GROUPS - 1];
	}
	struct group *x = &g[(*n)++];
	memset(x, 0, sizeof *x);
	snprintf(x->name, sizeof x->name, "%s", name);
	return x;
}

static bool on_stat(jv row, void *arg)
{
	struct overview *o = arg;
	const char *lang = page_sval(row, "language"), *status = page_sval(row, "status");
	double count = 0, rate = -1, p50 = 0, p95 = 0;
	page_nval(row, "count", &count);
	/* (an "all" row of a language none of whose programs ran has none) */
	bool durations = page_nval(row, "p50_ms", &p50) && page_nval(row, "p95_ms", &p95);
	jv r = rec_get(row, "success_rate");
	if (jv_get_kind(r) == JV_KIND_NUMBER)
		rate = jv_number_value(r);
	jv_free(r);
	if (lang && status) {
		struct group *l = group_of(o->lang, &o->nlang, lang);
		if (!strcmp(status, "all")) {
			l->has_all = durations;
			l->p50 = p50;
			l->p95 = p95;
		} else {
			struct group *s = group_of(o->st, &o->nst, status);
			s->count += count;
			l->count += count;
			o->total += count;
			if (rate >= 0)
				l->success = rate;
			l->rated = rate >= 0;
		}
	}
	jv_free(row);
	return true;
}

struct series_ctx {
	double b[512], p50[512], p95[512], count[512];
	int n;
};

static bool on_point(jv row, void *arg)
{
	struct series_ctx *s = arg;
	/* The latest 512 buckets: oldest first, the oldest dropped. */
	if (s->n == 512) {
		memmove(s->b, s->b + 1, 511 * sizeof *s->b);
		memmove(s->p50, s->p50 + 1, 511 * sizeof *s->p50);
		memmove(s->p95, s->p95 + 1, 511 * sizeof *s->p95);
		memmove(s->count, s->count + 1, 511 * sizeof *s->count);
		s->n--;
	}
	page_nval(row, "bucket", &s->b[s->n]);
	page_nval(row, "p50_ms", &s->p50[s->n]);
	page_nval(row, "p95_ms", &s->p95[s->n]);
	page_nval(row, "count", &s->count[s->n]);
	s->n++;
	jv_free(row);
	return true;
}

static void bars(struct page *p, const struct group *g, int n, double total)
{
	int h = 22 * n + 4;
	page_printf(p, "<svg id=\"chart-status\" class=\"chart\" viewBox=\"0 0 420 %d\" role=\"img\" aria-label=\"runs by status\">", h);
	for (int i = 0; i < n; i++) {
		double w = total > 0 ? 260.0 * g[i].count / total : 0;
		page_printf(p, "<text x=\"0\" y=\"%d\">", 22 * i + 16);
		page_str(p, g[i].name);
		page_printf(p, "</text><rect class=\"bar\" x=\"110\" y=\"%d\" width=\"%.1f\" height=\"16\"></rect>"
			       "<text x=\"%.1f\" y=\"%d\">%.0f</text>",
			    22 * i + 4, w, 115 + w, 22 * i + 16, g[i].count);
	}
	page_raw(p, "</svg>");
}

static void line_chart(struct page *p, const struct series_ctx *s, int64_t bucket_s)
{
	const double W = 640, H = 200, L = 50, B = 24;
	double lo = s->n ? s->b[0] : 0, hi = s->n ? s->b[s->n - 1] + (double)bucket_s : 1, top = 1;
	for (int i = 0; i < s->n; i++)
		top = fmax(top, s->p95[i]);
	page_printf(p, "<svg id=\"chart-durations\" class=\"chart\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		       "aria-label=\"p50 and p95 duration over time\">",
		    W, H);
	page_printf(p, "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"></line>", L, H - B, W, H - B);
	page_printf(p, "<line class=\"axis\" x1=\"%.0f\" y1=\"0\" x2=\"%.0f\" y2=\"%.0f\"></line>", L, L, H - B);
	page_printf(p, "<text x=\"0\" y=\"12\">%.0f ms</text><text x=\"0\" y=\"%.0f\">0</text>", top, H - B);
	static const char *const cls[] = { "p50", "p95" };
	for (int k = 0; k < 2 && s->n; k++) {
		const double *v = k ? s->p95 : s->p50;
		page_printf(p, "<polyline class=\"%s\" points=\"", cls[k]);
		for (int i = 0; i < s->n; i++) {
			double x = L + (W - L) * (s->b[i] + (double)bucket_s / 2 - lo) / (hi - lo);
			double y = (H - B) - (H - B - 4) * v[i] / top;
			page_printf(p, "%.1f,%.1f ", x, y);
		}
		page_raw(p, "\"></polyline>");
		for (int i = 0; i < s->n; i++) {
			double x = L + (W - L) * (s->b[i] + (double)bucket_s / 2 - lo) / (hi - lo);
			double y = (H - B) - (H - B - 4) * v[i] / top;
			page_printf(p, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"></circle>", cls[k], x, y);
		}
	}
	char t0[40] = "", t1[40] = "";
	util_iso8601(lo * 1000, t0, sizeof t0);
	util_iso8601(hi * 1000, t1, sizeof t1);
	page_printf(p, "<text x=\"%.0f\" y=\"%.0f\">%.16s</text><text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.16s</text>",
		    L, H - 6, t0, W, H - 6, t1);
	page_raw(p, "<text class=\"p50\" x=\"560\" y=\"12\">p50</text><text class=\"p95\" x=\"600\" y=\"12\">p95</text></svg>");
}

int page_overview(struct page *p, struct hist *h, const struct hist_filter *base, const char *range, char *err,
		  size_t errlen)
{
	/* No range: the runs of base as they are (sbx-history's filters). */
	int64_t span = range ? page_range_seconds(range) : 0;
	if (span < 0) {
		range = "24h";
		span = 86400;
	}
	struct hist_filter f = *base;
	double now = util_epoch_ms() / 1000;
	if (span > 0)
		f.since = now - (double)span;
	page_begin(p, "overview", "overview");
	page_raw(p, "<h1>Overview</h1>");
	if (range) {
		page_raw(p, "<p class=\"ranges\">");
		static const char *const ranges[] = { "1h", "24h", "7d", "30d", "all" };
		for (size_t i = 0; i < 5; i++)
			page_printf(p, "<a href=\"/?range=%s\"%s>%s</a> ", ranges[i],
				    strcmp(range, ranges[i]) ? "" : " class=\"here\"", ranges[i]);
		page_raw(p, "</p>");
	} else {
		char when[40];
		util_iso8601(now * 1000, when, sizeof when);
		page_printf(p, "<p class=\"none\">Written %s", when);
		if (!isnan(f.since)) {
			util_iso8601(f.since * 1000, when, sizeof when);
			page_printf(p, "; runs since %s", when);
		}
		page_raw(p, ".</p>");
	}

	struct overview *o = calloc(1, sizeof *o);
	if (!o)
		util_die(EXIT_IO, "out of memory");
	if (hist_stats(h, &f, 0, on_stat, o, err, errlen) < 0) {
		free(o);
		return -1;
	}
	page_printf(p, "<section class=\"cards\"><div class=\"card\"><b id=\"total\">%.0f</b> runs</div>", o->total);
	double ok = 0;
	for (int i = 0; i < o->nst; i++)
		if (status_find(o->st[i].name) == STATUS_success)
			ok = o->st[i].count;
	page_printf(p, "<div class=\"card\"><b>%.1f %%</b> success</div></section>", o->total > 0 ? 100 * ok / o->total : 0);

	page_raw(p, "<section><h2>By status</h2><table id=\"status-counts\"><thead><tr><th>status</th><th>runs</th></tr></thead><tbody>");
	for (int i = 0; i < o->nst; i++) {
		page_raw(p, "<tr><td>");
		page_put_status(p, o->st[i].name);
		page_printf(p, "</td><td class=\"num\">%.0f</td></tr>", o->st[i].count);
	}
	page_raw(p, "</tbody></table>");
	bars(p, o->st, o->nst, o->total);
	page_raw(p, "</section><section><h2>By language</h2><table id=\"language-stats\"><thead><tr><th>language</th>"
		    "<th>runs</th><th>success rate</th><th>p50</th><th>p95</th></tr></thead><tbody>");
	for (int i = 0; i < o->nlang; i++) {
		const struct group *g = &o->lang[i];
		page_raw(p, "<tr><td>");
		page_str(p, g->name);
		page_printf(p, "</td><td class=\"num\">%.0f</td><td class=\"num\">", g->count);
		if (g->rated)
			page_printf(p, "%.1f %%", 100 * g->success);
		else
			page_raw(p, "–");
		if (g->has_all)
			page_printf(p, "</td><td class=\"num\">%.1f ms</td><td class=\"num\">%.1f ms</td></tr>", g->p50, g->p95);
		else
			page_raw(p, "</td><td>–</td><td>–</td></tr>");
	}
	page_raw(p, "</tbody></table></section>");
	free(o);

	/* 48 buckets over the range; "all" by day. */
	int64_t bucket = span > 0 ? span / 48 : !isnan(f.since) ? (int64_t)fmax(60, (now - f.since) / 48) : 86400;
	struct series_ctx *s = calloc(1, sizeof *s);
	if (!s)
		util_die(EXIT_IO, "out of memory");
	if (hist_series(h, &f, bucket, on_point, s, err, errlen) < 0) {
		free(s);
		return -1;
	}
	page_raw(p, "<section><h2>Duration over time</h2>");
	if (s->n)
		line_chart(p, s, bucket);
	else
		page_raw(p, "<p class=\"none\">No runs in this range.</p>");
	free(s);
	page_raw(p, "</section><section><h2>Latest runs</h2>");
	struct hist_filter r = *base;
	r.limit = 20;
	struct page_rows_ctx c = { .p = p };
	page_runs_head(p, "recent");
	if (hist_query(h, &r, false, page_on_run, &c, err, errlen) < 0)
		return -1;
	page_printf(p, "</tbody></table><p id=\"live\" data-after=\"%lld\" class=\"none\">%s</p></section>",
		    (long long)c.max_id, p->standalone ? "" : "New runs appear here as they are logged.");
	page_end(p);
	return 0;
}
