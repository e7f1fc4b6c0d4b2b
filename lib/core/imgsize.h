/* imgsize: an image's size from its header alone, and the one rule of
 * what may be shown inline (MCP image content, the dashboard's <img>).
 *
 * A few hundred bytes of PNG can claim gigabytes of pixels, which whoever
 * shows it would decode: an image is shown only when its header says its
 * size and that size is at most IMGSIZE_INLINE_PIXELS.  Nothing here
 * decodes pixels (thumb.h does, confined).
 */
#ifndef SBX_IMGSIZE_H
#define SBX_IMGSIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IMGSIZE_INLINE_PIXELS (16u << 20)

/* Whether png (len bytes) starts as a PNG does, and its size (IHDR). */
bool imgsize_png(const unsigned char *png, size_t len, uint32_t *w, uint32_t *h);
/* The same for the raster types sbx shows (rec_raster_mime: PNG, GIF,
 * JPEG, WebP), by MIME type; false if the header does not say. */
bool imgsize_of(const char *mime, const unsigned char *img, size_t len, uint32_t *w, uint32_t *h);
/* Whether an image given as base64 (n characters) may be shown inline:
 * its header read, its pixels within the bound.  Its size in *w, *h when
 * the header said it. */
bool imgsize_showable(const char *mime, const char *b64, size_t n, uint32_t *w, uint32_t *h);

#endif
