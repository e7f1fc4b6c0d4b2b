/* auth: token files, the constant-time check, the token bucket. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "tap.h"

int main(void)
{
	char err[256];
	const char *text = "# comment\n\n  first-token-0123456789  \r\nsecond-token-abcdefghij\n";
	struct auth *a = auth_parse(text, strlen(text), err, sizeof err);
	OK(a && auth_count(a) == 2, "two tokens, comments and blank lines skipped, spaces trimmed");
	OK(auth_check(a, "Bearer first-token-0123456789") == 1, "the first token is principal 1");
	OK(auth_check(a, "bearer   second-token-abcdefghij  ") == 2, "scheme case-insensitive, spaces around the token");
	OK(auth_check(a, NULL) == 0, "no header: 0");
	OK(auth_check(a, "Basic Zmlyc3Q=") == 0, "another scheme: 0");
	OK(auth_check(a, "Bearer ") == 0, "an empty token: 0");
	OK(auth_check(a, "Bearer first-token-012345678") == -1, "a prefix of a token: -1");
	OK(auth_check(a, "Bearer first-token-01234567890") == -1, "a token with one more character: -1");
	OK(auth_check(a, "Bearer first-token-0123456789 second") == -1, "a token with more after a space: -1");
	OK(auth_check(a, "Bearerfirst-token-0123456789") == 0, "no space after the scheme: 0");
	auth_free(a);

	OK(!auth_parse("short\n", 6, err, sizeof err) && strstr(err, "at least 16"), "a short token is refused: %s", err);
	OK(!auth_parse("a token with spaces inside\n", 27, err, sizeof err) && strstr(err, "visible ASCII"),
	   "spaces inside a token are refused: %s", err);
	OK(!auth_parse("# only a comment\n", 17, err, sizeof err) && strstr(err, "no token"), "no token at all: %s", err);
	OK(!auth_parse("ok-token-0123456789abc\n\xc3\xa9t\xc3\xa9-token-0123456789\n", 45, err, sizeof err) &&
	   strstr(err, "line 2"), "non-ASCII refused, with its line: %s", err);

	const char *gen;
	unsetenv("SBX_MCP_TOKEN");
	a = auth_new(NULL, &gen, err, sizeof err);
	OK(a && gen && strlen(gen) == 64, "generated: 64 hex digits");
	char hdr[80];
	snprintf(hdr, sizeof hdr, "Bearer %s", gen);
	OK(a && auth_check(a, hdr) == 1, "the generated token works");
	auth_free(a);
	setenv("SBX_MCP_TOKEN", "env-token-0123456789", 1);
	a = auth_new(NULL, &gen, err, sizeof err);
	OK(a && !gen && auth_check(a, "Bearer env-token-0123456789") == 1, "SBX_MCP_TOKEN");
	auth_free(a);
	setenv("SBX_MCP_TOKEN", "tok-0123456789abcdef\ntwo-0123456789abcdef", 1);
	OK(!auth_new(NULL, &gen, err, sizeof err) && strstr(err, "one token"), "SBX_MCP_TOKEN is one token: %s", err);
	OK(!auth_new("/nonexistent/tokens", &gen, err, sizeof err) && strstr(err, "No such file"), "a missing file: %s",
	   err);

	/* The bucket: rate 2/s, burst 3. */
	struct auth_bucket b = { 0, 0 };
	unsigned retry = 0;
	bool all = true;
	for (int i = 0; i < 3; i++)
		all &= auth_take(&b, 2, 3, 1000, &retry);
	OK(all, "a burst of 3 passes");
	OK(!auth_take(&b, 2, 3, 1000, &retry) && retry == 1, "the 4th is refused, retry after 1 s");
	OK(auth_take(&b, 2, 3, 1500, &retry), "half a second later (rate 2/s) one more passes");
	OK(!auth_take(&b, 2, 3, 1500, &retry), "but only one");
	OK(auth_take(&b, 2, 3, 100000, &retry) && auth_take(&b, 2, 3, 100000, &retry) &&
	   auth_take(&b, 2, 3, 100000, &retry) && !auth_take(&b, 2, 3, 100000, &retry),
	   "a long pause refills to the burst, no more");
	struct auth_bucket slow = { 0, 0 };
	auth_take(&slow, 0.1, 1, 5000, &retry);
	OK(!auth_take(&slow, 0.1, 1, 5000, &retry) && retry == 10, "rate 0.1/s: retry after 10 s (%u)", retry);
	DONE();
}
