/* mcp_ask: approve on deny.  When a session's run (sandbox_exec) was
 * refused hosts that its network list lacks but its bounds allow (the
 * configuration's network, narrowed by the token's own list), and its
 * client can put a question to its user (elicitation), the call's answer
 * waits while the server asks: one yes or no per host ("allow pypi.org
 * for this session?").  A yes widens the session's network default
 * (sess_network_allow), so its next runs reach the host, and the answer
 * says which were approved (network_approved); the run itself is not
 * repeated, since it may have done things that must not happen twice.  No
 * answer within ASK_MS, a decline or a client gone: the answer goes as it
 * would have, and nothing widens.
 *
 * What can be approved is what the configuration already allows someone
 * to ask for: the question widens one session within its bounds, never
 * the bounds.  A client without elicitation, or whose call cannot carry a
 * request to it (a task, an HTTP POST answered as plain JSON, a
 * connection of its own per request), reads the refusals in the text
 * with how to ask (mcptext.c).
 */
#define _GNU_SOURCE
#include "mcp_int.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "auth.h"
#include "hostpat.h"
#include "job.h"
#include "rec.h"
#include "req.h"
#include "util.h"

#define ASK_MS 120000  /* for the user to answer */
#define ASK_MAX 5      /* hosts in one question */

/* The pattern that allows host at port (hostpat.h), or false. */
static bool pattern_of(const char *host, double port, char *pat, size_t n)
{
	char why[8];
	if (port < 1 || port > 65535 || port != (int)port)
		return false;
	int w = (int)port == HOSTPAT_PORT ? snprintf(pat, n, "%s", host) : snprintf(pat, n, "%s:%d", host, (int)port);
	return w > 0 && (size_t)w < n && hostpat_ok(pat, why, sizeof why);
}

/* Would the session's bounds let a run ask for pat: the token's list,
 * then the configuration's (the same checks a call's own list meets)? */
static bool within_bounds(const struct call *c, const char *pat)
{
	char why[512];
	jv net = jv_array_append(jv_array(), jv_string(pat));
	bool ok = (!c->cl->auth || auth_network_narrow(c->cl->auth, (int)c->cl->owner, &net, why, sizeof why)) &&
		  job_network_ok(c->m->conf, net, why, sizeof why);
	jv_free(net);
	return ok;
}

/* The hosts result's run was refused by its own list that its bounds
 * allow, as patterns (at most ASK_MAX, each once). */
static jv candidates(const struct call *c, jv result)
{
	jv out = jv_array();
	jv ran = rec_get(result, REQ_KEY(network));
	jv conns = rec_get(result, "egress");
	if (jv_get_kind(ran) != JV_KIND_ARRAY || jv_get_kind(conns) != JV_KIND_ARRAY) {
		jv_free(ran);
		jv_free(conns);
		return out;
	}
	size_t nlist = 0;
	char **list = util_xalloc(((size_t)jv_array_length(jv_copy(ran)) + 1) * sizeof *list);
	jv_array_foreach(ran, i, p) {
		if (jv_get_kind(p) == JV_KIND_STRING)
			list[nlist++] = util_strdup(jv_string_value(p));
		jv_free(p);
	}
	list[nlist] = NULL;
	jv_array_foreach(conns, i, r) {
		bool allowed = true;
		double port = 0;
		const char *host = jv_get_kind(r) == JV_KIND_OBJECT ? rec_str(r, "host", NULL) : NULL;
		char pat[300];
		if (host && rec_bool(r, "allowed", &allowed) && !allowed && rec_num(r, "port", &port) &&
		    pattern_of(host, port, pat, sizeof pat) && !hostpat_allows(list, host, (int)port) &&
		    jv_array_length(jv_copy(out)) < ASK_MAX && within_bounds(c, pat)) {
			bool seen = false;
			jv_array_foreach(out, k, q) {
				seen |= !strcmp(jv_string_value(q), pat);
				jv_free(q);
			}
			if (!seen)
				out = jv_array_append(out, jv_string(pat));
		}
		jv_free(r);
	}
	util_strv_free(list);
	jv_free(ran);
	jv_free(conns);
	return out;
}

static void on_timeout(struct loop *l, int fd, short rev, void *arg)
{
	(void)l, (void)fd, (void)rev;
	mcp_ask_end(arg, jv_invalid());
}

bool mcp_ask_hosts(struct call *c, jv *result)
{
	struct mcp_client *cl = c->cl;
	const char *sid = rec_str(*result, REQ_KEY(session), NULL);
	if (c->tool->kind != MCP_T_EXEC || c->task || c->cancelled || !cl || !cl->elicit || !sid ||
	    (cl->streams && !cl->streams(cl->arg, c->tag)))
		return false;
	jv pats = candidates(c, *result);
	int n = jv_array_length(jv_copy(pats));
	if (n == 0) {
		jv_free(pats);
		return false;
	}
	/* One boolean per host: a form every client that elicits can show. */
	jv props = jv_object(), list = jv_string("");
	jv_array_foreach(pats, i, p) {
		char key[16];
		snprintf(key, sizeof key, "host%d", i + 1);
		jv q = jv_object_set(jv_object(), jv_string("type"), jv_string("boolean"));
		q = jv_object_set(q, jv_string("title"), jv_string_fmt("Allow %s", jv_string_value(p)));
		q = jv_object_set(q, jv_string("default"), jv_false());
		props = jv_object_set(props, jv_string(key), q);
		list = jv_string_concat(list, jv_string_fmt("%s%s", i ? ", " : "", jv_string_value(p)));
		jv_free(p);
	}
	jv schema = jv_object_set(jv_object(), jv_string("type"), jv_string("object"));
	schema = jv_object_set(schema, jv_string("properties"), props);
	jv params = jv_object_set(jv_object(), jv_string("message"),
				  jv_string_fmt("A program in sandbox session %.8s… tried to reach %s, which the session's network "
						"does not include. Allow %s for this session's later runs (until it ends)?",
						sid, jv_string_value(list), n == 1 ? "it" : "them"));
	jv_free(list);
	params = jv_object_set(params, jv_string("requestedSchema"), schema);
	int t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (t < 0) {
		jv_free(params);
		jv_free(pats);
		return false;
	}
	struct itimerspec its = { .it_value = { .tv_sec = ASK_MS / 1000 } };
	timerfd_settime(t, 0, &its, NULL);
	loop_watch(c->m->loop, t, POLLIN, on_timeout, c);
	/* The run is over: its slot is free while the user thinks. */
	if (c->state == C_RUNNING)
		c->m->running--;
	c->state = C_ASKING;
	c->ask_timer = t;
	c->asked = *result;
	c->ask_pats = pats;
	snprintf(c->ask_id, sizeof c->ask_id, "sbx-ask-%u", ++c->m->seq);
	jv msg = jv_object_set(jv_object(), jv_string("jsonrpc"), jv_string("2.0"));
	/* check-names: JSON-RPC's id, the question's */
	msg = jv_object_set(msg, jv_string("id"), jv_string(c->ask_id));
	msg = jv_object_set(msg, jv_string("method"), jv_string("elicitation/create"));
	mcp_send_msg(cl, c->tag, jv_object_set(msg, jv_string("params"), params));
	mcp_call_dispatch(c->m);
	return true;
}

bool mcp_ask_answer(struct mcp_client *cl, jv id, jv msg)
{
	if (jv_get_kind(id) != JV_KIND_STRING)
		return false;
	for (struct call *c = cl->m->calls; c; c = c->link)
		if (c->state == C_ASKING && c->cl == cl && !strcmp(c->ask_id, jv_string_value(id))) {
			mcp_ask_end(c, rec_get(msg, "result"));
			return true;
		}
	return false;
}

void mcp_ask_end(struct call *c, jv answer)
{
	loop_unwatch(c->m->loop, c->ask_timer);
	close(c->ask_timer);
	c->ask_timer = -1;
	jv result = c->asked, pats = c->ask_pats;
	c->asked = c->ask_pats = jv_invalid();
	/* accept, with content: {"hostN": true} for each approved */
	const char *action = jv_get_kind(answer) == JV_KIND_OBJECT ? rec_str(answer, "action", NULL) : NULL;
	jv content = action && !strcmp(action, "accept") ? rec_get(answer, "content") : jv_invalid();
	jv approved = jv_array();
	const char *sid = rec_str(result, REQ_KEY(session), NULL);
	jv ran = rec_get(result, REQ_KEY(network));
	jv_array_foreach(pats, i, p) {
		char key[16];
		bool yes = false;
		snprintf(key, sizeof key, "host%d", i + 1);
		if (jv_get_kind(content) == JV_KIND_OBJECT && rec_bool(content, key, &yes) && yes && sid &&
		    sess_network_allow(c->m->sessions, c->owner, sid, ran, jv_string_value(p)))
			approved = jv_array_append(approved, jv_copy(p));
		jv_free(p);
	}
	jv_free(ran);
	jv_free(content);
	result = jv_object_set(result, jv_string("network_approved"), approved);
	result = jv_object_set(result, jv_string("network_asked"),
			       jv_string(!jv_is_valid(answer) ? "no answer" : action ? action : "no answer"));
	jv_free(answer);
	jv_free(pats);
	/* (C_DONE: nothing to count down; mcp_call_finish answers, or, for
	 * a call whose client is gone, only forgets it) */
	c->state = C_DONE;
	mcp_call_finish(c, mcp_run_result(c, result));
}
