#define _GNU_SOURCE
#include "http_int.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "dash.h"
#include "rec.h"
#include "util.h"

#define KEEPALIVE_S 15  /* a comment on idle event streams: finds dead clients */

/* ---- small things ------------------------------------------------------- */

const char *http_header(struct ex *ex, const char *name)
{
	return ex->conn ? MHD_lookup_connection_value(ex->conn, MHD_HEADER_KIND, name) : NULL;
}

/* Does a list such as "GET, POST" name this method (exactly)? */
static bool lists_method(const char *list, const char *method)
{
	size_t n = strlen(method);
	for (const char *p = list; *p; p += strspn(p, ", ")) {
		size_t len = strcspn(p, ", ");
		if (len == n && !strncmp(p, method, n))
			return true;
		p += len;
	}
	return false;
}

void http_ex_unref(struct ex *ex)
{
	if (--ex->refs > 0)
		return;
	struct http *h = ex->h;
	for (struct ex **p = &h->exs; *p; p = &(*p)->next)
		if (*p == ex) {
			*p = ex->next;
			break;
		}
	jv_free(ex->answer);
	free(ex->body);
	free(ex->out);
	free(ex->cors);
	free(ex);
}

void http_wake(struct ex *ex)
{
	if (ex && ex->suspended && ex->conn) {
		ex->suspended = false;
		MHD_resume_connection(ex->conn);
	}
}

void http_out_add(struct ex *ex, const char *s, size_t n)
{
	if (ex->out_len + n > ex->out_cap) {
		ex->out_cap = (ex->out_len + n) * 2 + 256;
		ex->out = util_xrealloc(ex->out, ex->out_cap);
	}
	memcpy(ex->out + ex->out_len, s, n);
	ex->out_len += n;
}

/* ---- responses ------------------------------------------------------------- */

static void add_common(struct ex *ex, struct MHD_Response *r)
{
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (ex->cors) {
		MHD_add_response_header(r, "Access-Control-Allow-Origin", ex->cors);
		MHD_add_response_header(r, "Access-Control-Expose-Headers", "Mcp-Session-Id");
		MHD_add_response_header(r, "Vary", "Origin");
	}
	if (ex->made && !ex->made->legacy && !ex->made->ephemeral)
		MHD_add_response_header(r, "Mcp-Session-Id", ex->made->id);
	/* A stranger (no valid token shown, link) gets one request per
	 * connection: a kept-alive one would restart its deadline with each. */
	if (ex->h->draining || ex->owner <= 0)
		MHD_add_response_header(r, "Connection", "close");
}

/* Queue a whole response; extra: "Name", "value", … NULL. */
enum MHD_Result http_reply(struct ex *ex, unsigned status, const char *ctype, const char *body, size_t len, ...)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (ctype)
		MHD_add_response_header(r, "Content-Type", ctype);
	add_common(ex, r);
	va_list ap;
	va_start(ap, len);
	for (const char *name; (name = va_arg(ap, const char *));)
		MHD_add_response_header(r, name, va_arg(ap, const char *));
	va_end(ap);
	enum MHD_Result res = MHD_queue_response(ex->conn, status, r);
	MHD_destroy_response(r);
	ex->queued = true;
	ex->status = status;
	ex->bytes = len;
	return res;
}

/* An HTTP-level error with a JSON-RPC error body (what MCP clients show). */
enum MHD_Result http_fail(struct ex *ex, unsigned status, int code, const char *msg, const char *h1, const char *v1,
			    const char *h2, const char *v2)
{
	jv err = jv_object_set(jv_object(), jv_string("code"), jv_number(code));
	err = jv_object_set(err, jv_string("message"), jv_string(msg));
	jv o = jv_object_set(jv_object(), jv_string("jsonrpc"), jv_string("2.0"));
	o = jv_object_set(o, jv_string("id"), jv_null());
	o = jv_object_set(o, jv_string("error"), err);
	size_t n;
	char *body = rec_dump(o, &n);
	enum MHD_Result r = http_reply(ex, status, "application/json", body, n, h1, v1, h2, v2, NULL);
	free(body);
	return r;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct ex *ex = cls;
	if (ex->out_off < ex->out_len) {
		size_t n = ex->out_len - ex->out_off;
		if (n > max)
			n = max;
		memcpy(buf, ex->out + ex->out_off, n);
		ex->out_off += n;
		if (ex->out_off == ex->out_len)
			ex->out_off = ex->out_len = 0;
		ex->bytes += n;
		return (ssize_t)n;
	}
	if (ex->ended || ex->gone || !ex->conn)
		return MHD_CONTENT_READER_END_OF_STREAM;
	/* Nothing to send yet: sleep until out_event and wake. */
	ex->suspended = true;
	MHD_suspend_connection(ex->conn);
	(void)pos;
	return 0;
}

static void stream_free(void *cls)
{
	http_ex_unref(cls);
}

enum MHD_Result http_reply_stream(struct ex *ex)
{
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, ex, stream_free);
	if (!r)
		return MHD_NO;
	ex->refs++;
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	add_common(ex, r);
	enum MHD_Result res = MHD_queue_response(ex->conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	ex->queued = true;
	ex->status = MHD_HTTP_OK;
	return res;
}

/* ---- requests ---------------------------------------------------------------- */

enum MHD_Result http_busy_reply(struct ex *ex)
{
	return http_fail(ex, MHD_HTTP_SERVICE_UNAVAILABLE, -32000, "the server is shutting down", "Retry-After", "5", NULL, NULL);
}

enum MHD_Result http_too_large(struct ex *ex)
{
	char msg[128];
	snprintf(msg, sizeof msg, "request body larger than [http] max_body (%llu bytes)",
		 (unsigned long long)ex->h->conf->http_max_body);
	return http_fail(ex, MHD_HTTP_CONTENT_TOO_LARGE, -32000, msg, NULL, NULL, NULL, NULL);
}

/* Headers are in: everything that needs no body is decided here. */
static enum MHD_Result begin(struct ex *ex)
{
	struct http *h = ex->h;
	const struct route *rt = ex->rt;
	if (!rt)
		return http_fail(ex, MHD_HTTP_NOT_FOUND, -32000, "not found: MCP is served on /mcp (and /sse, /messages)", NULL,
			    NULL, NULL, NULL);
	if (rt->door != DOOR_NONE) {
		enum MHD_Result r = http_door(ex);
		/* CORS preflight of an allowed browser origin: carries no token. */
		if (r != MHD_YES || ex->queued || (rt->door == DOOR_TOKEN && !strcmp(ex->method, "OPTIONS")))
			return r;
	}
	if (rt->door == DOOR_TOKEN && h->draining)
		return http_busy_reply(ex);
	if (rt->allow && !lists_method(rt->allow, ex->method))
		return http_fail(ex, MHD_HTTP_METHOD_NOT_ALLOWED, -32000, rt->only, "Allow", rt->allow, NULL, NULL);
	if (rt->id == R_PORT) {
		struct link *k = http_link_of(ex->conn);
		return http_port_begin(ex, k ? k->uri : NULL);
	}
	if (rt->door != DOOR_TOKEN)
		return MHD_YES; /* /healthz: answered with the request complete, so the connection is kept */
	return http_mcp_begin(ex);
}

static const char *dash_arg(void *arg, const char *key)
{
	struct ex *ex = arg;
	return MHD_lookup_connection_value(ex->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* A dashboard page: rendered whole, with the headers that keep it inert
 * (its policy forbids inline script and framing; no referrer leaves for
 * another site).  Not no-referrer: under it a browser sends "Origin: null"
 * with the sign-in form, which the Origin check rightly refuses. */
static enum MHD_Result dash_reply(struct ex *ex)
{
	struct dash_reply r;
	dash_serve(ex->h->dash, ex->method, ex->path, dash_arg, ex, http_header(ex, "Cookie"), http_header(ex, "Authorization"),
		   ex->body, ex->len, &r);
	if (ex->body)
		explicit_bzero(ex->body, ex->len); /* a sign-in's token */
	struct MHD_Response *resp = MHD_create_response_from_buffer(r.len, r.body, MHD_RESPMEM_MUST_COPY);
	if (!resp) {
		dash_reply_free(&r);
		return MHD_NO;
	}
	if (r.who > 0)
		ex->owner = r.who; /* signed in now */
	MHD_add_response_header(resp, "Content-Type", r.ctype);
	add_common(ex, resp);
	MHD_add_response_header(resp, "Content-Security-Policy", dash_csp);
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	MHD_add_response_header(resp, "Referrer-Policy", "same-origin");
	if (r.cookie)
		MHD_add_response_header(resp, "Set-Cookie", r.cookie);
	if (r.location)
		MHD_add_response_header(resp, "Location", r.location);
	if (r.allow)
		MHD_add_response_header(resp, "Allow", r.allow);
	if (r.retry[0])
		MHD_add_response_header(resp, "Retry-After", r.retry);
	if (r.status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"sbx-mcp\"");
	enum MHD_Result res = MHD_queue_response(ex->conn, r.status, resp);
	MHD_destroy_response(resp);
	ex->queued = true;
	ex->status = r.status;
	ex->bytes = r.len;
	dash_reply_free(&r);
	return res;
}

/* ---- routes: the body is in; each returns a response code, or MHD_YES
 * with nothing queued while the answer is awaited ----------------------- */

static enum MHD_Result health(struct ex *ex)
{
	static const char ok[] = "{\"status\":\"ok\"}\n";
	return http_reply(ex, MHD_HTTP_OK, "application/json", ok, sizeof ok - 1, NULL);
}

/* OPTIONS on an MCP path: the CORS preflight the front door let in. */
static enum MHD_Result preflight(struct ex *ex)
{
	return http_reply(ex, MHD_HTTP_NO_CONTENT, NULL, "", 0, "Access-Control-Allow-Methods", "GET, POST, DELETE",
			  "Access-Control-Allow-Headers",
			  "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID",
			  "Access-Control-Max-Age", "600", NULL);
}

/* What is served where.  begin checks a request against its route before
 * the body is read: the front door the route asks for (http_door), then
 * its methods. */
static const struct route routes[] = {
	{ "/mcp", R_MCP, DOOR_TOKEN, "GET, POST, DELETE",
	  "/mcp: POST messages, GET opens a session's stream of notifications, DELETE ends a session", http_mcp_route },
	{ "/sse", R_SSE, DOOR_TOKEN, "GET", "/sse: GET opens the event stream", http_mcp_sse },
	{ "/messages", R_MESSAGES, DOOR_TOKEN, "POST", "/messages: POST a JSON-RPC message", http_mcp_post },
	{ "/healthz", R_HEALTH, DOOR_NONE, "GET, HEAD", "/healthz: GET", health },
	/* a session's open port: the app there answers its own methods */
	{ "/sessions/", R_PORT, DOOR_PORT, NULL, NULL, http_port_handle },
	/* dash_route's paths; the dashboard answers its own methods */
	{ NULL, R_DASH, DOOR_PAGE, NULL, NULL, dash_reply },
};

/* The route of a path, or NULL (404); a dashboard path must fit in max. */
static const struct route *route_of(const char *path, size_t max)
{
	for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
		const struct route *rt = &routes[i];
		if (rt->id == R_PORT ? !strncmp(path, rt->path, strlen(rt->path))
		    : rt->path	     ? !strcmp(path, rt->path)
				     : dash_route(path) && strlen(path) < max)
			return rt;
	}
	return NULL;
}

/* The body is in: the route's handler, or the preflight. */
static enum MHD_Result handle(struct ex *ex)
{
	if (ex->rt->door == DOOR_TOKEN && !strcmp(ex->method, "OPTIONS"))
		return preflight(ex);
	return ex->rt->handle(ex);
}

/* Answer what can be answered now, or wait (suspended) for more. */
static enum MHD_Result respond(struct ex *ex)
{
	if (ex->queued)
		return MHD_YES;
	if (ex->px)
		return http_port_respond(ex);
	if (ex->stream)
		return http_reply_stream(ex);
	if (jv_is_valid(ex->answer)) {
		size_t n;
		jv a = ex->answer;
		ex->answer = jv_invalid();
		/* A message the server could not take at all has no id. */
		jv id = rec_get(a, "id");
		bool bad = rec_has(a, "error") && jv_get_kind(id) == JV_KIND_NULL;
		jv_free(id);
		char *body = rec_dump(a, &n);
		enum MHD_Result r = http_reply(ex, bad ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_OK, "application/json", body, n, NULL);
		free(body);
		return r;
	}
	if (ex->no_answer)
		return http_reply(ex, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
	if (ex->gone)
		return ex->h->draining ? http_busy_reply(ex)
				       : http_fail(ex, MHD_HTTP_NOT_FOUND, -32001, "the session ended before the answer", NULL,
					      NULL, NULL, NULL);
	ex->suspended = true;
	MHD_suspend_connection(ex->conn);
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *data, size_t *size, void **req_cls)
{
	struct http *h = cls;
	struct ex *ex = *req_cls;
	if (!ex) {
		ex = util_xalloc(sizeof *ex);
		*ex = (struct ex){ .h = h, .conn = conn, .refs = 1, .answer = jv_invalid(), .t0 = util_now_ms(), .next = h->exs };
		h->exs = ex;
		*req_cls = ex;
		snprintf(ex->method, sizeof ex->method, "%s", method);
		snprintf(ex->path, sizeof ex->path, "%s", url);
		ex->rt = route_of(url, sizeof ex->path);
		ex->route = ex->rt ? ex->rt->id : R_OTHER;
		struct link *k = http_link_of(conn);
		if (k)
			memcpy(ex->peer, k->peer, sizeof ex->peer);
		enum MHD_Result r = begin(ex);
		if (k && ex->owner > 0)
			k->trusted = true;
		return r;
	}
	if (ex->queued) {
		*size = 0; /* answered early (an error): the body is not read */
		return MHD_YES;
	}
	if (*size) {
		if (ex->len + *size > h->conf->http_max_body) {
			/* libmicrohttpd answers only once the body is read: the
			 * rest is read and dropped, up to a bound, then the
			 * connection is cut. */
			ex->dropped += *size;
			*size = 0;
			return ex->dropped > 16 * h->conf->http_max_body ? MHD_NO : MHD_YES;
		}
		ex->body = util_xrealloc(ex->body, ex->len + *size + 1);
		memcpy(ex->body + ex->len, data, *size);
		ex->len += *size;
		*size = 0;
		return MHD_YES;
	}
	if (ex->dropped)
		return http_too_large(ex);
	if (!ex->handled) {
		ex->handled = true;
		if (h->draining && ex->route != R_HEALTH)
			return http_busy_reply(ex);
		if (h->draining)
			return http_reply(ex, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json", "{\"status\":\"stopping\"}\n", 22, NULL);
		enum MHD_Result r = handle(ex);
		if (r != MHD_YES || ex->queued)
			return r;
	}
	(void)version;
	return respond(ex);
}

/* Before the request's head is read: its target as the client sent it,
 * kept on the connection for a session's port, whose path and query go
 * upstream as they came (libmicrohttpd hands the handler the path
 * decoded and the query parsed). */
static void *raw_target(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct link *k = http_link_of(conn);
	if (k) {
		free(k->uri);
		k->uri = !strncmp(uri, "/sessions/", 10) ? util_strdup(uri) : NULL;
	}
	(void)cls;
	return NULL;
}

/* The access log: one line per request, when it is over. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode toe)
{
	struct ex *ex = *req_cls;
	if (!ex)
		return;
	struct http *h = cls;
	*req_cls = NULL;
	if (ex->c)
		snprintf(ex->sid, sizeof ex->sid, "%.8s", ex->c->id);
	static const char *const why[] = { "", " (error)", " (timeout)", " (shutdown)", " (read error)", " (client gone)" };
	util_warn("%s \"%s %s\" %u %zu %.1fms token=%d session=%.8s rpc=%s%s", ex->peer[0] ? ex->peer : "-", ex->method,
		  ex->path, ex->status, ex->bytes, util_now_ms() - ex->t0, ex->owner, ex->sid[0] ? ex->sid : "-",
		  ex->rpc[0] ? ex->rpc : "-", (unsigned)toe < sizeof why / sizeof *why ? why[toe] : "");
	struct link *k = http_link_of(conn);
	if (k && ex->owner > 0)
		k->trusted = true; /* a dashboard sign-in, too */
	ex->conn = NULL;
	http_port_end(ex);
	for (struct pend *p = h->pends; p; p = p->next)
		if (p->ex == ex) {
			/* the answer, if it comes, is dropped, or kept for a
			 * resume when the stream had begun */
			p->streamed |= ex->stream;
			p->ex = NULL;
		}
	if (ex->c && ex->c->stream == ex) {
		/* A legacy client's stream closed: that is its end; a GET
		 * /mcp stream may come again. */
		ex->c->stream = NULL;
		if (ex->c->legacy)
			http_end_conv(ex->c);
	} else if (ex->c && ex->c->ephemeral)
		http_end_conv(ex->c);
	http_ex_unref(ex);
}

bool http_log_is_client_gone(const char *msg)
{
	/* "Failed to send the footers for the request for `/mcp'. Error: Broken
	 * pipe" and its kin: the send failed because the peer is gone. */
	static const char *const gone[] = { "Broken pipe", "Connection reset by peer", "forcibly closed by remote peer",
					    "closed by remote side" };
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
		if (strstr(msg, gone[i]))
			return true;
	return false;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	size_t n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = 0;
	if (!http_log_is_client_gone(msg))
		util_warn("http: %s", msg);
	(void)cls;
}

/* ---- the loop ------------------------------------------------------------ */

static void on_epoll(struct loop *l, int fd, short rev, void *arg)
{
	MHD_run(((struct http *)arg)->d);
	(void)l;
	(void)fd;
	(void)rev;
}

/* Each second: expire idle conversations; every KEEPALIVE_S, a comment on each
 * open event stream (a write is how a gone client is noticed). */
static void on_tick(struct loop *l, int fd, short rev, void *arg)
{
	struct http *h = arg;
	uint64_t n;
	if (read(fd, &n, sizeof n) < 0)
		return;
	double now = util_now_ms();
	http_mcp_tick(h, now);
	/* A suspended connection is not watched by libmicrohttpd: a client
	 * that hung up on an event stream is found here, and its stream (and
	 * for HTTP+SSE its session) ended; so is one that hung up on a port's
	 * answer, and one still waiting for it is woken to check its time. */
	for (struct ex *ex = h->exs; ex; ex = ex->next) {
		if (!ex->suspended || !(ex->stream || ex->px) || !ex->conn)
			continue;
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(ex->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct pollfd pf = { .fd = ci ? ci->connect_fd : -1, .events = POLLRDHUP };
		if (pf.fd >= 0 && poll(&pf, 1, 0) == 1 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			ex->gone = true;
			http_wake(ex);
		} else if (ex->px && !ex->queued)
			http_wake(ex); /* a port's answer not yet in: http_port_respond checks its time */
	}
	/* A stranger's connection past request_timeout, and
	 * strangers past the limits, once what has arrived is read (a head
	 * waiting in a socket is a token holder's, perhaps). */
	MHD_run(h->d);
	http_link_tick(h, now);
	if (++h->ticks % KEEPALIVE_S == 0)
		for (struct ex *ex = h->exs; ex; ex = ex->next)
			if (ex->stream && ex->queued && !ex->ended && ex->conn) {
				http_out_add(ex, ": keepalive\n\n", 13);
				http_wake(ex);
			}
	(void)l;
	(void)rev;
}

struct http *http_new(struct loop *l, struct mcp *m, const struct conf *c, const struct auth *a, const char *listen,
		      char *err, size_t errlen)
{
	int fd = http_listen(listen, err, errlen);
	if (fd < 0)
		return NULL;
	struct http *h = util_xalloc(sizeof *h);
	h->loop = l;
	h->mcp = m;
	h->conf = c;
	h->auth = a;
	h->epfd = h->timer = -1;
	h->who = util_xalloc((auth_count(a) + 1) * sizeof *h->who);
	h->dash = dash_new(c, a, m);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char addr[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof addr);
			port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
			snprintf(h->base, sizeof h->base, "http://%s:%u", addr, port);
		} else {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof addr);
			port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
			snprintf(h->base, sizeof h->base, "http://[%s]:%u", addr, port);
		}
	}
	unsigned timeout_s = (unsigned)((c->http_timeout_ms + 999) / 1000);
	h->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG, 0, NULL,
				NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_URI_LOG_CALLBACK, raw_target, h,
				MHD_OPTION_CONNECTION_LIMIT, http_link_limit(c),
				MHD_OPTION_CONNECTION_TIMEOUT, timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				MHD_OPTION_NOTIFY_CONNECTION, http_link_notify, h, MHD_OPTION_END);
	const union MHD_DaemonInfo *di = h->d ? MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (!di) {
		snprintf(err, errlen, "cannot start the HTTP server (libmicrohttpd) on %s", listen);
		if (h->d)
			MHD_stop_daemon(h->d);
		close(fd);
		dash_free(h->dash);
		free(h->who);
		free(h);
		return NULL;
	}
	h->epfd = di->epoll_fd;
	mcp_set_http(m, h->base, http_port_closed, h);
	loop_watch(l, h->epfd, POLLIN, on_epoll, h);
	h->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (h->timer >= 0) {
		struct itimerspec it = { .it_interval = { 1, 0 }, .it_value = { 1, 0 } };
		timerfd_settime(h->timer, 0, &it, NULL);
		loop_watch(l, h->timer, POLLIN, on_tick, h);
	}
	return h;
}

const char *http_base_url(const struct http *h)
{
	return h->base;
}

int http_timeout_ms(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG t;
	if (MHD_get_timeout(h->d, &t) != MHD_YES)
		return -1;
	return t > 60000 ? 60000 : (int)t;
}

void http_run(struct http *h)
{
	MHD_run(h->d);
}

void http_drain(struct http *h)
{
	if (h->draining)
		return;
	h->draining = true;
	MHD_socket fd = MHD_quiesce_daemon(h->d);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

unsigned http_busy(const struct http *h)
{
	return h->busy;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	h->draining = true;
	while (h->convs)
		http_end_conv(h->convs);
	for (struct ex *ex = h->exs; ex; ex = ex->next)
		if (ex->c && ex->c->ephemeral) {
			http_end_conv(ex->c);
			ex->c = NULL;
		}
	for (struct ex *ex = h->exs; ex; ex = ex->next) {
		ex->gone = true;
		http_wake(ex);
	}
	/* Let the last answers (503, ended streams) go out, briefly. */
	double until = util_now_ms() + 1000;
	for (;;) {
		MHD_run(h->d);
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!di || di->num_connections == 0 || util_now_ms() > until)
			break;
		struct pollfd p = { .fd = h->epfd, .events = POLLIN };
		poll(&p, 1, 20);
	}
	for (struct ex *ex = h->exs; ex; ex = ex->next)
		http_wake(ex);
	http_port_close_all(h);
	mcp_set_http(h->mcp, "", NULL, NULL);
	loop_unwatch(h->loop, h->epfd);
	if (h->timer >= 0) {
		loop_unwatch(h->loop, h->timer);
		close(h->timer);
	}
	MHD_stop_daemon(h->d);
	while (h->pends)
		http_pend_done(h, h->pends);
	dash_free(h->dash);
	free(h->who);
	free(h);
}
