/* bench/sha256.c: lib/core/sha256 (the CPU's SHA extensions where it has
 * them) against a portable C SHA-256 (FIPS 180-4, written out here as
 * lib/ had it before libcrypto, which it used until 2026-12-03), on the
 * sizes the tools hash: a 4 MiB compiled binary (the compile cache's
 * restore checks every artefact) and 64-byte keys (tokens, cache-key
 * parts).  Best of 15 rounds each; both must agree on every digest.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sha256.h"

struct ref {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
	size_t used;
};

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void block(struct ref *s, const unsigned char *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++)
		w[i] = w[i - 16] + (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 7] +
		       (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10));
	uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void ref_digest(const unsigned char *p, size_t n, unsigned char out[32])
{
	struct ref s = { { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 }, 0, { 0 }, 0 };
	s.len = n;
	for (; n >= 64; p += 64, n -= 64)
		block(&s, p);
	memcpy(s.buf, p, n);
	s.buf[n++] = 0x80;
	if (n > 56) {
		memset(s.buf + n, 0, 64 - n);
		block(&s, s.buf);
		n = 0;
	}
	memset(s.buf + n, 0, 56 - n);
	for (int i = 0; i < 8; i++)
		s.buf[56 + i] = (unsigned char)((s.len * 8) >> (56 - 8 * i));
	block(&s, s.buf);
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++)
			out[4 * i + k] = (unsigned char)(s.h[i] >> (24 - 8 * k));
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(void)
{
	size_t big = 4u << 20;
	unsigned char *buf = malloc(big);
	if (!buf)
		return 1;
	for (size_t i = 0; i < big; i++)
		buf[i] = (unsigned char)((i * 2654435761u) >> 13);
	static const size_t sizes[] = { 4u << 20, 64 };
	static const int reps[] = { 1, 10000 };
	printf("| SHA-256 of | portable C | lib/core/sha256 (SHA extensions) |\n|---|---|---|\n");
	for (int k = 0; k < 2; k++) {
		double best_ref = 1e9, best_lib = 1e9;
		for (int r = 0; r < 15; r++) {
			unsigned char a[32], b[32];
			double t = now_ms();
			for (int i = 0; i < reps[k]; i++)
				ref_digest(buf, sizes[k], a);
			t = now_ms() - t;
			best_ref = t < best_ref ? t : best_ref;
			t = now_ms();
			for (int i = 0; i < reps[k]; i++) {
				struct sha256 s;
				sha256_init(&s);
				sha256_update(&s, buf, sizes[k]);
				sha256_final(&s, b);
			}
			t = now_ms() - t;
			best_lib = t < best_lib ? t : best_lib;
			if (memcmp(a, b, 32)) {
				fprintf(stderr, "bench/sha256: digests differ\n");
				return 1;
			}
		}
		if (reps[k] == 1)
			printf("| 4 MiB | %.2f ms | %.2f ms |\n", best_ref, best_lib);
		else
			printf("| 64 B (per digest, of %d) | %.2f µs | %.2f µs |\n", reps[k], best_ref * 1000 / reps[k], best_lib * 1000 / reps[k]);
	}
	free(buf);
	return 0;
}
