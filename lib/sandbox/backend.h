/* backend: the seam between the orchestration (lib/run/run.c, sbx-run's
 * --check) and a sandbox backend.  Two implement it: native (native.c over
 * box.c: namespaces, cgroups, seccomp; the default) and docker (dock_sys.c
 * over dock.c: one container per stage).  Above this header nothing asks
 * which backend it has: a job names one, the orchestration finds it by
 * name and drives it through its operations and opaque handles.
 *
 * Ownership.  A backend is made once per process (backend_native,
 * backend_docker) and freed with bk_free by its maker.  A scratch belongs
 * to the run that opened it and outlives its stages (bk_scratch_close
 * after the last).  A stage belongs to whoever started it; its done
 * callback comes from the loop, never inside bk_start, and the stage is
 * freed (bk_stage_free) after it; its result lives until then.
 */
#ifndef SBX_BACKEND_H
#define SBX_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <jv.h>

#include "cap.h"
#include "conf.h"
#include "job.h"
#include "layout.h"
#include "loop.h"

enum stage_status { STAGE_EXITED, STAGE_SIGNALED, STAGE_TIMEOUT, STAGE_OOM, STAGE_CANCELLED, STAGE_INTERNAL };

/* Which limits were enforced, for the result's "limits_enforced". */
enum {
	ENF_NAMESPACES = 1, ENF_SECCOMP = 2, ENF_MEMORY = 4, ENF_CPU = 8, ENF_PIDS = 16, ENF_RLIMITS = 32,
	ENF_TIMEOUT = 64, ENF_MEMORY_RLIMIT = 128,
};
/* The bits as the contract names them: those held, and those of the
 * configured limits a run should have that did not hold (memory_rlimit
 * and rlimits are fallbacks and extras, never "missing"). */
jv backend_enforced_json(unsigned bits);
jv backend_missing_json(unsigned bits);

/* How a stage ended, the same on every backend. */
struct stage_result {
	enum stage_status status;
	int exit_code;             /* STAGE_EXITED */
	int signal;                /* STAGE_SIGNALED (and OOM/timeout kills) */
	char error[512];           /* STAGE_INTERNAL */
	int noexec;                /* STAGE_INTERNAL: the program itself could not be executed (errno) */
	struct cap_buf out, err;
	double duration_ms;        /* program start to exit (or kill) */
	double cpu_ms;             /* < 0 unknown */
	int64_t mem_peak;          /* < 0 unknown */
	unsigned enforced;
	jv timings;                /* object of phase -> ms, or jv_null() */
	jv egress;                 /* an install's: its proxy's records (egress.h), else jv_null() */
};

/* A job's files.  `dir` is the supervisor's view of them (a directory fd:
 * the program and its files are written there, the compile cache and the
 * artifact scan read it); how a stage's sandbox sees them is the
 * backend's (a detached mount it takes, a host directory the daemon
 * binds).  The rest of each backend's scratch follows this header. */
struct bk_scratch {
	struct backend *be;
	int dir;
};

/* A stage: one program in one fresh sandbox.  Opaque. */
struct bk_stage;

struct stage_spec {
	char *const *argv;
	char *const *env;          /* "NAME=value", NULL-terminated; the whole environment */
	const struct limits *lim;
	struct bk_scratch *scratch; /* NULL: none (probes) */
	bool compile;              /* the compile stage, which a run stage on the same scratch follows */
	char *const *outputs;      /* run stage of a compiled language: its executables, see ns_attach_work */
	bool deps;                 /* a session's program: its installed packages, see ns_attach_work */
	bool work_exec;            /* a session's workspace executable (conf workspace_exec), see ns_attach_work */
	char *const *egress;       /* an install: the hosts its proxy may reach (egress.h), or NULL */
	const char *stdin_data;
	size_t stdin_len;
	/* > 0: the program's stdin is this fd instead of stdin_data, whose
	 * other end the caller writes: a kernel's channel (lib/run/cell.h), a
	 * background job's pipe; backends with `kernels` only.  start takes a
	 * copy of its own: the caller may close it after. */
	int chan;
	/* chan is a terminal's (a pseudo-terminal the caller holds the
	 * master of): the program's stdin, stdout and stderr, and its
	 * controlling terminal.  Its output then comes to the caller through
	 * the master, not through the stage. */
	bool tty;
	const char *cwd;           /* where the program starts, relative to its scratch or workspace; NULL: there */
	bool network;
	/* > 0: the network namespace the sandbox joins (a session's, which
	 * its runs, kernels and processes share: netns_new made it) rather
	 * than one of its own; backends with `kernels` only.  Borrowed for
	 * start. */
	int netns;
	/* > 0: with egress in netns, the proxy's listening socket there, made
	 * by the caller (a port of its own: a session's runs may each have a
	 * proxy at once), which the backend serves instead of having init
	 * make one at EGRESS_PORT.  Borrowed: the caller closes it after the
	 * stage. */
	int egress_listen;
	const char *rootfs;        /* native: NULL is the host's tree */
	char *const *binds;
	const char *image;         /* docker: the language's image */
	bool timings;
	const char *label;         /* the job's id: docker's label; with timings native's teardown line */
	/* Optional: told of the program's output as it arrives (stream 1
	 * stdout, 2 stderr), before any cap, from the loop; for live output.
	 * The result's capture is unchanged. */
	void (*on_output)(void *arg, int stream, const char *data, size_t len);
	void *output_arg;
};

typedef void (*stage_done_fn)(void *arg);

/* What the orchestration may ask a backend; every operation is present. */
struct backend_ops {
	/* The job's files: a session's workspace directory (its files
	 * executable if exec), or else a fresh scratch of `size` bytes.
	 * With a workspace, `own` (or NULL) is a top-level name in it that
	 * is the run's alone, a session's inline code's directory (own_dir)
	 * or program file (layout.h): it lives where no other sandbox of the
	 * session reaches (a private tmpfs of `size` bytes), every stage of
	 * the run sees it at that name, and scratch_write puts it (or paths
	 * beneath it) there.  Other programs of the session (a kernel's
	 * thread) could otherwise rewrite the program, or what the compiler
	 * made, before the run stage runs it.  NULL with err. */
	struct bk_scratch *(*scratch_open)(struct backend *be, const char *workspace, const char *own, bool own_dir,
					   bool exec, uint64_t size, char *err, size_t errlen);
	/* Before each stage: make the scratch ready for it.  1 if that took
	 * work (native: a clone of the mount), 0 if not, -1 with err. */
	int (*scratch_stage)(struct bk_scratch *s, bool compile, char *err, size_t errlen);
	/* Write a file beneath the scratch (parents made, links never
	 * followed, whatever is at the name replaced), owned by the sandbox
	 * user.  -1 with errno. */
	int (*scratch_write)(struct bk_scratch *s, const char *path, const char *data, size_t len, mode_t mode);
	void (*scratch_close)(struct bk_scratch *s);

	struct bk_stage *(*start)(struct backend *be, struct loop *l, const struct stage_spec *sp, stage_done_fn done,
				  void *arg);
	void (*cancel)(struct bk_stage *st);          /* the result says STAGE_CANCELLED */
	/* Send sig to the program's process group (a background job's
	 * process_signal), once it runs; the stage ends as the program does.
	 * False if it cannot (not running, or a backend with no `kernels`). */
	bool (*signal)(struct bk_stage *st, int sig);
	const struct stage_result *(*result)(const struct bk_stage *st);
	void (*stage_free)(struct bk_stage *st);
	/* Read the output waiting now (through on_output), before the loop
	 * would: a kernel's cell ends when its reply comes, and what the
	 * kernel wrote before the reply belongs to that cell. */
	void (*flush)(struct bk_stage *st);

	/* The identity of the job's compiler, for the compile cache's key:
	 * natively its binary's (path, device, inode, size, mtime) in its
	 * tree; docker the ID of the image its name means now (a pull
	 * changes the compiler).  False if unknown: not cached. */
	bool (*compiler_id)(struct backend *be, const struct job *j, char *id, size_t len);
	/* Whether a language can run here (for --check); if not, err says why, and
	 * *fix if that belongs to the report's fixes.  May add the
	 * backend's own fields to *info (docker: "image"). */
	bool (*lang_ready)(struct backend *be, const struct conf_lang *l, jv *info, char *err, size_t errlen, bool *fix);
	/* A network namespace for a session's sandboxes to share
	 * (stage_spec.netns): its own loopback, up, and nothing else; an fd
	 * the caller closes, or -1 with err (the docker backend: none). */
	int (*netns_new)(struct backend *be, char *err, size_t errlen);
	/* A TCP socket (IPv4, non-blocking, close-on-exec) made in such a
	 * namespace, for a connection to its loopback (a session's port,
	 * opened to a person); -1 with err. */
	int (*netns_socket)(struct backend *be, int netns, char *err, size_t errlen);
	/* Sandboxes made ahead of the jobs of a stream (box_pool); drained
	 * before exit. */
	void (*pool)(struct backend *be, struct loop *l, size_t n, bool one_now);
	void (*drain)(struct backend *be);
	/* --check: the backend's own part of the report (an object with at
	 * least "backend", "usable" and "fixes"); *degraded if it enforces
	 * less than configured. */
	jv (*check)(struct backend *be, bool *degraded);
	/* Fetch what its languages need (docker: the images), progress on
	 * `progress`; 0 if all arrived, 1 if some did not, 2 if it cannot. */
	int (*pull)(struct backend *be, FILE *progress);
	void (*free)(struct backend *be);
};

struct backend {
	const char *name;          /* the job's "backend" */
	const char *where;         /* where a stage runs, for messages: "the sandbox", "its container" */
	const struct backend_ops *ops;
	const struct conf *conf;
	/* Set by the maker: broken, this process can make no sandbox of this
	 * backend (every job is an internal_error with this text); warn, it
	 * enforces less than configured (said once at start).  "" if not. */
	bool broken;
	/* It can run kernels and background jobs (stage_spec.chan, tty,
	 * signal), and a session's sandboxes in one network namespace
	 * (netns_new): the native backend. */
	bool kernels;
	char why[1024];
	char warn[1536];
};

/* The native backend, for argv's process (hidden in sandboxes' inits).  As
 * non-root this moves the process into a user and mount namespace of its
 * own.  Never NULL: a backend that cannot work is broken, with why. */
struct backend *backend_native(const struct conf *c, char **argv);
/* The docker backend (DOCKER_HOST); with connect, asks the daemon now
 * (which also removes what dead sbx processes left), else at its first job.
 * A daemon that does not answer sets why; it is asked again per job. */
struct backend *backend_docker(const struct conf *c, bool connect);

static inline void bk_free(struct backend *be)
{
	if (be)
		be->ops->free(be);
}
static inline struct bk_scratch *bk_scratch_open(struct backend *be, const char *workspace, const char *own,
						 bool own_dir, bool exec, uint64_t size, char *err, size_t errlen)
{
	return be->ops->scratch_open(be, workspace, own, own_dir, exec, size, err, errlen);
}
/* For scratch_write: where `path` goes in a run's own tmpfs (backend.h's
 * scratch_open), or NULL when it is not the run's own. */
static inline const char *bk_own_path(const char *own, bool own_dir, const char *path)
{
	if (own_dir)
		return ns_beneath(own, path);
	return own && !strcmp(path, own) ? path : NULL;
}
/* Before each stage of a run with an own name: its mount point in the
 * workspace `dir` (an empty directory or file, made by the supervisor, as
 * run.c's remove_own removed whatever was there), which must be of that
 * type and not a link if a program of the session made it first.  -1 with
 * err. */
int bk_own_placeholder(int dir, const char *own, bool own_dir, char *err, size_t errlen);
static inline void bk_scratch_close(struct bk_scratch *s)
{
	if (s)
		s->be->ops->scratch_close(s);
}
static inline struct bk_stage *bk_start(struct backend *be, struct loop *l, const struct stage_spec *sp,
					stage_done_fn done, void *arg)
{
	return be->ops->start(be, l, sp, done, arg);
}

/* --check's "languages": each configured language's version as a stage
 * of this backend sees it, all probed at once (unless !usable), as
 * [{"name", <the backend's fields>, "available", "version", "error"?}];
 * fixes found are appended to *fixes. */
jv bk_check_languages(struct backend *be, bool usable, jv *fixes);

#endif
