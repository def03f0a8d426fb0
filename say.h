/*
 * The log: one line on stderr for each thing noderecover did, decided not to do, or failed
 * at, each with a UTC timestamp, written with one write(2) so lines never interleave. Every
 * log line goes through here; nothing else writes to stderr once the loop runs.
 *
 * Two forms of the same line (say_format): text, "2026-01-02T03:04:05Z MESSAGE", or JSON for
 * Loki and Elasticsearch, one object a line: {"time":"2026-01-02T03:04:05Z","level":"info",
 * "message":"MESSAGE"} and, for a line about a node or an action, "node", "action" and
 * "reason". The message is the text line's words, the same in both.
 */
#ifndef SAY_H
#define SAY_H

#include <stddef.h>

#define SAY_LINE_MAX 1024   /* a longer message is cut */

enum say_format { SAY_TEXT, SAY_JSON };

/* How lines are written from now on; SAY_TEXT until set. Set once at start-up, before any
 * other thread runs. */
void say_format(enum say_format f);

/* Writes one log line, level info: the formatted message. */
__attribute__((format(printf, 1, 2)))
void say(const char *fmt, ...);

/*
 * Writes one log line about a node or an action. level: "info", "warning" or "error"; node:
 * the node's name, action: what was done or held ("Taint", "Clear", "Delete", "Hold"), reason:
 * the Event's reason ("OutOfServiceTainted"); each NULL when it does not apply. The text form
 * carries them in the message's words already, so only the JSON form shows them apart.
 */
__attribute__((format(printf, 5, 6)))
void say_about(const char *level, const char *node, const char *action, const char *reason, const char *fmt, ...);

/* A refusal at start-up (bad settings, no cluster): "noderecover: MESSAGE" without a timestamp
 * as text (what a shell user reads), level error as JSON. */
__attribute__((format(printf, 1, 2)))
void say_fatal(const char *fmt, ...);

/* A name read from the API made safe for one log line or plan's table: ASCII only (other bytes
 * become '?'), so a column counted in bytes stays a column; returns out. */
const char *say_printable(const char *s, char *out, size_t n);

#endif
