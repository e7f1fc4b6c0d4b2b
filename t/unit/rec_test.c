#define _GNU_SOURCE
/* Unit tests for lib/rec: hostile lines become invalid records, never
 * crashes; long lines across many reads; the line limit. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rec.h"
#include "tap.h"

static enum rec_status parse(const char *s, jv *out)
{
	return rec_parse_line(s, strlen(s), 7, out);
}

static bool error_has(jv v, const char *frag)
{
	const char *e = rec_str(v, "error", NULL);
	return e && strstr(e, frag);
}

int main(void)
{
	jv v;
	OK(parse("{\"a\":1}", &v) == REC_OK && jv_get_kind(v) == JV_KIND_OBJECT, "object");
	jv_free(v);
	OK(parse("   \t", &v) == REC_AGAIN, "blank line has no record");
	struct { const char *line, *frag; } bad[] = {
		{ "[]", "expected a JSON object, got array" },
		{ "\"x\"", "got string" },
		{ "42", "got number" },
		{ "{\"a\":1}{\"b\":2}", "more than one JSON value" },
		{ "{\"a\":1} x", "unexpected text after the value at column 9" },
		{ "nan", "not valid JSON" },
		{ "{\"a\":\"\\ud800\"}", "surrogate" },
		{ "{\"a\":01}", "not valid JSON" },
		{ "{\"a\":\"x\"\"y\"}", "expected ',' or '}' in object at column 9" },
		{ "{bad", "not valid JSON" },
		{ "{\"a\":\"\xff\"}", "invalid UTF-8 at byte 7" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		enum rec_status st = parse(bad[i].line, &v);
		OK(st == REC_INVALID && error_has(v, "line 7: ") && error_has(v, bad[i].frag), "invalid: %s", bad[i].frag);
		jv_free(v);
	}
	OK(rec_parse_line("{\"a\":\0}", 7, 3, &v) == REC_INVALID && error_has(v, "NUL byte at column 6"), "raw NUL");
	jv_free(v);
	/* jq 1.6 would echo the input in its error; ours must not. */
	char big[5000];
	memset(big, 'z', sizeof big);
	big[0] = '{';
	big[sizeof big - 1] = 0;
	OK(parse(big, &v) == REC_INVALID && !error_has(v, "zzzzzzzz"), "parse error does not echo the input");
	jv_free(v);
	char *deep = malloc(20001);
	memset(deep, '[', 20000);
	deep[20000] = 0;
	OK(parse(deep, &v) == REC_INVALID, "20000-deep nesting is an invalid record");
	jv_free(v);
	free(deep);

	/* Kind-checked access never aborts. */
	parse("{\"s\":\"x\",\"n\":2,\"b\":true,\"a\":[1]}", &v);
	double d;
	bool b;
	OK(rec_str(v, "s", NULL) && !rec_str(v, "n", NULL) && !rec_str(v, "missing", NULL), "rec_str kinds");
	OK(rec_num(v, "n", &d) && d == 2 && !rec_num(v, "s", &d), "rec_num kinds");
	OK(rec_bool(v, "b", &b) && b && !rec_bool(v, "a", &b), "rec_bool kinds");
	jv arr = rec_get(v, "a");
	OK(!rec_str(arr, "x", NULL) && !rec_has(arr, "x"), "access on a non-object is safe");
	jv_free(arr);
	jv_free(v);

	/* Reader: records split across reads, a 3 MiB line, an over-long line. */
	int p[2];
	if (pipe(p))
		return 1;
	if (fork() == 0) {
		close(p[0]);
		const char *a = "{\"n\":1}\n\n{\"n\"";
		(void)!write(p[1], a, strlen(a));
		usleep(10000);
		(void)!write(p[1], ":2}\n{\"s\":\"", 10);
		char *chunk = malloc(1 << 20);
		memset(chunk, 'y', 1 << 20);
		for (int i = 0; i < 3; i++)
			(void)!write(p[1], chunk, 1 << 20);
		(void)!write(p[1], "\"}\n{\"t\":\"", 9);
		for (int i = 0; i < 6; i++)
			(void)!write(p[1], chunk, 1 << 20);
		(void)!write(p[1], "\"}\n{\"n\":3}", 10);
		_exit(0);
	}
	close(p[1]);
	struct rec_reader r;
	rec_reader_init(&r, p[0], 4 << 20);
	OK(rec_read(&r, &v) == REC_OK && rec_num(v, "n", &d) && d == 1 && r.lineno == 1, "first record");
	jv_free(v);
	OK(rec_read(&r, &v) == REC_OK && rec_num(v, "n", &d) && d == 2 && r.lineno == 3, "record split across reads, blank line counted");
	jv_free(v);
	size_t n = 0;
	OK(rec_read(&r, &v) == REC_OK && rec_str(v, "s", &n) && n == 3 << 20, "3 MiB line");
	jv_free(v);
	OK(rec_read(&r, &v) == REC_INVALID && error_has(v, "line 5: line of") && error_has(v, "exceeds the record limit of 4 MiB"), "6 MiB line over a 4 MiB limit");
	OK(r.cap < 12u << 20, "over-long line drained in bounded memory (%zu)", r.cap);
	jv_free(v);
	OK(rec_read(&r, &v) == REC_OK && rec_num(v, "n", &d) && d == 3 && r.lineno == 6, "last line without newline");
	jv_free(v);
	OK(rec_read(&r, &v) == REC_EOF, "EOF");
	rec_reader_free(&r);
	close(p[0]);
	DONE();
}
