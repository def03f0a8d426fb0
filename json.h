/*
 * Reading Kubernetes JSON strictly and without allocating, and writing small JSON documents.
 * One notion of valid JSON (RFC 8259, strings valid UTF-8 without lone surrogates, nesting at
 * most JSON_DEPTH_MAX): the scanner below (json_scan.c, the grammar; json_list.c, the Node
 * layout it meets) checks it for every byte it is fed; jsmn then tokenizes only the parts a
 * reader needs (json.c). The writer is json_write.c. The caller owns every buffer.
 */
#ifndef JSON_H
#define JSON_H

#include <stddef.h>
#include <stdint.h>
#include "node.h"

#define JSON_DEPTH_MAX 64
#define JSON_CONTINUE_MAX 4096
#define JSON_KEY_MAX 320 /* a label key is at most 317 bytes */
#define JSON_CTX_DEPTH 6  /* the depths whose containers the scanner tells apart (the list down to an item's labels) */

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
 * A string member of an item (metadata.name, metadata.uid, metadata.resourceVersion, kind)
 * into out[0..cap): 0, or -1 with one line in why when it is missing, null, empty, not a
 * string, holds a NUL or does not fit. For a watch event's object, which may be no Node.
 */
int json_item_string(const struct json_item *it, enum json_member j, char *out, size_t cap, char *why,
    size_t whylen);

/*
 * One event of a watch stream, as the scanner hands it over: its type as written (unescaped,
 * "" when absent; at most JSON_TYPE_MAX bytes) and its object (NULL when the event had none),
 * valid only during the call. Nonzero stops the stream (it then fails).
 */
#define JSON_TYPE_MAX 16
typedef int (*json_event_fn)(void *ctx, const char *type, const struct json_item *obj);

/*
 * Reads one item into *f. Returns 0, or -1 with one line in why[0..whylen) saying which member,
 * what was wrong and at what byte of the item, e.g. "status.conditions[2].status is a number,
 * not a string (byte 8123)". The node is unreadable (nothing may be done to it) when:
 * it was larger than the buffer; it lacks metadata.name, metadata.uid or
 * metadata.resourceVersion, or one is empty, holds a NUL or is longer than its field in
 * struct node_facts; a member it reads has the wrong type (metadata, spec, status, labels,
 * annotations not objects; taints, conditions not arrays, their elements not objects; a label or
 * annotation value, a taint key, a condition's type or status not a string); a key it reads
 * appears twice in one object (the API server's decoder keeps the last, a first-wins reader the
 * first: we never act on a guess between them); there are two Ready conditions; or taints or
 * conditions need more than JSON_TOKENS tokens (about 5000 taints). k must be the keys the
 * list was scanned for.
 * A member that is null counts as absent. Keys and values are compared after unescaping (a key
 * longer than JSON_KEY_MAX bytes as written is none of those looked for).
 * Ready's status other than True, False, Unknown is NODE_READY_NONE; a lastTransitionTime that
 * is absent, null or not RFC 3339 is ready_since -1. On -1, f->name holds the name when it
 * could be read, else "".
 * The token pool (JSON_TOKENS * 20 bytes) is static, in json.c: one reader at a time. Only the
 * pages a node's largest member needs are touched (a k3s node: under 100 tokens).
 */
#define JSON_TOKENS 16384
int json_node_facts(const struct json_item *it, const struct node_keys *k, struct node_facts *f,
    char *why, size_t whylen);

/*
 * The scanner: splits a NodeList body, fed as it arrives in pieces of any size, into its items,
 * checking every byte against the grammar (an error anywhere, inside an item too, fails the
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
	const char *reason;       /* the same, without where */
	size_t err_at;            /* the byte of the body where it failed */
	/* private: where the grammar is (json_scan.c) */
	int st;                   /* between two tokens, or inside one */
	int depth, seq, key;      /* nesting; a stream of values, not one; the string being read is a key */
	int str, hexn, num, litn; /* the place inside a string, its \u digits, a number, a literal */
	uint32_t u;               /* the \u escape being read */
	unsigned char pend[4], npend; /* a character a piece cut: its bytes so far */
	const char *lit;          /* the literal being read */
	unsigned char array[JSON_DEPTH_MAX + 1]; /* [d]: the container at depth d is an array */
	size_t off;               /* bytes fed before this piece */
	/* private: what the layout (json_list.c) watches, keeps and captures */
	int capture, full, seen, in_item, skipping;
	size_t size, mark, caplen;
	unsigned char kind[JSON_CTX_DEPTH];  /* what the container at depth d < JSON_CTX_DEPTH is */
	unsigned short memb[JSON_CTX_DEPTH]; /* and what its member being read is */
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

/*
 * Whether s[0..len) is exactly one valid JSON value (whitespace around it allowed), by the
 * scanner's grammar. Returns 0, or -1 with the byte where it went wrong in *at (len when the
 * text ended early) and the reason in why[0..whylen), e.g. "expected ':' after a key".
 */
int json_check(const char *s, size_t len, size_t *at, char *why, size_t whylen);

/*
 * Decodes the body s[0..n) of a string json_check accepted (the text between its quotes, escapes
 * as written) into out[0..cap), NUL-terminated. Returns its length, or -1 when it holds a NUL
 * (\u0000) or does not fit. The one JSON string decoder: kubeconfig's JSON (yaml.c) uses it too.
 */
int json_unescape(const char *s, size_t n, char *out, size_t cap);

/*
 * Reads a Status object's reason and message (for a refused request), each decoded as sent and
 * cut at a character boundary (or a \u0000) to fit its buffer: text from the server, which the
 * caller cleans (kube_clean: one line, the token redacted) before it logs it; the first of a key
 * written twice counts. Returns 0 ("" for a member
 * that is absent or not a string), or -1 when the body is not a valid JSON object (then both "").
 */
int json_status(const char *body, size_t len, char *reason, size_t rlen, char *msg, size_t mlen);

/* A Status object's code (a whole number from 0), or -1 when it has none or is not a Status. */
long json_status_code(const char *body, size_t len);

/*
 * What leader election reads of a coordination.k8s.io/v1 Lease: metadata.resourceVersion and
 * the spec's fields. Times are kept as written (MicroTime strings), never interpreted: another
 * holder's clock is not ours to compare with.
 */
#define JSON_LEASE_ID_MAX 253     /* holderIdentity: a pod name and a suffix */
#define JSON_LEASE_TIME_MAX 39    /* a MicroTime, "2026-12-01T16:27:36.123456Z", with room */
struct json_lease {
	char rv[NODE_RV_MAX + 1];
	char holder[JSON_LEASE_ID_MAX + 1]; /* "" when absent, null or empty: nobody holds it */
	char acquire[JSON_LEASE_TIME_MAX + 1], renew[JSON_LEASE_TIME_MAX + 1]; /* "" when absent or null */
	long duration;                      /* leaseDurationSeconds; 0 when absent or null */
	long transitions;                   /* leaseTransitions; 0 when absent or null */
};
/*
 * Reads a Lease from body[0..len) into *l. Returns 0, or -1 with one line in why saying which
 * member and what was wrong: the body is not one valid JSON object; metadata.resourceVersion is
 * missing, empty or too long; metadata or spec is not an object; holderIdentity, acquireTime or
 * renewTime is not a string, holds a NUL or is longer than its field; leaseDurationSeconds or
 * leaseTransitions is not a whole number from 0 to 2^31 - 1; a member read appears twice. A
 * Lease that cannot be read is never taken over nor renewed. Uses json.c's token pool.
 */
int json_lease(const char *body, size_t len, struct json_lease *l, char *why, size_t whylen);

/*
 * Reads the answer to a SelfSubjectAccessReview: *allowed is 1 when status.allowed is true, 0
 * when it is false (status.denied true or absent: either way the request would be refused);
 * status.reason, when a string, goes to reason[0..rlen) as by json_status, to be cleaned by the
 * caller ("" otherwise). Returns 0, or -1 with *allowed 0 and one line in why when the
 * answer cannot be trusted: not one valid JSON object, status not an object, status.allowed
 * absent or not a boolean, status.denied not a boolean, a member on the way written twice, or
 * allowed and denied both true.
 */
int json_access_review(const char *body, size_t len, int *allowed, char *reason, size_t rlen, char *why,
    size_t whylen);

/*
 * Reads the user a SelfSubjectReview names (status.userInfo.username) into user[0..cap), as by
 * json_status (decoded, cut to fit, to be cleaned by the caller). Returns 0, or -1
 * with one line in why (user "") when the body is not one valid JSON object, a member on the
 * way is not an object or is written twice, or the name is absent, not a string or empty.
 */
int json_self_user(const char *body, size_t len, char *user, size_t cap, char *why, size_t whylen);

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
