#define _GNU_SOURCE
#include "mcptools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "req.h"
#include "status.h"
#include "util.h"

/* mcptools.h's text a model reads of a run: a status line, the streams'
 * heads and tails, the files, the verdict table. */

/* A stream's text cut to at most max bytes: its head and tail with the
 * contract's marker between them, at UTF-8 character boundaries.  total:
 * every byte the program wrote, of which the marker counts what is left
 * out.  Consumes str. */
jv mcp_cut_stream(jv str, size_t max, double total)
{
	size_t n = (size_t)jv_string_length_bytes(jv_copy(str));
	if (n <= max) {
		return str;
	}
	const char *t = jv_string_value(str);
	size_t head = max / 2, tail = max - head;
	while (head > 0 && ((unsigned char)t[head] & 0xC0) == 0x80)
		head--;
	size_t from = n - tail;
	while (from < n && ((unsigned char)t[from] & 0xC0) == 0x80)
		from++;
	double left = (total > (double)n ? total : (double)n) - (double)head - (double)(n - from);
	jv out = jv_string_sized(t, (int)head);
	out = jv_string_concat(out, jv_string_fmt("\n[... %.0f bytes truncated ...]\n", left));
	out = jv_string_concat(out, jv_string_sized(t + from, (int)(n - from)));
	jv_free(str);
	return out;
}

/* ---- the text a model reads ------------------------------------------- */

static jv text_stream(jv out, jv view, const char *name, const char *label, size_t max)
{
	size_t n = 0;
	const char *t = rec_str(view, name, &n);
	if (!t || !n)
		return out;
	char key[32];
	double total = (double)n;
	snprintf(key, sizeof key, "%s_bytes", name);
	rec_num(view, key, &total);
	char size[32];
	util_size_str((uint64_t)total, size, sizeof size);
	out = jv_string_concat(out, jv_string_fmt("\n%s (%s):\n", label, size));
	jv shown = mcp_cut_stream(jv_string_sized(t, (int)n), max, total);
	out = jv_string_concat(out, jv_copy(shown));
	jv_free(shown);
	if (t[n - 1] != '\n')
		out = jv_string_concat(out, jv_string("\n"));
	return out;
}

/* A run's or an install's connections that were refused or failed, and
 * why (compile's and each test's too): what a model needs to act on
 * (another host to ask for, a configuration key). */
static jv egress_text(jv out, jv view)
{
	jv conns = rec_egress(view);
	size_t shown = 0, more = 0, total = 0;
	if (jv_get_kind(conns) == JV_KIND_ARRAY) {
		jv_array_foreach(conns, i, c) {
			const char *why = jv_get_kind(c) == JV_KIND_OBJECT ? rec_str(c, "why", NULL) : NULL;
			total++;
			if (why && shown < 10) {
				const char *host = rec_str(c, "host", NULL), *stage = rec_str(c, "stage", NULL);
				double port = 0;
				rec_num(c, "port", &port);
				char line[400], at[16] = "";
				if (port > 0)
					snprintf(at, sizeof at, ":%.0f", port);
				snprintf(line, sizeof line, "%s%s%s%s: %s", stage ? stage : "", stage ? ", " : "", host ? host : "(no host)",
					 at, why);
				for (char *q = line; *q; q++)
					if ((unsigned char)*q < 0x20 || *q == 0x7f)
						*q = '?';
				out = jv_string_concat(out, jv_string_fmt("%s\n  %s", !shown ? "\nconnections refused or failed:" : "", line));
				shown++;
			} else if (why)
				more++;
			jv_free(c);
		}
	}
	jv_free(conns);
	if (more)
		out = jv_string_concat(out, jv_string_fmt("\n  and %zu more", more));
	if (shown)
		out = jv_string_concat(out, jv_string_fmt("\n(%zu connection%s in all: the result's egress has each)\n", total,
							   total == 1 ? "" : "s"));
	/* what the session's user said when asked (mcp_ask.c) */
	jv ok = rec_get(view, "network_approved");
	const char *asked = rec_str(view, "network_asked", NULL);
	if (jv_get_kind(ok) == JV_KIND_ARRAY && jv_array_length(jv_copy(ok)) > 0) {
		out = jv_string_concat(out, jv_string("approved by the session's user for its later runs:"));
		jv_array_foreach(ok, i, p) {
			if (jv_get_kind(p) == JV_KIND_STRING)
				out = jv_string_concat(out, jv_string_fmt(" %s", jv_string_value(p)));
			jv_free(p);
		}
		out = jv_string_concat(out, jv_string(" (this run did not reach them: run again)\n"));
	} else if (asked)
		out = jv_string_concat(out, jv_string_fmt("the session's user was asked to allow them: %s\n",
							   !strcmp(asked, "accept") ? "none approved" : asked));
	jv_free(ok);
	return out;
}

jv mcp_run_text(jv view, size_t text_output, uint64_t output_limit)
{
	const char *st = rec_str(view, "status", NULL), *lang = rec_str(view, REQ_KEY(language), NULL);
	double ec, ms, mem;
	const char *sig = rec_str(view, "signal", NULL);
	jv out = jv_string(st ? st : "no status");
	if (rec_num(view, "exit_code", &ec))
		out = jv_string_concat(out, jv_string_fmt(", exit %.0f", ec));
	if (sig)
		out = jv_string_concat(out, jv_string_fmt(", %s", sig));
	if (rec_num(view, "duration_ms", &ms))
		out = jv_string_concat(out, jv_string_fmt(", %.0f ms", ms));
	if (rec_num(view, "memory_peak_bytes", &mem) && mem >= 0) {
		char m[32];
		out = jv_string_concat(out, jv_string_fmt(", %s peak", util_size_str((uint64_t)mem, m, sizeof m)));
	}
	if (lang)
		out = jv_string_concat(out, jv_string_fmt(" (%s)", lang));
	const char *err = rec_str(view, "error", NULL);
	if (err && *err)
		out = jv_string_concat(out, jv_string_fmt("\nerror: %s", err));
	jv miss = rec_get(view, "limits_missing");
	if (jv_get_kind(miss) == JV_KIND_ARRAY && jv_array_length(jv_copy(miss)) > 0) {
		jv names = jv_string("");
		jv_array_foreach(miss, i, m) {
			if (jv_get_kind(m) == JV_KIND_STRING)
				names = jv_string_concat(names, jv_string_fmt("%s%s", i ? ", " : "", jv_string_value(m)));
			jv_free(m);
		}
		out = jv_string_concat(out, jv_string_fmt("\nnot enforced on this host: %s", jv_string_value(names)));
		jv_free(names);
	}
	jv_free(miss);
	/* a compile error: the compiler's words are the whole story */
	jv comp = rec_get(view, "compile");
	if (status_find(st) == STATUS_compile_error && jv_get_kind(comp) == JV_KIND_OBJECT) {
		out = text_stream(out, comp, "stderr", "compile.stderr", text_output);
		out = text_stream(out, comp, "stdout", "compile.stdout", text_output);
	}
	jv_free(comp);
	/* a cell: its value and what became of its kernel */
	const char *kernel = rec_str(view, "kernel", NULL), *note = rec_str(view, "kernel_note", NULL);
	double count;
	if (kernel) {
		out = jv_string_concat(out, jv_string_fmt("\nkernel: %s", kernel));
		if (rec_num(view, "execution_count", &count))
			out = jv_string_concat(out, jv_string_fmt(", cell %.0f", count));
		if (note)
			out = jv_string_concat(out, jv_string_fmt(" (%s)", note));
	}
	out = text_stream(out, view, "stdout", "stdout", text_output);
	out = text_stream(out, view, "stderr", "stderr", text_output);
	const char *value = rec_str(view, "value", NULL);
	if (value && rec_num(view, "execution_count", &count))
		out = jv_string_concat(out, jv_string_fmt("\nOut[%.0f]: %s\n", count, value));
	/* cut here (past text_output), or in the record already */
	bool out_cut = false, err_cut = false;
	size_t n;
	rec_bool(view, "stdout_truncated", &out_cut);
	rec_bool(view, "stderr_truncated", &err_cut);
	out_cut |= rec_str(view, "stdout", &n) && n > text_output;
	err_cut |= rec_str(view, "stderr", &n) && n > text_output;
	if (out_cut || err_cut) {
		char lim[32];
		out = jv_string_concat(out, jv_string_fmt("\n(output cut to its head and tail: max_output asks for up to %s of each stream)\n",
							   util_size_str(output_limit, lim, sizeof lim)));
	}
	jv arts = rec_get(view, "artifacts"); /* check-names: the result's files */
	if (jv_get_kind(arts) == JV_KIND_ARRAY && jv_array_length(jv_copy(arts)) > 0) {
		out = jv_string_concat(out, jv_string("\nfiles:"));
		jv_array_foreach(arts, i, a) {
			const char *path = rec_str(a, "path", NULL), *mime = rec_str(a, "mime_type", NULL);
			const char *uri = rec_str(a, "uri", NULL);
			double bytes = 0;
			char b[32];
			rec_num(a, "bytes", &bytes);
			const char *how = rec_str(a, "shown", NULL);
			/* a name is the program's: a newline in it must not
			 * write a line of this text (a verdict of its own) */
			char name[256];
			snprintf(name, sizeof name, "%s", path ? path : "");
			for (char *q = name; *q; q++)
				if ((unsigned char)*q < 0x20 || *q == 0x7f)
					*q = '?';
			if (path)
				out = jv_string_concat(out, jv_string_fmt("\n  %s (%s, %s%s%s) %s", name, mime ? mime : "?",
									   util_size_str((uint64_t)bytes, b, sizeof b), how ? ", " : "",
									   how ? how : "", uri ? uri : ""));
			jv_free(a);
		}
		out = jv_string_concat(out, jv_string("\n"));
	}
	jv_free(arts);
	out = egress_text(out, view);
	if (rec_has(view, "verdict"))
		out = jv_string_concat(jv_string_concat(out, jv_string("\n")), mcp_verdict_table(view));
	return out;
}

/* One test's detail for the table: where its output went wrong, or how
 * it ended. */
static void test_detail(jv t, char *buf, size_t len)
{
	buf[0] = 0;
	double ec;
	const char *sig = rec_str(t, "signal", NULL), *err = rec_str(t, "error", NULL);
	jv diff = rec_get(t, "diff");
	if (jv_get_kind(diff) == JV_KIND_OBJECT) {
		double line = 0, tok = 0;
		rec_num(diff, "line", &line);
		const char *e = rec_str(diff, "expected", NULL), *g = rec_str(diff, "got", NULL);
		size_t o = (size_t)snprintf(buf, len, "line %.0f", line);
		if (rec_num(diff, "token", &tok))
			o += (size_t)snprintf(buf + o, len - o, ", token %.0f", tok);
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, ": expected %s%.60s%s", e ? "\"" : "", e ? e : "nothing", e ? "\"" : "");
		if (o < len)
			snprintf(buf + o, len - o, ", got %s%.60s%s", g ? "\"" : "", g ? g : "nothing", g ? "\"" : "");
	} else if (err)
		snprintf(buf, len, "%.160s", err);
	else if (sig)
		snprintf(buf, len, "%s", sig);
	else if (rec_num(t, "exit_code", &ec) && ec != 0)
		snprintf(buf, len, "exit code %.0f", ec);
	/* a failing program's last words (a traceback's last line) */
	size_t n = 0, o = strlen(buf);
	const char *se = jv_get_kind(diff) != JV_KIND_OBJECT && !err ? rec_str(t, "stderr", &n) : NULL;
	while (se && n && (se[n - 1] == '\n' || se[n - 1] == '\r' || se[n - 1] == ' '))
		n--;
	if (se && n && o) {
		const char *last = se + n;
		while (last > se && last[-1] != '\n')
			last--;
		snprintf(buf + o, len - o, ": %.*s", (int)(se + n - last > 120 ? 120 : se + n - last), last);
	}
	jv_free(diff);
	/* one line each: a newline in the output would break the table */
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
}

jv mcp_verdict_table(jv r)
{
	double passed = 0, total = 0, failed;
	rec_num(r, "tests_passed", &passed);
	rec_num(r, "tests_total", &total);
	const char *verdict = rec_str(r, "verdict", NULL);
	jv out = jv_string_fmt("verdict %s: %.0f of %.0f tests passed", verdict ? verdict : "?", passed, total);
	if (rec_num(r, "failed_test", &failed))
		out = jv_string_concat(out, jv_string_fmt("; test %.0f decided it", failed));
	out = jv_string_concat(out, jv_string("\ntest  status        time_ms  memory     detail\n"));
	jv tests = rec_get(r, "tests"); /* check-names: the result's tests */
	if (jv_get_kind(tests) == JV_KIND_ARRAY)
		jv_array_foreach(tests, i, t) {
			if (jv_get_kind(t) == JV_KIND_OBJECT) {
				const char *st = rec_str(t, "status", NULL);
				double ms = -1, mem = -1;
				char m[32] = "", d[400], when[32] = "";
				if (rec_num(t, "duration_ms", &ms))
					snprintf(when, sizeof when, "%.1f", ms);
				if (rec_num(t, "memory_peak_bytes", &mem) && mem >= 0)
					util_size_str((uint64_t)mem, m, sizeof m);
				test_detail(t, d, sizeof d);
				out = jv_string_concat(out, jv_string_fmt("%-5d %-13s %-8s %-10s %s\n", i, st ? st : "?", when, m, d));
			}
			jv_free(t);
		}
	jv_free(tests);
	return out;
}
