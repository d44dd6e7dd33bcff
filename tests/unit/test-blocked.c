/*
 * Unit test of blocked_answer_new: snapshot records as the BPF iterator
 * prints them, named through lookups that answer from a table here. Checks
 * the filters (processes, threads, states, the least time), longest first,
 * the limit and the count beyond it, a thread asleep since before any
 * record (at least since the programs were loaded), the clocks, the waker,
 * names that stay with their thread once sorted, and frames without their
 * source lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocked.h"
#include "check.h"

#define MS 1000000ull

static void kernel_frame(void *arg, uint64_t addr, char *buf, size_t size)
{
	(void)arg;
	snprintf(buf, size, "k%llx", (unsigned long long)addr);
}

static void user_frames(void *arg, uint32_t tgid, uint64_t addr, char *buf, size_t size)
{
	(void)arg;
	snprintf(buf, size, "u%u_%llx (f.c:%u)", tgid, (unsigned long long)addr, tgid);
}

static const struct drain_lookup lk = { .kernel_frame = kernel_frame, .user_frames = user_frames };

/* A record of thread pid of process tgid, off the CPU since since_ns, its
 * kernel stack's leaf kleaf (above 0x100) and user stack's leaf uleaf. */
static struct offcpu_blocked rec(uint32_t tgid, uint32_t pid, const char *comm, uint32_t state,
				 uint64_t since_ns, uint64_t kleaf, uint64_t uleaf)
{
	struct offcpu_blocked b = {
		.tgid = tgid, .pid = pid, .state = state, .since_ns = since_ns
	};

	snprintf(b.comm, sizeof(b.comm), "%s", comm);
	b.kstack.nr = 2;
	b.kstack.ips[0] = kleaf;
	b.kstack.ips[1] = 0x101; /* a return address: named one byte back */
	if (uleaf) {
		b.ustack.nr = 1;
		b.ustack.ips[0] = uleaf;
	}
	return b;
}

static const struct proto_blocked_request all = { .state_mask = 0xf };

static void test_longest_first_with_names(void)
{
	struct offcpu_blocked recs[] = {
		rec(10, 11, "short", 1, 9000 * MS, 0x300, 0x700),
		rec(20, 21, "long", 2, 1000 * MS, 0x400, 0),
		rec(10, 12, "middle", 1, 5000 * MS, 0x500, 0x800),
	};
	struct blocked_clock clock = { .now_ns = 10000 * MS,
				       .now_ms = 1700000000000,
				       .loaded_ns = 0 };
	const struct proto_blocked_result *r;
	struct blocked_answer *a;

	CHECK(blocked_answer_new(recs, 3, &all, &clock, &lk, &a) == 0);
	r = blocked_answer_result(a);
	CHECK(r->n_threads == 3 && r->n_more == 0);
	CHECK(r->now_ms == clock.now_ms);
	CHECK_STR(r->threads[0].comm, "long");
	CHECK(r->threads[0].pid == 21 && r->threads[0].tgid == 20);
	CHECK(r->threads[0].blocked_ns == 9000 * MS);
	CHECK(r->threads[0].since_ms == clock.now_ms - 9000);
	CHECK_STR(r->threads[0].state, "D");
	CHECK(r->threads[0].n_ustack == 0 && r->threads[0].n_kstack == 2);
	CHECK_STR(r->threads[0].kstack[0], "k100"); /* root first */
	CHECK_STR(r->threads[0].kstack[1], "k400");
	CHECK_STR(r->threads[1].comm, "middle");
	CHECK_STR(r->threads[1].kstack[1], "k500");
	CHECK_STR(r->threads[1].ustack[0], "u10_800");
	CHECK_STR(r->threads[2].comm, "short");
	CHECK(r->threads[2].blocked_ns == 1000 * MS);
	CHECK(r->threads[2].waker_comm == NULL);
	blocked_answer_free(a);
}

static void test_filters_and_limit(void)
{
	struct offcpu_blocked recs[] = {
		rec(10, 11, "a", 1, 9000 * MS, 0x300, 0),
		rec(10, 12, "b", 0, 1000 * MS, 0x300, 0),
		rec(20, 21, "c", 2, 2000 * MS, 0x300, 0),
		rec(30, 31, "d", 1, 3000 * MS, 0x300, 0),
	};
	struct blocked_clock clock = { .now_ns = 10000 * MS, .now_ms = 1 };
	struct proto_blocked_request req = { .state_mask = 1u << 1 | 1u << 2 };
	const struct proto_blocked_result *r;
	struct blocked_answer *a;

	/* S and D only: b (R) is left out; the limit keeps the longest two */
	req.limit = 2;
	CHECK(blocked_answer_new(recs, 4, &req, &clock, &lk, &a) == 0);
	r = blocked_answer_result(a);
	CHECK(r->n_threads == 2 && r->n_more == 1);
	CHECK(r->threads[0].pid == 21 && r->threads[1].pid == 31);
	blocked_answer_free(a);

	/* a process, a thread, the least time */
	req = (struct proto_blocked_request){ .state_mask = 0xf, .n_pids = 1, .pids = { 10 } };
	CHECK(blocked_answer_new(recs, 4, &req, &clock, &lk, &a) == 0);
	CHECK(blocked_answer_result(a)->n_threads == 2);
	blocked_answer_free(a);
	req = (struct proto_blocked_request){ .state_mask = 0xf, .n_tids = 1, .tids = { 31 } };
	CHECK(blocked_answer_new(recs, 4, &req, &clock, &lk, &a) == 0);
	CHECK(blocked_answer_result(a)->n_threads == 1);
	blocked_answer_free(a);
	req = (struct proto_blocked_request){ .state_mask = 0xf, .min_ns = 7500 * MS };
	CHECK(blocked_answer_new(recs, 4, &req, &clock, &lk, &a) == 0);
	r = blocked_answer_result(a);
	CHECK(r->n_threads == 2 && r->threads[0].pid == 12 && r->threads[1].pid == 21);
	blocked_answer_free(a);

	/* nothing matches: an empty answer, not an error */
	req = (struct proto_blocked_request){ .state_mask = 0xf, .n_pids = 1, .pids = { 99 } };
	CHECK(blocked_answer_new(recs, 4, &req, &clock, &lk, &a) == 0);
	CHECK(blocked_answer_result(a)->n_threads == 0);
	blocked_answer_free(a);
}

static void test_before_any_record_and_waker(void)
{
	struct offcpu_blocked recs[] = {
		rec(40, 41, "old", 1, 0, 0x300, 0),
		rec(50, 51, "woken", 1, 9000 * MS, 0x300, 0),
	};
	struct blocked_clock clock = { .now_ns = 10000 * MS, .now_ms = 5, .loaded_ns = 4000 * MS };
	const struct proto_blocked_result *r;
	struct blocked_answer *a;

	recs[1].wake_ns = 9990 * MS;
	recs[1].waker.pid = 61;
	recs[1].waker.tgid = 60;
	snprintf(recs[1].waker.comm, sizeof(recs[1].waker.comm), "waker");
	CHECK(blocked_answer_new(recs, 2, &all, &clock, &lk, &a) == 0);
	r = blocked_answer_result(a);
	CHECK(r->n_threads == 2);
	/* asleep since before the programs: at least since they were loaded */
	CHECK(r->threads[0].pid == 41 && r->threads[0].blocked_ns == 6000 * MS);
	CHECK(r->threads[0].since_ms == 0);
	CHECK(r->threads[1].pid == 51 && r->threads[1].runq_ns == 10 * MS);
	CHECK_STR(r->threads[1].waker_comm, "waker");
	CHECK(r->threads[1].waker_pid == 61 && r->threads[1].waker_tgid == 60);
	blocked_answer_free(a);
}

int main(void)
{
	test_longest_first_with_names();
	test_filters_and_limit();
	test_before_any_record_and_waker();
	return CHECK_DONE();
}
