#define _GNU_SOURCE
#include "http_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rec.h"
#include "util.h"

#define STREAM_BUF_MAX (8u << 20)    /* unread on a stream: past it the stream ends (resume it) */

/* ---- headers ----------------------------------------------------------- */

static bool lists_type(const char *list, const char *tok)
{
	/* Does an Accept-style list name this media type (case-insensitive)? */
	size_t n = strlen(tok);
	for (const char *p = list; p && *p; p++)
		if (!strncasecmp(p, tok, n))
			return true;
	return false;
}

/* ---- streams and waiting requests ---------------------------------------- */

/* One event of an event stream: a JSON message on one data line. */
static void out_event(struct ex *ex, const char *event, jv msg)
{
	size_t n;
	char *line = rec_dump(msg, &n); /* consumes msg; compact, one newline */
	char head[64];
	int hn = snprintf(head, sizeof head, "event: %s\ndata: ", event);
	http_out_add(ex, head, (size_t)hn);
	http_out_add(ex, line, n);
	http_out_add(ex, "\n", 1);
	free(line);
	ex->stream = true;
}

static struct pend *pend_find(struct http *h, uint64_t tag)
{
	for (struct pend *p = h->pends; p; p = p->next)
		if (p->tag == tag)
			return p;
	return NULL;
}

void http_pend_done(struct http *h, struct pend *p)
{
	for (struct pend **q = &h->pends; *q; q = &(*q)->next)
		if (*q == p) {
			*q = p->next;
			break;
		}
	h->who[p->c->owner].inflight--;
	h->busy--;
	free(p);
}

/* ---- conversations ------------------------------------------------------ */

static void on_message(jv msg, uint64_t tag, void *arg);

/* Can a request of the server's (an elicitation) reach the client on the
 * stream of the call tagged tag, and its answer come back to the same
 * conversation?  A legacy conversation's event stream, while open; a
 * Streamable HTTP call whose POST reads an event stream; never a
 * conversation made for one request. */
static bool streams(void *arg, uint64_t tag)
{
	struct conv *c = arg;
	if (c->ephemeral)
		return false;
	if (c->legacy)
		return c->stream && !c->stream->ended;
	struct pend *p = pend_find(c->h, tag);
	return p && p->ex && (p->ex->accept_sse || p->ex->stream);
}

static struct conv *new_conv(struct http *h, int owner, bool legacy, bool ephemeral)
{
	struct conv *c = conv_new(h->mcp, h->auth, owner, legacy, ephemeral, on_message);
	c->h = h;
	mcp_client_streams(c->cl, streams);
	if (!ephemeral) {
		c->next = h->convs;
		h->convs = c;
		h->who[owner].convs++;
	}
	return c;
}

/* End a conversation: its calls are cancelled; requests still waiting on
 * it are answered "gone", its event stream ended. */
void http_end_conv(struct conv *c)
{
	struct http *h = c->h;
	if (!c->ephemeral) {
		for (struct conv **p = &h->convs; *p; p = &(*p)->next)
			if (*p == c) {
				*p = c->next;
				break;
			}
		h->who[c->owner].convs--;
	}
	for (struct pend *p = h->pends, *next; p; p = next) {
		next = p->next;
		if (p->c != c)
			continue;
		if (p->ex) {
			p->ex->gone = true;
			http_wake(p->ex);
		}
		http_pend_done(h, p);
	}
	for (struct ex *ex = h->exs; ex; ex = ex->next) {
		if (ex->c == c) {
			snprintf(ex->sid, sizeof ex->sid, "%.8s", c->id);
			ex->c = NULL;
		}
		if (ex->made == c)
			ex->made = NULL;
	}
	if (c->stream) {
		c->stream->ended = true;
		http_wake(c->stream);
	}
	conv_free(c);
}

/* An event of one of the conversation's streams (tag: the request's, 0
 * the GET stream), with the next event id, kept in the ring for a
 * reconnect, and sent on ex if there is one. */
static void stream_event(struct conv *c, struct ex *ex, uint64_t tag, jv msg)
{
	char *text;
	size_t len;
	uint64_t id = conv_event(c, msg, &text, &len);
	if (ex && ex->out_len + len > STREAM_BUF_MAX) {
		/* A client that does not read: the stream ends; what it
		 * missed is in the ring for its resume. */
		ex->ended = true;
		http_wake(ex);
		ex = NULL;
	}
	if (ex) {
		http_out_add(ex, text, len);
		ex->stream = true;
	}
	conv_keep(c, id, tag, text, len);
}

static void emit(void *arg, const char *text, size_t len)
{
	http_out_add(arg, text, len);
}

/* GET /mcp: the conversation's stream of what the server says unasked
 * (one at a time).  With Last-Event-ID, the events after it that the ring
 * still holds come first; a first event (an id, no data) tells the client
 * where it is, so that it can resume from there. */
static enum MHD_Result open_stream(struct ex *ex)
{
	struct conv *c = ex->c;
	struct http *h = c->h;
	const char *last = http_header(ex, "Last-Event-ID");
	int64_t from = -1;
	if (last && !util_parse_i64(last, 0, INT64_MAX, &from))
		from = -1;
	/* An event of a POST stream: that stream resumed, to its answer. */
	uint64_t tag = from > 0 ? conv_event_tag(c, (uint64_t)from) : 0;
	if (tag) {
		conv_replay(c, tag, (uint64_t)from, emit, ex);
		struct pend *p = pend_find(h, tag);
		if (p) {
			/* What comes next, the answer too, comes here; the old
			 * connection (the client gave it up, and its hang-up may
			 * not be seen yet) ends. */
			if (p->ex && p->ex != ex) {
				p->ex->ended = true;
				http_wake(p->ex);
			}
			p->ex = ex;
		} else
			ex->ended = true; /* the answer was in the ring */
		ex->stream = true;
		return http_reply_stream(ex);
	}
	if (c->stream && c->stream->conn && !c->stream->ended && !c->stream->gone)
		return http_fail(ex, MHD_HTTP_CONFLICT, -32000, "this session's GET stream is open already (one at a time)", NULL,
			    NULL, NULL, NULL);
	c->stream = ex;
	ex->stream = true;
	if (from >= 0)
		conv_replay(c, 0, (uint64_t)from, emit, ex);
	stream_event(c, ex, 0, jv_invalid()); /* its first event: an id of the GET stream's own */
	return http_reply_stream(ex);
}

/* What the MCP server says, routed by the request's tag: a POST's own
 * response (Streamable HTTP) or the conversation's event stream (legacy). */
static void on_message(jv msg, uint64_t tag, void *arg)
{
	struct conv *c = arg;
	struct http *h = c->h;
	struct pend *p = pend_find(h, tag);
	bool final = !jv_is_valid(msg) || (rec_has(msg, "id") && (rec_has(msg, "result") || rec_has(msg, "error")));
	if (c->legacy) {
		if (jv_is_valid(msg) && c->stream && !c->stream->ended) {
			out_event(c->stream, "message", msg);
			http_wake(c->stream);
		} else
			jv_free(msg);
	} else if (!p && !final && jv_is_valid(msg)) {
		/* Unasked (a subscribed resource changed by another client's
		 * call): the GET stream's, kept for its reconnect. */
		bool open = c->stream && !c->stream->ended && c->stream->conn;
		stream_event(c, open ? c->stream : NULL, 0, msg);
		if (open)
			http_wake(c->stream);
	} else if (p && p->ex) {
		struct ex *ex = p->ex;
		if (!jv_is_valid(msg))
			ex->no_answer = true;
		else if (!final) {
			/* Progress: only worth a stream if the client reads one. */
			if (ex->accept_sse || ex->stream)
				stream_event(c, ex, tag, msg);
			else
				jv_free(msg);
		} else if (ex->stream) {
			stream_event(c, ex, tag, msg);
			ex->ended = true;
		} else {
			jv_free(ex->answer);
			ex->answer = msg;
		}
		http_wake(ex);
	} else if (p && p->streamed && jv_is_valid(msg))
		stream_event(c, NULL, tag, msg); /* its stream closed: kept for a resume */
	else
		jv_free(msg);
	if (final && p)
		http_pend_done(h, p);
}

/* ---- requests ------------------------------------------------------------ */

static enum MHD_Result too_many_convs(struct ex *ex)
{
	char m[160];
	snprintf(m, sizeof m, "too many sessions for this token ([http] max_sessions %llu): DELETE one, or let one expire",
		 (unsigned long long)ex->h->conf->http_max_sessions);
	return http_fail(ex, MHD_HTTP_TOO_MANY_REQUESTS, -32000, m, "Retry-After", "60", NULL, NULL);
}

/* GET /sse: a 2024-11-05 conversation, its event stream, which first
 * names the endpoint to post to. */
enum MHD_Result http_mcp_sse(struct ex *ex)
{
	struct http *h = ex->h;
	if (h->who[ex->owner].convs >= h->conf->http_max_sessions)
		return too_many_convs(ex);
	struct conv *cv = new_conv(h, ex->owner, true, false);
	cv->stream = ex;
	ex->c = cv;
	char ev[160];
	int n = snprintf(ev, sizeof ev, "event: endpoint\ndata: /messages?sessionId=%s\n\n", cv->id);
	http_out_add(ex, ev, (size_t)n);
	ex->stream = true;
	return http_reply_stream(ex);
}

/* POST /mcp or /messages: one JSON-RPC message. */
enum MHD_Result http_mcp_post(struct ex *ex)
{
	struct http *h = ex->h;
	const struct conf *c = h->conf;
	jv inv;
	enum rec_status st = ex->len ? rec_check_line(ex->body, ex->len, 0, &inv) : REC_INVALID;
	if (st != REC_OK) {
		char msg[512];
		const char *why = st == REC_INVALID && ex->len ? rec_str(inv, "error", NULL) : "empty body";
		if (why && !strncmp(why, "line ", 5) && strstr(why, ": "))
			why = strstr(why, ": ") + 2; /* a body is not a line of a stream */
		bool obj = why && strstr(why, "expected a JSON object");
		/* Worded as over stdio (mcp_reject_line). */
		snprintf(msg, sizeof msg, "%s: %s",
			 obj ? "invalid request: a message is one JSON-RPC object (batches are not supported)" : "parse error",
			 why ? why : "not JSON");
		if (st == REC_INVALID && ex->len)
			jv_free(inv);
		return http_fail(ex, MHD_HTTP_BAD_REQUEST, obj ? -32600 : -32700, msg, NULL, NULL, NULL, NULL);
	}
	jv msg = jv_parse_sized(ex->body, (int)ex->len);
	const char *method = rec_str(msg, "method", NULL);
	bool request = method && rec_has(msg, "id");
	snprintf(ex->rpc, sizeof ex->rpc, "%s", method ? method : "(response)");
	bool init = request && !strcmp(method, "initialize");

	if (ex->route == R_MCP && (init || !ex->c)) {
		const char *pv = http_header(ex, "MCP-Protocol-Version");
		bool modern = false;
		if (pv)
			mcp_version_known(pv, &modern);
		if (init) {
			if (h->who[ex->owner].convs >= c->http_max_sessions) {
				jv_free(msg);
				return too_many_convs(ex);
			}
			ex->c = ex->made = new_conv(h, ex->owner, false, false);
		} else if (modern) {
			ex->c = ex->made = new_conv(h, ex->owner, false, true);
		} else {
			jv_free(msg);
			return http_fail(ex, MHD_HTTP_BAD_REQUEST, -32000,
				    "Mcp-Session-Id header required (initialize first, or send MCP-Protocol-Version: 2026-07-28)",
				    NULL, NULL, NULL, NULL);
		}
	}
	if (request && h->who[ex->owner].inflight >= c->http_max_inflight) {
		jv_free(msg);
		if (ex->made) {
			http_end_conv(ex->made);
			ex->c = NULL;
		}
		return http_fail(ex, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
			    "too many requests in flight for this token ([http] max_inflight)", "Retry-After", "1", NULL, NULL);
	}
	ex->tag = ++h->seq;
	struct pend *p = util_xalloc(sizeof *p);
	*p = (struct pend){ .tag = ex->tag, .c = ex->c, .ex = ex->route == R_MCP ? ex : NULL, .next = h->pends };
	h->pends = p;
	h->who[ex->owner].inflight++;
	h->busy++;
	struct conv *cv = ex->c;
	cv->last_used = util_now_ms();
	/* The body was checked and parsed once, here. */
	if (!mcp_handle(cv->cl, msg, ex->tag)) {
		/* A notification or a response: nothing comes back. */
		if ((p = pend_find(h, ex->tag)))
			http_pend_done(h, p);
		ex->no_answer = true;
	}
	if (ex->route == R_MESSAGES)
		return http_reply(ex, MHD_HTTP_ACCEPTED, "text/plain", "Accepted\n", 9, NULL);
	if (init && jv_is_valid(ex->answer) && rec_has(ex->answer, "error")) {
		http_end_conv(ex->made); /* no session for a failed handshake */
		ex->c = NULL;
	}
	return MHD_YES;
}

/* /mcp, Streamable HTTP: POST a message, GET the conversation's stream,
 * DELETE the conversation. */
enum MHD_Result http_mcp_route(struct ex *ex)
{
	if (!strcmp(ex->method, "DELETE")) {
		http_end_conv(ex->c);
		ex->c = NULL;
		return http_reply(ex, MHD_HTTP_NO_CONTENT, NULL, "", 0, NULL);
	}
	if (!strcmp(ex->method, "GET"))
		return open_stream(ex);
	return http_mcp_post(ex);
}

/* An MCP request's headers: its Accept, protocol version, body's type
 * and size, and the conversation it names. */
enum MHD_Result http_mcp_begin(struct ex *ex)
{
	struct http *h = ex->h;
	bool post = !strcmp(ex->method, "POST"), get = !strcmp(ex->method, "GET");
	if (ex->route == R_MCP && get && !lists_type(http_header(ex, "Accept") ? http_header(ex, "Accept") : "", "text/event-stream"))
		return http_fail(ex, MHD_HTTP_NOT_ACCEPTABLE, -32000, "GET /mcp is an event stream: Accept: text/event-stream",
			    NULL, NULL, NULL, NULL);
	const char *pv = http_header(ex, "MCP-Protocol-Version");
	bool modern;
	if (pv && !mcp_version_known(pv, &modern)) {
		char msg[160];
		snprintf(msg, sizeof msg, "unsupported MCP-Protocol-Version \"%.40s\"", pv);
		return http_fail(ex, MHD_HTTP_BAD_REQUEST, -32000, msg, NULL, NULL, NULL, NULL);
	}
	if (post) {
		const char *ct = http_header(ex, "Content-Type");
		if (!ct || strncasecmp(ct, "application/json", 16))
			return http_fail(ex, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, -32000, "Content-Type must be application/json", NULL,
				    NULL, NULL, NULL);
		const char *accept = http_header(ex, "Accept");
		ex->accept_sse = accept && lists_type(accept, "text/event-stream");
		if (ex->route == R_MCP && accept && !lists_type(accept, "application/json") && !ex->accept_sse &&
		    !lists_type(accept, "*/*") && !lists_type(accept, "application/*"))
			return http_fail(ex, MHD_HTTP_NOT_ACCEPTABLE, -32000,
				    "Accept must include application/json or text/event-stream", NULL, NULL, NULL, NULL);
		const char *cl = http_header(ex, "Content-Length");
		char *end;
		errno = 0;
		unsigned long long n = cl ? strtoull(cl, &end, 10) : 0;
		if (cl && (errno || *end || n > h->conf->http_max_body))
			return http_too_large(ex);
	}
	/* The conversation, where one is named. */
	if (ex->route == R_MCP) {
		const char *sid = http_header(ex, "Mcp-Session-Id");
		if (sid) {
			ex->c = conv_find(h->convs, sid, ex->owner, false);
			if (!ex->c)
				return http_fail(ex, MHD_HTTP_NOT_FOUND, -32001,
					    "session not found: it expired, was deleted, or is not this token's; initialize again",
					    NULL, NULL, NULL, NULL);
			ex->c->last_used = util_now_ms();
		} else if (!post)
			return http_fail(ex, MHD_HTTP_BAD_REQUEST, -32000, "GET and DELETE need the Mcp-Session-Id header", NULL,
				    NULL, NULL, NULL);
	} else if (ex->route == R_MESSAGES) {
		const char *sid = MHD_lookup_connection_value(ex->conn, MHD_GET_ARGUMENT_KIND, "sessionId");
		ex->c = conv_find(h->convs, sid, ex->owner, true);
		if (!ex->c)
			return http_fail(ex, MHD_HTTP_NOT_FOUND, -32001,
				    "session not found: open GET /sse and post to the endpoint it names", NULL, NULL, NULL,
				    NULL);
	}
	return MHD_YES;
}

void http_mcp_tick(struct http *h, double now)
{
	for (struct conv *c = h->convs, *next; c; c = next) {
		next = c->next;
		if (c->legacy || mcp_client_pending(c->cl))
			continue;
		bool waiting = c->stream != NULL; /* a client listening uses its conversation */
		for (struct pend *p = h->pends; p; p = p->next)
			waiting |= p->c == c;
		if (!waiting && now - c->last_used > (double)h->conf->http_session_ttl_ms) {
			util_warn("session %.8s expired after %.0f s idle", c->id, (double)h->conf->http_session_ttl_ms / 1000);
			http_end_conv(c);
		}
	}
}
