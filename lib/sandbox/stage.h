/* stage: what a stage is handed and gives back on either backend, apart
 * from the sandbox itself: the environment a program starts from (nothing
 * of the caller's), a language's version probe read from a stage's
 * result, and signal names.  run.c (the orchestration), box.c and dock.c
 * (the two backends) and sbx-run's --check share it, so that neither
 * backend depends on the orchestration above it.
 */
#ifndef SBX_STAGE_H
#define SBX_STAGE_H

#include <stddef.h>

#include <jv.h>

#include "box.h"
#include "conf.h"

/* The environment a program of a language starts from (the base entries,
 * then the language's "env"), and its release. */
char **stage_env(char *const *extra);
/* A language's environment for a probe with limits lim (placeholders
 * expanded); free with util_strv_free. */
char **stage_lang_env(const struct conf_lang *l, const struct limits *lim);
/* The first line a version command printed, or null with err set (`where`
 * names the sandbox: "the sandbox", "its container"). */
jv stage_version(const struct stage_result *r, const char *where, char *err, size_t errlen);

/* "SIGSEGV" for 11. */
const char *stage_signal_name(int sig, char *buf, size_t len);

#endif
