/*
 * Leader election as the loop and a pass see it: one replica's election over lease.c (which
 * decides and writes), with its own connection to the API server, its timing and its log
 * lines. The loop asks once per iteration (election_step), so the leader gauge and the pass
 * decision always agree; a pass asks before each write (election_may_write) and at the head
 * of each page of a long list (election_keep), so a list longer than the Lease does not let
 * leadership move.
 *
 * I/O: election_step, election_keep and election_may_write may each send one round of
 * tryAcquireOrRenew (a PUT on the Lease, and a GET, with a POST when it does not exist yet)
 * on the election's own connection, each request within kube.c's deadlines; never on the
 * connection a list or a watch is reading, so neither ever blocks a renewal.
 */
#ifndef ELECTION_H
#define ELECTION_H

#include <signal.h>
#include <stdint.h>
#include "json.h"
#include "kube.h"
#include "lease.h"

/* One replica's election. Large (its own connection): keep it static. Its fields are election.c's alone. */
struct election {
	struct kube kc;                     /* the election's own connection */
	struct lease lease;
	const char *ns, *name;              /* the settings' */
	char id[JSON_LEASE_ID_MAX + 1];     /* this replica's identity */
	int said;                           /* the log last said: 1 leading, 0 not, -1 nothing yet */
	char holder[JSON_LEASE_ID_MAX + 1]; /* the holder it last named */
	int failing;                        /* a failure was said; the next success ends it */
	int64_t last_try;                   /* monotonic ms of the last try */
	int leading;                        /* the answer of the last step */
};

/*
 * Sets up the election on Lease ns/name (ns_source: where ns came from, for the start line)
 * over its own connection to t (which must outlive e; stop: as kube_init's; observe: kube.h's
 * request observer, NULL for none). The identity is base (the pod's name, or the host's) and
 * a random suffix. Says the start line. Returns 0, or -1 with one line in err.
 */
int election_init(struct election *e, const struct kube_target *t, volatile sig_atomic_t *stop,
    kube_observe_fn observe, const char *ns, const char *name, const char *ns_source, const char *base,
    char *err, size_t errlen);

/* What one step of the loop found: whether this replica may list and act now, and whether
 * that differs from the step before. */
struct election_state {
	int leading;
	int changed;
};

/*
 * One step at now (monotonic ms): a try when LEASE_RETRY has passed since the last, then
 * whether the Lease is held within the renew deadline by our clock. Says each change once
 * (leading, following whom, failing, stopped leading).
 */
struct election_state election_step(struct election *e, int64_t now);

/* When (monotonic ms) the next step has a try to make. */
int64_t election_next(const struct election *e);

/* Tries when a try is due (as election_step, without the answer): between a long list's pages. */
void election_keep(struct election *e, int64_t now);

/*
 * Whether this replica may write now: a try first when the last one is LEASE_RETRY old, then
 * whether the Lease is held within the renew deadline by this replica's own clock. A replica
 * that was paused (SIGSTOP, a frozen VM) finds out here, before it writes on facts another
 * replica may already have acted on.
 */
int election_may_write(struct election *e, int64_t now);

/*
 * Gives the Lease up on the way out, so another replica need not wait for it to lapse, and
 * says so; then closes the election's connection. Its requests are cut short by the stop flag
 * given to election_init, which the caller decides about (it is not touched here).
 */
void election_release(struct election *e);

#endif
