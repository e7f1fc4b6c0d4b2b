#define _GNU_SOURCE
#include "sess.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "b64.h"
#include "mcptools.h"
#include "ns.h"
#include "rec.h"
#include "utf8.h"
#include "util.h"

#define MAX_LIST 1000

struct session {
	char id[33];
	char *dir;
	char *language;        /* default for sandbox_exec, or NULL */
	unsigned owner;        /* only its owner's clients see it */
	uint64_t ttl_ms;
	double last_used;      /* util_now_ms */
	int lockfd;
	struct session *next;
};

struct sessions {
	struct loop *loop;
	const struct conf *conf;
	char *base;            /* STATE_DIR/sessions */
	int timer;
	struct session *list;
	unsigned n;
};

static int openat2_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = mode,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd;
	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	while (fd < 0 && errno == EAGAIN);
	return (int)fd;
}

/* Host uid owning workspace files: the sandbox's program user. */
static uid_t sandbox_uid(const struct sessions *s)
{
	return geteuid() == 0 ? (uid_t)s->conf->uid + 1 : geteuid();
}

/* rm -rf below dirfd, never following a link (a workspace is sandboxed
 * code's playground: it may hold links to anything). */
static void remove_tree(int dirfd)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				remove_tree(sub);
			unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
		} else
			unlinkat(dirfd, e->d_name, 0);
	}
	closedir(d);
}

static void remove_dir(const char *base, const char *id)
{
	char *dir = util_fmt("%s/%s", base, id);
	/* the tmpfs of a root server (EINVAL where there is none) */
	umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		remove_tree(fd);
	rmdir(dir);
	free(dir);
	char *lock = util_fmt("%s/.%s.lock", base, id);
	unlink(lock);
	free(lock);
}

static bool is_id(const char *s)
{
	size_t i = 0;
	for (; s[i] && i < 33; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 32;
}

/* Workspaces whose lock no live server holds are leftovers of one that
 * died: remove them. */
static void remove_orphans(struct sessions *s)
{
	DIR *d = opendir(s->base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!is_id(e->d_name))
			continue;
		char *lock = util_fmt("%s/.%s.lock", s->base, e->d_name);
		int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		free(lock);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			util_warn("removing the workspace of a session no server holds: %s", e->d_name);
			remove_dir(s->base, e->d_name);
		}
		close(fd);
	}
	closedir(d);
}

static struct session *find(struct sessions *s, const char *id)
{
	for (struct session *x = s->list; x; x = x->next)
		if (!strcmp(x->id, id))
			return x;
	return NULL;
}

void sess_remove(struct sessions *s, const char *id)
{
	for (struct session **p = &s->list; *p; p = &(*p)->next) {
		struct session *x = *p;
		if (strcmp(x->id, id))
			continue;
		*p = x->next;
		remove_dir(s->base, x->id);
		close(x->lockfd);
		free(x->dir);
		free(x->language);
		free(x);
		s->n--;
		return;
	}
}

static void on_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct sessions *s = arg;
	uint64_t ticks;
	if (read(fd, &ticks, sizeof ticks) < 0)
		return;
	double now = util_now_ms();
	for (struct session *x = s->list, *next; x; x = next) {
		next = x->next;
		if (now - x->last_used > (double)x->ttl_ms) {
			util_warn("session %s expired after %.0f s idle", x->id, (double)x->ttl_ms / 1000);
			sess_remove(s, x->id);
		}
	}
	(void)l;
	(void)rev;
}

struct sessions *sess_new(struct loop *l, const struct conf *c)
{
	struct sessions *s = util_xalloc(sizeof *s);
	s->loop = l;
	s->conf = c;
	s->base = util_fmt("%s/sessions", c->state_dir);
	s->timer = -1;
	if (util_mkdir_p(s->base, 0711) == 0)
		remove_orphans(s);
	s->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->timer >= 0) {
		/* Expiry is checked every few seconds: a session lives at most
		 * that much past its time-to-live. */
		struct itimerspec it = { .it_interval = { 5, 0 }, .it_value = { 5, 0 } };
		timerfd_settime(s->timer, 0, &it, NULL);
		loop_watch(l, s->timer, POLLIN, on_timer, s);
	}
	return s;
}

void sess_free(struct sessions *s)
{
	if (!s)
		return;
	while (s->list)
		sess_remove(s, s->list->id);
	if (s->timer >= 0) {
		loop_unwatch(s->loop, s->timer);
		close(s->timer);
	}
	free(s->base);
	free(s);
}

char *sess_create(struct sessions *s, unsigned owner, const char *language, uint64_t ttl_ms, char *err, size_t errlen)
{
	const struct conf *c = s->conf;
	if (s->n >= c->max_sessions) {
		snprintf(err, errlen, "too many sessions (max_sessions %llu): stop one with sandbox_stop first",
			 (unsigned long long)c->max_sessions);
		return NULL;
	}
	/* What one HTTP token may hold (owner 0 is the stdio client, alone):
	 * max_sessions_per_token workspaces, each of workspace_size bytes
	 * and as many inodes. */
	unsigned mine = 0;
	for (struct session *x = s->list; x; x = x->next)
		mine += x->owner == owner;
	if (owner && mine >= c->max_sessions_per_token) {
		snprintf(err, errlen, "too many sessions for this token (max_sessions_per_token %llu): stop one with sandbox_stop first",
			 (unsigned long long)c->max_sessions_per_token);
		return NULL;
	}
	if (language && !conf_lang(c, language)) {
		snprintf(err, errlen, "unsupported language \"%.60s\" (list_supported_languages lists them)", language);
		return NULL;
	}
	if (util_mkdir_p(s->base, 0711) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", s->base, strerror(errno));
		return NULL;
	}
	struct session *x = util_xalloc(sizeof *x);
	unsigned char rnd[16];
	util_random(rnd, sizeof rnd);
	for (int i = 0; i < 16; i++)
		snprintf(x->id + 2 * i, 3, "%02x", rnd[i]);
	x->dir = util_fmt("%s/%s", s->base, x->id);
	char *lock = util_fmt("%s/.%s.lock", s->base, x->id);
	x->lockfd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(lock);
	uid_t uid = sandbox_uid(s);
	if (x->lockfd < 0 || flock(x->lockfd, LOCK_EX) < 0 || mkdir(x->dir, 0700) < 0) {
		snprintf(err, errlen, "cannot create the workspace %s: %s", x->dir, strerror(errno));
		goto fail;
	}
	if (geteuid() == 0) {
		/* The quota is the kernel's: a tmpfs of workspace_size, and of
		 * as many inodes (the memory a session can pin between runs). */
		char opt[160];
		snprintf(opt, sizeof opt, "size=%llu,nr_inodes=%llu,mode=0755,uid=%u,gid=%u",
			 (unsigned long long)c->workspace_size, (unsigned long long)ns_tmpfs_inodes(c->workspace_size),
			 (unsigned)uid, (unsigned)uid);
		if (mount("sbx-session", x->dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opt) < 0) {
			snprintf(err, errlen, "cannot mount the workspace %s: %s", x->dir, strerror(errno));
			goto fail;
		}
	} else if (chmod(x->dir, 0755) < 0) {
		snprintf(err, errlen, "cannot set up the workspace %s: %s", x->dir, strerror(errno));
		goto fail;
	}
	if (chown(x->dir, uid, uid) < 0 && geteuid() == 0) {
		snprintf(err, errlen, "cannot set up the workspace %s: %s", x->dir, strerror(errno));
		goto fail;
	}
	/* Installed packages go here: made now, so that no program can be
	 * first to create it (runs see it read-only, see ns_attach_work). */
	char *deps = util_fmt("%s/" NS_DEPS, x->dir);
	int made = mkdir(deps, 0755) == 0 && lchown(deps, uid, uid) == 0 ? 0 : -1;
	free(deps);
	if (made < 0 && geteuid() == 0) {
		snprintf(err, errlen, "cannot set up the workspace %s: %s", x->dir, strerror(errno));
		goto fail;
	}
	x->language = language ? util_strdup(conf_lang(c, language)->name) : NULL;
	x->ttl_ms = ttl_ms ? ttl_ms : c->session_ttl_ms;
	x->owner = owner;
	x->last_used = util_now_ms();
	x->next = s->list;
	s->list = x;
	s->n++;
	return util_strdup(x->id);
fail:
	remove_dir(s->base, x->id);
	if (x->lockfd >= 0)
		close(x->lockfd);
	free(x->dir);
	free(x);
	return NULL;
}

/* ---- the tools ------------------------------------------------------------ */

static struct session *get(struct sessions *s, unsigned owner, jv args, char *err, size_t errlen)
{
	const char *id = rec_str(args, "session_id", NULL);
	struct session *x = id && is_id(id) ? find(s, id) : NULL;
	if (!x || x->owner != owner) {
		snprintf(err, errlen, "unknown session \"%.40s\": it expired, was stopped, or was never made by this server "
			 "(sandbox_initialize makes one)", id ? id : "");
		return NULL;
	}
	x->last_used = util_now_ms();
	return x;
}

/* A client's path, args[key]: relative, no "..", no empty components, no
 * NUL (which would cut it short), bounded; for writing, not in the names
 * the sandbox gives meaning to (NS_DEPS: what the package manager
 * installed, which every later run may load and execute).  Borrowed from
 * args, or NULL with err. */
static const char *client_path(jv args, const char *key, bool writing, char *err, size_t errlen)
{
	size_t n = 0;
	const char *p = rec_str(args, key, &n);
	bool ok = p && n > 0 && n < 1024 && strlen(p) == n && p[0] != '/';
	for (const char *c = p; ok && *c;) {
		const char *end = strchrnul(c, '/');
		size_t len = (size_t)(end - c);
		if (len == 0 || (len == 2 && !strncmp(c, "..", 2)))
			ok = false;
		c = *end ? end + 1 : end;
	}
	if (!ok) {
		snprintf(err, errlen, "%s \"%.100s\" must be relative to the workspace, without \"..\", empty parts or NUL",
			 key, p ? p : "");
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

static bool do_write(struct sessions *s, struct session *x, jv args, jv *out, char *err, size_t errlen)
{
	const char *path = client_path(args, "path", true, err, errlen);
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
	bool ok = dir >= 0;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", path);
	char *base = buf;
	uid_t owner = sandbox_uid(s);
	/* Parent directories, one component at a time, each opened beneath
	 * the last: no link is ever followed. */
	for (char *slash; ok && (slash = strchr(base, '/')); base = slash + 1) {
		*slash = 0;
		if (mkdirat(dir, base, 0755) == 0)
			fchownat(dir, base, owner, owner, AT_SYMLINK_NOFOLLOW);
		int next = openat2_beneath(dir, base, O_PATH | O_DIRECTORY, 0);
		if (next < 0) {
			snprintf(err, errlen, "cannot use directory \"%s\": %s", base, strerror(errno));
			ok = false;
		}
		close(dir);
		dir = next;
	}
	if (ok) {
		/* Replace whatever is there (a planted link or FIFO too). */
		struct stat st;
		if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "\"%s\" is a directory", path);
			ok = false;
		} else
			unlinkat(dir, base, 0);
	}
	int fd = ok ? openat2_beneath(dir, base, O_WRONLY | O_CREAT | O_EXCL, 0644) : -1;
	if (ok && fd < 0) {
		snprintf(err, errlen, "cannot create \"%s\": %s", path, strerror(errno));
		ok = false;
	}
	if (ok && (util_write_all(fd, data ? data : content, len) < 0 || fchown(fd, owner, owner) < 0)) {
		snprintf(err, errlen, "cannot write \"%s\": %s%s", path, strerror(errno),
			 errno == ENOSPC ? " (the workspace is full: its quota is workspace_size)" : "");
		ok = false;
	}
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	free(data);
	if (ok) {
		*out = jv_object_set(jv_object(), jv_string("path"), jv_string(path));
		*out = jv_object_set(*out, jv_string("bytes"), jv_number((double)len));
	}
	return ok;
}

static bool do_read(struct sessions *s, struct session *x, jv args, jv *out, char *err, size_t errlen)
{
	const char *path = client_path(args, "path", false, err, errlen);
	if (!path)
		return false;
	int dir = open_workspace(x, err, errlen);
	if (dir < 0)
		return false;
	/* O_NONBLOCK: a FIFO planted under this name must not hang us. */
	int fd = openat2_beneath(dir, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
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

static void list_dir(int dirfd, const char *prefix, jv *files, int *count, int depth)
{
	DIR *d = util_opendirat(dirfd);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && *count <= MAX_LIST) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
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
			int sub = openat2_beneath(dirfd, e->d_name, O_PATH | O_DIRECTORY, 0);
			if (sub >= 0) {
				list_dir(sub, p, files, count, depth + 1);
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
	if (path && strcmp(path, ".") && !(path = client_path(args, "path", false, err, errlen)))
		return false;
	int dir = open_workspace(x, err, errlen);
	if (dir < 0)
		return false;
	int start = dir;
	if (path && strcmp(path, ".")) {
		start = openat2_beneath(dir, path, O_PATH | O_DIRECTORY, 0);
		close(dir);
		if (start < 0) {
			snprintf(err, errlen, "cannot list \"%s\": %s", path, strerror(errno));
			return false;
		}
	}
	jv files = jv_array();
	int count = 0;
	list_dir(start, path && strcmp(path, ".") ? path : "", &files, &count, 0);
	close(start);
	*out = jv_object_set(jv_object(), jv_string("files"), files);
	*out = jv_object_set(*out, jv_string("truncated"), jv_bool(count > MAX_LIST));
	return true;
}

/* 'a b' -> "'a b'", for the bash line that runs a file or a command. */
static void shell_quote(char **line, size_t *len, const char *arg)
{
	size_t need = strlen(arg) * 4 + 4;
	*line = util_xrealloc(*line, *len + need + 1);
	char *o = *line + *len;
	*o++ = ' ';
	*o++ = '\'';
	for (const char *p = arg; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else
			*o++ = *p;
	}
	*o++ = '\'';
	*o = 0;
	*len = (size_t)(o - *line);
}

static jv exec_request(struct sessions *s, struct session *x, jv args, char *err, size_t errlen)
{
	const char *code = rec_str(args, "code", NULL);
	const char *file = rec_has(args, "file") ? client_path(args, "file", false, err, errlen) : NULL;
	if (rec_has(args, "file") && !file)
		return jv_invalid();
	jv command = rec_get(args, "command");
	bool has_cmd = jv_get_kind(command) == JV_KIND_ARRAY;
	if ((code != NULL) + (file != NULL) + has_cmd != 1) {
		jv_free(command);
		snprintf(err, errlen, "give exactly one of \"code\", \"file\" or \"command\"");
		return jv_invalid();
	}
	const char *language = rec_str(args, "language", NULL);
	if (!language)
		language = x->language;
	jv req = jv_object_set(jv_object(), jv_string("session"), jv_string(x->id));
	static const char *const pass[] = { "stdin", "timeout", NULL };
	for (int i = 0; pass[i]; i++)
		if (rec_has(args, pass[i]))
			req = jv_object_set(req, jv_string(pass[i]), jv_object_get(jv_copy(args), jv_string(pass[i])));
	if (code) {
		jv_free(command);
		if (!language) {
			jv_free(req);
			snprintf(err, errlen, "\"language\" is needed (the session has no default language)");
			return jv_invalid();
		}
		req = jv_object_set(req, jv_string("language"), jv_string(language));
		req = jv_object_set(req, jv_string("code"), jv_string(code));
		if (rec_has(args, "args"))
			req = jv_object_set(req, jv_string("args"), rec_get(args, "args"));
		return req;
	}
	/* A file or a command runs as one bash line, `exec`ed. */
	char *line = util_strdup("exec");
	size_t len = 4;
	if (file) {
		jv_free(command);
		/* The language: given, else by the file's extension, else the
		 * session's. */
		const struct conf_lang *l = language ? conf_lang(s->conf, language) : NULL;
		const char *ext = strrchr(file, '.');
		for (size_t i = 0; !l && ext && i < s->conf->nlangs; i++) {
			const char *e2 = strrchr(s->conf->langs[i].file, '.');
			if (e2 && !strcmp(e2, ext))
				l = &s->conf->langs[i];
		}
		if (!l && x->language)
			l = conf_lang(s->conf, x->language);
		if (!l || l->compile) {
			free(line);
			jv_free(req);
			snprintf(err, errlen, l ? "\"file\" runs interpreted languages; compile %s code with \"code\"" :
						  "cannot tell the language of \"%s\": give \"language\"", l ? l->name : file);
			return jv_invalid();
		}
		for (char **a = l->run; *a; a++)
			shell_quote(&line, &len, !strcmp(*a, l->file) ? file : *a);
	} else {
		int n = jv_array_length(jv_copy(command));
		if (n == 0) {
			jv_free(command);
			free(line);
			jv_free(req);
			snprintf(err, errlen, "\"command\" is empty");
			return jv_invalid();
		}
		jv_array_foreach(command, i, a) {
			shell_quote(&line, &len, jv_string_value(a));
			jv_free(a);
		}
		jv_free(command);
	}
	jv extra = rec_has(args, "args") ? rec_get(args, "args") : jv_array();
	if (jv_get_kind(extra) == JV_KIND_ARRAY)
		jv_array_foreach(extra, i, a) {
			if (jv_get_kind(a) == JV_KIND_STRING)
				shell_quote(&line, &len, jv_string_value(a));
			jv_free(a);
		}
	jv_free(extra);
	req = jv_object_set(req, jv_string("language"), jv_string("bash"));
	req = jv_object_set(req, jv_string("code"), jv_string(line));
	free(line);
	return req;
}

static jv install_request(struct session *x, const char *language, jv packages)
{
	jv req = jv_object_set(jv_object(), jv_string("session"), jv_string(x->id));
	req = jv_object_set(req, jv_string("language"), jv_string(language));
	return jv_object_set(req, jv_string("install"), packages);
}

bool sess_tool(struct sessions *s, unsigned owner, int kind, jv args, jv *out, jv *req, char *err, size_t errlen)
{
	*out = jv_invalid();
	*req = jv_invalid();
	if (kind == MCP_T_INIT) {
		double ttl = 0;
		if (rec_num(args, "ttl", &ttl) && (ttl < 1 || ttl > 86400 * 30 || ttl != ttl)) {
			snprintf(err, errlen, "ttl must be from 1 to 2592000 seconds");
			return false;
		}
		const char *lang = rec_str(args, "language", NULL);
		jv deps = rec_get(args, "dependencies");
		bool install = jv_get_kind(deps) == JV_KIND_ARRAY && jv_array_length(jv_copy(deps)) > 0;
		if (install && !lang) {
			jv_free(deps);
			snprintf(err, errlen, "\"dependencies\" needs \"language\" (whose package manager installs them)");
			return false;
		}
		char *id = sess_create(s, owner, lang, (uint64_t)(ttl * 1000), err, errlen);
		if (!id) {
			jv_free(deps);
			return false;
		}
		struct session *x = find(s, id);
		char when[40];
		util_iso8601(util_epoch_ms() + (double)x->ttl_ms, when, sizeof when);
		jv o = jv_object_set(jv_object(), jv_string("session_id"), jv_string(id));
		o = jv_object_set(o, jv_string("language"), x->language ? jv_string(x->language) : jv_null());
		o = jv_object_set(o, jv_string("expires_at"), jv_string(when));
		o = jv_object_set(o, jv_string("ttl_seconds"), jv_number((double)x->ttl_ms / 1000));
		*out = jv_object_set(o, jv_string("workspace_bytes"), jv_number((double)s->conf->workspace_size));
		if (install)
			*req = install_request(x, x->language, deps);
		else
			jv_free(deps);
		free(id);
		return true;
	}
	struct session *x = get(s, owner, args, err, errlen);
	if (!x)
		return false;
	switch (kind) {
	case MCP_T_STOP: {
		jv o = jv_object_set(jv_object(), jv_string("session_id"), jv_string(x->id));
		sess_remove(s, x->id);
		*out = jv_object_set(o, jv_string("stopped"), jv_true());
		return true;
	}
	case MCP_T_WRITE: return do_write(s, x, args, out, err, errlen);
	case MCP_T_READ: return do_read(s, x, args, out, err, errlen);
	case MCP_T_LIST: return do_list(x, args, out, err, errlen);
	case MCP_T_EXEC:
		*req = exec_request(s, x, args, err, errlen);
		return jv_is_valid(*req);
	case MCP_T_INSTALL: {
		const char *lang = rec_str(args, "language", NULL);
		if (!lang)
			lang = x->language;
		if (!lang) {
			snprintf(err, errlen, "\"language\" is needed (the session has no default language)");
			return false;
		}
		*req = install_request(x, lang, rec_get(args, "packages"));
		return true;
	}
	}
	snprintf(err, errlen, "not a session tool");
	return false;
}
