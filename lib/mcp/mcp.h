/* mcp: the Model Context Protocol server, independent of its transport.
 *
 * A transport (stdio in sbx-mcp.c, HTTP in lib/http) makes a client per
 * conversation, hands in one JSON-RPC message at a time with a tag of its
 * own, and delivers what the server passes to the client's send callback
 * (responses and notifications, one JSON object each, with the tag of the
 * request they belong to: HTTP answers each POST on its own stream).
 * Everything runs on the caller's event loop: tool calls that take time
 * (sandbox runs, history queries, backend checks) are started and answered
 * later, so ping, tools/list and short runs are never held up by a slow
 * one.  Clients share the sandbox slots, oldest call first.
 *
 * Dual-era: clients of the 2024-11-05 … 2025-11-25 revisions start with
 * initialize (the answer carries their version if supported, else the
 * newest); clients of 2026-07-28 send no handshake but name the revision in
 * each request's _meta and get "resultType" in each result, and discover
 * the server with server/discover.
 *
 * The server never builds a sandbox: runs go through a chain of the record
 * tools (lib/chain), at most max_concurrent at once, the rest queued.
 */
#ifndef SBX_MCP_H
#define SBX_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "conf.h"
#include "loop.h"

struct mcp;            /* the server: tools, the chain and its slots, sessions */
struct mcp_client;     /* one client's conversation: its handshake, its calls */
struct auth;           /* HTTP's tokens (auth.h) */

/* Send one message (consumed) to the client.  tag: the one given with the
 * request it belongs to (progress notifications and the answer); msg is
 * jv_invalid() when that request ends without an answer (cancelled). */
typedef void (*mcp_send_fn)(jv msg, uint64_t tag, void *arg);

/* bindir: where sbx-validate … sbx-log live; conf_path: the -c given to
 * them (NULL: their own lookup, which finds the same file). */
struct mcp *mcp_new(struct loop *l, const struct conf *c, const char *conf_path, const char *bindir);
/* A client.  owner: whose sandbox sessions it sees (clients of one owner
 * share them; stdio has one client, owner 0).  principal: for an HTTP
 * token, what its runs carry into the history (auth_principal), whose
 * get_execution_history sees those runs only; NULL: the whole history
 * (stdio, where the caller is whoever may run the server). */
struct mcp_client *mcp_client_new(struct mcp *m, unsigned owner, const char *principal, mcp_send_fn send, void *arg);
/* Hold the client's calls to the network its owner's token may reach, if
 * the token file gives it a list of its own (auth.h): a borrowed auth
 * that outlives the client.  Without it (stdio) a call gets what the
 * configuration allows. */
void mcp_client_auth(struct mcp_client *cl, const struct auth *a);
/* Whether a request of the server's can reach cl on the stream of the
 * call tagged tag (elicitation, mcp_ask.c); without it, always (stdio). */
void mcp_client_streams(struct mcp_client *cl, bool (*fn)(void *arg, uint64_t tag));
/* One message from the client (not necessarily valid JSON).  True if it
 * gets an answer tagged `tag` (perhaps already sent), false for
 * notifications and responses. */
bool mcp_handle_line(struct mcp_client *cl, const char *line, size_t len, uint64_t tag);
/* The same for a message already checked with rec_check_line and parsed
 * (a JSON object; consumed). */
bool mcp_handle(struct mcp_client *cl, jv msg, uint64_t tag);
/* A line the transport could not even read as one (too long, not JSON):
 * answer with the JSON-RPC error.  why: rec's message for it. */
void mcp_reject_line(struct mcp_client *cl, const char *why, uint64_t tag);
/* Requests still being worked on, or waiting for the host probe: the
 * client's, everyone's. */
unsigned mcp_client_pending(const struct mcp_client *cl);
unsigned mcp_pending(const struct mcp *m);
/* Cancel the client's calls (no answers, not even "ended") and free it. */
void mcp_client_free(struct mcp_client *cl);
/* The server's sandbox sessions, live (sess.h's sess_live), for the
 * dashboard: owner's, or every owner's with all. */
jv mcp_live_sessions(struct mcp *m, unsigned owner, bool all);
/* The HTTP listener (http.c, at its start; "" and NULL at its end): its
 * address ("http://127.0.0.1:8080"), for the URLs of the ports it serves,
 * and who to tell when one of those closes (port_close, its session's
 * end), to end the connections in flight to it. */
typedef void (*mcp_port_closed_fn)(void *arg, const char *sid, unsigned port);
void mcp_set_http(struct mcp *m, const char *base, mcp_port_closed_fn closed, void *arg);
/* A connection to port of session sid, opened over HTTP by owner
 * (port_open): done gets the socket connected in the session's loopback,
 * or -1 and why, once, from the loop.  0 with err when it cannot be asked:
 * *exposed false when no such port is open to owner (another owner's
 * port answers the same), true when nothing runs to connect to.  Else a
 * tag for mcp_port_cancel, after which done is not called. */
typedef void (*mcp_port_fn)(int fd, const char *why, void *arg);
uint64_t mcp_port_connect(struct mcp *m, unsigned owner, const char *sid, unsigned port, mcp_port_fn done, void *arg,
			  bool *exposed, char *err, size_t errlen);
void mcp_port_cancel(struct mcp *m, uint64_t tag);
/* Is v a protocol revision we speak?  *modern: the handshake-less one. */
bool mcp_version_known(const char *v, bool *modern);
/* The i-th method the server answers (its table's row), whether it is a
 * notification's and 2026-07-28's only; NULL past the last.  For the docs'
 * test (t/06-tables.bats). */
const char *mcp_method_name(size_t i, bool *notification, bool *modern_only);
/* Free every client, cancel everything in flight, stop the chain, free. */
void mcp_free(struct mcp *m);

#endif
