#define _GNU_SOURCE
#include "page.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imgsize.h"
#include "rec.h"
#include "status.h"
#include "utf8.h"
#include "util.h"

/* Output longer than this is cut on the page (the history may hold more):
 * a browser handed 100 MB of one line is a denial of service. */
#define SHOWN_MAX (256u << 10)

void page_init(struct page *p, bool standalone)
{
	memset(p, 0, sizeof *p);
	p->standalone = standalone;
}

void page_free(struct page *p)
{
	free(p->buf);
	p->buf = NULL;
	p->len = p->cap = 0;
}

static void put(struct page *p, const char *s, size_t n)
{
	if (p->len + n + 1 > p->cap) {
		p->cap = (p->len + n + 1) * 2;
		p->buf = util_xrealloc(p->buf, p->cap);
	}
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = 0;
}

void page_raw(struct page *p, const char *s)
{
	put(p, s, strlen(s));
}

void page_printf(struct page *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		util_die(EXIT_IO, "out of memory");
	put(p, s, (size_t)n);
	free(s);
}

void page_text(struct page *p, const char *s, size_t n)
{
	char *fixed = NULL;
	if (!utf8_valid(s, n, NULL)) {
		size_t len;
		fixed = utf8_sanitize(s, n, &len);
		s = fixed;
		n = len;
	}
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *rep = NULL;
		char pic[8];
		size_t skip = 1;
		unsigned bidi;
		switch (c) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		case '\n':
		case '\t': break;
		default:
			if (c < 0x20 || c == 0x7f) {
				/* The control pictures: ESC shows as ␛, NUL as ␀. */
				unsigned cp = c == 0x7f ? 0x2421 : 0x2400 + c;
				snprintf(pic, sizeof pic, "\xe2%c%c", (char)(0x80 | ((cp >> 6) & 0x3f)), (char)(0x80 | (cp & 0x3f)));
				rep = pic;
			} else if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
				   (unsigned char)s[i + 1] <= 0x9f) {
				rep = "\xef\xbf\xbd"; /* a C1 control */
				skip = 2;
			} else if ((skip = utf8_deceptive((const unsigned char *)s + i, n - i, &bidi))) {
				rep = "\xef\xbf\xbd"; /* text that would read other than it runs */
			} else
				skip = 1;
		}
		if (rep) {
			put(p, s + start, i - start);
			page_raw(p, rep);
			i += skip - 1;
			start = i + 1;
		}
	}
	put(p, s + start, n - start);
	free(fixed);
}

void page_str(struct page *p, const char *s)
{
	if (s)
		page_text(p, s, strlen(s));
}

void page_url(struct page *p, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c))
			put(p, (const char *)&c, 1);
		else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };
			put(p, e, 3);
		}
	}
}

/* ---- values out of rows and records ------------------------------------ */

static const char *sval(jv o, const char *key)
{
	return jv_get_kind(o) == JV_KIND_OBJECT ? rec_str(o, key, NULL) : NULL;
}

/* The same with its length: a NUL inside is shown (as ␀), not an end. */
static const char *sval_n(jv o, const char *key, size_t *n)
{
	*n = 0;
	return jv_get_kind(o) == JV_KIND_OBJECT ? rec_str(o, key, n) : NULL;
}

/* Text of at most max bytes (cut at a character), and a note of the rest. */
static void text_capped(struct page *p, const char *s, size_t n, size_t max)
{
	size_t shown = n > max ? utf8_floor(s, max) : n;
	page_text(p, s, shown);
	if (shown < n)
		page_printf(p, "<span class=\"none\"> … %zu more bytes not shown</span>", n - shown);
}

static bool nval(jv o, const char *key, double *d)
{
	return jv_get_kind(o) == JV_KIND_OBJECT && rec_num(o, key, d) && isfinite(*d);
}

static void put_num(struct page *p, jv o, const char *key, const char *unit)
{
	double d;
	if (nval(o, key, &d))
		page_printf(p, "%.*f%s", d == floor(d) && fabs(d) < 1e15 ? 0 : 1, d, unit);
	else
		page_raw(p, "<span class=\"none\">–</span>");
}

static void put_bytes(struct page *p, jv o, const char *key)
{
	double d;
	char buf[32];
	if (nval(o, key, &d) && d >= 0 && d < 1e18)
		page_str(p, util_size_str((uint64_t)d, buf, sizeof buf));
	else
		page_raw(p, "<span class=\"none\">–</span>");
}

/* A status's badge takes its tone's colour (page_css's .st-TONE) from
 * status.h's table; the rows page_js adds live are rendered here too
 * (page_rows), so they cannot disagree. */
/* A status as a badge: the class is ours (from a fixed list), the text the row's. */
static void put_status(struct page *p, const char *status)
{
	page_printf(p, "<span class=\"st st-%s\">", status_tone(status));
	page_str(p, status ? status : "?");
	page_raw(p, "</span>");
}

/* ---- the frame ------------------------------------------------------------ */

void page_begin(struct page *p, const char *title, const char *nav)
{
	page_raw(p, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
		    "<meta name=\"referrer\" content=\"same-origin\"><title>");
	page_str(p, title);
	page_raw(p, " — sbx</title>");
	if (p->standalone) {
		/* A file has no server to send the policy: it carries its own. */
		page_raw(p, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">");
		page_raw(p, "<style>");
		page_raw(p, page_css);
		page_raw(p, "</style>");
	} else
		page_raw(p, "<link rel=\"stylesheet\" href=\"/static/dash.css\"><script src=\"/static/dash.js\" defer></script>");
	page_raw(p, "</head><body><header><span class=\"brand\">sbx</span>");
	if (!p->standalone && nav) {
		static const char *const links[][2] = { { "overview", "/" }, { "runs", "/runs" }, { "sessions", "/sessions" } };
		page_raw(p, "<nav>");
		for (size_t i = 0; i < 3; i++)
			page_printf(p, "<a href=\"%s\"%s>%s</a>", links[i][1], strcmp(nav, links[i][0]) ? "" : " class=\"here\"",
				    links[i][0]);
		page_raw(p, "</nav><form id=\"logout\" method=\"post\" action=\"/logout\">");
		if (p->who) {
			page_raw(p, "<span class=\"who\">");
			page_str(p, p->who);
			page_raw(p, "</span>");
		}
		page_raw(p, "<button type=\"submit\">sign out</button></form>");
	}
	page_raw(p, "</header><main>");
}

void page_end(struct page *p)
{
	page_raw(p, "</main></body></html>\n");
}

void page_login(struct page *p, const char *message)
{
	page_begin(p, "sign in", NULL);
	page_raw(p, "<h1>Sign in</h1><p>The dashboard shows the runs of your sbx-mcp token.</p>");
	if (message) {
		page_raw(p, "<p class=\"error\" id=\"login-error\">");
		page_str(p, message);
		page_raw(p, "</p>");
	}
	page_raw(p, "<form id=\"login\" method=\"post\" action=\"/login\"><label>Token "
		    "<input type=\"password\" name=\"token\" autocomplete=\"current-password\" required autofocus></label>"
		    " <button type=\"submit\">sign in</button></form>");
	page_end(p);
}

/* ---- runs as table rows ----------------------------------------------------- */

/* The record's own id (a string, or a number), as text. */
static void put_id(struct page *p, jv row)
{
	jv id = rec_get(row, "id");
	if (jv_get_kind(id) == JV_KIND_STRING)
		page_str(p, jv_string_value(id));
	else if (jv_get_kind(id) == JV_KIND_NUMBER)
		page_printf(p, "%.17g", jv_number_value(id));
	jv_free(id);
}

static void run_row(struct page *p, jv row)
{
	double hid = 0;
	nval(row, "history_id", &hid);
	/* One identity, the run's page's: #N (its history_id), then the
	 * record's own id. */
	page_printf(p, "<tr data-id=\"%.0f\"><td class=\"id\">", hid);
	page_printf(p, p->standalone ? "#%.0f" : "<a href=\"/runs/%.0f\">#%.0f</a>", hid, hid);
	page_raw(p, " <span class=\"rid\">");
	put_id(p, row);
	page_raw(p, "</span></td><td class=\"when\">");
	page_str(p, sval(row, "timestamp"));
	page_raw(p, "</td><td>");
	page_str(p, sval(row, "language"));
	page_raw(p, "</td><td>");
	/* a judged run: its verdict says what happened (its status is the
	 * last test's, "error" for a wrong answer) */
	const char *verdict = sval(row, "verdict");
	put_status(p, verdict ? verdict : sval(row, "status"));
	page_raw(p, "</td><td class=\"num\">");
	put_num(p, row, "duration_ms", " ms");
	page_raw(p, "</td><td class=\"snippet\">");
	size_t n;
	const char *code = sval_n(row, "code_snippet", &n);
	if (code) {
		/* One line of it, at most 120 bytes, cut at a character. */
		const char *nl = memchr(code, '\n', n);
		size_t cut = nl ? (size_t)(nl - code) : n;
		if (cut > 120)
			cut = utf8_floor(code, 120);
		page_text(p, code, cut);
		if (cut < n)
			page_raw(p, "…");
	}
	page_raw(p, "</td></tr>");
}

struct rows_ctx {
	struct page *p;
	int64_t n, max_id;
};

static bool on_run(jv row, void *arg)
{
	struct rows_ctx *c = arg;
	double hid;
	if (nval(row, "history_id", &hid) && hid > (double)c->max_id)
		c->max_id = (int64_t)hid;
	run_row(c->p, row);
	jv_free(row);
	c->n++;
	return true;
}

int64_t page_rows(struct page *p, struct hist *h, const struct hist_filter *f, char *err, size_t errlen)
{
	struct rows_ctx c = { .p = p };
	return hist_query(h, f, false, on_run, &c, err, errlen);
}

static void runs_head(struct page *p, const char *id)
{
	page_printf(p, "<table id=\"%s\" class=\"runs\"><thead><tr><th>id</th><th>started</th><th>language</th>"
		       "<th>status</th><th>duration</th><th>code</th></tr></thead><tbody>",
		    id);
}

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
	const char *lang = sval(row, "language"), *status = sval(row, "status");
	double count = 0, rate = -1, p50 = 0, p95 = 0;
	nval(row, "count", &count);
	/* (an "all" row of a language none of whose programs ran has none) */
	bool durations = nval(row, "p50_ms", &p50) && nval(row, "p95_ms", &p95);
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
	nval(row, "bucket", &s->b[s->n]);
	nval(row, "p50_ms", &s->p50[s->n]);
	nval(row, "p95_ms", &s->p95[s->n]);
	nval(row, "count", &s->count[s->n]);
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
		if (status_find(o->st[i].name) == ST_success)
			ok = o->st[i].count;
	page_printf(p, "<div class=\"card\"><b>%.1f %%</b> success</div></section>", o->total > 0 ? 100 * ok / o->total : 0);

	page_raw(p, "<section><h2>By status</h2><table id=\"status-counts\"><thead><tr><th>status</th><th>runs</th></tr></thead><tbody>");
	for (int i = 0; i < o->nst; i++) {
		page_raw(p, "<tr><td>");
		put_status(p, o->st[i].name);
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
	struct rows_ctx c = { .p = p };
	runs_head(p, "recent");
	if (hist_query(h, &r, false, on_run, &c, err, errlen) < 0)
		return -1;
	page_printf(p, "</tbody></table><p id=\"live\" data-after=\"%lld\" class=\"none\">%s</p></section>",
		    (long long)c.max_id, p->standalone ? "" : "New runs appear here as they are logged.");
	page_end(p);
	return 0;
}

/* ---- the runs list --------------------------------------------------------- */

static void input(struct page *p, const char *name, const char *label, const char *value, const char *type)
{
	page_printf(p, "<label>%s <input type=\"%s\" name=\"%s\" value=\"", label, type, name);
	page_str(p, value ? value : "");
	page_raw(p, "\"></label> ");
}

int page_runs(struct page *p, struct hist *h, const struct hist_filter *base, const struct page_form *form, char *err,
	      size_t errlen)
{
	page_begin(p, "runs", "runs");
	page_raw(p, "<h1>Runs</h1><form id=\"filters\" method=\"get\" action=\"/runs\">");
	input(p, "language", "language", form->language, "text");
	input(p, "status", "status", form->status, "text");
	input(p, "session", "session", form->session, "text");
	input(p, "since", "since", form->since, "text");
	input(p, "until", "until", form->until, "text");
	input(p, "q", "code contains", form->q, "search");
	page_raw(p, "<button type=\"submit\">filter</button></form>");
	struct hist_filter f = *base;
	f.limit = PAGE_RUNS;
	struct rows_ctx c = { .p = p };
	runs_head(p, "runs");
	if (hist_query(h, &f, false, on_run, &c, err, errlen) < 0)
		return -1;
	page_raw(p, "</tbody></table>");
	double ts;
	int64_t id;
	if (c.n == PAGE_RUNS && hist_cursor(h, &ts, &id)) {
		/* The next page starts after this one's last row: keyset, so a
		 * page deep in a million rows costs what the first does. */
		page_raw(p, "<p><a id=\"older\" href=\"/runs?");
		const char *const keys[] = { "language", "status", "session", "q", "since", "until" };
		const char *const vals[] = { form->language, form->status, form->session, form->q, form->since, form->until };
		for (size_t i = 0; i < 6; i++)
			if (vals[i] && *vals[i]) {
				page_printf(p, "%s=", keys[i]);
				page_url(p, vals[i]);
				page_raw(p, "&amp;");
			}
		page_printf(p, "before=%.17g:%lld\">older runs</a></p>", ts, (long long)id);
	} else if (c.n == 0)
		page_raw(p, "<p class=\"none\">No runs match.</p>");
	page_end(p);
	return 0;
}

/* ---- one run ------------------------------------------------------------------ */

static void dt(struct page *p, const char *label)
{
	page_printf(p, "<dt>%s</dt><dd>", label);
}

static void stream(struct page *p, const char *id, const char *title, jv rec, const char *key, jv row,
		   const char *size_key)
{
	page_printf(p, "<h2>%s</h2>", title);
	size_t n = 0;
	const char *s = jv_get_kind(rec) == JV_KIND_OBJECT ? rec_str(rec, key, &n) : NULL;
	if (!s) {
		page_printf(p, "<p class=\"none\" id=\"%s-none\">", id);
		put_bytes(p, row, size_key);
		page_raw(p, " written; not kept (the history keeps output with history_code = \"full\").</p>");
		return;
	}
	size_t shown = n > SHOWN_MAX ? utf8_floor(s, SHOWN_MAX) : n;
	page_printf(p, "<pre id=\"%s\" class=\"out\">", id);
	page_text(p, s, shown);
	page_raw(p, "</pre>");
	if (shown < n)
		page_printf(p, "<p class=\"none\">%zu more bytes not shown.</p>", n - shown);
}

/* The code, one numbered line each (the numbers are CSS counters, not text). */
static void code_block(struct page *p, const char *code, size_t n)
{
	page_raw(p, "<pre id=\"code\" class=\"code\">");
	size_t shown = n > SHOWN_MAX ? utf8_floor(code, SHOWN_MAX) : n;
	size_t start = 0;
	for (size_t i = 0; i <= shown; i++)
		if (i == shown || code[i] == '\n') {
			if (i == shown && start == shown && shown)
				break;
			page_raw(p, "<span class=\"l\">");
			page_text(p, code + start, i - start);
			page_raw(p, "</span>\n");
			start = i + 1;
		}
	page_raw(p, "</pre>");
	if (shown < n)
		page_printf(p, "<p class=\"none\">%zu more bytes of code not shown.</p>", n - shown);
}

/* obj borrowed. */
static void kv_table(struct page *p, const char *id, jv obj)
{
	if (jv_get_kind(obj) != JV_KIND_OBJECT)
		return;
	page_printf(p, "<table id=\"%s\" class=\"kv\"><tbody>", id);
	jv_object_foreach(obj, k, v)
	{
		page_raw(p, "<tr><th>");
		page_str(p, jv_string_value(k));
		page_raw(p, "</th><td>");
		const char *key = jv_string_value(k);
		size_t kl = strlen(key);
		double d = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : -1;
		char buf[32];
		if (jv_get_kind(v) == JV_KIND_STRING)
			text_capped(p, jv_string_value(v), (size_t)jv_string_length_bytes(jv_copy(v)), 4096);
		else if (kl > 6 && !strcmp(key + kl - 6, "_bytes") && d >= 0 && d < 1e18)
			page_str(p, util_size_str((uint64_t)d, buf, sizeof buf)); /* limits in human units */
		else if (kl > 3 && !strcmp(key + kl - 3, "_ms") && d >= 1000 && !strcmp(id, "limits"))
			page_printf(p, "%g s", d / 1000);
		else {
			jv t = jv_dump_string(jv_copy(v), 0);
			page_str(p, jv_string_value(t));
			jv_free(t);
		}
		page_raw(p, "</td></tr>");
		jv_free(k);
		jv_free(v);
	}
	page_raw(p, "</tbody></table>");
}

/* Images the run made, where the history kept them: raster types only
 * (rec_raster_mime), content strictly base64, a header that says a size
 * a browser may decode (imgsize.h: the rule MCP results follow too). */
static void images(struct page *p, jv rec)
{
	jv arts = jv_get_kind(rec) == JV_KIND_OBJECT ? rec_get(rec, "artifacts") : jv_invalid();
	if (jv_get_kind(arts) != JV_KIND_ARRAY) {
		jv_free(arts);
		return;
	}
	bool any = false;
	size_t shown_bytes = 0;
	jv_array_foreach(arts, i, a)
	{
		const char *mime = sval(a, "mime_type"), *content = sval(a, "content"), *path = sval(a, "path");
		bool raster = rec_raster_mime(mime);
		bool b64 = content && *content && strspn(content, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == strlen(content);
		/* 16 MiB of images on one page at most. */
		uint32_t w, h;
		if (raster && b64 && imgsize_showable(mime, content, strlen(content), &w, &h) &&
		    (shown_bytes += strlen(content)) <= (16u << 20)) {
			if (!any)
				page_raw(p, "<h2>Images</h2><div id=\"images\">");
			any = true;
			page_printf(p, "<figure><img alt=\"\" src=\"data:%s;base64,%s\"><figcaption>", mime, content);
			page_str(p, path);
			page_raw(p, "</figcaption></figure>");
		}
		jv_free(a);
	}
	if (any)
		page_raw(p, "</div>");
	jv_free(arts);
}

static void tests_table(struct page *p, jv rec)
{
	jv tests = jv_get_kind(rec) == JV_KIND_OBJECT ? rec_get(rec, "tests") : jv_invalid();
	if (jv_get_kind(tests) != JV_KIND_ARRAY) {
		jv_free(tests);
		return;
	}
	page_raw(p, "<h2>Tests</h2><table id=\"tests\"><thead><tr><th>#</th><th>status</th><th>duration</th>"
		    "<th>exit</th><th>stdout</th></tr></thead><tbody>");
	int rows = jv_array_length(jv_copy(tests));
	jv_array_foreach(tests, i, t)
	{
		/* A page for people: the first 1000 tests, then a count. */
		if (i >= 1000) {
			jv_free(t);
			continue;
		}
		page_printf(p, "<tr><td class=\"num\">%d</td><td>", i + 1);
		put_status(p, sval(t, "status"));
		page_raw(p, "</td><td class=\"num\">");
		put_num(p, t, "duration_ms", " ms");
		page_raw(p, "</td><td class=\"num\">");
		put_num(p, t, "exit_code", "");
		page_raw(p, "</td><td><code>");
		size_t on;
		const char *out = sval_n(t, "stdout", &on);
		if (out)
			text_capped(p, out, on, 200);
		page_raw(p, "</code></td></tr>");
		jv_free(t);
	}
	page_raw(p, "</tbody></table>");
	if (rows > 1000)
		page_printf(p, "<p class=\"none\">%d more tests not shown.</p>", rows - 1000);
	jv_free(tests);
}

struct one_ctx {
	jv row;
};

static bool on_one(jv row, void *arg)
{
	struct one_ctx *c = arg;
	c->row = row;
	return false;
}

int page_run(struct page *p, struct hist *h, const struct hist_filter *base, int64_t history_id, char *err,
	     size_t errlen)
{
	struct hist_filter f = *base;
	f.history_id = history_id;
	f.limit = 1;
	struct one_ctx c = { .row = jv_invalid() };
	if (hist_query(h, &f, true, on_one, &c, err, errlen) < 0)
		return -1;
	if (!jv_is_valid(c.row))
		return 1;
	jv row = c.row, rec = rec_get(row, "record");
	page_begin(p, "run", "runs");
	page_printf(p, "<h1>Run #%lld <small id=\"run-id\">", (long long)history_id);
	put_id(p, row);
	page_raw(p, "</small></h1><dl class=\"meta\">");
	/* a judged run: its verdict first, and no status (the last test's,
	 * "error" for a wrong answer, in red beside an exit code 0) */
	const char *verdict = sval(row, "verdict");
	if (!verdict) {
		dt(p, "status");
		put_status(p, sval(row, "status"));
		page_raw(p, "</dd>");
	} else {
		dt(p, "verdict");
		page_raw(p, "<span id=\"verdict\">");
		put_status(p, verdict);
		page_raw(p, "</span> ");
		put_num(p, row, "tests_passed", "");
		page_raw(p, " of ");
		put_num(p, row, "tests_total", "");
		page_raw(p, " passed</dd>");
	}
	static const struct { const char *label, *key; } strs[] = {
		{ "language", "language" }, { "started", "timestamp" }, { "backend", "backend" },
		{ "session", "session_id" }, { "error", "error" }, { "signal", "signal" }, { "host", "host" },
	};
	/* A session's command (or workspace file) ran in its language's
	 * environment: the page says what ran, not only whose environment. */
	bool is_obj = jv_get_kind(rec) == JV_KIND_OBJECT;
	const char *ran = is_obj && rec_has(rec, "command") ? "command" : is_obj && rec_has(rec, "entry") ? "file" : NULL;
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
		size_t vn;
		const char *v = sval_n(row, strs[i].key, &vn);
		if (!v)
			continue;
		dt(p, strs[i].label);
		if (ran && !strcmp(strs[i].key, "language"))
			page_printf(p, "<span id=\"ran\">a %s</span>, in the environment of ", ran);
		text_capped(p, v, vn, 4096);
		page_raw(p, "</dd>");
	}
	static const struct { const char *label, *key, *unit; } nums[] = {
		{ "exit code", "exit_code", "" }, { "duration", "duration_ms", " ms" }, { "CPU", "cpu_ms", " ms" },
		{ "compile", "compile_ms", " ms" }, { "shard", "shard", "" }, { "attempt", "attempt", "" },
	};
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		double d;
		if (!nval(row, nums[i].key, &d))
			continue;
		dt(p, nums[i].label);
		put_num(p, row, nums[i].key, nums[i].unit);
		page_raw(p, "</dd>");
	}
	dt(p, "memory peak");
	put_bytes(p, row, "memory_peak_bytes");
	page_printf(p, "</dd></dl><h2>%s</h2>", ran && !strcmp(ran, "command") ? "Command" : "Code");
	size_t n = 0;
	const char *code = rec_str(row, "code", &n);
	if (!code) {
		code = sval_n(row, "code_snippet", &n);
		page_raw(p, "<p class=\"none\">Its first 500 characters (the history keeps the whole code with "
			    "history_code = \"full\").</p>");
	}
	code_block(p, code ? code : "", n);
	stream(p, "stdout", "Output", rec, "stdout", row, "stdout_size");
	stream(p, "stderr", "Errors", rec, "stderr", row, "stderr_size");
	jv comp = jv_get_kind(rec) == JV_KIND_OBJECT ? rec_get(rec, "compile") : jv_invalid();
	if (jv_get_kind(comp) == JV_KIND_OBJECT) {
		page_raw(p, "<h2>Compile</h2><p>");
		put_status(p, sval(comp, "status"));
		page_raw(p, " ");
		put_num(p, comp, "duration_ms", " ms");
		page_raw(p, "</p>");
		size_t cn;
		const char *ce = sval_n(comp, "stderr", &cn);
		if (ce && cn) {
			page_raw(p, "<pre id=\"compile-stderr\" class=\"out\">");
			text_capped(p, ce, cn, SHOWN_MAX);
			page_raw(p, "</pre>");
		}
	}
	jv_free(comp);
	tests_table(p, rec);
	images(p, rec);
	if (jv_get_kind(rec) == JV_KIND_OBJECT) {
		jv lim = rec_get(rec, "limits");
		if (jv_get_kind(lim) == JV_KIND_OBJECT) {
			page_raw(p, "<h2>Limits</h2>");
			kv_table(p, "limits", lim);
		}
		jv_free(lim);
		jv tim = rec_get(rec, "timings");
		if (jv_get_kind(tim) == JV_KIND_OBJECT) {
			page_raw(p, "<h2>Timings</h2>");
			kv_table(p, "timings", tim);
		}
		jv_free(tim);
	}
	jv_free(rec);
	jv_free(row);
	page_end(p);
	return 0;
}

/* ---- sessions ------------------------------------------------------------------ */

struct sess_ctx {
	struct page *p;
	int64_t n;
};

static bool on_session(jv row, void *arg)
{
	struct sess_ctx *c = arg;
	const char *id = sval(row, "session_id");
	page_raw(c->p, "<tr><td class=\"id\">");
	if (id) {
		page_raw(c->p, "<a href=\"/runs?session=");
		page_url(c->p, id);
		page_raw(c->p, "\">");
		page_str(c->p, id);
		page_raw(c->p, "</a>");
	}
	page_raw(c->p, "</td><td>");
	page_str(c->p, sval(row, "languages"));
	page_raw(c->p, "</td><td class=\"num\">");
	put_num(c->p, row, "runs", "");
	page_raw(c->p, "</td><td class=\"when\">");
	page_str(c->p, sval(row, "last"));
	page_raw(c->p, "</td></tr>");
	jv_free(row);
	c->n++;
	return true;
}

/* A live session: its workspace's files and its kernels. */
static void live_session(struct page *p, jv s)
{
	const char *id = sval(s, "session_id");
	page_raw(p, "<tr><td class=\"id\">");
	if (id) {
		page_raw(p, "<a href=\"/runs?session=");
		page_url(p, id);
		page_raw(p, "\">");
		page_str(p, id);
		page_raw(p, "</a>");
	}
	page_raw(p, "</td><td>");
	page_str(p, sval(s, "language"));
	page_raw(p, "</td><td>");
	jv k = rec_get(s, "kernels");
	if (jv_get_kind(k) == JV_KIND_ARRAY)
		jv_array_foreach(k, i, l) {
			if (jv_get_kind(l) == JV_KIND_STRING) {
				page_raw(p, "<span class=\"st st-ok\">");
				page_str(p, jv_string_value(l));
				page_raw(p, "</span> ");
			}
			jv_free(l);
		}
	jv_free(k);
	page_raw(p, "</td><td class=\"num\">");
	put_num(p, s, "expires_in_s", " s");
	page_raw(p, "</td><td class=\"files\">");
	jv files = rec_get(s, "files");
	if (jv_get_kind(files) == JV_KIND_ARRAY)
		jv_array_foreach(files, i, f) {
			page_raw(p, "<code>");
			page_str(p, sval(f, "path"));
			page_raw(p, "</code> ");
			put_bytes(p, f, "size");
			page_raw(p, "<br>");
			jv_free(f);
		}
	jv_free(files);
	page_raw(p, "</td></tr>");
}

int page_sessions(struct page *p, struct hist *h, const struct hist_filter *f, jv live, char *err, size_t errlen)
{
	page_begin(p, "sessions", "sessions");
	page_raw(p, "<h1>Sessions</h1>");
	if (jv_get_kind(live) == JV_KIND_ARRAY) {
		page_raw(p, "<h2>Live</h2>");
		if (jv_array_length(jv_copy(live)) == 0)
			page_raw(p, "<p class=\"none\">No sandbox session is open.</p>");
		else {
			page_raw(p, "<table id=\"live-sessions\"><thead><tr><th>session</th><th>language</th><th>kernels</th>"
				    "<th>expires in</th><th>files</th></tr></thead><tbody>");
			jv_array_foreach(live, i, s) {
				live_session(p, s);
				jv_free(s);
			}
			page_raw(p, "</tbody></table>");
		}
		page_raw(p, "<h2>In the history</h2>");
	}
	if (!h) {
		page_raw(p, "<p class=\"none\">No history yet.</p>");
		page_end(p);
		return 0;
	}
	page_raw(p, "<table id=\"sessions\"><thead><tr><th>session</th><th>languages</th><th>runs</th>"
		    "<th>last run</th></tr></thead><tbody>");
	struct sess_ctx c = { .p = p };
	if (hist_sessions(h, f, 200, on_session, &c, err, errlen) < 0)
		return -1;
	page_raw(p, "</tbody></table>");
	if (!c.n)
		page_raw(p, "<p class=\"none\">No session has runs in the history.</p>");
	page_end(p);
	return 0;
}
