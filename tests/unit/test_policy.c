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
		policy_resolve(&v, &sum, 0);
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

/* must-fail: an opted-out node is never tainted or deleted; our taint on it is still cleared. */
static void t_excluded(void)
{
	static const struct {
		struct row r;
		enum policy_action excluded;
		int keep;
	} xs[] = {
		{ { "must-fail: not tainted", "a", RDY_U, 3600, 0, 0, 0, 0, 0, 0, 3, POLICY_NONE, POLICY_ALLOWED }, POLICY_TAINT, 1 },
		{ { "must-fail: not deleted", "a", RDY_U, P, 0, 0, 1, 0, 0, P, 3, POLICY_NONE, POLICY_ALLOWED }, POLICY_DELETE, 1 },
		{ { "must-fail: not deleted, already tainted by us", "a", RDY_U, P, 1, 1, 1, 0, 0, P, 3, POLICY_NONE, POLICY_ALLOWED }, POLICY_DELETE, 1 },
		{ { "not refused either: a control-plane node opted out", "a", RDY_U, P, 0, 0, 1, 1, 0, P, 3, POLICY_NONE, POLICY_ALLOWED }, POLICY_TAINT, 1 },
		{ { "our taint cleared once Ready", "a", RDY_T, -1, 1, 1, 0, 0, 0, 0, 3, POLICY_CLEAR, POLICY_ALLOWED }, POLICY_NONE, 1 },
		{ { "nothing to say before the threshold", "a", RDY_U, T - 1, 0, 0, 0, 0, 0, 0, 3, POLICY_NONE, POLICY_ALLOWED }, POLICY_NONE, 0 },
		{ { "nothing to say when Ready", "a", RDY_T, -1, 0, 0, 0, 0, 0, 0, 3, POLICY_NONE, POLICY_ALLOWED }, POLICY_NONE, 0 },
	};
	for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
		const struct row *r = &xs[i].r;
		struct policy_settings s = { T, r->prune_after, "self" };
		struct policy_summary sum = { 10, 1, r->etcd_ready };
		struct node_facts f;
		struct policy_verdict v;

		node_from_row(r, &f);
		f.excluded = 1;
		int keep = policy_node(&f, &s, NOW, &v);
		policy_resolve(&v, &sum, 0);
		if (!check(v.action == r->want) || !check(v.refusal == r->refusal) ||
		    !check(v.excluded == xs[i].excluded) || !check(keep == xs[i].keep))
			fprintf(stderr, "  row: %s (action %d refusal %d excluded %d keep %d)\n", r->what, v.action,
			    v.refusal, v.excluded, keep);
	}
}

/* The limit: a count as given, or floor(P% x listed) never below 1; 100% is off. */
static void t_unknown_limit(void)
{
	static const struct {
		long count;
		int percent;
		long listed, want;
	} lims[] = {
		{ 0, 50, 20, 10 },
		{ 0, 50, 7, 3 },       /* floor(3.5) */
		{ 0, 50, 1, 1 },       /* never below 1: one dead node is always handled */
		{ 0, 50, 0, 1 },
		{ 0, 1, 20, 1 },
		{ 0, 99, 20, 19 },
		{ 0, 55, 1000000000, 550000000 },
		{ 0, 100, 20, -1 },    /* off */
		{ 3, 0, 20, 3 },
		{ 3, 0, 1, 3 },
		{ 40, 0, 20, 40 },
	};
	for (size_t i = 0; i < sizeof lims / sizeof lims[0]; i++) {
		struct policy_limit lim = { lims[i].count, lims[i].percent };
		long got = policy_unknown_limit(&lim, lims[i].listed);
		if (!check(got == lims[i].want))
			fprintf(stderr, "  row %zu: limit %ld, want %ld\n", i, got, lims[i].want);
	}
}

/*
 * One pass of a fleet through the policy, as noderecover.c runs it: summary over every node,
 * the guard stepped with it, each verdict resolved. Counts what would be done.
 */
struct fleet {
	int nodes, unknown_past, unknown_young, ready_ours; /* Ready nodes carrying our taint */
	long prune_after;
};
struct outcome {
	int taint, clear, del, held;
};

static struct outcome run_fleet(const struct fleet *fl, const struct policy_limit *lim,
    struct policy_storm *st, int64_t cooldown, int64_t mono)
{
	struct policy_settings s = { T, fl->prune_after, "self" };
	struct policy_summary sum = { 0, 0, 0 };
	struct node_facts f[64];
	struct policy_verdict v[64];
	struct outcome o = { 0, 0, 0, 0 };
	int n = fl->nodes;

	for (int i = 0; i < n; i++) {
		struct row r = { "", "", RDY_T, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
		char name[16];
		snprintf(name, sizeof name, "n%d", i);
		r.name = name;
		if (i < fl->unknown_past) {
			r.ready = RDY_U;
			r.unknown_for = fl->prune_after ? fl->prune_after : T;
			r.removable = 1;
		} else if (i < fl->unknown_past + fl->unknown_young) {
			r.ready = RDY_U;
			r.unknown_for = T - 10;
		} else if (i < fl->unknown_past + fl->unknown_young + fl->ready_ours) {
			r.oos = r.ours = 1;
		} else if (i < fl->unknown_past + fl->unknown_young + fl->ready_ours + 3) {
			r.etcd = 1;   /* Ready etcd voters keep quorum for the deletes */
		}
		node_from_row(&r, &f[i]);
		policy_summary_add(&sum, &f[i]);
		policy_node(&f[i], &s, NOW, &v[i]);
	}
	policy_storm_step(st, sum.unknown, policy_unknown_limit(lim, sum.nodes), cooldown, mono);
	for (int i = 0; i < n; i++) {
		policy_resolve(&v[i], &sum, policy_storm_holds(st));
		o.taint += v[i].action == POLICY_TAINT;
		o.clear += v[i].action == POLICY_CLEAR;
		o.del += v[i].action == POLICY_DELETE;
		o.held += v[i].held != POLICY_NONE;
	}
	return o;
}

/* must-fail: 20 nodes, 15 Unknown past the threshold: nothing tainted or deleted. */
static void t_storm_holds(void)
{
	struct policy_limit lim = { 0, 50 };
	struct policy_storm st = { POLICY_STORM_OFF, 0 };
	struct fleet fl = { 20, 15, 0, 0, 0 };
	struct outcome o = run_fleet(&fl, &lim, &st, T, 1000);

	check(o.taint == 0 && o.del == 0);
	check(o.held == 15);
	check(st.phase == POLICY_STORM_ENGAGED);
	/* the same with pruning on: no delete either */
	struct policy_storm st2 = { POLICY_STORM_OFF, 0 };
	fl.prune_after = P;
	o = run_fleet(&fl, &lim, &st2, T, 1000);
	check(o.taint == 0 && o.del == 0);
	check(o.held == 15);
	/* Unknown nodes not yet past the threshold count too: 5 past + 6 young = 11 of 20 */
	struct policy_storm st3 = { POLICY_STORM_OFF, 0 };
	struct fleet young = { 20, 5, 6, 0, 0 };
	o = run_fleet(&young, &lim, &st3, T, 1000);
	check(o.taint == 0 && o.held == 5);
}

/* 3 of 20 Unknown: within the limit, those 3 tainted; at exactly the limit, too. */
static void t_storm_not_engaged(void)
{
	struct policy_limit lim = { 0, 50 };
	struct policy_storm st = { POLICY_STORM_OFF, 0 };
	struct fleet fl = { 20, 3, 0, 0, 0 };
	struct outcome o = run_fleet(&fl, &lim, &st, T, 1000);

	check(o.taint == 3 && o.held == 0);
	check(st.phase == POLICY_STORM_OFF);
	fl.unknown_past = 10;
	o = run_fleet(&fl, &lim, &st, T, 1000);
	check(o.taint == 10 && o.held == 0);
	/* one over the limit holds them all */
	fl.unknown_past = 11;
	o = run_fleet(&fl, &lim, &st, T, 1000);
	check(o.taint == 0 && o.held == 11);
	/* a count limit */
	struct policy_limit three = { 3, 0 };
	struct policy_storm st2 = { POLICY_STORM_OFF, 0 };
	fl.unknown_past = 4;
	o = run_fleet(&fl, &three, &st2, T, 1000);
	check(o.taint == 0 && o.held == 4);
	/* 100% is off: 20 of 20 tainted */
	struct policy_limit off = { 0, 100 };
	struct policy_storm st3 = { POLICY_STORM_OFF, 0 };
	fl.unknown_past = 20;
	o = run_fleet(&fl, &off, &st3, T, 1000);
	check(o.taint == 20 && o.held == 0);
	/* one node of one, or of two: always handled */
	struct policy_storm st4 = { POLICY_STORM_OFF, 0 };
	struct fleet one = { 2, 1, 0, 0, 0 };
	o = run_fleet(&one, &lim, &st4, T, 1000);
	check(o.taint == 1 && o.held == 0);
}

/* Clears go through a storm: they are always safe. */
static void t_storm_clears(void)
{
	struct policy_limit lim = { 0, 50 };
	struct policy_storm st = { POLICY_STORM_OFF, 0 };
	struct fleet fl = { 20, 15, 0, 3, 0 };
	struct outcome o = run_fleet(&fl, &lim, &st, T, 1000);

	check(st.phase == POLICY_STORM_ENGAGED);
	check(o.clear == 3);
	check(o.taint == 0 && o.held == 15);
}

/* must-fail: the cooldown holds after the count is back within the limit, then lifts. */
static void t_storm_cooldown(void)
{
	struct policy_limit lim = { 0, 50 };
	struct policy_storm st = { POLICY_STORM_OFF, 0 };
	struct fleet storm = { 20, 15, 0, 0, 0 }, after = { 20, 3, 0, 0, 0 };
	struct outcome o;

	check(policy_storm_step(&st, 15, 10, 60, 1000) == POLICY_STORM_ENGAGES);
	check(policy_storm_step(&st, 15, 10, 60, 1010) == POLICY_STORM_SAME);
	check(policy_storm_step(&st, 3, 10, 60, 1020) == POLICY_STORM_COOLS);
	check(st.phase == POLICY_STORM_COOLDOWN && policy_storm_holds(&st));
	check(policy_storm_step(&st, 3, 10, 60, 1079) == POLICY_STORM_SAME);
	check(policy_storm_holds(&st));
	check(policy_storm_step(&st, 3, 10, 60, 1080) == POLICY_STORM_LIFTS);
	check(!policy_storm_holds(&st));
	check(policy_storm_step(&st, 3, 10, 60, 1090) == POLICY_STORM_SAME);
	/* a new trip during the cooldown engages it again, and the cooldown starts over */
	st = (struct policy_storm){ POLICY_STORM_OFF, 0 };
	policy_storm_step(&st, 15, 10, 60, 1000);
	policy_storm_step(&st, 3, 10, 60, 1010);
	check(policy_storm_step(&st, 12, 10, 60, 1020) == POLICY_STORM_ENGAGES);
	check(policy_storm_step(&st, 3, 10, 60, 1030) == POLICY_STORM_COOLS);
	check(policy_storm_step(&st, 3, 10, 60, 1070) == POLICY_STORM_SAME);
	check(policy_storm_step(&st, 3, 10, 60, 1090) == POLICY_STORM_LIFTS);
	/* cooldown 0: lifts in the first pass back within the limit */
	st = (struct policy_storm){ POLICY_STORM_OFF, 0 };
	policy_storm_step(&st, 15, 10, 0, 1000);
	check(policy_storm_step(&st, 3, 10, 0, 1000) == POLICY_STORM_LIFTS);
	/* the guard off (-1) never engages */
	st = (struct policy_storm){ POLICY_STORM_OFF, 0 };
	check(policy_storm_step(&st, 20, -1, 60, 1000) == POLICY_STORM_SAME && !policy_storm_holds(&st));

	/* A whole fleet: the storm, then 3 of 20 still Unknown within the cooldown: not tainted. */
	st = (struct policy_storm){ POLICY_STORM_OFF, 0 };
	o = run_fleet(&storm, &lim, &st, 60, 1000);
	check(o.taint == 0);
	o = run_fleet(&after, &lim, &st, 60, 1030);
	check(o.taint == 0 && o.held == 3);
	o = run_fleet(&after, &lim, &st, 60, 1089);
	check(o.taint == 0 && o.held == 3);
	o = run_fleet(&after, &lim, &st, 60, 1090);
	check(o.taint == 3 && o.held == 0);
}

/* When the loop should wake: the first threshold still ahead that would make the node act. */
static void t_due(void)
{
	static const struct {
		struct row r;
		int excluded;
		long due;
	} due[] = {
		{ { "taint ahead", "a", RDY_U, 10, 0, 0, 0, 0, 0, 0, 3, 0, 0 }, 0, T - 10 },
		{ { "prune ahead, after the taint", "a", RDY_U, T, 1, 1, 1, 0, 0, P, 3, 0, 0 }, 0, P - T },
		{ { "taint first, prune later", "a", RDY_U, 10, 0, 0, 1, 0, 0, P, 3, 0, 0 }, 0, T - 10 },
		{ { "prune before taint when set shorter", "a", RDY_U, 10, 0, 0, 1, 0, 0, 30, 3, 0, 0 }, 0, 20 },
		{ { "must-fail: no wake for an operator's taint", "a", RDY_U, 10, 1, 0, 0, 0, 0, 0, 3, 0, 0 }, 0, -1 },
		{ { "must-fail: no wake for a control-plane prune", "a", RDY_U, T, 1, 1, 1, 1, 0, P, 3, 0, 0 }, 0, -1 },
		{ { "must-fail: no wake for an etcd prune", "a", RDY_U, T, 1, 1, 1, 0, 1, P, 3, 0, 0 }, 0, -1 },
		{ { "must-fail: no wake for an opted-out node", "a", RDY_U, 10, 0, 0, 0, 0, 0, 0, 3, 0, 0 }, 1, -1 },
		{ { "must-fail: no wake for its own node", "self", RDY_U, 10, 0, 0, 0, 0, 0, 0, 3, 0, 0 }, 0, -1 },
		{ { "must-fail: no wake past every threshold", "a", RDY_U, 3600, 0, 0, 0, 0, 0, 0, 3, 0, 0 }, 0, -1 },
		{ { "must-fail: no wake when Ready", "a", RDY_T, -1, 0, 0, 0, 0, 0, 0, 3, 0, 0 }, 0, -1 },
		{ { "must-fail: no wake without a transition time", "a", RDY_U, -1, 0, 0, 0, 0, 0, 0, 3, 0, 0 }, 0, -1 },
	};

	for (size_t i = 0; i < sizeof due / sizeof due[0]; i++) {
		struct policy_settings s = { T, due[i].r.prune_after, "self" };
		struct node_facts f;
		struct policy_verdict v;

		node_from_row(&due[i].r, &f);
		f.excluded = due[i].excluded;
		policy_node(&f, &s, NOW, &v);
		if (!check(v.due_in == due[i].due))
			fprintf(stderr, "  row: %s (due in %lld)\n", due[i].r.what, (long long)v.due_in);
	}
}

static const struct test tests[] = {
	{ "table", t_table },
	{ "due", t_due },
	{ "summary", t_summary },
	{ "future_transition", t_future_transition },
	{ "no_name", t_no_name },
	{ "excluded", t_excluded },
	{ "unknown_limit", t_unknown_limit },
	{ "storm_holds", t_storm_holds },
	{ "storm_not_engaged", t_storm_not_engaged },
	{ "storm_clears", t_storm_clears },
	{ "storm_cooldown", t_storm_cooldown },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("policy", tests, argc, argv);
}
