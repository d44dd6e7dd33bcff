/* Unit test of common/stack_filter.c. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "proto.h"
#include "stack_filter.h"
#include "thread_state.h"

#define S_BIT(s) (1u << (s)) /* thread_state bits: R 0, S 1, D 2, O 3 */

static struct stack_filter *make(const struct stack_filter_spec *spec)
{
	struct stack_filter *f = NULL;
	char err[256] = "";
	int r = stack_filter_new(spec, &f, err, sizeof(err));

	CHECK_MSG(r == 0, "(%s)", err);
	return f;
}

static struct stack_filter *make_re(const char *grep, const char *exclude)
{
	struct stack_filter_spec spec = { .grep = grep, .exclude = exclude };

	return make(&spec);
}

/* An offcpu row of process 100 in state S. */
static bool keep_row(const struct stack_filter *f, const char *comm, const char *ustack,
		     const char *kstack)
{
	struct stack_filter_sample s = {
		.comm = comm,
		.tgid = 100,
		.state = 1,
		.kind = PROTO_KIND_OFFCPU,
		.ustack = ustack,
		.kstack = kstack,
	};

	return stack_filter_keep(f, &s);
}

static bool keep_line(const struct stack_filter *f, const char *stack)
{
	return stack_filter_keep_folded(f, stack, strlen(stack));
}

static void test_grep_exclude(void)
{
	struct stack_filter *f;

	f = make_re("", NULL);
	CHECK(keep_row(f, "app", "main;work", "schedule"));
	CHECK(keep_row(f, "", NULL, NULL));
	stack_filter_free(f);

	/* grep: some frame must match; anchors apply to one frame. */
	f = make_re("^do_command$", NULL);
	CHECK(keep_row(f, "mysqld", "start_thread;do_command;read", "schedule"));
	CHECK(!keep_row(f, "mysqld", "start_thread;do_command_x;read", "schedule"));
	CHECK(keep_row(f, "mysqld", "start_thread;x;do_command", "")); /* last frame */
	CHECK(keep_row(f, "mysqld", "do_command;x", ""));	       /* first frame */
	CHECK(!keep_row(f, "do_command_thread", "", ""));
	CHECK(keep_row(f, "mysqld", "start_thread;do_command;", "")); /* a trailing ';' */
	CHECK(keep_row(f, "mysqld", "", "do_command"));		      /* kernel part */
	stack_filter_free(f);

	/* The comm is a frame, and it is one frame: no split at ';'. */
	f = make_re("sleep", NULL);
	CHECK(keep_row(f, "ow-sleeper", "main", "schedule"));
	CHECK(keep_row(f, "x", "main", "do_nanosleep;schedule"));
	CHECK(!keep_row(f, "x", "main", "schedule"));
	stack_filter_free(f);
	f = make_re("^ow-sleeper$", NULL);
	CHECK(keep_row(f, "ow-sleeper", "", ""));
	CHECK(!keep_row(f, "ow-sleeper2", "", ""));
	stack_filter_free(f);

	/* exclude wins over grep. */
	f = make_re("read", "pipe");
	CHECK(keep_row(f, "a", "reader_thread;read", "vfs_read"));
	CHECK(!keep_row(f, "a", "reader_thread;read", "anon_pipe_read"));
	CHECK(!keep_row(f, "a", "main", "schedule"));
	CHECK(!keep_row(f, "pipe", "read", ""));
	stack_filter_free(f);

	/* exclude alone. */
	f = make_re(NULL, "^schedule$");
	CHECK(!keep_row(f, "a", "main", "schedule"));
	CHECK(keep_row(f, "a", "main", "schedule_timeout"));
	stack_filter_free(f);

	/* Frames longer than the matcher's buffer. */
	{
		char *big = malloc(3001);

		memset(big, 'x', 3000);
		big[3000] = '\0';
		memcpy(big + 2990, "do_command", 10);
		f = make_re("do_command$", NULL);
		CHECK(keep_row(f, "a", big, ""));
		big[2999] = 'y';
		CHECK(!keep_row(f, "a", big, ""));
		stack_filter_free(f);
		free(big);
	}
}

/* The delimiters "-" and "--" and empty names are no frames. */
static void test_delimiters(void)
{
	struct stack_filter *f;
	struct stack_filter_sample s = {
		.comm = "app",
		.tgid = 1,
		.state = 1,
		.kind = PROTO_KIND_OFFWAKE,
		.ustack = "main",
		.kstack = "schedule",
		.chain = "try_to_wake_up;-;producer_loop;producer",
	};

	f = make_re("^-$", NULL);
	CHECK(!stack_filter_keep(f, &s));
	CHECK(!keep_line(f, "app;main;-;schedule;--;try_to_wake_up;-;producer"));
	stack_filter_free(f);
	f = make_re("^--?$", NULL);
	CHECK(!keep_line(f, "app;main;-;schedule;--;try_to_wake_up;-;producer"));
	stack_filter_free(f);
	f = make_re("^$", NULL);
	CHECK(!keep_row(f, "a", "", ""));
	CHECK(!keep_line(f, "a;;b"));
	stack_filter_free(f);
	/* A frame merely holding a dash is a frame. */
	f = make_re("^x-y$", NULL);
	CHECK(keep_line(f, "app;x-y"));
	stack_filter_free(f);
}

/* grep and exclude see every frame the kind's folded line prints. */
static void test_kinds(void)
{
	struct stack_filter *f;
	struct stack_filter_sample s = {
		.comm = "consumer",
		.tgid = 1,
		.state = 1,
		.kind = PROTO_KIND_OFFWAKE,
		.ustack = "main;consume",
		.kstack = "do_futex;schedule",
		.chain = "try_to_wake_up;futex_wake;-;produce;main;producer",
	};

	/* The waker part: its frames and the waker's name. */
	f = make_re("^futex_wake$", NULL);
	CHECK(stack_filter_keep(f, &s));
	s.kind = PROTO_KIND_CHAIN;
	CHECK(stack_filter_keep(f, &s));
	s.kind = PROTO_KIND_OFFCPU; /* an offcpu line prints no waker part */
	CHECK(!stack_filter_keep(f, &s));
	stack_filter_free(f);
	f = make_re(NULL, "^producer$");
	s.kind = PROTO_KIND_OFFWAKE;
	CHECK(!stack_filter_keep(f, &s));
	s.kind = PROTO_KIND_OFFCPU;
	CHECK(stack_filter_keep(f, &s));
	stack_filter_free(f);

	/* A wakeup line prints the comm and the waker part only. */
	f = make_re("^consume$", NULL);
	s.kind = PROTO_KIND_WAKEUP;
	CHECK(!stack_filter_keep(f, &s));
	s.kind = PROTO_KIND_OFFWAKE;
	CHECK(stack_filter_keep(f, &s));
	stack_filter_free(f);
	f = make_re("^consumer$", NULL);
	s.kind = PROTO_KIND_WAKEUP;
	CHECK(stack_filter_keep(f, &s));
	stack_filter_free(f);

	/* A run-queue line ends in [runqueue]; an offcpu one does not. */
	f = make_re("^\\[runqueue\\]$", NULL);
	s.kind = PROTO_KIND_RUNQ;
	CHECK(stack_filter_keep(f, &s));
	s.kind = PROTO_KIND_OFFCPU;
	CHECK(!stack_filter_keep(f, &s));
	CHECK(keep_line(f, "consumer;main;-;schedule;[runqueue]"));
	stack_filter_free(f);
}

static void test_comm_pids_states(void)
{
	uint32_t pids[] = { 300, 100, 200 };
	struct stack_filter_spec spec = { .comm = "ow-reader" };
	struct stack_filter_sample s = {
		.comm = "ow-reader",
		.tgid = 100,
		.state = 1,
		.kind = PROTO_KIND_OFFCPU,
		.ustack = "reader_thread;read",
		.kstack = "pipe_read;schedule",
	};
	struct stack_filter *f;

	/* comm: exact, whole, case-sensitive; not a regex. */
	f = make(&spec);
	CHECK(stack_filter_keep(f, &s));
	s.comm = "ow-reader2";
	CHECK(!stack_filter_keep(f, &s));
	s.comm = "ow-Reader";
	CHECK(!stack_filter_keep(f, &s));
	s.comm = "ow-reade";
	CHECK(!stack_filter_keep(f, &s));
	stack_filter_free(f);
	spec.comm = "ow-.*";
	f = make(&spec);
	CHECK(!stack_filter_keep(f, &s));
	stack_filter_free(f);
	s.comm = "ow-reader";

	/* pids: the process (tgid), in any order given. */
	spec = (struct stack_filter_spec){ .pids = pids, .n_pids = 3 };
	f = make(&spec);
	pids[0] = 1; /* the filter keeps its own copy */
	CHECK(stack_filter_keep(f, &s));
	s.tgid = 300;
	CHECK(stack_filter_keep(f, &s));
	s.tgid = 101;
	CHECK(!stack_filter_keep(f, &s));
	s.tgid = STACK_FILTER_UNKNOWN;
	CHECK(!stack_filter_keep(f, &s));
	stack_filter_free(f);
	s.tgid = 100;

	/* states: a mask of thread states; 0 and all mean any. */
	spec = (struct stack_filter_spec){ .state_mask = S_BIT(2) };
	f = make(&spec);
	CHECK(!stack_filter_keep(f, &s)); /* S */
	s.state = 2;
	CHECK(stack_filter_keep(f, &s)); /* D */
	s.state = STACK_FILTER_UNKNOWN;
	CHECK(!stack_filter_keep(f, &s));
	s.state = 7;
	CHECK(!stack_filter_keep(f, &s));
	stack_filter_free(f);
	for (uint32_t mask = 0; mask <= THREAD_STATE_ALL; mask += THREAD_STATE_ALL) {
		spec.state_mask = mask;
		f = make(&spec);
		s.state = STACK_FILTER_UNKNOWN;
		CHECK(stack_filter_keep(f, &s));
		s.state = 3;
		CHECK(stack_filter_keep(f, &s));
		stack_filter_free(f);
	}
	s.state = 1;

	/* All five together: every one must pass. */
	spec = (struct stack_filter_spec){
		.comm = "ow-reader",
		.pids = pids,
		.n_pids = 3,
		.state_mask = S_BIT(1) | S_BIT(2),
		.grep = "^pipe_read$",
		.exclude = "^vfs_write$",
	};
	pids[0] = 300;
	f = make(&spec);
	CHECK(stack_filter_keep(f, &s));
	s.comm = "ow-writer";
	CHECK(!stack_filter_keep(f, &s));
	s.comm = "ow-reader";
	s.tgid = 5;
	CHECK(!stack_filter_keep(f, &s));
	s.tgid = 100;
	s.state = 0;
	CHECK(!stack_filter_keep(f, &s));
	s.state = 2;
	CHECK(stack_filter_keep(f, &s));
	s.kstack = "pipe_write;schedule";
	CHECK(!stack_filter_keep(f, &s));
	s.kstack = "pipe_read;vfs_write";
	CHECK(!stack_filter_keep(f, &s));
	stack_filter_free(f);
}

/* Folded text: no pids nor states; the comm is the first frame. */
static void test_folded(void)
{
	uint32_t pid = 1;
	struct stack_filter_spec spec = { .folded = true, .pids = &pid, .n_pids = 1 };
	struct stack_filter *f = NULL;
	char err[256] = "", text[512];
	size_t len;

	CHECK(stack_filter_new(&spec, &f, err, sizeof(err)) == -EINVAL && !f);
	CHECK(strstr(err, "folded stacks do not record pids or thread states") != NULL);
	spec = (struct stack_filter_spec){ .folded = true, .state_mask = S_BIT(2) };
	err[0] = '\0';
	CHECK(stack_filter_new(&spec, &f, err, sizeof(err)) == -EINVAL && !f);
	CHECK(strstr(err, "do not record") != NULL);
	spec.state_mask = THREAD_STATE_ALL; /* the default: no filter */
	f = make(&spec);
	CHECK(keep_line(f, "a;b"));
	stack_filter_free(f);

	/* --comm is the first frame, exactly. */
	spec = (struct stack_filter_spec){ .folded = true, .comm = "ow-reader" };
	f = make(&spec);
	CHECK(keep_line(f, "ow-reader;reader_thread;read;-;pipe_read"));
	CHECK(keep_line(f, "ow-reader"));
	CHECK(!keep_line(f, "ow-reader2;reader_thread"));
	CHECK(!keep_line(f, "main;ow-reader"));
	CHECK(!keep_line(f, ""));
	stack_filter_free(f);

	/* grep: every frame, the comm included; per-frame anchors. */
	f = make_re("^do_command$", NULL);
	CHECK(keep_line(f, "mysqld;start_thread;do_command;-;schedule"));
	CHECK(!keep_line(f, "mysqld;start_thread;do_command_x"));
	CHECK(keep_line(f, "do_command"));
	stack_filter_free(f);

	/* Whole text, in place: 2 columns, CRLF, decimals, invalid lines. */
	f = make_re("sleep", NULL);
	strcpy(text, "ow-sleeper;main;-;do_nanosleep 12\n"
		     "ow-reader;main;-;pipe_read 7\r\n"
		     "no count here\n"
		     "\n"
		     "x;frame with spaces;nanosleep 1.5\n"
		     "y;a 3");
	len = stack_filter_folded(f, text, strlen(text));
	text[len] = '\0';
	CHECK_STR(text, "ow-sleeper;main;-;do_nanosleep 12\n"
			"\n"
			"no count here\n"
			"\n"
			"x;frame with spaces;nanosleep 1.5\n");
	stack_filter_free(f);

	/* 3 columns: both counts are cut before matching. */
	f = make_re("^b$", NULL);
	strcpy(text, "a;b 1 2\na;c 3 4\na;b\t5\t6  \n");
	len = stack_filter_folded(f, text, strlen(text));
	text[len] = '\0';
	CHECK_STR(text, "a;b 1 2\n\na;b\t5\t6  \n");
	stack_filter_free(f);
	f = make_re("^b 1$", NULL); /* a count is no part of a frame */
	strcpy(text, "a;b 1 2\n");
	CHECK(stack_filter_folded(f, text, strlen(text)) == 1);
	stack_filter_free(f);
}

/* The daemon's row and its folded line (daemon/profile/folded.c's layout) give the
 * same answer, whatever the pattern. */
static void test_row_equals_line(void)
{
	static const char *const patterns[] = {
		"^app$",
		"^main$",
		"^schedule$",
		"^-$",
		"^--$",
		"^producer$",
		"^try_to_wake_up$",
		"^\\[runqueue\\]$",
		"^\\[on-cpu\\]$",
		"app;main",
		"e",
		"^a",
		"^$",
		"^work$",
	};
	static const struct {
		uint32_t kind;
		const char *line;
	} rows[] = {
		{ PROTO_KIND_OFFCPU, "app;main;work;-;do_sys_poll;schedule" },
		{ PROTO_KIND_RUNQ, "app;main;work;-;do_sys_poll;schedule;[runqueue]" },
		{ PROTO_KIND_ONCPU, "app;main;work;-;do_sys_poll;schedule;[on-cpu]" },
		{ PROTO_KIND_WAKEUP, "app;try_to_wake_up;-;produce;producer" },
		{ PROTO_KIND_OFFWAKE,
		  "app;main;work;-;do_sys_poll;schedule;--;try_to_wake_up;-;produce;producer" },
		{ PROTO_KIND_CHAIN, "app;main;work;-;do_sys_poll;schedule;--;try_to_wake_up;-;"
				    "produce;producer;--;[softirq]" },
	};

	for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
		struct stack_filter *f = make_re(patterns[p], NULL);

		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			struct stack_filter_sample s = {
				.comm = "app",
				.tgid = 1,
				.state = 1,
				.kind = rows[i].kind,
				.ustack = "main;work",
				.kstack = "do_sys_poll;schedule",
				.chain = rows[i].kind == PROTO_KIND_CHAIN
						 ? "try_to_wake_up;-;produce;producer;--;[softirq]"
						 : "try_to_wake_up;-;produce;producer",
			};

			CHECK_MSG(stack_filter_keep(f, &s) == keep_line(f, rows[i].line),
				  "(pattern '%s', line '%s')", patterns[p], rows[i].line);
		}
		stack_filter_free(f);
	}
}

static void test_bad_patterns(void)
{
	struct stack_filter_spec spec = { .grep = "(unclosed" };
	struct stack_filter *f = NULL;
	char err[256], why[128];

	CHECK(stack_filter_new(&spec, &f, err, sizeof(err)) == -EINVAL && !f);
	CHECK(strstr(err, "bad grep pattern '(unclosed'") != NULL);
	spec = (struct stack_filter_spec){ .grep = "ok", .exclude = "[z-a]" };
	CHECK(stack_filter_new(&spec, &f, err, sizeof(err)) == -EINVAL && !f);
	CHECK(strstr(err, "bad exclude pattern") != NULL);

	CHECK(stack_filter_regex_valid("^do_(sys_)?poll$", why, sizeof(why)));
	CHECK(!stack_filter_regex_valid("(", why, sizeof(why)) && why[0]);
	CHECK(!stack_filter_regex_valid("a\\", why, sizeof(why)));
	/* Bounds above 255 refused; so is any escape in an interval, where
	 * glibc reads "\\," as the comma and "\\0" as a digit. */
	CHECK(stack_filter_regex_valid("a{2,255}", why, sizeof(why)));
	CHECK(!stack_filter_regex_cheap("a{1,256}", why, sizeof(why)) && strstr(why, "above 255"));
	CHECK(!stack_filter_regex_cheap("a{2\\,3}b", why, sizeof(why)) && strstr(why, "escaped"));
	CHECK(!stack_filter_regex_cheap("a{\\0,3}b", why, sizeof(why)) && strstr(why, "escaped"));
	CHECK(!stack_filter_regex_cheap("a{2\\0}", why, sizeof(why)) && strstr(why, "escaped"));
	CHECK(!stack_filter_regex_cheap("(:))+)+{1\\,25544}+)+", why, sizeof(why)));
	CHECK(!stack_filter_regex_cheap("(:))+)+{\\0,25544}+)&", why, sizeof(why)));
	/* An escaped brace is a character; an unescaped one opens an interval,
	 * which glibc refuses where no atom stands before it. */
	CHECK(stack_filter_regex_valid("\\{lambda", why, sizeof(why)));
	CHECK(!stack_filter_regex_valid("{lambda", why, sizeof(why)) && !strstr(why, "costly"));
	/* Not an interval to glibc: regcomp() says why. */
	CHECK(!stack_filter_regex_valid("a{1x,3}", why, sizeof(why)) && !strstr(why, "costly"));
	CHECK(!stack_filter_regex_valid("a{1,2,3}", why, sizeof(why)) && !strstr(why, "costly"));
	CHECK(!stack_filter_regex_valid("a{1\\}", why, sizeof(why)) && !strstr(why, "costly"));
	stack_filter_free(NULL);
}

int main(void)
{
	test_grep_exclude();
	test_delimiters();
	test_kinds();
	test_comm_pids_states();
	test_folded();
	test_row_equals_line();
	test_bad_patterns();
	return CHECK_DONE();
}
