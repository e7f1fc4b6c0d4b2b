/* sbx-shard: split a batch of requests K ways for a cluster's tasks.
 *
 * Theory of operation: each request goes to DIR/shard-I-of-K.jsonl where I
 * is shard_of(its id) (lib/batch/shard.h: a hash, so that no shard gathers
 * the slow requests and the same id lands in the same shard on every run).
 * A request with an id is copied byte for byte; one without gets the
 * generated id (the same for the same input, every time) and is written
 * again with it.  The whole batch is checked before any shard appears:
 * a line that is not a JSON object, an id of the wrong kind or an id used
 * twice is named on stderr and nothing is written (exit 1), since a batch
 * with two requests under one id cannot be merged exactly.  The shards are
 * written beside their final names, flushed to disk and renamed, so a shard
 * is either the whole new one or absent; every one of the K is written,
 * empty or not, so each array task has its file.  On stdout, one line per
 * shard: {"shard", "of", "path", "requests"}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "ledger.h"
#include "rec.h"
#include "req.h"
#include "shard.h"
#include "util.h"

static const char synopsis[] = "usage: sbx-shard -k K -o DIR [-c FILE] [REQUESTS.jsonl...]\n";

static void help(void)
{
	printf("%s\n"
	       "Split requests into DIR/shard-I-of-K.jsonl (I = 0..K-1) by a stable hash of\n"
	       "their id; a request without an id gets a generated one (the same every time).\n"
	       "\n"
	       "  -k, --shards K      how many shards (1 to %d)\n"
	       "  -o, --output DIR    where the shards go (made if missing)\n"
	       "  -c, --config FILE   configuration file (for max_record_size)\n"
	       "  -h, --help          show this help\n"
	       "      --version       show the version\n"
	       "\n"
	       "Exit status: 0 written, 1 some lines were not requests or repeated an id\n"
	       "(named on stderr; nothing written), 2 usage, 3 input/output error.\n",
	       synopsis, SHARD_MAX);
}

struct out {
	char *path, *tmp;
	FILE *f;
	unsigned long n;
};

/* Problems are named, the first few in full: a million bad lines must not
 * make a million lines of stderr. */
static unsigned long problems;
static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
	if (++problems <= 20) {
		va_list ap;
		va_start(ap, fmt);
		char *msg = NULL;
		if (vasprintf(&msg, fmt, ap) >= 0)
			util_warn("%s", msg);
		free(msg);
		va_end(ap);
	}
}

static void unwind(struct out *o, unsigned k)
{
	for (unsigned i = 0; i < k; i++) {
		if (o[i].f)
			fclose(o[i].f);
		if (o[i].tmp)
			unlink(o[i].tmp);
		free(o[i].path);
		free(o[i].tmp);
	}
	free(o);
}

/* One file per shard is open at once: make room for K of them. */
static void want_fds(unsigned k)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	rlim_t need = (rlim_t)k + 32;
	if (rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < need)
		util_die(EXIT_USAGE, "-k %u needs %llu open files; the limit is %llu (ulimit -n)", k,
			 (unsigned long long)need, (unsigned long long)rl.rlim_cur);
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	const char *conf_path = NULL, *dir = NULL;
	unsigned k = 0;
	static const struct option opts[] = {
		{ "shards", required_argument, NULL, 'k' },
		{ "output", required_argument, NULL, 'o' },
		UTIL_COMMON_OPTIONS,
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:k:o:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf_path = optarg; break;
		case 'o': dir = optarg; break;
		case 'k': k = shard_count_arg(optarg, synopsis); break;
		default: util_common_option(o, argv, opts, synopsis, help);
		}
	}
	/* The configuration first: a broken one is the error to report. */
	struct conf *c = conf_open(conf_path);
	size_t max_line = c->max_record_size;
	conf_free(c);
	if (!k)
		util_usage_error(synopsis, "-k is required");
	if (!dir || !*dir)
		util_usage_error(synopsis, "-o is required");
	util_inputs(argc - optind, argv + optind, synopsis);

	if (util_mkdir_p(dir, 0755) < 0)
		util_die(EXIT_IO, "%s: %s", dir, strerror(errno));
	want_fds(k);
	struct out *out = calloc(k, sizeof *out);
	if (!out)
		util_die(EXIT_IO, "out of memory");
	for (unsigned i = 0; i < k; i++) {
		out[i].path = util_fmt("%s/shard-%u-of-%u.jsonl", dir, i, k);
		out[i].tmp = util_fmt("%s/.shard-%u-of-%u.jsonl.XXXXXX", dir, i, k);
		int fd = mkostemp(out[i].tmp, O_CLOEXEC);
		if (fd < 0 || !(out[i].f = fdopen(fd, "w"))) {
			util_warn("%s: %s", out[i].tmp, strerror(errno));
			if (fd >= 0)
				close(fd);
			else {
				free(out[i].tmp);
				out[i].tmp = NULL;
			}
			unwind(out, k);
			return EXIT_IO;
		}
	}

	struct ledger seen;
	ledger_init(&seen, k);
	struct ledger_file in;
	ledger_file_init(&in, STDIN_FILENO, max_line);
	struct ledger_line ln;
	int r, status = EXIT_OK;
	while ((r = ledger_file_next(&in, &ln)) > 0) {
		if (!ln.text) {
			problem("line %lu: a line of %zu bytes exceeds the record limit of %zu", ln.lineno, ln.len,
				max_line);
			continue;
		}
		jv req;
		enum rec_status st = rec_parse_line(ln.text, ln.len, ln.lineno, &req);
		if (st == REC_AGAIN)
			continue;
		if (st == REC_INVALID) {
			problem("%s", rec_str(req, "error", NULL));
			jv_free(req);
			continue;
		}
		const char *why = NULL;
		bool own = rec_has(req, REQ_KEY(id));
		char *key = ledger_request_key(&seen, req, ln.text, ln.len, &why);
		if (!key) {
			problem("line %lu: %s", ln.lineno, why);
			jv_free(req);
			continue;
		}
		unsigned shard = shard_of(key, k);
		jv id = shard_key_id(key);
		long at = ledger_add(&seen, key, ln.lineno, req);
		if (at < 0) {
			jv text = jv_dump_string(id, 0);
			problem("line %lu: id %s is already the id of line %lu", ln.lineno, jv_string_value(text),
				seen.req[-1 - at].line);
			jv_free(text);
			jv_free(req);
			continue;
		}
		char *text = NULL;
		size_t n = 0;
		if (!own) {
			text = rec_dump(jv_object_set(req, jv_string(REQ_KEY(id)), id), &n);
			/* The id makes the line longer: past the limit, sbx-batch and
			 * sbx-validate would refuse the shard's line. */
			if (n - 1 > max_line)
				problem("line %lu: with its generated id the request is %zu bytes, over the record limit of %zu (give it a short \"%s\")",
					ln.lineno, n - 1, max_line, REQ_KEY(id));
		} else {
			jv_free(id);
			jv_free(req);
		}
		if (problems) { /* nothing is written now: only the checking goes on */
			free(text);
			continue;
		}
		bool ok;
		if (own)
			ok = fwrite(ln.text, 1, ln.len, out[shard].f) == ln.len && putc('\n', out[shard].f) != EOF;
		else
			ok = fwrite(text, 1, n, out[shard].f) == n;
		free(text);
		if (!ok) {
			util_warn("%s: %s", out[shard].tmp, strerror(errno));
			status = EXIT_IO;
			break;
		}
		out[shard].n++;
	}
	if (r < 0) {
		util_warn("reading requests: %s", strerror(errno));
		status = EXIT_IO;
	}
	ledger_file_free(&in);
	ledger_free(&seen);
	if (problems > 20)
		util_warn("... %lu problems in all", problems);
	if (problems && status == EXIT_OK) {
		util_warn("no shard written: fix the lines above");
		status = EXIT_RECORDS;
	}
	/* Every shard on disk before any takes its name. */
	for (unsigned i = 0; i < k && status == EXIT_OK; i++) {
		FILE *f = out[i].f;
		out[i].f = NULL;
		if (fflush(f) != 0 || fsync(fileno(f)) < 0 || fclose(f) != 0) {
			util_warn("%s: %s", out[i].tmp, strerror(errno));
			status = EXIT_IO;
		}
	}
	for (unsigned i = 0; i < k && status == EXIT_OK; i++) {
		if (rename(out[i].tmp, out[i].path) < 0) {
			util_warn("%s: %s", out[i].path, strerror(errno));
			status = EXIT_IO;
			break;
		}
		free(out[i].tmp);
		out[i].tmp = NULL;
	}
	/* Only once all are renamed: a stdout gone bad must not stop the
	 * renames half way, leaving new shards beside an older split's. */
	bool named = status == EXIT_OK;
	for (unsigned i = 0; i < k && named; i++) {
		jv line = jv_object();
		line = jv_object_set(line, jv_string("shard"), jv_number(i));
		line = jv_object_set(line, jv_string("of"), jv_number(k));
		line = jv_object_set(line, jv_string("path"), jv_string(out[i].path));
		line = jv_object_set(line, jv_string("requests"), jv_number((double)out[i].n));
		if (!rec_write(line)) {
			status = EXIT_IO;
			break;
		}
	}
	if (named) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	unwind(out, k);
	int cs = util_close_stdout();
	return status == EXIT_OK ? cs : status;
}
