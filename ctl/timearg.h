/*
 * timearg: offcpuctl's time arguments. Pure functions: the current time is a
 * parameter, and no locale, TZ or libc time conversion is involved, so every
 * result depends on the text and now_ms alone. Used by offcpuctl; does not
 * print. Times are unix milliseconds (CLOCK_REALTIME).
 *
 * Every result lies in [0, TIMEARG_MAX_MS]; a well-formed argument whose
 * time falls outside (before 1970, past year 9999, or an overflowing
 * duration) is -ERANGE. Anything not in the forms below is -EINVAL.
 */
#ifndef TIMEARG_H
#define TIMEARG_H

#include <stdint.h>

#define TIMEARG_MAX_MS INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */

/*
 * A window ending now: "lastN" + unit, unit one of s, m, h, d, N a decimal
 * integer > 0, e.g. "last30s", "last5m", "last1h", "last2d". Sets
 * *ret_from_ms = now_ms - N units and *ret_to_ms = now_ms. Returns 0,
 * -EINVAL or -ERANGE; the outputs are written only on success.
 */
int timearg_window(const char *s, int64_t now_ms, int64_t *ret_from_ms, int64_t *ret_to_ms);

/*
 * A point in time, one of:
 *   unix seconds         "1732240000", "1732240000.5" (fraction: 1 to 9
 *                        digits, truncated to milliseconds)
 *   RFC 3339 date-time   "2026-11-22T01:00:00Z", "2026-11-22T01:00:00.250+01:00";
 *                        't' and 'z' may be lowercase, a space may stand
 *                        for the 'T'; the offset is required; second 60
 *                        (a leap second) is read as the next second
 *   relative             "30m-ago", "1h-ago" (units as in timearg_window)
 * Returns 0, -EINVAL or -ERANGE; *ret_ms is written only on success.
 */
int timearg_point(const char *s, int64_t now_ms, int64_t *ret_ms);

#endif
