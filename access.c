/*
 * The permission check at start: a table of what the settings need, one SelfSubjectAccessReview
 * per row through kube_call, and the line that says who lacks what and which file grants it.
 * Owns the table and the two review bodies; never decides about a node, never logs (the caller
 * does), never writes anything that persists (reviews are not stored).
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

/* When the settings need a row. */
typedef int (*when_fn)(const struct settings *s);

static int always(const struct settings *s)
{
	(void)s;
	return 1;
}

/* A client dry run sends no write, so it needs only to read. */
static int writing(const struct settings *s)
{
	return s->dry_run != DRY_RUN_CLIENT;
}

/* run follows a watch between lists; once lists only. */
static int watching(const struct settings *s)
{
	return s->watch && s->mode == MODE_RUN;
}

static int pruning(const struct settings *s)
{
	return s->prune_after > 0 && writing(s);
}

static int electing(const struct settings *s)
{
	return s->leader_elect;
}

/* Events are written only outside a dry run. */
static int eventing(const struct settings *s)
{
	return s->events && s->dry_run == DRY_RUN_NONE;
}

/* Where a namespaced row asks; NULL: cluster-wide. */
typedef const char *(*namespace_fn)(const struct settings *s);

static const char *lease_namespace(const struct settings *s)
{
	return s->lease_namespace;
}

static const char *events_namespace(const struct settings *s)
{
	(void)s;
	return EVENTS_NAMESPACE;
}

/* One permission the settings may need: adding one is adding a row. */
struct need {
	when_fn when;
	const char *verb, *group, *resource;
	namespace_fn ns;         /* NULL: cluster-wide */
	const char *file;        /* the deploy/ file that grants it; NULL: the one for these settings */
};

static const struct need needs[] = {
	{ always, "list", "", "nodes", NULL, NULL },
	{ watching, "watch", "", "nodes", NULL, NULL },
	{ writing, "patch", "", "nodes", NULL, NULL },
	{ pruning, "delete", "", "nodes", NULL, DEPLOY_PRUNE },
	{ electing, "get", "coordination.k8s.io", "leases", lease_namespace, NULL },
	{ electing, "create", "coordination.k8s.io", "leases", lease_namespace, NULL },
	{ electing, "update", "coordination.k8s.io", "leases", lease_namespace, NULL },
	{ eventing, "create", "events.k8s.io", "events", events_namespace, NULL },
};

/* The body of a SelfSubjectAccessReview for one row. Returns its length, or -1. */
static int review_body(const struct need *n, const char *ns, char *out, size_t cap)
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
	json_str(&b, n->verb);
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

	if (st >= 200 && st <= 299 && json_self_user(answer, strlen(answer), user, sizeof user, why, sizeof why) == 0)
		kube_clean(k, out, cap, user);
	else
		snprintf(out, cap, "this service account/user");
}

enum access_result access_check(struct kube *k, const struct settings *s, char *msg, size_t cap)
{
	char answer[ACCESS_ANSWER_MAX], body[512], what[320], reason[256], why[200];
	int allowed;

	msg[0] = '\0';
	for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
		const struct need *n = &needs[i];
		const char *ns;
		char res[128], where[96] = "";
		int len, st;

		if (!n->when(s))
			continue;
		ns = n->ns ? n->ns(s) : NULL;
		snprintf(res, sizeof res, "%s%s%s", n->resource, n->group[0] ? "." : "", n->group);
		if (ns)
			snprintf(where, sizeof where, " in namespace %s", ns);
		snprintf(what, sizeof what, "asking whether we may %s %s%s", n->verb, res, where);
		if ((len = review_body(n, ns, body, sizeof body)) < 0) {
			text_fail(msg, cap, "Permission check not made: %s: the review does not fit %zu bytes; going on without it",
			    what, sizeof body);
			return ACCESS_UNKNOWN;
		}
		st = kube_call(k, what, "POST", SSAR_PATH, body, (size_t)len, answer, sizeof answer);
		if (st < 200 || st > 299) {
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
			continue;
		char user[300], said[300];
		user_name(k, answer, user, sizeof user);
		kube_clean(k, said, sizeof said, reason);
		text_fail(msg, cap, "Permission check: %s may not %s %s%s%s, which these settings need: %s grants it (or `noderecover "
		    "manifests` with these settings)%s%s%s; not starting", user, n->verb, res, where,
		    ns ? "" : " (cluster-wide)", n->file ? n->file : s->prune_after ? DEPLOY_PRUNE : DEPLOY,
		    said[0] ? " (the API server says: " : "", said, said[0] ? ")" : "");
		return ACCESS_DENIED;
	}
	return ACCESS_OK;
}
