/* mcp: the protocol (mcp.h): messages to a client, the table of methods
 * and mcp_handle over it, the handshake and the revisions, the probe of
 * what this host enforces, and the server and its clients.  A tools/call
 * is mcp_call.c's, what each tool does mcp_tool.c's.  See mcp_int.h.
 */
#define _GNU_SOURCE
#include "mcp.h"

#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chain.h"
#include "mcp_int.h"
#include "mcptools.h"
#include "rec.h"
#include "sess.h"
#include "task.h"
#include "util.h"

#define SERVER_NAME "sbx"
#define MODERN "2026-07-28"
/* Handshake revisions, oldest first; the last is offered to others. */
static const char *const legacy_versions[] = { "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", NULL };

/* ---- messages --------------------------------------------------------- */

static const char *const log_levels[] = { "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", NULL };

void mcp_send_msg(struct mcp_client *cl, uint64_t tag, jv msg);

/* notifications/message to a client that asked for this level or a lower
 * one: what an operator or agent should know (a run queued, refused or
 * not set up, an install's outcome), on the call's own stream.  Never
 * code, output or tokens: those are the call's result. */
void mcp_log(struct mcp_client *cl, uint64_t tag, int level, const char *fmt, ...)
{
	if (!cl || cl->log_level < 0 || level < cl->log_level)
		return;
	char text[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	jv p = jv_object_set(jv_object(), jv_string("level"), jv_string(log_levels[level]));
	p = jv_object_set(p, jv_string("logger"), jv_string("sbx"));
	p = jv_object_set(p, jv_string("data"), jv_string(text));
	jv n = jv_object_set(jv_object(), jv_string("method"), jv_string("notifications/message"));
	mcp_send_msg(cl, tag, jv_object_set(n, jv_string("params"), p));
}

void mcp_send_msg(struct mcp_client *cl, uint64_t tag, jv msg)
{
	if (!cl) {
		jv_free(msg);
		return;
	}
	cl->send(jv_object_set(msg, jv_string("jsonrpc"), jv_string("2.0")), tag, cl->arg);
}

void mcp_send_error(struct mcp_client *cl, uint64_t tag, jv id, int code, const char *msg, jv data)
{
	jv err = jv_object_set(jv_object(), jv_string("code"), jv_number(code));
	err = jv_object_set(err, jv_string("message"), jv_string(msg));
	if (jv_is_valid(data))
		err = jv_object_set(err, jv_string("data"), data);
	else
		jv_free(data);
	jv r = jv_object_set(jv_object(), jv_string("id"), id);
	mcp_send_msg(cl, tag, jv_object_set(r, jv_string("error"), err));
}

void mcp_send_result(struct mcp_client *cl, uint64_t tag, jv id, bool modern, jv result)
{
	if (modern)
		result = jv_object_set(result, jv_string("resultType"), jv_string("complete"));
	jv r = jv_object_set(jv_object(), jv_string("id"), id);
	mcp_send_msg(cl, tag, jv_object_set(r, jv_string("result"), result));
}

/* An error the agent can act on, as a tool result (isError): text only,
 * since it does not have the shape of the tool's output schema. */
jv mcp_tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
jv mcp_tool_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	jv item = jv_object_set(jv_object(), jv_string("type"), jv_string("text"));
	item = jv_object_set(item, jv_string("text"), jv_string(msg));
	jv r = jv_object_set(jv_object(), jv_string("content"), jv_array_append(jv_array(), item));
	return jv_object_set(r, jv_string("isError"), jv_true());
}

bool mcp_cursor_given(jv params)
{
	jv cur = jv_get_kind(params) == JV_KIND_OBJECT ? rec_get(params, "cursor") : jv_invalid();
	bool given = jv_get_kind(cur) != JV_KIND_INVALID && jv_get_kind(cur) != JV_KIND_NULL;
	jv_free(cur);
	return given;
}

/* ---- methods ------------------------------------------------------------ */

/* Every revision we speak, oldest first (server/discover's list, and an
 * unsupported version's error data). */
static jv supported_versions(void)
{
	jv v = jv_array();
	for (int i = 0; legacy_versions[i]; i++)
		v = jv_array_append(v, jv_string(legacy_versions[i]));
	return jv_array_append(v, jv_string(MODERN));
}

static jv server_info(void)
{
	jv i = jv_object_set(jv_object(), jv_string("name"), jv_string(SERVER_NAME));
	i = jv_object_set(i, jv_string("title"), jv_string("sbx: code in disposable sandboxes"));
	return jv_object_set(i, jv_string("version"), jv_string(SBX_VERSION));
}

static jv capabilities(void)
{
	jv tools = jv_object_set(jv_object(), jv_string("listChanged"), jv_false());
	jv res = jv_object_set(jv_object_set(jv_object(), jv_string("subscribe"), jv_true()), jv_string("listChanged"), jv_false());
	jv c = jv_object_set(jv_object(), jv_string("tools"), tools);
	c = jv_object_set(c, jv_string("resources"), res);
	c = jv_object_set(c, jv_string("completions"), jv_object());
	jv calls = jv_object_set(jv_object(), jv_string("tools"), jv_object_set(jv_object(), jv_string("call"), jv_object()));
	jv tasks = jv_object_set(jv_object(), jv_string("list"), jv_object());
	tasks = jv_object_set(tasks, jv_string("cancel"), jv_object());
	c = jv_object_set(c, jv_string("tasks"), jv_object_set(tasks, jv_string("requests"), calls));
	return jv_object_set(c, jv_string("logging"), jv_object());
}

static void do_set_level(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	const char *level = jv_get_kind(params) == JV_KIND_OBJECT ? rec_str(params, "level", NULL) : NULL;
	for (int i = 0; level && log_levels[i]; i++)
		if (!strcmp(level, log_levels[i])) {
			cl->log_level = i;
			mcp_send_result(cl, tag, id, modern, jv_object());
			return;
		}
	mcp_send_error(cl, tag, id, E_PARAMS, "\"level\" must be one of debug, info, notice, warning, error, critical, alert, emergency",
		   jv_invalid());
}

static const char instructions[] =
	"Runs code snippets in disposable, isolated Linux sandboxes (no network, limited CPU, memory, time and "
	"output) and returns structured results: status, exit code, stdout, stderr, duration, memory. Use run_code "
	"for one-off runs; use sandbox_initialize / sandbox_exec / the file tools when state must persist between "
	"runs. A failing program is a normal result with its status, not an error.";

/* Clients documented to show a result's structuredContent instead of its
 * content whenever both are there, so that the model never sees the
 * images nor the text written for it: Claude Code (anthropics/claude-code
 * #54737, #79944: JSON.stringify(structuredContent) is all the model gets)
 * and VS Code (microsoft/vscode#290063).  With [mcp] structured = "auto"
 * they get neither outputSchemas nor structuredContent, which the
 * revisions allow, and then read the content, images included. */
static bool content_first(const char *client)
{
	static const char *const names[] = { "claude-code", "Visual Studio Code", "Visual Studio Code - Insiders", NULL };
	for (int i = 0; names[i]; i++)
		if (!strcmp(client, names[i]))
			return true;
	return false;
}

/* (answered as the handshake's revision, whatever the request's _meta says) */
static void do_initialize(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	const char *want = jv_get_kind(params) == JV_KIND_OBJECT ? rec_str(params, "protocolVersion", NULL) : NULL;
	const char *agreed = legacy_versions[3];
	for (int i = 0; want && legacy_versions[i]; i++)
		if (!strcmp(want, legacy_versions[i]))
			agreed = legacy_versions[i];
	snprintf(cl->legacy, sizeof cl->legacy, "%s", agreed);
	jv info = jv_get_kind(params) == JV_KIND_OBJECT ? rec_get(params, "clientInfo") : jv_invalid();
	const char *name = jv_get_kind(info) == JV_KIND_OBJECT ? rec_str(info, "name", NULL) : NULL;
	if (cl->m->conf->mcp_structured == CONF_STRUCTURED_AUTO)
		cl->structured = !name || !content_first(name);
	jv_free(info);
	/* elicitation: {} (2025-06-18) or {"form": {}, "url": {}} (2025-11-25,
	 * where {} alone means form): can it show a form? */
	jv caps = jv_get_kind(params) == JV_KIND_OBJECT ? rec_get(params, "capabilities") : jv_invalid();
	jv el = jv_get_kind(caps) == JV_KIND_OBJECT ? rec_get(caps, "elicitation") : jv_invalid();
	cl->elicit = jv_get_kind(el) == JV_KIND_OBJECT && (rec_has(el, "form") || !rec_has(el, "url"));
	jv_free(el);
	jv_free(caps);
	jv r = jv_object_set(jv_object(), jv_string("protocolVersion"), jv_string(agreed));
	r = jv_object_set(r, jv_string("capabilities"), capabilities());
	r = jv_object_set(r, jv_string("serverInfo"), server_info());
	r = jv_object_set(r, jv_string("instructions"), jv_string(instructions));
	mcp_send_result(cl, tag, id, false, r);
}

static void do_discover(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	jv r = jv_object_set(jv_object(), jv_string("supportedVersions"), supported_versions());
	jv caps = capabilities();
	caps = jv_object_set(caps, jv_string("extensions"),
			     jv_object_set(jv_object(), jv_string("io.modelcontextprotocol/tasks"), jv_object()));
	r = jv_object_set(r, jv_string("capabilities"), caps);
	r = jv_object_set(r, jv_string("serverInfo"), server_info());
	r = jv_object_set(r, jv_string("instructions"), jv_string(instructions));
	mcp_send_result(cl, tag, id, modern, r);
}

/* notifications/cancelled: stop that request's work; answer nothing (id:
 * invalid, a notification has none). */
static void do_cancelled(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	struct mcp *m = cl->m;
	jv rid = jv_get_kind(params) == JV_KIND_OBJECT ? rec_get(params, "requestId") : jv_invalid();
	for (struct call *c = m->calls; c && jv_is_valid(rid); c = c->link) {
		/* A task's request was answered with the task: tasks/cancel
		 * cancels it, not this. */
		if (c->cl != cl || c->cancelled || c->task || !jv_equal(jv_copy(c->id), jv_copy(rid)))
			continue;
		c->cancelled = true;
		mcp_call_stop(c); /* its result is dropped when it comes */
		break;
	}
	jv_free(rid);
	jv_free(id);
}

static void do_ping(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	mcp_send_result(cl, tag, id, modern, jv_object());
}

static void do_tools_list(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	struct mcp *m = cl->m;
	/* One page holds every tool: no cursor of ours exists, so any
	 * cursor given is unknown (-32602, as the revisions say). */
	if (mcp_cursor_given(params))
		mcp_send_error(cl, tag, id, E_PARAMS, "unknown cursor: tools/list has one page (no nextCursor)", jv_invalid());
	else
		mcp_send_result(cl, tag, id, modern,
				jv_object_set(jv_object(), jv_string("tools"), jv_copy(cl->structured ? m->tools : m->tools_plain)));
}

/* The methods: each one's name, who may call it, and its handler.  A
 * message is looked up here once its revision is checked (mcp_handle):
 * requests among the requests' rows, notifications (no id, no answer)
 * among theirs; a name not here is "method not found" (-32601), and so is
 * a 2026-07-28 method asked for by an older revision. */
static const struct method {
	const char *name;
	mcp_method_fn *fn;
	bool notification;     /* a notification's, not a request's */
	bool modern_only;      /* 2026-07-28's only */
	bool after_probe;      /* held until the probe answers (mcp_probe): the tools' descriptions say what it found */
} methods[] = {
	{ "initialize", do_initialize, false, false, false },
	{ "server/discover", do_discover, false, false, false },
	{ "ping", do_ping, false, false, false },
	{ "tools/list", do_tools_list, false, false, true },
	{ "tools/call", mcp_tools_call, false, false, false },
	{ "resources/list", mcp_res_list, false, false, false },
	{ "resources/templates/list", mcp_res_templates, false, false, false },
	{ "resources/read", mcp_res_read, false, false, false },
	{ "resources/subscribe", mcp_res_subscribe, false, false, false },
	{ "resources/unsubscribe", mcp_res_unsubscribe, false, false, false },
	{ "completion/complete", mcp_complete, false, false, false },
	{ "tasks/get", mcp_tasks_get, false, false, false },
	{ "tasks/result", mcp_tasks_result, false, false, false },
	{ "tasks/list", mcp_tasks_list, false, false, false },
	{ "tasks/cancel", mcp_tasks_cancel, false, false, false },
	{ "tasks/update", mcp_tasks_update, false, true, false },
	{ "logging/setLevel", do_set_level, false, false, false },
	/* notifications/initialized and the others need nothing */
	{ "notifications/cancelled", do_cancelled, true, false, false },
};

const char *mcp_method_name(size_t i, bool *notification, bool *modern_only)
{
	if (i >= sizeof methods / sizeof methods[0])
		return NULL;
	*notification = methods[i].notification;
	*modern_only = methods[i].modern_only;
	return methods[i].name;
}

static const struct method *method_find(const char *name, bool notification, bool modern)
{
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (methods[i].notification == notification && !strcmp(methods[i].name, name))
			return methods[i].modern_only && !modern ? NULL : &methods[i];
	return NULL;
}

void mcp_reject_line(struct mcp_client *cl, const char *why, uint64_t tag)
{
	bool not_object = why && strstr(why, "expected a JSON object");
	char msg[512];
	snprintf(msg, sizeof msg, "%s: %s",
		 not_object ? "invalid request: a message is one JSON-RPC object (batches are not supported)" : "parse error",
		 why ? why : "not JSON");
	mcp_send_error(cl, tag, jv_null(), not_object ? E_INVALID_REQUEST : E_PARSE, msg, jv_invalid());
}

bool mcp_handle_line(struct mcp_client *cl, const char *line, size_t len, uint64_t tag)
{
	jv inv;
	enum rec_status st = rec_check_line(line, len, 0, &inv);
	if (st == REC_AGAIN)
		return false;
	if (st != REC_OK) {
		mcp_reject_line(cl, rec_str(inv, "error", NULL), tag);
		jv_free(inv);
		return true;
	}
	return mcp_handle(cl, jv_parse_sized(line, (int)len), tag);
}

bool mcp_handle(struct mcp_client *cl, jv msg, uint64_t tag)
{
	struct mcp *m = cl->m;
	jv id = rec_get(msg, "id");
	jv_kind ik = jv_get_kind(id);
	bool has_id = ik != JV_KIND_INVALID;
	const char *method = rec_str(msg, "method", NULL);
	const char *ver = rec_str(msg, "jsonrpc", NULL);
	if (!ver || strcmp(ver, "2.0") || (has_id && ik != JV_KIND_STRING && ik != JV_KIND_NUMBER) ||
	    (!method && !rec_has(msg, "result") && !rec_has(msg, "error"))) {
		jv_free(id);
		mcp_send_error(cl, tag, has_id && (ik == JV_KIND_STRING || ik == JV_KIND_NUMBER) ? rec_get(msg, "id") : jv_null(),
			   E_INVALID_REQUEST, "not a JSON-RPC 2.0 request (needs \"jsonrpc\": \"2.0\", \"method\", an id that is a string or number)",
			   jv_invalid());
		jv_free(msg);
		return true;
	}
	if (!method) {
		/* A response: to a question of ours (mcp_ask.c), or nothing. */
		mcp_ask_answer(cl, id, msg);
		jv_free(id);
		jv_free(msg);
		return false;
	}
	jv params = rec_get(msg, "params");
	if (jv_get_kind(params) == JV_KIND_INVALID)
		params = jv_object();
	if (!has_id) {
		const struct method *n = method_find(method, true, false);
		if (n)
			n->fn(cl, tag, jv_invalid(), params, false);
		jv_free(params);
		jv_free(msg);
		return false;
	}
	if (jv_get_kind(params) != JV_KIND_OBJECT) {
		mcp_send_error(cl, tag, id, E_INVALID_REQUEST, "\"params\" must be an object", jv_invalid());
		jv_free(params);
		jv_free(msg);
		return true;
	}
	/* 2026-07-28: the revision rides on every request. */
	bool modern = false;
	jv meta = rec_get(params, "_meta");
	const char *pv = jv_get_kind(meta) == JV_KIND_OBJECT ? rec_str(meta, "io.modelcontextprotocol/protocolVersion", NULL)
							     : NULL;
	if (pv && !mcp_version_known(pv, &modern)) {
		jv data = jv_object_set(jv_object(), jv_string("supported"), supported_versions());
		data = jv_object_set(data, jv_string("requested"), jv_string(pv));
		char msgtext[160];
		snprintf(msgtext, sizeof msgtext, "unsupported protocol version \"%.40s\"", pv);
		mcp_send_error(cl, tag, id, E_UNSUPPORTED_VERSION, msgtext, data);
		jv_free(meta);
		jv_free(params);
		jv_free(msg);
		return true;
	}
	jv_free(meta);

	const struct method *r = method_find(method, false, modern);
	if (r && r->after_probe && !m->probed) {
		struct parked *pk = util_xalloc(sizeof *pk);
		*pk = (struct parked){ .cl = cl, .tag = tag, .msg = msg, .next = NULL };
		struct parked **end = &m->parked;
		while (*end)
			end = &(*end)->next;
		*end = pk; /* in the order they came */
		jv_free(id);
		jv_free(params);
		return true;
	}
	if (r)
		r->fn(cl, tag, id, params, modern); /* params borrowed */
	else {
		char text[200];
		snprintf(text, sizeof text, "method \"%.100s\" not found", method);
		mcp_send_error(cl, tag, id, E_METHOD, text, jv_invalid());
	}
	jv_free(params);
	jv_free(msg);
	return true;
}

jv mcp_live_sessions(struct mcp *m, unsigned owner, bool all)
{
	jv live = m->sessions ? sess_live(m->sessions, owner, all) : jv_array();
	/* each with its processes (mcp_proc.c) and open ports (mcp_port.c) */
	jv out = jv_array();
	jv_array_foreach(live, i, s) {
		const char *sid = jv_get_kind(s) == JV_KIND_OBJECT ? rec_str(s, "session_id", NULL) : NULL;
		if (sid)
			s = jv_object_set(jv_object_set(s, jv_string("processes"), mcp_proc_json(m, sid)), jv_string("ports"),
					  mcp_port_json(m, sid));
		out = jv_array_append(out, s);
		(void)i;
	}
	jv_free(live);
	return out;
}

bool mcp_version_known(const char *v, bool *modern)
{
	*modern = v && !strcmp(v, MODERN);
	for (int i = 0; v && legacy_versions[i]; i++)
		if (!strcmp(v, legacy_versions[i]))
			return true;
	return *modern;
}

/* ---- what this host enforces ------------------------------------------- */

/* The tools' list, as it goes to clients that take structured results and
 * to the others. */
static void set_tools(struct mcp *m, const char *host_note)
{
	jv_free(m->tools);
	jv_free(m->tools_plain);
	m->tools = mcp_tools_list(m->conf, wsfs_note(sess_wsfs(m->sessions)), host_note);
	m->tools_plain = jv_array();
	jv_array_foreach(m->tools, i, t)
		m->tools_plain = jv_array_append(m->tools_plain, jv_object_delete(t, jv_string("outputSchema")));
}

#define PROBE_MS 5000 /* past it, the tools are described from the configuration alone */

/* The probe is over (answered, failed or too slow): the tools' descriptions
 * say what it found, and the requests held for it are handled. */
static void probe_over(struct mcp *m, const char *note)
{
	if (m->probed)
		return;
	m->probed = true;
	if (*note) {
		set_tools(m, note);
	}
	while (m->parked) {
		struct parked *pk = m->parked;
		m->parked = pk->next;
		mcp_handle(pk->cl, pk->msg, pk->tag);
		free(pk);
	}
}

static void probe_done(struct call *c, int status, char *out, size_t len)
{
	jv v = jv_parse_sized(out, (int)len);
	jv missing = jv_get_kind(v) == JV_KIND_OBJECT ? rec_get(v, "limits_missing") : jv_invalid();
	bool usable = false;
	char note[400] = "";
	if (jv_get_kind(v) == JV_KIND_OBJECT && rec_bool(v, "usable", &usable) && !usable)
		snprintf(note, sizeof note, " No sandbox can be made on this host now: check_backend says why and what to do.");
	else if (jv_get_kind(missing) == JV_KIND_ARRAY && jv_array_length(jv_copy(missing)) > 0) {
		size_t o = (size_t)snprintf(note, sizeof note, " This host does not enforce");
		jv_array_foreach(missing, i, name) {
			if (jv_get_kind(name) == JV_KIND_STRING && o < sizeof note)
				o += (size_t)snprintf(note + o, sizeof note - o, "%s %s", i ? "," : "", jv_string_value(name));
			jv_free(name);
		}
		if (o < sizeof note)
			snprintf(note + o, sizeof note - o, " (each result's limits_missing; check_backend says how to fix it).");
	}
	jv_free(missing);
	jv_free(v);
	(void)status;
	probe_over(c->m, note);
	mcp_call_finish(c, jv_object());
}

static void on_probe_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct call *c = arg;
	(void)l, (void)fd, (void)rev;
	mcp_task_disarm(c);
	util_warn("sbx-run --check=backend took over %d ms: the tools are described from the configuration alone", PROBE_MS);
	probe_over(c->m, "");
	kill(c->pid, SIGKILL); /* its end comes to probe_done, which has nothing left to do */
}

static void probe_start(struct mcp *m)
{
	struct call *c = util_xalloc(sizeof *c);
	*c = (struct call){ .m = m, .id = jv_null(), .token = jv_invalid(), .tool = mcp_tool_find("check_backend"), .max_output = -1, .beat = -1, .ask_timer = -1, .asked = jv_invalid(), .ask_pats = jv_invalid(), .internal = true,
			    .args = jv_object(), .fd = -1, .efd = -1, .after = jv_invalid(), .with = jv_invalid(), .task_timer = -1, .wait_timer = -1 };
	c->link = m->calls;
	m->calls = c;
	if (!mcp_call_check(c, "--check=backend", probe_done)) {
		probe_over(m, ""); /* why is on stderr */
		return;
	}
	c->task_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->task_timer >= 0) {
		struct itimerspec its = { .it_value = { .tv_sec = PROBE_MS / 1000, .tv_nsec = PROBE_MS % 1000 * 1000000L } };
		timerfd_settime(c->task_timer, 0, &its, NULL);
		loop_watch(m->loop, c->task_timer, POLLIN, on_probe_timer, c);
	}
}

/* A session ended: its kernels and processes with it. */
static void session_ended(const char *id, void *arg)
{
	struct mcp *m = arg;
	chain_end_session(m->chain, id);
	mcp_proc_session_end(m, id);
	mcp_port_session_end(m, id);
}

static void session_restored(const char *id, void *arg)
{
	struct mcp *m = arg;
	chain_restore_session(m->chain, id);
}

struct mcp *mcp_new(struct loop *l, const struct conf *c, const char *conf_path, const char *bindir)
{
	struct mcp *m = util_xalloc(sizeof *m);
	m->loop = l;
	m->conf = c;
	m->conf_path = conf_path ? util_strdup(conf_path) : NULL;
	m->bindir = util_strdup(bindir);
	m->max = c->max_concurrent ? (unsigned)c->max_concurrent : 1;
	m->languages = jv_invalid();
	/* A call that gives no timeout runs for the default: past max_timeout,
	 * clients would give up on such calls before they end. */
	char over[300] = "";
	for (size_t i = 0, o = 0; i < c->nlangs && o < sizeof over; i++) {
		struct limits run, compile;
		conf_lang_limits(c, &c->langs[i], &run, &compile);
		if (run.timeout_ms > c->mcp_max_timeout_ms)
			o += (size_t)snprintf(over + o, sizeof over - o, "%s%s (%g s)", o ? ", " : "", c->langs[i].name,
					      run.timeout_ms / 1000.0);
	}
	if (over[0])
		util_warn("the default timeout of %s is more than [mcp] max_timeout (%g s): calls that give none may outlast "
			  "their client's wait", over, c->mcp_max_timeout_ms / 1000.0);
	/* Said once, here: sessions, history and the compile cache need it. */
	if (c->state_note && !c->state_per_user)
		util_warn("%s", c->state_note);
	/* (the sessions first: what their workspaces are is in the tools'
	 * descriptions) */
	m->sessions = sess_new(l, c);
	m->tools = m->tools_plain = jv_invalid();
	set_tools(m, "");
	sess_on_end(m->sessions, session_ended, session_restored, m);
	probe_start(m);
	unsigned seed;
	util_random(&seed, sizeof seed);
	srandom(seed);
	return m;
}

struct mcp_client *mcp_client_new(struct mcp *m, unsigned owner, const char *principal, mcp_send_fn send, void *arg)
{
	struct mcp_client *cl = util_xalloc(sizeof *cl);
	*cl = (struct mcp_client){ .m = m, .owner = owner, .send = send, .arg = arg, .log_level = -1, .next = m->clients,
				   .structured = m->conf->mcp_structured != CONF_STRUCTURED_NEVER };
	snprintf(cl->principal, sizeof cl->principal, "%s", principal ? principal : "");
	m->clients = cl;
	return cl;
}

void mcp_client_auth(struct mcp_client *cl, const struct auth *a)
{
	cl->auth = a;
}

void mcp_client_streams(struct mcp_client *cl, bool (*fn)(void *arg, uint64_t tag))
{
	cl->streams = fn;
}

/* Stop the work of calls (no answers): queued ones are dropped, runs and
 * helpers killed; their results are dropped when they come. */
static void cancel_calls(struct mcp *m, struct mcp_client *only)
{
	for (struct call *c = m->calls, *next; c; c = next) {
		next = c->link;
		if (only && c->cl != only)
			continue;
		c->cl = NULL;
		if (c->cancelled || (only && c->task))
			continue; /* a task outlives its client's connection */
		c->cancelled = true;
		mcp_call_stop(c);
	}
}

void mcp_client_free(struct mcp_client *cl)
{
	if (!cl)
		return;
	struct mcp *m = cl->m;
	cancel_calls(m, cl);
	for (struct mcp_client **p = &m->clients; *p; p = &(*p)->next)
		if (*p == cl) {
			*p = cl->next;
			break;
		}
	for (struct waiter **w = &m->waiters; *w;) {
		if ((*w)->cl == cl) {
			struct waiter *gone = *w;
			*w = gone->next;
			jv_free(gone->id);
			free(gone);
		} else
			w = &(*w)->next;
	}
	for (struct parked **p = &m->parked; *p;) {
		if ((*p)->cl == cl) {
			struct parked *gone = *p;
			*p = gone->next;
			jv_free(gone->msg);
			free(gone);
		} else
			p = &(*p)->next;
	}
	for (size_t i = 0; i < cl->nsubs; i++)
		free(cl->subs[i].uri);
	free(cl->subs);
	free(cl);
}

unsigned mcp_client_pending(const struct mcp_client *cl)
{
	unsigned n = 0;
	for (struct call *c = cl->m->calls; c; c = c->link)
		n += c->cl == cl;
	for (struct parked *p = cl->m->parked; p; p = p->next)
		n += p->cl == cl;
	return n;
}

unsigned mcp_pending(const struct mcp *m)
{
	unsigned n = 0;
	for (struct call *c = m->calls; c; c = c->link)
		n += !c->internal;
	/* a request parked until the host probe ends is answered after it */
	for (struct parked *p = m->parked; p; p = p->next)
		n++;
	return n;
}

void mcp_free(struct mcp *m)
{
	if (!m)
		return;
	while (m->clients)
		mcp_client_free(m->clients);
	for (struct call *c = m->calls; c; c = c->link) {
		c->cancelled = true;
		if (c->state == C_HELPER) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, NULL, 0);
			close(c->fd);
			if (c->efd >= 0) {
				loop_unwatch(m->loop, c->efd);
				close(c->efd);
			}
		}
	}
	/* Runs in flight: chain_free cancels them at once (SIGTERM to sbx-run
	 * kills its sandboxes); an idle chain is let finish by itself. */
	mcp_port_free_all(m);
	chain_free(m->chain, m->calls || mcp_proc_running(m) ? 0 : 2000);
	m->chain = NULL; /* sess_free's session_ended finds none */
	while (m->calls)
		mcp_call_free(m->calls);
	mcp_proc_free_all(m);
	while (m->waiters) {
		struct waiter *w = m->waiters;
		m->waiters = w->next;
		jv_free(w->id);
		free(w);
	}
	task_free_all(&m->tasks);
	sess_free(m->sessions);
	jv_free(m->languages);
	jv_free(m->tools);
	jv_free(m->tools_plain);
	free(m->conf_path);
	free(m->bindir);
	free(m->served);
	free(m);
}
