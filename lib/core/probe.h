/* probe: what this host offers a job, asked of the host itself.
 *
 * Whether a language's programs are installed where its sandbox will look
 * (the host's tree or the language's rootfs, on the PATH its environment
 * gives), and which backend jobs get.  sbx-validate asks before it writes
 * a job (a language whose runtime is missing is an invalid request, not a
 * failed run); the native backend asks again when it runs one.  The
 * answers for a language are cached for the loaded configuration.
 */
#ifndef SBX_PROBE_H
#define SBX_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"

/* Where argv0 is in a tree (rootfs, or the host's for NULL) on the PATH the
 * environment gives (or the sandbox's default): true with the path in out. */
bool probe_which(const char *rootfs, char *const *env, const char *argv0, char *out, size_t len);

/* The first program of the language's compile or run command that is not
 * on PATH in its tree (the host's or its rootfs), or NULL; cached. */
const char *probe_lang_missing(const struct conf *c, const struct conf_lang *l);

/* The backend jobs get: SBX_BACKEND if it names one, else the configuration's. */
const char *probe_backend(const struct conf *c);

#endif
