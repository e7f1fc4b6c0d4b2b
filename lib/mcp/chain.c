#define _GNU_SOURCE
#include "chain.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "rec.h"
#include "req.h"
#include "status.h"
#include "util.h"

enum { TOOL_VALIDATE, TOOL_RUN, TOOL_CAP, TOOL_LOG, NTOOLS };
static const char *const tool_names[NTOOLS] = { "sbx-validate", "sbx-run", "sbx-cap", "sbx-log" };

/* A connection asked of sbx-run's --connect, its answer not yet in. */
struct conn_ask {
	uint64_t tag;
	chain_conn_fn done;    /* NULL: cancelled, a socket that comes is closed */
	void *arg;
	struct conn_ask *next;
};

struct req {
	char *id;
	chain_done_fn done;
	chain_event_fn event;
	void *arg;
	struct req *next;
};

struct chain {
	struct loop *loop;
	char *bindir, *conf_path;
	unsigned jobs;
	bool alive;
	pid_t pids[NTOOLS];
	int in_fd;              /* requests to sbx-validate */
	int out_fd;             /* results from sbx-log */
	int ev_fd, ctl_fd;      /* sbx-run's --events and --control */
	bool ev_done;           /* ev_fd at its end, unwatched */
	int conn_fd;            /* sbx-run's --connect (SOCK_SEQPACKET) */
	struct conn_ask *asks;
	uint64_t ask_seq;
	struct rec_reader out, ev;
	char *wbuf;
	size_t wlen, wcap;
	char *cbuf;             /* control lines not yet written (a process's input may be long) */
	size_t clen, ccap;
	struct req *reqs;
	unsigned n;
};

static void stop(struct chain *ch, int grace_ms);

static struct req **find(struct chain *ch, const char *id)
{
	for (struct req **p = &ch->reqs; *p; p = &(*p)->next)
		if (!strcmp((*p)->id, id))
			return p;
	return NULL;
}

static struct req *take(struct chain *ch, const char *id)
{
	struct req **p = find(ch, id);
	if (!p)
		return NULL;
	struct req *r = *p;
	*p = r->next;
	ch->n--;
	return r;
}

/* Every connection asked and not answered is answered why. */
static void fail_asks(struct chain *ch, const char *why)
{
	while (ch->asks) {
		struct conn_ask *a = ch->asks;
		ch->asks = a->next;
		if (a->done)
			a->done(-1, why, a->arg);
		free(a);
	}
}

static void fail_all(struct chain *ch, const char *why)
{
	while (ch->reqs) {
		struct req *r = ch->reqs;
		ch->reqs = r->next;
		ch->n--;
		jv res = jv_object_set(jv_object(), jv_string(REQ_KEY(id)), jv_string(r->id));
		res = jv_object_set(res, jv_string("status"), jv_string(STATUS(internal_error)));
		res = jv_object_set(res, jv_string("error"), jv_string(why));
		if (r->done)
			r->done(res, r->arg);
		else
			jv_free(res);
		free(r->id);
		free(r);
	}
}

/* The chain ended under its requests (a tool crashed or was killed). */
static void died(struct chain *ch, const char *why)
{
	util_warn("the pipeline ended (%s); it will be restarted", why);
	stop(ch, 0);
	fail_asks(ch, "the sandbox pipeline ended: the session's processes with it");
	fail_all(ch, "the sandbox pipeline ended unexpectedly; the request was not run (see the server's log)");
}

static void on_event(struct loop *l, int fd, short rev, void *arg);

static void on_out(struct loop *l, int fd, short rev, void *arg)
{
	struct chain *ch = arg;
	/* sbx-run writes a job's events before its result, which then passes
	 * sbx-cap and sbx-log: they are in their pipe by now.  Read first, so
	 * that a loop that finds both ready never answers a call before its
	 * progress (a call's progress after its answer is dropped). */
	if (!ch->ev_done)
		on_event(l, ch->ev_fd, POLLIN, ch);
	ssize_t n = rec_fill(&ch->out);
	jv rec;
	enum rec_status st;
	while ((st = rec_next(&ch->out, &rec)) == REC_OK || st == REC_INVALID) {
		const char *id = st == REC_OK ? rec_str(rec, REQ_KEY(id), NULL) : NULL;
		struct req *r = id ? take(ch, id) : NULL;
		if (!r) {
			if (id && ch->alive)
				util_warn("a result for an unknown request %s", id);
			jv_free(rec);
			continue;
		}
		if (r->done)
			r->done(rec, r->arg);
		else
			jv_free(rec);
		free(r->id);
		free(r);
	}
	if (n == 0)
		died(ch, "sbx-log closed its output");
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		died(ch, strerror(errno));
	(void)l;
	(void)fd;
	(void)rev;
}

static void on_event(struct loop *l, int fd, short rev, void *arg)
{
	struct chain *ch = arg;
	ssize_t n = rec_fill(&ch->ev);
	jv ev;
	enum rec_status st;
	while ((st = rec_next(&ch->ev, &ev)) == REC_OK || st == REC_INVALID) {
		const char *id = st == REC_OK ? rec_str(ev, REQ_KEY(id), NULL) : NULL;
		const char *what = st == REC_OK ? rec_str(ev, "event", NULL) : NULL;
		struct req **p = id && what ? find(ch, id) : NULL;
		if (p && (*p)->event)
			(*p)->event(what, ev, (*p)->arg);
		jv_free(ev);
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		loop_unwatch(l, fd);
		ch->ev_done = true;
	}
	(void)rev;
}

/* sbx-run's answers on --connect: {"tag", "error"}, with the socket when
 * error is null. */
static void on_conn(struct loop *l, int fd, short rev, void *arg)
{
	struct chain *ch = arg;
	char buf[1024];
	int sock;
	ssize_t n = proc_recv_fd(fd, buf, sizeof buf, &sock);
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			loop_unwatch(l, fd);
		return;
	}
	jv msg = jv_parse_sized(buf, (int)n);
	double tag = -1;
	if (jv_get_kind(msg) != JV_KIND_OBJECT || !rec_num(msg, "tag", &tag))
		tag = -1;
	const char *why = rec_str(msg, "error", NULL);
	struct conn_ask **p = &ch->asks;
	while (*p && (double)(*p)->tag != tag)
		p = &(*p)->next;
	struct conn_ask *a = *p;
	if (a)
		*p = a->next;
	if (a && a->done && (sock >= 0 || why))
		a->done(sock, why ? why : "", a->arg);
	else if (a && a->done)
		a->done(-1, "sbx-run answered without a connection", a->arg);
	else if (sock >= 0)
		close(sock);
	free(a);
	jv_free(msg);
	(void)rev;
}

static void on_in(struct loop *l, int fd, short rev, void *arg)
{
	struct chain *ch = arg;
	ssize_t w = write(fd, ch->wbuf, ch->wlen);
	if (w < 0 && errno != EAGAIN && errno != EINTR) {
		died(ch, "sbx-validate stopped reading");
		return;
	}
	if (w > 0) {
		memmove(ch->wbuf, ch->wbuf + w, ch->wlen - (size_t)w);
		ch->wlen -= (size_t)w;
	}
	if (ch->wlen == 0)
		loop_unwatch(l, fd);
	(void)rev;
}

/* fork+exec one tool with stdin/stdout (and for sbx-run fds 3, 4 and 5:
 * --events, --control, --connect). */
static pid_t spawn(struct chain *ch, int t, int in, int out, const int fds[3], pid_t pgid)
{
	char *tool = util_fmt("%s/%s", ch->bindir, tool_names[t]);
	/* (proc_keep_fds makes fds[] 3, 4 and 5 in the child) */
	char jobs[16], evs[] = "3", ctls[] = "4", conns[] = "5";
	snprintf(jobs, sizeof jobs, "%u", ch->jobs);
	char *argv[16];
	int a = 0;
	argv[a++] = tool;
	if (ch->conf_path) {
		argv[a++] = "-c";
		argv[a++] = ch->conf_path;
	}
	if (t == TOOL_RUN) {
		argv[a++] = "-j";
		argv[a++] = jobs;
		/* Results are matched by id: none waits for a slower one. */
		argv[a++] = "--unordered";
		argv[a++] = "--events";
		argv[a++] = evs;
		argv[a++] = "--live";
		argv[a++] = "--control";
		argv[a++] = ctls;
		argv[a++] = "--connect";
		argv[a++] = conns;
	}
	argv[a] = NULL;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		/* The child: its own signal state, the chain's process group,
		 * death with the server, and nothing open but its pipes. */
		setpgid(0, pgid);
		if (proc_child_prepare(parent, SIGTERM) < 0)
			_exit(127);
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0)
			_exit(127);
		int keep[3] = { fds[0], fds[1], fds[2] };
		if (proc_keep_fds(keep, 3) < 0)
			_exit(127);
		/* kept fds are close-on-exec; these three are for sbx-run */
		for (int i = 0; i < 3; i++)
			if (keep[i] >= 0)
				proc_set_cloexec(keep[i], false);
		execv(tool, argv);
		dprintf(2, "sbx-mcp: cannot run %s: %s\n", tool, strerror(errno));
		_exit(127);
	}
	free(tool);
	return pid;
}

static int start(struct chain *ch)
{
	/* in[0] → validate → p1 → run → p2 → cap → p3 → log → out[1] */
	int in[2], p1[2], p2[2], p3[2], out[2], ev[2], ctl[2], conn[2];
	int *all[] = { in, p1, p2, p3, out, ev, ctl, conn };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		all[i][0] = all[i][1] = -1;
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i] == conn ? socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, conn) < 0
				   : pipe2(all[i], O_CLOEXEC) < 0) {
			util_warn("pipe: %s", strerror(errno));
			goto fail;
		}
	static const int none[3] = { -1, -1, -1 };
	const int run_fds[3] = { ev[1], ctl[0], conn[1] };
	ch->pids[TOOL_VALIDATE] = spawn(ch, TOOL_VALIDATE, in[0], p1[1], none, 0);
	pid_t pg = ch->pids[TOOL_VALIDATE];
	ch->pids[TOOL_RUN] = pg > 0 ? spawn(ch, TOOL_RUN, p1[0], p2[1], run_fds, pg) : -1;
	ch->pids[TOOL_CAP] = pg > 0 ? spawn(ch, TOOL_CAP, p2[0], p3[1], none, pg) : -1;
	ch->pids[TOOL_LOG] = pg > 0 ? spawn(ch, TOOL_LOG, p3[0], out[1], none, pg) : -1;
	for (int s = 0; s < NTOOLS; s++)
		if (ch->pids[s] > 0)
			setpgid(ch->pids[s], pg); /* also here: no race with the child */
	for (int s = 0; s < NTOOLS; s++)
		if (ch->pids[s] < 0) {
			util_warn("fork: %s", strerror(errno));
			goto fail;
		}
	ch->in_fd = in[1];
	ch->out_fd = out[0];
	ch->ev_fd = ev[0];
	ch->ev_done = false;
	ch->ctl_fd = ctl[1];
	ch->conn_fd = conn[0];
	close(in[0]), close(p1[0]), close(p1[1]), close(p2[0]), close(p2[1]), close(p3[0]), close(p3[1]);
	close(out[1]), close(ev[1]), close(ctl[0]), close(conn[1]);
	proc_set_nonblock(ch->in_fd, true);
	proc_set_nonblock(ch->out_fd, true);
	proc_set_nonblock(ch->ev_fd, true);
	proc_set_nonblock(ch->ctl_fd, true);
	proc_set_nonblock(ch->conn_fd, true);
	rec_reader_init(&ch->out, ch->out_fd, 256u << 20);
	rec_reader_init(&ch->ev, ch->ev_fd, 64u << 10);
	loop_watch(ch->loop, ch->out_fd, POLLIN, on_out, ch);
	loop_watch(ch->loop, ch->ev_fd, POLLIN, on_event, ch);
	loop_watch(ch->loop, ch->conn_fd, POLLIN, on_conn, ch);
	ch->alive = true;
	return 0;
fail:
	for (int s = 0; s < NTOOLS; s++)
		if (ch->pids[s] > 0) {
			kill(ch->pids[s], SIGKILL);
			waitpid(ch->pids[s], NULL, 0);
			ch->pids[s] = -1;
		}
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		for (int k = 0; k < 2; k++)
			if (all[i][k] >= 0)
				close(all[i][k]);
	return -1;
}

struct chain *chain_new(struct loop *l, const char *bindir, const char *conf_path, unsigned jobs)
{
	struct chain *ch = util_xalloc(sizeof *ch);
	ch->loop = l;
	ch->bindir = util_strdup(bindir);
	ch->conf_path = conf_path ? util_strdup(conf_path) : NULL;
	ch->jobs = jobs ? jobs : 1;
	ch->in_fd = ch->out_fd = ch->ev_fd = ch->ctl_fd = ch->conn_fd = -1;
	for (int s = 0; s < NTOOLS; s++)
		ch->pids[s] = -1;
	return ch;
}

void chain_submit(struct chain *ch, jv request, chain_done_fn done, chain_event_fn event, void *arg)
{
	const char *id = rec_str(request, REQ_KEY(id), NULL);
	struct req *r = util_xalloc(sizeof *r);
	*r = (struct req){ .id = util_strdup(id ? id : ""), .done = done, .event = event, .arg = arg };
	r->next = ch->reqs;
	ch->reqs = r;
	ch->n++;
	if (!ch->alive && start(ch) < 0) {
		jv_free(request);
		fail_all(ch, "cannot start the sandbox pipeline (sbx-validate, sbx-run, sbx-cap, sbx-log next to sbx-mcp)");
		return;
	}
	size_t n;
	char *line = rec_dump(request, &n);
	if (ch->wlen + n > ch->wcap) {
		ch->wcap = (ch->wlen + n) * 2;
		ch->wbuf = util_xrealloc(ch->wbuf, ch->wcap);
	}
	memcpy(ch->wbuf + ch->wlen, line, n);
	ch->wlen += n;
	free(line);
	loop_watch(ch->loop, ch->in_fd, POLLOUT, on_in, ch);
}

static void on_ctl(struct loop *l, int fd, short rev, void *arg)
{
	struct chain *ch = arg;
	ssize_t w = write(fd, ch->cbuf, ch->clen);
	if (w < 0 && errno != EAGAIN && errno != EINTR) {
		util_warn("--control: %s", strerror(errno));
		ch->clen = 0;
	} else if (w > 0) {
		memmove(ch->cbuf, ch->cbuf + w, ch->clen - (size_t)w);
		ch->clen -= (size_t)w;
	}
	if (ch->clen == 0)
		loop_unwatch(l, fd);
	(void)rev;
}

/* A line to sbx-run's --control (msg consumed), queued: a long one (a
 * process's input) never blocks the server while sbx-run is busy. */
static void control_msg(struct chain *ch, jv msg)
{
	size_t n;
	char *line = rec_dump(msg, &n);
	if (ch->clen + n > ch->ccap) {
		ch->ccap = (ch->clen + n) * 2;
		ch->cbuf = util_xrealloc(ch->cbuf, ch->ccap);
	}
	memcpy(ch->cbuf + ch->clen, line, n);
	ch->clen += n;
	free(line);
	loop_watch(ch->loop, ch->ctl_fd, POLLOUT, on_ctl, ch);
}

/* One line {key: value}. */
static void control(struct chain *ch, const char *key, const char *value)
{
	control_msg(ch, jv_object_set(jv_object(), jv_string(key), jv_string(value)));
}

bool chain_control(struct chain *ch, const char *id, jv msg)
{
	if (!ch || !ch->alive || !find(ch, id)) {
		jv_free(msg);
		errno = ENOENT;
		return false;
	}
	/* sbx-run behind (busy with floods of output, say): the caller's
	 * lines wait no more than this, rather than grow the server. */
	if (ch->clen >= CHAIN_CONTROL_QUEUED) {
		jv_free(msg);
		errno = EAGAIN;
		return false;
	}
	control_msg(ch, msg);
	return true;
}

void chain_cancel(struct chain *ch, const char *id)
{
	if (ch->alive && find(ch, id))
		control(ch, "cancel", id);
}

void chain_end_session(struct chain *ch, const char *sid)
{
	if (ch && ch->alive)
		control(ch, "end_session", sid);
}

void chain_restore_session(struct chain *ch, const char *sid)
{
	if (ch && ch->alive)
		control(ch, "restore_session", sid);
}

uint64_t chain_connect(struct chain *ch, const char *sid, unsigned port, chain_conn_fn done, void *arg, char *err,
		       size_t errlen)
{
	if (!ch || !ch->alive) {
		snprintf(err, errlen, "nothing runs in the session: its loopback has nothing to connect to");
		return 0;
	}
	jv msg = jv_object_set(jv_object(), jv_string("session_id"), jv_string(sid));
	msg = jv_object_set(msg, jv_string("port"), jv_number(port));
	msg = jv_object_set(msg, jv_string("tag"), jv_number((double)++ch->ask_seq));
	size_t n;
	char *line = rec_dump(msg, &n);
	int sent = proc_send_fd(ch->conn_fd, line, n, -1);
	free(line);
	if (sent < 0) {
		/* (a few bytes a message: a full socket means sbx-run is stuck) */
		snprintf(err, errlen, "the sandbox pipeline does not take the connection (%s): try again", strerror(errno));
		return 0;
	}
	struct conn_ask *a = util_xalloc(sizeof *a);
	*a = (struct conn_ask){ ch->ask_seq, done, arg, ch->asks };
	ch->asks = a;
	return a->tag;
}

void chain_connect_cancel(struct chain *ch, uint64_t tag)
{
	for (struct conn_ask *a = ch ? ch->asks : NULL; a; a = a->next)
		if (a->tag == tag)
			a->done = NULL;
}

unsigned chain_in_flight(const struct chain *ch)
{
	return ch->n;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Close the input; wait up to grace_ms for the tools to finish (sbx-run
 * finishes its jobs), then SIGTERM sbx-run (it cancels its sandboxes,
 * background jobs too, and writes their results, which the rest of the
 * chain logs before it ends at their end), then after 2 s SIGKILL the
 * group; reap. */
static void stop(struct chain *ch, int grace_ms)
{
	if (!ch->alive)
		return;
	ch->alive = false;
	loop_unwatch(ch->loop, ch->in_fd);
	loop_unwatch(ch->loop, ch->out_fd);
	loop_unwatch(ch->loop, ch->ev_fd);
	loop_unwatch(ch->loop, ch->ctl_fd);
	loop_unwatch(ch->loop, ch->conn_fd);
	close(ch->in_fd);
	close(ch->ctl_fd);
	close(ch->conn_fd);
	ch->clen = 0;
	pid_t group = ch->pids[TOOL_VALIDATE];
	double deadline = now_ms() + grace_ms;
	bool termed = false;
	for (int s = 0; s < NTOOLS; s++) {
		while (waitpid(ch->pids[s], NULL, WNOHANG) == 0) {
			if (now_ms() >= deadline) {
				if (termed)
					kill(-group, SIGKILL);
				else
					kill(ch->pids[TOOL_RUN] > 0 ? ch->pids[TOOL_RUN] : -group, SIGTERM);
				if (!termed)
					deadline = now_ms() + 2000;
				termed = true;
			}
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		ch->pids[s] = -1;
	}
	close(ch->out_fd);
	close(ch->ev_fd);
	rec_reader_free(&ch->out);
	rec_reader_free(&ch->ev);
	ch->in_fd = ch->out_fd = ch->ev_fd = ch->ctl_fd = ch->conn_fd = -1;
	ch->wlen = 0;
}

void chain_free(struct chain *ch, int grace_ms)
{
	if (!ch)
		return;
	for (struct req *r = ch->reqs; r; r = r->next)
		r->done = NULL, r->event = NULL;
	for (struct conn_ask *a = ch->asks; a; a = a->next)
		a->done = NULL;
	stop(ch, grace_ms);
	fail_asks(ch, "");
	fail_all(ch, "");
	free(ch->wbuf);
	free(ch->cbuf);
	free(ch->bindir);
	free(ch->conf_path);
	free(ch);
}
