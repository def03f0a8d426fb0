/*
 * The grammar: JSON (RFC 8259) checked byte by byte as it arrives, in pieces of any size, with
 * strings valid UTF-8 without lone surrogates and nesting at most JSON_DEPTH_MAX; and the
 * decoding of the strings it checked. It knows JSON only: in the containers its user (the Node
 * layout, json_list.c) named as watched, it tells the user about each value and key through the
 * hooks it is given, and captures the strings the user asks for; everywhere else it only checks.
 * Where it stands between two pieces is kept in the json_scan: the place in the grammar in st,
 * and the place inside a string, a number or a literal in fields of each, so a piece may end on
 * any byte. Nothing here allocates, and nothing here knows what a Node is.
 */
#include <stdint.h>
#include <string.h>

/* SSE2 is x86-64's baseline; JSON_NO_SIMD builds the portable path alone (to test it). */
#if defined(__SSE2__) && !defined(JSON_NO_SIMD)
#define JSON_SSE2 1
#include <emmintrin.h>
#endif

#include "json_scan.h"
#include "text.h"

/*
 * Where the scanner stands between two bytes (json_scan.st). S_VALUE is 0, so a zeroed
 * json_scan waits for its first value. Inside a string, a number or a literal, the token's own
 * place is in json_scan.str, .num or .litn.
 */
enum {
	S_VALUE, S_VALUE1,   /* a value; VALUE1 also ']' (an array's first element) */
	S_KEY, S_KEY1,       /* a key; KEY1 also '}' (an object's first member) */
	S_COLON, S_AFTER,    /* after a key; after a value: ',' or the close */
	S_STR, S_NUM, S_LIT, /* inside a token */
	S_DONE, S_FAILED
};

/* Where a string stands (json_scan.str): most of it passes in STR_BODY, by string_run. */
enum { STR_BODY, STR_ESC, STR_HEX, STR_LOW, STR_LOWU, STR_UTF8, STR_CLOSED };
/* Where a number stands (json_scan.num): after '-', after a leading 0, in digits, after '.', ..., ended */
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP, N_END };

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
static inline __attribute__((always_inline)) size_t string_run(const unsigned char *p, size_t n, size_t i)
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

/* Bytes of the string being captured: kept, or the capture marked full when they do not fit. */
static void capture(struct json_scan *sc, const unsigned char *s, size_t k)
{
	if (k > sc->tocap - sc->caplen) {
		sc->full = 1;
		return;
	}
	memcpy(sc->to + sc->caplen, s, k);
	sc->caplen += k;
}

/* Bytes of the string being read, kept when it is captured (a watched key, a value asked for). */
static inline __attribute__((always_inline)) void pass_on(struct json_scan *sc, const unsigned char *s, size_t k)
{
	if (sc->to)
		capture(sc, s, k);
}

/* The one-letter escapes a string may hold (\u is read apart). */
int json_escape_value(int c)
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

/*
 * The token readers below take the index of the piece to start from and return where they
 * stopped: at n when the piece ended inside the token, LEX_FAILED when it failed (the reason
 * given by json_scan_fail). The token's own state says whether it is whole: STR_CLOSED, N_END, a literal read to
 * its end. Returning the index, not taking its address, keeps the scan's cursor in a register.
 */
#define LEX_FAILED ((size_t)-1)

/*
 * The bytes of a character text_utf8_len did not take whole (the piece cut it, or it is not
 * UTF-8), one at a time into sc->pend until they make one character (then the string goes on,
 * STR_BODY). A byte that cannot continue it, or a fourth byte that still does not make one,
 * fails it at its first byte.
 */
static size_t lex_utf8(struct json_scan *sc, const unsigned char *p, size_t n, size_t i)
{
	for (; i < n && sc->str == STR_UTF8; i++) {
		if (sc->npend > 0 && (p[i] & 0xc0) != 0x80) {
			json_scan_fail(sc, sc->off + i - sc->npend, "invalid UTF-8 in a string");
			return LEX_FAILED;
		}
		sc->pend[sc->npend++] = p[i];
		pass_on(sc, p + i, 1);
		if (text_utf8_len(sc->pend, sc->npend) > 0)
			sc->str = STR_BODY;
		else if (sc->npend == 4) {
			json_scan_fail(sc, sc->off + i + 1 - 4, "invalid UTF-8 in a string");
			return LEX_FAILED;
		}
	}
	return i;
}

/* After the four digits of \uXXXX ending before p[i] (a low half: with bit 16 set): the string's next place. */
static int after_hex(struct json_scan *sc, size_t i)
{
	uint32_t u = sc->u;

	if (u >= 0xdc00 && u < 0xe000)
		return json_scan_fail(sc, sc->off + i, "a lone low surrogate in a string");
	if (u >> 16) {
		/* the low half of a pair (the 1 set before it is now bit 16) */
		if ((u & 0xffff) < 0xdc00 || (u & 0xffff) >= 0xe000)
			return json_scan_fail(sc, sc->off + i, "a high surrogate without its low half in a string");
		return STR_BODY;
	}
	return u >= 0xd800 && u < 0xdc00 ? STR_LOW : STR_BODY;
}

/* The rest of a string, from p[i] to just past its closing quote (then sc->str is STR_CLOSED). */
static size_t lex_string(struct json_scan *sc, const unsigned char *p, size_t n, size_t i)
{
	size_t e;
	int c, h;

	while (i < n && sc->str != STR_CLOSED) {
		switch (sc->str) {
		case STR_BODY:
			e = string_run(p, n, i);
			pass_on(sc, p + i, e - i);
			if ((i = e) == n)
				break;
			if ((c = p[i]) == '"') {
				sc->str = STR_CLOSED;
				i++;
			} else if (c < 0x20) {
				json_scan_fail(sc, sc->off + i, "a control character in a string");
				return LEX_FAILED;
			} else if (c == '\\' && i + 1 < n && p[i + 1] != 'u' && json_escape_value(p[i + 1]) >= 0) {
				pass_on(sc, p + i, 2);   /* \" and the like, the usual escapes, at once */
				i += 2;
			} else if (c == '\\') {
				pass_on(sc, p + i++, 1);
				sc->str = STR_ESC;
			} else if ((e = text_utf8_len(p + i, n - i)) > 0) {
				pass_on(sc, p + i, e);
				i += e;
			} else {
				sc->npend = 0;
				sc->str = STR_UTF8;
			}
			break;
		case STR_ESC:
			if ((c = p[i]) != 'u' && json_escape_value(c) < 0) {
				json_scan_fail(sc, sc->off + i, "a bad escape in a string");
				return LEX_FAILED;
			}
			pass_on(sc, p + i++, 1);
			sc->str = c == 'u' ? STR_HEX : STR_BODY;
			sc->u = 0;
			sc->hexn = 0;
			break;
		case STR_HEX:
			if ((h = text_hexval(p[i])) < 0) {
				json_scan_fail(sc, sc->off + i, "a bad \\u escape in a string");
				return LEX_FAILED;
			}
			sc->u = sc->u << 4 | (uint32_t)h;
			pass_on(sc, p + i++, 1);
			if (++sc->hexn == 4 && (sc->str = after_hex(sc, i)) < 0)
				return LEX_FAILED;
			break;
		case STR_LOW:
		case STR_LOWU:
			/* a high surrogate: "\u" and its low half must follow */
			if (p[i] != (sc->str == STR_LOW ? '\\' : 'u')) {
				json_scan_fail(sc, sc->off + i, "a high surrogate without its low half in a string");
				return LEX_FAILED;
			}
			pass_on(sc, p + i++, 1);
			sc->str = sc->str == STR_LOW ? STR_LOWU : STR_HEX;
			sc->u = 1; /* shifted above bit 16 by the four digits */
			sc->hexn = 0;
			break;
		default: /* STR_UTF8 */
			if ((i = lex_utf8(sc, p, n, i)) == LEX_FAILED)
				return LEX_FAILED;
			break;
		}
	}
	return i;
}

/*
 * A string's rest, the common case first: a body of plain bytes ending in this piece passes in
 * one string_run; escapes, other than ASCII and a cut are lex_string's.
 */
static inline __attribute__((always_inline)) size_t read_string(struct json_scan *sc, const unsigned char *p,
    size_t n, size_t i)
{
	if (sc->str == STR_BODY) {
		size_t e = string_run(p, n, i);
		pass_on(sc, p + i, e - i);
		if (e < n && p[e] == '"') {
			sc->str = STR_CLOSED;
			return e + 1;
		}
		i = e;   /* the plain bytes before e are done with */
	}
	return lex_string(sc, p, n, i);
}

/* The rest of a number, from p[i]: it ended before the index returned when sc->num is N_END. */
static size_t lex_number(struct json_scan *sc, const unsigned char *p, size_t n, size_t i)
{
	for (; i < n; i++) {
		int c = p[i], digit = c >= '0' && c <= '9';
		switch (sc->num) {
		case N_MINUS:
			if (!digit) {
				json_scan_fail(sc, sc->off + i, "a number without digits");
				return LEX_FAILED;
			}
			sc->num = c == '0' ? N_ZERO : N_INT;
			continue;
		case N_ZERO:
			if (digit) {
				json_scan_fail(sc, sc->off + i, "a number with a leading zero");
				return LEX_FAILED;
			}
			/* fall through */
		case N_INT:
			if (digit)
				continue;
			if (c == '.') {
				sc->num = N_DOT;
				continue;
			}
			break;
		case N_DOT:
			if (!digit) {
				json_scan_fail(sc, sc->off + i, "a number without digits after '.'");
				return LEX_FAILED;
			}
			sc->num = N_FRAC;
			continue;
		case N_FRAC:
			if (digit)
				continue;
			break;
		case N_E:
			if (c == '+' || c == '-') {
				sc->num = N_ESIGN;
				continue;
			}
			/* fall through */
		case N_ESIGN:
			if (!digit) {
				json_scan_fail(sc, sc->off + i, "a number without digits in its exponent");
				return LEX_FAILED;
			}
			sc->num = N_EXP;
			continue;
		case N_EXP:
			if (digit)
				continue;
			sc->num = N_END;
			return i;
		}
		if (c != 'e' && c != 'E') {
			sc->num = N_END;
			return i;
		}
		sc->num = N_E;
	}
	return i;
}

/* The rest of true, false or null, from p[i]: whole when sc->lit[sc->litn] is its end. */
static size_t lex_literal(struct json_scan *sc, const unsigned char *p, size_t n, size_t i)
{
	for (; sc->lit[sc->litn] && i < n; sc->litn++, i++) {
		if (p[i] != (unsigned char)sc->lit[sc->litn]) {
			json_scan_fail(sc, sc->off + i, "a bare word, not true, false or null");
			return LEX_FAILED;
		}
	}
	return i;
}

/*
 * Where the scan is within a piece, kept in registers (the helpers below are inlined) and
 * written back to the json_scan when the piece is done.
 */
struct place {
	int depth;   /* the nesting */
	int cx;      /* the kind of the innermost container, as the user named it */
};

/* The kind of the container at depth d, as the user named it. */
static inline __attribute__((always_inline)) int kind_at(const struct json_scan *sc, int d)
{
	return d < JSON_CTX_DEPTH ? sc->kind[d] : JSON_UNWATCHED;
}

/* A value ended just before p[i]: the state after it, or S_FAILED with *r what stopped the scan. */
static inline __attribute__((always_inline)) int value_end(struct json_scan *sc, const struct json_scan_hooks *h,
    const struct place *at, const char *s, size_t i, int *r)
{
	if (at->cx != JSON_UNWATCHED && (*r = h->done(sc->ctx, at->cx, at->depth, s, i)) != 0)
		return S_FAILED;
	if (at->depth > 0)
		return S_AFTER;
	return sc->seq ? S_VALUE : S_DONE;   /* a stream's next value, or the end */
}

/* c (']' or '}') at p[i] closes the innermost container: the state after it, or S_FAILED. */
static inline __attribute__((always_inline)) int close_container(struct json_scan *sc,
    const struct json_scan_hooks *h, struct place *at, const char *s, size_t i, int c, int *r)
{
	if ((c == ']') != sc->array[at->depth]) {
		*r = json_scan_fail(sc, sc->off + i, c == ']' ? "']' closes an object" : "'}' closes an array");
		return S_FAILED;
	}
	at->cx = kind_at(sc, --at->depth);
	return value_end(sc, h, at, s, i + 1, r);
}

/* A value starts with c at p[i]: the state that reads it, or S_FAILED with *r -1. */
static inline __attribute__((always_inline)) int value_begin(struct json_scan *sc, const struct json_scan_hooks *h,
    struct place *at, int c, size_t i, int *r)
{
	int kind = JSON_UNWATCHED;

	if (at->cx != JSON_UNWATCHED && (kind = h->value(sc->ctx, at->cx, at->depth, c, i)) < 0) {
		*r = -1;
		return S_FAILED;
	}
	switch (c) {
	case '"':
		sc->key = 0;
		sc->str = STR_BODY;
		return S_STR;
	case '{':
	case '[':
		if (at->depth >= JSON_DEPTH_MAX) {
			*r = json_scan_fail(sc, sc->off + i, "nested deeper than 64");
			return S_FAILED;
		}
		sc->array[++at->depth] = c == '[';
		at->cx = kind;
		if (at->depth < JSON_CTX_DEPTH)
			sc->kind[at->depth] = (unsigned char)kind;
		return c == '[' ? S_VALUE1 : S_KEY1;
	case 't': sc->lit = "true"; break;
	case 'f': sc->lit = "false"; break;
	case 'n': sc->lit = "null"; break;
	default:
		if (c == '-' || (c >= '0' && c <= '9')) {
			sc->num = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
			return S_NUM;
		}
		*r = json_scan_fail(sc, sc->off + i, "expected a value");
		return S_FAILED;
	}
	sc->litn = 1;
	return S_LIT;
}

/* A key's opening quote at p[i] (c): S_STR, or S_FAILED. */
static inline __attribute__((always_inline)) int key_begin(struct json_scan *sc, const struct place *at, int c,
    size_t i, int *r)
{
	if (c != '"') {
		*r = json_scan_fail(sc, sc->off + i, "expected a key in double quotes");
		return S_FAILED;
	}
	sc->key = 1;
	sc->str = STR_BODY;
	if (at->cx != JSON_UNWATCHED) {
		sc->to = sc->keybuf;
		sc->tocap = sc->keycap;
		sc->caplen = 0;
		sc->full = 0;
	}
	return S_STR;
}

/* Past white space from p[*i]: whether a byte is left in the piece. */
static inline __attribute__((always_inline)) int skip_space(const unsigned char *p, size_t n, size_t *i)
{
	while (*i < n && json_is_space(p[*i]))
		(*i)++;
	return *i < n;
}

/* After a key's string: the user told of it, then ':' (the usual next byte, taken at once). */
static inline __attribute__((always_inline)) int key_end(struct json_scan *sc, const struct json_scan_hooks *h,
    const struct place *at, const unsigned char *p, size_t n, size_t *i)
{
	if (at->cx != JSON_UNWATCHED) {
		sc->to = NULL;
		h->key(sc->ctx, at->cx, at->depth);
	}
	if (*i < n && p[*i] == ':') {
		(*i)++;
		return S_VALUE;
	}
	return S_COLON;
}

/*
 * The scan, one token at a time, its place in the grammar in st. The usual order of tokens falls
 * through the cases (',' then a key, its string, ':' and a value, the value's string), so most of
 * a member is one pass of the loop. A token a piece cuts is left to its own reader (lex_string,
 * lex_number, lex_literal), which takes it up where it stopped on the next piece.
 */
int json_scan_feed(struct json_scan *sc, const struct json_scan_hooks *h, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	struct place at = { sc->depth, kind_at(sc, sc->depth) };
	int st = sc->st, r = 0, c;

	if (st == S_FAILED)
		return -1;
	while (r == 0 && i < n) {
		switch (st) {
		case S_AFTER:
			if (!skip_space(p, n, &i))
				break;
			if ((c = p[i]) == '}' || c == ']') {
				st = close_container(sc, h, &at, s, i++, c, &r);
				break;
			}
			if (c != ',') {
				r = json_scan_fail(sc, sc->off + i, sc->array[at.depth] ? "expected ',' or ']' after an element" :
				    "expected ',' or '}' after a member");
				break;
			}
			i++;
			if (sc->array[at.depth]) {
				st = S_VALUE;
				break;
			}
			st = S_KEY;
			/* fall through */
		case S_KEY1:
		case S_KEY:
			if (!skip_space(p, n, &i))
				break;
			if (st == S_KEY1 && p[i] == '}') {
				st = close_container(sc, h, &at, s, i++, '}', &r);
				break;
			}
			if ((st = key_begin(sc, &at, p[i], i, &r)) == S_FAILED)
				break;
			if ((i = read_string(sc, p, n, i + 1)) == LEX_FAILED)
				r = -1;
			if (r != 0 || sc->str != STR_CLOSED || (st = key_end(sc, h, &at, p, n, &i)) != S_VALUE)
				break;
			/* fall through */
		case S_VALUE1:
		case S_VALUE:
			if (!skip_space(p, n, &i))
				break;
			c = p[i];
			st = st == S_VALUE1 && c == ']' ? close_container(sc, h, &at, s, i, c, &r) : value_begin(sc, h, &at, c, i, &r);
			i++;
			if (st != S_STR)
				break;
			/* fall through */
		case S_STR:
			if ((i = read_string(sc, p, n, i)) == LEX_FAILED)
				r = -1;
			else if (sc->str == STR_CLOSED)
				st = sc->key ? key_end(sc, h, &at, p, n, &i) : value_end(sc, h, &at, s, i, &r);
			break;
		case S_COLON:
			if (!skip_space(p, n, &i))
				break;
			if (p[i++] != ':')
				r = json_scan_fail(sc, sc->off + i - 1, "expected ':' after a key");
			st = S_VALUE;
			break;
		case S_NUM:
		case S_LIT:
			if ((i = st == S_NUM ? lex_number(sc, p, n, i) : lex_literal(sc, p, n, i)) == LEX_FAILED)
				r = -1;
			else if (st == S_NUM ? sc->num == N_END : !sc->lit[sc->litn])
				st = value_end(sc, h, &at, s, i, &r);
			break;
		default: /* S_DONE: only white space may follow */
			if (skip_space(p, n, &i))
				r = json_scan_fail(sc, sc->off + i, "text after the end of the document");
			break;
		}
	}
	if (r != 0)
		return r;
	sc->st = st;
	sc->depth = at.depth;
	sc->off += n;
	return 0;
}

int json_scan_end(struct json_scan *sc)
{
	/* a number ends where the text does only at the top level */
	if (sc->st == S_NUM && sc->depth == 0 && (sc->num == N_ZERO || sc->num == N_INT || sc->num == N_FRAC ||
	    sc->num == N_EXP))
		sc->st = S_DONE;
	return sc->st == S_DONE;
}

void json_scan_init(struct json_scan *sc, int kind0, int seq, char *keybuf, size_t keycap, void *ctx)
{
	memset(sc, 0, sizeof *sc);
	sc->st = S_VALUE;
	sc->kind[0] = (unsigned char)kind0;
	sc->seq = seq;
	sc->keybuf = keybuf;
	sc->keycap = keycap;
	sc->ctx = ctx;
}

int json_scan_fail(struct json_scan *sc, size_t at, const char *why)
{
	sc->reason = why;
	sc->err_at = at;
	sc->st = S_FAILED;
	return -1;
}

void json_scan_stop(struct json_scan *sc)
{
	sc->st = S_FAILED;
}

int json_scan_failed(const struct json_scan *sc)
{
	return sc->st == S_FAILED;
}

int json_scan_idle(const struct json_scan *sc)
{
	return sc->st == S_VALUE && sc->depth == 0;
}

void json_scan_capture(struct json_scan *sc, char *to, size_t cap)
{
	sc->to = to;
	sc->tocap = cap;
	sc->caplen = 0;
	sc->full = 0;
}

int json_check(const char *s, size_t len, size_t *at, char *why, size_t whylen)
{
	struct json_scan sc;

	json_scan_init(&sc, JSON_UNWATCHED, 0, NULL, 0, NULL);
	if (json_scan_feed(&sc, NULL, s, len) == 0 && json_scan_end(&sc))
		return 0;
	if (!json_scan_failed(&sc))
		json_scan_fail(&sc, sc.off, sc.off == 0 || json_scan_idle(&sc) ? "body was empty" : "the text ended early");
	*at = sc.err_at;
	return text_fail(why, whylen, "%s", sc.reason);
}

/* ---- Strings the scanner checked, decoded ---- */

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
		u[0] = (unsigned char)json_escape_value(c);
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
int json_str_eq(const char *s, size_t n, const char *lit, size_t ln)
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
 * The checked string body s[0..n) decoded into out[0..cap), NUL-terminated. cut: a text that
 * does not fit ends at the last whole character that does, and one holding \u0000 ends there;
 * otherwise either fails. Returns the length, or -1.
 */
static int decode_string(const char *s, size_t n, char *out, size_t cap, int cut)
{
	unsigned char u[4];
	size_t i = 0, j = 0;

	if (cap == 0)
		return -1;
	while (i < n) {
		size_t at = i;
		int k = next_char(s, n, &i, u);
		const unsigned char *from = u;
		/* a raw multi-byte character, which next_char gives a byte at a time, goes whole or not at all */
		if (k == 1 && u[0] >= 0x80) {
			while (i < n && ((unsigned char)s[i] & 0xc0) == 0x80)
				i++;
			k = (int)(i - at);
			from = (const unsigned char *)s + at;
		}
		if ((k == 1 && u[0] == 0) || (size_t)k >= cap - j) {
			if (!cut)
				return -1;
			break;
		}
		memcpy(out + j, from, (size_t)k);
		j += (size_t)k;
	}
	out[j] = '\0';
	return (int)j;
}

int json_unescape(const char *s, size_t n, char *out, size_t cap)
{
	return decode_string(s, n, out, cap, 0);
}

void json_str_log(const char *s, size_t n, char *out, size_t cap)
{
	decode_string(s, n, out, cap, 1);
}
