/* state: what sbx keeps on the host, where, and whose it is.
 *
 * Everything a tool leaves between runs lives under the configuration's
 * state_dir (conf.h: /var/lib/sbx as root, else the user's own): the
 * history (unless SBX_HISTORY or the history key says otherwise), the
 * compile cache (cache/), the docker backend's state (docker/), and the
 * sessions' workspaces (sessions/ID, one lock file .ID.lock beside each,
 * held by the server that owns it).  A session's ID is 32 lowercase hex
 * digits, made from getrandom: a workspace path in a job must be exactly
 * STATE_DIR/sessions/ID, so that a forged job cannot name another
 * directory to bind.
 *
 * As root the sandboxes run as host ids from the configuration's uid on
 * (conf_uid_problem checks that no one else owns them): the init at uid,
 * the program at uid + STATE_UID_PROGRAM, the mapped nobody (and sbx-thumb)
 * at uid + STATE_UID_NOBODY, the egress proxy at uid + STATE_UID_EGRESS;
 * gids alike.
 *
 * Strings returned here are the caller's to free unless said otherwise.
 */
#ifndef SBX_STATE_H
#define SBX_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conf.h"

/* The roles, in order from uid on: the name, its key in --check's
 * host_ids, and what it is, for people. */
#define STATE_UIDS(X) \
	X(INIT,    "init",    "the sandbox's init") \
	X(PROGRAM, "program", "the program") \
	X(NOBODY,  "nobody",  "the mapped nobody") \
	X(EGRESS,  "egress",  "the egress proxy")

enum state_uid {
#define STATE_UID_ENUM_(n, key, what) STATE_UID_##n,
	STATE_UIDS(STATE_UID_ENUM_)
#undef STATE_UID_ENUM_
	STATE_NUIDS
};
extern const struct state_uid_role { const char *key, *what; } state_uid_roles[STATE_NUIDS];

/* The host id (uid and gid alike) of a role, as root. */
uid_t state_uid(const struct conf *c, enum state_uid role);

#define STATE_SESSION_ID_LEN 32
/* Is s[0, n) a session's ID: exactly 32 lowercase hex digits? */
bool state_session_id_ok(const char *s, size_t n);
/* A new session ID (getrandom), NUL-terminated in id. */
void state_session_id_new(char id[STATE_SESSION_ID_LEN + 1]);
/* STATE_DIR/sessions: every session's workspace is in it. */
char *state_sessions_dir(const struct conf *c);
/* STATE_DIR/sessions/ID. */
char *state_session_dir(const struct conf *c, const char *id);
/* Is path exactly STATE_DIR/sessions/ID, for some ID? */
bool state_is_session_dir(const struct conf *c, const char *path);
/* The lock file of the session ID in sessions, and its image file (a
 * workspace of its own size). */
char *state_session_lock(const char *sessions, const char *id);
char *state_session_image(const char *sessions, const char *id);

/* STATE_DIR/cache (the compile cache) and STATE_DIR/docker (the docker
 * backend's state). */
char *state_cache_dir(const struct conf *c);
char *state_docker_dir(const struct conf *c);

/* The history's file: $SBX_HISTORY if set and not empty, else the
 * configuration's (borrowed). */
const char *state_history(const struct conf *c);

#endif
