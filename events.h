/*
 * Events on the Node: an events.k8s.io/v1 Event for each action and refusal, so `kubectl
 * describe node` says what noderecover did and why. Best effort by design: an Event is posted
 * after its action, a failed post never changes the action's outcome, one post takes at most
 * EVENTS_DEADLINE_MS, and a broken or slow events endpoint costs at most one request per
 * EVENTS_PAUSE seconds.
 */
#ifndef EVENTS_H
#define EVENTS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "kube.h"
#include "node.h"

/* Why an Event is posted. Each has one reason, type and action (events.c's table, README). */
enum events_reason {
	EVENTS_TAINTED,        /* Warning OutOfServiceTainted, action Taint */
	EVENTS_CLEARED,        /* Normal  OutOfServiceCleared, action Clear */
	EVENTS_DELETED,        /* Normal  NodeDeleted, action Delete */
	EVENTS_DELETE_REFUSED, /* Warning DeleteRefused, action Delete (control plane, etcd, quorum) */
	EVENTS_STORM_ENGAGED,  /* Warning StormGuardEngaged, action Hold */
	EVENTS_STORM_LIFTED,   /* Normal  StormGuardLifted, action Resume */
	EVENTS_EXCLUDED,       /* Warning NodeExcluded, action Skip (opted out, yet needs action) */
	EVENTS_FENCE_REQUESTED,/* Warning FenceRequested, action Fence (the request written on its agent's Lease) */
	EVENTS_FENCED_TAINTED, /* Warning FencedTainted, action Taint (the taint, once its agent surely fenced) */
	EVENTS_REASONS
};

#define EVENTS_CONTROLLER "github-runner.exadev.io/noderecover" /* reportingController: a qualified name */
#define EVENTS_NAMESPACE "default"  /* the only namespaces an Event about a Node may be in: default, kube-system */
#define EVENTS_NOTE_MAX 1024        /* bytes of note the API server accepts */
#define EVENTS_INSTANCE_MAX 128     /* bytes of reportingInstance the API server accepts */
#define EVENTS_WINDOW 600           /* seconds: at most one Event per node and reason in this long */
#define EVENTS_PAUSE 60             /* seconds without a post after one failed */
#define EVENTS_DEADLINE_MS 5000     /* one post, retries and their waits included */
#define EVENTS_SEEN 1024            /* node+reason pairs remembered for the window */
#define EVENTS_WAYS 8               /* slots of the table one pair may use */
#define EVENTS_BODY_MAX 6144        /* an Event's JSON: the note twice over (escaping) and the names */

/*
 * The poster. Fixed size (about 17 KiB): its owner holds it once, for the whole run (noderecover.c's
 * struct process, allocated at start), as the window must outlive every pass. Its fields are
 * events.c's alone.
 */
struct events {
	struct kube *kc;
	const volatile sig_atomic_t *stop;
	int on;
	char instance[EVENTS_INSTANCE_MAX + 1];
	char self[NODE_NAME_MAX + 1];     /* the node noderecover runs on: what storm Events regard */
	int failing;                      /* the last post failed (said once, until one succeeds) */
	int64_t paused_until;             /* monotonic seconds: no post before then */
	uint64_t last_ns;                 /* the last name's time, so two names never share one */
	struct { uint64_t key; int64_t at; } seen[EVENTS_SEEN]; /* node+reason hash, when posted */
};

/*
 * Sets e up. kc: the API connection (outlives e). stop: a signal's flag (NULL: none); once set,
 * nothing is posted. instance: reportingInstance (the pod's or host's name; cut to
 * EVENTS_INSTANCE_MAX bytes, made printable; "" gives "noderecover"). self: the node this runs
 * on ("" when unknown, or not a valid node name: the storm guard's Events are then not posted).
 * on: 0 for --events=false and for both dry runs (an Event is a write; settings_events_on).
 */
void events_init(struct events *e, struct kube *kc, const volatile sig_atomic_t *stop,
    const char *instance, const char *self, int on);

/*
 * Posts an Event regarding node f (its name and uid), why r, note the words of the log line
 * (cut to EVENTS_NOTE_MAX bytes at a character boundary, control characters made spaces).
 * Nothing is posted when e is off, stopping, paused after a failure, when the node's name is not
 * a valid name, or when the same node and reason had an Event less than EVENTS_WINDOW seconds
 * ago. A 409 counts as posted (a retry of a post that got through: the name is ours alone). A
 * failure is said once (say.h; not again until a post succeeds) and pauses posting for
 * EVENTS_PAUSE seconds, unless a signal cut it short. Returns nothing: an Event never changes
 * what a pass did.
 */
void events_node(struct events *e, const struct node_facts *f, enum events_reason r, const char *note);

/*
 * The same for the storm guard, which is about no one node: the Event regards the node
 * noderecover runs on (uid its name, as the kubelet's own Events do), where an operator who
 * asks what the watcher is doing looks first.
 */
void events_cluster(struct events *e, enum events_reason r, const char *note);

/* r's Event reason ("OutOfServiceTainted") and action ("Taint"), for the log's JSON fields. */
const char *events_reason_name(enum events_reason r);
const char *events_action_name(enum events_reason r);

/*
 * The parts, for the tests. events_format writes the Event's JSON into out[0..cap) for a node
 * (name, uid), made at realtime (sec, nsec) and named name + "." + hex of unique: returns its
 * length, or -1 when it does not fit or a string is not UTF-8. events_due says whether an Event
 * for node and r may be posted at monotonic second now, and if so notes it (1), else 0.
 */
int events_format(char *out, size_t cap, const char *node, const char *uid, enum events_reason r,
    const char *note, const char *instance, int64_t sec, long nsec, uint64_t unique);
int events_due(struct events *e, const char *node, enum events_reason r, int64_t now);

#endif
