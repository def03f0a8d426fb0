/*
 * The log line writer. Never allocates; a line that does not fit SAY_LINE_MAX is cut.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "say.h"
#include "text.h"

void say(const char *fmt, ...)
{
	char line[SAY_LINE_MAX];
	size_t n;
	va_list ap;

	text_time(line, time(NULL));
	n = TEXT_TIME_LEN;
	line[n++] = ' ';
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	if (write(2, line, n) < 0)
		return;
}

const char *say_printable(const char *s, char *out, size_t n)
{
	size_t i = 0;

	for (; *s && i + 1 < n; s++)
		out[i++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	out[i] = '\0';
	return out;
}
