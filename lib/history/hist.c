#define _GNU_SOURCE
#include "hist.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "rec.h"
#include "sha256.h"
#include "status.h"
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
	bool peek;        /* HIST_PEEK */
	double last_ts;   /* the last row hist_query handed out: a page's cursor */
	int64_t last_id;
	double deadline;  /* util_now_ms past which queries are interrupted, or 0 */
};

/* A history file's identity (meta's uuid): 32 hex digits. */
#define UUID_HEX 32

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

/* Version 5: where a sharded batch ran a row (host, shard index, attempt)
 * and, for a row merged in from another history, that history's uuid and
 * the row's id there. */
static const char *const v5_columns[] = {
	"host TEXT", "shard INTEGER", "attempt INTEGER", "origin_db TEXT", "origin_id INTEGER", NULL,
};

/* Unique: a merge's INSERT OR IGNORE on it is what makes merging
 * idempotent.  Partial: rows logged here (origin NULL) are not in it at
 * all, so sbx-log's appends pay nothing for it (a full index would cost
 * them ~5%, even with NULL keys filed at its end). */
static const char v5_schema[] =
	"CREATE UNIQUE INDEX IF NOT EXISTS runs_origin ON runs(origin_db, origin_id) WHERE origin_db IS NOT NULL;"
	"CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;";

/* The row as readers see it, in this order (csv and table columns too). */
#define ROW_COLUMNS                                                                                       \
	"id, timestamp, run_id, language, status, exit_code, signal, duration_ms, cpu_ms, memory_peak_bytes, " \
	"stdout_size, stderr_size, backend, compile_status, compile_ms, code_sha256, code_snippet, error, "   \
	"session_id, execution_count, verdict, tests_passed, tests_total, host, shard, attempt"
static const char *const row_keys[] = {
	"history_id", "timestamp", "id", "language", "status", "exit_code", "signal", "duration_ms", "cpu_ms",
	"memory_peak_bytes", "stdout_size", "stderr_size", "backend", "compile_status", "compile_ms",
	"code_sha256", "code_snippet", "error", "session_id", "execution_count", "verdict", "tests_passed", "tests_total",
	"host", "shard", "attempt", NULL,
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

/* Add the columns of a NULL-ended list that the table lacks: a file may
 * have been given some of them by hand or by a foreign writer. */
static int add_columns(struct hist *h, const char *const *cols, char *err, size_t errlen)
{
	for (int i = 0; cols[i]; i++) {
		char name[32];
		sscanf(cols[i], "%31s", name);
		if (has_column(h, name))
			continue;
		char *sql = util_fmt("ALTER TABLE runs ADD COLUMN %s", cols[i]);
		int rc = exec(h, sql, err, errlen);
		free(sql);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static bool uuid_valid(const char *s)
{
	if (!s || strlen(s) != UUID_HEX)
		return false;
	for (int i = 0; i < UUID_HEX; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

/* The file's identity, made once: kept if a uuid is already there (a file
 * whose user_version was set back keeps who it is). */
static int make_uuid(struct hist *h, char *err, size_t errlen)
{
	unsigned char b[UUID_HEX / 2];
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t n = getrandom(b + got, sizeof b - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "history %s: getrandom: %s", h->path, strerror(errno));
			return -1;
		}
		got += (size_t)n;
	}
	char hex[UUID_HEX + 1];
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(hex + 2 * i, 3, "%02x", b[i]);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, "INSERT OR IGNORE INTO meta (key, value) VALUES ('uuid', ?1)", -1, &st, NULL) != SQLITE_OK)
		return db_fail(h, err, errlen, "make the uuid");
	sqlite3_bind_text(st, 1, hex, UUID_HEX, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db_fail(h, err, errlen, "make the uuid");
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
		if (exec(h, seed_table, err, errlen) < 0 || add_columns(h, v1_columns, err, errlen) < 0 ||
		    exec(h, v1_indexes, err, errlen) < 0)
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
	/* 5: shards' columns, merges' origin, the file's uuid */
	if (v < 5 && (add_columns(h, v5_columns, err, errlen) < 0 || exec(h, v5_schema, err, errlen) < 0 ||
		      make_uuid(h, err, errlen) < 0))
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
	sqlite3_busy_timeout(h->db, h->peek ? 1000 : HIST_BUSY_MS);
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
	bool write = mode != HIST_READ && mode != HIST_PEEK;
	struct hist *h = util_xalloc(sizeof *h);
	memset(h, 0, sizeof *h);
	h->path = util_strdup(path);
	h->peek = mode == HIST_PEEK;
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
	} else if (v < HIST_SCHEMA_VERSION && mode == HIST_PEEK) {
		snprintf(err, errlen, "history %s: schema version %lld is older than this sbx's (%d): open it once with "
			 "sbx-log or sbx-history to upgrade it", h->path, (long long)v, HIST_SCHEMA_VERSION);
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

static int past_deadline(void *arg)
{
	const struct hist *h = arg;
	return h->deadline > 0 && util_now_ms() > h->deadline;
}

void hist_deadline(struct hist *h, double ms)
{
	h->deadline = util_now_ms() + ms;
	sqlite3_progress_handler(h->db, 10000, past_deadline, h);
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

/* A JSON text's non-negative integer, or -1: digits only, so that true,
 * 1.0, 1e2, "1" and -1 are none, and within int64. */
static int64_t json_nat(sqlite3_value *v)
{
	const char *s = sqlite3_value_type(v) == SQLITE_TEXT ? (const char *)sqlite3_value_text(v) : NULL;
	int64_t n;
	return s && *s >= '0' && *s <= '9' && util_parse_i64(s, 0, INT64_MAX, &n) ? n : -1;
}

/* sbx_nat(json [, below]): the JSON text (of ->) as a non-negative
 * integer, else NULL; with `below` a valid one too, also NULL unless less
 * than it (a shard's index and its count).  One lookup per field: a
 * json_type for the type and a json_extract for the value would be two,
 * each as dear as a column (json_extract alone cannot tell true from 1). */
static void sql_nat(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int64_t n = json_nat(argv[0]), below = argc > 1 ? json_nat(argv[1]) : -1;
	if (n < 0 || (below >= 0 && n >= below))
		sqlite3_result_null(ctx);
	else
		sqlite3_result_int64(ctx, n);
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
	" code_sha256, error, session_id, principal, code, record, execution_count, verdict, tests_passed, tests_total,"
	" host, shard, attempt) VALUES ("
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
	INT("$.tests_total") ","
	/* host, shard, attempt: a batch runner's "shard": {"index", "of",
	 * "attempt", "host"}; an index at or past a valid "of" is no index */
	TEXT_OR("$.shard.host", "NULL") ", sbx_nat(?1 -> '$.shard.index', ?1 -> '$.shard.of'), sbx_nat(?1 -> '$.shard.attempt'))";
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
	    sqlite3_create_function(h->db, "sbx_nat", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_nat, NULL, NULL) !=
		    SQLITE_OK ||
	    sqlite3_create_function(h->db, "sbx_nat", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_nat, NULL, NULL) !=
		    SQLITE_OK ||
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
	/* language, status and verdict: one or more, a comma-separated list
	 * bound as a JSON array (bind_filter) */
#define COND_IN(present, column)                                      \
	COND(present, column " IN (SELECT value FROM json_each(");    \
	if (present)                                                  \
	o += (size_t)snprintf(buf + o, len - o, "))")
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
		o += (size_t)snprintf(buf + o, len - o, " || '%%' ESCAPE '\\'");
	COND(f->history_id > 0, "id =");
	COND(f->after_id > 0, "id >");
#undef COND
	if (f->before_id > 0) {
		/* Keyset paging: the page after (before_ts, before_id), which the
		 * (timestamp) index and the rowid serve without counting rows
		 * (OFFSET would read every row it skips). */
		o += (size_t)snprintf(buf + o, len - o, "%stimestamp <= ?%d AND (timestamp < ?%d OR id < ?%d)",
				      n ? " AND " : " WHERE ", n + 1, n + 1, n + 2);
		n += 2;
	}
	if (f->by_verdict)
		snprintf(buf + o, len - o, "%sverdict IS NOT NULL", n ? " AND " : " WHERE ");
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

static int bind_filter(sqlite3_stmt *st, const struct hist_filter *f)
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
	h->last_id = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		n++;
		h->last_id = sqlite3_column_int64(st, 0);
		h->last_ts = sqlite3_column_double(st, 1);
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

/* "SELECT cols FROM runs WHERE <f's filters> AND extra tail", prepared,
 * the filters bound; NULL with err naming what. */
static sqlite3_stmt *prepare_filtered(struct hist *h, const struct hist_filter *f, const char *cols, const char *extra,
				      const char *tail, const char *what, char *err, size_t errlen)
{
	char where[512], sql[1024];
	where_clause(f, where, sizeof where);
	snprintf(sql, sizeof sql, "SELECT %s FROM runs%s%s%s %s", cols, where, where[0] ? " AND " : " WHERE ", extra, tail);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_fail(h, err, errlen, what);
		return NULL;
	}
	bind_filter(st, f);
	return st;
}

int64_t hist_sessions(struct hist *h, const struct hist_filter *f, int64_t limit, hist_row_fn fn, void *arg,
		      char *err, size_t errlen)
{
	sqlite3_stmt *st = prepare_filtered(h, f, "session_id, group_concat(DISTINCT language), count(*), max(timestamp)",
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
		n++;
		if (!fn(row, arg))
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		db_fail(h, err, errlen, "sessions");
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
	sqlite3_stmt *st = prepare_filtered(h, f, "CAST(timestamp / ?98 AS INTEGER) * ?98, duration_ms",
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
		db_fail(h, err, errlen, "series");
		n = -1;
	}
	sqlite3_finalize(st);
	return n;
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

/* One count of runs (before: NAN for all of them), or -1. */
static int64_t count_runs(struct hist *h, double before)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(h->db, isnan(before) ? "SELECT count(*) FROM runs" : "SELECT count(*) FROM runs WHERE timestamp < ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (!isnan(before))
		sqlite3_bind_double(st, 1, before);
	int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_finalize(st);
	return n;
}

int64_t hist_prune(struct hist *h, double before, bool all, char *err, size_t errlen)
{
	if (hist_begin(h, err, errlen) < 0)
		return -1;
	int64_t n = count_runs(h, before), total = n < 0 ? -1 : count_runs(h, NAN);
	if (n < 0 || total < 0) {
		db_fail(h, err, errlen, "prune");
		hist_abort(h);
		return -1;
	}
	if (n == total && n > 0 && !all) {
		char when[40];
		util_iso8601(before * 1000.0, when, sizeof when);
		snprintf(err, errlen,
			 "not pruned: every run in %s (%lld) is older than %s; add --force if that is meant", h->path,
			 (long long)n, when);
		hist_abort(h);
		return -1;
	}
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
	n = sqlite3_changes64(h->db);
	return hist_commit(h, err, errlen) < 0 ? -1 : n;
}

int hist_vacuum(struct hist *h, char *err, size_t errlen)
{
	if (exec(h, "VACUUM", err, errlen) < 0)
		return -1;
	return exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", err, errlen);
}

/* ---- merging --------------------------------------------------------- */

/* The file's uuid into out, or -1 with err naming path. */
static int read_uuid(sqlite3 *db, const char *path, char out[UUID_HEX + 1], char *err, size_t errlen)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'uuid'", -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "history %s: is not an sbx history (no meta table: %s)", path, sqlite3_errmsg(db));
		return -1;
	}
	int rc = sqlite3_step(st);
	const char *v = rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT ? (const char *)sqlite3_column_text(st, 0) : NULL;
	bool ok = uuid_valid(v);
	if (ok)
		memcpy(out, v, UUID_HEX + 1);
	else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		snprintf(err, errlen, "history %s: read its uuid: %s", path, sqlite3_errmsg(db));
	else
		snprintf(err, errlen, "history %s: is not an sbx history (no uuid of %d hex digits in its meta table)", path, UUID_HEX);
	sqlite3_finalize(st);
	return ok ? 0 : -1;
}

/* The columns a merge copies, besides the key (origin_db, origin_id) that
 * comes first; the source's id is not one of them, the target numbers its
 * rows itself. */
#define MERGE_COLUMNS                                                                                         \
	"timestamp, language, code_snippet, status, exit_code, duration_ms, stdout_size, stderr_size, run_id, " \
	"signal, cpu_ms, memory_peak_bytes, backend, compile_status, compile_ms, code_sha256, error, "            \
	"session_id, principal, code, record, execution_count, verdict, tests_passed, tests_total, host, shard, " \
	"attempt"

/* The source is read, not trusted: each value is taken only if it has the
 * type this sbx writes (else NULL, or the default sbx-log stores for a
 * NOT NULL column), so a hand-made or damaged file can neither break the
 * target's constraints nor put a text where readers expect a number.
 * A timestamp must be one sbx-log could have written (started_at, years
 * 0000 to 9999), or readers could not format it.  ?1 is the source's
 * uuid, ?2 now.  A row's key is its origin when that is well formed, else
 * its own id in the source: a row with a malformed origin is the source's
 * own, and stays one key however often it is merged. */
#define TS_MIN "-62167219200"
#define TS_MAX "253402300800"
#define TXT(c) "CASE WHEN typeof(" c ") = 'text' THEN " c " END"
#define NUMV(c) "CASE WHEN typeof(" c ") IN ('integer', 'real') THEN " c " END"
#define INTV(c) "CASE WHEN typeof(" c ") = 'integer' THEN " c " END"
#define NATV(c) "CASE WHEN typeof(" c ") = 'integer' AND " c " >= 0 THEN " c " END"
#define ORIGIN_OK                                                                                              \
	"(typeof(origin_db) = 'text' AND length(origin_db) = " STR(UUID_HEX) " AND origin_db NOT GLOB '*[^0-9a-f]*'" \
	" AND typeof(origin_id) = 'integer')"
static const char merge_select[] =
	"SELECT CASE WHEN " ORIGIN_OK " THEN origin_db ELSE ?1 END,"
	" CASE WHEN " ORIGIN_OK " THEN origin_id WHEN typeof(id) = 'integer' THEN id END,"
	" COALESCE(CASE WHEN typeof(timestamp) IN ('integer', 'real') AND timestamp BETWEEN " TS_MIN " AND " TS_MAX
	" THEN timestamp END, ?2), COALESCE(" TXT("language") ", ''), COALESCE(" TXT("code_snippet") ", ''),"
	" COALESCE(" TXT("status") ", 'unknown'), " INTV("exit_code") ", COALESCE(" NUMV("duration_ms") ", 0),"
	" COALESCE(" NATV("stdout_size") ", 0), COALESCE(" NATV("stderr_size") ", 0), " TXT("run_id") ", "
	TXT("signal") ", " NUMV("cpu_ms") ", " INTV("memory_peak_bytes") ", " TXT("backend") ", " TXT("compile_status") ", "
	NUMV("compile_ms") ", " TXT("code_sha256") ", " TXT("error") ", " TXT("session_id") ", " TXT("principal") ", "
	TXT("code") ", CASE WHEN typeof(record) = 'text' AND json_valid(record) THEN record END, "
	INTV("execution_count") ", " TXT("verdict") ", " INTV("tests_passed") ", " INTV("tests_total") ", "
	TXT("host") ", " NATV("shard") ", " NATV("attempt") " FROM runs ORDER BY id";
/* Positions in merge_select (keep them in step) of the values that tell
 * one run from another; not the timestamp, which an invalid one makes the
 * time of merging, different each time. */
enum { MS_KEY_DB = 0, MS_KEY_ID = 1, MS_SNIPPET = 4, MS_STATUS = 5, MS_DURATION = 7, MS_RUN_ID = 10, MS_RECORD = 22 };
/* A key already in the target but for another run: two files with one
 * uuid (a history copied, a machine image with one baked in).  Ignoring
 * such rows would lose runs without a word. */
static const char merge_clash[] =
	"SELECT 1 FROM runs WHERE origin_db = ?1 AND origin_id = ?2 AND NOT (code_snippet IS ?3 AND status IS ?4"
	" AND duration_ms IS ?5 AND run_id IS ?6 AND record IS ?7)";
static const int merge_clash_cols[] = { MS_KEY_DB, MS_KEY_ID, MS_SNIPPET, MS_STATUS, MS_DURATION, MS_RUN_ID, MS_RECORD };
#undef TS_MIN
#undef TS_MAX
#undef TXT
#undef NUMV
#undef INTV
#undef NATV
#undef ORIGIN_OK

/* A source is evidence from another machine, and may be an attacker's:
 * only ordinary tables are read.  runs and meta must be tables (a view
 * can recurse forever), with no generated column (16 KiB of schema can
 * compute gigabytes into the target), and the file may hold no virtual
 * table or trigger.  Checked before any row is read. */
static bool merge_schema_ok(sqlite3 *db, const char *src, char *err, size_t errlen)
{
	static const char q[] =
		"SELECT name, CASE WHEN type IN ('view', 'trigger') THEN 'a ' || type"
		" WHEN upper(substr(ltrim(sql), 1, 14)) = 'CREATE VIRTUAL' THEN 'a virtual table'"
		" WHEN type = 'table' AND name IN ('runs', 'meta') THEN (SELECT 'a table with the generated column ' || x.name"
		"   FROM pragma_table_xinfo(m.name) AS x WHERE x.hidden != 0 LIMIT 1) END"
		" FROM sqlite_master AS m WHERE type IN ('table', 'view', 'trigger')";
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *what = (const char *)sqlite3_column_text(st, 1);
		if (what) {
			snprintf(err, errlen, "history %s: %s is %s: a history holds plain tables only (a hostile file?)",
				 src, (const char *)sqlite3_column_text(st, 0), what);
			sqlite3_finalize(st);
			return false;
		}
		rc = SQLITE_OK;
	}
	if (rc != SQLITE_DONE)
		snprintf(err, errlen, "history %s: %s", src, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE;
}

/* The merge's budget of time: a minute, and a second more for every
 * 10 MiB of the source. */
static int merge_past_deadline(void *deadline)
{
	return util_now_ms() > *(double *)deadline;
}

/* Open the source read-only and check it is a version 5 history other
 * than the target: its uuid into src_uuid. */
static sqlite3 *merge_source(struct hist *h, const char *src, const char *uuid, char src_uuid[UUID_HEX + 1],
			     char *err, size_t errlen)
{
	struct stat ss, ts;
	if (!*src) {
		snprintf(err, errlen, "history \"\": the path is empty");
		return NULL;
	}
	if (stat(src, &ss) < 0) {
		snprintf(err, errlen, "history %s: %s", src, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(ss.st_mode)) {
		snprintf(err, errlen, "history %s: is not a regular file", src);
		return NULL;
	}
	if (stat(h->path, &ts) == 0 && ts.st_dev == ss.st_dev && ts.st_ino == ss.st_ino) {
		snprintf(err, errlen, "history %s: is the target history itself", src);
		return NULL;
	}
	sqlite3 *db = NULL;
	/* Read-only, and never migrated: a source is evidence from another
	 * machine, and may sit on read-only media. */
	if (sqlite3_open_v2(src, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "history %s: open: %s", src, db ? sqlite3_errmsg(db) : "out of memory");
		goto fail;
	}
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, HIST_BUSY_MS);
	/* Functions in its schema are not trusted, nor may it be written. */
	sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	bool runs = false;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (v >= 0) {
		int rc = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'", -1, &st, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(st);
		runs = rc == SQLITE_ROW;
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			v = -1;
		sqlite3_finalize(st);
	}
	if (v < 0) {
		snprintf(err, errlen, "history %s: %s", src, sqlite3_errmsg(db));
		goto fail;
	}
	if (!runs) {
		snprintf(err, errlen, "history %s: is not an sbx history (no runs table)", src);
		goto fail;
	}
	if (!merge_schema_ok(db, src, err, errlen))
		goto fail;
	if (v > HIST_SCHEMA_VERSION) {
		snprintf(err, errlen, "history %s: schema version %lld is newer than this sbx knows (%d); upgrade sbx", src,
			 (long long)v, HIST_SCHEMA_VERSION);
		goto fail;
	}
	if (v < 5) {
		snprintf(err, errlen,
			 "history %s: schema version %lld has no uuid to merge by; upgrade it in place first"
			 " (sbx-log -d %s < /dev/null), then merge it",
			 src, (long long)v, src);
		goto fail;
	}
	if (read_uuid(db, src, src_uuid, err, errlen) < 0)
		goto fail;
	if (!strcmp(src_uuid, uuid)) {
		/* A copy of the target: its own rows are already here.  Shards
		 * made by copying one history file share its uuid too, and
		 * would collapse onto each other's keys: refuse, loudly. */
		snprintf(err, errlen, "history %s: has the target's own uuid %s (a copy of the target?)", src, uuid);
		goto fail;
	}
	return db;
fail:
	sqlite3_close(db);
	return NULL;
}

int hist_merge(struct hist *h, const char *src, int64_t *rows, int64_t *added, char *err, size_t errlen)
{
	*rows = *added = 0;
	char uuid[UUID_HEX + 1], src_uuid[UUID_HEX + 1];
	if (read_uuid(h->db, h->path, uuid, err, errlen) < 0)
		return -1;
	sqlite3 *db = merge_source(h, src, uuid, src_uuid, err, errlen);
	if (!db)
		return -1;
	sqlite3_stmt *sel = NULL, *ins = NULL, *clash = NULL;
	char *sql = NULL;
	int ret = -1;
	if (sqlite3_prepare_v2(db, merge_select, -1, &sel, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "history %s: is not an sbx history (%s)", src, sqlite3_errmsg(db));
		goto out;
	}
	int ncol = sqlite3_column_count(sel);
	char *marks = util_xalloc((size_t)ncol * 2 + 1), *m = marks;
	for (int i = 0; i < ncol; i++)
		m += sprintf(m, i ? ",?" : "?");
	sql = util_fmt("INSERT OR IGNORE INTO runs (origin_db, origin_id, " MERGE_COLUMNS ") VALUES (%s)", marks);
	free(marks);
	if (sqlite3_prepare_v2(h->db, sql, -1, &ins, NULL) != SQLITE_OK || sqlite3_bind_parameter_count(ins) != ncol ||
	    sqlite3_prepare_v2(h->db, merge_clash, -1, &clash, NULL) != SQLITE_OK) {
		db_fail(h, err, errlen, "prepare the merge");
		goto out;
	}
	sqlite3_bind_text(sel, 1, src_uuid, UUID_HEX, SQLITE_STATIC);
	sqlite3_bind_double(sel, 2, util_epoch_ms() / 1000.0);
	/* Budgets: the text it yields is no more than its file holds (twice
	 * over, and a MiB for the columns' defaults), and it ends in time. */
	struct stat ss = { 0 };
	double budget = stat(src, &ss) == 0 ? 2.0 * (double)ss.st_size + (1 << 20) : 0;
	double deadline = util_now_ms() + 60e3 + (double)ss.st_size / (10 << 20) * 1e3, read = 0;
	sqlite3_progress_handler(db, 10000, merge_past_deadline, &deadline);
	if (hist_begin(h, err, errlen) < 0)
		goto out;
	int rc;
	while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
		++*rows;
		/* Text and blobs only (SQLite stores them as they are, so the
		 * file holds every byte of them; the type first: asking a
		 * number for its bytes would convert it). */
		for (int i = 0; i < ncol; i++) {
			int t = sqlite3_column_type(sel, i);
			if (t == SQLITE_TEXT || t == SQLITE_BLOB)
				read += sqlite3_column_bytes(sel, i);
		}
		if (read > budget) {
			snprintf(err, errlen, "history %s: yields more than its %lld bytes can hold (a hostile file?)", src,
				 (long long)ss.st_size);
			hist_abort(h);
			goto out;
		}
		/* No key (a source id that is no integer), or a row that began
		 * here and comes back through another history: nothing to add. */
		const char *key = (const char *)sqlite3_column_text(sel, 0);
		if (sqlite3_column_type(sel, 1) != SQLITE_INTEGER || !key || !strcmp(key, uuid))
			continue;
		for (int i = 0; i < ncol; i++)
			sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i));
		int irc = sqlite3_step(ins);
		sqlite3_reset(ins);
		if (irc != SQLITE_DONE) {
			db_fail(h, err, errlen, "merge");
			hist_abort(h);
			goto out;
		}
		if (sqlite3_changes64(h->db)) {
			++*added;
			continue;
		}
		for (size_t i = 0; i < sizeof merge_clash_cols / sizeof *merge_clash_cols; i++)
			sqlite3_bind_value(clash, (int)i + 1, sqlite3_column_value(sel, merge_clash_cols[i]));
		int crc = sqlite3_step(clash);
		sqlite3_reset(clash);
		if (crc != SQLITE_DONE) {
			if (crc == SQLITE_ROW)
				snprintf(err, errlen,
					 "history %s: its run keyed %s/%lld is not the run merged before under that key"
					 " (two history files with one uuid: was one copied from the other?)",
					 src, key, (long long)sqlite3_column_int64(sel, MS_KEY_ID));
			else
				db_fail(h, err, errlen, "merge");
			hist_abort(h);
			goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		if (rc == SQLITE_INTERRUPT)
			snprintf(err, errlen, "history %s: reading it took longer than %.0f s (a hostile file?)", src,
				 60 + (double)ss.st_size / (10 << 20));
		else
			snprintf(err, errlen, "history %s: read: %s", src, sqlite3_errmsg(db));
		hist_abort(h);
		goto out;
	}
	ret = hist_commit(h, err, errlen);
out:
	if (ret < 0)
		*rows = *added = 0;
	free(sql);
	sqlite3_finalize(clash);
	sqlite3_finalize(ins);
	sqlite3_finalize(sel);
	sqlite3_close(db);
	return ret;
}
