/* mcp_proc: a session's processes, the tools process_start, process_read,
 * process_write, process_signal and process_list.
 *
 * A process is a run whose result comes when its program ends: sess.c
 * makes its request (sandbox_exec's, as a background job, job.h), and it
 * goes straight to the chain, beside the queue of calls: it takes none of
 * the -j slots for its life, and sbx-run starts it at once (its own bound
 * is max_processes a session).  process_start is answered when its
 * program starts (sbx-run's "run" event), or with its result if it ends
 * first (a compile error, a refusal).
 *
 * Output.  All of it comes as sbx-run's --live events, at a bounded rate
 * (live.h: past it the oldest bytes not yet out are dropped and counted).
 * One log per process keeps both streams as they came, as a terminal
 * shows them: the first quarter of [sessions] process_output and a ring
 * of the latest bytes.  Every byte has an offset, dropped ones too, so a
 * reader's cursor means the same thing however much was dropped before
 * or after it, and a read says how many bytes it skipped.
 *
 * Waiting.  process_read may wait (up to [mcp] max_timeout) for output
 * past its cursor, or for a text in it ("until": "listening on"), or for
 * the end: the call waits as C_WAITING, holding nothing but a timer, and
 * is answered by the event that satisfies it, by the end, or by the
 * timer.  process_start's call waits the same way for the start.
 *
 * Input, signals and a terminal's size go to sbx-run's --control
 * (chain_control): what it refuses comes back as an event, said at the
 * next read of that process.
 *
 * Handles are arguments (a session id and a process id), never a
 * connection's: any client of the session's owner reads the same process,
 * after a reconnect too.  A process holds its session (sess_hold) until it
 * ends.  Its session's end (sandbox_stop, expiry, the server's stop) ends
 * it (sbx-run kills a session's background jobs with its kernels), and
 * its result, like every run's, becomes a row of the history.  A process
 * that ended stays readable while its session lives; a session keeps at
 * most 2 x max_processes of them, the oldest ended ones going first.
 *
 * Ownership: struct mcp's list owns the processes; the chain holds a
 * pointer to each until its result comes, so one whose session ended is
 * only marked gone, and freed then.
 */
#define _GNU_SOURCE
#include "mcp_int.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rec.h"
#include "req.h"
#include "state.h"
#include "status.h"
#include "utf8.h"
#include "util.h"

#define WRITE_MAX (64u << 10) /* process_write's data, bytes */
#define UNTIL_MAX 256
#define READ_MAX_DEFAULT (64u << 10)

/* ---- the output log --------------------------------------------------- */

struct outlog {
	char *head;            /* bytes [0, hlen) */
	size_t hlen, hmax;
	bool head_closed;      /* a gap came: the head stays as it is */
	char *ring;            /* bytes [total - rlen, total), rlen <= rmax */
	size_t rmax, rpos, rlen; /* rpos: where the oldest is */
	uint64_t total;        /* every byte's offset so far, dropped ones too */
};

static void log_init(struct outlog *g, size_t size)
{
	*g = (struct outlog){ .hmax = size / 4, .rmax = size - size / 4 };
	g->head = util_xalloc(g->hmax ? g->hmax : 1);
	g->ring = util_xalloc(g->rmax ? g->rmax : 1);
}

static void log_free(struct outlog *g)
{
	free(g->head);
	free(g->ring);
}

static void ring_put(struct outlog *g, const char *d, size_t n)
{
	if (n >= g->rmax) {
		memcpy(g->ring, d + n - g->rmax, g->rmax);
		g->rpos = 0;
		g->rlen = g->rmax;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t at = (g->rpos + g->rlen) % g->rmax;
		g->ring[at] = d[i];
		if (g->rlen < g->rmax)
			g->rlen++;
		else
			g->rpos = (g->rpos + 1) % g->rmax;
	}
}

static void log_add(struct outlog *g, const char *d, size_t n)
{
	if (!g->head_closed && g->hlen < g->hmax && g->total == g->hlen) {
		size_t take = g->hmax - g->hlen < n ? g->hmax - g->hlen : n;
		memcpy(g->head + g->hlen, d, take);
		g->hlen += take;
		g->total += take;
		d += take;
		n -= take;
	}
	ring_put(g, d, n);
	g->total += n;
}

/* n bytes that never came (dropped upstream): the ring starts afresh
 * after them, so that what it holds stays one run of bytes. */
static void log_gap(struct outlog *g, uint64_t n)
{
	g->head_closed = true;
	g->rlen = g->rpos = 0;
	g->total += n;
}

/* The kept bytes from offset `from` on, at most max of them, ending on a
 * whole character; *next the offset after them, *dropped the bytes
 * between from and the first one kept (the caller frees the text). */
static char *log_read(const struct outlog *g, uint64_t from, size_t max, uint64_t *next, uint64_t *dropped, size_t *len)
{
	uint64_t ring_start = g->total - g->rlen;
	size_t cap = (g->hlen + g->rlen < max ? g->hlen + g->rlen : max) + 1, n = 0;
	char *out = util_xalloc(cap);
	*dropped = 0;
	if (from > g->total)
		from = g->total;
	/* One run of bytes a read: the head's, or after a gap the ring's. */
	uint64_t at = from;
	if (at < g->hlen) {
		size_t take = g->hlen - (size_t)at < max ? g->hlen - (size_t)at : max;
		memcpy(out, g->head + at, take);
		n = take;
		at += take;
	}
	if (n == 0 && at < ring_start) {
		*dropped = ring_start - at;
		at = ring_start;
	}
	while (n < max && at >= ring_start && at < g->total) {
		out[n++] = g->ring[(g->rpos + (size_t)(at - ring_start)) % g->rmax];
		at++;
	}
	/* not mid-character: the rest comes with the next read */
	size_t whole = at < g->total ? utf8_floor(out, n) : n;
	at -= n - whole;
	n = whole;
	out[n] = 0;
	*next = at;
	*len = n;
	return out;
}

/* ---- processes -------------------------------------------------------- */

enum pstate { P_STARTING, P_RUNNING, P_EXITED };
static const char *const pstate_names[] = { "starting", "running", "exited" };

struct sproc {
	struct mcp *m;
	char id[24];           /* the handle: "p" and 16 hex digits */
	char run_id[48];       /* its record's id, in the chain and the history */
	char sid[STATE_SESSION_ID_LEN + 1];
	unsigned owner;
	jv what;               /* {command or code, language, tty}: for process_list */
	enum pstate state;
	jv result;             /* its record once it ended, else invalid */
	struct outlog log;
	char note[300];        /* what sbx-run refused of its control lines, for the next read */
	double started_epoch_ms;
	bool gone;             /* its session ended: freed at its result */
	bool holds;            /* it holds its session (sess_hold) */
	struct sproc *next;
};

static struct sproc *find(struct mcp *m, const char *sid, const char *id)
{
	for (struct sproc *p = m->procs; p; p = p->next)
		if (!p->gone && !strcmp(p->sid, sid) && !strcmp(p->id, id))
			return p;
	return NULL;
}

static void proc_free(struct sproc *p)
{
	struct mcp *m = p->m;
	for (struct sproc **q = &m->procs; *q; q = &(*q)->next)
		if (*q == p) {
			*q = p->next;
			break;
		}
	if (p->holds)
		sess_release(m->sessions, p->sid, true);
	jv_free(p->what);
	jv_free(p->result);
	log_free(&p->log);
	free(p);
}

/* The process's end, for an answer: its status and how it ended. */
static jv end_json(const struct sproc *p)
{
	jv e = jv_object();
	static const char *const keys[] = { "status", "exit_code", "signal", "duration_ms", "cpu_ms", "memory_peak_bytes",
					     "error", "history_id", "started_at" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (rec_has(p->result, keys[i]))
			e = jv_object_set(e, jv_string(keys[i]), rec_get(p->result, keys[i]));
	return e;
}

static jv proc_json(const struct sproc *p)
{
	jv o = jv_object_set(jv_object(), jv_string("process_id"), jv_string(p->id));
	o = jv_object_set(o, jv_string("session_id"), jv_string(p->sid));
	o = jv_object_set(o, jv_string("state"), jv_string(pstate_names[p->state]));
	jv_object_foreach(p->what, k, v) o = jv_object_set(o, k, v);
	char when[40];
	util_iso8601(p->started_epoch_ms, when, sizeof when);
	o = jv_object_set(o, jv_string("started_at"), jv_string(when));
	o = jv_object_set(o, jv_string("output_bytes"), jv_number((double)p->log.total));
	if (p->state == P_EXITED)
		o = jv_object_set(o, jv_string("end"), end_json(p));
	return o;
}

/* ---- waiting calls ---------------------------------------------------- */

static void wait_clear(struct call *c)
{
	if (c->wait_timer >= 0) {
		loop_unwatch(c->m->loop, c->wait_timer);
		close(c->wait_timer);
		c->wait_timer = -1;
	}
	c->proc = NULL;
}

void mcp_proc_unwait(struct call *c)
{
	wait_clear(c);
}

/* process_read's answer (and whether it is ready: output past its
 * cursor, its until text, the end, or timed_out). */
static bool read_answer(struct call *c, struct sproc *p, bool timed_out, jv *out)
{
	double cur = 0, max = READ_MAX_DEFAULT;
	rec_num(c->args, "cursor", &cur);
	rec_num(c->args, "max_bytes", &max);
	const char *until = rec_str(c->args, "until", NULL);
	uint64_t next, dropped;
	size_t len;
	char *text = log_read(&p->log, (uint64_t)cur, (size_t)max, &next, &dropped, &len);
	bool found = until && *until && memmem(text, len, until, strlen(until));
	bool more = next > (uint64_t)cur || dropped;
	bool ready = timed_out || p->state == P_EXITED || (until && *until ? found : more);
	if (!ready) {
		free(text);
		return false;
	}
	jv o = jv_object_set(jv_object(), jv_string("process_id"), jv_string(p->id));
	o = jv_object_set(o, jv_string("state"), jv_string(pstate_names[p->state]));
	o = jv_object_set(o, jv_string("output"), jv_string_sized(text, (int)len));
	o = jv_object_set(o, jv_string("cursor"), jv_number((double)next));
	o = jv_object_set(o, jv_string("more"), jv_bool(next < p->log.total));
	if (dropped)
		o = jv_object_set(o, jv_string("dropped_bytes"), jv_number((double)dropped));
	if (until && *until)
		o = jv_object_set(o, jv_string("until_found"), jv_bool(found));
	if (p->note[0]) {
		o = jv_object_set(o, jv_string("input_error"), jv_string(p->note));
		p->note[0] = 0;
	}
	if (p->state == P_EXITED)
		o = jv_object_set(o, jv_string("end"), end_json(p));
	free(text);
	*out = o;
	return true;
}

/* Answer what waits on p that can be answered now. */
static void wake(struct sproc *p)
{
	struct mcp *m = p->m;
	for (struct call *c = m->calls, *next; c; c = next) {
		next = c->link;
		if (c->state != C_WAITING || c->proc != p)
			continue;
		jv out;
		if (c->tool->kind == MCP_T_PSTART) {
			if (p->state == P_STARTING)
				continue;
			out = proc_json(p);
		} else if (!read_answer(c, p, false, &out))
			continue;
		wait_clear(c);
		mcp_call_finish(c, mcp_tool_result(out, false));
		/* (mcp_call_finish may free calls: start over from the list's
		 * head, which answered calls have left) */
		next = m->calls;
	}
}

static void on_wait_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct call *c = arg;
	(void)l, (void)fd, (void)rev;
	struct sproc *p = c->proc;
	jv out;
	wait_clear(c);
	if (p && read_answer(c, p, true, &out))
		mcp_call_finish(c, mcp_tool_result(out, false));
	else
		mcp_call_finish(c, mcp_tool_error("the process is gone"));
}

/* Wait for p (c answered by wake, or by the timer after ms). */
static void wait_on(struct call *c, struct sproc *p, double ms)
{
	c->state = C_WAITING;
	c->proc = p;
	if (ms <= 0)
		return;
	c->wait_timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->wait_timer < 0)
		return;
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)fmod(ms, 1000) * 1000000L } };
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	timerfd_settime(c->wait_timer, 0, &its, NULL);
	loop_watch(c->m->loop, c->wait_timer, POLLIN, on_wait_timer, c);
}

/* ---- the chain's side ------------------------------------------------- */

static void proc_event(const char *event, jv ev, void *arg)
{
	struct sproc *p = arg;
	if (!strcmp(event, "run")) {
		p->state = P_RUNNING;
		wake(p);
	} else if (!strcmp(event, "output")) {
		size_t n = 0;
		const char *data = rec_str(ev, "data", &n);
		double skipped = 0;
		if (rec_num(ev, "skipped", &skipped) && skipped > 0)
			log_gap(&p->log, (uint64_t)skipped);
		if (data)
			log_add(&p->log, data, n);
		wake(p);
	} else {
		const char *err = rec_str(ev, "error", NULL);
		if (err) /* "input", "signal", "resize": refused */
			snprintf(p->note, sizeof p->note, "%s: %s", event, err);
	}
}

static void proc_done(jv result, void *arg)
{
	struct sproc *p = arg;
	jv_free(p->result);
	p->result = result;
	p->state = P_EXITED;
	if (p->holds) {
		p->holds = false;
		sess_release(p->m->sessions, p->sid, true);
	}
	if (p->gone) {
		proc_free(p);
		return;
	}
	wake(p);
}

/* ---- the tools ---------------------------------------------------------- */

/* The session's process the call names, or NULL (the call answered). */
static struct sproc *named(struct call *c)
{
	char err[512];
	if (!sess_check(c->m->sessions, c->owner, c->args, err, sizeof err)) {
		mcp_call_finish(c, mcp_tool_error("%s", err));
		return NULL;
	}
	const char *sid = rec_str(c->args, "session_id", NULL), *id = rec_str(c->args, "process_id", NULL);
	struct sproc *p = sid && id ? find(c->m, sid, id) : NULL;
	if (!p)
		mcp_call_finish(c, mcp_tool_error("unknown process \"%.40s\" in this session (process_list lists them)", id ? id : ""));
	return p;
}

/* A session keeps at most 2 x max_processes: the oldest ended one goes. */
static void make_room(struct mcp *m, const char *sid)
{
	unsigned n = 0;
	struct sproc *oldest = NULL;
	for (struct sproc *p = m->procs; p; p = p->next)
		if (!p->gone && !strcmp(p->sid, sid)) {
			n++;
			if (p->state == P_EXITED)
				oldest = p; /* (newest first: the last one seen is the oldest) */
		}
	if (n >= 2 * m->conf->max_processes && oldest)
		proc_free(oldest);
}

void mcp_proc_start(struct call *c)
{
	struct mcp *m = c->m;
	char err[1024];
	jv out = jv_invalid(), req = jv_invalid();
	if (!m->conf->max_processes) {
		mcp_call_finish(c, mcp_tool_error("processes are off on this server (max_processes 0)"));
		return;
	}
	if (!sess_tool_process(m->sessions, c->owner, c->args, &out, &req, err, sizeof err)) {
		mcp_call_finish(c, mcp_tool_error("%s", err));
		return;
	}
	jv_free(out);
	const char *sid = rec_str(c->args, "session_id", NULL);
	unsigned live = 0;
	for (struct sproc *p = m->procs; p; p = p->next)
		live += !p->gone && p->state != P_EXITED && !strcmp(p->sid, sid);
	if (live >= m->conf->max_processes) {
		jv_free(req);
		mcp_call_finish(c, mcp_tool_error("the session runs %u processes, as many as it may (max_processes): end one "
						  "(process_signal) or wait for one to end", live));
		return;
	}
	make_room(m, sid);
	struct sproc *p = util_xalloc(sizeof *p);
	*p = (struct sproc){ .m = m, .owner = c->owner, .result = jv_invalid(), .started_epoch_ms = util_epoch_ms() };
	uint64_t r;
	if (getrandom(&r, sizeof r, 0) != sizeof r)
		r = (uint64_t)random() << 32 ^ (uint64_t)random();
	snprintf(p->id, sizeof p->id, "p%016llx", (unsigned long long)r);
	snprintf(p->run_id, sizeof p->run_id, "mcp-%d-%u-%s", (int)getpid(), ++m->seq, p->id);
	snprintf(p->sid, sizeof p->sid, "%s", sid);
	log_init(&p->log, m->conf->process_output);
	jv what = jv_object();
	static const char *const shown[] = { REQ_KEY(command), REQ_KEY(language), REQ_KEY(tty), REQ_KEY(cwd) };
	for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
		if (rec_has(req, shown[i]))
			what = jv_object_set(what, jv_string(shown[i]), rec_get(req, shown[i]));
	size_t clen = 0;
	const char *code = rec_str(req, REQ_KEY(code), &clen);
	if (code) /* its first line, for a list */
		what = jv_object_set(what, jv_string(REQ_KEY(code)), jv_string_sized(code, (int)strcspn(code, "\n")));
	p->what = what;
	p->next = m->procs;
	m->procs = p;
	sess_hold(m->sessions, sid, true);
	p->holds = true;
	req = jv_object_set(req, jv_string(REQ_KEY(id)), jv_string(p->run_id));
	if (c->principal[0])
		req = jv_object_set(req, jv_string(REQ_KEY(principal)), jv_string(c->principal));
	wait_on(c, p, 0);
	if (!m->chain)
		m->chain = chain_new(m->loop, m->bindir, m->conf_path, m->max);
	chain_submit(m->chain, req, proc_done, proc_event, p);
}

void mcp_proc_read(struct call *c)
{
	struct sproc *p = named(c);
	if (!p)
		return;
	double cur = 0, wait = 0, max = READ_MAX_DEFAULT;
	const char *until = rec_str(c->args, "until", NULL);
	double most = (double)c->m->conf->mcp_max_timeout_ms / 1000;
	if ((rec_has(c->args, "cursor") && (!rec_num(c->args, "cursor", &cur) || cur < 0 || cur != floor(cur) || cur > 1e15)) ||
	    (rec_has(c->args, "wait") && (!rec_num(c->args, "wait", &wait) || !(wait >= 0) || wait > most)) ||
	    (rec_has(c->args, "max_bytes") && (!rec_num(c->args, "max_bytes", &max) || max < 1 || max != floor(max) ||
					       max > (double)c->m->conf->process_output)) ||
	    (until && strlen(until) > UNTIL_MAX)) {
		mcp_call_finish(c, mcp_tool_error("process_read: cursor is an offset (0 or more), wait 0 to %g seconds ([mcp] "
						  "max_timeout), max_bytes 1 to %llu (process_output), until at most %d bytes",
						  most, (unsigned long long)c->m->conf->process_output, UNTIL_MAX));
		return;
	}
	jv out;
	if (read_answer(c, p, wait == 0, &out)) {
		mcp_call_finish(c, mcp_tool_result(out, false));
		return;
	}
	wait_on(c, p, wait * 1000);
}

/* chain_control said no (errno) to what (the call's input, its resize, its
 * signal). */
static void refused(struct call *c, const struct sproc *p, const char *what)
{
	if (errno == EAGAIN)
		mcp_call_finish(c, mcp_tool_error("the sandbox pipeline is behind (%u MiB of input and signals wait for it): "
						  "%s not sent; try again in a moment", CHAIN_CONTROL_QUEUED >> 20, what));
	else
		mcp_call_finish(c, mcp_tool_error("process %s is not in the pipeline any more", p->id));
}

void mcp_proc_write(struct call *c)
{
	struct sproc *p = named(c);
	if (!p)
		return;
	size_t n = 0;
	const char *data = rec_str(c->args, "data", &n);
	bool eof = false;
	rec_bool(c->args, "eof", &eof);
	double rows = 0, cols = 0;
	bool resize = rec_has(c->args, "rows") || rec_has(c->args, "cols");
	if (resize && (!rec_num(c->args, "rows", &rows) || !rec_num(c->args, "cols", &cols) || rows < 1 || rows > 1000 ||
		       cols < 1 || cols > 1000 || rows != floor(rows) || cols != floor(cols))) {
		mcp_call_finish(c, mcp_tool_error("process_write: rows and cols go together, whole numbers from 1 to 1000"));
		return;
	}
	if (n > WRITE_MAX) {
		mcp_call_finish(c, mcp_tool_error("process_write: data is %zu bytes, more than %u a call may write", n, WRITE_MAX));
		return;
	}
	if (p->state != P_RUNNING) {
		mcp_call_finish(c, mcp_tool_error("process %s is %s: it takes no input", p->id, pstate_names[p->state]));
		return;
	}
	bool sent = true, input = n || eof;
	if (input) {
		jv msg = jv_object_set(jv_object(), jv_string("input"), jv_string(p->run_id));
		msg = jv_object_set(msg, jv_string("data"), jv_string_sized(data ? data : "", (int)n));
		sent = chain_control(c->m->chain, p->run_id, jv_object_set(msg, jv_string("eof"), jv_bool(eof)));
	}
	if (!sent) {
		refused(c, p, "the input (and any resize) was");
		return;
	}
	if (resize) {
		jv msg = jv_object_set(jv_object(), jv_string("resize"), jv_string(p->run_id));
		msg = jv_object_set(msg, jv_string("rows"), jv_number(rows));
		if (!chain_control(c->m->chain, p->run_id, jv_object_set(msg, jv_string("cols"), jv_number(cols)))) {
			refused(c, p, input ? "the input was sent, the resize was" : "the resize was");
			return;
		}
	}
	jv o = jv_object_set(jv_object(), jv_string("process_id"), jv_string(p->id));
	o = jv_object_set(o, jv_string("written_bytes"), jv_number((double)n));
	o = jv_object_set(o, jv_string("eof"), jv_bool(eof));
	mcp_call_finish(c, mcp_tool_result(o, false));
}

void mcp_proc_signal(struct call *c)
{
	struct sproc *p = named(c);
	if (!p)
		return;
	const char *sig = rec_str(c->args, "signal", NULL);
	if (p->state != P_RUNNING) {
		mcp_call_finish(c, mcp_tool_error("process %s is %s: there is nothing to signal", p->id, pstate_names[p->state]));
		return;
	}
	jv msg = jv_object_set(jv_object(), jv_string("signal"), jv_string(p->run_id));
	if (!chain_control(c->m->chain, p->run_id, jv_object_set(msg, jv_string("name"), jv_string(sig ? sig : "")))) {
		refused(c, p, "the signal was");
		return;
	}
	jv o = jv_object_set(jv_object(), jv_string("process_id"), jv_string(p->id));
	mcp_call_finish(c, mcp_tool_result(jv_object_set(o, jv_string("signal"), jv_string(sig ? sig : "")), false));
}

void mcp_proc_list(struct call *c)
{
	char err[512];
	if (!sess_check(c->m->sessions, c->owner, c->args, err, sizeof err)) {
		mcp_call_finish(c, mcp_tool_error("%s", err));
		return;
	}
	const char *sid = rec_str(c->args, "session_id", NULL);
	jv o = jv_object_set(jv_object(), jv_string("processes"), mcp_proc_json(c->m, sid));
	mcp_call_finish(c, mcp_tool_result(jv_object_set(o, jv_string("ports"), mcp_port_json(c->m, sid)), false));
}

jv mcp_proc_json(struct mcp *m, const char *sid)
{
	jv list = jv_array();
	for (struct sproc *p = m->procs; p; p = p->next)
		if (!p->gone && !strcmp(p->sid, sid))
			list = jv_array_append(list, proc_json(p));
	return list;
}

void mcp_proc_session_end(struct mcp *m, const char *sid)
{
	for (struct sproc *p = m->procs, *next; p; p = next) {
		next = p->next;
		if (p->gone || strcmp(p->sid, sid))
			continue;
		p->gone = true;
		p->holds = false; /* the session is gone: nothing to release */
		/* Who waits on it hears it ended with its session. */
		for (struct call *c = m->calls, *cn; c; c = cn) {
			cn = c->link;
			if (c->state == C_WAITING && c->proc == p) {
				wait_clear(c);
				mcp_call_finish(c, mcp_tool_error("process %s ended with its session", p->id));
				cn = m->calls;
			}
		}
		if (p->state == P_EXITED)
			proc_free(p);
	}
}

bool mcp_proc_running(const struct mcp *m)
{
	for (const struct sproc *p = m->procs; p; p = p->next)
		if (p->state != P_EXITED)
			return true;
	return false;
}

void mcp_proc_free_all(struct mcp *m)
{
	while (m->procs) {
		m->procs->holds = false;
		proc_free(m->procs);
	}
}
