/* hist_query: reading a history's rows: the filters as a WHERE clause
 * with every value bound, rows as JSON objects newest first, a page's
 * keyset cursor, sessions.  Part of hist (hist.h). */
#define _GNU_SOURCE
#include "hist.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hist_int.h"
#include "utf8.h"
#include "util.h"

/* The row as readers see it, in this order (csv and table columns too). */
/* A run's checkpoint: the one its session's files came from when it ran
 * (the session's newest restore or fork before it). */
#define RUN_CHECKPOINT                                                                                    \
	"(SELECT e.checkpoint_id FROM session_events e WHERE runs.session_id IS NOT NULL AND "             \
	"e.session_id = runs.session_id AND e.kind IN ('restore', 'fork') AND e.timestamp <= runs.timestamp " \
	"ORDER BY e.timestamp DESC LIMIT 1)"
#define ROW_COLUMNS                                                                                       \
	"id, timestamp, run_id, language, status, exit_code, signal, duration_ms, cpu_ms, memory_peak_bytes, " \
	"stdout_size, stderr_size, backend, compile_status, compile_ms, code_sha256, code_snippet, error, "   \
	"session_id, execution_count, verdict, tests_passed, tests_total, host, shard, attempt, " RUN_CHECKPOINT
static const char *const row_keys[] = {
	"history_id", "timestamp", "id", "language", "status", "exit_code", "signal", "duration_ms", "cpu_ms",
	"memory_peak_bytes", "stdout_size", "stderr_size", "backend", "compile_status", "compile_ms",
	"code_sha256", "code_snippet", "error", "session_id", "execution_count", "verdict", "tests_passed", "tests_total",
	"host", "shard", "attempt", "checkpoint", NULL,
};

/* ---- reading --------------------------------------------------------- */

void hist_filter_init(struct hist_filter *f)
{
	*f = (struct hist_filter){ .since = NAN, .until = NAN };
}

/* Append to buf[o..len): the new end, never past len - 1 (so a clause
 * that would not fit is cut, not written past the buffer). */
static size_t put(char *buf, size_t len, size_t o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t put(char *buf, size_t len, size_t o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = o < len ? vsnprintf(buf + o, len - o, fmt, ap) : 0;
	va_end(ap);
	o += n > 0 ? (size_t)n : 0;
	return o < len ? o : len - 1;
}

/* " WHERE …" from the filters present, parameters numbered from 1; every
 * value is bound by hist_bind_filter in the same order. */
void hist_where_clause(const struct hist_filter *f, char *buf, size_t len)
{
	int n = 0;
	size_t o = 0;
#define COND(present, sql)                                                                           \
	if (present)                                                                                 \
		o = put(buf, len, o, "%s" sql " ?%d", n ? " AND " : " WHERE ", n + 1), n++
	buf[0] = 0;
	COND(!isnan(f->since), "timestamp >=");
	COND(!isnan(f->until), "timestamp <");
	/* language, status and verdict: one or more, a comma-separated list
	 * bound as a JSON array (hist_bind_filter) */
#define COND_IN(present, column)                                      \
	COND(present, column " IN (SELECT value FROM json_each(");    \
	if (present)                                                  \
	o = put(buf, len, o, "))")
	COND_IN(f->language, "language");
	COND_IN(f->status, "status");
	COND(f->id, "run_id =");
	COND(f->session, "session_id =");
	COND(f->principal, "principal =");
	COND_IN(f->verdict, "verdict");
#undef COND_IN
	/* The whole code where it is kept (history_code = "full"), else its
	 * first 500 characters; % and _ in the text are literal. */
	COND(f->text, "COALESCE(code, code_snippet) LIKE '%%' ||");
	if (f->text)
		o = put(buf, len, o, " || '%%' ESCAPE '\\'");
	COND(f->history_id > 0, "id =");
	COND(f->after_id > 0, "id >");
#undef COND
	if (f->before_id > 0) {
		/* Keyset paging: the page after (before_ts, before_id), which the
		 * (timestamp) index and the rowid serve without counting rows
		 * (OFFSET would read every row it skips). */
		o = put(buf, len, o, "%stimestamp <= ?%d AND (timestamp < ?%d OR id < ?%d)",
				      n ? " AND " : " WHERE ", n + 1, n + 1, n + 2);
		n += 2;
	}
	/* The record keeps a run's egress (in either history_code mode):
	 * scanned, as the rare query it is, rather than indexed on every
	 * write; the run's own, its compile stage's and each test's
	 * (rec_egress's lists). */
#define REFUSED_IN(list) "EXISTS (SELECT 1 FROM " list " WHERE CASE WHEN e.type = 'object' THEN json_type(e.value, '$.why') END = 'text')"
	if (f->egress_refused)
		o = put(buf, len, o,
			"%s(" REFUSED_IN("json_each(record, '$.egress') AS e") " OR " REFUSED_IN("json_each(record, '$.compile.egress') AS e")
			" OR " REFUSED_IN("json_each(record, '$.tests') AS t, "
					  "json_each(CASE WHEN t.type = 'object' THEN t.value ELSE '{}' END, '$.egress') AS e") ")",
			n ? " AND " : " WHERE ");
#undef REFUSED_IN
	if (f->by_verdict)
		o = put(buf, len, o, "%sverdict IS NOT NULL", n || f->egress_refused ? " AND " : " WHERE ");
}

/* text with LIKE's % _ and the escape character itself escaped (caller frees). */
static char *like_escape(const char *text)
{
	size_t n = strlen(text);
	char *out = util_xalloc(2 * n + 1), *o = out;
	for (const char *p = text; *p; p++) {
		if (*p == '%' || *p == '_' || *p == '\\')
			*o++ = '\\';
		*o++ = *p;
	}
	*o = 0;
	return out;
}

/* "a,b" as the JSON array ["a","b"] (caller frees). */
static char *json_list(const char *csv)
{
	jv a = jv_array();
	for (const char *p = csv;; p++) {
		size_t n = strcspn(p, ",");
		a = jv_array_append(a, jv_string_sized(p, (int)n));
		p += n;
		if (!*p)
			break;
	}
	jv s = jv_dump_string(a, 0);
	char *out = util_strdup(jv_string_value(s));
	jv_free(s);
	return out;
}

int hist_bind_filter(sqlite3_stmt *st, const struct hist_filter *f)
{
	int i = 0;
	if (!isnan(f->since))
		sqlite3_bind_double(st, ++i, f->since);
	if (!isnan(f->until))
		sqlite3_bind_double(st, ++i, f->until);
	const char *strs[] = { f->language, f->status, f->id, f->session, f->principal, f->verdict };
	const bool list[] = { true, true, false, false, false, true };
	for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
		if (strs[k] && list[k])
			sqlite3_bind_text(st, ++i, json_list(strs[k]), -1, free);
		else if (strs[k])
			sqlite3_bind_text(st, ++i, strs[k], -1, SQLITE_STATIC);
	if (f->text)
		sqlite3_bind_text(st, ++i, like_escape(f->text), -1, free);
	if (f->history_id > 0)
		sqlite3_bind_int64(st, ++i, f->history_id);
	if (f->after_id > 0)
		sqlite3_bind_int64(st, ++i, f->after_id);
	if (f->before_id > 0) {
		sqlite3_bind_double(st, ++i, f->before_ts);
		sqlite3_bind_int64(st, ++i, f->before_id);
	}
	return i;
}

static jv column_jv(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER: return jv_number((double)sqlite3_column_int64(st, i));
	case SQLITE_FLOAT: return jv_number(sqlite3_column_double(st, i));
	case SQLITE_TEXT: {
		/* Text came from valid JSON strings, but a foreign writer (the
		 * seed) may have stored anything: repair, never abort. */
		const char *s = (const char *)sqlite3_column_text(st, i);
		int n = sqlite3_column_bytes(st, i);
		if (utf8_valid(s, (size_t)n, NULL))
			return jv_string_sized(s, n);
		size_t len;
		char *fixed = utf8_sanitize(s, (size_t)n, &len);
		jv v = jv_string_sized(fixed, (int)len);
		free(fixed);
		return v;
	}
	default: return jv_null();
	}
}

static jv row_jv(sqlite3_stmt *st, bool with_record)
{
	jv row = jv_object();
	for (int i = 0; row_keys[i]; i++) {
		jv v = column_jv(st, i);
		if (i == 1 && jv_get_kind(v) == JV_KIND_NUMBER) {
			char when[40];
			util_iso8601(jv_number_value(v) * 1000.0, when, sizeof when);
			jv_free(v);
			v = jv_string(when);
		}
		row = jv_object_set(row, jv_string(row_keys[i]), v);
	}
	if (with_record) {
		int n = 0;
		for (; row_keys[n]; n++)
			;
		const char *rj = (const char *)sqlite3_column_text(st, n);
		jv r = rj ? jv_parse(rj) : jv_null();
		if (!jv_is_valid(r)) {
			jv_free(r);
			r = jv_null();
		}
		row = jv_object_set(row, jv_string("record"), r);
		row = jv_object_set(row, jv_string("code"), column_jv(st, n + 1));
	}
	return row;
}

int64_t hist_query(struct hist *h, const struct hist_filter *f, bool with_record, hist_row_fn fn, void *arg,
		   char *err, size_t errlen)
{
	char where[1024], sql[2048];
	hist_where_clause(f, where, sizeof where);
	snprintf(sql, sizeof sql, "SELECT " ROW_COLUMNS "%s FROM runs%s ORDER BY timestamp DESC, id DESC%s",
		 with_record ? ", record, code" : "", where, f->limit > 0 ? " LIMIT ?99" : "");
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return hist_db_fail(h, err, errlen, "query");
	hist_bind_filter(st, f);
	if (f->limit > 0)
		sqlite3_bind_int64(st, 99, f->limit);
	int64_t n = 0;
	int rc;
	h->last_id = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		n++;
		h->last_id = sqlite3_column_int64(st, 0);
		h->last_ts = sqlite3_column_double(st, 1);
		if (!fn(row_jv(st, with_record), arg))
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		hist_db_fail(h, err, errlen, "query");
		n = -1;
	}
	sqlite3_finalize(st);
	return n;
}

/* "SELECT cols FROM runs WHERE <f's filters> AND extra tail", prepared,
 * the filters bound; NULL with err naming what. */
sqlite3_stmt *hist_prepare_filtered(struct hist *h, const struct hist_filter *f, const char *cols, const char *extra,
				      const char *tail, const char *what, char *err, size_t errlen)
{
	char where[1024], sql[2048];
	hist_where_clause(f, where, sizeof where);
	snprintf(sql, sizeof sql, "SELECT %s FROM runs%s%s%s %s", cols, where, where[0] ? " AND " : " WHERE ", extra, tail);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
		hist_db_fail(h, err, errlen, what);
		return NULL;
	}
	hist_bind_filter(st, f);
	return st;
}

/* What a session's events say of it, as a column of a query on runs. */
#define SESSION_EVENTS(kind, what) \
	"(SELECT " what " FROM session_events e WHERE e.session_id = runs.session_id AND e.kind = '" kind "')"

int64_t hist_sessions(struct hist *h, const struct hist_filter *f, int64_t limit, hist_row_fn fn, void *arg,
		      char *err, size_t errlen)
{
	sqlite3_stmt *st = hist_prepare_filtered(h, f, "session_id, group_concat(DISTINCT language), count(*), max(timestamp), "
					    SESSION_EVENTS("checkpoint", "count(*)") ", " SESSION_EVENTS("restore", "count(*)") ", "
					    SESSION_EVENTS("fork", "max(checkpoint_id)"),
					    "session_id IS NOT NULL", "GROUP BY session_id ORDER BY 4 DESC LIMIT ?99",
					    "sessions", err, errlen);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 99, limit > 0 ? limit : -1);
	int64_t n = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char when[40];
		util_iso8601(sqlite3_column_double(st, 3) * 1000.0, when, sizeof when);
		jv row = jv_object();
		row = jv_object_set(row, jv_string("session_id"), column_jv(st, 0));
		row = jv_object_set(row, jv_string("languages"), column_jv(st, 1));
		row = jv_object_set(row, jv_string("runs"), jv_number((double)sqlite3_column_int64(st, 2)));
		row = jv_object_set(row, jv_string("last"), jv_string(when));
		row = jv_object_set(row, jv_string("checkpoints"), column_jv(st, 4));
		row = jv_object_set(row, jv_string("restores"), column_jv(st, 5));
		row = jv_object_set(row, jv_string("forked_from"), column_jv(st, 6));
		n++;
		if (!fn(row, arg))
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		hist_db_fail(h, err, errlen, "sessions");
		n = -1;
	}
	sqlite3_finalize(st);
	return n;
}

int64_t hist_events(struct hist *h, const struct hist_filter *f, hist_row_fn fn, void *arg, char *err, size_t errlen)
{
#define EVENT_NAME_(name, type, json) ", " #name
#define EVENT_KEY_(name, type, json) #name,
	static const char *const keys[] = { "timestamp", HIST_EVENT_COLUMNS(EVENT_KEY_) NULL };
	char sql[1024];
	snprintf(sql, sizeof sql,
		 "SELECT timestamp" HIST_EVENT_COLUMNS(EVENT_NAME_) " FROM session_events WHERE "
		 "(?1 IS NULL OR timestamp >= ?1) AND (?2 IS NULL OR timestamp < ?2) AND (?3 IS NULL OR session_id = ?3) "
		 "AND (?4 IS NULL OR principal = ?4) ORDER BY timestamp DESC, id DESC LIMIT ?5");
#undef EVENT_NAME_
#undef EVENT_KEY_
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return hist_db_fail(h, err, errlen, "events");
	if (!isnan(f->since))
		sqlite3_bind_double(st, 1, f->since);
	if (!isnan(f->until))
		sqlite3_bind_double(st, 2, f->until);
	if (f->session)
		sqlite3_bind_text(st, 3, f->session, -1, SQLITE_STATIC);
	if (f->principal)
		sqlite3_bind_text(st, 4, f->principal, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, f->limit > 0 ? f->limit : -1);
	int64_t n = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		jv row = jv_object();
		for (int i = 0; keys[i]; i++) {
			if (!strcmp(keys[i], "principal"))
				continue; /* the filter's, never shown: as a run's */
			jv v = column_jv(st, i);
			if (i == 0) {
				char when[40];
				util_iso8601(jv_number_value(v) * 1000.0, when, sizeof when);
				jv_free(v);
				v = jv_string(when);
			}
			row = jv_object_set(row, jv_string(keys[i]), v);
		}
		n++;
		if (!fn(row, arg))
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		hist_db_fail(h, err, errlen, "events");
		n = -1;
	}
	sqlite3_finalize(st);
	return n;
}

bool hist_cursor(const struct hist *h, double *ts, int64_t *id)
{
	*ts = h->last_ts;
	*id = h->last_id;
	return h->last_id > 0;
}
