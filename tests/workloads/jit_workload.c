/*
 * jit_workload: what a JIT does, reduced to one function. Copies a tiny
 * machine-code function that calls nanosleep through the syscall
 * instruction into an anonymous executable mapping, names it in
 * /tmp/perf-PID.map (perf's format: "START SIZE name", hex), and sleeps
 * through it. x86-64 only.
 *
 * Usage: jit_workload [--sleeps N] [--sleep-ms MS] [--map 0]
 * (--map 0: no perf map, as a JIT started without one)
 * Prints "ready PID", waits for a line on stdin, sleeps, prints
 * {"blocked_ns":...,"blocks":N,"jit_name":"..."}, and removes its map and
 * exits when stdin closes.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define JIT_NAME "jit_sleep_stub"

/* long stub(const struct timespec *req, struct timespec *rem):
 * mov eax, 35 (SYS_nanosleep); syscall; ret. The arguments are already in
 * rdi and rsi. */
static const unsigned char stub_code[] = { 0xb8, 0x23, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3 };

typedef long (*stub_fn)(const struct timespec *, struct timespec *);

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

int main(int argc, char **argv)
{
	int sleeps = 40, write_map = 1;
	long sleep_ms = 20;
	char line[16], map_path[64];
	uint64_t blocked = 0;
	struct timespec ts;
	unsigned char *code;
	stub_fn stub;
	FILE *map;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sleeps"))
			sleeps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--sleep-ms"))
			sleep_ms = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--map"))
			write_map = atoi(argv[i + 1]);
	}
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	/* Some bytes before the stub, so it does not start the mapping. */
	memset(code, 0xcc, 4096);
	memcpy(code + 64, stub_code, sizeof(stub_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) < 0)
		return 1;
	stub = (stub_fn)(void *)(code + 64);
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	if (write_map) {
		map = fopen(map_path, "w");
		if (!map)
			return 1;
		fprintf(map, "%lx %zx %s\n", (unsigned long)(uintptr_t)(code + 64),
			sizeof(stub_code), JIT_NAME);
		fclose(map);
	}

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	ts = (struct timespec){ .tv_sec = sleep_ms / 1000, .tv_nsec = sleep_ms % 1000 * 1000000 };
	for (int i = 0; i < sleeps; i++) {
		uint64_t t0 = now_ns();

		stub(&ts, NULL);
		blocked += now_ns() - t0;
	}
	printf("{\"blocked_ns\":%llu,\"blocks\":%d,\"jit_name\":\"%s\"}\n",
	       (unsigned long long)blocked, sleeps, JIT_NAME);
	fflush(stdout);
	/* Alive, as a JIT's process is, until told: its stacks are named at
	 * the next drain, from its map. */
	while (fgets(line, sizeof(line), stdin))
		;
	if (write_map)
		unlink(map_path);
	return 0;
}
