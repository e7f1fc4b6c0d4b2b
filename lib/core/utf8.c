#include "utf8.h"

#include <string.h>

#include "util.h"

size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	if (n == 0)
		return 0;
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0; /* overlong */
		else if (c == 0xED)
			hi = 0x9F; /* surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90; /* overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* above U+10FFFF */
	} else
		return 0;
	if (n < len)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

bool utf8_valid(const char *str, size_t n, size_t *bad_off)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < n) {
		/* ASCII fast path: records are mostly ASCII. */
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t l = utf8_seq_len(s + i, n - i);
		if (!l) {
			if (bad_off)
				*bad_off = i;
			return false;
		}
		i += l;
	}
	return true;
}

char *utf8_sanitize(const char *str, size_t n, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t bad;
	if (utf8_valid(str, n, &bad)) {
		*out_len = n;
		return util_strndup(str, n);
	}
	/* Worst case every byte becomes three. */
	char *out = util_xalloc(n * 3 + 1);
	memcpy(out, s, bad);
	size_t o = bad, i = bad;
	while (i < n) {
		size_t l = s[i] < 0x80 ? 1 : utf8_seq_len(s + i, n - i);
		if (l) {
			memcpy(out + o, s + i, l);
			o += l;
			i += l;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	out[o] = 0;
	*out_len = o;
	return out;
}

size_t utf8_floor(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t k = n, cont = 0;
	while (k > 0 && cont < 3 && (s[k - 1] & 0xC0) == 0x80) {
		k--;
		cont++;
	}
	if (k == 0 || (s[k - 1] & 0xC0) == 0x80)
		return n; /* stray continuation bytes: sanitizing replaces them */
	unsigned char c = s[k - 1];
	size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
	/* A complete sequence (valid or not) stays; an incomplete one is cut. */
	return cont + 1 >= need ? n : k - 1;
}

size_t utf8_ceil(const char *str, size_t n, size_t off)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t k = off;
	for (int i = 0; i < 3 && k < n && (s[k] & 0xC0) == 0x80; i++)
		k++;
	return k;
}

size_t utf8_deceptive(const unsigned char *s, size_t n, unsigned *cp)
{
	size_t len = 0;
	if (n >= 2 && s[0] == 0xd8 && s[1] == 0x9c)
		len = 2;
	else if (n >= 3 && s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0x8e || s[2] == 0x8f || (s[2] >= 0xa8 && s[2] <= 0xae)))
		len = 3;
	else if (n >= 3 && s[0] == 0xe2 && s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)
		len = 3;
	if (len == 2)
		*cp = (unsigned)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
	else if (len == 3)
		*cp = (unsigned)(s[0] & 0x0f) << 12 | (unsigned)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
	return len;
}
