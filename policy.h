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
	int64_t unknown_for;          /* seconds Ready has been Unknown; -1 when it is not */
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
 * Returns nonzero when the node needs anything done or said (keep its facts), else 0.
 */
int policy_node(const struct node_facts *f, const struct policy_settings *s, int64_t now,
    struct policy_verdict *v);

/* Confirms a provisional delete against the whole list, or refuses it and falls back. */
void policy_resolve(struct policy_verdict *v, const struct policy_summary *sum);

#endif
