/* live: a job's output as it arrives, as events for a caller that shows it
 * (sbx-run --live, which sbx-mcp turns into progress notifications).
 *
 * Output is coalesced per job and stream and let out at most every
 * LIVE_MS, in events of at most LIVE_EVENT bytes that end on whole UTF-8
 * characters (invalid bytes become U+FFFD), and at most LIVE_MAX bytes of
 * a job in all; past that one event says the rest is in the result.
 * Events are {"id", "event": "output", "stream": "stdout"|"stderr",
 * "data"} and {"id", "event": "output", "truncated": true}; they are
 * made by live_add (a full buffer), by the timer, and by live_end (what is
 * left, before the job's result), and handed to the caller's emit, which
 * consumes them.  A struct live is the caller's; it owns its jobs' buffers.
 *
 * A background job (live_unbounded: a session's process, which may run
 * for hours) has no LIVE_MAX: all of its output goes out, at most
 * LIVE_BG_BURST bytes per stream each LIVE_MS.  Past that the oldest bytes
 * not yet out are dropped, never the newest, and the next event of that
 * stream says how many with "skipped": the caller keeps a process's
 * latest output right, however fast it writes, at a bounded cost.
 */
#ifndef SBX_LIVE_H
#define SBX_LIVE_H

#include <stddef.h>

#include <jv.h>

#include "loop.h"

#define LIVE_MS 100
#define LIVE_EVENT 4096
#define LIVE_MAX (64u << 10)
#define LIVE_BG_BURST (64u << 10)

struct live;
typedef void (*live_emit_fn)(jv event, void *arg);

struct live *live_new(struct loop *l, live_emit_fn emit, void *arg);
void live_free(struct live *lv);
/* Job id is a background job: unbounded, at a bounded rate. */
void live_unbounded(struct live *lv, const char *id);
/* Output of job id (stream 1 stdout, 2 stderr). */
void live_add(struct live *lv, const char *id, int stream, const char *data, size_t len);
/* Job id is done: what it has pending goes out now; it is forgotten. */
void live_end(struct live *lv, const char *id);

#endif
