/* shard: a request's identity and its place in a batch split K ways.
 *
 * Every tool that splits, runs or merges a batch (sbx-shard, sbx-batch,
 * sbx-merge) must agree, on every machine and in every run, on which id a
 * request has and which shard it belongs to; this module is that one rule.
 *
 * - A request's id is its "id" field (a string or a number).  A request
 *   without one gets "sbx-" and 16 hex digits of the SHA-256 of its line
 *   (without the newline and a trailing CR), and "-2", "-3", … for the
 *   second and later copies of the same line: the same input gives the same
 *   ids, and inserting a line elsewhere does not rename the others.
 * - The shard of an id is the first 8 bytes of the SHA-256 of its text (a
 *   string's characters, a number as printf's %.17g writes it) as a
 *   big-endian integer, modulo
 *   K: stable across machines and versions, and even whatever the ids look
 *   like (ids by line number, say, do not make one shard the slow one).
 *
 * Keys: a string id and a number id with the same text are different
 * requests, so the key of an id is its kind ('s' or 'n') then its text.
 * Keys are C strings owned by the caller: a string id holding a NUL
 * (\u0000) has none and is bad, as an id of another kind is.
 */
#ifndef SBX_SHARD_H
#define SBX_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#define SHARD_MAX 10000 /* K at most: each shard is one task, and sbx-shard holds one file open per shard */

/* The key of obj's "id" (borrowed obj, an object), or NULL when it has none
 * or it is neither a string nor a number, or a string with a NUL (*bad set
 * then if it is present). */
char *shard_key(jv obj, bool *bad);
/* The key of the generated id for a request line without one; occurrence
 * is 1 for the first copy of the line. */
char *shard_auto_key(const char *line, size_t len, unsigned long occurrence);
/* The id a key stands for, as a jv (a string, or the number). */
jv shard_key_id(const char *key);
/* Which of k shards the key's id belongs to. */
unsigned shard_of(const char *key, unsigned k);
/* "shard-I-of-K.jsonl" in a name (a path's last part): true with *i and *k. */
bool shard_parse_name(const char *path, unsigned *i, unsigned *k);
/* -k's argument: a number of shards from 1 to SHARD_MAX, or the usage
 * error (exit 2) with the synopsis. */
unsigned shard_count_arg(const char *arg, const char *synopsis);

#endif
