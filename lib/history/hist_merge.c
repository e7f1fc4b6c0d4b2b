/* hist_merge: merging another history file's runs into this one, keyed
 * by where each run began (its origin, or the source's uuid and id), so
 * merging again adds nothing; the source is read-only, never migrated,
 * and treated as possibly hostile.  Part of hist (hist.h). */
#define _GNU_SOURCE
#include "hist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "hist_int.h"
#include "util.h"

/* ---- merging --------------------------------------------------------- */

static bool uuid_valid(const char *s)
{
	if (!s || strlen(s) != UUID_HEX)
		return false;
	for (int i = 0; i < UUID_HEX; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

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
		hist_db_fail(h, err, errlen, "prepare the merge");
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
			hist_db_fail(h, err, errlen, "merge");
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
				hist_db_fail(h, err, errlen, "merge");
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
