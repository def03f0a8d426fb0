/*
 * What the json*.c files share and nobody else sees: the scanner's states, the hooks through
 * which the scanner (json_scan.c, the grammar) tells the Node layout (json_list.c) about the
 * containers the layout asked to watch, and the string decoding the layout and the token walker
 * (json.c) both use. Not a contract for other modules: json.h is.
 */
#ifndef JSON_IMPL_H
#define JSON_IMPL_H

#include <stddef.h>
#include "json.h"

/*
 * Where the scanner stands between two bytes (json_list.st). S_VALUE is 0, so a zeroed
 * json_list waits for its first value. Inside a string, a number or a literal, the token's own
 * place is in json_list.str, .num or .litn.
 */
enum {
	S_VALUE, S_VALUE1,   /* a value; VALUE1 also ']' (an array's first element) */
	S_KEY, S_KEY1,       /* a key; KEY1 also '}' (an object's first member) */
	S_COLON, S_AFTER,    /* after a key; after a value: ',' or the close */
	S_STR, S_NUM, S_LIT, /* inside a token */
	S_DONE, S_FAILED
};

/*
 * What a container is, as the layout names it (json_list.kind[d]): 0 is a container the layout
 * does not watch, and every container inside one is 0 too, so the scanner asks the layout
 * nothing there (managedFields, images: most of a node).
 */
#define JSON_UNWATCHED 0

/* JSON's white space: space, tab, line feed, carriage return (not YAML's, not C's isspace). */
static inline __attribute__((always_inline)) int json_is_space(int c)
{
	return c <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t');
}

/* ---- The layout's side (json_list.c) ---- */

/* Fails the scan at byte at of the body: the reason in l->err (with the item's byte), l->st S_FAILED; returns -1. */
int json_list_fail(struct json_list *l, size_t at, const char *why);
/*
 * A value starting with c at p[i] of the piece, in a watched container of kind cx at depth d.
 * Returns the kind of the container it opens (JSON_UNWATCHED for any other value), or -1 (failed).
 */
int json_list_value(struct json_list *l, int cx, int d, int c, size_t i);
/* A value ended just before p[i] in a watched container: 0, or what a callback returned (nonzero stops). */
int json_list_done(struct json_list *l, int cx, int d, const char *p, size_t i);
/* A key begins (its bytes then come to json_list_capture) and ends, in a watched container. */
void json_list_key_begin(struct json_list *l);
void json_list_key_end(struct json_list *l, int cx, int d);
/* Bytes of the string being captured (l->capture nonzero), as written. */
void json_list_capture(struct json_list *l, const unsigned char *s, size_t k);
/* The piece s[0..n) is done: when it ended inside an item, its bytes from s[l->mark] on are kept. */
void json_list_keep(struct json_list *l, const char *s, size_t n);

/* ---- The scanner's side (json_scan.c) ---- */

/* After the last byte: whether the text was whole (a number ending the text ends there). */
int json_scan_end(struct json_list *l);

/* ---- Strings the scanner checked (json.c) ---- */

/* The byte the escape \c stands for (c one of " \\ / b f n r t), or -1: \u is not one of them. */
int json_escape_value(int c);
/* Whether the string body s[0..n) decodes to exactly lit[0..ln). */
int json_str_eq(const char *s, size_t n, const char *lit, size_t ln);
/* The string body s[0..n) decoded into out[0..cap) as sent, cut at a character to fit (or at a
 * \u0000): text from the server for a log line, which its caller cleans (kube_clean). */
void json_str_log(const char *s, size_t n, char *out, size_t cap);

#endif
