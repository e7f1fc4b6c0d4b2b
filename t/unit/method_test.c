/* Unit tests for lib/mcp's table of methods: each named once and found by
 * its name.  With --methods, the table as lines ("name request|notification
 * [2026-07-28]") for t/06-tables.bats, which holds doc/mcp.md against it. */
#include <stdio.h>
#include <string.h>

#include "mcp.h"
#include "tap.h"

int main(int argc, char **argv)
{
	bool note, modern;
	if (argc > 1 && !strcmp(argv[1], "--methods")) {
		for (size_t i = 0; mcp_method_name(i, &note, &modern); i++)
			printf("%s %s%s\n", mcp_method_name(i, &note, &modern), note ? "notification" : "request",
			       modern ? " 2026-07-28" : "");
		return 0;
	}
	size_t n = 0;
	bool unique = true, shaped = true;
	for (const char *m; (m = mcp_method_name(n, &note, &modern)); n++) {
		shaped &= *m && !strchr(m, ' ') && (!note || !strncmp(m, "notifications/", 14));
		for (size_t j = 0; j < n; j++) {
			bool n2, m2;
			unique &= strcmp(m, mcp_method_name(j, &n2, &m2)) != 0;
		}
	}
	OK(n > 10, "a table of methods (%zu)", n);
	OK(unique, "no method twice");
	OK(shaped, "names without spaces; notifications under notifications/");
	DONE();
}
