#define _GNU_SOURCE
#include "egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "b64.h"
#include "hostpat.h"
#include "proc.h"
#include "util.h"

#define HEAD_MAX 8192
#define HEAD_SECONDS 30      /* to send the request head */
#define CONNECT_MS 10000     /* to reach the registry */
#define IDLE_MS 300000       /* a tunnel with no traffic either way */
#define SOCK_BUF 65536       /* each tunnel socket's buffers: kernel memory outside the run's cgroup */

/* A reader of bytes that never reads past its end: every length a
 * ClientHello gives is the sender's, and checked before it is used. */
struct rd {
	const unsigned char *p, *end;
};

static bool rd_take(struct rd *r, size_t n, const unsigned char **out)
{
	if ((size_t)(r->end - r->p) < n)
		return false;
	if (out)
		*out = r->p;
	r->p += n;
	return true;
}

static bool rd_num(struct rd *r, size_t bytes, size_t *v)
{
	const unsigned char *b;
	if (!rd_take(r, bytes, &b))
		return false;
	*v = 0;
	for (size_t i = 0; i < bytes; i++)
		*v = *v << 8 | b[i];
	return true;
}

/* A sub-reader of the next n bytes (a length-prefixed vector). */
static bool rd_sub(struct rd *r, size_t len_bytes, struct rd *sub)
{
	size_t n;
	const unsigned char *b;
	if (!rd_num(r, len_bytes, &n) || !rd_take(r, n, &b))
		return false;
	*sub = (struct rd){ b, b + n };
	return true;
}

int egress_hello_sni(const unsigned char *b, size_t n, char *name, size_t len, size_t *need)
{
	struct rd r = { b, b + n }, rec, hs, exts;
	size_t type, v, rlen, hlen;
	if (need)
		*need = 0;
	/* record: handshake (22), a version, its length */
	if (!rd_num(&r, 1, &type) || type != 22 || !rd_num(&r, 2, &v) || !rd_num(&r, 2, &rlen))
		return -1;
	if (need)
		*need = 5 + rlen;
	if (!rd_take(&r, rlen, NULL))
		return -1;
	rec = (struct rd){ b + 5, b + 5 + rlen };
	/* handshake: ClientHello (1), its length, within this record */
	const unsigned char *body;
	if (!rd_num(&rec, 1, &type) || type != 1 || !rd_num(&rec, 3, &hlen) || !rd_take(&rec, hlen, &body))
		return -1;
	/* the ClientHello alone in its record */
	if (rec.p != rec.end)
		return -1;
	hs = (struct rd){ body, body + hlen };
	struct rd skip;
	/* version, random, session id, cipher suites, compression methods */
	if (!rd_take(&hs, 2 + 32, NULL) || !rd_sub(&hs, 1, &skip) || !rd_sub(&hs, 2, &skip) || !rd_sub(&hs, 1, &skip))
		return -1;
	if (hs.p == hs.end)
		return 0; /* no extensions */
	/* the extensions end the ClientHello: nothing after them */
	if (!rd_sub(&hs, 2, &exts) || hs.p != hs.end)
		return -1;
	/* Each extension once (a second server name would be another
	 * reader's), and none that hides the server name: Encrypted Client
	 * Hello (0xfe0d) and its draft ESNI (0xffce) carry the real one
	 * encrypted, the visible one being anything the CDN serves. */
	size_t seen[128], nseen = 0;
	int found = 0;
	while (exts.p < exts.end) {
		size_t et;
		struct rd ext, list, host;
		if (!rd_num(&exts, 2, &et) || !rd_sub(&exts, 2, &ext) || nseen == sizeof seen / sizeof *seen)
			return -1;
		for (size_t i = 0; i < nseen; i++)
			if (seen[i] == et)
				return -1;
		seen[nseen++] = et;
		if (et == 0xfe0d || et == 0xffce)
			return -1;
		if (et != 0) /* server_name */
			continue;
		size_t nt;
		/* one host_name (0): a list of two would be ambiguous */
		if (!rd_sub(&ext, 2, &list) || !rd_num(&list, 1, &nt) || nt != 0 || !rd_sub(&list, 2, &host) ||
		    list.p != list.end || host.p == host.end || (size_t)(host.end - host.p) >= len)
			return -1;
		size_t hn = (size_t)(host.end - host.p);
		memcpy(name, host.p, hn);
		name[hn] = 0;
		if (memchr(name, 0, hn))
			return -1;
		found = 1;
	}
	return found;
}

/* ---- plain HTTP requests' heads ------------------------------------------ */

/* A character of a token (a method, a header's name): RFC 9110's tchar. */
static bool tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool token(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!tchar((unsigned char)p[i]))
			return false;
	return n > 0;
}

static bool name_is(const char *p, size_t n, const char *name)
{
	return strlen(name) == n && !strncasecmp(p, name, n);
}

/* A header line's name and value (without the spaces around it), from
 * line (n bytes, without its CRLF); false if it has no name and colon. */
static bool header_split(const char *line, size_t n, size_t *name_len, const char **val, size_t *val_len)
{
	const char *colon = memchr(line, ':', n);
	if (!colon || !token(line, (size_t)(colon - line)))
		return false;
	*name_len = (size_t)(colon - line);
	const char *v = colon + 1, *e = line + n;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*val = v;
	*val_len = (size_t)(e - v);
	return true;
}

/* The parser's refusal: why, and false. */
static bool bad_head(char *why, size_t whylen, const char *text)
{
	snprintf(why, whylen, "%s", text);
	return false;
}

bool egress_http_head(const char *buf, size_t len, struct egress_http *h, char *why, size_t whylen)
{
	*h = (struct egress_http){ .content_length = -1 };
	if (len < 4 || memcmp(buf + len - 4, "\r\n\r\n", 4))
		return bad_head(why, whylen, "the request's head does not end with a blank line");
	/* Lines end in CRLF and nothing else: a bare CR or LF is where a
	 * server and this proxy could split the head differently (a header
	 * smuggled past the checks below). */
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];
		if (ch == '\r' && (i + 1 == len || buf[i + 1] != '\n'))
			return bad_head(why, whylen, "a bare CR in the request's head");
		if (ch == '\n' && (i == 0 || buf[i - 1] != '\r'))
			return bad_head(why, whylen, "a bare LF in the request's head");
		if ((ch < 0x20 && ch != '\t' && ch != '\r' && ch != '\n') || ch == 0x7f)
			return bad_head(why, whylen, "a control character in the request's head");
	}
	const char *end = buf + len, *eol = memmem(buf, len, "\r\n", 2);
	/* the request line: METHOD SP URL SP HTTP/1.x */
	const char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp2 || !token(buf, (size_t)(sp1 - buf)) || (size_t)(sp1 - buf) >= sizeof h->method)
		return bad_head(why, whylen, "not an HTTP request line (METHOD http://host/path HTTP/1.1)");
	if (!(eol - sp2 == 9 && (!memcmp(sp2 + 1, "HTTP/1.0", 8) || !memcmp(sp2 + 1, "HTTP/1.1", 8))))
		return bad_head(why, whylen, "only HTTP/1.0 and HTTP/1.1 requests are passed");
	memcpy(h->method, buf, (size_t)(sp1 - buf));
	if (!strcmp(h->method, "CONNECT"))
		return bad_head(why, whylen, "CONNECT takes a host name and a port");
	const char *url = sp1 + 1;
	size_t ul = (size_t)(sp2 - url);
	if (ul && url[0] == '/')
		return bad_head(why, whylen, "a request to this proxy names its URL in full (http://host/path); HTTPS goes "
					     "through CONNECT (https_proxy)");
	if (ul >= 8 && !strncasecmp(url, "https://", 8))
		return bad_head(why, whylen, "an https:// URL goes through a CONNECT tunnel (https_proxy), not as a plain request");
	if (ul < 7 || strncasecmp(url, "http://", 7))
		return bad_head(why, whylen, "only http:// URLs go as plain requests (HTTPS goes through CONNECT)");
	for (size_t i = 0; i < ul; i++)
		if ((unsigned char)url[i] > 0x7e)
			return bad_head(why, whylen, "the URL holds a byte that is not printable ASCII (percent-encode it)");
	/* the authority: host[:port], up to the path, query or fragment */
	const char *auth = url + 7, *aend = auth;
	while (aend < sp2 && !strchr("/?#", *aend))
		aend++;
	if (memchr(auth, '@', (size_t)(aend - auth)))
		return bad_head(why, whylen, "a URL with user information (user@host) is not passed");
	if (aend > auth && auth[0] == '[')
		return bad_head(why, whylen, "an IPv6 address in the URL: this proxy reaches hosts by name or IPv4 address");
	const char *colon = memchr(auth, ':', (size_t)(aend - auth));
	const char *hend = colon ? colon : aend;
	size_t hn = (size_t)(hend - auth);
	static const char hostch[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-";
	for (size_t i = 0; i < hn; i++)
		if (!strchr(hostch, auth[i]))
			hn = 0;
	if (!hn || hn >= sizeof h->host)
		return bad_head(why, whylen, "the URL names no host this proxy can reach (a name or IPv4 address)");
	memcpy(h->host, auth, hn);
	h->host[hn] = 0;
	h->port = 80;
	if (colon) {
		char num[8];
		size_t pn = (size_t)(aend - colon - 1);
		int64_t v;
		bool digits = pn > 0 && pn < sizeof num && strspn(colon + 1, "0123456789") >= pn;
		if (digits) {
			memcpy(num, colon + 1, pn);
			num[pn] = 0;
		}
		if (!digits || !util_parse_i64(num, 1, 65535, &v))
			return bad_head(why, whylen, "the URL's port must be a number from 1 to 65535");
		h->port = (int)v;
		h->port_given = true;
	}
	if (memchr(aend, '#', (size_t)(sp2 - aend)))
		return bad_head(why, whylen, "a URL with a fragment (#): a client does not send it");
	h->path = (size_t)(aend - buf);
	h->path_len = (size_t)(sp2 - aend);
	/* the headers, up to the blank line that ends the head */
	const char *p = eol + 2;
	while (p < end - 2) {
		const char *le = memmem(p, (size_t)(end - p), "\r\n", 2);
		const char *val;
		size_t nl, vl;
		if (le == p)
			return bad_head(why, whylen, "bytes after the head's blank line");
		if (*p == ' ' || *p == '\t')
			return bad_head(why, whylen, "a folded header line (obs-fold) is not passed");
		if (!header_split(p, (size_t)(le - p), &nl, &val, &vl))
			return bad_head(why, whylen, "a header line without a name and a colon");
		if (name_is(p, nl, "Host")) {
			if (h->flags & EGRESS_HTTP_HOST)
				return bad_head(why, whylen, "two Host headers");
			if (vl >= sizeof h->host_header)
				return bad_head(why, whylen, "the Host header is too long");
			memcpy(h->host_header, val, vl);
			h->host_header[vl] = 0;
			h->flags |= EGRESS_HTTP_HOST;
		} else if (name_is(p, nl, "Content-Length")) {
			char num[20];
			int64_t v;
			if (h->content_length >= 0)
				return bad_head(why, whylen, "two Content-Length headers");
			bool digits = vl > 0 && vl < sizeof num && strspn(val, "0123456789") >= vl;
			if (digits) {
				memcpy(num, val, vl);
				num[vl] = 0;
			}
			if (!digits || !util_parse_i64(num, 0, EGRESS_HTTP_BODY_MAX, &v))
				return bad_head(why, whylen, "the Content-Length is not a number of bytes this proxy passes");
			h->content_length = v;
		} else if (name_is(p, nl, "Transfer-Encoding"))
			h->flags |= EGRESS_HTTP_CHUNKED;
		else if (name_is(p, nl, "Upgrade"))
			h->flags |= EGRESS_HTTP_UPGRADE;
		p = le + 2;
	}
	return true;
}

/* What is appended to a head being built: false once it would overflow. */
struct out {
	char *p;
	size_t n, cap;
	bool over;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->over || o->cap - o->n < n) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* Hop-by-hop headers: this connection's, not the server's; and Proxy-*
 * (a credential for us, or for a proxy the client thinks it talks to). */
static bool hop_by_hop(const char *name, size_t n)
{
	return (n >= 6 && !strncasecmp(name, "Proxy-", 6)) || name_is(name, n, "Connection") ||
	       name_is(name, n, "Keep-Alive") || name_is(name, n, "TE") || name_is(name, n, "Upgrade") ||
	       name_is(name, n, "Transfer-Encoding");
}

size_t egress_http_forward(const char *buf, size_t len, const struct egress_http *h, const char *up_auth, char *out,
			   size_t cap)
{
	struct out o = { out, 0, cap, false };
	char port[16] = "";
	if (h->port_given)
		snprintf(port, sizeof port, ":%d", h->port);
	puts_(&o, h->method);
	puts_(&o, " ");
	if (up_auth) {
		puts_(&o, "http://");
		puts_(&o, h->host);
		puts_(&o, port);
	}
	/* an empty path is "/" (and "?q" is "/?q") in the origin form */
	if (!h->path_len || buf[h->path] != '/')
		puts_(&o, "/");
	put(&o, buf + h->path, h->path_len);
	puts_(&o, " HTTP/1.1\r\n");
	const char *end = buf + len, *p = (const char *)memmem(buf, len, "\r\n", 2) + 2;
	while (p < end - 2) {
		const char *le = memmem(p, (size_t)(end - p), "\r\n", 2), *val;
		size_t nl, vl;
		if (!header_split(p, (size_t)(le - p), &nl, &val, &vl))
			return 0; /* not a head egress_http_head passed */
		if (!hop_by_hop(p, nl))
			put(&o, p, (size_t)(le + 2 - p));
		p = le + 2;
	}
	if (!(h->flags & EGRESS_HTTP_HOST)) {
		puts_(&o, "Host: ");
		puts_(&o, h->host);
		puts_(&o, port);
		puts_(&o, "\r\n");
	}
	if (up_auth && *up_auth) {
		puts_(&o, "Proxy-Authorization: Basic ");
		puts_(&o, up_auth);
		puts_(&o, "\r\n");
	}
	puts_(&o, "Connection: close\r\n\r\n");
	return o.over ? 0 : o.n;
}

bool egress_http_host_ok(const struct egress_http *h)
{
	if (!(h->flags & EGRESS_HTTP_HOST))
		return true;
	size_t n = strlen(h->host);
	if (strncasecmp(h->host_header, h->host, n))
		return false;
	if (!h->host_header[n])
		return true;
	char port[16];
	snprintf(port, sizeof port, ":%d", h->port);
	return !strcmp(h->host_header + n, port);
}

/* The documentation ranges (TEST-NET-1..3) and 198.18/15 stay reachable:
 * some networks' resolvers answer with them for real hosts (an
 * intercepting proxy, a benchmark rig), and no host uses them for its own
 * services. */
static bool v4_public(uint32_t a)
{
	static const struct { uint32_t net, mask; } deny[] = {
		{ 0x00000000, 0xff000000 }, /* 0/8 "this network" */
		{ 0x0a000000, 0xff000000 }, /* 10/8 */
		{ 0x64400000, 0xffc00000 }, /* 100.64/10 shared (CGNAT) */
		{ 0x7f000000, 0xff000000 }, /* 127/8 loopback */
		{ 0xa9fe0000, 0xffff0000 }, /* 169.254/16 link-local (cloud metadata) */
		{ 0xac100000, 0xfff00000 }, /* 172.16/12 */
		{ 0xc0000000, 0xffffff00 }, /* 192.0.0/24 IETF protocol assignments */
		{ 0xc0586300, 0xffffff00 }, /* 192.88.99/24 6to4 relay anycast */
		{ 0xc0a80000, 0xffff0000 }, /* 192.168/16 */
		{ 0xe0000000, 0xf0000000 }, /* 224/4 multicast */
		{ 0xf0000000, 0xf0000000 }, /* 240/4 reserved, broadcast */
	};
	for (size_t i = 0; i < sizeof deny / sizeof deny[0]; i++)
		if ((a & deny[i].mask) == deny[i].net)
			return false;
	return true;
}

static uint32_t v4_at(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

bool egress_addr_public(const void *sa)
{
	const struct sockaddr *s = sa;
	if (s->sa_family == AF_INET)
		return v4_public(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (s->sa_family != AF_INET6)
		return false;
	const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	static const uint8_t zero[12] = { 0 };
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	/* IPv4 inside IPv6: mapped, compatible (::a.b.c.d, and :: and ::1
	 * with them), the well-known NAT64 prefix: the IPv4 address decides. */
	if (!memcmp(b, mapped, 12) || !memcmp(b, zero, 12) || !memcmp(b, nat64, 12))
		return v4_public(v4_at(b + 12));
	if (b[0] == 0x20 && b[1] == 0x02) /* 6to4 2002:a.b.c.d::/48 */
		return v4_public(v4_at(b + 2));
	if ((b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0x00 && b[5] == 0x01) || /* 64:ff9b:1::/48 local NAT64 */
	    (b[0] == 0x01 && b[1] == 0x00 && !memcmp(b + 2, zero, 6)) ||                                   /* 100::/64 discard */
	    (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00) ||                              /* 2001::/32 Teredo */
	    (b[0] & 0xfe) == 0xfc ||                                                                       /* fc00::/7 unique local */
	    (b[0] == 0xfe && (b[1] & 0x80) == 0x80) ||                                                     /* fe80::/10, fec0::/10 */
	    b[0] == 0xff)                                                                                  /* multicast */
		return false;
	return true;
}

/* ---- the server (sbx-egress) --------------------------------------------- */

/* sbx-run's own proxy for one scheme, from its environment. */
struct upstream {
	char host[256], port[8], auth[400]; /* "" host: none; auth: its Basic credentials, or "" */
	bool bad;                           /* a proxy we cannot use: nothing may go direct either */
};

struct server {
	char *const *hosts;
	int log;                     /* where each connection's record goes */
	struct ifaddrs *own;         /* the host's interfaces' addresses */
	struct upstream https, http; /* HTTPS_PROXY (for CONNECT), HTTP_PROXY (for plain HTTP) */
	struct egress_bounds b;
	uint64_t *used;              /* the run's bytes so far, both ways: a page the children share */
	double t0;                   /* when the proxy started, for egress_rate */
	size_t chunk;                /* the most read at once: small where egress_rate paces */
};

/* SIGTERM: egress_stop asks us to end.  A connection's child then stops
 * relaying and writes its record; the server waits for its children.
 * SIGTERM stays blocked but in the waits (wait_fds), so that it cannot
 * come between a check of `stopping` and a wait, which would then last
 * its whole timeout. */
static volatile sig_atomic_t stopping;
static sigset_t waiting_mask; /* the mask in the waits: SIGTERM let in */

static void on_signal(int sig)
{
	if (sig == SIGTERM)
		stopping = 1;
}

/* poll, with SIGTERM (and SIGALRM) let in; -1 (EINTR) once stopping. */
static int wait_fds(struct pollfd *pf, nfds_t n, int ms)
{
	if (stopping) {
		errno = EINTR;
		return -1;
	}
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	return ppoll(pf, n, &ts, &waiting_mask);
}

/* One connection, as its record will say. */
struct conn {
	char host[256];
	int port;                /* 0: none asked for */
	bool allowed;
	char why[800];           /* "" when nothing went wrong */
	bool cut;                /* ended at the run's egress_bytes */
	uint64_t sent, received; /* bytes from the sandbox, and to it */
	double t0;
};


/* Write the connection's record: one line in one write (PIPE_BUF at
 * most: the host and the why are bounded). */
static void put_record(const struct server *sv, const struct conn *cn)
{
	jv r = jv_object_set(jv_object(), jv_string("host"), cn->host[0] ? jv_string(cn->host) : jv_null());
	r = jv_object_set(r, jv_string("port"), cn->port ? jv_number(cn->port) : jv_null());
	r = jv_object_set(r, jv_string("allowed"), jv_bool(cn->allowed));
	if (cn->why[0])
		r = jv_object_set(r, jv_string("why"), jv_string(cn->why));
	r = jv_object_set(r, jv_string("bytes_sent"), jv_number((double)cn->sent));
	r = jv_object_set(r, jv_string("bytes_received"), jv_number((double)cn->received));
	r = jv_object_set(r, jv_string("duration_ms"), jv_number(round((util_now_ms() - cn->t0) * 10) / 10));
	jv line = jv_dump_string(r, 0);
	size_t n = (size_t)jv_string_length_bytes(jv_copy(line));
	char buf[PIPE_BUF];
	if (n < sizeof buf) {
		memcpy(buf, jv_string_value(line), n);
		buf[n++] = '\n';
		while (write(sv->log, buf, n) < 0 && errno == EINTR)
			;
	}
	jv_free(line);
}

/* ... and end the connection's child. */
static _Noreturn void record(const struct server *sv, const struct conn *cn)
{
	put_record(sv, cn);
	_exit(0);
}

static bool own_address(const struct server *sv, const struct sockaddr *sa)
{
	for (const struct ifaddrs *i = sv->own; i; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;
		if (!a || a->sa_family != sa->sa_family)
			continue;
		if (a->sa_family == AF_INET &&
		    ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			return true;
		if (a->sa_family == AF_INET6 && !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
							&((const struct sockaddr_in6 *)sa)->sin6_addr, 16))
			return true;
	}
	return false;
}

/* Does the kernel route this address to the host itself (RTN_LOCAL: an
 * interface's address, an AnyIP range, a local table entry)?  Asked with
 * RTM_GETROUTE, as `ip route get` does.  On any failure: yes (refuse). */
static bool local_route(const struct sockaddr *sa)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attr[RTA_SPACE(16)];
	} req;
	memset(&req, 0, sizeof req);
	bool v6 = sa->sa_family == AF_INET6;
	size_t alen = v6 ? 16 : 4;
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof req.rt) + RTA_LENGTH(alen);
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.rt.rtm_family = (unsigned char)sa->sa_family;
	req.rt.rtm_dst_len = (unsigned char)(alen * 8);
	struct rtattr *ra = (struct rtattr *)req.attr;
	ra->rta_type = RTA_DST;
	ra->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(ra), v6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
			       : (const void *)&((const struct sockaddr_in *)sa)->sin_addr, alen);
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (s < 0)
		return true;
	char buf[8192];
	ssize_t n = -1;
	if (send(s, &req, req.nh.nlmsg_len, 0) == (ssize_t)req.nh.nlmsg_len)
		n = recv(s, buf, sizeof buf, 0);
	close(s);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct rtmsg)))
		return true;
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	if (!NLMSG_OK(nh, (unsigned)n))
		return true;
	if (nh->nlmsg_type == NLMSG_ERROR) {
		/* no route at all: nothing to reach, and nothing local */
		const struct nlmsgerr *e = NLMSG_DATA(nh);
		return e->error != -ENETUNREACH && e->error != -EHOSTUNREACH;
	}
	return nh->nlmsg_type != RTM_NEWROUTE || ((struct rtmsg *)NLMSG_DATA(nh))->rtm_type == RTN_LOCAL;
}

static void reply(int fd, const char *status, const char *why)
{
	char buf[1200];
	int n = snprintf(buf, sizeof buf,
			 "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s\n", status,
			 strlen(why) + 1, why);
	(void)!util_write_all(fd, buf, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1));
}

static void small_buffers(int fd)
{
	int v = SOCK_BUF;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

/* A connected socket to host:port, within CONNECT_MS; with check, only to
 * addresses that are public by their number and are not the host's own.
 * -1 with err. */
static int dial(const struct server *sv, const char *host, const char *port, bool check, char *err, size_t errlen)
{
	struct addrinfo hint = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	int g = getaddrinfo(host, port, &hint, &res);
	if (g) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(g));
		return -1;
	}
	int fd = -1;
	snprintf(err, errlen, "%s has no address a sandbox may reach (loopback, private, link-local and this host's own are refused)", host);
	for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
		if (check && (!egress_addr_public(a->ai_addr) || own_address(sv, a->ai_addr) || local_route(a->ai_addr)))
			continue;
		int s = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (s < 0)
			continue;
		small_buffers(s);
		if (connect(s, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
			snprintf(err, errlen, "cannot connect to %s: %s", host, strerror(errno));
			close(s);
			continue;
		}
		struct pollfd pf = { .fd = s, .events = POLLOUT };
		int e = 0;
		socklen_t el = sizeof e;
		if (wait_fds(&pf, 1, CONNECT_MS) != 1 || getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
			snprintf(err, errlen, "cannot connect to %s: %s", host,
				 e ? strerror(e) : stopping ? "the run ended first" : "timed out");
			close(s);
			continue;
		}
		fd = s; /* left non-blocking: the tunnel's writes wait in wait_fds */
	}
	freeaddrinfo(res);
	return fd;
}

/* Read a head (up to the blank line) into buf; its length, or -1.  *more
 * is where what came after it starts (a client may send its TLS hello at
 * once), up to the returned total in *total. */
static ssize_t read_head(int fd, char *buf, size_t cap, size_t *total)
{
	size_t n = 0;
	while (n < cap - 1) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r <= 0)
			return -1;
		n += (size_t)r;
		buf[n] = 0;
		char *end = strstr(buf, "\r\n\r\n");
		if (end) {
			*total = n;
			return end + 4 - buf;
		}
	}
	return -1;
}

/* Write all of buf to a non-blocking socket, waiting (IDLE_MS at most
 * each time) where it is full: a peer that stops reading cannot hold us
 * past egress_stop's SIGTERM, which ends the wait. */
static int tunnel_write(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			if (wait_fds(&pf, 1, IDLE_MS) <= 0)
				return -1;
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* egress_rate: a run whose connections have moved total bytes may not
 * have done so before t0 + total / rate; wait until then (in waits that
 * SIGTERM ends).  False if we are stopping. */
static bool pace(const struct server *sv, uint64_t total)
{
	if (!sv->b.rate)
		return true;
	double due = sv->t0 + (double)total * 1000.0 / (double)sv->b.rate, left;
	while (!stopping && (left = due - util_now_ms()) > 0)
		wait_fds(NULL, 0, left > 1000 ? 1000 : (int)left + 1);
	return !stopping;
}

/* Has the run moved all the bytes egress_bytes lets it?  Then why says so
 * in cn. */
static bool spent(const struct server *sv, struct conn *cn, uint64_t total)
{
	if (total <= sv->b.bytes)
		return false;
	snprintf(cn->why, sizeof cn->why,
		 "the run reached its egress_bytes: %llu bytes both ways over all its connections (the configuration's "
		 "egress_bytes)",
		 (unsigned long long)sv->b.bytes);
	return true;
}

/* Pass n bytes read from one side (the sandbox's if out) on to fd, within
 * the run's egress_bytes (else the connection is cut: cn->cut, and why)
 * and egress_rate, and count them into cn.  -1 if it is cut, we are
 * stopping, or the write failed. */
static int pass(const struct server *sv, struct conn *cn, int fd, const void *buf, size_t n, bool out)
{
	uint64_t total = __atomic_add_fetch(sv->used, n, __ATOMIC_RELAXED);
	if (spent(sv, cn, total)) {
		/* not passed, but the count keeps it: the run has reached its
		 * bound, and what it begins after is refused */
		cn->cut = true;
		return -1;
	}
	if (!pace(sv, total))
		return -1;
	*(out ? &cn->sent : &cn->received) += n;
	return tunnel_write(fd, buf, n);
}

/* Copy both ways (the sandbox's side a, the host's b; both non-blocking)
 * until both ends are done, nothing moves for IDLE_MS, or we are
 * stopping; counting the bytes each way into cn.  With a_left (a plain
 * HTTP request's body still to come) at most that much is read from a,
 * and the server's end is the end: one request, one response. */
static void relay(const struct server *sv, int a, int b, struct conn *cn, uint64_t *a_left)
{
	int fds[2] = { a, b };
	bool open_[2] = { !a_left || *a_left > 0, true };
	char buf[65536];
	while ((open_[0] || open_[1]) && !stopping) {
		struct pollfd pf[2] = { { .fd = open_[0] ? a : -1, .events = POLLIN }, { .fd = open_[1] ? b : -1, .events = POLLIN } };
		if (wait_fds(pf, 2, IDLE_MS) <= 0)
			return;
		for (int i = 0; i < 2; i++) {
			if (!open_[i] || !pf[i].revents)
				continue;
			size_t want = sv->chunk < sizeof buf ? sv->chunk : sizeof buf;
			if (i == 0 && a_left && *a_left < want)
				want = (size_t)*a_left;
			ssize_t r = read(fds[i], buf, want);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0 || pass(sv, cn, fds[1 - i], buf, (size_t)r, i == 0) < 0) {
				if (cn->cut)
					return;
				open_[i] = false;
				shutdown(fds[1 - i], SHUT_WR);
				if (i == 1 && a_left)
					return;
			} else if (i == 0 && a_left && !(*a_left -= (size_t)r))
				open_[0] = false; /* the whole body: nothing more is read */
		}
	}
}

/* Through sbx-run's own proxy, which the operator chose: it decides what
 * the name resolves to. */
static int via_upstream(const struct server *sv, const char *host, int port, char *err, size_t errlen)
{
	int up = dial(sv, sv->https.host, sv->https.port, false, err, errlen);
	if (up < 0)
		return -1;
	/* (its answer read blocking, within HEAD_SECONDS; the tunnel after it
	 * non-blocking again) */
	int fl = fcntl(up, F_GETFL);
	fcntl(up, F_SETFL, fl & ~O_NONBLOCK);
	char req[1200], resp[HEAD_MAX];
	int n = snprintf(req, sizeof req, "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n%s%s%s\r\n", host, port, host, port,
			 sv->https.auth[0] ? "Proxy-Authorization: Basic " : "", sv->https.auth, sv->https.auth[0] ? "\r\n" : "");
	size_t total;
	alarm(HEAD_SECONDS);
	ssize_t h = util_write_all(up, req, (size_t)n) < 0 ? -1 : read_head(up, resp, sizeof resp, &total);
	alarm(0);
	if (h < 0 || strncmp(resp + strcspn(resp, " "), " 200", 4)) {
		snprintf(err, errlen, "the upstream proxy %s refused %s:%d: %.*s", sv->https.host, host, port,
			 (int)strcspn(resp, "\r\n"), h < 0 ? "no answer" : resp);
		close(up);
		return -1;
	}
	fcntl(up, F_SETFL, fl);
	return up;
}

/* Read the tunnel's first TLS record (the client may have sent part of it
 * with its head: hello[0, *hn)) and check its ClientHello's server name:
 * the host the CONNECT named, which was allowed; another name, served from
 * the same address, would be domain fronting.  Without a server name only
 * an address may be asked for.  False with why in cn (nothing went on). */
static bool hello_checked(int c, struct conn *cn, unsigned char *hello, size_t *hn)
{
	char sni[256];
	size_t need = 0;
	int s;
	alarm(HEAD_SECONDS);
	while ((s = egress_hello_sni(hello, *hn, sni, sizeof sni, &need)) < 0) {
		size_t want = need ? need : 5;
		const char *bad = *hn >= 5 && !need ? "what came through the tunnel is not TLS"
				  : need > 5 + 16384   ? "a TLS record longer than TLS allows"
				  : *hn >= want       ? "a TLS ClientHello this proxy does not pass (malformed, an extension "
							"twice, or an encrypted server name)"
						      : NULL;
		ssize_t r = bad ? 0 : read(c, hello + *hn, want - *hn);
		if (bad || r <= 0) {
			alarm(0);
			snprintf(cn->why, sizeof cn->why, "%s", bad ? bad : "no TLS ClientHello came");
			return false;
		}
		*hn += (size_t)r;
	}
	alarm(0);
	struct in_addr a;
	if (s == 0 && inet_pton(AF_INET, cn->host, &a) == 1)
		return true;
	if (s == 0)
		snprintf(cn->why, sizeof cn->why, "the TLS ClientHello names no server: %s must be named", cn->host);
	else if (strcasecmp(sni, cn->host)) {
		/* the sandbox's bytes, shown as printable ASCII only */
		for (char *q = sni; *q; q++)
			if (*q < 0x21 || *q > 0x7e)
				*q = '?';
		snprintf(cn->why, sizeof cn->why, "the TLS ClientHello names %.255s, not %s, the host allowed", sni, cn->host);
	}
	return s == 1 && !strcasecmp(sni, cn->host);
}

/* A tunnel to a port other than 443 (one the operator listed): wait for
 * the client's first byte into hello (*hn then 1), passing on what the
 * server says first meanwhile (SSH's banner comes from the server).  One
 * byte only: if it starts a TLS record, hello_checked reads that record
 * exactly.  False if either side ended first, or we are stopping. */
static bool first_byte(const struct server *sv, int c, int up, struct conn *cn, unsigned char *hello, size_t *hn)
{
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
	char buf[16384];
	bool got = false;
	while (!got && !stopping) {
		struct pollfd pf[2] = { { .fd = c, .events = POLLIN }, { .fd = up, .events = POLLIN } };
		if (wait_fds(pf, 2, IDLE_MS) <= 0)
			break;
		if (pf[1].revents) {
			ssize_t r = read(up, buf, sv->chunk < sizeof buf ? sv->chunk : sizeof buf);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) || (r > 0 && pass(sv, cn, c, buf, (size_t)r, false) < 0))
				break;
		}
		if (pf[0].revents) {
			ssize_t r = read(c, hello, 1);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
				break;
			if (r > 0) {
				*hn = (size_t)r;
				got = true;
			}
		}
	}
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK);
	return got;
}

/* Refuse the connection with status and why (which its record keeps
 * too), and end. */
static _Noreturn void refuse(const struct server *sv, int c, struct conn *cn, const char *status, const char *why)
{
	char msg[sizeof cn->why + 8];
	snprintf(msg, sizeof msg, "sbx: %s", why);
	reply(c, status, msg);
	if (why != cn->why)
		snprintf(cn->why, sizeof cn->why, "%s", why);
	record(sv, cn);
}

/* ... because the allow-list has no pattern for cn's host and port: what
 * to do, for the person or agent who reads it. */
static _Noreturn void not_listed(const struct server *sv, int c, struct conn *cn)
{
	size_t o = (size_t)snprintf(cn->why, sizeof cn->why, "%s:%d is not in this sandbox's network allow-list (", cn->host,
				    cn->port);
	for (char *const *h = sv->hosts; h && *h && o < sizeof cn->why; h++)
		o += (size_t)snprintf(cn->why + o, sizeof cn->why - o, "%s%s", h == sv->hosts ? "" : ", ", *h);
	static const char tail[] = "): ask for it in the request's \"network\", within the configuration's";
	if (o + sizeof tail > sizeof cn->why)
		o = sizeof cn->why - sizeof tail - 4 + snprintf(cn->why + sizeof cn->why - sizeof tail - 4, 4, "...");
	snprintf(cn->why + o, sizeof cn->why - o, "%s", tail);
	refuse(sv, c, cn, "403 Forbidden", cn->why);
}

/* A plain HTTP request (head: hl bytes of the total read), forwarded as
 * egress.h says. */
static _Noreturn void plain_http(const struct server *sv, int c, struct conn *cn, char *head, size_t hl, size_t total)
{
	struct egress_http h;
	bool ok = egress_http_head(head, hl, &h, cn->why, sizeof cn->why);
	snprintf(cn->host, sizeof cn->host, "%s", h.host);
	cn->port = h.host[0] ? h.port : 0;
	if (!ok)
		refuse(sv, c, cn, "400 Bad Request", cn->why);
	if (!hostpat_allows(sv->hosts, h.host, h.port))
		not_listed(sv, c, cn);
	/* Port 443 is HTTPS (a pattern without a port means it): what goes
	 * there goes through CONNECT, whose ClientHello is held to the name
	 * allowed.  Plain bytes to it would skip that check. */
	if (h.port == HOSTPAT_PORT)
		refuse(sv, c, cn, "403 Forbidden",
		       "port 443 is HTTPS: an https:// URL goes through a CONNECT tunnel (https_proxy), not as a plain request");
	if (!egress_http_host_ok(&h)) {
		for (char *q = h.host_header; *q; q++)
			if (*q < 0x21 || *q > 0x7e)
				*q = '?';
		snprintf(cn->why, sizeof cn->why, "the Host header names %s, not %s:%d, the host the URL names", h.host_header,
			 h.host, h.port);
		refuse(sv, c, cn, "403 Forbidden", cn->why);
	}
	if (h.flags & EGRESS_HTTP_UPGRADE)
		refuse(sv, c, cn, "403 Forbidden",
		       "Upgrade (WebSocket) over plain HTTP is not passed: use wss:// (TLS, through CONNECT)");
	if (h.flags & EGRESS_HTTP_CHUNKED)
		refuse(sv, c, cn, "411 Length Required",
		       "a body with Transfer-Encoding (chunked) is not passed over plain HTTP: send its Content-Length");
	if (spent(sv, cn, __atomic_load_n(sv->used, __ATOMIC_RELAXED) + 1))
		refuse(sv, c, cn, "403 Forbidden", cn->why);
	cn->allowed = true;
	const struct upstream *u = &sv->http;
	char port[8];
	snprintf(port, sizeof port, "%d", h.port);
	int up = -1;
	if (u->bad)
		snprintf(cn->why, sizeof cn->why, "sbx-run's HTTP_PROXY is not an http:// proxy it can use, and nothing goes direct");
	else
		up = u->host[0] ? dial(sv, u->host, u->port, false, cn->why, sizeof cn->why)
				: dial(sv, h.host, port, true, cn->why, sizeof cn->why);
	if (up < 0)
		refuse(sv, c, cn, "502 Bad Gateway", cn->why);
	cn->why[0] = 0;
	static char fwd[HEAD_MAX + 1024];
	size_t fl = egress_http_forward(head, hl, &h, u->host[0] ? u->auth : NULL, fwd, sizeof fwd);
	if (!fl)
		refuse(sv, c, cn, "431 Request Header Fields Too Large", "the request's head is too long to forward");
	/* the body: what came with the head, then the rest from the client */
	uint64_t left = h.content_length > 0 ? (uint64_t)h.content_length : 0;
	size_t early = total - hl < left ? total - hl : (size_t)left;
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
	if (pass(sv, cn, up, fwd, fl, true) == 0 && pass(sv, cn, up, head + hl, early, true) == 0) {
		left -= early;
		relay(sv, c, up, cn, &left);
	}
	record(sv, cn);
}

static _Noreturn void handle(const struct server *sv, int c)
{
	struct conn cn = { .t0 = util_now_ms() };
	char head[HEAD_MAX];
	size_t total = 0;
	alarm(HEAD_SECONDS);
	ssize_t hl = read_head(c, head, sizeof head, &total);
	alarm(0);
	if (hl < 0) {
		snprintf(cn.why, sizeof cn.why, "no request came");
		record(sv, &cn);
	}
	if (strncmp(head, "CONNECT ", 8))
		plain_http(sv, c, &cn, head, (size_t)hl, total);
	/* CONNECT host:port HTTP/1.x */
	char port[8];
	int nl = 0, pl = 0; /* nl: unused, keeps the two %n apart */
	if (sscanf(head, "CONNECT %255[A-Za-z0-9.-]%n:%7[0-9]%n", cn.host, &nl, port, &pl) != 2 || pl == 0 ||
	    strncmp(head + pl, " HTTP/1.", 8)) {
		cn.host[0] = 0;
		refuse(sv, c, &cn, "400 Bad Request", "CONNECT takes a host name or IPv4 address and a port");
	}
	int64_t pn;
	if (!util_parse_i64(port, 1, 65535, &pn))
		refuse(sv, c, &cn, "400 Bad Request", "CONNECT's port must be a number from 1 to 65535");
	cn.port = (int)pn;
	if (!hostpat_allows(sv->hosts, cn.host, cn.port))
		not_listed(sv, c, &cn);
	if (cn.port == 80)
		refuse(sv, c, &cn, "403 Forbidden",
		       "CONNECT to port 80 is not passed: plain HTTP goes as an ordinary proxy request (http_proxy), where the "
		       "proxy holds its Host header to the name allowed");
	if (spent(sv, &cn, __atomic_load_n(sv->used, __ATOMIC_RELAXED) + 1))
		refuse(sv, c, &cn, "403 Forbidden", cn.why);
	cn.allowed = true;
	int up;
	char ports[8];
	snprintf(ports, sizeof ports, "%d", cn.port);
	if (sv->https.bad) {
		snprintf(cn.why, sizeof cn.why, "sbx-run's HTTPS_PROXY is not an http:// proxy it can use, and nothing goes direct");
		up = -1;
	} else
		up = sv->https.host[0] ? via_upstream(sv, cn.host, cn.port, cn.why, sizeof cn.why)
				       : dial(sv, cn.host, ports, true, cn.why, sizeof cn.why);
	if (up < 0)
		refuse(sv, c, &cn, "502 Bad Gateway", cn.why);
	cn.why[0] = 0;
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	if (util_write_all(c, ok, sizeof ok - 1) < 0)
		record(sv, &cn);
	/* what the client sent with its head, and its ClientHello */
	unsigned char hello[5 + 16384];
	size_t hn = total - (size_t)hl;
	memcpy(hello, head + hl, hn);
	/* Another port than 443 is the operator's choice of protocol (an
	 * SSH, a database): its bytes pass as they are, unless they start a
	 * TLS handshake record, whose server name is then held to the host as
	 * on 443.  (A TLS begun later inside another protocol, as STARTTLS
	 * does, is not seen: egress.h.) */
	if (cn.port != 443 && !hn && !first_byte(sv, c, up, &cn, hello, &hn))
		record(sv, &cn);
	if ((cn.port == 443 || hello[0] == 22) && !hello_checked(c, &cn, hello, &hn)) {
		cn.allowed = false;
		record(sv, &cn);
	}
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
	if (pass(sv, &cn, up, hello, hn, true) == 0)
		relay(sv, c, up, &cn, NULL);
	record(sv, &cn);
}

/* sbx-run's own proxy, from its environment variable upper (or lower):
 * "http://[user:pass@]host:port[/]". */
static void upstream(struct upstream *up, const char *upper, const char *lower)
{
	const char *u = getenv(upper);
	if (!u || !*u)
		u = getenv(lower);
	if (!u || !*u)
		return;
	if (strncmp(u, "http://", 7)) {
		up->bad = true;
		return;
	}
	u += 7;
	const char *at = strchr(u, '@');
	if (at) {
		size_t n = (size_t)(at - u), bl;
		char *b = n < 256 ? b64_encode(u, n, &bl) : NULL;
		if (!b || bl >= sizeof up->auth) {
			up->bad = true;
			free(b);
			return;
		}
		memcpy(up->auth, b, bl + 1);
		free(b);
		u = at + 1;
	}
	if (sscanf(u, "%255[A-Za-z0-9.-]:%7[0-9]", up->host, up->port) != 2) {
		up->host[0] = 0;
		up->bad = true;
	}
}

_Noreturn void egress_serve(int lfd, int log_fd, char *const *hosts, const struct egress_bounds *b)
{
	prctl(PR_SET_NAME, "sbx-egress", 0, 0, 0);
	signal(SIGPIPE, SIG_IGN); /* a closed tunnel is EPIPE, not the end of us */
	/* without SA_RESTART: a wait returns EINTR, and we end (SIGALRM: a
	 * request's head or an upstream's answer that takes too long) */
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &waiting_mask);
	sigdelset(&waiting_mask, SIGTERM);
	struct server sv = { .hosts = hosts, .log = log_fd, .b = *b, .t0 = util_now_ms(), .chunk = 65536 };
	/* egress_rate: chunks of an eighth of a second's bytes, so that the
	 * pace is even rather than a burst and a long wait */
	if (b->rate && b->rate / 8 < sv.chunk)
		sv.chunk = b->rate / 8 > 512 ? (size_t)(b->rate / 8) : 512;
	/* the run's byte count, shared with every connection's child */
	sv.used = mmap(NULL, sizeof *sv.used, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sv.used == MAP_FAILED || getifaddrs(&sv.own) < 0)
		_exit(1); /* without them no target can be checked */
	upstream(&sv.https, "HTTPS_PROXY", "https_proxy");
	upstream(&sv.http, "HTTP_PROXY", "http_proxy");
	unsigned live = 0, served = 0, busy = 0, unforked = 0;
	pid_t server = getpid();
	while (!stopping) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			live--;
		struct pollfd pf = { .fd = lfd, .events = POLLIN };
		if (wait_fds(&pf, 1, 1000) <= 0)
			continue;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		/* Refused without a record of their own (the records stay
		 * bounded), counted for the one at the end. */
		if (live >= EGRESS_MAX_CONNS || served >= sv.b.conns) {
			char msg[200];
			if (live >= EGRESS_MAX_CONNS)
				snprintf(msg, sizeof msg, "sbx: more than %d connections from this sandbox at once: wait for one to end",
					 EGRESS_MAX_CONNS);
			else
				snprintf(msg, sizeof msg, "sbx: this run has made the %llu connections it may (the configuration's "
					 "egress_connections)", (unsigned long long)sv.b.conns);
			reply(c, "503 Service Unavailable", msg);
			close(c);
			busy += live >= EGRESS_MAX_CONNS;
			served += live < EGRESS_MAX_CONNS;
			continue;
		}
		served++;
		pid_t p = fork();
		if (p == 0) {
			/* With the server, its connections go too. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != server)
				_exit(0);
			close(lfd);
			small_buffers(c);
			handle(&sv, c);
		}
		if (p > 0)
			live++;
		else {
			unforked++;
			reply(c, "503 Service Unavailable", "sbx: the proxy cannot take another connection now");
		}
		close(c);
	}
	/* Stopping: each connection's child records itself and ends (one
	 * forked after the supervisor's signal reached the group is told
	 * again), then the count of those refused unrecorded. */
	kill(0, SIGTERM);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	unsigned over = served > sv.b.conns ? served - (unsigned)sv.b.conns : 0;
	if (over || busy || unforked) {
		struct conn cn = { .t0 = util_now_ms() };
		snprintf(cn.why, sizeof cn.why,
			 "connections refused without a record of their own: %u past the %llu a run may make "
			 "(egress_connections), %u past %d at once, %u the proxy could not take",
			 over, (unsigned long long)sv.b.conns, busy, EGRESS_MAX_CONNS, unforked);
		put_record(&sv, &cn);
	}
	_exit(0);
}

/* ---- the supervisor's side ------------------------------------------------ */

/* The records are read as they come: a full pipe would stop the proxy's
 * children, and with them its connections.  At most EGRESS_LOG_MAX bytes
 * are kept (the records are bounded below it: egress_connections at most
 * 4096 of them, each well under 2 KiB). */
#define EGRESS_LOG_MAX (8u << 20)

/* Read what the pipe holds now; false at its end (or an error). */
static bool log_read(struct egress *e)
{
	for (;;) {
		if (e->cap - e->len < 65536 && e->cap < EGRESS_LOG_MAX + 65536) {
			e->cap = e->cap ? e->cap * 2 : 65536;
			e->buf = util_xrealloc(e->buf, e->cap);
		}
		char sink[4096];
		bool keep = e->cap - e->len >= 4096 && e->len < EGRESS_LOG_MAX;
		ssize_t n = keep ? read(e->log, e->buf + e->len, e->cap - e->len) : read(e->log, sink, sizeof sink);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		if (keep)
			e->len += (size_t)n;
	}
}

static void on_log(struct loop *l, int fd, short rev, void *arg)
{
	(void)rev;
	if (!log_read(arg))
		loop_unwatch(l, fd);
}

bool egress_start(struct egress *e, struct loop *l, int lfd, char *const *hosts, const struct limits *lim, int uid, char *err,
		  size_t errlen)
{
	*e = (struct egress){ .pid = 0, .log = -1 };
	char *helper = util_libexec("sbx-egress");
	if (!helper) {
		close(lfd);
		snprintf(err, errlen, "cannot start the sandbox's proxy: libexec/sbx/sbx-egress is missing (make builds it)");
		return false;
	}
	int logp[2];
	if (pipe2(logp, O_CLOEXEC) < 0) {
		int en = errno;
		close(lfd);
		free(helper);
		snprintf(err, errlen, "cannot start the sandbox's proxy: pipe: %s", strerror(en));
		return false;
	}
	size_t n = 0;
	while (hosts && hosts[n])
		n++;
	char **argv = util_xalloc((n + 9) * sizeof *argv);
	char uids[16], parent[16], bytes[24], conns[24], rate[24];
	snprintf(uids, sizeof uids, "%d", uid);
	snprintf(parent, sizeof parent, "%d", (int)getpid());
	snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)lim->egress_bytes);
	snprintf(conns, sizeof conns, "%llu", (unsigned long long)lim->egress_conns);
	snprintf(rate, sizeof rate, "%llu", (unsigned long long)lim->egress_rate);
	size_t k = 0;
	argv[k++] = "sbx-egress";
	argv[k++] = uids;
	argv[k++] = parent;
	argv[k++] = bytes;
	argv[k++] = conns;
	argv[k++] = rate;
	for (size_t i = 0; i < n; i++)
		argv[k++] = hosts[i];
	argv[k] = NULL;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	pid_t pid = devnull < 0 ? -1 : fork();
	if (pid == 0) {
		/* Its own process group (egress_stop signals it whole), the
		 * socket as fd 3, the records' pipe as fd 4 and /dev/null as
		 * 0-2: nothing else of ours. */
		setpgid(0, 0);
		int keep[3] = { lfd, logp[1], devnull };
		if (proc_child_prepare((int)strtol(parent, NULL, 10), SIGKILL) < 0 || proc_keep_fds(keep, 3) < 0 ||
		    dup2(keep[2], 0) < 0 || dup2(keep[2], 1) < 0 || dup2(keep[2], 2) < 0 || fcntl(keep[0], F_SETFD, 0) < 0 ||
		    fcntl(keep[1], F_SETFD, 0) < 0)
			_exit(126);
		execv(helper, argv);
		_exit(127);
	}
	int en = errno;
	if (devnull >= 0)
		close(devnull);
	close(lfd);
	close(logp[1]);
	free(argv);
	free(helper);
	if (pid < 0) {
		close(logp[0]);
		snprintf(err, errlen, "cannot start the sandbox's proxy: %s", strerror(en));
		return false;
	}
	/* (the child does it too: whichever comes first, egress_stop's signal
	 * reaches the group) */
	setpgid(pid, pid);
	fcntl(logp[0], F_SETFL, O_NONBLOCK);
	*e = (struct egress){ .pid = pid, .log = logp[0], .loop = l };
	loop_watch(l, e->log, POLLIN, on_log, e);
	return true;
}

/* The records in text (one JSON object a line), as an array: a line that
 * is not an object (the proxy killed mid-write cannot make one: a line is
 * one write) is left out. */
static jv parse_records(const char *text, size_t len)
{
	jv out = jv_array();
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		jv v = jv_parse_sized(p, (int)(nl - p));
		if (jv_get_kind(v) == JV_KIND_OBJECT)
			out = jv_array_append(out, v);
		else
			jv_free(v);
		p = nl + 1;
	}
	return out;
}

/* Read the records until the pipe's end (every writer gone) or the
 * monotonic deadline (ms); false if the deadline came first. */
static bool drain(struct egress *e, double deadline)
{
	for (;;) {
		double left = deadline - util_now_ms();
		struct pollfd pf = { .fd = e->log, .events = POLLIN };
		int r = left > 0 ? poll(&pf, 1, (int)left + 1) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		if (!log_read(e))
			return true;
	}
}

jv egress_stop(struct egress *e)
{
	if (e->pid <= 0)
		return jv_null();
	loop_unwatch(e->loop, e->log);
	/* Ask first: each open connection records itself (egress.h).  What
	 * has not ended by EGRESS_STOP_MS is killed, and its record lost. */
	kill(-e->pid, SIGTERM);
	if (!drain(e, util_now_ms() + EGRESS_STOP_MS)) {
		kill(-e->pid, SIGKILL);
		kill(e->pid, SIGKILL);
		drain(e, util_now_ms() + EGRESS_STOP_MS);
	}
	while (waitpid(e->pid, NULL, 0) < 0 && errno == EINTR)
		;
	close(e->log);
	jv out = parse_records(e->buf ? e->buf : "", e->len);
	free(e->buf);
	*e = (struct egress){ .pid = 0, .log = -1 };
	return out;
}
