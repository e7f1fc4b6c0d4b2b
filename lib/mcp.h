/* mcp: the Model Context Protocol server, independent of its transport.
 *
 * A transport (stdio in sbx-mcp.c; HTTP later) hands in one JSON-RPC
 * message at a time with mcp_handle and sends whatever the server passes
 * to its send callback (responses and notifications, one JSON object
 * each).  Everything runs on the caller's event loop: tool calls that
 * take time (sandbox runs, history queries, backend checks) are started
 * and answered later, so ping, tools/list and short runs are never held
 * up by a slow one.
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

#include <jv.h>

#include "conf.h"
#include "loop.h"

struct mcp;
/* Send one message (consumed) to the client. */
typedef void (*mcp_send_fn)(jv msg, void *arg);

/* bindir: where sbx-validate … sbx-log live; conf_path: the -c given to
 * them (NULL: their own lookup, which finds the same file). */
struct mcp *mcp_new(struct loop *l, const struct conf *c, const char *conf_path, const char *bindir, mcp_send_fn send,
		    void *arg);
/* One line from the client (not necessarily valid JSON). */
void mcp_handle_line(struct mcp *m, const char *line, size_t len);
/* A line the transport could not even read as one (too long, not JSON):
 * answer with the JSON-RPC error.  why: rec's message for it. */
void mcp_reject_line(struct mcp *m, const char *why);
/* Requests still being worked on. */
unsigned mcp_pending(const struct mcp *m);
/* Cancel everything in flight (no answers), stop the chain, free. */
void mcp_free(struct mcp *m);

#endif
