/* hostpat: the patterns that say where a sandbox's connections may go.
 *
 * A pattern is a host name ("pypi.org"), a domain's subdomains
 * ("*.githubusercontent.com": not the domain itself) or an IPv4 address,
 * each with an optional port (":8443").  Without one it is port 443:
 * HTTPS, the one protocol whose destination the proxy can check against
 * what was asked for (its ClientHello's server name).  Plain HTTP is a
 * pattern's ":80", written so.
 *
 * The configuration's lists (a language's `registries`, `network`) and
 * a request's `network` are lists of patterns; a request's narrows the
 * configuration's (hostpat_covers), and the proxy (egress.h) lets a
 * connection through when hostpat_allows says so.  Names compare without
 * regard to case; nothing here resolves a name.  Lists are NULL-terminated
 * and their caller's.
 */
#ifndef SBX_HOSTPAT_H
#define SBX_HOSTPAT_H

#include <stdbool.h>
#include <stddef.h>

#define HOSTPAT_MAX 253 /* a name's longest, without its port */
#define HOSTPAT_PORT 443
/* The most patterns a request's list may have (and a token's, which
 * becomes a request's: lib/mcp/auth.h). */
#define HOSTPAT_LIST_MAX 64

/* Is pat a pattern?  False with err saying what is wrong with it. */
bool hostpat_ok(const char *pat, char *err, size_t errlen);
/* Does one of pats allow host (a name or address, no port) at port? */
bool hostpat_allows(char *const *pats, const char *host, int port);
/* Does wide allow everything pat (a pattern) allows? */
bool hostpat_covers(char *const *wide, const char *pat);

#endif
