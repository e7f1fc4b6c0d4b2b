/* pin: read-only roots shared between sbx processes (see pin.h).
 *
 * A pin is an ordinary bind mount of an nsfs file, as `ip netns` keeps
 * network namespaces: the mount holds a reference to the namespace, so it
 * lives on with no process in it.  A pin's name is its root's key and the
 * minute it was built in, rather than the age being read from the file: a
 * mount point's own times are hidden under the mount, and rename(2)
 * refuses mount points, so a pin is never replaced in place: a rebuilt
 * root is a new name.
 *
 * Writers (a process that has just built a template) serialise on a lock
 * file; readers take no lock.  A reader lists the directory for the newest
 * pin of its key; one that opens a name at the moment it is being created
 * finds an empty file, not a namespace, and builds its own root; one that
 * opens a pin being removed either still gets the namespace (its fd keeps
 * it alive) or finds no file and builds its own.  Either way it builds
 * rather than uses a wrong root.
 */
#define _GNU_SOURCE
#include "pin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"
#include "util.h"

#define PIN_GEN_NS (60LL * 1000000000)
/* A key no process has pinned anew for this long belongs to a build, a
 * configuration or a tree that is gone: its pins are removed. */
#define PIN_DROP_NS (24 * 3600 * 1000000000LL)

void pin_init(struct pin *p)
{
	*p = (struct pin){ .dir_fd = -1 };
}

void pin_free(struct pin *p)
{
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	pin_init(p);
}

/* A directory fd of ours: root's, with none of the `others` mode bits. */
static bool safe_dir(int fd, mode_t others)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 && !(st.st_mode & others);
}

static int lock_open(int run_fd, const char *sub)
{
	char name[64];
	snprintf(name, sizeof name, "%s.lock", sub);
	int fd = openat(run_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool is_mount_root(int fd)
{
	struct statx stx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0)
		return false;
	/* Kernels before 5.8 cannot tell: then the pins go where they are. */
	return !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

int pin_rundir(const char *sub)
{
	if (geteuid() != 0)
		return -1;
	if (mkdir(SBX_RUNDIR, 0755) < 0 && errno != EEXIST)
		return -1;
	int run_fd = open(SBX_RUNDIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!safe_dir(run_fd, 022)) {
		if (run_fd >= 0)
			close(run_fd);
		return -1;
	}
	if (mkdirat(run_fd, sub, 0700) < 0 && errno != EEXIST) {
		close(run_fd);
		return -1;
	}
	int fd = openat(run_fd, sub, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && !is_mount_root(fd)) {
		/* Once per boot (and mount namespace): make it a mount of its
		 * own, private, under the lock so that two processes do not
		 * stack two. */
		close(fd);
		int lk = lock_open(run_fd, sub);
		fd = openat(run_fd, sub, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (lk >= 0 && safe_dir(fd, 077) && !is_mount_root(fd)) {
			char path[128];
			snprintf(path, sizeof path, "%s/%s", SBX_RUNDIR, sub);
			if (mount(path, path, NULL, MS_BIND, NULL) == 0 && mount(NULL, path, NULL, MS_PRIVATE, NULL) == 0) {
				close(fd);
				fd = openat(run_fd, sub, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			} else {
				close(fd);
				fd = -1;
			}
		}
		if (lk >= 0)
			close(lk);
	}
	close(run_fd);
	if (!safe_dir(fd, 077)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The directory, at the first pin looked up or put. */
static bool usable(struct pin *p)
{
	if (p->state == 0) {
		p->dir_fd = pin_rundir("roots");
		p->state = p->dir_fd >= 0 ? 1 : -1;
	}
	return p->state > 0;
}

/* A string with its length first, so that two lists cannot run into the
 * same bytes. */
static void put_str(struct sha256 *h, const char *str)
{
	uint64_t n = str ? strlen(str) : 0;
	sha256_part(h, &n, sizeof n);
	sha256_str(h, str);
}

/* What identifies a tree or file a root is made from: a replaced
 * directory (a re-extracted image) or file is another inode; a file
 * renamed into a directory (how package managers and ldconfig install)
 * changes its ctime.  What changes inside a directory the root binds is
 * seen through the bind; what the root copies or binds by inode is what
 * this covers.  lstat: a symbolic link is copied as a link, and a changed
 * link is a new inode. */
static void put_tree(struct sha256 *h, const char *rootfs, const char *sub)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof path, "%s%s", rootfs ? rootfs : "", sub);
	uint64_t id[4] = { 0 };
	if (lstat(path, &st) == 0) {
		id[0] = st.st_dev, id[1] = st.st_ino;
		id[2] = (uint64_t)st.st_ctim.tv_sec, id[3] = (uint64_t)st.st_ctim.tv_nsec;
	}
	put_str(h, sub);
	sha256_part(h, id, sizeof id);
}

/* The trees ns_build_root mirrors from the host (or rootfs). */
static const char *const tops[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", NULL };

static void put_hex(struct sha256 *h, char *out, size_t n)
{
	char hex[65];
	sha256_final_hex(h, hex);
	memcpy(out, hex, n);
	out[n] = 0;
}

void pin_key(struct pin *p, bool network, const char *rootfs, char *const *etc, char *const *binds,
	     char key[PIN_KEY_HEX + 1])
{
	struct stat st;
	if (!p->exe_known && stat("/proc/self/exe", &st) == 0) {
		p->exe[0] = st.st_dev, p->exe[1] = st.st_ino, p->exe[2] = (uint64_t)st.st_size;
		p->exe[3] = (uint64_t)st.st_mtim.tv_sec, p->exe[4] = (uint64_t)st.st_mtim.tv_nsec;
		p->exe_known = true;
	}
	/* The first half names the configuration: what a root is asked to
	 * be.  The second, what the files are now. */
	struct sha256 h;
	sha256_init(&h);
	put_str(&h, "sbx-root-3");
	sha256_part(&h, p->exe, sizeof p->exe);
	sha256_part(&h, &network, sizeof network);
	put_str(&h, rootfs);
	for (char *const *e = etc; e && *e; e++)
		put_str(&h, *e);
	put_str(&h, "--binds");
	for (char *const *b = binds; b && *b; b++)
		put_str(&h, *b);
	put_hex(&h, key, PIN_KEY_HEX / 2);
	sha256_init(&h);
	for (int i = 0; tops[i]; i++)
		put_tree(&h, rootfs, tops[i]);
	if (network)
		put_tree(&h, "", "/etc/resolv.conf");
	/* Each entry's own identity too: a file in a subdirectory of /etc
	 * replaced by rename changes that subdirectory, not /etc.  Patterns
	 * are covered by their directory. */
	for (char *const *e = etc; e && *e; e++) {
		char sub[4096];
		snprintf(sub, sizeof sub, "/etc/%s", *e);
		if (!strpbrk(*e, "*?["))
			put_tree(&h, rootfs, sub);
	}
	for (char *const *b = binds; b && *b; b++)
		put_tree(&h, rootfs, *b);
	put_hex(&h, key + PIN_KEY_HEX / 2, PIN_KEY_HEX / 2);
}

/* Is path at or below dir? */
static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n] || (n == 1 && dir[0] == '/'));
}

void pin_mounts(const char *rootfs, char *const *binds, char out[PIN_MNT_HEX + 1])
{
	struct sha256 h;
	sha256_init(&h);
	put_str(&h, "sbx-mounts-1");
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	while (f && getline(&line, &cap, f) > 0) {
		/* "id parent maj:min root mountpoint ...": the mount's id (a new
		 * mount, even in the same place, has another) and where. */
		char *save, *id = strtok_r(line, " ", &save), *point = NULL;
		for (int i = 1; id && i <= 4; i++)
			point = strtok_r(NULL, " ", &save);
		if (!point)
			continue;
		bool ours = false;
		char dir[4096];
		for (int i = 0; tops[i] && !ours; i++) {
			snprintf(dir, sizeof dir, "%s%s", rootfs ? rootfs : "", tops[i]);
			ours = below(point, dir);
		}
		for (char *const *b = binds; b && *b && !ours; b++) {
			snprintf(dir, sizeof dir, "%s%s", rootfs ? rootfs : "", *b);
			ours = below(point, dir);
		}
		if (ours) {
			put_str(&h, id);
			put_str(&h, point);
		}
	}
	free(line);
	if (f)
		fclose(f);
	else
		put_str(&h, "unreadable");
	put_hex(&h, out, PIN_MNT_HEX);
}

static int64_t now_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* A pin by name: what is opened there must be a mount namespace. */
static int open_pin(struct pin *p, const char *name)
{
	int fd = openat(p->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != NSFS_MAGIC || ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* "<32 hex>-<minute>": ours; anything else in the directory is left be. */
static bool parse_name(const char *s, char key[PIN_KEY_HEX + 1], long long *gen)
{
	for (int i = 0; i < PIN_KEY_HEX; i++)
		if (!s[i] || !strchr("0123456789abcdef", s[i]))
			return false;
	if (s[PIN_KEY_HEX] != '-' || !s[PIN_KEY_HEX + 1])
		return false;
	char *end;
	errno = 0;
	*gen = strtoll(s + PIN_KEY_HEX + 1, &end, 10);
	memcpy(key, s, PIN_KEY_HEX);
	key[PIN_KEY_HEX] = 0;
	return !errno && !*end && *gen >= 0;
}

/* A pin's mount digest (pin_mounts when it was built), kept beside it as
 * NAME.m; "" when missing or not root's. */
static void read_mounts(struct pin *p, const char *name, char mounts[PIN_MNT_HEX + 1], int64_t *vouched_ns)
{
	char side[PIN_NAME_MAX + 4];
	snprintf(side, sizeof side, "%s.m", name);
	mounts[0] = 0;
	int fd = openat(p->dir_fd, side, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	    util_read_full(fd, mounts, PIN_MNT_HEX) == PIN_MNT_HEX) {
		mounts[PIN_MNT_HEX] = 0;
		*vouched_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	} else
		mounts[0] = 0;
	close(fd);
}

void pin_vouch(struct pin *p)
{
	char side[PIN_NAME_MAX + 4];
	if (p->state <= 0 || !p->found[0])
		return;
	snprintf(side, sizeof side, "%s.m", p->found);
	utimensat(p->dir_fd, side, NULL, AT_SYMLINK_NOFOLLOW);
}

int pin_get(struct pin *p, const char *key, int64_t *age_ns, int64_t *checked_ns, char mounts[PIN_MNT_HEX + 1])
{
	p->found[0] = 0;
	if (!usable(p))
		return -1;
	DIR *d = util_opendirat(p->dir_fd);
	if (!d)
		return -1;
	/* (a name from a clock since set back is not trusted: it would win
	 * every lookup and outlive every removal) */
	long long best = -1, now = (long long)(now_ns() / PIN_GEN_NS);
	struct dirent *e;
	while ((e = readdir(d))) {
		char k[PIN_KEY_HEX + 1];
		long long g;
		if (parse_name(e->d_name, k, &g) && !strcmp(k, key) && g > best && g <= now + 1)
			best = g;
	}
	closedir(d);
	if (best < 0)
		return -1;
	char name[PIN_NAME_MAX];
	snprintf(name, sizeof name, "%s-%lld", key, best);
	int fd = open_pin(p, name);
	int64_t now_t = now_ns(), vouched = (int64_t)best * PIN_GEN_NS;
	mounts[0] = 0;
	if (fd >= 0) {
		read_mounts(p, name, mounts, &vouched);
		snprintf(p->found, sizeof p->found, "%s", name);
	}
	int64_t age = now_t - (int64_t)best * PIN_GEN_NS;
	*age_ns = age > 0 ? age : 0;
	*checked_ns = now_t - vouched > 0 ? now_t - vouched : 0;
	return fd;
}

static void unpin(struct pin *p, const char *name)
{
	char path[320];
	snprintf(path, sizeof path, "/proc/self/fd/%d/%s", p->dir_fd, name);
	umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	unlinkat(p->dir_fd, name, 0);
	snprintf(path, sizeof path, "%.*s.m", PIN_NAME_MAX, name);
	unlinkat(p->dir_fd, path, 0);
}

struct kept {
	long long gen;
	char name[PIN_NAME_MAX];
};

static int by_gen(const void *a, const void *b)
{
	long long x = ((const struct kept *)a)->gen, y = ((const struct kept *)b)->gen;
	return x < y ? -1 : x > y;
}

/* Pins of this configuration (the key's first half) older than the one
 * just made, whatever their files' state; any nobody renewed for a day
 * or stamped later than now (a clock set back); and the oldest beyond
 * PIN_MAX (each holds a root's mount namespace, and the host mounts below
 * its trees busy: a machine that runs many configurations, such as a test
 * suite, would otherwise hold a day of them).  A reader that listed a name
 * a moment ago and opens it now finds none and builds its own root. */
#define PIN_MAX 32
static void remove_old(struct pin *p, const char *key, long long gen)
{
	DIR *d = util_opendirat(p->dir_fd);
	if (!d)
		return;
	long long drop = gen - PIN_DROP_NS / PIN_GEN_NS;
	/* (every pin_put trims, so more than this many are left only by
	 * another program: trimmed over several puts) */
	struct kept left[4 * PIN_MAX];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char k[PIN_KEY_HEX + 1];
		long long g;
		if (!parse_name(e->d_name, k, &g))
			continue;
		bool config = !strncmp(k, key, PIN_KEY_HEX / 2), mine = !strcmp(k, key);
		if (mine && g == gen)
			continue;
		if ((config && g <= gen) || g < drop || g > gen + 1)
			unpin(p, e->d_name);
		else if (n < sizeof left / sizeof *left) {
			left[n].gen = g;
			snprintf(left[n].name, sizeof left[n].name, "%.63s", e->d_name); /* (parse_name: 53 at most) */
			n++;
		}
	}
	closedir(d);
	/* (the pin just made is the newest, and not in the list) */
	qsort(left, n, sizeof *left, by_gen);
	for (size_t i = 0; n + 1 > PIN_MAX && i < n + 1 - PIN_MAX; i++)
		unpin(p, left[i].name);
}

void pin_put(struct pin *p, const char *key, int mnt_fd, const char *mounts)
{
	if (!usable(p) || strlen(key) != PIN_KEY_HEX || strlen(mounts) != PIN_MNT_HEX)
		return;
	long long gen = (long long)(now_ns() / PIN_GEN_NS);
	char name[PIN_NAME_MAX], side[PIN_NAME_MAX + 4], tmp[PIN_NAME_MAX + 8];
	snprintf(name, sizeof name, "%s-%lld", key, gen);
	snprintf(side, sizeof side, "%s.m", name);
	snprintf(tmp, sizeof tmp, "%s.m.new", name);
	int run_fd = open(SBX_RUNDIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int lk = safe_dir(run_fd, 022) ? lock_open(run_fd, "roots") : -1;
	if (run_fd >= 0)
		close(run_fd);
	if (lk < 0)
		return;
	/* The name first (another process may have pinned this minute), then
	 * the digest, then the pin: a reader that finds the pin without its
	 * digest trusts it only while it is young (box_tmpl.c). */
	bool pinned = false;
	int f = openat(p->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f >= 0) {
		close(f);
		int m = openat(p->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (m >= 0) {
			bool ok = util_write_all(m, mounts, PIN_MNT_HEX) == 0;
			close(m);
			if (!ok || renameat(p->dir_fd, tmp, p->dir_fd, side) < 0)
				unlinkat(p->dir_fd, tmp, 0);
		}
		char src[64], dst[128];
		snprintf(src, sizeof src, "/proc/self/fd/%d", mnt_fd);
		snprintf(dst, sizeof dst, "/proc/self/fd/%d/%s", p->dir_fd, name);
		pinned = mount(src, dst, NULL, MS_BIND, NULL) == 0;
		if (!pinned) {
			unlinkat(p->dir_fd, name, 0);
			unlinkat(p->dir_fd, side, 0);
		}
	} else
		pinned = errno == EEXIST; /* another process's, this minute */
	/* Nothing older goes unless a newer one is there. */
	if (pinned)
		remove_old(p, key, gen);
	close(lk);
}
