/* sbx-cap: cap the output fields of results.
 *
 * Theory of operation: for each record, "stdout" and "stderr" (and the
 * compiler's, under "compile") longer than the limit are cut to their head
 * and tail around a marker that says how many bytes were cut, never inside a
 * UTF-8 character; "*_truncated" is set, "*_bytes" (what the program really
 * wrote) is left alone.  The limit is -n, else the record's
 * limits.output_bytes, else the configuration's output_limit.  A judged
 * result's tests (each kept to 1 KiB by sbx-run) are capped the same way,
 * each test's streams and checker message at the limit.  Records
 * without such fields (invalid ones, say) pass through unchanged.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cap.h"
#include "conf.h"
#include "rec.h"
#include "req.h"
#include "util.h"

static const char synopsis[] =
	"usage: sbx-cap [-c FILE] [-n BYTES] [RESULTS.jsonl...] > capped.jsonl\n";

static void help(void)
{
	printf("%s\n"
	       "Cap stdout/stderr of sbx-run results, keeping head and tail.\n"
	       "\n"
	       "  -n, --bytes BYTES  limit per field (\"100k\", \"1m\", or a byte count);\n"
	       "                     default: the record's limits.output_bytes, then output_limit\n"
	       "  -c, --config FILE  configuration file\n"
	       "  -h, --help         show this help\n"
	       "      --version      show the version\n"
	       "\n"
	       "Exit status: 0 ok, 1 some input lines were not records, 2 usage or\n"
	       "configuration error, 3 input/output error.\n",
	       synopsis);
}

/* Cap obj[field] in place (obj consumed and returned). */
static jv cap_field(jv obj, const char *field, size_t limit)
{
	size_t n;
	const char *s = rec_str(obj, field, &n);
	if (!s || n <= limit)
		return obj;
	char bytes_key[64], trunc_key[64];
	snprintf(bytes_key, sizeof bytes_key, "%s_bytes", field);
	snprintf(trunc_key, sizeof trunc_key, "%s_truncated", field);
	double reported = 0;
	if (!rec_num(obj, bytes_key, &reported) || reported < 0 || reported > 1e18)
		reported = 0;
	bool truncated;
	jv capped = cap_string(s, n, limit, (uint64_t)reported, &truncated);
	obj = jv_object_set(obj, jv_string(field), capped);
	return jv_object_set(obj, jv_string(trunc_key), jv_true());
}

static jv cap_record(jv rec, size_t forced, size_t fallback)
{
	size_t limit = fallback;
	if (forced != (size_t)-1)
		limit = forced;
	else {
		jv lim = rec_get(rec, REQ_KEY(limits));
		double d;
		if (jv_get_kind(lim) == JV_KIND_OBJECT && rec_num(lim, "output_bytes", &d) && d >= 0 && d <= 1e12)
			limit = (size_t)d;
		jv_free(lim);
	}
	rec = cap_field(rec, "stdout", limit);
	rec = cap_field(rec, "stderr", limit);
	jv comp = rec_get(rec, "compile");
	if (jv_get_kind(comp) == JV_KIND_OBJECT) {
		comp = cap_field(comp, "stdout", limit);
		comp = cap_field(comp, "stderr", limit);
		rec = jv_object_set(rec, jv_string("compile"), comp);
	} else
		jv_free(comp);
	jv tests = rec_get(rec, "tests"); /* check-names: the result's tests */
	if (jv_get_kind(tests) == JV_KIND_ARRAY && rec_has(rec, "verdict")) {
		jv out = jv_array();
		jv_array_foreach(tests, i, t)
		{
			static const char *const fields[] = { "stdout", "stderr", "checker_message" };
			for (size_t f = 0; f < sizeof fields / sizeof fields[0] && jv_get_kind(t) == JV_KIND_OBJECT; f++)
				t = cap_field(t, fields[f], limit);
			out = jv_array_append(out, t);
		}
		rec = jv_object_set(rec, jv_string("tests"), out); /* check-names: the result's tests */
	}
	jv_free(tests);
	return rec;
}

struct cap_args {
	size_t forced, fallback;
};

/* Records are capped; an invalid line's record passes, and counts. */
static jv cap_one(jv rec, enum rec_status st, unsigned long lineno, bool *bad, void *arg)
{
	const struct cap_args *a = arg;
	if (st == REC_INVALID) {
		*bad = true;
		return rec;
	}
	return cap_record(rec, a->forced, a->fallback);
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	const char *conf_path = NULL;
	size_t forced = (size_t)-1;
	static const struct option opts[] = {
		{ "bytes", required_argument, NULL, 'n' },
		UTIL_COMMON_OPTIONS,
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:n:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf_path = optarg; break;
		case 'n': {
			uint64_t b;
			if (!util_parse_size(optarg, &b) || b > (1u << 30))
				util_usage_error(synopsis, "-n: \"%s\" is not a size from 0 to 1g (\"100k\", \"1m\", bytes)", optarg);
			forced = (size_t)b;
			break;
		}
		default: util_common_option(o, argv, opts, synopsis, help);
		}
	}
	util_inputs(argc - optind, argv + optind, synopsis);

	struct conf *c = conf_open(conf_path);
	struct rec_reader r;
	rec_reader_init(&r, STDIN_FILENO, c->max_record_size);
	struct cap_args a = { forced, c->lim.run.output };
	int status = rec_filter(&r, cap_one, &a);
	rec_reader_free(&r);
	conf_free(c);
	int cs = util_close_stdout();
	return status == EXIT_OK ? cs : status;
}
