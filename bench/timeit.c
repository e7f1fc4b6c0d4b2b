/* timeit: run a command N times (after W warm-up runs) with stdin from a
 * file and stdout discarded, and print its wall time (mean, median, p95,
 * min) and CPU time (user+system of the command and its children) in ms.
 *
 *   timeit [-n N] [-w W] [-i FILE] [-l LABEL] [-o OUT] -- command args...
 *
 * -o appends "mean median p95 min cpu" (ms) to OUT for scripts.
 *
 * A C timer rather than a shell loop: no shell start-up in the numbers, and
 * stdin can be a file (hyperfine 1.15, in Debian 12, cannot do that). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = 30, w = 3, o;
	const char *in = "/dev/null", *label = NULL, *out = NULL;
	while ((o = getopt(argc, argv, "+n:w:i:l:o:")) != -1) {
		switch (o) {
		case 'n': n = atoi(optarg); break;
		case 'w': w = atoi(optarg); break;
		case 'i': in = optarg; break;
		case 'l': label = optarg; break;
		case 'o': out = optarg; break;
		default: return 2;
		}
	}
	if (optind >= argc || n < 1) {
		fprintf(stderr, "usage: timeit [-n N] [-w W] [-i FILE] [-l LABEL] -- command...\n");
		return 2;
	}
	double *t = calloc((size_t)n, sizeof *t);
	double cpu = 0;
	for (int i = -w; i < n; i++) {
		struct rusage before, after;
		getrusage(RUSAGE_CHILDREN, &before);
		double t0 = now();
		pid_t p = fork();
		if (p == 0) {
			int fd = open(in, O_RDONLY);
			int nul = open("/dev/null", O_WRONLY);
			dup2(fd, 0);
			dup2(nul, 1);
			execvp(argv[optind], argv + optind);
			_exit(127);
		}
		int st;
		waitpid(p, &st, 0);
		double dt = now() - t0;
		getrusage(RUSAGE_CHILDREN, &after);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "timeit: %s failed (status %d)\n", argv[optind], st);
			return 1;
		}
		if (i >= 0) {
			t[i] = dt;
			cpu += (after.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1e3 + (after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e3 +
			       (after.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1e3 + (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e3;
		}
	}
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += t[i];
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("%-44s mean %8.2f  median %8.2f  p95 %8.2f  min %8.2f  cpu %8.2f ms  (n=%d)\n", label ? label : argv[optind],
	       sum / n, t[n / 2], t[(int)(n * 0.95) < n ? (int)(n * 0.95) : n - 1], t[0], cpu / n, n);
	if (out) {
		FILE *f = fopen(out, "a");
		if (f) {
			fprintf(f, "%.3f %.3f %.3f %.3f %.3f\n", sum / n, t[n / 2], t[(int)(n * 0.95) < n ? (int)(n * 0.95) : n - 1],
				t[0], cpu / n);
			fclose(f);
		}
	}
	free(t);
	return 0;
}
