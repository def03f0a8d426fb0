/*
 * The deterministic simulator: the follower's real core (core.c), its table (table.c), the
 * pass's real decide step (decide.c: the storm guard, each node's verdict, the confirm rule)
 * and the rules (policy.c) against a model API server and cluster in virtual time, one thread,
 * every choice drawn from one seed. No socket, no clock, no sleep: 30 minutes of a 20-200 node
 * cluster with faults play in milliseconds, and a failing seed prints the one line that
 * replays it.
 *
 * The model plays the shell's part (follow.c, and pass.c's executor: it reads a list or the
 * table, asks the decide step, writes what it says, and reads a node again when a write is
 * refused). The cluster: kubelets that die (Ready Unknown 40 s later, as the node lifecycle
 * controller marks them) and come back, storms of most of them at once, and rolling storms
 * that kill one more every few seconds until past the guard's limit. The API:
 * lists that fail or are slow, watches that fail to open, streams that end at their timeout,
 * are cut, go silent, send ERROR 410 (a compacted resourceVersion) or 500, break, or carry an
 * object too large to read; compactions; bookmarks or none.
 *
 * Invariants, checked as the run goes (each failure names the seed, the time and the rule):
 *  - no taint before its threshold by the server's clock;
 *  - no new taint decided while the facts it was decided on had more Unknown nodes than the
 *    storm guard's limit (the model's own count and limit: 50 % of the nodes, at least 1),
 *    nor within the guard's cooldown (60 s) after such facts were decided on;
 *  - no new taint decided on a table not proven fresh (a round that was not confirmed);
 *  - an Unknown node past its threshold is tainted within DUE_BOUND_MS once the watch is calm
 *    (open, caught up, no fault) and the guard does not hold;
 *  - a node that is Ready again has our taint cleared within CLEAR_BOUND_MS while calm;
 *  - lists after failures are never closer than client-go's reflector backoff allows (0.8 s
 *    doubling to 30 s) unless an event came between;
 *  - every watch starts from the last resourceVersion the core was given;
 *  - while the stream is caught up, the table holds exactly the cluster's nodes and versions.
 *
 * usage: sim [-v] [-n NODES] SEED [COUNT]   (COUNT seeds from SEED on; exit 1 on a failure)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "decide.h"
#include "policy.h"
#include "table.h"

#define MAX_NODES 200
#define RUN_MS (30 * 60 * 1000LL)
#define TAINT_AFTER 60        /* seconds */
#define NLC_GRACE_MS 40000    /* the node lifecycle controller marks a silent node Unknown after 40 s */
#define POLL_MS 15000
#define RELIST_MS 600000
/* The server's Date has whole seconds, and the core counts whole seconds from it: the due
 * time it sees lags the exact one by up to 2 s; then a list (at most LIST_MS_CALM) decides. */
#define LIST_MS_CALM 300
#define DUE_BOUND_MS (1000 + 2000 + LIST_MS_CALM + 250)
/* ... and where a taint is confirmed by the store's revision, the wait for the stream to pass it
 * (a list after it when it does not) */
#define CHEAP_MIN_NODES 60
#define CHEAP_WAIT_MS 2000
#define CLEAR_BOUND_MS (1000 + 1000)   /* the settle's longest wait, then the round */

#include "seed.h"

/* ---- the model cluster ---- */
struct mnode {
	char name[16], uid[16];
	long rv;
	int alive;            /* its kubelet runs */
	int ready;            /* enum node_ready as the API shows it */
	int64_t since;        /* Ready's lastTransitionTime, server seconds */
	int64_t change_at;    /* ms: the kubelet dies or returns */
	int64_t mark_at;      /* ms: the NLC marks it Unknown (0: not due) */
	int64_t status_at;    /* ms: a running kubelet posts its status (every 5 minutes, jittered) */
	int tainted;          /* our taint and annotation */
	int64_t tainted_at;
	int big;              /* its object is over the bound: a list skips it, a stream cannot name it */
	int64_t due_check;    /* ms: the taint must be there by then (0: none) */
	int64_t clear_check;  /* ms: the taint must be gone by then (0: none) */
};

struct mevent {
	long rev;
	int node;
	int unknown;          /* the cluster's Unknown nodes after this change */
};

enum fault { F_LIST_FAIL, F_LIST_SLOW, F_OPEN_FAIL, F_410_AT_OPEN, F_SILENT, F_ERROR_500, F_CUT, F_BROKEN,
	F_COMPACT, F_BIG, FAULTS };
static const char *const fault_name[] = { "list-fail", "list-slow", "open-fail", "410-at-open", "silent",
	"error-500", "cut", "broken", "compact", "big" };

struct sim {
	uint64_t seed;
	int verbose;
	int n;
	struct mnode node[MAX_NODES];
	long rev, compacted;
	int64_t other_at;     /* ms: other objects' writes counted into rev up to then (10 a second) */
	int unknown;          /* the cluster's Unknown nodes now */
	int delivered_unknown; /* ... as of the last change the core was given (a list's or an event's) */
	int any_big;          /* a node is too large to read: the table may keep its last facts */
	struct mevent *hist;
	size_t nhist, cap;
	int64_t now;          /* virtual ms */
	int64_t node_next;    /* ms: the earliest of the nodes' times (a change, a mark, a check) */
	int64_t base;         /* server seconds at 0 */
	int bookmarks;        /* the server sends bookmarks (every minute) */
	int64_t fault_from[FAULTS], fault_to[FAULTS];
	int64_t fault_at[FAULTS];   /* one-shot faults: when (0 none) */
	/* the stream */
	int open;
	size_t pos;           /* the next history entry to deliver */
	int64_t stream_end;   /* ms: its timeoutSeconds */
	int64_t next_bookmark;
	long watch_from;      /* the rv it was opened from */
	int64_t opened_at;
	long stream_events;   /* events and bookmarks it brought */
	int64_t rewatch_by;   /* ms: a healthy stream ended: the next watch comes by then (0: none) */
	int broken_sent;      /* a stream was broken since the last list */
	/* the shell's view */
	struct core core;
	struct policy_storm storm; /* the guard's state, kept by the shell from pass to pass */
	int64_t storm_released_at; /* ms: the guard last stopped holding */
	int64_t over_at;      /* ms: the last view decided on (exactly known) with more Unknown than the limit */
	/* a rolling storm: one more kubelet dies every few seconds until past the limit */
	int64_t roll_next;    /* ms: the next one (0: none) */
	int roll_left;        /* ... how many more */
	int64_t roll_back;    /* ms: they all come back then */
	long last_rv_given;   /* the last resourceVersion handed to the core */
	long fresh_rv;        /* the last store's revision read for it */
	int64_t calm_since;   /* since when the watch is calm: open, caught up, no fault */
	/* request spacing after failures */
	int64_t last_failure;
	int fail_run;
	int expired_since_event; /* a 410 came since the last event */
	int free_next;        /* ... it was the first: the next request may come at once */
	long events_since_failure;
	int64_t last_fresh_failure;
	int fresh_fails;
	long events_since_fresh_failure;
	/* counts */
	long lists, watches, freshes, taints, clears, checks, events;
	int failed;
	char why[300];
};

static void fail(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct sim *s, const char *fmt, ...)
{
	va_list ap;

	if (s->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof s->why, fmt, ap);
	va_end(ap);
	s->failed = 1;
}

static void core_said(void *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void core_said(void *ctx, const char *fmt, ...)
{
	struct sim *s = ctx;
	va_list ap;

	if (!s->verbose)
		return;
	fprintf(stderr, "%9.3f core: ", (double)s->now / 1000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t server_s(const struct sim *s)
{
	return s->base + s->now / 1000;
}

static int faulty(const struct sim *s, enum fault f)
{
	return s->now >= s->fault_from[f] && s->now < s->fault_to[f];
}

static int any_fault(const struct sim *s)
{
	for (int f = 0; f < FAULTS; f++)
		if (faulty(s, f))
			return 1;
	return 0;
}

/* The store's revision counts every object's writes: other objects (Leases, Events) write
 * about ten times a second, so the nodes' stream reaches the store's revision only with a node's
 * next change or a bookmark. */
static void other_writes(struct sim *s)
{
	s->rev += (s->now - s->other_at) / 100;
	s->other_at = s->now - (s->now - s->other_at) % 100;
}

/* A change of node i: a new revision, in the history a stream replays. */
static void changed(struct sim *s, int i)
{
	struct mnode *m = &s->node[i];

	other_writes(s);
	s->unknown = 0;
	for (int j = 0; j < s->n; j++)
		s->unknown += s->node[j].ready == NODE_READY_UNKNOWN;
	m->rv = ++s->rev;
	if (s->nhist == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->hist = realloc(s->hist, s->cap * sizeof *s->hist);
		if (!s->hist) {
			fprintf(stderr, "sim: out of memory\n");
			exit(2);
		}
	}
	s->hist[s->nhist++] = (struct mevent){ s->rev, i, s->unknown };
}

static void facts_of(const struct sim *s, int i, struct node_facts *f)
{
	const struct mnode *m = &s->node[i];

	memset(f, 0, sizeof *f);
	snprintf(f->name, sizeof f->name, "%s", m->name);
	snprintf(f->uid, sizeof f->uid, "%s", m->uid);
	snprintf(f->rv, sizeof f->rv, "%ld", m->rv);
	f->ready = m->ready;
	f->ready_since = m->since;
	f->oos_taint = m->tainted ? 0 : -1;
	f->has_taints = m->tainted;
	f->our_annotation = m->tainted;
	f->tainted_at = m->tainted ? m->tainted_at : 0;
}

/* The model's node of that name ("node-NNN"), or -1. */
static int find(const struct sim *s, const char *name)
{
	char *end;
	long i;

	if (strncmp(name, "node-", 5) != 0)
		return -1;
	i = strtol(name + 5, &end, 10);
	return *end || i < 0 || i >= s->n ? -1 : (int)i;
}

/* A node's time was set: the nodes are looked at again by then. */
static void note_time(struct sim *s, int64_t t)
{
	if (t && t < s->node_next)
		s->node_next = t;
}

/* ---- the cluster's own life ---- */
static void schedule_life(struct sim *s, struct mnode *m)
{
	/* most nodes live long; a fifth flap every few minutes */
	int64_t span = chance(20) ? uniform(60000, 300000) : uniform(300000, 3600000);
	m->change_at = s->now + (m->alive ? span : uniform(20000, 600000));
	note_time(s, m->change_at);
}

static void set_due_checks(struct sim *s, int i)
{
	struct mnode *m = &s->node[i];

	m->due_check = m->ready == NODE_READY_UNKNOWN && !m->tainted
	    ? (m->since + TAINT_AFTER - s->base) * 1000 + DUE_BOUND_MS + (s->n >= CHEAP_MIN_NODES ? CHEAP_WAIT_MS + 1000 : 0) : 0;
	m->clear_check = m->ready == NODE_READY_TRUE && m->tainted ? s->now + CLEAR_BOUND_MS : 0;
	note_time(s, m->due_check);
	note_time(s, m->clear_check);
}

static void cluster_step(struct sim *s)
{
	for (int i = 0; i < s->n; i++) {
		struct mnode *m = &s->node[i];
		if (m->change_at && s->now >= m->change_at) {
			m->alive = !m->alive;
			if (m->alive) {
				m->mark_at = 0;
				if (m->ready != NODE_READY_TRUE) {
					m->ready = NODE_READY_TRUE;
					m->since = server_s(s);
					changed(s, i);
				}
			} else {
				m->mark_at = s->now + NLC_GRACE_MS;
				note_time(s, m->mark_at);
			}
			schedule_life(s, m);
			set_due_checks(s, i);
		}
		if (m->status_at && s->now >= m->status_at) {
			m->status_at = s->now + uniform(270000, 330000);
			if (m->alive && !m->big)
				changed(s, i);
		}
		if (m->mark_at && s->now >= m->mark_at) {
			m->mark_at = 0;
			m->ready = NODE_READY_UNKNOWN;
			m->since = server_s(s);
			changed(s, i);
			set_due_checks(s, i);
		}
	}
}

/* A storm: most of the fleet's kubelets die together, and come back a while later. */
static void storm_at(struct sim *s)
{
	int64_t back = uniform(60000, 400000);

	for (int i = 0; i < s->n; i++) {
		if (!chance(80))
			continue;
		s->node[i].change_at = s->now;   /* dies now (alive assumed; a dead one comes back: fine) */
		cluster_step(s);
		s->node[i].change_at = s->now + back;
		note_time(s, s->node[i].change_at);
	}
}

/*
 * A rolling storm: one more kubelet dies every few seconds until a few more than the guard's
 * limit are gone, and all come back together minutes later. The count of Unknown nodes then
 * passes the limit one node at a time while the first of them cross their threshold: a guard
 * that counts one too few, or looks at one view and not another, taints there.
 */
static void rolling_step(struct sim *s)
{
	if (!s->roll_next || s->now < s->roll_next)
		return;
	for (int tries = 0; tries < 4 * s->n; tries++) {
		int i = (int)uniform(0, s->n - 1);
		struct mnode *m = &s->node[i];
		if (!m->alive || m->mark_at)
			continue;
		m->change_at = s->now;
		cluster_step(s);
		break;
	}
	if (--s->roll_left > 0) {
		s->roll_next = s->now + uniform(2000, 15000);
		return;
	}
	s->roll_next = 0;
	s->roll_back = s->now + uniform(60000, 300000);
	for (int i = 0; i < s->n; i++)
		if (!s->node[i].alive) {
			s->node[i].change_at = s->roll_back;
			note_time(s, s->roll_back);
		}
}

/* ---- writes, as the API server takes them: guarded by the resourceVersion decided on ---- */

/* What a decision's facts were, by the model's own count (never the code's): the nodes and the
 * Unknown ones the server had when they were read, and whether they were proven fresh. */
struct view {
	long nodes, unknown;
	int fresh;            /* a list, or a round the stream had caught up for (confirmed) */
	int exact;            /* the model knows what it held: a list (which skips a node too large to
	                         read), or a round while no node is (the table keeps such a one's last facts) */
};

/* The storm guard's limit as the settings the model runs with say (50 %, at least 1), counted
 * here rather than asked of policy.c: an invariant must not share the code it checks. */
static long model_limit(long nodes)
{
	long n = nodes * 50 / 100;
	return n < 1 ? 1 : n;
}

static int write_node(struct sim *s, const struct node_facts *f, enum policy_action a, const struct view *vw)
{
	int i = find(s, f->name);
	struct mnode *m;

	if (i < 0)
		return 0;
	m = &s->node[i];
	if (strtol(f->rv, NULL, 10) != m->rv)
		return 0;   /* changed since: refused */
	s->checks++;
	if (a == POLICY_TAINT) {
		if (m->ready != NODE_READY_UNKNOWN || server_s(s) - m->since < TAINT_AFTER)
			fail(s, "%s tainted %llds after it went Unknown, threshold %ds by the server's clock", m->name,
			    (long long)(server_s(s) - m->since), TAINT_AFTER);
		if (vw->exact && vw->unknown > model_limit(vw->nodes))
			fail(s, "%s tainted on facts with %ld Unknown nodes, more than the limit %ld", m->name, vw->unknown,
			    model_limit(vw->nodes));
		/* the guard's cooldown (60 s on whole seconds): held until a minute after the last view over the limit */
		if (vw->exact && s->now - s->over_at <= 59000)
			fail(s, "%s tainted %.1f s after a view with more Unknown nodes than the limit (cooldown 60 s)", m->name,
			    (double)(s->now - s->over_at) / 1000);
		if (!vw->fresh)
			fail(s, "%s tainted on a table not proven fresh (a round that was not confirmed)", m->name);
		m->tainted = 1;
		m->tainted_at = server_s(s);
		s->taints++;
	} else if (a == POLICY_CLEAR) {
		m->tainted = 0;
		s->clears++;
	}
	changed(s, i);
	set_due_checks(s, i);
	return 1;
}

/*
 * client-go's reflector spacing: after the k-th failure in a row (a list or a watch refused, a
 * 410 or a broken stream, a stream that ended at once with no event), with no event since and
 * less than two minutes apart, the next request waits at least 0.8 s x 2^(k-1), at most 30 s.
 */
static void failure(struct sim *s, int expired)
{
	/* the first 410 since an event may be listed for at once (an API server restarted with a
	 * new watch cache): not a failure of the run, its list is free */
	if (expired && !s->expired_since_event) {
		s->expired_since_event = 1;
		s->free_next = 1;
		return;
	}
	if (s->events_since_failure || s->now - s->last_failure >= 120000)
		s->fail_run = 0;
	s->fail_run++;
	s->last_failure = s->now;
	s->events_since_failure = 0;
}

static void spacing(struct sim *s, const char *what)
{
	int64_t need;

	if (s->free_next) {
		s->free_next = 0;
		return;
	}
	if (!s->fail_run || s->events_since_failure)
		return;
	need = 800LL << (s->fail_run - 1 < 6 ? s->fail_run - 1 : 6);
	if (need > 30000)
		need = 30000;
	s->checks++;
	if (s->now - s->last_failure < need)
		fail(s, "%s %.2f s after failure %d in a row with no event since (backoff at least %.1f s)", what,
		    (double)(s->now - s->last_failure) / 1000, s->fail_run, (double)need / 1000);
}

/*
 * One decided action as pass.c's act() does it: written on the facts decided on; refused because
 * the node changed, the node is read again and decided anew by the real decide step
 * (decide_again: the same summary and guard, a new taint only over a fresh view), then written
 * as it says. Marks the table's entry: acted, failed (waits for the poll's round), or neither
 * (nothing to do now). Returns 1 when the node now wants a confirmation (pass.c's ACTED_CONFIRM).
 */
static int act(struct sim *s, const struct node_facts *decided, const struct policy_verdict *v, int64_t now_s,
    const struct policy_summary *sum, const struct decide_guard *g, enum decide_view dv, const struct view *vw)
{
	struct policy_settings rules = { TAINT_AFTER, 0, "" };
	struct table *t = core_table(&s->core);
	struct policy_verdict again;
	struct node_facts f = *decided;
	int i;

	if (v->action != POLICY_TAINT && v->action != POLICY_CLEAR)
		return 0;   /* pruning is off in the model: nothing else is written */
	if (write_node(s, &f, v->action, vw)) {
		if (s->verbose)
			fprintf(stderr, "%9.3f %s %s\n", (double)s->now / 1000, v->action == POLICY_TAINT ? "tainted" : "cleared", f.name);
		table_acted(t, f.name, 1);
		return 0;
	}
	if (s->verbose)
		fprintf(stderr, "%9.3f %s %s refused: it changed\n", (double)s->now / 1000, v->action == POLICY_TAINT ? "taint" : "clear",
		    f.name);
	if ((i = find(s, f.name)) < 0 || s->node[i].big)
		return 0;
	facts_of(s, i, &f);
	switch (decide_again(&f, &rules, sum, g, dv, 0 /* no fence modelled */, now_s, &again)) {
	case DECIDE_CONFIRM:
		return 1;
	case DECIDE_ACT:
		if (again.action == POLICY_TAINT || again.action == POLICY_CLEAR)
			table_acted(t, f.name, write_node(s, &f, again.action, vw));
		return 0;
	default:
		return 0;
	}
}

/* The guard's step, as pass.c takes it (the real decide_guard, a cooldown of 60 s on the
 * monotonic clock); when it stops holding is noted for the timely-taint invariant. */
static void guard_step(struct sim *s, const struct policy_summary *sum, const struct view *vw, struct decide_guard *g)
{
	const struct decide_rules r = { { 0, 50 }, 60 };
	int held = policy_storm_holds(&s->storm);

	if (vw->exact && vw->unknown > model_limit(vw->nodes))
		s->over_at = s->now;
	decide_guard(&s->storm, &r, sum, s->now / 1000, g);
	if (held && !g->holds)
		s->storm_released_at = s->now;
}

/* A due time from a verdict kept as the pass keeps it: the soonest ahead. */
static void note_due(int64_t *due, const struct policy_verdict *v)
{
	if (v->due_in >= 0 && (*due < 0 || v->due_in < *due))
		*due = v->due_in;
}

/* ---- the shell's list (pass_run: read whole, then decide and act) ---- */
static void do_list(struct sim *s, enum core_why why)
{
	struct policy_settings rules = { TAINT_AFTER, 0, "" };
	struct policy_summary sum = { 0 };
	struct table *t = core_table(&s->core);
	struct decide_guard g;
	struct view vw = { 0, 0, 1, 1 };
	int64_t at = server_s(s), at_ms = s->now, due = -1;
	long rv;
	int unknown_then;
	char rvs[32];
	static struct node_facts seen[MAX_NODES];

	s->lists++;
	if (s->verbose)
		fprintf(stderr, "%9.3f list (why %d)\n", (double)s->now / 1000, (int)why);
	s->rewatch_by = 0;
	/* a list for a broken stream only after one broke: an object too large to read is skipped */
	if (why == CORE_WHY_BROKEN && !s->broken_sent)
		fail(s, "a list for a broken stream, but no stream broke");
	s->broken_sent = 0;
	spacing(s, "list");
	if (faulty(s, F_LIST_FAIL)) {
		failure(s, 0);
		s->now += uniform(10, 2000);
		core_listed(&s->core, 0, "", -1, 0, -1, s->now);
		return;
	}
	/* the facts as of the list's read; the answer arrives later */
	other_writes(s);
	rv = s->rev;
	unknown_then = s->unknown;
	for (int i = 0; i < s->n; i++) {
		facts_of(s, i, &seen[i]);
		/* what the list holds, by the model's count: a node too large to read is skipped */
		vw.nodes += !s->node[i].big;
		vw.unknown += !s->node[i].big && s->node[i].ready == NODE_READY_UNKNOWN;
	}
	s->now += faulty(s, F_LIST_SLOW) ? uniform(1000, 20000) : uniform(5, LIST_MS_CALM);
	table_begin(t);
	for (int i = 0; i < s->n; i++) {
		char why_not[200];
		if (s->node[i].big) {
			table_remove(t, seen[i].name);
			continue;
		}
		if (table_put(t, &seen[i], why_not, sizeof why_not) < 0)
			fail(s, "table_put: %s", why_not);
		policy_summary_add(&sum, &seen[i]);
	}
	table_end(t);
	guard_step(s, &sum, &vw, &g);
	for (int i = 0; i < s->n; i++) {
		struct policy_verdict v;
		if (s->node[i].big)
			continue;
		int keep = policy_node(&seen[i], &rules, at, &v);
		note_due(&due, &v);
		if (keep && decide_node(&v, &sum, &g, DECIDE_LIST, 0) == DECIDE_ACT)
			act(s, &seen[i], &v, at, &sum, &g, DECIDE_LIST, &vw);
	}
	snprintf(rvs, sizeof rvs, "%ld", rv);
	s->last_rv_given = rv;
	s->delivered_unknown = unknown_then;
	core_listed(&s->core, 1, rvs, at, at_ms, due, s->now);
}

/* ---- the shell's round (pass_table: the table, through the same decide step) ---- */
static void do_round(struct sim *s, const struct core_do *d)
{
	struct policy_settings rules = { TAINT_AFTER, 0, "" };
	struct table *t = core_table(&s->core);
	struct node_facts f;
	struct decide_guard g;
	int64_t due = -1;
	int confirm = 0;
	const struct policy_summary *sum = table_summary(t);
	enum decide_view dv = d->confirmed ? DECIDE_TABLE_FRESH : d->all ? DECIDE_TABLE : DECIDE_TABLE_PART;
	/* what the table stood for: the cluster at the stream's position (the model's count), fresh
	 * only where the round was confirmed */
	struct view vw = { (long)table_size(t), s->delivered_unknown, d->confirmed, !s->any_big };

	guard_step(s, sum, &vw, &g);
	if (s->verbose)
		fprintf(stderr, "%9.3f round%s%s at server time %+lld s (the model's %+lld s), %ld of %ld Unknown\n",
		    (double)s->now / 1000, d->all ? " (all)" : "", d->confirmed ? " (confirmed)" : "",
		    (long long)(d->server_now - s->base), (long long)(server_s(s) - s->base), sum->unknown, sum->nodes);
	/* a confirmed round decides on a table the stream has brought up to the store's revision */
	if (d->confirmed && s->last_rv_given < s->fresh_rv)
		fail(s, "a confirmed round on a table at resourceVersion %ld, behind the store's %ld", s->last_rv_given, s->fresh_rv);
	/* ... and as the cluster was at the stream's position */
	if (d->confirmed && !s->any_big && sum->unknown != s->delivered_unknown)
		fail(s, "a confirmed round counts %ld Unknown nodes, the cluster had %d at the stream's position", sum->unknown,
		    s->delivered_unknown);
	for (size_t i = 0; i < table_size(t); i++) {
		struct policy_verdict v;
		if (!table_in_round(t, i, d->all))
			continue;
		table_facts(t, i, &f);
		table_decided(t, i, d->all);
		int keep = policy_node(&f, &rules, d->server_now, &v);
		note_due(&due, &v);
		if (!keep)
			continue;
		switch (decide_node(&v, sum, &g, dv, 0)) {
		case DECIDE_CONFIRM:
			confirm = 1;
			break;
		case DECIDE_ACT:
			confirm |= act(s, &f, &v, d->server_now, sum, &g, dv, &vw);
			break;
		default:
			break;
		}
	}
	s->now += uniform(0, 20);
	core_rounded(&s->core, d->all, due, confirm, s->now);
}

/* ---- the store's revision (kube_nodes_rv: a consistent list of one node) ---- */
static void do_fresh(struct sim *s)
{
	char rvs[32];

	s->freshes++;
	if (s->verbose)
		fprintf(stderr, "%9.3f store's revision read\n", (double)s->now / 1000);
	/* a failed read backs off as the reflector's requests do, on a count of its own */
	if (s->fresh_fails && !s->events_since_fresh_failure) {
		int64_t need = 800LL << (s->fresh_fails - 1 < 6 ? s->fresh_fails - 1 : 6);
		if (need > 30000)
			need = 30000;
		s->checks++;
		if (s->now - s->last_fresh_failure < need)
			fail(s, "revision read %.2f s after %d failed in a row with no event since (backoff at least %.1f s)",
			    (double)(s->now - s->last_fresh_failure) / 1000, s->fresh_fails, (double)need / 1000);
	}
	s->now += faulty(s, F_LIST_SLOW) ? uniform(500, 5000) : uniform(2, 50);
	if (faulty(s, F_LIST_FAIL)) {
		if (s->events_since_fresh_failure || s->now - s->last_fresh_failure >= 120000)
			s->fresh_fails = 0;
		s->fresh_fails++;
		s->last_fresh_failure = s->now;
		s->events_since_fresh_failure = 0;
		core_fresh(&s->core, 0, "", s->now);
		return;
	}
	other_writes(s);
	s->fresh_rv = s->rev;
	snprintf(rvs, sizeof rvs, "%ld", s->rev);
	core_fresh(&s->core, 1, rvs, s->now);
}

/* ---- the stream ---- */
static void end_stream(struct sim *s, enum core_end end, const char *error)
{
	/* what makes a failure: a stream that brought nothing and ended at once, a 410 with no
	 * event before it, a broken stream */
	int empty = !s->open || (s->stream_events == 0 && s->now - s->opened_at < 1000);
	/* client-go watches again at once after a stream that delivered events or stayed open */
	if (s->open && !empty && (end == CORE_END_CLEAN || end == CORE_END_FAILED))
		s->rewatch_by = s->now + 100;
	if (end == CORE_END_BROKEN)
		s->broken_sent = 1;
	if (end == CORE_END_BROKEN || (end == CORE_END_EXPIRED && (!s->open || s->stream_events == 0)) ||
	    ((end == CORE_END_FAILED || end == CORE_END_CLEAN) && empty))
		failure(s, end == CORE_END_EXPIRED);
	s->open = 0;
	core_ended(&s->core, end, error, -1, s->now);
}

static void do_watch(struct sim *s, const struct core_do *d)
{
	long from = strtol(d->rv, NULL, 10);

	s->watches++;
	spacing(s, "watch");
	if (s->rewatch_by && s->now > s->rewatch_by && !any_fault(s))
		fail(s, "watched again %.2f s after a healthy stream ended (client-go: at once)",
		    (double)(s->now - s->rewatch_by + 100) / 1000);
	s->rewatch_by = 0;
	if (from != s->last_rv_given)
		fail(s, "watch from resourceVersion %s, but the last the core was given is %ld", d->rv, s->last_rv_given);
	s->now += uniform(1, 50);
	if (faulty(s, F_OPEN_FAIL)) {
		end_stream(s, CORE_END_FAILED, "HTTP 503");
		return;
	}
	if (from < s->compacted) {
		end_stream(s, CORE_END_EXPIRED, "HTTP 410, too old");
		return;
	}
	s->open = 1;
	s->opened_at = s->now;
	s->stream_events = 0;
	s->watch_from = from;
	s->stream_end = s->now + d->timeout_s * 1000;
	s->next_bookmark = s->now + 60000;
	for (s->pos = 0; s->pos < s->nhist && s->hist[s->pos].rev <= from; s->pos++)
		;
	core_opened(&s->core, server_s(s), s->now);
	if (faulty(s, F_410_AT_OPEN)) {
		/* an ERROR event at once: code 410 (the shell knows it by its code) */
		core_event(&s->core, &(struct core_event){ CORE_ERROR, "", NULL, NULL }, s->now);
		end_stream(s, CORE_END_EXPIRED, "the server ended the watch: the resourceVersion is gone");
	}
}

/* Delivers what the stream has at now; returns 1 when it is caught up. */
static int deliver(struct sim *s)
{
	char rvs[32], why[] = "event: its object is over 256 KiB";
	struct node_facts f;

	if (!s->open)
		return 0;
	if (s->now >= s->stream_end) {
		end_stream(s, CORE_END_CLEAN, "");
		return 0;
	}
	if (faulty(s, F_SILENT))
		return 0;
	if (faulty(s, F_ERROR_500)) {
		core_event(&s->core, &(struct core_event){ CORE_ERROR, "", NULL, NULL }, s->now);
		end_stream(s, CORE_END_FAILED, "the server ended the watch: InternalError");
		return 0;
	}
	if (s->watch_from < s->compacted && s->pos < s->nhist && s->hist[s->pos].rev <= s->compacted) {
		core_event(&s->core, &(struct core_event){ CORE_ERROR, "", NULL, NULL }, s->now);
		end_stream(s, CORE_END_EXPIRED, "the server ended the watch: Expired");
		return 0;
	}
	while (s->pos < s->nhist && s->open) {
		const struct mevent *e = &s->hist[s->pos++];
		struct mnode *m = &s->node[e->node];
		s->events++;
		s->stream_events++;
		s->events_since_failure++;
		s->events_since_fresh_failure++;
		s->expired_since_event = 0;
		snprintf(rvs, sizeof rvs, "%ld", e->rev);
		if (m->big) {
			s->delivered_unknown = e->unknown;
			memset(&f, 0, sizeof f);
			core_event(&s->core, &(struct core_event){ CORE_MODIFIED, "", &f, why }, s->now);
			continue;
		}
		/* the node as it was at this revision: the model keeps only the latest, so a replay
		 * of an older revision is sent as the latest with its own rv (a later event follows) */
		facts_of(s, e->node, &f);
		snprintf(f.rv, sizeof f.rv, "%ld", e->rev);
		s->last_rv_given = e->rev;
		s->delivered_unknown = e->unknown;
		core_event(&s->core, &(struct core_event){ CORE_MODIFIED, rvs, &f, NULL }, s->now);
	}
	if (s->open && s->bookmarks && s->now >= s->next_bookmark) {
		other_writes(s);
		snprintf(rvs, sizeof rvs, "%ld", s->rev);
		s->last_rv_given = s->rev;
		s->events_since_failure++;
		s->events_since_fresh_failure++;
		s->expired_since_event = 0;
		s->stream_events++;
		core_event(&s->core, &(struct core_event){ CORE_BOOKMARK, rvs, NULL, NULL }, s->now);
		s->next_bookmark = s->now + 60000;
	}
	return s->open;
}

/* The table against the cluster, while the stream is caught up. */
static void check_table(struct sim *s)
{
	struct table *t = core_table(&s->core);
	struct node_facts f;
	size_t want = 0;

	for (int i = 0; i < s->n; i++)
		want += !s->node[i].big;
	s->checks++;
	for (size_t i = 0; i < table_size(t); i++) {
		int j;
		table_facts(t, i, &f);
		j = find(s, f.name);
		if (j < 0) {
			fail(s, "the table holds %s, which the cluster has not", f.name);
			return;
		}
		/* a node too large to read keeps its last readable facts until a list: the stream
		 * cannot name it (writes on them are refused by their resourceVersion) */
		if (s->node[j].big) {
			want++;
			continue;
		}
		if (strtol(f.rv, NULL, 10) != s->node[j].rv || (int)f.ready != s->node[j].ready) {
			fail(s, "the table has %s at rv %s ready %d, the cluster at rv %ld ready %d", f.name, f.rv, f.ready,
			    s->node[j].rv, s->node[j].ready);
			return;
		}
	}
	if (table_size(t) != want)
		fail(s, "the table has %zu nodes, the cluster %zu", table_size(t), want);
}

static void check_deadlines(struct sim *s)
{
	long unknown = 0, limit = model_limit(s->n);

	for (int i = 0; i < s->n; i++)
		unknown += s->node[i].ready == NODE_READY_UNKNOWN;
	for (int i = 0; i < s->n; i++) {
		struct mnode *m = &s->node[i];
		if (m->due_check && s->now >= m->due_check) {
			int64_t due_ms = (m->since + TAINT_AFTER - s->base) * 1000;
			int64_t bound = m->due_check - due_ms;
			/* a guard that held it until lately: the bound counts from when it let go */
			if (!policy_storm_holds(&s->storm) && s->storm_released_at > due_ms - 2000 &&
			    s->now < s->storm_released_at + bound) {
				m->due_check = s->storm_released_at + bound;
				note_time(s, m->due_check);
				continue;
			}
			m->due_check = 0;
			s->checks++;
			/* only where the facts were fresh throughout and nothing held it back */
			/* ... and past the longest backoff after the last failure (30 s, and as much jitter) */
			if (!m->tainted && !m->big && m->ready == NODE_READY_UNKNOWN && s->calm_since <= due_ms - 2000 &&
			    s->last_failure <= due_ms - 62000 && s->last_fresh_failure <= due_ms - 62000 &&
			    !policy_storm_holds(&s->storm) && unknown <= limit)
				fail(s, "%s Unknown past its threshold and not tainted %.1f s after it was due, the watch calm since %.1f s",
				    m->name, (double)(s->now - due_ms) / 1000, (double)s->calm_since / 1000);
		}
		if (m->clear_check && s->now >= m->clear_check) {
			m->clear_check = 0;
			s->checks++;
			if (m->tainted && !m->big && m->ready == NODE_READY_TRUE && s->calm_since <= s->now - CLEAR_BOUND_MS)
				fail(s, "%s Ready with our taint %.1f s after it came back, the watch calm since %.1f s", m->name,
				    (double)CLEAR_BOUND_MS / 1000, (double)s->calm_since / 1000);
		}
	}
}

/* The faults this seed plays: a few windows each, and one-shots. */
static void draw_faults(struct sim *s)
{
	for (int f = 0; f < FAULTS; f++) {
		s->fault_from[f] = s->fault_to[f] = INT64_MAX;
		s->fault_at[f] = 0;
		if (f > F_ERROR_500 || !chance(45))
			continue;
		s->fault_from[f] = uniform(60000, RUN_MS - 120000);
		s->fault_to[f] = s->fault_from[f] + uniform(1000, f == F_SILENT ? 300000 : 90000);
	}
	/* one-shots: a cut, a broken event, a compaction, a node that grows too large */
	s->fault_at[F_CUT] = chance(60) ? uniform(30000, RUN_MS) : 0;
	s->fault_at[F_BROKEN] = chance(40) ? uniform(30000, RUN_MS) : 0;
	s->fault_at[F_COMPACT] = chance(60) ? uniform(30000, RUN_MS) : 0;
	s->fault_at[F_BIG] = chance(20) ? uniform(30000, RUN_MS) : 0;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* The next moment the model has something to do. */
static int64_t model_next(const struct sim *s)
{
	int64_t t = RUN_MS;

	t = min64(t, s->node_next);
	if (s->roll_next)
		t = min64(t, s->roll_next);
	for (int f = 0; f < FAULTS; f++) {
		if (s->fault_from[f] > s->now)
			t = min64(t, s->fault_from[f]);
		if (s->fault_to[f] > s->now)
			t = min64(t, s->fault_to[f]);
		if (s->fault_at[f] > s->now)
			t = min64(t, s->fault_at[f]);
	}
	if (s->open) {
		t = min64(t, s->stream_end);
		if (s->bookmarks)
			t = min64(t, s->next_bookmark);
	}
	return t;
}

static void one_shots(struct sim *s)
{
	if (s->fault_at[F_CUT] && s->now >= s->fault_at[F_CUT]) {
		s->fault_at[F_CUT] = 0;
		if (s->open)
			end_stream(s, CORE_END_FAILED, "reading the watch: the connection was cut");
	}
	if (s->fault_at[F_BROKEN] && s->now >= s->fault_at[F_BROKEN]) {
		s->fault_at[F_BROKEN] = 0;
		if (s->open)
			end_stream(s, CORE_END_BROKEN, "reading the watch: a broken event");
	}
	if (s->fault_at[F_COMPACT] && s->now >= s->fault_at[F_COMPACT]) {
		s->fault_at[F_COMPACT] = 0;
		s->compacted = s->rev;
	}
	if (s->fault_at[F_BIG] && s->now >= s->fault_at[F_BIG]) {
		int i = (int)uniform(0, s->n - 1);
		s->fault_at[F_BIG] = 0;
		s->node[i].big = 1;
		s->any_big = 1;
		s->node[i].due_check = s->node[i].clear_check = 0;
		changed(s, i);
	}
}

static int run_seed(uint64_t seed, int nodes, int verbose)
{
	static struct sim s;
	/* from 60 nodes on a taint is confirmed by the store's revision (20 to 200 nodes: both ways) */
	const struct core_timing tm = { POLL_MS, RELIST_MS, 120000, 800, 30000, 120000, 200, 1000, 1000, 300, 600,
		CHEAP_MIN_NODES, CHEAP_WAIT_MS };
	int64_t storm = 0, table_checked = 0;

	free(s.hist);
	memset(&s, 0, sizeof s);
	s.seed = seed;
	s.verbose = verbose;
	rs = seed;
	s.n = nodes ? nodes : (int)uniform(20, MAX_NODES);
	s.base = 1800000000 + uniform(0, 1000000);
	s.bookmarks = chance(70);
	s.rev = 1000;
	for (int i = 0; i < s.n; i++) {
		struct mnode *m = &s.node[i];
		snprintf(m->name, sizeof m->name, "node-%03d", i);
		snprintf(m->uid, sizeof m->uid, "uid-%03d", i);
		m->alive = 1;
		m->ready = NODE_READY_TRUE;
		m->since = s.base - 3600;
		m->status_at = uniform(1, 300000);
		schedule_life(&s, m);
		changed(&s, i);
	}
	s.calm_since = INT64_MAX;
	s.over_at = INT64_MIN / 2;
	s.node_next = 0;
	draw_faults(&s);
	storm = chance(30) ? uniform(120000, RUN_MS - 600000) : 0;
	for (int f = 0; verbose && f < FAULTS; f++)
		if (s.fault_from[f] != INT64_MAX || s.fault_at[f])
			fprintf(stderr, "fault %s: %.1f-%.1f s, at %.1f s\n", fault_name[f], (double)s.fault_from[f] / 1000,
			    (double)s.fault_to[f] / 1000, (double)s.fault_at[f] / 1000);
	if (verbose && storm)
		fprintf(stderr, "storm at %.1f s\n", (double)storm / 1000);
	core_init(&s.core, &tm, rnd(), core_said, &s);
	core_lead(&s.core, 1, 0);
	if (chance(30)) {
		s.roll_next = uniform(120000, RUN_MS - 900000);
		s.roll_left = (int)(model_limit(s.n) + uniform(1, 3));
		if (verbose)
			fprintf(stderr, "rolling storm from %.1f s: %d kubelets\n", (double)s.roll_next / 1000, s.roll_left);
	}
	while (s.now < RUN_MS && !s.failed) {
		struct core_do d;
		int64_t until;

		if (s.now >= s.node_next) {
			s.node_next = INT64_MAX;
			cluster_step(&s);
			check_deadlines(&s);
			for (int i = 0; i < s.n; i++) {
				note_time(&s, s.node[i].change_at);
				note_time(&s, s.node[i].mark_at);
				note_time(&s, s.node[i].status_at);
				note_time(&s, s.node[i].due_check);
				note_time(&s, s.node[i].clear_check);
			}
		}
		/* the shell drops a stream the core gave up (a periodic list, a confirmation) */
		if (s.open && core_phase(&s.core) != CORE_STREAM)
			s.open = 0;
		one_shots(&s);
		if (storm && s.now >= storm) {
			storm = 0;
			storm_at(&s);
		}
		rolling_step(&s);
		if (deliver(&s) && !any_fault(&s) && core_phase(&s.core) == CORE_STREAM) {
			if (s.calm_since == INT64_MAX)
				s.calm_since = s.now;
		} else {
			s.calm_since = INT64_MAX;
		}
		/* once every 5 virtual seconds at most: it reads the whole table */
		if (s.calm_since != INT64_MAX && s.pos == s.nhist && s.open && s.now >= table_checked + 5000) {
			check_table(&s);
			table_checked = s.now;
		}
		core_next(&s.core, s.now, &d);
		if (s.open && d.kind != CORE_DO_READ && d.kind != CORE_DO_ROUND && d.kind != CORE_DO_FRESH)
			s.open = 0;   /* the shell drops a stream the core gave up */
		switch (d.kind) {
		case CORE_DO_LIST:
			s.calm_since = INT64_MAX;
			do_list(&s, d.why);
			continue;
		case CORE_DO_WATCH:
			do_watch(&s, &d);
			continue;
		case CORE_DO_ROUND:
			do_round(&s, &d);
			continue;
		case CORE_DO_FRESH:
			do_fresh(&s);
			continue;
		case CORE_DO_READ:
		case CORE_DO_WAIT:
			until = min64(d.until, model_next(&s));
			if (until <= s.now)
				until = s.now + 1;
			s.now = until;
			continue;
		}
	}
	if (verbose || s.failed)
		fprintf(stderr, "seed %llu: %d nodes, %lld s: %ld lists, %ld watches, %ld revision reads, %ld events, %ld taints, %ld clears, %ld checks%s%s\n",
		    (unsigned long long)seed, s.n, (long long)(s.now / 1000), s.lists, s.watches, s.freshes, s.events, s.taints, s.clears,
		    s.checks, s.failed ? "; FAILED: " : "", s.failed ? s.why : "");
	if (s.failed)
		fprintf(stderr, "replay: ./build.sh sim %llu 1 (or build/sim/sim -v %llu)\n", (unsigned long long)seed,
		    (unsigned long long)seed);
	core_free(&s.core);
	return s.failed;
}

int main(int argc, char **argv)
{
	int verbose = 0, nodes = 0, failed = 0;
	uint64_t seed, count = 1, ran = 0;

	for (; argc > 1 && argv[1][0] == '-'; argc--, argv++) {
		if (strcmp(argv[1], "-v") == 0)
			verbose = 1;
		else if (strcmp(argv[1], "-n") == 0 && argc > 2)
			nodes = atoi(argv[2]), argc--, argv++;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: sim [-v] [-n NODES] SEED [COUNT]\n");
		return 2;
	}
	seed = strtoull(argv[1], NULL, 10);
	if (argc > 2)
		count = strtoull(argv[2], NULL, 10);
	for (uint64_t i = 0; i < count; i++) {
		ran++;
		if (run_seed(seed + i, nodes, verbose)) {
			failed++;
			if (failed >= 3)
				break;
		}
	}
	printf("sim: %llu passed, %d failed\n", (unsigned long long)(ran - (uint64_t)failed), failed);
	return failed ? 1 : 0;
}
