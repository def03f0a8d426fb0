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
#include "kube.h"
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

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
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
    "  once                     one pass; exit 0 ok, 1 a pass failed, 2 bad settings\n"
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
    "  --output table|json      NODE_RECOVERY_OUTPUT (table): how plan prints\n"
    "  --listen ADDR            NODE_RECOVERY_LISTEN (empty: off): run serves /metrics, /livez and\n"
    "                           /readyz over plain HTTP on :PORT, IPv4:PORT or [IPv6]:PORT\n";

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
		    pass_limit_text(s, lim, sizeof lim), (long long)s->storm_cooldown);
	say("noderecover %s starting%s: taint after %llds, %s, %s, opt-out label %s=true, annotation %s, self node %s%s%s, poll %llds, page size %ld; cluster %s%s%s from %s, authenticating with %s%s%s",
	    NODERECOVER_VERSION, s->dry_run == DRY_RUN_CLIENT ? " a dry run (no write is sent)"
	    : s->dry_run == DRY_RUN_SERVER ? " a server dry run (every write with dryRun=All)" : "",
	    (long long)s->taint_after, prune, storm, s->exclude_label, s->annotation,
	    s->self_node[0] ? s->self_node : "unknown (set NODE_RECOVERY_SELF_NODE from spec.nodeName)",
	    s->self_node[0] ? " from " : "", s->self_node[0] ? s->self_source : "",
	    (long long)s->poll, s->page_size, t->server,
	    t->tls_server_name[0] ? " verified as " : "", t->tls_server_name, t->source,
	    t->cert_pem ? "a client certificate" : t->token_file[0] ? "the token file" : "the kubeconfig's token",
	    s->listen && s->mode == MODE_RUN ? "; /metrics, /livez and /readyz on " : "", s->listen && s->mode == MODE_RUN ? s->listen : "");
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

int main(int argc, char **argv)
{
	static struct settings s;
	static struct kube_target t;
	static struct kube kc;
	static struct pass_loop loop;
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
	    kube_init(&kc, &t, &stop, err, sizeof err) < 0) {
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
	signal(SIGPIPE, SIG_IGN);

	loop.kc = &kc;
	loop.s = &s;
	loop.stop = &stop;
	if (s.mode == MODE_PLAN)
		return plan(&loop);
	say_start(&s, &t);
	if (s.mode == MODE_ONCE) {
		failed = pass_run(&loop, &res) < 0;
		kube_close(&kc);
		/* a pass a signal cut short did not do all it should have */
		if (stop)
			say("noderecover stopping on a signal; the pass did not finish");
		return failed || stop;
	}
	while (!stop) {
		int64_t start = http_clock_ms(), wake = start + s.poll * 1000;

		metrics_pass_started(start / 1000);
		pass_run(&loop, &res);
		metrics_list_result(res.listed);
		metrics_pass_done(!res.failed ? METRICS_PASS_OK : res.held ? METRICS_PASS_HELD : METRICS_PASS_FAILED,
		    http_clock_ms() - start, time(NULL));
		/* a node about to cross its threshold is acted on then, not up to a poll later;
		 * the poll stays the longest wait for news */
		if (res.due_in >= 0 && http_clock_ms() + res.due_in * 1000 < wake)
			wake = http_clock_ms() + res.due_in * 1000;
		sleep_until(wake);
	}
	kube_close(&kc);
	say("noderecover stopping on a signal");
	return 0;
}
