/* ns: the filesystem view of a sandbox.
 *
 * The read-only root is built once and shared: a small tmpfs holding only
 * mount points and generated /etc files, made read-only at the end.  Into
 * it go: read-only, nosuid, nodev binds of /usr and the /bin, /sbin, /lib*
 * entries (or their symlinks) from the host or the language's rootfs; the
 * listed /etc entries; generated passwd, group, hosts, hostname,
 * nsswitch.conf and resolv.conf; device binds of null, zero, full, random
 * and urandom (no tty); the builder's procfs at /proc (see ns_build_root).
 * Binds are made with open_tree/mount_setattr so that read-only applies
 * recursively, then pivot_root and a lazy unmount drop the host's tree.
 * box_tmpl.c builds it in a mount namespace of its own (a template), and
 * box.c makes each sandbox's mount namespace as a copy of that one: the
 * copy belongs to the sandbox's user namespace, so the kernel locks every
 * mount and its read-only flag there, and the shared tmpfs is read-only
 * for everyone.
 *
 * Each sandbox then adds its own mounts (ns_enter_root, ns_attach_work):
 * a devpts instance, a fresh procfs for its pid namespace, one
 * size-limited noexec tmpfs shared by /tmp, /home/sandbox and /dev/shm,
 * and the job's scratch directory at /scratch, either writable and noexec
 * or read-only and executable (never both: what a program writes it cannot
 * execute).
 *
 * Everything here runs in a child between clone and exec; it uses only
 * stack memory and reports failure as text in `err` (what failed; errno
 * says why, for the caller to add).
 */
#ifndef SBX_NS_H
#define SBX_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "layout.h"


struct ns_root {
	const char *rootfs;       /* "" for the host's tree */
	char *const *etc;         /* names under /etc to bind, NULL-terminated */
	char *const *binds;       /* extra absolute paths, read-only */
	bool network;             /* host network: bind the host's resolv.conf */
};

/* Build the shared read-only root (everything but each sandbox's own
 * mounts) and pivot into it; on return the cwd is /.  Called by a process
 * that is pid 1 of a new pid namespace, in a new mount namespace: this
 * depends only on the language's tree. */
int ns_build_root(const struct ns_root *r, char *err, size_t errlen);
/* In a new mount namespace: make everything private, and make a small
 * tmpfs of mount points its root, with nothing of the host's tree left.
 * box_scratch.c keeps such a namespace to clone scratch directories in, on kernels
 * that cannot clone a detached mount. */
int ns_build_holder(char *err, size_t errlen);
/* In a sandbox's copy of that root: its own devpts and procfs. */
int ns_enter_root(char *err, size_t errlen);
/* A stage's own mounts, for ns_attach_work. */
struct ns_work {
	uint64_t tmpfs_bytes;      /* /tmp, $HOME and /dev/shm */
	int scratch_fd;            /* a detached mount for NS_WORKDIR, or -1 */
	int own_fd;                /* with scratch_fd: a run's own mount, or -1 */
	const char *own;           /* its name in the scratch */
	char *const *outputs;      /* the compile stage's executables, or NULL */
	const char *exe;           /* the program (argv[0]) */
	bool deps, work_exec;
	int exe_fd;                /* out: the program's own binary, -1, or NS_EXE_MISSING */
};
/* exe_fd when exe is a run's own output that is not there: the program
 * is not run (by path it would be whatever a program of the session put
 * under that name). */
#define NS_EXE_MISSING (-2)

/* Then the job's mounts: a fresh tmpfs of tmpfs_bytes for /tmp, $HOME and
 * /dev/shm, and the scratch (a detached mount of the caller's, which it
 * needs no more: its unmount then comes with the namespace's) moved in at
 * NS_WORKDIR, writable and noexec (work_exec: executable, for a session's
 * workspace whose configuration says so).  Each of `outputs` (the compile
 * stage's declared executables, paths in the scratch) that is a regular
 * file is bound over itself read-only and executable: the program runs its
 * binary and may write its directory, but nothing it writes, nor anything
 * else the compile stage left, can be executed (W^X).  With deps, the
 * directory NS_DEPS of a session's workspace (what install stages wrote)
 * is bound over itself read-only and executable.  With own_fd (a
 * detached mount too), that mount goes over the name `own` in the
 * scratch, a directory or file that must be there and not a link: a run's
 * own directory or program file, which the other sandboxes of its session
 * see empty (outputs beneath it are bound from it).  When exe is one of
 * those outputs, exe_fd is its bound binary, for execveat (or
 * NS_EXE_MISSING): a program of
 * the session may delete the name's mount point in the workspace, which
 * detaches the mounts on it in every namespace (Linux allows that since
 * 3.18), and a path would then lead to what it put there instead.  On
 * return the cwd is NS_WORKDIR. */
int ns_attach_work(struct ns_work *w, char *err, size_t errlen);
/* Bring up lo in a new network namespace (127.0.0.1 and ::1 work). */
int ns_loopback_up(char *err, size_t errlen);

#endif
