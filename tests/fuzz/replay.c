/*
 * Replays fuzz inputs without libFuzzer: every file named, or every file in each directory
 * named, is fed once to LLVMFuzzerTestOneInput. Built with gcc and the sanitizers, this makes
 * the committed corpora a regression test. Prints "NAME: N passed, N failed"; a sanitizer
 * report or abort ends the process (exit non-zero), so replay.sh runs one process per target.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int one(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	uint8_t *b;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	b = malloc(n ? (size_t)n : 1);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		fclose(f);
		free(b);
		return -1;
	}
	fclose(f);
	fprintf(stderr, "replay: %s\n", path);
	LLVMFuzzerTestOneInput(b, (size_t)n);
	free(b);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (int a = 1; a < argc; a++) {
		struct stat st;
		if (stat(argv[a], &st) != 0) {
			fprintf(stderr, "replay: no such file %s\n", argv[a]);
			failed++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			one(argv[a]) == 0 ? passed++ : failed++;
			continue;
		}
		DIR *d = opendir(argv[a]);
		struct dirent *e;
		char **names = NULL;
		size_t nn = 0;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			names = realloc(names, (nn + 1) * sizeof *names);
			size_t l = strlen(argv[a]) + strlen(e->d_name) + 2;
			names[nn] = malloc(l);
			snprintf(names[nn], l, "%s/%s", argv[a], e->d_name);
			nn++;
		}
		if (d)
			closedir(d);
		if (nn)
			qsort(names, nn, sizeof *names, cmp);
		for (size_t i = 0; i < nn; i++) {
			one(names[i]) == 0 ? passed++ : failed++;
			free(names[i]);
		}
		free(names);
	}
	printf("%s: %d passed, %d failed\n", argv[0], passed, failed);
	return failed != 0;
}
