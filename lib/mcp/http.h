/* http: sbx-mcp over HTTP — MCP's Streamable HTTP transport on /mcp and
 * the 2024-11-05 HTTP+SSE transport on /sse and /messages, served by
 * libmicrohttpd from the caller's event loop.
 *
 * libmicrohttpd runs in "external" epoll mode: its epoll fd is one watch
 * on the loop, and http_run does its work, so the HTTP server, the MCP
 * server and the sandbox pipeline share one thread (libjq is not
 * thread-safe).  A request waiting for a tool's answer is a suspended
 * connection; the answer resumes it.  Either the answer goes back as one
 * JSON body, or, once the call sends progress and the client accepts it,
 * as an event stream that ends with the answer.
 *
 * Every request but /healthz passes one front door (http_door.c), in this
 * order: the Host check (names a DNS-rebinding page could use are
 * refused), the Origin check (a browser page of a foreign origin is
 * refused), who is asking (a bearer token, lib/auth; on the dashboard's
 * pages also a sign-in cookie, dash.h), that principal's rate limit.  The
 * paths are a table (http.c).  An Mcp-Session-Id names a conversation
 * (conv.h; not a sandbox session): 256 random bits, belonging to the
 * token that made it, unknown (404) to any other; conversations idle for
 * [http] session_ttl expire.  Conversations, the in-flight quota and the
 * body limit bound what one token can make the server hold.
 *
 * Ownership: the caller keeps the loop, the MCP server, the configuration
 * and the auth for the life of the http; http_free ends its conversations
 * (and their clients) and closes every connection.
 */
#ifndef SBX_HTTP_H
#define SBX_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "auth.h"
#include "conf.h"
#include "loop.h"
#include "mcp.h"

struct http;

/* Listen on `listen`: "PORT", "HOST:PORT" or "[V6]:PORT", HOST an IP
 * address or localhost (port 0: any free port).  NULL with err if the
 * address is bad or cannot be bound. */
struct http *http_new(struct loop *l, struct mcp *m, const struct conf *c, const struct auth *a, const char *listen,
		      char *err, size_t errlen);
/* Where it listens, as "http://ADDR:PORT" (static to the http). */
const char *http_base_url(const struct http *h);
/* The longest the loop may sleep before http_run is due (-1: no limit). */
int http_timeout_ms(struct http *h);
/* Do libmicrohttpd's pending work; call after every loop turn. */
void http_run(struct http *h);
/* Stop accepting connections; requests already made are still answered,
 * new ones on open connections get 503. */
void http_drain(struct http *h);
/* Requests whose answer has not been sent yet. */
unsigned http_busy(const struct http *h);
/* End every conversation and stream, close every connection, free. */
void http_free(struct http *h);
/* Whether a message of libmicrohttpd's says only that a client went away
 * (closed its event stream, reset its connection): an ordinary event,
 * which the server does not log as an error. */
bool http_log_is_client_gone(const char *msg);

#endif
