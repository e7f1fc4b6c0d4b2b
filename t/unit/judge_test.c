#define _GNU_SOURCE
/* Unit tests for lib/judge's comparisons: each mode's notion of equal, the
 * first difference it reports, and the edges (empty outputs, CRLF, a
 * missing final newline, numbers that are not finite, lone tokens), and a
 * property: every mode finds a text equal to itself. */
#include <stdlib.h>
#include <string.h>

#include "judge.h"
#include "tap.h"

static struct judge_cmp mode(const char *s)
{
	struct judge_cmp m;
	char why[200];
	if (!judge_cmp_parse(s, &m, why, sizeof why))
		abort();
	return m;
}

/* Equal under mode s? */
static bool same(const char *s, const char *exp, const char *got)
{
	struct judge_cmp m = mode(s);
	jv d = judge_compare(&m, exp, strlen(exp), got, strlen(got));
	bool eq = jv_get_kind(d) == JV_KIND_NULL;
	jv_free(d);
	return eq;
}

/* The difference as compact JSON, for comparing with a literal. */
static bool diff_is(const char *s, const char *exp, const char *got, const char *want)
{
	struct judge_cmp m = mode(s);
	jv d = judge_compare(&m, exp, strlen(exp), got, strlen(got));
	jv w = jv_parse(want);
	bool ok = jv_equal(d, w);
	if (!ok) {
		jv t = jv_dump_string(judge_compare(&m, exp, strlen(exp), got, strlen(got)), 0);
		printf("#   got %s\n", jv_string_value(t));
		jv_free(t);
	}
	return ok;
}

int main(void)
{
	char why[200];
	struct judge_cmp m;
	OK(judge_cmp_parse("float:1e-9", &m, why, sizeof why) && m.mode == JM_FLOAT && m.eps == 1e-9, "float:1e-9 parses");
	OK(!judge_cmp_parse("float:", &m, why, sizeof why) && !judge_cmp_parse("float:-1", &m, why, sizeof why) &&
		   !judge_cmp_parse("float:1", &m, why, sizeof why) && !judge_cmp_parse("float:nan", &m, why, sizeof why) &&
		   !judge_cmp_parse("float:1e-3x", &m, why, sizeof why),
	   "float:EPS needs a number in [0, 1)");
	OK(!judge_cmp_parse("Trim", &m, why, sizeof why) && strstr(why, "\"Trim\""), "modes are lower case, the error names it");

	OK(same("trim", "a\nb\n", "a  \r\nb"), "trim: trailing spaces, CR and the final newline do not matter");
	OK(same("trim", "", "\n\n  \n") && same("trim", "x\n\n\n", "x"), "trim: trailing empty lines do not matter");
	OK(!same("trim", "a b", "a  b") && !same("trim", " a", "a"), "trim: spaces inside and leading spaces do");
	OK(!same("trim", "a\n\nb", "a\nb"), "trim: an empty line inside does");
	OK(diff_is("trim", "a\nb\nc", "a\nB\nc", "{\"line\":2,\"expected\":\"b\",\"got\":\"B\"}"), "trim: the first differing line");
	OK(diff_is("trim", "a", "a\nextra", "{\"line\":2,\"expected\":null,\"got\":\"extra\"}"), "trim: extra output");
	OK(diff_is("trim", "a\nb", "a", "{\"line\":2,\"expected\":\"b\",\"got\":null}"), "trim: missing output");

	OK(same("exact", "a\n", "a\n") && !same("exact", "a\n", "a") && !same("exact", "a\n", "a\r\n"), "exact: byte for byte");
	OK(diff_is("exact", "ab\ncd\n", "ab\ncx\n", "{\"line\":2,\"column\":2,\"expected\":\"cd\\n\",\"got\":\"cx\\n\"}"),
	   "exact: line and column");
	OK(diff_is("exact", "ab", "", "{\"line\":1,\"column\":1,\"expected\":\"ab\",\"got\":null}"), "exact: nothing printed");

	OK(same("tokens", "1 2\n3", "  1\t2 3\r\n") && !same("tokens", "1 2", "12"), "tokens: whitespace separates, nothing else");
	OK(diff_is("tokens", "1 2 3", "1\n2\n4", "{\"token\":3,\"line\":3,\"expected\":\"3\",\"got\":\"4\"}"), "tokens: index and line");
	OK(same("tokens", "", " \n"), "tokens: none on either side");

	OK(same("float:1e-6", "0.333333", "0.3333333333") && !same("float:1e-6", "0.3334", "0.3333333"), "float: absolute");
	OK(same("float:1e-6", "2000000000", "2000000001") && !same("float:1e-9", "2000000000", "2000000010"), "float: relative");
	OK(same("float:1e-6", "nan inf x", "nan inf x") && !same("float:1e-6", "inf", "1e308"), "float: non-finite compare as text");
	OK(!same("float:0.5", "1", "1abc") && same("float:0", "1.0", "1"), "float: a number is the whole token");
	OK(same("float:1e-6", "-0", "0") && same("float:1e-6", "1e-7", "-1e-7"), "float: signs within the tolerance");

	/* NUL is output like any other byte, never whitespace, never the end
	 * of a number. */
	{
		struct judge_cmp tr = mode("trim"), fl = mode("float:1e-9");
		jv d = judge_compare(&tr, "42", 2, "42\0\0\n\0", 6);
		OK(jv_get_kind(d) == JV_KIND_OBJECT, "trim: NUL bytes are not trailing whitespace");
		jv_free(d);
		d = judge_compare(&fl, "42 7", 4, "42\0WRONG 7", 11);
		OK(jv_get_kind(d) == JV_KIND_OBJECT, "float: a token with a NUL is not a number");
		jv_free(d);
	}
	OK(!same("float:0.5", "42", "0x2A") && !same("float:0.5", "1", "1e") && same("float:0.5", "1", "1.2e0"),
	   "float: decimal numbers only (no hex), whole tokens");
	/* Every mode finds any text equal to itself. */
	static const char *const modes[] = { "exact", "trim", "tokens", "float:1e-9" };
	static const char *const texts[] = { "", "\n", "a", "1 2.5\r\n-3e4 x\n\n", "\t \f\v", "Ω\xff\x00z" };
	bool all = true;
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
			all &= same(modes[i], texts[t], texts[t]);
	OK(all, "every mode: a text equals itself");
	/* Bytes that are not UTF-8 come back repaired, never aborting jv. */
	struct judge_cmp ex = mode("exact");
	jv d = judge_compare(&ex, "\xff\xfe", 2, "\xc3", 1);
	jv got = jv_get_kind(d) == JV_KIND_OBJECT ? jv_object_get(jv_copy(d), jv_string("got")) : jv_invalid();
	OK(jv_get_kind(got) == JV_KIND_STRING, "invalid UTF-8 in a difference is repaired");
	jv_free(got);
	jv_free(d);
	DONE();
}
