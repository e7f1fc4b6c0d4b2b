#define _GNU_SOURCE
#include "ns.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

/* Where the new root is assembled before pivot_root.  Any existing
 * directory will do: the mount namespace is private. */
static const char *const bases[] = { "/tmp", "/mnt", "/run", "/var/tmp", NULL };

static const char passwd[] =
	"root:x:0:0:root:/root:/usr/sbin/nologin\n"
	"sandbox:x:1000:1000:sandbox:" NS_HOME ":/bin/sh\n"
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group[] = "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n";
static const char hosts[] =
	"127.0.0.1\tlocalhost\n"
	"::1\tlocalhost ip6-localhost ip6-loopback\n"
	"127.0.1.1\tsandbox\n";
static const char nsswitch[] =
	"passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
	"networks: files\nprotocols: files\nservices: files\nethers: files\nrpc: files\n";

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

/* Clone the tree at (dfd, path) and attach it at dst with attrs set
 * recursively.  dfd/path may be a detached mount (AT_EMPTY_PATH). */
static int attach(int dfd, const char *path, const char *dst, uint64_t attrs, bool recursive)
{
	unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
	if (!*path)
		flags |= AT_EMPTY_PATH;
	int fd = open_tree(dfd, path, flags);
	if (fd < 0)
		return -1;
	struct mount_attr a = { .attr_set = attrs };
	if (attrs && mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a, sizeof a) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	int rc = move_mount(fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

static int write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -1;
	int rc = util_write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* Make dst (relative to the new root, which is the cwd) a mount point of
 * the same kind as src: a directory or an empty file. */
static int make_point(const char *dst, bool dir)
{
	if (dir)
		return mkdir(dst, 0755) < 0 && errno != EEXIST ? -1 : 0;
	int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* mkdir -p of the parents of rel, inside the new root. */
static int make_parents(const char *rel)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", rel);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return 0;
}

/* Mirror one host entry (src, absolute on the host side) at rel: symlinks
 * are recreated, directories and files bound read-only.  Missing: skipped. */
static int mirror(const char *src, const char *rel, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(src, &st) < 0)
		return 0;
	if (make_parents(rel) < 0)
		return fail(err, errlen, "mkdir for %s", rel);
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlink(src, target, sizeof target - 1);
		if (n < 0)
			return fail(err, errlen, "readlink %s", src);
		target[n] = 0;
		if (symlink(target, rel) < 0 && errno != EEXIST)
			return fail(err, errlen, "symlink %s", rel);
		return 0;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	if (make_point(rel, S_ISDIR(st.st_mode)) < 0)
		return fail(err, errlen, "mount point %s", rel);
	if (attach(AT_FDCWD, src, rel, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true) < 0)
		return fail(err, errlen, "bind %s", src);
	return 0;
}

int ns_build_root(const struct ns_root *r, char *err, size_t errlen)
{
	char src[4096], rel[4096];
	umask(0);
	/* Nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return fail(err, errlen, "make / private");
	const char *base = NULL;
	for (int i = 0; bases[i] && !base; i++)
		if (mount("sbx-root", bases[i], "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755") == 0)
			base = bases[i];
	if (!base)
		return fail(err, errlen, "mount the root tmpfs");
	if (chdir(base) < 0)
		return fail(err, errlen, "chdir %s", base);

	/* The host's (or rootfs's) programs and libraries. */
	static const char *const top[] = { "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL };
	for (int i = 0; top[i]; i++) {
		snprintf(src, sizeof src, "%s/%s", r->rootfs, top[i]);
		if (mirror(src, top[i], err, errlen) < 0)
			return -1;
	}

	/* /etc: generated identity and name service files, then the listed
	 * host entries. */
	if (mkdir("etc", 0755) < 0)
		return fail(err, errlen, "mkdir etc");
	if (write_text("etc/passwd", passwd, 0644) < 0 || write_text("etc/group", group, 0644) < 0 ||
	    write_text("etc/hosts", hosts, 0644) < 0 || write_text("etc/hostname", "sandbox\n", 0644) < 0 ||
	    write_text("etc/nsswitch.conf", nsswitch, 0644) < 0 ||
	    /* no passwords, but the file programs expect, unreadable as on a
	     * host: getspnam fails with EACCES, not "no such file" */
	    write_text("etc/shadow", "", 0) < 0 || write_text("etc/gshadow", "", 0) < 0)
		return fail(err, errlen, "write /etc files");
	if (r->network) {
		if (mirror("/etc/resolv.conf", "etc/resolv.conf", err, errlen) < 0)
			return -1;
	} else if (write_text("etc/resolv.conf", "# no network in this sandbox\n", 0644) < 0)
		return fail(err, errlen, "write /etc/resolv.conf");
	for (char *const *e = r->etc; e && *e; e++) {
		snprintf(src, sizeof src, "%s/etc/%s", r->rootfs, *e);
		if (!strpbrk(*e, "*?[")) {
			snprintf(rel, sizeof rel, "etc/%s", *e);
			if (mirror(src, rel, err, errlen) < 0)
				return -1;
			continue;
		}
		/* A pattern ("python3*", "java-*"): the runtimes' own /etc
		 * directories, whose names carry versions. */
		glob_t g;
		size_t skip = strlen(src) - strlen(*e);
		int rc = glob(src, GLOB_NOSORT, NULL, &g);
		for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
			snprintf(rel, sizeof rel, "etc/%s", g.gl_pathv[i] + skip);
			if (mirror(g.gl_pathv[i], rel, err, errlen) < 0)
				rc = -1;
		}
		globfree(&g);
		if (rc == -1)
			return -1;
	}
	for (char *const *b = r->binds; b && *b; b++) {
		snprintf(src, sizeof src, "%s%s", r->rootfs, *b);
		if (mirror(src, *b + 1, err, errlen) < 0)
			return -1;
	}

	/* /dev: the harmless devices; no host tty. */
	if (mkdir("dev", 0755) < 0)
		return fail(err, errlen, "mkdir dev");
	static const char *const devs[] = { "null", "zero", "full", "random", "urandom", NULL };
	for (int i = 0; devs[i]; i++) {
		snprintf(src, sizeof src, "/dev/%s", devs[i]);
		snprintf(rel, sizeof rel, "dev/%s", devs[i]);
		if (make_point(rel, false) < 0 || attach(AT_FDCWD, src, rel, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false) < 0)
			return fail(err, errlen, "bind %s", src);
	}
	/* /dev/pts gets each sandbox's own devpts (ns_enter_root). */
	if (mkdir("dev/pts", 0755) < 0 || symlink("pts/ptmx", "dev/ptmx") < 0)
		return fail(err, errlen, "mkdir /dev/pts");
	if (symlink("/proc/self/fd", "dev/fd") < 0 || symlink("/proc/self/fd/0", "dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", "dev/stdout") < 0 || symlink("/proc/self/fd/2", "dev/stderr") < 0)
		return fail(err, errlen, "dev symlinks");

	/* Mount points for the job's own mounts (ns_attach_work). */
	if (mkdir("tmp", 0755) < 0 || mkdir("home", 0755) < 0 || mkdir("home/sandbox", 0755) < 0 ||
	    mkdir("dev/shm", 0755) < 0 || mkdir("scratch", 0755) < 0)
		return fail(err, errlen, "mount points");
	/* The other places ordinary programs write temporary files and locks
	 * (mktemp -p /var/tmp, flock in /run/lock): the run's own /tmp, so
	 * they cost no mount and hold nothing past the run.  A language's
	 * bind may have made them already. */
	static const char *const also_tmp[] = { "var/tmp", "run/lock", NULL };
	for (int i = 0; also_tmp[i]; i++)
		if (make_parents(also_tmp[i]) < 0 || (symlink("/tmp", also_tmp[i]) < 0 && errno != EEXIST))
			return fail(err, errlen, "link /%s to /tmp", also_tmp[i]);
	if (symlink(NS_DEPS_NODE_MODULES, &NS_NODE_MODULES[1]) < 0 && errno != EEXIST)
		return fail(err, errlen, "link " NS_NODE_MODULES);

	/* The procfs of the builder's own, empty pid namespace: each sandbox
	 * mounts its own over it (ns_enter_root), which the kernel allows only
	 * where a procfs is already fully visible, and this one shows no
	 * process once the builder is gone. */
	if (mkdir("proc", 0555) < 0 || mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return fail(err, errlen, "mount /proc");

	/* Swap roots: pivot_root(".", ".") stacks the old root on top of the
	 * new one; detaching it leaves only the new tree. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return fail(err, errlen, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return fail(err, errlen, "detach the old root");
	if (chdir("/") < 0)
		return fail(err, errlen, "chdir /");
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
	if (mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof ro) < 0)
		return fail(err, errlen, "make / read-only");
	return 0;
}

int ns_build_holder(char *err, size_t errlen)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return fail(err, errlen, "make / private");
	const char *base = NULL;
	for (int i = 0; bases[i] && !base; i++)
		if (mount("sbx-holder", bases[i], "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,nr_inodes=4096,mode=0700") == 0)
			base = bases[i];
	if (!base)
		return fail(err, errlen, "mount the holder's tmpfs");
	/* Nothing else: the host's mounts are not kept alive by a copy here. */
	if (chdir(base) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return fail(err, errlen, "make the holder's tmpfs its root");
	return 0;
}

int ns_enter_root(char *err, size_t errlen)
{
	/* Modes below are meant as written (1777 for /tmp). */
	umask(0);
	/* A private devpts instance: programs (test suites, `script`, expect)
	 * may open pseudo-terminals of their own.  None of them is a terminal
	 * of the host, of the caller or of another sandbox, so TIOCSTI on one
	 * can only reach the sandbox's own programs; the program itself still
	 * has no controlling terminal (setsid in box_init.c). */
	/* At most 64 of them: the kernel's pool of ptys (kernel.pty.max) is
	 * shared by every devpts instance of the host. */
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,max=64") < 0)
		return fail(err, errlen, "mount /dev/pts");
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return fail(err, errlen, "mount /proc");
	if (chdir("/") < 0)
		return fail(err, errlen, "chdir /");
	return 0;
}

/* Bind name (in the directory dfd) over itself, with attrs set and clr
 * cleared, recursively with rec; want: the file type it must be (S_IFREG,
 * S_IFDIR).  The file is opened once, without following a link, and that
 * very file is cloned, given its flags while still detached, and attached
 * onto itself: a name swapped for a link meanwhile changes nothing.  1 if
 * bound (with keep, *keep is then the bind's fd, the caller's), 0 if it is
 * missing or of another type, -1 on error. */
static int bind_over_itself(int dfd, const char *name, mode_t want, uint64_t attrs, uint64_t clr, bool rec, int *keep)
{
	/* A path's directories may be links the compile stage planted too:
	 * none is followed (ELOOP: a link, left alone like a missing name). */
	int fd = util_open_beneath(dfd, name, O_PATH, 0);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != want) {
		if (fd >= 0)
			close(fd);
		return errno == ENOENT || errno == ELOOP || fd >= 0 ? 0 : -1;
	}
	unsigned rflag = rec ? AT_RECURSIVE : 0;
	int m = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rflag);
	struct mount_attr a = { .attr_set = attrs, .attr_clr = clr };
	int rc = m < 0 || mount_setattr(m, "", AT_EMPTY_PATH | rflag, &a, sizeof a) < 0 ||
			 move_mount(m, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0
		 ? -1 : 1;
	int e = errno;
	if (rc > 0 && keep)
		*keep = m;
	else if (m >= 0)
		close(m);
	close(fd);
	errno = e;
	return rc;
}

/* Bind the declared outputs (paths in the scratch) read-only+exec over
 * their own names in the noexec working directory.  A bound file cannot be
 * written (EROFS), replaced or removed (EBUSY), so what runs is what the
 * compiler made; a name that is missing, or not a regular file (a link the
 * compile stage planted), is left alone. */
static int bind_executables(const struct ns_work *w, int scratch_fd, int own_fd, int *exe_fd, char *err, size_t errlen)
{
	for (int n = 0; w->outputs[n] && n < NS_MAX_OUTPUTS; n++) {
		const char *out = w->outputs[n];
		/* Beneath the run's own directory: from its mount (a path is
		 * resolved within one mount, RESOLVE_NO_XDEV). */
		const char *mine = own_fd >= 0 ? ns_beneath(w->own, out) : NULL;
		bool exe = mine && w->exe && !strcmp(out, w->exe) && *exe_fd == -1;
		if (exe)
			*exe_fd = NS_EXE_MISSING; /* until it is bound */
		/* From a noexec workspace the clone is noexec too: clear it. */
		if (bind_over_itself(mine ? own_fd : scratch_fd, mine ? mine : out, S_IFREG,
				     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, false,
				     exe ? exe_fd : NULL) < 0)
			return fail(err, errlen, "bind the executable %s", out);
	}
	return 0;
}

/* The run's own directory or program file: its mount (the tmpfs, or a
 * file of it; flagged like the scratch) over the name in the workspace,
 * which must be of the same type and is opened without following a link
 * (another program of the session may have put anything there since the
 * supervisor made it).  own_fd is then that mount, attached. */
static int attach_own(int here, int own_fd, const char *own, uint64_t attrs, char *err, size_t errlen)
{
	struct mount_attr a = { .attr_set = attrs };
	struct stat want, st;
	if (fstat(own_fd, &want) < 0)
		return fail(err, errlen, "stat the run's own %s", own);
	int at = openat(here, own, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (at >= 0 && fstat(at, &st) == 0 && (st.st_mode & S_IFMT) != (want.st_mode & S_IFMT)) {
		close(at);
		at = -1;
		errno = S_ISDIR(want.st_mode) ? ENOTDIR : EISDIR;
	}
	if (at < 0)
		return fail(err, errlen, "find %s in the workspace (another program of the session removed or replaced it)",
			    own);
	/* Its flags where it lands, like the scratch's: the supervisor's
	 * detached mount is not ours to change before. */
	int rc = move_mount(own_fd, "", at, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0 ||
		 mount_setattr(own_fd, "", AT_EMPTY_PATH, &a, sizeof a) < 0;
	int e = errno;
	close(at);
	errno = e;
	return rc ? fail(err, errlen, "attach the run's own %s", own) : 0;
}

int ns_attach_work(struct ns_work *w, char *err, size_t errlen)
{
	w->exe_fd = -1;
	/* One tmpfs, size-limited and noexec, for everything a program may
	 * write besides scratch: its pages are charged to the run's memory
	 * cgroup, so a fill costs memory, never the host's disk. */
	char opt[32], ino[32];
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return fail(err, errlen, "fsopen tmpfs");
	snprintf(opt, sizeof opt, "%llu", (unsigned long long)w->tmpfs_bytes);
	snprintf(ino, sizeof ino, "%llu", (unsigned long long)ns_tmpfs_inodes(w->tmpfs_bytes));
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", opt, 0) < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", ino, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		close(fs);
		return fail(err, errlen, "configure the tmpfs");
	}
	int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	close(fs);
	if (mnt < 0)
		return fail(err, errlen, "fsmount tmpfs");
	/* Its root goes on /dev/shm, under the shm directory's own mount
	 * (mounted last, over it): a detached mount is unmounted when its fd
	 * is closed, and every unmount waits for an expedited RCU grace
	 * period (0.2-2 ms on a busy VM).  Attached, it goes with the
	 * namespace, in the one grace period init's exit pays anyway. */
	int rc = mkdirat(mnt, "tmp", 01777) < 0 || mkdirat(mnt, "shm", 01777) < 0 || mkdirat(mnt, "home", 0755) < 0 ||
		 fchownat(mnt, "home", NS_UID, NS_UID, 0) < 0 ||
		 move_mount(mnt, "", AT_FDCWD, "/dev/shm", MOVE_MOUNT_F_EMPTY_PATH) < 0;
	if (!rc && (attach(AT_FDCWD, "/dev/shm/tmp", "/tmp", 0, false) < 0 ||
		    attach(AT_FDCWD, "/dev/shm/home", NS_HOME, 0, false) < 0 ||
		    attach(AT_FDCWD, "/dev/shm/shm", "/dev/shm", 0, false) < 0))
		rc = 1;
	int e = errno;
	close(mnt);
	errno = e;
	if (rc)
		return fail(err, errlen, "set up /tmp, $HOME and /dev/shm");
	if (w->scratch_fd >= 0) {
		/* The scratch is a detached mount of our own (box_scratch.c makes one
		 * per stage, see box_scratch_clone): it is moved in, and gets its
		 * flags where it lands.  Cloning it here instead works only
		 * since Linux 6.15, and only for a tree made by fsmount. */
		struct mount_attr a = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (w->work_exec ? 0 : MOUNT_ATTR_NOEXEC) };
		if (move_mount(w->scratch_fd, "", AT_FDCWD, NS_WORKDIR, MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
		    mount_setattr(AT_FDCWD, NS_WORKDIR, 0, &a, sizeof a) < 0)
			return fail(err, errlen, "attach the scratch directory");
		int here = open(NS_WORKDIR, O_PATH | O_DIRECTORY | O_CLOEXEC);
		bool own = w->own_fd >= 0 && w->own;
		int brc = here < 0 ? fail(err, errlen, "open " NS_WORKDIR) : 0;
		if (!brc && own)
			brc = attach_own(here, w->own_fd, w->own, a.attr_set, err, errlen);
		if (!brc && w->outputs)
			brc = bind_executables(w, here, own ? w->own_fd : -1, &w->exe_fd, err, errlen);
		if (!brc && w->deps && bind_over_itself(here, NS_DEPS, S_IFDIR, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
							MOUNT_ATTR_NOEXEC, true, NULL) < 0)
			brc = fail(err, errlen, "bind the installed packages");
		if (here >= 0)
			close(here);
		if (brc < 0)
			return -1;
	}
	if (chdir(NS_WORKDIR) < 0)
		return fail(err, errlen, "chdir " NS_WORKDIR);
	return 0;
}

int ns_loopback_up(char *err, size_t errlen)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return fail(err, errlen, "socket for lo");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		close(s);
		return fail(err, errlen, "lo flags");
	}
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	int rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	int e = errno;
	close(s);
	errno = e;
	return rc < 0 ? fail(err, errlen, "bring lo up") : 0;
}
