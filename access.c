/*
 * The permissions: one table of RBAC rules (access_rules) that manifests grants and the
 * start-up check asks, one SelfSubjectAccessReview per verb through kube_call, and the line
 * that says who lacks what and which file grants it. Owns the table and the two review
 * bodies; never decides about a node, never logs (the caller does), never writes anything that
 * persists (reviews are not stored).
 */
#include <stdio.h>
#include <string.h>
#include "access.h"
#include "events.h"
#include "json.h"
#include "text.h"

#define SSAR_PATH "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
#define SSR_PATH "/apis/authentication.k8s.io/v1/selfsubjectreviews"
#define DEPLOY "deploy/noderecover.yaml"
#define DEPLOY_PRUNE "deploy/noderecover-prune.yaml"

const struct access_rule access_rules[] = {
	/* get: nothing here reads one node, but the role lets its holder read what it lists */
	{ "nodes", "", ACCESS_CLUSTER, ACCESS_ALWAYS,
	  { { "get", ACCESS_ASK_NEVER }, { "list", ACCESS_ASK_ALWAYS }, { "watch", ACCESS_ASK_WATCHING },
	    { "patch", ACCESS_ASK_WRITING } },
	  "read and follow nodes, taint and annotate them" },
	{ "nodes", "", ACCESS_CLUSTER, ACCESS_PRUNING, { { "delete", ACCESS_ASK_WRITING } },
	  "pruning is on: RBAC cannot narrow this to labelled nodes, so the pod runs on control-plane nodes" },
	{ "leases", "coordination.k8s.io", ACCESS_LEASE_NAMESPACE, ACCESS_ELECTING,
	  { { "get", ACCESS_ASK_ALWAYS }, { "create", ACCESS_ASK_ALWAYS }, { "update", ACCESS_ASK_ALWAYS } },
	  "leader election: only the holder of the Lease acts" },
	/* an Event about a cluster-scoped Node lives in default (or kube-system): a Role there, not a ClusterRole */
	{ "events", "events.k8s.io", ACCESS_EVENTS_NAMESPACE, ACCESS_EVENTS, { { "create", ACCESS_ASK_ALWAYS } },
	  "Events on the Node (kubectl describe node), in " EVENTS_NAMESPACE " only" },
	/* last: under --fence=prefer its denial is a warning, and nothing after it goes unasked */
	{ "leases", "coordination.k8s.io", ACCESS_FENCE_NAMESPACE, ACCESS_FENCING,
	  { { "get", ACCESS_ASK_ALWAYS }, { "list", ACCESS_ASK_NEVER }, { "patch", ACCESS_ASK_WRITING } },
	  "the fence: each node's agent Lease, and the fence request on it (list: plan's FENCE column)" },
};

const size_t access_rule_count = sizeof access_rules / sizeof access_rules[0];

int access_rule_on(const struct access_rule *r, const struct settings *s)
{
	switch (r->when) {
	case ACCESS_ALWAYS:
		return 1;
	case ACCESS_PRUNING:
		return settings_pruning(s);
	case ACCESS_ELECTING:
		return s->leader_elect;
	case ACCESS_EVENTS:
		return settings_events_on(s);
	case ACCESS_FENCING:
		return s->fence != FENCE_OFF && s->fence_namespace[0];
	}
	return 0;
}

const char *access_namespace(const struct access_rule *r, const struct settings *s)
{
	switch (r->scope) {
	case ACCESS_CLUSTER:
		break;
	case ACCESS_LEASE_NAMESPACE:
		return s->lease_namespace;
	case ACCESS_EVENTS_NAMESPACE:
		return EVENTS_NAMESPACE;
	case ACCESS_FENCE_NAMESPACE:
		return s->fence_namespace;
	}
	return NULL;
}

/* Whether the check asks for a verb of a rule that is on. */
static int asked(enum access_ask ask, const struct settings *s)
{
	switch (ask) {
	case ACCESS_ASK_ALWAYS:
		return 1;
	case ACCESS_ASK_WATCHING:
		return s->watch && s->mode == MODE_RUN;
	case ACCESS_ASK_WRITING:
		return s->dry_run != DRY_RUN_CLIENT;
	case ACCESS_ASK_NEVER:
		break;
	}
	return 0;
}

/* The body of a SelfSubjectAccessReview for one verb of a rule. Returns its length, or -1. */
static int review_body(const struct access_rule *n, const char *verb, const char *ns, char *out, size_t cap)
{
	struct json_buf b;

	json_buf_init(&b, out, cap);
	json_raw(&b, "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\","
	    "\"spec\":{\"resourceAttributes\":{");
	if (ns) {
		json_raw(&b, "\"namespace\":");
		json_str(&b, ns);
		json_raw(&b, ",");
	}
	json_raw(&b, "\"verb\":");
	json_str(&b, verb);
	json_raw(&b, ",\"group\":");
	json_str(&b, n->group);
	json_raw(&b, ",\"resource\":");
	json_str(&b, n->resource);
	json_raw(&b, "}}}");
	return json_buf_end(&b);
}

/* Who we are, by a SelfSubjectReview, cleaned for the log; a generic name when it cannot tell. */
static void user_name(struct kube *k, char *answer, char *out, size_t cap)
{
	static const char body[] = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
	char user[256], why[160];
	int st = kube_call(k, "asking who we are", "POST", SSR_PATH, body, sizeof body - 1, answer, ACCESS_ANSWER_MAX);

	if (kube_done(st) && json_self_user(answer, strlen(answer), user, sizeof user, why, sizeof why) == 0)
		kube_clean(k, out, cap, user);
	else
		snprintf(out, cap, "this service account/user");
}

/* One review: whether we may do verb to rule r's resource, for the settings s. */
static enum access_result ask(struct kube *k, const struct settings *s, const struct access_rule *r, const char *verb,
    char *msg, size_t cap)
{
	char answer[ACCESS_ANSWER_MAX], body[512], what[320], reason[256], why[200], res[128], where[96] = "";
	const char *ns = access_namespace(r, s);
	int allowed, len, st;

	snprintf(res, sizeof res, "%s%s%s", r->resource, r->group[0] ? "." : "", r->group);
	if (ns)
		snprintf(where, sizeof where, " in namespace %s", ns);
	snprintf(what, sizeof what, "asking whether we may %s %s%s", verb, res, where);
	if ((len = review_body(r, verb, ns, body, sizeof body)) < 0) {
		text_fail(msg, cap, "Permission check not made: %s: the review does not fit %zu bytes; going on without it",
		    what, sizeof body);
		return ACCESS_UNKNOWN;
	}
	st = kube_call(k, what, "POST", SSAR_PATH, body, (size_t)len, answer, sizeof answer);
	if (!kube_done(st)) {
		text_fail(msg, cap, "Permission check not made: %s; going on without it (a missing permission "
		    "will show as a refused request)", kube_error(k));
		return ACCESS_UNKNOWN;
	}
	if (json_access_review(answer, strlen(answer), &allowed, reason, sizeof reason, why, sizeof why) < 0) {
		text_fail(msg, cap, "Permission check not made: %s: %s; going on without it (a missing "
		    "permission will show as a refused request)", what, why);
		return ACCESS_UNKNOWN;
	}
	if (allowed)
		return ACCESS_OK;
	char user[300], said[300];
	/* an upgrade without the fence's Role must not stop recovery: prefer goes on without agents */
	int warn = r->when == ACCESS_FENCING && s->fence == FENCE_PREFER;
	user_name(k, answer, user, sizeof user);
	kube_clean(k, said, sizeof said, reason);
	text_fail(msg, cap, "Permission check: %s may not %s %s%s%s, which these settings need: %s grants it (or `noderecover "
	    "manifests` with these settings)%s%s%s; %s", user, verb, res, where,
	    ns ? "" : " (cluster-wide)", settings_pruning(s) ? DEPLOY_PRUNE : DEPLOY,
	    said[0] ? " (the API server says: " : "", said, said[0] ? ")" : "",
	    warn ? "going on: a node whose fence Lease may not be read counts as without an agent" : "not starting");
	return warn ? ACCESS_UNKNOWN : ACCESS_DENIED;
}

enum access_result access_check(struct kube *k, const struct settings *s, char *msg, size_t cap)
{
	msg[0] = '\0';
	for (size_t i = 0; i < access_rule_count; i++) {
		const struct access_rule *r = &access_rules[i];
		if (!access_rule_on(r, s))
			continue;
		for (int v = 0; v < ACCESS_VERBS_MAX && r->verbs[v].verb; v++) {
			enum access_result a;
			if (asked(r->verbs[v].ask, s) && (a = ask(k, s, r, r->verbs[v].verb, msg, cap)) != ACCESS_OK)
				return a;
		}
	}
	return ACCESS_OK;
}
