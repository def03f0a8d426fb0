/*
 * Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics. Owns the
 * election's state (the record last seen, when it changed by our monotonic clock, when we last
 * renewed) and the Lease's request bodies; sends through kube_call and reads with json_lease.
 * Never reads another holder's timestamps as times, never logs (election.c's thread says what
 * happened), never allocates.
 */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include "clock.h"
#include "lease.h"
#include "text.h"


void lease_observe(struct lease_seen *o, const struct json_lease *r, int64_t mono_ms)
{
	if (o->have && strcmp(o->rec.rv, r->rv) == 0 && strcmp(o->rec.holder, r->holder) == 0 &&
	    strcmp(o->rec.renew, r->renew) == 0)
		return;
	o->rec = *r;
	o->since_ms = mono_ms;
	o->have = 1;
}

enum lease_step lease_decide(const struct lease_seen *o, const char *id, int64_t mono_ms, const char *now,
    struct lease_spec *out)
{
	/* A holder asking for less than ours still gets ours: a short duration written by a
	 * replica whose clock runs fast must not let us take over early. */
	int64_t wait = (o->rec.duration > LEASE_DURATION ? o->rec.duration : LEASE_DURATION) * 1000;
	int mine = strcmp(o->rec.holder, id) == 0;

	if (!o->have || (o->rec.holder[0] && !mine && mono_ms - o->since_ms < wait))
		return LEASE_FOLLOW;
	out->holder = id;
	out->duration = LEASE_DURATION;
	out->renew = now;
	if (mine) {
		out->acquire = o->rec.acquire[0] ? o->rec.acquire : now;
		out->transitions = o->rec.transitions;
		return LEASE_RENEW;
	}
	out->acquire = now;
	out->transitions = o->rec.transitions < 2147483647L ? o->rec.transitions + 1 : o->rec.transitions;
	return LEASE_TAKE;
}

int lease_body(char *out, size_t cap, const char *ns, const char *name, const char *rv, const struct lease_spec *s)
{
	return lease_body_meta(out, cap, ns, name, rv, NULL, s);
}

int lease_body_meta(char *out, size_t cap, const char *ns, const char *name, const char *rv, const char *meta,
    const struct lease_spec *s)
{
	struct json_buf b;
	char num[24];

	json_buf_init(&b, out, cap);
	json_raw(&b, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":");
	json_str(&b, name);
	json_raw(&b, ",\"namespace\":");
	json_str(&b, ns);
	if (rv) {
		json_raw(&b, ",\"resourceVersion\":");
		json_str(&b, rv);
	}
	if (meta) {
		json_raw(&b, ",");
		json_raw(&b, meta);
	}
	json_raw(&b, "},\"spec\":{\"holderIdentity\":");
	json_str(&b, s->holder);
	snprintf(num, sizeof num, "%ld", s->duration);
	json_raw(&b, ",\"leaseDurationSeconds\":");
	json_raw(&b, num);
	json_raw(&b, ",\"acquireTime\":");
	json_str(&b, s->acquire);
	json_raw(&b, ",\"renewTime\":");
	json_str(&b, s->renew);
	snprintf(num, sizeof num, "%ld", s->transitions);
	json_raw(&b, ",\"leaseTransitions\":");
	json_raw(&b, num);
	json_raw(&b, "}}");
	return json_buf_end(&b);
}

void lease_microtime(char *out, int64_t sec, long usec)
{
	text_time(out, sec);
	out[19] = '.';
	text_digits(out + 20, (unsigned)(usec < 0 ? 0 : usec > 999999 ? 999999 : usec), 6);
	out[26] = 'Z';
	out[27] = '\0';
}

int lease_identity(char *out, size_t cap, const char *base)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[4];
	size_t n = strlen(base);

	if (n == 0 || n + 10 > cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (base[i] <= 0x20 || base[i] >= 0x7f)
			return -1;
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return -1;
	memcpy(out, base, n);
	out[n++] = '-';
	for (size_t i = 0; i < sizeof r; i++) {
		out[n++] = hex[r[i] >> 4];
		out[n++] = hex[r[i] & 15];
	}
	out[n] = '\0';
	return 0;
}

int lease_init(struct lease *l, struct kube *k, const char *ns, const char *name, const char *id)
{
	memset(l, 0, sizeof *l);
	l->k = k;
	if ((size_t)snprintf(l->ns, sizeof l->ns, "%s", ns) >= sizeof l->ns ||
	    (size_t)snprintf(l->name, sizeof l->name, "%s", name) >= sizeof l->name ||
	    (size_t)snprintf(l->id, sizeof l->id, "%s", id) >= sizeof l->id ||
	    (size_t)snprintf(l->path, sizeof l->path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", ns) >= sizeof l->path)
		return TEXT_FAIL(l, "lease %s/%s or identity %s too long", ns, name, id);
	return 0;
}

/*
 * One request about the Lease; a 2xx answer is read as a Lease into *r (when r is not NULL).
 * Returns the HTTP status, or -1 with l->err set (a 2xx that is no readable Lease included).
 */
static int lease_request(struct lease *l, const char *what, const char *method, const char *body, struct json_lease *r)
{
	char path[sizeof l->path + LEASE_NAME_MAX + 2], why[200];
	int st;

	snprintf(path, sizeof path, "%s%s%s", l->path, strcmp(method, "POST") ? "/" : "", strcmp(method, "POST") ? l->name : "");
	st = kube_call(l->k, what, method, path, body, body ? strlen(body) : 0, l->answer, sizeof l->answer);
	if (!kube_done(st)) {
		TEXT_FAIL(l, "%s", kube_error(l->k));
		return st;
	}
	if (r && json_lease(l->answer, strlen(l->answer), r, why, sizeof why) < 0)
		return TEXT_FAIL(l, "%s: the answer is no Lease we can read: %s", what, why);
	return st;
}

/* PUTs (rv set) or POSTs spec s; on success the record written is the one seen, from mono_ms. */
static int write_spec(struct lease *l, const char *what, const char *rv, const struct lease_spec *s, int64_t mono_ms)
{
	struct json_lease r;
	int st;

	if (lease_body(l->body, sizeof l->body, l->ns, l->name, rv, s) < 0)
		return TEXT_FAIL(l, "%s: the Lease does not fit in %d bytes", what, LEASE_BODY_MAX);
	st = lease_request(l, what, rv ? "PUT" : "POST", l->body, &r);
	if (kube_done(st))
		lease_observe(&l->seen, &r, mono_ms);
	return st;
}

enum lease_result lease_try(struct lease *l, int64_t mono_ms, int64_t wall_sec, long wall_usec)
{
	char now[LEASE_TIME_LEN + 1], what[LEASE_NAMESPACE_MAX + LEASE_NAME_MAX + 32];
	struct lease_spec s;
	struct json_lease r;
	enum lease_step step;
	int st;

	lease_microtime(now, wall_sec, wall_usec);
	/* client-go's fast path: the leader writes on the record it last wrote, with no GET. */
	if (l->leader && mono_ms - l->seen.since_ms < LEASE_DURATION * 1000 &&
	    lease_decide(&l->seen, l->id, mono_ms, now, &s) == LEASE_RENEW) {
		snprintf(what, sizeof what, "renewing lease %s/%s", l->ns, l->name);
		if (write_spec(l, what, l->seen.rec.rv, &s, mono_ms) == 200) {
			l->renewed_ms = mono_ms;
			return LEASE_LEADING;
		}
	}
	snprintf(what, sizeof what, "reading lease %s/%s", l->ns, l->name);
	st = lease_request(l, what, "GET", NULL, &r);
	if (st == 404) {
		s = (struct lease_spec){ l->id, LEASE_DURATION, now, now, 0 };
		snprintf(what, sizeof what, "creating lease %s/%s", l->ns, l->name);
		st = write_spec(l, what, NULL, &s, mono_ms);
	} else if (st == 200) {
		/* A record is seen when its answer arrives, not when the try began: a read held up
		 * for longer than the Lease (a stalled path, a stopped process) must not date a
		 * holder's fresh record back, or it would look expired the moment it is first seen. */
		int64_t seen_ms = clock_ms();
		lease_observe(&l->seen, &r, seen_ms);
		step = lease_decide(&l->seen, l->id, seen_ms, now, &s);
		if (step == LEASE_FOLLOW) {
			l->leader = 0;
			return LEASE_FOLLOWING;
		}
		snprintf(what, sizeof what, "%s lease %s/%s", step == LEASE_RENEW ? "renewing" : "taking over",
		    l->ns, l->name);
		st = write_spec(l, what, l->seen.rec.rv, &s, mono_ms);
	}
	if (kube_done(st)) {
		l->leader = 1;
		l->renewed_ms = mono_ms;
		return LEASE_LEADING;
	}
	if (st == 409) {
		/* another replica wrote between our read and our write: it won this round */
		l->leader = 0;
		return LEASE_LOST;
	}
	return LEASE_FAILED;
}

int lease_held(const struct lease *l, int64_t mono_ms)
{
	return lease_term_holds(l->leader, l->renewed_ms, mono_ms);
}

const char *lease_holder(const struct lease *l)
{
	return l->seen.rec.holder;
}

enum lease_result lease_release(struct lease *l, int64_t wall_sec, long wall_usec)
{
	char now[LEASE_TIME_LEN + 1], what[LEASE_NAMESPACE_MAX + LEASE_NAME_MAX + 32];
	struct json_lease r;
	int st;

	/* from here on nothing of ours may write as leader, whatever the answer */
	l->leader = 0;
	lease_microtime(now, wall_sec, wall_usec);
	snprintf(what, sizeof what, "releasing lease %s/%s", l->ns, l->name);
	for (int tries = 0; tries < 3; tries++) {
		/* Not ours as last seen, or written since (409), or our last write's answer was cut
		 * short: read it, and release it only if it is ours. */
		if (tries > 0 || !l->seen.have || strcmp(l->seen.rec.holder, l->id) != 0) {
			st = lease_request(l, what, "GET", NULL, &r);
			if (st == 404)
				return LEASE_FOLLOWING;
			if (st != 200)
				return LEASE_FAILED;
			lease_observe(&l->seen, &r, l->seen.since_ms);
			if (strcmp(l->seen.rec.holder, l->id) != 0)
				return LEASE_FOLLOWING;
		}
		struct lease_spec s = { "", 1, now, now, l->seen.rec.transitions };
		st = write_spec(l, what, l->seen.rec.rv, &s, l->seen.since_ms);
		if (kube_done(st))
			return LEASE_RELEASED;
		if (st != 409)
			return LEASE_FAILED;
	}
	TEXT_FAIL(l, "%s: it kept changing", what);
	return LEASE_FAILED;
}

const char *lease_error(const struct lease *l)
{
	return l->err;
}

/* The path of node's fence Lease in ns (node NULL: the list of them all), or -1 when it does not fit. */
static int fence_path(char *out, size_t cap, const char *ns, const char *node)
{
	return (size_t)snprintf(out, cap, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s", ns,
	    node ? "/" LEASE_FENCE_PREFIX : "?labelSelector=" LEASE_FENCE_LABEL_KEY "%3D" LEASE_FENCE_LABEL_VALUE,
	    node ? node : "") < cap ? 0 : -1;
}

enum fencewait_got lease_fence(struct kube *k, const char *ns, const char *node, const char *rv,
    const char *request, char *answer, size_t cap, struct json_fence *f, char *why, size_t whylen)
{
	char path[LEASE_NAMESPACE_MAX + LEASE_NAME_MAX + 64], what[LEASE_NAME_MAX + 48], body[512];
	struct json_buf b;
	int st;

	if (strlen(node) > LEASE_NAME_MAX - strlen(LEASE_FENCE_PREFIX) || fence_path(path, sizeof path, ns, node) < 0)
		return FENCEWAIT_GOT_NONE;   /* a name that long cannot be armed (docs/fence.md) */
	snprintf(what, sizeof what, "%s the fence Lease of %s", rv ? request ? "Requesting on" : "Removing the request from" : "Reading", node);
	if (rv) {
		json_buf_init(&b, body, sizeof body);
		json_raw(&b, "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":");
		json_str(&b, rv);
		json_raw(&b, request ? "},{\"op\":\"add\",\"path\":\"/metadata/annotations/noderecover.io~1fence-request\",\"value\":\""
		    : "},{\"op\":\"remove\",\"path\":\"/metadata/annotations/noderecover.io~1fence-request\"}]");
		if (request) {
			json_raw(&b, request);   /* a MicroTime of ours */
			json_raw(&b, "\"}]");
		}
		if (json_buf_end(&b) < 0)
			return FENCEWAIT_GOT_FAILED;
	}
	st = kube_call(k, what, rv ? "PATCH" : "GET", path, rv ? body : NULL, rv ? strlen(body) : 0, answer, cap);
	if (st == 404)
		return FENCEWAIT_GOT_NONE;
	if (st == 403)
		return FENCEWAIT_GOT_FORBIDDEN;
	if (!kube_done(st))
		return FENCEWAIT_GOT_FAILED;
	return json_fence(answer, strlen(answer), f, why, whylen) < 0 ? FENCEWAIT_GOT_UNREADABLE : FENCEWAIT_GOT_LEASE;
}

struct fence_list {
	void (*fn)(void *ctx, const struct json_fence *f, const char *node);
	void *ctx;
};

static int fence_item(void *ctx, const struct json_item *it)
{
	struct fence_list *fl = ctx;
	struct json_fence f;
	char why[8];
	size_t n = strlen(LEASE_FENCE_PREFIX);

	memset(&f, 0, sizeof f);
	if (!it->p || json_fence(it->p, it->len, &f, why, sizeof why) < 0)
		f.safe = -1;
	fl->fn(fl->ctx, &f, strncmp(f.name, LEASE_FENCE_PREFIX, n) == 0 ? f.name + n : "");
	return 0;
}

int lease_fence_list(struct kube *k, const char *ns, char *body, size_t cap,
    void (*fn)(void *ctx, const struct json_fence *f, const char *node), void *ctx, char *why, size_t whylen)
{
	static char item[LEASE_ANSWER_MAX];
	char path[LEASE_NAMESPACE_MAX + 128];
	struct fence_list fl = { fn, ctx };
	struct json_list l;
	int st;

	if (fence_path(path, sizeof path, ns, NULL) < 0)
		return text_fail(why, whylen, "the fence Leases' path does not fit");
	st = kube_call(k, "listing the fence Leases", "GET", path, NULL, 0, body, cap);
	if (!kube_done(st))
		return text_fail(why, whylen, "%s", kube_error(k));
	json_list_init(&l, item, sizeof item, NULL, fence_item, &fl);
	if (json_list_feed(&l, body, strlen(body)) < 0 || json_list_end(&l) < 0)
		return text_fail(why, whylen, "the fence Leases' list cannot be read: %s", l.err);
	return 0;
}
