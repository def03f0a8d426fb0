/*
 * The monotonic clock and the test scale (clock.h). Owns the scale, set once at start; never
 * sleeps, never reads the environment itself.
 */
#include <string.h>
#include <time.h>
#include "clock.h"
#include "text.h"

static int64_t scale = 1;

int64_t clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_span(int64_t ms)
{
	return ms / scale;
}

int64_t clock_after(int64_t ms)
{
	return clock_ms() + clock_span(ms);
}

void clock_scale(const char *text)
{
	int64_t v;

	scale = 1;
	if (text && text_decimal(text, strlen(text), 1000, &v) == 0 && v >= 1)
		scale = v;
}
