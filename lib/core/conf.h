/* conf: the configuration file (etc/sandbox.conf), TOML-like and strict.
 *
 * Grammar: `# comments`; `[sandbox]`, `[sessions]`, `[http]`, `[language.NAME]`
 * headers; `key = value` where a value is a "string" (\" \\ \n \t \uXXXX
 * escapes) or 'literal string', an integer, a float, true/false, or an
 * array of strings that may span lines.  Sizes are "256m"-style strings or
 * plain byte counts; durations are seconds (10, 0.5) or "500ms"/"5m"/"1h".
 *
 * Every key is declared in a table in conf.c with its type and range; an
 * unknown key, a duplicate, a value of the wrong type or out of range is an
 * error naming the file, the line and the key.  Nothing is defaulted
 * silently except keys that are absent, which take the built-in defaults
 * documented in etc/sandbox.conf.
 *
 * conf_load returns a struct conf that owns all its strings; conf_free
 * releases it.  The struct is read-only after loading.
 */
#ifndef SBX_CONF_H
#define SBX_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	char **aliases;     /* NULL-terminated */
	char *image;        /* docker backend */
	char *file;         /* the program's file name in the scratch directory */
	bool file_by_class; /* Java's rule: the file is named after the public class (job.c's public_class) */
	char **compile;     /* argv or NULL for interpreted languages */
	char **outputs;     /* the compile stage's executables, run stage only (W^X), or NULL */
	char **run;         /* argv; the request's args are appended */
	char **version;     /* argv printing the runtime's version, or NULL */
	char **install;     /* package manager argv; "{packages}" expands to the list */
	char **registries;  /* the hosts an install may reach, through its proxy (egress.h) */
	char **env;         /* extra "NAME=value" entries */
	char **binds;       /* extra read-only host paths visible in the sandbox */
	char *rootfs;       /* replaces the host's tree, or NULL */
	char *hint;         /* how to install the runtime, for error messages */
	char **kernel;      /* argv of its kernel for run_cell (cell.h), or NULL: none */
	struct conf_limits lim;
	int line;           /* where the section starts */
};

struct conf {
	char *path;         /* the file this came from */
	char *dir;          /* the file's directory: the base of its relative paths */

	/* [sandbox] */
	char *backend;      /* "native" or "docker" */
	struct conf_limits lim;
	struct limits ceiling;  /* max_KEY of the limits a request may set */
	uint64_t max_code_size, max_stdin_size, max_files_size, max_files, max_record_size;
	uint64_t max_artifacts, max_artifacts_size; /* files a run made, returned with "artifacts": true */
	uint64_t max_tests, max_tests_size; /* a judged request's "tests": how many, their data in all */
	uint64_t test_output;               /* what one test's stdout may be, to be judged */
	bool network;
	uint64_t max_concurrent;
	char *state_dir;    /* absolute after loading */
	char *history;      /* absolute after loading */
	bool state_per_user; /* conf_user_state moved state_dir to the user's own */
	char *state_note;   /* what conf_user_state did or could not do, or NULL */
	char *history_code; /* "preview" (first 500 characters) or "full" (code and capped output) */
	char *history_sync; /* "normal" or "full" (SQLite's synchronous) */
	uint64_t uid;       /* host uid (and gid) base for sandboxes when run as root */
	bool allow_host_uids; /* uid..uid+3 may be host accounts (conf_uid_problem) */
	int uid_line;       /* the line that set uid; 0 for the default */
	char *cgroup_parent;
	int seccomp_errno;
	char **etc;         /* /etc entries bound read-only into the sandbox */
	bool compile_cache;
	bool compile_cache_shared; /* entries shared between principals (tokens) */
	bool slots;          /* as root: keep network namespaces between runs (slot.h) */
	uint64_t max_slots;  /* per process */
	uint64_t cache_size;

	/* [sessions] */
	uint64_t session_ttl_ms, max_sessions, workspace_size;
	bool install_network;
	bool workspace_exec; /* programs may execute files of a session's workspace (W^X off there) */
	uint64_t max_sessions_per_token; /* sbx-mcp over HTTP: sessions one token may hold */
	char *install_specs; /* "registry": package names and versions only; "any": what the package manager takes */
	bool install_any;   /* install_specs is "any" */
	uint64_t kernel_idle_ms;        /* a kernel no cell used this long is stopped */
	uint64_t max_kernels;           /* live kernels of one sbx-run */
	uint64_t max_kernels_per_token; /* sbx-mcp: live kernels one token may hold */

	/* [http]: sbx-mcp --listen */
	uint64_t http_max_body;           /* request body, bytes */
	double http_rate;                 /* requests per second per token ... */
	uint64_t http_burst;              /* ... with bursts of this many */
	uint64_t http_max_inflight;       /* requests being answered per token */
	uint64_t http_session_ttl_ms;     /* an Mcp-Session-Id idle this long expires */
	uint64_t http_max_sessions;       /* Mcp-Session-Ids per token */
	char **http_origins;              /* Origins allowed besides the server's own, or NULL */
	char **http_hosts;                /* Host names allowed besides loopback and IP literals */
	uint64_t http_max_connections;    /* open at once; past it, one without a token yet is closed */
	uint64_t http_max_per_address;    /* the same, from one client address */
	uint64_t http_head_timeout_ms;    /* a connection without a token: its whole request within this */
	uint64_t http_timeout_ms;         /* an idle connection is closed after this */
	uint64_t http_grace_ms;           /* SIGTERM: running calls may finish this long */
	char *http_dashboard;             /* "own": a token's dashboard shows its runs; "all": every run */
	bool http_dashboard_all;

	/* [mcp]: what sbx-mcp's run tools return (mcptools.h) */
	char *mcp_structured;             /* "auto", "always" or "never": structuredContent and outputSchema */
	uint64_t mcp_text_output;         /* each stream's head and tail in a result's text, bytes */
	uint64_t mcp_image_inline;        /* an inline image's base64 at most (larger: scaled down) */
	uint64_t mcp_max_timeout_ms;      /* a call that is not a task may ask this much time at most */
	uint64_t mcp_progress_ms;         /* a run's progress notifications at least this often */

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
/* The four host ids from uid on, in order: their key in --check's
 * host_ids and what each is, for people. */
extern const struct conf_host_id { const char *key, *what; } conf_host_ids[4];

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
