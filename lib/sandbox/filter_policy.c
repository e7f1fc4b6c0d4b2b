/* filter_policy: the tables both the BPF program (filter_gen.c) and the
 * docker profile (filter.c) are made from. */
#define _GNU_SOURCE
#include "filter.h"

#include <sched.h>
#include <stddef.h>
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
