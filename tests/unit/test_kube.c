/*
 * kube.c against a recording TLS server on loopback (kube/recorder.py, certificates from
 * http/mkcerts.sh): the exact requests of a taint, a clear and a delete (golden files in kube/,
 * names and values that need escaping), how the API's answers are sorted (a failed test op,
 * a validation error, an admission denial, 409, 404), the node list yielding facts, and the
 * token file's bounds. Run from tests/unit. Rewrite the golden files after a deliberate change
 * with KUBE_GOLDEN_WRITE=1 (that run fails: it compared nothing), read the diff, run again.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kube.h"
#include "kubeconfig.h"
#include "target.h"
#include "check.h"

static char dir[] = "/tmp/test_kube.XXXXXX";
static char port[8];
static pid_t srv;
static struct kube_target t;
static struct kube k;
static char err[1024];

static void write_file(const char *name, const char *data, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
	fclose(f);
}

/* The next answer of the recorder: status line, JSON body. */
static void answer(const char *status, const char *body)
{
	char r[4096];
	int n = snprintf(r, sizeof r, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    status, strlen(body), body);
	write_file("response", r, (size_t)n);
}

static int setup(void)
{
	char cmd[512], path[256];
	int fds[2];
	size_t n;

	if (!mkdtemp(dir))
		return -1;
	snprintf(cmd, sizeof cmd, "sh http/mkcerts.sh %s", dir);
	if (system(cmd) != 0)
		return -1;
	if (pipe(fds) < 0)
		return -1;
	if ((srv = fork()) == 0) {
		char c[256], key[256];
		snprintf(c, sizeof c, "%s/ip.crt", dir);
		snprintf(key, sizeof key, "%s/ip.key", dir);
		dup2(fds[1], 1);
		close(fds[0]);
		execlp("python3", "python3", "kube/recorder.py", c, key, dir, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	for (n = 0; n < sizeof port - 1 && read(fds[0], port + n, 1) == 1 && port[n] != '\n'; n++)
		;
	port[n] = '\0';
	close(fds[0]);
	if (n == 0)
		return -1;
	snprintf(t.server, sizeof t.server, "https://127.0.0.1:%s", port);
	snprintf(path, sizeof path, "%s/ca.crt", dir);
	if (file_load(path, 1 << 20, &t.ca_pem, &t.ca_len) != FILE_OK)
		return -1;
	snprintf(t.token_file, sizeof t.token_file, "%s/token", dir);
	write_file("token", "tok-123\n", 8);
	return kube_init(&k, &t, NULL, err, sizeof err);
}

static void teardown(void)
{
	char cmd[300];

	kube_close(&k);
	if (srv > 0) {
		kill(srv, SIGTERM);
		waitpid(srv, NULL, 0);
	}
	kube_target_free(&t);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* What the recorder last received, NUL-terminated; its length, or -1. */
static long recorded(char *buf, size_t cap)
{
	char path[256];
	size_t n;

	snprintf(path, sizeof path, "%s/request", dir);
	if (file_read(path, buf, cap, &n) != FILE_OK)
		return -1;
	remove(path);
	return (long)n;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Splits a head (lines ending CRLF in got, LF in a golden file) into sorted header lines after the request line. */
static int head_lines(char *head, char **lines, int max)
{
	int n = 0;

	for (char *s = strtok(head, "\r\n"); s && n < max; s = strtok(NULL, "\r\n"))
		lines[n++] = s;
	if (n > 1)
		qsort(lines + 1, (size_t)n - 1, sizeof *lines, cmp_lines);
	return n;
}

/*
 * Whether a recorded request is the golden one: its request line and body exactly, its header
 * lines as a set (their order is the wire layer's business). "PORT" in the golden stands for
 * the recorder's port.
 */
static int same_request(const char *got, const char *golden)
{
	static char g[8192], w[8192];
	char *gl[32], *wl[32], *gb, *wb, *p;
	int ng, nw;

	snprintf(g, sizeof g, "%s", got);
	snprintf(w, sizeof w, "%s", golden);
	while ((p = strstr(w, "PORT")) != NULL) {
		size_t pl = strlen(port);
		memmove(p + pl, p + 4, strlen(p + 4) + 1);
		memcpy(p, port, pl);
	}
	if (!(gb = strstr(g, "\r\n\r\n")) || !(wb = strstr(w, "\n\n")))
		return 0;
	*gb = '\0';
	gb += 4;
	*wb = '\0';
	wb += 2;
	wb[strcspn(wb, "\n")] = '\0';   /* the golden file's last line end */
	if (strcmp(gb, wb) != 0) {
		fprintf(stderr, "  body:\n    got  %s\n    want %s\n", gb, wb);
		return 0;
	}
	ng = head_lines(g, gl, 32);
	nw = head_lines(w, wl, 32);
	for (int i = 0; i < ng || i < nw; i++)
		if (i >= ng || i >= nw || strcmp(gl[i], wl[i]) != 0) {
			fprintf(stderr, "  head line %d:\n    got  %s\n    want %s\n", i, i < ng ? gl[i] : "(none)",
			    i < nw ? wl[i] : "(none)");
			return 0;
		}
	return 1;
}

/* Compares the last request with kube/NAME. With KUBE_GOLDEN_WRITE=1 it writes it there instead
 * and answers 0: a run that wrote goldens compared nothing and must never pass. */
static int golden(const char *name)
{
	static char got[8192], want[8192];
	char path[128];
	size_t n;
	long len = recorded(got, sizeof got);

	snprintf(path, sizeof path, "kube/%s", name);
	if (len < 0)
		return 0;
	if (getenv("KUBE_GOLDEN_WRITE")) {
		FILE *f = fopen(path, "w");
		size_t pl = strlen(port);
		for (long i = 0; f && i < len; i++) {
			/* the golden says PORT where the recorder's port was, as same_request expects */
			if (got[i] == ':' && strncmp(got + i + 1, port, pl) == 0 && got[i + 1 + pl] == '\r') {
				fputs(":PORT", f);
				i += (long)pl;
			} else if (got[i] != '\r') {
				fputc(got[i], f);
			}
		}
		if (f)
			fputc('\n', f), fclose(f);
		fprintf(stderr, "  wrote %s (KUBE_GOLDEN_WRITE): not compared; read the diff, run again without it\n", path);
		return 0;
	}
	if (file_read(path, want, sizeof want, &n) != FILE_OK)
		return 0;
	return same_request(got, want);
}

static struct node_facts facts(const char *name, const char *rv)
{
	struct node_facts f;

	memset(&f, 0, sizeof f);
	snprintf(f.name, sizeof f.name, "%s", name);
	snprintf(f.uid, sizeof f.uid, "6f1c1f0e-uid-\"q\"");
	snprintf(f.rv, sizeof f.rv, "%s", rv);
	f.ready = NODE_READY_UNKNOWN;
	f.oos_taint = -1;
	return f;
}

#define ANNOTATION "github-runner.exadev/out-of-service-applied-at"
#define WHEN 1796007755   /* 2026-11-30T03:02:35Z */

static void t_taint_request(void)
{
	struct node_facts f = facts("agent-1.example", "4711\"\\\x01");

	f.has_taints = f.has_annotations = 1;
	check(kube_taint(&k, &f, ANNOTATION, WHEN) == KUBE_OK);
	check(golden("taint.http"));
	/* no taints and no annotations yet: the patch creates both */
	f.has_taints = f.has_annotations = 0;
	check(kube_taint(&k, &f, ANNOTATION, WHEN) == KUBE_OK);
	check(golden("taint-create.http"));
}

static void t_clear_request(void)
{
	struct node_facts f = facts("agent-1", "99");

	f.ready = NODE_READY_TRUE;
	f.has_taints = f.has_annotations = f.our_annotation = 1;
	f.oos_taint = 2;
	check(kube_clear(&k, &f, ANNOTATION) == KUBE_OK);
	check(golden("clear.http"));
	/* the taint already gone (removed by hand): only the annotation */
	f.oos_taint = -1;
	check(kube_clear(&k, &f, ANNOTATION) == KUBE_OK);
	check(golden("clear-annotation.http"));
}

static void t_delete_request(void)
{
	struct node_facts f = facts("agent-2", "1234");

	check(kube_delete(&k, &f) == KUBE_OK);
	check(golden("delete.http"));
}

/* A golden request as it would come off the wire: CRLF in the head, the port, no last line end. */
static void wire(const char *golden, char *out, size_t cap)
{
	const char *body = strstr(golden, "\n\n");
	size_t o = 0;

	for (const char *p = golden; *p && o + 8 < cap; p++) {
		if (*p == '\n' && body && p <= body + 1)
			out[o++] = '\r';
		if (!strncmp(p, "PORT", 4)) {
			o += (size_t)snprintf(out + o, cap - o, "%s", port);
			p += 3;
			continue;
		}
		out[o++] = *p;
	}
	if (o > 0 && out[o - 1] == '\n')
		o--;
	out[o] = '\0';
}

/*
 * Must-fail: the golden comparison is what keeps the resourceVersion guard in every change, so
 * it must fail on a patch whose test op is gone or names another resourceVersion, and on a
 * delete without its preconditions.
 */
static void t_golden_catches_a_missing_guard(void)
{
	static char want[8192], bad[8192];
	size_t n;
	char *p, *end;

	if (!check(file_read("kube/taint.http", want, sizeof want, &n) == FILE_OK))
		return;
	wire(want, bad, sizeof bad);
	check(same_request(bad, want));     /* the request itself matches */
	p = strstr(bad, "{\"op\":\"test\"");
	end = p ? strstr(p, "},") : NULL;
	if (check(p && end)) {
		memmove(p, end + 2, strlen(end + 2) + 1);
		check(!same_request(bad, want));
	}
	wire(want, bad, sizeof bad);
	p = strstr(bad, "4711");
	if (check(p != NULL)) {
		p[3] = '2';
		check(!same_request(bad, want));
	}
	if (!check(file_read("kube/delete.http", want, sizeof want, &n) == FILE_OK))
		return;
	wire(want, bad, sizeof bad);
	check(same_request(bad, want));
	p = strstr(bad, "\"preconditions\"");
	if (check(p != NULL)) {
		memcpy(p, "\"precondition_\"", 15);
		check(!same_request(bad, want));
	}
}

/*
 * Server dry run: dryRun=All on every write, and for the DELETE in its DeleteOptions body too,
 * since kube-apiserver ignores a DELETE's query parameters when it carries a body.
 */
static void t_dry_run_requests(void)
{
	static char want[8192], bad[8192];
	struct node_facts f = facts("agent-1", "99");
	size_t n;
	char *p;

	kube_dry_run(&k, 1);
	f.has_taints = f.has_annotations = 1;
	check(kube_taint(&k, &f, ANNOTATION, WHEN) == KUBE_OK);
	check(golden("taint-dry-run.http"));
	f.our_annotation = 1;
	f.oos_taint = 0;
	f.ready = NODE_READY_TRUE;
	check(kube_clear(&k, &f, ANNOTATION) == KUBE_OK);
	check(golden("clear-dry-run.http"));
	f = facts("agent-2", "1234");
	check(kube_delete(&k, &f) == KUBE_OK);
	check(golden("delete-dry-run.http"));
	kube_dry_run(&k, 0);
	check(kube_delete(&k, &f) == KUBE_OK);
	check(golden("delete.http"));

	/* must-fail: a dry-run delete with dryRun only in the query is not the golden one */
	if (!check(file_read("kube/delete-dry-run.http", want, sizeof want, &n) == FILE_OK))
		return;
	check(strstr(want, "DELETE /api/v1/nodes/agent-2?dryRun=All ") != NULL);
	check(strstr(want, "\"dryRun\":[\"All\"]") != NULL);
	wire(want, bad, sizeof bad);
	check(same_request(bad, want));
	p = strstr(bad, "\"dryRun\":[\"All\"],");
	if (check(p != NULL)) {
		memmove(p, p + 17, strlen(p + 17) + 1);
		check(!same_request(bad, want));
	}
}

static void t_answers_sorted(void)
{
	struct node_facts f = facts("agent-1", "7");
	char got[8192];

	f.has_taints = f.has_annotations = 1;
	/* a failed test op: reason Invalid, the generic message, no causes */
	answer("422 Unprocessable Entity", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
	    "\"message\":\"the server rejected our request due to an error in our request\",\"reason\":\"Invalid\",\"details\":{},\"code\":422}");
	check(kube_taint(&k, &f, ANNOTATION, WHEN) == KUBE_CHANGED);
	recorded(got, sizeof got);
	/* must-fail: a validation error is no "changed": it fails, with the API's words */
	answer("422 Unprocessable Entity", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
	    "\"message\":\"Node \\\"agent-1\\\" is invalid: spec.taints[0].effect: Unsupported value\",\"reason\":\"Invalid\","
	    "\"details\":{\"name\":\"agent-1\",\"kind\":\"Node\",\"causes\":[{\"reason\":\"FieldValueNotSupported\",\"field\":\"spec.taints[0].effect\"}]},\"code\":422}");
	check(kube_taint(&k, &f, ANNOTATION, WHEN) == KUBE_FAILED);
	check(strstr(kube_error(&k), "HTTP 422 Invalid: Node \"agent-1\" is invalid: spec.taints[0].effect") != NULL);
	recorded(got, sizeof got);
	/* nor is an admission denial */
	answer("422 Unprocessable Entity", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
	    "\"message\":\"nodes \\\"agent-1\\\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no\","
	    "\"reason\":\"Invalid\",\"details\":{\"name\":\"agent-1\",\"kind\":\"nodes\"},\"code\":422}");
	check(kube_clear(&k, &f, ANNOTATION) == KUBE_FAILED);
	check(strstr(kube_error(&k), "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no") != NULL);
	recorded(got, sizeof got);
	/* a delete's preconditions: 409; gone: 404 */
	answer("409 Conflict", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Operation cannot be fulfilled on Node \\\"agent-1\\\": the ResourceVersion in the precondition (7) does not match\",\"reason\":\"Conflict\",\"code\":409}");
	check(kube_delete(&k, &f) == KUBE_CHANGED);
	recorded(got, sizeof got);
	answer("404 Not Found", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"nodes \\\"agent-1\\\" not found\",\"reason\":\"NotFound\",\"code\":404}");
	check(kube_delete(&k, &f) == KUBE_GONE);
	recorded(got, sizeof got);
}

/* What the observer was told, in order. */
static char observed[256];

static void observe(void *ctx, const char *method, int status)
{
	size_t n = strlen(observed);

	(void)ctx;
	snprintf(observed + n, sizeof observed - n, "%s %d;", method, status);
}

/* The observer hears every request sent, each retry too, with its status. */
static void t_observer(void)
{
	struct node_facts f = facts("agent-1", "7");
	char got[8192];

	kube_observe(&k, observe, NULL);
	observed[0] = '\0';
	answer("404 Not Found", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"nodes \\\"agent-1\\\" not found\",\"reason\":\"NotFound\",\"code\":404}");
	check(kube_delete(&k, &f) == KUBE_GONE);
	recorded(got, sizeof got);
	answer("503 Service Unavailable\r\nRetry-After: 1", "{}");
	check(kube_clear(&k, &f, ANNOTATION) == KUBE_OK);    /* the recorder's next answer is 200 */
	recorded(got, sizeof got);
	check(strcmp(observed, "DELETE 404;PATCH 503;PATCH 200;") == 0);
	if (strcmp(observed, "DELETE 404;PATCH 503;PATCH 200;") != 0)
		fprintf(stderr, "  observed: %s\n", observed);
	kube_observe(&k, NULL, NULL);
	answer("404 Not Found", "{}");
	check(kube_delete(&k, &f) == KUBE_GONE);
	recorded(got, sizeof got);
	check(strcmp(observed, "DELETE 404;PATCH 503;PATCH 200;") == 0);   /* none once unset */
}

/* A gate that opens for the first `open` questions, then stays shut; it counts the questions. */
struct gate {
	int open, asked;
};

static int gate(void *ctx)
{
	struct gate *g = ctx;

	return g->asked++ < g->open;
}

/*
 * Must-fail: a change the gate keeps shut is never on the wire, and the gate is asked again
 * before a retry (a 503's Retry-After here), so a replica that lost its Lease while it waited
 * does not send the retry. A list is never gated.
 */
static void t_gate(void)
{
	struct node_facts f = facts("agent-1", "7");
	struct node_keys keys = { "github-runner.exadev.io/removable", ANNOTATION, NULL };
	struct gate g = { 0, 0 };
	char got[8192];

	recorded(got, sizeof got);
	kube_gate(&k, gate, &g);
	check(kube_taint(&k, &f, ANNOTATION, 1796000000) == KUBE_GATED);
	check(g.asked == 1 && recorded(got, sizeof got) < 0);
	check(strstr(kube_error(&k), "patching agent-1") != NULL);
	g = (struct gate){ 1, 0 };
	answer("503 Service Unavailable\r\nRetry-After: 1", "{}");
	check(kube_delete(&k, &f) == KUBE_GATED);
	check(g.asked == 2);
	check(recorded(got, sizeof got) > 0 && strncmp(got, "DELETE ", 7) == 0);   /* the first try only */
	check(recorded(got, sizeof got) < 0);
	g = (struct gate){ 1, 0 };
	check(kube_clear(&k, &f, ANNOTATION) == KUBE_OK && g.asked == 1);
	recorded(got, sizeof got);
	g = (struct gate){ 0, 0 };
	answer("200 OK", "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[]}");
	check(kube_get_node(&k, "agent-1", &keys, &f) == KUBE_GONE && g.asked == 0);
	recorded(got, sizeof got);
	kube_gate(&k, NULL, NULL);
}

struct seen {
	int nodes, unreadable;
	char first[NODE_NAME_MAX + 1], why[256];
};

static int on_node(void *ctx, const struct node_facts *f, const char *why)
{
	struct seen *s = ctx;

	if (why) {
		s->unreadable++;
		snprintf(s->why, sizeof s->why, "%s", why);
	} else if (s->nodes++ == 0) {
		snprintf(s->first, sizeof s->first, "%s", f->name);
	}
	return 0;
}

static void on_page(void *ctx, const struct kube_page *pg)
{
	(void)ctx;
	(void)pg;
}

static void t_list_yields_facts(void)
{
	struct node_keys keys = { "github-runner.exadev.io/removable", ANNOTATION, NULL };
	struct seen s = { 0 };
	char got[8192];

	answer("200 OK", "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":["
	    "{\"metadata\":{\"name\":\"agent-1\",\"uid\":\"u1\",\"resourceVersion\":\"5\"},\"status\":{\"conditions\":"
	    "[{\"type\":\"Ready\",\"status\":\"Unknown\",\"lastTransitionTime\":\"2026-11-30T04:22:35Z\"}]}},"
	    "{\"metadata\":{\"name\":\"agent-2\",\"uid\":\"u2\"}}]}");
	check(kube_list_nodes(&k, 500, &keys, on_page, on_node, &s, NULL) == KUBE_OK);
	check(s.nodes == 1 && strcmp(s.first, "agent-1") == 0);
	check(s.unreadable == 1 && s.why[0] != '\0');
	check(recorded(got, sizeof got) > 0 && strncmp(got, "GET /api/v1/nodes?limit=500 HTTP/1.1\r\n", 38) == 0);
}

/* One node read again: a list selecting its name; none is gone, two are the server's error. */
static void t_get_node(void)
{
	struct node_keys keys = { "github-runner.exadev.io/removable", ANNOTATION, NULL };
	struct node_facts f;
	char got[8192];
	const char *one = "{\"metadata\":{\"name\":\"agent-1\",\"uid\":\"u1\",\"resourceVersion\":\"77\"},\"status\":{\"conditions\":"
	    "[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-11-30T04:22:35Z\"}]}}";
	char body[1024];

	snprintf(body, sizeof body, "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[%s]}", one);
	answer("200 OK", body);
	check(kube_get_node(&k, "agent-1", &keys, &f) == KUBE_OK);
	check(strcmp(f.rv, "77") == 0 && f.ready == NODE_READY_TRUE);
	check(recorded(got, sizeof got) > 0 &&
	    strncmp(got, "GET /api/v1/nodes?limit=2&fieldSelector=metadata.name%3Dagent-1 HTTP/1.1\r\n", 74) == 0);
	answer("200 OK", "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[]}");
	check(kube_get_node(&k, "agent-1", &keys, &f) == KUBE_GONE);
	snprintf(body, sizeof body, "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[%s,%s]}", one, one);
	answer("200 OK", body);
	check(kube_get_node(&k, "agent-1", &keys, &f) == KUBE_FAILED);
	/* must-fail: the server answering with another node is not that node's facts */
	snprintf(body, sizeof body, "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[%s]}", one);
	answer("200 OK", body);
	check(kube_get_node(&k, "agent-2", &keys, &f) == KUBE_FAILED);
	check(kube_get_node(&k, "Bad/Name", &keys, &f) == KUBE_FAILED);
}

/* The documented bound is 8 KiB of token; its file may end with a line break. */
static void t_token_bounds(void)
{
	static char tok[KUBE_TOKEN_MAX + 3];
	static struct kube k2;

	memset(tok, 'a', sizeof tok);
	memcpy(tok + KUBE_TOKEN_MAX, "\r\n", 2);
	write_file("token", tok, KUBE_TOKEN_MAX + 2);
	check(kube_init(&k2, &t, NULL, err, sizeof err) == 0);
	kube_close(&k2);
	tok[KUBE_TOKEN_MAX] = 'a';
	write_file("token", tok, KUBE_TOKEN_MAX + 1);
	check(kube_init(&k2, &t, NULL, err, sizeof err) == -1 && strstr(err, "longer than 8192 bytes"));
	write_file("token", "", 0);
	check(kube_init(&k2, &t, NULL, err, sizeof err) == -1 && strstr(err, "empty"));
	write_file("token", "tok 123\n", 8);
	check(kube_init(&k2, &t, NULL, err, sizeof err) == -1 && strstr(err, "cannot have") && !strstr(err, "tok 123"));
	write_file("token", "tok-123\n", 8);
}

static const struct test tests[] = {
	{ "taint_request", t_taint_request },
	{ "clear_request", t_clear_request },
	{ "delete_request", t_delete_request },
	{ "golden_catches_a_missing_guard", t_golden_catches_a_missing_guard },
	{ "dry_run_requests", t_dry_run_requests },
	{ "answers_sorted", t_answers_sorted },
	{ "list_yields_facts", t_list_yields_facts },
	{ "get_node", t_get_node },
	{ "token_bounds", t_token_bounds },
	{ "observer", t_observer },
	{ "gate", t_gate },
	{ 0, 0 }
};

int main(int argc, char **argv)
{
	int r;

	if (setup() < 0) {
		fprintf(stderr, "test_kube: cannot start the recorder or reach it: %s\n", err);
		teardown();
		printf("kube: 0 passed, 1 failed, 0 skipped\n");
		return 1;
	}
	r = run_tests("kube", tests, argc, argv);
	teardown();
	return r;
}
