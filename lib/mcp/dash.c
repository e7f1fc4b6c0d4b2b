#define _GNU_SOURCE
#include "dash.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hist.h"
#include "page.h"
#include "rec.h"
#include "state.h"
#include "util.h"

const char dash_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

#define SIGNINS 256                 /* signed-in browsers at once */
#define SIGNINS_PER 8               /* of one principal: its own oldest goes first */
#define PAGE_MS 2000                /* a page's queries may take this long */
#define SIGNIN_MS (12 * 3600e3)     /* a sign-in lasts this long */
#define SID_BYTES 16

struct signin {
	char sid[2 * SID_BYTES + 1];
	int who;
	double expires;
};

struct dash {
	const struct conf *c;
	const struct auth *a;
	struct mcp *m;
	struct signin in[SIGNINS];
	/* Failed sign-ins and bad Bearer tokens, metered for the whole
	 * server: tokens are long and random, but nothing should be free to
	 * guess at line rate.  Only failures count, and the token is checked
	 * first, so a flood of wrong ones never locks out a right one. */
	struct auth_bucket fails;
	/* Sign-ins per principal: one token holder cannot sign everyone
	 * else out by filling the table. */
	struct auth_bucket *signin_rate;
};

struct dash *dash_new(const struct conf *c, const struct auth *a, struct mcp *m)
{
	struct dash *d = calloc(1, sizeof *d);
	if (!d)
		util_die(EXIT_IO, "out of memory");
	d->c = c;
	d->a = a;
	d->m = m;
	d->fails.tokens = 5;
	d->signin_rate = calloc(auth_count(a) + 1, sizeof *d->signin_rate);
	if (!d->signin_rate)
		util_die(EXIT_IO, "out of memory");
	for (size_t i = 0; i <= auth_count(a); i++)
		d->signin_rate[i].tokens = 5;
	return d;
}

void dash_free(struct dash *d)
{
	if (d) {
		explicit_bzero(d->in, sizeof d->in);
		free(d->signin_rate);
	}
	free(d);
}

bool dash_route(const char *path)
{
	if (!strcmp(path, "/") || !strcmp(path, "/login") || !strcmp(path, "/logout") || !strcmp(path, "/sessions") ||
	    !strcmp(path, "/runs") || !strcmp(path, "/runs.json") || !strcmp(path, "/runs.html"))
		return true;
	return !strncmp(path, "/runs/", 6) || !strncmp(path, "/static/", 8);
}

void dash_reply_free(struct dash_reply *r)
{
	free(r->body);
	free(r->cookie);
	memset(r, 0, sizeof *r);
}

static void set_body(struct dash_reply *r, unsigned status, const char *ctype, struct page *p)
{
	r->status = status;
	r->ctype = ctype;
	r->body = p->buf;
	r->len = p->len;
	p->buf = NULL;
}

static void text_reply(struct dash_reply *r, unsigned status, const char *ctype, const char *text)
{
	r->status = status;
	r->ctype = ctype;
	r->body = util_strdup(text);
	r->len = strlen(text);
}

static struct signin *find_signin(struct dash *d, const char *sid);

/* The sign-in a Cookie header names.  Every sbx_dash in it is looked at
 * and exactly one must be a live sign-in: cookies are not kept apart by
 * port, so another site on the host can plant one, and a planted one must
 * neither lock the user out nor swap in another's view. */
static struct signin *cookie_signin(struct dash *d, const char *cookie)
{
	struct signin *hit = NULL;
	int hits = 0;
	for (const char *p = cookie; p && *p;) {
		p += strspn(p, " ;");
		if (!strncmp(p, DASH_COOKIE "=", sizeof DASH_COOKIE)) {
			const char *v = p + 9;
			size_t n = strspn(v, "0123456789abcdef");
			if (n == 2 * SID_BYTES && (v[n] == 0 || v[n] == ';' || v[n] == ' ')) {
				char sid[2 * SID_BYTES + 1];
				memcpy(sid, v, n);
				sid[n] = 0;
				struct signin *s = find_signin(d, sid);
				if (s && s != hit) {
					hit = s;
					hits++;
				}
			}
		}
		p = strchr(p, ';');
	}
	return hits == 1 ? hit : NULL;
}

/* Constant-time over the id: a sign-in is found without telling how much
 * of a guessed id matched. */
static struct signin *find_signin(struct dash *d, const char *sid)
{
	double now = util_now_ms();
	struct signin *hit = NULL;
	for (int i = 0; i < SIGNINS; i++) {
		unsigned char diff = 0;
		for (int k = 0; k < 2 * SID_BYTES; k++)
			diff |= (unsigned char)(d->in[i].sid[k] ^ sid[k]);
		if (!diff && d->in[i].who > 0 && d->in[i].expires > now)
			hit = &d->in[i];
	}
	return hit;
}

static bool is_bearer(const char *authorization)
{
	return authorization && !strncasecmp(authorization, "Bearer ", 7);
}

/* Who is asking: a Bearer token, else a sign-in's cookie; 0 for nobody.
 * Another scheme (a proxy's Basic) leaves the cookie in charge. */
int dash_who(struct dash *d, const char *authorization, const char *cookie)
{
	if (is_bearer(authorization)) {
		int who = auth_check(d->a, authorization);
		return who > 0 ? who : 0;
	}
	struct signin *s = cookie_signin(d, cookie);
	return s ? s->who : 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A form's field (application/x-www-form-urlencoded), decoded; NULL if
 * absent or malformed (a bad escape, an encoded NUL). */
static char *form_field(const char *body, size_t len, const char *key)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i < len;) {
		size_t end = i;
		while (end < len && body[end] != '&')
			end++;
		if (end - i > klen && !memcmp(body + i, key, klen) && body[i + klen] == '=') {
			char *out = util_xalloc(end - i), *o = out;
			for (size_t k = i + klen + 1; k < end; k++) {
				int ch = (unsigned char)body[k];
				if (ch == '+')
					ch = ' ';
				else if (ch == '%') {
					int hi = k + 2 < end ? hexval(body[k + 1]) : -1, lo = k + 2 < end ? hexval(body[k + 2]) : -1;
					if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
						free(out);
						return NULL;
					}
					ch = hi * 16 + lo;
					k += 2;
				}
				*o++ = (char)ch;
			}
			*o = 0;
			return out;
		}
		i = end + 1;
	}
	return NULL;
}

static void signin_cookie(struct dash_reply *r, const char *sid, bool clear)
{
	/* No Secure: sbx-mcp speaks plain HTTP (a TLS proxy in front adds it). */
	r->cookie = clear ? util_fmt(DASH_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
			  : util_fmt(DASH_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d", sid, (int)(SIGNIN_MS / 1000));
}

/* A failure: 401, or 429 once the server's failure budget is spent. */
static bool failure_spent(struct dash *d, unsigned *retry)
{
	return !auth_take(&d->fails, 1, 5, util_now_ms(), retry);
}

static void retry_after(struct dash_reply *r, unsigned retry)
{
	snprintf(r->retry, sizeof r->retry, "%u", retry ? retry : 1);
}

static void login(struct dash *d, const char *body, size_t len, struct dash_reply *r)
{
	char *token = form_field(body ? body : "", len, "token");
	struct page p;
	page_init(&p, false);
	int who = 0;
	if (token && strlen(token) < 4096) {
		char *bearer = util_fmt("Bearer %s", token);
		who = auth_check(d->a, bearer);
		explicit_bzero(bearer, strlen(bearer));
		free(bearer);
	}
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	unsigned retry = 0;
	if (who <= 0) {
		bool spent = failure_spent(d, &retry);
		page_login(&p, spent ? "Too many failed sign-ins: wait a few seconds." : "That is not a token of this server.");
		set_body(r, spent ? 429 : 401, "text/html; charset=utf-8", &p);
		if (spent)
			retry_after(r, retry);
		return;
	}
	if (!auth_take(&d->signin_rate[who], 1, 5, util_now_ms(), &retry)) {
		page_login(&p, "Too many sign-ins with this token: wait a few seconds.");
		set_body(r, 429, "text/html; charset=utf-8", &p);
		retry_after(r, retry);
		return;
	}
	/* The slot: this principal's own oldest once it has SIGNINS_PER, else
	 * a free or expired one, else the oldest of all. */
	double now = util_now_ms();
	int mine = 0, own_oldest = -1, free_slot = -1, oldest = 0;
	for (int i = 0; i < SIGNINS; i++) {
		struct signin *x = &d->in[i];
		bool live = x->who > 0 && x->expires > now;
		if (live && x->who == who) {
			mine++;
			if (own_oldest < 0 || x->expires < d->in[own_oldest].expires)
				own_oldest = i;
		}
		if (!live && free_slot < 0)
			free_slot = i;
		if (x->expires < d->in[oldest].expires)
			oldest = i;
	}
	int slot = mine >= SIGNINS_PER ? own_oldest : free_slot >= 0 ? free_slot : oldest;
	struct signin *s = &d->in[slot];
	util_random_hex(s->sid, SID_BYTES);
	s->who = who;
	s->expires = now + SIGNIN_MS;
	signin_cookie(r, s->sid, false);
	r->location = "/";
	r->who = who;
	text_reply(r, 303, "text/plain; charset=utf-8", "signed in\n");
}

static void logout(struct dash *d, const char *cookie, struct dash_reply *r)
{
	struct signin *s = cookie_signin(d, cookie);
	if (s)
		memset(s, 0, sizeof *s);
	signin_cookie(r, NULL, true);
	r->location = "/login";
	text_reply(r, 303, "text/plain; charset=utf-8", "signed out\n");
}

/* A time from the runs form: ISO 8601, or a time ago (30m, 1h, 7d). */
static double form_time(const char *s)
{
	double ms;
	uint64_t ago;
	if (!s || !*s)
		return NAN;
	if (util_parse_iso8601(s, &ms))
		return ms / 1000.0;
	if (util_parse_duration(s, &ago))
		return (util_epoch_ms() - (double)ago) / 1000.0;
	return NAN;
}

static const char *arg_or_null(dash_arg_fn fn, void *arg, const char *key)
{
	const char *v = fn(arg, key);
	return v && *v && strlen(v) <= 512 ? v : NULL;
}

struct json_rows {
	jv arr;
};

static bool on_json_row(jv row, void *arg)
{
	struct json_rows *j = arg;
	j->arr = jv_array_append(j->arr, row);
	return true;
}

void dash_serve(struct dash *d, const char *method, const char *path, dash_arg_fn arg_fn, void *arg,
		const char *cookie, const char *authorization, const char *body, size_t len, struct dash_reply *r)
{
	memset(r, 0, sizeof *r);
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
	if (!strcmp(path, "/static/dash.css") || !strcmp(path, "/static/dash.js")) {
		if (!get) {
			r->allow = "GET, HEAD";
			return text_reply(r, 405, "text/plain; charset=utf-8", "GET\n");
		}
		bool css = path[13] == 'c';
		return text_reply(r, 200, css ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8",
				  css ? page_css : page_js);
	}
	if (!strncmp(path, "/static/", 8))
		return text_reply(r, 404, "text/plain; charset=utf-8", "not found\n");
	if (!strcmp(path, "/login")) {
		if (post)
			return login(d, body, len, r);
		if (!get) {
			r->allow = "GET, POST";
			return text_reply(r, 405, "text/plain; charset=utf-8", "GET the form, POST the token\n");
		}
		struct page p;
		page_init(&p, false);
		page_login(&p, NULL);
		return set_body(r, 200, "text/html; charset=utf-8", &p);
	}
	if (!strcmp(path, "/logout")) {
		if (!post) {
			r->allow = "POST";
			return text_reply(r, 405, "text/plain; charset=utf-8", "POST signs out\n");
		}
		return logout(d, cookie, r);
	}
	bool json = !strcmp(path, "/runs.json"), rows = !strcmp(path, "/runs.html");
	int who = dash_who(d, authorization, cookie);
	unsigned retry = 0;
	if (!who && is_bearer(authorization) && failure_spent(d, &retry)) {
		retry_after(r, retry);
		return text_reply(r, 429, "text/plain; charset=utf-8", "too many bad tokens: wait a few seconds\n");
	}
	if (!who) {
		if (json)
			return text_reply(r, 401, "application/json", "{\"error\":\"sign in, or send Authorization: Bearer TOKEN\"}\n");
		struct page p;
		page_init(&p, false);
		page_login(&p, is_bearer(authorization) ? "That is not a token of this server." : NULL);
		return set_body(r, 401, "text/html; charset=utf-8", &p);
	}
	r->who = who;
	if (!get) {
		r->allow = "GET, HEAD";
		return text_reply(r, 405, "text/plain; charset=utf-8", "the dashboard is read-only: GET\n");
	}

	struct hist_filter f;
	hist_filter_init(&f);
	char principal[AUTH_PRINCIPAL_LEN + 1];
	if (d->c->http_dashboard != CONF_DASHBOARD_ALL) {
		auth_principal(d->a, who, principal);
		f.principal = principal;
	}
	const char *db = state_history(d->c);
	char err[1024];
	struct page p;
	page_init(&p, false);
	char label[32];
	snprintf(label, sizeof label, "token %d", who);
	p.who = label;
	struct hist *h = hist_open(db, HIST_PEEK, false, err, sizeof err);
	/* (none yet: no file, or one its first writer has not filled) */
	bool absent = !h && errno == ENOENT;
	if (h)
		hist_deadline(h, PAGE_MS);
	if (absent && !strcmp(path, "/sessions")) {
		/* No history yet, but sandbox sessions may be open. */
		jv live = d->m ? mcp_live_sessions(d->m, (unsigned)who, d->c->http_dashboard == CONF_DASHBOARD_ALL) : jv_invalid();
		page_sessions(&p, NULL, &f, live, err, sizeof err);
		jv_free(live);
		return set_body(r, 200, "text/html; charset=utf-8", &p);
	}
	if (!h) {
		if (absent) {
			if (json)
				return text_reply(r, 200, "application/json", "[]\n");
			if (rows)
				return text_reply(r, 200, "text/html; charset=utf-8", "");
			page_begin(&p, "no history", "overview");
			page_raw(&p, "<h1>No history yet</h1><p class=\"none\">Nothing has been logged: runs appear here once "
				     "sbx-log (or sbx-mcp) writes them.</p>");
			page_end(&p);
			return set_body(r, strncmp(path, "/runs/", 6) ? 200 : 404, "text/html; charset=utf-8", &p);
		}
		util_warn("dashboard: %s", err);
		return text_reply(r, 500, json ? "application/json" : "text/plain; charset=utf-8",
				  json ? "{\"error\":\"the history could not be read\"}\n"
				       : "the history could not be read; see the server's log\n");
	}
	int rc = 0;
	unsigned status = 200;
	if (json || rows) {
		int64_t after = 0;
		const char *a = arg_or_null(arg_fn, arg, "after");
		if (a && !util_parse_i64(a, 0, INT64_MAX, &after))
			after = 0;
		f.after_id = after > 0 ? after : 0;
		f.limit = 100;
		/* The same rows as table rows, as the pages render them: what
		 * the overview's script adds live. */
		if (rows) {
			rc = page_rows(&p, h, &f, err, sizeof err) < 0 ? -1 : 0;
			hist_close(h);
			if (rc < 0) {
				page_free(&p);
				util_warn("dashboard: %s", err);
				return text_reply(r, 500, "text/plain; charset=utf-8", "the history could not be read; see the server's log\n");
			}
			return set_body(r, 200, "text/html; charset=utf-8", &p);
		}
		struct json_rows j = { .arr = jv_array() };
		rc = hist_query(h, &f, false, on_json_row, &j, err, sizeof err) < 0 ? -1 : 0;
		size_t n;
		char *text = rec_dump(j.arr, &n);
		hist_close(h);
		if (rc < 0) {
			free(text);
			util_warn("dashboard: %s", err);
			return text_reply(r, 500, "application/json", "{\"error\":\"the history could not be read\"}\n");
		}
		r->status = 200;
		r->ctype = "application/json";
		r->body = text;
		r->len = n;
		page_free(&p);
		return;
	}
	if (!strcmp(path, "/")) {
		const char *range = arg_or_null(arg_fn, arg, "range");
		rc = page_overview(&p, h, &f, range && page_range_seconds(range) >= 0 ? range : "24h", err, sizeof err);
	} else if (!strcmp(path, "/sessions")) {
		/* Sandbox sessions are owned by the token that made them. */
		jv live = d->m ? mcp_live_sessions(d->m, (unsigned)who, d->c->http_dashboard == CONF_DASHBOARD_ALL) : jv_invalid();
		rc = page_sessions(&p, h, &f, live, err, sizeof err);
		jv_free(live);
	} else if (!strcmp(path, "/runs")) {
		struct page_form form = {
			.language = arg_or_null(arg_fn, arg, "language"), .status = arg_or_null(arg_fn, arg, "status"),
			.session = arg_or_null(arg_fn, arg, "session"), .q = arg_or_null(arg_fn, arg, "q"),
			.since = arg_or_null(arg_fn, arg, "since"), .until = arg_or_null(arg_fn, arg, "until"),
		};
		f.language = form.language;
		f.status = form.status;
		f.session = form.session;
		f.text = form.q;
		f.since = form_time(form.since);
		f.until = form_time(form.until);
		const char *before = arg_or_null(arg_fn, arg, "before");
		if (before) {
			/* TS:ID, as the "older runs" link writes it. */
			char *colon = strrchr(before, ':'), *end;
			errno = 0;
			double ts = colon ? strtod(before, &end) : NAN;
			int64_t id;
			if (colon && !errno && end == colon && isfinite(ts) && util_parse_i64(colon + 1, 1, INT64_MAX, &id)) {
				f.before_ts = ts;
				f.before_id = id;
			}
		}
		rc = page_runs(&p, h, &f, &form, err, sizeof err);
	} else {
		int64_t id;
		if (!util_parse_i64(path + 6, 1, INT64_MAX, &id))
			rc = 1;
		else
			rc = page_run(&p, h, &f, id, err, sizeof err);
		if (rc == 1) {
			page_free(&p);
			page_init(&p, false);
			p.who = label;
			page_begin(&p, "not found", "runs");
			page_raw(&p, "<h1>No such run</h1><p class=\"none\">It is not in the history, or not yours.</p>");
			page_end(&p);
			status = 404;
			rc = 0;
		}
	}
	hist_close(h);
	if (rc < 0) {
		page_free(&p);
		util_warn("dashboard: %s", err);
		if (strstr(err, "interrupted")) {
			/* Past PAGE_MS: the server's thread is everyone's. */
			retry_after(r, 5);
			return text_reply(r, 503, "text/plain; charset=utf-8",
					  "the page took too long (a narrower range or filter is faster)\n");
		}
		return text_reply(r, 500, "text/plain; charset=utf-8", "the history could not be read; see the server's log\n");
	}
	set_body(r, status, "text/html; charset=utf-8", &p);
}
