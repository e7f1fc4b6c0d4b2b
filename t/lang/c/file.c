#include <stdio.h>
int main(void) {
	FILE *f = fopen("data.txt", "r");
	char buf[4096];
	size_t n;
	if (!f) { perror("data.txt"); return 1; }
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
	return 0;
}
