#define _GNU_SOURCE
#include "registry.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "req.h"

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* A package as its registry names it: NAME, with npm's "@SCOPE/" before it
 * or pip's "[EXTRAS]" after, then optionally a version ("==1.2", ">=1,<2",
 * "@^1.2", gem's ":1.2").  Not a path, an archive, a URL, a VCS spec or an
 * option: those install code from elsewhere than the registry. */
static bool registry_spec(const char *s)
{
	const char *p = s;
	if (*p == '@') {
		size_t k = strspn(++p, NAME_CHARS);
		if (!k || p[k] != '/')
			return false;
		p += k + 1;
	}
	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
		return false;
	size_t k = strspn(p, NAME_CHARS);
	/* A name ending like an archive is a local file to pip, npm and gem
	 * (pip's own list of archive extensions, and the rest's). */
	static const char *const archives[] = { "gz", "tgz", "tar", "bz2", "tbz", "tbz2", "tb2", "xz", "txz", "lz", "tlz",
						"lzma", "zst", "zip", "whl", "egg", "gem", NULL };
	const char *dot = memrchr(p, '.', k);
	for (int i = 0; dot && archives[i]; i++)
		if ((size_t)(p + k - dot - 1) == strlen(archives[i]) && !strncasecmp(dot + 1, archives[i], strlen(archives[i])))
			return false;
	p += k;
	if (*p == '[') {
		size_t e = strspn(++p, NAME_CHARS ",");
		if (p[e] != ']')
			return false;
		p += e + 1;
	}
	if (!*p)
		return true;
	if (!strchr("=<>!~@:", *p))
		return false;
	/* gem's NAME:VERSION, not npm's file:, git:, npm: and the like */
	if (*p == ':' && !(p[1] >= '0' && p[1] <= '9'))
		return false;
	return strspn(p + 1, NAME_CHARS "*+!~^<>=,|") == strlen(p + 1);
}

/* What an install may be given: 1 to 200 characters, never an option
 * (starting with "-"), and (install_specs = "registry") a registry's name
 * and version; with "any", whatever the package manager's alphabet. */
static bool package_name(const struct conf *c, const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 200 || s[0] == '-')
		return false;
	if (c->install_specs != CONF_SPECS_ANY)
		return registry_spec(s);
	return strspn(s, NAME_CHARS "+=<>!~[],@/:^") == n;
}

/* run is the language's install argv with package names for "{packages}". */
bool registry_install_matches(const struct conf *c, const struct conf_lang *l, char *const *run)
{
	if (!l || !l->install)
		return false;
	size_t r = 0, npkg = 0;
	for (char **a = l->install; *a; a++) {
		if (strcmp(*a, "{packages}")) {
			if (!run[r] || strcmp(run[r], *a))
				return false;
			r++;
			continue;
		}
		/* names up to the next fixed element (or the end) */
		for (; run[r] && !(a[1] && !strcmp(run[r], a[1])); r++, npkg++)
			if (!package_name(c, run[r]))
				return false;
	}
	return !run[r] && npkg >= 1 && npkg <= 64;
}

/* The language's install argv with "{packages}" replaced by the packages
 * (consumed): 1 to 64 names of 1 to 200 characters from a package
 * manager's alphabet, none starting with "-" (no option injection). */
jv registry_install_argv(const struct conf *c, const struct conf_lang *l, jv pkgs, bool in_session, char *err, size_t errlen)
{
	jv out = jv_invalid();
	int n = jv_get_kind(pkgs) == JV_KIND_ARRAY ? jv_array_length(jv_copy(pkgs)) : -1;
	if (!in_session)
		snprintf(err, errlen, "\"%s\" needs a \"%s\" to install into", REQ_KEY(install), REQ_KEY(session));
	else if (!l->install)
		snprintf(err, errlen, "language \"%s\" has no package manager configured (key \"install\")", l->name);
	else if (!c->install_network)
		snprintf(err, errlen, "installing packages is not allowed: install_network = false in %s", c->path);
	else if (n < 1 || n > 64)
		snprintf(err, errlen, "\"%s\" must be an array of 1 to 64 package names", REQ_KEY(install));
	else {
		out = jv_array();
		for (char **a = l->install; *a; a++) {
			if (strcmp(*a, "{packages}")) {
				out = jv_array_append(out, jv_string(*a));
				continue;
			}
			for (int i = 0; i < n && jv_is_valid(out); i++) {
				jv p = jv_array_get(jv_copy(pkgs), i);
				const char *s = jv_get_kind(p) == JV_KIND_STRING ? jv_string_value(p) : NULL;
				if (!s || !package_name(c, s)) {
					if (c->install_specs == CONF_SPECS_ANY)
						snprintf(err, errlen, "package %d is not a package name (letters, digits and ._-+=<>!~[],@/:^, "
							 "not starting with -)", i + 1);
					else
						snprintf(err, errlen, "package %d is not a package of the registry: a name, optionally with a "
							 "version (\"name==1.2\", \"name@^1.2\", \"@scope/name\"), not a path, URL, archive or "
							 "option (install_specs = \"any\" in %s allows them)", i + 1, c->path);
					jv_free(out);
					out = jv_invalid();
				} else
					out = jv_array_append(out, jv_string(s));
				jv_free(p);
			}
		}
	}
	jv_free(pkgs);
	return out;
}
