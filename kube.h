/*
 * The Kubernetes API calls noderecover makes: list nodes page by page (yielding each node's
 * facts), read one node again, watch the nodes, patch a node, delete a node, and any other
 * request (a Lease, an Event, an access review) through kube_call; and the credentials they
 * carry. Knows the API's paths, bodies and status codes, not the rules.
 */
#ifndef KUBE_H
#define KUBE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "http.h"
#include "json.h"
#include "node.h"
#include "target.h"

enum kube_result {
	KUBE_FAILED = -1, /* the reason is in kube_error() */
	KUBE_OK = 0,
	KUBE_CHANGED,     /* the node changed since it was listed: the patch's resourceVersion test
	                     failed (422 Invalid, no causes) or the delete's preconditions (409) */
	KUBE_GONE,        /* 404 */
	KUBE_GATED        /* a change the gate (kube_gate) kept unsent */
};

/*
 * Called for each node of a list, in order. why == NULL: f holds the node's facts. Otherwise
 * the node could not be read (why says what was wrong, and where) and nothing may be done to
 * it; f->name holds its name when that much could be read, else "". f lives until the call
 * returns. Nonzero stops the list (it then fails).
 */
typedef int (*kube_node_fn)(void *ctx, const struct node_facts *f, const char *why);
/* What the head of one page of a list said, before its nodes. */
struct kube_page {
	int first;      /* the first page: the list starts, or starts again after a 410 Expired, so
	                   forget what earlier pages said */
	int64_t date;   /* the response's Date, Unix seconds by the API server's clock; -1 when
	                   absent or unreadable */
};
/* Called at the head of each page of a list, before its nodes. */
typedef void (*kube_page_fn)(void *ctx, const struct kube_page *pg);
/* Called once per request sent (each retry too): the method, and the HTTP status of the
 * answer or 0 when none came (connection, TLS, deadline). For counting; must not block. */
typedef void (*kube_observe_fn)(void *ctx, const char *method, int status);

#define KUBE_TOKEN_MAX TARGET_TOKEN_MAX /* bytes of a bearer token; its file may add a line end */
#define KUBE_TOKEN_REREAD 60    /* seconds: the kubelet rotates projected tokens */
#define KUBE_RETRIES 2          /* attempts after the first, for 5xx, 429 and dropped connections */
#define KUBE_CONFLICT_RETRIES 3 /* reads and tries again of a change refused because the node changed */
#define KUBE_RETRY_AFTER_MAX 60 /* longest Retry-After honoured, seconds */
#define KUBE_PAGES_MAX 100000   /* pages of one list: 50 million nodes at the default limit */
#define KUBE_LIST_SECONDS 600   /* longest a whole list may take to read */
#define KUBE_PAGE_SECONDS 60    /* longest one page may take, from its request to its last byte */
#define KUBE_NODE_MAX (256 * 1024) /* largest Node object read; a larger one is unreadable */

/*
 * One connection to the API server, and the one Node object it reads at a time (a list's item,
 * a watch event's object: a connection reads one response at a time). Large (the TLS
 * buffers): its owner holds it once, for the whole run (noderecover.c's struct process,
 * allocated at start). Its fields are kube.c's alone.
 */
struct kube {
	struct http_conn http;
	struct json_list reader;          /* the list or the watch being read on this connection */
	char *item;                       /* KUBE_NODE_MAX bytes: the object the reader cuts out,
	                                     allocated by kube_init, freed by kube_close */
	struct tls_creds tls;
	const struct kube_target *t;
	char prefix[512];                 /* path prefix of the server URL, "" for none */
	char token[KUBE_TOKEN_MAX + 1];   /* never logged, never in an error */
	time_t token_read;                /* when token_file was last read; 0: never */
	unsigned plugin_gen;              /* the exec plugin's credential this connection holds (plugin.h) */
	volatile sig_atomic_t *stop;      /* set by a signal: no new request, no more retries */
	int dry_run;                      /* every write carries dryRun=All (kube_dry_run) */
	kube_observe_fn observe;          /* kube_observe; NULL: none */
	http_gate_fn gate;                /* kube_gate; NULL: none */
	void *gate_ctx;
	void *observe_ctx;
	char err[512];                    /* why the last call failed, one line */
};

/*
 * Prepares the connection for a target (which must outlive k). Reads the CA and client
 * certificate, and the token, and allocates the object buffer. stop (may be NULL) is polled: once it is set, no new request
 * starts and no retry waits. Returns 0, or -1 with one line in err.
 */
int kube_init(struct kube *k, const struct kube_target *t, volatile sig_atomic_t *stop, char *err,
    size_t errlen);

/* Closes the connection, frees its object buffer and forgets the credentials kube_init loaded;
 * k may be initialised again. */
void kube_close(struct kube *k);

/*
 * Lists every node, page by page (limit, then continue), calling page() at the head of each
 * page and node() for each node with its facts read under keys. A 410 Expired restarts the
 * list from the first page once (a continue token etcd compacted). Returns KUBE_OK when the whole list was read, else KUBE_FAILED with kube_error()
 * saying why. rv (NULL: not wanted) gets the list's metadata.resourceVersion ("" when the server
 * sent none), from which a watch starts. Memory: one Node object at a time (KUBE_NODE_MAX), never the page.
 */
enum kube_result kube_list_nodes(struct kube *k, long limit, const struct node_keys *keys,
    kube_page_fn page, kube_node_fn node, void *ctx, char rv[NODE_RV_MAX + 1]);

/*
 * The store's current resourceVersion, cheaply: one page of one node (limit=1 and no
 * resourceVersion: a consistent read), its list's metadata.resourceVersion into rv; the node is
 * not kept. A stream that has delivered an event or bookmark at or past it has shown every
 * change up to then. KUBE_OK, or KUBE_FAILED with kube_error().
 */
enum kube_result kube_nodes_rv(struct kube *k, char rv[NODE_RV_MAX + 1]);

/*
 * Reads one node's facts afresh (a list selecting its name, so the same reader as the list),
 * for a change the API refused because the node changed. KUBE_OK with *f filled, KUBE_GONE when
 * no such node exists, or KUBE_FAILED (unreadable included) with kube_error() saying why.
 */
enum kube_result kube_get_node(struct kube *k, const char *name, const struct node_keys *keys,
    struct node_facts *f);

/* Whether a name read from the API may be put into a path (a DNS subdomain). */
int kube_name_ok(const char *name);

/*
 * The changes, each one JSON patch (or DELETE) guarded by the node's resourceVersion as
 * listed. annotation: our annotation key; now: the time written as its value (Unix seconds).
 * KUBE_CHANGED and KUBE_GONE leave a one-line explanation in kube_error() too.
 */
enum kube_result kube_taint(struct kube *k, const struct node_facts *f, const char *annotation,
    time_t now);
enum kube_result kube_clear(struct kube *k, const struct node_facts *f, const char *annotation);
enum kube_result kube_delete(struct kube *k, const struct node_facts *f);

/*
 * Server-side dry run from now on (on nonzero): every patch and delete is sent with dryRun=All,
 * so authorization, admission and validation run and nothing is stored. Set once, after
 * kube_init.
 */
void kube_dry_run(struct kube *k, int on);

/*
 * Has fn(ctx) asked right before each change to a node (patch or delete, each retry too) goes
 * out on the wire: 0 keeps it unsent and the change returns KUBE_GATED (NULL: no gate). For
 * leader election: a replica stopped (or stalled, or backing off) between its check and the
 * socket must not write on a Lease it lost meanwhile. fn may do I/O on another connection,
 * never on k. Set once, after kube_init.
 */
void kube_gate(struct kube *k, http_gate_fn fn, void *ctx);

/* Has fn(ctx, ...) told of every request from now on (NULL: no one). Set once, after kube_init. */
void kube_observe(struct kube *k, kube_observe_fn fn, void *ctx);

/*
 * One request about something other than a node (a Lease, an Event, an access review), with
 * the node calls' credentials, retries and deadlines. path: from /api or /apis on (the server
 * URL's own path is put in front); body: JSON or NULL (a PATCH's: a JSON patch). The response body, when out is not NULL,
 * is read into out (at most cap - 1 bytes and a NUL; a longer one fails the call). Returns the
 * HTTP status, or -1 with kube_error() saying why; a status outside 2xx also leaves the status
 * and the server's reason, made safe for a log line, in kube_error(). what: a few words for
 * those lines ("renewing lease x/y"). Never dry run: kube_dry_run is about nodes only.
 */
int kube_call(struct kube *k, const char *what, const char *method, const char *path,
    const char *body, size_t len, char *out, size_t cap);

/*
 * kube_call, all of it (connecting, retries and their waits included) within ms milliseconds:
 * for a request that must not hold up the pass it is part of (an Event).
 */
int kube_call_within(struct kube *k, long ms, const char *what, const char *method, const char *path,
    const char *body, size_t len, char *out, size_t cap);

/* Did a kube_call status say the server did it (2xx)? -1 and every other status: no. */
static inline int kube_done(int status)
{
	return status >= 200 && status <= 299;
}

const char *kube_error(const struct kube *k);

/*
 * Watching the nodes: GET /api/v1/nodes?watch=1 from a resourceVersion, with bookmarks, the
 * events read as they arrive by the same scanner as a list (json_list.h), each object under the
 * same bound (KUBE_NODE_MAX) and checks. A watch takes a connection of its own (a struct kube
 * used for nothing else), since its response never ends while it is followed.
 */
enum kube_event_type { KUBE_ADDED, KUBE_MODIFIED, KUBE_DELETED, KUBE_BOOKMARK, KUBE_ERROR };
struct kube_event {
	enum kube_event_type type;      /* KUBE_ERROR: told before the stream ends, nothing else set */
	const char *rv;                 /* the resourceVersion it brings: its node's, or the bookmark's ("" for an ERROR) */
	const struct node_facts *f;     /* ADDED, MODIFIED, DELETED: the node's facts (NULL for a bookmark) */
	const char *why;                /* not NULL: the node could not be read (f->name as far as read;
	                                   "", and rv "", when its object is over KUBE_NODE_MAX) */
};
/* Called for each event, in order; ev and what it points to live until it returns. */
typedef void (*kube_event_fn)(void *ctx, const struct kube_event *ev);

/* How a watch stands after kube_watch_open or kube_watch_read. */
enum kube_watch_end {
	KUBE_WATCH_OPEN,     /* the stream is open (read: until passed with nothing more to read) */
	KUBE_WATCH_ENDED,    /* the server ended it cleanly (its timeout): resume from the last resourceVersion */
	KUBE_WATCH_EXPIRED,  /* 410 before the stream, or an ERROR event whose Status says Expired or Gone
	                        or has code 410 (client-go's IsResourceExpired): that resourceVersion is
	                        gone; relist */
	KUBE_WATCH_BROKEN,   /* what came broke the grammar or was no Node, or was not JSON: events may be
	                        lost; relist (a Node over KUBE_NODE_MAX is an event with why, not this) */
	KUBE_WATCH_FAILED    /* the request or the wire failed, or any other status or ERROR: back off, resume */
};
#define KUBE_WATCH_SLACK 60        /* seconds a stream may outlive its timeoutSeconds */
#define KUBE_WATCH_GRACE_MS 2000   /* once bytes arrive, what they start must come within this */

/* A watch stream being read (its object on the connection's reader). Its fields are kube.c's. */
struct kube_watch {
	struct kube *k;                /* the connection it is read on, set by kube_watch_open */
	const struct node_keys *keys;
	kube_event_fn fn;
	void *ctx;
	enum kube_watch_end end;   /* set when an event ends the stream */
	char why[300];
};

/*
 * Starts a watch from rv with timeoutSeconds timeout_s, events to fn(ctx) under keys (which
 * must outlive the stream). One request, no retry of a failure (but a 401, when the token
 * comes from a file, sent once more after reading it again): the caller decides when to retry.
 * KUBE_WATCH_OPEN with *date the response's Date (-1: none); otherwise why is in kube_error(),
 * and *retry_after holds a 429's or 503's Retry-After in seconds (-1: none or another status).
 */
enum kube_watch_end kube_watch_open(struct kube *k, struct kube_watch *w, const char *rv, long timeout_s,
    const struct node_keys *keys, kube_event_fn fn, void *ctx, int64_t *date, long *retry_after);

/*
 * Reads what the stream has, handing each whole event to fn, until until (monotonic ms) passes,
 * a read brought whole events (so the caller can decide on them), or the stream ends.
 * KUBE_WATCH_OPEN: the stream is still open; anything else: it is over (why in kube_error()).
 */
enum kube_watch_end kube_watch_read(struct kube_watch *w, int64_t until);

/* Drops the stream (its connection is closed). */
void kube_watch_close(struct kube_watch *w);

/*
 * Makes s, text the server sent (a user name, a review's reason), fit for one log line as the
 * node calls' errors are: this connection's token redacted, one printable line (text_clean).
 * out: cap > 0 bytes. Returns out.
 */
char *kube_clean(const struct kube *k, char *out, size_t cap, const char *s);

#endif
