/* trial: a judged job's tests (judge.h), after its compile stage.
 *
 * Theory of operation.  The program was compiled once (run.c: its compile
 * stage, or a compile cache hit); what that left is handed here as
 * artefacts.  Each test then runs in a sandbox of its own on a fresh
 * scratch holding the program, the job's files, the artefacts and the
 * test's files: nothing one test writes is seen by the next.  A test whose
 * program exits 0 is judged by the comparison, or by the checker: a
 * program of its own (compiled once too, here, if its language compiles)
 * run in another fresh sandbox with the files input, output and expected,
 * whose exit code decides (0 passed, 1 or 2 wrong_answer, anything else,
 * a crash or a timeout judge_error: never a false pass).
 *
 * Tests run in parallel within sbx-run's -j: the job holds one slot, and
 * takes as many of the free ones as it has tests to spare when it starts
 * (run_env.slots), giving them back at the end.  Tests start in index
 * order, so with stop_on_fail every test before the first failing one has
 * run and the verdict does not depend on timing; the ones never started
 * are "skipped".
 *
 * Ownership: trial_start takes the artefacts; the job and environment are
 * the caller's and outlive the trial.  done comes from the loop, never
 * inside trial_start, with a summary the callee owns.  trial_start fails
 * (NULL, errno set, the artefacts freed) only when the system has no file
 * descriptor to spare.
 */
#ifndef SBX_TRIAL_H
#define SBX_TRIAL_H

#include <jv.h>

#include "backend.h"
#include "ccache.h"
#include "job.h"
#include "run.h"

struct trial;

/* summary: {"status", "verdict", "tests", "tests_passed", "tests_total",
 * "exit_code", "signal", "stdout", "stderr", "duration_ms", "cpu_ms",
 * "memory_peak_bytes", "error"?}: status is the verdict's (success for
 * accepted, the deciding test's otherwise; judge_error and wrong_answer
 * are error), and the time and memory the most of any test. */
typedef void (*trial_done_fn)(jv summary, unsigned enforced, void *arg);

struct trial *trial_start(struct run_env *e, struct backend *be, const struct job *j, char *const *envp,
			  struct ccache_file *art, size_t nart, trial_done_fn done, void *arg);
/* Whether tests are still to start. */
bool trial_pending(const struct trial *t);
/* Kill every sandbox of it; done follows, "cancelled". */
void trial_cancel(struct trial *t);
void trial_free(struct trial *t);

#endif
