/*
 * The program's one monotonic clock, and the one test scale that every fixed timer obeys.
 * The bottom of the house: it includes nothing of ours, never sleeps and never allocates.
 * Wall-clock time is not here: what is written into the API (a taint's time, a Lease's
 * MicroTime) comes from the API server's Date or from time()/clock_gettime where it is used.
 */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>

/* Milliseconds on the monotonic clock: never goes back, counts from an arbitrary start. */
int64_t clock_ms(void);

/*
 * How long the program waits for a fixed timer of ms milliseconds: ms divided by the test
 * scale (1 outside tests). Every fixed timer goes through here (HTTP deadlines, the watch's
 * silence limit and backoff, the readiness rule's silence); settings (--poll, --relist,
 * thresholds) and the Lease's timings, which other replicas read, never do.
 */
int64_t clock_span(int64_t ms);

/* clock_ms() + clock_span(ms): the moment a fixed timer started now ends. */
int64_t clock_after(int64_t ms);

/*
 * Test-only: sets the scale from the text of NODERECOVER_TEST_DEADLINE_SCALE (NULL, empty, or
 * anything but a whole number from 1 to 1000: 1). Called once by main before any thread starts.
 */
void clock_scale(const char *text);

#endif
