/*
 * Reading Kubernetes JSON strictly and without allocating, and writing small JSON documents.
 * One notion of valid JSON (RFC 8259, strings valid UTF-8 without lone surrogates, nesting at
 * most JSON_DEPTH_MAX): the scanner (json_scan.h, the grammar and the strings it checked;
 * json_list.h, the Node layout it meets) checks it for every byte it is fed; jsmn then tokenizes
 * only the parts a reader needs (json.c, the readers below). The writer is json_write.c. The
 * caller owns every buffer.
 */
#ifndef JSON_H
#define JSON_H

#include <stddef.h>
#include <stdint.h>
#include "json_list.h"
#include "node.h"

/*
 * A string member of an item (metadata.name, metadata.uid, metadata.resourceVersion, kind)
 * into out[0..cap): 0, or -1 with one line in why when it is missing, null, empty, not a
 * string, holds a NUL or does not fit. For a watch event's object, which may be no Node.
 */
int json_item_string(const struct json_item *it, enum json_member j, char *out, size_t cap, char *why,
    size_t whylen);

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
 * The token pool (JSON_TOKENS * 20 bytes) is json.c's, one for each thread. Only the
 * pages a node's largest member needs are touched (a k3s node: under 100 tokens).
 */
#define JSON_TOKENS 16384
/* The bytes of one thread's token pool (a jsmntok_t with parent links is five ints). glibc counts
 * a thread's thread-local storage in its stack size (the sanitizer build links glibc), so every
 * thread we start asks for this much more; only the pages it touches are resident. */
#define JSON_POOL_BYTES (JSON_TOKENS * 5 * 4)
int json_node_facts(const struct json_item *it, const struct node_keys *k, struct node_facts *f,
    char *why, size_t whylen);

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
 * What the watcher reads of a node's fence Lease (docs/fence.md): its name, resourceVersion and
 * the agent's annotations. Another host's times are never read as times.
 */
#define JSON_FENCE_SAFE "noderecover.io/fence-safe-seconds"
#define JSON_FENCE_FENCING "noderecover.io/fencing"
#define JSON_FENCE_REQUEST "noderecover.io/fence-request"
#define JSON_FENCE_ACTION "noderecover.io/fence-action"
struct json_fence {
	char name[NODE_NAME_MAX + 1];   /* metadata.name ("" when absent) */
	char rv[NODE_RV_MAX + 1];
	long safe;                      /* fence-safe-seconds: whole seconds from 1; -1 missing or unreadable */
	int fencing, request;           /* the annotation is there */
	int watchdog;                   /* fence-action is "watchdog": its silence is a fence (fencewait.h) */
};
/*
 * Reads a fence Lease from body[0..len) into *f. Returns 0, or -1 with one line in why: the body
 * is not one valid JSON object, metadata or its annotations are not objects, metadata.name or
 * metadata.resourceVersion is not a string or too long, the resourceVersion is missing, or a
 * member read appears twice. Uses json.c's token pool.
 */
int json_fence(const char *body, size_t len, struct json_fence *f, char *why, size_t whylen);

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
