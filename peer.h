/*
 * The fence agents' peer protocol (docs/fence.md "Peers"): the signatures (HMAC-SHA256 with
 * the shared secret, BearSSL's br_hmac), the request's query and header, the answer's body, and
 * a small plain-HTTP client that asks many peers at once (and the kubelet) within one deadline,
 * non-blocking. Knows no Kubernetes, no rules, no clock but the deadline it is given; nothing
 * here allocates or logs.
 */
#ifndef PEER_H
#define PEER_H

#include <bearssl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define PEER_PATH "/fence/v1/peer"
#define PEER_SCHEME "NoderecoverPeer"         /* Authorization: NoderecoverPeer HEX64 */
#define PEER_HEADER "X-Noderecover-Peer"      /* the answer's signature */
#define PEER_SECRET_MIN 16
#define PEER_SECRET_MAX 4096
#define PEER_NONCE_LEN 32                     /* hex digits: 16 random bytes */
#define PEER_SIG_LEN 64                       /* hex digits of an HMAC-SHA256 */
#define PEER_NODE_MAX 253
#define PEER_REQUEST_MAX 512                  /* a request we send: a node name, a nonce, a signature */
#define PEER_ANSWER_MAX 1024                  /* an answer we read: more is not an answer */

struct peer_key {
	br_hmac_key_context k;
};

/* The key of the secret secret[0..n). */
void peer_key(struct peer_key *k, const void *secret, size_t n);

/* HMAC-SHA256(secret, "req\n" node "\n" nonce) in lowercase hex into sig[PEER_SIG_LEN + 1]. */
void peer_sign_request(const struct peer_key *k, const char *node, const char *nonce, char *sig);
/* HMAC-SHA256(secret, "resp\n" nonce "\n" body[0..n)) in lowercase hex into sig[PEER_SIG_LEN + 1]. */
void peer_sign_answer(const struct peer_key *k, const char *nonce, const char *body, size_t n, char *sig);

/* Whether a[0..n) and b[0..n) are equal, in time that depends on n only. */
int peer_same(const char *a, const char *b, size_t n);

/* A fresh nonce: PEER_NONCE_LEN lowercase hex digits and a NUL. 0, or -1 (no random bytes). */
int peer_nonce(char *nonce);

/* The answer's body, exactly {"api":B,"requested":B} (requested false when api is). Its length. */
int peer_body(char *out, size_t cap, int api, int requested);
/* Reads a body peer_body wrote (no other spelling is an answer): 0, or -1. */
int peer_parse_body(const char *body, size_t n, int *api, int *requested);

/*
 * The server's side: reads a request head, head[0..len), that the listener found a complete
 * GET: the target must be PEER_PATH?node=NODE&nonce=NONCE (either order, nothing else), NODE a
 * DNS subdomain, NONCE PEER_NONCE_LEN lowercase hex digits, and its Authorization header must be
 * PEER_SCHEME and the request's signature. Returns 1 and node[PEER_NODE_MAX + 1], nonce[PEER_NONCE_LEN + 1]
 * when signed, 0 when the target is not PEER_PATH's (another route), -1 when it is but the
 * request is malformed or not signed (401).
 */
int peer_request(const struct peer_key *k, const char *head, size_t len, char *node, char *nonce);

/*
 * The whole signed answer (status line, headers, body) into out[0..cap): its length, or -1.
 */
int peer_answer(const struct peer_key *k, const char *nonce, int api, int requested, char *out, size_t cap);

/* ---- The client: plain HTTP/1.1 GETs, Connection: close, many at once ---- */

/* One GET: where, its request bytes, and what came back. Its fields are peer.c's but those marked. */
struct peer_call {
	struct sockaddr_storage sa;    /* set by the caller (peer_addr) */
	socklen_t salen;
	char req[PEER_REQUEST_MAX];    /* set by peer_get or peer_ask */
	size_t reqlen, sent;
	int fd;
	int done;                      /* the answer ended (closed, or PEER_ANSWER_MAX bytes), or failed */
	size_t n;                      /* bytes of answer read */
	char buf[PEER_ANSWER_MAX];
	char nonce[PEER_NONCE_LEN + 1];
};

/* "IPv4:PORT" or "[IPv6]:PORT" into c's address: 0, or -1. */
int peer_addr(struct peer_call *c, const char *addr);

/* Prepares c to GET path from host (for the Host header): 0, or -1 when it does not fit. */
int peer_get(struct peer_call *c, const char *host, const char *path);

/* Prepares c to ask about node with a fresh nonce, signed: 0, or -1. */
int peer_ask(struct peer_call *c, const struct peer_key *k, const char *host, const char *node);

/*
 * Runs the calls c[0..n) at once until each is done or the monotonic clock (clock.h) reaches
 * until (ms). Every socket is closed when it returns.
 */
void peer_run(struct peer_call *c, int n, int64_t until);

/* The HTTP status of a call's answer (its status line), or 0 when none came. */
int peer_status(const struct peer_call *c);

/*
 * A peer's answer to peer_ask, read and verified: 1 with *api and *requested when it is 200,
 * its body is one peer_body wrote and its signature is the nonce's; 0 otherwise (no answer).
 */
int peer_verdict(const struct peer_call *c, const struct peer_key *k, int *api, int *requested);

#endif
