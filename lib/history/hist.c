/* hist: opening and closing a history file, its schema and the
 * migrations that bring an older one up to date, the file's identity
 * (meta's uuid), and the helpers every part uses.  Writing is in
 * hist_write.c, reading in hist_query.c, statistics in hist_stats.c,
 * merging in hist_merge.c; hist_int.h is what they share. */
#define _GNU_SOURCE
#include "hist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hist_int.h"
#include "util.h"

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

/* Version 6: the events of sessions' checkpoints (hist.h), and what
 * finds a session's newest restore or fork before a run. */
#define EVENT_COLUMN_(name, type, json) ", " #name " " type
static const char v6_schema[] =
	"CREATE TABLE IF NOT EXISTS session_events (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp REAL NOT NULL"
	HIST_EVENT_COLUMNS(EVENT_COLUMN_) ");"
	"CREATE INDEX IF NOT EXISTS session_events_session ON session_events(session_id, timestamp);"
	"CREATE INDEX IF NOT EXISTS session_events_time ON session_events(timestamp);";
#undef EVENT_COLUMN_

int hist_db_fail(struct hist *h, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "history %s: %s: %s", h->path, what, sqlite3_errmsg(h->db));
	return -1;
}

int hist_exec(struct hist *h, const char *sql, char *err, size_t errlen)
{
	if (sqlite3_exec(h->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return hist_db_fail(h, err, errlen, sql);
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
		return hist_db_fail(h, err, errlen, "read the schema version");
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
		int rc = hist_exec(h, sql, err, errlen);
		free(sql);
		if (rc < 0)
			return -1;
	}
	return 0;
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
		return hist_db_fail(h, err, errlen, "make the uuid");
	sqlite3_bind_text(st, 1, hex, UUID_HEX, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : hist_db_fail(h, err, errlen, "make the uuid");
}

static int migrate(struct hist *h, char *err, size_t errlen)
{
	if (hist_exec(h, "BEGIN IMMEDIATE", err, errlen) < 0)
		return -1;
	int64_t v = schema_version(h, err, errlen);
	if (v < 0)
		goto fail;
	if (v < 1) {
		/* Version 0 is either nothing or the seed's table. */
		if (hist_exec(h, seed_table, err, errlen) < 0 || add_columns(h, v1_columns, err, errlen) < 0 ||
		    hist_exec(h, v1_indexes, err, errlen) < 0)
			goto fail;
	}
	if (v < 2 && !has_column(h, "principal") &&
	    hist_exec(h, "ALTER TABLE runs ADD COLUMN principal TEXT;"
		    "CREATE INDEX IF NOT EXISTS runs_principal ON runs(principal, timestamp) WHERE principal IS NOT NULL;",
		    err, errlen) < 0)
		goto fail;
	/* 3: a run_cell cell's execution count (Out[n]) */
	if (v < 3 && !has_column(h, "execution_count") && hist_exec(h, "ALTER TABLE runs ADD COLUMN execution_count INTEGER", err, errlen) < 0)
		goto fail;
	/* 4: a judged run's verdict and counts (its tests are in the record) */
	if (v < 4 && !has_column(h, "verdict") &&
	    hist_exec(h, "ALTER TABLE runs ADD COLUMN verdict TEXT;"
		    "ALTER TABLE runs ADD COLUMN tests_passed INTEGER;"
		    "ALTER TABLE runs ADD COLUMN tests_total INTEGER;"
		    "CREATE INDEX IF NOT EXISTS runs_verdict ON runs(language, verdict, duration_ms) WHERE verdict IS NOT NULL;",
		    err, errlen) < 0)
		goto fail;
	/* 5: shards' columns, merges' origin, the file's uuid */
	if (v < 5 && (add_columns(h, v5_columns, err, errlen) < 0 || hist_exec(h, v5_schema, err, errlen) < 0 ||
		      make_uuid(h, err, errlen) < 0))
		goto fail;
	if (v < 6 && hist_exec(h, v6_schema, err, errlen) < 0)
		goto fail;
	if (v < HIST_SCHEMA_VERSION) {
		char sql[64];
		snprintf(sql, sizeof sql, "PRAGMA user_version = %d", HIST_SCHEMA_VERSION);
		if (hist_exec(h, sql, err, errlen) < 0)
			goto fail;
	}
	return hist_exec(h, "COMMIT", err, errlen);
fail:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

static int connect(struct hist *h, bool write, char *err, size_t errlen)
{
	int flags = (write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(h->path, &h->db, flags, NULL) != SQLITE_OK) {
		hist_db_fail(h, err, errlen, "open");
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
		int e = errno;
		snprintf(err, errlen, "history %s: %s", path, strerror(e));
		hist_close(h);
		errno = e;
		return NULL;
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
			hist_db_fail(h, err, errlen, "switch to WAL mode");
			goto fail;
		}
		sqlite3_finalize(st);
		if (hist_exec(h, sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", err, errlen) < 0)
			goto fail;
		if ((v != HIST_SCHEMA_VERSION && migrate(h, err, errlen) < 0) ||
		    (mode == HIST_APPEND && hist_prepare_insert(h, err, errlen) < 0))
			goto fail;
	} else if (v == 0 && mode == HIST_PEEK) {
		/* A file with no schema yet: its writer (sbx-log, started by a
		 * first run) made it a moment ago and is about to fill it.
		 * As good as absent. */
		snprintf(err, errlen, "history %s: nothing logged yet", h->path);
		hist_close(h);
		errno = ENOENT;
		return NULL;
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
