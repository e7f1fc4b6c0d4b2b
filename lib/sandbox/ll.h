/* ll: Landlock, the kernel's unprivileged access control, as the sandbox's
 * last wall for writes.
 *
 * The mounts already make everything but the job's own tmpfs read-only;
 * what they cannot cover is procfs, whose /proc/PID/mem of another process
 * of the sandbox (same uid, dumpable) a program may open for writing and
 * so patch that process's code, past W^X (ptrace itself is filtered).  A
 * Landlock ruleset that handles file writes and allows them only beneath
 * the writable places of the sandbox closes it: no write into /proc at
 * all.  It is made by the sandbox's init after its mounts, for itself and
 * everything it starts, in a few system calls.  Kernels without Landlock's
 * ABI 2 (before 5.19, or Landlock not enabled at boot) run without it, and
 * kern.h says so.
 * Runs between clone and exec: stack memory only.
 */
#ifndef SBX_LL_H
#define SBX_LL_H

#include <stddef.h>

/* Allow writing files only beneath each of paths (NULL-terminated; a
 * missing one is skipped) from now on, for the caller and its children.
 * no_new_privs must be set already, or be set by the caller before any
 * exec (landlock_restrict_self requires it).  -1 with errno and what
 * failed in err. */
int ll_write_only_beneath(const char *const *paths, char *err, size_t errlen);

#endif
