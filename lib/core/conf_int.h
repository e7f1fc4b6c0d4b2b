/* conf_int: between conf.c (the parser) and conf_lang.c (the language
 * sections), nothing else includes it. */
#ifndef SBX_CONF_INT_H
#define SBX_CONF_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"

/* A language's name or alias: a-z, 0-9, _, - and +, at most 32. */
bool conf_lang_name_ok(const char *s);
/* What a language section must hold once read: file and run, sound
 * outputs, registries, env, binds and aliases; adds the thread pools'
 * sizes to its env.  False with the message (without "FILE:LINE: ") in
 * err; the caller reports it at the section's line.  Relative paths
 * (rootfs) are the caller's to resolve. */
bool conf_lang_check(const struct conf *c, struct conf_lang *l, char *err, size_t errlen);

#endif
