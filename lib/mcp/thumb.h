/* thumb: a smaller copy of a PNG a run made, for a client to show inline.
 *
 * Agents' clients choke on large inline images (a 100 KB base64 string in
 * a result), so a figure past [mcp] image_inline comes back twice: scaled
 * down inline, whole as a resource.  The PNG is the sandboxed program's
 * work, so it is decoded as hostile input: in a child process that may
 * only read, write, manage its memory and exit (seccomp, no new
 * privileges), under a CPU-time and address-space rlimit, with no file it
 * could reach but its two pipes; the parent waits THUMB_MS at most and
 * trusts nothing of the answer but a PNG it did not have to parse.  A
 * decoder bug costs a dead child, never the server.
 *
 * Who owns what: the caller owns png and gets a malloc'd thumbnail.
 */
#ifndef SBX_THUMB_H
#define SBX_THUMB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define THUMB_MS 3000
#define THUMB_MAX_PIXELS (64u << 20) /* larger images are not decoded at all */

struct thumb {
	uint32_t width, height;       /* the original's, from its header */
	uint32_t thumb_w, thumb_h;    /* the copy's */
};

/* A copy of png scaled down by a whole factor (box filter) until it takes
 * at most max bytes, into *out (malloc'd, *outlen bytes); false with why
 * if there is none (not a PNG, too many pixels, the child failed or took
 * too long). */
bool thumb_make(const unsigned char *png, size_t len, size_t max, unsigned char **out, size_t *outlen, struct thumb *t,
		char *why, size_t whylen);

#endif
