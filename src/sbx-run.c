/* sbx-run: jobs in, results out; the only tool that creates sandboxes.
 *
 * Theory of operation: one thread, one poll loop (lib/loop).  Input lines
 * are read only while fewer than -j jobs are in flight (and the reorder
 * window below has room), so a long input costs no memory.  Each job
 * becomes a run (lib/run): scratch directory, compile stage, run stage,
 * each a sandbox (lib/box) whose pidfd, pipes and timer are watched by the
 * same loop.  Every record read gets a number in input order, and results
 * go out in that order, one flushed line each (as parallel --keep-order):
 * a result that completes before an earlier one waits in a window of
 * ORDER_WINDOW(-j) results; with --unordered they go out as they complete.
 * Each result carries "input_line", its line in the input (or what an
 * earlier tool set), so any order can be matched back.  When the reader of
 * stdout goes away (EPIPE, or POLLERR on a pipe while idle) every sandbox
 * is killed at once and the exit status is 3.  SIGINT/SIGTERM/SIGHUP kill
 * every sandbox, write their results (status "cancelled") and
 * exit.
 *
 * Background jobs (a session's processes) run beside all that: they take
 * none of the -j slots, no session waits for them nor they for it, and
 * their results go out when they end, outside the input order.  While
 * one runs, --control feeds its input, signals it and sizes its terminal
 * (run.h's run_input, run_signal, run_resize), and --live lets all of
 * its output out (live.h's live_unbounded).  At most max_processes of one
 * session, and max_processes times max_sessions in all, run at once.
 * --connect hands sbx-mcp a connection to a port of a session's loopback
 * (a session's port opened to a person), made in the session's namespace
 * by the backend: sbx-mcp never enters it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backend.h"
#include "conf.h"
#include "job.h"
#include "loop.h"
#include "probe.h"
#include "proc.h"
#include "rec.h"
#include "req.h"
#include "status.h"
#include "ccache.h"
#include "cell.h"
#include "live.h"
#include "run.h"
#include "stage.h"
#include "state.h"
#include "util.h"

static const char synopsis[] =
	"usage: sbx-run [-c FILE] [-j N] [--unordered] [--progress] [--timings] [--no-cache] [--events FD [--live]] [--control FD] [--connect FD] [JOBS.jsonl...] > results.jsonl\n"
	"       sbx-run [-c FILE] --check[=backend] [--json]\n"
	"       sbx-run [-c FILE] --pull\n";

static void help(void)
{
	printf("%s\n"
	       "Run sbx-validate's jobs in sandboxes and write one result per job.\n"
	       "\n"
	       "  -j, --jobs N       run N jobs at once (default: max_concurrent); results\n"
	       "                     are written in input order\n"
	       "      --unordered    write results as they complete instead (each carries\n"
	       "                     \"input_line\" to match it back)\n"
	       "      --progress     show done/total, rate, ETA and counts by status on one\n"
	       "                     stderr line, and a summary at the end (the default when\n"
	       "                     stderr is a terminal; --no-progress turns it off)\n"
	       "      --timings      add a \"timings\" object (ms per phase) to each result\n"
	       "      --no-cache     compile every time (no compile cache; see compile_cache)\n"
	       "      --events FD    write {\"id\",\"event\"} lines to FD as stages start\n"
	       "                     (\"compile\", \"run\") and jobs end (\"done\", with \"status\")\n"
	       "      --live         with --events: also each job's output as it comes\n"
	       "                     (\"output\", with \"stream\" and \"data\"; every 100 ms at most,\n"
	       "                     64 KiB of a job in all; the result keeps all of it)\n"
	       "      --control FD   read {\"cancel\": ID} lines from FD: kill that job's\n"
	       "                     sandbox; its result has status \"cancelled\"; and for\n"
	       "                     a background job {\"input\": ID, \"data\": TEXT}, {\"signal\":\n"
	       "                     ID, \"name\": \"INT\"} and {\"resize\": ID, \"rows\", \"cols\"}\n"
	       "      --connect FD   a SOCK_SEQPACKET socket: {\"session_id\", \"port\", \"tag\"} asks\n"
	       "                     for a TCP connection to that port in the session's\n"
	       "                     loopback; the answer {\"tag\", \"error\"} carries its socket\n"
	       "      --check        report what the sandbox backend can do here: a table on\n"
	       "                     a terminal, else (or with --json) one JSON object;\n"
	       "                     =backend: only the backend's part (no languages), fast\n"
	       "      --pull         docker backend: pull every configured image (progress\n"
	       "                     on stderr), then exit\n"
	       "  -c, --config FILE  configuration file\n"
	       "  -h, --help         show this help\n"
	       "      --version      show the version\n"
	       "\n"
	       "Environment: SBX_CONF (configuration file), SBX_BACKEND (native|docker),\n"
	       "DOCKER_HOST (unix:// or tcp://, docker backend), SBX_TRACE (as --timings).\n"
	       "\n"
	       "Exit status: 0 every job ran (whatever its status), 1 some records were\n"
	       "invalid, internal errors or cancelled, 2 usage or configuration error, 3\n"
	       "input/output error, 4 the sandbox backend is unusable here.\n",
	       synopsis);
}

struct state {
	struct run_env env;
	struct backend *def;   /* the configuration's backend: its sandboxes are kept warm */
	struct live *live;     /* --live, or NULL */
	struct loop *loop;
	struct rec_reader in;
	size_t active, max;
	bool redispatch;       /* slots came back (slots_give): dispatch after this loop turn */
	struct run **runs;     /* in flight, for cancellation */
	struct run **bg;       /* background jobs in flight (none of -j's) */
	size_t nbg, bgmax;
	/* Jobs of a session whose workspace another job in flight has: they
	 * wait, in order, until it is free (see dispatch). */
	struct held { jv rec; const char *workspace; uint64_t seq; struct held *next; } *held;
	size_t nheld;
	/* Input order: every record read gets the next seq; its result waits
	 * in window[seq % cap] until every earlier one is out. */
	bool unordered;
	uint64_t seq, next_out;
	jv *window;
	size_t cap;
	bool in_eof, stopping, out_fifo, out_failed;
	int sigfd, exit_sig;
	int events_fd, control_fd; /* -1 unless given */
	int connect_fd;            /* --connect's socket, or -1 */
	struct rec_reader control;
	char *out;
	size_t out_len, out_cap;
	int status;
	/* --progress: results out, by status, of total (0: not known) */
	bool progress, progress_tty;
	uint64_t total, done, by_status[STATUS_NSTATUSES + 1]; /* the last: a status of no name */
	double t0, drawn;
};

static struct state S;

static void dispatch(void);
static void event(jv ev);

/* ---- output ---------------------------------------------------------------- */

/* Output failed (its reader is gone, most often): every sandbox is
 * killed at once, nothing more is read, and the exit status is 3. */
static void output_failed(const char *why)
{
	if (!S.out_failed)
		util_warn("error writing output: %s; stopping", why);
	S.out_failed = true;
	S.stopping = true; /* no job more */
	S.out_len = 0;
}

static void on_stdout(struct loop *l, int fd, short rev, void *arg)
{
	if (S.out_len == 0) {
		/* Idle, watched for POLLERR only: the pipe's reader closed it. */
		if (rev & (POLLERR | POLLHUP))
			output_failed("the reader closed the pipe");
		loop_unwatch(l, fd);
		return;
	}
	/* At most PIPE_BUF after POLLOUT: never blocks the loop. */
	size_t n = S.out_len < 4096 ? S.out_len : 4096;
	ssize_t w = write(fd, S.out, n);
	if (w < 0 && errno != EINTR && errno != EAGAIN)
		output_failed(strerror(errno));
	else if (w > 0) {
		memmove(S.out, S.out + w, S.out_len - (size_t)w);
		S.out_len -= (size_t)w;
	}
	/* Between records a pipe is still watched, for its reader leaving
	 * (poll reports POLLERR whatever was asked). */
	if (S.out_failed)
		loop_unwatch(l, fd);
	else if (S.out_len == 0)
		loop_watch(l, fd, 0, on_stdout, NULL);
	(void)arg;
}

/* ---- progress ------------------------------------------------------------- */


/* One stderr line, drawn over itself: done/total, rate, ETA, counts. */
static void draw_progress(bool last)
{
	double now = util_now_ms();
	/* a terminal's line is redrawn; a file gets a line every 5 s */
	if (!last && now - S.drawn < (S.progress_tty ? 100 : 5000))
		return;
	S.drawn = now;
	double secs = (now - S.t0) / 1000, rate = secs > 0 ? (double)S.done / secs : 0;
	char line[512];
	int n = snprintf(line, sizeof line, "%ssbx-run: %llu", S.progress_tty ? "\r\033[K" : "", (unsigned long long)S.done);
	if (S.total)
		n += snprintf(line + n, sizeof line - (size_t)n, "/%llu (%.0f%%)", (unsigned long long)S.total,
			      100.0 * (double)S.done / (double)S.total);
	n += snprintf(line + n, sizeof line - (size_t)n, last ? " done in %.1f s, %.1f/s" : ", %.1f/s", last ? secs : rate, rate);
	if (!last && S.total && rate > 0 && S.done < S.total) {
		double eta = (double)(S.total - S.done) / rate;
		n += snprintf(line + n, sizeof line - (size_t)n, ", ETA %dm%02ds", (int)eta / 60, (int)eta % 60);
	}
	const char *sep = "; ";
	for (size_t i = 0; i <= STATUS_NSTATUSES && n < (int)sizeof line - 40; i++)
		if (S.by_status[i]) {
			n += snprintf(line + n, sizeof line - (size_t)n, "%s%s %llu", sep, i < STATUS_NSTATUSES ? status_name(i) : "other",
				      (unsigned long long)S.by_status[i]);
			sep = ", ";
		}
	if (last || !S.progress_tty)
		n += snprintf(line + n, sizeof line - (size_t)n, "\n");
	if (n > (int)sizeof line - 1)
		n = (int)sizeof line - 1;
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

static void count_result(const char *st)
{
	int i = status_find(st);
	S.by_status[i >= 0 && i < STATUS_NSTATUSES ? i : STATUS_NSTATUSES]++;
	S.done++;
	if (S.progress)
		draw_progress(false);
}

static void emit(jv rec)
{
	const char *st = rec_str(rec, "status", NULL);
	count_result(st);
	if (st && status_is(st, STF_CALL) && S.status == EXIT_OK)
		S.status = EXIT_RECORDS;
	size_t n;
	char *line = rec_dump(rec, &n);
	if (S.out_failed) {
		free(line);
		return;
	}
	if (!S.out_fifo) {
		/* A file or a terminal: a plain write does not stall for long. */
		if (util_write_all(STDOUT_FILENO, line, n) < 0)
			output_failed(strerror(errno));
		free(line);
		return;
	}
	if (S.out_len + n > S.out_cap) {
		S.out_cap = (S.out_len + n) * 2;
		S.out = util_xrealloc(S.out, S.out_cap);
	}
	memcpy(S.out + S.out_len, line, n);
	S.out_len += n;
	free(line);
	loop_watch(S.loop, STDOUT_FILENO, POLLOUT, on_stdout, NULL);
}

/* ---- runs ----------------------------------------------------------------- */

static void forget(struct run *r)
{
	for (size_t i = 0; i < S.max; i++)
		if (S.runs[i] == r)
			S.runs[i] = NULL;
}

/* The results that may wait for an earlier one: enough for every slot
 * to finish several jobs past a slow one before reading stops. */
#define ORDER_WINDOW(max) ((max) * 8 < 16 ? 16 : (max) * 8)
static bool window_room(void)
{
	return S.unordered || S.seq - S.next_out < S.cap;
}

/* The result of record seq: out now, or when its turn comes. */
static void deliver(uint64_t seq, jv result)
{
	if (S.unordered) {
		if (jv_get_kind(result) == JV_KIND_NULL)
			jv_free(result);
		else
			emit(result);
		return;
	}
	S.window[seq % S.cap] = result;
	while (S.next_out < S.seq && jv_is_valid(S.window[S.next_out % S.cap])) {
		jv next = S.window[S.next_out % S.cap];
		if (jv_get_kind(next) == JV_KIND_NULL) /* a background job's turn: its result goes out when it ends */
			jv_free(next);
		else
			emit(next);
		S.window[S.next_out % S.cap] = jv_invalid();
		S.next_out++;
	}
}

static void run_done(struct run *r, jv result, void *arg)
{
	/* --events: each job as it finishes, whatever the output order */
	jv ev = jv_object_set(jv_object(), jv_string(REQ_KEY(id)), jv_string(run_id(r)));
	ev = jv_object_set(ev, jv_string("event"), jv_string("done"));
	const char *st = rec_str(result, "status", NULL);
	if (S.live)
		live_end(S.live, run_id(r));
	event(jv_object_set(ev, jv_string("status"), st ? jv_string(st) : jv_null()));
	if (run_background(r)) {
		for (size_t i = 0; i < S.nbg; i++)
			if (S.bg[i] == r)
				S.bg[i] = S.bg[--S.nbg];
		emit(result);
		run_free(r);
		dispatch();
		return;
	}
	deliver((uint64_t)(uintptr_t)arg, result);
	forget(r);
	run_free(r);
	S.active--;
	dispatch();
}

/* A judged job's tests take the -j slots no job has (trial.h): sandboxes
 * at once stay at most -j. */
static size_t slots_take(struct run_env *e, size_t want)
{
	(void)e;
	size_t n = S.max - S.active < want ? S.max - S.active : want;
	S.active += n;
	return n;
}

static void slots_give(struct run_env *e, size_t n)
{
	(void)e;
	S.active -= n;
	/* From the loop, not inside the trial that gave them. */
	S.redispatch = true;
}

static void cancel_all(void)
{
	for (size_t i = 0; i < S.max; i++)
		if (S.runs[i])
			run_cancel(S.runs[i]);
	/* From the last: a cancel may end a job at once (one parked on a
	 * compile in flight), which moves the last one into its place. */
	for (size_t i = S.nbg; i-- > 0;)
		if (i < S.nbg)
			run_cancel(S.bg[i]);
	/* Held jobs never started: each still gets its result. */
	while (S.held) {
		struct held *h = S.held;
		S.held = h->next;
		jv rec = jv_object_set(h->rec, jv_string("status"), jv_string(STATUS(cancelled)));
		deliver(h->seq, jv_object_set(rec, jv_string("error"), jv_string(STATUS(cancelled))));
		free(h);
	}
	S.nheld = 0;
}

/* A job's session workspace as its record names it (borrowed), or NULL;
 * run_start checks it properly. */
static const char *workspace_of(jv rec)
{
	jv exec = rec_get(rec, REQ_KEY(exec));
	const char *ws = jv_get_kind(exec) == JV_KIND_OBJECT ? rec_str(exec, "workspace", NULL) : NULL;
	jv_free(exec); /* rec still holds it */
	return ws;
}

/* Whether a record is a background job (run_start checks it properly). */
static bool background_of(jv rec)
{
	jv exec = rec_get(rec, REQ_KEY(exec));
	bool bg = false;
	if (jv_get_kind(exec) == JV_KIND_OBJECT)
		rec_bool(exec, REQ_KEY(background), &bg);
	jv_free(exec);
	return bg;
}

/* A background job: at once, unless its session (or this process) has
 * as many as it may. */
static void start_background(jv rec, uint64_t seq)
{
	deliver(seq, jv_null());
	const char *ws = workspace_of(rec);
	size_t same = 0;
	for (size_t i = 0; ws && i < S.nbg; i++)
		same += run_workspace(S.bg[i]) && !strcmp(run_workspace(S.bg[i]), ws);
	if (S.nbg >= S.bgmax || same >= S.env.conf->max_processes) {
		/* (a result: the job without sbx-run's own fields, as run.c's) */
		rec = jv_object_delete(rec, jv_string(REQ_KEY(exec)));
		rec = jv_object_delete(rec, jv_string(REQ_KEY(compile_limits)));
		rec = jv_object_set(rec, jv_string("status"), jv_string(STATUS(internal_error)));
		rec = jv_object_set(rec, jv_string("error"),
				    jv_string_fmt("too many background jobs at once (max_processes %llu %s)",
						  (unsigned long long)S.env.conf->max_processes,
						  same >= S.env.conf->max_processes ? "in its session" : "per session, for each of max_sessions"));
		emit(rec);
		return;
	}
	jv immediate;
	struct run *r = run_start(&S.env, rec, run_done, (void *)(uintptr_t)seq, &immediate);
	if (!r) {
		emit(immediate);
		return;
	}
	S.bg[S.nbg++] = r;
	if (S.live)
		live_unbounded(S.live, run_id(r));
}

/* The run in flight with this id, background or not, or NULL. */
static struct run *run_by_id(const char *id)
{
	for (size_t i = 0; i < S.max; i++)
		if (S.runs[i] && !strcmp(run_id(S.runs[i]), id))
			return S.runs[i];
	for (size_t i = 0; i < S.nbg; i++)
		if (!strcmp(run_id(S.bg[i]), id))
			return S.bg[i];
	return NULL;
}

/* Is that workspace a job in flight's, or a held job's before this one? */
static bool workspace_busy(const char *ws, const struct held *upto)
{
	for (size_t i = 0; i < S.max; i++)
		if (S.runs[i] && run_workspace(S.runs[i]) && !strcmp(run_workspace(S.runs[i]), ws))
			return true;
	for (const struct held *h = S.held; h && h != upto; h = h->next)
		if (!strcmp(h->workspace, ws))
			return true;
	return false;
}

static void start(jv rec, uint64_t seq)
{
	jv immediate;
	/* Its slot is taken first: a judged job takes the free ones as it
	 * starts (slots_take), which may be inside run_start. */
	S.active++;
	struct run *r = run_start(&S.env, rec, run_done, (void *)(uintptr_t)seq, &immediate);
	if (!r) {
		S.active--;
		deliver(seq, immediate);
		return;
	}
	for (size_t i = 0; i < S.max; i++)
		if (!S.runs[i]) {
			S.runs[i] = r;
			break;
		}
}

/* --events: one line per stage start.  The reader is the caller that asked
 * for it (sbx-mcp); a write that fails ends the reports, not the runs. */
static void event(jv ev)
{
	if (S.events_fd < 0) {
		jv_free(ev);
		return;
	}
	size_t n;
	char *line = rec_dump(ev, &n);
	if (util_write_all(S.events_fd, line, n) < 0) {
		util_warn("--events: %s; no more events", strerror(errno));
		close(S.events_fd);
		S.events_fd = -1;
	}
	free(line);
}

static void live_emit(jv ev, void *arg)
{
	(void)arg;
	event(ev);
}

static void on_output(struct run *r, int stream, const char *data, size_t len)
{
	live_add(S.live, run_id(r), stream, data, len);
}

static void on_stage(struct run *r, const char *stage)
{
	jv ev = jv_object_set(jv_object(), jv_string(REQ_KEY(id)), jv_string(run_id(r)));
	event(jv_object_set(ev, jv_string("event"), jv_string(stage)));
}

/* A control message for a background job that it could not take: an
 * event, so that the caller can say so. */
static void control_refused(const char *id, const char *what, const char *why)
{
	jv ev = jv_object_set(jv_object(), jv_string(REQ_KEY(id)), jv_string(id));
	ev = jv_object_set(ev, jv_string("event"), jv_string(what));
	event(jv_object_set(ev, jv_string("error"), jv_string(why)));
}

/* A background job's input, signal or terminal size (see the theory of
 * operation); false if msg is none of those. */
static bool control_process(jv msg)
{
	const char *id;
	char why[256] = "";
	struct run *r;
	if ((id = rec_str(msg, "input", NULL))) {
		size_t len = 0;
		const char *data = rec_str(msg, "data", &len);
		bool eof = false;
		rec_bool(msg, "eof", &eof);
		if (!(r = run_by_id(id)))
			snprintf(why, sizeof why, "no such job in flight");
		else
			run_input(r, data ? data : "", data ? len : 0, eof, why, sizeof why);
		if (why[0])
			control_refused(id, "input", why);
		return true;
	}
	if ((id = rec_str(msg, "signal", NULL))) {
		const char *name = rec_str(msg, "name", NULL);
		int sig = name ? proc_signal_number(name) : 0;
		if (!sig)
			snprintf(why, sizeof why, "\"name\" must be one of %s", proc_signal_names);
		else if (!(r = run_by_id(id)) || !run_signal(r, sig))
			snprintf(why, sizeof why, "its program is not running (not started, or ended)");
		if (why[0])
			control_refused(id, "signal", why);
		return true;
	}
	if ((id = rec_str(msg, "resize", NULL))) {
		double rows = 0, cols = 0;
		if (!rec_num(msg, "rows", &rows) || !rec_num(msg, "cols", &cols) || rows != floor(rows) || cols != floor(cols) ||
		    rows < 1 || rows > 1000 || cols < 1 || cols > 1000)
			snprintf(why, sizeof why, "\"rows\" and \"cols\" must be whole numbers from 1 to 1000");
		else if (!(r = run_by_id(id)) || !run_resize(r, (unsigned)rows, (unsigned)cols))
			snprintf(why, sizeof why, "it has no terminal, or its program ended");
		if (why[0])
			control_refused(id, "resize", why);
		return true;
	}
	return false;
}

/* The background jobs of workspace ws are cancelled. */
static void cancel_background(const char *ws)
{
	for (size_t i = S.nbg; i-- > 0;) /* (from the last: see cancel_all) */
		if (i < S.nbg && run_workspace(S.bg[i]) && !strcmp(run_workspace(S.bg[i]), ws))
			run_cancel(S.bg[i]);
}

/* --control: {"cancel": ID} kills the sandboxes of the job with that id
 * (an id not in flight, finished or never seen, is ignored);
 * {"end_session": SID} kills that session's kernels and background jobs;
 * {"restore_session": SID} too, and the session lives on (its workspace
 * was replaced by a checkpoint: sbx-mcp's checkpoint_restore);
 * {"input": ID, "data": TEXT, "eof": BOOL}, {"signal": ID, "name": SIG}
 * and {"resize": ID, "rows": R, "cols": C} go to a background job. */
static void on_control(struct loop *l, int fd, short rev, void *arg)
{
	ssize_t n = rec_fill(&S.control);
	jv msg;
	enum rec_status st;
	while ((st = rec_next(&S.control, &msg)) == REC_OK || st == REC_INVALID) {
		if (st == REC_OK && control_process(msg)) {
			jv_free(msg);
			continue;
		}
		const char *id = st == REC_OK ? rec_str(msg, "cancel", NULL) : NULL;
		const char *sid = st == REC_OK ? rec_str(msg, "end_session", NULL) : NULL;
		const char *rsid = st == REC_OK ? rec_str(msg, "restore_session", NULL) : NULL;
		if (rsid && state_session_id_ok(rsid, strlen(rsid))) {
			char *ws = state_session_dir(S.env.conf, rsid);
			cell_restored(S.env.kernels, ws);
			cancel_background(ws);
			free(ws);
		} else if (sid && state_session_id_ok(sid, strlen(sid))) {
			char *ws = state_session_dir(S.env.conf, sid);
			cell_end(S.env.kernels, ws);
			run_session_end(&S.env, ws);
			cancel_background(ws);
			free(ws);
		} else if (!id)
			util_warn("--control: line %lu is not {\"cancel\": ID}, {\"end_session\": SID}, {\"restore_session\": SID}, "
				  "{\"input\": ID, ...}, "
				  "{\"signal\": ID, ...} or {\"resize\": ID, ...}", S.control.lineno);
		struct run *r = id ? run_by_id(id) : NULL;
		if (r)
			run_cancel(r);
		jv_free(msg);
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		loop_unwatch(l, fd);
	(void)rev;
	(void)arg;
}

/* --connect: a connection to a session's port, for sbx-mcp to open it to
 * a person.  Each message {"session_id": SID, "port": P, "tag": T} gets
 * one back, {"tag": T, "error": null} with the connected socket, made in
 * the session's loopback namespace (run_session_socket), or {"tag": T,
 * "error": WHY}.  A connection still being made is watched: loopback
 * answers at once unless its listener's backlog is full, which costs us
 * nothing but a watch until CONNECT_MS. */
#define CONNECT_MS 5000
struct pending_conn {
	int sock, timer;
	jv tag;
};

static void connect_reply(jv tag, int sock, const char *why)
{
	jv r = jv_object_set(jv_object(), jv_string("tag"), tag);
	r = jv_object_set(r, jv_string("error"), why ? jv_string(why) : jv_null());
	size_t n;
	char *line = rec_dump(r, &n);
	if (proc_send_fd(S.connect_fd, line, n, why ? -1 : sock) < 0)
		util_warn("--connect: %s", strerror(errno));
	free(line);
	if (sock >= 0)
		close(sock);
}

static void conn_done(struct pending_conn *pc, const char *why)
{
	loop_unwatch(S.loop, pc->sock);
	loop_unwatch(S.loop, pc->timer);
	close(pc->timer);
	connect_reply(pc->tag, pc->sock, why);
	free(pc);
}

static void on_conn_ready(struct loop *l, int fd, short rev, void *arg)
{
	struct pending_conn *pc = arg;
	int e = 0;
	socklen_t el = sizeof e;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	conn_done(pc, e ? strerror(e) : NULL);
	(void)l, (void)rev;
}

static void on_conn_timeout(struct loop *l, int fd, short rev, void *arg)
{
	conn_done(arg, "the port did not accept the connection within 5 s");
	(void)l, (void)fd, (void)rev;
}

static void on_connect(struct loop *l, int fd, short rev, void *arg)
{
	char buf[4096], why[300] = "";
	int junk;
	ssize_t n = proc_recv_fd(fd, buf, sizeof buf, &junk);
	if (junk >= 0)
		close(junk);
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			loop_unwatch(l, fd);
		return;
	}
	jv msg = jv_parse_sized(buf, (int)n);
	jv tag = jv_get_kind(msg) == JV_KIND_OBJECT ? rec_get(msg, "tag") : jv_null();
	if (!jv_is_valid(tag))
		tag = jv_null();
	const char *sid = jv_get_kind(msg) == JV_KIND_OBJECT ? rec_str(msg, "session_id", NULL) : NULL;
	double port = 0;
	int sock = -1;
	if (!sid || !state_session_id_ok(sid, strlen(sid)) || !rec_num(msg, "port", &port) || port != floor(port) || port < 1 ||
	    port > 65535)
		snprintf(why, sizeof why, "a request is {\"session_id\": SID, \"port\": 1 to 65535, \"tag\": ANY}");
	else {
		char *ws = state_session_dir(S.env.conf, sid);
		sock = run_session_socket(&S.env, ws, why, sizeof why);
		free(ws);
	}
	jv_free(msg);
	if (sock < 0) {
		connect_reply(tag, -1, why);
		return;
	}
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(sock, (struct sockaddr *)&to, sizeof to) == 0) {
		connect_reply(tag, sock, NULL);
		return;
	}
	if (errno != EINPROGRESS) {
		snprintf(why, sizeof why, "%s", strerror(errno));
		close(sock);
		connect_reply(tag, -1, why);
		return;
	}
	struct pending_conn *pc = util_xalloc(sizeof *pc);
	*pc = (struct pending_conn){ .sock = sock, .tag = tag,
				     .timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) };
	struct itimerspec its = { .it_value = { CONNECT_MS / 1000, 0 } };
	if (pc->timer >= 0)
		timerfd_settime(pc->timer, 0, &its, NULL);
	loop_watch(l, sock, POLLOUT, on_conn_ready, pc);
	if (pc->timer >= 0)
		loop_watch(l, pc->timer, POLLIN, on_conn_timeout, pc);
	(void)rev, (void)arg;
}

static void on_stdin(struct loop *l, int fd, short rev, void *arg)
{
	ssize_t n = rec_fill(&S.in);
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		util_warn("reading input: %s", strerror(errno));
		S.status = EXIT_IO;
		S.in_eof = true;
	}
	dispatch();
	(void)l;
	(void)fd;
	(void)rev;
	(void)arg;
}

/* Jobs of one session run one at a time: two at once could each change
 * what the other's next stage binds (a compiled binary swapped between
 * its compile and run stages would run as the compiler's output). */
static void dispatch(void)
{
	for (struct held **p = &S.held; *p && !S.stopping && S.active < S.max;) {
		struct held *h = *p;
		if (workspace_busy(h->workspace, h)) {
			p = &h->next;
			continue;
		}
		*p = h->next;
		S.nheld--;
		jv rec = h->rec;
		uint64_t seq = h->seq;
		free(h);
		start(rec, seq);
	}
	while (!S.stopping && !S.in_eof && S.active < S.max && S.nheld < S.max && window_room()) {
		jv rec;
		enum rec_status st = rec_next(&S.in, &rec);
		if (st == REC_AGAIN)
			break;
		if (st == REC_EOF || st == REC_ERROR) {
			S.in_eof = true;
			break;
		}
		uint64_t seq = S.seq++;
		double total;
		if (S.progress && st == REC_OK && rec_num(rec, "input_total", &total) && total > (double)S.total && total < 1e15)
			S.total = (uint64_t)total;
		if (st == REC_OK && !rec_has(rec, "input_line"))
			rec = jv_object_set(rec, jv_string("input_line"), jv_number((double)S.in.lineno));
		if (st == REC_INVALID || rec_has_status(rec)) {
			deliver(seq, rec);
			continue;
		}
		if (st == REC_OK && background_of(rec)) {
			start_background(rec, seq);
			continue;
		}
		const char *ws = workspace_of(rec);
		if (ws && workspace_busy(ws, NULL)) {
			struct held *h = util_xalloc(sizeof *h), **tail = &S.held;
			*h = (struct held){ .rec = rec, .workspace = ws, .seq = seq };
			while (*tail)
				tail = &(*tail)->next;
			*tail = h;
			S.nheld++;
			continue;
		}
		start(rec, seq);
	}
	/* No more jobs will come: warm sandboxes would be wasted, unless a
	 * judged job has tests still to start. */
	bool tests_to_come = false;
	for (size_t i = 0; i < S.max && !tests_to_come; i++)
		tests_to_come = S.runs[i] && run_tests_pending(S.runs[i]);
	if (S.stopping || (S.in_eof && !tests_to_come))
		S.def->ops->pool(S.def, S.loop, 0, false);
	bool want_input = !S.stopping && !S.in_eof && S.active < S.max && S.nheld < S.max && window_room();
	if (want_input)
		loop_watch(S.loop, STDIN_FILENO, POLLIN, on_stdin, NULL);
	else
		loop_unwatch(S.loop, STDIN_FILENO);
}

static void on_signal(struct loop *l, int fd, short rev, void *arg)
{
	struct signalfd_siginfo si;
	if (read(fd, &si, sizeof si) != (ssize_t)sizeof si)
		return;
	if (!S.stopping)
		util_warn("%s: stopping; killing %zu running sandbox(es)", strsignal((int)si.ssi_signo), S.active + S.nbg);
	S.stopping = true;
	S.exit_sig = (int)si.ssi_signo;
	cancel_all();
	dispatch();
	(void)l;
	(void)rev;
	(void)arg;
}

/* ---- --check ----------------------------------------------------------------- */

/* --check for a person (stdout a terminal, no --json): the report as
 * aligned lines, each section on one line where it fits; languages and
 * fixes one per line.  The JSON is the contract; this is a reading of it. */
static bool check_json;
static bool check_brief; /* --check=backend */

static void table_value(FILE *f, jv v)
{
	switch (jv_get_kind(v)) {
	case JV_KIND_TRUE: fputs("yes", f); break;
	case JV_KIND_FALSE: fputs("no", f); break;
	case JV_KIND_NULL: fputs("-", f); break;
	case JV_KIND_STRING: fputs(jv_string_value(v), f); break;
	case JV_KIND_OBJECT: {
		/* ok/error first, then the rest as key=value */
		jv ok = jv_object_get(jv_copy(v), jv_string("ok"));
		bool first = true;
		if (jv_get_kind(ok) == JV_KIND_TRUE || jv_get_kind(ok) == JV_KIND_FALSE) {
			fputs(jv_get_kind(ok) == JV_KIND_TRUE ? "ok" : "NOT OK", f);
			first = false;
		}
		jv_free(ok);
		jv_object_foreach(v, k, x) {
			if (strcmp(jv_string_value(k), "ok")) {
				fprintf(f, "%s%s=", first ? "" : ", ", jv_string_value(k));
				table_value(f, jv_copy(x));
				first = false;
			}
			jv_free(k);
			jv_free(x);
		}
		break;
	}
	case JV_KIND_ARRAY: {
		/* Objects in a list (a section's languages) are bracketed, each
		 * "name key=value ...", "; " between them: their own commas do
		 * not run into the section's. */
		jv first = jv_array_length(jv_copy(v)) ? jv_array_get(jv_copy(v), 0) : jv_null();
		bool objects = jv_get_kind(first) == JV_KIND_OBJECT;
		jv_free(first);
		if (jv_array_length(jv_copy(v)) == 0)
			fputs("none", f);
		fputs(objects ? "[" : "", f);
		jv_array_foreach(v, i, x) {
			fputs(i ? objects ? "; " : " " : "", f);
			jv name = objects && jv_get_kind(x) == JV_KIND_OBJECT ? jv_object_get(jv_copy(x), jv_string("name")) : jv_invalid();
			if (jv_get_kind(name) == JV_KIND_STRING) {
				fprintf(f, "%s ", jv_string_value(name));
				x = jv_object_delete(x, jv_string("name"));
			}
			jv_free(name);
			table_value(f, x);
		}
		fputs(objects ? "]" : "", f);
		break;
	}
	default: {
		jv s = jv_dump_string(jv_copy(v), 0);
		fputs(jv_string_value(s), f);
		jv_free(s);
	}
	}
	jv_free(v);
}

static void check_write(jv o)
{
	if (check_json || !isatty(STDOUT_FILENO)) {
		rec_write(o);
		return;
	}
	jv_object_foreach(o, k, v) {
		const char *key = jv_string_value(k);
		jv first = jv_get_kind(v) == JV_KIND_ARRAY && jv_array_length(jv_copy(v)) > 0 ? jv_array_get(jv_copy(v), 0) : jv_invalid();
		bool list = jv_is_valid(first) && (jv_get_kind(first) == JV_KIND_OBJECT || !strcmp(key, "fixes"));
		jv_free(first);
		if (!list) {
			printf("%-18s ", key);
			table_value(stdout, v);
			putchar('\n');
		} else {
			printf("%s:\n", key);
			jv_array_foreach(v, i, x) {
				/* an object with a name: "  name  the rest" */
				jv name = jv_get_kind(x) == JV_KIND_OBJECT ? jv_object_get(jv_copy(x), jv_string("name")) : jv_invalid();
				if (jv_get_kind(name) == JV_KIND_STRING) {
					printf("  %-28s ", jv_string_value(name));
					jv rest = jv_object_delete(jv_copy(x), jv_string("name"));
					table_value(stdout, rest);
				} else {
					fputs("  - ", stdout);
					table_value(stdout, jv_copy(x));
				}
				jv_free(name);
				jv_free(x);
				putchar('\n');
			}
			jv_free(v);
		}
		jv_free(k);
	}
	jv_free(o);
}

/* Where this user's state and history are, and why, for both backends. */
static jv check_state(const struct conf *c, jv *fixes)
{
	jv st = jv_object_set(jv_object(), jv_string("dir"), jv_string(c->state_dir));
	st = jv_object_set(st, jv_string("history"), jv_string(state_history(c)));
	st = jv_object_set(st, jv_string("per_user"), jv_bool(c->state_per_user));
	if (c->state_note) {
		st = jv_object_set(st, jv_string("why"), jv_string(c->state_note));
		if (!c->state_per_user)
			*fixes = jv_array_append(*fixes, jv_string(c->state_note));
	}
	return st;
}

/* Whether cells (run_cell) can run: the backend must hold a kernel's
 * channel, and each kernel's files (absolute paths in its command) must be
 * where the configuration says. */
static jv check_kernels(const struct conf *c, const struct backend *be, bool usable, jv *fixes)
{
	jv k = jv_object_set(jv_object(), jv_string("supported"), jv_bool(usable && be->kernels));
	if (!be->kernels)
		k = jv_object_set(k, jv_string("why"), jv_string("the docker backend runs no kernels: run_cell needs the native backend"));
	jv langs = jv_array();
	bool fix = false;
	for (size_t i = 0; i < c->nlangs; i++) {
		const struct conf_lang *l = &c->langs[i];
		if (!l->kernel)
			continue;
		const char *missing = NULL;
		for (char **a = l->kernel + 1; *a && !missing && !l->rootfs; a++)
			if (**a == '/' && access(*a, R_OK) < 0)
				missing = *a;
		jv e = jv_object_set(jv_object(), jv_string("name"), jv_string(l->name));
		e = jv_object_set(e, jv_string("available"), jv_bool(!missing && be->kernels));
		if (missing) {
			char *why = util_fmt("kernel file %s is missing", missing);
			e = jv_object_set(e, jv_string("error"), jv_string(why));
			free(why);
			fix = true;
		}
		langs = jv_array_append(langs, e);
	}
	if (fix)
		*fixes = jv_array_append(*fixes, jv_string("install the kernels run_cell uses: make deps (as root), or make install"));
	k = jv_object_set(k, jv_string("languages"), langs);
	return jv_object_set(k, jv_string("idle_seconds"), jv_number((double)c->kernel_idle_ms / 1000));
}

/* The host ids sandboxes run as (conf_uid_problem has checked that root's
 * belong to no one): root's four from uid, an ordinary user's own. */
static jv check_ids(const struct conf *c)
{
	bool root = geteuid() == 0;
	jv ids = jv_object();
	for (unsigned k = 0; k < STATE_NUIDS; k++)
		ids = jv_object_set(ids, jv_string(state_uid_roles[k].key),
				    jv_number(root ? (double)state_uid(c, k) : (double)geteuid()));
	return ids;
}

/* --check: the backend's own report, then where the state is and each
 * language as a stage of it sees it. */
static int check(struct conf *c, struct backend *be)
{
	bool degraded = false;
	jv o = be->ops->check(be, &degraded);
	jv fixes = jv_object_get(jv_copy(o), jv_string("fixes"));
	jv usable_v = jv_object_get(jv_copy(o), jv_string("usable"));
	bool usable = jv_get_kind(usable_v) == JV_KIND_TRUE;
	jv_free(usable_v);
	if (jv_get_kind(fixes) != JV_KIND_ARRAY) {
		jv_free(fixes);
		fixes = jv_array();
	}
	o = jv_object_delete(o, jv_string("fixes"));
	/* (--check=backend, sbx-mcp's start: what this host holds of the
	 * limits, for its tools' descriptions, without a sandbox per language) */
	if (!check_brief) {
		o = jv_object_set(o, jv_string("state"), check_state(c, &fixes));
		o = jv_object_set(o, jv_string("host_ids"), check_ids(c));
		o = jv_object_set(o, jv_string("languages"), bk_check_languages(be, usable, &fixes));
		o = jv_object_set(o, jv_string("kernels"), check_kernels(c, be, usable, &fixes));
	}
	o = jv_object_set(o, jv_string("fixes"), fixes);
	check_write(o);
	int cs = util_close_stdout();
	if (cs)
		return cs;
	return !usable ? EXIT_STORE : degraded ? EXIT_RECORDS : EXIT_OK;
}

/* ---- main ------------------------------------------------------------------- */

struct opts {
	const char *conf_path;
	long jobs;             /* -j, 0: the configuration's */
	bool check, pull, use_cache, timings, live;
	int progress;          /* --progress, --no-progress, else (-1) on a terminal */
};

static void options(int argc, char **argv, struct opts *o)
{
	o->use_cache = true;
	o->timings = getenv("SBX_TRACE") != NULL;
	o->progress = -1;
	S.events_fd = S.control_fd = S.connect_fd = -1;
	static const struct option opts[] = {
		{ "events", required_argument, NULL, 'E' },
		{ "control", required_argument, NULL, 'K' },
		{ "connect", required_argument, NULL, 'O' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "check", optional_argument, NULL, 'C' },
		{ "pull", no_argument, NULL, 'P' },
		{ "no-cache", no_argument, NULL, 'N' },
		{ "timings", no_argument, NULL, 'T' },
		{ "unordered", no_argument, NULL, 'U' },
		{ "json", no_argument, NULL, 'J' },
		{ "progress", no_argument, NULL, 'G' },
		{ "no-progress", no_argument, NULL, 'g' },
		{ "live", no_argument, NULL, 'L' },
		UTIL_COMMON_OPTIONS,
	};
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":c:j:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': o->conf_path = optarg; break;
		case 'j': {
			int64_t v;
			if (!util_parse_i64(optarg, 1, 4096, &v))
				util_usage_error(synopsis, "-j: \"%s\" is not a number from 1 to 4096", optarg);
			o->jobs = (long)v;
			break;
		}
		case 'O': {
			int64_t fd;
			int type = 0;
			socklen_t tl = sizeof type;
			if (!util_parse_i64(optarg, 3, 1 << 20, &fd) || getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
			    type != SOCK_SEQPACKET)
				util_usage_error(synopsis, "--connect: \"%s\" is not a unix SOCK_SEQPACKET socket's descriptor", optarg);
			S.connect_fd = (int)fd;
			fcntl((int)fd, F_SETFD, FD_CLOEXEC);
			break;
		}
		case 'E':
		case 'K': {
			int64_t fd;
			struct stat fst;
			if (!util_parse_i64(optarg, 3, 1 << 20, &fd) || fstat((int)fd, &fst) < 0)
				util_usage_error(synopsis, "%s: \"%s\" is not an open file descriptor above 2",
						 ch == 'E' ? "--events" : "--control", optarg);
			if (ch == 'E')
				S.events_fd = (int)fd;
			else
				S.control_fd = (int)fd;
			/* Not inherited by sandboxes or anything else we start. */
			fcntl((int)fd, F_SETFD, FD_CLOEXEC);
			break;
		}
		case 'C':
			if (optarg && strcmp(optarg, "backend"))
				util_usage_error(synopsis, "--check=%s: the one part that can be asked alone is \"backend\"", optarg);
			o->check = true;
			check_brief = optarg != NULL;
			break;
		case 'P': o->pull = true; break;
		case 'N': o->use_cache = false; break;
		case 'T': o->timings = true; break;
		case 'U': S.unordered = true; break;
		case 'J': check_json = true; break;
		case 'G': o->progress = 1; break;
		case 'g': o->progress = 0; break;
		case 'L': o->live = true; break;
		default: util_common_option(ch, argv, opts, synopsis, help);
		}
	}
	if (o->live && S.events_fd < 0)
		util_usage_error(synopsis, "--live needs --events FD");
	if (optind < argc && (o->check || o->pull))
		util_usage_error(synopsis, "unexpected argument \"%s\"", argv[optind]);
	util_inputs(argc - optind, argv + optind, synopsis);
}

/* The loop, its watches and the run environment, for a stream of jobs. */
static void setup(struct conf *c, const struct opts *o, struct backend **bk, size_t nbk, struct ccache *cache)
{
	S.sigfd = proc_stop_signals();
	if (S.sigfd < 0)
		util_die(EXIT_IO, "signalfd: %s", strerror(errno));

	S.loop = loop_new();
	S.max = o->jobs ? (size_t)o->jobs : (size_t)c->max_concurrent;
	S.runs = util_xalloc(S.max * sizeof *S.runs);
	S.bgmax = (size_t)c->max_processes * (size_t)(c->max_sessions ? c->max_sessions : 1);
	if (S.bgmax > 4096)
		S.bgmax = 4096;
	S.bg = util_xalloc((S.bgmax ? S.bgmax : 1) * sizeof *S.bg);
	S.cap = ORDER_WINDOW(S.max);
	S.window = util_xalloc(S.cap * sizeof *S.window);
	for (size_t i = 0; i < S.cap; i++)
		S.window[i] = jv_invalid();
	ccache_init(cache, c, o->use_cache);
	S.env = (struct run_env){ .conf = c, .backends = bk, .nbackends = nbk, .cache = cache, .loop = S.loop,
				  .timings = o->timings, .on_stage = on_stage, .kernels = cell_kernels_new(c, S.loop),
				  .slots_take = slots_take, .slots_give = slots_give };
	if (o->live) {
		S.live = live_new(S.loop, live_emit, NULL);
		S.env.on_output = on_output;
	}
	if (S.connect_fd >= 0)
		loop_watch(S.loop, S.connect_fd, POLLIN, on_connect, NULL);
	if (S.control_fd >= 0) {
		fcntl(S.control_fd, F_SETFL, fcntl(S.control_fd, F_GETFL) | O_NONBLOCK);
		/* (a background job's input: up to 1 MiB of text, escaped) */
		rec_reader_init(&S.control, S.control_fd, 8u << 20);
		loop_watch(S.loop, S.control_fd, POLLIN, on_control, NULL);
	}
	struct stat st;
	S.out_fifo = fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
	if (S.out_fifo)
		loop_watch(S.loop, STDOUT_FILENO, 0, on_stdout, NULL); /* its reader leaving, at once */
	rec_reader_init(&S.in, STDIN_FILENO, c->max_record_size);
	loop_watch(S.loop, S.sigfd, POLLIN, on_signal, NULL);
	S.progress_tty = isatty(STDERR_FILENO);
	S.progress = o->progress < 0 ? S.progress_tty : o->progress;
	S.t0 = util_now_ms();
	if (S.progress)
		S.total = util_count_requests(STDIN_FILENO); /* (a pipe: the records' input_total) */
}

/* No sandbox can be made here: every job gets an internal_error saying
 * why, so pipelines still get one line per input line. */
static void refuse_all(const char *why)
{
	for (;;) {
		jv rec;
		enum rec_status rs = rec_read(&S.in, &rec);
		if (rs == REC_EOF || rs == REC_ERROR)
			break;
		if (rs == REC_OK && !rec_has_status(rec)) {
			rec = jv_object_set(rec, jv_string("status"), jv_string(STATUS(internal_error)));
			rec = jv_object_set(rec, jv_string("error"), jv_string(why));
		}
		emit(rec);
		while (S.out_len && !S.out_failed)
			loop_once(S.loop, -1);
	}
}

/* Jobs in, results out, until the input ends and every run is done (or
 * a signal, or stdout failing). */
static void serve(void)
{
	dispatch();
	while (!S.out_failed && (S.active > 0 || S.nbg > 0 || S.nheld > 0 || !S.in_eof || S.out_len > 0)) {
		if (S.stopping && S.active == 0 && S.nbg == 0 && S.out_len == 0)
			break;
		if (loop_once(S.loop, -1) < 0) {
			util_warn("poll: %s", strerror(errno));
			break;
		}
		if (S.redispatch) {
			S.redispatch = false;
			dispatch();
		}
	}
	if (S.out_failed) {
		S.status = EXIT_IO;
		cancel_all();
		/* Let the killed sandboxes finish so nothing is left behind. */
		while ((S.active > 0 || S.nbg > 0) && loop_once(S.loop, 1000) >= 0)
			;
	}
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	struct opts o;
	memset(&o, 0, sizeof o);
	options(argc, argv, &o);
	struct conf *c = conf_open(o.conf_path);
	signal(SIGPIPE, SIG_IGN);
	/* The docker backend: connected at start when it is the one jobs get
	 * (which also removes what a killed sbx-run left behind), else when a
	 * job first asks for it.  It comes first: --pull and its --check need
	 * no native sandbox (whose set-up, as non-root, moves this process
	 * into a user namespace). */
	bool docker = !strcmp(probe_backend(c), "docker");
	struct backend *bk[2] = { backend_docker(c, docker && !o.pull && !o.check), NULL };
	if (o.pull || (docker && o.check)) {
		int st = o.pull ? bk[0]->ops->pull(bk[0], stderr) : check(c, bk[0]);
		bk_free(bk[0]);
		conf_free(c);
		return o.pull ? (st == 0 ? EXIT_OK : st == 1 ? EXIT_RECORDS : EXIT_STORE) : st;
	}
	bk[1] = backend_native(c, argv);
	struct backend *def = S.def = bk[docker ? 0 : 1];
	if (o.check) {
		int st = check(c, def);
		bk_free(bk[0]);
		bk_free(bk[1]);
		conf_free(c);
		return st;
	}
	/* Limits enforced less than configured are said once, here, as well
	 * as in every result's limits_enforced. */
	if (def->broken || def->warn[0])
		util_warn("%s", def->broken ? def->why : def->warn);

	static struct ccache cache;
	setup(c, &o, bk, 2, &cache);
	if (def->broken)
		refuse_all(def->why);
	else {
		/* Sandboxes made ahead of time, one per slot (up to 4).  If no
		 * job is there yet (in a pipeline it is still being validated
		 * upstream), one is made now: nearly every job wants the host's
		 * tree without network, and its namespaces are then made while
		 * we wait.  A job that is already there goes first: it may want
		 * another tree. */
		struct pollfd in = { .fd = STDIN_FILENO, .events = POLLIN };
		def->ops->pool(def, S.loop, S.max < 4 ? S.max : 4, poll(&in, 1, 0) == 0);
		serve();
	}
	if (S.progress)
		draw_progress(true);
	/* Kernels end with us, before the sandboxes are drained. */
	cell_kernels_free(S.env.kernels);
	run_nets_free(&S.env);
	rec_reader_free(&S.in);
	if (S.control_fd >= 0)
		rec_reader_free(&S.control);
	for (size_t i = 0; i < 2; i++)
		bk[i]->ops->drain(bk[i]);
	live_free(S.live);
	loop_free(S.loop);
	for (size_t i = 0; i < S.cap; i++)
		jv_free(S.window[i]);
	free(S.window);
	free(S.runs);
	free(S.bg);
	free(S.out);
	bool broken = def->broken;
	/* The results are out before the backends' last work (a stale root
	 * rebuilt, box_tmpl_refresh): whoever reads them need not wait. */
	int cs = util_close_stdout();
	/* (and fd 1 is not left free for the next open to take) */
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (nul > STDOUT_FILENO) {
		dup3(nul, STDOUT_FILENO, O_CLOEXEC);
		close(nul);
	}
	bk_free(bk[0]);
	bk_free(bk[1]);
	ccache_free(&cache);
	free(S.env.flights);
	conf_free(c);
	if (S.exit_sig)
		return 128 + S.exit_sig;
	if (broken)
		return EXIT_STORE;
	return S.status ? S.status : cs;
}
