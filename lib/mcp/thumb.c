#define _GNU_SOURCE
#include "thumb.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <png.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "imgsize.h"
#include "proc.h"
#include "util.h"

/* ---- the child: confined, then the work -------------------------------- */

/* Step 1: nothing but its pipe (fd 1) and /dev/null; no privileges to
 * gain; bounded CPU and memory; then only the system calls a decoder needs
 * to compute (memory never executable).  Any other call kills it. */
static bool child_confine(int out)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 2) < 0 || dup2(out, 1) < 0 || proc_keep_fds(NULL, 0) < 0)
		return false;
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
	rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sigaltstack), 0); /* ASan's _exit */
#endif
	rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	rc |= seccomp_load(ctx);
	seccomp_release(ctx);
	return rc == 0;
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

/* Step 2: decode, then shrink by growing factors until the PNG fits; its
 * size, then its bytes, on fd 1.  The exit status is all the parent reads
 * of how it went. */
static int child_work(const unsigned char *png, size_t len, size_t max)
{
	png_image in = { .version = PNG_IMAGE_VERSION };
	if (!png_image_begin_read_from_memory(&in, png, len))
		return 2;
	if ((uint64_t)in.width * in.height > THUMB_MAX_PIXELS)
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

/* ---- the parent -------------------------------------------------------- */

bool thumb_make(const unsigned char *png, size_t len, size_t max, unsigned char **out, size_t *outlen, struct thumb *t,
		char *why, size_t whylen)
{
	*out = NULL;
	*outlen = 0;
	*t = (struct thumb){ 0 };
	if (!imgsize_png(png, len, &t->width, &t->height)) {
		snprintf(why, whylen, "not a PNG");
		return false;
	}
	if ((uint64_t)t->width * t->height > THUMB_MAX_PIXELS) {
		snprintf(why, whylen, "%ux%u pixels: too many to scale down", t->width, t->height);
		return false;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return false;
	}
	pid_t parent = getpid(), pid = fork();
	if (pid == 0) {
		if (proc_child_prepare(parent, SIGKILL) < 0 || !child_confine(p[1]))
			_exit(1);
		_exit(child_work(png, len, max));
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return false;
	}
	size_t cap = max + 8, got = 0;
	unsigned char *buf = util_xalloc(cap + 1);
	double deadline = util_now_ms() + THUMB_MS;
	bool late = false;
	for (;;) {
		double left = deadline - util_now_ms();
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int r = left > 0 ? poll(&pf, 1, (int)left + 1) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			late = r == 0;
			break;
		}
		ssize_t n = read(p[0], buf + got, cap + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got > cap)
			break; /* more than it may send: the answer is not trusted */
	}
	close(p[0]);
	if (late || got > cap)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	uint32_t dim[2] = { 0, 0 };
	if (got >= 8)
		memcpy(dim, buf, sizeof dim);
	bool ok = !late && got > 8 && got <= cap && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		  imgsize_png(buf + 8, got - 8, &t->thumb_w, &t->thumb_h) && t->thumb_w == dim[0] && t->thumb_h == dim[1];
	if (!ok) {
		if (late)
			snprintf(why, whylen, "scaling it down took over %d ms", THUMB_MS);
		else if (WIFSIGNALED(status))
			snprintf(why, whylen, "its decoder was killed (%s)", strsignal(WTERMSIG(status)));
		else
			snprintf(why, whylen, "it could not be decoded or made small enough (%d)",
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		free(buf);
		return false;
	}
	memmove(buf, buf + 8, got - 8);
	*out = buf;
	*outlen = got - 8;
	return true;
}
