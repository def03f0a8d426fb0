/*
 * text.h: hex digits, RFC 3339 times checked against the C library's gmtime/strftime, and the
 * cleaning of server-sent text for the log.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "check.h"
#include "../../text.h"

static void t_hexval(void)
{
	check(text_hexval('0') == 0 && text_hexval('9') == 9);
	check(text_hexval('a') == 10 && text_hexval('F') == 15);
	check(text_hexval('g') == -1 && text_hexval('/') == -1 && text_hexval(':') == -1);
	check(text_hexval('@') == -1 && text_hexval('G') == -1 && text_hexval('`') == -1);
}

static void t_time(void)
{
	static const int64_t fixed[] = {
		0, 1, 59, 86399, 86400, 951782400 /* 2000-02-29 */, 951868800 /* 2000-03-01 */,
		1709164800 /* 2024-02-29 */, 1798761599 /* 2026-12-31T23:59:59 */, 4102444800 /* 2100-01-01 */,
		253402300799 /* 9999-12-31T23:59:59 */, -1, -86401,
	};
	char got[TEXT_TIME_LEN + 1], want[64];

	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		time_t t = (time_t)fixed[i];
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%SZ", &tm);
		text_time(got, fixed[i]);
		if (!check(strcmp(got, want) == 0))
			fprintf(stderr, "  %lld: got %s, want %s\n", (long long)fixed[i], got, want);
	}
	/*
	 * Every day of 1970-2099 once, at an hour that moves on by one each day (so each hour falls
	 * on every weekday, month and year) and a minute and second that wander; the loop counts
	 * what it crossed, so a shorter loop cannot pass.
	 */
	int days = 0, leap_days = 0, hours[24] = { 0 }, all_hours = 1, wrong = 0;
	for (int64_t d = 0; d < 4102444800 / 86400; d++) {
		int64_t s = d * 86400 + (d % 24) * 3600 + (d * 7919) % 3600;
		time_t t = (time_t)s;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%SZ", &tm);
		text_time(got, s);
		if (!wrong && strcmp(got, want) != 0) {
			fprintf(stderr, "  %lld: got %s, want %s\n", (long long)s, got, want);
			wrong = 1;
		}
		days++;
		leap_days += tm.tm_mon == 1 && tm.tm_mday == 29;
		hours[tm.tm_hour]++;
	}
	check(!wrong);
	for (int h = 0; h < 24; h++)
		all_hours &= hours[h] > 0;
	check(days == 47482 && all_hours);   /* 130 years of days, 32 of them leap years */
	check(leap_days == 32);              /* 1972 ... 2096; 2100 is no leap year and is past the end */
}


static const char tok[] = "sa-token-7kQ2xZ9vH1pRtY8mW3nB6cD4fG0jL5sA";

static int clean_is(const char *in, size_t n, const char *want)
{
	char out[256];

	text_clean(out, sizeof out, in, n, tok, sizeof tok - 1);
	if (strcmp(out, want) == 0)
		return 1;
	fprintf(stderr, "  got  '%s'\n  want '%s'\n", out, want);
	return 0;
}
#define CLEAN(in, want) clean_is(in, sizeof in - 1, want)

/* Must-fail: a cleaner that passes the token, a piece of it, or a Bearer value through. */
static void t_clean(void)
{
	check(CLEAN("nodes is forbidden: User cannot list", "nodes is forbidden: User cannot list"));
	check(CLEAN("echo: sa-token-7kQ2xZ9vH1pRtY8mW3nB6cD4fG0jL5sA.", "echo: [redacted]."));
	check(CLEAN("Authorization: Bearer sa-token-7kQ2xZ9vH1pRtY8mW3nB6cD4fG0jL5sA rest",
	    "Authorization: Bearer [redacted] rest"));
	check(CLEAN("authorization: bearer xyz-other-secret and", "authorization: bearer [redacted] and"));
	check(CLEAN("piece H1pRtY8mW3 in the middle", "piece [redacted] in the middle"));
	check(CLEAN("short H1pRtY8 stays", "short H1pRtY8 stays"));
	check(CLEAN("twice sa-token-7kQ2xZ9vH1pRtY8mW3nB6cD4fG0jL5sAsa-token-7kQ2xZ9vH1pRtY8mW3nB6cD4fG0jL5sA",
	    "twice [redacted][redacted]"));
	check(CLEAN("line\nbreak\ttab\x7f", "line?break?tab?"));
	check(CLEAN("ok \xc3\xa9 bad \xff\xc3 over \xc0\xaf sur \xed\xa0\x80 c1 \xc2\x85",
	    "ok \xc3\xa9 bad \\xff\\xc3 over \\xc0\\xaf sur \\xed\\xa0\\x80 c1 \\xc2\\x85"));
	check(clean_is("nul\0byte", 8, "nul?byte"));
	/* cut to the room given, always terminated, never in the middle of a [redacted] */
	char out[12];
	text_clean(out, sizeof out, "abc sa-token-7kQ2xZ9vH1pRtY8mW3nB6cD4fG0jL5sA", 45, tok, sizeof tok - 1);
	check(strcmp(out, "abc ") == 0);
	text_clean(out, sizeof out, "\xff\xff\xff\xff", 4, tok, sizeof tok - 1);
	check(strcmp(out, "\\xff\\xff") == 0);
	/* no token known: only the Bearer rule */
	text_clean(out, sizeof out, "Bearer abc", 10, "", 0);
	check(strcmp(out, "Bearer ") == 0);     /* [redacted] did not fit; nothing of the value either */
	char big[64];
	text_clean(big, sizeof big, "Bearer abc", 10, "", 0);
	check(strcmp(big, "Bearer [redacted]") == 0);
}

/* The Date header: IMF-fixdate only, checked against strftime; the obsolete forms and any
 * damage read as "no date" (-1), so the caller falls back to its own clock and says so. */
static void t_http_date(void)
{
	static const char *bad[] = {
		"", "Sun, 06 Nov 1994 08:49:37", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Xyz 1994 08:49:37 GMT", "Sun, 31 Feb 2026 08:49:37 GMT",
		"Sun, 06 Nov 1994 24:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT ", "Sun, 06 Nov 1969 08:49:37 GMT",
		"Sun, 0x Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:3 GMT",
	};
	char want[64];

	check(text_http_date("Sun, 06 Nov 1994 08:49:37 GMT", 29) == 784111777);
	for (int64_t s = 0; s < 4102444800; s += 86400 * 31 + 3601) {
		time_t t = (time_t)s;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (!check(text_http_date(want, strlen(want)) == s))
			fprintf(stderr, "  %s\n", want);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (!check(text_http_date(bad[i], strlen(bad[i])) == -1))
			fprintf(stderr, "  read '%s'\n", bad[i]);
	check(text_rfc3339("2026-11-30T03:02:35Z", 20) == 1796007755);
	check(text_rfc3339("2026-11-30T03:02:35.123+01:00", 29) == 1796007755 - 3600);
}

/* Durations as kubectl users type them: one row per form taken, and per form refused. */
static void t_duration(void)
{
	static const struct {
		const char *in;
		int want;          /* TEXT_DURATION_* */
		int64_t secs;
	} rows[] = {
		{ "0", TEXT_DURATION_OK, 0 },
		{ "90", TEXT_DURATION_OK, 90 },           /* bare digits stay seconds (the shell watcher's) */
		{ "007", TEXT_DURATION_OK, 7 },
		{ "90s", TEXT_DURATION_OK, 90 },
		{ "0s", TEXT_DURATION_OK, 0 },            /* Go's zero */
		{ "5m", TEXT_DURATION_OK, 300 },
		{ "2h", TEXT_DURATION_OK, 7200 },
		{ "1h30m", TEXT_DURATION_OK, 5400 },
		{ "1h0m0s", TEXT_DURATION_OK, 3600 },     /* as Go's Duration.String writes it */
		{ "1h2m3s", TEXT_DURATION_OK, 3723 },
		{ "2m30s", TEXT_DURATION_OK, 150 },
		{ "90m", TEXT_DURATION_OK, 5400 },        /* a unit past the next one's size is fine, as in Go */
		{ "1000s", TEXT_DURATION_OK, 1000 },
		{ "87600h", TEXT_DURATION_OK, 315360000 }, /* exactly the ceiling */
		{ "315360000", TEXT_DURATION_OK, 315360000 },
		/* must-fail rows: each would be a different threshold if read some other way */
		{ "", TEXT_DURATION_SYNTAX, 0 },
		{ "5x", TEXT_DURATION_UNIT, 0 },
		{ "5", TEXT_DURATION_OK, 5 },
		{ "-5m", TEXT_DURATION_SIGN, 0 },
		{ "+5m", TEXT_DURATION_SIGN, 0 },
		{ "-5", TEXT_DURATION_SIGN, 0 },
		{ "1.5h", TEXT_DURATION_FRACTION, 0 },
		{ "1.5", TEXT_DURATION_FRACTION, 0 },
		{ ".5h", TEXT_DURATION_FRACTION, 0 },
		{ "1h.5m", TEXT_DURATION_FRACTION, 0 },
		{ "500ms", TEXT_DURATION_UNIT, 0 },       /* not 500 minutes and then a second */
		{ "5us", TEXT_DURATION_UNIT, 0 },
		{ "5\xc2\xb5s", TEXT_DURATION_UNIT, 0 },  /* 5µs */
		{ "5ns", TEXT_DURATION_UNIT, 0 },
		{ "2d", TEXT_DURATION_UNIT, 0 },
		{ "1w", TEXT_DURATION_UNIT, 0 },
		{ "5M", TEXT_DURATION_UNIT, 0 },          /* Go's units are lower case */
		{ "5H", TEXT_DURATION_UNIT, 0 },
		{ "5 m", TEXT_DURATION_UNIT, 0 },
		{ "5m ", TEXT_DURATION_UNIT, 0 },
		{ " 5m", TEXT_DURATION_SYNTAX, 0 },
		{ "1e3", TEXT_DURATION_UNIT, 0 },
		{ "0x3c", TEXT_DURATION_UNIT, 0 },
		{ "h", TEXT_DURATION_SYNTAX, 0 },         /* a unit without a number */
		{ "m5", TEXT_DURATION_SYNTAX, 0 },
		{ "5m3", TEXT_DURATION_SYNTAX, 0 },       /* a number without a unit after one (Go: missing unit) */
		{ "1h30", TEXT_DURATION_SYNTAX, 0 },
		{ "5mm", TEXT_DURATION_UNIT, 0 },
		{ "30m1h", TEXT_DURATION_ORDER, 0 },
		{ "1s1m", TEXT_DURATION_ORDER, 0 },
		{ "1m1m", TEXT_DURATION_ORDER, 0 },
		{ "87600h1s", TEXT_DURATION_RANGE, 0 },   /* one second past ten years */
		{ "87601h", TEXT_DURATION_RANGE, 0 },
		{ "315360001", TEXT_DURATION_RANGE, 0 },
		{ "5256001m", TEXT_DURATION_RANGE, 0 },
		{ "99999999999999999999999", TEXT_DURATION_RANGE, 0 },   /* past int64: no wrap */
		{ "9223372036854775807s", TEXT_DURATION_RANGE, 0 },
		{ "2562047788015215h", TEXT_DURATION_RANGE, 0 },          /* h times 3600 would wrap int64 */
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int64_t got = -7;
		int r = text_duration(rows[i].in, 315360000, &got);
		if (!check(r == rows[i].want) || (r == TEXT_DURATION_OK && !check(got == rows[i].secs)) ||
		    (r != TEXT_DURATION_OK && !check(got == -7)))
			fprintf(stderr, "  '%s': got %d (%lld), want %d (%lld)\n", rows[i].in, r, (long long)got,
			    rows[i].want, (long long)rows[i].secs);
	}
	/* the bound is the caller's: the poll's day */
	int64_t v;
	check(text_duration("24h", 86400, &v) == TEXT_DURATION_OK && v == 86400);
	check(text_duration("24h0m1s", 86400, &v) == TEXT_DURATION_RANGE);
	check(text_duration("86401", 86400, &v) == TEXT_DURATION_RANGE);
	check(text_duration("0s", 0, &v) == TEXT_DURATION_OK && v == 0);
	check(text_duration("1s", 0, &v) == TEXT_DURATION_RANGE);
}

/* Bare digits only, at most max, checked before overflow; anything else is refused and *out kept. */
static void t_decimal(void)
{
	static const struct {
		const char *in;
		int64_t max, want;     /* want -1: refused */
	} rows[] = {
		{ "0", 10, 0 }, { "10", 10, 10 }, { "007", 10, 7 }, { "11", 10, -1 }, { "", 10, -1 },
		{ "-1", 10, -1 }, { "+1", 10, -1 }, { " 1", 10, -1 }, { "1 ", 10, -1 }, { "1.0", 10, -1 },
		{ "1e3", 10000, -1 }, { "0x3c", 100, -1 }, { "5", 0, -1 }, { "0", 0, 0 },
		{ "1000000000", 1000000000, 1000000000 }, { "1000000001", 1000000000, -1 },
		/* would wrap a 64-bit number: refused long before */
		{ "99999999999999999999999", INT64_MAX, -1 }, { "9223372036854775807", INT64_MAX, INT64_MAX },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int64_t v = -7;
		int r = text_decimal(rows[i].in, strlen(rows[i].in), rows[i].max, &v);
		if (rows[i].want < 0 ? !check(r == -1 && v == -7) : !check(r == 0 && v == rows[i].want))
			fprintf(stderr, "  '%s': %d, %lld\n", rows[i].in, r, (long long)v);
	}
	/* the length bounds the read: "50%" read as its first two bytes */
	int64_t v = 0;
	check(text_decimal("50%", 2, 100, &v) == 0 && v == 50);
}

static const struct test tests[] = {
	{ "hexval", t_hexval },
	{ "http_date", t_http_date },
	{ "time", t_time },
	{ "clean", t_clean },
	{ "duration", t_duration },
	{ "decimal", t_decimal },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("text", tests, argc, argv);
}
