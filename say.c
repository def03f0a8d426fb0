/*
 * The log line writer, text or JSON. Never allocates; a message that does not fit SAY_LINE_MAX
 * is cut. The JSON form escapes what a JSON string cannot hold and makes a byte that is not
 * UTF-8 '?', so every line parses whatever a server or a file put in the message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "say.h"
#include "text.h"

/* Set once at start-up (say_format) and only read after: no lock. */
static enum say_format format = SAY_TEXT;

void say_format(enum say_format f)
{
	format = f;
}

/* Appends s (n bytes) to line[*len..cap) as the inside of a JSON string, cut where it would
 * not fit. */
static void json_escaped(char *line, size_t *len, size_t cap, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, l = *len;

	while (i < n) {
		char e[6];
		size_t k = 1;
		const char *put = e;
		if (u[i] == '"' || u[i] == '\\') {
			e[0] = '\\', e[1] = (char)u[i], k = 2;
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			e[0] = '\\', e[1] = 'u', e[2] = '0', e[3] = '0', e[4] = hex[u[i] >> 4], e[5] = hex[u[i] & 15], k = 6;
		} else if (u[i] < 0x80) {
			e[0] = (char)u[i];
		} else if ((k = text_utf8_len(u + i, n - i < 4 ? n - i : 4)) != 0) {
			put = (const char *)u + i;
		} else {
			e[0] = '?', k = 1;
		}
		if (l + k >= cap)
			break;
		memcpy(line + l, put, k);
		l += k;
		i += put == e ? 1 : k;
	}
	*len = l;
}

/* Appends ,"key":"value" when value is set. */
static void json_field(char *line, size_t *len, size_t cap, const char *key, const char *value)
{
	size_t l = *len;

	if (!value || l + strlen(key) + 6 >= cap)
		return;
	l += (size_t)snprintf(line + l, cap - l, ",\"%s\":\"", key);
	json_escaped(line, &l, cap - 1, value, strlen(value));
	line[l++] = '"';
	*len = l;
}

/* Writes the line: the message msg in the form set, with its fields. stamp: text's timestamp
 * in front (not for say_fatal's "noderecover: "). */
static void emit(const char *level, const char *node, const char *action, const char *reason, int stamp,
    const char *msg)
{
	/* the message escaped can grow six times over (\u00XX); room for the fields beside it */
	char line[SAY_LINE_MAX * 2 + 512], ts[TEXT_TIME_LEN + 1];
	size_t n;

	text_time(ts, time(NULL));
	if (format == SAY_JSON) {
		n = (size_t)snprintf(line, sizeof line, "{\"time\":\"%s\",\"level\":\"%s\",\"message\":\"", ts, level);
		/* room kept for the closing quote, the fields and "}\n" */
		json_escaped(line, &n, sizeof line - 512, msg, strlen(msg));
		line[n++] = '"';
		json_field(line, &n, sizeof line - 3, "node", node);
		json_field(line, &n, sizeof line - 3, "action", action);
		json_field(line, &n, sizeof line - 3, "reason", reason);
		line[n++] = '}';
	} else if (stamp) {
		n = (size_t)snprintf(line, SAY_LINE_MAX, "%s %s", ts, msg);
		n = n >= SAY_LINE_MAX ? SAY_LINE_MAX - 1 : n;
	} else {
		n = (size_t)snprintf(line, SAY_LINE_MAX, "noderecover: %s", msg);
		n = n >= SAY_LINE_MAX ? SAY_LINE_MAX - 1 : n;
	}
	line[n++] = '\n';
	if (write(2, line, n) < 0)
		return;
}

void say(const char *fmt, ...)
{
	char msg[SAY_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg - TEXT_TIME_LEN - 2, fmt, ap);
	va_end(ap);
	emit("info", NULL, NULL, NULL, 1, msg);
}

void say_about(const char *level, const char *node, const char *action, const char *reason, const char *fmt, ...)
{
	char msg[SAY_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg - TEXT_TIME_LEN - 2, fmt, ap);
	va_end(ap);
	emit(level ? level : "info", node, action, reason, 1, msg);
}

void say_fatal(const char *fmt, ...)
{
	char msg[SAY_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg - 16, fmt, ap);
	va_end(ap);
	emit("error", NULL, NULL, NULL, 0, msg);
}

const char *say_printable(const char *s, char *out, size_t n)
{
	size_t i = 0;

	for (; *s && i + 1 < n; s++)
		out[i++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	out[i] = '\0';
	return out;
}
