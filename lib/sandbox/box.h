/* box: the native sandbox.  One box is one stage (compile or run) of one
 * job: a tree of processes in fresh namespaces, watched by the supervisor
 * from an event loop.  See box.c for the theory of operation; the rest of
 * sbx reaches it through backend.h (native.c), not this header.  Its
 * parts: box.c the supervisor, box_sys.c the system and the pool,
 * box_init.c the sandbox's init and program, box_tmpl.c the read-only
 * roots, box_scratch.c the scratch mounts, box_int.h what they share.
 *
 * A struct box_sys is made once per process (what the machine offers,
 * cgroup parents, the seccomp program, the root templates); boxes borrow
 * it.  A struct box is
 * owned by whoever started it and must be box_free'd after its done
 * callback; its result (and the captured output in it) lives until then.
 */
#ifndef SBX_BOX_H
#define SBX_BOX_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jv.h>

#include "backend.h"
#include "cap.h"
#include "cg.h"
#include "conf.h"
#include "job.h"
#include "loop.h"
#include "pin.h"
#include "slot.h"

struct box;

/* A built read-only root (ns.h), kept as the mount namespace it lives in;
 * each sandbox's mount namespace is made as a copy of it. */
struct box_tmpl {
	int mnt_fd;                /* nsfs fd; -1: slot unused */
	bool network;              /* what it was built for */
	char *rootfs;
	char **binds;
	int64_t born_ns;           /* CLOCK_MONOTONIC: built then (rebuilt when old) */
	int64_t checked_ns;        /* its key was last found to hold then */
	char key[PIN_KEY_HEX + 1]; /* what it was built from (pin_key) */
	char mounts[PIN_MNT_HEX + 1]; /* and the mounts under it then (pin_mounts) */
	bool stale;                /* pinned too long ago: rebuild off the job's path */
};
#define BOX_TMPLS 4

struct box_sys {
	const struct conf *conf;
	bool root;                 /* euid 0: map sandboxes to conf->uid, conf->uid+1 */
	unsigned kern;             /* kern_probe(): the kernel's features */
	bool own_userns;           /* non-root: we live in a user namespace of our own */
	struct cg_sys cg;
	bool cg_ok;
	struct sock_fprog filter;
	char **argv;               /* ours, to hide in the sandbox's init */
	char userns_why[256];      /* why user namespaces are unusable, or "" */
	struct loop *loop;         /* where warm sandboxes are watched */
	struct box *warm;          /* pre-spawned sandboxes waiting for a job */
	struct box *reaping;       /* freed boxes whose init is still exiting */
	size_t nwarm, pool;        /* how many there are, how many to keep */
	unsigned long started;     /* stages started, to warm up only for streams */
	struct box_tmpl tmpl[BOX_TMPLS];
	struct pin pin;            /* templates shared with other processes */
	struct slot_sys slots;     /* network namespaces kept between runs */
	int self_mnt_fd, root_fd;  /* our own mount namespace and root, to return to */
	int self_net_fd;           /* our own network namespace, opened at the first session's, or -1 */
	/* The spawner thread (box_clone_in), once needed: our ends of its
	 * request and reply pipes, and its own; left open to the process's
	 * end (the thread's end would kill the sandboxes it cloned). */
	int spawn_req, spawn_rep, spawner_rd, spawner_wr;
	bool clone_via_holder;     /* the kernel clones no detached mount (before 6.15) */
	int holder_fd;             /* the namespace we clone scratches in then, or -1 */
	unsigned long holder_seq;  /* names its mount points */
	unsigned long spawned;     /* sandboxes made */
	bool oom_raise;            /* our oom_score_adj is negative: sandboxes get 0 */
};


/* Detect, create cgroup parents, build the filter.  As non-root this moves
 * the calling process into a user and mount namespace of its own (needed to
 * make tmpfs scratch directories).  On failure err says what and how to fix. */
int box_sys_init(struct box_sys *s, const struct conf *c, char **argv, char *err, size_t errlen);
void box_sys_free(struct box_sys *s);

/* Keep `n` sandboxes for host-tree, no-network jobs spawned ahead of time
 * in loop l (0: none), once jobs come in a stream; with one_now, make one
 * at once, before any job has come (for a caller that is waiting for its
 * first job anyway).  A warm sandbox is a fresh one made early: its own
 * namespaces, cgroup and read-only root, nothing of any other run.  It
 * receives its job when one comes, which takes namespace creation, cgroup
 * migration and root building off each job's critical path. */
void box_pool(struct box_sys *s, struct loop *l, size_t n, bool one_now);
/* Kill and reap the warm sandboxes, and wait for the inits of freed ones
 * still exiting (before exit: nothing outlives the process). */
void box_pool_drain(struct box_sys *s);

/* A stage's files, detached mounts it takes (box_scratch,
 * box_scratch_clone, box_workspace): scratch becomes its working
 * directory; own, with scratch, goes over the directory own_name there
 * (native.c).  -1: none. */
struct box_work {
	int scratch, own;
	const char *own_name;
};

/* Start a stage.  Never returns NULL: a failure to start is reported through
 * done (called from the loop) with STAGE_INTERNAL. */
struct box *box_start(struct box_sys *s, struct loop *l, const struct stage_spec *spec, const struct box_work *w,
		      stage_done_fn done, void *arg);
/* Kill the stage now (its result says STAGE_CANCELLED). */
void box_cancel(struct box *b);
/* Have init send sig to the program's process group (box_init.c's
 * on_forward); false if the program is not running. */
bool box_signal(struct box *b, int sig);
const struct stage_result *box_result(const struct box *b);
/* Read the program's output waiting now (backend.h's flush). */
void box_flush(struct box *b);
/* Free a box.  A finished one's init may still be exiting (the result
 * comes at its report, before its exit): it is then reaped, and the
 * cgroups removed, from the box's loop, or by box_pool_drain, which must
 * run before that loop is freed. */
void box_free(struct box *b);

/* A new network namespace, its loopback up, as an nsfs fd (backend.h's
 * netns_new); we stay in ours.  -1 with err. */
int box_netns_new(struct box_sys *s, char *err, size_t errlen);
/* A TCP socket made in netns (backend.h's netns_socket); -1 with err. */
int box_netns_socket(struct box_sys *s, int netns, char *err, size_t errlen);

/* Detached, size-limited tmpfs for a job's files, owned by the sandbox
 * user; -1 on error.  The caller closes it after the last stage. */
int box_scratch(struct box_sys *s, uint64_t size, char *err, size_t errlen);
/* Before the first of two stages: a new mount of the scratch for that
 * stage, leaving `scratch` itself to the second.  Kernels before 6.15
 * cannot clone a detached mount: there the mount comes through the holder
 * namespace (box_scratch.c), *second gets another for the second stage, and
 * `scratch` is left only for the supervisor's reads and writes (else
 * *second is -1).  The caller closes both after their stages.  With
 * `sub` (a name in the scratch's root, not a link) the mounts are of that
 * file or directory instead of the root. */
int box_scratch_clone(struct box_sys *s, int scratch, const char *sub, int *second, char *err, size_t errlen);
/* Whether the kernel clones a scratch directly (Linux 6.15 and later), or
 * box_scratch_clone goes through the holder; tried once, for --check. */
bool box_scratch_direct(struct box_sys *s);
/* A session's workspace directory as a detached mount, for scratch_fd;
 * noexec unless exec (and stage_spec.work_exec). */
int box_workspace(struct box_sys *s, const char *dir, bool exec, char *err, size_t errlen);
/* The owner of what the supervisor writes into a scratch: the program's
 * uid as the supervisor sees it. */
uid_t box_scratch_owner(const struct box_sys *s);

#endif
