#define _GNU_SOURCE
/* Unit tests for lib/utf8 and lib/cap: strict validity, repair, and capping
 * that keeps head and tail without ever splitting a character, checked as
 * properties over random multi-byte text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "tap.h"
#include "utf8.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Random valid UTF-8 of about n bytes (1- to 4-byte characters, NUL too). */
static char *random_text(size_t n, size_t *len)
{
	static const char *chars[] = { "a", "\n", "", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xed\x9f\xbf" };
	char *s = malloc(n + 8);
	size_t o = 0;
	while (o < n) {
		const char *c = chars[next() % 7];
		size_t l = *c ? strlen(c) : 1;
		memcpy(s + o, c, l);
		o += l;
	}
	*len = o;
	return s;
}

static bool is_prefix(const char *p, size_t pn, const char *s, size_t sn)
{
	return pn <= sn && !memcmp(p, s, pn);
}

int main(void)
{
	OK(utf8_valid("abc", 3, NULL), "ascii valid");
	OK(utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, NULL), "2-, 3-, 4-byte valid");
	size_t bad = 99;
	OK(!utf8_valid("ab\xff", 3, &bad) && bad == 2, "0xFF invalid at offset 2");
	OK(!utf8_valid("\xc0\x80", 2, NULL), "overlong NUL invalid");
	OK(!utf8_valid("\xe0\x80\xaf", 3, NULL), "overlong 3-byte invalid");
	OK(!utf8_valid("\xed\xa0\x80", 3, NULL), "surrogate invalid");
	OK(!utf8_valid("\xf4\x90\x80\x80", 4, NULL), "above U+10FFFF invalid");
	OK(!utf8_valid("\xe2\x82", 2, NULL), "truncated sequence invalid");
	OK(utf8_valid("a\0b", 3, NULL), "NUL is a character");

	size_t n;
	char *s = utf8_sanitize("a\xff" "b\xe2\x82", 5, &n);
	OK(n == 11 && !memcmp(s, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd", 11), "sanitize replaces each bad byte");
	free(s);

	OK(utf8_floor("ab\xe2\x82", 4) == 2, "floor cuts an incomplete 3-byte sequence");
	OK(utf8_floor("ab\xe2\x82\xac", 5) == 5, "floor keeps a complete sequence");
	OK(utf8_floor("ab\xf0\x9f\x98", 5) == 2, "floor cuts an incomplete 4-byte sequence");
	OK(utf8_floor("a\x80\x80\x80\x80", 5) == 5, "floor leaves stray continuation bytes to sanitizing");
	OK(utf8_ceil("\x82\xac" "b", 3, 0) == 2, "ceil skips continuation bytes");
	OK(utf8_ceil("b", 1, 0) == 0, "ceil at a boundary stays");

	/* cap_string properties */
	int bad_props = 0;
	for (int round = 0; round < 2000; round++) {
		size_t len;
		char *t = random_text(next() % 3000, &len);
		size_t limit = next() % 400;
		bool trunc;
		jv out = cap_string(t, len, limit, 0, &trunc);
		size_t olen = (size_t)jv_string_length_bytes(jv_copy(out));
		const char *o = jv_string_value(out);
		bool ok = utf8_valid(o, olen, NULL);
		if (len <= limit)
			ok = ok && !trunc && olen == len && !memcmp(o, t, len);
		else {
			const char *m = memmem(o, olen, "\n[... ", 6);
			ok = ok && trunc && m;
			if (ok) {
				size_t h = (size_t)(m - o);
				const char *end = memmem(m, olen - (size_t)(m - o), " bytes truncated ...]\n", 22);
				ok = end != NULL;
				if (ok) {
					size_t tail_off = (size_t)(end - o) + strlen(" bytes truncated ...]\n");
					size_t tl = olen - tail_off;
					unsigned long long cut = strtoull(m + 6, NULL, 10);
					ok = is_prefix(o, h, t, len) && !memcmp(o + tail_off, t + len - tl, tl) &&
					     h + tl <= limit && h + tl + cut == len && h + 4 > limit / 2 && tl + 4 > limit - limit / 2;
				}
			}
		}
		if (!ok)
			bad_props++;
		jv_free(out);
		free(t);
	}
	OK(bad_props == 0, "cap_string: 2000 random texts keep head+tail, valid UTF-8, exact cut count (%d bad)", bad_props);

	/* cap_buf: stream in random chunks, compare with cap_string on the whole */
	int bad_buf = 0;
	for (int round = 0; round < 500; round++) {
		size_t len;
		char *t = random_text(next() % 20000, &len);
		size_t limit = next() % 5000;
		struct cap_buf b;
		cap_buf_init(&b, limit);
		for (size_t off = 0; off < len;) {
			size_t chunk = 1 + next() % 3000;
			if (chunk > len - off)
				chunk = len - off;
			cap_buf_add(&b, t + off, chunk);
			off += chunk;
		}
		jv got = cap_buf_string(&b);
		size_t glen = (size_t)jv_string_length_bytes(jv_copy(got));
		const char *g = jv_string_value(got);
		bool ok = b.total == len && utf8_valid(g, glen, NULL);
		if (len <= limit)
			ok = ok && glen == len && !memcmp(g, t, len) && !cap_buf_truncated(&b);
		else
			ok = ok && cap_buf_truncated(&b) && memmem(g, glen, " bytes truncated ...]", 21) && glen <= limit + 64;
		if (!ok)
			bad_buf++;
		jv_free(got);
		cap_buf_free(&b);
		free(t);
	}
	OK(bad_buf == 0, "cap_buf: 500 random streams in random chunks (%d bad)", bad_buf);

	/* A flood costs the limit, not the flood. */
	struct cap_buf b;
	cap_buf_init(&b, 1000);
	char chunk[65536];
	memset(chunk, 'x', sizeof chunk);
	for (int i = 0; i < 1600; i++)
		cap_buf_add(&b, chunk, sizeof chunk);
	OK(b.total == 1600ull * 65536 && b.hcap <= 500 && b.rcap <= 500, "100 MiB flood kept in 1000 bytes");
	jv st = cap_buf_string(&b);
	OK(strstr(jv_string_value(st), "[... 104856600 bytes truncated ...]") != NULL, "flood marker counts every byte");
	jv_free(st);
	cap_buf_free(&b);

	/* Invalid bytes in a program's output come out replaced, NUL kept. */
	cap_buf_init(&b, 100);
	cap_buf_add(&b, "a\0\xff", 3);
	st = cap_buf_string(&b);
	OK(jv_string_length_bytes(jv_copy(st)) == 5 && !memcmp(jv_string_value(st), "a\0\xef\xbf\xbd", 5), "NUL kept, 0xFF replaced");
	jv_free(st);
	cap_buf_free(&b);

	/* The reported count wins when the caller knows the program wrote more. */
	bool trunc;
	jv r = cap_string("0123456789", 10, 4, 5000, &trunc);
	OK(strstr(jv_string_value(r), "[... 4996 bytes truncated ...]") != NULL, "reported byte count used in the marker");
	jv_free(r);
	DONE();
}
