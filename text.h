/*
 * Byte-level helpers the three parsers (HTTP, JSON, kubeconfig) share. Header-only and pure.
 */
#ifndef TEXT_H
#define TEXT_H

#include <stdint.h>
#include <stdio.h>

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
	long long year = (long long)yoe + era * 400 + (month <= 2);

	snprintf(out, TEXT_TIME_LEN + 1, "%04lld-%02u-%02uT%02u:%02u:%02uZ", year, month, day,
	    (unsigned)(secs / 3600), (unsigned)(secs / 60 % 60), (unsigned)(secs % 60));
}

#endif
