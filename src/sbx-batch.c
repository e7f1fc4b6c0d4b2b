/* sbx-batch: run one shard of a batch so that an engine may retry it.
 *
 * Theory of operation: a cluster's engine (a Slurm array task, a GNU
 * parallel job, a Kubernetes pod) runs `sbx-batch SHARD OUT` and may kill
 * it, run it twice, or run it again after a crash.  So:
 *
 * - OUT appears whole or not at all.  Results go to OUT.partial; when
 *   every request of SHARD has its result there, they are copied in
 *   SHARD's order to a file beside OUT, flushed to disk and renamed to OUT.
 * - An attempt resumes the last one: the results in OUT.partial are kept
 *   (a torn last line, results of other ids, `internal_error` results (a
 *   node whose sandboxes cannot be set up says nothing of the code) and
 *   the `cancelled` results of
 *   jobs the kill interrupted are dropped) and only the requests without
 *   one are run.  OUT.attempts counts the attempts; every request run
 *   carries "shard": {"index", "of", "attempt", "host"}, so its result
 *   (and its history row) says where and in which attempt it ran, and
 *   sbx-merge can prefer the newest.
 * - A finished OUT is final: running again checks it answers SHARD and
 *   exits 0 without running anything.
 * - One attempt at a time: OUT.lock is held (flock) while one runs, and a
 *   second started meanwhile (an engine that lost track of the first)
 *   fails at once rather than writing the same partial file.
 *
 * The runs are the usual pipeline, sbx-validate | sbx-run | sbx-cap (|
 * sbx-log with --history), from this tool's own directory, its output
 * appended to OUT.partial.  A signal (SIGTERM from the engine) is passed to
 * the stages; sbx-run kills its sandboxes, and the partial results stay for
 * the next attempt.  SHARD "-" is stdin and OUT "-" stdout: then nothing
 * lasts between attempts, and the results are printed only when complete.
 *
 * Exit status (enum below): 0 every request has its result (requests that
 * are bad input have their `invalid` record: that is a result, not a
 * failure); 1 the attempt failed (a stage died or was killed, results are
 * missing): run it again; 2 usage (also an OUT whose directory is missing
 * or not this user's to write); 3 the shard cannot be run as it is (a line
 * that is not a request, a repeated id, an OUT that answers other requests
 * or is not a regular file, a request the stages answered without an id
 * as they ran to their end): running again will not help.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"
#include "ledger.h"
#include "proc.h"
#include "rec.h"
#include "req.h"
#include "shard.h"
#include "status.h"
#include "util.h"

enum batch_exit {
	BATCH_DONE = 0,   /* every request has its result in OUT */
	BATCH_FAILED = 1, /* this attempt failed; another may succeed */
	BATCH_USAGE = 2,
	BATCH_BAD = 3,    /* the shard (or OUT) is wrong; retrying will not help */
};

static const char synopsis[] =
	"usage: sbx-batch [-j N] [-c FILE] [--history DB] [--shard I/K] SHARD.jsonl OUT.jsonl\n";

static void help(void)
{
	printf("%s\n"
	       "Run one shard of a batch through sbx-validate | sbx-run | sbx-cap so that it\n"
	       "can be killed and retried: OUT appears complete or not at all, and a new\n"
	       "attempt runs only the requests that have no result yet.\n"
	       "\n"
	       "  -j, --jobs N        sandboxes at once (sbx-run -j)\n"
	       "      --history DB    also log every run to the history file DB (sbx-log -d)\n"
	       "      --shard I/K     the shard's place, when SHARD is not named shard-I-of-K.jsonl\n"
	       "  -c, --config FILE   configuration file\n"
	       "  -h, --help          show this help\n"
	       "      --version       show the version\n"
	       "\n"
	       "SHARD \"-\" reads stdin; OUT \"-\" writes stdout once every result is in.\n"
	       "sbx-run's progress (done/total, rate, ETA, counts by status) goes to stderr:\n"
	       "redrawn on a terminal, else a line every 5 s, for the task's log.\n"
	       "\n"
	       "Exit status: 0 every request has its result (bad requests have their invalid\n"
	       "record), 1 this attempt failed: run it again, 2 usage, 3 the shard cannot be\n"
	       "run as it is: running it again will not help.\n",
	       synopsis);
}

/* Results longest line (as sbx-merge). */
#define RESULT_LINE_MAX (256u << 20)

static const char *conf_path, *history, *jobs;
static unsigned sh_index, sh_of;
static bool sh_known;
static long attempt;
static char host[256];

/* The stages, for the signal handler. */
static volatile sig_atomic_t stopping;
static pid_t stages[4];
static int nstages;

/* Only sbx-validate and sbx-run are stopped: sbx-cap (and sbx-log) then
 * see their input end and write what finished before they exit, so the
 * next attempt need not run it again. */
static void on_signal(int sig)
{
	stopping = sig;
	for (int i = 0; i < nstages && i < 2; i++)
		if (stages[i] > 0)
			kill(stages[i], SIGTERM);
}

/* The shard's requests: the ledger, and where each line is in the shard. */
static struct ledger led;
static off_t *req_off;
static size_t *req_len;

/* Removed at exit unless renamed into place first: a failed attempt (a
 * full disk) must not leave a half copy taking the room the next needs. */
static char *doomed;
/* OUT "-": the private directory and what may be in it. */
static char *workdir, *work_files[8];

static void remove_work(void)
{
	if (doomed)
		unlink(doomed);
	if (!workdir)
		return;
	for (size_t i = 0; i < sizeof work_files / sizeof work_files[0]; i++)
		if (work_files[i])
			unlink(work_files[i]);
	rmdir(workdir);
}

/* Opening a file of ours failed: a directory that is missing or cannot be
 * written is the caller's to fix (2, like a SHARD that is not there), not
 * this attempt's failure that another could get past. */
static _Noreturn void open_failed(const char *path)
{
	int e = errno;
	if (e == ENOENT || e == ENOTDIR || e == EACCES || e == EPERM || e == EROFS)
		util_usage_error(synopsis, "%s: %s (OUT's directory must exist, and it and OUT's files be this user's to read and write)",
				 path, strerror(e));
	util_die(BATCH_FAILED, "%s: %s", path, strerror(e));
}

static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0)
		open_failed(path);
	return fd;
}

/* An existing OUT, OUT.partial or OUT.attempts, or -1 with errno: a FIFO
 * must not hang the task (O_NONBLOCK: no wait for a writer) and anything but
 * a regular file is not ours to read or replace. */
static int open_existing(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		util_die(BATCH_BAD, "%s: not a regular file: remove it to run the shard", path);
	return fd;
}

static void load_shard(int fd, const char *path, size_t max_line)
{
	struct ledger_file f;
	ledger_file_init(&f, fd, max_line);
	struct ledger_line ln;
	int r;
	unsigned long bad = 0;
	while ((r = ledger_file_next(&f, &ln)) > 0) {
		const char *why = NULL;
		jv req = jv_invalid();
		char *key = NULL;
		enum rec_status st = REC_INVALID;
		if (ln.text)
			st = rec_parse_line(ln.text, ln.len, ln.lineno, &req);
		if (st == REC_AGAIN)
			continue;
		if (!ln.text)
			why = "longer than the record limit";
		else if (st == REC_INVALID)
			why = rec_str(req, "error", NULL);
		else if (!(key = ledger_request_key(&led, req, ln.text, ln.len, &why)))
			;
		else {
			long i = ledger_add(&led, key, ln.lineno, req);
			if (i < 0) {
				why = "its id is the id of an earlier line";
			} else {
				req_off = util_xrealloc(req_off, led.cap * sizeof *req_off);
				req_len = util_xrealloc(req_len, led.cap * sizeof *req_len);
				req_off[i] = ln.off;
				req_len[i] = ln.len;
			}
		}
		if (why && ++bad <= 10)
			util_warn("%s:%lu: %s", path, ln.lineno, why);
		jv_free(req);
	}
	if (r < 0)
		util_die(BATCH_FAILED, "reading %s: %s", path, strerror(errno));
	ledger_file_free(&f);
	if (bad)
		util_die(BATCH_BAD, "%s: %lu lines are not requests of their own: fix the shard (sbx-shard makes sound ones)",
			 path, bad);
}

struct tally {
	unsigned long first, dup, dropped, cancelled, internal;
	unsigned long noid; /* of dropped: results without a usable id */
};
/* The error of the first of those, to name why a request has no result. */
static char *noid_error;

/* Offer every result line of fd to the ledger as file 0. */
static struct tally offer(int fd, const char *path)
{
	struct tally t = { 0 };
	for (size_t i = 0; i < led.n; i++) {
		led.req[i].file = -1;
		led.req[i].results = 0;
		led.req[i].attempt = 0;
		led.req[i].started = 0;
	}
	struct ledger_file f;
	ledger_file_init(&f, fd, RESULT_LINE_MAX);
	struct ledger_line ln;
	int r;
	while ((r = ledger_file_next(&f, &ln)) > 0) {
		if (!ln.text || ln.torn) {
			t.dropped++;
			continue;
		}
		jv res;
		enum rec_status st = rec_parse_line(ln.text, ln.len, ln.lineno, &res);
		if (st == REC_AGAIN)
			continue;
		const char *status = st == REC_OK ? rec_str(res, "status", NULL) : NULL;
		long idx;
		if (!status)
			t.dropped++;
		else if (status_find(status) == STATUS_cancelled)
			/* A job the last attempt's kill interrupted: not a result. */
			t.cancelled++;
		else if (status_find(status) == STATUS_internal_error) {
			/* The sandbox could not be set up (a node whose backend is
			 * down): a verdict on the machine, not on the code, so not
			 * final; another attempt, on another node, runs it again. */
			t.cancelled++;
			t.internal++;
		}
		else
			switch (ledger_offer(&led, res, 0, ln.off, ln.len, ln.lineno, &idx)) {
			case LEDGER_FIRST: t.first++; break;
			case LEDGER_NEWER:
			case LEDGER_OLDER: t.dup++; break;
			case LEDGER_NOID:
				t.noid++;
				if (!noid_error && rec_str(res, "error", NULL))
					noid_error = util_strdup(rec_str(res, "error", NULL));
				t.dropped++;
				break;
			default: t.dropped++;
			}
		jv_free(res);
	}
	if (r < 0)
		util_die(BATCH_FAILED, "reading %s: %s", path, strerror(errno));
	ledger_file_free(&f);
	return t;
}

static void copy_range(int from, off_t off, size_t len, int to, const char *what)
{
	char buf[65536];
	while (len > 0) {
		size_t want = len < sizeof buf ? len : sizeof buf;
		ssize_t n = pread(from, buf, want, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			util_die(BATCH_FAILED, "%s: %s", what, n < 0 ? strerror(errno) : "changed while being read");
		if (util_write_all(to, buf, (size_t)n) < 0)
			util_die(BATCH_FAILED, "%s: %s", what, strerror(errno));
		off += n;
		len -= (size_t)n;
	}
}

/* The winners of fd (file 0), in the shard's order, into a new file that
 * takes the name dst once it is on disk. */
static void write_winners(int fd, const char *dst)
{
	char *tmp = util_fmt("%s.tmp", dst);
	int out = open_or_die(tmp, O_WRONLY | O_CREAT | O_TRUNC);
	doomed = tmp;
	for (size_t i = 0; i < led.n; i++)
		if (led.req[i].file == 0) {
			copy_range(fd, led.req[i].off, led.req[i].len, out, tmp);
			if (util_write_all(out, "\n", 1) < 0)
				util_die(BATCH_FAILED, "%s: %s", tmp, strerror(errno));
		}
	if (fsync(out) < 0 || close(out) < 0 || rename(tmp, dst) < 0)
		util_die(BATCH_FAILED, "%s: %s", dst, strerror(errno));
	doomed = NULL;
	free(tmp);
}

static void sync_dir(const char *path)
{
	char *d = util_strdup(path);
	char *slash = strrchr(d, '/');
	int fd = open(slash ? (slash == d ? "/" : (*slash = '\0', d)) : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(d);
}

/* The attempt's number: one more than OUT.attempts says, written back. */
static long next_attempt(const char *path)
{
	long n = 0;
	int fd = open_existing(path);
	if (fd >= 0) {
		char buf[32];
		ssize_t r = util_read_full(fd, buf, sizeof buf - 1);
		close(fd);
		int64_t v;
		buf[r > 0 ? r : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (util_parse_i64(buf, 0, 1000000000, &v))
			n = (long)v;
	}
	char *tmp = util_fmt("%s.tmp", path);
	int out = open_or_die(tmp, O_WRONLY | O_CREAT | O_TRUNC);
	doomed = tmp;
	char num[32];
	int len = snprintf(num, sizeof num, "%ld\n", n + 1);
	if (util_write_all(out, num, (size_t)len) < 0 || close(out) < 0 || rename(tmp, path) < 0)
		util_die(BATCH_FAILED, "%s: %s", path, strerror(errno));
	doomed = NULL;
	free(tmp);
	return n + 1;
}

/* The requests without a result, each with its "shard" place, into path. */
static size_t write_pending(int shard_fd, const char *path)
{
	int out = open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC);
	char *buf = NULL;
	size_t cap = 0, n = 0;
	for (size_t i = 0; i < led.n; i++) {
		if (led.req[i].file >= 0)
			continue;
		if (req_len[i] + 1 > cap)
			buf = util_xrealloc(buf, cap = req_len[i] + 1);
		size_t got = 0;
		while (got < req_len[i]) {
			ssize_t r = pread(shard_fd, buf + got, req_len[i] - got, req_off[i] + (off_t)got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				util_die(BATCH_FAILED, "reading the shard: %s", r < 0 ? strerror(errno) : "it changed");
			got += (size_t)r;
		}
		jv req;
		if (rec_parse_line(buf, req_len[i], led.req[i].line, &req) != REC_OK)
			util_die(BATCH_FAILED, "the shard changed while it ran");
		jv where = jv_object();
		if (sh_known) {
			where = jv_object_set(where, jv_string("index"), jv_number(sh_index));
			where = jv_object_set(where, jv_string("of"), jv_number(sh_of));
		}
		where = jv_object_set(where, jv_string("attempt"), jv_number((double)attempt));
		where = jv_object_set(where, jv_string("host"), jv_string(host));
		req = jv_object_set(req, jv_string("shard"), where);
		/* A request without an id runs under the id the merge will look for. */
		if (!rec_has(req, REQ_KEY(id)))
			req = jv_object_set(req, jv_string(REQ_KEY(id)), shard_key_id(led.req[i].key));
		size_t len;
		char *text = rec_dump(req, &len);
		if (util_write_all(out, text, len) < 0)
			util_die(BATCH_FAILED, "%s: %s", path, strerror(errno));
		free(text);
		n++;
	}
	free(buf);
	if (close(out) < 0)
		util_die(BATCH_FAILED, "%s: %s", path, strerror(errno));
	return n;
}

static char *tool(const char *name)
{
	static char *dir;
	if (!dir)
		dir = util_exe_dir();
	return util_fmt("%s/%s", dir, name);
}

/* sbx-validate < pending | sbx-run | sbx-cap [| sbx-log] >> partial.
 * True when every stage ended as a stage that did its job does. */
static bool run_pipeline(const char *pending, const char *partial)
{
	char *argv[4][8];
	int n = 0;
	const char *names[] = { "sbx-validate", "sbx-run", "sbx-cap", "sbx-log" };
	int want = history ? 4 : 3;
	for (int s = 0; s < want; s++) {
		int a = 0;
		argv[s][a++] = tool(names[s]);
		if (conf_path) {
			argv[s][a++] = (char *)"-c";
			argv[s][a++] = (char *)conf_path;
		}
		if (s == 1 && jobs) {
			argv[s][a++] = (char *)"-j";
			argv[s][a++] = (char *)jobs;
		}
		/* a shard runs for hours: its progress in the task's log too,
		 * a line every few seconds where stderr is no terminal */
		if (s == 1)
			argv[s][a++] = (char *)"--progress";
		if (s == 3) {
			argv[s][a++] = (char *)"-d";
			argv[s][a++] = (char *)history;
		}
		argv[s][a] = NULL;
		n++;
	}
	int in = open_or_die(pending, O_RDONLY);
	int out = open_or_die(partial, O_WRONLY | O_APPEND);
	pid_t self = getpid();
	int prev = in;
	for (int s = 0; s < n; s++) {
		int p[2] = { -1, out };
		if (s < n - 1 && pipe2(p, O_CLOEXEC) < 0)
			util_die(BATCH_FAILED, "pipe: %s", strerror(errno));
		pid_t pid = fork();
		if (pid < 0)
			util_die(BATCH_FAILED, "fork: %s", strerror(errno));
		if (pid == 0) {
			/* The stage dies with us (Slurm's SIGKILL reaches them all, but
			 * a plain kill of sbx-batch must not leave sbx-run behind). */
			if (proc_child_prepare(self, SIGTERM) < 0 || dup2(prev, 0) < 0 || dup2(p[1], 1) < 0)
				_exit(127);
			execv(argv[s][0], argv[s]);
			fprintf(stderr, "sbx-batch: %s: %s\n", argv[s][0], strerror(errno));
			_exit(127);
		}
		stages[nstages++] = pid;
		close(prev);
		if (s < n - 1) {
			close(p[1]);
			prev = p[0];
		}
	}
	close(out);
	if (stopping)
		on_signal(stopping);
	bool ok = true;
	for (int s = 0; s < n; s++) {
		int st;
		while (waitpid(stages[s], &st, 0) < 0)
			if (errno != EINTR) {
				st = -1;
				break;
			}
		stages[s] = 0;
		const char *name = names[s];
		/* 0 and 1 (some records invalid) are a stage doing its job. */
		if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) <= 1)
			continue;
		ok = false;
		if (st != -1 && WIFSIGNALED(st))
			util_warn("%s was killed by signal %d", name, WTERMSIG(st));
		else if (st != -1)
			util_warn("%s exited with status %d", name, WEXITSTATUS(st));
	}
	nstages = 0;
	for (int s = 0; s < n; s++)
		free(argv[s][0]);
	return ok && !stopping;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* SHARD as a file that can be read twice: itself, or stdin copied. */
static int shard_file(const char *shard, const char *work)
{
	/* Close-on-exec like every fd of ours: the stages get only 0, 1, 2. */
	int fd = strcmp(shard, "-") ? open(shard, O_RDONLY | O_CLOEXEC | O_NOCTTY) : fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		util_usage_error(synopsis, "cannot read %s: %s", shard, strerror(errno));
	if (S_ISDIR(st.st_mode))
		util_usage_error(synopsis, "cannot read %s: a directory", shard);
	if (S_ISREG(st.st_mode))
		return fd;
	/* A name of its own: a second attempt, before it finds the lock
	 * taken, must not truncate this one's copy. */
	char *copy = util_fmt("%s.input.XXXXXX", work);
	int out = mkostemp(copy, O_CLOEXEC);
	if (out < 0)
		open_failed(copy);
	doomed = copy;
	char buf[65536];
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || util_write_all(out, buf, (size_t)r) < 0)
			util_die(BATCH_FAILED, "copying %s: %s", shard, strerror(errno));
	}
	close(fd);
	unlink(copy);
	doomed = NULL;
	free(copy);
	if (lseek(out, 0, SEEK_SET) < 0)
		util_die(BATCH_FAILED, "copying %s: %s", shard, strerror(errno));
	return out;
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	const char *shard_arg = NULL;
	static const struct option opts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "history", required_argument, NULL, 'H' },
		{ "shard", required_argument, NULL, 'S' },
		UTIL_COMMON_OPTIONS,
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:j:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf_path = optarg; break;
		case 'H': history = optarg; break;
		case 'S': shard_arg = optarg; break;
		case 'j': {
			int64_t v;
			if (!util_parse_i64(optarg, 1, 1024, &v))
				util_usage_error(synopsis, "-j: \"%s\" is not a number from 1 to 1024", optarg);
			jobs = optarg;
			break;
		}
		default: util_common_option(o, argv, opts, synopsis, help);
		}
	}
	/* The configuration first: a broken one is the error to report. */
	struct conf *c = conf_open(conf_path);
	size_t max_line = c->max_record_size;
	conf_free(c);
	if (argc - optind != 2)
		util_usage_error(synopsis, "expected SHARD and OUT");
	const char *shard = argv[optind], *out = argv[optind + 1];
	if (shard_arg) {
		char *slash = strchr(shard_arg, '/');
		int64_t i, k;
		char *a = util_strndup(shard_arg, slash ? (size_t)(slash - shard_arg) : strlen(shard_arg));
		bool ok = slash && util_parse_i64(a, 0, SHARD_MAX - 1, &i) && util_parse_i64(slash + 1, 1, SHARD_MAX, &k) &&
			  i < k;
		free(a);
		if (!ok)
			util_usage_error(synopsis, "--shard: \"%s\" is not I/K with 0 <= I < K <= %d", shard_arg, SHARD_MAX);
		sh_index = (unsigned)i;
		sh_of = (unsigned)k;
		sh_known = true;
	} else
		sh_known = shard_parse_name(shard, &sh_index, &sh_of);
	if (gethostname(host, sizeof host - 1) < 0)
		snprintf(host, sizeof host, "unknown");

	/* OUT "-": an attempt of its own in a private directory. */
	char *outp;
	atexit(remove_work);
	if (!strcmp(out, "-")) {
		const char *tmpdir = getenv("TMPDIR");
		char *dir = util_fmt("%s/sbx-batch.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
		if (!mkdtemp(dir))
			util_die(BATCH_FAILED, "%s: %s", dir, strerror(errno));
		workdir = dir;
		outp = util_fmt("%s/out.jsonl", workdir);
	} else
		outp = util_strdup(out);
	char *partial = util_fmt("%s.partial", outp), *attempts = util_fmt("%s.attempts", outp),
	     *pending = util_fmt("%s.pending", outp), *lockpath = util_fmt("%s.lock", outp);
	/* Every name this attempt writes, for the check against SHARD below and
	 * (OUT "-") for removing them whichever way it ends. */
	char *const ours[] = { outp, partial, attempts, pending, lockpath, util_fmt("%s.tmp", outp),
			       util_fmt("%s.tmp", partial), util_fmt("%s.tmp", attempts) };
	_Static_assert(sizeof ours == sizeof work_files, "work_files holds every name of ours");
	if (workdir)
		memcpy(work_files, ours, sizeof ours);

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	int shard_fd = shard_file(shard, outp);
	/* SHARD under one of these names would be truncated, replaced or
	 * removed (`sbx-batch x.partial x` lost its shard). */
	struct stat sst, ost;
	if (fstat(shard_fd, &sst) == 0)
		for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
			if (stat(ours[i], &ost) == 0 && ost.st_dev == sst.st_dev && ost.st_ino == sst.st_ino)
				util_usage_error(synopsis, "%s is %s, which sbx-batch writes: give OUT another name", shard,
						 ours[i]);
	ledger_init(&led, sh_known ? sh_of : 1);
	load_shard(shard_fd, shard, max_line);

	/* Held until exit.  Removed only once OUT is in place: an attempt that
	 * then locks a new file finds OUT complete and runs nothing. */
	int lock = open_or_die(lockpath, O_RDWR | O_CREAT);
	if (flock(lock, LOCK_EX | LOCK_NB) < 0)
		util_die(BATCH_FAILED, "%s: another attempt at this shard is running (%s is locked)", shard,
			 lockpath);
	int status = BATCH_FAILED;
	struct tally t;
	if (exists(outp)) {
		int fd = open_existing(outp);
		if (fd < 0)
			open_failed(outp);
		t = offer(fd, outp);
		close(fd);
		if (t.first != led.n || t.dup || t.dropped || t.cancelled)
			util_die(BATCH_BAD, "%s exists and is not the results of %s (%lu of %zu requests answered, %lu other lines): remove it to run the shard again",
				 outp, shard, t.first, led.n, t.dup + t.dropped + t.cancelled);
		util_warn("%s: %zu requests: complete already in %s", shard, led.n, outp);
		/* What an attempt killed between its rename and its clean-up left. */
		unlink(partial);
		unlink(attempts);
		unlink(pending);
		unlink(lockpath);
		status = BATCH_DONE;
		goto done;
	}
	attempt = next_attempt(attempts);
	int part = open_existing(partial);
	unsigned long kept = 0;
	if (part >= 0) {
		t = offer(part, partial);
		kept = t.first;
		/* Rewritten only when there is something to drop (a torn last
		 * line above all, which the next result would be glued to):
		 * else the copy costs a second partial's room and time for
		 * nothing. */
		if (t.dup || t.dropped || t.cancelled)
			write_winners(part, partial);
		close(part);
	} else if (errno == ENOENT) {
		int fd = open_or_die(partial, O_WRONLY | O_CREAT);
		close(fd);
	} else /* never truncate results that are there but could not be read */
		open_failed(partial);
	size_t todo = write_pending(shard_fd, pending);
	bool ran = todo == 0 || run_pipeline(pending, partial);
	part = open_or_die(partial, O_RDONLY);
	t = offer(part, partial);
	if (t.first == led.n) {
		write_winners(part, outp);
		sync_dir(outp);
		unlink(partial);
		unlink(attempts);
		unlink(pending);
		unlink(lockpath);
		status = BATCH_DONE;
		util_warn("%s: %zu requests: %lu from earlier attempts, %zu run in attempt %ld on %s; %s complete", shard,
			  led.n, kept, todo, attempt, host, strcmp(out, "-") ? out : "stdout");
	} else if (t.internal) {
		util_warn("%s: attempt %ld on %s: %lu requests ended internal_error (the sandbox could not be set up here; "
			  "see sbx-run --check): %lu of %zu have results, kept in %s; run the shard again, on a sound node",
			  shard, attempt, host, t.internal, t.first, led.n, partial);
	} else if (ran && !stopping) {
		/* Every stage did its job and results are still missing: they came
		 * back without an id to match (a line sbx-validate or sbx-run
		 * refused whole), and another attempt would do the same. */
		status = BATCH_BAD;
		util_warn("%s: attempt %ld ran to its end, but %zu of %zu requests have no result it can match (%lu result lines without a usable id%s%s): running it again will not help",
			  shard, attempt, led.n - t.first, led.n, t.noid, noid_error ? ", the first: " : "",
			  noid_error ? noid_error : "");
	} else {
		util_warn("%s: attempt %ld %s: %lu of %zu requests have results (kept in %s for the next attempt)", shard,
			  attempt, stopping ? "interrupted" : "failed", t.first, led.n, partial);
	}
	close(part);
done:
	if (status == BATCH_DONE && workdir) {
		int fd = open_or_die(outp, O_RDONLY);
		struct stat st;
		if (fstat(fd, &st) < 0)
			util_die(BATCH_FAILED, "%s: %s", outp, strerror(errno));
		/* A reader gone (a dropped ssh) is EPIPE and an exit that still
		 * removes the private directory, not a SIGPIPE death that keeps
		 * it; no stage runs any more to inherit the disposition. */
		signal(SIGPIPE, SIG_IGN);
		copy_range(fd, 0, (size_t)st.st_size, STDOUT_FILENO, "stdout");
		close(fd);
	}
	remove_work();
	free(workdir);
	workdir = NULL;
	close(lock);
	close(shard_fd);
	ledger_free(&led);
	free(req_off);
	free(req_len);
	for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
		free(ours[i]);
	free(noid_error);
	int cs = util_close_stdout();
	if (status == BATCH_DONE && cs != EXIT_OK)
		status = BATCH_FAILED;
	return status;
}
