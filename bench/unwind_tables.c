/*
 * unwind_tables: how long daemon/kernel/unwind_table.c takes to build the unwind
 * table of each file given, and how large the table is (rows and bytes in
 * the kernel's unwind_rows array). Best of 5 builds per file.
 *
 * Usage: unwind_tables FILE...   (e.g. /usr/sbin/mariadbd /lib/x86_64-linux-gnu/libc.so.6)
 */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "unwind_table.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int status = 0;

	printf("%-45s %10s %12s %10s %12s\n", "file", "rows", "bytes", "build ms", "unsupported");
	for (int i = 1; i < argc; i++) {
		struct unwind_table t = { 0 };
		double best = 1e9;
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC), r = -1;

		if (fd < 0) {
			perror(argv[i]);
			status = 1;
			continue;
		}
		for (int k = 0; k < 5; k++) {
			double t0 = now_s();

			unwind_table_free(&t);
			r = unwind_table_build(fd, 1u << 26, &t);
			if (now_s() - t0 < best)
				best = now_s() - t0;
		}
		close(fd);
		if (r < 0) {
			fprintf(stderr, "%s: no table (%d)\n", argv[i], r);
			status = 1;
			continue;
		}
		printf("%-45s %10zu %12zu %10.1f %12u\n", argv[i], t.n_rows,
		       t.n_rows * sizeof(*t.rows), best * 1e3, t.n_unsupported);
		unwind_table_free(&t);
	}
	return status;
}
