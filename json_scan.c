/*
 * The grammar: JSON (RFC 8259) checked byte by byte as it arrives, in pieces of any size, with
 * strings valid UTF-8 without lone surrogates and nesting at most JSON_DEPTH_MAX. It knows JSON
 * only: in the containers the layout (json_list.c) asked to watch it tells the layout about each
 * value, key and captured string; everywhere else it only checks. Where it stands between two
 * pieces is kept in the json_list: the place in the grammar in st, and the place inside a
 * string, a number or a literal in fields of each, so a piece may end on any byte.
 * Nothing here allocates, and nothing here knows what a Node is.
 */
#include <stdint.h>
#include <string.h>

/* SSE2 is x86-64's baseline; JSON_NO_SIMD builds the portable path alone (to test it). */
#if defined(__SSE2__) && !defined(JSON_NO_SIMD)
#define JSON_SSE2 1
#include <emmintrin.h>
#endif

#include "json_impl.h"
#include "text.h"

/* Where a string stands (json_list.str): most of it passes in STR_BODY, by string_run. */
enum { STR_BODY, STR_ESC, STR_HEX, STR_LOW, STR_LOWU, STR_UTF8, STR_CLOSED };
/* Where a number stands (json_list.num): after '-', after a leading 0, in digits, after '.', ..., ended */
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

/* Bytes of the string being read, for the layout when it captures this one. */
static inline __attribute__((always_inline)) void pass_on(struct json_list *l, const unsigned char *s, size_t k)
{
	if (l->capture)
		json_list_capture(l, s, k);
}

/*
 * The token readers below take the index of the piece to start from and return where they
 * stopped: at n when the piece ended inside the token, LEX_FAILED when it failed (the reason
 * given by json_list_fail). The token's own state says whether it is whole: STR_CLOSED, N_END, a literal read to
 * its end. Returning the index, not taking its address, keeps the scan's cursor in a register.
 */
#define LEX_FAILED ((size_t)-1)

/*
 * The bytes of a character text_utf8_len did not take whole (the piece cut it, or it is not
 * UTF-8), one at a time into l->pend until they make one character (then the string goes on,
 * STR_BODY). A byte that cannot continue it, or a fourth byte that still does not make one,
 * fails it at its first byte.
 */
static size_t lex_utf8(struct json_list *l, const unsigned char *p, size_t n, size_t i)
{
	for (; i < n && l->str == STR_UTF8; i++) {
		if (l->npend > 0 && (p[i] & 0xc0) != 0x80) {
			json_list_fail(l, l->off + i - l->npend, "invalid UTF-8 in a string");
			return LEX_FAILED;
		}
		l->pend[l->npend++] = p[i];
		pass_on(l, p + i, 1);
		if (text_utf8_len(l->pend, l->npend) > 0)
			l->str = STR_BODY;
		else if (l->npend == 4) {
			json_list_fail(l, l->off + i + 1 - 4, "invalid UTF-8 in a string");
			return LEX_FAILED;
		}
	}
	return i;
}

/* After the four digits of \uXXXX ending before p[i] (a low half: with bit 16 set): the string's next place. */
static int after_hex(struct json_list *l, size_t i)
{
	uint32_t u = l->u;

	if (u >= 0xdc00 && u < 0xe000)
		return json_list_fail(l, l->off + i, "a lone low surrogate in a string");
	if (u >> 16) {
		/* the low half of a pair (the 1 set before it is now bit 16) */
		if ((u & 0xffff) < 0xdc00 || (u & 0xffff) >= 0xe000)
			return json_list_fail(l, l->off + i, "a high surrogate without its low half in a string");
		return STR_BODY;
	}
	return u >= 0xd800 && u < 0xdc00 ? STR_LOW : STR_BODY;
}

/* The rest of a string, from p[i] to just past its closing quote (then l->str is STR_CLOSED). */
static size_t lex_string(struct json_list *l, const unsigned char *p, size_t n, size_t i)
{
	size_t e;
	int c, h;

	while (i < n && l->str != STR_CLOSED) {
		switch (l->str) {
		case STR_BODY:
			e = string_run(p, n, i);
			pass_on(l, p + i, e - i);
			if ((i = e) == n)
				break;
			if ((c = p[i]) == '"') {
				l->str = STR_CLOSED;
				i++;
			} else if (c < 0x20) {
				json_list_fail(l, l->off + i, "a control character in a string");
				return LEX_FAILED;
			} else if (c == '\\' && i + 1 < n && p[i + 1] != 'u' && json_escape_value(p[i + 1]) >= 0) {
				pass_on(l, p + i, 2);   /* \" and the like, the usual escapes, at once */
				i += 2;
			} else if (c == '\\') {
				pass_on(l, p + i++, 1);
				l->str = STR_ESC;
			} else if ((e = text_utf8_len(p + i, n - i)) > 0) {
				pass_on(l, p + i, e);
				i += e;
			} else {
				l->npend = 0;
				l->str = STR_UTF8;
			}
			break;
		case STR_ESC:
			if ((c = p[i]) != 'u' && json_escape_value(c) < 0) {
				json_list_fail(l, l->off + i, "a bad escape in a string");
				return LEX_FAILED;
			}
			pass_on(l, p + i++, 1);
			l->str = c == 'u' ? STR_HEX : STR_BODY;
			l->u = 0;
			l->hexn = 0;
			break;
		case STR_HEX:
			if ((h = text_hexval(p[i])) < 0) {
				json_list_fail(l, l->off + i, "a bad \\u escape in a string");
				return LEX_FAILED;
			}
			l->u = l->u << 4 | (uint32_t)h;
			pass_on(l, p + i++, 1);
			if (++l->hexn == 4 && (l->str = after_hex(l, i)) < 0)
				return LEX_FAILED;
			break;
		case STR_LOW:
		case STR_LOWU:
			/* a high surrogate: "\u" and its low half must follow */
			if (p[i] != (l->str == STR_LOW ? '\\' : 'u')) {
				json_list_fail(l, l->off + i, "a high surrogate without its low half in a string");
				return LEX_FAILED;
			}
			pass_on(l, p + i++, 1);
			l->str = l->str == STR_LOW ? STR_LOWU : STR_HEX;
			l->u = 1; /* shifted above bit 16 by the four digits */
			l->hexn = 0;
			break;
		default: /* STR_UTF8 */
			if ((i = lex_utf8(l, p, n, i)) == LEX_FAILED)
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
static inline __attribute__((always_inline)) size_t read_string(struct json_list *l, const unsigned char *p,
    size_t n, size_t i)
{
	if (l->str == STR_BODY) {
		size_t e = string_run(p, n, i);
		pass_on(l, p + i, e - i);
		if (e < n && p[e] == '"') {
			l->str = STR_CLOSED;
			return e + 1;
		}
		i = e;   /* the plain bytes before e are done with */
	}
	return lex_string(l, p, n, i);
}

/* The rest of a number, from p[i]: it ended before the index returned when l->num is N_END. */
static size_t lex_number(struct json_list *l, const unsigned char *p, size_t n, size_t i)
{
	for (; i < n; i++) {
		int c = p[i], digit = c >= '0' && c <= '9';
		switch (l->num) {
		case N_MINUS:
			if (!digit) {
				json_list_fail(l, l->off + i, "a number without digits");
				return LEX_FAILED;
			}
			l->num = c == '0' ? N_ZERO : N_INT;
			continue;
		case N_ZERO:
			if (digit) {
				json_list_fail(l, l->off + i, "a number with a leading zero");
				return LEX_FAILED;
			}
			/* fall through */
		case N_INT:
			if (digit)
				continue;
			if (c == '.') {
				l->num = N_DOT;
				continue;
			}
			break;
		case N_DOT:
			if (!digit) {
				json_list_fail(l, l->off + i, "a number without digits after '.'");
				return LEX_FAILED;
			}
			l->num = N_FRAC;
			continue;
		case N_FRAC:
			if (digit)
				continue;
			break;
		case N_E:
			if (c == '+' || c == '-') {
				l->num = N_ESIGN;
				continue;
			}
			/* fall through */
		case N_ESIGN:
			if (!digit) {
				json_list_fail(l, l->off + i, "a number without digits in its exponent");
				return LEX_FAILED;
			}
			l->num = N_EXP;
			continue;
		case N_EXP:
			if (digit)
				continue;
			l->num = N_END;
			return i;
		}
		if (c != 'e' && c != 'E') {
			l->num = N_END;
			return i;
		}
		l->num = N_E;
	}
	return i;
}

/* The rest of true, false or null, from p[i]: whole when l->lit[l->litn] is its end. */
static size_t lex_literal(struct json_list *l, const unsigned char *p, size_t n, size_t i)
{
	for (; l->lit[l->litn] && i < n; l->litn++, i++) {
		if (p[i] != (unsigned char)l->lit[l->litn]) {
			json_list_fail(l, l->off + i, "a bare word, not true, false or null");
			return LEX_FAILED;
		}
	}
	return i;
}

/*
 * Where the scan is within a piece, kept in registers (the helpers below are inlined) and
 * written back to the json_list when the piece is done.
 */
struct place {
	int depth;   /* the nesting */
	int cx;      /* the kind of the innermost container, as the layout named it */
};

/* The kind of the container at depth d, as the layout named it. */
static inline __attribute__((always_inline)) int kind_at(const struct json_list *l, int d)
{
	return d < JSON_CTX_DEPTH ? l->kind[d] : JSON_UNWATCHED;
}

/* A value ended just before p[i]: the state after it, or S_FAILED with *r what stopped the scan. */
static inline __attribute__((always_inline)) int value_end(struct json_list *l, const struct place *at,
    const char *s, size_t i, int *r)
{
	if (at->cx != JSON_UNWATCHED && (*r = json_list_done(l, at->cx, at->depth, s, i)) != 0)
		return S_FAILED;
	if (at->depth > 0)
		return S_AFTER;
	return l->seq ? S_VALUE : S_DONE;   /* a stream's next value, or the end */
}

/* c (']' or '}') at p[i] closes the innermost container: the state after it, or S_FAILED. */
static inline __attribute__((always_inline)) int close_container(struct json_list *l, struct place *at,
    const char *s, size_t i, int c, int *r)
{
	if ((c == ']') != l->array[at->depth]) {
		*r = json_list_fail(l, l->off + i, c == ']' ? "']' closes an object" : "'}' closes an array");
		return S_FAILED;
	}
	at->cx = kind_at(l, --at->depth);
	return value_end(l, at, s, i + 1, r);
}

/* A value starts with c at p[i]: the state that reads it, or S_FAILED with *r -1. */
static inline __attribute__((always_inline)) int value_begin(struct json_list *l, struct place *at, int c,
    size_t i, int *r)
{
	int h = JSON_UNWATCHED;

	if (at->cx != JSON_UNWATCHED && (h = json_list_value(l, at->cx, at->depth, c, i)) < 0) {
		*r = -1;
		return S_FAILED;
	}
	switch (c) {
	case '"':
		l->key = 0;
		l->str = STR_BODY;
		return S_STR;
	case '{':
	case '[':
		if (at->depth >= JSON_DEPTH_MAX) {
			*r = json_list_fail(l, l->off + i, "nested deeper than 64");
			return S_FAILED;
		}
		l->array[++at->depth] = c == '[';
		at->cx = h;
		if (at->depth < JSON_CTX_DEPTH) {
			l->kind[at->depth] = (unsigned char)h;
			l->memb[at->depth] = 0;
		}
		return c == '[' ? S_VALUE1 : S_KEY1;
	case 't': l->lit = "true"; break;
	case 'f': l->lit = "false"; break;
	case 'n': l->lit = "null"; break;
	default:
		if (c == '-' || (c >= '0' && c <= '9')) {
			l->num = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
			return S_NUM;
		}
		*r = json_list_fail(l, l->off + i, "expected a value");
		return S_FAILED;
	}
	l->litn = 1;
	return S_LIT;
}

/* A key's opening quote at p[i] (c): S_STR, or S_FAILED. */
static inline __attribute__((always_inline)) int key_begin(struct json_list *l, const struct place *at, int c,
    size_t i, int *r)
{
	if (c != '"') {
		*r = json_list_fail(l, l->off + i, "expected a key in double quotes");
		return S_FAILED;
	}
	l->key = 1;
	l->str = STR_BODY;
	if (at->cx != JSON_UNWATCHED)
		json_list_key_begin(l);
	return S_STR;
}

/* Past white space from p[*i]: whether a byte is left in the piece. */
static inline __attribute__((always_inline)) int skip_space(const unsigned char *p, size_t n, size_t *i)
{
	while (*i < n && json_is_space(p[*i]))
		(*i)++;
	return *i < n;
}

/* After a key's string: its class for the layout, then ':' (the usual next byte, taken at once). */
static inline __attribute__((always_inline)) int key_end(struct json_list *l, const struct place *at,
    const unsigned char *p, size_t n, size_t *i)
{
	if (at->cx != JSON_UNWATCHED)
		json_list_key_end(l, at->cx, at->depth);
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
int json_list_feed(struct json_list *l, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	struct place at = { l->depth, kind_at(l, l->depth) };
	int st = l->st, r = 0, c;

	if (st == S_FAILED)
		return -1;
	l->mark = 0;
	while (r == 0 && i < n) {
		switch (st) {
		case S_AFTER:
			if (!skip_space(p, n, &i))
				break;
			if ((c = p[i]) == '}' || c == ']') {
				st = close_container(l, &at, s, i++, c, &r);
				break;
			}
			if (c != ',') {
				r = json_list_fail(l, l->off + i, l->array[at.depth] ? "expected ',' or ']' after an element" :
				    "expected ',' or '}' after a member");
				break;
			}
			i++;
			if (l->array[at.depth]) {
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
				st = close_container(l, &at, s, i++, '}', &r);
				break;
			}
			if ((st = key_begin(l, &at, p[i], i, &r)) == S_FAILED)
				break;
			if ((i = read_string(l, p, n, i + 1)) == LEX_FAILED)
				r = -1;
			if (r != 0 || l->str != STR_CLOSED || (st = key_end(l, &at, p, n, &i)) != S_VALUE)
				break;
			/* fall through */
		case S_VALUE1:
		case S_VALUE:
			if (!skip_space(p, n, &i))
				break;
			c = p[i];
			st = st == S_VALUE1 && c == ']' ? close_container(l, &at, s, i, c, &r) : value_begin(l, &at, c, i, &r);
			i++;
			if (st != S_STR)
				break;
			/* fall through */
		case S_STR:
			if ((i = read_string(l, p, n, i)) == LEX_FAILED)
				r = -1;
			else if (l->str == STR_CLOSED)
				st = l->key ? key_end(l, &at, p, n, &i) : value_end(l, &at, s, i, &r);
			break;
		case S_COLON:
			if (!skip_space(p, n, &i))
				break;
			if (p[i++] != ':')
				r = json_list_fail(l, l->off + i - 1, "expected ':' after a key");
			st = S_VALUE;
			break;
		case S_NUM:
		case S_LIT:
			if ((i = st == S_NUM ? lex_number(l, p, n, i) : lex_literal(l, p, n, i)) == LEX_FAILED)
				r = -1;
			else if (st == S_NUM ? l->num == N_END : !l->lit[l->litn])
				st = value_end(l, &at, s, i, &r);
			break;
		default: /* S_DONE: only white space may follow */
			if (skip_space(p, n, &i))
				r = json_list_fail(l, l->off + i, "text after the end of the document");
			break;
		}
	}
	if (r != 0)
		return r;
	json_list_keep(l, s, n);
	l->st = st;
	l->depth = at.depth;
	l->off += n;
	return 0;
}

int json_scan_end(struct json_list *l)
{
	/* a number ends where the text does only at the top level */
	if (l->st == S_NUM && l->depth == 0 && (l->num == N_ZERO || l->num == N_INT || l->num == N_FRAC ||
	    l->num == N_EXP))
		l->st = S_DONE;
	return l->st == S_DONE;
}
