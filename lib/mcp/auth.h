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
 * A token bucket per principal meters requests: `rate` per second, with
 * bursts of up to `burst`.
 */
#ifndef SBX_AUTH_H
#define SBX_AUTH_H

#include <stdbool.h>
#include <stddef.h>

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

/* A token bucket. */
struct auth_bucket {
	double tokens, last_ms;
};
/* Take one request at now_ms.  False when the bucket is empty; then
 * *retry_s is the whole number of seconds until one is there again. */
bool auth_take(struct auth_bucket *b, double rate, double burst, double now_ms, unsigned *retry_s);

#endif
