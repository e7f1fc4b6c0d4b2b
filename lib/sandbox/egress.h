/* egress: the only way out of an install stage's sandbox.
 *
 * An install (install_packages, run_code's dependencies) runs the package
 * manager, and with it whatever code the packages bring (setup.py, npm
 * lifecycle scripts), so its sandbox gets no network of its own: only its
 * loopback, on which 127.0.0.1:EGRESS_PORT is a proxy served from outside.
 * The proxy takes HTTP CONNECT to port 443 of the hosts the configuration
 * lists for the language (its `registries`) and nothing else: no other
 * host or port, no plain HTTP, and no address that is the host's own (a
 * local route, or an interface's), loopback, private, link-local, shared
 * or reserved, whatever a name resolves to (so no rebinding of an allowed
 * name onto the host).  What goes through the tunnel must be TLS whose
 * ClientHello names the host that was allowed (its SNI): another name,
 * served from the same address (a CDN's), would be domain fronting, a way
 * to anywhere through an allowed name.  The package manager finds it through HTTPS_PROXY
 * and friends.  Where sbx-run itself must go through a proxy (its own
 * HTTPS_PROXY, http:// only), the allowed CONNECTs are passed on to it.
 *
 * The proxy of one install is a process of its own: egress_start forks and
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
 * them as "egress".  After EGRESS_MAX_RECORDS connections a run's further
 * ones are refused; those refused as one too many at once are counted; a
 * record at the end says how many of each went unrecorded.
 */
#ifndef SBX_EGRESS_H
#define SBX_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define EGRESS_PORT 3128
#define EGRESS_PORT_STR "3128"
#define EGRESS_URL "http://127.0.0.1:" EGRESS_PORT_STR
#define EGRESS_MAX_CONNS 32
#define EGRESS_MAX_RECORDS 512
#define EGRESS_STOP_MS 300

#include <jv.h>

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

/* Start the server for lfd (a listening socket; taken) and hosts
 * (NULL-terminated; "*.example.org" also matches its subdomains), running
 * as uid (>= 0, when we are root) or as ourselves (-1), into *e (its pid
 * the leader of its process group).  False with err, *e then none. */
bool egress_start(struct egress *e, struct loop *l, int lfd, char *const *hosts, int uid, char *err, size_t errlen);
/* Stop the server and its connections, reap it, and return its records
 * (the caller's): an array of {"host", "port", "allowed", "why"?,
 * "bytes_sent", "bytes_received", "duration_ms"}, or jv_null() if *e was
 * none.  *e is none after. */
jv egress_stop(struct egress *e);

/* The server, in sbx-egress: serve lfd until stopped, writing a record
 * of each connection to log_fd. */
_Noreturn void egress_serve(int lfd, int log_fd, char *const *hosts);

/* Is host (a name, no port) one of hosts? */
bool egress_host_allowed(char *const *hosts, const char *host);
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

#endif
