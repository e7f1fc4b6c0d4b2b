/* filter: the seccomp system-call filter every sandboxed program runs under.
 *
 * The policy (filter_policy.c) is compiled to classic BPF with libseccomp
 * at build time (filter_gen.c, build-aux/gen-filter.c) with a placeholder
 * errno; at run time filter_build copies that program and puts the
 * configured errno in, so the tools neither link nor run libseccomp (which
 * cost half a millisecond per process), and a sandbox child loads the ready
 * program with one prctl (no allocation after clone).
 *
 * The policy is a deny list on top of namespaces and dropped capabilities: it removes kernel attack
 * surface the program has no business reaching even unprivileged (ptrace,
 * bpf, io_uring, userfaultfd, keyrings, perf, new namespaces, mounts, exotic
 * socket families, TIOCSTI) and kills anything calling through a foreign
 * ABI (i386, x32).  Denied calls fail with the configured errno (EPERM by
 * default, like Docker's profile); clone3 fails with ENOSYS so that libc
 * falls back to clone, whose flags the filter can inspect.
 */
#ifndef SBX_FILTER_H
#define SBX_FILTER_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>

#include <jv.h>

/* The policy's tables (filter_policy.c). */
#define FILTER_NS_FLAGS 7
extern const char *const filter_denied[];          /* NULL-terminated */
extern const unsigned long filter_ns_flags[FILTER_NS_FLAGS];
/* May a program open sockets of this address family? */
bool filter_family_allowed(int fam);
/* Of the inet families, the socket types (the low 4 bits of socket()'s
 * type) and protocols denied; socketpair is allowed for AF_UNIX only. */
#define FILTER_INET_FAMILIES 2
#define FILTER_INET_TYPES 4
#define FILTER_INET_PROTOS 5
extern const int filter_inet_families[FILTER_INET_FAMILIES];
extern const int filter_inet_types[FILTER_INET_TYPES];
extern const int filter_inet_protos[FILTER_INET_PROTOS];
/* ioctl requests denied (their low 32 bits: the request is an int). */
#define FILTER_IOCTLS 10
extern const unsigned filter_ioctls[FILTER_IOCTLS];

/* The BPF program for deny_errno (1..4095); owned by the caller (free
 * prog.filter). */
int filter_build(int deny_errno, struct sock_fprog *prog, char *err, size_t errlen);
/* The same program compiled now with libseccomp (filter_gen.c; build time
 * and tests only: callers link -lseccomp). */
int filter_compile(int deny_errno, struct sock_fprog *prog, char *err, size_t errlen);
/* Set no_new_privs and install prog in the calling thread.  Async-signal
 * safe; -1 with errno on failure. */
int filter_load(const struct sock_fprog *prog);
/* The same policy as a Docker seccomp profile (JSON), for the docker
 * backend's containers: built from the same tables, so both backends deny
 * the same calls with the same errno. */
jv filter_docker_profile(int deny_errno);

#endif
