#define _GNU_SOURCE
#include "hist.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "rec.h"
#include "sha256.h"
#include "utf8.h"
#include "util.h"

/* Writers queue on the write lock for up to this long before giving up: a
 * batch of many sbx-log processes and a vacuum may hold it for seconds. */
#define HIST_BUSY_MS 60000

#define STR_(x) #x
#define STR(x) STR_(x)

struct hist {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *insert;
	bool in_tx;
};

/* The seed's table (version 0), as the seed project creates it.  Version 1
 * adds the columns of our results and the indexes the readers need;
 * version 2 the principal (the bearer token, as a digest) whose MCP call a
 * run was, so that a token's history is its own. */
static const char seed_table[] =
	"CREATE TABLE IF NOT EXISTS runs ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" timestamp REAL NOT NULL,"
	" language TEXT NOT NULL,"
	" code_snippet TEXT NOT NULL,"
	" status TEXT NOT NULL,"
	" exit_code INTEGER,"
	" duration_ms REAL NOT NULL,"
	" stdout_size INTEGER NOT NULL DEFAULT 0,"
	" stderr_size INTEGER NOT NULL DEFAULT 0)";

static const char *const v1_columns[] = {
	"run_id TEXT", "signal TEXT", "cpu_ms REAL", "memory_peak_bytes INTEGER", "backend TEXT",
	"compile_status TEXT", "compile_ms REAL", "code_sha256 TEXT", "error TEXT", "session_id TEXT",
	"code TEXT", "record TEXT", NULL,
};

static const char v1_indexes[] =
	/* newest-first listings and time windows */
	"CREATE INDEX IF NOT EXISTS runs_time ON runs(timestamp);"
	/* --stats reads this index alone, already in group and duration order */
	"CREATE INDEX IF NOT EXISTS runs_stats ON runs(language, status, duration_ms, timestamp);"
	"CREATE INDEX IF NOT EXISTS runs_run_id ON runs(run_id);"
	"CREATE INDEX IF NOT EXISTS runs_session ON runs(session_id, timestamp) WHERE session_id IS NOT NULL;";
	/* No index on code_sha256: its keys are random, and keeping such an
	 * index halves the insert rate; grouping by it scans, which a report
	 * can afford and a writer cannot. */

/* The row as readers see it, in this order (csv and table columns too). */
#define ROW_COLUMNS                                                                                       \
	"id, timestamp, run_id, language, status, exit_code, signal, duration_ms, cpu_ms, memory_peak_bytes, " \
	"stdout_size, stderr_size, backend, compile_status, compile_ms, code_sha256, code_snippet, error, "   \
	"session_id, execution_count, verdict, tests_passed, tests_total"
static const char *const row_keys[] = {
	"history_id", "timestamp", "id", "language", "status", "exit_code", "signal", "duration_ms", "cpu_ms",
	"memory_peak_bytes", "stdout_size", "stderr_size", "backend", "compile_status", "compile_ms",
	"code_sha256", "code_snippet", "error", "session_id", "execution_count", "verdict", "tests_passed", "tests_total", NULL,
};

static int db_fail(struct hist *h, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "history %s: %s: %s", h->path, what, sqlite3_errmsg(h->db));
	return -1;
}

static int exec(struct hist *h, const char *sql, char *err, size_t errlen)
{
	if (sqlite3_exec(h->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(h, err, errlen, sql);
	return 0;
}

static int64_t pragma_int(struct hist *h, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static bool has_column(struct hist *h, const char *name)
{
	sqlite3_stmt *st;
	bool found = false;
	if (sqlite3_prepare_v2(h->db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = ?1", -1, &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* Bring the schema to HIST_SCHEMA_VERSION inside one write transaction:
 * concurrent first opens serialise on the lock and the later ones find the
 * work done. */
/* The file's schema version, or -1 with err when it cannot be read or is
 * newer than this sbx: such a file is left exactly as it is. */
static int64_t schema_version(struct hist *h, char *err, size_t errlen)
{
	int64_t v = pragma_int(h, "PRAGMA user_version");
	if (v < 0)
		return db_fail(h, err, errlen, "read the schema version");
	if (v > HIST_SCHEMA_VERSION) {
		snprintf(err, errlen, "history %s: schema version %lld is newer than this sbx knows (%d); upgrade sbx",
			 h->path, (long long)v, HIST_SCHEMA_VERSION);
		return -1;
	}
	return v;
}

static int migrate(struct hist *h, char *err, size_t errlen)
{
	if (exec(h, "BEGIN IMMEDIATE", err, errlen) < 0)
		return -1;
	int64_t v = schema_version(h, err, errlen);
	if (v < 0)
		goto fail;
	if (v < 1) {
		/* Version 0 is either nothing or the seed's table. */
		if (exec(h, seed_table, err, errlen) < 0)
			goto fail;
		for (int i = 0; v1_columns[i]; i++) {
			char name[32];
			sscanf(v1_columns[i], "%31s", name);
			if (has_column(h, name))
				continue;
			char *sql = util_fmt("ALTER TABLE runs ADD COLUMN %s", v1_columns[i]);
			int rc = exec(h, sql, err, errlen);
			free(sql);
			if (rc < 0)
				goto fail;
		}
		if (exec(h, v1_indexes, err, errlen) < 0)
			goto fail;
	}
	if (v < 2 && !has_column(h, "principal") &&
	    exec(h, "ALTER TABLE runs ADD COLUMN principal TEXT;"
		    "CREATE INDEX IF NOT EXISTS runs_principal ON runs(principal, timestamp) WHERE principal IS NOT NULL;",
		    err, errlen) < 0)
		goto fail;
	/* 3: a run_cell cell's execution count (Out[n]) */
	if (v < 3 && !has_column(h, "execution_count") && exec(h, "ALTER TABLE runs ADD COLUMN execution_count INTEGER", err, errlen) < 0)
		goto fail;
	/* 4: a judged run's verdict and counts (its tests are in the record) */
	if (v < 4 && !has_column(h, "verdict") &&
	    exec(h, "ALTER TABLE runs ADD COLUMN verdict TEXT;"
		    "ALTER TABLE runs ADD COLUMN tests_passed INTEGER;"
		    "ALTER TABLE runs ADD COLUMN tests_total INTEGER;"
		    "CREATE INDEX IF NOT EXISTS runs_verdict ON runs(language, verdict, duration_ms) WHERE verdict IS NOT NULL;",
		    err, errlen) < 0)
		goto fail;
	if (v < HIST_SCHEMA_VERSION) {
		char sql[64];
		snprintf(sql, sizeof sql, "PRAGMA user_version = %d", HIST_SCHEMA_VERSION);
		if (exec(h, sql, err, errlen) < 0)
			goto fail;
	}
	return exec(h, "COMMIT", err, errlen);
fail:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

static int connect(struct hist *h, bool write, char *err, size_t errlen)
{
	int flags = (write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(h->path, &h->db, flags, NULL) != SQLITE_OK) {
		db_fail(h, err, errlen, "open");
		return -1;
	}
	sqlite3_extended_result_codes(h->db, 1);
	sqlite3_busy_timeout(h->db, HIST_BUSY_MS);
	return 0;
}

static void disconnect(struct hist *h)
{
	sqlite3_finalize(h->insert);
	h->insert = NULL;
	sqlite3_close(h->db);
	h->db = NULL;
}

static int prepare_insert(struct hist *h, char *err, size_t errlen);

struct hist *hist_open(const char *path, enum hist_mode mode, bool sync_full, char *err, size_t errlen)
{
	bool write = mode != HIST_READ;
	struct hist *h = util_xalloc(sizeof *h);
	h->path = util_strdup(path);
	if (write) {
		/* The history holds code: private to its owner from the start
		 * (SQLite's own default would be 0644). */
		char *dir = util_strdup(path), *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			if (util_mkdir_p(dir, 0700) < 0) {
				snprintf(err, errlen, "history %s: create its directory: %s", path, strerror(errno));
				free(dir);
				goto fail;
			}
		}
		free(dir);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			snprintf(err, errlen, "history %s: %s", path, strerror(errno));
			goto fail;
		}
		close(fd);
	} else if (access(path, F_OK) < 0) {
		snprintf(err, errlen, "history %s: %s", path, strerror(errno));
		goto fail;
	}
	if (connect(h, write, err, errlen) < 0)
		goto fail;
	int64_t v = schema_version(h, err, errlen);
	if (v < 0)
		goto fail;
	if (write) {
		/* WAL: readers never block the writer nor it them.  Switching
		 * the mode needs a moment alone with the file; the busy
		 * handler covers it. */
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(h->db, "PRAGMA journal_mode = WAL", -1, &st, NULL) != SQLITE_OK ||
		    sqlite3_step(st) != SQLITE_ROW) {
			sqlite3_finalize(st);
			db_fail(h, err, errlen, "switch to WAL mode");
			goto fail;
		}
		sqlite3_finalize(st);
		if (exec(h, sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", err, errlen) < 0)
			goto fail;
		if ((v != HIST_SCHEMA_VERSION && migrate(h, err, errlen) < 0) ||
		    (mode == HIST_APPEND && prepare_insert(h, err, errlen) < 0))
			goto fail;
	} else if (v < HIST_SCHEMA_VERSION) {
		/* An older schema: migrate it if we may write the file, then
		 * read it like any other. */
		disconnect(h);
		if (connect(h, true, err, errlen) < 0 || migrate(h, err, errlen) < 0) {
			char why[512];
			snprintf(why, sizeof why, "%s", err);
			snprintf(err, errlen, "%s (the file has an older schema and must be upgraded by a writer)", why);
			goto fail;
		}
	}
	return h;
fail:
	hist_close(h);
	return NULL;
}

void hist_close(struct hist *h)
{
	if (!h)
		return;
	if (h->in_tx)
		hist_abort(h);
	disconnect(h);
	free(h->path);
	free(h);
}

/* ---- writing --------------------------------------------------------- */

int hist_begin(struct hist *h, char *err, size_t errlen)
{
	if (h->in_tx)
		return 0;
	if (exec(h, "BEGIN IMMEDIATE", err, errlen) < 0)
		return -1;
	h->in_tx = true;
	return 0;
}

int hist_commit(struct hist *h, char *err, size_t errlen)
{
	if (!h->in_tx)
		return 0;
	if (sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		db_fail(h, err, errlen, "commit");
		hist_abort(h);
		return -1;
	}
	h->in_tx = false;
	return 0;
}

void hist_abort(struct hist *h)
{
	if (h->in_tx)
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	h->in_tx = false;
}

/* The first HIST_SNIPPET_CHARS characters (not bytes) of s. */
static size_t snippet_len(const char *s, size_t n)
{
	size_t chars = 0, i = 0;
	while (i < n && chars < HIST_SNIPPET_CHARS) {
		size_t l = utf8_seq_len((const unsigned char *)s + i, n - i);
		i += l ? l : 1;
		chars++;
	}
	return i;
}

/* sbx_sha256(text): the code's identity, computed where the insert reads
 * the code, so the record is never parsed outside SQLite. */
static void sql_sha256(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	if (argc != 1 || sqlite3_value_type(argv[0]) != SQLITE_TEXT) {
		sqlite3_result_null(ctx);
		return;
	}
	char hex[65];
	sha256_hex(sqlite3_value_text(argv[0]), (size_t)sqlite3_value_bytes(argv[0]), hex);
	sqlite3_result_text(ctx, hex, 64, SQLITE_TRANSIENT);
}

/* The insert reads every column out of the record's JSON text (?1) with
 * SQLite's JSON functions: one parse, in C, and no libjq dump per record.
 * Each field is taken only if it has the expected JSON type, so a hostile
 * record stores NULLs, never garbage.  ?2 is now (Unix seconds), ?3 the
 * code mode (1: full).  ?4-?6 (snippet, hash, code) override what SQLite
 * would extract: its text values end at a NUL, so code holding \u0000 is
 * taken apart in C instead. */
#define J(path) "json_extract(?1, '" path "')"
#define T(path) "json_type(?1, '" path "')"
#define TEXT_OR(path, dflt) "CASE " T(path) " WHEN 'text' THEN " J(path) " ELSE " dflt " END"
#define NUM(path) "CASE WHEN " T(path) " IN ('integer', 'real') THEN " J(path) " END"
#define INT(path) "CASE WHEN " T(path) " IN ('integer', 'real') THEN CAST(" J(path) " AS INTEGER) END"
#define SIZE(field) \
	"CASE WHEN " T("$." field "_bytes") " IN ('integer', 'real') THEN CAST(" J("$." field "_bytes") " AS INTEGER)" \
	" WHEN " T("$." field) " = 'text' THEN length(CAST(" J("$." field) " AS BLOB)) ELSE 0 END"
static const char insert_sql[] =
	"INSERT INTO runs (timestamp, language, code_snippet, status, exit_code, duration_ms, stdout_size,"
	" stderr_size, run_id, signal, cpu_ms, memory_peak_bytes, backend, compile_status, compile_ms,"
	" code_sha256, error, session_id, principal, code, record, execution_count, verdict, tests_passed, tests_total) VALUES ("
	/* timestamp */ "COALESCE(CASE " T("$.started_at") " WHEN 'text' THEN (julianday(" J("$.started_at")
	") - 2440587.5) * 86400.0 END, ?2),"
	/* language */ TEXT_OR("$.language", "''") ","
	/* code_snippet: characters, not bytes */ "COALESCE(?4, CASE " T("$.code") " WHEN 'text' THEN substr("
	J("$.code") ", 1, " STR(HIST_SNIPPET_CHARS) ") ELSE '' END),"
	/* status */ TEXT_OR("$.status", "'unknown'") ","
	/* exit_code */ INT("$.exit_code") ","
	/* duration_ms */ "COALESCE(" NUM("$.duration_ms") ", 0),"
	/* stdout_size, stderr_size */ SIZE("stdout") "," SIZE("stderr") ","
	/* run_id: a string, or a number as text */ "CASE WHEN " T("$.id") " IN ('text', 'integer', 'real') THEN CAST("
	J("$.id") " AS TEXT) END,"
	/* signal */ TEXT_OR("$.signal", "NULL") ","
	/* cpu_ms */ NUM("$.cpu_ms") ","
	/* memory_peak_bytes */ INT("$.memory_peak_bytes") ","
	/* backend */ TEXT_OR("$.backend", "NULL") ","
	/* compile_status */ "CASE " T("$.compile") " WHEN 'object' THEN CASE WHEN " T("$.compile.cached")
	" = 'true' THEN 'cached' ELSE " TEXT_OR("$.compile.status", "'unknown'") " END END,"
	/* compile_ms */ "CASE " T("$.compile") " WHEN 'object' THEN " NUM("$.compile.duration_ms") " END,"
	/* code_sha256 */ "COALESCE(?5, CASE " T("$.code") " WHEN 'text' THEN sbx_sha256(" J("$.code") ") END),"
	/* error */ TEXT_OR("$.error", "NULL") ","
	/* session_id */ "COALESCE(" TEXT_OR("$.session", "NULL") ", " TEXT_OR("$.session_id", "NULL") "),"
	/* principal */ TEXT_OR("$.principal", "NULL") ","
	/* code: kept in full mode only */ "CASE WHEN ?3 THEN COALESCE(?6, " TEXT_OR("$.code", "NULL") ") END,"
	/* record: in preview mode without what the user may not want kept */
	"CASE WHEN ?3 THEN ?1 ELSE json_remove(?1, '$.code', '$.files', '$.stdin', '$.stdout', '$.stderr',"
	" '$.compile.stdout', '$.compile.stderr', '$.artifacts', '$.tests', '$.checker') END,"
	/* execution_count: a cell's */ INT("$.execution_count") ","
	/* verdict, tests_passed, tests_total: a judged run's */ TEXT_OR("$.verdict", "NULL") "," INT("$.tests_passed") ","
	INT("$.tests_total") ")";
#undef J
#undef T
#undef TEXT_OR
#undef NUM
#undef INT
#undef SIZE

/* The insert is compiled when a writer opens the file, not at its first
 * record: in a pipeline sbx-log opens the history while the sandbox runs,
 * and the compile (~1 ms: the statement is large) is then off the path
 * from a result to its logged line. */
static int prepare_insert(struct hist *h, char *err, size_t errlen)
{
	if (sqlite3_create_function(h->db, "sbx_sha256", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_sha256, NULL,
				    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(h->db, insert_sql, -1, SQLITE_PREPARE_PERSISTENT, &h->insert, NULL) != SQLITE_OK)
		return db_fail(h, err, errlen, "prepare the insert");
	return 0;
}

int hist_append(struct hist *h, const char *json, size_t len, enum hist_code code, int64_t *id, char *err,
		size_t errlen)
{
	if (!h->insert && prepare_insert(h, err, errlen) < 0)
		return -1;
	sqlite3_stmt *st = h->insert;
	if (len > INT32_MAX) {
		snprintf(err, errlen, "history %s: a record of %zu bytes is too large to store", h->path, len);
		return -1;
	}
	sqlite3_bind_text(st, 1, json, (int)len, SQLITE_STATIC);
	sqlite3_bind_double(st, 2, util_epoch_ms() / 1000.0);
	sqlite3_bind_int(st, 3, code == HIST_CODE_FULL);
	jv rec = jv_invalid();
	if (memmem(json, len, "\\u0000", 6)) {
		rec = jv_parse_sized(json, (int)len);
		size_t n;
		const char *src = jv_get_kind(rec) == JV_KIND_OBJECT ? rec_str(rec, "code", &n) : NULL;
		if (src) {
			char hex[65];
			sha256_hex(src, n, hex);
			sqlite3_bind_text(st, 4, src, (int)snippet_len(src, n), SQLITE_STATIC);
			sqlite3_bind_text(st, 5, hex, 64, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 6, src, (int)n, SQLITE_STATIC);
		}
	}
	int rc = sqlite3_step(st);
	jv_free(rec);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return db_fail(h, err, errlen, "insert");
	*id = sqlite3_last_insert_rowid(h->db);
	return 0;
}

/* ---- reading --------------------------------------------------------- */

void hist_filter_init(struct hist_filter *f)
{
	*f = (struct hist_filter){ .since = NAN, .until = NAN };
}

/* " WHERE …" from the filters present, parameters numbered from 1; every
 * value is bound by bind_filter in the same order. */
static void where_clause(const struct hist_filter *f, char *buf, size_t len)
{
	int n = 0;
	size_t o = 0;
#define COND(present, sql)                                                                           \
	if (present)                                                                                 \
		o += (size_t)snprintf(buf + o, len - o, "%s" sql " ?%d", n ? " AND " : " WHERE ", n + 1), n++
	buf[0] = 0;
	COND(!isnan(f->since), "timestamp >=");
	COND(!isnan(f->until), "timestamp <");
	COND(f->language, "language =");
	COND(f->status, "status =");
	COND(f->id, "run_id =");
	COND(f->session, "session_id =");
	COND(f->principal, "principal =");
	COND(f->verdict, "verdict =");
#undef COND
	if (f->by_verdict)
		snprintf(buf + o, len - o, "%sverdict IS NOT NULL", n ? " AND " : " WHERE ");
}

static int bind_filter(sqlite3_stmt *st, const struct hist_filter *f)
{
	int i = 0;
	if (!isnan(f->since))
		sqlite3_bind_double(st, ++i, f->since);
	if (!isnan(f->until))
		sqlite3_bind_double(st, ++i, f->until);
	const char *strs[] = { f->language, f->status, f->id, f->session, f->principal, f->verdict };
	for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
		if (strs[k])
			sqlite3_bind_text(st, ++i, strs[k], -1, SQLITE_STATIC);
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
	char where[512], sql[1024];
	where_clause(f, where, sizeof where);
	snprintf(sql, sizeof sql, "SELECT " ROW_COLUMNS "%s FROM runs%s ORDER BY timestamp DESC, id DESC%s",
		 with_record ? ", record, code" : "", where, f->limit > 0 ? " LIMIT ?99" : "");
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_fail(h, err, errlen, "query");
	bind_filter(st, f);
	if (f->limit > 0)
		sqlite3_bind_int64(st, 99, f->limit);
	int64_t n = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		n++;
		if (!fn(row_jv(st, with_record), arg))
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		db_fail(h, err, errlen, "query");
		n = -1;
	}
	sqlite3_finalize(st);
	return n;
}

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
	size_t success, rated; /* successes, of the runs that count for the success rate */
	int64_t emitted;
	const char *key;       /* "status", or "verdict" (by_verdict) */
};

/* The current language is complete: give each of its rows the language's
 * success rate, then add its "all" row, and hand them out. */
static void flush_language(struct stats_state *s, jv bucket, const char *lang)
{
	if (s->all.n == 0 && jv_array_length(jv_copy(s->pending)) == 0)
		return;
	double rate = s->rated ? (double)s->success / (double)s->rated : -1;
	if (s->all.n) {
		qsort(s->all.v, s->all.n, sizeof *s->all.v, cmp_double);
		jv all = jv_object();
		if (jv_is_valid(bucket))
			all = jv_object_set(all, jv_string("bucket"), jv_copy(bucket));
		all = jv_object_set(all, jv_string("language"), jv_string(lang));
		all = jv_object_set(all, jv_string(s->key), jv_string("all"));
		all = summary(all, &s->all);
		s->pending = jv_array_append(s->pending, all);
	}
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
	s->success = s->rated = 0;
}

int64_t hist_stats(struct hist *h, const struct hist_filter *f, int64_t bucket_s, hist_row_fn fn, void *arg,
		   char *err, size_t errlen)
{
	char where[512], sql[1024];
	where_clause(f, where, sizeof where);
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
		return db_fail(h, err, errlen, "statistics");
	bind_filter(st, f);
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
		/* The "all" row's durations are of programs that ran: not of
		 * requests refused, compiles that failed or calls cancelled.  The
		 * success rate leaves out what was never a verdict on the code
		 * (invalid requests, cancelled calls). */
		double d = sqlite3_column_double(st, 3);
		series_add(&cur, d);
		bool ran = strcmp(stt, "invalid") && strcmp(stt, "compile_error") && strcmp(stt, "cancelled");
		if (ran)
			series_add(&s.all, d);
		if (strcmp(stt, "invalid") && strcmp(stt, "cancelled"))
			s.rated++;
		if (!strcmp(stt, "success") || !strcmp(stt, "accepted"))
			s.success++;
	}
	int64_t n = s.emitted;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		n = db_fail(h, err, errlen, "statistics");
	sqlite3_finalize(st);
	jv_free(bucket_jv);
	jv_free(s.pending);
	free(cur.v);
	free(s.all.v);
	free(lang);
	free(status);
	return n;
}

/* ---- retention ------------------------------------------------------- */

int64_t hist_prune(struct hist *h, double before, char *err, size_t errlen)
{
	if (hist_begin(h, err, errlen) < 0)
		return -1;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, "DELETE FROM runs WHERE timestamp < ?1", -1, &st, NULL) != SQLITE_OK) {
		db_fail(h, err, errlen, "prune");
		hist_abort(h);
		return -1;
	}
	sqlite3_bind_double(st, 1, before);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		db_fail(h, err, errlen, "prune");
		hist_abort(h);
		return -1;
	}
	int64_t n = sqlite3_changes64(h->db);
	return hist_commit(h, err, errlen) < 0 ? -1 : n;
}

int hist_vacuum(struct hist *h, char *err, size_t errlen)
{
	if (exec(h, "VACUUM", err, errlen) < 0)
		return -1;
	return exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", err, errlen);
}
