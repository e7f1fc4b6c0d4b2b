#define _GNU_SOURCE
#include "trial.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "judge.h"
#include "rec.h"
#include "stage.h"
#include "status.h"
#include "util.h"

/* What a test's result keeps of each stream: enough to see what went
 * wrong, little enough for 100 tests in one line. */
#define KEEP_OUTPUT 1024

/* A program as the trial runs it: a job (its file, code, files, run
 * command, limits) and what its compile stage left. */
struct prog {
	const struct job *j;
	struct ccache_file *art;
	size_t nart;
};

struct slot {
	struct trial *t;
	size_t test;
	bool checking;          /* the checker's stage, not the program's */
	struct bk_scratch *sc;
	struct bk_stage *st;
	struct stage_spec spec;
	struct limits lim;
	char *out;              /* the program's stdout, for the checker */
	size_t outlen;
	jv res;                 /* the test's result so far */
};

struct trial {
	struct run_env *e;
	struct backend *be;
	const struct job *j;
	const struct judge *jd;
	char *const *envp;
	struct prog prog, check;
	const struct job *cj;   /* the checker's job (judge.h), or NULL */
	char **cenv;
	bool have_checker, checker_ready;
	char checker_error[600]; /* its compile failed: every test is judge_error */
	struct slot cslot;      /* the checker's compile stage */
	size_t next, running, slots, extra;
	size_t stop_at;         /* stop_on_fail: the first failing test so far (n: none) */
	jv *results;            /* per test, jv_invalid() until done */
	struct slot **live;     /* per test, its slot while it runs */
	bool stopping, cancelled, finished, took;
	unsigned enforced;
	int wake;               /* eventfd: finish from the loop, not inside a call */
	trial_done_fn done;
	void *arg;
};

static double round1(double v)
{
	return round(v * 10) / 10;
}

static void pump(struct trial *t);

/* ---- one stage on a fresh scratch ------------------------------------ */

/* The program, the job's files, the extra ones (a test's, the checker's
 * three), and what the compile stage made last: no file of the same name
 * replaces the compiled program. */
static bool write_prog(struct bk_scratch *sc, const struct prog *p, const struct job_file *extra, size_t nextra)
{
	const struct backend_ops *ops = sc->be->ops;
	if (p->j->file && ops->scratch_write(sc, p->j->file, p->j->code, p->j->code_len, 0644) < 0)
		return false;
	for (size_t i = 0; i < p->j->nfiles; i++)
		if (ops->scratch_write(sc, p->j->files[i].path, p->j->files[i].data, p->j->files[i].len, 0644) < 0)
			return false;
	for (size_t i = 0; i < nextra; i++)
		if (ops->scratch_write(sc, extra[i].path, extra[i].data, extra[i].len, 0644) < 0)
			return false;
	for (size_t i = 0; i < p->nart; i++)
		if (ops->scratch_write(sc, p->art[i].path, p->art[i].data, p->art[i].len, p->art[i].mode) < 0)
			return false;
	return true;
}

static void stage_done(void *arg);

/* Start p with argv and lim on a fresh scratch holding p and the extra
 * files; false with err. */
static bool start_on_fresh(struct slot *s, const struct prog *p, char *const *argv, char *const *env, const char *in,
			   size_t inlen, const struct job_file *extra, size_t nextra, bool compile, char *err, size_t errlen)
{
	struct trial *t = s->t;
	s->sc = bk_scratch_open(t->be, NULL, NULL, false, false, compile ? p->j->clim.scratch : s->lim.scratch, err, errlen);
	if (!s->sc)
		return false;
	if (!write_prog(s->sc, p, extra, nextra)) {
		snprintf(err, errlen, "cannot write the files into a test's scratch directory: %s%s", strerror(errno),
			 errno == ENOSPC ? " (more than scratch_size)" : "");
		return false;
	}
	if (t->be->ops->scratch_stage(s->sc, compile, err, errlen) < 0)
		return false;
	s->spec = (struct stage_spec){
		.argv = argv,
		.env = env,
		.lim = &s->lim,
		.scratch = s->sc,
		.compile = compile,
		/* W^X: the compiler's declared outputs alone are executable. */
		.outputs = !compile && p->j->compile ? p->j->outputs : NULL,
		.stdin_data = in,
		.stdin_len = inlen,
		.network = p->j->network,
		/* a test's program reaches what the job's allow-list says, the
		 * compiler nothing */
		.egress = compile ? NULL : p->j->egress,
		.rootfs = p->j->rootfs,
		.binds = p->j->binds,
		.image = p->j->image,
		.timings = false,
		.label = t->j->id,
	};
	s->st = bk_start(t->be, t->e->loop, &s->spec, stage_done, s);
	if (!s->st)
		snprintf(err, errlen, "the sandbox could not be started");
	return s->st != NULL;
}

static void slot_release(struct slot *s)
{
	if (s->st)
		s->t->be->ops->stage_free(s->st);
	s->st = NULL;
	bk_scratch_close(s->sc);
	s->sc = NULL;
}

/* ---- results --------------------------------------------------------- */

static jv keep(const struct cap_buf *b)
{
	size_t n;
	char *raw = cap_buf_bytes(b, &n);
	bool cut;
	jv s = cap_string(raw, n, KEEP_OUTPUT, cap_buf_truncated(b) ? b->total - KEEP_OUTPUT : 0, &cut);
	free(raw);
	return s;
}

/* The program's stage into the test's result: how it ran. */
static jv run_fields(jv res, const struct stage_result *br)
{
	char sig[32];
	res = jv_object_set(res, jv_string("exit_code"), br->status == STAGE_EXITED ? jv_number(br->exit_code) : jv_null());
	res = jv_object_set(res, jv_string("signal"), (br->status == STAGE_SIGNALED || br->status == STAGE_TIMEOUT ||
						       br->status == STAGE_OOM) && br->signal
							      ? jv_string(stage_signal_name(br->signal, sig, sizeof sig))
							      : jv_null());
	res = jv_object_set(res, jv_string("duration_ms"), jv_number(round1(br->duration_ms)));
	res = jv_object_set(res, jv_string("cpu_ms"), br->cpu_ms >= 0 ? jv_number(round1(br->cpu_ms)) : jv_null());
	res = jv_object_set(res, jv_string("memory_peak_bytes"), br->mem_peak >= 0 ? jv_number((double)br->mem_peak) : jv_null());
	res = jv_object_set(res, jv_string("stdout"), keep(&br->out));
	res = jv_object_set(res, jv_string("stderr"), keep(&br->err));
	/* with an allow-list, the test's connections (egress.h) */
	if (jv_get_kind(br->egress) == JV_KIND_ARRAY)
		res = jv_object_set(res, jv_string("egress"), jv_copy(br->egress));
	return jv_object_set(res, jv_string("stdout_bytes"), jv_number((double)br->out.total));
}

/* The test is over: its result kept, its slot freed; the caller pumps. */
static void finish_test(struct slot *s, const char *status)
{
	struct trial *t = s->t;
	size_t i = s->test;
	t->results[i] = jv_object_set(s->res, jv_string("status"), jv_string(status));
	t->live[i] = NULL;
	s->res = jv_invalid();
	free(s->out);
	s->out = NULL;
	slot_release(s);
	free(s);
	t->running--;
	if (strcmp(status, STATUS(passed)) && t->jd->stop_on_fail && i < t->stop_at) {
		/* Later tests do not count now: the running ones are stopped;
		 * earlier ones run on, so the verdict is the first failing
		 * test's whatever the timing. */
		t->stopping = true;
		t->stop_at = i;
		for (size_t k = i + 1; k < t->jd->n; k++)
			if (t->live[k] && t->live[k]->st)
				t->be->ops->cancel(t->live[k]->st);
	}
}

static void test_end(struct slot *s, const char *status)
{
	struct trial *t = s->t;
	finish_test(s, status);
	pump(t);
}

static void judge_error(struct slot *s, const char *fmt, const char *detail)
{
	s->res = jv_object_set(s->res, jv_string("error"), jv_string_fmt(fmt, detail));
	test_end(s, STATUS(judge_error));
}

/* The checker decides (testlib: 0 ok, 1 wrong answer, 2 presentation
 * error; 3 is its own failure): anything else is the checker's fault. */
static void checker_done(struct slot *s, const struct stage_result *br)
{
	char why[64];
	jv msg = keep(br->err.total ? &br->err : &br->out);
	s->res = jv_object_set(s->res, jv_string("checker_message"), msg);
	if (br->status == STAGE_CANCELLED) {
		test_end(s, STATUS(cancelled));
		return;
	}
	/* A checker flooding its output is broken, whatever its exit says. */
	if (br->status == STAGE_EXITED && (cap_buf_truncated(&br->out) || cap_buf_truncated(&br->err))) {
		judge_error(s, "the checker %s", "wrote more than its output limit");
		return;
	}
	if (br->status == STAGE_EXITED && br->exit_code <= 2) {
		test_end(s, br->exit_code == 0 ? STATUS(passed) : STATUS(wrong_answer));
		return;
	}
	if (br->status == STAGE_EXITED)
		snprintf(why, sizeof why, "exited with code %d", br->exit_code);
	else if (br->status == STAGE_SIGNALED)
		snprintf(why, sizeof why, "died of %s", stage_signal_name(br->signal, (char[32]){ 0 }, 32));
	else if (br->status == STAGE_TIMEOUT)
		snprintf(why, sizeof why, "passed its timeout");
	else if (br->status == STAGE_OOM)
		snprintf(why, sizeof why, "passed its memory limit");
	else
		snprintf(why, sizeof why, "could not run: %.40s", br->error);
	judge_error(s, "the checker %s", why);
}

static void start_checker(struct slot *s)
{
	struct trial *t = s->t;
	const struct judge_test *jt = &t->jd->tests[s->test];
	if (t->checker_error[0]) {
		judge_error(s, "%s", t->checker_error);
		return;
	}
	/* The program's scratch goes first: a test holds one at a time. */
	slot_release(s);
	struct job_file files[3] = {
		{ "input", (char *)(jt->stdin_data ? jt->stdin_data : ""), jt->stdin_len },
		{ "output", s->out, s->outlen },
		{ "expected", (char *)(jt->expected ? jt->expected : ""), jt->exp_len },
	};
	s->checking = true;
	s->lim = t->cj->lim;
	char err[512];
	if (!start_on_fresh(s, &t->check, t->cj->run, t->cenv, NULL, 0, files, 3, false, err, sizeof err))
		judge_error(s, "the checker could not start: %s", err);
}

static void test_done(struct slot *s, const struct stage_result *br)
{
	struct trial *t = s->t;
	const struct judge_test *jt = &t->jd->tests[s->test];
	t->enforced = br->enforced;
	s->res = run_fields(s->res, br);
	switch (br->status) {
	case STAGE_CANCELLED:
		test_end(s, STATUS(cancelled));
		return;
	case STAGE_INTERNAL:
		s->res = jv_object_set(s->res, jv_string("error"), jv_string(br->error));
		test_end(s, STATUS(internal_error));
		return;
	case STAGE_TIMEOUT: test_end(s, STATUS(timeout)); return;
	case STAGE_OOM: test_end(s, STATUS(memory_limit)); return;
	case STAGE_SIGNALED: test_end(s, STATUS(error)); return;
	case STAGE_EXITED: break;
	}
	if (br->exit_code != 0) {
		test_end(s, STATUS(error));
		return;
	}
	if (cap_buf_truncated(&br->out)) {
		test_end(s, STATUS(output_limit));
		return;
	}
	s->out = cap_buf_bytes(&br->out, &s->outlen);
	if (t->have_checker) {
		start_checker(s);
		return;
	}
	jv diff = jt->expected ? judge_compare(&t->jd->cmp, jt->expected, jt->exp_len, s->out, s->outlen) : jv_null();
	if (jv_get_kind(diff) == JV_KIND_NULL) {
		test_end(s, STATUS(passed));
		return;
	}
	s->res = jv_object_set(s->res, jv_string("diff"), diff);
	test_end(s, STATUS(wrong_answer));
}

static void checker_compiled(struct trial *t, const struct stage_result *br);

static void stage_done(void *arg)
{
	struct slot *s = arg;
	const struct stage_result *br = s->t->be->ops->result(s->st);
	if (s == &s->t->cslot)
		checker_compiled(s->t, br);
	else if (s->checking)
		checker_done(s, br);
	else
		test_done(s, br);
}

/* ---- the tests ------------------------------------------------------- */

/* Start test i; one that cannot start is over at once (the caller's
 * loop goes on: no recursion through pump per test). */
static void start_test(struct trial *t, size_t i)
{
	const struct judge_test *jt = &t->jd->tests[i];
	struct slot *s = util_xalloc(sizeof *s);
	*s = (struct slot){ .t = t, .test = i, .lim = jt->lim };
	/* The output a test is judged on may be more than a run keeps. */
	s->lim.output = t->e->conf->test_output;
	s->res = jv_object_set(jv_object(), jv_string("index"), jv_number((double)i));
	t->running++;
	t->live[i] = s;
	char err[512];
	if (!start_on_fresh(s, &t->prog, jt->run, t->envp, jt->stdin_data, jt->stdin_len, jt->files, jt->nfiles, false, err,
			    sizeof err)) {
		s->res = jv_object_set(s->res, jv_string("error"), jv_string(err));
		finish_test(s, STATUS(internal_error));
	}
}

static void summarize(struct trial *t);

static void pump(struct trial *t)
{
	if (t->finished)
		return;
	/* The free slots, as many as the tests can use, once they can start
	 * (not while the checker compiles). */
	if (!t->took && t->checker_ready && !t->cancelled) {
		t->took = true;
		if (t->e->slots_take && t->jd->n > 1)
			t->extra = t->e->slots_take(t->e, t->jd->n - 1);
		t->slots = 1 + t->extra;
	}
	while (t->checker_ready && !t->stopping && !t->cancelled && t->running < t->slots && t->next < t->jd->n)
		start_test(t, t->next++);
	/* Every test started: the slots no test holds go back to sbx-run (the
	 * job keeps its own). */
	if (!trial_pending(t) && t->e->slots_give) {
		size_t need = t->running > 1 ? t->running - 1 : 0;
		if (t->extra > need) {
			t->e->slots_give(t->e, t->extra - need);
			t->extra = need;
			t->slots = 1 + need;
		}
	}
	if (t->running == 0 && (t->next == t->jd->n || t->stopping || t->cancelled)) {
		t->finished = true;
		/* From the loop: this may be inside trial_start. */
		uint64_t one = 1;
		if (write(t->wake, &one, sizeof one) < 0)
			util_warn("trial: eventfd: %s", strerror(errno));
	}
}

static void on_wake(struct loop *l, int fd, short revents, void *arg)
{
	(void)l;
	(void)revents;
	uint64_t v;
	if (read(fd, &v, sizeof v) < 0 && errno != EAGAIN)
		util_warn("trial: eventfd: %s", strerror(errno));
	summarize(arg);
}

/* A test's status as the job's: what "status" says of the program.  A
 * program that ran to its end and printed what the judge refused is
 * "rejected", not "error" beside an exit code 0: the status alone must
 * read right to whoever skips the verdict. */
static const char *job_status(const char *st)
{
	int v = status_find(st);
	return v < 0 ? STATUS(error) : status_name(status_of_verdict(v));
}

static void summarize(struct trial *t)
{
	loop_unwatch(t->e->loop, t->wake);
	jv tests = jv_array(), decider = jv_null();
	size_t passed = 0;
	double dur = 0, cpu = -1, mem = -1;
	for (size_t i = 0; i < t->jd->n; i++) {
		jv r = t->results[i];
		t->results[i] = jv_invalid();
		if (i > t->stop_at) {
			jv_free(r);
			r = jv_invalid();
		}
		if (!jv_is_valid(r))
			r = jv_object_set(jv_object_set(jv_object(), jv_string("index"), jv_number((double)i)), jv_string("status"),
					  jv_string(t->cancelled ? STATUS(cancelled) : STATUS(skipped)));
		const char *st = rec_str(r, "status", NULL);
		if (!strcmp(st, STATUS(passed)))
			passed++;
		else if (jv_get_kind(decider) == JV_KIND_NULL && strcmp(st, STATUS(skipped)))
			decider = jv_copy(r);
		double v;
		if (rec_num(r, "duration_ms", &v) && v > dur)
			dur = v;
		if (rec_num(r, "cpu_ms", &v) && v > cpu)
			cpu = v;
		if (rec_num(r, "memory_peak_bytes", &v) && v > mem)
			mem = v;
		tests = jv_array_append(tests, r);
	}
	jv sum = jv_object();
	const char *verdict = STATUS(accepted);
	if (jv_get_kind(decider) == JV_KIND_OBJECT)
		verdict = rec_str(decider, "status", NULL);
	if (t->cancelled)
		verdict = STATUS(cancelled);
	sum = jv_object_set(sum, jv_string("status"), jv_string(job_status(verdict)));
	sum = jv_object_set(sum, jv_string("verdict"), jv_string(verdict));
	sum = jv_object_set(sum, jv_string("tests_passed"), jv_number((double)passed));
	sum = jv_object_set(sum, jv_string("tests_total"), jv_number((double)t->jd->n));
	/* The deciding test's exit and output at the top, as a run's. */
	static const char *const from_decider[] = { "exit_code", "signal", "stdout", "stderr", "error" };
	for (size_t i = 0; i < sizeof from_decider / sizeof from_decider[0]; i++) {
		jv v = jv_get_kind(decider) == JV_KIND_OBJECT ? rec_get(decider, from_decider[i]) : jv_invalid();
		if (jv_is_valid(v))
			sum = jv_object_set(sum, jv_string(from_decider[i]), v);
		else if (i < 4)
			sum = jv_object_set(sum, jv_string(from_decider[i]), i == 0 ? jv_number(0) : i == 1 ? jv_null() : jv_string(""));
	}
	if (jv_get_kind(decider) == JV_KIND_OBJECT && !rec_has(decider, "exit_code"))
		sum = jv_object_set(sum, jv_string("exit_code"), jv_null());
	if (jv_get_kind(decider) == JV_KIND_OBJECT) {
		double v;
		rec_num(decider, "index", &v);
		sum = jv_object_set(sum, jv_string("failed_test"), jv_number(v));
	}
	jv_free(decider);
	sum = jv_object_set(sum, jv_string("duration_ms"), jv_number(dur));
	sum = jv_object_set(sum, jv_string("cpu_ms"), cpu >= 0 ? jv_number(cpu) : jv_null());
	sum = jv_object_set(sum, jv_string("memory_peak_bytes"), mem >= 0 ? jv_number(mem) : jv_null());
	sum = jv_object_set(sum, jv_string("tests"), tests); /* check-names: the result's tests */
	if (t->extra && t->e->slots_give)
		t->e->slots_give(t->e, t->extra);
	t->extra = 0;
	t->done(sum, t->enforced, t->arg);
}

/* ---- the checker's compile stage ------------------------------------- */

static void checker_compiled(struct trial *t, const struct stage_result *br)
{
	struct slot *s = &t->cslot;
	if (br->status == STAGE_EXITED && br->exit_code == 0) {
		if (!ccache_collect(t->cj, s->sc->dir, &t->check.art, &t->check.nart))
			snprintf(t->checker_error, sizeof t->checker_error, "the checker's compiled files could not be read");
	} else if (br->status == STAGE_CANCELLED)
		t->cancelled = true;
	else {
		jv e = keep(&br->err);
		snprintf(t->checker_error, sizeof t->checker_error, "the checker did not compile: %.500s", jv_string_value(e));
		jv_free(e);
	}
	slot_release(s);
	t->checker_ready = true;
	pump(t);
}

struct trial *trial_start(struct run_env *e, struct backend *be, const struct job *j, char *const *envp,
			  struct ccache_file *art, size_t nart, trial_done_fn done, void *arg)
{
	/* done is called from the loop, woken by this */
	int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake < 0) {
		int saved = errno;
		ccache_files_free(art, nart);
		errno = saved;
		return NULL;
	}
	struct trial *t = util_xalloc(sizeof *t);
	*t = (struct trial){ .e = e, .be = be, .j = j, .jd = j->judge, .envp = envp, .done = done, .arg = arg, .slots = 1,
			     .stop_at = j->judge->n, .wake = wake };
	t->prog = (struct prog){ j, art, nart };
	t->results = util_xalloc(t->jd->n * sizeof *t->results);
	t->live = util_xalloc(t->jd->n * sizeof *t->live);
	for (size_t i = 0; i < t->jd->n; i++)
		t->results[i] = jv_invalid();
	loop_watch(e->loop, t->wake, POLLIN, on_wake, t);
	t->checker_ready = true;
	if (t->jd->cj) {
		char err[512];
		t->have_checker = true;
		t->cj = t->jd->cj;
		t->cenv = stage_env(t->cj->env);
		t->check = (struct prog){ t->cj, NULL, 0 };
		if (t->cj->compile) {
			/* Compiled once, like the program, on a scratch of its own. */
			t->checker_ready = false;
			t->cslot = (struct slot){ .t = t, .lim = t->cj->clim };
			if (!start_on_fresh(&t->cslot, &t->check, t->cj->compile, t->cenv, NULL, 0, NULL, 0, true, err, sizeof err)) {
				slot_release(&t->cslot);
				snprintf(t->checker_error, sizeof t->checker_error, "the checker could not compile: %.400s", err);
				t->checker_ready = true;
			}
		}
	}
	pump(t);
	return t;
}

bool trial_pending(const struct trial *t)
{
	return !t->finished && !t->stopping && !t->cancelled && t->next < t->jd->n;
}

void trial_cancel(struct trial *t)
{
	/* Every test done, the summary on its way: nothing to cancel. */
	if (!t || t->finished)
		return;
	t->cancelled = true;
	if (t->cslot.st)
		t->be->ops->cancel(t->cslot.st);
	/* Each cancelled stage ends as STAGE_CANCELLED, through its callback. */
	for (size_t i = 0; i < t->jd->n; i++)
		if (t->live[i] && t->live[i]->st)
			t->be->ops->cancel(t->live[i]->st);
}

void trial_free(struct trial *t)
{
	if (!t)
		return;
	slot_release(&t->cslot);
	for (size_t i = 0; i < t->jd->n; i++) {
		struct slot *s = t->live[i];
		if (s) {
			slot_release(s);
			jv_free(s->res);
			free(s->out);
			free(s);
		}
		jv_free(t->results[i]);
	}
	free(t->results);
	free(t->live);
	if (t->wake >= 0) {
		loop_unwatch(t->e->loop, t->wake);
		close(t->wake);
	}
	if (t->extra && t->e->slots_give)
		t->e->slots_give(t->e, t->extra);
	ccache_files_free(t->prog.art, t->prog.nart);
	ccache_files_free(t->check.art, t->check.nart);
	util_strv_free(t->cenv);
	free(t);
}
