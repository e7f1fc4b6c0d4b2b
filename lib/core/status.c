/* status: the table's rows as data (status.h). */
#include "status.h"

#include <stdio.h>
#include <string.h>

struct status_def {
	const char *name;
	unsigned flags, as;
	enum status_id makes;
};

#define DEF_STATUS_(n, flags, as, tone_) [STATUS_##n] = { #n, flags, as, STATUS_##n },
#define DEF_VERDICT_(n, st, as, tone_) [STATUS_##n] = { #n, 0, SA_VERDICT | (as), STATUS_##st },
#define DEF_TEST_(n) [STATUS_##n] = { #n, 0, SA_TEST, STATUS_##n },
static const struct status_def defs[STATUS_N] = { STATUSES(DEF_STATUS_) VERDICTS(DEF_VERDICT_) TESTS(DEF_TEST_) };

const char *status_name(enum status_id id)
{
	return defs[id].name;
}

int status_find(const char *s)
{
	for (int i = 0; s && i < STATUS_N; i++)
		if (!strcmp(defs[i].name, s))
			return i;
	return -1;
}

bool status_known(const char *s)
{
	int i = status_find(s);
	return i >= 0 && i < STATUS_NSTATUSES;
}

unsigned status_as(enum status_id i)
{
	return defs[i].as;
}

enum status_id status_of_verdict(enum status_id v)
{
	return defs[v].makes;
}

bool status_is(const char *s, unsigned flag)
{
	int i = status_find(s);
	unsigned f = STF_RAN | STF_RATED;
	if (i >= 0 && (int)defs[i].makes < STATUS_NSTATUSES)
		f = defs[defs[i].makes].flags;
	return f & flag;
}

const char *status_verdict_list(void)
{
	static char list[256];
	size_t o = 0;
	for (int k = 0; k < STATUS_N; k++) {
		int i = (k + STATUS_NSTATUSES) % STATUS_N; /* the verdicts' own rows first */
		if ((defs[i].as & SA_VERDICT) && o < sizeof list)
			o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", o ? ", " : "", defs[i].name);
	}
	return list;
}

const char *status_list(void)
{
	static char list[200];
	size_t o = 0;
	for (int i = 0; i < STATUS_NSTATUSES && o < sizeof list; i++)
		o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", defs[i].name);
	return list;
}
