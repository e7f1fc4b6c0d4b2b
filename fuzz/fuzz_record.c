/* libFuzzer harness: the record path of every tool.  Input bytes are split
 * into lines like a tool's stdin; each line goes through the parser, then
 * (if an object) sbx-validate's request -> job, then sbx-run's job_load on
 * the job, and sbx-cap's capping of string fields.  Any abort, sanitizer
 * report or leak is a finding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "conf.h"
#include "job.h"
#include "rec.h"

static struct conf *conf;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[1024];
	const char *path = getenv("SBX_FUZZ_CONF");
	conf = conf_load(path ? path : "etc/sandbox.conf", err, sizeof err);
	if (!conf) {
		fprintf(stderr, "fuzz_record: %s\n", err);
		exit(1);
	}
	return 0;
}

static void one(const char *line, size_t len, unsigned long n)
{
	jv rec;
	enum rec_status st = rec_parse_line(line, len, n, &rec);
	if (st == REC_AGAIN)
		return;
	if (st == REC_INVALID) {
		size_t l;
		free(rec_dump(rec, &l));
		return;
	}
	jv capped = jv_copy(rec);
	size_t slen;
	const char *s = rec_str(capped, "code", &slen);
	if (s) {
		bool t;
		jv_free(cap_string(s, slen, slen / 3, 0, &t));
	}
	jv_free(capped);
	jv job = job_from_request(conf, rec);
	if (!rec_has_status(job)) {
		struct job j;
		char err[512];
		job_load(conf, jv_copy(job), &j, err, sizeof err);
		job_free(&j);
	}
	size_t l;
	free(rec_dump(job, &l));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	unsigned long n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		one(p, len, ++n);
		p += len + 1;
	}
	return 0;
}
