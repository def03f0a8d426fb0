/*
 * events.c without a server: the exact JSON of an Event (a golden string), eventTime with six
 * fractional digits and no other count, the note cut at a character boundary under the API's
 * 1024 bytes, escaping, the Event's name as a DNS subdomain of at most 253 bytes, and the
 * ten-minute window per node and reason (a repeat inside it must not be due). Posting is the
 * stand-in suite's (tests/standin/test_events.py).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "events.h"
#include "check.h"

#define T0 1796011803 /* 2026-11-30T04:10:03Z */

static char body[EVENTS_BODY_MAX];

/* The string value of "key" in body (no escapes in what the tests read this way), or "". */
static const char *member(const char *key, char *out, size_t cap)
{
	char pat[64];
	const char *p, *end;

	snprintf(pat, sizeof pat, "\"%s\":\"", key);
	out[0] = '\0';
	if (!(p = strstr(body, pat)))
		return out;
	p += strlen(pat);
	end = p;
	while (*end && !(*end == '"' && end[-1] != '\\'))
		end++;
	if ((size_t)(end - p) < cap) {
		memcpy(out, p, (size_t)(end - p));
		out[end - p] = '\0';
	}
	return out;
}

/* A DNS subdomain as the API server checks metadata.name: labels of [a-z0-9-], alphanumeric at both ends. */
static int dns_subdomain(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i], prev = i ? s[i - 1] : '.', next = i + 1 < n ? s[i + 1] : '.';
		if (c == '.') {
			if (prev == '.' || prev == '-' || next == '.' || next == '-')
				return 0;
		} else if (c == '-') {
			if (prev == '.' || next == '.')
				return 0;
		} else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
			return 0;
		}
	}
	return 1;
}

static int fmt(const char *node, enum events_reason r, const char *note, long nsec)
{
	return events_format(body, sizeof body, node, "4b1c2f0e-8f1a-4c1e-9d2b-5a6e7f8091a2", r, note,
	    "noderecover-7d9f-x2", T0, nsec, 0x187b0c5a1c3f9e20ULL);
}

static void t_golden(void)
{
	static const char want[] =
	    "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\","
	    "\"metadata\":{\"name\":\"agent-1.187b0c5a1c3f9e20\",\"namespace\":\"default\"},"
	    "\"eventTime\":\"2026-11-30T04:10:03.123456Z\","
	    "\"reportingController\":\"github-runner.exadev.io/noderecover\",\"reportingInstance\":\"noderecover-7d9f-x2\","
	    "\"action\":\"Taint\",\"reason\":\"OutOfServiceTainted\",\"type\":\"Warning\","
	    "\"regarding\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"name\":\"agent-1\",\"uid\":\"4b1c2f0e-8f1a-4c1e-9d2b-5a6e7f8091a2\"},"
	    "\"note\":\"Tainted agent-1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute: not reporting for 301s\"}";
	int n = fmt("agent-1", EVENTS_TAINTED,
	    "Tainted agent-1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute: not reporting for 301s", 123456789);

	check(n == (int)strlen(want));
	check(strcmp(body, want) == 0);
	if (strcmp(body, want) != 0)
		fprintf(stderr, "got  %s\nwant %s\n", body, want);
}

/* Every reason's type and action, and the reason CamelCase, as the README's table says. */
static void t_kinds(void)
{
	static const struct { enum events_reason r; const char *reason, *type, *action; } rows[] = {
		{ EVENTS_TAINTED, "OutOfServiceTainted", "Warning", "Taint" },
		{ EVENTS_CLEARED, "OutOfServiceCleared", "Normal", "Clear" },
		{ EVENTS_DELETED, "NodeDeleted", "Normal", "Delete" },
		{ EVENTS_DELETE_REFUSED, "DeleteRefused", "Warning", "Delete" },
		{ EVENTS_STORM_ENGAGED, "StormGuardEngaged", "Warning", "Hold" },
		{ EVENTS_STORM_LIFTED, "StormGuardLifted", "Normal", "Resume" },
		{ EVENTS_EXCLUDED, "NodeExcluded", "Warning", "Skip" },
		{ EVENTS_FENCE_REQUESTED, "FenceRequested", "Warning", "Fence" },
		{ EVENTS_FENCED_TAINTED, "FencedTainted", "Warning", "Taint" },
	};
	char v[64];

	check(sizeof rows / sizeof rows[0] == EVENTS_REASONS);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		check(fmt("agent-1", rows[i].r, "x", 0) > 0);
		check(strcmp(member("reason", v, sizeof v), rows[i].reason) == 0);
		check(strcmp(member("type", v, sizeof v), rows[i].type) == 0);
		check(strcmp(member("action", v, sizeof v), rows[i].action) == 0);
	}
	/* must fail: no reason past the table */
	check(fmt("agent-1", EVENTS_REASONS, "x", 0) == -1);
}

/* MicroTime: exactly six digits, the nanoseconds cut (not rounded: never a second ahead). */
static void t_six_digits(void)
{
	static const struct { long nsec; const char *want; } rows[] = {
		{ 0, "2026-11-30T04:10:03.000000Z" },
		{ 999, "2026-11-30T04:10:03.000000Z" },
		{ 1000, "2026-11-30T04:10:03.000001Z" },
		{ 123456789, "2026-11-30T04:10:03.123456Z" },
		{ 999999999, "2026-11-30T04:10:03.999999Z" },
	};
	char v[64];

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		check(fmt("agent-1", EVENTS_CLEARED, "x", rows[i].nsec) > 0);
		check(strcmp(member("eventTime", v, sizeof v), rows[i].want) == 0);
		check(strlen(v) == 27);
	}
	/* must fail: nanoseconds out of range would print seven digits */
	check(fmt("agent-1", EVENTS_CLEARED, "x", 1000000000) == -1);
	check(fmt("agent-1", EVENTS_CLEARED, "x", -1) == -1);
}

static void t_note_cut(void)
{
	char note[2048], v[EVENTS_BODY_MAX];

	/* 1022 bytes then a 2-byte character: fits exactly */
	memset(note, 'a', 1022);
	strcpy(note + 1022, "\xc3\xa9tail");
	check(fmt("agent-1", EVENTS_TAINTED, note, 0) > 0);
	check(strlen(member("note", v, sizeof v)) == 1024);
	check(memcmp(v + 1022, "\xc3\xa9", 2) == 0);
	/* must fail if cut inside the character: 1023 bytes then é leaves 1023, not 1024 */
	memset(note, 'a', 1023);
	strcpy(note + 1023, "\xc3\xa9");
	check(fmt("agent-1", EVENTS_TAINTED, note, 0) > 0);
	check(strlen(member("note", v, sizeof v)) == 1023);
	/* a 4-byte character at the edge */
	memset(note, 'a', 1021);
	strcpy(note + 1021, "\xf0\x9f\x98\x80");
	check(fmt("agent-1", EVENTS_TAINTED, note, 0) > 0);
	check(strlen(member("note", v, sizeof v)) == 1021);
	/* far longer: still 1024 */
	memset(note, 'b', sizeof note - 1);
	note[sizeof note - 1] = '\0';
	check(fmt("agent-1", EVENTS_TAINTED, note, 0) > 0);
	check(strlen(member("note", v, sizeof v)) == EVENTS_NOTE_MAX);
}

static void t_escaping(void)
{
	char v[256];

	check(fmt("agent-1", EVENTS_EXCLUDED, "say \"no\" \\ to\nnew\tlines \x01 and \xff bytes", 0) > 0);
	/* text_clean's rules: control bytes '?', bytes that are not UTF-8 written \xNN */
	check(strcmp(member("note", v, sizeof v), "say \\\"no\\\" \\\\ to?new?lines ? and \\\\xff bytes") == 0);
	/* the worst note (every byte a quote) with the longest names still fits the buffer */
	{
		char note[EVENTS_NOTE_MAX + 1], node[NODE_NAME_MAX + 1], inst[EVENTS_INSTANCE_MAX + 1], uid[NODE_UID_MAX + 1];
		memset(note, '"', EVENTS_NOTE_MAX);
		note[EVENTS_NOTE_MAX] = '\0';
		memset(node, 'n', NODE_NAME_MAX);
		node[NODE_NAME_MAX] = '\0';
		memset(inst, '\\', EVENTS_INSTANCE_MAX);
		inst[EVENTS_INSTANCE_MAX] = '\0';
		memset(uid, '"', NODE_UID_MAX);
		uid[NODE_UID_MAX] = '\0';
		check(events_format(body, sizeof body, node, uid, EVENTS_DELETE_REFUSED, note, inst, T0, 0, ~0ULL) > 0);
	}
	/* must fail: a uid that is not UTF-8 is refused, not sent changed */
	check(events_format(body, sizeof body, "agent-1", "\xff", EVENTS_TAINTED, "x", "i", T0, 0, 1) == -1);
}

static void t_name(void)
{
	char node[NODE_NAME_MAX + 1], v[300];

	check(fmt("agent-1", EVENTS_TAINTED, "x", 0) > 0);
	check(strcmp(member("name", v, sizeof v), "agent-1.187b0c5a1c3f9e20") == 0);
	/* a 253-byte node: cut so the whole name is 253 */
	memset(node, 'a', NODE_NAME_MAX);
	node[NODE_NAME_MAX] = '\0';
	check(fmt(node, EVENTS_TAINTED, "x", 0) > 0);
	check(strlen(member("name", v, sizeof v)) == 253);
	check(dns_subdomain(v));
	check(strcmp(v + 236, ".187b0c5a1c3f9e20") == 0);
	/* where the cut leaves '-' or '.' at the end, they go too */
	memset(node + 233, '-', 3);
	node[232] = '.';
	check(fmt(node, EVENTS_TAINTED, "x", 0) > 0);
	member("name", v, sizeof v);
	check(dns_subdomain(v));
	check(strlen(v) == 232 + 17);
	/* the regarding name is the node's own, uncut */
	check(strstr(body, "\"regarding\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"name\":\"aaaa") != NULL);
	/* must fail: a name that is not a node name gets no Event */
	check(fmt("Agent_1", EVENTS_TAINTED, "x", 0) == -1);
	check(fmt("", EVENTS_TAINTED, "x", 0) == -1);
	check(fmt("-a", EVENTS_TAINTED, "x", 0) == -1);
}

static struct events e;

static void t_window(void)
{
	events_init(&e, NULL, NULL, "i", "server-1", 1);
	check(events_due(&e, "agent-1", EVENTS_DELETE_REFUSED, 1000) == 1);
	/* must fail: the same Warning on the same node on the next passes is no new Event */
	check(events_due(&e, "agent-1", EVENTS_DELETE_REFUSED, 1015) == 0);
	check(events_due(&e, "agent-1", EVENTS_DELETE_REFUSED, 1000 + EVENTS_WINDOW - 1) == 0);
	/* another reason, another node: their own windows */
	check(events_due(&e, "agent-1", EVENTS_EXCLUDED, 1015) == 1);
	check(events_due(&e, "agent-2", EVENTS_DELETE_REFUSED, 1015) == 1);
	check(events_due(&e, "agent-10", EVENTS_DELETE_REFUSED, 1015) == 1);
	/* once the window is over, one more, and a new window from then */
	check(events_due(&e, "agent-1", EVENTS_DELETE_REFUSED, 1000 + EVENTS_WINDOW) == 1);
	check(events_due(&e, "agent-1", EVENTS_DELETE_REFUSED, 1000 + EVENTS_WINDOW + 1) == 0);
	check(events_due(&e, "agent-1", EVENTS_DELETE_REFUSED, 1000 + 2 * EVENTS_WINDOW - 1) == 0);
}

/* More pairs than the table holds: the oldest is forgotten (an Event early), the newest kept. */
static void t_window_full(void)
{
	char name[32];
	int again = 0, kept = 0;

	events_init(&e, NULL, NULL, "i", "", 1);
	for (int i = 0; i < 4 * EVENTS_SEEN; i++) {
		snprintf(name, sizeof name, "agent-%d", i);
		check(events_due(&e, name, EVENTS_EXCLUDED, 2000 + i / 100) == 1);
	}
	/* the newest first: asking about a pair that is due notes it, and could push others out */
	for (int i = 4 * EVENTS_SEEN - EVENTS_SEEN / 4; i < 4 * EVENTS_SEEN; i++) {
		snprintf(name, sizeof name, "agent-%d", i);
		kept += !events_due(&e, name, EVENTS_EXCLUDED, 2100);
	}
	for (int i = 0; i < EVENTS_SEEN; i++) {
		snprintf(name, sizeof name, "agent-%d", i);
		again += events_due(&e, name, EVENTS_EXCLUDED, 2100);
	}
	check(again == EVENTS_SEEN);       /* the oldest were forgotten */
	check(kept == EVENTS_SEEN / 4);    /* the newest were not */
}

static void t_init(void)
{
	char inst[300];

	memset(inst, 'p', sizeof inst - 1);
	inst[sizeof inst - 1] = '\0';
	events_init(&e, NULL, NULL, inst, "server-1", 1);
	check(strlen(e.instance) == EVENTS_INSTANCE_MAX);
	check(strcmp(e.self, "server-1") == 0);
	events_init(&e, NULL, NULL, "", "Not A Node", 0);
	check(strcmp(e.instance, "noderecover") == 0);
	check(e.self[0] == '\0');
	/* off: nothing is due to be posted, and nothing is noted */
	check(!e.on);
	events_node(&e, &(struct node_facts){ .name = "agent-1", .uid = "u" }, EVENTS_TAINTED, "x");
	events_cluster(&e, EVENTS_STORM_ENGAGED, "x");
	check(events_due(&e, "agent-1", EVENTS_TAINTED, 5000) == 1);
}

/* The lines events.c says while f runs (stderr captured in a file). */
static int said(void (*f)(void), char *out, size_t cap)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), lines = 0;
	size_t n;

	if (!tmp || saved < 0)
		return -1;
	fflush(stderr);
	dup2(fileno(tmp), 2);
	f();
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, cap - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	for (size_t i = 0; i < n; i++)
		lines += out[i] == '\n';
	return lines;
}

static const struct node_facts bad = { .name = "agent-1", .uid = "\xff" }, bad3 = { .name = "agent-3", .uid = "\xff" },
    good = { .name = "agent-2", .uid = "u" };

static void fail_once(void)
{
	events_node(&e, &bad, EVENTS_TAINTED, "x");
}

static void fail_again(void)
{
	events_node(&e, &bad3, EVENTS_TAINTED, "x");
}

static void fail_paused(void)
{
	/* paused: no request is even tried (kc is NULL: one would crash) */
	events_node(&e, &good, EVENTS_TAINTED, "x");
	events_cluster(&e, EVENTS_STORM_ENGAGED, "x");
}

/* A failing post is said once, pauses the next ones, and is not said again while posts fail. */
static void t_failure_said_once(void)
{
	char out[4096];

	events_init(&e, NULL, NULL, "i", "server-1", 1);
	check(said(fail_once, out, sizeof out) == 1);
	check(strstr(out, "uid is not UTF-8; the action stands, Events pause for 60s") != NULL);
	check(e.paused_until > 0);
	/* must fail if a paused post were tried, or said */
	check(said(fail_paused, out, sizeof out) == 0);
	/* a paused Event is not noted in the window: it may be posted after the pause */
	check(events_due(&e, "agent-2", EVENTS_TAINTED, 100000) == 1);
	e.paused_until = 0;
	/* must fail: the second failure in a row is not said */
	check(said(fail_again, out, sizeof out) == 0);
	check(e.paused_until > 0);
}

static const struct test tests[] = {
	{ "golden", t_golden },
	{ "kinds", t_kinds },
	{ "six_digits", t_six_digits },
	{ "note_cut", t_note_cut },
	{ "escaping", t_escaping },
	{ "name", t_name },
	{ "window", t_window },
	{ "window_full", t_window_full },
	{ "init", t_init },
	{ "failure_said_once", t_failure_said_once },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("events", tests, argc, argv);
}
