/*
 * Reading Kubernetes JSON strictly without allocating (the writer of small documents is json_write.c).
 * One reader: the scanner (json_list_feed, json_check) checks the whole grammar as bytes
 * arrive, cuts a NodeList into its items in the caller's buffer and notes where the few
 * members the facts need lie (labels and annotations down to the keys looked for: jsmn over
 * them cost more than all the rest of a node); jsmn tokenizes the arrays among them (taints,
 * conditions) into a static token pool, and one token walker reads them (json_node_facts,
 * json_status).
 * Nothing here allocates, does I/O or decides anything about a node. One pool: one reader at a time.
 */
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

/* SSE2 is x86-64's baseline; JSON_NO_SIMD builds the portable path alone (to test it). */
#if defined(__SSE2__) && !defined(JSON_NO_SIMD)
#define JSON_SSE2 1
#include <emmintrin.h>
#endif

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS /* without them jsmn walks back over every token at each ',' */
#include <jsmn.h>

#include "json.h"
#include "text.h"

static jsmntok_t pool[JSON_TOKENS];

static inline int is_ws(int c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static int simple_escape(int c)
{
	switch (c) {
	case '"': return '"';
	case '\\': return '\\';
	case '/': return '/';
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	}
	return -1;
}

static uint32_t hex4(const char *s)
{
	uint32_t v = 0;

	for (int j = 0; j < 4; j++)
		v = v << 4 | (uint32_t)text_hexval((unsigned char)s[j]);
	return v;
}

/*
 * Decodes the next character of the body s[*i..n) of a string the scanner checked into u
 * (1-4 bytes) and returns its length.
 */
static int next_char(const char *s, size_t n, size_t *i, unsigned char *u)
{
	unsigned char c = (unsigned char)s[*i];
	uint32_t cp;

	if (c != '\\' || *i + 1 >= n) {
		u[0] = c;
		(*i)++;
		return 1;
	}
	c = (unsigned char)s[*i + 1];
	if (c != 'u' || *i + 6 > n) {
		u[0] = (unsigned char)simple_escape(c);
		*i += 2;
		return 1;
	}
	cp = hex4(s + *i + 2);
	*i += 6;
	if (cp >= 0xd800 && cp < 0xdc00 && *i + 6 <= n) {
		cp = 0x10000 + ((cp - 0xd800) << 10) + (hex4(s + *i + 2) - 0xdc00);
		*i += 6;
	}
	return (int)text_utf8_put(cp, u);
}

/* Whether the checked string body s[0..n) decodes to exactly lit[0..ln). */
static int str_eq(const char *s, size_t n, const char *lit, size_t ln)
{
	unsigned char u[4];
	size_t i, j = 0;

	/*
	 * Unescaping shortens: \X gives 1 byte, \uXXXX at most 3, a pair of them 4. So a text as
	 * long as lit is lit only as written, and a longer one only if it holds an escape.
	 */
	if (n <= ln)
		return n == ln && memcmp(s, lit, n) == 0;
	if (ln == 0 || (s[0] != '\\' && s[0] != lit[0]) || !memchr(s, '\\', n))
		return 0;
	for (i = 0; i < n;) {
		int k = next_char(s, n, &i, u);
		if ((size_t)k > ln - j || memcmp(lit + j, u, (size_t)k) != 0)
			return 0;
		j += (size_t)k;
	}
	return j == ln;
}

/*
 * Decodes the checked string body s[0..n) into out[0..cap) and NUL-terminates it.
 * Returns its length, or -1 when it holds a NUL or does not fit.
 */
static int str_copy(const char *s, size_t n, char *out, size_t cap)
{
	unsigned char u[4];
	size_t i = 0, j = 0;

	while (i < n) {
		int k = next_char(s, n, &i, u);
		if ((k == 1 && u[0] == 0) || (size_t)k >= cap - j)
			return -1;
		memcpy(out + j, u, (size_t)k);
		j += (size_t)k;
	}
	out[j] = '\0';
	return (int)j;
}

/*
 * Decodes the checked string body s[0..n) into out[0..cap) for a log line: control characters
 * become spaces, and it is cut at a character boundary when too long.
 */
static void str_log(const char *s, size_t n, char *out, size_t cap)
{
	unsigned char u[4];
	size_t i = 0, j = 0;

	if (cap == 0)
		return;
	while (i < n) {
		size_t at = i;
		int k = next_char(s, n, &i, u);
		/* a raw multi-byte character is copied whole or not at all */
		while (k == 1 && u[0] >= 0x80 && i < n && ((unsigned char)s[i] & 0xc0) == 0x80)
			i++, k++;
		if ((size_t)k >= cap - j)
			break;
		if (k == 1 && (u[0] < 0x20 || u[0] == 0x7f))
			u[0] = ' ';
		memcpy(out + j, k > 1 && s[at] != '\\' ? (const unsigned char *)s + at : u, (size_t)k);
		j += (size_t)k;
	}
	out[j] = '\0';
}

#define ONES 0x0101010101010101ull
#define HIGH 0x8080808080808080ull

/*
 * A mask with the high bit set in each of 8 bytes (little-endian) that is a quote, a backslash,
 * a control character or not ASCII; bits above the first such byte may be spurious, the lowest
 * is exact.
 */
static inline uint64_t word_special(uint64_t w)
{
	uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
	return (((q - ONES) & ~q) | ((b - ONES) & ~b) | (w - ONES * 0x20) | w) & HIGH;
}

#ifdef JSON_SSE2
/* Loaded rather than built at each call: a string is 25 bytes on average, so the setup counts. */
#define X16(c) { c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c }
static const unsigned char v_quote[16] __attribute__((aligned(16))) = X16('"');
static const unsigned char v_backslash[16] __attribute__((aligned(16))) = X16('\\');
static const unsigned char v_control[16] __attribute__((aligned(16))) = X16(0x1f);
#endif

/* From p[i], the index of the first quote, backslash, control or non-ASCII byte, or n. */
static inline size_t string_run(const unsigned char *p, size_t n, size_t i)
{
#ifdef JSON_SSE2
	/* 16 bytes at a time; the loads stay inside p[0..n), the tail is left to the words. */
	const __m128i q = _mm_load_si128((const __m128i *)(const void *)v_quote);
	const __m128i bs = _mm_load_si128((const __m128i *)(const void *)v_backslash);
	const __m128i ctl = _mm_load_si128((const __m128i *)(const void *)v_control);
	while (i + 16 <= n) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, bs)),
		    _mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x));
		unsigned bits = (unsigned)(_mm_movemask_epi8(m) | _mm_movemask_epi8(x));
		if (bits)
			return i + (size_t)__builtin_ctz(bits);
		i += 16;
	}
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (i + 8 <= n) {
		uint64_t w, m;
		memcpy(&w, p + i, 8);
		if ((m = word_special(w)) != 0)
			return i + ((size_t)__builtin_ctzll(m) >> 3);
		i += 8;
	}
#endif
	while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
		i++;
	return i;
}

/* ---- The scanner ---- */

enum {
	S_VALUE, S_VALUE1, /* a value; VALUE1 also ']' (first element) */
	S_KEY, S_KEY1,     /* a key; KEY1 also '}' (first member) */
	S_COLON, S_AFTER,  /* after a key; after a value: ',' or the close */
	S_STR, S_ESC, S_HEX, S_LOW, S_LOWU, S_UTF8, /* inside a string (sub: key or value) */
	S_NUM, S_LIT, S_DONE, S_FAILED
};
/* In S_NUM, sub is where: after '-', after a leading 0, in digits, after '.', ... */
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
/* What a container is, at depth < CTXN; every container inside an OTHER one is OTHER. */
enum { C_OTHER, C_DOC, C_TOP, C_ENVMETA, C_ITEMS, C_ITEM, C_META, C_SPEC, C_STATUS, C_LABELS, C_ANNS,
	C_STREAM, C_EVENT };
/* Keys of the envelope and of a watch event; in an item a key is a mask of the members
 * (1 << JSON_*) it names. */
enum { K_NONE, K_ITEMS, K_ENVMETA, K_CONT, K_RV, K_TYPE, K_OBJECT };
/* Bits of seen: what the envelope, or the event being read, has had. */
enum { SEEN_ITEMS = 1, SEEN_ENVMETA = 2, SEEN_CONT = 4, SEEN_RV = 8, SEEN_TYPE = 16, SEEN_OBJECT = 32 };
/* The string being read: 0 a value, 1 a key; capture: 0, into keybuf, cont, rv or type. */
enum { CAP_NONE, CAP_KEY, CAP_CONT, CAP_RV, CAP_TYPE };

#define CTXN JSON_CTX_DEPTH

static const char *doc_name(const struct json_list *l)
{
	return l->kind[0] == C_DOC ? "node list" : l->kind[0] == C_STREAM ? "watch stream" : "JSON";
}

static int fail(struct json_list *l, size_t i, const char *why)
{
	size_t at = l->off + i;

	l->reason = why;
	l->err_at = at;
	if (l->in_item)
		snprintf(l->err, sizeof l->err, "malformed %s at byte %zu (byte %zu of %s %d): %s", doc_name(l), at,
		    l->size + i - l->mark, l->kind[0] == C_STREAM ? "event" : "item", l->nitems + 1, why);
	else
		snprintf(l->err, sizeof l->err, "malformed %s at byte %zu: %s", doc_name(l), at, why);
	l->st = S_FAILED;
	return -1;
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

/* A key written without escapes is itself: lengths first (str_eq for the rest). */
#define KEY_IS(lit, ln) (l->esc ? str_eq(l->keybuf, l->caplen, lit, ln) : \
    (ln) == l->caplen && memcmp(l->keybuf, lit, ln) == 0)

/* The key just read (keybuf) in a container of kind cx: an envelope key, or a mask of members. */
static __attribute__((noinline)) int classify(const struct json_list *l, int cx)
{
	int mask = 0;

	if (l->full)
		return K_NONE;
	if (cx == C_LABELS || cx == C_ANNS) {
		for (int j = cx == C_LABELS ? 0 : 4; j < (cx == C_LABELS ? 4 : 5); j++)
			if (l->look[j] && KEY_IS(l->look[j], l->looklen[j]))
				mask |= 1 << (JSON_CONTROL_PLANE + j);
		return mask;
	}
	/* where each context's keys start in known_keys, which is sorted by context */
	static const unsigned char from[] = { [C_TOP] = 0, [C_ENVMETA] = 2, [C_ITEMS] = 4, [C_ITEM] = 4,
		[C_META] = 8, [C_SPEC] = 13, [C_STATUS] = 14, [C_LABELS] = 15, [C_ANNS] = 15, [C_STREAM] = 15,
		[C_EVENT] = 15, [C_EVENT + 1] = 17 };
	for (int j = from[cx]; j < from[cx + 1]; j++)
		if (KEY_IS(known_keys[j].s, known_keys[j].n))
			return cx <= C_ENVMETA || cx == C_EVENT ? known_keys[j].key : 1 << known_keys[j].key;
	return K_NONE;
}

/* Appends captured bytes of a key or of metadata.continue, as written. */
static void capture(struct json_list *l, const unsigned char *s, size_t k)
{
	char *to = l->capture == CAP_KEY ? l->keybuf : l->capture == CAP_CONT ? l->cont
	    : l->capture == CAP_RV ? l->rv : l->type;
	size_t cap = l->capture == CAP_KEY ? sizeof l->keybuf : l->capture == CAP_CONT ? JSON_CONTINUE_MAX
	    : l->capture == CAP_RV ? NODE_RV_MAX : JSON_TYPE_MAX;

	if (k > cap - l->caplen) {
		l->full = 1;
		return;
	}
	memcpy(to + l->caplen, s, k);
	l->caplen += k;
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
	int stream = l->kind[0] == C_STREAM;

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
		snprintf(l->err, sizeof l->err, "stopped at %s %d by the caller", l->kind[0] == C_STREAM ? "event" : "item",
		    l->nitems);
		l->st = S_FAILED;
	}
	return r;
}

/*
 * A value starting with c at p[i] in a container of kind cx at depth d that is not OTHER.
 * Returns the kind of the container it opens (C_OTHER for any other value), or -1.
 */
static int value_in(struct json_list *l, int cx, int d, int c, size_t i)
{
	int m = d < CTXN ? l->memb[d] : K_NONE;

	switch (cx) {
	case C_DOC:
		return c == '{' ? C_TOP : fail(l, i, "the body is not a JSON object");
	case C_TOP:
		if (m == K_ITEMS || m == K_ENVMETA) {
			if (l->seen & m)
				return fail(l, i, m == K_ITEMS ? "items appears twice" : "metadata appears twice");
			l->seen |= m;
			if (c != (m == K_ITEMS ? '[' : '{'))
				return fail(l, i, m == K_ITEMS ? "items is not an array" : "metadata is not an object");
			return m == K_ITEMS ? C_ITEMS : C_ENVMETA;
		}
		return C_OTHER;
	case C_ENVMETA:
		if (m == K_CONT || m == K_RV) {
			int bit = m == K_CONT ? SEEN_CONT : SEEN_RV;
			if (l->seen & bit)
				return fail(l, i, m == K_CONT ? "metadata.continue appears twice" : "metadata.resourceVersion appears twice");
			if (c != '"')
				return fail(l, i, m == K_CONT ? "metadata.continue is not a string" : "metadata.resourceVersion is not a string");
			l->seen |= bit;
			l->capture = m == K_CONT ? CAP_CONT : CAP_RV;
			l->caplen = 0;
			l->full = 0;
		}
		return C_OTHER;
	case C_ITEMS:
		if (c != '{')
			return fail(l, i, "an element of items is not an object");
		return begin_item(l, i);
	case C_STREAM:
		if (c != '{')
			return fail(l, i, "a watch event is not an object");
		l->seen = 0;
		l->type[0] = '\0';
		return C_EVENT;
	case C_EVENT:
		if (m == K_TYPE || m == K_OBJECT) {
			int bit = m == K_TYPE ? SEEN_TYPE : SEEN_OBJECT;
			if (l->seen & bit)
				return fail(l, i, m == K_TYPE ? "a watch event's type appears twice" : "a watch event's object appears twice");
			l->seen |= bit;
			if (m == K_OBJECT)
				return c == '{' ? begin_item(l, i) : fail(l, i, "a watch event's object is not an object");
			if (c != '"')
				return fail(l, i, "a watch event's type is not a string");
			l->capture = CAP_TYPE;
			l->caplen = 0;
			l->full = 0;
		}
		return C_OTHER;
	}
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

/* A value ended just before p[i] in a container of kind cx at depth d that is not OTHER. */
static int value_done(struct json_list *l, int cx, int d, const char *p, size_t i)
{
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
	} else if (cx == C_EVENT && m == K_TYPE && l->capture == CAP_TYPE) {
		char raw[JSON_TYPE_MAX];
		l->capture = CAP_NONE;
		memcpy(raw, l->type, l->caplen);
		if (l->full || str_copy(raw, l->caplen, l->type, sizeof l->type) < 0)
			return fail(l, i, "a watch event's type is longer than 16 bytes or holds a NUL");
	} else if (cx == C_ENVMETA && (m == K_CONT || m == K_RV) && (l->capture == CAP_CONT || l->capture == CAP_RV)) {
		char raw[JSON_CONTINUE_MAX];
		int cont = l->capture == CAP_CONT;
		l->capture = CAP_NONE;
		if (l->full)
			return fail(l, i, cont ? "metadata.continue is longer than 4096 bytes"
			    : "metadata.resourceVersion is longer than 63 bytes");
		memcpy(raw, cont ? l->cont : l->rv, l->caplen);
		if (str_copy(raw, l->caplen, cont ? l->cont : l->rv, cont ? sizeof l->cont : sizeof l->rv) < 0)
			return fail(l, i, cont ? "metadata.continue holds a NUL" : "metadata.resourceVersion holds a NUL");
	} else if (cx >= C_ITEM && cx <= C_ANNS) {
		for (unsigned bits = (unsigned)m; bits; bits &= bits - 1)
			if (!l->it.m[__builtin_ctz(bits)].end)
				l->it.m[__builtin_ctz(bits)].end = l->size + i - l->mark;
	}
	if (d < CTXN)
		l->memb[d] = K_NONE;
	return 0;
}

static void start(struct json_list *l, int cx)
{
	memset(l, 0, sizeof *l);
	l->kind[0] = (unsigned char)cx;
	l->st = S_VALUE;
}

/* The scan of a list (C_DOC) or a watch stream (C_STREAM) for keys, items into buf[0..cap). */
static void start_nodes(struct json_list *l, int cx, char *buf, size_t cap, const struct node_keys *keys, void *ctx)
{
	start(l, cx);
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
	start_nodes(l, C_DOC, buf, cap, keys, ctx);
	l->item = item;
}

void json_watch_init(struct json_list *l, char *buf, size_t cap, const struct node_keys *keys,
    json_event_fn event, void *ctx)
{
	start_nodes(l, C_STREAM, buf, cap, keys, ctx);
	l->event = event;
}

#define NEED(state) do { if (i == n) { st = (state); goto out; } } while (0)
#define FAIL(why) do { fail(l, i, (why)); r = -1; goto out; } while (0)
#define SKIP_WS() while (i < n && is_ws(p[i])) i++
/* The next byte that is not white space into c, or out in state when the piece ends first. */
#define NEXT(state) for (;; i++) { NEED(state); c = p[i]; if (c > ' ' || !is_ws(c)) break; }

/*
 * The scan: one resumable loop whose position in the grammar is st (with sub, depth, array),
 * written back when the piece runs out. Most bytes are in strings, passed by string_run.
 */
int json_list_feed(struct json_list *l, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	int st = l->st, depth = l->depth, key = l->key, r = 0, c, h;
	int cx = depth < CTXN ? l->kind[depth] : C_OTHER;

	if (st == S_FAILED)
		return -1;
	l->mark = 0;
	switch (st) {
	case S_VALUE: goto value;
	case S_VALUE1: goto value1;
	case S_KEY: goto key;
	case S_KEY1: goto key1;
	case S_COLON: goto colon;
	case S_AFTER: goto after;
	case S_STR: goto str;
	case S_ESC: goto esc;
	case S_HEX: goto hex;
	case S_LOW: goto low;
	case S_LOWU: goto lowu;
	case S_UTF8: goto utf8;
	case S_NUM: goto num;
	case S_LIT: goto lit;
	default: goto done;
	}
value1:
	NEXT(S_VALUE1);
	if (c == ']')
		goto close;
value:
	NEXT(S_VALUE);
	h = C_OTHER;
	if (cx != C_OTHER && (h = value_in(l, cx, depth, c, i)) < 0) {
		r = -1;
		goto out;
	}
	i++;
	if (c == '"') {
		key = 0;
		goto str;
	}
	switch (c) {
	case '{':
	case '[':
		if (depth >= JSON_DEPTH_MAX)
			FAIL("nested deeper than 64");
		l->array[++depth] = c == '[';
		cx = h;
		if (depth < CTXN)
			{
			l->kind[depth] = (unsigned char)cx;
			l->memb[depth] = K_NONE;
		}
		if (c == '[')
			goto value1;
		goto key1;
	case 't': l->lit = "true"; break;
	case 'f': l->lit = "false"; break;
	case 'n': l->lit = "null"; break;
	case '-': l->sub = N_MINUS; goto num;
	case '0': l->sub = N_ZERO; goto num;
	default:
		if (c >= '1' && c <= '9') {
			l->sub = N_INT;
			goto num;
		}
		i--;
		FAIL("expected a value");
	}
	l->sub = 1;
lit:
	while (l->lit[l->sub]) {
		NEED(S_LIT);
		if (p[i] != (unsigned char)l->lit[l->sub])
			FAIL("a bare word, not true, false or null");
		i++, l->sub++;
	}
	goto value_end;
num:
	for (;; i++) {
		NEED(S_NUM);
		c = p[i];
		int digit = c >= '0' && c <= '9';
		switch (l->sub) {
		case N_MINUS:
			if (!digit)
				FAIL("a number without digits");
			l->sub = c == '0' ? N_ZERO : N_INT;
			continue;
		case N_ZERO:
			if (digit)
				FAIL("a number with a leading zero");
			/* fall through */
		case N_INT:
			if (digit)
				continue;
			if (c == '.') {
				l->sub = N_DOT;
				continue;
			}
			break;
		case N_DOT:
			if (!digit)
				FAIL("a number without digits after '.'");
			l->sub = N_FRAC;
			continue;
		case N_FRAC:
			if (digit)
				continue;
			break;
		case N_E:
			if (c == '+' || c == '-') {
				l->sub = N_ESIGN;
				continue;
			}
			/* fall through */
		case N_ESIGN:
			if (!digit)
				FAIL("a number without digits in its exponent");
			l->sub = N_EXP;
			continue;
		case N_EXP:
			if (digit)
				continue;
			goto value_end;
		}
		if (c == 'e' || c == 'E') {
			l->sub = N_E;
			continue;
		}
		goto value_end;
	}
key1:
	NEXT(S_KEY1);
	if (c == '}')
		goto close;
key:
	NEXT(S_KEY);
	if (c != '"')
		FAIL("expected a key in double quotes");
	i++;
	key = 1;
	if (cx != C_OTHER) {
		l->capture = CAP_KEY;
		l->caplen = 0;
		l->full = 0;
		l->esc = 0;
	}
str:
	for (;;) {
		size_t e = string_run(p, n, i);
		if (l->capture)
			capture(l, p + i, e - i);
		i = e;
		NEED(S_STR);
		c = p[i];
		if (c == '"')
			break;
		if (c < 0x20)
			FAIL("a control character in a string");
		if (l->capture) {
			capture(l, p + i, 1);
			l->esc |= c == '\\';
		}
		i++;
		if (c == '\\') {
esc:
			NEED(S_ESC);
			c = p[i];
			if (c == 'u') {
				l->u = 0;
				l->sub = 0;
			} else if (simple_escape(c) < 0) {
				FAIL("a bad escape in a string");
			}
			if (l->capture)
				capture(l, p + i, 1);
			i++;
			if (c != 'u')
				continue;
hex:
			for (; l->sub < 4; l->sub++, i++) {
				NEED(S_HEX);
				if ((h = text_hexval(p[i])) < 0)
					FAIL("a bad \\u escape in a string");
				l->u = l->u << 4 | (uint32_t)h;
				if (l->capture)
					capture(l, p + i, 1);
			}
			if (l->u >= 0xdc00 && l->u < 0xe000 && !(l->u >> 16))
				FAIL("a lone low surrogate in a string");
			if (l->u >> 16) {
				/* the low half of a pair (the 1 set before it is now bit 16) */
				if ((l->u & 0xffff) < 0xdc00 || (l->u & 0xffff) >= 0xe000)
					FAIL("a high surrogate without its low half in a string");
				continue;
			}
			if (l->u < 0xd800 || l->u >= 0xdc00)
				continue;
low:
			NEED(S_LOW);
			if (p[i] != '\\')
				FAIL("a high surrogate without its low half in a string");
			if (l->capture)
				capture(l, p + i, 1);
			i++;
lowu:
			NEED(S_LOWU);
			if (p[i] != 'u')
				FAIL("a high surrogate without its low half in a string");
			if (l->capture)
				capture(l, p + i, 1);
			i++;
			l->u = 1; /* shifted above bit 16 by the four digits */
			l->sub = 0;
			goto hex;
		}
		/* Not ASCII: sub holds what the rest of the character must be, as RFC 3629 has it. */
		if (c >= 0xc2 && c <= 0xdf)
			l->sub = 1;
		else if (c >= 0xe0 && c <= 0xef)
			l->sub = 2 | (c == 0xe0) << 4 | (c == 0xed) << 5;
		else if (c >= 0xf0 && c <= 0xf4)
			l->sub = 3 | (c == 0xf0) << 6 | (c == 0xf4) << 7;
		else
			FAIL("invalid UTF-8 in a string");
utf8:
		while (l->sub & 3) {
			NEED(S_UTF8);
			c = p[i];
			int lo = l->sub & 0x10 ? 0xa0 : l->sub & 0x40 ? 0x90 : 0x80;
			int hi = l->sub & 0x20 ? 0x9f : l->sub & 0x80 ? 0x8f : 0xbf;
			if (c < lo || c > hi)
				FAIL("invalid UTF-8 in a string");
			if (l->capture)
				capture(l, p + i, 1);
			i++;
			l->sub = (l->sub & 3) - 1;
		}
	}
	i++;
	if (!key)
		goto value_end;
	if (cx != C_OTHER) {
		l->capture = CAP_NONE;
		if (depth < CTXN)
			l->memb[depth] = (unsigned short)classify(l, cx);
	}
	if (i < n && p[i] == ':') {
		i++;
		goto value;
	}
colon:
	NEXT(S_COLON);
	if (c != ':')
		FAIL("expected ':' after a key");
	i++;
	goto value;
close:
	c = p[i];
	if ((c == ']') != l->array[depth])
		FAIL(c == ']' ? "']' closes an object" : "'}' closes an array");
	i++;
	depth--;
	cx = depth < CTXN ? l->kind[depth] : C_OTHER;
value_end:
	if (cx != C_OTHER && (r = value_done(l, cx, depth, s, i)) != 0)
		goto out;
	if (depth == 0) {
		if (l->kind[0] == C_STREAM)
			goto value;   /* the next event, or the end of the stream */
		st = S_DONE;
		goto done;
	}
after:
	NEXT(S_AFTER);
	if (c == ',') {
		i++;
		if (l->array[depth])
			goto value;
		goto key;
	}
	if (c == '}' || c == ']')
		goto close;
	FAIL(l->array[depth] ? "expected ',' or ']' after an element" :
	    "expected ',' or '}' after a member");
done:
	SKIP_WS();
	st = S_DONE;
	if (i < n)
		FAIL("text after the end of the document");
out:
	if (r != 0)
		return r;
	if (l->in_item)
		keep(l, s + l->mark, n - l->mark);
	l->st = st;
	l->depth = depth;
	l->key = key;
	l->off += n;
	return 0;
}

int json_list_end(struct json_list *l)
{
	int list = l->kind[0] == C_DOC;

	if (l->st == S_FAILED)
		return -1;
	if (l->kind[0] == C_STREAM) {
		if (l->st == S_VALUE && l->depth == 0)
			return 0;
		l->err_at = l->off;
		l->reason = "the stream ended inside an event";
		snprintf(l->err, sizeof l->err, "%s", l->reason);
		l->st = S_FAILED;
		return -1;
	}
	/* a number ends where the body does only at the top level */
	if (l->st == S_NUM && l->depth == 0 && (l->sub == N_ZERO || l->sub == N_INT || l->sub == N_FRAC ||
	    l->sub == N_EXP))
		l->st = S_DONE;
	l->err_at = l->off;
	if (l->st != S_DONE)
		l->reason = l->off == 0 || (l->st == S_VALUE && l->depth == 0) ? "body was empty" :
		    !list ? "the text ended early" : l->depth >= 2 && l->kind[2] == C_ITEMS ?
		    "body ended inside the node list" : "body ended before the node list was complete";
	else if (list && !(l->seen & K_ITEMS))
		l->reason = "body has no items array: not a node list";
	else
		return 0;
	snprintf(l->err, sizeof l->err, "%s", l->reason);
	l->st = S_FAILED;
	return -1;
}

int json_check(const char *s, size_t len, size_t *at, char *why, size_t whylen)
{
	struct json_list l;

	start(&l, C_OTHER);
	if (json_list_feed(&l, s, len) == 0 && json_list_end(&l) == 0)
		return 0;
	*at = l.err_at;
	snprintf(why, whylen, "%s", l.reason);
	return -1;
}

/* ---- The token walker ---- */

/* One member read with jsmn: its text, its tokens, and its place in the item for reasons. */
struct doc {
	const char *js;
	int n;
	size_t base;            /* the offset of js in the item */
	char *why;
	size_t whylen;
};

/* What a value starting with c is, for a reason. */
static const char *what(int c)
{
	switch (c) {
	case '"': return "a string";
	case '{': return "an object";
	case '[': return "an array";
	case 't': case 'f': return "a boolean";
	case 'n': return "null";
	}
	return "a number";
}

/* Tokenizes the checked value js[0..len) at base in the item. */
static int tokenize(struct doc *d, const char *js, size_t len, size_t base, const char *path)
{
	jsmn_parser p;

	d->js = js;
	d->base = base;
	jsmn_init(&p);
	d->n = len > INT_MAX ? JSMN_ERROR_NOMEM : jsmn_parse(&p, js, len, pool, JSON_TOKENS);
	if (d->n == JSMN_ERROR_NOMEM)
		return text_fail(d->why, d->whylen, "%s has more than %d tokens (byte %zu)", path, JSON_TOKENS, base);
	if (d->n < 1)
		return text_fail(d->why, d->whylen, "%s could not be tokenized (byte %zu)", path, base);
	return 0;
}

/* The index just past the value at token i and everything inside it. */
static int skip(const struct doc *d, int i)
{
	int end = pool[i].end;

	for (i++; i < d->n && pool[i].start < end; i++)
		;
	return i;
}

/* A name looked for, with its length counted at compile time. */
struct name {
	const char *s;
	size_t n;
};
#define NAME(lit) { lit, sizeof lit - 1 }

static int tok_eq(const struct doc *d, int i, const char *lit, size_t ln)
{
	return str_eq(d->js + pool[i].start, (size_t)(pool[i].end - pool[i].start), lit, ln);
}

/* The first byte of token i's value as written: '"' for a string. */
static int tok_kind(const struct doc *d, int i)
{
	return pool[i].type == JSMN_STRING ? '"' : d->js[pool[i].start];
}

/* The path of a member for a reason: path, path[idx], path.name or path[idx].name. */
static void where(char *out, size_t cap, const char *path, int idx, const char *name)
{
	int k = snprintf(out, cap, "%s", path);

	if (idx >= 0 && k >= 0 && (size_t)k < cap)
		k += snprintf(out + k, cap - (size_t)k, "[%d]", idx);
	if (name && k >= 0 && (size_t)k < cap)
		snprintf(out + k, cap - (size_t)k, "%s%s", k ? "." : "", name);
}

/* Token i is not of kind want ('"', '{', '['): -1, with the reason. */
static int wrong(const struct doc *d, int i, int want, const char *path, int idx, const char *name)
{
	char w[128];

	where(w, sizeof w, path, idx, name);
	return text_fail(d->why, d->whylen, "%s is %s, not %s (byte %zu)", w, what(tok_kind(d, i)), what(want),
	    d->base + (size_t)pool[i].start);
}

static int is_null(const struct doc *d, int i)
{
	return pool[i].type == JSMN_PRIMITIVE && d->js[pool[i].start] == 'n';
}

/*
 * Finds names[0..nn) among the members of the object at token o (path[idx]): at[j] is the token
 * of the value of names[j], or -1. A name written twice is refused, or with first_wins its
 * first kept. A NULL name is not looked for.
 */
static int lookup(const struct doc *d, int o, const struct name *names, int nn, int *at, int first_wins,
    const char *path, int idx)
{
	int k = o + 1;

	for (int j = 0; j < nn; j++)
		at[j] = -1;
	for (int m = 0; m < pool[o].size; m++, k = skip(d, k + 1)) {
		for (int j = 0; j < nn; j++) {
			if (!tok_eq(d, k, names[j].s, names[j].n))
				continue;
			if (at[j] < 0) {
				at[j] = k + 1;
			} else if (!first_wins) {
				char w[128];
				where(w, sizeof w, path, idx, names[j].s);
				return text_fail(d->why, d->whylen, "%s appears twice (byte %zu)", w,
				    d->base + (size_t)pool[k].start);
			}
		}
	}
	return 0;
}

static const char *const member_path[JSON_MEMBERS] = {
	"metadata", "spec", "status", "metadata.name", "metadata.uid", "metadata.resourceVersion",
	"metadata.labels", "metadata.annotations", "", "", "", "", "", "spec.taints", "status.conditions", "kind",
};

/*
 * Tokenizes member j of the item when it is present and not null: 1, with d set and its one
 * token checked to be of kind want; 0 when absent or null; -1 otherwise.
 */
static int member(struct doc *d, const struct json_item *it, int j, int want)
{
	const struct json_span *sp = &it->m[j];

	if (!sp->at || it->p[sp->at] == 'n')
		return 0;
	if (it->p[sp->at] != want)
		return text_fail(d->why, d->whylen, "%s is %s, not %s (byte %zu)", member_path[j], what(it->p[sp->at]),
		    what(want), sp->at);
	return tokenize(d, it->p + sp->at, sp->end - sp->at, sp->at, member_path[j]) < 0 ? -1 : 1;
}

/* A string member of metadata into out[0..cap): present, not empty, without NUL, fitting. */
static int read_id(const struct json_item *it, int j, char *out, size_t cap, char *why, size_t whylen)
{
	const struct json_span *sp = &it->m[j];
	const char *v = it->p + sp->at;

	out[0] = '\0';
	if (!sp->at || *v == 'n')
		return text_fail(why, whylen, "%s is missing", member_path[j]);
	if (*v != '"')
		return text_fail(why, whylen, "%s is %s, not a string (byte %zu)", member_path[j], what(*v), sp->at);
	if (sp->end - sp->at == 2)
		return text_fail(why, whylen, "%s is empty (byte %zu)", member_path[j], sp->at);
	if (str_copy(v + 1, sp->end - sp->at - 2, out, cap) < 0) {
		out[0] = '\0';
		return text_fail(why, whylen, "%s is longer than %zu bytes or holds a NUL (byte %zu)", member_path[j],
		    cap - 1, sp->at);
	}
	return 0;
}

int json_item_string(const struct json_item *it, enum json_member j, char *out, size_t cap, char *why,
    size_t whylen)
{
	if (!it->p) {
		out[0] = '\0';
		return text_fail(why, whylen, "its object is %zu bytes, more than the buffer holds", it->len);
	}
	if (it->twice >> j & 1) {
		out[0] = '\0';
		return text_fail(why, whylen, "%s appears twice", member_path[j]);
	}
	return read_id(it, j, out, cap, why, whylen);
}

static int tok_is(const struct doc *d, int i, const char *lit, size_t ln)
{
	return i >= 0 && pool[i].type == JSMN_STRING && tok_eq(d, i, lit, ln);
}
#define TOK_IS(d, i, lit) tok_is(d, i, lit, sizeof lit - 1)

/* Whether the string member j of the item is present and decodes to lit. */
static int span_is(const struct json_item *it, int j, const char *lit, size_t ln)
{
	const struct json_span *sp = &it->m[j];
	return sp->at && sp->end - sp->at >= 2 && str_eq(it->p + sp->at + 1, sp->end - sp->at - 2, lit, ln);
}

/* Labels and annotations: the scanner noted the keys looked for and any value not a string. */
static int read_maps(const struct json_item *it, const struct node_keys *k, struct node_facts *f, char *why,
    size_t whylen)
{
	const char *key[] = { NODE_LABEL_CONTROL_PLANE, NODE_LABEL_ETCD, k && k->prune_label ? k->prune_label : "",
		k && k->exclude_label ? k->exclude_label : "", k && k->annotation ? k->annotation : "" };

	for (int j = 0; j < 2; j++) {
		const struct json_span *sp = &it->m[JSON_LABELS + j];
		int c = sp->at ? it->p[sp->at] : 'n';
		if (c != '{' && c != 'n')
			return text_fail(why, whylen, "%s is %s, not an object (byte %zu)", member_path[JSON_LABELS + j], what(c), sp->at);
		if (it->not_string[j])
			return text_fail(why, whylen, "%s holds %s, not a string (byte %zu)", member_path[JSON_LABELS + j],
			    what(it->p[it->not_string[j]]), it->not_string[j]);
	}
	for (int m = 0; m < 5; m++)
		if (it->twice >> (JSON_CONTROL_PLANE + m) & 1)
			return text_fail(why, whylen, "%s.%s appears twice", m < 4 ? "metadata.labels" : "metadata.annotations", key[m]);
	f->control_plane = it->m[JSON_CONTROL_PLANE].at != 0;
	f->etcd = it->m[JSON_ETCD].at != 0;
	f->etcd_voter = span_is(it, JSON_ETCD, "true", 4);
	f->removable = span_is(it, JSON_PRUNE, "true", 4);
	f->excluded = span_is(it, JSON_EXCLUDE, "true", 4);
	f->has_annotations = it->m[JSON_ANNOTATIONS].at && it->p[it->m[JSON_ANNOTATIONS].at] == '{';
	f->our_annotation = it->m[JSON_OURS].at != 0;
	f->tainted_at = -1;
	if (f->our_annotation) {
		const struct json_span *sp = &it->m[JSON_OURS];
		char when[40];
		int len = sp->end - sp->at >= 2 ? str_copy(it->p + sp->at + 1, sp->end - sp->at - 2, when, sizeof when) : -1;
		f->tainted_at = len > 0 ? text_rfc3339(when, (size_t)len) : -1;
	}
	return 0;
}

/* The elements of the array at token 0 must be objects; each is looked up for names. */
static int element(const struct doc *d, int el, int m, const struct name *names, int nn, int *at,
    const char *path)
{
	if (pool[el].type != JSMN_OBJECT)
		return wrong(d, el, '{', path, m, NULL);
	if (lookup(d, el, names, nn, at, 0, path, m) < 0)
		return -1;
	/* the first name is the one whose value must be a string when present */
	if (at[0] >= 0 && pool[at[0]].type != JSMN_STRING)
		return wrong(d, at[0], '"', path, m, names[0].s);
	return 0;
}

static int read_taints(struct doc *d, struct node_facts *f)
{
	static const struct name names[] = { NAME("key") };
	int at[1];

	f->has_taints = 1;
	for (int m = 0, el = 1; m < pool[0].size; m++, el = skip(d, el)) {
		if (element(d, el, m, names, 1, at, "spec.taints") < 0)
			return -1;
		if (f->oos_taint < 0 && TOK_IS(d, at[0], NODE_TAINT_KEY))
			f->oos_taint = m;
	}
	return 0;
}


static int read_conditions(struct doc *d, struct node_facts *f)
{
	static const struct name names[] = { NAME("type"), NAME("status"), NAME("lastTransitionTime") };
	int at[3], ready = -1;
	char when[64];

	for (int m = 0, el = 1; m < pool[0].size; m++, el = skip(d, el)) {
		if (element(d, el, m, names, 3, at, "status.conditions") < 0)
			return -1;
		if (!TOK_IS(d, at[0], "Ready"))
			continue;
		/* Two Ready conditions: which one the API server meant is a guess. */
		if (ready >= 0)
			return text_fail(d->why, d->whylen, "status.conditions[%d] is a second Ready condition, after [%d] (byte %zu)",
			    m, ready, d->base + (size_t)pool[el].start);
		ready = m;
		if (at[1] < 0)
			return text_fail(d->why, d->whylen, "status.conditions[%d].status is missing (byte %zu)", m,
			    d->base + (size_t)pool[el].start);
		if (pool[at[1]].type != JSMN_STRING)
			return wrong(d, at[1], '"', "status.conditions", m, "status");
		f->ready = TOK_IS(d, at[1], "True") ? NODE_READY_TRUE : TOK_IS(d, at[1], "False") ? NODE_READY_FALSE :
		    TOK_IS(d, at[1], "Unknown") ? NODE_READY_UNKNOWN : NODE_READY_NONE;
		if (at[2] >= 0 && !is_null(d, at[2]) && pool[at[2]].type != JSMN_STRING)
			return wrong(d, at[2], '"', "status.conditions", m, "lastTransitionTime");
		int len = at[2] >= 0 && pool[at[2]].type == JSMN_STRING ?
		    str_copy(d->js + pool[at[2]].start, (size_t)(pool[at[2]].end - pool[at[2]].start), when, sizeof when) : -1;
		f->ready_since = len > 0 ? text_rfc3339(when, (size_t)len) : -1;
	}
	return 0;
}

/*
 * One item to its facts: the scanner located its members and checked their grammar; here each
 * is checked for its type, and taints and conditions are tokenized, one at a time.
 */
int json_node_facts(const struct json_item *it, const struct node_keys *k, struct node_facts *f,
    char *why, size_t whylen)
{
	struct doc d = { .why = why, .whylen = whylen };
	int r;

	memset(f, 0, sizeof *f);
	f->ready = NODE_READY_NONE;
	f->ready_since = -1;
	f->tainted_at = -1;
	f->oos_taint = -1;
	if (!it->p)
		return text_fail(why, whylen, "its object is %zu bytes, more than the buffer holds", it->len);
	for (int j = 0; j < JSON_MEMBERS; j++)
		if ((it->twice >> j & 1) && member_path[j][0])
			return text_fail(why, whylen, "%s appears twice", member_path[j]);
	const char *meta = it->m[JSON_METADATA].at ? it->p + it->m[JSON_METADATA].at : "n";
	if (*meta != '{' && *meta != 'n')
		return text_fail(why, whylen, "metadata is %s, not an object (byte %zu)", what(*meta), it->m[JSON_METADATA].at);
	/* Read first: the name of a node refused for what follows still helps the log line. */
	if (read_id(it, JSON_NAME, f->name, sizeof f->name, why, whylen) < 0 ||
	    read_id(it, JSON_UID, f->uid, sizeof f->uid, why, whylen) < 0 ||
	    read_id(it, JSON_RV, f->rv, sizeof f->rv, why, whylen) < 0)
		return -1;
	if (read_maps(it, k, f, why, whylen) < 0)
		return -1;
	for (int j = JSON_SPEC; j <= JSON_STATUS; j++) {
		const char *v = it->m[j].at ? it->p + it->m[j].at : "n";
		if (*v != '{' && *v != 'n')
			return text_fail(why, whylen, "%s is %s, not an object (byte %zu)", member_path[j], what(*v), it->m[j].at);
	}
	if ((r = member(&d, it, JSON_TAINTS, '[')) < 0 || (r && read_taints(&d, f) < 0))
		return -1;
	if ((r = member(&d, it, JSON_CONDITIONS, '[')) < 0 || (r && read_conditions(&d, f) < 0))
		return -1;
	return 0;
}

/* Tokenizes body, which must be one valid JSON object (what: its name for a reason). */
static int object_doc(struct doc *d, const char *body, size_t len, const char *name)
{
	char why[160];
	size_t b = 0, bad;

	while (b < len && is_ws((unsigned char)body[b]))
		b++;
	if (json_check(body, len, &bad, why, sizeof why) < 0)
		return text_fail(d->why, d->whylen, "%s is not JSON: %s (byte %zu)", name, why, bad);
	if (body[b] != '{')
		return text_fail(d->why, d->whylen, "%s is %s, not an object", name, what(body[b]));
	return tokenize(d, body + b, len - b, b, name);
}

/* A Status's reason and message, made safe for one log line. */
int json_status(const char *body, size_t len, char *reason, size_t rlen, char *msg, size_t mlen)
{
	static const struct name names[] = { NAME("reason"), NAME("message") };
	char why[160];
	struct doc d = { .why = why, .whylen = sizeof why };
	int at[2];

	if (rlen)
		reason[0] = '\0';
	if (mlen)
		msg[0] = '\0';
	if (object_doc(&d, body, len, "the Status") < 0)
		return -1;
	/* Duplicates only blur a log line here, so take the first rather than lose the text. */
	lookup(&d, 0, names, 2, at, 1, "", -1);
	if (at[0] >= 0 && pool[at[0]].type == JSMN_STRING)
		str_log(d.js + pool[at[0]].start, (size_t)(pool[at[0]].end - pool[at[0]].start), reason, rlen);
	if (at[1] >= 0 && pool[at[1]].type == JSMN_STRING)
		str_log(d.js + pool[at[1]].start, (size_t)(pool[at[1]].end - pool[at[1]].start), msg, mlen);
	return 0;
}

/* A string member of a Lease at token i (-1: absent) into out: absent or null is "". */
static int lease_str(const struct doc *d, int i, const char *path, char *out, size_t cap)
{
	out[0] = '\0';
	if (i < 0 || is_null(d, i))
		return 0;
	if (pool[i].type != JSMN_STRING)
		return wrong(d, i, '"', path, -1, NULL);
	if (str_copy(d->js + pool[i].start, (size_t)(pool[i].end - pool[i].start), out, cap) < 0)
		return text_fail(d->why, d->whylen, "%s is longer than %zu bytes or holds a NUL (byte %zu)", path, cap - 1,
		    d->base + (size_t)pool[i].start);
	return 0;
}

/* A whole-number member of a Lease at token i (-1: absent) into *out: absent or null is 0. */
static int lease_int(const struct doc *d, int i, const char *path, long *out)
{
	const char *v;
	size_t n;
	long x = 0;

	*out = 0;
	if (i < 0 || is_null(d, i))
		return 0;
	v = d->js + pool[i].start;
	n = (size_t)(pool[i].end - pool[i].start);
	for (size_t k = 0; k < n && x >= 0; k++)
		x = v[k] >= '0' && v[k] <= '9' ? x * 10 + (v[k] - '0') : -1;
	if (pool[i].type != JSMN_PRIMITIVE || n == 0 || n > 10 || x < 0 || x > 2147483647L)
		return text_fail(d->why, d->whylen, "%s is not a whole number from 0 to 2147483647 (byte %zu)", path,
		    d->base + (size_t)pool[i].start);
	*out = x;
	return 0;
}

/* A Lease's resourceVersion and spec, for leader election. */
int json_lease(const char *body, size_t len, struct json_lease *l, char *why, size_t whylen)
{
	static const struct name top[] = { NAME("metadata"), NAME("spec") };
	static const struct name meta[] = { NAME("resourceVersion") };
	static const struct name spec[] = { NAME("holderIdentity"), NAME("leaseDurationSeconds"),
		NAME("acquireTime"), NAME("renewTime"), NAME("leaseTransitions") };
	struct doc d = { .why = why, .whylen = whylen };
	int at[2], m[1], sp[5] = { -1, -1, -1, -1, -1 };

	memset(l, 0, sizeof *l);
	if (object_doc(&d, body, len, "the Lease") < 0 || lookup(&d, 0, top, 2, at, 0, "", -1) < 0)
		return -1;
	if (at[0] < 0 || pool[at[0]].type != JSMN_OBJECT)
		return at[0] < 0 ? text_fail(why, whylen, "metadata is missing") : wrong(&d, at[0], '{', "metadata", -1, NULL);
	if (lookup(&d, at[0], meta, 1, m, 0, "metadata", -1) < 0 ||
	    lease_str(&d, m[0], "metadata.resourceVersion", l->rv, sizeof l->rv) < 0)
		return -1;
	if (!l->rv[0])
		return text_fail(why, whylen, "metadata.resourceVersion is missing or empty");
	if (at[1] >= 0 && !is_null(&d, at[1])) {
		if (pool[at[1]].type != JSMN_OBJECT)
			return wrong(&d, at[1], '{', "spec", -1, NULL);
		if (lookup(&d, at[1], spec, 5, sp, 0, "spec", -1) < 0)
			return -1;
	}
	if (lease_str(&d, sp[0], "spec.holderIdentity", l->holder, sizeof l->holder) < 0 ||
	    lease_int(&d, sp[1], "spec.leaseDurationSeconds", &l->duration) < 0 ||
	    lease_str(&d, sp[2], "spec.acquireTime", l->acquire, sizeof l->acquire) < 0 ||
	    lease_str(&d, sp[3], "spec.renewTime", l->renew, sizeof l->renew) < 0 ||
	    lease_int(&d, sp[4], "spec.leaseTransitions", &l->transitions) < 0)
		return -1;
	return 0;
}

/*
 * The token of the value at path[0..n) (member names) from the document's object: -1 when a
 * member on the way is absent or null, -1 with a reason when one on the way is not an object
 * or any is written twice (an answer that may mean two things is not read).
 */
static int dig(struct doc *d, const char *const *path, int n, int *at)
{
	char w[128] = "";
	int o = 0;

	for (int i = 0; i < n; i++) {
		const struct name nm = { path[i], strlen(path[i]) };
		size_t k = strlen(w);
		if (pool[o].type != JSMN_OBJECT)
			return wrong(d, o, '{', w, -1, NULL);
		if (lookup(d, o, &nm, 1, at, 0, w, -1) < 0)
			return -1;
		snprintf(w + k, sizeof w - k, "%s%s", k ? "." : "", path[i]);
		if (*at < 0 || is_null(d, *at)) {
			*at = -1;
			return 0;
		}
		o = *at;
	}
	return 0;
}

/*
 * The token of the value at path[0..n) in body, which must be one valid JSON object (name: what
 * it is, for a reason): -1 with a reason when it cannot be read or the value is absent or null.
 */
static int required(struct doc *d, const char *body, size_t len, const char *name, const char *const *path, int n)
{
	char w[128] = "";
	int at;

	if (object_doc(d, body, len, name) < 0 || dig(d, path, n, &at) < 0)
		return -1;
	for (int i = 0; at < 0 && i < n; i++)
		snprintf(w + strlen(w), sizeof w - strlen(w), "%s%s", i ? "." : "", path[i]);
	return at >= 0 ? at : text_fail(d->why, d->whylen, "%s has no %s", name, w);
}

/* Whether token i is the literal true (1), false (0), or neither (-1). */
static int boolean(const struct doc *d, int i)
{
	if (pool[i].type != JSMN_PRIMITIVE)
		return -1;
	return d->js[pool[i].start] == 't' ? 1 : d->js[pool[i].start] == 'f' ? 0 : -1;
}

/* An access review's verdict, and its reason for the log. */
int json_access_review(const char *body, size_t len, int *allowed, char *reason, size_t rlen, char *why,
    size_t whylen)
{
	static const char *const p_allowed[] = { "status", "allowed" }, *const p_denied[] = { "status", "denied" },
	    *const p_reason[] = { "status", "reason" };
	struct doc d = { .why = why, .whylen = whylen };
	int at, denied = 0;

	*allowed = 0;
	if (rlen)
		reason[0] = '\0';
	if ((at = required(&d, body, len, "the access review", p_allowed, 2)) < 0)
		return -1;
	if ((*allowed = boolean(&d, at)) < 0) {
		*allowed = 0;
		return wrong(&d, at, 't', "status.allowed", -1, NULL);
	}
	if (dig(&d, p_denied, 2, &at) < 0)
		return -1;
	if (at >= 0 && (denied = boolean(&d, at)) < 0)
		return wrong(&d, at, 't', "status.denied", -1, NULL);
	if (*allowed && denied) {
		*allowed = 0;
		return text_fail(why, whylen, "the access review says both allowed and denied");
	}
	if (dig(&d, p_reason, 2, &at) == 0 && at >= 0 && pool[at].type == JSMN_STRING)
		str_log(d.js + pool[at].start, (size_t)(pool[at].end - pool[at].start), reason, rlen);
	return 0;
}

/* The user a SelfSubjectReview names. */
int json_self_user(const char *body, size_t len, char *user, size_t cap, char *why, size_t whylen)
{
	static const char *const path[] = { "status", "userInfo", "username" };
	struct doc d = { .why = why, .whylen = whylen };
	int at;

	if (cap)
		user[0] = '\0';
	if ((at = required(&d, body, len, "the user review", path, 3)) < 0)
		return -1;
	if (pool[at].type != JSMN_STRING)
		return wrong(&d, at, '"', "status.userInfo.username", -1, NULL);
	str_log(d.js + pool[at].start, (size_t)(pool[at].end - pool[at].start), user, cap);
	if (cap == 0 || user[0] == '\0')
		return text_fail(why, whylen, "status.userInfo.username is empty");
	return 0;
}
