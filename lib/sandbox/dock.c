/* dock: the docker backend.
 *
 * Theory of operation.  A stage is one container, made and removed through
 * the Engine API: create (the whole policy is in the create body: no
 * network, memory = memory+swap, NanoCpus, PidsLimit, read-only root,
 * noexec tmpfs for /tmp and $HOME, the scratch directory bound at /scratch,
 * every capability dropped, no-new-privileges, a non-root user, docker-init
 * as PID 1, rlimits, LogConfig "none" so that an output flood never reaches
 * the daemon's log files on the host's disk, and labels naming the job and
 * the process that owns it), attach (a hijacked HTTP/1.1 connection
 * carrying stdin one way and the multiplexed stdout/stderr frames the
 * other, read into the same capped buffers as the native backend's pipes),
 * start, wait, inspect (OOMKilled), delete.  Every call is asynchronous on
 * the caller's event loop (one connection per call, HTTP/1.0 so the body
 * simply ends at EOF; the attach alone is HTTP/1.1 for its Upgrade), so
 * many containers run at once from one thread and a timeout is a timer
 * like the native backend's: on expiry the container is killed, and
 * removed, before the result is written.  Every call has a deadline, so a
 * daemon that stops mid-run gives an internal_error, never a hang.
 *
 * Accounting: where the daemon uses the cgroupfs driver on this host, each
 * container gets a cgroup parent of its own (a cg_run group, no limits):
 * the group outlives the container, so its CPU time and memory peak can be
 * read after the container is gone, then the group is removed (dock_cg.c).
 *
 * Leftovers: containers carry the label sbx.owner = "<pid>.<start time>"
 * of the process that made them, and scratch directories the same prefix.
 * A supervisor killed outright (SIGKILL) cannot clean up; the next one to
 * start removes everything whose owner is no longer alive.
 *
 * W^X as in the native backend: the scratch tmpfs is noexec; the run stage
 * of a compiled language gets the compiler's declared outputs copied out
 * and bound read-only over themselves from an exec-allowed directory.
 */
#define _GNU_SOURCE
#include "dock_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"
#include "filter.h"
#include "ns.h"
#include "rec.h"
#include "stage.h"
#include "state.h"
#include "util.h"

#define STREAM_GRACE_MS 2000   /* output still arriving after the exit */

/* ---- one stage --------------------------------------------------------- */

enum phase { P_CREATE, P_ATTACH, P_START, P_RUNNING, P_INSPECT, P_REMOVE, P_DONE };

struct dock {
	struct dock_sys *d;
	struct loop *loop;
	struct stage_result res;
	stage_done_fn done;
	void *arg;
	enum phase phase;
	char id[80];
	char image[256];
	struct call *call, *wait, *killc; /* the call in flight, the long wait, a kill */
	int stream, timer;
	const char *in;
	size_t inlen, inoff;
	unsigned char hdr[8];
	size_t hdrlen, left;
	int ftype;
	bool eof, waited, timed_out, cancelled, killing, oom, finished, timings;
	double t_begin;               /* dock_start, for timings */
	char argv0[256];
	uint64_t limit, limit_out;
	int exit_code;
	double t0, t_exit;
	struct cg_run cg;
	bool cg_made;
	char *stage_dir;              /* root's, for what the stage binds from the host: egress/, deps */
	bool egress;                  /* an install: its proxy's socket is stage_dir/egress/sock */
	bool deps;                    /* a session's .deps is bound (through stage_dir/deps) */
	char *shim;                   /* sbx-egress-shim, bound into the container */
	struct egress proxy;          /* the proxy (egress.h), or none */
	char err[512];
	void (*on_output)(void *arg, int stream, const char *data, size_t len);
	void *output_arg;
};

static void advance(struct dock *k);

/* --timings: ms since the stage began, per API step. */
static void mark(struct dock *k, const char *what)
{
	if (k->timings)
		k->res.timings = jv_object_set(k->res.timings, jv_string(what),
					       jv_number(round((util_now_ms() - k->t_begin) * 1000) / 1000));
}

static void set_err(struct dock *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct dock *k, const char *fmt, ...)
{
	if (k->err[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(k->err, sizeof k->err, fmt, ap);
	va_end(ap);
	if (!k->err[0])
		snprintf(k->err, sizeof k->err, "the docker backend failed without a message");
}

static void close_stream(struct dock *k)
{
	if (k->stream >= 0) {
		loop_unwatch(k->loop, k->stream);
		close(k->stream);
		k->stream = -1;
	}
	k->eof = true;
}

static void demux(struct dock *k, const char *p, size_t n)
{
	while (n) {
		if (k->left == 0) {
			size_t take = 8 - k->hdrlen < n ? 8 - k->hdrlen : n;
			memcpy(k->hdr + k->hdrlen, p, take);
			k->hdrlen += take;
			p += take;
			n -= take;
			if (k->hdrlen < 8)
				return;
			k->ftype = k->hdr[0];
			k->left = (size_t)k->hdr[4] << 24 | (size_t)k->hdr[5] << 16 | (size_t)k->hdr[6] << 8 | k->hdr[7];
			k->hdrlen = 0;
			continue;
		}
		size_t take = k->left < n ? k->left : n;
		cap_buf_add(k->ftype == 2 ? &k->res.err : &k->res.out, p, take);
		if (k->on_output)
			k->on_output(k->output_arg, k->ftype == 2 ? 2 : 1, p, take);
		k->left -= take;
		p += take;
		n -= take;
	}
}

static void stream_io(struct loop *l, int fd, short rev, void *arg)
{
	struct dock *k = arg;
	(void)l;
	if (k->inoff < k->inlen && (rev & POLLOUT)) {
		ssize_t n = send(fd, k->in + k->inoff, k->inlen - k->inoff, MSG_NOSIGNAL);
		if (n > 0)
			k->inoff += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			k->inoff = k->inlen; /* the program stopped reading: like a closed pipe */
		if (k->inoff >= k->inlen)
			shutdown(fd, SHUT_WR);
		loop_watch(k->loop, fd, k->inoff < k->inlen ? POLLIN | POLLOUT : POLLIN, stream_io, k);
	}
	if (rev & (POLLIN | POLLHUP | POLLERR)) {
		char buf[65536];
		ssize_t n = read(fd, buf, sizeof buf);
		if (n > 0)
			demux(k, buf, (size_t)n);
		else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			close_stream(k);
			advance(k);
		}
	}
}

static void arm(struct dock *k, double ms)
{
	if (k->timer < 0)
		k->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec its = { .it_value = { (time_t)(ms / 1000), (long)fmod(ms, 1000) * 1000000L + 1 } };
	timerfd_settime(k->timer, 0, &its, NULL);
}

static void kill_container(struct dock *k);

static void timer_fired(struct loop *l, int fd, short rev, void *arg)
{
	struct dock *k = arg;
	uint64_t x;
	(void)l;
	(void)rev;
	if (read(fd, &x, sizeof x) < 0 && errno == EAGAIN)
		return;
	if (k->phase == P_DONE) {
		advance(k);
	} else if (k->phase == P_RUNNING && !k->waited && k->timed_out) {
		/* killed long ago and still not stopped: a daemon that hangs
		 * must not hang the job */
		set_err(k, "the Docker daemon did not stop the container within %d s of the kill; is it stuck?",
			CALL_TIMEOUT_MS / 1000);
		advance(k);
	} else if (k->phase == P_RUNNING && !k->waited) {
		k->timed_out = true;
		k->t_exit = util_now_ms();
		kill_container(k);
		arm(k, CALL_TIMEOUT_MS);
	} else if (k->phase == P_RUNNING && !k->eof) {
		/* exited, but the stream did not end: do not wait for it */
		close_stream(k);
		advance(k);
	}
}

static void kill_done(struct call *c, void *arg)
{
	struct dock *k = arg;
	k->killc = NULL;
	dock_call_free(c);
}

static void kill_container(struct dock *k)
{
	if (k->killing || !k->id[0])
		return;
	k->killing = true;
	char path[160];
	snprintf(path, sizeof path, "/containers/%s/kill?signal=SIGKILL", k->id);
	/* The wait in flight reports the end; a failed kill is seen there,
	 * and the removal (force) kills anyway. */
	k->killc = dock_call_start(k->d, k->loop, "POST", path, jv_invalid(), false, CALL_TIMEOUT_MS, "kill the container",
			      kill_done, k);
}

/* The stage's own directory on the host (root's, 0711, under the state
 * directory, named like a scratch so that the sweep finds a dead owner's):
 * what the container is given from the host goes through it, never
 * through a name in a session's workspace, which the program can turn
 * into a link to anywhere.  0 or -1 with the stage's error set. */
static int stage_dir(struct dock *k)
{
	struct dock_sys *d = k->d;
	if (k->stage_dir)
		return 0;
	mkdir(d->conf->state_dir, 0755);
	mkdir(d->state, 0711);
	char *dir = util_fmt("%s/%s-%lu", d->state, d->owner, ++d->seq);
	if (mkdir(dir, 0711) < 0) {
		set_err(k, "cannot create %s: %s", dir, strerror(errno));
		free(dir);
		return -1;
	}
	k->stage_dir = dir;
	return 0;
}

/* A session's .deps, bound read-only over itself in the container: opened
 * beneath the workspace without following any link, and bound (by that
 * descriptor, not by its name) onto stage_dir/deps, which is the source the
 * engine gets.  A .deps that is missing or not a directory is left out. */
static void deps_stage(struct dock *k, const char *workspace)
{
	int ws = open(workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = ws < 0 ? -1 : util_open_beneath(ws, NS_DEPS, O_PATH | O_DIRECTORY, 0);
	if (ws >= 0)
		close(ws);
	if (fd < 0)
		return;
	char src[64], dst[4200];
	snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
	if (stage_dir(k) == 0) {
		snprintf(dst, sizeof dst, "%s/deps", k->stage_dir);
		if (mkdir(dst, 0700) < 0 || mount(src, dst, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, dst, NULL, MS_PRIVATE, NULL) < 0)
			set_err(k, "cannot bind the session's %s: %s", NS_DEPS, strerror(errno));
		else
			k->deps = true;
	}
	close(fd);
}

/* An install's way out (egress.h): the proxy on a unix socket in the
 * stage's directory, which the container sees at EGRESS_DIR, where
 * sbx-egress-shim (from libexec, beside our own directory) relays
 * 127.0.0.1:3128 to it. */
#define EGRESS_DIR "/run/sbx-egress"
static void egress_open(struct dock *k, char *const *hosts, const struct limits *lim)
{
	struct dock_sys *d = k->d;
	char *shim = util_libexec("sbx-egress-shim");
	if (!shim) {
		set_err(k, "cannot give the install its proxy: libexec/sbx/sbx-egress-shim is missing (make builds it)");
		return;
	}
	free(k->shim);
	k->shim = shim;
	if (stage_dir(k) < 0)
		return;
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/egress", k->stage_dir);
	struct sockaddr_un ua = { .sun_family = AF_UNIX };
	int n2 = snprintf(ua.sun_path, sizeof ua.sun_path, "%s/sock", dir);
	int lfd = -1;
	/* The container's user (its group) alone may connect. */
	if (n2 >= (int)sizeof ua.sun_path || mkdir(dir, 0755) < 0 ||
	    (lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 || bind(lfd, (struct sockaddr *)&ua, sizeof ua) < 0 ||
	    chown(ua.sun_path, 0, (gid_t)d->uid) < 0 || chmod(ua.sun_path, 0660) < 0 || listen(lfd, 64) < 0) {
		set_err(k, "cannot give the install its proxy: %s: %s", ua.sun_path, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return;
	}
	k->egress = true;
	char err[256];
	if (!egress_start(&k->proxy, k->loop, lfd, hosts, lim, geteuid() == 0 ? (int)state_uid(d->conf, STATE_UID_EGRESS) : -1, err,
			  sizeof err)) {
		set_err(k, "%s", err);
		return;
	}
}

/* The stage's proxy (its records into the result) and its directory go
 * with the stage. */
static void stage_close(struct dock *k)
{
	jv_free(k->res.egress);
	k->res.egress = egress_stop(&k->proxy);
	if (k->stage_dir)
		dock_scratch_remove(k->stage_dir);
	free(k->stage_dir);
	k->stage_dir = NULL;
}

static void finish(struct dock *k)
{
	k->phase = P_DONE;
	k->finished = true;
	stage_close(k);
	if (k->timer >= 0) {
		loop_unwatch(k->loop, k->timer);
		close(k->timer);
		k->timer = -1;
	}
	close_stream(k);
	struct stage_result *r = &k->res;
	long long oom_kills = -1;
	if (k->cg_made) {
		const char *rel = dock_cg_relative(k->cg.path[0]);
		if (rel) {
			if (k->id[0])
				oom_kills = dock_cg_stats(k->d, rel, &k->res);
			if (!dock_cg_remove_everywhere(rel, 20)) {
				dock_pending_add(k->d, rel);
			}
		}
		dock_retry_pending(k->d, 0);
		cg_run_destroy(&k->d->cg, &k->cg);
		k->cg_made = false;
	}
	r->duration_ms = k->t0 ? (k->t_exit ? k->t_exit : util_now_ms()) - k->t0 : 0;
	/* Docker's OOMKilled comes from an event that can reach the daemon
	 * after the container's exit, and then says false.  The kernel's count
	 * decides where it has one (v2), as for the native backend: a kill in
	 * the group, and a program that did not exit 0.  v1 keeps no count a
	 * container's removal leaves: there a program killed by SIGKILL (tini
	 * exits 128 + 9), neither timed out nor cancelled, whose group's peak
	 * reached the limit met the OOM killer. */
	if (!k->oom && k->exit_code != 0) {
		/* (the kernel rounds a limit down to a whole page) */
		uint64_t at = k->limit & ~((uint64_t)sysconf(_SC_PAGESIZE) - 1);
		k->oom = oom_kills > 0 ||
			 (oom_kills < 0 && k->exit_code == 128 + SIGKILL && at && r->mem_peak >= (int64_t)at);
	}
	/* The accounting group also saw runc setting the container up, before
	 * the container's own group (whose limit is the stage's) existed. */
	if (r->mem_peak > 0 && (uint64_t)r->mem_peak > k->limit)
		r->mem_peak = (int64_t)k->limit;
	/* docker-init could not exec the program: as the native backend
	 * says it, an internal error naming the program (tini exits 127
	 * when it is not found, 126 when it cannot be executed). */
	jv tail = (k->exit_code == 127 || k->exit_code == 126) && r->err.total < 512 ? cap_buf_string(&r->err) : jv_invalid();
	const char *fail = jv_is_valid(tail) ? strstr(jv_string_value(tail), "failed: ") : NULL;
	if (fail && !strncmp(jv_string_value(tail), "[FATAL tini", 11) && !k->err[0] && !k->timed_out && !k->cancelled) {
		int n = (int)strcspn(fail + 8, "\n");
		set_err(k, "cannot run \"%s\" in the sandbox: %.*s", k->argv0, n, fail + 8);
		r->noexec = k->exit_code == 127 ? ENOENT : EACCES;
		cap_buf_free(&r->err);
		cap_buf_init(&r->err, k->limit_out);
	}
	jv_free(tail);
	if (k->cancelled) {
		r->status = STAGE_CANCELLED;
		snprintf(r->error, sizeof r->error, "cancelled");
	} else if (k->err[0]) {
		/* before a timeout: a container that could not be stopped or
		 * removed is the news */
		r->status = STAGE_INTERNAL;
		snprintf(r->error, sizeof r->error, "%s", k->err);
	} else if (k->timed_out) {
		r->status = STAGE_TIMEOUT;
		r->signal = SIGKILL;
	} else if (k->oom) {
		r->status = STAGE_OOM;
		r->signal = SIGKILL;
	} else if (k->exit_code > 128 && k->exit_code <= 128 + 64) {
		/* docker-init exits 128+N when its child dies of signal N */
		r->status = STAGE_SIGNALED;
		r->signal = k->exit_code - 128;
	} else {
		r->status = STAGE_EXITED;
		r->exit_code = k->exit_code;
	}
	k->done(k->arg);
}

static void remove_container(struct dock *k);

static void on_call(struct call *c, void *arg)
{
	struct dock *k = arg;
	char msg[400];
	if (c == k->wait) {
		k->wait = NULL;
		if (c->status == 200) {
			jv v = jv_parse_sized(c->body, (int)c->bodylen);
			double code = -1;
			if (jv_get_kind(v) == JV_KIND_OBJECT)
				rec_num(v, "StatusCode", &code);
			k->exit_code = code >= 0 && code < 1000 ? (int)code : 255;
			jv_free(v);
		} else if (!c->status)
			set_err(k, "%s", c->err);
		else {
			dock_api_message(c, msg, sizeof msg);
			set_err(k, "waiting for the container: HTTP %d: %s", c->status, msg);
		}
		dock_call_free(c);
		k->waited = true;
		mark(k, "exited");
		if (!k->t_exit)
			k->t_exit = util_now_ms();
		if (!k->eof)
			arm(k, STREAM_GRACE_MS);
		advance(k);
		return;
	}
	k->call = NULL;
	int st = c->status;
	if (!st)
		set_err(k, "%s", c->err);
	switch (k->phase) {
	case P_CREATE:
		mark(k, "created");
		if (st == 201) {
			jv v = jv_parse_sized(c->body, (int)c->bodylen);
			const char *id = jv_get_kind(v) == JV_KIND_OBJECT ? rec_str(v, "Id", NULL) : NULL;
			if (id && strlen(id) < sizeof k->id && strspn(id, "0123456789abcdef") == strlen(id))
				snprintf(k->id, sizeof k->id, "%s", id);
			else
				set_err(k, "the Docker daemon created a container without a usable Id");
			jv_free(v);
		} else if (st == 404) {
			dock_api_message(c, msg, sizeof msg);
			set_err(k, "the image %s is not on this Docker host (%s): pull it: docker pull %s, or sbx-run --pull",
				k->image, msg, k->image);
		} else if (st) {
			dock_api_message(c, msg, sizeof msg);
			set_err(k, "the Docker daemon refused to create the container: HTTP %d: %s", st, msg);
		}
		break;
	case P_ATTACH:
		mark(k, "attached");
		if (st == 101 || st == 200) {
			k->stream = c->fd;
			c->fd = -1;
			if (c->bodylen)
				demux(k, c->body, c->bodylen);
			if (k->inlen == 0)
				shutdown(k->stream, SHUT_WR);
			loop_watch(k->loop, k->stream, k->inoff < k->inlen ? POLLIN | POLLOUT : POLLIN, stream_io, k);
		} else if (st) {
			dock_api_message(c, msg, sizeof msg);
			set_err(k, "attaching to the container: HTTP %d: %s", st, msg);
		}
		break;
	case P_START:
		mark(k, "started");
		if (st == 204 || st == 304) {
			k->t0 = util_now_ms();
			arm(k, (double)k->res.duration_ms);
		} else if (st) {
			dock_api_message(c, msg, sizeof msg);
			set_err(k, "the Docker daemon could not start the container: HTTP %d: %s", st, msg);
		}
		break;
	case P_INSPECT:
		mark(k, "inspected");
		if (st == 200) {
			jv v = jv_parse_sized(c->body, (int)c->bodylen);
			jv s = jv_get_kind(v) == JV_KIND_OBJECT ? rec_get(v, "State") : jv_invalid();
			bool oom = false;
			if (jv_get_kind(s) == JV_KIND_OBJECT && rec_bool(s, "OOMKilled", &oom))
				k->oom = oom;
			jv_free(s);
			jv_free(v);
		}
		break;
	case P_REMOVE:
		mark(k, "removed");
		if (st && st != 204 && st != 404 && !k->err[0]) {
			dock_api_message(c, msg, sizeof msg);
			set_err(k, "the container %.12s could not be removed: HTTP %d: %s", k->id, st, msg);
		}
		break;
	default:
		break;
	}
	dock_call_free(c);
	if (k->phase != P_RUNNING)
		k->phase++;
	advance(k);
}

static void remove_container(struct dock *k)
{
	k->phase = P_REMOVE;
	char path[160];
	snprintf(path, sizeof path, "/containers/%s?force=1&v=1", k->id);
	k->call = dock_call_start(k->d, k->loop, "DELETE", path, jv_invalid(), false, CALL_TIMEOUT_MS, "remove the container",
			     on_call, k);
}

/* Take the next step; called whenever something arrives.  finish hands
 * the result over, after which k may be gone: nothing follows it. */
static void advance(struct dock *k)
{
	char path[200];
	if (k->finished || k->call)
		return;
	if (k->phase == P_DONE) {
		finish(k);
		return;
	}
	if ((k->err[0] || k->cancelled) && k->phase < P_REMOVE) {
		/* Whatever went wrong, a container that exists goes (force
		 * removal kills it first). */
		close_stream(k);
		if (k->wait) {
			dock_call_free(k->wait);
			k->wait = NULL;
		}
		if (k->id[0])
			remove_container(k);
		else
			finish(k);
		return;
	}
	switch (k->phase) {
	case P_ATTACH:
		snprintf(path, sizeof path, "/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1", k->id);
		k->call = dock_call_start(k->d, k->loop, "POST", path, jv_invalid(), true, CALL_TIMEOUT_MS, "attach to the container",
				     on_call, k);
		break;
	case P_START:
		snprintf(path, sizeof path, "/containers/%s/start", k->id);
		k->call = dock_call_start(k->d, k->loop, "POST", path, jv_invalid(), false, CALL_TIMEOUT_MS, "start the container",
				     on_call, k);
		break;
	case P_RUNNING:
		if (!k->wait && !k->waited) {
			snprintf(path, sizeof path, "/containers/%s/wait", k->id);
			k->wait = dock_call_start(k->d, k->loop, "POST", path, jv_invalid(), false, 0, "wait for the container",
					     on_call, k);
		} else if (k->waited && k->eof) {
			k->phase = P_INSPECT;
			advance(k);
		}
		break;
	case P_INSPECT:
		snprintf(path, sizeof path, "/containers/%s/json", k->id);
		k->call = dock_call_start(k->d, k->loop, "GET", path, jv_invalid(), false, CALL_TIMEOUT_MS, "inspect the container",
				     on_call, k);
		break;
	case P_REMOVE:
		remove_container(k);
		break;
	default:
		break;
	}
}

/* Copy the compiler's declared outputs (regular files, paths in the
 * scratch directory or workspace src, opened beneath it through no link)
 * to bindir, which is not noexec, and bind each read-only over itself:
 * the program can run them, and nothing it writes, nor anything else the
 * compile stage left.  With `own`, src is the run's own directory, and
 * only outputs beneath that name are taken, from it. */
static jv exec_bins(const char *src, const char *own, const char *bindir, char *const *outputs, jv mounts)
{
	int sd = open(src, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sd < 0)
		return mounts;
	for (int i = 0; outputs[i] && i < NS_MAX_OUTPUTS; i++) {
		struct stat st;
		const char *name = outputs[i], *rel = own ? ns_beneath(own, name) : name;
		if (!rel)
			continue;
		/* non-blocking: a FIFO planted under the name must not hang us */
		int in = util_open_beneath(sd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
		if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (in >= 0)
				close(in);
			continue;
		}
		mkdir(bindir, 0711);
		char dst[4400];
		snprintf(dst, sizeof dst, "%.4000s/%d", bindir, i);
		int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0755);
		bool ok = out >= 0;
		char buf[65536];
		ssize_t n;
		while (ok && (n = read(in, buf, sizeof buf)) > 0)
			ok = util_write_all(out, buf, (size_t)n) == 0;
		close(in);
		if (out >= 0)
			close(out);
		if (!ok)
			continue;
		char target[300];
		snprintf(target, sizeof target, "%s/%s", NS_WORKDIR, name);
		jv m = jv_object_set(jv_object(), jv_string("Type"), jv_string("bind"));
		m = jv_object_set(m, jv_string("Source"), jv_string(dst));
		m = jv_object_set(m, jv_string("Target"), jv_string(target));
		m = jv_object_set(m, jv_string("ReadOnly"), jv_true());
		mounts = jv_array_append(mounts, m);
	}
	close(sd);
	return mounts;
}

static jv bind_mount(const char *src, const char *dst, bool ro)
{
	jv m = jv_object_set(jv_object(), jv_string("Type"), jv_string("bind"));
	m = jv_object_set(m, jv_string("Source"), jv_string(src));
	m = jv_object_set(m, jv_string("Target"), jv_string(dst));
	return jv_object_set(m, jv_string("ReadOnly"), jv_bool(ro));
}

static jv ulimit(const char *name, uint64_t v)
{
	jv u = jv_object_set(jv_object(), jv_string("Name"), jv_string(name));
	u = jv_object_set(u, jv_string("Soft"), jv_number((double)v));
	return jv_object_set(u, jv_string("Hard"), jv_number((double)v));
}

static jv create_body(struct dock *k, const struct dock_spec *sp, const char *cgparent)
{
	const struct stage_spec *b = sp->st;
	const struct limits *lim = b->lim;
	struct dock_sys *d = k->d;
	jv argv = jv_array(), env = jv_array();
	if (k->egress) {
		argv = jv_array_append(argv, jv_string(EGRESS_DIR "-shim"));
		argv = jv_array_append(argv, jv_string(EGRESS_DIR "/sock"));
	}
	for (char *const *a = b->argv; a && *a; a++)
		argv = jv_array_append(argv, jv_string(*a));
	for (char *const *e = b->env; e && *e; e++)
		env = jv_array_append(env, jv_string(*e));
	char user[32], tmpfs[160], home[200];
	snprintf(user, sizeof user, "%d:%d", d->uid, d->uid);
	snprintf(tmpfs, sizeof tmpfs, "rw,noexec,nosuid,nodev,size=%llu,mode=1777", (unsigned long long)lim->tmpfs);
	snprintf(home, sizeof home, "rw,noexec,nosuid,nodev,size=%llu,uid=%d,gid=%d,mode=0755",
		 (unsigned long long)lim->tmpfs, d->uid, d->uid);
	/* The scratch: a stage's own tmpfs (DIR/scratch), or a session's
	 * workspace (DIR itself), with its installed packages read-only
	 * (through the stage's directory, see deps_stage). */
	char scratch[4200], dir[4200], own[4200];
	snprintf(scratch, sizeof scratch, "%s/scratch", sp->scratch);
	jv mounts = jv_array_append(jv_array(), bind_mount(sp->workspace ? sp->scratch : scratch, NS_WORKDIR, false));
	if (sp->workspace && sp->own) {
		/* the run's own directory or file, over its name (docker.c) */
		char file[4400], at[300];
		snprintf(own, sizeof own, "%s/scratch", sp->own_host);
		snprintf(file, sizeof file, "%s/%s", own, sp->own);
		snprintf(at, sizeof at, "%s/%s", NS_WORKDIR, sp->own);
		mounts = jv_array_append(mounts, bind_mount(sp->own_dir ? own : file, at, false));
	}
	if (b->outputs && !sp->workspace) {
		snprintf(dir, sizeof dir, "%s/bin", sp->scratch);
		mounts = exec_bins(scratch, NULL, dir, b->outputs, mounts);
	} else if (b->outputs && sp->own && sp->own_dir) {
		/* from the run's own directory, executable or not */
		snprintf(dir, sizeof dir, "%s/bin", sp->own_host);
		mounts = exec_bins(own, sp->own, dir, b->outputs, mounts);
	} else if (b->outputs && !b->work_exec && stage_dir(k) == 0) {
		/* a noexec workspace (workspace_exec = false): the same, from it */
		snprintf(dir, sizeof dir, "%s/bin", k->stage_dir);
		mounts = exec_bins(sp->scratch, NULL, dir, b->outputs, mounts);
	}
	if (k->deps) {
		snprintf(dir, sizeof dir, "%s/deps", k->stage_dir);
		mounts = jv_array_append(mounts, bind_mount(dir, NS_WORKDIR "/" NS_DEPS, true));
		/* the native root's link (layout.h); an image's root cannot
		 * have it, so its target is bound there when there is one */
		struct stat st;
		snprintf(dir, sizeof dir, "%s/deps/node_modules", k->stage_dir);
		if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode))
			mounts = jv_array_append(mounts, bind_mount(dir, NS_NODE_MODULES, true));
	}
	for (char *const *p = b->binds; p && *p; p++)
		mounts = jv_array_append(mounts, bind_mount(*p, *p, true));
	if (k->egress) {
		snprintf(dir, sizeof dir, "%s/egress", k->stage_dir);
		mounts = jv_array_append(mounts, bind_mount(dir, EGRESS_DIR, true));
		mounts = jv_array_append(mounts, bind_mount(k->shim, EGRESS_DIR "-shim", true));
	}

	jv hc = jv_object();
	hc = jv_object_set(hc, jv_string("NetworkMode"), jv_string(b->network ? "default" : "none"));
	hc = jv_object_set(hc, jv_string("Memory"), jv_number((double)lim->memory));
	hc = jv_object_set(hc, jv_string("MemorySwap"), jv_number((double)lim->memory));
	if (lim->cpus > 0)
		hc = jv_object_set(hc, jv_string("NanoCpus"), jv_number(round(lim->cpus * 1e9)));
	hc = jv_object_set(hc, jv_string("PidsLimit"), jv_number((double)lim->pids));
	hc = jv_object_set(hc, jv_string("ReadonlyRootfs"), jv_true());
	jv t = jv_object_set(jv_object(), jv_string("/tmp"), jv_string(tmpfs));
	/* Where ordinary programs also write temporary files and locks: the
	 * native backend links them to /tmp; the engine cannot, so each is a
	 * tmpfs of the same kind (all of them in the run's memory limit). */
	t = jv_object_set(t, jv_string("/var/tmp"), jv_string(tmpfs));
	t = jv_object_set(t, jv_string("/run/lock"), jv_string(tmpfs));
	t = jv_object_set(t, jv_string(NS_HOME), jv_string(home));
	/* The native sandbox has no /sys; here the engine would mount the
	 * host's sysfs read-only: an empty read-only tmpfs instead. */
	t = jv_object_set(t, jv_string("/sys"), jv_string("ro,nosuid,nodev,noexec,size=4k"));
	hc = jv_object_set(hc, jv_string("Tmpfs"), t);
	hc = jv_object_set(hc, jv_string("ShmSize"), jv_number((double)lim->tmpfs));
	hc = jv_object_set(hc, jv_string("Mounts"), mounts);
	hc = jv_object_set(hc, jv_string("CapDrop"), jv_array_append(jv_array(), jv_string("ALL")));
	/* The native backend's seccomp policy, not the engine's default. */
	jv prof = jv_dump_string(filter_docker_profile(d->conf->seccomp_errno), 0);
	char *so = util_fmt("seccomp=%s", jv_string_value(prof));
	jv_free(prof);
	jv sec = jv_array_append(jv_array(), jv_string("no-new-privileges"));
	sec = jv_array_append(sec, jv_string(so));
	free(so);
	hc = jv_object_set(hc, jv_string("SecurityOpt"), sec);
	hc = jv_object_set(hc, jv_string("LogConfig"),
			   jv_object_set(jv_object_set(jv_object(), jv_string("Type"), jv_string("none")), jv_string("Config"),
					 jv_object()));
	hc = jv_object_set(hc, jv_string("Init"), jv_true());
	jv ul = jv_array();
	ul = jv_array_append(ul, ulimit("nofile", lim->nofile));
	ul = jv_array_append(ul, ulimit("fsize", lim->file_size));
	ul = jv_array_append(ul, ulimit("stack", lim->stack));
	ul = jv_array_append(ul, ulimit("core", 0));
	hc = jv_object_set(hc, jv_string("Ulimits"), ul);
	hc = jv_object_set(hc, jv_string("OomScoreAdj"), jv_number(1000));
	/* A cgroup namespace of its own (the engine's default on cgroup v1 is
	 * the host's): /proc/self/cgroup shows no host path. */
	hc = jv_object_set(hc, jv_string("CgroupnsMode"), jv_string("private"));
	hc = jv_object_set(hc, jv_string("IpcMode"), jv_string("private"));
	if (cgparent)
		hc = jv_object_set(hc, jv_string("CgroupParent"), jv_string(cgparent));

	jv labels = jv_object_set(jv_object(), jv_string("sbx"), jv_string(sp->run_id ? sp->run_id : ""));
	labels = jv_object_set(labels, jv_string("sbx.owner"), jv_string(d->owner));

	jv o = jv_object();
	o = jv_object_set(o, jv_string("Image"), jv_string(sp->image));
	o = jv_object_set(o, jv_string("Entrypoint"), jv_array());
	o = jv_object_set(o, jv_string("Cmd"), argv);
	o = jv_object_set(o, jv_string("Env"), env);
	o = jv_object_set(o, jv_string("WorkingDir"),
			  sp->st->cwd ? jv_string_fmt("%s/%s", NS_WORKDIR, sp->st->cwd) : jv_string(NS_WORKDIR));
	o = jv_object_set(o, jv_string("User"), jv_string(user));
	o = jv_object_set(o, jv_string("Hostname"), jv_string("sandbox"));
	o = jv_object_set(o, jv_string("AttachStdin"), jv_true());
	o = jv_object_set(o, jv_string("AttachStdout"), jv_true());
	o = jv_object_set(o, jv_string("AttachStderr"), jv_true());
	o = jv_object_set(o, jv_string("OpenStdin"), jv_true());
	o = jv_object_set(o, jv_string("StdinOnce"), jv_true());
	o = jv_object_set(o, jv_string("Tty"), jv_false());
	o = jv_object_set(o, jv_string("NetworkDisabled"), jv_bool(!b->network));
	o = jv_object_set(o, jv_string("Labels"), labels);
	return jv_object_set(o, jv_string("HostConfig"), hc);
}

struct dock *dock_start(struct dock_sys *d, struct loop *l, const struct dock_spec *sp, stage_done_fn done, void *arg)
{
	struct dock *k = util_xalloc(sizeof *k);
	k->d = d;
	k->loop = l;
	k->done = done;
	k->arg = arg;
	k->stream = k->timer = -1;
	k->in = sp->st->stdin_data;
	k->inlen = sp->st->stdin_len;
	k->res.cpu_ms = -1;
	k->res.mem_peak = -1;
	k->timings = sp->st->timings;
	k->on_output = sp->st->on_output;
	k->output_arg = sp->st->output_arg;
	k->limit = sp->st->lim->memory;
	k->limit_out = sp->st->lim->output;
	k->t_begin = util_now_ms();
	k->res.timings = k->timings ? jv_object() : jv_null();
	k->res.egress = jv_null();
	k->proxy = (struct egress){ .pid = 0, .log = -1 };
	snprintf(k->argv0, sizeof k->argv0, "%s", sp->st->argv && sp->st->argv[0] ? sp->st->argv[0] : "");
	/* duration_ms holds the stage's timeout until the start */
	k->res.duration_ms = (double)sp->st->lim->timeout_ms;
	k->res.enforced = ENF_NAMESPACES | ENF_SECCOMP | ENF_TIMEOUT | ENF_MEMORY | ENF_CPU | ENF_PIDS | ENF_RLIMITS;
	cap_buf_init(&k->res.out, sp->st->lim->output);
	cap_buf_init(&k->res.err, sp->st->lim->output);
	snprintf(k->image, sizeof k->image, "%s", sp->image ? sp->image : "");
	if (!dock_ready(d))
		set_err(k, "%s", d->why[0] ? d->why : "the Docker daemon is not usable");
	else if (!sp->image || !*sp->image)
		set_err(k, "the language has no docker image in the configuration (image = \"...\")");
	const char *cgparent = NULL;
	char cerr[256];
	/* The accounting group's limits sit above the container's own, which
	 * are the ones that act. */
	if (!k->err[0] && d->cg_ok &&
	    cg_run_create(&d->cg, &k->cg, sp->st->lim->memory + (64u << 20), 0, sp->st->lim->pids + 16, cerr, sizeof cerr) == 0) {
		k->cg_made = true;
		cgparent = dock_cg_relative(k->cg.path[0]);
	}
	loop_watch(l, k->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK), POLLIN, timer_fired, k);
	if (k->err[0]) {
		/* report from the loop, as the native backend does */
		k->phase = P_DONE;
		arm(k, 0);
		return k;
	}
	if (sp->st->egress)
		egress_open(k, sp->st->egress, sp->st->lim);
	if (!k->err[0] && sp->workspace && sp->st->deps)
		deps_stage(k, sp->scratch);
	/* The engine binds a workspace with its host mount's flags, and no
	 * bind can add noexec: a workspace_exec = false it cannot keep is an
	 * error, not less W^X than asked (sbx-mcp's, as root, are noexec
	 * tmpfs mounts). */
	struct statvfs vfs;
	if (!k->err[0] && sp->workspace && !sp->st->work_exec &&
	    (statvfs(sp->scratch, &vfs) < 0 || !(vfs.f_flag & ST_NOEXEC)))
		set_err(k, "workspace_exec = false, but the workspace %s is not on a noexec mount, and the docker backend "
			   "cannot make one (sbx-mcp's workspaces, made as root, are)", sp->scratch);
	if (k->err[0]) {
		k->phase = P_DONE;
		arm(k, 0);
		return k;
	}
	jv body = create_body(k, sp, cgparent);
	char path[64];
	snprintf(path, sizeof path, "/containers/create");
	k->phase = P_CREATE;
	k->call = dock_call_start(d, l, "POST", path, body, false, CALL_TIMEOUT_MS, "create the container", on_call, k);
	return k;
}

void dock_cancel(struct dock *k)
{
	if (k->finished || k->cancelled)
		return;
	k->cancelled = true;
	advance(k);
}

const struct stage_result *dock_result(const struct dock *k)
{
	return &k->res;
}

void dock_free(struct dock *k)
{
	if (!k)
		return;
	dock_call_free(k->call);
	dock_call_free(k->wait);
	dock_call_free(k->killc);
	close_stream(k);
	if (k->timer >= 0) {
		loop_unwatch(k->loop, k->timer);
		close(k->timer);
	}
	if (k->cg_made)
		cg_run_destroy(&k->d->cg, &k->cg);
	stage_close(k);
	free(k->shim);
	cap_buf_free(&k->res.out);
	cap_buf_free(&k->res.err);
	jv_free(k->res.timings);
	jv_free(k->res.egress);
	free(k);
}

