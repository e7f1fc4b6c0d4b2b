/* run: one job from start to result record.
 *
 * A run loads the job (job_load), makes its scratch directory, writes the
 * program and its files into it, runs the compile stage if the language
 * has one and then the run stage, each as its own sandbox with its own
 * limits, and builds the result record of DESIGN §2 from the stages'
 * outcomes.  Runs are driven by the caller's event loop; many may be in
 * flight at once.  The job names its backend (backend.h); nothing here
 * depends on which it is.
 *
 * The result record is the job record without the fields that only
 * sbx-run needs ("exec", "compile_limits"), plus the result fields.
 */
#ifndef SBX_RUN_H
#define SBX_RUN_H

#include <stdbool.h>

#include <jv.h>

#include "backend.h"
#include "conf.h"
#include "loop.h"
#include "stage.h"

struct run;
struct cflight;
struct run_env {
	const struct conf *conf;
	struct backend **backends; /* a job's "backend" names one; others are refused */
	size_t nbackends;
	struct ccache *cache;      /* NULL: no compile cache */
	struct cflight *flights;   /* keys being compiled (run.c) */
	struct kernels *kernels;   /* where cells run (cell.h); NULL: cells are refused */
	struct run_net *nets;      /* the sessions' network namespaces (run.c's session_net) */
	bool nets_off;             /* none can be made here: each run keeps its own (said once) */
	size_t nflights;
	struct loop *loop;
	bool timings;
	/* Optional: told when a stage's sandbox is handed its job ("compile",
	 * "run"), for progress reports. */
	void (*on_stage)(struct run *r, const char *stage);
	/* Optional: the program's output as it arrives (stream 1 stdout, 2
	 * stderr; the compile stage's too), for live output.  The result is
	 * unchanged. */
	void (*on_output)(struct run *r, int stream, const char *data, size_t len);
	/* Optional: a judged job's tests may run beside each other (trial.h)
	 * in slots it takes from the caller's: up to `want` of the free ones,
	 * given back when its tests are done. */
	size_t (*slots_take)(struct run_env *e, size_t want);
	void (*slots_give)(struct run_env *e, size_t n);
};

struct run;
/* Called once per run with its result record (owned by the callee).  The
 * run must then be freed with run_free. */
typedef void (*run_done_fn)(struct run *r, jv result, void *arg);

/* Start a job.  If it cannot start at all (not a job, bad fields), returns
 * NULL and stores the invalid or internal_error record in *immediate. */
struct run *run_start(struct run_env *e, jv rec, run_done_fn done, void *arg, jv *immediate);
/* Kill its sandbox now; the result comes through done as usual. */
void run_cancel(struct run *r);
void run_free(struct run *r);
/* The job's id (for logs). */
const char *run_id(const struct run *r);
/* A judged job with tests not yet started (its compile stage running, or
 * tests waiting for a slot): sbx-run keeps sandboxes warm for them. */
bool run_tests_pending(const struct run *r);
/* Its session's workspace, or NULL. */
const char *run_workspace(const struct run *r);
/* A session's loopback: the network namespace its runs' run stages, its
 * kernels and its processes share (backend.h's netns), so that a server
 * one of them starts is reachable from the next.  Made at the first that
 * needs it, on backends that can (`kernels`); a run with the host's
 * network or an allow-list (its own proxy on its own loopback), and an
 * install, keep one of their own.  run_session_end forgets a session's
 * (its sandboxes keep it until they end), run_nets_free every one. */
void run_session_end(struct run_env *e, const char *workspace);
/* A TCP socket in a session's loopback namespace (backend.h's
 * netns_socket), for a connection to one of its ports; -1 with err if
 * the session has none (nothing has run in it here). */
int run_session_socket(struct run_env *e, const char *workspace, char *err, size_t errlen);
void run_nets_free(struct run_env *e);
/* A background job (job.h): it takes input, signals and a new terminal
 * size while its program runs (bgio.h).  run_input queues data (and with
 * eof ends the input), false with err if it cannot (not started yet, a
 * full queue, closed input); run_signal sends sig to the program's
 * process group (backend.h's signal), run_resize sizes its terminal,
 * each false if the program is not there to take it. */
bool run_background(const struct run *r);
bool run_input(struct run *r, const char *data, size_t len, bool eof, char *err, size_t errlen);
bool run_signal(struct run *r, int sig);
bool run_resize(struct run *r, unsigned rows, unsigned cols);


#endif
