/*
 * flame_gen: writes a deterministic folded-stack file to stdout for the flame
 * graph benchmark. Each line is a random walk down one implicit call tree
 * (a node's children are drawn with a skewed distribution, so stacks share
 * long prefixes, as in a real profile): comm; user frames; "-"; kernel
 * frames, about 26 frames in all, names 20-60 characters (some with spaces,
 * some kernel names with perf's "_[k]"), integer counts.
 *
 * usage: flame_gen [-n LINES] [-s SEED] [-l MIN:MAX]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define USER_NAMES   30000
#define KERNEL_NAMES 3000
#define COMMS	     40

static uint64_t rng_state;

/* splitmix64: small, fast and the same everywhere. */
static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t z = a * 0x9e3779b97f4a7c15ULL + b + 0x632be59bd9b4e019ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static const char *const parts[] = {
	"alloc",  "buffer", "cache",  "commit",	 "connect", "dispatch", "entry",  "event",
	"flush",  "handle", "insert", "io",	 "lock",    "lookup",	"merge",  "poll",
	"queue",  "read",   "recv",   "request", "run",	    "schedule", "send",	  "session",
	"signal", "sync",   "task",   "timer",	 "update",  "wait",	"worker", "write",
};

static const char *const namespaces[] = {
	"std::", "boost::asio::", "folly::", "grpc::", "app::server::", "app::db::", "", "", "",
};

/* A name of min..max characters: C (style 0), C++ with a signature that
 * holds a space (1), or kernel, half of them with perf's "_[k]" (2). */
static char *make_name(uint64_t seed, unsigned min, unsigned max, int style)
{
	size_t len = min + (size_t)(mix(seed, 1) % (max - min + 1)), n = 0, body;
	uint64_t h = mix(seed, 2);
	const char *suffix = style == 1 ? "(long, int)" : style == 2 && h % 2 ? "_[k]" : "";
	char *s = malloc(len + 1);

	if (!s)
		exit(1);
	if (strlen(suffix) + 4 > len)
		suffix = "";
	body = len - strlen(suffix);
	if (style == 1) {
		const char *ns = namespaces[h % (sizeof(namespaces) / sizeof(namespaces[0]))];

		n = strlen(ns) < body ? strlen(ns) : body;
		memcpy(s, ns, n);
	}
	while (n < body) {
		const char *p = parts[(h >> 8) % (sizeof(parts) / sizeof(parts[0]))];
		size_t l = strlen(p);

		h = mix(h, n);
		if (n && s[n - 1] != ':')
			s[n++] = '_';
		if (l > body - n)
			l = body - n;
		memcpy(s + n, p, l);
		n += l;
	}
	memcpy(s + body, suffix, strlen(suffix) + 1);
	return s;
}

/* Child index: mostly the first few, sometimes far down the list. */
static unsigned pick_child(unsigned fanout)
{
	uint64_t r = rng_next();
	unsigned k = 0;

	while (k + 1 < fanout && (r & 3) == 0) { /* geometric, p = 3/4 to stop */
		k++;
		r >>= 2;
	}
	if ((r & 0xff) == 0)
		k = (unsigned)((r >> 8) % fanout);
	return k;
}

int main(int argc, char **argv)
{
	unsigned long lines = 200000, seed = 1;
	unsigned min = 20, max = 60;
	char *user[USER_NAMES], *kernel[KERNEL_NAMES], *comm[COMMS];
	int c;

	while ((c = getopt(argc, argv, "n:s:l:")) != -1) {
		switch (c) {
		case 'n':
			lines = strtoul(optarg, NULL, 10);
			break;
		case 's':
			seed = strtoul(optarg, NULL, 10);
			break;
		case 'l':
			if (sscanf(optarg, "%u:%u", &min, &max) != 2 || !min || max < min) {
				fprintf(stderr, "flame_gen: -l MIN:MAX\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: flame_gen [-n LINES] [-s SEED] [-l MIN:MAX]\n");
			return 2;
		}
	}
	for (unsigned i = 0; i < USER_NAMES; i++)
		user[i] = make_name(mix(seed, i), min, max, i % 3 == 0);
	for (unsigned i = 0; i < KERNEL_NAMES; i++)
		kernel[i] = make_name(mix(seed + 1, i), min, max, 2);
	for (unsigned i = 0; i < COMMS; i++) {
		comm[i] = malloc(32);
		if (!comm[i])
			return 1;
		snprintf(comm[i], 32, "%s-%u", parts[i % 32], i);
	}
	rng_state = seed;
	for (unsigned long l = 0; l < lines; l++) {
		unsigned ci = pick_child(COMMS);
		unsigned depth_user = 14 + (unsigned)(rng_next() % 9);	/* 14..22 */
		unsigned depth_kernel = 4 + (unsigned)(rng_next() % 5); /* 4..8 */
		uint64_t node = mix(seed, ci);
		uint64_t value;

		fputs(comm[ci], stdout);
		for (unsigned d = 0; d < depth_user; d++) {
			unsigned fanout = d < 3 ? 4 : 12;

			node = mix(node, pick_child(fanout));
			putchar(';');
			fputs(user[node % USER_NAMES], stdout);
		}
		fputs(";-", stdout);
		for (unsigned d = 0; d < depth_kernel; d++) {
			node = mix(node, pick_child(6));
			putchar(';');
			fputs(kernel[node % KERNEL_NAMES], stdout);
		}
		/* Heavy-tailed, like blocked time in microseconds. */
		value = 1 + (rng_next() % 1000) * (UINT64_C(1) << (rng_next() % 12));
		printf(" %" PRIu64 "\n", value);
	}
	for (unsigned i = 0; i < USER_NAMES; i++)
		free(user[i]);
	for (unsigned i = 0; i < KERNEL_NAMES; i++)
		free(kernel[i]);
	for (unsigned i = 0; i < COMMS; i++)
		free(comm[i]);
	return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
