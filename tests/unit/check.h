/*
 * The unit-test harness: check(cond) reports file and line and counts; a test is a named
 * function in a table; main runs all of them or the ones named on the command line.
 *
 *   static void t_something(void) { check(1 + 1 == 2); }
 *   static const struct test tests[] = { { "something", t_something }, { 0, 0 } };
 *   int main(int argc, char **argv) { return run_tests("policy", tests, argc, argv); }
 *
 * Prints "NAME: N passed, N failed" (a test passes when none of its checks failed).
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <string.h>

struct test {
	const char *name;
	void (*fn)(void);
};

static int check_failures;

#define check(cond) check_at((cond), #cond, __FILE__, __LINE__)

static inline int check_at(int ok, const char *what, const char *file, int line)
{
	if (!ok) {
		fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
		check_failures++;
	}
	return ok;
}

static inline int run_tests(const char *suite, const struct test *t, int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (; t->name; t++) {
		int want = argc < 2 || strcmp(argv[1], "all") == 0;
		for (int i = 1; i < argc && !want; i++)
			want = strcmp(argv[i], t->name) == 0;
		if (!want)
			continue;
		int before = check_failures;
		t->fn();
		if (check_failures == before) {
			passed++;
		} else {
			failed++;
			fprintf(stderr, "%s: FAIL %s\n", suite, t->name);
		}
	}
	printf("%s: %d passed, %d failed\n", suite, passed, failed);
	return failed != 0;
}

#endif
