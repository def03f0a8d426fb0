/*
 * The HTTP/1.1 response parser (http_parse.c): the status line, the headers noderecover reads and
 * the body's framing, on bytes handed to it, so it is tested without a socket. The connection
 * (http.h) feeds it; this header knows nothing of sockets, TLS or clocks. The caller owns every
 * buffer; nothing here allocates.
 */
#ifndef HTTP_PARSE_H
#define HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Limits that keep a hostile or broken server from costing memory or time. */
#define HTTP_HEAD_MAX 16384          /* status line plus headers */
#define HTTP_CHUNK_LINE_MAX 1024     /* a chunk-size line: zeros, spaces and extensions included */
#define HTTP_MAX_HEADERS 100         /* header lines in one response head */

/* Whether ch may be part of an HTTP token (RFC 9110: a method, a header name). */
static inline int http_tchar(int ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* What a response said before its body. */
struct http_response {
	int status;                  /* 200, 404, ... */
	long retry_after;            /* Retry-After in seconds, -1 when absent or not a number */
	int chunked;                 /* Transfer-Encoding: chunked */
	long long content_length;    /* -1 when absent */
	int keep_alive;              /* the connection may be reused after the body */
	char content_type[64];       /* truncated */
	int64_t date;                /* Date in Unix seconds by the server's clock; -1 when absent or not an IMF-fixdate */
};

/*
 * The response parser, separate from the socket so it can be tested on recorded bytes.
 * http_parse_head consumes header bytes; http_parse_body decodes body bytes in place.
 */
struct http_parser {
	struct http_response r;
	size_t headlen;              /* bytes of head seen so far */
	int state;                   /* private */
	unsigned long long left;     /* private: bytes left in the body or the current chunk */
	char line[256];              /* private: partial chunk-size or trailer line */
	size_t linelen;
	int cut;                     /* private: the current line did not fit in line[] */
	int cr;                      /* private: the last head byte was CR */
	int http10;                  /* private: the status line said HTTP/1.0 */
	int has_cl;                  /* private: a Content-Length header was seen */
	size_t nlines;               /* private: header lines in this head */
	size_t extra;                /* private: bytes of the current chunk-size line, or of the trailers */
	int sized;                   /* private: the chunk-size line had a digit */
	int done;                    /* the whole body has been decoded */
	const char *why;             /* after -1: what was wrong, e.g. "bad chunk size" */
};
void http_parser_init(struct http_parser *p);
/*
 * Feeds head bytes. *used tells how many were consumed. Returns 1 when the head is complete
 * (p->r is filled; bytes after *used belong to the body), 0 when more are needed, -1 when the
 * head is malformed or longer than HTTP_HEAD_MAX.
 */
int http_parse_head(struct http_parser *p, const char *buf, size_t len, size_t *used);
/*
 * Decodes body bytes. in[0..inlen) is raw body; *used tells how many were consumed, and the
 * decoded data is written to out (at most outcap bytes; out may equal in only if the caller
 * handles overlap by memmove semantics), its length in *outlen. Returns 1 when the body
 * ended (p->done), 0 when more bytes are needed, -1 on a bad chunk size or framing.
 * A body with neither Content-Length nor chunked framing ends when the connection closes:
 * the caller reports that with http_parse_eof.
 */
int http_parse_body(struct http_parser *p, const char *in, size_t inlen, size_t *used,
    char *out, size_t outcap, size_t *outlen);
/* The connection closed: returns 1 if that properly ends the body, -1 if the body was cut. */
int http_parse_eof(struct http_parser *p);
/* Whether the body is one that only the connection's close ends (no length, not chunked). */
int http_parse_to_close(const struct http_parser *p);

#endif
