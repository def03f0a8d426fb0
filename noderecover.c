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
#include "clock.h"
#include "completion.h"
#include "election.h"
#include "fence.h"
#include "follow.h"
#include "kube.h"
#include "lease.h"
#include "listen.h"
#include "manifests.h"
#include "metrics.h"
#include "pass.h"
#include "plan.h"
#include "plugin.h"
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

/* SIGTERM and SIGINT stop the loop (on_signal); the sockets send with MSG_NOSIGNAL, and a closed
 * stdout or stderr pipe must give EPIPE, not kill. */
static void catch_signals(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Waits until the monotonic clock reaches wake (ms), or until a signal stops the loop. The
 * signals are blocked from the check of stop to the wait, and the wait takes them
 * (sigtimedwait): one that lands between the check and the wait ends the wait at once instead
 * of being lost for the rest of it.
 */
static void wait_until(int64_t wake)
{
	sigset_t sigs, old;
	int64_t left;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, &old);
	while (!stop && (left = wake - clock_ms()) > 0) {
		struct timespec ts = { (time_t)(left / 1000), (long)(left % 1000) * 1000000 };
		if (sigtimedwait(&sigs, NULL, &ts) > 0)
			on_signal(0);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* After "usage: noderecover" or, run as a kubectl plugin, "usage: kubectl noderecover". */
static const char usage[] =
    " [run|once|plan|manifests|fence|version|completion bash|zsh|help] [options]\n"
    "\n"
    "Taints nodes whose Ready condition stayed Unknown with\n"
    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute, clears it when they return,\n"
    "and optionally deletes removable nodes that stayed gone.\n"
    "\n"
    "  run                      list, then follow a watch of the nodes (a pass every poll\n"
    "                           with --watch=false) until SIGTERM (default)\n"
    "  once                     one pass; exit 0 ok, 1 a pass failed, 2 bad settings or a denied permission\n"
    "  plan                     one read, nothing written: each node, what a pass would do\n"
    "                           now and why, or when; exit 0 read, 1 could not read, 2 settings\n"
    "  manifests                print the cluster objects (YAML) that run it with these settings\n"
    "  fence                    the fence agent, one per node (docs/fence.md): fences its own\n"
    "                           node when cut off; also the binary run as noderecover-fence\n"
    "  version, --version       print the version\n"
    "  completion bash|zsh      print the shell's completion script\n"
    "\n"
    "A DURATION is seconds (300) or whole h, m and s in that order (5m, 1h30m, 90s).\n"
    "Each option: its flag, its variable, (its default), and what it does; a flag beats the\n"
    "variable, the variable beats the default.\n"
    "\n";

/* The environment, as settings.c and the start-up read it. */
static const char *from_environment(const char *name)
{
	return getenv(name);
}

static void say_start(const struct settings *s, const struct kube_target *t)
{
	const struct settings_row *self = settings_find("--self-node");
	char prune[400], storm[128], lim[32], watching[64] = "", unknown[128], fence[256];

	snprintf(unknown, sizeof unknown, "unknown (set %s from %s)", self->env, self->pod_value);
	if (settings_pruning(s))
		snprintf(prune, sizeof prune, "prune after %llds (label %s=true)", (long long)s->prune_after, s->prune_label);
	else
		snprintf(prune, sizeof prune, "pruning off");
	if (s->watch && s->mode == MODE_RUN)
		snprintf(watching, sizeof watching, " (following a watch, a whole list every %llds)", (long long)s->relist);
	if (!s->max_unknown && s->max_unknown_percent >= 100)
		snprintf(storm, sizeof storm, "storm guard off (--max-unknown 100%%)");
	else
		snprintf(storm, sizeof storm, "storm guard above %s Unknown (cooldown %llds)",
		    pass_limit_text(s, lim, sizeof lim), (long long)s->storm_cooldown);
	if (s->fence == FENCE_OFF)
		snprintf(fence, sizeof fence, "fence off%s", s->fence_unplaced ? " (no --fence-namespace outside a pod)" : "");
	else
		snprintf(fence, sizeof fence, "fence %s (Leases in namespace %s from %s, safe time at least %llds)",
		    s->fence == FENCE_REQUIRE ? "require" : "prefer", s->fence_namespace, s->fence_ns_source, (long long)s->fence_min_safe);
	say("noderecover %s starting%s: taint after %llds, %s, %s, %s, opt-out label %s=true, annotation %s, Events %s, self node %s%s%s, poll %llds%s, page size %ld; cluster %s%s%s from %s, authenticating with %s%s%s",
	    NODERECOVER_VERSION, s->dry_run == DRY_RUN_CLIENT ? " a dry run (no write is sent)"
	    : s->dry_run == DRY_RUN_SERVER ? " a server dry run (every write with dryRun=All)" : "",
	    (long long)s->taint_after, prune, storm, fence, s->exclude_label, s->annotation,
	    !s->events ? "off" : s->dry_run != DRY_RUN_NONE ? "off in a dry run" : "on (namespace " EVENTS_NAMESPACE ")",
	    s->self_node[0] ? s->self_node : unknown,
	    s->self_node[0] ? " from " : "", s->self_node[0] ? s->self_source : "",
	    (long long)s->poll, watching, s->page_size, t->server,
	    t->tls_server_name[0] ? " verified as " : "", t->tls_server_name, t->source,
	    t->plugin ? (t->plugin->cert_pem ? "an exec plugin's client certificate" : "an exec plugin's token")
	    : t->cert_pem ? "a client certificate" : t->token_file[0] ? "the token file" : "the kubeconfig's token",
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
		plan_fence(&pl, loop->kc, loop->s);
		rc = plan_print(stdout, &pl, &r, loop->s) < 0;
		if (rc)
			say("Printing the plan failed (out of memory, or stdout could not be written)");
	}
	kube_close(loop->kc);
	plan_free(&pl);
	return rc;
}

/*
 * The Lease's last requests after a stop: the first signal ended the loop and cut the request
 * in flight; the release gets a request of its own, which a second signal cuts short.
 */
static void release(struct election *el)
{
	cut = 0;
	election_release(el);
}

/* The identity's base for leader election: the pod's name, else the host's. */
static const char *identity_base(char *host, size_t cap)
{
	const char *base = from_environment(SETTINGS_POD_NAME);

	if (base && *base)
		return base;
	if (gethostname(host, cap - 1) < 0)
		host[0] = '\0';
	return host;
}

/* How often the loop looks at the election's answer while it waits or reads: a change of
 * leader is acted on within this (the election's own thread renews on its own time). */
#define LEAD_CHECK_MS 500

/*
 * `run` with the watch (follow.c): while this replica may act, the follower lists, watches and
 * decides; a standby neither lists nor watches, and a leader that stops leading drops its
 * watch within LEAD_CHECK_MS.
 */
static void run_following(struct follow *fw, struct election *el)
{
	while (!stop) {
		int64_t now = clock_ms(), until = el ? now + LEAD_CHECK_MS : INT64_MAX;
		struct election_state e = { 1, 0 };

		metrics_pass_started(now / 1000);
		if (el)
			e = election_step(el, now);
		metrics_leader(e.leading);
		int64_t next = follow_step(fw, e.leading, until);
		if (next > clock_ms())
			wait_until(next < until ? next : until);
	}
	follow_stop(fw);
}

/* `run` polling (--watch=false): a pass every poll (sooner when a threshold is due) while this replica may act, until a signal. */
static void run(struct pass_loop *loop, struct election *el)
{
	const struct settings *s = loop->s;
	struct pass_result res;
	int64_t next = 0;   /* monotonic ms when the next pass is due */

	while (!stop) {
		int64_t now = clock_ms(), wake = INT64_MAX;
		struct election_state e = { 1, 0 };

		/* the loop is alive, leading or not: what /livez asks */
		metrics_pass_started(now / 1000);
		if (el)
			e = election_step(el, now);
		metrics_leader(e.leading);
		if (e.changed && e.leading)
			next = 0;   /* a pass at once: the last leader may have left work */
		if (e.leading && now >= next) {
			next = now + s->poll * 1000;
			pass_run(loop, &res);
			/* a node about to cross its threshold is acted on then, not up to a poll
			 * later; the poll stays the longest wait for news */
			now = clock_ms();
			if (res.due_in >= 0 && now + res.due_in * 1000 < next)
				next = now + res.due_in * 1000;
		}
		if (e.leading)
			wake = next;
		if (el && now + LEAD_CHECK_MS < wake)
			wake = now + LEAD_CHECK_MS;
		wait_until(wake);
	}
}

/*
 * What the process keeps from start to end: the settings, the connections, the pass's memory
 * (most of it: PASS_KEEP_MAX nodes' facts), the election and the watch. About 750 KB, allocated
 * once at start-up and never freed; pages nothing writes stay untouched (no resident memory).
 * One owner, main, instead of a static in each module.
 */
struct process {
	struct settings s;
	struct kube_target t;
	struct kube kc;
	struct pass_loop loop;
	struct events events;
	struct election el;
	struct follow fw;
	struct listener listener;
};

/* The gate of every change to a node: asked as its bytes are about to leave (kube_gate). */
static int leads(void *el)
{
	return election_may_write(el, clock_ms());
}

/*
 * Whether the program was started as kubectl's plugin (kubectl finds `kubectl-noderecover` on
 * the PATH and runs it for `kubectl noderecover ...`): it is the same program, only its help
 * names it as the user typed it.
 */
static int as_kubectl_plugin(const char *argv0)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;

	base = base ? base + 1 : argv0 ? argv0 : "";
	return strcmp(base, "kubectl-noderecover") == 0;
}

/*
 * The log format asked for, read before the settings are, so that a refusal of the settings
 * themselves is written in it too: the flag's value, else the variable's; text otherwise.
 */
static enum say_format log_format_asked(int argc, char **argv)
{
	const char *v = from_environment("NODE_RECOVERY_LOG_FORMAT");

	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--log-format=", 13) == 0)
			v = argv[i] + 13;
		else if (strcmp(argv[i], "--log-format") == 0 && i + 1 < argc)
			v = argv[++i];
	}
	return v && strcmp(v, "json") == 0 ? SAY_JSON : SAY_TEXT;
}

/* The commands that never reach a cluster (help, completion, manifests, version): their exit
 * status, or -1 for any other mode. */
static int offline(const struct settings *s, const char *argv0, int fence_manifests)
{
	char err[1024];

	if (s->mode == MODE_HELP) {
		printf("usage: %s%s", as_kubectl_plugin(argv0) ? "kubectl noderecover" : "noderecover", usage);
		settings_help(stdout);
		return 0;
	}
	if (s->mode == MODE_COMPLETION)
		return completion_write(stdout, s->shell) < 0;
	if (s->mode == MODE_MANIFESTS) {
		if (fence_manifests && settings_fence_action(s, "--fence-action", err, sizeof err) < 0) {
			say_fatal("%s", err);
			return 2;
		}
		if (manifests_write(stdout, s, NODERECOVER_IMAGE, fence_manifests) == 0)
			return 0;
		say_fatal("writing the manifests failed");
		return 1;
	}
	if (s->mode == MODE_VERSION) {
		printf("noderecover %s\n", NODERECOVER_VERSION);
		return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	/* static: what it points to stays reachable to the end, as the ASan build's leak check needs */
	static struct process *pr;
	char host[EVENTS_INSTANCE_MAX + 1] = "";
	char base[256] = "";
	struct pass_result res;
	char err[1024];
	int failed, fence_manifests;

	if ((pr = calloc(1, sizeof *pr)) == NULL) {
		fprintf(stderr, "noderecover: out of memory at start-up\n");
		return 1;
	}
	say_format(log_format_asked(argc, argv));
	fence_manifests = manifests_fence_flag(&argc, argv);
	if (settings_parse(&pr->s, argc, argv, from_environment, err, sizeof err) < 0) {
		say_fatal("%s", err);
		return 2;
	}
	say_format(pr->s.log_format == LOG_FORMAT_JSON ? SAY_JSON : SAY_TEXT);
	if ((failed = offline(&pr->s, argv[0], fence_manifests)) >= 0)
		return failed;
	clock_scale(from_environment("NODERECOVER_TEST_DEADLINE_SCALE"));   /* before an exec plugin's deadline */
	if (pr->s.mode == MODE_FENCE) {
		if (settings_target(&pr->s, from_environment, &pr->t, err, sizeof err) < 0) {
			say_fatal("%s", err);
			return 2;
		}
		catch_signals();
		return fence_run(&pr->s, &pr->t, NODERECOVER_VERSION, &stop, &cut);
	}
	if (settings_target(&pr->s, from_environment, &pr->t, err, sizeof err) < 0 ||
	    kube_init(&pr->kc, &pr->t, &cut, err, sizeof err) < 0) {
		say_fatal("%s", err);
		return 2;
	}
	kube_dry_run(&pr->kc, pr->s.dry_run == DRY_RUN_SERVER);
	metrics_init(NODERECOVER_VERSION, pr->s.poll, KUBE_LIST_SECONDS, clock_ms() / 1000);
	kube_observe(&pr->kc, metrics_api, NULL);
	/* before anything is sent: an address that cannot be bound is a bad setting */
	if (pr->s.mode == MODE_RUN && pr->s.listen && listen_start(&pr->listener, pr->s.listen, err, sizeof err) < 0) {
		say_fatal("%s", err);
		return 2;
	}
	catch_signals();

	pr->loop.kc = &pr->kc;
	pr->loop.s = &pr->s;
	pr->loop.stop = &stop;
	if (pr->s.mode == MODE_PLAN) {
		/* on stderr, so the table or JSON on stdout stays the plan alone */
		say("plan of the cluster %s from %s", pr->t.server, pr->t.source);
		return plan(&pr->loop);
	}
	say_start(&pr->s, &pr->t);
	if (!permitted(&pr->kc, &pr->s)) {
		kube_close(&pr->kc);
		return 2;
	}
	if (pr->s.leader_elect) {
		if (election_init(&pr->el, &pr->t, &cut, metrics_api, pr->s.lease_namespace, pr->s.lease_name, pr->s.lease_ns_source,
		    identity_base(base, sizeof base), err, sizeof err) < 0) {
			say_fatal("%s", err);
			kube_close(&pr->kc);
			return 2;
		}
		if (election_start(&pr->el, err, sizeof err) < 0) {
			fprintf(stderr, "noderecover: %s\n", err);
			kube_close(&pr->kc);
			return 2;
		}
		pr->loop.election = &pr->el;
		kube_gate(&pr->kc, leads, &pr->el);
	}
	/* in a pod the host name is the pod's name: the reportingInstance client-go would use */
	if (gethostname(host, sizeof host - 1) < 0)
		host[0] = '\0';
	events_init(&pr->events, &pr->kc, &stop, host, pr->s.self_node, settings_events_on(&pr->s));
	pr->loop.events = &pr->events;
	if (pr->s.mode == MODE_ONCE) {
		failed = 0;
		if (!pr->loop.election || election_step(pr->loop.election, clock_ms()).leading)
			failed = pass_run(&pr->loop, &res) < 0;
		if (pr->loop.election)
			release(pr->loop.election);
		kube_close(&pr->kc);
		/* a pass a signal cut short did not do all it should have */
		if (stop)
			say("noderecover stopping on a signal; the pass did not finish");
		return failed || stop;
	}
	if (pr->s.watch) {
		if (follow_init(&pr->fw, &pr->loop, &pr->t, &cut, metrics_api, err, sizeof err) < 0) {
			say_fatal("%s", err);
			kube_close(&pr->kc);
			return 2;
		}
		run_following(&pr->fw, pr->loop.election);
	} else {
		run(&pr->loop, pr->loop.election);
	}
	if (pr->loop.election)
		release(pr->loop.election);
	kube_close(&pr->kc);
	say("noderecover stopping on a signal");
	return 0;
}
