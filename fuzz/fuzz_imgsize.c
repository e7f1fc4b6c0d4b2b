/* libFuzzer harness: image headers (imgsize.h), the bytes a sandboxed
 * program wrote.  The first byte picks the MIME type; the rest is the file,
 * read raw and as base64.  Any abort, sanitizer report or leak is a
 * finding, and a size said must be whole pixels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "imgsize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const mimes[] = { "image/png", "image/gif", "image/jpeg", "image/webp", "text/plain" };
	if (size < 1)
		return 0;
	const char *mime = mimes[data[0] % 5];
	uint32_t w = 0, h = 0;
	if (imgsize_of(mime, data + 1, size - 1, &w, &h) && (w == 0 || h == 0))
		abort();
	size_t n = 0;
	char *b64 = b64_encode(data + 1, size - 1, &n);
	if (imgsize_showable(mime, b64, n, &w, &h) && (uint64_t)w * h > IMGSIZE_INLINE_PIXELS)
		abort();
	free(b64);
	return 0;
}
