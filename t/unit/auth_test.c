/* auth: token files, their network option, the constant-time check, the
 * token bucket. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "hostpat.h"
#include "tap.h"

#define SECRET "secret-token-0123456789"

/* A token file that must be refused, with each fragment in the message
 * and the token nowhere in it. */
static void refused(const char *text, const char *frag1, const char *frag2)
{
	char err[512] = "";
	struct auth *a = auth_parse(text, strlen(text), err, sizeof err);
	OK(!a && strstr(err, frag1) && (!frag2 || strstr(err, frag2)) && !strstr(err, SECRET) && !strstr(err, "secret"),
	   "refused: %s", err);
	auth_free(a);
}

/* A configuration whose [sandbox] network is net. */
static struct conf *conf_net(const char *net)
{
	char text[512], err[512];
	snprintf(text, sizeof text,
		 "[sandbox]\nnetwork = %s\n[language.python]\nfile = \"main.py\"\nrun = [\"python3\", \"main.py\"]\n", net);
	struct conf *c = conf_parse("test.conf", text, strlen(text), err, sizeof err);
	if (!c)
		fprintf(stderr, "# %s\n", err);
	return c;
}

/* narrow(a, n, JSON): auth_network_narrow on that network; the result (or
 * "ERR: message") as JSON text in out. */
static bool narrow(const struct auth *a, int n, const char *json, char *out, size_t len)
{
	jv v = jv_parse(json);
	char err[400];
	bool ok = auth_network_narrow(a, n, &v, err, sizeof err);
	if (ok) {
		jv s = jv_dump_string(v, 0);
		snprintf(out, len, "%s", jv_string_value(s));
		jv_free(s);
	} else {
		snprintf(out, len, "ERR: %s", err);
		jv_free(v);
	}
	return ok;
}

static void network_option(void)
{
	char err[512], out[512];
	const char *text = "# three principals\n"
			   SECRET "-1  network=pypi.org,*.pythonhosted.org\n"
			   SECRET "-2\n"
			   SECRET "-3\tnetwork=false  \n"
			   SECRET "-4 network=10.9.9.9:8443 \r\n";
	struct auth *a = auth_parse(text, strlen(text), err, sizeof err);
	OK(a && auth_count(a) == 4 && auth_network_count(a) == 3, "options after the token: 4 tokens, 3 with a network (%s)",
	   a ? "" : err);
	if (!a)
		return;
	OK(auth_check(a, "Bearer " SECRET "-1") == 1 && auth_check(a, "Bearer " SECRET "-3") == 3 &&
	   auth_check(a, "Bearer " SECRET "-4") == 4, "the token is the first word, its option not part of it");
	OK(auth_check(a, "Bearer " SECRET "-1  network=pypi.org,*.pythonhosted.org") == -1, "the whole line is no token");

	/* the rule for calls */
	OK(narrow(a, 1, "true", out, sizeof out) && !strcmp(out, "[\"pypi.org\",\"*.pythonhosted.org\"]"),
	   "true becomes the token's list: %s", out);
	OK(narrow(a, 1, "[\"files.pythonhosted.org\", \"pypi.org\"]", out, sizeof out) &&
	   !strcmp(out, "[\"files.pythonhosted.org\",\"pypi.org\"]"), "a list within it is kept: %s", out);
	OK(!narrow(a, 1, "[\"pypi.org\", \"github.com\"]", out, sizeof out) &&
	   strstr(out, "\"github.com\" is not within what this token may reach (pypi.org, *.pythonhosted.org)"),
	   "a pattern outside it is refused, naming the token's list: %s", out);
	OK(!narrow(a, 1, "[\"pypi.org:80\"]", out, sizeof out) && strstr(out, "not within"), "another port is outside: %s", out);
	OK(!narrow(a, 1, "[\"*.org\"]", out, sizeof out) && strstr(out, "not within"), "a wider wildcard is outside: %s", out);
	OK(!narrow(a, 1, "[\"a b\"]", out, sizeof out) && strstr(out, "not a host pattern"), "not a pattern: %s", out);
	OK(!narrow(a, 1, "[7]", out, sizeof out) && strstr(out, "must be a host pattern"), "not a string: %s", out);
	OK(narrow(a, 1, "false", out, sizeof out) && !strcmp(out, "false"), "false is kept");
	OK(narrow(a, 1, "[]", out, sizeof out) && !strcmp(out, "[]"), "an empty list is kept");
	OK(narrow(a, 1, "null", out, sizeof out) && !strcmp(out, "null"), "null is kept");
	OK(narrow(a, 1, "\"pypi.org\"", out, sizeof out) && !strcmp(out, "\"pypi.org\""),
	   "a string is left for the request's own check to refuse");
	OK(narrow(a, 2, "true", out, sizeof out) && !strcmp(out, "true"), "a token without the option: as asked");
	OK(narrow(a, 2, "[\"github.com\"]", out, sizeof out) && !strcmp(out, "[\"github.com\"]"),
	   "a token without the option: its list is the configuration's to judge");
	OK(!narrow(a, 3, "true", out, sizeof out) && strstr(out, "this token has no network"), "network=false: true refused: %s",
	   out);
	OK(!narrow(a, 3, "[\"pypi.org\"]", out, sizeof out) && strstr(out, "this token has no network"),
	   "network=false: a list refused: %s", out);
	OK(narrow(a, 3, "false", out, sizeof out), "network=false: false is fine");
	OK(narrow(a, 4, "true", out, sizeof out) && !strcmp(out, "[\"10.9.9.9:8443\"]"), "a port in the option: %s", out);
	OK(narrow(a, 0, "true", out, sizeof out) && narrow(a, 5, "true", out, sizeof out) && narrow(NULL, 1, "true", out, sizeof out),
	   "no such principal, or no tokens (stdio): as asked");

	/* the start-up check against the configuration */
	struct conf *wide = conf_net("[\"pypi.org\", \"*.pythonhosted.org\", \"10.9.9.9:8443\"]");
	struct conf *narrowc = conf_net("[\"pypi.org\"]");
	struct conf *host = conf_net("\"host\"");
	struct conf *none = conf_net("false");
	OK(wide && auth_network_check(a, wide, err, sizeof err), "lists within the configuration's pass (%s)", err);
	err[0] = 0;
	OK(narrowc && !auth_network_check(a, narrowc, err, sizeof err) && strstr(err, "line 2") &&
	   strstr(err, "\"*.pythonhosted.org\" is not within what the configuration allows (pypi.org in test.conf)") &&
	   !strstr(err, "secret"), "a list wider than the configuration's: the line and the pattern: %s", err);
	OK(host && auth_network_check(a, host, err, sizeof err), "\"host\" covers any list");
	err[0] = 0;
	OK(none && !auth_network_check(a, none, err, sizeof err) && strstr(err, "line 2") && strstr(err, "no network") &&
	   !strstr(err, "secret"), "a list where the configuration allows none: %s", err);
	auth_free(a);
	const char *only_false = SECRET "-3 network=false\n" SECRET "-2\n";
	a = auth_parse(only_false, strlen(only_false), err, sizeof err);
	OK(a && none && auth_network_check(a, none, err, sizeof err), "network=false fits any configuration");
	auth_free(a);
	conf_free(wide);
	conf_free(narrowc);
	conf_free(host);
	conf_free(none);

	/* bad options: the line named, the token never */
	refused(SECRET " netwrk=pypi.org\n", "line 1", "network=LIST");
	refused("# c\n" SECRET " part-of-the-secret\n", "line 2", "no spaces");
	refused(SECRET " network=\n", "line 1", "false or host patterns");
	refused(SECRET " network=pypi.org,,x.org\n", "line 1", "nothing empty");
	refused(SECRET " network=pypi.org,\n", "line 1", "nothing empty");
	refused(SECRET " network=pypi.org network=x.org\n", "line 1", "more than once");
	refused(SECRET " network=false network=x.org\n", "line 1", "more than once");
	refused(SECRET " network=true\n", "line 1", "without the option");
	refused(SECRET " network=host\n", "line 1", "false or host patterns");
	refused(SECRET " network=pypi.org:99999\n", "line 1", "1 to 65535");
	refused(SECRET " network=py_pi.org\n", "\"py_pi.org\" is not a host pattern", "line 1");
	refused(SECRET " network=*.\n", "line 1", "not a host pattern");
	refused("short network=pypi.org\n", "line 1", "at least 16");
	char many[4096];
	size_t o = (size_t)snprintf(many, sizeof many, "%s network=", SECRET);
	for (int i = 0; i <= HOSTPAT_LIST_MAX; i++)
		o += (size_t)snprintf(many + o, sizeof many - o, "%sh%d.org", i ? "," : "", i);
	refused(many, "line 1", "at most 64");
}

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
	OK(!auth_parse("a-token-0123456789 with spaces inside\n", 38, err, sizeof err) && strstr(err, "no spaces"),
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
	network_option();

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
