/*
 * Fuzz target for json.c: a NodeList body fed to json_list_feed in pieces whose sizes come
 * from the input, each item read by json_node_facts; the same body fed whole must give the same
 * items, facts, reasons and result. Then json_check (it must accept what the list accepted),
 * json_status, json_access_review and json_self_user on the body: their text, decoded as sent,
 * must become one clean line through text_clean, as kube_clean makes it before a log holds it.
 * Input: byte 0 picks the piece sizes, byte 1 the item buffer's size and when item() stops
 * the list, byte 2 json_status's buffer sizes; the rest is the document.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "text.h"

static const struct node_keys keys = { "github-runner.exadev.io/removable",
	"github-runner.exadev/out-of-service-applied-at", "github-runner.exadev.io/no-recovery" };

#define SEEN_MAX 16

/* What one run over the body saw. */
struct run {
	size_t cap;
	int stop_after;  /* item() returns 1 on this item (counting from 1); 0: never */
	int n, r;
	int rs[SEEN_MAX];
	size_t lens[SEEN_MAX];
	struct node_facts f[SEEN_MAX];
	char why[SEEN_MAX][160];
	char err[160], cont[JSON_CONTINUE_MAX + 1];
};

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_json: %s\n", what);
	abort();
}

/* Server text as kube_clean makes it for a log line (text_clean with the token): one line,
 * no control byte, whatever json.c decoded. */
static void loggable(const char *s, const char *what)
{
	char out[1200];

	text_clean(out, sizeof out, s, strlen(s), "sa-token-fuzz", 13);
	for (const char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			bug(what);
}

static void check_facts(const struct node_facts *f)
{
	if (memchr(f->name, 0, sizeof f->name) == NULL || memchr(f->uid, 0, sizeof f->uid) == NULL ||
	    memchr(f->rv, 0, sizeof f->rv) == NULL)
		bug("a node_facts string is not terminated");
}

static int item(void *vctx, const struct json_item *it)
{
	struct run *c = vctx;
	struct node_facts f;
	char why[160] = "";

	c->n++;
	if (it->p && it->len > c->cap)
		bug("item longer than the buffer");
	if (it->index != c->n)
		bug("item index is not its place");
	for (int j = 0; it->p && j < JSON_MEMBERS; j++)
		if (it->m[j].at >= it->len || it->m[j].end > it->len)
			bug("a member span outside its item");
	int r = json_node_facts(it, &keys, &f, why, sizeof why);
	check_facts(&f);
	if (!memchr(why, 0, sizeof why) || (r < 0) != (why[0] != '\0'))
		bug("json_node_facts failed without a reason, or gave one on success");
	if (c->n <= SEEN_MAX) {
		c->rs[c->n - 1] = r;
		c->lens[c->n - 1] = it->len;
		c->f[c->n - 1] = f;
		memcpy(c->why[c->n - 1], why, sizeof why);
	}
	return c->stop_after && c->n == c->stop_after;
}

static uint32_t next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Feeds body[0..n) in pieces picked by split (0: whole), each on the heap at its exact size. */
static void run(struct run *c, const char *body, size_t n, unsigned split)
{
	static struct json_list l;
	char *buf = malloc(c->cap);
	uint32_t s = split * 2654435761u | 1;
	size_t i = 0;
	int r = 0, stopped = 0;

	json_list_init(&l, buf, c->cap, &keys, item, c);
	while (i < n) {
		size_t k;
		if (split == 0)
			k = n - i;
		else if (split == 1)
			k = 1;
		else
			k = 1 + next(&s) % (split < 128 ? split : 4096);
		if (k > n - i)
			k = n - i;
		char *piece = malloc(k);
		memcpy(piece, body + i, k);
		r = json_list_feed(&l, piece, k);
		free(piece);
		if (stopped && r != -1)
			bug("json_list_feed went on after it stopped");
		if (r != 0 && !stopped) {
			stopped = 1;
			c->r = r;
		}
		if (memchr(l.err, 0, sizeof l.err) == NULL || memchr(l.cont, 0, sizeof l.cont) == NULL)
			bug("json_list err or cont not terminated");
		i += k;
	}
	r = json_list_end(&l);
	if (memchr(l.err, 0, sizeof l.err) == NULL || memchr(l.cont, 0, sizeof l.cont) == NULL)
		bug("json_list err or cont not terminated");
	if (r == 0 && stopped)
		bug("json_list_end succeeded after feed failed");
	if (!stopped)
		c->r = r;
	memcpy(c->err, l.err, sizeof c->err);
	memcpy(c->cont, l.cont, sizeof c->cont);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run a, b;

	if (size < 3)
		return 0;
	unsigned split = data[0], bufsel = data[1], stsel = data[2];
	const char *doc = (const char *)data + 3;
	size_t n = size - 3;
	char *body = malloc(n ? n : 1);
	memcpy(body, doc, n);

	memset(&a, 0, sizeof a);
	a.cap = (bufsel & 0x80) ? 65536 : (size_t)(bufsel & 0x3f) * 32 + 1;
	a.stop_after = (bufsel >> 6 & 1) ? 1 + (bufsel & 3) : 0;
	b = a;
	run(&a, body, n, split);
	run(&b, body, n, 0);
	/* the pieces never change what is read */
	if (a.r != b.r || a.n != b.n || strcmp(a.err, b.err) != 0 || strcmp(a.cont, b.cont) != 0)
		bug("the list reads differently in pieces and whole");
	for (int i = 0; i < a.n && i < SEEN_MAX; i++)
		if (a.rs[i] != b.rs[i] || a.lens[i] != b.lens[i] || strcmp(a.why[i], b.why[i]) != 0 ||
		    memcmp(&a.f[i], &b.f[i], sizeof a.f[i]) != 0)
			bug("an item reads differently in pieces and whole");

	/* one grammar: a list the scanner took is valid JSON */
	char why[160];
	size_t at;
	if (json_check(body, n, &at, why, sizeof why) == 0 ? 0 : a.r == 0 || at > n)
		bug("json_check refused a list the scanner accepted");

	size_t rlen = 1 + (stsel & 0x0f) * 4, mlen = 1 + (stsel >> 4) * 16;
	char *reason = malloc(rlen), *msg = malloc(mlen);
	json_status(body, n, reason, rlen, msg, mlen);
	if (!memchr(reason, 0, rlen) || !memchr(msg, 0, mlen))
		bug("json_status output not terminated");
	loggable(reason, "control byte in json_status reason once cleaned");
	loggable(msg, "control byte in json_status message once cleaned");
	/* the permission check's readers: a verdict only from a document json_check accepts */
	int allowed = -1;
	if (json_access_review(body, n, &allowed, reason, rlen, why, sizeof why) == 0) {
		if (allowed != 0 && allowed != 1)
			bug("json_access_review verdict is neither 0 nor 1");
		if (json_check(body, n, &at, why, sizeof why) != 0)
			bug("json_access_review read a document json_check refuses");
	} else if (allowed != 0 || !memchr(why, 0, sizeof why)) {
		bug("json_access_review failed but allowed, or without a terminated reason");
	}
	if (json_self_user(body, n, msg, mlen, why, sizeof why) == 0 && (!msg[0] || !memchr(msg, 0, mlen)))
		bug("json_self_user gave an empty or unterminated name");
	loggable(msg, "control byte in json_self_user name once cleaned");
	free(reason);
	free(msg);
	free(body);
	return 0;
}
