/*
 * One pass: list every node (or take the table's), ask the decide step (decide.c: the storm
 * guard, each node's verdict, the fence wait) what to do, carry it out, and say each decision
 * and outcome once. Owns the pass's bookkeeping (the nodes kept for action, the list's summary)
 * and the words of every log line, Event and metric about a node or the storm guard; decides
 * nothing itself. Nothing is done until the whole list is read. Never sleeps between passes;
 * the loop (noderecover.c) decides when a pass runs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "decide.h"
#include "metrics.h"
#include "pass.h"
#include "say.h"
#include "text.h"

/* What a pass knows is forgotten: a list starts (again), or a round over the table does. */
static void begin(struct pass_loop *l, struct pass *p)
{
	const struct settings *s = l->s;

	memset(&p->sum, 0, sizeof p->sum);
	memset(p->ready, 0, sizeof p->ready);
	p->ntainted = 0;
	p->tainted_total = 0;
	p->nkept = p->overflow = p->unreadable = 0;
	p->seen = 0;
	p->due = -1;
	p->fence_due = INT64_MAX;
	p->fence_forbidden_said = 0;
	p->loop = l;
	p->keys = (struct node_keys){ s->prune_label, s->annotation, s->exclude_label };
	p->rules = (struct policy_settings){ s->taint_after, s->prune_after, s->self_node };
}

/*
 * The list (re)starts: "now" is the API server's, from its Date header. lastTransitionTime
 * is written by the control plane's clock, so a host clock running ahead would otherwise
 * taint early (ten minutes fast with a five-minute threshold: at once).
 */
static void on_page(void *ctx, const struct kube_page *pg)
{
	struct pass *p = ctx;

	if (!pg->first)
		return;
	if (p->loop->table)
		table_begin(p->loop->table);
	if (p->row)
		p->row(p->row_ctx, &(struct pass_row){ 0 });
	begin(p->loop, p);
	p->local = time(NULL);
	p->date = pg->date;
	p->now = pg->date >= 0 ? pg->date : p->local;
	p->mono0 = clock_ms();
}

/* The server's time now: its Date at the list's start, advanced by the monotonic clock. */
static int64_t pass_now(const struct pass *p)
{
	return p->now + (clock_ms() - p->mono0) / 1000;
}

/* The nodes-by-Ready gauge a node counts under. */
static enum metrics_ready ready_metric(enum node_ready r)
{
	return r == NODE_READY_TRUE ? METRICS_READY_TRUE : r == NODE_READY_FALSE ? METRICS_READY_FALSE
	    : r == NODE_READY_UNKNOWN ? METRICS_READY_UNKNOWN : METRICS_READY_NONE;
}

static int on_node(void *ctx, const struct node_facts *f, const char *why)
{
	struct pass *p = ctx;
	struct pass_kept *k = p->nkept < PASS_KEEP_MAX ? &p->kept[p->nkept] : &p->spill;
	char name[NODE_NAME_MAX + 1], full[300];

	p->seen++;
	if (p->loop->table && p->row == NULL) {
		/* what cannot be read, or kept, is not in the table: nothing is decided on old facts */
		if (why)
			table_remove(p->loop->table, f->name);
		else if (table_put(p->loop->table, f, full, sizeof full) < 0)
			why = full;
	}
	if (why) {
		say("Could not read node %s (item %ld of the list): %s; it is not acted on this pass",
		    f->name[0] ? say_printable(f->name, name, sizeof name) : "without a name", p->seen, why);
		p->unreadable++;
		if (p->row)
			p->row(p->row_ctx, &(struct pass_row){ f, NULL, why, 0 });
		return 0;
	}
	if (!p->row && p->loop->s->fence != FENCE_OFF)
		fencewait_listed(&p->loop->fence, f);
	k->f = *f;
	k->fenced = 0;
	policy_summary_add(&p->sum, &k->f);
	p->ready[ready_metric(f->ready)]++;
	if (f->oos_taint >= 0 && f->our_annotation) {
		p->tainted_total++;
		metrics_tainted_add(p->tainted, &p->ntainted, f->name, f->tainted_at);
	}
	if (!policy_node(&k->f, &p->rules, p->now, &k->v)) {
		if (k->v.due_in >= 0 && (p->due < 0 || k->v.due_in < p->due))
			p->due = k->v.due_in;
		if (p->row)
			p->row(p->row_ctx, &(struct pass_row){ &k->f, &k->v, NULL, 0 });
		return 0;
	}
	if (!kube_name_ok(k->f.name)) {
		say("Not acting on node '%s': not a valid node name", say_printable(k->f.name, name, sizeof name));
		p->unreadable++;
		if (p->row)
			p->row(p->row_ctx, &(struct pass_row){ &k->f, NULL, "not a valid node name", 0 });
		return 0;
	}
	if (k == &p->spill && p->row)
		p->row(p->row_ctx, &(struct pass_row){ &k->f, &k->v, NULL, 1 });
	if (k == &p->spill)
		p->overflow++;
	else
		p->nkept++;
	return 0;
}

/*
 * What a pass tells the world about a node or the guard. Every such line goes through
 * report(): one place where Events and metrics attach to the words of the log.
 */
enum pass_event {
	PASS_TAINTED, PASS_CLEARED, PASS_DELETED, PASS_WOULD,
	PASS_REFUSED, PASS_EXCLUDED,
	PASS_STORM_ENGAGED, PASS_STORM_COOLING, PASS_STORM_LIFTED,
	PASS_ACTION_FAILED, PASS_FENCE_REQUESTED, PASS_FENCE_TAINTED, PASS_FENCE_HELD
};

/* The Event each line is posted as, after it is said; EVENTS_REASONS: none. */
static const enum events_reason event_of[] = {
	[PASS_TAINTED] = EVENTS_TAINTED, [PASS_CLEARED] = EVENTS_CLEARED, [PASS_DELETED] = EVENTS_DELETED,
	[PASS_WOULD] = EVENTS_REASONS,   /* a dry run writes nothing, Events included */
	[PASS_REFUSED] = EVENTS_DELETE_REFUSED, [PASS_EXCLUDED] = EVENTS_EXCLUDED,
	[PASS_STORM_ENGAGED] = EVENTS_STORM_ENGAGED, [PASS_STORM_COOLING] = EVENTS_REASONS,
	[PASS_STORM_LIFTED] = EVENTS_STORM_LIFTED,
	[PASS_ACTION_FAILED] = EVENTS_REASONS, /* retried next pass; the log says why */
	[PASS_FENCE_REQUESTED] = EVENTS_FENCE_REQUESTED, [PASS_FENCE_TAINTED] = EVENTS_FENCED_TAINTED,
	[PASS_FENCE_HELD] = EVENTS_REASONS,    /* a node waiting on its fence: the log and the metrics say so */
};

/* How the log's JSON form tells each line apart: its level, and the reason when no Event has one. */
static const struct { const char *level, *reason; } log_of[] = {
	[PASS_TAINTED] = { "info", NULL }, [PASS_CLEARED] = { "info", NULL }, [PASS_DELETED] = { "info", NULL },
	[PASS_WOULD] = { "info", "DryRun" }, [PASS_REFUSED] = { "warning", NULL }, [PASS_EXCLUDED] = { "warning", NULL },
	[PASS_STORM_ENGAGED] = { "warning", NULL }, [PASS_STORM_COOLING] = { "warning", "StormGuardCooling" },
	[PASS_STORM_LIFTED] = { "info", NULL }, [PASS_ACTION_FAILED] = { "error", "ActionFailed" },
	[PASS_FENCE_REQUESTED] = { "warning", NULL }, [PASS_FENCE_TAINTED] = { "info", NULL },
	[PASS_FENCE_HELD] = { "warning", "FenceWait" },
};

/* Counts what became of a decided action, under its kind. */
static void count(enum policy_action a, enum metrics_result r)
{
	if (a == POLICY_TAINT || a == POLICY_CLEAR || a == POLICY_DELETE)
		metrics_action(a == POLICY_TAINT ? METRICS_TAINT : a == POLICY_CLEAR ? METRICS_CLEAR : METRICS_DELETE, r);
}

/* Whether this replica may write now: no election, or it still holds the Lease (may renew first). */
static int may_write(struct pass_loop *l)
{
	return !l->election || election_may_write(l->election, clock_ms());
}

/* Says one line; f: the node it is about, or NULL (the storm guard). */
__attribute__((format(printf, 4, 5)))
static void report(struct pass_loop *l, enum pass_event e, const struct node_facts *f, const char *fmt, ...)
{
	char line[SAY_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	say_about(log_of[e].level, f ? f->name : NULL, events_action_name(event_of[e]),
	    log_of[e].reason ? log_of[e].reason : events_reason_name(event_of[e]), "%s", line);
	/* an Event is a write: with leader election, only while the Lease is still ours */
	if (l->events && event_of[e] != EVENTS_REASONS && may_write(l)) {
		if (f)
			events_node(l->events, f, event_of[e], line);
		else
			events_cluster(l->events, event_of[e], line);
	}
}

/*
 * Says a line that would otherwise come back every pass (an opted-out node held back, a
 * refused delete) once while the same words stand: each pass notes what it would say (a
 * 64-bit hash of the line in l->telling), and decide() keeps that as l->told. A line said
 * again with other words (a quorum's count changed) is new.
 */
__attribute__((format(printf, 4, 5)))
static void report_once(struct pass_loop *l, enum pass_event e, const struct node_facts *f, const char *fmt, ...)
{
	char line[SAY_LINE_MAX];
	va_list ap;
	uint64_t h;
	int told = 0;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	h = text_hash(line);
	for (int i = 0; i < l->ntold && !told; i++)
		told = l->told[i] == h;
	if (l->ntelling < PASS_KEEP_MAX)
		l->telling[l->ntelling++] = h;
	if (!told)
		report(l, e, f, "%s", line);
}

/* Says why a delete was refused (once while it stands). */
static void say_refusal(struct pass_loop *l, const struct pass_kept *k, const struct policy_summary *sum)
{
	switch (k->v.refusal) {
	case POLICY_REFUSED_CONTROL_PLANE:
		report_once(l, PASS_REFUSED, &k->f, "Not deleting %s: it is a control-plane node (label %s), never pruned; the pass fails (logged once while it stands)",
		    k->f.name, NODE_LABEL_CONTROL_PLANE);
		break;
	case POLICY_REFUSED_ETCD:
		report_once(l, PASS_REFUSED, &k->f, "Not deleting %s: it is an etcd member (label %s), never pruned; the pass fails (logged once while it stands)",
		    k->f.name, NODE_LABEL_ETCD);
		break;
	case POLICY_REFUSED_QUORUM:
		report_once(l, PASS_REFUSED, &k->f, "Not deleting %s: only %ld Ready etcd members would remain, fewer than the %d a cluster needs to tolerate losing one (logged once while it stands)",
		    k->f.name, sum->etcd_ready, POLICY_ETCD_FLOOR);
		break;
	case POLICY_ALLOWED:
		break;
	}
}

/* One line when the local clock and the server's part by more than CLOCK_SKEW_MAX seconds,
 * one more each time that changes by as much; one when the server sends no Date. */
#define CLOCK_SKEW_MAX 5
static void say_clock(struct pass_loop *l, const struct pass *p)
{
	int64_t skew = p->local - p->date, change = skew - l->skew;

	if (p->date < 0) {
		if (!l->no_date_said)
			say("The API server's answer has no Date header noderecover can read; it goes by the local clock, which taints early if it runs ahead of the control plane's (logged once)");
		l->no_date_said = 1;
		return;
	}
	if (change >= -CLOCK_SKEW_MAX && change <= CLOCK_SKEW_MAX)
		return;
	l->skew = skew;
	if (skew >= -CLOCK_SKEW_MAX && skew <= CLOCK_SKEW_MAX)
		say("The local clock agrees with the API server's again (within %ds)", CLOCK_SKEW_MAX);
	else
		say("The local clock is %llds %s the API server's; noderecover goes by the server's clock",
		    (long long)(skew < 0 ? -skew : skew), skew < 0 ? "behind" : "ahead of");
}

const char *pass_limit_text(const struct settings *s, char *out, size_t n)
{
	if (s->max_unknown)
		snprintf(out, n, "%ld", s->max_unknown);
	else
		snprintf(out, n, "%d%%", s->max_unknown_percent);
	return out;
}

/* One line for each change of the storm guard, none while it stays as it was. */
static void say_storm(struct pass_loop *l, enum policy_storm_change c, const struct policy_summary *sum, long limit)
{
	const struct settings *s = l->s;
	char lim[32];

	pass_limit_text(s, lim, sizeof lim);
	switch (c) {
	case POLICY_STORM_ENGAGES:
		report(l, PASS_STORM_ENGAGED, NULL, "Storm guard engaged: %ld of %ld nodes are Unknown, more than the limit of %ld (--max-unknown %s); no new taint and no delete until at most %ld are and %llds have passed, clears go on",
		    sum->unknown, sum->nodes, limit, lim, limit, (long long)s->storm_cooldown);
		break;
	case POLICY_STORM_COOLS:
		report(l, PASS_STORM_COOLING, NULL, "Storm guard cooling down: %ld of %ld nodes are Unknown, within the limit of %ld; new taints and deletes stay held for %llds",
		    sum->unknown, sum->nodes, limit, (long long)s->storm_cooldown);
		break;
	case POLICY_STORM_LIFTS:
		report(l, PASS_STORM_LIFTED, NULL, "Storm guard lifted: %ld of %ld nodes are Unknown, within the limit of %ld; taints and deletes resume",
		    sum->unknown, sum->nodes, limit);
		break;
	case POLICY_STORM_SAME:
		break;
	}
}

/* The line for a decided action that a dry run does not carry out. */
static void say_would(struct pass_loop *l, const struct pass_kept *k)
{
	const char *how = l->s->dry_run == DRY_RUN_SERVER ? "dry run: the server accepted it, nothing stored"
	    : "dry run: nothing sent";

	if (k->v.action == POLICY_TAINT)
		report(l, PASS_WOULD, &k->f, "Would taint %s %s=%s:%s: not reporting for %llds (%s)", k->f.name, NODE_TAINT_KEY,
		    NODE_TAINT_VALUE, NODE_TAINT_EFFECT, (long long)k->v.unknown_for, how);
	else if (k->v.action == POLICY_CLEAR)
		report(l, PASS_WOULD, &k->f, "Would clear %s: Ready again; out-of-service taint and annotation removed (%s)", k->f.name, how);
	else if (k->v.action == POLICY_DELETE)
		report(l, PASS_WOULD, &k->f, "Would delete %s: not reporting for %llds (%s)", k->f.name, (long long)k->v.unknown_for, how);
}

/* How one action went, for the pass. */
enum acted {
	ACTED_FAILED = -1,  /* it failed the pass (said) */
	ACTED_DONE = 0,     /* done, or nothing to do (said) */
	ACTED_CHANGED,      /* the node changed since it was read: read it again, decide again */
	ACTED_NOT_LEADER,   /* this replica may not write now: the rest is another's */
	ACTED_UNNEEDED,     /* read again after it changed, it needs nothing now (not said: decide counts) */
	ACTED_CONFIRM       /* read again over the table, it wants a new taint or delete: that is
	                       decided on a list (pass_table), never on this re-read and the table's counts */
};
/* The "changed since it was listed; nothing to do now" lines one pass writes; the rest are one
 * line with their number. Not a fault: after a leader change, or as many nodes return at once,
 * another writer got there first, and a line per node would be a flood. */
#define UNNEEDED_SAID_MAX 3

static enum acted not_leader(const struct pass_kept *k)
{
	say("Not %s %s: this replica no longer holds the lease; it acts again once it leads",
	    k->v.action == POLICY_TAINT ? "tainting" : k->v.action == POLICY_CLEAR ? "clearing" : "deleting", k->f.name);
	return ACTED_NOT_LEADER;
}

/* Does one decided action. */
static enum acted act_once(struct pass_loop *l, const struct pass_kept *k, int64_t now)
{
	const struct settings *s = l->s;
	const char *verb = k->v.action == POLICY_TAINT ? "Tainting" : k->v.action == POLICY_CLEAR ? "Clearing" : "Deleting";
	enum kube_result r;

	if (s->dry_run == DRY_RUN_CLIENT) {
		count(k->v.action, METRICS_DRY_RUN);
		say_would(l, k);
		return ACTED_DONE;
	}
	if (!may_write(l))
		return not_leader(k);
	switch (k->v.action) {
	case POLICY_TAINT:
		r = kube_taint(l->kc, &k->f, s->annotation, (time_t)now);
		break;
	case POLICY_CLEAR:
		r = kube_clear(l->kc, &k->f, s->annotation);
		break;
	case POLICY_DELETE:
		r = kube_delete(l->kc, &k->f);
		break;
	default:
		return ACTED_DONE;
	}
	switch (r) {
	case KUBE_OK:
		count(k->v.action, s->dry_run == DRY_RUN_SERVER ? METRICS_DRY_RUN : METRICS_OK);
		if (s->dry_run == DRY_RUN_SERVER)
			say_would(l, k);
		else if (k->v.action == POLICY_TAINT)
			report(l, k->fenced ? PASS_FENCE_TAINTED : PASS_TAINTED, &k->f, "Tainted %s %s=%s:%s: not reporting for %llds%s",
			    k->f.name, NODE_TAINT_KEY, NODE_TAINT_VALUE, NODE_TAINT_EFFECT, (long long)k->v.unknown_for,
			    k->fenced ? "; its fence agent has surely fenced" : "");
		else if (k->v.action == POLICY_CLEAR)
			report(l, PASS_CLEARED, &k->f, "Cleared %s: Ready again; out-of-service taint and annotation removed", k->f.name);
		else
			report(l, PASS_DELETED, &k->f, "Deleted %s: not reporting for %llds", k->f.name, (long long)k->v.unknown_for);
		return ACTED_DONE;
	case KUBE_CHANGED:
		return ACTED_CHANGED;
	case KUBE_GATED:
		/* the Lease was lost between the check above and the wire (kube_gate) */
		return not_leader(k);
	case KUBE_GONE:
		count(k->v.action, METRICS_GONE);
		say("%s already gone", k->f.name);
		return ACTED_DONE;
	case KUBE_FAILED:
		break;
	}
	count(k->v.action, METRICS_FAILED);
	/* a stop is not a failure to report, only a pass cut short */
	if (*l->stop)
		say("%s %s cut short by a signal", verb, k->f.name);
	else
		report(l, PASS_ACTION_FAILED, &k->f, "%s %s failed: %s; next pass", verb, k->f.name, kube_error(l->kc));
	return ACTED_FAILED;
}

/*
 * Does one decided action. When the node changed since it was listed (a failed test op or
 * delete precondition), reads it again, decides again with the pass's summary and the guard's
 * verdict, and tries again with its new resourceVersion, a few times, as client-go's conflict
 * retry does: a node another client changes often must not starve. Never ACTED_CHANGED;
 * ACTED_UNNEEDED when, read again, it needs nothing.
 */
static enum acted act(struct pass_loop *l, const struct pass *p, struct pass_kept *k, const struct decide_guard *g,
    enum decide_view view)
{
	enum policy_action first = k->v.action;
	enum acted r = act_once(l, k, pass_now(p));

	for (int tries = 0; r == ACTED_CHANGED; tries++) {
		if (*l->stop)
			return ACTED_DONE;
		if (tries == KUBE_CONFLICT_RETRIES) {
			count(k->v.action, METRICS_CHANGED);
			say("%s kept changing while it was acted on (%d tries); next pass", k->f.name, tries + 1);
			return ACTED_DONE;
		}
		switch (kube_get_node(l->kc, k->f.name, &p->keys, &k->f)) {
		case KUBE_OK:
			break;
		case KUBE_GONE:
			count(k->v.action, METRICS_GONE);
			say("%s already gone", k->f.name);
			return ACTED_DONE;
		default:
			count(k->v.action, METRICS_FAILED);
			say("%s changed since it was listed, and reading it again failed: %s; next pass", k->f.name, kube_error(l->kc));
			return ACTED_FAILED;
		}
		switch (decide_again(&k->f, &p->rules, &p->sum, g, view, l->s->fence != FENCE_OFF, pass_now(p), &k->v)) {
		case DECIDE_ACT:
			break;
		case DECIDE_CONFIRM:
			count(first, METRICS_CHANGED);
			return ACTED_CONFIRM;
		default:
			count(first, METRICS_CHANGED);
			return ACTED_UNNEEDED;
		}
		r = act_once(l, k, pass_now(p));
	}
	return r;
}

/* What a node the rules would taint now waits for (docs/fence.md, "The watcher's rule"). */
enum fenced {
	FENCED_TAINT,     /* tainted now: its agent has surely fenced (k->fenced), or it has none under prefer */
	FENCED_LAGS,      /* ... it would be, but the view may lag: a list first (not waiting on the fence) */
	FENCED_WAIT,      /* not now */
	FENCED_CONFIRM    /* a request to write, which a table that may lag must not decide: a list first */
};

/* Reads node k's fence Lease into its record w, saying what stands in the way. */
static void fence_read(struct pass_loop *l, struct pass *p, const struct pass_kept *k, struct fencewait *w,
    const struct fencewait_rules *r)
{
	const char *ns = l->s->fence_namespace;
	struct json_fence f;
	char why[200] = "";
	int64_t sent = clock_ms();
	enum fencewait_got got = lease_fence(l->kc, ns, k->f.name, NULL, NULL, l->fence_answer, sizeof l->fence_answer,
	    &f, why, sizeof why);

	if (got == FENCEWAIT_GOT_LEASE && f.safe <= 0)
		snprintf(why, sizeof why, "%s is missing or not a whole number of seconds", JSON_FENCE_SAFE);
	if (got == FENCEWAIT_GOT_FORBIDDEN && !p->fence_forbidden_said) {
		p->fence_forbidden_said = 1;
		say("%s; such a node %s (logged once a pass)", kube_error(l->kc),
		    r->require ? "is never tainted (--fence=require)" : "counts as without a fence agent");
	} else if (got == FENCEWAIT_GOT_UNREADABLE || why[0]) {
		report_once(l, PASS_FENCE_HELD, &k->f, "Not tainting %s yet: its fence Lease cannot be read (%s) (logged once while it stands)",
		    k->f.name, why);
	} else if (got == FENCEWAIT_GOT_FAILED && !*l->stop) {
		say("%s; its count starts again", kube_error(l->kc));
	}
	fencewait_read(w, got, &f, r, sent, clock_ms());
}

/* Writes the fence request on node k's Lease. -1: not now (a dry run, or no longer the leader). */
static int fence_request(struct pass_loop *l, const struct pass_kept *k, struct fencewait *w,
    const struct fencewait_rules *r)
{
	const char *ns = l->s->fence_namespace;
	char when[LEASE_TIME_LEN + 1], why[200], state[64];
	struct json_fence f;
	enum fencewait_got got;
	int64_t sent;

	if (l->s->dry_run != DRY_RUN_NONE) {
		report_once(l, PASS_WOULD, &k->f, "Would request the fence of %s, then taint it once safe (dry run)", k->f.name);
		return -1;
	}
	if (!may_write(l))
		return -1;
	lease_microtime(when, time(NULL), 0);
	sent = clock_ms();
	got = lease_fence(l->kc, ns, k->f.name, w->rv, when, l->fence_answer, sizeof l->fence_answer, &f, why, sizeof why);
	fencewait_wrote(w, got, &f, r, sent, clock_ms());
	if (got != FENCEWAIT_GOT_LEASE) {
		say("%s; read again", got == FENCEWAIT_GOT_UNREADABLE ? why : kube_error(l->kc));
		return 0;
	}
	metrics_fence_requested();
	report(l, PASS_FENCE_REQUESTED, &k->f, "Requested the fence of %s on Lease %s/" LEASE_FENCE_PREFIX "%s; tainted once safe: %s",
	    k->f.name, ns, k->f.name, fencewait_state(w, r, clock_ms(), state, sizeof state));
	return 0;
}

/*
 * Asks node k's fence wait (decide_fence), reading and writing its agent's Lease as it says, a
 * few steps at most, over view.
 */
static enum fenced fence(struct pass_loop *l, struct pass *p, struct pass_kept *k, enum decide_view view)
{
	const struct settings *s = l->s;
	const struct fencewait_rules rules = { s->fence == FENCE_REQUIRE, s->fence_min_safe * 1000 };
	struct fencewait *w = fencewait_find(&l->fence, k->f.name);
	struct decide_fence_do d;

	if (!w && !(w = fencewait_add(&l->fence, k->f.name))) {
		report_once(l, PASS_FENCE_HELD, &k->f, "Not tainting %s yet: %d nodes wait on a fence already (logged once while it stands)",
		    k->f.name, FENCEWAIT_MAX);
		return FENCED_WAIT;
	}
	for (int step = 0; step < 4 && !*l->stop; step++) {
		decide_fence(w, &rules, &p->sum, view, clock_ms(), &d);
		switch (d.kind) {
		case DECIDE_FENCE_READ:
			fence_read(l, p, k, w, &rules);
			break;
		case DECIDE_FENCE_ASK:
			return FENCED_CONFIRM;
		case DECIDE_FENCE_REQUEST:
			if (fence_request(l, k, w, &rules) < 0)
				return FENCED_WAIT;
			break;
		case DECIDE_FENCE_TAINT:
			k->fenced = d.fenced;
			return FENCED_TAINT;
		case DECIDE_FENCE_CONFIRM:
			return FENCED_LAGS;
		case DECIDE_FENCE_NEVER:
			report_once(l, PASS_FENCE_HELD, &k->f, "Not tainting %s: no fence agent, and --fence=require (logged once while it stands)",
			    k->f.name);
			return FENCED_WAIT;
		case DECIDE_FENCE_WAIT:
			if (d.storm)
				report_once(l, PASS_FENCE_HELD, NULL, "No fence requested, none waited on tainted: %ld of %ld nodes Unknown, over half (logged once while it stands)",
				    p->sum.unknown, p->sum.nodes);
			if (d.until < p->fence_due)
				p->fence_due = d.until;
			return FENCED_WAIT;
		}
	}
	return FENCED_WAIT;
}

/* Nodes Ready again: a request on their agent's Lease comes off, whether or not they were
 * tainted, then their record goes; a removal that fails is tried again next pass. */
static void fence_back(struct pass_loop *l)
{
	const char *ns = l->s->fence_namespace;
	struct json_fence f;
	char why[200];

	for (int i = fencewait_count(&l->fence) - 1; i >= 0 && !*l->stop; i--) {
		struct fencewait *w = fencewait_at(&l->fence, i);
		enum fencewait_got got = FENCEWAIT_GOT_NONE;
		if (!fencewait_back(w))
			continue;
		if (l->s->dry_run == DRY_RUN_NONE) {
			if (!may_write(l))
				return;   /* another replica's, or ours once we lead again */
			got = lease_fence(l->kc, ns, w->node, NULL, NULL, l->fence_answer, sizeof l->fence_answer, &f, why, sizeof why);
			if (got == FENCEWAIT_GOT_LEASE && f.request &&
			    (got = lease_fence(l->kc, ns, w->node, f.rv, NULL, l->fence_answer, sizeof l->fence_answer, &f, why,
			    sizeof why)) == FENCEWAIT_GOT_LEASE)
				say("Removed the fence request of %s: Ready again", w->node);
		}
		if (got == FENCEWAIT_GOT_FAILED)
			say("%s; next pass", kube_error(l->kc));
		else
			fencewait_forget(&l->fence, w);
	}
}

/* An opted-out node that would be tainted or deleted: said once while it stays so. */
static void say_excluded(struct pass_loop *l, const struct pass_kept *k)
{
	report_once(l, PASS_EXCLUDED, &k->f, "Not %s %s: it carries %s=true, so it is left as it is (logged once while it stays so)",
	    k->v.excluded == POLICY_DELETE ? "deleting" : "tainting", k->f.name, l->s->exclude_label);
}

/* Reads the whole list into p, or says why not. Nothing is done until the whole list is
 * read: quorum needs every page, and a list that broke halfway is no ground to act on. */
static int list(struct pass_loop *l, struct pass *p)
{
	const struct settings *s = l->s;

	begin(l, p);
	p->rv[0] = '\0';
	if (kube_list_nodes(l->kc, s->page_size, &p->keys, on_page, on_node, p, p->rv) == KUBE_OK) {
		if (l->table && !p->row)
			table_end(l->table);
		if (!p->row)
			fencewait_sweep(&l->fence);
		return 0;
	}
	/* a stop is not a failure to report, only a pass cut short */
	if (*l->stop)
		say("Listing nodes cut short by a signal; no node acted on this pass");
	else
		say("Listing nodes failed: %s; no node acted on this pass", kube_error(l->kc));
	return -1;
}

/* The guard's settings, as the decide step takes them. */
static struct decide_rules guard_rules(const struct settings *s)
{
	return (struct decide_rules){ { s->max_unknown, s->max_unknown_percent }, s->storm_cooldown };
}

/*
 * After the nodes are read (a whole list, or the table's): the guard's step, then each kept
 * node's verdict as the decide step says, carried out; over a view that may lag, a new taint
 * or delete is left for a list (res->confirm, pass_table says why). Returns 0, or -1 when the
 * pass failed or held an action back.
 */
static int decide(struct pass_loop *l, struct pass *p, struct pass_result *res, enum decide_view view)
{
	const struct settings *s = l->s;
	const struct decide_rules rules = guard_rules(s);
	struct decide_guard g;
	int held = 0, unneeded = 0, waiting = 0;

	res->failed = p->unreadable > 0;
	metrics_nodes(p->ready, p->sum.etcd_ready);
	metrics_tainted(p->tainted, p->ntainted, p->tainted_total);
	decide_guard(&l->storm, &rules, &p->sum, clock_ms() / 1000, &g);
	say_storm(l, g.change, &p->sum, g.limit);
	metrics_storm(g.holds);
	for (int i = 0; i < p->nkept && !*l->stop; i++) {
		struct pass_kept *k = &p->kept[i];
		enum decide_kind d = decide_node(&k->v, &p->sum, &g, view, s->fence != FENCE_OFF);
		held += k->v.held != POLICY_NONE;
		count(k->v.held, METRICS_HELD);
		count(k->v.excluded, METRICS_EXCLUDED);
		if (k->v.excluded != POLICY_NONE)
			say_excluded(l, k);
		if (k->v.refusal != POLICY_ALLOWED) {
			count(POLICY_DELETE, METRICS_REFUSED);
			say_refusal(l, k, &p->sum);
			res->failed = 1;
		}
		if (d == DECIDE_FENCE) {
			enum fenced fz = fence(l, p, k, view);
			waiting += fz == FENCED_WAIT || fz == FENCED_CONFIRM;
			res->confirm |= fz == FENCED_CONFIRM;
			if (fz == FENCED_WAIT || fz == FENCED_CONFIRM)
				continue;
			d = fz == FENCED_TAINT ? DECIDE_ACT : DECIDE_CONFIRM;
		}
		if (d == DECIDE_CONFIRM) {
			res->confirm = 1;
			continue;
		}
		if (d == DECIDE_NOTHING)
			continue;   /* held, excluded or refused: said and counted above, nothing to write */
		enum acted a = act(l, p, k, &g, view);
		if (a == ACTED_UNNEEDED && ++unneeded <= UNNEEDED_SAID_MAX)
			say("%s changed since it was listed; nothing to do now", k->f.name);
		res->confirm |= a == ACTED_CONFIRM;
		res->failed |= a != ACTED_DONE && a != ACTED_UNNEEDED && a != ACTED_CONFIRM;
		/* what was written shows in the node's next event: until then its entry is old; what
		 * failed is tried again at the poll's round (table_in_round) */
		if ((a == ACTED_DONE || a == ACTED_FAILED) && l->table && k->v.action != POLICY_NONE)
			table_acted(l->table, k->f.name, a == ACTED_DONE);
		if (a == ACTED_NOT_LEADER)
			break;   /* not the leader any more: the rest is another replica's */
	}
	if (s->fence != FENCE_OFF && !*l->stop) {
		fence_back(l);
		metrics_fence_waiting(waiting);
	}
	if (unneeded > UNNEEDED_SAID_MAX)
		say("%d more nodes changed since they were listed; nothing to do now for them either", unneeded - UNNEEDED_SAID_MAX);
	/* a round over part of the table keeps what it did not see said */
	if ((view != DECIDE_TABLE_PART && view != DECIDE_TABLE_FRESH) || l->ntold + l->ntelling > PASS_KEEP_MAX)
		l->ntold = 0;
	for (int i = 0; i < l->ntelling; i++) {
		int known = 0;
		for (int j = 0; j < l->ntold && !known; j++)
			known = l->told[j] == l->telling[i];
		if (!known)
			l->told[l->ntold++] = l->telling[i];
	}
	l->ntelling = 0;
	if (p->overflow) {
		say("%d more nodes need action than the %d one pass handles; they are next pass", p->overflow, PASS_KEEP_MAX);
		res->failed = 1;
	}
	res->held = held > 0 && !res->failed;
	res->failed |= held > 0;
	if (p->due >= 0)
		res->due_in = p->due > pass_now(p) - p->now ? p->due - (pass_now(p) - p->now) : 0;
	if (p->fence_due != INT64_MAX) {
		int64_t in = p->fence_due > clock_ms() ? (p->fence_due - clock_ms() + 999) / 1000 : 0;
		if (res->due_in < 0 || in < res->due_in)
			res->due_in = in;
	}
	return res->failed ? -1 : 0;
}

/* A pass ended at rc: counted for /metrics (start: monotonic ms). */
static int counted(const struct pass_result *res, int64_t start, int rc)
{
	metrics_pass_done(!res->failed ? METRICS_PASS_OK : res->held ? METRICS_PASS_HELD : METRICS_PASS_FAILED,
	    clock_ms() - start, time(NULL));
	return rc;
}

int pass_run(struct pass_loop *l, struct pass_result *res)
{
	struct pass *p = &l->pass;
	int64_t start = clock_ms();

	memset(res, 0, sizeof *res);
	res->due_in = -1;
	res->date = -1;
	p->row = NULL;
	if (list(l, p) < 0) {
		res->failed = 1;
		metrics_list_result(0);
		return counted(res, start, -1);
	}
	metrics_list_result(1);
	res->listed = 1;
	memcpy(res->rv, p->rv, sizeof res->rv);
	res->date = p->now;
	res->date_at = p->mono0;
	say_clock(l, p);
	return counted(res, start, decide(l, p, res, DECIDE_LIST));
}

int pass_table(struct pass_loop *l, int all, int confirmed, int64_t now, struct pass_result *res)
{
	static const enum node_ready readies[] = { NODE_READY_NONE, NODE_READY_TRUE, NODE_READY_FALSE, NODE_READY_UNKNOWN };
	struct pass *p = &l->pass;
	struct table *t = l->table;
	struct node_facts f;
	int64_t start = clock_ms();

	memset(res, 0, sizeof *res);
	res->due_in = -1;
	res->date = -1;
	begin(l, p);
	p->now = now;
	p->mono0 = clock_ms();
	for (size_t i = 0; i < table_size(t); i++) {
		if (!table_in_round(t, i, all))
			continue;
		table_facts(t, i, &f);
		on_node(p, &f, NULL);
		table_decided(t, i, all);
	}
	/* the guard, quorum and the metrics count the whole table, not the nodes this round looked at */
	p->sum = *table_summary(t);
	p->ntainted = 0;
	p->tainted_total = 0;
	for (size_t i = 0; i < table_size(t); i++) {
		if (!table_tainted(t, i))
			continue;
		table_facts(t, i, &f);
		if (f.our_annotation) {
			p->tainted_total++;
			metrics_tainted_add(p->tainted, &p->ntainted, f.name, f.tainted_at);
		}
	}
	for (int r = 0; r < 4; r++)
		p->ready[ready_metric(readies[r])] = table_count(t, readies[r]);
	return counted(res, start, decide(l, p, res, confirmed ? DECIDE_TABLE_FRESH : all ? DECIDE_TABLE : DECIDE_TABLE_PART));
}

int pass_plan(struct pass_loop *l, pass_row_fn row, void *ctx, struct pass_plan_result *r)
{
	struct pass *p = &l->pass;   /* plan runs no pass of its own: the one memory serves */
	const struct decide_rules rules = guard_rules(l->s);
	struct policy_storm fresh = { POLICY_STORM_OFF, 0 };
	struct decide_guard g;

	memset(r, 0, sizeof *r);
	p->row = row;
	p->row_ctx = ctx;
	if (list(l, p) < 0)
		return -1;
	say_clock(l, p);
	r->sum = p->sum;
	decide_guard(&fresh, &rules, &p->sum, 0, &g);
	r->limit = g.limit;
	r->storm = g.holds;
	r->now = p->now;
	r->server_clock = p->date >= 0;
	r->unreadable = p->unreadable;
	for (int i = 0; i < p->nkept; i++) {
		decide_node(&p->kept[i].v, &p->sum, &g, DECIDE_LIST, l->s->fence != FENCE_OFF);
		row(ctx, &(struct pass_row){ &p->kept[i].f, &p->kept[i].v, NULL, 0 });
	}
	return 0;
}
