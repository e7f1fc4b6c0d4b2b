/* libFuzzer harness: the configuration parser on arbitrary bytes.  Any
 * abort, sanitizer report or leak is a finding; a successful parse must
 * also answer the lookups the tools make. */
#include <stdint.h>
#include <stdio.h>

#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[2048];
	struct conf *c = conf_parse("fuzz.conf", (const char *)data, size, err, sizeof err);
	if (c) {
		conf_lang_list(c);
		for (size_t i = 0; i < c->nlangs; i++) {
			struct limits run, compile;
			conf_lang_limits(c, &c->langs[i], &run, &compile);
			conf_lang(c, c->langs[i].name);
		}
	}
	conf_free(c);
	return 0;
}
