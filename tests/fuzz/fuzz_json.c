/*
 * Fuzz target for json.c: a NodeList body fed to json_list_feed in pieces whose sizes come
 * from the input, each item read by json_node_facts (twice: once with the splitter's spans,
 * once from a copy without them, and the two must agree); the body as one Node; json_status.
 * Input: byte 0 picks the piece sizes, byte 1 the item buffer's size and when item() stops
 * the list, byte 2 json_status's buffer sizes; the rest is the document.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static const struct node_keys keys = { "github-runner.exadev.io/removable",
	"github-runner.exadev/out-of-service-applied-at" };

struct ctx {
	size_t cap;
	int stop_after;  /* item() returns 1 on this item (counting from 1); 0: never */
	int n;
};

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_json: %s\n", what);
	abort();
}

static void check_facts(const struct node_facts *f)
{
	if (memchr(f->name, 0, sizeof f->name) == NULL || memchr(f->uid, 0, sizeof f->uid) == NULL ||
	    memchr(f->rv, 0, sizeof f->rv) == NULL)
		bug("a node_facts string is not terminated");
}

static int item(void *vctx, const char *obj, size_t len)
{
	struct ctx *c = vctx;
	struct node_facts a, b;

	c->n++;
	if (obj) {
		if (len > c->cap)
			bug("item longer than the buffer");
		int ra = json_node_facts(obj, len, &keys, &a);
		char *copy = malloc(len ? len : 1);
		memcpy(copy, obj, len);
		int rb = json_node_facts(copy, len, &keys, &b);
		free(copy);
		check_facts(&a);
		check_facts(&b);
		if (ra != rb)
			bug("json_node_facts differs with and without the splitter's spans");
		if (ra == 0 && memcmp(&a, &b, sizeof a) != 0)
			bug("json_node_facts facts differ with and without the splitter's spans");
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct json_list l;
	struct node_facts f;
	struct ctx c = { 0, 0, 0 };

	if (size < 3)
		return 0;
	unsigned split = data[0], bufsel = data[1], stsel = data[2];
	const char *doc = (const char *)data + 3;
	size_t n = size - 3;

	/* each piece on the heap at its exact size, so a read past it is caught */
	char *body = malloc(n ? n : 1);
	memcpy(body, doc, n);

	c.cap = (bufsel & 0x80) ? 65536 : (size_t)(bufsel & 0x3f) * 32 + 1;
	c.stop_after = (bufsel >> 6 & 1) ? 1 + (bufsel & 3) : 0;
	char *buf = malloc(c.cap);
	json_list_init(&l, buf, c.cap, item, &c);

	uint32_t s = split * 2654435761u | 1;
	size_t i = 0;
	int r = 0, stopped = 0;
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
		if (r != 0)
			stopped = 1;
		if (memchr(l.err, 0, sizeof l.err) == NULL || memchr(l.cont, 0, sizeof l.cont) == NULL)
			bug("json_list err or cont not terminated");
		i += k;
	}
	r = json_list_end(&l);
	if (memchr(l.err, 0, sizeof l.err) == NULL || memchr(l.cont, 0, sizeof l.cont) == NULL)
		bug("json_list err or cont not terminated");
	if (r == 0 && stopped)
		bug("json_list_end succeeded after feed failed");
	free(buf);

	/* the body as one Node, as the unit tests read fixtures */
	json_node_facts(body, n, &keys, &f);
	check_facts(&f);

	size_t rlen = 1 + (stsel & 0x0f) * 4, mlen = 1 + (stsel >> 4) * 16;
	char *reason = malloc(rlen), *msg = malloc(mlen);
	json_status(body, n, reason, rlen, msg, mlen);
	if (!memchr(reason, 0, rlen) || !memchr(msg, 0, mlen))
		bug("json_status output not terminated");
	for (const char *p = reason; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			bug("control byte in json_status reason");
	for (const char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			bug("control byte in json_status message");
	free(reason);
	free(msg);
	free(body);
	return 0;
}
