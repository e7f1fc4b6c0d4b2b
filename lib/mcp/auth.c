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

#include "hostpat.h"
#include "req.h"
#include "sha256.h"
#include "util.h"

/* A token's network option. */
struct tok_net {
	int line;              /* of the token file (or 1), for messages */
	bool own;              /* it has network=...: the rest says what */
	char **hosts;          /* its patterns; NULL with own: network=false */
};

struct auth {
	size_t n;
	unsigned char (*digest)[32];
	struct tok_net *net;   /* net[i]: digest[i]'s */
	char *source;          /* where the tokens came from, for messages: a file, SBX_MCP_TOKEN, or NULL */
};

/* network=LIST: false, or patterns joined by commas.  "true" and "host"
 * are refused rather than read as host names: they read as the
 * configuration's words, and neither means the same for a token. */
static bool parse_network(struct tok_net *tn, const char *v, size_t len, int line, char *err, size_t errlen)
{
	if (len == 5 && !memcmp(v, "false", 5)) {
		tn->own = true;
		return true;
	}
	if ((len == 4 && !memcmp(v, "true", 4)) || (len == 4 && !memcmp(v, "host", 4))) {
		snprintf(err, errlen,
			 "token on line %d: network=%.*s: a token's network is false or host patterns, such as "
			 "network=pypi.org,*.github.com (without the option it gets all the configuration allows)",
			 line, (int)len, v);
		return false;
	}
	char **hosts = NULL;
	size_t nh = 0;
	bool ok = true;
	const char *end = v + len;
	for (const char *p = v; ok && p;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *e = c ? c : end;
		char *pat = util_strndup(p, (size_t)(e - p));
		char why[400];
		if (!*pat) {
			snprintf(err, errlen, "token on line %d: network= needs false or host patterns joined by commas, "
					      "with nothing empty between them", line);
			ok = false;
		} else if (nh == HOSTPAT_LIST_MAX) {
			snprintf(err, errlen, "token on line %d: network=: at most %d host patterns", line, HOSTPAT_LIST_MAX);
			ok = false;
		} else if (!hostpat_ok(pat, why, sizeof why)) {
			snprintf(err, errlen, "token on line %d: network=: %s", line, why);
			ok = false;
		}
		if (ok) {
			hosts = util_xrealloc(hosts, (nh + 2) * sizeof *hosts);
			hosts[nh++] = pat;
			hosts[nh] = NULL;
		} else
			free(pat);
		p = c ? c + 1 : NULL; /* past the last comma: one more, perhaps empty */
	}
	if (!ok) {
		util_strv_free(hosts);
		return false;
	}
	tn->own = true;
	tn->hosts = hosts;
	return true;
}

/* What follows a token on its line: options separated by spaces or tabs.
 * An unknown word is not echoed: it may be the rest of a token someone
 * wrote with a space in it. */
static bool parse_options(struct tok_net *tn, const char *s, const char *e, int line, char *err, size_t errlen)
{
	while (s < e) {
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		const char *w = s;
		while (s < e && *s != ' ' && *s != '\t')
			s++;
		if (w == s)
			break;
		size_t len = (size_t)(s - w);
		if (len < 8 || memcmp(w, "network=", 8)) {
			snprintf(err, errlen,
				 "token on line %d: after the token (a token has no spaces) come only options, and "
				 "network=LIST is the only one",
				 line);
			return false;
		}
		if (tn->own) {
			snprintf(err, errlen, "token on line %d: network= is given more than once", line);
			return false;
		}
		if (!parse_network(tn, w + 8, len - 8, line, err, errlen))
			return false;
	}
	return true;
}

static bool token_char(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f; /* visible ASCII: what a header can carry */
}

/* A token file's line (trimmed, not a comment): the token, then its
 * options. */
static bool add(struct auth *a, const char *s, size_t linelen, int line, char *err, size_t errlen)
{
	const char *tok = s;
	size_t len = 0; /* (the text need not end in a NUL) */
	while (len < linelen && s[len] != ' ' && s[len] != '\t')
		len++;
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
	struct tok_net tn = { .line = line };
	if (!parse_options(&tn, tok + len, s + linelen, line, err, errlen)) {
		util_strv_free(tn.hosts);
		return false;
	}
	a->digest = util_xrealloc(a->digest, (a->n + 1) * sizeof *a->digest);
	a->net = util_xrealloc(a->net, (a->n + 1) * sizeof *a->net);
	a->net[a->n] = tn;
	struct sha256 h;
	sha256_init(&h);
	sha256_update(&h, tok, len);
	sha256_final(&h, a->digest[a->n++]);
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
	else
		a->source = util_strdup(file);
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
		else
			a->source = util_strdup("SBX_MCP_TOKEN");
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
	for (size_t i = 0; i < a->n; i++)
		util_strv_free(a->net[i].hosts);
	free(a->net);
	free(a->digest);
	free(a->source);
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

size_t auth_network_count(const struct auth *a)
{
	size_t k = 0;
	for (size_t i = 0; i < a->n; i++)
		k += a->net[i].own;
	return k;
}

/* "a, b, c": a list for a message, as much of it as fits. */
static void list_text(char *const *hosts, char *out, size_t len)
{
	size_t o = 0;
	out[0] = 0;
	for (char *const *h = hosts; h && *h && o < len; h++)
		o += (size_t)snprintf(out + o, len - o, "%s%s", h == hosts ? "" : ", ", *h);
}

bool auth_network_check(const struct auth *a, const struct conf *c, char *err, size_t errlen)
{
	const char *src = a->source ? a->source : "the tokens";
	bool none = !c->network.host && !c->network.hosts;
	for (size_t i = 0; i < a->n; i++) {
		const struct tok_net *tn = &a->net[i];
		/* "host" allows any pattern: the proxy then holds the runs to the
		 * token's list (job.c) */
		if (!tn->own || !tn->hosts || c->network.host)
			continue;
		if (none) {
			snprintf(err, errlen,
				 "%s: token on line %d: network: \"%s\": the configuration allows runs no network (network = "
				 "false in %s)", src, tn->line, tn->hosts[0], c->path);
			return false;
		}
		for (char **h = tn->hosts; *h; h++)
			if (!hostpat_covers(c->network.hosts, *h)) {
				char allowed[600];
				list_text(c->network.hosts, allowed, sizeof allowed);
				snprintf(err, errlen,
					 "%s: token on line %d: network: \"%s\" is not within what the configuration allows (%s in %s)",
					 src, tn->line, *h, allowed, c->path);
				return false;
			}
	}
	return true;
}

bool auth_network_narrow(const struct auth *a, int n, jv *network, char *err, size_t errlen)
{
	if (!a || n < 1 || (size_t)n > a->n || !a->net[n - 1].own)
		return true;
	const struct tok_net *tn = &a->net[n - 1];
	jv_kind k = jv_get_kind(*network);
	bool asks = k == JV_KIND_TRUE || (k == JV_KIND_ARRAY && jv_array_length(jv_copy(*network)) > 0);
	if (!asks)
		return true; /* no network, or not a network at all: the request's check says so */
	if (!tn->hosts) {
		snprintf(err, errlen, "\"%s\": this token has no network (network=false on its line of the token file)",
			 REQ_KEY(network));
		return false;
	}
	char mine[600];
	list_text(tn->hosts, mine, sizeof mine);
	if (k == JV_KIND_TRUE) {
		/* all this token may reach: its list, which the start-up held to
		 * the configuration's (auth_network_check) */
		jv list = jv_array();
		for (char **h = tn->hosts; *h; h++)
			list = jv_array_append(list, jv_string(*h));
		jv_free(*network);
		*network = list;
		return true;
	}
	bool ok = true;
	jv_array_foreach(*network, i, e)
	{
		if (ok && jv_get_kind(e) != JV_KIND_STRING) {
			snprintf(err, errlen, "\"%s\": each element must be a host pattern (a string)", REQ_KEY(network));
			ok = false;
		} else if (ok && !hostpat_covers(tn->hosts, jv_string_value(e))) {
			/* a pattern that is none is not covered either: say what
			 * is wrong with it rather than that it is too wide */
			char why[400];
			if (!hostpat_ok(jv_string_value(e), why, sizeof why))
				snprintf(err, errlen, "\"%s\": %s", REQ_KEY(network), why);
			else
				snprintf(err, errlen, "\"%s\": \"%s\" is not within what this token may reach (%s)",
					 REQ_KEY(network), jv_string_value(e), mine);
			ok = false;
		}
		jv_free(e);
	}
	return ok;
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
