#define _GNU_SOURCE
#include "ll.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock ABI 2 (Linux 5.19): every ruleset forbids linking or renaming a
 * file into another directory unless REFER is granted there (ABI 1 could
 * not grant it at all, which breaks ordinary programs, so it is not used).
 * Directories get WRITE_FILE and REFER; single files only WRITE_FILE. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif

int ll_write_only_beneath(const char *const *paths, char *err, size_t errlen)
{
	struct landlock_ruleset_attr rs = { .handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REFER };
	int fd = (int)syscall(SYS_landlock_create_ruleset, &rs, sizeof rs, 0);
	if (fd < 0) {
		snprintf(err, errlen, "create the Landlock ruleset");
		return -1;
	}
	for (const char *const *p = paths; *p; p++) {
		int at = open(*p, O_PATH | O_CLOEXEC);
		if (at < 0) {
			if (errno == ENOENT)
				continue;
			snprintf(err, errlen, "open %s for the Landlock ruleset", *p);
			goto fail;
		}
		struct stat st;
		uint64_t allow = LANDLOCK_ACCESS_FS_WRITE_FILE;
		if (fstat(at, &st) == 0 && S_ISDIR(st.st_mode))
			allow |= LANDLOCK_ACCESS_FS_REFER;
		struct landlock_path_beneath_attr pb = { .allowed_access = allow, .parent_fd = at };
		long rc = syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
		int e = errno;
		close(at);
		errno = e;
		if (rc < 0) {
			snprintf(err, errlen, "add %s to the Landlock ruleset", *p);
			goto fail;
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_landlock_restrict_self, fd, 0) < 0) {
		snprintf(err, errlen, "apply the Landlock ruleset");
		goto fail;
	}
	close(fd);
	return 0;
fail:;
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}
