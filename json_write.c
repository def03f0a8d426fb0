/*
 * The writer of small JSON documents (request bodies, patches): quoted strings and JSON-pointer
 * tokens escaped into the caller's buffer, never past its end. Reads nothing, allocates nothing.
 */
#include <string.h>

#include "json.h"
#include "text.h"

void json_buf_init(struct json_buf *b, char *p, size_t cap)
{
	b->p = p;
	b->len = 0;
	b->cap = cap;
	b->overflow = cap == 0;
}

/* Appends k bytes, keeping room for the final NUL. */
static void buf_put(struct json_buf *b, const char *s, size_t k)
{
	if (b->overflow || k >= b->cap - b->len) {
		b->overflow = 1;
		return;
	}
	memcpy(b->p + b->len, s, k);
	b->len += k;
}

void json_raw(struct json_buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

/* s escaped for the inside of a JSON string; pointer: also ~ as ~0 and / as ~1. */
static void put_escaped(struct json_buf *b, const char *s, int pointer)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		size_t run = 0, k;
		/* Runs of plain bytes are copied at once. */
		while (u[run] >= 0x20 && u[run] < 0x80 && u[run] != '"' && u[run] != '\\' &&
		    !(pointer && (u[run] == '~' || u[run] == '/')))
			run++;
		buf_put(b, (const char *)u, run);
		u += run;
		if (!*u)
			break;
		if (*u == '"' || *u == '\\') {
			char e[2] = { '\\', (char)*u };
			buf_put(b, e, 2);
			u++;
		} else if (*u < 0x20) {
			char e[6] = { '\\', 'u', '0', '0', hex[*u >> 4], hex[*u & 15] };
			buf_put(b, e, 6);
			u++;
		} else if (*u == '~' || *u == '/') {
			buf_put(b, *u == '~' ? "~0" : "~1", 2);
			u++;
		} else if ((k = text_utf8_len(u, strnlen((const char *)u, 4))) != 0) {
			buf_put(b, (const char *)u, k);
			u += k;
		} else {
			/* Not UTF-8: the API server would mangle it, so the document is refused. */
			b->overflow = 1;
			return;
		}
	}
}

void json_str(struct json_buf *b, const char *s)
{
	buf_put(b, "\"", 1);
	put_escaped(b, s, 0);
	buf_put(b, "\"", 1);
}

void json_ptr(struct json_buf *b, const char *s)
{
	put_escaped(b, s, 1);
}

int json_buf_end(struct json_buf *b)
{
	if (b->cap > 0)
		b->p[b->len] = '\0'; /* buf_put() always leaves room for it */
	if (b->overflow)
		return -1;
	return (int)b->len;
}
