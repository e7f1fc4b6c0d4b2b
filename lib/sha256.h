/* sha256: FIPS 180-4 SHA-256, incremental.
 *
 * For identities, not secrets: the history groups identical code by its
 * hash, the compile cache keys artefacts by one.  The context is a plain
 * struct on the caller's stack; nothing is allocated.
 */
#ifndef SBX_SHA256_H
#define SBX_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;          /* bytes hashed so far */
	unsigned char buf[64];
	size_t used;           /* bytes in buf */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
void sha256_final(struct sha256 *s, unsigned char out[32]);
/* Keys made of several parts: each part is hashed with its length first,
 * so that no two different lists of parts hash the same byte stream.
 * sha256_str takes NULL as "". */
void sha256_part(struct sha256 *s, const void *data, size_t n);
void sha256_str(struct sha256 *s, const char *str);
/* sha256_final as 64 lowercase hex digits and a NUL. */
void sha256_final_hex(struct sha256 *s, char out[65]);
/* One-shot, as 64 lowercase hex digits and a NUL. */
void sha256_hex(const void *data, size_t n, char out[65]);

#endif
