#include "imgsize.h"

#include <stdlib.h>
#include <string.h>

#include "b64.h"

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

bool imgsize_png(const unsigned char *png, size_t len, uint32_t *w, uint32_t *h)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	/* the signature, then IHDR first: length 13, type, width, height */
	if (len < 24 || memcmp(png, sig, 8) || be32(png + 8) != 13 || memcmp(png + 12, "IHDR", 4))
		return false;
	*w = be32(png + 16);
	*h = be32(png + 20);
	return *w > 0 && *h > 0 && *w <= 0x7fffffff && *h <= 0x7fffffff;
}

static uint32_t le16(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le24(const unsigned char *p)
{
	return le16(p) | (uint32_t)p[2] << 16;
}

/* A JPEG's frame header (SOFn) gives its size; markers before it are
 * skipped by their lengths, as a decoder does.  A marker that has no
 * length (RSTn, TEM, another SOI, EOI) before the frame is refused: a
 * reader that took it for one with a length would jump past the real
 * frame header to a decoy in the next segment. */
static bool jpeg_size(const unsigned char *p, size_t len, uint32_t *w, uint32_t *h)
{
	if (len < 4 || p[0] != 0xFF || p[1] != 0xD8)
		return false;
	for (size_t i = 2; i + 9 < len;) {
		if (p[i] != 0xFF)
			return false;
		unsigned m = p[i + 1];
		if (m == 0xFF) {
			i++;
			continue;
		}
		if (m == 0x01 || m == 0x00 || (m >= 0xD0 && m <= 0xD9))
			return false;
		size_t seg = (size_t)p[i + 2] << 8 | p[i + 3];
		if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
			*h = (uint32_t)p[i + 5] << 8 | p[i + 6];
			*w = (uint32_t)p[i + 7] << 8 | p[i + 8];
			return *w && *h;
		}
		if (seg < 2)
			return false;
		i += 2 + seg;
	}
	return false;
}

/* Past a GIF's data sub-blocks (each a length byte, the last 0); 0 if
 * they run past the end. */
static size_t gif_blocks(const unsigned char *p, size_t len, size_t i)
{
	while (i < len && p[i])
		i += 1 + (size_t)p[i];
	return i < len ? i + 1 : 0;
}

/* A GIF's size is its screen's grown to hold every frame (decoders grow
 * the canvas to a frame that does not fit: a 1x1 screen can carry a
 * 65535x65535 frame), so every frame is walked, to the trailer; a file
 * that ends before it says no size. */
static bool gif_size(const unsigned char *p, size_t len, uint32_t *w, uint32_t *h)
{
	if (len < 13 || memcmp(p, "GIF8", 4))
		return false;
	*w = le16(p + 6);
	*h = le16(p + 8);
	size_t i = 13;
	if (p[10] & 0x80)
		i += 3u << ((p[10] & 7) + 1);
	while (i < len) {
		if (p[i] == 0x3B)
			return *w && *h;
		if (p[i] == 0x21) {
			if (i + 2 > len || !(i = gif_blocks(p, len, i + 2)))
				return false;
		} else if (p[i] == 0x2C) {
			if (i + 10 > len)
				return false;
			uint32_t right = le16(p + i + 1) + le16(p + i + 5), bottom = le16(p + i + 3) + le16(p + i + 7);
			*w = right > *w ? right : *w;
			*h = bottom > *h ? bottom : *h;
			unsigned flags = p[i + 9];
			i += 10;
			if (flags & 0x80)
				i += 3u << ((flags & 7) + 1);
			if (i + 1 >= len || !(i = gif_blocks(p, len, i + 1))) /* (after the LZW code size) */
				return false;
		} else
			return false;
	}
	return false;
}

static bool webp_size(const unsigned char *p, size_t len, uint32_t *w, uint32_t *h)
{
	if (len < 30 || memcmp(p, "RIFF", 4) || memcmp(p + 8, "WEBP", 4))
		return false;
	if (!memcmp(p + 12, "VP8X", 4)) {
		*w = le24(p + 24) + 1;
		*h = le24(p + 27) + 1;
	} else if (!memcmp(p + 12, "VP8L", 4) && p[20] == 0x2F) {
		uint32_t b = p[21] | (uint32_t)p[22] << 8 | (uint32_t)p[23] << 16 | (uint32_t)p[24] << 24;
		*w = (b & 0x3FFF) + 1;
		*h = (b >> 14 & 0x3FFF) + 1;
	} else if (!memcmp(p + 12, "VP8 ", 4)) {
		*w = le16(p + 26) & 0x3FFF;
		*h = le16(p + 28) & 0x3FFF;
	} else
		return false;
	return *w && *h;
}

bool imgsize_of(const char *mime, const unsigned char *img, size_t len, uint32_t *w, uint32_t *h)
{
	if (!strcmp(mime, "image/png"))
		return imgsize_png(img, len, w, h);
	if (!strcmp(mime, "image/gif"))
		return gif_size(img, len, w, h);
	if (!strcmp(mime, "image/jpeg"))
		return jpeg_size(img, len, w, h);
	if (!strcmp(mime, "image/webp"))
		return webp_size(img, len, w, h);
	return false;
}

bool imgsize_showable(const char *mime, const char *b64, size_t n, uint32_t *w, uint32_t *h)
{
	/* the header is near the start: a JPEG's frame header after its
	 * EXIF (64 KiB at most), PNG's and WebP's in their first bytes; a
	 * GIF's frames are all through it */
	size_t take = n < (128u << 10) || !strcmp(mime, "image/gif") ? n : (128u << 10);
	take -= take % 4;
	size_t len = 0;
	unsigned char *img = (unsigned char *)b64_decode(b64, take, &len);
	bool said = img && imgsize_of(mime, img, len, w, h);
	if (!said)
		*w = *h = 0;
	bool ok = said && (uint64_t)*w * *h <= IMGSIZE_INLINE_PIXELS;
	free(img);
	return ok;
}
