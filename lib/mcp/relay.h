/* relay: bytes both ways between two stream sockets, in the loop.
 *
 * What opens a session's port to a person ends in one of these: a local
 * listener's connection (stdio) or an upgraded HTTP connection (a
 * WebSocket) on one side, the socket sbx-run connected in the session's
 * loopback on the other.  Each way has a buffer of RELAY_BUF bytes; a
 * side is read only while its way has room, so a slow reader slows its
 * writer and nothing grows.  An end of input is passed on as a shutdown
 * of the other side's writing; the relay ends when both ways are done,
 * either side fails, or one way is done and nothing moves for
 * RELAY_LINGER_MS.
 *
 * Ownership: the relay owns both sockets and closes them, unless
 * RELAY_KEEP_A, when side a is its caller's (libmicrohttpd's upgraded
 * socket, which it closes itself).  done is called once when the relay
 * ends, by itself or by relay_close, and the relay is freed after it.
 */
#ifndef SBX_RELAY_H
#define SBX_RELAY_H

#include <stddef.h>

#include "loop.h"

#define RELAY_BUF (64u << 10)
#define RELAY_KEEP_A 1u
#define RELAY_LINGER_MS 30000

struct relay;
typedef void (*relay_done_fn)(void *arg);

/* to_a, to_b: bytes owed to a side before any the other sends (what was
 * read past an HTTP exchange's headers on either side), copied. */
struct relay *relay_new(struct loop *l, int a, int b, unsigned flags, const char *to_a, size_t to_a_len, const char *to_b,
			size_t to_b_len, relay_done_fn done, void *arg);
/* End it now (done is called). */
void relay_close(struct relay *r);

#endif
