/*
 * text.h: hex digits, and RFC 3339 times checked against the C library's gmtime/strftime.
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
	/* every 7919 s over 1970-2100: each day, hour and leap day is crossed */
	for (int64_t s = 0; s < 4102444800; s += 7919 * 37) {
		time_t t = (time_t)s;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%SZ", &tm);
		text_time(got, s);
		if (!check(strcmp(got, want) == 0)) {
			fprintf(stderr, "  %lld: got %s, want %s\n", (long long)s, got, want);
			break;
		}
	}
}

static const struct test tests[] = {
	{ "hexval", t_hexval },
	{ "time", t_time },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("text", tests, argc, argv);
}
