/* status: the one table of what became of a request.
 *
 * A record's "status" (doc/contract.md) says what became of a request; a
 * judged run also has a "verdict", which is the status of its deciding test
 * (or "accepted"), and each of its tests has a status of its own.  The
 * lists and rules about them are loops over the rows below: sbx-history's
 * --status check, the MCP result schemas' status enum, sbx-run's progress
 * counters and exit code, sbx-batch's retries, the history's rates, the
 * dashboard's badges.  C code names one as STATUS(success), never as a
 * string; t/unit/status_test checks the contract's lists against these
 * rows.
 *
 * STATUSES, in the contract's order: the name, what it means, what else it
 * can name (a verdict, a test's status: SA_ bits), its badge's tone on
 * pages (ok, bad, warn, note).  The meanings:
 *   STF_RAN    the program ran: its time and memory count in the history's
 *              figures (a compile error never started it);
 *   STF_RATED  a verdict on the code, counted in the success rate (not an
 *              invalid request or a cancelled call);
 *   STF_OK     the code did what was asked;
 *   STF_CALL   the call failed, not the program: sbx-run exits 4 and an
 *              MCP tool result says isError;
 *   STF_AGAIN  nothing final about the request: a batch runs it again, the
 *              ledger lets a later attempt's result win.
 *
 * VERDICTS: the names a verdict or a test can have besides the statuses:
 * the name, the record status it makes (what "status" says to whoever
 * skips the verdict), whether a test can have it too, its tone.  TESTS: a
 * test's names that never decide a verdict (no badge of their own).  The
 * result schemas' enums of a verdict and of a test's status are the rows
 * with SA_VERDICT and SA_TEST.
 */
#ifndef SBX_STATUS_H
#define SBX_STATUS_H

#include <stdbool.h>

enum {
	STF_RAN = 1,
	STF_RATED = 2,
	STF_OK = 4,
	STF_CALL = 8,
	STF_AGAIN = 16,
};

/* What a name can be besides (or instead of) a record's status. */
enum {
	SA_VERDICT = 1, /* a judged run's verdict */
	SA_TEST = 2,    /* a test's status */
};

#define STATUSES(X) \
	X(success,        STF_RAN | STF_RATED | STF_OK,               0,                    ok) \
	X(error,          STF_RAN | STF_RATED,                        SA_VERDICT | SA_TEST, bad) \
	X(rejected,       STF_RAN | STF_RATED,                        0,                    bad) \
	X(timeout,        STF_RAN | STF_RATED,                        SA_VERDICT | SA_TEST, warn) \
	X(memory_limit,   STF_RAN | STF_RATED,                        SA_VERDICT | SA_TEST, warn) \
	X(compile_error,  STF_RATED,                                  SA_VERDICT,           note) \
	X(invalid,        STF_CALL,                                   0,                    note) \
	X(internal_error, STF_RAN | STF_RATED | STF_CALL | STF_AGAIN, SA_VERDICT | SA_TEST, bad) \
	X(cancelled,      STF_CALL | STF_AGAIN,                       SA_VERDICT | SA_TEST, note)

#define VERDICTS(X) \
	X(accepted,     success,  0,       ok) \
	X(wrong_answer, rejected, SA_TEST, bad) \
	X(output_limit, rejected, SA_TEST, warn) \
	X(judge_error,  error,    SA_TEST, bad)

#define TESTS(X) \
	X(passed) \
	X(skipped)

enum status_id {
#define STATUS_ENUM_(name, ...) STATUS_##name,
	STATUSES(STATUS_ENUM_) VERDICTS(STATUS_ENUM_) TESTS(STATUS_ENUM_)
#undef STATUS_ENUM_
	STATUS_N
};
#define STATUS_ONE_(...) +1
enum { STATUS_NSTATUSES = 0 STATUSES(STATUS_ONE_) };
#undef STATUS_ONE_

/* A status or verdict by its name: STATUS(success) is "success". */
#define STATUS(name) status_name(STATUS_##name)
const char *status_name(enum status_id id);
/* The row named s, or -1 (s may be NULL). */
int status_find(const char *s);
/* Is s a record's status (not a verdict's or test's name only)? */
bool status_known(const char *s);
/* Has s (a status, or a verdict through the status it makes) this meaning?
 * A name of no row (or NULL) ran and was rated, as any program's result
 * would be, and is neither ok, a failed call, nor to be run again. */
bool status_is(const char *s, unsigned flag);
/* The record status a verdict makes; a status (or a test's own name)
 * makes itself. */
enum status_id status_of_verdict(enum status_id v);
/* All the statuses for a message: "success, error, ..." (static). */
const char *status_list(void);
/* All the names a verdict can be, its own first: "accepted, ..." (static). */
const char *status_verdict_list(void);
/* Whether row i can be a verdict or a test's status (SA_ bits). */
unsigned status_as(enum status_id i);

#endif
