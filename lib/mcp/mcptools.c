#define _GNU_SOURCE
#include "mcptools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "imgsize.h"
#include "proc.h"
#include "rec.h"
#include "req.h"
#include "status.h"
#include "thumb.h"
#include "util.h"
#include "wsfs.h"

/* An argument of a tool's own (a request's fields come from req.h). */
struct arg {
	const char *key;
	unsigned types;             /* req.h's RK_ bits */
	bool required;
};

struct tool_def {
	struct mcp_tool t;
	const char *title;
	const char *description;   /* printf format; see describe() */
	unsigned fields;            /* req.h's RT_ bit: the request fields it takes, after its own */
	struct arg args[12];        /* its own, terminated by an empty entry: at most 11 */
	const char *input_schema;  /* JSON */
	const char *output_schema; /* JSON */
	bool read_only, destructive, idempotent;
};

/* Schemas are JSON with ` for " (a C string full of \" is unreadable), and
 * a comma may end a list (the macros below end with one); schema_parse
 * turns them back.  No schema here may hold a real backtick.
 *
 * Portability: one "type" per schema (a client that maps tool schemas onto
 * a single-type dialect, such as Gemini's OpenAPI subset, rejects type
 * arrays), so a value of two kinds is an anyOf; every property described,
 * so that a model reads what it is for; enums wherever the set is closed.
 * The Inspector CLI's --strict check holds them to it (t/68).  A run's
 * "status" enum is filled in from status.h (schema_parse), the one
 * list of them. */
#define NULLABLE(type, desc) "{`anyOf`:[{`type`:`" type "`},{`type`:`null`}],`description`:`" desc "`}"
#define STR(desc) "{`type`:`string`,`description`:`" desc "`}"
#define INT(desc) "{`type`:`integer`,`description`:`" desc "`}"
#define NUM(desc) "{`type`:`number`,`description`:`" desc "`}"
#define BOOL(desc) "{`type`:`boolean`,`description`:`" desc "`}"
#define STRS(desc) "{`type`:`array`,`items`:{`type`:`string`},`description`:`" desc "`}"
#define SIZE(desc) "{`anyOf`:[{`type`:`string`},{`type`:`number`}],`description`:`" desc "`}"

/* What every run's result has, judged or a cell or not. */
#define RUN_FIELDS                                                                                                  \
	"`id`:" STR("the run's id (its record in the history)") ","                                               \
	"`language`:" STR("the language it ran as") ","                                                             \
	"`status`:{`type`:`string`,`description`:`how the run ended: success; error (non-zero exit, a signal, an "   \
	"exception); rejected (judged: it ran, its output was refused; see verdict); timeout; memory_limit; "        \
	"compile_error; invalid (the request was refused: see error); internal_error (no sandbox could be made); "  \
	"cancelled`,`enum`:`@statuses`},"                                                                            \
	"`exit_code`:" NULLABLE("integer", "the program's exit code; null if it never exited by itself") ","        \
	"`signal`:" NULLABLE("string", "the signal that ended it (SIGKILL, ...), else null") ","                    \
	"`stdout`:" STR("what it printed: the head and tail when cut (stdout_truncated)") ","                       \
	"`stderr`:" STR("its error output: the head and tail when cut (stderr_truncated)") ","                      \
	"`stdout_bytes`:" INT("every byte it printed on stdout, kept or not") ","                                    \
	"`stderr_bytes`:" INT("every byte it printed on stderr, kept or not") ","                                    \
	"`stdout_truncated`:" BOOL("stdout was cut to its head and tail (max_output, or the server's output limit)") "," \
	"`stderr_truncated`:" BOOL("stderr was cut to its head and tail") ","                                         \
	"`duration_ms`:" NULLABLE("number", "wall-clock time of the run") ","                                        \
	"`cpu_ms`:" NULLABLE("number", "CPU time used, null where not measured (cells)") ","                        \
	"`memory_peak_bytes`:" NULLABLE("integer", "the most memory it held, null where not measured (cells)") ","   \
	"`compile`:" NULLABLE("object", "the compile stage (status, exit_code, stdout, stderr, duration_ms, "        \
			      "cached) of a compiled language, else null") ","                                       \
	"`error`:" STR("why the run failed, in words (a refused request, a sandbox that could not be made, a "     \
		       "program that could not start)") ","                                                          \
	"`limits_enforced`:" STRS("the limits this host held for the run: namespaces, seccomp, timeout, "           \
				  "memory, memory_rlimit, cpus, pids, rlimits") ","                                  \
	"`limits_missing`:" STRS("what this host could not hold of namespaces, seccomp, timeout, memory, "           \
				 "cpus, pids (check_backend says why and how to fix it); empty when all held") ","   \
	"`session_id`:" STR("the session it ran in") ","                                                             \
	"`history_id`:" NULLABLE("integer", "its row in the execution history, null if not logged") ","             \
	"`artifacts`:{`type`:`array`,`description`:`files the run made or changed: images also come as image "      \
	"content, other files as resources (uri)`,`items`:{`type`:`object`,`properties`:{"                           \
	"`path`:" STR("its path in the working directory") ",`mime_type`:" STR("its type") ","                     \
	"`bytes`:" INT("its size") ",`uri`:" STR("its resource, for resources/read") ","                           \
	"`shown`:" STR("for an image: inline, inline at WxH of WxH (a copy scaled down to image_inline; the whole " \
		       "as a resource), or not inline and why") "}}},"                         \
	"`artifacts_truncated`:" BOOL("more files were made than a result carries") ","                             \
	"`egress`:{`type`:`array`,`description`:`the connections through its proxy (a network allow-list's, or "     \
	"an install's), each allowed or "                                                                             \
	"refused and why`,`items`:{`type`:`object`,`properties`:{`host`:" NULLABLE("string", "the host asked for") \
	",`port`:" NULLABLE("integer", "its port") ",`allowed`:" BOOL("whether the proxy let it through") ","       \
	"`why`:" STR("why it was refused or failed") ",`bytes_sent`:" INT("bytes from the sandbox") ","             \
	"`bytes_received`:" INT("bytes to the sandbox") ",`duration_ms`:" NUM("how long it lasted") "}}},"          \
	"`network`:{`anyOf`:[{`type`:`boolean`},{`type`:`array`,`items`:{`type`:`string`}}],`description`:`the "    \
	"network the run had: the hosts its proxy let through, or true for the host's own`},"                       \
	"`network_approved`:" STRS("hosts the session's user, asked, allowed for its later runs") ","              \
	"`user_approved`:" STRS("which of network's hosts the session's user approved when asked, earlier") ","     \
	"`network_asked`:" STR("what the session's user answered when asked: accept, decline, cancel or "          \
			       "no answer") ","

/* Judged runs (run_code with tests). */
#define JUDGE_FIELDS                                                                                                 \
	"`verdict`:{`type`:`string`,`description`:`accepted, or the first failing test's status, or compile_error`," \
	"`enum`:`@verdicts`},"                                                                                       \
	"`tests_passed`:" INT("tests passed") ",`tests_total`:" INT("tests given") ","                              \
	"`failed_test`:" INT("the index of the test that decided the verdict (absent when accepted)") ","          \
	"`tests`:{`type`:`array`,`description`:`one entry per test, in order`,`items`:{`type`:`object`,"            \
	"`properties`:{`index`:" INT("its index") ",`status`:{`type`:`string`,`description`:`how it went`,"         \
	"`enum`:`@test_statuses`},`duration_ms`:" NUM("wall-clock time") ","                                         \
	"`diff`:{`type`:`object`,`description`:`wrong_answer: the first difference (line, token, expected, got)`}," \
	"`checker_message`:" STR("what the checker wrote") "}}},"

/* A cell's (run_cell). */
#define CELL_FIELDS                                                                                                  \
	"`value`:" NULLABLE("string", "the last expression's value as text (a notebook's Out[n]), else null") ","    \
	"`execution_count`:" INT("the cell's number in its kernel (1, 2, ... from the kernel's start)") ","        \
	"`kernel`:{`type`:`string`,`enum`:[`started`,`live`,`restarted`,`died`],`description`:`started: this cell "  \
	"started the kernel; live: it ran in a kernel that had run cells before; restarted: an earlier kernel was "   \
	"gone (kernel_note says why; its state is lost); died: the kernel did not outlive this cell`},"              \
	"`kernel_alive`:" BOOL("whether the kernel lives on after this cell, its state kept") ","                    \
	"`kernel_note`:" STR("what happened to the kernel and its state, when anything did") ","

#define RESULT_SCHEMA(fields) "{`type`:`object`,`properties`:{" fields "},`required`:[`status`]}"
#define RUN_RESULT_SCHEMA RESULT_SCHEMA(RUN_FIELDS)

#define FILE_VALUE                                                                                                   \
	"{`anyOf`:[{`type`:`string`,`description`:`the file's text`},{`type`:`object`,`description`:`its bytes`,"   \
	"`properties`:{`content`:" STR("the content, base64 with encoding base64") ",`encoding`:{`type`:`string`,"  \
	"`enum`:[`utf-8`,`base64`],`description`:`how content is written`}},`required`:[`content`]}]}"
/* Where a tool's input schema has the request fields it takes (req.h's
 * RT_ bits: struct tool_def's fields), or a test's or a checker's schema
 * the fields of a test or a checker (RW_TEST, RW_CHECKER), in table
 * order: each one's name, type, description and whether it is required
 * come from req.h's table (req_mcp_doc), the parts of a value with parts
 * of its own from the shapes below.  fill_fields() puts them there. */
#define REQUEST_FIELDS "`@fields`:{},"

/* The parts of a request field's value with parts of its own (req.h's RS_
 * shapes), beside the type and description its row gives. */
static const char *const shapes[] = {
	[RS_FILES] = "{`additionalProperties`:" FILE_VALUE "}",
	[RS_TESTS] = "{`items`:{`type`:`object`,`properties`:{" REQUEST_FIELDS "},`additionalProperties`:false}}",
	[RS_CHECKER] = "{`properties`:{" REQUEST_FIELDS "},`additionalProperties`:false}",
};

/* A session's process (process_start, process_list). */
#define PROCESS_SCHEMA                                                                                               \
	"{`type`:`object`,`properties`:{`process_id`:" STR("its handle, for the other process tools") ","           \
	"`session_id`:" STR("its session") ","                                                                       \
	"`state`:{`type`:`string`,`enum`:[`starting`,`running`,`exited`],`description`:`where it is`},"             \
	"`command`:" STRS("its argv, if it is a command") ",`code`:" STR("the first line of its code, if it is code") "," \
	"`language`:" STR("its language") ",`cwd`:" STR("where it started") ","                                      \
	"`tty`:{`anyOf`:[{`type`:`boolean`},{`type`:`object`}],`description`:`its terminal, if it has one`},"       \
	"`started_at`:" STR("when (ISO 8601)") ",`output_bytes`:" INT("every byte it printed so far") ","            \
	"`end`:{`type`:`object`,`description`:`how it ended (exited only): status, exit_code, signal, duration_ms, "  \
	"cpu_ms, memory_peak_bytes, error, history_id`}},`required`:[`process_id`,`state`]}"

/* process_signal's names, from proc.h's list (a trailing comma is
 * dropped by schema_parse). */
#define SIGNAL_ENUM(s) "`" #s "`,"

/* A session's open port (port_open, process_list). */
#define PORT_SCHEMA                                                                                                  \
	"{`type`:`object`,`properties`:{`port`:" INT("the session's port") ","                                     \
	"`url`:" STR("where the user opens it") ",`path`:" STR("over HTTP: the url's path on this server") ","      \
	"`opened_at`:" STR("when (ISO 8601)") "},`required`:[`port`,`url`]}"

/* How much of each stream the result carries (mcp_run_text). */
#define MAX_OUTPUT_SCHEMA                                                                                            \
	"`max_output`:{`type`:`integer`,`minimum`:0,`description`:`bytes of stdout and of stderr to return, head "  \
	"and tail (default: the whole in structuredContent, a shorter head and tail in the text)`},"

static const struct tool_def defs[] = {
	{ { "run_code", MCP_T_RUN }, "Run code",
	  "Run a program in a fresh, isolated sandbox and return what it printed, how it ended and the files it "
	  "wrote. Languages: %L. The sandbox has %H, %M of memory (up to %Y with \"memory\"), %C CPU (up to "
	  "%Z with \"cpus\"), %T s wall time (max %X with \"timeout\"); %O of stdout and of stderr is kept (head "
	  "and tail; \"max_output\" asks for less or more).%E Compiled languages are compiled first; a compiler "
	  "error comes back as status compile_error with the compiler's messages in compile.stderr (compile.stdout "
	  "for tsc). A program that fails is a normal result (status error, timeout or memory_limit, with exit_code "
	  "or signal), not a tool error. Files the program writes in its working directory come back: images "
	  "(a plot saved as PNG) as images, other files as embedded resources. Nothing persists after the run; use "
	  "sandbox_initialize for state. \"dependencies\" installs packages (pip, npm, ...) for this run only; "
	  "they import as usual, also from ES modules and TypeScript (node_modules is in the working directory). "
	  "To judge a program, give \"tests\" ([{stdin, args, files, expected_stdout, timeout, memory}], at most "
	  "%J): it is compiled once and each test runs in a fresh sandbox; \"compare\" is trim (the default: "
	  "trailing whitespace ignored), exact, tokens, float:EPS, or checker (then \"checker\": {language, code}, "
	  "run as `checker input output expected`, exit 0 accepts, 1 rejects). The result has \"verdict\" "
	  "(accepted, or the first failing test's: wrong_answer, timeout, memory_limit, error, output_limit, "
	  "judge_error; or compile_error), tests_passed, tests_total and \"tests\", one entry per test; its status "
	  "is success when accepted and rejected when the program ran but its output was refused.",
	  RT_RUN, { { "dependencies", RK_STRS, false }, { "max_output", RK_INT, false } },
	  "{`type`:`object`,`properties`:{" REQUEST_FIELDS
	  "`dependencies`:" STRS("packages to install first with the language's package manager (pip, npm, ...)") ","
	  MAX_OUTPUT_SCHEMA
	  "},`additionalProperties`:false}",
	  RESULT_SCHEMA(RUN_FIELDS JUDGE_FIELDS), false, false, false },
	{ { "list_supported_languages", MCP_T_LANGUAGES }, "List supported languages",
	  "List the languages this server runs: name, aliases, whether they are compiled, the runtime's version "
	  "as seen inside the sandbox, whether it is available on this backend (and how to install it if not), "
	  "and whether packages can be installed for it.",
	  0, { { NULL, 0, false } },
	  "{`type`:`object`,`properties`:{},`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`backend`:" STR("native or docker") ",`languages`:{`type`:`array`,"
	  "`description`:`one entry per language`,`items`:{`type`:`object`,`properties`:{"
	  "`name`:" STR("the name to give as language") ",`aliases`:" STRS("other names it answers to") ","
	  "`compiled`:" BOOL("whether a compile stage comes first") ",`file`:" STR("the program's file name") ","
	  "`image`:" NULLABLE("string", "its Docker image (docker backend)") ","
	  "`version`:" NULLABLE("string", "the runtime's version, as seen in the sandbox") ","
	  "`available`:" BOOL("whether it runs here") ",`packages`:" BOOL("whether packages can be installed") ","
	  "`error`:" STR("why it is not available, and what would fix it") "},`required`:[`name`,`available`]}}},"
	  "`required`:[`languages`]}",
	  true, false, true },
	{ { "get_execution_history", MCP_T_HISTORY }, "Get execution history",
	  "Past runs of this server and of the sbx tools, newest first: id, language, status, exit code, "
	  "duration, memory, output sizes, the first 500 characters of the code, error. Filters: since/until (ISO "
	  "8601, today, yesterday, or a time ago with its unit such as 30m, 1h, 7d), language and status (one, or "
	  "a comma-separated list), id, session_id, egress_refused (runs whose proxy refused a connection), limit "
	  "(default 20). With "
	  "stats: true, counts, success rate and p50/p95/max duration per language and status instead.",
	  0, { { "since", RK_STR, false }, { "until", RK_STR, false }, { "language", RK_STR, false }, { "status", RK_STR, false },
	    { "id", RK_STR, false }, { "session_id", RK_STR, false }, { "egress_refused", RK_BOOL, false },
	    { "limit", RK_INT, false }, { "stats", RK_BOOL, false } },
	  "{`type`:`object`,`properties`:{"
	  "`since`:" STR("runs at or after: 2026-11-29, 2026-11-29T10:00Z, today, yesterday, or a time ago such as 30m, 12h, 7d") ","
	  "`until`:" STR("runs before, in the same forms as since") ","
	  "`language`:" STR("only this language (or a comma-separated list)") ","
	  "`status`:" STR("only this status (or a comma-separated list): @statuses") ","
	  "`id`:" STR("the run of this id") ","
	  "`session_id`:" STR("only the runs of this session") ","
	  "`limit`:{`type`:`integer`,`minimum`:0,`maximum`:10000,`description`:`at most this many runs (default 20; 0: up to 10000)`},"
	  "`egress_refused`:" BOOL("only runs whose proxy refused a connection (or one failed): see each run's egress") ","
	  "`stats`:" BOOL("counts, success rate and durations per language and status instead of runs") "},"
	  "`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`runs`:{`type`:`array`,`description`:`the runs, newest first`,"
	  "`items`:{`type`:`object`}},`stats`:{`type`:`array`,`description`:`one row per language and status`,"
	  "`items`:{`type`:`object`}}}}",
	  true, false, true },
	{ { "check_backend", MCP_T_CHECK }, "Check the sandbox backend",
	  "Check that sandboxes can be made here: for the native backend user namespaces, cgroups (memory, CPU "
	  "and process limits), seccomp and a trial sandbox; for the docker backend the engine (its version) and "
	  "each language's image; and every language's runtime. When something is missing the result says "
	  "what and how to fix it (\"fixes\"), and isError is true if no sandbox can be made.",
	  0, { { NULL, 0, false } },
	  "{`type`:`object`,`properties`:{},`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`backend`:" STR("native or docker") ","
	  "`usable`:" BOOL("whether sandboxes can be made") ","
	  "`fixes`:" STRS("what is missing and how to fix it") ","
	  "`languages`:{`type`:`array`,`description`:`each language's runtime`,`items`:{`type`:`object`}},"
	  "`limits_missing`:" STRS("limits this host cannot hold (empty when all hold)") ","
	  "`workspace`:{`type`:`object`,`description`:`the sessions' workspaces`,`properties`:{"
	  "`filesystem`:{`type`:`string`,`enum`:" WSFS_KINDS_JSON ",`description`:`what holds them`},"
	  "`note`:" STR("what that means, and what would give a quota") "}}},"
	  "`required`:[`usable`,`fixes`]}",
	  true, false, true },
	{ { "sandbox_initialize", MCP_T_INIT }, "Start a session",
	  "Start a persistent session: a private workspace directory (%W) that every sandbox_exec and run_cell of "
	  "the session runs in, so files persist between runs (nothing else does: each run is a fresh sandbox). "
	  "Optional \"language\" (the default for sandbox_exec), \"dependencies\" to install now, \"network\" "
	  "(sandbox_exec's default), \"ttl\" (seconds idle before the session is removed; default %S). Returns session_id. At most %N sessions at once.",
	  RT_INIT, { { "dependencies", RK_STRS, false }, { "ttl", RK_NUM, false } },
	  "{`type`:`object`,`properties`:{" REQUEST_FIELDS
	  "`dependencies`:" STRS("packages to install now") ","
	  "`ttl`:" NUM("idle seconds before the session is removed") "},`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session, for the other session tools") ","
	  "`language`:" NULLABLE("string", "its default language") ","
	  "`expires_at`:" STR("when it is removed if idle (ISO 8601)") ","
	  "`network`:{`anyOf`:[{`type`:`boolean`},{`type`:`array`,`items`:{`type`:`string`}}],"
	  "`description`:`the network its runs have unless a call gives its own`},"
	  "`workspace_bytes`:" NULLABLE("integer", "what its workspace may hold") ","
	  "`workspace_filesystem`:{`type`:`string`,`enum`:" WSFS_KINDS_JSON ",`description`:`what holds the workspace`},"
	  "`workspace_note`:" STR("what that means for its size") ","
	  "`install`:{`type`:`object`,`description`:`the dependencies' install, as a run's result`}},"
	  "`required`:[`session_id`]}",
	  false, false, false },
	{ { "sandbox_exec", MCP_T_EXEC }, "Run in a session",
	  "Run code, a workspace file or a command in a session's workspace (its working directory), in a fresh "
	  "sandbox with the same limits as run_code, and return what it printed and how it ended. Give exactly "
	  "one of: \"code\" (with \"language\", default the session's; it never replaces a workspace file), "
	  "\"file\" (a workspace path, run by the interpreter of its extension's language, or of \"language\"), "
	  "\"command\" (an argv array, e.g. [\"sh\",\"-c\",\"make && ./app\"], with the session language's "
	  "environment). Files the program writes stay in the workspace (list_files, read_file) and come back as "
	  "resource links, images as images; unless the server is configured otherwise (workspace_exec = false), "
	  "later commands may execute them.%E",
	  RT_EXEC, { { "session_id", RK_STR, true }, { "file", RK_STR, false }, { "max_output", RK_INT, false } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session (sandbox_initialize)") ","
	  REQUEST_FIELDS "`file`:" STR("a workspace file to run, such as main.py") "," MAX_OUTPUT_SCHEMA
	  "},`required`:[`session_id`],`additionalProperties`:false}",
	  RUN_RESULT_SCHEMA, false, false, false },
	{ { "run_cell", MCP_T_CELL }, "Run a cell in a session's kernel",
	  "Run code in the session's kernel, as a notebook cell: one interpreter per session and language (%K) "
	  "that lives from cell to cell, so variables, imports and loaded data persist (load a file once, then "
	  "query it). It runs in a sandbox like every run (no network, the session's workspace as its working "
	  "directory, run_code's memory, CPU and process limits for the kernel's whole life); \"timeout\" (default "
	  "%T s) is the cell's. The result is run_code's plus \"value\" (the last expression's value as text, as a "
	  "notebook's Out[n]), \"execution_count\", \"kernel\" (started, live, restarted or died) and "
	  "\"kernel_alive\". Figures a cell draws or changes (matplotlib) come back as images. An exception is "
	  "status error with its traceback; a cell past its timeout is interrupted (status timeout) and the state "
	  "is kept. A kernel that dies (or is stopped after %I s idle) loses its state: its cell and the next one "
	  "say so in \"kernel_note\". \"reset\": true starts a fresh kernel. \"memory\" and \"cpus\" size the "
	  "kernel: given with other values than the live kernel's, they restart it (its state is lost, and "
	  "kernel_note says so). JavaScript cells may use top-level await. Cells of a session run one at a time "
	  "(later ones wait their turn).%E",
	  RT_CELL, { { "session_id", RK_STR, true }, { "max_output", RK_INT, false } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session (sandbox_initialize)") ","
	  REQUEST_FIELDS MAX_OUTPUT_SCHEMA
	  "},`required`:[`session_id`],`additionalProperties`:false}",
	  RESULT_SCHEMA(RUN_FIELDS CELL_FIELDS), false, false, false },
	{ { "sandbox_stop", MCP_T_STOP }, "End a session",
	  "End a session and delete its workspace and every file in it.",
	  0, { { "session_id", RK_STR, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session to end") "},`required`:[`session_id`],"
	  "`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`stopped`:" BOOL("whether it was ended now (false: it was already gone)") "},`required`:[`stopped`]}",
	  false, true, true },
	{ { "write_file", MCP_T_WRITE }, "Write a workspace file",
	  "Write a file into a session's workspace (parent directories are created). \"path\" is relative to the "
	  "workspace, without \"..\"; \"content\" is text, or base64 with \"encoding\": \"base64\". At most %F per "
	  "file; the workspace holds %W.",
	  0, { { "session_id", RK_STR, true }, { "path", RK_STR, true }, { "content", RK_STR, true }, { "encoding", RK_STR, false } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`path`:" STR("where, relative to the workspace, without ..") ","
	  "`content`:" STR("the file's text, or its bytes in base64") ","
	  "`encoding`:{`type`:`string`,`enum`:[`utf-8`,`base64`],`description`:`how content is written (default utf-8)`}},"
	  "`required`:[`session_id`,`path`,`content`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`path`:" STR("the file written") ",`bytes`:" INT("its size") "},"
	  "`required`:[`path`,`bytes`]}",
	  false, false, true },
	{ { "read_file", MCP_T_READ }, "Read a workspace file",
	  "Read a regular file from a session's workspace. Text comes back as is (\"encoding\": \"utf-8\"), other "
	  "bytes as base64 (\"encoding\": \"base64\"). At most %F are returned (\"truncated\" says if there was more); "
	  "symbolic links, FIFOs and devices are refused.",
	  0, { { "session_id", RK_STR, true }, { "path", RK_STR, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`path`:" STR("the file, relative to the workspace") "},"
	  "`required`:[`session_id`,`path`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`path`:" STR("the file read") ",`content`:" STR("its text, or base64") ","
	  "`encoding`:{`type`:`string`,`enum`:[`utf-8`,`base64`],`description`:`how content is written`},"
	  "`bytes`:" INT("its size") ",`truncated`:" BOOL("there was more than was returned") "},"
	  "`required`:[`path`,`content`,`encoding`]}",
	  true, false, true },
	{ { "list_files", MCP_T_LIST }, "List workspace files",
	  "List the files of a session's workspace (or of a directory in it): path, type (file, dir, symlink, "
	  "other) and size, recursively, at most 1000 entries.",
	  0, { { "session_id", RK_STR, true }, { "path", RK_STR, false } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`path`:" STR("a directory of the workspace (default: all of it)") "},"
	  "`required`:[`session_id`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`files`:{`type`:`array`,`description`:`path, type and size of each`,"
	  "`items`:{`type`:`object`}},`truncated`:" BOOL("there were more than 1000") "},`required`:[`files`]}",
	  true, false, true },
	{ { "install_packages", MCP_T_INSTALL }, "Install packages into a session",
	  "Install packages into a session's workspace with its language's package manager (pip for Python, npm "
	  "for JavaScript, ...), so later sandbox_exec runs and cells can import them (from ES modules and "
	  "TypeScript too: node_modules is in the workspace). Only this step may reach the package registries, "
	  "and only if the server allows it. The result is the installer's run.",
	  RT_INSTALL, { { "session_id", RK_STR, true }, { "packages", RK_STRS, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`packages`:{`type`:`array`,`items`:{`type`:`string`},`minItems`:1,`description`:`package names, with versions if wanted (numpy, left-pad@1.3.0)`},"
	  REQUEST_FIELDS "},"
	  "`required`:[`session_id`,`packages`],`additionalProperties`:false}",
	  RUN_RESULT_SCHEMA, false, false, false },
	{ { "process_start", MCP_T_PSTART }, "Start a process in a session",
	  "Start a process in a session's workspace and return at once (when it has started) with its "
	  "process_id: a server, a watcher, a REPL, anything that runs while you make other calls. Give \"code\" "
	  "(in \"language\", default the session's) or a \"command\" argv such as [\"python3\", \"-m\", "
	  "\"http.server\", \"8000\"]; \"env\" and \"cwd\" (a workspace directory) are optional. It has run_code's "
	  "memory, CPU and process limits and runs until it ends, is signalled (process_signal), its \"timeout\" "
	  "(seconds, if given) passes, or the session ends (at most %Q h after it started); it keeps the session "
	  "from expiring meanwhile. Read its output with process_read (which can wait for a text such as "
	  "\"listening on\"), write its input with process_write; \"tty\": true gives it a terminal (for prompts, "
	  "REPLs and programs that draw), whose output is one stream. A session runs at most %P processes at once. "
	  "Its record goes to the execution history when it ends.%E",
	  RT_PROC, { { "session_id", RK_STR, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session (sandbox_initialize)") ","
	  REQUEST_FIELDS "},`required`:[`session_id`],`additionalProperties`:false}",
	  PROCESS_SCHEMA, false, false, false },
	{ { "process_read", MCP_T_PREAD }, "Read a process's output",
	  "Read a process's output (stdout and stderr as they came, or its terminal's) from \"cursor\" (a byte "
	  "offset; 0, the default, is the start; pass the \"cursor\" a read returned to get only what is new). "
	  "\"wait\" (seconds) waits for new output, or with \"until\" for that text in it, or for the process's "
	  "end, whichever comes first. What is kept is the first quarter of %G and the latest bytes: a read past "
	  "what was dropped says so in \"dropped_bytes\". \"state\" is starting, running or exited; an exited "
	  "process's \"end\" says how (status, exit_code, signal, duration).",
	  0, { { "session_id", RK_STR, true }, { "process_id", RK_STR, true }, { "cursor", RK_INT, false },
	       { "wait", RK_NUM, false }, { "until", RK_STR, false }, { "max_bytes", RK_INT, false } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ",`process_id`:" STR("the process (process_start)") ","
	  "`cursor`:{`type`:`integer`,`minimum`:0,`description`:`the offset to read from (0: the start; a read's cursor: what came after it)`},"
	  "`wait`:{`type`:`number`,`minimum`:0,`description`:`seconds to wait for new output (or until's text, or the end); 0: do not wait`},"
	  "`until`:" STR("with wait: wait for this text (not a pattern), such as listening on") ","
	  "`max_bytes`:{`type`:`integer`,`minimum`:1,`description`:`at most this many bytes (default 65536)`}},"
	  "`required`:[`session_id`,`process_id`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`process_id`:" STR("the process") ","
	  "`state`:{`type`:`string`,`enum`:[`starting`,`running`,`exited`],`description`:`where it is`},"
	  "`output`:" STR("its output from the cursor on") ",`cursor`:" INT("the offset after it: the next read's cursor") ","
	  "`more`:" BOOL("more output is kept past cursor (read again)") ","
	  "`dropped_bytes`:" INT("output between the cursor and this read's that was not kept") ","
	  "`until_found`:" BOOL("until's text is in output") ","
	  "`input_error`:" STR("what of the input, signals or resizes sent since the last read it could not take") ","
	  "`end`:{`type`:`object`,`description`:`how it ended: status, exit_code, signal, duration_ms, error`}},"
	  "`required`:[`process_id`,`state`,`output`,`cursor`]}",
	  true, false, false },
	{ { "process_write", MCP_T_PWRITE }, "Write to a process",
	  "Write text to a running process's standard input (its terminal's, with tty: end a line with \\n, and "
	  "\\u0003 is Ctrl-C), up to 64 KiB a call. \"eof\": true ends its input after the text (on a terminal, "
	  "Ctrl-D). \"rows\" and \"cols\" resize its terminal.",
	  0, { { "session_id", RK_STR, true }, { "process_id", RK_STR, true }, { "data", RK_STR, false },
	       { "eof", RK_BOOL, false }, { "rows", RK_INT, false }, { "cols", RK_INT, false } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ",`process_id`:" STR("the process") ","
	  "`data`:" STR("the text to write") ",`eof`:" BOOL("end its input after data") ","
	  "`rows`:{`type`:`integer`,`minimum`:1,`maximum`:1000,`description`:`its terminal's new height`},"
	  "`cols`:{`type`:`integer`,`minimum`:1,`maximum`:1000,`description`:`its terminal's new width`}},"
	  "`required`:[`session_id`,`process_id`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`process_id`:" STR("the process") ",`written_bytes`:" INT("bytes sent") ","
	  "`eof`:" BOOL("its input was ended") "},`required`:[`process_id`]}",
	  false, false, false },
	{ { "process_signal", MCP_T_PSIGNAL }, "Signal a process",
	  "Send a signal to a running process (and the processes it started in its group): INT is Ctrl-C, TERM "
	  "asks it to stop, KILL stops it now; the others the schema lists are as kill(1) sends them. "
	  "process_read with wait tells when it has ended.",
	  0, { { "session_id", RK_STR, true }, { "process_id", RK_STR, true }, { "signal", RK_STR, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ",`process_id`:" STR("the process") ","
	  "`signal`:{`type`:`string`,`enum`:[" PROC_SIGNALS(SIGNAL_ENUM) "],"
	  "`description`:`the signal`}},`required`:[`session_id`,`process_id`,`signal`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`process_id`:" STR("the process") ",`signal`:" STR("the signal sent") "},"
	  "`required`:[`process_id`]}",
	  false, true, false },
	{ { "process_list", MCP_T_PLIST }, "List a session's processes",
	  "List a session's processes, running and ended (while the session lives): id, command or code, state, "
	  "when it started, how much it printed, and for an ended one how it ended; and its open ports "
	  "(port_open).",
	  0, { { "session_id", RK_STR, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") "},`required`:[`session_id`],"
	  "`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`processes`:{`type`:`array`,`description`:`newest first`,`items`:"
	  PROCESS_SCHEMA "},`ports`:{`type`:`array`,`description`:`its open ports`,`items`:" PORT_SCHEMA "}},"
	  "`required`:[`processes`,`ports`]}",
	  true, false, true },
	{ { "port_open", MCP_T_POPEN }, "Open a session's port to the user",
	  "Let the user open what a session's process serves on a port of the session's loopback (a web app, "
	  "an API, a notebook): returns the \"url\" to give them. Over HTTP it is a path under this server's own "
	  "address, for your token (or its dashboard sign-in) only, HTTP and WebSocket; over stdio an address "
	  "on this machine's 127.0.0.1. The port stays open until port_close or the session's end; a "
	  "connection made while nothing listens there fails. Opening an open port returns its url again.",
	  0, { { "session_id", RK_STR, true }, { "port", RK_INT, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`port`:{`type`:`integer`,`minimum`:1,`maximum`:65535,`description`:`the port its process listens on`}},"
	  "`required`:[`session_id`,`port`],`additionalProperties`:false}",
	  PORT_SCHEMA, false, false, true },
	{ { "port_close", MCP_T_PCLOSE }, "Close a session's open port",
	  "Close a port port_open opened: its url stops answering and its connections end. The process "
	  "listening in the session is not touched.",
	  0, { { "session_id", RK_STR, true }, { "port", RK_INT, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`port`:{`type`:`integer`,`minimum`:1,`maximum`:65535,`description`:`the open port`}},"
	  "`required`:[`session_id`,`port`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`port`:" INT("the port") ",`closed`:" BOOL("it was open") "},"
	  "`required`:[`port`,`closed`]}",
	  false, true, true },
	{ { "checkpoint_create", MCP_T_CKPT }, "Checkpoint a session's files",
	  "Save a session's workspace as it is now (its files and installed packages) as a checkpoint, to go back "
	  "to with checkpoint_restore or to start new sessions from with checkpoint_fork: try a risky change, "
	  "explore several branches from one prepared state. Checkpoints form a tree (each one's parent is the "
	  "checkpoint the session's files last came from). Where the result's method is snapshot it takes "
	  "milliseconds whatever the workspace holds; copy costs time and room in proportion. A session, its forks "
	  "and their checkpoints share the session's %W; the server keeps a bounded number. Kernels' memory is not "
	  "saved: after a restore and in a fork, kernels start afresh.",
	  0, { { "session_id", RK_STR, true }, { "name", RK_STR, false } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`name`:" STR("a name for it, unique in the session's tree (1 to 64 printable characters)") "},"
	  "`required`:[`session_id`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`checkpoint_id`:" STR("the checkpoint") ","
	  "`name`:" NULLABLE("string", "its name") ",`parent`:" NULLABLE("string", "the checkpoint the session's files came from") ","
	  "`session_id`:" STR("the session") ",`method`:{`type`:`string`,`enum`:[`snapshot`,`copy`],`description`:"
	  "`snapshot: shared blocks, milliseconds whatever the size; copy: the files were copied`},"
	  "`copied_bytes`:" INT("what a copy copied") ",`duration_ms`:" NUM("how long it took") ","
	  "`kernels_saved`:" BOOL("whether the kernels' memory was saved (not yet: always false)") ","
	  "`kernels_live`:" STRS("the languages whose kernels were live") ",`kernel_note`:" STR("what becomes of them") "},"
	  "`required`:[`checkpoint_id`,`method`]}",
	  false, false, false },
	{ { "checkpoint_restore", MCP_T_RESTORE }, "Restore a session to a checkpoint",
	  "Return a session's workspace to a checkpoint of its tree (by id or name), discarding every change made "
	  "since. The session's kernels and processes are stopped (a kernel starts afresh at its next cell, and "
	  "says why); refused while a call runs in the session.",
	  0, { { "session_id", RK_STR, true }, { "checkpoint", RK_STR, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ","
	  "`checkpoint`:" STR("the checkpoint's id or name (checkpoint_list)") "},"
	  "`required`:[`session_id`,`checkpoint`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`session_id`:" STR("the session") ",`checkpoint_id`:" STR("the checkpoint") ","
	  "`restored`:" BOOL("it was restored") ",`method`:" STR("snapshot or copy") ",`copied_bytes`:" INT("what a copy copied") ","
	  "`duration_ms`:" NUM("how long it took") ",`kernels_stopped`:" STRS("the languages whose kernels were stopped") ","
	  "`processes_stopped`:" INT("processes stopped") "},`required`:[`restored`]}",
	  false, true, false },
	{ { "checkpoint_fork", MCP_T_FORK }, "Fork sessions from a checkpoint",
	  "Make new sessions whose workspaces start as a checkpoint of this session's tree: count of them (1 to 16), "
	  "each independent of the others and of this one (what one writes, no other sees), with this session's "
	  "language, network and time-to-live. They count against the sessions you may hold.",
	  0, { { "session_id", RK_STR, true }, { "checkpoint", RK_STR, true }, { "count", RK_INT, false } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("a session of the tree") ","
	  "`checkpoint`:" STR("the checkpoint's id or name") ","
	  "`count`:{`type`:`integer`,`minimum`:1,`maximum`:16,`description`:`how many sessions (default 1)`}},"
	  "`required`:[`session_id`,`checkpoint`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`session_ids`:" STRS("the new sessions") ",`checkpoint_id`:" STR("their checkpoint") ","
	  "`method`:" STR("snapshot or copy") ",`duration_ms`:" NUM("how long it took") ","
	  "`kernel_note`:" STR("what the forks' kernels are") "},`required`:[`session_ids`]}",
	  false, false, false },
	{ { "checkpoint_list", MCP_T_CKLIST }, "List a session tree's checkpoints",
	  "List the checkpoints of a session's tree (the session and those forked from it), newest first, with "
	  "each one's parent, name, time and size, and which checkpoint each of the tree's sessions came from.",
	  0, { { "session_id", RK_STR, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("a session of the tree") "},"
	  "`required`:[`session_id`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`checkpoints`:{`type`:`array`,`description`:`newest first`,`items`:{`type`:`object`,"
	  "`properties`:{`checkpoint_id`:" STR("its id") ",`name`:" NULLABLE("string", "its name") ","
	  "`parent`:" NULLABLE("string", "its parent checkpoint") ",`session_id`:" STR("the session it was taken of") ","
	  "`created_at`:" STR("when (ISO 8601)") ",`bytes`:" INT("the size of its files") "}}},"
	  "`sessions`:{`type`:`array`,`description`:`the tree's sessions`,`items`:{`type`:`object`,`properties`:{"
	  "`session_id`:" STR("a session") ",`checkpoint_id`:" NULLABLE("string", "the checkpoint its files came from") "}}},"
	  "`method`:" STR("snapshot or copy") ",`max_checkpoints`:" INT("how many the tree may keep") "},"
	  "`required`:[`checkpoints`,`sessions`]}",
	  true, false, true },
	{ { "checkpoint_delete", MCP_T_CKDELETE }, "Delete a checkpoint",
	  "Delete a checkpoint of a session's tree (by id or name), freeing its room. Sessions restored or forked "
	  "from it keep their files; its children's parent becomes its own.",
	  0, { { "session_id", RK_STR, true }, { "checkpoint", RK_STR, true } },
	  "{`type`:`object`,`properties`:{`session_id`:" STR("a session of the tree") ","
	  "`checkpoint`:" STR("the checkpoint's id or name") "},"
	  "`required`:[`session_id`,`checkpoint`],`additionalProperties`:false}",
	  "{`type`:`object`,`properties`:{`checkpoint_id`:" STR("the checkpoint") ",`deleted`:" BOOL("it was deleted") "},"
	  "`required`:[`deleted`]}",
	  false, true, false },
};

#define NDEFS (sizeof defs / sizeof defs[0])

const struct mcp_tool *mcp_tool_find(const char *name)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (!strcmp(defs[i].t.name, name))
			return &defs[i].t;
	return NULL;
}

const char *mcp_tool_names(void)
{
	static char names[512];
	size_t o = 0;
	for (size_t i = 0; i < NDEFS && o < sizeof names; i++)
		o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", defs[i].t.name);
	return names;
}

static const struct tool_def *def_of(const struct mcp_tool *t)
{
	return (const struct tool_def *)((const char *)t - offsetof(struct tool_def, t));
}

static bool tool_arg(const struct tool_def *d, int i, struct arg *a, bool *data);

/* The names of status.h's rows that can be a record's status (as 0), or
 * a verdict or a test's status (an SA_ bit), as a JSON array's text. */
static jv status_enum(unsigned as)
{
	jv names = jv_array();
	for (int i = 0; i < STATUS_N; i++)
		if (as ? status_as(i) & as : i < STATUS_NSTATUSES)
			names = jv_array_append(names, jv_string(status_name(i)));
	return jv_dump_string(names, 0);
}

/* A schema written as above: backticks become quotes, a comma before a
 * closing bracket goes, and the names of status.h's rows are filled in:
 * `@statuses`, `@verdicts` and `@test_statuses` (quoted placeholders) as
 * their arrays, a bare @statuses in a description as their list.  A schema
 * that does not parse is this file's bug: tools/list would lie, so it
 * stops here, at the first start. */
static jv schema_parse(const char *src)
{
	static const struct {
		const char *at;
		unsigned as;
	} enums[] = { { "`@statuses`", 0 }, { "`@verdicts`", SA_VERDICT }, { "`@test_statuses`", SA_TEST } };
	const char *list = status_list();
	size_t cap = strlen(src) * 2 + 4096, n = 0;
	char *out = util_xalloc(cap);
	for (const char *p = src; *p && n + 512 < cap; p++) {
		size_t e = 0, len = 0;
		while (e < sizeof enums / sizeof *enums && strncmp(p, enums[e].at, len = strlen(enums[e].at)))
			e++;
		if (e < sizeof enums / sizeof *enums) {
			jv arr = status_enum(enums[e].as);
			n += (size_t)snprintf(out + n, cap - n, "%s", jv_string_value(arr));
			jv_free(arr);
			p += len - 1;
		} else if (!strncmp(p, "@statuses", 9)) {
			n += (size_t)snprintf(out + n, cap - n, "%s", list);
			p += 8;
		} else if (*p == ',' && (p[1] == '}' || p[1] == ']'))
			continue;
		else
			out[n++] = *p == '`' ? '"' : *p;
	}
	out[n] = 0;
	jv v = jv_parse(out);
	if (jv_get_kind(v) != JV_KIND_OBJECT) {
		fprintf(stderr, "mcptools: a tool's schema is not JSON: %s\n", out);
		abort();
	}
	free(out);
	return v;
}

/* The request fields a schema's REQUEST_FIELDS stands for: those the
 * tools (RT_ bits) take, or those that may be in where (RW_ bits),
 * described as `as` (one RT_ bit) says and required where it requires
 * them. */
struct fields_of {
	unsigned tools, where, as;
};

static jv fill_fields(jv schema, struct fields_of of, const char *who);

/* A request field's property, described as `as` (one RT_ bit) says: its
 * type (an anyOf where it takes two), its description, the parts of its
 * shape; in the order the schemas above write them. */
static jv field_schema(const struct req_field *f, unsigned as)
{
	static const struct {
		unsigned kind;
		const char *type;
	} types[] = { { RK_STR, "string" }, { RK_NUM, "number" }, { RK_BOOL, "boolean" }, { RK_STRS, "array" },
		      { RK_OBJ, "object" },  { RK_INT, "integer" }, { RK_LIST, "array" } };
	jv any = jv_array();
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
		if (f->kinds & types[k].kind) {
			jv t = jv_object_set(jv_object(), jv_string("type"), jv_string(types[k].type));
			if (types[k].kind == RK_STRS)
				t = jv_object_set(t, jv_string("items"), jv_object_set(jv_object(), jv_string("type"), jv_string("string")));
			any = jv_array_append(any, t);
		}
	jv p = jv_array_length(jv_copy(any)) == 1 ? jv_array_get(jv_copy(any), 0) : jv_object_set(jv_object(), jv_string("anyOf"), jv_copy(any));
	jv_free(any);
	unsigned shape = 0;
	p = jv_object_set(p, jv_string("description"), jv_string(req_mcp_doc(f, as, &shape)));
	if (!shape)
		return p;
	jv parts = schema_parse(shapes[shape]);
	if (shape == RS_TESTS)
		parts = jv_object_set(parts, jv_string("items"),
				      fill_fields(rec_get(parts, "items"), (struct fields_of){ 0, RW_TEST, RT_TEST }, "a test"));
	else if (shape == RS_CHECKER)
		parts = fill_fields(parts, (struct fields_of){ 0, RW_CHECKER, RT_CHECKER }, "a checker");
	jv_object_foreach(parts, k, v)
		p = jv_object_set(p, k, v);
	jv_free(parts);
	return p;
}

/* schema (consumed), an object schema, with the request fields `of` says
 * where its properties have REQUEST_FIELDS, and those required after its
 * own required ones.  A schema without REQUEST_FIELDS for fields, or with
 * it for none, is this file's bug: it stops here, at the first start. */
static jv fill_fields(jv schema, struct fields_of of, const char *who)
{
	jv props = rec_get(schema, "properties");
	bool placed = false;
	if (jv_get_kind(props) != JV_KIND_OBJECT) {
		jv_free(props);
		return schema;
	}
	jv fields = jv_object(), required = rec_get(schema, "required");
	if (jv_get_kind(required) != JV_KIND_ARRAY) {
		jv_free(required);
		required = jv_array();
	}
	jv_object_foreach(props, k, v) {
		if (!strcmp(jv_string_value(k), "@fields")) {
			placed = true;
			for (int r = 0; r < REQ_N; r++) {
				const struct req_field *f = req_field(r);
				if (!(f->tools & of.tools) && !(f->where & of.where))
					continue;
				fields = jv_object_set(fields, jv_string(f->name), field_schema(f, of.as));
				if (f->required & of.as)
					required = jv_array_append(required, jv_string(f->name));
			}
			jv_free(k);
			jv_free(v);
		} else
			fields = jv_object_set(fields, k, v);
	}
	jv_free(props);
	if (placed != (of.tools || of.where)) {
		fprintf(stderr, "mcptools: %s's input schema %s its request fields\n", who, placed ? "has a place for no" : "has no place for");
		abort();
	}
	/* the keys in the order the text has them, "required" after
	 * "properties" */
	jv out = jv_object();
	jv_object_foreach(schema, k, v) {
		const char *key = jv_string_value(k);
		if (!strcmp(key, "properties")) {
			out = jv_object_set(out, k, jv_copy(fields));
			if (jv_array_length(jv_copy(required)))
				out = jv_object_set(out, jv_string("required"), jv_copy(required));
			jv_free(v);
		} else if (!strcmp(key, "required")) {
			jv_free(k);
			jv_free(v);
		} else
			out = jv_object_set(out, k, v);
	}
	jv_free(fields);
	jv_free(required);
	jv_free(schema);
	return out;
}

/* The description with the configuration's values: %L languages, %M
 * memory, %C cpus, %T timeout, %X max timeout, %O output, %W workspace
 * size (and what wsfs says of it), %S session ttl, %N max sessions, %F
 * file size, %I kernel idle time, %K languages with kernels, %P processes
 * a session may run, %Q a session's max_life in hours, %G what is kept of
 * a process's output, %E what this
 * host does not enforce of them (a sentence, or nothing), %H the network
 * a call may ask for. */
static char *describe(const struct conf *c, const char *ws_note, const char *host_note, const char *fmt)
{
	size_t cap = strlen(fmt) + 1024, o = 0;
	char *out = util_xalloc(cap);
	char b[64];
	for (const char *p = fmt; *p; p++) {
		const char *ins = NULL;
		char tmp[512];
		if (*p == '%' && p[1]) {
			p++;
			switch (*p) {
			case 'L': {
				size_t k = 0;
				tmp[0] = 0;
				for (size_t i = 0; i < c->nlangs && k < sizeof tmp - 40; i++)
					k += (size_t)snprintf(tmp + k, sizeof tmp - k, "%s%s", i ? ", " : "", c->langs[i].name);
				ins = tmp;
				break;
			}
			case 'M': ins = util_size_str(c->lim.run.memory, b, sizeof b); break;
			case 'C': snprintf(tmp, sizeof tmp, "%g", c->lim.run.cpus), ins = tmp; break;
			case 'T': snprintf(tmp, sizeof tmp, "%g", c->lim.run.timeout_ms / 1000.0), ins = tmp; break;
			case 'X': {
				/* a call's, unless it is a task ([mcp] max_timeout) */
				uint64_t x = c->ceiling.timeout_ms < c->mcp_max_timeout_ms ? c->ceiling.timeout_ms : c->mcp_max_timeout_ms;
				if (x < c->ceiling.timeout_ms)
					snprintf(tmp, sizeof tmp, "%g s, or %g s as a task,", x / 1000.0, c->ceiling.timeout_ms / 1000.0);
				else
					snprintf(tmp, sizeof tmp, "%g s", x / 1000.0);
				ins = tmp;
				break;
			}
			case 'Y': ins = util_size_str(c->ceiling.memory, b, sizeof b); break;
			case 'Z': snprintf(tmp, sizeof tmp, "%g", c->ceiling.cpus), ins = tmp; break;
			case 'O': ins = util_size_str(c->lim.run.output, b, sizeof b); break;
			case 'W':
				util_size_str(c->workspace_size, b, sizeof b);
				snprintf(tmp, sizeof tmp, "%s%s%s", b, *ws_note ? "; " : "", ws_note);
				ins = tmp;
				break;
			case 'S': snprintf(tmp, sizeof tmp, "%g", c->session_ttl_ms / 1000.0), ins = tmp; break;
			case 'N': snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)c->max_sessions), ins = tmp; break;
			case 'F': ins = util_size_str(c->max_files_size, b, sizeof b); break;
			case 'I': snprintf(tmp, sizeof tmp, "%g", c->kernel_idle_ms / 1000.0), ins = tmp; break;
			case 'K': ins = conf_kernel_list(c); break;
			case 'J': snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)c->max_tests), ins = tmp; break;
			case 'P': snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)c->max_processes), ins = tmp; break;
			case 'Q': snprintf(tmp, sizeof tmp, "%g", c->session_max_life_ms / 3600000.0), ins = tmp; break;
			case 'G': ins = util_size_str(c->process_output, b, sizeof b); break;
			case 'E': ins = host_note; break;
			case 'H': {
				/* the network a call may ask for: the configuration's */
				size_t k = (size_t)snprintf(tmp, sizeof tmp, "%s",
							    c->network.host    ? "no network unless \"network\": true (the host's own)"
							    : !c->network.hosts ? "no network"
										: "no network unless \"network\" lists hosts to "
										  "reach through sbx's proxy (within:");
				char **h = c->network.host ? NULL : c->network.hosts;
				for (; h && *h && k + strlen(*h) < sizeof tmp - 8; h++)
					k += (size_t)snprintf(tmp + k, sizeof tmp - k, " %s", *h);
				if (c->network.hosts && !c->network.host)
					snprintf(tmp + k, sizeof tmp - k, "%s)", h && *h ? " …" : "");
				ins = tmp;
				break;
			}
			default: snprintf(tmp, sizeof tmp, "%%%c", *p), ins = tmp;
			}
		}
		size_t n = ins ? strlen(ins) : 1;
		if (o + n + 1 > cap) {
			cap = (o + n + 1) * 2;
			out = util_xrealloc(out, cap);
		}
		memcpy(out + o, ins ? ins : p, n);
		o += n;
	}
	out[o] = 0;
	return out;
}

/* Whether a property's schema (borrowed) admits the kinds (RK_ bits): its
 * "type", or each of its anyOf's. */
static bool schema_kinds(jv prop, unsigned kinds)
{
	static const struct {
		const char *type;
		unsigned kinds;
	} types[] = { { "string", RK_STR }, { "number", RK_NUM }, { "integer", RK_INT }, { "boolean", RK_BOOL },
		      { "object", RK_OBJ }, { "array", RK_STRS | RK_LIST } };
	unsigned have = 0;
	jv any = rec_get(prop, "anyOf");
	jv list = jv_get_kind(any) == JV_KIND_ARRAY ? any : jv_array_append(jv_array(), jv_copy(prop));
	jv_array_foreach(list, i, p) {
		const char *t = rec_str(p, "type", NULL);
		for (size_t k = 0; t && k < sizeof types / sizeof types[0]; k++)
			if (!strcmp(t, types[k].type))
				have |= types[k].kinds;
		jv_free(p);
	}
	jv_free(list);
	return (have & kinds) == kinds || (kinds & (RK_STRS | RK_LIST) && have == (RK_STRS | RK_LIST) &&
					   !(kinds & ~(RK_STRS | RK_LIST)));
}

/* The tool's input schema (borrowed) against its arguments: the same
 * names, kinds and required ones.  A mismatch is this file's bug (or
 * req.h's): tools/list would lie, so it stops here, at the first start. */
static void schema_check(const struct tool_def *d, jv schema)
{
	jv props = rec_get(schema, "properties"), req = rec_get(schema, "required");
	struct arg a;
	bool data, ok = jv_get_kind(props) == JV_KIND_OBJECT;
	int n = 0, nreq = 0;
	for (; ok && tool_arg(d, n, &a, &data); n++) {
		jv p = rec_get(props, a.key);
		ok = jv_get_kind(p) == JV_KIND_OBJECT && schema_kinds(p, a.types);
		jv_free(p);
		bool listed = false;
		if (jv_get_kind(req) == JV_KIND_ARRAY)
			jv_array_foreach(req, i, r) {
				listed |= jv_get_kind(r) == JV_KIND_STRING && !strcmp(jv_string_value(r), a.key);
				jv_free(r);
			}
		ok = ok && listed == a.required;
		nreq += a.required;
		if (!ok)
			fprintf(stderr, "mcptools: %s's input schema does not say \"%s\" as its arguments do\n", d->t.name, a.key);
	}
	if (ok && (jv_object_length(jv_copy(props)) != n ||
		   (jv_get_kind(req) == JV_KIND_ARRAY ? jv_array_length(jv_copy(req)) : 0) != nreq)) {
		fprintf(stderr, "mcptools: %s's input schema has arguments the tool does not\n", d->t.name);
		ok = false;
	}
	jv_free(props);
	jv_free(req);
	if (!ok)
		abort();
}

jv mcp_tools_list(const struct conf *c, const char *workspace_note, const char *host_note)
{
	jv list = jv_array();
	for (size_t i = 0; i < NDEFS; i++) {
		const struct tool_def *d = &defs[i];
		char *desc = describe(c, workspace_note, host_note, d->description);
		jv t = jv_object_set(jv_object(), jv_string("name"), jv_string(d->t.name));
		t = jv_object_set(t, jv_string("title"), jv_string(d->title));
		t = jv_object_set(t, jv_string("description"), jv_string(desc));
		jv input = fill_fields(schema_parse(d->input_schema), (struct fields_of){ d->fields, 0, d->fields }, d->t.name);
		schema_check(d, input);
		t = jv_object_set(t, jv_string("inputSchema"), input);
		t = jv_object_set(t, jv_string("outputSchema"), schema_parse(d->output_schema));
		jv ann = jv_object_set(jv_object(), jv_string("title"), jv_string(d->title));
		ann = jv_object_set(ann, jv_string("readOnlyHint"), jv_bool(d->read_only));
		ann = jv_object_set(ann, jv_string("destructiveHint"), jv_bool(d->destructive));
		ann = jv_object_set(ann, jv_string("idempotentHint"), jv_bool(d->idempotent));
		ann = jv_object_set(ann, jv_string("openWorldHint"), jv_bool(d->t.kind == MCP_T_INSTALL));
		t = jv_object_set(t, jv_string("annotations"), ann);
		if (mcp_tool_tasks(&d->t))
			t = jv_object_set(t, jv_string("execution"), jv_object_set(jv_object(), jv_string("taskSupport"), jv_string("optional")));
		list = jv_array_append(list, t);
		free(desc);
	}
	return list;
}

static const char *kind_name(unsigned types)
{
	return types & RK_STR ? "a string" : types & RK_INT ? "an integer" : types & RK_NUM ? "a number" :
	       types & RK_BOOL ? "true or false" : types & (RK_STRS | RK_LIST) ? "an array" : "an object";
}

static bool has_nul(jv str)
{
	return strlen(jv_string_value(str)) != (size_t)jv_string_length_bytes(jv_copy(str));
}

bool mcp_tool_tasks(const struct mcp_tool *t)
{
	return t->kind == MCP_T_RUN || t->kind == MCP_T_EXEC || t->kind == MCP_T_INSTALL || t->kind == MCP_T_CELL;
}

/* The tool's i-th argument: its own, then the request's fields it takes
 * (req.h), in table order; false past the last.  *data: its value
 * travels with its length, so a NUL in it is data. */
static bool tool_arg(const struct tool_def *d, int i, struct arg *a, bool *data)
{
	int own = 0;
	while (d->args[own].key)
		own++;
	if (i < own) {
		*a = d->args[i];
		/* (write_file's content is data, as a request's code is) */
		*data = !strcmp(a->key, "content");
		return true;
	}
	for (int r = 0, n = own; d->fields && r < REQ_N; r++) {
		const struct req_field *f = req_field(r);
		if (!(f->tools & d->fields))
			continue;
		if (n++ == i) {
			*a = (struct arg){ f->name, f->kinds, (f->required & d->fields) != 0 };
			*data = f->where & RW_DATA;
			return true;
		}
	}
	return false;
}

bool mcp_tool_check_args(const struct mcp_tool *t, jv args, char *err, size_t errlen)
{
	const struct tool_def *d = def_of(t);
	struct arg a;
	bool data;
	jv_object_foreach(args, k, v)
	{
		const char *key = jv_string_value(k);
		int i = 0;
		while (tool_arg(d, i, &a, &data) && strcmp(a.key, key))
			i++;
		bool ok = tool_arg(d, i, &a, &data);
		if (ok) {
			jv_kind vk = jv_get_kind(v);
			ok = req_kind_ok(v, a.types);
			/* Names, paths and argv are C strings on their way: a NUL
			 * in one would cut it short, so it is refused.  Data (code,
			 * content, stdin) travels with its length. */
			if (ok && vk == JV_KIND_STRING && !data)
				ok = !has_nul(v);
			if (ok && vk == JV_KIND_ARRAY && (a.types & RK_STRS))
				jv_array_foreach(v, j, item) {
					ok &= jv_get_kind(item) == JV_KIND_STRING && !has_nul(item);
					jv_free(item);
				}
			if (!ok)
				snprintf(err, errlen, "%s: \"%s\" must be %s%s%s", t->name, key, kind_name(a.types),
					 a.types & RK_STRS ? " of strings" : "", a.types & (RK_STRS | RK_STR) ? " without NUL" : "");
		} else {
			size_t o = (size_t)snprintf(err, errlen, "%s: unknown argument \"%.60s\" (known:", t->name, key);
			for (int j = 0; tool_arg(d, j, &a, &data) && o < errlen; j++)
				o += (size_t)snprintf(err + o, errlen - o, " %s", a.key);
			if (o < errlen)
				snprintf(err + o, errlen - o, ")");
		}
		jv_free(k);
		jv_free(v);
		if (!ok)
			return false;
	}
	for (int i = 0; tool_arg(d, i, &a, &data); i++)
		if (a.required && !rec_has(args, a.key)) {
			snprintf(err, errlen, "%s: missing \"%s\"", t->name, a.key);
			return false;
		}
	return true;
}

/* A file a run made, as a resource: in its session, or (a stateless run's,
 * embedded in the result) under the run's id. */
static char *artifact_uri(const char *sess, const char *id, const char *path)
{
	return sess ? util_fmt("sbx://session/%s/%s", sess, path) : util_fmt("sbx://run/%s/%s", id ? id : "", path);
}

jv mcp_run_view(jv r, double max_output)
{
	static const char *const keep[] = {
		REQ_KEY(id), REQ_KEY(language), "status", "exit_code", "signal", "stdout", "stderr", "stdout_bytes", "stderr_bytes",
		"stdout_truncated", "stderr_truncated", "duration_ms", "cpu_ms", "memory_peak_bytes", "compile", "error",
		"limits_enforced", "limits_missing", "history_id", "artifacts_truncated", "value", "execution_count", "kernel",
		"kernel_alive", "kernel_note", "verdict", "tests_passed", "tests_total", "failed_test", "tests", REQ_KEY(network),
		"egress", "network_approved", "network_asked", REQ_KEY(user_approved), NULL,
	};
	jv v = jv_object();
	for (int i = 0; keep[i]; i++)
		if (rec_has(r, keep[i]))
			v = jv_object_set(v, jv_string(keep[i]), jv_object_get(jv_copy(r), jv_string(keep[i])));
	/* A call's max_output: each stream's head and tail, the rest counted. */
	static const char *const streams[] = { "stdout", "stderr" };
	for (int i = 0; i < 2 && max_output >= 0; i++) {
		jv text = rec_get(v, streams[i]);
		double total = 0;
		char key[32];
		snprintf(key, sizeof key, "%s_bytes", streams[i]);
		rec_num(v, key, &total);
		if (jv_get_kind(text) == JV_KIND_STRING && jv_string_length_bytes(jv_copy(text)) > max_output) {
			v = jv_object_set(v, jv_string(streams[i]), mcp_cut_stream(text, (size_t)max_output, total));
			snprintf(key, sizeof key, "%s_truncated", streams[i]);
			v = jv_object_set(v, jv_string(key), jv_true());
		} else
			jv_free(text);
	}
	const char *sess = rec_str(r, REQ_KEY(session), NULL), *id = rec_str(r, REQ_KEY(id), NULL);
	if (sess)
		v = jv_object_set(v, jv_string("session_id"), jv_string(sess));
	/* The files it made, without their content (that goes in content
	 * blocks: mcp_run_blocks), with the resource each is. */
	jv arts = rec_get(r, "artifacts"); /* check-names: the result's files */
	if (jv_get_kind(arts) == JV_KIND_ARRAY) {
		jv list = jv_array();
		jv_array_foreach(arts, i, a) {
			const char *path = jv_get_kind(a) == JV_KIND_OBJECT ? rec_str(a, "path", NULL) : NULL;
			if (path) {
				char *uri = artifact_uri(sess, id, path);
				a = jv_object_set(jv_object_delete(a, jv_string("content")), jv_string("uri"), jv_string(uri));
				free(uri);
				list = jv_array_append(list, a);
			} else
				jv_free(a);
		}
		v = jv_object_set(v, jv_string("artifacts"), list); /* check-names: the result's files */
	}
	jv_free(arts);
	jv_free(r);
	return v;
}

/* An image block (data: base64, borrowed). */
static jv image_block(const char *data, const char *mime)
{
	jv b = jv_object_set(jv_object(), jv_string("type"), jv_string("image"));
	b = jv_object_set(b, jv_string("data"), jv_string(data));
	return jv_object_set(b, jv_string("mimeType"), jv_string(mime));
}

/* A raster image (data: its base64, len bytes): itself inline when it is
 * small and its header honest, else a copy scaled down (PNG), else
 * nothing; "shown" says which, for the view and the text.  *whole: the
 * file must come too (it is not what is inline). */
static jv image_inline(const char *data, size_t len, const char *mime, size_t image_max, double deadline, int64_t uid,
		       char *shown, size_t shownlen, bool *whole)
{
	uint32_t w = 0, h = 0;
	*whole = true;
	if (!imgsize_showable(mime, data, len, &w, &h)) {
		if (w && h)
			snprintf(shown, shownlen, "not inline: %ux%u pixels, too many to show", w, h);
		else
			snprintf(shown, shownlen, "not inline: its header does not say its size");
		return jv_invalid();
	}
	size_t n = 0;
	unsigned char *img = (unsigned char *)b64_decode(data, len, &n);
	if (!img) {
		snprintf(shown, shownlen, "not inline: not base64");
		return jv_invalid();
	}
	if (len <= image_max) {
		free(img);
		snprintf(shown, shownlen, "inline");
		*whole = false;
		return image_block(data, mime);
	}
	unsigned char *small = NULL;
	size_t smalln = 0;
	struct thumb t = { 0 };
	char why[200] = "only PNGs are scaled down";
	/* (base64 is 4/3 of the bytes: the copy's bytes are bounded so that
	 * its base64 is) */
	bool ok = !strcmp(mime, "image/png") &&
		  thumb_make(img, n, image_max / 4 * 3, deadline, uid, &small, &smalln, &t, why, sizeof why);
	free(img);
	if (!ok) {
		snprintf(shown, shownlen, "not inline (over image_inline: %s)", why);
		return jv_invalid();
	}
	size_t b64n;
	char *b64 = b64_encode(small, smalln, &b64n);
	free(small);
	snprintf(shown, shownlen, "inline at %ux%u of %ux%u", t.thumb_w, t.thumb_h, t.width, t.height);
	jv b = image_block(b64, "image/png");
	free(b64);
	return b;
}

jv mcp_run_blocks(jv r, jv *view, size_t image_max, int64_t thumb_uid)
{
	/* one budget for all of its images: the server answers nobody else
	 * while a copy is made */
	double deadline = util_now_ms() + THUMB_MS;
	jv blocks = jv_array();
	jv arts = rec_get(r, "artifacts"); /* check-names: the result's files */
	const char *sess = rec_str(r, REQ_KEY(session), NULL), *id = rec_str(r, REQ_KEY(id), NULL);
	if (jv_get_kind(arts) != JV_KIND_ARRAY) {
		jv_free(arts);
		return blocks;
	}
	jv listed = rec_get(*view, "artifacts"); /* check-names: the result's files */
	jv_array_foreach(arts, i, a) {
		const char *path = rec_str(a, "path", NULL), *mime = rec_str(a, "mime_type", NULL);
		size_t datalen = 0;
		const char *data = rec_str(a, "content", &datalen);
		if (path && mime && data) {
			char *uri = artifact_uri(sess, id, path);
			char shown[300] = "";
			bool whole = true;
			if (rec_raster_mime(mime)) {
				/* an image a client can show, as it is or scaled down
				 * (an SVG is a file: it can carry script) */
				jv b = image_inline(data, datalen, mime, image_max, deadline, thumb_uid, shown, sizeof shown, &whole);
				if (jv_is_valid(b))
					blocks = jv_array_append(blocks, b);
			}
			if (whole && sess) {
				/* it stays in the workspace: a link to its resource */
				jv b = jv_object_set(jv_object(), jv_string("type"), jv_string("resource_link"));
				b = jv_object_set(b, jv_string("uri"), jv_string(uri));
				b = jv_object_set(b, jv_string("name"), jv_string(path));
				b = jv_object_set(b, jv_string("mimeType"), jv_string(mime));
				blocks = jv_array_append(blocks, b);
			} else if (whole) {
				/* a stateless run's is gone with it: embedded */
				jv res = jv_object_set(jv_object(), jv_string("uri"), jv_string(uri));
				res = jv_object_set(res, jv_string("mimeType"), jv_string(mime));
				res = jv_object_set(res, jv_string("blob"), jv_string(data));
				blocks = jv_array_append(blocks, jv_object_set(jv_object_set(jv_object(), jv_string("type"), jv_string("resource")),
										jv_string("resource"), res));
			}
			free(uri);
			/* the view's entry of the same file says how it came */
			if (shown[0] && jv_get_kind(listed) == JV_KIND_ARRAY)
				jv_array_foreach(listed, k, e) {
					const char *ep = rec_str(e, "path", NULL);
					if (ep && !strcmp(ep, path))
						listed = jv_array_set(listed, k, jv_object_set(jv_copy(e), jv_string("shown"), jv_string(shown)));
					jv_free(e);
				}
		}
		jv_free(a);
	}
	jv_free(arts);
	if (jv_get_kind(listed) == JV_KIND_ARRAY)
		*view = jv_object_set(*view, jv_string("artifacts"), listed); /* check-names: the result's files */
	else
		jv_free(listed);
	return blocks;
}

jv mcp_languages_view(const struct conf *c, jv checked, const char *backend)
{
	jv out = jv_array();
	for (size_t i = 0; i < c->nlangs; i++) {
		const struct conf_lang *l = &c->langs[i];
		jv o = jv_object_set(jv_object(), jv_string("name"), jv_string(l->name));
		jv al = jv_array();
		for (char **a = l->aliases; a && *a; a++)
			al = jv_array_append(al, jv_string(*a));
		o = jv_object_set(o, jv_string("aliases"), al);
		o = jv_object_set(o, jv_string("compiled"), jv_bool(l->compile != NULL));
		o = jv_object_set(o, jv_string("file"), jv_string(l->file));
		/* The image only where it is what runs: the native backend runs
		 * the host's runtime, whose version the check reports. */
		if (backend ? !strcmp(backend, "docker") : c->backend == CONF_BACKEND_DOCKER)
			o = jv_object_set(o, jv_string("image"), l->image ? jv_string(l->image) : jv_null());
		o = jv_object_set(o, jv_string("packages"), jv_bool(l->install != NULL));
		jv_array_foreach(checked, k, ch) {
			if (jv_get_kind(ch) == JV_KIND_OBJECT && rec_str(ch, "name", NULL) &&
			    !strcmp(rec_str(ch, "name", NULL), l->name)) {
				static const char *const f[] = { "version", "available", "error", NULL };
				for (int j = 0; f[j]; j++)
					if (rec_has(ch, f[j]))
						o = jv_object_set(o, jv_string(f[j]), jv_object_get(jv_copy(ch), jv_string(f[j])));
			}
			jv_free(ch);
		}
		if (!rec_has(o, "available"))
			o = jv_object_set(o, jv_string("available"), jv_false());
		out = jv_array_append(out, o);
	}
	jv_free(checked);
	/* check-names: list_supported_languages' answer */
	jv r = jv_object_set(jv_object(), jv_string("backend"), jv_string(backend ? backend : conf_backend_names[c->backend]));
	return jv_object_set(r, jv_string("languages"), out);
}
