/* bgio: a background job's input, and its terminal.
 *
 * A background job (job.h's background: a session's process) takes its
 * input while it runs, from sbx-run's --control.  Its stdin is a pipe
 * whose write end we hold, or, with a terminal, a pseudo-terminal whose
 * master we hold and whose other end is the program's stdin, stdout,
 * stderr and controlling terminal (backend.h's tty).  The terminal is
 * opened from the supervisor's devpts and handed over as a descriptor:
 * the sandbox mounts nothing for it.  Its other end is opened with
 * TIOCGPTPEER, never by a name another process could swap.
 *
 * What is written is queued, at most BGIO_PENDING bytes not yet taken by
 * the program, and written as the descriptor takes it (the loop watches
 * POLLOUT); a full queue refuses the bytes rather than block the
 * supervisor or grow without bound.  End of input closes the pipe once
 * the queue is out; on a terminal it is the terminal's end-of-file
 * character, as at a keyboard.  A terminal's output (both streams: a
 * terminal has one) is read from the master and handed to `out`.
 *
 * Ownership: the caller owns the bgio and frees it after its stage; the
 * descriptor for the program (bgio_new's *child) is the caller's to close
 * once the stage has its own copy.
 */
#ifndef SBX_BGIO_H
#define SBX_BGIO_H

#include <stdbool.h>
#include <stddef.h>

#include "loop.h"

#define BGIO_PENDING (1u << 20)

struct bgio;
typedef void (*bgio_out_fn)(void *arg, const char *data, size_t len);

/* A pipe, or with rows > 0 a terminal of rows x cols whose output goes to
 * out.  *child: the program's end.  NULL with err. */
struct bgio *bgio_new(struct loop *l, unsigned rows, unsigned cols, bgio_out_fn out, void *arg, int *child, char *err,
		      size_t errlen);
/* Queue len bytes for the program's input; false (nothing queued) with
 * err if they do not fit or the input is closed. */
bool bgio_write(struct bgio *b, const char *data, size_t len, char *err, size_t errlen);
/* End of input, after what is queued. */
void bgio_eof(struct bgio *b);
/* A terminal's new size (its program gets SIGWINCH); false if none. */
bool bgio_resize(struct bgio *b, unsigned rows, unsigned cols);
/* Read what a terminal holds now (its program ended: its last words). */
void bgio_drain(struct bgio *b);
void bgio_free(struct bgio *b);

#endif
