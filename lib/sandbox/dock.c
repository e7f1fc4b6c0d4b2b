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
 * read after the container is gone, then the group is removed.
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
#include "dock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"
#include "filter.h"
#include "job.h"
#include "ns.h"
#include "rec.h"
#include "stage.h"
#include "util.h"

static const char *cg_relative(const char *path);
static bool cg_remove_everywhere(const char *rel, int tries);
static void retry_pending(struct dock_sys *d, int tries);

#define CALL_TIMEOUT_MS 30000  /* any one API call; pulls are not bounded */
#define STREAM_GRACE_MS 2000   /* output still arriving after the exit */

/* obj[key] if it is a string, else def; borrowed from obj. */
static const char *str_or(jv obj, const char *key, const char *def)
{
	const char *v = rec_str(obj, key, NULL);
	return v ? v : def;
}

/* ---- one API call ----------------------------------------------------- */

struct call;
typedef void (*call_fn)(struct call *c, void *arg);

struct call {
	struct dock_sys *d;
	struct loop *loop;
	int fd, tfd;
	char *req;
	size_t reqlen, off;
	char *buf;
	size_t len, cap;
	bool upgrade, connected;
	int status;               /* HTTP status, 0 on failure */
	const char *body;         /* into buf */
	size_t bodylen;
	char err[400];            /* transport failure: cause and fix */
	const char *what;         /* "create the container", for messages */
	int timeout_ms;
	call_fn fn;
	void *arg;
};

static void call_watch(struct call *c);

static void fmt_connect_error(struct dock_sys *d, int e, char *out, size_t len)
{
	if (d->tcp)
		snprintf(out, len,
			 "the Docker daemon at DOCKER_HOST=%.200s is unreachable (%s): check the address, and that dockerd "
			 "listens there (dockerd -H tcp://ADDR:PORT)", d->host, strerror(e));
	else if (e == ENOENT)
		snprintf(out, len,
			 "the Docker daemon is not running: no socket at %s (start it: systemctl start docker, or "
			 "dockerd &; or point DOCKER_HOST at a running one)", d->path);
	else if (e == ECONNREFUSED)
		snprintf(out, len,
			 "the Docker daemon is not running: %s refuses connections (start it: systemctl start docker, "
			 "or dockerd &)", d->path);
	else if (e == EACCES || e == EPERM)
		snprintf(out, len,
			 "permission denied on the Docker socket %s: run as root, or add the user to the docker group "
			 "(usermod -aG docker USER, then log in again)", d->path);
	else
		snprintf(out, len, "cannot connect to the Docker daemon at %.200s: %s", d->host, strerror(e));
}

static void call_finish(struct call *c)
{
	if (c->fd >= 0) {
		loop_unwatch(c->loop, c->fd);
		if (!c->upgrade || !c->status) {
			close(c->fd);
			c->fd = -1;
		}
	}
	if (c->tfd >= 0) {
		loop_unwatch(c->loop, c->tfd);
		close(c->tfd);
		c->tfd = -1;
	}
	c->fn(c, c->arg);
}

static void call_fail(struct call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void call_fail(struct call *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	c->status = 0;
	call_finish(c);
}

/* The response so far: complete when the connection ended (HTTP/1.0), or
 * for the attach as soon as its headers are in. */
static bool parse_response(struct call *c, bool eof)
{
	char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
	if (!end)
		return false;
	if (!c->upgrade && !eof)
		return false;
	if (c->len < 12 || strncmp(c->buf, "HTTP/1.", 7))
		return false;
	c->status = atoi(c->buf + 9);
	c->body = end + 4;
	c->bodylen = c->len - (size_t)(c->body - c->buf);
	/* Chunked bodies should not come to an HTTP/1.0 request; decode in
	 * place if one does. */
	*end = 0;
	if (!c->upgrade && strcasestr(c->buf, "\r\ntransfer-encoding: chunked")) {
		char *in = (char *)c->body, *out = in, *lim = in + c->bodylen;
		while (in < lim) {
			char *e;
			unsigned long n = strtoul(in, &e, 16);
			char *crlf = memmem(in, (size_t)(lim - in), "\r\n", 2);
			if (!crlf || e == in || n == 0 || (size_t)(lim - crlf - 2) < n)
				break;
			memmove(out, crlf + 2, n);
			out += n;
			in = crlf + 2 + n + 2;
		}
		c->bodylen = (size_t)(out - c->body);
	}
	return true;
}

static void call_io(struct loop *l, int fd, short rev, void *arg)
{
	struct call *c = arg;
	(void)l;
	if (fd == c->tfd) {
		call_fail(c, "the Docker daemon did not answer within %d s (%s); is it overloaded or stuck?",
			  c->timeout_ms / 1000, c->what);
		return;
	}
	if (!c->connected) {
		int e = 0;
		socklen_t el = sizeof e;
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
		if (e) {
			char msg[sizeof c->err];
			fmt_connect_error(c->d, e, msg, sizeof msg);
			call_fail(c, "%s", msg);
			return;
		}
		c->connected = true;
	}
	if (c->off < c->reqlen && (rev & (POLLOUT | POLLERR | POLLHUP))) {
		ssize_t n = send(fd, c->req + c->off, c->reqlen - c->off, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			call_fail(c, "the Docker daemon closed the connection (%s: %s); did it stop?", c->what, strerror(errno));
			return;
		}
		if (n > 0)
			c->off += (size_t)n;
		call_watch(c);
		return;
	}
	if (rev & (POLLIN | POLLHUP | POLLERR)) {
		if (c->cap - c->len < 65536) {
			c->cap = c->cap * 2 + 65536;
			c->buf = util_xrealloc(c->buf, c->cap + 1);
		}
		ssize_t n = read(fd, c->buf + c->len, c->cap - c->len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			call_fail(c, "the Docker daemon closed the connection (%s: %s); did it stop?", c->what, strerror(errno));
			return;
		}
		c->len += (size_t)n;
		c->buf[c->len] = 0;
		if (c->len > (64u << 20)) {
			call_fail(c, "the Docker daemon's answer to %s is over 64 MiB", c->what);
			return;
		}
		if (parse_response(c, n == 0)) {
			call_finish(c);
			return;
		}
		if (n == 0)
			call_fail(c, "the Docker daemon closed the connection before answering (%s); did it stop? "
				     "(restart it: systemctl start docker, or dockerd &)", c->what);
	}
}

static void call_watch(struct call *c)
{
	loop_watch(c->loop, c->fd, c->off < c->reqlen || !c->connected ? POLLOUT : POLLIN, call_io, c);
}

static int dial(struct dock_sys *d, int *err)
{
	int fd;
	if (d->tcp) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
		int rc = getaddrinfo(d->node, d->service, &hints, &ai);
		if (rc) {
			*err = EHOSTUNREACH;
			return -1;
		}
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			*err = errno;
			close(fd);
			fd = -1;
		}
		freeaddrinfo(ai);
		return fd;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", d->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS && errno != EAGAIN) {
		*err = errno;
		close(fd);
		return -1;
	}
	return fd;
}

/* Start a call; fn runs from the loop (or at once if it cannot start). */
static struct call *call_start(struct dock_sys *d, struct loop *l, const char *method, const char *path, jv body,
			       bool upgrade, int timeout_ms, const char *what, call_fn fn, void *arg)
{
	struct call *c = util_xalloc(sizeof *c);
	*c = (struct call){ .d = d, .loop = l, .fd = -1, .tfd = -1, .upgrade = upgrade, .what = what, .fn = fn, .arg = arg,
			    .timeout_ms = timeout_ms };
	jv text = jv_is_valid(body) ? jv_dump_string(body, 0) : (jv_free(body), jv_string(""));
	const char *t = jv_string_value(text);
	size_t tl = strlen(t);
	c->req = util_fmt("%s %s%s%s HTTP/1.%d\r\nHost: docker\r\nUser-Agent: sbx\r\n%s%s%zu\r\n\r\n%s", method,
			  d->api[0] ? "/" : "", d->api, path, upgrade ? 1 : 0,
			  upgrade ? "Connection: Upgrade\r\nUpgrade: tcp\r\n" : "",
			  tl ? "Content-Type: application/json\r\nContent-Length: " : "Content-Length: ", tl, t);
	jv_free(text);
	c->reqlen = strlen(c->req);
	int e = 0;
	c->fd = dial(d, &e);
	if (c->fd < 0) {
		fmt_connect_error(d, e, c->err, sizeof c->err);
		c->status = 0;
		fn(c, arg);
		return c;
	}
	if (timeout_ms > 0) {
		c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		struct itimerspec its = { .it_value = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L } };
		if (c->tfd >= 0) {
			timerfd_settime(c->tfd, 0, &its, NULL);
			loop_watch(l, c->tfd, POLLIN, call_io, c);
		}
	}
	call_watch(c);
	return c;
}

static void call_free(struct call *c)
{
	if (!c)
		return;
	if (c->fd >= 0) {
		loop_unwatch(c->loop, c->fd);
		close(c->fd);
	}
	if (c->tfd >= 0) {
		loop_unwatch(c->loop, c->tfd);
		close(c->tfd);
	}
	free(c->req);
	free(c->buf);
	free(c);
}

/* The daemon's message from an error body ({"message": "..."}). */
static void api_message(const struct call *c, char *out, size_t len)
{
	jv v = c->bodylen ? jv_parse_sized(c->body, (int)c->bodylen) : jv_invalid();
	const char *m = jv_get_kind(v) == JV_KIND_OBJECT ? rec_str(v, "message", NULL) : NULL;
	snprintf(out, len, "%.*s", 300, m ? m : c->bodylen ? c->body : "no message");
	jv_free(v);
	size_t n = strlen(out);
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		out[--n] = 0;
}

/* Synchronous calls (start-up, --check, --pull, cleanup): the same call
 * on a loop of its own. */
struct sync_done {
	bool done;
};
static void sync_fn(struct call *c, void *arg)
{
	(void)c;
	((struct sync_done *)arg)->done = true;
}

static struct call *call_sync(struct dock_sys *d, const char *method, const char *path, jv body, int timeout_ms)
{
	struct loop *l = loop_new();
	struct sync_done sd = { false };
	struct call *c = call_start(d, l, method, path, body, false, timeout_ms, path, sync_fn, &sd);
	while (!sd.done && loop_once(l, 1000) >= 0)
		;
	if (c->fd >= 0) {
		loop_unwatch(l, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	loop_free(l);
	c->loop = NULL;
	return c;
}

/* ---- the process's identity, for leftovers ---------------------------- */

static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	/* after "pid (comm)": state is field 3, starttime field 22 */
	for (int f = 2; p && f < 22; f++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Is the process named by an owner string ("<pid>.<start>") alive? */
static bool owner_alive(const char *owner)
{
	char *e;
	errno = 0;
	long pid = strtol(owner, &e, 10);
	if (errno || *e != '.' || pid <= 0 || pid > 4194304)
		return false;
	unsigned long long st = strtoull(e + 1, &e, 10);
	return st && start_time((pid_t)pid) == st;
}

/* ---- scratch directories ---------------------------------------------- */

char *dock_scratch(struct dock_sys *d, uint64_t size, char *err, size_t errlen)
{
	mkdir(d->conf->state_dir, 0755);
	if (mkdir(d->state, 0711) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", d->state, strerror(errno));
		return NULL;
	}
	char *dir = util_fmt("%s/%s-%lu", d->state, d->owner, ++d->seq);
	char *mnt = util_fmt("%s/scratch", dir);
	char opt[96];
	snprintf(opt, sizeof opt, "size=%llu,mode=0755,uid=%d,gid=%d", (unsigned long long)size, d->uid, d->uid);
	int rc = -1;
	if (mkdir(dir, 0711) < 0 || mkdir(mnt, 0755) < 0)
		snprintf(err, errlen, "cannot create %s: %s", mnt, strerror(errno));
	else if (mount("sbx-scratch", mnt, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opt) < 0)
		snprintf(err, errlen, "cannot mount the scratch tmpfs on %s: %s%s", mnt, strerror(errno),
			 errno == EPERM ? " (the docker backend needs root)" : "");
	else
		rc = 0;
	free(mnt);
	if (rc < 0) {
		dock_scratch_remove(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

void dock_scratch_remove(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/scratch", dir);
	umount2(p, MNT_DETACH);
	rmdir(p);
	/* a stage's: an install's proxy socket (egress_open), the bind of a
	 * session's .deps (deps_stage) */
	snprintf(p, sizeof p, "%s/egress/sock", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/egress", dir);
	rmdir(p);
	snprintf(p, sizeof p, "%s/deps", dir);
	umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW);
	rmdir(p);
	snprintf(p, sizeof p, "%s/bin", dir);
	DIR *dd = opendir(p);
	if (dd) {
		struct dirent *e;
		while ((e = readdir(dd)))
			if (e->d_name[0] != '.')
				unlinkat(dirfd(dd), e->d_name, 0);
		closedir(dd);
		rmdir(p);
	}
	rmdir(dir);
}

/* ---- the daemon -------------------------------------------------------- */

static bool hello(struct dock_sys *d)
{
	struct call *c = call_sync(d, "GET", "/version", jv_invalid(), 10000);
	bool ok = false;
	if (!c->status)
		snprintf(d->why, sizeof d->why, "%s", c->err);
	else if (c->status != 200)
		snprintf(d->why, sizeof d->why, "the Docker daemon at %s answered /version with HTTP %d", d->host, c->status);
	else {
		jv v = jv_parse_sized(c->body, (int)c->bodylen);
		if (jv_get_kind(v) == JV_KIND_OBJECT) {
			snprintf(d->version, sizeof d->version, "%s", str_or(v, "Version", "?"));
			/* Speak the daemon's own API version, 1.40 (Docker 19.03,
			 * LogConfig "none", Init, PidsLimit) at least. */
			const char *api = str_or(v, "ApiVersion", "1.40");
			snprintf(d->api, sizeof d->api, "v%s", api);
			ok = true;
			d->why[0] = 0;
		} else
			snprintf(d->why, sizeof d->why, "the Docker daemon at %s answered /version with something else", d->host);
		jv_free(v);
	}
	call_free(c);
	if (ok) {
		c = call_sync(d, "GET", "/info", jv_invalid(), 10000);
		jv v = c->status == 200 ? jv_parse_sized(c->body, (int)c->bodylen) : jv_invalid();
		if (jv_get_kind(v) == JV_KIND_OBJECT)
			snprintf(d->cgroup_driver, sizeof d->cgroup_driver, "%s", str_or(v, "CgroupDriver", ""));
		jv_free(v);
		call_free(c);
	}
	d->ok = ok;
	return ok;
}

/* Remove containers and scratch directories whose owner died. */
static void sweep(struct dock_sys *d)
{
	struct call *c = call_sync(d, "GET", "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22sbx.owner%22%5D%7D",
				   jv_invalid(), 10000);
	jv list = c->status == 200 ? jv_parse_sized(c->body, (int)c->bodylen) : jv_invalid();
	call_free(c);
	if (jv_get_kind(list) == JV_KIND_ARRAY) {
		jv_array_foreach(list, i, ct) {
			jv labels = jv_get_kind(ct) == JV_KIND_OBJECT ? rec_get(ct, "Labels") : jv_invalid();
			const char *owner = jv_get_kind(labels) == JV_KIND_OBJECT ? rec_str(labels, "sbx.owner", NULL) : NULL;
			const char *id = jv_get_kind(ct) == JV_KIND_OBJECT ? rec_str(ct, "Id", NULL) : NULL;
			if (owner && id && strspn(id, "0123456789abcdef") == strlen(id) && !owner_alive(owner)) {
				char path[160];
				snprintf(path, sizeof path, "/containers/%.64s?force=1&v=1", id);
				call_free(call_sync(d, "DELETE", path, jv_invalid(), 30000));
			}
			jv_free(labels);
			jv_free(ct);
		}
	}
	jv_free(list);
	DIR *dd = opendir(d->state);
	if (dd) {
		struct dirent *e;
		while ((e = readdir(dd))) {
			if (e->d_name[0] == '.')
				continue;
			char owner[64];
			snprintf(owner, sizeof owner, "%.63s", e->d_name);
			char *dash = strrchr(owner, '-');
			if (dash)
				*dash = 0;
			if (!owner_alive(owner)) {
				char p[4096];
				snprintf(p, sizeof p, "%s/%s", d->state, e->d_name);
				dock_scratch_remove(p);
			}
		}
		closedir(dd);
	}
}

/* Groups "r<pid>-<n>" under the parent whose supervisor is gone, in
 * every hierarchy (their containers went in the sweep). */
static void sweep_groups(const char *parent_rel)
{
	DIR *h = opendir("/sys/fs/cgroup");
	if (!h)
		return;
	struct dirent *he;
	while ((he = readdir(h))) {
		char dir[4096];
		snprintf(dir, sizeof dir, "/sys/fs/cgroup/%.200s%.3000s", he->d_name, parent_rel);
		if (he->d_name[0] == '.' && he->d_name[1])
			continue;
		DIR *dd = opendir(dir);
		if (!dd)
			continue;
		struct dirent *e;
		while ((e = readdir(dd))) {
			char *end;
			long pid = e->d_name[0] == 'r' ? strtol(e->d_name + 1, &end, 10) : 0;
			if (pid <= 0 || *end != '-' || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
				continue;
			char p[4400];
			snprintf(p, sizeof p, "%s/%.200s", dir, e->d_name);
			rmdir(p);
		}
		closedir(dd);
	}
	closedir(h);
}

int dock_sys_init(struct dock_sys *d, const struct conf *c)
{
	memset(d, 0, sizeof *d);
	d->conf = c;
	d->uid = (int)c->uid + 1;
	snprintf(d->owner, sizeof d->owner, "%d.%llu", (int)getpid(), start_time(getpid()));
	d->state = util_fmt("%s/docker", c->state_dir);
	const char *h = getenv("DOCKER_HOST");
	if (!h || !*h)
		h = "unix:///var/run/docker.sock";
	snprintf(d->host, sizeof d->host, "%s", h);
	if (!strncmp(h, "unix://", 7) && strlen(h + 7) < sizeof d->path) {
		snprintf(d->path, sizeof d->path, "%s", h + 7);
	} else if (!strncmp(h, "tcp://", 6)) {
		d->tcp = true;
		const char *hp = h + 6, *colon = strrchr(hp, ':');
		size_t n = colon ? (size_t)(colon - hp) : strcspn(hp, "/");
		if (*hp == '[' && colon && colon > hp && colon[-1] == ']')
			snprintf(d->node, sizeof d->node, "%.*s", (int)(n - 2), hp + 1);
		else
			snprintf(d->node, sizeof d->node, "%.*s", (int)n, hp);
		snprintf(d->service, sizeof d->service, "%.*s", (int)strcspn(colon ? colon + 1 : "2375", "/"),
			 colon ? colon + 1 : "2375");
		const char *tls = getenv("DOCKER_TLS_VERIFY");
		if (tls && *tls && strcmp(tls, "0")) {
			d->addr_ok = false;
			snprintf(d->why, sizeof d->why,
				 "DOCKER_TLS_VERIFY is set, and sbx speaks plain HTTP only: use the daemon's unix socket, or "
				 "tunnel it (ssh -L /tmp/docker.sock:/var/run/docker.sock HOST, DOCKER_HOST=unix:///tmp/docker.sock)");
			return 0;
		}
	} else {
		snprintf(d->why, sizeof d->why, "DOCKER_HOST=%s is not a unix:// or tcp:// address", h);
		return 0;
	}
	d->addr_ok = true;
	return 0;
}

void dock_sys_free(struct dock_sys *d)
{
	retry_pending(d, 1000);
	for (size_t i = 0; i < d->npending; i++)
		free(d->pending[i]);
	free(d->pending);
	d->pending = NULL;
	d->npending = 0;
	if (d->cg_ok)
		cg_sys_free(&d->cg);
	free(d->state);
	d->state = NULL;
}

bool dock_ready(struct dock_sys *d)
{
	if (d->ok || !d->addr_ok)
		return d->ok;
	if (!hello(d))
		return false;
	sweep(d);
	/* Accounting groups, where the daemon's cgroups are ours to see
	 * (after the sweep: a dead owner's containers held its groups). */
	if (!d->cg_tried) {
		char parent[256], err[256];
		snprintf(parent, sizeof parent, "%s-docker", d->conf->cgroup_parent);
		d->cg_tried = true;
		d->cg_ok = !d->tcp && !strcmp(d->cgroup_driver, "cgroupfs") && geteuid() == 0 &&
			   cg_sys_init(&d->cg, parent, err, sizeof err) == 0 && (d->cg.have & CG_MEM) &&
			   cg_relative(d->cg.dir[0]);
		if (d->cg_ok)
			sweep_groups(cg_relative(d->cg.dir[0]));
	}
	return true;
}

/* ---- one stage --------------------------------------------------------- */

enum phase { P_CREATE, P_ATTACH, P_START, P_RUNNING, P_INSPECT, P_REMOVE, P_DONE };

struct dock {
	struct dock_sys *d;
	struct loop *loop;
	struct box_result res;
	dock_done_fn done;
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
	pid_t egress_pid;             /* the proxy (egress.h), or 0 */
	char err[512];
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
	call_free(c);
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
	k->killc = call_start(k->d, k->loop, "POST", path, jv_invalid(), false, CALL_TIMEOUT_MS, "kill the container",
			      kill_done, k);
}

/* Where a cg_run group lives, as the daemon names cgroup parents: the
 * path below the hierarchy's mount point. */
static const char *cg_relative(const char *path)
{
	const char *p = strncmp(path, "/sys/fs/cgroup/", 15) ? NULL : path + 14;
	if (p && p[1] && strchr(p + 1, '/')) {
		/* v1: skip the controller's directory */
		char mnt[4096];
		snprintf(mnt, sizeof mnt, "%.*s/cgroup.procs", (int)(p - path), path);
		if (access(mnt, F_OK) != 0)
			p = strchr(p + 1, '/');
	}
	return p;
}

/* The daemon makes a stage's group in every v1 hierarchy (cpuset, blkio,
 * ...), not only in those cg knows: remove it from all of them. */
static bool cg_remove_everywhere(const char *rel, int tries)
{
	DIR *dd = opendir("/sys/fs/cgroup");
	if (!dd)
		return true;
	struct dirent *e;
	char p[4096];
	bool all = true;
	snprintf(p, sizeof p, "/sys/fs/cgroup%s", rel);
	if (rmdir(p) < 0 && errno == EBUSY)
		all = false;
	while ((e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "/sys/fs/cgroup/%s%s", e->d_name, rel);
		int t = 0;
		/* The daemon may still be removing the container's own group
		 * inside it. */
		while (rmdir(p) < 0 && errno == EBUSY && t++ < tries)
			usleep(1000);
		if (t > tries)
			all = false;
	}
	closedir(dd);
	return all;
}

/* Groups that were still busy: retried after every stage and at exit. */
static void retry_pending(struct dock_sys *d, int tries)
{
	size_t keep = 0;
	for (size_t i = 0; i < d->npending; i++) {
		if (cg_remove_everywhere(d->pending[i], tries))
			free(d->pending[i]);
		else
			d->pending[keep++] = d->pending[i];
	}
	d->npending = keep;
}

static bool read_u64(const char *path, const char *key, uint64_t *v)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *p = buf;
	if (key) {
		p = strstr(buf, key);
		if (!p)
			return false;
		p += strlen(key);
	}
	char *end;
	errno = 0;
	unsigned long long x = strtoull(p, &end, 10);
	if (errno || end == p)
		return false;
	*v = x;
	return true;
}

static void d_pending_add(struct dock_sys *d, const char *rel)
{
	d->pending = util_xrealloc(d->pending, (d->npending + 1) * sizeof *d->pending);
	d->pending[d->npending++] = util_strdup(rel);
}

/* CPU time and memory peak of a stage's group, after its container. */
static void stage_stats(struct dock *k, const char *rel)
{
	char p[4096];
	uint64_t v;
	if (k->d->cg.mode == CG_V2) {
		snprintf(p, sizeof p, "/sys/fs/cgroup%s/cpu.stat", rel);
		if (read_u64(p, "usage_usec ", &v))
			k->res.cpu_ms = (double)v / 1000.0;
		snprintf(p, sizeof p, "/sys/fs/cgroup%s/memory.peak", rel);
		if (read_u64(p, NULL, &v))
			k->res.mem_peak = (int64_t)v;
		return;
	}
	static const char *const acct[] = { "cpuacct", "cpu,cpuacct", "cpuacct,cpu", "cpu" };
	for (size_t i = 0; i < sizeof acct / sizeof acct[0]; i++) {
		snprintf(p, sizeof p, "/sys/fs/cgroup/%s%s/cpuacct.usage", acct[i], rel);
		if (read_u64(p, NULL, &v)) {
			k->res.cpu_ms = (double)v / 1e6;
			break;
		}
	}
	snprintf(p, sizeof p, "/sys/fs/cgroup/memory%s/memory.max_usage_in_bytes", rel);
	if (read_u64(p, NULL, &v))
		k->res.mem_peak = (int64_t)v;
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
static void egress_open(struct dock *k, char *const *hosts)
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
	k->egress_pid = egress_start(lfd, hosts, geteuid() == 0 ? (int)(d->conf->uid + 3) : -1, err, sizeof err);
	if (k->egress_pid < 0) {
		k->egress_pid = 0;
		set_err(k, "%s", err);
		return;
	}
}

/* The stage's proxy and its directory go with the stage. */
static void stage_close(struct dock *k)
{
	egress_stop(k->egress_pid);
	k->egress_pid = 0;
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
	struct box_result *r = &k->res;
	if (k->cg_made) {
		const char *rel = cg_relative(k->cg.path[0]);
		if (rel) {
			if (k->id[0])
				stage_stats(k, rel);
			if (!cg_remove_everywhere(rel, 20)) {
				d_pending_add(k->d, rel);
			}
		}
		retry_pending(k->d, 0);
		cg_run_destroy(&k->d->cg, &k->cg);
		k->cg_made = false;
	}
	r->duration_ms = k->t0 ? (k->t_exit ? k->t_exit : util_now_ms()) - k->t0 : 0;
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
		cap_buf_free(&r->err);
		cap_buf_init(&r->err, k->limit_out);
	}
	jv_free(tail);
	if (k->cancelled) {
		r->status = BOX_CANCELLED;
		snprintf(r->error, sizeof r->error, "cancelled");
	} else if (k->err[0]) {
		/* before a timeout: a container that could not be stopped or
		 * removed is the news */
		r->status = BOX_INTERNAL;
		snprintf(r->error, sizeof r->error, "%s", k->err);
	} else if (k->timed_out) {
		r->status = BOX_TIMEOUT;
		r->signal = SIGKILL;
	} else if (k->oom) {
		r->status = BOX_OOM;
		r->signal = SIGKILL;
	} else if (k->exit_code > 128 && k->exit_code <= 128 + 64) {
		/* docker-init exits 128+N when its child dies of signal N */
		r->status = BOX_SIGNALED;
		r->signal = k->exit_code - 128;
	} else {
		r->status = BOX_EXITED;
		r->exit_code = k->exit_code;
	}
	k->done(k, k->arg);
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
			api_message(c, msg, sizeof msg);
			set_err(k, "waiting for the container: HTTP %d: %s", c->status, msg);
		}
		call_free(c);
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
			api_message(c, msg, sizeof msg);
			set_err(k, "the image %s is not on this Docker host (%s): pull it: docker pull %s, or sbx-run --pull",
				k->image, msg, k->image);
		} else if (st) {
			api_message(c, msg, sizeof msg);
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
			api_message(c, msg, sizeof msg);
			set_err(k, "attaching to the container: HTTP %d: %s", st, msg);
		}
		break;
	case P_START:
		mark(k, "started");
		if (st == 204 || st == 304) {
			k->t0 = util_now_ms();
			arm(k, (double)k->res.duration_ms);
		} else if (st) {
			api_message(c, msg, sizeof msg);
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
			api_message(c, msg, sizeof msg);
			set_err(k, "the container %.12s could not be removed: HTTP %d: %s", k->id, st, msg);
		}
		break;
	default:
		break;
	}
	call_free(c);
	if (k->phase != P_RUNNING)
		k->phase++;
	advance(k);
}

static void remove_container(struct dock *k)
{
	k->phase = P_REMOVE;
	char path[160];
	snprintf(path, sizeof path, "/containers/%s?force=1&v=1", k->id);
	k->call = call_start(k->d, k->loop, "DELETE", path, jv_invalid(), false, CALL_TIMEOUT_MS, "remove the container",
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
			call_free(k->wait);
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
		k->call = call_start(k->d, k->loop, "POST", path, jv_invalid(), true, CALL_TIMEOUT_MS, "attach to the container",
				     on_call, k);
		break;
	case P_START:
		snprintf(path, sizeof path, "/containers/%s/start", k->id);
		k->call = call_start(k->d, k->loop, "POST", path, jv_invalid(), false, CALL_TIMEOUT_MS, "start the container",
				     on_call, k);
		break;
	case P_RUNNING:
		if (!k->wait && !k->waited) {
			snprintf(path, sizeof path, "/containers/%s/wait", k->id);
			k->wait = call_start(k->d, k->loop, "POST", path, jv_invalid(), false, 0, "wait for the container",
					     on_call, k);
		} else if (k->waited && k->eof) {
			k->phase = P_INSPECT;
			advance(k);
		}
		break;
	case P_INSPECT:
		snprintf(path, sizeof path, "/containers/%s/json", k->id);
		k->call = call_start(k->d, k->loop, "GET", path, jv_invalid(), false, CALL_TIMEOUT_MS, "inspect the container",
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
 * compile stage left. */
static jv exec_bins(const char *src, const char *bindir, char *const *outputs, jv mounts)
{
	int sd = open(src, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sd < 0)
		return mounts;
	for (int i = 0; outputs[i] && i < NS_MAX_OUTPUTS; i++) {
		struct stat st;
		const char *name = outputs[i];
		/* non-blocking: a FIFO planted under the name must not hang us */
		int in = util_open_beneath(sd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
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
	const struct box_spec *b = sp->box;
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
	char scratch[4200], dir[4200];
	snprintf(scratch, sizeof scratch, "%s/scratch", sp->scratch);
	jv mounts = jv_array_append(jv_array(), bind_mount(sp->workspace ? sp->scratch : scratch, NS_WORKDIR, false));
	if (b->outputs && !sp->workspace) {
		snprintf(dir, sizeof dir, "%s/bin", sp->scratch);
		mounts = exec_bins(scratch, dir, b->outputs, mounts);
	} else if (b->outputs && !b->work_exec && stage_dir(k) == 0) {
		/* a noexec workspace (workspace_exec = false): the same, from it */
		snprintf(dir, sizeof dir, "%s/bin", k->stage_dir);
		mounts = exec_bins(sp->scratch, dir, b->outputs, mounts);
	}
	if (k->deps) {
		snprintf(dir, sizeof dir, "%s/deps", k->stage_dir);
		mounts = jv_array_append(mounts, bind_mount(dir, NS_WORKDIR "/" NS_DEPS, true));
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
	o = jv_object_set(o, jv_string("WorkingDir"), jv_string(NS_WORKDIR));
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

struct dock *dock_start(struct dock_sys *d, struct loop *l, const struct dock_spec *sp, dock_done_fn done, void *arg)
{
	struct dock *k = util_xalloc(sizeof *k);
	k->d = d;
	k->loop = l;
	k->done = done;
	k->arg = arg;
	k->stream = k->timer = -1;
	k->in = sp->box->stdin_data;
	k->inlen = sp->box->stdin_len;
	k->res.cpu_ms = -1;
	k->res.mem_peak = -1;
	k->timings = sp->box->timings;
	k->limit = sp->box->lim->memory;
	k->limit_out = sp->box->lim->output;
	k->t_begin = util_now_ms();
	k->res.timings = k->timings ? jv_object() : jv_null();
	snprintf(k->argv0, sizeof k->argv0, "%s", sp->box->argv && sp->box->argv[0] ? sp->box->argv[0] : "");
	/* duration_ms holds the stage's timeout until the start */
	k->res.duration_ms = (double)sp->box->lim->timeout_ms;
	k->res.enforced = ENF_NAMESPACES | ENF_SECCOMP | ENF_TIMEOUT | ENF_MEMORY | ENF_CPU | ENF_PIDS | ENF_RLIMITS;
	cap_buf_init(&k->res.out, sp->box->lim->output);
	cap_buf_init(&k->res.err, sp->box->lim->output);
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
	    cg_run_create(&d->cg, &k->cg, sp->box->lim->memory + (64u << 20), 0, sp->box->lim->pids + 16, cerr, sizeof cerr) == 0) {
		k->cg_made = true;
		cgparent = cg_relative(k->cg.path[0]);
	}
	loop_watch(l, k->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK), POLLIN, timer_fired, k);
	if (k->err[0]) {
		/* report from the loop, as the native backend does */
		k->phase = P_DONE;
		arm(k, 0);
		return k;
	}
	if (sp->box->egress)
		egress_open(k, sp->box->egress);
	if (!k->err[0] && sp->workspace && sp->box->deps)
		deps_stage(k, sp->scratch);
	/* The engine binds a workspace with its host mount's flags, and no
	 * bind can add noexec: a workspace_exec = false it cannot keep is an
	 * error, not less W^X than asked (sbx-mcp's, as root, are noexec
	 * tmpfs mounts). */
	struct statvfs vfs;
	if (!k->err[0] && sp->workspace && !sp->box->work_exec &&
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
	k->call = call_start(d, l, "POST", path, body, false, CALL_TIMEOUT_MS, "create the container", on_call, k);
	return k;
}

void dock_cancel(struct dock *k)
{
	if (k->finished || k->cancelled)
		return;
	k->cancelled = true;
	advance(k);
}

const struct box_result *dock_result(const struct dock *k)
{
	return &k->res;
}

void dock_free(struct dock *k)
{
	if (!k)
		return;
	call_free(k->call);
	call_free(k->wait);
	call_free(k->killc);
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
	free(k);
}

/* ---- --check and --pull ---------------------------------------------- */

static char *url_escape(const char *s)
{
	char *out = util_xalloc(strlen(s) * 3 + 1), *o = out;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("-._~", ch))
			*o++ = (char)ch;
		else
			o += sprintf(o, "%%%02X", ch);
	}
	*o = 0;
	return out;
}

/* GET /images/NAME/json, synchronously: the HTTP status (200: present, 404:
 * absent, 0: no answer) and, if id is given, the image's ID into it ("" if
 * the answer has no well-formed one: only such an ID goes into a cache key). */
static int image_inspect(struct dock_sys *d, const char *image, int timeout_ms, char *id, size_t len)
{
	char *e = url_escape(image);
	char *path = util_fmt("/images/%s/json", e);
	struct call *c = call_sync(d, "GET", path, jv_invalid(), timeout_ms);
	int st = c->status;
	if (id) {
		id[0] = 0;
		jv v = st == 200 && c->bodylen ? jv_parse_sized(c->body, (int)c->bodylen) : jv_invalid();
		const char *s = jv_get_kind(v) == JV_KIND_OBJECT ? rec_str(v, "Id", NULL) : NULL;
		if (s && !strncmp(s, "sha256:", 7) && strlen(s) == 71 && strspn(s + 7, "0123456789abcdef") == 64)
			snprintf(id, len, "%s", s);
		jv_free(v);
	}
	call_free(c);
	free(path);
	free(e);
	return st;
}

static int image_status(struct dock_sys *d, const char *image)
{
	return image_inspect(d, image, 10000, NULL, 0);
}

bool dock_image_id(struct dock_sys *d, const char *image, char *id, size_t len)
{
	if (len)
		id[0] = 0;
	if (!image || !*image || len < 72 || !dock_ready(d))
		return false;
	/* Short: the caller's loop waits; a slow engine costs the job its
	 * cache lookup, not the batch its progress. */
	image_inspect(d, image, 2000, id, len);
	return id[0] != 0;
}

struct probe {
	struct dock *k;
	char *scratch;
	char **env;
	bool done;
	char err[256];
};

static void probe_done(struct dock *k, void *arg)
{
	(void)k;
	((struct probe *)arg)->done = true;
}

jv dock_check(struct dock_sys *d)
{
	const struct conf *c = d->conf;
	jv o = jv_object_set(jv_object(), jv_string("backend"), jv_string("docker"));
	o = jv_object_set(o, jv_string("docker_host"), jv_string(d->host));
	dock_ready(d);
	jv fixes = jv_array();
	if (d->ok) {
		jv e = jv_object_set(jv_object(), jv_string("version"), jv_string(d->version));
		e = jv_object_set(e, jv_string("api_version"), jv_string(d->api + 1));
		e = jv_object_set(e, jv_string("cgroup_driver"), jv_string(d->cgroup_driver));
		o = jv_object_set(o, jv_string("engine"), e);
		o = jv_object_set(o, jv_string("accounting"), jv_bool(d->cg_ok));
	} else {
		o = jv_object_set(o, jv_string("engine"), jv_null());
		o = jv_object_set(o, jv_string("error"), jv_string(d->why));
		fixes = jv_array_append(fixes, jv_string(d->why));
	}
	o = jv_object_set(o, jv_string("usable"), jv_bool(d->ok));
	/* Each language: its image here, and its version as a container of
	 * it sees it, all probed at once. */
	struct loop *l = loop_new();
	struct probe *p = util_xalloc((c->nlangs ? c->nlangs : 1) * sizeof *p);
	int *img = util_xalloc((c->nlangs ? c->nlangs : 1) * sizeof *img);
	/* The compile stage's limits, with room for a slow runtime to start. */
	struct limits lim;
	conf_lang_limits(c, NULL, NULL, &lim);
	lim.timeout_ms = 30000;
	lim.output = 4096;
	lim.cpus = 1;
	struct box_spec *bs = util_xalloc((c->nlangs ? c->nlangs : 1) * sizeof *bs);
	for (size_t i = 0; i < c->nlangs; i++) {
		const struct conf_lang *lg = &c->langs[i];
		p[i].done = true;
		img[i] = d->ok && lg->image ? image_status(d, lg->image) : 0;
		if (img[i] != 200 || !lg->version)
			continue;
		p[i].scratch = dock_scratch(d, 1 << 20, p[i].err, sizeof p[i].err);
		if (!p[i].scratch)
			continue;
		p[i].env = stage_lang_env(lg, &lim);
		bs[i] = (struct box_spec){ .argv = lg->version, .env = p[i].env, .lim = &lim, .binds = lg->binds };
		struct dock_spec ds = { .box = &bs[i], .image = lg->image, .scratch = p[i].scratch, .run_id = "check" };
		p[i].done = false;
		p[i].k = dock_start(d, l, &ds, probe_done, &p[i]);
	}
	for (;;) {
		bool all = true;
		for (size_t i = 0; i < c->nlangs; i++)
			all &= p[i].done;
		if (all || loop_once(l, 1000) < 0)
			break;
	}
	jv langs = jv_array();
	for (size_t i = 0; i < c->nlangs; i++) {
		const struct conf_lang *lg = &c->langs[i];
		jv x = jv_object_set(jv_object(), jv_string("name"), jv_string(lg->name));
		x = jv_object_set(x, jv_string("image"), lg->image ? jv_string(lg->image) : jv_null());
		char why[700] = "";
		jv version = jv_null();
		if (!d->ok)
			snprintf(why, sizeof why, "the Docker daemon is not usable: %s", d->why);
		else if (!lg->image)
			snprintf(why, sizeof why, "no image in the configuration");
		else if (img[i] == 404)
			snprintf(why, sizeof why, "the image %s is not on this Docker host: docker pull %s, or sbx-run --pull",
				 lg->image, lg->image);
		else if (img[i] != 200)
			snprintf(why, sizeof why, "the Docker daemon did not say whether it has the image %s", lg->image);
		else if (p[i].k)
			version = stage_version(dock_result(p[i].k), "its container", why, sizeof why);
		else if (lg->version)
			snprintf(why, sizeof why, "no scratch directory for the probe: %s", p[i].err);
		if (why[0] && d->ok && img[i] == 404)
			fixes = jv_array_append(fixes, jv_string(why));
		x = jv_object_set(x, jv_string("available"), jv_bool(!why[0]));
		x = jv_object_set(x, jv_string("version"), version);
		if (why[0])
			x = jv_object_set(x, jv_string("error"), jv_string(why));
		langs = jv_array_append(langs, x);
		dock_free(p[i].k);
		util_strv_free(p[i].env);
		if (p[i].scratch) {
			dock_scratch_remove(p[i].scratch);
			free(p[i].scratch);
		}
	}
	loop_free(l);
	free(p);
	free(img);
	free(bs);
	o = jv_object_set(o, jv_string("languages"), langs);
	return jv_object_set(o, jv_string("fixes"), fixes);
}

/* Pull one image, printing the daemon's progress messages as they come. */
static int pull_one(struct dock_sys *d, const char *image, FILE *progress)
{
	int e = 0, fd = dial(d, &e);
	char msg[700];
	if (fd < 0) {
		fmt_connect_error(d, e, msg, sizeof msg);
		fprintf(progress, "sbx-run: pull %s: %s\n", image, msg);
		return -1;
	}
	char *q = url_escape(image);
	char *req = util_fmt("POST /%s/images/create?fromImage=%s HTTP/1.0\r\nHost: docker\r\nContent-Length: 0\r\n\r\n", d->api, q);
	free(q);
	struct pollfd pf = { .fd = fd, .events = POLLOUT };
	poll(&pf, 1, 10000);
	int rc = send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req) ? 0 : -1;
	free(req);
	char buf[65536];
	size_t len = 0;
	bool body = false;
	int status = 0;
	char last[200] = "";
	while (rc == 0) {
		pf.events = POLLIN;
		if (poll(&pf, 1, 600000) <= 0) {
			rc = -1;
			fprintf(progress, "sbx-run: pull %s: no progress from the daemon for 10 minutes\n", image);
			break;
		}
		ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = 0;
		if (!body) {
			char *end = strstr(buf, "\r\n\r\n");
			if (!end)
				continue;
			status = len > 12 ? atoi(buf + 9) : 0;
			end += 4;
			len -= (size_t)(end - buf);
			memmove(buf, end, len + 1);
			body = true;
		}
		/* one JSON message per line */
		char *nl;
		while ((nl = memchr(buf, '\n', len))) {
			*nl = 0;
			jv v = jv_parse(buf);
			if (jv_get_kind(v) == JV_KIND_OBJECT) {
				const char *err = rec_str(v, "error", NULL), *st = rec_str(v, "status", NULL);
				const char *id = rec_str(v, "id", NULL), *pr = rec_str(v, "progress", NULL);
				if (err) {
					fprintf(progress, "sbx-run: pull %s: %s\n", image, err);
					rc = -1;
				} else if (st) {
					char line[200];
					snprintf(line, sizeof line, "%s%s%s", id ? id : "", id ? ": " : "", st);
					/* one line per step, not per progress tick */
					if (strcmp(line, last)) {
						fprintf(progress, "sbx-run: pull %s: %s%s%s\n", image, line, pr ? " " : "", pr ? pr : "");
						snprintf(last, sizeof last, "%s", line);
					}
				}
			} else if (status != 200 && buf[0]) {
				fprintf(progress, "sbx-run: pull %s: HTTP %d: %.300s\n", image, status, buf);
				rc = -1;
			}
			jv_free(v);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len >= sizeof buf - 1)
			len = 0;
	}
	close(fd);
	if (status != 200 && rc == 0) {
		if (len)
			fprintf(progress, "sbx-run: pull %s: HTTP %d: %.300s\n", image, status, buf);
		rc = -1;
	}
	return rc;
}

int dock_pull(struct dock_sys *d, FILE *progress)
{
	if (!dock_ready(d)) {
		fprintf(progress, "sbx-run: %s\n", d->why);
		return -1;
	}
	const struct conf *c = d->conf;
	int rc = 0;
	for (size_t i = 0; i < c->nlangs; i++) {
		const char *img = c->langs[i].image;
		bool seen = !img;
		for (size_t j = 0; j < i && !seen; j++)
			seen = c->langs[j].image && !strcmp(c->langs[j].image, img);
		if (seen)
			continue;
		fprintf(progress, "sbx-run: pull %s (%s)\n", img, c->langs[i].name);
		if (pull_one(d, img, progress) < 0)
			rc = -1;
		else
			fprintf(progress, "sbx-run: pull %s: done\n", img);
	}
	return rc;
}
