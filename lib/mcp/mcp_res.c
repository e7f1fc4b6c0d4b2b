/* mcp_res: the caller's session files as MCP resources (list, templates,
 * read, subscribe), the announcement of their changes, and completion of
 * the template's arguments.  See mcp_int.h. */
#define _GNU_SOURCE
#include "mcp_int.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "util.h"

/* ---- resources: the caller's sessions' files (sess.h) ------------------ */

#define RES_PAGE 100
#define E_NOT_FOUND -32002 /* the revisions' "resource not found" */

void mcp_res_list(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	/* The cursor is the offset of the next page, as we gave it. */
	size_t first = 0;
	jv cur = jv_get_kind(params) == JV_KIND_OBJECT ? rec_get(params, "cursor") : jv_invalid();
	if (jv_get_kind(cur) == JV_KIND_STRING) {
		int64_t v;
		if (!util_parse_i64(jv_string_value(cur), 1, INT32_MAX, &v)) {
			jv_free(cur);
			mcp_send_error(cl, tag, id, E_PARAMS, "unknown cursor (give back a nextCursor as it came)", jv_invalid());
			return;
		}
		first = (size_t)v;
	} else if (jv_get_kind(cur) != JV_KIND_INVALID && jv_get_kind(cur) != JV_KIND_NULL) {
		jv_free(cur);
		mcp_send_error(cl, tag, id, E_PARAMS, "\"cursor\" must be a string", jv_invalid());
		return;
	}
	jv_free(cur);
	bool more;
	jv list = sess_resources(cl->m->sessions, cl->owner, first, RES_PAGE, &more);
	jv r = jv_object_set(jv_object(), jv_string("resources"), list);
	if (more) {
		char next[32];
		snprintf(next, sizeof next, "%zu", first + RES_PAGE);
		r = jv_object_set(r, jv_string("nextCursor"), jv_string(next));
	}
	mcp_send_result(cl, tag, id, modern, r);
}

void mcp_res_templates(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	/* One template, one page: any cursor is unknown. */
	if (mcp_cursor_given(params)) {
		mcp_send_error(cl, tag, id, E_PARAMS, "unknown cursor: resources/templates/list has one page", jv_invalid());
		return;
	}
	jv t = jv_object_set(jv_object(), jv_string("uriTemplate"), jv_string(SESS_URI "{session_id}/{path}"));
	t = jv_object_set(t, jv_string("name"), jv_string("session file"));
	t = jv_object_set(t, jv_string("title"), jv_string("A file of a sandbox session's workspace"));
	t = jv_object_set(t, jv_string("description"),
			  jv_string("Any file a session's runs or write_file made; session_id from sandbox_initialize, "
				    "path relative to the workspace (as for read_file)."));
	mcp_send_result(cl, tag, id, modern,
		    jv_object_set(jv_object(), jv_string("resourceTemplates"), jv_array_append(jv_array(), t)));
}

void mcp_res_read(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	const char *uri = jv_get_kind(params) == JV_KIND_OBJECT ? rec_str(params, "uri", NULL) : NULL;
	char err[512];
	jv c;
	if (!uri) {
		mcp_send_error(cl, tag, id, E_PARAMS, "resources/read needs \"uri\" (a string)", jv_invalid());
		return;
	}
	if (!sess_resource_read(cl->m->sessions, cl->owner, uri, &c, err, sizeof err)) {
		mcp_send_error(cl, tag, id, E_NOT_FOUND, err, jv_object_set(jv_object(), jv_string("uri"), jv_string(uri)));
		return;
	}
	mcp_send_result(cl, tag, id, modern, jv_object_set(jv_object(), jv_string("contents"), jv_array_append(jv_array(), c)));
}

/* resources/subscribe, resources/unsubscribe: any URI is accepted (one
 * that names nothing of the caller's never changes, so it is never
 * announced); at most MAX_SUBS per client. */
static void subscribe(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern, bool on)
{
	const char *uri = rec_str(params, "uri", NULL);
	if (!uri || !*uri || strlen(uri) > 4096) {
		mcp_send_error(cl, tag, id, E_PARAMS, "needs \"uri\": a string of 1 to 4096 bytes", jv_invalid());
		return;
	}
	size_t i = 0;
	while (i < cl->nsubs && strcmp(cl->subs[i].uri, uri))
		i++;
	if (!on && i < cl->nsubs) {
		free(cl->subs[i].uri);
		cl->subs[i] = cl->subs[--cl->nsubs];
	} else if (on && i == cl->nsubs) {
		if (cl->nsubs >= MAX_SUBS) {
			char msg[80];
			snprintf(msg, sizeof msg, "too many subscriptions (%d per client): unsubscribe some first", MAX_SUBS);
			mcp_send_error(cl, tag, id, E_PARAMS, msg, jv_invalid());
			return;
		}
		cl->subs = util_xrealloc(cl->subs, (cl->nsubs + 1) * sizeof *cl->subs);
		struct sub *sb = &cl->subs[cl->nsubs++];
		sb->uri = util_strdup(uri);
		sess_resource_stamp(cl->m->sessions, cl->owner, uri, sb->stamp, sizeof sb->stamp);
	}
	mcp_send_result(cl, tag, id, modern, jv_object());
}

void mcp_res_subscribe(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	subscribe(cl, tag, id, params, modern, true);
}

void mcp_res_unsubscribe(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	subscribe(cl, tag, id, params, modern, false);
}

/* After a call in session sid: notifications/resources/updated to every
 * client of the owner subscribed to a file of it that changed (or came or
 * went); the caller's on its call's stream (tag), the others' unasked. */
void mcp_notify_updates(struct mcp *m, unsigned owner, const char *sid, struct mcp_client *caller, uint64_t tag)
{
	char prefix[80];
	int pl = snprintf(prefix, sizeof prefix, SESS_URI "%.40s/", sid);
	for (struct mcp_client *cl = m->clients; cl; cl = cl->next) {
		if (cl->owner != owner)
			continue;
		for (size_t i = 0; i < cl->nsubs; i++) {
			struct sub *sb = &cl->subs[i];
			char now[sizeof sb->stamp];
			if (strncmp(sb->uri, prefix, (size_t)pl))
				continue;
			sess_resource_stamp(m->sessions, owner, sb->uri, now, sizeof now);
			if (!strcmp(now, sb->stamp))
				continue;
			memcpy(sb->stamp, now, sizeof now);
			jv n = jv_object_set(jv_object(), jv_string("method"), jv_string("notifications/resources/updated"));
			n = jv_object_set(n, jv_string("params"), jv_object_set(jv_object(), jv_string("uri"), jv_string(sb->uri)));
			mcp_send_msg(cl, cl == caller ? tag : 0, n);
		}
	}
}

/* completion/complete: the session template's arguments (the caller's
 * session ids, a session's file paths), and language names for an
 * argument called "language" wherever it is; no prompts, so nothing for
 * them.  At most 100 values, with the total. */
void mcp_complete(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	jv ref = rec_get(params, "ref"), arg = rec_get(params, "argument");
	const char *type = jv_get_kind(ref) == JV_KIND_OBJECT ? rec_str(ref, "type", NULL) : NULL;
	const char *name = jv_get_kind(arg) == JV_KIND_OBJECT ? rec_str(arg, "name", NULL) : NULL;
	const char *value = jv_get_kind(arg) == JV_KIND_OBJECT ? rec_str(arg, "value", NULL) : NULL;
	if (!type || !name || !value || (strcmp(type, "ref/resource") && strcmp(type, "ref/prompt"))) {
		jv_free(ref);
		jv_free(arg);
		mcp_send_error(cl, tag, id, E_PARAMS,
			   "completion/complete needs \"ref\" {type: ref/resource or ref/prompt} and \"argument\" {name, value}",
			   jv_invalid());
		return;
	}
	const char *uri = !strcmp(type, "ref/resource") ? rec_str(ref, "uri", NULL) : NULL;
	jv values = jv_array();
	if (!strcmp(name, "language")) {
		const struct conf *c = cl->m->conf;
		for (size_t i = 0; i < c->nlangs; i++) {
			if (!strncmp(c->langs[i].name, value, strlen(value)))
				values = jv_array_append(values, jv_string(c->langs[i].name));
			for (char **a = c->langs[i].aliases; a && *a; a++)
				if (!strncmp(*a, value, strlen(value)))
					values = jv_array_append(values, jv_string(*a));
		}
	} else if (uri && !strcmp(uri, SESS_URI "{session_id}/{path}")) {
		jv ctx = rec_get(params, "context");
		jv args = jv_get_kind(ctx) == JV_KIND_OBJECT ? rec_get(ctx, "arguments") : jv_invalid();
		const char *sid = jv_get_kind(args) == JV_KIND_OBJECT ? rec_str(args, "session_id", NULL) : NULL;
		jv_free(values);
		values = sess_complete(cl->m->sessions, cl->owner, name, value, sid);
		jv_free(args);
		jv_free(ctx);
	}
	int total = jv_array_length(jv_copy(values));
	if (total > 100)
		values = jv_array_slice(values, 0, 100);
	jv comp = jv_object_set(jv_object(), jv_string("values"), values);
	comp = jv_object_set(comp, jv_string("total"), jv_number(total));
	comp = jv_object_set(comp, jv_string("hasMore"), jv_bool(total > 100));
	jv_free(ref);
	jv_free(arg);
	mcp_send_result(cl, tag, id, modern, jv_object_set(jv_object(), jv_string("completion"), comp));
}

