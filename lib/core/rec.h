/* rec: JSON-lines records on libjq's jv.
 *
 * Reading: a rec_reader pulls bytes from an fd (blocking or, for event loops,
 * one read per poll) and hands out one record per input line.  Lines of any
 * length are handled in bounded memory: a line longer than max_line is
 * drained without being kept and becomes an `invalid` record.  Every problem
 * (not JSON, not an object, two values on a line, invalid UTF-8, a raw NUL,
 * too long) becomes an `invalid` record that names the line number and the
 * problem and never echoes the input back.  Blank lines carry no record and
 * are skipped.
 *
 * Access: libjq aborts the process on a kind mismatch, so untrusted values
 * are only touched through the kind-checking helpers below.
 *
 * Ownership follows jv: functions taking a jv consume it unless the comment
 * says "borrowed"; returned jv values belong to the caller.
 */
#ifndef SBX_REC_H
#define SBX_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jv.h>

#define REC_DEFAULT_MAX_LINE (16u << 20)

enum rec_status {
	REC_OK,      /* *out is a JSON object */
	REC_INVALID, /* *out is an `invalid` record describing the line */
	REC_AGAIN,   /* no complete line buffered: call rec_fill */
	REC_EOF,     /* input ended */
	REC_ERROR,   /* read error; errno is set */
};

struct rec_reader {
	int fd;
	char *buf;
	size_t start, len, cap; /* unread bytes are buf[start, start+len) */
	size_t max_line;
	unsigned long lineno;   /* number of the last line handed out */
	bool eof;
	bool skipping;          /* inside an over-long line */
	uint64_t skipped;       /* its length so far */
};

void rec_reader_init(struct rec_reader *r, int fd, size_t max_line);
void rec_reader_free(struct rec_reader *r);
/* Read once from the fd (blocks if the fd does).  Returns bytes read, 0 at
 * EOF, -1 on error (EAGAIN included). */
ssize_t rec_fill(struct rec_reader *r);
/* Next record from what is buffered. */
enum rec_status rec_next(struct rec_reader *r, jv *out);
/* Like rec_next, but a line holding one valid JSON object is handed out as
 * text (*line, *len: valid until the next rec_next*, rec_fill or
 * rec_reader_free) without being parsed.  Other lines are `invalid`
 * records in *out, as with rec_next. */
enum rec_status rec_next_raw(struct rec_reader *r, const char **line, size_t *len, jv *out);
/* Blocking convenience: rec_next, filling as needed. */
enum rec_status rec_read(struct rec_reader *r, jv *out);

/* The loop of a filter tool (sbx-validate, sbx-cap): every record of r,
 * an `invalid` one for a line that is not (st says which), through fn,
 * whose result (consumed) is written to stdout.  fn sets *bad when that
 * record makes the tool exit EXIT_RECORDS.  Returns the tool's exit code:
 * EXIT_OK, EXIT_RECORDS, or EXIT_IO when reading or writing failed (what
 * was read before is written). */
typedef jv rec_filter_fn(jv rec, enum rec_status st, unsigned long lineno, bool *bad, void *arg);
int rec_filter(struct rec_reader *r, rec_filter_fn *fn, void *arg);

/* Check one line (without its newline) without parsing it: REC_OK if it is
 * one valid JSON object (strict RFC 8259, valid UTF-8, no raw NUL),
 * REC_AGAIN if blank, else REC_INVALID with the reason in *out. */
enum rec_status rec_check_line(const char *line, size_t len, unsigned long lineno, jv *out);
/* Parse one line (without its newline) into an object or an invalid record.
 * Returns REC_OK, REC_INVALID, or REC_AGAIN for a blank line. */
enum rec_status rec_parse_line(const char *line, size_t len, unsigned long lineno, jv *out);

/* {"status":"invalid","error":"line N: <msg>","line":N}. */
jv rec_invalid_line(unsigned long lineno, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Mark an object (consumed) invalid with an error message, keeping its fields. */
jv rec_make_invalid(jv obj, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Kind-checked access.  `obj` is borrowed and must be an object.
 * rec_get returns a new reference, or an invalid jv (no message) if the key
 * is missing. */
jv rec_get(jv obj, const char *key);
bool rec_has(jv obj, const char *key);
/* "string", "number", …, or "missing" for an invalid jv. */
const char *rec_kind(jv v);
/* Borrowed string value of obj[key] if it is a string, else NULL. */
const char *rec_str(jv obj, const char *key, size_t *len);
/* Number value of obj[key] if it is a number; else false. */
bool rec_num(jv obj, const char *key, double *out);
bool rec_bool(jv obj, const char *key, bool *out);
/* True if obj has a final "status" (any string). */
bool rec_has_status(jv obj);
/* Every connection a result's stages made through their proxies (its
 * "egress" lists): the compile stage's, the run's, then each test's, each
 * object as it is with "stage" added ("compile", "test 2") where it is not
 * the run's own.  Non-objects are skipped; rec is borrowed. */
jv rec_egress(jv rec);
/* An artifact's mime_type that viewers may show inline as an image (MCP's
 * image content, the dashboard): raster types only.  An SVG can carry
 * script and links, so it travels as a file like any other. */
bool rec_raster_mime(const char *mime);

/* Serialise compactly with a newline; the caller frees.  Consumes v. */
char *rec_dump(jv v, size_t *len);
/* Write one record to stdout and flush.  Consumes v.  False on error. */
bool rec_write(jv v);

#endif
