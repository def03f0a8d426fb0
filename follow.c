/*
 * Following the nodes (follow.h): the shell that carries out the core's decisions (core.c) on
 * the watch's connection, and tells the core how each went, with the time. Owns that
 * connection and the clock readings; decides nothing itself.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "follow.h"
#include "metrics.h"
#include "say.h"

/* The core's log lines, one printable line each (a node's name comes from the cluster). */
__attribute__((format(printf, 2, 3)))
static void follow_say(void *ctx, const char *fmt, ...)
{
	char line[SAY_LINE_MAX], clean[SAY_LINE_MAX];
	va_list ap;

	(void)ctx;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	say("%s", say_printable(line, clean, sizeof clean));
}

int follow_init(struct follow *f, struct pass_loop *l, const struct kube_target *t, volatile sig_atomic_t *stop,
    kube_observe_fn observe, char *err, size_t errlen)
{
	const struct settings *s = l->s;
	const struct core_timing tm = {
		.poll_ms = s->poll * 1000, .relist_ms = s->relist * 1000,
		.silence_ms = clock_span(FOLLOW_SILENCE_MS),
		.backoff_min_ms = clock_span(FOLLOW_BACKOFF_MIN_MS), .backoff_max_ms = clock_span(FOLLOW_BACKOFF_MAX_MS),
		.healthy_ms = clock_span(FOLLOW_HEALTHY_MS), .short_ms = clock_span(FOLLOW_SHORT_MS),
		.settle_ms = clock_span(FOLLOW_SETTLE_MS), .settle_max_ms = clock_span(FOLLOW_SETTLE_MAX_MS),
		.timeout_min_s = FOLLOW_TIMEOUT_MIN, .timeout_max_s = FOLLOW_TIMEOUT_MAX,
		.cheap_min_nodes = FOLLOW_CHEAP_MIN_NODES, .cheap_wait_ms = clock_span(FOLLOW_CHEAP_WAIT_MS),
	};
	/* jitter only: replicas and restarts must not draw the same, nothing more */
	uint64_t seed = (uint64_t)clock_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();

	memset(f, 0, sizeof *f);
	if (kube_init(&f->kc, t, stop, err, errlen) < 0)
		return -1;
	kube_observe(&f->kc, observe, NULL);
	f->loop = l;
	f->keys = (struct node_keys){ s->prune_label, s->annotation, s->exclude_label };
	core_init(&f->core, &tm, seed, follow_say, NULL);
	l->table = core_table(&f->core);
	metrics_watching(1, clock_span(FOLLOW_READY_SILENCE_MS) / 1000, clock_ms() / 1000);
	return 0;
}

static void close_stream(struct follow *f)
{
	if (f->open)
		kube_watch_close(&f->w);
	f->open = 0;
}

/* The stream is over, or could not be opened: told to the core (a stop is not: the loop ends). */
static void ended(struct follow *f, enum kube_watch_end end, long retry_after)
{
	static const enum core_end as[] = { [KUBE_WATCH_ENDED] = CORE_END_CLEAN, [KUBE_WATCH_EXPIRED] = CORE_END_EXPIRED,
		[KUBE_WATCH_BROKEN] = CORE_END_BROKEN, [KUBE_WATCH_FAILED] = CORE_END_FAILED };

	close_stream(f);
	if (*f->loop->stop || end == KUBE_WATCH_OPEN)
		return;
	if (end == KUBE_WATCH_ENDED || end == KUBE_WATCH_FAILED)
		metrics_watch_restart();
	core_ended(&f->core, as[end], kube_error(&f->kc), retry_after, clock_ms());
}

/* One event of the stream, counted and told to the core. */
static void event_to_core(void *ctx, const struct kube_event *ev)
{
	static const enum metrics_watch_event counted[] = { METRICS_ADDED, METRICS_MODIFIED, METRICS_DELETED,
		METRICS_BOOKMARK, METRICS_ERROR };
	static const enum core_event_type as[] = { CORE_ADDED, CORE_MODIFIED, CORE_DELETED, CORE_BOOKMARK, CORE_ERROR };
	struct follow *f = ctx;
	int64_t now = clock_ms();

	metrics_watch_event(counted[ev->type], now / 1000);
	core_event(&f->core, &(struct core_event){ as[ev->type], ev->rv, ev->f, ev->why }, now);
}

/* A list into the table (a pass: it decides and acts too). */
static void list(struct follow *f, enum core_why why)
{
	static const enum metrics_relist counted[] = { [CORE_WHY_START] = METRICS_RELIST_START,
		[CORE_WHY_EXPIRED] = METRICS_RELIST_EXPIRED, [CORE_WHY_BROKEN] = METRICS_RELIST_BROKEN,
		[CORE_WHY_PERIODIC] = METRICS_RELIST_PERIODIC, [CORE_WHY_FAILED] = METRICS_RELIST_FAILED,
		[CORE_WHY_CONFIRM] = METRICS_RELIST_CONFIRM };
	struct pass_result res;

	close_stream(f);
	pass_run(f->loop, &res);
	metrics_relist(res.listed ? counted[why] : METRICS_RELIST_FAILED);
	core_listed(&f->core, res.listed, res.rv, res.date, res.date_at, res.due_in, clock_ms());
}

static void watch(struct follow *f, const struct core_do *d)
{
	enum kube_watch_end r;
	int64_t date;
	long retry_after;

	if (f->open) {
		/* the core gave the stream up (it went silent) */
		close_stream(f);
		metrics_watch_restart();
	}
	r = kube_watch_open(&f->kc, &f->w, d->rv, d->timeout_s, &f->keys, event_to_core, f, &date, &retry_after);
	if (r != KUBE_WATCH_OPEN) {
		ended(f, r, retry_after);
		return;
	}
	f->open = 1;
	core_opened(&f->core, date, clock_ms());
}

/* A round of decisions over the table: every node (the poll's), or what changed and every Unknown one. */
static void round_of(struct follow *f, const struct core_do *d)
{
	struct pass_result res;

	pass_table(f->loop, d->all, d->confirmed, d->server_now, &res);
	core_rounded(&f->core, d->all, res.due_in, res.confirm, clock_ms());
}

/* The store's current resourceVersion, on the loop's connection (the stream stays open on its own). */
static void fresh(struct follow *f)
{
	char rv[NODE_RV_MAX + 1];
	int ok = kube_nodes_rv(f->loop->kc, rv) == KUBE_OK;

	if (!ok && !*f->loop->stop)
		say("Reading the nodes' resourceVersion to confirm a taint failed: %s; trying again after a backoff", kube_error(f->loop->kc));
	core_fresh(&f->core, ok, rv, clock_ms());
}

int64_t follow_step(struct follow *f, int leading, int64_t until)
{
	struct core_do d;

	core_lead(&f->core, leading, clock_ms());
	while (!*f->loop->stop) {
		int64_t now = clock_ms();

		if (now >= until)
			return until;
		core_next(&f->core, now, &d);
		switch (d.kind) {
		case CORE_DO_WAIT:
			close_stream(f);
			return d.until < until ? d.until : until;
		case CORE_DO_LIST:
			list(f, d.why);
			break;
		case CORE_DO_WATCH:
			watch(f, &d);
			break;
		case CORE_DO_ROUND:
			round_of(f, &d);
			break;
		case CORE_DO_FRESH:
			fresh(f);
			break;
		case CORE_DO_READ: {
			enum kube_watch_end r = kube_watch_read(&f->w, d.until < until ? d.until : until);
			if (r != KUBE_WATCH_OPEN)
				ended(f, r, -1);
			break;
		}
		}
	}
	return until;
}

void follow_stop(struct follow *f)
{
	close_stream(f);
	core_lead(&f->core, 0, clock_ms());
}
