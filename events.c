/*
 * Events on the Node (events.k8s.io/v1). Owns the Event's JSON, its name, the ten-minute
 * window per node and reason, and the pause after a failed post. Posts through kube_call_within
 * only; never decides an action, never fails one; says one line when posts start failing and
 * one when they work again. Nothing here allocates: the window is a fixed table.
 */
#include <stdio.h>
#include <string.h>
#include "clock.h"
#include "events.h"
#include "json.h"
#include "say.h"
#include "text.h"

#define EVENTS_PATH "/apis/events.k8s.io/v1/namespaces/" EVENTS_NAMESPACE "/events"
#define HEX_MAX 16   /* hex digits of a 64-bit time in nanoseconds */

static const struct {
	const char *reason, *type, *action;
} kinds[EVENTS_REASONS] = {
	[EVENTS_TAINTED] = { "OutOfServiceTainted", "Warning", "Taint" },
	[EVENTS_CLEARED] = { "OutOfServiceCleared", "Normal", "Clear" },
	[EVENTS_DELETED] = { "NodeDeleted", "Normal", "Delete" },
	[EVENTS_DELETE_REFUSED] = { "DeleteRefused", "Warning", "Delete" },
	[EVENTS_STORM_ENGAGED] = { "StormGuardEngaged", "Warning", "Hold" },
	[EVENTS_STORM_LIFTED] = { "StormGuardLifted", "Normal", "Resume" },
	[EVENTS_EXCLUDED] = { "NodeExcluded", "Warning", "Skip" },
	[EVENTS_FENCE_REQUESTED] = { "FenceRequested", "Warning", "Fence" },
	[EVENTS_FENCED_TAINTED] = { "FencedTainted", "Warning", "Taint" },
};

const char *events_reason_name(enum events_reason r)
{
	return r < EVENTS_REASONS ? kinds[r].reason : NULL;
}

const char *events_action_name(enum events_reason r)
{
	return r < EVENTS_REASONS ? kinds[r].action : NULL;
}

/* s fit for a note (text_clean: one line, cut at a character boundary, valid UTF-8): the API
 * server counts the note in bytes, and json_str refuses what is not UTF-8 rather than let the
 * server change it. */
static void clean(char *out, size_t cap, const char *s)
{
	text_clean(out, cap, s, strlen(s), NULL, 0);
}

/* The monotonic clock in seconds (clock.h: the one every deadline is measured by). */
static int64_t mono_seconds(void)
{
	return clock_ms() / 1000;
}

void events_init(struct events *e, struct kube *kc, const volatile sig_atomic_t *stop,
    const char *instance, const char *self, int on)
{
	memset(e, 0, sizeof *e);
	e->kc = kc;
	e->stop = stop;
	e->on = on != 0;
	clean(e->instance, sizeof e->instance, instance[0] ? instance : "noderecover");
	if (kube_name_ok(self))
		memcpy(e->self, self, strlen(self) + 1);
}

int events_format(char *out, size_t cap, const char *node, const char *uid, enum events_reason r,
    const char *note, const char *instance, int64_t sec, long nsec, uint64_t unique)
{
	char name[NODE_NAME_MAX + 1], when[TEXT_TIME_LEN + 8], words[EVENTS_NOTE_MAX + 1];
	struct json_buf b;
	size_t n = strlen(node);

	if ((unsigned)r >= EVENTS_REASONS || !kube_name_ok(node) || nsec < 0 || nsec > 999999999)
		return -1;
	/* client-go's name, node + "." + hex nanoseconds, with the node cut so it stays a DNS
	 * subdomain of at most 253 bytes: no label may end in '-' or '.' */
	if (n > NODE_NAME_MAX - 1 - HEX_MAX)
		n = NODE_NAME_MAX - 1 - HEX_MAX;
	while (n > 1 && (node[n - 1] == '-' || node[n - 1] == '.'))
		n--;
	snprintf(name, sizeof name, "%.*s.%llx", (int)n, node, (unsigned long long)unique);
	/* MicroTime: the server parses exactly six fractional digits, and refuses any other count */
	text_time(when, sec);
	snprintf(when + TEXT_TIME_LEN - 1, sizeof when - (TEXT_TIME_LEN - 1), ".%06ldZ", nsec / 1000);
	clean(words, sizeof words, note);

	json_buf_init(&b, out, cap);
	json_raw(&b, "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":");
	json_str(&b, name);
	json_raw(&b, ",\"namespace\":\"" EVENTS_NAMESPACE "\"},\"eventTime\":");
	json_str(&b, when);
	json_raw(&b, ",\"reportingController\":\"" EVENTS_CONTROLLER "\",\"reportingInstance\":");
	json_str(&b, instance);
	json_raw(&b, ",\"action\":");
	json_str(&b, kinds[r].action);
	json_raw(&b, ",\"reason\":");
	json_str(&b, kinds[r].reason);
	json_raw(&b, ",\"type\":");
	json_str(&b, kinds[r].type);
	json_raw(&b, ",\"regarding\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"name\":");
	json_str(&b, node);
	json_raw(&b, ",\"uid\":");
	json_str(&b, uid);
	json_raw(&b, "},\"note\":");
	json_str(&b, words);
	json_raw(&b, "}");
	return json_buf_end(&b);
}

/* The node's name hash mixed with the reason, spread over the low bits the set is chosen by: 0
 * is kept for an empty slot. */
static uint64_t key_of(const char *node, enum events_reason r)
{
	uint64_t h = (text_hash(node) ^ (unsigned)r) * 0x9e3779b97f4a7c15ULL;

	return h ? h : 1;
}

/*
 * A set-associative table: a pair may sit in EVENTS_WAYS slots of its set; when all hold
 * other pairs, the one posted longest ago is forgotten. So memory is fixed, and more pairs than
 * the table holds within one window cost at most an Event posted early, never one lost.
 */
int events_due(struct events *e, const char *node, enum events_reason r, int64_t now)
{
	uint64_t key = key_of(node, r);
	size_t set = (size_t)(key % (EVENTS_SEEN / EVENTS_WAYS)) * EVENTS_WAYS, pick = set;

	for (size_t i = set; i < set + EVENTS_WAYS; i++) {
		if (e->seen[i].key == key) {
			if (now - e->seen[i].at < EVENTS_WINDOW)
				return 0;
			pick = i;
			break;
		}
		if (e->seen[pick].key != 0 && (e->seen[i].key == 0 || e->seen[i].at < e->seen[pick].at))
			pick = i;
	}
	e->seen[pick].key = key;
	e->seen[pick].at = now;
	return 1;
}

/* Posts one Event, unless off, stopping, paused or inside the window; says a failure once. */
static void post(struct events *e, const char *node, const char *uid, enum events_reason r, const char *note)
{
	char body[EVENTS_BODY_MAX], what[NODE_NAME_MAX + 64];
	struct timespec ts;
	uint64_t ns;
	int n, st = -1;

	if (!e->on || (e->stop && *e->stop) || mono_seconds() < e->paused_until ||
	    !kube_name_ok(node) || !events_due(e, node, r, mono_seconds()))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (ns <= e->last_ns)
		ns = e->last_ns + 1;
	e->last_ns = ns;
	snprintf(what, sizeof what, "Posting Event %s about %s", kinds[r].reason, node);
	n = events_format(body, sizeof body, node, uid, r, note, e->instance, (int64_t)ts.tv_sec, ts.tv_nsec, ns);
	/* a short deadline of its own: an Event must not hold up the actions after it */
	if (n >= 0)
		st = kube_call_within(e->kc, EVENTS_DEADLINE_MS, what, "POST", EVENTS_PATH, body, (size_t)n, NULL, 0);
	/* 409: a retry of a post that got through; the name is ours alone */
	if (kube_done(st) || st == 409) {
		if (e->failing)
			say("Events are posted again");
		e->failing = 0;
		return;
	}
	if (e->stop && *e->stop)
		return;   /* cut short by a signal, not broken */
	e->paused_until = mono_seconds() + EVENTS_PAUSE;
	if (e->failing)
		return;
	e->failing = 1;
	say("%.700s; the action stands, Events pause for %ds, and failing posts are not logged again until one succeeds",
	    n < 0 ? "An Event's uid is not UTF-8" : kube_error(e->kc), EVENTS_PAUSE);
}

void events_node(struct events *e, const struct node_facts *f, enum events_reason r, const char *note)
{
	post(e, f->name, f->uid, r, note);
}

void events_cluster(struct events *e, enum events_reason r, const char *note)
{
	if (e->self[0])
		post(e, e->self, e->self, r, note);
}
