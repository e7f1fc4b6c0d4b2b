#include "req.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rec.h"

/* A limit's row has no name of its own here: req_names_from_limits gives
 * it limit.h's request key before main. */
static struct req_field fields[REQ_N] = {
#define REQ_OWN(n, k, w, t, r, doc) { #n, k, w, t, r, doc, -1 },
#define REQ_LIM(f, k, w, t, r, doc) { NULL, k, w, t, r, doc, LIM_##f },
	REQ_FIELDS(REQ_OWN, REQ_LIM)
#undef REQ_OWN
#undef REQ_LIM
};

__attribute__((constructor)) static void req_names_from_limits(void)
{
	for (int i = 0; i < REQ_N; i++)
		if (fields[i].lim >= 0)
			fields[i].name = limit_defs[fields[i].lim].req;
}

const struct req_field *req_field(int i)
{
	return &fields[i];
}

const struct req_field *req_find(const char *name)
{
	for (int i = 0; i < REQ_N; i++)
		if (fields[i].name && !strcmp(fields[i].name, name))
			return &fields[i];
	return NULL;
}

const struct req_field *req_first(jv req, unsigned all, unsigned none)
{
	for (int i = 0; i < REQ_N; i++)
		if ((fields[i].where & all) == all && !(fields[i].where & none) && rec_has(req, fields[i].name))
			return &fields[i];
	return NULL;
}

const char *req_names(unsigned all, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < REQ_N && o < len; i++)
		if ((fields[i].where & all) == all)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", fields[i].name);
	return buf;
}

static const struct {
	int field;
	unsigned tools;
	const char *doc;
	unsigned shape;
} mcp_docs[] = {
#define REQ_MCP_ROW(f, t, doc, shape) { REQ_##f, t, doc, shape },
	REQ_MCP(REQ_MCP_ROW)
#undef REQ_MCP_ROW
};

const char *req_mcp_doc(const struct req_field *f, unsigned tool, unsigned *shape)
{
	*shape = 0;
	for (size_t i = 0; i < sizeof mcp_docs / sizeof mcp_docs[0]; i++)
		if (&fields[mcp_docs[i].field] == f && (mcp_docs[i].tools & tool)) {
			*shape = mcp_docs[i].shape;
			return mcp_docs[i].doc ? mcp_docs[i].doc : f->doc;
		}
	return f->doc;
}

jv req_from_args(jv req, jv args, unsigned tool)
{
	for (int i = 0; i < REQ_N; i++)
		if ((fields[i].tools & tool) && rec_has(args, fields[i].name) && !rec_has(req, fields[i].name))
			req = jv_object_set(req, jv_string(fields[i].name), rec_get(args, fields[i].name));
	return req;
}

bool req_kind_ok(jv v, unsigned kinds)
{
	switch (jv_get_kind(v)) {
	case JV_KIND_STRING: return kinds & RK_STR;
	case JV_KIND_OBJECT: return kinds & RK_OBJ;
	case JV_KIND_ARRAY: return kinds & (RK_STRS | RK_LIST);
	case JV_KIND_TRUE:
	case JV_KIND_FALSE: return kinds & RK_BOOL;
	case JV_KIND_NUMBER:
		return (kinds & RK_NUM) ||
		       ((kinds & RK_INT) && jv_number_value(v) == floor(jv_number_value(v)) && fabs(jv_number_value(v)) < 1e15);
	default: return false;
	}
}
