#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage.h"
#include "util.h"

int bk_own_placeholder(int dir, const char *own, bool own_dir, char *err, size_t errlen)
{
	int fd = own_dir ? mkdirat(dir, own, 0755) : openat(dir, own, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (!own_dir && fd >= 0)
		close(fd);
	struct stat st;
	if (fd < 0 && errno == EEXIST && fstatat(dir, own, &st, AT_SYMLINK_NOFOLLOW) == 0)
		errno = (st.st_mode & S_IFMT) == (own_dir ? S_IFDIR : S_IFREG) ? 0 : EEXIST;
	if (fd < 0 && errno) {
		snprintf(err, errlen, "cannot make %s in the session's workspace: %s%s", own, strerror(errno),
			 errno == ENOSPC || errno == EDQUOT ? " (the workspace is full: its quota is workspace_size)"
			 : errno == EEXIST		    ? " (another program of the session put something else there)"
							    : "");
		return -1;
	}
	return 0;
}

/* One language's version probe: its version command in a stage of its
 * own, with the language's tree, binds, image and environment. */
struct vprobe {
	struct bk_scratch *scratch;
	struct bk_stage *st;
	struct stage_spec spec;
	char **env;
	jv info;
	char why[700];
	bool done;
};

static void vprobe_done(void *arg)
{
	((struct vprobe *)arg)->done = true;
}

static void vprobe_start(struct backend *be, struct loop *l, const struct conf_lang *lg, const struct limits *lim,
			 struct vprobe *p)
{
	char err[512];
	p->scratch = bk_scratch_open(be, NULL, NULL, false, false, 1 << 20, err, sizeof err);
	if (!p->scratch || be->ops->scratch_stage(p->scratch, false, err, sizeof err) < 0) {
		snprintf(p->why, sizeof p->why, "no scratch directory for the probe: %s", err);
		return;
	}
	p->env = stage_lang_env(lg, lim);
	p->spec = (struct stage_spec){ .argv = lg->version, .env = p->env, .lim = lim, .scratch = p->scratch,
				       .rootfs = lg->rootfs, .binds = lg->binds, .image = lg->image, .label = "check" };
	p->done = false;
	p->st = bk_start(be, l, &p->spec, vprobe_done, p);
}

static const struct {
	unsigned bit;
	const char *name;
	bool required; /* a run without it enforces less than configured */
} enforced_names[] = {
	{ ENF_NAMESPACES, "namespaces", true }, { ENF_SECCOMP, "seccomp", true }, { ENF_TIMEOUT, "timeout", true },
	{ ENF_MEMORY, "memory", true }, { ENF_MEMORY_RLIMIT, "memory_rlimit", false }, { ENF_CPU, "cpus", true },
	{ ENF_PIDS, "pids", true }, { ENF_RLIMITS, "rlimits", false },
};

static jv enforced_names_json(unsigned bits, bool held)
{
	jv a = jv_array();
	for (size_t i = 0; i < sizeof enforced_names / sizeof enforced_names[0]; i++)
		if (held ? (bits & enforced_names[i].bit) != 0 : enforced_names[i].required && !(bits & enforced_names[i].bit))
			a = jv_array_append(a, jv_string(enforced_names[i].name));
	return a;
}

jv backend_enforced_json(unsigned bits)
{
	return enforced_names_json(bits, true);
}

jv backend_missing_json(unsigned bits)
{
	return enforced_names_json(bits, false);
}

jv bk_check_languages(struct backend *be, bool usable, jv *fixes)
{
	const struct conf *c = be->conf;
	struct loop *l = loop_new();
	struct vprobe *p = util_xalloc((c->nlangs ? c->nlangs : 1) * sizeof *p);
	/* The compile stage's limits, with room for a slow runtime (or a
	 * container) to start. */
	struct limits lim;
	conf_lang_limits(c, NULL, NULL, &lim);
	lim.timeout_ms = 30000;
	lim.output = 4096;
	lim.cpus = 1;
	for (size_t i = 0; i < c->nlangs; i++) {
		const struct conf_lang *lg = &c->langs[i];
		p[i] = (struct vprobe){ .done = true, .info = jv_object_set(jv_object(), jv_string("name"), jv_string(lg->name)) };
		bool fix = false;
		if (!be->ops->lang_ready(be, lg, &p[i].info, p[i].why, sizeof p[i].why, &fix)) {
			if (fix)
				*fixes = jv_array_append(*fixes, jv_string(p[i].why));
		} else if (!usable)
			snprintf(p[i].why, sizeof p[i].why, "the sandbox backend is unusable here");
		else if (lg->version)
			vprobe_start(be, l, lg, &lim, &p[i]);
	}
	for (;;) {
		bool all = true;
		for (size_t i = 0; i < c->nlangs; i++)
			all &= p[i].done;
		if (all || loop_once(l, 1000) < 0)
			break;
	}
	jv out = jv_array();
	for (size_t i = 0; i < c->nlangs; i++) {
		jv version = jv_null();
		if (p[i].st) {
			version = stage_version(be->ops->result(p[i].st), be->where, p[i].why, sizeof p[i].why);
			be->ops->stage_free(p[i].st);
		}
		bk_scratch_close(p[i].scratch);
		util_strv_free(p[i].env);
		jv o = jv_object_set(p[i].info, jv_string("available"), jv_bool(!p[i].why[0]));
		o = jv_object_set(o, jv_string("version"), version);
		if (p[i].why[0])
			o = jv_object_set(o, jv_string("error"), jv_string(p[i].why));
		out = jv_array_append(out, o);
	}
	free(p);
	be->ops->drain(be); /* sandboxes' inits still exiting are watched on l */
	loop_free(l);
	return out;
}
