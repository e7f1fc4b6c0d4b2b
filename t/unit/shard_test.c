#define _GNU_SOURCE
/* Unit tests for lib/batch: shard placement pinned to values computed
 * outside sbx (Python's hashlib), so that no later change can move a
 * request to another shard between the split and the merge of a batch;
 * generated ids; shard file names; the line reader's offsets, torn and
 * over-long lines; and the ledger's choice among several results. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger.h"
#include "rec.h"
#include "shard.h"
#include "tap.h"

static jv obj(const char *json)
{
	jv v = jv_parse(json);
	if (jv_get_kind(v) != JV_KIND_OBJECT) {
		fprintf(stderr, "bad fixture %s\n", json);
		exit(2);
	}
	return v;
}

static char *key_of(const char *json)
{
	jv o = obj(json);
	bool bad = false;
	char *k = shard_key(o, &bad);
	jv_free(o);
	return k;
}

/* A file holding text, opened for reading. */
static int file_with(const char *text, size_t len)
{
	char path[] = "/tmp/shard_test.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0)
		exit(2);
	unlink(path);
	return fd;
}

static void test_placement(void)
{
	/* sha256(text)[:8] big-endian mod K, from hashlib */
	static const struct { const char *id; unsigned k, want; } cases[] = {
		{ "sr1", 4, 1 }, { "sr2", 4, 1 }, { "sr3", 4, 0 }, { "sx", 4, 0 },
		{ "sr1", 7, 1 }, { "sr2", 7, 3 }, { "sr3", 7, 5 }, { "sr1", 10000, 8141 },
		{ "n42", 7, 2 }, { "s42", 7, 2 }, { "sx", 10000, 9876 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		OK(shard_of(cases[i].id, cases[i].k) == cases[i].want, "shard_of(%s, %u) = %u", cases[i].id, cases[i].k,
		   cases[i].want);
	OK(shard_of("sr1", 1) == 0, "one shard holds everything");
}

static void test_keys(void)
{
	char *k;
	OK((k = key_of("{\"id\":\"r1\"}")) && !strcmp(k, "sr1"), "a string id's key");
	free(k);
	OK((k = key_of("{\"id\":42}")) && !strcmp(k, "n42"), "a number id's key");
	free(k);
	OK((k = key_of("{\"id\":1.5}")) && !strcmp(k, "n1.5"), "a fractional number id's key");
	free(k);
	OK(!key_of("{\"code\":\"x\"}"), "no id, no key");
	jv o = obj("{\"id\":[1]}");
	bool bad = false;
	OK(!shard_key(o, &bad) && bad, "an array id is bad");
	jv_free(o);
	/* jv_string_value would end "a\u0000b" at "a": the same key as "a",
	 * "a\u0000c", and placed by "a" */
	o = obj("{\"id\":\"a\\u0000b\"}");
	bad = false;
	OK(!shard_key(o, &bad) && bad, "a string id holding a NUL is bad, not \"a\"");
	jv_free(o);
	jv id = shard_key_id("n42");
	OK(jv_get_kind(id) == JV_KIND_NUMBER && jv_number_value(id) == 42, "a number key gives the number back");
	jv_free(id);
	id = shard_key_id("sr1");
	OK(jv_get_kind(id) == JV_KIND_STRING && !strcmp(jv_string_value(id), "r1"), "a string key gives the string");
	jv_free(id);

	const char *line = "{\"language\":\"bash\",\"code\":\"echo same\"}";
	k = shard_auto_key(line, strlen(line), 1);
	OK(!strcmp(k, "ssbx-4af8196c4e1c3890"), "a generated id is sbx- and 16 hex digits of the line's SHA-256 (%s)", k);
	free(k);
	char crlf[128];
	snprintf(crlf, sizeof crlf, "%s\r", line);
	k = shard_auto_key(crlf, strlen(crlf), 3);
	OK(!strcmp(k, "ssbx-4af8196c4e1c3890-3"), "a trailing CR is not part of the line; the third copy is -3");
	free(k);

	struct ledger l;
	ledger_init(&l, 4);
	const char *why = NULL;
	jv r = obj(line);
	char *a = ledger_request_key(&l, r, line, strlen(line), &why);
	char *b = ledger_request_key(&l, r, line, strlen(line), &why);
	OK(!strcmp(a, "ssbx-4af8196c4e1c3890") && !strcmp(b, "ssbx-4af8196c4e1c3890-2"), "copies of a line count up");
	free(a);
	free(b);
	jv_free(r);
	r = obj("{\"id\":{}}");
	OK(!ledger_request_key(&l, r, "x", 1, &why) && why && strstr(why, "neither a string nor a number"),
	   "an object id is named");
	jv_free(r);
	r = obj("{\"id\":\"a\\u0000b\"}");
	OK(!ledger_request_key(&l, r, "x", 1, &why) && why && strstr(why, "holds a NUL"), "so is a NUL in a string id");
	jv_free(r);
	ledger_free(&l);
}

static void test_names(void)
{
	static const struct { const char *name; bool ok; unsigned i, k; } cases[] = {
		{ "shard-0-of-4.jsonl", true, 0, 4 },      { "dir/x/shard-3-of-4.jsonl", true, 3, 4 },
		{ "shard-9999-of-10000.jsonl", true, 9999, 10000 },
		{ "shard-4-of-4.jsonl", false, 0, 0 },     { "shard-01-of-4.jsonl", false, 0, 0 },
		{ "shard-+1-of-4.jsonl", false, 0, 0 },    { "shard-1-of-0.jsonl", false, 0, 0 },
		{ "shard-1-of-4.json", false, 0, 0 },      { "shard-1-of-4.jsonl.partial", false, 0, 0 },
		{ "shard-0-of-10001.jsonl", false, 0, 0 }, { "shard--1-of-4.jsonl", false, 0, 0 },
		{ "shard-99999999999-of-4.jsonl", false, 0, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		unsigned a = 77, b = 77;
		bool got = shard_parse_name(cases[i].name, &a, &b);
		OK(got == cases[i].ok && (!got || (a == cases[i].i && b == cases[i].k)), "%s %s", cases[i].name,
		   cases[i].ok ? "parses" : "is refused");
	}
}

static void test_lines(void)
{
	const char text[] = "{\"a\":1}\n\n{\"b\":2}\r\n0123456789012345678901234567890123456789\n{\"c\":3}\n{\"torn";
	int fd = file_with(text, sizeof text - 1);
	struct ledger_file f;
	ledger_file_init(&f, fd, 20);
	struct ledger_line l;
	OK(ledger_file_next(&f, &l) == 1 && l.len == 7 && l.off == 0 && !memcmp(l.text, "{\"a\":1}", 7) && !l.torn,
	   "a line and its offset");
	OK(ledger_file_next(&f, &l) == 1 && l.len == 0 && l.lineno == 2, "a blank line is a line");
	OK(ledger_file_next(&f, &l) == 1 && l.len == 8 && l.off == 9 && l.text[7] == '\r', "CR stays with its line");
	OK(ledger_file_next(&f, &l) == 1 && !l.text && l.len == 40 && l.off == 18, "an over-long line: no text, its length");
	OK(ledger_file_next(&f, &l) == 1 && l.len == 7 && l.off == 59 && l.lineno == 5, "the line after it");
	OK(ledger_file_next(&f, &l) == 1 && l.torn && l.len == 6, "the unterminated last line is torn");
	OK(ledger_file_next(&f, &l) == 0, "then the end");
	ledger_file_free(&f);
	close(fd);

	/* A line far over the limit and over several reads is drained. */
	size_t big = 300000;
	char *t = malloc(big + 20);
	memset(t, 'x', big);
	memcpy(t + big, "\n{}\n", 4);
	fd = file_with(t, big + 4);
	ledger_file_init(&f, fd, 1000);
	OK(ledger_file_next(&f, &l) == 1 && !l.text && l.len == big, "a 300 kB line with a 1 kB limit");
	OK(ledger_file_next(&f, &l) == 1 && l.len == 2 && l.off == (off_t)big + 1, "and the line after it, in place");
	ledger_file_free(&f);
	close(fd);
	free(t);

	/* An fd read into already (a stdin): offsets are still the file's,
	 * since they are given to pread. */
	fd = file_with(text, sizeof text - 1);
	if (lseek(fd, 9, SEEK_SET) != 9)
		exit(2);
	ledger_file_init(&f, fd, 20);
	OK(ledger_file_next(&f, &l) == 1 && l.off == 9 && l.len == 8 && l.lineno == 1,
	   "read from offset 9, the first line is at 9");
	OK(ledger_file_next(&f, &l) == 1 && !l.text && l.off == 18, "and the next ones where the file has them");
	ledger_file_free(&f);
	close(fd);
}

static enum ledger_offer offer(struct ledger *l, const char *json, int file, unsigned long line, long *idx)
{
	jv r = obj(json);
	enum ledger_offer o = ledger_offer(l, r, file, (off_t)line * 100, 10, line, idx);
	jv_free(r);
	return o;
}

static void test_ledger(void)
{
	struct ledger l;
	ledger_init(&l, 4);
	jv req = obj("{\"id\":\"a\",\"code\":\"print(1)\"}");
	OK(ledger_add(&l, strdup("sa"), 1, req) == 0, "the first request");
	OK(ledger_add(&l, strdup("sa"), 2, req) == -1, "the same id again is the earlier one's");
	jv_free(req);
	req = obj("{\"id\":\"b\",\"code\":\"x\",\"stdin\":\"in\"}");
	OK(ledger_add(&l, strdup("sb"), 3, req) == 1, "a second request");
	jv_free(req);
	char buf[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(buf, sizeof buf, "sk%d", i);
		jv e = jv_object();
		ledger_add(&l, strdup(buf), (unsigned long)i + 10, e);
		jv_free(e);
	}
	OK(l.n == 5002 && ledger_find(&l, "sk4999") == 5001 && ledger_find(&l, "sa") == 0 && ledger_find(&l, "sz") == -1,
	   "5000 more keys: the table grew and finds them all");

	long idx = -1;
	OK(offer(&l, "{\"id\":\"a\",\"code\":\"print(1)\",\"started_at\":\"2026-12-01T10:00:00Z\"}", 0, 1, &idx) ==
		   LEDGER_FIRST && idx == 0,
	   "a's first result");
	OK(offer(&l, "{\"id\":\"a\",\"code\":\"print(1)\",\"started_at\":\"2026-12-01T09:00:00Z\"}", 1, 1, &idx) ==
		   LEDGER_OLDER && l.req[0].file == 0,
	   "an earlier start of the same attempt loses");
	OK(offer(&l, "{\"id\":\"a\",\"code\":\"print(1)\",\"started_at\":\"2026-12-01T08:00:00Z\",\"shard\":{\"attempt\":2}}",
		 1, 5, &idx) == LEDGER_NEWER && l.req[0].file == 1 && l.req[0].rline == 5,
	   "a later attempt wins whatever its clock says");
	OK(offer(&l, "{\"id\":\"a\",\"code\":\"print(1)\",\"started_at\":\"2026-12-01T08:00:00Z\",\"shard\":{\"attempt\":2}}",
		 2, 7, &idx) == LEDGER_NEWER && l.req[0].file == 2,
	   "a tie goes to the one offered last");
	OK(offer(&l, "{\"id\":\"a\",\"code\":\"print(1)\",\"shard\":{\"attempt\":\"9\"}}", 3, 1, &idx) == LEDGER_OLDER,
	   "a string attempt counts as none");
	OK(offer(&l, "{\"id\":\"a\",\"code\":\"print(2)\",\"shard\":{\"attempt\":99}}", 3, 2, &idx) == LEDGER_FOREIGN &&
		   l.req[0].file == 2,
	   "other code under the same id is foreign and never wins");
	OK(offer(&l, "{\"id\":\"b\",\"code\":\"x\"}", 0, 9, &idx) == LEDGER_FOREIGN, "so is other stdin");
	OK(offer(&l, "{\"id\":\"b\",\"code\":\"x\",\"stdin\":\"in\"}", 0, 9, &idx) == LEDGER_FIRST, "the right stdin");
	OK(offer(&l, "{\"id\":\"zz\",\"code\":\"x\"}", 0, 10, &idx) == LEDGER_UNKNOWN, "an id no request has");
	OK(offer(&l, "{\"id\":null}", 0, 11, &idx) == LEDGER_NOID, "a null id");
	OK(offer(&l, "{\"code\":\"x\"}", 0, 12, &idx) == LEDGER_NOID, "no id");
	OK(offer(&l, "{\"id\":\"k3\"}", 0, 13, &idx) == LEDGER_FIRST && idx == 5, "a request without code takes results without");
	OK(l.req[0].results == 5, "a's results counted, the foreign one not");
	/* not final: a cancelled or internal_error result loses to any other */
	OK(offer(&l, "{\"id\":\"k7\",\"status\":\"cancelled\",\"shard\":{\"attempt\":1}}", 0, 20, &idx) == LEDGER_NOT_FINAL &&
		   !l.req[9].final && l.req[9].file == 0,
	   "a cancelled result alone is kept, as not final");
	OK(offer(&l, "{\"id\":\"k7\",\"status\":\"success\"}", 1, 21, &idx) == LEDGER_FIRST && l.req[9].final &&
		   l.req[9].file == 1,
	   "a final result of an older attempt beats it");
	OK(offer(&l, "{\"id\":\"k7\",\"status\":\"internal_error\",\"shard\":{\"attempt\":9}}", 2, 22, &idx) ==
		   LEDGER_NOT_FINAL && l.req[9].file == 1,
	   "and a later internal_error does not take its place");
	char *nk = key_of("{\"id\":1.0}");
	OK(nk && !strcmp(nk, "n1"), "1.0 and 1 are one number id, whatever jq keeps of the literal");
	free(nk);
	nk = key_of("{\"id\":0.1}");
	OK(nk && !strcmp(nk, "n0.10000000000000001"), "a fraction's key reads back as the same double");
	free(nk);
	ledger_free(&l);
}

int main(void)
{
	test_placement();
	test_keys();
	test_names();
	test_lines();
	test_ledger();
	DONE();
}
