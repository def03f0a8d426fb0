/*
 * Leader election's pure parts: the decision as a table (rows marked must-fail pass only when a
 * replica does not take over a Lease it must leave alone), the bodies written (golden), the
 * MicroTime, the identity, and when a record counts as changed.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "../../lease.h"

#define ME "pod-a-00000001"
#define OTHER "pod-b-00000002"
#define NOW "2026-12-01T16:27:36.123456Z"
#define S 1000 /* ms */

struct row {
	const char *what;
	const char *holder;      /* holderIdentity of the record seen */
	long duration;           /* its leaseDurationSeconds */
	const char *renew;       /* its renewTime: never read as a time */
	int64_t unchanged_ms;    /* how long, by our clock, since the record last changed */
	enum lease_step want;
};

static const struct row rows[] = {
	{ "follow a holder that renewed just now", OTHER, 15, "2026-12-01T16:27:36.000000Z", 0, LEASE_FOLLOW },
	{ "must-fail: not taken over 14.999 s after it changed", OTHER, 15, "2026-12-01T16:27:36.000000Z", 15 * S - 1, LEASE_FOLLOW },
	{ "must-fail: not taken over though its renewTime is a year old by our clock", OTHER, 15, "2025-12-01T16:27:36.000000Z", 1 * S, LEASE_FOLLOW },
	{ "must-fail: not taken over though it has no renewTime", OTHER, 15, "", 1 * S, LEASE_FOLLOW },
	{ "must-fail: a shorter duration written by another does not shorten our wait", OTHER, 1, "x", 14 * S, LEASE_FOLLOW },
	{ "must-fail: no duration is no reason to take over early", OTHER, 0, "x", 10 * S, LEASE_FOLLOW },
	{ "a longer duration written by another is waited out", OTHER, 30, "x", 29 * S, LEASE_FOLLOW },
	{ "taken over when unchanged for the longer duration", OTHER, 30, "x", 30 * S, LEASE_TAKE },
	{ "taken over when unchanged for 15 s", OTHER, 15, "2999-01-01T00:00:00.000000Z", 15 * S, LEASE_TAKE },
	{ "a released Lease is taken at once", "", 1, NOW, 0, LEASE_TAKE },
	{ "a Lease nobody ever held is taken at once", "", 0, "", 0, LEASE_TAKE },
	{ "ours is renewed", ME, 15, NOW, 2 * S, LEASE_RENEW },
	{ "ours is renewed even when old (a PUT with its resourceVersion decides)", ME, 15, NOW, 60 * S, LEASE_RENEW },
	{ "a holder whose name starts like ours is another", "pod-a-0000000", 15, NOW, 1 * S, LEASE_FOLLOW },
};

static void t_decide(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct lease_seen o = { 0 };
		struct json_lease rec = { .rv = "7", .duration = r->duration, .transitions = 4 };
		struct lease_spec s;
		int64_t t0 = 1000000;

		snprintf(rec.holder, sizeof rec.holder, "%s", r->holder);
		snprintf(rec.renew, sizeof rec.renew, "%s", r->renew);
		snprintf(rec.acquire, sizeof rec.acquire, "2026-12-01T16:00:00.000000Z");
		lease_observe(&o, &rec, t0);
		if (!check(lease_decide(&o, ME, t0 + r->unchanged_ms, NOW, &s) == r->want)) {
			fprintf(stderr, "  row: %s\n", r->what);
			continue;
		}
		if (r->want == LEASE_FOLLOW)
			continue;
		check(strcmp(s.holder, ME) == 0 && s.duration == LEASE_DURATION && strcmp(s.renew, NOW) == 0);
		if (r->want == LEASE_RENEW)   /* acquireTime and leaseTransitions kept */
			check(strcmp(s.acquire, "2026-12-01T16:00:00.000000Z") == 0 && s.transitions == 4);
		else                          /* a new term */
			check(strcmp(s.acquire, NOW) == 0 && s.transitions == 5);
	}
	/* nothing read yet: nothing to decide on */
	struct lease_seen none = { 0 };
	struct lease_spec s;
	check(lease_decide(&none, ME, 100 * S, NOW, &s) == LEASE_FOLLOW);
}

/* The clock that counts is when the record changed; a record read again unchanged does not restart it. */
static void t_observe(void)
{
	struct lease_seen o = { 0 };
	struct json_lease a = { .rv = "7", .holder = OTHER, .duration = 15, .renew = "t1" };
	struct lease_spec s;

	lease_observe(&o, &a, 0);
	lease_observe(&o, &a, 10 * S);      /* the same record read again */
	check(o.since_ms == 0);
	check(lease_decide(&o, ME, 15 * S, NOW, &s) == LEASE_TAKE);
	/* must-fail: a renewal (new resourceVersion and renewTime) restarts the wait */
	struct json_lease b = a;
	snprintf(b.rv, sizeof b.rv, "8");
	snprintf(b.renew, sizeof b.renew, "t2");
	lease_observe(&o, &b, 14 * S);
	check(o.since_ms == 14 * S);
	check(lease_decide(&o, ME, 15 * S, NOW, &s) == LEASE_FOLLOW);
	check(lease_decide(&o, ME, 29 * S - 1, NOW, &s) == LEASE_FOLLOW);
	check(lease_decide(&o, ME, 29 * S, NOW, &s) == LEASE_TAKE);
	/* a change of renewTime alone (the same resourceVersion: never from a real server) counts too */
	struct json_lease c = b;
	snprintf(c.renew, sizeof c.renew, "t3");
	lease_observe(&o, &c, 20 * S);
	check(o.since_ms == 20 * S);
}

/* The bodies, byte for byte: a MicroTime has six fractional digits or the server refuses it. */
static void t_bodies(void)
{
	char b[1024], t[LEASE_TIME_LEN + 1];
	struct lease_spec create = { ME, 15, NOW, NOW, 0 };

	check(lease_body(b, sizeof b, "kube-system", "noderecover", NULL, &create) > 0);
	check(strcmp(b, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"noderecover\","
	    "\"namespace\":\"kube-system\"},\"spec\":{\"holderIdentity\":\"pod-a-00000001\",\"leaseDurationSeconds\":15,"
	    "\"acquireTime\":\"2026-12-01T16:27:36.123456Z\",\"renewTime\":\"2026-12-01T16:27:36.123456Z\",\"leaseTransitions\":0}}") == 0);
	/* the take-over: a PUT carrying the resourceVersion read */
	struct lease_spec take = { ME, 15, NOW, NOW, 5 };
	check(lease_body(b, sizeof b, "ns", "l", "4711", &take) > 0);
	check(strcmp(b, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"l\","
	    "\"namespace\":\"ns\",\"resourceVersion\":\"4711\"},\"spec\":{\"holderIdentity\":\"pod-a-00000001\",\"leaseDurationSeconds\":15,"
	    "\"acquireTime\":\"2026-12-01T16:27:36.123456Z\",\"renewTime\":\"2026-12-01T16:27:36.123456Z\",\"leaseTransitions\":5}}") == 0);
	/* the release, as client-go's ReleaseOnCancel: nobody, 1 s, both times now, transitions kept */
	lease_microtime(t, 1796142456, 5);
	struct lease_spec release = { "", 1, t, t, 5 };
	check(lease_body(b, sizeof b, "ns", "l", "4712", &release) > 0);
	check(strcmp(b, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"l\","
	    "\"namespace\":\"ns\",\"resourceVersion\":\"4712\"},\"spec\":{\"holderIdentity\":\"\",\"leaseDurationSeconds\":1,"
	    "\"acquireTime\":\"2026-12-01T16:27:36.000005Z\",\"renewTime\":\"2026-12-01T16:27:36.000005Z\",\"leaseTransitions\":5}}") == 0);
	/* must-fail: a body that does not fit is refused, never cut */
	check(lease_body(b, 100, "ns", "l", "4712", &release) == -1);
	/* an identity with a quote is escaped, not spliced */
	struct lease_spec odd = { "a\"b", 15, NOW, NOW, 0 };
	check(lease_body(b, sizeof b, "ns", "l", NULL, &odd) > 0 && strstr(b, "\"holderIdentity\":\"a\\\"b\""));
}

static void t_microtime(void)
{
	char t[LEASE_TIME_LEN + 1];

	lease_microtime(t, 0, 0);
	check(strcmp(t, "1970-01-01T00:00:00.000000Z") == 0);
	lease_microtime(t, 1796142456, 999999);
	check(strcmp(t, "2026-12-01T16:27:36.999999Z") == 0 && strlen(t) == LEASE_TIME_LEN);
	lease_microtime(t, 1796142456, 123456);
	check(strcmp(t, "2026-12-01T16:27:36.123456Z") == 0);
}

static void t_identity(void)
{
	char a[64], b[64];

	check(lease_identity(a, sizeof a, "noderecover-5d8f7-abcde") == 0);
	check(lease_identity(b, sizeof b, "noderecover-5d8f7-abcde") == 0);
	check(strncmp(a, "noderecover-5d8f7-abcde-", 24) == 0 && strlen(a) == 32);
	check(strspn(a + 24, "0123456789abcdef") == 8);
	/* two replicas of one name are two identities (fails once in 2^32 runs) */
	check(strcmp(a, b) != 0);
	check(lease_identity(a, sizeof a, "") == -1);
	check(lease_identity(a, sizeof a, "has space") == -1);
	check(lease_identity(a, 10, "abc") == -1);
	check(lease_identity(a, 13, "abc") == 0);
}

/* Whether we may write: leader, and renewed within the renew deadline by our clock. */
static void t_held(void)
{
	static struct lease l;

	check(lease_init(&l, NULL, "ns", "noderecover", ME) == 0);
	check(!lease_held(&l, 0));
	/* a leader is what lease_try made it; here its fields are set as lease_try would */
	l.leader = 1;
	l.renewed_ms = 100 * S;
	check(lease_held(&l, 100 * S));
	check(lease_held(&l, 110 * S - 1));
	/* must-fail: not one millisecond past the renew deadline */
	check(!lease_held(&l, 110 * S));
	check(!lease_held(&l, 200 * S));
	l.leader = 0;
	check(!lease_held(&l, 100 * S));
	check(lease_init(&l, NULL, "a-namespace-name-that-is-much-longer-than-sixty-three-characters-x", "l", ME) == -1);
}

static const struct test tests[] = {
	{ "decide", t_decide },
	{ "observe", t_observe },
	{ "bodies", t_bodies },
	{ "microtime", t_microtime },
	{ "identity", t_identity },
	{ "held", t_held },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("lease", tests, argc, argv);
}
