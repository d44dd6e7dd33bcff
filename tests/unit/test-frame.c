/* Unit test of common/frame.c: frame names with inline marks and source lines. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frame.h"

static size_t name_len(const char *frame)
{
	return frame_name_len(frame, strlen(frame));
}

static void check_strip(const char *in, const char *want)
{
	char *out = frame_list_strip_lines(in);

	CHECK(out && !strcmp(out, want));
	free(out);
}

int main(void)
{
	char buf[64];

	/* formatting */
	frame_format(buf, sizeof(buf), "f", false, NULL, 0);
	CHECK(!strcmp(buf, "f"));
	frame_format(buf, sizeof(buf), "g", true, "a.c", 12);
	CHECK(!strcmp(buf, "g [inlined] (a.c:12)"));
	frame_format(buf, sizeof(buf), "h", false, "a.c", 0);
	CHECK(!strcmp(buf, "h"));
	frame_format(buf, sizeof(buf), "h", false, "we(ird).c", 3); /* unparseable: no line */
	CHECK(!strcmp(buf, "h"));
	frame_format(buf, sizeof(buf), "a;b", false, "x.c", 3); /* ';' joins frames */
	CHECK(!strcmp(buf, "a:b (x.c:3)"));

	/* the line suffix, and what is not one */
	CHECK(name_len("main (m.c:5)") == 4);
	CHECK(name_len("g [inlined] (a.c:12)") == strlen("g [inlined]"));
	CHECK(name_len("app::S::f(int) (s.cc:40)") == strlen("app::S::f(int)"));
	CHECK(name_len("app::S::f(int)") == strlen("app::S::f(int)"));
	CHECK(name_len("foo(int:3)") == strlen("foo(int:3)")); /* no space before '(' */
	CHECK(name_len("x (a.c:3") == strlen("x (a.c:3"));
	CHECK(name_len("x (a.c:)") == strlen("x (a.c:)"));
	CHECK(name_len("x (:7)") == strlen("x (:7)"));
	CHECK(name_len("x (a.c:7) ") == strlen("x (a.c:7) "));
	CHECK(name_len("") == 0);
	CHECK(name_len(" (a:1)") == 0);

	CHECK(!frame_list_has_lines("a;b [inlined];libc.so.6+0x10"));
	CHECK(frame_list_has_lines("a;b (b.c:1)"));
	check_strip("", "");
	check_strip("a;b", "a;b");
	check_strip("main (m.c:5);f [inlined] (f.c:9);libc.so.6+0x10",
		    "main;f [inlined];libc.so.6+0x10");
	return CHECK_DONE();
}
