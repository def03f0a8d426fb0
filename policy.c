/*
 * The rules (README "What it does, exactly"), as pure functions of a node's facts, the settings and the time.
 * Changes when the rules change; knows nothing of HTTP, JSON or the clock.
 */
#include <string.h>
#include "policy.h"

void policy_summary_add(struct policy_summary *sum, const struct node_facts *f)
{
	sum->nodes++;
	if (f->ready == NODE_READY_UNKNOWN)
		sum->unknown++;
	if (f->ready == NODE_READY_TRUE && f->etcd_voter)
		sum->etcd_ready++;
}

/* The taint rule alone, also the fallback when a delete is refused. */
static enum policy_action taint_rule(const struct node_facts *f, const struct policy_settings *s,
    int64_t unknown_for)
{
	if (f->ready == NODE_READY_TRUE && f->our_annotation)
		return POLICY_CLEAR;
	/* Any out-of-service taint means the pods are already being recovered; an operator's
	 * taint (no annotation of ours) is theirs to remove. */
	if (f->oos_taint >= 0)
		return POLICY_NONE;
	/* Ready False means the kubelet is alive and finishes deletions itself. */
	if (unknown_for >= s->taint_after)
		return POLICY_TAINT;
	return POLICY_NONE;
}

/* When the next threshold ahead would make this node act: the loop wakes then, not a poll later. */
static int64_t due_in(const struct node_facts *f, const struct policy_settings *s, int64_t unknown_for)
{
	int64_t due = -1;

	if (unknown_for < 0 || f->excluded)
		return -1;
	if (f->oos_taint < 0 && unknown_for < s->taint_after)
		due = s->taint_after - unknown_for;
	if (s->prune_after > 0 && f->removable && !f->control_plane && !f->etcd && unknown_for < s->prune_after &&
	    (due < 0 || s->prune_after - unknown_for < due))
		due = s->prune_after - unknown_for;
	return due;
}

int policy_node(const struct node_facts *f, const struct policy_settings *s, int64_t now,
    struct policy_verdict *v)
{
	memset(v, 0, sizeof *v);
	v->unknown_for = -1;
	v->due_in = -1;
	/* A node without a name cannot be acted on, and our own node is never touched: a
	 * watcher that cannot reach the API would otherwise taint the node it runs on. */
	if (f->name[0] == '\0' || (s->self_node && strcmp(f->name, s->self_node) == 0))
		return 0;
	if (f->ready == NODE_READY_UNKNOWN && f->ready_since >= 0) {
		/* A transition time in the future (clock skew) counts as just now. */
		v->unknown_for = now > f->ready_since ? now - f->ready_since : 0;
	}
	v->action = taint_rule(f, s, v->unknown_for);
	v->due_in = due_in(f, s, v->unknown_for);
	if (s->prune_after > 0 && f->removable && v->unknown_for >= s->prune_after) {
		/* Deleting a k3s server's Node removes its etcd member: never ours to do. */
		if (f->control_plane)
			v->refusal = POLICY_REFUSED_CONTROL_PLANE;
		else if (f->etcd)
			v->refusal = POLICY_REFUSED_ETCD;
		else {
			v->fallback = v->action;
			v->action = POLICY_DELETE;
		}
	}
	/* An opted-out node is neither tainted nor deleted (nor refused: it is not ours to
	 * prune), but our own taint still comes off once it is Ready. */
	if (f->excluded && v->action != POLICY_CLEAR) {
		v->excluded = v->action;
		v->action = POLICY_NONE;
		v->refusal = POLICY_ALLOWED;
		return v->excluded != POLICY_NONE;
	}
	return v->action != POLICY_NONE || v->refusal != POLICY_ALLOWED;
}

void policy_resolve(struct policy_verdict *v, const struct policy_summary *sum, int storm)
{
	/* A delete candidate is Unknown, so it is not among the Ready members counted. */
	if (v->action == POLICY_DELETE && sum->etcd_ready < POLICY_ETCD_FLOOR) {
		v->refusal = POLICY_REFUSED_QUORUM;
		v->action = v->fallback;
	}
	if (storm && (v->action == POLICY_TAINT || v->action == POLICY_DELETE)) {
		v->held = v->action;
		v->action = POLICY_NONE;
	}
}

long policy_unknown_limit(const struct policy_limit *lim, long listed)
{
	long n;

	if (lim->count > 0)
		return lim->count;
	if (lim->percent >= 100)
		return -1;
	n = (long)((int64_t)lim->percent * listed / 100);
	return n < 1 ? 1 : n;
}

enum policy_storm_change policy_storm_step(struct policy_storm *st, long unknown, long limit,
    int64_t cooldown, int64_t now)
{
	enum policy_storm_phase was = st->phase;

	if (limit >= 0 && unknown > limit) {
		st->phase = POLICY_STORM_ENGAGED;
		return was == POLICY_STORM_ENGAGED ? POLICY_STORM_SAME : POLICY_STORM_ENGAGES;
	}
	if (st->phase == POLICY_STORM_ENGAGED) {
		st->phase = POLICY_STORM_COOLDOWN;
		st->cooling_since = now;
	}
	/* Nodes still rejoining after a partition heals go Ready one by one: the cooldown keeps
	 * the late ones from being tainted in the first passes after it. */
	if (st->phase == POLICY_STORM_COOLDOWN && now - st->cooling_since >= cooldown) {
		st->phase = POLICY_STORM_OFF;
		return POLICY_STORM_LIFTS;
	}
	return st->phase == was ? POLICY_STORM_SAME : POLICY_STORM_COOLS;
}

int policy_storm_holds(const struct policy_storm *st)
{
	return st->phase != POLICY_STORM_OFF;
}
