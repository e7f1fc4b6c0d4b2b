/* cap: output ceilings.  Two halves of one policy, "keep the head and the
 * tail, say how much was cut in between, never split a character":
 *
 *  - cap_buf captures a stream of unknown size (a sandboxed program's stdout)
 *    in bounded memory: the first limit/2 bytes and a ring of the last
 *    limit/2, while counting every byte.  A program writing 10 GB costs the
 *    supervisor `limit` bytes.  sbx-run uses it.
 *  - cap_string caps a string that is already in memory.  sbx-cap uses it.
 *
 * Both produce jv strings of valid UTF-8 (invalid bytes become U+FFFD, NUL
 * is kept) with the marker from cap_marker between head and tail.
 * A cap_buf owns its memory; cap_buf_free releases it.
 */
#ifndef SBX_CAP_H
#define SBX_CAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

struct cap_buf {
	size_t limit;      /* bytes kept at most (head + tail) */
	char *head;        /* first bytes, up to limit - limit/2 */
	size_t hlen, hcap;
	char *ring;        /* last bytes, up to limit/2, once head is full */
	size_t rcap, rpos, rlen;
	uint64_t total;    /* every byte written, kept or not */
};

void cap_buf_init(struct cap_buf *b, size_t limit);
void cap_buf_add(struct cap_buf *b, const char *data, size_t n);
bool cap_buf_truncated(const struct cap_buf *b);
/* The kept bytes as a sanitized jv string with the marker where bytes were
 * dropped. */
jv cap_buf_string(const struct cap_buf *b);
void cap_buf_free(struct cap_buf *b);
/* The kept bytes as they came (head, then the ring's), NUL-terminated,
 * the caller's to free: the whole stream unless cap_buf_truncated. */
char *cap_buf_bytes(const struct cap_buf *b, size_t *len);

/* The marker placed where `cut` bytes were removed. */
jv cap_marker(uint64_t cut);

/* Cap a UTF-8 string of n bytes at limit bytes (head limit/2, tail the
 * rest), returning a new jv string; *truncated says whether anything was
 * cut.  `reported` is how many bytes the marker says were cut when the caller
 * knows better than the string (the program's own byte count); pass 0 to
 * report the bytes cut from the string. */
jv cap_string(const char *s, size_t n, size_t limit, uint64_t reported, bool *truncated);

#endif
