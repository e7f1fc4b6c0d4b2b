/* page: the buffer and the escaping every page goes through, the values
 * read out of rows, the frame and the sign-in page, the runs as table
 * rows (page_rows: the lists' and the live ones), the runs list and the
 * sessions.  The overview is in page_overview.c, one run's page in
 * page_run.c; page_int.h is what they share. */
#define _GNU_SOURCE
#include "page.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "page_int.h"
#include "rec.h"
#include "status.h"
#include "utf8.h"
#include "util.h"

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

const char *page_sval(jv o, const char *key)
{
	return jv_get_kind(o) == JV_KIND_OBJECT ? rec_str(o, key, NULL) : NULL;
}

/* The same with its length: a NUL inside is shown (as ␀), not an end. */
const char *page_sval_n(jv o, const char *key, size_t *n)
{
	*n = 0;
	return jv_get_kind(o) == JV_KIND_OBJECT ? rec_str(o, key, n) : NULL;
}

/* Text of at most max bytes (cut at a character), and a note of the rest. */
void page_text_capped(struct page *p, const char *s, size_t n, size_t max)
{
	size_t shown = n > max ? utf8_floor(s, max) : n;
	page_text(p, s, shown);
	if (shown < n)
		page_printf(p, "<span class=\"none\"> … %zu more bytes not shown</span>", n - shown);
}

bool page_nval(jv o, const char *key, double *d)
{
	return jv_get_kind(o) == JV_KIND_OBJECT && rec_num(o, key, d) && isfinite(*d);
}

void page_put_num(struct page *p, jv o, const char *key, const char *unit)
{
	double d;
	if (page_nval(o, key, &d))
		page_printf(p, "%.*f%s", d == floor(d) && fabs(d) < 1e15 ? 0 : 1, d, unit);
	else
		page_raw(p, "<span class=\"none\">–</span>");
}

void page_put_bytes(struct page *p, jv o, const char *key)
{
	double d;
	char buf[32];
	if (page_nval(o, key, &d) && d >= 0 && d < 1e18)
		page_str(p, util_size_str((uint64_t)d, buf, sizeof buf));
	else
		page_raw(p, "<span class=\"none\">–</span>");
}

/* A status as a badge: the class is ours (a status's or verdict's name,
 * from status.h's table), the text the row's.  Its colour is its tone's
 * (page_int.h's PAGE_CSS_FROM_C); the rows page_js adds live are rendered
 * here too (page_rows), so they cannot disagree. */
void page_put_status(struct page *p, const char *status)
{
	int i = status_find(status);
	page_printf(p, "<span class=\"st st-%s\">", i >= 0 && i < STATUS_passed ? status : "other");
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
void page_put_id(struct page *p, jv row)
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
	page_nval(row, "history_id", &hid);
	/* One identity, the run's page's: #N (its history_id), then the
	 * record's own id. */
	page_printf(p, "<tr data-id=\"%.0f\"><td class=\"id\">", hid);
	page_printf(p, p->standalone ? "#%.0f" : "<a href=\"/runs/%.0f\">#%.0f</a>", hid, hid);
	page_raw(p, " <span class=\"rid\">");
	page_put_id(p, row);
	page_raw(p, "</span></td><td class=\"when\">");
	page_str(p, page_sval(row, "timestamp"));
	page_raw(p, "</td><td>");
	page_str(p, page_sval(row, "language"));
	page_raw(p, "</td><td>");
	/* a judged run: its verdict says what happened (its status is the
	 * last test's, "error" for a wrong answer) */
	const char *verdict = page_sval(row, "verdict");
	page_put_status(p, verdict ? verdict : page_sval(row, "status"));
	page_raw(p, "</td><td class=\"num\">");
	page_put_num(p, row, "duration_ms", " ms");
	page_raw(p, "</td><td class=\"snippet\">");
	size_t n;
	const char *code = page_sval_n(row, "code_snippet", &n);
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

bool page_on_run(jv row, void *arg)
{
	struct page_rows_ctx *c = arg;
	double hid;
	if (page_nval(row, "history_id", &hid) && hid > (double)c->max_id)
		c->max_id = (int64_t)hid;
	run_row(c->p, row);
	jv_free(row);
	c->n++;
	return true;
}

int64_t page_rows(struct page *p, struct hist *h, const struct hist_filter *f, char *err, size_t errlen)
{
	struct page_rows_ctx c = { .p = p };
	return hist_query(h, f, false, page_on_run, &c, err, errlen);
}

void page_runs_head(struct page *p, const char *id)
{
	page_printf(p, "<table id=\"%s\" class=\"runs\"><thead><tr><th>id</th><th>started</th><th>language</th>"
		       "<th>status</th><th>duration</th><th>code</th></tr></thead><tbody>",
		    id);
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
	struct page_rows_ctx c = { .p = p };
	page_runs_head(p, "runs");
	if (hist_query(h, &f, false, page_on_run, &c, err, errlen) < 0)
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

/* ---- sessions ------------------------------------------------------------------ */

struct sess_ctx {
	struct page *p;
	int64_t n;
};

static bool on_session(jv row, void *arg)
{
	struct sess_ctx *c = arg;
	const char *id = page_sval(row, "session_id");
	page_raw(c->p, "<tr><td class=\"id\">");
	if (id) {
		page_raw(c->p, "<a href=\"/runs?session=");
		page_url(c->p, id);
		page_raw(c->p, "\">");
		page_str(c->p, id);
		page_raw(c->p, "</a>");
	}
	page_raw(c->p, "</td><td>");
	page_str(c->p, page_sval(row, "languages"));
	page_raw(c->p, "</td><td class=\"num\">");
	page_put_num(c->p, row, "runs", "");
	page_raw(c->p, "</td><td class=\"when\">");
	page_str(c->p, page_sval(row, "last"));
	page_raw(c->p, "</td><td class=\"num\">");
	page_put_num(c->p, row, "checkpoints", "");
	page_raw(c->p, "</td><td class=\"num\">");
	page_put_num(c->p, row, "restores", "");
	page_raw(c->p, "</td><td class=\"id\">");
	page_str(c->p, page_sval(row, "forked_from"));
	page_raw(c->p, "</td></tr>");
	jv_free(row);
	c->n++;
	return true;
}

/* A live session: its workspace's files, its kernels, its processes and
 * its open ports (links: a port over HTTP is a path of this server's). */
static void live_session(struct page *p, jv s)
{
	const char *id = page_sval(s, "session_id");
	page_raw(p, "<tr><td class=\"id\">");
	if (id) {
		page_raw(p, "<a href=\"/runs?session=");
		page_url(p, id);
		page_raw(p, "\">");
		page_str(p, id);
		page_raw(p, "</a>");
	}
	page_raw(p, "</td><td>");
	page_str(p, page_sval(s, "language"));
	page_raw(p, "</td><td>");
	jv k = rec_get(s, "kernels");
	if (jv_get_kind(k) == JV_KIND_ARRAY)
		jv_array_foreach(k, i, l) {
			if (jv_get_kind(l) == JV_KIND_STRING) {
				page_raw(p, "<span class=\"st st-success\">");
				page_str(p, jv_string_value(l));
				page_raw(p, "</span> ");
			}
			jv_free(l);
		}
	jv_free(k);
	page_raw(p, "</td><td class=\"procs\">");
	jv procs = rec_get(s, "processes");
	if (jv_get_kind(procs) == JV_KIND_ARRAY)
		jv_array_foreach(procs, i, q) {
			const char *st = page_sval(q, "state");
			page_raw(p, "<span class=\"st ");
			page_raw(p, st && !strcmp(st, "exited") ? "st-error" : "st-success");
			page_raw(p, "\">");
			page_str(p, st);
			page_raw(p, "</span> <code>");
			jv cmd = rec_get(q, "command");
			if (jv_get_kind(cmd) == JV_KIND_ARRAY)
				jv_array_foreach(cmd, j, a) {
					if (jv_get_kind(a) == JV_KIND_STRING) {
						page_str(p, j ? " " : "");
						page_str(p, jv_string_value(a));
					}
					jv_free(a);
				}
			else
				page_str(p, page_sval(q, "code"));
			jv_free(cmd);
			page_raw(p, "</code> ");
			page_put_bytes(p, q, "output_bytes");
			page_raw(p, "<br>");
			jv_free(q);
		}
	jv_free(procs);
	page_raw(p, "</td><td class=\"ports\">");
	jv ports = rec_get(s, "ports");
	if (jv_get_kind(ports) == JV_KIND_ARRAY)
		jv_array_foreach(ports, i, q) {
			const char *to = page_sval(q, "path") ? page_sval(q, "path") : page_sval(q, "url");
			page_raw(p, "<a href=\"");
			page_str(p, to);
			page_raw(p, "\">");
			page_put_num(p, q, "port", "");
			page_raw(p, "</a> ");
			jv_free(q);
		}
	jv_free(ports);
	page_raw(p, "</td><td class=\"num\">");
	page_put_num(p, s, "expires_in_s", " s");
	page_raw(p, "</td><td class=\"files\">");
	jv files = rec_get(s, "files");
	if (jv_get_kind(files) == JV_KIND_ARRAY)
		jv_array_foreach(files, i, f) {
			page_raw(p, "<code>");
			page_str(p, page_sval(f, "path"));
			page_raw(p, "</code> ");
			page_put_bytes(p, f, "size");
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
				    "<th>processes</th><th>ports</th><th>expires in</th><th>files</th></tr></thead><tbody>");
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
		    "<th>last run</th><th>checkpoints</th><th>restores</th><th>forked from</th></tr></thead><tbody>");
	struct sess_ctx c = { .p = p };
	if (hist_sessions(h, f, 200, on_session, &c, err, errlen) < 0)
		return -1;
	page_raw(p, "</tbody></table>");
	if (!c.n)
		page_raw(p, "<p class=\"none\">No session has runs in the history.</p>");
	page_end(p);
	return 0;
}
