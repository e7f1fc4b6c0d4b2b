/* timeit: run a command N times (after W warm-up runs) with stdin from a
 * file and stdout discarded, and print its wall time (mean, median, p95,
 * min) and CPU time in ms, counted two ways:
 *
 *  - cpu: user+system of the command's process tree, as far as its
 *    processes were waited for (a process reaped by no one, such as
 *    bubblewrap's pid 1 killed with its pid namespace, is not counted);
 *  - machine: the whole machine's busy time (/proc/stat: everything but
 *    idle, iowait and steal) while the command ran, so kernel workers that
 *    finish a process's work after it (a network namespace's teardown)
 *    count too, as does anything else that ran meanwhile.  /proc/stat
 *    counts in clock ticks (10 ms): meaningful for long runs, such as
 *    batches, not for one 20 ms run.
 *
 *   timeit [-n N] [-w W] [-i FILE] [-l LABEL] [-o OUT] -- command args...
 *
 * -o appends "mean median p95 min cpu machine" (ms) to OUT for scripts.
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

/* The machine's busy time so far, in ms. */
static double busy(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	int k = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (k != 8)
		return 0;
	/* user nice system idle iowait irq softirq steal */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6]) * 1e3 / (double)sysconf(_SC_CLK_TCK);
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
	double cpu = 0, machine = 0;
	for (int i = -w; i < n; i++) {
		struct rusage before, after;
		getrusage(RUSAGE_CHILDREN, &before);
		double b0 = busy();
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
		double b1 = busy();
		getrusage(RUSAGE_CHILDREN, &after);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "timeit: %s failed (status %d)\n", argv[optind], st);
			return 1;
		}
		if (i >= 0) {
			t[i] = dt;
			machine += b1 - b0;
			cpu += (after.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1e3 + (after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e3 +
			       (after.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1e3 + (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e3;
		}
	}
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += t[i];
	qsort(t, (size_t)n, sizeof *t, cmp);
	double p95 = t[(int)(n * 0.95) < n ? (int)(n * 0.95) : n - 1];
	printf("%-44s mean %8.2f  median %8.2f  p95 %8.2f  min %8.2f  cpu %8.2f  machine %8.2f ms  (n=%d)\n",
	       label ? label : argv[optind], sum / n, t[n / 2], p95, t[0], cpu / n, machine / n, n);
	if (out) {
		FILE *f = fopen(out, "a");
		if (f) {
			fprintf(f, "%.3f %.3f %.3f %.3f %.3f %.3f\n", sum / n, t[n / 2], p95, t[0], cpu / n, machine / n);
			fclose(f);
		}
	}
	free(t);
	return 0;
}
