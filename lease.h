/*
 * Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it:
 * GET the Lease (404: create it), then take it over or renew it with a PUT carrying the
 * resourceVersion read, so that of two replicas writing at once one gets 409 and loses.
 * Another holder's timestamps are never compared with our clock: a Lease is free once its
 * record has not changed for its duration as measured by our monotonic clock.
 */
#ifndef LEASE_H
#define LEASE_H

#include <stddef.h>
#include <stdint.h>
#include "fencewait.h"
#include "json.h"
#include "kube.h"

/* client-go's defaults (RecommendedDefaultLeaderElectionConfiguration), in seconds. */
#define LEASE_DURATION 15       /* how long a record must stay unchanged before it is taken over */
#define LEASE_RENEW_DEADLINE 10 /* how long the leader may go without a renewal and still act */
#define LEASE_RETRY 2           /* how often a replica tries to acquire or renew */

#define LEASE_TIME_LEN 27       /* a MicroTime: "2026-12-01T16:27:36.123456Z" */
#define LEASE_NAMESPACE_MAX 63  /* a DNS label */
#define LEASE_NAME_MAX 253      /* a DNS subdomain */

/* The spec a replica writes. */
struct lease_spec {
	const char *holder;         /* our identity, or "" to release */
	long duration;              /* leaseDurationSeconds */
	const char *acquire, *renew; /* MicroTimes */
	long transitions;
};

/* The record as last read, and when it last changed by our monotonic clock (client-go's observedTime). */
struct lease_seen {
	int have;                   /* a record was read */
	struct json_lease rec;
	int64_t since_ms;           /* monotonic milliseconds when rec last changed */
};

enum lease_step {
	LEASE_FOLLOW,  /* another replica holds it and its record changed less than its duration ago */
	LEASE_RENEW,   /* we hold it: write it again, keeping acquireTime and leaseTransitions */
	LEASE_TAKE     /* nobody holds it, or its holder stopped renewing: take it, leaseTransitions + 1 */
};

/*
 * Notes a record just read at mono_ms: when it differs from the one seen before (resourceVersion,
 * holder or renewTime), it is remembered with mono_ms as the moment it changed.
 */
void lease_observe(struct lease_seen *o, const struct json_lease *r, int64_t mono_ms);

/*
 * The pure decision on the record seen, for identity id at mono_ms; now: the MicroTime to write.
 * For LEASE_RENEW and LEASE_TAKE, *out is the spec to PUT (its strings point into o, id and
 * now). A record held by another is taken over only when it has not changed for the longer of
 * its leaseDurationSeconds and LEASE_DURATION, by our clock: its renewTime is never read.
 */
enum lease_step lease_decide(const struct lease_seen *o, const char *id, int64_t mono_ms, const char *now,
    struct lease_spec *out);

/*
 * The body of a Lease write into out[0..cap): rv NULL for a create (POST), else the
 * resourceVersion the PUT is conditional on. Returns its length, or -1 when it did not fit.
 */
int lease_body(char *out, size_t cap, const char *ns, const char *name, const char *rv, const struct lease_spec *s);
/* The same with meta (NULL: none), members written as they are into metadata after its name,
 * namespace and resourceVersion ("\"labels\":{...},\"annotations\":{...}": the fence agent's Lease). */
int lease_body_meta(char *out, size_t cap, const char *ns, const char *name, const char *rv, const char *meta,
    const struct lease_spec *s);

/* Writes a time (Unix seconds and microseconds) as a MicroTime into out[LEASE_TIME_LEN + 1]. */
void lease_microtime(char *out, int64_t sec, long usec);

/*
 * Our identity: base (the pod's name) and "-" and 8 random hex digits from getrandom, so two
 * replicas started with the same name, or one restarted, are never taken for each other.
 * Returns 0, or -1 when base is empty or too long, or no random bytes could be had.
 */
int lease_identity(char *out, size_t cap, const char *base);

/* One replica's election. Its fields are lease.c's alone. */
#define LEASE_BODY_MAX 2048           /* a Lease we write: names, identity, times */
#define LEASE_ANSWER_MAX (16 * 1024)  /* a Lease we read, managedFields included */

struct lease {
	struct kube *k;
	char ns[LEASE_NAMESPACE_MAX + 1], name[LEASE_NAME_MAX + 1];
	char id[JSON_LEASE_ID_MAX + 1];
	char path[LEASE_NAMESPACE_MAX + LEASE_NAME_MAX + 64];
	struct lease_seen seen;
	int leader;                 /* our last write succeeded and nothing since said otherwise */
	int64_t renewed_ms;         /* monotonic ms when the last successful write was sent */
	char err[600];
	char body[LEASE_BODY_MAX];     /* the Lease being written */
	char answer[LEASE_ANSWER_MAX]; /* the server's answer being read */
};

/* Prepares an election on Lease ns/name for identity id over k (which must outlive l). 0 or -1 (err). */
int lease_init(struct lease *l, struct kube *k, const char *ns, const char *name, const char *id);

enum lease_result {
	LEASE_FAILED = -1,  /* a request failed or the Lease could not be read: lease_error() says why */
	LEASE_FOLLOWING,    /* another replica holds it */
	LEASE_LEADING,      /* we hold it, renewed just now */
	LEASE_LOST,         /* a write of ours was refused with 409: another replica wrote first */
	LEASE_RELEASED      /* lease_release gave it up */
};

/*
 * One round of tryAcquireOrRenew, started at mono_ms (monotonic milliseconds) and wall (Unix
 * seconds and microseconds, for the MicroTimes written). The leader first PUTs on the record it
 * last wrote (client-go's fast path); otherwise, or when that fails, GET (404: POST), decide, PUT.
 * A renewal counts from mono_ms, the moment before its request was sent, never later; a record
 * read counts from when its answer arrived (clock_ms then), never earlier.
 */
enum lease_result lease_try(struct lease *l, int64_t mono_ms, int64_t wall_sec, long wall_usec);

/*
 * The one rule of a term: a replica that is the leader may write at mono_ms while its last
 * renewal was sent less than LEASE_RENEW_DEADLINE before, by its monotonic clock. Another
 * replica takes over only after LEASE_DURATION (15 s) without a change by its own clock, so the
 * 5 s between them is the room for clocks that run at different rates (up to 1.5 times) and
 * for a write already on its way.
 */
static inline int lease_term_holds(int leader, int64_t renewed_ms, int64_t mono_ms)
{
	return leader && mono_ms - renewed_ms < LEASE_RENEW_DEADLINE * 1000L;
}

/* Whether we may write now (lease_term_holds on what lease_try last did). */
int lease_held(const struct lease *l, int64_t mono_ms);

/* The holder of the record last read ("" for none, or nothing read yet). */
const char *lease_holder(const struct lease *l);

/*
 * Gives the Lease up, as client-go's ReleaseOnCancel: when we hold it, a PUT with holderIdentity
 * "", leaseDurationSeconds 1, acquireTime = renewTime = wall, leaseTransitions kept. When the
 * record last seen is not ours (our last write's answer may have been cut short), or the PUT
 * gets 409, it reads the Lease first and releases it only if it is ours. LEASE_RELEASED,
 * LEASE_FOLLOWING when it is not ours (or is gone), or LEASE_FAILED (lease_error).
 */
enum lease_result lease_release(struct lease *l, int64_t wall_sec, long wall_usec);

const char *lease_error(const struct lease *l);

/*
 * The fence Leases (docs/fence.md), as the watcher reads and writes them: node's Lease
 * LEASE_FENCE_PREFIX NODE in namespace ns, read into *f with answer[0..cap) as the buffer.
 * rv NULL: a GET. Otherwise one JSON patch whose first operation tests rv: request (a
 * MicroTime) adds the request annotation, NULL removes it (rv may point into *f, which is
 * written only once the answer is in). Returns FENCEWAIT_GOT_LEASE with *f
 * (the Lease as read, or as the write left it), _NONE for 404 (or a node name too long to be
 * armed), _FORBIDDEN for 403, _UNREADABLE (why says why) for an answer that is no Lease, or
 * _FAILED (kube_error says why; a write whose test failed included).
 */
#define LEASE_FENCE_PREFIX "noderecover-fence-"
#define LEASE_FENCE_LABEL_KEY "app.kubernetes.io/component"
#define LEASE_FENCE_LABEL_VALUE "fence-agent"
#define LEASE_FENCE_LABEL LEASE_FENCE_LABEL_KEY "=" LEASE_FENCE_LABEL_VALUE
enum fencewait_got lease_fence(struct kube *k, const char *ns, const char *node, const char *rv,
    const char *request, char *answer, size_t cap, struct json_fence *f, char *why, size_t whylen);

/*
 * Every fence Lease in ns (the label selector LEASE_FENCE_LABEL), one request read into
 * body[0..cap): fn(ctx, f, node) for each, node the node it is for ("" when its name is not
 * LEASE_FENCE_PREFIX NODE); f->safe is -1 for one that cannot be read. Returns 0, or -1 with
 * one line in why (the request's failure, its status among it, or a list that cannot be read).
 */
int lease_fence_list(struct kube *k, const char *ns, char *body, size_t cap,
    void (*fn)(void *ctx, const struct json_fence *f, const char *node), void *ctx, char *why, size_t whylen);

#endif
