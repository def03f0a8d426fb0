/*
 * The peer protocol (peer.h): signatures with BearSSL's HMAC-SHA256, the request and the
 * answer as docs/fence.md writes them, and a plain-HTTP client of non-blocking sockets polled
 * together under one deadline. Never allocates, never logs, never holds the secret but in its
 * HMAC key.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include "clock.h"
#include "listen.h"
#include "peer.h"

static const char hex[] = "0123456789abcdef";

static void to_hex(const unsigned char *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = '\0';
}

void peer_key(struct peer_key *k, const void *secret, size_t n)
{
	br_hmac_key_init(&k->k, &br_sha256_vtable, secret, n);
}

/* HMAC-SHA256 of a "\n" b "\n" c[0..cn) in hex into sig. */
static void sign(const struct peer_key *k, const char *a, const char *b, const char *c, size_t cn, char *sig)
{
	br_hmac_context h;
	unsigned char out[32];

	br_hmac_init(&h, &k->k, 0);
	br_hmac_update(&h, a, strlen(a));
	br_hmac_update(&h, "\n", 1);
	br_hmac_update(&h, b, strlen(b));
	br_hmac_update(&h, "\n", 1);
	br_hmac_update(&h, c, cn);
	br_hmac_out(&h, out);
	to_hex(out, sizeof out, sig);
}

void peer_sign_request(const struct peer_key *k, const char *node, const char *nonce, char *sig)
{
	sign(k, "req", node, nonce, strlen(nonce), sig);
}

void peer_sign_answer(const struct peer_key *k, const char *nonce, const char *body, size_t n, char *sig)
{
	sign(k, "resp", nonce, body, n, sig);
}

int peer_same(const char *a, const char *b, size_t n)
{
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

int peer_nonce(char *nonce)
{
	unsigned char r[PEER_NONCE_LEN / 2];
	size_t got = 0;

	while (got < sizeof r) {
		ssize_t k = getrandom(r + got, sizeof r - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			/* a kernel without getrandom: /dev/urandom */
			int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
			k = fd < 0 ? -1 : read(fd, r + got, sizeof r - got);
			if (fd >= 0)
				close(fd);
			if (k <= 0)
				return -1;
		}
		got += (size_t)k;
	}
	to_hex(r, sizeof r, nonce);
	return 0;
}

int peer_body(char *out, size_t cap, int api, int requested)
{
	return snprintf(out, cap, "{\"api\":%s,\"requested\":%s}", api ? "true" : "false", api && requested ? "true" : "false");
}

int peer_parse_body(const char *body, size_t n, int *api, int *requested)
{
	char b[64];

	/* the three bodies peer_body writes, and nothing else */
	for (int i = 0; i < 3; i++) {
		int len = peer_body(b, sizeof b, i > 0, i == 2);
		if ((size_t)len == n && memcmp(b, body, n) == 0) {
			*api = i > 0;
			*requested = i == 2;
			return 0;
		}
	}
	return -1;
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* The value of header name in head[0..len) (after the first line, up to the empty one), trimmed: 0, or -1 when absent. */
static int header(const char *head, size_t len, const char *name, const char **v, size_t *vn)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', len), *end = head + len;

	while (p && ++p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p)), *a, *b;
		size_t i;
		if (!e)
			e = end;
		b = e > p && e[-1] == '\r' ? e - 1 : e;
		if (b == p)
			return -1;   /* the empty line: the head's end */
		for (i = 0; i < nl && p + i < b && lower(p[i]) == lower(name[i]); i++)
			;
		if (i == nl && p + i < b && p[i] == ':') {
			for (a = p + i + 1; a < b && (*a == ' ' || *a == '\t'); a++)
				;
			while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
				b--;
			*v = a;
			*vn = (size_t)(b - a);
			return 0;
		}
		p = e;
	}
	return -1;
}

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(hex, s[i]) || !s[i])
			return 0;
	return 1;
}

/* One query parameter name=value at q[0..n) into out (cap), with its characters checked. */
static int param(const char *q, size_t n, const char *name, char *out, size_t cap, const char *chars)
{
	size_t nl = strlen(name);

	if (n <= nl + 1 || n - nl - 1 >= cap || memcmp(q, name, nl) != 0 || q[nl] != '=')
		return -1;
	for (size_t i = nl + 1; i < n; i++)
		if (!q[i] || !strchr(chars, q[i]))
			return -1;
	memcpy(out, q + nl + 1, n - nl - 1);
	out[n - nl - 1] = '\0';
	return 0;
}

int peer_request(const struct peer_key *k, const char *head, size_t len, char *node, char *nonce)
{
	static const char dns[] = "abcdefghijklmnopqrstuvwxyz0123456789-.";
	const char *t = head + 4, *te = len > 4 ? memchr(t, ' ', len - 4) : NULL, *q, *amp, *v;
	size_t plen = sizeof PEER_PATH - 1, vn;
	char sig[PEER_SIG_LEN + 1];

	/* PEER_PATH, PEER_PATH?... or PEER_PATH/...: ours; anything else another route's */
	if (!te || (size_t)(te - t) < plen || memcmp(t, PEER_PATH, plen) != 0 ||
	    (t + plen < te && t[plen] != '?' && t[plen] != '/'))
		return 0;
	if (t + plen == te || t[plen] != '?')
		return -1;
	q = t + plen + 1;
	if (q >= te || !(amp = memchr(q, '&', (size_t)(te - q))))
		return -1;
	/* node=...&nonce=... or nonce=...&node=..., nothing else */
	if (!((param(q, (size_t)(amp - q), "node", node, PEER_NODE_MAX + 1, dns) == 0 &&
	    param(amp + 1, (size_t)(te - amp - 1), "nonce", nonce, PEER_NONCE_LEN + 1, hex) == 0) ||
	    (param(q, (size_t)(amp - q), "nonce", nonce, PEER_NONCE_LEN + 1, hex) == 0 &&
	    param(amp + 1, (size_t)(te - amp - 1), "node", node, PEER_NODE_MAX + 1, dns) == 0)))
		return -1;
	if (strlen(nonce) != PEER_NONCE_LEN || node[0] == '.' || node[0] == '-')
		return -1;
	if (header(head, len, "Authorization", &v, &vn) < 0 || vn != sizeof PEER_SCHEME + PEER_SIG_LEN ||
	    memcmp(v, PEER_SCHEME " ", sizeof PEER_SCHEME) != 0)
		return -1;
	peer_sign_request(k, node, nonce, sig);
	return peer_same(v + sizeof PEER_SCHEME, sig, PEER_SIG_LEN) ? 1 : -1;
}

int peer_answer(const struct peer_key *k, const char *nonce, int api, int requested, char *out, size_t cap)
{
	char body[64], sig[PEER_SIG_LEN + 1], extra[sizeof PEER_HEADER + PEER_SIG_LEN + 8];
	int n = peer_body(body, sizeof body, api, requested);

	peer_sign_answer(k, nonce, body, (size_t)n, sig);
	snprintf(extra, sizeof extra, PEER_HEADER ": %s\r\n", sig);
	return listen_response(out, cap, 200, "application/json", extra, body, (size_t)n);
}

/* ---- The client ---- */

int peer_addr(struct peer_call *c, const char *addr)
{
	char why[160];
	int any;

	return listen_addr(addr, &c->sa, &c->salen, &any, why, sizeof why) < 0 || any ? -1 : 0;
}

int peer_get(struct peer_call *c, const char *host, const char *path)
{
	int n = snprintf(c->req, sizeof c->req, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: noderecover-fence\r\nConnection: close\r\n\r\n",
	    path, host);

	c->reqlen = n < 0 || (size_t)n >= sizeof c->req ? 0 : (size_t)n;
	return c->reqlen ? 0 : -1;
}

int peer_ask(struct peer_call *c, const struct peer_key *k, const char *host, const char *node)
{
	char sig[PEER_SIG_LEN + 1];
	int n;

	if (peer_nonce(c->nonce) < 0)
		return -1;
	peer_sign_request(k, node, c->nonce, sig);
	n = snprintf(c->req, sizeof c->req, "GET " PEER_PATH "?node=%s&nonce=%s HTTP/1.1\r\nHost: %s\r\nAuthorization: "
	    PEER_SCHEME " %s\r\nUser-Agent: noderecover-fence\r\nConnection: close\r\n\r\n", node, c->nonce, host, sig);
	c->reqlen = n < 0 || (size_t)n >= sizeof c->req ? 0 : (size_t)n;
	return c->reqlen ? 0 : -1;
}

/* One step of a call its socket is ready for (revents), or a failure: sets done. */
static void step(struct peer_call *c, short revents)
{
	ssize_t k;
	int err = 0;
	socklen_t el = sizeof err;

	if (c->sent < c->reqlen) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
			c->done = 1;
			return;
		}
		k = send(c->fd, c->req + c->sent, c->reqlen - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			c->done = 1;
		else if (k > 0)
			c->sent += (size_t)k;
		return;
	}
	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	k = recv(c->fd, c->buf + c->n, sizeof c->buf - 1 - c->n, MSG_DONTWAIT);
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (k > 0)
		c->n += (size_t)k;
	c->done = k <= 0 || c->n == sizeof c->buf - 1;
}

void peer_run(struct peer_call *c, int n, int64_t until)
{
	struct pollfd pf[n > 0 ? n : 1];
	int at[n > 0 ? n : 1];

	for (int i = 0; i < n; i++) {
		c[i].n = c[i].sent = 0;
		c[i].buf[0] = '\0';
		c[i].done = !c[i].reqlen;
		c[i].fd = c[i].done ? -1 : socket(c[i].sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c[i].fd < 0 || (connect(c[i].fd, (struct sockaddr *)&c[i].sa, c[i].salen) < 0 && errno != EINPROGRESS))
			c[i].done = 1;
	}
	for (;;) {
		int64_t left = until - clock_ms();
		int m = 0;
		for (int i = 0; i < n; i++)
			if (!c[i].done) {
				pf[m] = (struct pollfd){ c[i].fd, c[i].sent < c[i].reqlen ? POLLOUT : POLLIN, 0 };
				at[m++] = i;
			}
		if (m == 0 || left <= 0)
			break;
		if (poll(pf, (nfds_t)m, left > 1000 ? 1000 : (int)left) < 0 && errno != EINTR)
			break;
		for (int j = 0; j < m; j++)
			if (pf[j].revents)
				step(&c[at[j]], pf[j].revents);
	}
	for (int i = 0; i < n; i++) {
		if (c[i].fd >= 0)
			close(c[i].fd);
		c[i].fd = -1;
		c[i].buf[c[i].n] = '\0';
	}
}

int peer_status(const struct peer_call *c)
{
	const char *b = c->buf;

	if (c->n < 13 || memcmp(b, "HTTP/1.", 7) != 0 || b[8] != ' ' || (b[12] != ' ' && b[12] != '\r') ||
	    b[9] < '1' || b[9] > '5' || b[10] < '0' || b[10] > '9' || b[11] < '0' || b[11] > '9')
		return 0;
	return (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
}

int peer_verdict(const struct peer_call *c, const struct peer_key *k, int *api, int *requested)
{
	const char *end = c->n ? strstr(c->buf, "\r\n\r\n") : NULL, *v;
	char sig[PEER_SIG_LEN + 1];
	size_t vn, head, blen;

	if (peer_status(c) != 200 || !end)
		return 0;
	head = (size_t)(end - c->buf) + 2;
	blen = c->n - head - 2;
	if (header(c->buf, head + 2, PEER_HEADER, &v, &vn) < 0 || vn != PEER_SIG_LEN || !is_hex(v, vn))
		return 0;
	peer_sign_answer(k, c->nonce, end + 4, blen, sig);
	if (!peer_same(v, sig, PEER_SIG_LEN))
		return 0;
	return peer_parse_body(end + 4, blen, api, requested) == 0;
}
