/*
 * Leader election (election.h): its thread, when it tries, what it says, and whether this
 * replica may act. Owns the election's connection and its log lines; lease.c decides and
 * writes the Lease. Never lists, never acts on a node, never touches a signal flag.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "election.h"
#include "say.h"

#define RETRY_MS (LEASE_RETRY * 1000L)
/* The thread's stack: a Lease request goes through kube.c (its request and token buffers, about
 * 20 KiB) and a TLS handshake in BearSSL (some KiB more); 256 KiB is room to spare, and only
 * what is touched is resident. */
#define STACK (256 * 1024 + JSON_POOL_BYTES)
#define QUIT_CHECK_MS 250   /* the thread sees a stop within this (short sleeps: a condition variable cost 2.3 KB) */

/* One try to acquire or renew (client-go's tryAcquireOrRenew), and a line for each change. */
static void try_lease(struct election *e, int64_t now)
{
	struct lease *l = &e->lease;
	struct timespec wall;
	enum lease_result r;

	clock_gettime(CLOCK_REALTIME, &wall);
	r = lease_try(l, now, (int64_t)wall.tv_sec, wall.tv_nsec / 1000);
	if (r == LEASE_FAILED) {
		if (!e->failing)
			say("Lease %s/%s: %s; trying again every %ds%s", e->ns, e->name, lease_error(l), LEASE_RETRY,
			    e->said == 1 ? ", acting only while the last renewal is under 10s old" : "");
		e->failing = 1;
		return;
	}
	e->failing = 0;
	if (r == LEASE_LEADING) {
		if (e->said != 1)
			say("Leading: this replica (%s) holds lease %s/%s and now lists and acts", e->id, e->ns, e->name);
		e->said = 1;
		return;
	}
	if (r == LEASE_LOST) {
		say("Lease %s/%s: another replica wrote it between our read and our write (409); this replica (%s) does not act",
		    e->ns, e->name, e->id);
	} else if (e->said != 0 || strcmp(e->holder, lease_holder(l)) != 0) {
		char who[JSON_LEASE_ID_MAX + 1];
		say("Following: lease %s/%s is held by %s; this replica (%s) waits and does not act, and takes over once the lease is not renewed for %ds",
		    e->ns, e->name, say_printable(lease_holder(l), who, sizeof who), e->id, LEASE_DURATION);
		snprintf(e->holder, sizeof e->holder, "%s", lease_holder(l));
	}
	e->said = 0;
}

int election_init(struct election *e, const struct kube_target *t, volatile sig_atomic_t *stop,
    kube_observe_fn observe, const char *ns, const char *name, const char *ns_source, const char *base,
    char *err, size_t errlen)
{
	memset(e, 0, sizeof *e);
	if (lease_identity(e->id, sizeof e->id, base) < 0) {
		snprintf(err, errlen, "no identity for leader election from POD_NAME or the host name '%.64s' (empty, too long, a space, or no random bytes)", base);
		return -1;
	}
	if (kube_init(&e->kc, t, stop, err, errlen) < 0)
		return -1;
	kube_observe(&e->kc, observe, NULL);
	e->ns = ns;
	e->name = name;
	if (lease_init(&e->lease, &e->kc, ns, name, e->id) < 0) {
		snprintf(err, errlen, "%s", lease_error(&e->lease));
		kube_close(&e->kc);
		return -1;
	}
	e->said = -1;
	say("Leader election on: lease %s/%s (namespace from %s) as %s; lease %ds, renew deadline %ds, retry %ds",
	    ns, name, ns_source, e->id, LEASE_DURATION, LEASE_RENEW_DEADLINE, LEASE_RETRY);
	return 0;
}

/* The lease stopped being held since it was last said to be: said once, by the thread. */
static void say_lapse(struct election *e, int64_t now)
{
	if (e->said != 1 || lease_held(&e->lease, now))
		return;
	say("Stopped leading: lease %s/%s was not renewed within %ds; no write until it is held again",
	    e->ns, e->name, LEASE_RENEW_DEADLINE);
	e->said = 0;
	e->holder[0] = '\0';
}

/* The thread: a try, then what the loop reads, then a wait of LEASE_RETRY from the try's start. */
static void *run(void *arg)
{
	struct election *e = arg;

	pthread_mutex_lock(&e->lock);
	while (!e->quit) {
		int64_t start = clock_ms(), next = start + RETRY_MS;

		pthread_mutex_unlock(&e->lock);
		say_lapse(e, start);
		try_lease(e, start);
		say_lapse(e, clock_ms());
		pthread_mutex_lock(&e->lock);
		e->leader = e->lease.leader;
		e->renewed_ms = e->lease.renewed_ms;
		/* the next try, in short sleeps so that a stop is seen within QUIT_CHECK_MS */
		while (!e->quit) {
			int64_t left = next - clock_ms();
			struct timespec ts = { 0, QUIT_CHECK_MS * 1000000L };
			if (left <= 0)
				break;
			if (left < QUIT_CHECK_MS)
				ts.tv_nsec = (long)left * 1000000L;
			pthread_mutex_unlock(&e->lock);
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&e->lock);
		}
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int election_start(struct election *e, char *err, size_t errlen)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int r;

	pthread_mutex_init(&e->lock, NULL);
	/* the first try before the loop's first step, so a lone replica leads from its first step */
	try_lease(e, clock_ms());
	e->leader = e->lease.leader;
	e->renewed_ms = e->lease.renewed_ms;
	/* signals are the main thread's: its wait takes them */
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&e->thread, &attr, run, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		snprintf(err, errlen, "leader election: cannot start its thread (error %d)", r);
		return -1;
	}
	e->started = 1;
	return 0;
}

int election_may_write(struct election *e, int64_t now)
{
	int held;

	pthread_mutex_lock(&e->lock);
	held = lease_term_holds(e->leader, e->renewed_ms, now);
	pthread_mutex_unlock(&e->lock);
	return held;
}

struct election_state election_step(struct election *e, int64_t now)
{
	struct election_state s;

	s.leading = election_may_write(e, now);
	s.changed = s.leading != e->leading;
	e->leading = s.leading;
	return s;
}

void election_release(struct election *e)
{
	struct timespec wall;
	enum lease_result r;

	if (e->started) {
		pthread_mutex_lock(&e->lock);
		e->quit = 1;
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->thread, NULL);
		e->started = 0;
	}
	clock_gettime(CLOCK_REALTIME, &wall);
	r = lease_release(&e->lease, (int64_t)wall.tv_sec, wall.tv_nsec / 1000);
	if (r == LEASE_RELEASED)
		say("Released lease %s/%s: another replica may take over at once", e->ns, e->name);
	else if (r == LEASE_FAILED)
		say("Releasing lease %s/%s failed: %s; another replica takes over once it lapses (%ds)", e->ns,
		    e->name, lease_error(&e->lease), LEASE_DURATION);
	kube_close(&e->kc);
}
