/* Unit test of render/flame_palette.c: flamegraph.pl's colours. The
 * expected colours were drawn by flamegraph.pl itself (--hash) or computed
 * from Perl's own rand (perl -e 'srand(unpack("%32W*", $n)); print rand(1)'),
 * not from this code. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "flame_palette.h"

static void check_colour(int line, enum flame_pl_palette p, enum flame_colour_key key,
			 const char *name, bool waker, const char *want)
{
	char buf[FLAME_COLOUR_MAX];

	flame_pl_colour(buf, p, key, name, waker);
	CHECK_AT(__FILE__, line, !strcmp(buf, want), "%s: got %s, want %s", name, buf, want);
}

static void test_hash(void)
{
	/* flamegraph.pl --hash on "main;a 5\nmain;b 3\nx;y 2": its fills. */
	check_colour(__LINE__, FLAME_PL_HOT, FLAME_KEY_HASH, "main", false, "rgb(247,83,46)");
	check_colour(__LINE__, FLAME_PL_HOT, FLAME_KEY_HASH, "a", false, "rgb(235,140,33)");
	check_colour(__LINE__, FLAME_PL_HOT, FLAME_KEY_HASH, "b", false, "rgb(232,127,30)");
	check_colour(__LINE__, FLAME_PL_HOT, FLAME_KEY_HASH, "y", false, "rgb(252,217,51)");
	check_colour(__LINE__, FLAME_PL_HOT, FLAME_KEY_HASH, "", false, "rgb(255,230,55)");
	/* --colors java --hash: kernel orange, the rest red */
	check_colour(__LINE__, FLAME_PL_JAVA, FLAME_KEY_HASH, "vfs_read_[k]", false,
		     "rgb(226,126,0)");
	check_colour(__LINE__, FLAME_PL_JAVA, FLAME_KEY_HASH, "sys_read_[k]", false,
		     "rgb(237,137,0)");
	check_colour(__LINE__, FLAME_PL_JAVA, FLAME_KEY_HASH, "main", false, "rgb(219,79,79)");
}

static void test_default_key(void)
{
	/* Perl 5.36: srand(sum of "main") then rand(1) = 0.77859998431904742:
	 * hot r = 205 + int(50 v), g = int(230 v), b = int(55 v). */
	check_colour(__LINE__, FLAME_PL_HOT, FLAME_KEY_NAME, "main", false, "rgb(243,179,42)");
	/* "a": 0.63865197666837403; red: 200 + int(55 v), 50 + int(80 v). */
	check_colour(__LINE__, FLAME_PL_RED, FLAME_KEY_NAME, "a", false, "rgb(235,101,101)");
	/* "sys_read_[k]": 0.44890001609838137; java: orange 190 + int(65 v), 90 + int(65 v). */
	check_colour(__LINE__, FLAME_PL_JAVA, FLAME_KEY_NAME, "sys_read_[k]", false,
		     "rgb(219,119,0)");
	/* The same name, the same colour: in every graph. */
	check_colour(__LINE__, FLAME_PL_HOT, FLAME_KEY_NAME, "main", false, "rgb(243,179,42)");
}

static void test_palettes(void)
{
	char buf[FLAME_COLOUR_MAX], buf2[FLAME_COLOUR_MAX];

	CHECK(flame_pl_palette_from_name("hot") == FLAME_PL_HOT);
	CHECK(flame_pl_palette_from_name("orange") == FLAME_PL_ORANGE);
	CHECK(flame_pl_palette_from_name("pink") == -1);
	CHECK(flame_pl_palette_from_name("") == -1);
	/* java by annotation and name; aqua of "a" (v 0.6387): 50 + 38, 165 + 35 */
	check_colour(__LINE__, FLAME_PL_AQUA, FLAME_KEY_NAME, "a", false, "rgb(88,200,200)");
	flame_pl_colour(buf, FLAME_PL_JAVA, FLAME_KEY_NAME, "x_[j]", false);
	flame_pl_colour(buf2, FLAME_PL_GREEN, FLAME_KEY_NAME, "x_[j]", false);
	CHECK_STR(buf, buf2);
	flame_pl_colour(buf, FLAME_PL_JAVA, FLAME_KEY_NAME, "Ljava/lang/Thread;run", false);
	flame_pl_colour(buf2, FLAME_PL_GREEN, FLAME_KEY_NAME, "Ljava/lang/Thread;run", false);
	CHECK_STR(buf, buf2);
	flame_pl_colour(buf, FLAME_PL_JAVA, FLAME_KEY_NAME, "x_[i]", false);
	flame_pl_colour(buf2, FLAME_PL_AQUA, FLAME_KEY_NAME, "x_[i]", false);
	CHECK_STR(buf, buf2);
	flame_pl_colour(buf, FLAME_PL_PERL, FLAME_KEY_NAME, "Perl_pp_entersub", false);
	flame_pl_colour(buf2, FLAME_PL_GREEN, FLAME_KEY_NAME, "Perl_pp_entersub", false);
	CHECK_STR(buf, buf2);
	flame_pl_colour(buf, FLAME_PL_JS, FLAME_KEY_NAME, "LazyCompile:*f /app/x.js:3", false);
	flame_pl_colour(buf2, FLAME_PL_GREEN, FLAME_KEY_NAME, "LazyCompile:*f /app/x.js:3", false);
	CHECK_STR(buf, buf2);
	flame_pl_colour(buf, FLAME_PL_WAKEUP, FLAME_KEY_NAME, "w", false);
	flame_pl_colour(buf2, FLAME_PL_AQUA, FLAME_KEY_NAME, "w", false);
	CHECK_STR(buf, buf2);
	/* chain: a waker frame is keyed and coloured as NAME_[w] */
	flame_pl_colour(buf, FLAME_PL_CHAIN, FLAME_KEY_NAME, "w", true);
	flame_pl_colour(buf2, FLAME_PL_AQUA, FLAME_KEY_NAME, "w_[w]", false);
	CHECK_STR(buf, buf2);
	flame_pl_colour(buf, FLAME_PL_CHAIN, FLAME_KEY_NAME, "w", false);
	flame_pl_colour(buf2, FLAME_PL_BLUE, FLAME_KEY_NAME, "w", false);
	CHECK_STR(buf, buf2);
	/* --random: some colour of the family */
	flame_pl_colour(buf, FLAME_PL_ORANGE, FLAME_KEY_RANDOM, "w", false);
	CHECK(!strncmp(buf, "rgb(", 4) && strstr(buf, ",0)"));
	/* the differential scale: flamegraph.pl's color_scale */
	flame_pl_diff_colour(buf, 5, 20);
	CHECK_STR(buf, "rgb(255,157,157)");
	flame_pl_diff_colour(buf, -20, 20);
	CHECK_STR(buf, "rgb(0,0,255)");
	flame_pl_diff_colour(buf, 0, 20);
	CHECK_STR(buf, "rgb(255,255,255)");
	/* counts too large for a double: inf and NaN take the largest change
	 * (the fuzzer's find: a float-to-int conversion out of range) */
	CHECK(flame_diff_shade(5, 20) == 157 && flame_diff_shade(-5, 0.5) == 0);
	CHECK(flame_diff_shade(INFINITY, 20) == 0 && flame_diff_shade(INFINITY, INFINITY) == 0);
	CHECK(flame_diff_shade(NAN, 20) == 0 && flame_diff_shade(5, INFINITY) == 210);
	flame_pl_diff_colour(buf, INFINITY, INFINITY);
	CHECK_STR(buf, "rgb(255,0,0)");
}

static void test_annotations_background(void)
{
	const char *top, *bottom;

	CHECK(flame_annotation_strip("read_[k]", 8) == 4);
	CHECK(flame_annotation_strip("read_[w]", 8) == 4);
	CHECK(flame_annotation_strip("read_[x]", 8) == 8);
	CHECK(flame_annotation_strip("_[k]", 4) == 0);
	CHECK(flame_annotation_strip("[k]", 3) == 3);
	CHECK(flame_pl_background(FLAME_PL_HOT, NULL, &top, &bottom) && !strcmp(top, "#eeeeee") &&
	      !strcmp(bottom, "#eeeeb0"));
	CHECK(flame_pl_background(FLAME_PL_MEM, NULL, &top, &bottom) && !strcmp(top, "#eef2ee") &&
	      !strcmp(bottom, "#e0ffe0"));
	CHECK(flame_pl_background(FLAME_PL_CHAIN, NULL, &top, &bottom) &&
	      !strcmp(bottom, "#e0e0ff"));
	CHECK(flame_pl_background(FLAME_PL_RED, NULL, &top, &bottom) && !strcmp(top, "#f8f8f8") &&
	      !strcmp(bottom, "#e8e8e8"));
	CHECK(flame_pl_background(FLAME_PL_HOT, "#0a0B0c", &top, &bottom) &&
	      !strcmp(top, "#0a0B0c") && !strcmp(bottom, "#0a0B0c"));
	CHECK(!flame_pl_background(FLAME_PL_HOT, "#0a0B0", &top, &bottom));
	CHECK(!flame_pl_background(FLAME_PL_HOT, "#0a0B0g", &top, &bottom));
	CHECK(!flame_pl_background(FLAME_PL_HOT, "pink", &top, &bottom));
}

static void test_map(void)
{
	char path[] = "/tmp/test-flame_palette-XXXXXX", text[256];
	struct flame_palette_map *m;
	size_t n;
	FILE *f;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	static const char map[] = "b->rgb(1,2,3)\r\nno arrow\noperator->x->rgb(4,5,6)\n";

	CHECK(write(fd, map, strlen(map)) == (ssize_t)strlen(map));
	close(fd);
	CHECK(flame_palette_map_load(path, &m) == 0);
	CHECK_STR(flame_palette_map_get(m, "b"), "rgb(1,2,3)");
	CHECK_STR(flame_palette_map_get(m, "operator->x"), "rgb(4,5,6)");
	CHECK(flame_palette_map_get(m, "no arrow") == NULL);
	for (int i = 0; i < 200; i++) { /* grows */
		char name[16];

		snprintf(name, sizeof(name), "f%03d", i);
		CHECK(flame_palette_map_put(m, name, "rgb(7,8,9)") == 0);
	}
	CHECK(flame_palette_map_put(m, "b", "rgb(9,9,9)") == 0);
	CHECK_STR(flame_palette_map_get(m, "f123"), "rgb(7,8,9)");
	CHECK(flame_palette_map_save(m, path) == 0);
	flame_palette_map_free(m);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
		/* sorted by name, as flamegraph.pl writes it */
		CHECK(!strncmp(text, "b->rgb(9,9,9)\nf000->rgb(7,8,9)\nf001->", 37));
	}
	unlink(path);
	CHECK(flame_palette_map_load(path, &m) == 0); /* missing: empty */
	CHECK(flame_palette_map_get(m, "b") == NULL);
	flame_palette_map_free(m);
	CHECK(flame_palette_map_load("/proc/self/mem/x", &m) < 0);
}

int main(void)
{
	test_hash();
	test_default_key();
	test_palettes();
	test_annotations_background();
	test_map();
	CHECK_DONE();
}
