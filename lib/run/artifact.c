#define _GNU_SOURCE
#include "artifact.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b64.h"
#include "layout.h"
#include "utf8.h"
#include "util.h"

#define ART_MAX_ENTRIES 4096
#define ART_MAX_DEPTH 16

static void scan_dir(int dirfd, const char *prefix, struct art_snap *s, int depth)
{
	DIR *d = util_opendirat(dirfd);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) && s->n < ART_MAX_ENTRIES) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, "..") || (!*prefix && (!strcmp(name, NS_DEPS) || ns_reserved(name))))
			continue;
		struct stat st;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		char *path = *prefix ? util_fmt("%s/%s", prefix, name) : util_strdup(name);
		/* a module cache is the runtime's, not something the program made */
		if (S_ISDIR(st.st_mode) && depth < ART_MAX_DEPTH && strcmp(name, "__pycache__")) {
			int sub = util_open_beneath(dirfd, name, O_PATH | O_DIRECTORY, 0);
			if (sub >= 0) {
				scan_dir(sub, path, s, depth + 1);
				close(sub);
			}
			free(path);
		} else if (S_ISREG(st.st_mode)) {
			if (s->n == s->cap) {
				s->cap = s->cap ? s->cap * 2 : 32;
				s->e = util_xrealloc(s->e, s->cap * sizeof *s->e);
			}
			s->e[s->n++] = (struct art_entry){ .path = path, .size = st.st_size,
							   .mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec };
		} else
			free(path);
	}
	closedir(d);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct art_entry *)a)->path, ((const struct art_entry *)b)->path);
}

void art_scan(int dirfd, struct art_snap *s)
{
	memset(s, 0, sizeof *s);
	if (dirfd >= 0)
		scan_dir(dirfd, "", s, 0);
	if (s->n)
		qsort(s->e, s->n, sizeof *s->e, by_path);
}

void art_free(struct art_snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->e[i].path);
	free(s->e);
	memset(s, 0, sizeof *s);
}

/* By content: what a viewer needs to know it can show it. */
static const char *sniff(const unsigned char *p, size_t n)
{
	if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8))
		return "image/png";
	if (n >= 3 && !memcmp(p, "\xff\xd8\xff", 3))
		return "image/jpeg";
	if (n >= 6 && (!memcmp(p, "GIF87a", 6) || !memcmp(p, "GIF89a", 6)))
		return "image/gif";
	if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4))
		return "image/webp";
	if (n >= 5 && !memcmp(p, "%PDF-", 5))
		return "application/pdf";
	if (utf8_valid((const char *)p, n, NULL) && !memchr(p, 0, n)) {
		size_t head = n < 1024 ? n : 1024;
		if (memmem(p, head, "<svg", 4))
			return "image/svg+xml";
		return "text/plain";
	}
	return "application/octet-stream";
}

static bool unchanged(const struct art_snap *before, const struct art_entry *e)
{
	struct art_entry *b = before->n ? bsearch(e, before->e, before->n, sizeof *before->e, by_path) : NULL;
	return b && b->size == e->size && b->mtime_ns == e->mtime_ns;
}

jv art_collect(const struct conf *c, int dirfd, const struct art_snap *before, jv res)
{
	struct art_snap after;
	art_scan(dirfd, &after);
	jv list = jv_array();
	uint64_t total = 0, count = 0;
	bool truncated = false;
	for (size_t i = 0; i < after.n; i++) {
		const struct art_entry *e = &after.e[i];
		if (unchanged(before, e))
			continue;
		if (count >= c->max_artifacts || (uint64_t)e->size > c->max_artifacts_size - total) {
			truncated = true;
			continue;
		}
		int fd = util_open_beneath(dirfd, e->path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > c->max_artifacts_size - total) {
			truncated |= fd >= 0 && S_ISREG(st.st_mode);
			if (fd >= 0)
				close(fd);
			continue;
		}
		size_t n;
		char *data = util_read_close(fd, (size_t)st.st_size, &n);
		if (!data)
			continue;
		size_t elen;
		char *enc = b64_encode(data, n, &elen);
		jv a = jv_object_set(jv_object(), jv_string("path"), jv_string(e->path));
		a = jv_object_set(a, jv_string("mime_type"), jv_string(sniff((const unsigned char *)data, n)));
		a = jv_object_set(a, jv_string("bytes"), jv_number((double)n));
		a = jv_object_set(a, jv_string("content"), jv_string_sized(enc, (int)elen));
		list = jv_array_append(list, a);
		free(enc);
		free(data);
		total += n;
		count++;
	}
	art_free(&after);
	res = jv_object_set(res, jv_string("artifacts"), list); /* check-names: the result's files */
	return jv_object_set(res, jv_string("artifacts_truncated"), jv_bool(truncated));
}
