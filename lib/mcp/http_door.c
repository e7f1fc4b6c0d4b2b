#define _GNU_SOURCE
#include "http_int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dash.h"
#include "util.h"

/* A Host header's name: IP literals and localhost cannot be DNS-rebound;
 * any other name must be configured. */
/* ":PORT" with 1 to 5 digits, at most 65535, or nothing. */
static bool port_ok(const char *p)
{
	if (!*p)
		return true;
	if (*p++ != ':' || !*p || strlen(p) > 5 || strspn(p, "0123456789") != strlen(p))
		return false;
	return atol(p) <= 65535;
}

/* Host: an IP address, localhost or a configured name, and an optional
 * port, each exactly (anything after the name but a port, such as
 * "127.0.0.1:80@evil.example", is refused). */
static bool host_ok(const struct http *h, const char *host)
{
	if (!host)
		return true; /* HTTP/1.0 without Host: no browser sends that */
	char name[256];
	size_t n = strlen(host);
	if (n >= sizeof name)
		return false;
	if (host[0] == '[') {
		const char *e = strchr(host, ']');
		if (!e || !port_ok(e + 1))
			return false;
		memcpy(name, host + 1, (size_t)(e - host - 1));
		name[e - host - 1] = 0;
		struct in6_addr a6;
		return inet_pton(AF_INET6, name, &a6) == 1;
	}
	size_t len = strcspn(host, ":");
	if (!port_ok(host + len))
		return false;
	memcpy(name, host, len);
	name[len] = 0;
	struct in_addr a4;
	if (inet_pton(AF_INET, name, &a4) == 1 || !strcasecmp(name, "localhost"))
		return true;
	for (char **e = h->conf->http_hosts; e && *e; e++)
		if (!strcasecmp(*e, name))
			return true;
	return false;
}

/* A present Origin must be the server's own or configured; a browser page
 * elsewhere gets nothing, whatever token it has. */
static bool origin_ok(struct ex *ex, const char *origin, const char *host)
{
	if (!origin)
		return true;
	if (host && !strncasecmp(origin, "http://", 7) && !strcasecmp(origin + 7, host))
		return true;
	/* Behind a TLS proxy the browser's own origin is https:// and the
	 * Host it names (which host_ok has let in). */
	if (host && !strncasecmp(origin, "https://", 8) && !strcasecmp(origin + 8, host))
		return true;
	for (char **e = ex->h->conf->http_origins; e && *e; e++)
		if (!strcasecmp(*e, origin)) {
			ex->cors = util_strdup(origin);
			return true;
		}
	return false;
}

/* The principal's rate ([http] rate, burst), the same on every route:
 * false when it is spent, with the seconds to wait as Retry-After. */
static bool metered(struct http *h, int who, char retry_after[16])
{
	unsigned retry;
	if (auth_take(&h->who[who].bucket, h->conf->http_rate, (double)h->conf->http_burst, util_now_ms(), &retry))
		return true;
	snprintf(retry_after, 16, "%u", retry);
	return false;
}

enum MHD_Result http_door(struct ex *ex)
{
	struct http *h = ex->h;
	bool page = ex->rt->door == DOOR_PAGE;
	/* (a port's refusals are a page's too: a person's browser reads them) */
	const char *host = http_header(ex, "Host");
	if (!host_ok(h, host))
		return http_fail(ex, MHD_HTTP_FORBIDDEN, -32000,
				 "forbidden: Host is not an IP address, localhost or one of [http] hosts", NULL, NULL, NULL, NULL);
	if (!origin_ok(ex, http_header(ex, "Origin"), host))
		return http_fail(ex, MHD_HTTP_FORBIDDEN, -32000, "forbidden: Origin not allowed (see [http] origins)", NULL,
				 NULL, NULL, NULL);
	int who;
	if (ex->rt->door == DOOR_PORT) {
		/* A session's port: its owner's token or sign-in, from the
		 * server's own origin (a configured foreign one may call /mcp,
		 * not drive a person's app). */
		if (ex->cors)
			return http_fail(ex, MHD_HTTP_FORBIDDEN, -32000, "forbidden: a session's port answers its own origin only",
					 NULL, NULL, NULL, NULL);
		who = dash_who(h->dash, http_header(ex, "Authorization"), http_header(ex, "Cookie"));
		if (who <= 0) {
			static const char page_401[] =
				"<!doctype html><meta charset=utf-8><title>Sign in</title><p>This is a session's port, "
				"open to the token whose agent opened it. <a href=\"/login\">Sign in</a> with that token, "
				"then come back to this address.</p>\n";
			return http_reply(ex, MHD_HTTP_UNAUTHORIZED, "text/html; charset=utf-8", page_401, sizeof page_401 - 1,
					  "WWW-Authenticate", "Bearer realm=\"sbx-mcp\"", NULL);
		}
	} else if (page) {
		/* Same front door, then the dashboard's own sign-in (dash.h); a
		 * known principal is metered as on /mcp. */
		/* A configured foreign Origin may call /mcp, not read pages or
		 * post the sign-in form (a sign-in to the attacker's token). */
		if (ex->cors)
			return http_fail(ex, MHD_HTTP_FORBIDDEN, -32000, "forbidden: the dashboard answers its own origin only",
					 NULL, NULL, NULL, NULL);
		who = dash_who(h->dash, http_header(ex, "Authorization"), http_header(ex, "Cookie"));
	} else {
		if (!strcmp(ex->method, "OPTIONS")) {
			/* CORS preflight of an allowed browser origin: carries no token. */
			if (!ex->cors)
				return http_fail(ex, MHD_HTTP_FORBIDDEN, -32000, "forbidden: no allowed Origin", NULL, NULL, NULL,
						 NULL);
			return MHD_YES;
		}
		who = auth_check(h->auth, http_header(ex, "Authorization"));
		if (who <= 0)
			return http_fail(ex, MHD_HTTP_UNAUTHORIZED, -32001,
					 who == 0 ? "unauthorized: send Authorization: Bearer TOKEN" : "unauthorized: unknown token",
					 "WWW-Authenticate",
					 who == 0 ? "Bearer realm=\"sbx-mcp\"" : "Bearer realm=\"sbx-mcp\", error=\"invalid_token\"",
					 NULL, NULL);
		ex->owner = who;
	}
	char ra[16];
	if (who > 0 && !metered(h, who, ra)) {
		if (page || ex->rt->door == DOOR_PORT) /* a page's reader gets text */
			return http_reply(ex, MHD_HTTP_TOO_MANY_REQUESTS, "text/plain; charset=utf-8", "too many requests\n", 18,
					  "Retry-After", ra, NULL);
		return http_fail(ex, MHD_HTTP_TOO_MANY_REQUESTS, -32000, "too many requests for this token ([http] rate, burst)",
				 "Retry-After", ra, NULL, NULL);
	}
	ex->owner = who;
	return MHD_YES;
}
