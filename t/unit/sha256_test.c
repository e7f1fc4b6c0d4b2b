/* Unit tests for lib/sha256: the FIPS 180-4 example vectors, the
 * incremental interface agreeing with the one-shot one at every split, and
 * the CPU's SHA extensions (where this machine has them) agreeing with the
 * portable block function on random blocks and states. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "tap.h"

int main(void)
{
	char hex[65];
	sha256_hex("", 0, hex);
	OK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty input");
	sha256_hex("abc", 3, hex);
	OK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_hex(two, strlen(two), hex);
	OK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "two blocks (448 bits)");
	size_t n = 1000000;
	char *a = malloc(n);
	memset(a, 'a', n);
	sha256_hex(a, n, hex);
	OK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "a million a's");

	unsigned char whole[32], parts[32];
	struct sha256 s;
	int same = 1;
	for (size_t split = 0; split <= 200; split++) {
		sha256_init(&s);
		sha256_update(&s, a, 200);
		sha256_final(&s, whole);
		sha256_init(&s);
		sha256_update(&s, a, split);
		sha256_update(&s, a + split, 200 - split);
		sha256_final(&s, parts);
		same &= !memcmp(whole, parts, 32);
	}
	OK(same, "incremental updates at every split of 200 bytes agree with one update");
	free(a);

	blocks_fn *native = sha256_blocks_native();
	if (!native)
		OK(1, "# SKIP no SHA extensions on this CPU: the portable block function is the one in use");
	else {
		unsigned char buf[64 * 7];
		uint32_t h1[8], h2[8];
		srand(32);
		same = 1;
		for (int round = 0; round < 2000; round++) {
			for (size_t i = 0; i < sizeof buf; i++)
				buf[i] = (unsigned char)rand();
			for (int i = 0; i < 8; i++)
				h1[i] = h2[i] = (uint32_t)rand() * 2654435761u ^ (uint32_t)rand();
			size_t nb = 1 + (size_t)round % 7;
			sha256_blocks_portable(h1, buf, nb);
			native(h2, buf, nb);
			same &= !memcmp(h1, h2, sizeof h1);
		}
		OK(same, "the SHA extensions agree with portable C on 2000 random states and 1 to 7 random blocks");
	}
	DONE();
}
