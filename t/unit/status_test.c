#define _GNU_SOURCE
/* Unit tests for lib/core/status: the table is what the contract says.
 * The README's table of statuses, doc/contract.md's list of them, the
 * tests' statuses and which status each verdict makes are read from the
 * documents and held against status.h's rows, both ways; a status added
 * to one and not the other fails here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "tap.h"

/* The file next to the configuration the runner passes (etc/..), else the
 * working directory's. */
static char *slurp(const char *conf, const char *rel)
{
	char path[4096];
	const char *slash = conf ? strrchr(conf, '/') : NULL;
	if (slash)
		snprintf(path, sizeof path, "%.*s/../%s", (int)(slash - conf), conf, rel);
	else
		snprintf(path, sizeof path, "%s", rel);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The line of text that starts with prefix (after the start of a line). */
static char *line_of(char *text, const char *prefix, char *out, size_t len)
{
	for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, prefix, strlen(prefix))) {
			size_t n = strcspn(p, "\n");
			snprintf(out, len, "%.*s", (int)n, p);
			return out;
		}
	return NULL;
}

/* The `quoted` names in s[0, end), in order, as "a b c" in out. */
static const char *names(const char *s, const char *end, char *out, size_t len)
{
	size_t o = 0;
	out[0] = 0;
	for (const char *p = strchr(s, '`'); p && p < end; p = strchr(p, '`')) {
		const char *q = strchr(p + 1, '`');
		if (!q || q > end)
			break;
		o += (size_t)snprintf(out + o, len - o, "%s%.*s", o ? " " : "", (int)(q - p - 1), p + 1);
		p = q + 1;
	}
	return out;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The words of s ("b a c") in order ("a b c"), in out; s is cut up. */
static const char *sort_words(char *s, char *out, size_t len)
{
	char *w[64];
	size_t n = 0, o = 0;
	for (char *p = strtok(s, " "); p && n < 64; p = strtok(NULL, " "))
		w[n++] = p;
	qsort(w, n, sizeof *w, by_name);
	out[0] = 0;
	for (size_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%s", i ? " " : "", w[i]);
	return out;
}

static const char *table_statuses(char *out, size_t len)
{
	size_t o = 0;
	for (int i = 0; i < STATUS_NSTATUSES; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%s", i ? " " : "", status_name(i));
	return out;
}

/* README: the rows of "### Statuses", each "| `name` | meaning |". */
static void readme(char *text)
{
	char *sec = text ? strstr(text, "\n### Statuses\n") : NULL;
	OK(sec, "README.md has a Statuses section");
	if (!sec)
		return;
	char *end = strstr(sec + 1, "\n#");
	char got[512], want[512];
	size_t o = 0;
	got[0] = 0;
	for (char *p = sec; p && (!end || p < end); p = strchr(p + 1, '\n'))
		if (!strncmp(p, "\n| `", 4)) {
			char *q = strchr(p + 4, '`');
			o += (size_t)snprintf(got + o, sizeof got - o, "%s%.*s", o ? " " : "", (int)(q - p - 4), p + 4);
		}
	OK(!strcmp(got, table_statuses(want, sizeof want)), "README's statuses are the table's: %s", got);
}

static void contract(char *text)
{
	char line[4096], got[1024], want[512];
	OK(text && line_of(text, "| `status` | `success`", line, sizeof line), "doc/contract.md lists the statuses");
	if (!text || !line_of(text, "| `status` | `success`", line, sizeof line))
		return;
	char *cell = strstr(line + 2, "| ") + 2;
	names(cell, cell + strlen(cell), got, sizeof got);
	OK(!strcmp(got, table_statuses(want, sizeof want)), "the contract's statuses are the table's: %s", got);

	/* A test's statuses: the rows that can be one (SA_TEST), both ways. */
	char *t = line_of(text, "| `tests` | one object per test", line, sizeof line) ? strstr(line, "`status` (") : NULL;
	OK(t, "the contract lists a test's statuses");
	if (t) {
		/* The list ends before the words on when a test is skipped. */
		char *end = strchr(t, ')'), *when = strstr(t, " when ");
		if (when && when < end)
			end = when;
		names(t + 10, end, got, sizeof got);
		size_t o = 0;
		for (int i = 0; i < STATUS_N && o < sizeof want; i++)
			if (status_as(i) & SA_TEST)
				o += (size_t)snprintf(want + o, sizeof want - o, "%s%s", o ? " " : "", status_name(i));
		char sorted_got[1100], sorted_want[1100];
		OK(!strcmp(sort_words(got, sorted_got, sizeof sorted_got), sort_words(want, sorted_want, sizeof sorted_want)),
		   "a test's statuses in the contract are the rows a test can have: %s", sorted_got);
	}

	/* The status a verdict makes: "`S` for `V` and `W` (...); `T`, `U` as
	 * the deciding test's; ..." */
	OK(line_of(text, "| `status` | `success` for", line, sizeof line), "the contract says the status of each verdict");
	int said[STATUS_N] = { 0 };
	bool agree = true;
	for (char *seg = strtok(strchr(line + 2, '|') + 1, ";"); seg; seg = strtok(NULL, ";")) {
		char *fr = strstr(seg, " for ");
		char st_name[512], v[512];
		names(seg, fr ? fr : seg + strlen(seg), v, sizeof v);
		if (fr) {
			snprintf(st_name, sizeof st_name, "%s", v);
			names(fr, seg + strlen(seg), v, sizeof v);
		}
		char *save = NULL;
		for (char *w = strtok_r(v, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
			int vi = status_find(w), si = status_find(fr ? st_name : w);
			if (vi < 0 || si < 0 || (int)status_of_verdict(vi) != si) {
				agree = false;
				printf("# the contract: %s makes %s; the table: %s\n", w, fr ? st_name : w,
				       vi < 0 ? "no such row" : status_name(status_of_verdict(vi)));
			}
			if (vi >= 0)
				said[vi] = 1;
		}
	}
	OK(agree, "each verdict the contract names makes the status the table says");
	bool every = true;
	for (int i = STATUS_NSTATUSES; i < STATUS_N; i++)
		if (i < STATUS_passed && !said[i]) {
			every = false;
			printf("# the contract does not say what %s makes\n", status_name(i));
		}
	OK(every, "the contract says what each verdict makes");
}

int main(int argc, char **argv)
{
	/* The table itself. */
	OK(status_find(STATUS(internal_error)) == STATUS_internal_error && status_find("nope") < 0 && status_find(NULL) < 0,
	   "find by name");
	OK(status_known("rejected") && !status_known("accepted") && !status_known("passed"), "statuses and verdicts apart");
	OK(status_is("accepted", STF_OK) && status_is("wrong_answer", STF_RAN) && !status_is("wrong_answer", STF_OK),
	   "a verdict means what its status means");
	OK(status_is("no such", STF_RAN | STF_RATED) && !status_is(NULL, STF_CALL | STF_AGAIN | STF_OK),
	   "a name of no row ran and was rated, no more");
	char want[512];
	OK(!strcmp(status_list(), "success, error, rejected, timeout, memory_limit, compile_error, invalid, internal_error, cancelled"),
	   "the list for messages: %s", table_statuses(want, sizeof want));

	const char *conf = argc > 1 ? argv[1] : NULL;
	char *text = slurp(conf, "README.md");
	readme(text);
	free(text);
	text = slurp(conf, "doc/contract.md");
	contract(text);
	free(text);
	DONE();
}
