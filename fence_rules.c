/*
 * The fence agent's rules (fence_rules.h), as docs/fence.md "The agent's checks" words them.
 * Pure: the state, the observation and the time in, what to do out.
 */
#include "fence_rules.h"

void fence_start(struct fence_state *st, int64_t now)
{
	*st = (struct fence_state){ .phase = FENCE_HEALTHY, .reason = FENCE_NO_REASON, .started = now, .api_down = -1,
	    .kubelet_down = -1, .asking = -1, .heard = -1 };
}

static enum fence_do fence(struct fence_state *st, enum fence_reason why)
{
	st->phase = FENCE_FENCED;
	st->reason = why;
	return FENCE_FENCE;
}

enum fence_do fence_check(struct fence_state *st, const struct fence_config *c, const struct fence_obs *o, int64_t now)
{
	if (st->phase == FENCE_FENCED)
		return FENCE_FENCE;
	if (o->kubelet != FENCE_KUBELET_BAD) {
		st->kubelet_down = -1;
		st->kubelet_bad = 0;
	} else if (st->kubelet_bad++ == 0) {
		st->kubelet_down = now;
	}
	if (o->api) {
		/* reached: a cut that heals, however long it lasted, fences nothing */
		st->api_down = st->asking = st->heard = -1;
		if (o->kubelet != FENCE_KUBELET_BAD) {
			/* with its kubelet healthy it never fences, a request or not */
			st->phase = FENCE_HEALTHY;
			return FENCE_CARRY_ON;
		}
		/* a node just started, whose kubelet is still starting, must not fence again on
		 * the request that fenced it: a request is served after fence_after of uptime */
		if (o->requested && st->kubelet_bad >= FENCE_KUBELET_BAD_CHECKS && now - st->started >= c->fence_after)
			return fence(st, FENCE_REQUESTED);
		if (now - st->kubelet_down >= c->fence_after)
			return fence(st, FENCE_KUBELET_DOWN);
		st->phase = FENCE_KUBELET;
		return FENCE_CARRY_ON;
	}
	if (st->api_down < 0)
		st->api_down = now;
	if (now - st->api_down < c->fence_after) {
		st->phase = FENCE_CUT;
		return FENCE_CARRY_ON;
	}
	if (st->asking < 0)
		st->asking = now;
	if (st->phase != FENCE_OUTAGE)
		st->phase = FENCE_ASKING;
	return FENCE_ASK_PEERS;
}

enum fence_do fence_answers(struct fence_state *st, const struct fence_config *c, const struct fence_answers *a,
    int64_t now)
{
	if (st->phase == FENCE_FENCED)
		return FENCE_FENCE;
	if (a->requested > 0)
		return fence(st, FENCE_PEER_REQUESTED);
	/* more than half of all known peers, answering or not, cut off as well: the control plane */
	int known = fence_peers(st, c) > a->known ? fence_peers(st, c) : a->known;
	if (known > 0 && 2 * a->api_down > known) {
		st->phase = FENCE_OUTAGE;
		st->heard = now;
		return FENCE_CARRY_ON;
	}
	st->phase = FENCE_ASKING;
	if (a->healthy > 0) {
		/* the API server is there and nobody asked for this node: the watcher must request
		 * before it counts, and a peer would say so */
		st->heard = now;
		return FENCE_CARRY_ON;
	}
	/* nothing settled: the next batch may hold a healthy peer, or the rest of a majority, unless
	 * S counts no more batches (it grows only once the agent wrote it: fence.c) */
	if (a->asked < fence_batches(a->known) && a->asked < c->batches)
		return FENCE_ASK_PEERS;
	/* a few peers as cut off as this one are no answer: a minority partition must fence
	 * within the safe time whatever its members tell each other */
	if (now - (st->heard > st->asking ? st->heard : st->asking) >= c->isolated_after)
		return fence(st, FENCE_ISOLATED);
	return FENCE_CARRY_ON;
}

void fence_listed(struct fence_state *st, int count, int64_t now)
{
	int i = st->lists++ % FENCE_LISTS;

	st->list_at[i] = now;
	st->list_count[i] = count;
	st->list_failures = 0;
}

int fence_peers(const struct fence_state *st, const struct fence_config *c)
{
	int n = st->lists < FENCE_LISTS ? st->lists : FENCE_LISTS, best = 0;
	int64_t newest;

	if (n == 0)
		return 0;
	newest = st->list_at[(st->lists - 1) % FENCE_LISTS];
	for (int i = 0; i < n; i++)
		if (newest - st->list_at[i] <= c->safe && st->list_count[i] > best)
			best = st->list_count[i];
	return best;
}

void fence_list_failed(struct fence_state *st, int64_t now)
{
	st->list_failures++;
	st->list_failed = now;
}

int fence_list_due(const struct fence_state *st, const struct fence_config *c, int64_t now)
{
	int last, before;
	int64_t pace, since;

	if (st->list_failures > 0) {
		pace = FENCE_LIST_FAST << (st->list_failures < 5 ? st->list_failures - 1 : 4);
		pace = pace < FENCE_LIST_SLOW ? pace : FENCE_LIST_SLOW;
		since = st->list_failed;
	} else if (st->lists == 0) {
		return 1;
	} else {
		last = st->list_count[(st->lists - 1) % FENCE_LISTS];
		before = st->lists > 1 ? st->list_count[(st->lists - 2) % FENCE_LISTS] : last;
		/* young and still learning (its first list, or more than the one before), or none or
		 * fewer than before: fast */
		pace = (now - st->started < FENCE_NEW && (st->lists == 1 || last > before)) || last == 0 || last < before ?
		    FENCE_LIST_FAST : FENCE_LIST_SLOW;
		since = st->list_at[(st->lists - 1) % FENCE_LISTS];
	}
	return now - since >= pace + pace * c->jitter / 4000;
}

const char *fence_phase_name(enum fence_phase p)
{
	static const char *const names[] = { "healthy", "kubelet", "cut", "asking", "outage", "fenced" };
	return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : "?";
}

const char *fence_reason_name(enum fence_reason r)
{
	static const char *const names[] = { "none", "requested", "kubelet", "peer-requested", "isolated" };
	return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

int fence_batches(int n)
{
	return n <= FENCE_ASK_FIRST ? 1 : 1 + (n - FENCE_ASK_FIRST + FENCE_ASK_BATCH - 1) / FENCE_ASK_BATCH;
}

int fence_batch(int n, int b, int *from)
{
	int size;

	*from = b == 0 ? 0 : FENCE_ASK_FIRST + (b - 1) * FENCE_ASK_BATCH;
	size = b == 0 ? FENCE_ASK_FIRST : FENCE_ASK_BATCH;
	return *from >= n ? 0 : n - *from < size ? n - *from : size;
}

int64_t fence_asking_ms(int batches)
{
	return FENCE_LEASE_MS + FENCE_KUBELET_MS + (int64_t)(batches > 1 ? batches : 1) * FENCE_PEERS_MS;
}

int64_t fence_margin(int64_t check, int batches)
{
	int64_t longest = (FENCE_CHECK_LONGEST_MS + 999) / 1000, asking = (fence_asking_ms(batches) + 999) / 1000;
	int64_t period = check > longest ? check : longest, asking_period = check > asking ? check : asking;

	return 2 * period + asking_period + asking + 1;
}

int64_t fence_safe_seconds(int64_t renew, int64_t fence_after, int64_t isolated_after, int64_t action, int64_t check,
    int batches)
{
	return renew + fence_after + isolated_after + action + fence_margin(check, batches);
}
