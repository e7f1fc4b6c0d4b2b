/* artifact: the files a run made or changed, for its result.
 *
 * A run that asks ("artifacts": true) has its scratch directory (or its
 * session's workspace) listed before its run stage and again after it;
 * the regular files that are new or changed (size or modification time)
 * come back in the result as "artifacts", sorted by path: {path,
 * mime_type, bytes, content (base64)}, at most max_artifacts of them and
 * max_artifacts_size bytes in all ("artifacts_truncated" says when more
 * were left out).  The type comes from the content (PNG, JPEG, GIF, WebP,
 * SVG, PDF, else text/plain for UTF-8 text, else octet-stream), not the
 * name.  Everything is read by descriptor beneath the directory, through
 * no link, non-blocking (the program may have planted links and FIFOs);
 * .deps, sbx's own names and __pycache__ are left out.
 *
 * An art_snap owns its entries; art_free releases them.
 */
#ifndef SBX_ARTIFACT_H
#define SBX_ARTIFACT_H

#include <stddef.h>
#include <stdint.h>

#include <jv.h>

#include "conf.h"

struct art_entry {
	char *path;
	int64_t size, mtime_ns;
};

struct art_snap {
	struct art_entry *e;
	size_t n, cap;
};

/* The regular files beneath dirfd, bounded in count and depth. */
void art_scan(int dirfd, struct art_snap *s);
void art_free(struct art_snap *s);
/* res (consumed) with "artifacts" (and "artifacts_truncated") for what
 * changed beneath dirfd since before. */
jv art_collect(const struct conf *c, int dirfd, const struct art_snap *before, jv res);

#endif
