/* Processes: fork a few children that exec programs from PATH, a pipe
 * between two of them, popen, system(), and exit statuses collected. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	int fds[2];
	if (pipe(fds) < 0)
		return 1;
	pid_t a = fork();
	if (a == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execlp("printf", "printf", "c\\nb\\na\\n", (char *)NULL);
		_exit(127);
	}
	pid_t b = fork();
	if (b == 0) {
		dup2(fds[0], 0);
		close(fds[0]);
		close(fds[1]);
		execlp("sort", "sort", (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	close(fds[1]);
	int st, sa;
	waitpid(a, &sa, 0);
	waitpid(b, &st, 0);
	printf("printf exit %d, sort exit %d\n", WEXITSTATUS(sa), WEXITSTATUS(st));

	int codes = 0;
	for (int i = 0; i < 16; i++) {
		pid_t p = fork();
		if (p == 0)
			execl("/bin/sh", "sh", "-c", "exit $0", i % 2 ? "3" : "0", (char *)NULL), _exit(127);
		if (p < 0)
			return 1;
	}
	pid_t p;
	while ((p = wait(&st)) > 0)
		codes += WEXITSTATUS(st);
	printf("16 children, exit codes sum %d\n", codes);

	FILE *f = popen("echo from popen; id -un >/dev/null && echo user known", "r");
	char line[128];
	while (f && fgets(line, sizeof line, f))
		fputs(line, stdout);
	printf("pclose %d\n", f ? WEXITSTATUS(pclose(f)) : -1);
	fflush(stdout);
	printf("system %d\n", WEXITSTATUS(system("exit 5")));
	return 0;
}
