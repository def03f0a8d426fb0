/*
 * A token's shape and the bounded reader of the small files a target is built from (the
 * target is freed by kube_target_free in kubeconfig.c, with its plugin).
 * Never reads more than its bound, never blocks on a FIFO, and wipes what it drops: a token or
 * key that passed through a buffer here does not stay in freed memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "target.h"
#include "text.h"

int target_token_ok(const char *tok, size_t n)
{
	if (n == 0 || n > TARGET_TOKEN_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (tok[i] < 0x21 || tok[i] > 0x7e)
			return 0;
	return 1;
}

int file_read(const char *path, char *buf, size_t cap, size_t *len)
{
	struct stat st;
	size_t n = 0;
	int fd, e;

	if (cap == 0)
		return FILE_TOO_LARGE;
	/* O_NONBLOCK: a FIFO or a terminal named as a token or certificate must not hang the
	 * start-up in open(); such a file is refused below. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return FILE_UNREADABLE;
	if (fstat(fd, &st) < 0)
		goto unreadable;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		if (!S_ISDIR(st.st_mode))
			return FILE_NOT_REGULAR;
		errno = EISDIR;
		return FILE_UNREADABLE;
	}
	/* one byte more than allowed is read, to tell a file of exactly cap - 1 bytes from a larger one */
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto unreadable;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n >= cap) {
		explicit_bzero(buf, n);
		return FILE_TOO_LARGE;
	}
	buf[n] = '\0';
	*len = n;
	return FILE_OK;
unreadable:
	e = errno;
	close(fd);
	explicit_bzero(buf, n);
	errno = e;
	return FILE_UNREADABLE;
}

int file_load(const char *path, size_t max, char **out, size_t *len)
{
	char *b = malloc(max + 1);
	int r;

	if (!b) {
		errno = ENOMEM;
		return FILE_UNREADABLE;
	}
	if ((r = file_read(path, b, max + 1, len)) != FILE_OK) {
		free(b);
		return r;
	}
	/* The file is usually far smaller than the bound it was read with. A copy rather than
	 * realloc, which may move the bytes and leave a key in freed memory. */
	if ((*out = malloc(*len + 1)) != NULL)
		memcpy(*out, b, *len + 1);
	explicit_bzero(b, *len);
	free(b);
	if (!*out) {
		errno = ENOMEM;
		return FILE_UNREADABLE;
	}
	return FILE_OK;
}

int file_error(char *err, size_t errlen, const char *what, const char *path, int status, size_t max)
{
	if (status == FILE_TOO_LARGE)
		return text_fail(err, errlen, "cannot read %s %.256s: larger than %zu bytes", what, path, max);
	if (status == FILE_NOT_REGULAR)
		return text_fail(err, errlen, "cannot read %s %.256s: not a regular file", what, path);
	return text_fail(err, errlen, "cannot read %s %.256s: %s", what, path, strerror(errno));
}
