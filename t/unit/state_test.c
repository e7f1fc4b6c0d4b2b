#define _GNU_SOURCE
/* Unit tests for lib/core/state: a session's id and workspace path are
 * exactly what state.h says, and nothing that merely looks like one. */
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "tap.h"

int main(void)
{
	const char *ok = "0123456789abcdef0123456789abcdef";
	OK(state_session_id_ok(ok, 32), "32 lowercase hex digits");
	OK(!state_session_id_ok(ok, 31) && !state_session_id_ok("0123456789abcdef0123456789abcdef0", 33), "not 31 or 33");
	OK(!state_session_id_ok("0123456789ABCDEF0123456789abcdef", 32), "not upper case");
	OK(!state_session_id_ok("0123456789abcdef0123456789abcde/", 32) && !state_session_id_ok("../../../../../../../../../../etc", 32),
	   "not a path");
	char id[STATE_SESSION_ID_LEN + 1], id2[STATE_SESSION_ID_LEN + 1];
	state_session_id_new(id);
	state_session_id_new(id2);
	OK(state_session_id_ok(id, strlen(id)) && strcmp(id, id2), "new ids are ids, and differ");

	struct conf c = { .state_dir = "/var/lib/sbx", .history = "/var/lib/sbx/h.db", .uid = 70000 };
	char *dir = state_session_dir(&c, ok);
	OK(!strcmp(dir, "/var/lib/sbx/sessions/0123456789abcdef0123456789abcdef") && state_is_session_dir(&c, dir),
	   "a session's directory is one");
	free(dir);
	static const char *const not[] = {
		"/var/lib/sbx/sessions/0123456789abcdef0123456789abcdef/",
		"/var/lib/sbx/sessions/0123456789abcdef0123456789abcdef/..",
		"/var/lib/sbx/sessions//0123456789abcdef0123456789abcdef",
		"/var/lib/sbxx/sessions/0123456789abcdef0123456789abcdef",
		"/var/lib/sbx/cache/0123456789abcdef0123456789abcdef",
		"/var/lib/sbx/sessions/",
		"/var/lib/sb",
	};
	for (size_t i = 0; i < sizeof not / sizeof not[0]; i++)
		OK(!state_is_session_dir(&c, not[i]), "not a session's directory: %s", not[i]);
	char *lock = state_session_lock("/s", ok);
	OK(!strcmp(lock, "/s/.0123456789abcdef0123456789abcdef.lock"), "the lock beside it");
	free(lock);
	OK(state_uid(&c, STATE_UID_PROGRAM) == 70001 && state_uid(&c, STATE_UID_NOBODY) == 70002 &&
	   state_uid(&c, STATE_UID_EGRESS) == 70003, "host ids by role");
	unsetenv("SBX_HISTORY");
	OK(state_history(&c) == c.history, "the configuration's history");
	setenv("SBX_HISTORY", "", 1);
	OK(state_history(&c) == c.history, "an empty SBX_HISTORY is not set");
	setenv("SBX_HISTORY", "/tmp/x.db", 1);
	OK(!strcmp(state_history(&c), "/tmp/x.db"), "SBX_HISTORY wins");
	DONE();
}
