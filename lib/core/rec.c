#define _GNU_SOURCE
#include "rec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"
#include "utf8.h"
#include "util.h"

void rec_reader_init(struct rec_reader *r, int fd, size_t max_line)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->max_line = max_line ? max_line : REC_DEFAULT_MAX_LINE;
}

void rec_reader_free(struct rec_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

ssize_t rec_fill(struct rec_reader *r)
{
	if (r->eof)
		return 0;
	/* Compact, then make room for at least 64 KiB more. */
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->len);
		r->start = 0;
	}
	if (r->cap - r->len < 65536) {
		size_t want = r->cap ? r->cap * 2 : 131072;
		while (want - r->len < 65536)
			want *= 2;
		r->buf = util_xrealloc(r->buf, want);
		r->cap = want;
	}
	ssize_t n;
	do
		n = read(r->fd, r->buf + r->len, r->cap - r->len);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		r->eof = true;
	if (n > 0)
		r->len += (size_t)n;
	return n;
}

/* The next complete line, or why there is none: REC_OK with *line and *len
 * (without the newline), REC_INVALID (over-long) with *out, REC_AGAIN,
 * REC_EOF. */
static enum rec_status next_line(struct rec_reader *r, const char **line, size_t *len, jv *out)
{
	for (;;) {
		char *p = r->buf + r->start;
		char *nl = r->len ? memchr(p, '\n', r->len) : NULL;
		if (r->skipping) {
			/* Drain an over-long line without keeping it. */
			size_t n = nl ? (size_t)(nl - p) : r->len;
			r->skipped += n;
			r->start += n;
			r->len -= n;
			if (!nl && !r->eof)
				return REC_AGAIN;
			if (nl) {
				r->start++;
				r->len--;
			}
			r->skipping = false;
			char sz[32], mx[32];
			*out = rec_invalid_line(r->lineno, "line of %s exceeds the record limit of %s",
						util_size_str(r->skipped, sz, sizeof sz),
						util_size_str(r->max_line, mx, sizeof mx));
			return REC_INVALID;
		}
		size_t linelen;
		if (nl)
			linelen = (size_t)(nl - p);
		else if (r->eof && r->len > 0)
			linelen = r->len; /* last line without a newline */
		else if (r->eof)
			return REC_EOF;
		else {
			if (r->len > r->max_line) {
				r->lineno++;
				r->skipping = true;
				r->skipped = 0;
				continue;
			}
			return REC_AGAIN;
		}
		r->lineno++;
		r->start += linelen + (nl ? 1 : 0);
		r->len -= linelen + (nl ? 1 : 0);
		if (linelen > r->max_line) {
			char sz[32], mx[32];
			*out = rec_invalid_line(r->lineno, "line of %s exceeds the record limit of %s",
						util_size_str(linelen, sz, sizeof sz),
						util_size_str(r->max_line, mx, sizeof mx));
			return REC_INVALID;
		}
		*line = p;
		*len = linelen;
		return REC_OK;
	}
}

enum rec_status rec_next(struct rec_reader *r, jv *out)
{
	for (;;) {
		const char *line;
		size_t len;
		enum rec_status st = next_line(r, &line, &len, out);
		if (st != REC_OK)
			return st;
		st = rec_parse_line(line, len, r->lineno, out);
		if (st != REC_AGAIN)
			return st;
		/* blank line: no record, keep going */
	}
}

enum rec_status rec_next_raw(struct rec_reader *r, const char **line, size_t *len, jv *out)
{
	for (;;) {
		enum rec_status st = next_line(r, line, len, out);
		if (st != REC_OK)
			return st;
		st = rec_check_line(*line, *len, r->lineno, out);
		if (st != REC_AGAIN)
			return st;
	}
}

enum rec_status rec_read(struct rec_reader *r, jv *out)
{
	for (;;) {
		enum rec_status st = rec_next(r, out);
		if (st != REC_AGAIN)
			return st;
		if (rec_fill(r) < 0)
			return REC_ERROR;
	}
}

/* A strict RFC 8259 syntax check that runs before libjq sees a line.
 * jq 1.6's parser leaks on some malformed input (a value right after a
 * value), accepts non-JSON such as `nan`, and has no column-accurate
 * messages; with this check jq only ever parses text known to be valid. */
#define JSON_MAX_DEPTH 128

struct jscan {
	const char *s, *end, *p;
	const char *err;
	int depth;
};

static void jws(struct jscan *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool jfail(struct jscan *j, const char *msg)
{
	if (!j->err)
		j->err = msg;
	return false;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool jhex4(struct jscan *j, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int h = j->p < j->end ? hexval(*j->p) : -1;
		if (h < 0)
			return jfail(j, "bad \\u escape (four hex digits)");
		v = v << 4 | (unsigned)h;
		j->p++;
	}
	*out = v;
	return true;
}

static bool jstring(struct jscan *j)
{
	j->p++; /* opening quote */
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p;
		if (c == '"') {
			j->p++;
			return true;
		}
		if (c < 0x20)
			return jfail(j, "control character in string (escape it)");
		if (c != '\\') {
			j->p++;
			continue;
		}
		j->p++;
		if (j->p >= j->end)
			break;
		char e = *j->p++;
		if (strchr("\"\\/bfnrt", e) && e)
			continue;
		if (e != 'u')
			return jfail(j, "unknown escape in string");
		unsigned u;
		if (!jhex4(j, &u))
			return false;
		if (u >= 0xDC00 && u <= 0xDFFF)
			return jfail(j, "lone low surrogate \\u escape");
		if (u >= 0xD800 && u <= 0xDBFF) {
			unsigned lo;
			if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
				return jfail(j, "high surrogate \\u escape without its low half");
			j->p += 2;
			if (!jhex4(j, &lo))
				return false;
			if (lo < 0xDC00 || lo > 0xDFFF)
				return jfail(j, "high surrogate \\u escape without its low half");
		}
	}
	return jfail(j, "unterminated string");
}

static bool jdigits(struct jscan *j)
{
	const char *start = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > start;
}

static bool jnumber(struct jscan *j)
{
	if (*j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!jdigits(j))
		return jfail(j, "bad number");
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!jdigits(j))
			return jfail(j, "bad number (digits must follow the point)");
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!jdigits(j))
			return jfail(j, "bad number (digits must follow the exponent)");
	}
	return true;
}

static bool jvalue(struct jscan *j);

static bool jcontainer(struct jscan *j, char close)
{
	if (++j->depth > JSON_MAX_DEPTH)
		return jfail(j, "nested more than 128 levels deep");
	j->p++;
	jws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return true;
	}
	for (;;) {
		jws(j);
		if (close == '}') {
			if (j->p >= j->end || *j->p != '"')
				return jfail(j, "expected a string key in object");
			if (!jstring(j))
				return false;
			jws(j);
			if (j->p >= j->end || *j->p != ':')
				return jfail(j, "expected ':' after an object key");
			j->p++;
		}
		if (!jvalue(j))
			return false;
		jws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			j->depth--;
			return true;
		}
		return jfail(j, close == '}' ? "expected ',' or '}' in object" : "expected ',' or ']' in array");
	}
}

static bool jliteral(struct jscan *j, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n))
		return jfail(j, "unexpected character (strings need double quotes)");
	j->p += n;
	return true;
}

static bool jvalue(struct jscan *j)
{
	jws(j);
	if (j->p >= j->end)
		return jfail(j, "unexpected end of line (value expected)");
	switch (*j->p) {
	case '{': return jcontainer(j, '}');
	case '[': return jcontainer(j, ']');
	case '"': return jstring(j);
	case 't': return jliteral(j, "true");
	case 'f': return jliteral(j, "false");
	case 'n': return jliteral(j, "null");
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return jnumber(j);
		return jfail(j, "unexpected character (strings need double quotes)");
	}
}

/* 0 if line is exactly one JSON value; else 1 (syntax, *msg and *col set)
 * or 2 (a second value follows). */
static int json_check(const char *line, size_t len, const char **msg, size_t *col)
{
	struct jscan j = { .s = line, .end = line + len, .p = line };
	if (!jvalue(&j)) {
		*msg = j.err;
		*col = (size_t)(j.p - line) + 1;
		return 1;
	}
	jws(&j);
	if (j.p < j.end) {
		*col = (size_t)(j.p - line) + 1;
		struct jscan rest = { .s = line, .end = line + len, .p = j.p };
		if (jvalue(&rest))
			return 2;
		*msg = "unexpected text after the value";
		return 1;
	}
	return 0;
}

enum rec_status rec_check_line(const char *line, size_t len, unsigned long lineno, jv *out)
{
	size_t i = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	if (i == len)
		return REC_AGAIN;
	const char *nul = memchr(line, 0, len);
	if (nul) {
		*out = rec_invalid_line(lineno, "NUL byte at column %zu (write it as \\u0000 inside a string)",
					(size_t)(nul - line) + 1);
		return REC_INVALID;
	}
	size_t bad;
	if (!utf8_valid(line, len, &bad)) {
		*out = rec_invalid_line(lineno, "invalid UTF-8 at byte %zu", bad + 1);
		return REC_INVALID;
	}
	if (len > (size_t)INT32_MAX) {
		*out = rec_invalid_line(lineno, "line too long");
		return REC_INVALID;
	}
	const char *msg;
	size_t col;
	switch (json_check(line, len, &msg, &col)) {
	case 1:
		*out = rec_invalid_line(lineno, "not valid JSON: %s at column %zu", msg, col);
		return REC_INVALID;
	case 2:
		*out = rec_invalid_line(lineno, "more than one JSON value on the line (one object per line; the second starts at column %zu)", col);
		return REC_INVALID;
	}
	if (line[i] != '{') {
		static const struct { char c; const char *kind; } kinds[] = {
			{ '[', "array" }, { '"', "string" }, { 't', "boolean" }, { 'f', "boolean" }, { 'n', "null" },
		};
		const char *kind = "number";
		for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
			if (line[i] == kinds[k].c)
				kind = kinds[k].kind;
		*out = rec_invalid_line(lineno, "expected a JSON object, got %s", kind);
		return REC_INVALID;
	}
	return REC_OK;
}

enum rec_status rec_parse_line(const char *line, size_t len, unsigned long lineno, jv *out)
{
	enum rec_status st = rec_check_line(line, len, lineno, out);
	if (st != REC_OK)
		return st;
	/* Known to be one valid object of bounded depth: jq cannot fail here
	 * short of memory, and never sees text it would leak on. */
	jv_parser *p = jv_parser_new(0);
	jv_parser_set_buf(p, line, (int)len, 0);
	jv v = jv_parser_next(p);
	jv_parser_free(p);
	if (!jv_is_valid(v)) {
		jv_free(v);
		*out = rec_invalid_line(lineno, "not valid JSON");
		return REC_INVALID;
	}
	*out = v;
	return REC_OK;
}

jv rec_invalid_line(unsigned long lineno, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	jv o = jv_object();
	o = jv_object_set(o, jv_string("status"), jv_string(STATUS(invalid)));
	o = jv_object_set(o, jv_string("error"), jv_string_fmt("line %lu: %s", lineno, msg));
	o = jv_object_set(o, jv_string("line"), jv_number((double)lineno));
	return o;
}

jv rec_make_invalid(jv obj, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (jv_get_kind(obj) != JV_KIND_OBJECT) {
		jv_free(obj);
		obj = jv_object();
	}
	obj = jv_object_set(obj, jv_string("status"), jv_string(STATUS(invalid)));
	return jv_object_set(obj, jv_string("error"), jv_string(msg));
}

jv rec_get(jv obj, const char *key)
{
	if (jv_get_kind(obj) != JV_KIND_OBJECT)
		return jv_invalid();
	return jv_object_get(jv_copy(obj), jv_string(key));
}

bool rec_has(jv obj, const char *key)
{
	if (jv_get_kind(obj) != JV_KIND_OBJECT)
		return false;
	return jv_object_has(jv_copy(obj), jv_string(key));
}

bool rec_raster_mime(const char *mime)
{
	static const char *const raster[] = { "image/png", "image/jpeg", "image/gif", "image/webp" };
	for (size_t i = 0; mime && i < sizeof raster / sizeof *raster; i++)
		if (!strcmp(mime, raster[i]))
			return true;
	return false;
}

const char *rec_kind(jv v)
{
	switch (jv_get_kind(v)) {
	case JV_KIND_INVALID: return "missing";
	case JV_KIND_NULL: return "null";
	case JV_KIND_FALSE:
	case JV_KIND_TRUE: return "boolean";
	case JV_KIND_NUMBER: return "number";
	case JV_KIND_STRING: return "string";
	case JV_KIND_ARRAY: return "array";
	case JV_KIND_OBJECT: return "object";
	}
	return "unknown";
}

const char *rec_str(jv obj, const char *key, size_t *len)
{
	jv v = rec_get(obj, key);
	if (jv_get_kind(v) != JV_KIND_STRING) {
		jv_free(v);
		return NULL;
	}
	/* The object still holds a reference, so the bytes outlive v. */
	const char *s = jv_string_value(v);
	if (len)
		*len = (size_t)jv_string_length_bytes(jv_copy(v));
	jv_free(v);
	return s;
}

bool rec_num(jv obj, const char *key, double *out)
{
	jv v = rec_get(obj, key);
	bool ok = jv_get_kind(v) == JV_KIND_NUMBER;
	if (ok)
		*out = jv_number_value(v);
	jv_free(v);
	return ok;
}

bool rec_bool(jv obj, const char *key, bool *out)
{
	jv v = rec_get(obj, key);
	jv_kind k = jv_get_kind(v);
	jv_free(v);
	if (k != JV_KIND_TRUE && k != JV_KIND_FALSE)
		return false;
	*out = k == JV_KIND_TRUE;
	return true;
}

bool rec_has_status(jv obj)
{
	return rec_str(obj, "status", NULL) != NULL;
}

char *rec_dump(jv v, size_t *len)
{
	jv s = jv_dump_string(v, 0);
	size_t n = (size_t)jv_string_length_bytes(jv_copy(s));
	char *out = util_xalloc(n + 2);
	memcpy(out, jv_string_value(s), n);
	out[n] = '\n';
	out[n + 1] = 0;
	jv_free(s);
	*len = n + 1;
	return out;
}

int rec_filter(struct rec_reader *r, rec_filter_fn *fn, void *arg)
{
	bool bad = false;
	for (;;) {
		jv rec;
		enum rec_status st = rec_read(r, &rec);
		if (st == REC_EOF)
			return bad ? EXIT_RECORDS : EXIT_OK;
		if (st == REC_ERROR) {
			util_warn("reading input: %s", strerror(errno));
			return EXIT_IO;
		}
		if (!rec_write(fn(rec, st, r->lineno, &bad, arg)))
			return EXIT_IO;
	}
}

bool rec_write(jv v)
{
	size_t n;
	char *s = rec_dump(v, &n);
	bool ok = fwrite(s, 1, n, stdout) == n && fflush(stdout) == 0;
	free(s);
	return ok;
}

/* (one stage's list, each connection tagged with where, or not) */
static jv egress_add(jv all, jv list, const char *stage)
{
	if (jv_get_kind(list) == JV_KIND_ARRAY)
		jv_array_foreach(list, i, c) {
			if (jv_get_kind(c) != JV_KIND_OBJECT) {
				jv_free(c);
				continue;
			}
			all = jv_array_append(all, stage ? jv_object_set(c, jv_string("stage"), jv_string(stage)) : c);
		}
	jv_free(list);
	return all;
}

jv rec_egress(jv rec)
{
	jv all = jv_array();
	if (jv_get_kind(rec) != JV_KIND_OBJECT)
		return all;
	jv comp = rec_get(rec, "compile");
	if (jv_get_kind(comp) == JV_KIND_OBJECT)
		all = egress_add(all, rec_get(comp, "egress"), "compile");
	jv_free(comp);
	all = egress_add(all, rec_get(rec, "egress"), NULL);
	/* check-names: a result's tests, each with its own egress */
	jv tests = rec_get(rec, "tests");
	if (jv_get_kind(tests) == JV_KIND_ARRAY)
		jv_array_foreach(tests, i, t) {
			if (jv_get_kind(t) == JV_KIND_OBJECT) {
				char stage[32];
				snprintf(stage, sizeof stage, "test %d", i + 1);
				all = egress_add(all, rec_get(t, "egress"), stage);
			}
			jv_free(t);
		}
	jv_free(tests);
	return all;
}
