/*
 * dlopen_workload: code that appears after the process started. Prints
 * "ready <pid>", waits for a line on stdin, then dlopens
 * librequest_workload_nofp.so (built without frame pointers) and blocks N
 * times in its block_in_backend_read(), reading a pipe that a writer thread
 * feeds every MS milliseconds. Prints the time blocked as JSON:
 * {"blocked_ns": ..., "reads": N}. For the unwinder's refresh of a
 * process's mappings (tests/integration/test_unwind.py).
 *
 * Usage: dlopen_workload LIBRARY [N] [MS]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];
static unsigned reads = 300, period_ms = 10;

static void *writer(void *arg)
{
	struct timespec ts = { .tv_nsec = (long)period_ms * 1000000L };

	(void)arg;
	for (unsigned i = 0; i < reads; i++) {
		nanosleep(&ts, NULL);
		if (write(pipe_fds[1], "x", 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int (*block_in_backend_read)(int fd, uint64_t *ret_blocked_ns);
	uint64_t blocked = 0;
	char line[16];
	pthread_t t;
	void *lib;

	if (argc < 2) {
		fprintf(stderr, "usage: dlopen_workload LIBRARY [N] [MS]\n");
		return 2;
	}
	if (argc > 2)
		reads = (unsigned)strtoul(argv[2], NULL, 10);
	if (argc > 3)
		period_ms = (unsigned)strtoul(argv[3], NULL, 10);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib || !(block_in_backend_read =
			      (int (*)(int, uint64_t *))dlsym(lib, "block_in_backend_read"))) {
		fprintf(stderr, "dlopen_workload: %s\n", dlerror());
		return 1;
	}
	if (pipe(pipe_fds) < 0 || pthread_create(&t, NULL, writer, NULL))
		return 1;
	for (unsigned i = 0; i < reads; i++) {
		uint64_t ns = 0;

		if (block_in_backend_read(pipe_fds[0], &ns) < 0)
			return 1;
		blocked += ns;
	}
	pthread_join(t, NULL);
	printf("{\"blocked_ns\":%" PRIu64 ",\"reads\":%u}\n", blocked, reads);
	return 0;
}
