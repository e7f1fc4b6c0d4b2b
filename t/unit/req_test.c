/* Unit tests for lib/core/req.h, the table of a request's fields: every
 * name once, every requestable limit a row, the lists the errors name.
 *
 * With --fields it prints the table instead, one field a line: its name
 * and the contexts it may appear in (req judged cell test checker judging
 * computed data), for t/06-tables.bats to hold the docs against. */
#include <stdio.h>
#include <string.h>

#include "req.h"
#include "tap.h"

static void print_fields(void)
{
	static const struct {
		unsigned bit;
		const char *name;
	} ctx[] = { { RW_REQ, "req" },         { RW_JUDGED, "judged" },   { RW_CELL, "cell" },
		    { RW_TEST, "test" },       { RW_CHECKER, "checker" }, { RW_JUDGING, "judging" },
		    { RW_COMPUTED, "computed" }, { RW_DATA, "data" } };
	for (int i = 0; i < REQ_N; i++) {
		const struct req_field *f = req_field(i);
		printf("%s", f->name);
		for (size_t k = 0; k < sizeof ctx / sizeof ctx[0]; k++)
			if (f->where & ctx[k].bit)
				printf(" %s", ctx[k].name);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--fields")) {
		print_fields();
		return 0;
	}
	bool named = true, unique = true;
	for (int i = 0; i < REQ_N; i++) {
		named &= req_field(i)->name && *req_field(i)->name;
		for (int j = 0; named && j < i; j++)
			unique &= strcmp(req_field(i)->name, req_field(j)->name) != 0;
	}
	OK(named, "every field has a name (a limit's from limit.h)");
	OK(unique, "no name twice");
	bool limits = true;
	for (int i = 0; i < LIM_N; i++)
		if (limit_defs[i].req) {
			const struct req_field *f = req_find(limit_defs[i].req);
			limits &= f && f->lim == i && (f->where & RW_REQ);
		}
	OK(limits, "every limit a request may set is a request field, by limit.h's name");
	OK(req_find("tiemout") == NULL && req_find("timeout") == req_field(REQ_timeout_ms), "req_find");
	char buf[200];
	OK(!strcmp(req_names(RW_TEST, buf, sizeof buf), "stdin, args, files, expected_stdout, timeout, memory"),
	   "a test's fields: %s", buf);
	OK(!strcmp(req_names(RW_CHECKER, buf, sizeof buf), "language, code, timeout, memory"), "a checker's fields: %s", buf);
	OK(!strcmp(req_names(RW_REQ | RW_DATA, buf, sizeof buf), "code, stdin"), "the data fields, the ledger's digest: %s", buf);
	jv req = jv_parse("{\"language\":\"python\",\"stdin\":\"\",\"install\":[\"x\"],\"cell\":true}");
	const struct req_field *f = req_first(req, RW_REQ, RW_CELL);
	OK(f && !strcmp(f->name, "stdin"), "the first field a cell refuses, in table order");
	jv args = jv_parse("{\"language\":\"py\",\"code\":\"1\",\"session_id\":\"s\",\"reset\":true,\"stdin\":\"x\"}");
	jv cell = req_from_args(jv_object_set(jv_object(), jv_string("language"), jv_string("python")), args, RT_CELL);
	OK(jv_equal(jv_copy(cell), jv_parse("{\"language\":\"python\",\"code\":\"1\",\"reset\":true}")),
	   "req_from_args: the tool's fields the request lacks, no others");
	jv_free(cell);
	jv_free(args);
	jv_free(req);
	unsigned shape = 9;
	bool docs = !strcmp(req_mcp_doc(req_field(REQ_code), RT_CELL, &shape), "the cell's code") && !shape &&
		    req_mcp_doc(req_field(REQ_code), RT_RUN, &shape) == req_field(REQ_code)->doc && !shape &&
		    req_mcp_doc(req_field(REQ_files), RT_RUN, &shape) == req_field(REQ_files)->doc && shape == RS_FILES;
	OK(docs, "req_mcp_doc: a tool's own wording, else the doc line; the shape");
	bool described = true;
	for (int i = 0; i < REQ_N; i++)
		for (unsigned t = RT_RUN; t <= RT_INSTALL; t <<= 1)
			if (req_field(i)->tools & t) {
				const char *d = req_mcp_doc(req_field(i), t, &shape);
				described &= d && *d;
			}
	OK(described, "every field a tool takes has a description for it");
	jv size = jv_string("1g");
	OK(req_kind_ok(jv_number(3), RK_INT) && !req_kind_ok(jv_number(3.5), RK_INT) && req_kind_ok(jv_number(3.5), RK_NUM) &&
	   req_kind_ok(size, RK_STR | RK_NUM) && !req_kind_ok(jv_null(), RK_OBJ), "req_kind_ok");
	jv_free(size);
	DONE();
}
