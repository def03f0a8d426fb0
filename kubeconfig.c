/*
 * Kubeconfig files: the YAML subset kubectl and k3s write, or JSON, read into a kube_target.
* Runs once at start-up. It fills the target's heap buffers (freed by kube_target_free) and its
 * own scratch while parsing, which it wipes. Errors name the file, the line and the key, and
 * never carry the text of a value: a token, key or certificate never reaches a message.
 *
 * The text becomes a small tree first (mappings, sequences, scalars), by one of two front ends,
 * so the kubeconfig rules below read YAML and JSON the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define JSMN_STATIC
#define JSMN_STRICT
/* Without parent links jsmn walks back over every token at each ',' and '}': 1 MiB took 40 s. */
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "json.h"
#include "kubeconfig.h"
#include "text.h"

#define KC_DEPTH_MAX 32            /* nesting; a kubeconfig needs 5 */
#define KC_SHOWN 64                /* a name from the file is cut to this in a message */

enum { KN_NULL, KN_STR, KN_MAP, KN_SEQ };

struct kc_node {
	int type;
	int line;
	int plain;          /* a scalar without quotes (YAML plain, JSON number/true/false) */
	const char *key;    /* set on the children of a mapping */
	const char *str;    /* KN_STR: decoded text in the pool, NUL-terminated */
	size_t len;
	int child, last, next;  /* indexes into kc.nodes; -1 for none */
};

struct kc {
	const char *name, *dir;
	const char *text;
	size_t len, pos, lstart;   /* cursor and the start of its line */
	int line, eof, blanks, comments;
	struct kc_node *nodes;
	int nnodes, cap, depth;
	char *pool;                /* every decoded string; sized so it cannot run out */
	size_t poolcap, poollen;
	char *err;                 /* the reason, without the file's name and line */
	size_t errlen;
	int errline;
};

/* Fails with a reason about the given line (0: the file as a whole); kubeconfig_parse puts
 * the file's name and the line in front once, when the parse is over. */
#define fail(k, at, ...) ((k)->errline = (at), text_fail((k)->err, (k)->errlen, __VA_ARGS__))

/* A name from the file, made safe for a log line: control bytes and quotes become '?', long ones are cut. */
static const char *shown(const char *s, char *buf, size_t n)
{
	size_t i;

	for (i = 0; s[i] && i + 4 < n && i < KC_SHOWN; i++) {
		unsigned char c = (unsigned char)s[i];
		buf[i] = c < 0x20 || c == 0x7f || c == '"' || c == '\\' ? '?' : (char)c;
	}
	if (s[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = '\0';
	return buf;
}

static int node_new(struct kc *k, int type, int line)
{
	struct kc_node *n;

	if (k->nnodes == k->cap) {
		int cap = k->cap ? k->cap * 2 : 64;
		n = realloc(k->nodes, (size_t)cap * sizeof *n);
		if (!n)
			return fail(k, 0, "out of memory");
		k->nodes = n;
		k->cap = cap;
	}
	n = &k->nodes[k->nnodes];
	memset(n, 0, sizeof *n);
	n->type = type;
	n->line = line;
	n->child = n->last = n->next = -1;
	return k->nnodes++;
}

static void node_add(struct kc *k, int parent, int child, const char *key)
{
	struct kc_node *p = &k->nodes[parent];

	k->nodes[child].key = key;
	if (p->last < 0)
		p->child = child;
	else
		k->nodes[p->last].next = child;
	p->last = child;
}

static int put(struct kc *k, int c)
{
	if (k->poollen >= k->poolcap)
		return fail(k, k->line, "internal error: string space exhausted");
	k->pool[k->poollen++] = (char)c;
	return 0;
}

static int put_utf8(struct kc *k, unsigned long cp)
{
	if (cp < 0x80)
		return put(k, (int)cp);
	if (cp < 0x800)
		return put(k, (int)(0xc0 | cp >> 6)) || put(k, (int)(0x80 | (cp & 0x3f))) ? -1 : 0;
	if (cp < 0x10000)
		return put(k, (int)(0xe0 | cp >> 12)) || put(k, (int)(0x80 | (cp >> 6 & 0x3f))) ||
		    put(k, (int)(0x80 | (cp & 0x3f))) ? -1 : 0;
	return put(k, (int)(0xf0 | cp >> 18)) || put(k, (int)(0x80 | (cp >> 12 & 0x3f))) ||
	    put(k, (int)(0x80 | (cp >> 6 & 0x3f))) || put(k, (int)(0x80 | (cp & 0x3f))) ? -1 : 0;
}

/* Finishes the string begun at pool offset start and makes it a scalar node. */
static int str_node(struct kc *k, size_t start, int line, int plain)
{
	int n;

	if (put(k, '\0'))
		return -1;
	if ((n = node_new(k, KN_STR, line)) < 0)
		return -1;
	k->nodes[n].str = k->pool + start;
	k->nodes[n].len = k->poollen - 1 - start;
	k->nodes[n].plain = plain;
	return n;
}

/* Bytes YAML and JSON both refuse, and the lone CR that would make line numbers lie. */
static int check_bytes(struct kc *k)
{
	int line = 1;

	for (size_t i = 0; i < k->len; i++) {
		unsigned char c = (unsigned char)k->text[i];
		if (c == '\n')
			line++;
		else if (c == '\r' && (i + 1 >= k->len || k->text[i + 1] != '\n'))
			return fail(k, line, "a carriage return not followed by a line feed");
		else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
			return fail(k, line, "a control character (byte 0x%02x)", c);
	}
	return 0;
}

/* ---- YAML: block mappings and sequences, plain and quoted scalars, empty {} and [] ---- */

static int peek(const struct kc *k, size_t i)
{
	return k->pos + i < k->len ? (unsigned char)k->text[k->pos + i] : -1;
}

static int is_ws(int c) { return c == ' ' || c == '\t'; }
static int is_eol(int c) { return c == -1 || c == '\n' || c == '\r'; }
static int col(const struct kc *k) { return (int)(k->pos - k->lstart); }
static void skip_ws(struct kc *k) { while (is_ws(peek(k, 0))) k->pos++; }

static int is_item(const struct kc *k)
{
	return peek(k, 0) == '-' && (is_ws(peek(k, 1)) || is_eol(peek(k, 1)));
}

static void next_line(struct kc *k)
{
	while (k->pos < k->len && k->text[k->pos] != '\n')
		k->pos++;
	if (k->pos < k->len) {
		k->pos++;
		k->line++;
		k->lstart = k->pos;
	}
}

/* From the start of a line, past blank and comment lines to the first content byte (or eof). */
static int seek_content(struct kc *k)
{
	k->blanks = k->comments = 0;
	for (;;) {
		int tab = 0, c;
		while (is_ws(c = peek(k, 0))) {
			tab |= c == '\t';
			k->pos++;
		}
		if (c == -1) {
			k->eof = 1;
			return 0;
		}
		if (c == '#' || is_eol(c)) {
			if (c == '#')
				k->comments++;
			else
				k->blanks++;
			next_line(k);
			continue;
		}
		if (tab)
			return fail(k, k->line, "a tab in the indentation (YAML indents with spaces only)");
		return 0;
	}
}

/* After a value: only white space or a comment may follow on its line. */
static int end_line(struct kc *k)
{
	skip_ws(k);
	if (!is_eol(peek(k, 0)) && peek(k, 0) != '#')
		return fail(k, k->line, "unexpected text after a value");
	next_line(k);
	return seek_content(k);
}

/* What the YAML we read does not have, caught where a scalar would start. */
static int check_indicator(struct kc *k)
{
	int c = peek(k, 0), n = peek(k, 1), sp = is_ws(n) || is_eol(n);

	switch (c) {
	case '&': return fail(k, k->line, "anchors (&) are not supported");
	case '*': return fail(k, k->line, "aliases (*) are not supported");
	case '!': return fail(k, k->line, "tags (!) are not supported");
	case '|': case '>':
		return fail(k, k->line, "block scalars (| and >) are not supported; write the value on one line");
	case '%': return fail(k, k->line, "directives (%%) are not supported");
	case '@': case '`': return fail(k, k->line, "a value cannot start with @ or ` (reserved in YAML)");
	case ',': case ']': case '}': return fail(k, k->line, "an unexpected flow indicator");
	case '{': case '[':
		return fail(k, k->line, "flow collections ({...} and [...]) are supported only empty");
	case '?': return sp ? fail(k, k->line, "complex keys (?) are not supported") : 0;
	case '-': return sp ? fail(k, k->line, "a list item where a value was expected") : 0;
	case ':': return sp ? fail(k, k->line, "an empty key") : 0;
	}
	return 0;
}

/* A plain scalar's text up to the end of the line, a comment, or ": "; *colon says which. */
static int scan_plain(struct kc *k, int *colon)
{
	size_t keep = k->poollen;

	*colon = 0;
	for (;;) {
		int c = peek(k, 0);
		if (is_eol(c))
			break;
		if (c == ':' && (is_ws(peek(k, 1)) || is_eol(peek(k, 1)))) {
			*colon = 1;
			break;
		}
		if (is_ws(c) && peek(k, 1) == '#')
			break;
		if (put(k, c))
			return -1;
		if (!is_ws(c))
			keep = k->poollen;
		k->pos++;
	}
	k->poollen = keep;
	return 0;
}

/*
 * At a line break inside a quoted scalar. YAML folds the break to one space, or to one newline
 * per empty line after it; an escaped break (\ at the end of the line) folds to nothing. The next
 * line's leading white space is dropped either way.
 */
static int fold(struct kc *k, int line0, int escaped)
{
	int breaks = 0;

	next_line(k);
	for (;;) {
		skip_ws(k);
		if (peek(k, 0) == -1)
			return fail(k, line0, "a quoted value is not closed");
		if (!is_eol(peek(k, 0)))
			break;
		breaks++;
		next_line(k);
	}
	if (!breaks && !escaped)
		return put(k, ' ');
	while (breaks-- > 0)
		if (put(k, '\n'))
			return -1;
	return 0;
}

/* The escape after a backslash in a double-quoted scalar; k->pos is past the letter. */
static int escape(struct kc *k, int e)
{
	unsigned long cp = 0;
	int n = 0;

	switch (e) {
	case 'a': return put(k, 7);
	case 'b': return put(k, 8);
	case 't': case '\t': return put(k, 9);
	case 'n': return put(k, 10);
	case 'v': return put(k, 11);
	case 'f': return put(k, 12);
	case 'r': return put(k, 13);
	case 'e': return put(k, 27);
	case ' ': case '"': case '/': case '\\': return put(k, e);
	case 'N': return put_utf8(k, 0x85);
	case '_': return put_utf8(k, 0xa0);
	case 'L': return put_utf8(k, 0x2028);
	case 'P': return put_utf8(k, 0x2029);
	case 'x': n = 2; break;
	case 'u': n = 4; break;
	case 'U': n = 8; break;
	case '0': return fail(k, k->line, "a \\0 escape: a NUL byte cannot be part of a value");
	default: return fail(k, k->line, "an unknown escape in a double-quoted value");
	}
	for (int i = 0; i < n; i++) {
		int h = text_hexval(peek(k, (size_t)i));
		if (h < 0)
			return fail(k, k->line, "a \\%c escape without %d hex digits", e, n);
		cp = cp << 4 | (unsigned long)h;
	}
	k->pos += (size_t)n;
	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return fail(k, k->line, "an escape that is not a character (NUL, surrogate or past U+10FFFF)");
	return put_utf8(k, cp);
}

/* A single- or double-quoted scalar, which may span lines; k->pos is at the opening quote. */
static int scan_quoted(struct kc *k)
{
	int q = peek(k, 0), line0 = k->line;
	size_t keep = k->poollen;  /* trailing white space before a line break is not content */

	k->pos++;
	for (;;) {
		int c = peek(k, 0);
		if (c == -1)
			return fail(k, line0, "a quoted value is not closed");
		if (c == q && q == '\'' && peek(k, 1) == '\'') {
			if (put(k, '\''))
				return -1;
			k->pos += 2;
			keep = k->poollen;
		} else if (c == q) {
			k->pos++;
			return 0;
		} else if (c == '\n' || c == '\r') {
			k->poollen = keep;
			if (fold(k, line0, 0))
				return -1;
			keep = k->poollen;
		} else if (c == '\\' && q == '"') {
			int e = peek(k, 1);
			if (e == '\n' || e == '\r') {
				k->pos++;
				if (fold(k, line0, 1))
					return -1;
			} else {
				k->pos += 2;
				if (e == -1)
					return fail(k, line0, "a quoted value is not closed");
				if (escape(k, e))
					return -1;
			}
			keep = k->poollen;
		} else {
			if (put(k, c))
				return -1;
			k->pos++;
			if (!is_ws(c))
				keep = k->poollen;
		}
	}
}

static int parse_node(struct kc *k, int parent_col, int *out);

/* A scalar (or an empty {} or []) where a value is expected; plain ones may continue on lines indented past parent_col. */
static int parse_scalar(struct kc *k, int parent_col, int *out)
{
	int c = peek(k, 0), line = k->line, colon, n;
	size_t start = k->poollen;

	if (c == '{' || c == '[') {
		k->pos++;
		skip_ws(k);
		if (peek(k, 0) != (c == '{' ? '}' : ']'))
			return fail(k, line, "flow collections ({...} and [...]) are supported only empty");
		k->pos++;
		if ((*out = node_new(k, c == '{' ? KN_MAP : KN_SEQ, line)) < 0)
			return -1;
		return end_line(k);
	}
	if (c == '"' || c == '\'') {
		if (scan_quoted(k) || (n = str_node(k, start, line, 0)) < 0)
			return -1;
		*out = n;
		return end_line(k);
	}
	if (check_indicator(k) || scan_plain(k, &colon))
		return -1;
	if (colon)
		return fail(k, line, "a plain value cannot contain \": \"; quote it");
	for (;;) {
		skip_ws(k);
		if (peek(k, 0) == '#') {
			if (end_line(k))
				return -1;
			break;
		}
		next_line(k);
		if (seek_content(k))
			return -1;
		if (k->eof || k->comments || col(k) <= parent_col || is_item(k))
			break;
		/* a continuation line, as YAML allows for plain scalars: folded into the value */
		if (k->blanks == 0 && put(k, ' '))
			return -1;
		for (int i = 0; i < k->blanks; i++)
			if (put(k, '\n'))
				return -1;
		if (scan_plain(k, &colon))
			return -1;
		if (colon)
			return fail(k, k->line, "unexpected indentation (a key inside a value?)");
	}
	if ((n = str_node(k, start, line, 1)) < 0)
		return -1;
	const char *s = k->nodes[n].str;
	if (!strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
		k->nodes[n].type = KN_NULL;
	*out = n;
	return 0;
}

/* A mapping key and its colon; *key points into the pool. */
static int parse_key(struct kc *k, const char **key)
{
	int c = peek(k, 0), line = k->line, colon = 1;
	size_t start = k->poollen;

	if (c == '"' || c == '\'') {
		if (scan_quoted(k))
			return -1;
		if (k->line != line)
			return fail(k, line, "a quoted key spans lines");
		skip_ws(k);
	} else if (check_indicator(k) || scan_plain(k, &colon)) {
		return -1;
	}
	if (!colon || peek(k, 0) != ':' || !(is_ws(peek(k, 1)) || is_eol(peek(k, 1))))
		return fail(k, line, "expected \"key: value\"");
	k->pos++;
	if (k->poollen == start)
		return fail(k, line, "an empty key");
	if (put(k, '\0'))
		return -1;
	*key = k->pool + start;
	return 0;
}

static int parse_map(struct kc *k, int *out)
{
	int mcol = col(k), m, v;

	if ((m = node_new(k, KN_MAP, k->line)) < 0)
		return -1;
	for (;;) {
		const char *key = NULL;
		int line = k->line;
		if (parse_key(k, &key))
			return -1;
		skip_ws(k);
		if (is_eol(peek(k, 0)) || peek(k, 0) == '#') {
			if (end_line(k))
				return -1;
			/* kubectl writes a list at the key's own indentation: "clusters:\n- cluster:" */
			if (!k->eof && (col(k) > mcol || (col(k) == mcol && is_item(k)))) {
				if (parse_node(k, mcol, &v))
					return -1;
			} else if ((v = node_new(k, KN_NULL, line)) < 0) {
				return -1;
			}
		} else if (parse_scalar(k, mcol, &v)) {
			return -1;
		}
		k->nodes[v].line = line;  /* a nested value is reported at its key */
		node_add(k, m, v, key);
		if (k->eof || col(k) < mcol)
			break;
		if (col(k) > mcol)
			return fail(k, k->line, "unexpected indentation");
		if (is_item(k))
			return fail(k, k->line, "a list item where a key was expected");
	}
	*out = m;
	return 0;
}

static int parse_seq(struct kc *k, int *out)
{
	int scol = col(k), s, v;

	if ((s = node_new(k, KN_SEQ, k->line)) < 0)
		return -1;
	for (;;) {
		int line = k->line;
		k->pos++;
		skip_ws(k);
		if (is_eol(peek(k, 0)) || peek(k, 0) == '#') {
			if (end_line(k))
				return -1;
			if (!k->eof && col(k) > scol) {
				if (parse_node(k, scol, &v))
					return -1;
			} else if ((v = node_new(k, KN_NULL, line)) < 0) {
				return -1;
			}
		} else if (parse_node(k, scol, &v)) {
			return -1;
		}
		node_add(k, s, v, NULL);
		if (k->eof || col(k) < scol)
			break;
		if (col(k) > scol)
			return fail(k, k->line, "unexpected indentation");
		if (!is_item(k))
			break;
	}
	*out = s;
	return 0;
}

/* Whether the content at the cursor is "key:": looks ahead, then puts the cursor back. */
static int is_key(struct kc *k)
{
	size_t pos = k->pos, lstart = k->lstart, pl = k->poollen;
	int line = k->line, c = peek(k, 0), colon = 0, r;

	if (c == '"' || c == '\'') {
		r = scan_quoted(k);
		skip_ws(k);
		colon = peek(k, 0) == ':' && (is_ws(peek(k, 1)) || is_eol(peek(k, 1)));
	} else if (c == '{' || c == '[') {
		r = 0;
	} else {
		r = check_indicator(k) || scan_plain(k, &colon) ? -1 : 0;
	}
	k->pos = pos, k->lstart = lstart, k->poollen = pl, k->line = line;
	return r < 0 ? -1 : colon;
}

/* Any node whose first content byte is at the cursor. */
static int parse_node(struct kc *k, int parent_col, int *out)
{
	int r;

	if (k->depth >= KC_DEPTH_MAX)
		return fail(k, k->line, "nested deeper than %d levels", KC_DEPTH_MAX);
	k->depth++;
	if (is_item(k))
		r = parse_seq(k, out);
	else if ((r = is_key(k)) >= 0)
		r = r ? parse_map(k, out) : parse_scalar(k, parent_col, out);
	k->depth--;
	return r;
}

static int parse_yaml(struct kc *k, size_t start, int *root)
{
	k->pos = k->lstart = start;
	k->line = 1;
	if (seek_content(k))
		return -1;
	if (!k->eof && col(k) == 0 && peek(k, 0) == '-' && peek(k, 1) == '-' && peek(k, 2) == '-' &&
	    (is_ws(peek(k, 3)) || is_eol(peek(k, 3)))) {
		k->pos += 3;
		if (end_line(k))
			return -1;
	}
	if (k->eof)
		return fail(k, 0, "the file is empty");
	if (parse_node(k, -1, root))
		return -1;
	if (!k->eof)
		return fail(k, k->line, "unexpected text after the top-level mapping (a second document?)");
	return 0;
}

/* ---- JSON, through jsmn ---- */

static int json_line(struct kc *k, int off)
{
	/* tokens come in text order, so the count only moves forward */
	while (k->pos < (size_t)off && k->pos < k->len)
		if (k->text[k->pos++] == '\n')
			k->line++;
	return k->line;
}

static int json_string(struct kc *k, const jsmntok_t *t)
{
	size_t i = (size_t)t->start, end = (size_t)t->end, start = k->poollen;
	int line = json_line(k, t->start);

	while (i < end) {
		unsigned long cp;
		char c = k->text[i++];
		if (c != '\\') {
			if (put(k, c))
				return -1;
			continue;
		}
		if (i >= end)
			return fail(k, line, "a string ends in a backslash");
		c = k->text[i++];
		switch (c) {
		case '"': case '\\': case '/': if (put(k, c)) return -1; continue;
		case 'b': if (put(k, 8)) return -1; continue;
		case 'f': if (put(k, 12)) return -1; continue;
		case 'n': if (put(k, 10)) return -1; continue;
		case 'r': if (put(k, 13)) return -1; continue;
		case 't': if (put(k, 9)) return -1; continue;
		case 'u': break;
		default: return fail(k, line, "an unknown escape in a string");
		}
		cp = 0;
		for (int j = 0; j < 4; j++) {
			int h = i < end ? text_hexval((unsigned char)k->text[i++]) : -1;
			if (h < 0)
				return fail(k, line, "a \\u escape without 4 hex digits");
			cp = cp << 4 | (unsigned long)h;
		}
		if (cp >= 0xd800 && cp <= 0xdbff && i + 6 <= end && k->text[i] == '\\' && k->text[i + 1] == 'u') {
			unsigned long lo = 0;
			for (int j = 2; j < 6; j++) {
				int h = text_hexval((unsigned char)k->text[i + (size_t)j]);
				lo = h < 0 ? 0x10000 : lo << 4 | (unsigned long)h;
			}
			if (lo >= 0xdc00 && lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i += 6;
			}
		}
		if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
			return fail(k, line, "a \\u escape that is not a character (NUL or a lone surrogate)");
		if (put_utf8(k, cp))
			return -1;
	}
	return str_node(k, start, line, 0);
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static int json_node(struct kc *k, const jsmntok_t *t, int ntok, int *i, int *out)
{
	const jsmntok_t *tk;
	int n, v, line;

	if (*i >= ntok)
		return fail(k, 0, "the JSON ends early");
	if (k->depth >= KC_DEPTH_MAX)
		return fail(k, json_line(k, t[*i].start), "nested deeper than %d levels", KC_DEPTH_MAX);
	tk = &t[(*i)++];
	line = json_line(k, tk->start);
	/* json_check passed the text: jsmn's tree is the document's, keys and values alternate */
	switch (tk->type) {
	case JSMN_STRING:
		return (*out = json_string(k, tk)) < 0 ? -1 : 0;
	case JSMN_PRIMITIVE: {
		size_t start = k->poollen;
		for (int j = tk->start; j < tk->end; j++)
			if (put(k, k->text[j]))
				return -1;
		if ((n = str_node(k, start, line, 1)) < 0)
			return -1;
		if (!strcmp(k->nodes[n].str, "null"))
			k->nodes[n].type = KN_NULL;
		*out = n;
		return 0;
	}
	case JSMN_OBJECT:
	case JSMN_ARRAY:
		if ((n = node_new(k, tk->type == JSMN_OBJECT ? KN_MAP : KN_SEQ, line)) < 0)
			return -1;
		k->depth++;
		for (int j = 0; j < tk->size; j++) {
			const char *key = NULL;
			if (tk->type == JSMN_OBJECT) {
				int kn = json_string(k, &t[(*i)++]);
				if (kn < 0)
					return -1;
				key = k->nodes[kn].str;
			}
			if (json_node(k, t, ntok, i, &v))
				return -1;
			node_add(k, n, v, key);
		}
		k->depth--;
		*out = n;
		return 0;
	default:
		return fail(k, line, "a JSON value jsmn could not classify");
	}
}

/* The text is checked by json.c's grammar, the one notion of valid JSON here, then tokenized. */
static int parse_json(struct kc *k, int *root)
{
	jsmn_parser p;
	jsmntok_t *t;
	char why[96];
	size_t at;
	int n, i = 0;

	k->pos = 0, k->line = 1;
	if (json_check(k->text, k->len, &at, why, sizeof why) < 0) {
		if (at >= k->len)
			return fail(k, 0, "the JSON ends early (a truncated file?)");
		return fail(k, json_line(k, (int)at), "not valid JSON: %s", why);
	}
	jsmn_init(&p);
	n = jsmn_parse(&p, k->text, k->len, NULL, 0);
	if (n < 1 || !(t = calloc((size_t)n, sizeof *t)))
		return fail(k, 0, n < 1 ? "not valid JSON" : "out of memory");
	jsmn_init(&p);
	if (jsmn_parse(&p, k->text, k->len, t, (unsigned)n) != n || t[0].type != JSMN_OBJECT) {
		free(t);
		return fail(k, 0, "the JSON is not an object");
	}
	int r = json_node(k, t, n, &i, root);
	free(t);
	return r;
}

/* ---- base64 and files ---- */

int kubeconfig_base64_decode(const char *in, size_t inlen, unsigned char *out, size_t outcap,
    size_t *outlen)
{
	unsigned long acc = 0;
	size_t n = 0, o = 0, pad = 0;

	for (size_t i = 0; i < inlen; i++) {
		unsigned char c = (unsigned char)in[i];
		int v;
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
			v = 0;
		} else {
			if (pad)
				return -1;  /* data after padding */
			if (c >= 'A' && c <= 'Z') v = c - 'A';
			else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
			else if (c >= '0' && c <= '9') v = c - '0' + 52;
			else if (c == '+') v = 62;
			else if (c == '/') v = 63;
			else return -1;
		}
		acc = acc << 6 | (unsigned long)v;
		if (++n % 4)
			continue;
		if (pad > 2 || o + 3 - pad > outcap)
			return -1;
		out[o++] = (unsigned char)(acc >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(acc >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)acc;
		acc = 0;
		if (pad)
			n = 0, pad = 3;  /* padding ends the data: anything but white space after it fails */
	}
	if (n % 4)
		return -1;
	*outlen = o;
	return 0;
}

static int resolve(struct kc *k, int line, const char *what, const char *p, char *out, size_t n)
{
	int w;

	if (p[0] == '/' || !k->dir || !k->dir[0])
		w = snprintf(out, n, "%s", p);
	else
		w = snprintf(out, n, "%s/%s", k->dir, p);
	if (w < 0 || (size_t)w >= n)
		return fail(k, line, "%s: the path is longer than %zu bytes", what, n - 1);
	return 0;
}

/* PEM text is not checked here (BearSSL does that), but a cut-off file should not pass as one. */
static int pem_whole(const char *s, size_t n)
{
	const char *end = NULL;
	int begin = 0;

	for (size_t i = 0; i + 9 <= n; i++)
		if (!memcmp(s + i, "-----END ", 9))
			end = s + i + 9;
	if (!end)
		return 0;
	for (size_t i = 0; i + 11 <= n && !begin; i++)
		begin = !memcmp(s + i, "-----BEGIN ", 11);
	if (!begin)
		return 0;
	for (; end + 5 <= s + n && *end != '\n'; end++)
		if (!memcmp(end, "-----", 5))
			return 1;
	return 0;
}

/* ---- the kubeconfig ---- */

/* The value under key in mapping m: its index, -1 when absent or null, -2 on error. */
static int get(struct kc *k, int m, const char *key)
{
	int found = -1;

	for (int c = k->nodes[m].child; c >= 0; c = k->nodes[c].next) {
		if (strcmp(k->nodes[c].key, key) != 0)
			continue;
		if (found >= 0)
			return fail(k, k->nodes[c].line, "%s appears twice", key), -2;
		found = c;
	}
	return found >= 0 && k->nodes[found].type == KN_NULL ? -1 : found;
}

/* A string under key: *s is its text, or NULL when absent, null or empty. */
static int get_str(struct kc *k, int m, const char *what, const char *key, const char **s)
{
	int v = get(k, m, key);

	*s = NULL;
	if (v == -2)
		return -1;
	if (v < 0)
		return 0;
	if (k->nodes[v].type != KN_STR)
		return fail(k, k->nodes[v].line, "%s: %s must be a string", what, key);
	if (k->nodes[v].len > 0)
		*s = k->nodes[v].str;
	return 0;
}

/* PEM from datakey (base64, preferred as kubectl does) or the file pathkey names; *out stays NULL when neither is set. */
static int load_pem(struct kc *k, int m, const char *what, const char *datakey,
    const char *pathkey, char **out, size_t *outlen)
{
	const char *p;
	int v = get(k, m, datakey), line;

	*out = NULL;
	*outlen = 0;
	if (v == -2)
		return -1;
	if (v >= 0 && k->nodes[v].type == KN_STR && k->nodes[v].len > 0) {
		const struct kc_node *d = &k->nodes[v];
		size_t cap = d->len / 4 * 3 + 3;
		line = d->line;
		if (!(*out = malloc(cap + 1)))
			return fail(k, line, "out of memory");
		if (kubeconfig_base64_decode(d->str, d->len, (unsigned char *)*out, cap, outlen))
			return fail(k, line, "%s: %s is not valid base64", what, datakey);
		(*out)[*outlen] = '\0';
		if (!pem_whole(*out, *outlen))
			return fail(k, line, "%s: %s does not decode to a whole PEM block",
			    what, datakey);
		return 0;
	}
	if (v >= 0 && k->nodes[v].type != KN_STR)
		return fail(k, k->nodes[v].line, "%s: %s must be a string", what, datakey);
	if (get_str(k, m, what, pathkey, &p))
		return -1;
	if (!p)
		return 0;
	{
		char path[TARGET_PATH_MAX], sb[KC_SHOWN + 4], why[KC_SHOWN + 128];
		int r;
		line = k->nodes[get(k, m, pathkey)].line;
		if (resolve(k, line, what, p, path, sizeof path))
			return -1;
		if ((r = file_load(path, KUBECONFIG_MAX, out, outlen)) != FILE_OK) {
			file_error(why, sizeof why, pathkey, shown(path, sb, sizeof sb), r, KUBECONFIG_MAX);
			return fail(k, line, "%s: %s", what, why);
		}
		if (!pem_whole(*out, *outlen))
			return fail(k, line, "%s: %s %s does not hold a whole PEM block",
			    what, pathkey, shown(path, sb, sizeof sb));
	}
	return 0;
}

/* The body (the "cluster:", "context:" or "user:" mapping) of the entry named name in list lkey. */
static int find_named(struct kc *k, int root, const char *lkey, const char *ekey, const char *name,
    const char *who, int *body)
{
	char nb[KC_SHOWN + 4];
	int list = get(k, root, lkey), found = -1, b;

	if (list == -2)
		return -1;
	if (list < 0)
		return fail(k, 0, "%s names %s \"%s\", but the file has no %s", who, ekey,
		    shown(name, nb, sizeof nb), lkey);
	if (k->nodes[list].type != KN_SEQ)
		return fail(k, k->nodes[list].line, "%s must be a list", lkey);
	for (int e = k->nodes[list].child; e >= 0; e = k->nodes[e].next) {
		const char *n;
		if (k->nodes[e].type != KN_MAP)
			return fail(k, k->nodes[e].line, "an entry of %s is not a mapping", lkey);
		if (get_str(k, e, lkey, "name", &n))
			return -1;
		if (!n || strcmp(n, name) != 0)
			continue;
		if (found >= 0)
			return fail(k, k->nodes[e].line, "two entries of %s are named \"%s\"", lkey,
			    shown(name, nb, sizeof nb));
		found = e;
	}
	if (found < 0)
		return fail(k, 0, "%s names %s \"%s\", which is not in %s", who, ekey,
		    shown(name, nb, sizeof nb), lkey);
	if ((b = get(k, found, ekey)) == -2)
		return -1;
	if (b < 0 || k->nodes[b].type != KN_MAP)
		return fail(k, k->nodes[found].line, "%s \"%s\" has no %s: mapping", ekey,
		    shown(name, nb, sizeof nb), ekey);
	*body = b;
	return 0;
}

static int check_server(struct kc *k, int line, const char *what, const char *s, size_t cap)
{
	const char *h = s + 8;

	if (!strncasecmp(s, "http://", 7))
		return fail(k, line, "%s: the server is plain http://; noderecover talks to the API only over https://",
		    what);
	if (strncasecmp(s, "https://", 8) != 0)
		return fail(k, line, "%s: the server is not an https:// URL", what);
	if (!*h || *h == '/' || *h == ':')
		return fail(k, line, "%s: the server URL has no host", what);
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f)
			return fail(k, line, "%s: the server URL contains a space or control character", what);
	if (strcspn(h, "/@") < strcspn(h, "/"))
		return fail(k, line, "%s: user information in the server URL (user@host) is not supported", what);
	if (strpbrk(s, "?#"))
		return fail(k, line, "%s: the server URL has a query or fragment", what);
	if (strlen(s) >= cap)
		return fail(k, line, "%s: the server URL is longer than %zu bytes", what, cap - 1);
	return 0;
}

static int read_cluster(struct kc *k, int c, const char *name, struct kube_target *t)
{
	char what[KC_SHOWN + 32], nb[KC_SHOWN + 4];
	const char *s;
	int v;

	snprintf(what, sizeof what, "cluster \"%s\"", shown(name, nb, sizeof nb));
	if (get_str(k, c, what, "proxy-url", &s))
		return -1;
	if (s)
		return fail(k, k->nodes[get(k, c, "proxy-url")].line,
		    "%s: proxy-url is set, and noderecover does not support proxies", what);
	if ((v = get(k, c, "insecure-skip-tls-verify")) == -2)
		return -1;
	if (v >= 0 && !(k->nodes[v].type == KN_STR && k->nodes[v].plain &&
	    !strcasecmp(k->nodes[v].str, "false")))
		return fail(k, k->nodes[v].line, "%s: insecure-skip-tls-verify is set; noderecover always "
		    "verifies the API server's certificate", what);
	if (get_str(k, c, what, "server", &s))
		return -1;
	if (!s)
		return fail(k, k->nodes[c].line, "%s has no server", what);
	if (check_server(k, k->nodes[get(k, c, "server")].line, what, s, sizeof t->server))
		return -1;
	memcpy(t->server, s, strlen(s) + 1);
	if (get_str(k, c, what, "tls-server-name", &s))
		return -1;
	if (s) {
		int line = k->nodes[get(k, c, "tls-server-name")].line;
		if (strlen(s) >= sizeof t->tls_server_name)
			return fail(k, line, "%s: tls-server-name is longer than %zu bytes", what,
			    sizeof t->tls_server_name - 1);
		for (const char *p = s; *p; p++)
			if ((unsigned char)*p <= 0x20 || *p == 0x7f)
				return fail(k, line, "%s: tls-server-name contains a space or control character", what);
		memcpy(t->tls_server_name, s, strlen(s) + 1);
	}
	if (load_pem(k, c, what, "certificate-authority-data", "certificate-authority", &t->ca_pem, &t->ca_len))
		return -1;
	if (!t->ca_pem)
		return fail(k, k->nodes[c].line, "%s has neither certificate-authority nor certificate-authority-data, "
		    "and noderecover never falls back to the system's CA roots", what);
	return 0;
}

static int read_user(struct kc *k, int u, const char *name, struct kube_target *t)
{
	static const char *const refused[][2] = {
		{ "exec", "exec credential plugins are not supported" },
		{ "auth-provider", "auth-provider plugins are not supported" },
		{ "username", "basic authentication (username and password) is not supported" },
		{ "password", "basic authentication (username and password) is not supported" },
		{ "as", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported" },
		{ "as-uid", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported" },
		{ "as-groups", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported" },
		{ "as-user-extra", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported" },
	};
	char what[KC_SHOWN + 32], nb[KC_SHOWN + 4];
	const char *token, *tfile;
	int v;

	snprintf(what, sizeof what, "user \"%s\"", shown(name, nb, sizeof nb));
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		if ((v = get(k, u, refused[i][0])) == -2)
			return -1;
		if (v >= 0 && !(k->nodes[v].type == KN_STR && k->nodes[v].len == 0))
			return fail(k, k->nodes[v].line, "%s: %s", what, refused[i][1]);
	}
	if (get_str(k, u, what, "token", &token) || get_str(k, u, what, "tokenFile", &tfile))
		return -1;
	if (load_pem(k, u, what, "client-certificate-data", "client-certificate", &t->cert_pem, &t->cert_len) ||
	    load_pem(k, u, what, "client-key-data", "client-key", &t->key_pem, &t->key_len))
		return -1;
	if (t->cert_pem && !t->key_pem)
		return fail(k, k->nodes[u].line, "%s has a client certificate but no client-key or client-key-data", what);
	if (t->key_pem && !t->cert_pem)
		return fail(k, k->nodes[u].line, "%s has a client key but no client-certificate or client-certificate-data",
		    what);
	if (tfile) {
		/* the file wins over an inline token, as in client-go, and is re-read by kube.c */
		char sb[KC_SHOWN + 4];
		int line = k->nodes[get(k, u, "tokenFile")].line;
		struct stat st;
		if (resolve(k, line, what, tfile, t->token_file, sizeof t->token_file))
			return -1;
		/* Only that it is there: kube.c reads it, checks it, and reads it again as the
		 * kubelet rotates it. */
		if (stat(t->token_file, &st) < 0)
			return fail(k, line, "%s: cannot read tokenFile %s: %s", what,
			    shown(t->token_file, sb, sizeof sb), strerror(errno));
		if (st.st_size == 0)
			return fail(k, line, "%s: tokenFile %s is empty", what, shown(t->token_file, sb, sizeof sb));
	} else if (token) {
		int line = k->nodes[get(k, u, "token")].line;
		if (!target_token_ok(token, strlen(token)))
			return fail(k, line, "%s: the token is longer than %d bytes or holds a byte that cannot go in an HTTP header",
			    what, TARGET_TOKEN_MAX);
		if (!(t->token = strdup(token)))
			return fail(k, line, "out of memory");
	} else if (!t->cert_pem) {
		return fail(k, k->nodes[u].line, "%s has no credentials: noderecover needs token, tokenFile, "
		    "or a client certificate and key", what);
	}
	return 0;
}

static int read_config(struct kc *k, int root, struct kube_target *t)
{
	char who[KC_SHOWN + 32], nb[KC_SHOWN + 4], nb2[KC_SHOWN + 4];
	const char *cc, *cl, *us;
	int ctx, clu, usr, w;

	if (k->nodes[root].type != KN_MAP)
		return fail(k, k->nodes[root].line, "not a kubeconfig: the top level is not a mapping");
	if (get_str(k, root, "the file", "current-context", &cc))
		return -1;
	if (!cc)
		return fail(k, 0, "no current-context is set; noderecover uses the current context");
	if (find_named(k, root, "contexts", "context", cc, "current-context", &ctx))
		return -1;
	snprintf(who, sizeof who, "context \"%s\"", shown(cc, nb, sizeof nb));
	if (get_str(k, ctx, who, "cluster", &cl) || get_str(k, ctx, who, "user", &us))
		return -1;
	if (!cl)
		return fail(k, k->nodes[ctx].line, "%s names no cluster", who);
	if (!us)
		return fail(k, k->nodes[ctx].line, "%s names no user", who);
	if (find_named(k, root, "clusters", "cluster", cl, who, &clu) ||
	    find_named(k, root, "users", "user", us, who, &usr))
		return -1;
	if (read_cluster(k, clu, cl, t) || read_user(k, usr, us, t))
		return -1;
	w = snprintf(t->source, sizeof t->source, "kubeconfig %s (context %s)", k->name,
	    shown(cc, nb2, sizeof nb2));
	if (w < 0 || (size_t)w >= sizeof t->source)
		return fail(k, 0, "the file's name is too long");
	return 0;
}

/* Puts "kubeconfig NAME: line N: " in front of the reason. */
static void say_where(const struct kc *k)
{
	char why[1024];

	if (k->errlen == 0)
		return;
	snprintf(why, sizeof why, "%s", k->err);
	if (k->errline > 0)
		text_fail(k->err, k->errlen, "kubeconfig %s: line %d: %s", k->name, k->errline, why);
	else
		text_fail(k->err, k->errlen, "kubeconfig %s: %s", k->name, why);
}

int kubeconfig_parse(const char *text, size_t len, const char *dir, const char *name,
    struct kube_target *t, char *err, size_t errlen)
{
	struct kc k;
	size_t start = 0;
	int root = -1, r;

	memset(t, 0, sizeof *t);
	memset(&k, 0, sizeof k);
	k.name = name ? name : "(text)";
	k.dir = dir;
	k.text = text;
	k.len = len;
	k.err = err;
	k.errlen = errlen;
	if (errlen)
		err[0] = '\0';
	/* decoded text never outgrows twice its source, plus a NUL per scalar */
	k.poolcap = 2 * len + 64;
	if (len > KUBECONFIG_MAX)
		r = fail(&k, 0, "larger than %d bytes; refusing it", KUBECONFIG_MAX);
	else if (!(k.pool = malloc(k.poolcap)))
		r = fail(&k, 0, "out of memory");
	else
		r = check_bytes(&k);
	if (!r) {
		size_t i;
		if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
			start = 3;  /* a byte-order mark, as some editors write */
		for (i = start; i < len && is_space(text[i]); i++)
			;
		/* YAML is a superset of JSON, but kubectl's JSON is read by the JSON front end */
		r = i < len && text[i] == '{' ? parse_json(&k, &root) : parse_yaml(&k, start, &root);
	}
	if (!r)
		r = read_config(&k, root, t);
	if (k.pool)
		explicit_bzero(k.pool, k.poolcap);
	free(k.pool);
	free(k.nodes);
	if (r) {
		kube_target_free(t);
		say_where(&k);
	}
	return r ? -1 : 0;
}

int kubeconfig_load(const char *path, struct kube_target *t, char *err, size_t errlen)
{
	char dir[TARGET_PATH_MAX], *text;
	const char *slash = strrchr(path, '/');
	size_t len;
	int r;

	memset(t, 0, sizeof *t);
	if (!slash)
		r = snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		r = snprintf(dir, sizeof dir, "/");
	else
		r = snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	if (r < 0 || (size_t)r >= sizeof dir)
		return text_fail(err, errlen, "kubeconfig: the path is longer than %d bytes", TARGET_PATH_MAX - 1);
	if ((r = file_load(path, KUBECONFIG_MAX, &text, &len)) != FILE_OK)
		return file_error(err, errlen, "kubeconfig", path, r, KUBECONFIG_MAX);
	r = kubeconfig_parse(text, len, dir, path, t, err, errlen);
	explicit_bzero(text, len);
	free(text);
	return r;
}
