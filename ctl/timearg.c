/*
 * timearg: see timearg.h. Parsing is by hand, byte by byte (no strtol, no
 * locale), and the calendar is days_from_civil() below, so results do not
 * depend on the environment.
 */
#include "timearg.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define TIMEARG__MS_PER_DAY INT64_C(86400000)

static bool timearg__is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Reads one or more digits at *p as a non-negative integer, advancing *p.
 * Past TIMEARG_MAX_MS the value saturates at TIMEARG_MAX_MS + 1 and
 * *overflow is set, so the caller can finish checking the syntax first.
 * Returns false if *p does not start with a digit.
 */
static bool timearg__number(const char **p, int64_t *ret, bool *overflow)
{
	int64_t v = 0;

	if (!timearg__is_digit(**p))
		return false;
	for (; timearg__is_digit(**p); (*p)++) {
		v = v * 10 + (**p - '0');
		if (v > TIMEARG_MAX_MS) {
			v = TIMEARG_MAX_MS + 1;
			*overflow = true;
		}
	}
	*ret = v;
	return true;
}

/* Reads exactly n digits (n <= 4) at *p, advancing *p. */
static bool timearg__fixed(const char **p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!timearg__is_digit((*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return true;
}

/* ".digits", if there, as milliseconds, truncated; advances *p. */
static bool timearg__fraction(const char **p, int64_t *ret_ms)
{
	int64_t ms = 0;
	int n = 0;

	*ret_ms = 0;
	if (**p != '.')
		return true;
	(*p)++;
	if (!timearg__is_digit(**p))
		return false;
	for (; timearg__is_digit(**p); (*p)++, n++)
		if (n < 3)
			ms = ms * 10 + (**p - '0');
	for (; n < 3; n++)
		ms *= 10;
	*ret_ms = ms;
	return true;
}

/*
 * "N" + unit (s, m, h, d) at *p as milliseconds, N > 0; advances *p.
 * Returns 0, -EINVAL, or -ERANGE once the syntax is known good (*p then
 * points past the unit).
 */
static int timearg__duration(const char **p, int64_t *ret_ms)
{
	static const struct {
		char unit;
		int64_t ms;
	} units[] = {
		{ 's', 1000 },
		{ 'm', 60 * 1000 },
		{ 'h', 3600 * 1000 },
		{ 'd', TIMEARG__MS_PER_DAY },
	};
	bool overflow = false;
	int64_t n;

	if (!timearg__number(p, &n, &overflow))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (**p != units[i].unit)
			continue;
		(*p)++;
		if (n == 0)
			return -EINVAL;
		/* No duration reaches back past 1970 from a valid now. */
		if (overflow || n > TIMEARG_MAX_MS / units[i].ms)
			return -ERANGE;
		*ret_ms = n * units[i].ms;
		return 0;
	}
	return -EINVAL;
}

/* now_ms - d_ms, if both it and now_ms are valid results. */
static int timearg__before(int64_t now_ms, int64_t d_ms, int64_t *ret_ms)
{
	if (now_ms < 0 || now_ms > TIMEARG_MAX_MS || d_ms > now_ms)
		return -ERANGE;
	*ret_ms = now_ms - d_ms;
	return 0;
}

int timearg_window(const char *s, int64_t now_ms, int64_t *ret_from_ms, int64_t *ret_to_ms)
{
	int64_t d_ms, from_ms;
	int r;

	if (!s || strncmp(s, "last", 4))
		return -EINVAL;
	s += 4;
	r = timearg__duration(&s, &d_ms);
	if (r == 0 || r == -ERANGE)
		r = *s ? -EINVAL : r;
	if (r < 0)
		return r;
	r = timearg__before(now_ms, d_ms, &from_ms);
	if (r < 0)
		return r;
	*ret_from_ms = from_ms;
	*ret_to_ms = now_ms;
	return 0;
}

/*
 * Days since 1970-01-01 of a proleptic Gregorian date (month 1..12, day
 * 1..31), after Howard Hinnant's days_from_civil: years are counted from
 * March so the leap day ends a year, then split into 400-year eras of
 * 146097 days.
 */
static int64_t timearg__days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;				       /* [0, 399] */
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;	       /* [0, 146096] */
	return era * 146097 + doe - 719468;
}

static int timearg__days_in_month(int y, int m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

/* YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|+HH:MM|-HH:MM) */
static int timearg__rfc3339(const char *p, int64_t *ret_ms)
{
	int y, mo, d, h, mi, sec, off_h = 0, off_m = 0, sign = 0;
	int64_t frac_ms, ms;

	if (!timearg__fixed(&p, 4, &y) || *p++ != '-' || !timearg__fixed(&p, 2, &mo) ||
	    *p++ != '-' || !timearg__fixed(&p, 2, &d))
		return -EINVAL;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return -EINVAL;
	p++;
	if (!timearg__fixed(&p, 2, &h) || *p++ != ':' || !timearg__fixed(&p, 2, &mi) ||
	    *p++ != ':' || !timearg__fixed(&p, 2, &sec) || !timearg__fraction(&p, &frac_ms))
		return -EINVAL;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '+' ? 1 : -1;
		if (!timearg__fixed(&p, 2, &off_h) || *p++ != ':' ||
		    !timearg__fixed(&p, 2, &off_m) || off_h > 23 || off_m > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > timearg__days_in_month(y, mo) || h > 23 || mi > 59 ||
	    sec > 60)
		return -EINVAL;

	/* Years 0000-9999 keep every term far from int64_t's limits. */
	ms = timearg__days_from_civil(y, mo, d) * TIMEARG__MS_PER_DAY +
	     ((h * INT64_C(60) + mi) * 60 + sec) * 1000 + frac_ms;
	ms -= sign * (off_h * INT64_C(60) + off_m) * 60 * 1000;
	if (ms < 0 || ms > TIMEARG_MAX_MS)
		return -ERANGE;
	*ret_ms = ms;
	return 0;
}

/* Unix seconds, with an optional fraction. */
static int timearg__unix(const char *p, int64_t *ret_ms)
{
	bool overflow = false;
	int64_t sec, frac_ms;

	if (!timearg__number(&p, &sec, &overflow) || !timearg__fraction(&p, &frac_ms) || *p)
		return -EINVAL;
	if (overflow || sec > TIMEARG_MAX_MS / 1000)
		return -ERANGE;
	*ret_ms = sec * 1000 + frac_ms;
	return 0;
}

/* "N" + unit + "-ago". */
static int timearg__ago(const char *p, int64_t now_ms, int64_t *ret_ms)
{
	int64_t d_ms;
	int r;

	r = timearg__duration(&p, &d_ms);
	if (r == 0 || r == -ERANGE)
		r = strcmp(p, "-ago") ? -EINVAL : r;
	if (r < 0)
		return r;
	return timearg__before(now_ms, d_ms, ret_ms);
}

int timearg_point(const char *s, int64_t now_ms, int64_t *ret_ms)
{
	size_t len;

	if (!s || !timearg__is_digit(s[0]))
		return -EINVAL;
	len = strlen(s);
	if (len > 4 && !strcmp(s + len - 4, "-ago"))
		return timearg__ago(s, now_ms, ret_ms);
	if (len > 4 && s[4] == '-')
		return timearg__rfc3339(s, ret_ms);
	return timearg__unix(s, ret_ms);
}
