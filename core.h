/*
 * The follower's decisions as one state machine: when to list, when to watch and from which
 * resourceVersion, what each event changes in the table, when the table is decided on (a
 * round), when to back off, and when a view is no longer trusted. Every input comes with now
 * (monotonic milliseconds) as an argument, and core_next says what to do next; nothing here
 * reads a clock, a socket, a signal or a global, sleeps or allocates (but the table's own
 * growth), so tests/sim can drive it through hours of faults in virtual time and a failing
 * seed replays exactly. Randomness (jitter) comes from a seed the caller gives. Log lines go to
 * the caller's say callback; the shell (follow.c) carries out the rest.
 *
 * Owns the node table, the backoff, the relist and confirm rules and the stream's timing. The
 * per-node rules are policy.c's; the round over the table (which may write) is pass.c's, asked
 * for by CORE_DO_ROUND; the Lease is election.c's, told here only as leading or not.
 */
#ifndef CORE_H
#define CORE_H

#include <stddef.h>
#include <stdint.h>
#include "node.h"
#include "table.h"

/* The fixed timers, in milliseconds already scaled for tests by the shell (clock_span). */
struct core_timing {
	int64_t poll_ms;          /* a round over every node (--poll) */
	int64_t relist_ms;        /* a whole list at least this often, jittered down to 80 % (--relist) */
	int64_t silence_ms;       /* no event nor bookmark this long: the stream is dropped and resumed */
	int64_t backoff_min_ms;   /* client-go's reflector backoff: 0.8 s doubling to 30 s, jittered, */
	int64_t backoff_max_ms;   /* back to the start after healthy_ms without a failure, or a */
	int64_t healthy_ms;       /* stream that delivered events */
	int64_t settle_ms;        /* events are decided on once the stream paused this long, */
	int64_t settle_max_ms;    /* or after at most this: a burst is counted whole */
	int64_t short_ms;         /* a stream that ends sooner with no event was no stream (a backoff) */
	long timeout_min_s;       /* timeoutSeconds asked of each watch: uniform in min..max */
	long timeout_max_s;
	long cheap_min_nodes;     /* from this many nodes on, a new taint is confirmed without a list: */
	int64_t cheap_wait_ms;    /* the store's resourceVersion is read (CORE_DO_FRESH), and the table
	                             decided on once the stream has passed it, or listed after this */
};

/* Why a list is made: each counted on its own (relists_total's reason). */
enum core_why { CORE_WHY_START, CORE_WHY_EXPIRED, CORE_WHY_BROKEN, CORE_WHY_PERIODIC, CORE_WHY_FAILED,
	CORE_WHY_CONFIRM, CORE_WHYS };

/* Where the follower stands: one name, not a set of flags. */
enum core_phase {
	CORE_IDLE,     /* not leading: nothing listed, nothing watched, the table forgotten */
	CORE_LIST,     /* the table cannot be trusted: a whole list is next (at retry_at) */
	CORE_WATCH,    /* the table holds a list and every event since: a stream is next (at retry_at) */
	CORE_STREAM    /* ... and a stream from rv is open */
};

/*
 * A new taint or delete is never decided on a table that may lag the cluster. Where the cluster
 * is small a list proves the facts fresh; where it is big (cheap_min_nodes) that list costs more
 * than the watch saves, so the core asks for the store's current resourceVersion and decides on
 * the table once the stream has delivered an event or bookmark at or past it (resourceVersions
 * compared as the decimal revisions etcd and kine give; anything else: a list). Nodes due
 * together share one confirmation.
 */
enum core_confirm {
	CORE_CONFIRM_NONE,   /* nothing to confirm */
	CORE_CONFIRM_ASK,    /* the store's resourceVersion is next (at confirm_at) */
	CORE_CONFIRM_WAIT    /* ... read: waiting for the stream to pass it, until confirm_until */
};

/* How a stream ended, or why one could not be opened (kube.h's kube_watch_end, as the shell saw it). */
enum core_end {
	CORE_END_CLEAN,    /* the server ended it (its timeout), or it went silent: resume from rv */
	CORE_END_EXPIRED,  /* 410 (by status or ERROR event, by its code): rv is gone, list */
	CORE_END_BROKEN,   /* the grammar or the bound broke: events may be lost, list */
	CORE_END_FAILED    /* the request or the wire failed, or an ERROR of another kind: resume */
};

/* What to do next. */
enum core_do_kind {
	CORE_DO_WAIT,   /* nothing before until (a wait, ended early by what the caller also waits on) */
	CORE_DO_LIST,   /* close any stream; list into the table (a pass that decides and acts: pass_run),
	                   then core_listed */
	CORE_DO_WATCH,  /* open a stream from rv with timeoutSeconds timeout_s, then core_opened or core_ended */
	CORE_DO_READ,   /* read the open stream until until at most (each event: core_event; its end: core_ended) */
	CORE_DO_ROUND,  /* a round over the table (pass_table) at server_now: every node (all) or what
	                   changed and every Unknown one, and with confirmed, the table proven fresh: it
	                   may taint and delete as a list may; then core_rounded */
	CORE_DO_FRESH   /* read the store's current resourceVersion (kube_nodes_rv) on another
	                   connection than the stream's, keeping the stream; then core_fresh */
};
struct core_do {
	enum core_do_kind kind;
	int64_t until;          /* WAIT, READ: monotonic ms */
	enum core_why why;      /* LIST */
	const char *rv;         /* WATCH: the resourceVersion to watch from (the core's) */
	long timeout_s;         /* WATCH */
	int all;                /* ROUND */
	int confirmed;          /* ROUND: the table is as fresh as a list */
	int64_t server_now;     /* ROUND: Unix seconds by the API server's clock */
};

/* The kinds of watch event (kube.h's kube_event_type). */
enum core_event_type { CORE_ADDED, CORE_MODIFIED, CORE_DELETED, CORE_BOOKMARK, CORE_ERROR };
struct core_event {
	enum core_event_type type;
	const char *rv;               /* the resourceVersion it brings ("" for an ERROR, or an object
	                                 too large to read) */
	const struct node_facts *f;   /* ADDED, MODIFIED, DELETED; NULL for a bookmark or an ERROR */
	const char *why;              /* not NULL: the node could not be read (f->name as far as read,
	                                 "" when its object was too large to read at all) */
};

typedef void (*core_say_fn)(void *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The follower. Its fields are core.c's alone (tests/sim reads phase and table through core.h's
 * functions only). Zero it, then core_init. */
struct core {
	struct core_timing tm;
	core_say_fn say;
	void *say_ctx;
	struct table table;
	enum core_phase phase;
	enum core_why why;          /* CORE_LIST: why */
	char rv[NODE_RV_MAX + 1];   /* the last resourceVersion seen: the list's, an event's or a bookmark's */
	int64_t retry_at;           /* no request before (a backoff, Retry-After) */
	int64_t backoff_ms;         /* the next backoff's base */
	int64_t healthy_since;      /* since when nothing failed */
	int64_t opened_at;          /* CORE_STREAM: when it opened */
	long events;                /* ... events on it, ERROR not counted */
	int64_t heard;              /* ... the last event or bookmark (an ERROR is not hearing) */
	int64_t relist_at;          /* the next periodic list */
	int64_t date, date_at;      /* the API server's Date (Unix seconds) and when it came */
	int64_t settle_at, settle_max; /* decide on events then (0: none waiting) */
	int64_t round_at;           /* the next round over every node (the poll) */
	int64_t due_at;             /* a node crosses a threshold (0: none ahead) */
	int failing;                /* a failure was said; said again only once it works */
	int said;                   /* the stream from this list's resourceVersion was said */
	int too_large_said;         /* an object too large to read was said on this stream */
	int expired_run;            /* a 410 came with no event since the last: the next backs off */
	enum core_confirm confirm;
	int64_t confirm_at;         /* CORE_CONFIRM_ASK: not before (a backoff after a failed read) */
	char confirm_rv[NODE_RV_MAX + 1]; /* CORE_CONFIRM_WAIT: the stream must pass this */
	int64_t confirm_until;      /* ... or a list decides after this */
	uint64_t rng;
};

/* Ready for the first core_lead. seed: jitter only (nonzero is used as is, 0 becomes 1). */
void core_init(struct core *c, const struct core_timing *tm, uint64_t seed, core_say_fn say, void *say_ctx);

/* Leading or not, at now. Starting to lead: a list first. Stopping: the stream is to be closed
 * (core_next says LIST never while idle; the shell closes its stream on any change to IDLE) and
 * the table forgotten. */
void core_lead(struct core *c, int leading, int64_t now);

/* What to do at now. */
void core_next(struct core *c, int64_t now, struct core_do *d);

/*
 * A list ended at now: ok, with the list's rv, date (Unix seconds by the API server's clock: its
 * first page's Date, or the local clock's when it had none) and date_at (when that Date came, on
 * the caller's monotonic clock: a list of many pages takes seconds, and the server's clock must
 * not lag by them), and due_in (seconds from now until the first node known to the pass crosses
 * a threshold; -1: none); else it failed (a backoff).
 */
void core_listed(struct core *c, int ok, const char *rv, int64_t date, int64_t date_at, int64_t due_in, int64_t now);

/* A stream opened at now (date: its Date, -1 none). */
void core_opened(struct core *c, int64_t date, int64_t now);

/* One event of the open stream, at now. */
void core_event(struct core *c, const struct core_event *ev, int64_t now);

/*
 * The stream ended at now, or could not be opened (then events is 0): how, what the server
 * said of it (error: one line, for the log) and its Retry-After (seconds; -1 none).
 */
void core_ended(struct core *c, enum core_end end, const char *error, long retry_after, int64_t now);

/*
 * A round ended at now: all as asked; due_in as core_listed's; confirm: a node wants a new
 * taint or delete, which is decided on fresh facts only (pass.h): a list, or in a big cluster
 * the store's resourceVersion and a confirmed round once the stream has passed it.
 */
void core_rounded(struct core *c, int all, int64_t due_in, int confirm, int64_t now);

/*
 * The store's resourceVersion was read at now (ok), or could not be (a backoff; the stream is
 * kept, and asked again after it).
 */
void core_fresh(struct core *c, int ok, const char *rv, int64_t now);

/* The phase (for tests and the simulator). */
enum core_phase core_phase(const struct core *c);

/* The table the lists and events feed (pass.c reads and marks it). */
struct table *core_table(struct core *c);

/* Gives the table's memory back. */
void core_free(struct core *c);

#endif
