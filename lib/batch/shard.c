#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "req.h"
#include "sha256.h"
#include "util.h"

char *shard_key(jv obj, bool *bad)
{
	jv id = jv_object_get(jv_copy(obj), jv_string(REQ_KEY(id)));
	char *key = NULL;
	switch (jv_get_kind(id)) {
	case JV_KIND_INVALID: break;
	case JV_KIND_STRING:
		/* A key is a C string: "a\u0000b" would be "a", the same request
		 * as "a\u0000c" and placed by "a".  sbx-validate refuses such
		 * ids anyway (not printable), so they are bad here. */
		if ((size_t)jv_string_length_bytes(jv_copy(id)) != strlen(jv_string_value(id)))
			*bad = true;
		else
			key = util_fmt("s%s", jv_string_value(id));
		break;
	case JV_KIND_NUMBER:
		/* Our own rendering, not jq's: jq 1.6 writes 1.0 as 1, 1.7 keeps
		 * the literal, and a key must not change with the machine's jq.
		 * %.17g reads back as the same double. */
		key = util_fmt("n%.17g", jv_number_value(id));
		break;
	default: *bad = true;
	}
	jv_free(id);
	return key;
}

char *shard_auto_key(const char *line, size_t len, unsigned long occurrence)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	char hex[65];
	sha256_hex(line, len, hex);
	hex[16] = '\0';
	return occurrence > 1 ? util_fmt("ssbx-%s-%lu", hex, occurrence) : util_fmt("ssbx-%s", hex);
}

jv shard_key_id(const char *key)
{
	if (key[0] == 's')
		return jv_string(key + 1);
	/* A number's key holds jq's own rendering of it, which it reads back
	 * as the same number. */
	return jv_number(strtod(key + 1, NULL));
}

unsigned shard_of(const char *key, unsigned k)
{
	unsigned char d[32];
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, key + 1, strlen(key + 1));
	sha256_final(&s, d);
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | d[i];
	return k ? (unsigned)(v % k) : 0;
}

/* Digits only (no sign, no space, no leading zero but "0"), below SHARD_MAX
 * + 1; *p moves past them. */
static bool parse_index(const char **p, unsigned *out)
{
	const char *s = *p;
	unsigned long v = 0;
	size_t n = 0;
	while (s[n] >= '0' && s[n] <= '9' && n < 7)
		v = v * 10 + (unsigned long)(s[n++] - '0');
	if (n == 0 || (n > 1 && s[0] == '0') || v > SHARD_MAX || (s[n] >= '0' && s[n] <= '9'))
		return false;
	*out = (unsigned)v;
	*p = s + n;
	return true;
}

bool shard_parse_name(const char *path, unsigned *i, unsigned *k)
{
	const char *base = strrchr(path, '/');
	const char *p = base ? base + 1 : path;
	unsigned a, b;
	if (strncmp(p, "shard-", 6) != 0)
		return false;
	p += 6;
	if (!parse_index(&p, &a) || strncmp(p, "-of-", 4) != 0)
		return false;
	p += 4;
	if (!parse_index(&p, &b) || strcmp(p, ".jsonl") != 0 || b == 0 || a >= b)
		return false;
	*i = a;
	*k = b;
	return true;
}

unsigned shard_count_arg(const char *arg, const char *synopsis)
{
	int64_t v;
	if (!util_parse_i64(arg, 1, SHARD_MAX, &v))
		util_usage_error(synopsis, "-k: \"%s\" is not a number of shards from 1 to %d", arg, SHARD_MAX);
	return (unsigned)v;
}
