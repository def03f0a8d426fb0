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

int policy_node(const struct node_facts *f, const struct policy_settings *s, int64_t now,
    struct policy_verdict *v)
{
	memset(v, 0, sizeof *v);
	v->unknown_for = -1;
	/* A node without a name cannot be acted on, and our own node is never touched: a
	 * watcher that cannot reach the API would otherwise taint the node it runs on. */
	if (f->name[0] == '\0' || (s->self_node && strcmp(f->name, s->self_node) == 0))
		return 0;
	if (f->ready == NODE_READY_UNKNOWN && f->ready_since >= 0) {
		/* A transition time in the future (clock skew) counts as just now. */
		v->unknown_for = now > f->ready_since ? now - f->ready_since : 0;
	}
	v->action = taint_rule(f, s, v->unknown_for);
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
	return v->action != POLICY_NONE || v->refusal != POLICY_ALLOWED;
}

void policy_resolve(struct policy_verdict *v, const struct policy_summary *sum)
{
	if (v->action != POLICY_DELETE)
		return;
	/* A delete candidate is Unknown, so it is not among the Ready members counted. */
	if (sum->etcd_ready < POLICY_ETCD_FLOOR) {
		v->refusal = POLICY_REFUSED_QUORUM;
		v->action = v->fallback;
	}
}
