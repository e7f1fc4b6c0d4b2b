/* pin: read-only roots shared between sbx processes.
 *
 * box_tmpl.c keeps each root it builds as a mount namespace (a "template") for
 * the life of its process.  pin lets a template outlive that process: the
 * namespace is bind-mounted ("pinned") onto a file in SBX_RUNDIR/roots,
 * named by a key, a hash of what the root is made of, and by the minute it
 * was built in, so that the next process (a one-job sbx-run, a new MCP
 * server) copies that root instead of building its own.  What a root is
 * made of: our own executable (a new build may build roots differently),
 * network or not, the rootfs, the /etc entries and binds, and the identity
 * of the trees and files they come from (/usr's, /etc's and each entry's
 * device, inode and change time: an upgrade that renames files into /etc
 * or one of its directories gives a new key at once).  A pin is good for
 * as long as its key is what the tree gives now: the key is the check, a
 * few stat calls, so a root stays warm however long sbx sat idle.  What the
 * key cannot see (a file system mounted on the host under /usr after the
 * root was built) is taken in when the root is rebuilt, within
 * PIN_REFRESH_NS (box_tmpl.c), off any job's path.
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
	bool exe_known;
	uint64_t exe[5];     /* our executable: dev, ino, size, mtime */
};

#define PIN_KEY_HEX 32 /* 128 bits of the hash key a root */
#define PIN_NAME_MAX 64
/* A root this old is rebuilt (and pinned anew) though its key still holds. */
#define PIN_REFRESH_NS (3600 * 1000000000LL)

/* SBX_RUNDIR/sub (O_PATH), root's, mode 0700 and a private mount of its
 * own, created if need be; -1 if not root or anything is wrong. */
int pin_rundir(const char *sub);

void pin_init(struct pin *p);
void pin_free(struct pin *p);
/* The key of a root built now from these (any user may ask: a process's
 * own templates are checked with it too). */
void pin_key(struct pin *p, bool network, const char *rootfs, char *const *etc, char *const *binds,
	     char key[PIN_KEY_HEX + 1]);
/* The newest pinned mount namespace of that key (a new fd) and how long
 * ago it was built, or -1 (none, or not root).  Only real root calls
 * these two (not root of a user namespace of its own). */
int pin_get(struct pin *p, const char *key, int64_t *age_ns);
/* Pin mnt_fd (a template this process has just built) under key, unless
 * another process was first this minute; then remove that key's older
 * pins, any nobody renewed for a day, and the oldest beyond 32. */
void pin_put(struct pin *p, const char *key, int mnt_fd);

#endif
