/* filter_gen: the policy (filter_policy.c) compiled to classic BPF with
 * libseccomp.  Used at build time only (build-aux/gen-filter.c writes the
 * program into the tools) and by the unit test that checks the embedded
 * program against a fresh compile; the tools do not link libseccomp. */
#define _GNU_SOURCE
#include "filter.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int filter_compile(int deny_errno, struct sock_fprog *prog, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		snprintf(err, errlen, "seccomp_init failed");
		return -1;
	}
	int rc = 0;
	const char *what = "";
	uint32_t deny = SCMP_ACT_ERRNO((uint32_t)deny_errno);
	/* A foreign ABI (i386 int 0x80, x32) kills the process: it would see a
	 * different syscall table than this filter describes. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc)
		/* libseccomp probes the kernel for KILL_PROCESS with seccomp(2);
		 * where that probe cannot run (valgrind), kill the thread. */
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_THREAD);
	what = "badarch";
	/* A binary tree of syscall numbers rather than a list: loading the
	 * filter makes the kernel run it for every syscall number (to cache
	 * which are always allowed), under a lock with interrupts off, and
	 * that pass is as long as the path to "allow": 0.2 -> 0.1 ms per
	 * sandbox here. */
	if (!rc) {
		what = "the binary tree";
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	}
	for (int i = 0; !rc && filter_denied[i]; i++) {
		int nr = seccomp_syscall_resolve_name(filter_denied[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		what = filter_denied[i];
		rc = seccomp_rule_add(ctx, deny, nr, 0);
	}
	/* clone: no new namespaces (the flag bits are in the first argument). */
	for (size_t i = 0; !rc && i < FILTER_NS_FLAGS; i++) {
		what = "clone";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, filter_ns_flags[i], filter_ns_flags[i]));
	}
	/* clone3 passes its flags in memory the filter cannot read: ENOSYS makes
	 * glibc fall back to clone. */
	if (!rc) {
		what = "clone3";
		int nr = seccomp_syscall_resolve_name("clone3");
		if (nr != __NR_SCMP_ERROR)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	}
	/* memfd_create: a file the program writes on a mount that is not
	 * noexec, which it could then execute or map executable (even one
	 * sealed against exec: ld.so maps it); ENOSYS, as where there is no
	 * memfd, so that programs fall back to files, which are noexec. */
	if (!rc) {
		what = "memfd_create";
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(memfd_create), 0);
	}
	/* socket families: deny every family number that is not allowed. */
	for (int fam = 0; !rc && fam < AF_MAX + 8; fam++) {
		if (filter_family_allowed(fam))
			continue;
		what = "socket";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam));
	}
	if (!rc) {
		what = "socket";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GE, AF_MAX + 8));
	}
	/* inet: the types and protocols the policy names (filter_policy.c). */
	for (size_t f = 0; !rc && f < FILTER_INET_FAMILIES; f++) {
		scmp_datum_t fam = (scmp_datum_t)filter_inet_families[f];
		for (size_t t = 0; !rc && t < FILTER_INET_TYPES; t++)
			rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, fam),
					      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, (scmp_datum_t)filter_inet_types[t]));
		for (size_t i = 0; !rc && i < FILTER_INET_PROTOS; i++)
			rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, fam),
					      SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)filter_inet_protos[i]));
	}
	/* socketpair: unix only (other families make their sockets, loading
	 * their modules, before they refuse; TIPC's work). */
	if (!rc) {
		what = "socketpair";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	}
	/* netlink: only NETLINK_ROUTE (interfaces and addresses, which getaddrinfo
	 * and runtimes ask about); not audit, not uevents, not xfrm. */
	if (!rc)
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
				      SCMP_A2(SCMP_CMP_NE, 0 /* NETLINK_ROUTE */));
	/* ioctl requests (filter_policy.c says why each).  The request is an
	 * int: compare the low 32 bits only. */
	if (!rc)
		what = "ioctl";
	for (size_t i = 0; !rc && i < FILTER_IOCTLS; i++)
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, filter_ioctls[i]));
	/* Huge pages come from the host's pool, outside the memory cgroup
	 * (unless it counts them): none for a sandbox. */
	if (!rc) {
		what = "mmap";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(mmap), 1, SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_HUGETLB, MAP_HUGETLB));
	}
	if (!rc) {
		what = "shmget";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(shmget), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, SHM_HUGETLB, SHM_HUGETLB));
	}
	if (rc) {
		snprintf(err, errlen, "seccomp rule for %s: %s", what, strerror(-rc));
		seccomp_release(ctx);
		return -1;
	}
	int fd = memfd_create("sbx-seccomp", MFD_CLOEXEC);
	if (fd < 0 || (rc = seccomp_export_bpf(ctx, fd)) < 0) {
		snprintf(err, errlen, "seccomp export: %s", strerror(fd < 0 ? errno : -rc));
		if (fd >= 0)
			close(fd);
		seccomp_release(ctx);
		return -1;
	}
	seccomp_release(ctx);
	struct stat st;
	fstat(fd, &st);
	size_t len = (size_t)st.st_size;
	struct sock_filter *f = util_xalloc(len);
	if (pread(fd, f, len, 0) != (ssize_t)len) {
		snprintf(err, errlen, "seccomp export: short read");
		free(f);
		close(fd);
		return -1;
	}
	close(fd);
	prog->filter = f;
	prog->len = (unsigned short)(len / sizeof *f);
	return 0;
}
