/* Unit tests for lib/conf: the grammar, every kind of error, and the values
 * of the shipped configuration. */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "tap.h"

static char err[2048];

static struct conf *parse(const char *text)
{
	err[0] = 0;
	return conf_parse("test.conf", text, strlen(text), err, sizeof err);
}

#define LANG "[language.python]\nfile = \"main.py\"\nrun = [\"python3\", \"main.py\"]\n"

/* The text must fail, and the message must contain each fragment. */
/* Where a language's env holds the entry, or -1. */
static int env_at(const struct conf_lang *l, const char *entry)
{
	for (int i = 0; l && l->env && l->env[i]; i++)
		if (!strcmp(l->env[i], entry))
			return i;
	return -1;
}

static void fails(const char *text, const char *frag1, const char *frag2)
{
	struct conf *c = parse(text);
	OK(c == NULL && strstr(err, frag1) && (!frag2 || strstr(err, frag2)), "rejects: %s  [%s]", frag1, err);
	conf_free(c);
}

int main(int argc, char **argv)
{
	const char *shipped = argc > 1 ? argv[1] : "etc/sandbox.conf";
	struct conf *c = conf_load(shipped, err, sizeof err);
	OK(c != NULL, "shipped configuration loads (%s)", c ? "" : err);
	if (c) {
		OK(c->lim.run.memory == 256u << 20, "memory 256 MiB");
		OK(c->lim.run.cpus == 0.5, "cpus 0.5");
		OK(c->lim.run.timeout_ms == 10000, "timeout 10 s");
		OK(c->lim.run.output == 100 * 1024, "output 100 KiB");
		OK(c->backend == CONF_BACKEND_NATIVE, "backend native");
		OK(c->state_dir[0] == '/' && c->history[0] == '/', "paths made absolute");
		const struct conf_lang *py = conf_lang(c, "py");
		OK(py && !strcmp(py->name, "python"), "alias py -> python");
		const struct conf_lang *cpp = conf_lang(c, "cpp");
		OK(cpp && cpp->compile && !strcmp(cpp->compile[0], "g++"), "cpp compiles with g++");
		OK(cpp && cpp->image && !strcmp(cpp->image, "gcc:14"), "cpp image gcc:14");
		OK(conf_lang(c, "cobol") == NULL, "unknown language is NULL");
		OK(strstr(conf_lang_list(c), "bash, c, cpp") != NULL, "sorted language list");
	}
	conf_free(c);

	c = parse("# comment\n[sandbox]\n  timeout = \"1500ms\" # trailing\nmemory=\"128m\"\ncpus = 1\n"
		  "output_limit = 4096\nnetwork = \"host\"\nseccomp_errno = \"ENOSYS\"\n"
		  "[sessions]\nttl = \"5m\"\n"
		  "[language.python]\nfile = 'main.py'\nrun = [\n  \"python3\", # the interpreter\n  \"-u\",\n  \"main.py\",\n]\n"
		  "env = [\"A=1\", \"B=\\u00e9\\t\"]\nmemory = \"512m\"\n");
	OK(c != NULL, "grammar: comments, literal strings, multi-line arrays (%s)", c ? "" : err);
	if (c) {
		OK(c->lim.run.timeout_ms == 1500, "duration string 1500ms");
		OK(c->lim.run.memory == 128u << 20, "size string 128m");
		OK(c->lim.run.cpus == 1.0, "integer accepted as float");
		OK(c->lim.run.output == 4096, "plain byte count");
		OK(c->network.host && !c->network.hosts, "network = \"host\"");
		OK(c->seccomp_errno == 38, "errno name");
		OK(c->session_ttl_ms == 300000, "session ttl 5m");
		const struct conf_lang *l = conf_lang(c, "python");
		OK(l && l->run[0] && !strcmp(l->run[1], "-u") && !strcmp(l->run[2], "main.py") && !l->run[3], "array elements");
		/* the thread pools' sizes first (conf.c), then the language's own,
		 * which may override them */
		int omp = env_at(l, "OMP_NUM_THREADS={cpus}"), blis = env_at(l, "BLIS_NUM_THREADS={cpus}");
		int a1 = env_at(l, "A=1");
		OK(omp >= 0 && blis >= 0 && a1 > omp && a1 > blis, "thread counts ahead of the language's env");
		OK(env_at(l, "B=\xc3\xa9\t") == a1 + 1, "escapes \\u and \\t");
		struct limits lim, comp;
		conf_lang_limits(c, l, &lim, &comp);
		OK(lim.memory == 512u << 20 && lim.timeout_ms == 1500, "language overrides only what it sets");
		OK(comp.memory == 1u << 30 && comp.timeout_ms == 30000 && comp.output == 4096, "compile stage: its defaults, else the run's");
	}
	conf_free(c);

	fails("[sandbox]\ntimeot = 5\n" LANG, "test.conf:2:", "\"timeot\": unknown key");
	fails("[sandbox]\nmemory = \"12q\"\n" LANG, "test.conf:2:", "memory");
	fails("[sandbox]\nmemory = \"1k\"\n" LANG, "out of range", "memory");
	fails("[sandbox]\ntimeout = 5\ntimeout = 6\n" LANG, "test.conf:3:", "appears twice");
	fails("[sandbox]\n[sandbox]\n" LANG, "test.conf:2:", "[sandbox] appears twice");
	fails(LANG "[language.python]\n", "test.conf:4:", "appears twice");
	fails("[nope]\n" LANG, "test.conf:1:", "unknown section");
	fails("timeout = 5\n" LANG, "test.conf:1:", "outside any section");
	fails("[sandbox]\nbackend = \"native\n" LANG, "test.conf:2:", "unterminated");
	fails("[sandbox]\netc = [\"a\", 5]\n" LANG, "test.conf:2:", "strings only");
	fails("[sandbox]\netc = [\"a\"\n" LANG, "test.conf:3:", "\"etc\": expected , or ]");
	fails("[sandbox]\nnetwork = yes\n" LANG, "test.conf:2:", "network");
	fails("[sandbox]\nnetwork = \"true\"\n" LANG, "test.conf:2:", "expected false, \"host\" or a list");
	fails("[sandbox]\nnetwork = true\n" LANG, "test.conf:2:", "true is ambiguous");
	fails("[sandbox]\nbackend = \"podman\"\n" LANG, "test.conf:2:", "not a backend");
	fails("[sandbox]\ntimeout = 90\n" LANG, "test.conf:2: timeout (90 s) exceeds max_timeout (60 s)", NULL);
	fails("[sandbox]\nbackend = \"native\"\nmax_memory = \"1g\"\nmemory = \"2g\"\n" LANG, "test.conf:4: memory (2 GiB) exceeds max_memory", NULL);
	fails("[sandbox]\nmemory = \"64m\"\nmax_memory = \"32m\"\n" LANG, "test.conf:3: memory (64 MiB)", NULL);
	fails("[sandbox]\npids = 0\n" LANG, "test.conf:2:", "out of range");
	/* the same ranges as a job's (limit.h): what loads makes jobs sbx-run takes */
	fails("[sandbox]\nmemory = \"2m\"\n" LANG, "test.conf:2:", "out of range (4 MiB to");
	fails("[sandbox]\npids = 1\n" LANG, "test.conf:2:", "out of range (2 to");
	fails("[language.x]\nfile = \"a\"\nrun = [\"a\"]\ncompile_memory = \"1m\"\n", "test.conf:4:", "out of range");
	fails("[language.x]\nfile = \"a\"\nrun = [\"a\"]\nmax_memory = \"1g\"\n", "test.conf:4:", "unknown key");
	fails("[sandbox]\ncompile_output_limit = 5\n" LANG, "test.conf:2:", "unknown key");
	fails("[sandbox]\ntimeout = 5 6\n" LANG, "test.conf:2:", "unexpected text");
	fails("[sandbox]\nbackend = \"a\\qb\"\n" LANG, "test.conf:2:", "unknown escape");
	fails("[sandbox]\nbackend = \"\\u0000\"\n" LANG, "test.conf:2:", "not allowed");
	fails("[sandbox]\ntimeout\n" LANG, "test.conf:2:", "expected =");
	fails("[sandbox]\ntimeout =\n" LANG, "test.conf:2:", "missing value");
	fails("[sandbox]\nseccomp_errno = \"EWHAT\"\n" LANG, "test.conf:2:", "errno");
	fails("[sandbox]\ncgroup_parent = \"../x\"\n" LANG, "test.conf:2:", "cgroup_parent");
	fails("[sandbox]\netc = [\"/etc/passwd\"]\n" LANG, "test.conf:2:", "relative to /etc");
	fails("[sandbox]\n", "no [language.NAME] section", NULL);
	fails("[language.x]\nrun = [\"a\"]\n", "test.conf:1:", "missing key \"file\"");
	fails("[language.x]\nfile = \"a\"\n", "test.conf:1:", "missing key \"run\"");
	fails("[language.x]\nfile = \"../a\"\nrun = [\"a\"]\n", "test.conf:1:", "plain file name");
	fails("[language.x]\nfile = \"a\"\nrun = [\"a\"]\ncompile = []\n", "test.conf:1:", "empty command");
	fails("[language.x]\nfile = \"a\"\nrun = [\"a\"]\nenv = [\"NOEQUALS\"]\n", "test.conf:1:", "NAME=value");
	fails("[language.x]\nfile = \"a\"\nrun = [\"a\"]\ninstall = [\"pip\"]\n", "test.conf:1:", "{packages}");
	fails("[language.x]\nfile = \"a\"\nrun = [\"a\"]\nbinds = [\"rel\"]\n", "test.conf:1:", "absolute");
	fails("[language.X Y]\nfile = \"a\"\nrun = [\"a\"]\n", "test.conf:1:", "language names");
	fails("[language.x]\nfile = \"a\"\nrun = [\"a\"]\nbogus = 1\n", "test.conf:4:", "unknown key");
	fails(LANG "[language.y]\naliases = [\"python\"]\nfile = \"a\"\nrun = [\"a\"]\n", "alias \"python\"", "language name");
	fails("[sessions]\ntimeout = 5\n" LANG, "test.conf:2:", "unknown key in [sessions]");
	fails("[sandbox]\nmemory = 1e400\n" LANG, "test.conf:2:", "memory");
	{
		const char nul[] = "[sandbox]\n\0\n";
		c = conf_parse("test.conf", nul, sizeof nul - 1, err, sizeof err);
		OK(!c && strstr(err, "NUL"), "NUL byte rejected");
		conf_free(c);
	}
	c = conf_load("/nonexistent/sandbox.conf", err, sizeof err);
	OK(!c && strstr(err, "/nonexistent/sandbox.conf: cannot open"), "missing file names the path");
	DONE();
}
