/* box_scratch: a job's files for the native sandbox: a detached,
 * size-limited tmpfs, or a detached clone of a session's workspace, and
 * their per-stage clones (on kernels before 6.15 through a holder mount
 * namespace).  A sandbox takes the mount it is handed; see native.c for
 * who takes which.
 */
#define _GNU_SOURCE
#include "box_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ns.h"
#include "state.h"

uid_t box_scratch_owner(const struct box_sys *s)
{
	/* The program's uid 1000 as the supervisor sees it. */
	return s->root ? state_uid(s->conf, STATE_UID_PROGRAM) : 0;
}

int box_scratch(struct box_sys *s, uint64_t size, char *err, size_t errlen)
{
	char opt[64];
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0) {
		snprintf(err, errlen, "cannot create a scratch tmpfs: %s", strerror(errno));
		return -1;
	}
	snprintf(opt, sizeof opt, "%llu", (unsigned long long)size);
	char ino[32], id[32];
	snprintf(ino, sizeof ino, "%llu", (unsigned long long)ns_tmpfs_inodes(size));
	snprintf(id, sizeof id, "%u", (unsigned)box_scratch_owner(s));
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", opt, 0) < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", ino, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "uid", id, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "gid", id, 0) < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		snprintf(err, errlen, "cannot configure the scratch tmpfs: %s", strerror(errno));
		close(fs);
		return -1;
	}
	int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	int e = errno;
	close(fs);
	if (mnt < 0)
		snprintf(err, errlen, "cannot mount the scratch tmpfs: %s", strerror(e));
	return mnt;
}

int box_workspace(struct box_sys *s, const char *dir, bool exec, char *err, size_t errlen)
{
	int fd = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open the workspace %s: %s", dir, strerror(errno));
		return -1;
	}
	/* The clone inherits the host mount's propagation (shared, on most
	 * systems): nothing the sandbox mounts may propagate back.  Its flags
	 * are set here, by us: the sandbox moves this very mount into its
	 * tree (a clone made in another mount namespace may not be cloned
	 * again there) and only adds to them. */
	struct mount_attr a = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (exec ? 0 : MOUNT_ATTR_NOEXEC),
				.attr_clr = exec ? MOUNT_ATTR_NOEXEC : 0, .propagation = MS_PRIVATE };
	if (mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot make the workspace %s private%s: %s", dir,
			 exec && e == EPERM ? " and executable (its filesystem is mounted noexec: set workspace_exec = false, "
					      "or put state_dir elsewhere)" : "", strerror(e));
		close(fd);
		return -1;
	}
	(void)s;
	return fd;
}

/* The holder: a mount namespace of ours with nothing in it but a small
 * tmpfs of mount points (ns_build_holder), where kernels before 6.15 let
 * us clone a scratch.  They clone only
 * mounts attached in the caller's namespace; a scratch made by fsmount is
 * attached nowhere, and attaching it in our own namespace would show it
 * to the host (as root, ours is the host's).  Made at the first need. */
static int holder_make(void *arg, char *err, size_t errlen)
{
	(void)arg;
	return ns_build_holder(err, errlen);
}

bool box_scratch_direct(struct box_sys *s)
{
	if (!s->clone_via_holder) {
		char err[256];
		int fd = box_scratch(s, 4096, err, sizeof err);
		int c = fd < 0 ? -1 : open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (c < 0 && fd >= 0 && errno == EINVAL)
			s->clone_via_holder = true;
		if (c >= 0)
			close(c);
		if (fd >= 0)
			close(fd);
	}
	return !s->clone_via_holder;
}

int box_scratch_clone(struct box_sys *s, int scratch, const char *sub, int *second, char *err, size_t errlen)
{
	*second = -1;
	if (!s->clone_via_holder) {
		int fd = open_tree(scratch, sub ? sub : "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (sub ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH));
		if (fd >= 0 || errno != EINVAL) {
			if (fd < 0)
				snprintf(err, errlen, "cannot clone the scratch directory: %s", strerror(errno));
			return fd;
		}
		s->clone_via_holder = true; /* Linux before 6.15 */
	}
	if (s->holder_fd < 0 &&
	    (s->holder_fd = box_ns_made(CLONE_NEWNS, holder_make, NULL, "making the namespace scratch directories are cloned in",
				    err, errlen)) < 0)
		return -1;
	/* There: attach it, clone it once per stage, detach it again (our fd
	 * still reaches its files), all on the supervisor's thread.  The
	 * detach waits for an RCU grace period, the price of these kernels. */
	char path[32], at[320];
	snprintf(path, sizeof path, "/%lu", ++s->holder_seq);
	snprintf(at, sizeof at, "%s/%s", path, sub ? sub : "");
	int cwd, a = -1, b = -1;
	const char *what = "enter the holder namespace";
	if (box_enter_mnt(s->holder_fd, &cwd) == 0) {
		what = "mkdir in the holder namespace";
		if (mkdir(path, 0700) == 0) {
			what = "attach the scratch in the holder namespace";
			if (move_mount(scratch, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) == 0) {
				what = "clone the scratch";
				if ((a = open_tree(AT_FDCWD, at, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW)) >= 0)
					b = open_tree(AT_FDCWD, at, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
				int e = errno;
				umount2(path, MNT_DETACH);
				errno = e;
			}
			int e = errno;
			rmdir(path);
			errno = e;
		}
		box_leave_mnt(s, cwd);
	}
	if (b < 0) {
		snprintf(err, errlen, "cannot %s: %s", what, strerror(errno));
		if (a >= 0)
			close(a);
		return -1;
	}
	*second = b;
	return a;
}

