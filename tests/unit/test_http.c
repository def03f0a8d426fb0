/*
 * Tests for http.c: the response parser on recorded bytes (whole, byte by byte, in random
 * splits), the iPAddress reader on real and broken certificates, PEM loading, and TLS on
 * loopback against tests/unit/http/server.py with certificates made by http/mkcerts.sh.
 * Run from tests/unit. Needs openssl and python3 (build.sh installs both).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "http.h"

/* ---- parser helpers ---- */

struct parsed {
	int rc;                      /* 1 whole body, 0 more needed, -1 malformed */
	struct http_response r;
	char body[200000];
	size_t bodylen;
	const char *why;
	int eof;                     /* http_parse_eof after the last byte, when rc was 0 */
};

static struct parsed got;
static unsigned long long rng = 88172645463325252ULL;

static size_t rnd(size_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (size_t)(rng % n);
}

/*
 * Feeds raw to a fresh parser in pieces: step 0 = all at once, step 1 = one byte at a time,
 * step -1 = random split sizes. outcap bounds each body output. Fills got.
 */
static void parse(const char *raw, size_t len, int step, size_t outcap)
{
	static char piece[300000];
	struct http_parser p;
	size_t pos = 0, used, outlen;
	int head = 0, rc = 0;

	memset(&got, 0, sizeof got);
	http_parser_init(&p);
	while (pos < len && rc >= 0 && !(head && p.done)) {
		size_t n = step == 0 ? len - pos : step == 1 ? 1 : 1 + rnd(64);
		if (n > len - pos)
			n = len - pos;
		memcpy(piece, raw + pos, n);
		size_t off = 0;
		while (off < n && rc >= 0) {
			if (!head) {
				rc = http_parse_head(&p, piece + off, n - off, &used);
				off += used;
				if (rc == 1) {
					head = 1;
					rc = p.done;
				}
				if (rc == 0 && used == 0)
					break;
				continue;
			}
			size_t cap = outcap;
			if (cap > sizeof got.body - got.bodylen)
				cap = sizeof got.body - got.bodylen;
			rc = http_parse_body(&p, piece + off, n - off, &used, got.body + got.bodylen, cap, &outlen);
			off += used;
			got.bodylen += outlen;
			if (rc != 0 || (used == 0 && outlen == 0))
				break;
		}
		pos += off;
		if (off < n && rc == 0)
			break;               /* the parser stopped taking bytes */
	}
	got.rc = rc;
	got.r = p.r;
	got.why = p.why;
	if (rc == 0)
		got.eof = http_parse_eof(&p);
}

static int body_is(const char *want)
{
	return got.bodylen == strlen(want) && memcmp(got.body, want, got.bodylen) == 0;
}

static int why_has(const char *s)
{
	return got.why != NULL && strstr(got.why, s) != NULL;
}

/* Every way of splitting must give the same result. */
static void parse_all_ways(const char *raw, size_t len, int *rcs, const char *want)
{
	for (int i = 0; i < 3 + 50; i++) {
		int step = i == 0 ? 0 : i == 1 ? 1 : -1;
		parse(raw, len, step, i == 2 ? 3 : sizeof got.body);
		rcs[i < 3 ? i : 3] += got.rc == 1 && (want == NULL || body_is(want));
	}
}

#define RAW(s) s, sizeof s - 1

static const char cl_resp[] =
    "HTTP/1.1 200 OK\r\n"
    "Audit-Id: 1b5e1f2c-9d5f-4d6a-8c1e-3f5d2a7b9c10\r\n"
    "Cache-Control: no-cache, private\r\n"
    "Content-Type: application/json\r\n"
    "X-Kubernetes-Pf-Flowschema-Uid: 6e6ad3c4-1b0a-4e3c-9a4b-2b3c8f0a1d2e\r\n"
    "Date: Mon, 30 Nov 2026 03:02:35 GMT\r\n"
    "Content-Length: 52\r\n"
    "\r\n"
    "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"items\":[]}\n  \n";

static void t_content_length(void)
{
	int rcs[4] = { 0 };

	parse(RAW(cl_resp), 0, sizeof got.body);
	check(got.rc == 1);
	check(got.r.status == 200);
	check(got.r.content_length == 52);
	check(got.r.chunked == 0);
	check(got.r.keep_alive == 1);
	check(got.r.retry_after == -1);
	check(strcmp(got.r.content_type, "application/json") == 0);
	check(body_is("{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"items\":[]}\n  \n"));
	parse_all_ways(RAW(cl_resp), rcs, "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"items\":[]}\n  \n");
	check(rcs[0] == 1 && rcs[1] == 1 && rcs[2] == 1 && rcs[3] == 50);
}

/* Bytes after the body are not the body's: the parser stops at its end. */
static void t_content_length_stops(void)
{
	struct http_parser p;
	static const char raw[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\n";
	size_t used, out;
	char buf[64];

	http_parser_init(&p);
	check(http_parse_head(&p, RAW(raw), &used) == 1);
	check(used == sizeof raw - 1 - 20);
	check(http_parse_body(&p, raw + used, sizeof raw - 1 - used, &used, buf, sizeof buf, &out) == 1);
	check(used == 3 && out == 3 && memcmp(buf, "abc", 3) == 0);
	check(p.done);
}

static const char chunked_resp[] =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: application/json\r\n"
    "Transfer-Encoding: chunked\r\n"
    "\r\n"
    "19;name=value;other=\"quoted ; \"\r\n"
    "{\"kind\":\"NodeList\",\"items\r\n"
    "A\r\n"
    "\":[{\"a\":1}\r\n"
    "00000003 \r\n"
    ",{}\r\n"
    "2\r\n"
    "]}\r\n"
    "0\r\n"
    "X-Trailer: one\r\n"
    "X-Other: two\r\n"
    "\r\n";
static const char chunked_body[] = "{\"kind\":\"NodeList\",\"items\":[{\"a\":1},{}]}";

static void t_chunked(void)
{
	int rcs[4] = { 0 };

	parse(RAW(chunked_resp), 0, sizeof got.body);
	check(got.rc == 1);
	check(got.r.chunked == 1);
	check(got.r.content_length == -1);
	check(body_is(chunked_body));
	parse_all_ways(RAW(chunked_resp), rcs, chunked_body);
	check(rcs[0] == 1 && rcs[1] == 1 && rcs[2] == 1 && rcs[3] == 50);
}

/* Decoding in place, out == in, as the contract allows. */
static void t_chunked_in_place(void)
{
	struct http_parser p;
	char buf[sizeof chunked_resp];
	size_t used, out;

	memcpy(buf, chunked_resp, sizeof buf);
	http_parser_init(&p);
	check(http_parse_head(&p, buf, sizeof buf - 1, &used) == 1);
	char *b = buf + used;
	size_t n = sizeof buf - 1 - used;
	check(http_parse_body(&p, b, n, &used, b, n, &out) == 1);
	check(used == n);
	check(out == strlen(chunked_body) && memcmp(b, chunked_body, out) == 0);
}

static void t_chunked_big(void)
{
	static char raw[200000];
	static char want[150000];
	size_t n = 0, w = 0;
	int rcs[4] = { 0 };

	n += (size_t)sprintf(raw, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 100; i++) {
		size_t k = 1 + (size_t)i * 13 % 1400;
		n += (size_t)sprintf(raw + n, i % 2 ? "%zx\r\n" : "%zX\r\n", k);
		for (size_t j = 0; j < k; j++)
			raw[n++] = want[w++] = (char)('a' + (i + j) % 26);
		raw[n++] = '\r';
		raw[n++] = '\n';
	}
	n += (size_t)sprintf(raw + n, "0\r\n\r\n");
	want[w] = 0;
	parse_all_ways(raw, n, rcs, want);
	check(rcs[0] == 1 && rcs[1] == 1 && rcs[2] == 1 && rcs[3] == 50);
}

static void bad_chunk(const char *body, const char *why)
{
	char raw[512];
	int n = snprintf(raw, sizeof raw, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%s", body);

	for (int step = -1; step <= 1; step++) {
		parse(raw, (size_t)n, step, 100);
		if (!check(got.rc == -1 && why_has(why)))
			fprintf(stderr, "  body %s: rc %d why %s\n", body, got.rc, got.why ? got.why : "-");
	}
}

static void t_bad_chunk_size(void)
{
	bad_chunk("zz\r\nhello\r\n0\r\n\r\n", "bad chunk size");
	bad_chunk("-5\r\nhello\r\n0\r\n\r\n", "bad chunk size");
	bad_chunk("\r\nhello\r\n0\r\n\r\n", "bad chunk size");
	bad_chunk("0x5\r\nhello\r\n0\r\n\r\n", "bad chunk size");
	bad_chunk("5 5\r\nhello\r\n0\r\n\r\n", "bad chunk size");
	bad_chunk("5\nhello\r\n0\r\n\r\n", "bad chunk size");
	bad_chunk("10000000000000000\r\n", "overflows");
	bad_chunk("fffffffffffffffff\r\n", "overflows");
	bad_chunk("5\r\nhelloX\r\n0\r\n\r\n", "not followed by CRLF");
	bad_chunk("5\r\nhello\rX0\r\n\r\n", "not followed by CRLF");
	bad_chunk("5\r\nhello\n0\r\n\r\n", "not followed by CRLF");
	bad_chunk("5\rhello\r\n", "CRLF");
	bad_chunk("0\r\nX-T: 1\n\r\n", "trailer");
}

/* The largest size that fits is not an error by itself; it just never ends. */
static void t_chunk_size_max(void)
{
	static const char raw[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc";

	parse(RAW(raw), 0, 100);
	check(got.rc == 0);
	check(body_is("abc"));
	check(got.eof == -1);
}

/*
 * Framing that carries no data is bounded in bytes: leading zeros, spaces and extensions of one
 * size line, and trailers. Must-fail: an unbounded parser would take these as "more needed".
 */
static void framing_only(const char *before, const char *fill, size_t n, const char *after, const char *why)
{
	static char raw[4 * HTTP_HEAD_MAX];
	static char out[64];
	struct http_parser p;
	size_t used, outlen, pos, k, end;
	int rc = 0;

	k = (size_t)snprintf(raw, sizeof raw, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%s", before);
	for (size_t i = 0; i < n; i++)
		raw[k + i] = fill[i % strlen(fill)];
	memcpy(raw + k + n, after, strlen(after));
	end = k + n + strlen(after);
	http_parser_init(&p);
	check(http_parse_head(&p, raw, end, &used) == 1);
	/* a byte at a time, as a trickling server sends it */
	for (pos = used; pos < end && rc == 0; pos += used)
		rc = http_parse_body(&p, raw + pos, 1, &used, out, sizeof out, &outlen);
	if (why == NULL)
		check(rc == 1 && p.done);
	else if (!check(rc == -1 && p.why && strstr(p.why, why)))
		fprintf(stderr, "  '%s' + '%s' x%zu: rc %d why %s\n", before, fill, n, rc, p.why ? p.why : "-");
}

/*
 * Framing that carries no data is bounded in bytes: leading zeros, spaces and extensions of a
 * size line, and trailers. Must-fail: an unbounded parser takes each of these as "more needed".
 */
static void t_chunk_framing_bounded(void)
{
	const size_t max = HTTP_CHUNK_LINE_MAX;

	/* within the bound: an ordinary body */
	framing_only("", "0", max - 2, "5\r\nhello\r\n0\r\n\r\n", NULL);
	framing_only("5", " ", max - 2, "\r\nhello\r\n0\r\n\r\n", NULL);
	framing_only("5;", "x", max - 3, "\r\nhello\r\n0\r\n\r\n", NULL);
	framing_only("5\r\nhello\r\n0\r\n", "X-T: 1\r\n", HTTP_HEAD_MAX - 16, "\r\n", NULL);
	/* past it, each kind of filler */
	framing_only("", "0", max + 1, "5\r\nhello\r\n0\r\n\r\n", "chunk size line too long");
	framing_only("", "0", 4 * HTTP_HEAD_MAX - 200, "", "chunk size line too long");
	framing_only("5", " \t", max + 1, "", "chunk size line too long");
	framing_only("5;", "a=b;", max + 1, "", "chunk size line too long");
	framing_only("5\r\nhello\r\n0\r\n", "X-T: 1\r\n", 2 * HTTP_HEAD_MAX, "\r\n", "trailer too long");
	/* each size line has its own bound: many short ones are fine */
	framing_only("", "0001\r\nx\r\n", 8 * max, "0\r\n\r\n", NULL);
}

static void t_truncated(void)
{
	static const char cut[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello";
	static const char cutchunk[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n";
	static const char cuthead[] = "HTTP/1.1 200 OK\r\nContent-Len";
	static const char eof[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end";

	parse(RAW(cut), 0, 100);
	check(got.rc == 0 && body_is("hello") && got.eof == -1);
	parse(RAW(cutchunk), 1, 100);
	check(got.rc == 0 && body_is("hello") && got.eof == -1);
	parse(RAW(cuthead), 0, 100);
	check(got.rc == 0 && got.eof == -1);
	parse(RAW(eof), -1, 100);
	check(got.rc == 0 && body_is("until the end") && got.eof == 1);
	check(got.r.keep_alive == 0);
}

static void t_head_limits(void)
{
	static char raw[HTTP_HEAD_MAX + 200];
	static const char start[] = "HTTP/1.1 200 OK\r\nX-Big: ";
	static const char end[] = "\r\nContent-Length: 0\r\n\r\n";
	size_t fill = HTTP_HEAD_MAX - (sizeof start - 1) - (sizeof end - 1);

	/* exactly the limit passes, one byte more fails */
	memcpy(raw, start, sizeof start - 1);
	memset(raw + sizeof start - 1, 'x', fill);
	memcpy(raw + sizeof start - 1 + fill, end, sizeof end);
	parse(raw, HTTP_HEAD_MAX, 0, 100);
	check(got.rc == 1 && got.r.status == 200);
	memmove(raw + sizeof start, raw + sizeof start - 1, HTTP_HEAD_MAX - (sizeof start - 1) + 1);
	parse(raw, HTTP_HEAD_MAX + 1, -1, 100);
	check(got.rc == -1 && why_has("longer than"));

	/* a head that never ends is stopped at the limit, whatever arrives */
	memset(raw, 'a', sizeof raw);
	memcpy(raw, "HTTP/1.1 200 OK\r\n", 17);
	parse(raw, sizeof raw, 1, 100);
	check(got.rc == -1 && why_has("longer than"));
}

static void headers_n(int n)
{
	static char raw[8192];
	size_t len = (size_t)sprintf(raw, "HTTP/1.1 200 OK\r\n");

	for (int i = 0; i < n - 1; i++)
		len += (size_t)sprintf(raw + len, "X-H%d: %d\r\n", i, i);
	len += (size_t)sprintf(raw + len, "Content-Length: 2\r\n\r\nok");
	parse(raw, len, 0, 100);
}

static void t_too_many_headers(void)
{
	headers_n(HTTP_MAX_HEADERS);
	check(got.rc == 1 && body_is("ok"));
	headers_n(HTTP_MAX_HEADERS + 1);
	check(got.rc == -1 && why_has("too many"));
}

static long retry_after(const char *v)
{
	char raw[256];
	int n = snprintf(raw, sizeof raw, "HTTP/1.1 429 Too Many Requests\r\nRetry-After:%s\r\nContent-Length: 0\r\n\r\n", v);

	parse(raw, (size_t)n, 0, 100);
	check(got.rc == 1 && got.r.status == 429);
	return got.r.retry_after;
}

static void t_retry_after(void)
{
	static const char none[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";

	check(retry_after(" 7") == 7);
	check(retry_after("120") == 120);
	check(retry_after("\t 0 \t") == 0);
	check(retry_after(" Wed, 21 Oct 2026 07:28:00 GMT") == -1);
	check(retry_after(" -5") == -1);
	check(retry_after(" 5s") == -1);
	check(retry_after(" 1.5") == -1);
	check(retry_after(" ") == -1);
	check(retry_after(" 99999999999999999999999") == 86400);
	check(retry_after(" 172800") == 86400);
	parse(RAW(none), 0, 100);
	check(got.rc == 1 && got.r.status == 503 && got.r.retry_after == -1);
}

/* The Date header, the API server's clock: read when it is an IMF-fixdate, else -1. */
static void t_date(void)
{
	static const char dated[] = "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 0\r\n\r\n";
	static const char odd[] = "HTTP/1.1 200 OK\r\ndate:Sunday, 06-Nov-94 08:49:37 GMT\r\nContent-Length: 0\r\n\r\n";
	static const char none[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

	parse(RAW(dated), 0, 100);
	check(got.rc == 1 && got.r.date == 784111777);
	parse(RAW(odd), 0, 100);
	check(got.rc == 1 && got.r.date == -1);
	parse(RAW(none), 0, 100);
	check(got.rc == 1 && got.r.date == -1);
}

static void t_interim(void)
{
	static const char raw[] =
	    "HTTP/1.1 100 Continue\r\n\r\n"
	    "HTTP/1.1 102 Processing\r\nX-A: b\r\n\r\n"
	    "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
	static const char up[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n";
	int rcs[4] = { 0 };

	parse(RAW(raw), 0, 100);
	check(got.rc == 1 && got.r.status == 201 && body_is("ok"));
	parse_all_ways(RAW(raw), rcs, "ok");
	check(rcs[0] == 1 && rcs[1] == 1 && rcs[2] == 1 && rcs[3] == 50);
	parse(RAW(up), 0, 100);
	check(got.rc == -1 && why_has("101"));
}

static void t_connection(void)
{
	static const char close1[] = "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n";
	static const char close2[] = "HTTP/1.1 200 OK\r\nconnection: upgrade, close\r\nContent-Length: 0\r\n\r\n";
	static const char keep[] = "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n";
	static const char h10[] = "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
	static const char h10k[] = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
	static const char closer[] = "HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 0\r\n\r\n";

	parse(RAW(close1), 0, 100);
	check(got.rc == 1 && got.r.keep_alive == 0);
	parse(RAW(close2), 0, 100);
	check(got.rc == 1 && got.r.keep_alive == 0);
	parse(RAW(keep), 0, 100);
	check(got.rc == 1 && got.r.keep_alive == 1);
	parse(RAW(h10), 0, 100);
	check(got.rc == 1 && got.r.keep_alive == 0);
	parse(RAW(h10k), 0, 100);
	check(got.rc == 1 && got.r.keep_alive == 1);
	parse(RAW(closer), 0, 100);
	check(got.rc == 1 && got.r.keep_alive == 1);
}

static void t_no_body(void)
{
	static const char r204[] = "HTTP/1.1 204 No Content\r\n\r\n";
	static const char r304[] = "HTTP/1.1 304 Not Modified\r\nContent-Length: 40\r\n\r\n";
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n";

	parse(RAW(r204), 0, 100);
	check(got.rc == 1 && got.r.status == 204 && got.bodylen == 0 && got.r.keep_alive == 1);
	parse(RAW(r304), 0, 100);
	check(got.rc == 1 && got.r.status == 304 && got.bodylen == 0);
	parse(RAW(head), 0, 100);
	check(got.rc == 0 && got.eof == -1);
}

static void bad_head(const char *raw, size_t len, const char *why)
{
	for (int step = -1; step <= 1; step++) {
		parse(raw, len, step, 100);
		if (!check(got.rc == -1 && why_has(why)))
			fprintf(stderr, "  head %.40s: rc %d why %s\n", raw, got.rc, got.why ? got.why : "-");
	}
}

#define BAD_HEAD(s, why) bad_head(s, sizeof s - 1, why)

static void t_bad_head(void)
{
	BAD_HEAD("HTTP/2 200 OK\r\n\r\n", "status line");
	BAD_HEAD("HTTP/1.2 200 OK\r\n\r\n", "status line");
	BAD_HEAD("HTTP/1.1 20 OK\r\n\r\n", "status line");
	BAD_HEAD("HTTP/1.1 600 Odd\r\n\r\n", "status line");
	BAD_HEAD("HTTP/1.1 2000 OK\r\n\r\n", "status line");
	BAD_HEAD("ICY 200 OK\r\n\r\n", "status line");
	BAD_HEAD("\r\nHTTP/1.1 200 OK\r\n\r\n", "status line");
	BAD_HEAD("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n", "folded");
	BAD_HEAD("HTTP/1.1 200 OK\r\nX-A: a\0b\r\n\r\n", "control");
	BAD_HEAD("HTTP/1.1 200 OK\r\nX-A: a\x01\r\n\r\n", "control");
	BAD_HEAD("HTTP/1.1 200 OK\nX-A: 1\r\n\r\n", "LF");
	BAD_HEAD("HTTP/1.1 200 OK\r\nX-A: 1\rX-B: 2\r\n\r\n", "CR");
	BAD_HEAD("HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello", "header name");
	BAD_HEAD("HTTP/1.1 200 OK\r\nX(A): 1\r\n\r\n", "header name");
	BAD_HEAD("HTTP/1.1 200 OK\r\n: 1\r\n\r\n", "empty header name");
	BAD_HEAD("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "without a colon");
	BAD_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "Content-Length");
	BAD_HEAD("HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", "Content-Length");
	BAD_HEAD("HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", "Content-Length");
	BAD_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello", "Content-Length");
	BAD_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length");
	BAD_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", "conflicting");
	BAD_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "both");
	BAD_HEAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "both");
	BAD_HEAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "Transfer-Encoding");
	BAD_HEAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding");
}

static void t_good_head_variants(void)
{
	static const char same_cl[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 005\r\n\r\nhello";
	static const char no_reason[] = "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n";
	static const char te_case[] = "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
	static const char long_ct[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json;"
	    "charset=utf-8;xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\nContent-Length: 0\r\n\r\n";
	static char long_hdr[2000];

	parse(RAW(same_cl), -1, 100);
	check(got.rc == 1 && body_is("hello"));
	parse(RAW(no_reason), 0, 100);
	check(got.rc == 1 && got.r.status == 404);
	parse(RAW(te_case), 1, 100);
	check(got.rc == 1 && body_is("ok"));
	parse(RAW(long_ct), 0, 100);
	check(got.rc == 1 && strlen(got.r.content_type) == sizeof got.r.content_type - 1);
	check(strncmp(got.r.content_type, "application/json;charset=utf-8;", 31) == 0);
	/* a long header we do not read (a Warning, a cookie) is fine */
	size_t n = (size_t)sprintf(long_hdr, "HTTP/1.1 200 OK\r\nWarning: 299 - \"");
	memset(long_hdr + n, 'w', 1500);
	n += 1500;
	n += (size_t)sprintf(long_hdr + n, "\"\r\nContent-Length: 2\r\n\r\nok");
	parse(long_hdr, n, -1, 100);
	check(got.rc == 1 && body_is("ok"));
}

/* ---- certificates made fresh by http/mkcerts.sh ---- */

static char dir[64];

static int certs(void)
{
	static int made;
	char cmd[256];

	if (made)
		return made > 0;
	strcpy(dir, "/tmp/test_http.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return made = -1, 0;
	snprintf(cmd, sizeof cmd, "sh http/mkcerts.sh %s", dir);
	made = system(cmd) == 0 ? 1 : -1;
	if (made < 0)
		fprintf(stderr, "http/mkcerts.sh failed; see %s/openssl.log\n", dir);
	return made > 0;
}

static size_t slurp(const char *name, char *buf, size_t cap)
{
	char path[128];
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (f == NULL)
		return 0;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	return n;
}

static const unsigned char v4[4] = { 127, 0, 0, 1 };
static const unsigned char v4b[4] = { 127, 0, 0, 2 };
static const unsigned char v6[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };

/* The IP rule alone, as 1 listed, 0 not listed (or no SAN), -1 malformed. */
static int has_ip(const unsigned char *der, size_t len, const unsigned char *ip, size_t iplen)
{
	enum tls_leaf v = tls_leaf_check(der, len, ip, iplen);

	return v == TLS_LEAF_OK ? 1 : v == TLS_LEAF_NO_IP || v == TLS_LEAF_NO_SAN ? 0 : -1;
}

static void t_san_reader(void)
{
	static unsigned char der[4096];
	size_t n;

	check(certs());
	check((n = slurp("ip.der", (char *)der, sizeof der)) > 100);
	check(has_ip(der, n, v4, 4) == 1);
	check(has_ip(der, n, v6, 16) == 1);
	check(has_ip(der, n, v4b, 4) == 0);
	check(has_ip(der, n, v4, 3) == -1);
	check((n = slurp("ip2.der", (char *)der, sizeof der)) > 100);
	check(has_ip(der, n, v4b, 4) == 1);
	/* "DNS:127.0.0.1" is text, not an iPAddress */
	check(has_ip(der, n, v4, 4) == 0);
	check((n = slurp("dns.der", (char *)der, sizeof der)) > 100);
	check(has_ip(der, n, v4, 4) == 0);
	check((n = slurp("rsaip.der", (char *)der, sizeof der)) > 100);
	check(has_ip(der, n, v4, 4) == 1);
}

/* Cut anywhere, a certificate is malformed; flipped anywhere, the reader stays in bounds. */
static void t_san_reader_broken(void)
{
	static unsigned char der[4096], bad[4096];
	size_t n;
	int cut_ok = 0, flips = 0;

	check(certs());
	check((n = slurp("ip.der", (char *)der, sizeof der)) > 100);
	for (size_t k = 0; k < n; k++)
		cut_ok += has_ip(der, k, v4, 4) == -1;
	check(cut_ok == (int)n);
	for (size_t k = 0; k < n; k++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(bad, der, n);
			bad[k] ^= (unsigned char)(1 << bit);
			int r = has_ip(bad, n, v4b, 4);
			flips += r == 1;     /* 127.0.0.1 flipped into 127.0.0.2 is the only way to 1 */
		}
	}
	check(flips <= 1);
}

/* Hand-built DER: the reader's own rules. */
static void t_san_reader_handmade(void)
{
	/* Certificate { tbs { [0]{2}, serial, alg, issuer, validity, subject, spki, [3]{ exts } }, alg, sig } */
	static const unsigned char san[] = { 0x30, 0x0f, 0x06, 0x03, 0x55, 0x1d, 0x11, 0x04, 0x08,
		0x30, 0x06, 0x87, 0x04, 127, 0, 0, 1 };
	static const unsigned char other_ext[] = { 0x30, 0x0c, 0x06, 0x03, 0x55, 0x1d, 0x13, 0x01, 0x01, 0xff,
		0x04, 0x02, 0x30, 0x00 };
	unsigned char b[256];
	size_t n;

#define BUILD(exts, elen) do { \
	size_t e = (elen); \
	n = 0; \
	b[n++] = 0x30; b[n++] = (unsigned char)(2 + 18 + 4 + e); \
	b[n++] = 0x30; b[n++] = (unsigned char)(18 + 4 + e); \
	memcpy(b + n, "\xa0\x03\x02\x01\x02\x02\x01\x01\x30\x00\x30\x00\x30\x00\x30\x00\x30\x00", 18); n += 18; \
	b[n++] = 0xa3; b[n++] = (unsigned char)(2 + e); b[n++] = 0x30; b[n++] = (unsigned char)e; \
	memcpy(b + n, exts, e); n += e; \
} while (0)
	unsigned char two[64];

	BUILD(san, sizeof san);
	check(has_ip(b, n, v4, 4) == 1);
	memcpy(two, other_ext, sizeof other_ext);
	memcpy(two + sizeof other_ext, san, sizeof san);
	BUILD(two, sizeof other_ext + sizeof san);
	check(has_ip(b, n, v4, 4) == 1);
	BUILD(other_ext, sizeof other_ext);
	check(has_ip(b, n, v4, 4) == 0);
	/* a dNSName [2] holding the same four bytes is not an iPAddress */
	memcpy(two, san, sizeof san);
	two[11] = 0x82;
	BUILD(two, sizeof san);
	check(has_ip(b, n, v4, 4) == 0);
	/* the SAN under another extension's OID is not the SAN */
	memcpy(two, san, sizeof san);
	two[6] = 0x12;
	BUILD(two, sizeof san);
	check(has_ip(b, n, v4, 4) == 0);
	/* two subjectAltName extensions: refused, not merged */
	memcpy(two, san, sizeof san);
	memcpy(two + sizeof san, san, sizeof san);
	BUILD(two, 2 * sizeof san);
	check(has_ip(b, n, v4, 4) == -1);
	/* an iPAddress entry whose length runs past its GeneralNames */
	memcpy(two, san, sizeof san);
	two[12] = 0x05;
	BUILD(two, sizeof san);
	check(has_ip(b, n, v4, 4) == -1);
	/* indefinite length (BER) is not DER */
	BUILD(san, sizeof san);
	b[1] = 0x80;
	check(has_ip(b, n, v4, 4) == -1);
	/* a length that does not fit */
	static const unsigned char huge[] = { 0x30, 0x84, 0xff, 0xff, 0xff, 0xf0, 0x30, 0x00 };
	check(has_ip(huge, sizeof huge, v4, 4) == -1);
	check(has_ip(b, 0, v4, 4) == -1);
#undef BUILD
}

/* The leaf rules on the certificates themselves: client-go's, not BearSSL's alone. */
static void t_leaf_rules(void)
{
	static unsigned char der[4096];
	size_t n;

	check(certs());
	/* no subjectAltName: refused whatever the CN says (BearSSL alone would match the CN) */
	check((n = slurp("nosan.der", (char *)der, sizeof der)) > 100);
	check(tls_leaf_check(der, n, NULL, 0) == TLS_LEAF_NO_SAN);
	check(tls_leaf_check(der, n, v4, 4) == TLS_LEAF_NO_SAN);
	/* an EKU without serverAuth: refused as a server, names notwithstanding */
	check((n = slurp("clientonly.der", (char *)der, sizeof der)) > 100);
	check(tls_leaf_check(der, n, NULL, 0) == TLS_LEAF_NOT_SERVER);
	check(tls_leaf_check(der, n, v4, 4) == TLS_LEAF_NOT_SERVER);
	check((n = slurp("bothuse.der", (char *)der, sizeof der)) > 100);
	check(tls_leaf_check(der, n, v4, 4) == TLS_LEAF_OK);
	check((n = slurp("anyuse.der", (char *)der, sizeof der)) > 100);
	check(tls_leaf_check(der, n, v4, 4) == TLS_LEAF_OK);
	/* no EKU at all: any use (RFC 5280 4.2.1.12, and Go) */
	check((n = slurp("noeku.der", (char *)der, sizeof der)) > 100);
	check(tls_leaf_check(der, n, v4, 4) == TLS_LEAF_OK);
	check(tls_leaf_check(der, n, v4b, 4) == TLS_LEAF_NO_IP);
	check((n = slurp("ip.der", (char *)der, sizeof der)) > 100);
	check(tls_leaf_check(der, n, NULL, 0) == TLS_LEAF_OK);
	check(tls_leaf_check(der, n, v4, 3) == TLS_LEAF_MALFORMED);
}

/* Hand-built: an EKU that is not a SEQUENCE of OIDs, and two EKU extensions, are malformed. */
static void t_leaf_rules_handmade(void)
{
	static const unsigned char san[] = { 0x30, 0x0f, 0x06, 0x03, 0x55, 0x1d, 0x11, 0x04, 0x08,
		0x30, 0x06, 0x87, 0x04, 127, 0, 0, 1 };
	/* extendedKeyUsage: SEQUENCE { id-kp-serverAuth } */
	static const unsigned char eku[] = { 0x30, 0x13, 0x06, 0x03, 0x55, 0x1d, 0x25, 0x04, 0x0c,
		0x30, 0x0a, 0x06, 0x08, 0x2b, 6, 1, 5, 5, 7, 3, 1 };
	unsigned char b[256], ext[128];
	size_t n, e;

#define BUILD(exts, elen) do { \
	e = (elen); \
	n = 0; \
	b[n++] = 0x30; b[n++] = (unsigned char)(2 + 18 + 4 + e); \
	b[n++] = 0x30; b[n++] = (unsigned char)(18 + 4 + e); \
	memcpy(b + n, "\xa0\x03\x02\x01\x02\x02\x01\x01\x30\x00\x30\x00\x30\x00\x30\x00\x30\x00", 18); n += 18; \
	b[n++] = 0xa3; b[n++] = (unsigned char)(2 + e); b[n++] = 0x30; b[n++] = (unsigned char)e; \
	memcpy(b + n, exts, e); n += e; \
} while (0)
	memcpy(ext, san, sizeof san);
	memcpy(ext + sizeof san, eku, sizeof eku);
	BUILD(ext, sizeof san + sizeof eku);
	check(tls_leaf_check(b, n, v4, 4) == TLS_LEAF_OK);
	/* clientAuth (…3.2) instead of serverAuth */
	ext[sizeof san + sizeof eku - 1] = 2;
	BUILD(ext, sizeof san + sizeof eku);
	check(tls_leaf_check(b, n, v4, 4) == TLS_LEAF_NOT_SERVER);
	/* an EKU entry that is not an OID */
	memcpy(ext + sizeof san, eku, sizeof eku);
	ext[sizeof san + 11] = 0x04;
	BUILD(ext, sizeof san + sizeof eku);
	check(tls_leaf_check(b, n, v4, 4) == TLS_LEAF_MALFORMED);
	/* two EKU extensions: refused, not merged */
	memcpy(ext + sizeof san, eku, sizeof eku);
	memcpy(ext + sizeof san + sizeof eku, eku, sizeof eku);
	BUILD(ext, sizeof san + 2 * sizeof eku);
	check(tls_leaf_check(b, n, v4, 4) == TLS_LEAF_MALFORMED);
	/* the EKU alone: no SAN */
	BUILD(eku, sizeof eku);
	check(tls_leaf_check(b, n, NULL, 0) == TLS_LEAF_NO_SAN);
#undef BUILD
}

/* ---- PEM loading ---- */

static char pa[16384], pb[16384], pc[16384];

static int load(struct tls_creds *t, const char *ca, const char *cert, const char *key, char *err)
{
	size_t na = slurp(ca, pa, sizeof pa), nb = cert ? slurp(cert, pb, sizeof pb) : 0;
	size_t nc = key ? slurp(key, pc, sizeof pc) : 0;

	err[0] = 0;
	return tls_load(t, pa, na, cert ? pb : NULL, nb, key ? pc : NULL, nc, err, 256);
}

static void t_tls_load(void)
{
	struct tls_creds t;
	char err[256];

	check(certs());
	check(load(&t, "bundle.crt", NULL, NULL, err) == 0);
	check(t.ntas == 2 && t.key_type == 0 && t.nchain == 0);
	check(t.tas[0].pkey.key_type == BR_KEYTYPE_EC && t.tas[1].pkey.key_type == BR_KEYTYPE_RSA);
	check(t.tas[0].flags & BR_X509_TA_CA);
	tls_free(&t);
	check(t.mem == NULL);

	/* CRLF line ends and text around the blocks, as some bundles have */
	static char crlf[40000];
	size_t n = slurp("bundle.crt", pa, sizeof pa), m = (size_t)sprintf(crlf, "# CA bundle\r\nsubject=CN = ca\r\n");
	for (size_t i = 0; i < n; i++) {
		if (pa[i] == '\n')
			crlf[m++] = '\r';
		crlf[m++] = pa[i];
	}
	m += (size_t)sprintf(crlf + m, "trailing words");
	check(tls_load(&t, crlf, m, NULL, 0, NULL, 0, err, sizeof err) == 0 && t.ntas == 2);
	tls_free(&t);

	/* k3s: EC key, leaf-plus-CA chain */
	check(load(&t, "ca.crt", "client-chain.crt", "client.key", err) == 0);
	check(t.key_type == BR_KEYTYPE_EC && t.nchain == 2);
	check(t.issuer_key_type == BR_KEYTYPE_EC);
	tls_free(&t);
	check(load(&t, "ca.crt", "client-chain.crt", "client.p8", err) == 0);
	check(t.key_type == BR_KEYTYPE_EC);
	tls_free(&t);
	check(load(&t, "ca.crt", "rsaclient.crt", "rsaclient.key", err) == 0);
	check(t.key_type == BR_KEYTYPE_RSA && t.nchain == 1 && t.issuer_key_type == BR_KEYTYPE_RSA);
	tls_free(&t);
	check(load(&t, "ca.crt", "client.crt", "client.key", err) == 0);
	check(t.nchain == 1);
	check(t.issuer_key_type == BR_KEYTYPE_EC);
	tls_free(&t);
}

static void t_tls_load_refusals(void)
{
	struct tls_creds t;
	char err[256];

	check(certs());
	check(load(&t, "ip.key", NULL, NULL, err) == -1 && strstr(err, "CA file holds no certificate"));
	check(tls_load(&t, "junk", 4, NULL, 0, NULL, 0, err, sizeof err) == -1 && strstr(err, "CA file"));
	check(tls_load(&t, NULL, 0, NULL, 0, NULL, 0, err, sizeof err) == -1);
	check(load(&t, "ca.crt", "client.crt", NULL, err) == -1 && strstr(err, "without its key"));
	check(load(&t, "ca.crt", "client.crt", "rsaclient.key", err) == -1 && strstr(err, "does not match"));
	check(load(&t, "ca.crt", "client-chain.crt", "ip.key", err) == -1 && strstr(err, "does not match"));
	check(load(&t, "ca.crt", "client.crt", "client-enc.p8", err) == -1 && strstr(err, "encrypted"));
	check(load(&t, "ca.crt", "client.crt", "client.crt", err) == -1 && strstr(err, "holds no private key"));
	check(load(&t, "ca.crt", "client.key", "client.key", err) == -1 && strstr(err, "holds no certificate"));
	/* a cut PEM block */
	size_t n = slurp("ca.crt", pa, sizeof pa);
	check(tls_load(&t, pa, n - 30, NULL, 0, NULL, 0, err, sizeof err) == -1 && strstr(err, "CA file"));
	/* a broken certificate inside good PEM */
	static const char bad[] = "-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n";
	check(tls_load(&t, RAW(bad), NULL, 0, NULL, 0, err, sizeof err) == -1 && strstr(err, "malformed"));
	/* no key text ever reaches the message */
	check(load(&t, "ca.crt", "client.crt", "rsaclient.key", err) == -1);
	char *line2 = strchr(pc, '\n');
	check(line2 != NULL && strlen(line2) > 20);
	line2[9] = 0;
	check(strstr(err, line2 + 1) == NULL && strstr(err, "PRIVATE") == NULL);
}

/* ---- TLS on loopback ---- */

static struct http_conn conn;
static struct tls_creds tls;
static pid_t srv_pid;
static char srv_port[8];

/* Starts http/server.py with the named files; 0, or -1 (also when the address is unavailable). */
static int server(const char *cert, const char *key, const char *client_ca, const char *host)
{
	char c[128], k[128], ca[128];
	int fds[2];
	ssize_t n;

	snprintf(c, sizeof c, "%s/%s", dir, cert);
	snprintf(k, sizeof k, "%s/%s", dir, key);
	snprintf(ca, sizeof ca, "%s/%s", dir, client_ca ? client_ca : "-");
	if (pipe(fds) < 0)
		return -1;
	srv_pid = fork();
	if (srv_pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execlp("python3", "python3", "http/server.py", c, k, client_ca ? ca : "-", host, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* the port, then a newline, perhaps in separate writes */
	for (n = 0; n < (ssize_t)sizeof srv_port - 1 && read(fds[0], srv_port + n, 1) == 1 && srv_port[n] != '\n'; n++)
		;
	srv_port[n] = 0;
	close(fds[0]);
	if (n == 0 || strspn(srv_port, "0123456789") != (size_t)n) {
		waitpid(srv_pid, NULL, 0);
		srv_pid = 0;
		return -1;
	}
	return 0;
}

static void server_stop(void)
{
	http_close(&conn);
	if (srv_pid > 0) {
		kill(srv_pid, SIGTERM);
		waitpid(srv_pid, NULL, 0);
	}
	srv_pid = 0;
}

/* The bounds get() passes: NULL, the defaults, unless a test sets its own. */
static const struct http_bounds *bounds;

/* One request; the body in got.body. Returns the status, or -1. */
static int get(const char *path)
{
	struct http_response r;
	long n;

	got.bodylen = 0;
	if (http_request(&conn, "GET", path, NULL, NULL, 0, bounds, &r) < 0)
		return -1;
	while ((n = http_read(&conn, got.body + got.bodylen, 1000)) > 0)
		got.bodylen += (size_t)n;
	if (n < 0)
		return -1;
	got.r = r;
	return r.status;
}

static int err_has(const char *s)
{
	if (strstr(conn.err, s) != NULL)
		return 1;
	fprintf(stderr, "  error was: %s\n  wanted: %s\n", conn.err, s);
	return 0;
}

static int setup(const char *ca, const char *cert, const char *key)
{
	char err[256];

	http_close(&conn);           /* conn must not outlive the tls it was given */
	tls_free(&tls);
	if (!certs() || load(&tls, ca, cert, key, err) < 0) {
		fprintf(stderr, "  %s\n", err);
		return -1;
	}
	return 0;
}

static void t_tls_ip(void)
{
	char want[64];

	if (!check(setup("ca.crt", NULL, NULL) == 0 && server("ip.crt", "ip.key", NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, NULL) == 0);
	check(get("/hello") == 200 && body_is("hello"));
	int fd = conn.fd;
	check(fd >= 0);
	check(get("/chunked") == 200 && body_is("hello, world") && got.r.chunked);
	check(conn.fd == fd);
	check(get("/big") == 200 && got.bodylen > 100000);
	size_t off = 0, ok = 1;
	for (int i = 0; i < 300; i++)
		for (size_t j = 0; j < 1 + (size_t)i * 7 % 1500; j++)
			ok &= (unsigned char)got.body[off++] == (i + j) % 251;
	check(ok && off == got.bodylen);
	check(get("/429") == 429 && got.r.retry_after == 7 && body_is("slow down"));
	check(get("/nothing") == 404);
	check(get("/stats") == 200 && body_is("1"));

	/* what goes on the wire */
	struct http_response r;
	check(http_request(&conn, "POST", "/echo", "Content-Type: application/json-patch+json\r\nX-A: b\r\n",
	    "[1,2]", 5, NULL, &r) == 0);
	got.bodylen = 0;
	long n;
	while ((n = http_read(&conn, got.body + got.bodylen, 7)) > 0)
		got.bodylen += (size_t)n;
	got.body[got.bodylen] = 0;
	check(n == 0);
	snprintf(want, sizeof want, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n", srv_port);
	check(strncmp(got.body, want, strlen(want)) == 0);
	check(strstr(got.body, "\r\nUser-Agent: noderecover\r\n") != NULL);
	check(strstr(got.body, "Accept") == NULL);     /* media types are the caller's */
	check(strstr(got.body, "\r\nContent-Type: application/json-patch+json\r\nX-A: b\r\n") != NULL);
	check(strstr(got.body, "\r\nContent-Length: 5\r\n\r\n[1,2]") != NULL);

	/* Connection: close is honoured, and the next request connects again */
	check(get("/close") == 200 && body_is("bye") && conn.fd == -1);
	check(get("/hello") == 200);
	check(get("/stats") == 200 && body_is("2"));

	/* a request that would split the wire is refused before anything is sent */
	check(http_request(&conn, "GET", "/a\r\nX: y", NULL, NULL, 0, NULL, &r) == -1 && err_has("path") && conn.permanent);
	check(http_request(&conn, "GET", "/a", "X: y\r\n\r\nGET / HTTP/1.1\r\n", NULL, 0, NULL, &r) == -1);
	check(http_request(&conn, "GET", "/a", "X: y", NULL, 0, NULL, &r) == -1 && err_has("CRLF"));
	check(http_request(&conn, "G T", "/a", NULL, NULL, 0, NULL, &r) == -1 && err_has("method"));
	check(get("/stats") == 200 && body_is("2"));
	server_stop();
}

/* The server closed an idle kept-alive connection: reconnect and send again, but only once. */
static void t_tls_reconnect(void)
{
	if (!check(setup("ca.crt", NULL, NULL) == 0 && server("ip.crt", "ip.key", NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, "") == 0);
	check(get("/arm-drop") == 200);
	check(get("/hello") == 200 && body_is("hello"));
	check(get("/stats") == 200 && body_is("2"));
	check(get("/arm-drop2") == 200);
	check(get("/hello") == -1);
	check(err_has("reading response from 127.0.0.1:") && err_has(": connection closed by the server"));
	check(!conn.permanent);
	check(get("/hello") == 200);
	check(get("/stats") == 200 && body_is("4"));
	server_stop();
}

static void t_tls_bodies(void)
{
	if (!check(setup("ca.crt", NULL, NULL) == 0 && server("ip.crt", "ip.key", NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, NULL) == 0);
	check(get("/eof") == 200 && body_is("until the end") && conn.fd == -1);
	check(get("/eof-dirty") == -1 && err_has("close_notify"));
	check(get("/cut") == -1 && err_has("closed before the end of the body"));
	check(conn.fd == -1);
	/* http_discard leaves the connection reusable after a small body, closes it after a big one */
	struct http_response r;
	check(http_request(&conn, "GET", "/chunked", NULL, NULL, 0, NULL, &r) == 0);
	int fd = conn.fd;
	check(fd >= 0 && conn.in_body == 1);
	http_discard(&conn);
	check(conn.fd == fd && conn.in_body == 0);
	check(http_request(&conn, "GET", "/big", NULL, NULL, 0, NULL, &r) == 0 && conn.fd == fd);
	http_discard(&conn);
	check(conn.fd == -1 && conn.in_body == 0);
	check(get("/hello") == 200);
	fd = conn.fd;
	/* a body left unread is dropped by the next request */
	check(http_request(&conn, "GET", "/chunked", NULL, NULL, 0, NULL, &r) == 0);
	check(get("/hello") == 200 && body_is("hello") && conn.fd == fd);
	http_deadline(&conn, HTTP_HEAD, 300);
	check(get("/slow") == -1 && err_has("not done after 300ms"));
	check(strstr(conn.err, "response head from 127.0.0.1:") == conn.err && conn.expired);
	http_deadline(&conn, HTTP_HEAD, HTTP_HEAD_MS);
	server_stop();
}

static void handshake_fails(const char *cert, const char *key, const char *verify, const char *why)
{
	if (!check(setup("ca.crt", NULL, NULL) == 0 && server(cert, key, NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, verify) == 0);
	check(get("/hello") == -1);
	check(err_has("TLS handshake with 127.0.0.1:") && err_has(why));
	check(conn.fd == -1 && conn.permanent);
	server_stop();
}

static void t_tls_refusals(void)
{
	handshake_fails("ip2.crt", "ip2.key", NULL, ": certificate for 127.0.0.1 does not list that IP address");
	handshake_fails("dns.crt", "dns.key", NULL, "does not list that IP address");
	handshake_fails("foreign.crt", "foreign.key", NULL, ": certificate not signed by the configured CA");
	handshake_fails("old.crt", "old.key", NULL, "expired");
	handshake_fails("dns.crt", "dns.key", "other.example", "certificate is not for other.example");
	handshake_fails("ip.crt", "ip.key", "127.0.0.2", "certificate for 127.0.0.2 does not list that IP address");
	/* the CA that signed the RSA server is not the configured one */
	handshake_fails("rsaip.crt", "rsaip.key", NULL, "not signed by the configured CA");
}

static void t_tls_names(void)
{
	/* tls-server-name: a DNS name checked by BearSSL while connecting to an IP */
	if (!check(setup("ca.crt", NULL, NULL) == 0 && server("dns.crt", "dns.key", NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, "localhost") == 0);
	check(get("/hello") == 200);
	server_stop();
	if (!check(server("ip.crt", "ip.key", NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, "api.example") == 0);
	check(get("/hello") == 200);
	http_close(&conn);           /* the server answers one connection at a time */
	check(http_init(&conn, &tls, "localhost", srv_port, "127.0.0.1") == 0);
	check(get("/hello") == 200 || err_has("connect to localhost"));
	server_stop();
	/* RSA CA and RSA server key: ECDHE_RSA */
	if (!check(setup("bundle.crt", NULL, NULL) == 0 && server("rsaip.crt", "rsaip.key", NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, NULL) == 0);
	check(get("/hello") == 200);
	server_stop();
}

/* Handshakes against certificates client-go refuses, and ones it accepts. */
static void tls_with(const char *cert, const char *key, const char *verify, const char *why)
{
	if (!check(setup("ca.crt", NULL, NULL) == 0 && server(cert, key, NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, verify) == 0);
	if (why == NULL) {
		if (!check(get("/hello") == 200))
			fprintf(stderr, "  %s as %s: %s\n", cert, verify ? verify : "127.0.0.1", conn.err);
	} else {
		check(get("/hello") == -1 && err_has("TLS handshake with 127.0.0.1:") && err_has(why) && conn.permanent);
	}
	server_stop();
}

static void t_tls_client_go_rules(void)
{
	/* must-fail: BearSSL alone matches the CN "localhost" and takes a client certificate */
	tls_with("nosan.crt", "nosan.key", "localhost", "has no subjectAltName");
	tls_with("nosan.crt", "nosan.key", NULL, "has no subjectAltName");
	tls_with("clientonly.crt", "clientonly.key", NULL, "does not allow a TLS server");
	tls_with("clientonly.crt", "clientonly.key", "localhost", "does not allow a TLS server");
	tls_with("bothuse.crt", "bothuse.key", NULL, NULL);
	tls_with("anyuse.crt", "anyuse.key", "localhost", NULL);
	tls_with("noeku.crt", "noeku.key", NULL, NULL);
	/* a wildcard covers one label, no more, no less */
	tls_with("wild.crt", "wild.key", "a.example.test", NULL);
	tls_with("wild.crt", "wild.key", "a.b.example.test", "certificate is not for a.b.example.test");
	tls_with("wild.crt", "wild.key", "example.test", "certificate is not for example.test");
	/* an intermediate the server sends, under the configured CA */
	tls_with("viainter-chain.crt", "viainter.key", NULL, NULL);
	tls_with("viainter.crt", "viainter.key", NULL, "not signed by the configured CA");
}

static void t_tls_ipv6(void)
{
	if (!check(setup("ca.crt", NULL, NULL) == 0))
		return;
	if (server("ip.crt", "ip.key", NULL, "::1") < 0) {
		skip("no IPv6 loopback here");
		return;
	}
	check(http_init(&conn, &tls, "[::1]", srv_port, NULL) == 0);
	check(strcmp(conn.host, "::1") == 0);
	check(get("/echo") == 200);
	char want[64];
	snprintf(want, sizeof want, "\r\nHost: [::1]:%s\r\n", srv_port);
	got.body[got.bodylen] = 0;
	check(strstr(got.body, want) != NULL);
	server_stop();
	if (server("ip2.crt", "ip2.key", NULL, "::1") == 0) {
		check(http_init(&conn, &tls, "::1", srv_port, NULL) == 0);
		check(get("/hello") == -1 && err_has("certificate for ::1 does not list that IP address"));
		check(err_has("TLS handshake with [::1]:"));
		server_stop();
	}
}

static void t_tls_client_cert(void)
{
	/* k3s: EC key, chain of leaf and CA */
	if (!check(setup("ca.crt", "client-chain.crt", "client.key") == 0 &&
	    server("ip.crt", "ip.key", "clientca.crt", "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, NULL) == 0);
	check(get("/whoami") == 200 && body_is("client"));
	/* without a client certificate the server refuses */
	check(setup("ca.crt", NULL, NULL) == 0);
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, NULL) == 0);
	check(get("/whoami") == -1);
	/* the server's alert or its hang-up may come first */
	check(strstr(conn.err, "TLS handshake with 127.0.0.1:") != NULL);
	check(strstr(conn.err, "closed by the server") != NULL || strstr(conn.err, "alert 40") != NULL);
	server_stop();
	/* an RSA key whose certificate an RSA CA signed */
	if (!check(setup("ca.crt", "rsaclient.crt", "rsaclient.key") == 0 &&
	    server("ip.crt", "ip.key", "rsaca.crt", "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, NULL) == 0);
	check(get("/whoami") == 200 && body_is("rsaclient"));
	server_stop();
}

/* A port that listens; backlog only, so nobody ever answers. */
static int listener(char *port, size_t cap)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	snprintf(port, cap, "%d", ntohs(a.sin_port));
	return fd;
}

static void t_tls_socket_errors(void)
{
	char port[8];
	int fd;

	if (!check(setup("ca.crt", NULL, NULL) == 0))
		return;
	/* nothing listening */
	check((fd = listener(port, sizeof port)) >= 0);
	close(fd);
	check(http_init(&conn, &tls, "127.0.0.1", port, NULL) == 0);
	check(get("/") == -1);
	check(err_has("connect to 127.0.0.1:") && err_has(": Connection refused") && !conn.permanent);
	/* a server that never speaks */
	check((fd = listener(port, sizeof port)) >= 0);
	check(http_init(&conn, &tls, "127.0.0.1", port, NULL) == 0);
	http_deadline(&conn, HTTP_HANDSHAKE, 200);
	check(get("/") == -1);
	check(err_has("handshake with 127.0.0.1:") && err_has("not done after 200ms") && !conn.permanent);
	close(fd);
	/* a server that speaks plain HTTP */
	check((fd = listener(port, sizeof port)) >= 0);
	check(http_init(&conn, &tls, "127.0.0.1", port, NULL) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		int s = accept(fd, NULL, NULL);
		char b[512];
		if (read(s, b, sizeof b) > 0 &&
		    write(s, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", 47) < 0)
			_exit(1);
		close(s);
		_exit(0);
	}
	http_deadline(&conn, HTTP_HANDSHAKE, 2000);
	check(get("/") == -1);
	check(err_has("TLS handshake with 127.0.0.1:") && err_has("answered in plain HTTP") && conn.permanent);
	waitpid(pid, NULL, 0);
	close(fd);
	/* bad names */
	check(http_init(&conn, &tls, "no-such-host.invalid", "443", NULL) == 0);
	check(get("/") == -1 && err_has("connect to no-such-host.invalid:443: cannot resolve"));
	check(http_init(&conn, &tls, "127.0.0.1", "https", NULL) == -1);
	check(http_init(&conn, &tls, "", "443", NULL) == -1);
	tls_free(&tls);
}

static volatile sig_atomic_t stop_flag;

static void on_alarm(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* A body read as it streams (a watch): nothing yet is HTTP_IDLE with the connection kept, and
 * bytes that are only framing (a chunk's line end) wait again instead of failing at the grace. */
static void t_read_wait(void)
{
	struct http_response r;
	char b[64];
	int64_t t0;

	if (!check(setup("ca.crt", NULL, NULL) == 0 && server("ip.crt", "ip.key", NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, NULL) == 0);
	check(http_request(&conn, "GET", "/stream", NULL, NULL, 0, NULL, &r) == 0 && r.status == 200);
	check(http_read_wait(&conn, b, sizeof b, clock_after(5000), 100) == 4 && memcmp(b, "abcd", 4) == 0);
	/* must-fail: a read that waited for data after the framing within its 100 ms grace failed here */
	t0 = clock_ms();
	check(http_read_wait(&conn, b, sizeof b, t0 + 300, 100) == HTTP_IDLE);
	check(clock_ms() - t0 >= 300 && conn.fd >= 0);
	check(http_read_wait(&conn, b, sizeof b, clock_after(5000), 100) == 0);
	server_stop();
}

/* Each phase ends at its own limit, capped by the response's and by bounds.until; a stop ends any. */
static void t_deadlines(void)
{
	struct http_response r;
	long long t0;

	if (!check(setup("ca.crt", NULL, NULL) == 0 && server("ip.crt", "ip.key", NULL, "127.0.0.1") == 0))
		return;
	check(http_init(&conn, &tls, "127.0.0.1", srv_port, NULL) == 0);
	check(get("/hello") == 200);
	/* the head's 30 s is cut by the response's 300 ms, and the message says the time it had */
	bounds = &(struct http_bounds){ .response_ms = 300 };
	t0 = clock_ms();
	check(get("/slow") == -1 && err_has("response head from 127.0.0.1:") && err_has("not done after 300ms"));
	check(clock_ms() - t0 < 1000 && conn.expired && !conn.stopped);
	/* the caller's deadline caps every phase */
	bounds = &(struct http_bounds){ .response_ms = HTTP_RESPONSE_MS, .until = clock_after(200) };
	check(get("/slow") == -1 && err_has("not done when the caller's deadline passed"));
	/* and a sleep that would pass it is not begun */
	t0 = clock_ms();
	check(http_sleep(&conn, 5000, clock_after(200)) == -1 && conn.expired && clock_ms() - t0 < 100);
	check(http_sleep(&conn, 50, 0) == 0);
	/* bounds are the request's own: the next request without any has the defaults again */
	bounds = NULL;
	check(get("/hello") == 200);
	/* a stop flag set by a signal ends a wait within a slice (here: the signal itself wakes poll) */
	conn.stop = &stop_flag;
	signal(SIGALRM, on_alarm);
	stop_flag = 0;
	alarm(1);
	t0 = clock_ms();
	check(get("/slow") == -1 && conn.stopped && err_has(": stopped"));
	check(clock_ms() - t0 < 1000 + HTTP_WAIT_SLICE_MS);
	check(http_sleep(&conn, 10000, 0) == -1 && conn.stopped);
	check(http_request(&conn, "GET", "/hello", NULL, NULL, 0, NULL, &r) == -1 && conn.stopped);
	stop_flag = 0;
	check(get("/hello") == 200);
	conn.stop = NULL;
	server_stop();

	/* connect: a listener whose backlog is full drops the SYN, so connect() waits */
	char port[8];
	int fd = listener(port, sizeof port), fill[4];
	check(fd >= 0 && listen(fd, 0) == 0);
	for (int i = 0; i < 4; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(fill[i], (struct sockaddr *)&a, sizeof a);
	}
	check(http_init(&conn, &tls, "127.0.0.1", port, NULL) == 0);
	http_deadline(&conn, HTTP_CONNECT, 300);
	t0 = clock_ms();
	check(get("/") == -1 && err_has("connect to 127.0.0.1:") && err_has("not done after 300ms"));
	check(clock_ms() - t0 < 1000 && conn.expired && !conn.permanent);
	for (int i = 0; i < 4; i++)
		close(fill[i]);
	close(fd);
}

static const struct test tests[] = {
	{ "content_length", t_content_length },
	{ "content_length_stops", t_content_length_stops },
	{ "chunked", t_chunked },
	{ "chunked_in_place", t_chunked_in_place },
	{ "chunked_big", t_chunked_big },
	{ "bad_chunk_size", t_bad_chunk_size },
	{ "chunk_size_max", t_chunk_size_max },
	{ "chunk_framing_bounded", t_chunk_framing_bounded },
	{ "truncated", t_truncated },
	{ "head_limits", t_head_limits },
	{ "too_many_headers", t_too_many_headers },
	{ "retry_after", t_retry_after },
	{ "date", t_date },
	{ "interim", t_interim },
	{ "connection", t_connection },
	{ "no_body", t_no_body },
	{ "bad_head", t_bad_head },
	{ "good_head_variants", t_good_head_variants },
	{ "san_reader", t_san_reader },
	{ "san_reader_broken", t_san_reader_broken },
	{ "san_reader_handmade", t_san_reader_handmade },
	{ "leaf_rules", t_leaf_rules },
	{ "leaf_rules_handmade", t_leaf_rules_handmade },
	{ "tls_load", t_tls_load },
	{ "tls_load_refusals", t_tls_load_refusals },
	{ "tls_ip", t_tls_ip },
	{ "tls_reconnect", t_tls_reconnect },
	{ "tls_bodies", t_tls_bodies },
	{ "tls_refusals", t_tls_refusals },
	{ "tls_names", t_tls_names },
	{ "tls_client_go_rules", t_tls_client_go_rules },
	{ "tls_ipv6", t_tls_ipv6 },
	{ "tls_client_cert", t_tls_client_cert },
	{ "tls_socket_errors", t_tls_socket_errors },
	{ "read_wait", t_read_wait },
	{ "deadlines", t_deadlines },
	{ 0, 0 }
};

int main(int argc, char **argv)
{
	int rc;

	signal(SIGPIPE, SIG_DFL);    /* http.c must not need SIGPIPE ignored */
	rc = run_tests("http", tests, argc, argv);
	server_stop();
	if (dir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return rc;
}
