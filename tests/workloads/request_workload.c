/*
 * request_workload: a ground-truth workload for request-synchronous off-CPU profiling
 * (offcpuctl capture --request SYMBOL[@BINARY]).
 *
 * Two worker threads (rq-worker-<i>) call the request function N times. Inside it a worker
 * sends one byte to the backend thread (rq-backend) and blocks in block_in_backend_read()
 * until the backend answers, D ms later. Between requests a worker sleeps B ms in
 * between_requests(), outside any request. Two idle threads (rq-idle-<i>) block in
 * wait_for_work() for the whole run, never in a request. The workload times every blocking
 * call and every request call with CLOCK_MONOTONIC and, when done, prints one JSON line with
 * that ground truth per thread: what a request filter must keep (in_request_blocked_ns) and
 * what it must drop (outside_blocked_ns).
 *
 * The request function depends on how this file is built:
 *   (default)            handle_request(), here; link with -rdynamic so that it is also in
 *                        .dynsym and survives strip --strip-all;
 *   -DREQUEST_IN_LIBRARY lib_handle_request() in librequest_workload.so (request_lib.c);
 *   -DREQUEST_IN_CXX     app::Server::handle_request(app::Request&) (request_workload.cpp),
 *                        called through cxx_handle_request().
 * Each calls its block_in_backend_read(), which makes the read(). A frame-pointer walk loses
 * block_in_backend_read (libc's direct caller, see offcpu_workload.c), so a profiler sees the
 * request function directly above libc's read, and worker_thread above it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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

/*
 * The request function. Sends one byte on fd_req, then waits in block_in_backend_read() for
 * the one-byte answer on fd_resp. Returns 0 and stores the nanoseconds spent in read() in
 * *ret_blocked_ns, or returns -errno (-EPIPE if the backend closed fd_resp).
 */
#if defined(REQUEST_IN_LIBRARY)
int lib_handle_request(int fd_req, int fd_resp, uint64_t *ret_blocked_ns);
#define call_request   lib_handle_request
#define REQUEST_SYMBOL "lib_handle_request"
#elif defined(REQUEST_IN_CXX)
int cxx_handle_request(int fd_req, int fd_resp, uint64_t *ret_blocked_ns);
#define call_request   cxx_handle_request
#define REQUEST_SYMBOL "_ZN3app6Server14handle_requestERNS_7RequestE"
#else
int handle_request(int fd_req, int fd_resp, uint64_t *ret_blocked_ns);
#define call_request   handle_request
#define REQUEST_SYMBOL "handle_request"
#endif

/* Reads one byte from fd; contract as for the request function. */
int block_in_backend_read(int fd, uint64_t *ret_blocked_ns);

#define NS_PER_MS  1000000ULL
#define NS_PER_SEC 1000000000ULL

#define COUNT_MAX 1000000UL
#define MS_MAX	  60000UL

#define N_WORKERS    2
#define N_IDLE	     2
/* Each idle wait ends after this long, so that its blocks begin and end within a capture. */
#define IDLE_WAIT_MS 50

struct config {
	unsigned long requests;
	unsigned long backend_ms;
	unsigned long between_ms;
	bool wait_go;
};

static struct config cfg = {
	.requests = 50,
	.backend_ms = 10,
	.between_ms = 2,
};

struct rq_thread {
	char name[16];
	pthread_t thread;
	/* Written by the thread itself, read by main after pthread_join(). */
	pid_t tid;
	uint64_t requests;
	uint64_t in_request_blocked_ns;
	uint64_t request_wall_ns;
	uint64_t outside_blocked_ns;
};

static struct rq_thread workers[N_WORKERS];
static struct rq_thread backend;
static struct rq_thread idlers[N_IDLE];

/* Per worker: req carries requests to the backend, resp its answers back. */
static struct {
	int req[2];
	int resp[2];
} channels[N_WORKERS];

/* Never carries data: the idle threads read it until main shuts its other end. */
static int idle_socks[2];

static pthread_barrier_t ready_barrier; /* all threads named: main may say "ready" */
static pthread_barrier_t start_barrier; /* the timed phase begins */

static void die(const char *what, int err)
{
	fprintf(stderr, "request_workload: %s: %s\n", what, strerror(err));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_timespec(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NS_PER_SEC),
		.tv_nsec = (long)(ns % NS_PER_SEC),
	};

	return ts;
}

#if !defined(REQUEST_IN_LIBRARY)
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
#endif

#if !defined(REQUEST_IN_LIBRARY) && !defined(REQUEST_IN_CXX)
WORKLOAD_FRAME int handle_request(int fd_req, int fd_resp, uint64_t *ret_blocked_ns)
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
#endif

static WORKLOAD_FRAME void wait_on_barrier(pthread_barrier_t *b)
{
	pthread_barrier_wait(b);
}

/* The extra frame (wait_on_barrier) keeps this name, not <role>_thread, above libc. */
static WORKLOAD_FRAME void wait_for_start(void)
{
	wait_on_barrier(&ready_barrier);
	wait_on_barrier(&start_barrier);
}

static void thread_begin(struct rq_thread *t)
{
	pthread_setname_np(pthread_self(), t->name);
	t->tid = gettid();
	wait_for_start();
}

/* Never called: a function whose first instruction is int3, where the
 * kernel refuses a uprobe (the attach-failure test). */
__asm__(".text\n.globl unprobeable_request\n.type unprobeable_request, @function\n"
	"unprobeable_request:\n\tint3\n\tret\n.size unprobeable_request, .-unprobeable_request\n");

/* Outside any request. Returns the nanoseconds spent in nanosleep(). */
static WORKLOAD_FRAME uint64_t between_requests(unsigned long ms)
{
	struct timespec req = ns_to_timespec(ms * NS_PER_MS);
	uint64_t t0 = now_ns();

	while (nanosleep(&req, &req) < 0) {
		if (errno != EINTR)
			die("nanosleep", errno);
	}
	return now_ns() - t0;
}

static WORKLOAD_FRAME void *worker_thread(void *arg)
{
	struct rq_thread *t = arg;
	int i = (int)(t - workers);

	thread_begin(t);
	for (unsigned long n = 0; n < cfg.requests; n++) {
		uint64_t t0, t1, blocked_ns = 0;
		int r;

		t->outside_blocked_ns += between_requests(cfg.between_ms);
		t0 = now_ns();
		r = call_request(channels[i].req[1], channels[i].resp[0], &blocked_ns);
		t1 = now_ns();
		if (r < 0)
			die(REQUEST_SYMBOL, -r);
		t->requests++;
		t->in_request_blocked_ns += blocked_ns;
		t->request_wall_ns += t1 - t0;
	}
	/* The backend stops once every worker has closed its request pipe. */
	close(channels[i].req[1]);
	return NULL;
}

/* Outside any request. Returns the nanoseconds spent in ppoll(). */
static WORKLOAD_FRAME uint64_t wait_for_requests(struct pollfd *pfds, nfds_t n,
						 const struct timespec *timeout)
{
	uint64_t t0 = now_ns();

	if (ppoll(pfds, n, timeout, NULL) < 0 && errno != EINTR)
		die("ppoll", errno);
	return now_ns() - t0;
}

/*
 * Answers each request backend_ms after it arrived. Requests of both workers may be pending at
 * once; the backend waits in ppoll() until the earliest answer is due or a request arrives, so
 * that a worker never waits for the other's answer (a nanosleep per request would serialize
 * them and make a worker's wait up to twice backend_ms).
 */
static WORKLOAD_FRAME void *backend_thread(void *arg)
{
	struct rq_thread *t = arg;
	struct pollfd pfds[N_WORKERS];
	uint64_t due_ns[N_WORKERS] = { 0 }; /* 0: no answer pending */
	unsigned int open = N_WORKERS;

	for (int i = 0; i < N_WORKERS; i++)
		pfds[i] = (struct pollfd){ .fd = channels[i].req[0], .events = POLLIN };
	thread_begin(t);
	while (open) {
		uint64_t now = now_ns(), next_ns = UINT64_MAX;
		struct timespec ts, *timeout = NULL;

		for (int i = 0; i < N_WORKERS; i++) {
			if (due_ns[i] && due_ns[i] < next_ns)
				next_ns = due_ns[i];
		}
		if (next_ns != UINT64_MAX) {
			ts = ns_to_timespec(next_ns > now ? next_ns - now : 0);
			timeout = &ts;
		}
		t->outside_blocked_ns += wait_for_requests(pfds, N_WORKERS, timeout);
		now = now_ns();
		for (int i = 0; i < N_WORKERS; i++) {
			if (due_ns[i] && due_ns[i] <= now) {
				if (write(channels[i].resp[1], "a", 1) != 1)
					die("write answer", errno);
				due_ns[i] = 0;
			}
			if (pfds[i].fd >= 0 && (pfds[i].revents & (POLLIN | POLLHUP))) {
				char c;
				ssize_t n = read(pfds[i].fd, &c, 1);

				if (n < 0 && errno != EINTR)
					die("read request", errno);
				if (n == 1) {
					due_ns[i] = now + cfg.backend_ms * NS_PER_MS;
				} else if (n == 0) {
					pfds[i].fd = -1; /* ppoll ignores it from now on */
					open--;
				}
			}
		}
	}
	return NULL;
}

/*
 * Outside any request. Adds the nanoseconds spent in read() to *blocked_ns; returns false once
 * main has shut the socket down, true when the wait timed out (SO_RCVTIMEO).
 */
static WORKLOAD_FRAME bool wait_for_work(int fd, uint64_t *blocked_ns)
{
	char c;
	uint64_t t0 = now_ns();
	ssize_t n = read(fd, &c, 1);

	*blocked_ns += now_ns() - t0;
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		die("read from idle socket", errno);
	if (n > 0)
		die("read from idle socket", EPROTO);
	return n < 0;
}

static WORKLOAD_FRAME void *idle_thread(void *arg)
{
	struct rq_thread *t = arg;

	thread_begin(t);
	while (wait_for_work(idle_socks[0], &t->outside_blocked_ns))
		;
	return NULL;
}

/* Blocks until one line (or at least its start) arrives on stdin. */
static WORKLOAD_FRAME void wait_for_go(void)
{
	int c;

	while ((c = getchar()) != '\n') {
		if (c == EOF) {
			fprintf(stderr, "request_workload: stdin closed before the go line\n");
			exit(1);
		}
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: request_workload [options]\n"
		"Worker threads make requests that block on a backend for a known time, and\n"
		"block outside requests too; prints the measured ground truth as one JSON\n"
		"line on stdout. Request function: " REQUEST_SYMBOL "\n"
		"  --requests N     requests per worker (default 50)\n"
		"  --backend-ms MS  the backend answers each request after MS (default 10)\n"
		"  --between-ms MS  a worker sleeps MS before each request (default 2)\n"
		"  --wait-go        print \"ready <pid>\" and wait for a line on stdin to start\n"
		"  -h, --help       show this help\n");
}

/* Returns 0 and stores the value in *ret, or -EINVAL / -ERANGE leaving *ret unchanged. */
static int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

static void parse_args(int argc, char **argv)
{
	enum { OPT_REQUESTS = 256, OPT_BACKEND_MS, OPT_BETWEEN_MS, OPT_WAIT_GO };
	static const struct option options[] = {
		{ "requests", required_argument, NULL, OPT_REQUESTS },
		{ "backend-ms", required_argument, NULL, OPT_BACKEND_MS },
		{ "between-ms", required_argument, NULL, OPT_BETWEEN_MS },
		{ "wait-go", no_argument, NULL, OPT_WAIT_GO },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		unsigned long *value = NULL, max = MS_MAX;
		const char *name = NULL;

		switch (opt) {
		case OPT_REQUESTS:
			name = "requests";
			value = &cfg.requests;
			max = COUNT_MAX;
			break;
		case OPT_BACKEND_MS:
			name = "backend-ms";
			value = &cfg.backend_ms;
			break;
		case OPT_BETWEEN_MS:
			name = "between-ms";
			value = &cfg.between_ms;
			break;
		case OPT_WAIT_GO:
			cfg.wait_go = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'request_workload --help'.\n");
			exit(2);
		}
		if (value && parse_ulong(optarg, 1, max, value) < 0) {
			fprintf(stderr,
				"request_workload: --%s wants an integer from 1 to %lu, got '%s'\n",
				name, max, optarg);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "request_workload: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
}

static void print_thread(const char *sep, const struct rq_thread *t)
{
	printf("%s{\"name\":\"%s\",\"tid\":%d,\"requests\":%" PRIu64
	       ",\"in_request_blocked_ns\":%" PRIu64 ",\"request_wall_ns\":%" PRIu64
	       ",\"outside_blocked_ns\":%" PRIu64 "}",
	       sep, t->name, (int)t->tid, t->requests, t->in_request_blocked_ns, t->request_wall_ns,
	       t->outside_blocked_ns);
}

static void print_result(void)
{
	printf("{\"pid\":%d,\"request_symbol\":\"%s\",\"threads\":[", (int)getpid(),
	       REQUEST_SYMBOL);
	for (int i = 0; i < N_WORKERS; i++)
		print_thread(i ? "," : "", &workers[i]);
	print_thread(",", &backend);
	for (int i = 0; i < N_IDLE; i++)
		print_thread(",", &idlers[i]);
	printf("]}\n");
	fflush(stdout);
}

static void start_thread(struct rq_thread *t, void *(*fn)(void *))
{
	int r = pthread_create(&t->thread, NULL, fn, t);

	if (r)
		die("pthread_create", r);
}

int main(int argc, char **argv)
{
	struct timeval idle_timeout = { .tv_usec = IDLE_WAIT_MS * 1000 };
	int r;

	parse_args(argc, argv);

	/* Timers end within a microsecond, not the default 50 us: answers come after backend_ms. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) < 0)
		die("prctl PR_SET_TIMERSLACK", errno);
	for (int i = 0; i < N_WORKERS; i++) {
		if (pipe(channels[i].req) < 0 || pipe(channels[i].resp) < 0)
			die("pipe", errno);
		snprintf(workers[i].name, sizeof(workers[i].name), "rq-worker-%d", i);
	}
	snprintf(backend.name, sizeof(backend.name), "rq-backend");
	for (int i = 0; i < N_IDLE; i++)
		snprintf(idlers[i].name, sizeof(idlers[i].name), "rq-idle-%d", i);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, idle_socks) < 0)
		die("socketpair", errno);
	if (setsockopt(idle_socks[0], SOL_SOCKET, SO_RCVTIMEO, &idle_timeout,
		       sizeof(idle_timeout)) < 0)
		die("setsockopt SO_RCVTIMEO", errno);

	/* main takes part in both barriers */
	r = pthread_barrier_init(&ready_barrier, NULL, N_WORKERS + 1 + N_IDLE + 1);
	if (!r)
		r = pthread_barrier_init(&start_barrier, NULL, N_WORKERS + 1 + N_IDLE + 1);
	if (r)
		die("pthread_barrier_init", r);

	for (int i = 0; i < N_IDLE; i++)
		start_thread(&idlers[i], idle_thread);
	start_thread(&backend, backend_thread);
	for (int i = 0; i < N_WORKERS; i++)
		start_thread(&workers[i], worker_thread);

	pthread_barrier_wait(&ready_barrier);
	if (cfg.wait_go) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		wait_for_go();
	}
	pthread_barrier_wait(&start_barrier);

	for (int i = 0; i < N_WORKERS; i++)
		pthread_join(workers[i].thread, NULL);
	pthread_join(backend.thread, NULL);
	if (shutdown(idle_socks[1], SHUT_WR) < 0)
		die("shutdown idle socket", errno);
	for (int i = 0; i < N_IDLE; i++)
		pthread_join(idlers[i].thread, NULL);

	print_result();
	return 0;
}
