#define _GNU_SOURCE
#include "filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util.h"

/* Calls denied outright. */
static const char *denied[] = {
	/* reading or writing other processes */
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	/* kernel keyrings: shared, long-lived kernel state */
	"keyctl", "add_key", "request_key",
	/* large, often-exploited kernel subsystems */
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	/* the kernel itself and the machine */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "iopl", "ioperm", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "lookup_dcookie", "uselib",
	"open_by_handle_at", "name_to_handle_at", "nfsservctl",
	/* the sandbox's own walls */
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig", "fspick",
	"move_mount", "open_tree", "mount_setattr", "unshare", "setns",
	NULL,
};

static const unsigned long ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
};

/* Families a program may open; everything else is denied. */
static const int allowed_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

int filter_build(int deny_errno, struct sock_fprog *prog, char *err, size_t errlen)
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
	for (int i = 0; !rc && denied[i]; i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		what = denied[i];
		rc = seccomp_rule_add(ctx, deny, nr, 0);
	}
	/* clone: no new namespaces (the flag bits are in the first argument). */
	for (size_t i = 0; !rc && i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
		what = "clone";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	}
	/* clone3 passes its flags in memory the filter cannot read: ENOSYS makes
	 * glibc fall back to clone. */
	if (!rc) {
		what = "clone3";
		int nr = seccomp_syscall_resolve_name("clone3");
		if (nr != __NR_SCMP_ERROR)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	}
	/* socket families: deny every family number that is not allowed. */
	for (int fam = 0; !rc && fam < AF_MAX + 8; fam++) {
		bool ok = false;
		for (size_t i = 0; i < sizeof allowed_families / sizeof allowed_families[0]; i++)
			if (allowed_families[i] == fam)
				ok = true;
		if (ok)
			continue;
		what = "socket";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam));
	}
	if (!rc) {
		what = "socket";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GE, AF_MAX + 8));
	}
	/* netlink: only NETLINK_ROUTE (interfaces and addresses, which getaddrinfo
	 * and runtimes ask about); not audit, not uevents, not xfrm. */
	if (!rc)
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
				      SCMP_A2(SCMP_CMP_NE, 0 /* NETLINK_ROUTE */));
	/* Terminal injection, were a terminal ever reachable.  The command is
	 * an int: compare the low 32 bits only. */
	if (!rc) {
		what = "ioctl";
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
	}
	if (!rc)
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
	if (rc) {
		snprintf(err, errlen, "seccomp rule for %s: %s", what, strerror(-rc));
		seccomp_release(ctx);
		return -1;
	}
	/* Export the BPF once; children load it without libseccomp. */
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

int filter_load(const struct sock_fprog *prog)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	/* prctl rather than seccomp(2): same effect without flags, and known
	 * to more tools (valgrind). */
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0);
}

/* ---- the docker backend's profile ------------------------------------ */

static jv rule(const char *name, int err, jv args)
{
	jv r = jv_object_set(jv_object(), jv_string("names"), jv_array_append(jv_array(), jv_string(name)));
	r = jv_object_set(r, jv_string("action"), jv_string("SCMP_ACT_ERRNO"));
	r = jv_object_set(r, jv_string("errnoRet"), jv_number(err));
	return jv_is_valid(args) ? jv_object_set(r, jv_string("args"), args) : (jv_free(args), r);
}

static jv arg(int index, unsigned long long value, unsigned long long two, const char *op)
{
	jv a = jv_object_set(jv_object(), jv_string("index"), jv_number(index));
	a = jv_object_set(a, jv_string("value"), jv_number((double)value));
	a = jv_object_set(a, jv_string("valueTwo"), jv_number((double)two));
	return jv_object_set(a, jv_string("op"), jv_string(op));
}

jv filter_docker_profile(int deny_errno)
{
	jv rules = jv_array();
	jv names = jv_array();
	for (int i = 0; denied[i]; i++)
		names = jv_array_append(names, jv_string(denied[i]));
	jv all = jv_object_set(jv_object(), jv_string("names"), names);
	all = jv_object_set(all, jv_string("action"), jv_string("SCMP_ACT_ERRNO"));
	rules = jv_array_append(rules, jv_object_set(all, jv_string("errnoRet"), jv_number(deny_errno)));
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++)
		rules = jv_array_append(rules, rule("clone", deny_errno,
						    jv_array_append(jv_array(), arg(0, ns_flags[i], ns_flags[i], "SCMP_CMP_MASKED_EQ"))));
	rules = jv_array_append(rules, rule("clone3", ENOSYS, jv_invalid()));
	for (int fam = 0; fam < AF_MAX + 8; fam++) {
		bool ok = false;
		for (size_t i = 0; i < sizeof allowed_families / sizeof allowed_families[0]; i++)
			ok |= allowed_families[i] == fam;
		if (!ok)
			rules = jv_array_append(rules, rule("socket", deny_errno,
							    jv_array_append(jv_array(), arg(0, (unsigned)fam, 0, "SCMP_CMP_EQ"))));
	}
	rules = jv_array_append(rules, rule("socket", deny_errno,
					    jv_array_append(jv_array(), arg(0, AF_MAX + 8, 0, "SCMP_CMP_GE"))));
	rules = jv_array_append(rules, rule("socket", deny_errno,
					    jv_array_append(jv_array_append(jv_array(), arg(0, AF_NETLINK, 0, "SCMP_CMP_EQ")),
							    arg(2, 0, 0, "SCMP_CMP_NE"))));
	rules = jv_array_append(rules, rule("ioctl", deny_errno,
					    jv_array_append(jv_array(), arg(1, 0xffffffffu, TIOCSTI, "SCMP_CMP_MASKED_EQ"))));
	rules = jv_array_append(rules, rule("ioctl", deny_errno,
					    jv_array_append(jv_array(), arg(1, 0xffffffffu, TIOCLINUX, "SCMP_CMP_MASKED_EQ"))));
	jv p = jv_object_set(jv_object(), jv_string("defaultAction"), jv_string("SCMP_ACT_ALLOW"));
	/* Only the native ABI: a call through another one matches no
	 * architecture of the profile and is killed. */
	p = jv_object_set(p, jv_string("architectures"), jv_array_append(jv_array(), jv_string("SCMP_ARCH_X86_64")));
	return jv_object_set(p, jv_string("syscalls"), rules);
}
