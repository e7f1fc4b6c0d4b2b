#include "cap.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "util.h"

void cap_buf_init(struct cap_buf *b, size_t limit)
{
	memset(b, 0, sizeof *b);
	b->limit = limit;
}

static size_t head_cap(const struct cap_buf *b)
{
	return b->limit - b->limit / 2;
}

void cap_buf_add(struct cap_buf *b, const char *data, size_t n)
{
	b->total += n;
	size_t hmax = head_cap(b);
	if (b->hlen < hmax) {
		size_t take = n < hmax - b->hlen ? n : hmax - b->hlen;
		if (b->hlen + take > b->hcap) {
			/* Grow geometrically up to the ceiling; small outputs stay small. */
			size_t want = b->hcap ? b->hcap * 2 : 4096;
			while (want < b->hlen + take)
				want *= 2;
			if (want > hmax)
				want = hmax;
			b->head = util_xrealloc(b->head, want);
			b->hcap = want;
		}
		memcpy(b->head + b->hlen, data, take);
		b->hlen += take;
		data += take;
		n -= take;
	}
	if (n == 0)
		return;
	size_t rmax = b->limit / 2;
	if (rmax == 0)
		return;
	if (!b->ring) {
		b->ring = util_xalloc(rmax);
		b->rcap = rmax;
	}
	if (n >= rmax) {
		memcpy(b->ring, data + n - rmax, rmax);
		b->rpos = 0;
		b->rlen = rmax;
		return;
	}
	size_t end = (b->rpos + b->rlen) % rmax;
	for (size_t done = 0; done < n;) {
		size_t chunk = rmax - end;
		if (chunk > n - done)
			chunk = n - done;
		memcpy(b->ring + end, data + done, chunk);
		end = (end + chunk) % rmax;
		done += chunk;
	}
	b->rlen += n;
	if (b->rlen > rmax) {
		b->rpos = (b->rpos + b->rlen - rmax) % rmax;
		b->rlen = rmax;
	}
}

bool cap_buf_truncated(const struct cap_buf *b)
{
	return b->total > (uint64_t)b->hlen + b->rlen;
}

jv cap_marker(uint64_t cut)
{
	return jv_string_fmt("\n[... %llu bytes truncated ...]\n", (unsigned long long)cut);
}

static jv sanitized(const char *s, size_t n)
{
	size_t len;
	char *clean = utf8_sanitize(s, n, &len);
	jv out = jv_string_sized(clean, (int)len);
	free(clean);
	return out;
}

jv cap_buf_string(const struct cap_buf *b)
{
	if (!cap_buf_truncated(b)) {
		/* Nothing dropped: head and ring are contiguous. */
		char *all = util_xalloc(b->hlen + b->rlen + 1);
		if (b->hlen)
			memcpy(all, b->head, b->hlen);
		for (size_t i = 0; i < b->rlen; i++)
			all[b->hlen + i] = b->ring[(b->rpos + i) % b->rcap];
		jv out = sanitized(all, b->hlen + b->rlen);
		free(all);
		return out;
	}
	char *tail = util_xalloc(b->rlen + 1);
	for (size_t i = 0; i < b->rlen; i++)
		tail[i] = b->ring[(b->rpos + i) % b->rcap];
	/* Never split a character at either edge of the cut. */
	size_t h = utf8_floor(b->head, b->hlen);
	size_t t0 = utf8_ceil(tail, b->rlen, 0);
	uint64_t cut = b->total - h - (b->rlen - t0);
	jv out = jv_string_concat(sanitized(b->head, h), cap_marker(cut));
	out = jv_string_concat(out, sanitized(tail + t0, b->rlen - t0));
	free(tail);
	return out;
}

void cap_buf_free(struct cap_buf *b)
{
	free(b->head);
	free(b->ring);
	memset(b, 0, sizeof *b);
}

jv cap_string(const char *s, size_t n, size_t limit, uint64_t reported, bool *truncated)
{
	if (n <= limit) {
		*truncated = false;
		return jv_string_sized(s, (int)n);
	}
	*truncated = true;
	size_t h = utf8_floor(s, limit / 2);
	size_t t0 = utf8_ceil(s, n, n - (limit - limit / 2));
	uint64_t cut = n - h - (n - t0);
	uint64_t kept = h + (n - t0);
	if (reported > kept && reported - kept > cut)
		cut = reported - kept;
	jv out = jv_string_concat(jv_string_sized(s, (int)h), cap_marker(cut));
	return jv_string_concat(out, jv_string_sized(s + t0, (int)(n - t0)));
}

char *cap_buf_bytes(const struct cap_buf *b, size_t *len)
{
	char *out = util_xalloc(b->hlen + b->rlen + 1);
	if (b->hlen)
		memcpy(out, b->head, b->hlen);
	for (size_t i = 0; i < b->rlen; i++)
		out[b->hlen + i] = b->ring[(b->rpos + i) % b->rcap];
	out[b->hlen + b->rlen] = 0;
	*len = b->hlen + b->rlen;
	return out;
}
