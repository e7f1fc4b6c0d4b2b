/* mcp_tool: what each tool does, by its kind (mcptools.h describes the
 * tools; the table at the end says whose handler each is): run_code (with
 * its dependencies), get_execution_history, check_backend and
 * list_supported_languages, and the session tools, whose work is sess.c's.
 * A handler ends its call with mcp_call_finish, or hands it a run or a
 * helper process (mcp_call.c).  See mcp_int.h.
 */
#define _GNU_SOURCE
#include "mcp_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "rec.h"
#include "req.h"
#include "status.h"
#include "util.h"

/* run_code's arguments as a pipeline request (sbx-validate checks them). */
static jv run_request(jv args)
{
	jv r = req_from_args(jv_object(), args, RT_RUN);
	/* the files it makes come back (images as images); a judged
	 * program's tests make none that count */
	return rec_has(args, REQ_KEY(tests)) ? r : jv_object_set(r, jv_string(REQ_KEY(artifacts)), jv_true());
}

/* Why an install failed, in its own words: its status and the end of what
 * it wrote (stderr, else stdout), which is where package managers say it. */
static char *install_failure(jv result)
{
	const char *st = rec_str(result, "status", NULL);
	size_t n = 0;
	const char *text = rec_str(result, "stderr", &n);
	if (!text || !n)
		text = rec_str(result, "stdout", &n);
	const char *tail = text ? text + (n > 1500 ? n - 1500 : 0) : "";
	jv ec = rec_get(result, "exit_code");
	char how[64];
	if (jv_get_kind(ec) == JV_KIND_NUMBER)
		snprintf(how, sizeof how, "exit code %d", (int)jv_number_value(ec));
	else
		snprintf(how, sizeof how, "%s", st ? st : "no status");
	jv_free(ec);
	return util_fmt("installing the dependencies failed (%s)%s%s%s", how, *tail ? ": " : ", and the installer wrote nothing",
			n > 1500 ? "…" : "", tail);
}

/* run_code with "dependencies": a one-off session, the install, then the
 * run in it; the session is removed with the call. */
static void deps_installed(struct call *c, jv result)
{
	const char *st = rec_str(result, "status", NULL);
	if (status_find(st) != STATUS_success) {
		/* Why: the record's own error (a refused package, a sandbox that
		 * could not be made), else the installer's output, which the
		 * view carries. */
		const char *why = rec_str(result, "error", NULL);
		char *msg = why ? util_fmt("installing the dependencies failed: %s", why) : install_failure(result);
		jv v = mcp_run_view(result, c->max_output);
		v = jv_object_set(v, jv_string("error"), jv_string(msg));
		free(msg);
		mcp_call_finish(c, mcp_tool_result(v, true));
		return;
	}
	jv_free(result);
	jv req = c->after;
	c->after = jv_invalid();
	mcp_call_submit(c, req);
}

static void tool_run_code(struct call *c)
{
	jv req = run_request(c->args);
	jv deps = rec_get(c->args, "dependencies");
	if (jv_get_kind(deps) != JV_KIND_ARRAY || jv_array_length(jv_copy(deps)) == 0) {
		jv_free(deps);
		mcp_call_submit(c, req);
		return;
	}
	if (rec_has(c->args, REQ_KEY(tests))) {
		/* They would need a session, and each test has a fresh sandbox. */
		jv_free(deps);
		jv_free(req);
		mcp_call_finish(c, mcp_tool_error("run_code: \"dependencies\" do not go with \"%s\" (each test runs in a fresh "
					 "sandbox with the runtime's own packages)", REQ_KEY(tests)));
		return;
	}
	char err[768];
	const char *lang = rec_str(c->args, REQ_KEY(language), NULL);
	if (!sess_can_install(c->m->conf, lang, err, sizeof err)) {
		jv_free(deps);
		jv_free(req);
		mcp_call_finish(c, mcp_tool_error("%s", err));
		return;
	}
	char *sid = sess_create(c->m->sessions, c->cl ? c->cl->owner : 0, lang, 0, err, sizeof err);
	if (!sid) {
		jv_free(deps);
		jv_free(req);
		mcp_call_finish(c, mcp_tool_error("%s", err));
		return;
	}
	c->temp_session = sid;
	/* held, so that a short ttl cannot end it between install and run */
	c->held_session = util_strdup(sid);
	sess_hold(c->m->sessions, sid, false);
	c->after = jv_object_set(req, jv_string(REQ_KEY(session)), jv_string(sid));
	c->next = deps_installed;
	jv inst = jv_object_set(jv_object(), jv_string(REQ_KEY(language)), jv_string(lang));
	inst = jv_object_set(inst, jv_string(REQ_KEY(session)), jv_string(sid));
	/* The files are there for the install too (a requirements file, a
	 * package.json). */
	if (rec_has(c->args, REQ_KEY(files)))
		inst = jv_object_set(inst, jv_string(REQ_KEY(files)), rec_get(c->args, REQ_KEY(files)));
	mcp_call_submit(c, jv_object_set(inst, jv_string(REQ_KEY(install)), deps));
}

/* get_execution_history's filters and sbx-history's options for them. */
static const struct history_filter {
	const char *key, *opt;
} history_filters[] = {
	{ "since", "--since" }, { "until", "--until" }, { "language", "--language" }, { "status", "--status" },
	{ "id", "--id" }, { "session_id", "--session" }, { NULL, NULL },
};

static void history_done(struct call *c, int status, char *out, size_t len)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
		/* sbx-history's own words, naming the tool's arguments where
		 * they name its options (--since is "since"); its usage
		 * synopsis, after the first line, is for people at a shell */
		const char *said = c->err + (strncmp(c->err, "sbx-history: ", 13) ? 0 : 13);
		char why[sizeof c->err + 64];
		size_t o = 0;
		for (const char *p = said; *p && *p != '\n' && o < sizeof why - 16; p++) {
			int i = 0;
			while (history_filters[i].key && strncmp(p, history_filters[i].opt, strlen(history_filters[i].opt)))
				i++;
			if (history_filters[i].key && !isalnum((unsigned char)p[strlen(history_filters[i].opt)])) {
				o += (size_t)snprintf(why + o, sizeof why - o, "%.12s", history_filters[i].key);
				p += strlen(history_filters[i].opt) - 1;
			} else
				why[o++] = *p;
		}
		why[o] = 0;
		mcp_call_finish(c, *why ? mcp_tool_error("get_execution_history: %s", why)
			       : mcp_tool_error("the history could not be read (sbx-history exit status %d); see the server's log",
						WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
		return;
	}
	jv rows = jv_array();
	for (char *line = out, *nl; line < out + len; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(out + len - line));
		if (!nl)
			nl = out + len;
		if (nl > line) {
			jv v = jv_parse_sized(line, (int)(nl - line));
			if (jv_is_valid(v))
				rows = jv_array_append(rows, v);
			else
				jv_free(v);
		}
	}
	bool stats = false;
	rec_bool(c->args, "stats", &stats);
	jv r = jv_object_set(jv_object(), jv_string(stats ? "stats" : "runs"), rows);
	mcp_call_finish(c, mcp_tool_result(r, false));
}

static void tool_history(struct call *c)
{
	const struct history_filter *filters = history_filters;
	struct mcp *m = c->m;
	char *argv[32];
	char limit[32];
	int a = 0;
	/* What sbx-history would refuse as a usage error, said here. */
	/* check-names: sbx_history's filters */
	const char *st = rec_str(c->args, "status", NULL), *lang = rec_str(c->args, "language", NULL);
	if (st && !status_known(st)) {
		mcp_call_finish(c, mcp_tool_error("status \"%.40s\" is not a status (%s)", st, status_list()));
		return;
	}
	if (lang && !conf_lang(m->conf, lang)) {
		mcp_call_finish(c, mcp_tool_error("language \"%.40s\" is not a configured language (%s)", lang, conf_lang_list(m->conf)));
		return;
	}
	argv[a++] = "sbx-history";
	if (m->conf_path) {
		argv[a++] = "-c";
		argv[a++] = m->conf_path;
	}
	for (int i = 0; filters[i].key; i++) {
		const char *v = rec_str(c->args, filters[i].key, NULL);
		if (v) {
			argv[a++] = (char *)filters[i].opt;
			argv[a++] = (char *)v;
		}
	}
	double n = 20;
	if (rec_num(c->args, "limit", &n) && (n < 0 || n > 10000 || n != floor(n))) {
		mcp_call_finish(c, mcp_tool_error("limit must be an integer from 0 to 10000 (0: all the matching runs up to 10000)"));
		return;
	}
	snprintf(limit, sizeof limit, "%d", n == 0 ? 10000 : (int)n);
	argv[a++] = "--limit";
	argv[a++] = limit;
	bool stats = false, refused = false;
	if (rec_bool(c->args, "stats", &stats) && stats)
		argv[a++] = "--stats";
	if (rec_bool(c->args, "egress_refused", &refused) && refused)
		argv[a++] = "--egress-refused";
	/* An HTTP token sees its own runs, not the others' (nor the stdio
	 * client's, nor the command line's). */
	if (c->principal[0]) {
		argv[a++] = "--principal";
		argv[a++] = c->principal;
	}
	argv[a] = NULL;
	mcp_call_helper(c, argv, history_done);
}

static void check_done(struct call *c, int status, char *out, size_t len)
{
	jv v = jv_parse_sized(out, (int)len);
	if (jv_get_kind(v) != JV_KIND_OBJECT) {
		jv_free(v);
		mcp_call_finish(c, mcp_tool_error("sbx-run --check gave no report (exit status %d); see the server's log",
				     WIFEXITED(status) ? WEXITSTATUS(status) : -1));
		return;
	}
	struct mcp *m = c->m;
	jv langs = rec_get(v, "languages");
	if (jv_get_kind(langs) == JV_KIND_ARRAY) {
		jv_free(m->languages);
		/* check-names: sbx-validate's list of languages */
		m->languages = mcp_languages_view(m->conf, jv_copy(langs), rec_str(v, "backend", NULL));
	}
	jv_free(langs);
	if (c->tool->kind == MCP_T_LANGUAGES) {
		jv_free(v);
		mcp_call_finish(c, mcp_tool_result(jv_copy(m->languages), false));
		return;
	}
	/* The sessions' workspaces are the server's doing, not sbx-run's:
	 * what they are, and where they have no quota, what would give one. */
	const struct wsfs *fs = sess_wsfs(m->sessions);
	jv ws = jv_object_set(jv_object(), jv_string("filesystem"), jv_string(wsfs_kind_name(wsfs_kind(fs))));
	if (*wsfs_note(fs))
		ws = jv_object_set(ws, jv_string("note"), jv_string(wsfs_note(fs)));
	v = jv_object_set(v, jv_string("workspace"), ws);
	jv fixes = rec_get(v, "fixes");
	if (wsfs_kind(fs) == WSFS_DIR && jv_get_kind(fixes) == JV_KIND_ARRAY)
		v = jv_object_set(v, jv_string("fixes"), jv_array_append(fixes, jv_string(wsfs_note(fs))));
	else
		jv_free(fixes);
	bool usable = false;
	rec_bool(v, "usable", &usable);
	mcp_call_finish(c, mcp_tool_result(v, !usable));
}

static void tool_check(struct call *c)
{
	struct mcp *m = c->m;
	if (c->tool->kind == MCP_T_LANGUAGES && jv_is_valid(m->languages)) {
		mcp_call_finish(c, mcp_tool_result(jv_copy(m->languages), false));
		return;
	}
	mcp_call_check(c, "--check", check_done);
}

/* A checkpoint tool's events go to the history through `sbx-log --event`
 * (the history's one writer), started and left to finish on its own: the
 * call's answer does not wait for the file's lock.  The intermediate
 * child exits at once, so the logger is no child of ours to reap. */
static void log_events(struct mcp *m, jv events)
{
	jv text = jv_dump_string(events, 0); /* (consumes them) */
	char *path = util_fmt("%s/sbx-log", m->bindir);
	char *argv[] = { "sbx-log", "--event", (char *)jv_string_value(text), m->conf_path ? "-c" : NULL, m->conf_path, NULL };
	pid_t pid = fork();
	if (pid == 0) {
		if (fork() != 0)
			_exit(0);
		(void)proc_child_prepare(getppid(), 0); /* our signals back; no death signal */
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (setsid() < 0 || devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || proc_keep_fds(NULL, 0) < 0)
			_exit(127);
		execv(path, argv);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	else
		util_warn("cannot log a checkpoint event: fork: %s", strerror(errno));
	free(path);
	jv_free(text);
}

/* The history's events of a checkpoint tool's result (out, borrowed), or
 * an invalid jv for another tool's. */
static jv checkpoint_events(const struct call *c, jv out)
{
	static const char *const copied[] = { "checkpoint_id", "parent", "name", "method", "duration_ms" };
	const char *kind = c->tool->kind == MCP_T_CKPT	    ? "checkpoint"
			   : c->tool->kind == MCP_T_RESTORE ? "restore"
			   : c->tool->kind == MCP_T_FORK    ? "fork"
			   : c->tool->kind == MCP_T_CKDELETE ? "delete"
							    : NULL;
	if (!kind || jv_get_kind(out) != JV_KIND_OBJECT)
		return jv_invalid();
	jv e = jv_object_set(jv_object(), jv_string("kind"), jv_string(kind));
	e = jv_object_set(e, jv_string("timestamp"), jv_number(util_epoch_ms() / 1000.0));
	e = jv_object_set(e, jv_string("session_id"), rec_get(c->args, "session_id"));
	for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++)
		if (rec_has(out, copied[i]))
			e = jv_object_set(e, jv_string(copied[i]), rec_get(out, copied[i]));
	if (rec_has(out, "copied_bytes"))
		e = jv_object_set(e, jv_string("bytes"), rec_get(out, "copied_bytes"));
	if (c->principal[0])
		e = jv_object_set(e, jv_string(REQ_KEY(principal)), jv_string(c->principal));
	if (c->tool->kind != MCP_T_FORK)
		return jv_array_append(jv_array(), e);
	/* a fork: one event per new session, from the one called */
	jv all = jv_array();
	jv ids = rec_get(out, "session_ids");
	if (jv_get_kind(ids) == JV_KIND_ARRAY)
		jv_array_foreach(ids, i, id) {
			jv f = jv_object_set(jv_copy(e), jv_string("from_session"), rec_get(c->args, "session_id"));
			all = jv_array_append(all, jv_object_set(f, jv_string("session_id"), id));
		}
	jv_free(ids);
	jv_free(e);
	return all;
}

/* Session tools: sess.c does the file work (fn, the tool's); runs go
 * through the chain. */
static void tool_session(struct call *c, sess_tool_fn *fn)
{
	struct mcp *m = c->m;
	char err[1024];
	jv out = jv_invalid();
	jv req = jv_invalid();
	bool ok = fn(m->sessions, c->cl ? c->cl->owner : 0, c->args, &out, &req, err, sizeof err);
	if (!ok) {
		/* (whatever a tool made before it refused is not kept) */
		jv_free(out);
		jv_free(req);
		mcp_call_finish(c, mcp_tool_error("%s", err));
		return;
	}
	if (jv_is_valid(req)) {
		/* The tool continues as a run (sandbox_exec, install_packages,
		 * sandbox_initialize with dependencies). */
		c->with = out;
		const char *sid = rec_str(req, REQ_KEY(session), NULL);
		if (sid) {
			c->held_session = util_strdup(sid);
			sess_hold(m->sessions, sid, false);
		}
		mcp_call_submit(c, req);
		return;
	}
	jv events = checkpoint_events(c, out);
	if (jv_is_valid(events))
		log_events(m, events);
	mcp_call_finish(c, mcp_tool_result(out, false));
}

/* Each tool's handler, by its kind (mcptools.h, where the tools are
 * described): the server's own work, or for a session tool sess.c's part,
 * whose run, if it makes one, goes through the chain.  tools/call looks
 * the tool up here, once. */
static const struct tool_handler {
	void (*start)(struct call *c);
	sess_tool_fn *sess;
} tool_handlers[] = {
	[MCP_T_RUN] = { tool_run_code, NULL },
	[MCP_T_LANGUAGES] = { tool_check, NULL },
	[MCP_T_HISTORY] = { tool_history, NULL },
	[MCP_T_CHECK] = { tool_check, NULL },
	[MCP_T_INIT] = { NULL, sess_tool_init },
	[MCP_T_EXEC] = { NULL, sess_tool_exec },
	[MCP_T_STOP] = { NULL, sess_tool_stop },
	[MCP_T_WRITE] = { NULL, sess_tool_write },
	[MCP_T_READ] = { NULL, sess_tool_read },
	[MCP_T_LIST] = { NULL, sess_tool_list },
	[MCP_T_INSTALL] = { NULL, sess_tool_install },
	[MCP_T_CELL] = { NULL, sess_tool_cell },
	[MCP_T_PSTART] = { mcp_proc_start, NULL },
	[MCP_T_PREAD] = { mcp_proc_read, NULL },
	[MCP_T_PWRITE] = { mcp_proc_write, NULL },
	[MCP_T_PSIGNAL] = { mcp_proc_signal, NULL },
	[MCP_T_PLIST] = { mcp_proc_list, NULL },
	[MCP_T_POPEN] = { mcp_port_open, NULL },
	[MCP_T_PCLOSE] = { mcp_port_close, NULL },
	[MCP_T_CKPT] = { NULL, sess_tool_checkpoint },
	[MCP_T_RESTORE] = { NULL, sess_tool_restore },
	[MCP_T_FORK] = { NULL, sess_tool_fork },
	[MCP_T_CKLIST] = { NULL, sess_tool_cklist },
	[MCP_T_CKDELETE] = { NULL, sess_tool_ckdelete },
};
/* A kind added last without a row fails here; one added before the last
 * gets an empty row, which mcp_tool_start answers as sbx's own error. */
_Static_assert(sizeof tool_handlers / sizeof tool_handlers[0] == MCP_T_N, "a handler for every tool kind");

void mcp_tool_start(struct call *c)
{
	const struct tool_handler *h = &tool_handlers[c->tool->kind];
	if (!h->sess && !h->start)
		mcp_call_finish(c, mcp_tool_error("%s has no handler in this build of sbx-mcp", c->tool->name));
	else if (h->sess)
		tool_session(c, h->sess);
	else
		h->start(c);
}
