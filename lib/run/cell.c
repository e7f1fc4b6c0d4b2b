/* cell: kernels and their cells; see cell.h for the theory of operation. */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rec.h"
#include "req.h"
#include "stage.h"
#include "util.h"

#define INTERRUPT_GRACE_MS 2000
/* A kernel interrupted before it said it was ready gets this long to
 * start and answer instead: on a loaded or emulated machine the start of
 * an interpreter alone can take seconds, and killing it for that would
 * only have the next cell start another slow kernel. */
#define START_GRACE_MS 30000
/* A kernel that closed its channel is let exit by itself this long, so
 * that its cell reports how it ended (an exit code, a signal, the OOM
 * killer), not that we killed it. */
#define CLOSE_GRACE_MS 1000
/* Output between cells beyond the cap is counted, not kept; past this
 * much the kernel is killed: the supervisor would spend itself reading it. */
#define FLOOD_MAX (64u << 20)
#define REPLY_MAX (1u << 20)
/* A kernel lives at most this long, however busy (the limit table's most). */
#define KERNEL_LIFE_MS 86400000u
/* What is remembered of kernels gone, to say "restarted" at the next cell. */
#define TOMBS_MAX 1024

enum phase { P_RUNNING, P_INTERRUPTED, P_KILLED };
/* Why we killed a kernel, for its cell's status. */
enum kill { K_NONE, K_TIMEOUT, K_CANCEL, K_BROKEN, K_GONE };

struct cell {
	struct kernel *k;
	unsigned n;
	enum phase phase;
	bool cancelled;           /* cell_cancel, not the timeout */
	uint64_t timeout_ms;
	double t0;
	struct stage_result res;  /* out, err, duration; the rest filled at the end */
	jv info;
	cell_done_fn done;
	cell_output_fn out;
	void *arg;
};

struct kernel {
	struct kernels *ks;
	char *workspace, *language;
	struct backend *be;
	struct bk_scratch *scratch;
	struct bk_stage *st;
	struct stage_spec spec;
	struct limits lim;
	char **argv, **envp, **binds;
	char *rootfs;
	int chan, peer, timer;
	struct rec_reader rd;
	char *wbuf;               /* requests not yet written */
	size_t wlen, woff;
	unsigned count;           /* execution count */
	struct cell *cur;
	char *pend;               /* output between cells: stream byte, then text */
	size_t plen;
	uint64_t pdropped;
	bool dying;               /* no more cells: its stage's result is awaited */
	enum kill killed;         /* we killed it, and why (K_NONE: it ended by itself) */
	bool closing;             /* it closed its channel: CLOSE_GRACE_MS to exit */
	bool ready;               /* it said {"ready": true}, or answered a cell: started */
	bool forget;              /* nothing to remember of it (its session ended, it was reset) */
	char why[200];            /* why it died (or was killed), for the next cell */
	struct kernel *next;
};

struct tomb {
	char *workspace, *language, *why; /* language NULL: the session ended */
	struct tomb *next;
};

struct kernels {
	const struct conf *conf;
	struct loop *loop;
	struct kernel *live;      /* alive, and those being killed */
	struct tomb *tombs;
	unsigned ntombs;
};

/* ---- what is remembered of kernels gone ------------------------------------ */

static void tomb_add(struct kernels *ks, const char *ws, const char *lang, const char *why)
{
	struct tomb *t = util_xalloc(sizeof *t);
	*t = (struct tomb){ util_strdup(ws), lang ? util_strdup(lang) : NULL, util_strdup(why), ks->tombs };
	ks->tombs = t;
	if (++ks->ntombs <= TOMBS_MAX)
		return;
	struct tomb **p = &ks->tombs;
	while ((*p)->next)
		p = &(*p)->next;
	free((*p)->workspace);
	free((*p)->language);
	free((*p)->why);
	free(*p);
	*p = NULL;
	ks->ntombs--;
}

/* The reason its last kernel went (the caller frees), forgotten here. */
static char *tomb_take(struct kernels *ks, const char *ws, const char *lang)
{
	for (struct tomb **p = &ks->tombs; *p; p = &(*p)->next) {
		struct tomb *t = *p;
		if (strcmp(t->workspace, ws) || (lang && (!t->language || strcmp(t->language, lang))))
			continue;
		*p = t->next;
		char *why = t->why;
		free(t->workspace);
		free(t->language);
		free(t);
		ks->ntombs--;
		return why;
	}
	return NULL;
}

/* ---- a kernel ------------------------------------------------------------- */

static void arm(struct kernel *k, uint64_t ms)
{
	struct itimerspec its = { .it_value = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L } };
	if (ms == 0)
		its.it_value.tv_nsec = 1;
	timerfd_settime(k->timer, 0, &its, NULL);
}

static void kill_kernel(struct kernel *k, enum kill kind, const char *why)
{
	if (k->killed)
		return;
	k->dying = true;
	k->killed = kind;
	snprintf(k->why, sizeof k->why, "%s", why);
	loop_unwatch(k->ks->loop, k->chan);
	loop_unwatch(k->ks->loop, k->timer);
	k->be->ops->cancel(k->st);
}

/* A line that is not the reply to the running cell, or one too long. */
static void broken(struct kernel *k)
{
	kill_kernel(k, K_BROKEN, "broke its protocol (a line on its channel that is not the reply to its cell)");
}

/* The kernel closed its channel: no more cells; it is let exit by itself,
 * then killed. */
static void closed(struct kernel *k)
{
	if (k->dying)
		return;
	k->dying = k->closing = true;
	loop_unwatch(k->ks->loop, k->chan);
	arm(k, CLOSE_GRACE_MS);
}

static void kernel_free(struct kernel *k)
{
	struct kernels *ks = k->ks;
	for (struct kernel **p = &ks->live; *p; p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			break;
		}
	if (k->chan >= 0)
		loop_unwatch(ks->loop, k->chan);
	if (k->timer >= 0)
		loop_unwatch(ks->loop, k->timer);
	if (k->st)
		k->be->ops->stage_free(k->st);
	bk_scratch_close(k->scratch);
	if (k->chan >= 0)
		close(k->chan);
	if (k->peer >= 0)
		close(k->peer);
	if (k->timer >= 0)
		close(k->timer);
	rec_reader_free(&k->rd);
	util_strv_free(k->argv);
	util_strv_free(k->envp);
	util_strv_free(k->binds);
	free(k->rootfs);
	free(k->wbuf);
	free(k->pend);
	free(k->workspace);
	free(k->language);
	free(k);
}

/* The cell's end: its result to its caller, the kernel idle again. */
static void cell_finish(struct kernel *k, const char *note)
{
	struct cell *c = k->cur;
	k->cur = NULL;
	c->res.duration_ms = util_now_ms() - c->t0;
	c->res.cpu_ms = -1;
	c->res.mem_peak = -1;
	c->res.enforced = k->be->ops->result(k->st)->enforced;
	if (note) {
		/* A note from the cell's start (the kernel was restarted) stays:
		 * what happened in the cell follows it. */
		const char *had = rec_str(c->info, "kernel_note", NULL);
		char both[800];
		snprintf(both, sizeof both, "%s%s%s", had ? had : "", had ? "; then " : "", note);
		c->info = jv_object_set(c->info, jv_string("kernel_note"), jv_string(both));
	}
	/* "kernel" said what the cell found; a kernel that does not outlive
	 * the cell is "died" whatever it was at the start. */
	if (k->dying)
		c->info = jv_object_set(c->info, jv_string("kernel"), jv_string("died"));
	c->info = jv_object_set(c->info, jv_string("kernel_alive"), jv_bool(!k->dying));
	c->done(&c->res, c->info, c->arg);
	cap_buf_free(&c->res.out);
	cap_buf_free(&c->res.err);
	jv_free(c->info);
	free(c);
	/* Unless the callback started the next cell (and its timeout). */
	if (!k->dying && !k->cur)
		arm(k, k->ks->conf->kernel_idle_ms);
}

/* The kernel's stage ended: it died, or we killed it. */
static void kernel_done(void *arg)
{
	struct kernel *k = arg;
	struct kernels *ks = k->ks;
	const struct stage_result *r = k->be->ops->result(k->st);
	char why[200], sig[32];
	if (k->killed)
		snprintf(why, sizeof why, "%s", k->why);
	else if (r->status == STAGE_OOM)
		snprintf(why, sizeof why, "died at its memory limit");
	else if (r->status == STAGE_TIMEOUT)
		snprintf(why, sizeof why, "reached its longest life (%u h)", KERNEL_LIFE_MS / 3600000);
	else if (r->status == STAGE_SIGNALED)
		snprintf(why, sizeof why, "died of %s", stage_signal_name(r->signal, sig, sizeof sig));
	else if (r->status == STAGE_EXITED)
		snprintf(why, sizeof why, "exited with code %d", r->exit_code);
	else
		snprintf(why, sizeof why, "could not run: %.180s", r->error[0] ? r->error : "internal error");
	/* Remembered first: the cell's callback may start the next cell. */
	if (!k->forget)
		tomb_add(ks, k->workspace, k->language, why);
	k->dying = true;
	if (k->cur) {
		struct cell *c = k->cur;
		k->be->ops->flush(k->st);
		/* How the cell ended is how the kernel did, unless we killed it:
		 * for the cell's timeout or cancellation, or as broken (an error,
		 * of SIGKILL). */
		c->res.status = k->killed == K_TIMEOUT	  ? STAGE_TIMEOUT
				: k->killed == K_CANCEL	  ? STAGE_CANCELLED
				: k->killed == K_BROKEN || k->killed == K_GONE ? STAGE_SIGNALED
							  : r->status;
		c->res.exit_code = r->exit_code;
		c->res.signal = k->killed == K_BROKEN || k->killed == K_GONE ? SIGKILL : r->signal;
		if (r->status == STAGE_INTERNAL)
			snprintf(c->res.error, sizeof c->res.error, "%s", r->error);
		char note[300];
		snprintf(note, sizeof note, "the kernel %s: its state is lost; the next cell starts a fresh kernel", why);
		cell_finish(k, note);
	}
	kernel_free(k);
}

/* Output of the kernel: the running cell's, or kept for the next. */
static void kernel_output(void *arg, int stream, const char *data, size_t len)
{
	struct kernel *k = arg;
	struct cell *c = k->cur;
	if (c) {
		cap_buf_add(stream == 1 ? &c->res.out : &c->res.err, data, len);
		if (c->out)
			c->out(c->arg, stream, data, len);
		return;
	}
	/* One record per write: the stream, then the bytes, in pend. */
	size_t room = k->lim.output > k->plen ? (size_t)k->lim.output - k->plen : 0;
	if (room < 5) {
		k->pdropped += len;
		if (k->pdropped > FLOOD_MAX && !k->dying)
			kill_kernel(k, K_GONE, "printed more than 64 MiB while no cell ran, and was killed");
		return;
	}
	size_t take = len < room - 5 ? len : room - 5;
	k->pend = util_xrealloc(k->pend, k->plen + 5 + take);
	k->pend[k->plen] = (char)stream;
	uint32_t n32 = (uint32_t)take;
	memcpy(k->pend + k->plen + 1, &n32, 4);
	memcpy(k->pend + k->plen + 5, data, take);
	k->plen += 5 + take;
	k->pdropped += len - take;
}

static void on_chan(struct loop *l, int fd, short rev, void *arg);

/* Write what is queued; the rest when the channel has room. */
static void flush_requests(struct kernel *k)
{
	while (k->woff < k->wlen) {
		ssize_t n = send(k->chan, k->wbuf + k->woff, k->wlen - k->woff, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			closed(k);
			return;
		}
		k->woff += (size_t)n;
	}
	if (k->woff == k->wlen)
		k->wlen = k->woff = 0;
	loop_watch(k->ks->loop, k->chan, k->wlen ? POLLIN | POLLOUT : POLLIN, on_chan, k);
}

static void send_line(struct kernel *k, jv msg)
{
	size_t n;
	char *line = rec_dump(msg, &n);
	k->wbuf = util_xrealloc(k->wbuf, k->wlen + n);
	memcpy(k->wbuf + k->wlen, line, n);
	k->wlen += n;
	free(line);
	flush_requests(k);
}

/* A line from the kernel: it is ready, the running cell's end, or it is broken. */
static void reply(struct kernel *k, jv msg)
{
	struct cell *c = k->cur;
	double n;
	if (rec_has(msg, "ready")) {
		/* Once, first, alone and true; an interrupt's grace counts from now. */
		bool yes;
		if (k->ready || !rec_bool(msg, "ready", &yes) || !yes || jv_object_length(jv_copy(msg)) != 1) {
			broken(k);
			return;
		}
		k->ready = true;
		if (c && c->phase == P_INTERRUPTED)
			arm(k, INTERRUPT_GRACE_MS);
		return;
	}
	k->ready = true;
	const char *st = rec_str(msg, "status", NULL);
	jv v = rec_get(msg, "value");
	jv_kind vk = jv_get_kind(v);
	/* check-names: the kernel's reply says "error", not a status */
	if (!c || !rec_num(msg, "cell", &n) || n != c->n || !st || (strcmp(st, "ok") && strcmp(st, "error") && strcmp(st, "interrupted")) ||
	    (vk != JV_KIND_STRING && vk != JV_KIND_NULL && vk != JV_KIND_INVALID)) {
		jv_free(v);
		broken(k);
		return;
	}
	k->be->ops->flush(k->st);
	/* Interrupted (the kernel says so, or we asked): a timeout, or a
	 * cancellation; else the cell's own outcome. */
	bool stopped = c->phase != P_RUNNING || !strcmp(st, "interrupted");
	c->res.status = !stopped ? STAGE_EXITED : c->cancelled ? STAGE_CANCELLED : STAGE_TIMEOUT;
	c->res.exit_code = strcmp(st, "ok") ? 1 : 0;
	c->info = jv_object_set(c->info, jv_string("value"), vk == JV_KIND_STRING ? v : jv_null());
	if (vk != JV_KIND_STRING)
		jv_free(v);
	cell_finish(k, stopped ? "the cell was interrupted; the kernel and its state live on" : NULL);
}

static void on_chan(struct loop *l, int fd, short rev, void *arg)
{
	struct kernel *k = arg;
	if (rev & POLLOUT) {
		flush_requests(k);
		if (k->dying)
			return;
	}
	if (!(rev & (POLLIN | POLLHUP | POLLERR)))
		return;
	ssize_t got = rec_fill(&k->rd);
	jv msg;
	enum rec_status rs;
	while (!k->dying && (rs = rec_next(&k->rd, &msg)) != REC_AGAIN) {
		if (rs == REC_EOF || rs == REC_ERROR) {
			closed(k);
			return;
		}
		if (rs != REC_OK) {
			jv_free(msg);
			broken(k);
			return;
		}
		reply(k, msg);
		jv_free(msg);
	}
	/* A line past REPLY_MAX is broken at once, not at its newline. */
	if (!k->dying && k->rd.skipping)
		broken(k);
	else if (!k->dying && (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)))
		closed(k);
	(void)l;
	(void)fd;
}

/* The timer: the running cell's timeout and grace, or the idle limit. */
static void on_timer(struct loop *l, int fd, short rev, void *arg)
{
	struct kernel *k = arg;
	uint64_t x;
	if (read(fd, &x, sizeof x) < 0 && errno == EAGAIN)
		return;
	struct cell *c = k->cur;
	if (k->closing) {
		kill_kernel(k, K_GONE, "closed its channel and was killed");
	} else if (!c) {
		char why[120];
		snprintf(why, sizeof why, "was stopped after %.0f s without a cell (kernel_idle)",
			 (double)k->ks->conf->kernel_idle_ms / 1000);
		kill_kernel(k, K_GONE, why);
	} else if (c->phase == P_RUNNING) {
		c->phase = P_INTERRUPTED;
		send_line(k, jv_object_set(jv_object(), jv_string("interrupt"), jv_number(c->n)));
		arm(k, k->ready ? INTERRUPT_GRACE_MS : START_GRACE_MS);
	} else if (c->phase == P_INTERRUPTED) {
		/* Its reply may be there, unread (or its "ready": a grace anew). */
		bool was_ready = k->ready;
		on_chan(l, k->chan, POLLIN, k);
		if (k->cur != c || k->dying || k->ready != was_ready)
			return;
		c->phase = P_KILLED;
		char why[120];
		if (k->ready)
			snprintf(why, sizeof why, "did not stop within %d s of the cell's interrupt and was killed", INTERRUPT_GRACE_MS / 1000);
		else
			snprintf(why, sizeof why, "did not start within %d s of the cell's interrupt and was killed", START_GRACE_MS / 1000);
		kill_kernel(k, c->cancelled ? K_CANCEL : K_TIMEOUT, why);
	}
	(void)rev;
}

static struct kernel *kernel_new(struct kernels *ks, struct backend *be, const struct job *j, const struct limits *lim,
				 char *const *envp, int netns, char *err, size_t errlen)
{
	struct kernel *k = util_xalloc(sizeof *k);
	k->ks = ks;
	k->be = be;
	k->chan = k->peer = k->timer = -1;
	k->workspace = util_strdup(j->workspace);
	k->language = util_strdup(j->language);
	int sv[2] = { -1, -1 };
	bool ok = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0;
	k->chan = sv[0];
	k->peer = sv[1];
	if (!ok || (k->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0) {
		snprintf(err, errlen, "cannot make a kernel's channel: %s", strerror(errno));
		kernel_free(k);
		return NULL;
	}
	fcntl(k->chan, F_SETFL, O_NONBLOCK);
	rec_reader_init(&k->rd, k->chan, REPLY_MAX);
	k->scratch = bk_scratch_open(be, j->workspace, NULL, false, j->work_exec, 0, err, errlen);
	if (!k->scratch || be->ops->scratch_stage(k->scratch, false, err, errlen) < 0) {
		kernel_free(k);
		return NULL;
	}
	k->argv = util_strv_dup(j->run);
	k->envp = util_strv_dup(envp);
	k->binds = j->binds ? util_strv_dup(j->binds) : NULL;
	k->rootfs = j->rootfs ? util_strdup(j->rootfs) : NULL;
	/* The starting cell's limits are the kernel's, for its whole life;
	 * its timeout is the cell's, not the kernel's. */
	k->lim = *lim;
	k->lim.timeout_ms = KERNEL_LIFE_MS;
	k->spec = (struct stage_spec){
		.argv = k->argv,
		.env = k->envp,
		.lim = &k->lim,
		.scratch = k->scratch,
		.deps = true,
		.work_exec = j->work_exec,
		.network = j->network,
		.netns = netns,
		.rootfs = k->rootfs,
		.binds = k->binds,
		.chan = k->peer,
		.on_output = kernel_output,
		.output_arg = k,
		.label = "kernel",
	};
	k->next = ks->live;
	ks->live = k;
	k->st = bk_start(be, ks->loop, &k->spec, kernel_done, k);
	/* The stage has its own copy now: ours would hide the kernel's close. */
	close(k->peer);
	k->peer = -1;
	loop_watch(ks->loop, k->chan, POLLIN, on_chan, k);
	loop_watch(ks->loop, k->timer, POLLIN, on_timer, k);
	return k;
}

/* ---- the table ------------------------------------------------------------ */

struct kernels *cell_kernels_new(const struct conf *c, struct loop *l)
{
	struct kernels *ks = util_xalloc(sizeof *ks);
	ks->conf = c;
	ks->loop = l;
	return ks;
}

unsigned cell_live(const struct kernels *ks)
{
	unsigned n = 0;
	for (const struct kernel *k = ks ? ks->live : NULL; k; k = k->next)
		n += !k->dying;
	return n;
}

void cell_kernels_free(struct kernels *ks)
{
	if (!ks)
		return;
	for (struct kernel *k = ks->live; k; k = k->next) {
		if (k->cur) {
			/* No callback now: the caller is going. */
			cap_buf_free(&k->cur->res.out);
			cap_buf_free(&k->cur->res.err);
			jv_free(k->cur->info);
			free(k->cur);
			k->cur = NULL;
		}
		kill_kernel(k, K_GONE, "ended with sbx-run");
		k->forget = true;
	}
	/* Each kernel's stage reports, and is freed, from the loop. */
	double until = util_now_ms() + 10000;
	while (ks->live && util_now_ms() < until && loop_once(ks->loop, 1000) >= 0)
		;
	while (ks->live)
		kernel_free(ks->live);
	while (ks->tombs)
		free(tomb_take(ks, ks->tombs->workspace, NULL));
	free(ks);
}

void cell_end(struct kernels *ks, const char *workspace)
{
	for (struct kernel *k = ks->live; k; k = k->next)
		if (!strcmp(k->workspace, workspace)) {
			kill_kernel(k, K_GONE, "ended with its session");
			k->forget = true;
		}
	char *why;
	while ((why = tomb_take(ks, workspace, NULL)))
		free(why);
	/* A cell of it still coming (held, or in the pipe) starts no kernel. */
	tomb_add(ks, workspace, NULL, "ended");
}

void cell_restored(struct kernels *ks, const char *workspace)
{
	/* Each leaves a tomb saying why, so that its next cell says
	 * "restarted" and why: now, not when it has died (kernel_done), for
	 * that cell may come before its death is seen. */
	static const char why[] = "was stopped: its session's files were restored from a checkpoint";
	for (struct kernel *k = ks->live; k; k = k->next)
		if (!k->dying && !strcmp(k->workspace, workspace)) {
			kill_kernel(k, K_GONE, why);
			k->forget = true;
			tomb_add(ks, k->workspace, k->language, why);
		}
}

static struct kernel *find(struct kernels *ks, const char *ws, const char *lang)
{
	for (struct kernel *k = ks->live; k; k = k->next)
		if (!k->dying && !strcmp(k->workspace, ws) && !strcmp(k->language, lang))
			return k;
	return NULL;
}

/* The limits a kernel is sized by: its cgroup's, set at its start. */
static const int kernel_sized[] = { LIM_memory, LIM_cpus, LIM_pids };

/* How the limits of a kernel to start now (now) differ from those of the
 * kernel before it (was), for people, in out ("memory changed from
 * 256 MiB to 1 GiB"); empty if they do not. */
static void changed_limits(const struct limits *was, const struct limits *now, char *out, size_t len)
{
	size_t n = 0;
	out[0] = 0;
	for (size_t i = 0; i < sizeof kernel_sized / sizeof kernel_sized[0]; i++) {
		int id = kernel_sized[i];
		double a = limit_get(was, id), b = limit_get(now, id);
		if (a == b || n >= len)
			continue;
		char sa[32], sb[32];
		int w = snprintf(out + n, len - n, "%s%s changed from %s to %s", n ? ", " : "", limit_defs[id].req,
				 limit_str(id, a, sa, sizeof sa), limit_str(id, b, sb, sizeof sb));
		n = w < 0 ? len : n + (size_t)w;
	}
}

/* Output kept from between cells, at the head of this one's. */
static void take_pending(struct kernel *k, struct cell *c)
{
	for (size_t i = 0; i + 5 <= k->plen;) {
		uint32_t n;
		memcpy(&n, k->pend + i + 1, 4);
		cap_buf_add(k->pend[i] == 1 ? &c->res.out : &c->res.err, k->pend + i + 5, n);
		if (c->out)
			c->out(c->arg, k->pend[i], k->pend + i + 5, n);
		i += 5 + n;
	}
	if (k->pdropped) {
		char note[96];
		int n = snprintf(note, sizeof note, "[sbx: %llu bytes printed between cells were dropped]\n",
				 (unsigned long long)k->pdropped);
		cap_buf_add(&c->res.err, note, (size_t)n);
	}
	free(k->pend);
	k->pend = NULL;
	k->plen = 0;
	k->pdropped = 0;
}

struct cell *cell_start(struct kernels *ks, struct backend *be, const struct job *j, char *const *envp, int netns,
			cell_done_fn done, cell_output_fn out, void *arg, char *err, size_t errlen)
{
	const char *kstate = "live";
	char note[300] = "";
	for (const struct tomb *t = ks->tombs; t; t = t->next)
		if (!t->language && !strcmp(t->workspace, j->workspace)) {
			snprintf(err, errlen, "the session ended: its kernels are gone");
			return NULL;
		}
	struct kernel *k = find(ks, j->workspace, j->language);
	/* A kernel's limits are its cgroup's, fixed at its start.  A cell
	 * that gives a memory, cpus or pids its live kernel does not have
	 * gets a fresh kernel that has it (run in the old one, it would be
	 * held to limits it did not ask for, and die at them); the limits it
	 * left to their defaults stay the old kernel's.  A reset starts the
	 * kernel afresh, with the cell's limits, given or not. */
	struct limits lim = j->lim;
	char changed[200] = "";
	if (k && !j->reset) {
		for (size_t i = 0; i < sizeof kernel_sized / sizeof kernel_sized[0]; i++)
			if (!(j->lim_given & 1u << kernel_sized[i]))
				limit_set(&lim, kernel_sized[i], limit_get(&k->lim, kernel_sized[i]));
	}
	if (k)
		changed_limits(&k->lim, &lim, changed, sizeof changed);
	if (k && (j->reset || changed[0])) {
		kill_kernel(k, K_GONE, j->reset ? "was reset" : "was restarted with other limits");
		k->forget = true;
		k = NULL;
		kstate = "restarted";
		if (j->reset)
			snprintf(note, sizeof note, "reset: a fresh kernel, nothing of the last one's state%s%s",
				 changed[0] ? "; " : "", changed);
		else
			snprintf(note, sizeof note, "kernel restarted for this cell's limits, state lost: %s", changed);
	}
	if (!k && !be->kernels)
		snprintf(err, errlen, "the %s backend runs no kernels (run_cell needs the native backend)", be->name);
	else if (!k && ks->conf->max_kernels && cell_live(ks) >= ks->conf->max_kernels)
		snprintf(err, errlen, "too many live kernels (max_kernels %llu in %s): end a session, or wait for idle "
					  "ones to stop (kernel_idle)", (unsigned long long)ks->conf->max_kernels, ks->conf->path);
	else if (!k) {
		char *gone = tomb_take(ks, j->workspace, j->language);
		if (gone && !note[0]) {
			kstate = "restarted";
			snprintf(note, sizeof note, "kernel restarted, state lost: the last one %s", gone);
		} else if (!note[0])
			kstate = "started";
		free(gone);
		k = kernel_new(ks, be, j, &lim, envp, netns, err, errlen);
	}
	if (!k)
		return NULL;
	struct cell *c = util_xalloc(sizeof *c);
	c->done = done;
	c->out = out;
	c->arg = arg;
	c->timeout_ms = j->lim.timeout_ms;
	c->t0 = util_now_ms();
	c->info = jv_object();
	c->k = k;
	c->n = ++k->count;
	cap_buf_init(&c->res.out, (size_t)j->lim.output);
	cap_buf_init(&c->res.err, (size_t)j->lim.output);
	c->info = jv_object_set(c->info, jv_string("execution_count"), jv_number(c->n));
	c->info = jv_object_set(c->info, jv_string("kernel"), jv_string(kstate));
	/* The limits the cell ran under, for its result: its own timeout
	 * and output cap, and the rest its kernel's, set at the kernel's
	 * start (a cell that gave no memory runs with whatever its kernel
	 * has, not the default its job shows). */
	struct limits eff = k->lim;
	eff.timeout_ms = j->lim.timeout_ms;
	eff.output = j->lim.output;
	c->info = jv_object_set(c->info, jv_string(REQ_KEY(limits)), limits_to_json(&eff));
	if (note[0])
		c->info = jv_object_set(c->info, jv_string("kernel_note"), jv_string(note));
	take_pending(k, c);
	k->cur = c;
	jv req = jv_object_set(jv_object(), jv_string("cell"), jv_number(c->n));
	req = jv_object_set(req, jv_string("timeout_ms"), jv_number((double)c->timeout_ms));
	send_line(k, jv_object_set(req, jv_string("code"), jv_string_sized(j->code, (int)j->code_len)));
	if (!k->dying)
		arm(k, c->timeout_ms);
	return c;
}

void cell_cancel(struct cell *c)
{
	if (!c || c->phase != P_RUNNING)
		return;
	c->cancelled = true;
	arm(c->k, 0);
}
