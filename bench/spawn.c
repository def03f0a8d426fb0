/*
 * spawn RESULT CMD [ARG...]: runs CMD, waits for it, writes "user_s sys_s maxrss_kib status" to
 * RESULT and exits with CMD's status. Built static so that its own memory is a few pages:
 * Linux counts the resident set of the process a child was forked from, before exec, in the
 * child's peak RSS (ru_maxrss), so a child forked from Python or a shell would report the
 * parent's tens of MiB instead of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fputs("usage: spawn RESULT CMD [ARG...]\n", stderr);
		return 127;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("spawn: fork");
		return 127;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("spawn: wait4");
		return 127;
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	FILE *f = fopen(argv[1], "w");
	if (f) {
		fprintf(f, "%ld.%06ld %ld.%06ld %ld %d\n", (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
		    (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, ru.ru_maxrss, code);
		fclose(f);
	}
	return code;
}
