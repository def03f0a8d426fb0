/*
 * target.c: the one bounded reader of small files (exact bound, one byte over, not a regular
 * file, missing, a directory), the one wording of its failures, and freeing a target twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "kubeconfig.h"
#include "target.h"

static char dir[] = "/tmp/test_target.XXXXXX";

static const char *make(const char *name, size_t n)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	for (size_t i = 0; f && i < n; i++)
		fputc('x', f);
	if (f)
		fclose(f);
	return path;
}

static void t_bounds(void)
{
	char buf[9], err[300];
	size_t n = 99;
	char *out = NULL;

	/* cap 9: at most 8 bytes */
	check(file_read(make("eight", 8), buf, sizeof buf, &n) == FILE_OK && n == 8 && buf[8] == '\0');
	check(file_read(make("nine", 9), buf, sizeof buf, &n) == FILE_TOO_LARGE);
	check(buf[0] != 'x');   /* nothing of a refused file stays in the buffer */
	check(file_read(make("empty", 0), buf, sizeof buf, &n) == FILE_OK && n == 0);
	check(file_load(make("eight", 8), 8, &out, &n) == FILE_OK && n == 8 && out[8] == '\0');
	free(out);
	check(file_load(make("nine", 9), 8, &out, &n) == FILE_TOO_LARGE);
	check(file_error(err, sizeof err, "CA file", "x.crt", FILE_TOO_LARGE, 8) == -1 &&
	    strcmp(err, "cannot read CA file x.crt: larger than 8 bytes") == 0);
}

static void t_not_regular(void)
{
	char buf[16], path[256], err[300];
	size_t n;
	int r;

	snprintf(path, sizeof path, "%s/fifo", dir);
	if (!check(mkfifo(path, 0600) == 0))
		return;
	/* a FIFO with no writer would block open() and read() forever */
	check((r = file_read(path, buf, sizeof buf, &n)) == FILE_NOT_REGULAR);
	file_error(err, sizeof err, "token file", path, r, 8);
	check(strstr(err, "not a regular file") != NULL);
	check((r = file_read(dir, buf, sizeof buf, &n)) == FILE_UNREADABLE && errno == EISDIR);
	snprintf(path, sizeof path, "%s/missing", dir);
	check((r = file_read(path, buf, sizeof buf, &n)) == FILE_UNREADABLE);
	file_error(err, sizeof err, "token file", path, r, 8);
	check(strstr(err, "No such file") != NULL);
}

/* The lowest free descriptor: one more file left open moves it. (Not dup(0): CI may run
 * with standard input closed, and then 0 is the lowest free one and dup fails.) */
static int lowest_fd(void)
{
	int fd = open("/dev/null", O_RDONLY);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* Must-fail: no room for even the terminator is refused before anything is opened, and a
 * refused read leaves no descriptor behind (file_read once opened first and returned open). */
static void t_no_room_no_descriptor(void)
{
	char buf[4];
	size_t n;
	int before = lowest_fd();

	check(before >= 0);
	check(file_read(make("eight", 8), buf, 0, &n) == FILE_TOO_LARGE);
	check(file_read(make("eight", 8), buf, sizeof buf, &n) == FILE_TOO_LARGE);
	check(lowest_fd() == before);
}

static void t_free_twice(void)
{
	struct kube_target t;

	memset(&t, 0, sizeof t);
	t.token = strdup("secret");
	t.key_pem = strdup("key");
	t.key_len = 3;
	kube_target_free(&t);
	check(t.token == NULL && t.key_pem == NULL);
	kube_target_free(&t);
}

/* The one bearer-token check: anything that could bend a header line is refused. */
static void t_token_ok(void)
{
	static char big[TARGET_TOKEN_MAX + 1];

	check(target_token_ok("abc.DEF-123_~", 13));
	check(!target_token_ok("", 0));
	check(!target_token_ok("a b", 3));
	check(!target_token_ok("a\r\nX-Evil: 1", 14));
	check(!target_token_ok("caf\xc3\xa9", 5));
	memset(big, 'a', sizeof big);
	check(target_token_ok(big, TARGET_TOKEN_MAX));
	check(!target_token_ok(big, TARGET_TOKEN_MAX + 1));
}

static const struct test tests[] = {
	{ "token_ok", t_token_ok },
	{ "bounds", t_bounds },
	{ "not_regular", t_not_regular },
	{ "no_room_no_descriptor", t_no_room_no_descriptor },
	{ "free_twice", t_free_twice },
	{ 0, 0 }
};

int main(int argc, char **argv)
{
	char cmd[64];
	int r;

	if (!mkdtemp(dir))
		return 1;
	r = run_tests("target", tests, argc, argv);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return r;
}
