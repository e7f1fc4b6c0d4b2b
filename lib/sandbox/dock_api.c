/* dock_api: the Engine API client.  Every call is asynchronous on the
 * caller's event loop, over a connection of its own to DOCKER_HOST (unix://
 * or tcp://, plain HTTP), with a deadline, so that a daemon that stops
 * answering gives an error, never a hang.  See dock.c for the whole.
 */
#define _GNU_SOURCE
#include "dock_int.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rec.h"
#include "util.h"

static void call_watch(struct call *c);

void dock_fmt_connect_error(struct dock_sys *d, int e, char *out, size_t len)
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
			dock_fmt_connect_error(c->d, e, msg, sizeof msg);
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

int dock_dial(struct dock_sys *d, int *err)
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
struct call *dock_call_start(struct dock_sys *d, struct loop *l, const char *method, const char *path, jv body,
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
	c->fd = dock_dial(d, &e);
	if (c->fd < 0) {
		dock_fmt_connect_error(d, e, c->err, sizeof c->err);
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

void dock_call_free(struct call *c)
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
void dock_api_message(const struct call *c, char *out, size_t len)
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

struct call *dock_call_sync(struct dock_sys *d, const char *method, const char *path, jv body, int timeout_ms)
{
	struct loop *l = loop_new();
	struct sync_done sd = { false };
	struct call *c = dock_call_start(d, l, method, path, body, false, timeout_ms, path, sync_fn, &sd);
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

