/* cell: kernels, and the cells they run (run_cell, a job with "cell").
 *
 * A kernel is one long-lived interpreter for one session and language: a
 * stage of the job's backend (a sandbox like every run's: namespaces,
 * seccomp, no network, no capabilities, the cgroup limits of the cell
 * that started it for its whole life) running the language's "kernel"
 * command with the session's workspace.  It is started by the first cell
 * of its session and language and lives until its session ends
 * (cell_end), it stays idle for kernel_idle, it dies, or the table is
 * freed; a cell that gives a memory, cpus or pids (job.lim_given) other
 * than its kernel's, or a reset, has it killed and a fresh one started.
 *
 * The channel.  The kernel's stdin is one end of a socketpair; the other
 * is ours.  Each side writes one JSON object per line:
 *   to the kernel    {"cell": N, "code": "...", "timeout_ms": T}  and  {"interrupt": N}
 *   from the kernel  {"ready": true} once, first (optional), when it reads
 *                    requests; then
 *                    {"cell": N, "status": "ok"|"error"|"interrupted", "value": TEXT|null}
 * A line that is not such a reply to the cell running (garbage, a reply
 * with no cell running, a wrong N, a line past 1 MiB) means the kernel is
 * broken: it is killed, and its cell says so.  Code in the kernel can
 * reach the channel (it is the kernel's own process), but the worst it
 * can do is end its own kernel or misreport its own cell.
 *
 * Output.  The kernel's stdout and stderr are its stage's pipes.  What
 * arrives while a cell runs is that cell's (read to the end when the
 * reply comes: the kernel writes its output before its reply); what
 * arrives between cells (a thread or a child still printing) is kept, up
 * to the output limit, and goes at the head of the next cell's output.
 *
 * Time.  A cell's timeout is its job's.  At the timeout the kernel is
 * sent {"interrupt"} (Python: KeyboardInterrupt in the main thread, the
 * cell's child processes killed); if it has not replied INTERRUPT_GRACE_MS
 * later it is killed.  A kernel still starting (no "ready" yet, nor a
 * reply) has START_GRACE_MS instead, and INTERRUPT_GRACE_MS from its
 * "ready": a slow start is not a hung cell.  A cell that was interrupted
 * is "timeout" and the state is kept; one whose kernel was killed says the
 * state is lost.
 *
 * Cells of one session run one at a time: sbx-run holds a job whose
 * workspace has one in flight.  Ownership: the table owns its kernels;
 * a cell belongs to the table until its done callback, which gets a
 * result and info borrowed for the call.
 */
#ifndef SBX_CELL_H
#define SBX_CELL_H

#include <stdbool.h>

#include <jv.h>

#include "backend.h"
#include "conf.h"
#include "job.h"
#include "loop.h"

struct kernels;
struct cell;

/* res: how the cell went, as a stage's result (a cell that raised is an
 * exit code of 1; cpu_ms and mem_peak unknown); info (borrowed):
 * {"execution_count", "value", "kernel": "started"|"live"|"restarted", or
 * "died" when it did not outlive the cell, "kernel_alive": whether it
 * lives on, "limits": the cell's timeout and output, its kernel's others}
 * and, when the kernel died, was interrupted or restarted, "kernel_note". */
typedef void (*cell_done_fn)(const struct stage_result *res, jv info, void *arg);
typedef void (*cell_output_fn)(void *arg, int stream, const char *data, size_t len);

struct kernels *cell_kernels_new(const struct conf *c, struct loop *l);
/* Kill every kernel and wait for their sandboxes to go (a cell running
 * gets no callback). */
void cell_kernels_free(struct kernels *ks);

/* Run the job's code as a cell of its session's kernel of its language
 * (started now if there is none; restarted first if j->reset, or if the
 * job gives limits the kernel does not have).  envp is
 * the stage environment for a kernel started now, netns its session's
 * network namespace (stage_spec.netns, or 0); out (optional) is told
 * of the cell's output as it comes.  done is called exactly once, from
 * the loop; NULL with err if the cell cannot run (no kernel can start).
 * The job is borrowed for the call only. */
struct cell *cell_start(struct kernels *ks, struct backend *be, const struct job *j, char *const *envp, int netns,
			cell_done_fn done, cell_output_fn out, void *arg, char *err, size_t errlen);
/* Interrupt the cell as at its timeout; its result is "cancelled". */
void cell_cancel(struct cell *c);
/* A session ends: its kernels are killed (cells running get their
 * results), and what was remembered of them forgotten. */
void cell_end(struct kernels *ks, const char *workspace);
/* A session's workspace was replaced (a checkpoint restored): its kernels
 * are killed, and their next cells start new ones and say why. */
void cell_restored(struct kernels *ks, const char *workspace);
/* Kernels alive now. */
unsigned cell_live(const struct kernels *ks);

#endif
