/* Unit tests for lib/filter: the program embedded at build time, with the
 * configured errno put in, is exactly what libseccomp compiles now for that
 * errno (so the placeholder never leaks and nothing else is patched).
 * ENOSYS is left out: the clone3 rule already returns it, and libseccomp
 * then merges the two actions into a differently shaped (equivalent)
 * program; 4095 too, which libseccomp refuses and the kernel accepts. */
#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "tap.h"

static int same(const struct sock_fprog *a, const struct sock_fprog *b)
{
	return a->len == b->len && !memcmp(a->filter, b->filter, a->len * sizeof *a->filter);
}

int main(void)
{
	const int errnos[] = { EPERM, 1, EACCES, ENOENT, 4000, 4094 };
	for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++) {
		struct sock_fprog built, compiled;
		char err[256] = "";
		int rb = filter_build(errnos[i], &built, err, sizeof err);
		int rc = filter_compile(errnos[i], &compiled, err, sizeof err);
		OK(rb == 0 && rc == 0 && same(&built, &compiled), "errno %d: embedded program = libseccomp's (%s)", errnos[i], err);
		if (rb == 0)
			free(built.filter);
		if (rc == 0)
			free(compiled.filter);
	}
	struct sock_fprog p;
	char err[256] = "";
	OK(filter_build(0, &p, err, sizeof err) < 0 && strstr(err, "out of range"), "errno 0 refused: %s", err);
	OK(filter_build(4096, &p, err, sizeof err) < 0, "errno 4096 refused");
	int ok = filter_build(4095, &p, err, sizeof err) == 0;
	OK(ok && p.filter[p.len - 1].code == (BPF_RET | BPF_K), "errno 4095 (MAX_ERRNO) accepted");
	if (ok)
		free(p.filter);
	ok = filter_build(ENOSYS, &p, err, sizeof err) == 0;
	int patched = 0;
	for (unsigned i = 0; ok && i < p.len; i++)
		patched += p.filter[i].code == (BPF_RET | BPF_K) && p.filter[i].k == (SECCOMP_RET_ERRNO | 4000u);
	OK(ok && !patched, "no placeholder left (ENOSYS)");
	if (ok)
		free(p.filter);
	DONE();
}
