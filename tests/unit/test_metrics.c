/*
 * metrics.c and listen.c's pure parts: the exposition against a golden file, the probes' rules
 * as tables (must-fail rows: a probe that says healthy when it is not), request heads and
 * listen addresses as tables.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "../../listen.h"
#include "../../metrics.h"

static void t_content_type(void)
{
	/* exactly what Prometheus' expfmt.FmtText is: a comma, or a missing charset, is refused */
	check(strcmp(METRICS_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8") == 0);
}

/* The state the golden file was written from. */
static void fill(void)
{
	static const long ready[METRICS_READIES] = { 7, 1, 2, 0 };

	metrics_init("1.2.3", 15, 600, 1000);
	metrics_pass_done(METRICS_PASS_OK, 80, 1800000000);
	metrics_pass_done(METRICS_PASS_FAILED, 1500, 1800000015);
	metrics_pass_done(METRICS_PASS_HELD, 700000, 1800000030);
	metrics_action(METRICS_TAINT, METRICS_OK);
	metrics_action(METRICS_TAINT, METRICS_OK);
	metrics_action(METRICS_DELETE, METRICS_REFUSED);
	metrics_action(METRICS_TAINT, METRICS_EXCLUDED);
	metrics_action(METRICS_CLEAR, METRICS_HELD);      /* not a result a clear can have: not counted */
	metrics_action(METRICS_CLEAR, METRICS_GONE);
	metrics_nodes(ready, 3);
	metrics_storm(1);
	metrics_fence_waiting(2);
	metrics_fence_requested();
	{
		struct metrics_tainted t[METRICS_TAINTED_MAX];
		int n = 0;
		metrics_tainted_add(t, &n, "agent-3", 1799996400);
		metrics_tainted_add(t, &n, "agent-\"q\"", 1799990000);
		metrics_tainted(t, n, 5);
	}
	metrics_api(NULL, "GET", 200);
	metrics_api(NULL, "GET", 200);
	metrics_api(NULL, "GET", 0);
	metrics_api(NULL, "PATCH", 422);
	metrics_api(NULL, "DELETE", 418);
	metrics_api(NULL, "OPTIONS", 200);
}

static void t_render_golden(void)
{
	static char got[METRICS_TEXT_MAX], want[METRICS_TEXT_MAX];
	FILE *f = fopen("metrics/render.txt", "r");
	size_t wn = 0;
	int n;

	fill();
	n = metrics_render(0, got, sizeof got);
	check(n > 0);
	if (!check(f != NULL))
		return;
	wn = fread(want, 1, sizeof want, f);
	fclose(f);
	check(n > 0 && (size_t)n == wn && memcmp(got, want, wn) == 0);
	if (n > 0 && ((size_t)n != wn || memcmp(got, want, wn) != 0))
		fprintf(stderr, "--- rendered ---\n%.*s", n, got);
	check(n > 0 && got[n - 1] == '\n');   /* the format's last line ends with a line feed */
}

static void t_render_truncation(void)
{
	static char buf[METRICS_TEXT_MAX];
	int n;

	fill();
	n = metrics_render(0, buf, sizeof buf);
	check(n > 0);
	check(metrics_render(0, buf, (size_t)n) == -1);       /* no room for the NUL: refused, not cut */
	check(metrics_render(0, buf, (size_t)n / 2) == -1);
	check(metrics_render(0, buf, 0) == -1);
	check(metrics_render(0, buf, (size_t)n + 1) == n);
}

static void t_render_worst_case_fits(void)
{
	static char buf[METRICS_TEXT_MAX];
	static const char *const m[] = { "GET", "PATCH", "DELETE", "POST", "PUT", "OTHER" };
	static const int c[] = { 0, 200, 201, 400, 401, 403, 404, 409, 410, 422, 429, 500, 502, 503, 504, 999 };
	static const long big[METRICS_READIES] = { 2147483647L, 2147483647L, 2147483647L, 2147483647L };

	/* every API series present, every counter wide: METRICS_TEXT_MAX must still hold it */
	metrics_init("0.1.0-very-long-version-string-from-a-build", 15, 600, 0);
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		for (size_t j = 0; j < sizeof c / sizeof c[0]; j++)
			metrics_api(NULL, m[i], c[j]);
	metrics_nodes(big, 2147483647L);
	{
		/* the tainted series too, each named as long as a node name may be */
		struct metrics_tainted t[METRICS_TAINTED_MAX];
		char name[METRICS_NODE_NAME_MAX + 1];
		int n = 0;
		for (int i = 0; i < METRICS_TAINTED_MAX; i++) {
			memset(name, 'a' + i, METRICS_NODE_NAME_MAX);
			name[METRICS_NODE_NAME_MAX] = 0;
			metrics_tainted_add(t, &n, name, -1);
		}
		metrics_tainted(t, n, 2147483647L);
	}
	metrics_pass_done(METRICS_PASS_OK, 600000, 4102444800LL);
	check(metrics_render(0, buf, sizeof buf) > 0);
}

/* The tainted series keep the nodes tainted longest, oldest first, whatever the list's order:
 * the one an alert must name is never the one dropped (must-fail: keeping the first seen). */
static void t_tainted_oldest_kept(void)
{
	struct metrics_tainted t[METRICS_TAINTED_MAX];
	static char buf[METRICS_TEXT_MAX];
	char name[32];
	int n = 0;

	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof name, "n%02d", i);
		/* times 2000, 1999, ... for even i, 3000 + i for odd i: the oldest are the last evens */
		metrics_tainted_add(t, &n, name, i % 2 ? 3000 + i : 2000 - i);
	}
	check(n == METRICS_TAINTED_MAX);
	check(strcmp(t[0].node, "n18") == 0 && t[0].since == 1982);
	for (int i = 1; i < n; i++)
		check(t[i - 1].since <= t[i].since);
	check(strcmp(t[METRICS_TAINTED_MAX - 1].node, "n04") == 0);
	metrics_tainted_add(t, &n, "unreadable", -1);   /* a time we could not read sorts first */
	check(n == METRICS_TAINTED_MAX && strcmp(t[0].node, "unreadable") == 0 && strcmp(t[n - 1].node, "n06") == 0);
	metrics_init("1", 15, 600, 0);
	metrics_tainted(t, n, 21);
	check(metrics_render(0, buf, sizeof buf) > 0);
	check(strstr(buf, "noderecover_tainted_nodes 21\n") != NULL);
	check(strstr(buf, "noderecover_tainted_since_timestamp_seconds{node=\"unreadable\"} -1\n") != NULL);
	check(strstr(buf, "noderecover_tainted_since_timestamp_seconds{node=\"n18\"} 1982\n") != NULL);
	check(strstr(buf, "{node=\"n04\"}") == NULL && strstr(buf, "{node=\"n02\"}") == NULL);
	metrics_tainted(t, 0, 0);   /* none left: the series are gone, so alerts on them resolve */
	check(metrics_render(0, buf, sizeof buf) > 0);
	check(strstr(buf, "noderecover_tainted_since_timestamp_seconds{") == NULL);
}

static void t_label_escaped(void)
{
	static char buf[METRICS_TEXT_MAX];

	metrics_init("a\"b\\c\nd", 15, 600, 0);
	check(metrics_render(0, buf, sizeof buf) > 0);
	check(strstr(buf, "noderecover_build_info{version=\"a\\\"b\\\\c\\nd\"} 1\n") != NULL);
}

/* /livez: the loop started a round within 3 polls plus the longest list. */
static const struct { const char *what; long since, poll, list; int live; } live_rows[] = {
	{ "just started", 0, 15, 600, 1 },
	{ "a pass in a long list", 600, 15, 600, 1 },
	{ "at the bound", 3 * 15 + 600, 15, 600, 1 },
	{ "must-fail: one second past the bound", 3 * 15 + 600 + 1, 15, 600, 0 },
	{ "must-fail: a loop stuck for an hour", 3600, 15, 600, 0 },
	{ "must-fail: short poll, stuck past it", 3 * 1 + 6 + 1, 1, 6, 0 },
	{ "short poll, within", 3 * 1 + 6, 1, 6, 1 },
};

static void t_live_rule(void)
{
	for (size_t i = 0; i < sizeof live_rows / sizeof live_rows[0]; i++)
		if (!check(metrics_live_rule(live_rows[i].since, live_rows[i].poll, live_rows[i].list) == live_rows[i].live))
			fprintf(stderr, "  row: %s\n", live_rows[i].what);
}

/* /readyz: the first list succeeded, and fewer than 3 listings in a row failed since. */
static const struct { const char *what; int listed, fails, leader, ready; } ready_rows[] = {
	{ "must-fail: before the first list", 0, 0, 1, 0 },
	{ "must-fail: the first lists failed", 0, 2, 1, 0 },
	{ "listed once", 1, 0, 1, 1 },
	{ "one failure after a good list", 1, 1, 1, 1 },
	{ "two failures in a row", 1, 2, 1, 1 },
	{ "must-fail: three failures in a row", 1, 3, 1, 0 },
	{ "must-fail: more than three", 1, 9, 1, 0 },
	{ "a standby lists nothing and is ready", 0, 0, 0, 1 },
};

static void t_ready_rule(void)
{
	for (size_t i = 0; i < sizeof ready_rows / sizeof ready_rows[0]; i++)
		if (!check(metrics_ready_rule(ready_rows[i].listed, ready_rows[i].fails, ready_rows[i].leader) == ready_rows[i].ready))
			fprintf(stderr, "  row: %s\n", ready_rows[i].what);
}

/* The probes through the state the loop sets, as the listener reads it. */
static void t_probes_from_state(void)
{
	char why[256];

	metrics_init("x", 15, 600, 1000);
	check(metrics_live(1000, why, sizeof why) == 1 && strcmp(why, "ok") == 0);
	check(metrics_live(1000 + 645, why, sizeof why) == 1);
	check(metrics_live(1000 + 646, why, sizeof why) == 0);                 /* must-fail */
	check(strstr(why, "no pass started for 646s") != NULL);
	metrics_pass_started(1600);
	check(metrics_live(1646, why, sizeof why) == 1);

	check(metrics_ready(0, why, sizeof why) == 0);                            /* must-fail: no list yet */
	check(strcmp(why, "no node list read yet") == 0);
	metrics_list_result(0);
	check(metrics_ready(0, why, sizeof why) == 0);                            /* must-fail */
	metrics_list_result(1);
	check(metrics_ready(0, why, sizeof why) == 1);
	metrics_list_result(0);
	metrics_list_result(0);
	check(metrics_ready(0, why, sizeof why) == 1);
	metrics_list_result(0);
	check(metrics_ready(0, why, sizeof why) == 0);                            /* must-fail: three in a row */
	check(strcmp(why, "the last 3 node listings failed") == 0);
	metrics_list_result(0);
	check(metrics_ready(0, why, sizeof why) == 0);
	metrics_list_result(1);
	check(metrics_ready(0, why, sizeof why) == 1);
	metrics_leader(0);
	for (int i = 0; i < 5; i++)
		metrics_list_result(0);
	check(metrics_ready(0, why, sizeof why) == 1);
}

/* A standby that takes the lead after an hour: its watch silence starts at the take-over, not
 * at its start (issue 24: the new leader's /readyz answered 503 and the alert fired). */
static void t_silence_from_the_lead(void)
{
	char why[256], text[METRICS_TEXT_MAX];

	metrics_init("x", 15, 600, 1000);
	metrics_watching(1, 180, 1000);
	metrics_list_result(1);
	metrics_leader(0);                      /* a standby for an hour: it follows nothing */
	metrics_pass_started(4600);
	check(metrics_ready(4600, why, sizeof why) == 1);
	metrics_leader(1);                      /* takes the lead at 4600 */
	check(metrics_ready(4610, why, sizeof why) == 1);                         /* must-fail on the old build */
	check(strcmp(why, "ok") == 0);
	check(metrics_render(4610, text, sizeof text) > 0);
	check(strstr(text, "noderecover_watch_last_event_age_seconds 10\n") != NULL);   /* must-fail: 3610 */
	metrics_pass_started(4620);
	metrics_leader(1);                      /* still leading: the count goes on */
	check(metrics_ready(4600 + 181, why, sizeof why) == 0);                   /* a real silence still fails */
	metrics_watch_event(METRICS_BOOKMARK, 4790);
	check(metrics_ready(4800, why, sizeof why) == 1);
}

static const struct { const char *what; const char *head; enum listen_verdict want; } req_rows[] = {
	{ "metrics", "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", LISTEN_METRICS },
	{ "livez, HTTP/1.0, no headers", "GET /livez HTTP/1.0\r\n\r\n", LISTEN_LIVEZ },
	{ "readyz with a query", "GET /readyz?verbose HTTP/1.1\r\nHost: x\r\n\r\n", LISTEN_READYZ },
	{ "bare line ends", "GET /metrics HTTP/1.1\nHost: x\n\n", LISTEN_METRICS },
	{ "Prometheus' Accept", "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1\r\n\r\n", LISTEN_METRICS },
	{ "incomplete head", "GET /metrics HTTP/1.1\r\nHost: x\r\n", LISTEN_MORE },
	{ "incomplete line", "GET /met", LISTEN_MORE },
	{ "half a CRLF", "GET /metrics HTTP/1.1\r", LISTEN_MORE },
	{ "empty", "", LISTEN_MORE },
	{ "another path", "GET /healthz HTTP/1.1\r\n\r\n", LISTEN_NOT_FOUND },
	{ "a prefix of a path", "GET /metricsx HTTP/1.1\r\n\r\n", LISTEN_NOT_FOUND },
	{ "a path below", "GET /metrics/x HTTP/1.1\r\n\r\n", LISTEN_NOT_FOUND },
	{ "must-fail: POST", "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", LISTEN_METHOD },
	{ "must-fail: HEAD", "HEAD /metrics HTTP/1.1\r\n\r\n", LISTEN_METHOD },
	{ "must-fail: GETX", "GETX /metrics HTTP/1.1\r\n\r\n", LISTEN_METHOD },
	{ "must-fail: lower-case method", "get /metrics HTTP/1.1\r\n\r\n", LISTEN_BAD },
	{ "must-fail: garbage at once", "\x16\x03\x01\x02", LISTEN_BAD },
	{ "must-fail: a TLS hello", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", LISTEN_BAD },
	{ "must-fail: no target", "GET  HTTP/1.1\r\n\r\n", LISTEN_BAD },
	{ "must-fail: HTTP/2", "GET /metrics HTTP/2.0\r\n\r\n", LISTEN_BAD },
	{ "must-fail: no version", "GET /metrics\r\n\r\n", LISTEN_BAD },
	{ "must-fail: after the version", "GET /metrics HTTP/1.1 x\r\n\r\n", LISTEN_BAD },
	{ "must-fail: header without colon", "GET /metrics HTTP/1.1\r\nHost\r\n\r\n", LISTEN_BAD },
	{ "must-fail: folded header", "GET /metrics HTTP/1.1\r\nA: b\r\n c\r\n\r\n", LISTEN_BAD },
	{ "must-fail: control byte", "GET /metrics HTTP/1.1\r\nA: \001\r\n\r\n", LISTEN_BAD },
	{ "must-fail: lone CR", "GET /metrics HTTP/1.1\r\nA: b\rc\r\n\r\n", LISTEN_BAD },
	{ "must-fail: absolute form", "GET http://x/metrics HTTP/1.1\r\n\r\n", LISTEN_BAD },
	{ "must-fail: method too long", "GETGETGETGETGETGETGET /metrics HTTP/1.1\r\n\r\n", LISTEN_BAD },
};

static void t_request(void)
{
	for (size_t i = 0; i < sizeof req_rows / sizeof req_rows[0]; i++)
		if (!check(listen_request(req_rows[i].head, strlen(req_rows[i].head)) == req_rows[i].want))
			fprintf(stderr, "  row: %s\n", req_rows[i].what);
}

/* A head that does not end within LISTEN_HEAD_MAX bytes, a valid start or not. */
static void t_request_too_large(void)
{
	static char h[LISTEN_HEAD_MAX];
	static const char start[] = "GET /metrics HTTP/1.1\r\nX-A: ";
	size_t n = sizeof h;

	memcpy(h, start, sizeof start - 1);
	memset(h + sizeof start - 1, 'b', sizeof h - (sizeof start - 1));
	check(listen_request(h, n - 1) == LISTEN_MORE);
	check(listen_request(h, n) == LISTEN_TOO_LARGE);           /* must-fail: not read on */
	memset(h, 0, sizeof h);
	memcpy(h, "GET /", 5);
	memset(h + 5, 'a', sizeof h - 5);
	check(listen_request(h, sizeof h) == LISTEN_TOO_LARGE);    /* a target without end */
}

static const struct { const char *addr; int ok, family, any; const char *ip; int port; } addr_rows[] = {
	{ ":8080", 1, AF_INET6, 1, "::", 8080 },
	{ "127.0.0.1:8080", 1, AF_INET, 0, "127.0.0.1", 8080 },
	{ "0.0.0.0:1", 1, AF_INET, 0, "0.0.0.0", 1 },
	{ "[::1]:65535", 1, AF_INET6, 0, "::1", 65535 },
	{ "[::]:9090", 1, AF_INET6, 0, "::", 9090 },
	{ "", 0, 0, 0, 0, 0 },
	{ "8080", 0, 0, 0, 0, 0 },
	{ ":", 0, 0, 0, 0, 0 },
	{ ":0", 0, 0, 0, 0, 0 },
	{ ":65536", 0, 0, 0, 0, 0 },
	{ ":080800", 0, 0, 0, 0, 0 },
	{ ":+80", 0, 0, 0, 0, 0 },
	{ ":80x", 0, 0, 0, 0, 0 },
	{ "localhost:8080", 0, 0, 0, 0, 0 },
	{ "::1:8080", 0, 0, 0, 0, 0 },
	{ "[::1]8080", 0, 0, 0, 0, 0 },
	{ "[::1:8080", 0, 0, 0, 0, 0 },
	{ "[127.0.0.1]:8080", 0, 0, 0, 0, 0 },
	{ "256.0.0.1:8080", 0, 0, 0, 0, 0 },
	{ "127.0.0.1:8080 ", 0, 0, 0, 0, 0 },
	{ "[::1]:8080:", 0, 0, 0, 0, 0 },
};

static void t_addr(void)
{
	for (size_t i = 0; i < sizeof addr_rows / sizeof addr_rows[0]; i++) {
		struct sockaddr_storage sa;
		socklen_t len = 0;
		char err[200] = "", ip[64] = "";
		int any = -1, port = 0, r = listen_addr(addr_rows[i].addr, &sa, &len, &any, err, sizeof err);
		if (r == 0 && sa.ss_family == AF_INET) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, ip, sizeof ip);
			port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
		} else if (r == 0) {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, ip, sizeof ip);
			port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
		}
		int ok = addr_rows[i].ok ? r == 0 && sa.ss_family == addr_rows[i].family && any == addr_rows[i].any &&
		    strcmp(ip, addr_rows[i].ip) == 0 && port == addr_rows[i].port
		    : r == -1 && strstr(err, "is not :PORT, IPv4:PORT or [IPv6]:PORT") != NULL;
		if (!check(ok))
			fprintf(stderr, "  row: '%s' -> %d %s:%d (%s)\n", addr_rows[i].addr, r, ip, port, err);
	}
}

static const struct test tests[] = {
	{ "content_type", t_content_type },
	{ "render_golden", t_render_golden },
	{ "render_truncation", t_render_truncation },
	{ "render_worst_case_fits", t_render_worst_case_fits },
	{ "tainted_oldest_kept", t_tainted_oldest_kept },
	{ "label_escaped", t_label_escaped },
	{ "live_rule", t_live_rule },
	{ "ready_rule", t_ready_rule },
	{ "probes_from_state", t_probes_from_state },
	{ "silence_from_the_lead", t_silence_from_the_lead },
	{ "request", t_request },
	{ "request_too_large", t_request_too_large },
	{ "addr", t_addr },
	{ 0, 0 }
};

int main(int argc, char **argv)
{
	return run_tests("metrics", tests, argc, argv);
}
