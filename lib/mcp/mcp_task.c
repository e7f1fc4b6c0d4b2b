/* mcp_task: MCP tasks over task.h's store: a task call's answer kept,
 * tasks/get, result, list and cancel, and who waits.  See mcp_int.h. */
#define _GNU_SOURCE
#include "mcp_int.h"

#include <poll.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "util.h"

/* ---- tasks (task.h) ------------------------------------------------------ */

/* What tasks/result gives for a task: the call's answer, marked as the
 * task's. */
static jv task_result(const struct task *t)
{
	jv r = jv_copy(t->result);
	jv rel = jv_object_set(jv_object(), jv_string("taskId"), jv_string(t->id));
	jv meta = rec_get(r, "_meta");
	if (jv_get_kind(meta) != JV_KIND_OBJECT) {
		jv_free(meta);
		meta = jv_object();
	}
	meta = jv_object_set(meta, jv_string("io.modelcontextprotocol/related-task"), rel);
	return jv_object_set(r, jv_string("_meta"), meta);
}

/* A task became terminal: answer who waits for it, tell its client. */
static void task_settled(struct mcp *m, struct task *t, struct mcp_client *cl)
{
	for (struct waiter **w = &m->waiters; *w;) {
		if ((*w)->task != t) {
			w = &(*w)->next;
			continue;
		}
		struct waiter *x = *w;
		*w = x->next;
		mcp_send_result(x->cl, x->tag, x->id, x->modern, task_result(t));
		free(x);
	}
	if (cl) {
		jv n = jv_object_set(jv_object(), jv_string("method"), jv_string("notifications/tasks/status"));
		mcp_send_msg(cl, 0, jv_object_set(n, jv_string("params"), task_json(t)));
	}
}

static jv cancelled_result(void)
{
	return mcp_tool_error("the task was cancelled (tasks/cancel); its run was stopped");
}

void mcp_task_done(struct mcp *m, struct call *c, jv result)
{
	struct task *t = c->task;
	c->task = NULL;
	t->call = NULL;
	if (t->status == TASK_CANCELLED) {
		jv_free(result); /* it stays cancelled, and was settled then */
		return;
	}
	/* 2025-11-25: a tool error fails the task; the 2026-07-28 extension
	 * keeps "failed" for JSON-RPC errors, so there it is a result. */
	jv err = rec_get(result, "isError");
	bool failed = jv_get_kind(err) == JV_KIND_TRUE && !t->modern;
	jv_free(err);
	task_end(t, failed ? TASK_FAILED : TASK_COMPLETED, result, failed ? "the tool reported an error (tasks/result has it)" : NULL);
	task_settled(m, t, c->cl);
	task_trim(&m->tasks, t->owner, t);
}

void mcp_task_orphaned(struct mcp *m, struct call *c)
{
	struct task *t = c->task;
	c->task = NULL;
	t->call = NULL;
	if (task_terminal(t))
		return;
	task_end(t, TASK_FAILED, mcp_tool_error("the task's run ended without an answer (the server stopped it)"), NULL);
	task_settled(m, t, NULL);
}

/* Stop a task's call; its task is cancelled (or expired) already. */
static void task_stop(struct task *t)
{
	struct call *c = t->call;
	t->call = NULL;
	if (!c)
		return;
	c->task = NULL;
	c->cancelled = true;
	mcp_call_stop(c);
}

void mcp_task_gone(struct task *t, void *arg)
{
	struct mcp *m = arg;
	task_stop(t);
	for (struct waiter **w = &m->waiters; *w;) {
		if ((*w)->task == t) {
			struct waiter *x = *w;
			*w = x->next;
			mcp_send_error(x->cl, x->tag, x->id, E_PARAMS, "the task expired (its ttl passed)", jv_invalid());
			free(x);
		} else
			w = &(*w)->next;
	}
}

void mcp_tasks_list(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	struct mcp *m = cl->m;
	task_expire(&m->tasks, util_epoch_ms(), mcp_task_gone, m);
	size_t first = 0;
	const char *cur = rec_str(params, "cursor", NULL);
	int64_t v;
	if ((!cur && mcp_cursor_given(params)) || (cur && !util_parse_i64(cur, 1, INT32_MAX, &v))) {
		mcp_send_error(cl, tag, id, E_PARAMS, "unknown cursor (give back a nextCursor as it came)", jv_invalid());
		return;
	}
	first = cur ? (size_t)v : 0;
	bool more;
	jv r = jv_object_set(jv_object(), jv_string("tasks"), task_list(&m->tasks, cl->owner, first, RES_PAGE, &more));
	if (more) {
		char next[32];
		snprintf(next, sizeof next, "%zu", first + RES_PAGE);
		r = jv_object_set(r, jv_string("nextCursor"), jv_string(next));
	}
	mcp_send_result(cl, tag, id, modern, r);
}

/* The methods on one task (op: "get", "result", "cancel", "update"; the
 * method table says who may call which). */
static void task_op(struct mcp_client *cl, uint64_t tag, jv id, const char *op, jv params, bool modern)
{
	struct mcp *m = cl->m;
	task_expire(&m->tasks, util_epoch_ms(), mcp_task_gone, m);
	struct task *t = task_find(&m->tasks, cl->owner, rec_str(params, "taskId", NULL));
	if (!t)
		mcp_send_error(cl, tag, id, E_PARAMS, "unknown task: no such taskId of yours (it may have expired)", jv_invalid());
	else if (!strcmp(op, "get"))
		mcp_send_result(cl, tag, id, modern, task_json(t));
	else if (!strcmp(op, "update"))
		mcp_send_result(cl, tag, id, modern, jv_object()); /* sbx's tasks never ask for input */
	else if (!strcmp(op, "result")) {
		if (task_terminal(t)) {
			mcp_send_result(cl, tag, id, modern, task_result(t));
			return;
		}
		size_t waiting = 0;
		for (struct waiter *x = m->waiters; x; x = x->next)
			waiting += x->cl == cl;
		if (waiting >= MAX_WAITERS) {
			mcp_send_error(cl, tag, id, E_PARAMS, "too many tasks/result waiting on this connection: poll with tasks/get",
				       jv_invalid());
			return;
		}
		struct waiter *w = util_xalloc(sizeof *w);
		*w = (struct waiter){ .cl = cl, .tag = tag, .id = id, .modern = modern, .task = t, .next = m->waiters };
		m->waiters = w;
	} else if (task_terminal(t))
		mcp_send_error(cl, tag, id, E_PARAMS, "the task has ended already: there is nothing to cancel", jv_invalid());
	else {
		task_end(t, TASK_CANCELLED, cancelled_result(), "cancelled by tasks/cancel");
		task_stop(t);
		/* 2026-07-28: an empty acknowledgement; before, the task */
		mcp_send_result(cl, tag, id, modern, modern ? jv_object() : task_json(t));
		task_settled(m, t, NULL);
	}
}

void mcp_tasks_get(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	task_op(cl, tag, id, "get", params, modern);
}

void mcp_tasks_result(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	task_op(cl, tag, id, "result", params, modern);
}

void mcp_tasks_cancel(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	task_op(cl, tag, id, "cancel", params, modern);
}

void mcp_tasks_update(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	task_op(cl, tag, id, "update", params, modern);
}


/* ---- 2026-07-28: the tasks extension (server-directed) --------------------- */

static void on_task_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct call *c = arg;
	struct mcp *m = c->m;
	uint64_t n;
	(void)!read(fd, &n, sizeof n);
	mcp_task_disarm(c);
	if (c->state == C_DONE || c->cancelled || c->task || !c->cl)
		return;
	/* Still running: the answer becomes a task, and the call is
	 * answered with it now. */
	task_expire(&m->tasks, util_epoch_ms(), mcp_task_gone, m);
	struct task *t = task_new(&m->tasks, c->owner, 0);
	if (!t)
		return; /* too many tasks: the call is answered when it ends, as usual */
	t->modern = true;
	t->call = c;
	c->task = t;
	jv r = task_json(t);
	mcp_send_result(c->cl, c->tag, jv_copy(c->id), false, jv_object_set(r, jv_string("resultType"), jv_string("task")));
	(void)l;
	(void)rev;
}

void mcp_task_arm(struct call *c)
{
	c->task_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->task_timer < 0)
		return;
	struct itimerspec its = { .it_value = { TASK_AFTER_MS / 1000, (TASK_AFTER_MS % 1000) * 1000000L } };
	timerfd_settime(c->task_timer, 0, &its, NULL);
	loop_watch(c->m->loop, c->task_timer, POLLIN, on_task_timer, c);
}

void mcp_task_disarm(struct call *c)
{
	if (c->task_timer < 0)
		return;
	loop_unwatch(c->m->loop, c->task_timer);
	close(c->task_timer);
	c->task_timer = -1;
}
