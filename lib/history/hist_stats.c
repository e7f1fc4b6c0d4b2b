/* hist_stats: statistics over a history's rows: counts, success rates
 * and duration percentiles per language and status (or verdict), per time
 * bucket too, and durations over time.  What counts as "the program ran"
 * and as a success comes from status.h's table, in C and in the SQL
 * alike.  Part of hist (hist.h). */
#define _GNU_SOURCE
#include "hist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hist_int.h"
#include "status.h"
#include "util.h"

/* ---- statistics ------------------------------------------------------ */

struct series {
	double *v;
	size_t n, cap;
};

static void series_add(struct series *s, double d)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = util_xrealloc(s->v, s->cap * sizeof *s->v);
	}
	s->v[s->n++] = d;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const struct series *s, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)s->n);
	return s->v[rank ? rank - 1 : 0];
}

static jv summary(jv row, const struct series *s)
{
	row = jv_object_set(row, jv_string("count"), jv_number((double)s->n));
	row = jv_object_set(row, jv_string("p50_ms"), jv_number(percentile(s, 50)));
	row = jv_object_set(row, jv_string("p95_ms"), jv_number(percentile(s, 95)));
	return jv_object_set(row, jv_string("max_ms"), jv_number(s->v[s->n - 1]));
}

struct stats_state {
	hist_row_fn fn;
	void *arg;
	bool stopped;
	jv pending;            /* rows of the current language (and bucket) */
	struct series all;     /* the durations of the current language's runs that ran */
	size_t total;          /* its runs, all of them */
	size_t success, rated; /* successes, of the runs that count for the success rate */
	int64_t emitted;
	const char *key;       /* "status", or "verdict" (by_verdict) */
};

/* The current language is complete: give each of its rows the language's
 * success rate, then add its "all" row, and hand them out. */
static void flush_language(struct stats_state *s, jv bucket, const char *lang)
{
	if (s->total == 0)
		return;
	double rate = s->rated ? (double)s->success / (double)s->rated : -1;
	/* "all": every run, whatever its status; its durations are those of
	 * the programs that ran (none: null), not of requests refused,
	 * compiles that failed or calls cancelled. */
	jv all = jv_object();
	if (jv_is_valid(bucket))
		all = jv_object_set(all, jv_string("bucket"), jv_copy(bucket));
	all = jv_object_set(all, jv_string("language"), jv_string(lang));
	all = jv_object_set(all, jv_string(s->key), jv_string("all"));
	if (s->all.n) {
		qsort(s->all.v, s->all.n, sizeof *s->all.v, cmp_double);
		all = summary(all, &s->all);
		all = jv_object_set(all, jv_string("count"), jv_number((double)s->total));
	} else {
		all = jv_object_set(all, jv_string("count"), jv_number((double)s->total));
		all = jv_object_set(all, jv_string("p50_ms"), jv_null());
		all = jv_object_set(all, jv_string("p95_ms"), jv_null());
		all = jv_object_set(all, jv_string("max_ms"), jv_null());
	}
	s->pending = jv_array_append(s->pending, all);
	jv_array_foreach(s->pending, i, row) {
		row = jv_object_set(row, jv_string("success_rate"), rate < 0 ? jv_null() : jv_number(round(rate * 10000) / 10000));
		if (!s->stopped) {
			s->emitted++;
			s->stopped = !s->fn(row, s->arg);
		} else
			jv_free(row);
	}
	jv_free(s->pending);
	s->pending = jv_array();
	s->all.n = 0;
	s->total = s->success = s->rated = 0;
}

/* The SQL for "the program ran" (status.h's STF_RAN), as the C side of
 * hist_stats decides it: the statuses that did not run, from the table. */
static const char *sql_ran(char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "status NOT IN (");
	const char *sep = "";
	for (int i = 0; i < STATUS_NSTATUSES && o < len; i++)
		if (!status_is(status_name(i), STF_RAN)) {
			o += (size_t)snprintf(buf + o, len - o, "%s'%s'", sep, status_name(i));
			sep = ", ";
		}
	if (o < len)
		snprintf(buf + o, len - o, ")");
	return buf;
}

int64_t hist_series(struct hist *h, const struct hist_filter *f, int64_t bucket_s, hist_row_fn fn, void *arg,
		    char *err, size_t errlen)
{
	/* The runs whose program ran, as --stats's "all" rows count them, in
	 * timestamp order (the index's, no sort); each bucket's durations are
	 * sorted here: SQLite sorting a million rows by (bucket, duration)
	 * cost several times the scan. */
	char ran[256];
	sqlite3_stmt *st = hist_prepare_filtered(h, f, "CAST(timestamp / ?98 AS INTEGER) * ?98, duration_ms",
					    sql_ran(ran, sizeof ran), "ORDER BY timestamp", "series", err, errlen);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 98, bucket_s > 0 ? bucket_s : 3600);
	struct series cur = { 0 };
	int64_t bucket = 0, n = 0;
	bool stopped = false;
	int rc;
	for (;;) {
		rc = sqlite3_step(st);
		bool row = rc == SQLITE_ROW;
		int64_t b = row ? sqlite3_column_int64(st, 0) : 0;
		if ((!row || b != bucket) && cur.n && !stopped) {
			qsort(cur.v, cur.n, sizeof *cur.v, cmp_double);
			jv r = jv_object_set(jv_object(), jv_string("bucket"), jv_number((double)bucket));
			n++;
			stopped = !fn(summary(r, &cur), arg);
			cur.n = 0;
		}
		if (!row || stopped)
			break;
		bucket = b;
		series_add(&cur, sqlite3_column_double(st, 1));
	}
	free(cur.v);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		hist_db_fail(h, err, errlen, "series");
		n = -1;
	}
	sqlite3_finalize(st);
	return n;
}

int64_t hist_stats(struct hist *h, const struct hist_filter *f, int64_t bucket_s, hist_row_fn fn, void *arg,
		   char *err, size_t errlen)
{
	char where[1024], sql[2048];
	hist_where_clause(f, where, sizeof where);
	/* By verdict: the judged runs, each verdict a group as a status is. */
	const char *col = f->by_verdict ? "verdict" : "status";
	if (bucket_s > 0)
		snprintf(sql, sizeof sql,
			 "SELECT CAST(timestamp / ?98 AS INTEGER) * ?98, language, %s, duration_ms FROM runs%s"
			 " ORDER BY 1, language, %s, duration_ms", col, where, col);
	else
		snprintf(sql, sizeof sql, "SELECT NULL, language, %s, duration_ms FROM runs%s ORDER BY language, %s, duration_ms",
			 col, where, col);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return hist_db_fail(h, err, errlen, "statistics");
	hist_bind_filter(st, f);
	if (bucket_s > 0)
		sqlite3_bind_int64(st, 98, bucket_s);

	struct stats_state s = { .fn = fn, .arg = arg, .pending = jv_array(), .key = col };
	struct series cur = { 0 };
	char *lang = NULL, *status = NULL;
	int64_t bucket = INT64_MIN;
	jv bucket_jv = jv_invalid();
	int rc;
	for (;;) {
		rc = sqlite3_step(st);
		bool row = rc == SQLITE_ROW;
		int64_t b = row && bucket_s > 0 ? sqlite3_column_int64(st, 0) : INT64_MIN;
		const char *l = row ? (const char *)sqlite3_column_text(st, 1) : NULL;
		const char *stt = row ? (const char *)sqlite3_column_text(st, 2) : NULL;
		l = l ? l : "";
		stt = stt ? stt : "";
		bool new_lang = !row || !lang || b != bucket || strcmp(l, lang);
		bool new_status = new_lang || strcmp(stt, status);
		if (new_status && cur.n) {
			jv r = jv_object();
			if (jv_is_valid(bucket_jv))
				r = jv_object_set(r, jv_string("bucket"), jv_copy(bucket_jv));
			r = jv_object_set(r, jv_string("language"), jv_string(lang));
			r = jv_object_set(r, jv_string(col), jv_string(status));
			s.pending = jv_array_append(s.pending, summary(r, &cur));
			cur.n = 0;
		}
		if (new_lang && lang)
			flush_language(&s, bucket_jv, lang);
		if (!row || s.stopped)
			break;
		if (new_lang) {
			free(lang);
			lang = util_strdup(l);
			if (b != bucket) {
				bucket = b;
				jv_free(bucket_jv);
				char when[40];
				util_iso8601((double)b * 1000.0, when, sizeof when);
				bucket_jv = jv_string(when);
			}
		}
		if (new_status) {
			free(status);
			status = util_strdup(stt);
		}
		/* The success rate leaves out what was never a verdict on the
		 * code (invalid requests, cancelled calls). */
		double d = sqlite3_column_double(st, 3);
		series_add(&cur, d);
		s.total++;
		if (status_is(stt, STF_RAN))
			series_add(&s.all, d);
		if (status_is(stt, STF_RATED))
			s.rated++;
		if (status_is(stt, STF_OK))
			s.success++;
	}
	int64_t n = s.emitted;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		n = hist_db_fail(h, err, errlen, "statistics");
	sqlite3_finalize(st);
	jv_free(bucket_jv);
	jv_free(s.pending);
	free(cur.v);
	free(s.all.v);
	free(lang);
	free(status);
	return n;
}
