/* libFuzzer harness: plain HTTP request heads, as the egress proxy reads
 * them from a sandbox (egress_http_head, egress_http_forward).  Any read
 * past the input, abort or sanitizer report is a finding.  A head it
 * passes must give a host that is a C string, a port from 1 to 65535, a
 * path within the input and a length within its bound; its forwarded form
 * (as to an upstream proxy: absolute, so parsed again) must fit in what
 * the input and the added headers take, and parse to the same request,
 * now with a Host header that matches and no hop-by-hop ones. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, so that ASan sees any read past it */
	char *b = malloc(size ? size : 1);
	memcpy(b, data, size);
	struct egress_http h, again;
	char why[256];
	if (egress_http_head(b, size, &h, why, sizeof why)) {
		if (!h.host[0] || strlen(h.host) >= sizeof h.host || h.port < 1 || h.port > 65535 || h.path > size ||
		    h.path_len > size - h.path || h.content_length < -1 || h.content_length > EGRESS_HTTP_BODY_MAX ||
		    strlen(h.host_header) >= sizeof h.host_header)
			abort();
		size_t cap = size + 1024;
		char *out = malloc(cap);
		size_t n = egress_http_forward(b, size, &h, "", out, cap);
		if (!n || n > cap || !egress_http_head(out, n, &again, why, sizeof why) || strcmp(again.method, h.method) ||
		    strcmp(again.host, h.host) || again.port != h.port || again.content_length != h.content_length ||
		    again.flags & (EGRESS_HTTP_CHUNKED | EGRESS_HTTP_UPGRADE) || !(again.flags & EGRESS_HTTP_HOST) ||
		    ((h.flags & EGRESS_HTTP_HOST) && strcmp(again.host_header, h.host_header)))
			abort();
		free(out);
	} else if (!why[0] || strlen(why) >= sizeof why)
		abort();
	free(b);
	return 0;
}
