/*
 * Following the nodes (follow.h): when to list, when to watch and from where, what each event
 * changes in the table, and when the table is decided on. Owns the watch's connection, the
 * table and their timers; the decisions and the writes are pass.c's, the wire kube.c's.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "follow.h"
#include "metrics.h"
#include "say.h"

/* xorshift64*: jitter only, never a secret. */
static uint64_t next_rand(struct follow *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 2685821657736338717ull;
}

/* Uniform in [lo, hi]. */
static int64_t between(struct follow *f, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(next_rand(f) % (uint64_t)(hi - lo + 1));
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

int follow_init(struct follow *f, struct pass_loop *l, const struct kube_target *t, volatile sig_atomic_t *stop,
    kube_observe_fn observe, char *err, size_t errlen)
{
	const struct settings *s = l->s;

	memset(f, 0, sizeof *f);
	if (kube_init(&f->kc, t, stop, err, errlen) < 0)
		return -1;
	f->stop = stop;
	kube_observe(&f->kc, observe, NULL);
	f->loop = l;
	f->keys = (struct node_keys){ s->prune_label, s->annotation, s->exclude_label };
	f->relist_why = METRICS_RELIST_START;
	f->backoff_ms = FOLLOW_BACKOFF_MIN_MS;
	f->rng = (uint64_t)clock_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
	if (!f->rng)
		f->rng = 1;
	l->table = &f->table;
	metrics_watching(1, clock_span(FOLLOW_READY_SILENCE_MS) / 1000, clock_ms() / 1000);
	return 0;
}

/* The API server's time now: its last Date, advanced by the monotonic clock. */
static int64_t server_now(const struct follow *f)
{
	return f->date + (clock_ms() - f->mono0) / 1000;
}

/* A response's Date (-1: none, and the one before stays). */
static void set_clock(struct follow *f, int64_t date)
{
	if (date < 0)
		return;
	f->date = date;
	f->mono0 = clock_ms();
}

/* A failure: nothing is asked again before the backoff (or the server's Retry-After) passes. */
static void back_off(struct follow *f, long retry_after)
{
	int64_t now = clock_ms(), wait;

	/* two minutes without a failure: back to the shortest wait */
	if (now - f->healthy_since >= clock_span(FOLLOW_HEALTHY_MS))
		f->backoff_ms = FOLLOW_BACKOFF_MIN_MS;
	wait = clock_span(f->backoff_ms + between(f, 0, f->backoff_ms));
	if (retry_after >= 0)
		wait = (retry_after > KUBE_RETRY_AFTER_MAX ? KUBE_RETRY_AFTER_MAX : retry_after) * 1000;
	f->retry_at = now + wait;
	f->backoff_ms = min64(f->backoff_ms * 2, FOLLOW_BACKOFF_MAX_MS);
	f->healthy_since = now;
}

/* The stream is over: what kube_watch_open or kube_watch_read said, acted on. */
static void ended(struct follow *f, enum kube_watch_end end, long retry_after)
{
	int64_t now = clock_ms();

	if (end == KUBE_WATCH_OPEN)
		return;
	if (f->open)
		kube_watch_close(&f->w);
	f->open = 0;
	/* a stop is not a failure to report: the loop ends */
	if (*f->stop)
		return;
	switch (end) {
	case KUBE_WATCH_OPEN:
		return;
	case KUBE_WATCH_ENDED:
		metrics_watch_restart();
		/* a watch the server ends at once, again and again, must not become a loop */
		if (f->events == 0 && now - f->opened_at < 1000)
			back_off(f, -1);
		return;
	case KUBE_WATCH_EXPIRED:
		say("Watching nodes: %s; resourceVersion %s is too old (410 Expired), relisting", kube_error(&f->kc), f->rv);
		f->listed = 0;
		f->relist_why = METRICS_RELIST_EXPIRED;
		return;
	case KUBE_WATCH_BROKEN:
		say("Watch stream broken: %s; events may have been lost, so nothing is decided until a new list is read; relisting",
		    kube_error(&f->kc));
		f->listed = 0;
		f->relist_why = METRICS_RELIST_BROKEN;
		back_off(f, -1);
		return;
	case KUBE_WATCH_FAILED:
		back_off(f, retry_after);
		if (!f->failing)
			say("Watching nodes failed: %s; trying again from resourceVersion %s in %llds (logged once until it works)",
			    kube_error(&f->kc), f->rv, (long long)((f->retry_at - now + 999) / 1000));
		f->failing = 1;
		metrics_watch_restart();
		return;
	}
}

static void on_event(void *ctx, const struct kube_event *ev)
{
	static const enum metrics_watch_event type[] = { METRICS_ADDED, METRICS_MODIFIED, METRICS_DELETED,
		METRICS_BOOKMARK, METRICS_ERROR };
	struct follow *f = ctx;
	int64_t now = clock_ms();
	char why[300], name[NODE_NAME_MAX + 1];

	f->heard = now;
	f->events++;
	metrics_watch_event(type[ev->type], now / 1000);
	if (ev->type == KUBE_ERROR)
		return;   /* the stream ends: kube_watch_read says how */
	snprintf(f->rv, sizeof f->rv, "%s", ev->rv);
	if (ev->type == KUBE_BOOKMARK)
		return;
	if (ev->type == KUBE_DELETED) {
		table_remove(&f->table, ev->f->name);
	} else if (ev->why) {
		/* said when it stops being readable, not on each event while it stays so */
		if (table_remove(&f->table, ev->f->name))
			say("Could not read node %s (a watch event): %s; it is not acted on until it can be read",
			    ev->f->name[0] ? say_printable(ev->f->name, name, sizeof name) : "without a name", ev->why);
	} else if (table_put(&f->table, ev->f, why, sizeof why) < 0) {
		say("Could not keep node %s: %s; it is not acted on", say_printable(ev->f->name, name, sizeof name), why);
	}
	if (!f->settle_at)
		f->settle_max = now + clock_span(FOLLOW_SETTLE_MAX_MS);
	f->settle_at = min64(now + clock_span(FOLLOW_SETTLE_MS), f->settle_max);
}

/* When (monotonic ms) a node crosses a threshold after a pass at now; 0: none ahead. A node due
 * now is woken for a little later, never in a loop without a pause. */
static int64_t due(const struct pass_result *res, int64_t now)
{
	if (res->due_in < 0)
		return 0;
	return now + (res->due_in > 0 ? res->due_in * 1000 : 250);
}

/* A list into the table (a pass: it decides and acts too). */
static void relist(struct follow *f)
{
	const struct settings *s = f->loop->s;
	struct pass_result res;
	int64_t now;

	if (f->open)
		kube_watch_close(&f->w);
	f->open = 0;
	pass_run(f->loop, &res);
	now = clock_ms();
	if (!res.listed) {
		metrics_relist(METRICS_RELIST_FAILED);
		f->relist_why = METRICS_RELIST_FAILED;
		back_off(f, -1);
		return;
	}
	metrics_relist(f->relist_why);
	f->listed = 1;
	/* the watch from a new list is said, but not after each taint's list: a line per taint is the taint's */
	if (f->relist_why != METRICS_RELIST_CONFIRM)
		f->said = 0;
	f->settle_at = f->settle_max = 0;
	snprintf(f->rv, sizeof f->rv, "%s", res.rv);
	f->date = res.date >= 0 ? res.date : time(NULL);
	f->mono0 = now;
	/* at least every --relist, staggered so replicas and restarts do not list together */
	f->relist_at = now + between(f, s->relist * 800, s->relist * 1000);
	f->round_at = now + s->poll * 1000;
	f->due_at = due(&res, now);
	f->retry_at = now;
}

static void watch(struct follow *f)
{
	int64_t date, now = clock_ms();
	long retry_after;
	enum kube_watch_end r;

	r = kube_watch_open(&f->kc, &f->w, f->rv, between(f, FOLLOW_TIMEOUT_MIN, FOLLOW_TIMEOUT_MAX), &f->keys, on_event, f,
	    &date, &retry_after);
	if (r != KUBE_WATCH_OPEN) {
		ended(f, r, retry_after);
		return;
	}
	set_clock(f, date);
	if (f->failing)
		say("Watching nodes again from resourceVersion %s", f->rv);
	else if (!f->said)
		say("Watching nodes from resourceVersion %s", f->rv);
	f->said = 1;
	f->failing = 0;
	f->open = 1;
	f->opened_at = now;
	f->heard = now;
	f->events = 0;
}

/* A round of decisions over the table: every node (the poll's), or what changed and every Unknown one. */
static void round_of(struct follow *f, int all)
{
	struct pass_result res;
	int64_t now;

	pass_table(f->loop, all, server_now(f), &res);
	now = clock_ms();
	f->settle_at = f->settle_max = 0;
	if (all)
		f->round_at = now + f->loop->s->poll * 1000;
	f->due_at = due(&res, now);
	/* a new taint or delete is decided on a list: the table may lag the cluster (pass.h) */
	if (res.confirm) {
		f->listed = 0;
		f->relist_why = METRICS_RELIST_CONFIRM;
	}
}

int64_t follow_step(struct follow *f, int64_t until)
{
	int64_t now = clock_ms(), next;

	if (!f->listed) {
		if (now < f->retry_at)
			return f->retry_at;
		relist(f);
		return clock_ms();
	}
	if (now >= f->relist_at) {
		f->listed = 0;
		f->relist_why = METRICS_RELIST_PERIODIC;
		return now;
	}
	if (f->open && now - f->heard >= clock_span(FOLLOW_SILENCE_MS)) {
		say("Watch stream silent for %llds (no event, no bookmark); resuming from resourceVersion %s",
		    (long long)(now - f->heard) / 1000, f->rv);
		ended(f, KUBE_WATCH_ENDED, -1);
	}
	if (now >= f->round_at)
		round_of(f, 1);
	else if ((f->settle_at && now >= f->settle_at) || (f->due_at && now >= f->due_at))
		round_of(f, 0);
	if (!f->listed)
		return clock_ms();
	if (!f->open && clock_ms() >= f->retry_at)
		watch(f);
	if (!f->listed)
		return clock_ms();
	next = min64(until, min64(f->round_at, f->relist_at));
	if (f->settle_at)
		next = min64(next, f->settle_at);
	if (f->due_at)
		next = min64(next, f->due_at);
	if (!f->open)
		return min64(next, f->retry_at);   /* past: at once, to watch again */
	ended(f, kube_watch_read(&f->w, min64(next, f->heard + clock_span(FOLLOW_SILENCE_MS))), -1);
	return clock_ms();
}

void follow_stop(struct follow *f)
{
	if (f->open)
		kube_watch_close(&f->w);
	f->open = 0;
	f->listed = 0;
	f->relist_why = METRICS_RELIST_START;
}
