/* ccache: the compile cache; see ccache.h for the contract.
 *
 * What goes into the key, and why each part: the backend and the compiler's
 * identity (the resolved binary's device, inode, size and mtime on the
 * host, so an upgraded compiler misses), the compile argv and the environment (GOFLAGS, -O levels), the
 * compile limits (a compile that ran out of memory under one limit may
 * succeed under another), the program's file name, code and every request
 * file with its path.  Parts are length-prefixed so that no two different
 * jobs hash the same byte stream.
 *
 * The scratch directory after a compile was written by a compiler working
 * on untrusted input, so it is read like untrusted data: no links
 * followed, regular files only, at most MAX_FILES of them and the stage's
 * scratch size in all.
 */
#define _GNU_SOURCE
#include "ccache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rec.h"
#include "sha256.h"
#include "state.h"
#include "util.h"

#define MAX_FILES 256

void ccache_init(struct ccache *c, const struct conf *conf, bool enabled)
{
	memset(c, 0, sizeof *c);
	if (!enabled || !conf->compile_cache || conf->cache_size == 0)
		return;
	c->dir = state_cache_dir(conf);
	c->max_bytes = conf->cache_size;
	c->shared = conf->compile_cache_shared;
	mkdir(conf->state_dir, 0755);
	if (mkdir(c->dir, 0700) < 0 && errno != EEXIST) {
		util_warn("compile cache off: cannot create %s: %s", c->dir, strerror(errno));
		free(c->dir);
		c->dir = NULL;
	}
}

void ccache_free(struct ccache *c)
{
	free(c->dir);
	c->dir = NULL;
}

bool ccache_cacheable(const struct job *j)
{
	return j->compile && !j->workspace && !j->install;
}

bool ccache_key(const struct ccache *c, const struct job *j, const char *compiler_id, char key[65])
{
	if (!ccache_cacheable(j) || !compiler_id || !*compiler_id)
		return false;
	struct sha256 h;
	sha256_init(&h);
	sha256_str(&h, "sbx-ccache-3");
	/* Whose: a hit is fast and says "cached", so a shared entry tells one
	 * token what another compiled.  The stdio client and the pipeline
	 * are one principal, without one. */
	sha256_str(&h, c->shared || !j->principal ? "" : j->principal);
	sha256_str(&h, j->backend);
	sha256_str(&h, compiler_id);
	for (char **a = j->compile; *a; a++)
		sha256_str(&h, *a);
	sha256_str(&h, "--env");
	for (char **e = j->env; e && *e; e++)
		sha256_str(&h, *e);
	sha256_str(&h, "--binds");
	for (char **b = j->binds; b && *b; b++)
		sha256_str(&h, *b);
	/* Every limit of the compile stage: each may change what it made
	 * (a compiler killed at its memory, its output capped). */
	for (int i = 0; i < LIM_N; i++) {
		char v[64];
		snprintf(v, sizeof v, "%s=%.17g", limit_defs[i].job, limit_get(&j->clim, i));
		sha256_str(&h, v);
	}
	sha256_str(&h, j->file);
	sha256_part(&h, j->code, j->code_len);
	for (size_t i = 0; i < j->nfiles; i++) {
		sha256_str(&h, j->files[i].path);
		sha256_part(&h, j->files[i].data, j->files[i].len);
	}
	sha256_final_hex(&h, key);
	return true;
}

void ccache_files_free(struct ccache_file *files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(files[i].path);
		free(files[i].data);
	}
	free(files);
}

/* Remove an entry directory (flat: manifest and f<N>). */
static void remove_entry(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

static char *read_all(int dfd, const char *name, size_t max, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char *buf = util_xalloc((size_t)st.st_size + 1);
	ssize_t got = util_read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	if (got != (ssize_t)st.st_size) {
		free(buf);
		return NULL;
	}
	buf[got] = 0;
	*len = (size_t)got;
	return buf;
}

bool ccache_get(struct ccache *c, const char *key, struct ccache_file **files, size_t *n, jv *compile)
{
	*files = NULL;
	*n = 0;
	if (!c->dir)
		return false;
	char *dir = util_fmt("%s/%s", c->dir, key);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		free(dir);
		return false;
	}
	size_t mlen;
	char *mtext = read_all(dfd, "manifest.json", 1 << 20, &mlen);
	jv m = mtext ? jv_parse_sized(mtext, (int)mlen) : jv_invalid();
	free(mtext);
	bool ok = jv_get_kind(m) == JV_KIND_OBJECT;
	jv list = ok ? rec_get(m, "files") : jv_invalid();
	jv comp = ok ? rec_get(m, "compile") : jv_invalid();
	ok = jv_get_kind(list) == JV_KIND_ARRAY && jv_get_kind(comp) == JV_KIND_OBJECT &&
	     jv_array_length(jv_copy(list)) <= MAX_FILES;
	size_t count = ok ? (size_t)jv_array_length(jv_copy(list)) : 0;
	struct ccache_file *out = util_xalloc((count ? count : 1) * sizeof *out);
	size_t got = 0;
	for (size_t i = 0; ok && i < count; i++) {
		jv f = jv_array_get(jv_copy(list), (int)i);
		const char *path = jv_get_kind(f) == JV_KIND_OBJECT ? rec_str(f, "path", NULL) : NULL;
		const char *sum = jv_get_kind(f) == JV_KIND_OBJECT ? rec_str(f, "sha256", NULL) : NULL;
		double mode = -1;
		char name[32], why[64], hex[65];
		snprintf(name, sizeof name, "f%zu", i);
		size_t len = 0;
		char *data = path && sum && rec_num(f, "mode", &mode) ? read_all(dfd, name, 1u << 30, &len) : NULL;
		/* The artefact must be what was stored: a changed or truncated
		 * file is never handed to a sandbox. */
		if (data)
			sha256_hex(data, len, hex);
		ok = data && !strcmp(hex, sum) && job_path_ok(path, strlen(path), why, sizeof why) && mode >= 0 &&
		     mode <= 0777;
		if (ok)
			out[got++] = (struct ccache_file){ util_strdup(path), data, len, (mode_t)mode };
		else
			free(data);
		jv_free(f);
	}
	jv_free(list);
	jv_free(m);
	if (!ok) {
		util_warn("compile cache: entry %.16s… is damaged; removed", key);
		ccache_files_free(out, got);
		jv_free(comp);
		remove_entry(dir);
		close(dfd);
		free(dir);
		return false;
	}
	/* LRU: a hit makes the entry young. */
	futimens(dfd, NULL);
	utimensat(dfd, "manifest.json", NULL, 0);
	close(dfd);
	free(dir);
	*files = out;
	*n = got;
	*compile = jv_object_set(comp, jv_string("cached"), jv_true());
	return true;
}

/* Artefacts: regular files under the scratch directory that are not the
 * job's inputs, walked without following links. */
struct walk {
	const struct job *j;
	struct ccache_file *files;
	size_t nfiles;
	uint64_t bytes, max;
	bool ok;
};

static bool is_input(const struct job *j, const char *path)
{
	/* The compiler replaced a file of an output's name: it is the output
	 * (a request's "main" beside a C program is not what runs). */
	for (char *const *o = j->outputs; o && *o; o++)
		if (!strcmp(path, *o))
			return false;
	if (!strcmp(path, j->file))
		return true;
	for (size_t i = 0; i < j->nfiles; i++)
		if (!strcmp(path, j->files[i].path))
			return true;
	return false;
}

static void walk_dir(struct walk *w, int dfd, const char *prefix, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		w->ok = false;
		return;
	}
	struct dirent *e;
	while (w->ok && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", e->d_name);
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = depth < 8 ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
			if (sub >= 0)
				walk_dir(w, sub, path, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || is_input(w->j, path))
			continue;
		size_t len;
		char *data = read_all(dirfd(d), e->d_name, w->max, &len);
		if (!data || w->nfiles >= MAX_FILES || (w->bytes += len) > w->max) {
			free(data);
			w->ok = false;
			break;
		}
		w->files = util_xrealloc(w->files, (w->nfiles + 1) * sizeof *w->files);
		w->files[w->nfiles++] = (struct ccache_file){ util_strdup(path), data, len, st.st_mode & 0777 };
	}
	closedir(d);
}

bool ccache_collect(const struct job *j, int scratch_fd, struct ccache_file **files, size_t *n)
{
	struct walk w = { .j = j, .max = j->clim.scratch, .ok = true };
	int sfd = openat(scratch_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd >= 0)
		walk_dir(&w, sfd, "", 0);
	if (sfd < 0 || !w.ok) {
		ccache_files_free(w.files, w.nfiles);
		return false;
	}
	*files = w.files;
	*n = w.nfiles;
	return true;
}

struct entry {
	char *path;
	time_t mtime;
	uint64_t bytes;
};

static int by_age(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Keep the cache under its bound: the least recently used entries go. */
static void evict(struct ccache *c)
{
	DIR *d = opendir(c->dir);
	if (!d)
		return;
	struct entry *es = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) != 64)
			continue;
		char *p = util_fmt("%s/%s", c->dir, e->d_name);
		DIR *ed = opendir(p);
		uint64_t bytes = 0;
		time_t mt = 0;
		struct stat st;
		if (ed) {
			struct dirent *f;
			while ((f = readdir(ed)))
				if (fstatat(dirfd(ed), f->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
					bytes += (uint64_t)st.st_size;
					if (!strcmp(f->d_name, "manifest.json"))
						mt = st.st_mtime;
				}
			closedir(ed);
		}
		if (n == cap)
			es = util_xrealloc(es, (cap = cap * 2 + 16) * sizeof *es);
		es[n++] = (struct entry){ p, mt, bytes };
		total += bytes;
	}
	closedir(d);
	qsort(es, n, sizeof *es, by_age);
	for (size_t i = 0; i < n; i++) {
		if (total > c->max_bytes) {
			remove_entry(es[i].path);
			total -= es[i].bytes;
		}
		free(es[i].path);
	}
	free(es);
}

void ccache_put(struct ccache *c, const char *key, const struct job *j, int scratch_fd, jv compile)
{
	struct ccache_file *files;
	size_t n;
	if (!c->dir || !ccache_collect(j, scratch_fd, &files, &n))
		return;
	char *tmp = util_fmt("%s/.tmp.%d.%lu", c->dir, (int)getpid(), ++c->seq);
	char *dst = util_fmt("%s/%s", c->dir, key);
	int out = mkdir(tmp, 0700) == 0 ? open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	bool ok = out >= 0;
	jv manifest = jv_array();
	for (size_t i = 0; ok && i < n; i++) {
		char name[32], hex[65];
		snprintf(name, sizeof name, "f%zu", i);
		int fd = openat(out, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || util_write_all(fd, files[i].data, files[i].len) < 0)
			ok = false;
		if (fd >= 0)
			close(fd);
		sha256_hex(files[i].data, files[i].len, hex);
		jv f = jv_object_set(jv_object(), jv_string("path"), jv_string(files[i].path));
		f = jv_object_set(f, jv_string("mode"), jv_number(files[i].mode));
		f = jv_object_set(f, jv_string("size"), jv_number((double)files[i].len));
		f = jv_object_set(f, jv_string("sha256"), jv_string(hex));
		manifest = jv_array_append(manifest, f);
	}
	ccache_files_free(files, n);
	jv comp = jv_copy(compile);
	/* what varies per run is not part of the entry, nor where the
	 * compile connected (another principal's hosts, on a shared cache) */
	comp = jv_object_delete(comp, jv_string("cached"));
	comp = jv_object_delete(comp, jv_string("egress"));
	jv m = jv_object_set(jv_object(), jv_string("files"), manifest);
	m = jv_object_set(m, jv_string("compile"), comp);
	size_t len;
	char *text = rec_dump(m, &len);
	int fd = ok ? openat(out, "manifest.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
	ok = fd >= 0 && util_write_all(fd, text, len) == 0;
	if (fd >= 0)
		close(fd);
	free(text);
	if (out >= 0)
		close(out);
	/* Into place atomically; if another process stored the key first,
	 * its entry stays and ours goes. */
	if (!ok || rename(tmp, dst) < 0)
		remove_entry(tmp);
	else
		evict(c);
	free(tmp);
	free(dst);
}
