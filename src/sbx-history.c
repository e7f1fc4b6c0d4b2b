/* sbx-history: query the execution history, for people, pipes and cron.
 *
 * Theory of operation: one read-only connection to the history database
 * (sbx-log writes it in WAL mode, so reading never blocks a writer); the
 * filters become a WHERE clause whose values are all bound parameters; rows
 * come newest first, are optionally passed through a jq filter compiled
 * once, and are printed as JSON lines, CSV or an aligned table.  --stats
 * reads one covering index in (language, status, duration) order and
 * computes counts and nearest-rank percentiles in one pass.  --prune,
 * --vacuum and --merge are the only writes; --merge reads each source
 * read-only and copies its rows in one transaction per source, so a bad
 * source costs only itself.
 *
 * The exit status is made for cron: 0 when something was printed, 1 when
 * nothing matched (or there is no history yet), 2 on errors; so
 * `sbx-history --status internal_error --since 1h && alert` alerts exactly
 * when there were internal errors in the last hour.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jq.h>

#include "conf.h"
#include "hist.h"
#include "page.h"
#include "rec.h"
#include "state.h"
#include "status.h"
#include "utf8.h"
#include "util.h"

enum history_exit { HX_ROWS = 0, HX_NONE = 1, HX_ERROR = 2 };

static const char synopsis[] =
	"usage: sbx-history [-c FILE] [-d DB | --server] [FILTERS] [--stats[=verdict] [--by hour|day]] [--jq FILTER]\n"
	"                   [--format json|table|csv|html] [--record]\n"
	"       sbx-history [-c FILE] [-d DB | --server] --events [--since T] [--until T] [--session S]\n"
	"                   [--principal P] [-n N] [--jq FILTER] [--format json|table|csv]\n"
	"       sbx-history [-c FILE] [-d DB] --prune --older-than T [--force] [--vacuum] [-v]\n"
	"       sbx-history [-c FILE] [-d DB] --merge SRC...\n";

static void help(void)
{
	printf("%s\n"
	       "Query the execution history that sbx-log writes.\n"
	       "\n"
	       "Filters:\n"
	       "      --since T       runs at or after T: a date or time in ISO 8601, UTC unless\n"
	       "                      it says (2026-11-29, 2026-11-29T10:00Z), today, yesterday\n"
	       "                      (midnight UTC), or a time ago with its unit (90s, 30m, 1h,\n"
	       "                      7d, 2w); a bare number is refused\n"
	       "      --until T       runs before T (same forms)\n"
	       "      --language L    a language (or one of its aliases)\n"
	       "      --status S      one of: %s\n"
	       "      --verdict V     judged runs (\"tests\") whose verdict is one of: %s\n"
	       "      --id ID         the record's id\n"
	       "      --session S     a session's id\n"
	       "      --principal P   the runs of one sbx-mcp HTTP token (P: its digest)\n"
	       "      --egress-refused  runs with a connection their proxy refused or could\n"
	       "                      not make (their egress)\n"
	       "                      (--language, --status and --verdict may be repeated, or\n"
	       "                      given a comma-separated list: runs with any of them)\n"
	       "  -n, --limit N       at most N rows, newest first (default 20; 0: all)\n"
	       "\n"
	       "Output:\n"
	       "      --stats         per language and status: count, success rate, p50/p95/max\n"
	       "                      duration (ms), then per language (status \"all\": every\n"
	       "                      run; the durations of the programs that ran)\n"
	       "      --stats=verdict the same of judged runs, per language and verdict\n"
	       "      --by hour|day   with --stats: one series per hour or day (UTC)\n"
	       "      --jq FILTER     apply a jq filter to each row (or stats row)\n"
	       "  -f, --format F      json (default: one object per line), table, csv, or html\n"
	       "                      (the overview of the filtered runs, one self-contained page)\n"
	       "      --record        add the stored result record (and code, if kept)\n"
	       "      --events        sessions' checkpoint events instead of runs: each\n"
	       "                      checkpoint taken, restore, fork and delete (sbx-mcp's\n"
	       "                      checkpoint tools); a run's row names in \"checkpoint\" the\n"
	       "                      one its session's files came from\n"
	       "\n"
	       "Retention:\n"
	       "      --prune         delete runs older than --older-than T (30d, 2026-11-01: the\n"
	       "                      forms of --since); one that would delete every run is\n"
	       "                      refused unless --force is given\n"
	       "      --vacuum        give the freed space back to the file system\n"
	       "  -v, --verbose       say how many runs were pruned (else silent, for cron)\n"
	       "\n"
	       "Merging:\n"
	       "      --merge SRC...  add the runs of other history files (a sharded batch's)\n"
	       "                      to this one, made if missing; one JSON line per source:\n"
	       "                      {\"merged\": SRC, \"rows\": N, \"added\": N}.  Merging again,\n"
	       "                      or back, adds nothing.  Sources are only read; one older\n"
	       "                      than schema 5 must be upgraded first (sbx-log -d SRC\n"
	       "                      < /dev/null).  A bad source is skipped, the others are\n"
	       "                      merged, and the exit status is 2\n"
	       "\n"
	       "  -d, --database DB   the SQLite file (default: $SBX_HISTORY, then the\n"
	       "                      configuration's history)\n"
	       "      --server        the packaged MCP server's history (sbx-mcp.service's)\n"
	       "  -c, --config FILE   configuration file\n"
	       "  -h, --help          show this help\n"
	       "      --version       show the version\n"
	       "\n"
	       "Exit status: 0 rows were printed (or the retention or merge work was done),\n"
	       "1 no row matched (or there is no history file yet), 2 usage, configuration\n"
	       "or database error (or a source that could not be merged).\n",
	       synopsis, status_list(), status_verdict_list());
}

enum format { F_JSON, F_TABLE, F_CSV, F_HTML };

struct out {
	enum format fmt;
	jq_state *jq;
	bool table_stats;
	int64_t printed;
	bool failed;           /* stdout or jq failed */
	jv header;             /* csv/table: column names (array), from the first row */
	jv table;              /* table: buffered rows (arrays of cells) */
	int64_t rowno;
};

/* The columns a person wants in a table of runs; csv and json get all. */
static const char *const table_run_cols[] = {
	"history_id", "timestamp", "id", "language", "status", "verdict", "exit_code", "signal", "duration_ms",
	"memory_peak_bytes", "code_snippet", NULL,
};

/* Control characters made visible (consumes s): a terminal must never get
 * one from a snippet (ESC and BEL retitle or reprogram it, and C1's CSI is
 * ESC [ to some), nor a person text that reads other than it runs (bidi
 * controls, line separators: utf8_deceptive), in a table or in a
 * spreadsheet.  In a table every one, newlines and tabs as spaces; in CSV
 * all but tab, CR and LF, which its quoting carries. */
static char *visible(char *s, bool table)
{
	size_t n = 0, len = strlen(s), k;
	unsigned cp;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += *p < 0x20 || *p == 0x7f ? 4 : p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f ? 5 : 0;
	for (size_t i = 0; i < len; i++)
		n += utf8_deceptive((const unsigned char *)s + i, len - i, &cp) ? 6 : 0;
	if (!n && !table)
		return s;
	char *out = util_xalloc(len + n + 1), *o = out;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\n' || *p == '\t' || *p == '\r')
			*o++ = table ? ' ' : (char)*p;
		else if (*p < 0x20 || *p == 0x7f)
			o += sprintf(o, "\\x%02x", *p);
		else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			o += sprintf(o, "\\u%04x", *++p);
		else if ((k = utf8_deceptive(p, len - (size_t)(p - (const unsigned char *)s), &cp))) {
			o += sprintf(o, "\\u%04x", cp);
			p += k - 1;
		} else
			*o++ = (char)*p;
	}
	*o = 0;
	free(s);
	return out;
}

/* A number as plain decimals, never an exponent (a spreadsheet or a person
 * reads 12345.5, not 1.235e+04): the fewest decimals, up to max, that give
 * it back exactly. */
static char *plain(double d, int max)
{
	char buf[400];
	for (int p = 0;; p++) {
		snprintf(buf, sizeof buf, "%.*f", p, d);
		if (p == max || strtod(buf, NULL) == d)
			return util_strdup(buf);
	}
}

static char *cell_text(jv v, size_t max_chars, bool table)
{
	char *s;
	switch (jv_get_kind(v)) {
	case JV_KIND_NULL: s = util_strdup(""); break;
	case JV_KIND_STRING: s = util_strdup(jv_string_value(v)); break;
	case JV_KIND_NUMBER: s = plain(jv_number_value(v), table ? 4 : 17); break;
	default: {
		jv t = jv_dump_string(jv_copy(v), 0);
		s = util_strdup(jv_string_value(t));
		jv_free(t);
	}
	}
	jv_free(v);
	s = visible(s, table);
	if (max_chars) {
		/* One line per row (visible() made it so), long text cut on a
		 * character boundary. */
		size_t chars = 0;
		for (size_t i = 0; s[i]; i++)
			if (((unsigned char)s[i] & 0xc0) != 0x80 && ++chars > max_chars) {
				s[i] = 0;
				char *t = util_fmt("%s…", s);
				free(s);
				s = t;
				break;
			}
	}
	return s;
}

/* RFC 4180: a field with a comma, quote, CR or LF is quoted, its quotes
 * doubled. */
static void csv_field(const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

/* One output value (consumed): a row, a stats row, or whatever --jq made. */
static void emit(struct out *o, jv v)
{
	o->printed++;
	if (o->fmt == F_JSON) {
		if (!rec_write(v))
			o->failed = true;
		return;
	}
	if (jv_get_kind(v) != JV_KIND_OBJECT)
		v = jv_object_set(jv_object(), jv_string("value"), v);
	if (!jv_is_valid(o->header)) {
		jv h = jv_array();
		if (o->fmt == F_TABLE && !o->table_stats && !o->jq) {
			for (int i = 0; table_run_cols[i]; i++)
				h = jv_array_append(h, jv_string(table_run_cols[i]));
		} else
			jv_object_keys_foreach(v, k) h = jv_array_append(h, k);
		o->header = h;
		if (o->fmt == F_CSV) {
			/* keys too may come from the data (through --jq) */
			jv_array_foreach(o->header, i, k) {
				if (i)
					putchar(',');
				char *t = cell_text(k, 0, false);
				csv_field(t);
				free(t);
			}
			putchar('\n');
		}
	}
	jv cells = jv_array();
	jv_array_foreach(o->header, i, k) {
		jv cell = jv_object_has(jv_copy(v), jv_copy(k)) ? jv_object_get(jv_copy(v), jv_copy(k)) : jv_null();
		const char *name = jv_string_value(k);
		/* check-names: the history's column */
		size_t max = o->fmt == F_TABLE ? (!strcmp(name, "code_snippet") || !strcmp(name, "error") ? 40 : 80) : 0;
		char *t = cell_text(cell, max, o->fmt == F_TABLE);
		cells = jv_array_append(cells, jv_string(t));
		free(t);
		jv_free(k);
	}
	jv_free(v);
	if (o->fmt == F_CSV) {
		jv_array_foreach(cells, i, c) {
			if (i)
				putchar(',');
			csv_field(jv_string_value(c));
			jv_free(c);
		}
		putchar('\n');
		jv_free(cells);
		if (ferror(stdout))
			o->failed = true;
	} else
		o->table = jv_array_append(o->table, cells);
}

static size_t display_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void print_table(struct out *o)
{
	if (!jv_is_valid(o->header))
		return;
	int ncol = jv_array_length(jv_copy(o->header));
	size_t *width = calloc((size_t)ncol, sizeof *width);
	jv names = jv_array();
	jv_array_foreach(o->header, i, k) {
		char *t = cell_text(k, 0, true);
		names = jv_array_append(names, jv_string(t));
		free(t);
	}
	jv all = jv_array_concat(jv_array_append(jv_array(), names), jv_copy(o->table));
	jv_array_foreach(all, r, row) {
		jv_array_foreach(row, i, c) {
			size_t w = display_width(jv_string_value(c));
			if (w > width[i])
				width[i] = w;
			jv_free(c);
		}
		jv_free(row);
	}
	jv_array_foreach(all, r, row) {
		jv_array_foreach(row, i, c) {
			const char *s = jv_string_value(c);
			bool last = i == ncol - 1;
			printf("%s%*s", s, last ? 0 : (int)(width[i] - display_width(s) + 2), "");
			jv_free(c);
		}
		putchar('\n');
		jv_free(row);
	}
	jv_free(all);
	free(width);
	if (ferror(stdout))
		o->failed = true;
}

static bool on_row(jv row, void *arg)
{
	struct out *o = arg;
	o->rowno++;
	if (!o->jq) {
		emit(o, row);
		return !o->failed;
	}
	jq_start(o->jq, row, 0);
	jv r;
	while (jv_is_valid(r = jq_next(o->jq)))
		emit(o, r);
	if (jv_invalid_has_msg(jv_copy(r))) {
		jv msg = jv_invalid_get_msg(r);
		const char *m = jv_get_kind(msg) == JV_KIND_STRING ? jv_string_value(msg) : "error";
		util_warn("--jq: row %lld: %s", (long long)o->rowno, m);
		jv_free(msg);
		o->failed = true;
		return false;
	}
	jv_free(r);
	return !o->failed;
}

static void jq_error(void *data, jv msg)
{
	(void)data;
	const char *m = jv_get_kind(msg) == JV_KIND_STRING ? jv_string_value(msg) : "error";
	util_warn("--jq: %s", m);
	jv_free(msg);
}

/* A time where one is asked (--since, --until, --older-than): ISO 8601 (a
 * date alone is its midnight, UTC), "today" or "yesterday" (midnight UTC),
 * or a time ago, with its unit.  A bare number is refused: "30" is meant
 * as days as often as seconds, and a prune must not guess. */
static double parse_time(const char *opt, const char *s)
{
	double ms;
	uint64_t ago;
	size_t n = strlen(s);
	if (util_parse_iso8601(s, &ms))
		return ms / 1000.0;
	if (!strcmp(s, "today") || !strcmp(s, "yesterday"))
		return floor(util_epoch_ms() / 86400e3) * 86400 - (*s == 'y' ? 86400 : 0);
	if (n && isalpha((unsigned char)s[n - 1]) && util_parse_duration(s, &ago))
		return (util_epoch_ms() - (double)ago) / 1000.0;
	if (n && isdigit((unsigned char)s[n - 1]) && util_parse_duration(s, &ago))
		util_usage_error(synopsis, "%s: \"%s\" needs a unit: %sd (days), %sh, %sm or %ss", opt, s, s, s, s, s);
	util_usage_error(synopsis,
			 "%s: \"%s\" is neither a date (2026-11-29, 2026-11-29T10:00Z, today, yesterday) nor a time ago "
			 "(90s, 30m, 12h, 7d, 2w)",
			 opt, s);
}

/* --status, --language, --verdict given again, or as a comma-separated
 * list: all of them, as hist_filter takes them ("a,b").  list is freed,
 * the result is the caller's. */
static char *add_to_list(char *list, const char *opt, const char *arg)
{
	char *copy = util_strdup(arg), *save = NULL;
	for (char *v = strtok_r(copy, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
		char *next = list ? util_fmt("%s,%s", list, v) : util_strdup(v);
		free(list);
		list = next;
	}
	free(copy);
	if (!list)
		util_usage_error(synopsis, "%s: \"%s\" names nothing", opt, arg);
	return list;
}

struct opts {
	const char *conf_path, *db, *jq_filter, *by;
	bool stats, prune, vacuum, with_record, retention, merge, force, verbose, server, events;
	char **sources;        /* --merge: the positional arguments */
	int nsources;
	double older;          /* --older-than: Unix seconds */
	char *languages, *statuses, *verdicts; /* the filter's lists */
	struct hist_filter f;
	enum format fmt;
};

static void options(int argc, char **argv, struct opts *o)
{
	const char *since = NULL, *until = NULL, *older = NULL;
	struct hist_filter *f = &o->f;
	hist_filter_init(f);
	f->limit = 20;
	o->fmt = F_JSON;
	enum { O_SINCE = 256, O_UNTIL, O_LANG, O_STATUS, O_ID, O_SESSION, O_PRINCIPAL, O_VERDICT, O_EGRESS, O_STATS, O_BY, O_JQ, O_RECORD, O_PRUNE,
	       O_OLDER, O_FORCE, O_VACUUM, O_MERGE, O_SERVER, O_EVENTS };
	static const struct option opts[] = {
		{ "since", required_argument, NULL, O_SINCE },
		{ "until", required_argument, NULL, O_UNTIL },
		{ "language", required_argument, NULL, O_LANG },
		{ "status", required_argument, NULL, O_STATUS },
		{ "id", required_argument, NULL, O_ID },
		{ "session", required_argument, NULL, O_SESSION },
		{ "principal", required_argument, NULL, O_PRINCIPAL },
		{ "verdict", required_argument, NULL, O_VERDICT },
		{ "egress-refused", no_argument, NULL, O_EGRESS },
		{ "limit", required_argument, NULL, 'n' },
		{ "stats", optional_argument, NULL, O_STATS },
		{ "by", required_argument, NULL, O_BY },
		{ "jq", required_argument, NULL, O_JQ },
		{ "format", required_argument, NULL, 'f' },
		{ "record", no_argument, NULL, O_RECORD },
		{ "prune", no_argument, NULL, O_PRUNE },
		{ "older-than", required_argument, NULL, O_OLDER },
		{ "force", no_argument, NULL, O_FORCE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "vacuum", no_argument, NULL, O_VACUUM },
		{ "merge", no_argument, NULL, O_MERGE },
		{ "database", required_argument, NULL, 'd' },
		{ "server", no_argument, NULL, O_SERVER },
		{ "events", no_argument, NULL, O_EVENTS },
		UTIL_COMMON_OPTIONS,
	};
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":c:d:n:f:vh", opts, NULL)) != -1) {
		switch (ch) {
		case O_SINCE: since = optarg; break;
		case O_UNTIL: until = optarg; break;
		case O_LANG: o->languages = add_to_list(o->languages, "--language", optarg); break;
		case O_STATUS: o->statuses = add_to_list(o->statuses, "--status", optarg); break;
		case O_ID: f->id = optarg; break;
		case O_SESSION: f->session = optarg; break;
		case O_PRINCIPAL: f->principal = optarg; break;
		case O_EGRESS: f->egress_refused = true; break;
		case 'n':
			if (!util_parse_i64(optarg, 0, INT64_MAX, &f->limit))
				util_usage_error(synopsis, "--limit: \"%s\" is not a count (0 for all)", optarg);
			break;
		case O_VERDICT: o->verdicts = add_to_list(o->verdicts, "--verdict", optarg); break;
		case O_STATS:
			if (optarg && strcmp(optarg, "verdict") && strcmp(optarg, "status"))
				util_usage_error(synopsis, "--stats=%s: group by status (the default) or verdict", optarg);
			o->stats = true;
			f->by_verdict = optarg && !strcmp(optarg, "verdict");
			break;
		case O_BY:
			if (strcmp(optarg, "hour") && strcmp(optarg, "day"))
				util_usage_error(synopsis, "--by: \"%s\" is not hour or day", optarg);
			o->by = optarg;
			break;
		case O_JQ: o->jq_filter = optarg; break;
		case 'f':
			if (!strcmp(optarg, "json"))
				o->fmt = F_JSON;
			else if (!strcmp(optarg, "table"))
				o->fmt = F_TABLE;
			else if (!strcmp(optarg, "csv"))
				o->fmt = F_CSV;
			else if (!strcmp(optarg, "html"))
				o->fmt = F_HTML;
			else
				util_usage_error(synopsis, "--format: \"%s\" is not json, table, csv or html", optarg);
			break;
		case O_RECORD: o->with_record = true; break;
		case O_PRUNE: o->prune = true; break;
		case O_OLDER: older = optarg; break;
		case O_FORCE: o->force = true; break;
		case 'v': o->verbose = true; break;
		case O_VACUUM: o->vacuum = true; break;
		case O_MERGE: o->merge = true; break;
		case 'd': o->db = optarg; break;
		case O_SERVER: o->server = true; break;
		case O_EVENTS: o->events = true; break;
		case 'c': o->conf_path = optarg; break;
		default: util_common_option(ch, argv, opts, synopsis, help);
		}
	}
	if (o->merge) {
		if (optind == argc)
			util_usage_error(synopsis, "--merge needs the history files to merge");
		o->sources = argv + optind;
		o->nsources = argc - optind;
	} else if (optind < argc)
		util_usage_error(synopsis, "unexpected argument \"%s\"", argv[optind]);
	if (o->by && !o->stats)
		util_usage_error(synopsis, "--by needs --stats");
	if (o->fmt == F_HTML && (o->stats || o->jq_filter || o->with_record || o->prune || o->vacuum))
		util_usage_error(synopsis, "--format html is the overview page: no --stats, --jq, --record or retention");
	if (o->prune != !!older)
		util_usage_error(synopsis, o->prune ? "--prune needs --older-than T" : "--older-than needs --prune");
	if (o->force && !o->prune)
		util_usage_error(synopsis, "--force is for --prune");
	o->retention = o->prune || o->vacuum;
	f->language = o->languages;
	f->status = o->statuses;
	f->verdict = o->verdicts;
	bool filtered = since || until || f->language || f->status || f->id || f->session || f->principal || f->verdict ||
			f->egress_refused;
	if (o->retention && (o->stats || o->jq_filter || filtered))
		util_usage_error(synopsis, "--prune and --vacuum take no filters, --stats or --jq");
	if (o->events && (f->language || f->status || f->id || f->verdict || f->egress_refused || o->stats || o->with_record ||
			  o->fmt == F_HTML || o->retention || o->merge))
		util_usage_error(synopsis, "--events takes --since, --until, --session, --principal, --limit, --jq and "
					   "--format json, table or csv");
	if (o->merge && (o->retention || o->stats || o->jq_filter || o->with_record || o->fmt != F_JSON || filtered))
		util_usage_error(synopsis, "--merge takes no filters, --stats, --jq, --record, --format or retention options");
	if (older)
		o->older = parse_time("--older-than", older);
	if (since)
		f->since = parse_time("--since", since);
	if (until)
		f->until = parse_time("--until", until);
	if (o->db && !*o->db)
		util_usage_error(synopsis, "-d: the database path is empty");
	if (o->db && o->server)
		util_usage_error(synopsis, "-d and --server each name the database: one of them");

	/* A typo is a usage error, never "no rows": cron reads exit 1 as
	 * "nothing to alert about". */
	if (o->statuses) {
		char *copy = util_strdup(o->statuses), *save = NULL;
		for (char *v = strtok_r(copy, ",", &save); v; v = strtok_r(NULL, ",", &save))
			if (!status_known(v))
				util_usage_error(synopsis, "--status: \"%s\" is not a status (%s)", v, status_list());
		free(copy);
	}
	if (o->verdicts) {
		char *copy = util_strdup(o->verdicts), *save = NULL;
		for (char *v = strtok_r(copy, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
			int i = status_find(v);
			if (i < 0 || !(status_as(i) & SA_VERDICT))
				util_usage_error(synopsis, "--verdict: \"%s\" is not a verdict (%s)", v, status_verdict_list());
		}
		free(copy);
	}
}

/* --merge: every source, each in its own transaction; a source that
 * fails is named on stderr and the others are still merged.  HX_ROWS when
 * all were, else HX_ERROR. */
static int merge(struct hist *h, const struct opts *o)
{
	int rc = HX_ROWS;
	for (int i = 0; i < o->nsources; i++) {
		char err[1024];
		int64_t rows, added;
		if (hist_merge(h, o->sources[i], &rows, &added, err, sizeof err) < 0) {
			util_warn("--merge: %s (not merged)", err);
			rc = HX_ERROR;
			continue;
		}
		jv r = jv_object_set(jv_object(), jv_string("merged"), jv_string(o->sources[i]));
		r = jv_object_set(r, jv_string("rows"), jv_number((double)rows));
		if (!rec_write(jv_object_set(r, jv_string("added"), jv_number((double)added))))
			rc = HX_ERROR;
	}
	return rc;
}

/* --prune, --vacuum: HX_ROWS, or HX_ERROR after saying why.  Silent
 * unless --verbose: cron mails what a job prints. */
static int retain(struct hist *h, const struct opts *o)
{
	char err[1024];
	int64_t n = 0;
	if (o->prune && (n = hist_prune(h, o->older, o->force, err, sizeof err)) < 0) {
		util_warn("%s", err);
		return HX_ERROR;
	}
	if (o->vacuum && hist_vacuum(h, err, sizeof err) < 0) {
		util_warn("%s", err);
		return HX_ERROR;
	}
	if (o->prune && o->verbose) {
		char when[40];
		util_iso8601(o->older * 1000.0, when, sizeof when);
		if (o->fmt == F_JSON) {
			jv r = jv_object_set(jv_object(), jv_string("pruned"), jv_number((double)n));
			rec_write(jv_object_set(r, jv_string("older_than"), jv_string(when)));
		} else
			printf("pruned %lld runs older than %s\n", (long long)n, when);
	}
	return HX_ROWS;
}

/* --format html: the dashboard's overview as one self-contained file (its
 * stylesheet inline, no script), for mail and cron; the filters narrow it. */
static int html(struct hist *h, const struct opts *o)
{
	struct page p;
	page_init(&p, true);
	char err[1024];
	struct hist_filter f = o->f;
	f.limit = 0;
	int rc = HX_ROWS;
	if (page_overview(&p, h, &f, NULL, err, sizeof err) < 0) {
		util_warn("%s", err);
		rc = HX_ERROR;
	} else if (fwrite(p.buf, 1, p.len, stdout) != p.len)
		rc = HX_ERROR;
	page_free(&p);
	return rc;
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	struct opts o;
	memset(&o, 0, sizeof o);
	options(argc, argv, &o);
	struct conf *c = conf_open(o.conf_path);
	char *server_db = conf_server_history(c);
	const char *db = o.server ? server_db : o.db;
	if (!db)
		db = state_history(c);
	if (o.languages) {
		/* Stored languages are canonical (sbx-validate resolves
		 * aliases); accept an alias here too. */
		char *canon = NULL, *save = NULL;
		for (char *v = strtok_r(o.languages, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
			const struct conf_lang *l = conf_lang(c, v);
			if (!l) {
				char msg[1024];
				snprintf(msg, sizeof msg, "--language: \"%s\" is not a configured language (%s)", v,
					 conf_lang_list(c));
				conf_free(c);
				util_usage_error(synopsis, "%s", msg);
			}
			char *next = canon ? util_fmt("%s,%s", canon, l->name) : util_strdup(l->name);
			free(canon);
			canon = next;
		}
		free(o.languages);
		o.f.language = o.languages = canon;
	}

	struct out out = { .fmt = o.fmt, .table_stats = o.stats || o.events, .header = jv_invalid(), .table = jv_array() };
	if (o.jq_filter) {
		out.jq = jq_init();
		if (!out.jq)
			util_die(HX_ERROR, "cannot initialise jq");
		jq_set_error_cb(out.jq, jq_error, NULL);
		if (!jq_compile(out.jq, o.jq_filter)) {
			jq_teardown(&out.jq);
			conf_free(c);
			util_usage_error(synopsis, "--jq: the filter does not compile");
		}
	}

	char err[1024];
	int rc = HX_ERROR;
	bool write = o.retention || o.merge;
	struct hist *h = hist_open(db, write ? HIST_WRITE : HIST_READ, false, err, sizeof err);
	if (!h) {
		/* Wherever its name came from (-d, SBX_HISTORY, the
		 * configuration), a file that is not there has no runs: exit 1,
		 * as for no rows, and the path, which a typo shows in. */
		if (!write && access(db, F_OK) < 0 && errno == ENOENT) {
			util_warn("no history at %s (from %s): sbx-log makes it at its first run%s", db,
				  o.server ? "--server" : o.db ? "-d" : db == c->history ? c->path : "SBX_HISTORY",
				  db == c->history && access(server_db, F_OK) == 0 ? "; the MCP server's runs: sbx-history --server" : "");
			rc = HX_NONE;
		} else
			util_warn("%s", err);
		goto out;
	}
	if (o.retention || o.merge) {
		rc = o.merge ? merge(h, &o) : retain(h, &o);
		goto out;
	}
	if (o.fmt == F_HTML) {
		rc = html(h, &o);
		goto out;
	}
	int64_t n = o.events  ? hist_events(h, &o.f, on_row, &out, err, sizeof err)
		    : o.stats ? hist_stats(h, &o.f, o.by ? (!strcmp(o.by, "hour") ? 3600 : 86400) : 0, on_row, &out, err, sizeof err)
			      : hist_query(h, &o.f, o.with_record, on_row, &out, err, sizeof err);
	if (n < 0) {
		util_warn("%s", err);
		goto out;
	}
	if (o.fmt == F_TABLE)
		print_table(&out);
	rc = out.failed ? HX_ERROR : out.printed > 0 ? HX_ROWS : HX_NONE;
out:
	hist_close(h);
	if (out.jq)
		jq_teardown(&out.jq);
	jv_free(out.header);
	jv_free(out.table);
	conf_free(c);
	free(server_db);
	free(o.languages);
	free(o.statuses);
	free(o.verdicts);
	if (util_close_stdout() != EXIT_OK)
		rc = HX_ERROR;
	return rc;
}
