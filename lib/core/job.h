/* job: the contract between sbx-validate and sbx-run.
 *
 * sbx-validate turns a request into a job: it checks every field a user may
 * give, resolves every limit from the configuration (defaults, per-language
 * overrides, ceilings) and writes the language's commands into the record
 * under "limits", "compile_limits" and "exec".  sbx-run then reads only those
 * resolved fields and the data fields (code, stdin, files), never the
 * request's own "timeout" or "memory": policy is decided once, in one place.
 *
 * job_load is sbx-run's side.  It kind-checks everything again (a job can be
 * written by hand) and refuses limits above the configuration's ceilings, so
 * skipping sbx-validate cannot buy a bigger sandbox.
 *
 * A struct job owns its record and the copies it makes; job_free releases
 * both.  Borrowed `const char *` fields point into the record.
 *
 * Files: job.c the request side (each field's check: req.h's table says
 * which fields there are), job_load.c sbx-run's, job_files.c what both
 * share of a request's files.  An install's packages are registry.h's; whether
 * a language's programs are installed, probe.h's.
 */
#ifndef SBX_JOB_H
#define SBX_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "conf.h"

struct job_file {
	char *path;
	char *data;
	size_t len;
};

struct job {
	jv rec;
	char id[160];              /* printable form of the record's id */
	const char *language;
	const char *code;
	size_t code_len;
	const char *stdin_data;
	size_t stdin_len;
	struct job_file *files;
	size_t nfiles;
	const char *file;          /* the program's file name, or NULL (a session's entry or command) */
	const char *dir;           /* a session's inline code: its directory in the workspace, or NULL */
	char **compile, **run, **env, **binds; /* NULL-terminated; compile may be NULL */
	char *const *outputs;      /* the configuration's, for the language (borrowed), or NULL */
	char *const *registries;   /* the same: the hosts an install may reach */
	const char *rootfs, *image, *backend, *workspace;
	const char *principal;     /* the sbx-mcp HTTP token the run is for (its digest), or NULL */
	bool network;              /* the host's own network (conf network = "host") */
	char **egress;             /* else the host patterns its proxy lets through (egress.h), or NULL */
	bool install;              /* a package install into the workspace */
	bool work_exec;            /* the workspace is executable (conf workspace_exec) */
	bool artifacts;            /* return the files the run made or changed ("artifacts": true) */
	bool cell;                 /* code for the session's kernel (cell.h); run is the kernel's command */
	bool reset;                /* a cell: restart the kernel first */
	bool background;           /* runs beside other jobs; stdin and signals come while it runs */
	unsigned rows, cols;       /* a background job's terminal, or 0 */
	const char *cwd;           /* where in its workspace the program starts, or NULL */
	unsigned lim_given;        /* 1 << LIM_x for each limit the request gave itself (not null), not
				    * defaulted: a cell's kernel restarts for a memory, cpus or pids it gave */
	struct judge *judge;       /* "tests": the program judged on each (judge.h), or NULL */
	struct limits lim, clim;
};

struct judge;

/* s with the placeholders "{memory}" (bytes), "{memory_mib}" and "{cpus}"
 * (whole cores, at least 1) replaced by lim's values, so a runtime can size
 * its heap and threads to a sandbox it cannot see, and "{dir}" by dir (the
 * program's directory: "." for NULL, a session's inline code's own); the
 * caller frees.  job_from_request expands a language's compile, run and
 * env with them. */
char *job_expand(const char *s, const struct limits *lim, const char *dir);
/* The same over a NULL-terminated vector; free with util_strv_free. */
char **job_expand_strv(char *const *v, const struct limits *lim);

/* Request -> job, or an invalid record saying what is wrong and what is
 * allowed.  Consumes req. */
jv job_from_request(const struct conf *c, jv req);
/* Would a request's "network" of v (borrowed) be allowed?  False with err
 * (a session's default, checked when the session is made). */
bool job_network_ok(const struct conf *c, jv v, char *err, size_t errlen);

/* Job record -> struct job.  Consumes rec into j->rec.  On failure err says
 * why and j holds only the record (for an invalid record); job_free it
 * either way. */
bool job_load(const struct conf *c, jv rec, struct job *j, char *err, size_t errlen);
void job_free(struct job *j);

/* Pieces of both sides that judge.c shares (all borrow their jv). */
/* "WHAT SIZE AFTER, exceeds KEY MAX", sizes for people: a request's part
 * over its ceiling. */
void job_too_big(char *err, size_t errlen, const char *what, const char *after, uint64_t n, const char *key, uint64_t max);
/* The "args" of a request (or of one of its tests). */
bool job_args_ok(jv args, char *err, size_t errlen);
/* The request's (or a test's) timeout, memory, cpus and pids over *run,
 * each within its ceiling. */
bool job_req_limits(const struct conf *c, jv req, struct limits *run, char *err, size_t errlen);
/* A "files" object, decoded and checked (paths, max_files,
 * max_files_size); `program`, the program file's name, may not be one.
 * Free with job_files_free. */
bool job_files_load(const struct conf *c, jv files, const char *program, struct job_file **out, size_t *nout, char *err,
		    size_t errlen);
void job_files_free(struct job_file *f, size_t n);
/* v (consumed) as a NULL-terminated copy of its strings; exec.WHAT in
 * errors; *ok false on error. */
char **job_load_strv(jv v, bool allow_null, bool need_one, const char *what, char *err, size_t errlen, bool *ok);
/* Limits above what this configuration would ever grant mean the job did
 * not come from sbx-validate with it: false with err naming WHAT. */
bool job_limits_ok(const struct conf *c, const struct limits *l, const char *what, char *err, size_t errlen);

/* A relative path without "..", empty components, NUL or a leading "/";
 * on failure `err` says which rule it broke. */
bool job_path_ok(const char *path, size_t len, char *err, size_t errlen);

/* Fresh id: millisecond time and 48 random bits, unique across processes. */
void job_new_id(char *buf, size_t len);

#endif
