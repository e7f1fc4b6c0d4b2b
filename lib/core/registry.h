/* registry: the grammar of what an install may be given.
 *
 * A request's "install" is a list of packages for its language's package
 * manager (the configuration's "install" command, "{packages}" in it).
 * With install_specs = "registry" (the default) each must name a package
 * of the registry, with an optional version, never a path, archive, URL,
 * VCS spec or option, which would install code from elsewhere; with
 * "any", whatever the package manager's alphabet allows, never an option.
 * sbx-validate builds the install's argv here; sbx-run holds a job's argv
 * to the same grammar, so a hand-written job cannot borrow an install's
 * network for another command.
 */
#ifndef SBX_REGISTRY_H
#define SBX_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <jv.h>

#include "conf.h"

/* The language's install argv with "{packages}" replaced by the packages
 * (consumed), or jv_invalid() with err: no session (in_session false), no
 * package manager, installs not allowed, or a package outside the grammar. */
jv registry_install_argv(const struct conf *c, const struct conf_lang *l, jv pkgs, bool in_session, char *err, size_t errlen);

/* Whether run is the language's install argv with 1 to 64 packages of the
 * grammar for "{packages}". */
bool registry_install_matches(const struct conf *c, const struct conf_lang *l, char *const *run);

#endif
