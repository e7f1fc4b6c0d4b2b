/* hist_int: what the parts of hist share, and nobody else (hist.c the
 * file, its schema and migrations; hist_write.c appending, pruning and
 * vacuuming; hist_query.c reading; hist_stats.c statistics; hist_merge.c
 * merging).
 */
#ifndef SBX_HIST_INT_H
#define SBX_HIST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "hist.h"

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

/* err: "history PATH: what: SQLite's message"; returns -1. */
int hist_db_fail(struct hist *h, char *err, size_t errlen, const char *what);
/* Run SQL without results; 0, or -1 with err. */
int hist_exec(struct hist *h, const char *sql, char *err, size_t errlen);
/* Compile the insert (hist_write.c); hist_open does so for HIST_APPEND. */
int hist_prepare_insert(struct hist *h, char *err, size_t errlen);

/* f's filters as " WHERE …", parameters numbered from 1, and their values
 * bound in the same order (returns the last number used); every value is
 * a parameter, never spliced into SQL (hist_query.c). */
void hist_where_clause(const struct hist_filter *f, char *buf, size_t len);
int hist_bind_filter(sqlite3_stmt *st, const struct hist_filter *f);
/* "SELECT cols FROM runs WHERE <f's filters> AND extra tail", prepared,
 * the filters bound; NULL with err naming what. */
sqlite3_stmt *hist_prepare_filtered(struct hist *h, const struct hist_filter *f, const char *cols, const char *extra,
				    const char *tail, const char *what, char *err, size_t errlen);

#endif
