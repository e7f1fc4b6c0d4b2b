/* kern: what the running kernel offers the native backend, found by
 * asking it (a system call with arguments it must refuse: ENOSYS says it
 * is not there), not by its version: distributions backport features to
 * older versions (RHEL 9's 5.14), and a number says nothing of them.
 *
 * Each feature names the Linux release that brought it.  A required one
 * missing makes the native backend unusable: box_sys_init fails with
 * kern_missing's text, so every job's internal_error and sbx-run --check
 * name it and the release that has it, rather than a set-up step failing
 * with ENOSYS.  The others have a fallback, which the table names.
 * kern_probe is cheap (a few failing system calls) and is run once per
 * process; the table is read-only and static.
 */
#ifndef SBX_KERN_H
#define SBX_KERN_H

#include <stdbool.h>
#include <stddef.h>

enum kern_feat {
	KF_CLONE3,        /* clone3(2), with CLONE_INTO_CGROUP since 5.7 */
	KF_PIDFD,         /* waitid(P_PIDFD) (5.4), pidfd_send_signal (5.1) */
	KF_MOUNT_API,     /* fsopen, fsmount, open_tree, move_mount (5.2) */
	KF_OPENAT2,       /* openat2(2) and its RESOLVE_ flags (5.6) */
	KF_CLOSE_RANGE,   /* close_range(2) (5.9) */
	KF_MOUNT_SETATTR, /* mount_setattr(2), recursive read-only binds (5.12) */
	KF_LANDLOCK,      /* Landlock's ABI 2 enabled (5.19, and on the kernel's LSM list) */
	KF_N
};

struct kern_feature {
	const char *name;
	const char *since;    /* the first Linux release with it */
	bool required;
	const char *fallback; /* what is done without it; NULL if required */
};

extern const struct kern_feature kern_features[KF_N];

/* Ask the kernel; the bits of kern_feat it has. */
unsigned kern_probe(void);
/* For a probe's result: false if a required feature is missing, with err
 * naming the first such one, the release that brings it and the release
 * sbx needs. */
bool kern_usable(unsigned have, char *err, size_t errlen);
/* The oldest release with every required feature. */
#define KERN_MIN "5.12"

#endif
