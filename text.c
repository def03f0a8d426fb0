/*
 * The out-of-line part of text.h: writing a failure's reason. Nothing here allocates.
 */
#include <stdarg.h>
#include <stdio.h>
#include "text.h"

int text_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen == 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}
