/* filter_policy: the tables both the BPF program (filter_gen.c) and the
 * docker profile (filter.c) are made from. */
#define _GNU_SOURCE
#include "filter.h"

#include <linux/btrfs.h>
#include <sched.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/* Calls denied outright. */
const char *const filter_denied[] = {
	/* reading or writing other processes */
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	/* kernel keyrings: shared, long-lived kernel state */
	"keyctl", "add_key", "request_key",
	/* large, often-exploited kernel subsystems */
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	/* the host-wide pool of AIO contexts (fs.aio-max-nr), which one
	 * sandbox could take for every other process */
	"io_setup",
	/* the kernel itself and the machine */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "iopl", "ioperm", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "lookup_dcookie", "uselib",
	"open_by_handle_at", "name_to_handle_at", "nfsservctl",
	/* the sandbox's own walls */
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig", "fspick",
	"move_mount", "open_tree", "mount_setattr", "unshare", "setns",
	/* memory the kernel itself cannot read: nothing a program here needs */
	"memfd_secret",
	NULL,
};

const unsigned long filter_ns_flags[FILTER_NS_FLAGS] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
};

/* Families a program may open; everything else is denied. */
static const int families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

bool filter_family_allowed(int fam)
{
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if (families[i] == fam)
			return true;
	return false;
}

/* inet: TCP, UDP, ICMP (ping sockets, where the sysctl allows them) and
 * MPTCP, whose sockets the kernel counts and ends with the run's.  Not
 * DCCP, SCTP, UDP-Lite, L2TP or SMC: protocols few programs use, loaded
 * as modules on a first socket() (kernel code a sandbox would reach
 * only so), and DCCP keeps TIME_WAIT sockets in a table of its own,
 * where neither tcp_max_tw_buckets nor the slot's check (slot.c) sees
 * them.  A protocol of 0 picks by type: SOCK_SEQPACKET is SCTP's,
 * SOCK_DCCP DCCP's, so those types go too (and SOCK_RDM, SOCK_PACKET). */
const int filter_inet_families[FILTER_INET_FAMILIES] = { AF_INET, AF_INET6 };
const int filter_inet_types[FILTER_INET_TYPES] = { SOCK_RDM, SOCK_SEQPACKET, SOCK_DCCP, SOCK_PACKET };
const int filter_inet_protos[FILTER_INET_PROTOS] = {
	33 /* DCCP */, 115 /* L2TP */, 132 /* SCTP */, 136 /* UDP-Lite */, 256 /* SMC */,
};

const unsigned filter_ioctls[FILTER_IOCTLS] = {
	/* Terminal injection, were a terminal ever reachable. */
	TIOCSTI, TIOCLINUX,
	/* Line disciplines (n_gsm and friends, a history of privilege
	 * escalations) on the sandbox's own pseudo-terminals. */
	TIOCSETD,
	/* A session's workspace is a btrfs subvolume (lib/mcp/ckpt.h), and
	 * its owner may make subvolumes in it or mark it read-only.  A
	 * subvolume inside is not in a snapshot of the workspace, so a
	 * checkpoint would silently miss what it holds, and it stops the
	 * workspace's own removal; no program here needs one.  (FICLONE and
	 * the other reflink calls share btrfs's ioctl type and stay allowed.) */
	(unsigned)BTRFS_IOC_SUBVOL_CREATE, (unsigned)BTRFS_IOC_SUBVOL_CREATE_V2, (unsigned)BTRFS_IOC_SNAP_CREATE,
	(unsigned)BTRFS_IOC_SNAP_CREATE_V2, (unsigned)BTRFS_IOC_SUBVOL_SETFLAGS, (unsigned)BTRFS_IOC_SNAP_DESTROY,
	(unsigned)BTRFS_IOC_SNAP_DESTROY_V2,
};
