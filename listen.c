/*
 * The listener for /metrics, /livez and /readyz: plain HTTP/1.1 on the operator's address, GET
 * only, one request per connection, on a thread of its own that waits in poll() and nowhere
 * else. Owns its socket, LISTEN_CONNS connection slots and two buffers, all fixed; a flood of
 * idle, slow or garbage clients costs no memory and no time of the loop: past LISTEN_CONNS the
 * oldest connection is dropped, and none lives past LISTEN_READ_MS. Reads the loop's state only
 * through metrics.h; never touches the API connection, the pass, or a node.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "json.h"
#include "listen.h"
#include "metrics.h"
#include "text.h"

#define ACCEPT_BURST 64          /* connections taken from the backlog per round */
#define SNDBUF (64 * 1024)       /* a whole response fits the socket at once: no write waits */
#define STACK (64 * 1024 + JSON_POOL_BYTES) /* the thread's stack: poll, one snprintf, no recursion */
#define ROUTE_STACK (256 * 1024 + JSON_POOL_BYTES) /* with a route: an API request (kube.c's buffers, a TLS handshake) */
/* A new connection is never evicted before it has had this long to send its request: else a
 * flood of connections could evict a scraper between its accept and its first bytes. Full
 * slots none of which is that old leave new connections in the kernel's backlog meanwhile. */
#define GRACE_MS 25

static enum listen_verdict more_or_large(size_t len)
{
	return len >= LISTEN_HEAD_MAX ? LISTEN_TOO_LARGE : LISTEN_MORE;
}

enum listen_verdict listen_request(const char *buf, size_t len)
{
	static const char version[] = "HTTP/1.";
	size_t i = 0, method, t0, t1, p;

	/* the request line: METHOD SP target SP HTTP/1.x CRLF (or LF), checked byte by byte */
	while (i < len && i < 16 && buf[i] >= 'A' && buf[i] <= 'Z')
		i++;
	if (i == len)
		return more_or_large(len);
	if (i == 0 || buf[i] != ' ')
		return LISTEN_BAD;
	method = i++;
	t0 = i;
	while (i < len && buf[i] > 0x20 && buf[i] < 0x7f)
		i++;
	if (i == len)
		return more_or_large(len);
	if (i == t0 || buf[i] != ' ')
		return LISTEN_BAD;
	t1 = i++;
	for (size_t k = 0; k < sizeof version - 1; k++, i++) {
		if (i == len)
			return more_or_large(len);
		if (buf[i] != version[k])
			return LISTEN_BAD;
	}
	if (i == len)
		return more_or_large(len);
	if (buf[i] != '0' && buf[i] != '1')
		return LISTEN_BAD;
	i++;
	/* then header lines NAME: value, up to an empty line; no folding, no control bytes */
	for (int first = 1;; first = 0) {
		size_t l0 = i, e;
		int colon = 0;
		for (; i < len && buf[i] != '\n'; i++) {
			unsigned char c = (unsigned char)buf[i];
			if (c == ':')
				colon = 1;
			else if (c == '\r' && i + 1 < len && buf[i + 1] != '\n')
				return LISTEN_BAD;
			else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
				return LISTEN_BAD;
		}
		if (i == len)
			return more_or_large(len);
		e = i > l0 && buf[i - 1] == '\r' ? i - 1 : i;
		i++;
		if (first) {            /* the rest of the request line: nothing after the version */
			if (e != l0)
				return LISTEN_BAD;
			continue;
		}
		if (e == l0)
			break;
		if (!colon || buf[l0] == ' ' || buf[l0] == '\t' || buf[l0] == ':')
			return LISTEN_BAD;
	}
	if (method != 3 || memcmp(buf, "GET", 3) != 0)
		return LISTEN_METHOD;
	if (buf[t0] != '/')
		return LISTEN_BAD;
	for (p = t0; p < t1 && buf[p] != '?'; p++)
		;
#define IS(s) (p - t0 == sizeof s - 1 && memcmp(buf + t0, s, sizeof s - 1) == 0)
	if (IS("/metrics"))
		return LISTEN_METRICS;
	if (IS("/livez"))
		return LISTEN_LIVEZ;
	if (IS("/readyz"))
		return LISTEN_READYZ;
#undef IS
	return LISTEN_NOT_FOUND;
}

/* A port: 1 to 65535, digits only. */
static int port_of(const char *s, unsigned short *port)
{
	int64_t v;

	if (text_decimal(s, strlen(s), 65535, &v) < 0 || v == 0)
		return -1;
	*port = (unsigned short)v;
	return 0;
}

int listen_addr(const char *addr, struct sockaddr_storage *sa, socklen_t *salen, int *any, char *err,
    size_t errlen)
{
	char host[LISTEN_ADDR_MAX + 1];
	const char *colon, *h0 = addr, *h1;
	unsigned short port;

	memset(sa, 0, sizeof *sa);
	*any = 0;
	if (strlen(addr) > LISTEN_ADDR_MAX)
		goto bad;
	if (addr[0] == '[') {
		h0 = addr + 1;
		if (!(h1 = strchr(h0, ']')) || h1[1] != ':')
			goto bad;
		colon = h1 + 1;
	} else {
		if (!(colon = strrchr(addr, ':')))
			goto bad;
		h1 = colon;
	}
	if (port_of(colon + 1, &port) < 0)
		goto bad;
	memcpy(host, h0, (size_t)(h1 - h0));
	host[h1 - h0] = '\0';
	if (addr[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			goto bad;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*salen = sizeof *s6;
	} else if (host[0] == '\0') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons(port);
		*salen = sizeof *s6;
		*any = 1;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			goto bad;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*salen = sizeof *s4;
	}
	return 0;
bad:
	return text_fail(err, errlen, "'%.80s' is not :PORT, IPv4:PORT or [IPv6]:PORT with a port from 1 to 65535 (no host names)",
	    addr);
}

/* Drops a connection: what the client sent and nobody read is drained first (a bounded
 * amount), so the close is a FIN after our answer and not a reset that could eat it. */
static void drop(struct listen_conn *c)
{
	char scratch[512];

	for (int i = 0; i < 8 && recv(c->fd, scratch, sizeof scratch, MSG_DONTWAIT) > 0; i++)
		;
	close(c->fd);
	c->fd = -1;
	c->n = 0;
}

/* The reason phrase of each status the listener and its routes answer with. */
static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

int listen_response(char *out, size_t cap, int status, const char *ctype, const char *extra, const char *body,
    size_t len)
{
	int n = snprintf(out, cap, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
	    status, reason(status), ctype, len, extra);

	if (n < 0 || (size_t)n + len >= cap)
		return -1;
	memcpy(out + n, body, len);
	out[n + len] = '\0';
	return n + (int)len;
}

/* Sends one whole response at once, never waiting: the socket's buffer holds it (SNDBUF). A
 * client whose window is shut gets a short body, which Content-Length tells it. */
static void respond(struct listener *ls, struct listen_conn *c, int status, const char *ctype, const char *extra,
    const char *text, size_t len)
{
	int n = listen_response(ls->out, sizeof ls->out, status, ctype, extra, text, len);

	if (n < 0 || send(c->fd, ls->out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return;
}

/* Answers a complete request (or a refused one) and closes the connection. */
static void answer(struct listener *ls, struct listen_conn *c, enum listen_verdict v)
{
	static const char plain[] = LISTEN_PLAIN;
	char why[256];
	int n, ok;

	if (ls->route && (v == LISTEN_METRICS || v == LISTEN_LIVEZ || v == LISTEN_READYZ || v == LISTEN_NOT_FOUND) &&
	    (n = ls->route(ls->route_ctx, c->head, c->n, ls->out, sizeof ls->out)) >= 0) {
		send(c->fd, ls->out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
		drop(c);
		return;
	}
	switch (v) {
	case LISTEN_METRICS:
		if ((n = metrics_render(clock_ms() / 1000, ls->body, sizeof ls->body)) < 0)
			respond(ls, c, 500, plain, "", "metrics do not fit\n", 19);
		else
			respond(ls, c, 200, METRICS_CONTENT_TYPE, "", ls->body, (size_t)n);
		break;
	case LISTEN_LIVEZ:
	case LISTEN_READYZ:
		ok = v == LISTEN_LIVEZ ? metrics_live(clock_ms() / 1000, why, sizeof why) : metrics_ready(clock_ms() / 1000, why, sizeof why);
		n = snprintf(ls->body, sizeof ls->body, "%s\n", why);
		respond(ls, c, ok ? 200 : 503, plain, "", ls->body, (size_t)n);
		break;
	case LISTEN_METHOD:
		respond(ls, c, 405, plain, "Allow: GET\r\n", "only GET\n", 9);
		break;
	case LISTEN_NOT_FOUND:
		respond(ls, c, 404, plain, "", "/metrics, /livez or /readyz\n", 28);
		break;
	case LISTEN_TOO_LARGE:
		respond(ls, c, 431, plain, "", "request head too large\n", 23);
		break;
	case LISTEN_MORE:       /* the read deadline passed */
		respond(ls, c, 408, plain, "", "request not complete within 1s\n", 31);
		break;
	case LISTEN_BAD:
		respond(ls, c, 400, plain, "", "not an HTTP/1.x request\n", 24);
		break;
	}
	drop(c);
}

/* Reads what the client has sent; answers and closes once the head says enough, or on EOF. */
static void take(struct listener *ls, struct listen_conn *c)
{
	ssize_t got = recv(c->fd, c->head + c->n, sizeof c->head - c->n, MSG_DONTWAIT);
	enum listen_verdict v;

	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (got <= 0) {
		drop(c);
		return;
	}
	c->n += (size_t)got;
	if ((v = listen_request(c->head, c->n)) != LISTEN_MORE)
		answer(ls, c, v);
}

/* The slot a new connection may take now: a free one, else the oldest once it is GRACE_MS
 * old (still open: the caller drops it); NULL when there is none yet. */
static struct listen_conn *slot(struct listener *ls, long long now)
{
	struct listen_conn *conns = ls->conns, *old = &conns[0];

	for (int i = 0; i < LISTEN_CONNS; i++) {
		if (conns[i].fd < 0)
			return &conns[i];
		if (conns[i].since < old->since)
			old = &conns[i];
	}
	return now - old->since >= GRACE_MS ? old : NULL;
}

static void accept_some(struct listener *ls, long long now)
{
	for (int i = 0; i < ACCEPT_BURST; i++) {
		struct listen_conn *c = slot(ls, now);
		int fd, size = SNDBUF;

		if (!c)
			return;     /* the rest wait in the backlog until a slot may be taken */
		/* blocking or not makes no difference: every recv and send here says MSG_DONTWAIT */
		fd = accept(ls->fd, NULL, NULL);
		/* out of descriptors: free one, so the backlog moves on next round */
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && c->fd >= 0)
			drop(c);
		if (fd < 0)
			return;
		if (c->fd >= 0)
			drop(c);
		/* never handed to an exec credential plugin the main thread starts (plugin.c) */
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
		c->fd = fd;
		c->since = now;
		c->n = 0;
		/* a scraper sends its request with the connection: answered at once, the slot is free again */
		take(ls, c);
	}
}

static void *serve(void *arg)
{
	struct listener *ls = arg;
	struct listen_conn *conns = ls->conns;
	struct pollfd pf[1 + LISTEN_CONNS];
	int at[1 + LISTEN_CONNS];

	for (;;) {
		long long now = clock_ms(), wait = LISTEN_READ_MS, oldest = now;
		int n = 1;

		for (int i = 0; i < LISTEN_CONNS; i++) {
			if (conns[i].fd < 0)
				continue;
			if (conns[i].since + LISTEN_READ_MS - now < wait)
				wait = conns[i].since + LISTEN_READ_MS - now;
			if (conns[i].since < oldest)
				oldest = conns[i].since;
			at[n] = i;
			pf[n++] = (struct pollfd){ conns[i].fd, POLLIN, 0 };
		}
		/* with no slot to give, new connections wait in the backlog: not polled until one is */
		pf[0] = (struct pollfd){ ls->fd, slot(ls, now) ? POLLIN : 0, 0 };
		if (!pf[0].events && oldest + GRACE_MS - now < wait)
			wait = oldest + GRACE_MS - now;
		if (poll(pf, (nfds_t)n, wait > 0 ? (int)wait : 0) < 0 && errno != EINTR) {
			poll(NULL, 0, 100);   /* not expected (ENOMEM): try again shortly, never spin */
			continue;
		}
		now = clock_ms();
		for (int j = 1; j < n; j++) {
			struct listen_conn *c = &conns[at[j]];
			if (c->fd >= 0 && pf[j].revents)
				take(ls, c);
			if (c->fd >= 0 && now - c->since >= LISTEN_READ_MS)
				answer(ls, c, LISTEN_MORE);
		}
		if (pf[0].revents)
			accept_some(ls, now);
	}
	return NULL;
}

int listen_start(struct listener *ls, const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage sa;
	socklen_t salen;
	pthread_attr_t attr;
	pthread_t th;
	sigset_t all, old;
	int any, one = 1, zero = 0, r;

	if (listen_addr(addr, &sa, &salen, &any, err, errlen) < 0)
		return text_fail(err, errlen, "listen address %.80s is not :PORT, IPv4:PORT or [IPv6]:PORT", addr);
	ls->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ls->fd < 0 && any && (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT)) {
		/* a host without IPv6: every IPv4 address then */
		struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
		in_port_t port = ((struct sockaddr_in6 *)&sa)->sin6_port;
		memset(&sa, 0, sizeof sa);
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		s4->sin_port = port;
		salen = sizeof *s4;
		ls->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	}
	if (ls->fd < 0)
		return text_fail(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
	setsockopt(ls->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (any && sa.ss_family == AF_INET6)
		setsockopt(ls->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
	if (bind(ls->fd, (struct sockaddr *)&sa, salen) < 0 || listen(ls->fd, SOMAXCONN) < 0) {
		text_fail(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
		close(ls->fd);
		ls->fd = -1;
		return -1;
	}
	for (int i = 0; i < LISTEN_CONNS; i++)
		ls->conns[i].fd = -1;
	/* the loop's thread keeps the signals: SIGTERM must stop it, not this one */
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, ls->route ? ROUTE_STACK : STACK);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&th, &attr, serve, ls);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		close(ls->fd);
		ls->fd = -1;
		return text_fail(err, errlen, "cannot start the listener's thread: %s", strerror(r));
	}
	return 0;
}
