/* slot: network namespaces and cgroups kept from one run to the next.
 *
 * A fresh network namespace is most of what a sandbox costs (it registers
 * a loopback device and every net sysctl: ~1.3 ms here, and the rtnl lock
 * it takes serialises concurrent sandboxes); fresh cgroups cost a mkdir
 * and an rmdir per hierarchy and the kernel's work behind them.  A slot is
 * one such namespace and one set of cgroups, made once and lent to one
 * sandbox at a time; every other namespace (user, mount, pid, IPC, UTS,
 * cgroup) stays fresh.  See slot.c for why a reused namespace is as safe
 * as a new one, and cg.c for the cgroups.
 *
 * Slots are root's: the namespace belongs to the initial user namespace,
 * where the program's uid is an unprivileged stranger.  (An ordinary
 * user's supervisor could only give it to its own uid, which the program
 * runs as: the program would own the namespace's sysctls.  Then every
 * sandbox gets a fresh one.)  Slots are pinned in SBX_RUNDIR/slots, one
 * flock(2) each, so that the next process (a one-job sbx-run) takes over
 * a slot a previous one made, and no two processes use one at once; slot
 * N's cgroups are "slotN" under the cgroup parent, guarded by the same
 * lock, and left there when a process exits.
 *
 * A struct slot_sys is process-wide, owned by box_sys; slot_take lends a
 * slot's nsfs fd and cgroups (owned by slot_sys) until slot_give.
 */
#ifndef SBX_SLOT_H
#define SBX_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "cg.h"

#define SLOT_MAX 64
#define SLOT_NCHECK 6 /* files the check before each loan reads */

struct slot_ns {
	int net_fd;   /* the namespace (nsfs), or -1: not held */
	int lock_fd;  /* SBX_RUNDIR/slots/N.lock, flocked while held */
	int chk[SLOT_NCHECK]; /* what the check reads, opened in the namespace */
	bool busy;    /* lent to a sandbox */
	struct cg_run cg;  /* its cgroups (cg.kept), or none yet */
	bool cg_dirty;     /* its cgroups are to be made anew before the next run */
};

struct slot_sys {
	int state;        /* 0: not tried; 1: usable; -1: off */
	int dir_fd;       /* SBX_RUNDIR/slots */
	int self_net_fd;  /* our own network namespace, to return to */
	int max;          /* slots this process may hold */
	struct cg_sys *cg;  /* where slots keep cgroups, if cg->keep; else NULL */
	unsigned long made, reused, discarded;
	struct slot_ns s[SLOT_MAX];
};

/* max: [sandbox] max_slots; 0 turns slots off.  cg: the process's
 * cgroups (may be set up after this call), or NULL: no kept cgroups. */
void slot_init(struct slot_sys *ss, int max, struct cg_sys *cg);
void slot_free(struct slot_sys *ss);
/* A clean slot (its index), or -1: make the sandbox a network namespace
 * of its own.  *net_fd is the namespace to clone the sandbox's init in;
 * *cg the slot's cgroups, reset and limited as given (cg_run_reuse), or
 * NULL: the sandbox makes its own. */
int slot_take(struct slot_sys *ss, int *net_fd, uint64_t memory, double cpus, uint64_t pids, struct cg_run **cg);
/* Back from its sandbox, whose every process is gone.  clean false: the
 * run ended in a way that may have left something (killed, timed out,
 * failed set-up): the slot is discarded (a new namespace pinned in place
 * of its own, its cgroups removed). */
void slot_give(struct slot_sys *ss, int idx, bool clean);
/* Step into a slot's network namespace and back, around a clone. */
int slot_enter(int net_fd);
void slot_leave(struct slot_sys *ss);

#endif
