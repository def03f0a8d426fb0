/*
 * Fuzz target for the watch event reader (json.c's scanner over a stream): a watch body fed
 * to json_list_feed in pieces whose sizes come from the input, each event's object read as
 * kube.c reads it (kind, resourceVersion, the Node's facts); the same body fed whole must give
 * the same events, types, objects, facts, reasons and result. Never acts, never does I/O.
 * Input: byte 0 picks the piece sizes, byte 1 the object buffer's size and when event() stops
 * the stream; the rest is the stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static const struct node_keys keys = { "github-runner.exadev.io/removable",
	"github-runner.exadev/out-of-service-applied-at", "github-runner.exadev.io/no-recovery" };

#define SEEN_MAX 16

/* What one run over the stream saw. */
struct run {
	size_t cap;
	int stop_after;  /* event() returns 1 on this event (counting from 1); 0: never */
	int n, r;
	char type[SEEN_MAX][JSON_TYPE_MAX + 1];
	size_t lens[SEEN_MAX];
	int rs[SEEN_MAX];
	struct node_facts f[SEEN_MAX];
	char rv[SEEN_MAX][NODE_RV_MAX + 1], kind[SEEN_MAX][16];
	char err[160];
};

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_watch: %s\n", what);
	abort();
}

static int event(void *vctx, const char *type, const struct json_item *it)
{
	struct run *c = vctx;
	struct node_facts f;
	char why[200] = "", rv[NODE_RV_MAX + 1], kind[16];

	c->n++;
	if (!memchr(type, 0, JSON_TYPE_MAX + 1))
		bug("an event's type is not terminated");
	if (it && it->p && it->len > c->cap)
		bug("an object longer than the buffer");
	for (int j = 0; it && it->p && j < JSON_MEMBERS; j++)
		if (it->m[j].at >= it->len || it->m[j].end > it->len)
			bug("a member span outside its object");
	int r = -1;
	memset(&f, 0, sizeof f);
	rv[0] = kind[0] = '\0';
	if (it) {
		json_item_string(it, JSON_KIND, kind, sizeof kind, why, sizeof why);
		json_item_string(it, JSON_RV, rv, sizeof rv, why, sizeof why);
		if (!memchr(kind, 0, sizeof kind) || !memchr(rv, 0, sizeof rv) || !memchr(why, 0, sizeof why))
			bug("json_item_string output not terminated");
		if (it->p) {
			r = json_node_facts(it, &keys, &f, why, sizeof why);
			if (memchr(f.name, 0, sizeof f.name) == NULL || memchr(f.rv, 0, sizeof f.rv) == NULL)
				bug("a node_facts string is not terminated");
		}
	}
	if (c->n <= SEEN_MAX) {
		int i = c->n - 1;
		memcpy(c->type[i], type, strlen(type) + 1);
		c->lens[i] = it ? it->len : (size_t)-1;
		c->rs[i] = r;
		c->f[i] = f;
		memcpy(c->rv[i], rv, sizeof rv);
		memcpy(c->kind[i], kind, sizeof kind);
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

	json_watch_init(&l, buf, c->cap, &keys, event, c);
	while (i < n) {
		size_t k = split == 0 ? n - i : split == 1 ? 1 : 1 + next(&s) % (split < 128 ? split : 4096);
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
		if (memchr(l.err, 0, sizeof l.err) == NULL)
			bug("err not terminated");
		i += k;
	}
	r = json_list_end(&l);
	if (r == 0 && stopped)
		bug("json_list_end succeeded after feed failed");
	if (!stopped)
		c->r = r;
	if (l.nitems < c->n)
		bug("fewer objects counted than events handed over");
	memcpy(c->err, l.err, sizeof c->err);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run a, b;

	if (size < 2)
		return 0;
	unsigned split = data[0], bufsel = data[1];
	size_t n = size - 2;
	char *body = malloc(n ? n : 1);
	memcpy(body, data + 2, n);

	memset(&a, 0, sizeof a);
	a.cap = (bufsel & 0x80) ? 65536 : (size_t)(bufsel & 0x3f) * 32 + 1;
	a.stop_after = (bufsel >> 6 & 1) ? 1 + (bufsel & 3) : 0;
	b = a;
	run(&a, body, n, split);
	run(&b, body, n, 0);
	/* the pieces never change what is read */
	if (a.r != b.r || a.n != b.n || strcmp(a.err, b.err) != 0)
		bug("the stream reads differently in pieces and whole");
	for (int i = 0; i < a.n && i < SEEN_MAX; i++)
		if (strcmp(a.type[i], b.type[i]) != 0 || a.lens[i] != b.lens[i] || a.rs[i] != b.rs[i] ||
		    memcmp(&a.f[i], &b.f[i], sizeof a.f[i]) != 0 || strcmp(a.rv[i], b.rv[i]) != 0 ||
		    strcmp(a.kind[i], b.kind[i]) != 0)
			bug("an event reads differently in pieces and whole");
	free(body);
	return 0;
}
