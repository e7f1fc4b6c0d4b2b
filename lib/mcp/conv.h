/* conv: an MCP conversation over HTTP — what an Mcp-Session-Id names
 * (Streamable HTTP), or the sessionId GET /sse hands out (the 2024-11-05
 * HTTP+SSE transport).  The protocol calls it a session; it is not a
 * sandbox session (sess.h), which a conversation's calls may make and
 * which outlives it.
 *
 * A conversation has an id of 256 random bits, the principal (token) that
 * made it, its MCP client (mcp.h), and a ring of the last events of its
 * streams (its GET stream's, tag 0, and its POST streams', each its
 * request's tag), so that a client that reconnects with Last-Event-ID gets
 * what it missed.  Event ids count from 1 across the conversation.  The
 * ring holds CONV_RING_EVENTS events within CONV_RING_BYTES, oldest out
 * first; an event bigger than CONV_EVENT_MAX is sent, not kept (not
 * resumable).
 *
 * Ownership: a conversation owns its client and its ring.  The transport
 * (http.c) owns the list the conversations are on (`next`), the streams
 * they send on (`stream`) and the requests waiting on them, and ends those
 * before conv_free; `h` and `stream` are its own, never looked into here.
 */
#ifndef SBX_CONV_H
#define SBX_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "auth.h"
#include "mcp.h"

#define CONV_RING_EVENTS 128
#define CONV_RING_BYTES (4u << 20)        /* a conversation's ring, in all */
#define CONV_EVENT_MAX (256u << 10)       /* a bigger event is sent, not kept: not resumable */

struct http; /* the HTTP transport (http.h) */
struct ex;   /* an HTTP request (http.c's) */

struct conv {
	struct http *h;        /* the transport's, set by it */
	char id[65];           /* 64 hex digits */
	int owner;             /* the token (principal) that made it */
	bool legacy;           /* 2024-11-05 HTTP+SSE */
	bool ephemeral;        /* one sessionless request (2026-07-28) */
	struct mcp_client *cl;
	double last_used;
	struct ex *stream;     /* legacy: its GET /sse; Streamable HTTP: its GET /mcp, or NULL */
	uint64_t event_id;     /* the last event's */
	struct { uint64_t id, tag; char *text; size_t len; } ring[CONV_RING_EVENTS];
	size_t ring_bytes;
	struct conv *next;     /* the transport's list */
};

/* A conversation of owner's with a new id and a client of m's whose
 * messages go to send (its arg: the conversation). */
struct conv *conv_new(struct mcp *m, const struct auth *a, int owner, bool legacy, bool ephemeral, mcp_send_fn send);
/* The conversation of list with this id, owner and transport, or NULL. */
struct conv *conv_find(struct conv *list, const char *id, int owner, bool legacy);
/* Free its client (its calls cancelled, no answers), its ring and it. */
void conv_free(struct conv *c);

/* The next event of one of its streams: msg (consumed) as an event
 * stream's text with the next id, or, for jv_invalid(), an event of only
 * an id (a stream's first: where it is).  *text is the caller's, to send
 * and then hand to conv_keep.  Returns the id. */
uint64_t conv_event(struct conv *c, jv msg, char **text, size_t *len);
/* Keep event id of stream tag (text, taken) in the ring for a reconnect. */
void conv_keep(struct conv *c, uint64_t id, uint64_t tag, char *text, size_t len);
/* The ring's events of stream tag after id `from`, oldest first. */
typedef void (*conv_emit_fn)(void *arg, const char *text, size_t len);
void conv_replay(const struct conv *c, uint64_t tag, uint64_t from, conv_emit_fn emit, void *arg);
/* The stream event id belongs to, if the ring still holds it: its tag,
 * or 0 (the GET stream's, or not held). */
uint64_t conv_event_tag(const struct conv *c, uint64_t id);

#endif
