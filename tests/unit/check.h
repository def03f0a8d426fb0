/*
 * The unit-test harness: check(cond) reports file and line and counts; a test is a named
 * function in a table; main runs all of them or the ones named on the command line.
 *
 *   static void t_something(void) { check(1 + 1 == 2); }
 *   static const struct test tests[] = { { "something", t_something }, { 0, 0 } };
 *   int main(int argc, char **argv) { return run_tests("policy", tests, argc, argv); }
 *
 * Prints "NAME: N passed, N failed, N skipped". A test passes when it made at least one check,
 * none of them failed, and it did not call skip(); a skipped test says why and is counted as
 * skipped, never as passed. A test that made no check fails: an early return or an emptied
 * loop must not pass unseen. A name on the command line that is no test fails the run: a
 * misspelt name must not run nothing and exit 0.
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <string.h>

struct test {
	const char *name;
	void (*fn)(void);
};

static int check_failures, check_skipped;
static long check_count;     /* checks made, failed or not */

#define check(cond) check_at((cond), #cond, __FILE__, __LINE__)

static inline int check_at(int ok, const char *what, const char *file, int line)
{
	check_count++;
	if (!ok) {
		fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
		check_failures++;
	}
	return ok;
}

/* Marks the running test as not run here, and why (say, no IPv6 loopback). */
static inline void skip(const char *why)
{
	fprintf(stderr, "  skipped: %s\n", why);
	check_skipped = 1;
}

static inline int run_tests(const char *suite, const struct test *tests, int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0, all = argc < 2 || strcmp(argv[1], "all") == 0;

	for (int i = 1; i < argc && !all; i++) {
		const struct test *t = tests;
		while (t->name && strcmp(argv[i], t->name) != 0)
			t++;
		if (!t->name) {
			fprintf(stderr, "%s: no test named '%s'\n", suite, argv[i]);
			failed++;
		}
	}
	for (const struct test *t = tests; t->name; t++) {
		int want = all;
		for (int i = 1; i < argc && !want; i++)
			want = strcmp(argv[i], t->name) == 0;
		if (!want)
			continue;
		int before = check_failures;
		long made = check_count;
		check_skipped = 0;
		t->fn();
		if (check_failures != before) {
			failed++;
			fprintf(stderr, "%s: FAIL %s\n", suite, t->name);
		} else if (check_skipped) {
			skipped++;
			fprintf(stderr, "%s: SKIP %s\n", suite, t->name);
		} else if (check_count == made) {
			failed++;
			fprintf(stderr, "%s: FAIL %s: it made no check\n", suite, t->name);
		} else {
			passed++;
		}
	}
	printf("%s: %d passed, %d failed, %d skipped\n", suite, passed, failed, skipped);
	return failed != 0;
}

#endif
