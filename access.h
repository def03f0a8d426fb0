/*
 * The permission check at start: whether the credentials may do what the settings need, asked
 * of the API server once, before the first pass, so a missing RBAC rule is one clear line and
 * exit status 2, not a pass that fails on every node for ever.
 */
#ifndef ACCESS_H
#define ACCESS_H

#include <stddef.h>
#include "kube.h"
#include "settings.h"

#define ACCESS_ANSWER_MAX 8192 /* bytes of a review's answer read; a longer one is no answer */

/* What turns a rule on. */
enum access_when {
	ACCESS_ALWAYS,
	ACCESS_PRUNING,    /* pruning is on (settings_pruning) */
	ACCESS_ELECTING,   /* leader election (--leader-elect; the pod manifests writes always elects) */
	ACCESS_EVENTS,     /* Events are posted (settings_events_on) */
	ACCESS_FENCING     /* the fence is on and has a namespace (--fence, --fence-namespace) */
};

/* Where a rule holds: cluster-wide (a ClusterRole) or in one namespace (a Role). */
enum access_scope {
	ACCESS_CLUSTER,
	ACCESS_LEASE_NAMESPACE,   /* the Lease's: --lease-namespace, or the pod's own */
	ACCESS_EVENTS_NAMESPACE,  /* EVENTS_NAMESPACE, where events.c posts */
	ACCESS_FENCE_NAMESPACE    /* the fence agents' Leases': --fence-namespace, or the pod's own */
};

/* When the start-up check asks for one verb of a rule that is on. */
enum access_ask {
	ACCESS_ASK_ALWAYS,
	ACCESS_ASK_WATCHING,   /* run following a watch; once and --watch=false only list */
	ACCESS_ASK_WRITING,    /* not in a client dry run, which sends no write to a node (a server
	                          dry run is authorized as a real write) */
	ACCESS_ASK_NEVER       /* granted, never sent by noderecover: nothing to ask */
};

#define ACCESS_VERBS_MAX 4

/*
 * One RBAC rule: what manifests grants (every verb, when the rule is on for the pod's
 * settings) and what the start-up check asks (each verb, when the rule is on and the verb is
 * asked for these settings). The README's permissions table is held to these by a unit test.
 */
struct access_rule {
	const char *resource, *group;        /* group "": the core API */
	enum access_scope scope;
	enum access_when when;
	struct { const char *verb; enum access_ask ask; } verbs[ACCESS_VERBS_MAX];   /* NULL-ended if fewer */
	const char *why;                     /* the comment above the rule in manifests */
};

/* The permissions, in the order manifests writes them and the check asks them. */
extern const struct access_rule access_rules[];
extern const size_t access_rule_count;

/* Whether rule r is on for the settings s. */
int access_rule_on(const struct access_rule *r, const struct settings *s);

/* The namespace rule r holds in for the settings s; NULL: cluster-wide. */
const char *access_namespace(const struct access_rule *r, const struct settings *s);

enum access_result {
	ACCESS_OK = 0,   /* every permission the settings need is allowed */
	ACCESS_DENIED,   /* one is not: exit 2 */
	ACCESS_UNKNOWN   /* a review could not be made or read (403, 404, a garbled answer, the
	                    network): the rest were not asked; go on, a missing permission will
	                    show as a refused request */
};

/*
 * One SelfSubjectAccessReview per verb the settings need (access_rules: list nodes; watch
 * nodes when following; patch nodes unless a client dry run; delete nodes when pruning, unless
 * a client dry run; the Lease's verbs when electing; create events when posting them; get and
 * patch the fence Leases with the fence on), in that order, stopping at the first denied or
 * unanswered. The fence's denied under --fence=prefer is ACCESS_UNKNOWN, its line a warning
 * (nodes then count as without an agent), and it is asked last. On ACCESS_DENIED, one
 * SelfSubjectReview more for the user's name. Leaves one line in msg[0..cap) for ACCESS_DENIED
 * (who may not do what, and the file in deploy/ that grants it) and ACCESS_UNKNOWN (why it
 * could not tell), "" for ACCESS_OK; server-sent text in it is cleaned by kube_clean. Sends
 * nothing else, keeps nothing.
 */
enum access_result access_check(struct kube *k, const struct settings *s, char *msg, size_t cap);

#endif
