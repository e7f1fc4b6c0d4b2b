#include "limit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rec.h"
#include "util.h"

const struct limit_def limit_defs[LIM_N] = {
#define LIM_DEF(f, u, ck, jk, rk, mn, mx, d, ceil, comp) \
	[LIM_##f] = { #f, ck, jk, rk, u, mn, mx, d, ceil, comp, offsetof(struct limits, f) },
	LIMITS(LIM_DEF)
#undef LIM_DEF
};

double limit_get(const struct limits *l, int i)
{
	const char *p = (const char *)l + limit_defs[i].off;
	if (limit_defs[i].unit == LU_CPUS)
		return *(const double *)p;
	return (double)*(const uint64_t *)p;
}

void limit_set(struct limits *l, int i, double v)
{
	char *p = (char *)l + limit_defs[i].off;
	if (limit_defs[i].unit == LU_CPUS)
		*(double *)p = v;
	else
		*(uint64_t *)p = (uint64_t)v;
}

void limits_defaults(struct limits *run, struct limits *compile, struct limits *ceiling)
{
	for (int i = 0; i < LIM_N; i++) {
		const struct limit_def *d = &limit_defs[i];
		if (run)
			limit_set(run, i, d->dflt);
		if (compile)
			limit_set(compile, i, d->compile ? d->compile : d->dflt);
		if (ceiling)
			limit_set(ceiling, i, d->ceiling ? d->ceiling : d->max);
	}
}

const char *limit_str(int i, double v, char *buf, size_t len)
{
	switch (limit_defs[i].unit) {
	case LU_MS: snprintf(buf, len, "%g s", v / 1000); break;
	case LU_BYTES: util_size_str((uint64_t)v, buf, len); break;
	case LU_COUNT: snprintf(buf, len, "%.0f", v); break;
	case LU_CPUS: snprintf(buf, len, "%g", v); break;
	}
	return buf;
}

bool limit_from_request(int i, jv v, double *out, char *err, size_t errlen)
{
	const struct limit_def *d = &limit_defs[i];
	jv_kind k = jv_get_kind(v);
	if (k == JV_KIND_INVALID || k == JV_KIND_NULL)
		return true;
	double n = k == JV_KIND_NUMBER ? jv_number_value(v) : 0;
	switch (d->unit) {
	case LU_MS:
		if (k != JV_KIND_NUMBER)
			break;
		if (!(n > 0) || !isfinite(n) || n > 1e9) {
			snprintf(err, errlen, "%s must be a positive number of seconds", d->req);
			return false;
		}
		*out = ceil(n * 1000);
		return true;
	case LU_BYTES: {
		uint64_t b = 0;
		bool ok;
		if (k == JV_KIND_STRING)
			ok = util_parse_size(jv_string_value(v), &b);
		else if (k == JV_KIND_NUMBER) {
			ok = n >= 0 && n < 9e15 && n == floor(n);
			if (ok)
				b = (uint64_t)n;
		} else
			break;
		if (!ok) {
			snprintf(err, errlen, "\"%s\" must be a size such as \"128m\" or a byte count", d->req);
			return false;
		}
		*out = (double)b;
		return true;
	}
	case LU_COUNT:
		if (k != JV_KIND_NUMBER)
			break;
		if (n != floor(n) || !isfinite(n)) {
			snprintf(err, errlen, "\"%s\" must be an integer, got %g", d->req, n);
			return false;
		}
		*out = n;
		return true;
	case LU_CPUS:
		if (k != JV_KIND_NUMBER)
			break;
		if (!isfinite(n)) {
			snprintf(err, errlen, "\"%s\" must be a finite number", d->req);
			return false;
		}
		*out = n;
		return true;
	}
	static const char *const want[] = { [LU_MS] = "a number of seconds", [LU_BYTES] = "a size such as \"128m\"",
					     [LU_COUNT] = "an integer", [LU_CPUS] = "a number" };
	snprintf(err, errlen, "\"%s\" must be %s, got %s", d->req, want[d->unit], rec_kind(v));
	return false;
}

jv limits_to_json(const struct limits *l)
{
	jv o = jv_object();
	for (int i = 0; i < LIM_N; i++)
		o = jv_object_set(o, jv_string(limit_defs[i].job), jv_number(limit_get(l, i)));
	return o;
}

bool limits_from_json(jv o, const char *what, struct limits *l, char *err, size_t errlen)
{
	if (jv_get_kind(o) != JV_KIND_OBJECT) {
		snprintf(err, errlen, "\"%s\" must be an object, got %s", what, rec_kind(o));
		return false;
	}
	for (int i = 0; i < LIM_N; i++) {
		const struct limit_def *d = &limit_defs[i];
		double v;
		bool whole = d->unit != LU_CPUS;
		if (!rec_num(o, d->job, &v) || (whole && v != floor(v)) || !(v >= d->min) || v > d->max) {
			snprintf(err, errlen, whole ? "%s.%s must be an integer from %.0f to %.0f" : "%s.%s must be a number from %g to %g",
				 what, d->job, d->min, d->max);
			return false;
		}
		limit_set(l, i, v);
	}
	return true;
}
