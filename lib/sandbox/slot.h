/* slot: network namespaces kept from one run to the next.
 *
 * A fresh network namespace is most of what a sandbox costs (it registers
 * a loopback device and every net sysctl: ~1.3 ms here, and the rtnl lock
 * it takes serialises concurrent sandboxes).  A slot is one such namespace
 * made once and lent to one sandbox at a time; every other namespace
 * (user, mount, pid, IPC, UTS, cgroup) and the run's cgroups stay fresh.
 * See slot.c for why a reused network namespace is as safe as a new one.
 *
 * Slots are root's: the namespace belongs to the initial user namespace,
 * where the program's uid is an unprivileged stranger.  (An ordinary
 * user's supervisor could only give it to its own uid, which the program
 * runs as: the program would own the namespace's sysctls.  Then every
 * sandbox gets a fresh one.)  Slots are pinned in SBX_RUNDIR/slots, one
 * flock(2) each, so that the next process (a one-job sbx-run) takes over
 * a slot a previous one made, and no two processes use one at once.
 *
 * A struct slot_sys is process-wide, owned by box_sys; slot_take lends a
 * slot's nsfs fd (owned by slot_sys) until slot_give.
 */
#ifndef SBX_SLOT_H
#define SBX_SLOT_H

#include <stdbool.h>

#define SLOT_MAX 64

struct slot_ns {
	int net_fd;   /* the namespace (nsfs), or -1: not held */
	int lock_fd;  /* SBX_RUNDIR/slots/N.lock, flocked while held */
	bool busy;    /* lent to a sandbox */
};

struct slot_sys {
	int state;        /* 0: not tried; 1: usable; -1: off */
	int dir_fd;       /* SBX_RUNDIR/slots */
	int self_net_fd;  /* our own network namespace, to return to */
	int max;          /* slots this process may hold */
	unsigned long made, reused, discarded;
	struct slot_ns s[SLOT_MAX];
};

/* max: [sandbox] max_slots; 0 turns slots off. */
void slot_init(struct slot_sys *ss, int max);
void slot_free(struct slot_sys *ss);
/* A clean slot (its index), or -1: make the sandbox a network namespace
 * of its own.  *net_fd is the namespace to clone the sandbox's init in. */
int slot_take(struct slot_sys *ss, int *net_fd);
/* Back from its sandbox, whose every process is gone.  clean false: the
 * run ended in a way that may have left something (killed, timed out,
 * failed set-up): the slot is discarded and its pin removed. */
void slot_give(struct slot_sys *ss, int idx, bool clean);
/* Step into a slot's network namespace and back, around a clone. */
int slot_enter(int net_fd);
void slot_leave(struct slot_sys *ss);

#endif
