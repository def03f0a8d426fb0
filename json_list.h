/*
 * The Node layout as the JSON scanner (json_scan.h) meets it (json_list.c): a NodeList body or a
 * watch stream split into its items as it arrives, each copied into the caller's buffer with
 * the members json_node_facts (json.h) reads located in it. The caller owns every buffer;
 * nothing here allocates.
 */
#ifndef JSON_LIST_H
#define JSON_LIST_H

#include <stddef.h>
#include "json_scan.h"
#include "node.h"

#define JSON_CONTINUE_MAX 4096
#define JSON_KEY_MAX 320 /* a label key is at most 317 bytes */

/*
 * The members of a Node the scanner notes, as spans of its item (at 0: absent, at is where the
 * value starts, end just past it), and where they were looked for. Nothing else is located:
 * managedFields, images and the rest are only checked.
 */
enum json_member {
	JSON_METADATA, JSON_SPEC, JSON_STATUS,                          /* in the Node */
	JSON_NAME, JSON_UID, JSON_RV, JSON_LABELS, JSON_ANNOTATIONS,    /* in metadata */
	JSON_CONTROL_PLANE, JSON_ETCD, JSON_PRUNE, JSON_EXCLUDE, /* in labels: NODE_LABEL_CONTROL_PLANE,
	                                            NODE_LABEL_ETCD, keys->prune_label, keys->exclude_label */
	JSON_OURS,                                 /* in annotations: keys->annotation */
	JSON_TAINTS,                               /* in spec */
	JSON_CONDITIONS,                           /* in status */
	JSON_KIND,                                 /* in the Node (a watch event's object says it) */
	JSON_MEMBERS
};
struct json_span {
	size_t at, end;
};

/*
 * One element of a NodeList's items, as the scanner hands it over: its bytes p[0..len) in the
 * caller's buffer, or p NULL when it was larger than the buffer (len is then its size), and
 * where the members above lie in it. Valid only during the item() call.
 */
struct json_item {
	const char *p;
	size_t len;
	int index;                          /* its place in items, from 1 */
	struct json_span m[JSON_MEMBERS];
	unsigned twice;                     /* bit j: member j appeared twice in its object */
	size_t not_string[2];               /* the first value in labels [0], annotations [1] that is no string; 0 none */
};
typedef int (*json_item_fn)(void *ctx, const struct json_item *it);

/*
 * One event of a watch stream, as the scanner hands it over: its type as written (unescaped,
 * "" when absent; at most JSON_TYPE_MAX bytes) and its object (NULL when the event had none),
 * valid only during the call. Nonzero stops the stream (it then fails).
 */
#define JSON_TYPE_MAX 16
typedef int (*json_event_fn)(void *ctx, const char *type, const struct json_item *obj);

/*
 * The list: splits a NodeList body, fed as it arrives in pieces of any size, into its items,
 * checking every byte against the grammar (json_scan.h) (an error anywhere, inside an item too, fails the
 * list), and noting in each item the members json_node_facts reads, the label and annotation
 * keys of keys among them. Each element of the top-level "items" array (it must be an object) is
 * copied into the caller's buffer and handed to item() when it closes; an element longer than
 * the buffer is checked to its end and handed over with p NULL.
 * metadata.continue is kept in cont, unescaped ("" when absent); one longer than
 * JSON_CONTINUE_MAX bytes as written is an error, and so are items or metadata.continue
 * appearing twice or of the wrong type. The list's metadata may come before or after items.
 * Memory: the struct (about 5 KB) and the caller's buffer; nothing else. keys (NULL: none) must
 * stay valid while the list is fed.
 */
struct json_list {
	char *buf;                /* caller's buffer for one item */
	size_t cap;
	json_item_fn item;
	json_event_fn event;      /* a watch stream's (json_watch_init) */
	void *ctx;
	char cont[JSON_CONTINUE_MAX + 1];
	char rv[NODE_RV_MAX + 1]; /* the list's metadata.resourceVersion, unescaped ("" when absent) */
	char type[JSON_TYPE_MAX + 1]; /* the watch event being read: its type */
	int nitems;               /* items handed to item() so far, including oversized ones */
	char err[160];            /* why feed or end failed */
	/* private: where the grammar is (json_scan.c), the reason and byte of a failure among it */
	struct json_scan s;
	/* private: what the layout (json_list.c) watches, keeps and captures */
	int capture, seen, in_item, skipping;
	size_t size, mark;
	unsigned short memb[JSON_CTX_DEPTH]; /* what the member being read of the object at depth d is: set
	                                        by its key; arrays and the top level never read theirs */
	char keybuf[JSON_KEY_MAX]; /* a key of the envelope or of an item's first levels, as written */
	const char *look[5];      /* the keys looked for in labels and annotations, and their lengths */
	size_t looklen[5];
	struct json_item it;
};
void json_list_init(struct json_list *l, char *buf, size_t cap, const struct node_keys *keys,
    json_item_fn item, void *ctx);
/*
 * Feeds n bytes. Returns 0, -1 on malformed input (reason and byte offset in l->err), or what
 * item() returned if nonzero (then the list is stopped: later calls return -1).
 */
int json_list_feed(struct json_list *l, const char *p, size_t n);
/*
 * After the last byte: 0 if the body was one complete object with an items array (a watch
 * stream: it ended between two events), else -1 (reason in l->err, e.g. "body ended inside
 * the node list").
 */
int json_list_end(struct json_list *l);

/*
 * The same scanner over a watch stream: a sequence of JSON objects (white space between them,
 * the API server's newline included, never needed), each an event {"type": ..., "object":
 * {...}}. Every byte is checked as in a list; each event's object is copied into the caller's
 * buffer as an item is (an object longer than the buffer: p NULL) and handed to event() with
 * the event's type when the event closes. An event that is not an object, a type that is not a
 * string or longer than JSON_TYPE_MAX, an object that is not an object, or either member
 * written twice fails the stream. Feed and end as a list; l->nitems counts the events closed.
 */
void json_watch_init(struct json_list *l, char *buf, size_t cap, const struct node_keys *keys,
    json_event_fn event, void *ctx);

#endif
