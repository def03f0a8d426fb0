/*
 * noderecover: taints nodes that stopped reporting so their pods can be replaced, clears the
 * taint when they return, and (opt-in) deletes removable nodes that stayed gone.
 * This file owns the command line, start-up, signals and the loop: when a pass runs (pass.c
 * reads, decides and acts) and how the process ends.
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
#include "lease.h"
#include "listen.h"
#include "manifests.h"
#include "metrics.h"
#include "pass.h"
#include "plan.h"
#include "say.h"
#include "settings.h"

#ifndef NODERECOVER_VERSION
#define NODERECOVER_VERSION "dev"
#endif
#ifndef NODERECOVER_IMAGE           /* build.sh sets the archive's name */
#define NODERECOVER_IMAGE "noderecover:" NODERECOVER_VERSION
#endif

/* stop ends the loop; cut ends the request in flight. Two flags, so that after a SIGTERM the
 * Lease can still be released with one last request (a second signal cuts that short too). */
static volatile sig_atomic_t stop, cut;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
	cut = 1;
}

/* Sleeps until the monotonic clock reaches wake (ms), waking at once on a signal. */
static void sleep_until(int64_t wake)
{
	int64_t left;

	while (!stop && (left = wake - http_clock_ms()) > 0) {
		struct timespec ts = { (time_t)(left / 1000), (long)(left % 1000) * 1000000 };
		nanosleep(&ts, NULL);
	}
}

static const char usage[] =
    "usage: noderecover [run|once|plan|manifests|version|help] [options]\n"
    "\n"
    "Taints nodes whose Ready condition stayed Unknown with\n"
    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute, clears it when they return,\n"
    "and optionally deletes removable nodes that stayed gone.\n"
    "\n"
    "  run                      a pass every poll interval until SIGTERM (default)\n"
    "  once                     one pass; exit 0 ok, 1 a pass failed, 2 bad settings or a denied permission\n"
    "  plan                     one read, nothing written: each node, what a pass would do\n"
    "                           now and why, or when; exit 0 read, 1 could not read, 2 settings\n"
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
    "                           keeps holding this long after the count is back within the limit\n"
    "  --events=false           NODE_RECOVERY_EVENTS (true): no Events on the Node (none in a dry run)\n"
    "  --output table|json      NODE_RECOVERY_OUTPUT (table): how plan prints\n"
    "  --leader-elect           NODE_RECOVERY_LEADER_ELECT (false): only the holder of a Lease\n"
    "                           lists and acts (lease 15s, renew deadline 10s, retry 2s)\n"
    "  --lease-name NAME        NODE_RECOVERY_LEASE_NAME (noderecover)\n"
    "  --lease-namespace NS     NODE_RECOVERY_LEASE_NAMESPACE (in a pod: its own namespace)\n"
    "  --listen ADDR            NODE_RECOVERY_LISTEN (empty: off): run serves /metrics, /livez and\n"
    "                           /readyz over plain HTTP on :PORT, IPv4:PORT or [IPv6]:PORT\n";

static const char *env(const char *name)
{
	return getenv(name);
}

/* Leader election as the loop sees it: the Lease, and what the log last said about it. */
struct election {
	struct lease lease;
	const char *ns, *name;             /* the settings' */
	char id[JSON_LEASE_ID_MAX + 1];    /* this replica's identity */
	int said;                          /* the log last said: 1 leading, 0 not, -1 nothing yet */
	char holder[JSON_LEASE_ID_MAX + 1]; /* the holder it last named */
	int failing;                       /* a failure was said; the next success ends it */
	int64_t last_try;                  /* monotonic ms of the last try */
};

/* One try to acquire or renew (client-go's tryAcquireOrRenew), and a line for each change. */
static void elect(struct election *e)
{
	struct lease *l = &e->lease;
	const char *ns = e->ns, *name = e->name;
	struct timespec wall;
	enum lease_result r;

	clock_gettime(CLOCK_REALTIME, &wall);
	e->last_try = http_clock_ms();
	r = lease_try(l, e->last_try, (int64_t)wall.tv_sec, wall.tv_nsec / 1000);
	if (r == LEASE_FAILED) {
		if (!e->failing)
			say("Lease %s/%s: %s; trying again every %ds%s", ns, name, lease_error(l), LEASE_RETRY,
			    e->said == 1 ? ", acting only while the last renewal is under 10s old" : "");
		e->failing = 1;
		return;
	}
	e->failing = 0;
	if (r == LEASE_LEADING) {
		if (e->said != 1)
			say("Leading: this replica (%s) holds lease %s/%s and now lists and acts", e->id, ns, name);
		e->said = 1;
		return;
	}
	if (r == LEASE_LOST) {
		say("Lease %s/%s: another replica wrote it between our read and our write (409); this replica (%s) does not act",
		    ns, name, e->id);
	} else if (e->said != 0 || strcmp(e->holder, lease_holder(l)) != 0) {
		char who[JSON_LEASE_ID_MAX + 1];
		say("Following: lease %s/%s is held by %s; this replica (%s) waits and does not act, and takes over once the lease is not renewed for %ds",
		    ns, name, say_printable(lease_holder(l), who, sizeof who), e->id, LEASE_DURATION);
		snprintf(e->holder, sizeof e->holder, "%s", lease_holder(l));
	}
	e->said = 0;
}

/* Whether this replica may list and act now: no election, or it holds the lease. */
static int leading(struct election *e, const struct settings *s)
{
	if (!s->leader_elect)
		return 1;
	if (lease_held(&e->lease, http_clock_ms()))
		return 1;
	if (e->said == 1) {
		say("Stopped leading: lease %s/%s was not renewed within %ds; no write until it is held again",
		    e->ns, e->name, LEASE_RENEW_DEADLINE);
		e->said = 0;
		e->holder[0] = '\0';
	}
	return 0;
}

/*
 * pass.c asks this before every patch and delete. A renewal older than the retry period is
 * done first, then whether the lease is still held within the renew deadline by this
 * replica's own clock decides: a replica that was paused (SIGSTOP, a frozen VM) must find out
 * before it writes on facts another replica may already have acted on.
 */
static int may_write(void *ctx)
{
	struct election *e = ctx;

	if (http_clock_ms() - e->last_try >= LEASE_RETRY * 1000)
		elect(e);
	return lease_held(&e->lease, http_clock_ms());
}

/* Gives the lease up on the way out, so the other replica need not wait for it to lapse. */
static void release(struct election *e)
{
	struct timespec wall;
	int r;

	cut = 0;
	clock_gettime(CLOCK_REALTIME, &wall);
	r = lease_release(&e->lease, (int64_t)wall.tv_sec, wall.tv_nsec / 1000);
	if (r == 1)
		say("Released lease %s/%s: another replica may take over at once", e->ns, e->name);
	else if (r < 0)
		say("Releasing lease %s/%s failed: %s; another replica takes over once it lapses (%ds)", e->ns,
		    e->name, lease_error(&e->lease), LEASE_DURATION);
}

/* Sets up the election: the identity is the pod's name (or the host's) and a random suffix. */
static int election_init(struct election *e, struct kube *kc, const struct settings *s, char *err, size_t errlen)
{
	char host[256] = "";
	const char *base = env("POD_NAME");

	if (!base || !*base) {
		if (gethostname(host, sizeof host - 1) < 0)
			host[0] = '\0';
		base = host;
	}
	if (lease_identity(e->id, sizeof e->id, base) < 0) {
		snprintf(err, errlen, "no identity for leader election from POD_NAME or the host name '%.64s' (empty, too long, a space, or no random bytes)", base);
		return -1;
	}
	e->ns = s->lease_namespace;
	e->name = s->lease_name;
	if (lease_init(&e->lease, kc, e->ns, e->name, e->id) < 0) {
		snprintf(err, errlen, "%s", lease_error(&e->lease));
		return -1;
	}
	e->said = -1;
	e->last_try = http_clock_ms() - LEASE_RETRY * 1000;
	say("Leader election on: lease %s/%s (namespace from %s) as %s; lease %ds, renew deadline %ds, retry %ds",
	    e->ns, e->name, s->lease_ns_source, e->id, LEASE_DURATION, LEASE_RENEW_DEADLINE, LEASE_RETRY);
	return 0;
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
		    pass_limit_text(s, lim, sizeof lim), (long long)s->storm_cooldown);
	say("noderecover %s starting%s: taint after %llds, %s, %s, opt-out label %s=true, annotation %s, Events %s, self node %s%s%s, poll %llds, page size %ld; cluster %s%s%s from %s, authenticating with %s%s%s",
	    NODERECOVER_VERSION, s->dry_run == DRY_RUN_CLIENT ? " a dry run (no write is sent)"
	    : s->dry_run == DRY_RUN_SERVER ? " a server dry run (every write with dryRun=All)" : "",
	    (long long)s->taint_after, prune, storm, s->exclude_label, s->annotation,
	    !s->events ? "off" : s->dry_run != DRY_RUN_NONE ? "off in a dry run" : "on (namespace " EVENTS_NAMESPACE ")",
	    s->self_node[0] ? s->self_node : "unknown (set NODE_RECOVERY_SELF_NODE from spec.nodeName)",
	    s->self_node[0] ? " from " : "", s->self_node[0] ? s->self_source : "",
	    (long long)s->poll, s->page_size, t->server,
	    t->tls_server_name[0] ? " verified as " : "", t->tls_server_name, t->source,
	    t->cert_pem ? "a client certificate" : t->token_file[0] ? "the token file" : "the kubeconfig's token",
	    s->listen && s->mode == MODE_RUN ? "; /metrics, /livez and /readyz on " : "", s->listen && s->mode == MODE_RUN ? s->listen : "");
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

/* `noderecover plan`: 0 when the cluster was read and the plan printed, else 1. */
static int plan(struct pass_loop *loop)
{
	struct plan pl = { 0 };
	struct pass_plan_result r;
	int rc = 1;

	if (pass_plan(loop, plan_row, &pl, &r) == 0) {
		rc = plan_print(stdout, &pl, &r, loop->s) < 0;
		if (rc)
			say("Printing the plan failed (out of memory, or stdout could not be written)");
	}
	kube_close(loop->kc);
	plan_free(&pl);
	return rc;
}

/* A pass of run, counted for /metrics and /readyz. */
static void pass_counted(struct pass_loop *loop, struct pass_result *res)
{
	int64_t start = http_clock_ms();

	pass_run(loop, res);
	metrics_list_result(res->listed);
	metrics_pass_done(!res->failed ? METRICS_PASS_OK : res->held ? METRICS_PASS_HELD : METRICS_PASS_FAILED,
	    http_clock_ms() - start, time(NULL));
}

int main(int argc, char **argv)
{
	static struct settings s;
	static struct kube_target t;
	static struct kube kc;
	static struct pass_loop loop;
	static struct events events;
	char host[EVENTS_INSTANCE_MAX + 1] = "";
	static struct election el;
	struct pass_result res;
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
	    kube_init(&kc, &t, &cut, err, sizeof err) < 0) {
		fprintf(stderr, "noderecover: %s\n", err);
		return 2;
	}
	kube_dry_run(&kc, s.dry_run == DRY_RUN_SERVER);
	metrics_init(NODERECOVER_VERSION, s.poll, KUBE_LIST_SECONDS, http_clock_ms() / 1000);
	kube_observe(&kc, metrics_api, NULL);
	/* before anything is sent: an address that cannot be bound is a bad setting */
	if (s.mode == MODE_RUN && s.listen && listen_start(s.listen, err, sizeof err) < 0) {
		fprintf(stderr, "noderecover: %s\n", err);
		return 2;
	}
	struct sigaction sa = { 0 };
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* the sockets send with MSG_NOSIGNAL; a closed stdout or stderr pipe must give EPIPE, not kill */
	signal(SIGPIPE, SIG_IGN);

	loop.kc = &kc;
	loop.s = &s;
	loop.stop = &stop;
	if (s.mode == MODE_PLAN)
		return plan(&loop);
	say_start(&s, &t);
	if (!permitted(&kc, &s)) {
		kube_close(&kc);
		return 2;
	}
	if (s.leader_elect) {
		if (election_init(&el, &kc, &s, err, sizeof err) < 0) {
			fprintf(stderr, "noderecover: %s\n", err);
			kube_close(&kc);
			return 2;
		}
		loop.may_write = may_write;
		loop.may_write_ctx = &el;
	}
	/* in a pod the host name is the pod's name: the reportingInstance client-go would use */
	if (gethostname(host, sizeof host - 1) < 0)
		host[0] = '\0';
	events_init(&events, &kc, &stop, host, s.self_node, s.events && s.dry_run == DRY_RUN_NONE);
	loop.events = &events;
	if (s.mode == MODE_ONCE) {
		failed = 0;
		if (s.leader_elect)
			elect(&el);
		if (leading(&el, &s))
			failed = pass_run(&loop, &res) < 0;
		if (s.leader_elect)
			release(&el);
		kube_close(&kc);
		/* a pass a signal cut short did not do all it should have */
		if (stop)
			say("noderecover stopping on a signal; the pass did not finish");
		return failed || stop;
	}
	int64_t next = 0;   /* monotonic ms when the next pass is due */
	while (!stop) {
		int64_t wake = INT64_MAX;

		/* the loop is alive, leading or not: what /livez asks */
		metrics_pass_started(http_clock_ms() / 1000);
		/* with an election, a try every retry period, between passes too */
		if (s.leader_elect && http_clock_ms() - el.last_try >= LEASE_RETRY * 1000)
			elect(&el);
		metrics_leader(leading(&el, &s));
		if (!leading(&el, &s)) {
			next = 0;   /* once it leads, a pass at once: the last leader may have left work */
		} else if (http_clock_ms() >= next) {
			next = http_clock_ms() + s.poll * 1000;
			pass_counted(&loop, &res);
			/* a node about to cross its threshold is acted on then, not up to a poll
			 * later; the poll stays the longest wait for news */
			if (res.due_in >= 0 && http_clock_ms() + res.due_in * 1000 < next)
				next = http_clock_ms() + res.due_in * 1000;
		}
		if (leading(&el, &s))
			wake = next;
		if (s.leader_elect && el.last_try + LEASE_RETRY * 1000 < wake)
			wake = el.last_try + LEASE_RETRY * 1000;
		sleep_until(wake);
	}
	if (s.leader_elect)
		release(&el);
	kube_close(&kc);
	say("noderecover stopping on a signal");
	return 0;
}
