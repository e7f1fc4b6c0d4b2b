/* host: the kind of host sbx runs on, as far as it withholds what the
 * native backend needs, and what to do about it.
 *
 * The backend's modules say what failed, as facts ("cannot create
 * /sys/fs/cgroup/memory/sbx: Read-only file system"); this module says
 * what fixes it on this host: in a Docker or Podman container, LXC,
 * systemd-nspawn, WSL2, under Ubuntu's AppArmor restriction of user
 * namespaces, with a sysctl that disables them, on cgroup v1, without a
 * systemd user manager.  It never tells root to run as root.
 *
 * host_probe only reads: files under /proc/sys, /sys/fs/cgroup, /run and
 * /, each named once in host.c, and the cgroup mounts' flags.  Nothing
 * here allocates: the strings are static, or written into the caller's
 * buffer.
 */
#ifndef SBX_HOST_H
#define SBX_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jv.h>

struct host {
	const char *container; /* "docker", "podman", "lxc", "systemd-nspawn", ... or NULL */
	bool wsl;              /* WSL2's kernel (its release names Microsoft) */
	bool cgroup2;          /* /sys/fs/cgroup is the unified (v2) hierarchy */
	bool cgroup_ro;        /* ... and mounted read-only (v1: the memory controller's) */
	bool userns_clone_off; /* kernel.unprivileged_userns_clone = 0 (Debian's and Ubuntu's switch) */
	bool userns_max_zero;  /* user.max_user_namespaces = 0 */
	bool apparmor_userns;  /* kernel.apparmor_restrict_unprivileged_userns = 1 (Ubuntu 23.10 on) */
	bool systemd_user;     /* this user has a systemd user manager (a login session, or lingering) */
	bool root;             /* effective uid 0 */
};

/* uid: the caller's own, taken before it entered a user namespace of its
 * own (where it is 0). */
void host_probe(struct host *h, uid_t uid);

/* What to do, on this host, when the cgroups a run needs are unusable. */
void host_cgroup_fix(const struct host *h, char *out, size_t len);

/* What to do when an ordinary user's sandboxes cannot be made (user
 * namespaces refused or crippled). */
void host_userns_fix(const struct host *h, char *out, size_t len);

/* The facts, for sbx-run --check (doc/contract.md): {"container", "wsl2",
 * "cgroup_v2", "cgroup_read_only", "user_namespaces": {...},
 * "systemd_user_manager"?}. */
jv host_json(const struct host *h);

#endif
