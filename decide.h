/*
 * A pass's decide step: from the whole view's summary (a list's, or the table's), the storm
 * guard carried from pass to pass, each kept node's verdict (policy.c) and its fence wait
 * (fencewait.c), what the pass does to each node: write, confirm first, ask the fence, or
 * nothing. Pure: every input, the time included, is an argument; nothing here reads a clock, a
 * socket or a global, writes a line or allocates, so the unit tests and tests/sim run the very
 * rules a running watcher runs. The shell (pass.c) carries out what it says (the PATCH or
 * DELETE, the fence Lease's reads and writes, the lines, Events and metrics) and feeds the
 * results back. The per-node rules stay policy.c's, the fence's own state machine fencewait.c's.
 */
#ifndef DECIDE_H
#define DECIDE_H

#include <stdint.h>
#include "fencewait.h"
#include "policy.h"

/* What a pass decides over: a new taint or delete is decided on fresh facts only, since a
 * table can lag the cluster without knowing (a stream held or cut, then resumed), and a guard
 * counting a lagging table lets through what a storm should hold. */
enum decide_view {
	DECIDE_LIST,        /* a whole list, just read: it may act on anything */
	DECIDE_TABLE_FRESH, /* the table, proven as fresh as a list (a confirmed round): the same */
	DECIDE_TABLE,       /* the table, every node (the poll's round): may lag */
	DECIDE_TABLE_PART   /* the table, the nodes that changed and every Unknown one: may lag */
};

/* Whether view may decide a new taint, delete or fence request (as fresh as a list). */
int decide_fresh(enum decide_view view);

/* The guard's settings. */
struct decide_rules {
	struct policy_limit limit;   /* --max-unknown */
	int64_t cooldown;            /* --storm-cooldown: seconds still held once back within the limit */
};

/* The guard's step for one pass. */
struct decide_guard {
	long limit;                       /* this view's limit on Unknown nodes; -1: the guard is off */
	enum policy_storm_change change;  /* what changed, for the one line each change gets */
	int holds;                        /* no new taint and no delete this pass (engaged or cooling) */
};

/*
 * Steps the guard st (the caller's, kept from pass to pass; zeroed at start) with the whole
 * view's summary sum at now (seconds on a clock that never goes back) into g. Called once a
 * pass, before any node's decide_node, over a list and over the table alike.
 */
void decide_guard(struct policy_storm *st, const struct decide_rules *r, const struct policy_summary *sum,
    int64_t now, struct decide_guard *g);

/* What a pass does to one kept node. */
enum decide_kind {
	DECIDE_NOTHING,  /* nothing written: nothing to do, or held, excluded or refused (v says which) */
	DECIDE_ACT,      /* write v->action (taint, clear or delete) on the facts it was decided on */
	DECIDE_FENCE,    /* a taint that waits on the node's fence agent: ask decide_fence */
	DECIDE_CONFIRM   /* a new taint or delete over a view that may lag: nothing now; prove the
	                    facts fresh (a list, or the stream caught up: core.h) and decide again */
};

/*
 * Resolves node verdict v (policy_node's, kept) against the view's summary and the guard's
 * step g (policy_resolve: quorum, then the guard), and says what to do. fence: the fence is
 * on (--fence require or prefer), so a taint waits on the node's agent first, and a delete
 * candidate not yet tainted is a taint first (a Node is deleted only once it carries the taint).
 */
enum decide_kind decide_node(struct policy_verdict *v, const struct policy_summary *sum, const struct decide_guard *g,
    enum decide_view view, int fence);

/*
 * A write was refused because the node changed since it was read, and f is the node read
 * again: decides for it anew (policy_node at now, server seconds; policy_resolve with the same
 * summary and guard) into v, which holds the refused write's verdict on entry. DECIDE_NOTHING
 * when it needs nothing now; DECIDE_CONFIRM when it now wants a new taint or delete over a view
 * that may lag (a clear refused because the node went Unknown again: the summary it would be
 * decided with is the table's), or a taint the refused write was not, with the fence on: that
 * taint waits on the node's fence like any other, which a pass decides (decide_node), never a
 * retry; else DECIDE_ACT.
 */
enum decide_kind decide_again(const struct node_facts *f, const struct policy_settings *rules,
    const struct policy_summary *sum, const struct decide_guard *g, enum decide_view view, int fence, int64_t now,
    struct policy_verdict *v);

/* What the fence wait of a node the rules would taint says now. */
enum decide_fence_kind {
	DECIDE_FENCE_READ,     /* read its fence Lease (fencewait_read), then ask again */
	DECIDE_FENCE_REQUEST,  /* write the request on it (fencewait_wrote), then ask again */
	DECIDE_FENCE_ASK,      /* a request is due, but the view may lag: confirm first (still waiting) */
	DECIDE_FENCE_WAIT,     /* not tainted now; nothing to do before until */
	DECIDE_FENCE_NEVER,    /* no agent and --fence=require: never tainted */
	DECIDE_FENCE_TAINT,    /* the taint may be written (DECIDE_ACT); fenced: its agent has surely
	                          fenced, else it has none (under prefer) */
	DECIDE_FENCE_CONFIRM   /* ... but the view may lag: confirm first (DECIDE_CONFIRM) */
};
struct decide_fence_do {
	enum decide_fence_kind kind;
	int64_t until;   /* WAIT: monotonic ms */
	int storm;       /* more than half the nodes are Unknown: no request and no fenced taint */
	int fenced;      /* TAINT, CONFIRM */
};

/*
 * Asks node's fence wait w at now (monotonic ms): the storm mirror (more than half of sum's
 * nodes Unknown, whatever the guard's limit: the agents' majority rule's twin), a request only
 * on fresh facts. A record whose node was Ready again and is Unknown once more before its
 * request came off starts again (nothing read).
 */
void decide_fence(struct fencewait *w, const struct fencewait_rules *r, const struct policy_summary *sum,
    enum decide_view view, int64_t now, struct decide_fence_do *d);

#endif
