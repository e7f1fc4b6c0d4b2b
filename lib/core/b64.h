/* b64: base64 (RFC 4648, standard alphabet, padded) for binary file content
 * in records and MCP messages.  Decoding is strict: no whitespace, no
 * missing padding, no stray characters.  Returned buffers belong to the
 * caller.
 */
#ifndef SBX_B64_H
#define SBX_B64_H

#include <stdbool.h>
#include <stddef.h>

char *b64_encode(const void *data, size_t n, size_t *out_len);
/* NULL if `s` is not valid base64. */
char *b64_decode(const char *s, size_t n, size_t *out_len);
/* Decoded size of valid input, for limit checks before decoding. */
size_t b64_decoded_len(const char *s, size_t n);

#endif
