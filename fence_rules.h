/*
 * The fence agent's decisions (docs/fence.md "The agent's checks"): a pure function of the
 * agent's state, one check's observation and the monotonic clock, to what it does: carry on,
 * ask its peers, or fence and why. No clock, socket or global: fence.c observes and acts,
 * tests/unit/test_fence_rules.c holds the rules to a table. And the safe time S the agent
 * publishes, computed here once.
 */
#ifndef FENCE_RULES_H
#define FENCE_RULES_H

#include <stdint.h>

/*
 * The shell's deadlines (fence.c), which S counts. A check is, one after the other: its own
 * Lease's requests (a read and, when due, a write; once more after a 409), all within
 * FENCE_LEASE_MS, each within FENCE_API_MS; the kubelet's health; then a page of the peers'
 * list, or asking them in batches (fence_batches), each within FENCE_PEERS_MS. A check that ends
 * early is followed by the next FENCE_CHECK later; one that runs long, at once.
 */
#define FENCE_API_MS 2000        /* one request to the API server */
#define FENCE_LEASE_MS 4000      /* a check's requests on its own Lease, together */
#define FENCE_KUBELET_MS 1000    /* the kubelet's health */
#define FENCE_PEERS_MS 2000      /* a page of the peers' list, or a batch of them asked at once */
#define FENCE_CHECK_LONGEST_MS (FENCE_LEASE_MS + FENCE_KUBELET_MS + FENCE_PEERS_MS) /* but an asking one */
#define FENCE_ASK_FIRST 8        /* peers in a check's first batch: most checks that ask end there */
#define FENCE_ASK_BATCH 256      /* peers in each later batch, asked at once */
#define FENCE_PEERS_MAX 5000     /* peers kept and asked (Kubernetes' largest cluster); more are counted */
#define FENCE_REBOOT_BOUND 10    /* seconds: reboot's action bound (sync's deadline) */
#define FENCE_KUBELET_BAD_CHECKS 2 /* a request is served on a kubelet unhealthy this many checks in a row */
#define FENCE_LISTS 16           /* the last peer lists kept: 8 minutes of lists at the fast pace */
#define FENCE_LIST_FAST 30000    /* ms: the peers listed this often while the agent is new or they shrank */
#define FENCE_LIST_SLOW 300000   /* ms: otherwise this often (one list of at most 300 small Leases) */
#define FENCE_NEW 300000         /* ms: an agent this young lists at the fast pace while its lists grow (a rollout) */

/* Where the agent stands, as of its last check. */
enum fence_phase {
	FENCE_HEALTHY,   /* it reaches the API server; its kubelet is healthy or not checked */
	FENCE_KUBELET,   /* it reaches the API server; its kubelet is unhealthy (counting to fence_after) */
	FENCE_CUT,       /* it does not reach the API server, for less than fence_after */
	FENCE_ASKING,    /* cut off for fence_after: asking its peers every check */
	FENCE_OUTAGE,    /* its peers said most of them cannot reach the API server either: carrying on */
	FENCE_FENCED     /* it decided to fence: final */
};

/* What to do after a check. */
enum fence_do {
	FENCE_CARRY_ON,
	FENCE_ASK_PEERS, /* ask the next batch of peers now, then hand all the answers so far to fence_answers */
	FENCE_FENCE      /* fence now, for the reason in the state */
};

/* Why it fences. */
enum fence_reason {
	FENCE_NO_REASON,
	FENCE_REQUESTED,      /* a request on its own Lease and its kubelet unhealthy two checks in a row */
	FENCE_KUBELET_DOWN,   /* its kubelet unhealthy for fence_after while it reaches the API server */
	FENCE_PEER_REQUESTED, /* cut off, and a peer read a request on its Lease */
	FENCE_ISOLATED        /* cut off, and no peer answered for isolated_after (or none is known) */
};

enum fence_kubelet { FENCE_KUBELET_OFF, FENCE_KUBELET_OK, FENCE_KUBELET_BAD };

/* The settings the rules use, in milliseconds (safe: S). */
struct fence_config {
	int64_t fence_after, isolated_after, safe;
	int jitter;                /* 0-999: this agent's share of a quarter more on each list pace, so that
	                              the agents of one rollout do not list together (fence.c: from its name) */
	int batches;               /* the batches S counts (fence_safe_seconds): a check asks no more */
};

/* The agent's memory between checks; times are monotonic ms, -1: not so. Set by fence_start. */
struct fence_state {
	enum fence_phase phase;
	enum fence_reason reason;  /* FENCE_FENCED: why */
	int64_t started;           /* when the agent started */
	int64_t api_down;          /* since when it has not reached the API server */
	int64_t kubelet_down;      /* since when its kubelet has been unhealthy */
	int kubelet_bad;           /* unhealthy checks in a row */
	int64_t asking;            /* since when it has asked its peers */
	int64_t heard;             /* the last answer that let it carry on (an outage, or a peer that reaches
	                              the API server and saw no request), since asking began */
	/* the last successful peer lists, a ring (fence_listed): when, and how many peers each found */
	int64_t list_at[FENCE_LISTS];
	int list_count[FENCE_LISTS];
	int lists;                 /* lists recorded, ever */
	int list_failures;         /* lists failed since the last that succeeded (fence_list_failed) */
	int64_t list_failed;       /* when the last of them failed */
};

/* One check's observation. */
struct fence_obs {
	int api;                   /* its own Lease read (200), and written when due (or missing): what the
	                              watcher sees of it */
	enum fence_kubelet kubelet;
	int requested;             /* its own Lease, read this check, carries a fence request (api only) */
};

/* The peers' answers so far in one check, over its batches (a bad signature is no answer). */
struct fence_answers {
	int known;                 /* peers asked this check, or to be: the last list's (other agents' Leases
	                              with an address), at most FENCE_PEERS_MAX */
	int answered;              /* that answered with a valid signature */
	int api_down;              /* said they cannot reach the API server */
	int healthy;               /* said they reach it and saw no request for this node */
	int requested;             /* said they read a request on this node's Lease */
	int asked;                 /* batches asked so far this check */
};

/* A fresh state for an agent started at now. */
void fence_start(struct fence_state *st, int64_t now);

/* One check: FENCE_CARRY_ON, FENCE_ASK_PEERS, or FENCE_FENCE (st->reason says why). */
enum fence_do fence_check(struct fence_state *st, const struct fence_config *c, const struct fence_obs *o, int64_t now);

/*
 * After FENCE_ASK_PEERS: the answers of the batches asked so far this check, now (the check's
 * start): FENCE_FENCE, FENCE_CARRY_ON once they settle it (a request, an outage, a healthy peer)
 * or after the last batch (those of the known peers, at most c->batches: a check never runs
 * longer than S counts), else FENCE_ASK_PEERS: ask the next batch. The outage's majority is
 * counted over the check's batches, each peer once: never over answers of another time.
 */
enum fence_do fence_answers(struct fence_state *st, const struct fence_config *c, const struct fence_answers *a,
    int64_t now);

/*
 * Peers, for the majority. A list's count is recorded only when the whole list was read (a
 * list that failed halfway records nothing). fence_answers counts "more than half" of
 * fence_peers: the largest count of the lists made within S of the newest (and never fewer
 * than those asked), so that a list that shrank, because peers were cut off with this one or a
 * rollout removed Leases for a moment, never lets a smaller partitioned set pass as a majority
 * before S has passed, by when the watcher has seen the same. Relative to the newest list, not
 * to now: an agent cut off lists no more, and its last list is up to FENCE_LIST_SLOW old.
 */
void fence_listed(struct fence_state *st, int count, int64_t now);
void fence_list_failed(struct fence_state *st, int64_t now);
int fence_peers(const struct fence_state *st, const struct fence_config *c);
/* Whether a list is due at now: never listed, or FENCE_LIST_FAST since the last while the agent
 * is younger than FENCE_NEW and still learning (its first list, or its last found more than the
 * one before: a rollout under way), or while the last found none or fewer than the one before,
 * else FENCE_LIST_SLOW. After a failed list, FENCE_LIST_FAST since it, doubling with each failure in
 * a row up to FENCE_LIST_SLOW: an API server too loaded to answer a list is not asked again by
 * every agent at every check. Each pace is this agent's jitter longer. */
int fence_list_due(const struct fence_state *st, const struct fence_config *c, int64_t now);

/* The phase's and the reason's names, for the log and the metrics ("healthy", "kubelet", ...). */
const char *fence_phase_name(enum fence_phase p);
const char *fence_reason_name(enum fence_reason r);

/*
 * Asking n peers (the check's first, FENCE_ASK_FIRST, then FENCE_ASK_BATCH at a time): how many
 * batches (at least 1), and batch b's size and first peer, counted from the check's first.
 */
int fence_batches(int n);
int fence_batch(int n, int b, int *from);

/*
 * The safe time S in seconds, all in seconds: renew + fence_after + isolated_after + action +
 * fence_margin(check, batches). The watcher taints S after the last renewal it saw; the agent,
 * cut off just after it, fences before S has passed: its next renewal fails at the first check
 * once renew has passed (one period P = max(check, the longest check L) late at most),
 * fence_after is noticed at a check (P late), isolated_after at an asking check (A late, A =
 * max(check, the longest asking check LA: its Lease, its kubelet and its batches)), and the
 * check that decides ends before it acts (LA), then the action: 2 P + A + LA + 1 s of rounding.
 * S grows with the peers (their batches): the agent publishes the S of the batches it asks.
 * tests/unit/test_fence_rules.c plays that timeline against the rules.
 */
int64_t fence_asking_ms(int batches);
int64_t fence_margin(int64_t check, int batches);
int64_t fence_safe_seconds(int64_t renew, int64_t fence_after, int64_t isolated_after, int64_t action, int64_t check,
    int batches);

#endif
