/* conf: the configuration file (etc/sandbox.conf), TOML-like and strict.
 *
 * Grammar: `# comments`; `[sandbox]`, `[sessions]`, `[http]`, `[language.NAME]`
 * headers; `key = value` where a value is a "string" (\" \\ \n \t \uXXXX
 * escapes) or 'literal string', an integer, a float, true/false, or an
 * array of strings that may span lines.  Sizes are "256m"-style strings or
 * plain byte counts; durations are seconds (10, 0.5) or "500ms"/"5m"/"1h".
 *
 * Every key is a row of conf_key.h's table with its type and range; an
 * unknown key, a duplicate, a value of the wrong type or out of range is an
 * error naming the file, the line and the key.  Nothing is defaulted
 * silently except keys that are absent, which take their row's default
 * (conf_key.h; etc/sandbox.conf documents them).
 *
 * conf_load returns a struct conf that owns all its strings; conf_free
 * releases it.  The struct is read-only after loading.
 */
#ifndef SBX_CONF_H
#define SBX_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf_key.h"
#include "limit.h"

/* A section's limits (limit.h): the run stage's, the compile stage's
 * (compile_KEY) and, in [sandbox] only, the ceilings requests may raise
 * them to (max_KEY).  A language section may override any run or compile
 * limit; `set` and `cset` have a bit per limit it gave. */
struct conf_limits {
	struct limits run, compile;
	uint32_t set, cset;
};

struct conf_lang {
	char *name;
	/* Its keys' fields (conf_key.h's CONF_LANG_KEYS). */
	CONF_LANG_KEYS(CONF_FIELD)
	struct conf_limits lim;
	int line;           /* where the section starts */
};

struct conf {
	char *path;         /* the file this came from */
	char *dir;          /* the file's directory: the base of its relative paths */

	/* [sandbox]'s limits, and the ceilings (max_KEY) of the limits a
	 * request may set */
	struct conf_limits lim;
	struct limits ceiling;
	/* Every other key's field (conf_key.h's CONF_KEYS): backend,
	 * max_code_size, ..., session_ttl_ms, ..., http_max_body, ...,
	 * mcp_structured, ...; a choice's is its enum (CONF_BACKEND_NATIVE). */
	CONF_KEYS(CONF_FIELD)

	bool state_per_user; /* conf_user_state moved state_dir to the user's own */
	char *state_note;   /* what conf_user_state did or could not do, or NULL */
	int uid_line;       /* the line that set uid; 0 for the default */

	struct conf_lang *langs;
	size_t nlangs;
};

/* Find the file: `explicit` (-c), then $SBX_CONF, then ../etc/sandbox.conf
 * or ../etc/sbx/sandbox.conf beside the binary, then SYSCONFDIR/sbx and
 * /etc/sbx.  Returns a path the caller frees, or NULL (with a message in
 * err) if none exists. */
char *conf_find(const char *explicit, char *err, size_t errlen);

/* Parse a file.  On error returns NULL and writes "FILE:LINE: message" into
 * err. */
struct conf *conf_load(const char *path, char *err, size_t errlen);
/* Parse from memory (for tests and fuzzing); `name` appears in errors. */
struct conf *conf_parse(const char *name, const char *text, size_t len, char *err, size_t errlen);
void conf_free(struct conf *c);

/* An ordinary user who cannot write state_dir (a root-owned checkout or
 * installed tree) gets their own: $XDG_STATE_HOME/sbx, else
 * ~/.local/state/sbx, made 0700; a history inside state_dir moves with it.
 * Root's state is never moved.  state_note says what happened. */
void conf_user_state(struct conf *c);
/* The history file of the packaged sbx-mcp.service, which runs as a user
 * of its own with XDG_STATE_HOME=SBX_STATEDIR-mcp (share/systemd): where
 * conf_user_state puts that user's (caller frees).  An administrator asks
 * for it by name (sbx-history --server) without knowing the layout. */
char *conf_server_history(const struct conf *c);

/* conf_find + conf_load + conf_user_state, and as root conf_uid_problem;
 * on failure prints the error and exits 2. */
struct conf *conf_open(const char *explicit);

/* As root, the sandboxes' host ids uid..uid+3 (the init, the program, the
 * mapped nobody, the egress proxy; uids and gids alike) must belong to no
 * one: none below 1000 (the system's range), none an account's or a
 * group's, unless allow_host_uids says otherwise.  Otherwise a program
 * could act as that account on what it owns.  NULL if they are free, or
 * why not (static). */
const char *conf_uid_problem(const struct conf *c);

/* By name or alias, in any case ("Python", "PY"). */
const struct conf_lang *conf_lang(const struct conf *c, const char *name_or_alias);
/* The language whose program file has path's extension
 * ("t.js" -> javascript), or NULL: none, or more than one. */
const struct conf_lang *conf_lang_by_file(const struct conf *c, const char *path);
/* Comma-separated language names, sorted, for error messages.  Static. */
const char *conf_lang_list(const struct conf *c);
/* The same of the languages with a kernel (run_cell), "none" if none. */
const char *conf_kernel_list(const struct conf *c);
/* The limits a language runs with: the sandbox defaults with its
 * overrides, for the run and the compile stage (a limit without
 * compile_KEY takes the run's value there). */
void conf_lang_limits(const struct conf *c, const struct conf_lang *l, struct limits *run, struct limits *compile);
/* The most any job may get of each limit under this configuration: the
 * ceilings, and every language's own run and compile values. */
void conf_max_limits(const struct conf *c, struct limits *out);

#endif
