#define _GNU_SOURCE
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "artifact.h"
#include "bgio.h"
#include "ccache.h"
#include "cell.h"
#include "egress.h"
#include "job.h"
#include "judge.h"
#include "ns.h"
#include "proc.h"
#include "rec.h"
#include "req.h"
#include "status.h"
#include "trial.h"
#include "util.h"

enum stage { ST_COMPILE, ST_RUN };

struct run {
	struct run_env *env;
	struct job job;
	struct backend *be;  /* the job's backend */
	struct bk_scratch *scratch;
	struct bk_stage *st; /* the stage in its sandbox, or NULL */
	struct cell *cell;   /* a cell in its kernel (cell.h), or NULL */
	struct trial *trial; /* a judged job's tests (trial.h), or NULL */
	unsigned cell_enforced;
	char ckey[65];       /* compile cache key, "" if not cacheable */
	bool parked;         /* waiting for another run compiling the same key */
	enum stage stage;
	jv compile;          /* the compile stage's object, or jv_null() */
	jv timings;
	double started_epoch_ms;
	double t0;
	char **envp;
	char **run_envp;     /* a session's run with a proxy of its own port (session_proxy), or NULL */
	int egress_lfd;      /* that proxy's listening socket, or 0 */
	char **outputs;      /* a session's inline code: the outputs in its directory */
	bool own_removed;    /* its own name in the workspace is gone (or it has none) */
	struct art_snap before; /* "artifacts": the scratch's files before the run stage */
	bool snapped;
	struct stage_spec spec;
	struct bgio *io;     /* a background job's input (and terminal), or NULL */
	struct cap_buf tty_out; /* a terminal's output, for the result's stdout */
	run_done_fn done;
	void *arg;
};

static double round1(double v)
{
	return round(v * 10) / 10;
}

static const char *stage_status(const struct stage_result *br)
{
	switch (br->status) {
	case STAGE_EXITED: return br->exit_code == 0 ? STATUS(success) : STATUS(error);
	case STAGE_SIGNALED: return STATUS(error);
	case STAGE_TIMEOUT: return STATUS(timeout);
	case STAGE_OOM: return STATUS(memory_limit);
	case STAGE_CANCELLED:
	case STAGE_INTERNAL: return STATUS(internal_error);
	}
	return STATUS(internal_error);
}

/* The fields one stage contributes, into obj (consumed). */
static jv stage_fields(jv obj, const struct stage_result *br)
{
	char sig[32];
	obj = jv_object_set(obj, jv_string("exit_code"), br->status == STAGE_EXITED ? jv_number(br->exit_code) : jv_null());
	obj = jv_object_set(obj, jv_string("signal"),
			    br->status == STAGE_EXITED || br->status == STAGE_INTERNAL || br->status == STAGE_CANCELLED || !br->signal
				    ? jv_null() : jv_string(stage_signal_name(br->signal, sig, sizeof sig)));
	obj = jv_object_set(obj, jv_string("stdout"), cap_buf_string(&br->out));
	obj = jv_object_set(obj, jv_string("stderr"), cap_buf_string(&br->err));
	obj = jv_object_set(obj, jv_string("stdout_bytes"), jv_number((double)br->out.total));
	obj = jv_object_set(obj, jv_string("stderr_bytes"), jv_number((double)br->err.total));
	obj = jv_object_set(obj, jv_string("stdout_truncated"), jv_bool(cap_buf_truncated(&br->out)));
	obj = jv_object_set(obj, jv_string("stderr_truncated"), jv_bool(cap_buf_truncated(&br->err)));
	obj = jv_object_set(obj, jv_string("duration_ms"), jv_number(round1(br->duration_ms)));
	obj = jv_object_set(obj, jv_string("cpu_ms"), br->cpu_ms >= 0 ? jv_number(round1(br->cpu_ms)) : jv_null());
	obj = jv_object_set(obj, jv_string("memory_peak_bytes"), br->mem_peak >= 0 ? jv_number((double)br->mem_peak) : jv_null());
	return obj;
}

static void mark(struct run *r, const char *what)
{
	if (r->env->timings)
		r->timings = jv_object_set(r->timings, jv_string(what), jv_number(round(util_now_ms() * 1000 - r->t0 * 1000) / 1000));
}

/* The result record: the job without sbx-run's own fields, plus fields. */
static jv base_result(struct run *r, const char *status)
{
	jv res = jv_copy(r->job.rec);
	res = jv_object_delete(res, jv_string(REQ_KEY(exec)));
	res = jv_object_delete(res, jv_string(REQ_KEY(compile_limits)));
	res = jv_object_set(res, jv_string("status"), jv_string(status));
	return res;
}

/* The scratch goes as soon as the result is made (a native one, a
 * detached mount, with its last descriptor). */
static void close_scratch(struct run *r)
{
	bk_scratch_close(r->scratch);
	r->scratch = NULL;
}

static void free_stage(struct run *r)
{
	if (r->st)
		r->be->ops->stage_free(r->st);
	r->st = NULL;
}

/* A session's inline code: the name of its own at the workspace's top
 * (its directory, or its file), or NULL. */
static const char *own_name(const struct job *j)
{
	if (!j->workspace || j->install)
		return NULL;
	return j->dir ? j->dir : j->file && ns_reserved(j->file) ? j->file : NULL;
}

/* Remove it, and whatever is there under its name (a program of the
 * session may have planted anything, even for an id not used yet). */
static void remove_own(struct run *r)
{
	const char *own = own_name(&r->job);
	int ws = own ? open(r->job.workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (ws >= 0) {
		util_remove_at(ws, own);
		close(ws);
	}
}

/* A session's inline code leaves nothing in the workspace: it goes when
 * the run is done (with what the program put beside it). */
static void drop_dir(struct run *r)
{
	if (!r->own_removed) {
		remove_own(r);
		r->own_removed = true;
	}
}

static void complete(struct run *r, jv res)
{
	drop_dir(r);
	if (r->job.judge && !rec_has(res, "verdict")) {
		/* Its tests never ran (a compile error, a cancel, a failure to
		 * start): the status is the verdict, and the request's tests
		 * (inputs, expected outputs) do not come back. */
		const char *st = rec_str(res, "status", NULL);
		res = jv_object_set(res, jv_string("verdict"), jv_string(st ? st : STATUS(internal_error)));
		res = jv_object_set(res, jv_string("tests_passed"), jv_number(0));
		res = jv_object_set(res, jv_string("tests_total"), jv_number((double)r->job.judge->n));
		res = jv_object_set(res, jv_string("tests"), jv_array()); /* check-names: the result's tests */
	}
	char when[40];
	util_iso8601(r->started_epoch_ms, when, sizeof when);
	res = jv_object_set(res, jv_string("started_at"), jv_string(when));
	res = jv_object_set(res, jv_string(REQ_KEY(backend)), jv_string(r->be->name));
	res = jv_object_set(res, jv_string("compile"), jv_copy(r->compile));
	if (r->st || r->job.cell || r->trial) {
		unsigned bits = r->st ? r->be->ops->result(r->st)->enforced : r->cell_enforced;
		res = jv_object_set(res, jv_string("limits_enforced"), backend_enforced_json(bits));
		res = jv_object_set(res, jv_string("limits_missing"), backend_missing_json(bits));
	}
	/* an install's connections, each as its proxy saw it (egress.h) */
	jv egress = r->st ? jv_copy(r->be->ops->result(r->st)->egress) : jv_null();
	if (jv_get_kind(egress) == JV_KIND_ARRAY)
		res = jv_object_set(res, jv_string("egress"), egress);
	else
		jv_free(egress);
	mark(r, "result");
	if (r->env->timings)
		res = jv_object_set(res, jv_string("timings"), jv_copy(r->timings));
	close_scratch(r);
	r->done(r, res, r->arg);
}

/* A result with no run behind it: internal_error, or cancelled (a status
 * of its own, so that alerts and success rates leave it out). */
static void internal(struct run *r, const char *msg)
{
	jv res = base_result(r, strcmp(msg, STATUS(cancelled)) ? STATUS(internal_error) : msg);
	res = jv_object_set(res, jv_string("error"), jv_string(msg));
	res = jv_object_set(res, jv_string("exit_code"), jv_null());
	res = jv_object_set(res, jv_string("signal"), jv_null());
	complete(r, res);
}

static void start_stage(struct run *r, enum stage st);

/* A stage behind a proxy (egress.h: an install's, or a run's with a
 * network allow-list) finds it in the variables the usual tools read,
 * after the language's own: pip, curl, git, Go, Cargo, Python's urllib
 * and npm the *_PROXY ones; Node 24 and later its fetch and http with
 * NODE_USE_ENV_PROXY; Java the properties in JDK_JAVA_OPTIONS (the java
 * launcher notes them on stderr).  A run's own loopback is its own
 * (NO_PROXY): a program may serve and call itself there.  An install's
 * serves nothing, so everything, even a "local" URL a package names,
 * goes to the proxy, which refuses it at once rather than leaving the
 * package manager to retry a closed port.  A program that ignores all
 * of them reaches nothing: the sandbox has no other way out. */
static char **proxy_env(char *const *lang, bool install, int port)
{
	static const char *const names[] = { "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy" };
	enum { NP = sizeof names / sizeof names[0] };
	char proxy[NP + 2][200];
	for (size_t i = 0; i < NP; i++)
		snprintf(proxy[i], sizeof proxy[i], "%s=http://127.0.0.1:%d", names[i], port);
	snprintf(proxy[NP], sizeof proxy[NP], "NODE_USE_ENV_PROXY=1");
	snprintf(proxy[NP + 1], sizeof proxy[NP + 1],
		 "JDK_JAVA_OPTIONS=-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=%d -Dhttp.proxyHost=127.0.0.1 "
		 "-Dhttp.proxyPort=%d -Dhttp.nonProxyHosts=localhost|127.0.0.1", port, port);
	static const char *const own_loopback[] = { "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1" };
	static const char *const no_exception[] = { "NO_PROXY=", "no_proxy=" };
	size_t n = 0;
	while (lang && lang[n])
		n++;
	char **all = util_xalloc((n + NP + 2 + 3) * sizeof *all);
	if (n)
		memcpy(all, lang, n * sizeof *all);
	for (size_t i = 0; i < NP + 2; i++)
		all[n + i] = proxy[i];
	memcpy(all + n + NP + 2, install ? no_exception : own_loopback, 2 * sizeof *all);
	all[n + NP + 4] = NULL;
	char **env = stage_env(all);
	free(all);
	return env;
}

/* ---- the compile cache ------------------------------------------------
 * Concurrent misses of one key compile once: the first run to miss owns
 * the key while it compiles; the others park on it and look again when
 * it is done (a hit, or their own compile if the owner failed). */
struct cflight {
	char key[65];
	struct run **waiters;
	size_t n;
};

static struct cflight *flight_find(struct run_env *e, const char *key)
{
	for (size_t i = 0; i < e->nflights; i++)
		if (!strcmp(e->flights[i].key, key))
			return &e->flights[i];
	return NULL;
}

static void compile_or_hit(struct run *r);

/* The owner of r->ckey is done with it: wake whoever waited. */
static void flight_end(struct run *r)
{
	struct run_env *e = r->env;
	struct cflight *f = r->ckey[0] ? flight_find(e, r->ckey) : NULL;
	if (!f)
		return;
	struct run **w = f->waiters;
	size_t n = f->n;
	*f = e->flights[--e->nflights];
	for (size_t i = 0; i < n; i++) {
		w[i]->parked = false;
		compile_or_hit(w[i]);
	}
	free(w);
}

/* Restore a hit into the scratch directory; false on any failure. */
static bool restore(struct run *r, struct ccache_file *files, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r->be->ops->scratch_write(r->scratch, files[i].path, files[i].data, files[i].len, files[i].mode) < 0)
			return false;
	return true;
}

/* Before a compile stage: a cache hit goes straight to the run stage. */
static void compile_or_hit(struct run *r)
{
	struct run_env *e = r->env;
	if (!r->ckey[0]) {
		start_stage(r, ST_COMPILE);
		return;
	}
	double t = util_now_ms();
	struct ccache_file *files;
	size_t n;
	jv comp;
	if (ccache_get(e->cache, r->ckey, &files, &n, &comp)) {
		bool ok = restore(r, files, n);
		ccache_files_free(files, n);
		if (ok) {
			comp = jv_object_set(comp, jv_string("duration_ms"), jv_number(round((util_now_ms() - t) * 10) / 10));
			comp = jv_object_set(comp, jv_string("cpu_ms"), jv_null());
			comp = jv_object_set(comp, jv_string("memory_peak_bytes"), jv_null());
			jv_free(r->compile);
			r->compile = comp;
			mark(r, "cache_hit");
			r->ckey[0] = 0;
			start_stage(r, ST_RUN);
			return;
		}
		jv_free(comp);
	}
	struct cflight *f = flight_find(e, r->ckey);
	if (f) {
		f->waiters = util_xrealloc(f->waiters, (f->n + 1) * sizeof *f->waiters);
		f->waiters[f->n++] = r;
		r->parked = true;
		return;
	}
	e->flights = util_xrealloc(e->flights, (e->nflights + 1) * sizeof *e->flights);
	f = &e->flights[e->nflights++];
	*f = (struct cflight){ .n = 0 };
	snprintf(f->key, sizeof f->key, "%s", r->ckey);
	start_stage(r, ST_COMPILE);
}

/* A parked run that goes away leaves its flight's waiting list. */
static void unpark(struct run *r)
{
	struct cflight *f = r->parked ? flight_find(r->env, r->ckey) : NULL;
	for (size_t i = 0; f && i < f->n; i++)
		if (f->waiters[i] == r) {
			f->waiters[i] = f->waiters[--f->n];
			break;
		}
	r->parked = false;
	r->ckey[0] = 0;
}

/* The run stage's fields, into res (consumed).  A terminal has one
 * stream, read from its master (bgio.h): it is the result's stdout. */
static jv run_fields(struct run *r, jv res, const struct stage_result *br)
{
	if (!r->job.rows)
		return stage_fields(res, br);
	bgio_drain(r->io);
	struct stage_result shown = *br;
	shown.out = r->tty_out;
	return stage_fields(res, &shown);
}

static void stage_result(struct run *r, const struct stage_result *br)
{
	if (r->env->timings) {
		jv t = jv_copy(br->timings);
		r->timings = jv_object_set(r->timings, jv_string(r->stage == ST_COMPILE ? "compile_stage" : "run_stage"), t);
	}
	if (br->status == STAGE_INTERNAL && br->noexec && r->stage == ST_RUN && rec_has(r->job.rec, REQ_KEY(command))) {
		/* The user's command names no program the sandbox has: their
		 * mistake, as a shell reports it (127 not found, 126 not
		 * executable), not sbx's. */
		char msg[600];
		snprintf(msg, sizeof msg, "cannot run \"%s\": %s%s", r->job.run[0], strerror(br->noexec),
			 br->noexec == ENOENT ? " (not on the sandbox's PATH, nor a file of the workspace)" : "");
		jv res = jv_object_set(base_result(r, STATUS(error)), jv_string("error"), jv_string(msg));
		struct stage_result as_shell = *br;
		as_shell.status = STAGE_EXITED;
		as_shell.exit_code = br->noexec == ENOENT ? 127 : 126;
		complete(r, stage_fields(res, &as_shell));
		return;
	}
	if (br->status == STAGE_CANCELLED && r->stage == ST_RUN) {
		/* What the program printed until then stays its (a process
		 * stopped with its session says what it last wrote). */
		jv res = jv_object_set(base_result(r, STATUS(cancelled)), jv_string("error"), jv_string(STATUS(cancelled)));
		complete(r, run_fields(r, res, br));
		return;
	}
	if (br->status == STAGE_INTERNAL || br->status == STAGE_CANCELLED) {
		internal(r, br->status == STAGE_CANCELLED ? STATUS(cancelled) : br->error);
		return;
	}
	if (r->stage == ST_COMPILE) {
		jv c = jv_object();
		c = jv_object_set(c, jv_string("status"), jv_string(stage_status(br)));
		c = stage_fields(c, br);
		if (jv_get_kind(br->egress) == JV_KIND_ARRAY)
			c = jv_object_set(c, jv_string("egress"), jv_copy(br->egress));
		c = jv_object_set(c, jv_string("cached"), jv_false());
		jv_free(r->compile);
		r->compile = c;
		if (r->ckey[0]) {
			if (br->status == STAGE_EXITED && br->exit_code == 0)
				ccache_put(r->env->cache, r->ckey, &r->job, r->scratch->dir, c);
			flight_end(r);
			r->ckey[0] = 0;
		}
		if (br->status == STAGE_EXITED && br->exit_code == 0) {
			free_stage(r);
			start_stage(r, ST_RUN);
			return;
		}
		jv res = base_result(r, STATUS(compile_error));
		/* The program never ran: empty output, no exit code. */
		struct stage_result none;
		memset(&none, 0, sizeof none);
		none.status = STAGE_INTERNAL;
		none.cpu_ms = -1;
		none.mem_peak = -1;
		res = stage_fields(res, &none);
		complete(r, res);
		return;
	}
	jv res = run_fields(r, base_result(r, stage_status(br)), br);
	if (r->snapped)
		res = art_collect(r->env->conf, r->scratch->dir, &r->before, res);
	complete(r, res);
}

static void stage_output(void *arg, int stream, const char *data, size_t len);

/* A cell's result: a run's fields, and the kernel's (cell.h). */
static void cell_done(const struct stage_result *br, jv info, void *arg)
{
	struct run *r = arg;
	r->cell = NULL;
	r->cell_enforced = br->enforced;
	/* A kernel gone in the cell (os._exit(0) too) failed it. */
	bool alive = true;
	rec_bool(info, "kernel_alive", &alive);
	const char *st = br->status == STAGE_CANCELLED ? STATUS(cancelled) : stage_status(br);
	jv res = base_result(r, !alive && status_find(st) == STATUS_success ? STATUS(error) : st);
	res = stage_fields(res, br);
	if (br->status == STAGE_INTERNAL)
		res = jv_object_set(res, jv_string("error"), jv_string(br->error[0] ? br->error : "the kernel could not start"));
	else if (br->status == STAGE_CANCELLED)
		res = jv_object_set(res, jv_string("error"), jv_string(STATUS(cancelled)));
	jv_object_foreach(info, k, v) res = jv_object_set(res, k, v);
	if (!rec_has(res, "value"))
		res = jv_object_set(res, jv_string("value"), jv_null());
	if (r->snapped)
		res = art_collect(r->env->conf, r->scratch->dir, &r->before, res);
	complete(r, res);
}

/* ---- a session's loopback (run.h) ------------------------------------ */

struct run_net {
	char *workspace;
	int fd;
	struct backend *be;  /* whose namespace it is */
	struct run_net *next;
};

/* The namespace r's run stage joins: its session's (made now if need
 * be), or 0 for one of its own. */
static int session_net(struct run *r, char *err, size_t errlen)
{
	const struct job *j = &r->job;
	if (!j->workspace || j->network || j->install || !r->be->kernels)
		return 0;
	for (struct run_net *n = r->env->nets; n; n = n->next)
		if (!strcmp(n->workspace, j->workspace))
			return n->fd;
	if (r->env->nets_off)
		return 0;
	int fd = r->be->ops->netns_new(r->be, err, errlen);
	if (fd < 0) {
		/* A host that lets us make no namespace of our own (a container
		 * without CAP_NET_ADMIN, where no loopback can be brought up in
		 * one): each run keeps its own loopback, as every run did before
		 * sessions shared one, and sbx-run says so, once. */
		util_warn("a session's runs cannot share one loopback here (%s): each has its own", err);
		r->env->nets_off = true;
		return 0;
	}
	struct run_net *n = util_xalloc(sizeof *n);
	*n = (struct run_net){ util_strdup(j->workspace), fd, r->be, r->env->nets };
	r->env->nets = n;
	return fd;
}

/* A run stage with an allow-list in its session's namespace: its proxy
 * listens on a port of its own there (another run of the session may
 * have one at once), made here in that namespace, and the program's
 * proxy variables name it. */
static int session_proxy(struct run *r, char *err, size_t errlen)
{
	int fd = r->be->ops->netns_socket(r->be, r->spec.netns, err, errlen);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (fd < 0)
		return -1;
	if (proc_set_nonblock(fd, false) < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		snprintf(err, errlen, "cannot make the run's proxy socket in its session's namespace: %s", strerror(errno));
		close(fd);
		return -1;
	}
	r->egress_lfd = fd;
	r->spec.egress_listen = fd;
	r->run_envp = proxy_env(r->job.env, false, ntohs(a.sin_port));
	r->spec.env = r->run_envp;
	return 0;
}

void run_session_end(struct run_env *e, const char *workspace)
{
	for (struct run_net **p = &e->nets; *p; p = &(*p)->next)
		if (!strcmp((*p)->workspace, workspace)) {
			struct run_net *n = *p;
			*p = n->next;
			close(n->fd);
			free(n->workspace);
			free(n);
			return;
		}
}

int run_session_socket(struct run_env *e, const char *workspace, char *err, size_t errlen)
{
	for (struct run_net *n = e->nets; n; n = n->next)
		if (!strcmp(n->workspace, workspace))
			return n->be->ops->netns_socket(n->be, n->fd, err, errlen);
	snprintf(err, errlen, "nothing runs in the session: its loopback has nothing to connect to");
	return -1;
}

void run_nets_free(struct run_env *e)
{
	while (e->nets)
		run_session_end(e, e->nets->workspace);
}

static void start_cell(struct run *r, char *err, size_t errlen)
{
	if (r->job.artifacts) {
		art_scan(r->scratch->dir, &r->before);
		r->snapped = true;
	}
	mark(r, "run_start");
	if (r->env->on_stage)
		r->env->on_stage(r, "run");
	int netns = session_net(r, err, errlen);
	if (!r->env->kernels)
		snprintf(err, errlen, "cells need a kernel table (sbx-run): none here");
	else
		r->cell = cell_start(r->env->kernels, r->be, &r->job, r->envp, netns, cell_done,
				     r->env->on_output ? stage_output : NULL, r, err, errlen);
}

static void stage_done(void *arg)
{
	struct run *r = arg;
	stage_result(r, r->be->ops->result(r->st));
}

static void stage_output(void *arg, int stream, const char *data, size_t len)
{
	struct run *r = arg;
	r->env->on_output(r, stream, data, len);
}

static void tty_output(void *arg, const char *data, size_t len)
{
	struct run *r = arg;
	cap_buf_add(&r->tty_out, data, len);
	if (r->env->on_output)
		r->env->on_output(r, 1, data, len);
}

/* A judged job's tests: the summary is its result's (trial.h). */
static void trial_done(jv sum, unsigned enforced, void *arg)
{
	struct run *r = arg;
	r->cell_enforced = enforced;
	jv res = base_result(r, STATUS(success));
	jv_object_foreach(sum, k, v) res = jv_object_set(res, k, v);
	jv_free(sum);
	complete(r, res);
}

static void start_trial(struct run *r)
{
	struct ccache_file *art = NULL;
	size_t nart = 0;
	if (r->job.compile && !ccache_collect(&r->job, r->scratch->dir, &art, &nart)) {
		internal(r, "the compiled program could not be read back for its tests (more than scratch_size, or 256 files)");
		return;
	}
	/* Each test has a scratch of its own; this one is done. */
	close_scratch(r);
	mark(r, "run_start");
	if (r->env->on_stage)
		r->env->on_stage(r, "run");
	r->trial = trial_start(r->env, r->be, &r->job, r->envp, art, nart, trial_done, r);
	if (!r->trial) {
		char msg[160];
		snprintf(msg, sizeof msg, "the tests could not start: eventfd: %s", strerror(errno));
		internal(r, msg);
	}
}

static void start_stage(struct run *r, enum stage st)
{
	struct job *j = &r->job;
	if (st == ST_RUN && j->judge) {
		start_trial(r);
		return;
	}
	r->stage = st;
	if (st == ST_RUN && j->artifacts && !r->snapped) {
		art_scan(r->scratch->dir, &r->before);
		r->snapped = true;
	}
	char err[256];
	int made = r->be->ops->scratch_stage(r->scratch, st == ST_COMPILE, err, sizeof err);
	if (made < 0) {
		internal(r, err);
		return;
	}
	if (made)
		mark(r, "scratch_cloned");
	r->spec = (struct stage_spec){
		.argv = st == ST_COMPILE ? j->compile : j->run,
		.env = r->envp,
		.lim = st == ST_COMPILE ? &j->clim : &j->lim,
		.scratch = r->scratch,
		.compile = st == ST_COMPILE,
		/* W^X: every program may write its directory but execute
		 * nothing it wrote; the compiler's declared outputs alone are
		 * executable. */
		.outputs = st == ST_RUN && j->compile ? r->outputs ? r->outputs : j->outputs : NULL,
		/* In a session what the package manager installed is
		 * executable and read-only for programs: they can load it, not
		 * change it. */
		.deps = j->workspace && !j->install,
		/* A session's workspace is where agents build and run their
		 * own programs: executable unless the configuration says not. */
		.work_exec = j->workspace && j->work_exec,
		/* An install reaches its registries through its proxy, only;
		 * a program with an allow-list its hosts, through its own, and
		 * so does its compiler (Go and Cargo fetch dependencies then). */
		.egress = j->install ? r->env->conf->install_network ? j->registries : NULL : j->egress,
		.stdin_data = st == ST_RUN ? j->stdin_data : NULL,
		.stdin_len = st == ST_RUN ? j->stdin_len : 0,
		.network = j->network,
		.rootfs = j->rootfs,
		.binds = j->binds,
		.image = j->image,
		.on_output = r->env->on_output ? stage_output : NULL,
		.output_arg = r,
		.timings = r->env->timings,
		.label = run_id(r),
	};
	int child = -1;
	if (st == ST_RUN) {
		r->spec.cwd = j->cwd;
		r->spec.netns = session_net(r, err, sizeof err);
		if (r->spec.netns > 0 && r->spec.egress && session_proxy(r, err, sizeof err) < 0) {
			internal(r, err);
			return;
		}
		if (j->background) {
			r->io = bgio_new(r->env->loop, j->rows, j->cols, tty_output, r, &child, err, sizeof err);
			if (!r->io) {
				internal(r, err);
				return;
			}
			cap_buf_init(&r->tty_out, j->lim.output);
			r->spec.chan = child;
			r->spec.tty = j->rows > 0;
		}
	}
	mark(r, st == ST_COMPILE ? "compile_start" : "run_start");
	if (r->env->on_stage)
		r->env->on_stage(r, st == ST_COMPILE ? "compile" : "run");
	r->st = bk_start(r->be, r->env->loop, &r->spec, stage_done, r);
	/* The stage holds its own copy now (backend.h's chan). */
	if (child >= 0)
		close(child);
}

struct run *run_start(struct run_env *e, jv rec, run_done_fn done, void *arg, jv *immediate)
{
	struct run *r = util_xalloc(sizeof *r);
	r->env = e;
	r->compile = jv_null();
	r->timings = e->timings ? jv_object() : jv_null();
	r->t0 = util_now_ms();
	r->started_epoch_ms = util_epoch_ms();
	r->done = done;
	r->arg = arg;
	char err[1024];
	if (!job_load(e->conf, rec, &r->job, err, sizeof err)) {
		*immediate = rec_make_invalid(jv_copy(r->job.rec), "%s", err);
		run_free(r);
		return NULL;
	}
	for (size_t i = 0; i < e->nbackends && !r->be; i++)
		if (!strcmp(e->backends[i]->name, r->job.backend))
			r->be = e->backends[i];
	if (!r->be) {
		*immediate = rec_make_invalid(jv_copy(r->job.rec), "backend \"%s\" is not available to this program", r->job.backend);
		run_free(r);
		return NULL;
	}
	if (r->job.background && !r->be->kernels) {
		*immediate = rec_make_invalid(jv_copy(r->job.rec), "background jobs run on the native backend only: the %s "
					      "backend cannot feed a program's input while it runs", r->be->name);
		run_free(r);
		return NULL;
	}
	r->envp = r->job.install || r->job.egress ? proxy_env(r->job.env, r->job.install, EGRESS_PORT) : stage_env(r->job.env);
	mark(r, "job_loaded");
	/* The scratch directory: the session's workspace, or a fresh one. */
	uint64_t size = r->job.lim.scratch > r->job.clim.scratch ? r->job.lim.scratch : r->job.clim.scratch;
	if (r->be->broken)
		snprintf(err, sizeof err, "%s", r->be->why);
	else
		r->scratch = bk_scratch_open(r->be, r->job.workspace, own_name(&r->job), r->job.dir != NULL, r->job.work_exec,
					     size, err, sizeof err);
	if (!r->scratch) {
		*immediate = jv_object_set(base_result(r, STATUS(internal_error)), jv_string("error"), jv_string(err));
		run_free(r);
		return NULL;
	}
	/* The program and its files.  A workspace may hold anything the
	 * session's programs planted: replace, never follow. */
	/* An install has no program: a session's own file of that name stays. */
	bool ok = true;
	/* An install writes no program (a record that names one, written by
	 * hand or before, must not write over a workspace file). */
	remove_own(r);
	if (r->job.file && !r->job.install) {
		char *path = r->job.dir ? util_fmt("%s/%s", r->job.dir, r->job.file) : util_strdup(r->job.file);
		ok = r->be->ops->scratch_write(r->scratch, path, r->job.code, r->job.code_len, 0644) == 0;
		free(path);
	}
	if (r->job.dir && r->job.outputs) {
		size_t n = 0;
		while (r->job.outputs[n])
			n++;
		r->outputs = util_xalloc((n + 1) * sizeof *r->outputs);
		for (size_t i = 0; i < n; i++)
			r->outputs[i] = util_fmt("%s/%s", r->job.dir, r->job.outputs[i]);
		r->outputs[n] = NULL;
	}
	for (size_t i = 0; ok && i < r->job.nfiles; i++)
		ok = r->be->ops->scratch_write(r->scratch, r->job.files[i].path, r->job.files[i].data, r->job.files[i].len, 0644) == 0;
	if (!ok) {
		/* A full workspace (or files larger than the scratch) is the
		 * request's doing, not sbx's: an error naming the quota. */
		bool full = errno == ENOSPC || errno == EDQUOT;
		if (full && r->job.workspace)
			snprintf(err, sizeof err, "the session's workspace is full (its quota is workspace_size): the program "
				 "could not be written; remove files from it, or start a new session");
		else
			snprintf(err, sizeof err, "cannot write the job's files into its scratch directory: %s%s", strerror(errno),
				 full ? " (files larger than scratch_size)" : "");
		*immediate = jv_object_set(base_result(r, full ? STATUS(error) : STATUS(internal_error)), jv_string("error"), jv_string(err));
		*immediate = jv_object_set(*immediate, jv_string("exit_code"), jv_null());
		*immediate = jv_object_set(*immediate, jv_string("signal"), jv_null());
		run_free(r);
		return NULL;
	}
	mark(r, "files_written");
	if (r->job.compile) {
		/* The compiler's identity (docker: an API call per job, ~1 ms);
		 * unknown, the job is not cached.  Off: no key, no waiting for a
		 * twin's compile. */
		char id[4400];
		if (!ccache_on(e->cache) || !ccache_cacheable(&r->job) || !r->be->ops->compiler_id(r->be, &r->job, id, sizeof id) ||
		    !ccache_key(e->cache, &r->job, id, r->ckey))
			r->ckey[0] = 0;
		compile_or_hit(r);
	} else if (r->job.cell) {
		start_cell(r, err, sizeof err);
		if (!r->cell) {
			*immediate = jv_object_set(base_result(r, STATUS(internal_error)), jv_string("error"), jv_string(err));
			run_free(r);
			return NULL;
		}
	} else
		start_stage(r, ST_RUN);
	return r;
}

void run_cancel(struct run *r)
{
	if (r->parked) {
		unpark(r);
		internal(r, STATUS(cancelled));
		return;
	}
	if (r->st)
		r->be->ops->cancel(r->st);
	cell_cancel(r->cell);
	trial_cancel(r->trial);
}

void run_free(struct run *r)
{
	if (!r)
		return;
	if (r->parked)
		unpark(r);
	else if (r->ckey[0])
		flight_end(r);
	free_stage(r);
	bgio_free(r->io);
	if (r->job.rows)
		cap_buf_free(&r->tty_out);
	trial_free(r->trial);
	close_scratch(r);
	drop_dir(r);
	art_free(&r->before);
	util_strv_free(r->outputs);
	util_strv_free(r->envp);
	util_strv_free(r->run_envp);
	if (r->egress_lfd > 0)
		close(r->egress_lfd);
	jv_free(r->compile);
	jv_free(r->timings);
	job_free(&r->job);
	free(r);
}

const char *run_id(const struct run *r)
{
	return r->job.id;
}

bool run_tests_pending(const struct run *r)
{
	return r->job.judge && (!r->trial || trial_pending(r->trial));
}

const char *run_workspace(const struct run *r)
{
	return r->job.workspace;
}

bool run_background(const struct run *r)
{
	return r->job.background;
}

bool run_input(struct run *r, const char *data, size_t len, bool eof, char *err, size_t errlen)
{
	if (!r->io) {
		snprintf(err, errlen, r->job.background ? "its program has not started yet" : "not a background job");
		return false;
	}
	if (len && !bgio_write(r->io, data, len, err, errlen))
		return false;
	if (eof)
		bgio_eof(r->io);
	return true;
}

bool run_signal(struct run *r, int sig)
{
	return r->job.background && r->st && r->stage == ST_RUN && r->be->ops->signal(r->st, sig);
}

bool run_resize(struct run *r, unsigned rows, unsigned cols)
{
	return r->io && bgio_resize(r->io, rows, cols);
}
