/* box_int: what the parts of the native sandbox share, and nobody else
 * (box.c the supervisor, box_sys.c the system and the pool of warm
 * sandboxes, box_init.c the sandbox's init and program, box_tmpl.c the
 * read-only roots, box_scratch.c the scratch mounts).
 * The supervisor and init talk through the messages and the spec below,
 * over pipes and a socket made before the clone; see box.c.
 */
#ifndef SBX_BOX_INT_H
#define SBX_BOX_INT_H

#include <linux/sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "box.h"
#include "egress.h"

/* How long a sandbox, or a short-lived namespace maker (box_ns_made), may
 * take to set itself up before the supervisor gives up on it. */
#define SETUP_TIMEOUT_MS 15000

/* Messages from init to the supervisor, on the status pipe. */
enum { MSG_FAIL = 1, MSG_EXECFAIL, MSG_RUNNING, MSG_EXIT, MSG_MARK };

struct msg {
	uint32_t type;
	int32_t err;
	int64_t v[4];
	char text[200];
};

/* Fixed fd numbers inside the child after proc_keep_fds. */
enum { K_GO, K_STATUS, K_OUT, K_ERR, K_SPEC, K_N };
#define KFD(i) (3 + (i))

struct child_args {
	struct box_sys *sys;
	bool network;
	bool build_root;         /* no template: build the root here */
	bool slot_net;           /* cloned in a slot's network namespace (slot.h) */
	const char *rootfs;
	char *const *binds;
	int fds[K_N];
	unsigned long flags;
};

/* Two messages go to a sandbox's init over its spec socket, each with its
 * fds as SCM_RIGHTS on its first byte.  First, as soon as the supervisor
 * has made the run's cgroups: a uint32_t count and (v1) that many tasks
 * files, opened by the supervisor (the sandbox's mount namespace has no
 * /sys).  Then the job: this header, then `len` bytes of NUL-terminated
 * argv, env and output strings, with the stdin memfd and (SPEC_SCRATCH)
 * the scratch mount; with SPEC_OWN too, a last string names the run's own
 * directory in the scratch, and its mount is the third fd (box_work);
 * with SPEC_CWD, the last names where the program starts (beneath its
 * working directory); with SPEC_TTY the stdin fd is a terminal's, the
 * program's stdout, stderr and controlling terminal too. */
enum { SPEC_SCRATCH = 1, SPEC_RLIMIT_DATA = 4, SPEC_TIMINGS = 8, SPEC_DEPS = 16, SPEC_EGRESS = 32, SPEC_WORK_EXEC = 64,
       SPEC_OWN = 128, SPEC_TTY = 256, SPEC_CWD = 512 };
struct spec_hdr {
	uint64_t file_size, nofile, stack, pids, memory, tmpfs;
	uint32_t flags, argc, envc, outc, len;
};
#define SPEC_MAX (1u << 20)
#define MSG_FDS 4

struct spec {
	struct spec_hdr h;
	char **argv, **env, **outputs;
	char *own;                 /* SPEC_OWN's name, or NULL */
	char *cwd;                 /* SPEC_CWD's path, or NULL */
	int stdin_fd, scratch_fd, own_fd;
	int exe_fd;                /* the program's own binary (ns_work), or -1 */
};

/* Send len bytes with nfd fds (0..MSG_FDS) attached to the first. */
int box_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd);
/* Receive exactly len bytes and the fds that came with them (at most
 * MSG_FDS; their number, or -1 at EOF or on a short read). */
int box_recv_fds(int sock, void *buf, size_t len, int *fds);
/* One message (< PIPE_BUF: atomic). */
void box_msg_send(int fd, uint32_t type, int err, int64_t v0, int64_t v1, int64_t v2, int64_t v3, const char *text);
int64_t box_mono_ns(void);

/* The child of spawn's clone3: the sandbox's init (box_init.c). */
_Noreturn void box_init_main(struct child_args *a);

/* Roots (box_tmpl.c).  box_tmpl_get: the template's mount namespace fd
 * for a tree, TMPL_OWN if the sandbox is to build its own (not an error),
 * -1 with err. */
#define TMPL_OWN (-2)
int box_tmpl_get(struct box_sys *s, bool network, const char *rootfs, char *const *binds, char *err, size_t errlen);
void box_tmpl_clear(struct box_tmpl *t);
/* Rebuild (and pin) the templates box_tmpl_get found stale: after the
 * jobs, off their path. */
void box_tmpl_refresh(struct box_sys *s);
/* Do two sandboxes (or a sandbox and a template) need the same root? */
bool box_same_tree(bool net_a, const char *rootfs_a, char *const *binds_a, bool net_b, const char *rootfs_b,
		   char *const *binds_b);
/* clone3 with the new mount namespace copied from the template's rather
 * than from ours (tmpl_fd TMPL_OWN: from ours). */
pid_t box_clone_from(struct box_sys *s, int tmpl_fd, struct clone_args *cl);
/* Step into the mount namespace mnt_fd for a call or two, and back
 * (setns resets root and cwd: ours are restored; *cwd holds ours). */
int box_enter_mnt(int mnt_fd, int *cwd);
void box_leave_mnt(struct box_sys *s, int cwd);
/* A namespace (flags) made by a short-lived child running make in it,
 * kept as an nsfs fd; -1 with err ("what" names it). */
typedef int (*box_ns_make_fn)(void *arg, char *err, size_t errlen);
int box_ns_made(unsigned long flags, box_ns_make_fn make, void *arg, const char *what, char *err, size_t errlen);

/* One sandbox as the supervisor sees it (box.c), from spawn to release;
 * box_sys.c keeps the warm ones, spawned ahead of their jobs. */
struct box {
	struct box_sys *sys;
	struct loop *loop;
	stage_done_fn done;
	void *arg;
	pid_t pid;
	int pidfd, status_fd, out_fd, err_fd, timer_fd, spec_fd;
	struct cg_run own_cg;      /* groups made for this box, if not a slot's */
	struct cg_run *cg;         /* its groups: &own_cg or its slot's */
	int slot;                  /* the slot (slot.h) it was cloned in, or -1 */
	char *const *egress;       /* the install's hosts, while its proxy is being started */
	struct limits egress_lim;  /* and the stage's limits, which bound what it moves */
	struct egress proxy;       /* its proxy (egress.h), or none */
	/* what the sandbox was built for (its "key") */
	bool network;
	char *rootfs;
	char **binds;
	struct stage_result res;
	uint64_t timeout_ms;
	int64_t t_start, t_running, t_kill;
	/* --timings: the supervisor's steps of a sandbox made for its job, and
	 * its teardown after the result (reported on stderr: the result is
	 * out by then). */
	int64_t t_cloned, t_cgroups, t_done, t_reaped;
	char *label;
	bool assigned, warm, running, exited, finished, timed_out, cancelled, reaping, stopping;
	struct msg fail, exit_msg;
	bool have_fail, have_exit;
	int64_t cpu_us, maxrss_kb; /* from init's report */
	bool timings;
	void (*on_output)(void *arg, int stream, const char *data, size_t len);
	void *output_arg;
	struct box *next;
};

/* What the pool and the system (box_sys.c) take of the supervisor
 * (box.c): a sandbox spawned up to "waiting for its job", one released
 * (init killed and reaped if it still runs, everything freed), and a
 * write of /proc/PID/FILE (an id map, setgroups, oom_score_adj). */
struct box *box_spawn(struct box_sys *s, struct loop *l, bool network, int netns, const char *rootfs, char *const *binds);
/* box_clone_from, in the network namespace netns, for an ordinary user
 * (box_sys.c's spawner thread); the child runs box_init_main(ca), so this
 * returns only in the parent: the pid, or -1 with errno. */
pid_t box_clone_in(struct box_sys *s, int netns, int tmpl_fd, struct clone_args *cl, struct child_args *ca);
void box_release(struct box *b);
int box_write_map(pid_t pid, const char *file, const char *text);

/* The pool (box_sys.c): spawn warm sandboxes up to s->pool; take one off
 * the warm list; take a warm one that died before its job off it, and
 * free it. */
void box_pool_refill(struct box_sys *s);
void box_pool_unlink(struct box *b);
void box_pool_discard(struct box *b);

#endif
