#define _GNU_SOURCE
#include "filter.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>

#include "filter_bpf.h" /* generated: filter_bpf[], FILTER_BPF_SENTINEL */
#include "util.h"

/* The native ABI as Docker's profiles name it. */
#if defined(__x86_64__)
#define FILTER_DOCKER_ARCH "SCMP_ARCH_X86_64"
#elif defined(__aarch64__)
#define FILTER_DOCKER_ARCH "SCMP_ARCH_AARCH64"
#else
#error "the docker backend's seccomp profile knows x86_64 and aarch64"
#endif

int filter_build(int deny_errno, struct sock_fprog *prog, char *err, size_t errlen)
{
	if (deny_errno < 1 || deny_errno > 4095) { /* the kernel's MAX_ERRNO */
		snprintf(err, errlen, "seccomp errno %d out of range", deny_errno);
		return -1;
	}
	size_t n = sizeof filter_bpf / sizeof filter_bpf[0];
	struct sock_filter *f = util_xalloc(sizeof filter_bpf);
	memcpy(f, filter_bpf, sizeof filter_bpf);
	/* The program was compiled with a placeholder errno no real one
	 * equals; only return instructions carry it. */
	for (size_t i = 0; i < n; i++)
		if (f[i].code == (BPF_RET | BPF_K) && f[i].k == (SECCOMP_RET_ERRNO | FILTER_BPF_SENTINEL))
			f[i].k = SECCOMP_RET_ERRNO | (unsigned)deny_errno;
	prog->filter = f;
	prog->len = (unsigned short)n;
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
	for (int i = 0; filter_denied[i]; i++)
		names = jv_array_append(names, jv_string(filter_denied[i]));
	jv all = jv_object_set(jv_object(), jv_string("names"), names);
	all = jv_object_set(all, jv_string("action"), jv_string("SCMP_ACT_ERRNO"));
	rules = jv_array_append(rules, jv_object_set(all, jv_string("errnoRet"), jv_number(deny_errno)));
	for (size_t i = 0; i < FILTER_NS_FLAGS; i++)
		rules = jv_array_append(rules, rule("clone", deny_errno,
						    jv_array_append(jv_array(), arg(0, filter_ns_flags[i], filter_ns_flags[i], "SCMP_CMP_MASKED_EQ"))));
	rules = jv_array_append(rules, rule("clone3", ENOSYS, jv_invalid()));
	rules = jv_array_append(rules, rule("memfd_create", ENOSYS, jv_invalid()));
	for (int fam = 0; fam < AF_MAX + 8; fam++)
		if (!filter_family_allowed(fam))
			rules = jv_array_append(rules, rule("socket", deny_errno,
							    jv_array_append(jv_array(), arg(0, (unsigned)fam, 0, "SCMP_CMP_EQ"))));
	rules = jv_array_append(rules, rule("socket", deny_errno,
					    jv_array_append(jv_array(), arg(0, AF_MAX + 8, 0, "SCMP_CMP_GE"))));
	rules = jv_array_append(rules, rule("socket", deny_errno,
					    jv_array_append(jv_array_append(jv_array(), arg(0, AF_NETLINK, 0, "SCMP_CMP_EQ")),
							    arg(2, 0, 0, "SCMP_CMP_NE"))));
	for (size_t f = 0; f < FILTER_INET_FAMILIES; f++) {
		unsigned fam = (unsigned)filter_inet_families[f];
		for (size_t t = 0; t < FILTER_INET_TYPES; t++)
			rules = jv_array_append(rules, rule("socket", deny_errno,
							    jv_array_append(jv_array_append(jv_array(), arg(0, fam, 0, "SCMP_CMP_EQ")),
									    arg(1, 0xf, (unsigned)filter_inet_types[t], "SCMP_CMP_MASKED_EQ"))));
		for (size_t i = 0; i < FILTER_INET_PROTOS; i++)
			rules = jv_array_append(rules, rule("socket", deny_errno,
							    jv_array_append(jv_array_append(jv_array(), arg(0, fam, 0, "SCMP_CMP_EQ")),
									    arg(2, (unsigned)filter_inet_protos[i], 0, "SCMP_CMP_EQ"))));
	}
	rules = jv_array_append(rules, rule("socketpair", deny_errno,
					    jv_array_append(jv_array(), arg(0, AF_UNIX, 0, "SCMP_CMP_NE"))));
	for (size_t i = 0; i < FILTER_IOCTLS; i++)
		rules = jv_array_append(rules, rule("ioctl", deny_errno,
						    jv_array_append(jv_array(), arg(1, 0xffffffffu, filter_ioctls[i], "SCMP_CMP_MASKED_EQ"))));
	rules = jv_array_append(rules, rule("mmap", deny_errno,
					    jv_array_append(jv_array(), arg(3, MAP_HUGETLB, MAP_HUGETLB, "SCMP_CMP_MASKED_EQ"))));
	rules = jv_array_append(rules, rule("shmget", deny_errno,
					    jv_array_append(jv_array(), arg(2, SHM_HUGETLB, SHM_HUGETLB, "SCMP_CMP_MASKED_EQ"))));
	jv p = jv_object_set(jv_object(), jv_string("defaultAction"), jv_string("SCMP_ACT_ALLOW"));
	/* Only the native ABI: a call through another one (x86's 32-bit
	 * entry, arm64's compat mode) matches no architecture of the
	 * profile and is killed. */
	p = jv_object_set(p, jv_string("architectures"), jv_array_append(jv_array(), jv_string(FILTER_DOCKER_ARCH)));
	return jv_object_set(p, jv_string("syscalls"), rules);
}
