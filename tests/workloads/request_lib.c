/*
 * request_lib: librequest_workload.so, the request function of request_workload_lib
 * (request_workload.c built with -DREQUEST_IN_LIBRARY). With the request function in a shared
 * library, a request probe must be placed in the library, not in the executable.
 *
 * Same shape as handle_request() in request_workload.c: lib_handle_request() sends one byte to
 * the backend and blocks in block_in_backend_read() until it answers. Does not log.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* The names of these functions are what tests look for: keep them whole and unique. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define WORKLOAD_FRAME __attribute__((noipa))
#endif
#endif
#ifndef WORKLOAD_FRAME
#define WORKLOAD_FRAME __attribute__((noinline))
#endif

int lib_handle_request(int fd_req, int fd_resp, uint64_t *ret_blocked_ns);
int block_in_backend_read(int fd, uint64_t *ret_blocked_ns);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Reads one byte from fd. Returns 0 and stores the nanoseconds spent in read() in
 * *ret_blocked_ns, or returns -errno (-EPIPE at end of file).
 */
WORKLOAD_FRAME int block_in_backend_read(int fd, uint64_t *ret_blocked_ns)
{
	char c;
	ssize_t n;
	uint64_t t0 = now_ns();

	do {
		n = read(fd, &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE;
	*ret_blocked_ns = now_ns() - t0;
	return 0;
}

/*
 * Sends one byte on fd_req, then waits for the one-byte answer on fd_resp. Returns 0 and
 * stores the nanoseconds spent waiting in read() in *ret_blocked_ns, or returns -errno.
 */
WORKLOAD_FRAME int lib_handle_request(int fd_req, int fd_resp, uint64_t *ret_blocked_ns)
{
	uint64_t blocked_ns;
	int r;

	if (write(fd_req, "q", 1) != 1)
		return -errno;
	/* Not a tail call: this frame stays on the stack while the worker blocks. */
	r = block_in_backend_read(fd_resp, &blocked_ns);
	if (r < 0)
		return r;
	*ret_blocked_ns = blocked_ns;
	return 0;
}
