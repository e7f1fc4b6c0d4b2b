#define _GNU_SOURCE
#include "stage.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "layout.h"
#include "util.h"

/* The environment every program starts from; the language's "env" entries
 * replace or add to it.  Nothing of the caller's environment gets in. */
static const char *const base_env[] = {
	"PATH=" NS_PATH,
	"HOME=" NS_HOME,
	"LANG=C.UTF-8",
	"TMPDIR=/tmp",
	"USER=sandbox",
	"LOGNAME=sandbox",
	"SHELL=/bin/sh",
	"PWD=" NS_WORKDIR,
	NULL,
};

const char *stage_signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);
	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "SIG%d", sig);
	return buf;
}

char **stage_env(char *const *extra)
{
	size_t n = 0, m = 0;
	while (base_env[n])
		n++;
	while (extra && extra[m])
		m++;
	char **env = util_xalloc((n + m + 1) * sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		env[k++] = util_strdup(base_env[i]);
	for (size_t i = 0; i < m; i++) {
		size_t name = (size_t)(strchr(extra[i], '=') - extra[i]);
		size_t j;
		for (j = 0; j < k; j++)
			if (!strncmp(env[j], extra[i], name + 1))
				break;
		if (j < k) {
			free(env[j]);
			env[j] = util_strdup(extra[i]);
		} else
			env[k++] = util_strdup(extra[i]);
	}
	env[k] = NULL;
	return env;
}

char **stage_lang_env(const struct conf_lang *l, const struct limits *lim)
{
	char **extra = job_expand_strv(l->env, lim);
	char **env = stage_env(extra);
	util_strv_free(extra);
	return env;
}

jv stage_version(const struct stage_result *r, const char *where, char *err, size_t errlen)
{
	jv text = cap_buf_string(r->out.total ? &r->out : &r->err);
	const char *s = jv_string_value(text);
	size_t n = strcspn(s, "\n");
	jv version = jv_null();
	if (r->status == STAGE_EXITED && r->exit_code == 0 && n > 0)
		version = jv_string_sized(s, (int)n);
	else if (r->status == STAGE_INTERNAL)
		snprintf(err, errlen, "%s", r->error);
	else {
		jv e = cap_buf_string(&r->err);
		const char *es = jv_string_value(e);
		snprintf(err, errlen, "its version command failed in %s%s%.*s", where, *es ? ": " : "",
			 (int)(strcspn(es, "\n") < 300 ? strcspn(es, "\n") : 300), es);
		jv_free(e);
	}
	jv_free(text);
	return version;
}

