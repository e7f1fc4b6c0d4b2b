/* mcp_call: a tools/call from its arrival to its answer: the checks of
 * its arguments, a task made of it, the queue and the runs through the
 * chain (fair between principals), the helper processes (sbx-history,
 * sbx-run --check), progress, and the answer.  What each tool does is
 * mcp_tool.c's.  See mcp_int.h.
 */
#define _GNU_SOURCE
#include "mcp_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "proc.h"
#include "rec.h"
#include "req.h"
#include "state.h"
#include "status.h"
#include "util.h"

/* ---- answers ------------------------------------------------------------ */

static void progress(struct call *c, const char *what)
{
	if (!jv_is_valid(c->token) || c->cancelled)
		return;
	jv p = jv_object_set(jv_object(), jv_string("progressToken"), jv_copy(c->token));
	p = jv_object_set(p, jv_string("progress"), jv_number(++c->progress));
	p = jv_object_set(p, jv_string("total"), jv_number(4));
	p = jv_object_set(p, jv_string("message"), jv_string(what));
	jv n = jv_object_set(jv_object(), jv_string("method"), jv_string("notifications/progress"));
	mcp_send_msg(c->cl, c->tag, jv_object_set(n, jv_string("params"), p));
}

/* A tool's answer: the structured result, the same as JSON text (for
 * clients without structuredContent), and isError. */
static jv tool_result_with(jv structured, jv blocks, bool is_error)
{
	jv text = jv_dump_string(jv_copy(structured), 0);
	jv item = jv_object_set(jv_object(), jv_string("type"), jv_string("text"));
	item = jv_object_set(item, jv_string("text"), text);
	jv r = jv_object_set(jv_object(), jv_string("content"), jv_array_concat(jv_array_append(jv_array(), item), blocks));
	r = jv_object_set(r, jv_string("structuredContent"), structured);
	return jv_object_set(r, jv_string("isError"), jv_bool(is_error));
}

jv mcp_tool_result(jv structured, bool is_error)
{
	return tool_result_with(structured, jv_array(), is_error);
}

/* A run's answer (result consumed): the text a model reads first, then
 * the files it made (images as images), and the record as
 * structuredContent.  The text is short unless the call asked for more
 * (max_output): the record has it all for a program to read. */
static jv run_result(struct call *c, jv result, bool is_error)
{
	const struct conf *conf = c->m->conf;
	jv view = mcp_run_view(jv_copy(result), c->max_output);
	/* (as root, images are scaled down as the sandboxes' nobody:
	 * state_uid_roles[STATE_UID_NOBODY], which owns nothing) */
	jv blocks = mcp_run_blocks(result, &view, conf->mcp_image_inline, geteuid() == 0 ? (int64_t)state_uid(conf, STATE_UID_NOBODY) : -1);
	jv_free(result);
	size_t text_output = c->max_output >= 0 ? (size_t)c->max_output : (size_t)conf->mcp_text_output;
	jv item = jv_object_set(jv_object(), jv_string("type"), jv_string("text"));
	item = jv_object_set(item, jv_string("text"), mcp_run_text(view, text_output, conf->lim.run.output));
	jv r = jv_object_set(jv_object(), jv_string("content"), jv_array_concat(jv_array_append(jv_array(), item), blocks));
	r = jv_object_set(r, jv_string("structuredContent"), view);
	return jv_object_set(r, jv_string("isError"), jv_bool(is_error));
}

jv mcp_run_result(struct call *c, jv result)
{
	const char *st = rec_str(result, "status", NULL);
	return run_result(c, result, st && status_is(st, STF_CALL));
}

/* ---- calls ------------------------------------------------------------ */

void mcp_call_stop(struct call *c)
{
	if (c->state == C_QUEUED)
		mcp_call_free(c);
	else if (c->state == C_RUNNING)
		chain_cancel(c->m->chain, c->run_id);
	else if (c->state == C_HELPER)
		kill(c->pid, SIGKILL);
	else if (c->state == C_ASKING)
		mcp_ask_end(c, jv_invalid());
	else if (c->state == C_WAITING)
		mcp_call_free(c); /* the process runs on: only the call ends */
}

void mcp_call_free(struct call *c)
{
	mcp_task_disarm(c);
	mcp_proc_unwait(c);
	if (c->beat >= 0) {
		loop_unwatch(c->m->loop, c->beat);
		close(c->beat);
	}
	if (c->efd >= 0) {
		loop_unwatch(c->m->loop, c->efd);
		close(c->efd);
	}
	if (c->ask_timer >= 0) {
		loop_unwatch(c->m->loop, c->ask_timer);
		close(c->ask_timer);
	}
	struct mcp *m = c->m;
	if (c->task)
		mcp_task_orphaned(m, c); /* its task must not keep pointing here */
	for (struct call **p = &m->calls; *p; p = &(*p)->link)
		if (*p == c) {
			*p = c->link;
			break;
		}
	if (c->cancelled && c->cl)
		c->cl->send(jv_invalid(), c->tag, c->cl->arg); /* ended without an answer */
	if (c->held_session)
		sess_release(m->sessions, c->held_session, false);
	free(c->held_session);
	if (c->temp_session)
		sess_remove(m->sessions, c->temp_session);
	free(c->temp_session);
	jv_free(c->id);
	jv_free(c->token);
	jv_free(c->args);
	jv_free(c->after);
	jv_free(c->with);
	jv_free(c->asked);
	jv_free(c->ask_pats);
	free(c->buf);
	free(c);
}

static void dispatch_queue(struct mcp *m);


/* Answer a call (result consumed) and forget it.  A call in a session may
 * have changed its files: subscribers hear of it first, the caller on the
 * call's own stream. */
void mcp_call_finish(struct call *c, jv result)
{
	struct mcp *m = c->m;
	if (c->state == C_RUNNING)
		m->running--;
	c->state = C_DONE;
	const char *sid = c->held_session ? c->held_session : rec_str(c->args, "session_id", NULL);
	if (sid && c->tool && c->tool->kind != MCP_T_HISTORY)
		mcp_notify_updates(m, c->owner, sid, c->cancelled ? NULL : c->cl, c->tag);
	if (c->task) {
		/* The answer is the task's, for tasks/result; the call was
		 * answered when it became a task. */
		mcp_task_done(m, c, result);
		mcp_call_free(c);
		dispatch_queue(m);
		return;
	}
	if (!c->cancelled) {
		progress(c, "done");
		if (c->cl && !c->cl->structured)
			result = jv_object_delete(result, jv_string("structuredContent"));
		mcp_send_result(c->cl, c->tag, jv_copy(c->id), c->modern, result);
	} else
		jv_free(result);
	mcp_call_free(c);
	dispatch_queue(m);
}

/* ---- runs through the chain ------------------------------------------- */

static void run_done(jv result, void *arg)
{
	struct call *c = arg;
	if (c->next && !c->cancelled) {
		/* A step of a longer call (an install before a run). */
		void (*next)(struct call *, jv) = c->next;
		c->next = NULL;
		c->m->running--;
		c->state = C_DONE;
		next(c, result);
		return;
	}
	const char *st = rec_str(result, "status", NULL);
	bool is_error = st && status_is(st, STF_CALL);
	const char *why = rec_str(result, "error", NULL);
	if (status_find(st) == STATUS_internal_error)
		mcp_log(c->cl, c->tag, L_ERROR, "%s: the sandbox could not be set up: %.400s", c->tool->name, why ? why : "");
	else if (status_find(st) == STATUS_invalid)
		mcp_log(c->cl, c->tag, L_WARNING, "%s: refused: %.400s", c->tool->name, why ? why : "");
	if (jv_is_valid(c->with)) {
		/* sandbox_initialize with dependencies: the session, and how
		 * its install went. */
		jv with = c->with;
		c->with = jv_invalid();
		is_error = status_find(st) != STATUS_success;
		/* check-names: the result's install run */
		mcp_call_finish(c, mcp_tool_result(jv_object_set(with, jv_string("install"), mcp_run_view(result, c->max_output)), is_error));
		return;
	}
	/* sandbox_exec's "file" is the pipeline's "entry": the error names
	 * what the agent wrote */
	const char *err = rec_str(result, "error", NULL);
	if (err && c->tool->kind == MCP_T_EXEC && rec_has(c->args, REQ_KEY(entry)) && strstr(err, "\"entry\"")) {
		jv fixed = jv_string("");
		for (const char *p = err, *e; *p; p = e + 7) {
			if (!(e = strstr(p, "\"entry\""))) {
				fixed = jv_string_append_str(fixed, p);
				break;
			}
			fixed = jv_string_concat(fixed, jv_string_fmt("%.*s\"file\"", (int)(e - p), p));
		}
		result = jv_object_set(result, jv_string("error"), fixed);
	}
	/* Only a cell that reached its kernel says whether the kernel lives
	 * on (a refused one, invalid, says nothing of it). */
	bool alive;
	const char *sid = rec_str(result, REQ_KEY(session), NULL);
	if (c->tool->kind == MCP_T_CELL && sid && rec_bool(result, "kernel_alive", &alive))
		sess_kernel_seen(c->m->sessions, sid, rec_str(result, REQ_KEY(language), NULL), alive);
	if (mcp_ask_hosts(c, &result))
		return; /* answered when its user has said (mcp_ask.c) */
	mcp_call_finish(c, run_result(c, result, is_error));
}

/* Live output: a progress notification with the new text, its progress
 * between the stage's and "done"'s (each notification's must grow), the
 * stream in _meta.  Only for calls that asked for progress. */
static void live_progress(struct call *c, jv ev)
{
	if (!jv_is_valid(c->token) || c->cancelled)
		return;
	const char *data = rec_str(ev, "data", NULL), *stream = rec_str(ev, "stream", NULL);
	bool truncated = false;
	rec_bool(ev, "truncated", &truncated);
	if (!data && !truncated)
		return;
	c->outputs++;
	jv p = jv_object_set(jv_object(), jv_string("progressToken"), jv_copy(c->token));
	p = jv_object_set(p, jv_string("progress"), jv_number(c->progress + (double)c->outputs / (c->outputs + 1)));
	p = jv_object_set(p, jv_string("total"), jv_number(4));
	p = jv_object_set(p, jv_string("message"), jv_string(data ? data : "(more output: in the result)"));
	jv meta = jv_object_set(jv_object(), jv_string("stream"), jv_string(stream ? stream : "stdout"));
	p = jv_object_set(p, jv_string("_meta"), jv_object_set(jv_object(), jv_string("io.github.sbx/output"), meta));
	jv n = jv_object_set(jv_object(), jv_string("method"), jv_string("notifications/progress"));
	mcp_send_msg(c->cl, c->tag, jv_object_set(n, jv_string("params"), p));
}

static void run_event(const char *event, jv ev, void *arg)
{
	struct call *c = arg;
	/* "done" comes as the answer's own progress (finish) */
	if (!strcmp(event, "compile") || !strcmp(event, "run")) {
		c->outputs = 0;
		progress(c, !strcmp(event, "compile") ? "compiling" : "running");
	} else if (!strcmp(event, "output"))
		live_progress(c, ev);
}

/* A long run's heartbeat: a client that keeps a call alive while it hears
 * progress (the TypeScript SDK's resetTimeoutOnProgress) does not give up
 * on a run that prints nothing for a while. */
static void on_beat(struct loop *l, int fd, short rev, void *arg)
{
	struct call *c = arg;
	uint64_t n;
	(void)l, (void)rev;
	if (read(fd, &n, sizeof n) < 0 || !jv_is_valid(c->token) || c->cancelled || c->state != C_RUNNING)
		return;
	c->outputs++;
	jv p = jv_object_set(jv_object(), jv_string("progressToken"), jv_copy(c->token));
	p = jv_object_set(p, jv_string("progress"), jv_number(c->progress + (double)c->outputs / (c->outputs + 1)));
	p = jv_object_set(p, jv_string("total"), jv_number(4));
	p = jv_object_set(p, jv_string("message"), jv_string("still running"));
	jv msg = jv_object_set(jv_object(), jv_string("method"), jv_string("notifications/progress"));
	mcp_send_msg(c->cl, c->tag, jv_object_set(msg, jv_string("params"), p));
}

static void start_run(struct call *c)
{
	struct mcp *m = c->m;
	c->state = C_RUNNING;
	m->running++;
	if (c->owner >= m->nserved) {
		size_t n = c->owner + 16;
		m->served = util_xrealloc(m->served, n * sizeof *m->served);
		memset(m->served + m->nserved, 0, (n - m->nserved) * sizeof *m->served);
		m->nserved = n;
	}
	m->served[c->owner] = ++m->served_seq;
	if (!m->chain)
		m->chain = chain_new(m->loop, m->bindir, m->conf_path, m->max);
	jv req = jv_copy(c->args);
	req = jv_object_set(req, jv_string(REQ_KEY(id)), jv_string(c->run_id));
	if (c->principal[0])
		req = jv_object_set(req, jv_string(REQ_KEY(principal)), jv_string(c->principal));
	/* (before the submission, which may finish the call and free it at
	 * once: mcp_call_free stops the beat) */
	if (jv_is_valid(c->token) && c->beat < 0 &&
	    (c->beat = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) >= 0) {
		uint64_t ms = m->conf->mcp_progress_ms;
		struct timespec every = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
		struct itimerspec its = { .it_interval = every, .it_value = every };
		timerfd_settime(c->beat, 0, &its, NULL);
		loop_watch(m->loop, c->beat, POLLIN, on_beat, c);
	}
	chain_submit(m->chain, req, run_done, run_event, c);
}

/* Queue a run (args: the pipeline request without id). */
void mcp_call_submit(struct call *c, jv request)
{
	struct mcp *m = c->m;
	jv_free(c->args);
	c->args = request;
	snprintf(c->run_id, sizeof c->run_id, "mcp-%d-%u-%08x", (int)getpid(), ++m->seq, (unsigned)random());
	c->state = C_QUEUED;
	progress(c, "queued");
	if (m->running >= m->max)
		mcp_log(c->cl, c->tag, L_INFO, "%s: queued behind %zu running call(s) (max_concurrent %zu)", c->tool->name,
			(size_t)m->running, (size_t)m->max);
	dispatch_queue(m);
}

/* Runs going for one principal (an HTTP token; the stdio client is one). */
static unsigned running_of(const struct mcp *m, unsigned owner)
{
	unsigned n = 0;
	for (const struct call *c = m->calls; c; c = c->link)
		n += c->state == C_RUNNING && c->owner == owner;
	return n;
}

/* Fair between principals: the next run is the oldest queued call of the
 * principal with the fewest runs going, and of those the one whose last
 * run started longest ago (round robin).  One token's backlog then costs
 * another about one run's wait, where a single FIFO made a one-line run
 * wait for every task another token had queued before it; each
 * principal's own calls (a session's cells) still start in order. */
static void dispatch_queue(struct mcp *m)
{
	while (m->running < m->max) {
		struct call *pick = NULL;
		unsigned least = 0;
		uint64_t least_served = 0;
		/* (newest first: calls are pushed at the head, so on a tie the
		 * later, older one wins) */
		for (struct call *c = m->calls; c; c = c->link) {
			if (c->state != C_QUEUED)
				continue;
			unsigned r = running_of(m, c->owner);
			uint64_t s = c->owner < m->nserved ? m->served[c->owner] : 0;
			if (!pick || r < least || (r == least && s <= least_served)) {
				pick = c;
				least = r;
				least_served = s;
			}
		}
		if (!pick)
			break;
		start_run(pick);
	}
}

void mcp_call_dispatch(struct mcp *m)
{
	dispatch_queue(m);
}

/* ---- helper processes (sbx-history, sbx-run --check) --------------------- */

/* What a helper says on stderr, as it says it (read from the loop, so a
 * helper that says much never blocks on a full pipe): passed on to ours,
 * the server's log, and its start kept for a tool error that quotes the
 * helper's own words.  At its end (eof), the pipe is closed. */
static void helper_stderr(struct call *c, bool eof)
{
	char b[4096];
	ssize_t n = -1;
	size_t kept = strlen(c->err);
	while (c->efd >= 0 && ((n = read(c->efd, b, sizeof b)) > 0 || (n < 0 && errno == EINTR))) {
		if (n <= 0)
			continue;
		util_write_all(STDERR_FILENO, b, (size_t)n);
		size_t keep = sizeof c->err - 1 - kept < (size_t)n ? sizeof c->err - 1 - kept : (size_t)n;
		memcpy(c->err + kept, b, keep);
		kept += keep;
		c->err[kept] = 0;
	}
	if (c->efd >= 0 && (eof || n == 0)) {
		loop_unwatch(c->m->loop, c->efd);
		close(c->efd);
		c->efd = -1;
	}
}

static void on_helper_stderr(struct loop *l, int fd, short rev, void *arg)
{
	(void)l, (void)fd, (void)rev;
	helper_stderr(arg, false);
}

static void on_helper(struct loop *l, int fd, short rev, void *arg)
{
	struct call *c = arg;
	if (c->len + 65536 > c->cap) {
		c->cap = (c->len + 65536) * 2;
		c->buf = util_xrealloc(c->buf, c->cap);
	}
	ssize_t n = read(fd, c->buf + c->len, c->cap - c->len - 1);
	if (n > 0) {
		c->len += (size_t)n;
		if (c->len <= 64u << 20)
			return;
		kill(c->pid, SIGKILL); /* a runaway answer: cut it off */
	} else if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	loop_unwatch(l, fd);
	close(fd);
	int status = 0;
	waitpid(c->pid, &status, 0);
	helper_stderr(c, true);
	c->buf[c->len] = 0;
	c->state = C_DONE;
	if (c->cancelled) {
		mcp_call_free(c);
		return;
	}
	c->helper_done(c, status, c->buf, c->len);
	(void)rev;
}

/* Run bindir/tool with argv, collect its stdout, then helper_done; false
 * (the call finished with the error) if it could not start. */
bool mcp_call_helper(struct call *c, char **argv, void (*done)(struct call *, int, char *, size_t))
{
	struct mcp *m = c->m;
	int p[2], e[2] = { -1, -1 };
	char *path = util_fmt("%s/%s", m->bindir, argv[0]);
	bool piped = pipe2(p, O_CLOEXEC) == 0;
	if (piped && pipe2(e, O_CLOEXEC) < 0) {
		int keep = errno;
		close(p[0]);
		close(p[1]);
		errno = keep;
		piped = false;
	}
	if (!piped) {
		free(path);
		mcp_call_finish(c, mcp_tool_error("cannot start %s: %s", argv[0], strerror(errno)));
		return false;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		if (proc_child_prepare(parent, SIGKILL) < 0 || dup2(p[1], 1) < 0 || dup2(e[1], 2) < 0)
			_exit(127);
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull < 0 || dup2(devnull, 0) < 0 || proc_keep_fds(NULL, 0) < 0)
			_exit(127);
		execv(path, argv);
		dprintf(2, "sbx-mcp: cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	free(path);
	close(p[1]);
	close(e[1]);
	if (pid < 0) {
		close(p[0]);
		close(e[0]);
		mcp_call_finish(c, mcp_tool_error("cannot start %s: %s", argv[0], strerror(errno)));
		return false;
	}
	c->state = C_HELPER;
	c->pid = pid;
	c->fd = p[0];
	c->efd = e[0];
	c->helper_done = done;
	proc_set_nonblock(c->fd, true);
	proc_set_nonblock(c->efd, true); /* (our end only: the helper's blocks, and is drained) */
	loop_watch(m->loop, c->fd, POLLIN, on_helper, c);
	loop_watch(m->loop, c->efd, POLLIN, on_helper_stderr, c);
	return true;
}

/* sbx-run's report (option: --check or --check=backend), as JSON. */
bool mcp_call_check(struct call *c, char *option, void (*done)(struct call *, int, char *, size_t))
{
	char *argv[] = { "sbx-run", option, "--json", c->m->conf_path ? "-c" : NULL, c->m->conf_path, NULL };
	return mcp_call_helper(c, argv, done);
}

/* ---- tools/call ----------------------------------------------------------- */

/* 2026-07-28: whether the request's client declared the tasks extension. */
static bool client_has_tasks(jv params)
{
	jv meta = rec_get(params, "_meta");
	jv caps = jv_get_kind(meta) == JV_KIND_OBJECT ? rec_get(meta, "io.modelcontextprotocol/clientCapabilities") : jv_invalid();
	jv ext = jv_get_kind(caps) == JV_KIND_OBJECT ? rec_get(caps, "extensions") : jv_invalid();
	bool has = jv_get_kind(ext) == JV_KIND_OBJECT && rec_has(ext, "io.modelcontextprotocol/tasks");
	jv_free(ext);
	jv_free(caps);
	jv_free(meta);
	return has;
}

void mcp_tools_call(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
{
	struct mcp *m = cl->m;
	const char *name = rec_str(params, "name", NULL);
	if (!name) {
		mcp_send_error(cl, tag, id, E_PARAMS, "tools/call needs \"name\" (a string)", jv_invalid());
		return;
	}
	const struct mcp_tool *t = mcp_tool_find(name);
	if (!t) {
		char msg[256];
		snprintf(msg, sizeof msg, "unknown tool \"%.100s\" (tools/list lists them)", name);
		mcp_send_error(cl, tag, id, E_PARAMS, msg, jv_invalid());
		return;
	}
	jv args = rec_get(params, "arguments");
	if (jv_get_kind(args) == JV_KIND_INVALID || jv_get_kind(args) == JV_KIND_NULL) {
		jv_free(args);
		args = jv_object();
	}
	char why[512];
	if (jv_get_kind(args) != JV_KIND_OBJECT || !mcp_tool_check_args(t, args, why, sizeof why)) {
		if (jv_get_kind(args) != JV_KIND_OBJECT)
			snprintf(why, sizeof why, "\"arguments\" must be an object");
		jv_free(args);
		/* Since 2025-11-25 (SEP-1303) arguments the schema refuses are
		 * the tool's error, for the model to read and correct, not a
		 * protocol fault; older revisions get -32602 as before. */
		if (modern || strcmp(cl->legacy, "2025-11-25") >= 0)
			mcp_send_result(cl, tag, id, modern, mcp_tool_error("%s", why));
		else
			mcp_send_error(cl, tag, id, E_PARAMS, why, jv_invalid());
		return;
	}
	/* A token with a network list of its own holds the call to it here,
	 * before any request is made of the call: run_code's and
	 * sandbox_exec's network, and sandbox_initialize's, which becomes the
	 * session's default.  sbx-validate then holds what is left to the
	 * configuration's, as for every caller. */
	if (cl->auth && rec_has(args, REQ_KEY(network))) {
		jv net = rec_get(args, REQ_KEY(network));
		if (!auth_network_narrow(cl->auth, (int)cl->owner, &net, why, sizeof why)) {
			jv_free(net);
			jv_free(args);
			mcp_send_result(cl, tag, id, modern, mcp_tool_error("%s: %s", t->name, why));
			return;
		}
		args = jv_object_set(args, jv_string(REQ_KEY(network)), net);
	}
	/* max_output shapes the answer, not the run: it stays here. */
	double max_output = -1;
	if (rec_num(args, "max_output", &max_output)) {
		if (max_output < 0) {
			jv_free(args);
			mcp_send_result(cl, tag, id, modern, mcp_tool_error("%s: \"max_output\" must be 0 or more (bytes of each stream)", t->name));
			return;
		}
		if (max_output > (double)m->conf->lim.run.output)
			max_output = (double)m->conf->lim.run.output;
		args = jv_object_delete(args, jv_string("max_output"));
	}
	struct task *task = NULL;
	jv tparams = rec_get(params, "task");
	if (jv_get_kind(tparams) == JV_KIND_OBJECT) {
		/* A task-augmented call: answered at once with the task; the
		 * tool's answer waits in it (tasks/get, tasks/result). */
		double ttl = 0;
		char why_task[200] = "";
		if (!mcp_tool_tasks(t))
			snprintf(why_task, sizeof why_task, "tool \"%s\" does not run as a task (run_code, sandbox_exec and install_packages do)", t->name);
		else if (rec_num(tparams, "ttl", &ttl) && (ttl < 1000 || ttl != floor(ttl)))
			snprintf(why_task, sizeof why_task, "task.ttl must be an integer of at least 1000 (ms)");
		else {
			task_expire(&m->tasks, util_epoch_ms(), mcp_task_gone, m);
			/* clamped while a double: a huge ttl must not overflow */
			if (!(task = task_new(&m->tasks, cl->owner, (uint64_t)(ttl > TASK_TTL_MAX ? TASK_TTL_MAX : ttl))))
				snprintf(why_task, sizeof why_task, "too many tasks (%d): let some end or cancel them", TASK_MAX);
		}
		jv_free(tparams);
		if (!task) {
			jv_free(args);
			mcp_send_error(cl, tag, id, strstr(why_task, "does not run") ? E_METHOD : E_PARAMS, why_task, jv_invalid());
			return;
		}
		jv r = jv_object_set(jv_object(), jv_string("task"), task_json(task));
		jv meta = jv_object_set(jv_object(), jv_string("io.modelcontextprotocol/model-immediate-response"),
					jv_string("The run continues as a task; its result comes from tasks/result."));
		mcp_send_result(cl, tag, jv_copy(id), modern, jv_object_set(r, jv_string("_meta"), meta));
	} else
		jv_free(tparams);
	/* Most clients give up on a call after 60 s: one that is not a task
	 * may not ask for a run that would outlast that ([mcp] max_timeout). */
	double want = 0;
	bool may_wait = task || (modern && mcp_tool_tasks(t) && client_has_tasks(params));
	if (mcp_tool_tasks(t) && !may_wait && rec_num(args, "timeout", &want) && want * 1000 > (double)m->conf->mcp_max_timeout_ms &&
	    want * 1000 <= (double)m->conf->ceiling.timeout_ms) { /* (past the ceiling, sbx-validate says so) */
		jv_free(args);
		mcp_send_result(cl, tag, id, modern,
				mcp_tool_error("%s: \"timeout\" %g s is more than a call may take here (%g s, [mcp] max_timeout, "
					       "below the 60 s most clients wait): ask for less, or call it as a task (up to %g s)",
					       t->name, want, (double)m->conf->mcp_max_timeout_ms / 1000,
					       (double)m->conf->ceiling.timeout_ms / 1000));
		return;
	}
	struct call *c = util_xalloc(sizeof *c);
	*c = (struct call){ .m = m, .cl = cl, .tag = tag, .id = id, .token = jv_invalid(), .modern = modern, .tool = t, .args = args,
			    .max_output = max_output, .fd = -1, .efd = -1, .beat = -1, .ask_timer = -1, .asked = jv_invalid(), .ask_pats = jv_invalid(),
			    .after = jv_invalid(), .with = jv_invalid(), .task = task, .task_timer = -1, .wait_timer = -1 };
	if (task)
		task->call = c;
	else if (modern && mcp_tool_tasks(t) && client_has_tasks(params))
		mcp_task_arm(c);
	snprintf(c->principal, sizeof c->principal, "%s", cl->principal);
	c->owner = cl->owner;
	jv meta = rec_get(params, "_meta");
	if (jv_get_kind(meta) == JV_KIND_OBJECT && rec_has(meta, "progressToken")) {
		jv tok = rec_get(meta, "progressToken");
		if (jv_get_kind(tok) == JV_KIND_STRING || jv_get_kind(tok) == JV_KIND_NUMBER)
			c->token = tok;
		else
			jv_free(tok);
	}
	jv_free(meta);
	c->link = m->calls;
	m->calls = c;
	mcp_tool_start(c);
}
