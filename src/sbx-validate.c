/* sbx-validate: requests in, jobs out.
 *
 * Theory of operation: each input line is parsed into a record (lib/rec); a
 * record that already has a "status" passes through untouched; any other is
 * checked against the configuration and either completed into a job (every
 * limit resolved, the language's commands attached, an id generated when
 * missing) or turned into an `invalid` record saying what is wrong and what
 * is allowed.  Nothing is run and nothing is written but stdout.  One line
 * out per line in, in order, flushed as produced.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "conf.h"
#include "job.h"
#include "rec.h"
#include "util.h"

static const char synopsis[] =
	"usage: sbx-validate [-c FILE] [REQUESTS.jsonl...] > jobs.jsonl\n";

static void help(void)
{
	printf("%s\n"
	       "Check sandbox requests (JSON lines) and resolve them into jobs for sbx-run.\n"
	       "\n"
	       "  -c, --config FILE  configuration file (default: $SBX_CONF, then\n"
	       "                     ../etc/sandbox.conf next to the binary)\n"
	       "  -h, --help         show this help\n"
	       "      --version      show the version\n"
	       "\n"
	       "Exit status: 0 all requests valid, 1 some became invalid records,\n"
	       "2 usage or configuration error, 3 input/output error.\n",
	       synopsis);
}

struct validate {
	const struct conf *c;
	uint64_t total; /* requests in the input file; 0 for a pipe */
};

static jv validate_one(jv rec, enum rec_status st, unsigned long lineno, bool *bad, void *arg)
{
	const struct validate *v = arg;
	jv out;
	bool upstream = st == REC_OK && rec_has_status(rec);
	if (st == REC_INVALID || upstream) {
		/* Our own parse failures count; upstream verdicts pass through. */
		if (st == REC_INVALID)
			*bad = true;
		out = rec;
	} else {
		out = job_from_request(v->c, rec);
		if (rec_has_status(out))
			*bad = true;
	}
	/* The line of the file the user gave, for every tool after this
	 * one (sbx-run keeps it): a blank line before a request must not
	 * shift what its result says.  An upstream verdict passes through
	 * unchanged. */
	if (!upstream && jv_get_kind(out) == JV_KIND_OBJECT && !rec_has(out, "input_line")) {
		out = jv_object_set(out, jv_string("input_line"), jv_number((double)lineno));
		if (v->total)
			out = jv_object_set(out, jv_string("input_total"), jv_number((double)v->total));
	}
	return out;
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	const char *conf_path = NULL;
	static const struct option opts[] = {
		UTIL_COMMON_OPTIONS,
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf_path = optarg; break;
		default: util_common_option(o, argv, opts, synopsis, help);
		}
	}
	util_inputs(argc - optind, argv + optind, synopsis);

	struct conf *c = conf_open(conf_path);
	struct rec_reader r;
	rec_reader_init(&r, STDIN_FILENO, c->max_record_size);
	/* How many requests a file holds, for the progress of the tools
	 * after this one (a pipe's are not known ahead). */
	struct validate v = { c, util_count_requests(STDIN_FILENO) };
	int status = rec_filter(&r, validate_one, &v);
	rec_reader_free(&r);
	conf_free(c);
	int cs = util_close_stdout();
	return status == EXIT_OK ? cs : status;
}
