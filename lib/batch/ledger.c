#include "ledger.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rec.h"
#include "req.h"
#include "sha256.h"
#include "shard.h"
#include "status.h"
#include "util.h"

void ledger_file_init(struct ledger_file *f, int fd, size_t max)
{
	memset(f, 0, sizeof *f);
	f->fd = fd;
	f->max = max;
	/* Offsets are the file's, for pread: a stdin that was read from
	 * already (`(read -r _; sbx-merge req -) < res`) starts past 0. */
	off_t at = lseek(fd, 0, SEEK_CUR);
	f->pos = at > 0 ? at : 0;
}

void ledger_file_free(struct ledger_file *f)
{
	free(f->buf);
	f->buf = NULL;
}

/* Read more into the buffer (moving the unread part to its start first). */
static int fill(struct ledger_file *f)
{
	if (f->start > 0) {
		memmove(f->buf, f->buf + f->start, f->len);
		f->start = 0;
	}
	if (f->cap - f->len < 65536) {
		f->cap = f->len + 65536 + f->cap / 2;
		f->buf = util_xrealloc(f->buf, f->cap);
	}
	for (;;) {
		ssize_t r = read(f->fd, f->buf + f->len, f->cap - f->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			f->eof = true;
		f->len += (size_t)r;
		return 0;
	}
}

int ledger_file_next(struct ledger_file *f, struct ledger_line *l)
{
	size_t scanned = 0;
	bool over = false; /* dropping an over-long line's bytes */
	size_t dropped = 0;
	off_t off = f->pos;
	for (;;) {
		char *nl = f->len > scanned ? memchr(f->buf + f->start + scanned, '\n', f->len - scanned) : NULL;
		if (nl || (f->eof && (f->len > 0 || over))) {
			size_t n = nl ? (size_t)(nl - (f->buf + f->start)) : f->len;
			l->lineno = ++f->lineno;
			l->off = off;
			l->torn = !nl;
			l->len = dropped + n;
			l->text = over || l->len > f->max ? NULL : f->buf + f->start;
			size_t used = nl ? n + 1 : n;
			f->start += used;
			f->len -= used;
			f->pos += (off_t)used;
			return 1;
		}
		if (f->eof)
			return 0;
		if (f->len > f->max) {
			/* Keep nothing of a line over the limit: count it and go on. */
			over = true;
			dropped += f->len;
			f->pos += (off_t)f->len;
			f->start = f->len = 0;
		}
		scanned = f->len;
		if (fill(f) < 0)
			return -1;
	}
}

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

void ledger_init(struct ledger *l, unsigned k)
{
	memset(l, 0, sizeof *l);
	l->k = k ? k : 1;
	l->nslot = 1024;
	l->slot = calloc(l->nslot, sizeof *l->slot);
	if (!l->slot)
		util_die(EXIT_IO, "out of memory");
}

void ledger_free(struct ledger *l)
{
	if (l->seen) {
		ledger_free(l->seen);
		free(l->seen);
	}
	for (size_t i = 0; i < l->n; i++)
		free(l->req[i].key);
	free(l->req);
	free(l->slot);
	memset(l, 0, sizeof *l);
}

/* The slot holding key, or the empty one where it would go. */
static size_t probe(const struct ledger *l, const char *key)
{
	size_t mask = l->nslot - 1;
	size_t i = hash(key) & mask;
	while (l->slot[i] && strcmp(l->req[l->slot[i] - 1].key, key))
		i = (i + 1) & mask;
	return i;
}

long ledger_find(const struct ledger *l, const char *key)
{
	size_t i = probe(l, key);
	return l->slot[i] ? (long)l->slot[i] - 1 : -1;
}

static void grow(struct ledger *l)
{
	size_t n = l->nslot * 2;
	uint32_t *old = l->slot;
	size_t oldn = l->nslot;
	l->slot = calloc(n, sizeof *l->slot);
	if (!l->slot)
		util_die(EXIT_IO, "out of memory");
	l->nslot = n;
	for (size_t i = 0; i < oldn; i++)
		if (old[i]) {
			l->slot[probe(l, l->req[old[i] - 1].key)] = old[i];
		}
	free(old);
}

/* What ties a result to its request beyond the id: the code it ran and its
 * input, the request's data fields (req.h's RW_DATA), in table order
 * (absent and "" alike: the pipeline adds neither). */
static void digest(jv rec, unsigned char out[16])
{
	if (jv_get_kind(rec) != JV_KIND_OBJECT) {
		memset(out, 0, 16);
		return;
	}
	struct sha256 s;
	sha256_init(&s);
	for (int i = 0; i < REQ_N; i++) {
		const struct req_field *f = req_field(i);
		if (!(f->where & RW_REQ) || !(f->where & RW_DATA))
			continue;
		size_t n = 0;
		const char *v = rec_str(rec, f->name, &n);
		sha256_part(&s, v ? v : "", v ? n : 0);
	}
	unsigned char d[32];
	sha256_final(&s, d);
	memcpy(out, d, 16);
}

long ledger_add(struct ledger *l, char *key, unsigned long line, jv req)
{
	size_t at = probe(l, key);
	if (l->slot[at]) {
		free(key);
		return -1 - (long)(l->slot[at] - 1);
	}
	if (l->n >= UINT32_MAX - 1)
		util_die(EXIT_IO, "more than %u requests", UINT32_MAX - 1);
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->req = util_xrealloc(l->req, l->cap * sizeof *l->req);
	}
	struct ledger_req *r = &l->req[l->n];
	memset(r, 0, sizeof *r);
	r->key = key;
	r->line = line;
	r->shard = shard_of(key, l->k);
	r->file = -1;
	digest(req, r->digest);
	l->slot[at] = (uint32_t)++l->n;
	if (l->n * 2 > l->nslot)
		grow(l);
	return (long)l->n - 1;
}

char *ledger_request_key(struct ledger *l, jv req, const char *line, size_t len, const char **why)
{
	bool bad = false;
	char *key = shard_key(req, &bad);
	if (key || bad) {
		if (!key)
			*why = rec_str(req, REQ_KEY(id), NULL) ? "\"id\" holds a NUL character (\\u0000)"
							 : "\"id\" is neither a string nor a number";
		return key;
	}
	if (!l->seen) {
		l->seen = util_xalloc(sizeof *l->seen);
		ledger_init(l->seen, 1);
	}
	/* The seen map's entries count the copies of each line in `results`. */
	char *base = shard_auto_key(line, len, 1);
	long i = ledger_add(l->seen, util_strdup(base), 0, jv_null());
	if (i < 0)
		i = -1 - i;
	unsigned long copy = ++l->seen->req[i].results;
	if (copy == 1)
		return base;
	free(base);
	return shard_auto_key(line, len, copy);
}

/* sbx-batch's attempt number: shard.attempt, a non-negative integer. */
static int64_t attempt_of(jv res)
{
	jv sh = rec_get(res, "shard");
	double a = 0;
	int64_t v = 0;
	if (jv_get_kind(sh) == JV_KIND_OBJECT && rec_num(sh, "attempt", &a) && a >= 0 && a <= 1e9 && a == (int64_t)a)
		v = (int64_t)a;
	jv_free(sh);
	return v;
}

enum ledger_offer ledger_offer(struct ledger *l, jv res, int file, off_t off, size_t len, unsigned long line,
			       long *idx)
{
	bool bad = false;
	char *key = shard_key(res, &bad);
	if (!key)
		return LEDGER_NOID;
	long i = ledger_find(l, key);
	free(key);
	if (i < 0)
		return LEDGER_UNKNOWN;
	*idx = i;
	struct ledger_req *r = &l->req[i];
	unsigned char d[16];
	digest(res, d);
	if (memcmp(d, r->digest, sizeof d))
		return LEDGER_FOREIGN;
	int64_t attempt = attempt_of(res);
	double started = 0;
	const char *s = rec_str(res, "started_at", NULL);
	if (!s || !util_parse_iso8601(s, &started))
		started = 0;
	r->results++;
	const char *status = rec_str(res, "status", NULL);
	bool final = !status_is(status, STF_AGAIN);
	enum ledger_offer what = final ? LEDGER_FIRST : LEDGER_NOT_FINAL;
	if (r->file >= 0) {
		/* A final result beats one that is not; then the later attempt,
		 * the later start, and what is offered later (a later file, or
		 * later in the same one) wins a tie. */
		bool newer = final != r->final ? final
			     : attempt != r->attempt ? attempt > r->attempt : started >= r->started;
		if (!newer)
			return final ? LEDGER_OLDER : LEDGER_NOT_FINAL;
		if (final)
			what = r->final ? LEDGER_NEWER : LEDGER_FIRST;
	}
	r->final = final;
	r->file = file;
	r->off = off;
	r->len = len;
	r->rline = line;
	r->attempt = attempt;
	r->started = started;
	return what;
}
