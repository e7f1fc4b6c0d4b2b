#define _GNU_SOURCE
#include "mcptools.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "util.h"
#include "wsfs.h"

/* Argument types, as bits. */
enum { A_STR = 1, A_NUM = 2, A_BOOL = 4, A_ARR = 8, A_OBJ = 16, A_INT = 32, A_LIST = 64 /* an array of anything */ };

struct arg {
	const char *key;
	unsigned types;
	bool required;
};

struct tool_def {
	struct mcp_tool t;
	const char *title;
	const char *description;   /* printf format; see describe() */
	struct arg args[16];        /* terminated by an empty entry: at most 15 */
	const char *input_schema;  /* JSON */
	const char *output_schema; /* JSON */
	bool read_only, destructive, idempotent;
};

/* The run result every running tool returns. */
#define RUN_RESULT_SCHEMA                                                                                          \
	"{\"type\":\"object\",\"properties\":{"                                                                        \
	"\"id\":{\"type\":\"string\"},\"language\":{\"type\":\"string\"},"                                             \
	"\"status\":{\"type\":\"string\",\"enum\":[\"success\",\"error\",\"timeout\",\"memory_limit\",\"compile_error\"," \
	"\"invalid\",\"internal_error\",\"cancelled\"]},"                                                                        \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":[\"string\",\"null\"]},"                 \
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                                          \
	"\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"                     \
	"\"duration_ms\":{\"type\":[\"number\",\"null\"]},\"cpu_ms\":{\"type\":[\"number\",\"null\"]},"                \
	"\"memory_peak_bytes\":{\"type\":[\"integer\",\"null\"]},"                                                     \
	"\"compile\":{\"type\":[\"object\",\"null\"]},\"error\":{\"type\":\"string\"},"                                \
	"\"session_id\":{\"type\":\"string\"},\"history_id\":{\"type\":[\"integer\",\"null\"]},"                       \
	"\"artifacts\":{\"type\":\"array\",\"description\":\"files the run made or changed (path, mime_type, bytes); "   \
	"images also come as image content, other files as resources\"},\"artifacts_truncated\":{\"type\":\"boolean\"},"    \
	"\"value\":{\"type\":[\"string\",\"null\"]},\"execution_count\":{\"type\":\"integer\"},"                    \
	"\"kernel\":{\"type\":\"string\",\"enum\":[\"started\",\"live\",\"restarted\"]},\"kernel_note\":{\"type\":\"string\"}," \
	"\"verdict\":{\"type\":\"string\",\"enum\":[\"accepted\",\"wrong_answer\",\"timeout\",\"memory_limit\",\"error\"," \
	"\"output_limit\",\"judge_error\",\"compile_error\",\"internal_error\",\"cancelled\"]},"                              \
	"\"tests_passed\":{\"type\":\"integer\"},\"tests_total\":{\"type\":\"integer\"},\"failed_test\":{\"type\":\"integer\"}," \
	"\"tests\":{\"type\":\"array\",\"description\":\"per test: index, status, duration_ms, cpu_ms, "                     \
	"memory_peak_bytes, exit_code, signal, stdout and stderr (1 KiB), diff (wrong_answer), error, checker_message\"}}," \
	"\"required\":[\"status\"]}"

#define FILES_SCHEMA                                                                                    \
	"{\"type\":\"object\",\"description\":\"more files next to the program: path -> text, or path -> "  \
	"{content, encoding: base64}\",\"additionalProperties\":{\"type\":[\"string\",\"object\"]}}"

/* Per-call memory and CPU, within the configured ceilings (sbx-validate
 * checks them as for any request). */
#define MEM_CPUS_SCHEMA                                                                                              \
	"\"memory\":{\"type\":[\"string\",\"number\"],\"description\":\"RAM for the run: bytes or a size such as "     \
	"\\\"512m\\\"\"},\"cpus\":{\"type\":\"number\",\"description\":\"CPU quota in cores\"},"

static const struct tool_def defs[] = {
	{ { "run_code", MCP_T_RUN }, "Run code",
	  "Run a program in a fresh, isolated sandbox and return its output. Languages: %L. The sandbox has no "
	  "network, %M of memory (up to %Y with \"memory\"), %C CPU (up to %Z with \"cpus\"), %T s wall time (max "
	  "%X s with \"timeout\"), %O of stdout and of stderr kept (head and tail). Compiled languages are compiled first; a compiler error comes back as status "
	  "compile_error with the compiler's messages in compile.stderr (compile.stdout for tsc). A program that fails is a normal result "
	  "(status error, timeout or memory_limit, with exit_code or signal), not a tool error. Nothing persists "
	  "after the run; use sandbox_initialize for state. \"dependencies\" installs packages (pip, npm, …) for "
	  "this run only. To judge a program, give \"tests\" ([{stdin, args, files, expected_stdout, timeout, "
	  "memory}], at most %J): it is compiled once and each test runs in a fresh sandbox; \"compare\" is trim "
	  "(the default: trailing whitespace ignored), exact, tokens, float:EPS, or checker (then \"checker\": "
	  "{language, code}, run as `checker input output expected`, exit 0 accepts, 1 rejects). The result has "
	  "\"verdict\" (accepted, or the first failing test's: wrong_answer, timeout, memory_limit, error, "
	  "output_limit, judge_error; or compile_error), tests_passed, tests_total and \"tests\", one entry per test.",
	  { { "language", A_STR, true }, { "code", A_STR, true }, { "stdin", A_STR, false }, { "files", A_OBJ, false },
	    { "timeout", A_NUM, false }, { "memory", A_STR | A_NUM, false }, { "cpus", A_NUM, false },
	    { "dependencies", A_ARR, false }, { "args", A_ARR, false }, { "tests", A_LIST, false }, { "compare", A_STR, false },
	    { "checker", A_OBJ, false }, { "stop_on_fail", A_BOOL, false } },
	  "{\"type\":\"object\",\"properties\":{"
	  "\"language\":{\"type\":\"string\",\"description\":\"a language name or alias (list_supported_languages)\"},"
	  "\"code\":{\"type\":\"string\",\"description\":\"the program's source\"},"
	  "\"stdin\":{\"type\":\"string\",\"description\":\"the program's standard input\"},"
	  "\"files\":" FILES_SCHEMA ","
	  "\"timeout\":{\"type\":\"number\",\"description\":\"wall-clock seconds\"},"
	  MEM_CPUS_SCHEMA
	  "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"command-line arguments\"},"
	  "\"dependencies\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"packages to install "
	  "first with the language's package manager\"},"
	  "\"tests\":{\"type\":\"array\",\"description\":\"judge the program on these tests\",\"items\":{\"type\":\"object\","
	  "\"properties\":{\"stdin\":{\"type\":\"string\"},\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	  "\"files\":" FILES_SCHEMA ",\"expected_stdout\":{\"type\":\"string\"},\"timeout\":{\"type\":\"number\"},"
	  "\"memory\":{\"type\":[\"string\",\"number\"]}},\"additionalProperties\":false}},"
	  "\"compare\":{\"type\":\"string\",\"description\":\"trim (default), exact, tokens, float:EPS or checker\"},"
	  "\"checker\":{\"type\":\"object\",\"description\":\"compare checker: the program that decides, run with the "
	  "files input, output and expected as arguments\",\"properties\":{\"language\":{\"type\":\"string\"},"
	  "\"code\":{\"type\":\"string\"},\"timeout\":{\"type\":\"number\"},\"memory\":{\"type\":[\"string\",\"number\"]}},"
	  "\"required\":[\"language\",\"code\"],\"additionalProperties\":false},"
	  "\"stop_on_fail\":{\"type\":\"boolean\",\"description\":\"stop at the first failing test\"}},"
	  "\"required\":[\"language\",\"code\"],\"additionalProperties\":false}",
	  RUN_RESULT_SCHEMA, false, false, false },
	{ { "list_supported_languages", MCP_T_LANGUAGES }, "List supported languages",
	  "List the languages this server runs: name, aliases, whether they are compiled, the runtime's version "
	  "as seen inside the sandbox, whether it is available on this backend (and how to install it if not), "
	  "and whether packages can be installed for it.",
	  { { NULL, 0, false } },
	  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"backend\":{\"type\":\"string\"},\"languages\":{\"type\":\"array\","
	  "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"aliases\":{\"type\":\"array\"},"
	  "\"compiled\":{\"type\":\"boolean\"},\"file\":{\"type\":\"string\"},\"image\":{\"type\":[\"string\",\"null\"]},"
	  "\"version\":{\"type\":[\"string\",\"null\"]},\"available\":{\"type\":\"boolean\"},"
	  "\"packages\":{\"type\":\"boolean\"},\"error\":{\"type\":\"string\"}},\"required\":[\"name\",\"available\"]}}},"
	  "\"required\":[\"languages\"]}",
	  true, false, true },
	{ { "get_execution_history", MCP_T_HISTORY }, "Get execution history",
	  "Past runs of this server and of the sbx tools, newest first: id, language, status, exit code, "
	  "duration, memory, output sizes, the first 500 characters of the code, error. Filters: since/until (ISO "
	  "8601, today, yesterday, or a time ago with its unit such as 30m, 1h, 7d), language and status (one, or "
	  "a comma-separated list), id, session_id, limit (default 20). With "
	  "stats: true, counts, success rate and p50/p95/max duration per language and status instead.",
	  { { "since", A_STR, false }, { "until", A_STR, false }, { "language", A_STR, false }, { "status", A_STR, false },
	    { "id", A_STR, false }, { "session_id", A_STR, false }, { "limit", A_INT, false }, { "stats", A_BOOL, false } },
	  "{\"type\":\"object\",\"properties\":{\"since\":{\"type\":\"string\"},\"until\":{\"type\":\"string\"},"
	  "\"language\":{\"type\":\"string\"},\"status\":{\"type\":\"string\"},\"id\":{\"type\":\"string\"},"
	  "\"session_id\":{\"type\":\"string\"},\"limit\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10000},"
	  "\"stats\":{\"type\":\"boolean\"}},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"runs\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
	  "\"stats\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}}}",
	  true, false, true },
	{ { "check_backend", MCP_T_CHECK }, "Check the sandbox backend",
	  "Check that sandboxes can be made here: for the native backend user namespaces, cgroups (memory, CPU "
	  "and process limits), seccomp and a trial sandbox; for the docker backend the engine (its version) and "
	  "each language's image; and every language's runtime. When something is missing the result says "
	  "what and how to fix it (\"fixes\"), and isError is true if no sandbox can be made.",
	  { { NULL, 0, false } },
	  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"backend\":{\"type\":\"string\"},\"usable\":{\"type\":\"boolean\"},"
	  "\"fixes\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"languages\":{\"type\":\"array\"},"
	  "\"workspace\":{\"type\":\"object\",\"properties\":{\"filesystem\":{\"type\":\"string\",\"enum\":" WSFS_KINDS_JSON "},"
	  "\"note\":{\"type\":\"string\"}}}},"
	  "\"required\":[\"usable\",\"fixes\"]}",
	  true, false, true },
	{ { "sandbox_initialize", MCP_T_INIT }, "Start a session",
	  "Start a persistent session: a private workspace directory (%W) that every sandbox_exec of the session "
	  "runs in, so files persist between runs (nothing else does: each run is a fresh sandbox). Optional "
	  "\"language\" (the default for sandbox_exec), \"dependencies\" to install now, \"ttl\" (seconds idle before "
	  "the session is removed; default %S). Returns session_id. At most %N sessions at once.",
	  { { "language", A_STR, false }, { "dependencies", A_ARR, false }, { "ttl", A_NUM, false } },
	  "{\"type\":\"object\",\"properties\":{\"language\":{\"type\":\"string\"},"
	  "\"dependencies\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	  "\"ttl\":{\"type\":\"number\",\"description\":\"idle seconds before removal\"}},\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"language\":{\"type\":[\"string\",\"null\"]},"
	  "\"expires_at\":{\"type\":\"string\"},\"workspace_bytes\":{\"type\":[\"integer\",\"null\"]},"
	  "\"workspace_filesystem\":{\"type\":\"string\",\"enum\":" WSFS_KINDS_JSON "},"
	  "\"workspace_note\":{\"type\":\"string\"},\"install\":{\"type\":\"object\"}},"
	  "\"required\":[\"session_id\"]}",
	  false, false, false },
	{ { "sandbox_exec", MCP_T_EXEC }, "Run in a session",
	  "Run code, a workspace file or a command in a session's workspace (its working directory), in a fresh "
	  "sandbox with the same limits as run_code. Give exactly one of: \"code\" (with \"language\", default the "
	  "session's; it never replaces a workspace file), \"file\" (a workspace path, run by the interpreter of "
	  "its extension's language, or of \"language\"), \"command\" (an argv array, e.g. [\"sh\",\"-c\","
	  "\"make && ./app\"], with the session language's environment). Files the program writes stay in the "
	  "workspace and, unless the server is configured otherwise (workspace_exec = false), may be executed by "
	  "later commands.",
	  { { "session_id", A_STR, true }, { "language", A_STR, false }, { "code", A_STR, false }, { "file", A_STR, false },
	    { "command", A_ARR, false }, { "stdin", A_STR, false }, { "timeout", A_NUM, false },
	    { "memory", A_STR | A_NUM, false }, { "cpus", A_NUM, false }, { "args", A_ARR, false } },
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"language\":{\"type\":\"string\"},"
	  "\"code\":{\"type\":\"string\"},\"file\":{\"type\":\"string\"},"
	  "\"command\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"stdin\":{\"type\":\"string\"},"
	  "\"timeout\":{\"type\":\"number\"}," MEM_CPUS_SCHEMA "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
	  "\"required\":[\"session_id\"],\"additionalProperties\":false}",
	  RUN_RESULT_SCHEMA, false, false, false },
	{ { "run_cell", MCP_T_CELL }, "Run a cell in a session's kernel",
	  "Run code in the session's kernel, as a notebook cell: one interpreter per session and language (%K) "
	  "that lives from cell to cell, so variables, imports and loaded data persist (load a file once, then "
	  "query it). It runs in a sandbox like every run (no network, the session's workspace as its working "
	  "directory, run_code's memory, CPU and process limits for the kernel's whole life); \"timeout\" (default "
	  "%T s) is the cell's. The result is run_code's plus \"value\" (the last expression's value as text, as a "
	  "notebook's Out[n]), \"execution_count\" and \"kernel\" (started, live or restarted). Figures left "
	  "open (matplotlib) come back as images. An exception is status error with its traceback; a cell past "
	  "its timeout is interrupted (status timeout) and the state is kept. A kernel that dies (or is stopped "
	  "after %I s idle) loses its state: its cell and the next one say so in \"kernel_note\". \"reset\": true "
	  "starts a fresh kernel. \"memory\" and \"cpus\" size a kernel when it starts (its first cell, or a reset). "
	  "Cells of a session run one at a time (later ones wait their turn).",
	  { { "session_id", A_STR, true }, { "code", A_STR, true }, { "language", A_STR, false }, { "timeout", A_NUM, false },
	    { "memory", A_STR | A_NUM, false }, { "cpus", A_NUM, false }, { "reset", A_BOOL, false } },
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	  "\"code\":{\"type\":\"string\",\"description\":\"the cell's code\"},"
	  "\"language\":{\"type\":\"string\",\"description\":\"default: the session's\"},"
	  "\"timeout\":{\"type\":\"number\",\"description\":\"the cell's wall-clock seconds\"}," MEM_CPUS_SCHEMA
	  "\"reset\":{\"type\":\"boolean\",\"description\":\"restart the kernel first (its state is lost)\"}},"
	  "\"required\":[\"session_id\",\"code\"],\"additionalProperties\":false}",
	  RUN_RESULT_SCHEMA, false, false, false },
	{ { "sandbox_stop", MCP_T_STOP }, "End a session",
	  "End a session and delete its workspace and every file in it.",
	  { { "session_id", A_STR, true } },
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"}},\"required\":[\"session_id\"],"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"stopped\":{\"type\":\"boolean\"}},"
	  "\"required\":[\"stopped\"]}",
	  false, true, true },
	{ { "write_file", MCP_T_WRITE }, "Write a workspace file",
	  "Write a file into a session's workspace (parent directories are created). \"path\" is relative to the "
	  "workspace, without \"..\"; \"content\" is text, or base64 with \"encoding\": \"base64\". At most %F per "
	  "file; the workspace holds %W.",
	  { { "session_id", A_STR, true }, { "path", A_STR, true }, { "content", A_STR, true }, { "encoding", A_STR, false } },
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
	  "\"content\":{\"type\":\"string\"},\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]}},"
	  "\"required\":[\"session_id\",\"path\",\"content\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},"
	  "\"required\":[\"path\",\"bytes\"]}",
	  false, false, true },
	{ { "read_file", MCP_T_READ }, "Read a workspace file",
	  "Read a regular file from a session's workspace. Text comes back as is (\"encoding\": \"utf-8\"), other "
	  "bytes as base64 (\"encoding\": \"base64\"). At most %F are returned (\"truncated\" says if there was more); "
	  "symbolic links, FIFOs and devices are refused.",
	  { { "session_id", A_STR, true }, { "path", A_STR, true } },
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"}},"
	  "\"required\":[\"session_id\",\"path\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
	  "\"encoding\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\"}},"
	  "\"required\":[\"path\",\"content\",\"encoding\"]}",
	  true, false, true },
	{ { "list_files", MCP_T_LIST }, "List workspace files",
	  "List the files of a session's workspace (or of a directory in it): path, type (file, dir, symlink, "
	  "other) and size, recursively, at most 1000 entries.",
	  { { "session_id", A_STR, true }, { "path", A_STR, false } },
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"}},"
	  "\"required\":[\"session_id\"],\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
	  "\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"files\"]}",
	  true, false, true },
	{ { "install_packages", MCP_T_INSTALL }, "Install packages into a session",
	  "Install packages into a session's workspace with its language's package manager (pip for Python, npm "
	  "for JavaScript, …), so later sandbox_exec runs can import them. Only this step may reach the package "
	  "registries, and only if the server allows it.",
	  { { "session_id", A_STR, true }, { "packages", A_ARR, true }, { "language", A_STR, false } },
	  "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
	  "\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1},"
	  "\"language\":{\"type\":\"string\"}},\"required\":[\"session_id\",\"packages\"],\"additionalProperties\":false}",
	  RUN_RESULT_SCHEMA, false, false, false },
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

/* The description with the configuration's values: %L languages, %M
 * memory, %C cpus, %T timeout, %X max timeout, %O output, %W workspace
 * size (and what wsfs says of it), %S session ttl, %N max sessions, %F
 * file size, %I kernel idle time, %K languages with kernels. */
static char *describe(const struct conf *c, const char *ws_note, const char *fmt)
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
			case 'X': snprintf(tmp, sizeof tmp, "%g", c->ceiling.timeout_ms / 1000.0), ins = tmp; break;
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

jv mcp_tools_list(const struct conf *c, const char *workspace_note)
{
	jv list = jv_array();
	for (size_t i = 0; i < NDEFS; i++) {
		const struct tool_def *d = &defs[i];
		char *desc = describe(c, workspace_note, d->description);
		jv t = jv_object_set(jv_object(), jv_string("name"), jv_string(d->t.name));
		t = jv_object_set(t, jv_string("title"), jv_string(d->title));
		t = jv_object_set(t, jv_string("description"), jv_string(desc));
		t = jv_object_set(t, jv_string("inputSchema"), jv_parse(d->input_schema));
		t = jv_object_set(t, jv_string("outputSchema"), jv_parse(d->output_schema));
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
	return types & A_STR ? "a string" : types & A_INT ? "an integer" : types & A_NUM ? "a number" :
	       types & A_BOOL ? "true or false" : types & (A_ARR | A_LIST) ? "an array" : "an object";
}

static bool has_nul(jv str)
{
	return strlen(jv_string_value(str)) != (size_t)jv_string_length_bytes(jv_copy(str));
}

bool mcp_tool_tasks(const struct mcp_tool *t)
{
	return t->kind == MCP_T_RUN || t->kind == MCP_T_EXEC || t->kind == MCP_T_INSTALL || t->kind == MCP_T_CELL;
}

bool mcp_tool_check_args(const struct mcp_tool *t, jv args, char *why, size_t len)
{
	const struct tool_def *d = def_of(t);
	jv_object_foreach(args, k, v)
	{
		const char *key = jv_string_value(k);
		const struct arg *a = NULL;
		for (int i = 0; d->args[i].key; i++)
			if (!strcmp(d->args[i].key, key))
				a = &d->args[i];
		bool ok = a != NULL;
		if (a) {
			jv_kind vk = jv_get_kind(v);
			ok = (vk == JV_KIND_STRING && (a->types & A_STR)) || (vk == JV_KIND_OBJECT && (a->types & A_OBJ)) ||
			     (vk == JV_KIND_ARRAY && (a->types & (A_ARR | A_LIST))) ||
			     ((vk == JV_KIND_TRUE || vk == JV_KIND_FALSE) && (a->types & A_BOOL)) ||
			     (vk == JV_KIND_NUMBER && (a->types & A_NUM)) ||
			     (vk == JV_KIND_NUMBER && (a->types & A_INT) && jv_number_value(v) == floor(jv_number_value(v)) &&
			      fabs(jv_number_value(v)) < 1e15);
			/* Names, paths and argv are C strings on their way: a NUL
			 * in one would cut it short, so it is refused.  Data (code,
			 * content, stdin) travels with its length. */
			bool data = !strcmp(key, "code") || !strcmp(key, "content") || !strcmp(key, "stdin");
			if (ok && vk == JV_KIND_STRING && !data)
				ok = !has_nul(v);
			if (ok && vk == JV_KIND_ARRAY && (a->types & A_ARR))
				jv_array_foreach(v, i, item) {
					ok &= jv_get_kind(item) == JV_KIND_STRING && !has_nul(item);
					jv_free(item);
				}
			if (!ok)
				snprintf(why, len, "%s: \"%s\" must be %s%s%s", t->name, key, kind_name(a->types),
					 a->types & A_ARR ? " of strings" : "", a->types & (A_ARR | A_STR) ? " without NUL" : "");
		} else {
			size_t o = (size_t)snprintf(why, len, "%s: unknown argument \"%.60s\" (known:", t->name, key);
			for (int i = 0; d->args[i].key && o < len; i++)
				o += (size_t)snprintf(why + o, len - o, " %s", d->args[i].key);
			if (o < len)
				snprintf(why + o, len - o, ")");
		}
		jv_free(k);
		jv_free(v);
		if (!ok)
			return false;
	}
	for (int i = 0; d->args[i].key; i++)
		if (d->args[i].required && !rec_has(args, d->args[i].key)) {
			snprintf(why, len, "%s: missing \"%s\"", t->name, d->args[i].key);
			return false;
		}
	return true;
}

jv mcp_run_view(jv r)
{
	static const char *const keep[] = {
		"id", "language", "status", "exit_code", "signal", "stdout", "stderr", "stdout_truncated",
		"stderr_truncated", "duration_ms", "cpu_ms", "memory_peak_bytes", "compile", "error", "history_id",
		"artifacts_truncated", "value", "execution_count", "kernel", "kernel_note", "verdict", "tests_passed",
		"tests_total", "failed_test", "tests", NULL,
	};
	jv v = jv_object();
	for (int i = 0; keep[i]; i++)
		if (rec_has(r, keep[i]))
			v = jv_object_set(v, jv_string(keep[i]), jv_object_get(jv_copy(r), jv_string(keep[i])));
	const char *sess = rec_str(r, "session", NULL);
	if (sess)
		v = jv_object_set(v, jv_string("session_id"), jv_string(sess));
	/* The files it made, without their content (that goes in content
	 * blocks: mcp_run_blocks). */
	jv arts = rec_get(r, "artifacts");
	if (jv_get_kind(arts) == JV_KIND_ARRAY) {
		jv list = jv_array();
		jv_array_foreach(arts, i, a) {
			if (jv_get_kind(a) == JV_KIND_OBJECT)
				list = jv_array_append(list, jv_object_delete(a, jv_string("content")));
			else
				jv_free(a);
		}
		v = jv_object_set(v, jv_string("artifacts"), list);
	}
	jv_free(arts);
	jv_free(r);
	return v;
}

jv mcp_run_blocks(jv r)
{
	jv blocks = jv_array();
	jv arts = rec_get(r, "artifacts");
	const char *sess = rec_str(r, "session", NULL), *id = rec_str(r, "id", NULL);
	if (jv_get_kind(arts) != JV_KIND_ARRAY) {
		jv_free(arts);
		return blocks;
	}
	jv_array_foreach(arts, i, a) {
		const char *path = rec_str(a, "path", NULL), *mime = rec_str(a, "mime_type", NULL);
		const char *data = rec_str(a, "content", NULL);
		if (path && mime && data) {
			jv b;
			char *uri = sess ? util_fmt("sbx://session/%s/%s", sess, path) : util_fmt("sbx://run/%s/%s", id ? id : "", path);
			if (rec_raster_mime(mime)) {
				/* an image the host can show: its bytes, as they are
				 * (an SVG is a file: it can carry script) */
				b = jv_object_set(jv_object(), jv_string("type"), jv_string("image"));
				b = jv_object_set(b, jv_string("data"), jv_string(data));
				b = jv_object_set(b, jv_string("mimeType"), jv_string(mime));
			} else if (sess) {
				/* it stays in the workspace: a link to its resource */
				b = jv_object_set(jv_object(), jv_string("type"), jv_string("resource_link"));
				b = jv_object_set(b, jv_string("uri"), jv_string(uri));
				b = jv_object_set(b, jv_string("name"), jv_string(path));
				b = jv_object_set(b, jv_string("mimeType"), jv_string(mime));
			} else {
				/* a stateless run's is gone with it: embedded */
				jv res = jv_object_set(jv_object(), jv_string("uri"), jv_string(uri));
				res = jv_object_set(res, jv_string("mimeType"), jv_string(mime));
				res = jv_object_set(res, jv_string("blob"), jv_string(data));
				b = jv_object_set(jv_object_set(jv_object(), jv_string("type"), jv_string("resource")), jv_string("resource"), res);
			}
			free(uri);
			blocks = jv_array_append(blocks, b);
		}
		jv_free(a);
	}
	jv_free(arts);
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
		if (!strcmp(backend ? backend : c->backend, "docker"))
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
	jv r = jv_object_set(jv_object(), jv_string("backend"), jv_string(backend ? backend : c->backend));
	return jv_object_set(r, jv_string("languages"), out);
}

/* One test's detail for the table: where its output went wrong, or how
 * it ended. */
static void test_detail(jv t, char *buf, size_t len)
{
	buf[0] = 0;
	double ec;
	const char *sig = rec_str(t, "signal", NULL), *err = rec_str(t, "error", NULL);
	jv diff = rec_get(t, "diff");
	if (jv_get_kind(diff) == JV_KIND_OBJECT) {
		double line = 0, tok = 0;
		rec_num(diff, "line", &line);
		const char *e = rec_str(diff, "expected", NULL), *g = rec_str(diff, "got", NULL);
		size_t o = (size_t)snprintf(buf, len, "line %.0f", line);
		if (rec_num(diff, "token", &tok))
			o += (size_t)snprintf(buf + o, len - o, ", token %.0f", tok);
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, ": expected %s%.60s%s", e ? "\"" : "", e ? e : "nothing", e ? "\"" : "");
		if (o < len)
			snprintf(buf + o, len - o, ", got %s%.60s%s", g ? "\"" : "", g ? g : "nothing", g ? "\"" : "");
	} else if (err)
		snprintf(buf, len, "%.160s", err);
	else if (sig)
		snprintf(buf, len, "%s", sig);
	else if (rec_num(t, "exit_code", &ec) && ec != 0)
		snprintf(buf, len, "exit code %.0f", ec);
	/* a failing program's last words (a traceback's last line) */
	size_t n = 0, o = strlen(buf);
	const char *se = jv_get_kind(diff) != JV_KIND_OBJECT && !err ? rec_str(t, "stderr", &n) : NULL;
	while (se && n && (se[n - 1] == '\n' || se[n - 1] == '\r' || se[n - 1] == ' '))
		n--;
	if (se && n && o) {
		const char *last = se + n;
		while (last > se && last[-1] != '\n')
			last--;
		snprintf(buf + o, len - o, ": %.*s", (int)(se + n - last > 120 ? 120 : se + n - last), last);
	}
	jv_free(diff);
	/* one line each: a newline in the output would break the table */
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
}

jv mcp_verdict_table(jv r)
{
	double passed = 0, total = 0, failed;
	rec_num(r, "tests_passed", &passed);
	rec_num(r, "tests_total", &total);
	const char *verdict = rec_str(r, "verdict", NULL);
	jv out = jv_string_fmt("verdict %s: %.0f of %.0f tests passed", verdict ? verdict : "?", passed, total);
	if (rec_num(r, "failed_test", &failed))
		out = jv_string_concat(out, jv_string_fmt("; test %.0f decided it", failed));
	out = jv_string_concat(out, jv_string("\ntest  status        time_ms  memory     detail\n"));
	jv tests = rec_get(r, "tests");
	if (jv_get_kind(tests) == JV_KIND_ARRAY)
		jv_array_foreach(tests, i, t) {
			if (jv_get_kind(t) == JV_KIND_OBJECT) {
				const char *st = rec_str(t, "status", NULL);
				double ms = -1, mem = -1;
				char m[32] = "", d[400], when[32] = "";
				if (rec_num(t, "duration_ms", &ms))
					snprintf(when, sizeof when, "%.1f", ms);
				if (rec_num(t, "memory_peak_bytes", &mem) && mem >= 0)
					util_size_str((uint64_t)mem, m, sizeof m);
				test_detail(t, d, sizeof d);
				out = jv_string_concat(out, jv_string_fmt("%-5d %-13s %-8s %-10s %s\n", i, st ? st : "?", when, m, d));
			}
			jv_free(t);
		}
	jv_free(tests);
	return out;
}
