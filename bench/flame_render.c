/*
 * flame_render: the flame graph library alone, for the benchmark. Reads a
 * folded file in chunks (whole lines only), merges it, and writes the SVG,
 * or with -j speedscope JSON. Timings of
 * the two phases and the tree's size go to stderr as one JSON line.
 *
 * usage: flame_render [-j] [-o OUT] FILE
 */
#define _GNU_SOURCE /* memrchr */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flame.h"

#define CHUNK_BYTES (4 << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t count_nodes(const struct flame_node *n)
{
	size_t c = 1;

	/* Depth is bounded by the input's stacks; recursion is fine here. */
	for (size_t i = 0; i < n->n_children; i++)
		c += count_nodes(&n->children[i]);
	return c;
}

/* Feeds the file to f chunk by chunk, each cut after its last newline. */
static int parse_file(struct flame *f, FILE *in)
{
	char *buf = malloc(CHUNK_BYTES);
	size_t have = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		size_t got = fread(buf + have, 1, CHUNK_BYTES - have, in);
		char *nl;
		size_t used;

		have += got;
		if (!got) {
			if (ferror(in))
				r = -EIO;
			else if (have)
				r = flame_parse(f, buf, have);
			break;
		}
		nl = memrchr(buf, '\n', have);
		if (!nl) {
			if (have < CHUNK_BYTES)
				continue;
			r = -E2BIG; /* a line longer than the chunk */
			break;
		}
		used = (size_t)(nl + 1 - buf);
		r = flame_parse(f, buf, used);
		if (r < 0)
			break;
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	free(buf);
	return r;
}

int main(int argc, char **argv)
{
	const char *out_path = "/dev/null";
	bool json = false;
	struct flame *f;
	const struct flame_node *root;
	FILE *in, *out;
	double t0, t1, t2, t3;
	int c, r;

	while ((c = getopt(argc, argv, "jo:")) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'o':
			out_path = optarg;
			break;
		default:
			fprintf(stderr, "usage: flame_render [-j] [-o OUT] FILE\n");
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: flame_render [-j] [-o OUT] FILE\n");
		return 2;
	}
	in = fopen(argv[optind], "r");
	if (!in) {
		fprintf(stderr, "flame_render: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	out = fopen(out_path, "w");
	if (!out) {
		fprintf(stderr, "flame_render: %s: %s\n", out_path, strerror(errno));
		return 1;
	}
	t0 = now_s();
	r = flame_new(NULL, &f);
	if (r >= 0)
		r = parse_file(f, in);
	fclose(in);
	t1 = now_s();
	root = r >= 0 ? flame_root(f) : NULL;
	t2 = now_s();
	if (r < 0 || !root) {
		fprintf(stderr, "flame_render: %s\n", r < 0 ? strerror(-r) : "no valid stack");
		flame_free(f);
		return 1;
	}
	if (json)
		r = flame_speedscope(f, argv[optind], "us", out);
	else
		r = flame_svg(f, &(struct flame_svg_opts){ .countname = "us" }, out);
	if (fclose(out) == EOF && r >= 0)
		r = -errno;
	t3 = now_s();
	if (r < 0) {
		fprintf(stderr, "flame_render: writing %s: %s\n", out_path, strerror(-r));
		flame_free(f);
		return 1;
	}
	fprintf(stderr,
		"{\"lines\":%llu,\"invalid\":%llu,\"nodes\":%zu,\"output\":\"%s\","
		"\"parse_s\":%.3f,\"merge_s\":%.3f,\"render_s\":%.3f}\n",
		(unsigned long long)flame_stats(f)->lines,
		(unsigned long long)flame_stats(f)->invalid, count_nodes(root),
		json ? "speedscope" : "svg", t1 - t0, t2 - t1, t3 - t2);
	flame_free(f);
	return 0;
}
