/*
 * The plain HTTP listener for /metrics, /livez and /readyz, on its own thread so that a slow
 * list or a Retry-After wait of the loop never delays a scrape or a probe, and a flood of
 * clients never delays a pass. Fixed memory: LISTEN_CONNS connections of LISTEN_HEAD_MAX bytes.
 */
#ifndef LISTEN_H
#define LISTEN_H

#include <stddef.h>
#include <sys/socket.h>
#include "metrics.h"

#define LISTEN_CONNS 16          /* connections served at once; a new one evicts the oldest */
#define LISTEN_HEAD_MAX 2048     /* bytes of a request head; more gets 431 */
#define LISTEN_READ_MS 1000      /* a connection's whole request must arrive within this */
#define LISTEN_ADDR_MAX 64       /* bytes of an address setting */

/* What a request head asks for, once it says enough. */
enum listen_verdict {
	LISTEN_MORE,        /* not complete yet, nothing wrong so far: read on */
	LISTEN_METRICS,     /* GET /metrics */
	LISTEN_LIVEZ,       /* GET /livez */
	LISTEN_READYZ,      /* GET /readyz */
	LISTEN_BAD,         /* not an HTTP/1.x request head: 400 */
	LISTEN_METHOD,      /* a method other than GET: 405 */
	LISTEN_NOT_FOUND,   /* another path: 404 */
	LISTEN_TOO_LARGE    /* no end of the head within LISTEN_HEAD_MAX bytes: 431 */
};

/*
 * Reads the request head received so far, buf[0..len) (len <= LISTEN_HEAD_MAX). Pure. Garbage
 * is told as soon as a byte cannot belong to a request line, so it gets its 400 at once.
 * A query ("/livez?verbose") is allowed and ignored.
 */
enum listen_verdict listen_request(const char *buf, size_t len);

/*
 * Reads an address setting: ":PORT" (every address, IPv6 and IPv4 where the host has both),
 * "IPv4:PORT" or "[IPv6]:PORT"; numbers only, never a host name (nothing here resolves
 * names). Port 1 to 65535. Fills *sa and *salen; *any is set for ":PORT". Returns 0, or -1
 * with one line in err.
 */
int listen_addr(const char *addr, struct sockaddr_storage *sa, socklen_t *salen, int *any, char *err,
    size_t errlen);

/*
 * A whole response into out[0..cap): the status line (its reason from the status), Content-Type
 * ctype, Content-Length, the header lines extra ("" none; each ends with "\r\n"), Connection:
 * close, then body[0..len). Its length, or -1 when it does not fit. The listener's own answers
 * and its routes' are all written by it.
 */
#define LISTEN_PLAIN "text/plain; charset=utf-8"
int listen_response(char *out, size_t cap, int status, const char *ctype, const char *extra, const char *body,
    size_t len);

/* One client: its socket, when it was accepted, and the head read so far. */
struct listen_conn {
	int fd;                        /* -1: free */
	long long since;               /* clock_ms() at accept */
	size_t n;
	char head[LISTEN_HEAD_MAX];
};

/*
 * A route of the listener's owner (the fence agent's peers and metrics): asked first, on the
 * listener's thread, for every complete GET, with its head[0..len); writes a whole response
 * (status line, headers, body) into out[0..cap) and returns its length, or returns -1 for the
 * listener's own routes. It may take a bounded time (a request to the API server): meanwhile
 * nothing else is served.
 */
typedef int (*listen_route_fn)(void *ctx, const char *head, size_t len, char *out, size_t cap);

/* The listener: its socket, its clients, what it renders and sends. Once started, its thread
 * alone touches it. About 66 KB: its owner allocates it once. Its fields are listen.c's alone,
 * but route and route_ctx, which its owner may set before listen_start. */
struct listener {
	listen_route_fn route;
	void *route_ctx;
	int fd;
	struct listen_conn conns[LISTEN_CONNS];
	char body[METRICS_TEXT_MAX];
	char out[METRICS_TEXT_MAX + 256];
};

/*
 * Binds addr and starts the listener's thread on ls (detached; the process ends it by exiting;
 * ls must live as long). The thread reads the metrics and probes through metrics.h only. Call
 * once, after metrics_init, before anything else starts threads. Returns 0, or -1 with one line
 * in err (a bad address, or one that cannot be bound).
 */
int listen_start(struct listener *ls, const char *addr, char *err, size_t errlen);

#endif
