/* sbx-merge: the results of a sharded batch, one per request, in order.
 *
 * Theory of operation: engines that retry (Slurm requeues, parallel
 * --retries, a Kubernetes pod restarted) run some requests twice and lose
 * others; the merge is where that becomes exact.  The requests are read
 * first (their ids as sbx-shard gives them, lib/batch/shard.h), then every
 * line of every result file is offered to the ledger (lib/batch/ledger.h),
 * which keeps, per request, where its newest result is.  A second pass
 * copies those lines, byte for byte, to stdout in request order.
 *
 * Nothing is merged silently: a request id used twice, a line that is not
 * a request, a result line that is torn (the file ends inside it), not
 * JSON, not a result or without an id, a result whose id no request has
 * (another batch's file) or whose code or stdin is not its request's
 * (another batch reusing the ids) are each named on stderr with file and
 * line, and counted in the summary.  Missing results are named too, and
 * with -k K their shards come out as a list ready for sbatch --array=.
 *
 * Exit: 0 when every request has exactly one result and the requests were
 * sound; 1 otherwise (what could be merged is still written); 2 usage; 3 I/O.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "ledger.h"
#include "rec.h"
#include "shard.h"
#include "util.h"

static const char synopsis[] = "usage: sbx-merge [-k K] [-c FILE] REQUESTS.jsonl [RESULTS.jsonl...] > merged.jsonl\n";

static void help(void)
{
	printf("%s\n"
	       "Merge the result files of a sharded batch: one result per request, in the\n"
	       "requests' order; of several results for a request the newest wins (the\n"
	       "highest shard.attempt, then the latest started_at, then the last given).\n"
	       "\n"
	       "  -k, --shards K      the batch's shard count: name the shards to run again\n"
	       "                      (\"sbx-merge: rerun: 1,3\", for sbatch --array=)\n"
	       "  -q, --quiet         only the summary and the rerun list on stderr\n"
	       "  -c, --config FILE   configuration file (for max_record_size)\n"
	       "  -h, --help          show this help\n"
	       "      --version       show the version\n"
	       "\n"
	       "Exit status: 0 every request has its result, 1 some are missing or the\n"
	       "requests repeat an id (what there is is still written), 2 usage,\n"
	       "3 input/output error.\n",
	       synopsis);
}

/* Longest result line read: results carry their output (capped) and their
 * request (up to max_record_size), with room to spare. */
#define RESULT_LINE_MAX (256u << 20)
/* Lines named per kind of problem; the rest are counted. */
#define NAMED 10

static bool quiet;

enum kind { K_BAD_REQUEST, K_REPEATED, K_MALFORMED, K_UNKNOWN, K_FOREIGN, K_MISSING, K_KINDS };
static unsigned long counts[K_KINDS];

static void note(enum kind k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(enum kind k, const char *fmt, ...)
{
	if (++counts[k] > NAMED || quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) >= 0)
		util_warn("%s", msg);
	free(msg);
	va_end(ap);
}

/* The id of a key as JSON text, for messages (static buffer). */
static const char *id_text(const char *key)
{
	static char buf[160];
	jv t = jv_dump_string(shard_key_id(key), 0);
	snprintf(buf, sizeof buf, "%s", jv_string_value(t));
	jv_free(t);
	return buf;
}

static int open_input(const char *path, bool seekable)
{
	/* A result file that is a FIFO is refused below, not waited on for a
	 * writer that may never come (O_NONBLOCK; nothing for a regular file). */
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | (seekable ? O_NONBLOCK : 0);
	int fd = strcmp(path, "-") ? open(path, flags) : fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		util_usage_error(synopsis, "cannot read %s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		util_usage_error(synopsis, "cannot read %s: a directory", path);
	/* Results are read twice (checked, then copied): they must be files. */
	if (seekable && !S_ISREG(st.st_mode))
		util_usage_error(synopsis, "%s: results must be regular files (they are read twice)", path);
	return fd;
}

static void read_requests(struct ledger *l, const char *path, size_t max_line)
{
	int fd = open_input(path, false);
	struct ledger_file f;
	ledger_file_init(&f, fd, max_line);
	struct ledger_line ln;
	int r;
	while ((r = ledger_file_next(&f, &ln)) > 0) {
		if (!ln.text) {
			note(K_BAD_REQUEST, "%s:%lu: a line of %zu bytes exceeds the record limit of %zu", path,
			     ln.lineno, ln.len, max_line);
			continue;
		}
		jv req;
		enum rec_status st = rec_parse_line(ln.text, ln.len, ln.lineno, &req);
		if (st == REC_AGAIN)
			continue;
		if (st == REC_INVALID) {
			note(K_BAD_REQUEST, "%s: %s", path, rec_str(req, "error", NULL));
			jv_free(req);
			continue;
		}
		const char *why = NULL;
		char *key = ledger_request_key(l, req, ln.text, ln.len, &why);
		if (!key) {
			note(K_BAD_REQUEST, "%s:%lu: %s", path, ln.lineno, why);
			jv_free(req);
			continue;
		}
		long at = ledger_add(l, util_strdup(key), ln.lineno, req);
		if (at < 0)
			note(K_REPEATED, "%s:%lu: request id %s is already the id of line %lu", path, ln.lineno,
			     id_text(key), l->req[-1 - at].line);
		free(key);
		jv_free(req);
	}
	if (r < 0)
		util_die(EXIT_IO, "reading %s: %s", path, strerror(errno));
	ledger_file_free(&f);
	close(fd);
}

static unsigned long duplicates, not_final;

static void read_results(struct ledger *l, int file, int fd, const char *path)
{
	struct ledger_file f;
	ledger_file_init(&f, fd, RESULT_LINE_MAX);
	struct ledger_line ln;
	int r;
	while ((r = ledger_file_next(&f, &ln)) > 0) {
		if (ln.torn) {
			note(K_MALFORMED, "%s:%lu: torn line: the file ends inside it (a crash while writing?)", path,
			     ln.lineno);
			continue;
		}
		if (!ln.text) {
			note(K_MALFORMED, "%s:%lu: a line of %zu bytes is longer than any result", path, ln.lineno,
			     ln.len);
			continue;
		}
		jv res;
		enum rec_status st = rec_parse_line(ln.text, ln.len, ln.lineno, &res);
		if (st == REC_AGAIN) {
			continue;
		}
		if (st == REC_INVALID) {
			note(K_MALFORMED, "%s: %s", path, rec_str(res, "error", NULL));
			jv_free(res);
			continue;
		}
		if (!rec_str(res, "status", NULL)) {
			note(K_MALFORMED, "%s:%lu: not a result (no \"status\"): a request file given as results?", path,
			     ln.lineno);
			jv_free(res);
			continue;
		}
		long idx = -1;
		switch (ledger_offer(l, res, file, ln.off, ln.len, ln.lineno, &idx)) {
		case LEDGER_FIRST: break;
		case LEDGER_NEWER:
		case LEDGER_OLDER: duplicates++; break;
		case LEDGER_NOT_FINAL: not_final++; break;
		case LEDGER_NOID: note(K_MALFORMED, "%s:%lu: a result without a usable id", path, ln.lineno); break;
		case LEDGER_UNKNOWN: {
			bool bad = false;
			char *key = shard_key(res, &bad);
			note(K_UNKNOWN, "%s:%lu: id %s is no request's (a result of another batch?)", path, ln.lineno,
			     id_text(key));
			free(key);
			break;
		}
		case LEDGER_FOREIGN:
			note(K_FOREIGN, "%s:%lu: id %s has code or stdin other than its request's (line %lu): another batch's result?",
			     path, ln.lineno, id_text(l->req[idx].key), l->req[idx].line);
			break;
		}
		jv_free(res);
	}
	if (r < 0)
		util_die(EXIT_IO, "reading %s: %s", path, strerror(errno));
	ledger_file_free(&f);
}

/* The winners' lines, copied in request order. */
static int write_merged(const struct ledger *l, const int *fds, char *const *paths)
{
	char *buf = NULL;
	size_t cap = 0;
	int status = EXIT_OK;
	for (size_t i = 0; i < l->n && status == EXIT_OK; i++) {
		const struct ledger_req *q = &l->req[i];
		if (q->file < 0 || !q->final)
			continue;
		if (q->len + 1 > cap) {
			cap = q->len + 1;
			buf = util_xrealloc(buf, cap);
		}
		size_t got = 0;
		while (got < q->len) {
			ssize_t n = pread(fds[q->file], buf + got, q->len - got, q->off + (off_t)got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				util_warn("%s: %s", paths[q->file], n < 0 ? strerror(errno) : "changed while being merged");
				status = EXIT_IO;
				break;
			}
			got += (size_t)n;
		}
		buf[q->len] = '\n';
		if (status == EXIT_OK && fwrite(buf, 1, q->len + 1, stdout) != q->len + 1)
			status = EXIT_IO;
	}
	free(buf);
	return status;
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	const char *conf_path = NULL;
	unsigned k = 0;
	static const struct option opts[] = {
		{ "shards", required_argument, NULL, 'k' },
		{ "quiet", no_argument, NULL, 'q' },
		UTIL_COMMON_OPTIONS,
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:k:qh", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf_path = optarg; break;
		case 'q': quiet = true; break;
		case 'k': k = shard_count_arg(optarg, synopsis); break;
		default: util_common_option(o, argv, opts, synopsis, help);
		}
	}
	/* The configuration first: a broken one is the error to report. */
	struct conf *c = conf_open(conf_path);
	size_t max_line = c->max_record_size;
	conf_free(c);
	if (argc - optind < 1)
		util_usage_error(synopsis, "no requests");
	int nres = argc - optind - 1;
	char *const *paths = argv + optind + 1;
	int *fds = util_xalloc((size_t)(nres ? nres : 1) * sizeof *fds);
	for (int i = 0; i < nres; i++)
		fds[i] = open_input(paths[i], true);

	struct ledger l;
	ledger_init(&l, k);
	read_requests(&l, argv[optind], max_line);
	for (int i = 0; i < nres; i++)
		read_results(&l, i, fds[i], paths[i]);

	bool *rerun = k ? calloc(k, sizeof *rerun) : NULL;
	for (size_t i = 0; i < l.n; i++)
		if (l.req[i].file < 0 || !l.req[i].final) {
			/* Only cancelled or internal_error results: the run was cut
			 * short or its node could not make a sandbox; run it again. */
			const char *why = l.req[i].file < 0 ? "no result" : "only cancelled or internal_error results";
			if (rerun)
				rerun[l.req[i].shard] = true;
			if (k)
				note(K_MISSING, "request %s (line %lu, shard %u): %s", id_text(l.req[i].key), l.req[i].line,
				     l.req[i].shard, why);
			else
				note(K_MISSING, "request %s (line %lu): %s", id_text(l.req[i].key), l.req[i].line, why);
		}
	int status = write_merged(&l, fds, paths);

	static const char *const names[K_KINDS] = { "request lines not requests", "repeated request ids",
						    "malformed result lines", "unknown ids", "foreign results",
						    "missing" };
	for (int i = 0; i < K_KINDS; i++)
		if (counts[i] > NAMED && !quiet)
			util_warn("... %lu %s in all", counts[i], names[i]);
	util_warn("%zu requests: %zu merged, %lu missing; %lu duplicates dropped (older attempts); "
		  "%lu unknown, %lu foreign, %lu malformed result lines, %lu not final; %lu bad request lines, %lu repeated ids",
		  l.n, l.n - (size_t)counts[K_MISSING], counts[K_MISSING], duplicates, counts[K_UNKNOWN],
		  counts[K_FOREIGN], counts[K_MALFORMED], not_final, counts[K_BAD_REQUEST], counts[K_REPEATED]);
	if (rerun && counts[K_MISSING]) {
		size_t cap = (size_t)k * 6 + 1, len = 0;
		char *list = util_xalloc(cap);
		list[0] = '\0';
		for (unsigned i = 0; i < k; i++)
			if (rerun[i])
				len += (size_t)snprintf(list + len, cap - len, "%s%u", len ? "," : "", i);
		util_warn("rerun: %s", list);
		free(list);
	}
	free(rerun);
	for (int i = 0; i < nres; i++)
		close(fds[i]);
	free(fds);
	ledger_free(&l);
	if (status == EXIT_OK && (counts[K_MISSING] || counts[K_REPEATED] || counts[K_BAD_REQUEST]))
		status = EXIT_RECORDS;
	int cs = util_close_stdout();
	return status == EXIT_OK || status == EXIT_RECORDS ? (cs == EXIT_OK ? status : cs) : status;
}
