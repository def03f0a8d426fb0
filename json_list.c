/*
 * The Node layout as the scanner meets it: which containers of a NodeList body or a watch
 * stream are worth watching (the envelope, items, an event, an item's metadata, spec, status,
 * labels and annotations), which of their keys matter, where the members json_node_facts reads
 * lie in each item, and the copy of each item into the caller's buffer. The scanner
 * (json_scan.c) checks the grammar and calls in here, through the hooks below, only inside
 * watched containers. Owns the lines a scan fails with; never reads a token of JSON itself,
 * never allocates.
 */
#include <string.h>

#include "json_list.h"
#include "text.h"

/* What a watched container is, at depth < JSON_CTX_DEPTH; C_OTHER is JSON_UNWATCHED. */
enum { C_OTHER = JSON_UNWATCHED, C_DOC, C_TOP, C_ENVMETA, C_ITEMS, C_ITEM, C_META, C_SPEC, C_STATUS, C_LABELS,
	C_ANNS, C_STREAM, C_EVENT };
/* Keys of the envelope and of a watch event; in an item a key is a mask of the members
 * (1 << JSON_*) it names. */
enum { K_NONE, K_ITEMS, K_ENVMETA, K_CONT, K_RV, K_TYPE, K_OBJECT };
/* Bits of seen: what the envelope, or the event being read, has had. */
enum { SEEN_ITEMS = 1, SEEN_ENVMETA = 2, SEEN_CONT = 4, SEEN_RV = 8, SEEN_TYPE = 16, SEEN_OBJECT = 32 };
/* The string value being captured: none, or metadata.continue, resourceVersion, type (keys: the scanner's). */
enum { CAP_NONE, CAP_CONT, CAP_RV, CAP_TYPE };

#define CTXN JSON_CTX_DEPTH

static const char *doc_name(const struct json_list *l)
{
	return l->s.kind[0] == C_STREAM ? "watch stream" : "node list";
}

/* The scan failed (l->s.reason at byte l->s.err_at of the body): the line in l->err; -1. */
static int failed(struct json_list *l)
{
	/* the item began at byte off + mark - size of the body */
	size_t at = l->s.err_at, item_at = l->s.off + l->mark - l->size;

	/* a list that failed has no continue token nor resourceVersion, whatever part was read */
	l->cont[0] = '\0';
	l->rv[0] = '\0';
	if (l->in_item)
		return text_fail(l->err, sizeof l->err, "malformed %s at byte %zu (byte %zu of %s %d): %s", doc_name(l), at,
		    at - item_at, l->s.kind[0] == C_STREAM ? "event" : "item", l->nitems + 1, l->s.reason);
	return text_fail(l->err, sizeof l->err, "malformed %s at byte %zu: %s", doc_name(l), at, l->s.reason);
}

/* Fails the scan at byte at of the body for the reason why: the line in l->err; -1. */
static int layout_fail(struct json_list *l, size_t at, const char *why)
{
	json_scan_fail(&l->s, at, why);
	return failed(l);
}

#define KEY(cx, key, lit) { cx, key, lit, sizeof lit - 1 }
static const struct {
	unsigned char ctx, key;
	const char *s;
	size_t n;
} known_keys[] = {
	KEY(C_TOP, K_ITEMS, "items"), KEY(C_TOP, K_ENVMETA, "metadata"), KEY(C_ENVMETA, K_CONT, "continue"),
	KEY(C_ENVMETA, K_RV, "resourceVersion"),
	KEY(C_ITEM, JSON_METADATA, "metadata"), KEY(C_ITEM, JSON_SPEC, "spec"), KEY(C_ITEM, JSON_STATUS, "status"),
	KEY(C_ITEM, JSON_KIND, "kind"),
	KEY(C_META, JSON_NAME, "name"), KEY(C_META, JSON_UID, "uid"), KEY(C_META, JSON_RV, "resourceVersion"),
	KEY(C_META, JSON_LABELS, "labels"), KEY(C_META, JSON_ANNOTATIONS, "annotations"),
	KEY(C_SPEC, JSON_TAINTS, "taints"), KEY(C_STATUS, JSON_CONDITIONS, "conditions"),
	KEY(C_EVENT, K_TYPE, "type"), KEY(C_EVENT, K_OBJECT, "object"),
};

/* The key just read (keybuf, as written) in a container of kind cx: an envelope key, or a mask of members. */
static int classify(const struct json_list *l, int cx)
{
	int mask = 0;

	if (l->s.full)
		return K_NONE;
	if (cx == C_LABELS || cx == C_ANNS) {
		for (int j = cx == C_LABELS ? 0 : 4; j < (cx == C_LABELS ? 4 : 5); j++)
			if (l->look[j] && json_str_eq(l->keybuf, l->s.caplen, l->look[j], l->looklen[j]))
				mask |= 1 << (JSON_CONTROL_PLANE + j);
		return mask;
	}
	/* where each context's keys start in known_keys, which is sorted by context */
	static const unsigned char from[] = { [C_TOP] = 0, [C_ENVMETA] = 2, [C_ITEMS] = 4, [C_ITEM] = 4,
		[C_META] = 8, [C_SPEC] = 13, [C_STATUS] = 14, [C_LABELS] = 15, [C_ANNS] = 15, [C_STREAM] = 15,
		[C_EVENT] = 15, [C_EVENT + 1] = 17 };
	for (int j = from[cx]; j < from[cx + 1]; j++)
		if (json_str_eq(l->keybuf, l->s.caplen, known_keys[j].s, known_keys[j].n))
			return cx <= C_ENVMETA || cx == C_EVENT ? known_keys[j].key : 1 << known_keys[j].key;
	return K_NONE;
}

/* The scanner's key hook: a key of a watched container was read (into keybuf). */
static void scan_key(void *ctx, int cx, int d)
{
	struct json_list *l = ctx;

	if (d < CTXN)
		l->memb[d] = (unsigned short)classify(l, cx);
}

/* Appends k bytes of the current item, or only counts them once it no longer fits. */
static void keep(struct json_list *l, const char *s, size_t k)
{
	if (!l->skipping && k <= l->cap - l->size)
		memcpy(l->buf + l->size, s, k);
	else
		l->skipping = 1;
	l->size += k;
}

/* An item (an element of items, a watch event's object) starts at p[i]. */
static int begin_item(struct json_list *l, size_t i)
{
	memset(&l->it, 0, sizeof l->it);
	l->in_item = 1;
	l->skipping = 0;
	l->size = 0;
	l->mark = i;
	return C_ITEM;
}

/* The item ended just before p[i]: its last bytes kept, it->p and len set. */
static void end_item(struct json_list *l, const char *p, size_t i)
{
	int stream = l->s.kind[0] == C_STREAM;

	keep(l, p + l->mark, i - l->mark);
	l->in_item = 0;
	l->nitems += !stream;   /* a stream counts its events as they close */
	l->it.p = l->skipping ? NULL : l->buf;
	l->it.len = l->size;
	l->it.index = l->nitems + stream;
}

/* What a caller's callback returned: nonzero stops the scan. */
static int stopped(struct json_list *l, int r)
{
	if (r != 0) {
		text_fail(l->err, sizeof l->err, "stopped at %s %d by the caller", l->s.kind[0] == C_STREAM ? "event" : "item",
		    l->nitems);
		json_scan_stop(&l->s);
	}
	return r;
}

/* A string member of the envelope or an event (bit: its SEEN_ bit) begins: captured, once. */
static int capture_begin(struct json_list *l, int c, size_t i, int bit, int how, const char *twice, const char *not_str)
{
	if (l->seen & bit)
		return layout_fail(l, l->s.off + i, twice);
	if (c != '"')
		return layout_fail(l, l->s.off + i, not_str);
	l->seen |= bit;
	l->capture = how;
	json_scan_capture(&l->s, how == CAP_CONT ? l->cont : how == CAP_RV ? l->rv : l->type,
	    how == CAP_CONT ? JSON_CONTINUE_MAX : how == CAP_RV ? NODE_RV_MAX : JSON_TYPE_MAX);
	return C_OTHER;
}

/* A value in the envelope, the items array, the stream or an event (cx one of those). */
static int envelope_value(struct json_list *l, int cx, int m, int c, size_t i)
{
	size_t at = l->s.off + i;

	switch (cx) {
	case C_DOC:
		return c == '{' ? C_TOP : layout_fail(l, at, "the body is not a JSON object");
	case C_TOP:
		if (m != K_ITEMS && m != K_ENVMETA)
			return C_OTHER;
		if (l->seen & m)
			return layout_fail(l, at, m == K_ITEMS ? "items appears twice" : "metadata appears twice");
		l->seen |= m;
		if (c != (m == K_ITEMS ? '[' : '{'))
			return layout_fail(l, at, m == K_ITEMS ? "items is not an array" : "metadata is not an object");
		return m == K_ITEMS ? C_ITEMS : C_ENVMETA;
	case C_ENVMETA:
		if (m == K_CONT)
			return capture_begin(l, c, i, SEEN_CONT, CAP_CONT, "metadata.continue appears twice",
			    "metadata.continue is not a string");
		if (m == K_RV)
			return capture_begin(l, c, i, SEEN_RV, CAP_RV, "metadata.resourceVersion appears twice",
			    "metadata.resourceVersion is not a string");
		return C_OTHER;
	case C_ITEMS:
		return c == '{' ? begin_item(l, i) : layout_fail(l, at, "an element of items is not an object");
	case C_STREAM:
		if (c != '{')
			return layout_fail(l, at, "a watch event is not an object");
		l->seen = 0;
		l->type[0] = '\0';
		return C_EVENT;
	default: /* C_EVENT */
		if (m == K_TYPE)
			return capture_begin(l, c, i, SEEN_TYPE, CAP_TYPE, "a watch event's type appears twice",
			    "a watch event's type is not a string");
		if (m != K_OBJECT)
			return C_OTHER;
		if (l->seen & SEEN_OBJECT)
			return layout_fail(l, at, "a watch event's object appears twice");
		l->seen |= SEEN_OBJECT;
		return c == '{' ? begin_item(l, i) : layout_fail(l, at, "a watch event's object is not an object");
	}
}

/* The scanner's value hook: a value starting with c at p[i] in a watched container. */
static int scan_value(void *ctx, int cx, int d, int c, size_t i)
{
	struct json_list *l = ctx;
	int m = d < CTXN ? l->memb[d] : K_NONE;


	if (cx < C_ITEM || cx > C_ANNS)
		return envelope_value(l, cx, m, c, i);
	/* inside an item: note where the members looked for start, and which are objects to watch */
	size_t at = l->size + i - l->mark;
	if ((cx == C_LABELS || cx == C_ANNS) && c != '"' && !l->it.not_string[cx - C_LABELS])
		l->it.not_string[cx - C_LABELS] = at;
	for (unsigned bits = (unsigned)m; bits; bits &= bits - 1) {
		int j = __builtin_ctz(bits);
		if (l->it.m[j].at)
			l->it.twice |= 1u << j;
		else
			l->it.m[j].at = at;
		if (c == '{' && j <= JSON_STATUS)
			return C_META + j;
		if (c == '{' && (j == JSON_LABELS || j == JSON_ANNOTATIONS))
			return C_LABELS + j - JSON_LABELS;
	}
	return C_OTHER;
}

/* A captured string of the envelope or an event ended just before byte at: unescaped in place, or -1. */
static int capture_end(struct json_list *l, size_t at)
{
	char raw[JSON_CONTINUE_MAX];
	int how = l->capture, full = l->s.full;
	size_t len = l->s.caplen;
	char *to = how == CAP_CONT ? l->cont : how == CAP_RV ? l->rv : l->type;
	size_t cap = how == CAP_CONT ? sizeof l->cont : how == CAP_RV ? sizeof l->rv : sizeof l->type;

	l->capture = CAP_NONE;
	json_scan_capture(&l->s, NULL, 0);
	if (how == CAP_TYPE && full)
		return layout_fail(l, at, "a watch event's type is longer than 16 bytes or holds a NUL");
	if (full)
		return layout_fail(l, at, how == CAP_CONT ? "metadata.continue is longer than 4096 bytes"
		    : "metadata.resourceVersion is longer than 63 bytes");
	memcpy(raw, to, len);
	if (json_unescape(raw, len, to, cap) < 0)
		return layout_fail(l, at, how == CAP_CONT ? "metadata.continue holds a NUL" : how == CAP_RV ?
		    "metadata.resourceVersion holds a NUL" : "a watch event's type is longer than 16 bytes or holds a NUL");
	return 0;
}

/* The scanner's done hook: a value in a watched container ended just before p[i]. */
static int scan_done(void *ctx, int cx, int d, const char *p, size_t i)
{
	struct json_list *l = ctx;
	int m = d < CTXN ? l->memb[d] : K_NONE;

	if (cx == C_ITEMS) {
		end_item(l, p, i);
		return stopped(l, l->item(l->ctx, &l->it));
	}
	if (cx == C_STREAM) {
		l->nitems++;
		return stopped(l, l->event(l->ctx, l->type, l->seen & SEEN_OBJECT ? &l->it : NULL));
	}
	if (cx == C_EVENT && m == K_OBJECT) {
		end_item(l, p, i);
	} else if ((cx == C_EVENT && m == K_TYPE && l->capture == CAP_TYPE) ||
	    (cx == C_ENVMETA && (m == K_CONT || m == K_RV) && (l->capture == CAP_CONT || l->capture == CAP_RV))) {
		if (capture_end(l, l->s.off + i) < 0)
			return -1;
	} else if (cx >= C_ITEM && cx <= C_ANNS) {
		for (unsigned bits = (unsigned)m; bits; bits &= bits - 1)
			if (!l->it.m[__builtin_ctz(bits)].end)
				l->it.m[__builtin_ctz(bits)].end = l->size + i - l->mark;
	}
	if (d < CTXN)
		l->memb[d] = K_NONE;
	return 0;
}

static const struct json_scan_hooks hooks = { scan_value, scan_key, scan_done };

/* The scan of a list (C_DOC) or a watch stream (C_STREAM, seq) for keys, items into buf[0..cap). */
static void start_nodes(struct json_list *l, int cx, int seq, char *buf, size_t cap, const struct node_keys *keys,
    void *ctx)
{
	memset(l, 0, sizeof *l);
	json_scan_init(&l->s, cx, seq, l->keybuf, sizeof l->keybuf, l);
	l->look[0] = NODE_LABEL_CONTROL_PLANE;
	l->look[1] = NODE_LABEL_ETCD;
	l->look[2] = keys ? keys->prune_label : NULL;
	l->look[3] = keys ? keys->exclude_label : NULL;
	l->look[4] = keys ? keys->annotation : NULL;
	for (int j = 0; j < 5; j++)
		l->looklen[j] = l->look[j] ? strlen(l->look[j]) : 0;
	l->buf = buf;
	l->cap = cap;
	l->ctx = ctx;
}

void json_list_init(struct json_list *l, char *buf, size_t cap, const struct node_keys *keys,
    json_item_fn item, void *ctx)
{
	start_nodes(l, C_DOC, 0, buf, cap, keys, ctx);
	l->item = item;
}

void json_watch_init(struct json_list *l, char *buf, size_t cap, const struct node_keys *keys,
    json_event_fn event, void *ctx)
{
	start_nodes(l, C_STREAM, 1, buf, cap, keys, ctx);
	l->event = event;
}

int json_list_feed(struct json_list *l, const char *p, size_t n)
{
	int r;

	if (json_scan_failed(&l->s))
		return -1;
	l->mark = 0;
	if ((r = json_scan_feed(&l->s, &hooks, p, n)) != 0)
		return l->err[0] ? r : failed(l);   /* the grammar's failure has no line yet */
	/* the piece is done: when it ended inside an item, its bytes from p[mark] on are kept */
	if (l->in_item)
		keep(l, p + l->mark, n - l->mark);
	return 0;
}

int json_list_end(struct json_list *l)
{
	const char *why;

	if (json_scan_failed(&l->s))
		return -1;
	if (l->s.kind[0] == C_STREAM) {
		if (json_scan_idle(&l->s))
			return 0;
		why = "the stream ended inside an event";
	} else if (!json_scan_end(&l->s)) {
		why = l->s.off == 0 || json_scan_idle(&l->s) ? "body was empty" :
		    l->s.depth >= 2 && l->s.kind[2] == C_ITEMS ? "body ended inside the node list" :
		    "body ended before the node list was complete";
	} else if (!(l->seen & SEEN_ITEMS)) {
		why = "body has no items array: not a node list";
	} else {
		return 0;
	}
	json_scan_fail(&l->s, l->s.off, why);
	return text_fail(l->err, sizeof l->err, "%s", why);
}
