/* ckpt: a session tree's workspaces and checkpoints on its filesystem
 * (ckpt.h): btrfs subvolumes and snapshots, or copies.
 *
 * The copy walks the source with one directory fd per level, opened
 * beneath the one above with O_NOFOLLOW: a link sandboxed code planted, or
 * a directory it renames meanwhile (a kernel may run while a checkpoint is
 * taken), is never a way out of the workspace.  A regular file is opened
 * O_NONBLOCK and checked by fstat after the open, so a FIFO swapped in for
 * it cannot hang the server.
 */
#define _GNU_SOURCE
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* Deeper than this, a copy fails (each level holds two descriptors). */
#define COPY_DEPTH 128

static const char *const layout_dirs[] = { CKPT_LIVE, CKPT_SAVED, CKPT_TRASH };

void ckpt_path(char buf[CKPT_PATH], const char *dir, const char *name)
{
	snprintf(buf, CKPT_PATH, "%s/%s", dir, name);
}

int ckpt_layout(int tree, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof layout_dirs / sizeof layout_dirs[0]; i++)
		if (mkdirat(tree, layout_dirs[i], 0700) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot make the tree's %s: %s", layout_dirs[i], strerror(errno));
			return -1;
		}
	return 0;
}

/* The directory of path (its parent, opened beneath tree) and its last
 * name, for the btrfs ioctls, which take a parent and a name. */
static int parent_of(int tree, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		*name = path;
		return fcntl(tree, F_DUPFD_CLOEXEC, 0);
	}
	char dir[256];
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	*name = slash + 1;
	return openat(tree, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int ckpt_workspace_new(int tree, const char *path, bool btrfs, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	int rc = -1;
	if (btrfs) {
		const char *name;
		int dir = parent_of(tree, path, &name);
		struct btrfs_ioctl_vol_args a = { 0 };
		snprintf(a.name, sizeof a.name, "%s", name);
		rc = dir < 0 ? -1 : ioctl(dir, BTRFS_IOC_SUBVOL_CREATE, &a);
		int e = errno;
		if (dir >= 0)
			close(dir);
		errno = e;
	} else {
		rc = mkdirat(tree, path, 0700);
	}
	/* mode first: root in a container may lack CAP_FOWNER, and the
	 * directory is not its own once given away */
	if (rc == 0 && (fchmodat(tree, path, 0700, 0) < 0 || fchownat(tree, path, uid, gid, AT_SYMLINK_NOFOLLOW) < 0))
		rc = -1;
	if (rc < 0)
		snprintf(err, errlen, "cannot make the workspace %s: %s", path, strerror(errno));
	return rc;
}

/* ---- copies ---------------------------------------------------------------- */

struct copy {
	uint64_t bytes;
	char *err;
	size_t errlen;
};

static int copy_fail(struct copy *cp, const char *what, const char *name)
{
	if (!*cp->err)
		snprintf(cp->err, cp->errlen, "cannot copy %s %.100s: %s", what, name, strerror(errno));
	return -1;
}

/* Mode, times and owner of st on fd (a file or directory of ours), or on
 * name in dfd without following it (a link, a FIFO).  The owner last:
 * once the file is another's, root without CAP_FOWNER (in a container)
 * may set neither its mode nor its times. */
static void copy_meta(int fd, int dfd, const char *name, const struct stat *st)
{
	mode_t mode = st->st_mode & 01777; /* never setuid or setgid */
	struct timespec t[2] = { st->st_atim, st->st_mtim };
	if (fd >= 0) {
		(void)!fchmod(fd, mode);
		futimens(fd, t);
		(void)!fchown(fd, st->st_uid, st->st_gid);
		return;
	}
	if (!S_ISLNK(st->st_mode))
		(void)!fchmodat(dfd, name, mode, 0);
	utimensat(dfd, name, t, AT_SYMLINK_NOFOLLOW);
	(void)!fchownat(dfd, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
}

/* in's bytes to out by read and write, where copy_file_range cannot. */
static int copy_plain(struct copy *cp, int in, int out)
{
	char buf[65536];
	for (;;) {
		ssize_t r = read(in, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return (int)r;
		if (util_write_all(out, buf, (size_t)r) < 0)
			return -1;
		cp->bytes += (uint64_t)r;
	}
}

static int copy_file(struct copy *cp, int sdir, int ddir, const char *name)
{
	int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (in < 0)
		return errno == ENOENT ? 0 : copy_fail(cp, "the file", name); /* gone meanwhile */
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return 0; /* swapped for something else meanwhile: not a file of this copy */
	}
	int out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return copy_fail(cp, "the file", name);
	}
	int rc = 0;
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n > 0) {
			cp->bytes += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		/* (a pair of filesystems the call does not serve) */
		if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP))
			n = copy_plain(cp, in, out);
		if (n < 0)
			rc = copy_fail(cp, "the file", name);
		break;
	}
	if (rc == 0)
		copy_meta(out, -1, NULL, &st);
	close(in);
	close(out);
	return rc;
}

static int copy_dir(struct copy *cp, int sdir, int ddir, int depth)
{
	if (depth > COPY_DEPTH) {
		snprintf(cp->err, cp->errlen, "its directories nest deeper than %d", COPY_DEPTH);
		return -1;
	}
	int list = fcntl(sdir, F_DUPFD_CLOEXEC, 0);
	DIR *d = list < 0 ? NULL : fdopendir(list);
	if (!d) {
		if (list >= 0)
			close(list);
		return copy_fail(cp, "the directory", ".");
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		const char *n = e->d_name;
		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		struct stat st;
		if (fstatat(sdir, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISREG(st.st_mode)) {
			rc = copy_file(cp, sdir, ddir, n);
		} else if (S_ISDIR(st.st_mode)) {
			int s = openat(sdir, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s < 0)
				continue;
			int o = mkdirat(ddir, n, 0700) < 0 ? -1 : openat(ddir, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (o < 0)
				rc = copy_fail(cp, "the directory", n);
			else
				rc = copy_dir(cp, s, o, depth + 1);
			if (o >= 0) {
				struct stat now;
				copy_meta(o, -1, NULL, fstat(s, &now) == 0 ? &now : &st);
				close(o);
			}
			close(s);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t len = readlinkat(sdir, n, target, sizeof target - 1);
			if (len < 0)
				continue;
			target[len] = 0;
			if (symlinkat(target, ddir, n) < 0)
				rc = copy_fail(cp, "the link", n);
			else
				copy_meta(-1, ddir, n, &st);
		} else if (S_ISFIFO(st.st_mode)) {
			if (mkfifoat(ddir, n, 0600) < 0)
				rc = copy_fail(cp, "the FIFO", n);
			else
				copy_meta(-1, ddir, n, &st);
		}
		/* sockets and devices (the mount has nodev) are not kept */
	}
	closedir(d);
	return rc;
}

static int copy_tree(int tree, const char *from, const char *to, uint64_t *bytes, char *err, size_t errlen)
{
	struct copy cp = { 0, err, errlen };
	*err = 0;
	int s = openat(tree, from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0) {
		snprintf(err, errlen, "cannot open %s: %s", from, strerror(errno));
		return -1;
	}
	int rc = -1;
	if (mkdirat(tree, to, 0700) < 0) {
		snprintf(err, errlen, "cannot make %s: %s", to, strerror(errno));
	} else {
		int d = openat(tree, to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d < 0) {
			snprintf(err, errlen, "cannot open %s: %s", to, strerror(errno));
		} else {
			rc = copy_dir(&cp, s, d, 0);
			struct stat st;
			if (rc == 0 && fstat(s, &st) == 0)
				copy_meta(d, -1, NULL, &st);
			close(d);
		}
		if (rc < 0)
			util_remove_at(tree, to);
	}
	close(s);
	if (bytes)
		*bytes = cp.bytes;
	return rc;
}

/* ---- snapshots, and the choice --------------------------------------------- */

static int snapshot(int tree, const char *from, const char *to, bool readonly, char *err, size_t errlen)
{
	int src = openat(tree, from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	const char *name;
	int dir = src < 0 ? -1 : parent_of(tree, to, &name);
	int rc = -1;
	if (dir >= 0) {
		struct btrfs_ioctl_vol_args_v2 a = { .fd = src, .flags = readonly ? BTRFS_SUBVOL_RDONLY : 0 };
		snprintf(a.name, sizeof a.name, "%s", name);
		rc = ioctl(dir, BTRFS_IOC_SNAP_CREATE_V2, &a);
	}
	/* btrfs lets only the source's owner, or CAP_FOWNER, snapshot it */
	if (rc < 0)
		snprintf(err, errlen, "cannot snapshot %s as %s: %s%s", from, to, strerror(errno),
			 errno == EPERM ? " (a root server needs CAP_FOWNER to snapshot its sandboxes' workspaces)" : "");
	if (dir >= 0)
		close(dir);
	if (src >= 0)
		close(src);
	return rc;
}

int ckpt_clone(int tree, const char *from, const char *to, bool btrfs, bool readonly, uint64_t *copied_bytes,
	       char *err, size_t errlen)
{
	if (copied_bytes)
		*copied_bytes = 0;
	if (btrfs)
		return snapshot(tree, from, to, readonly, err, errlen);
	return copy_tree(tree, from, to, copied_bytes, err, errlen);
}

int ckpt_drop(int tree, const char *path, bool btrfs)
{
	if (btrfs) {
		const char *name;
		int dir = parent_of(tree, path, &name);
		if (dir < 0)
			return -1;
		struct btrfs_ioctl_vol_args a = { 0 };
		snprintf(a.name, sizeof a.name, "%s", name);
		int rc = ioctl(dir, BTRFS_IOC_SNAP_DESTROY, &a);
		int e = errno;
		close(dir);
		if (rc == 0 || e == ENOENT)
			return 0;
		if (e != ENOTTY && e != EINVAL) {
			errno = e;
			return -1;
		}
		/* not a subvolume (a tree made before btrfs): a directory */
	}
	return util_remove_at(tree, path);
}

static uint64_t bytes_in(int dir, int depth)
{
	int list = fcntl(dir, F_DUPFD_CLOEXEC, 0);
	DIR *d = list < 0 ? NULL : fdopendir(list);
	if (!d) {
		if (list >= 0)
			close(list);
		return 0;
	}
	uint64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
		else if (S_ISDIR(st.st_mode) && depth < COPY_DEPTH) {
			int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				sum += bytes_in(sub, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
	return sum;
}

uint64_t ckpt_bytes(int tree, const char *path)
{
	int d = openat(tree, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return 0;
	uint64_t n = bytes_in(d, 0);
	close(d);
	return n;
}
