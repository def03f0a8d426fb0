/*
 * Following the nodes with a watch, as `run` does by default: the shell around the follower's
 * decisions (core.h). It does what core_next says (a list: a pass that decides and acts; a
 * watch from a resourceVersion; reading the stream; a round over the table) and tells the core
 * how each went. Owns the watch's connection; the decisions and their timing are core.c's, the
 * per-node rules and the writes pass.c's, the wire kube.c's. Never touches the Lease (the loop
 * says whether this replica leads) and never sleeps outside a read.
 */
#ifndef FOLLOW_H
#define FOLLOW_H

#include <signal.h>
#include <stdint.h>
#include "core.h"
#include "kube.h"
#include "pass.h"

#define FOLLOW_SILENCE_MS (120 * 1000)   /* no event nor bookmark this long: the stream is dropped and resumed */
#define FOLLOW_READY_SILENCE_MS (180 * 1000) /* ... and /readyz fails after this long */
#define FOLLOW_BACKOFF_MIN_MS 800       /* client-go's reflector backoff: 0.8 s doubling to 30 s, */
#define FOLLOW_BACKOFF_MAX_MS 30000     /* with jitter, back to the start after 2 minutes healthy */
#define FOLLOW_HEALTHY_MS (120 * 1000)  /* (or a stream that delivered events) */
#define FOLLOW_SHORT_MS 1000            /* a stream ended sooner with no event: backed off, not resumed at once */
#define FOLLOW_SETTLE_MS 200            /* events are decided on once the stream paused this long, */
#define FOLLOW_SETTLE_MAX_MS 1000       /* or after at most this: a burst is counted whole */
#define FOLLOW_TIMEOUT_MIN 300          /* timeoutSeconds asked of each watch: uniform in 300..600 */
#define FOLLOW_TIMEOUT_MAX 600
/* From this many nodes on, a new taint is confirmed by the store's resourceVersion and the
 * stream passing it rather than by a list (core.h): about 5 MB of list, where Node status
 * updates (every node at least each 5 minutes) bring the stream past it in a second or so. */
#define FOLLOW_CHEAP_MIN_NODES 500
#define FOLLOW_CHEAP_WAIT_MS 2000       /* ... and a list decides when the stream has not passed it by then */

/* The follower: the core and the watch's connection. Its owner (main's struct process) allocates
 * it once. Its fields are follow.c's alone. */
struct follow {
	struct kube kc;             /* the watch's own connection */
	struct kube_watch w;
	struct core core;
	struct pass_loop *loop;
	struct node_keys keys;
	int open;                   /* a stream is being read on kc */
};

/*
 * Prepares the follower for the loop l (its settings, kube, events, election) over its own
 * connection to t (stop: as kube_init's; observe: kube.h's). Returns 0, or -1 with one line in err.
 */
int follow_init(struct follow *f, struct pass_loop *l, const struct kube_target *t, volatile sig_atomic_t *stop,
    kube_observe_fn observe, char *err, size_t errlen);

/*
 * Does what is due while this replica leads (leading) and reads the stream until until
 * (monotonic ms) at most. Returns when until passes, or earlier with the monotonic ms it has
 * nothing to do before (the caller waits for it, or for until if sooner). Not leading: the
 * stream is dropped and the table forgotten, so leading again starts with a list.
 */
int64_t follow_step(struct follow *f, int leading, int64_t until);

/* The loop ends: the stream is dropped. */
void follow_stop(struct follow *f);

#endif
