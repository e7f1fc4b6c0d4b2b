/* ledger: which result answers which request, exactly once.
 *
 * A batch run on many machines, with engines that retry, ends with result
 * files that may hold a request's result twice (a task that wrote some
 * results, died and ran again), not at all (a task that failed for good),
 * torn (a crash mid-line) or from somewhere else (another batch's file in
 * the same directory).  The ledger holds the requests (their keys, from
 * shard.h, in input order) and, for each, the place of the one result that
 * wins: results are offered one by one and the ledger says what each was.
 *
 * The winner among several results for one request is the newest: the
 * highest `shard.attempt` (sbx-batch's count of the task's attempts), then
 * the latest `started_at`, then the last offered; but a `cancelled` or
 * `internal_error` result (a run cut short, a node that could not make a
 * sandbox: neither is a verdict on the code) loses to any other and is
 * reported as not final.  A result whose `code`
 * or `stdin` differs from its request's is foreign (another batch reusing
 * the ids) and never wins.  Results are not kept, only where they are
 * (file, offset, length): a million results need a few dozen MB, not their
 * size.
 *
 * Lines come from ledger_file, a reader over an fd that hands out each
 * line with its offset, says when the last one is torn (no newline at the
 * end of the file) and drains lines over its limit in bounded memory.
 *
 * The ledger owns its keys (ledger_add takes the key it is given).
 */
#ifndef SBX_LEDGER_H
#define SBX_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jv.h>

struct ledger_file {
	int fd;
	char *buf;
	size_t start, len, cap; /* unread bytes are buf[start, start+len) */
	size_t max;             /* longest line kept */
	off_t pos;              /* file offset of buf[start] */
	unsigned long lineno;
	bool eof;
};

struct ledger_line {
	const char *text; /* without the newline; NULL for a line over the limit */
	size_t len;       /* its length (also when over the limit) */
	off_t off;        /* where it starts in the file */
	unsigned long lineno;
	bool torn;        /* the file ends inside this line */
};

/* Offsets count from the start of the file, also when fd is past it. */
void ledger_file_init(struct ledger_file *f, int fd, size_t max);
void ledger_file_free(struct ledger_file *f);
/* 1 with the next line in *l (valid until the next call), 0 at the end,
 * -1 on a read error (errno set).  Blank lines are handed out too. */
int ledger_file_next(struct ledger_file *f, struct ledger_line *l);

struct ledger_req {
	char *key;
	unsigned long line;      /* of the request */
	unsigned shard;          /* of K given to ledger_init */
	unsigned char digest[16];
	unsigned results;        /* results offered for it (foreign ones not counted) */
	int file;                /* the winner's file (the caller's number), -1 none */
	off_t off;
	size_t len;
	unsigned long rline;     /* the winner's line */
	int64_t attempt;
	double started;
	bool final;              /* the winner is a final result (not cancelled, not internal_error) */
};

struct ledger {
	struct ledger_req *req;
	size_t n, cap;
	uint32_t *slot; /* open addressing: index + 1, 0 empty */
	size_t nslot;
	unsigned k;
	struct ledger *seen; /* lines without an id: copies of each so far */
};

enum ledger_offer {
	LEDGER_FIRST,   /* the request's first result */
	LEDGER_NEWER,   /* a later result for it: it wins now */
	LEDGER_OLDER,   /* a result older than the one kept */
	LEDGER_UNKNOWN, /* no request has its id */
	LEDGER_FOREIGN, /* its code or stdin is not its request's */
	LEDGER_NOID,    /* no usable id */
	LEDGER_NOT_FINAL, /* `cancelled` or `internal_error`: kept only while nothing final is there */
};

void ledger_init(struct ledger *l, unsigned k);
void ledger_free(struct ledger *l);
/* Add a request (req borrowed, for its digest) under key (taken).  The
 * index of the new request, or -1 - index of the earlier one with the key
 * (the key is freed then). */
long ledger_add(struct ledger *l, char *key, unsigned long line, jv req);
/* The key of a request's id (req borrowed, from line/len): its own id, or
 * the generated one (shard.h), counting copies of the line in l.  NULL with
 * *why set when the id is of another kind ("id is an array, …"). */
char *ledger_request_key(struct ledger *l, jv req, const char *line, size_t len, const char **why);
/* The index of the request with key, or -1. */
long ledger_find(const struct ledger *l, const char *key);
/* Offer a result (borrowed) found at file/off/len/line; *idx is set to its
 * request for FIRST, NEWER, OLDER and FOREIGN. */
enum ledger_offer ledger_offer(struct ledger *l, jv res, int file, off_t off, size_t len, unsigned long line,
			       long *idx);

#endif
