#define _GNU_SOURCE
#include "judge.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "limit.h"
#include "rec.h"
#include "req.h"
#include "status.h"
#include "util.h"

/* ---- comparing ------------------------------------------------------- */

bool judge_cmp_parse(const char *s, struct judge_cmp *m, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		enum judge_mode mode;
	} names[] = { { "exact", JM_EXACT }, { "trim", JM_TRIM }, { "tokens", JM_TOKENS }, { "checker", JM_CHECKER } };
	*m = (struct judge_cmp){ .mode = JM_TRIM };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i].name)) {
			m->mode = names[i].mode;
			return true;
		}
	if (!strncmp(s, "float:", 6)) {
		char *end;
		errno = 0;
		double eps = strtod(s + 6, &end);
		if (errno || end == s + 6 || *end || !isfinite(eps) || eps < 0 || eps >= 1) {
			snprintf(err, errlen, "\"%s\": \"%.40s\": EPS must be a number in [0, 1), as in \"float:1e-6\"", REQ_KEY(compare), s);
			return false;
		}
		m->mode = JM_FLOAT;
		m->eps = eps;
		return true;
	}
	snprintf(err, errlen, "\"%s\" must be \"exact\", \"trim\", \"tokens\", \"float:EPS\" or \"checker\", got \"%.40s\"", REQ_KEY(compare), s);
	return false;
}

/* A piece of output for a difference: valid UTF-8, 200 bytes at most. */
static jv excerpt(const char *s, size_t n)
{
	if (!s)
		return jv_null();
	bool cut;
	return cap_string(s, n, 200, 0, &cut);
}

static jv difference(const char *key, size_t at, size_t line, const char *e, size_t el, const char *g, size_t gl)
{
	jv d = jv_object_set(jv_object(), jv_string(key), jv_number((double)at));
	if (strcmp(key, "line"))
		d = jv_object_set(d, jv_string("line"), jv_number((double)line));
	d = jv_object_set(d, jv_string("expected"), excerpt(e, el));
	return jv_object_set(d, jv_string("got"), excerpt(g, gl));
}

/* Whitespace as C's isspace in the C locale (never NUL: a program's NUL
 * bytes are output like any other). */
static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Lines as trim sees them: each without its trailing whitespace (so CRLF
 * is LF), and no empty lines at the end. */
struct lines {
	const char *s, *end;
};

static bool next_line(struct lines *L, const char **l, size_t *n)
{
	if (L->s >= L->end)
		return false;
	const char *nl = memchr(L->s, '\n', (size_t)(L->end - L->s));
	const char *e = nl ? nl : L->end;
	*l = L->s;
	L->s = nl ? nl + 1 : L->end;
	while (e > *l && space(e[-1]))
		e--;
	*n = (size_t)(e - *l);
	return true;
}

/* The end of the text without its trailing whitespace: what trim keeps. */
static const char *trimmed_end(const char *s, size_t n)
{
	const char *e = s + n;
	while (e > s && space(e[-1]))
		e--;
	return e;
}

static jv compare_lines(const char *exp, size_t elen, const char *got, size_t glen)
{
	struct lines E = { exp, trimmed_end(exp, elen) }, G = { got, trimmed_end(got, glen) };
	for (size_t line = 1;; line++) {
		const char *a = NULL, *b = NULL;
		size_t an = 0, bn = 0;
		bool ha = next_line(&E, &a, &an), hb = next_line(&G, &b, &bn);
		if (!ha && !hb)
			return jv_null();
		if (ha != hb || an != bn || memcmp(a, b, an))
			return difference("line", line, line, ha ? a : NULL, an, hb ? b : NULL, bn);
	}
}

static jv compare_exact(const char *exp, size_t elen, const char *got, size_t glen)
{
	if (elen == glen && !memcmp(exp, got, elen))
		return jv_null();
	size_t i = 0, line = 1, bol = 0;
	while (i < elen && i < glen && exp[i] == got[i])
		if (exp[i++] == '\n') {
			line++;
			bol = i;
		}
	/* the differing line of each, from its start */
	const char *ee = memchr(exp + bol, '\n', elen - bol), *ge = memchr(got + bol, '\n', glen - bol);
	size_t el = ee ? (size_t)(ee - exp) - bol + 1 : elen - bol, gl = ge ? (size_t)(ge - got) - bol + 1 : glen - bol;
	jv d = difference("line", line, line, bol < elen ? exp + bol : NULL, el, bol < glen ? got + bol : NULL, gl);
	return jv_object_set(d, jv_string("column"), jv_number((double)(i - bol + 1)));
}

struct tokens {
	const char *s, *end;
	size_t line;
};

static bool next_token(struct tokens *T, const char **t, size_t *n)
{
	while (T->s < T->end && space(*T->s))
		if (*T->s++ == '\n')
			T->line++;
	if (T->s >= T->end)
		return false;
	*t = T->s;
	while (T->s < T->end && !space(*T->s))
		T->s++;
	*n = (size_t)(T->s - *t);
	return true;
}

/* A token as a finite decimal number, the whole of it: digits, a sign, a
 * point and an exponent only (no hex, no "inf", no NUL that would end
 * strtod's reading early). */
static bool number(const char *t, size_t n, double *v)
{
	char buf[64], *end;
	if (n == 0 || n >= sizeof buf || strspn(t, "0123456789+-.eE") < n)
		return false;
	memcpy(buf, t, n);
	buf[n] = 0;
	errno = 0;
	*v = strtod(buf, &end);
	return !errno && *end == 0 && isfinite(*v);
}

static bool close_enough(const char *a, size_t an, const char *b, size_t bn, double eps)
{
	double x, y;
	if (!number(a, an, &x) || !number(b, bn, &y))
		return false;
	double d = fabs(x - y);
	return d <= eps || d <= eps * fabs(x);
}

static jv compare_tokens(const char *exp, size_t elen, const char *got, size_t glen, const struct judge_cmp *m)
{
	struct tokens E = { exp, exp + elen, 1 }, G = { got, got + glen, 1 };
	for (size_t k = 1;; k++) {
		const char *a = NULL, *b = NULL;
		size_t an = 0, bn = 0;
		bool ha = next_token(&E, &a, &an), hb = next_token(&G, &b, &bn);
		if (!ha && !hb)
			return jv_null();
		bool same = ha && hb && ((an == bn && !memcmp(a, b, an)) || (m->mode == JM_FLOAT && close_enough(a, an, b, bn, m->eps)));
		if (!same)
			return difference("token", k, hb ? G.line : E.line, ha ? a : NULL, an, hb ? b : NULL, bn);
	}
}

jv judge_compare(const struct judge_cmp *m, const char *exp, size_t elen, const char *got, size_t glen)
{
	switch (m->mode) {
	case JM_EXACT: return compare_exact(exp, elen, got, glen);
	case JM_TOKENS:
	case JM_FLOAT: return compare_tokens(exp, elen, got, glen, m);
	case JM_TRIM:
	case JM_CHECKER: break;
	}
	return compare_lines(exp, elen, got, glen);
}

/* ---- sbx-validate ---------------------------------------------------- */

/* Whether k is a field of the contexts in `where` (req.h). */
static bool known(unsigned where, const char *k)
{
	const struct req_field *f = req_find(k);
	return f && (f->where & where);
}

#define N(a) (sizeof a / sizeof a[0])

/* One test (borrowed): its fields, its data's size into *bytes, and its
 * exec entry into *out. */
static bool test_exec(const struct conf *c, jv t, int i, jv run, const struct limits *lim, const char *program,
		      uint64_t *bytes, jv *out, char *err, size_t errlen)
{
	char why[400];
	if (jv_get_kind(t) != JV_KIND_OBJECT) {
		snprintf(err, errlen, "tests[%d] must be an object, got %s", i, rec_kind(t));
		return false;
	}
	bool ok = true;
	jv_object_foreach(t, k, v)
	{
		if (ok && !known(RW_TEST, jv_string_value(k))) {
			char names[200];
			snprintf(err, errlen, "tests[%d]: unknown field \"%.60s\" (a test has %s)", i, jv_string_value(k),
				 req_names(RW_TEST, names, sizeof names));
			ok = false;
		}
		jv_free(k);
		jv_free(v);
	}
	if (!ok)
		return false;
	static const char *const strings[] = { REQ_KEY(stdin), REQ_KEY(expected_stdout) };
	for (size_t s = 0; s < N(strings); s++) {
		jv v = rec_get(t, strings[s]);
		jv_kind kd = jv_get_kind(v);
		size_t n = kd == JV_KIND_STRING ? (size_t)jv_string_length_bytes(jv_copy(v)) : 0;
		jv_free(v);
		if (kd != JV_KIND_INVALID && kd != JV_KIND_NULL && kd != JV_KIND_STRING) {
			snprintf(err, errlen, "tests[%d].%s must be a string, got %s", i, strings[s], jv_kind_name(kd));
			return false;
		}
		uint64_t max = s == 0 ? c->max_stdin_size : c->test_output;
		if (n > max) {
			char what[64];
			snprintf(what, sizeof what, "tests[%d].%s is", i, strings[s]);
			job_too_big(err, errlen, what, "", n, s == 0 ? "max_stdin_size" : "test_output", max);
			return false;
		}
		*bytes += n;
	}
	jv args = rec_get(t, REQ_KEY(args));
	ok = job_args_ok(args, why, sizeof why);
	if (!ok)
		snprintf(err, errlen, "tests[%d].%s", i, why);
	jv argv = jv_copy(run);
	if (ok && jv_get_kind(args) == JV_KIND_ARRAY)
		argv = jv_array_concat(argv, jv_copy(args));
	jv_free(args);
	struct job_file *f = NULL;
	size_t nf = 0;
	jv files = rec_get(t, REQ_KEY(files));
	if (ok && !(ok = job_files_load(c, files, program, &f, &nf, why, sizeof why)))
		snprintf(err, errlen, "tests[%d].%s", i, why);
	jv_free(files);
	for (size_t x = 0; x < nf; x++)
		*bytes += f[x].len;
	job_files_free(f, nf);
	struct limits tl = *lim;
	if (ok && !(ok = job_req_limits(c, t, &tl, why, sizeof why)))
		snprintf(err, errlen, "tests[%d].%s", i, why);
	if (!ok) {
		jv_free(argv);
		return false;
	}
	jv e = jv_object_set(jv_object(), jv_string("run"), argv);
	*out = jv_object_set(e, jv_string(REQ_KEY(limits)), limits_to_json(&tl));
	return true;
}

/* The checker's own job: its language and code, run as `checker input
 * output expected`, with its language's limits or its own. */
static jv checker_job(const struct conf *c, jv req, char *err, size_t errlen)
{
	jv ck = rec_get(req, REQ_KEY(checker));
	if (jv_get_kind(ck) != JV_KIND_OBJECT) {
		snprintf(err, errlen, "compare \"checker\" needs \"checker\": {\"language\", \"code\"}, got %s", rec_kind(ck));
		jv_free(ck);
		return jv_invalid();
	}
	jv creq = jv_object_set(jv_object(), jv_string(REQ_KEY(id)), jv_string("checker"));
	bool ok = true;
	jv_object_foreach(ck, k, v)
	{
		if (ok && !known(RW_CHECKER, jv_string_value(k))) {
			char names[200];
			snprintf(err, errlen, "checker: unknown field \"%.60s\" (a checker has %s)", jv_string_value(k),
				 req_names(RW_CHECKER, names, sizeof names));
			ok = false;
		}
		if (ok)
			creq = jv_object_set(creq, jv_copy(k), jv_copy(v));
		jv_free(k);
		jv_free(v);
	}
	jv_free(ck);
	if (!ok) {
		jv_free(creq);
		return jv_invalid();
	}
	jv args = jv_array_append(jv_array_append(jv_array_append(jv_array(), jv_string("input")), jv_string("output")),
				  jv_string("expected"));
	jv job = job_from_request(c, jv_object_set(creq, jv_string(REQ_KEY(args)), args));
	const char *st = rec_str(job, "status", NULL);
	if (status_find(st) == STATUS_invalid) {
		const char *e = rec_str(job, "error", NULL);
		snprintf(err, errlen, "checker: %s", e ? e : STATUS(invalid));
		jv_free(job);
		return jv_invalid();
	}
	if (jv_get_kind(job) != JV_KIND_OBJECT || !rec_has(job, REQ_KEY(exec))) {
		snprintf(err, errlen, "checker: not a job");
		jv_free(job);
		return jv_invalid();
	}
	return job;
}

jv judge_exec(const struct conf *c, jv req, jv run, const struct limits *lim, const char *program, jv *checker, char *err,
	      size_t errlen)
{
	*checker = jv_null();
	/* The request's fields that a judged request gives per test, or not
	 * at all. */
	const struct req_field *f = req_first(req, RW_REQ | RW_TEST, RW_JUDGED);
	if (f) {
		snprintf(err, errlen, "with \"%s\", \"%s\" goes in each test", REQ_KEY(tests), f->name);
		return jv_invalid();
	}
	if ((f = req_first(req, RW_REQ, RW_JUDGED))) {
		snprintf(err, errlen, "\"%s\" runs each test in a fresh sandbox: \"%s\" does not go with it", REQ_KEY(tests), f->name);
		return jv_invalid();
	}
	jv tests = rec_get(req, REQ_KEY(tests));
	int n = jv_get_kind(tests) == JV_KIND_ARRAY ? jv_array_length(jv_copy(tests)) : -1;
	if (n < 1 || (uint64_t)n > c->max_tests) {
		if (n < 0)
			snprintf(err, errlen, "\"%s\" must be an array of tests, got %s", REQ_KEY(tests), rec_kind(tests));
		else
			snprintf(err, errlen, "\"%s\" has %d tests: give 1 to max_tests %llu", REQ_KEY(tests), n, (unsigned long long)c->max_tests);
		jv_free(tests);
		return jv_invalid();
	}
	struct judge_cmp m = { .mode = JM_TRIM };
	bool stop = false;
	jv cmp = rec_get(req, REQ_KEY(compare));
	bool ok = true;
	if (jv_get_kind(cmp) == JV_KIND_STRING)
		ok = judge_cmp_parse(jv_string_value(cmp), &m, err, errlen);
	else if (jv_get_kind(cmp) != JV_KIND_INVALID) {
		snprintf(err, errlen, "\"%s\" must be a string, got %s", REQ_KEY(compare), rec_kind(cmp));
		ok = false;
	}
	jv_free(cmp);
	if (ok && rec_has(req, REQ_KEY(stop_on_fail)) && !rec_bool(req, REQ_KEY(stop_on_fail), &stop)) {
		snprintf(err, errlen, "\"%s\" must be true or false", REQ_KEY(stop_on_fail));
		ok = false;
	}
	if (ok && rec_has(req, REQ_KEY(checker)) != (m.mode == JM_CHECKER)) {
		snprintf(err, errlen, m.mode == JM_CHECKER ? "compare \"checker\" needs \"checker\": {\"language\", \"code\"}"
							 : "\"checker\" goes with \"compare\": \"checker\"");
		ok = false;
	}
	jv out = jv_array();
	uint64_t bytes = 0;
	for (int i = 0; ok && i < n; i++) {
		jv e, t = jv_array_get(jv_copy(tests), i);
		ok = test_exec(c, t, i, run, lim, program, &bytes, &e, err, errlen);
		jv_free(t);
		if (ok)
			out = jv_array_append(out, e);
	}
	jv_free(tests);
	if (ok && bytes > c->max_tests_size) {
		job_too_big(err, errlen, "the tests' data is", " in all", bytes, "max_tests_size", c->max_tests_size);
		ok = false;
	}
	if (ok && m.mode == JM_CHECKER) {
		*checker = checker_job(c, req, err, errlen);
		ok = jv_is_valid(*checker);
		if (!ok)
			*checker = jv_null();
	}
	if (!ok) {
		jv_free(out);
		return jv_invalid();
	}
	return out;
}

/* ---- sbx-run --------------------------------------------------------- */

void judge_free(struct judge *jd)
{
	if (!jd)
		return;
	for (size_t i = 0; i < jd->n; i++) {
		job_files_free(jd->tests[i].files, jd->tests[i].nfiles);
		util_strv_free(jd->tests[i].run);
	}
	free(jd->tests);
	jv_free(jd->checker);
	if (jd->cj) {
		job_free(jd->cj);
		free(jd->cj);
	}
	free(jd);
}

/* A test's data (t borrowed; strings point into the record). */
static bool load_test(const struct conf *c, jv t, jv e, const struct job *j, struct judge_test *out, uint64_t *bytes,
		      char *err, size_t errlen)
{
	if (jv_get_kind(t) != JV_KIND_OBJECT || jv_get_kind(e) != JV_KIND_OBJECT) {
		snprintf(err, errlen, "not an object");
		return false;
	}
	static const char *const strings[] = { REQ_KEY(stdin), REQ_KEY(expected_stdout) };
	for (size_t s = 0; s < N(strings); s++) {
		jv v = rec_get(t, strings[s]);
		jv_kind k = jv_get_kind(v);
		jv_free(v);
		size_t n = 0;
		const char *p = k == JV_KIND_STRING ? rec_str(t, strings[s], &n) : NULL;
		if (k != JV_KIND_INVALID && k != JV_KIND_NULL && !p) {
			snprintf(err, errlen, "%s must be a string", strings[s]);
			return false;
		}
		if (n > (s == 0 ? c->max_stdin_size : c->test_output)) {
			snprintf(err, errlen, "%s exceeds %s", strings[s], s == 0 ? "max_stdin_size" : "test_output");
			return false;
		}
		*bytes += n;
		if (s == 0) {
			out->stdin_data = p;
			out->stdin_len = n;
		} else {
			out->expected = p;
			out->exp_len = n;
		}
	}
	jv files = rec_get(t, REQ_KEY(files));
	bool ok = job_files_load(c, files, j->file, &out->files, &out->nfiles, err, errlen);
	jv_free(files);
	for (size_t x = 0; ok && x < out->nfiles; x++)
		*bytes += out->files[x].len;
	if (ok)
		out->run = job_load_strv(rec_get(e, "run"), false, true, "tests[].run", err, errlen, &ok);
	jv l = ok ? rec_get(e, REQ_KEY(limits)) : jv_invalid();
	ok = ok && limits_from_json(l, REQ_KEY(limits), &out->lim, err, errlen) &&
	     job_limits_ok(c, &out->lim, REQ_KEY(limits), err, errlen);
	jv_free(l);
	return ok;
}

struct judge *judge_load(const struct conf *c, jv rec, jv exec, const struct job *j, char *err, size_t errlen)
{
	char why[400];
	jv tests = rec_get(rec, REQ_KEY(tests)), et = rec_get(exec, REQ_KEY(tests));
	int n = jv_get_kind(tests) == JV_KIND_ARRAY ? jv_array_length(jv_copy(tests)) : -1;
	bool ok = n >= 1 && (uint64_t)n <= c->max_tests && jv_get_kind(et) == JV_KIND_ARRAY &&
		  jv_array_length(jv_copy(et)) == n;
	if (!ok)
		snprintf(err, errlen, "\"%s\" and exec.tests must be arrays of 1 to max_tests %llu, one entry each", REQ_KEY(tests),
			 (unsigned long long)c->max_tests);
	struct judge *jd = util_xalloc(sizeof *jd);
	jd->checker = jv_null();
	jd->cmp.mode = JM_TRIM;
	/* sized once the count is known to be within max_tests */
	jd->tests = util_xalloc((size_t)(ok ? n : 1) * sizeof *jd->tests);
	uint64_t bytes = 0;
	for (int i = 0; ok && i < n; i++) {
		jv t = jv_array_get(jv_copy(tests), i), e = jv_array_get(jv_copy(et), i);
		ok = load_test(c, t, e, j, &jd->tests[i], &bytes, why, sizeof why);
		jv_free(t);
		jv_free(e);
		jd->n = (size_t)i + 1;
		if (!ok)
			snprintf(err, errlen, "tests[%d]: %s", i, why);
	}
	jv_free(tests);
	jv_free(et);
	if (ok && bytes > c->max_tests_size) {
		snprintf(err, errlen, "the tests' data exceeds max_tests_size");
		ok = false;
	}
	const char *cmp = rec_str(rec, REQ_KEY(compare), NULL);
	if (ok && rec_has(rec, REQ_KEY(compare)) && (!cmp || !judge_cmp_parse(cmp, &jd->cmp, err, errlen))) {
		if (!cmp)
			snprintf(err, errlen, "\"%s\" must be a string", REQ_KEY(compare));
		ok = false;
	}
	if (ok && rec_has(rec, REQ_KEY(stop_on_fail)) && !rec_bool(rec, REQ_KEY(stop_on_fail), &jd->stop_on_fail)) {
		snprintf(err, errlen, "\"%s\" must be true or false", REQ_KEY(stop_on_fail));
		ok = false;
	}
	if (ok && jd->cmp.mode == JM_CHECKER) {
		/* Loaded now, as a job of its own: a bad one is this job's
		 * invalid record, not a judge_error per test. */
		jd->checker = rec_get(exec, REQ_KEY(checker));
		if (jv_get_kind(jd->checker) != JV_KIND_OBJECT) {
			snprintf(err, errlen, "compare \"checker\" needs exec.checker, the checker's job: pass requests through sbx-validate");
			ok = false;
		} else {
			jd->cj = util_xalloc(sizeof *jd->cj);
			ok = job_load(c, jv_copy(jd->checker), jd->cj, why, sizeof why);
			if (ok && (jd->cj->judge || jd->cj->cell || jd->cj->workspace || jd->cj->install)) {
				snprintf(why, sizeof why, "a checker is a plain program: no tests, cell, session or install");
				ok = false;
			}
			if (!ok)
				snprintf(err, errlen, "exec.checker: %s", why);
		}
	}
	if (!ok) {
		judge_free(jd);
		return NULL;
	}
	return jd;
}
