/* wsfs: the filesystem beneath a session's workspace, which gives the
 * workspace its quota (workspace_size).
 *
 * As root: btrfs, or ext4 where btrfs cannot be had, in a sparse image file
 * on a loop device.  Its files are page
 * cache, which the kernel writes back and reclaims when a run's memory
 * cgroup is at its limit, so what a program keeps in its workspace is not
 * its memory.  (A tmpfs's pages are charged to the cgroup of the run that
 * writes them and stay charged: five 60 MB files end a run whose memory
 * limit is 256 MiB as memory_limit.)  The image is attached with autoclear
 * and unlinked at once, so nothing of it outlives the mount, even after a
 * crash; sandboxed code only ever writes files through the kernel's ext4,
 * never the image, so the driver never reads metadata a program forged.
 * Where there is no loop device (a container without /dev/loop-control) or
 * no mke2fs, a tmpfs.
 *
 * As an ordinary user with the native backend: a tmpfs, in a user and mount
 * namespace of the server's own (entered by wsfs_new, before anything
 * forks), which the sbx-run processes it starts inherit; the host does not
 * see the mount.  The kernel gives an ordinary user no disk-backed
 * filesystem of a given size, so there a workspace's files count against
 * the memory limit of the run that writes them.  With the docker backend,
 * whose engine binds the workspace by its path on the host, an ordinary
 * user's workspace is a plain directory without a quota.
 *
 * Each workspace's note says what it is when it is not ext4, in a sentence
 * for sandbox_initialize's result; the server's, for the tool's
 * description.  Ownership: the caller frees the struct wsfs (wsfs_free).
 */
#ifndef SBX_WSFS_H
#define SBX_WSFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What a workspace is, and its name in sandbox_initialize's result (the
 * third column separates the names in WSFS_KINDS_JSON, the schema's enum):
 * a loop device's btrfs or ext4 (root; btrfs where mkfs.btrfs is
 * installed and the kernel mounts it: its snapshots make a checkpoint cost
 * the same whatever the workspace holds), a tmpfs (its files are the
 * writer's memory), a plain directory (no quota). */
#define WSFS_KINDS(X)                                                                                                  \
	X(WSFS_BTRFS, "btrfs", "") X(WSFS_EXT4, "ext4", ",") X(WSFS_TMPFS, "tmpfs", ",") X(WSFS_DIR, "directory", ",")
#define WSFS_ENUM_(k, name, sep) k,
enum wsfs_kind { WSFS_KINDS(WSFS_ENUM_) };
#define WSFS_JSON_(k, name, sep) sep "\"" name "\""
#define WSFS_KINDS_JSON "[" WSFS_KINDS(WSFS_JSON_) "]"

struct wsfs;

/* Decide for this server, once, for workspaces in the directory base (as
 * an ordinary user with the native backend, enter the namespace).  Never
 * NULL: what could not be had is in the note. */
struct wsfs *wsfs_new(const char *base, bool docker);
void wsfs_free(struct wsfs *w);
enum wsfs_kind wsfs_kind(const struct wsfs *w);
/* its name, as WSFS_KINDS has it */
const char *wsfs_kind_name(enum wsfs_kind k);
/* What this server's workspaces' files count against, and why, in a
 * sentence; "" for ext4. */
const char *wsfs_note(const struct wsfs *w);

/* Make dir (an empty directory) a session tree's filesystem (ckpt.h) of size bytes (and up to inodes
 * files, where it is a tmpfs; ext4 has one per 8 KiB), its root owned by uid:gid, no setuid or devices, noexec unless
 * exec; image is a path for the image file in a directory only root may
 * write.  Where the loop device fails for this one (none free, say), a
 * tmpfs; where btrfs fails, ext4 for this one and every later one.
 * Returns the kind mounted, its note (as wsfs_note's) in note, or -1 with
 * err. */
int wsfs_mount(struct wsfs *w, const char *dir, const char *image, uint64_t size, uint64_t inodes, uid_t uid,
	       gid_t gid, bool exec, char *note, size_t notelen, char *err, size_t errlen);

#endif
