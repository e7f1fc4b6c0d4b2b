/* pin: read-only roots shared between sbx processes.
 *
 * box_tmpl.c keeps each root it builds as a mount namespace (a "template") for
 * the life of its process.  pin lets a template outlive that process: the
 * namespace is bind-mounted ("pinned") onto a file in SBX_RUNDIR/roots,
 * named by a hash of what the root is made of and by the minute it was
 * built in, so that the next process (a one-job sbx-run, a new MCP server)
 * copies that root instead of building its own.  What a root is made of:
 * our own executable (a new build may build roots differently), network or
 * not, the rootfs, the /etc entries and binds, and the identity of the
 * trees they come from (/usr's and /etc's device, inode and change time:
 * an upgrade that renames files into /etc gives a new name at once).  A
 * name is good for the minute it names; the process that pins the next one
 * removes those from before the previous minute.
 *
 * Only root pins, and only as itself (not in a user namespace of its own).
 * The directory is root's, mode 0700, checked on every open, and a private
 * mount of its own, so that pins are not copied into other mount
 * namespaces by propagation; what is opened there must be a mount
 * namespace (nsfs) or it is ignored.  A template holds nothing of any run:
 * it is the read-only root as built, and every sandbox gets a copy.
 *
 * A struct pin is process-wide, owned by box_sys.  Nothing here fails
 * loudly: when something is missing or wrong, pinning is off and
 * box_tmpl.c builds its templates itself.
 */
#ifndef SBX_PIN_H
#define SBX_PIN_H

#include <stdbool.h>
#include <stdint.h>

struct pin {
	int dir_fd;          /* SBX_RUNDIR/roots (O_PATH), or -1 */
	int state;           /* 0: not tried yet; 1: usable; -1: off */
	uint64_t exe[5];     /* our executable: dev, ino, size, mtime */
};

#define PIN_NAME_MAX 64

/* SBX_RUNDIR/sub (O_PATH), root's, mode 0700 and a private mount of its
 * own, created if need be; -1 if not root or anything is wrong. */
int pin_rundir(const char *sub);

void pin_init(struct pin *p);
void pin_free(struct pin *p);
/* The pin's name for a root built now, and how long ago its minute began
 * (a template found under it is that old at most).  False: pinning is off
 * (not root, or no usable directory). */
bool pin_name(struct pin *p, bool network, const char *rootfs, char *const *etc, char *const *binds,
	      char name[PIN_NAME_MAX], int64_t *age_ns);
/* The pinned mount namespace of that name (a new fd), or -1. */
int pin_get(struct pin *p, const char *name);
/* Pin mnt_fd (a template this process built) under name, unless another
 * process was first; then remove pins older than the previous minute. */
void pin_put(struct pin *p, const char *name, int mnt_fd);

#endif
