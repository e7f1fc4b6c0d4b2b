/* mcp_port: a session's ports opened to a person, the tools port_open and
 * port_close.
 *
 * What an agent builds in a session listens on the session's loopback,
 * which only the session's sandboxes share.  port_open exposes one port
 * of it to the person behind the agent, until port_close or the
 * session's end:
 *
 *   - over HTTP, as a path under the server's own listener,
 *     /sessions/ID/ports/PORT/, which http_port.c reverse-proxies (HTTP
 *     and WebSocket) for the session's owner only: the same token, or the
 *     dashboard's sign-in of that token;
 *   - over stdio, as a listener of its own on 127.0.0.1 (an ephemeral
 *     port), whose connections are relayed as bytes (relay.h): the local
 *     person's browser, curl or database client speak to the program as
 *     if it were local.  Loopback is every local user's: a connection is
 *     taken only from a process of this server's own user, of the user
 *     sudo ran it for, or of root, as the kernel's socket table says
 *     (sock_diag); one it cannot tell is refused.
 *
 * Either way a connection is made in the session's namespace by sbx-run
 * (chain_connect, sbx-run --connect), never by this process joining it:
 * sbx-mcp keeps the host's network and the sandbox never sees the
 * person's token or cookie (http_port.c strips them).
 *
 * Ownership: struct mcp's list owns the open ports; a port owns its
 * listener, its connections waiting for sbx-run and its relays.
 */
#define _GNU_SOURCE
#include "mcp_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chain.h"
#include "rec.h"
#include "relay.h"
#include "state.h"
#include "util.h"

#define PORTS_MAX 16     /* open ports a session may have */
#define PORT_CONNS 64    /* a stdio listener's connections at once */

struct pconn {
	struct sport *sp;
	int fd;                /* the person's side */
	uint64_t ask;          /* chain_connect's tag while sbx-run makes the other side */
	struct relay *relay;   /* then */
	struct pconn *next;
};

struct sport {
	struct mcp *m;
	char sid[STATE_SESSION_ID_LEN + 1];
	unsigned port, owner;
	bool http;             /* opened over HTTP: served by http_port.c */
	int lfd;               /* stdio: its listener, or -1 */
	unsigned lport;
	struct pconn *conns;
	unsigned nconns;
	double opened_epoch_ms;
	struct sport *next;
};

static struct sport *find(struct mcp *m, const char *sid, unsigned port)
{
	for (struct sport *sp = m->ports; sp; sp = sp->next)
		if (sp->port == port && !strcmp(sp->sid, sid))
			return sp;
	return NULL;
}

static void conn_free(struct pconn *pc)
{
	struct sport *sp = pc->sp;
	for (struct pconn **p = &sp->conns; *p; p = &(*p)->next)
		if (*p == pc) {
			*p = pc->next;
			break;
		}
	sp->nconns--;
	free(pc);
}

static void on_relay_done(void *arg)
{
	conn_free(arg);
}

static void on_upstream(int fd, const char *why, void *arg)
{
	struct pconn *pc = arg;
	pc->ask = 0;
	if (fd < 0) {
		/* The person's side is closed at once: their client says
		 * "connection reset", the server's log says why. */
		util_warn("port %u of session %.8s: %s", pc->sp->port, pc->sp->sid, why);
		close(pc->fd);
		conn_free(pc);
		return;
	}
	pc->relay = relay_new(pc->sp->m->loop, pc->fd, fd, 0, NULL, 0, NULL, 0, on_relay_done, pc);
}

/* The uid of the local process whose socket made connection c to our
 * 127.0.0.1 listener, from the kernel's table of sockets (sock_diag: the
 * one socket whose ends are c's, reversed), or -1. */
static long peer_uid(int c)
{
	struct sockaddr_in me, peer;
	socklen_t ml = sizeof me, pl = sizeof peer;
	if (getsockname(c, (struct sockaddr *)&me, &ml) < 0 || getpeername(c, (struct sockaddr *)&peer, &pl) < 0 ||
	    peer.sin_family != AF_INET)
		return -1;
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} q = { .nlh = { .nlmsg_len = sizeof q, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u,
		       .id = { .idiag_sport = peer.sin_port, .idiag_dport = me.sin_port,
			       .idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } } } };
	memcpy(q.r.id.idiag_src, &peer.sin_addr, 4);
	memcpy(q.r.id.idiag_dst, &me.sin_addr, 4);
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -1;
	struct timeval tv = { 1, 0 };
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	long uid = -1;
	union {
		struct nlmsghdr h;
		char b[4096];
	} a;
	ssize_t n;
	if (send(nl, &q, sizeof q, 0) == (ssize_t)sizeof q) {
		do
			n = recv(nl, &a, sizeof a, 0);
		while (n < 0 && errno == EINTR);
		for (struct nlmsghdr *h = &a.h; n > 0 && NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n))
			if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
				uid = ((struct inet_diag_msg *)NLMSG_DATA(h))->idiag_uid;
				break;
			}
	}
	close(nl);
	return uid;
}

/* Whose local connections a stdio listener takes: this server's user,
 * the user sudo ran it for, root. */
static bool uid_welcome(long uid)
{
	if (uid < 0)
		return false;
	if (uid == 0 || uid == (long)getuid())
		return true;
	const char *su = getenv("SUDO_UID");
	char *end;
	errno = 0;
	long s = su && *su ? strtol(su, &end, 10) : -1;
	return s >= 0 && !errno && !*end && s == uid;
}

static void on_accept(struct loop *l, int fd, short rev, void *arg)
{
	struct sport *sp = arg;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
	char err[300];
	long uid = peer_uid(c);
	if (!uid_welcome(uid)) {
		if (uid < 0)
			util_warn("port %u of session %.8s: a connection refused: the kernel does not say whose it is (sock_diag)",
				  sp->port, sp->sid);
		else
			util_warn("port %u of session %.8s: a connection of uid %ld refused: it is open to this server's user",
				  sp->port, sp->sid, uid);
		close(c);
		return;
	}
	if (sp->nconns >= PORT_CONNS) {
		util_warn("port %u of session %.8s: %u connections already, one refused", sp->port, sp->sid, PORT_CONNS);
		close(c);
		return;
	}
	struct pconn *pc = util_xalloc(sizeof *pc);
	*pc = (struct pconn){ .sp = sp, .fd = c, .next = sp->conns };
	pc->ask = chain_connect(sp->m->chain, sp->sid, sp->port, on_upstream, pc, err, sizeof err);
	if (!pc->ask) {
		util_warn("port %u of session %.8s: %s", sp->port, sp->sid, err);
		close(c);
		free(pc);
		return;
	}
	sp->conns = pc;
	sp->nconns++;
	(void)l, (void)rev;
}

/* 127.0.0.1, a port the kernel picks; -1 with err. */
static int local_listener(unsigned *port, char *err, size_t errlen)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		snprintf(err, errlen, "cannot listen on 127.0.0.1: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static void port_free(struct sport *sp)
{
	struct mcp *m = sp->m;
	for (struct sport **p = &m->ports; *p; p = &(*p)->next)
		if (*p == sp) {
			*p = sp->next;
			break;
		}
	if (sp->lfd >= 0) {
		loop_unwatch(m->loop, sp->lfd);
		close(sp->lfd);
	}
	if (sp->http && m->port_closed) /* what the HTTP listener has in flight to it */
		m->port_closed(m->port_closed_arg, sp->sid, sp->port);
	while (sp->conns) {
		struct pconn *pc = sp->conns;
		if (pc->relay) {
			relay_close(pc->relay); /* frees pc */
			continue;
		}
		chain_connect_cancel(m->chain, pc->ask);
		close(pc->fd);
		conn_free(pc);
	}
	free(sp);
}

static jv port_json(const struct sport *sp)
{
	jv o = jv_object_set(jv_object(), jv_string("port"), jv_number(sp->port));
	char path[128];
	snprintf(path, sizeof path, "/sessions/%s/ports/%u/", sp->sid, sp->port);
	char *url = sp->http ? util_fmt("%s%s", sp->m->base_url, path) : util_fmt("http://127.0.0.1:%u/", sp->lport);
	o = jv_object_set(o, jv_string("url"), jv_string(url));
	free(url);
	if (sp->http)
		o = jv_object_set(o, jv_string("path"), jv_string(path));
	char when[40];
	util_iso8601(sp->opened_epoch_ms, when, sizeof when);
	o = jv_object_set(o, jv_string("opened_at"), jv_string(when));
	return o;
}

/* The call's session and port, or false (the call answered). */
static bool args_of(struct call *c, const char **sid, unsigned *port)
{
	char err[512];
	double p = 0;
	if (!sess_check(c->m->sessions, c->owner, c->args, err, sizeof err)) {
		mcp_call_finish(c, mcp_tool_error("%s", err));
		return false;
	}
	if (!rec_num(c->args, "port", &p) || p != floor(p) || p < 1 || p > 65535) {
		mcp_call_finish(c, mcp_tool_error("port: a TCP port, 1 to 65535"));
		return false;
	}
	*sid = rec_str(c->args, "session_id", NULL);
	*port = (unsigned)p;
	return true;
}

void mcp_port_open(struct call *c)
{
	struct mcp *m = c->m;
	const char *sid;
	unsigned port, n = 0;
	if (!args_of(c, &sid, &port))
		return;
	/* Over HTTP the path is served by the listener the call came through;
	 * a stdio client gets a listener of its own. */
	bool http = c->cl && c->cl->auth;
	struct sport *sp = find(m, sid, port);
	if (sp && sp->http == http) {
		mcp_call_finish(c, mcp_tool_result(port_json(sp), false));
		return;
	}
	for (struct sport *x = m->ports; x; x = x->next)
		n += !strcmp(x->sid, sid);
	if (n >= PORTS_MAX) {
		mcp_call_finish(c, mcp_tool_error("the session has %u open ports, as many as it may: close one (port_close)", n));
		return;
	}
	if (http && !m->base_url[0]) {
		mcp_call_finish(c, mcp_tool_error("this server has no HTTP listener to open the port on"));
		return;
	}
	struct sport *nsp = util_xalloc(sizeof *nsp);
	*nsp = (struct sport){ .m = m, .port = port, .owner = c->owner, .http = http, .lfd = -1,
			       .opened_epoch_ms = util_epoch_ms() };
	snprintf(nsp->sid, sizeof nsp->sid, "%s", sid);
	if (!http) {
		char err[300];
		nsp->lfd = local_listener(&nsp->lport, err, sizeof err);
		if (nsp->lfd < 0) {
			free(nsp);
			mcp_call_finish(c, mcp_tool_error("%s", err));
			return;
		}
		loop_watch(m->loop, nsp->lfd, POLLIN, on_accept, nsp);
	}
	if (sp)
		port_free(sp); /* opened the other way before: this call's way wins */
	nsp->next = m->ports;
	m->ports = nsp;
	mcp_call_finish(c, mcp_tool_result(port_json(nsp), false));
}

void mcp_port_close(struct call *c)
{
	const char *sid;
	unsigned port;
	if (!args_of(c, &sid, &port))
		return;
	struct sport *sp = find(c->m, sid, port);
	jv o = jv_object_set(jv_object(), jv_string("port"), jv_number(port));
	o = jv_object_set(o, jv_string("closed"), jv_bool(sp != NULL));
	if (sp)
		port_free(sp);
	mcp_call_finish(c, mcp_tool_result(o, false));
}

jv mcp_port_json(struct mcp *m, const char *sid)
{
	jv list = jv_array();
	for (struct sport *sp = m->ports; sp; sp = sp->next)
		if (!strcmp(sp->sid, sid))
			list = jv_array_append(list, port_json(sp));
	return list;
}

void mcp_port_session_end(struct mcp *m, const char *sid)
{
	for (struct sport *sp = m->ports, *next; sp; sp = next) {
		next = sp->next;
		if (!strcmp(sp->sid, sid))
			port_free(sp);
	}
}

void mcp_port_free_all(struct mcp *m)
{
	while (m->ports)
		port_free(m->ports);
}

uint64_t mcp_port_connect(struct mcp *m, unsigned owner, const char *sid, unsigned port, mcp_port_fn done, void *arg,
			  bool *exposed, char *err, size_t errlen)
{
	struct sport *sp = find(m, sid, port);
	/* Another owner's port is answered as one never opened. */
	*exposed = sp && sp->http && sp->owner == owner;
	if (!*exposed) {
		snprintf(err, errlen, "no such open port: port_open opens a session's port, for the session's owner");
		return 0;
	}
	return chain_connect(m->chain, sid, port, done, arg, err, errlen);
}

void mcp_port_cancel(struct mcp *m, uint64_t tag)
{
	chain_connect_cancel(m->chain, tag);
}

void mcp_set_http(struct mcp *m, const char *base, mcp_port_closed_fn closed, void *arg)
{
	snprintf(m->base_url, sizeof m->base_url, "%s", base);
	m->port_closed = closed;
	m->port_closed_arg = arg;
}
