/*
 * test-timearg: unit test of ctl/timearg (offcpuctl's time arguments).
 * Links only timearg.c. Expected values were computed independently (Python's
 * datetime) or by the naive day count in naive_ms(). Exit status 0 on success.
 */
#include "timearg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* 2026-11-22T01:00:00Z, a fixed "now" for relative arguments. */
#define NOW_MS INT64_C(1795309200000)

static void point_ok_at(const char *file, int line, const char *s, int64_t now_ms, int64_t want)
{
	int64_t got = -12345;
	int r = timearg_point(s, now_ms, &got);

	CHECK_AT(file, line, r == 0 && got == want,
		 "(timearg_point('%s'): r=%d got=%" PRId64 " want=%" PRId64 ")", s, r, got, want);
}

static void point_bad_at(const char *file, int line, const char *s, int64_t now_ms, int want_r)
{
	int64_t got = -12345;
	int r = timearg_point(s, now_ms, &got);

	CHECK_AT(file, line, r == want_r, "(timearg_point('%s'): r=%d want %d)", s, r, want_r);
	CHECK_AT(file, line, got == -12345, "(timearg_point('%s') wrote %" PRId64 " on failure)", s,
		 got);
}

#define POINT_OK(s, want)      point_ok_at(__FILE__, __LINE__, s, NOW_MS, want)
#define POINT_EINVAL(s)	       point_bad_at(__FILE__, __LINE__, s, NOW_MS, -EINVAL)
#define POINT_ERANGE(s)	       point_bad_at(__FILE__, __LINE__, s, NOW_MS, -ERANGE)
#define POINT_AT(s, now, want) point_ok_at(__FILE__, __LINE__, s, now, want)

static void window_ok_at(const char *file, int line, const char *s, int64_t now_ms,
			 int64_t want_d_ms)
{
	int64_t from = -1, to = -1;
	int r = timearg_window(s, now_ms, &from, &to);

	CHECK_AT(file, line, r == 0 && from == now_ms - want_d_ms && to == now_ms,
		 "(timearg_window('%s'): r=%d from=%" PRId64 " to=%" PRId64 ")", s, r, from, to);
}

static void window_bad_at(const char *file, int line, const char *s, int64_t now_ms, int want_r)
{
	int64_t from = -1, to = -1;
	int r = timearg_window(s, now_ms, &from, &to);

	CHECK_AT(file, line, r == want_r, "(timearg_window('%s'): r=%d want %d)", s, r, want_r);
	CHECK_AT(file, line, from == -1 && to == -1, "(timearg_window('%s') wrote on failure)", s);
}

#define WINDOW_OK(s, d_ms) window_ok_at(__FILE__, __LINE__, s, NOW_MS, d_ms)
#define WINDOW_EINVAL(s)   window_bad_at(__FILE__, __LINE__, s, NOW_MS, -EINVAL)
#define WINDOW_ERANGE(s)   window_bad_at(__FILE__, __LINE__, s, NOW_MS, -ERANGE)

static void test_window(void)
{
	WINDOW_OK("last30s", 30 * 1000);
	WINDOW_OK("last5m", 5 * 60 * 1000);
	WINDOW_OK("last1h", 3600 * 1000);
	WINDOW_OK("last2d", 2 * 86400 * 1000);
	WINDOW_OK("last1s", 1000);
	WINDOW_OK("last90m", 90 * 60 * 1000);
	WINDOW_OK("last007m", 7 * 60 * 1000); /* leading zeros are just digits */
	WINDOW_OK("last20000d", INT64_C(20000) * 86400 * 1000);
	/* Reaching back exactly to the epoch is fine, one more second is not. */
	window_ok_at(__FILE__, __LINE__, "last10s", 10000, 10000);
	window_bad_at(__FILE__, __LINE__, "last11s", 10000, -ERANGE);
	window_ok_at(__FILE__, __LINE__, "last1d", TIMEARG_MAX_MS, 86400000);
	/* now itself must be a valid time. */
	window_bad_at(__FILE__, __LINE__, "last1s", -1, -ERANGE);
	window_bad_at(__FILE__, __LINE__, "last1s", TIMEARG_MAX_MS + 1, -ERANGE);

	/* Overflow: huge counts are a range error, never a wrapped value. */
	WINDOW_ERANGE("last30000d");
	WINDOW_ERANGE("last9223372036854775807s");
	WINDOW_ERANGE("last9223372036854775808s");
	WINDOW_ERANGE("last99999999999999999999999999999999d");
	WINDOW_ERANGE("last106751991167300d"); /* d * 86400000 would wrap int64_t */
	WINDOW_ERANGE("last2562047788015216h");
	/* ...but the syntax is checked first. */
	WINDOW_EINVAL("last99999999999999999999999999999999x");
	WINDOW_EINVAL("last99999999999999999999999999999999dd");

	WINDOW_EINVAL("");
	WINDOW_EINVAL("last");
	WINDOW_EINVAL("lasts");
	WINDOW_EINVAL("last0s");
	WINDOW_EINVAL("last00m");
	WINDOW_EINVAL("last5");
	WINDOW_EINVAL("last5x");
	WINDOW_EINVAL("last5M");
	WINDOW_EINVAL("last5ms");
	WINDOW_EINVAL("last5m ");
	WINDOW_EINVAL(" last5m");
	WINDOW_EINVAL("last 5m");
	WINDOW_EINVAL("last-5m");
	WINDOW_EINVAL("last+5m");
	WINDOW_EINVAL("last1.5h");
	WINDOW_EINVAL("last5m5s");
	WINDOW_EINVAL("Last5m");
	WINDOW_EINVAL("5m");
	WINDOW_EINVAL("5m-ago");
	WINDOW_EINVAL("last5w");
	window_bad_at(__FILE__, __LINE__, NULL, NOW_MS, -EINVAL);
}

static void test_unix(void)
{
	POINT_OK("0", 0);
	POINT_OK("1", 1000);
	POINT_OK("1732240000", INT64_C(1732240000000));
	POINT_OK("1732240000.5", INT64_C(1732240000500));
	POINT_OK("1732240000.05", INT64_C(1732240000050));
	POINT_OK("1732240000.123", INT64_C(1732240000123));
	POINT_OK("1732240000.1239", INT64_C(1732240000123)); /* truncated */
	POINT_OK("1732240000.999999999999", INT64_C(1732240000999));
	POINT_OK("1732240000.0", INT64_C(1732240000000));
	POINT_OK("01732240000", INT64_C(1732240000000));
	POINT_OK("253402300799", INT64_C(253402300799000));
	POINT_OK("253402300799.999", TIMEARG_MAX_MS);

	POINT_ERANGE("253402300800");
	POINT_ERANGE("9223372036854775807");
	POINT_ERANGE("9223372036854775808");
	POINT_ERANGE("99999999999999999999999999999999999999");
	POINT_ERANGE("99999999999999999999999999999999999999.5");

	POINT_EINVAL("");
	POINT_EINVAL("-1");
	POINT_EINVAL("+1");
	POINT_EINVAL(" 1");
	POINT_EINVAL("1 ");
	POINT_EINVAL("1.");
	POINT_EINVAL(".5");
	POINT_EINVAL("1.5.");
	POINT_EINVAL("1,5");
	POINT_EINVAL("1e9");
	POINT_EINVAL("0x10");
	POINT_EINVAL("1732240000s");
	POINT_EINVAL("now");
	POINT_EINVAL("99999999999999999999999999999999999999x");
	point_bad_at(__FILE__, __LINE__, NULL, NOW_MS, -EINVAL);
}

static void test_rfc3339(void)
{
	POINT_OK("2026-11-22T01:00:00Z", INT64_C(1795309200000));
	POINT_OK("2026-11-22T01:00:00.250+01:00", INT64_C(1795305600250));
	POINT_OK("2026-11-22t01:00:00z", INT64_C(1795309200000));
	POINT_OK("2026-11-22 01:00:00Z", INT64_C(1795309200000));
	POINT_OK("2026-11-22T01:00:00+00:00", INT64_C(1795309200000));
	POINT_OK("2026-11-22T01:00:00-00:00", INT64_C(1795309200000));
	POINT_OK("2026-11-22T02:30:00+01:30", INT64_C(1795309200000));
	POINT_OK("2026-11-21T20:00:00-05:00", INT64_C(1795309200000));
	POINT_OK("2026-01-01T00:00:00-23:59", INT64_C(1767311940000));
	POINT_OK("1970-01-01T00:00:00Z", 0);
	POINT_OK("1970-01-01T01:00:00+01:00", 0);
	POINT_OK("9999-12-31T23:59:59.999Z", TIMEARG_MAX_MS);
	POINT_OK("2026-06-15T08:09:10.123456789Z", INT64_C(1781510950123));
	POINT_OK("2026-06-15T08:09:10.1Z", INT64_C(1781510950100));

	/* Leap years: every 4th, not every 100th, but every 400th. */
	POINT_OK("2000-02-29T12:34:56Z", INT64_C(951827696000));
	POINT_OK("2024-02-29T23:59:59.999-05:30", INT64_C(1709270999999));
	POINT_OK("2400-02-29T00:00:00Z", INT64_C(13574563200000));
	POINT_OK("2100-03-01T00:00:00Z", INT64_C(4107542400000));
	POINT_EINVAL("2100-02-29T00:00:00Z");
	POINT_EINVAL("2023-02-29T00:00:00Z");
	POINT_EINVAL("1900-02-29T00:00:00Z");
	POINT_OK("2023-02-28T00:00:00Z", INT64_C(1677542400000));

	/* A leap second reads as the second after it. */
	POINT_OK("2016-12-31T23:59:60Z", INT64_C(1483228800000));
	POINT_OK("2016-12-31T23:59:59Z", INT64_C(1483228799000));

	/* Before the epoch, or past year 9999 once the offset is applied. */
	POINT_ERANGE("1969-12-31T23:59:59Z");
	POINT_ERANGE("1970-01-01T00:59:59+01:00");
	POINT_ERANGE("1900-03-01T00:00:00Z");
	POINT_ERANGE("0000-01-01T00:00:00Z");
	POINT_ERANGE("9999-12-31T23:59:59-00:01");
	POINT_OK("1969-12-31T23:00:00-01:00", 0);

	/* Fields out of range. */
	POINT_EINVAL("2026-00-22T01:00:00Z");
	POINT_EINVAL("2026-13-22T01:00:00Z");
	POINT_EINVAL("2026-11-00T01:00:00Z");
	POINT_EINVAL("2026-11-31T01:00:00Z");
	POINT_EINVAL("2026-04-31T01:00:00Z");
	POINT_EINVAL("2026-01-32T01:00:00Z");
	POINT_EINVAL("2026-11-22T24:00:00Z");
	POINT_EINVAL("2026-11-22T01:60:00Z");
	POINT_EINVAL("2026-11-22T01:00:61Z");
	POINT_EINVAL("2026-11-22T01:00:00+24:00");
	POINT_EINVAL("2026-11-22T01:00:00+01:60");

	/* Shapes that are not RFC 3339 date-times. */
	POINT_EINVAL("2026-11-22");
	POINT_EINVAL("2026-11-22T01:00:00");
	POINT_EINVAL("2026-11-22T01:00Z");
	POINT_EINVAL("2026-11-22T1:00:00Z");
	POINT_EINVAL("2026-11-2T01:00:00Z");
	POINT_EINVAL("2026-1-22T01:00:00Z");
	POINT_EINVAL("26-11-22T01:00:00Z");
	POINT_EINVAL("20261-11-22T01:00:00Z");
	POINT_EINVAL("2026/11/22T01:00:00Z");
	POINT_EINVAL("2026-11-22X01:00:00Z");
	POINT_EINVAL("2026-11-22_01:00:00Z");
	POINT_EINVAL("2026-11-22  01:00:00Z");
	POINT_EINVAL("2026-11-22T01:00:00.Z");
	POINT_EINVAL("2026-11-22T01:00:00,5Z");
	POINT_EINVAL("2026-11-22T01:00:00+0100");
	POINT_EINVAL("2026-11-22T01:00:00+01");
	POINT_EINVAL("2026-11-22T01:00:00+1:00");
	POINT_EINVAL("2026-11-22T01:00:00UTC");
	POINT_EINVAL("2026-11-22T01:00:00Z ");
	POINT_EINVAL("2026-11-22T01:00:00ZZ");
	POINT_EINVAL("2026-11-22T01:00:00+01:00:00");
	POINT_EINVAL("2026-11-22T01:00:00-");
	POINT_EINVAL(" 2026-11-22T01:00:00Z");
	POINT_EINVAL("+2026-11-22T01:00:00Z");
	POINT_EINVAL("2026-11-22T-1:00:00Z");
	POINT_EINVAL("2026-");
	POINT_EINVAL("2026-11-22T");
}

static void test_ago(void)
{
	POINT_OK("30s-ago", NOW_MS - 30 * 1000);
	POINT_OK("30m-ago", NOW_MS - 30 * 60 * 1000);
	POINT_OK("1h-ago", NOW_MS - 3600 * 1000);
	POINT_OK("7d-ago", NOW_MS - 7 * 86400 * 1000);
	POINT_AT("5s-ago", 5000, 0);
	point_bad_at(__FILE__, __LINE__, "6s-ago", 5000, -ERANGE);
	POINT_ERANGE("30000d-ago");
	POINT_ERANGE("99999999999999999999999999999s-ago");

	POINT_EINVAL("0s-ago");
	POINT_EINVAL("1h-ago ");
	POINT_EINVAL("1h ago");
	POINT_EINVAL("1h-Ago");
	POINT_EINVAL("1hago");
	POINT_EINVAL("1h-");
	POINT_EINVAL("h-ago");
	POINT_EINVAL("-ago");
	POINT_EINVAL("1x-ago");
	POINT_EINVAL("1.5h-ago");
	POINT_EINVAL("1h30m-ago");
	POINT_EINVAL("last1h");
	POINT_EINVAL("1h");
	POINT_EINVAL("99999999999999999999999999999x-ago");
}

/* Days since the epoch by counting, the slow and obvious way. */
static int64_t naive_days(int y, int m, int d)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int64_t days = 0;

	for (int yy = 1970; yy < y; yy++)
		days += ((yy % 4 == 0 && yy % 100 != 0) || yy % 400 == 0) ? 366 : 365;
	for (int mm = 1; mm < m; mm++)
		days += mdays[mm - 1] + (mm == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
	return days + d - 1;
}

/* Every day from 1970 to 2500, each with a different time and offset. */
static void test_calendar(void)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int failures = 0;
	unsigned n = 0;

	for (int y = 1970; y <= 2500 && failures < 5; y++) {
		bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

		for (int m = 1; m <= 12; m++) {
			int last = m == 2 && !leap ? 28 : mdays[m - 1];

			for (int d = 1; d <= last + 1; d++, n++) {
				int h = n % 24, mi = n * 7 % 60, s = n * 13 % 60;
				int oh = n % 15, om = n % 4 * 15, sign = n % 2 ? 1 : -1;
				char text[64];
				int64_t want, got = -1;
				int r;

				snprintf(text, sizeof(text),
					 "%04d-%02d-%02dT%02d:%02d:%02d.%03u%c%02d:%02d", y, m, d,
					 h, mi, s, n % 1000, sign > 0 ? '+' : '-', oh, om);
				r = timearg_point(text, 0, &got);
				if (d > last) {
					if (r != -EINVAL) {
						CHECK_MSG(0, "('%s' accepted)", text);
						failures++;
					}
					continue;
				}
				want = naive_days(y, m, d) * 86400000 +
				       ((h * INT64_C(60) + mi) * 60 + s) * 1000 + n % 1000 -
				       sign * (oh * INT64_C(60) + om) * 60000;
				if (want < 0) {
					CHECK_MSG(r == -ERANGE, "('%s': r=%d)", text, r);
					continue;
				}
				if (r != 0 || got != want) {
					CHECK_MSG(0,
						  "('%s': r=%d got %" PRId64 " want %" PRId64 ")",
						  text, r, got, want);
					failures++;
				}
			}
		}
	}
	CHECK(n > 190000);
}

int main(void)
{
	test_window();
	test_unix();
	test_rfc3339();
	test_ago();
	test_calendar();

	if (CHECK_DONE())
		return 1;
	printf("test-timearg: all checks passed\n");
	return 0;
}
