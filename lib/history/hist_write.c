/* hist_write: what changes a history's rows: appending records (the
 * insert that reads every column out of the record's JSON in SQLite, and
 * the SQL functions it calls), transactions, pruning old runs and
 * vacuuming.  Part of hist (hist.h); merging is in hist_merge.c. */
#define _GNU_SOURCE
#include "hist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "hist_int.h"
#include "rec.h"
#include "req.h"
#include "sha256.h"
#include "utf8.h"
#include "util.h"

/* ---- writing --------------------------------------------------------- */

int hist_begin(struct hist *h, char *err, size_t errlen)
{
	if (h->in_tx)
		return 0;
	if (hist_exec(h, "BEGIN IMMEDIATE", err, errlen) < 0)
		return -1;
	h->in_tx = true;
	return 0;
}

int hist_commit(struct hist *h, char *err, size_t errlen)
{
	if (!h->in_tx)
		return 0;
	if (sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		hist_db_fail(h, err, errlen, "commit");
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
#define PREVIEW_RM                                                                                      \
	"json_remove(?1, '$.code', '$.files', '$.stdin', '$.stdout', '$.stderr', '$.compile.stdout',"          \
	" '$.compile.stderr', '$.artifacts', '$.tests', '$.checker')"
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
	/* record: in preview mode without what the user may not want kept;
	 * of a judged run's tests (their inputs and outputs) only each one's
	 * status and connections (its egress), found by --egress-refused */
	"CASE WHEN ?3 THEN ?1 WHEN " T("$.tests") " = 'array' THEN json_set(" PREVIEW_RM ", '$.tests', json((SELECT"
	" json_group_array(json_object('status', value ->> '$.status', 'egress', value -> '$.egress'))"
	" FROM json_each(?1, '$.tests')))) ELSE " PREVIEW_RM " END,"
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
int hist_prepare_insert(struct hist *h, char *err, size_t errlen)
{
	if (sqlite3_create_function(h->db, "sbx_sha256", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_sha256, NULL,
				    NULL) != SQLITE_OK ||
	    sqlite3_create_function(h->db, "sbx_nat", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_nat, NULL, NULL) !=
		    SQLITE_OK ||
	    sqlite3_create_function(h->db, "sbx_nat", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_nat, NULL, NULL) !=
		    SQLITE_OK ||
	    sqlite3_prepare_v3(h->db, insert_sql, -1, SQLITE_PREPARE_PERSISTENT, &h->insert, NULL) != SQLITE_OK)
		return hist_db_fail(h, err, errlen, "prepare the insert");
	return 0;
}

int hist_append(struct hist *h, const char *json, size_t len, enum hist_code code, int64_t *id, char *err,
		size_t errlen)
{
	if (!h->insert && hist_prepare_insert(h, err, errlen) < 0)
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
		const char *src = jv_get_kind(rec) == JV_KIND_OBJECT ? rec_str(rec, REQ_KEY(code), &n) : NULL;
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
		return hist_db_fail(h, err, errlen, "insert");
	*id = sqlite3_last_insert_rowid(h->db);
	return 0;
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
		hist_db_fail(h, err, errlen, "prune");
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
		hist_db_fail(h, err, errlen, "prune");
		hist_abort(h);
		return -1;
	}
	sqlite3_bind_double(st, 1, before);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		hist_db_fail(h, err, errlen, "prune");
		hist_abort(h);
		return -1;
	}
	n = sqlite3_changes64(h->db);
	return hist_commit(h, err, errlen) < 0 ? -1 : n;
}

int hist_vacuum(struct hist *h, char *err, size_t errlen)
{
	if (hist_exec(h, "VACUUM", err, errlen) < 0)
		return -1;
	return hist_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", err, errlen);
}

/* ---- events ------------------------------------------------------------ */

static bool hex_of(const char *s, size_t n)
{
	if (!s || strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int hist_event(struct hist *h, jv event, char *err, size_t errlen)
{
#define EVENT_NAME_(name, type, json) ", " #name
#define EVENT_VALUE_(name, type, json) \
	", CASE WHEN json_type(?2, '$." #name "') IN (" json ") THEN json_extract(?2, '$." #name "') END"
	static const char sql[] = "INSERT INTO session_events (timestamp" HIST_EVENT_COLUMNS(EVENT_NAME_)
				  ") VALUES (?1" HIST_EVENT_COLUMNS(EVENT_VALUE_) ")";
#undef EVENT_NAME_
#undef EVENT_VALUE_
#define KIND_(k) !strcmp(kind, #k) ||
	const char *kind = jv_get_kind(event) == JV_KIND_OBJECT ? rec_str(event, "kind", NULL) : NULL;
	bool known = kind && (HIST_EVENT_KINDS(KIND_) false);
#undef KIND_
	if (!known || !hex_of(rec_str(event, "session_id", NULL), 32) || !hex_of(rec_str(event, "checkpoint_id", NULL), 16)) {
		jv_free(event);
		snprintf(err, errlen, "an event is an object with a known \"kind\", a \"session_id\" and a \"checkpoint_id\"");
		return -1;
	}
	double ts = util_epoch_ms() / 1000.0, given;
	if (rec_num(event, "timestamp", &given) && given > 0 && given < 1e11)
		ts = given;
	jv text = jv_dump_string(event, 0);
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_double(st, 1, ts);
		sqlite3_bind_text(st, 2, jv_string_value(text), -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	jv_free(text);
	return rc == SQLITE_DONE ? 0 : hist_db_fail(h, err, errlen, "log an event");
}
