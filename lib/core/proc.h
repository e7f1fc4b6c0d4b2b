/* proc: file-descriptor and process hygiene.
 *
 * Every fd sbx opens is O_CLOEXEC, but close-on-exec does nothing for a
 * clone() child that never execs (a sandbox's init) or that runs our code
 * before exec: such children call proc_keep_fds first, which moves the fds
 * they need to 3, 4, … and closes every other one, so no descriptor of the
 * supervisor (another job's pipes, the history database, a client socket)
 * can reach a sandbox.
 */
#ifndef SBX_PROC_H
#define SBX_PROC_H

#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>

/* Renumber fds[i] to 3+i (fds[i] may be -1: skipped and left -1), then close
 * every fd >= 3+n.  Updates fds[].  Async-signal-safe; returns -1 on error. */
int proc_keep_fds(int *fds, size_t n);
/* Close every fd >= lo (close_range, or one by one on kernels before 5.9).
 * Async-signal-safe. */
void proc_close_from(int lo);

/* In a child forked to exec a tool: no blocked signals, SIGPIPE at its
 * default, and `deathsig` when the parent (whose pid was `parent` before
 * the fork) dies.  -1 if the parent is already gone. */
int proc_child_prepare(int parent, int deathsig);

/* A long-lived tool's way to stop: SIGINT, SIGTERM and SIGHUP blocked and
 * read from the returned signalfd (close-on-exec, non-blocking) in its
 * event loop; -1 with errno if the kernel refuses one.  Children started
 * through proc_child_prepare get their signals back. */
int proc_stop_signals(void);
int proc_set_nonblock(int fd, bool on);
int proc_set_cloexec(int fd, bool on);
/* One message of len bytes on a unix socket, with fd (>= 0) as
 * SCM_RIGHTS; looping on EINTR.  0, or -1 with errno. */
int proc_send_fd(int sock, const void *buf, size_t len, int fd);
/* One message into buf (at most len bytes, NUL-terminated: len - 1 of
 * data), *fd the descriptor that came with it, or -1; close-on-exec.
 * Its length, 0 at the end, -1 with errno. */
ssize_t proc_recv_fd(int sock, char *buf, size_t len, int *fd);

/* Replace the process's visible command line (what /proc/PID/cmdline shows)
 * with `title`, so a sandbox cannot learn the supervisor's arguments. */
void proc_set_title(char **argv, const char *title);

/* The signals a background job's program may be sent (sbx-run's
 * --control, sbx-mcp's process_signal, whose schema lists them from here):
 * those a person sends from a terminal or with kill(1), by their names
 * without "SIG".  The sandbox's init forwards these and no other
 * (box_init.c). */
#define PROC_SIGNALS(X) X(HUP) X(INT) X(QUIT) X(KILL) X(USR1) X(USR2) X(TERM) X(CONT) X(STOP) X(TSTP) X(WINCH)
/* The number of such a signal named name ("INT" or "SIGINT"), else 0;
 * its names, ", " between them, in proc_signal_names. */
int proc_signal_number(const char *name);
extern const char *const proc_signal_names;

#endif
