/* Unit tests for util_env_path and util_path_next: the one PATH walk, used
 * by probe_which on the host and by init's exec in the sandbox (where a wrong
 * candidate would run the wrong program). */
#include <string.h>

#include "util.h"
#include "tap.h"

int main(void)
{
	char *env[] = { "HOME=/h", "PATH=/a", "X=1", "PATH=/b:/c", NULL };
	OK(!strcmp(util_env_path(env, "/d"), "/b:/c"), "the last PATH= entry wins");
	char *none[] = { "PATHX=/a", "XPATH=/b", NULL };
	OK(!strcmp(util_env_path(none, "/d"), "/d"), "no PATH: the default");
	OK(!strcmp(util_env_path(NULL, "/d"), "/d"), "no environment: the default");

	char buf[64];
	const char *p = "/usr/bin::/bin:";
	OK(util_path_next(&p, "", "ls", buf, sizeof buf) && !strcmp(buf, "/usr/bin/ls"), "first entry");
	OK(util_path_next(&p, "", "ls", buf, sizeof buf) && !strcmp(buf, "/bin/ls"), "empty entry skipped, no implicit '.'");
	OK(!util_path_next(&p, "", "ls", buf, sizeof buf), "a trailing ':' adds nothing; the end");
	OK(!util_path_next(&p, "", "ls", buf, sizeof buf), "the end stays the end");

	p = "/x";
	OK(util_path_next(&p, "/root", "y", buf, sizeof buf) && !strcmp(buf, "/root/x/y"), "prefix (a rootfs) prepended");

	/* "/abc/name" needs 10 bytes: 9 is one short, and the next entry fits. */
	p = "/abc:/d";
	OK(util_path_next(&p, "", "name", buf, 9) && !strcmp(buf, "/d/name"), "a candidate that does not fit is skipped, not cut");
	p = "/abc";
	OK(util_path_next(&p, "", "name", buf, 10) && !strcmp(buf, "/abc/name"), "exactly fitting (with its NUL)");
	p = "";
	OK(!util_path_next(&p, "", "name", buf, sizeof buf), "an empty PATH finds nothing");
	DONE();
}
