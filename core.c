/*
 * The follower's decisions (core.h): a state machine over (state, input, now). No clock, no
 * socket, no global, no sleep: the shell (follow.c) feeds it and does what core_next says.
 */
#include <stdio.h>
#include <string.h>
#include "core.h"

/* xorshift64*: jitter only, never a secret. */
static uint64_t next_rand(struct core *c)
{
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 2685821657736338717ull;
}

/* Uniform in [lo, hi]. */
static int64_t jitter_between(struct core *c, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(next_rand(c) % (uint64_t)(hi - lo + 1));
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

void core_init(struct core *c, const struct core_timing *tm, uint64_t seed, core_say_fn say, void *say_ctx)
{
	memset(c, 0, sizeof *c);
	c->tm = *tm;
	c->say = say;
	c->say_ctx = say_ctx;
	c->rng = seed ? seed : 1;
	c->phase = CORE_IDLE;
	c->why = CORE_WHY_START;
	c->backoff_ms = tm->backoff_min_ms;
}

/*
 * A failure: nothing is asked again before the backoff (or the server's Retry-After) passes.
 * client-go's reflector: 0.8 s doubling to 30 s with a jitter of up to as much again, back to
 * the shortest after two minutes without a failure (or a stream that delivered events).
 */
static void back_off(struct core *c, long retry_after, int64_t now)
{
	int64_t wait;

	if (now - c->healthy_since >= c->tm.healthy_ms)
		c->backoff_ms = c->tm.backoff_min_ms;
	wait = c->backoff_ms + jitter_between(c, 0, c->backoff_ms);
	if (retry_after >= 0)
		wait = retry_after * 1000;
	c->retry_at = now + wait;
	c->backoff_ms = min64(c->backoff_ms * 2, c->tm.backoff_max_ms);
	c->healthy_since = now;
}

/* The table is no longer trusted: a list is next (at retry_at). */
static void relist(struct core *c, enum core_why why)
{
	c->phase = CORE_LIST;
	c->why = why;
	c->settle_at = c->settle_max = 0;
	c->confirm = CORE_CONFIRM_NONE;   /* the list decides */
}

/* A resourceVersion as etcd's and kine's revisions are written: a decimal number, no sign. */
static int decimal(const char *rv)
{
	if (!rv[0] || (rv[0] == '0' && rv[1]))
		return 0;
	for (; *rv; rv++)
		if (*rv < '0' || *rv > '9')
			return 0;
	return 1;
}

/* Whether decimal resourceVersion a is at or past b. */
static int at_or_past(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	return la != lb ? la > lb : strcmp(a, b) >= 0;
}

void core_lead(struct core *c, int leading, int64_t now)
{
	if (leading && c->phase == CORE_IDLE) {
		relist(c, CORE_WHY_START);
		c->retry_at = now;
	} else if (!leading && c->phase != CORE_IDLE) {
		c->phase = CORE_IDLE;
		c->settle_at = c->settle_max = c->due_at = 0;
		c->confirm = CORE_CONFIRM_NONE;
		/* a leader again lists afresh: what it knew may be old by then */
		table_free(&c->table);
	}
}

/* When a node crosses a threshold after a pass at now; 0: none ahead. A node due now is
 * woken for a little later, never in a loop without a pause. */
static int64_t due(int64_t due_in, int64_t now)
{
	if (due_in < 0)
		return 0;
	return now + (due_in > 0 ? due_in * 1000 : 250);
}

void core_next(struct core *c, int64_t now, struct core_do *d)
{
	int64_t next;

	memset(d, 0, sizeof *d);
	d->kind = CORE_DO_WAIT;
	d->until = INT64_MAX;
	if (c->phase == CORE_IDLE)
		return;
	if (c->phase == CORE_LIST) {
		if (now < c->retry_at) {
			d->until = c->retry_at;
			return;
		}
		d->kind = CORE_DO_LIST;
		d->why = c->why;
		return;
	}
	if (now >= c->relist_at) {
		/* a backoff still running is kept: the periodic list is no reason to hurry */
		relist(c, CORE_WHY_PERIODIC);
		core_next(c, now, d);
		return;
	}
	if (c->confirm == CORE_CONFIRM_WAIT && at_or_past(c->rv, c->confirm_rv)) {
		/* the stream has shown every change up to the store's revision: the table is fresh */
		c->confirm = CORE_CONFIRM_NONE;
		d->kind = CORE_DO_ROUND;
		d->confirmed = 1;
		d->server_now = c->date + (now - c->date_at) / 1000;
		return;
	}
	if (c->confirm == CORE_CONFIRM_WAIT && now >= c->confirm_until) {
		c->say(c->say_ctx, "The watch did not reach resourceVersion %s within %llds (it is at %s); confirming with a list",
		    c->confirm_rv, (long long)(c->tm.cheap_wait_ms / 1000), c->rv);
		relist(c, CORE_WHY_CONFIRM);
		core_next(c, now, d);
		return;
	}
	if (c->phase == CORE_STREAM && now - c->heard >= c->tm.silence_ms) {
		c->say(c->say_ctx, "Watch stream silent for %llds (no event, no bookmark); resuming from resourceVersion %s",
		    (long long)(now - c->heard) / 1000, c->rv);
		/* a silent stream is no failure of the server's: resumed at once */
		c->phase = CORE_WATCH;
		c->retry_at = now;
	}
	if (now >= c->round_at || (c->settle_at && now >= c->settle_at) || (c->due_at && now >= c->due_at)) {
		d->kind = CORE_DO_ROUND;
		d->all = now >= c->round_at;
		d->server_now = c->date + (now - c->date_at) / 1000;
		return;
	}
	if (c->confirm == CORE_CONFIRM_ASK && c->phase == CORE_STREAM && now >= c->confirm_at) {
		d->kind = CORE_DO_FRESH;
		return;
	}
	next = min64(c->round_at, c->relist_at);
	if (c->confirm == CORE_CONFIRM_WAIT)
		next = min64(next, c->confirm_until);
	if (c->confirm == CORE_CONFIRM_ASK && c->phase == CORE_STREAM)
		next = min64(next, c->confirm_at);
	if (c->settle_at)
		next = min64(next, c->settle_at);
	if (c->due_at)
		next = min64(next, c->due_at);
	if (c->phase == CORE_WATCH) {
		if (now >= c->retry_at) {
			d->kind = CORE_DO_WATCH;
			d->rv = c->rv;
			d->timeout_s = (long)jitter_between(c, c->tm.timeout_min_s, c->tm.timeout_max_s);
			return;
		}
		d->until = min64(next, c->retry_at);
		return;
	}
	d->kind = CORE_DO_READ;
	d->until = min64(next, c->heard + c->tm.silence_ms);
}

void core_listed(struct core *c, int ok, const char *rv, int64_t date, int64_t date_at, int64_t due_in, int64_t now)
{
	if (c->phase != CORE_LIST)
		return;
	if (!ok) {
		c->why = CORE_WHY_FAILED;
		back_off(c, -1, now);
		return;
	}
	/* the watch from a new list is said, but not after each taint's list: a line per taint is the taint's */
	if (c->why != CORE_WHY_CONFIRM)
		c->said = 0;
	c->phase = CORE_WATCH;
	c->settle_at = c->settle_max = 0;
	snprintf(c->rv, sizeof c->rv, "%s", rv);
	c->date = date;
	c->date_at = date_at;
	/* at least every --relist, staggered so replicas and restarts do not list together */
	c->relist_at = now + jitter_between(c, c->tm.relist_ms * 8 / 10, c->tm.relist_ms);
	c->round_at = now + c->tm.poll_ms;
	c->due_at = due(due_in, now);
	c->retry_at = now;
}

void core_opened(struct core *c, int64_t date, int64_t now)
{
	if (c->phase != CORE_WATCH)
		return;
	if (date >= 0) {
		c->date = date;
		c->date_at = now;
	}
	if (c->failing)
		c->say(c->say_ctx, "Watching nodes again from resourceVersion %s", c->rv);
	else if (!c->said)
		c->say(c->say_ctx, "Watching nodes from resourceVersion %s", c->rv);
	c->said = 1;
	c->failing = 0;
	c->too_large_said = 0;
	c->phase = CORE_STREAM;
	c->opened_at = now;
	c->heard = now;
	c->events = 0;
}

void core_event(struct core *c, const struct core_event *ev, int64_t now)
{
	char why[300];

	if (c->phase != CORE_STREAM)
		return;
	/* an ERROR ends the stream (core_ended says how): it is not news from the cluster, and a
	 * watch failing with ERROR forever must not look like a healthy one */
	if (ev->type == CORE_ERROR)
		return;
	c->heard = now;
	c->events++;
	/* a stream that delivers events is healthy: the next failure starts the backoff afresh */
	c->backoff_ms = c->tm.backoff_min_ms;
	c->expired_run = 0;
	if (ev->rv[0])
		snprintf(c->rv, sizeof c->rv, "%s", ev->rv);
	if (ev->type == CORE_BOOKMARK)
		return;
	if (ev->why && !ev->f->name[0]) {
		/* an object too large to read: which node it is cannot be known; a list skips it too,
		 * and a stream broken for it would be a relist at each of its events */
		if (!c->too_large_said)
			c->say(c->say_ctx, "Skipped a watch event: %s; that node is not acted on until it can be read (logged once a stream)", ev->why);
		c->too_large_said = 1;
		return;
	}
	if (ev->type == CORE_DELETED) {
		table_remove(&c->table, ev->f->name);
	} else if (ev->why) {
		/* said when it stops being readable, not on each event while it stays so */
		if (table_remove(&c->table, ev->f->name))
			c->say(c->say_ctx, "Could not read node %s (a watch event): %s; it is not acted on until it can be read",
			    ev->f->name, ev->why);
	} else if (table_put(&c->table, ev->f, why, sizeof why) < 0) {
		c->say(c->say_ctx, "Could not keep node %s: %s; it is not acted on", ev->f->name, why);
	}
	if (!c->settle_at)
		c->settle_max = now + c->tm.settle_max_ms;
	c->settle_at = min64(now + c->tm.settle_ms, c->settle_max);
}

void core_ended(struct core *c, enum core_end end, const char *error, long retry_after, int64_t now)
{
	int was_stream = c->phase == CORE_STREAM;
	/* a stream that delivered events, or stayed open a while, was a healthy one */
	int healthy = was_stream && (c->events > 0 || now - c->opened_at >= c->tm.short_ms);

	if (c->phase != CORE_STREAM && c->phase != CORE_WATCH)
		return;
	switch (end) {
	case CORE_END_CLEAN:
		c->phase = CORE_WATCH;
		/* a watch the server ends at once, again and again, must not become a loop */
		if (healthy)
			c->retry_at = now;
		else
			back_off(c, -1, now);
		return;
	case CORE_END_EXPIRED:
		c->say(c->say_ctx, "Watching nodes: %s; resourceVersion %s is too old (410 Expired), relisting", error, c->rv);
		relist(c, CORE_WHY_EXPIRED);
		/* a 410 after a stream that delivered events, or the first since one did (an API
		 * server restarted with a new watch cache), is listed for at once; a resourceVersion
		 * compacted again and again (a restored etcd, a datastore that compacts often) must
		 * not become a list after list: the repeats back off */
		if ((was_stream && c->events > 0) || !c->expired_run) {
			c->retry_at = now;
			c->expired_run = was_stream && c->events > 0 ? 0 : 1;
		} else {
			back_off(c, -1, now);
		}
		return;
	case CORE_END_BROKEN:
		c->say(c->say_ctx, "Watch stream broken: %s; events may have been lost, so nothing is decided until a new list is read; relisting",
		    error);
		relist(c, CORE_WHY_BROKEN);
		back_off(c, -1, now);
		return;
	case CORE_END_FAILED:
		c->phase = CORE_WATCH;
		/* a long healthy stream that is cut is watched again at once, as client-go does */
		if (healthy && retry_after < 0) {
			c->retry_at = now;
			return;
		}
		back_off(c, retry_after, now);
		if (!c->failing)
			c->say(c->say_ctx, "Watching nodes failed: %s; trying again from resourceVersion %s in %llds (logged once until it works)",
			    error, c->rv, (long long)((c->retry_at - now + 999) / 1000));
		c->failing = 1;
		return;
	}
}

void core_rounded(struct core *c, int all, int64_t due_in, int confirm, int64_t now)
{
	if (c->phase != CORE_WATCH && c->phase != CORE_STREAM)
		return;
	c->settle_at = c->settle_max = 0;
	if (all)
		c->round_at = now + c->tm.poll_ms;
	c->due_at = due(due_in, now);
	/* a new taint or delete is decided on fresh facts: the table may lag the cluster (pass.h).
	 * A backoff still running is kept (the list waits for it), so a failing API server is not
	 * asked for a list at each threshold crossing */
	if (!confirm || c->confirm != CORE_CONFIRM_NONE)
		return;
	if (c->phase == CORE_STREAM && (long)table_size(&c->table) >= c->tm.cheap_min_nodes && decimal(c->rv)) {
		c->confirm = CORE_CONFIRM_ASK;
		c->confirm_at = now;
	} else
		relist(c, CORE_WHY_CONFIRM);
}

void core_fresh(struct core *c, int ok, const char *rv, int64_t now)
{
	if (c->confirm != CORE_CONFIRM_ASK || (c->phase != CORE_WATCH && c->phase != CORE_STREAM))
		return;
	if (!ok) {
		/* the stream is kept; the question waits the backoff (the stream's own retry is its own) */
		int64_t retry_at = c->retry_at;
		back_off(c, -1, now);
		c->confirm_at = c->retry_at;
		c->retry_at = retry_at;
		return;
	}
	if (!decimal(rv)) {
		relist(c, CORE_WHY_CONFIRM);
		return;
	}
	snprintf(c->confirm_rv, sizeof c->confirm_rv, "%s", rv);
	c->confirm = CORE_CONFIRM_WAIT;
	c->confirm_until = now + c->tm.cheap_wait_ms;
}

enum core_phase core_phase(const struct core *c)
{
	return c->phase;
}

struct table *core_table(struct core *c)
{
	return &c->table;
}

void core_free(struct core *c)
{
	table_free(&c->table);
}
