/* sess_int: what the parts of the sessions share, and nobody else: sess.c
 * (sessions, their lifetimes, resources, the session tools that run) and
 * sess_files.c (the file tools).  The structures are sess.c's; sess_files.c
 * borrows them.
 */
#ifndef SBX_SESS_INT_H
#define SBX_SESS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jv.h>

#include "sess.h"
#include "state.h"

/* A checkpoint of a session tree (ckpt.h's c/ID): where it came from. */
#define SESS_CK_LEN 16
struct checkpoint {
	char id[SESS_CK_LEN + 1];  /* 16 hex digits */
	char parent[SESS_CK_LEN + 1]; /* the checkpoint its session's files came from, "" if none */
	char session[STATE_SESSION_ID_LEN + 1]; /* the session it was taken of */
	char *name;                /* the caller's, or NULL */
	double created;            /* util_epoch_ms */
	double ms;                 /* how long taking it took */
	int64_t bytes;             /* its files' sizes, -1 until counted */
	struct checkpoint *next;
};

/* A session tree: a session and those forked from its checkpoints, on one
 * filesystem (ckpt.h), which ends with the last of them. */
struct tree {
	char id[STATE_SESSION_ID_LEN + 1];
	char *dir;             /* STATE_DIR/sessions/.trees/ID, its mount; NULL for WSFS_DIR (no tree) */
	int fd;                /* dir, open */
	int lockfd;            /* flock held while it lives */
	enum wsfs_kind fs;     /* what its workspaces are (wsfs.h) */
	char *fs_note;         /* and what that means, "" for btrfs and ext4 */
	unsigned refs;         /* its sessions */
	struct checkpoint *ck; /* newest first */
	unsigned nck;
	unsigned trash;        /* names of x/ used */
};

struct session {
	char id[STATE_SESSION_ID_LEN + 1];
	char *dir;
	char *language;        /* default for sandbox_exec, or NULL */
	jv network;            /* default for sandbox_exec's "network", or invalid: none */
	jv approved;           /* those of its patterns its user approved (sess_network_allow), or invalid */
	unsigned owner;        /* only its owner's clients see it */
	uint64_t ttl_ms;
	double last_used;      /* util_now_ms */
	double born;           /* util_now_ms at its start: its processes end by max_life from it */
	unsigned busy;         /* runs and processes in it now (sess_hold): it does not expire under them */
	unsigned procs;        /* of which processes */
	struct tree *tree;
	char base[SESS_CK_LEN + 1]; /* the checkpoint its files came from (restored, forked), "" if none */
	int lockfd;
	/* Its kernels as far as we know (run_cell): by language, with their
	 * last cell; one idle past kernel_idle is gone (sbx-run stops it). */
	struct { char lang[32]; double last; } kern[8];
	unsigned nkern;
	struct session *next;
};

struct sessions {
	struct loop *loop;
	const struct conf *conf;
	char *base;            /* STATE_DIR/sessions */
	char *trees;           /* STATE_DIR/sessions/.trees, root's (the server's), 0700 */
	struct wsfs *fs;       /* what a workspace is made of */
	int timer;
	struct session *list;
	unsigned n;
	void (*on_end)(const char *id, void *arg);
	void (*on_restore)(const char *id, void *arg);
	void *end_arg;
};

/* Bind the tree's w/ID of session x at x->dir; -1 with errno. */
int sess_bind_workspace(struct session *x);
/* A session in tree t of owner's, its workspace made empty or, with ck,
 * from that checkpoint; NULL with err. */
struct session *sess_new_in(struct sessions *s, unsigned owner, struct tree *t, const struct checkpoint *ck, char *err,
			    size_t errlen);

/* Who owns a workspace's files, as the host sees it.  As root: the
 * sandbox's program, whose uid and gid are both uid + 1 (box.c maps them
 * alike).  Otherwise the server itself, which made them: (uid_t)-1 and
 * (gid_t)-1, "leave as is" to chown.  An ordinary user's gid is not its
 * uid (the package's sbx user is uid 100, gid 107), and it may not give a
 * file to a group it is not in. */
struct owner { uid_t uid; gid_t gid; };

struct owner sess_sandbox_owner(const struct sessions *s);

/* A session tool's start: no result yet (*out, *req invalid), and the
 * caller's session args names, or NULL with err. */
struct session *sess_tool_session(struct sessions *s, unsigned owner, jv args, jv *out, jv *req, char *err, size_t errlen);

/* sess_files.c: a client's path, checked (args[key], borrowed from args;
 * NULL with err); a workspace file as read_file reads it; a workspace's
 * tree as list_files lists it, appended to *files. */
const char *sess_client_path(jv args, const char *key, bool writing, char *err, size_t errlen);
bool sess_read_file(struct sessions *s, struct session *x, jv args, jv *out, char *err, size_t errlen);
void sess_list_dir(int dirfd, const char *prefix, jv *files, int *count, int depth);

#endif
