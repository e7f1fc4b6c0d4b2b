#include "probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"
#include "util.h"

bool probe_which(const char *rootfs, char *const *env, const char *argv0, char *out, size_t len)
{
	const char *root = rootfs ? rootfs : "";
	struct stat st;
	if (argv0[0] == '/') {
		snprintf(out, len, "%s%s", root, argv0);
		return access(out, X_OK) == 0;
	}
	const char *p = util_env_path(env, NS_PATH);
	while (util_path_next(&p, root, argv0, out, len))
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return true;
	return false;
}

/* Is argv0 a program that exists in the sandbox's tree?  Cached per
 * language (probe_lang_missing): a stat or two per PATH entry, once. */
static const char *find_missing(const struct conf_lang *l, char **argv)
{
	if (!argv || !argv[0] || (argv[0][0] != '/' && strchr(argv[0], '/')))
		return NULL; /* ./main is made by the compile stage */
	char path[4096];
	return probe_which(l->rootfs, l->env, argv[0], path, sizeof path) ? NULL : argv[0];
}

const char *probe_lang_missing(const struct conf *c, const struct conf_lang *l)
{
	/* One cache slot per language of the (single) loaded configuration. */
	static const struct conf *cached_conf;
	static signed char *state; /* 0 unknown, 1 present, 2 missing */
	static const char **which;
	size_t idx = (size_t)(l - c->langs);
	if (cached_conf != c) {
		free(state);
		free(which);
		state = util_xalloc(c->nlangs);
		which = util_xalloc(c->nlangs * sizeof *which);
		cached_conf = c;
	}
	if (!state[idx]) {
		const char *m = find_missing(l, l->compile);
		if (!m)
			m = find_missing(l, l->run);
		which[idx] = m;
		state[idx] = m ? 2 : 1;
	}
	return state[idx] == 2 ? which[idx] : NULL;
}

const char *probe_backend(const struct conf *c)
{
	const char *b = getenv("SBX_BACKEND");
	if (b && (!strcmp(b, "native") || !strcmp(b, "docker")))
		return b;
	return conf_backend_names[c->backend];
}
