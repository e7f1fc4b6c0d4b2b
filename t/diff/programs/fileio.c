/* File I/O: a 16 MiB file written, synced, renamed and read back with a
 * checksum, mkstemp in $TMPDIR, a shared mmap, directory listing, flock,
 * and the limits a program reads from getrlimit. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long sum(const unsigned char *p, size_t n)
{
	unsigned long s = 0;
	for (size_t i = 0; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

int main(void)
{
	size_t n = 16u << 20;
	unsigned char *buf = malloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(i * 7 + (i >> 12));
	FILE *f = fopen("data.tmp", "wb");
	if (!f || fwrite(buf, 1, n, f) != n || fflush(f) || fsync(fileno(f)) || fclose(f))
		return printf("write failed\n"), 1;
	if (rename("data.tmp", "data.bin") < 0)
		return printf("rename failed\n"), 1;
	int fd = open("data.bin", O_RDONLY);
	struct stat st;
	fstat(fd, &st);
	unsigned char *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	printf("size %lld, checksum equal %d\n", (long long)st.st_size, m != MAP_FAILED && sum(m, n) == sum(buf, n));
	if (flock(fd, LOCK_EX) < 0)
		return printf("flock failed\n"), 1;
	munmap(m, n);
	close(fd);

	char tmpl[4096];
	const char *tmp = getenv("TMPDIR");
	snprintf(tmpl, sizeof tmpl, "%s/fileio-XXXXXX", tmp ? tmp : "/tmp");
	int t = mkstemp(tmpl);
	if (t < 0 || write(t, "temp", 4) != 4)
		return printf("mkstemp failed\n"), 1;
	unlink(tmpl);
	close(t);
	printf("mkstemp in TMPDIR ok\n");

	int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*shared = 0;
	if (fork() == 0) {
		*shared = 42;
		_exit(0);
	}
	while (wait(NULL) > 0)
		;
	printf("shared mapping seen by parent: %d\n", *shared);

	mkdir("dir", 0755);
	for (int i = 0; i < 100; i++) {
		char p[32];
		snprintf(p, sizeof p, "dir/f%03d", i);
		close(open(p, O_CREAT | O_WRONLY, 0644));
	}
	DIR *d = opendir("dir");
	int count = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		count += e->d_name[0] == 'f';
	closedir(d);
	printf("directory entries %d\n", count);
	unlink("data.bin");
	free(buf);
	return 0;
}
