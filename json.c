/*
 * Reading Kubernetes JSON without allocating, and writing small JSON documents.
 * json_list_feed cuts a NodeList body into its items as the bytes arrive, holding one item at a
 * time in the caller's buffer; json_node_facts walks one Node (jsmn tokenizes its taints and
 * conditions into a static token pool when they are not plain objects of strings) and keeps
 * only its facts; json_status reads a Status; json_buf writes escaped text.
 * Nothing here allocates, does I/O or decides anything about a node. Not reentrant: one pool.
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
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "json.h"
#include "text.h"

/* 320 KiB with parent links: static, so no caller's stack has to hold it. */
static jsmntok_t pool[JSON_TOKENS];

static int is_ws(int c)
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

/* Code point to UTF-8 in u; returns its length. */
static int put_utf8(uint32_t cp, unsigned char *u)
{
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	u[0] = (unsigned char)(0xf0 | cp >> 18);
	u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	u[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

static int hex4(const char *s, uint32_t *cp)
{
	uint32_t v = 0;

	for (int j = 0; j < 4; j++) {
		int h = text_hexval((unsigned char)s[j]);
		if (h < 0)
			return -1;
		v = v << 4 | (uint32_t)h;
	}
	*cp = v;
	return 0;
}

/*
 * Decodes the next character of the JSON string body s[*i..n) into u (1-4 bytes) and returns
 * its length, or -1 on a bad escape or a raw control character. A surrogate that is not half
 * of a pair becomes U+FFFD, as Go's decoder (the API server's) does.
 */
static int next_char(const char *s, size_t n, size_t *i, unsigned char *u)
{
	unsigned char c = (unsigned char)s[*i];
	uint32_t cp, lo;

	if (c < 0x20)
		return -1;
	if (c != '\\') {
		u[0] = c;
		(*i)++;
		return 1;
	}
	if (*i + 1 >= n)
		return -1;
	c = (unsigned char)s[*i + 1];
	if (c != 'u') {
		int e = simple_escape(c);
		if (e < 0)
			return -1;
		u[0] = (unsigned char)e;
		*i += 2;
		return 1;
	}
	if (*i + 6 > n || hex4(s + *i + 2, &cp) < 0)
		return -1;
	*i += 6;
	if (cp >= 0xd800 && cp < 0xdc00 && *i + 6 <= n && s[*i] == '\\' && s[*i + 1] == 'u' &&
	    hex4(s + *i + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
		*i += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	} else if (cp >= 0xd800 && cp < 0xe000) {
		cp = 0xfffd;
	}
	return put_utf8(cp, u);
}

/* Whether the JSON string body s[0..n) decodes to exactly lit[0..ln). */
static int str_eq(const char *s, size_t n, const char *lit, size_t ln)
{
	unsigned char u[4];
	size_t i, j = 0;

	/* Unescaping never lengthens: \X gives 1 byte, \uXXXX at most 3, a pair of them 4. */
	if (n < ln)
		return 0;
	/*
	 * Before its first backslash the text is its own decoding, so a difference there is final;
	 * a text with no backslash in its first ln bytes that matches them is lit only if it ends.
	 */
	for (i = 0; i < ln && s[i] != '\\'; i++)
		if (s[i] != lit[i])
			return 0;
	if (i == ln)
		return n == ln;
	for (i = 0; i < n;) {
		int k = next_char(s, n, &i, u);
		if (k < 0 || (size_t)k > ln - j || memcmp(lit + j, u, (size_t)k) != 0)
			return 0;
		j += (size_t)k;
	}
	return j == ln;
}

/*
 * Decodes the JSON string body s[0..n) into out[0..cap) and NUL-terminates it.
 * Returns its length, or -1 on a bad escape, a control character or NUL, or when it does not fit.
 */
static int str_copy(const char *s, size_t n, char *out, size_t cap)
{
	unsigned char u[4];
	size_t i = 0, j = 0;

	while (i < n) {
		int k = next_char(s, n, &i, u);
		if (k < 0 || (k == 1 && u[0] < 0x20) || (size_t)k >= cap - j)
			return -1;
		memcpy(out + j, u, (size_t)k);
		j += (size_t)k;
	}
	out[j] = '\0';
	return (int)j;
}

/*
 * Decodes s[0..n) into out[0..cap) for a log line: control characters become spaces, a bad
 * escape ends the text, and it is cut at a character boundary when too long.
 */
static void str_log(const char *s, size_t n, char *out, size_t cap)
{
	unsigned char u[4];
	size_t i = 0, j = 0;

	if (cap == 0)
		return;
	while (i < n) {
		int k = next_char(s, n, &i, u);
		if (k < 0) {
			if ((unsigned char)s[i] >= 0x20)
				break;
			u[0] = ' ';
			k = 1;
			i++;
		}
		if ((size_t)k >= cap - j)
			break;
		if (k == 1 && (u[0] < 0x20 || u[0] == 0x7f))
			u[0] = ' ';
		memcpy(out + j, u, (size_t)k);
		j += (size_t)k;
	}
	/* A raw multi-byte character cut by the limit would make the line invalid UTF-8. */
	if (i < n) {
		size_t b = j;
		while (b > 0 && ((unsigned char)out[b - 1] & 0xc0) == 0x80)
			b--;
		if (b > 0 && (unsigned char)out[b - 1] >= 0xc0) {
			unsigned char lead = (unsigned char)out[b - 1];
			size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
			if (j - (b - 1) < want)
				j = b - 1;
		}
	}
	out[j] = '\0';
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, true, false or null. */
static int prim_ok(const char *s, size_t n)
{
	size_t i = 0, d;

	if (n == 4 && (memcmp(s, "true", 4) == 0 || memcmp(s, "null", 4) == 0))
		return 1;
	if (n == 5 && memcmp(s, "false", 5) == 0)
		return 1;
	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && s[i] >= '1' && s[i] <= '9')
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return 0;
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	return i == n;
}

#define DEPTH_MAX 64 /* k3s nodes nest about 10 deep (managedFields); one bit each below */

/* Bytes that matter outside a string inside a raw value: 1 quote, 2 open, 3 close. */
static const unsigned char raw_cls[256] = {
	['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 3,
};
/* Bytes that end a run inside a string: quote, backslash, control characters. */
static const unsigned char str_cls[256] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	['"'] = 1, ['\\'] = 1,
};

#define ONES 0x0101010101010101ull
#define HIGH 0x8080808080808080ull

/*
 * A mask with the high bit set in each of 8 bytes (little-endian) that is a quote, a backslash
 * or a control character; bits above the first such byte may be spurious, the lowest is exact.
 */
static inline uint64_t word_special(uint64_t w)
{
	uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
	return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w)) & HIGH;
}

#ifdef JSON_SSE2
/* Loaded rather than built at each call: a string is 25 bytes on average, so the setup counts. */
#define X16(c) { c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c }
static const unsigned char v_quote[16] __attribute__((aligned(16))) = X16('"');
static const unsigned char v_backslash[16] __attribute__((aligned(16))) = X16('\\');
static const unsigned char v_control[16] __attribute__((aligned(16))) = X16(0x1f);
#endif

/* From p[i], the index of the first quote, backslash or control character, or n. */
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
		unsigned bits = (unsigned)_mm_movemask_epi8(m);
		if (bits)
			return i + (size_t)__builtin_ctz(bits);
		i += 16;
	}
#endif
	/* Word at a time where the byte order allows it: strings are most of a node's bytes. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (i + 8 <= n) {
		uint64_t w, m;
		memcpy(&w, p + i, 8);
		if ((m = word_special(w)) != 0)
			return i + ((size_t)__builtin_ctzll(m) >> 3);
		i += 8;
	}
#endif
	while (i < n && !str_cls[p[i]])
		i++;
	return i;
}

/* The index just past the string whose opening quote is s[i], or 0 if malformed. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
	const unsigned char *p = (const unsigned char *)s;

	for (i++;;) {
		i = string_run(p, n, i);
		if (i == n || p[i] < 0x20)
			return 0;
		if (p[i] == '"')
			return i + 1;
		if (i + 1 == n)
			return 0;
		if (p[i + 1] == 'u') {
			uint32_t cp;
			if (i + 6 > n || hex4(s + i + 2, &cp) < 0)
				return 0;
			i += 6;
		} else if (simple_escape(p[i + 1]) >= 0) {
			i += 2;
		} else {
			return 0;
		}
	}
}

/*
 * The index just past the value starting at s[i], or 0 if malformed. Inside an object or
 * array only strings, escapes and brackets are checked: this is how the members json.c never
 * reads (managedFields, images) are passed over at memory speed.
 */
static size_t skip_value(const char *s, size_t n, size_t i)
{
	const unsigned char *p = (const unsigned char *)s;
	uint64_t arrays = 0;
	int depth = 0;
	size_t b = i;

	if (i >= n)
		return 0;
	if (p[i] == '"')
		return skip_string(s, n, i);
	if (p[i] != '{' && p[i] != '[') {
		while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && !is_ws(p[i]))
			i++;
		return prim_ok(s + b, i - b) ? i : 0;
	}
	while (i < n) {
		while (i < n && !raw_cls[p[i]])
			i++;
		if (i == n)
			return 0;
		int c = p[i];
		if (c == '"') {
			/* The common string, with no escape, ends at the first quote after it. */
			size_t e = string_run(p, n, i + 1);
			if (e < n && p[e] == '"')
				i = e + 1;
			else if ((i = skip_string(s, n, i)) == 0)
				return 0;
			continue;
		}
		i++;
		if (c == '{' || c == '[') {
			if (depth >= DEPTH_MAX)
				return 0;
			if (c == '[')
				arrays |= 1ull << depth;
			depth++;
			continue;
		}
		depth--;
		if ((c == ']') != ((arrays >> depth & 1) != 0))
			return 0;
		arrays &= ~(1ull << depth);
		if (depth == 0)
			return i;
	}
	return 0;
}

/*
 * The list splitter whose item() is running, or NULL. It noted where the item's containers at
 * depth 1 and 2 end (managedFields, images: most of a node's bytes), after checking their strings,
 * escapes and brackets exactly as skip_value does (nesting more tightly: 64 counted from the list);
 * json_node_facts handed the same bytes, buf and len, jumps over them instead of scanning again.
 */
static const struct json_list *handed;

/* skip_value, answered from l's spans (l NULL: none) when the value at s[i] is one of them. */
static size_t skip_member(const char *s, size_t n, size_t i, const struct json_list *l)
{
	if (l && i < n && (s[i] == '{' || s[i] == '[')) {
		int lo = 0, hi = l->nspans;
		/* noted in the order they open, so sorted by where they start */
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (l->spans[mid].at < i)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < l->nspans && l->spans[lo].at == i) {
			size_t e = l->spans[lo].end;
			if (e > i + 1 && e <= n && s[e - 1] == (s[i] == '{' ? '}' : ']'))
				return e;
		}
	}
	return skip_value(s, n, i);
}

/* Walks the members of one object with the full grammar, skipping their values quickly. */
struct members {
	const char *s;
	size_t n, i;
	int first;
};

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && is_ws((unsigned char)s[i]))
		i++;
	return i;
}

/* Starts at the '{' at s[i]; -1 if there is none. */
static int members_open(struct members *m, const char *s, size_t n, size_t i)
{
	m->s = s;
	m->n = n;
	m->i = i + 1;
	m->first = 1;
	return i < n && s[i] == '{' ? 0 : -1;
}

/*
 * The next member's key, its body s[*k..*ke), with m->i left at the start of its value.
 * Returns 1, 0 after the closing '}' (m->i just past it), or -1 if malformed.
 */
static int members_key(struct members *m, size_t *k, size_t *ke)
{
	const char *s = m->s;
	size_t n = m->n, i = skip_ws(s, n, m->i), e;

	if (i < n && s[i] == '}') {
		m->i = i + 1;
		return 0;
	}
	if (!m->first) {
		if (i == n || s[i] != ',')
			return -1;
		i = skip_ws(s, n, i + 1);
	}
	if (i == n || s[i] != '"' || (e = skip_string(s, n, i)) == 0)
		return -1;
	*k = i + 1;
	*ke = e - 1;
	i = skip_ws(s, n, e);
	if (i == n || s[i] != ':')
		return -1;
	m->i = skip_ws(s, n, i + 1);
	m->first = 0;
	return 1;
}

/* A member's value found by find(): s[at..end), at == 0 when absent. */
struct val {
	size_t at, end;
};

/* A member name looked for, with its length counted at compile time. */
struct name {
	const char *s;
	size_t n;
};
#define NAME(lit) { lit, sizeof lit - 1 }

/* What find() looks for in one object; sub[j], when set, is looked for inside value j. */
struct want {
	const struct name *names;
	int n;
	struct val *out;
	const struct want *const *sub;
};

/*
 * Finds the values of w->names among the members of the object at s[i], in one pass: a value
 * with a sub-want that is an object is walked for it, every other value is skipped.
 * Returns the index just past the object, or 0 when it is malformed or one of the names
 * appears twice: the API server's decoder keeps the last and a first-wins reader the first,
 * and we never act on a guess between them.
 */
static size_t find(const char *s, size_t n, size_t i, const struct want *w, const struct json_list *sp)
{
	struct members m;
	size_t k, ke, e;
	int r, j;

	for (j = 0; j < w->n; j++)
		w->out[j].at = w->out[j].end = 0;
	if (members_open(&m, s, n, i) < 0)
		return 0;
	while ((r = members_key(&m, &k, &ke)) == 1) {
		for (j = 0; j < w->n; j++)
			if (str_eq(s + k, ke - k, w->names[j].s, w->names[j].n))
				break;
		if (j < w->n && w->out[j].at)
			return 0;
		if (j < w->n && w->sub && w->sub[j] && m.i < n && s[m.i] == '{')
			e = find(s, n, m.i, w->sub[j], sp);
		else
			e = skip_member(s, n, m.i, sp);
		if (e == 0)
			return 0;
		if (j < w->n) {
			w->out[j].at = m.i;
			w->out[j].end = e;
		}
		m.i = e;
	}
	return r == 0 ? m.i : 0;
}

/* What a found value is: 0 absent or null, '"' string, '{' object, '[' array, 'p' other. */
static int kind(const char *s, const struct val *v)
{
	if (!v->at || s[v->at] == 'n')
		return 0;
	if (s[v->at] == '"' || s[v->at] == '{' || s[v->at] == '[')
		return s[v->at];
	return 'p';
}

/* A found string value into out[0..cap); -1 if it is not a string or does not fit. */
static int val_copy(const char *s, const struct val *v, char *out, size_t cap)
{
	if (kind(s, v) != '"')
		return -1;
	return str_copy(s + v->at + 1, v->end - v->at - 2, out, cap);
}

/* A parsed document: the text and its tokens in the pool. */
struct doc {
	const char *js;
	const jsmntok_t *t;
	int n;
};

/*
 * Tokenizes js[0..len), which must be exactly one JSON value of type want (whitespace aside).
 * jsmn is lenient about structure, so the tree it built is checked here: an object's children
 * are keys with one value each, nothing hangs off a primitive or a plain string, and every
 * primitive is a JSON literal or number. Commas are the one thing left unchecked.
 */
static int parse(struct doc *d, const char *js, size_t len, jsmntype_t want)
{
	jsmn_parser p;
	size_t e;
	int r;

	if (len > INT_MAX)
		return -1;
	jsmn_init(&p);
	r = jsmn_parse(&p, js, len, pool, JSON_TOKENS);
	if (r < 1 || pool[0].type != want)
		return -1;
	for (e = (size_t)pool[0].end; e < len && is_ws((unsigned char)js[e]); e++)
		;
	if (e != len)
		return -1;
	d->js = js;
	d->t = pool;
	d->n = (int)p.toknext;
	for (int i = 1; i < d->n; i++) {
		const jsmntok_t *t = &pool[i];
		if (t->parent < 0)
			return -1;
		jsmntype_t up = pool[t->parent].type;
		if (up == JSMN_OBJECT) {
			if (t->type != JSMN_STRING || t->size != 1)
				return -1;
		} else if (up == JSMN_PRIMITIVE) {
			return -1;
		} else if (t->type == JSMN_STRING && t->size != 0) {
			return -1;
		}
		if (t->type == JSMN_PRIMITIVE && !prim_ok(js + t->start, (size_t)(t->end - t->start)))
			return -1;
	}
	return 0;
}

/* The index just past the value at i and everything inside it. */
static int skip(const struct doc *d, int i)
{
	int end = d->t[i].end;

	for (i++; i < d->n && d->t[i].start < end; i++)
		;
	return i;
}

static int is_type(const struct doc *d, int i, jsmntype_t type)
{
	return i >= 0 && d->t[i].type == type;
}

static int is_null(const struct doc *d, int i)
{
	return is_type(d, i, JSMN_PRIMITIVE) && d->js[d->t[i].start] == 'n';
}

static int tok_eq(const struct doc *d, int i, const char *lit, size_t ln)
{
	return str_eq(d->js + d->t[i].start, (size_t)(d->t[i].end - d->t[i].start), lit, ln);
}

static int tok_copy(const struct doc *d, int i, char *out, size_t cap)
{
	if (!is_type(d, i, JSMN_STRING))
		return -1;
	return str_copy(d->js + d->t[i].start, (size_t)(d->t[i].end - d->t[i].start), out, cap);
}

/*
 * Finds the values of names[0..nn) in the object at o: at[j] is the token of the value of
 * names[j], or -1. Returns -1 when one of them appears twice: the API server's decoder keeps
 * the last and a first-wins reader the first, and we never act on a guess between them.
 */
static int lookup(const struct doc *d, int o, const struct name *names, int nn, int *at)
{
	int k = o + 1;

	for (int j = 0; j < nn; j++)
		at[j] = -1;
	for (int m = 0; m < d->t[o].size; m++) {
		for (int j = 0; j < nn; j++) {
			if (tok_eq(d, k, names[j].s, names[j].n)) {
				if (at[j] >= 0)
					return -1;
				at[j] = k + 1;
				break;
			}
		}
		k = skip(d, k + 1);
	}
	return 0;
}

/* An optional member: absent or null -> 0, the wanted type -> 1, anything else -> -1. */
static int optional(const struct doc *d, int i, jsmntype_t type)
{
	if (i < 0 || is_null(d, i))
		return 0;
	return is_type(d, i, type) ? 1 : -1;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned dd)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + dd - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char *s, int k)
{
	int v = 0;

	for (int j = 0; j < k; j++) {
		if (s[j] < '0' || s[j] > '9')
			return -1;
		v = v * 10 + (s[j] - '0');
	}
	return v;
}

/* RFC 3339 (2026-11-30T03:02:35Z, fractions and +hh:mm allowed) to Unix seconds; -1 if not one. */
static int64_t rfc3339(const char *s, size_t n)
{
	static const unsigned char mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, dd, h, mi, sec, off = 0;
	size_t i = 19;

	if (n < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
	    s[16] != ':')
		return -1;
	y = digits(s, 4), mo = digits(s + 5, 2), dd = digits(s + 8, 2);
	h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || dd < 1 || dd > mdays[mo - 1] || h > 23 || mi > 59 ||
	    sec > 60 || h < 0 || mi < 0 || sec < 0)
		return -1;
	if (mo == 2 && dd == 29 && (y % 4 != 0 || (y % 100 == 0 && y % 400 != 0)))
		return -1;
	if (s[i] == '.') {
		size_t f = ++i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == f)
			return -1;
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i + 6 <= n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
		int oh = digits(s + i + 1, 2), om = digits(s + i + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return -1;
		off = (oh * 3600 + om * 60) * (s[i] == '-' ? -1 : 1);
		i += 6;
	} else {
		return -1;
	}
	if (i != n)
		return -1;
	int64_t t = days_from_civil(y, (unsigned)mo, (unsigned)dd) * 86400 + h * 3600 + mi * 60 + sec - off;
	return t < 0 ? -1 : t;
}

/*
 * The next member of the object walked by m, whose values must all be strings: 1 with the key
 * body s[*k..*ke) and the value body s[*v..*ve), 0 after the closing '}', -1 if malformed, if a
 * value is not a string, or past (JSON_TOKENS - 1) / 2 members (*count): the bound the token
 * pool set when jsmn read these objects (1 + 2 tokens a member), kept so the same nodes are read.
 */
static int str_member(struct members *m, int *count, size_t *k, size_t *ke, size_t *v, size_t *ve)
{
	int r = members_key(m, k, ke);
	size_t e;

	if (r <= 0)
		return r;
	if (++*count > (JSON_TOKENS - 1) / 2)
		return -1;
	if (m->i >= m->n || m->s[m->i] != '"' || (e = skip_string(m->s, m->n, m->i)) == 0)
		return -1;
	*v = m->i + 1;
	*ve = e - 1;
	m->i = e;
	return 1;
}

/* Labels and annotations are walked with the full grammar here, not tokenized: most nodes' largest members. */
static int read_labels(const char *s, const struct val *o, const struct node_keys *k, struct node_facts *f)
{
	size_t lp = k && k->prune_label ? strlen(k->prune_label) : 0;
	size_t lcp = sizeof NODE_LABEL_CONTROL_PLANE - 1, le = sizeof NODE_LABEL_ETCD - 1;
	int seen_cp = 0, seen_etcd = 0, seen_prune = 0, count = 0, r;
	size_t ks, ke, vs, ve;
	struct members m;

	if (members_open(&m, s, o->end, o->at) < 0)
		return -1;
	while ((r = str_member(&m, &count, &ks, &ke, &vs, &ve)) == 1) {
		if (str_eq(s + ks, ke - ks, NODE_LABEL_CONTROL_PLANE, lcp)) {
			if (seen_cp++)
				return -1;
			f->control_plane = 1;
		}
		if (str_eq(s + ks, ke - ks, NODE_LABEL_ETCD, le)) {
			if (seen_etcd++)
				return -1;
			f->etcd = 1;
			f->etcd_voter = str_eq(s + vs, ve - vs, "true", 4);
		}
		if (lp && str_eq(s + ks, ke - ks, k->prune_label, lp)) {
			if (seen_prune++)
				return -1;
			f->removable = str_eq(s + vs, ve - vs, "true", 4);
		}
	}
	return r == 0 && m.i == o->end ? 0 : -1;
}

static int read_annotations(const char *s, const struct val *o, const struct node_keys *k, struct node_facts *f)
{
	size_t la = k && k->annotation ? strlen(k->annotation) : 0;
	size_t ks, ke, vs, ve;
	struct members m;
	int count = 0, r;

	if (members_open(&m, s, o->end, o->at) < 0)
		return -1;
	while ((r = str_member(&m, &count, &ks, &ke, &vs, &ve)) == 1) {
		if (la && str_eq(s + ks, ke - ks, k->annotation, la)) {
			if (f->our_annotation)
				return -1;
			f->our_annotation = 1;
		}
	}
	return r == 0 && m.i == o->end ? 0 : -1;
}

static int read_taints(const struct doc *d, int a, struct node_facts *f)
{
	static const struct name names[] = { NAME("key") };
	int el = a + 1, at[1];

	f->has_taints = 1;
	f->ntaints = d->t[a].size;
	for (int m = 0; m < d->t[a].size; m++, el = skip(d, el)) {
		if (!is_type(d, el, JSMN_OBJECT) || lookup(d, el, names, 1, at) < 0)
			return -1;
		if (at[0] < 0)
			continue;
		if (!is_type(d, at[0], JSMN_STRING))
			return -1;
		if (f->oos_taint < 0 && tok_eq(d, at[0], NODE_TAINT_KEY, sizeof NODE_TAINT_KEY - 1))
			f->oos_taint = m;
	}
	return 0;
}

static int read_conditions(const struct doc *d, int a, struct node_facts *f)
{
	static const struct name names[] = { NAME("type"), NAME("status"), NAME("lastTransitionTime") };
	int el = a + 1, at[3], found = 0;
	char when[64];

	for (int m = 0; m < d->t[a].size; m++, el = skip(d, el)) {
		if (!is_type(d, el, JSMN_OBJECT) || lookup(d, el, names, 3, at) < 0)
			return -1;
		if (at[0] < 0)
			continue;
		if (!is_type(d, at[0], JSMN_STRING))
			return -1;
		if (!tok_eq(d, at[0], "Ready", 5))
			continue;
		/* Two Ready conditions: which one the API server meant is a guess. */
		if (found++)
			return -1;
		if (!is_type(d, at[1], JSMN_STRING))
			return -1;
		if (tok_eq(d, at[1], "True", 4))
			f->ready = NODE_READY_TRUE;
		else if (tok_eq(d, at[1], "False", 5))
			f->ready = NODE_READY_FALSE;
		else if (tok_eq(d, at[1], "Unknown", 7))
			f->ready = NODE_READY_UNKNOWN;
		if (optional(d, at[2], JSMN_STRING) < 0)
			return -1;
		int len = is_type(d, at[2], JSMN_STRING) ? tok_copy(d, at[2], when, sizeof when) : -1;
		f->ready_since = len > 0 ? rfc3339(when, (size_t)len) : -1;
	}
	return 0;
}

/* Walks the elements of an array with the full grammar. */
struct elems {
	const char *s;
	size_t n, i;
	int first;
};

/* Starts inside the array s[v->at..v->end); -1 if it is not one. */
static int elems_open(struct elems *a, const char *s, const struct val *v)
{
	a->s = s;
	a->n = v->end;
	a->i = v->at + 1;
	a->first = 1;
	return s[v->at] == '[' ? 0 : -1;
}

/* 1 with a->i at the next element, 0 after the closing ']' (a->i just past it), -1 if malformed. */
static int elems_next(struct elems *a)
{
	size_t i = skip_ws(a->s, a->n, a->i);

	if (i < a->n && a->s[i] == ']') {
		a->i = i + 1;
		return 0;
	}
	if (!a->first) {
		if (i == a->n || a->s[i] != ',')
			return -1;
		i = skip_ws(a->s, a->n, i + 1);
	}
	a->first = 0;
	a->i = i;
	return 1;
}

/*
 * The object at s[*i], inside s[0..n), if every value in it is a string: the value bodies of
 * names[j] in s[vs[j]..ve[j]) (vs[j] 0 when absent), *i just past it, *tokens counting what jsmn
 * would use for it. Returns 1, or 0 for anything else (not an object, another value type, a name
 * twice, malformed): then the caller asks jsmn, which decides those cases as it always has.
 */
static int flat_object(const char *s, size_t n, size_t *i, const struct name *names, int nn,
    size_t *vs, size_t *ve, size_t *tokens)
{
	struct members m;
	size_t k, ke, e;
	int r, j;

	for (j = 0; j < nn; j++)
		vs[j] = ve[j] = 0;
	if (members_open(&m, s, n, *i) < 0)
		return 0;
	++*tokens;
	while ((r = members_key(&m, &k, &ke)) == 1) {
		if (m.i >= n || s[m.i] != '"' || (e = skip_string(s, n, m.i)) == 0)
			return 0;
		*tokens += 2;
		for (j = 0; j < nn; j++)
			if (str_eq(s + k, ke - k, names[j].s, names[j].n))
				break;
		if (j < nn) {
			if (vs[j])
				return 0;
			vs[j] = m.i + 1;
			ve[j] = e - 1;
		}
		m.i = e;
	}
	*i = m.i;
	return r == 0;
}

/*
 * read_taints without jsmn, for taints as the API server writes them: objects whose values are
 * all strings, within the pool's bound. Returns 1 with f set as read_taints sets it, or 0 having
 * changed nothing: then jsmn reads them (every other case, refusals included, is decided there).
 */
static int flat_taints(const char *s, const struct val *v, struct node_facts *f)
{
	static const struct name names[] = { NAME("key") };
	size_t vs[1], ve[1], tokens = 1;
	struct elems a;
	int r, count = 0, oos = -1;

	if (v->end - v->at > INT_MAX || elems_open(&a, s, v) < 0)
		return 0;
	while ((r = elems_next(&a)) == 1) {
		if (!flat_object(s, v->end, &a.i, names, 1, vs, ve, &tokens) || tokens > JSON_TOKENS)
			return 0;
		if (vs[0] && oos < 0 && str_eq(s + vs[0], ve[0] - vs[0], NODE_TAINT_KEY, sizeof NODE_TAINT_KEY - 1))
			oos = count;
		count++;
	}
	if (r < 0 || skip_ws(s, v->end, a.i) != v->end)
		return 0;
	f->has_taints = 1;
	f->ntaints = count;
	f->oos_taint = oos;
	return 1;
}

/* read_conditions without jsmn, on the same terms as flat_taints. */
static int flat_conditions(const char *s, const struct val *v, struct node_facts *f)
{
	static const struct name names[] = { NAME("type"), NAME("status"), NAME("lastTransitionTime") };
	size_t vs[3], ve[3], tokens = 1;
	struct elems a;
	int r, found = 0, ready = NODE_READY_NONE, len;
	int64_t since = -1;
	char when[64];

	if (v->end - v->at > INT_MAX || elems_open(&a, s, v) < 0)
		return 0;
	while ((r = elems_next(&a)) == 1) {
		if (!flat_object(s, v->end, &a.i, names, 3, vs, ve, &tokens) || tokens > JSON_TOKENS)
			return 0;
		if (!vs[0] || !str_eq(s + vs[0], ve[0] - vs[0], "Ready", 5))
			continue;
		if (found++ || !vs[1])
			return 0;
		if (str_eq(s + vs[1], ve[1] - vs[1], "True", 4))
			ready = NODE_READY_TRUE;
		else if (str_eq(s + vs[1], ve[1] - vs[1], "False", 5))
			ready = NODE_READY_FALSE;
		else if (str_eq(s + vs[1], ve[1] - vs[1], "Unknown", 7))
			ready = NODE_READY_UNKNOWN;
		len = vs[2] ? str_copy(s + vs[2], ve[2] - vs[2], when, sizeof when) : -1;
		since = len > 0 ? rfc3339(when, (size_t)len) : -1;
	}
	if (r < 0 || skip_ws(s, v->end, a.i) != v->end)
		return 0;
	f->ready = ready;
	f->ready_since = since;
	return 1;
}

/* Tokenizes the found value v, which must be of type want. */
static int read_val(const char *s, const struct val *v, jsmntype_t want, struct doc *d)
{
	return parse(d, s + v->at, v->end - v->at, want);
}

/*
 * One Node object to its facts. One pass of the member scanner walks the object, its
 * metadata, spec and status with the full grammar and passes over every other value
 * (managedFields, images: most of a node's bytes) with the bracket scanner, or, for the item
 * the list splitter is handing to item(), by the ends it noted while scanning it; labels and
 * annotations are walked by the member scanner too, and so are taints and conditions made of
 * objects of strings (flat_taints, flat_conditions); jsmn tokenizes any other taints or
 * conditions. The pool's bound holds for all four (str_member and flat_object count), not the node.
 */
int json_node_facts(const char *obj, size_t len, const struct node_keys *k, struct node_facts *f)
{
	static const struct name top[] = { NAME("metadata"), NAME("spec"), NAME("status") };
	static const struct name in_meta[] = { NAME("name"), NAME("uid"), NAME("resourceVersion"), NAME("labels"),
		NAME("annotations") };
	static const struct name in_spec[] = { NAME("taints") };
	static const struct name in_status[] = { NAME("conditions") };
	struct val tv[3], mv[5], sv[1], cv[1];
	const struct want meta = { in_meta, 5, mv, NULL };
	const struct want spec = { in_spec, 1, sv, NULL };
	const struct want status = { in_status, 1, cv, NULL };
	const struct want *const subs[] = { &meta, &spec, &status };
	const struct want node = { top, 3, tv, subs };
	const struct json_list *sp = NULL;
	struct doc d;
	size_t end;
	int t;

	if (handed && obj == handed->buf && len == handed->len && !handed->skipping)
		sp = handed;
	memset(f, 0, sizeof *f);
	f->ready = NODE_READY_NONE;
	f->ready_since = -1;
	f->oos_taint = -1;
	end = find(obj, len, skip_ws(obj, len, 0), &node, sp);
	if (end == 0 || skip_ws(obj, len, end) != len || kind(obj, &tv[0]) != '{')
		return -1;
	/* Read first: the name of a node refused for what follows still helps the log line. */
	if (val_copy(obj, &mv[0], f->name, sizeof f->name) <= 0) {
		f->name[0] = '\0';
		return -1;
	}
	if (val_copy(obj, &mv[1], f->uid, sizeof f->uid) <= 0 || val_copy(obj, &mv[2], f->rv, sizeof f->rv) <= 0)
		return -1;
	/* a value that is not of the type wanted is refused; null counts as absent */
	if (kind(obj, &mv[3]) && read_labels(obj, &mv[3], k, f) < 0)
		return -1;
	f->has_annotations = kind(obj, &mv[4]) != 0;
	if (f->has_annotations && read_annotations(obj, &mv[4], k, f) < 0)
		return -1;
	if ((t = kind(obj, &tv[1])) != 0 && t != '{')
		return -1;
	if (t && kind(obj, &sv[0]) && !flat_taints(obj, &sv[0], f) &&
	    (read_val(obj, &sv[0], JSMN_ARRAY, &d) < 0 || read_taints(&d, 0, f) < 0))
		return -1;
	if ((t = kind(obj, &tv[2])) != 0 && t != '{')
		return -1;
	if (t && kind(obj, &cv[0]) && !flat_conditions(obj, &cv[0], f) &&
	    (read_val(obj, &cv[0], JSMN_ARRAY, &d) < 0 || read_conditions(&d, 0, f) < 0))
		return -1;
	return 0;
}

/* A Status's reason and message, made safe for one log line. */
int json_status(const char *body, size_t len, char *reason, size_t rlen, char *msg, size_t mlen)
{
	static const struct name names[] = { NAME("reason"), NAME("message") };
	struct doc d;
	int at[2];

	if (rlen)
		reason[0] = '\0';
	if (mlen)
		msg[0] = '\0';
	/* Duplicates only blur a log line here, so take the first rather than lose the text. */
	if (parse(&d, body, len, JSMN_OBJECT) < 0)
		return -1;
	at[0] = at[1] = -1;
	for (int m = 0, key = 1; m < d.t[0].size; m++, key = skip(&d, key + 1))
		for (int j = 0; j < 2; j++)
			if (at[j] < 0 && tok_eq(&d, key, names[j].s, names[j].n))
				at[j] = key + 1;
	if (is_type(&d, at[0], JSMN_STRING))
		str_log(body + d.t[at[0]].start, (size_t)(d.t[at[0]].end - d.t[at[0]].start), reason, rlen);
	if (is_type(&d, at[1], JSMN_STRING))
		str_log(body + d.t[at[1]].start, (size_t)(d.t[at[1]].end - d.t[at[1]].start), msg, mlen);
	return 0;
}

/*
 * The list splitter. Outside the items it follows the grammar of objects and arrays byte by
 * byte (the envelope is a few hundred bytes; its bare literals are scanned, not validated); inside an item, or a value it skips, it only tracks strings, escapes
 * and brackets, in tight loops, and copies the item's bytes a run at a time.
 */
enum {
	L_START,      /* before the top-level '{' */
	L_KEY0,       /* after '{': a key or '}' */
	L_KEY,        /* after ',': a key */
	L_KEYSTR,     /* inside a key */
	L_COLON,
	L_VALUE,
	L_AFTER,      /* after a member: ',' or '}' */
	L_CONTSTR,    /* inside metadata.continue */
	L_PRIM,       /* inside a number or literal that is skipped */
	L_ITEMS0,     /* after "items":[ : an item or ']' */
	L_ITEM,       /* after ',' in items: an item */
	L_ITEMSAFTER, /* after an item: ',' or ']' */
	L_RAW,        /* inside an item or a skipped string, object or array */
	L_DONE,       /* after the top-level '}' */
	L_FAILED      /* malformed, or stopped by item() */
};
enum { RS_VAL, RS_STR, RS_ESC, RS_HEX };
enum { W_TOP, W_META };
enum { K_OTHER, K_ITEMS, K_META, K_CONT };

/* Records why the body was refused (a longer reason is cut; it is only a log line). */
static int fail(struct json_list *l, size_t at, const char *why)
{
	snprintf(l->err, sizeof l->err, "malformed node list at byte %zu: %s", l->off + at, why);
	l->st = L_FAILED;
	return -1;
}

/* A container opens at p[i], at item depth d + 1: noted while the table has room. */
static void note_span(struct json_list *l, unsigned d, size_t i)
{
	if (l->nspans == JSON_SPANS) {
		l->span_open[d] = -1;
		return;
	}
	l->spans[l->nspans].at = i + l->span_base;
	l->spans[l->nspans].end = 0;
	l->span_open[d] = l->nspans++;
}

/*
 * Scans a raw value from p[*ip] on. Returns 1 when it ended (*ip just past its last byte),
 * 0 when the input ran out first, -1 when malformed.
 */
static int scan_raw(struct json_list *l, const unsigned char *p, size_t n, size_t *ip)
{
	size_t i = *ip;
	int depth = l->depth, c, r = 0;
	uint64_t arrays = l->arrays;
	/* depth - span_depth is 0 or 1 where a container opens at item depth 1 or 2 (see note_span) */
	int span_depth = l->in_item ? l->raw_base + 1 : INT_MIN / 2;
	unsigned sd;

	for (;;) {
		switch (l->rs) {
		case RS_VAL:
		val:
			while (i < n && !raw_cls[p[i]])
				i++;
			if (i == n)
				goto out;
			c = p[i++];
			if (c == '"') {
				/* Most strings end in this piece without an escape: finish them here. */
				i = string_run(p, n, i);
				if (i < n && p[i] == '"') {
					i++;
					if (depth == l->raw_base) {
						r = 1;
						goto out;
					}
					goto val;
				}
				l->rs = RS_STR;
			} else if (c == '{' || c == '[') {
				if (depth >= DEPTH_MAX) {
					r = fail(l, i - 1, "nested deeper than 64");
					goto out;
				}
				if (c == '[')
					arrays |= 1ull << depth;
				if ((sd = (unsigned)(depth - span_depth)) < 2)
					note_span(l, sd, i - 1);
				depth++;
				goto val;
			} else {
				depth--;
				if ((c == ']') != ((arrays >> depth & 1) != 0)) {
					r = fail(l, i - 1, "brackets do not match");
					goto out;
				}
				arrays &= ~(1ull << depth);
				if ((sd = (unsigned)(depth - span_depth)) < 2 && l->span_open[sd] >= 0)
					l->spans[l->span_open[sd]].end = i + l->span_base;
				if (depth == l->raw_base) {
					r = 1;
					goto out;
				}
				goto val;
			}
			break;
		case RS_STR:
			i = string_run(p, n, i);
			if (i == n)
				goto out;
			c = p[i++];
			if (c == '\\') {
				l->rs = RS_ESC;
			} else if (c == '"') {
				l->rs = RS_VAL;
				if (depth == l->raw_base) {
					r = 1;
					goto out;
				}
			} else {
				r = fail(l, i - 1, "control character inside a string");
				goto out;
			}
			break;
		case RS_ESC:
			if (i == n)
				goto out;
			c = p[i++];
			if (c == 'u') {
				l->hex = 0;
				l->rs = RS_HEX;
			} else if (simple_escape(c) >= 0) {
				l->rs = RS_STR;
			} else {
				r = fail(l, i - 1, "bad escape in a string");
				goto out;
			}
			break;
		case RS_HEX:
			for (; l->hex < 4 && i < n; l->hex++, i++) {
				if (text_hexval(p[i]) < 0) {
					r = fail(l, i, "bad \\u escape in a string");
					goto out;
				}
			}
			if (l->hex < 4)
				goto out;
			l->rs = RS_STR;
			break;
		}
	}
out:
	l->depth = depth;
	l->arrays = arrays;
	*ip = i;
	return r;
}

/*
 * One byte of an envelope string (a key, or metadata.continue), decoded into out[0..cap).
 * Returns 1 at the closing quote, 0 to go on, -1 if malformed. What does not fit is dropped
 * and sets l->full.
 */
static int env_byte(struct json_list *l, int c, char *out, size_t *len, size_t cap)
{
	unsigned char u[8];
	int k = 0, end = 0;

	if (l->esc >= 2) {
		int h = text_hexval(c);
		if (h < 0)
			return -1;
		l->u = l->u << 4 | (uint32_t)h;
		if (++l->esc < 6)
			return 0;
		l->esc = 0;
		uint32_t cp = l->u;
		if (l->hi && cp >= 0xdc00 && cp < 0xe000) {
			cp = 0x10000 + ((l->hi - 0xd800) << 10) + (cp - 0xdc00);
			l->hi = 0;
		}
		/* A surrogate that is not half of a pair is U+FFFD, as Go's decoder makes it. */
		if (l->hi)
			k = put_utf8(0xfffd, u);
		l->hi = 0;
		if (cp >= 0xd800 && cp < 0xdc00)
			l->hi = cp;
		else
			k += put_utf8(cp >= 0xdc00 && cp < 0xe000 ? 0xfffd : cp, u + k);
	} else {
		int byte = c;
		if (l->esc == 1) {
			if (c == 'u') {
				l->esc = 2;
				l->u = 0;
				return 0;
			}
			if ((byte = simple_escape(c)) < 0)
				return -1;
			l->esc = 0;
		} else if (c == '\\') {
			l->esc = 1;
			return 0;
		} else if (c == '"') {
			end = 1;
		} else if (c < 0x20) {
			return -1;
		}
		if (l->hi)
			k = put_utf8(0xfffd, u);
		l->hi = 0;
		if (!end)
			u[k++] = (unsigned char)byte;
	}
	if ((size_t)k > cap - *len) {
		l->full = 1;
		return end;
	}
	memcpy(out + *len, u, (size_t)k);
	*len += (size_t)k;
	return end;
}

/* Appends k bytes of the current item, or only counts them once it no longer fits. */
static void keep(struct json_list *l, const char *s, size_t k)
{
	l->size += k;
	if (l->skipping)
		return;
	if (k > l->cap - l->len) {
		l->skipping = 1;
		return;
	}
	memcpy(l->buf + l->len, s, k);
	l->len += k;
}

/* Sets up a list splitter over the caller's item buffer. */
void json_list_init(struct json_list *l, char *buf, size_t cap, json_item_fn item, void *ctx)
{
	memset(l, 0, sizeof *l);
	l->buf = buf;
	l->cap = cap;
	l->item = item;
	l->ctx = ctx;
	l->st = L_START;
}

/* Closes an object of the envelope at p[i]. */
static void close_object(struct json_list *l)
{
	l->depth--;
	if (l->where == W_META) {
		l->where = W_TOP;
		l->st = L_AFTER;
	} else {
		l->st = L_DONE;
	}
}

static void open_raw(struct json_list *l, int rs, int item)
{
	l->raw_base = l->depth;
	l->rs = rs;
	l->in_item = item;
	l->st = L_RAW;
	if (rs == RS_VAL)
		l->depth++; /* an object: arrays bit stays 0 */
}

/* Feeds the next n bytes of the body. */
int json_list_feed(struct json_list *l, const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	const struct json_list *prev;
	size_t i = 0, mark = 0;
	int c, r;

	if (l->st == L_FAILED)
		return -1;
	while (i < n) {
		if (l->st == L_RAW) {
			l->span_base = l->size - mark; /* wraps; offsets come out right mod 2^N */
			r = scan_raw(l, u, n, &i);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
			if (!l->in_item) {
				l->st = L_AFTER;
				continue;
			}
			keep(l, p + mark, i - mark);
			l->nitems++;
			l->st = L_ITEMSAFTER;
			prev = handed;
			handed = l;
			r = l->item(l->ctx, l->skipping ? NULL : l->buf, l->skipping ? l->size : l->len);
			handed = prev;
			if (r != 0) {
				snprintf(l->err, sizeof l->err, "stopped at item %d by the caller", l->nitems);
				l->st = L_FAILED;
				return r;
			}
			continue;
		}
		c = u[i];
		switch (l->st) {
		case L_START:
			if (c == '{') {
				l->depth = 1;
				l->where = W_TOP;
				l->st = L_KEY0;
			} else if (!is_ws(c)) {
				return fail(l, i, "the body is not a JSON object");
			}
			break;
		case L_KEY0:
		case L_KEY:
			if (c == '"') {
				l->keylen = 0;
				l->esc = l->full = 0;
				l->hi = 0;
				l->st = L_KEYSTR;
			} else if (c == '}' && l->st == L_KEY0) {
				close_object(l);
			} else if (!is_ws(c)) {
				return fail(l, i, "expected a key");
			}
			break;
		case L_KEYSTR:
			r = env_byte(l, c, l->key, &l->keylen, sizeof l->key);
			if (r < 0) {
				return fail(l, i, "bad escape in a key");
			} else if (r == 1) {
				/* A key too long for l->key is none of the few looked for. */
				size_t k = l->full ? 0 : l->keylen;
				l->key_is = K_OTHER;
				if (l->where == W_TOP && k == 5 && memcmp(l->key, "items", 5) == 0)
					l->key_is = K_ITEMS;
				else if (l->where == W_TOP && k == 8 && memcmp(l->key, "metadata", 8) == 0)
					l->key_is = K_META;
				else if (l->where == W_META && k == 8 && memcmp(l->key, "continue", 8) == 0)
					l->key_is = K_CONT;
				l->st = L_COLON;
			}
			break;
		case L_COLON:
			if (c == ':')
				l->st = L_VALUE;
			else if (!is_ws(c))
				return fail(l, i, "expected ':'");
			break;
		case L_VALUE:
			if (is_ws(c))
				break;
			if (l->key_is == K_ITEMS) {
				if (l->seen & 1)
					return fail(l, i, "items appears twice");
				if (c != '[')
					return fail(l, i, "items is not an array");
				l->seen |= 1;
				l->arrays |= 1ull << l->depth;
				l->depth++;
				l->st = L_ITEMS0;
			} else if (l->key_is == K_META) {
				if (l->seen & 2)
					return fail(l, i, "metadata appears twice");
				if (c != '{')
					return fail(l, i, "metadata is not an object");
				l->seen |= 2;
				l->depth++;
				l->where = W_META;
				l->st = L_KEY0;
			} else if (l->key_is == K_CONT) {
				if (l->seen & 4)
					return fail(l, i, "metadata.continue appears twice");
				if (c != '"')
					return fail(l, i, "metadata.continue is not a string");
				l->seen |= 4;
				l->contlen = 0;
				l->esc = l->full = 0;
				l->hi = 0;
				l->st = L_CONTSTR;
			} else if (c == '"') {
				open_raw(l, RS_STR, 0);
			} else if (c == '{' || c == '[') {
				open_raw(l, RS_VAL, 0);
				if (c == '[')
					l->arrays |= 1ull << l->raw_base;
			} else if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
				l->st = L_PRIM;
			} else {
				return fail(l, i, "expected a value");
			}
			break;
		case L_CONTSTR:
			r = env_byte(l, c, l->cont, &l->contlen, JSON_CONTINUE_MAX);
			if (l->full)
				return fail(l, i, "metadata.continue is longer than 4096 bytes");
			if (r < 0)
				return fail(l, i, "bad escape in metadata.continue");
			if (r == 1) {
				l->cont[l->contlen] = '\0';
				if (strlen(l->cont) != l->contlen)
					return fail(l, i, "metadata.continue holds a NUL");
				l->st = L_AFTER;
			}
			break;
		case L_PRIM:
			if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '+' ||
			    c == '-' || c == 'E')
				break;
			l->st = L_AFTER;
			continue; /* this byte belongs to what follows */
		case L_AFTER:
			if (c == ',')
				l->st = L_KEY;
			else if (c == '}')
				close_object(l);
			else if (!is_ws(c))
				return fail(l, i, "expected ',' or '}'");
			break;
		case L_ITEMS0:
		case L_ITEM:
			if (c == '{') {
				open_raw(l, RS_VAL, 1);
				l->len = l->size = 0;
				l->skipping = 0;
				l->nspans = 0;
				mark = i;
			} else if (c == ']' && l->st == L_ITEMS0) {
				l->depth--;
				l->arrays &= ~(1ull << l->depth);
				l->st = L_AFTER;
			} else if (!is_ws(c)) {
				return fail(l, i, "an element of items is not an object");
			}
			break;
		case L_ITEMSAFTER:
			if (c == ',') {
				l->st = L_ITEM;
			} else if (c == ']') {
				l->depth--;
				l->arrays &= ~(1ull << l->depth);
				l->st = L_AFTER;
			} else if (!is_ws(c)) {
				return fail(l, i, "expected ',' or ']' after an item");
			}
			break;
		case L_DONE:
			if (!is_ws(c))
				return fail(l, i, "garbage after the end of the node list");
			break;
		}
		i++;
	}
	if (l->st == L_RAW && l->in_item)
		keep(l, p + mark, n - mark);
	l->off += n;
	return 0;
}

/* After the last byte. */
int json_list_end(struct json_list *l)
{
	if (l->st == L_FAILED)
		return -1;
	if (l->st != L_DONE) {
		int in_list = (l->st == L_RAW && l->in_item) || l->st == L_ITEMS0 || l->st == L_ITEM ||
		    l->st == L_ITEMSAFTER;
		strcpy(l->err, l->st == L_START ? "body was empty" : in_list ?
		    "body ended inside the node list" : "body ended before the node list was complete");
		l->st = L_FAILED;
		return -1;
	}
	if (!(l->seen & 1)) {
		strcpy(l->err, "body has no items array: not a node list");
		l->st = L_FAILED;
		return -1;
	}
	return 0;
}

/* The writer. */
void json_buf_init(struct json_buf *b, char *p, size_t cap)
{
	b->p = p;
	b->len = 0;
	b->cap = cap;
	b->overflow = cap == 0;
}

/* Appends k bytes, keeping room for the final NUL. */
static void put(struct json_buf *b, const char *s, size_t k)
{
	if (b->overflow || k >= b->cap - b->len) {
		b->overflow = 1;
		return;
	}
	memcpy(b->p + b->len, s, k);
	b->len += k;
}

void json_raw(struct json_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* The length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		unsigned lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		unsigned lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/* s escaped for the inside of a JSON string; pointer: also ~ as ~0 and / as ~1. */
static void escape(struct json_buf *b, const char *s, int pointer)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		size_t run = 0, k;
		/* Runs of plain bytes are copied at once. */
		while (u[run] >= 0x20 && u[run] < 0x80 && u[run] != '"' && u[run] != '\\' &&
		    !(pointer && (u[run] == '~' || u[run] == '/')))
			run++;
		put(b, (const char *)u, run);
		u += run;
		if (!*u)
			break;
		if (*u == '"' || *u == '\\') {
			char e[2] = { '\\', (char)*u };
			put(b, e, 2);
			u++;
		} else if (*u < 0x20) {
			char e[6] = { '\\', 'u', '0', '0', hex[*u >> 4], hex[*u & 15] };
			put(b, e, 6);
			u++;
		} else if (*u == '~' || *u == '/') {
			put(b, *u == '~' ? "~0" : "~1", 2);
			u++;
		} else if ((k = utf8_len(u)) != 0) {
			put(b, (const char *)u, k);
			u += k;
		} else {
			/* Not UTF-8: the API server would mangle it, so the document is refused. */
			b->overflow = 1;
			return;
		}
	}
}

void json_str(struct json_buf *b, const char *s)
{
	put(b, "\"", 1);
	escape(b, s, 0);
	put(b, "\"", 1);
}

void json_ptr(struct json_buf *b, const char *s)
{
	escape(b, s, 1);
}

int json_buf_end(struct json_buf *b)
{
	if (b->cap > 0)
		b->p[b->len] = '\0'; /* put() always leaves room for it */
	if (b->overflow)
		return -1;
	return (int)b->len;
}
