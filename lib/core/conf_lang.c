/* conf_lang: the [language.NAME] sections once parsed: what each must
 * hold (conf_lang_check, for conf.c's parser), and the lookups every tool
 * makes of them (conf.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "conf_int.h"
#include "hostpat.h"
#include "layout.h"
#include "util.h"

/* err = the message; false, for `return say(...)`. */
static bool say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return false;
}

bool conf_lang_name_ok(const char *s)
{
	if (!*s || strlen(s) > 32)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '+'))
			return false;
	return true;
}

static bool plain_name(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..") && strlen(s) < 256;
}

/* Thread pools the size of the CPU quota, not of the host: OpenBLAS and
 * OpenMP start a thread per online CPU, which under a quota only contend,
 * and where the memory limit is a per-process rlimit (no cgroups to be
 * had) OpenBLAS's per-thread buffers do not fit and numpy spins until the
 * timeout.  Every language gets them ahead of its own "env", which may
 * set them otherwise. */
static const char *const thread_env[] = {
	"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
};

static void add_thread_env(struct conf_lang *l)
{
	size_t nt = sizeof thread_env / sizeof *thread_env, n = 0, k = 0;
	while (l->env && l->env[n])
		n++;
	char **env = util_xalloc((nt + n + 1) * sizeof *env);
	for (size_t i = 0; i < nt; i++) {
		size_t len = strlen(thread_env[i]);
		bool own = false;
		for (size_t j = 0; j < n && !own; j++)
			own = !strncmp(l->env[j], thread_env[i], len) && l->env[j][len] == '=';
		if (!own)
			env[k++] = util_fmt("%s={cpus}", thread_env[i]);
	}
	for (size_t j = 0; j < n; j++)
		env[k++] = l->env[j];
	env[k] = NULL;
	free(l->env);
	l->env = env;
}

bool conf_lang_check(const struct conf *c, struct conf_lang *l, char *err, size_t errlen)
{
	if (!l->file)
		return say(err, errlen, "[language.%s]: missing key \"file\" (the program's file name)", l->name);
	if (!plain_name(l->file))
		return say(err, errlen, "[language.%s] key \"file\": must be a plain file name, got \"%s\"", l->name, l->file);
	if (!l->run || !l->run[0])
		return say(err, errlen, "[language.%s]: missing key \"run\" (the command that runs the program)", l->name);
	if (l->compile && !l->compile[0])
		return say(err, errlen, "[language.%s] key \"compile\": empty command (omit the key for interpreted languages)", l->name);
	/* Only the compiler's declared outputs may execute in the run stage:
	 * whatever else the compile stage leaves (a javac processor's copy of
	 * a shell, say) stays noexec. */
	int nout = 0;
	for (char **o = l->outputs; o && *o; o++, nout++)
		if (!plain_name(*o) || (*o)[0] == '.')
			return say(err, errlen, "[language.%s] key \"outputs\": \"%s\" must be a plain file name", l->name, *o);
	if (nout > NS_MAX_OUTPUTS)
		return say(err, errlen, "[language.%s] key \"outputs\": at most %d files", l->name, NS_MAX_OUTPUTS);
	if (l->outputs && !l->compile)
		return say(err, errlen, "[language.%s] key \"outputs\": only a compiled language has outputs", l->name);
	if (l->compile && !strncmp(l->run[0], "./", 2)) {
		bool declared = false;
		for (char **o = l->outputs; o && *o; o++)
			declared |= !strcmp(*o, l->run[0] + 2);
		if (!declared)
			return say(err, errlen, "[language.%s] key \"run\": runs \"%s\", which is not among \"outputs\" (add "
				    "outputs = [\"%s\"]: only declared outputs are executable)", l->name, l->run[0], l->run[0] + 2);
	}
	if (l->version && !l->version[0])
		return say(err, errlen, "[language.%s] key \"version\": empty command", l->name);
	if (l->install) {
		bool has = false;
		for (char **s = l->install; *s; s++)
			if (strstr(*s, "{packages}"))
				has = true;
		if (!has)
			return say(err, errlen, "[language.%s] key \"install\": needs a \"{packages}\" element", l->name);
	}
	if (l->install && c->install_network && !l->registries)
		return say(err, errlen,
			    "[language.%s] key \"install\": needs \"registries\", the hosts its installs may reach (through their "
			    "proxy)", l->name);
	char why[400];
	for (char **r = l->registries; r && *r; r++)
		if (!hostpat_ok(*r, why, sizeof why))
			return say(err, errlen, "[language.%s] key \"registries\": %s", l->name, why);
	for (char **e = l->env; e && *e; e++)
		if (!strchr(*e, '=') || **e == '=')
			return say(err, errlen, "[language.%s] key \"env\": \"%s\" is not NAME=value", l->name, *e);
	add_thread_env(l);
	for (char **b = l->binds; b && *b; b++)
		if ((*b)[0] != '/' || strstr(*b, "/../") || strstr(*b, "/.."))
			return say(err, errlen, "[language.%s] key \"binds\": \"%s\" must be an absolute path without ..", l->name, *b);
	for (char **a = l->aliases; a && *a; a++)
		if (!conf_lang_name_ok(*a))
			return say(err, errlen, "[language.%s] key \"aliases\": \"%s\" is not a valid name", l->name, *a);
	return true;
}

const struct conf_lang *conf_lang(const struct conf *c, const char *name)
{
	for (size_t i = 0; i < c->nlangs; i++)
		if (!strcasecmp(c->langs[i].name, name))
			return &c->langs[i];
	for (size_t i = 0; i < c->nlangs; i++)
		for (char **a = c->langs[i].aliases; a && *a; a++)
			if (!strcasecmp(*a, name))
				return &c->langs[i];
	return NULL;
}

const struct conf_lang *conf_lang_by_file(const struct conf *c, const char *path)
{
	const char *base = strrchr(path, '/');
	const char *ext = strrchr(base ? base + 1 : path, '.');
	const struct conf_lang *found = NULL;
	if (!ext || ext == (base ? base + 1 : path))
		return NULL;
	for (size_t i = 0; i < c->nlangs; i++) {
		const struct conf_lang *l = &c->langs[i];
		const char *e = strrchr(l->file, '.');
		if (!e || strcmp(e, ext))
			continue;
		if (found)
			return NULL;
		found = l;
	}
	return found;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the languages (with a kernel only, if kernels), sorted and
 * comma-separated, into buf; "none" if there are none. */
static const char *lang_list(const struct conf *c, bool kernels, char *buf, size_t len)
{
	const char *names[256];
	size_t n = 0;
	for (size_t i = 0; i < c->nlangs && n < 256; i++)
		if (!kernels || c->langs[i].kernel)
			names[n++] = c->langs[i].name;
	qsort(names, n, sizeof *names, cmp_str);
	snprintf(buf, len, "%s", n ? "" : "none");
	for (size_t i = 0; i < n; i++) {
		if (i)
			strncat(buf, ", ", len - strlen(buf) - 1);
		strncat(buf, names[i], len - strlen(buf) - 1);
	}
	return buf;
}

const char *conf_lang_list(const struct conf *c)
{
	static char buf[2048];
	return lang_list(c, false, buf, sizeof buf);
}

const char *conf_kernel_list(const struct conf *c)
{
	static char buf[2048];
	return lang_list(c, true, buf, sizeof buf);
}

void conf_lang_limits(const struct conf *c, const struct conf_lang *l, struct limits *run, struct limits *compile)
{
	for (int i = 0; i < LIM_N; i++) {
		uint32_t bit = 1u << i;
		double r = l && (l->lim.set & bit) ? limit_get(&l->lim.run, i) : limit_get(&c->lim.run, i);
		double k = l && (l->lim.cset & bit)   ? limit_get(&l->lim.compile, i)
			   : limit_defs[i].compile ? limit_get(&c->lim.compile, i)
						   : r;
		if (run)
			limit_set(run, i, r);
		if (compile)
			limit_set(compile, i, k);
	}
}

void conf_max_limits(const struct conf *c, struct limits *out)
{
	for (int i = 0; i < LIM_N; i++)
		limit_set(out, i, limit_defs[i].req ? limit_get(&c->ceiling, i) : limit_get(&c->lim.run, i));
	for (size_t n = 0; n <= c->nlangs; n++) {
		struct limits r, k;
		conf_lang_limits(c, n < c->nlangs ? &c->langs[n] : NULL, &r, &k);
		for (int i = 0; i < LIM_N; i++) {
			double m = fmax(limit_get(&r, i), limit_get(&k, i));
			if (m > limit_get(out, i))
				limit_set(out, i, m);
		}
	}
}
