/*
 * Reading Node lists and objects with jsmn, and writing small JSON documents.
 * The caller owns every buffer; nothing here allocates.
 */
#ifndef JSON_H
#define JSON_H

#include <stddef.h>
#include "node.h"

/* The configurable keys json_node_facts looks for. Both must stay valid while used. */
struct json_keys {
	const char *prune_label;  /* label whose value "true" marks a node removable */
	const char *annotation;   /* annotation that marks the out-of-service taint as ours */
};

/*
 * Reads one Node object (obj[0..len), a complete JSON object) into *f.
 * Returns 0, or -1 when the text is not valid JSON, has more tokens than the fixed pool
 * (JSON_TOKENS), or lacks metadata.name, metadata.uid or metadata.resourceVersion.
 * On -1, f->name holds the name when it could be read, else "".
 */
#define JSON_TOKENS 16384
int json_node_facts(const char *obj, size_t len, const struct json_keys *k, struct node_facts *f);

/*
 * Splits a NodeList body, fed as it arrives, into its items.
 * Each complete element of the top-level "items" array is copied into the caller's buffer
 * and handed to item(); the bytes are dropped after it returns. An element longer than the
 * buffer is skipped and reported with obj == NULL and len = its size so far.
 * metadata.continue is kept (up to JSON_CONTINUE_MAX bytes, unescaped).
 */
#define JSON_CONTINUE_MAX 4096
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
	int st, depth, instr, esc, in_items, key_is, skipping;
	size_t keylen, vallen;
	char key[32];
	char val[JSON_CONTINUE_MAX + 1];
};
void json_list_init(struct json_list *l, char *buf, size_t cap, json_item_fn item, void *ctx);
/* Feeds n bytes. Returns 0, -1 on malformed input (reason in l->err), or what item() returned if nonzero. */
int json_list_feed(struct json_list *l, const char *p, size_t n);
/* After the last byte: 0 if the document was one complete object, else -1 (reason in l->err). */
int json_list_end(struct json_list *l);

/*
 * Reads a Status object's reason and message (for a refused request), each truncated to
 * its buffer. Returns 0, or -1 when the body is not a JSON object (then both are "").
 */
int json_status(const char *body, size_t len, char *reason, size_t rlen, char *msg, size_t mlen);

/*
 * A bounded writer for request bodies. Appends never write past cap; once something did not
 * fit, overflow stays set and json_buf_end returns -1.
 */
struct json_buf {
	char *p;
	size_t len, cap;
	int overflow;
};
void json_buf_init(struct json_buf *b, char *p, size_t cap);
void json_raw(struct json_buf *b, const char *s);   /* s as is */
void json_str(struct json_buf *b, const char *s);   /* s as a quoted, escaped JSON string */
void json_ptr(struct json_buf *b, const char *s);   /* s as a JSON-pointer token (~0, ~1), escaped, unquoted */
int json_buf_end(struct json_buf *b);               /* NUL-terminates; returns len or -1 */

#endif
