/*
 * The election's simulator: replicas running the real lease.c (lease_try, lease_held,
 * lease_release: what election.c's thread calls every LEASE_RETRY) against a model Lease in
 * virtual time, with clocks that run at different rates, requests that are slow or fail, paused
 * and crashed replicas. Every choice comes from one seed; a failing seed prints the one line that
 * replays it.
 *
 * lease.c makes blocking calls (kube_call, clock_ms): here they are the simulator's. Each replica
 * runs as a coroutine (ucontext) of its own; the scheduler runs the one due first in virtual time
 * (ties by replica number) until it waits again, so a run is a pure function of its seed. A
 * request's effect on the model Lease happens at the virtual moment it arrives, so another
 * replica's write can come between one replica's read and its write (the 409 path).
 *
 * Invariants (each failure names the seed, the time and the rule):
 *  - never two replicas at once that may write (lease_held by each one's own clock);
 *  - a write leaves (kube.c's gate: lease_held) only while the model Lease names its sender;
 *  - a leader that is not paused and whose requests are answered keeps its term: it renews every
 *    LEASE_RETRY (its requests' time on top), never lapses, is never taken over;
 *  - when the leader crashed or stopped, a live replica leads within TAKEOVER_BOUND_MS, or at
 *    once after a release.
 *
 * usage: sim_election [-v] SEED [COUNT]   (exit 1 on a failure)
 */
#include <ucontext.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "json.h"
#include "kube.h"
#include "lease.h"

#define REPLICAS 3
#define RUN_MS (30 * 60 * 1000LL)
#define RETRY_MS (LEASE_RETRY * 1000LL)
#define CALL_FAIL_MS 10000          /* a refused or unanswered request fails after this (kube.c's deadlines are longer: see below) */
#define RATE_MIN 0.87               /* clock rates: 1.15 / 0.87 < 1.5, the room LEASE_DURATION / LEASE_RENEW_DEADLINE leaves */
#define RATE_MAX 1.15
/* The leader gone at T: every live replica sees the last change by its next try (RETRY, slow by
 * its rate), waits LEASE_DURATION by its clock, then takes over at its next try; delays on top. */
#define TAKEOVER_BOUND_MS ((int64_t)((LEASE_DURATION * 1000 + 2 * RETRY_MS) / RATE_MIN) + 4 * 1000)

#include "seed.h"

/* ---- the model Lease ---- */
static struct {
	int exists;
	long rv;
	struct json_lease rec;
	int64_t holder_since;       /* virtual ms the holder last changed */
	int holder_replica;         /* which replica wrote the holder (-1: none or released) */
} M;

/* ---- the replicas ---- */
enum phase { LIVE, PAUSED, CRASHED };

struct replica {
	int n;
	ucontext_t ctx;
	int64_t wake;               /* virtual ms it runs next */
	int done;                   /* its life ended */
	double rate;                /* its clock's rate against virtual time */
	int64_t offset;             /* its monotonic clock at virtual 0 */
	struct kube k;              /* only its address is used: it names the replica in kube_call */
	struct lease l;
	char id[64];
	enum phase phase;
	int64_t fail_from, fail_to; /* its requests fail then (a broken path to the API) */
	int64_t slow_from, slow_to; /* its requests are slow then (up to 8 s each) */
	int64_t pause_from, pause_to;
	int64_t crash_at;           /* it stops for good (0: never); clean: it releases first */
	int clean;
	int64_t calm_since;         /* since when nothing hinders it (0: something does) */
	int epoch;                  /* its life: a crash ends it */
};

static struct replica R[REPLICAS];
static int nrep;
static int64_t vnow;
#define STACK (256 * 1024)      /* a replica's: lease.c's request and its answer are in struct lease */
static char stacks[REPLICAS][STACK];
static ucontext_t sched;
static struct replica *cur;
static uint64_t seed;
static int verbose, failed;
static int64_t gone_at = -1;    /* virtual ms the leader crashed or stopped (-1: none pending) */
static int released;            /* ... and it released the Lease */

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (failed)
		return;
	failed = 1;
	fprintf(stderr, "FAILED: seed %llu at %.3f s: ", (unsigned long long)seed, vnow / 1000.0);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (replay: sim_election -v %llu 1)\n", (unsigned long long)seed);
}

static void note(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	fprintf(stderr, "%9.3f ", vnow / 1000.0);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t local(const struct replica *r, int64_t v)
{
	return r->offset + (int64_t)(r->rate * (double)v);
}

/* virtual ms for d ms of r's clock */
static int64_t virt(const struct replica *r, int64_t d)
{
	return (int64_t)((double)d / r->rate) + 1;
}

/* The current replica waits and runs again at virtual ms at. */
static void sleep_until(int64_t at)
{
	struct replica *r = cur;

	if (r->pause_to > at && r->pause_from <= at)
		at = r->pause_to;   /* a paused process runs again only when it is resumed */
	r->wake = at;
	swapcontext(&r->ctx, &sched);
}

/* ---- what lease.c calls ---- */
int64_t clock_ms(void)
{
	return local(cur, vnow);
}

const char *kube_error(const struct kube *k)
{
	(void)k;
	return "simulated failure";
}

static int in(int64_t from, int64_t to)
{
	return vnow >= from && vnow < to;
}

/* The model's answer to one request, applied now. */
static int serve(struct replica *r, const char *method, const char *body, char *out, size_t cap)
{
	struct json_lease q;
	char why[200], rv[24];
	struct lease_spec s;

	if (strcmp(method, "GET") == 0) {
		if (!M.exists)
			return 404;
	} else {
		char full[LEASE_BODY_MAX + 64];
		const char *b = body, *at = strstr(body, "},\"spec\"");
		if (strcmp(method, "POST") == 0) {
			if (M.exists)
				return 409;
			/* a create carries no resourceVersion, which json_lease requires: put one in */
			if (!at || snprintf(full, sizeof full, "%.*s,\"resourceVersion\":\"0\"%s", (int)(at - body), body,
			    at) >= (int)sizeof full) {
				fail("replica %d created a Lease the model cannot read", r->n);
				return 400;
			}
			b = full;
		}
		if (json_lease(b, strlen(b), &q, why, sizeof why) < 0) {
			fail("replica %d sent a Lease the server cannot read: %s", r->n, why);
			return 400;
		}
		if (strcmp(method, "PUT") == 0 && (!M.exists || atol(q.rv) != M.rv))
			return 409;
		if (strcmp(M.rec.holder, q.holder) != 0) {
			M.holder_since = vnow;
			M.holder_replica = q.holder[0] ? r->n : -1;
			note("lease: %s -> %s", M.rec.holder[0] ? M.rec.holder : "(none)", q.holder[0] ? q.holder : "(none)");
		}
		M.exists = 1;
		M.rv++;
		M.rec = q;
		snprintf(M.rec.rv, sizeof M.rec.rv, "%ld", M.rv);
	}
	snprintf(rv, sizeof rv, "%ld", M.rv);
	s = (struct lease_spec){ M.rec.holder, M.rec.duration, M.rec.acquire, M.rec.renew, M.rec.transitions };
	if (lease_body(out, cap, "ns", "lease", rv, &s) < 0)
		fail("the model's Lease does not fit");
	return strcmp(method, "POST") == 0 ? 201 : 200;
}

int kube_call(struct kube *k, const char *what, const char *method, const char *path, const char *body, size_t len,
    char *out, size_t cap)
{
	struct replica *r = cur;
	int64_t there, back;
	int st;

	(void)k, (void)what, (void)path, (void)len;
	if (in(r->fail_from, r->fail_to)) {
		sleep_until(vnow + uniform(1, CALL_FAIL_MS));
		return -1;
	}
	there = in(r->slow_from, r->slow_to) ? uniform(1, 8000) : uniform(1, 300);
	back = in(r->slow_from, r->slow_to) ? uniform(1, 8000) : uniform(1, 300);
	sleep_until(vnow + there);
	if (r->phase == CRASHED || r->epoch < 0)
		return -1;
	st = serve(r, method, body, out, cap);
	sleep_until(vnow + back);
	return st;
}

static void check_writers(const char *when);

/* ---- a replica's life: election.c's thread, and a write now and then when it may ---- */
static void life(int n)
{
	struct replica *r = &R[n];

	for (;;) {
		int64_t start;

		if (r->crash_at && vnow >= r->crash_at) {
			if (r->clean) {
				enum lease_result x = lease_release(&r->l, 1700000000 + local(r, vnow) / 1000, 0);
				note("replica %d stops and releases (%d)", r->n, (int)x);
				if (x == LEASE_RELEASED)
					released = 1;
			} else {
				note("replica %d crashes", r->n);
			}
			if (M.holder_replica == r->n && strcmp(M.rec.holder, r->id) == 0 && gone_at < 0)
				gone_at = vnow;
			r->phase = CRASHED;
			break;
		}
		if (vnow >= RUN_MS)
			break;
		start = local(r, vnow);
		{
			enum lease_result x = lease_try(&r->l, start, 1700000000 + start / 1000, (long)(start % 1000) * 1000);
			note("replica %d tried: %s", r->n, x == LEASE_LEADING ? "leading" : x == LEASE_FOLLOWING ? "following" :
			    x == LEASE_LOST ? "lost" : "failed");
		}
		check_writers("after a try");
		/* a write now and then while it may: kube.c's gate asks lease_held as the bytes leave */
		if (lease_held(&r->l, clock_ms()) && chance(50)) {
			sleep_until(vnow + uniform(1, 400));
			if (lease_held(&r->l, clock_ms())) {
				if (strcmp(M.rec.holder, r->id) != 0)
					fail("replica %d wrote while the Lease names %s", r->n, M.rec.holder[0] ? M.rec.holder : "nobody");
				check_writers("at a write");
			}
		}
		sleep_until(vnow + virt(r, start + RETRY_MS - local(r, vnow) > 0 ? start + RETRY_MS - local(r, vnow) : 0));
	}
	r->done = 1;
}

/* Never two replicas that may write at once, each by its own clock. */
static void check_writers(const char *when)
{
	int holders = 0, first = -1;

	for (int i = 0; i < nrep; i++) {
		struct replica *r = &R[i];
		if (r->phase == CRASHED || r->done)
			continue;
		if (lease_held(&r->l, local(r, vnow))) {
			if (holders++ == 0)
				first = i;
			else
				fail("replicas %d and %d may both write (%s)", first, i, when);
		}
	}
}

/* Nothing hinders r now, nor the try in flight: one that began in a window of slow or failing
 * requests lasts up to two failing calls or four slow legs after it. */
#define AFTER_MS (4 * 8000 + CALL_FAIL_MS)
static int calm(const struct replica *r)
{
	return r->phase == LIVE && !in(r->fail_from, r->fail_to + AFTER_MS) && !in(r->slow_from, r->slow_to + AFTER_MS) &&
	    !in(r->pause_from, r->pause_to + 1000) && !(r->crash_at && vnow >= r->crash_at - 1000);
}

/* Between the replicas' steps: the leader that nothing hinders keeps its term; a gone leader is
 * replaced in time. */
static void check_progress(void)
{
	int leader = -1;

	for (int i = 0; i < nrep; i++)
		if (R[i].phase != CRASHED && !R[i].done && lease_held(&R[i].l, local(&R[i], vnow)))
			leader = i;
	if (leader >= 0)
		gone_at = -1, released = 0;
	for (int i = 0; i < nrep; i++) {
		struct replica *r = &R[i];
		if (!calm(r)) {
			r->calm_since = 0;
			continue;
		}
		if (!r->calm_since)
			r->calm_since = vnow;
		/* a calm leader renews every LEASE_RETRY, its try's requests on top (three at most) */
		if (r->l.leader && lease_held(&r->l, local(r, vnow)) && local(r, vnow) - r->l.renewed_ms > RETRY_MS + 2000 &&
		    local(r, r->calm_since) < r->l.renewed_ms)
			fail("replica %d, calm and leading, last renewed %.1f s ago by its clock", i,
			    (local(r, vnow) - r->l.renewed_ms) / 1000.0);
		/* it led when it became calm: it must lead still, by its own clock */
		if (r->l.leader && vnow - r->calm_since > 3 * RETRY_MS && M.holder_replica == r->n &&
		    strcmp(M.rec.holder, r->id) == 0 && !lease_held(&r->l, local(r, vnow)))
			fail("replica %d, calm for %.1f s, let its term lapse", i, (vnow - r->calm_since) / 1000.0);
	}
	if (gone_at >= 0 && leader < 0) {
		int live = 0;
		for (int i = 0; i < nrep; i++)
			if (R[i].phase == LIVE && R[i].calm_since && R[i].calm_since <= gone_at)
				live++;
		if (live && vnow - gone_at > (released ? 3 * RETRY_MS + 2000 : TAKEOVER_BOUND_MS))
			fail("the leader went at %.3f s (%s) and no calm replica leads %.1f s later", gone_at / 1000.0,
			    released ? "released" : "crashed", (vnow - gone_at) / 1000.0);
	}
}

/* The faults of one replica, drawn from the seed. */
static void draw(struct replica *r)
{
	r->rate = RATE_MIN + (RATE_MAX - RATE_MIN) * (double)(rnd() % 1000) / 999.0;
	r->offset = uniform(0, 1000000000);
	if (chance(40)) {
		r->fail_from = uniform(0, RUN_MS);
		r->fail_to = r->fail_from + uniform(1000, 120000);
	}
	if (chance(40)) {
		r->slow_from = uniform(0, RUN_MS);
		r->slow_to = r->slow_from + uniform(1000, 120000);
	}
	/* a path that slows down and then breaks: a renewal held up, then none */
	if (r->slow_to && chance(50)) {
		r->fail_from = r->slow_to - uniform(0, 5000);
		r->fail_to = r->fail_from + uniform(1000, 60000);
	}
	if (chance(40)) {
		r->pause_from = uniform(0, RUN_MS);
		r->pause_to = r->pause_from + uniform(100, 60000);
	}
	if (chance(30)) {
		r->crash_at = uniform(60000, RUN_MS);
		r->clean = chance(50);
	}
}

static int run(uint64_t s)
{
	rs = seed = s;
	failed = 0;
	vnow = 0;
	gone_at = -1;
	released = 0;
	memset(&M, 0, sizeof M);
	M.holder_replica = -1;
	nrep = (int)uniform(2, REPLICAS);
	for (int i = 0; i < nrep; i++) {
		struct replica *r = &R[i];
		memset(r, 0, sizeof *r);
		r->n = i;
		draw(r);
		snprintf(r->id, sizeof r->id, "replica%d-%08x", i, (unsigned)rnd());
		if (lease_init(&r->l, &r->k, "ns", "lease", r->id) < 0) {
			fprintf(stderr, "lease_init: %s\n", lease_error(&r->l));
			return 1;
		}
		r->wake = uniform(0, 3000);
		note("replica %d: rate %.3f, fails %.1f-%.1f, slow %.1f-%.1f, paused %.1f-%.1f, %s at %.1f", i, r->rate,
		    r->fail_from / 1e3, r->fail_to / 1e3, r->slow_from / 1e3, r->slow_to / 1e3, r->pause_from / 1e3,
		    r->pause_to / 1e3, r->clean ? "stops" : "crashes", r->crash_at / 1e3);
		getcontext(&r->ctx);
		r->ctx.uc_stack.ss_sp = stacks[i];
		r->ctx.uc_stack.ss_size = STACK;
		r->ctx.uc_link = &sched;
		makecontext(&r->ctx, (void (*)(void))life, 1, i);
	}
	for (;;) {
		struct replica *next = NULL;
		for (int i = 0; i < nrep; i++)
			if (!R[i].done && (!next || R[i].wake < next->wake))
				next = &R[i];
		if (!next)
			break;
		vnow = next->wake;
		check_writers("between steps");
		if (vnow < RUN_MS)
			check_progress();
		cur = next;
		swapcontext(&sched, &next->ctx);
	}
	return failed;
}

int main(int argc, char **argv)
{
	int a = 1, bad = 0;
	uint64_t first, count;

	if (a < argc && strcmp(argv[a], "-v") == 0)
		verbose = 1, a++;
	if (a >= argc) {
		fprintf(stderr, "usage: sim_election [-v] SEED [COUNT]\n");
		return 2;
	}
	first = strtoull(argv[a], NULL, 10);
	count = a + 1 < argc ? strtoull(argv[a + 1], NULL, 10) : 1;
	for (uint64_t s = first; s < first + count; s++)
		if (run(s))
			bad++;
	printf("sim_election: %llu passed, %d failed\n", (unsigned long long)(count - (uint64_t)bad), bad);
	return bad ? 1 : 0;
}
