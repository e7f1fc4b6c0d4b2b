/* Many threads: a worker pool summing slices under a mutex, a condition
 * variable hand-off, thread-local storage, and a thread with a big stack. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 32
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static unsigned long long total;
static int ready;
static __thread int tls;

static void *work(void *arg)
{
	long i = (long)arg;
	unsigned long long s = 0;
	tls = (int)i;
	for (long k = i * 100000; k < (i + 1) * 100000; k++)
		s += (unsigned long long)k;
	pthread_mutex_lock(&lock);
	total += s;
	pthread_mutex_unlock(&lock);
	return (void *)(long)(tls == i);
}

static void *waiter(void *arg)
{
	pthread_mutex_lock(&lock);
	while (!ready)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return arg;
}

static int depth(int n)
{
	volatile char pad[1024];
	memset((char *)pad, n & 0xff, sizeof pad);
	return n == 0 ? pad[0] : depth(n - 1) + (pad[1] & 1);
}

static void *deep(void *arg)
{
	return (void *)(long)depth(30000); /* ~30 MiB of stack */
}

int main(void)
{
	pthread_t t[NTHREADS], w, d;
	int ok = 0;
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, work, (void *)i) != 0)
			return 1;
	for (int i = 0; i < NTHREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		ok += (int)(long)r;
	}
	printf("threads %d ok %d total %llu\n", NTHREADS, ok, total);

	pthread_create(&w, NULL, waiter, (void *)"woken");
	pthread_mutex_lock(&lock);
	ready = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	void *msg;
	pthread_join(w, &msg);
	printf("condvar %s\n", (char *)msg);

	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64u << 20);
	if (pthread_create(&d, &a, deep, NULL) != 0) {
		printf("big stack thread: failed\n");
		return 1;
	}
	void *r;
	pthread_join(d, &r);
	printf("deep recursion on a 64 MiB stack: %ld\n", (long)r);
	return 0;
}
