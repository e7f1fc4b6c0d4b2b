/* ccache: the compile cache.  A compiled language's compile stage is
 * skipped when an identical one ran before: same source files, compile
 * argv and environment, compiler (natively the binary's identity on the
 * host; for the docker backend the ID of the image, since a name does not
 * pin its compiler), limits and backend.  The key is the SHA-256 of all of
 * them; the value is what the compile stage left in the scratch directory
 * (the artefacts: files that are not the job's own inputs) and the compile
 * stage's result fields.
 *
 * Entries live under STATE_DIR/cache/<key>/: manifest.json (each artefact's
 * path, mode, size and SHA-256, and the compile fields) and the artefacts as
 * f0, f1, ...  An entry is built in a temporary directory and renamed into
 * place, so readers never see half of one and concurrent writers of the
 * same key leave exactly one.  Every hit re-hashes the artefacts: an entry
 * that does not match its manifest is removed and is a miss, never run.
 * The cache is bounded by cache_size: after each store the least recently
 * used entries (manifest mtime, touched on every hit) go.
 *
 * A struct ccache is per process; ccache_get's files belong to the caller
 * (ccache_files_free).
 */
#ifndef SBX_CCACHE_H
#define SBX_CCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jv.h>

#include "conf.h"
#include "job.h"

struct ccache {
	char *dir;          /* STATE_DIR/cache, or NULL when off */
	bool shared;        /* compile_cache_shared: one cache for every principal */
	uint64_t max_bytes;
	unsigned long seq;
};

struct ccache_file {
	char *path;
	char *data;
	size_t len;
	mode_t mode;
};

/* Off (dir NULL) when the configuration says compile_cache = false or
 * `enabled` is false (sbx-run --no-cache). */
void ccache_init(struct ccache *c, const struct conf *conf, bool enabled);
/* Is c (which may be NULL) on? */
static inline bool ccache_on(const struct ccache *c) { return c && c->dir; }
void ccache_free(struct ccache *c);

/* Whether a job's compile stage may be cached at all: it has one, and is
 * not a session's workspace or an install. */
bool ccache_cacheable(const struct job *j);
/* The key of a job's compile stage, as 64 hex digits; false if the job is
 * not cacheable.
 * compiler_id is the compiler's identity as its backend gives it
 * (backend.h: natively its binary's, for docker its image's ID), without
 * which it is not cached.  The job's principal is part of it unless the
 * cache is shared. */
bool ccache_key(const struct ccache *c, const struct job *j, const char *compiler_id, char key[65]);

/* A hit: the artefacts (*files, *n) and the compile fields (*compile,
 * "cached": true).  A miss or a corrupt entry (removed): false. */
bool ccache_get(struct ccache *c, const char *key, struct ccache_file **files, size_t *n, jv *compile);
void ccache_files_free(struct ccache_file *files, size_t n);

/* What a compile stage left in the scratch directory (scratch_fd): its
 * regular files that are not the job's inputs, into *files (the caller's,
 * ccache_files_free); false if they are more than ccache takes (the
 * compile stage's scratch size, 256 files) or cannot be read.  A judged
 * job's tests each get a copy (lib/run/trial.h). */
bool ccache_collect(const struct job *j, int scratch_fd, struct ccache_file **files, size_t *n);
/* After a successful compile: store the artefacts found in the scratch
 * directory (scratch_fd) and the compile fields (borrowed). */
void ccache_put(struct ccache *c, const char *key, const struct job *j, int scratch_fd, jv compile);

#endif
