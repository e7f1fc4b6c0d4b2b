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
 * name onto the host).  The package manager finds it through HTTPS_PROXY
 * and friends.  Where sbx-run itself must go through a proxy (its own
 * HTTPS_PROXY, http:// only), the allowed CONNECTs are passed on to it.
 *
 * The proxy of one install is a process of its own: egress_start forks and
 * execs libexec/sbx/sbx-egress with the listening socket as fd 3 and
 * nothing else of the supervisor (no copy of other jobs' code or input),
 * which drops to an unprivileged uid, serves each connection from a child
 * (at most EGRESS_MAX_CONNS at once, small socket buffers), dies with the
 * supervisor, and is killed with its children by egress_stop when the
 * stage ends.
 */
#ifndef SBX_EGRESS_H
#define SBX_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define EGRESS_PORT 3128
#define EGRESS_URL "http://127.0.0.1:3128"
#define EGRESS_MAX_CONNS 32

/* Start the server for lfd (a listening socket; taken) and hosts
 * (NULL-terminated; "*.example.org" also matches its subdomains), running
 * as uid (>= 0, when we are root) or as ourselves (-1).  Its pid (the
 * leader of its process group), or -1 with err. */
pid_t egress_start(int lfd, char *const *hosts, int uid, char *err, size_t errlen);
/* Kill the server and its connections, and reap it. */
void egress_stop(pid_t pid);

/* The server, in sbx-egress: serve lfd until killed. */
_Noreturn void egress_serve(int lfd, char *const *hosts);

/* Is host (a name, no port) one of hosts? */
bool egress_host_allowed(char *const *hosts, const char *host);
/* May the proxy connect to this address (struct sockaddr_in or _in6), as
 * far as its number says?  False for loopback, unspecified, private,
 * link-local, shared (CGNAT), reserved, multicast and broadcast addresses,
 * and for the IPv4 ones embedded in IPv6 (mapped, compatible, NAT64,
 * 6to4).  The server also refuses the host's own (egress.c). */
bool egress_addr_public(const void *sa);

#endif
