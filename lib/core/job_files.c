#define _GNU_SOURCE
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "layout.h"
#include "rec.h"
#include "req.h"
#include "util.h"

/* The files of a request, a test or a job, both sides' (job.h): their
 * paths' rules and their content, decoded and checked against the
 * configuration's max_files and max_files_size. */

#define MAX_PATH_LEN 1024
#define MAX_PATH_DEPTH 32

bool job_path_ok(const char *p, size_t len, char *err, size_t errlen)
{
	const char *msg = NULL;
	if (len == 0)
		msg = "is empty";
	else if (len > MAX_PATH_LEN)
		msg = "is longer than 1024 bytes";
	else if (memchr(p, 0, len))
		msg = "contains a NUL byte";
	else if (p[0] == '/')
		msg = "is absolute (paths are relative to the working directory)";
	else {
		int depth = 0;
		for (size_t i = 0; i < len && !msg;) {
			size_t j = i;
			while (j < len && p[j] != '/')
				j++;
			size_t n = j - i;
			if (n == 0)
				msg = "has an empty component (//) or a trailing /";
			else if (n == 2 && p[i] == '.' && p[i + 1] == '.')
				msg = "contains ..";
			else if (n == 1 && p[i] == '.')
				msg = "contains a . component";
			else if (n > 255)
				msg = "has a component longer than 255 bytes";
			else if (++depth > MAX_PATH_DEPTH)
				msg = "is nested more than 32 directories deep";
			i = j + 1;
			if (j == len - 1 && p[j] == '/')
				msg = "has an empty component (//) or a trailing /";
		}
	}
	if (msg) {
		snprintf(err, errlen, "%s", msg);
		return false;
	}
	return true;
}

/* ---- files: {"path": "text"} or {"path": {"content": …, "encoding": "base64"}} */

static bool file_data(jv v, char **data, size_t *len, char *err, size_t errlen)
{
	if (jv_get_kind(v) == JV_KIND_STRING) {
		*len = (size_t)jv_string_length_bytes(jv_copy(v));
		*data = util_strndup(jv_string_value(v), *len);
		return true;
	}
	if (jv_get_kind(v) != JV_KIND_OBJECT) {
		snprintf(err, errlen, "must be a string or {\"content\": …, \"encoding\": \"base64\"}, got %s", rec_kind(v));
		return false;
	}
	size_t clen, elen = 0;
	const char *content = rec_str(v, "content", &clen);
	const char *enc = rec_str(v, "encoding", &elen);
	if (!content) {
		snprintf(err, errlen, "\"content\" must be a string");
		return false;
	}
	if (rec_has(v, "encoding") && !enc) {
		snprintf(err, errlen, "\"encoding\" must be a string (\"utf-8\" or \"base64\")");
		return false;
	}
	if (!enc || !strcmp(enc, "utf-8") || !strcmp(enc, "text")) {
		*data = util_strndup(content, clen);
		*len = clen;
		return true;
	}
	if (strcmp(enc, "base64")) {
		snprintf(err, errlen, "unknown encoding \"%.40s\" (\"utf-8\" or \"base64\")", enc);
		return false;
	}
	*data = b64_decode(content, clen, len);
	if (!*data) {
		snprintf(err, errlen, "content is not valid base64");
		return false;
	}
	return true;
}

void job_files_free(struct job_file *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(f[i].path);
		free(f[i].data);
	}
	free(f);
}

/* Decode and check the "files" object (borrowed).  `program` is the
 * language's file name, which a file may not replace. */
bool job_files_load(const struct conf *c, jv files, const char *program, struct job_file **out, size_t *nout, char *err,
		    size_t errlen)
{
	*out = NULL;
	*nout = 0;
	if (jv_get_kind(files) == JV_KIND_INVALID || jv_get_kind(files) == JV_KIND_NULL)
		return true;
	if (jv_get_kind(files) != JV_KIND_OBJECT) {
		snprintf(err, errlen, "\"%s\" must be an object of path: content, got %s", REQ_KEY(files), rec_kind(files));
		return false;
	}
	size_t n = (size_t)jv_object_length(jv_copy(files));
	if (n > c->max_files) {
		snprintf(err, errlen, "%zu files exceed max_files %llu", n, (unsigned long long)c->max_files);
		return false;
	}
	struct job_file *f = util_xalloc((n + 1) * sizeof *f);
	size_t i = 0, total = 0;
	bool ok = true;
	jv_object_foreach(files, key, val)
	{
		if (ok) {
			char why[128];
			size_t klen = (size_t)jv_string_length_bytes(jv_copy(key));
			const char *k = jv_string_value(key);
			if (!job_path_ok(k, klen, why, sizeof why)) {
				snprintf(err, errlen, "files: path \"%.100s\" %s", k, why);
				ok = false;
			} else if (program && !strcmp(k, program)) {
				snprintf(err, errlen, "files: \"%s\" would replace the program file", k);
				ok = false;
			} else if (!strncmp(k, NS_DEPS, strlen(NS_DEPS)) && (k[strlen(NS_DEPS)] == '/' || !k[strlen(NS_DEPS)])) {
				/* A session's installed packages: executable in its runs, so
				 * only its installs write there. */
				snprintf(err, errlen, "files: \"%.100s\": " NS_DEPS " is the installed packages' (install_packages fills it)", k);
				ok = false;
			} else if (ns_reserved(k)) {
				snprintf(err, errlen, "files: \"%.100s\": names beginning " NS_RESERVED " are sbx's own", k);
				ok = false;
			} else {
				char ferr[256];
				f[i].path = util_strndup(k, klen);
				if (!file_data(val, &f[i].data, &f[i].len, ferr, sizeof ferr)) {
					snprintf(err, errlen, "files: \"%.100s\": %s", k, ferr);
					ok = false;
				} else {
					total += f[i].len;
					i++;
				}
			}
		}
		jv_free(key);
		jv_free(val);
	}
	if (ok && total > c->max_files_size) {
		job_too_big(err, errlen, "files total", "", total, "max_files_size", c->max_files_size);
		ok = false;
	}
	/* A file may not also be a directory of another ("a" and "a/b"). */
	for (size_t x = 0; ok && x < i; x++)
		for (size_t y = 0; ok && y < i; y++) {
			size_t lx = strlen(f[x].path);
			if (x != y && !strncmp(f[x].path, f[y].path, lx) && f[y].path[lx] == '/') {
				snprintf(err, errlen, "files: \"%.100s\" is both a file and a directory", f[x].path);
				ok = false;
			}
		}
	if (!ok) {
		job_files_free(f, i + 1);
		return false;
	}
	*out = f;
	*nout = i;
	return true;
}
