/* util: the small things every tool needs.
 *
 * Diagnostics go to stderr prefixed with the tool's name (set once with
 * util_init).  Numbers from users and files are parsed with full checks
 * (errno, end pointer, range) and never with atoi.  Writes loop on EINTR and
 * short counts.  Nothing here allocates except util_strdup/util_xalloc, which
 * exit the tool on exhaustion rather than return NULL: a tool that cannot
 * allocate a few bytes cannot do anything useful with its records either.
 */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stdarg.h>
#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SBX_VERSION "0.1.0"

/* Exit codes shared by the record tools; each man page lists the ones it uses. */
enum sbx_exit {
	EXIT_OK = 0,       /* every record handled */
	EXIT_RECORDS = 1,  /* some records were invalid or failed; all were output */
	EXIT_USAGE = 2,    /* bad options or configuration */
	EXIT_IO = 3,       /* reading input or writing output failed */
	EXIT_STORE = 4,    /* the history store or the backend failed; records still flowed */
};

extern const char *util_prog;

void util_init(const char *prog);
void util_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void util_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The end of every tool's getopt_long table: -c/--config, -h/--help,
 * --version, and the terminator. */
#define UTIL_COMMON_OPTIONS                                                                            \
	{ "config", required_argument, NULL, 'c' }, { "help", no_argument, NULL, 'h' },                 \
		{ "version", no_argument, NULL, 'V' }, { NULL, 0, NULL, 0 }
/* The options every tool shares, for the default case of its getopt_long
 * switch: 'h' (--help: help() to stdout, exit 0), 'V' (--version), ':'
 * (a missing argument) and anything unknown (a usage error, exit 2, with
 * the option of opts it is probably a typo of). */
struct option;
_Noreturn void util_common_option(int opt, char **argv, const struct option *opts, const char *synopsis,
				  void (*help)(void));
/* Is a probably a typo of b: their distance (an insertion, deletion,
 * substitution or swap of neighbours each, case folded) 1 where both have
 * 3 characters or more, 2 where both have 6 or more.  That distance, or 0
 * (equal, or not close enough: "ids" is not a typo of "id"). */
int util_typo_of(const char *a, const char *b);
/* Usage error: one reason line, then the synopsis, on stderr; exit 2. */
_Noreturn void util_usage_error(const char *synopsis, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void *util_xalloc(size_t n);
void *util_xrealloc(void *p, size_t n);
char *util_strdup(const char *s);
char *util_strndup(const char *s, size_t n);
char *util_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Full-range number parsing: false on junk, overflow or out of [min,max]. */
bool util_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
bool util_parse_double(const char *s, double min, double max, double *out);
/* "256m", "100k", "1g", "4096" (bytes; k/m/g/t are powers of 1024). */
bool util_parse_size(const char *s, uint64_t *out);
/* "10" or "10s", "500ms", "5m", "2h", "7d" -> milliseconds. */
bool util_parse_duration(const char *s, uint64_t *out_ms);
/* 268435456 -> "256 MiB" (exact units when possible, for error messages). */
const char *util_size_str(uint64_t bytes, char *buf, size_t len);

/* Write all of buf, looping on EINTR and short writes. */
int util_write_all(int fd, const void *buf, size_t len);
/* Write text to the existing file path (relative to the directory dfd, or
 * AT_FDCWD): a /proc or /sys control file, in one write where it fits;
 * errno kept from the failing call. */
int util_write_text(int dfd, const char *path, const char *text);
/* Read up to len bytes, looping on EINTR and short reads until EOF. */
ssize_t util_read_full(int fd, void *buf, size_t len);
/* A copy of a NULL-terminated string list; NULL for an empty or NULL one. */
char **util_strv_dup(char *const *v);
/* Free a NULL-terminated vector of strings and the strings (NULL is fine). */
void util_strv_free(char **v);
/* Read up to size bytes of fd and close it: a NUL-terminated buffer (its
 * length in *len) for the caller to free, or NULL with errno. */
char *util_read_close(int fd, size_t size, size_t *len);

/* Monotonic and wall clocks. */
double util_now_ms(void);
/* ISO 8601 UTC with milliseconds, e.g. 2026-11-29T10:00:00.123Z. */
void util_iso8601(double epoch_ms, char *buf, size_t len);
double util_epoch_ms(void);
/* Parse ISO 8601: "2026-11-29", "2026-11-29T10:00", "…T10:00:00.123Z",
 * "…T10:00:00+02:00" (no zone: UTC).  Strict: false on anything else or an
 * impossible date. */
bool util_parse_iso8601(const char *s, double *epoch_ms);

/* Random bytes from getrandom(2); exits on failure (never falls back). */
void util_random(void *buf, size_t len);
/* n random bytes as 2n lowercase hex digits and a NUL into out (2n+1 bytes): unguessable ids. */
void util_random_hex(char *out, size_t n);

/* Directory holding the running binary (from /proc/self/exe). */
char *util_exe_dir(void);
/* A helper the tools run (not a tool): ../libexec/sbx/NAME beside our
 * own directory, as in a checkout and when installed; NULL if it is not
 * there (the caller frees). */
char *util_libexec(const char *name);
/* mkdir -p with mode; 0 or -1 with errno. */
int util_mkdir_p(const char *path, mode_t mode);
/* A directory stream on the directory dirfd names, through an fd of its own
 * (dirfd stays the caller's); NULL with errno. */
DIR *util_opendirat(int dirfd);
/* openat2 of path beneath dirfd, following no link of any kind and not
 * crossing a mount (O_CLOEXEC | O_NOFOLLOW added): for trees sandboxed
 * code writes, where any component may be a planted link. */
int util_open_beneath(int dirfd, const char *path, int flags, mode_t mode);
/* Write a file at path beneath dirfd: parents made (mode 0755), no link
 * followed, whatever is at the name replaced (unlinked, then created
 * exclusively), the file and new parents chowned to owner.  0, or -1 with
 * errno. */
int util_write_beneath(int dirfd, const char *path, const void *data, size_t len, mode_t mode, uid_t owner);
/* rm -rf of name in dirfd, never following a link; 0, or -1 with errno
 * if name itself could not be removed. */
int util_remove_at(int dirfd, const char *name);
/* The requests (non-blank lines, as the record readers count records)
 * of fd from its offset on, where it is a regular file (read with pread:
 * its offset stays); 0 for anything else (a pipe's are not known ahead). */
uint64_t util_count_requests(int fd);

/* The PATH an environment (NULL-terminated "K=V" list) sets, its last
 * entry winning, or dflt. */
const char *util_env_path(char *const *env, const char *dflt);
/* The next place to look for name along the PATH list *p: writes
 * "<prefix><dir>/<name>" into buf and advances *p.  Empty entries are
 * skipped (no implicit "."), and so are candidates that do not fit in len.
 * False at the end of the list.  Allocation-free and without stdio: a
 * vforked child may call it. */
bool util_path_next(const char **p, const char *prefix, const char *name, char *buf, size_t len);

/* The record tools' FILE... arguments: stdin becomes their concatenation
 * ("-" is stdin itself), as with cat, each file ended by a newline.  One
 * file is opened in place of stdin; several are copied into a pipe by a
 * child that ends with them (or when its reader goes).  A file that cannot
 * be opened is a usage error (exit 2), before anything is read. */
void util_inputs(int n, char *const *paths, const char *synopsis);

/* Check stdout for errors and close it; returns EXIT_OK or EXIT_IO. */
int util_close_stdout(void);

#endif
