/*
 * Fuzz target for http.c's response parser and certificate reader: the input, after three
 * control bytes, is a response (head and body) fed to http_parse_head and http_parse_body in
 * pieces, decoded into a small output buffer, then ended with http_parse_eof; and the same
 * bytes are read as a DER certificate by tls_leaf_check.
 * Byte 0 picks the piece sizes, byte 1 the output buffer's size; byte 2 is unused (HEAD is
 * gone; kept so the corpus keeps its meaning).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_http: %s\n", what);
	abort();
}

static uint32_t next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static size_t piece(unsigned split, uint32_t *s, size_t left)
{
	size_t k = split == 0 ? left : split == 1 ? 1 : 1 + next(s) % (split < 128 ? split : 2048);
	return k > left ? left : k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_parser p;

	if (size < 3)
		return 0;
	unsigned split = data[0], outsel = data[1];
	size_t n = size - 3;
	char *in = malloc(n ? n : 1);
	memcpy(in, data + 3, n);

	http_parser_init(&p);
	uint32_t s = split * 2654435761u | 1;
	size_t i = 0;
	int e = 0;

	while (i < n && e == 0) {
		size_t k = piece(split, &s, n - i), used = 0;
		char *b = malloc(k);
		memcpy(b, in + i, k);
		e = http_parse_head(&p, b, k, &used);
		free(b);
		if (used > k || (e == 0 && used != k))
			bug("http_parse_head used a wrong count");
		i += used;
	}
	if (e == 1) {
		size_t outcap = (outsel & 0x80) ? 4096 : 1 + (outsel & 0x7f);
		char *out = malloc(outcap);
		unsigned long long total = 0;
		int r = p.done;
		if (memchr(p.r.content_type, 0, sizeof p.r.content_type) == NULL)
			bug("content_type not terminated");
		while (i < n && r == 0) {
			size_t k = piece(split, &s, n - i), used = 0, outlen = 0;
			char *b = malloc(k);
			memcpy(b, in + i, k);
			size_t off = 0;
			while (off < k && r == 0) {
				r = http_parse_body(&p, b + off, k - off, &used, out, outcap, &outlen);
				if (used > k - off || outlen > outcap)
					bug("http_parse_body counts out of range");
				if (r == 0 && used == 0 && outlen == 0)
					bug("http_parse_body made no progress");
				off += used;
				total += outlen;
			}
			free(b);
			i += off;
		}
		if (r == 1 && !p.r.chunked && p.r.content_length >= 0 &&
		    p.r.status != 204 && p.r.status != 304 && total != (unsigned long long)p.r.content_length)
			bug("Content-Length body decoded to a different length");
		if (r >= 0)
			http_parse_eof(&p);
		free(out);
	}
	if (e < 0 && p.why == NULL)
		bug("error without a reason");

	static const unsigned char v4[4] = { 127, 0, 0, 1 };
	static const unsigned char v6[16] = { [15] = 1 };
	const unsigned char *der = (const unsigned char *)in;
	enum tls_leaf a = tls_leaf_check(der, n, v4, 4), b6 = tls_leaf_check(der, n, v6, 16),
	    d = tls_leaf_check(der, n, NULL, 0);
	if (a > TLS_LEAF_MALFORMED || b6 > TLS_LEAF_MALFORMED || d > TLS_LEAF_MALFORMED)
		bug("tls_leaf_check out of range");
	/* the address only decides NO_IP: every other verdict is the same without one */
	if (d != TLS_LEAF_OK && a != d)
		bug("tls_leaf_check depends on the address for a verdict about something else");
	if (n >= 4) {
		unsigned char ip[16];
		memcpy(ip, der + n - 4, 4);
		tls_leaf_check(der, n, ip, 4);
	}
	free(in);
	return 0;
}
