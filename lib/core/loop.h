/* loop: a small single-threaded event loop on poll(2).
 *
 * sbx-run and sbx-mcp serve many sandboxes from one thread (libjq is not
 * thread-safe): every fd a job waits on (its pidfd, status pipe, output
 * pipes, timerfd) is registered with a callback.  poll rather than epoll
 * because stdin or stdout may be a regular file, which epoll refuses.
 * Registrations are cheap and may change inside callbacks; a callback may
 * remove any watch, its own included.
 */
#ifndef SBX_LOOP_H
#define SBX_LOOP_H

#include <stdbool.h>
#include <stddef.h>

struct loop;
typedef void (*loop_fn)(struct loop *l, int fd, short revents, void *arg);

struct loop *loop_new(void);
void loop_free(struct loop *l);
/* Watch fd for events (POLLIN, POLLOUT); replaces an existing watch. */
void loop_watch(struct loop *l, int fd, short events, loop_fn fn, void *arg);
void loop_unwatch(struct loop *l, int fd);
/* Wait at most timeout_ms (-1: forever) and dispatch; returns the number of
 * callbacks run, 0 on timeout, -1 on error other than EINTR. */
int loop_once(struct loop *l, int timeout_ms);
size_t loop_count(const struct loop *l);

#endif
