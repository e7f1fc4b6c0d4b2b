#define _GNU_SOURCE
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "util.h"

struct auth {
	size_t n;
	unsigned char (*digest)[32];
};

static bool token_char(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f; /* visible ASCII: what a header can carry */
}

static bool add(struct auth *a, const char *tok, size_t len, int line, char *err, size_t errlen)
{
	for (size_t i = 0; i < len; i++)
		if (!token_char((unsigned char)tok[i])) {
			snprintf(err, errlen, "token on line %d: only visible ASCII characters, no spaces", line);
			return false;
		}
	if (len < AUTH_MIN_TOKEN) {
		snprintf(err, errlen, "token on line %d: at least %d characters (openssl rand -hex 32 makes one)", line,
			 AUTH_MIN_TOKEN);
		return false;
	}
	a->digest = util_xrealloc(a->digest, (a->n + 1) * sizeof *a->digest);
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, tok, len);
	sha256_final(&s, a->digest[a->n++]);
	return true;
}

struct auth *auth_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct auth *a = util_xalloc(sizeof *a);
	const char *p = text, *end = text + len;
	for (int line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *s = p;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		const char *t = e;
		while (t > s && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r'))
			t--;
		if (t > s && *s != '#' && !add(a, s, (size_t)(t - s), line, err, errlen)) {
			auth_free(a);
			return NULL;
		}
		p = nl ? nl + 1 : end;
	}
	if (a->n == 0) {
		snprintf(err, errlen, "no token (one per line; # starts a comment)");
		auth_free(a);
		return NULL;
	}
	return a;
}

static struct auth *from_file(const char *file, char *err, size_t errlen)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > 1 << 20) {
		snprintf(err, errlen, "%s: not a regular file of at most 1 MiB", file);
		close(fd);
		return NULL;
	}
	if (st.st_mode & 0077)
		util_warn("%s: the token file is readable by others (chmod 600 it)", file);
	char *buf = util_xalloc((size_t)st.st_size + 1);
	ssize_t r = util_read_full(fd, buf, (size_t)st.st_size);
	size_t got = r > 0 ? (size_t)r : 0;
	close(fd);
	char why[200];
	struct auth *a = auth_parse(buf, got, why, sizeof why);
	explicit_bzero(buf, got);
	free(buf);
	if (!a)
		snprintf(err, errlen, "%s: %s", file, why);
	return a;
}

struct auth *auth_new(const char *file, const char **generated, char *err, size_t errlen)
{
	*generated = NULL;
	if (file)
		return from_file(file, err, errlen);
	const char *env = getenv("SBX_MCP_TOKEN");
	if (env && *env) {
		char why[200];
		struct auth *a = strchr(env, '\n') ? NULL : auth_parse(env, strlen(env), why, sizeof why);
		if (!a)
			snprintf(err, errlen, "SBX_MCP_TOKEN: %s", strchr(env, '\n') ? "one token, one line" : why);
		return a;
	}
	/* 32 random bytes as 64 hex digits. */
	static char tok[65];
	util_random_hex(tok, 32);
	*generated = tok;
	return auth_parse(tok, 64, err, errlen);
}

void auth_free(struct auth *a)
{
	if (!a)
		return;
	free(a->digest);
	free(a);
}

size_t auth_count(const struct auth *a)
{
	return a->n;
}

void auth_principal(const struct auth *a, int n, char out[AUTH_PRINCIPAL_LEN + 1])
{
	out[0] = 0;
	if (n < 1 || (size_t)n > a->n)
		return;
	struct sha256 h;
	unsigned char d[32];
	sha256_init(&h);
	sha256_update(&h, "sbx-principal", 13);
	sha256_update(&h, a->digest[n - 1], 32);
	sha256_final(&h, d);
	for (int i = 0; i < AUTH_PRINCIPAL_LEN / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

int auth_check(const struct auth *a, const char *h)
{
	if (!h)
		return 0;
	while (*h == ' ')
		h++;
	if (strncasecmp(h, "Bearer ", 7))
		return 0;
	h += 7;
	while (*h == ' ')
		h++;
	size_t len = strlen(h);
	while (len && (h[len - 1] == ' ' || h[len - 1] == '\t'))
		len--;
	if (!len)
		return 0;
	unsigned char d[32];
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, h, len);
	sha256_final(&s, d);
	/* Every digest is compared in full; the match is selected without a
	 * branch on secret data. */
	int who = -1;
	for (size_t i = 0; i < a->n; i++) {
		unsigned diff = 0;
		for (int k = 0; k < 32; k++)
			diff |= (unsigned)(d[k] ^ a->digest[i][k]);
		/* mask: all ones when diff == 0 */
		int mask = -(int)((diff - 1) >> 31 & 1);
		who = (mask & (int)(i + 1)) | (~mask & who);
	}
	return who;
}

bool auth_take(struct auth_bucket *b, double rate, double burst, double now_ms, unsigned *retry_s)
{
	if (b->last_ms == 0) {
		b->tokens = burst;
		b->last_ms = now_ms;
	}
	b->tokens = fmin(burst, b->tokens + (now_ms - b->last_ms) / 1000 * rate);
	b->last_ms = now_ms;
	if (b->tokens >= 1) {
		b->tokens -= 1;
		return true;
	}
	double s = ceil((1 - b->tokens) / rate);
	*retry_s = s < 1 ? 1 : s > 86400 ? 86400 : (unsigned)s;
	return false;
}
