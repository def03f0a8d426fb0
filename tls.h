/*
 * TLS 1.2 client side over BearSSL: the certificates and key decoded once from PEM, and the
 * server certificate checked as client-go checks it (Go's crypto/x509): a subjectAltName must
 * name the host (a DNS name, or an iPAddress for an IP literal), the Common Name is never used,
 * and a leaf that lists extended key usages must list serverAuth. Knows nothing of HTTP or of
 * sockets: http.c moves the bytes. Nothing here allocates after tls_load.
 */
#ifndef TLS_H
#define TLS_H

#include <stddef.h>
#include <bearssl.h>

#define TLS_MAX_TAS 32               /* CA certificates */
#define TLS_MAX_CHAIN 4              /* client certificate chain */
#define TLS_LEAF_MAX 8192            /* server certificate kept for our checks; a longer one is refused */
#define TLS_NAME_MAX 256             /* name or IP the server certificate must carry, with its NUL */

/*
 * Certificates and key, decoded once at start-up from PEM text.
 * ca: one or more CERTIFICATE blocks (required). cert/key: the client certificate chain and
 * its private key (EC or RSA; PKCS#8, "EC PRIVATE KEY" or "RSA PRIVATE KEY"), both NULL when
 * the server is reached with a bearer token.
 * Returns 0, or -1 with a one-line reason in err.
 */
struct tls_creds {
	br_x509_trust_anchor tas[TLS_MAX_TAS];
	size_t ntas;
	br_x509_certificate chain[TLS_MAX_CHAIN];
	size_t nchain;
	int key_type;                /* 0 none, BR_KEYTYPE_RSA or BR_KEYTYPE_EC */
	br_rsa_private_key rsa;
	br_ec_private_key ec;
	unsigned issuer_key_type;    /* private: key type that signed chain[0] */
	/* decoded bytes live in one block allocated here, freed (and wiped) by tls_free */
	unsigned char *mem;
	size_t memlen, memused;
};
int tls_load(struct tls_creds *t, const char *ca, size_t calen, const char *cert, size_t certlen,
    const char *key, size_t keylen, char *err, size_t errlen);
void tls_free(struct tls_creds *t);

/*
 * What our own look at a server's leaf certificate (DER) found; ip/iplen (4 or 16 bytes) is the
 * address to find for an IP-literal server, iplen 0 for a DNS name (BearSSL matches DNS names,
 * and matches them against subjectAltName dNSNames only when the extension is present).
 * Public so it can be tested on certificates without a handshake.
 */
enum tls_leaf {
	TLS_LEAF_OK,
	TLS_LEAF_NO_SAN,             /* no subjectAltName: client-go never falls back to the CN */
	TLS_LEAF_NO_IP,              /* an IP-literal server whose address the SAN does not list */
	TLS_LEAF_NOT_SERVER,         /* extendedKeyUsage without serverAuth or anyExtendedKeyUsage */
	TLS_LEAF_MALFORMED           /* DER we cannot walk, or two SAN or EKU extensions */
};
enum tls_leaf tls_leaf_check(const unsigned char *der, size_t len, const unsigned char *ip, size_t iplen);

/* Private: BearSSL's minimal X.509 engine wrapped so that the leaf is kept and checked by us too. */
struct tls_x509 {
	const br_x509_class *vtable;
	br_x509_minimal_context minimal;
	unsigned char ip[16];        /* the IP to find; iplen 0: a DNS name */
	size_t iplen;
	int ncert;                   /* certificates seen in this chain */
	unsigned char leaf[TLS_LEAF_MAX];
	size_t leaflen;
	int leaf_cut;                /* the leaf was longer than leaf[] */
	enum tls_leaf verdict;       /* what tls_leaf_check said of the last chain */
};

/* One client endpoint: BearSSL's engine, our verifier, the record buffers. Large: held once, in a struct http_conn. */
struct tls_client {
	br_ssl_client_context sc;
	struct tls_x509 x509;
	char name[TLS_NAME_MAX];     /* name or IP literal the certificate must carry */
	unsigned char iobuf[BR_SSL_BUFSIZE_BIDI];
};

/*
 * Prepares c for servers named name (a DNS name or an IP literal without brackets): TLS 1.2
 * only, ECDHE with ECDSA or RSA, AES-GCM or ChaCha20, verified against creds, which must
 * outlive c; the client certificate is offered when creds has one. Returns 0, or -1 when name
 * is empty or longer than TLS_NAME_MAX - 1.
 */
int tls_client_init(struct tls_client *c, const struct tls_creds *creds, const char *name);
/* Starts a new handshake (SNI only for a DNS name, RFC 6066). Returns 0, or -1 (tls_reason). */
int tls_client_reset(struct tls_client *c);
/*
 * Why the engine failed, in words, for failures of TLS itself: a refused certificate, an
 * alert, no shared version or suite. Returns NULL when the engine saw none (the socket failed,
 * and the caller knows why). b[0..n) may hold the words.
 */
const char *tls_reason(const struct tls_client *c, char *b, size_t n);


#endif
