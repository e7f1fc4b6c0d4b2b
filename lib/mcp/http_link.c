/* http_link: the HTTP server's connections, from accept to close, and the
 * limits that keep strangers (connections that showed no valid token) from
 * crowding out token holders: max_connections, max_connections_per_address
 * and request_timeout ([http]).  See struct link in http_int.h. */
#define _GNU_SOURCE
#include "http_int.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util.h"

/* Close a connection at once: its socket is shut down (not closed:
 * libmicrohttpd owns the fd), which libmicrohttpd sees as the peer gone. */
static void shed(struct http *h, struct link *k)
{
	if (k->shed)
		return;
	k->shed = true;
	shutdown(k->fd, SHUT_RDWR);
	h->nshed++;
}

/* libmicrohttpd's own limit: past it, it accepts no more (they wait in
 * the listen backlog); room above max_connections for the new
 * connections sweep closes strangers for, and those closing. */
unsigned http_link_limit(const struct conf *c)
{
	return (unsigned)(2 * c->http_max_connections + 16);
}

/* How long a new connection has to send its request head before sweep
 * may count it as a stranger's to close: a client sends it right after
 * connecting, even across a WAN or from a busy machine. */
#define HEAD_GRACE_MS 1000

static unsigned open_links(const struct http *h)
{
	unsigned n = 0;
	for (const struct link *o = h->links; o; o = o->next)
		n += !o->shed;
	return n;
}

static unsigned from(const struct http *h, const char *addr)
{
	unsigned n = 0;
	for (const struct link *o = h->links; o; o = o->next)
		n += !o->shed && !strcmp(o->addr, addr);
	return n;
}

/* Connections are kept under max_connections in all and
 * max_connections_per_address from any one address by closing strangers,
 * the oldest first, and only those past HEAD_GRACE_MS with nothing unread
 * (a head may be waiting in the socket while we are busy): a burst of
 * token holders' new connections is not mistaken for a flood.  A token
 * holder's connection is never closed for this; past hard_limit new ones
 * wait in the listen backlog until the next sweep.  Called for each new
 * connection (k: one stranger goes for it, from its address if that is
 * over its limit, else from any) and each second (k NULL: every stranger
 * past the limits). */
static void sweep(struct http *h, struct link *k)
{
	double now = util_now_ms();
	unsigned all = open_links(h);
	/* a new connection's address over its limit: a stranger from there */
	bool crowd = k && from(h, k->addr) > h->conf->http_max_per_address;
	if (k && !crowd && all <= h->conf->http_max_connections)
		return;
	for (struct link *o = h->links; o; o = o->next) {
		/* At an accept a head may be waiting unread while we were busy;
		 * at the tick libmicrohttpd has just read what there was. */
		struct pollfd pf = { .fd = o->fd, .events = POLLIN };
		if (o->shed || o->trusted || now - o->since < HEAD_GRACE_MS || (crowd && strcmp(o->addr, k->addr)) ||
		    (k && poll(&pf, 1, 0) == 1))
			continue;
		if (k || all > h->conf->http_max_connections || from(h, o->addr) > h->conf->http_max_per_address) {
			shed(h, o);
			all--;
			if (k)
				return; /* one new connection, one closed */
		}
	}
}

void http_link_notify(void *cls, struct MHD_Connection *conn, void **ctx, enum MHD_ConnectionNotificationCode what)
{
	struct http *h = cls;
	struct link *k = *ctx;
	if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!k)
			return;
		*(k->prev ? &k->prev->next : &h->links) = k->next;
		*(k->next ? &k->next->prev : &h->newest) = k->prev;
		h->nlinks--;
		free(k->uri);
		free(k);
		*ctx = NULL;
		return;
	}
	const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ai ? ai->client_addr : NULL;
	k = util_xalloc(sizeof *k);
	*k = (struct link){ .fd = fi ? fi->connect_fd : -1, .addr = "?", .since = util_now_ms(), .prev = h->newest };
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, k->addr, sizeof k->addr);
		snprintf(k->peer, sizeof k->peer, "%s:%u", k->addr, ntohs(s4->sin_port));
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, k->addr, sizeof k->addr);
		snprintf(k->peer, sizeof k->peer, "[%s]:%u", k->addr, ntohs(s6->sin6_port));
	}
	*(h->newest ? &h->newest->next : &h->links) = k;
	h->newest = k;
	h->nlinks++;
	*ctx = k;
	sweep(h, k);
}

struct link *http_link_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void http_link_tick(struct http *h, double now)
{
	for (struct link *k = h->links; k; k = k->next)
		if (!k->trusted && now - k->since > (double)h->conf->http_head_timeout_ms)
			shed(h, k);
	sweep(h, NULL);
	if (h->nshed) {
		util_warn("http: closed %u connection%s that showed no valid token (past max_connections, "
			  "max_connections_per_address or request_timeout); %u open",
			  h->nshed, h->nshed == 1 ? "" : "s", open_links(h));
		h->nshed = 0;
	}
}
