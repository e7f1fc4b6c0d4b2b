/* req: the one table of a request's fields.
 *
 * Every field a request (the input of sbx-validate) may carry is one row
 * of REQ_FIELDS below: its name, the JSON kinds it takes, the requests it
 * may appear in, the MCP tools that take it as an argument (and which of
 * them require it), and one line saying what it is.  The did-you-mean
 * check, the lists of what a cell, a judged request, a test and a checker
 * accept, the MCP tools' input schemas and argument checks and the
 * requests sbx-mcp builds from a call's arguments, and the ledger's digest
 * all loop over it;
 * doc/contract.md's table of request fields is checked against it
 * (t/06-tables.bats).  Adding a field is one row here plus its check in
 * job.c.  C code names a field as REQ_KEY(tests) (below), never as a
 * string, so that its name is written here and in the docs only;
 * build-aux/check-names fails the build on a field's name as the key of a
 * JSON accessor.
 *
 * The request's limits (timeout, memory, cpus, pids) are rows of their own
 * (REQ_LIM) that take their name from limit.h's LIMITS, the one place it
 * is written; a limit without a request key is not a request's.
 *
 * Order matters: a list an error message names (a test's fields, a
 * checker's) is in table order, and so is the first of two refused fields
 * an error names.
 */
#ifndef SBX_REQ_H
#define SBX_REQ_H

#include <stdbool.h>
#include <stddef.h>

#include <jv.h>

#include "limit.h"

/* JSON kinds, as bits (null, where allowed, means absent). */
enum {
	RK_STR = 1,
	RK_NUM = 2,
	RK_BOOL = 4,
	RK_STRS = 8,  /* an array of strings */
	RK_OBJ = 16,
	RK_INT = 32,
	RK_LIST = 64, /* an array of anything */
};

/* Where a field may appear, as bits.  The cell and judged contexts list
 * what their own checks let through: a field either lets through may still
 * be refused by another rule (a command without a session, tests with a
 * cell). */
enum {
	RW_REQ = 1,       /* a request, at its top level */
	RW_JUDGED = 2,    /* beside "tests" */
	RW_CELL = 4,      /* beside "cell" */
	RW_TEST = 8,      /* in one of "tests" */
	RW_CHECKER = 16,  /* in "checker" */
	RW_JUDGING = 32,  /* judges tests: only with "tests" */
	RW_COMPUTED = 64, /* sbx-validate computes it: given, only as computed */
	RW_DATA = 128,    /* the program's data, with its length (a NUL is data):
			   * with the id, what ties a result to its request */
};

/* The MCP tools that take a field as an argument of the same name, as
 * bits (mcptools.c maps its tools onto them).  A test and a checker are
 * not tools, but run_code's schema describes their fields (RW_TEST,
 * RW_CHECKER) as it does its own: their bits say how (REQ_MCP), and which
 * of them a checker requires. */
enum {
	RT_RUN = 1,      /* run_code */
	RT_EXEC = 2,     /* sandbox_exec */
	RT_CELL = 4,     /* run_cell */
	RT_INIT = 8,     /* sandbox_initialize */
	RT_INSTALL = 16, /* install_packages */
	RT_TEST = 32,    /* one of run_code's tests */
	RT_CHECKER = 64, /* run_code's checker */
	RT_PROC = 128    /* process_start */
};

#define RW_ANY_REQ (RW_REQ | RW_JUDGED | RW_CELL)

/* X(name, kinds, where, tools, required by tools (or in a checker), doc)
 * for a field of its own; L(limit field, ...) for a limit, its name
 * limit.h's request key. */
#define REQ_FIELDS(X, L) \
	X(language, RK_STR, RW_ANY_REQ | RW_CHECKER, RT_RUN | RT_EXEC | RT_CELL | RT_INIT | RT_INSTALL | RT_PROC, RT_RUN | RT_CHECKER, \
	  "a language name or alias (list_supported_languages)") \
	X(code, RK_STR, RW_ANY_REQ | RW_CHECKER | RW_DATA, RT_RUN | RT_EXEC | RT_CELL | RT_PROC, RT_RUN | RT_CELL | RT_CHECKER, \
	  "the program's source") \
	X(entry, RK_STR, RW_REQ, 0, 0, "a workspace file to run in place of code (sandbox_exec's file)") \
	X(command, RK_STRS, RW_REQ | RW_JUDGED, RT_EXEC | RT_PROC, 0, \
	  "an argv to run in the workspace, such as [\"sh\",\"-c\",\"make && ./app\"]") \
	X(id, RK_STR | RK_NUM, RW_ANY_REQ, 0, 0, "the request's id, generated if absent") \
	X(stdin, RK_STR, RW_REQ | RW_TEST | RW_DATA, RT_RUN | RT_EXEC, 0, "the program's standard input") \
	X(args, RK_STRS, RW_REQ | RW_TEST, RT_RUN | RT_EXEC | RT_PROC, 0, "command-line arguments") \
	X(env, RK_OBJ, RW_REQ | RW_JUDGED, RT_EXEC | RT_PROC, 0, \
	  "environment variables for the program, name -> value, over its language's") \
	X(cwd, RK_STR, RW_REQ, RT_EXEC | RT_PROC, 0, "the directory the program starts in, relative to the session's workspace") \
	X(files, RK_OBJ, RW_ANY_REQ | RW_TEST, RT_RUN, 0, \
	  "more files next to the program: path -> text, or path -> {content, encoding: base64}") \
	X(expected_stdout, RK_STR, RW_TEST, 0, 0, "the output that passes") \
	L(timeout_ms, RK_NUM, RW_ANY_REQ | RW_TEST | RW_CHECKER, RT_RUN | RT_EXEC | RT_CELL | RT_PROC, 0, "wall-clock seconds") \
	L(memory, RK_STR | RK_NUM, RW_ANY_REQ | RW_TEST | RW_CHECKER, RT_RUN | RT_EXEC | RT_CELL | RT_PROC, 0, \
	  "RAM for the run: bytes, or a size such as 512m or 1g") \
	L(cpus, RK_NUM, RW_ANY_REQ, RT_RUN | RT_EXEC | RT_CELL | RT_PROC, 0, "CPU quota in cores, such as 0.5 or 2") \
	L(pids, RK_INT, RW_ANY_REQ, 0, 0, "processes and threads") \
	X(network, RK_BOOL | RK_STRS, RW_REQ | RW_JUDGED, RT_RUN | RT_EXEC | RT_INIT | RT_PROC, 0, \
	  "hosts the program may reach through sbx's proxy (\"pypi.org\", \"*.github.com\", \"example.org:80\"; no port: " \
	  "443), within the configuration's network list; true: all of that list") \
	X(artifacts, RK_BOOL, RW_REQ | RW_CELL, 0, 0, "return the files the run made or changed") \
	X(session, RK_STR, RW_REQ | RW_CELL, 0, 0, "the session whose workspace the job runs in") \
	X(principal, RK_STR, RW_ANY_REQ, 0, 0, "the HTTP token whose sbx-mcp call the run is (a digest), for the history") \
	X(user_approved, RK_STRS, RW_REQ | RW_JUDGED, 0, 0, \
	  "the patterns of network its session's user approved when asked (approve on deny), for the history") \
	X(install, RK_STRS, RW_REQ, 0, 0, "packages to install into the session's workspace, instead of a program") \
	X(cell, RK_BOOL, RW_REQ | RW_CELL, 0, 0, "the code is a cell for the session's kernel") \
	X(reset, RK_BOOL, RW_ANY_REQ, RT_CELL, 0, "restart the kernel first (its state is lost)") \
	X(background, RK_BOOL, RW_REQ, 0, 0, \
	  "run beside other jobs until the program ends (a session's process): stdin and signals through sbx-run --control") \
	X(tty, RK_BOOL | RK_OBJ, RW_REQ, RT_PROC, 0, \
	  "a background job's terminal: true (24 rows, 80 columns), or {rows, cols}; stdout and stderr are its output") \
	X(tests, RK_LIST, RW_ANY_REQ, RT_RUN, 0, "judge the program on these tests") \
	X(compare, RK_STR, RW_ANY_REQ | RW_JUDGING, RT_RUN, 0, "trim (default), exact, tokens, float:EPS or checker") \
	X(checker, RK_OBJ, RW_ANY_REQ | RW_JUDGING, RT_RUN, 0, \
	  "compare checker: the program that decides, run with the files input, output and expected as arguments") \
	X(stop_on_fail, RK_BOOL, RW_ANY_REQ | RW_JUDGING, RT_RUN, 0, "stop at the first failing test") \
	X(limits, RK_OBJ, RW_ANY_REQ | RW_COMPUTED, 0, 0, "the run's limits, resolved") \
	X(compile_limits, RK_OBJ, RW_ANY_REQ | RW_COMPUTED, 0, 0, "the compile stage's limits, resolved") \
	X(exec, RK_OBJ, RW_ANY_REQ | RW_COMPUTED, 0, 0, "what runs, where, with what of the host") \
	X(backend, RK_STR, RW_ANY_REQ | RW_COMPUTED, 0, 0, "the backend that runs the job")

/* How the MCP tools (RT_ bits) show a field in their input schemas where
 * the row alone does not say it: M(field, tools, description, shape), the
 * description when those tools word the field otherwise than its doc line
 * (NULL: the doc line), and the shape of a value with parts of its own
 * (RS_x, 0 if none), whose schema mcptools.c spells out.  A field's name
 * and JSON type come from its row; the tools that require it too. */
enum {
	RS_FILES = 1, /* path -> text, or path -> {content, encoding} */
	RS_TESTS,     /* an array of tests, each of a test's fields (RT_TEST) */
	RS_CHECKER,   /* a checker: a checker's fields (RT_CHECKER) */
};
#define REQ_MCP(M) \
	M(language, RT_EXEC, "the language of code, or of file; default the session's", 0) \
	M(language, RT_CELL, "the kernel's language; default the session's", 0) \
	M(language, RT_INIT, "the session's default language", 0) \
	M(language, RT_INSTALL, "whose package manager; default the session's language", 0) \
	M(language, RT_CHECKER, "the checker's language", 0) \
	M(code, RT_EXEC, "source to run", 0) \
	M(code, RT_CELL, "the cell's code", 0) \
	M(code, RT_CHECKER, "the checker's source", 0) \
	M(stdin, RT_TEST, "the test's input", 0) \
	M(args, RT_TEST, "its command-line arguments", 0) \
	M(files, RT_RUN | RT_TEST, NULL, RS_FILES) \
	M(timeout_ms, RT_CELL, "the cell's wall-clock seconds", 0) \
	M(timeout_ms, RT_PROC, "wall-clock seconds; default: until the session ends", 0) \
	M(code, RT_PROC, "source to run as the process, in the language given or the session's", 0) \
	M(language, RT_PROC, "the language of code; default the session's", 0) \
	M(timeout_ms, RT_TEST | RT_CHECKER, "its wall-clock seconds", 0) \
	M(memory, RT_TEST | RT_CHECKER, "its RAM: bytes, or a size such as 512m", 0) \
	M(tests, RT_RUN, NULL, RS_TESTS) \
	M(checker, RT_RUN, NULL, RS_CHECKER)

enum req_id {
#define REQ_ENUM(n, ...) REQ_##n,
	REQ_FIELDS(REQ_ENUM, REQ_ENUM)
#undef REQ_ENUM
	REQ_N
};

/* A field's name as C code writes it: REQ_KEY(tests) is "tests", and a
 * name that is not a row fails to compile, so a key cannot drift from the
 * table (an address constant, it also serves in static initializers).  A
 * limit's row is not one: its request key is limit.h's (limit_defs[].req),
 * not its field's name, so REQ_KEY(timeout_ms) fails too. */
enum {
#define REQ_KEY_ENUM(n, ...) REQ_KEY_##n = REQ_##n,
#define REQ_KEY_NONE(...)
	REQ_FIELDS(REQ_KEY_ENUM, REQ_KEY_NONE)
#undef REQ_KEY_ENUM
#undef REQ_KEY_NONE
};
#define REQ_KEY(n) (&#n[0 * REQ_KEY_##n])

struct req_field {
	const char *name;
	unsigned kinds, where, tools, required;
	const char *doc;
	int lim;           /* the limit (LIM_x) the field sets, or -1 */
};

/* Field i of REQ_N, in table order. */
const struct req_field *req_field(int i);
/* The field named name, or NULL. */
const struct req_field *req_find(const char *name);
/* The first field named in req (borrowed) whose where has all of the bits
 * in `all` and none of those in `none`, or NULL. */
const struct req_field *req_first(jv req, unsigned all, unsigned none);
/* The names of the fields with all of the bits in `all` set in where,
 * ", " between them ("stdin, args, files, ..."), for messages, in buf. */
const char *req_names(unsigned all, char *buf, size_t len);
/* req (consumed) with each argument of args (borrowed) that the tool
 * (RT_x) takes as a request field of the same name and req lacks. */
jv req_from_args(jv req, jv args, unsigned tool);
/* The description of field f in the input schema of the tool (one RT_
 * bit), and in *shape the shape of its value (RS_x, or 0): REQ_MCP's, or
 * the row's doc line. */
const char *req_mcp_doc(const struct req_field *f, unsigned tool, unsigned *shape);
/* Whether v (borrowed) is of one of the kinds (RK_ bits); a whole number
 * of at most 1e15 for RK_INT.  An array's items are not looked at. */
bool req_kind_ok(jv v, unsigned kinds);

#endif
