/* conf_key: the one table of configuration keys.
 *
 * Every key of etc/sandbox.conf besides the limits' (limit.h makes those:
 * KEY, compile_KEY and, in [sandbox], max_KEY) is one row of CONF_KEYS or,
 * in a [language.NAME] section, of CONF_LANG_KEYS: its section, its name,
 * its type, its field (in struct conf; in struct conf_lang for a
 * language's), its range, its default and, for a key with a fixed set of
 * values, its choices.  conf.h declares the fields from these rows;
 * conf.c parses, checks, defaults and frees by walking them, and an
 * unknown key's error lists them.  Adding a key is one row here plus its
 * use.
 *
 * Types and the fields they make: STR a char * the struct owns (NULL:
 * unset); BOOL a bool; INT a count, SIZE bytes ("256m" or a byte count),
 * DUR milliseconds (seconds, or "500ms", "5m"), all three uint64_t; FLOAT
 * a double; STRARR a NULL-terminated char ** the struct owns; ERRNO an int
 * (a name such as "EPERM", or a number); CHOICE the enum of its choices,
 * given in the file by the value's name; NET a struct conf_net.
 *
 * Columns: section, key, type, field, minimum, maximum (of INT, SIZE, DUR
 * in milliseconds, FLOAT and ERRNO's number; 0, 0 for the others),
 * default (of the field's type; a STRARR's is a CONF_STRV list), choices
 * (a CHOICE key's set from CONF_CHOICE_SETS; - for the others).
 */
#ifndef SBX_CONF_KEY_H
#define SBX_CONF_KEY_H

#include <stdbool.h>
#include <stdint.h>

/* ---- choices ---------------------------------------------------------- */

/* The values of each choice-valued key, written once: the enum constant
 * and the name the file gives it.  The first is not the default: the
 * key's row says which is. */
#define CONF_CHOICES_backend(X) X(CONF_BACKEND_NATIVE, "native") X(CONF_BACKEND_DOCKER, "docker")
/* "preview": the first 500 characters of code; "full": code and capped output */
#define CONF_CHOICES_history_code(X) X(CONF_CODE_PREVIEW, "preview") X(CONF_CODE_FULL, "full")
/* SQLite's synchronous */
#define CONF_CHOICES_history_sync(X) X(CONF_SYNC_NORMAL, "normal") X(CONF_SYNC_FULL, "full")
/* "registry": package names and versions only; "any": what the package manager takes */
#define CONF_CHOICES_install_specs(X) X(CONF_SPECS_REGISTRY, "registry") X(CONF_SPECS_ANY, "any")
/* "own": a token's dashboard shows its runs; "all": every run */
#define CONF_CHOICES_dashboard(X) X(CONF_DASHBOARD_OWN, "own") X(CONF_DASHBOARD_ALL, "all")
/* structuredContent and outputSchema: "auto" as the client suits */
#define CONF_CHOICES_structured(X) \
	X(CONF_STRUCTURED_AUTO, "auto") X(CONF_STRUCTURED_ALWAYS, "always") X(CONF_STRUCTURED_NEVER, "never")

/* The sets, and how a value outside one is reported: "\"podman\" is not "
 * then `what` with the names joined "a, b or c" in place of its %s. */
#define CONF_CHOICE_SETS(X) \
	X(backend, "a backend (%s)") \
	X(history_code, "%s") \
	X(history_sync, "%s") \
	X(install_specs, "%s") \
	X(dashboard, "%s") \
	X(structured, "%s")

/* enum conf_backend { CONF_BACKEND_NATIVE, CONF_BACKEND_DOCKER }, ...,
 * and conf_backend_names[value]: "native", ... (NULL-terminated). */
#define CONF_CHOICE_ENUM(value, name) value,
#define CONF_CHOICE_SET_DECL(set, what) \
	enum conf_##set { CONF_CHOICES_##set(CONF_CHOICE_ENUM) }; \
	extern const char *const conf_##set##_names[];
CONF_CHOICE_SETS(CONF_CHOICE_SET_DECL)
#undef CONF_CHOICE_SET_DECL

/* ---- keys ------------------------------------------------------------- */

#define CONF_KB 1024.0
#define CONF_MB (1024.0 * 1024)
#define CONF_GB (1024.0 * 1024 * 1024)
#define CONF_TB (CONF_GB * 1024)

/* A NET key's field: where runs may connect.  false (the default): no
 * network; a list of host patterns (hostpat.h): those, through the
 * sandbox's proxy (egress.h); "host": the host's own network namespace,
 * for trusted set-ups only. */
struct conf_net {
	bool host;
	char **hosts; /* the patterns, or NULL */
};

/* A STRARR's default: a list of string literals. */
#define CONF_STRV(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The /etc entries bound read-only into the sandbox unless etc says
 * otherwise. */
#define CONF_DEFAULT_ETC CONF_STRV( \
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone", \
	"ssl", "ca-certificates", "ca-certificates.conf", "services", "protocols", "mime.types", \
	"os-release", "locale.alias", "gai.conf", \
	/* Runtimes' configuration that Debian links from /usr into /etc; \
	 * fontconfig's and matplotlib's, for programs that draw. */ \
	"python3", "python3.*", "java-*", "php", "perl", "ruby", "fonts", "matplotlibrc")

#define CONF_KEYS(X) \
	/* section  key                            type     field                   min        max              default               choices */ \
	X(SANDBOX,  "backend",                     CHOICE,  backend,                0,         0,               CONF_BACKEND_NATIVE,  backend) \
	X(SANDBOX,  "max_code_size",               SIZE,    max_code_size,          1,         256 * CONF_MB,   64 * CONF_KB,         -) \
	X(SANDBOX,  "max_stdin_size",              SIZE,    max_stdin_size,         0,         256 * CONF_MB,   1 * CONF_MB,          -) \
	X(SANDBOX,  "max_files_size",              SIZE,    max_files_size,         0,         256 * CONF_MB,   4 * CONF_MB,          -) \
	X(SANDBOX,  "max_files",                   INT,     max_files,              0,         100000,          100,                  -) \
	/* files a run made, returned with "artifacts": true */ \
	X(SANDBOX,  "max_artifacts",               INT,     max_artifacts,          0,         64,              8,                    -) \
	X(SANDBOX,  "max_artifacts_size",          SIZE,    max_artifacts_size,     0,         8 * CONF_MB,     4 * CONF_MB,          -) \
	X(SANDBOX,  "max_record_size",             SIZE,    max_record_size,        4 * CONF_KB, 1 * CONF_GB,   16 * CONF_MB,         -) \
	/* a judged request's "tests": how many, their data in all; what one \
	 * test's stdout may be, to be judged */ \
	X(SANDBOX,  "max_tests",                   INT,     max_tests,              1,         100000,          100,                  -) \
	X(SANDBOX,  "max_tests_size",              SIZE,    max_tests_size,         0,         1 * CONF_GB,     16 * CONF_MB,         -) \
	X(SANDBOX,  "test_output",                 SIZE,    test_output,            1 * CONF_KB, 256 * CONF_MB, 4 * CONF_MB,          -) \
	/* false, "host" or a list of host patterns (struct conf_net) */ \
	X(SANDBOX,  "network",                     NET,     network,                0,         0,               false,                -) \
	X(SANDBOX,  "max_concurrent",              INT,     max_concurrent,         1,         4096,            4,                    -) \
	/* absolute after loading; unset, state_dir is SBX_STATEDIR and history \
	 * sandbox_history.db in it (conf.c's parse) */ \
	X(SANDBOX,  "state_dir",                   STR,     state_dir,              0,         0,               NULL,                 -) \
	X(SANDBOX,  "history",                     STR,     history,                0,         0,               NULL,                 -) \
	X(SANDBOX,  "history_code",                CHOICE,  history_code,           0,         0,               CONF_CODE_PREVIEW,    history_code) \
	X(SANDBOX,  "history_sync",                CHOICE,  history_sync,           0,         0,               CONF_SYNC_NORMAL,     history_sync) \
	/* host uid (and gid) base for sandboxes when run as root; \
	 * allow_host_uids: uid..uid+3 may be host accounts (conf_uid_problem) */ \
	X(SANDBOX,  "uid",                         INT,     uid,                    1,         4294967294.0 - 3, 60000,               -) \
	X(SANDBOX,  "allow_host_uids",             BOOL,    allow_host_uids,        0,         0,               false,                -) \
	X(SANDBOX,  "cgroup_parent",               STR,     cgroup_parent,          0,         0,               "sbx",                -) \
	X(SANDBOX,  "seccomp_errno",               ERRNO,   seccomp_errno,          1,         4095,            EPERM,                -) \
	/* /etc entries bound read-only into the sandbox */ \
	X(SANDBOX,  "etc",                         STRARR,  etc,                    0,         0,               CONF_DEFAULT_ETC,     -) \
	/* compile_cache_shared: entries shared between principals (tokens) */ \
	X(SANDBOX,  "compile_cache",               BOOL,    compile_cache,          0,         0,               true,                 -) \
	X(SANDBOX,  "compile_cache_shared",        BOOL,    compile_cache_shared,   0,         0,               false,                -) \
	/* as root: keep network namespaces between runs (slot.h); max_slots \
	 * per process */ \
	X(SANDBOX,  "slots",                       BOOL,    slots,                  0,         0,               true,                 -) \
	X(SANDBOX,  "max_slots",                   INT,     max_slots,              1,         64,              16,                   -) \
	X(SANDBOX,  "cache_size",                  SIZE,    cache_size,             0,         CONF_TB,         256 * CONF_MB,        -) \
	\
	X(SESSIONS, "ttl",                         DUR,     session_ttl_ms,         1000,      365 * 86400e3,   1800e3,               -) \
	X(SESSIONS, "max_sessions",                INT,     max_sessions,           0,         100000,          16,                   -) \
	/* sbx-mcp over HTTP: sessions one token may hold */ \
	X(SESSIONS, "max_sessions_per_token",      INT,     max_sessions_per_token, 1,         100000,          4,                    -) \
	X(SESSIONS, "workspace_size",              SIZE,    workspace_size,         64 * CONF_KB, CONF_TB,      256 * CONF_MB,        -) \
	X(SESSIONS, "install_network",             BOOL,    install_network,        0,         0,               true,                 -) \
	/* programs may execute files of a session's workspace (W^X off there) */ \
	X(SESSIONS, "workspace_exec",              BOOL,    workspace_exec,         0,         0,               true,                 -) \
	X(SESSIONS, "install_specs",               CHOICE,  install_specs,          0,         0,               CONF_SPECS_REGISTRY,  install_specs) \
	/* a kernel no cell used this long is stopped; live kernels of one \
	 * sbx-run; sbx-mcp: live kernels one token may hold */ \
	X(SESSIONS, "kernel_idle",                 DUR,     kernel_idle_ms,         1000,      365 * 86400e3,   600e3,                -) \
	X(SESSIONS, "max_kernels",                 INT,     max_kernels,            0,         100000,          16,                   -) \
	X(SESSIONS, "max_kernels_per_token",       INT,     max_kernels_per_token,  0,         100000,          4,                    -) \
	/* processes (process_start): how many one session runs at once (0: \
	 * none), what sbx-mcp keeps of each one's output (its first quarter \
	 * and its latest bytes), and how long a session whose processes run \
	 * may live from its start (the idle ttl counts only when none runs) */ \
	X(SESSIONS, "max_processes",               INT,     max_processes,          0,         1000,            8,                    -) \
	X(SESSIONS, "process_output",              SIZE,    process_output,         4 * CONF_KB, 256 * CONF_MB, 1 * CONF_MB,          -) \
	X(SESSIONS, "max_life",                    DUR,     session_max_life_ms,    1000,      86400e3,         28800e3,              -) \
	/* checkpoints one session tree (a session and its forks) keeps (0: \
	 * none); they share the tree's workspace_size */ \
	X(SESSIONS, "max_checkpoints",             INT,     max_checkpoints,        0,         1000,            32,                   -) \
	\
	/* [http]: sbx-mcp --listen */ \
	/* request body, bytes */ \
	X(HTTP,     "max_body",                    SIZE,    http_max_body,          1 * CONF_KB, 1 * CONF_GB,   8 * CONF_MB,          -) \
	/* requests per second per token, with bursts of this many */ \
	X(HTTP,     "rate",                        FLOAT,   http_rate,              0.01,      1e6,             20,                   -) \
	X(HTTP,     "burst",                       INT,     http_burst,             1,         1e6,             40,                   -) \
	/* requests being answered per token */ \
	X(HTTP,     "max_inflight",                INT,     http_max_inflight,      1,         100000,          16,                   -) \
	/* an Mcp-Session-Id idle this long expires; Mcp-Session-Ids per token */ \
	X(HTTP,     "session_ttl",                 DUR,     http_session_ttl_ms,    1000,      365 * 86400e3,   3600e3,               -) \
	X(HTTP,     "max_sessions",                INT,     http_max_sessions,      1,         100000,          64,                   -) \
	/* Origins allowed besides the server's own; Host names allowed besides \
	 * loopback and IP literals; NULL: none */ \
	X(HTTP,     "origins",                     STRARR,  http_origins,           0,         0,               NULL,                 -) \
	X(HTTP,     "hosts",                       STRARR,  http_hosts,             0,         0,               NULL,                 -) \
	/* open at once; past it, one without a token yet is closed; the same, \
	 * from one client address */ \
	X(HTTP,     "max_connections",             INT,     http_max_connections,   1,         100000,          256,                  -) \
	X(HTTP,     "max_connections_per_address", INT,     http_max_per_address,   1,         100000,          64,                   -) \
	/* a connection without a token: its whole request within this */ \
	X(HTTP,     "request_timeout",             DUR,     http_head_timeout_ms,   1000,      3600e3,          10e3,                 -) \
	/* an idle connection is closed after this */ \
	X(HTTP,     "timeout",                     DUR,     http_timeout_ms,        1000,      86400e3,         30e3,                 -) \
	/* SIGTERM: running calls may finish this long */ \
	X(HTTP,     "shutdown_grace",              DUR,     http_grace_ms,          0,         86400e3,         10e3,                 -) \
	X(HTTP,     "dashboard",                   CHOICE,  http_dashboard,         0,         0,               CONF_DASHBOARD_OWN,   dashboard) \
	\
	/* [mcp]: what sbx-mcp's run tools return (mcptools.h) */ \
	X(MCP,      "structured",                  CHOICE,  mcp_structured,         0,         0,               CONF_STRUCTURED_AUTO, structured) \
	/* each stream's head and tail in a result's text, bytes */ \
	X(MCP,      "text_output",                 SIZE,    mcp_text_output,        256,       256 * CONF_MB,   8 * CONF_KB,          -) \
	/* an inline image's base64 at most (larger: scaled down) */ \
	X(MCP,      "image_inline",                SIZE,    mcp_image_inline,       1 * CONF_KB, 64 * CONF_MB,  48 * CONF_KB,         -) \
	/* a call that is not a task may ask this much time at most */ \
	X(MCP,      "max_timeout",                 DUR,     mcp_max_timeout_ms,     1000,      86400e3,         50e3,                 -) \
	/* a run's progress notifications at least this often */ \
	X(MCP,      "progress_interval",           DUR,     mcp_progress_ms,        500,       3600e3,          10e3,                 -)

/* A [language.NAME] section's keys, fields of struct conf_lang; file and
 * run are required (conf_lang.c's checks), the rest may be absent. */
#define CONF_LANG_KEYS(X) \
	/* section  key                            type     field                   min        max              default               choices */ \
	X(LANG,     "aliases",                     STRARR,  aliases,                0,         0,               NULL,                 -) \
	/* docker backend */ \
	X(LANG,     "image",                       STR,     image,                  0,         0,               NULL,                 -) \
	/* the program's file name in the scratch directory */ \
	X(LANG,     "file",                        STR,     file,                   0,         0,               NULL,                 -) \
	/* Java's rule: the file is named after the public class (job.c's public_class) */ \
	X(LANG,     "file_by_class",               BOOL,    file_by_class,          0,         0,               false,                -) \
	/* argv or NULL for interpreted languages */ \
	X(LANG,     "compile",                     STRARR,  compile,                0,         0,               NULL,                 -) \
	/* the compile stage's executables, run stage only (W^X), or NULL */ \
	X(LANG,     "outputs",                     STRARR,  outputs,                0,         0,               NULL,                 -) \
	/* argv; the request's args are appended */ \
	X(LANG,     "run",                         STRARR,  run,                    0,         0,               NULL,                 -) \
	/* argv printing the runtime's version, or NULL */ \
	X(LANG,     "version",                     STRARR,  version,                0,         0,               NULL,                 -) \
	/* package manager argv; "{packages}" expands to the list */ \
	X(LANG,     "install",                     STRARR,  install,                0,         0,               NULL,                 -) \
	/* the hosts an install may reach, through its proxy (egress.h) */ \
	X(LANG,     "registries",                  STRARR,  registries,             0,         0,               NULL,                 -) \
	/* extra "NAME=value" entries */ \
	X(LANG,     "env",                         STRARR,  env,                    0,         0,               NULL,                 -) \
	/* extra read-only host paths visible in the sandbox */ \
	X(LANG,     "binds",                       STRARR,  binds,                  0,         0,               NULL,                 -) \
	/* replaces the host's tree, or NULL */ \
	X(LANG,     "rootfs",                      STR,     rootfs,                 0,         0,               NULL,                 -) \
	/* how to install the runtime, for error messages */ \
	X(LANG,     "hint",                        STR,     hint,                   0,         0,               NULL,                 -) \
	/* argv of its kernel for run_cell (cell.h), or NULL: none */ \
	X(LANG,     "kernel",                      STRARR,  kernel,                 0,         0,               NULL,                 -)

/* The C type of a key's field. */
#define CONF_T_STR(choices) char *
#define CONF_T_BOOL(choices) bool
#define CONF_T_INT(choices) uint64_t
#define CONF_T_SIZE(choices) uint64_t
#define CONF_T_DUR(choices) uint64_t
#define CONF_T_FLOAT(choices) double
#define CONF_T_STRARR(choices) char **
#define CONF_T_ERRNO(choices) int
#define CONF_T_CHOICE(choices) enum conf_##choices
#define CONF_T_NET(choices) struct conf_net
#define CONF_FIELD(sect, key, type, field, min, max, dflt, choices) CONF_T_##type(choices) field;

#endif
