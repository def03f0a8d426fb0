/*
 * The peer protocol (peer.c): the signatures against golden vectors computed with Python's
 * hmac (hmac.new(key, msg, hashlib.sha256).hexdigest()), the request's and the answer's
 * checks with must-fail rows for each way a forgery or a mangled message could be taken for
 * good, and the client against loopback peers that answer, refuse, or never answer.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "check.h"
#include "../../clock.h"
#include "../../peer.h"

#define SECRET "0123456789abcdef-secret"
#define NONCE "00112233445566778899aabbccddeeff"
/* python3 -c 'import hmac,hashlib; print(hmac.new(b"0123456789abcdef-secret", b"req\nnode-1\n" + NONCE, hashlib.sha256).hexdigest())' */
#define REQ_SIG "f6ecb1453313584f548e43fd6f51dd89c21953fcd103dc8cd4bd7d4e6ccae86f"
/* ... b"resp\n" + NONCE + b"\n" + b'{"api":true,"requested":false}' */
#define RESP_SIG "983967c55f7efd20a556a668722748526b07e4f24fd6bcb9002a5eeb6ee83a28"
/* ... b'{"api":true,"requested":true}' */
#define RESP_SIG_REQ "03759bffe3e5157c5dfe3210193f87ad3722f8ef8750965086390dca302eb8df"
/* key bytes(range(200)) (longer than a block: hashed first), b"req\nn.example.com\n" + 32 f */
#define LONG_SIG "6190bee3810d42e184c4ee85ce400849a16c29ce577337589f89e6472bb1cfa6"

static struct peer_key key;

static void t_golden(void)
{
	char sig[PEER_SIG_LEN + 1], body[64];
	unsigned char long_key[200];
	struct peer_key lk;
	int n;

	peer_sign_request(&key, "node-1", NONCE, sig);
	check(strcmp(sig, REQ_SIG) == 0);
	n = peer_body(body, sizeof body, 1, 0);
	check(strcmp(body, "{\"api\":true,\"requested\":false}") == 0 && n == (int)strlen(body));
	peer_sign_answer(&key, NONCE, body, (size_t)n, sig);
	check(strcmp(sig, RESP_SIG) == 0);
	n = peer_body(body, sizeof body, 1, 1);
	peer_sign_answer(&key, NONCE, body, (size_t)n, sig);
	check(strcmp(sig, RESP_SIG_REQ) == 0);
	for (int i = 0; i < 200; i++)
		long_key[i] = (unsigned char)i;
	peer_key(&lk, long_key, sizeof long_key);
	peer_sign_request(&lk, "n.example.com", "ffffffffffffffffffffffffffffffff", sig);
	check(strcmp(sig, LONG_SIG) == 0);
	/* must-fail: another secret, node or nonce signs differently */
	peer_sign_request(&lk, "node-1", NONCE, sig);
	check(strcmp(sig, REQ_SIG) != 0);
	peer_sign_request(&key, "node-2", NONCE, sig);
	check(strcmp(sig, REQ_SIG) != 0);
	peer_sign_request(&key, "node-1", "00112233445566778899aabbccddeef0", sig);
	check(strcmp(sig, REQ_SIG) != 0);
}

static void t_same_and_nonce(void)
{
	char a[PEER_NONCE_LEN + 1], b[PEER_NONCE_LEN + 1];

	check(peer_same("abc", "abc", 3) && !peer_same("abc", "abd", 3) && !peer_same("xbc", "abc", 3));
	check(peer_same("", "", 0));
	check(peer_nonce(a) == 0 && peer_nonce(b) == 0);
	check(strlen(a) == PEER_NONCE_LEN && strspn(a, "0123456789abcdef") == PEER_NONCE_LEN);
	check(strcmp(a, b) != 0);
}

static void t_body(void)
{
	char b[64];
	int api = -1, req = -1;

	check(peer_body(b, sizeof b, 0, 1) > 0 && strcmp(b, "{\"api\":false,\"requested\":false}") == 0);
	check(peer_parse_body(b, strlen(b), &api, &req) == 0 && api == 0 && req == 0);
	check(peer_parse_body("{\"api\":true,\"requested\":true}", 29, &api, &req) == 0 && api == 1 && req == 1);
	check(peer_parse_body("{\"api\":true,\"requested\":false}", 30, &api, &req) == 0 && api == 1 && req == 0);
	/* must-fail: any other spelling is no answer */
	check(peer_parse_body("{\"api\":false,\"requested\":true}", 30, &api, &req) < 0);
	check(peer_parse_body("{\"api\": true,\"requested\":false}", 31, &api, &req) < 0);
	check(peer_parse_body("{\"requested\":false,\"api\":true}", 30, &api, &req) < 0);
	check(peer_parse_body("{\"api\":true,\"requested\":false} ", 31, &api, &req) < 0);
	check(peer_parse_body("{\"api\":true,\"requested\":false}", 29, &api, &req) < 0);
	check(peer_parse_body("", 0, &api, &req) < 0);
}

/* A request head with the given target and Authorization value (NULL: none). */
static size_t head(char *out, size_t cap, const char *target, const char *auth_name, const char *auth)
{
	if (auth)
		return (size_t)snprintf(out, cap, "GET %s HTTP/1.1\r\nHost: x\r\n%s: %s\r\n\r\n", target, auth_name, auth);
	return (size_t)snprintf(out, cap, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", target);
}

static void t_request(void)
{
	static const char good[] = "/fence/v1/peer?node=node-1&nonce=" NONCE;
	char h[1024], node[PEER_NODE_MAX + 1], nonce[PEER_NONCE_LEN + 1];
	size_t n;

	n = head(h, sizeof h, good, "Authorization", PEER_SCHEME " " REQ_SIG);
	check(peer_request(&key, h, n, node, nonce) == 1 && strcmp(node, "node-1") == 0 && strcmp(nonce, NONCE) == 0);
	n = head(h, sizeof h, "/fence/v1/peer?nonce=" NONCE "&node=node-1", "authorization", PEER_SCHEME " " REQ_SIG);
	check(peer_request(&key, h, n, node, nonce) == 1);
	/* another route: not ours */
	n = head(h, sizeof h, "/metrics", NULL, NULL);
	check(peer_request(&key, h, n, node, nonce) == 0);
	n = head(h, sizeof h, "/fence/v1/peers", NULL, NULL);
	check(peer_request(&key, h, n, node, nonce) == 0);
	/* must-fail: each of these is refused (401) */
	static const struct {
		const char *target, *name, *auth;
	} bad[] = {
		{ good, "Authorization", NULL },                                  /* unsigned */
		{ good, "Authorization", PEER_SCHEME " " RESP_SIG },              /* another message's signature */
		{ good, "Authorization", "Bearer " REQ_SIG },                     /* another scheme */
		{ good, "Authorization", PEER_SCHEME " F6ECB1453313584F548E43FD6F51DD89C21953FCD103DC8CD4BD7D4E6CCAE86F" },
		{ good, "Authorization", PEER_SCHEME " " REQ_SIG "00" },          /* too long */
		{ good, "Authorization", PEER_SCHEME "  " REQ_SIG },
		{ good, "X-Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer?node=node-2&nonce=" NONCE, "Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer?node=node-1&nonce=00112233445566778899aabbccddeef0", "Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer?node=node-1&nonce=" NONCE "&x=1", "Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer?node=Node-1&nonce=" NONCE, "Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer?node=node-1&nonce=0011", "Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer?node=node-1", "Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer", "Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer/x", "Authorization", PEER_SCHEME " " REQ_SIG },
		{ "/fence/v1/peer?node=&nonce=" NONCE, "Authorization", PEER_SCHEME " " REQ_SIG },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = head(h, sizeof h, bad[i].target, bad[i].name, bad[i].auth);
		if (!check(peer_request(&key, h, n, node, nonce) == -1))
			fprintf(stderr, "  accepted: %s %s\n", bad[i].target, bad[i].auth ? bad[i].auth : "(unsigned)");
	}
}

/* A call whose answer is text, asked with NONCE. */
static void answered(struct peer_call *c, const char *text)
{
	memset(c, 0, sizeof *c);
	snprintf(c->nonce, sizeof c->nonce, "%s", NONCE);
	c->n = (size_t)snprintf(c->buf, sizeof c->buf, "%s", text);
}

static void t_verdict(void)
{
	struct peer_call c;
	char a[PEER_ANSWER_MAX], *p;
	int api = -1, req = -1;

	check(peer_answer(&key, NONCE, 1, 0, a, sizeof a) > 0);
	answered(&c, a);
	check(peer_status(&c) == 200);
	check(peer_verdict(&c, &key, &api, &req) == 1 && api == 1 && req == 0);
	check(peer_answer(&key, NONCE, 1, 1, a, sizeof a) > 0);
	answered(&c, a);
	check(peer_verdict(&c, &key, &api, &req) == 1 && api == 1 && req == 1);
	check(peer_answer(&key, NONCE, 0, 1, a, sizeof a) > 0);
	answered(&c, a);
	check(peer_verdict(&c, &key, &api, &req) == 1 && api == 0 && req == 0);
	/* must-fail: a body changed, a signature changed, another nonce, another secret, not 200 */
	check(peer_answer(&key, NONCE, 1, 0, a, sizeof a) > 0);
	p = strstr(a, "false}");
	memcpy(p, "true} ", 6);
	answered(&c, a);
	check(peer_verdict(&c, &key, &api, &req) == 0);
	check(peer_answer(&key, NONCE, 1, 0, a, sizeof a) > 0);
	p = strstr(a, PEER_HEADER ": ") + sizeof PEER_HEADER + 1;
	*p = *p == '0' ? '1' : '0';
	answered(&c, a);
	check(peer_verdict(&c, &key, &api, &req) == 0);
	check(peer_answer(&key, "ffffffffffffffffffffffffffffffff", 1, 0, a, sizeof a) > 0);
	answered(&c, a);
	check(peer_verdict(&c, &key, &api, &req) == 0);
	struct peer_key other;
	peer_key(&other, "another-secret-16", 17);
	check(peer_answer(&other, NONCE, 1, 0, a, sizeof a) > 0);
	answered(&c, a);
	check(peer_verdict(&c, &key, &api, &req) == 0);
	answered(&c, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
	check(peer_status(&c) == 401 && peer_verdict(&c, &key, &api, &req) == 0);
	/* the body of a good answer without its signature */
	answered(&c, "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n{\"api\":true,\"requested\":false}");
	check(peer_verdict(&c, &key, &api, &req) == 0);
	answered(&c, "");
	check(peer_status(&c) == 0 && peer_verdict(&c, &key, &api, &req) == 0);
	answered(&c, "HTTP/1.1 200\r\n\r\n");
	check(peer_status(&c) == 200);
}

/* ---- The client against loopback peers ---- */

static int listener(struct sockaddr_in *sa)
{
	socklen_t n = sizeof *sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, sizeof *sa) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)sa, &n) < 0)
		return -1;
	return fd;
}

/* A peer that answers one request as an agent would. */
static void *serve_one(void *arg)
{
	int lfd = *(int *)arg, fd = accept(lfd, NULL, NULL);
	char h[2048], node[PEER_NODE_MAX + 1], nonce[PEER_NONCE_LEN + 1], out[PEER_ANSWER_MAX];
	size_t n = 0;
	ssize_t k;

	while (fd >= 0 && n < sizeof h - 1 && (k = recv(fd, h + n, sizeof h - 1 - n, 0)) > 0) {
		n += (size_t)k;
		h[n] = '\0';
		if (strstr(h, "\r\n\r\n"))
			break;
	}
	if (fd >= 0 && peer_request(&key, h, n, node, nonce) == 1 && strcmp(node, "node-1") == 0) {
		int len = peer_answer(&key, nonce, 1, 1, out, sizeof out);
		if (len > 0 && send(fd, out, (size_t)len, 0) < 0)
			perror("send");
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void t_client(void)
{
	struct sockaddr_in good, silent, closed;
	int gfd = listener(&good), sfd = listener(&silent), cfd = listener(&closed);
	char addr[3][32];
	struct peer_call c[4];
	pthread_t th;
	int api = -1, req = -1;
	int64_t t0;

	if (!check(gfd >= 0 && sfd >= 0 && cfd >= 0))
		return;
	close(cfd);   /* its port now refuses */
	snprintf(addr[0], sizeof addr[0], "127.0.0.1:%d", ntohs(good.sin_port));
	snprintf(addr[1], sizeof addr[1], "127.0.0.1:%d", ntohs(silent.sin_port));
	snprintf(addr[2], sizeof addr[2], "127.0.0.1:%d", ntohs(closed.sin_port));
	memset(c, 0, sizeof c);
	for (int i = 0; i < 3; i++)
		check(peer_addr(&c[i], addr[i]) == 0 && peer_ask(&c[i], &key, addr[i], "node-1") == 0);
	check(peer_addr(&c[3], ":80") == -1 && peer_addr(&c[3], "host:80") == -1);   /* an address, not a name or any */
	check(strcmp(c[0].nonce, c[1].nonce) != 0);
	check(pthread_create(&th, NULL, serve_one, &gfd) == 0);
	t0 = clock_ms();
	peer_run(c, 3, t0 + 600);
	pthread_join(th, NULL);
	check(clock_ms() - t0 >= 550 && clock_ms() - t0 < 2000);   /* the silent peer held it to the deadline, no more */
	check(peer_verdict(&c[0], &key, &api, &req) == 1 && api == 1 && req == 1);
	check(peer_status(&c[1]) == 0 && peer_verdict(&c[1], &key, &api, &req) == 0);
	check(peer_status(&c[2]) == 0 && peer_verdict(&c[2], &key, &api, &req) == 0);
	/* must-fail: the answer read with another nonce (a replay) is no answer */
	memcpy(c[0].nonce, "ffffffffffffffffffffffffffffffff", PEER_NONCE_LEN);
	check(peer_verdict(&c[0], &key, &api, &req) == 0);
	/* a plain GET (the kubelet's) that the silent listener never answers, within its deadline */
	check(peer_get(&c[1], "127.0.0.1", "/healthz") == 0);
	t0 = clock_ms();
	peer_run(&c[1], 1, t0 + 200);
	check(peer_status(&c[1]) == 0 && clock_ms() - t0 < 1000);
	close(gfd);
	close(sfd);
}

static const struct test tests[] = {
	{ "golden", t_golden },
	{ "same_and_nonce", t_same_and_nonce },
	{ "body", t_body },
	{ "request", t_request },
	{ "verdict", t_verdict },
	{ "client", t_client },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	peer_key(&key, SECRET, sizeof SECRET - 1);
	return run_tests("peer", tests, argc, argv);
}
