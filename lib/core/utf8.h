/* utf8: strict UTF-8 checks and repair, for bytes that came from programs
 * or from users.
 *
 * "Valid" means RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF.  NUL is a valid character here (a JSON string can carry it as
 * \u0000); callers that must refuse NUL check for it themselves.
 * Functions never allocate except utf8_sanitize, whose result the caller frees.
 */
#ifndef SBX_UTF8_H
#define SBX_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length (1-4) of the valid sequence at s[0..n), or 0 if it is invalid or
 * incomplete. */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/* True if all of s is valid; otherwise *bad_off (if given) is the offset of
 * the first invalid byte. */
bool utf8_valid(const char *s, size_t n, size_t *bad_off);

/* Copy of s with every invalid byte replaced by U+FFFD; *out_len gets the
 * length.  NUL-terminated for convenience (the length is the truth). */
char *utf8_sanitize(const char *s, size_t n, size_t *out_len);

/* Largest k <= n such that s[0..k) does not end inside a sequence. */
size_t utf8_floor(const char *s, size_t n);
/* Smallest k >= off such that s[k..) does not start inside a sequence
 * (skips at most 3 continuation bytes). */
size_t utf8_ceil(const char *s, size_t n, size_t off);

/* Length (2 or 3) of a character at s[0..n) that makes text read other
 * than it runs, or 0: bidi marks, embeddings, overrides and isolates
 * (U+061C, U+200E-F, U+202A-E, U+2066-9) and the line and paragraph
 * separators (U+2028-9), which some viewers break a line at.  A person
 * shown code or an id (a table, CSV, a page) must see them, not obey them
 * (the "Trojan Source" attack).  *cp gets its code point. */
size_t utf8_deceptive(const unsigned char *s, size_t n, unsigned *cp);

#endif
