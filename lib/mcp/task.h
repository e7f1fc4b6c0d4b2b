/* task: MCP tasks (2025-11-25, experimental): a tools/call whose answer
 * is kept for its caller to poll (tasks/get), wait for (tasks/result),
 * list or cancel, instead of being the call's response.
 *
 * A task belongs to an owner (the HTTP token, as sessions do; stdio is
 * owner 0): only the owner's clients find it, from any of their MCP
 * sessions, so a task outlives the connection that started it.  It lives
 * until its ttl (asked by the client, at most TASK_TTL_MAX) has passed
 * since its creation, whatever its status; an owner keeps at most
 * TASK_MAX of them.  The store is the server's (struct mcp); a task's
 * result is the store's, given out as copies.
 */
#ifndef SBX_TASK_H
#define SBX_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#define TASK_TTL_DEFAULT (60u * 60 * 1000)
#define TASK_TTL_MAX (24u * 60 * 60 * 1000)
#define TASK_POLL_MS 1000
#define TASK_MAX 64
#define TASK_BYTES_MAX (32u << 20) /* an owner's kept results, in all */

enum task_status { TASK_WORKING, TASK_COMPLETED, TASK_FAILED, TASK_CANCELLED };

struct task {
	char id[33];           /* 32 hex digits from getrandom */
	unsigned owner;
	enum task_status status;
	char message[200];     /* statusMessage, or "" */
	double created, updated; /* epoch ms */
	uint64_t ttl_ms;
	bool modern;           /* made for a 2026-07-28 client (the tasks extension's shapes) */
	jv result;             /* the tools/call result once terminal, else invalid */
	size_t bytes;          /* its size, as JSON */
	void *call;            /* mcp.c's call running it, or NULL */
	struct task *next;
};

struct tasks {
	struct task *list;     /* newest first */
};

/* A new working task of owner; ttl_ms 0: TASK_TTL_DEFAULT.  NULL if the
 * owner has TASK_MAX tasks already. */
struct task *task_new(struct tasks *ts, unsigned owner, uint64_t ttl_ms);
struct task *task_find(struct tasks *ts, unsigned owner, const char *id);
/* The Task object of the protocol: 2025-11-25's (ttl, pollInterval), or
 * the 2026-07-28 tasks extension's (ttlMs, pollIntervalMs, and once
 * terminal the result in it). */
jv task_json(const struct task *t);
bool task_terminal(const struct task *t);
/* The task ends (status terminal, result consumed; message may be NULL). */
void task_end(struct task *t, enum task_status status, jv result, const char *message);
/* Keep the owner's results within TASK_BYTES_MAX: its oldest ended tasks
 * go (never keep, the one just ended). */
void task_trim(struct tasks *ts, unsigned owner, const struct task *keep);
/* The owner's tasks, newest first, from the first'th, at most max. */
jv task_list(struct tasks *ts, unsigned owner, size_t first, size_t max, bool *more);
/* Tasks past their ttl are removed; for one still running, gone(t, arg)
 * is called first (to stop its call). */
void task_expire(struct tasks *ts, double now_ms, void (*gone)(struct task *t, void *arg), void *arg);
void task_free_all(struct tasks *ts);

#endif
