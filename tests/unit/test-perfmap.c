/* Unit test of symbols/perfmap.c: perf's /tmp/perf-PID.map format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

#include "check.h"
#include "perfmap.h"

static char path[] = "/tmp/test-perfmap.XXXXXX";

static void write_map(const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);

	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static const char *find(struct perfmap *m, uint64_t addr)
{
	const char *name = perfmap_find(m, addr);

	return name ? name : "(none)";
}

int main(void)
{
	struct perfmap *m;
	int fd = mkstemp(path);
	char big[5000];

	CHECK(fd >= 0);
	close(fd);
	CHECK(perfmap_new(&m) == 0);
	CHECK(perfmap_find(m, 0x1000) == NULL);

	write_map("1000 100 first\n"
		  "0x2000 10 LazyCompile:*foo /app/x.js:3\n" /* 0x prefix, spaces in names */
		  "garbage line\n"
		  "3000 0 empty_size\n"
		  "4000 zz bad_size\n"
		  "5000 10 a;b\n"
		  "1000 20 reused\n", /* later line at the same start wins */
		  "w");
	CHECK(perfmap_refresh(m, path) == 0);
	CHECK_STR(find(m, 0x1000), "reused");
	CHECK_STR(find(m, 0x101f), "reused");
	CHECK_STR(find(m, 0x1020), "first"); /* the older, larger entry still covers it */
	CHECK_STR(find(m, 0x10ff), "first");
	CHECK_STR(find(m, 0x1100), "(none)");
	CHECK_STR(find(m, 0x2008), "LazyCompile:*foo /app/x.js:3");
	CHECK_STR(find(m, 0x3000), "(none)");
	CHECK_STR(find(m, 0x4000), "(none)");
	CHECK_STR(find(m, 0x5000), "a:b");
	CHECK_STR(find(m, 0xfff), "(none)");

	/* grows: re-read */
	write_map("6000 10 appended\n", "a");
	CHECK(perfmap_refresh(m, path) == 0);
	CHECK_STR(find(m, 0x6004), "appended");
	CHECK_STR(find(m, 0x1000), "reused");

	/* gone: entries kept for the exited process's last stacks */
	unlink(path);
	CHECK(perfmap_refresh(m, path) == -ENOENT);
	CHECK_STR(find(m, 0x6004), "appended");

	/* an over-long line is skipped, the next one read */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	write_map("7000 10 ", "w");
	write_map(big, "a");
	write_map("\n8000 10 after_long\n", "a");
	CHECK(perfmap_refresh(m, path) == 0);
	CHECK_STR(find(m, 0x7000), "(none)");
	CHECK_STR(find(m, 0x8000), "after_long");
	unlink(path);
	perfmap_free(m);
	perfmap_free(NULL);
	return CHECK_DONE();
}
