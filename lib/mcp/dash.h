/* dash: the history's web view, behind sbx-mcp --listen's front door.
 *
 * http.c routes `/`, `/runs…`, `/sessions`, `/login`, `/logout` and
 * `/static/…` here after its front door's Host and Origin checks
 * (http_door.c; a foreign Origin is 403 before anything else).  Who is asking: a valid `Authorization:
 * Bearer` (scripts), or the `sbx_dash` cookie of a sign-in.  Signing in
 * POSTs the token once to /login; the server keeps only a random session
 * id mapped to the token's principal, sets it as an HttpOnly,
 * SameSite=Strict cookie (never the token), and redirects, so the token is
 * in no address bar, history or log.  Signing out is a POST too: no GET
 * changes anything, and SameSite=Strict with the Origin check keeps other
 * sites from posting either form.
 *
 * Pages are rendered by lib/history/page from the history file, opened
 * read-only per request and closed before the answer goes (sbx-mcp forks
 * its helpers between requests, never with a database open).  A token sees
 * its own runs unless [http] dashboard = "all".
 *
 * The reply is the caller's to send and free (dash_reply_free).
 */
#ifndef SBX_DASH_H
#define SBX_DASH_H

/* The sign-in's cookie (HttpOnly, SameSite=Strict, Path=/). */
#define DASH_COOKIE "sbx_dash"

#include <stdbool.h>
#include <stddef.h>

#include "auth.h"
#include "conf.h"
#include "mcp.h"

struct dash;

struct dash_reply {
	unsigned status;
	const char *ctype;   /* static */
	char *body;
	size_t len;
	char *cookie;        /* a Set-Cookie value, or NULL */
	const char *location; /* a redirect's target (static), or NULL */
	const char *allow;   /* for 405 (static) */
	char retry[16];      /* Retry-After for 429 and 503, or "" */
	int who;             /* the principal it was served to, 0 none */
};

/* m: the server whose live sandbox sessions /sessions lists (or NULL). */
struct dash *dash_new(const struct conf *c, const struct auth *a, struct mcp *m);
void dash_free(struct dash *d);
/* Is the path the dashboard's? */
bool dash_route(const char *path);
/* The principal a request is from: its Bearer token's, else its sign-in
 * cookie's; 0 for nobody (for the rate limit, before dash_serve). */
int dash_who(struct dash *d, const char *authorization, const char *cookie);
/* The query string's value of key, from the HTTP layer. */
typedef const char *(*dash_arg_fn)(void *arg, const char *key);
/* Serve one request: its method, path, query (through arg_fn), Cookie
 * header, Authorization header and body (a form for POST /login). */
void dash_serve(struct dash *d, const char *method, const char *path, dash_arg_fn arg_fn, void *arg,
		const char *cookie, const char *authorization, const char *body, size_t len, struct dash_reply *r);
void dash_reply_free(struct dash_reply *r);
/* The Content-Security-Policy every dashboard answer carries. */
extern const char dash_csp[];

#endif
