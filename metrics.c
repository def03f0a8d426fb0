/*
 * The counters and gauges behind /metrics, /livez and /readyz: one fixed struct behind one
 * mutex, written by the loop and read by the listener's thread (a copy is taken under the lock,
 * then formatted without it, so a scrape never holds the loop up). Owns the metric names and
 * their text; never allocates, never does I/O, never knows HTTP or Kubernetes objects.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "metrics.h"

/* API requests are counted per method and status in a fixed table: the statuses the API
 * server gives noderecover's calls, anything else as "other", no answer as "error". */
static const char *const methods[] = { "GET", "PATCH", "DELETE", "POST", "PUT", "other" };
static const int codes[] = { 0, 200, 201, 400, 401, 403, 404, 409, 410, 422, 429, 500, 502, 503, 504, -1 };
#define METHODS (sizeof methods / sizeof methods[0])
#define CODES (sizeof codes / sizeof codes[0])

static const char *const pass_names[METRICS_PASSES] = { "ok", "failed", "held" };
static const char *const kind_names[METRICS_KINDS] = { "taint", "clear", "delete" };
static const char *const result_names[METRICS_RESULTS] = {
	"ok", "dry_run", "changed", "gone", "failed", "refused", "held", "excluded"
};
/* the results a kind can have: clears are never held, refused or opted out, taints never refused */
#define R(x) (1u << (x))
static const unsigned possible[METRICS_KINDS] = {
	[METRICS_TAINT] = R(METRICS_OK) | R(METRICS_DRY_RUN) | R(METRICS_CHANGED) | R(METRICS_GONE) | R(METRICS_FAILED) |
	    R(METRICS_HELD) | R(METRICS_EXCLUDED),
	[METRICS_CLEAR] = R(METRICS_OK) | R(METRICS_DRY_RUN) | R(METRICS_CHANGED) | R(METRICS_GONE) | R(METRICS_FAILED),
	[METRICS_DELETE] = ~0u,
};
#undef R
static const char *const ready_names[METRICS_READIES] = { "True", "False", "Unknown", "none" };
/* upper bounds of the pass duration buckets, milliseconds (+Inf is the count) */
static const int64_t bucket_ms[METRICS_BUCKETS] = { 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 600000 };

struct state {
	const char *version;
	int64_t poll, list_seconds;
	int64_t started;                 /* monotonic seconds: the last round's start */
	int listed_once, list_failures;
	uint64_t passes[METRICS_PASSES];
	uint64_t actions[METRICS_KINDS][METRICS_RESULTS];
	long nodes[METRICS_READIES], etcd_ready;
	int storm, leader;
	long fence_waiting;
	uint64_t fence_requests;
	struct metrics_tainted tainted[METRICS_TAINTED_MAX];
	int ntainted;
	long tainted_total;
	int64_t last_ok;                 /* Unix seconds; 0: never */
	uint64_t buckets[METRICS_BUCKETS], count;
	int64_t sum_ms;
	uint64_t api[METHODS][CODES];
	uint64_t watch_events[METRICS_WATCH_EVENTS], relists[METRICS_RELISTS], restarts;
	int watching;                    /* a watch is followed: its silence counts for /readyz */
	int64_t last_event;              /* monotonic seconds of the last event or bookmark */
	int64_t silence_limit;           /* seconds of silence after which /readyz fails */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* zero, so in no byte of the binary (3.4 KB of data otherwise); metrics_init fills it before
 * anything reads it */
static struct state st;

void metrics_init(const char *version, int64_t poll, int64_t list_seconds, int64_t now)
{
	pthread_mutex_lock(&lock);
	memset(&st, 0, sizeof st);
	st.version = version;
	st.poll = poll;
	st.list_seconds = list_seconds;
	st.started = now;
	st.leader = 1;
	pthread_mutex_unlock(&lock);
}

void metrics_pass_started(int64_t now)
{
	pthread_mutex_lock(&lock);
	st.started = now;
	pthread_mutex_unlock(&lock);
}

void metrics_list_result(int ok)
{
	pthread_mutex_lock(&lock);
	if (ok) {
		st.listed_once = 1;
		st.list_failures = 0;
	} else if (st.list_failures < METRICS_LIST_FAILURES) {
		st.list_failures++;
	}
	pthread_mutex_unlock(&lock);
}

void metrics_pass_done(enum metrics_pass r, int64_t duration_ms, int64_t wall)
{
	if ((unsigned)r >= METRICS_PASSES)
		return;
	if (duration_ms < 0)
		duration_ms = 0;
	pthread_mutex_lock(&lock);
	st.passes[r]++;
	if (r == METRICS_PASS_OK)
		st.last_ok = wall;
	for (int i = 0; i < METRICS_BUCKETS; i++)
		st.buckets[i] += duration_ms <= bucket_ms[i];
	st.count++;
	st.sum_ms += duration_ms;
	pthread_mutex_unlock(&lock);
}

void metrics_action(enum metrics_kind k, enum metrics_result r)
{
	if ((unsigned)k >= METRICS_KINDS || (unsigned)r >= METRICS_RESULTS || !(possible[k] & 1u << r))
		return;
	pthread_mutex_lock(&lock);
	st.actions[k][r]++;
	pthread_mutex_unlock(&lock);
}

void metrics_nodes(const long by_ready[METRICS_READIES], long etcd_ready)
{
	pthread_mutex_lock(&lock);
	memcpy(st.nodes, by_ready, sizeof st.nodes);
	st.etcd_ready = etcd_ready;
	pthread_mutex_unlock(&lock);
}

void metrics_tainted_add(struct metrics_tainted *oldest, int *n, const char *node, int64_t since)
{
	int i = *n < METRICS_TAINTED_MAX ? *n : METRICS_TAINTED_MAX - 1;

	if (*n == METRICS_TAINTED_MAX && oldest[i].since <= since)
		return;
	for (; i > 0 && oldest[i - 1].since > since; i--)
		oldest[i] = oldest[i - 1];
	snprintf(oldest[i].node, sizeof oldest[i].node, "%s", node);
	oldest[i].since = since;
	if (*n < METRICS_TAINTED_MAX)
		(*n)++;
}

void metrics_tainted(const struct metrics_tainted *oldest, int n, long total)
{
	if (n < 0 || n > METRICS_TAINTED_MAX)
		n = n < 0 ? 0 : METRICS_TAINTED_MAX;
	pthread_mutex_lock(&lock);
	memcpy(st.tainted, oldest, (size_t)n * sizeof *oldest);
	st.ntainted = n;
	st.tainted_total = total;
	pthread_mutex_unlock(&lock);
}

void metrics_storm(int holding)
{
	pthread_mutex_lock(&lock);
	st.storm = holding != 0;
	pthread_mutex_unlock(&lock);
}

void metrics_fence_waiting(long nodes)
{
	pthread_mutex_lock(&lock);
	st.fence_waiting = nodes;
	pthread_mutex_unlock(&lock);
}

void metrics_fence_requested(void)
{
	pthread_mutex_lock(&lock);
	st.fence_requests++;
	pthread_mutex_unlock(&lock);
}

void metrics_leader(int leader)
{
	pthread_mutex_lock(&lock);
	/* A standby follows no watch, so its silence counted from when it last heard one (or
	 * from its start): taking the lead starts the count afresh, at this round's start, or the
	 * new leader's /readyz and watch age would say hours of silence it never had. */
	if (leader && !st.leader)
		st.last_event = st.started;
	st.leader = leader != 0;
	pthread_mutex_unlock(&lock);
}

void metrics_api(void *ctx, const char *method, int status)
{
	size_t m = 0, c = 0;

	(void)ctx;
	while (m < METHODS - 1 && strcmp(methods[m], method) != 0)
		m++;
	while (c < CODES - 1 && codes[c] != status)
		c++;
	pthread_mutex_lock(&lock);
	st.api[m][c]++;
	pthread_mutex_unlock(&lock);
}

int metrics_live_rule(int64_t since, int64_t poll, int64_t list_seconds)
{
	return since <= 3 * poll + list_seconds;
}

int metrics_ready_rule(int listed_once, int failures_in_a_row, int leader)
{
	if (!leader)
		return 1;
	return listed_once && failures_in_a_row < METRICS_LIST_FAILURES;
}

int metrics_live(int64_t now, char *why, size_t cap)
{
	int64_t since, poll, list;

	pthread_mutex_lock(&lock);
	since = now - st.started;
	poll = st.poll;
	list = st.list_seconds;
	pthread_mutex_unlock(&lock);
	if (metrics_live_rule(since, poll, list)) {
		snprintf(why, cap, "ok");
		return 1;
	}
	snprintf(why, cap, "no pass started for %llds, more than 3 poll intervals (%llds) and a whole list (%llds)",
	    (long long)since, (long long)poll, (long long)list);
	return 0;
}

int metrics_ready(int64_t now, char *why, size_t cap)
{
	int once, fails, leader, watching;
	int64_t silent, limit;

	pthread_mutex_lock(&lock);
	once = st.listed_once;
	fails = st.list_failures;
	leader = st.leader;
	watching = st.watching;
	silent = now - st.last_event;
	limit = st.silence_limit;
	pthread_mutex_unlock(&lock);
	if (leader && watching && once && fails < METRICS_LIST_FAILURES && silent > limit) {
		snprintf(why, cap, "no watch event or bookmark for %llds, more than %llds", (long long)silent, (long long)limit);
		return 0;
	}
	if (metrics_ready_rule(once, fails, leader))
		snprintf(why, cap, "ok");
	else if (!once)
		snprintf(why, cap, "no node list read yet");
	else
		snprintf(why, cap, "the last %d node listings failed", fails);
	return metrics_ready_rule(once, fails, leader);
}

void metrics_watching(int on, int64_t silence_limit, int64_t now)
{
	pthread_mutex_lock(&lock);
	if (on && !st.watching)
		st.last_event = now;
	st.watching = on;
	st.silence_limit = silence_limit;
	pthread_mutex_unlock(&lock);
}

void metrics_watch_event(enum metrics_watch_event type, int64_t now)
{
	pthread_mutex_lock(&lock);
	st.watch_events[type]++;
	/* an ERROR ends the stream: a watch failing with ERROR forever is not a healthy one */
	if (type != METRICS_ERROR)
		st.last_event = now;
	pthread_mutex_unlock(&lock);
}

void metrics_relist(enum metrics_relist why)
{
	pthread_mutex_lock(&lock);
	st.relists[why]++;
	pthread_mutex_unlock(&lock);
}

void metrics_watch_restart(void)
{
	pthread_mutex_lock(&lock);
	st.restarts++;
	pthread_mutex_unlock(&lock);
}

__attribute__((format(printf, 2, 3)))
void metrics_printf(struct metrics_out *o, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (o->full)
		return;
	va_start(ap, fmt);
	r = vsnprintf(o->b + o->n, o->cap - o->n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= o->cap - o->n)
		o->full = 1;
	else
		o->n += (size_t)r;
}

/* A label value, escaped as the text format wants (backslash, double quote, line end). */
static void label(struct metrics_out *o, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			metrics_printf(o, "\\%c", *v);
		else if (*v == '\n')
			metrics_printf(o, "\\n");
		else
			metrics_printf(o, "%c", *v);
	}
}

/* Milliseconds as seconds, written as Prometheus' clients write floats ("0.1", "2.5", "600"). */
static void seconds(struct metrics_out *o, int64_t ms)
{
	int64_t frac = ms % 1000;
	int digits = 3;

	metrics_printf(o, "%lld", (long long)(ms / 1000));
	if (!frac)
		return;
	while (frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	metrics_printf(o, ".%0*lld", digits, (long long)frac);
}

void metrics_head(struct metrics_out *o, const char *name, const char *type, const char *help)
{
	metrics_printf(o, "# HELP noderecover_%s %s\n# TYPE noderecover_%s %s\n", name, help, name, type);
}

void metrics_gauge(struct metrics_out *o, const char *name, const char *help, long long v)
{
	metrics_head(o, name, "gauge", help);
	metrics_printf(o, "noderecover_%s %lld\n", name, v);
}

void metrics_sample(struct metrics_out *o, const char *name, const char *label_name, const char *value, long long v)
{
	metrics_printf(o, "noderecover_%s{%s=\"%s\"} %lld\n", name, label_name, value, v);
}

void metrics_build_info(struct metrics_out *o, const char *version)
{
	metrics_head(o, "build_info", "gauge", "Always 1; the version label says which build runs.");
	metrics_printf(o, "noderecover_build_info{version=\"");
	label(o, version);
	metrics_printf(o, "\"} 1\n");
}

int metrics_render(int64_t now_s, char *buf, size_t cap)
{
	struct metrics_out o = { buf, cap, 0, 0 };
	struct state s;

	if (cap == 0)
		return -1;
	pthread_mutex_lock(&lock);
	s = st;
	pthread_mutex_unlock(&lock);

	metrics_build_info(&o, s.version);
	metrics_gauge(&o, "leader", "1 when this replica acts (the leader, or leader election is off), else 0.", s.leader);

	metrics_head(&o, "passes_total", "counter", "Passes by how they ended: ok, failed (a listing, an action or a refusal failed), held (the storm guard held an action back).");
	for (int i = 0; i < METRICS_PASSES; i++)
		metrics_sample(&o, "passes_total", "result", pass_names[i], (long long)s.passes[i]);

	metrics_head(&o, "pass_duration_seconds", "histogram", "How long passes took, listing and acting.");
	for (int i = 0; i < METRICS_BUCKETS; i++) {
		metrics_printf(&o, "noderecover_pass_duration_seconds_bucket{le=\"");
		seconds(&o, bucket_ms[i]);
		metrics_printf(&o, "\"} %llu\n", (unsigned long long)s.buckets[i]);
	}
	metrics_printf(&o, "noderecover_pass_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)s.count);
	metrics_printf(&o, "noderecover_pass_duration_seconds_sum ");
	seconds(&o, s.sum_ms);
	metrics_printf(&o, "\n");
	metrics_printf(&o, "noderecover_pass_duration_seconds_count %llu\n", (unsigned long long)s.count);

	metrics_gauge(&o, "last_successful_pass_timestamp_seconds", "When the last pass that ended ok finished, Unix seconds; 0: none yet.", (long long)s.last_ok);

	metrics_head(&o, "actions_total", "counter", "Decided actions by kind and what became of them.");
	for (int k = 0; k < METRICS_KINDS; k++)
		for (int r = 0; r < METRICS_RESULTS; r++)
			if (possible[k] & 1u << r)
				metrics_printf(&o, "noderecover_actions_total{action=\"%s\",result=\"%s\"} %llu\n", kind_names[k], result_names[r],
				    (unsigned long long)s.actions[k][r]);

	metrics_head(&o, "nodes", "gauge", "Nodes in the last complete list, by their Ready condition (none: no Ready condition).");
	for (int i = 0; i < METRICS_READIES; i++)
		metrics_sample(&o, "nodes", "ready", ready_names[i], s.nodes[i]);
	metrics_gauge(&o, "etcd_ready_members", "Ready nodes labelled node-role.kubernetes.io/etcd=true in the last complete list.", s.etcd_ready);
	metrics_gauge(&o, "tainted_nodes", "Nodes carrying our out-of-service taint in the last complete list.", s.tainted_total);
	metrics_head(&o, "tainted_since_timestamp_seconds", "gauge", "When we tainted each node still carrying our taint (our annotation's time, Unix seconds; -1 unreadable); the 8 tainted longest.");
	for (int i = 0; i < s.ntainted; i++) {
		metrics_printf(&o, "noderecover_tainted_since_timestamp_seconds{node=\"");
		label(&o, s.tainted[i].node);
		metrics_printf(&o, "\"} %lld\n", (long long)s.tainted[i].since);
	}
	metrics_gauge(&o, "storm_guard_engaged", "1 while the storm guard holds new taints and deletes back (engaged or cooling down), else 0.", s.storm);
	metrics_gauge(&o, "fence_waiting_nodes", "Nodes the last pass left waiting on their fence agent.", s.fence_waiting);
	metrics_head(&o, "fence_requests_total", "counter", "Fence requests written on agents' Leases.");
	metrics_printf(&o, "noderecover_fence_requests_total %llu\n", (unsigned long long)s.fence_requests);

	metrics_head(&o, "api_requests_total", "counter", "API requests by method and HTTP status (error: no answer; other: a status not listed), retries included.");
	for (size_t m = 0; m < METHODS; m++)
		for (size_t c = 0; c < CODES; c++) {
			if (!s.api[m][c])
				continue;
			if (codes[c] > 0)
				metrics_printf(&o, "noderecover_api_requests_total{method=\"%s\",code=\"%d\"} %llu\n", methods[m], codes[c],
				    (unsigned long long)s.api[m][c]);
			else
				metrics_printf(&o, "noderecover_api_requests_total{method=\"%s\",code=\"%s\"} %llu\n", methods[m],
				    codes[c] == 0 ? "error" : "other", (unsigned long long)s.api[m][c]);
		}
	if (s.watching) {
		static const char *const event_names[] = { "added", "modified", "deleted", "bookmark", "error" };
		static const char *const relist_names[] = { "start", "expired", "broken", "periodic", "failed", "confirm" };
		metrics_head(&o, "watch_events_total", "counter", "Watch events read, by type.");
		for (int i = 0; i < METRICS_WATCH_EVENTS; i++)
			metrics_sample(&o, "watch_events_total", "type", event_names[i], (long long)s.watch_events[i]);
		metrics_head(&o, "relists_total", "counter", "Whole lists read while following a watch, by why: start, expired (410), broken (a stream that could not be trusted), periodic (--relist), failed (the list before failed), confirm (a new taint or delete is decided on a list).");
		for (int i = 0; i < METRICS_RELISTS; i++)
			metrics_sample(&o, "relists_total", "reason", relist_names[i], (long long)s.relists[i]);
		metrics_head(&o, "watch_restarts_total", "counter", "Watches started again from the last resourceVersion, without a list (the stream ended, went silent or failed).");
		metrics_printf(&o, "noderecover_watch_restarts_total %llu\n", (unsigned long long)s.restarts);
		metrics_gauge(&o, "watch_last_event_age_seconds", "Seconds since the last watch event or bookmark.",
		    (long long)(now_s - s.last_event));
	}
	if (o.full)
		return -1;
	return (int)o.n;
}
