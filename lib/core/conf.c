/* conf: the parser: the lexer, conf_key.h's table as struct key (the
 * limits' keys made from limit.h's), values assigned and checked,
 * sections, defaults and conf_free.  The language sections' checks and
 * lookups are conf_lang.c's; the file's place, the user's state and the
 * host ids conf_host.c's. */
#define _GNU_SOURCE
#include "conf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_int.h"
#include "hostpat.h"
#include "utf8.h"
#include "util.h"

#ifndef SBX_STATEDIR
#define SBX_STATEDIR "/var/lib/sbx"
#endif

#define CONF_MAX_SIZE (1u << 20)

/* ---- schema ---------------------------------------------------------- */

enum ctype { T_STR, T_BOOL, T_INT, T_SIZE, T_DUR, T_FLOAT, T_STRARR, T_ERRNO, T_CHOICE, T_NET };
enum sect { S_NONE, S_SANDBOX, S_SESSIONS, S_HTTP, S_MCP, S_LANG };

/* A choice-valued key's set: its names, by enum value, and how an error
 * names them. */
struct choice_set {
	const char *const *names;
	const char *what;
};

#define CHOICE_NAME(value, name) name,
#define CHOICE_SET_DEF(set, what_)                                                                 \
	const char *const conf_##set##_names[] = { CONF_CHOICES_##set(CHOICE_NAME) NULL };         \
	static const struct choice_set set_##set = { conf_##set##_names, what_ };                  \
	_Static_assert(sizeof(enum conf_##set) == sizeof(int), "a choice is held as an int");
CONF_CHOICE_SETS(CHOICE_SET_DEF)
#undef CHOICE_SET_DEF

struct key {
	const char *name;
	enum ctype type;
	size_t off;
	double min, max;
	enum sect sect;
	/* The default: num of a number, a boolean, an errno or a choice; str
	 * of a string, strv of an array of strings. */
	double num;
	const char *str;
	const char *const *strv;
	const struct choice_set *choices;
};

/* conf_key.h's rows, as struct key: a language's fields are in struct
 * conf_lang, the others' in struct conf. */
#define OFF_SANDBOX(f) offsetof(struct conf, f)
#define OFF_SESSIONS(f) offsetof(struct conf, f)
#define OFF_HTTP(f) offsetof(struct conf, f)
#define OFF_MCP(f) offsetof(struct conf, f)
#define OFF_LANG(f) offsetof(struct conf_lang, f)
#define DFLT_STR(d) .str = (d)
#define DFLT_STRARR(d) .strv = (d)
#define DFLT_BOOL(d) .num = (d)
#define DFLT_INT(d) .num = (d)
#define DFLT_SIZE(d) .num = (d)
#define DFLT_DUR(d) .num = (d)
#define DFLT_FLOAT(d) .num = (d)
#define DFLT_ERRNO(d) .num = (d)
#define DFLT_CHOICE(d) .num = (d)
#define DFLT_NET(d) .num = (d)
#define CHOICES_STR(c)
#define CHOICES_STRARR(c)
#define CHOICES_BOOL(c)
#define CHOICES_INT(c)
#define CHOICES_SIZE(c)
#define CHOICES_DUR(c)
#define CHOICES_FLOAT(c)
#define CHOICES_ERRNO(c)
#define CHOICES_CHOICE(c) .choices = &set_##c,
#define CHOICES_NET(c)
#define KEY_ROW(sect_, key_, type_, field_, min_, max_, dflt_, choices_) \
	{ .name = key_, .type = T_##type_, .off = OFF_##sect_(field_), .min = min_, .max = max_, .sect = S_##sect_, \
	  DFLT_##type_(dflt_), CHOICES_##type_(choices_) },
static const struct key conf_keys[] = { CONF_KEYS(KEY_ROW) CONF_LANG_KEYS(KEY_ROW) };
#define ONE_KEY(...) +1
enum { NKEYS = 0 CONF_KEYS(ONE_KEY) CONF_LANG_KEYS(ONE_KEY) };

/* The limits' keys, made from limit.h's table at the first parse: KEY
 * (the run stage), compile_KEY, and in [sandbox] max_KEY.  lim_key_of[]
 * says which limit and which of the three each entry is. */
enum { W_RUN, W_COMPILE, W_CEILING };
static struct key lim_keys[3 * LIM_N + 1], lim_lang_keys[2 * LIM_N + 1];
static struct { int id, which; } lim_key_of[3 * LIM_N];
static char lim_names[3 * LIM_N][40];

static void lim_keys_init(void)
{
	if (lim_keys[0].name)
		return;
	static const enum ctype type[] = { [LU_MS] = T_DUR, [LU_BYTES] = T_SIZE, [LU_COUNT] = T_INT, [LU_CPUS] = T_FLOAT };
	size_t n = 0, nl = 0;
	for (int w = W_RUN; w <= W_CEILING; w++)
		for (int i = 0; i < LIM_N; i++) {
			const struct limit_def *d = &limit_defs[i];
			if ((w == W_COMPILE && !d->compile) || (w == W_CEILING && !d->req))
				continue;
			snprintf(lim_names[n], sizeof lim_names[n], "%s%s", w == W_COMPILE ? "compile_" : w == W_CEILING ? "max_" : "",
				 d->conf);
			lim_keys[n] = (struct key){ .name = lim_names[n], .type = type[d->unit], .off = d->off, .min = d->min, .max = d->max };
			lim_key_of[n].id = i;
			lim_key_of[n].which = w;
			if (w != W_CEILING)
				lim_lang_keys[nl++] = lim_keys[n];
			n++;
		}
}

static const struct { const char *name; int value; } errnos[] = {
	{ "EPERM", EPERM }, { "EACCES", EACCES }, { "ENOSYS", ENOSYS },
	{ "EINVAL", EINVAL }, { "ENOTSUP", ENOTSUP }, { "EAFNOSUPPORT", EAFNOSUPPORT },
	{ "ENOTRECOVERABLE", ENOTRECOVERABLE }, { "EKEYREJECTED", EKEYREJECTED },
	{ "EHWPOISON", EHWPOISON }, { NULL, 0 },
};

/* ---- lexer ----------------------------------------------------------- */

enum vkind { V_STR, V_INT, V_FLOAT, V_BOOL, V_ARR };

struct val {
	enum vkind kind;
	char *s;
	double num;
	bool b;
	char **arr;
	size_t n;
};

struct parser {
	const char *name, *p, *end;
	int line;
	char *err;
	size_t errlen;
	bool failed;
};

static bool fail(struct parser *ps, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(struct parser *ps, int line, const char *fmt, ...)
{
	if (ps->failed)
		return false;
	ps->failed = true;
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s:%d: %s", ps->name, line, msg);
	return false;
}

static void val_free(struct val *v)
{
	free(v->s);
	if (v->arr) {
		for (size_t i = 0; i < v->n; i++)
			free(v->arr[i]);
		free(v->arr);
	}
	memset(v, 0, sizeof *v);
}

static void skip_space(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r'))
		ps->p++;
}

static void skip_comment(struct parser *ps)
{
	if (ps->p < ps->end && *ps->p == '#')
		while (ps->p < ps->end && *ps->p != '\n')
			ps->p++;
}

/* Spaces, comments and newlines (inside arrays). */
static void skip_all(struct parser *ps)
{
	for (;;) {
		skip_space(ps);
		skip_comment(ps);
		if (ps->p < ps->end && *ps->p == '\n') {
			ps->p++;
			ps->line++;
			continue;
		}
		return;
	}
}

/* After a value or header: only a comment may follow on the line. */
static bool end_of_line(struct parser *ps, const char *what)
{
	skip_space(ps);
	skip_comment(ps);
	if (ps->p < ps->end && *ps->p != '\n')
		return fail(ps, ps->line, "unexpected text after %s", what);
	return true;
}

static void put_utf8(char **buf, size_t *n, unsigned cp)
{
	char *b = *buf + *n;
	if (cp < 0x80) {
		b[0] = (char)cp;
		*n += 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3F));
		*n += 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | cp >> 12);
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		*n += 3;
	} else {
		b[0] = (char)(0xF0 | cp >> 18);
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		*n += 4;
	}
}

static bool parse_string(struct parser *ps, const char *key, char **out)
{
	char q = *ps->p++;
	const char *start = ps->p;
	/* The result is never longer than the source text. */
	size_t cap = 16;
	for (const char *s = ps->p; s < ps->end && *s != '\n'; s++)
		cap++;
	char *buf = util_xalloc(cap + 4);
	size_t n = 0;
	while (ps->p < ps->end && *ps->p != q) {
		char c = *ps->p;
		if (c == '\n' || ((unsigned char)c < 0x20 && c != '\t')) {
			free(buf);
			return fail(ps, ps->line, "key \"%s\": unterminated string or control character in string", key);
		}
		if (q == '"' && c == '\\') {
			ps->p++;
			if (ps->p >= ps->end)
				break;
			char e = *ps->p++;
			switch (e) {
			case '"': buf[n++] = '"'; break;
			case '\\': buf[n++] = '\\'; break;
			case 'n': buf[n++] = '\n'; break;
			case 't': buf[n++] = '\t'; break;
			case 'r': buf[n++] = '\r'; break;
			case 'u': {
				unsigned cp = 0;
				for (int i = 0; i < 4; i++) {
					char h = ps->p < ps->end ? *ps->p++ : 0;
					int d = h >= '0' && h <= '9' ? h - '0'
						: h >= 'a' && h <= 'f' ? h - 'a' + 10
						: h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
					if (d < 0) {
						free(buf);
						return fail(ps, ps->line, "key \"%s\": bad \\u escape (four hex digits)", key);
					}
					cp = cp << 4 | (unsigned)d;
				}
				if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
					free(buf);
					return fail(ps, ps->line, "key \"%s\": \\u%04X is not allowed in a string", key, cp);
				}
				put_utf8(&buf, &n, cp);
				break;
			}
			default:
				free(buf);
				return fail(ps, ps->line, "key \"%s\": unknown escape \\%c (use \\\" \\\\ \\n \\t \\r \\uXXXX)", key, e);
			}
			continue;
		}
		buf[n++] = c;
		ps->p++;
	}
	if (ps->p >= ps->end) {
		free(buf);
		return fail(ps, ps->line, "key \"%s\": unterminated string", key);
	}
	ps->p++; /* closing quote */
	buf[n] = 0;
	size_t bad;
	if (!utf8_valid(buf, n, &bad)) {
		free(buf);
		return fail(ps, ps->line, "key \"%s\": invalid UTF-8 in string", key);
	}
	(void)start;
	*out = buf;
	return true;
}

static bool parse_value(struct parser *ps, const char *key, struct val *v)
{
	memset(v, 0, sizeof *v);
	if (ps->p >= ps->end || *ps->p == '\n' || *ps->p == '#')
		return fail(ps, ps->line, "key \"%s\": missing value", key);
	char c = *ps->p;
	if (c == '"' || c == '\'') {
		v->kind = V_STR;
		return parse_string(ps, key, &v->s);
	}
	if (c == '[') {
		int line0 = ps->line;
		ps->p++;
		v->kind = V_ARR;
		size_t cap = 4;
		v->arr = util_xalloc(cap * sizeof *v->arr);
		for (;;) {
			skip_all(ps);
			if (ps->p >= ps->end)
				return fail(ps, line0, "key \"%s\": unterminated array", key);
			if (*ps->p == ']') {
				ps->p++;
				break;
			}
			if (*ps->p != '"' && *ps->p != '\'')
				return fail(ps, ps->line, "key \"%s\": arrays hold strings only (quote each element)", key);
			if (v->n + 2 > cap) {
				cap *= 2;
				v->arr = util_xrealloc(v->arr, cap * sizeof *v->arr);
			}
			if (!parse_string(ps, key, &v->arr[v->n]))
				return false;
			v->n++;
			v->arr[v->n] = NULL;
			skip_all(ps);
			if (ps->p < ps->end && *ps->p == ',') {
				ps->p++;
				continue;
			}
			skip_all(ps);
			if (ps->p < ps->end && *ps->p == ']') {
				ps->p++;
				break;
			}
			return fail(ps, ps->line, "key \"%s\": expected , or ] in array", key);
		}
		v->arr[v->n] = NULL;
		return true;
	}
	/* Bare token: boolean or number. */
	const char *s = ps->p;
	while (ps->p < ps->end && *ps->p != '\n' && *ps->p != '#' && *ps->p != ' ' && *ps->p != '\t' && *ps->p != '\r')
		ps->p++;
	size_t len = (size_t)(ps->p - s);
	char tok[64];
	if (len >= sizeof tok)
		return fail(ps, ps->line, "key \"%s\": value too long (strings need quotes)", key);
	memcpy(tok, s, len);
	tok[len] = 0;
	if (!strcmp(tok, "true") || !strcmp(tok, "false")) {
		v->kind = V_BOOL;
		v->b = tok[0] == 't';
		return true;
	}
	int64_t i;
	if (util_parse_i64(tok, INT64_MIN, INT64_MAX, &i)) {
		v->kind = V_INT;
		v->num = (double)i;
		return true;
	}
	double d;
	if (strspn(tok, "0123456789.eE+-") == len && util_parse_double(tok, -1e300, 1e300, &d)) {
		v->kind = V_FLOAT;
		v->num = d;
		return true;
	}
	return fail(ps, ps->line, "key \"%s\": cannot read value %s (strings need quotes; booleans are true/false)", key, tok);
}

/* ---- assigning values ------------------------------------------------ */

static const char *vkind_name(enum vkind k)
{
	switch (k) {
	case V_STR: return "a string";
	case V_INT: return "an integer";
	case V_FLOAT: return "a number";
	case V_BOOL: return "a boolean";
	case V_ARR: return "an array";
	}
	return "?";
}

static bool range_ok(struct parser *ps, int line, const struct key *k, double v, const char *shown)
{
	if (v < k->min || v > k->max) {
		if (k->type == T_SIZE) {
			char a[32], b[32];
			return fail(ps, line, "key \"%s\": %s is out of range (%s to %s)", k->name, shown,
				    util_size_str((uint64_t)k->min, a, sizeof a), util_size_str((uint64_t)k->max, b, sizeof b));
		}
		if (k->type == T_DUR)
			return fail(ps, line, "key \"%s\": %s is out of range (%g s to %g s)", k->name, shown,
				    k->min / 1000, k->max / 1000);
		return fail(ps, line, "key \"%s\": %s is out of range (%g to %g)", k->name, shown, k->min, k->max);
	}
	return true;
}

static bool assign(struct parser *ps, int line, const struct key *k, char *base, struct val *v)
{
	void *dst = base + k->off;
	char shown[96];
	switch (k->type) {
	case T_STR:
		if (v->kind != V_STR)
			return fail(ps, line, "key \"%s\": expected a string, got %s", k->name, vkind_name(v->kind));
		free(*(char **)dst);
		*(char **)dst = v->s;
		v->s = NULL;
		return true;
	case T_BOOL:
		if (v->kind != V_BOOL)
			return fail(ps, line, "key \"%s\": expected true or false, got %s", k->name, vkind_name(v->kind));
		*(bool *)dst = v->b;
		return true;
	case T_INT:
		if (v->kind != V_INT)
			return fail(ps, line, "key \"%s\": expected an integer, got %s", k->name, vkind_name(v->kind));
		snprintf(shown, sizeof shown, "%.0f", v->num);
		if (!range_ok(ps, line, k, v->num, shown))
			return false;
		*(uint64_t *)dst = (uint64_t)v->num;
		return true;
	case T_FLOAT:
		if (v->kind != V_INT && v->kind != V_FLOAT)
			return fail(ps, line, "key \"%s\": expected a number, got %s", k->name, vkind_name(v->kind));
		snprintf(shown, sizeof shown, "%g", v->num);
		if (!range_ok(ps, line, k, v->num, shown))
			return false;
		*(double *)dst = v->num;
		return true;
	case T_SIZE: {
		uint64_t b;
		if (v->kind == V_INT && v->num >= 0) {
			b = (uint64_t)v->num;
			snprintf(shown, sizeof shown, "%.0f", v->num);
		} else if (v->kind == V_STR && util_parse_size(v->s, &b)) {
			snprintf(shown, sizeof shown, "\"%.80s\"", v->s);
		} else
			return fail(ps, line, "key \"%s\": expected a size such as \"256m\", \"100k\" or a byte count", k->name);
		if (!range_ok(ps, line, k, (double)b, shown))
			return false;
		*(uint64_t *)dst = b;
		return true;
	}
	case T_DUR: {
		uint64_t ms;
		if ((v->kind == V_INT || v->kind == V_FLOAT) && v->num >= 0 && v->num < 1e12) {
			ms = (uint64_t)llround(v->num * 1000);
			snprintf(shown, sizeof shown, "%g s", v->num);
		} else if (v->kind == V_STR && util_parse_duration(v->s, &ms)) {
			snprintf(shown, sizeof shown, "\"%.80s\"", v->s);
		} else
			return fail(ps, line, "key \"%s\": expected a duration in seconds, or a string such as \"500ms\", \"5m\"", k->name);
		if (!range_ok(ps, line, k, (double)ms, shown))
			return false;
		*(uint64_t *)dst = ms;
		return true;
	}
	case T_STRARR: {
		if (v->kind != V_ARR)
			return fail(ps, line, "key \"%s\": expected an array of strings, got %s", k->name, vkind_name(v->kind));
		char ***arr = dst;
		if (*arr) {
			for (char **s = *arr; *s; s++)
				free(*s);
			free(*arr);
		}
		*arr = v->arr;
		v->arr = NULL;
		v->n = 0;
		return true;
	}
	case T_ERRNO:
		if (v->kind == V_INT) {
			snprintf(shown, sizeof shown, "%.0f", v->num);
			if (!range_ok(ps, line, k, v->num, shown))
				return false;
			*(int *)dst = (int)v->num;
			return true;
		}
		if (v->kind == V_STR)
			for (int i = 0; errnos[i].name; i++)
				if (!strcmp(errnos[i].name, v->s)) {
					*(int *)dst = errnos[i].value;
					return true;
				}
		return fail(ps, line, "key \"%s\": expected an errno name (EPERM, EACCES, ENOSYS, …) or number", k->name);
	case T_CHOICE: {
		if (v->kind != V_STR)
			return fail(ps, line, "key \"%s\": expected a string, got %s", k->name, vkind_name(v->kind));
		const char *const *names = k->choices->names;
		for (int i = 0; names[i]; i++)
			if (!strcmp(names[i], v->s)) {
				*(int *)dst = i;
				return true;
			}
		/* the names as "a, b or c", in the set's words */
		char list[256] = "", what[320];
		for (int i = 0; names[i]; i++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", !i ? "" : names[i + 1] ? ", " : " or ",
				 names[i]);
		snprintf(what, sizeof what, k->choices->what, list);
		return fail(ps, line, "key \"%s\": \"%s\" is not %s", k->name, v->s, what);
	}
	case T_NET: {
		struct conf_net *net = dst;
		util_strv_free(net->hosts);
		*net = (struct conf_net){ 0 };
		/* true meant the host's network once: now it is named */
		if (v->kind == V_BOOL && v->b)
			return fail(ps, line, "key \"%s\": true is ambiguous: give a list of the hosts runs may reach, such as "
					      "[\"pypi.org\", \"*.github.com\"] (through sbx's proxy), or \"host\" for the host's own "
					      "network (trusted set-ups only: doc/security.md)", k->name);
		if (v->kind == V_BOOL)
			return true;
		if (v->kind == V_STR && !strcmp(v->s, "host")) {
			net->host = true;
			return true;
		}
		if (v->kind != V_ARR)
			return fail(ps, line, "key \"%s\": expected false, \"host\" or a list of host patterns", k->name);
		char why[400];
		for (size_t i = 0; i < v->n; i++)
			if (!hostpat_ok(v->arr[i], why, sizeof why))
				return fail(ps, line, "key \"%s\": %s", k->name, why);
		net->hosts = v->arr;
		v->arr = NULL;
		v->n = 0;
		return true;
	}
	}
	return false;
}

/* The key of that name in keys (up to a NULL name), or with sect in
 * conf_keys (keys NULL). */
static const struct key *find_key(const struct key *keys, enum sect sect, const char *name)
{
	for (const struct key *k = keys ? keys : conf_keys; keys ? k->name != NULL : k < conf_keys + NKEYS; k++)
		if ((keys || k->sect == sect) && !strcmp(k->name, name))
			return k;
	return NULL;
}

/* "a, b, ...": the limits' keys lim (or none), then sect's in conf_keys. */
static char *key_list(const struct key *lim, enum sect sect)
{
	size_t n = 1;
	for (const struct key *k = lim; k && k->name; k++)
		n += strlen(k->name) + 2;
	for (const struct key *k = conf_keys; k < conf_keys + NKEYS; k++)
		n += k->sect == sect ? strlen(k->name) + 2 : 0;
	char *s = util_xalloc(n);
	for (const struct key *k = lim; k && k->name; k++) {
		if (*s)
			strcat(s, ", ");
		strcat(s, k->name);
	}
	for (const struct key *k = conf_keys; k < conf_keys + NKEYS; k++) {
		if (k->sect != sect)
			continue;
		if (*s)
			strcat(s, ", ");
		strcat(s, k->name);
	}
	return s;
}

/* ---- the file -------------------------------------------------------- */

/* The table's defaults into the fields of base (a struct conf, or a
 * struct conf_lang for sect S_LANG). */
static void set_key_defaults(char *base, bool lang)
{
	for (const struct key *k = conf_keys; k < conf_keys + NKEYS; k++) {
		if ((k->sect == S_LANG) != lang)
			continue;
		void *dst = base + k->off;
		switch (k->type) {
		case T_STR: *(char **)dst = k->str ? util_strdup(k->str) : NULL; break;
		case T_BOOL: *(bool *)dst = k->num != 0; break;
		case T_INT:
		case T_SIZE:
		case T_DUR: *(uint64_t *)dst = (uint64_t)k->num; break;
		case T_FLOAT: *(double *)dst = k->num; break;
		case T_ERRNO:
		case T_CHOICE: *(int *)dst = (int)k->num; break;
		case T_NET: *(struct conf_net *)dst = (struct conf_net){ 0 }; break;
		case T_STRARR: {
			char **v = NULL;
			size_t n = 0;
			while (k->strv && k->strv[n])
				n++;
			if (k->strv) {
				v = util_xalloc((n + 1) * sizeof *v);
				for (size_t i = 0; i < n; i++)
					v[i] = util_strdup(k->strv[i]);
				v[n] = NULL;
			}
			*(char ***)dst = v;
			break;
		}
		}
	}
}

/* The strings the table's keys own in base. */
static void free_keys(char *base, bool lang)
{
	for (const struct key *k = conf_keys; k < conf_keys + NKEYS; k++) {
		if ((k->sect == S_LANG) != lang)
			continue;
		if (k->type == T_STR)
			free(*(char **)(base + k->off));
		else if (k->type == T_STRARR)
			util_strv_free(*(char ***)(base + k->off));
		else if (k->type == T_NET)
			util_strv_free(((struct conf_net *)(base + k->off))->hosts);
	}
}

static void set_defaults(struct conf *c)
{
	limits_defaults(&c->lim.run, &c->lim.compile, &c->ceiling);
	/* state_dir and history stay NULL unless given: see parse's end. */
	set_key_defaults((char *)c, false);
}

void conf_free(struct conf *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->dir);
	free(c->state_note);
	free_keys((char *)c, false);
	for (size_t i = 0; i < c->nlangs; i++) {
		free(c->langs[i].name);
		free_keys((char *)&c->langs[i], true);
	}
	free(c->langs);
	free(c);
}

/* Relative paths in the file are relative to `root`. */
/* p against root, with "." and ".." taken out lexically (what p names
 * need not exist yet), so messages and prefix tests see one spelling. */
static char *absolute(const char *root, const char *p)
{
	char *in = p[0] == '/' ? util_strdup(p) : util_fmt("%s/%s", root, p);
	char *out = util_xalloc(strlen(in) + 2);
	size_t n = 0;
	for (char *save = NULL, *seg = strtok_r(in, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		if (!strcmp(seg, "."))
			continue;
		if (!strcmp(seg, "..")) {
			while (n > 0 && out[--n] != '/')
				;
			continue;
		}
		out[n++] = '/';
		size_t l = strlen(seg);
		memcpy(out + n, seg, l);
		n += l;
	}
	if (!n)
		out[n++] = '/';
	out[n] = 0;
	free(in);
	return out;
}

/* Every relative path in the file is relative to the file's own
 * directory: one base, whichever way the file was found. */
static char *conf_dir(const char *path_for_root)
{
	char *dir = util_strdup(path_for_root);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0; /* "/x.conf": the root */
	else if (slash)
		*slash = 0;
	else {
		free(dir);
		dir = util_strdup(".");
	}
	char real[PATH_MAX];
	if (realpath(dir, real)) {
		free(dir);
		dir = util_strdup(real);
	}
	return dir;
}

enum { OWN = 3 * LIM_N };  /* seen[]: the limits' keys first, then the table's (conf_keys) */

/* Where parse is: the section, and what has been given. */
struct pstate {
	enum sect sect;
	struct conf_lang *lang;        /* S_LANG's */
	bool seen_sandbox, seen_sessions, seen_http, seen_mcp;
	int seen[OWN + NKEYS];         /* the line of each key given in this section (0: not given) */
	int sandbox_line[3 * LIM_N];   /* [sandbox]'s limit keys, for the ceiling checks */
	size_t lang_cap;
};

/* A "[name]" line (ps at the '['); false to stop. */
static bool section(struct parser *ps, struct conf *c, struct pstate *st, int line)
{
	const char *s = ++ps->p;
	while (ps->p < ps->end && *ps->p != ']' && *ps->p != '\n')
		ps->p++;
	if (ps->p >= ps->end || *ps->p != ']')
		return fail(ps, line, "unterminated section header");
	char *name = util_strndup(s, (size_t)(ps->p - s));
	ps->p++;
	if (!end_of_line(ps, "the section header")) {
		free(name);
		return false;
	}
	memset(st->seen, 0, sizeof st->seen);
	static const struct {
		const char *name;
		enum sect sect;
		size_t seen;
	} plain[] = {
		{ "sandbox", S_SANDBOX, offsetof(struct pstate, seen_sandbox) },
		{ "sessions", S_SESSIONS, offsetof(struct pstate, seen_sessions) },
		{ "http", S_HTTP, offsetof(struct pstate, seen_http) },
		{ "mcp", S_MCP, offsetof(struct pstate, seen_mcp) },
	};
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
		if (!strcmp(name, plain[i].name)) {
			bool *seen = (bool *)((char *)st + plain[i].seen);
			if (*seen)
				fail(ps, line, "section [%s] appears twice", name);
			*seen = true;
			st->sect = plain[i].sect;
			free(name);
			return !ps->failed;
		}
	const char *ln = strncmp(name, "language.", 9) ? "" : name + 9;
	if (!*ln && strncmp(name, "language.", 9))
		fail(ps, line, "unknown section [%s] (known: [sandbox], [sessions], [http], [mcp], [language.NAME])", name);
	else if (!conf_lang_name_ok(ln))
		fail(ps, line, "section [%s]: language names use a-z, 0-9, _, - and +", name);
	for (size_t i = 0; !ps->failed && i < c->nlangs; i++)
		if (!strcmp(c->langs[i].name, ln))
			fail(ps, line, "section [%s] appears twice (first on line %d)", name, c->langs[i].line);
	if (!ps->failed) {
		if (c->nlangs == st->lang_cap) {
			st->lang_cap = st->lang_cap ? st->lang_cap * 2 : 8;
			c->langs = util_xrealloc(c->langs, st->lang_cap * sizeof *c->langs);
		}
		st->lang = &c->langs[c->nlangs++];
		memset(st->lang, 0, sizeof *st->lang);
		set_key_defaults((char *)st->lang, true);
		st->lang->name = util_strdup(ln);
		st->lang->line = line;
		st->sect = S_LANG;
	}
	free(name);
	return !ps->failed;
}

/* The key at ps, into key; false (after saying why) if there is none. */
static bool read_key(struct parser *ps, int line, char *key, size_t len)
{
	const char *ks = ps->p;
	while (ps->p < ps->end && ((*ps->p >= 'a' && *ps->p <= 'z') || (*ps->p >= 'A' && *ps->p <= 'Z') ||
				   (*ps->p >= '0' && *ps->p <= '9') || *ps->p == '_' || *ps->p == '-'))
		ps->p++;
	if (ps->p == ks)
		return fail(ps, line, "expected a key, a [section] or a comment");
	size_t klen = (size_t)(ps->p - ks);
	if (klen >= len)
		return fail(ps, line, "key too long");
	memcpy(key, ks, klen);
	key[klen] = 0;
	skip_space(ps);
	if (ps->p >= ps->end || *ps->p != '=')
		return fail(ps, line, "key \"%s\": expected = after the key", key);
	ps->p++;
	skip_space(ps);
	return true;
}

/* The values a key may take beyond its type and choices, once assigned. */
static void check_value(struct parser *ps, const struct conf *c, enum sect sect, const char *key, int line)
{
	if (sect == S_SANDBOX && !strcmp(key, "etc"))
		for (char **e = c->etc; *e; e++)
			if (!**e || (*e)[0] == '/' || strstr(*e, ".."))
				fail(ps, line, "key \"etc\": \"%s\" must be a path relative to /etc without ..", *e);
	if (sect == S_SANDBOX && !strcmp(key, "cgroup_parent") &&
	    (!*c->cgroup_parent || strstr(c->cgroup_parent, "..") || c->cgroup_parent[0] == '/'))
		fail(ps, line, "key \"cgroup_parent\": must be a relative cgroup name without ..");
}

/* A "key = value" line; false to stop. */
static bool key_value(struct parser *ps, struct conf *c, struct pstate *st, int line)
{
	char key[64];
	if (!read_key(ps, line, key, sizeof key))
		return false;
	if (st->sect == S_NONE)
		return fail(ps, line, "key \"%s\" outside any section (start with [sandbox])", key);
	struct val v;
	if (!parse_value(ps, key, &v) || !end_of_line(ps, "the value")) {
		val_free(&v);
		return false;
	}
	enum sect sect = st->sect;
	const struct key *k = NULL;
	char *base = NULL;
	int idx = -1;
	bool limits = sect == S_SANDBOX || sect == S_LANG, is_limit = false;
	const struct key *lim_table = sect == S_SANDBOX ? lim_keys : lim_lang_keys;
	if (limits && (k = find_key(lim_table, sect, key))) {
		is_limit = true;
		/* lim_lang_keys holds lim_keys' entries less the ceilings */
		idx = (int)(find_key(lim_keys, sect, key) - lim_keys);
		int w = lim_key_of[idx].which;
		struct conf_limits *cl = sect == S_LANG ? &st->lang->lim : &c->lim;
		base = (char *)(w == W_CEILING ? &c->ceiling : w == W_COMPILE ? &cl->compile : &cl->run);
	} else if ((k = find_key(NULL, sect, key))) {
		base = sect == S_LANG ? (char *)st->lang : (char *)c;
		idx = OWN + (int)(k - conf_keys);
	}
	if (!k) {
		const char *sname = sect == S_SANDBOX ? "[sandbox]" : sect == S_SESSIONS ? "[sessions]" : sect == S_HTTP ? "[http]" :
				    sect == S_MCP ? "[mcp]" : "[language.*]";
		char *known = key_list(limits ? lim_table : NULL, sect);
		fail(ps, line, "key \"%s\": unknown key in %s (known: %s)", key, sname, known);
		free(known);
		val_free(&v);
		return false;
	}
	if (st->seen[idx]) {
		fail(ps, line, "key \"%s\" appears twice in this section (first at line %d)", key, st->seen[idx]);
		val_free(&v);
		return false;
	}
	st->seen[idx] = line;
	bool ok = assign(ps, line, k, base, &v);
	val_free(&v);
	if (!ok)
		return false;
	if (is_limit) {
		uint32_t bit = 1u << lim_key_of[idx].id;
		if (sect == S_LANG)
			*(lim_key_of[idx].which == W_COMPILE ? &st->lang->lim.cset : &st->lang->lim.set) |= bit;
		else
			st->sandbox_line[idx] = line;
	}
	if (sect == S_SANDBOX && !strcmp(key, "uid"))
		c->uid_line = line;
	check_value(ps, c, sect, key, line);
	return true;
}

/* What holds only across sections, after the last line. */
static void check_whole(struct parser *ps, struct conf *c, const struct pstate *st)
{
	if (c->nlangs == 0)
		fail(ps, ps->line, "no [language.NAME] section: nothing could run");
	for (size_t i = 0; i < c->nlangs && !ps->failed; i++) {
		struct conf_lang *l = &c->langs[i];
		char why[768];
		if (!conf_lang_check(c, l, why, sizeof why))
			fail(ps, l->line, "%s", why);
		else if (l->rootfs) {
			char *abs = absolute(c->dir, l->rootfs);
			free(l->rootfs);
			l->rootfs = abs;
		}
	}
	/* Aliases must not shadow names or each other. */
	for (size_t i = 0; i < c->nlangs && !ps->failed; i++)
		for (char **a = c->langs[i].aliases; a && *a && !ps->failed; a++)
			for (size_t j = 0; j < c->nlangs; j++) {
				if (!strcmp(c->langs[j].name, *a))
					fail(ps, c->langs[i].line, "[language.%s]: alias \"%s\" is also a language name", c->langs[i].name, *a);
				for (char **b = c->langs[j].aliases; j > i && b && *b; b++)
					if (!strcmp(*a, *b))
						fail(ps, c->langs[j].line, "[language.%s]: alias \"%s\" is also an alias of %s", c->langs[j].name, *a, c->langs[i].name);
			}
	/* A default above its ceiling: reported at the line that set either
	 * (the later one, if both). */
	for (int n = 0; !ps->failed && n < 3 * LIM_N && lim_keys[n].name; n++) {
		int i = lim_key_of[n].id;
		if (lim_key_of[n].which != W_RUN || !limit_defs[i].req)
			continue;
		double v = limit_get(&c->lim.run, i), max = limit_get(&c->ceiling, i);
		if (v <= max)
			continue;
		int at = st->sandbox_line[n];
		for (int m = 0; m < 3 * LIM_N && lim_keys[m].name; m++)
			if (lim_key_of[m].id == i && lim_key_of[m].which == W_CEILING && st->sandbox_line[m] > at)
				at = st->sandbox_line[m];
		char a[32], b[32];
		fail(ps, at ? at : 1, "%s (%s) exceeds max_%s (%s)", limit_defs[i].conf, limit_str(i, v, a, sizeof a),
		     limit_defs[i].conf, limit_str(i, max, b, sizeof b));
	}
}

static struct conf *parse(struct parser *ps, const char *path_for_root)
{
	struct conf *c = util_xalloc(sizeof *c);
	set_defaults(c);
	c->dir = conf_dir(path_for_root);
	struct pstate *st = util_xalloc(sizeof *st);
	lim_keys_init();
	while (!ps->failed) {
		skip_all(ps);
		if (ps->p >= ps->end)
			break;
		int line = ps->line;
		if (!(*ps->p == '[' ? section(ps, c, st, line) : key_value(ps, c, st, line)))
			break;
	}
	if (!ps->failed)
		check_whole(ps, c, st);
	free(st);
	if (ps->failed) {
		conf_free(c);
		return NULL;
	}
	/* Unset, the state lives in the system's state directory and the
	 * history in it; given, a relative path is the file's directory's. */
	char *abs = c->state_dir ? absolute(c->dir, c->state_dir) : util_strdup(SBX_STATEDIR);
	free(c->state_dir);
	c->state_dir = abs;
	abs = c->history ? absolute(c->dir, c->history) : util_fmt("%s/sandbox_history.db", c->state_dir);
	free(c->history);
	c->history = abs;
	return c;
}

struct conf *conf_parse(const char *name, const char *text, size_t len, char *err, size_t errlen)
{
	struct parser ps = { .name = name, .p = text, .end = text + len, .line = 1, .err = err, .errlen = errlen };
	if (memchr(text, 0, len)) {
		fail(&ps, 1, "NUL byte in configuration file");
		return NULL;
	}
	struct conf *c = parse(&ps, name);
	if (c)
		c->path = util_strdup(name);
	return c;
}

struct conf *conf_load(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return NULL;
	}
	if (st.st_size > CONF_MAX_SIZE) {
		snprintf(err, errlen, "%s: larger than 1 MiB; not a configuration file?", path);
		close(fd);
		return NULL;
	}
	size_t n;
	char *buf = util_read_close(fd, (size_t)st.st_size, &n);
	if (!buf) {
		snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
		return NULL;
	}
	struct conf *c = conf_parse(path, buf, n, err, errlen);
	free(buf);
	return c;
}
