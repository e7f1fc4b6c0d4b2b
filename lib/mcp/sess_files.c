/* sess_files: the file tools of a session (write_file, read_file,
 * list_files), confined to its workspace as sess.h says, and the checks of
 * a client's path the other tools use too.  See sess_int.h.
 */
#define _GNU_SOURCE
#include "sess_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b64.h"
#include "layout.h"
#include "rec.h"
#include "utf8.h"
#include "util.h"

#define MAX_LIST 1000

/* A client's path, args[key]: relative, no "." or "..", no empty components, no
 * NUL (which would cut it short), bounded; for writing, not in the names
 * the sandbox gives meaning to (NS_DEPS: what the package manager
 * installed, which every later run may load and execute).  Borrowed from
 * args, or NULL with err. */
const char *sess_client_path(jv args, const char *key, bool writing, char *err, size_t errlen)
{
	size_t n = 0;
	const char *p = rec_str(args, key, &n);
	bool ok = p && n > 0 && n < 1024 && strlen(p) == n && p[0] != '/';
	for (const char *c = p; ok && *c;) {
		const char *end = strchrnul(c, '/');
		size_t len = (size_t)(end - c);
		/* "." too: "./.deps/x" must meet the checks ".deps/x" does */
		if (len == 0 || (len == 1 && *c == '.') || (len == 2 && !strncmp(c, "..", 2)))
			ok = false;
		c = *end ? end + 1 : end;
	}
	if (!ok) {
		snprintf(err, errlen, "%s \"%.100s\" must be relative to the workspace, without \".\" or \"..\" parts, empty parts or NUL",
			 key, p ? p : "");
		return NULL;
	}
	if (ns_reserved(p)) {
		snprintf(err, errlen, "%s \"%.100s\": names beginning " NS_RESERVED " are sbx's own", key, p);
		return NULL;
	}
	size_t dl = strlen(NS_DEPS);
	if (writing && !strncmp(p, NS_DEPS, dl) && (p[dl] == 0 || p[dl] == '/')) {
		snprintf(err, errlen, "%s \"%.100s\": " NS_DEPS " is the installed packages' (install_packages writes it; runs "
			 "see it read-only)", key, p);
		return NULL;
	}
	return p;
}

static int open_workspace(struct session *x, char *err, size_t errlen)
{
	int fd = open(x->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		snprintf(err, errlen, "the workspace is gone: %s", strerror(errno));
	return fd;
}

/* What a write's ENOSPC means in a workspace. */
static const char *full(int e)
{
	return e == ENOSPC || e == EDQUOT ? " (the workspace is full: its quota is workspace_size)" : "";
}

/* PATH (checked by sess_client_path) in the workspace DIR holds DATA, or
 * nothing changed: a failed call leaves the workspace as it was.  Parent
 * directories are made one component at a time, each opened beneath the
 * last, so no link is ever followed; the data goes to a temporary name
 * beside the target and is renamed over it, so whatever was there (a
 * file, or a link or FIFO a program planted) stays whole until the new
 * file is.  On failure the temporary file and every directory this call
 * made are removed: all of those lie below the first one it made. */
static bool write_file(int top, const char *path, const void *data, size_t len, struct owner own, char *err,
		       size_t errlen)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", path);
	char *base = buf;
	int dir = fcntl(top, F_DUPFD_CLOEXEC, 0);
	int made_in = -1;              /* the parent of the first directory made, */
	const char *made = NULL;       /* and its name */
	bool ok = dir >= 0;
	for (char *slash; ok && (slash = strchr(base, '/')); base = slash + 1) {
		*slash = 0;
		bool mk = mkdirat(dir, base, 0755) == 0;
		if (mk && !made) {
			made_in = fcntl(dir, F_DUPFD_CLOEXEC, 0);
			made = base;
		}
		int next = -1;
		if ((mk || errno == EEXIST) && (!mk || fchownat(dir, base, own.uid, own.gid, AT_SYMLINK_NOFOLLOW) == 0))
			next = util_open_beneath(dir, base, O_PATH | O_DIRECTORY, 0);
		if (next < 0) {
			snprintf(err, errlen, "cannot use directory \"%s\": %s%s", base, strerror(errno), full(errno));
			ok = false;
		}
		close(dir);
		dir = next;
	}
	struct stat st;
	if (ok && fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "\"%s\" is a directory", path);
		ok = false;
	}
	char tmp[40] = ".sbx-write-";
	int fd = -1;
	for (int i = 0; ok && fd < 0 && i < 4; i++) {
		util_random_hex(tmp + 11, 8);
		fd = util_open_beneath(dir, tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (ok && fd < 0) {
		snprintf(err, errlen, "cannot create \"%s\": %s%s", path, strerror(errno), full(errno));
		ok = false;
	}
	if (ok && (util_write_all(fd, data, len) < 0 || fchown(fd, own.uid, own.gid) < 0 ||
		   renameat(dir, tmp, dir, base) < 0)) {
		snprintf(err, errlen, "cannot write \"%s\": %s%s", path, strerror(errno), full(errno));
		ok = false;
	}
	if (fd >= 0) {
		close(fd);
		if (!ok)
			unlinkat(dir, tmp, 0);
	}
	if (!ok && made)
		util_remove_at(made_in, made);
	if (made_in >= 0)
		close(made_in);
	if (dir >= 0)
		close(dir);
	return ok;
}

static bool do_write(struct sessions *s, struct session *x, jv args, jv *out, char *err, size_t errlen)
{
	const char *path = sess_client_path(args, "path", true, err, errlen);
	size_t n;
	const char *content = rec_str(args, "content", &n);
	const char *enc = rec_str(args, "encoding", NULL);
	if (!path)
		return false;
	char *data = NULL;
	size_t len = n;
	if (enc && !strcmp(enc, "base64")) {
		data = b64_decode(content, n, &len);
		if (!data) {
			snprintf(err, errlen, "content is not valid base64");
			return false;
		}
	} else if (enc && strcmp(enc, "utf-8")) {
		snprintf(err, errlen, "encoding must be utf-8 or base64");
		return false;
	}
	if (len > s->conf->max_files_size) {
		char a[32], b[32];
		snprintf(err, errlen, "the file is %s, more than %s (max_files_size)", util_size_str(len, a, sizeof a),
			 util_size_str(s->conf->max_files_size, b, sizeof b));
		free(data);
		return false;
	}
	int dir = open_workspace(x, err, errlen);
	if (dir < 0) {
		free(data);
		return false;
	}
	bool ok = write_file(dir, path, data ? data : content, len, sess_sandbox_owner(s), err, errlen);
	close(dir);
	free(data);
	if (ok) {
		*out = jv_object_set(jv_object(), jv_string("path"), jv_string(path));
		*out = jv_object_set(*out, jv_string("bytes"), jv_number((double)len));
	}
	return ok;
}

bool sess_read_file(struct sessions *s, struct session *x, jv args, jv *out, char *err, size_t errlen)
{
	const char *path = sess_client_path(args, "path", false, err, errlen);
	if (!path)
		return false;
	int dir = open_workspace(x, err, errlen);
	if (dir < 0)
		return false;
	/* O_NONBLOCK: a FIFO planted under this name must not hang us. */
	int fd = util_open_beneath(dir, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	close(dir);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open \"%s\": %s%s", path, strerror(errno),
			 errno == ELOOP || errno == EXDEV ? " (symbolic links are not followed)" : "");
		return false;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "\"%s\" is not a regular file", path);
		return false;
	}
	size_t cap = s->conf->max_files_size;
	char *buf = util_xalloc(cap + 1);
	ssize_t n = util_read_full(fd, buf, cap + 1);
	close(fd);
	if (n < 0) {
		free(buf);
		snprintf(err, errlen, "cannot read \"%s\": %s", path, strerror(errno));
		return false;
	}
	bool truncated = (size_t)n > cap;
	size_t len = truncated ? cap : (size_t)n;
	if (truncated)
		len = utf8_floor(buf, len);
	jv o = jv_object_set(jv_object(), jv_string("path"), jv_string(path));
	if (utf8_valid(buf, len, NULL) && !memchr(buf, 0, len)) {
		o = jv_object_set(o, jv_string("content"), jv_string_sized(buf, (int)len));
		o = jv_object_set(o, jv_string("encoding"), jv_string("utf-8"));
	} else {
		size_t elen;
		char *enc = b64_encode(buf, len, &elen);
		o = jv_object_set(o, jv_string("content"), jv_string_sized(enc, (int)elen));
		o = jv_object_set(o, jv_string("encoding"), jv_string("base64"));
		free(enc);
	}
	o = jv_object_set(o, jv_string("bytes"), jv_number((double)st.st_size));
	*out = jv_object_set(o, jv_string("truncated"), jv_bool(truncated));
	free(buf);
	return true;
}

void sess_list_dir(int dirfd, const char *prefix, jv *files, int *count, int depth)
{
	DIR *d = util_opendirat(dirfd);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && *count <= MAX_LIST) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (!*prefix && ns_reserved(e->d_name)))
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		char *p = *prefix ? util_fmt("%s/%s", prefix, e->d_name) : util_strdup(e->d_name);
		if (++*count > MAX_LIST) {
			free(p);
			break;
		}
		const char *type = S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "dir" : S_ISLNK(st.st_mode) ? "symlink" : "other";
		jv f = jv_object_set(jv_object(), jv_string("path"), jv_string(p));
		f = jv_object_set(f, jv_string("type"), jv_string(type));
		f = jv_object_set(f, jv_string("size"), jv_number((double)st.st_size));
		*files = jv_array_append(*files, f);
		if (S_ISDIR(st.st_mode) && depth < 32) {
			int sub = util_open_beneath(dirfd, e->d_name, O_PATH | O_DIRECTORY, 0);
			if (sub >= 0) {
				sess_list_dir(sub, p, files, count, depth + 1);
				close(sub);
			}
		}
		free(p);
	}
	closedir(d);
}

static bool do_list(struct session *x, jv args, jv *out, char *err, size_t errlen)
{
	const char *path = rec_has(args, "path") ? rec_str(args, "path", NULL) : NULL;
	if (path && strcmp(path, ".") && !(path = sess_client_path(args, "path", false, err, errlen)))
		return false;
	int dir = open_workspace(x, err, errlen);
	if (dir < 0)
		return false;
	int start = dir;
	if (path && strcmp(path, ".")) {
		start = util_open_beneath(dir, path, O_PATH | O_DIRECTORY, 0);
		close(dir);
		if (start < 0) {
			snprintf(err, errlen, "cannot list \"%s\": %s", path, strerror(errno));
			return false;
		}
	}
	jv files = jv_array();
	int count = 0;
	sess_list_dir(start, path && strcmp(path, ".") ? path : "", &files, &count, 0);
	close(start);
	*out = jv_object_set(jv_object(), jv_string("files"), files); /* check-names: list_files' answer */
	*out = jv_object_set(*out, jv_string("truncated"), jv_bool(count > MAX_LIST));
	return true;
}

bool sess_tool_write(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	return x && do_write(s, x, args, out, err, errlen);
}

bool sess_tool_read(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	return x && sess_read_file(s, x, args, out, err, errlen);
}

bool sess_tool_list(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	struct session *x = sess_tool_session(s, owner, args, out, req, err, errlen);
	return x && do_list(x, args, out, err, errlen);
}
