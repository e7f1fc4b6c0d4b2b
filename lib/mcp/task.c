#define _GNU_SOURCE
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const status_names[] = { "working", "completed", "failed", "cancelled" };

struct task *task_new(struct tasks *ts, unsigned owner, uint64_t ttl_ms)
{
	size_t n = 0;
	for (struct task *t = ts->list; t; t = t->next)
		n += t->owner == owner;
	if (n >= TASK_MAX)
		return NULL;
	struct task *t = util_xalloc(sizeof *t);
	util_random_hex(t->id, 16);
	t->owner = owner;
	t->status = TASK_WORKING;
	t->created = t->updated = util_epoch_ms();
	t->ttl_ms = ttl_ms == 0 ? TASK_TTL_DEFAULT : ttl_ms > TASK_TTL_MAX ? TASK_TTL_MAX : ttl_ms;
	t->result = jv_invalid();
	t->next = ts->list;
	ts->list = t;
	return t;
}

struct task *task_find(struct tasks *ts, unsigned owner, const char *id)
{
	for (struct task *t = ts->list; t && id; t = t->next)
		if (t->owner == owner && !strcmp(t->id, id))
			return t;
	return NULL;
}

bool task_terminal(const struct task *t)
{
	return t->status != TASK_WORKING;
}

jv task_json(const struct task *t)
{
	char created[40], updated[40];
	util_iso8601(t->created, created, sizeof created);
	util_iso8601(t->updated, updated, sizeof updated);
	jv o = jv_object_set(jv_object(), jv_string("taskId"), jv_string(t->id));
	o = jv_object_set(o, jv_string("status"), jv_string(status_names[t->status]));
	if (t->message[0])
		o = jv_object_set(o, jv_string("statusMessage"), jv_string(t->message));
	o = jv_object_set(o, jv_string("createdAt"), jv_string(created));
	o = jv_object_set(o, jv_string("lastUpdatedAt"), jv_string(updated));
	o = jv_object_set(o, jv_string(t->modern ? "ttlMs" : "ttl"), jv_number((double)t->ttl_ms));
	if (!task_terminal(t))
		o = jv_object_set(o, jv_string(t->modern ? "pollIntervalMs" : "pollInterval"), jv_number(TASK_POLL_MS));
	if (t->modern && t->status == TASK_COMPLETED && jv_is_valid(t->result))
		o = jv_object_set(o, jv_string("result"), jv_copy(t->result));
	return o;
}

void task_end(struct task *t, enum task_status status, jv result, const char *message)
{
	jv_free(t->result);
	jv dump = jv_dump_string(jv_copy(result), 0);
	t->bytes = (size_t)jv_string_length_bytes(dump);
	t->result = result;
	t->status = status;
	snprintf(t->message, sizeof t->message, "%s", message ? message : "");
	t->updated = util_epoch_ms();
}

void task_trim(struct tasks *ts, unsigned owner, const struct task *keep)
{
	for (;;) {
		size_t total = 0;
		struct task **oldest = NULL;
		for (struct task **p = &ts->list; *p; p = &(*p)->next)
			if ((*p)->owner == owner) {
				total += (*p)->bytes;
				if (task_terminal(*p) && *p != keep)
					oldest = p; /* the list is newest first: the last one seen */
			}
		if (total <= TASK_BYTES_MAX || !oldest)
			return;
		struct task *t = *oldest;
		*oldest = t->next;
		jv_free(t->result);
		free(t);
	}
}

jv task_list(struct tasks *ts, unsigned owner, size_t first, size_t max, bool *more)
{
	jv out = jv_array();
	size_t seen = 0, given = 0;
	*more = false;
	for (struct task *t = ts->list; t; t = t->next) {
		if (t->owner != owner)
			continue;
		if (seen++ < first)
			continue;
		if (given == max) {
			*more = true;
			break;
		}
		out = jv_array_append(out, task_json(t));
		given++;
	}
	return out;
}

void task_expire(struct tasks *ts, double now_ms, void (*gone)(struct task *t, void *arg), void *arg)
{
	for (struct task **p = &ts->list; *p;) {
		struct task *t = *p;
		if (now_ms - t->created < (double)t->ttl_ms) {
			p = &t->next;
			continue;
		}
		if (!task_terminal(t) && gone)
			gone(t, arg);
		*p = t->next;
		jv_free(t->result);
		free(t);
	}
}

void task_free_all(struct tasks *ts)
{
	while (ts->list) {
		struct task *t = ts->list;
		ts->list = t->next;
		jv_free(t->result);
		free(t);
	}
}
