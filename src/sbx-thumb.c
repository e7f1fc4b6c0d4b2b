/* sbx-thumb UID MAX: a PNG on stdin, a copy of it scaled down to at most MAX
 * bytes on stdout; run by sbx-mcp (lib/mcp/thumb.h), not a tool.
 *
 * Theory of operation: the PNG is a sandboxed program's work, so this is a
 * decoder of hostile input, and it is built to lose nothing when it loses.
 * It starts from a fresh exec, so it holds nothing of the server (no
 * token, no other client's request, no other run's output); its stdin is a
 * memory file holding the PNG alone, its stdout a pipe, its stderr
 * /dev/null.  Then, in order:
 *   1. it closes every fd but those three; as root, it becomes UID (the
 *      host id of the sandboxes' mapped nobody, which owns nothing), with
 *      no supplementary groups; it dies with its parent;
 *   2. it bounds itself: 3 s of CPU, 1 GiB of address space, no file it
 *      could write or open, no core;
 *   3. no new privileges, then a seccomp filter that allows read, write,
 *      memory that is never executable, and exit; any other call kills
 *      it;
 *   4. it reads the PNG, decodes it (libpng's simplified API), shrinks it
 *      by a whole factor (a box filter) until the PNG of the copy takes
 *      at most MAX bytes, and writes the copy's width and height (two
 *      uint32, host order) and then its bytes.
 * The parent trusts none of it but a PNG whose header it checks again.
 *
 * Exit status: 0 with a copy written; 1 it could not confine itself; 2 not
 * a PNG it can decode; 3 too many pixels; 4 out of memory; 5 the parent
 * went away; 6 no copy small enough.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <png.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "imgsize.h"
#include "proc.h"
#include "thumb.h"
#include "util.h"

/* Step 1 (with no fd but its three, whoever started it). */
static bool become(int64_t uid)
{
	if (proc_keep_fds(NULL, 0) < 0)
		return false;
	if (uid >= 0 && (setgroups(0, NULL) < 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) < 0 ||
			 setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0))
		return false;
	/* (a change of ids clears the parent-death signal: set after it) */
	return prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != 1;
}

/* Steps 2 and 3. */
static bool confine(void)
{
	struct rlimit cpu = { 3, 3 }, as = { 1024u << 20, 1024u << 20 }, zero = { 0, 0 };
#ifdef __SANITIZE_ADDRESS__
	as.rlim_cur = as.rlim_max = RLIM_INFINITY; /* ASan's shadow memory is terabytes of address space */
#endif
	if (setrlimit(RLIMIT_CPU, &cpu) || setrlimit(RLIMIT_AS, &as) || setrlimit(RLIMIT_FSIZE, &zero) ||
	    setrlimit(RLIMIT_CORE, &zero) || setrlimit(RLIMIT_NOFILE, &zero) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return false;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return false;
	static const int plain[] = { SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap),
				     SCMP_SYS(madvise), SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn) };
	int rc = 0;
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
		rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, plain[i], 0);
#ifdef __SANITIZE_ADDRESS__
	rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sigaltstack), 0); /* ASan's exit */
#endif
	rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	rc |= seccomp_load(ctx);
	seccomp_release(ctx);
	return rc == 0;
}

/* The whole of stdin (at most THUMB_MAX_INPUT bytes). */
static unsigned char *read_input(size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	unsigned char *buf = malloc(cap);
	for (ssize_t r; buf; n += (size_t)r) {
		if (n == cap) {
			if (cap >= THUMB_MAX_INPUT)
				break;
			unsigned char *more = realloc(buf, cap *= 2);
			if (!more)
				break;
			buf = more;
		}
		r = read(0, buf + n, cap - n);
		if (r < 0 && errno == EINTR) {
			r = 0;
			continue;
		}
		if (r <= 0) {
			*len = n;
			return buf;
		}
	}
	free(buf);
	return NULL;
}

/* Each channel of each factor x factor block averaged. */
static unsigned char *shrink(const unsigned char *src, uint32_t w, uint32_t h, uint32_t f, uint32_t *ow, uint32_t *oh)
{
	*ow = w / f ? w / f : 1;
	*oh = h / f ? h / f : 1;
	unsigned char *dst = malloc((size_t)*ow * *oh * 4);
	if (!dst)
		return NULL;
	for (uint32_t y = 0; y < *oh; y++)
		for (uint32_t x = 0; x < *ow; x++) {
			uint64_t sum[4] = { 0 }, n = 0;
			for (uint32_t dy = 0; dy < f && y * f + dy < h; dy++)
				for (uint32_t dx = 0; dx < f && x * f + dx < w; dx++, n++)
					for (int c = 0; c < 4; c++)
						sum[c] += src[((size_t)(y * f + dy) * w + x * f + dx) * 4 + c];
			for (int c = 0; c < 4; c++)
				dst[((size_t)y * *ow + x) * 4 + c] = (unsigned char)(n ? sum[c] / n : 0);
		}
	return dst;
}

/* Step 4. */
static int work(const unsigned char *png, size_t len, size_t max)
{
	png_image in = { .version = PNG_IMAGE_VERSION };
	if (!png_image_begin_read_from_memory(&in, png, len))
		return 2;
	if ((uint64_t)in.width * in.height > IMGSIZE_INLINE_PIXELS)
		return 3;
	in.format = PNG_FORMAT_RGBA;
	unsigned char *px = malloc(PNG_IMAGE_SIZE(in));
	if (!px || !png_image_finish_read(&in, NULL, px, 0, NULL))
		return 2;
	/* a PNG's size goes about with its pixels: start near the factor that
	 * would fit, then grow it */
	uint32_t f = (uint32_t)ceil(sqrt((double)len / (double)max));
	for (int tries = 0; tries < 12; tries++, f += f < 8 ? 1 : f / 4 + 1) {
		if (f < 2)
			f = 2;
		uint32_t ow, oh;
		unsigned char *small = shrink(px, in.width, in.height, f, &ow, &oh);
		if (!small)
			return 4;
		/* an opaque image (a figure's usual white) loses its alpha:
		 * a quarter fewer bytes, so a larger copy fits */
		bool opaque = true;
		for (size_t i = 0; i < (size_t)ow * oh && opaque; i++)
			opaque = small[i * 4 + 3] == 255;
		if (opaque)
			for (size_t i = 0; i < (size_t)ow * oh; i++)
				memmove(small + i * 3, small + i * 4, 3);
		png_image out = { .version = PNG_IMAGE_VERSION, .width = ow, .height = oh,
				  .format = opaque ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA };
		png_alloc_size_t size = 0;
		if (!png_image_write_to_memory(&out, NULL, &size, 0, small, 0, NULL))
			return 4;
		if (size <= max) {
			unsigned char *buf = malloc(size);
			if (!buf || !png_image_write_to_memory(&out, buf, &size, 0, small, 0, NULL))
				return 4;
			uint32_t dim[2] = { ow, oh };
			if (util_write_all(1, dim, sizeof dim) < 0 || util_write_all(1, buf, size) < 0)
				return 5;
			return 0;
		}
		free(small);
		if (ow == 1 && oh == 1)
			break;
	}
	return 6;
}

int main(int argc, char **argv)
{
	util_init(argv[0]);
	int64_t uid, max;
	if (argc != 3 || !util_parse_i64(argv[1], -1, 0x7fffffff, &uid) || !util_parse_i64(argv[2], 64, 1 << 30, &max)) {
		fprintf(stderr, "usage: sbx-thumb UID MAX (run by sbx-mcp: a PNG on stdin, its copy on stdout)\n");
		return 2;
	}
	if (!become(uid) || !confine())
		return 1;
	/* From here on, _exit: an exit's handlers (a sanitizer's leak check
	 * stops the world with calls the filter kills) have nothing to do. */
	size_t len = 0;
	unsigned char *png = read_input(&len);
	_exit(png ? work(png, len, (size_t)max) : 4);
}
