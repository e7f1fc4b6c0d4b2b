/* dock: the docker backend.  One stage of one job is one disposable
 * container, driven through the Docker Engine API over the daemon's socket
 * (DOCKER_HOST: unix:// or tcp://; the docker CLI is not needed), from the
 * caller's event loop like a native box, with the same struct stage_result.
 * See dock.c for the theory of operation; the rest of sbx reaches it
 * through backend.h (docker.c), not this header.  Its parts: dock.c a
 * stage's container, dock_cg.c its accounting group, dock_api.c the
 * Engine API client, dock_sys.c the daemon, leftovers, images and scratch
 * directories, dock_int.h what they share.
 *
 * A struct dock_sys is made once per process: where the daemon is, what it
 * is, and the cgroup parent under which each stage's container gets a group
 * of its own for accounting.  dock_sys_init never fails hard: a daemon that
 * is down makes `why` say so with the fix, and every job then becomes an
 * internal_error carrying that message until the daemon answers again
 * (dock_ready retries).  A struct dock is one stage; its owner frees it
 * after the done callback.
 */
#ifndef SBX_DOCK_H
#define SBX_DOCK_H

#include <stdbool.h>
#include <stdio.h>

#include <jv.h>

#include "backend.h"
#include "cg.h"
#include "conf.h"
#include "loop.h"

struct dock_sys {
	const struct conf *conf;
	char host[512];            /* DOCKER_HOST as given, for messages */
	bool tcp;
	char path[108];            /* unix socket */
	char node[256], service[16];
	char owner[48];            /* "<pid>.<start time>": labels what this process made */
	char *state;               /* STATE_DIR/docker: scratch directories */
	unsigned long seq;
	bool addr_ok;              /* DOCKER_HOST is usable */
	bool ok;                   /* the daemon answered */
	bool cg_tried;
	char why[600];             /* else: the cause and the fix */
	char version[64], api[16], cgroup_driver[32];
	bool cg_ok;                /* per-stage accounting groups usable */
	struct cg_sys cg;
	char **pending;            /* accounting groups still busy when their stage ended */
	size_t npending;
	int uid;                   /* the containers' user: conf uid + 1, as the native program's */
};

/* Where the daemon is (DOCKER_HOST); no connection yet.  Returns 0. */
int dock_sys_init(struct dock_sys *d, const struct conf *c);
void dock_sys_free(struct dock_sys *d);
/* Is the daemon there?  The first time it answers: its version, and the
 * removal of what dead sbx processes left behind (containers labelled
 * sbx.owner, scratch directories, accounting groups).  Asks again while it
 * does not answer; d->why then says why, with the fix. */
bool dock_ready(struct dock_sys *d);
/* Whether the engine has an image: 200 yes, 404 no, else it did not say
 * (one synchronous API call). */
int dock_image_status(struct dock_sys *d, const char *image);
/* The ID ("sha256:" and 64 hex digits) of the image a name means now, in
 * id (at least 72 bytes); false, id left "", if the engine does not answer
 * within 2 s or has no such image.  One synchronous API call (~1 ms, against a
 * stage's ~150 ms of container making). */
bool dock_image_id(struct dock_sys *d, const char *image, char *id, size_t len);
/* Pull every configured image, progress on `progress`; 0 if all arrived. */
int dock_pull(struct dock_sys *d, FILE *progress);

/* A stage's scratch directory: a size-limited noexec tmpfs mounted at a
 * fresh host directory under d->state (so the daemon can bind it), owned
 * by the containers' user.  Returns the path (caller frees, and removes it
 * with dock_scratch_remove) or NULL with err. */
char *dock_scratch(struct dock_sys *d, uint64_t size, char *err, size_t errlen);
void dock_scratch_remove(const char *dir);

struct dock_spec {
	const struct stage_spec *st;    /* argv, env, limits, stdin, network, binds, outputs, deps */
	const char *image;
	const char *scratch;            /* host directory bound at /scratch */
	bool workspace;                 /* it is a session's workspace, which the program writes: no name in it is trusted */
	const char *own;                /* with workspace: the run's own directory or file in it (backend.h), or NULL */
	bool own_dir;
	const char *own_host;           /* its dock_scratch directory: its tmpfs (own_dir), or that name in it, is
					   bound over that name */
	const char *run_id;             /* the job's id, for the sbx label */
};

struct dock;
/* Start a stage.  Never NULL: failures come through done as STAGE_INTERNAL. */
struct dock *dock_start(struct dock_sys *d, struct loop *l, const struct dock_spec *spec, stage_done_fn done, void *arg);
void dock_cancel(struct dock *k);
const struct stage_result *dock_result(const struct dock *k);
void dock_free(struct dock *k);

#endif
