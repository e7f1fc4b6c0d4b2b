#define _GNU_SOURCE
#include "job.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostpat.h"
#include "judge.h"
#include "layout.h"
#include "probe.h"
#include "registry.h"
#include "req.h"
#include "state.h"
#include "sha256.h"
#include "rec.h"
#include "utf8.h"
#include "util.h"

#define MAX_ARGS 256
#define MAX_ARG_BYTES (64 * 1024)

void job_new_id(char *buf, size_t len)
{
	unsigned char r[6];
	util_random(r, sizeof r);
	unsigned long long ms = (unsigned long long)util_epoch_ms();
	snprintf(buf, len, "%011llx-%02x%02x%02x%02x%02x%02x", ms, r[0], r[1], r[2], r[3], r[4], r[5]);
}

void job_too_big(char *err, size_t errlen, const char *what, const char *after, uint64_t n, const char *key, uint64_t max)
{
	char a[32], b[32];
	snprintf(err, errlen, "%s %s%s, exceeds %s %s", what, util_size_str(n, a, sizeof a), after, key,
		 util_size_str(max, b, sizeof b));
}

/* ---- sbx-validate: request -> job ------------------------------------ */

static jv strv_json(char **v)
{
	jv a = jv_array();
	for (; v && *v; v++)
		a = jv_array_append(a, jv_string(*v));
	return a;
}

char *job_expand(const char *s, const struct limits *lim, const char *dir)
{
	static const char *const names[] = { "{memory}", "{memory_mib}", "{cpus}", "{dir}" };
	char val[4][256];
	snprintf(val[0], sizeof val[0], "%llu", (unsigned long long)lim->memory);
	snprintf(val[1], sizeof val[1], "%llu", (unsigned long long)(lim->memory >> 20));
	snprintf(val[2], sizeof val[2], "%d", lim->cpus <= 1 ? 1 : (int)ceil(lim->cpus));
	snprintf(val[3], sizeof val[3], "%s", dir ? dir : ".");
	char *out = util_strdup(s);
	for (size_t i = 0; i < 4; i++) {
		char *at;
		size_t from = 0;
		while ((at = strstr(out + from, names[i]))) {
			size_t pre = (size_t)(at - out), nl = strlen(names[i]);
			char *next = util_fmt("%.*s%s%s", (int)pre, out, val[i], at + nl);
			from = pre + strlen(val[i]);
			free(out);
			out = next;
		}
	}
	return out;
}

char **job_expand_strv(char *const *v, const struct limits *lim)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **out = util_xalloc((n + 1) * sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = job_expand(v[i], lim, NULL);
	out[n] = NULL;
	return out;
}

/* A language's argv as JSON, each element expanded with dir for {dir}.
 * An element that is exactly the language's program file becomes prog
 * (when given), one that is its name without the extension ("Main")
 * becomes cls (when given: a file_by_class language's class); in a
 * directory of its own (dir other than "."), an element naming one of its
 * outputs ("main", "./main") becomes that output in dir. */
static jv argv_json(char **v, const struct conf_lang *l, const char *prog, const char *cls, const char *dir,
		    const struct limits *lim)
{
	jv a = jv_array();
	const char *dot = strrchr(l->file, '.');
	size_t stem = dot ? (size_t)(dot - l->file) : strlen(l->file);
	for (; v && *v; v++) {
		char *e = NULL;
		if (prog && !strcmp(*v, l->file))
			e = util_strdup(prog);
		else if (cls && strlen(*v) == stem && !strncmp(*v, l->file, stem))
			e = util_strdup(cls);
		for (char **o = l->outputs; !e && strcmp(dir, ".") && o && *o; o++)
			if (!strcmp(*v, *o) || (!strncmp(*v, "./", 2) && !strcmp(*v + 2, *o)))
				e = util_fmt("%s/%s", dir, *o);
		if (!e)
			e = job_expand(*v, lim, dir);
		a = jv_array_append(a, jv_string(e));
		free(e);
	}
	return a;
}

/* Whether any element of a (borrowed) mentions s. */
static bool argv_mentions(jv a, const char *s)
{
	bool found = false;
	jv_array_foreach(a, i, x) {
		if (jv_get_kind(x) == JV_KIND_STRING && strstr(jv_string_value(x), s))
			found = true;
		jv_free(x);
	}
	return found;
}

/* The text of a workspace file, for an entry's record: beneath the
 * workspace, through no link, a regular file of at most max bytes. */
static jv read_entry(const char *workspace, const char *path, size_t max, char *err, size_t errlen)
{
	int ws = open(workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = ws < 0 ? -1 : util_open_beneath(ws, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	int e = errno;
	if (ws >= 0)
		close(ws);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		if (fd < 0)
			snprintf(err, errlen, "\"%s\" \"%.100s\": %s", REQ_KEY(entry), path,
				 e == ELOOP || e == EXDEV ? "a link (entries are followed through no link)" : strerror(e));
		else
			snprintf(err, errlen, "\"%s\" \"%.100s\": %s", REQ_KEY(entry), path,
				 !S_ISREG(st.st_mode) ? "not a regular file" : "larger than max_code_size");
		if (fd >= 0)
			close(fd);
		return jv_invalid();
	}
	size_t n;
	char *buf = util_read_close(fd, (size_t)st.st_size, &n);
	if (!buf) {
		snprintf(err, errlen, "\"%s\" \"%.100s\": %s", REQ_KEY(entry), path, strerror(errno));
		return jv_invalid();
	}
	jv text = jv_string_sized(buf, (int)n); /* invalid UTF-8 becomes U+FFFD */
	free(buf);
	return text;
}

/* A command as one would type it, for the record: an argument of plain
 * characters as it is, any other in single quotes. */
static void shell_quote(char **line, size_t *len, const char *arg)
{
	bool plain = *arg && strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == strlen(arg);
	*line = util_xrealloc(*line, *len + strlen(arg) * 4 + 4);
	char *o = *line + *len;
	if (*len)
		*o++ = ' ';
	if (!plain)
		*o++ = '\'';
	for (const char *p = arg; *p; p++) {
		if (*p == '\'' && !plain) {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else
			*o++ = *p;
	}
	if (!plain)
		*o++ = '\'';
	*o = 0;
	*len = (size_t)(o - *line);
}

/* Whether req carries key (not null) with a value other than want (borrowed).
 * The fields sbx-validate computes may come back only as it computes them
 * (a job validated again); any other value is an attempt to set them, which
 * would not be honoured, so it is refused rather than silently replaced. */
static bool computed_differs(jv req, const char *key, jv want)
{
	jv have = rec_get(req, key);
	jv_kind k = jv_get_kind(have);
	if (k == JV_KIND_INVALID || k == JV_KIND_NULL) {
		jv_free(have);
		return false;
	}
	return !jv_equal(have, jv_copy(want));
}

/* A field a request does not have but nearly has ("tiemout", "Files"):
 * the known name it is probably meant to be, or NULL.  Other unknown
 * fields are the user's and pass through. */
static const char *misspelled(const char *key)
{
	const char *best = NULL;
	int bestd = 3;
	for (int i = 0; i < REQ_N; i++) {
		const struct req_field *f = req_field(i);
		if (!(f->where & RW_REQ))
			continue;
		if (!strcmp(f->name, key))
			return NULL;
		if (!strcasecmp(f->name, key))
			return f->name; /* "Files" */
		int d = util_typo_of(key, f->name);
		if (d && d < bestd) {
			best = f->name;
			bestd = d;
		}
	}
	return best;
}

/* The steps of job_from_request.  Each checks its part of the request
 * (and may add to it: an id, the canonical language, a command's code
 * line); true, or false with err, the invalid record's error. */

/* An id is shown to people (tables, CSV, the dashboard, logs): no C0 or
 * C1 control, DEL, nor a character that makes text read other than it
 * runs (utf8_deceptive: bidi overrides and isolates, line separators). */
static bool id_printable(const unsigned char *s, size_t n)
{
	unsigned cp;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] == 0x7f || (s[i] == 0xc2 && i + 1 < n && s[i + 1] < 0xa0) ||
		    utf8_deceptive(s + i, n - i, &cp))
			return false;
	return true;
}

static bool req_id(jv *req, char *err, size_t errlen)
{
	jv id = rec_get(*req, REQ_KEY(id));
	jv_kind idk = jv_get_kind(id);
	bool ok = true;
	if (idk == JV_KIND_STRING) {
		size_t n = (size_t)jv_string_length_bytes(jv_copy(id));
		const char *s = jv_string_value(id);
		ok = n > 0 && n <= 128 && id_printable((const unsigned char *)s, n);
		if (!ok)
			snprintf(err, errlen, "\"%s\" must be 1 to 128 printable characters", REQ_KEY(id));
	} else if (idk != JV_KIND_INVALID && idk != JV_KIND_NUMBER) {
		snprintf(err, errlen, "\"%s\" must be a string or a number, got %s", REQ_KEY(id), rec_kind(id));
		ok = false;
	} else if (idk == JV_KIND_INVALID) {
		char buf[64];
		job_new_id(buf, sizeof buf);
		/* The id goes first, for people reading the lines. */
		*req = jv_object_merge(jv_object_set(jv_object(), jv_string(REQ_KEY(id)), jv_string(buf)), *req);
	}
	jv_free(id);
	return ok;
}

/* principal: whose sbx-mcp call the run is, for the history.  sbx-mcp
 * sets it (a digest); a pipeline may name its own, as printable as an id. */
static bool req_principal(jv req, char *err, size_t errlen)
{
	if (!rec_has(req, REQ_KEY(principal)))
		return true;
	size_t n;
	const char *s = rec_str(req, REQ_KEY(principal), &n);
	if (s && n > 0 && n <= 128 && id_printable((const unsigned char *)s, n))
		return true;
	snprintf(err, errlen, "\"%s\" must be 1 to 128 printable characters", REQ_KEY(principal));
	return false;
}

/* Misspelled fields would run silently with defaults. */
static bool req_spelling(jv req, char *err, size_t errlen)
{
	bool ok = true;
	jv_object_foreach(req, k, v) {
		const char *meant = ok ? misspelled(jv_string_value(k)) : NULL;
		if (meant) {
			snprintf(err, errlen, "unknown field \"%.60s\": did you mean \"%s\"?", jv_string_value(k), meant);
			ok = false;
		}
		jv_free(k);
		jv_free(v);
	}
	return ok;
}

/* The language: given; else, for a session's file (entry), the one whose
 * program file has its extension; for a command, bash's.  The record
 * gets its canonical name. */
static const struct conf_lang *req_language(const struct conf *c, jv *req, char *err, size_t errlen)
{
	if (!rec_has(*req, REQ_KEY(language)) && (rec_has(*req, REQ_KEY(entry)) || rec_has(*req, REQ_KEY(command)))) {
		const char *entry = rec_str(*req, REQ_KEY(entry), NULL);
		const struct conf_lang *by = entry ? conf_lang_by_file(c, entry) : conf_lang(c, "bash");
		if (!by && entry) {
			snprintf(err, errlen, "cannot tell the language of \"%.100s\" from its name: give \"%s\"", entry,
				 REQ_KEY(language));
			return NULL;
		}
		if (by)
			*req = jv_object_set(*req, jv_string(REQ_KEY(language)), jv_string(by->name));
	}
	jv lang = rec_get(*req, REQ_KEY(language));
	const struct conf_lang *l = jv_get_kind(lang) == JV_KIND_STRING ? conf_lang(c, jv_string_value(lang)) : NULL;
	if (jv_get_kind(lang) != JV_KIND_STRING) {
		const char *k = rec_kind(lang);
		if (!strcmp(k, "missing"))
			snprintf(err, errlen, "missing \"%s\" (supported: %s)", REQ_KEY(language), conf_lang_list(c));
		else
			snprintf(err, errlen, "\"%s\" must be a string, got %s (supported: %s)", REQ_KEY(language), k,
				 conf_lang_list(c));
	} else if (!l)
		snprintf(err, errlen, "unsupported language \"%.40s%s\" (supported: %s)", jv_string_value(lang),
			 jv_string_length_bytes(jv_copy(lang)) > 40 ? "…" : "", conf_lang_list(c));
	jv_free(lang);
	if (l)
		*req = jv_object_set(*req, jv_string(REQ_KEY(language)), jv_string(l->name));
	return l;
}

enum prog { P_CODE, P_ENTRY, P_COMMAND, P_CELL };

/* What runs: code (written as the language's program file), or in a
 * session a file of its workspace (entry) or a command.  For those two the
 * record's code becomes what ran (the file's text, read once the
 * workspace is known; the command line), for the history.  *entry is
 * borrowed from the record. */
static bool req_program(const struct conf_lang *l, jv *req, bool installing, enum prog *prog, const char **entry,
			char *err, size_t errlen)
{
	*prog = rec_has(*req, REQ_KEY(entry)) ? P_ENTRY : rec_has(*req, REQ_KEY(command)) ? P_COMMAND : P_CODE;
	*entry = NULL;
	if (*prog == P_CODE)
		return true;
	const char *what = *prog == P_ENTRY ? REQ_KEY(entry) : REQ_KEY(command);
	if ((rec_has(*req, REQ_KEY(entry)) && rec_has(*req, REQ_KEY(command))) || (rec_has(*req, REQ_KEY(code)) && !rec_has(*req, REQ_KEY(exec)))) {
		/* (a job validated again carries the code made here) */
		snprintf(err, errlen, "give \"code\", \"entry\" or \"command\", not more than one");
		return false;
	}
	if (!rec_has(*req, REQ_KEY(session))) {
		snprintf(err, errlen, "\"%s\" runs in a session's workspace: give \"%s\"", what, REQ_KEY(session));
		return false;
	}
	if (installing) {
		snprintf(err, errlen, "\"%s\" and \"%s\" do not go together", what, REQ_KEY(install));
		return false;
	}
	if (*prog == P_ENTRY) {
		size_t elen;
		char pwhy[128];
		const char *e = rec_str(*req, REQ_KEY(entry), &elen);
		if (!e) {
			jv ev = rec_get(*req, REQ_KEY(entry));
			snprintf(err, errlen, "\"%s\" must be a path in the workspace, got %s", REQ_KEY(entry), rec_kind(ev));
			jv_free(ev);
		} else if (!job_path_ok(e, elen, pwhy, sizeof pwhy))
			snprintf(err, errlen, "\"%s\" %s", REQ_KEY(entry), pwhy);
		else if (e[0] == '-')
			snprintf(err, errlen, "\"%s\" \"%.100s\" begins with \"-\", which its interpreter would take for an "
				 "option: rename it", REQ_KEY(entry), e);
		else if (ns_reserved(e))
			snprintf(err, errlen, "\"%s\" \"%.100s\": names beginning " NS_RESERVED " are sbx's own", REQ_KEY(entry), e);
		else if (l->compile)
			snprintf(err, errlen, "\"%s\" runs interpreted languages' files; compile %s with \"code\", or build it "
				 "with a \"command\"", REQ_KEY(entry), l->name);
		else {
			*entry = e;
			return true;
		}
		return false;
	}
	jv command = rec_get(*req, REQ_KEY(command));
	int n = jv_get_kind(command) == JV_KIND_ARRAY ? jv_array_length(jv_copy(command)) : -1;
	char *line = NULL;
	size_t len = 0;
	bool ok = n >= 1 && n <= MAX_ARGS;
	if (!ok)
		snprintf(err, errlen, "\"%s\" must be an array of 1 to %d strings", REQ_KEY(command), MAX_ARGS);
	else {
		jv_array_foreach(command, i, a) {
			size_t alen = jv_get_kind(a) == JV_KIND_STRING ? (size_t)jv_string_length_bytes(jv_copy(a)) : 0;
			if (jv_get_kind(a) != JV_KIND_STRING || memchr(jv_string_value(a), 0, alen) || len + alen > MAX_ARG_BYTES)
				ok = false;
			else
				shell_quote(&line, &len, jv_string_value(a));
			jv_free(a);
		}
		if (!ok)
			snprintf(err, errlen, "\"%s\" must be strings without NUL bytes, 64 KiB at most", REQ_KEY(command));
		else
			*req = jv_object_set(*req, jv_string(REQ_KEY(code)), jv_string(line));
	}
	free(line);
	jv_free(command);
	return ok;
}

/* code (an entry's is read later, from the workspace), stdin, args */
bool job_args_ok(jv args, char *err, size_t errlen)
{
	jv_kind ak = jv_get_kind(args);
	bool ok = true;
	if (ak != JV_KIND_INVALID && ak != JV_KIND_NULL) {
		if (ak != JV_KIND_ARRAY) {
			snprintf(err, errlen, "\"%s\" must be an array of strings, got %s", REQ_KEY(args), rec_kind(args));
			ok = false;
		} else if (jv_array_length(jv_copy(args)) > MAX_ARGS) {
			snprintf(err, errlen, "%d args exceed the limit of %d", jv_array_length(jv_copy(args)), MAX_ARGS);
			ok = false;
		}
		size_t total = 0;
		for (int i = 0; ok && i < jv_array_length(jv_copy(args)); i++) {
			jv a = jv_array_get(jv_copy(args), i);
			if (jv_get_kind(a) != JV_KIND_STRING) {
				snprintf(err, errlen, "args[%d] must be a string, got %s", i, rec_kind(a));
				ok = false;
			} else {
				size_t alen = (size_t)jv_string_length_bytes(jv_copy(a));
				total += alen;
				if (memchr(jv_string_value(a), 0, alen)) {
					snprintf(err, errlen, "args[%d] contains a NUL byte", i);
					ok = false;
				}
			}
			jv_free(a);
		}
		if (ok && total > MAX_ARG_BYTES) {
			snprintf(err, errlen, "args total %zu bytes, exceed 64 KiB", total);
			ok = false;
		}
	}
	return ok;
}

static bool req_data(const struct conf *c, jv req, enum prog prog, char *err, size_t errlen)
{
	size_t code_len = 0;
	const char *code = prog == P_ENTRY ? "" : rec_str(req, REQ_KEY(code), &code_len);
	if (!code) {
		jv v = rec_get(req, REQ_KEY(code));
		const char *k = rec_kind(v);
		jv_free(v);
		if (!strcmp(k, "missing"))
			snprintf(err, errlen, "missing \"%s\" (the program's source, as a string)", REQ_KEY(code));
		else
			snprintf(err, errlen, "\"%s\" must be a string, got %s", REQ_KEY(code), k);
		return false;
	}
	if (code_len == 0 && prog == P_CODE) {
		snprintf(err, errlen, "\"%s\" is empty", REQ_KEY(code));
		return false;
	}
	if (code_len > c->max_code_size) {
		job_too_big(err, errlen, "code is", "", code_len, "max_code_size", c->max_code_size);
		return false;
	}
	if (rec_has(req, REQ_KEY(stdin))) {
		size_t n;
		jv v = rec_get(req, REQ_KEY(stdin));
		jv_kind k = jv_get_kind(v);
		jv_free(v);
		if (k != JV_KIND_NULL && !rec_str(req, REQ_KEY(stdin), &n)) {
			snprintf(err, errlen, "\"%s\" must be a string, got %s", REQ_KEY(stdin),
				 k == JV_KIND_NUMBER ? "number" : k == JV_KIND_ARRAY ? "array" : k == JV_KIND_OBJECT ? "object" : "boolean");
			return false;
		}
		if (k != JV_KIND_NULL && n > c->max_stdin_size) {
			job_too_big(err, errlen, "stdin is", "", n, "max_stdin_size", c->max_stdin_size);
			return false;
		}
	}
	jv args = rec_get(req, REQ_KEY(args));
	bool ok = job_args_ok(args, err, errlen);
	jv_free(args);
	return ok;
}

/* Limits: language defaults over sandbox defaults; a request may set
 * those limit.h marks as its own, within [minimum, ceiling], where a
 * language's own default above the global ceiling (the JVM needs more)
 * is its ceiling.  The compile stage's stay the language's. */
bool job_req_limits(const struct conf *c, jv req, struct limits *run, char *err, size_t errlen)
{
	for (int i = 0; i < LIM_N; i++) {
		const struct limit_def *d = &limit_defs[i];
		if (!d->req)
			continue;
		char a[32], b[32];
		double v = 0;
		jv rv = rec_get(req, d->req);
		jv_kind k = jv_get_kind(rv);
		bool ok = limit_from_request(i, rv, &v, err, errlen);
		jv_free(rv);
		if (!ok)
			return false;
		/* (absent or null: the default; a negative number is out of
		 * range like any other, never taken for "not given") */
		if (k == JV_KIND_INVALID || k == JV_KIND_NULL)
			continue;
		double max = fmax(limit_get(&c->ceiling, i), limit_get(run, i));
		if (v > max) {
			snprintf(err, errlen, "%s %s exceeds max_%s %s", d->req, limit_str(i, v, a, sizeof a), d->conf,
				 limit_str(i, max, b, sizeof b));
			return false;
		}
		if (v < d->min) {
			snprintf(err, errlen, "%s %s is below the minimum of %s", d->req, limit_str(i, v, a, sizeof a),
				 limit_str(i, d->min, b, sizeof b));
			return false;
		}
		limit_set(run, i, v);
	}
	return true;
}

/* A background job's timeout defaults to the session's life, which is
 * also the most it may ask (job_req_limits takes the larger of the
 * ceiling and the default as the bound). */
static bool req_limits(const struct conf *c, const struct conf_lang *l, jv req, bool background, struct limits *run,
		       struct limits *comp, char *err, size_t errlen)
{
	conf_lang_limits(c, l, run, comp);
	if (background) {
		run->timeout_ms = c->session_max_life_ms;
		double t = 0;
		jv v = rec_get(req, limit_defs[LIM_timeout_ms].req);
		bool asked = limit_from_request(LIM_timeout_ms, v, &t, err, errlen) && jv_get_kind(v) == JV_KIND_NUMBER;
		jv_free(v);
		if (asked && t > (double)c->session_max_life_ms) {
			char a[32], b[32];
			snprintf(err, errlen, "%s %s exceeds max_life %s (a background job lives at most as long as a session)",
				 limit_defs[LIM_timeout_ms].req, limit_str(LIM_timeout_ms, t, a, sizeof a),
				 limit_str(LIM_timeout_ms, (double)c->session_max_life_ms, b, sizeof b));
			return false;
		}
	}
	return job_req_limits(c, req, run, err, errlen);
}

/* What a request's network asks for: nothing, the host's own network
 * (where the configuration says "host"), the configuration's whole list,
 * or the request's own list (a job's exec.network: false, true, the
 * patterns; exec_json). */
enum net_ask { NET_NONE, NET_HOST, NET_CONF, NET_OWN };

/* network: false; true, all the configuration allows; or a list of host
 * patterns within its list.  artifacts: a boolean. */
static bool req_network(const struct conf *c, jv req, enum net_ask *ask, char *err, size_t errlen)
{
	*ask = NET_NONE;
	bool a;
	if (rec_has(req, REQ_KEY(artifacts)) && !rec_bool(req, REQ_KEY(artifacts), &a)) {
		snprintf(err, errlen, "\"%s\" must be true or false", REQ_KEY(artifacts));
		return false;
	}
	jv nv = rec_get(req, REQ_KEY(network));
	jv_kind k = jv_get_kind(nv);
	bool none = !c->network.host && !c->network.hosts;
	if (k == JV_KIND_INVALID || k == JV_KIND_NULL || k == JV_KIND_FALSE ||
	    (k == JV_KIND_ARRAY && jv_array_length(jv_copy(nv)) == 0)) {
		jv_free(nv);
		return true;
	}
	if (k != JV_KIND_TRUE && k != JV_KIND_ARRAY) {
		jv_free(nv);
		snprintf(err, errlen, "\"%s\" must be false, true (all the configuration allows) or a list of hosts such as "
				      "[\"pypi.org\", \"*.github.com\", \"example.org:80\"]", REQ_KEY(network));
		return false;
	}
	if (none) {
		jv_free(nv);
		snprintf(err, errlen, "\"%s\": the configuration allows runs no network (network = false in %s)", REQ_KEY(network),
			 c->path);
		return false;
	}
	if (k == JV_KIND_TRUE) {
		jv_free(nv);
		*ask = c->network.host ? NET_HOST : NET_CONF;
		return true;
	}
	int n = jv_array_length(jv_copy(nv));
	bool ok = n <= HOSTPAT_LIST_MAX;
	if (!ok)
		snprintf(err, errlen, "\"%s\": at most %d host patterns", REQ_KEY(network), HOSTPAT_LIST_MAX);
	for (int i = 0; ok && i < n; i++) {
		jv e = jv_array_get(jv_copy(nv), i);
		char why[400];
		if (jv_get_kind(e) != JV_KIND_STRING || !hostpat_ok(jv_string_value(e), why, sizeof why)) {
			snprintf(err, errlen, "\"%s\": %s", REQ_KEY(network),
				 jv_get_kind(e) == JV_KIND_STRING ? why : "each element must be a host pattern (a string)");
			ok = false;
		} else if (!c->network.host && !hostpat_covers(c->network.hosts, jv_string_value(e))) {
			size_t o = (size_t)snprintf(err, errlen, "\"%s\": \"%s\" is not within what the configuration allows (",
						    REQ_KEY(network), jv_string_value(e));
			for (char **h = c->network.hosts; *h && o < errlen; h++)
				o += (size_t)snprintf(err + o, errlen - o, "%s%s", h == c->network.hosts ? "" : ", ", *h);
			if (o < errlen)
				snprintf(err + o, errlen - o, " in %s)", c->path);
			ok = false;
		}
		jv_free(e);
	}
	jv_free(nv);
	*ask = ok ? NET_OWN : NET_NONE;
	return ok;
}

/* user_approved: which of network's patterns a session's user
 * approved when asked (sbx-mcp's approve on deny), kept with the run in
 * the history: each one of network's own. */
static bool req_approved(jv req, char *err, size_t errlen)
{
	if (!rec_has(req, REQ_KEY(user_approved)))
		return true;
	jv ap = rec_get(req, REQ_KEY(user_approved)), net = rec_get(req, REQ_KEY(network));
	bool ok = jv_get_kind(ap) == JV_KIND_ARRAY && jv_get_kind(net) == JV_KIND_ARRAY;
	if (ok)
		jv_array_foreach(ap, i, a) {
			bool listed = false;
			if (jv_get_kind(a) == JV_KIND_STRING)
				jv_array_foreach(net, k, p) {
					listed |= jv_equal(jv_copy(a), p);
				}
			ok &= listed;
			jv_free(a);
		}
	jv_free(ap);
	jv_free(net);
	if (!ok)
		snprintf(err, errlen, "\"%s\" lists patterns of the request's \"%s\" list", REQ_KEY(user_approved),
			 REQ_KEY(network));
	return ok;
}

bool job_network_ok(const struct conf *c, jv v, char *err, size_t errlen)
{
	jv req = jv_object_set(jv_object(), jv_string(REQ_KEY(network)), jv_copy(v));
	enum net_ask ask;
	bool ok = req_network(c, req, &ask, err, errlen);
	jv_free(req);
	return ok;
}

/* A background job (a session's process, sbx-mcp's process_start): it
 * runs beside other jobs until its program ends, so its timeout is the
 * session's life ([sessions] max_life) unless it asks less; a terminal
 * (tty) only for one, since only a background job's input comes while it
 * runs.  env and cwd may go with any program: variables over its
 * language's, and a start directory beneath the session's workspace. */
#define ENV_MAX 128
#define ENV_BYTES (64 * 1024)
#define TTY_MAX 1000

static bool req_env(jv req, char *err, size_t errlen)
{
	jv env = rec_get(req, REQ_KEY(env));
	jv_kind k = jv_get_kind(env);
	bool ok = true;
	size_t n = 0, bytes = 0;
	if (k == JV_KIND_OBJECT) {
		jv_object_foreach(env, name, val) {
			const char *nm = jv_string_value(name);
			bool good = nm[0] && !(nm[0] >= '0' && nm[0] <= '9');
			for (const char *q = nm; good && *q; q++)
				good = (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_';
			if (ok && !good) {
				snprintf(err, errlen, "\"%s\": \"%.60s\" is not a variable name (letters, digits and _, not first a digit)",
					 REQ_KEY(env), nm);
				ok = false;
			} else if (ok && (jv_get_kind(val) != JV_KIND_STRING ||
					  strlen(jv_string_value(val)) != (size_t)jv_string_length_bytes(jv_copy(val)))) {
				snprintf(err, errlen, "\"%s\": the value of %.60s must be a string without NUL bytes", REQ_KEY(env), nm);
				ok = false;
			} else if (ok)
				bytes += strlen(nm) + 2 + strlen(jv_string_value(val));
			n++;
			jv_free(name);
			jv_free(val);
		}
		if (ok && (n > ENV_MAX || bytes > ENV_BYTES)) {
			snprintf(err, errlen, "\"%s\" may hold %d variables of %d KiB in all", REQ_KEY(env), ENV_MAX, ENV_BYTES / 1024);
			ok = false;
		}
	} else if (k != JV_KIND_INVALID && k != JV_KIND_NULL) {
		snprintf(err, errlen, "\"%s\" must be an object of variable names to strings", REQ_KEY(env));
		ok = false;
	}
	jv_free(env);
	return ok;
}

/* tty: true or {rows, cols}, each 1 to TTY_MAX; *rows 0 without one. */
static bool req_tty(jv req, unsigned *rows, unsigned *cols, char *err, size_t errlen)
{
	*rows = *cols = 0;
	jv t = rec_get(req, REQ_KEY(tty));
	jv_kind k = jv_get_kind(t);
	bool ok = true;
	if (k == JV_KIND_TRUE) {
		*rows = 24;
		*cols = 80;
	} else if (k == JV_KIND_OBJECT) {
		double r = 24, c = 80;
		bool unknown = false;
		jv_object_foreach(t, key, val) {
			unknown |= strcmp(jv_string_value(key), "rows") && strcmp(jv_string_value(key), "cols");
			jv_free(key);
			jv_free(val);
		}
		ok = !unknown && (!rec_has(t, "rows") || (rec_num(t, "rows", &r) && r == floor(r) && r >= 1 && r <= TTY_MAX)) &&
		     (!rec_has(t, "cols") || (rec_num(t, "cols", &c) && c == floor(c) && c >= 1 && c <= TTY_MAX));
		if (ok) {
			*rows = (unsigned)r;
			*cols = (unsigned)c;
		}
	} else if (k != JV_KIND_INVALID && k != JV_KIND_NULL && k != JV_KIND_FALSE)
		ok = false;
	jv_free(t);
	if (!ok)
		snprintf(err, errlen, "\"%s\" must be true, false or {\"rows\": R, \"cols\": C} with whole numbers 1 to %d",
			 REQ_KEY(tty), TTY_MAX);
	return ok;
}

static bool req_process(const struct conf *c, jv req, bool *background, unsigned *rows, unsigned *cols, char *err,
			size_t errlen)
{
	*background = false;
	if (rec_has(req, REQ_KEY(background)) && !rec_bool(req, REQ_KEY(background), background)) {
		snprintf(err, errlen, "\"%s\" must be true or false", REQ_KEY(background));
		return false;
	}
	if (!req_env(req, err, errlen) || !req_tty(req, rows, cols, err, errlen))
		return false;
	/* An install is the configured package manager and no more: a
	 * variable (NODE_OPTIONS, PIP_FIND_LINKS) could make it install what
	 * install_specs refuses. */
	const char *extra = rec_has(req, REQ_KEY(env)) ? REQ_KEY(env) : rec_has(req, REQ_KEY(cwd)) ? REQ_KEY(cwd) : NULL;
	if (extra && rec_has(req, REQ_KEY(install))) {
		snprintf(err, errlen, "\"%s\" does not go with \"%s\": an install runs the configured package manager as it is",
			 extra, REQ_KEY(install));
		return false;
	}
	if (*rows && !*background) {
		snprintf(err, errlen, "\"%s\" goes with \"%s\": true (only a background job's input comes while it runs)",
			 REQ_KEY(tty), REQ_KEY(background));
		return false;
	}
	if (rec_has(req, REQ_KEY(cwd))) {
		size_t n;
		const char *cwd = rec_str(req, REQ_KEY(cwd), &n);
		char why[128];
		if (!cwd || !job_path_ok(cwd, n, why, sizeof why)) {
			snprintf(err, errlen, "\"%s\" must be a relative path in the workspace: %s", REQ_KEY(cwd),
				 cwd ? why : "not a string");
			return false;
		}
		if (!rec_has(req, REQ_KEY(session))) {
			snprintf(err, errlen, "\"%s\" is a directory of a session's workspace: give \"%s\"", REQ_KEY(cwd),
				 REQ_KEY(session));
			return false;
		}
	}
	if (!*background)
		return true;
	if (!c->max_processes) {
		snprintf(err, errlen, "background jobs are off here (max_processes 0 in %s)", c->path);
		return false;
	}
	const char *other = rec_has(req, REQ_KEY(tests))     ? REQ_KEY(tests)
			    : rec_has(req, REQ_KEY(cell))    ? REQ_KEY(cell)
			    : rec_has(req, REQ_KEY(install)) ? REQ_KEY(install)
			    : rec_has(req, REQ_KEY(stdin))   ? REQ_KEY(stdin)
							     : NULL;
	if (other) {
		snprintf(err, errlen, "\"%s\" does not go with \"%s\": a background job is one program whose input comes "
			 "while it runs", other, REQ_KEY(background));
		return false;
	}
	return true;
}

/* session: the job runs in that session's workspace (made by sbx-mcp's
 * sandbox_initialize; state between runs is its files).  *workspace is
 * its directory (the caller frees), NULL without a session. */
static bool req_session(const struct conf *c, jv req, char **workspace, char *err, size_t errlen)
{
	*workspace = NULL;
	if (!rec_has(req, REQ_KEY(session)))
		return true;
	size_t n;
	const char *sid = rec_str(req, REQ_KEY(session), &n);
	if (!sid || !state_session_id_ok(sid, n)) {
		snprintf(err, errlen, "\"%s\" must be a session id (32 hexadecimal digits)", REQ_KEY(session));
		return false;
	}
	char *dir = state_session_dir(c, sid);
	struct stat st;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "unknown session \"%s\" (it expired, was stopped, or never existed)", sid);
		free(dir);
		return false;
	}
	*workspace = dir;
	return true;
}

/* Where a session's inline code goes.  It never goes over a user's file:
 * an interpreted language's is a file of its own at the workspace's top
 * (NS_RESERVED-HEX-main.py, so that its directory is the workspace's and
 * "import helper" finds helper.py), a compiled language's goes with its
 * outputs in a directory of its own (NS_RESERVED-HEX: javac wants
 * Main.java); HEX is of the id, so that a job validated again is the same
 * job.  The run removes them.  dir stays "." (and prog "") otherwise. */
static void session_program(jv req, const struct conf_lang *l, const char *file, char dir[64], char prog[256])
{
	struct sha256 h;
	char hex[65], num[40];
	jv idv = rec_get(req, REQ_KEY(id));
	snprintf(num, sizeof num, "%.17g", jv_get_kind(idv) == JV_KIND_NUMBER ? jv_number_value(idv) : 0);
	sha256_init(&h);
	sha256_str(&h, jv_get_kind(idv) == JV_KIND_STRING ? jv_string_value(idv) : num);
	jv_free(idv);
	sha256_final_hex(&h, hex);
	if (l->compile) {
		snprintf(dir, 64, NS_RESERVED "-%.16s", hex);
		snprintf(prog, 256, "%s/%s", dir, file);
	} else
		snprintf(prog, 256, NS_RESERVED "-%.16s-%s", hex, file);
}

/* The first top-level type the code declares public (Java's "public
 * [final|abstract|sealed|...] class|interface|enum|record NAME"), for a
 * language whose file must bear its name (file_by_class): true with NAME
 * in out.  Comments, strings, character literals and text blocks are
 * skipped, and so is everything inside braces; a name of other than
 * ASCII letters, digits, _ and $ is left to the compiler (the file keeps
 * its configured name, and javac says why). */
static bool public_class(const char *s, size_t n, char *out, size_t len)
{
	int depth = 0;
	bool pub = false, want = false;
	for (size_t i = 0; i < n;) {
		char c = s[i];
		if (c == '/' && i + 1 < n && s[i + 1] == '/') {
			while (i < n && s[i] != '\n')
				i++;
		} else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
			const char *e = memmem(s + i + 2, n - i - 2, "*/", 2);
			i = e ? (size_t)(e - s) + 2 : n;
		} else if (c == '"' && i + 2 < n && s[i + 1] == '"' && s[i + 2] == '"') {
			const char *e = memmem(s + i + 3, n - i - 3, "\"\"\"", 3);
			i = e ? (size_t)(e - s) + 3 : n;
		} else if (c == '"' || c == '\'') {
			for (i++; i < n && s[i] != c && s[i] != '\n'; i++)
				if (s[i] == '\\')
					i++;
			i++;
		} else if (c == '{' || c == '}') {
			depth += c == '{' ? 1 : -1;
			pub = want = false;
			i++;
		} else if (c == ';') {
			pub = want = false;
			i++;
		} else if (isalpha((unsigned char)c) || c == '_' || c == '$') {
			size_t b = i;
			while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '$'))
				i++;
			size_t w = i - b;
			if (depth != 0 || (i < n && (unsigned char)s[i] >= 0x80))
				continue;
			if (want) {
				if (w >= len)
					return false;
				memcpy(out, s + b, w);
				out[w] = 0;
				return true;
			}
			static const char *const kinds[] = { "class", "interface", "enum", "record" };
			if (w == 6 && !memcmp(s + b, "public", 6))
				pub = true;
			for (size_t k = 0; pub && k < sizeof kinds / sizeof kinds[0]; k++)
				want |= w == strlen(kinds[k]) && !memcmp(s + b, kinds[k], w);
		} else
			i++;
	}
	return false;
}

/* What job_from_request found out about the job it makes. */
struct plan {
	const struct conf *c;
	const struct conf_lang *l;
	enum prog prog;
	const char *entry;         /* P_ENTRY's workspace file, borrowed from the request */
	char *workspace;           /* the session's directory, or NULL (owned) */
	struct limits run, comp;
	enum net_ask net;
	bool installing;
	bool background;           /* a session's process (req_process) */
	unsigned rows, cols;       /* its terminal's size, or 0 */
	const char *backend;
	/* The program file's names (plan_names). */
	char dir[64], prog_path[256], cls[101], file[128];
	const char *prog_file, *cls_arg;
};

/* Where the program file goes and what it is called.  Java's rule: the
 * file bears the public class's name, and the run command's class is it
 * (argv_json). */
static void plan_names(struct plan *p, jv req)
{
	const struct conf_lang *l = p->l;
	size_t code_len;
	const char *code = rec_str(req, REQ_KEY(code), &code_len), *dot = strrchr(l->file, '.');
	size_t stem = dot ? (size_t)(dot - l->file) : strlen(l->file);
	bool renamed = l->file_by_class && p->prog == P_CODE && code && public_class(code, code_len, p->cls, sizeof p->cls) &&
		       !(strlen(p->cls) == stem && !strncmp(p->cls, l->file, stem));
	snprintf(p->dir, sizeof p->dir, ".");
	p->prog_path[0] = 0;
	snprintf(p->file, sizeof p->file, "%s%s", renamed ? p->cls : l->file, renamed && dot ? dot : "");
	if (p->workspace && p->prog == P_CODE && !p->installing)
		session_program(req, l, p->file, p->dir, p->prog_path);
	p->prog_file = p->prog_path[0] ? p->prog_path : renamed ? p->file : NULL;
	p->cls_arg = renamed ? p->cls : NULL;
}

/* With a cwd, the program's own paths in its run command (consumed) are
 * made absolute: the file of a session's inline code or entry, and what
 * its own directory holds, are relative to the workspace's top, not to
 * where the program starts. */
static jv rooted(jv runv, const struct plan *p)
{
	const char *file = p->prog == P_ENTRY ? p->entry : p->prog_path[0] ? p->prog_path : NULL;
	size_t dl = strlen(p->dir);
	jv out = jv_array();
	jv_array_foreach(runv, i, e) {
		const char *s = jv_string_value(e);
		if ((file && !strcmp(s, file)) || (strcmp(p->dir, ".") && !strncmp(s, p->dir, dl) && s[dl] == '/'))
			out = jv_array_append(out, jv_string_fmt("%s/%s", NS_WORKDIR, s));
		else
			out = jv_array_append(out, jv_copy(e));
		jv_free(e);
		(void)i;
	}
	jv_free(runv);
	return out;
}

/* The run stage's command with the request's args: the language's run
 * command on the program file or on the session's entry (whose text
 * becomes the record's code), the session's command, or a cell's kernel;
 * jv_invalid() with err. */
static jv run_command(const struct plan *p, jv *req, char *err, size_t errlen)
{
	const struct conf_lang *l = p->l;
	if (p->prog == P_ENTRY) {
		jv text = read_entry(p->workspace, p->entry, p->c->max_code_size, err, errlen);
		if (!jv_is_valid(text))
			return text;
		*req = jv_object_set(*req, jv_string(REQ_KEY(code)), text);
	}
	jv runv;
	if (p->prog == P_COMMAND)
		runv = rec_get(*req, REQ_KEY(command));
	else if (p->prog == P_CELL) /* no program: the code goes to the kernel, the run stage's command */
		runv = argv_json(l->kernel, l, NULL, NULL, p->dir, &p->run);
	else
		runv = argv_json(l->run, l, p->prog == P_ENTRY ? p->entry : p->prog_file, p->cls_arg, p->dir, &p->run);
	if (p->prog_path[0] && !argv_mentions(runv, l->compile ? p->dir : p->prog_path)) {
		snprintf(err, errlen, "language \"%s\" cannot run inline code in a session: its run command names its "
			 "program neither by an output nor by {dir} (see %s)", l->name, p->c->path);
		jv_free(runv);
		return jv_invalid();
	}
	if (p->workspace && rec_has(*req, REQ_KEY(cwd)) && p->prog != P_COMMAND)
		runv = rooted(runv, p);
	jv args = rec_get(*req, REQ_KEY(args));
	if (jv_get_kind(args) == JV_KIND_ARRAY)
		return jv_array_concat(runv, args);
	jv_free(args);
	return runv;
}

/* The language's environment (consumed) with the request's env over it:
 * a variable the request names replaces the language's of that name. */
static jv env_json(jv lang, jv req)
{
	jv env = rec_get(req, REQ_KEY(env));
	if (jv_get_kind(env) != JV_KIND_OBJECT || jv_get_kind(lang) != JV_KIND_ARRAY) {
		jv_free(env);
		return lang;
	}
	jv out = jv_array();
	jv_array_foreach(lang, i, e) {
		const char *kv = jv_string_value(e), *eq = strchr(kv, '=');
		char name[256];
		snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - kv) : 0, kv);
		if (eq && eq - kv < (long)sizeof name && rec_has(env, name))
			jv_free(e);
		else
			out = jv_array_append(out, e);
		(void)i;
	}
	jv_object_foreach(env, name, val) {
		out = jv_array_append(out, jv_string_fmt("%s=%s", jv_string_value(name), jv_string_value(val)));
		jv_free(name);
		jv_free(val);
	}
	jv_free(env);
	jv_free(lang);
	return out;
}

/* The job's "exec": what runs (the commands, the program file and its
 * directory), where (rootfs or image, the session's workspace), with what
 * of the host (environment, binds, network), and a judged job's tests and
 * checker.  Borrows req, runv, tests and checker. */
static jv exec_json(const struct plan *p, jv req, jv runv, jv tests, jv checker, bool compiling)
{
	const struct conf_lang *l = p->l;
	jv exec = jv_object();
	exec = jv_object_set(exec, jv_string("file"), p->prog == P_CODE && !p->installing
							     ? jv_string(p->prog_path[0] && !l->compile ? p->prog_path : p->file)
							     : jv_null());
	if (p->prog_path[0] && l->compile)
		exec = jv_object_set(exec, jv_string("dir"), jv_string(p->dir));
	exec = jv_object_set(exec, jv_string("compile"),
			     compiling ? argv_json(l->compile, l, p->prog_file, p->cls_arg, p->dir, &p->comp) : jv_null());
	exec = jv_object_set(exec, jv_string("run"), jv_copy(runv));
	/* One environment serves both stages: it takes the run stage's limits. */
	/* check-names: exec.env, NAME=value strings, is not the request's env */
	exec = jv_object_set(exec, jv_string("env"), env_json(argv_json(l->env, l, NULL, NULL, p->dir, &p->run), req));
	exec = jv_object_set(exec, jv_string("binds"), strv_json(l->binds));
	exec = jv_object_set(exec, jv_string("rootfs"), l->rootfs ? jv_string(l->rootfs) : jv_null());
	exec = jv_object_set(exec, jv_string("image"), l->image ? jv_string(l->image) : jv_null());
	exec = jv_object_set(exec, jv_string(REQ_KEY(network)), p->net == NET_OWN    ? rec_get(req, REQ_KEY(network))
								: p->net == NET_CONF ? strv_json(p->c->network.hosts)
										     : jv_bool(p->net == NET_HOST));
	if (p->workspace) {
		exec = jv_object_set(exec, jv_string("workspace"), jv_string(p->workspace));
		exec = jv_object_set(exec, jv_string("workspace_exec"), jv_bool(p->c->workspace_exec));
	}
	if (p->installing)
		exec = jv_object_set(exec, jv_string(REQ_KEY(install)), jv_true());
	if (p->prog == P_CELL)
		exec = jv_object_set(exec, jv_string("kernel"), jv_true());
	if (rec_has(req, REQ_KEY(cwd)))
		exec = jv_object_set(exec, jv_string(REQ_KEY(cwd)), rec_get(req, REQ_KEY(cwd)));
	if (p->background)
		exec = jv_object_set(exec, jv_string(REQ_KEY(background)), jv_true());
	if (p->rows) {
		jv t = jv_object_set(jv_object(), jv_string("rows"), jv_number(p->rows));
		exec = jv_object_set(exec, jv_string(REQ_KEY(tty)), jv_object_set(t, jv_string("cols"), jv_number(p->cols)));
	}
	if (jv_get_kind(tests) == JV_KIND_ARRAY)
		exec = jv_object_set(exec, jv_string(REQ_KEY(tests)), jv_copy(tests));
	if (jv_get_kind(checker) == JV_KIND_OBJECT)
		exec = jv_object_set(exec, jv_string(REQ_KEY(checker)), jv_copy(checker));
	return exec;
}

/* Why the request's own value of a field sbx-validate computes is
 * refused, or nothing: the first of the computed fields (RW_COMPUTED), in
 * table order, whose value differs from want[its row] (computed_differs),
 * which the caller fills for each of them.  All borrowed. */
static void refuse_computed(jv req, const jv want[REQ_N], const char *backend, char *err, size_t errlen)
{
	int set = -1;
	for (int i = 0; i < REQ_N && set < 0; i++)
		if ((req_field(i)->where & RW_COMPUTED) && computed_differs(req, req_field(i)->name, want[i]))
			set = i;
	if (set == REQ_limits) {
		/* the limits a request sets itself: "timeout", "memory", ... */
		size_t o = (size_t)snprintf(err, errlen, "\"%s\" is computed by sbx-validate and cannot be set: use ",
					    REQ_KEY(limits));
		int n = 0, k = 0;
		for (int i = 0; i < LIM_N; i++)
			n += limit_defs[i].req != NULL;
		for (int i = 0; i < LIM_N && o < errlen; i++)
			if (limit_defs[i].req)
				o += (size_t)snprintf(err + o, errlen - o, "%s\"%s\"", !k++ ? "" : k == n ? " and " : ", ",
						      limit_defs[i].req);
	} else if (set == REQ_backend)
		snprintf(err, errlen, "\"%s\" is chosen by the configuration or SBX_BACKEND, not by a request (here: \"%s\")",
			 REQ_KEY(backend), backend);
	else if (set >= 0)
		snprintf(err, errlen, "\"%s\" is computed by sbx-validate from the configuration and cannot be set",
			 req_field(set)->name);
}

/* The job: req with what sbx-validate computes added ("exec", "limits",
 * "compile_limits", "backend"), or an invalid record saying why not.
 * Consumes req and p->workspace. */
static jv with_computed(struct plan *p, jv req)
{
	const struct conf *c = p->c;
	const struct conf_lang *l = p->l;
	char why[768] = "";
	plan_names(p, req);
	jv runv = run_command(p, &req, why, sizeof why);
	/* Judged: each test's run command and limits, and the checker's job. */
	jv tests = jv_null(), checker = jv_null();
	const struct req_field *judging = rec_has(req, REQ_KEY(tests)) ? NULL : req_first(req, RW_JUDGING, 0);
	if (!why[0] && judging)
		snprintf(why, sizeof why, "\"%s\" judges a program's \"%s\": give them", judging->name, REQ_KEY(tests));
	else if (!why[0] && rec_has(req, REQ_KEY(tests)))
		tests = judge_exec(c, req, runv, &p->run, p->prog == P_CODE ? p->file : NULL, &checker, why, sizeof why);
	if (!why[0] && p->installing) {
		jv_free(runv);
		runv = registry_install_argv(c, l, rec_get(req, REQ_KEY(install)), p->workspace != NULL, why, sizeof why);
		/* Only this step reaches the registries, and only through its
		 * proxy (egress.h): no network of its own.  It gets the compile
		 * stage's larger limits. */
		for (int i = 0; i < LIM_N; i++)
			if (limit_defs[i].compile && i != LIM_cpus && limit_get(&p->comp, i) > limit_get(&p->run, i))
				limit_set(&p->run, i, limit_get(&p->comp, i));
	}
	/* The compile stage: its own values of the limits that have one, the
	 * run's (as the request set them) of the rest. */
	for (int i = 0; i < LIM_N; i++)
		if (!limit_defs[i].compile)
			limit_set(&p->comp, i, limit_get(&p->run, i));
	bool compiling = l->compile && !p->installing && p->prog == P_CODE;
	jv exec = why[0] ? jv_invalid() : exec_json(p, req, runv, tests, checker, compiling);
	jv limits = limits_to_json(&p->run), climits = compiling ? limits_to_json(&p->comp) : jv_null();
	jv bk = jv_string(p->backend);
	if (!why[0]) {
		const jv want[REQ_N] = { [REQ_limits] = limits, [REQ_compile_limits] = climits, [REQ_exec] = exec,
					 [REQ_backend] = bk };
		refuse_computed(req, want, p->backend, why, sizeof why);
	}
	if (why[0])
		req = rec_make_invalid(req, "%s", why);
	else {
		req = jv_object_set(req, jv_string(REQ_KEY(backend)), jv_copy(bk));
		req = jv_object_set(req, jv_string(REQ_KEY(limits)), jv_copy(limits));
		if (jv_get_kind(climits) == JV_KIND_OBJECT)
			req = jv_object_set(req, jv_string(REQ_KEY(compile_limits)), jv_copy(climits));
		else if (rec_has(req, REQ_KEY(compile_limits)))
			req = jv_object_delete(req, jv_string(REQ_KEY(compile_limits)));
		req = jv_object_set(req, jv_string(REQ_KEY(exec)), jv_copy(exec));
	}
	free(p->workspace);
	p->workspace = NULL;
	jv_free(runv);
	jv_free(tests);
	jv_free(checker);
	jv_free(exec);
	jv_free(limits);
	jv_free(climits);
	jv_free(bk);
	return req;
}

/* cell: the code is a cell for the session's kernel of its language
 * (cell.h), not a program: inline code only, in a session, of a language
 * with a kernel; "reset" restarts that kernel first. */
static bool req_cell(const struct conf_lang *l, jv req, bool *cell, char *err, size_t errlen)
{
	*cell = false;
	bool reset = false;
	if (rec_has(req, REQ_KEY(reset)) && !rec_bool(req, REQ_KEY(reset), &reset)) {
		snprintf(err, errlen, "\"%s\" must be true or false", REQ_KEY(reset));
		return false;
	}
	if (!rec_has(req, REQ_KEY(cell))) {
		if (rec_has(req, REQ_KEY(reset)))
			snprintf(err, errlen, "\"%s\" restarts a kernel: it goes with \"%s\": true", REQ_KEY(reset), REQ_KEY(cell));
		return !rec_has(req, REQ_KEY(reset));
	}
	if (!rec_bool(req, REQ_KEY(cell), cell) || !*cell) {
		snprintf(err, errlen, "\"%s\" must be true (the code is a cell for the session's kernel)", REQ_KEY(cell));
		return false;
	}
	/* A kernel outlives its first cell: no network for any of them. */
	const struct req_field *alone = req_first(req, RW_REQ, RW_CELL);
	if (alone) {
		snprintf(err, errlen, "a cell is inline \"code\" for a kernel: \"%s\" does not go with \"cell\"", alone->name);
		return false;
	}
	if (!rec_has(req, REQ_KEY(session))) {
		snprintf(err, errlen, "a cell runs in a session's kernel: give \"%s\"", REQ_KEY(session));
		return false;
	}
	if (!l->kernel) {
		snprintf(err, errlen, "language \"%s\" has no kernel (the configuration gives it no \"kernel\" command)", l->name);
		return false;
	}
	return true;
}

jv job_from_request(const struct conf *c, jv req)
{
	char why[768];
	if (!req_id(&req, why, sizeof why) || !req_spelling(req, why, sizeof why) || !req_principal(req, why, sizeof why))
		return rec_make_invalid(req, "%s", why);
	const struct conf_lang *l = req_language(c, &req, why, sizeof why);
	if (!l)
		return rec_make_invalid(req, "%s", why);
	/* install: a package manager run into a session's workspace, instead
	 * of a program (no code). */
	bool installing = rec_has(req, REQ_KEY(install));
	if (installing && !rec_has(req, REQ_KEY(code)))
		req = jv_object_set(req, jv_string(REQ_KEY(code)), jv_string("# packages installed by sbx\n"));
	struct plan p = { .c = c, .l = l, .installing = installing };
	bool cell;
	if (!req_process(c, req, &p.background, &p.rows, &p.cols, why, sizeof why) || !req_cell(l, req, &cell, why, sizeof why) || !req_program(l, &req, installing, &p.prog, &p.entry, why, sizeof why) ||
	    !req_data(c, req, p.prog, why, sizeof why))
		return rec_make_invalid(req, "%s", why);
	{
		struct job_file *f;
		size_t nf;
		jv files = rec_get(req, REQ_KEY(files));
		bool ok = job_files_load(c, files, rec_has(req, REQ_KEY(session)) || p.prog != P_CODE ? NULL : l->file, &f, &nf, why, sizeof why);
		jv_free(files);
		if (!ok)
			return rec_make_invalid(req, "%s", why);
		job_files_free(f, nf);
	}
	if (!req_limits(c, l, req, p.background, &p.run, &p.comp, why, sizeof why) || !req_network(c, req, &p.net, why, sizeof why) ||
	    !req_approved(req, why, sizeof why))
		return rec_make_invalid(req, "%s", why);
	if (installing && p.net != NET_NONE)
		return rec_make_invalid(req, "an install reaches its language's registries only: \"%s\" does not go with \"%s\"",
					REQ_KEY(network), REQ_KEY(install));
	/* Is the runtime there at all?  Only knowable for the native backend. */
	p.backend = probe_backend(c);
	const char *missing = !strcmp(p.backend, "native") ? probe_lang_missing(c, l) : NULL;
	if (missing)
		return rec_make_invalid(req, "language \"%s\" is configured but its program \"%s\" is not installed%s%s%s",
					l->name, missing, l->hint ? " (install it: " : "", l->hint ? l->hint : "", l->hint ? ")" : "");
	if (!req_session(c, req, &p.workspace, why, sizeof why))
		return rec_make_invalid(req, "%s", why);
	if (cell)
		p.prog = P_CELL;
	return with_computed(&p, req);
}
