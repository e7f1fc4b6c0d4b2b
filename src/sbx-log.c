/* sbx-log: append every record to the history and pass it on.
 *
 * Theory of operation: each record read (results, `invalid` records,
 * `internal_error`s, lines that are not records at all) becomes one row of
 * the history database and goes out on stdout with its "history_id".  A
 * record goes out only after the transaction holding its row has
 * committed, so a history_id a consumer sees is always in the file.
 *
 * Records that arrive together are committed together: after each record,
 * if more input is already waiting, it joins the open transaction (up to
 * BATCH_MAX records or BATCH_MS milliseconds); a record that arrives alone
 * is committed at once.  That keeps latency at one commit per record for an
 * interactive pipeline and throughput at thousands of records per commit
 * for a batch.
 *
 * History must never eat results: if the database cannot be opened or
 * written (read-only, corrupt, disk full) the reason goes to stderr once,
 * the records keep flowing with "history_id": null, and the exit status is
 * 4.  This process never forks, so it never holds the database across the
 * creation of a sandbox.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "hist.h"
#include "rec.h"
#include "state.h"
#include "util.h"

#define BATCH_MAX 1000
#define BATCH_MS 20.0

static const char synopsis[] =
	"usage: sbx-log [-c FILE] [-d DB] [--store-code preview|full] [--sync normal|full] [RESULTS.jsonl...]\n"
	"       sbx-log [-c FILE] [-d DB] --event JSON\n";

static void help(void)
{
	printf("%s\n"
	       "Append each record to the history database and pass it on with \"history_id\".\n"
	       "\n"
	       "  -d, --database DB   the SQLite file (default: $SBX_HISTORY, then the\n"
	       "                      configuration's history); created with its directory\n"
	       "      --store-code M  preview: the first 500 characters of the code (default);\n"
	       "                      full: the whole code, stdin, files and the capped output\n"
	       "      --sync M        normal (default) or full: full survives power loss, slower\n"
	       "      --event JSON    log a session's checkpoint event (or an array of them)\n"
	       "                      instead of records: sbx-mcp's checkpoint tools\n"
	       "  -c, --config FILE   configuration file\n"
	       "  -h, --help          show this help\n"
	       "      --version       show the version\n"
	       "\n"
	       "Exit status: 0 ok, 1 some input lines were not records (logged as invalid),\n"
	       "2 usage or configuration error, 3 input/output error, 4 the database failed\n"
	       "(records still flowed to stdout, with \"history_id\": null).\n",
	       synopsis);
}

/* A record waiting for its transaction to commit: its text, and the row
 * it went into. */
struct entry {
	char *text;
	size_t len;
	int64_t id;            /* -1: not stored */
};

struct logger {
	struct hist *h;        /* NULL once the database has failed */
	enum hist_code code;
	struct entry *pending; /* the open transaction's records, in input order */
	size_t n, cap;
	double batch_start;
	int status;
};

/* The database failed: say so once, stop using it.  Records of the lost
 * transaction go out unlogged. */
static void store_failed(struct logger *lg, const char *err)
{
	util_warn("%s; records are passed on without history_id", err);
	hist_close(lg->h);
	lg->h = NULL;
	lg->status = EXIT_STORE;
	for (size_t i = 0; i < lg->n; i++)
		lg->pending[i].id = -1;
}

/* The record's text with "history_id" added as its last member.  Records
 * are passed on byte for byte otherwise: no re-serialisation per record. */
static bool write_with_id(const char *text, size_t len, int64_t id)
{
	char tail[48];
	if (id >= 0)
		snprintf(tail, sizeof tail, "\"history_id\":%lld}\n", (long long)id);
	else
		snprintf(tail, sizeof tail, "\"history_id\":null}\n");
	if (memmem(text, len, "\"history_id\"", 12)) {
		/* Already has one (logged twice?): replace it, through jq. */
		jv v = jv_parse_sized(text, (int)len);
		if (jv_get_kind(v) != JV_KIND_OBJECT) {
			jv_free(v);
			v = jv_object();
		}
		v = jv_object_set(v, jv_string("history_id"), id >= 0 ? jv_number((double)id) : jv_null());
		size_t n;
		char *s = rec_dump(v, &n);
		bool ok = fwrite(s, 1, n, stdout) == n;
		free(s);
		return ok;
	}
	size_t end = len;
	while (end > 0 && text[end - 1] != '}')
		end--;
	size_t before = end - 1; /* the '}' */
	while (before > 0 && strchr(" \t\r\n", text[before - 1]))
		before--;
	bool empty = before > 0 && text[before - 1] == '{';
	return fwrite(text, 1, before, stdout) == before && (empty || fputc(',', stdout) != EOF) &&
	       fputs(tail, stdout) != EOF;
}

/* Commit the open transaction, then write its records out (with null ids
 * if the commit failed) and flush once. */
static bool flush(struct logger *lg)
{
	char err[1024];
	if (lg->h && hist_commit(lg->h, err, sizeof err) < 0)
		store_failed(lg, err);
	bool ok = true;
	for (size_t i = 0; i < lg->n; i++) {
		ok = ok && write_with_id(lg->pending[i].text, lg->pending[i].len, lg->pending[i].id);
		free(lg->pending[i].text);
	}
	lg->n = 0;
	return fflush(stdout) == 0 && ok;
}

static void log_record(struct logger *lg, const char *text, size_t len)
{
	char err[1024];
	if (lg->h && lg->n == 0) {
		if (hist_begin(lg->h, err, sizeof err) < 0)
			store_failed(lg, err);
		lg->batch_start = util_now_ms();
	}
	int64_t id = -1;
	if (lg->h && hist_append(lg->h, text, len, lg->code, &id, err, sizeof err) < 0) {
		hist_abort(lg->h);
		store_failed(lg, err);
		id = -1;
	}
	if (lg->n == lg->cap) {
		lg->cap = lg->cap ? 2 * lg->cap : 64;
		lg->pending = util_xrealloc(lg->pending, lg->cap * sizeof *lg->pending);
	}
	lg->pending[lg->n++] = (struct entry){ .text = util_strndup(text, len), .len = len, .id = id };
}

/* More input already waiting, and the batch may still grow? */
static bool keep_batching(struct logger *lg, struct rec_reader *r)
{
	if (lg->n >= BATCH_MAX || util_now_ms() - lg->batch_start > BATCH_MS)
		return false;
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	int n;
	while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR)
		;
	return n > 0;
}

/* --event: one event or an array of them, in one transaction. */
static int log_events(struct conf *c, const char *db, const char *text)
{
	jv v = jv_parse(text);
	if (jv_get_kind(v) == JV_KIND_OBJECT)
		v = jv_array_append(jv_array(), v);
	if (jv_get_kind(v) != JV_KIND_ARRAY) {
		jv_free(v);
		util_usage_error(synopsis, "--event: not a JSON object or array");
	}
	char err[1024];
	struct hist *h = hist_open(db, HIST_WRITE, c->history_sync == CONF_SYNC_FULL, err, sizeof err);
	int rc = h && hist_begin(h, err, sizeof err) == 0 ? 0 : -1;
	jv_array_foreach(v, i, e) {
		if (rc == 0 && hist_event(h, e, err, sizeof err) < 0)
			rc = -1;
		else if (rc < 0)
			jv_free(e);
	}
	jv_free(v);
	if (rc == 0)
		rc = hist_commit(h, err, sizeof err);
	else if (h)
		hist_abort(h);
	if (rc < 0)
		util_warn("%s", err);
	if (h)
		hist_close(h);
	conf_free(c);
	return rc < 0 ? EXIT_STORE : EXIT_OK;
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	const char *conf_path = NULL, *db = NULL, *code_opt = NULL, *sync_opt = NULL, *event = NULL;
	static const struct option opts[] = {
		{ "database", required_argument, NULL, 'd' },
		{ "store-code", required_argument, NULL, 'S' },
		{ "sync", required_argument, NULL, 'Y' },
		{ "event", required_argument, NULL, 'E' },
		UTIL_COMMON_OPTIONS,
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:d:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c': conf_path = optarg; break;
		case 'd': db = optarg; break;
		case 'S':
			if (strcmp(optarg, "preview") && strcmp(optarg, "full"))
				util_usage_error(synopsis, "--store-code: \"%s\" is not preview or full", optarg);
			code_opt = optarg;
			break;
		case 'Y':
			if (strcmp(optarg, "normal") && strcmp(optarg, "full"))
				util_usage_error(synopsis, "--sync: \"%s\" is not normal or full", optarg);
			sync_opt = optarg;
			break;
		case 'E': event = optarg; break;
		default: util_common_option(o, argv, opts, synopsis, help);
		}
	}
	if (event && optind < argc)
		util_usage_error(synopsis, "--event takes no input files");
	util_inputs(argc - optind, argv + optind, synopsis);
	if (db && !*db)
		util_usage_error(synopsis, "-d: the database path is empty");

	struct conf *c = conf_open(conf_path);
	if (!db)
		db = state_history(c);
	if (event)
		return log_events(c, db, event);
	struct logger lg = {
		.code = (code_opt ? !strcmp(code_opt, "full") : c->history_code == CONF_CODE_FULL) ? HIST_CODE_FULL : HIST_CODE_PREVIEW,
		.status = EXIT_OK,
	};
	char err[1024];
	lg.h = hist_open(db, HIST_APPEND, sync_opt ? !strcmp(sync_opt, "full") : c->history_sync == CONF_SYNC_FULL, err, sizeof err);
	if (!lg.h) {
		util_warn("%s; records are passed on without history_id", err);
		lg.status = EXIT_STORE;
	}

	struct rec_reader r;
	rec_reader_init(&r, STDIN_FILENO, c->max_record_size);
	bool invalid_seen = false, io_failed = false;
	for (;;) {
		const char *line;
		size_t len;
		jv inv;
		enum rec_status st = rec_next_raw(&r, &line, &len, &inv);
		if (st == REC_OK) {
			log_record(&lg, line, len);
			continue;
		}
		if (st == REC_INVALID) {
			/* Not a record: logged and passed on as the `invalid`
			 * record that says why. */
			invalid_seen = true;
			char *text = rec_dump(inv, &len);
			log_record(&lg, text, len - 1);
			free(text);
			continue;
		}
		if (st == REC_AGAIN) {
			/* Nothing complete buffered: read more now if it is
			 * already there and the batch may grow; otherwise
			 * commit what we have before blocking for more. */
			if (lg.n > 0 && !keep_batching(&lg, &r) && !flush(&lg)) {
				io_failed = true;
				break;
			}
			ssize_t n;
			while ((n = rec_fill(&r)) < 0 && errno == EINTR)
				;
			if (n < 0) {
				util_warn("reading input: %s", strerror(errno));
				io_failed = true;
				break;
			}
			continue;
		}
		if (st == REC_ERROR) {
			util_warn("reading input: %s", strerror(errno));
			io_failed = true;
		}
		break; /* REC_EOF */
	}
	/* What was read is logged and written, even when reading failed. */
	if (!flush(&lg))
		io_failed = true;
	free(lg.pending);
	rec_reader_free(&r);
	hist_close(lg.h);
	conf_free(c);
	int cs = util_close_stdout();
	if (io_failed || cs != EXIT_OK)
		return EXIT_IO;
	if (lg.status != EXIT_OK)
		return lg.status;
	return invalid_seen ? EXIT_RECORDS : EXIT_OK;
}
