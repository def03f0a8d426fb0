/*
 * Leader election (election.h): when to try, what to say, and whether this replica may act.
 * Owns the election's connection and its log lines; lease.c decides and writes the Lease.
 * Never lists, never acts on a node, never touches a signal flag.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "election.h"
#include "say.h"

#define RETRY_MS (LEASE_RETRY * 1000L)

/* One try to acquire or renew (client-go's tryAcquireOrRenew), and a line for each change. */
static void try_lease(struct election *e, int64_t now)
{
	struct lease *l = &e->lease;
	struct timespec wall;
	enum lease_result r;

	clock_gettime(CLOCK_REALTIME, &wall);
	e->last_try = now;
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
	e->last_try = INT64_MIN / 2;
	say("Leader election on: lease %s/%s (namespace from %s) as %s; lease %ds, renew deadline %ds, retry %ds",
	    ns, name, ns_source, e->id, LEASE_DURATION, LEASE_RENEW_DEADLINE, LEASE_RETRY);
	return 0;
}

int64_t election_next(const struct election *e)
{
	return e->last_try + RETRY_MS;
}

void election_keep(struct election *e, int64_t now)
{
	if (now >= election_next(e))
		try_lease(e, now);
}

struct election_state election_step(struct election *e, int64_t now)
{
	struct election_state s;

	election_keep(e, now);
	s.leading = lease_held(&e->lease, now);
	if (!s.leading && e->said == 1) {
		say("Stopped leading: lease %s/%s was not renewed within %ds; no write until it is held again",
		    e->ns, e->name, LEASE_RENEW_DEADLINE);
		e->said = 0;
		e->holder[0] = '\0';
	}
	s.changed = s.leading != e->leading;
	e->leading = s.leading;
	return s;
}

int election_may_write(struct election *e, int64_t now)
{
	election_keep(e, now);
	return lease_held(&e->lease, clock_ms());
}

void election_release(struct election *e)
{
	struct timespec wall;
	enum lease_result r;

	clock_gettime(CLOCK_REALTIME, &wall);
	r = lease_release(&e->lease, (int64_t)wall.tv_sec, wall.tv_nsec / 1000);
	if (r == LEASE_RELEASED)
		say("Released lease %s/%s: another replica may take over at once", e->ns, e->name);
	else if (r == LEASE_FAILED)
		say("Releasing lease %s/%s failed: %s; another replica takes over once it lapses (%ds)", e->ns,
		    e->name, lease_error(&e->lease), LEASE_DURATION);
	kube_close(&e->kc);
}
