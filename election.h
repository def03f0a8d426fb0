/*
 * Leader election as the loop and a pass see it: one replica's election over lease.c (which
 * decides and writes), on a thread of its own with its own connection to the API server, so
 * that no list page, watch head or stream the loop waits on ever delays a renewal (client-go's
 * leader election runs its own loop the same way). The thread tries every LEASE_RETRY and says
 * each change; the loop asks once per iteration (election_step), and a pass before each write
 * (election_may_write): both read what the thread last did, by the caller's now, and never wait
 * for a request.
 */
#ifndef ELECTION_H
#define ELECTION_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include "json.h"
#include "kube.h"
#include "lease.h"

/* One replica's election. Its owner (main's struct process) allocates it once. Its fields are
 * election.c's alone: the thread's (lease, said, holder, failing) and, under lock, what the
 * loop reads (leader, renewed_ms, quit). */
struct election {
	struct kube kc;                     /* the election's own connection: the thread's */
	struct lease lease;
	const char *ns, *name;              /* the settings' */
	char id[JSON_LEASE_ID_MAX + 1];     /* this replica's identity */
	int said;                           /* the log last said: 1 leading, 0 not, -1 nothing yet */
	char holder[JSON_LEASE_ID_MAX + 1]; /* the holder it last named */
	int failing;                        /* a failure was said; the next success ends it */
	int leading;                        /* the loop's: the answer of its last step */
	int started;                        /* the thread runs */
	pthread_t thread;
	pthread_mutex_t lock;
	int leader;                         /* under lock: the last try left us the holder */
	int64_t renewed_ms;                 /* under lock: monotonic ms the last renewal was sent */
	int quit;                           /* under lock: the thread ends */
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

/* Starts the thread: a try at once, then one every LEASE_RETRY. 0, or -1 with one line in err. */
int election_start(struct election *e, char *err, size_t errlen);

/* What one step of the loop found: whether this replica may list and act now, and whether
 * that differs from the step before. */
struct election_state {
	int leading;
	int changed;
};

/*
 * Whether the Lease is held at now (monotonic ms) by what the thread last did: our last
 * renewal was sent less than LEASE_RENEW_DEADLINE before now. Says when that stops being so.
 */
struct election_state election_step(struct election *e, int64_t now);

/*
 * Whether this replica may write at now: as election_step's answer, without saying anything.
 * A replica that was paused (SIGSTOP, a frozen VM) finds its last renewal too old here,
 * before it writes on facts another replica may already have acted on.
 */
int election_may_write(struct election *e, int64_t now);

/*
 * Ends the thread (a try in flight is cut short by the stop flag given to election_init, or
 * ends within kube.c's deadlines), then gives the Lease up on the way out, so another replica
 * need not wait for it to lapse, and says so; then closes the election's connection. The
 * caller decides about the stop flag (it is not touched here).
 */
void election_release(struct election *e);

#endif
