#include "job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostpat.h"
#include "judge.h"
#include "layout.h"
#include "rec.h"
#include "registry.h"
#include "req.h"
#include "state.h"
#include "util.h"

/* sbx-run's side of job.h: a job record -> struct job, everything checked
 * again (a job can be written by hand) and held to this configuration. */

/* v (consumed): an array of strings without NUL -> NULL-terminated copy. */
char **job_load_strv(jv v, bool allow_null, bool need_one, const char *what, char *err, size_t errlen, bool *ok)
{
	char **out = NULL;
	*ok = false;
	jv_kind k = jv_get_kind(v);
	if ((k == JV_KIND_NULL || k == JV_KIND_INVALID) && allow_null) {
		*ok = true;
		goto done;
	}
	if (k != JV_KIND_ARRAY) {
		snprintf(err, errlen, "exec.%s must be an array of strings", what);
		goto done;
	}
	int n = jv_array_length(jv_copy(v));
	if (n > 4096 || (need_one && n == 0)) {
		snprintf(err, errlen, "exec.%s has %d elements", what, n);
		goto done;
	}
	out = util_xalloc(((size_t)n + 1) * sizeof *out);
	for (int i = 0; i < n; i++) {
		jv s = jv_array_get(jv_copy(v), i);
		size_t len = jv_get_kind(s) == JV_KIND_STRING ? (size_t)jv_string_length_bytes(jv_copy(s)) : 0;
		if (jv_get_kind(s) != JV_KIND_STRING || memchr(jv_string_value(s), 0, len)) {
			snprintf(err, errlen, "exec.%s[%d] must be a string without NUL", what, i);
			jv_free(s);
			for (int j = 0; j < i; j++)
				free(out[j]);
			free(out);
			out = NULL;
			goto done;
		}
		out[i] = util_strndup(jv_string_value(s), len);
		jv_free(s);
	}
	*ok = true;
done:
	jv_free(v);
	return out;
}


/* Limits above what this configuration would ever grant mean the job did not
 * come from sbx-validate with this configuration. */
bool job_limits_ok(const struct conf *c, const struct limits *l, const char *what, char *err, size_t errlen)
{
	struct limits max;
	conf_max_limits(c, &max);
	for (int i = 0; i < LIM_N; i++)
		if (limit_get(l, i) > limit_get(&max, i) * (1 + 1e-12)) {
			char a[32], b[32];
			snprintf(err, errlen, "%s.%s %s exceeds the most the configuration grants (%s, in %s); run requests through sbx-validate",
				 what, limit_defs[i].job, limit_str(i, limit_get(l, i), a, sizeof a), limit_str(i, limit_get(&max, i), b, sizeof b),
				 c->path);
			return false;
		}
	return true;
}

/* The record's own fields: id, language, code, stdin, backend. */
static bool load_record(const struct conf *c, jv rec, struct job *j, char *err, size_t errlen)
{
	rec_bool(rec, REQ_KEY(artifacts), &j->artifacts);
	jv id = rec_get(rec, REQ_KEY(id));
	if (jv_get_kind(id) == JV_KIND_STRING)
		snprintf(j->id, sizeof j->id, "%.128s", jv_string_value(id));
	else if (jv_get_kind(id) == JV_KIND_NUMBER)
		snprintf(j->id, sizeof j->id, "%.17g", jv_number_value(id));
	jv_free(id);
	if (!j->id[0])
		job_new_id(j->id, sizeof j->id);
	j->language = rec_str(rec, REQ_KEY(language), NULL);
	j->code = rec_str(rec, REQ_KEY(code), &j->code_len);
	if (!j->language || !j->code) {
		snprintf(err, errlen, "a job needs \"%s\" and \"%s\" strings", REQ_KEY(language), REQ_KEY(code));
		return false;
	}
	if (rec_has(rec, REQ_KEY(stdin))) {
		jv s = rec_get(rec, REQ_KEY(stdin));
		jv_kind k = jv_get_kind(s);
		jv_free(s);
		if (k != JV_KIND_NULL && !(j->stdin_data = rec_str(rec, REQ_KEY(stdin), &j->stdin_len))) {
			snprintf(err, errlen, "\"%s\" must be a string", REQ_KEY(stdin));
			return false;
		}
	}
	j->backend = rec_str(rec, REQ_KEY(backend), NULL);
	j->principal = rec_str(rec, REQ_KEY(principal), NULL);
	if (!j->backend)
		j->backend = conf_backend_names[c->backend];
	if (strcmp(j->backend, "native") && strcmp(j->backend, "docker")) {
		snprintf(err, errlen, "unknown backend \"%.40s\" (native or docker)", j->backend);
		return false;
	}
	return true;
}

/* The program file: a plain name, in the scratch or, for a session's
 * inline code, in exec.dir or a name of sbx's own; none for a session's
 * entry or command.  And whether its workspace is executable. */
static bool load_program(const struct conf *c, jv exec, struct job *j, char *err, size_t errlen)
{
	j->file = rec_str(exec, "file", NULL);
	j->workspace = rec_str(exec, "workspace", NULL);
	jv fv = rec_get(exec, "file");
	bool file_null = jv_get_kind(fv) == JV_KIND_NULL || jv_get_kind(fv) == JV_KIND_INVALID;
	jv_free(fv);
	if (j->file ? !*j->file || strchr(j->file, '/') || !strcmp(j->file, "..") || !strcmp(j->file, ".")
		    : !file_null || !j->workspace) {
		snprintf(err, errlen, j->file || !j->workspace ? "exec.file must be a plain file name"
							       : "exec.file must be a plain file name or null");
		return false;
	}
	j->dir = rec_str(exec, "dir", NULL);
	if (j->dir ? !j->workspace || !j->file || strlen(j->dir) != sizeof NS_RESERVED + 16 ||
			     strncmp(j->dir, NS_RESERVED "-", sizeof NS_RESERVED) ||
			     strspn(j->dir + sizeof NS_RESERVED, "0123456789abcdef") != 16
		   : rec_has(exec, "dir")) {
		snprintf(err, errlen, "exec.dir must be " NS_RESERVED "-<16 hex digits>, for a session's inline code");
		return false;
	}
	bool inst = false;
	rec_bool(exec, REQ_KEY(install), &inst);
	if (j->workspace && j->file && !j->dir && !ns_reserved(j->file) && !inst) {
		snprintf(err, errlen, "a session's inline code goes in exec.dir or a file named " NS_RESERVED "-…, never over a "
				      "workspace file");
		return false;
	}
	bool wx = false;
	if (rec_has(exec, "workspace_exec") && (!rec_bool(exec, "workspace_exec", &wx) || (wx && !j->workspace))) {
		snprintf(err, errlen, "exec.workspace_exec must be true or false, with exec.workspace");
		return false;
	}
	if (wx && !c->workspace_exec) {
		snprintf(err, errlen, "exec.workspace_exec: the configuration keeps workspaces noexec (workspace_exec = false in %s)",
			 c->path);
		return false;
	}
	j->work_exec = wx;
	return true;
}

/* The commands, their environment and what they see of the host: only
 * what the configuration gives the language. */
static bool load_commands(const struct conf *c, jv exec, struct job *j, char *err, size_t errlen)
{
	bool sok;
	j->run = job_load_strv(rec_get(exec, "run"), false, true, "run", err, errlen, &sok);
	if (!sok)
		return false;
	j->compile = job_load_strv(rec_get(exec, "compile"), true, true, "compile", err, errlen, &sok);
	if (!sok)
		return false;
	/* Its outputs live in the run's own directory (backend.h's own): a
	 * program file of its own is for one stage. */
	if (j->compile && j->workspace && !j->dir) {
		snprintf(err, errlen, "a session's compiled code goes in exec.dir (" NS_RESERVED "-<16 hex digits>)");
		return false;
	}
	/* check-names: exec.env, NAME=value strings, is not the request's env */
	j->env = job_load_strv(rec_get(exec, "env"), true, false, "env", err, errlen, &sok);
	if (!sok)
		return false;
	for (char **e = j->env; e && *e; e++)
		if (!strchr(*e, '=') || **e == '=') {
			snprintf(err, errlen, "exec.env entries must be NAME=value");
			return false;
		}
	j->binds = job_load_strv(rec_get(exec, "binds"), true, false, "binds", err, errlen, &sok);
	if (!sok)
		return false;
	for (char **b = j->binds; b && *b; b++)
		if ((*b)[0] != '/' || strstr(*b, "/..")) {
			snprintf(err, errlen, "exec.binds entries must be absolute paths without ..");
			return false;
		}
	j->rootfs = rec_str(exec, "rootfs", NULL);
	j->image = rec_str(exec, "image", NULL);
	/* What a job may expose of the host is what the configuration says for
	 * its language, nothing a hand-written job adds. */
	{
		const struct conf_lang *cl = conf_lang(c, j->language);
		if (!cl) {
			snprintf(err, errlen, "language \"%.40s\" is not in the configuration (%s)", j->language, c->path);
			return false;
		}
		for (char **b = j->binds; b && *b; b++) {
			bool known = false;
			for (char **k = cl->binds; k && *k && !known; k++)
				known = !strcmp(*k, *b);
			if (!known) {
				snprintf(err, errlen, "exec.binds: \"%.100s\" is not among the binds the configuration gives %s", *b, cl->name);
				return false;
			}
		}
		/* Which files become executable, and which hosts an install
		 * may reach, is the configuration's too. */
		j->outputs = cl->outputs;
		j->registries = cl->registries;
		if ((j->rootfs || cl->rootfs) && (!j->rootfs || !cl->rootfs || strcmp(j->rootfs, cl->rootfs))) {
			snprintf(err, errlen, "exec.rootfs differs from the configuration's rootfs for %s", cl->name);
			return false;
		}
		if ((j->image || cl->image) && (!j->image || !cl->image || strcmp(j->image, cl->image))) {
			snprintf(err, errlen, "exec.image differs from the configuration's image for %s", cl->name);
			return false;
		}
	}
	return true;
}

/* A background job (job.c's req_process), its terminal, and where in
 * its workspace the program starts. */
static bool load_process(const struct conf *c, jv exec, struct job *j, char *err, size_t errlen)
{
	bool bg = false;
	if (rec_has(exec, REQ_KEY(background)) &&
	    (!rec_bool(exec, REQ_KEY(background), &bg) || (bg && (j->cell || j->install || !c->max_processes)))) {
		snprintf(err, errlen, "exec.background must be true or false; true not for a cell or an install, nor with "
				      "max_processes 0");
		return false;
	}
	j->background = bg;
	jv t = rec_get(exec, REQ_KEY(tty));
	if (jv_get_kind(t) != JV_KIND_INVALID) {
		double r = 0, cl = 0;
		if (!bg || jv_get_kind(t) != JV_KIND_OBJECT || !rec_num(t, "rows", &r) || !rec_num(t, "cols", &cl) ||
		    r != floor(r) || cl != floor(cl) || r < 1 || r > 1000 || cl < 1 || cl > 1000) {
			jv_free(t);
			snprintf(err, errlen, "exec.tty must be {\"rows\", \"cols\"}, 1 to 1000 each, of a background job");
			return false;
		}
		j->rows = (unsigned)r;
		j->cols = (unsigned)cl;
	}
	jv_free(t);
	if (rec_has(exec, REQ_KEY(cwd))) {
		size_t n;
		char why[128];
		j->cwd = rec_str(exec, REQ_KEY(cwd), &n);
		if (!j->cwd || !j->workspace || !job_path_ok(j->cwd, n, why, sizeof why)) {
			snprintf(err, errlen, "exec.cwd must be a relative path without \"..\", with exec.workspace");
			return false;
		}
	}
	return true;
}

/* Where it runs (a session's workspace), its network, and whether it is
 * an install: exactly the configured package manager, through its proxy. */
static bool load_place(const struct conf *c, jv exec, struct job *j, char *err, size_t errlen)
{
	if (j->workspace) {
		/* STATE_DIR/sessions/ID, ID exactly as sess.c makes them */
		if (!state_is_session_dir(c, j->workspace)) {
			snprintf(err, errlen, "exec.workspace must be a session directory under %s/sessions", c->state_dir);
			return false;
		}
	}
	/* exec.network: false, true (the host's network) or host patterns
	 * (through the proxy, egress.h) */
	jv nv = rec_get(exec, REQ_KEY(network));
	jv_kind nk = jv_get_kind(nv);
	if (nk == JV_KIND_ARRAY) {
		bool sok;
		j->egress = job_load_strv(nv, false, true, "network", err, errlen, &sok);
		if (!sok)
			return false;
	} else {
		jv_free(nv);
		if (nk == JV_KIND_TRUE)
			j->network = true;
		else if (nk != JV_KIND_FALSE && nk != JV_KIND_INVALID && nk != JV_KIND_NULL) {
			snprintf(err, errlen, "exec.network must be false, true or a list of host patterns");
			return false;
		}
	}
	for (char **h = j->egress; h && *h; h++) {
		char why[400];
		if (!hostpat_ok(*h, why, sizeof why)) {
			snprintf(err, errlen, "exec.network: %s", why);
			return false;
		}
		if (!c->network.host && !hostpat_covers(c->network.hosts, *h)) {
			snprintf(err, errlen, "exec.network: \"%.300s\" is not within the configuration's network (%s)", *h, c->path);
			return false;
		}
	}
	bool install = false;
	rec_bool(exec, REQ_KEY(install), &install);
	j->install = install;
	bool cell = false;
	if (rec_has(exec, "kernel") && (!rec_bool(exec, "kernel", &cell) || (cell && (!j->workspace || install || j->file)))) {
		snprintf(err, errlen, "exec.kernel must be true or false; true (a cell) with exec.workspace, no exec.file, no install");
		return false;
	}
	j->cell = cell;
	bool reset = false;
	if (rec_has(j->rec, REQ_KEY(reset)) && (!rec_bool(j->rec, REQ_KEY(reset), &reset) || !cell)) {
		snprintf(err, errlen, "\"%s\" must be true or false, in a cell", REQ_KEY(reset));
		return false;
	}
	j->reset = reset;
	if (install && !j->workspace) {
		snprintf(err, errlen, "exec.install needs exec.workspace");
		return false;
	}
	if (j->network && !c->network.host) {
		snprintf(err, errlen, "exec.network: true (the host's network) is not allowed by the configuration (%s)", c->path);
		return false;
	}
	/* An install may reach the network: it must be exactly the
	 * configured package manager on package names, not a hand-written
	 * command that borrows the permission. */
	if ((install || cell) && (j->network || j->egress)) {
		snprintf(err, errlen, "exec.network of an install or a cell must be false: an install reaches its registries "
				      "through its proxy, a kernel nothing");
		return false;
	}
	if (install && !registry_install_matches(c, conf_lang(c, j->language), j->run)) {
		snprintf(err, errlen, "exec.run of an install must be the language's install command with package names");
		return false;
	}
	return load_process(c, exec, j, err, errlen);
}

/* Its limits, within this configuration's ceilings; its files. */
static bool load_limits(const struct conf *c, jv rec, jv limits, struct job *j, char *err, size_t errlen)
{
	if (!limits_from_json(limits, REQ_KEY(limits), &j->lim, err, errlen))
		return false;
	/* Which of them the request gave: only the presence of its field,
	 * the value is always the resolved one above. */
	for (int i = 0; i < LIM_N; i++) {
		if (!limit_defs[i].req)
			continue;
		jv v = rec_get(rec, limit_defs[i].req);
		jv_kind k = jv_get_kind(v);
		jv_free(v);
		if (k != JV_KIND_INVALID && k != JV_KIND_NULL)
			j->lim_given |= 1u << i;
	}
	if (j->compile) {
		jv cl = rec_get(rec, REQ_KEY(compile_limits));
		bool lok = limits_from_json(cl, REQ_KEY(compile_limits), &j->clim, err, errlen);
		jv_free(cl);
		if (!lok)
			return false;
	}
	/* A background job's timeout is the session's life at most. */
	struct limits lim = j->lim;
	if (j->background && lim.timeout_ms <= c->session_max_life_ms)
		lim.timeout_ms = limit_defs[LIM_timeout_ms].min;
	if (!job_limits_ok(c, &lim, REQ_KEY(limits), err, errlen) ||
	    (j->compile && !job_limits_ok(c, &j->clim, REQ_KEY(compile_limits), err, errlen)))
		return false;
	{
		jv files = rec_get(rec, REQ_KEY(files));
		bool fok = job_files_load(c, files, j->dir ? NULL : j->file, &j->files, &j->nfiles, err, errlen);
		jv_free(files);
		if (!fok)
			return false;
	}
	if (j->code_len > c->max_code_size) {
		snprintf(err, errlen, "code exceeds max_code_size");
		return false;
	}
	return true;
}

bool job_load(const struct conf *c, jv rec, struct job *j, char *err, size_t errlen)
{
	memset(j, 0, sizeof *j);
	j->rec = rec;
	jv exec = rec_get(rec, REQ_KEY(exec));
	jv limits = rec_get(rec, REQ_KEY(limits));
	bool ok = false;
	if (jv_get_kind(exec) != JV_KIND_OBJECT || jv_get_kind(limits) != JV_KIND_OBJECT)
		snprintf(err, errlen, "not a job (no \"%s\" and \"%s\"): pass requests through sbx-validate first", REQ_KEY(exec),
			 REQ_KEY(limits));
	else
		ok = load_record(c, rec, j, err, errlen) && load_program(c, exec, j, err, errlen) &&
		     load_commands(c, exec, j, err, errlen) && load_place(c, exec, j, err, errlen) &&
		     load_limits(c, rec, limits, j, err, errlen);
	if (ok && rec_has(exec, REQ_KEY(tests)) && (j->cell || j->workspace || j->install)) {
		snprintf(err, errlen, "exec.tests: a judged job runs each test in a fresh sandbox, not in a session, a kernel or an install");
		ok = false;
	} else if (ok && rec_has(exec, REQ_KEY(tests)))
		ok = (j->judge = judge_load(c, rec, exec, j, err, errlen)) != NULL;
	if (ok && !j->judge && rec_has(rec, REQ_KEY(tests))) {
		snprintf(err, errlen, "\"%s\" without exec.tests: pass requests through sbx-validate", REQ_KEY(tests));
		ok = false;
	}
	jv_free(exec);
	jv_free(limits);
	if (!ok) {
		/* Keep only the record, for the caller's invalid record. */
		jv keep = j->rec;
		j->rec = jv_invalid();
		job_free(j);
		j->rec = keep;
	}
	return ok;
}

void job_free(struct job *j)
{
	judge_free(j->judge);
	job_files_free(j->files, j->nfiles);
	util_strv_free(j->compile);
	util_strv_free(j->run);
	util_strv_free(j->env);
	util_strv_free(j->binds);
	util_strv_free(j->egress);
	jv_free(j->rec);
	memset(j, 0, sizeof *j);
	j->rec = jv_invalid();
}
