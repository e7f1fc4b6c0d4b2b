#include <stdint.h>
/* a null pointer the compiler cannot see coming */
int main(int argc, char **argv) {
	int *p = (int *)(uintptr_t)(argc - 1);
	(void)argv;
	*p = 1;
	return 0;
}
