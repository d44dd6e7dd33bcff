/*
 * Test of daemon/pt_session on the real kernel. Without the intel_pt PMU
 * (AMD, most VMs) the session records a software event's sideband only,
 * which is what this test checks on every host: a forked child that
 * sleeps, starts a thread and dlopens a library must show up as context
 * switches of both threads (the second thread's event opened from its
 * FORK record), the library's mapping (from MMAP2, with its build-id), the
 * mappings at the start with build-ids, and a copy of its [vdso]. The AUX
 * trace itself is checked only where the PMU exists; elsewhere the test
 * says it skipped that part and why.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "pt_pmu.h"
#include "pt_session.h"

#define CHILD_SLEEP_MS 20
#define CHILD_SLEEPS   3

static void sleep_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

static void *child_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2 * CHILD_SLEEPS; i++)
		sleep_ms(CHILD_SLEEP_MS);
	return NULL;
}

/* Waits for "go", then: a thread that sleeps, a dlopen, sleeps of its own. */
static void child(int go, int done)
{
	pthread_t th;
	char c;

	if (read(go, &c, 1) != 1)
		_exit(1);
	sleep_ms(50); /* the session's first poll happens before the thread */
	pthread_create(&th, NULL, child_thread, NULL);
	if (!dlopen(REQUEST_LIB_PATH, RTLD_NOW))
		_exit(2);
	for (int i = 0; i < CHILD_SLEEPS; i++)
		sleep_ms(CHILD_SLEEP_MS);
	pthread_join(th, NULL);
	if (write(done, "d", 1) != 1)
		_exit(3);
	pause();
	_exit(0);
}

static const struct pt_trace_map *find_map(const struct pt_trace *t, const char *suffix)
{
	for (size_t i = 0; i < t->n_maps; i++) {
		size_t n = strlen(t->maps[i].path), m = strlen(suffix);

		if (n >= m && !strcmp(t->maps[i].path + n - m, suffix))
			return &t->maps[i];
	}
	return NULL;
}

/* Sum of a thread's off-CPU stretches (switch out to switch in), in ns. */
static uint64_t off_cpu_ns(const struct pt_trace *t, uint32_t tid, size_t *n_out)
{
	uint64_t sum = 0, out_at = 0;
	int out = 0;

	*n_out = 0;
	for (size_t i = 0; i < t->n_switches; i++) {
		const struct pt_trace_switch *s = &t->switches[i];

		if (s->tid != tid)
			continue;
		if (s->out) {
			out_at = s->time_ns;
			out = 1;
			++*n_out;
		} else if (out) {
			sum += s->time_ns - out_at;
			out = 0;
		}
	}
	return sum;
}

static pid_t start_child(int *go, int *done)
{
	int gp[2], dp[2];
	pid_t pid;

	CHECK(pipe(gp) == 0 && pipe(dp) == 0);
	pid = fork();
	if (pid == 0) {
		close(gp[1]);
		close(dp[0]);
		child(gp[0], dp[1]);
	}
	close(gp[0]);
	close(dp[1]);
	*go = gp[1];
	*done = dp[0];
	return pid;
}

static void stop_child(pid_t pid, int go, int done)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(go);
	close(done);
}

/* Polls every 10 ms until the child says it is done (at most 5 s). */
static void run_until_done(struct pt_session *s, int done)
{
	struct pollfd p = { .fd = done, .events = POLLIN };

	for (int i = 0; i < 500; i++) {
		CHECK(pt_session_poll(s) == 0);
		if (poll(&p, 1, 10) == 1)
			return;
	}
	CHECK_AT(__FILE__, __LINE__, 0, "the child did not finish in 5 s");
}

/* Records a child's run with o from start to stop; the child is left
 * paused for stop_child(). Returns its pid. */
static pid_t record_child(struct pt_session_opts *o, struct pt_session **s, struct pt_trace *t,
			  uint8_t **vdso, size_t *vdso_size, int *go, int *done)
{
	char err[512] = "";
	pid_t pid = start_child(go, done);

	o->pid = (uint32_t)pid;
	CHECK_AT(__FILE__, __LINE__, pt_session_start(o, s, err, sizeof(err)) == 0, "start: %s",
		 err);
	CHECK(write(*go, "g", 1) == 1);
	run_until_done(*s, *done);
	CHECK(pt_session_stop(*s, t, vdso, vdso_size) == 0);
	return pid;
}

static void test_sideband(void)
{
	struct pt_session_opts o = {
		.event_type = PERF_TYPE_SOFTWARE,
		.event_config = PERF_COUNT_SW_DUMMY,
		.max_threads = 16,
	};
	const struct pt_session_stats *st;
	const struct pt_trace_map *m;
	struct pt_session *s;
	struct pt_trace t = { 0 };
	uint8_t *vdso = NULL;
	size_t vdso_size = 0, n_main, n_thread;
	uint64_t main_off, thread_off;
	uint32_t thread_tid = 0;
	int go, done;
	pid_t pid = record_child(&o, &s, &t, &vdso, &vdso_size, &go, &done);

	st = pt_session_stats(s);

	CHECK_AT(__FILE__, __LINE__, st->threads == 2 && st->sideband.forks == 1,
		 "threads %u forks %llu (the second from its FORK record)", st->threads,
		 (unsigned long long)st->sideband.forks);
	for (size_t i = 0; i < t.n_switches; i++)
		if (t.switches[i].tid != (uint32_t)pid)
			thread_tid = t.switches[i].tid;
	main_off = off_cpu_ns(&t, (uint32_t)pid, &n_main);
	thread_off = off_cpu_ns(&t, thread_tid, &n_thread);
	/* Each sleep is one switch out at least; the main thread also waits
	 * for the thread (join). The thread's first sleeps may come before
	 * its event: at least half are seen. */
	CHECK_AT(__FILE__, __LINE__,
		 n_main >= CHILD_SLEEPS && main_off >= CHILD_SLEEPS * CHILD_SLEEP_MS * 1000000ULL &&
			 main_off < 5000000000ULL,
		 "main thread: %zu switches out, %llu ns off-CPU", n_main,
		 (unsigned long long)main_off);
	CHECK_AT(__FILE__, __LINE__,
		 thread_tid && n_thread >= CHILD_SLEEPS &&
			 thread_off >= CHILD_SLEEPS * CHILD_SLEEP_MS * 1000000ULL,
		 "new thread %u: %zu switches out, %llu ns off-CPU", thread_tid, n_thread,
		 (unsigned long long)thread_off);
	CHECK(t.meta.pid == (uint32_t)pid);

	m = find_map(&t, "/test-pt_session");
	CHECK_AT(__FILE__, __LINE__, m && strlen(m->build_id) == 40,
		 "the executable's map with its build-id: %s", m ? m->build_id : "(no map)");
	m = find_map(&t, strrchr(REQUEST_LIB_PATH, '/'));
	CHECK_AT(__FILE__, __LINE__, m && m->end > m->start,
		 "the dlopened library's map from MMAP2 (build-id '%s')", m ? m->build_id : "-");
	CHECK_AT(__FILE__, __LINE__, vdso_size >= 4096 && !memcmp(vdso, "\177ELF", 4),
		 "[vdso] copy: %zu bytes", vdso_size);
	CHECK_AT(__FILE__, __LINE__, t.n_streams == 0, "no AUX: %zu streams", t.n_streams);

	free(vdso);
	pt_trace_clear(&t);
	pt_session_free(s);
	stop_child(pid, go, done);
}

static void test_errors(void)
{
	struct pt_session_opts o = {
		.event_type = PERF_TYPE_SOFTWARE,
		.event_config = PERF_COUNT_SW_DUMMY,
		.max_threads = 16,
		.pid = 0x7ffffff0,
	};
	struct pt_session *s;
	char err[512] = "";
	int go, done;
	pid_t pid;

	CHECK(pt_session_start(&o, &s, err, sizeof(err)) == -ESRCH);
	CHECK_AT(__FILE__, __LINE__, strstr(err, "no process"), "%s", err);
	pid = start_child(&go, &done);
	o.pid = (uint32_t)pid;
	o.max_threads = 0;
	CHECK(pt_session_start(&o, &s, err, sizeof(err)) == -E2BIG);
	CHECK_AT(__FILE__, __LINE__, strstr(err, "pt_max_threads"), "%s", err);
	stop_child(pid, go, done);
}

/* The real thing, where the CPU has it: trace in each thread's stream. */
static void test_aux(void)
{
	struct pt_session_opts o = { .aux = 1, .aux_bytes = 1 << 20, .max_threads = 16 };
	struct pt_trace t = { 0 };
	struct pt_session *s;
	struct pt_pmu pmu;
	char err[512];
	uint8_t *vdso;
	size_t vdso_size;
	int go, done;
	pid_t pid;

	if (pt_pmu_probe("/sys", &pmu, err, sizeof(err)) < 0) {
		printf("test-pt_session: AUX trace skipped: %s\n", err);
		return;
	}
	o.event_type = pmu.type;
	o.event_config = pmu.config;
	o.snapshot = 1;
	pid = record_child(&o, &s, &t, &vdso, &vdso_size, &go, &done);
	CHECK_AT(__FILE__, __LINE__, t.meta.time_mult, "no TSC conversion from the perf page");
	CHECK_AT(__FILE__, __LINE__, t.n_streams >= 1 && t.streams[0].size > 0,
		 "%zu streams, the first %zu bytes", t.n_streams,
		 t.n_streams ? t.streams[0].size : 0);
	free(vdso);
	pt_trace_clear(&t);
	pt_session_free(s);
	stop_child(pid, go, done);
}

int main(void)
{
	test_errors();
	test_sideband();
	test_aux();
	return check_failures ? 1 : 0;
}
