/*
 * The YAML subset and JSON of a kubeconfig into a tree of nodes (yaml.h). Two front ends, one
 * tree. A cursor that checks every read against the length; decoded strings go to one pool
 * sized so it cannot run out, which yaml_free wipes. Errors say the line and what is wrong,
 * never the text of a value. JSON is json.c's: its grammar checks the text (json_check), its
 * decoder unescapes the strings (json_unescape); jsmn only makes the tree. Code points become
 * UTF-8 by text.h's encoder. Never decodes JSON or UTF-8 of its own.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_STRICT
/* Without parent links jsmn walks back over every token at each ',' and '}': 1 MiB took 40 s. */
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "json.h"
#include "text.h"
#include "yaml.h"

#define YAML_DEPTH_MAX 32          /* nesting; a kubeconfig needs 5 */

struct yp {
	const char *text;
	size_t len, pos, lstart;   /* cursor and the start of its line */
	int line, eof, blanks, comments;
	struct yaml_node *nodes;
	int nnodes, cap, depth;
	char *pool;                /* every decoded string; sized so it cannot run out */
	size_t poolcap, poollen;
	char *err;                 /* the reason, without the line */
	size_t errlen;
	int errline;
};

/* Fails with a reason about the given line (0: the text as a whole). */
#define yp_fail(k, at, ...) ((k)->errline = (at), text_fail((k)->err, (k)->errlen, __VA_ARGS__))

static int node_new(struct yp *k, int type, int line)
{
	struct yaml_node *n;

	if (k->nnodes == k->cap) {
		int cap = k->cap ? k->cap * 2 : 64;
		n = realloc(k->nodes, (size_t)cap * sizeof *n);
		if (!n)
			return yp_fail(k, 0, "out of memory");
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

static void node_add(struct yp *k, int parent, int child, const char *key)
{
	struct yaml_node *p = &k->nodes[parent];

	k->nodes[child].key = key;
	if (p->last < 0)
		p->child = child;
	else
		k->nodes[p->last].next = child;
	p->last = child;
}

static int pool_put(struct yp *k, int c)
{
	if (k->poollen >= k->poolcap)
		return yp_fail(k, k->line, "internal error: string space exhausted");
	k->pool[k->poollen++] = (char)c;
	return 0;
}

/* A code point (a YAML escape's) into the pool as UTF-8, by text.h's one encoder. */
static int pool_put_utf8(struct yp *k, unsigned long cp)
{
	unsigned char u[4];
	size_t n = text_utf8_put((uint32_t)cp, u);

	for (size_t i = 0; i < n; i++)
		if (pool_put(k, u[i]))
			return -1;
	return 0;
}

/* Finishes the string begun at pool offset start and makes it a scalar node. */
static int str_node(struct yp *k, size_t start, int line, int plain)
{
	int n;

	if (pool_put(k, '\0'))
		return -1;
	if ((n = node_new(k, YAML_STR, line)) < 0)
		return -1;
	k->nodes[n].str = k->pool + start;
	k->nodes[n].len = k->poollen - 1 - start;
	k->nodes[n].plain = plain;
	return n;
}

/* Bytes YAML and JSON both refuse, and the lone CR that would make line numbers lie. */
static int check_bytes(struct yp *k)
{
	int line = 1;

	for (size_t i = 0; i < k->len; i++) {
		unsigned char c = (unsigned char)k->text[i];
		if (c == '\n')
			line++;
		else if (c == '\r' && (i + 1 >= k->len || k->text[i + 1] != '\n'))
			return yp_fail(k, line, "a carriage return not followed by a line feed");
		else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
			return yp_fail(k, line, "a control character (byte 0x%02x)", c);
	}
	return 0;
}

/* ---- YAML: block mappings and sequences, plain and quoted scalars, empty {} and [] ---- */

static int peek(const struct yp *k, size_t i)
{
	return k->pos + i < k->len ? (unsigned char)k->text[k->pos + i] : -1;
}

static int is_blank(int c) { return c == ' ' || c == '\t'; }
static int is_eol(int c) { return c == -1 || c == '\n' || c == '\r'; }
static int col(const struct yp *k) { return (int)(k->pos - k->lstart); }
static void skip_ws(struct yp *k) { while (is_blank(peek(k, 0))) k->pos++; }

static int is_item(const struct yp *k)
{
	return peek(k, 0) == '-' && (is_blank(peek(k, 1)) || is_eol(peek(k, 1)));
}

static void next_line(struct yp *k)
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
static int seek_content(struct yp *k)
{
	k->blanks = k->comments = 0;
	for (;;) {
		int tab = 0, c;
		while (is_blank(c = peek(k, 0))) {
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
			return yp_fail(k, k->line, "a tab in the indentation (YAML indents with spaces only)");
		return 0;
	}
}

/* After a value: only white space or a comment may follow on its line. */
static int end_line(struct yp *k)
{
	skip_ws(k);
	if (!is_eol(peek(k, 0)) && peek(k, 0) != '#')
		return yp_fail(k, k->line, "unexpected text after a value");
	next_line(k);
	return seek_content(k);
}

/* What the YAML we read does not have, caught where a scalar would start. */
static int check_indicator(struct yp *k)
{
	int c = peek(k, 0), n = peek(k, 1), sp = is_blank(n) || is_eol(n);

	switch (c) {
	case '&': return yp_fail(k, k->line, "anchors (&) are not supported");
	case '*': return yp_fail(k, k->line, "aliases (*) are not supported");
	case '!': return yp_fail(k, k->line, "tags (!) are not supported");
	case '|': case '>':
		return yp_fail(k, k->line, "block scalars (| and >) are not supported; write the value on one line");
	case '%': return yp_fail(k, k->line, "directives (%%) are not supported");
	case '@': case '`': return yp_fail(k, k->line, "a value cannot start with @ or ` (reserved in YAML)");
	case ',': case ']': case '}': return yp_fail(k, k->line, "an unexpected flow indicator");
	case '{': case '[':
		return yp_fail(k, k->line, "flow collections ({...} and [...]) are supported only empty");
	case '?': return sp ? yp_fail(k, k->line, "complex keys (?) are not supported") : 0;
	case '-': return sp ? yp_fail(k, k->line, "a list item where a value was expected") : 0;
	case ':': return sp ? yp_fail(k, k->line, "an empty key") : 0;
	}
	return 0;
}

/* A plain scalar's text up to the end of the line, a comment, or ": "; *colon says which. */
static int scan_plain(struct yp *k, int *colon)
{
	size_t keep = k->poollen;

	*colon = 0;
	for (;;) {
		int c = peek(k, 0);
		if (is_eol(c))
			break;
		if (c == ':' && (is_blank(peek(k, 1)) || is_eol(peek(k, 1)))) {
			*colon = 1;
			break;
		}
		if (is_blank(c) && peek(k, 1) == '#')
			break;
		if (pool_put(k, c))
			return -1;
		if (!is_blank(c))
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
static int fold(struct yp *k, int line0, int escaped)
{
	int breaks = 0;

	next_line(k);
	for (;;) {
		skip_ws(k);
		if (peek(k, 0) == -1)
			return yp_fail(k, line0, "a quoted value is not closed");
		if (!is_eol(peek(k, 0)))
			break;
		breaks++;
		next_line(k);
	}
	if (!breaks && !escaped)
		return pool_put(k, ' ');
	while (breaks-- > 0)
		if (pool_put(k, '\n'))
			return -1;
	return 0;
}

/* The escape after a backslash in a double-quoted scalar; k->pos is past the letter. */
static int quoted_escape(struct yp *k, int e)
{
	unsigned long cp = 0;
	int n = 0;

	switch (e) {
	case 'a': return pool_put(k, 7);
	case 'b': return pool_put(k, 8);
	case 't': case '\t': return pool_put(k, 9);
	case 'n': return pool_put(k, 10);
	case 'v': return pool_put(k, 11);
	case 'f': return pool_put(k, 12);
	case 'r': return pool_put(k, 13);
	case 'e': return pool_put(k, 27);
	case ' ': case '"': case '/': case '\\': return pool_put(k, e);
	case 'N': return pool_put_utf8(k, 0x85);
	case '_': return pool_put_utf8(k, 0xa0);
	case 'L': return pool_put_utf8(k, 0x2028);
	case 'P': return pool_put_utf8(k, 0x2029);
	case 'x': n = 2; break;
	case 'u': n = 4; break;
	case 'U': n = 8; break;
	case '0': return yp_fail(k, k->line, "a \\0 escape: a NUL byte cannot be part of a value");
	default: return yp_fail(k, k->line, "an unknown escape in a double-quoted value");
	}
	for (int i = 0; i < n; i++) {
		int h = text_hexval(peek(k, (size_t)i));
		if (h < 0)
			return yp_fail(k, k->line, "a \\%c escape without %d hex digits", e, n);
		cp = cp << 4 | (unsigned long)h;
	}
	k->pos += (size_t)n;
	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return yp_fail(k, k->line, "an escape that is not a character (NUL, surrogate or past U+10FFFF)");
	return pool_put_utf8(k, cp);
}

/* A single- or double-quoted scalar, which may span lines; k->pos is at the opening quote. */
static int scan_quoted(struct yp *k)
{
	int q = peek(k, 0), line0 = k->line;
	size_t keep = k->poollen;  /* trailing white space before a line break is not content */

	k->pos++;
	for (;;) {
		int c = peek(k, 0);
		if (c == -1)
			return yp_fail(k, line0, "a quoted value is not closed");
		if (c == q && q == '\'' && peek(k, 1) == '\'') {
			if (pool_put(k, '\''))
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
					return yp_fail(k, line0, "a quoted value is not closed");
				if (quoted_escape(k, e))
					return -1;
			}
			keep = k->poollen;
		} else {
			if (pool_put(k, c))
				return -1;
			k->pos++;
			if (!is_blank(c))
				keep = k->poollen;
		}
	}
}

static int parse_node(struct yp *k, int parent_col, int *out);

/* A scalar (or an empty {} or []) where a value is expected; plain ones may continue on lines indented past parent_col. */
static int parse_scalar(struct yp *k, int parent_col, int *out)
{
	int c = peek(k, 0), line = k->line, colon, n;
	size_t start = k->poollen;

	if (c == '{' || c == '[') {
		k->pos++;
		skip_ws(k);
		if (peek(k, 0) != (c == '{' ? '}' : ']'))
			return yp_fail(k, line, "flow collections ({...} and [...]) are supported only empty");
		k->pos++;
		if ((*out = node_new(k, c == '{' ? YAML_MAP : YAML_SEQ, line)) < 0)
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
		return yp_fail(k, line, "a plain value cannot contain \": \"; quote it");
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
		if (k->blanks == 0 && pool_put(k, ' '))
			return -1;
		for (int i = 0; i < k->blanks; i++)
			if (pool_put(k, '\n'))
				return -1;
		if (scan_plain(k, &colon))
			return -1;
		if (colon)
			return yp_fail(k, k->line, "unexpected indentation (a key inside a value?)");
	}
	if ((n = str_node(k, start, line, 1)) < 0)
		return -1;
	const char *s = k->nodes[n].str;
	if (!strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
		k->nodes[n].type = YAML_NULL;
	*out = n;
	return 0;
}

/* A mapping key and its colon; *key points into the pool. */
static int parse_key(struct yp *k, const char **key)
{
	int c = peek(k, 0), line = k->line, colon = 1;
	size_t start = k->poollen;

	if (c == '"' || c == '\'') {
		if (scan_quoted(k))
			return -1;
		if (k->line != line)
			return yp_fail(k, line, "a quoted key spans lines");
		skip_ws(k);
	} else if (check_indicator(k) || scan_plain(k, &colon)) {
		return -1;
	}
	if (!colon || peek(k, 0) != ':' || !(is_blank(peek(k, 1)) || is_eol(peek(k, 1))))
		return yp_fail(k, line, "expected \"key: value\"");
	k->pos++;
	if (k->poollen == start)
		return yp_fail(k, line, "an empty key");
	if (pool_put(k, '\0'))
		return -1;
	*key = k->pool + start;
	return 0;
}

static int parse_map(struct yp *k, int *out)
{
	int mcol = col(k), m, v;

	if ((m = node_new(k, YAML_MAP, k->line)) < 0)
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
			} else if ((v = node_new(k, YAML_NULL, line)) < 0) {
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
			return yp_fail(k, k->line, "unexpected indentation");
		if (is_item(k))
			return yp_fail(k, k->line, "a list item where a key was expected");
	}
	*out = m;
	return 0;
}

static int parse_seq(struct yp *k, int *out)
{
	int scol = col(k), s, v;

	if ((s = node_new(k, YAML_SEQ, k->line)) < 0)
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
			} else if ((v = node_new(k, YAML_NULL, line)) < 0) {
				return -1;
			}
		} else if (parse_node(k, scol, &v)) {
			return -1;
		}
		node_add(k, s, v, NULL);
		if (k->eof || col(k) < scol)
			break;
		if (col(k) > scol)
			return yp_fail(k, k->line, "unexpected indentation");
		if (!is_item(k))
			break;
	}
	*out = s;
	return 0;
}

/* Whether the content at the cursor is "key:": looks ahead, then puts the cursor back. */
static int is_key(struct yp *k)
{
	size_t pos = k->pos, lstart = k->lstart, pl = k->poollen;
	int line = k->line, c = peek(k, 0), colon = 0, r;

	if (c == '"' || c == '\'') {
		r = scan_quoted(k);
		skip_ws(k);
		colon = peek(k, 0) == ':' && (is_blank(peek(k, 1)) || is_eol(peek(k, 1)));
	} else if (c == '{' || c == '[') {
		r = 0;
	} else {
		r = check_indicator(k) || scan_plain(k, &colon) ? -1 : 0;
	}
	k->pos = pos, k->lstart = lstart, k->poollen = pl, k->line = line;
	return r < 0 ? -1 : colon;
}

/* Any node whose first content byte is at the cursor. */
static int parse_node(struct yp *k, int parent_col, int *out)
{
	int r;

	if (k->depth >= YAML_DEPTH_MAX)
		return yp_fail(k, k->line, "nested deeper than %d levels", YAML_DEPTH_MAX);
	k->depth++;
	if (is_item(k))
		r = parse_seq(k, out);
	else if ((r = is_key(k)) >= 0)
		r = r ? parse_map(k, out) : parse_scalar(k, parent_col, out);
	k->depth--;
	return r;
}

static int parse_yaml(struct yp *k, size_t start, int *root)
{
	k->pos = k->lstart = start;
	k->line = 1;
	if (seek_content(k))
		return -1;
	if (!k->eof && col(k) == 0 && peek(k, 0) == '-' && peek(k, 1) == '-' && peek(k, 2) == '-' &&
	    (is_blank(peek(k, 3)) || is_eol(peek(k, 3)))) {
		k->pos += 3;
		if (end_line(k))
			return -1;
	}
	if (k->eof)
		return yp_fail(k, 0, "the file is empty");
	if (parse_node(k, -1, root))
		return -1;
	if (!k->eof)
		return yp_fail(k, k->line, "unexpected text after the top-level mapping (a second document?)");
	return 0;
}

/* ---- JSON, through jsmn ---- */

static int from_json_line(struct yp *k, int off)
{
	/* tokens come in text order, so the count only moves forward */
	while (k->pos < (size_t)off && k->pos < k->len)
		if (k->text[k->pos++] == '\n')
			k->line++;
	return k->line;
}

/* A string token into the pool, decoded by json.c's decoder (the text passed json_check). */
static int from_json_string(struct yp *k, const jsmntok_t *t)
{
	size_t start = k->poollen, n = (size_t)(t->end - t->start);
	int line = from_json_line(k, t->start), len;

	/* decoding never lengthens, so only a NUL can make json_unescape refuse */
	if (n + 1 > k->poolcap - start)
		return yp_fail(k, line, "internal error: string space exhausted");
	if ((len = json_unescape(k->text + t->start, n, k->pool + start, k->poolcap - start)) < 0)
		return yp_fail(k, line, "a \\u0000 escape: a NUL is not a character a value can hold");
	k->poollen += (size_t)len;
	return str_node(k, start, line, 0);
}

static int is_json_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static int from_json_value(struct yp *k, const jsmntok_t *t, int ntok, int *i, int *out)
{
	const jsmntok_t *tk;
	int n, v, line;

	if (*i >= ntok)
		return yp_fail(k, 0, "the JSON ends early");
	if (k->depth >= YAML_DEPTH_MAX)
		return yp_fail(k, from_json_line(k, t[*i].start), "nested deeper than %d levels", YAML_DEPTH_MAX);
	tk = &t[(*i)++];
	line = from_json_line(k, tk->start);
	/* json_check passed the text: jsmn's tree is the document's, keys and values alternate */
	switch (tk->type) {
	case JSMN_STRING:
		return (*out = from_json_string(k, tk)) < 0 ? -1 : 0;
	case JSMN_PRIMITIVE: {
		size_t start = k->poollen;
		for (int j = tk->start; j < tk->end; j++)
			if (pool_put(k, k->text[j]))
				return -1;
		if ((n = str_node(k, start, line, 1)) < 0)
			return -1;
		if (!strcmp(k->nodes[n].str, "null"))
			k->nodes[n].type = YAML_NULL;
		*out = n;
		return 0;
	}
	case JSMN_OBJECT:
	case JSMN_ARRAY:
		if ((n = node_new(k, tk->type == JSMN_OBJECT ? YAML_MAP : YAML_SEQ, line)) < 0)
			return -1;
		k->depth++;
		for (int j = 0; j < tk->size; j++) {
			const char *key = NULL;
			if (tk->type == JSMN_OBJECT) {
				int kn = from_json_string(k, &t[(*i)++]);
				if (kn < 0)
					return -1;
				key = k->nodes[kn].str;
			}
			if (from_json_value(k, t, ntok, i, &v))
				return -1;
			node_add(k, n, v, key);
		}
		k->depth--;
		*out = n;
		return 0;
	default:
		return yp_fail(k, line, "a JSON value jsmn could not classify");
	}
}

/* The text is checked by json.c's grammar, the one notion of valid JSON here, then tokenized. */
static int parse_json(struct yp *k, int *root)
{
	jsmn_parser p;
	jsmntok_t *t;
	char why[96];
	size_t at;
	int n, i = 0;

	k->pos = 0, k->line = 1;
	if (json_check(k->text, k->len, &at, why, sizeof why) < 0) {
		if (at >= k->len)
			return yp_fail(k, 0, "the JSON ends early (a truncated file?)");
		return yp_fail(k, from_json_line(k, (int)at), "not valid JSON: %s", why);
	}
	jsmn_init(&p);
	n = jsmn_parse(&p, k->text, k->len, NULL, 0);
	if (n < 1 || !(t = calloc((size_t)n, sizeof *t)))
		return yp_fail(k, 0, n < 1 ? "not valid JSON" : "out of memory");
	jsmn_init(&p);
	if (jsmn_parse(&p, k->text, k->len, t, (unsigned)n) != n || t[0].type != JSMN_OBJECT) {
		free(t);
		return yp_fail(k, 0, "the JSON is not an object");
	}
	int r = from_json_value(k, t, n, &i, root);
	free(t);
	return r;
}

int yaml_parse(struct yaml_doc *d, const char *text, size_t len, char *err, size_t errlen, int *errline)
{
	struct yp k;
	size_t start = 0, i;
	int root = -1, r;

	memset(d, 0, sizeof *d);
	memset(&k, 0, sizeof k);
	k.text = text;
	k.len = len;
	k.err = err;
	k.errlen = errlen;
	if (errlen)
		err[0] = '\0';
	/* decoded text never outgrows twice its source, plus a NUL per scalar */
	k.poolcap = 2 * len + 64;
	if (!(k.pool = malloc(k.poolcap)))
		r = yp_fail(&k, 0, "out of memory");
	else
		r = check_bytes(&k);
	if (!r) {
		if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
			start = 3;  /* a byte-order mark, as some editors write */
		for (i = start; i < len && is_json_blank(text[i]); i++)
			;
		/* YAML is a superset of JSON, but kubectl's JSON is read by the JSON front end */
		r = i < len && text[i] == '{' ? parse_json(&k, &root) : parse_yaml(&k, start, &root);
	}
	*errline = k.errline;
	d->nodes = k.nodes;
	d->nnodes = k.nnodes;
	d->root = root;
	d->pool = k.pool;
	d->poolcap = k.poolcap;
	if (r) {
		yaml_free(d);
		return -1;
	}
	return 0;
}

void yaml_free(struct yaml_doc *d)
{
	if (d->pool)
		explicit_bzero(d->pool, d->poolcap);
	free(d->pool);
	free(d->nodes);
	memset(d, 0, sizeof *d);
	d->root = -1;
}
