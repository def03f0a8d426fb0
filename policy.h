/*
 * The rules: node facts + settings + now -> what to do to that node and why.
 * Pure: no I/O, no clock, no allocation. Decided in two steps because deleting a node needs
 * the whole list (how many Ready etcd members exist): policy_node for each node as it is read,
 * then policy_resolve for the nodes kept, once every page has been read.
 */
#ifndef POLICY_H
#define POLICY_H

#include <stdint.h>
#include "node.h"

/* Fewest Ready etcd members that must remain: three voters tolerate losing one. */
#define POLICY_ETCD_FLOOR 3

struct policy_settings {
	int64_t taint_after;    /* seconds of Ready Unknown before the out-of-service taint */
	int64_t prune_after;    /* seconds before deleting a removable node; 0: pruning off */
	const char *self_node;  /* the node we run on: never acted on; may be "" */
};

/*
 * The storm guard's limit on Unknown nodes: a count, or a percentage of the listed nodes.
 * A whole control plane or network cut off looks like every node Unknown at once; tainting
 * them all would force-delete every pod in the cluster, so past the limit nothing new is done.
 */
struct policy_limit {
	long count;     /* N >= 1, or 0 when percent is used */
	int percent;    /* 1..100 when count is 0; 100 turns the guard off */
};

/* The most Unknown nodes a pass may act with: count, or floor(percent x listed) but at least
 * 1, so one dead node is always handled. -1 when the guard is off (100%). */
long policy_unknown_limit(const struct policy_limit *lim, long listed);

enum policy_storm_phase {
	POLICY_STORM_OFF,       /* not holding anything back */
	POLICY_STORM_ENGAGED,   /* more Unknown nodes than the limit: no new taint, no delete */
	POLICY_STORM_COOLDOWN   /* back within the limit, still holding until the cooldown ends */
};

/* The guard across passes; caller-owned, zeroed at start (a restart forgets it). */
struct policy_storm {
	enum policy_storm_phase phase;
	int64_t cooling_since;  /* when the count came back within the limit (the caller's clock) */
};

/* What a step changed, for the one log line each transition gets. */
enum policy_storm_change {
	POLICY_STORM_SAME,      /* no change: say nothing */
	POLICY_STORM_ENGAGES,   /* OFF or COOLDOWN -> ENGAGED */
	POLICY_STORM_COOLS,     /* ENGAGED -> COOLDOWN */
	POLICY_STORM_LIFTS      /* ENGAGED or COOLDOWN -> OFF */
};

/*
 * Advances the guard with one whole pass's count of Unknown nodes. limit as from
 * policy_unknown_limit (-1: off); cooldown: seconds it keeps holding after the count is back
 * within the limit; now: seconds on a clock that never goes back. A new trip during the
 * cooldown engages it again (as medik8s' storm cooldown does).
 */
enum policy_storm_change policy_storm_step(struct policy_storm *st, long unknown, long limit,
    int64_t cooldown, int64_t now);

/* Whether new taints and deletes are held back: engaged or cooling down. */
int policy_storm_holds(const struct policy_storm *st);

enum policy_action {
	POLICY_NONE,
	POLICY_TAINT,   /* add the out-of-service taint and our annotation */
	POLICY_CLEAR,   /* remove our taint (if still there) and our annotation */
	POLICY_DELETE   /* delete the Node object */
};

enum policy_refusal {
	POLICY_ALLOWED,
	POLICY_REFUSED_CONTROL_PLANE, /* removable and past the prune threshold, but control-plane */
	POLICY_REFUSED_ETCD,          /* ... but an etcd member */
	POLICY_REFUSED_QUORUM         /* ... but too few Ready etcd members would remain */
};

struct policy_verdict {
	enum policy_action action;
	enum policy_refusal refusal;  /* a refused delete fails the pass */
	enum policy_action fallback;  /* what to do instead if the delete is refused at resolve time */
	enum policy_action held;      /* a taint or delete the storm guard held back, else NONE */
	enum policy_action excluded;  /* a taint or delete not done: the node opted out, else NONE */
	int64_t unknown_for;          /* seconds Ready has been Unknown; -1 when it is not */
	int64_t due_in;               /* seconds until Ready Unknown crosses a threshold still ahead
	                                 that would make it act (taint, or prune); -1: none ahead */
};

/* What the whole list says, summed as nodes are read. */
struct policy_summary {
	long nodes;
	long unknown;
	long etcd_ready;   /* Ready True and NODE_LABEL_ETCD=true: the members that keep quorum */
};

void policy_summary_add(struct policy_summary *sum, const struct node_facts *f);

/*
 * Decides for one node. A POLICY_DELETE here is provisional: policy_resolve confirms it.
 * A node that opted out (f->excluded) gets no taint and no delete, only v->excluded saying
 * which it would have had; our own taint on it is still cleared.
 * Returns nonzero when the node needs anything done or said (keep its facts), else 0.
 */
int policy_node(const struct node_facts *f, const struct policy_settings *s, int64_t now,
    struct policy_verdict *v);

/*
 * Confirms a provisional delete against the whole list, or refuses it and falls back; then,
 * when the storm guard holds (storm nonzero), turns a taint or delete into v->held. A clear
 * always goes through: it is safe in any storm.
 */
void policy_resolve(struct policy_verdict *v, const struct policy_summary *sum, int storm);

#endif
