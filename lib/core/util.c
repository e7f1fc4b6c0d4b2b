#define _GNU_SOURCE
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *util_prog = "sbx";

void util_init(const char *prog)
{
	const char *slash = strrchr(prog, '/');
	util_prog = slash ? slash + 1 : prog;
}

static void vwarn(const char *fmt, va_list ap)
{
	/* One fprintf per line so concurrent tools do not interleave mid-line. */
	char line[2048];
	int n = vsnprintf(line, sizeof line, fmt, ap);
	if (n < 0)
		return;
	fprintf(stderr, "%s: %s\n", util_prog, line);
}

void util_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void util_die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(code);
}

void util_usage_error(const char *synopsis, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s", synopsis);
	exit(EXIT_USAGE);
}

void *util_xalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		util_die(EXIT_IO, "out of memory (%zu bytes)", n);
	return p;
}

void *util_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		util_die(EXIT_IO, "out of memory (%zu bytes)", n);
	return q;
}

char *util_strdup(const char *s)
{
	return util_strndup(s, strlen(s));
}

char *util_strndup(const char *s, size_t n)
{
	char *p = util_xalloc(n + 1);
	if (n)
		memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *util_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		util_die(EXIT_IO, "out of memory");
	return s;
}

bool util_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	if (!s || !*s)
		return false;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool util_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	if (!s || !*s)
		return false;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || end == s || !isfinite(v) || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* Split "12.5ms" into a number and a unit; the number may be fractional. */
static bool split_unit(const char *s, double *num, const char **unit)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return false;
	*num = v;
	*unit = end;
	return true;
}

bool util_parse_size(const char *s, uint64_t *out)
{
	double v;
	const char *u;
	if (!split_unit(s, &v, &u))
		return false;
	double mult;
	if (!*u || !strcmp(u, "b") || !strcmp(u, "B"))
		mult = 1;
	else if (!strcasecmp(u, "k") || !strcasecmp(u, "kb") || !strcasecmp(u, "kib"))
		mult = 1024.0;
	else if (!strcasecmp(u, "m") || !strcasecmp(u, "mb") || !strcasecmp(u, "mib"))
		mult = 1024.0 * 1024;
	else if (!strcasecmp(u, "g") || !strcasecmp(u, "gb") || !strcasecmp(u, "gib"))
		mult = 1024.0 * 1024 * 1024;
	else if (!strcasecmp(u, "t") || !strcasecmp(u, "tb") || !strcasecmp(u, "tib"))
		mult = 1024.0 * 1024 * 1024 * 1024;
	else
		return false;
	double b = v * mult;
	if (b > 9.0e18 || b != floor(b))
		return false;
	*out = (uint64_t)b;
	return true;
}

bool util_parse_duration(const char *s, uint64_t *out_ms)
{
	double v;
	const char *u;
	if (!split_unit(s, &v, &u))
		return false;
	double mult;
	if (!*u || !strcmp(u, "s"))
		mult = 1000;
	else if (!strcmp(u, "ms"))
		mult = 1;
	else if (!strcmp(u, "m") || !strcmp(u, "min"))
		mult = 60e3;
	else if (!strcmp(u, "h"))
		mult = 3600e3;
	else if (!strcmp(u, "d"))
		mult = 86400e3;
	else if (!strcmp(u, "w"))
		mult = 7 * 86400e3;
	else
		return false;
	double ms = v * mult;
	if (ms > 9.0e15)
		return false;
	*out_ms = (uint64_t)llround(ms);
	return true;
}

const char *util_size_str(uint64_t b, char *buf, size_t len)
{
	static const char *units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;
	double v = (double)b;
	while (i < 4 && v >= 1024) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	else if (v == floor(v))
		snprintf(buf, len, "%.0f %s", v, units[i]);
	else
		snprintf(buf, len, "%.1f %s", v, units[i]);
	return buf;
}

int util_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int util_write_text(int dfd, const char *path, const char *text)
{
	int fd = openat(dfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = util_write_all(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

ssize_t util_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

double util_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double util_epoch_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void util_iso8601(double epoch_ms, char *buf, size_t len)
{
	/* A foreign or merged history may hold any number: past years
	 * -9999..9999 (and NaN) there is no date to write. */
	if (!isfinite(epoch_ms) || fabs(epoch_ms) > 2.5e14) {
		snprintf(buf, len, "?");
		return;
	}
	long long ms = llround(epoch_ms);
	time_t secs = (time_t)(ms / 1000);
	int frac = (int)(ms % 1000);
	if (frac < 0) {
		frac += 1000;
		secs--;
	}
	struct tm tm;
	if (!gmtime_r(&secs, &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	char tmp[32];
	strftime(tmp, sizeof tmp, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", tmp, frac);
}

/* Exactly n digits at *p, advancing it. */
static bool digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return false;
		v = v * 10 + (**p - '0');
	}
	*out = v;
	return true;
}

bool util_parse_iso8601(const char *s, double *epoch_ms)
{
	const char *p = s;
	int y, mo, d, h = 0, mi = 0, sec = 0;
	double frac = 0;
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' || !digits(&p, 2, &d))
		return false;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
			return false;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &sec))
				return false;
			if (*p == '.' || *p == ',') {
				double scale = 0.1;
				p++;
				if (*p < '0' || *p > '9')
					return false;
				for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
					frac += (*p - '0') * scale;
			}
		}
	}
	int offset_min = 0;
	if (*p == 'Z' || *p == 'z')
		p++;
	else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
		if (!digits(&p, 2, &oh))
			return false;
		if (*p == ':')
			p++;
		if (*p && !digits(&p, 2, &om))
			return false;
		if (oh > 23 || om > 59)
			return false;
		offset_min = sign * (oh * 60 + om);
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60)
		return false;
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d > mdays[mo - 1] + (mo == 2 && leap))
		return false;
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = sec };
	time_t t = timegm(&tm);
	*epoch_ms = ((double)t - offset_min * 60.0 + frac) * 1000.0;
	return true;
}

void util_common_option(int opt, char **argv, const struct option *opts, const char *synopsis, void (*help)(void))
{
	if (opt == 'h' || opt == 'V') {
		if (opt == 'h')
			help();
		else
			printf("%s %s\n", util_prog, SBX_VERSION);
		exit(util_close_stdout());
	}
	const char *arg = argv[optind - 1];
	if (opt == ':')
		util_usage_error(synopsis, "option %s needs an argument", arg);
	if (!strncmp(arg, "--", 2)) {
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
		const char *best = NULL;
		for (int i = 0, d, bestd = 3; opts[i].name; i++)
			if ((d = util_typo_of(name, opts[i].name)) && d < bestd) {
				best = opts[i].name;
				bestd = d;
			}
		if (best)
			util_usage_error(synopsis, "unknown option %s: did you mean --%s?", arg, best);
	}
	util_usage_error(synopsis, "unknown option %s", arg);
}

/* Optimal string alignment distance of a and b, case folded; stops
 * counting at 3. */
static int edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 40 || m > 40 || (n > m ? n - m : m - n) > 2)
		return 3;
	int d[41][41];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
			int v = d[i - 1][j - 1] + (ca != cb);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[n][m] < 3 ? d[n][m] : 3;
}

int util_typo_of(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int d = edit_distance(a, b);
	return (d == 1 && la >= 3 && lb >= 3) || (d == 2 && la >= 6 && lb >= 6) ? d : 0;
}

void util_random(void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			util_die(EXIT_IO, "getrandom: %s", strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
}

void util_random_hex(char *out, size_t n)
{
	unsigned char rnd[64];
	if (n > sizeof rnd)
		n = sizeof rnd;
	util_random(rnd, n);
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
	explicit_bzero(rnd, n); /* tokens are made this way too */
}

char *util_exe_dir(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	return util_strdup(buf[0] ? buf : "/");
}

char *util_libexec(const char *name)
{
	char *dir = util_exe_dir();
	char *p = dir ? util_fmt("%s/../libexec/sbx/%s", dir, name) : NULL;
	free(dir);
	if (p && access(p, X_OK) < 0) {
		free(p);
		p = NULL;
	}
	return p;
}

const char *util_env_path(char *const *env, const char *dflt)
{
	const char *path = dflt;
	for (char *const *e = env; e && *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			path = *e + 5;
	return path;
}

bool util_path_next(const char **p, const char *prefix, const char *name, char *buf, size_t len)
{
	size_t np = strlen(prefix), nn = strlen(name);
	while (**p) {
		const char *dir = *p, *colon = strchr(dir, ':');
		size_t nd = colon ? (size_t)(colon - dir) : strlen(dir);
		*p = dir + nd + (colon ? 1 : 0);
		if (nd == 0 || np + nd + 1 + nn + 1 > len)
			continue;
		memcpy(buf, prefix, np);
		memcpy(buf + np, dir, nd);
		buf[np + nd] = '/';
		memcpy(buf + np + nd + 1, name, nn + 1);
		return true;
	}
	return false;
}

int util_mkdir_p(const char *path, mode_t mode)
{
	char *p = util_strdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			int e = errno;
			free(p);
			errno = e;
			return -1;
		}
		*s = '/';
	}
	int rc = mkdir(p, mode);
	int e = errno;
	free(p);
	if (rc < 0 && e != EEXIST) {
		errno = e;
		return -1;
	}
	return 0;
}

int util_close_stdout(void)
{
	bool bad = ferror(stdout);
	if (fclose(stdout) != 0)
		bad = true;
	if (bad) {
		/* EPIPE is the reader's choice (head, a closed MCP client): still an error
		 * for the exit status, but one line is enough. */
		util_warn("error writing output: %s", strerror(errno ? errno : EIO));
		return EXIT_IO;
	}
	return EXIT_OK;
}

DIR *util_opendirat(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

int util_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = mode,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd;
	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	while (fd < 0 && errno == EAGAIN);
	if (fd >= 0 || errno != ENOSYS)
		return (int)fd;
	/* No openat2 (valgrind 3.19 does not know it): the same rules, a
	 * component at a time, each opened without following a link, none
	 * "." or ".." or on another file system. */
	struct stat top, st;
	if (*path == '/' || fstat(dirfd, &top) < 0) {
		errno = EXDEV;
		return -1;
	}
	int dir = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	const char *p = path;
	while (dir >= 0) {
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		char name[256];
		if (n == 0 || n >= sizeof name || (n == 1 && p[0] == '.') || (n == 2 && !strncmp(p, "..", 2))) {
			close(dir);
			errno = n >= sizeof name ? ENAMETOOLONG : EXDEV;
			return -1;
		}
		memcpy(name, p, n);
		name[n] = 0;
		bool last = !*end;
		int next = last ? openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW, mode)
				: openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(dir);
		if (next < 0) {
			errno = e;
			return -1;
		}
		if (fstat(next, &st) < 0 || st.st_dev != top.st_dev || S_ISLNK(st.st_mode)) {
			e = S_ISLNK(st.st_mode) ? ELOOP : EXDEV;
			close(next);
			errno = e;
			return -1;
		}
		if (last)
			return next;
		dir = next;
		p = end + 1;
	}
	return -1;
}

static void remove_below(int dirfd, int depth)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 4096) {
			int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				remove_below(sub, depth + 1);
			unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
		} else
			unlinkat(dirfd, e->d_name, 0);
	}
	closedir(d);
}

int util_write_beneath(int dirfd, const char *path, const void *data, size_t len, mode_t mode, uid_t owner)
{
	/* Walk the components from dirfd, never following a link
	 * (a workspace may hold planted ones). */
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	int dir = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (dir < 0)
		return -1;
	char *p = buf;
	for (char *slash; (slash = strchr(p, '/')); p = slash + 1) {
		*slash = 0;
		if ((mkdirat(dir, p, 0755) < 0 && errno != EEXIST) || fchownat(dir, p, owner, owner, AT_SYMLINK_NOFOLLOW) < 0) {
			close(dir);
			return -1;
		}
		int next = openat(dir, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dir);
		if (next < 0)
			return -1;
		dir = next;
	}
	/* Replace whatever is there (a workspace may hold a planted symlink or
	 * FIFO under this name): unlink, then create exclusively. */
	unlinkat(dir, p, 0);
	int fd = openat(dir, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	close(dir);
	if (fd < 0)
		return -1;
	int rc = len ? util_write_all(fd, data, len) : 0;
	if (!rc)
		rc = fchown(fd, owner, owner);
	int e2 = errno;
	close(fd);
	errno = e2;
	return rc;
}

uint64_t util_count_requests(int fd)
{
	struct stat st;
	off_t off = lseek(fd, 0, SEEK_CUR);
	if (off < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	char buf[1 << 16];
	uint64_t n = 0;
	bool text = false;
	ssize_t r;
	while ((r = pread(fd, buf, sizeof buf, off)) > 0 || (r < 0 && errno == EINTR)) {
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] == '\n') {
				n += text;
				text = false;
			} else if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r')
				text = true;
		}
		off += r > 0 ? r : 0;
	}
	return n + text;
}

int util_remove_at(int dirfd, const char *name)
{
	if (!unlinkat(dirfd, name, 0) || errno == ENOENT)
		return 0;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		remove_below(fd, 0);
	return unlinkat(dirfd, name, AT_REMOVEDIR);
}

void util_inputs(int n, char *const *paths, const char *synopsis)
{
	if (n <= 0)
		return;
	int *fds = util_xalloc((size_t)n * sizeof *fds);
	for (int i = 0; i < n; i++) {
		fds[i] = strcmp(paths[i], "-") ? open(paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY) : dup(STDIN_FILENO);
		struct stat st;
		if (fds[i] < 0 || fstat(fds[i], &st) < 0 || S_ISDIR(st.st_mode))
			util_usage_error(synopsis, "cannot read %s: %s", paths[i], fds[i] < 0 ? strerror(errno) : "a directory");
	}
	if (n == 1) {
		if (dup2(fds[0], STDIN_FILENO) < 0)
			util_die(EXIT_IO, "dup2: %s", strerror(errno));
		close(fds[0]);
		free(fds);
		return;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		util_die(EXIT_IO, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		util_die(EXIT_IO, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* The reader going (EPIPE, SIGPIPE) ends the copy, and us. */
		close(p[0]);
		static char buf[65536];
		for (int i = 0; i < n; i++) {
			ssize_t r;
			char last = '\n';
			while ((r = read(fds[i], buf, sizeof buf)) != 0) {
				if (r < 0 && errno == EINTR)
					continue;
				if (r < 0 || util_write_all(p[1], buf, (size_t)r) < 0)
					_exit(1);
				last = buf[r - 1];
			}
			if (last != '\n' && util_write_all(p[1], "\n", 1) < 0)
				_exit(1);
		}
		_exit(0);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	close(p[1]);
	if (dup2(p[0], STDIN_FILENO) < 0)
		util_die(EXIT_IO, "dup2: %s", strerror(errno));
	close(p[0]);
}

char *util_read_close(int fd, size_t size, size_t *len)
{
	char *buf = util_xalloc(size + 1);
	ssize_t n = util_read_full(fd, buf, size);
	int e = errno;
	close(fd);
	if (n < 0) {
		free(buf);
		errno = e;
		return NULL;
	}
	buf[n] = 0;
	*len = (size_t)n;
	return buf;
}

char **util_strv_dup(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	if (!n)
		return NULL;
	char **c = util_xalloc((n + 1) * sizeof *c);
	for (size_t i = 0; i < n; i++)
		c[i] = util_strdup(v[i]);
	c[n] = NULL;
	return c;
}

void util_strv_free(char **v)
{
	for (char **s = v; s && *s; s++)
		free(*s);
	free(v);
}
