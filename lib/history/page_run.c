/* page_run: one run's page: its status or verdict and the facts of it,
 * its code with line numbers, its output, compile output, tests, images
 * (where the history kept them), limits and timings.  Part of page
 * (page.h); what it shares with page.c is in page_int.h. */
#define _GNU_SOURCE
#include "page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgsize.h"
#include "page_int.h"
#include "rec.h"
#include "req.h"
#include "utf8.h"
#include "util.h"

/* Output longer than this is cut on the page (the history may hold more):
 * a browser handed 100 MB of one line is a denial of service. */
#define SHOWN_MAX (256u << 10)

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
		page_put_bytes(p, row, size_key);
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
			page_text_capped(p, jv_string_value(v), (size_t)jv_string_length_bytes(jv_copy(v)), 4096);
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
		const char *mime = page_sval(a, "mime_type"), *content = page_sval(a, "content"), *path = page_sval(a, "path");
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
		page_put_status(p, page_sval(t, "status"));
		page_raw(p, "</td><td class=\"num\">");
		page_put_num(p, t, "duration_ms", " ms");
		page_raw(p, "</td><td class=\"num\">");
		page_put_num(p, t, "exit_code", "");
		page_raw(p, "</td><td><code>");
		size_t on;
		const char *out = page_sval_n(t, "stdout", &on);
		if (out)
			page_text_capped(p, out, on, 200);
		page_raw(p, "</code></td></tr>");
		jv_free(t);
	}
	page_raw(p, "</tbody></table>");
	if (rows > 1000)
		page_printf(p, "<p class=\"none\">%d more tests not shown.</p>", rows - 1000);
	jv_free(tests);
}

/* The connections a run's or an install's stages made through their
 * proxies (rec_egress: compile's, the run's, each test's): what each
 * reached, what was refused and why. */
static void egress_table(struct page *p, jv rec)
{
	jv conns = rec_egress(rec);
	if (jv_array_length(jv_copy(conns)) == 0) {
		jv_free(conns);
		return;
	}
	page_raw(p, "<h2>Connections</h2><table id=\"egress\"><thead><tr><th>stage</th><th>host</th><th>port</th>"
		    "<th>proxy</th><th>sent</th><th>received</th><th>duration</th></tr></thead><tbody>");
	jv_array_foreach(conns, i, c)
	{
		size_t n;
		const char *host = page_sval_n(c, "host", &n), *why = page_sval(c, "why"), *stage = page_sval(c, "stage");
		bool allowed = false;
		rec_bool(c, "allowed", &allowed);
		page_raw(p, "<tr><td>");
		page_str(p, stage ? stage : "run");
		page_raw(p, "</td><td>");
		if (host)
			page_text_capped(p, host, n, 256);
		page_raw(p, "</td><td class=\"num\">");
		page_put_num(p, c, "port", "");
		page_printf(p, "</td><td>%s", allowed ? "allowed" : "refused");
		if (why) {
			page_raw(p, ": ");
			page_text_capped(p, why, strlen(why), 800);
		}
		page_raw(p, "</td><td class=\"num\">");
		page_put_bytes(p, c, "bytes_sent");
		page_raw(p, "</td><td class=\"num\">");
		page_put_bytes(p, c, "bytes_received");
		page_raw(p, "</td><td class=\"num\">");
		page_put_num(p, c, "duration_ms", " ms");
		page_raw(p, "</td></tr>");
		jv_free(c);
	}
	page_raw(p, "</tbody></table>");
	jv_free(conns);
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
	page_put_id(p, row);
	page_raw(p, "</small></h1><dl class=\"meta\">");
	/* a judged run: its verdict first, and no status (the last test's,
	 * "error" for a wrong answer, in red beside an exit code 0) */
	const char *verdict = page_sval(row, "verdict");
	if (!verdict) {
		dt(p, "status");
		page_put_status(p, page_sval(row, "status"));
		page_raw(p, "</dd>");
	} else {
		dt(p, "verdict");
		page_raw(p, "<span id=\"verdict\">");
		page_put_status(p, verdict);
		page_raw(p, "</span> ");
		page_put_num(p, row, "tests_passed", "");
		page_raw(p, " of ");
		page_put_num(p, row, "tests_total", "");
		page_raw(p, " passed</dd>");
	}
	static const struct { const char *label, *key; } strs[] = {
		{ "language", "language" }, { "started", "timestamp" }, { "backend", "backend" },
		{ "session", "session_id" }, { "from checkpoint", "checkpoint" }, { "error", "error" }, { "signal", "signal" },
		{ "host", "host" },
	};
	/* A session's command (or workspace file) ran in its language's
	 * environment: the page says what ran, not only whose environment. */
	bool is_obj = jv_get_kind(rec) == JV_KIND_OBJECT;
	const char *ran = is_obj && rec_has(rec, REQ_KEY(command)) ? "command" : is_obj && rec_has(rec, REQ_KEY(entry)) ? "file" : NULL;
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
		size_t vn;
		const char *v = page_sval_n(row, strs[i].key, &vn);
		if (!v)
			continue;
		dt(p, strs[i].label);
		if (ran && !strcmp(strs[i].key, "language"))
			page_printf(p, "<span id=\"ran\">a %s</span>, in the environment of ", ran);
		page_text_capped(p, v, vn, 4096);
		page_raw(p, "</dd>");
	}
	static const struct { const char *label, *key, *unit; } nums[] = {
		{ "exit code", "exit_code", "" }, { "duration", "duration_ms", " ms" }, { "CPU", "cpu_ms", " ms" },
		{ "compile", "compile_ms", " ms" }, { "shard", "shard", "" }, { "attempt", "attempt", "" },
	};
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		double d;
		if (!page_nval(row, nums[i].key, &d))
			continue;
		dt(p, nums[i].label);
		page_put_num(p, row, nums[i].key, nums[i].unit);
		page_raw(p, "</dd>");
	}
	dt(p, "memory peak");
	page_put_bytes(p, row, "memory_peak_bytes");
	page_printf(p, "</dd></dl><h2>%s</h2>", ran && !strcmp(ran, "command") ? "Command" : "Code");
	size_t n = 0;
	const char *code = rec_str(row, "code", &n);
	if (!code) {
		code = page_sval_n(row, "code_snippet", &n);
		page_raw(p, "<p class=\"none\">Its first 500 characters (the history keeps the whole code with "
			    "history_code = \"full\").</p>");
	}
	code_block(p, code ? code : "", n);
	stream(p, "stdout", "Output", rec, "stdout", row, "stdout_size");
	stream(p, "stderr", "Errors", rec, "stderr", row, "stderr_size");
	jv comp = jv_get_kind(rec) == JV_KIND_OBJECT ? rec_get(rec, "compile") : jv_invalid();
	if (jv_get_kind(comp) == JV_KIND_OBJECT) {
		page_raw(p, "<h2>Compile</h2><p>");
		page_put_status(p, page_sval(comp, "status"));
		page_raw(p, " ");
		page_put_num(p, comp, "duration_ms", " ms");
		page_raw(p, "</p>");
		size_t cn;
		const char *ce = page_sval_n(comp, "stderr", &cn);
		if (ce && cn) {
			page_raw(p, "<pre id=\"compile-stderr\" class=\"out\">");
			page_text_capped(p, ce, cn, SHOWN_MAX);
			page_raw(p, "</pre>");
		}
	}
	jv_free(comp);
	tests_table(p, rec);
	egress_table(p, rec);
	images(p, rec);
	if (jv_get_kind(rec) == JV_KIND_OBJECT) {
		jv lim = rec_get(rec, REQ_KEY(limits));
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
