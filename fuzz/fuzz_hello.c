/* libFuzzer harness: TLS ClientHello records, as the install proxy reads
 * them from a sandbox (egress_hello_sni).  Any read past the input, abort
 * or sanitizer report is a finding; a name found must be a C string of
 * the caller's size without a NUL inside, and `need` never less than the
 * record's header. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, so that ASan sees any read past it */
	unsigned char *b = malloc(size ? size : 1);
	memcpy(b, data, size);
	char name[256];
	size_t need = 1;
	int s = egress_hello_sni(b, size, name, sizeof name, &need);
	if (s < -1 || s > 1 || (s == 1 && (strlen(name) == 0 || strlen(name) >= sizeof name)) || (need && need < 5))
		abort();
	free(b);
	return 0;
}
