/*
 * Reading Kubernetes JSON strictly without allocating: the token walker. jsmn tokenizes the few
 * members a reader needs (an item's taints and conditions, which the scanner located; a Status,
 * a Lease, a review's answer, which json_check checked first) into one static token pool, and
 * the walker reads them: json_node_facts, the Status, the Lease and the reviews. The grammar and
 * the decoding of the strings it checked are json_scan.c's, the NodeList's layout json_list.c's,
 * the writer json_write.c's.
 * Nothing here allocates, does I/O or decides anything about a node. One pool a thread: the loop,
 * the election's thread and the fence agent's listener each read their own answers at once.
 */
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS /* without them jsmn walks back over every token at each ',' */
#include <jsmn.h>

#include "json.h"
#include "text.h"

/* Thread-local: the election's thread reads its Lease while the loop reads a node; one shared pool
 * let each overwrite the other's tokens mid-read. Only the pages a thread touches are resident. */
static _Thread_local jsmntok_t pool[JSON_TOKENS];
_Static_assert(sizeof pool == JSON_POOL_BYTES, "JSON_POOL_BYTES is one thread's pool");

/* ---- The token walker ---- */

/* One member read with jsmn: its text, its tokens, and its place in the item for reasons. */
struct doc {
	const char *js;
	int n;
	size_t base;            /* the offset of js in the item */
	char *why;
	size_t whylen;
};

/* What a value starting with c is, for a reason. */
static const char *what(int c)
{
	switch (c) {
	case '"': return "a string";
	case '{': return "an object";
	case '[': return "an array";
	case 't': case 'f': return "a boolean";
	case 'n': return "null";
	}
	return "a number";
}

/* Tokenizes the checked value js[0..len) at base in the item. */
static int tokenize(struct doc *d, const char *js, size_t len, size_t base, const char *path)
{
	jsmn_parser p;

	d->js = js;
	d->base = base;
	jsmn_init(&p);
	d->n = len > INT_MAX ? JSMN_ERROR_NOMEM : jsmn_parse(&p, js, len, pool, JSON_TOKENS);
	if (d->n == JSMN_ERROR_NOMEM)
		return text_fail(d->why, d->whylen, "%s has more than %d tokens (byte %zu)", path, JSON_TOKENS, base);
	if (d->n < 1)
		return text_fail(d->why, d->whylen, "%s could not be tokenized (byte %zu)", path, base);
	return 0;
}

/* The index just past the value at token i and everything inside it. */
static int skip(const struct doc *d, int i)
{
	int end = pool[i].end;

	for (i++; i < d->n && pool[i].start < end; i++)
		;
	return i;
}

/* A name looked for, with its length counted at compile time. */
struct name {
	const char *s;
	size_t n;
};
#define NAME_LIT(lit) { lit, sizeof lit - 1 }

static int tok_eq(const struct doc *d, int i, const char *lit, size_t ln)
{
	return json_str_eq(d->js + pool[i].start, (size_t)(pool[i].end - pool[i].start), lit, ln);
}

/* The first byte of token i's value as written: '"' for a string. */
static int tok_kind(const struct doc *d, int i)
{
	return pool[i].type == JSMN_STRING ? '"' : d->js[pool[i].start];
}

/* The path of a member for a reason: path, path[idx], path.name or path[idx].name. */
static void where(char *out, size_t cap, const char *path, int idx, const char *name)
{
	int k = snprintf(out, cap, "%s", path);

	if (idx >= 0 && k >= 0 && (size_t)k < cap)
		k += snprintf(out + k, cap - (size_t)k, "[%d]", idx);
	if (name && k >= 0 && (size_t)k < cap)
		snprintf(out + k, cap - (size_t)k, "%s%s", k ? "." : "", name);
}

/* Token i is not of kind want ('"', '{', '['): -1, with the reason. */
static int fail_type(const struct doc *d, int i, int want, const char *path, int idx, const char *name)
{
	char w[128];

	where(w, sizeof w, path, idx, name);
	return text_fail(d->why, d->whylen, "%s is %s, not %s (byte %zu)", w, what(tok_kind(d, i)), what(want),
	    d->base + (size_t)pool[i].start);
}

static int is_null(const struct doc *d, int i)
{
	return pool[i].type == JSMN_PRIMITIVE && d->js[pool[i].start] == 'n';
}

/*
 * Finds names[0..nn) among the members of the object at token o (path[idx]): at[j] is the token
 * of the value of names[j], or -1. A name written twice is refused, or with first_wins its
 * first kept. A NULL name is not looked for.
 */
static int lookup(const struct doc *d, int o, const struct name *names, int nn, int *at, int first_wins,
    const char *path, int idx)
{
	int k = o + 1;

	for (int j = 0; j < nn; j++)
		at[j] = -1;
	for (int m = 0; m < pool[o].size; m++, k = skip(d, k + 1)) {
		for (int j = 0; j < nn; j++) {
			if (!tok_eq(d, k, names[j].s, names[j].n))
				continue;
			if (at[j] < 0) {
				at[j] = k + 1;
			} else if (!first_wins) {
				char w[128];
				where(w, sizeof w, path, idx, names[j].s);
				return text_fail(d->why, d->whylen, "%s appears twice (byte %zu)", w,
				    d->base + (size_t)pool[k].start);
			}
		}
	}
	return 0;
}

static const char *const member_path[JSON_MEMBERS] = {
	"metadata", "spec", "status", "metadata.name", "metadata.uid", "metadata.resourceVersion",
	"metadata.labels", "metadata.annotations", "", "", "", "", "", "spec.taints", "status.conditions", "kind",
};

/*
 * Tokenizes member j of the item when it is present and not null: 1, with d set and its one
 * token checked to be of kind want; 0 when absent or null; -1 otherwise.
 */
static int member(struct doc *d, const struct json_item *it, int j, int want)
{
	const struct json_span *sp = &it->m[j];

	if (!sp->at || it->p[sp->at] == 'n')
		return 0;
	if (it->p[sp->at] != want)
		return text_fail(d->why, d->whylen, "%s is %s, not %s (byte %zu)", member_path[j], what(it->p[sp->at]),
		    what(want), sp->at);
	return tokenize(d, it->p + sp->at, sp->end - sp->at, sp->at, member_path[j]) < 0 ? -1 : 1;
}

/* A string member of metadata into out[0..cap): present, not empty, without NUL, fitting. */
static int read_id(const struct json_item *it, int j, char *out, size_t cap, char *why, size_t whylen)
{
	const struct json_span *sp = &it->m[j];
	const char *v = it->p + sp->at;

	out[0] = '\0';
	if (!sp->at || *v == 'n')
		return text_fail(why, whylen, "%s is missing", member_path[j]);
	if (*v != '"')
		return text_fail(why, whylen, "%s is %s, not a string (byte %zu)", member_path[j], what(*v), sp->at);
	if (sp->end - sp->at == 2)
		return text_fail(why, whylen, "%s is empty (byte %zu)", member_path[j], sp->at);
	if (json_unescape(v + 1, sp->end - sp->at - 2, out, cap) < 0) {
		out[0] = '\0';
		return text_fail(why, whylen, "%s is longer than %zu bytes or holds a NUL (byte %zu)", member_path[j],
		    cap - 1, sp->at);
	}
	return 0;
}

int json_item_string(const struct json_item *it, enum json_member j, char *out, size_t cap, char *why,
    size_t whylen)
{
	if (!it->p) {
		out[0] = '\0';
		return text_fail(why, whylen, "its object is %zu bytes, more than the buffer holds", it->len);
	}
	if (it->twice >> j & 1) {
		out[0] = '\0';
		return text_fail(why, whylen, "%s appears twice", member_path[j]);
	}
	return read_id(it, j, out, cap, why, whylen);
}

static int tok_is(const struct doc *d, int i, const char *lit, size_t ln)
{
	return i >= 0 && pool[i].type == JSMN_STRING && tok_eq(d, i, lit, ln);
}
#define TOK_IS(d, i, lit) tok_is(d, i, lit, sizeof lit - 1)

/* Whether the string member j of the item is present and decodes to lit. */
static int span_is(const struct json_item *it, int j, const char *lit, size_t ln)
{
	const struct json_span *sp = &it->m[j];
	return sp->at && sp->end - sp->at >= 2 && json_str_eq(it->p + sp->at + 1, sp->end - sp->at - 2, lit, ln);
}

/* Labels and annotations: the scanner noted the keys looked for and any value not a string. */
static int read_maps(const struct json_item *it, const struct node_keys *k, struct node_facts *f, char *why,
    size_t whylen)
{
	const char *key[] = { NODE_LABEL_CONTROL_PLANE, NODE_LABEL_ETCD, k && k->prune_label ? k->prune_label : "",
		k && k->exclude_label ? k->exclude_label : "", k && k->annotation ? k->annotation : "" };

	for (int j = 0; j < 2; j++) {
		const struct json_span *sp = &it->m[JSON_LABELS + j];
		int c = sp->at ? it->p[sp->at] : 'n';
		if (c != '{' && c != 'n')
			return text_fail(why, whylen, "%s is %s, not an object (byte %zu)", member_path[JSON_LABELS + j], what(c), sp->at);
		if (it->not_string[j])
			return text_fail(why, whylen, "%s holds %s, not a string (byte %zu)", member_path[JSON_LABELS + j],
			    what(it->p[it->not_string[j]]), it->not_string[j]);
	}
	for (int m = 0; m < 5; m++)
		if (it->twice >> (JSON_CONTROL_PLANE + m) & 1)
			return text_fail(why, whylen, "%s.%s appears twice", m < 4 ? "metadata.labels" : "metadata.annotations", key[m]);
	f->control_plane = it->m[JSON_CONTROL_PLANE].at != 0;
	f->etcd = it->m[JSON_ETCD].at != 0;
	f->etcd_voter = span_is(it, JSON_ETCD, "true", 4);
	f->removable = span_is(it, JSON_PRUNE, "true", 4);
	f->excluded = span_is(it, JSON_EXCLUDE, "true", 4);
	f->has_annotations = it->m[JSON_ANNOTATIONS].at && it->p[it->m[JSON_ANNOTATIONS].at] == '{';
	f->our_annotation = it->m[JSON_OURS].at != 0;
	f->tainted_at = -1;
	if (f->our_annotation) {
		const struct json_span *sp = &it->m[JSON_OURS];
		char when[40];
		int len = sp->end - sp->at >= 2 ? json_unescape(it->p + sp->at + 1, sp->end - sp->at - 2, when, sizeof when) : -1;
		f->tainted_at = len > 0 ? text_rfc3339(when, (size_t)len) : -1;
	}
	return 0;
}

/* The elements of the array at token 0 must be objects; each is looked up for names. */
static int element(const struct doc *d, int el, int m, const struct name *names, int nn, int *at,
    const char *path)
{
	if (pool[el].type != JSMN_OBJECT)
		return fail_type(d, el, '{', path, m, NULL);
	if (lookup(d, el, names, nn, at, 0, path, m) < 0)
		return -1;
	/* the first name is the one whose value must be a string when present */
	if (at[0] >= 0 && pool[at[0]].type != JSMN_STRING)
		return fail_type(d, at[0], '"', path, m, names[0].s);
	return 0;
}

static int read_taints(struct doc *d, struct node_facts *f)
{
	static const struct name names[] = { NAME_LIT("key") };
	int at[1];

	f->has_taints = 1;
	for (int m = 0, el = 1; m < pool[0].size; m++, el = skip(d, el)) {
		if (element(d, el, m, names, 1, at, "spec.taints") < 0)
			return -1;
		if (f->oos_taint < 0 && TOK_IS(d, at[0], NODE_TAINT_KEY))
			f->oos_taint = m;
	}
	return 0;
}


static int read_conditions(struct doc *d, struct node_facts *f)
{
	static const struct name names[] = { NAME_LIT("type"), NAME_LIT("status"), NAME_LIT("lastTransitionTime") };
	int at[3], ready = -1;
	char when[64];

	for (int m = 0, el = 1; m < pool[0].size; m++, el = skip(d, el)) {
		if (element(d, el, m, names, 3, at, "status.conditions") < 0)
			return -1;
		if (!TOK_IS(d, at[0], "Ready"))
			continue;
		/* Two Ready conditions: which one the API server meant is a guess. */
		if (ready >= 0)
			return text_fail(d->why, d->whylen, "status.conditions[%d] is a second Ready condition, after [%d] (byte %zu)",
			    m, ready, d->base + (size_t)pool[el].start);
		ready = m;
		if (at[1] < 0)
			return text_fail(d->why, d->whylen, "status.conditions[%d].status is missing (byte %zu)", m,
			    d->base + (size_t)pool[el].start);
		if (pool[at[1]].type != JSMN_STRING)
			return fail_type(d, at[1], '"', "status.conditions", m, "status");
		f->ready = TOK_IS(d, at[1], "True") ? NODE_READY_TRUE : TOK_IS(d, at[1], "False") ? NODE_READY_FALSE :
		    TOK_IS(d, at[1], "Unknown") ? NODE_READY_UNKNOWN : NODE_READY_NONE;
		if (at[2] >= 0 && !is_null(d, at[2]) && pool[at[2]].type != JSMN_STRING)
			return fail_type(d, at[2], '"', "status.conditions", m, "lastTransitionTime");
		int len = at[2] >= 0 && pool[at[2]].type == JSMN_STRING ?
		    json_unescape(d->js + pool[at[2]].start, (size_t)(pool[at[2]].end - pool[at[2]].start), when, sizeof when) : -1;
		f->ready_since = len > 0 ? text_rfc3339(when, (size_t)len) : -1;
	}
	return 0;
}

/*
 * One item to its facts: the scanner located its members and checked their grammar; here each
 * is checked for its type, and taints and conditions are tokenized, one at a time.
 */
int json_node_facts(const struct json_item *it, const struct node_keys *k, struct node_facts *f,
    char *why, size_t whylen)
{
	struct doc d = { .why = why, .whylen = whylen };
	int r;

	memset(f, 0, sizeof *f);
	f->ready = NODE_READY_NONE;
	f->ready_since = -1;
	f->tainted_at = -1;
	f->oos_taint = -1;
	if (!it->p)
		return text_fail(why, whylen, "its object is %zu bytes, more than the buffer holds", it->len);
	for (int j = 0; j < JSON_MEMBERS; j++)
		if ((it->twice >> j & 1) && member_path[j][0])
			return text_fail(why, whylen, "%s appears twice", member_path[j]);
	const char *meta = it->m[JSON_METADATA].at ? it->p + it->m[JSON_METADATA].at : "n";
	if (*meta != '{' && *meta != 'n')
		return text_fail(why, whylen, "metadata is %s, not an object (byte %zu)", what(*meta), it->m[JSON_METADATA].at);
	/* Read first: the name of a node refused for what follows still helps the log line. */
	if (read_id(it, JSON_NAME, f->name, sizeof f->name, why, whylen) < 0 ||
	    read_id(it, JSON_UID, f->uid, sizeof f->uid, why, whylen) < 0 ||
	    read_id(it, JSON_RV, f->rv, sizeof f->rv, why, whylen) < 0)
		return -1;
	if (read_maps(it, k, f, why, whylen) < 0)
		return -1;
	for (int j = JSON_SPEC; j <= JSON_STATUS; j++) {
		const char *v = it->m[j].at ? it->p + it->m[j].at : "n";
		if (*v != '{' && *v != 'n')
			return text_fail(why, whylen, "%s is %s, not an object (byte %zu)", member_path[j], what(*v), it->m[j].at);
	}
	if ((r = member(&d, it, JSON_TAINTS, '[')) < 0 || (r && read_taints(&d, f) < 0))
		return -1;
	if ((r = member(&d, it, JSON_CONDITIONS, '[')) < 0 || (r && read_conditions(&d, f) < 0))
		return -1;
	return 0;
}

/* Tokenizes body, which must be one valid JSON object (what: its name for a reason). */
static int object_doc(struct doc *d, const char *body, size_t len, const char *name)
{
	char why[160];
	size_t b = 0, bad;

	while (b < len && json_is_space((unsigned char)body[b]))
		b++;
	if (json_check(body, len, &bad, why, sizeof why) < 0)
		return text_fail(d->why, d->whylen, "%s is not JSON: %s (byte %zu)", name, why, bad);
	if (body[b] != '{')
		return text_fail(d->why, d->whylen, "%s is %s, not an object", name, what(body[b]));
	return tokenize(d, body + b, len - b, b, name);
}

/* A Status's reason and message, decoded as sent: the caller makes them fit for a log line (kube_clean). */
int json_status(const char *body, size_t len, char *reason, size_t rlen, char *msg, size_t mlen)
{
	static const struct name names[] = { NAME_LIT("reason"), NAME_LIT("message") };
	char why[160];
	struct doc d = { .why = why, .whylen = sizeof why };
	int at[2];

	if (rlen)
		reason[0] = '\0';
	if (mlen)
		msg[0] = '\0';
	if (object_doc(&d, body, len, "the Status") < 0)
		return -1;
	/* Duplicates only blur a log line here, so take the first rather than lose the text. */
	lookup(&d, 0, names, 2, at, 1, "", -1);
	if (at[0] >= 0 && pool[at[0]].type == JSMN_STRING)
		json_str_log(d.js + pool[at[0]].start, (size_t)(pool[at[0]].end - pool[at[0]].start), reason, rlen);
	if (at[1] >= 0 && pool[at[1]].type == JSMN_STRING)
		json_str_log(d.js + pool[at[1]].start, (size_t)(pool[at[1]].end - pool[at[1]].start), msg, mlen);
	return 0;
}

/* A string member of a Lease at token i (-1: absent) into out: absent or null is "". */
static int lease_str(const struct doc *d, int i, const char *path, char *out, size_t cap)
{
	out[0] = '\0';
	if (i < 0 || is_null(d, i))
		return 0;
	if (pool[i].type != JSMN_STRING)
		return fail_type(d, i, '"', path, -1, NULL);
	if (json_unescape(d->js + pool[i].start, (size_t)(pool[i].end - pool[i].start), out, cap) < 0)
		return text_fail(d->why, d->whylen, "%s is longer than %zu bytes or holds a NUL (byte %zu)", path, cap - 1,
		    d->base + (size_t)pool[i].start);
	return 0;
}

/* A whole-number member of a Lease at token i (-1: absent) into *out: absent or null is 0. */
static int lease_int(const struct doc *d, int i, const char *path, long *out)
{
	const char *v;
	size_t n;
	int64_t x = 0;

	*out = 0;
	if (i < 0 || is_null(d, i))
		return 0;
	v = d->js + pool[i].start;
	n = (size_t)(pool[i].end - pool[i].start);
	if (pool[i].type != JSMN_PRIMITIVE || text_decimal(v, n, 2147483647L, &x) < 0)
		return text_fail(d->why, d->whylen, "%s is not a whole number from 0 to 2147483647 (byte %zu)", path,
		    d->base + (size_t)pool[i].start);
	*out = x;
	return 0;
}

/* A Status object's code (its HTTP status): client-go knows a 410 by its code whatever its reason. */
long json_status_code(const char *body, size_t len)
{
	static const struct name names[] = { NAME_LIT("code") };
	char why[160];
	struct doc d = { .why = why, .whylen = sizeof why };
	int at[1];
	long code;

	if (object_doc(&d, body, len, "the Status") < 0)
		return -1;
	lookup(&d, 0, names, 1, at, 1, "", -1);
	if (at[0] < 0 || lease_int(&d, at[0], "code", &code) < 0 || is_null(&d, at[0]))
		return -1;
	return code;
}

/* A Lease's resourceVersion and spec, for leader election. */
int json_lease(const char *body, size_t len, struct json_lease *l, char *why, size_t whylen)
{
	static const struct name top[] = { NAME_LIT("metadata"), NAME_LIT("spec") };
	static const struct name meta[] = { NAME_LIT("resourceVersion") };
	static const struct name spec[] = { NAME_LIT("holderIdentity"), NAME_LIT("leaseDurationSeconds"),
		NAME_LIT("acquireTime"), NAME_LIT("renewTime"), NAME_LIT("leaseTransitions") };
	struct doc d = { .why = why, .whylen = whylen };
	int at[2], m[1], sp[5] = { -1, -1, -1, -1, -1 };

	memset(l, 0, sizeof *l);
	if (object_doc(&d, body, len, "the Lease") < 0 || lookup(&d, 0, top, 2, at, 0, "", -1) < 0)
		return -1;
	if (at[0] < 0 || pool[at[0]].type != JSMN_OBJECT)
		return at[0] < 0 ? text_fail(why, whylen, "metadata is missing") : fail_type(&d, at[0], '{', "metadata", -1, NULL);
	if (lookup(&d, at[0], meta, 1, m, 0, "metadata", -1) < 0 ||
	    lease_str(&d, m[0], "metadata.resourceVersion", l->rv, sizeof l->rv) < 0)
		return -1;
	if (!l->rv[0])
		return text_fail(why, whylen, "metadata.resourceVersion is missing or empty");
	if (at[1] >= 0 && !is_null(&d, at[1])) {
		if (pool[at[1]].type != JSMN_OBJECT)
			return fail_type(&d, at[1], '{', "spec", -1, NULL);
		if (lookup(&d, at[1], spec, 5, sp, 0, "spec", -1) < 0)
			return -1;
	}
	if (lease_str(&d, sp[0], "spec.holderIdentity", l->holder, sizeof l->holder) < 0 ||
	    lease_int(&d, sp[1], "spec.leaseDurationSeconds", &l->duration) < 0 ||
	    lease_str(&d, sp[2], "spec.acquireTime", l->acquire, sizeof l->acquire) < 0 ||
	    lease_str(&d, sp[3], "spec.renewTime", l->renew, sizeof l->renew) < 0 ||
	    lease_int(&d, sp[4], "spec.leaseTransitions", &l->transitions) < 0)
		return -1;
	return 0;
}

/*
 * The token of the value at path[0..n) (member names) from the document's object: -1 when a
 * member on the way is absent or null, -1 with a reason when one on the way is not an object
 * or any is written twice (an answer that may mean two things is not read).
 */
static int dig(struct doc *d, const char *const *path, int n, int *at)
{
	char w[128] = "";
	int o = 0;

	for (int i = 0; i < n; i++) {
		const struct name nm = { path[i], strlen(path[i]) };
		size_t k = strlen(w);
		if (pool[o].type != JSMN_OBJECT)
			return fail_type(d, o, '{', w, -1, NULL);
		if (lookup(d, o, &nm, 1, at, 0, w, -1) < 0)
			return -1;
		snprintf(w + k, sizeof w - k, "%s%s", k ? "." : "", path[i]);
		if (*at < 0 || is_null(d, *at)) {
			*at = -1;
			return 0;
		}
		o = *at;
	}
	return 0;
}

/*
 * The token of the value at path[0..n) in body, which must be one valid JSON object (name: what
 * it is, for a reason): -1 with a reason when it cannot be read or the value is absent or null.
 */
static int required(struct doc *d, const char *body, size_t len, const char *name, const char *const *path, int n)
{
	char w[128] = "";
	int at;

	if (object_doc(d, body, len, name) < 0 || dig(d, path, n, &at) < 0)
		return -1;
	for (int i = 0; at < 0 && i < n; i++)
		snprintf(w + strlen(w), sizeof w - strlen(w), "%s%s", i ? "." : "", path[i]);
	return at >= 0 ? at : text_fail(d->why, d->whylen, "%s has no %s", name, w);
}

/* A fence Lease's name, resourceVersion and the agent's annotations, for the watcher. */
int json_fence(const char *body, size_t len, struct json_fence *f, char *why, size_t whylen)
{
	static const char *const top[] = { "metadata" };
	static const struct name meta[] = { NAME_LIT("name"), NAME_LIT("resourceVersion"), NAME_LIT("annotations") };
	static const struct name ann[] = { NAME_LIT(JSON_FENCE_SAFE), NAME_LIT(JSON_FENCE_FENCING), NAME_LIT(JSON_FENCE_REQUEST),
		NAME_LIT(JSON_FENCE_ACTION) };
	struct doc d = { .why = why, .whylen = whylen };
	int md, m[3], a[4] = { -1, -1, -1, -1 };
	char safe[24], action[16];
	int64_t x;

	memset(f, 0, sizeof *f);
	f->safe = -1;
	if ((md = required(&d, body, len, "the Lease", top, 1)) < 0)
		return -1;
	if (pool[md].type != JSMN_OBJECT)
		return fail_type(&d, md, '{', "metadata", -1, NULL);
	if (lookup(&d, md, meta, 3, m, 0, "metadata", -1) < 0 ||
	    lease_str(&d, m[0], "metadata.name", f->name, sizeof f->name) < 0 ||
	    lease_str(&d, m[1], "metadata.resourceVersion", f->rv, sizeof f->rv) < 0)
		return -1;
	if (!f->rv[0])
		return text_fail(why, whylen, "metadata.resourceVersion is missing or empty");
	if (m[2] >= 0 && !is_null(&d, m[2])) {
		if (pool[m[2]].type != JSMN_OBJECT)
			return fail_type(&d, m[2], '{', "metadata.annotations", -1, NULL);
		if (lookup(&d, m[2], ann, 4, a, 0, "metadata.annotations", -1) < 0)
			return -1;
	}
	f->fencing = a[1] >= 0;
	f->request = a[2] >= 0;
	f->watchdog = a[3] >= 0 && pool[a[3]].type == JSMN_STRING &&
	    lease_str(&d, a[3], JSON_FENCE_ACTION, action, sizeof action) == 0 && strcmp(action, "watchdog") == 0;
	/* a safe time that cannot be read is the watcher's to refuse, not a Lease that cannot be read */
	if (a[0] >= 0 && pool[a[0]].type == JSMN_STRING &&
	    lease_str(&d, a[0], JSON_FENCE_SAFE, safe, sizeof safe) == 0 &&
	    text_decimal(safe, strlen(safe), 2147483647L, &x) == 0 && x > 0)
		f->safe = (long)x;
	return 0;
}

/* Whether token i is the literal true (1), false (0), or neither (-1). */
static int token_bool(const struct doc *d, int i)
{
	if (pool[i].type != JSMN_PRIMITIVE)
		return -1;
	return d->js[pool[i].start] == 't' ? 1 : d->js[pool[i].start] == 'f' ? 0 : -1;
}

/* An access review's verdict, and its reason for the log. */
int json_access_review(const char *body, size_t len, int *allowed, char *reason, size_t rlen, char *why,
    size_t whylen)
{
	static const char *const p_allowed[] = { "status", "allowed" }, *const p_denied[] = { "status", "denied" },
	    *const p_reason[] = { "status", "reason" };
	struct doc d = { .why = why, .whylen = whylen };
	int at, denied = 0;

	*allowed = 0;
	if (rlen)
		reason[0] = '\0';
	if ((at = required(&d, body, len, "the access review", p_allowed, 2)) < 0)
		return -1;
	if ((*allowed = token_bool(&d, at)) < 0) {
		*allowed = 0;
		return fail_type(&d, at, 't', "status.allowed", -1, NULL);
	}
	if (dig(&d, p_denied, 2, &at) < 0)
		return -1;
	if (at >= 0 && (denied = token_bool(&d, at)) < 0)
		return fail_type(&d, at, 't', "status.denied", -1, NULL);
	if (*allowed && denied) {
		*allowed = 0;
		return text_fail(why, whylen, "the access review says both allowed and denied");
	}
	if (dig(&d, p_reason, 2, &at) == 0 && at >= 0 && pool[at].type == JSMN_STRING)
		json_str_log(d.js + pool[at].start, (size_t)(pool[at].end - pool[at].start), reason, rlen);
	return 0;
}

/* The user a SelfSubjectReview names. */
int json_self_user(const char *body, size_t len, char *user, size_t cap, char *why, size_t whylen)
{
	static const char *const path[] = { "status", "userInfo", "username" };
	struct doc d = { .why = why, .whylen = whylen };
	int at;

	if (cap)
		user[0] = '\0';
	if ((at = required(&d, body, len, "the user review", path, 3)) < 0)
		return -1;
	if (pool[at].type != JSMN_STRING)
		return fail_type(&d, at, '"', "status.userInfo.username", -1, NULL);
	json_str_log(d.js + pool[at].start, (size_t)(pool[at].end - pool[at].start), user, cap);
	if (cap == 0 || user[0] == '\0')
		return text_fail(why, whylen, "status.userInfo.username is empty");
	return 0;
}
