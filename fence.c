/*
 * The fence agent's shell (fence.h): every --fence-check it observes (the API server: its own
 * Lease read and, when due, renewed, what the watcher sees of it; the kubelet's health), hands the observation to
 * fence_rules.c, asks its peers when the rules say so (peer.c), and fences when they say so.
 * Its listener's route answers the peers (reading the asker's Lease on a connection of its
 * own) and serves its /metrics, /livez and /readyz. Owns its connections, its Lease's bodies,
 * the watchdog's descriptor and its counters (under one lock, shared with the listener's
 * thread). Never logs the peer secret or the token.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "fence.h"
#include "fence_rules.h"
#include "json_list.h"
#include "kube.h"
#include "lease.h"
#include "listen.h"
#include "peer.h"
#include "say.h"
#include "text.h"

extern char **environ;

#ifndef WDIOC_KEEPALIVE   /* linux/watchdog.h, which musl's headers do not carry */
#define WDIOC_KEEPALIVE _IOR('W', 5, int)
#define WDIOC_SETTIMEOUT _IOWR('W', 6, int)
#define WDIOC_GETTIMEOUT _IOR('W', 7, int)
#endif

#define ANSWER_MS 1500            /* a peer's request: the read of its Lease, within its 2 s */
#define LIST_LIMIT 300            /* Leases per page of the peers' list: one page a check */
#define LIST_MAX (1024 * 1024)    /* that page */
#define LIST_PAGES_MAX 100        /* pages of one list (30000 Leases): a server that pages without end */
#define ITEM_MAX (16 * 1024)      /* one Lease, managedFields included */
#define ANNS_MAX 4096             /* a fence Lease's annotations, as written */
#define META_MAX (ANNS_MAX + 1024)
#define WATCHDOG_MIN 4            /* seconds: more than the longest step between two pets (2 s) */
#define SYNC_MS 10000             /* reboot: sync's deadline (FENCE_REBOOT_BOUND) */
#define PET_MS 500                /* the longest sleep between two pets while waiting */
#define ANSWER_KINDS 4            /* healthy, api_down, requested, none (the metrics' order) */

/* A peer: its address, from its Lease. */
typedef char peer_addr_t[LISTEN_ADDR_MAX + 1];

/* A Lease as read: its name, resourceVersion and annotations (the object as written). */
struct read_lease {
	char name[LEASE_NAME_MAX + 1], rv[NODE_RV_MAX + 1];
	char anns[ANNS_MAX];
	size_t annlen;          /* 0: no annotations */
	int items;
	char why[200];
};

/* What the listener's thread reads: written by the loop under lock. */
struct shared {
	int api;                /* the last check reached the API server */
	int armed;              /* the Lease was written and the agent has not fenced */
	int fenced;
	enum fence_phase phase;
	enum fence_reason reason;
	int peers;
	int64_t safe;           /* S on its Lease, seconds */
	int64_t checked;        /* monotonic ms of the loop's last step: a check's start or end, a batch asked */
	uint64_t requests_seen, fences[FENCE_ISOLATED + 1], answers[ANSWER_KINDS], served, refused;
};

struct agent {
	const struct settings *s;
	const char *version;
	volatile sig_atomic_t *stop, *cut;
	struct kube kc;                   /* the loop's connection */
	struct kube pkc;                  /* the listener's (the peers' requests) */
	struct peer_key key;
	struct fence_config cfg;
	struct fence_state st;
	char lease[LEASE_NAME_MAX + 1];   /* noderecover-fence-NODE */
	char path[320];                   /* its namespace's leases */
	const char *action;               /* watchdog, reboot or exec */
	int wd;                           /* the watchdog's descriptor, -1: none */
	int petting;
	int64_t action_s;                 /* the action's bound, seconds */
	int kubelet_on, kubelet_status;
	struct peer_call kubelet;
	char kubelet_url[256];
	int written;                      /* the Lease was written once */
	int64_t renewed;                  /* monotonic ms of the last successful write */
	char acquire[LEASE_TIME_LEN + 1];
	char request[64];                 /* the last fence request seen ("" none) */
	struct read_lease own;            /* this check's read of our Lease */
	int have_own;
	/* the peers of the last whole list, FENCE_PEERS_MAX addresses; the list being read, page by
	 * page, goes to next (as many), then the two swap: a list read halfway is never asked */
	peer_addr_t *peers, *next;
	int npeers, nnext;                /* addresses kept */
	int total, total_next;            /* peers counted, kept or not (the majority's) */
	char cont[JSON_CONTINUE_MAX + 1]; /* the list under way: its next page's token ("" none) */
	int pages;                        /* its pages read */
	unsigned ask_from;                /* where a check's asking starts, moved on each time */
	int list_failing;                 /* the last list failed (said once) */
	struct peer_call calls[FENCE_ASK_BATCH];
	struct json_list reader, preader; /* the loop's and the listener's */
	char item[ITEM_MAX], pitem[ITEM_MAX];
	char answer[LEASE_ANSWER_MAX], panswer[LEASE_ANSWER_MAX];
	char *list;                       /* LIST_MAX bytes */
	char meta[META_MAX], body[META_MAX + LEASE_BODY_MAX];
	char said[300];                   /* the last line said about the API server, not to repeat it */
	struct listener ls;
	pthread_mutex_t lock;
	struct shared sh;
};

/* ---- Reading Leases: the JSON scanner's list reader, reentrant (json.c's pool is not) ---- */

/* The end of a string's body at s (its closing quote), in a checked document. */
static const char *str_end(const char *s, const char *end)
{
	while (s < end && *s != '"')
		s += *s == '\\' ? 2 : 1;
	return s < end ? s : end;
}

/* The next member of a checked object of strings at *p: key and value bodies; 0, or -1 at its end. */
static int next_member(const char **p, const char *end, const char **k, size_t *kn, const char **v, size_t *vn)
{
	const char *s = *p;

	while (s < end && (json_is_space(*s) || *s == '{' || *s == ','))
		s++;
	if (s >= end || *s != '"')
		return -1;
	*k = ++s;
	s = str_end(s, end);
	*kn = (size_t)(s - *k);
	for (s++; s < end && (json_is_space(*s) || *s == ':'); s++)
		;
	if (s >= end || *s != '"')
		return -1;
	*v = ++s;
	s = str_end(s, end);
	*vn = (size_t)(s - *v);
	*p = s + 1;
	return 0;
}

/* Annotation key of anns[0..n) decoded into out[0..cap): 1 found, 0 absent (out ""). */
static int ann_get(const char *anns, size_t n, const char *key, char *out, size_t cap)
{
	const char *p = anns, *k, *v;
	size_t kn, vn;

	out[0] = '\0';
	while (next_member(&p, anns + n, &k, &kn, &v, &vn) == 0)
		if (json_str_eq(k, kn, key, strlen(key))) {
			if (json_unescape(v, vn, out, cap) < 0)
				out[0] = '\0';
			return 1;
		}
	return 0;
}

/* One Lease of a list (or the one read, as a list of one): its name, rv and annotations. */
static int lease_item(void *ctx, const struct json_item *it)
{
	struct read_lease *r = ctx;
	const struct json_span *a = &it->m[JSON_ANNOTATIONS];

	r->items++;
	r->annlen = 0;
	if (json_item_string(it, JSON_NAME, r->name, sizeof r->name, r->why, sizeof r->why) < 0 ||
	    json_item_string(it, JSON_RV, r->rv, sizeof r->rv, r->why, sizeof r->why) < 0)
		return -1;
	if (it->twice >> JSON_ANNOTATIONS & 1 || it->not_string[1])
		return text_fail(r->why, sizeof r->why, "its annotations are not one object of strings");
	if (a->at && it->p[a->at] == '{') {
		if (a->end - a->at >= sizeof r->anns)
			return text_fail(r->why, sizeof r->why, "its annotations are over %d bytes", ANNS_MAX);
		memcpy(r->anns, it->p + a->at, a->end - a->at);
		r->annlen = a->end - a->at;
	}
	return 0;
}

/* A peer's Lease in a list: kept when it has a readable address and is not ours. */
struct list_ctx {
	struct agent *a;
	struct read_lease r;
};

static int list_item(void *ctx, const struct json_item *it)
{
	struct list_ctx *l = ctx;
	struct agent *a = l->a;
	peer_addr_t addr;
	const char *pre = LEASE_FENCE_PREFIX;

	/* a Lease that cannot be read is no peer; the rest of the list still is */
	if (lease_item(&l->r, it) < 0) {
		l->r.why[0] = '\0';   /* the item's reason, not the list's */
		return 0;
	}
	if (strcmp(l->r.name, a->lease) == 0 || strncmp(l->r.name, pre, strlen(pre)) != 0 ||
	    !ann_get(l->r.anns, l->r.annlen, FENCE_ANN_ADDRESS, addr, sizeof addr) || !addr[0])
		return 0;
	/* past FENCE_PEERS_MAX a peer is counted, not kept: a majority is of them all */
	if (a->nnext < FENCE_PEERS_MAX)
		memcpy(a->next[a->nnext++], addr, sizeof addr);
	a->total_next++;
	return 0;
}

/* Reads body[0..n) with reader l into item (ITEM_MAX): a list (wrap 0) or one object (wrap 1). */
static int read_json(struct json_list *l, char *item, const char *body, size_t n, int wrap, json_item_fn fn, void *ctx,
    char *why, size_t whylen)
{
	json_list_init(l, item, ITEM_MAX, NULL, fn, ctx);
	if ((wrap && json_list_feed(l, "{\"items\":[", 10) != 0) || json_list_feed(l, body, n) != 0 ||
	    (wrap && json_list_feed(l, "]}", 2) != 0) || json_list_end(l) < 0) {
		if (!why[0])
			text_fail(why, whylen, "%s", l->err);
		return -1;
	}
	return 0;
}

/* ---- The shared state ---- */

static void share(struct agent *a, void (*fn)(struct shared *, long), long v)
{
	pthread_mutex_lock(&a->lock);
	fn(&a->sh, v);
	pthread_mutex_unlock(&a->lock);
}

static void set_api(struct shared *sh, long v) { sh->api = (int)v; }
static void set_armed(struct shared *sh, long v) { sh->armed = (int)v; }
static void add_request(struct shared *sh, long v) { (void)v; sh->requests_seen++; }
static void add_answer(struct shared *sh, long v) { sh->answers[v]++; }

/* ---- The watchdog ---- */

static void pet(struct agent *a)
{
	if (a->wd >= 0 && a->petting)
		ioctl(a->wd, WDIOC_KEEPALIVE, 0);
}

/* Opens the device, sets its timeout, reads it back into a->action_s: 0, or -1 with err. */
static int watchdog_open(struct agent *a, char *err, size_t errlen)
{
	int t = (int)a->s->fence_watchdog_timeout, got = 0;

	if ((a->wd = open(a->s->fence_watchdog, O_WRONLY | O_CLOEXEC)) < 0)
		return text_fail(err, errlen, "cannot open the watchdog %s: %s", a->s->fence_watchdog, strerror(errno));
	a->petting = 1;
	if (ioctl(a->wd, WDIOC_SETTIMEOUT, &t) < 0)
		say("Watchdog %s: setting its timeout to %ds failed (%s); reading what it has", a->s->fence_watchdog, t,
		    strerror(errno));
	if (ioctl(a->wd, WDIOC_GETTIMEOUT, &got) < 0 || got <= 0)
		return text_fail(err, errlen, "watchdog %s: its timeout cannot be read back (%s)", a->s->fence_watchdog,
		    strerror(errno));
	if (got < WATCHDOG_MIN)
		return text_fail(err, errlen, "watchdog %s: its timeout is %ds, under %ds: a healthy node could be reset between two pets",
		    a->s->fence_watchdog, got, WATCHDOG_MIN);
	a->action_s = got;
	pet(a);
	return 0;
}

/* ---- The Lease ---- */

/* s[0..n) as it is, into b. */
static void raw(struct json_buf *b, const char *s, size_t n)
{
	if (b->len + n < b->cap) {
		memcpy(b->p + b->len, s, n);
		b->len += n;
	} else {
		b->overflow = 1;
	}
}

/* Our Lease's metadata: the label, our annotations, every other annotation read kept as it was
 * (the watcher's request among them), and fencing only when it is being written. */
static int lease_meta(struct agent *a, const char *fencing, int64_t safe_s)
{
	static const char *const ours[] = { FENCE_ANN_ADDRESS, JSON_FENCE_SAFE, JSON_FENCE_ACTION, JSON_FENCE_FENCING };
	struct json_buf b;
	char safe[24];
	const char *p = a->own.anns, *k, *v;
	size_t kn, vn;

	snprintf(safe, sizeof safe, "%lld", (long long)safe_s);
	json_buf_init(&b, a->meta, sizeof a->meta);
	json_raw(&b, "\"labels\":{\"" LEASE_FENCE_LABEL_KEY "\":\"" LEASE_FENCE_LABEL_VALUE "\"},\"annotations\":{\"" FENCE_ANN_ADDRESS "\":");
	json_str(&b, a->s->fence_address);
	json_raw(&b, ",\"" JSON_FENCE_SAFE "\":");
	json_str(&b, safe);
	json_raw(&b, ",\"" JSON_FENCE_ACTION "\":");
	json_str(&b, a->action);
	if (fencing) {
		json_raw(&b, ",\"" JSON_FENCE_FENCING "\":");
		json_str(&b, fencing);
	}
	while (a->have_own && next_member(&p, a->own.anns + a->own.annlen, &k, &kn, &v, &vn) == 0) {
		int mine = 0;
		for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
			mine |= json_str_eq(k, kn, ours[i], strlen(ours[i]));
		if (mine)
			continue;
		/* a checked document's key and value, with their quotes, as they were written */
		json_raw(&b, ",");
		raw(&b, k - 1, (size_t)(v + vn + 1 - (k - 1)));
	}
	json_raw(&b, "}");
	return json_buf_end(&b);
}

/* A request's deadline in ms: FENCE_API_MS, or what is left before until (at least 1: a call
 * with no time left fails at once, as a timeout). */
static long api_ms(int64_t until)
{
	int64_t left = until - clock_ms();

	return left > FENCE_API_MS ? FENCE_API_MS : left < 1 ? 1 : (long)left;
}

/*
 * GETs our Lease into a->own, by until: the HTTP status (200: read, 404: none), or -1 (a->said
 * has why). cached: from the API server's watch cache (resourceVersion=0), no read of etcd: the
 * check's read, 200 a second at 1000 agents checking every 5 s (BENCHMARKS.md). A stale cache cannot hide a cut
 * for long: the renewal, a write, is due every --fence-renew, and once due every check writes
 * until one succeeds. Not cached: the read again after a 409, and before the deletion.
 */
static int read_own(struct agent *a, int64_t until, int cached)
{
	char lp[sizeof a->path + LEASE_NAME_MAX + 24];
	int st;

	a->have_own = 0;
	snprintf(lp, sizeof lp, "%s/%s%s", a->path, a->lease, cached ? "?resourceVersion=0" : "");
	st = kube_call_within(&a->kc, api_ms(until), "reading the fence Lease", "GET", lp, NULL, 0, a->answer,
	    sizeof a->answer);
	pet(a);
	if (st == 200) {
		a->own.why[0] = '\0';
		a->own.items = 0;
		if (read_json(&a->reader, a->item, a->answer, strlen(a->answer), 1, lease_item, &a->own, a->own.why,
		    sizeof a->own.why) < 0 || a->own.items != 1) {
			snprintf(a->said, sizeof a->said, "its fence Lease cannot be read: %s", a->own.why);
			return -1;
		}
		a->have_own = 1;
	} else if (st != 404) {
		snprintf(a->said, sizeof a->said, "%s", kube_error(&a->kc));
	}
	return st;
}

/* Writes our Lease (PUT on the one read, or POST when there is none) by until, with the safe
 * time safe_s and fencing when not NULL: the HTTP status, or -1. */
static int write_own(struct agent *a, const char *fencing, int64_t safe_s, int64_t until)
{
	char now[LEASE_TIME_LEN + 1], lp[sizeof a->path + LEASE_NAME_MAX + 2];
	struct timespec wall;
	struct lease_spec sp;
	int st;

	clock_gettime(CLOCK_REALTIME, &wall);
	lease_microtime(now, (int64_t)wall.tv_sec, wall.tv_nsec / 1000);
	if (!a->acquire[0])
		memcpy(a->acquire, now, sizeof now);
	sp = (struct lease_spec){ a->s->self_node, (long)safe_s, a->acquire, now, 0 };
	if (lease_meta(a, fencing, safe_s) < 0 || lease_body_meta(a->body, sizeof a->body, a->s->fence_namespace, a->lease,
	    a->have_own ? a->own.rv : NULL, a->meta, &sp) < 0) {
		snprintf(a->said, sizeof a->said, "its fence Lease does not fit in %zu bytes", sizeof a->body);
		return -1;
	}
	snprintf(lp, sizeof lp, "%s%s%s", a->path, a->have_own ? "/" : "", a->have_own ? a->lease : "");
	st = kube_call_within(&a->kc, api_ms(until), a->have_own ? "renewing the fence Lease" : "creating the fence Lease",
	    a->have_own ? "PUT" : "POST", lp, a->body, strlen(a->body), NULL, 0);
	pet(a);
	if (!kube_done(st))
		snprintf(a->said, sizeof a->said, "%s", kube_error(&a->kc));
	return st;
}

/* S for asking in batches batches, seconds. */
static int64_t safe_for(const struct agent *a, int batches)
{
	const struct settings *s = a->s;

	return fence_safe_seconds(s->fence_renew, s->fence_after, s->fence_isolated_after, a->action_s, s->fence_check,
	    batches);
}

/* S as written on its Lease, for batches: what the rules count from now on (a->cfg, the one
 * place it is kept; the listener's copy for /metrics). */
static void published(struct agent *a, int batches)
{
	a->cfg.batches = batches;
	a->cfg.safe = safe_for(a, batches) * 1000;
	pthread_mutex_lock(&a->lock);
	a->sh.safe = a->cfg.safe / 1000;
	pthread_mutex_unlock(&a->lock);
}

/* Reads our Lease and, when due, renews it (once more after a 409), all within FENCE_LEASE_MS:
 * whether the API server was reached as the rules count it; *requested: the Lease carries a
 * fence request. The renewal carries the S of the batches its peers need now; from then on,
 * and only then, that many are asked (S grows before the asking does). */
static int lease_check(struct agent *a, int64_t now, int *requested)
{
	int64_t until = now + FENCE_LEASE_MS;
	int st = read_own(a, until, 1), w = -1, batches = fence_batches(a->npeers);
	/* a Lease gone (404) is written again now: until then the watcher sees no agent; peers
	 * that need more or fewer batches than S counts: now too */
	int due = !a->written || now - a->renewed >= a->s->fence_renew * 1000 || st == 404 || batches != a->cfg.batches;
	int64_t safe = safe_for(a, batches);
	char req[sizeof a->request];

	*requested = st == 200 && ann_get(a->own.anns, a->own.annlen, JSON_FENCE_REQUEST, req, sizeof req);
	if (*requested && strcmp(req, a->request) != 0) {
		memcpy(a->request, req, sizeof req);
		share(a, add_request, 0);
		say_about("info", a->s->self_node, "FenceRequest", NULL, "Fence request on lease %s/%s (%.40s) seen", a->s->fence_namespace,
		    a->lease, req);
	}
	if (st == 200 && !*requested)
		a->request[0] = '\0';
	/* the read is what the watcher sees of the agent: a failed one is a failed check, whatever
	 * else answers (a /readyz that answers while Lease requests fail would never fence) */
	if (!due)
		return st == 200;
	for (int tries = 0; tries < 2 && (st == 200 || st == 404); tries++) {
		if ((w = write_own(a, NULL, safe, until)) != 409)
			break;
		st = read_own(a, until, 0);
	}
	if (!kube_done(w))
		return 0;
	if (!a->written)
		say("Armed: lease %s/%s written (address %s, safe time %llds, action %s)", a->s->fence_namespace, a->lease,
		    a->s->fence_address, (long long)safe, a->action);
	else if (safe * 1000 != a->cfg.safe)
		say("Safe time now %llds on lease %s/%s: %d peers, asked in at most %d batches of a check", (long long)safe,
		    a->s->fence_namespace, a->lease, a->npeers, batches);
	a->written = 1;
	a->renewed = now;
	published(a, batches);
	share(a, set_api, 1);   /* before armed: a peer asking once it is armed hears it reaches the API server */
	share(a, set_armed, 1);
	return 1;
}

/* A stop before any fence: our Lease deleted, so that the watcher sees no agent rather than an
 * armed one gone silent, whose node it would taint S after its request although nothing fenced.
 * Read first for its resourceVersion (the DELETE's precondition: a Lease changed since is left);
 * left too when it carries a fence request: the watcher is counting S on it. One try each, 2 s. */
static void lease_delete(struct agent *a)
{
	char lp[sizeof a->path + LEASE_NAME_MAX + 2], req[sizeof a->request], body[NODE_RV_MAX + 128];
	struct json_buf b;
	int st = read_own(a, clock_ms() + FENCE_API_MS, 0);

	if (st != 200 || ann_get(a->own.anns, a->own.annlen, JSON_FENCE_REQUEST, req, sizeof req)) {
		say("Lease %s/%s left in place: %s", a->s->fence_namespace, a->lease, st == 404 ? "it is gone already" :
		    st == 200 ? "it carries a fence request" : a->said);
		return;
	}
	json_buf_init(&b, body, sizeof body);
	json_raw(&b, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":{\"resourceVersion\":");
	json_str(&b, a->own.rv);
	json_raw(&b, "}}");
	snprintf(lp, sizeof lp, "%s/%s", a->path, a->lease);
	st = json_buf_end(&b) < 0 ? -1 : kube_call_within(&a->kc, FENCE_API_MS, "deleting the fence Lease", "DELETE", lp, body,
	    strlen(body), NULL, 0);
	if (kube_done(st))
		say("Deleted lease %s/%s: the watcher sees no agent on this node", a->s->fence_namespace, a->lease);
	else
		say("Deleting lease %s/%s failed (%s): left in place", a->s->fence_namespace, a->lease,
		    st == 409 ? "it changed since read" : kube_error(&a->kc));
}

/* Ends the list under way: its peers become the ones asked (whole) or are dropped (failed). */
static void list_end(struct agent *a, int whole, int64_t now)
{
	peer_addr_t *p = a->peers;
	int before = a->total;

	a->cont[0] = '\0';
	a->pages = 0;
	if (!whole) {
		a->nnext = a->total_next = 0;
		fence_list_failed(&a->st, now);
		return;
	}
	a->peers = a->next;
	a->next = p;
	a->npeers = a->nnext;
	a->total = a->total_next;
	a->nnext = a->total_next = 0;
	a->list_failing = 0;
	/* recorded only when read whole: a list that failed halfway never counts fewer peers */
	fence_listed(&a->st, a->total, now);
	if (a->total != before || a->st.lists == 1)
		say("Peers: %d other fence agents in namespace %s%s", a->total, a->s->fence_namespace,
		    a->total > a->npeers ? " (the first 5000 are asked, all are counted)" : "");
	pthread_mutex_lock(&a->lock);
	a->sh.peers = a->total;
	pthread_mutex_unlock(&a->lock);
}

/*
 * Reads a page of the fence Leases (peers) while the API server is reached: one a check, while
 * a list is under way or fence_list_due says one is, so that a check's list stays within
 * FENCE_PEERS_MS however many agents there are.
 */
static void list_peers(struct agent *a, int64_t now)
{
	char lp[sizeof a->path + 128 + 3 * JSON_CONTINUE_MAX];
	struct list_ctx l = { a, { .why = "" } };
	int st = -1;

	if (!a->cont[0] && !fence_list_due(&a->st, &a->cfg, now))
		return;
	snprintf(lp, sizeof lp, "%s?labelSelector=" LEASE_FENCE_LABEL_KEY "%%3D" LEASE_FENCE_LABEL_VALUE "&limit=%d%s", a->path,
	    LIST_LIMIT, a->cont[0] ? "&continue=" : "");
	if (text_query_escape(lp, sizeof lp, a->cont) < 0)
		snprintf(l.r.why, sizeof l.r.why, "its continue token does not fit");
	else
		st = kube_call_within(&a->kc, FENCE_PEERS_MS, "listing the fence Leases", "GET", lp, NULL, 0, a->list, LIST_MAX);
	pet(a);
	if (st == 200 && read_json(&a->reader, a->item, a->list, strlen(a->list), 0, list_item, &l, l.r.why,
	    sizeof l.r.why) < 0)
		st = -1;
	else if (st == 200 && a->reader.cont[0] && (strcmp(a->reader.cont, a->cont) == 0 || ++a->pages >= LIST_PAGES_MAX))
		st = text_fail(l.r.why, sizeof l.r.why, "the server %s", a->pages >= LIST_PAGES_MAX ?
		    "gave more than 100 pages" : "gave the same continue token again");
	if (st != 200) {
		/* said once until a list succeeds; tried again after 30 s, then less often (a 410,
		 * the token expired, too: the next list starts over) */
		if (!a->list_failing)
			say("Listing the peers failed (%s); the %d known are kept, listing again in 30s, less often while it fails",
			    l.r.why[0] ? l.r.why : kube_error(&a->kc), a->total);
		a->list_failing = 1;
		list_end(a, 0, now);
		return;
	}
	if (a->reader.cont[0]) {
		memcpy(a->cont, a->reader.cont, sizeof a->cont);
		return;
	}
	list_end(a, 1, now);
}

/*
 * Asks batch b of this check's peers at once (FENCE_PEERS_MS), adding their answers to r. The
 * check's peers start at a->ask_from, moved on each check: the first batches, where most checks
 * end, are spread over every peer.
 */
static void ask_batch(struct agent *a, int b, struct fence_answers *r)
{
	int from, n = fence_batch(a->npeers, b, &from);

	for (int i = 0; i < n; i++) {
		struct peer_call *c = &a->calls[i];
		const char *addr = a->peers[(a->ask_from + (unsigned)(from + i)) % (unsigned)a->npeers];
		c->reqlen = 0;
		if (peer_addr(c, addr) < 0 || peer_ask(c, &a->key, addr, a->s->self_node) < 0)
			c->reqlen = 0;
	}
	peer_run(a->calls, n, clock_ms() + FENCE_PEERS_MS);
	pet(a);
	pthread_mutex_lock(&a->lock);
	a->sh.checked = clock_ms();   /* a check of 21 batches is a live loop: /livez says so */
	pthread_mutex_unlock(&a->lock);
	for (int i = 0; i < n; i++) {
		int api, req, kind = 3;
		if (peer_verdict(&a->calls[i], &a->key, &api, &req)) {
			r->answered++;
			kind = !api ? 1 : req ? 2 : 0;
			r->api_down += kind == 1;
			r->healthy += kind == 0;
			r->requested += kind == 2;
		}
		share(a, add_answer, kind);
	}
}

/* ---- Fencing ---- */

static volatile int synced;

static void *sync_thread(void *arg)
{
	(void)arg;
	sync();
	synced = 1;
	return NULL;
}

/* Runs PATH NODE, waiting up to the exec timeout (then kills it). */
static void run_exec(struct agent *a)
{
	const char *path = a->s->fence_exec;
	int64_t until = clock_ms() + a->s->fence_exec_timeout * 1000;
	char *argv[] = { (char *)path, (char *)a->s->self_node, NULL };
	pid_t pid;
	int status = 0, e;

	/* posix_spawn, as plugin.c runs its plugins: the same environment */
	if ((e = posix_spawn(&pid, path, NULL, NULL, argv, environ)) != 0) {
		say("Fence exec %s failed to start: %s", path, strerror(e));
		return;
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (clock_ms() >= until) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			say("Fence exec %s did not end within %llds: killed", path, (long long)a->s->fence_exec_timeout);
			return;
		}
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (WIFEXITED(status))
		say("Fence exec %s %s exited %d", path, a->s->self_node, WEXITSTATUS(status));
	else
		say("Fence exec %s %s ended by signal %d", path, a->s->self_node, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void fence_now(struct agent *a)
{
	enum fence_reason why = a->st.reason;
	char now[LEASE_TIME_LEN + 1], value[LEASE_TIME_LEN + 32];
	struct timespec wall;
	pthread_t th;

	say_about("warning", a->s->self_node, "Fence", NULL, "Fencing node %s (%s: %s); action %s", a->s->self_node,
	    fence_reason_name(why), why == FENCE_REQUESTED ? "a fence was requested and its kubelet is unhealthy" :
	    why == FENCE_KUBELET_DOWN ? "its kubelet unhealthy for --fence-after" :
	    why == FENCE_PEER_REQUESTED ? "cut off, and a peer read a fence request on its Lease" :
	    "cut off, and no peer answered for --fence-isolated-after", a->action);
	pthread_mutex_lock(&a->lock);
	a->sh.fenced = 1;
	a->sh.armed = 0;
	a->sh.fences[why]++;
	pthread_mutex_unlock(&a->lock);
	/* it reached the API server on this check: say so on the Lease, one try */
	if ((why == FENCE_REQUESTED || why == FENCE_KUBELET_DOWN) && a->have_own) {
		clock_gettime(CLOCK_REALTIME, &wall);
		lease_microtime(now, (int64_t)wall.tv_sec, wall.tv_nsec / 1000);
		snprintf(value, sizeof value, "%s %s", now, fence_reason_name(why));
		if (kube_done(write_own(a, value, a->cfg.safe / 1000, clock_ms() + FENCE_API_MS)))
			say("Wrote %s on lease %s/%s", JSON_FENCE_FENCING, a->s->fence_namespace, a->lease);
		else
			say("Writing %s on lease %s/%s failed (%s); fencing all the same", JSON_FENCE_FENCING, a->s->fence_namespace,
			    a->lease, a->said);
	}
	if (strcmp(a->action, "watchdog") == 0) {
		a->petting = 0;
		say("Fencing: the watchdog is no longer petted; it resets the node within %llds", (long long)a->action_s);
	} else if (strcmp(a->action, "reboot") == 0) {
		int64_t until = clock_ms() + SYNC_MS;
		synced = 0;
		if (pthread_create(&th, NULL, sync_thread, NULL) == 0) {
			pthread_detach(th);
			while (!synced && clock_ms() < until) {
				struct timespec ts = { 0, 50 * 1000000L };
				nanosleep(&ts, NULL);
			}
		}
		say("Fencing: rebooting%s", synced ? "" : " (sync did not end within 10s)");
		reboot(RB_AUTOBOOT);
		say("Fencing: reboot failed: %s (the pod needs CAP_SYS_BOOT); the node is NOT fenced", strerror(errno));
	} else {
		run_exec(a);
	}
	say("Fenced: the agent stays up without renewing lease %s/%s (fence_fenced 1)", a->s->fence_namespace, a->lease);
}

/* ---- The listener's route: the peers, /metrics, /livez, /readyz ---- */

static int plain(char *out, size_t cap, int status, const char *text)
{
	return listen_response(out, cap, status, LISTEN_PLAIN, "", text, strlen(text));
}

/* A peer's request, signed: read its Lease and answer, signed. */
static int answer_peer(struct agent *a, const char *node, const char *nonce, char *out, size_t cap)
{
	char lp[sizeof a->path + LEASE_NAME_MAX + 2], req[64];
	struct read_lease r = { .why = "" };
	int api, requested = 0, st = 0;

	pthread_mutex_lock(&a->lock);
	api = a->sh.api;
	a->sh.served++;
	pthread_mutex_unlock(&a->lock);
	/* a node whose Lease's name would be too long cannot be armed, nor requested */
	if (api && strlen(node) <= LEASE_NAME_MAX - strlen(LEASE_FENCE_PREFIX)) {
		snprintf(lp, sizeof lp, "%s/" LEASE_FENCE_PREFIX "%s", a->path, node);
		st = kube_call_within(&a->pkc, ANSWER_MS, "reading a peer's fence Lease", "GET", lp, NULL, 0, a->panswer,
		    sizeof a->panswer);
		if (st == 200 && read_json(&a->preader, a->pitem, a->panswer, strlen(a->panswer), 1, lease_item, &r, r.why,
		    sizeof r.why) == 0 && r.items == 1)
			requested = ann_get(r.anns, r.annlen, JSON_FENCE_REQUEST, req, sizeof req);
		else if (st != 404 && st >= 0 && st < 500 && st != 429)
			return plain(out, cap, 503, "its Lease cannot be read\n");   /* no answer */
		api = st == 200 || st == 404;
	}
	return peer_answer(&a->key, nonce, api, requested, out, cap);
}

/* The agent's metrics, one document (docs/fence.md; the README's "Fencing: the agent"), written
 * with the watcher's writer (metrics.h). */
static int metrics_text(struct agent *a, char *out, size_t cap)
{
	static const char *const answer_kinds[ANSWER_KINDS] = { "healthy", "api_down", "requested", "none" };
	struct shared s;
	char body[3072];
	struct metrics_out o = { body, sizeof body, 0, 0 };

	pthread_mutex_lock(&a->lock);
	s = a->sh;
	pthread_mutex_unlock(&a->lock);
	metrics_build_info(&o, a->version);
	metrics_gauge(&o, "fence_armed", "1 while its Lease is written and it has not fenced.", s.armed);
	metrics_gauge(&o, "fence_fenced", "1 once it fenced: it stays up, its Lease no longer renewed.", s.fenced);
	metrics_head(&o, "fence_phase", "gauge", "1 for the phase of the last check.");
	for (enum fence_phase p = FENCE_HEALTHY; p <= FENCE_FENCED; p++)
		metrics_sample(&o, "fence_phase", "phase", fence_phase_name(p), s.phase == p);
	metrics_gauge(&o, "fence_safe_seconds", "The safe time S on its Lease.", s.safe);
	metrics_gauge(&o, "fence_peers", "Other fence agents listed with an address (counted past the 5000 asked).", s.peers);
	metrics_head(&o, "fence_requests_seen_total", "counter", "Fence requests seen on its Lease, each once.");
	metrics_printf(&o, "noderecover_fence_requests_seen_total %llu\n", (unsigned long long)s.requests_seen);
	metrics_head(&o, "fence_fences_total", "counter", "Fences decided, by reason.");
	for (enum fence_reason r = FENCE_REQUESTED; r <= FENCE_ISOLATED; r++)
		metrics_sample(&o, "fence_fences_total", "reason", fence_reason_name(r), (long long)s.fences[r]);
	metrics_head(&o, "fence_peer_answers_total", "counter", "Its peers' answers by kind; none: none, or not signed.");
	for (int k = 0; k < ANSWER_KINDS; k++)
		metrics_sample(&o, "fence_peer_answers_total", "kind", answer_kinds[k], (long long)s.answers[k]);
	metrics_head(&o, "fence_peer_requests_total", "counter", "Its peers' requests; refused: not signed (401).");
	metrics_sample(&o, "fence_peer_requests_total", "result", "answered", (long long)s.served);
	metrics_sample(&o, "fence_peer_requests_total", "result", "refused", (long long)s.refused);
	return o.full ? -1 : listen_response(out, cap, 200, METRICS_CONTENT_TYPE, "", body, o.n);
}

static int route(void *ctx, const char *head, size_t len, char *out, size_t cap)
{
	struct agent *a = ctx;
	char node[PEER_NODE_MAX + 1], nonce[PEER_NONCE_LEN + 1], why[160];
	const char *t = head + 4;
	size_t tn = strcspn(t, " ?");
	int r = peer_request(&a->key, head, len, node, nonce), ok;
	int64_t since;

	if (r > 0)
		return answer_peer(a, node, nonce, out, cap);
	if (r < 0) {
		pthread_mutex_lock(&a->lock);
		a->sh.refused++;
		pthread_mutex_unlock(&a->lock);
		return plain(out, cap, 401, "");
	}
	if (tn == 8 && memcmp(t, "/metrics", 8) == 0)
		return metrics_text(a, out, cap);
	pthread_mutex_lock(&a->lock);
	since = clock_ms() - a->sh.checked;
	ok = a->sh.armed;
	pthread_mutex_unlock(&a->lock);
	if (tn == 6 && memcmp(t, "/livez", 6) == 0) {
		/* the loop stepped within three checks and the longest step */
		ok = since <= (3 * a->s->fence_check + 10) * 1000;
		snprintf(why, sizeof why, ok ? "ok\n" : "no check for %llds\n", (long long)(since / 1000));
		return plain(out, cap, ok ? 200 : 503, why);
	}
	if (tn == 7 && memcmp(t, "/readyz", 7) == 0)
		return plain(out, cap, ok ? 200 : 503, ok ? "ok: armed\n" : "not armed\n");
	return -1;
}

/* ---- The loop ---- */

/* Waits until wake (monotonic ms), petting the watchdog, or until a stop. */
static void wait_until(struct agent *a, int64_t wake)
{
	int64_t left;

	while (!*a->stop && (left = wake - clock_ms()) > 0) {
		struct timespec ts = { 0, (left > PET_MS ? PET_MS : left) * 1000000L };
		pet(a);
		nanosleep(&ts, NULL);
	}
}

/* What a phase change is said as. */
static void say_phase(struct agent *a, enum fence_phase was, const struct fence_answers *ans)
{
	enum fence_phase p = a->st.phase;

	if (p == was || p == FENCE_FENCED)
		return;
	switch (p) {
	case FENCE_HEALTHY:
		say("Reaching the API server%s%s", a->kubelet_on ? ", kubelet healthy" : "",
		    was == FENCE_HEALTHY ? "" : ": carrying on");
		break;
	case FENCE_KUBELET:
		say("Kubelet unhealthy (%s: %s%.0d); fencing once unhealthy for %llds, or at once on a fence request",
		    a->kubelet_url, a->kubelet_status ? "HTTP " : "no answer", a->kubelet_status, (long long)a->s->fence_after);
		break;
	case FENCE_CUT:
		say("Cannot reach the API server (%s); asking the peers after %llds", a->said, (long long)a->s->fence_after);
		break;
	case FENCE_ASKING:
		say("Cut off from the API server for %llds: asking %d peers every check, %d first, then %d at a time until they "
		    "answer; fencing after %llds without an answer (%d answered: %d cannot reach it, %d can)",
		    (long long)a->s->fence_after, a->npeers, FENCE_ASK_FIRST, FENCE_ASK_BATCH, (long long)a->s->fence_isolated_after,
		    ans ? ans->answered : 0, ans ? ans->api_down : 0, ans ? ans->healthy : 0);
		break;
	case FENCE_OUTAGE:
		say("%d of %d peers cannot reach the API server either: a control-plane outage, carrying on", ans ? ans->api_down : 0,
		    fence_peers(&a->st, &a->cfg) > a->total ? fence_peers(&a->st, &a->cfg) : a->total);
		break;
	case FENCE_FENCED:
		break;
	}
}

/* One check: observe, decide, act. */
static void check(struct agent *a)
{
	int64_t now = clock_ms();
	enum fence_phase was = a->st.phase;
	struct fence_obs o = { 0, FENCE_KUBELET_OFF, 0 };
	struct fence_answers ans, *ap = NULL;
	enum fence_do d;

	pet(a);
	pthread_mutex_lock(&a->lock);
	a->sh.checked = now;
	pthread_mutex_unlock(&a->lock);
	o.api = lease_check(a, now, &o.requested);
	share(a, set_api, o.api);
	if (a->kubelet_on) {
		peer_run(&a->kubelet, 1, clock_ms() + FENCE_KUBELET_MS);
		a->kubelet_status = peer_status(&a->kubelet);
		o.kubelet = a->kubelet_status == 200 ? FENCE_KUBELET_OK : FENCE_KUBELET_BAD;
		pet(a);
	}
	if (o.api)
		list_peers(a, now);
	d = fence_check(&a->st, &a->cfg, &o, now);
	if (d == FENCE_ASK_PEERS) {
		/* batch after batch while the rules ask for more */
		ans = (struct fence_answers){ a->npeers, 0, 0, 0, 0, 0 };
		ap = &ans;
		while (d == FENCE_ASK_PEERS) {
			ask_batch(a, ans.asked++, &ans);
			d = fence_answers(&a->st, &a->cfg, &ans, now);
		}
		a->ask_from += FENCE_ASK_FIRST;
	}
	say_phase(a, was, ap);
	pthread_mutex_lock(&a->lock);
	a->sh.phase = a->st.phase;
	a->sh.reason = a->st.reason;
	pthread_mutex_unlock(&a->lock);
	if (d == FENCE_FENCE)
		fence_now(a);
}

/* The kubelet's URL: http://IP:PORT/PATH ("" off). 0, or -1 with err. */
static int kubelet_url(struct agent *a, char *err, size_t errlen)
{
	const char *u = a->s->fence_kubelet_url, *hp, *path;
	char host[LISTEN_ADDR_MAX + 1];

	if (!u || !*u)
		return 0;
	hp = strncmp(u, "http://", 7) == 0 ? u + 7 : NULL;
	path = hp ? strchr(hp, '/') : NULL;
	if (path && (size_t)(path - hp) <= LISTEN_ADDR_MAX) {
		memcpy(host, hp, (size_t)(path - hp));
		host[path - hp] = '\0';
		if (peer_addr(&a->kubelet, host) == 0 && peer_get(&a->kubelet, host, path) == 0) {
			snprintf(a->kubelet_url, sizeof a->kubelet_url, "%s", u);
			a->kubelet_on = 1;
			return 0;
		}
	}
	return text_fail(err, errlen, "--fence-kubelet-url '%.80s' is not http://IP:PORT/PATH (an IPv4 or [IPv6] address)", u);
}

/* Everything before the loop: 0, or -1 with err (exit 2). */
static int prepare(struct agent *a, const struct kube_target *t, char *err, size_t errlen)
{
	const struct settings *s = a->s;
	char secret[PEER_SECRET_MAX + 1];
	size_t n = 0;
	int r;

	r = file_read(s->fence_peer_secret_file, secret, sizeof secret, &n);
	if (r != FILE_OK)
		return file_error(err, errlen, "peer secret file", s->fence_peer_secret_file, r, PEER_SECRET_MAX);
	if (n < PEER_SECRET_MIN)
		return text_fail(err, errlen, "peer secret file %s holds %zu bytes, fewer than %d", s->fence_peer_secret_file, n,
		    PEER_SECRET_MIN);
	peer_key(&a->key, secret, n);
	memset(secret, 0, sizeof secret);
	snprintf(a->lease, sizeof a->lease, LEASE_FENCE_PREFIX "%.235s", s->self_node);
	snprintf(a->path, sizeof a->path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", s->fence_namespace);
	a->action = s->fence_action ? s->fence_action : access(s->fence_watchdog, F_OK) == 0 ? "watchdog" : "reboot";
	a->wd = -1;
	a->action_s = strcmp(a->action, "reboot") == 0 ? FENCE_REBOOT_BOUND : s->fence_exec_timeout;
	if (strcmp(a->action, "watchdog") == 0 && watchdog_open(a, err, errlen) < 0)
		return -1;
	a->ask_from = (unsigned)text_hash(s->self_node);
	a->cfg = (struct fence_config){ s->fence_after * 1000, s->fence_isolated_after * 1000, 0,
	    (int)(text_hash(s->self_node) % 1000), 0 };
	if (kubelet_url(a, err, errlen) < 0)
		return -1;
	if (!(a->list = malloc(LIST_MAX)) || !(a->peers = calloc(FENCE_PEERS_MAX, sizeof *a->peers)) ||
	    !(a->next = calloc(FENCE_PEERS_MAX, sizeof *a->next)))
		return text_fail(err, errlen, "out of memory");
	if (kube_init(&a->kc, t, a->cut, err, errlen) < 0 || kube_init(&a->pkc, t, NULL, err, errlen) < 0)
		return -1;
	pthread_mutex_init(&a->lock, NULL);
	published(a, 1);   /* until its first list: no peer, one batch */
	a->sh.checked = clock_ms();
	a->ls.route = route;
	a->ls.route_ctx = a;
	return listen_start(&a->ls, s->fence_listen, err, errlen);
}

int fence_run(const struct settings *s, const struct kube_target *t, const char *version, volatile sig_atomic_t *stop,
    volatile sig_atomic_t *cut)
{
	/* static: reachable to the end, as the ASan build's leak check wants */
	static struct agent *a;
	char err[600];

	if (!(a = calloc(1, sizeof *a))) {
		say_fatal("out of memory at start-up");
		return 1;
	}
	a->s = s;
	a->version = version;
	a->stop = stop;
	a->cut = cut;
	if (prepare(a, t, err, sizeof err) < 0) {
		say_fatal("%s", err);
		return 2;
	}
	say("noderecover %s fence agent starting: node %s (from %s), lease %s/%s (namespace from %s), address %s, action %s "
	    "(%llds), safe time %llds (renew %llds + fence after %llds + isolated after %llds + action %llds + margin %llds), "
	    "check every %llds, kubelet %s; peers, /metrics, /livez and /readyz on %s; API server %s (its one address) from %s",
	    version, s->self_node, s->self_source, s->fence_namespace, a->lease, s->fence_ns_source, s->fence_address, a->action,
	    (long long)a->action_s, (long long)a->cfg.safe / 1000, (long long)s->fence_renew, (long long)s->fence_after,
	    (long long)s->fence_isolated_after, (long long)a->action_s, (long long)fence_margin(s->fence_check, a->cfg.batches), (long long)s->fence_check,
	    a->kubelet_on ? a->kubelet_url : "not checked", s->fence_listen, t->server, t->source);
	fence_start(&a->st, clock_ms());
	while (!*stop) {
		int64_t start = clock_ms();
		if (a->st.phase != FENCE_FENCED)
			check(a);
		pthread_mutex_lock(&a->lock);
		a->sh.checked = clock_ms();
		pthread_mutex_unlock(&a->lock);
		wait_until(a, start + s->fence_check * 1000);
	}
	if (a->wd >= 0 && a->petting) {
		/* a stop, not a fence: the magic close disarms it (a driver built with nowayout stays armed) */
		if (write(a->wd, "V", 1) != 1)
			say("Watchdog %s: the magic close failed (%s): it stays armed", s->fence_watchdog, strerror(errno));
		close(a->wd);
	}
	/* not only when a write was known to succeed: a stop that cut the create's answer short
	 * leaves a Lease the agent never heard it wrote (seen with the sanitizer build's pace) */
	if (!a->sh.fenced) {
		*a->cut = 0;   /* the signal cut the request in flight; the deletion gets its own (a second cuts it) */
		lease_delete(a);
	}
	say("noderecover fence agent stopping on a signal%s", a->sh.fenced ? " (it had fenced)" : "");
	return 0;
}
