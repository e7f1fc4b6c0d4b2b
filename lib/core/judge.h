/* judge: one program, many tests, a contest judge's verdict.
 *
 * A request with "tests" ([{stdin?, args?, files?, expected_stdout?,
 * timeout?, memory?}]) is judged: compiled once, then run once per test,
 * each in a fresh sandbox (lib/run/trial.c), each output compared by the
 * request's "compare" (exact, trim, tokens, float:EPS) or decided by its
 * "checker", a program of any configured language run sandboxed with the
 * files input, output and expected (testlib's order and exit codes).
 *
 * sbx-validate's side, judge_exec: every test checked (an invalid record
 * names tests[i] and the field), each test's limits resolved over the
 * request's, and the computed part written into the job's exec: "tests"
 * ([{run, limits}]) and "checker" (the checker's own job record, made by
 * job_from_request).  sbx-run's side, judge_load: the same read back and
 * held to the ceilings again, as job_load does.  A struct judge borrows its
 * strings from the job's record and owns the rest (judge_free).
 *
 * judge_compare is pure: expected and actual bytes and a mode, and the
 * first difference, for a result people can read.
 */
#ifndef SBX_JUDGE_H
#define SBX_JUDGE_H

#include <stdbool.h>
#include <stddef.h>

#include <jv.h>

#include "conf.h"
#include "job.h"

enum judge_mode { JM_EXACT, JM_TRIM, JM_TOKENS, JM_FLOAT, JM_CHECKER };

struct judge_cmp {
	enum judge_mode mode;
	double eps;        /* JM_FLOAT: absolute or relative tolerance */
};

/* "exact", "trim", "tokens", "float:EPS" or "checker"; false with err. */
bool judge_cmp_parse(const char *s, struct judge_cmp *m, char *err, size_t errlen);

/* jv_null() if got is right, else the first difference: {"line",
 * "expected", "got"} (exact, trim) or {"token", "line", "expected", "got"}
 * (tokens, float), a side that ran out null; strings capped at 200 bytes. */
jv judge_compare(const struct judge_cmp *m, const char *exp, size_t elen, const char *got, size_t glen);

struct judge_test {
	const char *stdin_data;    /* NULL: none */
	size_t stdin_len;
	struct job_file *files;
	size_t nfiles;
	const char *expected;      /* NULL: none (exit 0 passes, or the checker decides) */
	size_t exp_len;
	char **run;                /* the run command with the test's args */
	struct limits lim;
};

struct judge {
	struct judge_cmp cmp;
	bool stop_on_fail;
	struct judge_test *tests;
	size_t n;
	jv checker;                /* the checker's job record, or jv_null() */
	struct job *cj;            /* the same, loaded (job_load), or NULL */
};

/* sbx-validate: for a request with "tests" (borrowed), the exec's "tests"
 * given its run command (borrowed), limits and program file (which a
 * test's file may not replace), and *checker (the checker's job, or
 * jv_null()); jv_invalid() with err if any of it is wrong. */
jv judge_exec(const struct conf *c, jv req, jv run, const struct limits *lim, const char *program, jv *checker, char *err,
	      size_t errlen);

/* sbx-run: the job's judge from its record and exec (borrowed), or NULL
 * with err; j->file and j->lim are loaded. */
struct judge *judge_load(const struct conf *c, jv rec, jv exec, const struct job *j, char *err, size_t errlen);
void judge_free(struct judge *jd);

#endif
