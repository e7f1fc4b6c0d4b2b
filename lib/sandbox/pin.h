/* pin: read-only roots shared between sbx processes.
 *
 * box_tmpl.c keeps each root it builds as a mount namespace (a "template") for
 * the life of its process.  pin lets a template outlive that process: the
 * namespace is bind-mounted ("pinned") onto a file in SBX_RUNDIR/roots,
 * named by a key and the minute it was built in, so that the next process
 * (a one-job sbx-run, a new MCP server) copies that root instead of
 * building its own.  The key's first half names the configuration: our
 * own executable (a new build may build roots differently), network or
 * not, the rootfs, the /etc entries and binds.  Its second half is the
 * state of the files: the lstat identity (device, inode, change time) of
 * /usr, /bin, /sbin, the /lib directories, /etc, each /etc entry and each
 * bind, so that an upgrade that renames files into /etc or one of its
 * directories gives a new key at once.  Mounts under those trees are what
 * the key cannot see cheaply (reading /proc/self/mountinfo costs ~75 us
 * here, more on a host with many mounts): a pin keeps the digest of them
 * (pin_mounts) beside it, and one whose digest was last found to hold more
 * than a minute ago is used only if it still holds (and then vouched for
 * again, so that the mounts are read once a minute at most).  So a root stays warm however long sbx sat idle, a
 * change to its files is seen at once and one to the mounts under them
 * within the minute, as before; a root older than PIN_REFRESH_NS is
 * rebuilt anyway, after the jobs (box_tmpl.c).
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

#define PIN_NAME_MAX 64

struct pin {
	int dir_fd;          /* SBX_RUNDIR/roots (O_PATH), or -1 */
	int state;           /* 0: not tried yet; 1: usable; -1: off */
	bool exe_known;
	uint64_t exe[5];     /* our executable: dev, ino, size, mtime */
	char found[PIN_NAME_MAX]; /* the pin pin_get last returned, or "" */
};

#define PIN_KEY_HEX 32 /* 128 bits of hash: 64 of configuration, 64 of state */
#define PIN_MNT_HEX 16
/* A root this old is rebuilt (and pinned anew) though its key holds. */
#define PIN_REFRESH_NS (3600 * 1000000000LL)
/* A pin younger than this is used without reading the mounts. */
#define PIN_TRUST_NS (60 * 1000000000LL)

/* SBX_RUNDIR/sub (O_PATH), root's, mode 0700 and a private mount of its
 * own, created if need be; -1 if not root or anything is wrong. */
int pin_rundir(const char *sub);

void pin_init(struct pin *p);
void pin_free(struct pin *p);
/* The key of a root built now from these (any user may ask: a process's
 * own templates are checked with it too). */
void pin_key(struct pin *p, bool network, const char *rootfs, char *const *etc, char *const *binds,
	     char key[PIN_KEY_HEX + 1]);
/* The digest of the mounts (their ids and places) under the trees such a
 * root mirrors. */
void pin_mounts(const char *rootfs, char *const *binds, char out[PIN_MNT_HEX + 1]);
/* The newest pinned mount namespace of that key (a new fd), how long ago
 * it was built, how long ago its mounts' digest was last found to hold
 * (pin_vouch), and that digest ("" if none was kept); or -1 (none, or not
 * root).  Only real root calls these (not root of a user namespace of its
 * own). */
int pin_get(struct pin *p, const char *key, int64_t *age_ns, int64_t *checked_ns, char mounts[PIN_MNT_HEX + 1]);
/* The pin pin_get last returned: its digest was found to hold now (so the
 * next process need not read the mounts for a minute). */
void pin_vouch(struct pin *p);
/* Pin mnt_fd (a template this process has just built from the state
 * `mounts` describes) under key, unless another process was first this
 * minute; then remove this configuration's older pins, any nobody renewed
 * for a day, and the oldest beyond 32. */
void pin_put(struct pin *p, const char *key, int mnt_fd, const char *mounts);

#endif
