/*
 * Byte-level helpers the three parsers (HTTP, JSON, kubeconfig) share, RFC 3339 times, and the
 * one way a reason for a failure is written. Pure: no I/O, no allocation.
 */
#ifndef TEXT_H
#define TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * The error convention of every module: a failing call returns -1 and leaves one line saying
 * why in a buffer its caller provided (as BearSSL and jsmn keep theirs). text_fail formats that
 * line into err[0..errlen), cut to fit, and returns -1, so "return text_fail(...)" both
 * explains and fails.
 */
__attribute__((format(printf, 3, 4)))
int text_fail(char *err, size_t errlen, const char *fmt, ...);

/* The value of a hexadecimal digit, or -1 when c is not one. */
static inline int text_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Writes v as n decimal digits, zero-padded (the top digits dropped if v is wider). */
static inline void text_digits(char *p, unsigned v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/*
 * Writes t (Unix seconds) as an RFC 3339 UTC time, "2026-11-30T03:02:35Z", into out, which
 * must hold TEXT_TIME_LEN + 1 bytes. For years 0 to 9999. Without strftime, whose time-zone
 * machinery would cost the static binary 6 KiB for a format that never changes.
 */
#define TEXT_TIME_LEN 20
static inline void text_time(char *out, int64_t t)
{
	int64_t days = t / 86400, secs = t % 86400;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	/* days since 1970-01-01 to a civil date (Howard Hinnant's algorithm, year from March) */
	days += 719468;
	int64_t era = (days >= 0 ? days : days - 146096) / 146097;
	unsigned doe = (unsigned)(days - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	unsigned day = doy - (153 * mp + 2) / 5 + 1;
	unsigned month = mp < 10 ? mp + 3 : mp - 9;
	int64_t year = (int64_t)yoe + era * 400 + (month <= 2);

	memcpy(out, "0000-00-00T00:00:00Z", TEXT_TIME_LEN + 1);
	text_digits(out, year < 0 ? 0 : year > 9999 ? 9999 : (unsigned)year, 4);
	text_digits(out + 5, month, 2);
	text_digits(out + 8, day, 2);
	text_digits(out + 11, (unsigned)(secs / 3600), 2);
	text_digits(out + 14, (unsigned)(secs / 60 % 60), 2);
	text_digits(out + 17, (unsigned)(secs % 60), 2);
}

#endif
