/* Unit test of daemon/stack_filter.c. */
#include <errno.h>

#include "check.h"
#include "stack_filter.h"

int main(void)
{
	struct stack_filter f;
	char err[256];

	CHECK(stack_filter_init(&f, "", NULL, err, sizeof(err)) == 0);
	CHECK(stack_filter_keep(&f, "app", "main;work", "schedule"));
	stack_filter_done(&f);

	/* grep: some frame must match; anchors apply to one frame. */
	CHECK(stack_filter_init(&f, "^do_command$", NULL, err, sizeof(err)) == 0);
	CHECK(stack_filter_keep(&f, "mysqld", "start_thread;do_command;read", "schedule"));
	CHECK(!stack_filter_keep(&f, "mysqld", "start_thread;do_command_x;read", "schedule"));
	CHECK(stack_filter_keep(&f, "mysqld", "start_thread;x;do_command", "")); /* last frame */
	CHECK(!stack_filter_keep(&f, "do_command_thread", "", ""));
	stack_filter_done(&f);

	/* The comm and kernel frames count too. */
	CHECK(stack_filter_init(&f, "sleep", NULL, err, sizeof(err)) == 0);
	CHECK(stack_filter_keep(&f, "ow-sleeper", "main", "schedule"));
	CHECK(stack_filter_keep(&f, "x", "main", "do_nanosleep;schedule"));
	CHECK(!stack_filter_keep(&f, "x", "main", "schedule"));
	stack_filter_done(&f);

	/* exclude wins over grep. */
	CHECK(stack_filter_init(&f, "read", "pipe", err, sizeof(err)) == 0);
	CHECK(stack_filter_keep(&f, "a", "reader_thread;read", "vfs_read"));
	CHECK(!stack_filter_keep(&f, "a", "reader_thread;read", "anon_pipe_read"));
	CHECK(!stack_filter_keep(&f, "a", "main", "schedule"));
	stack_filter_done(&f);

	/* Bad patterns: a clear error, nothing to free. */
	CHECK(stack_filter_init(&f, "(unclosed", NULL, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "bad grep pattern '(unclosed'") != NULL);
	CHECK(stack_filter_init(&f, "ok", "[z-a]", err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "bad exclude pattern") != NULL);
	return CHECK_DONE();
}
