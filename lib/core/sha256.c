#include "sha256.h"

#include <string.h>

#include <openssl/evp.h>

#include "util.h"

/* The digest, fetched once: an implicit fetch on every init costs more
 * than hashing a short key. */
static const EVP_MD *md(void)
{
	static EVP_MD *sha;
	if (!sha && !(sha = EVP_MD_fetch(NULL, "SHA256", NULL)))
		util_die(EXIT_STORE, "libcrypto has no SHA-256");
	return sha;
}

void sha256_init(struct sha256 *s)
{
	s->ctx = EVP_MD_CTX_new();
	if (!s->ctx || !EVP_DigestInit_ex(s->ctx, md(), NULL))
		util_die(EXIT_STORE, "libcrypto: cannot start a SHA-256 digest (out of memory?)");
}

void sha256_update(struct sha256 *s, const void *data, size_t n)
{
	if (n && !EVP_DigestUpdate(s->ctx, data, n))
		util_die(EXIT_STORE, "libcrypto: SHA-256 update failed");
}

void sha256_final(struct sha256 *s, unsigned char out[32])
{
	unsigned int len = 0;
	if (!EVP_DigestFinal_ex(s->ctx, out, &len) || len != 32)
		util_die(EXIT_STORE, "libcrypto: SHA-256 final failed");
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
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
	unsigned char d[32];
	unsigned int len = 0;
	if (!EVP_Digest(data, n, d, &len, md(), NULL) || len != 32)
		util_die(EXIT_STORE, "libcrypto: SHA-256 failed");
	to_hex(d, out);
}
