/* flame: the opt-in count limit (flame_parse_opts.max_count) and
 * flame_check_counts(), which offcpuctl's flamegraph and diff use. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "flame.h"

/* text parsed with the limit max, in chunks cut after each line; the
 * result of the first call that fails, or 0. */
static int parse(const char *text, double max, struct flame_parse_stats *ret)
{
	struct flame_parse_opts o = { .max_count = max };
	struct flame *f;
	int r = 0;

	CHECK(flame_new(&o, &f) == 0);
	while (*text && r == 0) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) + 1 : strlen(text);

		r = flame_parse(f, text, n);
		text += n;
	}
	*ret = *flame_stats(f);
	flame_free(f);
	return r;
}

/* Both ways refuse text at line with count (NULL: a total), or accept it. */
static void check_limit(const char *text, double max, uint64_t line, const char *count)
{
	struct flame_parse_stats st, checked = { 0 };
	int want = line ? -ERANGE : 0;

	CHECK(parse(text, max, &st) == want);
	CHECK(flame_check_counts(text, strlen(text), max, &checked) == want);
	CHECK(st.too_large_line == line);
	CHECK(checked.too_large_line == line);
	if (line) {
		CHECK_STR(st.too_large_count, count ? count : "");
		CHECK_STR(checked.too_large_count, count ? count : "");
	}
}

int main(void)
{
	const double max = FLAME_COUNT_EXACT_MAX;
	struct flame_parse_stats st;

	/* At the limit, and invalid lines as before: fine. */
	check_limit("a;b 9007199254740991\nnot a line\nc 1e\n", max, 0, NULL);
	check_limit("a 5\nb;c 100000000000000000000000000\nd 1\n", max, 2,
		    "100000000000000000000000000");
	check_limit("a 9007199254740992\n", max, 1, "9007199254740992");
	check_limit("a 9007199254740993\n", max, 1, "9007199254740993"); /* read as 2^53 */
	/* written with an exponent, which is no count to flamegraph.pl */
	check_limit("a 1\nb 1e+26\n", max, 2, "1e+26");
	check_limit("a 1\nb 1.5E3\n", 1000, 2, "1.5E3");
	check_limit("a 1\nb 1e3\n", 1000, 0, NULL); /* not above: still invalid */
	/* a total above it, even where adding in doubles would round */
	check_limit("a 9007199254740990\nb 1\nc 1\n", max, 3, NULL);
	check_limit("a 600\nb 400\nc 1\n", 1000, 3, NULL);
	/* 3 columns: either count, either total */
	check_limit("a 2000 1\n", 1000, 1, "2000");
	check_limit("a 1 2000\n", 1000, 1, "2000");
	check_limit("a 999 1\nb 2 1\n", 1000, 2, NULL);
	/* a long count is shortened */
	check_limit("a 1000000000000000000000000000000000000000\n", max, 1, "1e+39");

	/* Without the option, nothing is refused (offcpud's exports). */
	CHECK(parse("a 100000000000000000000000000\nb 1e+26\n", 0, &st) == 0);
	CHECK(st.too_large_line == 0 && st.invalid == 1 && st.total > 9.99e25);
	return CHECK_DONE();
}
