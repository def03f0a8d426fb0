/*
 * Following the nodes with a watch, as `run` does by default: a list into the table (a pass
 * that also decides and acts), then a watch from the list's resourceVersion whose events keep
 * the table current; a round of decisions over the table when events settle, when a node
 * crosses a threshold, and every poll; a watch that ends is resumed from the last
 * resourceVersion seen, and a new list replaces the table when the watch cannot be trusted to
 * have missed nothing (410, a broken stream), when a round wants a new taint or delete (those
 * are decided on a list, never on the table: pass.h), and every --relist as a safety net.
 * Owns the watch's connection, the table and the watch's timing (backoff, silence, relist);
 * never touches the Lease (the loop asks the election) and never sleeps outside a read.
 */
#ifndef FOLLOW_H
#define FOLLOW_H

#include <signal.h>
#include <stdint.h>
#include "kube.h"
#include "metrics.h"
#include "pass.h"
#include "table.h"

#define FOLLOW_SILENCE_MS (120 * 1000)   /* no event nor bookmark this long: the stream is dropped and resumed */
#define FOLLOW_READY_SILENCE_MS (180 * 1000) /* ... and /readyz fails after this long */
#define FOLLOW_BACKOFF_MIN_MS 800       /* client-go's reflector backoff: 0.8 s doubling to 30 s, */
#define FOLLOW_BACKOFF_MAX_MS 30000     /* with jitter, back to the start after 2 minutes healthy */
#define FOLLOW_HEALTHY_MS (120 * 1000)
#define FOLLOW_SETTLE_MS 200            /* events are decided on once the stream paused this long, */
#define FOLLOW_SETTLE_MAX_MS 1000       /* or after at most this: a burst is counted whole */
#define FOLLOW_TIMEOUT_MIN 300          /* timeoutSeconds asked of each watch: uniform in 300..600 */
#define FOLLOW_TIMEOUT_MAX 600

/* The follower. Large (a connection and a Node's buffer): keep it static. Its fields are follow.c's alone. */
struct follow {
	struct kube kc;             /* the watch's own connection */
	struct kube_watch w;
	struct table table;
	struct pass_loop *loop;
	volatile sig_atomic_t *stop;  /* set by a signal: what fails then is not said */
	struct node_keys keys;
	char rv[NODE_RV_MAX + 1];   /* the last resourceVersion seen: the list's, an event's or a bookmark's */
	int listed;                 /* the table holds a whole list and every event since */
	enum metrics_relist relist_why;
	int open;                   /* a stream is being read */
	int64_t retry_at;           /* monotonic ms: no request before (backoff, Retry-After) */
	int64_t backoff_ms;         /* the next backoff's base */
	int64_t opened_at;          /* monotonic ms the stream opened */
	int64_t healthy_since;      /* monotonic ms since when nothing failed */
	long events;                /* events on this stream */
	int64_t heard;              /* monotonic ms of the last event or bookmark */
	int64_t relist_at;          /* monotonic ms of the next relist */
	int64_t date, mono0;        /* the API server's Date and when it came (ms) */
	int64_t settle_at, settle_max; /* monotonic ms: decide on events then (0: none waiting) */
	int64_t round_at;           /* monotonic ms of the next round over every node (the poll) */
	int64_t due_at;             /* monotonic ms a node crosses a threshold (0: none ahead) */
	int failing;                /* a failure was said; said again only when it changes */
	int said;                   /* the stream from this list's resourceVersion was said */
	uint64_t rng;
};

/*
 * Prepares the follower for the loop l (its settings, kube, events, election) over its own
 * connection to t (stop: as kube_init's; observe: kube.h's). Returns 0, or -1 with one line in err.
 */
int follow_init(struct follow *f, struct pass_loop *l, const struct kube_target *t, volatile sig_atomic_t *stop,
    kube_observe_fn observe, char *err, size_t errlen);

/*
 * Does what is due now and reads the stream until until (monotonic ms) at most: a list, a
 * watch to start, events, rounds of decisions. Returns when until passes, or earlier with the
 * monotonic ms it has nothing to do before (the caller waits for it, or for until if sooner).
 */
int64_t follow_step(struct follow *f, int64_t until);

/* This replica stopped leading (or stops): the stream is dropped and the table forgotten, so
 * the next step starts with a list. */
void follow_stop(struct follow *f);

#endif
