/* ckpt: the files of a session tree, its workspaces and its checkpoints.
 *
 * A session tree is a session and the sessions forked from its checkpoints
 * (sess.h).  They share one filesystem of workspace_size (wsfs.h), mounted
 * at STATE_DIR/sessions/.trees/TREE, root's and mode 0700, which holds:
 *
 *   w/SID   each session's live workspace, bound at STATE_DIR/sessions/SID
 *           (where sbx-run and the file tools find it);
 *   c/CK    each checkpoint, read-only;
 *   x/N     workspaces a restore replaced, until they are gone.
 *
 * On btrfs a workspace is a subvolume and a checkpoint a read-only snapshot
 * of it, so taking one, restoring one (a writable snapshot of it) and
 * forking one cost the same whatever they hold: the extents are shared and
 * copied only when written.  On ext4 or a tmpfs (no btrfs here, an
 * ordinary user's server) they are copies: regular files, directories,
 * symbolic links and FIFOs, with their modes (never setuid or setgid),
 * owners and times; hard links become separate files.  Nothing is ever
 * followed: a workspace is what sandboxed code made.
 *
 * Every path is relative to the tree's directory fd; the caller owns it.
 * Errors come back as text in err.
 */
#ifndef SBX_CKPT_H
#define SBX_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The tree's directories, named once, and a path below one of them
 * (ckpt_path(buf, CKPT_LIVE, sid): "w/SID"). */
#define CKPT_LIVE "w"
#define CKPT_SAVED "c"
#define CKPT_TRASH "x"
#define CKPT_PATH 72
void ckpt_path(char buf[CKPT_PATH], const char *dir, const char *name);

/* The directories w, c and x, root's and 0700. */
int ckpt_layout(int tree, char *err, size_t errlen);
/* A new empty workspace w/SID of uid:gid, mode 0700: a subvolume on btrfs. */
int ckpt_workspace_new(int tree, const char *path, bool btrfs, uid_t uid, gid_t gid, char *err, size_t errlen);
/* to (a new name) as from is now: a snapshot on btrfs (read-only if
 * readonly), else a copy (then *copied_bytes counts what it copied). */
int ckpt_clone(int tree, const char *from, const char *to, bool btrfs, bool readonly, uint64_t *copied_bytes,
	       char *err, size_t errlen);
/* Remove path and everything in it; a subvolume is destroyed.  -1 (with
 * errno) where a subvolume cannot be yet. */
int ckpt_drop(int tree, const char *path, bool btrfs);
/* The bytes of the regular files under path (their sizes: what a copy of
 * it would hold). */
uint64_t ckpt_bytes(int tree, const char *path);

#endif
