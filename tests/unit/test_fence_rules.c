/*
 * The fence agent's rules (fence_rules.c) as a table over time: a world (the API server up,
 * cut, healed or flapping; the kubelet off, healthy, unhealthy or flapping; a fence request or
 * none; peers none known, silent, cut off as a majority or a minority, healthy) played check by
 * check every 2 s, and when the agent fences and why. Every combination of the grid is played;
 * the rows after it are the edges. Rules with a defect put in on purpose (a fence in a
 * control-plane outage, a fence with the API server and the kubelet healthy, a fence on a stale
 * request right after boot, ...) must each fail some row: a table they pass proves nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "../../fence_rules.h"

#define CHECK_S 2
#define HORIZON 300
#define FA 30    /* fence_after */
#define IA 30    /* isolated_after */
#define SAFE 159 /* S: the defaults' (check 5 s) */
#define NEVER (-1)

enum api { UP, DOWN, HEAL, TWO_CUTS, FLAP };
enum kub { K_OFF, K_OK, K_BAD10, K_BAD0, K_STARTING, K_ONE_BAD, K_FLAP };
enum req { R_NONE, R0, R60, R100 };
enum peers { P_NONE, P_SILENT, P_MAJORITY, P_MINORITY, P_HEALTHY, P_HALF, P_TWO_OF_FIVE, P_OUTAGE_THEN_SILENT,
	P_HEALTHY_THEN_SILENT, P_SHRUNK, P_SHRUNK_LONG_AGO };

struct world {
	enum api api;
	enum kub kubelet;
	enum req req;
	enum peers peers;
};

static int api_up(enum api a, int t)
{
	switch (a) {
	case UP: return 1;
	case DOWN: return t < 10;
	case HEAL: return t < 10 || t >= 38;              /* healed 2 s before fence_after */
	case TWO_CUTS: return t < 10 || (t >= 38 && t < 40); /* healed for one check, then cut again */
	case FLAP: return t < 10 || (t / CHECK_S) % 2 == 0;  /* every other check */
	}
	return 1;
}

static enum fence_kubelet kubelet(enum kub k, int t)
{
	switch (k) {
	case K_OFF: return FENCE_KUBELET_OFF;
	case K_OK: return FENCE_KUBELET_OK;
	case K_BAD10: return t >= 10 ? FENCE_KUBELET_BAD : FENCE_KUBELET_OK;
	case K_BAD0: return FENCE_KUBELET_BAD;
	case K_STARTING: return t < 20 ? FENCE_KUBELET_BAD : FENCE_KUBELET_OK;  /* a node just booted */
	case K_ONE_BAD: return t == 40 ? FENCE_KUBELET_BAD : FENCE_KUBELET_OK;
	case K_FLAP: return (t / CHECK_S) % 2 ? FENCE_KUBELET_BAD : FENCE_KUBELET_OK;
	}
	return FENCE_KUBELET_OK;
}

static int requested(enum req r, int t)
{
	return r == R0 || (r == R60 && t >= 60) || (r == R100 && t >= 100);
}

/* What the peers answer at t: a healthy peer reports the request as it stands. */
static struct fence_answers answers(enum peers p, enum req r, int t)
{
	struct fence_answers a = { 3, 0, 0, 0, 0, 1 };
	int req = requested(r, t);

	switch (p) {
	case P_NONE: a.known = 0; break;
	case P_SILENT: break;
	case P_MAJORITY: a.answered = a.api_down = 2; break;
	case P_MINORITY: a.answered = a.api_down = 1; break;
	case P_HEALTHY: a.answered = 1; a.healthy = !req; a.requested = req; break;
	case P_HALF: a.known = 4; a.answered = a.api_down = 2; break;
	case P_TWO_OF_FIVE: a.known = 5; a.answered = a.api_down = 2; break;
	case P_OUTAGE_THEN_SILENT: if (t < 100) a.answered = a.api_down = 2; break;
	case P_HEALTHY_THEN_SILENT: if (t < 100) { a.answered = 1; a.healthy = !req; a.requested = req; } break;
	/* the last list found 4 peers, all cut off with this one and answering so; lists before it
	 * found 10 (peers): within S, or S before it */
	case P_SHRUNK: case P_SHRUNK_LONG_AGO: a.known = 4; a.answered = a.api_down = 4; break;
	}
	return a;
}

/* The peer lists the agent made at t, before its check: 10 peers, then 4 (a list of the
 * Leases of those in its own partition only, or a rollout that removed the others' for a moment). */
static void lists(enum peers p, struct fence_state *st, int t)
{
	if (p == P_SHRUNK && (t == 0 || t == 6))
		fence_listed(st, t == 0 ? 10 : 4, (int64_t)t * 1000);
	if (p == P_SHRUNK_LONG_AGO && t == 0) {
		fence_listed(st, 10, -(SAFE + 1) * 1000);
		fence_listed(st, 4, 0);
	}
}

/* The rules played: fence_rules.c's, or one with a defect. */
struct rules {
	const char *name;
	enum fence_do (*step)(struct fence_state *, const struct fence_config *, const struct fence_obs *, int64_t);
	enum fence_do (*answers)(struct fence_state *, const struct fence_config *, const struct fence_answers *, int64_t);
};

struct outcome {
	int at;                  /* seconds, NEVER */
	enum fence_reason why;
	int asked;               /* checks that asked the peers */
};

static struct outcome play(const struct rules *r, const struct world *w)
{
	const struct fence_config c = { FA * 1000, IA * 1000, SAFE * 1000, 0, 1 };
	struct fence_state st;
	struct outcome out = { NEVER, FENCE_NO_REASON, 0 };

	fence_start(&st, 0);
	for (int t = 0; t <= HORIZON; t += CHECK_S) {
		int up = api_up(w->api, t);
		struct fence_obs o = { up, kubelet(w->kubelet, t), up && requested(w->req, t) };
		enum fence_do d;

		lists(w->peers, &st, t);
		d = r->step(&st, &c, &o, (int64_t)t * 1000);
		if (d == FENCE_ASK_PEERS) {
			struct fence_answers a = answers(w->peers, w->req, t);
			out.asked++;
			d = r->answers(&st, &c, &a, (int64_t)t * 1000);
			if (!check(d != FENCE_ASK_PEERS))
				break;
		}
		if (d == FENCE_FENCE) {
			out.at = t;
			out.why = st.reason;
			return out;
		}
	}
	return out;
}

/* The grid's expectations, worked out by hand from docs/fence.md's rules (FA = IA = 30 s). */
static struct outcome expect(const struct world *w)
{
	struct outcome no = { NEVER, FENCE_NO_REASON, 0 };
	int bad = w->kubelet == K_BAD10;

	switch (w->api) {
	case UP:
	case HEAL:
		if (!bad)
			return no;   /* the API server reached and the kubelet healthy: never; a heal before fence_after fences nothing */
		/* kubelet unhealthy from 10: a request fences once up fence_after (30) and reachable (HEAL: 38) */
		if (w->req == R0)
			return (struct outcome){ w->api == UP ? 30 : 38, FENCE_REQUESTED, 0 };
		return (struct outcome){ 40, FENCE_KUBELET_DOWN, 0 };   /* unhealthy for fence_after */
	default:   /* DOWN from 10: asking from 40 */
		switch (w->peers) {
		case P_MAJORITY:
			return no;   /* a control-plane outage */
		case P_HEALTHY:
			if (w->req == R_NONE)
				return no;
			return (struct outcome){ w->req == R0 ? 40 : 60, FENCE_PEER_REQUESTED, 0 };
		default:   /* none known, silent, a minority as cut off: isolated after 30 s of asking */
			return (struct outcome){ 70, FENCE_ISOLATED, 0 };
		}
	}
}

/* The edges: worlds outside the grid, with what must happen. */
static const struct {
	const char *what;
	struct world w;
	struct outcome want;
} edges[] = {
	{ "must-fail: a flapping API server never reaches fence_after", { FLAP, K_OK, R_NONE, P_SILENT }, { NEVER, 0, 0 } },
	{ "must-fail: a flapping kubelet is never unhealthy two checks in a row", { UP, K_FLAP, R0, P_SILENT }, { NEVER, 0, 0 } },
	{ "must-fail: a stale request right after boot, the kubelet still starting", { UP, K_STARTING, R0, P_NONE }, { NEVER, 0, 0 } },
	{ "must-fail: one unhealthy check does not serve a request", { UP, K_ONE_BAD, R0, P_NONE }, { NEVER, 0, 0 } },
	{ "a kubelet that never came up, with a request: fence_after after start", { UP, K_BAD0, R0, P_NONE }, { 30, FENCE_REQUESTED, 0 } },
	{ "a kubelet that never came up: fence_after after start", { UP, K_BAD0, R_NONE, P_NONE }, { 30, FENCE_KUBELET_DOWN, 0 } },
	{ "a cut that healed for one check counts afresh", { TWO_CUTS, K_OK, R_NONE, P_NONE }, { 100, FENCE_ISOLATED, 0 } },
	{ "must-fail: half of the peers is not more than half", { DOWN, K_OK, R_NONE, P_HALF }, { 70, FENCE_ISOLATED, 0 } },
	{ "must-fail: a majority of those answering is not of all known", { DOWN, K_OK, R_NONE, P_TWO_OF_FIVE }, { 70, FENCE_ISOLATED, 0 } },
	{ "an outage then silence: isolated 30 s after the last answer", { DOWN, K_OK, R_NONE, P_OUTAGE_THEN_SILENT }, { 128, FENCE_ISOLATED, 0 } },
	{ "a healthy peer then silence: isolated 30 s after the last answer", { DOWN, K_OK, R_NONE, P_HEALTHY_THEN_SILENT }, { 128, FENCE_ISOLATED, 0 } },
	{ "a request a healthy peer reads later: fenced then", { DOWN, K_BAD10, R100, P_HEALTHY }, { 100, FENCE_PEER_REQUESTED, 0 } },
	{ "must-fail: the kubelet does not matter while cut off, an outage", { DOWN, K_BAD10, R0, P_MAJORITY }, { NEVER, 0, 0 } },
	{ "must-fail: a majority of a shrunken peer set (10 listed, then 4 within S) is none",
	  { DOWN, K_OK, R_NONE, P_SHRUNK }, { 70, FENCE_ISOLATED, 0 } },
	{ "a list of 10 made more than S before the last counts no more", { DOWN, K_OK, R_NONE, P_SHRUNK_LONG_AGO },
	  { NEVER, 0, 0 } },
};

static const int apis[] = { UP, DOWN, HEAL }, kubs[] = { K_OFF, K_OK, K_BAD10 }, reqs[] = { R_NONE, R0, R60 },
	peerss[] = { P_NONE, P_SILENT, P_MAJORITY, P_MINORITY, P_HEALTHY };
#define N(a) (int)(sizeof a / sizeof a[0])

/* How many rows r gets wrong; verbose: say which. */
static int wrong(const struct rules *r, int verbose)
{
	int bad = 0;

	for (int a = 0; a < N(apis); a++)
		for (int k = 0; k < N(kubs); k++)
			for (int q = 0; q < N(reqs); q++)
				for (int p = 0; p < N(peerss); p++) {
					struct world w = { apis[a], kubs[k], reqs[q], peerss[p] };
					struct outcome got = play(r, &w), want = expect(&w);
					if (got.at == want.at && got.why == want.why)
						continue;
					bad++;
					if (verbose)
						fprintf(stderr, "  %s: api %d kubelet %d request %d peers %d: fenced at %d (%s), want %d (%s)\n",
						    r->name, w.api, w.kubelet, w.req, w.peers, got.at, fence_reason_name(got.why), want.at,
						    fence_reason_name(want.why));
				}
	for (int e = 0; e < N(edges); e++) {
		struct outcome got = play(r, &edges[e].w);
		if (got.at == edges[e].want.at && got.why == edges[e].want.why)
			continue;
		bad++;
		if (verbose)
			fprintf(stderr, "  %s: %s: fenced at %d (%s), want %d (%s)\n", r->name, edges[e].what, got.at,
			    fence_reason_name(got.why), edges[e].want.at, fence_reason_name(edges[e].want.why));
	}
	return bad;
}

static const struct rules ours = { "fence_rules.c", fence_check, fence_answers };

static void t_table(void)
{
	check(wrong(&ours, 1) == 0);
}

/* ---- Rules with a defect, each of which the table must catch ---- */

/* an outage not recognised: peers that cannot reach the API server either count for nothing */
static enum fence_do outage_fences(struct fence_state *st, const struct fence_config *c, const struct fence_answers *a,
    int64_t now)
{
	struct fence_answers b = *a;
	b.api_down = 0;
	return fence_answers(st, c, &b, now);
}

/* a request served with the kubelet healthy */
static enum fence_do request_fences(struct fence_state *st, const struct fence_config *c, const struct fence_obs *o,
    int64_t now)
{
	if (o->api && o->requested) {
		st->phase = FENCE_FENCED;
		st->reason = FENCE_REQUESTED;
		return FENCE_FENCE;
	}
	return fence_check(st, c, o, now);
}

/* no uptime rule: a request is served right after boot */
static enum fence_do no_uptime(struct fence_state *st, const struct fence_config *c, const struct fence_obs *o,
    int64_t now)
{
	st->started = -1000000;
	return fence_check(st, c, o, now);
}

/* a minority as cut off counts as an answer: the partition carries on past the safe time */
static enum fence_do minority_heard(struct fence_state *st, const struct fence_config *c, const struct fence_answers *a,
    int64_t now)
{
	struct fence_answers b = *a;
	b.healthy += b.api_down;
	return fence_answers(st, c, &b, now);
}

/* a heal does not count the next cut afresh */
static enum fence_do no_heal(struct fence_state *st, const struct fence_config *c, const struct fence_obs *o,
    int64_t now)
{
	int64_t down = st->api_down;
	enum fence_do d = fence_check(st, c, o, now);
	if (o->api && down >= 0)
		st->api_down = down;
	return d;
}

/* one unhealthy check serves a request */
static enum fence_do one_check(struct fence_state *st, const struct fence_config *c, const struct fence_obs *o,
    int64_t now)
{
	if (o->kubelet == FENCE_KUBELET_BAD && st->kubelet_bad == 0) {
		st->kubelet_bad = 1;
		st->kubelet_down = now;
	}
	return fence_check(st, c, o, now);
}

/* isolation counted from the cut, not from when asking began */
static enum fence_do isolated_from_cut(struct fence_state *st, const struct fence_config *c,
    const struct fence_answers *a, int64_t now)
{
	st->asking = st->api_down;
	return fence_answers(st, c, a, now);
}

/* a majority of those answering taken for a majority of all */
static enum fence_do majority_of_answers(struct fence_state *st, const struct fence_config *c,
    const struct fence_answers *a, int64_t now)
{
	struct fence_answers b = *a;
	b.known = b.answered;
	return fence_answers(st, c, &b, now);
}

/* the majority of the last list's peers only: a set that shrank passes */
static enum fence_do last_list_only(struct fence_state *st, const struct fence_config *c,
    const struct fence_answers *a, int64_t now)
{
	struct fence_state keep = *st;
	enum fence_do d;

	st->lists = 0;
	d = fence_answers(st, c, a, now);
	memcpy(st->list_at, keep.list_at, sizeof st->list_at);
	memcpy(st->list_count, keep.list_count, sizeof st->list_count);
	st->lists = keep.lists;
	return d;
}

/* the kubelet unhealthy fences whether or not the API server is reached */
static enum fence_do kubelet_always(struct fence_state *st, const struct fence_config *c, const struct fence_obs *o,
    int64_t now)
{
	enum fence_do d = fence_check(st, c, o, now);
	if (d != FENCE_FENCE && st->kubelet_down >= 0 && now - st->kubelet_down >= c->fence_after) {
		st->phase = FENCE_FENCED;
		st->reason = FENCE_KUBELET_DOWN;
		return FENCE_FENCE;
	}
	return d;
}

static void t_defects_caught(void)
{
	static const struct rules defects[] = {
		{ "fences in a control-plane outage", fence_check, outage_fences },
		{ "fences on a request with the kubelet healthy", request_fences, fence_answers },
		{ "fences on a stale request right after boot", no_uptime, fence_answers },
		{ "a minority partition carries on", fence_check, minority_heard },
		{ "a heal does not reset the cut", no_heal, fence_answers },
		{ "one unhealthy check serves a request", one_check, fence_answers },
		{ "isolation counted from the cut", fence_check, isolated_from_cut },
		{ "a majority of those answering", fence_check, majority_of_answers },
		{ "the kubelet fences while cut off", kubelet_always, fence_answers },
		{ "the majority of the last list only", fence_check, last_list_only },
	};
	for (int i = 0; i < N(defects); i++) {
		int n = wrong(&defects[i], 0);
		if (!check(n > 0))
			fprintf(stderr, "  the table does not catch: %s\n", defects[i].name);
	}
}

/* Healthy throughout: never asks, never fences, whatever the peers would say. */
static void t_healthy_never_asks(void)
{
	struct world w = { UP, K_OK, R0, P_HEALTHY };
	struct outcome o = play(&ours, &w);
	check(o.at == NEVER && o.asked == 0);
}

/* A decision to fence is final: a check after it, however healthy, fences. */
static void t_fenced_is_final(void)
{
	const struct fence_config c = { FA * 1000, IA * 1000, SAFE * 1000, 0, 1 };
	struct fence_state st;
	struct fence_obs cut = { 0, FENCE_KUBELET_OK, 0 }, fine = { 1, FENCE_KUBELET_OK, 0 };
	struct fence_answers none = { 0, 0, 0, 0, 0, 1 }, healthy = { 3, 1, 0, 1, 0, 1 };

	fence_start(&st, 0);
	check(fence_check(&st, &c, &cut, 0) == FENCE_CARRY_ON && st.phase == FENCE_CUT);
	check(fence_check(&st, &c, &cut, 30000) == FENCE_ASK_PEERS && st.phase == FENCE_ASKING);
	check(fence_answers(&st, &c, &none, 30000) == FENCE_CARRY_ON);
	check(fence_check(&st, &c, &cut, 60000) == FENCE_ASK_PEERS);
	check(fence_answers(&st, &c, &none, 60000) == FENCE_FENCE && st.reason == FENCE_ISOLATED);
	check(fence_check(&st, &c, &fine, 62000) == FENCE_FENCE && st.phase == FENCE_FENCED);
	check(fence_answers(&st, &c, &healthy, 62000) == FENCE_FENCE);
	check(strcmp(fence_phase_name(st.phase), "fenced") == 0 && strcmp(fence_reason_name(st.reason), "isolated") == 0);
}

/* The phases as a check sees them. */
static void t_phases(void)
{
	const struct fence_config c = { FA * 1000, IA * 1000, SAFE * 1000, 0, 1 };
	struct fence_state st;
	struct fence_obs o = { 1, FENCE_KUBELET_BAD, 0 };
	struct fence_answers outage = { 3, 2, 2, 0, 0, 1 };

	fence_start(&st, 0);
	check(fence_check(&st, &c, &o, 0) == FENCE_CARRY_ON && st.phase == FENCE_KUBELET);
	o.kubelet = FENCE_KUBELET_OFF;
	check(fence_check(&st, &c, &o, 2000) == FENCE_CARRY_ON && st.phase == FENCE_HEALTHY);
	o.api = 0;
	check(fence_check(&st, &c, &o, 4000) == FENCE_CARRY_ON && st.phase == FENCE_CUT);
	check(fence_check(&st, &c, &o, 34000) == FENCE_ASK_PEERS && st.phase == FENCE_ASKING);
	check(fence_answers(&st, &c, &outage, 34000) == FENCE_CARRY_ON && st.phase == FENCE_OUTAGE);
	check(fence_check(&st, &c, &o, 36000) == FENCE_ASK_PEERS && st.phase == FENCE_OUTAGE);
	o.api = 1;
	check(fence_check(&st, &c, &o, 38000) == FENCE_CARRY_ON && st.phase == FENCE_HEALTHY);
}

/* The pace of the peer lists: fast while new, after a shrink or none found; slow otherwise. */
static void t_list_pace(void)
{
	const int64_t m = 60000;
	const struct fence_config c = { FA * 1000, IA * 1000, SAFE * 1000, 0, 1 }, late = { FA * 1000, IA * 1000, SAFE * 1000, 999, 1 };
	struct fence_state st;

	fence_start(&st, 0);
	check(fence_list_due(&st, &c, 0));                 /* never listed */
	fence_listed(&st, 5, 0);
	check(!fence_list_due(&st, &c, 29000) && fence_list_due(&st, &c, 30000));   /* new: every 30 s */
	check(!fence_list_due(&st, &late, 30000) && !fence_list_due(&st, &late, 37000) && fence_list_due(&st, &late, 37500));
	fence_listed(&st, 8, 30000);                       /* new and growing: still fast */
	check(fence_list_due(&st, &c, 60000));
	fence_listed(&st, 8, 60000);                       /* new, as many as before: the rollout is done, slow */
	check(!fence_list_due(&st, &c, 90000) && !fence_list_due(&st, &c, 6 * m - 1) && fence_list_due(&st, &c, 6 * m));
	fence_listed(&st, 8, 4 * m);
	check(!fence_list_due(&st, &c, 5 * m) && !fence_list_due(&st, &c, 9 * m - 1) && fence_list_due(&st, &c, 9 * m));
	fence_listed(&st, 3, 9 * m);                       /* fewer than the one before: fast again */
	check(fence_list_due(&st, &c, 9 * m + 30000));
	fence_listed(&st, 3, 10 * m);                      /* as many: slow */
	check(!fence_list_due(&st, &c, 11 * m));
	fence_listed(&st, 0, 20 * m);                      /* none: fast */
	check(fence_list_due(&st, &c, 20 * m + 30000));
	/* failed lists: 30 s after the failure, doubling, at most 5 minutes; a success resets it */
	fence_start(&st, 0);
	fence_list_failed(&st, 0);
	check(!fence_list_due(&st, &c, 5000) && !fence_list_due(&st, &c, 29999) && fence_list_due(&st, &c, 30000));
	fence_list_failed(&st, 30000);
	check(!fence_list_due(&st, &c, 89999) && fence_list_due(&st, &c, 90000));
	for (int i = 0; i < 8; i++)
		fence_list_failed(&st, 90000);
	check(!fence_list_due(&st, &c, 90000 + 5 * m - 1) && fence_list_due(&st, &c, 90000 + 5 * m));
	fence_listed(&st, 4, 100 * m);                     /* an old agent again: slow */
	check(!fence_list_due(&st, &c, 105 * m - 1) && fence_list_due(&st, &c, 105 * m));
}

/* The peers counted for the majority: the most of the lists within S of the newest. */
static void t_peers_counted(void)
{
	const struct fence_config c = { FA * 1000, IA * 1000, SAFE * 1000, 0, 1 };
	struct fence_state st;
	struct fence_answers four = { 4, 4, 4, 0, 0, 1 };

	fence_start(&st, 0);
	check(fence_peers(&st, &c) == 0);
	fence_listed(&st, 10, 0);
	fence_listed(&st, 4, 30000);
	check(fence_peers(&st, &c) == 10);
	fence_listed(&st, 4, SAFE * 1000 + 1);
	check(fence_peers(&st, &c) == 4);                  /* the 10 is more than S before the newest */
	for (int i = 0; i < FENCE_LISTS + 3; i++)          /* the ring wraps */
		fence_listed(&st, i == FENCE_LISTS ? 9 : 2, SAFE * 1000 + 2 + i);
	check(fence_peers(&st, &c) == 9);
	/* four cut off of ten: no outage; asked more than listed (never): those asked count */
	fence_start(&st, 0);
	fence_listed(&st, 10, 0);
	fence_listed(&st, 4, 1000);
	check(fence_check(&st, &c, &(struct fence_obs){ 0, FENCE_KUBELET_OK, 0 }, 2000) == FENCE_CARRY_ON);
	check(fence_check(&st, &c, &(struct fence_obs){ 0, FENCE_KUBELET_OK, 0 }, 32000) == FENCE_ASK_PEERS);
	check(fence_answers(&st, &c, &four, 32000) == FENCE_CARRY_ON && st.phase == FENCE_ASKING);
	fence_start(&st, 0);
	fence_listed(&st, 2, 0);
	st.api_down = 0;
	check(fence_check(&st, &c, &(struct fence_obs){ 0, FENCE_KUBELET_OK, 0 }, 32000) == FENCE_ASK_PEERS);
	check(fence_answers(&st, &c, &(struct fence_answers){ 5, 2, 2, 0, 0, 1 }, 32000) == FENCE_CARRY_ON &&
	    st.phase == FENCE_ASKING);
}

/* S = renew + fence_after + isolated_after + action + margin: 159 s with the defaults. */
static void t_safe_time(void)
{
	check(fence_safe_seconds(60, 30, 30, 10, 5, 1) == 159);
	check(fence_margin(1, 1) == fence_margin(7, 1) && fence_margin(7, 1) == 29);
	check(fence_margin(30, 1) == 3 * 30 + 7 + 1);
}

/*
 * The timeline S is made for, played against the rules with the shell's worst timings: a
 * renewal at 0 (the watcher counts S from it), then a cut that begins at any moment before the
 * next renewal, so that every request fails after it; checks every --fence-check, or at once
 * after one that ran long; a healthy check lasting nothing or the longest, a cut one the
 * longest, an asking one its Lease, its kubelet and every batch to its deadline; peers that never
 * answer (isolated), 0 to 5000 of them (1 to 21 batches). The action must end by S. A margin
 * that forgets a check's rounding (the 5 s it was) fails with a cut just before the renewal is
 * due; one that takes an asking check for a short one, with many peers.
 */
static void t_fences_within_safe_time(void)
{
	/* renew, fence_after and isolated_after over a period's residues: each noticed up to a check late */
	const int64_t checks[] = { 1, 2, 5, 7, 10, 30 }, renews[] = { 10, 56, 57, 58, 59, 60, 61, 62 }, action = 10;
	const int peers[] = { 0, 9, 1000, 5000 };
	int64_t worst = INT64_MIN;

	for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
	for (size_t k = 0; k < sizeof peers / sizeof peers[0]; k++)
		for (size_t r = 0; r < sizeof renews / sizeof renews[0]; r++)
			for (int64_t fa = 28; fa < 36; fa++)
				for (int64_t ia = 28; ia < 36; ia++)
					for (int64_t healthy_ms = 0; healthy_ms <= FENCE_CHECK_LONGEST_MS; healthy_ms += FENCE_CHECK_LONGEST_MS)
						for (int64_t cut = 0; cut < (renews[r] + 40) * 1000; cut += 500) {
							const int batches = fence_batches(peers[k]);
							const int64_t P = checks[i] * 1000, S = fence_safe_seconds(renews[r], fa, ia, action, checks[i],
							    batches);
							const struct fence_config c = { fa * 1000, ia * 1000, S * 1000, 0, batches };
							struct fence_state st;
							int64_t now = 0, renewed = 0, done = -1;

							fence_start(&st, -3600000);
							while (done < 0 && now < 3600000) {
								int due = now - renewed >= renews[r] * 1000, up = now < cut;
								/* a due renewal is written at the end of the check's Lease requests */
								int api = up && (!due || now + FENCE_LEASE_MS < cut);
								struct fence_obs o = { api, FENCE_KUBELET_OFF, 0 };
								int64_t took = api ? healthy_ms : FENCE_CHECK_LONGEST_MS;
								enum fence_do d = fence_check(&st, &c, &o, now);

								if (api && due)
									renewed = now;
								/* every batch asked, none answering, each to its deadline */
								for (int b = 0; d == FENCE_ASK_PEERS; b++) {
									d = fence_answers(&st, &c, &(struct fence_answers){ peers[k], .asked = b + 1 }, now);
									took = fence_asking_ms(b + 1);
								}
								if (d == FENCE_FENCE)
									done = now + took + action * 1000;
								now += took > P ? took : P;
							}
							if (done < 0 || done > renewed + S * 1000) {
								fprintf(stderr, "check %llds, %d peers, renew %llds, after %llds, isolated %llds, healthy check %lldms, "
								    "cut at %lldms: fence ends at %lldms, S %llds after the renewal at %lldms\n",
								    (long long)checks[i], peers[k], (long long)renews[r], (long long)fa, (long long)ia,
								    (long long)healthy_ms, (long long)cut, (long long)done, (long long)S, (long long)renewed);
								check(0);
								return;
							}
							if (done - renewed - S * 1000 > worst)
								worst = done - renewed - S * 1000;
						}
	/* nor loose: whole seconds and a 7 s period leave the worst case within 5 s of S */
	check(worst <= 0 && worst > -5000);
}

/* ---- Many peers: asked in batches within one check ---- */

/* The batches cover the peers once each, in order: FENCE_ASK_FIRST, then FENCE_ASK_BATCH at a time. */
static void t_batches(void)
{
	static const int ns[] = { 0, 1, 8, 9, 264, 265, 1000, 5000 }, want[] = { 1, 1, 1, 2, 2, 3, 5, 21 };

	for (int k = 0; k < N(ns); k++) {
		int n = ns[k], batches = fence_batches(n), covered = 0, from;
		check(batches == want[k]);
		for (int b = 0; b < batches; b++) {
			int size = fence_batch(n, b, &from);
			check(from == covered && (size > 0 || n == 0) && size <= (b ? FENCE_ASK_BATCH : FENCE_ASK_FIRST));
			covered += size;
		}
		check(covered == n && fence_batch(n, batches, &from) == 0);
	}
	/* S grows with the batches: two seconds of deadline each, counted twice (the deciding check's
	 * period and its length) */
	check(fence_margin(5, 1) == 29 && fence_margin(5, 2) == 2 * 7 + 9 + 9 + 1 && fence_margin(5, 21) == 14 + 47 + 47 + 1);
	check(fence_safe_seconds(60, 30, 30, 10, 5, 5) == 159 - 29 + 14 + 15 + 15 + 1);
}

/* A crowd of peers, by their place in the check's order: the first down_first and every
 * down_every-th cut off as well, one healthy (at healthy, -1 none), one that read a request on
 * this node's Lease (at requested, -1 none), the rest silent. */
struct crowd {
	const char *what;
	int n, down_first, down_every, healthy, requested;
	struct outcome want;   /* asked: batches the first asking check asked */
	int published;         /* the batches the S on its Lease counts; 0: as many as the peers need */
};

static const struct crowd crowds[] = {
	{ "must-fail: the first 264 of 1000 cut off with it are no majority", 1000, 264, 0, -1, -1,
	  { 70, FENCE_ISOLATED, 5 }, 0 },
	{ "501 of 1000 cut off, spread over every batch: an outage, once the last batch is in", 1000, 2, 2, -1, -1,
	  { NEVER, 0, 5 }, 0 },
	{ "must-fail: 500 of 1000 is half, not more", 1000, 0, 2, -1, -1, { 70, FENCE_ISOLATED, 5 }, 0 },
	{ "601 of 1000 cut off, the first: an outage at the third batch, the rest not asked", 1000, 601, 0, -1, -1,
	  { NEVER, 0, 3 }, 0 },
	{ "a healthy peer in the fourth batch: carries on, the fifth not asked", 1000, 0, 0, 600, -1, { NEVER, 0, 4 }, 0 },
	{ "a healthy peer in the first: one batch a check", 1000, 0, 0, 3, -1, { NEVER, 0, 1 }, 0 },
	{ "a request read by a peer of the last batch: fenced", 5000, 100, 0, -1, 4990, { 40, FENCE_PEER_REQUESTED, 21 }, 0 },
	{ "none known: isolated", 0, 0, 0, -1, -1, { 70, FENCE_ISOLATED, 1 }, 0 },
	{ "must-fail: 601 of 1000 cut off but an S that counts one batch: no outage, no longer check; it fences", 1000, 601,
	  0, -1, -1, { 70, FENCE_ISOLATED, 1 }, 1 },
};

/* A crowd played as the shell asks it: cut at 10 s, checks every CHECK_S, every batch of a check
 * until the answers settle it. */
static struct outcome play_crowd(const struct rules *r, const struct crowd *w)
{
	const struct fence_config c = { FA * 1000, IA * 1000, SAFE * 1000, 0, w->published ? w->published : fence_batches(w->n) };
	struct fence_state st;
	struct outcome out = { NEVER, FENCE_NO_REASON, 0 };

	fence_start(&st, 0);
	fence_listed(&st, w->n, 0);
	for (int t = 0; t <= HORIZON; t += CHECK_S) {
		struct fence_obs o = { t < 10, FENCE_KUBELET_OK, 0 };
		enum fence_do d = r->step(&st, &c, &o, (int64_t)t * 1000);
		struct fence_answers a = { w->n, 0, 0, 0, 0, 0 };
		int batches = fence_batches(w->n), b;

		for (b = 0; d == FENCE_ASK_PEERS && b < batches; b++) {
			int from, size = fence_batch(w->n, b, &from);
			for (int i = from; i < from + size; i++) {
				int down = i < w->down_first || (w->down_every && i % w->down_every == 0);
				a.answered += down || i == w->healthy || i == w->requested;
				a.api_down += down;
				a.healthy += i == w->healthy;
				a.requested += i == w->requested;
			}
			a.asked = b + 1;
			d = r->answers(&st, &c, &a, (int64_t)t * 1000);
		}
		if (!check(d != FENCE_ASK_PEERS))
			break;
		if (b > 0 && out.asked == 0)
			out.asked = b;
		if (d == FENCE_FENCE) {
			out.at = t;
			out.why = st.reason;
			return out;
		}
	}
	return out;
}

/* How many crowds r gets wrong; verbose: say which. */
static int crowds_wrong(const struct rules *r, int verbose)
{
	int bad = 0;

	for (int k = 0; k < N(crowds); k++) {
		struct outcome got = play_crowd(r, &crowds[k]), want = crowds[k].want;
		if (got.at == want.at && got.why == want.why && got.asked == want.asked)
			continue;
		bad++;
		if (verbose)
			fprintf(stderr, "  %s: %s: fenced at %d (%s) asking %d batches, want %d (%s) asking %d\n", r->name,
			    crowds[k].what, got.at, fence_reason_name(got.why), got.asked, want.at, fence_reason_name(want.why),
			    want.asked);
	}
	return bad;
}

/* decided after the first batch: the rest never asked */
static enum fence_do first_batch_only(struct fence_state *st, const struct fence_config *c, const struct fence_answers *a,
    int64_t now)
{
	struct fence_answers b = *a;
	b.asked = fence_batches(b.known);
	return fence_answers(st, c, &b, now);
}

/* the majority of one page of 300 Leases, 256 asked: the build before batches */
static enum fence_do one_page(struct fence_state *st, const struct fence_config *c, const struct fence_answers *a,
    int64_t now)
{
	struct fence_state keep = *st;
	struct fence_answers b = *a;
	enum fence_do d;

	b.known = b.known < 256 ? b.known : 256;
	st->lists = 0;
	d = fence_answers(st, c, &b, now);
	st->lists = keep.lists;
	return d;
}

static void t_crowds(void)
{
	static const struct rules defects[] = {
		{ "decided after the first batch", fence_check, first_batch_only },
		{ "the majority of one page", fence_check, one_page },
		{ "fences in a control-plane outage", fence_check, outage_fences },
		{ "a minority partition carries on", fence_check, minority_heard },
	};

	check(crowds_wrong(&ours, 1) == 0);
	for (int i = 0; i < N(defects); i++)
		if (!check(crowds_wrong(&defects[i], 0) > 0))
			fprintf(stderr, "  the crowds do not catch: %s\n", defects[i].name);
}

static const struct test tests[] = {
	{ "table", t_table },
	{ "fences_within_safe_time", t_fences_within_safe_time },
	{ "defects_caught", t_defects_caught },
	{ "healthy_never_asks", t_healthy_never_asks },
	{ "fenced_is_final", t_fenced_is_final },
	{ "phases", t_phases },
	{ "safe_time", t_safe_time },
	{ "list_pace", t_list_pace },
	{ "batches", t_batches },
	{ "crowds", t_crowds },
	{ "peers_counted", t_peers_counted },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("fence_rules", tests, argc, argv);
}
