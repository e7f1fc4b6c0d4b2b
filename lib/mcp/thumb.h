/* thumb: a smaller copy of a PNG a run made, for a client to show inline.
 *
 * Agents' clients choke on large inline images (a 100 KB base64 string in
 * a result), so a figure past [mcp] image_inline comes back twice: scaled
 * down inline, whole as a resource.  The PNG is the sandboxed program's
 * work, so it is decoded as hostile input, by sbx-thumb (src/sbx-thumb.c
 * says how it confines itself): a fresh exec that holds the PNG and
 * nothing of the server, as the sandboxes' nobody, allowed to read, write,
 * use memory and exit.  The server waits for a result's images THUMB_MS in
 * all, and trusts nothing of the answer but a PNG whose header it checks:
 * a decoder bug costs a dead helper, never the server.
 *
 * Who owns what: the caller owns png and gets a malloc'd copy.
 */
#ifndef SBX_THUMB_H
#define SBX_THUMB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define THUMB_MS 3000                 /* for all of a result's images */
#define THUMB_MAX_INPUT (64u << 20)   /* a larger PNG is not given to the helper */

struct thumb {
	uint32_t width, height;       /* the original's, from its header */
	uint32_t thumb_w, thumb_h;    /* the copy's */
};

/* A copy of png (len bytes) scaled down by a whole factor until its PNG
 * takes at most max bytes, into *out (malloc'd, *outlen bytes), made by
 * sbx-thumb as uid (-1: as we are) before deadline (util_now_ms()); false
 * with err if there is none (not a PNG, more pixels than imgsize.h lets
 * be shown, no time left, the helper failed). */
bool thumb_make(const unsigned char *png, size_t len, size_t max, double deadline, int64_t uid, unsigned char **out,
		size_t *outlen, struct thumb *t, char *err, size_t errlen);

#endif
