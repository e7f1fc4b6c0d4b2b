#define _GNU_SOURCE
#include "mcp.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chain.h"
#include "mcp_int.h"
#include "mcptools.h"
#include "proc.h"
#include "rec.h"
#include "req.h"
#include "sess.h"
#include "task.h"
#include "util.h"

#define SERVER_NAME "sbx"
#define MODERN "2026-07-28"
/* Handshake revisions, oldest first; the last is offered to others. */
static const char *const legacy_versions[] = { "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", NULL };

/* ---- messages --------------------------------------------------------- */

static const char *const log_levels[] = { "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", NULL };
enum { L_DEBUG, L_INFO, L_NOTICE, L_WARNING, L_ERROR };

void mcp_send_msg(struct mcp_client *cl, uint64_t tag, jv msg);

/* notifications/message to a client that asked for this level or a lower
 * one: what an operator or agent should know (a run queued, refused or
 * not set up, an install's outcome), on the call's own stream.  Never
 * code, output or tokens: those are the call's result. */
static void mcp_log(struct mcp_client *cl, uint64_t tag, int level, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void mcp_log(struct mcp_client *cl, uint64_t tag, int level, const char *fmt, ...)
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

static jv tool_result(jv structured, bool is_error)
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
	 * conf_host_ids[2], which owns nothing) */
	jv blocks = mcp_run_blocks(result, &view, conf->mcp_image_inline, geteuid() == 0 ? (int64_t)conf->uid + 2 : -1);
	jv_free(result);
	size_t text_output = c->max_output >= 0 ? (size_t)c->max_output : (size_t)conf->mcp_text_output;
	jv item = jv_object_set(jv_object(), jv_string("type"), jv_string("text"));
	item = jv_object_set(item, jv_string("text"), mcp_run_text(view, text_output, conf->lim.run.output));
	jv r = jv_object_set(jv_object(), jv_string("content"), jv_array_concat(jv_array_append(jv_array(), item), blocks));
	r = jv_object_set(r, jv_string("structuredContent"), view);
	return jv_object_set(r, jv_string("isError"), jv_bool(is_error));
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

/* ---- calls ------------------------------------------------------------ */

bool mcp_cursor_given(jv params)
{
	jv cur = jv_get_kind(params) == JV_KIND_OBJECT ? rec_get(params, "cursor") : jv_invalid();
	bool given = jv_get_kind(cur) != JV_KIND_INVALID && jv_get_kind(cur) != JV_KIND_NULL;
	jv_free(cur);
	return given;
}

void mcp_call_stop(struct call *c)
{
	if (c->state == C_QUEUED)
		mcp_call_free(c);
	else if (c->state == C_RUNNING)
		chain_cancel(c->m->chain, c->run_id);
	else if (c->state == C_HELPER)
		kill(c->pid, SIGKILL);
}

void mcp_call_free(struct call *c)
{
	mcp_task_disarm(c);
	if (c->beat >= 0) {
		loop_unwatch(c->m->loop, c->beat);
		close(c->beat);
	}
	if (c->efd >= 0) {
		loop_unwatch(c->m->loop, c->efd);
		close(c->efd);
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
		sess_release(m->sessions, c->held_session);
	free(c->held_session);
	if (c->temp_session)
		sess_remove(m->sessions, c->temp_session);
	free(c->temp_session);
	jv_free(c->id);
	jv_free(c->token);
	jv_free(c->args);
	jv_free(c->after);
	jv_free(c->with);
	free(c->buf);
	free(c);
}

static void dispatch_queue(struct mcp *m);


/* Answer a call (result consumed) and forget it.  A call in a session may
 * have changed its files: subscribers hear of it first, the caller on the
 * call's own stream. */
static void finish(struct call *c, jv result)
{
	struct mcp *m = c->m;
	if (c->state == C_RUNNING)
		m->running--;
	c->state = C_DONE;
	const char *sid = c->held_session ? c->held_session : rec_str(c->args, "session_id", NULL);
	if (sid && c->tool && c->tool->kind != MCP_T_HISTORY)
		mcp_notify_updates(m, c->cl ? c->cl->owner : c->owner, sid, c->cancelled ? NULL : c->cl, c->tag);
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
	bool is_error = st && (!strcmp(st, "invalid") || !strcmp(st, "internal_error") || !strcmp(st, "cancelled"));
	const char *why = rec_str(result, "error", NULL);
	if (st && !strcmp(st, "internal_error"))
		mcp_log(c->cl, c->tag, L_ERROR, "%s: the sandbox could not be set up: %.400s", c->tool->name, why ? why : "");
	else if (st && !strcmp(st, "invalid"))
		mcp_log(c->cl, c->tag, L_WARNING, "%s: refused: %.400s", c->tool->name, why ? why : "");
	if (jv_is_valid(c->with)) {
		/* sandbox_initialize with dependencies: the session, and how
		 * its install went. */
		jv with = c->with;
		c->with = jv_invalid();
		is_error = !st || strcmp(st, "success");
		finish(c, tool_result(jv_object_set(with, jv_string("install"), mcp_run_view(result, c->max_output)), is_error));
		return;
	}
	/* sandbox_exec's "file" is the pipeline's "entry": the error names
	 * what the agent wrote */
	const char *err = rec_str(result, "error", NULL);
	if (err && c->tool->kind == MCP_T_EXEC && rec_has(c->args, "entry") && strstr(err, "\"entry\"")) {
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
	const char *sid = rec_str(result, "session", NULL);
	if (c->tool->kind == MCP_T_CELL && sid && rec_bool(result, "kernel_alive", &alive))
		sess_kernel_seen(c->m->sessions, sid, rec_str(result, "language", NULL), alive);
	finish(c, run_result(c, result, is_error));
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
	req = jv_object_set(req, jv_string("id"), jv_string(c->run_id));
	if (c->principal[0])
		req = jv_object_set(req, jv_string("principal"), jv_string(c->principal));
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
static void submit_run(struct call *c, jv request)
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
static bool start_helper(struct call *c, char **argv, void (*done)(struct call *, int, char *, size_t))
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
		finish(c, mcp_tool_error("cannot start %s: %s", argv[0], strerror(errno)));
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
		finish(c, mcp_tool_error("cannot start %s: %s", argv[0], strerror(errno)));
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
static bool start_check(struct call *c, char *option, void (*done)(struct call *, int, char *, size_t))
{
	char *argv[] = { "sbx-run", option, "--json", c->m->conf_path ? "-c" : NULL, c->m->conf_path, NULL };
	return start_helper(c, argv, done);
}

/* ---- the tools ---------------------------------------------------------- */

/* run_code's arguments as a pipeline request (sbx-validate checks them). */
static jv run_request(jv args)
{
	jv r = req_from_args(jv_object(), args, RT_RUN);
	/* the files it makes come back (images as images); a judged
	 * program's tests make none that count */
	return rec_has(args, "tests") ? r : jv_object_set(r, jv_string("artifacts"), jv_true());
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
	if (!st || strcmp(st, "success")) {
		/* Why: the record's own error (a refused package, a sandbox that
		 * could not be made), else the installer's output, which the
		 * view carries. */
		const char *why = rec_str(result, "error", NULL);
		char *msg = why ? util_fmt("installing the dependencies failed: %s", why) : install_failure(result);
		jv v = mcp_run_view(result, c->max_output);
		v = jv_object_set(v, jv_string("error"), jv_string(msg));
		free(msg);
		finish(c, tool_result(v, true));
		return;
	}
	jv_free(result);
	jv req = c->after;
	c->after = jv_invalid();
	submit_run(c, req);
}

static void tool_run_code(struct call *c)
{
	jv req = run_request(c->args);
	jv deps = rec_get(c->args, "dependencies");
	if (jv_get_kind(deps) != JV_KIND_ARRAY || jv_array_length(jv_copy(deps)) == 0) {
		jv_free(deps);
		submit_run(c, req);
		return;
	}
	if (rec_has(c->args, "tests")) {
		/* They would need a session, and each test has a fresh sandbox. */
		jv_free(deps);
		jv_free(req);
		finish(c, mcp_tool_error("run_code: \"dependencies\" do not go with \"tests\" (each test runs in a fresh "
					 "sandbox with the runtime's own packages)"));
		return;
	}
	char err[768];
	const char *lang = rec_str(c->args, "language", NULL);
	if (!sess_can_install(c->m->conf, lang, err, sizeof err)) {
		jv_free(deps);
		jv_free(req);
		finish(c, mcp_tool_error("%s", err));
		return;
	}
	char *sid = sess_create(c->m->sessions, c->cl ? c->cl->owner : 0, lang, 0, err, sizeof err);
	if (!sid) {
		jv_free(deps);
		jv_free(req);
		finish(c, mcp_tool_error("%s", err));
		return;
	}
	c->temp_session = sid;
	/* held, so that a short ttl cannot end it between install and run */
	c->held_session = util_strdup(sid);
	sess_hold(c->m->sessions, sid);
	c->after = jv_object_set(req, jv_string("session"), jv_string(sid));
	c->next = deps_installed;
	jv inst = jv_object_set(jv_object(), jv_string("language"), jv_string(lang));
	inst = jv_object_set(inst, jv_string("session"), jv_string(sid));
	/* The files are there for the install too (a requirements file, a
	 * package.json). */
	if (rec_has(c->args, "files"))
		inst = jv_object_set(inst, jv_string("files"), rec_get(c->args, "files"));
	submit_run(c, jv_object_set(inst, jv_string("install"), deps));
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
		finish(c, *why ? mcp_tool_error("get_execution_history: %s", why)
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
	finish(c, tool_result(r, false));
}

static void tool_history(struct call *c)
{
	const struct history_filter *filters = history_filters;
	struct mcp *m = c->m;
	char *argv[32];
	char limit[32];
	int a = 0;
	/* What sbx-history would refuse as a usage error, said here. */
	const char *st = rec_str(c->args, "status", NULL), *lang = rec_str(c->args, "language", NULL);
	if (st && !rec_status_known(st)) {
		finish(c, mcp_tool_error("status \"%.40s\" is not a status (%s)", st, rec_status_list()));
		return;
	}
	if (lang && !conf_lang(m->conf, lang)) {
		finish(c, mcp_tool_error("language \"%.40s\" is not a configured language (%s)", lang, conf_lang_list(m->conf)));
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
		finish(c, mcp_tool_error("limit must be an integer from 0 to 10000 (0: all the matching runs up to 10000)"));
		return;
	}
	snprintf(limit, sizeof limit, "%d", n == 0 ? 10000 : (int)n);
	argv[a++] = "--limit";
	argv[a++] = limit;
	bool stats = false;
	if (rec_bool(c->args, "stats", &stats) && stats)
		argv[a++] = "--stats";
	/* An HTTP token sees its own runs, not the others' (nor the stdio
	 * client's, nor the command line's). */
	if (c->principal[0]) {
		argv[a++] = "--principal";
		argv[a++] = c->principal;
	}
	argv[a] = NULL;
	start_helper(c, argv, history_done);
}

static void check_done(struct call *c, int status, char *out, size_t len)
{
	jv v = jv_parse_sized(out, (int)len);
	if (jv_get_kind(v) != JV_KIND_OBJECT) {
		jv_free(v);
		finish(c, mcp_tool_error("sbx-run --check gave no report (exit status %d); see the server's log",
				     WIFEXITED(status) ? WEXITSTATUS(status) : -1));
		return;
	}
	struct mcp *m = c->m;
	jv langs = rec_get(v, "languages");
	if (jv_get_kind(langs) == JV_KIND_ARRAY) {
		jv_free(m->languages);
		m->languages = mcp_languages_view(m->conf, jv_copy(langs), rec_str(v, "backend", NULL));
	}
	jv_free(langs);
	if (c->tool->kind == MCP_T_LANGUAGES) {
		jv_free(v);
		finish(c, tool_result(jv_copy(m->languages), false));
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
	finish(c, tool_result(v, !usable));
}

static void tool_check(struct call *c)
{
	struct mcp *m = c->m;
	if (c->tool->kind == MCP_T_LANGUAGES && jv_is_valid(m->languages)) {
		finish(c, tool_result(jv_copy(m->languages), false));
		return;
	}
	start_check(c, "--check", check_done);
}

/* Session tools: sess.c does the file work; runs go through the chain. */
static void tool_session(struct call *c)
{
	struct mcp *m = c->m;
	char err[1024];
	jv out = jv_invalid();
	jv req = jv_invalid();
	bool ok = sess_tool(m->sessions, c->cl ? c->cl->owner : 0, c->tool->kind, c->args, &out, &req, err, sizeof err);
	if (!ok) {
		finish(c, mcp_tool_error("%s", err));
		return;
	}
	if (jv_is_valid(req)) {
		/* The tool continues as a run (sandbox_exec, install_packages,
		 * sandbox_initialize with dependencies). */
		c->with = out;
		const char *sid = rec_str(req, "session", NULL);
		if (sid) {
			c->held_session = util_strdup(sid);
			sess_hold(m->sessions, sid);
		}
		submit_run(c, req);
		return;
	}
	finish(c, tool_result(out, false));
}

/* ---- methods ------------------------------------------------------------ */

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

static void do_initialize(struct mcp_client *cl, uint64_t tag, jv id, jv params)
{
	const char *want = jv_get_kind(params) == JV_KIND_OBJECT ? rec_str(params, "protocolVersion", NULL) : NULL;
	const char *agreed = legacy_versions[3];
	for (int i = 0; want && legacy_versions[i]; i++)
		if (!strcmp(want, legacy_versions[i]))
			agreed = legacy_versions[i];
	snprintf(cl->legacy, sizeof cl->legacy, "%s", agreed);
	jv info = jv_get_kind(params) == JV_KIND_OBJECT ? rec_get(params, "clientInfo") : jv_invalid();
	const char *name = jv_get_kind(info) == JV_KIND_OBJECT ? rec_str(info, "name", NULL) : NULL;
	if (!strcmp(cl->m->conf->mcp_structured, "auto"))
		cl->structured = !name || !content_first(name);
	jv_free(info);
	jv r = jv_object_set(jv_object(), jv_string("protocolVersion"), jv_string(agreed));
	r = jv_object_set(r, jv_string("capabilities"), capabilities());
	r = jv_object_set(r, jv_string("serverInfo"), server_info());
	r = jv_object_set(r, jv_string("instructions"), jv_string(instructions));
	mcp_send_result(cl, tag, id, false, r);
}

static void do_discover(struct mcp_client *cl, uint64_t tag, jv id, bool modern)
{
	jv v = jv_array();
	for (int i = 0; legacy_versions[i]; i++)
		v = jv_array_append(v, jv_string(legacy_versions[i]));
	v = jv_array_append(v, jv_string(MODERN));
	jv r = jv_object_set(jv_object(), jv_string("supportedVersions"), v);
	jv caps = capabilities();
	caps = jv_object_set(caps, jv_string("extensions"),
			     jv_object_set(jv_object(), jv_string("io.modelcontextprotocol/tasks"), jv_object()));
	r = jv_object_set(r, jv_string("capabilities"), caps);
	r = jv_object_set(r, jv_string("serverInfo"), server_info());
	r = jv_object_set(r, jv_string("instructions"), jv_string(instructions));
	mcp_send_result(cl, tag, id, modern, r);
}

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

static void do_tools_call(struct mcp_client *cl, uint64_t tag, jv id, jv params, bool modern)
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
			    .max_output = max_output, .fd = -1, .efd = -1, .beat = -1,
			    .after = jv_invalid(), .with = jv_invalid(), .task = task, .task_timer = -1 };
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
	switch (t->kind) {
	case MCP_T_RUN: tool_run_code(c); break;
	case MCP_T_HISTORY: tool_history(c); break;
	case MCP_T_CHECK:
	case MCP_T_LANGUAGES: tool_check(c); break;
	default: tool_session(c); break;
	}
}

/* notifications/cancelled: stop that request's work; answer nothing. */
static void do_cancelled(struct mcp_client *cl, jv params)
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
		/* A response: we send no requests, so there is nothing to match. */
		jv_free(id);
		jv_free(msg);
		return false;
	}
	jv params = rec_get(msg, "params");
	if (jv_get_kind(params) == JV_KIND_INVALID)
		params = jv_object();
	if (!has_id) {
		if (!strcmp(method, "notifications/cancelled"))
			do_cancelled(cl, params);
		/* notifications/initialized and others need nothing */
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
	if (pv) {
		bool known = !strcmp(pv, MODERN);
		for (int i = 0; legacy_versions[i]; i++)
			known |= !strcmp(pv, legacy_versions[i]);
		if (!known) {
			jv sup = jv_array();
			for (int i = 0; legacy_versions[i]; i++)
				sup = jv_array_append(sup, jv_string(legacy_versions[i]));
			sup = jv_array_append(sup, jv_string(MODERN));
			jv data = jv_object_set(jv_object(), jv_string("supported"), sup);
			data = jv_object_set(data, jv_string("requested"), jv_string(pv));
			char msgtext[160];
			snprintf(msgtext, sizeof msgtext, "unsupported protocol version \"%.40s\"", pv);
			mcp_send_error(cl, tag, id, E_UNSUPPORTED_VERSION, msgtext, data);
			jv_free(meta);
			jv_free(params);
			jv_free(msg);
			return true;
		}
		modern = !strcmp(pv, MODERN);
	}
	jv_free(meta);

	if (!strcmp(method, "initialize"))
		do_initialize(cl, tag, id, params);
	else if (!strcmp(method, "server/discover"))
		do_discover(cl, tag, id, modern);
	else if (!strcmp(method, "ping"))
		mcp_send_result(cl, tag, id, modern, jv_object());
	else if (!strcmp(method, "tools/list") && !m->probed) {
		struct parked *pk = util_xalloc(sizeof *pk);
		*pk = (struct parked){ .cl = cl, .tag = tag, .msg = msg, .next = NULL };
		struct parked **end = &m->parked;
		while (*end)
			end = &(*end)->next;
		*end = pk; /* in the order they came */
		jv_free(id);
		jv_free(params);
		return true;
	} else if (!strcmp(method, "tools/list")) {
		/* One page holds every tool: no cursor of ours exists, so any
		 * cursor given is unknown (-32602, as the revisions say). */
		if (mcp_cursor_given(params))
			mcp_send_error(cl, tag, id, E_PARAMS, "unknown cursor: tools/list has one page (no nextCursor)", jv_invalid());
		else
			mcp_send_result(cl, tag, id, modern,
					jv_object_set(jv_object(), jv_string("tools"), jv_copy(cl->structured ? m->tools : m->tools_plain)));
	} else if (!strcmp(method, "tools/call")) {
		do_tools_call(cl, tag, id, params, modern); /* params borrowed */
	} else if (!strcmp(method, "resources/list"))
		mcp_res_list(cl, tag, id, params, modern);
	else if (!strcmp(method, "resources/templates/list"))
		mcp_res_templates(cl, tag, id, params, modern);
	else if (!strcmp(method, "resources/read"))
		mcp_res_read(cl, tag, id, params, modern);
	else if (!strcmp(method, "resources/subscribe") || !strcmp(method, "resources/unsubscribe"))
		mcp_res_subscribe(cl, tag, id, params, modern, !strcmp(method, "resources/subscribe"));
	else if (!strcmp(method, "completion/complete"))
		mcp_complete(cl, tag, id, params, modern);
	else if (!strncmp(method, "tasks/", 6))
		mcp_tasks(cl, tag, id, method + 6, params, modern);
	else if (!strcmp(method, "logging/setLevel"))
		do_set_level(cl, tag, id, params, modern);
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
	return m->sessions ? sess_live(m->sessions, owner, all) : jv_array();
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
	finish(c, jv_object());
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
	*c = (struct call){ .m = m, .id = jv_null(), .token = jv_invalid(), .tool = mcp_tool_find("check_backend"), .max_output = -1, .beat = -1, .internal = true,
			    .args = jv_object(), .fd = -1, .efd = -1, .after = jv_invalid(), .with = jv_invalid(), .task_timer = -1 };
	c->link = m->calls;
	m->calls = c;
	if (!start_check(c, "--check=backend", probe_done)) {
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

/* A session ended: its kernels with it. */
static void session_ended(const char *id, void *arg)
{
	struct mcp *m = arg;
	chain_end_session(m->chain, id);
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
	sess_on_end(m->sessions, session_ended, m);
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
				   .structured = strcmp(m->conf->mcp_structured, "never") != 0 };
	snprintf(cl->principal, sizeof cl->principal, "%s", principal ? principal : "");
	m->clients = cl;
	return cl;
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
	return n;
}

unsigned mcp_pending(const struct mcp *m)
{
	unsigned n = 0;
	for (struct call *c = m->calls; c; c = c->link)
		n += !c->internal;
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
	chain_free(m->chain, m->calls ? 0 : 2000);
	m->chain = NULL; /* sess_free's session_ended finds none */
	while (m->calls)
		mcp_call_free(m->calls);
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
