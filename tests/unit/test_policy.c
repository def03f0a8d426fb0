/*
 * The rules as a table: one row per rule and per refusal the README states. Rows marked must-fail
 * guard a safety rule: they pass only when the program does not do the dangerous thing.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "../../policy.h"

#define NOW 1800000000
#define T 60    /* taint threshold */
#define P 300   /* prune threshold */

enum { RDY_T = NODE_READY_TRUE, RDY_F = NODE_READY_FALSE, RDY_U = NODE_READY_UNKNOWN, RDY_NONE = NODE_READY_NONE };

/* Facts of a node, in the order the table's columns read. */
struct row {
	const char *what;
	const char *name;
	int ready;
	long unknown_for;    /* seconds since Ready's transition; -1: no transition time */
	int oos, ours;       /* an out-of-service taint at index 0; our annotation */
	int removable, cp, etcd;
	long prune_after;    /* 0: pruning off */
	long etcd_ready;     /* Ready etcd members in the whole list */
	enum policy_action want;
	enum policy_refusal refusal;
};

static const struct row rows[] = {
	/* taint pass */
	{ "tainted past the threshold", "a", RDY_U, T, 0, 0, 0, 0, 0, 0, 0, POLICY_TAINT, POLICY_ALLOWED },
	{ "tainted well past the threshold", "a", RDY_U, 3600, 0, 0, 0, 0, 0, 0, 0, POLICY_TAINT, POLICY_ALLOWED },
	{ "must-fail: not before the threshold", "a", RDY_U, T - 1, 0, 0, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not Ready False", "a", RDY_F, -1, 0, 0, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not a node without Ready", "a", RDY_NONE, -1, 0, 0, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not Unknown without a transition time", "a", RDY_U, -1, 0, 0, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not its own node", "self", RDY_U, 3600, 0, 0, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not an operator's taint", "a", RDY_U, 3600, 1, 0, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not twice", "a", RDY_U, 3600, 1, 1, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "tainted again when our taint was removed by hand", "a", RDY_U, 3600, 0, 1, 0, 0, 0, 0, 0, POLICY_TAINT, POLICY_ALLOWED },
	{ "nothing for a healthy node", "a", RDY_T, -1, 0, 0, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	/* clear */
	{ "cleared once Ready", "a", RDY_T, -1, 1, 1, 0, 0, 0, 0, 0, POLICY_CLEAR, POLICY_ALLOWED },
	{ "annotation alone cleared once Ready", "a", RDY_T, -1, 0, 1, 0, 0, 0, 0, 0, POLICY_CLEAR, POLICY_ALLOWED },
	{ "must-fail: operator's taint not cleared", "a", RDY_T, -1, 1, 0, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not cleared while NotReady", "a", RDY_F, -1, 1, 1, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not cleared while Unknown", "a", RDY_U, 3600, 1, 1, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: own node not cleared", "self", RDY_T, -1, 1, 1, 0, 0, 0, 0, 0, POLICY_NONE, POLICY_ALLOWED },
	/* prune pass */
	{ "pruned when labelled and past", "a", RDY_U, P, 0, 0, 1, 0, 0, P, 3, POLICY_DELETE, POLICY_ALLOWED },
	{ "pruned when already tainted by us", "a", RDY_U, P, 1, 1, 1, 0, 0, P, 5, POLICY_DELETE, POLICY_ALLOWED },
	{ "must-fail: not unlabelled (tainted instead)", "a", RDY_U, P, 0, 0, 0, 0, 0, P, 3, POLICY_TAINT, POLICY_ALLOWED },
	{ "must-fail: not below the prune threshold", "a", RDY_U, P - 1, 0, 0, 1, 0, 0, P, 3, POLICY_TAINT, POLICY_ALLOWED },
	{ "must-fail: not Ready", "a", RDY_T, -1, 0, 0, 1, 0, 0, P, 3, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not NotReady", "a", RDY_F, -1, 0, 0, 1, 0, 0, P, 3, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not without Ready", "a", RDY_NONE, -1, 0, 0, 1, 0, 0, P, 3, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not its own node", "self", RDY_U, 3600, 0, 0, 1, 0, 0, P, 3, POLICY_NONE, POLICY_ALLOWED },
	{ "must-fail: not with pruning off", "a", RDY_U, 3600, 0, 0, 1, 0, 0, 0, 3, POLICY_TAINT, POLICY_ALLOWED },
	{ "must-fail: control-plane refused, tainted", "a", RDY_U, P, 0, 0, 1, 1, 0, P, 3, POLICY_TAINT, POLICY_REFUSED_CONTROL_PLANE },
	{ "must-fail: etcd member refused, tainted", "a", RDY_U, P, 0, 0, 1, 0, 1, P, 3, POLICY_TAINT, POLICY_REFUSED_ETCD },
	{ "must-fail: refused control-plane already tainted", "a", RDY_U, P, 1, 1, 1, 1, 0, P, 3, POLICY_NONE, POLICY_REFUSED_CONTROL_PLANE },
	{ "must-fail: kept with no etcd members", "a", RDY_U, P, 0, 0, 1, 0, 0, P, 0, POLICY_TAINT, POLICY_REFUSED_QUORUM },
	{ "must-fail: kept with two etcd members", "a", RDY_U, P, 0, 0, 1, 0, 0, P, 2, POLICY_TAINT, POLICY_REFUSED_QUORUM },
	{ "must-fail: kept for quorum, already tainted", "a", RDY_U, P, 1, 1, 1, 0, 0, P, 2, POLICY_NONE, POLICY_REFUSED_QUORUM },
};

static void node_from_row(const struct row *r, struct node_facts *f)
{
	memset(f, 0, sizeof *f);
	snprintf(f->name, sizeof f->name, "%s", r->name);
	snprintf(f->uid, sizeof f->uid, "uid-%s", r->name);
	snprintf(f->rv, sizeof f->rv, "42");
	f->ready = r->ready;
	f->ready_since = r->unknown_for >= 0 ? NOW - r->unknown_for : -1;
	f->has_taints = r->oos;
	f->oos_taint = r->oos ? 0 : -1;
	f->has_annotations = r->ours;
	f->our_annotation = r->ours;
	f->removable = r->removable;
	f->control_plane = r->cp;
	f->etcd = r->etcd;
	f->etcd_voter = r->etcd;
}

static void t_table(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct policy_settings s = { T, r->prune_after, "self" };
		struct policy_summary sum = { 10, 1, r->etcd_ready };
		struct node_facts f;
		struct policy_verdict v;

		node_from_row(r, &f);
		int keep = policy_node(&f, &s, NOW, &v);
		policy_resolve(&v, &sum);
		if (!check(v.action == r->want) || !check(v.refusal == r->refusal))
			fprintf(stderr, "  row: %s (action %d refusal %d)\n", r->what, v.action, v.refusal);
		if (!check(keep == (r->want != POLICY_NONE || r->refusal != POLICY_ALLOWED)))
			fprintf(stderr, "  row: %s (keep %d)\n", r->what, keep);
	}
}

/* Quorum is counted from Ready etcd voters only: not Ready members and agents do not count. */
static void t_summary(void)
{
	struct node_facts f;
	struct policy_summary sum = { 0, 0, 0 };
	static const struct row members[] = {
		{ "voter", "s1", RDY_T, -1, 0, 0, 0, 1, 1, 0, 0, 0, 0 },
		{ "voter", "s2", RDY_T, -1, 0, 0, 0, 1, 1, 0, 0, 0, 0 },
		{ "voter not Ready", "s3", RDY_F, -1, 0, 0, 0, 1, 1, 0, 0, 0, 0 },
		{ "voter Unknown", "s4", RDY_U, 10, 0, 0, 0, 1, 1, 0, 0, 0, 0 },
		{ "agent", "a1", RDY_T, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
		{ "control-plane only", "c1", RDY_T, -1, 0, 0, 0, 1, 0, 0, 0, 0, 0 },
	};
	for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
		node_from_row(&members[i], &f);
		policy_summary_add(&sum, &f);
	}
	check(sum.nodes == 6);
	check(sum.unknown == 1);
	check(sum.etcd_ready == 2);

	/* An etcd label with another value than "true" is not counted as a voter. */
	node_from_row(&members[0], &f);
	f.etcd_voter = 0;
	policy_summary_add(&sum, &f);
	check(sum.etcd_ready == 2);
}

/* A transition time in the future (clock skew) is not past any threshold. */
static void t_future_transition(void)
{
	struct policy_settings s = { T, 0, "" };
	struct node_facts f;
	struct policy_verdict v;
	static const struct row r = { "", "a", RDY_U, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };

	node_from_row(&r, &f);
	f.ready_since = NOW + 3600;
	policy_node(&f, &s, NOW, &v);
	check(v.action == POLICY_NONE);
	check(v.unknown_for == 0);
}

/* A node without a name is never acted on, even with an empty self node. */
static void t_no_name(void)
{
	struct policy_settings s = { T, P, "" };
	struct node_facts f;
	struct policy_verdict v;
	static const struct row r = { "", "", RDY_U, 3600, 0, 0, 1, 0, 0, 0, 0, 0, 0 };

	node_from_row(&r, &f);
	check(policy_node(&f, &s, NOW, &v) == 0);
	check(v.action == POLICY_NONE);
}

static const struct test tests[] = {
	{ "table", t_table },
	{ "summary", t_summary },
	{ "future_transition", t_future_transition },
	{ "no_name", t_no_name },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("policy", tests, argc, argv);
}
