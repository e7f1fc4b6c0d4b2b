/* dock_int: what the parts of the docker backend share, and nobody else
 * (dock_api.c the Engine API client, dock.c a stage's container,
 * dock_cg.c its accounting group, dock_sys.c the daemon, its leftovers,
 * images and scratch directories).
 */
#ifndef SBX_DOCK_INT_H
#define SBX_DOCK_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <jv.h>

#include "dock.h"
#include "rec.h"

#define CALL_TIMEOUT_MS 30000  /* any one API call; pulls are not bounded */

/* One API call: a connection of its own (HTTP/1.0, so the body ends at
 * EOF; an attach is HTTP/1.1 for its Upgrade), driven on a loop, with a
 * deadline.  fn is called once, when it is answered or failed. */
struct call;
typedef void (*call_fn)(struct call *c, void *arg);

struct call {
	struct dock_sys *d;
	struct loop *loop;
	int fd, tfd;
	char *req;
	size_t reqlen, off;
	char *buf;
	size_t len, cap;
	bool upgrade, connected;
	int status;               /* HTTP status, 0 on failure */
	const char *body;         /* into buf */
	size_t bodylen;
	char err[400];            /* transport failure: cause and fix */
	const char *what;         /* "create the container", for messages */
	int timeout_ms;
	call_fn fn;
	void *arg;
};

/* Start a call (body consumed; jv_invalid() for none); upgrade: an attach
 * (the connection stays, as c->fd, after the response head). */
struct call *dock_call_start(struct dock_sys *d, struct loop *l, const char *method, const char *path, jv body,
			     bool upgrade, int timeout_ms, const char *what, call_fn fn, void *arg);
void dock_call_free(struct call *c);
/* A call made and waited for on a loop of its own. */
struct call *dock_call_sync(struct dock_sys *d, const char *method, const char *path, jv body, int timeout_ms);
/* The daemon's "message" of a failed call, or its status, into out. */
void dock_api_message(const struct call *c, char *out, size_t len);
/* A connected socket to the daemon, or -1 with *err the errno. */
int dock_dial(struct dock_sys *d, int *err);
/* Why the daemon could not be reached (errno e), with the fix. */
void dock_fmt_connect_error(struct dock_sys *d, int e, char *out, size_t len);

/* Accounting groups (dock_cg.c): a cgroup path as the daemon's cgroup
 * parent names it (relative to the hierarchy), or NULL; a stage's group's
 * CPU time and memory peak into res, and its OOM kills (-1 where the
 * kernel does not count them for the group: cgroup v1); its removal from
 * every hierarchy,
 * a busy one retried `tries` times 1 ms apart (false: some stayed busy);
 * such a group kept, to try again after every stage and at exit; and
 * another try at removing those kept. */
const char *dock_cg_relative(const char *path);
long long dock_cg_stats(struct dock_sys *d, const char *rel, struct stage_result *res);
bool dock_cg_remove_everywhere(const char *rel, int tries);
void dock_pending_add(struct dock_sys *d, const char *rel);
void dock_retry_pending(struct dock_sys *d, int tries);

/* obj[key] if it is a string, else def; borrowed from obj. */
static inline const char *dock_str_or(jv obj, const char *key, const char *def)
{
	const char *v = rec_str(obj, key, NULL);
	return v ? v : def;
}

#endif
