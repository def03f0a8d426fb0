/*
 * HTTP/1.1 over TLS 1.2 (BearSSL): PEM loading, connecting with timeouts, certificate checks
 * (BearSSL's for DNS names, ours for the iPAddress of an IP-literal server), requests, and a
 * response parser that works on bytes so it can be tested without a socket.
 * The caller owns every buffer; nothing allocates after http_tls_load. Verification is never
 * skipped, redirects are never followed, and nothing here knows about Kubernetes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "text.h"

/* ---- PEM: CA bundle, client chain and key, decoded once into one block ---- */

enum { PEM_SKIP, PEM_CA, PEM_CERT, PEM_KEY };

struct pem_load {
	struct http_tls *t;
	int kind;
	int full;                    /* the block ran out of room: a bug, the block is sized to fit */
	br_x509_decoder_context xd;
	br_skey_decoder_context kd;
	size_t start;                /* where the current object's bytes begin in t->mem */
};

static unsigned char *mem_put(struct pem_load *l, const void *b, size_t n)
{
	struct http_tls *t = l->t;
	unsigned char *p;

	if (n > t->memlen - t->memused) {
		l->full = 1;
		return NULL;
	}
	p = t->mem + t->memused;
	if (n)
		memcpy(p, b, n);
	t->memused += n;
	return p;
}

static void dn_put(void *ctx, const void *b, size_t n)
{
	mem_put(ctx, b, n);
}

static void pem_dest(void *ctx, const void *b, size_t n)
{
	struct pem_load *l = ctx;

	switch (l->kind) {
	case PEM_CA:
		br_x509_decoder_push(&l->xd, b, n);
		break;
	case PEM_CERT:
		if (l->t->nchain == 0)
			br_x509_decoder_push(&l->xd, b, n);
		mem_put(l, b, n);
		break;
	case PEM_KEY:
		br_skey_decoder_push(&l->kd, b, n);
		break;
	}
}

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	/* a cut message is still a message */
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Copies the CA's public key next to its DN and fills in the trust anchor. */
static int ca_end(struct pem_load *l, int nth, char *err, size_t errlen)
{
	struct http_tls *t = l->t;
	br_x509_trust_anchor *ta = &t->tas[t->ntas];
	const br_x509_pkey *pk;
	int e = br_x509_decoder_last_error(&l->xd);

	if (e == BR_ERR_X509_UNSUPPORTED || e == BR_ERR_X509_WRONG_KEY_TYPE) {
		/* a bundle may carry a CA whose key BearSSL cannot use; the others still serve */
		t->memused = l->start;
		return 0;
	}
	pk = br_x509_decoder_get_pkey(&l->xd);
	if (e != 0 || pk == NULL)
		return errf(err, errlen, "CA certificate %d is malformed (X.509 error %d)", nth, e);
	if (t->ntas == HTTP_MAX_TAS)
		return errf(err, errlen, "CA file holds more than %d certificates", HTTP_MAX_TAS);
	ta->dn.data = t->mem + l->start;
	ta->dn.len = t->memused - l->start;
	ta->flags = BR_X509_TA_CA;
	ta->pkey.key_type = pk->key_type;
	if (pk->key_type == BR_KEYTYPE_RSA) {
		ta->pkey.key.rsa.n = mem_put(l, pk->key.rsa.n, pk->key.rsa.nlen);
		ta->pkey.key.rsa.nlen = pk->key.rsa.nlen;
		ta->pkey.key.rsa.e = mem_put(l, pk->key.rsa.e, pk->key.rsa.elen);
		ta->pkey.key.rsa.elen = pk->key.rsa.elen;
	} else {
		ta->pkey.key.ec.curve = pk->key.ec.curve;
		ta->pkey.key.ec.q = mem_put(l, pk->key.ec.q, pk->key.ec.qlen);
		ta->pkey.key.ec.qlen = pk->key.ec.qlen;
	}
	t->ntas++;
	return 0;
}

static int key_end(struct pem_load *l, char *err, size_t errlen)
{
	struct http_tls *t = l->t;
	const br_rsa_private_key *rk;
	const br_ec_private_key *ek;

	if (br_skey_decoder_last_error(&l->kd) != 0)
		return errf(err, errlen, "client key is not an RSA or EC private key BearSSL can read");
	if (t->key_type != 0)
		return errf(err, errlen, "client key file holds more than one private key");
	if ((rk = br_skey_decoder_get_rsa(&l->kd)) != NULL) {
		t->rsa = *rk;
		t->rsa.p = mem_put(l, rk->p, rk->plen);
		t->rsa.q = mem_put(l, rk->q, rk->qlen);
		t->rsa.dp = mem_put(l, rk->dp, rk->dplen);
		t->rsa.dq = mem_put(l, rk->dq, rk->dqlen);
		t->rsa.iq = mem_put(l, rk->iq, rk->iqlen);
		t->key_type = BR_KEYTYPE_RSA;
	} else if ((ek = br_skey_decoder_get_ec(&l->kd)) != NULL) {
		t->ec = *ek;
		t->ec.x = mem_put(l, ek->x, ek->xlen);
		t->key_type = BR_KEYTYPE_EC;
	} else {
		return errf(err, errlen, "client key is not RSA or EC");
	}
	return 0;
}

/* Decodes every PEM object of one file; what is kept depends on kind and the object's name. */
static int pem_file(struct pem_load *l, int kind, const char *what, const char *s, size_t n,
    char *err, size_t errlen)
{
	br_pem_decoder_context pc;
	size_t nobj = 0, pos = 0;
	int inobj = 0, tail = 0;

	br_pem_decoder_init(&pc);
	/* BearSSL sees a line only at its newline, so the text is followed by one more */
	while (pos < n || !tail) {
		const char *p = pos < n ? s + pos : "\n";
		const char *cr = pos < n ? memchr(p, '\r', n - pos) : NULL;
		size_t len = pos < n ? n - pos : 1, k;

		/* BearSSL 0.6 takes a CR for part of the line; CRLF files are common enough */
		if (cr == p) {
			pos++;
			continue;
		}
		if (cr != NULL)
			len = (size_t)(cr - p);
		k = br_pem_decoder_push(&pc, p, len);

		if (pos < n)
			pos += k;
		else if (k == 1)
			tail = 1;
		switch (br_pem_decoder_event(&pc)) {
		case BR_PEM_BEGIN_OBJ: {
			const char *name = br_pem_decoder_name(&pc);
			inobj = 1;
			l->kind = PEM_SKIP;
			l->start = l->t->memused;
			if (kind != PEM_KEY && strcmp(name, "CERTIFICATE") == 0) {
				l->kind = kind;
				nobj++;
				if (kind == PEM_CA || l->t->nchain == 0)
					br_x509_decoder_init(&l->xd, kind == PEM_CA ? dn_put : NULL, l);
				if (kind == PEM_CERT && l->t->nchain == HTTP_MAX_CHAIN)
					return errf(err, errlen, "client certificate chain is longer than %d certificates", HTTP_MAX_CHAIN);
			} else if (kind == PEM_KEY && (strcmp(name, "PRIVATE KEY") == 0 ||
			    strcmp(name, "EC PRIVATE KEY") == 0 || strcmp(name, "RSA PRIVATE KEY") == 0)) {
				l->kind = PEM_KEY;
				nobj++;
				br_skey_decoder_init(&l->kd);
			} else if (kind == PEM_KEY && strstr(name, "ENCRYPTED") != NULL) {
				return errf(err, errlen, "client key is encrypted; an unencrypted key is needed");
			}
			br_pem_decoder_setdest(&pc, pem_dest, l);
			break;
		}
		case BR_PEM_END_OBJ:
			inobj = 0;
			if (l->full)
				return errf(err, errlen, "%s: out of room while decoding", what);
			if (l->kind == PEM_CA) {
				if (ca_end(l, (int)nobj, err, errlen) < 0)
					return -1;
			} else if (l->kind == PEM_CERT) {
				struct http_tls *t = l->t;
				if (t->nchain == 0) {
					if (br_x509_decoder_last_error(&l->xd) != 0)
						return errf(err, errlen, "client certificate is malformed");
					t->issuer_key_type = br_x509_decoder_get_signer_key_type(&l->xd);
				}
				t->chain[t->nchain].data = t->mem + l->start;
				t->chain[t->nchain].data_len = t->memused - l->start;
				t->nchain++;
			} else if (l->kind == PEM_KEY) {
				if (key_end(l, err, errlen) < 0)
					return -1;
			}
			break;
		case BR_PEM_ERROR:
			return errf(err, errlen, "%s is not valid PEM", what);
		}
		if (l->full)
			return errf(err, errlen, "%s: out of room while decoding", what);
	}
	if (inobj)
		return errf(err, errlen, "%s ends inside a PEM block", what);
	if (nobj == 0)
		return errf(err, errlen, "%s holds no %s", what, kind == PEM_KEY ? "private key" : "certificate");
	return 0;
}

/* The client key must be the one the client certificate was issued for. */
static int key_matches(const struct http_tls *t, char *err, size_t errlen)
{
	br_x509_decoder_context xd;
	const br_x509_pkey *pk;

	br_x509_decoder_init(&xd, NULL, NULL);
	br_x509_decoder_push(&xd, t->chain[0].data, t->chain[0].data_len);
	pk = br_x509_decoder_get_pkey(&xd);
	if (pk == NULL)
		return errf(err, errlen, "client certificate is malformed");
	if (pk->key_type != t->key_type)
		return errf(err, errlen, "client key does not match the client certificate (key types differ)");
	if (t->key_type == BR_KEYTYPE_EC) {
		unsigned char q[BR_EC_KBUF_PUB_MAX_SIZE];
		br_ec_public_key pub;
		size_t qlen = br_ec_compute_pub(br_ec_get_default(), &pub, q, &t->ec);
		if (qlen == 0)
			return errf(err, errlen, "client key uses an EC curve BearSSL does not support");
		if (pk->key.ec.curve != t->ec.curve || pk->key.ec.qlen != qlen || memcmp(pk->key.ec.q, q, qlen) != 0)
			return errf(err, errlen, "client key does not match the client certificate");
	} else {
		unsigned char n[1024];
		br_rsa_compute_modulus modulus = br_rsa_compute_modulus_get_default();
		const unsigned char *cn = pk->key.rsa.n;
		size_t cnlen = pk->key.rsa.nlen, nlen;

		if (modulus(NULL, &t->rsa) > sizeof n)
			return errf(err, errlen, "client RSA key is larger than 8192 bits");
		nlen = modulus(n, &t->rsa);
		while (cnlen > 0 && *cn == 0) {
			cn++;
			cnlen--;
		}
		if (nlen == 0 || nlen != cnlen || memcmp(n, cn, nlen) != 0)
			return errf(err, errlen, "client key does not match the client certificate");
	}
	return 0;
}

int http_tls_load(struct http_tls *t, const char *ca, size_t calen, const char *cert, size_t certlen,
    const char *key, size_t keylen, char *err, size_t errlen)
{
	static struct pem_load l;    /* start-up only; BearSSL's decoders are a few KiB */

	memset(t, 0, sizeof *t);
	if (ca == NULL || calen == 0)
		return errf(err, errlen, "no CA certificate given");
	if ((cert == NULL) != (key == NULL))
		return errf(err, errlen, cert ? "client certificate given without its key" : "client key given without its certificate");
	if (calen > SIZE_MAX / 4 || certlen > SIZE_MAX / 4 || keylen > SIZE_MAX / 4)
		return errf(err, errlen, "certificate files are too large");
	/* decoded DER is shorter than its base64, and a DN plus key is shorter than the DER */
	t->memlen = calen + certlen + keylen;
	t->mem = malloc(t->memlen);
	if (t->mem == NULL)
		return errf(err, errlen, "out of memory for certificates");
	memset(&l, 0, sizeof l);
	l.t = t;
	if (pem_file(&l, PEM_CA, "CA file", ca, calen, err, errlen) < 0)
		goto fail;
	if (t->ntas == 0) {
		errf(err, errlen, "CA file holds no RSA or EC certificate");
		goto fail;
	}
	if (cert != NULL) {
		if (pem_file(&l, PEM_CERT, "client certificate file", cert, certlen, err, errlen) < 0 ||
		    pem_file(&l, PEM_KEY, "client key file", key, keylen, err, errlen) < 0 ||
		    key_matches(t, err, errlen) < 0)
			goto fail;
	}
	memset(&l, 0, sizeof l);     /* the decoders held key bytes */
	return 0;
fail:
	memset(&l, 0, sizeof l);
	http_tls_free(t);
	return -1;
}

void http_tls_free(struct http_tls *t)
{
	if (t->mem != NULL) {
		memset(t->mem, 0, t->memlen);
		free(t->mem);
	}
	memset(t, 0, sizeof *t);
}

/* ---- The response parser ---- */

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
}

static int perr(struct http_parser *p, const char *why)
{
	p->state = P_ERROR;
	p->why = why;
	return -1;
}

static int is_tchar(int ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int status_line(struct http_parser *p)
{
	const char *s = p->line;

	if (p->linelen < 12 || strncmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ')
		return perr(p, "bad status line");
	if (s[9] < '1' || s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' ||
	    (p->linelen > 12 && s[12] != ' '))
		return perr(p, "bad status line");
	p->http10 = s[7] == '0';
	p->r.status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	p->r.keep_alive = !p->http10;
	p->r.chunked = 0;
	p->r.content_length = -1;
	p->r.retry_after = -1;
	p->r.content_type[0] = 0;
	p->has_cl = 0;
	p->nlines = 0;
	p->state = P_HEADERS;
	return 0;
}

/* Digits only, no sign, no overflow: 0 and *v, or -1. */
static int parse_digits(const char *s, long long max, long long *v)
{
	long long n = 0;

	if (*s == 0)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || n > (max - (*s - '0')) / 10)
			return -1;
		n = n * 10 + (*s - '0');
	}
	*v = n;
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
	long long n;

	if (++p->nlines > HTTP_MAX_HEADERS)
		return perr(p, "too many header lines");
	if (s[0] == ' ' || s[0] == '\t')
		return perr(p, "folded header line");
	colon = strchr(s, ':');
	if (colon == NULL)
		return perr(p, p->cut ? "header name too long" : "header line without a colon");
	if (colon == s)
		return perr(p, "empty header name");
	for (char *q = s; q < colon; q++)
		if (!is_tchar((unsigned char)*q))
			return perr(p, "bad header name");
	*colon = 0;
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (e = s + p->linelen; e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
		;
	*e = 0;
	if (strcasecmp(s, "content-length") == 0) {
		if (p->cut || parse_digits(v, LLONG_MAX, &n) < 0)
			return perr(p, "bad Content-Length");
		if (p->has_cl && n != p->r.content_length)
			return perr(p, "conflicting Content-Length headers");
		p->has_cl = 1;
		p->r.content_length = n;
	} else if (strcasecmp(s, "transfer-encoding") == 0) {
		/* we decode no other coding, and "chunked" may appear once, last */
		if (p->cut || strcasecmp(v, "chunked") != 0 || p->r.chunked)
			return perr(p, "unsupported Transfer-Encoding");
		p->r.chunked = 1;
	} else if (strcasecmp(s, "connection") == 0) {
		if (has_token(v, "close"))
			p->r.keep_alive = 0;
		else if (p->http10 && has_token(v, "keep-alive"))
			p->r.keep_alive = 1;
	} else if (strcasecmp(s, "retry-after") == 0) {
		/* delta-seconds; an HTTP-date counts as absent; a huge delay is capped at a day */
		if (!p->cut && parse_digits(v, LLONG_MAX, &n) == 0)
			p->r.retry_after = n > 86400 ? 86400 : (long)n;
		else if (v[0] >= '0' && v[0] <= '9' && strspn(v, "0123456789") == strlen(v))
			p->r.retry_after = 86400;
	} else if (strcasecmp(s, "content-type") == 0) {
		snprintf(p->r.content_type, sizeof p->r.content_type, "%s", v);
	}
	return 0;
}

/* The empty line: the head is complete unless it was an interim 1xx. 1 or 0 (1xx), -1. */
static int head_end(struct http_parser *p)
{
	int st = p->r.status;

	if (st >= 100 && st < 200) {
		if (st == 101)
			return perr(p, "unexpected 101 Switching Protocols");
		p->state = P_STATUS;
		return 0;
	}
	if (p->head_only || st == 204 || st == 304) {
		p->state = P_DONE;
		p->done = 1;
	} else if (p->r.chunked) {
		/* RFC 9112 6.1: both framings is a smuggling attempt or a broken server */
		if (p->has_cl)
			return perr(p, "both Content-Length and chunked framing");
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
			e = p->state == P_ERROR ? -1 : perr(p, "head already complete");
			break;
		}
		if (++p->headlen > HTTP_HEAD_MAX) {
			e = perr(p, "response head longer than 16384 bytes");
			break;
		}
		if (p->cr) {
			p->cr = 0;
			if (ch != '\n') {
				e = perr(p, "CR without LF in the response head");
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
			e = perr(p, "LF without CR in the response head");
		} else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
			e = perr(p, "control byte in the response head");
		} else if (p->linelen < sizeof p->line - 1) {
			p->line[p->linelen++] = (char)ch;
		} else {
			p->cut = 1;
		}
	}
	*used = i;
	return e;
}

/* One byte of chunk framing (size line, CRLF after data, trailers). */
static int chunk_byte(struct http_parser *p, int ch)
{
	int h;

	switch (p->state) {
	case C_SIZE:
		if ((h = text_hexval(ch)) >= 0) {
			if (p->left > (ULLONG_MAX >> 4))
				return perr(p, "chunk size overflows");
			p->left = p->left << 4 | (unsigned)h;
			p->digits++;
			return 0;
		}
		if (p->digits == 0)
			return perr(p, "bad chunk size");
		if (ch == ' ' || ch == '\t')
			p->state = C_SIZE_WS;
		else if (ch == ';')
			p->state = C_EXT;
		else if (ch == '\r')
			p->state = C_SIZE_LF;
		else
			return perr(p, "bad chunk size");
		return 0;
	case C_SIZE_WS:
		if (ch == ';')
			p->state = C_EXT;
		else if (ch == '\r')
			p->state = C_SIZE_LF;
		else if (ch != ' ' && ch != '\t')
			return perr(p, "bad chunk size");
		return 0;
	case C_EXT:
		/* extensions are ignored, but not without end */
		if (++p->extra > HTTP_HEAD_MAX)
			return perr(p, "chunk extension too long");
		if (ch == '\r')
			p->state = C_SIZE_LF;
		else if (ch == '\n' || ch == 0)
			return perr(p, "bad chunk extension");
		return 0;
	case C_SIZE_LF:
		if (ch != '\n')
			return perr(p, "chunk size line not ended by CRLF");
		p->extra = 0;
		p->linelen = 0;
		p->state = p->left == 0 ? C_TRAILER : C_DATA;
		return 0;
	case C_DATA_CR:
		if (ch != '\r')
			return perr(p, "chunk data not followed by CRLF");
		p->state = C_DATA_LF;
		return 0;
	case C_DATA_LF:
		if (ch != '\n')
			return perr(p, "chunk data not followed by CRLF");
		p->state = C_SIZE;
		p->left = 0;
		p->digits = 0;
		return 0;
	case C_TRAILER:
		if (++p->extra > HTTP_HEAD_MAX)
			return perr(p, "chunked trailer too long");
		if (ch == '\r')
			p->state = C_TRAILER_LF;
		else if (ch == '\n' || ch == 0)
			return perr(p, "bad chunked trailer");
		else
			p->linelen++;
		return 0;
	case C_TRAILER_LF:
		if (ch != '\n')
			return perr(p, "bad chunked trailer");
		if (p->linelen == 0) {
			p->state = P_DONE;
			p->done = 1;
		}
		p->linelen = 0;
		p->state = p->done ? P_DONE : C_TRAILER;
		return 0;
	}
	return perr(p, "parser used out of order");
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
			e = perr(p, "body parsed before the head");
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
	return perr(p, "connection closed before the end of the response");
}

/* ---- Certificates: the iPAddress check BearSSL does not do ---- */

/* Reads one DER element at *pos of b[0..end): its tag, and its contents at b[*v..*v+*vlen). */
static int der_next(const unsigned char *b, size_t end, size_t *pos, int *tag, size_t *v, size_t *vlen)
{
	size_t p = *pos, n, k;

	if (p >= end || end - p < 2)
		return -1;
	*tag = b[p++];
	if ((*tag & 0x1f) == 0x1f)
		return -1;
	n = b[p++];
	if (n & 0x80) {
		k = n & 0x7f;
		/* k 0 is BER's indefinite length; certificates are DER */
		if (k == 0 || k > 3 || k > end - p)
			return -1;
		for (n = 0; k > 0; k--)
			n = n << 8 | b[p++];
	}
	if (n > end - p)
		return -1;
	*v = p;
	*vlen = n;
	*pos = p + n;
	return 0;
}

/* GeneralNames (RFC 5280 4.2.1.6): 1 when an iPAddress [7] equals ip. */
static int san_has_ip(const unsigned char *b, size_t pos, size_t end, const unsigned char *ip, size_t iplen)
{
	size_t v, vlen, gend;
	int tag, found = 0;

	if (der_next(b, end, &pos, &tag, &v, &vlen) < 0 || tag != 0x30 || pos != end)
		return -1;
	gend = v + vlen;
	for (pos = v; pos < gend;) {
		if (der_next(b, gend, &pos, &tag, &v, &vlen) < 0)
			return -1;
		if (tag == 0x87 && vlen == iplen && memcmp(b + v, ip, iplen) == 0)
			found = 1;
	}
	return found;
}

int http_cert_has_ip(const unsigned char *der, size_t len, const unsigned char *ip, size_t iplen)
{
	size_t pos = 0, v, vlen, end, tend;
	int tag, found = -2;

	if (iplen != 4 && iplen != 16)
		return -1;
	if (der_next(der, len, &pos, &tag, &v, &vlen) < 0 || tag != 0x30)
		return -1;
	pos = v;
	end = v + vlen;
	if (der_next(der, end, &pos, &tag, &v, &vlen) < 0 || tag != 0x30)      /* tbsCertificate */
		return -1;
	tend = v + vlen;
	for (pos = v; pos < tend;) {
		if (der_next(der, tend, &pos, &tag, &v, &vlen) < 0)
			return -1;
		if (tag != 0xa3)                                            /* [3] extensions */
			continue;
		size_t epos = v, eend = v + vlen, xv, xvlen;
		if (der_next(der, eend, &epos, &tag, &xv, &xvlen) < 0 || tag != 0x30 || epos != eend)
			return -1;
		eend = xv + xvlen;
		for (epos = xv; epos < eend;) {
			size_t q, qend, ov, ovlen;
			if (der_next(der, eend, &epos, &tag, &xv, &xvlen) < 0 || tag != 0x30)
				return -1;
			q = xv;
			qend = xv + xvlen;
			if (der_next(der, qend, &q, &tag, &ov, &ovlen) < 0 || tag != 0x06)
				return -1;
			int is_san = ovlen == 3 && memcmp(der + ov, "\x55\x1d\x11", 3) == 0;
			if (der_next(der, qend, &q, &tag, &xv, &xvlen) < 0)
				return -1;
			if (tag == 0x01 && der_next(der, qend, &q, &tag, &xv, &xvlen) < 0)
				return -1;
			if (tag != 0x04 || q != qend)
				return -1;
			if (!is_san)
				continue;
			if (found != -2)
				return -1;                                  /* two SAN extensions */
			found = san_has_ip(der, xv, xv + xvlen, ip, iplen);
			if (found < 0)
				return -1;
		}
	}
	return found == 1;
}

static void xw_start_chain(const br_x509_class **ctx, const char *server_name)
{
	struct http_x509 *x = (struct http_x509 *)(void *)ctx;

	x->ncert = 0;
	x->leaflen = 0;
	x->leaf_cut = 0;
	x->ip_missing = 0;
	/* for an IP literal BearSSL's DNS check is off; end_chain does ours */
	x->minimal.vtable->start_chain(&x->minimal.vtable, x->iplen ? NULL : server_name);
}

static void xw_start_cert(const br_x509_class **ctx, uint32_t length)
{
	struct http_x509 *x = (struct http_x509 *)(void *)ctx;

	x->ncert++;
	x->minimal.vtable->start_cert(&x->minimal.vtable, length);
}

static void xw_append(const br_x509_class **ctx, const unsigned char *buf, size_t len)
{
	struct http_x509 *x = (struct http_x509 *)(void *)ctx;

	if (x->ncert == 1 && x->iplen) {
		if (len > sizeof x->leaf - x->leaflen) {
			x->leaf_cut = 1;
		} else {
			memcpy(x->leaf + x->leaflen, buf, len);
			x->leaflen += len;
		}
	}
	x->minimal.vtable->append(&x->minimal.vtable, buf, len);
}

static void xw_end_cert(const br_x509_class **ctx)
{
	struct http_x509 *x = (struct http_x509 *)(void *)ctx;

	x->minimal.vtable->end_cert(&x->minimal.vtable);
}

static unsigned xw_end_chain(const br_x509_class **ctx)
{
	struct http_x509 *x = (struct http_x509 *)(void *)ctx;
	unsigned e = x->minimal.vtable->end_chain(&x->minimal.vtable);

	if (e != 0 || x->iplen == 0)
		return e;
	if (x->leaf_cut || http_cert_has_ip(x->leaf, x->leaflen, x->ip, x->iplen) != 1) {
		x->ip_missing = 1;
		return BR_ERR_X509_BAD_SERVER_NAME;
	}
	return 0;
}

static const br_x509_pkey *xw_get_pkey(const br_x509_class *const *ctx, unsigned *usages)
{
	const struct http_x509 *x = (const struct http_x509 *)(const void *)ctx;

	return x->minimal.vtable->get_pkey(&x->minimal.vtable, usages);
}

static const br_x509_class xw_vtable = {
	sizeof(struct http_x509), xw_start_chain, xw_start_cert, xw_append, xw_end_cert,
	xw_end_chain, xw_get_pkey
};

/* ---- The connection ---- */

static int cfail(struct http_conn *c, const char *fmt, ...)
{
	va_list ap;

	/* a cut message is still a message */
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * TLS 1.2 only, ECDHE with ECDSA or RSA certificates, AES-GCM and ChaCha20: what
 * kube-apiserver and k3s offer, and far less code than br_ssl_client_init_full pulls in.
 */
static void tls_profile(struct http_conn *c)
{
	static const uint16_t suites[] = {
		BR_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, BR_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		BR_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, BR_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		BR_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		BR_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	};
	static const br_hash_class *const hashes[] = {
		&br_sha256_vtable, &br_sha384_vtable, &br_sha512_vtable
	};
	br_ssl_client_context *sc = &c->sc;
	br_x509_minimal_context *xm = &c->x509.minimal;
	const struct http_tls *t = c->tls;

	br_ssl_client_zero(sc);
	br_ssl_engine_set_versions(&sc->eng, BR_TLS12, BR_TLS12);
	br_ssl_engine_set_suites(&sc->eng, suites, sizeof suites / sizeof suites[0]);
	br_ssl_engine_set_default_rsavrfy(&sc->eng);
	br_ssl_engine_set_default_ecdsa(&sc->eng);
	br_ssl_engine_set_prf_sha256(&sc->eng, &br_tls12_sha256_prf);
	br_ssl_engine_set_prf_sha384(&sc->eng, &br_tls12_sha384_prf);
	br_ssl_engine_set_default_aes_gcm(&sc->eng);
	br_ssl_engine_set_default_chapol(&sc->eng);

	br_x509_minimal_init(xm, &br_sha256_vtable, t->tas, t->ntas);
	br_x509_minimal_set_rsa(xm, br_ssl_engine_get_rsavrfy(&sc->eng));
	br_x509_minimal_set_ecdsa(xm, br_ssl_engine_get_ec(&sc->eng), br_ssl_engine_get_ecdsa(&sc->eng));
	for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++) {
		int id = (int)(hashes[i]->desc >> BR_HASHDESC_ID_OFF) & BR_HASHDESC_ID_MASK;
		br_ssl_engine_set_hash(&sc->eng, id, hashes[i]);
		br_x509_minimal_set_hash(xm, id, hashes[i]);
	}
	c->x509.vtable = &xw_vtable;
	br_ssl_engine_set_x509(&sc->eng, &c->x509.vtable);

	if (t->key_type == BR_KEYTYPE_EC)
		br_ssl_client_set_single_ec(sc, t->chain, t->nchain, &t->ec, BR_KEYTYPE_KEYX | BR_KEYTYPE_SIGN,
		    t->issuer_key_type, br_ec_get_default(), br_ecdsa_sign_asn1_get_default());
	else if (t->key_type == BR_KEYTYPE_RSA)
		br_ssl_client_set_single_rsa(sc, t->chain, t->nchain, &t->rsa, br_rsa_pkcs1_sign_get_default());
	br_ssl_engine_set_buffer(&sc->eng, c->iobuf, sizeof c->iobuf, 1);
}

int http_init(struct http_conn *c, const struct http_tls *tls, const char *host, const char *port,
    const char *verify_name)
{
	size_t hl = strlen(host);
	const char *vn;
	int n;

	memset(c, 0, offsetof(struct http_conn, sc));
	c->fd = -1;
	c->tls = tls;
	c->connect_timeout_ms = HTTP_CONNECT_TIMEOUT_MS;
	c->io_timeout_ms = HTTP_IO_TIMEOUT_MS;
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof c->host)
		return cfail(c, "server host name is empty or longer than %zu bytes", sizeof c->host - 1);
	memcpy(c->host, host, hl);
	c->host[hl] = 0;
	if (port == NULL || *port == 0 || strlen(port) >= sizeof c->port || strspn(port, "0123456789") != strlen(port))
		return cfail(c, "server port is not a number");
	strcpy(c->port, port);
	vn = verify_name && *verify_name ? verify_name : c->host;
	if (strlen(vn) >= sizeof c->verify_name)
		return cfail(c, "TLS server name is longer than %zu bytes", sizeof c->verify_name - 1);
	strcpy(c->verify_name, vn);
	n = snprintf(c->where, sizeof c->where, strchr(c->host, ':') ? "[%s]:%s" : "%s:%s", c->host, c->port);
	if (n < 0 || (size_t)n >= sizeof c->where)
		return cfail(c, "server address is too long");
	c->x509.iplen = 0;
	if (inet_pton(AF_INET, c->verify_name, c->x509.ip) == 1)
		c->x509.iplen = 4;
	else if (inet_pton(AF_INET6, c->verify_name, c->x509.ip) == 1)
		c->x509.iplen = 16;
	tls_profile(c);
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready: 1, 0 on timeout, -1 with errno. */
static int wait_fd(int fd, short ev, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pf = { fd, ev, 0 };
		long long left = end - now_ms();
		int n = poll(&pf, 1, left < 0 ? 0 : (int)left);
		if (n > 0)
			return 1;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

static int sock_read(void *ctx, unsigned char *buf, size_t len)
{
	struct http_conn *c = ctx;

	for (;;) {
		ssize_t n = recv(c->fd, buf, len, 0);
		if (n > 0)
			return (int)n;
		if (n == 0) {
			c->io_eof = 1;
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			c->io_errno = errno;
			return -1;
		}
		int w = wait_fd(c->fd, POLLIN, c->io_timeout_ms);
		if (w <= 0) {
			c->io_timeout = w == 0;
			c->io_errno = w < 0 ? errno : 0;
			return -1;
		}
	}
}

static int sock_write(void *ctx, const unsigned char *buf, size_t len)
{
	struct http_conn *c = ctx;

	for (;;) {
		/* MSG_NOSIGNAL: a server that hangs up must not kill the process with SIGPIPE */
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n > 0)
			return (int)n;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			c->io_errno = errno;
			return -1;
		}
		int w = wait_fd(c->fd, POLLOUT, c->io_timeout_ms);
		if (w <= 0) {
			c->io_timeout = w == 0;
			c->io_errno = w < 0 ? errno : 0;
			return -1;
		}
	}
}

static const char *alert_words(int a)
{
	switch (a) {
	case 40: return "handshake failure";
	case 42: return "bad certificate";
	case 43: return "unsupported certificate";
	case 45: return "certificate expired";
	case 46: return "certificate unknown";
	case 48: return "unknown CA";
	case 70: return "protocol version";
	case 71: return "insufficient security";
	case 112: return "unrecognized name";
	case 116: return "certificate required";
	}
	return "alert";
}

static const char *timeout_words(int ms, char *b, size_t n)
{
	if (ms % 1000 == 0)
		snprintf(b, n, "timed out after %ds", ms / 1000);
	else
		snprintf(b, n, "timed out after %dms", ms);
	return b;
}

/* Why the last TLS read, write or handshake failed, in words. */
static const char *tls_reason(struct http_conn *c, char *b, size_t n)
{
	int e = br_ssl_engine_last_error(&c->sc.eng);

	if (e == BR_ERR_IO || e == BR_ERR_OK) {
		if (c->io_timeout)
			return timeout_words(c->io_timeout_ms, b, n);
		else if (c->io_errno == EPIPE || c->io_errno == ECONNRESET)
			snprintf(b, n, "connection closed by the server");
		else if (c->io_errno)
			snprintf(b, n, "%s", strerror(c->io_errno));
		else
			snprintf(b, n, "connection closed by the server");
		return b;
	}
	if (e >= BR_ERR_RECV_FATAL_ALERT) {
		snprintf(b, n, "server sent TLS alert %d (%s)", e - BR_ERR_RECV_FATAL_ALERT,
		    alert_words(e - BR_ERR_RECV_FATAL_ALERT));
		return b;
	}
	if (e >= BR_ERR_SEND_FATAL_ALERT) {
		snprintf(b, n, "sent TLS alert %d", e - BR_ERR_SEND_FATAL_ALERT);
		return b;
	}
	switch (e) {
	case BR_ERR_X509_NOT_TRUSTED:
		return "certificate not signed by the configured CA";
	case BR_ERR_X509_BAD_SERVER_NAME:
		if (c->x509.iplen && c->x509.leaf_cut)
			snprintf(b, n, "certificate for %s is larger than %d bytes; its IP addresses cannot be checked",
			    c->verify_name, HTTP_LEAF_MAX);
		else if (c->x509.iplen)
			snprintf(b, n, "certificate for %s does not list that IP address", c->verify_name);
		else
			snprintf(b, n, "certificate is not for %s", c->verify_name);
		return b;
	case BR_ERR_X509_EXPIRED:
		return "certificate expired or not yet valid";
	case BR_ERR_X509_TIME_UNKNOWN:
		return "the system time is unknown, so the certificate cannot be checked";
	case BR_ERR_X509_WEAK_PUBLIC_KEY:
		return "certificate key is too weak";
	case BR_ERR_X509_FORBIDDEN_KEY_USAGE:
		return "certificate key usage does not allow TLS";
	case BR_ERR_X509_CRITICAL_EXTENSION:
		return "certificate has an unsupported critical extension";
	case BR_ERR_X509_NOT_CA:
		return "certificate chain uses a non-CA certificate as issuer";
	case BR_ERR_X509_BAD_SIGNATURE:
		return "certificate signature does not verify";
	case BR_ERR_X509_UNSUPPORTED:
		return "certificate uses an unsupported algorithm";
	case BR_ERR_X509_EMPTY_CHAIN:
		return "server sent no certificate";
	case BR_ERR_BAD_VERSION:
	case BR_ERR_UNSUPPORTED_VERSION:
		return "server does not speak TLS 1.2";
	case BR_ERR_BAD_CIPHER_SUITE:
		return "no TLS cipher suite in common with the server";
	case BR_ERR_BAD_SIGNATURE:
		return "server key exchange signature does not verify";
	case BR_ERR_NO_RANDOM:
		return "no system randomness for TLS";
	case BR_ERR_UNEXPECTED:
		return "unexpected TLS message (is the server speaking TLS?)";
	}
	if (e >= BR_ERR_X509_OK && e < BR_ERR_RECV_FATAL_ALERT)
		snprintf(b, n, "bad certificate (BearSSL X.509 error %d)", e);
	else
		snprintf(b, n, "TLS error %d", e);
	return b;
}

static int tcp_connect(struct http_conn *c)
{
	char b[64];
	struct addrinfo hints, *res, *ai;
	int e, fd = -1, why = 0, timedout = 0;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	e = getaddrinfo(c->host, c->port, &hints, &res);
	if (e == EAI_NONAME) {
		hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
		e = getaddrinfo(c->host, c->port, &hints, &res);
	}
	if (e != 0)
		return cfail(c, "connect to %s: cannot resolve %s: %s", c->where, c->host, gai_strerror(e));
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		int err = 0;
		socklen_t el = sizeof err;

		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			why = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS) {
			int w = wait_fd(fd, POLLOUT, c->connect_timeout_ms);
			if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
				break;
			timedout = w == 0;
			why = w > 0 ? err : errno;
		} else {
			why = errno;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		if (timedout)
			return cfail(c, "connect to %s: %s", c->where, timeout_words(c->connect_timeout_ms, b, sizeof b));
		return cfail(c, "connect to %s: %s", c->where, strerror(why ? why : ECONNREFUSED));
	}
	/* a request goes out in one flush; Nagle would only delay it */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	c->fd = fd;
	return 0;
}

static int open_conn(struct http_conn *c)
{
	char b[400];

	c->io_eof = c->io_timeout = c->io_errno = 0;
	if (tcp_connect(c) < 0)
		return -1;
	/* no SNI for an IP literal (RFC 6066); the name check is then ours */
	if (!br_ssl_client_reset(&c->sc, c->x509.iplen ? NULL : c->verify_name, 0)) {
		http_close(c);
		return cfail(c, "TLS handshake with %s: %s", c->where, tls_reason(c, b, sizeof b));
	}
	br_sslio_init(&c->io, &c->sc.eng, sock_read, c, sock_write, c);
	/* a flush with nothing to send runs the handshake, so its errors are named as such */
	if (br_sslio_flush(&c->io) < 0) {
		int e = br_ssl_engine_last_error(&c->sc.eng);
		/* the network failing may pass; a refused certificate or protocol will not */
		c->permanent = e != BR_ERR_IO && e != BR_ERR_OK;
		cfail(c, "TLS handshake with %s: %s", c->where, tls_reason(c, b, sizeof b));
		http_close(c);
		return -1;
	}
	return 0;
}

void http_close(struct http_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->in_body = 0;
	c->rpos = c->rlen = 0;
}

/* An idle kept-alive connection the server closed, or one holding unasked-for bytes. */
static int stale(struct http_conn *c)
{
	struct pollfd pf = { c->fd, POLLIN, 0 };
	unsigned st = br_ssl_engine_current_state(&c->sc.eng);

	if ((st & BR_SSL_CLOSED) || (st & BR_SSL_RECVAPP) || c->rpos != c->rlen)
		return 1;
	return poll(&pf, 1, 0) != 0;
}

static int check_request(struct http_conn *c, const char *method, const char *path, const char *headers)
{
	const char *s;

	if (*method == 0)
		return cfail(c, "request to %s: empty method", c->where);
	for (s = method; *s; s++)
		if (!is_tchar((unsigned char)*s))
			return cfail(c, "request to %s: bad method", c->where);
	if (path[0] != '/')
		return cfail(c, "request to %s: path does not start with /", c->where);
	for (s = path; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return cfail(c, "request to %s: path holds a space or control byte", c->where);
	if (headers == NULL || *headers == 0)
		return 0;
	/* each line ends "\r\n"; no bare CR or LF that would split the request */
	for (s = headers; *s; s++) {
		if ((*s == '\r' && s[1] != '\n') || (*s == '\n' && (s == headers || s[-1] != '\r')))
			return cfail(c, "request to %s: header lines must end with CRLF", c->where);
		if (*s == '\n' && s[1] == '\r')
			return cfail(c, "request to %s: empty header line", c->where);
	}
	if (s[-1] != '\n')
		return cfail(c, "request to %s: header lines must end with CRLF", c->where);
	return 0;
}

static int put(struct http_conn *c, const void *b, size_t n)
{
	return n == 0 ? 0 : br_sslio_write_all(&c->io, b, n);
}

static int puts_(struct http_conn *c, const char *s)
{
	return put(c, s, strlen(s));
}

static int send_request(struct http_conn *c, const char *method, const char *path, const char *headers,
    const void *body, size_t bodylen)
{
	char cl[48];

	if (puts_(c, method) < 0 || puts_(c, " ") < 0 || puts_(c, path) < 0 ||
	    puts_(c, " HTTP/1.1\r\nHost: ") < 0 || puts_(c, c->where) < 0 ||
	    puts_(c, "\r\nUser-Agent: noderecover\r\nAccept: application/json\r\n") < 0 ||
	    (headers && puts_(c, headers) < 0))
		return -1;
	if (body != NULL) {
		snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", bodylen);
		if (puts_(c, cl) < 0)
			return -1;
	}
	if (puts_(c, "\r\n") < 0 || (body != NULL && put(c, body, bodylen) < 0))
		return -1;
	return br_sslio_flush(&c->io);
}

/* More raw bytes into rbuf: 0, or -1 (the caller names what failed). */
static int fill(struct http_conn *c)
{
	int n = br_sslio_read(&c->io, c->rbuf, sizeof c->rbuf);

	if (n < 0)
		return -1;
	c->rpos = 0;
	c->rlen = (size_t)n;
	c->got_byte = 1;
	return 0;
}

/* The body is over: keep the connection only when the server allows it and sent nothing more. */
static void body_done(struct http_conn *c)
{
	c->in_body = 0;
	if (!c->parser.r.keep_alive || c->rpos != c->rlen)
		http_close(c);
}

enum { HEAD_OK, HEAD_IO, HEAD_BAD };

static int read_head(struct http_conn *c)
{
	for (;;) {
		size_t used;
		int e;

		if (c->rpos == c->rlen && fill(c) < 0)
			return HEAD_IO;
		e = http_parse_head(&c->parser, c->rbuf + c->rpos, c->rlen - c->rpos, &used);
		c->rpos += used;
		if (e < 0)
			return HEAD_BAD;
		if (e == 1)
			return HEAD_OK;
	}
}

int http_request(struct http_conn *c, const char *method, const char *path, const char *headers,
    const void *body, size_t bodylen, struct http_response *r)
{
	char b[400];

	c->permanent = 1;
	if (check_request(c, method, path, headers) < 0)
		return -1;
	c->permanent = 0;
	if (c->in_body)
		http_discard(c);
	for (int attempt = 0;; attempt++) {
		int reused = c->fd >= 0, e = HEAD_IO, sent;

		if (reused && stale(c)) {
			http_close(c);
			reused = 0;
		}
		if (c->fd < 0 && open_conn(c) < 0)
			return -1;
		c->io_eof = c->io_timeout = c->io_errno = 0;
		c->got_byte = 0;
		c->rpos = c->rlen = 0;
		http_parser_init(&c->parser);
		c->parser.head_only = strcmp(method, "HEAD") == 0;
		sent = send_request(c, method, path, headers, body, bodylen) == 0;
		if (sent)
			e = read_head(c);
		if (e == HEAD_OK)
			break;
		/* a kept-alive connection the server closed while idle: once more on a new one */
		if (reused && attempt == 0 && !c->got_byte && !c->io_timeout) {
			http_close(c);
			continue;
		}
		if (e == HEAD_BAD) {
			/* a server that answers garbage is not fixed by asking again */
			c->permanent = 1;
			cfail(c, "response from %s: %s", c->where, c->parser.why);
		} else
			cfail(c, "%s %s: %s", sent ? "reading response from" : "sending request to", c->where,
			    tls_reason(c, b, sizeof b));
		http_close(c);
		return -1;
	}
	*r = c->parser.r;
	c->in_body = 1;
	if (c->parser.done)
		body_done(c);
	return 0;
}

long http_read(struct http_conn *c, char *buf, size_t n)
{
	char b[400];

	if (!c->in_body)
		return 0;
	if (n == 0)
		return cfail(c, "reading response from %s: no room given", c->where);
	for (;;) {
		size_t used, outlen;
		int e;

		if (c->rpos == c->rlen && fill(c) < 0) {
			int clean = br_ssl_engine_last_error(&c->sc.eng) == BR_ERR_OK;
			/* without close_notify an end-of-connection body may have been cut by anyone */
			if (clean && http_parse_eof(&c->parser) == 1) {
				body_done(c);
				return 0;
			}
			if (c->parser.state == P_EOF && c->io_eof)
				cfail(c, "reading response from %s: connection closed without TLS close_notify; the body may be cut",
				    c->where);
			else if (c->io_eof || clean)
				cfail(c, "reading response from %s: connection closed before the end of the body", c->where);
			else
				cfail(c, "reading response from %s: %s", c->where, tls_reason(c, b, sizeof b));
			http_close(c);
			return -1;
		}
		e = http_parse_body(&c->parser, c->rbuf + c->rpos, c->rlen - c->rpos, &used, buf, n, &outlen);
		c->rpos += used;
		if (e < 0) {
			cfail(c, "response from %s: %s", c->where, c->parser.why);
			http_close(c);
			return -1;
		}
		if (e == 1)
			body_done(c);
		if (outlen > 0)
			return (long)outlen;
		if (e == 1)
			return 0;
	}
}

void http_discard(struct http_conn *c)
{
	char b[4096];
	size_t total = 0;
	long n;

	while (c->in_body) {
		if (total >= HTTP_DISCARD_MAX) {
			http_close(c);
			return;
		}
		n = http_read(c, b, sizeof b);
		if (n <= 0)
			return;
		total += (size_t)n;
	}
}
