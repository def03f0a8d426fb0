/*
 * json.c against recorded k3s Node objects and NodeList pages (tests/unit/json/, made by
 * make_fixtures.py there), hand-made malformed input, and the writer's escaping.
 * Every node is read the way noderecover reads it: inside a list, through the scanner, fed whole
 * and a byte at a time (both must give the same facts and the same reason).
 * Run from tests/unit: fixtures are read as json/NAME.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"

#define ANN "github-runner.exadev/out-of-service-applied-at"
#define PRUNE "github-runner.exadev.io/removable"

static const struct node_keys keys = { PRUNE, ANN, NULL };

/* Reads json/NAME once into a slot of its own, which then stays valid for the whole run. */
static const char *fixture(const char *name, size_t *len)
{
	static char slots[12][65536];
	static const char *names[12];
	static size_t lens[12];
	char path[256];
	int i;

	for (i = 0; i < 12 && names[i]; i++) {
		if (strcmp(names[i], name) == 0) {
			*len = lens[i];
			return slots[i];
		}
	}
	snprintf(path, sizeof path, "json/%s", name);
	FILE *f = fopen(path, "rb");
	if (i == 12 || !f) {
		fprintf(stderr, "cannot open %s (run from tests/unit), or too many fixtures\n", path);
		exit(2);
	}
	lens[i] = fread(slots[i], 1, sizeof slots[i] - 1, f);
	if (!feof(f)) {
		fprintf(stderr, "%s is larger than a fixture slot\n", path);
		exit(2);
	}
	fclose(f);
	slots[i][lens[i]] = '\0';
	names[i] = name;
	*len = lens[i];
	return slots[i];
}

/* Items collected from a list: their bytes, sizes, and what json_node_facts made of them. */
static struct collect {
	char bytes[400000];
	size_t used;
	size_t off[64], len[64];
	int null[64], r[64];
	struct node_facts f[64];
	char why[64][200];
	const struct node_keys *k;
	int n;
	int stop_at; /* return 7 from this item on (1-based), 0: never */
} got;

static int collect_item(void *ctx, const struct json_item *it)
{
	struct collect *c = ctx;

	if (c->n >= 64)
		return -1;
	c->null[c->n] = it->p == NULL;
	c->len[c->n] = it->len;
	c->off[c->n] = c->used;
	check(it->index == c->n + 1);
	if (it->p) {
		if (it->len > sizeof c->bytes - c->used)
			return -1;
		memcpy(c->bytes + c->used, it->p, it->len);
		c->used += it->len;
	}
	c->why[c->n][0] = '\0';
	c->r[c->n] = json_node_facts(it, c->k, &c->f[c->n], c->why[c->n], sizeof c->why[c->n]);
	check((c->r[c->n] == 0) == (c->why[c->n][0] == '\0'));
	c->n++;
	if (c->stop_at && c->n >= c->stop_at)
		return 7;
	return 0;
}

static char item_buf[400000];
static const struct node_keys *cur_keys = &keys;

static void reset(void)
{
	got.used = 0;
	got.n = 0;
	got.stop_at = 0;
	got.k = cur_keys;
}

/* Feeds s[0..n) in pieces: 0 whole, 1 one byte at a time, else pseudo-random sizes from seed. */
static int feed_split(struct json_list *l, const char *s, size_t n, unsigned seed)
{
	size_t i = 0;
	uint32_t x = seed * 2654435761u + 1;

	while (i < n) {
		size_t k = n - i;
		if (seed == 1) {
			k = 1;
		} else if (seed > 1) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			size_t want = x % 4 == 0 ? x % 7 + 1 : x % 9000 + 1;
			k = want < k ? want : k;
		}
		int r = json_list_feed(l, s + i, k);
		if (r != 0)
			return r;
		i += k;
	}
	return json_list_end(l);
}

static int list(const char *s, size_t n, size_t cap, unsigned seed, struct json_list *l)
{
	reset();
	json_list_init(l, item_buf, cap, cur_keys, collect_item, &got);
	return feed_split(l, s, n, seed);
}

static int list_str(const char *s, struct json_list *l)
{
	return list(s, strlen(s), sizeof item_buf, 0, l);
}

/* Why the last facts_n failed: the node's reason, or the list's. */
static char why[256];

/*
 * The facts of one Node object obj[0..n), read inside a list fed whole and a byte at a time:
 * 0, -1 when the node is unreadable, -2 when the list is malformed; why says why. The two
 * feeds must agree on all of it.
 */
static int facts_k(const char *obj, size_t n, const struct node_keys *k, struct node_facts *f)
{
	static char body[400100];
	static struct json_list l;
	struct node_facts first = { 0 };
	char first_why[256] = "";
	int first_r = 0;

	if (n > sizeof body - 100)
		return -3;
	memcpy(body, "{\"items\":[", 10);
	memcpy(body + 10, obj, n);
	memcpy(body + 10 + n, "]}", 2);
	for (unsigned seed = 0; seed < 2; seed++) {
		cur_keys = k;
		int r = list(body, n + 12, sizeof item_buf, seed, &l);
		cur_keys = &keys;
		memset(f, 0, sizeof *f);
		if (r != 0) {
			snprintf(why, sizeof why, "%s", l.err);
			r = -2;
		} else if (got.n != 1) {
			snprintf(why, sizeof why, "%d items", got.n);
			r = -2;
		} else {
			*f = got.f[0];
			snprintf(why, sizeof why, "%s", got.why[0]);
			r = got.r[0];
		}
		if (seed == 0) {
			first = *f;
			first_r = r;
			snprintf(first_why, sizeof first_why, "%s", why);
		} else if (!check(r == first_r && memcmp(f, &first, sizeof first) == 0 && strcmp(why, first_why) == 0)) {
			fprintf(stderr, "  whole: %d %s\n  bytes: %d %s\n", first_r, first_why, r, why);
		}
	}
	return first_r;
}

static int facts_of(const char *name, struct node_facts *f)
{
	size_t n;
	const char *s = fixture(name, &n);
	return facts_k(s, n, &keys, f);
}

static int facts_str(const char *s, struct node_facts *f)
{
	return facts_k(s, strlen(s), &keys, f);
}

static int facts_n(const char *s, size_t n, struct node_facts *f)
{
	return facts_k(s, n, &keys, f);
}


/* date -u -d 2026-11-27T08:14:22Z +%s, and so on. */
static void t_server(void)
{
	struct node_facts f;

	check(facts_of("server-1.json", &f) == 0);
	check(strcmp(f.name, "server-1") == 0);
	check(strcmp(f.uid, "abcc4a81-12e9-12f5-9cae-a6d6afe99108") == 0);
	check(strcmp(f.rv, "48213") == 0);
	check(f.ready == NODE_READY_TRUE);
	check(f.ready_since == 1795767262);
	check(f.has_taints == 0 && f.oos_taint == -1);
	check(f.has_annotations == 1 && f.our_annotation == 0);
	check(f.control_plane == 1 && f.etcd == 1 && f.etcd_voter == 1);
	check(f.removable == 0);
}

static void t_agent_unknown(void)
{
	struct node_facts f;

	check(facts_of("agent-2-unknown.json", &f) == 0);
	check(strcmp(f.name, "agent-2") == 0);
	check(strcmp(f.uid, "c3544aa1-58a8-9417-843d-45b303d3caf7") == 0);
	check(strcmp(f.rv, "51002") == 0);
	check(f.ready == NODE_READY_UNKNOWN);
	check(f.ready_since == 1796007331);
	check(f.has_taints == 1 && f.oos_taint == -1);
	check(f.has_annotations == 1 && f.our_annotation == 0);
	check(f.control_plane == 0 && f.etcd == 0 && f.etcd_voter == 0);
	check(f.removable == 1);
}

static void t_ours(void)
{
	struct node_facts f;

	check(facts_of("agent-3-tainted.json", &f) == 0);
	check(strcmp(f.name, "agent-3") == 0);
	check(strcmp(f.rv, "51377") == 0);
	check(f.ready == NODE_READY_UNKNOWN);
	check(f.ready_since == 1796006467);
	check(f.has_taints == 1 && f.oos_taint == 1);
	check(f.has_annotations == 1 && f.our_annotation == 1);
	check(f.tainted_at == 1796007480);   /* our annotation: 2026-11-30T02:58:00Z */
	check(f.control_plane == 0 && f.etcd == 0 && f.removable == 1);
}

static void t_no_ready(void)
{
	struct node_facts f;

	check(facts_of("agent-4-noready.json", &f) == 0);
	check(strcmp(f.name, "agent-4") == 0);
	check(f.ready == NODE_READY_NONE);
	check(f.ready_since == -1);
	check(f.has_taints == 1 && f.oos_taint == -1);
	check(f.removable == 0);
}

static void t_bare(void)
{
	struct node_facts f;

	check(facts_of("agent-5-bare.json", &f) == 0);
	check(strcmp(f.name, "agent-5") == 0);
	check(f.ready == NODE_READY_FALSE);
	check(f.ready_since == 1795997529); /* 01:12:09.123456+01:00 */
	check(f.has_taints == 0 && f.oos_taint == -1);
	check(f.has_annotations == 0 && f.our_annotation == 0);
	check(f.removable == 0); /* the label is there with "false" */
}

static void t_escaped(void)
{
	struct node_facts f;

	/* Every "/" written "\/", "metadata", "Ready", "Unknown", the prune label's key and value \u-escaped. */
	check(facts_of("etcd-6-escaped.json", &f) == 0);
	check(strcmp(f.name, "etcd-6\xc3\xa9") == 0);
	check(strcmp(f.uid, "530738c1-bdf1-b1e2-ae21-a0d525ae515d") == 0);
	check(f.ready == NODE_READY_UNKNOWN);
	check(f.ready_since == 1796009400); /* 03:00:00.5-00:30 */
	check(f.has_taints == 1 && f.oos_taint == 0);
	check(f.has_annotations == 1 && f.our_annotation == 1);
	check(f.tainted_at == -1);   /* our annotation says "x": no time */
	check(f.control_plane == 0 && f.etcd == 1 && f.etcd_voter == 1);
	check(f.removable == 1);
}

static void t_keys_configurable(void)
{
	struct node_keys other = { "node-role.kubernetes.io/runner", "k3s.io/node-args", NULL };
	struct node_keys none = { NULL, NULL, NULL };
	struct node_facts f;
	size_t n;
	const char *s = fixture("agent-2-unknown.json", &n);

	check(facts_k(s, n, &other, &f) == 0);
	check(f.removable == 1 && f.our_annotation == 1);
	s = fixture("agent-3-tainted.json", &n);
	check(facts_k(s, n, &none, &f) == 0);
	check(f.removable == 0 && f.our_annotation == 0 && f.oos_taint == 1);
}


#define META "\"metadata\":{\"name\":\"n\",\"uid\":\"u\",\"resourceVersion\":\"1\""

/* The opt-out label is read under its configured key, and only the value "true" opts out. */
static void t_exclude_label(void)
{
	struct node_keys runner = { PRUNE, ANN, "node-role.kubernetes.io/runner" };
	struct node_keys etcd = { PRUNE, ANN, NODE_LABEL_ETCD };
	struct node_facts f;
	size_t n;
	const char *s = fixture("agent-2-unknown.json", &n);

	check(facts_k(s, n, &keys, &f) == 0);
	check(f.excluded == 0);
	check(facts_k(s, n, &runner, &f) == 0);
	check(f.excluded == 1);
	s = fixture("etcd-6-escaped.json", &n);
	check(facts_k(s, n, &etcd, &f) == 0);
	check(f.excluded == 1 && f.etcd_voter == 1);
	/* the key twice: the API server keeps the last, a first-wins reader the first: unreadable */
	static const char twice[] = "{" META ",\"labels\":{\"" NODE_LABEL_ETCD "\":\"true\",\"" NODE_LABEL_ETCD "\":\"false\"}}}";
	struct node_keys only = { NULL, NULL, "example.com/x" };
	static const char twice2[] = "{" META ",\"labels\":{\"example.com/x\":\"false\",\"example.com/x\":\"true\"}}}";
	check(facts_k(twice, sizeof twice - 1, &etcd, &f) < 0);
	check(facts_k(twice2, sizeof twice2 - 1, &only, &f) < 0);
}

static void t_minimal(void)
{
	struct node_facts f;

	check(facts_str("{" META "}}", &f) == 0);
	check(strcmp(f.name, "n") == 0 && strcmp(f.uid, "u") == 0 && strcmp(f.rv, "1") == 0);
	check(f.ready == NODE_READY_NONE && f.ready_since == -1 && f.oos_taint == -1);
	check(f.has_taints == 0 && f.has_annotations == 0);
	/* null is absent, as Go's decoder has it */
	check(facts_str("{" META ",\"labels\":null,\"annotations\":null},\"spec\":{\"taints\":null},"
	    "\"status\":null}", &f) == 0);
	check(f.has_taints == 0 && f.has_annotations == 0);
	check(facts_str(" \n{" META ",\"annotations\":{}},\"spec\":{\"taints\":[]}}\r\n\t", &f) == 0);
	check(f.has_taints == 1 && f.has_annotations == 1);
}

/* Each of these must make the node unreadable. */
static void t_refused(void)
{
	static const char *const bad[] = {
		"{\"metadata\":{\"uid\":\"u\",\"resourceVersion\":\"1\"}}",
		"{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"1\"}}",
		"{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"}}",
		"{\"metadata\":{\"name\":\"\",\"uid\":\"u\",\"resourceVersion\":\"1\"}}",
		"{\"metadata\":{\"name\":7,\"uid\":\"u\",\"resourceVersion\":\"1\"}}",
		"{\"metadata\":{\"name\":\"n\\u0000x\",\"uid\":\"u\",\"resourceVersion\":\"1\"}}",
		"{\"metadata\":[]}",
		"{\"spec\":{}}",
		/* types */
		"{" META ",\"labels\":[]}}",
		"{" META ",\"labels\":\"a=b\"}}",
		"{" META ",\"labels\":{\"a\":1}}}",
		"{" META ",\"annotations\":\"x\"}}",
		"{" META ",\"annotations\":{\"a\":{}}}}",
		"{" META "},\"spec\":[]}",
		"{" META "},\"spec\":{\"taints\":{}}}",
		"{" META "},\"spec\":{\"taints\":[\"node.kubernetes.io/out-of-service\"]}}",
		"{" META "},\"spec\":{\"taints\":[{\"key\":1}]}}",
		"{" META "},\"status\":\"Ready\"}",
		"{" META "},\"status\":{\"conditions\":{\"Ready\":\"True\"}}}",
		"{" META "},\"status\":{\"conditions\":[1]}}",
		"{" META "},\"status\":{\"conditions\":[{\"type\":[\"Ready\"]}]}}",
		"{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":true}]}}",
		"{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":5}]}}",
		/* duplicates, also when spelled differently */
		"{" META ",\"name\":\"m\"}}",
		"{" META "},\"metadata\":{}}",
		"{" META ",\"labels\":{\"node-role.kubernetes.io/control-plane\":\"\",\"node-role.kubernetes.io\\/control-plane\":\"\"}}}",
		"{" META ",\"labels\":{\"" PRUNE "\":\"true\",\"" PRUNE "\":\"false\"}}}",
		"{" META ",\"annotations\":{\"" ANN "\":\"a\",\"" ANN "\":\"b\"}}}",
		"{" META "},\"spec\":{\"taints\":[{\"key\":\"a\",\"key\":\"b\"}]}}",
		"{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}",
		"{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"status\":\"Unknown\"}]}}",
		/* not JSON, or not one object */
		"",
		"[]",
		"\"metadata\"",
		"{" META "}",
		"{" META "}}}",
		"{" META "}} x",
		"{" META "}}{}",
		"{" META ",\"x\":tru}}",
		"{" META ",\"x\":01}}",
		"{" META ",\"x\":1.}}",
		"{" META " \"x\":1}}",
		"{" META ",\"x\"}}",
		"{" META ",\"x\":}}",
		"{" META ",\"labels\":{\"a\":\"b\" \"c\":\"d\"}}}",
		"{" META ",\"labels\":{\"a\":\"b\":\"c\"}}}",
		"{" META "},\"spec\":{\"taints\":[{\"key\":\"a\":1}]}}",
		"{" META "},\"status\":{\"conditions\":[{\"type\"}]}}",
		"{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":Unknown}]}}",
		"{" META "},\"spec\":{\"taints\":[]}\"status\":{}}",
		"{" META "},\"spec\":{\"taints\":[],}}",
		"{" META "},\"spec\":{\"x\":[1,{\"y\":\"\\u12\"}]}}",
		"{" META ",\"x\":\"\\u12g4\"}}",
		"{" META ",\"x\":[\"\\u12g4\"]}}",
		"{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\",\"x\":tru}]}}",
		"{" META ",\"labels\":{\"a\":\"b\"} \"x\":1}}",
		"{" META ",\"labels\":5}}",
		"{" META "},\"status\":{\"conditions\":\"Ready\"}}",
		"{" META ",\"x\":\"a\":1}}",
		"{" META ",\"x\":\"\\q\"}}",
		"{" META ",\"x\":[}}}",
	};
	struct node_facts f;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (!check(facts_str(bad[i], &f) < 0 && why[0] != '\0'))
			fprintf(stderr, "  accepted: %s\n", bad[i]);
	/* a NUL inside, and one after the object */
	static const char nul1[] = "{" META ",\"x\":\"a\0b\"}}";
	static const char nul2[] = "{" META "}}\0";
	check(facts_n(nul1, sizeof nul1 - 1, &f) == -2);
	check(facts_n(nul2, sizeof nul2 - 1, &f) == -2);
}

static void t_name_on_error(void)
{
	struct node_facts f;

	check(facts_str("{\"spec\":[]," META "}}", &f) == -1);
	check(strcmp(f.name, "n") == 0);
	check(facts_str("{\"metadata\":{\"labels\":[],\"name\":\"n\",\"uid\":\"u\",\"resourceVersion\":\"1\"}}", &f) == -1);
	check(strcmp(f.name, "n") == 0);
	check(facts_str("{\"metadata\":{\"name\":\"n\",\"name\":\"m\",\"uid\":\"u\",\"resourceVersion\":\"1\"}}", &f) == -1);
	check(f.name[0] == '\0');
}

static void t_field_limits(void)
{
	static char doc[1024], name[300];
	struct node_facts f;

	memset(name, 'a', sizeof name);
	name[253] = '\0';
	snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u\",\"resourceVersion\":\"1\"}}", name);
	check(facts_str(doc, &f) == 0 && strlen(f.name) == 253);
	name[253] = 'a';
	name[254] = '\0';
	snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u\",\"resourceVersion\":\"1\"}}", name);
	check(facts_str(doc, &f) == -1);
	name[63] = '\0';
	snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"n\",\"uid\":\"%s\",\"resourceVersion\":\"%s\"}}", name, name);
	check(facts_str(doc, &f) == 0 && strlen(f.uid) == 63 && strlen(f.rv) == 63);
	name[63] = 'a';
	name[64] = '\0';
	snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"n\",\"uid\":\"%s\",\"resourceVersion\":\"1\"}}", name);
	check(facts_str(doc, &f) == -1);
	snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\",\"resourceVersion\":\"%s\"}}", name);
	check(facts_str(doc, &f) == -1);
}

static void t_ready_values(void)
{
	static const struct {
		const char *status, *time;
		enum node_ready ready;
		int64_t since;
	} rows[] = {
		{ "True", "2026-11-30T03:02:35Z", NODE_READY_TRUE, 1796007755 },
		{ "False", "2026-11-30T03:02:35.999999999Z", NODE_READY_FALSE, 1796007755 },
		{ "Unknown", "2026-11-30t03:02:35z", NODE_READY_UNKNOWN, 1796007755 },
		{ "Unknown", "2026-11-30T08:32:35+05:30", NODE_READY_UNKNOWN, 1796007755 },
		{ "Unknown", "2026-11-29T23:02:35-04:00", NODE_READY_UNKNOWN, 1796007755 },
		{ "Unknown", "2024-02-29T00:00:00Z", NODE_READY_UNKNOWN, 1709164800 },
		{ "Unknown", "2000-03-01T00:00:00Z", NODE_READY_UNKNOWN, 951868800 },
		{ "Unknown", "1970-01-01T00:00:00Z", NODE_READY_UNKNOWN, 0 },
		{ "Unknown", "2100-12-31T23:59:59Z", NODE_READY_UNKNOWN, 4133980799 },
		{ "Unknown", "2025-02-29T00:00:00Z", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2100-02-29T00:00:00Z", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2026-11-31T00:00:00Z", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2026-13-01T00:00:00Z", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2026-11-30T24:00:00Z", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2026-11-30T03:02:35", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2026-11-30T03:02:35.Z", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2026-11-30T03:02:35Zx", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2026-11-30T03:02:35+0530", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "2026-11-30 03:02:35Z", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "1969-12-31T23:59:59Z", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "", NODE_READY_UNKNOWN, -1 },
		{ "Unknown", "yesterday", NODE_READY_UNKNOWN, -1 },
		{ "Maybe", "2026-11-30T03:02:35Z", NODE_READY_NONE, 1796007755 },
		{ "true", "2026-11-30T03:02:35Z", NODE_READY_NONE, 1796007755 },
	};
	static char doc[512];
	struct node_facts f;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		snprintf(doc, sizeof doc, "{" META "},\"status\":{\"conditions\":[{\"type\":\"DiskPressure\","
		    "\"status\":\"True\",\"lastTransitionTime\":\"2020-01-01T00:00:00Z\"},{\"status\":\"%s\","
		    "\"lastTransitionTime\":\"%s\",\"type\":\"Ready\"}]}}", rows[i].status, rows[i].time);
		int ok = check(facts_str(doc, &f) == 0);
		ok &= check(f.ready == rows[i].ready);
		ok &= check(f.ready_since == rows[i].since);
		if (!ok)
			fprintf(stderr, "  row %zu: %s %s -> %d %lld\n", i, rows[i].status, rows[i].time,
			    (int)f.ready, (long long)f.ready_since);
	}
	/* absent and null times */
	check(facts_str("{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}", &f) == 0);
	check(f.ready == NODE_READY_UNKNOWN && f.ready_since == -1);
	check(facts_str("{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\","
	    "\"lastTransitionTime\":null}]}}", &f) == 0);
	check(f.ready == NODE_READY_UNKNOWN && f.ready_since == -1);
	/* lastHeartbeatTime is not lastTransitionTime */
	check(facts_str("{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\","
	    "\"lastHeartbeatTime\":\"2026-11-30T03:02:35Z\"}]}}", &f) == 0);
	check(f.ready_since == -1);
}

static void t_labels_values(void)
{
	struct node_facts f;

	check(facts_str("{" META ",\"labels\":{\"node-role.kubernetes.io/etcd\":\"false\","
	    "\"" PRUNE "\":\"True\",\"node-role.kubernetes.io/control-plane\":\"\"}}}", &f) == 0);
	check(f.etcd == 1 && f.etcd_voter == 0 && f.removable == 0 && f.control_plane == 1);
	/* a key that only starts like ours is not ours */
	check(facts_str("{" META ",\"labels\":{\"node-role.kubernetes.io/etcd-x\":\"true\","
	    "\"" PRUNE "x\":\"true\",\"node-role.kubernetes.io/control-plan\":\"true\"},"
	    "\"annotations\":{\"" ANN "-x\":\"1\"}}}", &f) == 0);
	check(f.etcd == 0 && f.etcd_voter == 0 && f.removable == 0 && f.control_plane == 0);
	check(f.our_annotation == 0 && f.has_annotations == 1);
	/* the facts are read from metadata only, not from keys of the same name elsewhere */
	check(facts_str("{\"spec\":{\"labels\":{\"" PRUNE "\":\"true\"}}," META ",\"x\":{\"labels\":{\"" PRUNE "\":\"true\"}}}}", &f) == 0);
	check(f.removable == 0);
	/* an escaped surrogate pair compares as its UTF-8; a lone surrogate is not JSON */
	struct node_keys k2 = { "a\xf0\x9f\x9a\x80", "b\xc3\xa9", NULL };
	static const char pair[] = "{" META ",\"labels\":{\"a\\ud83d\\ude80\":\"true\"},\"annotations\":{\"b\\u00e9\":\"\"}}}";
	check(facts_k(pair, sizeof pair - 1, &k2, &f) == 0);
	check(f.removable == 1 && f.our_annotation == 1);
	check(facts_str("{" META ",\"annotations\":{\"b\\ud83d\":\"\"}}}", &f) == -2);
	check(strstr(why, "surrogate") != NULL);
}

static void t_taint_index(void)
{
	struct node_facts f;

	check(facts_str("{" META "},\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"},{\"effect\":\"NoExecute\"},"
	    "{\"value\":\"x\",\"key\":\"node.kubernetes.io\\/out-of-service\"},{\"key\":\"node.kubernetes.io/out-of-service\"}]}}", &f) == 0);
	check(f.has_taints == 1 && f.oos_taint == 2);
}

/* A node with N taints and 5000 labels: 1 + 3N tokens for jsmn; labels are never tokenized. */
static size_t taints_node(char *b, size_t cap, int n)
{
	size_t len = (size_t)snprintf(b, cap, "{" META ",\"labels\":{");
	for (int i = 0; i < 5000; i++)
		len += (size_t)snprintf(b + len, cap - len, "%s\"l%d\":\"v\"", i ? "," : "", i);
	len += (size_t)snprintf(b + len, cap - len, "}},\"spec\":{\"taints\":[");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(b + len, cap - len, "%s{\"key\":\"t\"}", i ? "," : "");
	len += (size_t)snprintf(b + len, cap - len, "]}}");
	return len;
}

/* The pool bounds each member jsmn reads (taints here), not the node. */
static void t_token_pool(void)
{
	static char b[300000];
	struct node_facts f;
	int fit = (JSON_TOKENS - 1) / 3;
	size_t n;

	n = taints_node(b, sizeof b, fit);
	check(facts_n(b, n, &f) == 0);
	check(strcmp(f.name, "n") == 0);
	n = taints_node(b, sizeof b, fit + 1);
	check(n < sizeof b - 1);
	check(facts_n(b, n, &f) == -1);
	check(strcmp(f.name, "n") == 0 && strncmp(why, "spec.taints has more than 16384 tokens", 38) == 0);
	/* the pool is reused: the next node reads normally */
	check(facts_of("agent-3-tainted.json", &f) == 0 && f.oos_taint == 1);
}

/* 4000 images (20000 tokens) and deep managedFields are passed over, not tokenized. */
static void t_big_node(void)
{
	static char b[400000];
	struct node_facts f;
	size_t len = (size_t)snprintf(b, sizeof b, "{\"status\":{\"images\":[");

	for (int i = 0; i < 4000; i++)
		len += (size_t)snprintf(b + len, sizeof b - len, "%s{\"names\":[\"r/i%d@sha256:0\",\"r/i%d:v1\"],\"sizeBytes\":%d}",
		    i ? "," : "", i, i, 1000 + i);
	len += (size_t)snprintf(b + len, sizeof b - len, "],\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\","
	    "\"lastTransitionTime\":\"2026-11-30T03:02:35Z\"}]}," META ",\"managedFields\":[{\"f\":"
	    "{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":[[[[[{}]]]]]}}}}}}]}}");
	check(len < sizeof b - 1);
	check(facts_n(b, len, &f) == 0);
	check(f.ready == NODE_READY_UNKNOWN && f.ready_since == 1796007755 && strcmp(f.name, "n") == 0);
	/* 64 deep counting the list, its items, the node and its metadata (4): 60 arrays more, not 61 */
	for (int depth = 60; depth <= 61; depth++) {
		static char d[512];
		size_t dl = (size_t)snprintf(d, sizeof d, "{" META ",\"x\":");
		for (int i = 0; i < depth; i++)
			d[dl++] = '[';
		for (int i = 0; i < depth; i++)
			d[dl++] = ']';
		dl += (size_t)snprintf(d + dl, sizeof d - dl, "}}");
		check(facts_n(d, dl, &f) == (depth == 60 ? 0 : -2));
	}
	/* one broken string deep inside the images still fails the node */
	char *q = strstr(b, "r/i3999:v1");
	q[3] = '\\';
	check(facts_n(b, len, &f) == -2 && strstr(why, "bad escape") != NULL);
}


static const char *const page1[] = {
	"server-1.json", "agent-2-unknown.json", "agent-3-tainted.json", "agent-4-noready.json", "agent-5-bare.json",
};
#define CONT1 "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NTE3MDIsInN0YXJ0IjoiYWdlbnQtNVx1MDAwMCJ9"

/* Whether item i of got is exactly fixture name. */
static int item_is(int i, const char *name)
{
	size_t n;
	const char *s = fixture(name, &n);
	return i < got.n && !got.null[i] && got.len[i] == n && memcmp(got.bytes + got.off[i], s, n) == 0;
}

static void t_list_whole(void)
{
	static struct json_list l;
	size_t n;
	const char *s = fixture("list-page1.json", &n);

	check(list(s, n, sizeof item_buf, 0, &l) == 0);
	check(got.n == 5 && l.nitems == 5);
	for (int i = 0; i < 5; i++)
		check(item_is(i, page1[i]));
	check(strcmp(l.cont, CONT1) == 0);
	/* and the items read as the files do */
	check(got.r[2] == 0 && strcmp(got.f[2].name, "agent-3") == 0 && got.f[2].oos_taint == 1 && got.f[2].our_annotation == 1);
	for (int i = 0; i < 5; i++) {
		struct node_facts f;
		check(facts_of(page1[i], &f) == 0 && memcmp(&f, &got.f[i], sizeof f) == 0);
	}
}

static void t_list_splits(void)
{
	static struct json_list l;
	size_t n;
	const char *s = fixture("list-page1.json", &n);

	for (unsigned seed = 1; seed < 40; seed++) {
		int ok = check(list(s, n, sizeof item_buf, seed, &l) == 0);
		ok &= check(got.n == 5);
		for (int i = 0; i < 5; i++)
			ok &= check(item_is(i, page1[i]));
		ok &= check(strcmp(l.cont, CONT1) == 0);
		if (!ok) {
			fprintf(stderr, "  split seed %u: %s\n", seed, l.err);
			break;
		}
	}
}

/* A list built from the files: metadata after the items, pretty whitespace, escapes in continue. */
static void t_list_built(void)
{
	static char b[120000];
	static struct json_list l;
	static const char *const names[] = { "etcd-6-escaped.json", "agent-5-bare.json", "server-1.json" };
	size_t len = 0, n;

	len += (size_t)snprintf(b + len, sizeof b - len, " \r\n{ \"apiVersion\" : \"v1\", \"items\" : [\n  ");
	for (int i = 0; i < 3; i++) {
		const char *s = fixture(names[i], &n);
		memcpy(b + len, s, n);
		len += n;
		len += (size_t)snprintf(b + len, sizeof b - len, i < 2 ? " ,\n  " : "\n ]\t,");
	}
	len += (size_t)snprintf(b + len, sizeof b - len, "\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"9\","
	    "\"remainingItemCount\":12,\"c\\u006fntinue\":\"a\\/b\\u0041\\\"\\\\\\ud83d\\ude80\",\"x\":[1,{\"continue\":1}]},"
	    "\"y\":[true,false,null,-1.5e3,{}]}\n");
	for (unsigned seed = 0; seed < 20; seed++) {
		int ok = check(list(b, len, sizeof item_buf, seed, &l) == 0);
		ok &= check(got.n == 3);
		for (int i = 0; i < 3; i++)
			ok &= check(item_is(i, names[i]));
		ok &= check(strcmp(l.cont, "a/bA\"\\\xf0\x9f\x9a\x80") == 0);
		if (!ok) {
			fprintf(stderr, "  seed %u: %s\n", seed, l.err);
			break;
		}
	}
}

static void t_list_empty(void)
{
	static struct json_list l;

	check(list_str("{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}", &l) == 0);
	check(got.n == 0 && l.nitems == 0 && l.cont[0] == '\0');
	check(list_str("{\"items\":[ ],\"metadata\":{\"continue\":\"\"}}", &l) == 0);
	check(got.n == 0 && l.cont[0] == '\0');
}

static void t_list_oversize(void)
{
	static struct json_list l;
	size_t n, big[3];
	const char *s = fixture("list-page1.json", &n);

	for (int i = 0; i < 3; i++)
		fixture(page1[i], &big[i]);
	/* one byte short of agent-2: server-1, agent-2, agent-3 are skipped; agent-4 and 5 fit */
	for (unsigned seed = 0; seed < 10; seed++) {
		int ok = check(list(s, n, big[1] - 1, seed, &l) == 0);
		ok &= check(got.n == 5 && l.nitems == 5);
		for (int i = 0; i < 3; i++)
			ok &= check(got.null[i] && got.len[i] == big[i]);
		ok &= check(item_is(3, page1[3]) && item_is(4, page1[4]));
		ok &= check(strcmp(l.cont, CONT1) == 0);
		if (!ok) {
			fprintf(stderr, "  seed %u: %s\n", seed, l.err);
			break;
		}
	}
	/* exactly the size fits */
	check(list(s, n, big[1], 7, &l) == 0);
	check(got.null[0] && !got.null[1] && item_is(1, page1[1]) && got.null[2]);
}

static void t_list_stop(void)
{
	static struct json_list l;
	size_t n;
	const char *s = fixture("list-page1.json", &n);

	reset();
	got.stop_at = 2;
	json_list_init(&l, item_buf, sizeof item_buf, cur_keys, collect_item, &got);
	check(json_list_feed(&l, s, n) == 7);
	check(got.n == 2);
	check(json_list_feed(&l, "", 0) == -1);
	check(json_list_end(&l) == -1);
}

static void t_list_malformed(void)
{
	static const char *const bad[] = {
		"",
		"   ",
		"hello",
		"[]",
		"null",
		"{\"items\":{}}",
		"{\"items\":null}",
		"{\"items\":\"[]\"}",
		"{\"items\":[1]}",
		"{\"items\":[[]]}",
		"{\"items\":[\"{}\"]}",
		"{\"items\":[{}{}]}",
		"{\"items\":[{},]}",
		"{\"items\":[,{}]}",
		"{\"items\":[{}] x}",
		"{\"items\":[{\"a\":[}]}",
		"{\"items\":[{\"a\":{]}}]}",
		"{\"items\":[{\"a\":\"b}]}",
		"{\"items\":[{]}",
		"{\"items\":[{}}",
		"{\"items\":[{}]",
		"{\"items\":[{}]}}",
		"{\"items\":[{}]} x",
		"{\"items\":[{}]}{}",
		"{\"items\":[]}]",
		"{\"items\":[],\"items\":[]}",
		"{\"items\":[{\"a\":\"\\x\"}]}",
		"{\"items\":[{\"a\":\"\\u12g4\"}]}",
		"{\"items\":[{\"a\":\"tab\there\"}]}",
		"{\"items\":[{\"a\":\"nl\nhere\"}]}",
		"{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":500}",
		"{\"metadata\":[],\"items\":[]}",
		"{\"metadata\":{\"continue\":5},\"items\":[]}",
		"{\"metadata\":{\"continue\":\"a\",\"continue\":\"b\"},\"items\":[]}",
		"{\"metadata\":{\"continue\":\"a\\u0000b\"},\"items\":[]}",
		"{\"metadata\":{\"continue\":\"a\\qb\"},\"items\":[]}",
		"{\"metadata\":{\"continue\":\"a\tb\"},\"items\":[]}",
		"{\"ite\nms\":[]}",
		"{\"metadata\":{},\"metadata\":{},\"items\":[]}",
		"{\"items\" []}",
		"{\"items\":[]:}",
		"{items:[]}",
		"{\"items\":[],}",
		"{,\"items\":[]}",
		"{\"kind\":NodeList,\"items\":[]}",
		"{\"kind\":\"x\" \"items\":[]}",
		"{\"x\":{\"a\":[}],\"items\":[]}",
	};
	static struct json_list l;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		for (unsigned seed = 0; seed < 2; seed++) {
			int r = list(bad[i], strlen(bad[i]), sizeof item_buf, seed, &l);
			if (!check(r == -1 && l.err[0] != '\0'))
				fprintf(stderr, "  accepted (seed %u): %s\n", seed, bad[i]);
		}
	}
}

static void t_list_truncated(void)
{
	static struct json_list l;
	size_t n;
	const char *s = fixture("list-page1.json", &n);

	/* Every cut of the page fails, and a cut inside the items says so. */
	for (size_t cut = 0; cut < n; cut += cut < 200 || n - cut < 200 ? 1 : 997) {
		int ok = check(list(s, cut, sizeof item_buf, 0, &l) == -1);
		if (cut > 200 && cut < n - 3)
			ok &= check(strcmp(l.err, "body ended inside the node list") == 0);
		if (!ok) {
			fprintf(stderr, "  cut at %zu: %s\n", cut, l.err);
			break;
		}
	}
	check(list(s, n, sizeof item_buf, 0, &l) == 0);
}

static void t_list_depth(void)
{
	static char b[1024];
	static struct json_list l;

	/* top object 1, items 2, the item 3: 61 arrays more reach 64, the limit */
	for (int extra = 61; extra <= 62; extra++) {
		size_t len = (size_t)snprintf(b, sizeof b, "{\"items\":[{\"a\":");
		for (int i = 0; i < extra; i++)
			b[len++] = '[';
		for (int i = 0; i < extra; i++)
			b[len++] = ']';
		len += (size_t)snprintf(b + len, sizeof b - len, "}]}");
		int r = list(b, len, sizeof item_buf, 1, &l);
		check(extra == 61 ? r == 0 && got.n == 1 : r == -1);
	}
	check(strstr(l.err, "deeper") != NULL);
}

static void t_list_continue_limit(void)
{
	static char b[JSON_CONTINUE_MAX + 100];
	static struct json_list l;

	for (int k = JSON_CONTINUE_MAX; k <= JSON_CONTINUE_MAX + 1; k++) {
		size_t len = (size_t)snprintf(b, sizeof b, "{\"metadata\":{\"continue\":\"");
		memset(b + len, 'Q', (size_t)k);
		len += (size_t)k;
		len += (size_t)snprintf(b + len, sizeof b - len, "\"},\"items\":[]}");
		int r = list(b, len, sizeof item_buf, 0, &l);
		check(k == JSON_CONTINUE_MAX ? r == 0 && strlen(l.cont) == JSON_CONTINUE_MAX : r == -1);
	}
	/* items and continue count only where they belong */
	check(list_str("{\"metadata\":{\"items\":[1]},\"continue\":\"x\",\"items\":[{}]}", &l) == 0);
	check(got.n == 1 && l.cont[0] == '\0');
	/* a key much longer than any looked for is just another key */
	check(list_str("{\"itemsitemsitemsitemsitems\":[1],\"items\":[{}]}", &l) == 0 && got.n == 1);
}

/* A node with more tokens than the pool, inside a list: that node fails, the next reads. */
static void t_list_token_heavy(void)
{
	static char b[300000], node[200000], buf[200000];
	static struct json_list l;
	size_t n3, nn = taints_node(node, sizeof node, JSON_TOKENS / 3 + 1);
	const char *a3 = fixture("agent-3-tainted.json", &n3);
	size_t len = (size_t)snprintf(b, sizeof b, "{\"items\":[");

	memcpy(b + len, node, nn);
	len += nn;
	b[len++] = ',';
	memcpy(b + len, a3, n3);
	len += n3;
	len += (size_t)snprintf(b + len, sizeof b - len, "]}");
	reset();
	check(nn < sizeof node - 1);
	json_list_init(&l, buf, sizeof buf, cur_keys, collect_item, &got);
	check(feed_split(&l, b, len, 3) == 0);
	check(got.n == 2 && got.len[0] == nn);
	if (!check(got.r[0] == -1 && strcmp(got.why[0], "spec.taints has more than 16384 tokens (byte 58975)") == 0))
		fprintf(stderr, "  %s\n", got.why[0]);
	check(got.r[1] == 0 && got.f[1].oos_taint == 1);
}

static void t_scan_offsets(void)
{
	static const struct { const char *ins; int ok; } sp[] = {
		{ "\\\"", 1 }, { "\\\\", 1 }, { "\\u00e9", 1 }, { "\\ud83d\\ude80", 1 }, { "\\/", 1 },
		{ "\x7f", 1 }, { "\xc3\xa9", 1 }, { "\xff", 0 }, { "\xc3", 0 }, { "\xed\xa0\x80", 0 }, { "\xf0\x9f\x9a\x80", 1 }, { " ", 1 }, { "]}", 1 }, { "{[", 1 },
		{ "\\x", 0 }, { "\\u00g0", 0 }, { "\x01", 0 }, { "\x1f", 0 }, { "\t", 0 }, { "\\", 0 },
	};
	static char str[128], node[1024], list[2048], buf[2048];
	static struct json_list l;
	struct node_facts f;

	for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++) {
		for (int len = 0; len <= 40; len++) {
			for (int at = 0; at <= len; at++) {
				int sl = snprintf(str, sizeof str, "%.*s%s%.*s", at, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNO",
				    sp[k].ins, len - at, "0123456789012345678901234567890123456789012");
				int ok = sp[k].ok;
				size_t nl = (size_t)snprintf(node, sizeof node, "{" META "},\"x\":[\"%s\",{\"k\":\"%s\"}]}", str, str);
				check(sl > 0 && nl < sizeof node - 1);
				check((facts_n(node, nl, &f) == 0) == ok);
				nl = (size_t)snprintf(node, sizeof node, "{" META ",\"labels\":{\"%s\":\"%s\"}}}", str, str);
				check((facts_n(node, nl, &f) == 0) == ok);
				/* the string last in the node: the scan ends with it */
				nl = (size_t)snprintf(node, sizeof node, "{" META "},\"x\":{\"k\":\"%s\"}}", str);
				check((facts_n(node, nl, &f) == 0) == ok);
				size_t ll = (size_t)snprintf(list, sizeof list, "{\"x\":\"%s\",\"items\":[%s,%s]}", str, node, node);
				for (unsigned seed = 0; seed < 3; seed++) {
					reset();
					json_list_init(&l, buf, sizeof buf, cur_keys, collect_item, &got);
					int r = feed_split(&l, list, ll, seed);
					if (ok) {
						check(r == 0 && json_list_end(&l) == 0);
						check(got.n == 2 && got.len[0] == nl && memcmp(got.bytes, node, nl) == 0);
					} else {
						check(r == -1);
					}
				}
			}
		}
	}
}

/* Keys are compared after unescaping, wherever the first escape falls; lengths first. */
static void t_key_compare(void)
{
	struct node_facts f;

	check(facts_str("{" META ",\"labels\":{\"node-role.kubernetes.io/etc\\u0064\":\"tru\\u0065\"}}}", &f) == 0);
	check(f.etcd == 1 && f.etcd_voter == 1);
	check(facts_str("{" META ",\"labels\":{\"\\u006eode-role.kubernetes.io\\/etcd\":\"true\"}}}", &f) == 0);
	check(f.etcd == 1 && f.etcd_voter == 1);
	/* longer or shorter than the name once unescaped */
	check(facts_str("{" META ",\"labels\":{\"node-role.kubernetes.io/etcd\\u0064\":\"true\","
	    "\"node-role.kubernetes.io/et\\u0063\":\"true\",\"node-role.kubernetes.io/etcd\\n\":\"true\"}}}", &f) == 0);
	check(f.etcd == 0 && f.etcd_voter == 0);
	/* an escaped key equal to ours twice is a duplicate */
	check(facts_str("{" META ",\"labels\":{\"node-role.kubernetes.io/etcd\":\"true\",\"node-role.kubernetes.io\\/etcd\":\"true\"}}}", &f) == -1);
	check(facts_str("{\"metadat\\u0061\":{\"name\":\"n\",\"u\\u0069d\":\"u\",\"resourceVersion\":\"1\"},"
	    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Tru\\u0065\"}]}}", &f) == 0);
	check(f.ready == NODE_READY_TRUE && strcmp(f.uid, "u") == 0);
	/* a raw control character in a key is refused, even before an escape */
	check(facts_str("{" META ",\"labels\":{\"a\x01\\u0062\":\"true\"}}}", &f) == -2);
	/* labels and annotations are read with the full grammar: a missing comma is refused */
	check(facts_str("{" META ",\"labels\":{\"a\":\"b\" \"c\":\"d\"}}}", &f) == -2);
	check(facts_str("{" META ",\"annotations\":{\"a\":\"b\",}}}", &f) == -2);
	check(facts_str("{" META ",\"annotations\":{\"a\":\"b\"} }}", &f) == 0);
}

static void t_status(void)
{
	static const char conflict[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
	    "\"message\":\"Operation cannot be fulfilled on nodes \\\"agent-2\\\": the object has been modified;\\n"
	    "please apply\\tyour changes\\u0007 to the latest version\",\"reason\":\"Conflict\","
	    "\"details\":{\"name\":\"agent-2\",\"kind\":\"nodes\",\"causes\":[{\"reason\":\"x\",\"message\":\"y\"}]},\"code\":409}";
	char reason[64], msg[256];

	check(json_status(conflict, sizeof conflict - 1, reason, sizeof reason, msg, sizeof msg) == 0);
	check(strcmp(reason, "Conflict") == 0);
	check(strcmp(msg, "Operation cannot be fulfilled on nodes \"agent-2\": the object has been modified;\n"
	    "please apply\tyour changes\a to the latest version") == 0);
	/* truncated to the buffer, never in the middle of a character */
	static const char cafe[] = "{\"reason\":\"Invalid\",\"message\":\"caf\xc3\xa9!\"}";
	check(json_status(cafe, sizeof cafe - 1, reason, 4, msg, 5) == 0);
	check(strcmp(reason, "Inv") == 0 && strcmp(msg, "caf") == 0);
	check(json_status(cafe, sizeof cafe - 1, reason, 8, msg, 6) == 0);
	check(strcmp(reason, "Invalid") == 0 && strcmp(msg, "caf\xc3\xa9") == 0);
	static const char esc[] = "{\"message\":\"caf\\u00e9 x\"}";
	check(json_status(esc, sizeof esc - 1, reason, sizeof reason, msg, 5) == 0);
	check(reason[0] == '\0' && strcmp(msg, "caf") == 0);
	/* escaped control characters are decoded as sent (the caller cleans the text: kube_clean);
	 * raw ones are not JSON; a \u0000 ends the text */
	static const char ctl[] = "{\"reason\":\"A\\rB\",\"message\":\"line\\nfeed\\u001b[31m\"}";
	check(json_status(ctl, sizeof ctl - 1, reason, sizeof reason, msg, sizeof msg) == 0);
	check(strcmp(reason, "A\rB") == 0 && strcmp(msg, "line\nfeed\x1b[31m") == 0);
	static const char nul_esc[] = "{\"reason\":\"A\\u0000B\",\"message\":\"x\"}";
	check(json_status(nul_esc, sizeof nul_esc - 1, reason, sizeof reason, msg, sizeof msg) == 0);
	check(strcmp(reason, "A") == 0 && strcmp(msg, "x") == 0);
	static const char raw[] = "{\"reason\":\"A\rB\",\"message\":\"x\"}";
	check(json_status(raw, sizeof raw - 1, reason, sizeof reason, msg, sizeof msg) == -1);
	/* the first of a key written twice; a missing comma is not JSON */
	static const char twice[] = "{\"reason\":\"A\",\"reason\":\"B\"}";
	check(json_status(twice, sizeof twice - 1, reason, sizeof reason, msg, sizeof msg) == 0 && strcmp(reason, "A") == 0);
	static const char comma[] = "{\"reason\":\"A\" \"message\":\"B\"}";
	check(json_status(comma, sizeof comma - 1, reason, sizeof reason, msg, sizeof msg) == -1);
	/* not JSON: a 429's plain text */
	strcpy(reason, "x");
	strcpy(msg, "x");
	static const char text[] = "Too many requests, please try again later.\n";
	check(json_status(text, sizeof text - 1, reason, sizeof reason, msg, sizeof msg) == -1);
	check(reason[0] == '\0' && msg[0] == '\0');
	check(json_status("[1]", 3, reason, sizeof reason, msg, sizeof msg) == -1);
	static const char trailing[] = "{\"reason\":\"Conflict\"} x";
	check(json_status(trailing, sizeof trailing - 1, reason, sizeof reason, msg, sizeof msg) == -1);
	static const char nul[] = "{\"reason\":\"Conflict\"}\0x";
	check(json_status(nul, sizeof nul - 1, reason, sizeof reason, msg, sizeof msg) == -1);
	static const char types[] = "{\"reason\":5,\"message\":null}";
	check(json_status(types, sizeof types - 1, reason, sizeof reason, msg, sizeof msg) == 0);
	check(reason[0] == '\0' && msg[0] == '\0');
}

/* What a SelfSubjectAccessReview's answer says, and every way it can fail to say it. */
static void t_access_review(void)
{
	static const char yes[] = "{\"kind\":\"SelfSubjectAccessReview\",\"apiVersion\":\"authorization.k8s.io/v1\","
	    "\"metadata\":{\"creationTimestamp\":null},\"spec\":{\"resourceAttributes\":{\"verb\":\"patch\",\"resource\":\"nodes\"}},"
	    "\"status\":{\"allowed\":true,\"reason\":\"RBAC: allowed by ClusterRoleBinding \\\"noderecover\\\"\"}}";
	static const char no[] = "{\"kind\":\"SelfSubjectAccessReview\",\"status\":{\"allowed\":false}}";
	static const char denied[] = "{\"status\":{\"allowed\":false,\"denied\":true,\"reason\":\"no\\nway\"}}";
	static const char nulled[] = "{\"status\":{\"reason\":null,\"allowed\":false,\"denied\":null}}";
	char reason[64];
	int allowed = -7;

	check(json_access_review(yes, sizeof yes - 1, &allowed, reason, sizeof reason, why, sizeof why) == 0);
	check(allowed == 1 && strcmp(reason, "RBAC: allowed by ClusterRoleBinding \"noderecover\"") == 0);
	check(json_access_review(no, sizeof no - 1, &allowed, reason, sizeof reason, why, sizeof why) == 0);
	check(allowed == 0 && reason[0] == '\0');
	check(json_access_review(denied, sizeof denied - 1, &allowed, reason, sizeof reason, why, sizeof why) == 0);
	check(allowed == 0 && strcmp(reason, "no\nway") == 0);
	check(json_access_review(nulled, sizeof nulled - 1, &allowed, reason, sizeof reason, why, sizeof why) == 0);
	check(allowed == 0);

	/* answers that cannot be trusted: -1, allowed 0, one line saying why, never a crash */
	static const struct {
		const char *body, *why;
	} bad[] = {
		{ "", "not JSON" },
		{ "Forbidden\n", "not JSON" },
		{ "<html>allowed: true</html>", "not JSON" },
		{ "[{\"status\":{\"allowed\":true}}]", "an array, not an object" },
		{ "\"allowed\"", "a string, not an object" },
		{ "{\"status\":{\"allowed\":true}", "not JSON" },                     /* cut short */
		{ "{\"status\":{\"allowed\":true}} {}", "not JSON" },                 /* two values */
		{ "{\"status\":{\"allowed\":true,}}", "not JSON" },
		{ "{\"status\":{\"allowed\":tru}}", "not JSON" },
		{ "{}", "no status.allowed" },
		{ "{\"status\":null}", "no status.allowed" },
		{ "{\"status\":{}}", "no status.allowed" },
		{ "{\"status\":{\"allowed\":null}}", "no status.allowed" },
		{ "{\"status\":{\"Allowed\":true}}", "no status.allowed" },
		{ "{\"spec\":{\"allowed\":true}}", "no status.allowed" },
		{ "{\"status\":[true]}", "status is an array, not an object" },
		{ "{\"status\":true}", "status is a boolean, not an object" },
		{ "{\"status\":{\"allowed\":\"true\"}}", "status.allowed is a string, not a boolean" },
		{ "{\"status\":{\"allowed\":1}}", "status.allowed is a number, not a boolean" },
		{ "{\"status\":{\"allowed\":{}}}", "status.allowed is an object, not a boolean" },
		{ "{\"status\":{\"allowed\":false,\"denied\":\"yes\"}}", "status.denied is a string" },
		{ "{\"status\":{\"allowed\":true,\"denied\":true}}", "both allowed and denied" },
		{ "{\"status\":{\"allowed\":false,\"allowed\":true}}", "status.allowed appears twice" },
		{ "{\"status\":{\"allowed\":true},\"status\":{\"allowed\":false}}", "status appears twice" },
		{ "{\"status\":{\"allowed\":true,\"\\u0061llowed\":false}}", "status.allowed appears twice" },
		{ "{\"status\":{\"allowed\":true,\"x\":\"\xff\"}}", "not JSON" },     /* not UTF-8 */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		allowed = -7;
		strcpy(reason, "x");
		why[0] = '\0';
		int rc = json_access_review(bad[i].body, strlen(bad[i].body), &allowed, reason, sizeof reason, why, sizeof why);
		if (!check(rc == -1 && allowed == 0 && strstr(why, bad[i].why) && !strchr(why, '\n')))
			fprintf(stderr, "  case %zu: rc %d allowed %d why '%s'\n", i, rc, allowed, why);
	}
	/* a NUL inside is not JSON; deep nesting is refused by the scanner, not the stack */
	static const char nul[] = "{\"status\":{\"allowed\":true}}\0";
	check(json_access_review(nul, sizeof nul - 1, &allowed, reason, sizeof reason, why, sizeof why) == -1 && !allowed);
	char deep[400];
	size_t n = 0;
	n += (size_t)sprintf(deep, "{\"status\":{\"allowed\":true,\"x\":");
	for (int i = 0; i < 100; i++)
		deep[n++] = '[';
	for (int i = 0; i < 100; i++)
		deep[n++] = ']';
	deep[n++] = '}';
	deep[n++] = '}';
	check(json_access_review(deep, n, &allowed, reason, sizeof reason, why, sizeof why) == -1 && !allowed);
	check(strstr(why, "not JSON") != NULL);
	/* a reason is cut to its buffer; the verdict is read all the same */
	check(json_access_review(yes, sizeof yes - 1, &allowed, reason, 5, why, sizeof why) == 0);
	check(allowed == 1 && strcmp(reason, "RBAC") == 0);
}

/* Who the API server says we are. */
static void t_self_user(void)
{
	static const char sa[] = "{\"kind\":\"SelfSubjectReview\",\"apiVersion\":\"authentication.k8s.io/v1\","
	    "\"metadata\":{\"creationTimestamp\":null},\"status\":{\"userInfo\":{\"username\":"
	    "\"system:serviceaccount:noderecover:noderecover\",\"uid\":\"5b2c\",\"groups\":[\"system:serviceaccounts\","
	    "\"system:authenticated\"],\"extra\":{\"authentication.kubernetes.io/pod-name\":[\"p\"]}}}}";
	static const char ctl[] = "{\"status\":{\"userInfo\":{\"username\":\"eve\\n2026-01-01T00:00:00Z Tainted x\"}}}";
	char user[64];

	check(json_self_user(sa, sizeof sa - 1, user, sizeof user, why, sizeof why) == 0);
	check(strcmp(user, "system:serviceaccount:noderecover:noderecover") == 0);
	/* decoded as sent: access.c cleans it (kube_clean) before a log line holds it */
	check(json_self_user(ctl, sizeof ctl - 1, user, sizeof user, why, sizeof why) == 0);
	check(strcmp(user, "eve\n2026-01-01T00:00:00Z Tainted x") == 0);
	/* cut to fit, at a character boundary */
	static const char cafe[] = "{\"status\":{\"userInfo\":{\"username\":\"caf\xc3\xa9\"}}}";
	check(json_self_user(cafe, sizeof cafe - 1, user, 5, why, sizeof why) == 0 && strcmp(user, "caf") == 0);

	static const struct {
		const char *body, *why;
	} bad[] = {
		{ "", "not JSON" },
		{ "system:admin", "not JSON" },
		{ "{\"status\":{\"userInfo\":{\"username\":\"a\"}}", "not JSON" },
		{ "{}", "no status.userInfo.username" },
		{ "{\"status\":{\"userInfo\":{}}}", "no status.userInfo.username" },
		{ "{\"status\":{\"userInfo\":null}}", "no status.userInfo.username" },
		{ "{\"status\":{\"userInfo\":{\"username\":null}}}", "no status.userInfo.username" },
		{ "{\"status\":{\"userInfo\":[\"a\"]}}", "status.userInfo is an array, not an object" },
		{ "{\"status\":\"x\"}", "status is a string, not an object" },
		{ "{\"status\":{\"userInfo\":{\"username\":42}}}", "status.userInfo.username is a number, not a string" },
		{ "{\"status\":{\"userInfo\":{\"username\":\"\"}}}", "empty" },
		{ "{\"status\":{\"userInfo\":{\"username\":\"a\",\"username\":\"b\"}}}", "username appears twice" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		strcpy(user, "x");
		why[0] = '\0';
		int rc = json_self_user(bad[i].body, strlen(bad[i].body), user, sizeof user, why, sizeof why);
		if (!check(rc == -1 && user[0] == '\0' && strstr(why, bad[i].why)))
			fprintf(stderr, "  case %zu: rc %d user '%s' why '%s'\n", i, rc, user, why);
	}
}

static int written(const char *s, int pointer, char *out, size_t cap)
{
	struct json_buf b;

	json_buf_init(&b, out, cap);
	if (pointer)
		json_ptr(&b, s);
	else
		json_str(&b, s);
	return json_buf_end(&b);
}

static void t_buf_escape(void)
{
	char out[256];

	check(written("plain", 0, out, sizeof out) == 7 && strcmp(out, "\"plain\"") == 0);
	check(written("a\"b\\c/d\n\x01\x1f\x7f", 0, out, sizeof out) > 0);
	check(strcmp(out, "\"a\\\"b\\\\c/d\\u000a\\u0001\\u001f\x7f\"") == 0);
	check(written("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80", 0, out, sizeof out) > 0);
	check(strcmp(out, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\"") == 0);
	check(written("", 0, out, sizeof out) == 2 && strcmp(out, "\"\"") == 0);
	/* not UTF-8: a lone continuation byte, a cut sequence, an overlong, a surrogate */
	check(written("a\x80", 0, out, sizeof out) == -1);
	check(written("a\xc3", 0, out, sizeof out) == -1);
	check(written("\xc0\xaf", 0, out, sizeof out) == -1);
	check(written("\xed\xa0\x80", 0, out, sizeof out) == -1);
	check(written("\xf4\x90\x80\x80", 0, out, sizeof out) == -1);
}

static void t_buf_pointer(void)
{
	char out[256];

	check(written(ANN, 1, out, sizeof out) > 0);
	check(strcmp(out, "github-runner.exadev~1out-of-service-applied-at") == 0);
	check(written("a~b", 1, out, sizeof out) == 4 && strcmp(out, "a~0b") == 0);
	check(written("~/", 1, out, sizeof out) > 0 && strcmp(out, "~0~1") == 0);
	check(written("a/\"~\\", 1, out, sizeof out) > 0 && strcmp(out, "a~1\\\"~0\\\\") == 0);

	struct json_buf b;
	json_buf_init(&b, out, sizeof out);
	json_raw(&b, "{\"op\":\"add\",\"path\":\"/metadata/annotations/");
	json_ptr(&b, ANN);
	json_raw(&b, "\",\"value\":");
	json_str(&b, "2026-11-30T03:02:35Z");
	json_raw(&b, "}");
	check(json_buf_end(&b) > 0);
	check(strcmp(out, "{\"op\":\"add\",\"path\":\"/metadata/annotations/github-runner.exadev~1out-of-service-applied-at\","
	    "\"value\":\"2026-11-30T03:02:35Z\"}") == 0);
}

static void t_buf_overflow(void)
{
	char out[16];
	struct json_buf b;

	/* "abcdef" quoted is 8 bytes and the NUL a ninth */
	memset(out, 'X', sizeof out);
	check(written("abcdef", 0, out, 9) == 8 && strcmp(out, "\"abcdef\"") == 0);
	memset(out, 'X', sizeof out);
	check(written("abcdef", 0, out, 8) == -1);
	check(out[8] == 'X' && memchr(out, '\0', 8) != NULL);
	/* an escape that does not fit whole is not written in part */
	check(written("a\"", 0, out, 4) == -1);
	check(strcmp(out, "\"a") == 0);
	/* sticky: something small after the overflow does not clear it */
	json_buf_init(&b, out, 4);
	json_raw(&b, "abcd");
	json_raw(&b, "x");
	check(json_buf_end(&b) == -1);
	check(strcmp(out, "") == 0);
	json_buf_init(&b, out, 0);
	json_raw(&b, "");
	check(json_buf_end(&b) == -1);
}

/* Strict JSON everywhere in the body: each row fails the whole list, with the reason named. */
static void t_strict(void)
{
	static const struct {
		const char *node, *reason;
	} rows[] = {
		{ "{" META " \"x\":1}}", "expected ',' or '}'" },                       /* missing comma */
		{ "{" META ",\"labels\":{\"a\":\"b\" \"c\":\"d\"}}}", "expected ',' or '}'" },
		{ "{" META "},\"status\":{\"images\":[\"a\" \"b\"]}}", "expected ',' or ']'" },
		{ "{" META ",}}", "expected a key" },                                  /* trailing comma */
		{ "{" META "},\"spec\":{\"taints\":[{\"key\":\"a\"},]}}", "expected a value" },
		{ "{" META "},\"managedFields\":[{\"a\":[1,2,]}]}", "expected a value" },
		{ "{" META ",\"x\":\"abc}}", "ended inside" },                           /* unterminated */
		{ "{" META ",\"x\":\"\\q\"}}", "bad escape" },
		{ "{" META ",\"x\":\"\\u12g4\"}}", "bad \\u escape" },
		{ "{" META ",\"x\":\"\\ud83d\"}}", "surrogate" },                        /* lone surrogates */
		{ "{" META ",\"x\":\"\\ud83dx\"}}", "surrogate" },
		{ "{" META ",\"x\":\"\\ude80\"}}", "surrogate" },
		{ "{" META ",\"x\":\"\\ud83d\\u0041\"}}", "surrogate" },
		{ "{" META ",\"x\":\"a\tb\"}}", "control character" },
		{ "{" META ",\"x\":\"a\x7f\xc3(\"}}", "UTF-8" },                      /* invalid UTF-8 */
		{ "{" META ",\"x\":\"\xc0\xaf\"}}", "UTF-8" },                           /* overlong */
		{ "{" META ",\"x\":\"\xed\xa0\x80\"}}", "UTF-8" },                       /* a surrogate as UTF-8 */
		{ "{" META ",\"x\":\"\xf4\x90\x80\x80\"}}", "UTF-8" },                   /* past U+10FFFF */
		{ "{" META ",\"x\":\"\x80\"}}", "UTF-8" },
		{ "{" META ",\"x\":tru}}", "bare word" },
		{ "{" META ",\"x\":nulll}}", "expected ',' or '}'" },
		{ "{" META ",\"x\":True}}", "expected a value" },
		{ "{" META ",\"x\":Unknown}}", "expected a value" },
		{ "{" META ",\"x\":01}}", "leading zero" },
		{ "{" META ",\"x\":-01}}", "leading zero" },
		{ "{" META ",\"x\":1.}}", "digits after '.'" },
		{ "{" META ",\"x\":.5}}", "expected a value" },
		{ "{" META ",\"x\":-}}", "without digits" },
		{ "{" META ",\"x\":1e}}", "exponent" },
		{ "{" META ",\"x\":1e+}}", "exponent" },
		{ "{" META ",\"x\":+1}}", "expected a value" },
		{ "{" META ",\"x\":0x10}}", "expected ',' or '}'" },
		{ "{" META ",\"x\"}}", "expected ':'" },
		{ "{" META ",\"x\":}}", "expected a value" },
		{ "{" META ",\"x\":[}}}", "expected a value" },
		{ "{" META ",\"x\":{]}}", "expected a key" },
		{ "{" META ",x:1}}", "expected a key" },
		{ "{" META ",'x':1}}", "expected a key" },
		{ "{" META "}}}", "'}' closes an array" },
		{ "{" META ",\"x\":[1}}}", "'}' closes an array" },
		{ "{" META ",\"x\":{\"a\":1]}}", "']' closes an object" },
	};
	struct node_facts f;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int r = facts_str(rows[i].node, &f);
		if (!check(r == -2 && strstr(why, rows[i].reason) != NULL))
			fprintf(stderr, "  row %zu: %d %s\n", i, r, why);
	}
	/* the same in the envelope, around the items */
	static const char *const env[] = {
		"{\"kind\":\"NodeList\" \"items\":[]}", "{\"items\":[],}", "{\"items\":[],\"x\":\"\\ud800\"}",
		"{\"items\":[],\"x\":01}", "{\"items\":[],\"x\":[1,]}", "{\"items\":[],\"x\":\"\xff\"}",
		"{\"items\":[],\"metadata\":{\"continue\":\"a\",}}", "{\"items\":[],\"x\":nul}",
	};
	static struct json_list l;
	for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
		for (unsigned seed = 0; seed < 2; seed++)
			if (!check(list_str(env[i], &l) == -1 && strncmp(l.err, "malformed node list at byte ", 28) == 0))
				fprintf(stderr, "  accepted: %s\n", env[i]);
	/* the reason says where: the byte of the body, and of the item */
	check(list_str("{\"items\":[{\"a\":1 \"b\":2}]}", &l) == -1);
	check(strcmp(l.err, "malformed node list at byte 17 (byte 7 of item 1): expected ',' or '}' after a member") == 0);
	/*
	 * Invalid UTF-8 is reported at the first byte of the bad character, wherever the pieces cut
	 * it: whole, a byte at a time, and cut inside the character by random pieces.
	 */
	static const struct {
		const char *body, *err;
	} utf8[] = {
		{ "{\"items\":[{\"a\":\"x\xe2\x82(\"}]}", "malformed node list at byte 17 (byte 7 of item 1): invalid UTF-8 in a string" },
		{ "{\"items\":[{\"a\":\"x\xe0\x80\x80\"}]}", "malformed node list at byte 17 (byte 7 of item 1): invalid UTF-8 in a string" },
		{ "{\"items\":[],\"x\":\"ab\xf0\x9f\x9a\"}", "malformed node list at byte 19: invalid UTF-8 in a string" },
		{ "{\"items\":[],\"x\":\"\xff\x80\x80\x80\x80\"}", "malformed node list at byte 17: invalid UTF-8 in a string" },
	};
	for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++)
		for (unsigned seed = 0; seed < 8; seed++)
			if (!check(list(utf8[i].body, strlen(utf8[i].body), sizeof item_buf, seed, &l) == -1 &&
			    strcmp(l.err, utf8[i].err) == 0))
				fprintf(stderr, "  row %zu seed %u: %s\n", i, seed, l.err);
}

/* Why a node is unreadable: which member, what was wrong, at what byte of the item. */
static void t_reasons(void)
{
	static const struct {
		const char *node, *why;
	} rows[] = {
		{ "{\"metadata\":{\"uid\":\"u\",\"resourceVersion\":\"1\"}}", "metadata.name is missing" },
		{ "{\"metadata\":{\"name\":7}}", "metadata.name is a number, not a string (byte 20)" },
		{ "{\"metadata\":{\"name\":\"\"}}", "metadata.name is empty (byte 20)" },
		{ "{\"metadata\":[]}", "metadata is an array, not an object (byte 12)" },
		{ "{\"metadata\":{\"name\":\"n\",\"name\":\"m\"}}", "metadata.name appears twice" },
		{ "{" META "},\"metadata\":{}}", "metadata appears twice" },
		{ "{" META "},\"spec\":{\"taints\":[{\"key\":1}]}}", "spec.taints[0].key is a number, not a string (byte 82)" },
		{ "{" META "},\"spec\":{\"taints\":{}}}", "spec.taints is an object, not an array (byte 74)" },
		{ "{" META "},\"spec\":{\"taints\":[{},\"x\"]}}", "spec.taints[1] is a string, not an object (byte 79)" },
		{ "{" META "},\"status\":{\"conditions\":[{},{},{\"type\":\"Ready\",\"status\":8123}]}}",
		    "status.conditions[2].status is a number, not a string (byte 112)" },
		{ "{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}",
		    "status.conditions[1] is a second Ready condition, after [0] (byte 114)" },
		{ "{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\"}]}}", "status.conditions[0].status is missing (byte 81)" },
		{ "{" META "},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"type\":\"Ready\"}]}}",
		    "status.conditions[0].type appears twice (byte 98)" },
		{ "{" META ",\"labels\":{\"a\":true}}}", "metadata.labels holds a boolean, not a string (byte 70)" },
		{ "{" META ",\"annotations\":{\"a\":\"\",\"b\":{}}}}", "metadata.annotations holds an object, not a string (byte 82)" },
		{ "{" META ",\"labels\":{\"" PRUNE "\":\"x\",\"" PRUNE "\":\"y\"}}}",
		    "metadata.labels." PRUNE " appears twice" },
		{ "{" META ",\"annotations\":{\"" ANN "\":\"x\",\"" ANN "\":\"y\"}}}",
		    "metadata.annotations." ANN " appears twice" },
		{ "{" META ",\"annotations\":\"x\"}}", "metadata.annotations is a string, not an object (byte 70)" },
		{ "{" META "},\"status\":5}", "status is a number, not an object (byte 66)" },
	};
	struct node_facts f;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int r = facts_str(rows[i].node, &f);
		if (!check(r == -1 && strcmp(why, rows[i].why) == 0))
			fprintf(stderr, "  row %zu: %d '%s'\n   want '%s'\n", i, r, why, rows[i].why);
	}
	/* an item larger than the buffer: its size */
	static struct json_list l;
	size_t n;
	const char *s = fixture("list-page1.json", &n), *a;
	fixture("server-1.json", &n);
	a = fixture("list-page1.json", &n);
	(void)s;
	check(list(a, n, 100, 0, &l) == 0 && got.n == 5 && got.null[0] && got.r[0] == -1);
	check(strstr(got.why[0], "bytes, more than the buffer holds") != NULL);
	char want[80];
	size_t big;
	fixture("server-1.json", &big);
	snprintf(want, sizeof want, "its object is %zu bytes, more than the buffer holds", big);
	check(strcmp(got.why[0], want) == 0);
}

/* json_check: one value, by the same grammar. */
static void t_check(void)
{
	static const char *const good[] = { "{}", " [1, -2.5e+3, \"\\u00e9\", true, false, null] ", "0", "\"x\"",
		"{\"a\":{\"b\":[{}]}}", "-0.0E-0" };
	static const char *const bad[] = { "", " ", "{", "{}}", "{} {}", "[1,]", "01", "\"\\ud800\"", "[1 2]", "nul",
		"{\"a\":1,}", "1.", "\"\xff\"" };
	char w[160];
	size_t at;

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		if (!check(json_check(good[i], strlen(good[i]), &at, w, sizeof w) == 0))
			fprintf(stderr, "  refused %s: %s\n", good[i], w);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		w[0] = '\0';
		if (!check(json_check(bad[i], strlen(bad[i]), &at, w, sizeof w) == -1 && w[0] && at <= strlen(bad[i])))
			fprintf(stderr, "  accepted %s\n", bad[i]);
	}
	check(json_check("[1,]", 4, &at, w, sizeof w) == -1 && at == 3 && strcmp(w, "expected a value") == 0);
	check(json_check("[1,", 3, &at, w, sizeof w) == -1 && at == 3 && strcmp(w, "the text ended early") == 0);
}


/* Two threads reading at once (the election's thread its Lease, the loop a Status, a node...):
 * each must read its own answer. With one pool shared by every thread, each overwrote the other's
 * tokens mid-read: this failed within a few hundred rounds. */
struct reader {
	const char *body, *holder;
	int wrong;
};

static void *read_leases(void *arg)
{
	struct reader *r = arg;
	struct json_lease l;
	char w[160];

	for (int i = 0; i < 20000; i++)
		if (json_lease(r->body, strlen(r->body), &l, w, sizeof w) < 0 || strcmp(l.holder, r->holder) != 0)
			r->wrong++;
	return NULL;
}

static void t_threads(void)
{
	struct reader a = { "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"a\"}}", "a", 0 };
	struct reader b = { "{\"metadata\":{\"resourceVersion\":\"2\",\"labels\":{\"x\":\"y\",\"z\":\"w\"}},"
	    "\"spec\":{\"renewTime\":\"2026-12-01T16:28:00.000001Z\",\"holderIdentity\":\"the-other\"}}", "the-other", 0 };
	pthread_t ta, tb;

	if (!check(pthread_create(&ta, NULL, read_leases, &a) == 0 && pthread_create(&tb, NULL, read_leases, &b) == 0))
		return;
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	check(a.wrong == 0 && b.wrong == 0);
}

/* A Lease as the API server answers it, and every way it may not be read. */
static void t_lease(void)
{
	static const char ok[] = "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":\"noderecover\","
	    "\"namespace\":\"kube-system\",\"uid\":\"u\",\"resourceVersion\":\"4711\",\"managedFields\":[{\"manager\":\"x\"}]},"
	    "\"spec\":{\"holderIdentity\":\"pod-a-0a1b2c3d\",\"leaseDurationSeconds\":15,\"acquireTime\":\"2026-12-01T16:27:36.123456Z\","
	    "\"renewTime\":\"2026-12-01T16:28:00.000001Z\",\"leaseTransitions\":3}}";
	struct json_lease l;

	check(json_lease(ok, sizeof ok - 1, &l, why, sizeof why) == 0);
	check(strcmp(l.rv, "4711") == 0 && strcmp(l.holder, "pod-a-0a1b2c3d") == 0);
	check(l.duration == 15 && l.transitions == 3);
	check(strcmp(l.acquire, "2026-12-01T16:27:36.123456Z") == 0 && strcmp(l.renew, "2026-12-01T16:28:00.000001Z") == 0);
	/* a released or fresh Lease: absent and null members are empty, not errors */
	static const char bare[] = " {\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":null}} ";
	check(json_lease(bare, sizeof bare - 1, &l, why, sizeof why) == 0);
	check(strcmp(l.rv, "1") == 0 && l.holder[0] == '\0' && l.duration == 0 && l.renew[0] == '\0');
	static const char nospec[] = "{\"metadata\":{\"resourceVersion\":\"\\u0032\"}}";
	check(json_lease(nospec, sizeof nospec - 1, &l, why, sizeof why) == 0 && strcmp(l.rv, "2") == 0);
	/* must-fail: none of these may be read as a Lease (never taken over on a guess) */
	static const char *const bad[] = {
		"{\"spec\":{\"holderIdentity\":\"a\"}}",                                         /* no metadata */
		"{\"metadata\":{},\"spec\":{}}",                                                  /* no resourceVersion */
		"{\"metadata\":{\"resourceVersion\":\"\"}}",                                      /* empty */
		"{\"metadata\":{\"resourceVersion\":5}}",                                         /* a number */
		"{\"metadata\":[],\"spec\":{}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":[]}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":7}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"a\\u0000b\"}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"a\",\"holderIdentity\":\"b\"}}",
		"{\"metadata\":{\"resourceVersion\":\"1\",\"resourceVersion\":\"2\"}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"metadata\":{\"resourceVersion\":\"2\"}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":-1}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":1.5}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":2147483648}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":\"15\"}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseTransitions\":1e3}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"renewTime\":true}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"renewTime\":\"2026-12-01T16:28:00.000001Z-------------------\"}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"}",                                      /* cut short */
		"[{\"metadata\":{\"resourceVersion\":\"1\"}}]",
		"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why[0] = '\0';
		if (!check(json_lease(bad[i], strlen(bad[i]), &l, why, sizeof why) == -1 && why[0]))
			fprintf(stderr, "  read: %s\n", bad[i]);
	}
	check(json_lease(bad[8], strlen(bad[8]), &l, why, sizeof why) == -1 && strstr(why, "spec.holderIdentity appears twice"));
	check(json_lease(bad[11], strlen(bad[11]), &l, why, sizeof why) == -1 && strstr(why, "spec.leaseDurationSeconds"));
	static const char big[] = "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":2147483647}}";
	check(json_lease(big, sizeof big - 1, &l, why, sizeof why) == 0 && l.duration == 2147483647L);
}

/* A fence agent's Lease as the watcher reads it (docs/fence.md): the request, `fencing`, and a
 * safe time that is a whole number of seconds or unreadable (then -1: the watcher waits). */
static void t_fence(void)
{
	static const char ok[] = "{\"kind\":\"Lease\",\"metadata\":{\"name\":\"noderecover-fence-agent-1\",\"resourceVersion\":\"77\","
	    "\"annotations\":{\"noderecover.io/fence-address\":\"10.0.0.9:9466\",\"noderecover.io/fence-safe-seconds\":\"135\","
	    "\"noderecover.io/fence-request\":\"2026-12-03T12:00:00.000000Z\"}},\"spec\":{\"holderIdentity\":\"agent-1\"}}";
	static const char *const unsafe[] = {
		"{\"metadata\":{\"resourceVersion\":\"1\"}}",
		"{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":{\"noderecover.io/fence-safe-seconds\":\"0\"}}}",
		"{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":{\"noderecover.io/fence-safe-seconds\":\"-5\"}}}",
		"{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":{\"noderecover.io/fence-safe-seconds\":\"2m\"}}}",
		"{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":{\"noderecover.io/fence-safe-seconds\":\"99999999999\"}}}",
	};
	static const char *const bad[] = {
		"{\"metadata\":{\"name\":\"x\"}}",                                          /* no resourceVersion */
		"{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":[]}}",
		"{\"metadata\":{\"resourceVersion\":\"1\",\"annotations\":{\"noderecover.io/fencing\":\"a\",\"noderecover.io/fencing\":\"b\"}}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"}",
		"[]",
	};
	struct json_fence f;

	check(json_fence(ok, sizeof ok - 1, &f, why, sizeof why) == 0);
	check(strcmp(f.name, "noderecover-fence-agent-1") == 0 && strcmp(f.rv, "77") == 0);
	check(f.safe == 135 && f.request && !f.fencing);
	for (size_t i = 0; i < sizeof unsafe / sizeof unsafe[0]; i++)
		if (!check(json_fence(unsafe[i], strlen(unsafe[i]), &f, why, sizeof why) == 0 && f.safe == -1 && !f.request))
			fprintf(stderr, "  safe: %s\n", unsafe[i]);
	/* must-fail: none of these is a Lease the watcher may act on */
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (!check(json_fence(bad[i], strlen(bad[i]), &f, why, sizeof why) == -1 && why[0]))
			fprintf(stderr, "  read: %s\n", bad[i]);
}

/* ---- the watch stream ---- */

struct events_seen {
	int n;
	char type[8][JSON_TYPE_MAX + 1];
	char rv[8][NODE_RV_MAX + 1];
	char kind[8][16];
	int has_object[8];
};

static int on_watch_event(void *ctx, const char *type, const struct json_item *it)
{
	struct events_seen *e = ctx;
	char reason[200];

	if (e->n < 8) {
		snprintf(e->type[e->n], sizeof e->type[0], "%s", type);
		e->has_object[e->n] = it != NULL;
		if (!it || json_item_string(it, JSON_RV, e->rv[e->n], sizeof e->rv[0], reason, sizeof reason) < 0)
			e->rv[e->n][0] = '\0';
		if (!it || json_item_string(it, JSON_KIND, e->kind[e->n], sizeof e->kind[0], reason, sizeof reason) < 0)
			e->kind[e->n][0] = '\0';
	}
	e->n++;
	return 0;
}

/* Feeds s in pieces of k bytes (0: whole); returns feed's first nonzero or end's result. */
static int watch_feed(const char *s, size_t k, struct events_seen *e, char *err, size_t errlen)
{
	static struct json_list l;
	static char buf[4096];
	size_t n = strlen(s);
	int r = 0;

	memset(e, 0, sizeof *e);
	json_watch_init(&l, buf, sizeof buf, NULL, on_watch_event, e);
	for (size_t i = 0; i < n && r == 0; i += k ? k : n)
		r = json_list_feed(&l, s + i, k && n - i > k ? k : n - i);
	if (r == 0)
		r = json_list_end(&l);
	snprintf(err, errlen, "%s", l.err);
	return r;
}

static void t_watch_events(void)
{
	const char *s = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"11\"}}}\n"
	    "{\"object\":{\"kind\":\"Node\",\"metadata\":{\"resourceVersion\":\"12\"}},\"type\":\"BOOKMARK\"}\n"
	    "  {\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}";
	struct events_seen e;
	char err[160];

	/* whole, one byte at a time, and across odd boundaries: the same events */
	for (size_t k = 0; k < 8; k++) {
		check(watch_feed(s, k, &e, err, sizeof err) == 0);
		check(e.n == 3);
		check(strcmp(e.type[0], "ADDED") == 0 && strcmp(e.rv[0], "11") == 0 && strcmp(e.kind[0], "Node") == 0);
		check(strcmp(e.type[1], "BOOKMARK") == 0 && strcmp(e.rv[1], "12") == 0);   /* type after object */
		check(strcmp(e.type[2], "ERROR") == 0 && strcmp(e.kind[2], "Status") == 0);
	}
	/* no newline is needed between events, nor any at the end; an empty stream is fine */
	check(watch_feed("{\"type\":\"X\"}{\"type\":\"Y\"}", 1, &e, err, sizeof err) == 0 && e.n == 2 && !e.has_object[0]);
	check(watch_feed("", 0, &e, err, sizeof err) == 0 && e.n == 0);
}

static void t_watch_malformed(void)
{
	static const char *const bad[] = {
		"[]",                                           /* an event that is not an object */
		"{\"type\":\"ADDED\"} 7",                          /* nor a number */
		"{\"type\":\"ADDED\",\"type\":\"MODIFIED\"}",       /* the type twice */
		"{\"object\":{},\"object\":{}}",                /* the object twice */
		"{\"type\":7}",                                 /* a type that is not a string */
		"{\"type\":\"ADDED\",\"object\":[]}",           /* an object that is not an object */
		"{\"type\":\"AAAAAAAAAAAAAAAAAAAAAAAA\"}",      /* a type over JSON_TYPE_MAX */
		"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\"}",   /* ends inside an event */
		"{\"type\":\"ADDED\"}}",                        /* a close with nothing open */
		"{\"type\":\"A\\u0000\"}",                      /* a NUL in the type */
	};
	struct events_seen e;
	char err[160];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int r = watch_feed(bad[i], 1, &e, err, sizeof err);
		if (!check(r == -1 && err[0]))
			fprintf(stderr, "  accepted: %s\n", bad[i]);
		check(watch_feed(bad[i], 0, &e, err, sizeof err) == -1);
	}
	/* must-fail: a stream's error is named as one */
	watch_feed("[]", 0, &e, err, sizeof err);
	check(strstr(err, "watch stream") != NULL);
}

static void t_watch_oversize(void)
{
	static struct json_list l;
	static char small[64];
	static char s[512];
	struct events_seen e = { 0 };
	snprintf(s, sizeof s, "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"%0100d\"}}}", 7);
	json_watch_init(&l, small, sizeof small, NULL, on_watch_event, &e);
	check(json_list_feed(&l, s, strlen(s)) == 0 && json_list_end(&l) == 0);
	check(e.n == 1 && e.has_object[0]);
	/* its object did not fit: handed over with p NULL, so nothing reads it */
	check(e.rv[0][0] == '\0' && e.kind[0][0] == '\0');
}

static const struct test tests[] = {
	{ "lease", t_lease },
	{ "fence", t_fence },
	{ "server", t_server },
	{ "agent_unknown", t_agent_unknown },
	{ "ours", t_ours },
	{ "no_ready", t_no_ready },
	{ "bare", t_bare },
	{ "escaped", t_escaped },
	{ "keys_configurable", t_keys_configurable },
	{ "exclude_label", t_exclude_label },
	{ "minimal", t_minimal },
	{ "refused", t_refused },
	{ "strict", t_strict },
	{ "reasons", t_reasons },
	{ "name_on_error", t_name_on_error },
	{ "field_limits", t_field_limits },
	{ "ready_values", t_ready_values },
	{ "labels_values", t_labels_values },
	{ "taint_index", t_taint_index },
	{ "token_pool", t_token_pool },
	{ "big_node", t_big_node },
	{ "list_whole", t_list_whole },
	{ "list_splits", t_list_splits },
	{ "list_built", t_list_built },
	{ "list_empty", t_list_empty },
	{ "list_oversize", t_list_oversize },
	{ "list_stop", t_list_stop },
	{ "list_malformed", t_list_malformed },
	{ "list_truncated", t_list_truncated },
	{ "list_depth", t_list_depth },
	{ "list_continue_limit", t_list_continue_limit },
	{ "list_token_heavy", t_list_token_heavy },
	{ "watch_events", t_watch_events },
	{ "watch_malformed", t_watch_malformed },
	{ "watch_oversize", t_watch_oversize },
	{ "scan_offsets", t_scan_offsets },
	{ "key_compare", t_key_compare },
	{ "check", t_check },
	{ "status", t_status },
	{ "access_review", t_access_review },
	{ "self_user", t_self_user },
	{ "buf_escape", t_buf_escape },
	{ "buf_pointer", t_buf_pointer },
	{ "buf_overflow", t_buf_overflow },
	{ "threads", t_threads },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("json", tests, argc, argv);
}
