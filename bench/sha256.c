/* bench/sha256.c: lib/core/sha256 (the CPU's SHA extensions where it has
 * them) against its portable C block function (the fallback), on the sizes
 * the tools hash: a 4 MiB compiled binary (the compile cache's restore
 * checks every artefact) and 64-byte keys (tokens, cache-key parts).  Best
 * of 15 rounds each; both must agree on every digest.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sha256.h"

/* A whole digest through the portable block function alone. */
static void ref_digest(const unsigned char *p, size_t n, unsigned char out[32])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	unsigned char last[128] = { 0 };
	uint64_t bits = (uint64_t)n * 8;
	sha256_blocks_portable(h, p, n / 64);
	size_t rest = n % 64, len = rest < 56 ? 64 : 128;
	memcpy(last, p + n - rest, rest);
	last[rest] = 0x80;
	for (int i = 0; i < 8; i++)
		last[len - 1 - i] = (unsigned char)(bits >> (8 * i));
	sha256_blocks_portable(h, last, len / 64);
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++)
			out[4 * i + k] = (unsigned char)(h[i] >> (24 - 8 * k));
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
