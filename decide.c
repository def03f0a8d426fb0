/*
 * A pass's decide step (decide.h): the storm guard's step and each node's verdict, as pure
 * functions of (state, facts, now). No clock, no socket, no global, no line written.
 */
#include <string.h>
#include "decide.h"

int decide_fresh(enum decide_view view)
{
	return view == DECIDE_LIST || view == DECIDE_TABLE_FRESH;
}

void decide_guard(struct policy_storm *st, const struct decide_rules *r, const struct policy_summary *sum,
    int64_t now, struct decide_guard *g)
{
	/* Every Unknown node counts, our own and those not yet past the threshold: the guard asks
	 * whether the cluster or the watcher's view of it is broken, not which node is. */
	g->limit = policy_unknown_limit(&r->limit, sum->nodes);
	g->change = policy_storm_step(st, sum->unknown, g->limit, r->cooldown, now);
	g->holds = policy_storm_holds(st);
}

/* What a resolved verdict's action asks of a pass over view. */
static enum decide_kind to_write(const struct policy_verdict *v, enum decide_view view)
{
	if (v->action == POLICY_NONE)
		return DECIDE_NOTHING;
	if ((v->action == POLICY_TAINT || v->action == POLICY_DELETE) && !decide_fresh(view))
		return DECIDE_CONFIRM;
	return DECIDE_ACT;
}

/* With the fence on, a Node is deleted only once it carries the taint, whose pods' replacements
 * waited on the fence: deleting it first would let the pod collector remove its pods, fenced
 * or not. A delete candidate not yet tainted is a taint first. */
static void taint_before_delete(struct policy_verdict *v, int fence)
{
	if (fence && v->action == POLICY_DELETE && v->fallback == POLICY_TAINT)
		v->action = POLICY_TAINT;
}

enum decide_kind decide_node(struct policy_verdict *v, const struct policy_summary *sum, const struct decide_guard *g,
    enum decide_view view, int fence)
{
	policy_resolve(v, sum, g->holds);
	taint_before_delete(v, fence);
	/* the fence is asked over a lagging view too: it reads, and only its request waits for fresh facts */
	if (v->action == POLICY_TAINT && fence)
		return DECIDE_FENCE;
	return to_write(v, view);
}

enum decide_kind decide_again(const struct node_facts *f, const struct policy_settings *rules,
    const struct policy_summary *sum, const struct decide_guard *g, enum decide_view view, int fence, int64_t now,
    struct policy_verdict *v)
{
	int was_taint = v->action == POLICY_TAINT;

	policy_node(f, rules, now, v);
	policy_resolve(v, sum, g->holds);
	taint_before_delete(v, fence);
	/* a retry of a taint the fence wait let through is that taint; a new one is not */
	if (fence && v->action == POLICY_TAINT && !was_taint)
		return DECIDE_CONFIRM;
	return to_write(v, view);
}

void decide_fence(struct fencewait *w, const struct fencewait_rules *r, const struct policy_summary *sum,
    enum decide_view view, int64_t now, struct decide_fence_do *d)
{
	struct fencewait_do fd;

	if (fencewait_back(w)) {
		char node[sizeof w->node];
		memcpy(node, w->node, sizeof node);
		fencewait_init(w, node);
	}

	d->storm = sum->unknown * 2 > sum->nodes;
	d->until = INT64_MAX;
	d->fenced = 0;
	fencewait_next(w, r, d->storm, now, &fd);
	switch (fd.kind) {
	case FENCEWAIT_READ:
		d->kind = DECIDE_FENCE_READ;
		return;
	case FENCEWAIT_REQUEST:
		d->kind = decide_fresh(view) ? DECIDE_FENCE_REQUEST : DECIDE_FENCE_ASK;
		return;
	case FENCEWAIT_TAINT:
		d->fenced = w->phase != FENCEWAIT_NO_AGENT;
		d->kind = decide_fresh(view) ? DECIDE_FENCE_TAINT : DECIDE_FENCE_CONFIRM;
		return;
	case FENCEWAIT_NEVER:
		d->kind = DECIDE_FENCE_NEVER;
		return;
	case FENCEWAIT_WAIT:
	case FENCEWAIT_REMOVE:
		break;
	}
	d->kind = DECIDE_FENCE_WAIT;
	d->until = fd.until;
}
