/*
 * HTTP/1.1 over tls.c: connecting, sending requests, and reading responses through the parser
 * (http_parse.c). Every wait is bounded by its phase's deadline on the
 * monotonic clock and sliced so a stop flag is seen within HTTP_WAIT_SLICE_MS. The caller owns
 * every buffer; nothing here allocates. Redirects are never followed, and nothing here knows
 * about Kubernetes or media types.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "http.h"
#include "text.h"

/* ---- The connection ---- */

/* c->err says why; -1 */

int http_init(struct http_conn *c, const struct tls_creds *creds, const char *host, const char *port,
    const char *verify_name)
{
	static const long limits[HTTP_PHASES] = { HTTP_CONNECT_MS, HTTP_HANDSHAKE_MS, HTTP_HEAD_MS, HTTP_RESPONSE_MS };
	size_t hl = strlen(host);
	const char *vn;
	int n;

	memset(c, 0, sizeof *c);
	c->fd = -1;
	memcpy(c->limit_ms, limits, sizeof limits);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof c->host)
		return TEXT_FAIL(c, "server host name is empty or longer than %zu bytes", sizeof c->host - 1);
	memcpy(c->host, host, hl);
	c->host[hl] = 0;
	if (port == NULL || *port == 0 || strlen(port) >= sizeof c->port || strspn(port, "0123456789") != strlen(port))
		return TEXT_FAIL(c, "server port is not a number");
	strcpy(c->port, port);
	n = snprintf(c->where, sizeof c->where, strchr(c->host, ':') ? "[%s]:%s" : "%s:%s", c->host, c->port);
	if (n < 0 || (size_t)n >= sizeof c->where)
		return TEXT_FAIL(c, "server address is too long");
	vn = verify_name && *verify_name ? verify_name : c->host;
	if (tls_client_init(&c->tls, creds, vn) < 0)
		return TEXT_FAIL(c, "TLS server name is longer than %d bytes", TLS_NAME_MAX - 1);
	return 0;
}

void http_deadline(struct http_conn *c, enum http_phase ph, long ms)
{
	c->limit_ms[ph] = ms;
}

/* Starts phase ph, begun at start: it ends after its own limit, or at cap or c->until if sooner. */
static void enter(struct http_conn *c, enum http_phase ph, long long start, long long cap)
{
	long long end = start + clock_span(c->limit_ms[ph]);

	c->by_until = 0;
	if (cap && cap < end)
		end = cap;
	if (c->until && c->until <= end) {
		end = c->until;
		c->by_until = 1;
	}
	c->phase = ph;
	c->phase_end = end;
	c->phase_ms = end > start ? end - start : 0;
}

static int stop_seen(struct http_conn *c)
{
	if (c->stop == NULL || !*c->stop)
		return 0;
	c->stopped = 1;
	return 1;
}

/* Waits until fd is ready or the phase is over, a slice at a time: 1, or -1 (why in c). */
static int wait_fd(struct http_conn *c, int fd, short ev)
{
	for (;;) {
		struct pollfd pf = { fd, ev, 0 };
		long long left = c->phase_end - clock_ms();
		int n;

		if (stop_seen(c))
			return -1;
		if (left <= 0) {
			c->expired = 1;
			return -1;
		}
		n = poll(&pf, 1, left > HTTP_WAIT_SLICE_MS ? HTTP_WAIT_SLICE_MS : (int)left);
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR) {
			c->io_errno = errno;
			return -1;
		}
	}
}

int http_sleep(struct http_conn *c, long ms, long long until)
{
	long long end = clock_ms() + ms;

	c->stopped = c->expired = 0;
	if (until && end > until) {
		c->expired = 1;
		return TEXT_FAIL(c, "waiting %lds more would pass the deadline", (ms + 999) / 1000);
	}
	for (;;) {
		long long left = end - clock_ms();
		if (stop_seen(c))
			return TEXT_FAIL(c, "stopped while waiting");
		if (left <= 0)
			return 0;
		poll(NULL, 0, left > HTTP_WAIT_SLICE_MS ? HTTP_WAIT_SLICE_MS : (int)left);
	}
}

static int sock_read(void *ctx, unsigned char *buf, size_t len)
{
	struct http_conn *c = ctx;

	for (;;) {
		if (stop_seen(c))
			return -1;
		ssize_t n = recv(c->fd, buf, len, 0);
		if (n > 0) {
			/* kept to tell a plain-HTTP server from a broken TLS one */
			for (size_t i = 0; i < (size_t)n && c->nfirst < sizeof c->first; i++)
				c->first[c->nfirst++] = buf[i];
			return (int)n;
		}
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
		if (wait_fd(c, c->fd, POLLIN) < 0)
			return -1;
	}
}

static int sock_write(void *ctx, const unsigned char *buf, size_t len)
{
	struct http_conn *c = ctx;

	for (;;) {
		if (stop_seen(c))
			return -1;
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
		if (wait_fd(c, c->fd, POLLOUT) < 0)
			return -1;
	}
}

/*
 * The last failure as c->err, one line: a stop, a deadline (naming the phase and its limit),
 * TLS's words, or the socket's. doing: what was being done ("reading response from").
 */
static int io_reason(struct http_conn *c, const char *doing)
{
	static const char *const phases[HTTP_PHASES] = {
		"connect to", "handshake with", "response head from", "response from"
	};
	char b[200];
	const char *why;
	long long ms = c->phase_ms;

	if (c->stopped)
		return TEXT_FAIL(c, "%s %s: stopped", doing, c->where);
	if (c->expired) {
		if (c->by_until)
			return TEXT_FAIL(c, "%s %s not done when the caller's deadline passed", phases[c->phase], c->where);
		if (ms % 1000 == 0)
			return TEXT_FAIL(c, "%s %s not done after %llds", phases[c->phase], c->where, ms / 1000);
		return TEXT_FAIL(c, "%s %s not done after %lldms", phases[c->phase], c->where, ms);
	}
	if (c->nfirst == sizeof c->first && memcmp(c->first, "HTTP/", 5) == 0 && c->phase == HTTP_HANDSHAKE) {
		c->permanent = 1;
		return TEXT_FAIL(c, "%s %s: the server answered in plain HTTP, not TLS", doing, c->where);
	}
	if ((why = tls_reason(&c->tls, b, sizeof b)) != NULL)
		return TEXT_FAIL(c, "%s %s: %s", doing, c->where, why);
	if (c->io_errno && c->io_errno != EPIPE && c->io_errno != ECONNRESET)
		return TEXT_FAIL(c, "%s %s: %s", doing, c->where, strerror(c->io_errno));
	return TEXT_FAIL(c, "%s %s: connection closed by the server", doing, c->where);
}

static int tcp_connect(struct http_conn *c)
{
	struct addrinfo hints, *res, *ai;
	int e, fd = -1, why = 0;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	e = getaddrinfo(c->host, c->port, &hints, &res);
	if (e == EAI_NONAME) {
		hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
		e = getaddrinfo(c->host, c->port, &hints, &res);
	}
	if (e != 0)
		return TEXT_FAIL(c, "connect to %s: cannot resolve %s: %s", c->where, c->host, gai_strerror(e));
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
			int w = wait_fd(c, fd, POLLOUT);
			if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
				break;
			why = w > 0 ? err : c->io_errno;
		} else {
			why = errno;
		}
		close(fd);
		fd = -1;
		/* every address shares the one connect deadline */
		if (c->stopped || c->expired)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		if (c->stopped || c->expired)
			return io_reason(c, "connect to");
		return TEXT_FAIL(c, "connect to %s: %s", c->where, strerror(why ? why : ECONNREFUSED));
	}
	/* a request goes out in one flush; Nagle would only delay it */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	c->fd = fd;
	return 0;
}

static int open_conn(struct http_conn *c)
{
	c->io_eof = c->io_errno = 0;
	c->nfirst = 0;
	enter(c, HTTP_CONNECT, clock_ms(), 0);
	if (tcp_connect(c) < 0)
		return -1;
	enter(c, HTTP_HANDSHAKE, clock_ms(), 0);
	if (tls_client_reset(&c->tls) < 0) {
		io_reason(c, "TLS handshake with");
		http_close(c);
		return -1;
	}
	br_sslio_init(&c->io, &c->tls.sc.eng, sock_read, c, sock_write, c);
	/* a flush with nothing to send runs the handshake, so its errors are named as such */
	if (br_sslio_flush(&c->io) < 0) {
		int e = br_ssl_engine_last_error(&c->tls.sc.eng);
		/* the network failing may pass; a refused certificate or protocol will not */
		c->permanent = e != BR_ERR_IO && e != BR_ERR_OK;
		io_reason(c, "TLS handshake with");
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
	unsigned st = br_ssl_engine_current_state(&c->tls.sc.eng);

	if ((st & BR_SSL_CLOSED) || (st & BR_SSL_RECVAPP) || c->rpos != c->rlen)
		return 1;
	return poll(&pf, 1, 0) != 0;
}

static int check_request(struct http_conn *c, const char *method, const char *path, const char *headers)
{
	const char *s;

	if (*method == 0)
		return TEXT_FAIL(c, "request to %s: empty method", c->where);
	for (s = method; *s; s++)
		if (!http_tchar((unsigned char)*s))
			return TEXT_FAIL(c, "request to %s: bad method", c->where);
	if (path[0] != '/')
		return TEXT_FAIL(c, "request to %s: path does not start with /", c->where);
	for (s = path; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return TEXT_FAIL(c, "request to %s: path holds a space or control byte", c->where);
	if (headers == NULL || *headers == 0)
		return 0;
	/* each line ends "\r\n"; no bare CR or LF that would split the request */
	for (s = headers; *s; s++) {
		if ((*s == '\r' && s[1] != '\n') || (*s == '\n' && (s == headers || s[-1] != '\r')))
			return TEXT_FAIL(c, "request to %s: header lines must end with CRLF", c->where);
		if (*s == '\n' && s[1] == '\r')
			return TEXT_FAIL(c, "request to %s: empty header line", c->where);
	}
	if (s[-1] != '\n')
		return TEXT_FAIL(c, "request to %s: header lines must end with CRLF", c->where);
	return 0;
}

static int send_all(struct http_conn *c, const void *b, size_t n)
{
	return n == 0 ? 0 : br_sslio_write_all(&c->io, b, n);
}

static int puts_(struct http_conn *c, const char *s)
{
	return send_all(c, s, strlen(s));
}

static int send_request(struct http_conn *c, const char *method, const char *path, const char *headers,
    const void *body, size_t bodylen)
{
	char cl[48];

	if (puts_(c, method) < 0 || puts_(c, " ") < 0 || puts_(c, path) < 0 ||
	    puts_(c, " HTTP/1.1\r\nHost: ") < 0 || puts_(c, c->where) < 0 ||
	    puts_(c, "\r\nUser-Agent: noderecover\r\n") < 0 ||
	    (headers && puts_(c, headers) < 0))
		return -1;
	if (body != NULL) {
		snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", bodylen);
		if (puts_(c, cl) < 0)
			return -1;
	}
	if (puts_(c, "\r\n") < 0 || (body != NULL && send_all(c, body, bodylen) < 0))
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
    const void *body, size_t bodylen, const struct http_bounds *b, struct http_response *r)
{
	c->permanent = 1;
	c->stopped = c->expired = 0;
	if (check_request(c, method, path, headers) < 0)
		return -1;
	c->permanent = 0;
	if (c->in_body)
		http_discard(c);
	/* this request's own bounds, whatever the one before had */
	c->limit_ms[HTTP_RESPONSE] = b ? b->response_ms : HTTP_RESPONSE_MS;
	c->until = b ? b->until : 0;
	c->stopped = c->expired = 0;
	for (int attempt = 0;; attempt++) {
		int reused = c->fd >= 0, e = HEAD_IO, sent;
		long long start;

		if (reused && stale(c)) {
			http_close(c);
			reused = 0;
		}
		if (c->fd < 0 && open_conn(c) < 0)
			return -1;
		c->io_eof = c->io_errno = 0;
		c->got_byte = 0;
		c->rpos = c->rlen = 0;
		http_parser_init(&c->parser);
		if (b && b->gate && !b->gate(b->gate_ctx)) {
			TEXT_FAIL(c, "not sent to %s: its gate closed", c->where);
			return HTTP_GATED;
		}
		start = clock_ms();
		enter(c, HTTP_RESPONSE, start, 0);
		c->response_end = c->phase_end;
		c->response_ms = c->phase_ms;
		c->response_by_until = c->by_until;
		enter(c, HTTP_HEAD, start, c->response_end);
		sent = send_request(c, method, path, headers, body, bodylen) == 0;
		if (sent)
			e = read_head(c);
		if (e == HEAD_OK)
			break;
		/* a kept-alive connection the server closed while idle: once more on a new one */
		if (reused && attempt == 0 && !c->got_byte && !c->expired && !c->stopped) {
			http_close(c);
			continue;
		}
		if (e == HEAD_BAD) {
			/* a server that answers garbage is not fixed by asking again */
			c->permanent = 1;
			TEXT_FAIL(c, "response from %s: %s", c->where, c->parser.why);
		} else {
			io_reason(c, sent ? "reading response from" : "sending request to");
		}
		http_close(c);
		return -1;
	}
	*r = c->parser.r;
	c->in_body = 1;
	c->phase = HTTP_RESPONSE;
	c->phase_end = c->response_end;
	c->phase_ms = c->response_ms;
	c->by_until = c->response_by_until;
	if (c->parser.done)
		body_done(c);
	return 0;
}

/* A fill failed while a body was read: 0 when that cleanly ends the body, else -1 (why in c). */
static long fill_failed(struct http_conn *c)
{
	int clean = br_ssl_engine_last_error(&c->tls.sc.eng) == BR_ERR_OK;

	/* without close_notify an end-of-connection body may have been cut by anyone */
	if (clean && http_parse_eof(&c->parser) == 1) {
		body_done(c);
		return 0;
	}
	if (c->stopped || c->expired)
		io_reason(c, "reading response from");
	else if (http_parse_to_close(&c->parser) && c->io_eof)
		TEXT_FAIL(c, "reading response from %s: connection closed without TLS close_notify; the body may be cut",
		    c->where);
	else if (c->io_eof || clean)
		TEXT_FAIL(c, "reading response from %s: connection closed before the end of the body", c->where);
	else
		io_reason(c, "reading response from");
	http_close(c);
	return -1;
}

/*
 * Decodes what rbuf holds into buf: the count, or 0 with *more set when only framing was
 * there (more bytes are needed), 0 at the end of the body, -1 (why in c).
 */
static long decode_body(struct http_conn *c, char *buf, size_t n, int *more)
{
	size_t used, outlen;
	int e = http_parse_body(&c->parser, c->rbuf + c->rpos, c->rlen - c->rpos, &used, buf, n, &outlen);

	c->rpos += used;
	*more = 0;
	if (e < 0) {
		TEXT_FAIL(c, "response from %s: %s", c->where, c->parser.why);
		http_close(c);
		return -1;
	}
	if (e == 1)
		body_done(c);
	*more = outlen == 0 && e != 1;
	return (long)outlen;
}

long http_read(struct http_conn *c, char *buf, size_t n)
{
	if (!c->in_body)
		return 0;
	if (n == 0)
		return TEXT_FAIL(c, "reading response from %s: no room given", c->where);
	for (;;) {
		int more;
		long got;

		if (c->rpos == c->rlen && fill(c) < 0)
			return fill_failed(c);
		got = decode_body(c, buf, n, &more);
		if (!more)
			return got;
	}
}

long http_read_wait(struct http_conn *c, char *buf, size_t n, int64_t until, long grace_ms)
{
	long long save_end, save_ms;
	int save_by, more;
	long got;

	if (!c->in_body)
		return 0;
	if (n == 0)
		return TEXT_FAIL(c, "reading response from %s: no room given", c->where);
	c->stopped = c->expired = 0;
again:
	/* nothing decoded or decrypted at hand: wait for the socket, without failing at until */
	while (c->rpos == c->rlen && !(br_ssl_engine_current_state(&c->tls.sc.eng) & BR_SSL_RECVAPP)) {
		struct pollfd pf = { c->fd, POLLIN, 0 };
		int64_t now = clock_ms(), left = until - now;
		int r;

		if (stop_seen(c)) {
			TEXT_FAIL(c, "reading response from %s: stopped", c->where);
			http_close(c);
			return -1;
		}
		if (left <= 0)
			return HTTP_IDLE;
		if (now >= c->response_end) {
			c->expired = 1;
			io_reason(c, "reading response from");
			http_close(c);
			return -1;
		}
		if (left > c->response_end - now)
			left = c->response_end - now;
		r = poll(&pf, 1, left > HTTP_WAIT_SLICE_MS ? HTTP_WAIT_SLICE_MS : (int)left);
		if (r > 0)
			break;
		if (r < 0 && errno != EINTR) {
			c->io_errno = errno;
			io_reason(c, "reading response from");
			http_close(c);
			return -1;
		}
	}
	/* bytes are arriving: the record they start must come within grace_ms */
	if (c->rpos == c->rlen) {
		int r;
		save_end = c->phase_end;
		save_ms = c->phase_ms;
		save_by = c->by_until;
		if (clock_after(grace_ms) < c->phase_end) {
			c->phase_end = clock_after(grace_ms);
			c->phase_ms = clock_span(grace_ms);
			c->by_until = 0;
		}
		/* a failure is said with the grace it had, then the response's bounds come back */
		if ((r = fill(c)) < 0)
			return fill_failed(c);
		c->phase_end = save_end;
		c->phase_ms = save_ms;
		c->by_until = save_by;
	}
	/* only framing (a chunk's line end, its next size) decoded: wait again, as for nothing */
	got = decode_body(c, buf, n, &more);
	if (more)
		goto again;
	return got;
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
