#include "b64.h"

#include <stdlib.h>

#include "util.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *b64_encode(const void *data, size_t n, size_t *out_len)
{
	const unsigned char *in = data;
	size_t len = (n + 2) / 3 * 4;
	char *out = util_xalloc(len + 1);
	size_t o = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = alphabet[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0);
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	out[o] = 0;
	*out_len = o;
	return out;
}

static int value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

size_t b64_decoded_len(const char *s, size_t n)
{
	if (n % 4)
		return 0;
	size_t len = n / 4 * 3;
	if (n && s[n - 1] == '=')
		len--;
	if (n > 1 && s[n - 2] == '=')
		len--;
	return len;
}

char *b64_decode(const char *s, size_t n, size_t *out_len)
{
	if (n % 4)
		return NULL;
	char *out = util_xalloc(n / 4 * 3 + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int a = value(s[i]), b = value(s[i + 1]);
		int c = s[i + 2] == '=' ? -2 : value(s[i + 2]);
		int d = s[i + 3] == '=' ? -2 : value(s[i + 3]);
		bool last = i + 4 == n;
		if (a < 0 || b < 0 || c == -1 || d == -1 || ((c == -2 || d == -2) && !last) || (c == -2 && d != -2)) {
			free(out);
			return NULL;
		}
		unsigned v = (unsigned)a << 18 | (unsigned)b << 12 | (c >= 0 ? (unsigned)c << 6 : 0) | (d >= 0 ? (unsigned)d : 0);
		out[o++] = (char)(v >> 16);
		if (c >= 0)
			out[o++] = (char)(v >> 8 & 0xFF);
		if (d >= 0)
			out[o++] = (char)(v & 0xFF);
	}
	*out_len = o;
	return out;
}
