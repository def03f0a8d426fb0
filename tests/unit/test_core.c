/*
 * core.c: the follower's state machine, one transition a test, time given by the test. The
 * must-fail rows are the defects issue 22 measured on the build before it: a 410 relisted at
 * once (262 lists in 20 s), an ERROR counted as hearing, a healthy stream's cut waiting a
 * backoff, a Node too large to read relisting, a confirmation that skips a running backoff.
 * tests/sim drives the same code through hours of faults.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "core.h"

static const struct core_timing tm = {
	.poll_ms = 15000, .relist_ms = 600000, .silence_ms = 120000, .backoff_min_ms = 800, .backoff_max_ms = 30000,
	.healthy_ms = 120000, .settle_ms = 200, .settle_max_ms = 1000, .short_ms = 1000,
	.timeout_min_s = 300, .timeout_max_s = 600, .cheap_min_nodes = 3, .cheap_wait_ms = 2000,
};

static int said;
__attribute__((format(printf, 2, 3)))
static void count_lines(void *ctx, const char *fmt, ...)
{
	(void)ctx;
	(void)fmt;
	said++;
}

static struct node_facts facts(const char *name, const char *rv, enum node_ready ready)
{
	struct node_facts f;

	memset(&f, 0, sizeof f);
	snprintf(f.name, sizeof f.name, "%s", name);
	snprintf(f.uid, sizeof f.uid, "uid-%s", name);
	snprintf(f.rv, sizeof f.rv, "%s", rv);
	f.ready = ready;
	f.oos_taint = -1;
	return f;
}

/* core_next, with any round it asks for done at once (where rounds are not what is tested). */
static void next(struct core *c, int64_t now, struct core_do *d)
{
	for (core_next(c, now, d); d->kind == CORE_DO_ROUND; core_next(c, now, d))
		core_rounded(c, d->all, -1, 0, now);
}

/* A core leading from 0, listed at 100 (rv 10), its stream opened at 200. */
static void streaming(struct core *c)
{
	struct core_do d;

	said = 0;
	core_init(c, &tm, 42, count_lines, NULL);
	core_next(c, 0, &d);
	check(d.kind == CORE_DO_WAIT && d.until == INT64_MAX && core_phase(c) == CORE_IDLE);
	core_lead(c, 1, 0);
	core_next(c, 0, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_START);
	core_listed(c, 1, "10", 1800000000, 100, -1, 100);
	check(core_phase(c) == CORE_WATCH);
	core_next(c, 100, &d);
	check(d.kind == CORE_DO_WATCH && strcmp(d.rv, "10") == 0 && d.timeout_s >= 300 && d.timeout_s <= 600);
	core_opened(c, 1800000000, 200);
	core_next(c, 200, &d);
	check(d.kind == CORE_DO_READ && core_phase(c) == CORE_STREAM);
}

static void t_list_then_watch(void)
{
	struct core c;
	struct core_do d;
	struct node_facts f = facts("a", "11", NODE_READY_TRUE);

	streaming(&c);
	check(said == 1);   /* "Watching nodes from resourceVersion 10" */
	core_event(&c, &(struct core_event){ CORE_MODIFIED, "11", &f, NULL }, 300);
	check(table_size(core_table(&c)) == 1);
	/* decided once the stream paused 200 ms */
	core_next(&c, 499, &d);
	check(d.kind == CORE_DO_READ && d.until == 500);
	core_next(&c, 500, &d);
	check(d.kind == CORE_DO_ROUND && !d.all && d.server_now == 1800000000);
	core_rounded(&c, 0, -1, 0, 510);
	/* the poll's round over every node */
	core_next(&c, 15100, &d);
	check(d.kind == CORE_DO_ROUND && d.all && d.server_now == 1800000014);   /* the stream's Date, at 200 */
	core_rounded(&c, 1, -1, 0, 15100);
	core_next(&c, 15100, &d);
	check(d.kind == CORE_DO_READ);
	/* a resume starts from the last resourceVersion an event brought */
	core_ended(&c, CORE_END_CLEAN, "", -1, 16000);
	core_next(&c, 16000, &d);
	check(d.kind == CORE_DO_WATCH && strcmp(d.rv, "11") == 0);
	core_free(&c);
}

static void t_threshold_wakes_a_round_and_a_confirming_list(void)
{
	struct core c;
	struct core_do d;

	streaming(&c);
	core_rounded(&c, 0, 10, 0, 1000);   /* a node crosses a threshold in 10 s */
	core_next(&c, 10999, &d);
	check(d.kind == CORE_DO_READ && d.until == 11000);
	core_next(&c, 11000, &d);
	check(d.kind == CORE_DO_ROUND && !d.all);
	core_rounded(&c, 0, -1, 1, 11010);   /* it wants a taint: a list decides */
	check(core_phase(&c) == CORE_LIST);
	core_next(&c, 11010, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_CONFIRM);
	core_free(&c);
}

static void t_must_fail_410_at_once_backs_off(void)
{
	struct core c;
	struct core_do d;
	int64_t t = 200, last = 0;

	streaming(&c);
	/* every watch answered by 410 at once: the first is listed for at once (an API server
	 * restarted), each repeat waits longer, never a list a millisecond */
	for (int i = -1; i < 8; i++) {
		core_ended(&c, CORE_END_EXPIRED, "HTTP 410", -1, t);
		check(core_phase(&c) == CORE_LIST);
		core_next(&c, t, &d);
		if (i < 0) {
			check(d.kind == CORE_DO_LIST);
		} else {
			check(d.kind == CORE_DO_WAIT);
			check(d.until - t >= (800LL << (i < 5 ? i : 5)) || d.until - t >= 30000);
			check(d.until - t <= 60000);
			t = d.until;
		}
		check(t > last);
		last = t;
		core_next(&c, t, &d);
		check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_EXPIRED);
		core_listed(&c, 1, "10", 1800000000, t, -1, t);
		core_next(&c, t, &d);
		check(d.kind == CORE_DO_WATCH);
		core_opened(&c, -1, t);
	}
	core_free(&c);
}

static void t_410_after_events_lists_at_once(void)
{
	struct core c;
	struct core_do d;
	struct node_facts f = facts("a", "11", NODE_READY_TRUE);

	streaming(&c);
	core_event(&c, &(struct core_event){ CORE_MODIFIED, "11", &f, NULL }, 300);
	core_event(&c, &(struct core_event){ CORE_ERROR, "", NULL, NULL }, 400);
	core_ended(&c, CORE_END_EXPIRED, "Expired", -1, 400);
	core_next(&c, 400, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_EXPIRED);
	core_free(&c);
}

static void t_must_fail_error_events_are_not_hearing(void)
{
	struct core c;
	struct core_do d;

	streaming(&c);
	/* only ERRORs for 120 s: the stream is silent, and is dropped and resumed */
	for (int64_t t = 1000; t < 120200; t += 1000)
		core_event(&c, &(struct core_event){ CORE_ERROR, "", NULL, NULL }, t);
	next(&c, 120199, &d);
	check(d.kind == CORE_DO_READ && d.until == 120200);
	next(&c, 120200, &d);
	check(d.kind == CORE_DO_WATCH && core_phase(&c) == CORE_WATCH);
	core_free(&c);
}

static void t_must_fail_a_healthy_stream_cut_is_watched_again_at_once(void)
{
	struct core c;
	struct core_do d;
	struct node_facts f = facts("a", "11", NODE_READY_TRUE);

	streaming(&c);
	core_event(&c, &(struct core_event){ CORE_MODIFIED, "11", &f, NULL }, 300);
	core_ended(&c, CORE_END_FAILED, "reading the watch: cut", -1, 5000);
	next(&c, 5000, &d);
	check(d.kind == CORE_DO_WATCH && strcmp(d.rv, "11") == 0);
	check(said == 1);   /* not said as a failure */
	/* one that brought nothing and ended at once backs off, and says so once */
	core_opened(&c, -1, 5000);
	core_ended(&c, CORE_END_FAILED, "reading the watch: cut", -1, 5100);
	next(&c, 5100, &d);
	check(d.kind == CORE_DO_WAIT && d.until >= 5900);
	check(said == 2);
	/* a refused request with Retry-After waits as long as it says */
	next(&c, d.until, &d);
	check(d.kind == CORE_DO_WATCH);
	core_ended(&c, CORE_END_FAILED, "HTTP 429", 7, 10000);
	next(&c, 16999, &d);
	check(d.kind == CORE_DO_WAIT && d.until == 17000);
	next(&c, 17000, &d);
	check(d.kind == CORE_DO_WATCH);
	check(said == 2);   /* logged once until it works */
	core_free(&c);
}

static void t_must_fail_a_node_too_large_is_skipped(void)
{
	struct core c;
	struct core_do d;
	struct node_facts big = facts("", "", NODE_READY_NONE);
	const char *why = "event 3 (MODIFIED): its object is over 256 KiB";

	streaming(&c);
	for (int i = 0; i < 3; i++)
		core_event(&c, &(struct core_event){ CORE_MODIFIED, "", &big, why }, 300 + i);
	check(core_phase(&c) == CORE_STREAM);
	check(said == 2);   /* one line a stream */
	core_next(&c, 400, &d);
	check(d.kind == CORE_DO_READ);
	/* its resourceVersion could not be read: a resume starts where it was */
	core_ended(&c, CORE_END_CLEAN, "", -1, 2000);
	next(&c, 2000, &d);
	check(d.kind == CORE_DO_WATCH && strcmp(d.rv, "10") == 0);
	core_free(&c);
}

static void t_broken_and_unreadable(void)
{
	struct core c;
	struct core_do d;
	struct node_facts a = facts("a", "11", NODE_READY_TRUE), bad = facts("a", "12", NODE_READY_NONE);

	streaming(&c);
	core_event(&c, &(struct core_event){ CORE_ADDED, "11", &a, NULL }, 300);
	check(table_size(core_table(&c)) == 1);
	/* a node that cannot be read leaves the table: nothing is decided on its old facts */
	core_event(&c, &(struct core_event){ CORE_MODIFIED, "12", &bad, "no Ready condition" }, 400);
	check(table_size(core_table(&c)) == 0);
	core_event(&c, &(struct core_event){ CORE_ADDED, "13", &a, NULL }, 500);
	core_event(&c, &(struct core_event){ CORE_DELETED, "14", &a, NULL }, 600);
	check(table_size(core_table(&c)) == 0);
	core_ended(&c, CORE_END_BROKEN, "a broken event", -1, 700);
	core_next(&c, 700, &d);
	check(d.kind == CORE_DO_WAIT && d.until >= 1500);
	core_next(&c, d.until, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_BROKEN);
	core_listed(&c, 0, "", -1, 0, -1, 2000);   /* the list fails: backed off, then FAILED */
	core_next(&c, 2000, &d);
	check(d.kind == CORE_DO_WAIT);
	core_next(&c, d.until, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_FAILED);
	core_free(&c);
}

static void t_must_fail_a_confirmation_keeps_the_backoff(void)
{
	struct core c;
	struct core_do d;

	streaming(&c);
	core_ended(&c, CORE_END_FAILED, "HTTP 503", -1, 300);   /* short, nothing: a backoff */
	core_next(&c, 300, &d);
	check(d.kind == CORE_DO_WAIT);
	int64_t until = d.until;
	core_rounded(&c, 0, -1, 1, 400);   /* a due node wants a list meanwhile */
	core_next(&c, 400, &d);
	check(d.kind == CORE_DO_WAIT && d.until == until);
	core_next(&c, until, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_CONFIRM);
	core_free(&c);
}

static void t_periodic_list_and_leading(void)
{
	struct core c;
	struct core_do d;
	struct node_facts a = facts("a", "11", NODE_READY_TRUE);

	streaming(&c);
	core_next(&c, 600100, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_PERIODIC);
	core_listed(&c, 1, "20", 1800000600, 600200, -1, 600200);
	core_event(&c, &(struct core_event){ CORE_ADDED, "21", &a, NULL }, 600300);   /* not streaming: ignored */
	check(table_size(core_table(&c)) == 0);
	/* no longer leading: idle, the table forgotten; leading again starts with a list */
	core_lead(&c, 0, 600400);
	check(core_phase(&c) == CORE_IDLE);
	core_next(&c, 600400, &d);
	check(d.kind == CORE_DO_WAIT && d.until == INT64_MAX);
	core_lead(&c, 1, 700000);
	core_next(&c, 700000, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_START);
	core_free(&c);
}

static void t_a_long_list_dates_the_servers_clock_from_its_first_page(void)
{
	struct core c;
	struct core_do d;

	/* a list whose first page (and Date) came at 100 and whose last came 9 s later: the
	 * server's clock at 9100 is Date + 9, not Date (a clock lagging the list's length would
	 * taint that much late) */
	core_init(&c, &tm, 42, count_lines, NULL);
	core_lead(&c, 1, 0);
	core_listed(&c, 1, "10", 1800000000, 100, -1, 9100);
	core_rounded(&c, 0, 0, 0, 9100);   /* a node due now: a round a little later */
	core_next(&c, 9350, &d);
	check(d.kind == CORE_DO_ROUND && d.server_now == 1800000009);
	core_free(&c);
}

static void t_same_seed_same_choices(void)
{
	struct core a, b;
	struct core_do da, db;

	streaming(&a);
	streaming(&b);
	for (int i = 0; i < 5; i++) {
		core_ended(&a, CORE_END_FAILED, "", -1, 1000 * i + 300);
		core_ended(&b, CORE_END_FAILED, "", -1, 1000 * i + 300);
		core_next(&a, 1000 * i + 300, &da);
		core_next(&b, 1000 * i + 300, &db);
		check(da.until == db.until);
		core_next(&a, da.until, &da);
		core_next(&b, db.until, &db);
		check(da.timeout_s == db.timeout_s);
		core_opened(&a, -1, 1000 * i + 300);
		core_opened(&b, -1, 1000 * i + 300);
	}
	core_free(&a);
	core_free(&b);
}

/* A streaming core whose table holds three nodes (cheap_min_nodes here), the last event at rv 13. */
static void big_enough(struct core *c)
{
	struct node_facts f[3] = { facts("a", "11", NODE_READY_TRUE), facts("b", "12", NODE_READY_TRUE),
		facts("c", "13", NODE_READY_UNKNOWN) };
	struct core_do d;

	streaming(c);
	for (int i = 0; i < 3; i++)
		core_event(c, &(struct core_event){ CORE_ADDED, f[i].rv, &f[i], NULL }, 300);
	next(c, 600, &d);
	check(d.kind == CORE_DO_READ && table_size(core_table(c)) == 3);
}

static void t_a_big_table_is_confirmed_by_the_stores_revision(void)
{
	struct core c;
	struct core_do d;
	struct node_facts a = facts("a", "49", NODE_READY_TRUE);

	big_enough(&c);
	core_rounded(&c, 0, -1, 1, 1000);   /* c is due: a taint wants fresh facts */
	check(core_phase(&c) == CORE_STREAM);   /* the stream is kept: no list */
	core_next(&c, 1000, &d);
	check(d.kind == CORE_DO_FRESH);
	core_fresh(&c, 1, "50", 1010);
	core_next(&c, 1010, &d);
	check(d.kind == CORE_DO_READ && d.until <= 3010);
	/* an event before the store's revision proves nothing yet */
	core_event(&c, &(struct core_event){ CORE_MODIFIED, "49", &a, NULL }, 1100);
	next(&c, 1100, &d);
	check(d.kind == CORE_DO_READ);
	/* a bookmark past it does: a round that may taint, on the table */
	core_event(&c, &(struct core_event){ CORE_BOOKMARK, "57", NULL, NULL }, 1200);
	core_next(&c, 1200, &d);
	check(d.kind == CORE_DO_ROUND && d.confirmed);
	core_rounded(&c, 0, -1, 0, 1210);
	core_next(&c, 1210, &d);
	check(d.kind == CORE_DO_READ && !d.confirmed);
	/* nodes due together share it: one question, one round */
	core_rounded(&c, 0, -1, 1, 2000);
	core_rounded(&c, 0, -1, 1, 2001);
	core_next(&c, 2001, &d);
	check(d.kind == CORE_DO_FRESH);
	core_fresh(&c, 1, "57", 2010);   /* the stream is already there */
	core_next(&c, 2010, &d);
	check(d.kind == CORE_DO_ROUND && d.confirmed);
	core_free(&c);
}

static void t_must_fail_a_lagging_stream_never_confirms(void)
{
	struct core c;
	struct core_do d;

	/* the stream is held (the lagging-table storm of the chaos soak): it never passes the
	 * store's revision, so no round may taint; a list decides after cheap_wait_ms */
	big_enough(&c);
	core_rounded(&c, 0, -1, 1, 1000);
	core_next(&c, 1000, &d);
	core_fresh(&c, 1, "900", 1010);
	for (int64_t t = 1010; t < 3010; t += 100) {
		next(&c, t, &d);
		check(d.kind == CORE_DO_READ && !d.confirmed);
	}
	core_next(&c, 3010, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_CONFIRM && !d.confirmed);
	core_free(&c);
}

static void t_a_failed_question_keeps_the_stream(void)
{
	struct core c;
	struct core_do d;

	big_enough(&c);
	core_rounded(&c, 0, -1, 1, 1000);
	core_next(&c, 1000, &d);
	check(d.kind == CORE_DO_FRESH);
	core_fresh(&c, 0, "", 1010);
	next(&c, 1010, &d);
	check(d.kind == CORE_DO_READ && d.until >= 1810 && core_phase(&c) == CORE_STREAM);
	next(&c, d.until, &d);
	check(d.kind == CORE_DO_FRESH);
	/* a resourceVersion that is not a decimal revision cannot be compared: a list */
	core_fresh(&c, 1, "abc", 4000);
	core_next(&c, 4000, &d);
	check(d.kind == CORE_DO_LIST && d.why == CORE_WHY_CONFIRM);
	core_free(&c);
}

static const struct test tests[] = {
	{ "a_big_table_is_confirmed_by_the_stores_revision", t_a_big_table_is_confirmed_by_the_stores_revision },
	{ "must_fail_a_lagging_stream_never_confirms", t_must_fail_a_lagging_stream_never_confirms },
	{ "a_failed_question_keeps_the_stream", t_a_failed_question_keeps_the_stream },
	{ "list_then_watch", t_list_then_watch },
	{ "threshold_wakes_a_round_and_a_confirming_list", t_threshold_wakes_a_round_and_a_confirming_list },
	{ "must_fail_410_at_once_backs_off", t_must_fail_410_at_once_backs_off },
	{ "410_after_events_lists_at_once", t_410_after_events_lists_at_once },
	{ "must_fail_error_events_are_not_hearing", t_must_fail_error_events_are_not_hearing },
	{ "must_fail_a_healthy_stream_cut_is_watched_again_at_once", t_must_fail_a_healthy_stream_cut_is_watched_again_at_once },
	{ "must_fail_a_node_too_large_is_skipped", t_must_fail_a_node_too_large_is_skipped },
	{ "broken_and_unreadable", t_broken_and_unreadable },
	{ "must_fail_a_confirmation_keeps_the_backoff", t_must_fail_a_confirmation_keeps_the_backoff },
	{ "periodic_list_and_leading", t_periodic_list_and_leading },
	{ "a_long_list_dates_the_servers_clock_from_its_first_page", t_a_long_list_dates_the_servers_clock_from_its_first_page },
	{ "same_seed_same_choices", t_same_seed_same_choices },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("core", tests, argc, argv);
}
