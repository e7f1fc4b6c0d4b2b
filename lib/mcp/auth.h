/* auth: who may call sbx-mcp over HTTP, and how often.
 *
 * Principals are bearer tokens: one from SBX_MCP_TOKEN, the lines of a
 * token file (one token each; blank lines and # comments skipped), or one
 * generated from getrandom at start.  Principal N is the N-th token (1..n);
 * it is the owner of the sandbox sessions its clients make, the unit of
 * the rate limit and of the in-flight quota.  Only SHA-256 digests of the
 * tokens are kept, and a presented token is compared against every digest
 * with no early exit, so neither the time taken nor a memory dump tells a
 * token or how much of one matched.
 *
 * A token file's line may carry options after the token and whitespace;
 * the one there is, `network=LIST`, holds that token's runs to a network
 * narrower than the configuration's: LIST is `false` (none) or host
 * patterns joined by commas (hostpat.h), such as
 *   3f9a...c1  network=pypi.org,*.pythonhosted.org
 * A token without it gets what the configuration allows.  The options are
 * kept in clear (they are not secret); messages name a token by its line,
 * never by its text.
 *
 * A token bucket per principal meters requests: `rate` per second, with
 * bursts of up to `burst`.
 */
#ifndef SBX_AUTH_H
#define SBX_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include <jv.h>

#include "conf.h"

struct auth;

/* Tokens shorter than this are refused: a guessable token is no lock. */
#define AUTH_MIN_TOKEN 16

/* Load from `file` (if not NULL), else from SBX_MCP_TOKEN, else generate
 * one; *generated then points to it (static storage, for printing once).
 * NULL with err on a bad file or token. */
struct auth *auth_new(const char *file, const char **generated, char *err, size_t errlen);
/* The same from memory: tokens one per line (for tests). */
struct auth *auth_parse(const char *text, size_t len, char *err, size_t errlen);
void auth_free(struct auth *a);
size_t auth_count(const struct auth *a);

/* The principal an Authorization header names: 1..n, 0 if the header is
 * missing or not "Bearer <token>", -1 for a token that is not ours. */
int auth_check(const struct auth *a, const char *authorization);

/* Principal n (1..count) as stored with its runs in the history: 16 hex
 * digits of a digest of its token's digest (not the token, and not the
 * digest the token is checked against), stable while the token is. */
#define AUTH_PRINCIPAL_LEN 16
void auth_principal(const struct auth *a, int n, char out[AUTH_PRINCIPAL_LEN + 1]);

/* How many tokens have a network option of their own. */
size_t auth_network_count(const struct auth *a);
/* Is each token's own network within what configuration c allows (each
 * pattern hostpat_covers its list, or it says "host")?  False with err
 * naming where the tokens came from, the line and the pattern. */
bool auth_network_check(const struct auth *a, const struct conf *c, char *err, size_t errlen);
/* Hold a call's "network" (*network, the caller's, any kind) to principal
 * n's own list, if its token has one; else leave it.  true becomes that
 * list, a list must be within it; false, null, an empty list and what is
 * not a network at all (the request's own check refuses that) are left
 * as they are.  False with err when the call asks for more than the
 * token may reach; *network is the caller's to free either way. */
bool auth_network_narrow(const struct auth *a, int n, jv *network, char *err, size_t errlen);

/* A token bucket. */
struct auth_bucket {
	double tokens, last_ms;
};
/* Take one request at now_ms.  False when the bucket is empty; then
 * *retry_s is the whole number of seconds until one is there again. */
bool auth_take(struct auth_bucket *b, double rate, double burst, double now_ms, unsigned *retry_s);

#endif
