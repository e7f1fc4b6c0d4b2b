/* sha256: SHA-256 (FIPS 180-4), incremental, with no library: blocks
 * go through the CPU's SHA extensions where it has them (x86-64: 4 MiB in
 * ~2 ms here, as fast as libcrypto), else portable C (~12 ms; measured in
 * bench/sha256.c).  libcrypto did this before, but loading it and fetching
 * its digest cost every process ~3 ms at start, most of a one-job
 * sbx-run's own time.
 *
 * For identities: the history groups identical code by its hash, the
 * compile cache keys artefacts by one, tokens are compared as digests.
 * A struct sha256 is the caller's (no allocation): sha256_init starts it,
 * sha256_final ends it.
 */
#ifndef SBX_SHA256_H
#define SBX_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;            /* bytes hashed */
	unsigned char buf[64];   /* a partial block */
	size_t used;
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

/* For the unit test: the compression of n 64-byte blocks into h, in
 * portable C and with the CPU's SHA extensions (NULL: none here). */
typedef void blocks_fn(uint32_t h[8], const unsigned char *p, size_t n);
void sha256_blocks_portable(uint32_t h[8], const unsigned char *p, size_t n);
blocks_fn *sha256_blocks_native(void);

#endif
