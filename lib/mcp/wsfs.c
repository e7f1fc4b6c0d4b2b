/* wsfs: the filesystem beneath a session's workspace (see wsfs.h).
 *
 * A root server's workspace, step by step: a sparse image file of the
 * quota's size; mkfs.btrfs (or mke2fs) makes a filesystem in it (ext4
 * without a journal: a workspace does not outlive its server, so there is
 * nothing to recover); a free loop device takes the file with autoclear and
 * direct I/O (the image's own pages are not cached twice); the image is
 * unlinked; the device is mounted; the lost+found mke2fs made is removed.
 * btrfs comes first because its snapshots are what makes a checkpoint
 * (ckpt.h) cost the same whatever the workspace holds; below its least
 * size (16 MiB, mixed block groups), or where the kernel will not mount it,
 * ext4, whose checkpoints are copies.
 */
#define _GNU_SOURCE
#include "wsfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "util.h"

struct wsfs {
	enum wsfs_kind kind;
	bool root;
	char note[320];
};

/* A program of e2fsprogs' or btrfs-progs', where Debian puts it. */
static const char *sbin_path(const char *name, char *buf, size_t len)
{
	static const char *const dirs[] = { "/usr/sbin", "/sbin" };
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(buf, len, "%s/%s", dirs[i], name);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

/* btrfs's least size with mixed block groups. */
#define BTRFS_MIN ((uint64_t)16 << 20)

static void note_tmpfs(char *note, size_t len, const char *why)
{
	snprintf(note, len,
		 "the workspace is a tmpfs (%s): the files a run writes there count against its memory limit", why);
}

/* As an ordinary user: a user namespace in which our uid and gid map to
 * themselves (so that sbx-run, started from here, is still an ordinary
 * user and makes its own sandboxes as one), with a mount namespace whose
 * mounts the host does not see.  The sessions' directory base becomes a
 * shared mount of its own there: sbx-run, which may have started before a
 * workspace was mounted, copies our mounts into a namespace of its own,
 * where that one stays a slave of ours (box_sys.c), so that the workspaces we
 * mount later reach it. */
static int enter_private_ns(const char *base, char *err, size_t errlen)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		snprintf(err, errlen, "no user namespace for the server: %s", strerror(errno));
		return -1;
	}
	/* Past the unshare there is no way back: a server whose ids are not
	 * mapped could create no file, so it stops here. */
	char map[64];
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (util_write_text(AT_FDCWD, "/proc/self/setgroups", "deny") < 0 || util_write_text(AT_FDCWD, "/proc/self/uid_map", map) < 0)
		util_die(EXIT_STORE, "cannot map the server's uid in its user namespace: %s", strerror(errno));
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (util_write_text(AT_FDCWD, "/proc/self/gid_map", map) < 0)
		util_die(EXIT_STORE, "cannot map the server's gid in its user namespace: %s", strerror(errno));
	/* The host's mounts still reach us; ours never reach the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
		snprintf(err, errlen, "cannot make the server's mounts its own: %s", strerror(errno));
		return -1;
	}
	if (mount(base, base, NULL, MS_BIND, NULL) < 0 || mount(NULL, base, NULL, MS_SHARED, NULL) < 0) {
		snprintf(err, errlen, "cannot share %s with the sandboxes: %s", base, strerror(errno));
		return -1;
	}
	return 0;
}

struct wsfs *wsfs_new(const char *base, bool docker)
{
	struct wsfs *w = util_xalloc(sizeof *w);
	w->root = geteuid() == 0;
	char why[200] = "";
	if (w->root) {
		char path[64];
		w->kind = sbin_path("mkfs.btrfs", path, sizeof path) ? WSFS_BTRFS : WSFS_EXT4;
		if (access("/dev/loop-control", R_OK | W_OK) < 0)
			snprintf(why, sizeof why, "no loop devices here: /dev/loop-control: %s", strerror(errno));
		else if (w->kind == WSFS_EXT4 && !sbin_path("mke2fs", path, sizeof path))
			snprintf(why, sizeof why, "no mke2fs: install e2fsprogs");
		if (*why) {
			w->kind = WSFS_TMPFS;
			note_tmpfs(w->note, sizeof w->note, why);
		}
		return w;
	}
	if (docker) {
		w->kind = WSFS_DIR;
		snprintf(w->note, sizeof w->note,
			 "the workspace's size is not enforced: the docker engine binds it by its path on the host, "
			 "where an ordinary user cannot mount a filesystem (run the server as root for a quota)");
		return w;
	}
	if (enter_private_ns(base, why, sizeof why) < 0) {
		w->kind = WSFS_DIR;
		snprintf(w->note, sizeof w->note, "the workspace's size is not enforced (%s)", why);
		return w;
	}
	w->kind = WSFS_TMPFS;
	note_tmpfs(w->note, sizeof w->note, "an ordinary user's server: the kernel lets it mount no disk filesystem");
	return w;
}

void wsfs_free(struct wsfs *w)
{
	free(w);
}

enum wsfs_kind wsfs_kind(const struct wsfs *w)
{
	return w->kind;
}

const char *wsfs_kind_name(enum wsfs_kind k)
{
#define WSFS_NAME_(kind, name, sep) case kind: return name;
	switch (k) { WSFS_KINDS(WSFS_NAME_) }
#undef WSFS_NAME_
	return "?";
}

const char *wsfs_note(const struct wsfs *w)
{
	return w->note;
}

/* Run a mkfs program (argv[0] a name in /usr/sbin or /sbin) on an image;
 * its message (the last line of its stderr) in err. */
static int run_mkfs(char *const argv[], char *err, size_t errlen)
{
	char path[64];
	if (!sbin_path(argv[0], path, sizeof path)) {
		snprintf(err, errlen, "no %s", argv[0]);
		return -1;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (proc_child_prepare(parent, SIGKILL) < 0 || devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
		    dup2(p[1], 2) < 0 || proc_keep_fds(NULL, 0) < 0)
			_exit(127);
		execv(path, argv);
		dprintf(2, "cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		return -1;
	}
	char msg[512];
	size_t got = 0;
	for (;;) {
		ssize_t r = read(p[0], msg + got, sizeof msg - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof msg - 1) /* keep the end: the message is last */
			memmove(msg, msg + got / 2, got - got / 2), got -= got / 2;
	}
	close(p[0]);
	msg[got] = 0;
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	while (got && (msg[got - 1] == '\n' || msg[got - 1] == ' '))
		msg[--got] = 0;
	const char *last = strrchr(msg, '\n');
	snprintf(err, errlen, "%s failed (%s%d): %.180s", argv[0], WIFEXITED(status) ? "exit status " : "signal ",
		 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), last ? last + 1 : msg);
	return -1;
}

/* mke2fs into image: 4 KiB blocks (a page each), an inode per 8 KiB (the
 * tables take 3 % of the quota), no reserve. */
static int make_ext4(const char *image, uid_t uid, gid_t gid, uint64_t size, char *err, size_t errlen)
{
	(void)size;
	char ext[96];
	/* lazy_itable_init with noinit_itable at the mount: the tables of a
	 * sparse file read as zeros already, nothing need write them. */
	snprintf(ext, sizeof ext, "root_owner=%u:%u,nodiscard,lazy_itable_init=1", (unsigned)uid, (unsigned)gid);
	char *argv[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-i", "8192", "-m", "0", "-O",
			 "^has_journal,^resize_inode", "-E", ext, (char *)image, NULL };
	return run_mkfs(argv, err, errlen);
}

/* mkfs.btrfs into image: no discard (a sparse file's blocks are holes
 * already); mixed block groups below 5 GiB, where separate data and
 * metadata groups would strand space, else one copy of metadata (the
 * image is not kept past the server: a second copy guards nothing).  Its
 * root is root's: the tree's workspaces are below it (ckpt.h). */
static int make_btrfs(const char *image, uid_t uid, gid_t gid, uint64_t size, char *err, size_t errlen)
{
	(void)uid;
	(void)gid;
	char *mixed[] = { "mkfs.btrfs", "-q", "-f", "-K", "-M", (char *)image, NULL };
	char *big[] = { "mkfs.btrfs", "-q", "-f", "-K", "-m", "single", "-d", "single", (char *)image, NULL };
	return run_mkfs(size < ((uint64_t)5 << 30) ? mixed : big, err, errlen);
}

/* A free loop device holding image_fd, autoclear; its fd, or -1 with err.
 * Another process may take the free device first: then another. */
static int attach_loop(int image_fd, char *dev, size_t devlen, char *err, size_t errlen)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		snprintf(err, errlen, "/dev/loop-control: %s", strerror(errno));
		return -1;
	}
	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 16; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			snprintf(err, errlen, "no free loop device: %s", strerror(errno));
			break;
		}
		snprintf(dev, devlen, "/dev/loop%d", n);
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			snprintf(err, errlen, "%s: %s", dev, strerror(errno));
			break;
		}
		struct loop_config lc = { .fd = (unsigned)image_fd };
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
		if (ioctl(fd, LOOP_CONFIGURE, &lc) == 0)
			break;
		int e = errno;
		close(fd);
		fd = -1;
		if (e != EBUSY) {
			snprintf(err, errlen, "%s: LOOP_CONFIGURE: %s", dev, strerror(e));
			break;
		}
		snprintf(err, errlen, "every free loop device was taken by another process first");
	}
	close(ctl);
	return fd;
}

/* Make a filesystem of type fs (by mkfs) in a new image of size bytes, put
 * it on a loop device and mount that on dir. */
static int mount_image(const char *fs, int (*mkfs)(const char *, uid_t, gid_t, uint64_t, char *, size_t),
		       const char *data, const char *dir, const char *image, uint64_t size, uid_t uid, gid_t gid,
		       unsigned long flags, char *err, size_t errlen)
{
	int img = open(image, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (img < 0) {
		snprintf(err, errlen, "cannot create %s: %s", image, strerror(errno));
		return -1;
	}
	char dev[32];
	int loop = -1, rc = -1;
	if (ftruncate(img, (off_t)size) < 0)
		snprintf(err, errlen, "cannot size %s: %s", image, strerror(errno));
	else if (mkfs(image, uid, gid, size, err, errlen) == 0 &&
		 (loop = attach_loop(img, dev, sizeof dev, err, errlen)) >= 0) {
		if (mount(dev, dir, fs, flags, data) < 0)
			snprintf(err, errlen, "cannot mount %s: %s", dev, strerror(errno));
		else
			rc = 0;
	}
	/* The device holds the file now, the mount the device: neither name
	 * nor descriptor is needed any more, and with the last unmount the
	 * device lets go of the file, which then goes too. */
	unlink(image);
	close(img);
	if (loop >= 0)
		close(loop);
	if (rc == 0) {
		char *lf = util_fmt("%s/lost+found", dir);
		rmdir(lf);
		free(lf);
	}
	return rc;
}

static int mount_tmpfs(const char *dir, uint64_t size, uint64_t inodes, uid_t uid, gid_t gid, unsigned long flags,
		       char *err, size_t errlen)
{
	char opt[160];
	snprintf(opt, sizeof opt, "size=%llu,nr_inodes=%llu,mode=0700,uid=%u,gid=%u", (unsigned long long)size,
		 (unsigned long long)inodes, (unsigned)uid, (unsigned)gid);
	if (mount("sbx-session", dir, "tmpfs", flags, opt) < 0) {
		snprintf(err, errlen, "cannot mount the workspace %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

int wsfs_mount(struct wsfs *w, const char *dir, const char *image, uint64_t size, uint64_t inodes, uid_t uid,
	       gid_t gid, bool exec, char *note, size_t notelen, char *err, size_t errlen)
{
	/* An ordinary user's mount is seen by no one but the server, which
	 * runs nothing of it, and the sandboxes, whose user namespaces are
	 * below the server's: there a noexec of ours would be locked, and
	 * workspace_exec could not lift it (box_workspace sets noexec itself
	 * where the key says so). */
	if (!w->root)
		exec = true;
	unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOATIME | (exec ? 0 : MS_NOEXEC);
	snprintf(note, notelen, "%s", w->note);
	switch (w->kind) {
	case WSFS_BTRFS:
		if (size >= BTRFS_MIN) {
			char why[256];
			if (mount_image("btrfs", make_btrfs, NULL, dir, image, size, uid, gid, flags, why, sizeof why) == 0)
				return WSFS_BTRFS;
			/* (said once: the next trees are ext4 from the start) */
			util_warn("btrfs failed, so workspaces are ext4 and checkpoints copies: %s", why);
			w->kind = WSFS_EXT4;
		}
		/* fall through */
	case WSFS_EXT4: {
		char why[256];
		if (mount_image("ext4", make_ext4, "noinit_itable", dir, image, size, uid, gid, flags, why, sizeof why) == 0)
			return WSFS_EXT4;
		util_warn("a tmpfs for the workspace %s: %s", dir, why);
		note_tmpfs(note, notelen, why);
		return mount_tmpfs(dir, size, inodes, uid, gid, flags, err, errlen) == 0 ? WSFS_TMPFS : -1;
	}
	case WSFS_TMPFS:
		return mount_tmpfs(dir, size, inodes, uid, gid, flags, err, errlen) == 0 ? WSFS_TMPFS : -1;
	case WSFS_DIR:
		break;
	}
	return WSFS_DIR;
}
