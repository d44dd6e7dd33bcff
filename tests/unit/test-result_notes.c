/*
 * Unit test of daemon/profile/result_notes.c: the notes of an empty or
 * partly unnamed result, the filters as offcpuctl spells them, and a pid
 * that is a thread of another process (a /proc fixture).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "result_notes.h"
#include "thread_state.h"

static void add_row(struct profile *p, const char *ustack, uint64_t ns)
{
	struct profile_row row = {
		.comm = "app",
		.tgid = 10,
		.pid = 10,
		.state = 1,
		.sum_ns = ns,
		.count = 1,
		.ustack = ustack,
		.kstack = "schedule",
		.chain = "",
	};

	CHECK(profile_add_row(p, &row) == 0);
}

static void test_frames(void)
{
	struct result_notes notes = { 0 };
	struct result_frame_shares s;
	struct profile *p = NULL;

	CHECK(profile_new(&p) == 0);
	if (!p)
		return;
	add_row(p, "main;[unknown: anonymous];[unknown: anonymous]", 10);
	add_row(p, "[truncated];f;g", 30);
	add_row(p, "[truncated]x;f", 1000); /* a frame that only starts alike */
	add_row(p, "main;work", 160);
	result_frame_shares(p, &s);
	CHECK(s.total_ns == 1200 && s.anonymous_ns == 10 && s.truncated_ns == 30);
	/* 0.8 % and 2.5 %: under the threshold, no note. */
	CHECK(result_notes_frames(&notes, &s) == 0 && notes.n == 0);

	s = (struct result_frame_shares){ .total_ns = 100, .anonymous_ns = 5, .truncated_ns = 40 };
	CHECK(result_notes_frames(&notes, &s) == 0 && notes.n == 2);
	if (notes.n == 2) {
		CHECK(!strncmp(notes.v[0],
			       "5% of the time is in frames [unknown: anonymous]: ", 50));
		CHECK(strstr(notes.v[0], "Node: --perf-basic-prof; the JVM: jcmd PID "
					 "Compiler.perfmap") != NULL);
		CHECK(!strncmp(notes.v[1],
			       "40% of the time has user stacks with the root frame "
			       "[truncated]: ",
			       65));
		CHECK(strstr(notes.v[1], "docs/UNWINDING.md") != NULL);
	}
	result_notes_free(&notes);
	CHECK(notes.n == 0);
	profile_free(p);
}

static void test_limit(void)
{
	struct result_notes notes = { 0 };

	for (int i = 0; i < RESULT_NOTES_MAX + 3; i++)
		CHECK(result_notes_add(&notes, "note %d", i) == 0);
	CHECK(notes.n == RESULT_NOTES_MAX);
	CHECK_STR(notes.v[0], "note 0");
	result_notes_free(&notes);
}

static void test_filters(void)
{
	const uint32_t pids[] = { 12, 13 };
	char buf[256];

	result_notes_filters(buf, sizeof(buf), NULL, 0, THREAD_STATE_ALL, "", "", "", "", "", "");
	CHECK_STR(buf, "");
	result_notes_filters(buf, sizeof(buf), pids, 2, 0x6, "nginx", "a b", "x", "/system.slice",
			     "", "");
	CHECK_STR(buf, "--pid 12,13 --state S,D --comm nginx --grep 'a b' --exclude x "
		       "--cgroup /system.slice");
	/* Cut short, still terminated. */
	result_notes_filters(buf, 12, pids, 2, THREAD_STATE_ALL, "nginx", "", "", "", "", "");
	CHECK(strlen(buf) < 12);
}

static void write_status(const char *root, const char *id, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, id);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/status", root, id);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_thread_of(void)
{
	char root[] = "/tmp/test-result_notes-XXXXXX";
	uint32_t tgid = 0;

	CHECK(mkdtemp(root) != NULL);
	write_status(root, "100", "Name:\tapp\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t100\n");
	write_status(root, "101", "Name:\tworker\nState:\tS (sleeping)\nTgid:\t100\nPid:\t101\n");
	CHECK(!result_notes_thread_of(root, 100, &tgid) && tgid == 0);
	CHECK(result_notes_thread_of(root, 101, &tgid) && tgid == 100);
	CHECK(!result_notes_thread_of(root, 102, &tgid)); /* no such thread */
	for (int id = 100; id <= 101; id++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/%d/status", root, id);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%d", root, id);
		rmdir(path);
	}
	rmdir(root);
}

int main(void)
{
	test_frames();
	test_limit();
	test_filters();
	test_thread_of();
	return check_failures ? 1 : 0;
}
