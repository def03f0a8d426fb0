/*
 * The HTTP/1.1 response parser: the status line, the headers noderecover reads, and the body's
 * framing (Content-Length or chunked), on bytes handed to it, so it is tested without a socket.
 * Owns the parser's state and its limits; never touches a socket, a clock or a buffer it was
 * not given, and allocates nothing. http.c feeds it.
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_parse.h"
#include "text.h"

enum {
	P_STATUS, P_HEADERS, P_LENGTH, P_EOF, C_SIZE, C_SIZE_WS, C_EXT, C_SIZE_LF, C_DATA,
	C_DATA_CR, C_DATA_LF, C_TRAILER, C_TRAILER_LF, P_DONE, P_ERROR
};

void http_parser_init(struct http_parser *p)
{
	memset(p, 0, sizeof *p);
	p->state = P_STATUS;
	p->r.retry_after = -1;
	p->r.content_length = -1;
	p->r.date = -1;
}

static int parse_fail(struct http_parser *p, const char *why)
{
	p->state = P_ERROR;
	p->why = why;
	return -1;
}

static int status_line(struct http_parser *p)
{
	const char *s = p->line;

	if (p->linelen < 12 || strncmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ')
		return parse_fail(p, "bad status line");
	if (s[9] < '1' || s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' ||
	    (p->linelen > 12 && s[12] != ' '))
		return parse_fail(p, "bad status line");
	p->http10 = s[7] == '0';
	p->r.status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	p->r.keep_alive = !p->http10;
	p->r.chunked = 0;
	p->r.content_length = -1;
	p->r.retry_after = -1;
	p->r.content_type[0] = 0;
	p->r.date = -1;
	p->has_cl = 0;
	p->nlines = 0;
	p->state = P_HEADERS;
	return 0;
}

/* Does the comma-separated list v hold token tok (case-insensitive)? */
static int has_token(const char *v, const char *tok)
{
	size_t n = strlen(tok);

	while (*v) {
		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		if (strncasecmp(v, tok, n) == 0 && (v[n] == 0 || v[n] == ',' || v[n] == ' ' || v[n] == '\t'))
			return 1;
		while (*v && *v != ',')
			v++;
	}
	return 0;
}

static int header_line(struct http_parser *p)
{
	char *s = p->line, *colon, *v, *e;
	int64_t n;

	if (++p->nlines > HTTP_MAX_HEADERS)
		return parse_fail(p, "too many header lines");
	if (s[0] == ' ' || s[0] == '\t')
		return parse_fail(p, "folded header line");
	colon = strchr(s, ':');
	if (colon == NULL)
		return parse_fail(p, p->cut ? "header name too long" : "header line without a colon");
	if (colon == s)
		return parse_fail(p, "empty header name");
	for (char *q = s; q < colon; q++)
		if (!http_tchar((unsigned char)*q))
			return parse_fail(p, "bad header name");
	*colon = 0;
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (e = s + p->linelen; e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
		;
	*e = 0;
	if (strcasecmp(s, "content-length") == 0) {
		if (p->cut || text_decimal(v, strlen(v), INT64_MAX, &n) < 0)
			return parse_fail(p, "bad Content-Length");
		if (p->has_cl && n != p->r.content_length)
			return parse_fail(p, "conflicting Content-Length headers");
		p->has_cl = 1;
		p->r.content_length = n;
	} else if (strcasecmp(s, "transfer-encoding") == 0) {
		/* we decode no other coding, and "chunked" may appear once, last */
		if (p->cut || strcasecmp(v, "chunked") != 0 || p->r.chunked)
			return parse_fail(p, "unsupported Transfer-Encoding");
		p->r.chunked = 1;
	} else if (strcasecmp(s, "connection") == 0) {
		if (has_token(v, "close"))
			p->r.keep_alive = 0;
		else if (p->http10 && has_token(v, "keep-alive"))
			p->r.keep_alive = 1;
	} else if (strcasecmp(s, "retry-after") == 0) {
		/* delta-seconds; an HTTP-date counts as absent; a huge delay is capped at a day */
		if (!p->cut && text_decimal(v, strlen(v), INT64_MAX, &n) == 0)
			p->r.retry_after = n > 86400 ? 86400 : (long)n;
		else if (v[0] >= '0' && v[0] <= '9' && strspn(v, "0123456789") == strlen(v))
			p->r.retry_after = 86400;
	} else if (strcasecmp(s, "content-type") == 0) {
		snprintf(p->r.content_type, sizeof p->r.content_type, "%s", v);
	} else if (strcasecmp(s, "date") == 0) {
		p->r.date = p->cut ? -1 : text_http_date(v, strlen(v));
	}
	return 0;
}

/* The empty line: the head is complete unless it was an interim 1xx. 1 or 0 (1xx), -1. */
static int head_end(struct http_parser *p)
{
	int st = p->r.status;

	if (st >= 100 && st < 200) {
		if (st == 101)
			return parse_fail(p, "unexpected 101 Switching Protocols");
		p->state = P_STATUS;
		return 0;
	}
	if (st == 204 || st == 304) {
		p->state = P_DONE;
		p->done = 1;
	} else if (p->r.chunked) {
		/* RFC 9112 6.1: both framings is a smuggling attempt or a broken server */
		if (p->has_cl)
			return parse_fail(p, "both Content-Length and chunked framing");
		p->state = C_SIZE;
	} else if (p->has_cl) {
		p->left = (unsigned long long)p->r.content_length;
		p->state = P_LENGTH;
		if (p->left == 0) {
			p->state = P_DONE;
			p->done = 1;
		}
	} else {
		p->state = P_EOF;
		p->r.keep_alive = 0;
	}
	return 1;
}

int http_parse_head(struct http_parser *p, const char *buf, size_t len, size_t *used)
{
	size_t i = 0;
	int e = 0;

	while (i < len && e == 0) {
		unsigned char ch = (unsigned char)buf[i++];

		if (p->state != P_STATUS && p->state != P_HEADERS) {
			e = p->state == P_ERROR ? -1 : parse_fail(p, "head already complete");
			break;
		}
		if (++p->headlen > HTTP_HEAD_MAX) {
			e = parse_fail(p, "response head longer than 16384 bytes");
			break;
		}
		if (p->cr) {
			p->cr = 0;
			if (ch != '\n') {
				e = parse_fail(p, "CR without LF in the response head");
				break;
			}
			p->line[p->linelen] = 0;
			if (p->state == P_STATUS)
				e = status_line(p);
			else if (p->linelen == 0)
				e = head_end(p);
			else
				e = header_line(p);
			p->linelen = 0;
			p->cut = 0;
		} else if (ch == '\r') {
			p->cr = 1;
		} else if (ch == '\n') {
			e = parse_fail(p, "LF without CR in the response head");
		} else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
			e = parse_fail(p, "control byte in the response head");
		} else if (p->linelen < sizeof p->line - 1) {
			p->line[p->linelen++] = (char)ch;
		} else {
			p->cut = 1;
		}
	}
	*used = i;
	return e;
}

/*
 * One byte of chunk framing (size line, CRLF after data, trailers). Bytes that carry no data
 * are bounded: a size line (leading zeros, spaces, extensions) by HTTP_CHUNK_LINE_MAX, the
 * trailers by HTTP_HEAD_MAX, so a server cannot keep a body going without sending any.
 */
static int chunk_byte(struct http_parser *p, int ch)
{
	int h;

	if (p->state == C_SIZE || p->state == C_SIZE_WS || p->state == C_EXT) {
		if (++p->extra > HTTP_CHUNK_LINE_MAX)
			return parse_fail(p, "chunk size line too long");
	}
	switch (p->state) {
	case C_SIZE:
		if ((h = text_hexval(ch)) >= 0) {
			if (p->left > (ULLONG_MAX >> 4))
				return parse_fail(p, "chunk size overflows");
			p->left = p->left << 4 | (unsigned)h;
			p->sized = 1;
			return 0;
		}
		if (!p->sized)
			return parse_fail(p, "bad chunk size");
		if (ch == ' ' || ch == '\t')
			p->state = C_SIZE_WS;
		else if (ch == ';')
			p->state = C_EXT;
		else if (ch == '\r')
			p->state = C_SIZE_LF;
		else
			return parse_fail(p, "bad chunk size");
		return 0;
	case C_SIZE_WS:
		if (ch == ';')
			p->state = C_EXT;
		else if (ch == '\r')
			p->state = C_SIZE_LF;
		else if (ch != ' ' && ch != '\t')
			return parse_fail(p, "bad chunk size");
		return 0;
	case C_EXT:
		/* extensions are ignored */
		if (ch == '\r')
			p->state = C_SIZE_LF;
		else if (ch == '\n' || ch == 0)
			return parse_fail(p, "bad chunk extension");
		return 0;
	case C_SIZE_LF:
		if (ch != '\n')
			return parse_fail(p, "chunk size line not ended by CRLF");
		p->extra = 0;
		p->linelen = 0;
		p->state = p->left == 0 ? C_TRAILER : C_DATA;
		return 0;
	case C_DATA_CR:
		if (ch != '\r')
			return parse_fail(p, "chunk data not followed by CRLF");
		p->state = C_DATA_LF;
		return 0;
	case C_DATA_LF:
		if (ch != '\n')
			return parse_fail(p, "chunk data not followed by CRLF");
		p->state = C_SIZE;
		p->left = 0;
		p->sized = 0;
		p->extra = 0;
		return 0;
	case C_TRAILER:
		if (++p->extra > HTTP_HEAD_MAX)
			return parse_fail(p, "chunked trailer too long");
		if (ch == '\r')
			p->state = C_TRAILER_LF;
		else if (ch == '\n' || ch == 0)
			return parse_fail(p, "bad chunked trailer");
		else
			p->linelen++;
		return 0;
	case C_TRAILER_LF:
		if (ch != '\n')
			return parse_fail(p, "bad chunked trailer");
		if (p->linelen == 0) {
			p->state = P_DONE;
			p->done = 1;
		}
		p->linelen = 0;
		p->state = p->done ? P_DONE : C_TRAILER;
		return 0;
	}
	return parse_fail(p, "parser used out of order");
}

int http_parse_body(struct http_parser *p, const char *in, size_t inlen, size_t *used,
    char *out, size_t outcap, size_t *outlen)
{
	size_t i = 0, o = 0;
	int e = 0;

	while (!p->done && i < inlen && e == 0) {
		if (p->state == P_LENGTH || p->state == C_DATA || p->state == P_EOF) {
			size_t k = inlen - i;
			if (k > outcap - o)
				k = outcap - o;
			if (p->state != P_EOF && k > p->left)
				k = (size_t)p->left;
			if (k == 0)
				break;
			memmove(out + o, in + i, k);
			i += k;
			o += k;
			if (p->state == P_EOF)
				continue;
			p->left -= k;
			if (p->left == 0 && p->state == P_LENGTH) {
				p->state = P_DONE;
				p->done = 1;
			} else if (p->left == 0) {
				p->state = C_DATA_CR;
			}
		} else if (p->state == P_ERROR) {
			e = -1;
		} else if (p->state == P_STATUS || p->state == P_HEADERS) {
			e = parse_fail(p, "body parsed before the head");
		} else {
			e = chunk_byte(p, (unsigned char)in[i++]);
		}
	}
	*used = i;
	*outlen = o;
	if (e < 0 || p->state == P_ERROR)
		return -1;
	return p->done;
}

int http_parse_eof(struct http_parser *p)
{
	if (p->done)
		return 1;
	if (p->state == P_EOF) {
		p->state = P_DONE;
		p->done = 1;
		return 1;
	}
	return parse_fail(p, "connection closed before the end of the response");
}

int http_parse_to_close(const struct http_parser *p)
{
	return p->state == P_EOF;
}
