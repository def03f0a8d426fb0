/*
 * The log: one line on stderr for each thing noderecover did, decided not to do, or failed
 * at, each with a UTC timestamp, written with one write(2) so lines never interleave. Every
 * log line goes through here; nothing else writes to stderr once the loop runs.
 */
#ifndef SAY_H
#define SAY_H

#include <stddef.h>

#define SAY_LINE_MAX 1024   /* a longer line is cut */

/* Writes one log line: "2026-01-02T03:04:05Z " and the formatted message. */
__attribute__((format(printf, 1, 2)))
void say(const char *fmt, ...);

/* A name read from the API made safe for one log line or plan's table: ASCII only (other bytes
 * become '?'), so a column counted in bytes stays a column; returns out. */
const char *say_printable(const char *s, char *out, size_t n);

#endif
