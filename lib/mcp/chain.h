/* chain: the record tools as long-lived co-processes, for sbx-mcp.
 *
 * One chain is `sbx-validate | sbx-run -j N | sbx-cap | sbx-log`, started
 * from the binaries next to the caller, with sbx-run's --events and
 * --control pipes and its --connect socket held by the caller.  Requests go in one JSON line each;
 * results come out of sbx-log in completion order and are matched to their
 * request by "id", which the caller makes unique.  Keeping the processes
 * alive keeps sbx-run's sandboxes made ahead of time warm between calls;
 * the caller never builds a sandbox itself.
 *
 * The caller keeps at most N requests in a chain (sbx-run stops reading
 * beyond that).  If a process of the chain dies, every request in it gets
 * an internal_error result and the next submit starts a new chain.  The
 * processes share a process group, die with the caller (PDEATHSIG), and
 * are killed and reaped by chain_free.
 *
 * Ownership: chain_submit consumes the request; the result passed to the
 * done callback belongs to the callee.
 */
#ifndef SBX_CHAIN_H
#define SBX_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "loop.h"

struct chain;
typedef void (*chain_done_fn)(jv result, void *arg);
/* What sbx-run says of the request while it runs: a stage started
 * ("compile", "run"), or its output ("output", sbx-run --live); ev is the
 * whole event (borrowed). */
typedef void (*chain_event_fn)(const char *event, jv ev, void *arg);

/* bindir: where the sbx-* binaries are; conf_path: passed as -c (may be
 * NULL); jobs: sbx-run -j. */
struct chain *chain_new(struct loop *l, const char *bindir, const char *conf_path, unsigned jobs);
/* Send a request (an object with a unique string "id").  done is called
 * exactly once, from the loop (never from inside chain_submit). */
void chain_submit(struct chain *ch, jv request, chain_done_fn done, chain_event_fn event, void *arg);
/* Kill the sandbox of the request with this id; its result still comes
 * (an internal_error "cancelled"). */
void chain_cancel(struct chain *ch, const char *id);
/* A session ended: sbx-run kills its kernels (run_cell) and background
 * jobs (its processes). */
void chain_end_session(struct chain *ch, const char *sid);
/* {"restore_session": SID}: its kernels and background jobs are killed,
 * its workspace having been replaced by a checkpoint; it lives on. */
void chain_restore_session(struct chain *ch, const char *sid);
/* A control line for the request with this id (msg consumed, an object
 * naming it: a background job's {"input"}, {"signal"} or {"resize"},
 * sbx-run's --control); false with errno ENOENT if no such request is in
 * the chain, EAGAIN if CHAIN_CONTROL_QUEUED bytes of lines wait for
 * sbx-run already (none is kept: the caller may try again).  What sbx-run
 * refuses comes back as an event of the request (chain_event_fn:
 * "input", "signal", "resize", with "error"). */
#define CHAIN_CONTROL_QUEUED (4u << 20)
bool chain_control(struct chain *ch, const char *id, jv msg);
/* A TCP connection to 127.0.0.1:port in session sid's loopback (sbx-run's
 * --connect): done gets the connected socket (the callee's) or -1 and why,
 * once, from the loop.  0 with err when it cannot be asked now (no
 * pipeline runs: nothing runs in any session); else a tag for
 * chain_connect_cancel, after which done is not called (a socket that
 * comes is closed). */
typedef void (*chain_conn_fn)(int fd, const char *why, void *arg);
uint64_t chain_connect(struct chain *ch, const char *sid, unsigned port, chain_conn_fn done, void *arg, char *err,
		       size_t errlen);
void chain_connect_cancel(struct chain *ch, uint64_t tag);
unsigned chain_in_flight(const struct chain *ch);
/* Close the chain's input, let it finish for at most grace_ms, then kill
 * what is left and reap it.  Pending requests get no callback. */
void chain_free(struct chain *ch, int grace_ms);

#endif
