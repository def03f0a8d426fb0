/*
 * The watcher's fence wait (fencewait.h) as a table of scripts: each row feeds one node's record
 * reads, writes and Ready by the clock, and checks what it says to do at given times. Rows
 * marked must-fail guard a safety rule of docs/fence.md: they pass only when the watcher does
 * not taint (or request) when it must not.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "../../fencewait.h"

#define S(x) ((int64_t)((x) * 1000))   /* seconds as the clock's milliseconds */
#define FLOOR 45                          /* --fence-min-safe in the rows */
#define SAFE 100                          /* the agents' fence-safe-seconds in the rows */

#define READ FENCEWAIT_READ
#define REQUEST FENCEWAIT_REQUEST
#define WAIT FENCEWAIT_WAIT
#define TAINT FENCEWAIT_TAINT
#define NEVER FENCEWAIT_NEVER
#define REMOVE FENCEWAIT_REMOVE
#define LEASE FENCEWAIT_GOT_LEASE
#define NONE FENCEWAIT_GOT_NONE
#define FORBIDDEN FENCEWAIT_GOT_FORBIDDEN
#define UNREADABLE FENCEWAIT_GOT_UNREADABLE
#define FAILED FENCEWAIT_GOT_FAILED

/*
 * One step: 'r' a read answered (got; for LEASE: rv, safe, fencing, request), 'w' the request's
 * write answered the same way, 'b' Ready again, 'n' what to do (want), 's' the same in a storm.
 */
struct step {
	char op;
	double at;          /* seconds */
	int got;
	const char *rv;
	long safe;
	int fencing, request;
	int want;
	int exec;           /* the Lease's fence-action is not the watchdog (rows' Leases are watchdog's) */
};
#define R(at, rv, req) { 'r', at, LEASE, rv, SAFE, 0, req, 0, 0 }
#define W(at, rv) { 'w', at, LEASE, rv, SAFE, 0, 1, 0, 0 }
#define RX(at, rv, req) { 'r', at, LEASE, rv, SAFE, 0, req, 0, 1 }
#define WX(at, rv) { 'w', at, LEASE, rv, SAFE, 0, 1, 0, 1 }
#define N(at, want) { 'n', at, 0, NULL, 0, 0, 0, want, 0 }
#define END { 0, 0, 0, NULL, 0, 0, 0, 0, 0 }

struct script {
	const char *what;
	int require;
	struct step steps[12];
};

static const struct script scripts[] = {
	{ "armed: requested, then tainted once both the request and the last change are S old, on a read after that", 0, {
	    N(0, READ), R(0, "1", 0), N(0, REQUEST), W(1, "2"), N(5, WAIT), N(11, READ), R(11, "2", 1), N(20, WAIT),
	    R(95, "2", 1), N(101, READ), R(101, "2", 1), N(101, TAINT) } },
	{ "must-fail: not tainted before S", 0, {
	    R(0, "1", 0), W(1, "2"), R(100.9, "2", 1), N(100.999, WAIT), N(100.5, WAIT), END } },
	{ "must-fail: not tainted on a read sent before the safe time, however late its answer", 0, {
	    R(0, "1", 0), W(1, "2"), R(95, "2", 1), N(105, READ), END } },
	{ "must-fail: a renewal after the request restarts the count", 0, {
	    R(0, "1", 0), W(1, "2"), R(50, "3", 1), R(101, "3", 1), N(101, WAIT), R(145, "3", 1), N(149.999, WAIT),
	    R(150, "3", 1), N(150, TAINT), END } },
	{ "must-fail: a failed read restarts the count", 0, {
	    R(0, "1", 0), W(1, "2"), { 'r', 60, FAILED, NULL, 0, 0, 0, 0, 0 }, R(101, "2", 1), N(101, WAIT),
	    R(160, "2", 1), N(160, TAINT), END } },
	{ "must-fail: an unreadable Lease is never tainted, nor taken for no agent", 0, {
	    { 'r', 0, UNREADABLE, NULL, 0, 0, 0, 0, 0 }, N(0, WAIT), N(9, WAIT), N(10, READ),
	    { 'r', 10, LEASE, "1", -1, 0, 1, 0, 0 }, N(500, READ), { 'r', 500, LEASE, "1", -1, 0, 1, 0, 0 }, N(501, WAIT), END } },
	{ "must-fail: a Lease that turns unreadable after the request is not tainted", 0, {
	    R(0, "1", 0), W(1, "2"), { 'r', 200, LEASE, "2", -1, 0, 1, 0, 0 }, N(200, WAIT), END } },
	{ "must-fail: under require a node without an agent is never tainted", 1, {
	    { 'r', 0, NONE, NULL, 0, 0, 0, 0, 0 }, N(0, NEVER), N(9, NEVER), N(10, READ),
	    { 'r', 10, FORBIDDEN, NULL, 0, 0, 0, 0, 0 }, N(3600, READ), N(11, NEVER), END } },
	{ "under prefer a node without an agent (404, or 403) is tainted as without the fence", 0, {
	    { 'r', 0, NONE, NULL, 0, 0, 0, 0, 0 }, N(0, TAINT), { 'r', 1, FORBIDDEN, NULL, 0, 0, 0, 0, 0 }, N(1, TAINT), END } },
	{ "an agent that appears under require is counted like any other", 1, {
	    { 'r', 0, NONE, NULL, 0, 0, 0, 0, 0 }, N(10, READ), R(10, "1", 0), N(10, REQUEST), W(11, "2"),
	    R(111, "2", 1), N(111, TAINT), END } },
	{ "fencing seen: tainted once it stood the floor, without waiting S", 0, {
	    { 'r', 0, LEASE, "1", SAFE, 1, 0, 0, 0 }, N(0, WAIT), { 'r', 44, LEASE, "1", SAFE, 1, 0, 0, 0 }, N(44.999, WAIT),
	    N(45, READ), { 'r', 45, LEASE, "1", SAFE, 1, 0, 0, 0 }, N(45, TAINT), END } },
	{ "fencing after the request: the floor from when it was first seen", 0, {
	    R(0, "1", 0), W(1, "2"), { 'r', 30, LEASE, "3", SAFE, 1, 1, 0, 0 }, { 'r', 70, LEASE, "3", SAFE, 1, 1, 0, 0 },
	    N(74, WAIT), { 'r', 75, LEASE, "3", SAFE, 1, 1, 0, 0 }, N(75, TAINT), END } },
	{ "must-fail: fencing gone (the agent came back) counts S again from the change", 0, {
	    { 'r', 0, LEASE, "1", SAFE, 1, 1, 0, 0 }, R(40, "2", 1), R(50, "2", 1), N(50, WAIT), R(100, "2", 1), N(100, WAIT),
	    R(140, "2", 1), N(140, TAINT), END } },
	{ "a Lease seen without the request after it was made is requested again, the count from the new write", 0, {
	    R(0, "1", 0), W(1, "2"), R(50, "5", 0), N(50, REQUEST), W(51, "6"), R(101, "6", 1), N(101, WAIT),
	    R(151, "6", 1), N(151, TAINT), END } },
	{ "a request found at the first read (a watcher restarted) counts from that read", 0, {
	    R(0, "1", 1), N(0, WAIT), R(99, "1", 1), N(99.5, WAIT), R(100, "1", 1), N(100, TAINT), END } },
	{ "S is never below the floor", 0, {
	    { 'r', 0, LEASE, "1", 10, 0, 0, 0, 0 }, { 'w', 1, LEASE, "2", 10, 0, 1, 0, 0 }, { 'r', 11, LEASE, "2", 10, 0, 1, 0, 0 },
	    N(11, WAIT),
	    { 'r', 46, LEASE, "2", 10, 0, 1, 0, 0 }, N(46, TAINT), END } },
	{ "must-fail: more than half Unknown: nothing requested", 0, {
	    R(0, "1", 0), { 's', 0, 0, NULL, 0, 0, 0, WAIT, 0 }, { 's', 10, 0, NULL, 0, 0, 0, READ, 0 }, N(0, REQUEST), END } },
	{ "must-fail: more than half Unknown: nothing waiting on a fence tainted", 0, {
	    R(0, "1", 0), W(1, "2"), R(101, "2", 1), { 's', 101, 0, NULL, 0, 0, 0, WAIT, 0 }, N(101, TAINT), END } },
	{ "a failed write reads the Lease again at once", 0, {
	    R(0, "1", 0), { 'w', 1, FAILED, NULL, 0, 0, 0, 0, 0 }, N(1, READ), R(1, "3", 0), N(1, REQUEST), END } },
	{ "Ready again: the request comes off", 0, {
	    R(0, "1", 0), W(1, "2"), { 'b', 5, 0, NULL, 0, 0, 0, 0, 0 }, N(5, REMOVE), N(500, REMOVE), END } },
	{ "a request we may not write (403) counts as no agent: tainted under prefer", 0, {
	    R(0, "1", 0), { 'w', 1, FORBIDDEN, NULL, 0, 0, 0, 0, 0 }, N(1, TAINT), END } },
	{ "must-fail: a request we may not write (403) under require: never tainted", 1, {
	    R(0, "1", 0), { 'w', 1, FORBIDDEN, NULL, 0, 0, 0, 0, 0 }, N(1, NEVER), END } },
	{ "must-fail: under require, an agent without the watchdog is not taken as fenced for its silence", 1, {
	    RX(0, "1", 0), N(0, REQUEST), WX(1, "2"), RX(111, "2", 1), N(111, WAIT), RX(500, "2", 1), N(500, WAIT), END } },
	{ "under require, an agent without the watchdog is tainted on its fencing mark", 1, {
	    RX(0, "1", 0), WX(1, "2"), { 'r', 30, LEASE, "3", SAFE, 1, 1, 0, 1 }, { 'r', 75, LEASE, "3", SAFE, 1, 1, 0, 1 },
	    N(75, TAINT), END } },
	{ "under prefer, an agent without the watchdog silent for S is tainted (as without the fence, later)", 0, {
	    RX(0, "1", 0), WX(1, "2"), RX(101, "2", 1), N(101, TAINT), END } },
	{ "a Lease gone after the request (404) is no agent", 0, {
	    R(0, "1", 0), W(1, "2"), { 'r', 20, NONE, NULL, 0, 0, 0, 0, 0 }, N(20, TAINT), END } },
};

static void t_scripts(void)
{
	const struct fencewait_rules prefer = { 0, S(FLOOR) }, require = { 1, S(FLOOR) };

	for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
		const struct script *sc = &scripts[i];
		const struct fencewait_rules *r = sc->require ? &require : &prefer;
		struct fencewait w;
		struct fencewait_do d;

		fencewait_init(&w, "agent-1");
		for (int j = 0; j < 12 && sc->steps[j].op; j++) {
			const struct step *st = &sc->steps[j];
			struct json_fence f = { "noderecover-fence-agent-1", "", st->safe, st->fencing, st->request, !st->exec };
			if (st->rv)
				snprintf(f.rv, sizeof f.rv, "%s", st->rv);
			switch (st->op) {
			case 'r':
				fencewait_read(&w, (enum fencewait_got)st->got, &f, r, S(st->at), S(st->at));
				break;
			case 'w':
				fencewait_wrote(&w, (enum fencewait_got)st->got, &f, r, S(st->at), S(st->at));
				break;
			case 'b':
				fencewait_ready(&w);
				break;
			default:
				fencewait_next(&w, r, st->op == 's', S(st->at), &d);
				if (!check((int)d.kind == st->want))
					fprintf(stderr, "  %s: step %d at %.3fs: did %d, wanted %d\n", sc->what, j + 1, st->at, d.kind, st->want);
			}
		}
	}
}

/* A WAIT says until when, so the loop wakes for the safe time, not a poll later. */
static void t_wakes_at_the_safe_time(void)
{
	const struct fencewait_rules r = { 0, S(FLOOR) };
	struct json_fence f = { "x", "2", SAFE, 0, 1, 1 };
	struct fencewait w;
	struct fencewait_do d;

	fencewait_init(&w, "agent-1");
	fencewait_read(&w, LEASE, &f, &r, S(0), S(0));
	fencewait_read(&w, LEASE, &f, &r, S(95), S(95));
	fencewait_next(&w, &r, 0, S(96), &d);
	check(d.kind == FENCEWAIT_WAIT && d.until == S(100));
	fencewait_read(&w, LEASE, &f, &r, S(50), S(50));
	fencewait_next(&w, &r, 0, S(51), &d);
	check(d.kind == FENCEWAIT_WAIT && d.until == S(50) + FENCEWAIT_READ_MS);
}

/* The words plan and the log use. */
static void t_state(void)
{
	const struct fencewait_rules r = { 0, S(FLOOR) };
	struct json_fence f = { "x", "1", SAFE, 0, 0, 1 };
	struct fencewait w;
	char b[64];

	fencewait_init(&w, "agent-1");
	fencewait_read(&w, NONE, &f, &r, 0, 0);
	check(strcmp(fencewait_state(&w, &r, 0, b, sizeof b), "no agent") == 0);
	fencewait_read(&w, LEASE, &f, &r, 0, 0);
	check(strcmp(fencewait_state(&w, &r, 0, b, sizeof b), "armed") == 0);
	f.request = 1;
	snprintf(f.rv, sizeof f.rv, "2");
	fencewait_wrote(&w, LEASE, &f, &r, S(1), S(1));
	check(strcmp(fencewait_state(&w, &r, S(61), b, sizeof b), "requested, safe in 40s") == 0);
	check(strcmp(fencewait_state(&w, &r, S(60.5), b, sizeof b), "requested, safe in 41s") == 0);
	check(strcmp(fencewait_state(&w, &r, S(101), b, sizeof b), "safe") == 0);
	f.fencing = 1;
	fencewait_read(&w, LEASE, &f, &r, S(10), S(10));
	check(strcmp(fencewait_state(&w, &r, S(20), b, sizeof b), "fencing, safe in 35s") == 0);
	fencewait_read(&w, UNREADABLE, &f, &r, S(30), S(30));
	check(strcmp(fencewait_state(&w, &r, S(30), b, sizeof b), "unreadable") == 0);
}

/* The table: fixed, found by name, full at FENCEWAIT_MAX, swept of nodes a list no longer holds. */
static void t_table(void)
{
	static struct fencewait_table t;
	char name[32];

	for (int i = 0; i < FENCEWAIT_MAX; i++) {
		snprintf(name, sizeof name, "node-%d", i);
		check(fencewait_add(&t, name) != NULL);
	}
	check(fencewait_add(&t, "one-more") == NULL);
	check(fencewait_find(&t, "node-7") != NULL && strcmp(fencewait_find(&t, "node-7")->node, "node-7") == 0);
	fencewait_forget(&t, fencewait_find(&t, "node-7"));
	check(fencewait_find(&t, "node-7") == NULL && t.n == FENCEWAIT_MAX - 1);
	check(fencewait_find(&t, "node-255") != NULL);   /* the last moved into the gap */
	fencewait_sweep(&t);                              /* all were just added: kept, their marks cleared */
	check(t.n == FENCEWAIT_MAX - 1);
	fencewait_find(&t, "node-3")->seen = 1;
	fencewait_sweep(&t);                              /* a whole list held node-3 alone */
	check(t.n == 1 && fencewait_find(&t, "node-3") != NULL);
}

/* A node a list read: kept through the sweep; Ready again, its request comes off, and a Ready
 * node with our taint and no record gets one (a request from before a restart); no other does. */
static void t_listed(void)
{
	static struct fencewait_table t;
	struct node_facts f;

	memset(&f, 0, sizeof f);
	f.oos_taint = -1;
	snprintf(f.name, sizeof f.name, "waiting");
	f.ready = NODE_READY_UNKNOWN;
	fencewait_add(&t, "waiting");
	fencewait_add(&t, "gone");
	fencewait_sweep(&t);                       /* new records count as seen once */
	fencewait_listed(&t, &f);
	check(fencewait_count(&t) == 2 && !fencewait_back(fencewait_find(&t, "waiting")));
	fencewait_sweep(&t);                       /* "gone" was not in the list */
	check(fencewait_count(&t) == 1 && fencewait_find(&t, "gone") == NULL);
	f.ready = NODE_READY_TRUE;                 /* back: its request comes off */
	fencewait_listed(&t, &f);
	check(fencewait_back(fencewait_find(&t, "waiting")));
	snprintf(f.name, sizeof f.name, "healthy");   /* must-fail: a Ready node without our taint gets no record */
	fencewait_listed(&t, &f);
	check(fencewait_find(&t, "healthy") == NULL);
	snprintf(f.name, sizeof f.name, "restarted"); /* ... with our taint, one to remove a request left from before */
	f.oos_taint = 0;
	f.our_annotation = 1;
	fencewait_listed(&t, &f);
	check(fencewait_find(&t, "restarted") != NULL && fencewait_back(fencewait_find(&t, "restarted")));
	check(fencewait_count(&t) == 2 && fencewait_at(&t, 1) == fencewait_find(&t, "restarted"));
}

static const struct test tests[] = {
	{ "scripts", t_scripts },
	{ "listed", t_listed },
	{ "wakes_at_the_safe_time", t_wakes_at_the_safe_time },
	{ "state", t_state },
	{ "table", t_table },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("fencewait", tests, argc, argv);
}
