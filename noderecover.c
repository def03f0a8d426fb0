/*
 * noderecover: taints nodes that stopped reporting so their pods can be replaced, clears the
 * taint when they return, and (opt-in) deletes removable nodes that stayed gone.
 * This file owns the command line, the loop, signals and every log line; it asks kube.c for
 * nodes, policy.c for decisions, and hands the decisions back to kube.c.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "access.h"
#include "kube.h"
#include "manifests.h"
#include "policy.h"
#include "settings.h"
#include "text.h"

#ifndef NODERECOVER_VERSION
#define NODERECOVER_VERSION "dev"
#endif
#ifndef NODERECOVER_IMAGE           /* build.sh sets the archive's name */
#define NODERECOVER_IMAGE "noderecover:" NODERECOVER_VERSION
#endif

#define KEEP_MAX 1024                 /* nodes acted on in one pass; the rest wait for the next */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* One log line on stderr: a UTC timestamp and the message, written at once. */
__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	char line[1024];
	size_t n;
	va_list ap;

	text_time(line, time(NULL));
	n = TEXT_TIME_LEN;
	line[n++] = ' ';
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	if (write(2, line, n) < 0)
		return;
}

/* A name from the API made safe for one log line. */
static const char *printable(const char *s, char *out, size_t n)
{
	size_t i = 0;

	for (; *s && i + 1 < n; s++)
		out[i++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	out[i] = '\0';
	return out;
}

struct kept {
	struct node_facts f;
	struct policy_verdict v;
};

/* What one pass has learnt so far. */
struct pass {
	struct node_keys keys;
	struct policy_settings rules;
	int64_t now;
	struct policy_summary sum;
	int nkept, overflow, unreadable;
	long seen;
	struct kept kept[KEEP_MAX];
};

static void on_restart(void *ctx)
{
	struct pass *p = ctx;

	memset(&p->sum, 0, sizeof p->sum);
	p->nkept = p->overflow = p->unreadable = 0;
	p->seen = 0;
}

static int on_node(void *ctx, const struct node_facts *f, const char *why)
{
	static struct kept spill;   /* a node past KEEP_MAX: decided, counted, not kept */
	struct pass *p = ctx;
	struct kept *k = p->nkept < KEEP_MAX ? &p->kept[p->nkept] : &spill;
	char name[NODE_NAME_MAX + 1];

	p->seen++;
	if (why) {
		say("Could not read node %s (item %ld of the list): %s; it is not acted on this pass",
		    f->name[0] ? printable(f->name, name, sizeof name) : "without a name", p->seen, why);
		p->unreadable++;
		return 0;
	}
	k->f = *f;
	policy_summary_add(&p->sum, &k->f);
	if (!policy_node(&k->f, &p->rules, p->now, &k->v))
		return 0;
	if (!kube_name_ok(k->f.name)) {
		say("Not acting on node '%s': not a valid node name", printable(k->f.name, name, sizeof name));
		p->unreadable++;
		return 0;
	}
	if (k == &spill)
		p->overflow++;
	else
		p->nkept++;
	return 0;
}

/* Says why a delete was refused. */
static void say_refusal(const struct kept *k, const struct policy_summary *sum)
{
	switch (k->v.refusal) {
	case POLICY_REFUSED_CONTROL_PLANE:
		say("Not deleting %s: it is a control-plane node (label %s), never pruned; the pass fails",
		    k->f.name, NODE_LABEL_CONTROL_PLANE);
		break;
	case POLICY_REFUSED_ETCD:
		say("Not deleting %s: it is an etcd member (label %s), never pruned; the pass fails",
		    k->f.name, NODE_LABEL_ETCD);
		break;
	case POLICY_REFUSED_QUORUM:
		say("Not deleting %s: only %ld Ready etcd members would remain, fewer than the %d a cluster needs to tolerate losing one",
		    k->f.name, sum->etcd_ready, POLICY_ETCD_FLOOR);
		break;
	case POLICY_ALLOWED:
		break;
	}
}

static int64_t mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

/* The storm guard's limit as a person set it, for log lines. */
static const char *limit_text(const struct settings *s, char *out, size_t n)
{
	if (s->max_unknown)
		snprintf(out, n, "%ld", s->max_unknown);
	else
		snprintf(out, n, "%d%%", s->max_unknown_percent);
	return out;
}

/* One line for each change of the storm guard, none while it stays as it was. */
static void say_storm(enum policy_storm_change c, const struct policy_summary *sum, long limit,
    const struct settings *s)
{
	char lim[32];

	limit_text(s, lim, sizeof lim);
	switch (c) {
	case POLICY_STORM_ENGAGES:
		say("Storm guard engaged: %ld of %ld nodes are Unknown, more than the limit of %ld (--max-unknown %s); no new taint and no delete until at most %ld are and %llds have passed, clears go on",
		    sum->unknown, sum->nodes, limit, lim, limit, (long long)s->storm_cooldown);
		break;
	case POLICY_STORM_COOLS:
		say("Storm guard cooling down: %ld of %ld nodes are Unknown, within the limit of %ld; new taints and deletes stay held for %llds",
		    sum->unknown, sum->nodes, limit, (long long)s->storm_cooldown);
		break;
	case POLICY_STORM_LIFTS:
		say("Storm guard lifted: %ld of %ld nodes are Unknown, within the limit of %ld; taints and deletes resume",
		    sum->unknown, sum->nodes, limit);
		break;
	case POLICY_STORM_SAME:
		break;
	}
}

/* The line for a decided action that a dry run does not carry out. */
static void say_would(const struct settings *s, const struct kept *k)
{
	const char *how = s->dry_run == DRY_RUN_SERVER ? "dry run: the server accepted it, nothing stored"
	    : "dry run: nothing sent";

	if (k->v.action == POLICY_TAINT)
		say("Would taint %s %s=%s:%s: not reporting for %llds (%s)", k->f.name, NODE_TAINT_KEY,
		    NODE_TAINT_VALUE, NODE_TAINT_EFFECT, (long long)k->v.unknown_for, how);
	else if (k->v.action == POLICY_CLEAR)
		say("Would clear %s: Ready again; out-of-service taint and annotation removed (%s)", k->f.name, how);
	else if (k->v.action == POLICY_DELETE)
		say("Would delete %s: not reporting for %llds (%s)", k->f.name, (long long)k->v.unknown_for, how);
}

/* Does one decided action; returns -1 when it failed the pass, else 0 (KUBE_CHANGED: 1). */
static int act_once(struct kube *kc, const struct settings *s, const struct kept *k, time_t now)
{
	const char *verb = k->v.action == POLICY_TAINT ? "Tainting" : k->v.action == POLICY_CLEAR ? "Clearing" : "Deleting";
	enum kube_result r;

	if (s->dry_run == DRY_RUN_CLIENT) {
		say_would(s, k);
		return 0;
	}
	switch (k->v.action) {
	case POLICY_TAINT:
		r = kube_taint(kc, &k->f, s->annotation, now);
		break;
	case POLICY_CLEAR:
		r = kube_clear(kc, &k->f, s->annotation);
		break;
	case POLICY_DELETE:
		r = kube_delete(kc, &k->f);
		break;
	default:
		return 0;
	}
	switch (r) {
	case KUBE_OK:
		if (s->dry_run == DRY_RUN_SERVER)
			say_would(s, k);
		else if (k->v.action == POLICY_TAINT)
			say("Tainted %s %s=%s:%s: not reporting for %llds", k->f.name, NODE_TAINT_KEY,
			    NODE_TAINT_VALUE, NODE_TAINT_EFFECT, (long long)k->v.unknown_for);
		else if (k->v.action == POLICY_CLEAR)
			say("Cleared %s: Ready again; out-of-service taint and annotation removed", k->f.name);
		else
			say("Deleted %s: not reporting for %llds", k->f.name, (long long)k->v.unknown_for);
		return 0;
	case KUBE_CHANGED:
		return 1;
	case KUBE_GONE:
		say("%s already gone", k->f.name);
		return 0;
	case KUBE_FAILED:
		break;
	}
	if (stop)
		say("%s %s cut short by a signal", verb, k->f.name);
	else
		say("%s %s failed: %s; next pass", verb, k->f.name, kube_error(kc));
	return -1;
}

/*
 * Does one decided action. When the node changed since it was listed (a failed test op or
 * delete precondition), reads it again, decides again with the pass's summary and the guard's
 * verdict, and tries again with its new resourceVersion, a few times, as client-go's conflict
 * retry does: a node another client changes often must not starve. Returns -1 when the action
 * failed the pass, else 0.
 */
static int act(struct kube *kc, const struct settings *s, const struct pass *p, struct kept *k, int holding)
{
	int r = act_once(kc, s, k, time(NULL));

	for (int tries = 0; r == 1 && !stop; tries++) {
		if (tries == KUBE_CONFLICT_RETRIES) {
			say("%s kept changing while it was acted on (%d tries); next pass", k->f.name, tries + 1);
			return 0;
		}
		switch (kube_get_node(kc, k->f.name, &p->keys, &k->f)) {
		case KUBE_OK:
			break;
		case KUBE_GONE:
			say("%s already gone", k->f.name);
			return 0;
		default:
			say("%s changed since it was listed, and reading it again failed: %s; next pass", k->f.name, kube_error(kc));
			return -1;
		}
		policy_node(&k->f, &p->rules, time(NULL), &k->v);
		policy_resolve(&k->v, &p->sum, holding);
		if (k->v.action == POLICY_NONE) {
			say("%s changed since it was listed; nothing to do now", k->f.name);
			return 0;
		}
		r = act_once(kc, s, k, time(NULL));
	}
	return r < 0 ? -1 : 0;
}

/*
 * What one pass leaves for the next, on purpose: the storm guard, and which opted-out nodes
 * needing action were already logged (by a 64-bit hash of the name: fixed memory, and a
 * collision costs at most one line not written). A restart forgets both.
 */
struct carry {
	struct policy_storm storm;
	uint64_t told[KEEP_MAX], telling[KEEP_MAX];
	int ntold, ntelling;
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;   /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* An opted-out node that would be tainted or deleted: said once while it stays so. */
static void say_excluded(struct carry *c, const struct kept *k, const struct settings *s)
{
	uint64_t h = name_hash(k->f.name);
	int told = 0;

	for (int i = 0; i < c->ntold && !told; i++)
		told = c->told[i] == h;
	if (c->ntelling < KEEP_MAX)
		c->telling[c->ntelling++] = h;
	if (!told)
		say("Not %s %s: it carries %s=true, so it is left as it is (logged once while it stays so)",
		    k->v.excluded == POLICY_DELETE ? "deleting" : "tainting", k->f.name, s->exclude_label);
}

/*
 * One pass: read every node, then act. c: what passes carry from one to the next.
 * Returns 0 when all went well, -1 when the pass failed or held an action back.
 */
static int pass(struct kube *kc, const struct settings *s, struct carry *c)
{
	struct policy_storm *storm = &c->storm;
	static struct pass p;
	struct policy_limit lim = { s->max_unknown, s->max_unknown_percent };
	long limit;
	int failed, held = 0;

	p.keys = (struct node_keys){ s->prune_label, s->annotation, s->exclude_label };
	p.rules = (struct policy_settings){ s->taint_after, s->prune_after, s->self_node };
	p.now = time(NULL);
	on_restart(&p);
	/* Nothing is done until the whole list is read: quorum needs every page, and a list
	 * that broke halfway is no ground to act on. */
	if (kube_list_nodes(kc, s->page_size, &p.keys, on_node, on_restart, &p) != KUBE_OK) {
		/* a stop is not a failure to report, only a pass cut short */
		if (stop)
			say("Listing nodes cut short by a signal; no node acted on this pass");
		else
			say("Listing nodes failed: %s; no node acted on this pass", kube_error(kc));
		return -1;
	}
	failed = p.unreadable > 0;
	/* Every Unknown node counts, our own and those not yet past the threshold: the guard
	 * asks whether the cluster or the watcher's view of it is broken, not which node is. */
	limit = policy_unknown_limit(&lim, p.sum.nodes);
	say_storm(policy_storm_step(storm, p.sum.unknown, limit, s->storm_cooldown, mono_seconds()), &p.sum, limit, s);
	for (int i = 0; i < p.nkept && !stop; i++) {
		struct kept *k = &p.kept[i];
		policy_resolve(&k->v, &p.sum, policy_storm_holds(storm));
		held += k->v.held != POLICY_NONE;
		if (k->v.excluded != POLICY_NONE)
			say_excluded(c, k, s);
		if (k->v.refusal != POLICY_ALLOWED) {
			say_refusal(k, &p.sum);
			failed = 1;
		}
		if (act(kc, s, &p, k, policy_storm_holds(storm)) < 0)
			failed = 1;
	}
	memcpy(c->told, c->telling, sizeof c->told[0] * (size_t)c->ntelling);
	c->ntold = c->ntelling;
	c->ntelling = 0;
	if (p.overflow) {
		say("%d more nodes need action than the %d one pass handles; they are next pass", p.overflow, KEEP_MAX);
		failed = 1;
	}
	return failed || held ? -1 : 0;
}

static const char usage[] =
    "usage: noderecover [run|once|manifests|version|help] [options]\n"
    "\n"
    "Taints nodes whose Ready condition stayed Unknown with\n"
    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute, clears it when they return,\n"
    "and optionally deletes removable nodes that stayed gone.\n"
    "\n"
    "  run                      a pass every poll interval until SIGTERM (default)\n"
    "  once                     one pass; exit 0 ok, 1 a pass failed, 2 bad settings\n"
    "  manifests                print the cluster objects (YAML) that run it with these settings\n"
    "\n"
    "  --taint-after SECONDS    NODE_RECOVERY_AFTER_SECONDS (required)\n"
    "  --prune-after SECONDS    NODE_RECOVERY_PRUNE_AFTER_SECONDS (empty: pruning off)\n"
    "  --prune-label KEY        NODE_RECOVERY_PRUNE_LABEL (github-runner.exadev.io/removable)\n"
    "  --annotation KEY         NODE_RECOVERY_ANNOTATION (github-runner.exadev/out-of-service-applied-at)\n"
    "  --self-node NAME         NODE_RECOVERY_SELF_NODE (outside a pod: the host name)\n"
    "  --poll SECONDS           NODE_RECOVERY_POLL_SECONDS (15)\n"
    "  --kubeconfig FILE        KUBECONFIG\n"
    "  --server URL --ca-file FILE --token-file FILE\n"
    "  --tls-server-name NAME   name to verify the server's certificate against\n"
    "  --page-size N            nodes per list request (500)\n"
    "  --max-unknown N|P%       NODE_RECOVERY_MAX_UNKNOWN (50%): more Unknown nodes than this,\n"
    "                           no new taint and no delete (100% turns the guard off)\n"
    "  --dry-run[=server]       NODE_RECOVERY_DRY_RUN (true, server): decide, log Would ...,\n"
    "                           send no write; =server: every write with dryRun=All\n"
    "  --exclude-label KEY      NODE_RECOVERY_EXCLUDE_LABEL (github-runner.exadev.io/no-recovery):\n"
    "                           a node labelled KEY=true is never tainted or deleted\n"
    "  --storm-cooldown SECONDS NODE_RECOVERY_STORM_COOLDOWN (the taint threshold): the guard\n"
    "                           keeps holding this long after the count is back within the limit\n";

static const char *env(const char *name)
{
	return getenv(name);
}

static void say_start(const struct settings *s, const struct kube_target *t)
{
	char prune[400], storm[128], lim[32];

	if (s->prune_after)
		snprintf(prune, sizeof prune, "prune after %llds (label %s=true)", (long long)s->prune_after, s->prune_label);
	else
		snprintf(prune, sizeof prune, "pruning off");
	if (!s->max_unknown && s->max_unknown_percent >= 100)
		snprintf(storm, sizeof storm, "storm guard off (--max-unknown 100%%)");
	else
		snprintf(storm, sizeof storm, "storm guard above %s Unknown (cooldown %llds)",
		    limit_text(s, lim, sizeof lim), (long long)s->storm_cooldown);
	say("noderecover %s starting%s: taint after %llds, %s, %s, opt-out label %s=true, annotation %s, self node %s%s%s, poll %llds, page size %ld; cluster %s%s%s from %s, authenticating with %s",
	    NODERECOVER_VERSION, s->dry_run == DRY_RUN_CLIENT ? " a dry run (no write is sent)"
	    : s->dry_run == DRY_RUN_SERVER ? " a server dry run (every write with dryRun=All)" : "",
	    (long long)s->taint_after, prune, storm, s->exclude_label, s->annotation,
	    s->self_node[0] ? s->self_node : "unknown (set NODE_RECOVERY_SELF_NODE from spec.nodeName)",
	    s->self_node[0] ? " from " : "", s->self_node[0] ? s->self_source : "",
	    (long long)s->poll, s->page_size, t->server,
	    t->tls_server_name[0] ? " verified as " : "", t->tls_server_name, t->source,
	    t->cert_pem ? "a client certificate" : t->token_file[0] ? "the token file" : "the kubeconfig's token");
}

/* The permission check before the first pass: its line logged; 0 when a permission is denied. */
static int permitted(struct kube *kc, const struct settings *s)
{
	char msg[1024];
	enum access_result a = access_check(kc, s, msg, sizeof msg);

	if (a != ACCESS_OK)
		say("%s", msg);
	return a != ACCESS_DENIED;
}

int main(int argc, char **argv)
{
	static struct settings s;
	static struct kube_target t;
	static struct kube kc;
	static struct carry carry;
	char err[1024];
	int failed;

	if (settings_parse(&s, argc, argv, env, err, sizeof err) < 0) {
		fprintf(stderr, "noderecover: %s\n", err);
		return 2;
	}
	if (s.mode == MODE_HELP) {
		fputs(usage, stdout);
		return 0;
	}
	if (s.mode == MODE_MANIFESTS) {
		if (manifests_write(stdout, &s, NODERECOVER_IMAGE) == 0)
			return 0;
		fprintf(stderr, "noderecover: writing the manifests failed\n");
		return 1;
	}
	if (s.mode == MODE_VERSION) {
		printf("noderecover %s\n", NODERECOVER_VERSION);
		return 0;
	}
	if (settings_target(&s, env, &t, err, sizeof err) < 0 ||
	    kube_init(&kc, &t, &stop, err, sizeof err) < 0) {
		fprintf(stderr, "noderecover: %s\n", err);
		return 2;
	}
	kube_dry_run(&kc, s.dry_run == DRY_RUN_SERVER);
	struct sigaction sa = { 0 };
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	say_start(&s, &t);
	if (!permitted(&kc, &s)) {
		kube_close(&kc);
		return 2;
	}
	if (s.mode == MODE_ONCE) {
		failed = pass(&kc, &s, &carry) < 0;
		kube_close(&kc);
		/* a pass a signal cut short did not do all it should have */
		if (stop)
			say("noderecover stopping on a signal; the pass did not finish");
		return failed || stop;
	}
	while (!stop) {
		pass(&kc, &s, &carry);
		for (int64_t i = 0; i < s.poll * 10 && !stop; i++) {
			struct timespec ts = { 0, 100000000 };
			nanosleep(&ts, NULL);
		}
	}
	kube_close(&kc);
	say("noderecover stopping on a signal");
	return 0;
}
