/* http_int: what the parts of the HTTP transport share, and nobody else:
 * http.c (requests and responses, the routes, the loop), http_mcp.c (MCP
 * over HTTP: its requests, the conversations' streams), http_door.c (the front door every route but
 * /healthz passes), http_link.c (connections and their limits),
 * http_listen.c (the listening socket).  The structures are http.c's; the
 * other parts borrow them.
 */
#ifndef SBX_HTTP_INT_H
#define SBX_HTTP_INT_H

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "auth.h"
#include "conf.h"
#include "conv.h"
#include "http.h"
#include "loop.h"
#include "mcp.h"

enum route_id { R_OTHER, R_MCP, R_SSE, R_MESSAGES, R_HEALTH, R_DASH, R_PORT };

/* Who a route lets in (http_door). */
enum door {
	DOOR_NONE,   /* anyone: /healthz */
	DOOR_TOKEN,  /* a Bearer token (or a CORS preflight, which carries none): MCP */
	DOOR_PAGE,   /* anyone of the server's own origin; the principal, if any, by token or sign-in: the dashboard */
	DOOR_PORT,   /* a principal of the server's own origin, by token or sign-in: a session's open port */
};

struct ex;

/* A path and what it serves (the table is http.c's). */
struct route {
	const char *path;              /* NULL: the dashboard's paths (dash_route); R_PORT: a prefix */
	enum route_id id;
	enum door door;
	const char *allow;             /* the methods it answers (405's Allow), NULL: the handler's business */
	const char *only;              /* what a 405 says */
	enum MHD_Result (*handle)(struct ex *ex); /* with the body in */
};

/* A token's standing. */
struct principal {
	struct auth_bucket bucket;
	unsigned inflight, convs;
};

/* A request waiting for its answer. */
struct pend {
	uint64_t tag;
	struct conv *c;
	struct ex *ex;         /* Streamable HTTP: the POST it answers (or a GET resuming it), or NULL */
	bool streamed;         /* its POST became an event stream: what comes after it closed is kept */
	struct pend *next;
};

/* A connection, from its accept to its close (http_link_notify).  Until one of
 * its requests carries a valid token it is a stranger's: it serves one
 * request (Connection: close), which must be whole within request_timeout
 * of the accept however slowly its bytes trickle in (libmicrohttpd's idle
 * timeout restarts with each), and it is the first to go when
 * connections run short (sweep). */
struct link {
	int fd;
	char addr[INET6_ADDRSTRLEN];   /* the peer's address, without its port */
	char peer[64];                 /* with it, for the access log (ex->peer) */
	double since;                  /* its accept (a stranger's connection serves one request) */
	bool trusted, shed;
	char *uri;                     /* its last request's target as sent, for a port's (http_port.c) */
	struct link *prev, *next;      /* oldest first */
};

/* One HTTP request and its response. */
struct ex {
	struct http *h;
	struct MHD_Connection *conn;   /* NULL once the request is over */
	int refs;                      /* the connection's, the response's */
	enum route_id route;
	const struct route *rt;        /* NULL: R_OTHER */
	char method[8], path[48], peer[64], rpc[40], sid[9];
	double t0;
	int owner;
	struct conv *c, *made;         /* its conversation; one made by this request */
	bool accept_sse, handled, queued, suspended;
	char *body;
	size_t len, dropped;
	uint64_t tag;
	jv answer;                     /* a JSON answer not yet queued */
	bool no_answer, gone, ended, stream;
	char *out;                     /* event-stream bytes not yet sent */
	size_t out_len, out_off, out_cap;
	unsigned status;
	size_t bytes;
	char *cors;                    /* the allowed foreign Origin, echoed */
	struct proxy *px;              /* R_PORT: the proxy's state (http_port.c) */
	struct ex *next;
};

struct http {
	struct loop *loop;
	struct mcp *mcp;
	const struct conf *conf;
	const struct auth *auth;
	struct MHD_Daemon *d;
	int epfd, timer;
	char base[80];
	struct principal *who;         /* [0] unused, [1..n] tokens */
	struct conv *convs;            /* MCP conversations (conv.h) */
	struct pend *pends;
	struct ex *exs;
	uint64_t seq;
	unsigned busy, ticks;
	struct link *links, *newest;   /* open connections, oldest first */
	unsigned nlinks, nshed;        /* open (shed ones included); shed since the last tick */
	bool draining;
	struct dash *dash;             /* the history's web view at / */
	struct wsup *wsups;            /* upgraded connections to sessions' ports (http_port.c) */
};

/* http.c: a request header (NULL once the request is over). */
const char *http_header(struct ex *ex, const char *name);
/* Queue a whole response; extra: "Name", "value", … NULL. */
enum MHD_Result http_reply(struct ex *ex, unsigned status, const char *ctype, const char *body, size_t len, ...);
/* An HTTP-level error with a JSON-RPC error body (what MCP clients show);
 * h1/v1, h2/v2: headers to add, or NULL. */
enum MHD_Result http_fail(struct ex *ex, unsigned status, int code, const char *msg, const char *h1, const char *v1,
			  const char *h2, const char *v2);

/* Drop a reference to an exchange (the connection's, a response's). */
void http_ex_unref(struct ex *ex);
/* Wake a suspended request: its answer or stream has more. */
void http_wake(struct ex *ex);
/* Bytes for an event stream, sent when it next reads. */
void http_out_add(struct ex *ex, const char *s, size_t n);
/* Answer with an event stream of ex->out, open until ex->ended. */
enum MHD_Result http_reply_stream(struct ex *ex);
/* 503: the server is shutting down. */
enum MHD_Result http_busy_reply(struct ex *ex);
/* 413: a body over [http] max_body. */
enum MHD_Result http_too_large(struct ex *ex);

/* http_mcp.c: MCP over HTTP, both transports: the checks of an MCP
 * request's headers (after the door and its route's methods), the
 * handlers of /mcp, /sse and /messages, the conversations' streams and
 * what the MCP server sends them. */
enum MHD_Result http_mcp_begin(struct ex *ex);
enum MHD_Result http_mcp_route(struct ex *ex); /* /mcp: POST, GET, DELETE */
enum MHD_Result http_mcp_sse(struct ex *ex);   /* GET /sse */
enum MHD_Result http_mcp_post(struct ex *ex);  /* POST /mcp or /messages: one message */
/* End a conversation: its calls cancelled, what waits on it answered. */
void http_end_conv(struct conv *c);
/* A request's answer is in, or will not come. */
void http_pend_done(struct http *h, struct pend *p);
/* Each second: conversations idle past [http] session_ttl end. */
void http_mcp_tick(struct http *h, double now);

/* http_port.c: a session's open port (its theory of operation).  begin:
 * the head is in and the door passed (uri: the target as sent); handle:
 * the body is in; respond: the connection woke; end: the request is over;
 * close_all: the upgraded connections, before the daemon stops. */
enum MHD_Result http_port_begin(struct ex *ex, const char *uri);
enum MHD_Result http_port_handle(struct ex *ex);
enum MHD_Result http_port_respond(struct ex *ex);
void http_port_end(struct ex *ex);
void http_port_close_all(struct http *h);
/* mcp_set_http's: a port closed, its connections through this server end. */
void http_port_closed(void *arg, const char *sid, unsigned port);

/* http_door.c: the front door, once for every route with one: the Host,
 * the Origin, who is asking (its door's way) and that principal's rate.
 * MHD_YES with nothing queued: in, ex->owner set (0: nobody, for a
 * dashboard page or a preflight); else the refusal is queued. */
enum MHD_Result http_door(struct ex *ex);

/* http_link.c: libmicrohttpd's connection callback (MHD_OPTION_NOTIFY_CONNECTION). */
void http_link_notify(void *cls, struct MHD_Connection *conn, void **ctx, enum MHD_ConnectionNotificationCode what);
/* The link of a connection, or NULL. */
struct link *http_link_of(struct MHD_Connection *conn);
/* libmicrohttpd's own connection limit (MHD_OPTION_CONNECTION_LIMIT). */
unsigned http_link_limit(const struct conf *c);
/* Each second: close strangers past request_timeout and the limits. */
void http_link_tick(struct http *h, double now);

/* http_listen.c: "PORT", "HOST:PORT", "[V6]:PORT" → a bound, listening
 * socket; "systemd" → the one systemd passed.  -1 with err. */
int http_listen(const char *spec, char *err, size_t errlen);

#endif
