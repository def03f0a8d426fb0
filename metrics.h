/*
 * What noderecover tells Prometheus and the kubelet: counters and gauges the loop sets, the
 * Prometheus text exposition of them, and the /livez and /readyz rules. Fixed-size state behind
 * one mutex, so the listener's thread reads what the loop writes; nothing here allocates, does
 * I/O, or knows HTTP or Kubernetes.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stddef.h>
#include <stdint.h>

/* The exact Content-Type of the Prometheus text format 0.0.4 (Prometheus 3 refuses a scrape
 * whose Content-Type it cannot parse, a comma for the ';' included). */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* How a pass ended: ok, failed (a listing, an action or a refusal failed it), or held (it
 * failed nothing, but the storm guard held an action back). */
enum metrics_pass { METRICS_PASS_OK, METRICS_PASS_FAILED, METRICS_PASS_HELD, METRICS_PASSES };

enum metrics_kind { METRICS_TAINT, METRICS_CLEAR, METRICS_DELETE, METRICS_KINDS };

/* What became of one decided action; each decided action counts once, under its last word. */
enum metrics_result {
	METRICS_OK,        /* the change was stored */
	METRICS_DRY_RUN,   /* a dry run: not sent, or sent with dryRun=All and accepted */
	METRICS_CHANGED,   /* the node kept changing under us, or needed nothing once read again */
	METRICS_GONE,      /* 404: the node was already gone */
	METRICS_FAILED,    /* the API refused it or the request failed; retried next pass */
	METRICS_REFUSED,   /* a delete refused by a safety rule (control-plane, etcd, quorum) */
	METRICS_HELD,      /* held back by the storm guard */
	METRICS_EXCLUDED,  /* not done: the node carries the opt-out label */
	METRICS_RESULTS
};

/* Ready condition states, as node.h counts them. */
enum metrics_ready { METRICS_READY_TRUE, METRICS_READY_FALSE, METRICS_READY_UNKNOWN, METRICS_READY_NONE, METRICS_READIES };

/* Pass duration histogram bounds, seconds: a pass is well under a second on a healthy
 * cluster, and a list may take up to 600 s. */
#define METRICS_BUCKETS 10

/* Failed listings in a row after which /readyz fails (it passes again once one succeeds). */
#define METRICS_LIST_FAILURES 3

/*
 * Starts afresh: every counter 0, leader 1, version the build's (kept, must outlive the
 * process). poll and list_seconds: the loop's poll interval and the longest a list may take,
 * for /livez; now: the monotonic clock in seconds, counted as the last start of a pass so a
 * process that has not begun its first pass yet is alive. Call before any other metrics_ call
 * and before the listener starts.
 */
void metrics_init(const char *version, int64_t poll, int64_t list_seconds, int64_t now);

/* At the start of every round of the loop (now: monotonic seconds), for /livez. */
void metrics_pass_started(int64_t now);
/* After each pass's listing: ok nonzero when the whole list was read, for /readyz. */
void metrics_list_result(int ok);
/* After each pass: how it ended, how long it took (ms), and the wall clock (Unix seconds). */
void metrics_pass_done(enum metrics_pass r, int64_t duration_ms, int64_t wall);
/* One decided action, counted once under what finally became of it. */
void metrics_action(enum metrics_kind k, enum metrics_result r);
/* The last complete list: nodes by Ready state, and Ready etcd members. */
void metrics_nodes(const long by_ready[METRICS_READIES], long etcd_ready);
/*
 * Nodes that carry our out-of-service taint (the taint and our annotation) in the last
 * complete list: how many in all, and the METRICS_TAINTED_MAX tainted longest, each with when
 * we tainted it (our annotation's time, Unix seconds; -1 when it does not read as a time).
 * Kept so an alert can name a node that has carried the taint too long (bounded: a scrape
 * stays small whatever the cluster's size).
 */
#define METRICS_TAINTED_MAX 8
#define METRICS_NODE_NAME_MAX 253
struct metrics_tainted {
	char node[METRICS_NODE_NAME_MAX + 1];
	int64_t since;
};
void metrics_tainted(const struct metrics_tainted *oldest, int n, long total);
/* Keeps in oldest[0..*n) (at most METRICS_TAINTED_MAX, oldest first) the nodes tainted
 * longest, given one more; an unreadable time (-1) counts as the oldest. */
void metrics_tainted_add(struct metrics_tainted *oldest, int *n, const char *node, int64_t since);
/* Whether the storm guard holds new taints and deletes back (engaged or cooling down). */
void metrics_storm(int holding);
/* The fence (docs/fence.md): nodes the last pass left waiting on their agent's fence (requested
 * and counting, unreadable, or none under --fence=require), and one more request written. */
void metrics_fence_waiting(long nodes);
void metrics_fence_requested(void);
/* The watch (issue: following instead of polling). */
enum metrics_watch_event { METRICS_ADDED, METRICS_MODIFIED, METRICS_DELETED, METRICS_BOOKMARK, METRICS_ERROR,
	METRICS_WATCH_EVENTS };
enum metrics_relist { METRICS_RELIST_START, METRICS_RELIST_EXPIRED, METRICS_RELIST_BROKEN, METRICS_RELIST_PERIODIC,
	METRICS_RELIST_FAILED, METRICS_RELIST_CONFIRM, METRICS_RELISTS };
/* A watch is followed from now on (on), or no longer; silence_limit: seconds without an event
 * or bookmark after which /readyz fails. now: monotonic seconds. */
void metrics_watching(int on, int64_t silence_limit, int64_t now);
/* One event read (now: monotonic seconds, the last heard from the stream; an ERROR is counted,
 * not heard: it ends the stream). */
void metrics_watch_event(enum metrics_watch_event type, int64_t now);
/* A whole list read while following a watch, and why. */
void metrics_relist(enum metrics_relist why);
/* A watch started again from the last resourceVersion, without a list. */
void metrics_watch_restart(void);
/* Whether this replica is the leader (1 when leader election is off: the default). Taking the
 * lead (0, then 1) counts the watch's silence from the round's start (metrics_pass_started):
 * a standby heard nothing because it followed nothing. */
void metrics_leader(int leader);
/*
 * One API request's answer: method as sent, status the HTTP status, or 0 when no answer came
 * (connection, TLS, deadline). Shaped as kube.h's observer, so it plugs in directly; ctx unused.
 */
void metrics_api(void *ctx, const char *method, int status);

/*
 * The Prometheus text format 0.0.4 of everything above at now (monotonic seconds), into buf[0..cap). Returns the length
 * (no NUL counted, one written if it fits), or -1 when cap is too small (nothing usable then).
 * METRICS_TEXT_MAX is always enough.
 */
#define METRICS_TEXT_MAX 16384
int metrics_render(int64_t now, char *buf, size_t cap);

/*
 * The writer both documents are made with, the watcher's (metrics_render) and the fence
 * agent's: a cursor into the caller's buf[0..cap) that remembers an overflow (full: the text is
 * unusable). Every name is written after the prefix noderecover_.
 */
struct metrics_out {
	char *b;
	size_t cap, n;
	int full;
};
__attribute__((format(printf, 2, 3)))
void metrics_printf(struct metrics_out *o, const char *fmt, ...);
/* The HELP and TYPE lines of noderecover_NAME; type "gauge", "counter" or "histogram". */
void metrics_head(struct metrics_out *o, const char *name, const char *type, const char *help);
/* A gauge without labels: its HELP and TYPE lines and its one sample. */
void metrics_gauge(struct metrics_out *o, const char *name, const char *help, long long v);
/* One sample of a family with one label: noderecover_NAME{LABEL="VALUE"} V. */
void metrics_sample(struct metrics_out *o, const char *name, const char *label, const char *value, long long v);
/* noderecover_build_info{version="VERSION"} 1 with its HELP and TYPE (the version escaped). */
void metrics_build_info(struct metrics_out *o, const char *version);

/*
 * The probes' rules, pure (tested as a table). live: the loop started a round within 3 poll
 * intervals plus the longest list (since: seconds since it last did). ready: the first list
 * succeeded and fewer than METRICS_LIST_FAILURES listings in a row failed since; a replica
 * that is not the leader lists nothing and is ready while it is alive.
 */
int metrics_live_rule(int64_t since, int64_t poll, int64_t list_seconds);
int metrics_ready_rule(int listed_once, int failures_in_a_row, int leader);

/*
 * The probes now (now: monotonic seconds): 1 healthy, 0 not, and one line saying why in
 * why[0..cap) either way ("ok", or what is wrong).
 */
int metrics_live(int64_t now, char *why, size_t cap);
/* ready also fails while a watch is followed by the leader (or a lone replica) and no event or
 * bookmark came for more than its silence limit. */
int metrics_ready(int64_t now, char *why, size_t cap);

#endif
