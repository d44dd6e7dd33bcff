/*
 * io_workload: a ground-truth workload for the I/O kinds (bio, fileio).
 *
 * Three threads, each doing one kind of I/O on a file in --dir (which must be
 * on a real disk, not tmpfs, for O_DIRECT reads to reach the device):
 *   iow-direct  direct_read_thread -> read_direct_block -> pread, O_DIRECT,
 *               --reads 4 KiB blocks at distinct offsets spread over 16 MiB
 *   iow-sync    sync_write_thread -> write_and_sync -> pwrite 4 KiB, fsync;
 *               --syncs times
 *   iow-cached  cached_read_thread -> read_cached_block -> pread 4 KiB of a
 *               file in the page cache; --cached times (fast)
 * As in offcpu_workload, libc has no frame pointers, so a frame-pointer walk
 * shows the <role>_thread function above libc; read_direct_block and friends
 * are lost. Each thread times its calls with CLOCK_MONOTONIC; when done the
 * workload prints one JSON line: {"pid":P,"threads":[{"name","tid","function",
 * "calls","bytes","io_ns"}, ...]}. With --wait-go it then waits for a second
 * line (or EOF) on stdin before it removes its files and exits, so that a
 * capture can still symbolize its stacks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_attribute)
#if __has_attribute(noipa)
#define WORKLOAD_FRAME __attribute__((noinline, noipa))
#endif
#endif
#ifndef WORKLOAD_FRAME
#define WORKLOAD_FRAME __attribute__((noinline)) /* clang: no noipa */
#endif
#define BLOCK	       4096
#define FILE_BYTES     (16u << 20)

struct io_thread {
	const char *name;
	const char *function; /* what a frame-pointer walk shows */
	void *(*run)(void *);
	unsigned long calls_wanted;
	int fd;
	pid_t tid;
	unsigned long calls;
	uint64_t bytes, io_ns;
};

static pthread_barrier_t start_line;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static void *aligned_block(void)
{
	void *buf = NULL;

	if (posix_memalign(&buf, BLOCK, BLOCK))
		exit(2);
	memset(buf, 'x', BLOCK);
	return buf;
}

static void thread_begin(struct io_thread *t)
{
	pthread_setname_np(pthread_self(), t->name);
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&start_line);
}

static WORKLOAD_FRAME ssize_t read_direct_block(int fd, void *buf, off_t off)
{
	return pread(fd, buf, BLOCK, off);
}

static WORKLOAD_FRAME void *direct_read_thread(void *arg)
{
	struct io_thread *t = arg;
	void *buf = aligned_block();

	thread_begin(t);
	for (unsigned long i = 0; i < t->calls_wanted; i++) {
		/* Distinct blocks, 64 KiB apart at least: no merges, no readahead. */
		off_t off = (off_t)((i * 7919u) % (FILE_BYTES / (16 * BLOCK))) * 16 * BLOCK;
		uint64_t t0 = now_ns();
		ssize_t n = read_direct_block(t->fd, buf, off);

		t->io_ns += now_ns() - t0;
		if (n != BLOCK) {
			perror("io_workload: O_DIRECT pread");
			exit(1);
		}
		t->calls++;
		t->bytes += n;
	}
	free(buf);
	return NULL;
}

static WORKLOAD_FRAME int write_and_sync(int fd, const void *buf, off_t off)
{
	if (pwrite(fd, buf, BLOCK, off) != BLOCK)
		return -1;
	return fsync(fd);
}

static WORKLOAD_FRAME void *sync_write_thread(void *arg)
{
	struct io_thread *t = arg;
	void *buf = aligned_block();

	thread_begin(t);
	for (unsigned long i = 0; i < t->calls_wanted; i++) {
		uint64_t t0 = now_ns();

		if (write_and_sync(t->fd, buf, (off_t)(i % 256) * BLOCK) < 0) {
			perror("io_workload: pwrite+fsync");
			exit(1);
		}
		t->io_ns += now_ns() - t0;
		t->calls++;
		t->bytes += BLOCK;
	}
	free(buf);
	return NULL;
}

static WORKLOAD_FRAME ssize_t read_cached_block(int fd, void *buf, off_t off)
{
	return pread(fd, buf, BLOCK, off);
}

static WORKLOAD_FRAME void *cached_read_thread(void *arg)
{
	struct io_thread *t = arg;
	void *buf = aligned_block();

	thread_begin(t);
	for (unsigned long i = 0; i < t->calls_wanted; i++) {
		uint64_t t0 = now_ns();
		ssize_t n = read_cached_block(t->fd, buf, (off_t)(i % 16) * BLOCK);

		t->io_ns += now_ns() - t0;
		if (n != BLOCK) {
			perror("io_workload: cached pread");
			exit(1);
		}
		t->calls++;
		t->bytes += n;
	}
	free(buf);
	return NULL;
}

static int open_file(const char *dir, const char *name, int flags, size_t size, char *path,
		     size_t path_size)
{
	void *buf = aligned_block();
	int fd;

	snprintf(path, path_size, "%s/io_workload.%d.%s", dir, (int)getpid(), name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	for (size_t off = 0; off < size; off += BLOCK)
		if (pwrite(fd, buf, BLOCK, (off_t)off) != BLOCK) {
			perror(path);
			exit(2);
		}
	fsync(fd);
	close(fd);
	free(buf);
	fd = open(path, O_RDWR | flags);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	return fd;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "dir", required_argument, NULL, 'D' },
		{ "reads", required_argument, NULL, 'r' },
		{ "syncs", required_argument, NULL, 's' },
		{ "cached", required_argument, NULL, 'c' },
		{ "wait-go", no_argument, NULL, 'w' },
		{ 0 },
	};
	struct io_thread threads[] = {
		{ .name = "iow-direct",
		  .function = "direct_read_thread",
		  .run = direct_read_thread,
		  .calls_wanted = 200 },
		{ .name = "iow-sync",
		  .function = "sync_write_thread",
		  .run = sync_write_thread,
		  .calls_wanted = 20 },
		{ .name = "iow-cached",
		  .function = "cached_read_thread",
		  .run = cached_read_thread,
		  .calls_wanted = 2000 },
	};
	char paths[3][4096], line[64];
	const char *dir = ".";
	bool wait_go = false;
	pthread_t ids[3];
	int opt;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'D':
			dir = optarg;
			break;
		case 'r':
			threads[0].calls_wanted = strtoul(optarg, NULL, 10);
			break;
		case 's':
			threads[1].calls_wanted = strtoul(optarg, NULL, 10);
			break;
		case 'c':
			threads[2].calls_wanted = strtoul(optarg, NULL, 10);
			break;
		case 'w':
			wait_go = true;
			break;
		default:
			fprintf(stderr, "usage: io_workload [--dir DIR] [--reads N] [--syncs N] "
					"[--cached N] [--wait-go]\n");
			return 2;
		}
	}
	threads[0].fd = open_file(dir, "direct", O_DIRECT, FILE_BYTES, paths[0], sizeof(paths[0]));
	threads[1].fd = open_file(dir, "sync", 0, 256 * BLOCK, paths[1], sizeof(paths[1]));
	threads[2].fd = open_file(dir, "cached", 0, 16 * BLOCK, paths[2], sizeof(paths[2]));
	pthread_barrier_init(&start_line, NULL, 4);
	for (int i = 0; i < 3; i++)
		pthread_create(&ids[i], NULL, threads[i].run, &threads[i]);
	if (wait_go) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	pthread_barrier_wait(&start_line);
	for (int i = 0; i < 3; i++)
		pthread_join(ids[i], NULL);
	printf("{\"pid\":%d,\"threads\":[", (int)getpid());
	for (int i = 0; i < 3; i++) {
		struct io_thread *t = &threads[i];

		printf("%s{\"name\":\"%s\",\"tid\":%d,\"function\":\"%s\",\"calls\":%lu,"
		       "\"bytes\":%" PRIu64 ",\"io_ns\":%" PRIu64 "}",
		       i ? "," : "", t->name, (int)t->tid, t->function, t->calls, t->bytes,
		       t->io_ns);
		close(t->fd);
	}
	printf("]}\n");
	fflush(stdout);
	/* Stay alive, files kept, until told: a capture symbolizes our stacks at its end. */
	if (wait_go && !fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	for (int i = 0; i < 3; i++)
		unlink(paths[i]);
	return 0;
}
