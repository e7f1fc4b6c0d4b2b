/* hist: the execution history, one SQLite file.
 *
 * Writers (sbx-log) append result records; readers (sbx-history, sbx-mcp's
 * get_execution_history) query them.  The file is opened in WAL mode, so
 * readers never block writers; writers take the write lock with BEGIN
 * IMMEDIATE and wait for it (busy_timeout), so concurrent writers queue
 * instead of failing with "database is locked".  Schema changes are
 * migrations keyed on PRAGMA user_version: a database made by an older sbx,
 * or by the seed project (its `runs` table, version 0), is brought up to
 * date on first open for writing.  From version 5 each file has an identity,
 * meta's `uuid` (32 random hex digits, made when the file is created or
 * migrated), by which merges key the rows they copy.
 *
 * A struct hist owns its connection and prepared statements; nothing here
 * forks, and no caller may fork a sandbox while a struct hist is open.
 * Errors are returned as text in the caller's buffer, naming the file.
 */
#ifndef SBX_HIST_H
#define SBX_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#define HIST_SCHEMA_VERSION 6
#define HIST_SNIPPET_CHARS 500

enum hist_code { HIST_CODE_PREVIEW, HIST_CODE_FULL };

/* HIST_READ: queries only.  HIST_WRITE: also prune and vacuum; the file and
 * its directory are created if missing.  HIST_APPEND: HIST_WRITE, and the
 * insert is compiled at open, so that a pipeline's logger pays for it while
 * the sandbox runs rather than between a result and its logged line. */
enum hist_mode { HIST_READ, HIST_WRITE, HIST_APPEND, HIST_PEEK };

struct hist;

/* Open in the given mode.  sync_full: synchronous=FULL instead of NORMAL
 * (writers).  NULL with err set on failure; for a reader, errno ENOENT
 * when there is no history yet (no file, or, HIST_PEEK, one its first
 * writer has made and not filled yet). */
struct hist *hist_open(const char *path, enum hist_mode mode, bool sync_full, char *err, size_t errlen);
void hist_close(struct hist *h);
/* Queries after this fail ("interrupted") once ms have passed: a page must
 * not hold a server's only thread for long. */
void hist_deadline(struct hist *h, double ms);

/* Writing: hist_begin, any number of hist_append, hist_commit.  json is
 * the record's text, known to be one JSON object (rec_check_line); fields
 * of unexpected JSON types are stored as NULL.  *id is the new row's
 * history_id.  On failure err says why; the caller rolls back with
 * hist_abort (hist_commit does so itself). */
int hist_begin(struct hist *h, char *err, size_t errlen);
int hist_append(struct hist *h, const char *json, size_t len, enum hist_code code, int64_t *id, char *err,
		size_t errlen);
int hist_commit(struct hist *h, char *err, size_t errlen);
void hist_abort(struct hist *h);

/* Reading.  Every filter value is bound as a parameter, never spliced into
 * SQL.  Times are Unix seconds; NAN / NULL / 0 mean "no filter". */
struct hist_filter {
	double since, until;       /* NAN: open */
	const char *language, *status; /* one, or a comma-separated list of several */
	const char *id, *session;
	const char *principal;     /* sbx-mcp's HTTP callers: a token's runs only */
	const char *verdict;       /* judged runs with this verdict (or a list, as status) */
	bool egress_refused;       /* runs whose proxy refused or failed a connection (the record's "egress") */
	bool by_verdict;           /* hist_stats: judged runs, per verdict instead of status */
	const char *text;          /* the code contains it (case-insensitive for ASCII; no wildcards) */
	int64_t history_id;        /* > 0: that row only */
	int64_t after_id;          /* > 0: rows logged after that one (history_id above it) */
	double before_ts;          /* with before_id > 0: rows older than (before_ts, before_id) */
	int64_t before_id;         /*   in the newest-first order: a page's keyset cursor */
	int64_t limit;             /* <= 0: no limit */
};
void hist_filter_init(struct hist_filter *f);

/* Rows newest first; each row as a JSON object (consumed by fn).  fn
 * returns false to stop.  Returns rows seen, or -1 with err. */
typedef bool (*hist_row_fn)(jv row, void *arg);
int64_t hist_query(struct hist *h, const struct hist_filter *f, bool with_record, hist_row_fn fn, void *arg,
		   char *err, size_t errlen);

/* Durations over time: per bucket of bucket_s seconds (its start, Unix
 * seconds), {"bucket", "count", "p50_ms", "p95_ms", "max_ms"} over the runs
 * whose program ran, oldest first. */
int64_t hist_series(struct hist *h, const struct hist_filter *f, int64_t bucket_s, hist_row_fn fn, void *arg,
		    char *err, size_t errlen);

/* Sessions with runs (for f), the most recently used first, at most
 * limit: {"session_id", "languages" (comma-separated), "runs", "last",
 * "checkpoints" (taken of it), "restores", "forked_from" (the checkpoint it
 * was forked from, or null)}. */
int64_t hist_sessions(struct hist *h, const struct hist_filter *f, int64_t limit, hist_row_fn fn, void *arg,
		      char *err, size_t errlen);

/* A session tree's events (sbx-mcp's checkpoint tools), the table
 * session_events: each column's name, SQL type and the JSON types stored
 * (any other is stored as NULL), once.  An event is a JSON object with
 * these keys (kind one of HIST_EVENT_KINDS); its time is when it is
 * logged. */
#define HIST_EVENT_COLUMNS(X)                                                                                    \
	X(session_id, "TEXT NOT NULL", "'text'") X(kind, "TEXT NOT NULL", "'text'")                                 \
	X(checkpoint_id, "TEXT NOT NULL", "'text'") X(parent, "TEXT", "'text'") X(name, "TEXT", "'text'")          \
	X(from_session, "TEXT", "'text'") X(method, "TEXT", "'text'") X(duration_ms, "REAL", "'integer', 'real'") \
	X(bytes, "INTEGER", "'integer'") X(principal, "TEXT", "'text'")
/* checkpoint: one was taken of session_id (parent: the checkpoint its
 * files came from); restore: session_id was restored to checkpoint_id;
 * fork: session_id was made from checkpoint_id of from_session; delete:
 * checkpoint_id was deleted, through session_id. */
#define HIST_EVENT_KINDS(X) X(checkpoint) X(restore) X(fork) X(delete)
/* Log an event (consumed): its kind one of those, its session_id a
 * session's id, its checkpoint_id 16 hex digits; "timestamp" (Unix
 * seconds, when it happened) if given, else now.  -1 with err. */
int hist_event(struct hist *h, jv event, char *err, size_t errlen);
/* Events for f (its since, until, session, principal and limit), newest
 * first: {"timestamp", and the columns}. */
int64_t hist_events(struct hist *h, const struct hist_filter *f, hist_row_fn fn, void *arg, char *err, size_t errlen);

/* The raw (timestamp, history_id) of the last row the last hist_query
 * handed out, for the next page's before_ts/before_id; false if none. */
bool hist_cursor(const struct hist *h, double *ts, int64_t *id);

/* Statistics per language and status, then per language over all statuses
 * (status "all"); with bucket_s > 0, per time bucket of that many seconds
 * as well.  Rows to fn as above. */
int64_t hist_stats(struct hist *h, const struct hist_filter *f, int64_t bucket_s, hist_row_fn fn, void *arg,
		   char *err, size_t errlen);

/* Merge the runs of the history file at src into h (opened for writing),
 * in one transaction.  A row's key is its origin (origin_db, origin_id) if
 * it was merged into src, else (src's uuid, its id there); it is added
 * under that key unless the key is already in h or began in h, so merging
 * again, or back, adds nothing.  src is opened read-only and never
 * migrated: one older than version 5, one that is not an sbx history,
 * h's own file, one with h's uuid, and one holding a different run under
 * a key h has (two files with one uuid) are refused.  Values of unexpected
 * types are stored as NULL (or the NOT NULL columns' defaults).  *rows:
 * the rows in src; *added: those new to h.  -1 with err naming the file;
 * nothing of src is then in h. */
int hist_merge(struct hist *h, const char *src, int64_t *rows, int64_t *added, char *err, size_t errlen);

/* Delete rows older than `before` (Unix seconds); returns rows removed.
 * One that would remove every row (a typo's "older than a minute") is
 * refused, removing none, unless all is set. */
int64_t hist_prune(struct hist *h, double before, bool all, char *err, size_t errlen);
int hist_vacuum(struct hist *h, char *err, size_t errlen);

#endif
