#define _GNU_SOURCE
/* Unit tests for lib/history/page's escaping: what the dashboard writes of
 * hostile text (HTML's five characters, control characters, C1 controls,
 * bidi overrides, invalid UTF-8) and of values put into links. */
#include <stdlib.h>
#include <string.h>

#include "page.h"
#include "tap.h"

static char *esc(const char *s, size_t n)
{
	struct page p;
	page_init(&p, false);
	page_text(&p, s, n);
	char *out = strdup(p.buf ? p.buf : "");
	page_free(&p);
	return out;
}

static int same(const char *s, size_t n, const char *want)
{
	char *got = esc(s, n);
	int ok = !strcmp(got, want);
	if (!ok)
		printf("# got  [%s]\n# want [%s]\n", got, want);
	free(got);
	return ok;
}

int main(void)
{
	OK(same("<script>alert(\"x\")</script>", 27, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"), "markup is text");
	OK(same("a & 'b'", 7, "a &amp; &#39;b&#39;"), "ampersand and apostrophe");
	OK(same("\x1b[31mred", 8, "\xe2\x90\x9b[31mred"), "ESC shows as U+241B");
	OK(same("a\0b", 3, "a\xe2\x90\x80" "b"), "NUL shows as U+2400");
	OK(same("x\x7fy", 3, "x\xe2\x90\xa1y"), "DEL shows as U+2421");
	OK(same("l1\nl2\tt", 7, "l1\nl2\tt"), "newline and tab stay");
	OK(same("\r", 1, "\xe2\x90\x8d"), "CR shows as U+240D");
	OK(same("a\xc2\x85z", 4, "a\xef\xbf\xbdz"), "a C1 control (NEL) becomes U+FFFD");
	OK(same("a\xe2\x80\xae" "evil", 8, "a\xef\xbf\xbd" "evil"), "RIGHT-TO-LEFT OVERRIDE becomes U+FFFD");
	OK(same("a\xe2\x81\xa6z", 5, "a\xef\xbf\xbdz"), "a bidi isolate becomes U+FFFD");
	OK(same("caf\xc3\xa9 \xe2\x82\xac", 9, "caf\xc3\xa9 \xe2\x82\xac"), "ordinary UTF-8 stays");
	char *bad = esc("a\xff<b", 4);
	OK(!strchr(bad, '<') && strstr(bad, "&lt;") && !strchr(bad, '\xff'), "invalid UTF-8 repaired, then escaped");
	free(bad);
	OK(same("", 0, ""), "empty");

	struct page p;
	page_init(&p, false);
	page_url(&p, "a b&c=d/\"<>\xc3\xa9~-._");
	OK(p.buf && !strcmp(p.buf, "a%20b%26c%3Dd%2F%22%3C%3E%C3%A9~-._"), "a link's value is percent-encoded (%s)", p.buf);
	page_free(&p);
	OK(page_range_seconds("24h") == 86400 && page_range_seconds("all") == 0 && page_range_seconds("1y") == -1,
	   "ranges");
	DONE();
}
