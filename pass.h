/*
 * One pass: read every node (kube.c), decide (decide.c, with policy.c's rules), act (kube.c),
 * and say each decision and outcome once (say.c). Owns what one pass learns and the little that passes carry to
 * the next on purpose. Never sleeps between passes, never parses settings, never exits.
 */
#ifndef PASS_H
#define PASS_H

#include <signal.h>
#include <stdint.h>
#include "election.h"
#include "events.h"
#include "fencewait.h"
#include "kube.h"
#include "lease.h"
#include "metrics.h"
#include "policy.h"
#include "settings.h"
#include "table.h"

#define PASS_KEEP_MAX 1024   /* nodes acted on in one pass; the rest wait for the next */

/*
 * One node as `noderecover plan` shows it: its facts and what a pass would do to it.
 * f == NULL: the list starts (again, after a 410 Expired): forget the rows had so far.
 */
struct pass_row {
	const struct node_facts *f;
	const struct policy_verdict *v;  /* after policy_resolve; NULL when unreadable */
	const char *unreadable;          /* why nothing may be done to it, else NULL */
	int next_pass;                   /* it needs action, but more than PASS_KEEP_MAX nodes do:
	                                    a pass leaves it for the next (v is not resolved) */
};
typedef void (*pass_row_fn)(void *ctx, const struct pass_row *row);

struct pass_loop;

/* A node kept for action after the whole list is read. */
struct pass_kept {
	struct node_facts f;
	struct policy_verdict v;
	int fenced;         /* its taint waited for its agent's fence (the taint's Event says so) */
};

/* What one pass has learnt so far: run's passes (over a list or the table) and plan's list,
 * never two at once. About 500 KB (PASS_KEEP_MAX nodes' facts). Its fields are pass.c's alone. */
struct pass {
	struct node_keys keys;
	struct policy_settings rules;
	int64_t now;        /* when the list began, by the API server's clock (else the local one) */
	int64_t local;      /* ... by the local clock */
	int64_t date;       /* the first page's Date; -1: it had none we could read */
	int64_t mono0;      /* ... by the monotonic clock, milliseconds */
	int64_t due;        /* seconds from now until the first threshold ahead; -1: none */
	char rv[NODE_RV_MAX + 1]; /* the list's resourceVersion */
	struct policy_summary sum;
	long ready[METRICS_READIES];   /* nodes by Ready state, for the metrics */
	struct metrics_tainted tainted[METRICS_TAINTED_MAX];   /* ours, tainted longest, for the metrics */
	int ntainted;
	long tainted_total;
	int nkept, overflow, unreadable;
	long seen;
	int64_t fence_due;  /* monotonic ms: a node waiting on its fence wants a look then; INT64_MAX: none */
	int fence_forbidden_said; /* a fence Lease we may not read was said this pass */
	struct pass_loop *loop; /* the loop this pass runs in */
	pass_row_fn row;    /* plan's: every node decided (NULL in a pass) */
	void *row_ctx;
	struct pass_kept kept[PASS_KEEP_MAX];
	struct pass_kept spill;  /* a node past PASS_KEEP_MAX: decided, counted, not kept */
};

/*
 * What the loop hands every pass, and what one pass leaves for the next on purpose: the
 * storm guard, the clock skew last logged, the nodes waiting on their fence (fencewait.h), and
 * which lines said once while they stand (an opted-out node held back, a refused delete) were
 * already said (by a 64-bit hash of the line: fixed memory, and a collision costs at most one
 * line not written). A restart forgets it all. Zero it, then set kc, s and stop. Large (its pass): its owner allocates it once.
 */
struct pass_loop {
	struct kube *kc;
	const struct settings *s;
	volatile sig_atomic_t *stop;      /* set by a signal: finish no more actions */
	struct events *events;            /* where the Events of report()'s lines go; NULL: none */
	/* With leader election (NULL: none): asked right before every write (election_may_write:
	 * a no ends the pass's actions); its own thread renews the Lease (election.h). */
	struct election *election;
	/* With a watch (NULL: none): the table every list feeds (a node that cannot be read or
	 * kept leaves it) and pass_table decides from; what a pass wrote marks its entry acted. */
	struct table *table;
	struct policy_storm storm;
	int64_t skew;                     /* local minus server clock, seconds, as last logged */
	int no_date_said;                 /* the server's missing Date was logged */
	uint64_t told[PASS_KEEP_MAX], telling[PASS_KEEP_MAX];
	int ntold, ntelling;
	struct fencewait_table fence;     /* the nodes waiting on (or back from) their agent's fence */
	char fence_answer[LEASE_ANSWER_MAX]; /* a fence Lease being read */
	struct pass pass;                 /* the pass's memory */
};

/* How a pass went, for the loop. */
struct pass_result {
	int failed;      /* the list failed, a node was unreadable, an action failed or was held */
	int held;        /* nothing else failed, but the storm guard held an action back */
	int listed;      /* the whole list was read */
	int64_t due_in;  /* seconds from the end of the pass until the first Unknown node known
	                    to the pass crosses a threshold that makes it act, by the API
	                    server's clock; -1: none */
	int confirm;     /* pass_table: a node wants a new taint or delete, which is decided on
	                    fresh facts only, never on a table that may lag: see pass_table */
	char rv[NODE_RV_MAX + 1]; /* pass_run: the list's resourceVersion ("" none), for a watch */
	int64_t date;    /* pass_run: when the list began, by the server's clock (its Date), or by the
	                    local one when it sent none (said once in the log); -1: not listed */
	int64_t date_at; /* pass_run: ... by the monotonic clock, ms (when its first page came) */
};

/* Runs one pass. Returns 0 when all went well, -1 when it failed or held an action back. */
int pass_run(struct pass_loop *l, struct pass_result *r);

/*
 * A pass over l->table instead of a list, at now (Unix seconds by the API server's clock):
 * all nodes (all nonzero: the poll's round), or those that changed since they were last
 * decided and every Unknown one (an event's round, a threshold's wake-up), never one whose
 * entry waits for the event of what was written to it. The storm guard and quorum count the
 * whole table. Unless confirmed, it clears, holds back, reads the fence Leases of the nodes
 * waiting on one and removes the request of those Ready again, but it never taints, deletes or
 * requests a fence: the table can lag the cluster without knowing (a stream held or cut, then
 * resumed), and a guard counting a lagging table lets through what a storm should hold. A node
 * that wants a new taint, delete or fence request sets r->confirm instead: the caller proves the facts fresh (a list, or the
 * stream caught up with the store's revision: core.h) and asks again. confirmed: the table is
 * proven as fresh as a list, and the round acts as a list's pass does. Returns as pass_run
 * (r->listed 0).
 */
int pass_table(struct pass_loop *l, int all, int confirmed, int64_t now, struct pass_result *r);


/* What the whole list said, for plan's summary. */
struct pass_plan_result {
	struct policy_summary sum;
	long limit;         /* the storm guard's limit for this list; -1: off */
	int storm;          /* a fresh guard engages on this list */
	int64_t now;        /* the list's start by the API server's clock (the local one without a Date) */
	int server_clock;   /* now came from the server's Date */
	int unreadable;     /* nodes that could not be read or named */
};

/*
 * What a pass would do now, decided by the pass's own code with nothing sent but the list:
 * the same list and callbacks, policy_node, policy_resolve with the verdict of a fresh storm
 * guard (a running watcher's cooldown is not known here), the server's clock. row() gets every
 * node: those needing nothing as the list streams (so the caller, not the pass, holds them;
 * the loop's path stays allocation-free), those kept for action after the whole list is read.
 * Nothing is said but failures. Returns 0 when the whole list was read, -1 when not (logged).
 */
int pass_plan(struct pass_loop *l, pass_row_fn row, void *ctx, struct pass_plan_result *r);

/* The storm guard's limit as a person set it ("50%" or "7"), for log lines. */
const char *pass_limit_text(const struct settings *s, char *out, size_t n);

#endif
