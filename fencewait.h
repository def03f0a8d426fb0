/*
 * The watcher's side of the fence (docs/fence.md, "The watcher's rule"): for a node the rules
 * would taint, what its agent's Lease said and when, whether the fence was requested, and so
 * when the taint is safe. A pure state machine per node: every input comes with the monotonic
 * clock (milliseconds) as an argument, and fencewait_next says what to do next; nothing here
 * reads a clock, a socket or a global. The shell (pass.c) reads and writes the Lease (lease.c)
 * and taints. And the fixed table of those records, one a node, owned here.
 */
#ifndef FENCEWAIT_H
#define FENCEWAIT_H

#include <stdint.h>
#include "json.h"

#define FENCEWAIT_MAX 256         /* nodes followed at once (waiting, or Ready again with a request to
                                     remove); a node past them waits for a slot */
#define FENCEWAIT_READ_MS 10000   /* a waiting node's Lease is read again at least this often */

/* What the watcher's settings say. */
struct fencewait_rules {
	int require;          /* --fence=require: a node without an armed agent is never tainted */
	int64_t min_safe_ms;  /* --fence-min-safe: the floor of S, and how long `fencing` must stand */
};

/* What reading (or writing) the node's fence Lease gave. */
enum fencewait_got {
	FENCEWAIT_GOT_LEASE,      /* a Lease: its facts (a safe time missing or unreadable: safe -1) */
	FENCEWAIT_GOT_NONE,       /* 404: no agent */
	FENCEWAIT_GOT_FORBIDDEN,  /* 403: we may not read it (counts as no agent) */
	FENCEWAIT_GOT_UNREADABLE, /* an answer that is no Lease we can read */
	FENCEWAIT_GOT_FAILED      /* no answer, or another status (a write's 422: the Lease changed) */
};

enum fencewait_phase {
	FENCEWAIT_NEW,        /* nothing read yet, or since a failure: read */
	FENCEWAIT_NO_AGENT,   /* no Lease (or 403): tainted as without the fence under prefer, never under require */
	FENCEWAIT_UNREADABLE, /* its Lease or its safe time cannot be read: waits, neither tainted nor "no agent" */
	FENCEWAIT_ARMED,      /* armed, no request on it: request */
	FENCEWAIT_REQUESTED,  /* a request on it (ours, or found at our first read): counting S */
	FENCEWAIT_FENCING,    /* its agent wrote `fencing`: counting the floor from when we first saw it */
	FENCEWAIT_BACK        /* the node is Ready again: a request on its Lease comes off, then the record goes */
};

/* One node's record. Its fields are fencewait.c's (its callers read node and phase, and rv to
 * test a request's write on). */
struct fencewait {
	char node[NODE_NAME_MAX + 1];
	enum fencewait_phase phase;
	int seen;                  /* in the list being read (fencewait_sweep) */
	char rv[NODE_RV_MAX + 1];  /* the Lease as last read or written */
	int64_t safe_ms;           /* S: the larger of its fence-safe-seconds and the floor */
	int watchdog;              /* its action is the watchdog: its silence for S is a fence */
	int64_t read_at;           /* when the last read was sent: what it saw is from then or later */
	int64_t changed_at;        /* the last change of the Lease we saw (a first read and a failed one count) */
	int64_t requested_at;      /* when the request was written (or first seen); -1: none */
	int64_t fencing_at;        /* FENCING: when `fencing` was first seen */
};

/* What to do next for a node. */
enum fencewait_do_kind {
	FENCEWAIT_READ,     /* read the Lease, then fencewait_read */
	FENCEWAIT_REQUEST,  /* write the request (a JSON patch tested on rv), then fencewait_wrote */
	FENCEWAIT_WAIT,     /* not tainted now; nothing to do before until */
	FENCEWAIT_TAINT,    /* the taint may go on: the fence is safe, or there is no agent under prefer */
	FENCEWAIT_NEVER,    /* no agent under require: never tainted (read again at until) */
	FENCEWAIT_REMOVE    /* Ready again: read the Lease, remove a request on it, forget the record */
};
struct fencewait_do {
	enum fencewait_do_kind kind;
	int64_t until;      /* WAIT, NEVER: monotonic ms */
};

/* A new record for node (cut to fit): nothing read. */
void fencewait_init(struct fencewait *w, const char *node);

/* Whether w's node is Ready again, so a request on its Lease comes off (FENCEWAIT_REMOVE). */
int fencewait_back(const struct fencewait *w);

/*
 * What to do at now. storm: more than half the nodes are Unknown: nothing is requested or
 * tainted (the mirror of the agents' majority rule), whatever the storm guard's limit.
 */
void fencewait_next(const struct fencewait *w, const struct fencewait_rules *r, int storm, int64_t now,
    struct fencewait_do *d);

/*
 * A read of the Lease was sent at sent and answered at now: got, and for FENCEWAIT_GOT_LEASE its
 * facts f. A change of the Lease seen, or a failed read (the view was interrupted), restarts the
 * count from now; a Lease without the request after one was made asks for it again.
 */
void fencewait_read(struct fencewait *w, enum fencewait_got got, const struct json_fence *f,
    const struct fencewait_rules *r, int64_t sent, int64_t now);

/*
 * The request's write, sent at sent, answered at now: stored (got FENCEWAIT_GOT_LEASE, f the Lease
 * as answered: our write is the last change seen, and the count starts from now), the Lease gone
 * or not ours to write (_NONE, _FORBIDDEN: no agent, as for a read), or not (read again at once).
 */
void fencewait_wrote(struct fencewait *w, enum fencewait_got got, const struct json_fence *f,
    const struct fencewait_rules *r, int64_t sent, int64_t now);

/* The node is Ready again. */
void fencewait_ready(struct fencewait *w);

/* The state in a few words into out[0..n): "no agent", "armed", "requested, safe in 40s", "fencing,
 * safe in 12s", "safe", "unreadable", "unread", "back". Returns out. */
const char *fencewait_state(const struct fencewait *w, const struct fencewait_rules *r, int64_t now, char *out,
    size_t n);

/* The records. Zero it before use. */
struct fencewait_table {
	int n;
	struct fencewait w[FENCEWAIT_MAX];
};

/* node's record, or NULL. */
struct fencewait *fencewait_find(struct fencewait_table *t, const char *node);
/* A new record for node, or NULL when the table is full. */
struct fencewait *fencewait_add(struct fencewait_table *t, const char *node);
/* Forgets w (a record of t; another record may move into its place). */
void fencewait_forget(struct fencewait_table *t, struct fencewait *w);
/* After a whole list: forgets the records whose node it did not hold (deleted), and starts the next count. */
void fencewait_sweep(struct fencewait_table *t);

/* How many records t holds, and the one at i (0 <= i < the count). A forget moves the last
 * record into the forgotten one's place: walk from the end to forget as you go. */
int fencewait_count(const struct fencewait_table *t);
struct fencewait *fencewait_at(struct fencewait_table *t, int i);

/*
 * Node f was read in a list (the fence on): its record is kept through the sweep, and once it is
 * Ready again a request on its agent's Lease comes off; our taint on it says one may be there
 * still from before a restart, so such a node gets a record if it had none (none when t is full).
 */
void fencewait_listed(struct fencewait_table *t, const struct node_facts *f);

#endif
