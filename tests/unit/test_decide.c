/*
 * The pass's decide step (decide.h) as tables: the storm guard's step, each node's verdict over
 * each kind of view, a write refused and decided again, and the fence wait as the pass asks it.
 * Rows marked must-fail guard a safety rule: they pass only when the step does not write (a
 * taint or delete in a storm, or on a view that may lag) where it must not.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "../../decide.h"

#define NOW 1800000000
#define T 60       /* taint threshold */
#define COOL 60    /* storm cooldown */

enum { LIST = DECIDE_LIST, FRESH = DECIDE_TABLE_FRESH, TABLE = DECIDE_TABLE, PART = DECIDE_TABLE_PART };
enum { NOTHING = DECIDE_NOTHING, ACT = DECIDE_ACT, FENCE = DECIDE_FENCE, CONFIRM = DECIDE_CONFIRM };
#define NONE POLICY_NONE
#define TAINT POLICY_TAINT
#define CLEAR POLICY_CLEAR
#define DELETE POLICY_DELETE

/* Only lists and confirmed rounds are fresh. */
static void t_fresh(void)
{
	check(decide_fresh(DECIDE_LIST));
	check(decide_fresh(DECIDE_TABLE_FRESH));
	check(!decide_fresh(DECIDE_TABLE));       /* must-fail: the poll's round may lag */
	check(!decide_fresh(DECIDE_TABLE_PART));  /* must-fail: an event's round may lag */
}

/* One pass's guard step: the guard as it was, the view's counts, the time -> what it says. */
static void t_guard(void)
{
	static const struct {
		const char *what;
		long count;
		int percent;
		enum policy_storm_phase was;
		int64_t cooling_since;
		long nodes, unknown;
		int64_t now;
		long limit;
		enum policy_storm_change change;
		int holds;
	} rows[] = {
		{ "within the limit: nothing held", 0, 50, POLICY_STORM_OFF, 0, 20, 10, 100, 10, POLICY_STORM_SAME, 0 },
		{ "must-fail: one over the limit holds", 0, 50, POLICY_STORM_OFF, 0, 20, 11, 100, 10, POLICY_STORM_ENGAGES, 1 },
		{ "must-fail: the limit is floored (50 % of 7 is 3)", 0, 50, POLICY_STORM_OFF, 0, 7, 4, 100, 3, POLICY_STORM_ENGAGES, 1 },
		{ "one dead node of one is handled", 0, 50, POLICY_STORM_OFF, 0, 1, 1, 100, 1, POLICY_STORM_SAME, 0 },
		{ "must-fail: a count limit", 3, 0, POLICY_STORM_OFF, 0, 100, 4, 100, 3, POLICY_STORM_ENGAGES, 1 },
		{ "a count limit, at it", 3, 0, POLICY_STORM_OFF, 0, 100, 3, 100, 3, POLICY_STORM_SAME, 0 },
		{ "off at 100 %", 0, 100, POLICY_STORM_OFF, 0, 20, 20, 100, -1, POLICY_STORM_SAME, 0 },
		{ "must-fail: engaged stays while over", 0, 50, POLICY_STORM_ENGAGED, 0, 20, 15, 100, 10, POLICY_STORM_SAME, 1 },
		{ "must-fail: back within the limit, it cools and still holds", 0, 50, POLICY_STORM_ENGAGED, 0, 20, 2, 100, 10,
		    POLICY_STORM_COOLS, 1 },
		{ "must-fail: cooling a second short of the cooldown holds", 0, 50, POLICY_STORM_COOLDOWN, 100, 20, 2,
		    100 + COOL - 1, 10, POLICY_STORM_SAME, 1 },
		{ "cooled down: lifts", 0, 50, POLICY_STORM_COOLDOWN, 100, 20, 2, 100 + COOL, 10, POLICY_STORM_LIFTS, 0 },
		{ "must-fail: over again while cooling engages again", 0, 50, POLICY_STORM_COOLDOWN, 100, 20, 11, 100 + COOL, 10,
		    POLICY_STORM_ENGAGES, 1 },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct decide_rules r = { { rows[i].count, rows[i].percent }, COOL };
		struct policy_storm st = { rows[i].was, rows[i].cooling_since };
		struct policy_summary sum = { rows[i].nodes, rows[i].unknown, 3 };
		struct decide_guard g;

		decide_guard(&st, &r, &sum, rows[i].now, &g);
		if (!check(g.limit == rows[i].limit && g.change == rows[i].change && g.holds == rows[i].holds))
			fprintf(stderr, "  row: %s (limit %ld, change %d, holds %d)\n", rows[i].what, g.limit, g.change, g.holds);
	}
}

/* A node's verdict (as policy_node left it), the guard and the view -> what the pass does. */
static void t_node(void)
{
	static const struct {
		const char *what;
		enum policy_action action, fallback;
		int holds;
		long etcd_ready;
		int view, fence;
		int want;
		enum policy_action after, held;
	} rows[] = {
		{ "a taint over a list is written", TAINT, NONE, 0, 3, LIST, 0, ACT, TAINT, NONE },
		{ "a taint over a confirmed round is written", TAINT, NONE, 0, 3, FRESH, 0, ACT, TAINT, NONE },
		{ "must-fail: a taint over the poll's round is confirmed first", TAINT, NONE, 0, 3, TABLE, 0, CONFIRM, TAINT, NONE },
		{ "must-fail: a taint over an event's round is confirmed first", TAINT, NONE, 0, 3, PART, 0, CONFIRM, TAINT, NONE },
		{ "must-fail: a delete over a round is confirmed first", DELETE, TAINT, 0, 3, TABLE, 0, CONFIRM, DELETE, NONE },
		{ "must-fail: a taint in a storm is held (list)", TAINT, NONE, 1, 3, LIST, 0, NOTHING, NONE, TAINT },
		{ "must-fail: a taint in a storm is held (confirmed round)", TAINT, NONE, 1, 3, FRESH, 0, NOTHING, NONE, TAINT },
		{ "must-fail: a taint in a storm is held (round)", TAINT, NONE, 1, 3, PART, 0, NOTHING, NONE, TAINT },
		{ "must-fail: a delete in a storm is held", DELETE, TAINT, 1, 3, LIST, 0, NOTHING, NONE, DELETE },
		{ "must-fail: a taint held in a storm waits on no fence", TAINT, NONE, 1, 3, LIST, 1, NOTHING, NONE, TAINT },
		{ "a delete with quorum is written", DELETE, TAINT, 0, 3, LIST, 0, ACT, DELETE, NONE },
		{ "must-fail: a delete below the quorum floor falls back to the taint", DELETE, TAINT, 0, 2, LIST, 0, ACT, TAINT, NONE },
		{ "must-fail: ... and with the fence on, the taint waits on it", DELETE, TAINT, 0, 2, LIST, 1, FENCE, TAINT, NONE },
		{ "a clear over a list is written", CLEAR, NONE, 0, 3, LIST, 0, ACT, CLEAR, NONE },
		{ "a clear over an event's round is written", CLEAR, NONE, 0, 3, PART, 0, ACT, CLEAR, NONE },
		{ "a clear in a storm is written", CLEAR, NONE, 1, 3, PART, 1, ACT, CLEAR, NONE },
		{ "with the fence on, a taint asks it (list)", TAINT, NONE, 0, 3, LIST, 1, FENCE, TAINT, NONE },
		{ "with the fence on, a taint asks it (round: its Lease is read)", TAINT, NONE, 0, 3, PART, 1, FENCE, TAINT, NONE },
		{ "nothing", NONE, NONE, 0, 3, LIST, 1, NOTHING, NONE, NONE },
		{ "must-fail: with the fence on, a delete candidate not yet tainted is tainted first, waiting on the fence", DELETE,
		    TAINT, 0, 3, LIST, 1, FENCE, TAINT, NONE },
		{ "with the fence on, a delete candidate already tainted is deleted", DELETE, NONE, 0, 3, LIST, 1, ACT, DELETE, NONE },
		{ "with the fence on, a delete in a storm is held", DELETE, TAINT, 1, 3, LIST, 1, NOTHING, NONE, DELETE },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct policy_verdict v = { rows[i].action, POLICY_ALLOWED, rows[i].fallback, NONE, NONE, T, -1 };
		struct policy_summary sum = { 10, 1, rows[i].etcd_ready };
		struct decide_guard g = { 5, POLICY_STORM_SAME, rows[i].holds };
		int got = decide_node(&v, &sum, &g, rows[i].view, rows[i].fence);

		if (!check(got == rows[i].want && v.action == rows[i].after && v.held == rows[i].held))
			fprintf(stderr, "  row: %s (got %d, action %d, held %d)\n", rows[i].what, got, v.action, v.held);
	}
}

/* A write refused as changed: the node read again, decided anew with the pass's summary and guard. */
static void t_again(void)
{
	static const struct {
		const char *what;
		int ready, oos, ours;
		long unknown_for;
		int holds, view;
		int want;
		enum policy_action action;
		int fence;                  /* the fence on */
		enum policy_action was;     /* the refused write's */
	} rows[] = {
		{ "still Ready with our taint: cleared", NODE_READY_TRUE, 1, 1, -1, 0, PART, ACT, CLEAR, 0, NONE },
		{ "cleared by someone else: nothing", NODE_READY_TRUE, -1, 0, -1, 0, LIST, NOTHING, NONE, 0, NONE },
		{ "Unknown again, still tainted: nothing", NODE_READY_UNKNOWN, 1, 1, 3600, 0, PART, NOTHING, NONE, 0, NONE },
		{ "a taint wanted over a list is written", NODE_READY_UNKNOWN, -1, 0, 3600, 0, LIST, ACT, TAINT, 0, NONE },
		{ "must-fail: a refused clear now wanting a taint over a round is confirmed first", NODE_READY_UNKNOWN, -1, 1, 3600,
		    0, PART, CONFIRM, TAINT, 0, NONE },
		{ "must-fail: ... and over the poll's round", NODE_READY_UNKNOWN, -1, 1, 3600, 0, TABLE, CONFIRM, TAINT, 0, NONE },
		{ "must-fail: a taint wanted in a storm is held", NODE_READY_UNKNOWN, -1, 0, 3600, 1, LIST, NOTHING, NONE, 0, NONE },
		{ "must-fail: not before the threshold", NODE_READY_UNKNOWN, -1, 0, T - 1, 0, LIST, NOTHING, NONE, 0, NONE },
		{ "must-fail: with the fence on, a refused clear now wanting a taint over a list waits on the fence (a pass "
		    "decides it)", NODE_READY_UNKNOWN, -1, 1, 3600, 0, LIST, CONFIRM, TAINT, 1, CLEAR },
		{ "with the fence on, a refused taint the fence let through is retried", NODE_READY_UNKNOWN, -1, 0, 3600, 0, LIST,
		    ACT, TAINT, 1, TAINT },
		{ "with the fence on, a clear refused and read again Ready is cleared", NODE_READY_TRUE, 1, 1, -1, 0, LIST, ACT,
		    CLEAR, 1, CLEAR },
	};
	struct policy_settings rules = { T, 0, "self" };

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct node_facts f;
		struct policy_verdict v;
		struct policy_summary sum = { 10, 1, 3 };
		struct decide_guard g = { 5, POLICY_STORM_SAME, rows[i].holds };
		int got;

		memset(&f, 0, sizeof f);
		snprintf(f.name, sizeof f.name, "a");
		f.ready = rows[i].ready;
		f.ready_since = rows[i].unknown_for >= 0 ? NOW - rows[i].unknown_for : -1;
		f.oos_taint = rows[i].oos;
		f.our_annotation = rows[i].ours;
		memset(&v, 0, sizeof v);
		v.action = rows[i].was;
		got = decide_again(&f, &rules, &sum, &g, rows[i].view, rows[i].fence, NOW, &v);
		if (!check(got == rows[i].want && v.action == rows[i].action))
			fprintf(stderr, "  row: %s (got %d, action %d)\n", rows[i].what, got, v.action);
	}
}

/* A record in a given phase, as reads and writes at 0 s and 1 s leave it (SAFE s of fence-safe-seconds). */
#define MS(x) ((int64_t)((x) * 1000))
#define SAFE 100
enum rec { REC_NEW, REC_NO_AGENT, REC_ARMED, REC_REQUESTED, REC_BACK };
static void record(struct fencewait *w, enum rec k, const struct fencewait_rules *r)
{
	struct json_fence f;

	memset(&f, 0, sizeof f);
	snprintf(f.rv, sizeof f.rv, "7");
	f.safe = SAFE;
	f.watchdog = 1;
	fencewait_init(w, "a");
	if (k == REC_NO_AGENT)
		fencewait_read(w, FENCEWAIT_GOT_NONE, &f, r, 0, 0);
	if (k == REC_ARMED || k == REC_REQUESTED)
		fencewait_read(w, FENCEWAIT_GOT_LEASE, &f, r, 0, 0);
	if (k == REC_REQUESTED || k == REC_BACK) {
		f.request = 1;
		snprintf(f.rv, sizeof f.rv, "8");
		fencewait_wrote(w, FENCEWAIT_GOT_LEASE, &f, r, MS(1), MS(1));
		/* read again once S has passed, unchanged: safe */
		fencewait_read(w, FENCEWAIT_GOT_LEASE, &f, r, MS(1 + SAFE), MS(1 + SAFE));
	}
	if (k == REC_BACK)
		fencewait_ready(w);   /* Ready again, then Unknown once more before its request came off */
}

/* The fence wait as the pass asks it: the storm mirror and the freshness of the view. */
static void t_fence(void)
{
	static const struct {
		const char *what;
		enum rec rec;
		int require;
		long nodes, unknown;
		int view;
		double at;
		enum decide_fence_kind want;
		int fenced, storm;
	} rows[] = {
		{ "nothing read: read", REC_NEW, 0, 10, 1, PART, 0, DECIDE_FENCE_READ, 0, 0 },
		{ "no agent under prefer: tainted as without the fence", REC_NO_AGENT, 0, 10, 1, LIST, 1, DECIDE_FENCE_TAINT, 0, 0 },
		{ "must-fail: ... but over a round, confirmed first", REC_NO_AGENT, 0, 10, 1, PART, 1, DECIDE_FENCE_CONFIRM, 0, 0 },
		{ "must-fail: no agent under require: never", REC_NO_AGENT, 1, 10, 1, LIST, 1, DECIDE_FENCE_NEVER, 0, 0 },
		{ "armed: the request is written over a list", REC_ARMED, 0, 10, 1, LIST, 1, DECIDE_FENCE_REQUEST, 0, 0 },
		{ "must-fail: armed over a round: no request, confirmed first", REC_ARMED, 0, 10, 1, TABLE, 1, DECIDE_FENCE_ASK, 0, 0 },
		{ "must-fail: armed in a storm (over half Unknown): no request", REC_ARMED, 0, 10, 6, LIST, 1, DECIDE_FENCE_WAIT, 0, 1 },
		{ "armed with exactly half Unknown: no storm, requested", REC_ARMED, 0, 10, 5, LIST, 1, DECIDE_FENCE_REQUEST, 0, 0 },
		{ "requested and safe: tainted, fenced", REC_REQUESTED, 0, 10, 1, FRESH, 1 + SAFE, DECIDE_FENCE_TAINT, 1, 0 },
		{ "must-fail: requested and safe in a storm: not tainted", REC_REQUESTED, 0, 10, 6, LIST, 1 + SAFE,
		    DECIDE_FENCE_WAIT, 0, 1 },
		{ "must-fail: requested and safe over a round: confirmed first", REC_REQUESTED, 0, 10, 1, PART, 1 + SAFE,
		    DECIDE_FENCE_CONFIRM, 1, 0 },
		{ "must-fail: back, then Unknown again: its old count is no fence, read anew", REC_BACK, 0, 10, 1, LIST, 1 + SAFE,
		    DECIDE_FENCE_READ, 0, 0 },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct fencewait_rules r = { rows[i].require, MS(45) };
		struct policy_summary sum = { rows[i].nodes, rows[i].unknown, 3 };
		struct fencewait w;
		struct decide_fence_do d;

		record(&w, rows[i].rec, &r);
		decide_fence(&w, &r, &sum, rows[i].view, MS(rows[i].at), &d);
		if (!check(d.kind == rows[i].want && d.fenced == rows[i].fenced && d.storm == rows[i].storm))
			fprintf(stderr, "  row: %s (got %d, fenced %d, storm %d)\n", rows[i].what, d.kind, d.fenced, d.storm);
		if (d.kind == DECIDE_FENCE_WAIT)
			check(d.until > MS(rows[i].at));   /* a wait always ends later, never a loop */
	}
}

static const struct test tests[] = {
	{ "fresh", t_fresh },
	{ "guard", t_guard },
	{ "node", t_node },
	{ "again", t_again },
	{ "fence", t_fence },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("decide", tests, argc, argv);
}
