/*
 * TLS 1.2 client side over BearSSL: PEM loading, the engine's profile, and the server
 * certificate checked as client-go checks it. BearSSL verifies the chain, the dates, the key
 * usage and (for a DNS name) the subjectAltName dNSNames; we keep the leaf and check what it
 * does not: a subjectAltName must be present (BearSSL would match the Common Name without one),
 * an IP-literal server's address must be an iPAddress SAN, and an extendedKeyUsage must allow
 * serverAuth. Verification is never skipped. Nothing allocates after tls_load.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "tls.h"

/* ---- PEM: CA bundle, client chain and key, decoded once into one block ---- */

enum { PEM_SKIP, PEM_CA, PEM_CERT, PEM_KEY };

struct pem_load {
	struct tls_creds *t;
	int kind;
	int full;                    /* the block ran out of room: a bug, the block is sized to fit */
	br_x509_decoder_context xd;
	br_skey_decoder_context kd;
	size_t start;                /* where the current object's bytes begin in t->mem */
};

static unsigned char *mem_put(struct pem_load *l, const void *b, size_t n)
{
	struct tls_creds *t = l->t;
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

/* Copies the CA's public key next to its DN and fills in the trust anchor. */
static int pem_ca_end(struct pem_load *l, int nth, char *err, size_t errlen)
{
	struct tls_creds *t = l->t;
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
		return text_fail(err, errlen, "CA certificate %d is malformed (X.509 error %d)", nth, e);
	if (t->ntas == TLS_MAX_TAS)
		return text_fail(err, errlen, "CA file holds more than %d certificates", TLS_MAX_TAS);
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

static int pem_key_end(struct pem_load *l, char *err, size_t errlen)
{
	struct tls_creds *t = l->t;
	const br_rsa_private_key *rk;
	const br_ec_private_key *ek;

	if (br_skey_decoder_last_error(&l->kd) != 0)
		return text_fail(err, errlen, "client key is not an RSA or EC private key BearSSL can read");
	if (t->key_type != 0)
		return text_fail(err, errlen, "client key file holds more than one private key");
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
		return text_fail(err, errlen, "client key is not RSA or EC");
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
				if (kind == PEM_CERT && l->t->nchain == TLS_MAX_CHAIN)
					return text_fail(err, errlen, "client certificate chain is longer than %d certificates", TLS_MAX_CHAIN);
			} else if (kind == PEM_KEY && (strcmp(name, "PRIVATE KEY") == 0 ||
			    strcmp(name, "EC PRIVATE KEY") == 0 || strcmp(name, "RSA PRIVATE KEY") == 0)) {
				l->kind = PEM_KEY;
				nobj++;
				br_skey_decoder_init(&l->kd);
			} else if (kind == PEM_KEY && strstr(name, "ENCRYPTED") != NULL) {
				return text_fail(err, errlen, "client key is encrypted; an unencrypted key is needed");
			}
			br_pem_decoder_setdest(&pc, pem_dest, l);
			break;
		}
		case BR_PEM_END_OBJ:
			inobj = 0;
			if (l->full)
				return text_fail(err, errlen, "%s: out of room while decoding", what);
			if (l->kind == PEM_CA) {
				if (pem_ca_end(l, (int)nobj, err, errlen) < 0)
					return -1;
			} else if (l->kind == PEM_CERT) {
				struct tls_creds *t = l->t;
				if (t->nchain == 0) {
					if (br_x509_decoder_last_error(&l->xd) != 0)
						return text_fail(err, errlen, "client certificate is malformed");
					t->issuer_key_type = br_x509_decoder_get_signer_key_type(&l->xd);
				}
				t->chain[t->nchain].data = t->mem + l->start;
				t->chain[t->nchain].data_len = t->memused - l->start;
				t->nchain++;
			} else if (l->kind == PEM_KEY) {
				if (pem_key_end(l, err, errlen) < 0)
					return -1;
			}
			break;
		case BR_PEM_ERROR:
			return text_fail(err, errlen, "%s is not valid PEM", what);
		}
		if (l->full)
			return text_fail(err, errlen, "%s: out of room while decoding", what);
	}
	if (inobj)
		return text_fail(err, errlen, "%s ends inside a PEM block", what);
	if (nobj == 0)
		return text_fail(err, errlen, "%s holds no %s", what, kind == PEM_KEY ? "private key" : "certificate");
	return 0;
}

/* The client key must be the one the client certificate was issued for. */
static int key_matches(const struct tls_creds *t, char *err, size_t errlen)
{
	br_x509_decoder_context xd;
	const br_x509_pkey *pk;

	br_x509_decoder_init(&xd, NULL, NULL);
	br_x509_decoder_push(&xd, t->chain[0].data, t->chain[0].data_len);
	pk = br_x509_decoder_get_pkey(&xd);
	if (pk == NULL)
		return text_fail(err, errlen, "client certificate is malformed");
	if (pk->key_type != t->key_type)
		return text_fail(err, errlen, "client key does not match the client certificate (key types differ)");
	if (t->key_type == BR_KEYTYPE_EC) {
		unsigned char q[BR_EC_KBUF_PUB_MAX_SIZE];
		br_ec_public_key pub;
		size_t qlen = br_ec_compute_pub(br_ec_get_default(), &pub, q, &t->ec);
		if (qlen == 0)
			return text_fail(err, errlen, "client key uses an EC curve BearSSL does not support");
		if (pk->key.ec.curve != t->ec.curve || pk->key.ec.qlen != qlen || memcmp(pk->key.ec.q, q, qlen) != 0)
			return text_fail(err, errlen, "client key does not match the client certificate");
	} else {
		unsigned char n[1024];
		br_rsa_compute_modulus modulus = br_rsa_compute_modulus_get_default();
		const unsigned char *cn = pk->key.rsa.n;
		size_t cnlen = pk->key.rsa.nlen, nlen;

		if (modulus(NULL, &t->rsa) > sizeof n)
			return text_fail(err, errlen, "client RSA key is larger than 8192 bits");
		nlen = modulus(n, &t->rsa);
		while (cnlen > 0 && *cn == 0) {
			cn++;
			cnlen--;
		}
		if (nlen == 0 || nlen != cnlen || memcmp(n, cn, nlen) != 0)
			return text_fail(err, errlen, "client key does not match the client certificate");
	}
	return 0;
}

int tls_load(struct tls_creds *t, const char *ca, size_t calen, const char *cert, size_t certlen,
    const char *key, size_t keylen, char *err, size_t errlen)
{
	struct pem_load l;    /* about 3.5 KiB of BearSSL decoders, at start-up only */

	memset(t, 0, sizeof *t);
	if (ca == NULL || calen == 0)
		return text_fail(err, errlen, "no CA certificate given");
	if ((cert == NULL) != (key == NULL))
		return text_fail(err, errlen, cert ? "client certificate given without its key" : "client key given without its certificate");
	if (calen > SIZE_MAX / 4 || certlen > SIZE_MAX / 4 || keylen > SIZE_MAX / 4)
		return text_fail(err, errlen, "certificate files are too large");
	/* decoded DER is shorter than its base64, and a DN plus key is shorter than the DER */
	t->memlen = calen + certlen + keylen;
	t->mem = malloc(t->memlen);
	if (t->mem == NULL)
		return text_fail(err, errlen, "out of memory for certificates");
	memset(&l, 0, sizeof l);
	l.t = t;
	if (pem_file(&l, PEM_CA, "CA file", ca, calen, err, errlen) < 0)
		goto fail;
	if (t->ntas == 0) {
		text_fail(err, errlen, "CA file holds no RSA or EC certificate");
		goto fail;
	}
	if (cert != NULL) {
		if (pem_file(&l, PEM_CERT, "client certificate file", cert, certlen, err, errlen) < 0 ||
		    pem_file(&l, PEM_KEY, "client key file", key, keylen, err, errlen) < 0 ||
		    key_matches(t, err, errlen) < 0)
			goto fail;
	}
	explicit_bzero(&l, sizeof l);  /* the decoders held key bytes */
	return 0;
fail:
	explicit_bzero(&l, sizeof l);
	tls_free(t);
	return -1;
}

void tls_free(struct tls_creds *t)
{
	if (t->mem != NULL) {
		explicit_bzero(t->mem, t->memlen);
		free(t->mem);
	}
	memset(t, 0, sizeof *t);
}

/* ---- The leaf: what BearSSL's minimal engine does not check ---- */

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

/* The contents of the SEQUENCE that is exactly b[pos..end), at *v..*v+*vlen. */
static int der_seq(const unsigned char *b, size_t pos, size_t end, size_t *v, size_t *vlen)
{
	int tag;

	return der_next(b, end, &pos, &tag, v, vlen) < 0 || tag != 0x30 || pos != end ? -1 : 0;
}

/* GeneralNames (RFC 5280 4.2.1.6): 1 when an iPAddress [7] equals ip, 0 when none does, -1. */
static int san_has_ip(const unsigned char *b, size_t pos, size_t end, const unsigned char *ip, size_t iplen)
{
	size_t v, vlen, gend;
	int tag, found = 0;

	if (der_seq(b, pos, end, &v, &vlen) < 0)
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

/* ExtKeyUsageSyntax (RFC 5280 4.2.1.12): 1 when it allows a TLS server, 0 when not, -1. */
static int eku_server(const unsigned char *b, size_t pos, size_t end)
{
	static const unsigned char server_auth[] = { 0x2b, 6, 1, 5, 5, 7, 3, 1 };  /* 1.3.6.1.5.5.7.3.1 */
	static const unsigned char any_eku[] = { 0x55, 0x1d, 0x25, 0 };              /* 2.5.29.37.0 */
	size_t v, vlen, send;
	int tag, ok = 0;

	if (der_seq(b, pos, end, &v, &vlen) < 0)
		return -1;
	send = v + vlen;
	for (pos = v; pos < send;) {
		if (der_next(b, send, &pos, &tag, &v, &vlen) < 0 || tag != 0x06)
			return -1;
		if ((vlen == sizeof server_auth && memcmp(b + v, server_auth, vlen) == 0) ||
		    (vlen == sizeof any_eku && memcmp(b + v, any_eku, vlen) == 0))
			ok = 1;
	}
	return ok;
}

enum tls_leaf tls_leaf_check(const unsigned char *der, size_t len, const unsigned char *ip, size_t iplen)
{
	size_t pos = 0, v, vlen, tend, san = 0, sanend = 0, eku = 0, ekuend = 0;
	int tag;

	if (iplen != 0 && iplen != 4 && iplen != 16)
		return TLS_LEAF_MALFORMED;
	if (der_next(der, len, &pos, &tag, &v, &vlen) < 0 || tag != 0x30)
		return TLS_LEAF_MALFORMED;
	pos = v;
	if (der_next(der, v + vlen, &pos, &tag, &v, &vlen) < 0 || tag != 0x30)      /* tbsCertificate */
		return TLS_LEAF_MALFORMED;
	tend = v + vlen;
	for (pos = v; pos < tend;) {
		if (der_next(der, tend, &pos, &tag, &v, &vlen) < 0)
			return TLS_LEAF_MALFORMED;
		if (tag != 0xa3)                                            /* [3] extensions */
			continue;
		size_t epos, eend, xv, xvlen;
		if (der_seq(der, v, v + vlen, &xv, &xvlen) < 0)
			return TLS_LEAF_MALFORMED;
		eend = xv + xvlen;
		for (epos = xv; epos < eend;) {
			size_t q, qend, ov, ovlen;
			if (der_next(der, eend, &epos, &tag, &xv, &xvlen) < 0 || tag != 0x30)
				return TLS_LEAF_MALFORMED;
			q = xv;
			qend = xv + xvlen;
			if (der_next(der, qend, &q, &tag, &ov, &ovlen) < 0 || tag != 0x06)
				return TLS_LEAF_MALFORMED;
			if (der_next(der, qend, &q, &tag, &xv, &xvlen) < 0)
				return TLS_LEAF_MALFORMED;
			if (tag == 0x01 && der_next(der, qend, &q, &tag, &xv, &xvlen) < 0)   /* critical */
				return TLS_LEAF_MALFORMED;
			if (tag != 0x04 || q != qend)
				return TLS_LEAF_MALFORMED;
			if (ovlen != 3 || der[ov] != 0x55 || der[ov + 1] != 0x1d)
				continue;
			/* two of one extension is forbidden (RFC 5280 4.2), and would let a reader pick */
			if (der[ov + 2] == 0x11) {                          /* subjectAltName */
				if (sanend)
					return TLS_LEAF_MALFORMED;
				san = xv;
				sanend = xv + xvlen;
			} else if (der[ov + 2] == 0x25) {                   /* extendedKeyUsage */
				if (ekuend)
					return TLS_LEAF_MALFORMED;
				eku = xv;
				ekuend = xv + xvlen;
			}
		}
	}
	if (ekuend) {
		int e = eku_server(der, eku, ekuend);
		if (e < 0)
			return TLS_LEAF_MALFORMED;
		if (e == 0)
			return TLS_LEAF_NOT_SERVER;
	}
	if (!sanend)
		return TLS_LEAF_NO_SAN;
	if (iplen) {
		int e = san_has_ip(der, san, sanend, ip, iplen);
		if (e < 0)
			return TLS_LEAF_MALFORMED;
		if (e == 0)
			return TLS_LEAF_NO_IP;
	}
	return TLS_LEAF_OK;
}

static void xw_start_chain(const br_x509_class **ctx, const char *server_name)
{
	struct tls_x509 *x = (struct tls_x509 *)(void *)ctx;

	x->ncert = 0;
	x->leaflen = 0;
	x->leaf_cut = 0;
	x->verdict = TLS_LEAF_OK;
	/* for an IP literal BearSSL's DNS check is off; end_chain does ours */
	x->minimal.vtable->start_chain(&x->minimal.vtable, x->iplen ? NULL : server_name);
}

static void xw_start_cert(const br_x509_class **ctx, uint32_t length)
{
	struct tls_x509 *x = (struct tls_x509 *)(void *)ctx;

	x->ncert++;
	x->minimal.vtable->start_cert(&x->minimal.vtable, length);
}

static void xw_append(const br_x509_class **ctx, const unsigned char *buf, size_t len)
{
	struct tls_x509 *x = (struct tls_x509 *)(void *)ctx;

	if (x->ncert == 1) {
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
	struct tls_x509 *x = (struct tls_x509 *)(void *)ctx;

	x->minimal.vtable->end_cert(&x->minimal.vtable);
}

/*
 * BearSSL's verdict first (trust, dates, key usage, DNS names), then ours on the leaf. The
 * names' error code is reused for ours; verdict tells tls_reason which words to use.
 */
static unsigned xw_end_chain(const br_x509_class **ctx)
{
	struct tls_x509 *x = (struct tls_x509 *)(void *)ctx;
	unsigned e = x->minimal.vtable->end_chain(&x->minimal.vtable);

	x->verdict = x->leaf_cut ? TLS_LEAF_MALFORMED : tls_leaf_check(x->leaf, x->leaflen, x->ip, x->iplen);
	if (e != 0)
		return e;
	switch (x->verdict) {
	case TLS_LEAF_OK:
		return 0;
	case TLS_LEAF_NOT_SERVER:
		return BR_ERR_X509_FORBIDDEN_KEY_USAGE;
	default:
		return BR_ERR_X509_BAD_SERVER_NAME;
	}
}

static const br_x509_pkey *xw_get_pkey(const br_x509_class *const *ctx, unsigned *usages)
{
	const struct tls_x509 *x = (const struct tls_x509 *)(const void *)ctx;

	return x->minimal.vtable->get_pkey(&x->minimal.vtable, usages);
}

static const br_x509_class xw_vtable = {
	sizeof(struct tls_x509), xw_start_chain, xw_start_cert, xw_append, xw_end_cert,
	xw_end_chain, xw_get_pkey
};

/* ---- The client engine ---- */

/*
 * ChaCha20-Poly1305 with the implementations br_ssl_engine_set_default_chapol would choose here,
 * without linking the fallbacks it can never take on this architecture (2 KB on amd64): SSE2 is
 * part of every x86-64, and a compiler with 128-bit integers gives BearSSL its ctmulq Poly1305.
 * Were BearSSL built without them, the link would fail rather than the handshake.
 */
static void set_chapol(br_ssl_engine_context *eng)
{
	br_ssl_engine_set_chapol(eng, &br_sslrec_in_chapol_vtable, &br_sslrec_out_chapol_vtable);
#if defined(__x86_64__)
	br_ssl_engine_set_chacha20(eng, &br_chacha20_sse2_run);
#else
	br_ssl_engine_set_chacha20(eng, &br_chacha20_ct_run);
#endif
#if defined(__SIZEOF_INT128__)
	br_ssl_engine_set_poly1305(eng, &br_poly1305_ctmulq_run);
#else
	br_ssl_engine_set_poly1305(eng, &br_poly1305_ctmul_run);
#endif
}

/*
 * TLS 1.2 only, ECDHE with ECDSA or RSA certificates, AES-GCM and ChaCha20: what
 * kube-apiserver and k3s offer, and far less code than br_ssl_client_init_full pulls in.
 */
int tls_client_init(struct tls_client *c, const struct tls_creds *t, const char *name)
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
	size_t n = strlen(name);

	if (n == 0 || n >= sizeof c->name)
		return -1;
	memcpy(c->name, name, n + 1);
	c->x509.iplen = 0;
	if (inet_pton(AF_INET, name, c->x509.ip) == 1)
		c->x509.iplen = 4;
	else if (inet_pton(AF_INET6, name, c->x509.ip) == 1)
		c->x509.iplen = 16;

	br_ssl_client_zero(sc);
	br_ssl_engine_set_versions(&sc->eng, BR_TLS12, BR_TLS12);
	br_ssl_engine_set_suites(&sc->eng, suites, sizeof suites / sizeof suites[0]);
	br_ssl_engine_set_default_rsavrfy(&sc->eng);
	br_ssl_engine_set_default_ecdsa(&sc->eng);
	br_ssl_engine_set_prf_sha256(&sc->eng, &br_tls12_sha256_prf);
	br_ssl_engine_set_prf_sha384(&sc->eng, &br_tls12_sha384_prf);
	br_ssl_engine_set_default_aes_gcm(&sc->eng);
	set_chapol(&sc->eng);

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
	return 0;
}

int tls_client_reset(struct tls_client *c)
{
	/* no SNI for an IP literal (RFC 6066); the address check is then ours */
	return br_ssl_client_reset(&c->sc, c->x509.iplen ? NULL : c->name, 0) ? 0 : -1;
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

/* Words for a name check that failed: BearSSL's (a DNS name) or ours. */
static const char *name_words(const struct tls_client *c, char *b, size_t n)
{
	switch (c->x509.verdict) {
	case TLS_LEAF_NO_SAN:
		snprintf(b, n, "certificate for %s has no subjectAltName (its Common Name is not used)", c->name);
		break;
	case TLS_LEAF_MALFORMED:
		if (c->x509.leaf_cut)
			snprintf(b, n, "certificate for %s is larger than %d bytes; its names cannot be checked",
			    c->name, TLS_LEAF_MAX);
		else
			snprintf(b, n, "certificate for %s: its extensions cannot be read", c->name);
		break;
	default:
		if (c->x509.iplen)
			snprintf(b, n, "certificate for %s does not list that IP address", c->name);
		else
			snprintf(b, n, "certificate is not for %s", c->name);
	}
	return b;
}

const char *tls_reason(const struct tls_client *c, char *b, size_t n)
{
	int e = br_ssl_engine_last_error(&c->sc.eng);

	if (e == BR_ERR_IO || e == BR_ERR_OK)
		return NULL;
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
		return name_words(c, b, n);
	case BR_ERR_X509_EXPIRED:
		return "certificate expired or not yet valid";
	case BR_ERR_X509_TIME_UNKNOWN:
		return "the system time is unknown, so the certificate cannot be checked";
	case BR_ERR_X509_WEAK_PUBLIC_KEY:
		return "certificate key is too weak";
	case BR_ERR_X509_FORBIDDEN_KEY_USAGE:
		if (c->x509.verdict == TLS_LEAF_NOT_SERVER)
			return "certificate's extended key usage does not allow a TLS server (no serverAuth)";
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
