/*
 * HTTP/1.1 over TLS 1.2 (tls.c). One connection, reused while the server keeps it alive; every
 * wait bounded by a deadline on the monotonic clock and cut short by a stop flag. Knows nothing
 * of Kubernetes or of media types. The caller owns every buffer; nothing here allocates.
 */
#ifndef HTTP_H
#define HTTP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "http_parse.h"
#include "tls.h"

/* Limits that keep a hostile or broken server from costing time. */
#define HTTP_DISCARD_MAX 65536       /* body bytes http_discard reads before it closes instead */
#define HTTP_WAIT_SLICE_MS 1000      /* longest single wait, so the stop flag is seen within it */

/*
 * The phases of a request, each with its own limit in milliseconds. CONNECT and HANDSHAKE run
 * from their start; HEAD (the status line and headers) and RESPONSE (everything, to the last
 * body byte) from the moment the request starts to go out. RESPONSE's limit is the request's
 * own (struct http_bounds); no phase outlives the request's bounds.until.
 */
enum http_phase { HTTP_CONNECT, HTTP_HANDSHAKE, HTTP_HEAD, HTTP_RESPONSE, HTTP_PHASES };
#define HTTP_CONNECT_MS 10000
#define HTTP_HANDSHAKE_MS 10000
#define HTTP_HEAD_MS 30000
#define HTTP_RESPONSE_MS 30000

/*
 * One connection to one server. Large (it holds BearSSL's buffers): its owner holds it once,
 * static or allocated, never on a thread's stack (a struct kube holds one).
 */
struct http_conn {
	char host[256];              /* where to connect: DNS name or IP literal (no brackets) */
	char port[8];
	char where[300];             /* "host:port" ("[v6]:port") for Host and messages */
	long limit_ms[HTTP_PHASES];  /* set by http_init (HTTP_*_MS), changed by http_deadline;
	                                RESPONSE's set by each request from its bounds */
	long long until;             /* private: the request's bounds.until; 0: none */
	const volatile sig_atomic_t *stop; /* when set and nonzero: give up within HTTP_WAIT_SLICE_MS */
	int fd;                      /* -1 when closed */
	int in_body;                 /* a response body is being read */
	int got_byte;                /* private: a response byte arrived on this attempt */
	int io_eof, io_errno;        /* private: why the last socket call failed */
	int phase;                   /* private: the phase being waited for */
	long long phase_end, phase_ms; /* private: when it must be done, how long it was given */
	int by_until;                /* private: its end is c->until */
	long long response_end, response_ms; /* private: the same for the whole response */
	int response_by_until;       /* private */
	int expired;                 /* after -1: a deadline passed (the phase is in err) */
	int stopped;                 /* after -1: the stop flag was seen */
	unsigned char first[5];      /* private: the first bytes the server sent on this connection */
	size_t nfirst;
	struct http_parser parser;
	char rbuf[4096];             /* private: bytes read, not yet parsed */
	size_t rpos, rlen;
	char err[256];               /* why the last call failed, one line */
	int permanent;               /* after -1: retrying cannot help (certificate refused, TLS
	                                version or suites not shared, request invalid, garbage
	                                response head) */
	br_sslio_context io;         /* private */
	struct tls_client tls;       /* private: BearSSL's engine and our verifier */
};

/*
 * Sets where to connect and prepares TLS against creds (which must outlive c). host may be a
 * DNS name or an IP literal (IPv6 with or without brackets). verify_name NULL or "" means:
 * verify the certificate against host (a DNS name, or an iPAddress SAN when host is an IP
 * literal); an IP literal in verify_name is checked the same way. Connects lazily. Every field
 * is set here, none kept from before; c must be closed (http_close) before it is set again.
 * Every limit is waited as clock_span(limit): tests scale them all down in one place (clock.h).
 * Returns 0, or -1 when a name does not fit (c->err says which).
 */
int http_init(struct http_conn *c, const struct tls_creds *creds, const char *host, const char *port,
    const char *verify_name);
/* Sets the limit of CONNECT, HANDSHAKE or HEAD for the requests that follow (tests shorten them). */
void http_deadline(struct http_conn *c, enum http_phase ph, long ms);

/*
 * Asked right before a request's bytes go out, once any connect and handshake are done: nonzero
 * lets them go, 0 keeps the request unsent (http_request returns HTTP_GATED). A check made any
 * earlier could be stale by the time the bytes leave: a process can be stopped, or a connect or
 * a retry's backoff can wait, for any length of time in between.
 */
typedef int (*http_gate_fn)(void *ctx);

/*
 * What one request may take beyond the fixed phases: its whole response (HTTP_RESPONSE, to the
 * last body byte) and a time no wait may pass, a caller's deadline over several requests such
 * as a whole list (from clock_after; 0: none); and a gate (NULL: none). A NULL bounds means
 * HTTP_RESPONSE_MS and none.
 */
struct http_bounds {
	long response_ms;
	long long until;
	http_gate_fn gate;
	void *gate_ctx;
};

/*
 * Sleeps ms milliseconds unless the stop flag is set or until (0: none) would pass first.
 * Returns 0 after the whole sleep, -1 (c->stopped or c->expired set, c->err saying why)
 * otherwise.
 */
int http_sleep(struct http_conn *c, long ms, long long until);
/*
 * Sends one request and reads the response head into *r. headers are extra header lines,
 * each ending "\r\n" (NULL for none); Host, User-Agent and, when body is not NULL,
 * Content-Length are added here. method and path are checked for bytes that would split the
 * request. Connects when needed; a reused connection that turns out closed before any response
 * byte is reconnected and the request sent once more (never after a deadline or a stop).
 * b bounds the request and the reading of its body (NULL: the defaults), and may gate it.
 * Returns 0 (then read the body with http_read until it returns 0), HTTP_GATED (nothing was
 * sent; the connection is kept), or -1 with c->err set.
 * Never follows a redirect: a 3xx is returned like any status.
 */
#define HTTP_GATED (-3)
int http_request(struct http_conn *c, const char *method, const char *path, const char *headers,
    const void *body, size_t bodylen, const struct http_bounds *b, struct http_response *r);
/* Reads up to n decoded body bytes. Returns the count, 0 at the end of the body, -1 on error. */
long http_read(struct http_conn *c, char *buf, size_t n);
/*
 * For a body that streams without end (a watch): reads up to n decoded bytes as http_read
 * does, but when nothing has arrived by until (monotonic ms), returns HTTP_IDLE and keeps the
 * connection as it is; so it does when what arrived was only framing (a chunk's line end, the
 * next chunk's size). Once bytes arrive, the TLS record they start must complete within
 * grace_ms (a fixed timer: clock_span applies), else the read fails: a peer that stalls
 * mid-record is a broken stream. The whole response's limit still holds.
 * Returns the count, 0 at the end of the body, HTTP_IDLE, or -1 (c->err).
 */
#define HTTP_IDLE (-2)
long http_read_wait(struct http_conn *c, char *buf, size_t n, int64_t until, long grace_ms);
/* Reads and drops the rest of a body (up to a bound) so the connection can be reused, else closes. */
void http_discard(struct http_conn *c);
void http_close(struct http_conn *c);

#endif
