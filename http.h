/*
 * HTTP/1.1 over TLS 1.2 (BearSSL). One connection, reused while the server keeps it alive.
 * Knows nothing of Kubernetes. The caller owns every buffer; nothing here allocates after
 * http_tls_load, which copies the start-up certificates and key once.
 */
#ifndef HTTP_H
#define HTTP_H

#include <stddef.h>
#include <bearssl.h>

/* Limits that keep a hostile or broken server from costing memory or time. */
#define HTTP_HEAD_MAX 16384          /* status line plus headers */
#define HTTP_CONNECT_TIMEOUT_MS 10000
#define HTTP_IO_TIMEOUT_MS 30000     /* longest wait for any byte */
#define HTTP_MAX_TAS 32              /* CA certificates */
#define HTTP_MAX_CHAIN 4             /* client certificate chain */
#define HTTP_MAX_HEADERS 100         /* header lines in one response head */
#define HTTP_LEAF_MAX 8192           /* server certificate kept for the iPAddress check */
#define HTTP_DISCARD_MAX 65536       /* body bytes http_discard reads before it closes instead */

/*
 * Certificates and key, decoded once at start-up from PEM text.
 * ca: one or more CERTIFICATE blocks (required). cert/key: the client certificate chain and
 * its private key (EC or RSA; PKCS#8, "EC PRIVATE KEY" or "RSA PRIVATE KEY"), both NULL when
 * the server is reached with a bearer token.
 * Returns 0, or -1 with a one-line reason in err.
 */
struct http_tls {
	br_x509_trust_anchor tas[HTTP_MAX_TAS];
	size_t ntas;
	br_x509_certificate chain[HTTP_MAX_CHAIN];
	size_t nchain;
	int key_type;                /* 0 none, BR_KEYTYPE_RSA or BR_KEYTYPE_EC */
	br_rsa_private_key rsa;
	br_ec_private_key ec;
	unsigned issuer_key_type;    /* private: key type that signed chain[0] */
	/* decoded bytes live in one block allocated here, freed by http_tls_free */
	unsigned char *mem;
	size_t memlen, memused;
};
int http_tls_load(struct http_tls *t, const char *ca, size_t calen, const char *cert, size_t certlen,
    const char *key, size_t keylen, char *err, size_t errlen);
void http_tls_free(struct http_tls *t);

/* What a response said before its body. */
struct http_response {
	int status;                  /* 200, 404, ... */
	long retry_after;            /* Retry-After in seconds, -1 when absent or not a number */
	int chunked;                 /* Transfer-Encoding: chunked */
	long long content_length;    /* -1 when absent */
	int keep_alive;              /* the connection may be reused after the body */
	char content_type[64];       /* truncated */
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
	size_t extra;                /* private: chunk-extension or trailer bytes seen */
	int digits;                  /* private: hex digits of the current chunk size */
	int head_only;               /* a HEAD response or a status without a body */
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

/*
 * Looks in a DER certificate for an iPAddress subjectAltName equal to ip (4 or 16 bytes).
 * Returns 1 when listed, 0 when not (or no subjectAltName), -1 when the DER is malformed.
 * Used during the handshake for IP-literal servers; public so it can be tested.
 */
int http_cert_has_ip(const unsigned char *der, size_t len, const unsigned char *ip, size_t iplen);

/*
 * Private: BearSSL's minimal X.509 engine wrapped so that, for an IP-literal server, the leaf
 * certificate is kept and checked for an iPAddress subjectAltName (BearSSL checks DNS names only).
 */
struct http_x509 {
	const br_x509_class *vtable;
	br_x509_minimal_context minimal;
	unsigned char ip[16];        /* the IP to find; iplen 0: a DNS name, BearSSL checks it */
	size_t iplen;
	int ncert;                   /* certificates seen in this chain */
	unsigned char leaf[HTTP_LEAF_MAX];
	size_t leaflen;
	int leaf_cut;                /* the leaf was longer than leaf[] */
	int ip_missing;              /* the chain was trusted but does not list the IP */
};

/* One connection to one server. Large (it holds BearSSL's buffers): make it static. */
struct http_conn {
	const struct http_tls *tls;
	char host[256];              /* where to connect: DNS name or IP literal (no brackets) */
	char port[8];
	char verify_name[256];       /* name or IP checked against the certificate */
	char where[300];             /* private: "host:port" ("[v6]:port") for Host and messages */
	int connect_timeout_ms;      /* set to HTTP_CONNECT_TIMEOUT_MS by http_init; may be changed */
	int io_timeout_ms;           /* set to HTTP_IO_TIMEOUT_MS by http_init; may be changed */
	int fd;                      /* -1 when closed */
	int in_body;                 /* a response body is being read */
	int got_byte;                /* private: a response byte arrived on this attempt */
	int io_eof, io_errno;        /* private: why the last socket call failed */
	int io_timeout;              /* after -1: the server stayed silent past a timeout */
	struct http_parser parser;
	char rbuf[4096];             /* private: bytes read, not yet parsed */
	size_t rpos, rlen;
	char err[256];               /* why the last call failed, one line */
	int permanent;               /* after -1: retrying cannot help (certificate refused, TLS
	                                version or suites not shared, request invalid, garbage
	                                response head) */
	/* BearSSL state, private */
	br_ssl_client_context sc;
	struct http_x509 x509;       /* private: the verifying engine */
	br_sslio_context io;
	unsigned char iobuf[BR_SSL_BUFSIZE_BIDI];
};

/*
 * Sets where to connect and prepares the TLS engine (tls must outlive c). host may be a DNS
 * name or an IP literal (IPv6 with or without brackets). verify_name NULL or "" means: verify
 * the certificate against host (as a DNS name, or against an iPAddress SAN when host is an IP
 * literal); an IP literal in verify_name is checked the same way. Connects lazily.
 * c must be closed (http_close) before it is initialised again.
 * Returns 0, or -1 when a name does not fit (c->err says which).
 */
int http_init(struct http_conn *c, const struct http_tls *tls, const char *host, const char *port,
    const char *verify_name);
/*
 * Sends one request and reads the response head into *r. headers are extra header lines,
 * each ending "\r\n" (NULL for none); Host, User-Agent, Accept: application/json and, when
 * body is not NULL, Content-Length are added here. method and path are checked for bytes that
 * would split the request. Connects when needed; a reused connection that turns out closed before any
 * response byte is reconnected and the request sent once more.
 * Returns 0 (then read the body with http_read until it returns 0), or -1 with c->err set.
 * Never follows a redirect: a 3xx is returned like any status.
 */
int http_request(struct http_conn *c, const char *method, const char *path, const char *headers,
    const void *body, size_t bodylen, struct http_response *r);
/* Reads up to n decoded body bytes. Returns the count, 0 at the end of the body, -1 on error. */
long http_read(struct http_conn *c, char *buf, size_t n);
/* Reads and drops the rest of a body (up to a bound) so the connection can be reused, else closes. */
void http_discard(struct http_conn *c);
void http_close(struct http_conn *c);

#endif
