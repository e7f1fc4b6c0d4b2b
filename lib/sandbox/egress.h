/* egress: the only way out of a sandbox with an allow-list.
 *
 * An install (install_packages, run_code's dependencies) runs the package
 * manager, and with it whatever code the packages bring (setup.py, npm
 * lifecycle scripts); a run may be given a "network" allow-list.  Such a
 * sandbox gets no network of its own: only its loopback, on which
 * 127.0.0.1:EGRESS_PORT is a proxy served from outside, which its programs
 * find through HTTPS_PROXY, HTTP_PROXY and friends.  The proxy is given a
 * list of host patterns (hostpat.h: "pypi.org", "*.example.org", an IPv4
 * address, each with an optional port, 443 without one: an install's
 * `registries`, a run's `network`) and lets through what hostpat_allows:
 *
 *  - CONNECT host:port (a tunnel).  To port 443 the tunnel must carry TLS
 *    whose ClientHello names the host that was allowed (its SNI): another
 *    name, served from the same address (a CDN's), would be domain
 *    fronting, a way to anywhere through an allowed name.  To port 80 it
 *    is refused: plain HTTP goes as an ordinary proxy request (below),
 *    where the proxy can hold its Host header to the name allowed.  To any
 *    other port the operator listed explicitly (an SSH or database port),
 *    the tunnel carries what that protocol is: if the client's first byte
 *    starts a TLS handshake record (0x16), its ClientHello is checked as
 *    for 443; otherwise the bytes pass as they are, the protocol's own,
 *    which the proxy cannot read (nor a TLS started later inside it, as
 *    STARTTLS does): listing such a port trusts its host with anything.
 *
 *  - A plain HTTP request in absolute form (METHOD http://host[:port]/path
 *    HTTP/1.x, port 80 by default, never 443, which is HTTPS's and goes
 *    through CONNECT), one per connection: its Host header,
 *    if any, must name the same host (and port, if it gives one); it goes
 *    to the server in origin form, without hop-by-hop headers, with "Host"
 *    if it had none and "Connection: close", then exactly Content-Length
 *    bytes of body, and the response comes back until the server closes.
 *    Not passed: Transfer-Encoding (chunked uploads), Upgrade (WebSocket:
 *    use wss://), other schemes, user information, IPv6 literals, and any
 *    head a server could read otherwise than this proxy does (a bare CR or
 *    LF, a folded line, two Host or Content-Length headers): egress_http_head.
 *
 * Nothing else goes: no address that is the host's own (a local route, or
 * an interface's), loopback, private, link-local, shared or reserved,
 * whatever a name resolves to (so no rebinding of an allowed name onto the
 * host).  A refusal says, to the program and in its record, what to ask
 * for.  Where sbx-run itself must go through a proxy (its own HTTPS_PROXY,
 * and HTTP_PROXY for plain HTTP, http:// only), the allowed connections are
 * passed on to it.
 *
 * The proxy of one sandbox is a process of its own: egress_start forks and
 * execs libexec/sbx/sbx-egress with the listening socket as fd 3, the
 * write end of a pipe as fd 4 and nothing else of the supervisor (no copy
 * of other jobs' code or input), which drops to an unprivileged uid,
 * serves each connection from a child (at most EGRESS_MAX_CONNS at once,
 * small socket buffers), dies with the supervisor, and is stopped with its
 * children by egress_stop when the stage ends.
 *
 * Every connection is accounted: its child writes one JSON line to fd 4
 * when it ends (the host and port asked for, whether it was allowed and
 * why not, the bytes each way, how long it lasted), one write() of less
 * than PIPE_BUF, so that lines of concurrent children never mix.  The
 * supervisor reads them as they come, from its event loop, so that the
 * pipe never fills.  egress_stop tells the connections still open to end
 * (SIGTERM: each writes its line), reads the last lines while they do, for
 * at most EGRESS_STOP_MS, then kills what is left: the stage's result has
 * them as "egress".
 *
 * A run's limits bound what its connections move (limit.h): after
 * egress_connections connections its further ones are refused, and so
 * are those one too many at once; a record at the end says how many of
 * each went unrecorded (so the records stay bounded).  egress_bytes bounds
 * the bytes both ways over all of them: the children add to one counter
 * in a page they share, and a connection that would pass the bound is cut
 * there, its record saying so.  egress_rate (bytes per second, 0: none)
 * paces them: a chunk passes once the run's total is within its rate since
 * the proxy started, each waiting in a wait SIGTERM ends.
 */
#ifndef SBX_EGRESS_H
#define SBX_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define EGRESS_PORT 3128
#define EGRESS_MAX_CONNS 32
#define EGRESS_STOP_MS 300

#include <jv.h>

#include "limit.h"
#include "loop.h"

/* A running proxy: pid 0 when there is none (the rest is then unused).
 * Its place must not change while it runs: the loop holds it. */
struct egress {
	pid_t pid;
	int log;           /* the read end of its records' pipe, watched by loop */
	struct loop *loop;
	char *buf;         /* the records read so far */
	size_t len, cap;
};

/* Start the server for lfd (a listening socket; taken), hosts
 * (NULL-terminated host patterns, hostpat.h) and lim (its egress_ rows),
 * running
 * as uid (>= 0, when we are root) or as ourselves (-1), into *e (its pid
 * the leader of its process group).  False with err, *e then none. */
bool egress_start(struct egress *e, struct loop *l, int lfd, char *const *hosts, const struct limits *lim, int uid, char *err,
		  size_t errlen);
/* Stop the server and its connections, reap it, and return its records
 * (the caller's): an array of {"host", "port", "allowed", "why"?,
 * "bytes_sent", "bytes_received", "duration_ms"}, or jv_null() if *e was
 * none.  *e is none after. */
jv egress_stop(struct egress *e);

/* What a run's connections may move, from its limits (limit.h). */
struct egress_bounds {
	uint64_t bytes; /* both ways, over all of them */
	uint64_t conns; /* connections it may make */
	uint64_t rate;  /* bytes per second over all of them; 0: no bound */
};
/* The server, in sbx-egress: serve lfd until stopped, writing a record
 * of each connection to log_fd. */
_Noreturn void egress_serve(int lfd, int log_fd, char *const *hosts, const struct egress_bounds *b);

/* The server name (SNI) of a TLS ClientHello at the start of b (n bytes:
 * its first record): 1 with it in name (NUL-terminated, as sent), 0 if it
 * names none, -1 if b is not a whole ClientHello record alone in it, is
 * malformed, repeats an extension or hides its server name (Encrypted
 * Client Hello) (*need, if not NULL, then says how many bytes the record
 * takes, when its header says). */
int egress_hello_sni(const unsigned char *b, size_t n, char *name, size_t len, size_t *need);
/* May the proxy connect to this address (struct sockaddr_in or _in6), as
 * far as its number says?  False for loopback, unspecified, private,
 * link-local, shared (CGNAT), reserved, multicast and broadcast addresses,
 * and for the IPv4 ones embedded in IPv6 (mapped, compatible, NAT64,
 * 6to4).  The server also refuses the host's own (egress.c). */
bool egress_addr_public(const void *sa);

/* A plain HTTP request's head, as egress_http_head finds it. */
#define EGRESS_HTTP_HOST 1    /* it has a Host header: host_header */
#define EGRESS_HTTP_CHUNKED 2 /* Transfer-Encoding: a body this proxy does not pass */
#define EGRESS_HTTP_UPGRADE 4 /* Upgrade: another protocol (WebSocket) */
#define EGRESS_HTTP_BODY_MAX ((int64_t)1 << 50) /* a Content-Length past it is refused */
struct egress_http {
	char method[32];
	char host[254];         /* the URL's host: a name or an IPv4 address */
	int port;               /* the URL's port; 80 when it gives none */
	bool port_given;
	size_t path, path_len;  /* the URL's path and query, at buf + path ("" for "/") */
	char host_header[262];  /* the Host header's value, without spaces around it */
	int64_t content_length; /* -1: none */
	unsigned flags;
};
/* Parse a request's head (buf, len bytes, up to and with the blank line
 * that ends it) in absolute form: METHOD http://host[:port][/path]
 * HTTP/1.x, then header lines.  False with why (for the sandbox's program)
 * when it is not one this proxy passes: another form or scheme, user
 * information, an IPv6 literal, a bad port, a bare CR or LF, a control
 * byte, a folded line, two Host or Content-Length headers, a length that
 * is not digits or is past EGRESS_HTTP_BODY_MAX.  What is parsed before a
 * refusal (host, port) stays in *h. */
bool egress_http_head(const char *buf, size_t len, struct egress_http *h, char *why, size_t whylen);
/* Does the Host header, if any, name the URL's host (and port, if it has
 * one), regardless of case? */
bool egress_http_host_ok(const struct egress_http *h);
/* The head to send for it (h from egress_http_head of buf) into out: the
 * origin form (METHOD /path HTTP/1.1), or with up_auth (not NULL: going to
 * an upstream proxy, "" without credentials) the absolute form and its
 * Proxy-Authorization; its headers without hop-by-hop ones (Connection,
 * Keep-Alive, TE, Upgrade, Transfer-Encoding, Proxy-*), with Host if it had
 * none and "Connection: close".  Its length, or 0 if it does not fit in
 * cap. */
size_t egress_http_forward(const char *buf, size_t len, const struct egress_http *h, const char *up_auth, char *out,
			   size_t cap);

#endif
