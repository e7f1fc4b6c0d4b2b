/* state: the host's paths and ids, each made in one place (state.h). */
#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

const struct state_uid_role state_uid_roles[STATE_NUIDS] = {
#define STATE_UID_ROLE_(n, key, what) { key, what },
	STATE_UIDS(STATE_UID_ROLE_)
#undef STATE_UID_ROLE_
};

uid_t state_uid(const struct conf *c, enum state_uid role)
{
	return (uid_t)(c->uid + role);
}

bool state_session_id_ok(const char *s, size_t n)
{
	return n == STATE_SESSION_ID_LEN && strspn(s, "0123456789abcdef") >= n;
}

void state_session_id_new(char id[STATE_SESSION_ID_LEN + 1])
{
	util_random_hex(id, STATE_SESSION_ID_LEN / 2);
}

char *state_sessions_dir(const struct conf *c)
{
	return util_fmt("%s/sessions", c->state_dir);
}

char *state_session_dir(const struct conf *c, const char *id)
{
	return util_fmt("%s/sessions/%s", c->state_dir, id);
}

bool state_is_session_dir(const struct conf *c, const char *path)
{
	size_t n = strlen(c->state_dir);
	return !strncmp(path, c->state_dir, n) && !strncmp(path + n, "/sessions/", 10) &&
	       state_session_id_ok(path + n + 10, strlen(path + n + 10));
}

char *state_session_lock(const char *sessions, const char *id)
{
	return util_fmt("%s/.%s.lock", sessions, id);
}

char *state_session_image(const char *sessions, const char *id)
{
	return util_fmt("%s/.%s.img", sessions, id);
}

char *state_cache_dir(const struct conf *c)
{
	return util_fmt("%s/cache", c->state_dir);
}

char *state_docker_dir(const struct conf *c)
{
	return util_fmt("%s/docker", c->state_dir);
}

const char *state_history(const struct conf *c)
{
	const char *env = getenv("SBX_HISTORY");
	return env && *env ? env : c->history;
}
