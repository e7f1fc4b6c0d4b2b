/* layout: what a job sees of its sandbox, the same on both backends: its
 * working directory, home, uid and default PATH; the names of a session's
 * workspace that are sbx's own; how a tmpfs's inodes follow its size.
 * Constants only, for every layer: the configuration and jobs name these
 * paths as much as the sandboxes that make them (ns.h, dock.h).
 */
#ifndef SBX_LAYOUT_H
#define SBX_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define NS_WORKDIR "/scratch"
#define NS_HOME "/home/sandbox"
#define NS_UID 1000 /* the program's uid and gid inside the sandbox */
/* Where programs are looked up when the environment sets no PATH. */
#define NS_PATH "/usr/local/bin:/usr/bin:/bin"

/* A session's installed packages: written only by install stages, bound
 * read-only and executable in every other (ns_attach_work). */
#define NS_DEPS ".deps"
/* npm installs there under node_modules; /node_modules, at the top of
 * every sandbox's tree, leads to them (a dangling link when none are):
 * Node's ES module resolution and tsc look for packages in the
 * node_modules of each directory above the importing file, never on
 * NODE_PATH, so import and TypeScript find them from anywhere in the
 * workspace, and a project's own node_modules still comes first. */
#define NS_NODE_MODULES "/node_modules"
#define NS_DEPS_NODE_MODULES NS_WORKDIR "/" NS_DEPS "/node_modules"
#define NS_MAX_OUTPUTS 16

/* Top-level names of a session's workspace that are sbx's own: the
 * program file and compiler outputs of a run's inline code go in a
 * directory NS_RESERVED-<16 hex digits, from its id> there, which no client may write, read
 * or list, and which the run removes. */
#define NS_RESERVED ".sbx"
static inline bool ns_reserved(const char *path)
{
	return !strncmp(path, NS_RESERVED, sizeof NS_RESERVED - 1);
}

/* path's rest beneath the directory dir ("dir/rest"), or NULL: where a
 * run's own outputs are found in its own mount (backend.h). */
static inline const char *ns_beneath(const char *dir, const char *path)
{
	size_t n = dir ? strlen(dir) : 0;
	return n && !strncmp(path, dir, n) && path[n] == '/' ? path + n + 1 : NULL;
}

/* The inode count for a tmpfs of `bytes`: one per 4 KiB page, at least
 * 1024.  Inodes and their dentries are kernel memory that a tmpfs's size
 * does not count (a million empty directories fill no page): without a
 * bound a program could pin a gigabyte of the host's slab. */
static inline uint64_t ns_tmpfs_inodes(uint64_t bytes)
{
	return bytes / 4096 > 1024 ? bytes / 4096 : 1024;
}

#endif
