/* tap: a minimal TAP producer for the C unit tests; t/run counts the lines. */
#ifndef SBX_TAP_H
#define SBX_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

/* cond is evaluated once: it may have side effects (reading a record). */
#define OK(cond, ...) do { \
	int tap_ok_ = (cond) ? 1 : 0; \
	tap_n++; \
	if (tap_ok_) printf("ok %d - ", tap_n); \
	else { printf("not ok %d - ", tap_n); tap_failed++; } \
	printf(__VA_ARGS__); \
	printf("\n"); \
	if (!tap_ok_) printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	fflush(stdout); \
} while (0)

#define DONE() do { printf("1..%d\n", tap_n); return tap_failed ? 1 : 0; } while (0)

#endif
