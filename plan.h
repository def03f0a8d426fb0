/*
 * `noderecover plan`: what a pass would do to every node now, as a table or JSON on stdout.
 * Collects the rows pass_plan decides (the pass's own code decides; nothing here does) and
 * prints them. Allocates (plan runs once); never sends anything, never decides.
 */
#ifndef PLAN_H
#define PLAN_H

#include <stdint.h>
#include <stdio.h>
#include "pass.h"
#include "settings.h"

#define PLAN_WHY_MAX 160   /* an unreadable node's reason, as shown */

struct plan_row {
	struct node_facts f;
	struct policy_verdict v;
	int has_v;                     /* 0: unreadable, why says why */
	int next_pass;                 /* see struct pass_row */
	const char *fence;             /* plan_fence's word for its agent; NULL: not asked */
	char why[PLAN_WHY_MAX];
};

/* The rows collected so far. Zero it before use; plan_free releases it. */
struct plan {
	struct plan_row *rows;
	size_t n, cap;
	int nomem;                     /* a row could not be kept: the plan is incomplete */
};

/* A pass_row_fn: keeps a copy of the row in the struct plan ctx (f NULL: forgets the rows). */
void plan_row(void *ctx, const struct pass_row *row);

/*
 * The FENCE column, when s's fence is on: every fence Lease of its namespace listed once over k,
 * and each row given its agent's word: "no agent", "armed", "requested", "fencing", "unreadable",
 * or "?" for all when the list could not be read (said on the log). A watcher's count ("safe in
 * 40s") is its own: plan has not watched the Leases change.
 */
#define PLAN_FENCE_BODY_MAX (4 * 1024 * 1024)   /* the fence Leases' list, read whole */
void plan_fence(struct plan *pl, struct kube *k, const struct settings *s);

/*
 * Prints the rows sorted by name, then the summary: a table, or one JSON document
 * {"nodes": [...], "summary": {...}} when s->output is OUTPUT_JSON. Names and reasons are made
 * printable first (other bytes become '?'). Returns 0, or -1 when a row was lost (out of
 * memory) or the output could not be written.
 */
int plan_print(FILE *out, struct plan *pl, const struct pass_plan_result *r, const struct settings *s);

void plan_free(struct plan *pl);

/* Seconds as a person reads them: 45s, 2m10s, 1h3m, 3d4h (two units at most). Returns out. */
const char *plan_duration(int64_t secs, char *out, size_t n);

#endif
