#define _GNU_SOURCE
#include "hostpat.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* A pattern split: its name (without "*."), whether it was "*.", its port. */
struct pat {
	char name[HOSTPAT_MAX + 1];
	bool wild;
	int port;
};

static bool split(const char *s, struct pat *p, char *err, size_t errlen)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	p->wild = n > 2 && !strncmp(s, "*.", 2);
	const char *name = s + (p->wild ? 2 : 0);
	n -= p->wild ? 2 : 0;
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-";
	if (!n || n > HOSTPAT_MAX || strspn(name, alpha) < n || name[0] == '.' || name[0] == '-' || name[n - 1] == '.' ||
	    memmem(name, n, "..", 2)) {
		snprintf(err, errlen, "\"%.300s\" is not a host pattern: a host name, *.domain or an address, with an optional :port",
			 s);
		return false;
	}
	memcpy(p->name, name, n);
	p->name[n] = 0;
	int64_t port = HOSTPAT_PORT;
	/* digits only: strtoll would also take " 443", "+443" or "\n443",
	 * which then show in messages, records and the proxy's argv as the
	 * requester wrote them */
	if (colon && (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
		      !util_parse_i64(colon + 1, 1, 65535, &port))) {
		snprintf(err, errlen, "\"%.300s\": the port must be a number from 1 to 65535", s);
		return false;
	}
	p->port = (int)port;
	return true;
}

bool hostpat_ok(const char *pat, char *err, size_t errlen)
{
	struct pat p;
	return split(pat, &p, err, errlen);
}

/* Is name (a name or, wild, a domain's subdomains) within p's? */
static bool within(const struct pat *p, const char *name, bool wild)
{
	if (!p->wild)
		return !wild && !strcasecmp(p->name, name);
	/* p: strictly below p->name; a wild name: below name, so name may
	 * be p->name itself */
	size_t pl = strlen(p->name), nl = strlen(name);
	if (wild && nl == pl)
		return !strcasecmp(name, p->name);
	return nl > pl + 1 && name[nl - pl - 1] == '.' && !strcasecmp(name + nl - pl, p->name);
}

bool hostpat_allows(char *const *pats, const char *host, int port)
{
	char err[8];
	for (char *const *s = pats; s && *s; s++) {
		struct pat p;
		if (split(*s, &p, err, sizeof err) && p.port == port && within(&p, host, false))
			return true;
	}
	return false;
}

bool hostpat_covers(char *const *wide, const char *pat)
{
	char err[8];
	struct pat q;
	if (!split(pat, &q, err, sizeof err))
		return false;
	for (char *const *s = wide; s && *s; s++) {
		struct pat p;
		if (split(*s, &p, err, sizeof err) && p.port == q.port && within(&p, q.name, q.wild))
			return true;
	}
	return false;
}
