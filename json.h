/*
 * Reading Node lists and objects with jsmn, and writing small JSON documents.
 * The caller owns every buffer; nothing here allocates.
 */
#ifndef JSON_H
#define JSON_H

#include <stddef.h>
#include <stdint.h>
#include "node.h"

/*
 * Reads one Node object (obj[0..len), a complete JSON object) into *f.
 * Returns 0, or -1 when the text is not valid JSON, when labels, annotations, spec.taints or
 * status.conditions has more tokens than the fixed pool (JSON_TOKENS), or when it lacks
 * metadata.name, metadata.uid or metadata.resourceVersion (or one is longer than its field in
 * struct node_facts). The object, metadata, spec and status are read with the full grammar;
 * values never read (managedFields, images, ...) are only checked for well-formed strings and
 * matching brackets (nesting at most 64), which is how they are passed over fast.
 * Also -1 (the node is unreadable, nothing may be done to it): a member it reads that has the
 * wrong type (metadata, spec, status, labels, annotations not objects; taints, conditions not
 * arrays; a label or annotation value, a taint key, a condition's type or status not a string),
 * a key it reads that appears twice in one object, or two Ready conditions. A member that is
 * null counts as absent. Keys and values are compared after unescaping.
 * Ready's status other than True, False, Unknown is NODE_READY_NONE; a lastTransitionTime
 * that is absent, null or not RFC 3339 is ready_since -1.
 * On -1, f->name holds the name when it could be read, else "".
 * The token pool (JSON_TOKENS * 20 bytes) is static: not reentrant. It holds the largest one of
 * those four members (a k3s node's largest, its conditions, uses about 70 tokens; 16384 is
 * some 8000 labels), so a node's size is bounded by the caller's buffer, not by the pool.
 */
#define JSON_TOKENS 16384
int json_node_facts(const char *obj, size_t len, const struct node_keys *k, struct node_facts *f);

/*
 * Splits a NodeList body, fed as it arrives in pieces of any size, into its items.
 * Each complete element of the top-level "items" array is copied into the caller's buffer
 * and handed to item() as soon as it closes; the bytes are dropped after it returns. An element
 * longer than the buffer is skipped (the scan goes on) and reported, when it closes, with
 * obj == NULL and len = its whole size. Elements must be objects.
 * metadata.continue is kept in cont, unescaped ("" when absent); one longer than
 * JSON_CONTINUE_MAX bytes is an error. The list's metadata may come before or after items.
 * Strings, escapes and brackets are checked everywhere; the grammar of objects and arrays is
 * checked outside the items (each item is checked when json_node_facts reads it), but a bare
 * number, true, false or null there is only scanned to its end, not validated: nothing in the
 * envelope but "items" and "continue" is used. Nesting is bounded at 64.
 * json_node_facts, called from item() on exactly (obj, len) unchanged, passes over the item's
 * nested members by where the splitter saw them end instead of scanning them again.
 * Memory: the struct (about 5.3 KB) and the caller's buffer; nothing else.
 */
#define JSON_CONTINUE_MAX 4096
#define JSON_SPANS 64
typedef int (*json_item_fn)(void *ctx, const char *obj, size_t len);
struct json_list {
	char *buf;                /* caller's buffer for one item */
	size_t cap, len;
	json_item_fn item;
	void *ctx;
	char cont[JSON_CONTINUE_MAX + 1];
	int nitems;               /* items handed to item() so far, including skipped ones */
	char err[128];            /* why feed or end failed */
	/* scanner state, private */
	int st, where, key_is, seen, rs, raw_base, in_item, skipping, depth, hex, esc, full;
	uint64_t arrays;          /* bit d: the container at depth d + 1 is an array */
	uint32_t u, hi;           /* \u escape being read; pending high surrogate */
	size_t size, keylen, contlen, off;
	char key[16];
	/*
	 * Where each object or array opening at depth 1 or 2 of the current item (managedFields,
	 * images, ...) starts and ends in it, in the order they open; the first JSON_SPANS only.
	 */
	struct { size_t at, end; } spans[JSON_SPANS];
	int nspans, span_open[2]; /* span_open[d]: the open one at item depth d + 1, or -1 */
	size_t span_base;         /* item offset minus chunk index, while this chunk is scanned */
};
void json_list_init(struct json_list *l, char *buf, size_t cap, json_item_fn item, void *ctx);
/*
 * Feeds n bytes. Returns 0, -1 on malformed input (reason and byte offset in l->err), or what
 * item() returned if nonzero (then the list is stopped: later calls return -1).
 */
int json_list_feed(struct json_list *l, const char *p, size_t n);
/*
 * After the last byte: 0 if the document was one complete object with an items array, else -1
 * (reason in l->err, e.g. "body ended inside the node list").
 */
int json_list_end(struct json_list *l);

/*
 * Reads a Status object's reason and message (for a refused request), each unescaped and
 * cut at a character boundary to fit its buffer, control characters made spaces so either is
 * safe in one log line. Returns 0 ("" for a member that is absent or not a string), or -1 when
 * the body is not a JSON object (then both are "").
 */
int json_status(const char *body, size_t len, char *reason, size_t rlen, char *msg, size_t mlen);

/*
 * A bounded writer for request bodies. Appends never write past cap (one byte is kept for the
 * final NUL); once something did not fit, or a string was not valid UTF-8 (the API server would
 * change it), overflow stays set and json_buf_end returns -1.
 */
struct json_buf {
	char *p;
	size_t len, cap;
	int overflow;
};
void json_buf_init(struct json_buf *b, char *p, size_t cap);
void json_raw(struct json_buf *b, const char *s);   /* s as is */
void json_str(struct json_buf *b, const char *s);   /* s quoted; ", \\ and controls (\u00XX) escaped */
void json_ptr(struct json_buf *b, const char *s);   /* s as a JSON-pointer token (~0, ~1), escaped, unquoted */
int json_buf_end(struct json_buf *b);               /* NUL-terminates; returns len or -1 */

#endif
