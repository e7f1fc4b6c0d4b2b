/* The guest's init: pid 1 of a Debian kernel booted by t/guest/run.
 *
 * Theory of operation
 * -------------------
 * The kernel and its modules come from Debian's linux-image package; this
 * program is the whole initramfs besides the modules (linked statically:
 * there is no libc in it).  It loads the modules t/guest/run chose (9p over
 * virtio, overlayfs, loop devices and ext4) in the order its
 * modules/order lists, and builds a root for the test suite:
 *
 *   /         overlayfs: the host's / (9p "hostroot", read-only at the
 *             host's end) below, a tmpfs above, so the guest may write
 *             anywhere (/etc, /var/lib) and nothing reaches the host;
 *   /tmp /run fresh tmpfs, as on a booted system;
 *   /dev /proc /sys  the guest's own, cgroup v2 alone at /sys/fs/cgroup,
 *             every controller the kernel has enabled at its top;
 *   SBX_GUEST_DIR  the one read-write share ("job"): the command to run,
 *             and where its exit status goes;
 *   sbx.project  the project directory (share "project", read-only at the
 *             host's end) at its own path, under an overlay of its own.
 *
 * It then runs "/bin/sh SBX_GUEST_DIR/cmd" in the project directory (the
 * kernel command line's sbx.cwd), with stdin from /dev/null and stdout and
 * stderr on a pipe that it copies to the second serial port (or the
 * port the kernel command line's sbx.out names), which t/guest/run
 * connects to its own stdout (the first is the kernel's console, kept in
 * a log).  When the
 * command ends, everything else is killed, its status is written to
 * SBX_GUEST_DIR/rc and the guest powers off.  Any failure of its own set-up
 * is reported on the console and in SBX_GUEST_DIR/error when the share
 * is there, and ends the guest too: it never hangs waiting for anyone.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define SBX_GUEST_DIR "/run/sbx-guest"
#define NINEP "trans=virtio,version=9p2000.L,msize=524288,"

static char job_error[512];

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sbx-guest-init: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static _Noreturn void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	_exit(1); /* not reached: pid 1's exit would panic, and panic=-1 reboots, which -no-reboot ends */
}

/* A failure of our own: said on the console and, once the share is up, in
 * its "error" file, which t/guest/run reports. */
static _Noreturn void fail(const char *what)
{
	snprintf(job_error, sizeof job_error, "%s: %s", what, strerror(errno));
	say("%s", job_error);
	int fd = open(SBX_GUEST_DIR "/error", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)!write(fd, job_error, strlen(job_error));
		close(fd);
	}
	power_off();
}

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *opts)
{
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		fail(dst);
	if (mount(src, dst, type, flags, opts) < 0) {
		char what[300];
		snprintf(what, sizeof what, "mount %s on %s", type ? type : src, dst);
		fail(what);
	}
}

static void load_modules(void)
{
	FILE *f = fopen("/modules/order", "re");
	if (!f)
		fail("/modules/order");
	char name[256], path[300];
	while (fgets(name, sizeof name, f)) {
		name[strcspn(name, "\n")] = 0;
		if (!*name)
			continue;
		snprintf(path, sizeof path, "/modules/%s", name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
			fail(path);
		close(fd);
	}
	fclose(f);
}

/* The value of key= on the kernel command line, or def. */
static const char *cmdline(const char *key, const char *def)
{
	static char buf[4096];
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return def;
	buf[n] = 0;
	size_t kl = strlen(key);
	for (char *p = strtok(buf, " \n"); p; p = strtok(NULL, " \n"))
		if (!strncmp(p, key, kl) && p[kl] == '=')
			return p + kl + 1;
	return def;
}

static void loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		fail("lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		fail("bring lo up");
	close(s);
}

/* Enable at the top of the cgroup v2 hierarchy every controller it has, as
 * systemd does on a booted Debian 12. */
static void cgroup_controllers(void)
{
	char ctl[512] = "", want[600] = "";
	int fd = open("/sys/fs/cgroup/cgroup.controllers", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, ctl, sizeof ctl - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		fail("/sys/fs/cgroup/cgroup.controllers");
	ctl[n > 0 ? n : 0] = 0;
	for (char *p = strtok(ctl, " \n"); p; p = strtok(NULL, " \n")) {
		size_t l = strlen(want);
		snprintf(want + l, sizeof want - l, "%s+%s", l ? " " : "", p);
	}
	fd = open("/sys/fs/cgroup/cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, want, strlen(want)) < 0)
		fail("enable the cgroup controllers");
	close(fd);
}

static void build_root(void)
{
	must_mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	int c = open("/dev/console", O_RDWR | O_CLOEXEC);
	if (c >= 0) {
		dup2(c, 1);
		dup2(c, 2);
		close(c);
	}
	must_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	must_mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	load_modules();

	/* The host's tree below a tmpfs: cache=loose, since nothing changes
	 * it under us for the guest's short life. */
	must_mount("hostroot", "/lower", "9p", MS_RDONLY, NINEP "cache=loose");
	must_mount("rw", "/rw", "tmpfs", 0, "mode=0755");
	if (mkdir("/rw/upper", 0755) < 0 || mkdir("/rw/work", 0755) < 0)
		fail("/rw");
	must_mount("overlay", "/newroot", "overlay", 0, "lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work");
	must_mount("tmpfs", "/newroot/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	must_mount("tmpfs", "/newroot/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	must_mount("job", "/newroot" SBX_GUEST_DIR, "9p", 0, NINEP "cache=none");
	/* The project at its own path, under an overlay of its own: it may
	 * live where the guest has its own tree (a checkout in /tmp). */
	char project[4096], dst[4200];
	snprintf(project, sizeof project, "%s", cmdline("sbx.project", ""));
	if (project[0] == '/' && !strstr(project, "/..")) {
		must_mount("project", "/project", "9p", MS_RDONLY, NINEP "cache=loose");
		if (mkdir("/rw/pupper", 0755) < 0 || mkdir("/rw/pwork", 0755) < 0)
			fail("/rw");
		snprintf(dst, sizeof dst, "/newroot%s", project);
		for (char *sl = dst + strlen("/newroot") + 1; (sl = strchr(sl, '/')); sl++) {
			*sl = 0;
			mkdir(dst, 0755);
			*sl = '/';
		}
		must_mount("overlay", dst, "overlay", 0, "lowerdir=/project,upperdir=/rw/pupper,workdir=/rw/pwork");
	}
	static const char *const moved[] = { "/dev", "/proc", "/sys" };
	for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++) {
		char dst[64];
		snprintf(dst, sizeof dst, "/newroot%s", moved[i]);
		if (mount(moved[i], dst, NULL, MS_MOVE, NULL) < 0)
			fail(dst);
	}
	/* switch_root: the initramfs cannot be pivoted away, so the new root
	 * is moved over it (pivot_root inside sandboxes works from there). */
	if (chdir("/newroot") < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0)
		fail("switch to the new root");
	must_mount("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, "nsdelegate");
	cgroup_controllers();
	must_mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620");
	must_mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	/* What udev would add. */
	static const char *const links[][2] = { { "/proc/self/fd", "/dev/fd" }, { "/proc/self/fd/0", "/dev/stdin" },
						 { "/proc/self/fd/1", "/dev/stdout" }, { "/proc/self/fd/2", "/dev/stderr" } };
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		if (symlink(links[i][0], links[i][1]) < 0 && errno != EEXIST)
			fail(links[i][1]);
	loopback_up();
	sethostname("sbx-guest", 9);
}

static void write_rc(int status)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%d\n", status);
	int fd = open(SBX_GUEST_DIR "/rc", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)n) != n)
		fail(SBX_GUEST_DIR "/rc");
	close(fd);
}

/* Copy what is in the pipe to the serial port; false at EOF. */
static bool relay(int from, int to)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return true; /* the host stopped listening: keep draining */
		off += w;
	}
	return true;
}

int main(void)
{
	if (getpid() != 1)
		return 2;
	build_root();
	/* The command's port: the second serial port on x86, a virtio
	 * console where the machine has one serial port (arm64's virt). */
	char port[64];
	snprintf(port, sizeof port, "/dev/%s", cmdline("sbx.out", "ttyS1"));
	if (strchr(port + 5, '/'))
		fail("sbx.out");
	const char *cwd = cmdline("sbx.cwd", "/");
	int tty = open(port, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (tty < 0)
		fail(port);
	/* Bytes as the command writes them: no \r added, no echo. */
	struct termios t;
	if (tcgetattr(tty, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(tty, TCSANOW, &t);
	}
	/* The command writes to a pipe, as under CI, not to a terminal: we
	 * copy it to the serial port, and reap everything meanwhile. */
	int out[2];
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || pipe2(out, O_CLOEXEC) < 0)
		fail("pipe");
	pid_t pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		int in = open("/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0)
			_exit(126);
		if (chdir(cwd) < 0) {
			say("cannot enter %s: %s", cwd, strerror(errno));
			_exit(126);
		}
		setsid();
		char *const argv[] = { "sh", SBX_GUEST_DIR "/cmd", NULL };
		char *const envp[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
				       "LANG=C.UTF-8", "TERM=dumb", "USER=root", "LOGNAME=root", "SBX_GUEST=1", NULL };
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	close(out[1]);
	int status = -1;
	bool open_pipe = true;
	while (status < 0 || open_pipe) {
		struct pollfd pf[2] = { { .fd = sfd, .events = POLLIN }, { .fd = out[0], .events = POLLIN } };
		if (poll(pf, open_pipe ? 2 : 1, -1) < 0 && errno != EINTR)
			fail("poll");
		if (open_pipe && pf[1].revents)
			open_pipe = relay(out[0], tty);
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof si) == sizeof si)
			;
		int st;
		pid_t p;
		while ((p = waitpid(-1, &st, WNOHANG)) > 0)
			if (p == pid) {
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				/* Whatever it left behind goes now, and with it the
				 * pipe's last writers. */
				kill(-1, SIGKILL);
			}
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	write_rc(status);
	power_off();
}
