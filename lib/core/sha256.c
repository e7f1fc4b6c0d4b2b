/* sha256: see sha256.h.  The block function is chosen once: the x86 SHA
 * extensions (SHA-NI: sha256rnds2 does two rounds, sha256msg1/2 the message
 * schedule) when cpuid says the CPU has them and SSE4.1, else portable C.
 * Both are checked against FIPS 180-4's vectors and each other in
 * t/unit/sha256_test.c. */
#include "sha256.h"

#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_SHANI 1
/* glibc has asked the CPU already (2.33 on): its answer costs nothing,
 * where each cpuid of our own is a trap to the hypervisor in a VM. */
#if defined(__has_include) && __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define HAVE_GLIBC_X86 1
#else
#include <cpuid.h>
#endif
#endif

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

static uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

void sha256_blocks_portable(uint32_t h[8], const unsigned char *p, size_t n)
{
	for (; n--; p += 64) {
		uint32_t w[64];
		for (int i = 0; i < 16; i++)
			w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
		for (int i = 16; i < 64; i++)
			w[i] = w[i - 16] + (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 7] +
			       (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10));
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
		for (int i = 0; i < 64; i++) {
			uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
			uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
			k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
		}
		h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
	}
}

#ifdef HAVE_SHANI
/* The state lives in two registers as the instructions want it: ABEF and
 * CDGH (A in the highest lane); each group of four rounds adds K to four
 * message words and runs sha256rnds2 twice (the second on the upper two
 * words); from the fifth group on, the words come from the previous
 * sixteen through sha256msg1 (W[t-16] + sigma0(W[t-15])), the W[t-7]
 * column (an alignr of the last two groups) and sha256msg2 (sigma1 of
 * W[t-2], which depends on words of the same group). */
__attribute__((target("sha,sse4.1"))) static void sha256_blocks_shani(uint32_t h[8], const unsigned char *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
	__m128i dcba = _mm_loadu_si128((const __m128i *)&h[0]);
	__m128i hgfe = _mm_loadu_si128((const __m128i *)&h[4]);
	__m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
	__m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
	__m128i s0 = _mm_alignr_epi8(cdab, efgh, 8);      /* ABEF */
	__m128i s1 = _mm_blend_epi16(efgh, cdab, 0xF0);   /* CDGH */
	for (; n--; p += 64) {
		__m128i abef = s0, cdgh = s1, m[4];
		for (int g = 0; g < 16; g++) {
			__m128i w;
			if (g < 4)
				w = m[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
			else {
				/* m[g & 3] holds group g-4, the others g-3, g-2, g-1 */
				w = _mm_sha256msg1_epu32(m[g & 3], m[(g + 1) & 3]);
				w = _mm_add_epi32(w, _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4));
				w = m[g & 3] = _mm_sha256msg2_epu32(w, m[(g + 3) & 3]);
			}
			__m128i wk = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)&K[4 * g]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, wk);
			s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk, 0x0E));
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	__m128i feba = _mm_shuffle_epi32(s0, 0x1B);
	__m128i dchg = _mm_shuffle_epi32(s1, 0xB1);
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(feba, dchg, 0xF0)); /* DCBA */
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(dchg, feba, 8));    /* HGFE */
}

static bool cpu_has_shani(void)
{
#ifdef HAVE_GLIBC_X86
	return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSE4_1) && CPU_FEATURE_ACTIVE(SSSE3);
#else
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3))
		return false;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)); /* CPUID.7.0:EBX.SHA */
#endif
}
#endif

blocks_fn *sha256_blocks_native(void)
{
#ifdef HAVE_SHANI
	return cpu_has_shani() ? sha256_blocks_shani : NULL;
#else
	return NULL;
#endif
}

static blocks_fn *blocks(void)
{
	static blocks_fn *fn;
	if (!fn && !(fn = sha256_blocks_native()))
		fn = sha256_blocks_portable;
	return fn;
}

void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(s->h, iv, sizeof iv);
	s->len = 0;
	s->used = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t n)
{
	const unsigned char *p = data;
	s->len += n;
	if (s->used) {
		size_t take = 64 - s->used < n ? 64 - s->used : n;
		memcpy(s->buf + s->used, p, take);
		s->used += take, p += take, n -= take;
		if (s->used < 64)
			return;
		blocks()(s->h, s->buf, 1);
		s->used = 0;
	}
	if (n >= 64) {
		blocks()(s->h, p, n / 64);
		p += n & ~(size_t)63;
		n &= 63;
	}
	memcpy(s->buf, p, n);
	s->used = n;
}

void sha256_final(struct sha256 *s, unsigned char out[32])
{
	uint64_t bits = s->len * 8;
	unsigned char pad[72] = { 0x80 };
	/* 0x80, zeros up to 56 mod 64, the length in bits, big-endian */
	size_t padlen = (s->used < 56 ? 56 : 120) - s->used;
	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
	memset(s, 0, sizeof *s);
}

void sha256_part(struct sha256 *s, const void *data, size_t n)
{
	uint64_t len = n;
	sha256_update(s, &len, sizeof len);
	sha256_update(s, data, n);
}

void sha256_str(struct sha256 *s, const char *str)
{
	sha256_part(s, str ? str : "", str ? strlen(str) : 0);
}

static void to_hex(const unsigned char d[32], char out[65])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++)
		out[2 * i] = hex[d[i] >> 4], out[2 * i + 1] = hex[d[i] & 15];
	out[64] = 0;
}

void sha256_final_hex(struct sha256 *s, char out[65])
{
	unsigned char d[32];
	sha256_final(s, d);
	to_hex(d, out);
}

void sha256_hex(const void *data, size_t n, char out[65])
{
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, data, n);
	sha256_final_hex(&s, out);
}
