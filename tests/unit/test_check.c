/*
 * check.h itself: a test that made no check fails, as does one whose check failed; a skipped
 * test is not a failure; a name that is no test fails the run. Each inner run happens in a child
 * whose output goes nowhere, so its summary line is not counted as this suite's.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

static void t_inner_empty(void) { }
static void t_inner_checks(void) { check(1); }
static void t_inner_fails(void) { check(0); }
static void t_inner_skips(void) { skip("not here"); }
static void t_inner_returns_early(void)
{
	for (int i = 0; i < 0; i++)
		check(i >= 0);
}

/* The exit status of run_tests over one test named name, run in a child. */
static int run_one(void (*fn)(void), const char *name)
{
	const struct test tests[] = { { "inner", fn }, { 0, 0 } };
	char *argv[] = { "test_check", (char *)name, NULL };
	int st;
	pid_t p = fork();

	if (p == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		_exit(run_tests("inner", tests, 2, argv));
	}
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Must-fail: a harness that let a test with no check pass would pass every emptied test. */
static void t_no_check_fails(void)
{
	check(run_one(t_inner_empty, "inner") == 1);
	check(run_one(t_inner_returns_early, "inner") == 1);
}

static void t_outcomes(void)
{
	check(run_one(t_inner_checks, "inner") == 0);
	check(run_one(t_inner_fails, "inner") == 1);
	check(run_one(t_inner_skips, "inner") == 0);
	check(run_one(t_inner_checks, "no-such-test") == 1);
}

static const struct test tests[] = {
	{ "no_check_fails", t_no_check_fails },
	{ "outcomes", t_outcomes },
	{ 0, 0 }
};

int main(int argc, char **argv)
{
	return run_tests("check", tests, argc, argv);
}
