#define _GNU_SOURCE
#include "kern.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

const struct kern_feature kern_features[KF_N] = {
	[KF_CLONE3] = { "clone3", "5.3", true, NULL },
	[KF_PIDFD] = { "pidfd", "5.4", true, NULL },
	[KF_MOUNT_API] = { "new mount API (fsopen, fsmount, open_tree, move_mount)", "5.2", true, NULL },
	[KF_OPENAT2] = { "openat2", "5.6", true, NULL },
	[KF_CLOSE_RANGE] = { "close_range", "5.9", false, "fds closed one by one before exec" },
	[KF_MOUNT_SETATTR] = { "mount_setattr", "5.12", true, NULL },
	[KF_LANDLOCK] = { "Landlock", "5.19", false,
			  "none: a program may write the memory of another process of its sandbox (/proc/PID/mem); "
			  "the kernel needs CONFIG_SECURITY_LANDLOCK and landlock in its lsm= list" },
};

/* Each probe passes arguments the call must refuse, so that nothing
 * happens either way: any error but ENOSYS (EINVAL for the size or the
 * flags, EBADF for the fd, ENODEV for the name) says the call exists. */
static bool exists(long rc)
{
	return rc == 0 || errno != ENOSYS;
}

unsigned kern_probe(void)
{
	unsigned have = 0;
	int e = errno;
	if (exists(syscall(SYS_clone3, NULL, 0)))
		have |= 1u << KF_CLONE3;
	/* waitid knows P_PIDFD since 5.4 (EBADF for a closed fd); before,
	 * EINVAL. */
	siginfo_t si;
	if (waitid((idtype_t)P_PIDFD, (id_t)INT_MAX, &si, WEXITED | WNOHANG) < 0 && errno == EBADF &&
	    exists(syscall(SYS_pidfd_send_signal, -1, 0, NULL, 0)))
		have |= 1u << KF_PIDFD;
	if (exists(syscall(SYS_fsopen, "sbx-no-such-filesystem", 0)) && exists(syscall(SYS_open_tree, -1, "", 0)) &&
	    exists(syscall(SYS_move_mount, -1, "", -1, "", 0)))
		have |= 1u << KF_MOUNT_API;
	if (exists(syscall(SYS_openat2, AT_FDCWD, "", NULL, 0)))
		have |= 1u << KF_OPENAT2;
	if (exists(syscall(SYS_close_range, ~0u, ~0u, 0)))
		have |= 1u << KF_CLOSE_RANGE;
	if (exists(syscall(SYS_mount_setattr, -1, "", 0, NULL, 0)))
		have |= 1u << KF_MOUNT_SETATTR;
	/* The ABI version; ENOSYS without it, EOPNOTSUPP when not enabled.
	 * ABI 2 at least: see ll.c. */
	if (syscall(SYS_landlock_create_ruleset, NULL, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */) >= 2)
		have |= 1u << KF_LANDLOCK;
	errno = e;
	return have;
}

bool kern_usable(unsigned have, char *err, size_t errlen)
{
	for (int i = 0; i < KF_N; i++)
		if (kern_features[i].required && !(have & (1u << i))) {
			snprintf(err, errlen,
				 "this kernel lacks %s (Linux %s brought it; a seccomp filter, such as a container runtime's, "
				 "can also hide it): the native backend needs Linux " KERN_MIN " or later",
				 kern_features[i].name, kern_features[i].since);
			return false;
		}
	return true;
}
