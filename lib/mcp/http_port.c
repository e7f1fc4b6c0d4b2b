/* http_port: /sessions/ID/ports/PORT/…, a session's open port (port_open)
 * reverse-proxied into the session's loopback, HTTP and WebSocket.
 *
 * Theory of operation.  The front door is the dashboard's and MCP's
 * (http_door): the Host and Origin checks, then the principal by token or
 * by the dashboard's sign-in cookie, which must be the owner of the
 * session that opened the port; anyone else is told there is no such
 * port.  With the request's body in, sbx-run makes the connection in the
 * session's namespace (mcp_port_connect) while the request is suspended.
 * The request goes upstream with the prefix taken off its path, the
 * hop-by-hop headers dropped, and the person's credentials removed (their
 * Bearer token and the sign-in cookie never reach the sandbox), as
 * HTTP/1.0 with Connection: close, so the answer is the bytes up to the
 * upstream's end, never chunked.  The answer's head is read whole (at most
 * HEAD_MAX bytes, within HEAD_MS), its hop-by-hop headers dropped, a
 * Location on this host kept under the prefix, a Set-Cookie of the
 * sign-in's name dropped; the body is streamed through a bounded buffer
 * while the browser reads it.  A WebSocket handshake goes up as HTTP/1.1;
 * an upstream 101 becomes libmicrohttpd's upgrade, after which a relay
 * (relay.h) carries the frames both ways untouched.
 *
 * What an app served this way can do in the person's browser: it runs on
 * the server's origin, so its scripts can read the dashboard as the
 * signed-in principal.  That principal is the one whose token the agent
 * holds and that owns the session, so the app gains nothing its builder
 * could not already read through MCP; the sign-in cookie is HttpOnly.
 *
 * Ownership: the exchange (struct ex) owns its proxy state (ex->px) until
 * the request completes; http_port_end frees it.  Upgraded connections
 * belong to struct http's list until their relay ends.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dash.h"
#include "proc.h"
#include "relay.h"
#include "state.h"
#include "util.h"

#define HEAD_MAX (64u << 10)   /* an upstream answer's head */
#define HEAD_MS 60000          /* from the connection to the whole head */
#define BODY_BUF (64u << 10)   /* a body's bytes read ahead of the browser */
#define PREFIX_MAX 96

struct proxy {
	struct ex *ex;
	char sid[STATE_SESSION_ID_LEN + 1];
	unsigned port;
	char prefix[PREFIX_MAX];   /* /sessions/ID/ports/PORT */
	char *target;              /* the path and query upstream */
	bool websocket;
	uint64_t ask;              /* the connection being made */
	int up;                    /* the upstream socket, or -1 */
	double t0;
	char *out;                 /* the request, then sent */
	size_t out_len, out_off;
	char *in;                  /* the answer's head, then its body */
	size_t in_len, in_off, in_cap;
	bool head_done, up_eof, failed;
	unsigned status;
	long long left;            /* the body's bytes still to come by its Content-Length, or -1 */
	char why[300];             /* why it failed, for the 502 */
};

/* An upgraded connection and its relay. */
struct wsup {
	struct http *h;
	char sid[STATE_SESSION_ID_LEN + 1];
	unsigned port;
	struct MHD_UpgradeResponseHandle *urh;
	struct relay *relay;
	struct wsup *next;
};

/* Hop-by-hop headers (RFC 9110 7.6.1) and those the proxy sets itself (a
 * client's own X-Forwarded-* would tell the app what the proxy did not). */
static bool dropped_header(const char *name)
{
	static const char *const names[] = { "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
					     "Proxy-Authenticate", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
					     "Host", "Content-Length", "Expect", "Forwarded", "X-Forwarded-For",
					     "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Prefix", NULL };
	for (int i = 0; names[i]; i++)
		if (!strcasecmp(name, names[i]))
			return true;
	return false;
}

static void out_put(struct proxy *px, const char *s, size_t n)
{
	px->out = util_xrealloc(px->out, px->out_len + n + 1);
	memcpy(px->out + px->out_len, s, n);
	px->out_len += n;
}

static void out_add(struct proxy *px, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_add(struct proxy *px, const char *fmt, ...)
{
	char buf[512], *s = buf;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof buf) {
		s = util_xalloc((size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf(s, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	out_put(px, s, (size_t)n);
	if (s != buf)
		free(s);
}

/* Is the cookie pair p (len bytes, "name=value") the sign-in's?  Its name
 * is what comes before "=", trimmed as a browser trims it, in any case
 * (a browser's is exact; refusing more costs an app nothing). */
static bool names_signin(const char *p, size_t len)
{
	size_t lead = strspn(p, " \t");
	p += lead < len ? lead : len;
	len -= lead < len ? lead : len;
	const char *eq = memchr(p, '=', len);
	if (!eq)
		return false;
	size_t n = (size_t)(eq - p);
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	return n == strlen(DASH_COOKIE) && !strncasecmp(p, DASH_COOKIE, n);
}

/* The Cookie header without the sign-in's cookie, or NULL if nothing
 * else: its other pairs, trimmed, "; " between them. */
static char *cookie_without_signin(const char *v)
{
	/* each pair kept is at most as long as it came, plus "; " */
	char *out = util_xalloc(3 * strlen(v) + 3);
	size_t n = 0;
	for (const char *p = v; *p;) {
		p += strspn(p, "; \t");
		size_t len = strcspn(p, ";");
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len && !names_signin(p, len)) {
			if (n) {
				memcpy(out + n, "; ", 2);
				n += 2;
			}
			memcpy(out + n, p, len);
			n += len;
		}
		p += strcspn(p, ";");
	}
	out[n] = 0;
	if (!n) {
		free(out);
		return NULL;
	}
	return out;
}

static enum MHD_Result copy_header(void *cls, enum MHD_ValueKind kind, const char *name, const char *value)
{
	struct proxy *px = cls;
	if (dropped_header(name) || strchr(value, '\r') || strchr(value, '\n'))
		return MHD_YES;
	if (!strcasecmp(name, "Authorization") && !strncasecmp(value, "Bearer ", 7))
		return MHD_YES; /* the person's token: this server's, not the app's */
	if (!strcasecmp(name, "Cookie")) {
		char *rest = cookie_without_signin(value);
		if (rest)
			out_add(px, "Cookie: %s\r\n", rest);
		free(rest);
		return MHD_YES;
	}
	out_add(px, "%s: %s\r\n", name, value);
	(void)kind;
	return MHD_YES;
}

/* The request as it goes upstream. */
static void build_request(struct proxy *px, struct ex *ex)
{
	out_add(px, "%s %s HTTP/1.%d\r\nHost: localhost:%u\r\n", ex->method, px->target, px->websocket, px->port);
	MHD_get_connection_values(ex->conn, MHD_HEADER_KIND, copy_header, px);
	const char *host = http_header(ex, "Host");
	out_add(px, "X-Forwarded-Prefix: %s\r\nX-Forwarded-Proto: http\r\n", px->prefix);
	if (host)
		out_add(px, "X-Forwarded-Host: %s\r\n", host);
	if (px->websocket)
		out_add(px, "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
	else
		out_add(px, "Connection: close\r\nContent-Length: %zu\r\n\r\n", ex->len);
	if (!px->websocket && ex->len)
		out_put(px, ex->body, ex->len);
}

static void up_close(struct http *h, struct proxy *px)
{
	if (px->up >= 0) {
		loop_unwatch(h->loop, px->up);
		close(px->up);
		px->up = -1;
	}
}

static void fail(struct proxy *px, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct proxy *px, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(px->why, sizeof px->why, fmt, ap);
	va_end(ap);
	px->failed = true;
	up_close(px->ex->h, px);
	http_wake(px->ex);
}

/* Is the head whole?  Its length with the blank line, or 0. */
static size_t head_len(const struct proxy *px)
{
	const char *e = memmem(px->in, px->in_len, "\r\n\r\n", 4);
	return e ? (size_t)(e - px->in) + 4 : 0;
}

static void on_up_io(struct loop *l, int fd, short rev, void *arg)
{
	struct proxy *px = arg;
	struct http *h = px->ex->h;
	if (px->out_off < px->out_len) {
		ssize_t n = send(fd, px->out + px->out_off, px->out_len - px->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			fail(px, "the port's server closed the connection before the request was sent (%s)", strerror(errno));
			return;
		}
		if (n > 0)
			px->out_off += (size_t)n;
		if (px->out_off < px->out_len)
			return;
		loop_watch(l, fd, POLLIN, on_up_io, px);
		return;
	}
	if (px->in_off && px->in_off == px->in_len)
		px->in_off = px->in_len = 0; /* all sent: the buffer starts again */
	if (px->in_len == px->in_cap) {
		loop_unwatch(l, fd); /* the browser reads slower: wait for it */
		return;
	}
	ssize_t n = recv(fd, px->in + px->in_len, px->in_cap - px->in_len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (n < 0 || (!px->head_done && !head_len(px))) {
			/* (a reset in the body must not pass for its end) */
			fail(px, n ? "the port's server reset the connection" : "the port's server closed the connection without an answer");
			return;
		}
		px->up_eof = true;
		up_close(h, px);
	} else
		px->in_len += (size_t)n;
	if (!px->head_done) {
		if (px->up_eof || head_len(px))
			http_wake(px->ex); /* http_port_respond reads it */
		else if (px->in_len == px->in_cap)
			fail(px, "the port's server sent a head longer than %u KiB", HEAD_MAX >> 10);
		return;
	}
	http_wake(px->ex);
	(void)rev;
}

static void on_connected(int fd, const char *why, void *arg)
{
	struct proxy *px = arg;
	px->ask = 0;
	if (fd < 0) {
		fail(px, "cannot connect to port %u in the session: %s", px->port, why);
		return;
	}
	px->up = fd;
	proc_set_nonblock(fd, true);
	loop_watch(px->ex->h->loop, fd, POLLOUT, on_up_io, px);
}

/* /sessions/ID/ports/PORT[/rest]: the session, the port, and where the
 * rest begins in the raw target; false if it is not such a path. */
static bool parse_target(const char *uri, char *sid, unsigned *port, size_t *rest)
{
	const char *p = uri + strlen("/sessions/");
	size_t n = strcspn(p, "/");
	if (!n || n > STATE_SESSION_ID_LEN || !state_session_id_ok(p, n) || strncmp(p + n, "/ports/", 7))
		return false;
	memcpy(sid, p, n);
	sid[n] = 0;
	const char *q = p + n + 7;
	size_t d = strspn(q, "0123456789");
	if (!d || d > 5 || q[0] == '0' || (q[d] && q[d] != '/' && q[d] != '?'))
		return false;
	*port = (unsigned)atoi(q);
	*rest = (size_t)(q + d - uri);
	return *port <= 65535;
}

static enum MHD_Result text_reply(struct ex *ex, unsigned status, const char *text)
{
	return http_reply(ex, status, "text/plain; charset=utf-8", text, strlen(text), NULL);
}

enum MHD_Result http_port_begin(struct ex *ex, const char *uri)
{
	char sid[STATE_SESSION_ID_LEN + 1];
	unsigned port;
	size_t rest;
	if (!uri || !parse_target(uri, sid, &port, &rest))
		return text_reply(ex, MHD_HTTP_NOT_FOUND, "not found: a session's open port is /sessions/ID/ports/PORT/\n");
	if (!uri[rest] || uri[rest] == '?') {
		/* Without its slash a page's relative links would miss the prefix. */
		char *to = util_fmt("%.*s/%s", (int)rest, uri, uri + rest);
		enum MHD_Result r = http_reply(ex, MHD_HTTP_PERMANENT_REDIRECT, "text/plain; charset=utf-8", "", 0, "Location", to, NULL);
		free(to);
		return r;
	}
	struct proxy *px = util_xalloc(sizeof *px);
	*px = (struct proxy){ .ex = ex, .port = port, .up = -1, .t0 = util_now_ms(), .target = util_strdup(uri + rest) };
	snprintf(px->sid, sizeof px->sid, "%s", sid);
	snprintf(px->prefix, sizeof px->prefix, "%.*s", (int)rest, uri);
	const char *upg = http_header(ex, "Upgrade");
	px->websocket = upg && !strcasecmp(upg, "websocket") && !strcmp(ex->method, "GET");
	ex->px = px;
	return MHD_YES;
}

enum MHD_Result http_port_handle(struct ex *ex)
{
	struct proxy *px = ex->px;
	char err[300];
	bool exposed;
	px->ask = mcp_port_connect(ex->h->mcp, (unsigned)ex->owner, px->sid, px->port, on_connected, px, &exposed, err,
				   sizeof err);
	if (!px->ask)
		return exposed ? text_reply(ex, MHD_HTTP_BAD_GATEWAY, err) : text_reply(ex, MHD_HTTP_NOT_FOUND, err);
	/* (only now, for its owner: on_connected comes from the loop, later) */
	px->in_cap = HEAD_MAX;
	px->in = util_xalloc(px->in_cap);
	build_request(px, ex);
	return MHD_YES; /* http_port_respond waits for the answer */
}

/* ---- the answer ---------------------------------------------------------- */

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct ex *ex = cls;
	struct proxy *px = ex->px;
	if (!px || ex->gone || px->failed)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (px->left == 0)
		return MHD_CONTENT_READER_END_OF_STREAM; /* (an upstream that keeps its connection) */
	if (px->in_off < px->in_len) {
		size_t n = px->in_len - px->in_off;
		if (n > max)
			n = max;
		if (px->left >= 0 && (long long)n > px->left)
			n = (size_t)px->left;
		memcpy(buf, px->in + px->in_off, n);
		px->in_off += n;
		ex->bytes += n;
		if (px->left > 0)
			px->left -= (long long)n;
		if (px->up >= 0 && px->in_off == px->in_len)
			loop_watch(ex->h->loop, px->up, POLLIN, on_up_io, px); /* room again */
		return (ssize_t)n;
	}
	if (px->up_eof) /* (short of its Content-Length: cut, not ended) */
		return px->left > 0 ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
	if (px->up >= 0)
		loop_watch(ex->h->loop, px->up, POLLIN, on_up_io, px);
	ex->suspended = true;
	MHD_suspend_connection(ex->conn);
	(void)pos;
	return 0;
}

static void body_free(void *cls)
{
	http_ex_unref(cls);
}

static void ws_done(void *arg)
{
	struct wsup *w = arg;
	for (struct wsup **p = &w->h->wsups; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	MHD_upgrade_action(w->urh, MHD_UPGRADE_ACTION_CLOSE);
	free(w);
}

static void on_upgraded(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra_in, size_t extra_in_size,
			MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct ex *ex = cls;
	struct proxy *px = ex->px;
	struct http *h = ex->h;
	struct wsup *w = util_xalloc(sizeof *w);
	*w = (struct wsup){ .h = h, .urh = urh, .port = px ? px->port : 0, .next = h->wsups };
	snprintf(w->sid, sizeof w->sid, "%s", px ? px->sid : "");
	h->wsups = w;
	if (!px || px->up < 0) {
		w->relay = NULL;
		ws_done(w);
	} else {
		int up = px->up;
		loop_unwatch(h->loop, up);
		px->up = -1; /* the relay's now */
		w->relay = relay_new(h->loop, sock, up, RELAY_KEEP_A, px->in + px->in_off, px->in_len - px->in_off, extra_in,
				     extra_in_size, ws_done, w);
		px->in_off = px->in_len = 0;
	}
	(void)conn, (void)req_cls;
}

/* The answer's head: its status and the headers that go on. */
static bool parse_head(struct proxy *px, struct MHD_Response *r, size_t hlen)
{
	char *h = px->in;
	h[hlen - 2] = 0;
	char *line = h, *next = strstr(line, "\r\n");
	if (!next)
		return false;
	px->left = -1;
	for (line = next + 2; *line; line = next + 2) {
		next = strstr(line, "\r\n");
		if (!next)
			break;
		*next = 0;
		char *colon = strchr(line, ':');
		if (!colon || colon == line)
			continue;
		*colon = 0;
		const char *v = colon + 1 + strspn(colon + 1, " \t");
		if (!strcasecmp(line, "Transfer-Encoding") && strcasecmp(v, "identity"))
			return false; /* chunks to an HTTP/1.0 request: not a server we can read */
		if (!strcasecmp(line, "Content-Length")) {
			char *end;
			errno = 0;
			unsigned long long cl = strtoull(v, &end, 10);
			end += strspn(end, " \t");
			if (errno || end == v || *end || !isdigit((unsigned char)*v) || cl > (1ull << 62) ||
			    (px->left >= 0 && (unsigned long long)px->left != cl))
				return false; /* (two lengths that differ: a smuggling attempt or a broken server) */
			px->left = (long long)cl;
			continue;
		}
		if ((dropped_header(line) && !(px->websocket && !strcasecmp(line, "Upgrade"))) || !strcasecmp(line, "Date"))
			continue;
		if (!strcasecmp(line, "Set-Cookie") && names_signin(v, strcspn(v, ";")))
			continue; /* the app may not sign the person out or in */
		if (!strcasecmp(line, "Location") && v[0] == '/' && v[1] != '/') {
			char *to = util_fmt("%s%s", px->prefix, v);
			MHD_add_response_header(r, "Location", to);
			free(to);
			continue;
		}
		MHD_add_response_header(r, line, v);
	}
	return true;
}

/* The status of a whole head, or 0 if it is not an HTTP/1.x answer's. */
static unsigned head_status(const char *in, size_t hlen)
{
	char line[16]; /* "HTTP/1.1 200 " is all it reads */
	size_t n = strcspn(in, "\r"); /* (the head has one) */
	if (n >= hlen)
		return 0;
	if (n >= sizeof line)
		n = sizeof line - 1;
	memcpy(line, in, n);
	line[n] = 0;
	unsigned st;
	char sp;
	if (sscanf(line, "HTTP/1.%*1[01]%c%3u", &sp, &st) != 2 || sp != ' ' || st < 100 || st > 599 ||
	    (n > 12 && line[12] != ' '))
		return 0;
	return st;
}

enum MHD_Result http_port_respond(struct ex *ex)
{
	struct proxy *px = ex->px;
	if (ex->gone)
		return MHD_NO;
	size_t hlen = 0;
	unsigned st = 0;
	while (!px->failed && (hlen = head_len(px))) {
		/* An interim answer (100 Continue, 103 Early Hints) is dropped:
		 * the browser gets the final one. */
		st = head_status(px->in, hlen);
		if (st < 100 || st >= 200 || st == 101)
			break;
		memmove(px->in, px->in + hlen, px->in_len - hlen);
		px->in_len -= hlen;
		hlen = 0;
	}
	if (px->failed || !hlen) {
		if (!px->failed && util_now_ms() - px->t0 < HEAD_MS) {
			if (px->up < 0 && px->up_eof) /* (ended after an interim answer) */
				snprintf(px->why, sizeof px->why, "the port's server closed the connection without an answer");
			else {
				ex->suspended = true; /* (woken early: the head is not whole yet) */
				MHD_suspend_connection(ex->conn);
				return MHD_YES;
			}
		} else if (!px->failed)
			snprintf(px->why, sizeof px->why, "the port's server sent no answer within %d s", HEAD_MS / 1000);
		char *msg = util_fmt("%s\n", px->why);
		enum MHD_Result r = text_reply(ex, px->failed || px->up_eof ? MHD_HTTP_BAD_GATEWAY : MHD_HTTP_GATEWAY_TIMEOUT, msg);
		free(msg);
		return r;
	}
	px->head_done = true;
	px->in_off = hlen;
	const char *bad = !st ? "the port's server sent an answer that is not HTTP/1.0 or 1.1"
			 : st == 101 && !px->websocket ? "the port's server switched protocols unasked" : NULL;
	/* The body is what comes up to its Content-Length or the upstream's
	 * end; the browser gets chunks, or the end of the connection. */
	bool upgrade = st == 101;
	struct MHD_Response *r = NULL;
	if (!bad) {
		r = upgrade ? MHD_create_response_for_upgrade(on_upgraded, ex)
			    : MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32768, body_read, ex, body_free);
		if (!r)
			return MHD_NO;
		if (!upgrade)
			ex->refs++; /* body_free's, from now: MHD_destroy_response below may call it */
		/* parse a copy: the buffer keeps what came after the head */
		char *saved = px->in, *head = util_xalloc(hlen + 1);
		memcpy(head, px->in, hlen);
		head[hlen] = 0;
		px->in = head;
		if (!parse_head(px, r, hlen))
			bad = "the port's server sent a head this proxy cannot pass on (chunks to HTTP/1.0, a bad length)";
		px->in = saved;
		free(head);
	}
	if (bad) {
		if (r)
			MHD_destroy_response(r);
		up_close(ex->h, px);
		char *msg = util_fmt("%s\n", bad);
		enum MHD_Result res = text_reply(ex, MHD_HTTP_BAD_GATEWAY, msg);
		free(msg);
		return res;
	}
	px->status = st;
	px->in_cap = BODY_BUF > px->in_cap ? BODY_BUF : px->in_cap;
	px->in = util_xrealloc(px->in, px->in_cap);
	enum MHD_Result res = MHD_queue_response(ex->conn, st, r);
	MHD_destroy_response(r);
	ex->queued = true;
	ex->status = st;
	return res;
}

void http_port_end(struct ex *ex)
{
	struct proxy *px = ex->px;
	if (!px)
		return;
	if (px->ask)
		mcp_port_cancel(ex->h->mcp, px->ask);
	up_close(ex->h, px);
	free(px->target);
	free(px->out);
	free(px->in);
	free(px);
	ex->px = NULL;
}

void http_port_close_all(struct http *h)
{
	while (h->wsups) {
		struct wsup *w = h->wsups;
		if (w->relay)
			relay_close(w->relay); /* ws_done frees w */
		else
			ws_done(w);
	}
}

void http_port_closed(void *arg, const char *sid, unsigned port)
{
	struct http *h = arg;
	for (struct wsup *w = h->wsups, *next; w; w = next) {
		next = w->next;
		if (w->port == port && !strcmp(w->sid, sid)) {
			if (w->relay)
				relay_close(w->relay); /* ws_done frees w */
			else
				ws_done(w);
			next = h->wsups; /* (the list changed under us) */
		}
	}
	for (struct ex *ex = h->exs; ex; ex = ex->next) {
		struct proxy *px = ex->px;
		if (!px || px->port != port || strcmp(px->sid, sid) || px->failed)
			continue;
		if (px->ask)
			mcp_port_cancel(h->mcp, px->ask);
		px->ask = 0;
		fail(px, "the port was closed (port_close, or its session ended)");
	}
}
