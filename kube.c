/*
 * The Kubernetes API as noderecover uses it: paged node lists read as they arrive, JSON
 * patches and deletes guarded by the node's resourceVersion, the bearer token or client
 * certificate they carry, and the retries the API's status codes call for. Knows paths and
 * status codes; the rules live in policy.c, the wire in http.c. Allocates nothing per call.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "json.h"
#include "kube.h"
#include "plugin.h"
#include "text.h"

#define BODY_MAX 4096      /* what is kept of an error response to explain it */
#define PATCH_MAX 4096
#define READ_CHUNK 16384

/* Any 422 the API server makes itself when a JSON patch does not apply, a failed test op among
 * them, carries this message, reason Invalid and no causes; a validation error or an admission
 * denial says what is wrong instead. */
#define PATCH_NOT_APPLIED "the server rejected our request due to an error in our request"

/* KUBE_FAILED is -1, so a failure and its reason are one statement. */

void kube_gate(struct kube *k, http_gate_fn fn, void *ctx)
{
	k->gate = fn;
	k->gate_ctx = ctx;
}

void kube_dry_run(struct kube *k, int on)
{
	k->dry_run = on != 0;
}

void kube_observe(struct kube *k, kube_observe_fn fn, void *ctx)
{
	k->observe = fn;
	k->observe_ctx = ctx;
}

const char *kube_error(const struct kube *k)
{
	return k->err;
}

char *kube_clean(const struct kube *k, char *out, size_t cap, const char *s)
{
	return text_clean(out, cap, s, strlen(s), k->token, strlen(k->token));
}

int kube_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > NODE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || i == n - 1 || (c != '-' && c != '.')))
			return 0;
	}
	return 1;
}

/*
 * Reads the token file again when it is older than KUBE_TOKEN_REREAD, or when forced, into a
 * buffer on the stack first: a failed read keeps the token we had. No allocation in the loop.
 */
static int load_token(struct kube *k, int force)
{
	/* the token, a line end (CRLF at most) and one byte to tell a longer file */
	char tok[KUBE_TOKEN_MAX + 3];
	time_t now = time(NULL);
	size_t n = 0;
	int r;

	if (!k->t->token_file[0] || (!force && k->token_read && now - k->token_read < KUBE_TOKEN_REREAD))
		return 0;
	if ((r = file_read(k->t->token_file, tok, sizeof tok, &n)) != FILE_OK)
		return file_error(k->err, sizeof k->err, "token file", k->t->token_file, r, sizeof tok - 1);
	while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' ' || tok[n - 1] == '\t'))
		n--;
	if (!target_token_ok(tok, n)) {
		explicit_bzero(tok, sizeof tok);
		return TEXT_FAIL(k, "token file %.256s is empty, longer than %d bytes, or holds a character a bearer token cannot have",
		    k->t->token_file, KUBE_TOKEN_MAX);
	}
	memcpy(k->token, tok, n);
	k->token[n] = '\0';
	explicit_bzero(tok, sizeof tok);
	k->token_read = now;
	return 0;
}

/*
 * Takes the exec plugin's newest credential: its token, or its certificate and key, for which
 * the connection is closed and its TLS credentials loaded again (the next request reconnects).
 */
static int plugin_adopt(struct kube *k)
{
	const struct plugin *p = k->t->plugin;
	char name[TLS_NAME_MAX];

	memcpy(k->token, p->token, sizeof k->token);
	if (p->cert_pem) {
		http_close(&k->http);
		tls_free(&k->tls);
		if (tls_load(&k->tls, k->t->ca_pem, k->t->ca_len, p->cert_pem, p->cert_len, p->key_pem, p->key_len,
		    k->err, sizeof k->err) < 0)
			return -1;
		memcpy(name, k->http.tls.name, sizeof name);
		if (tls_client_init(&k->http.tls, &k->tls, name) < 0)
			return TEXT_FAIL(k, "TLS server name is too long");
	}
	k->plugin_gen = p->gen;
	return 0;
}

/*
 * With an exec plugin: runs it again when its credential expired, or when forced (a 401) and
 * no newer credential than this connection's is there yet, then takes the newest. A plugin
 * that fails leaves the request unsent, k->err saying why.
 */
static int plugin_fresh(struct kube *k, int force)
{
	struct plugin *p = k->t->plugin;

	if (!p)
		return 0;
	if ((force && p->gen == k->plugin_gen) || plugin_expired(p, time(NULL)))
		if (plugin_run(p, k->stop, k->err, sizeof k->err) < 0)
			return -1;
	return p->gen != k->plugin_gen ? plugin_adopt(k) : 0;
}

/* Splits https://HOST[:PORT][/PREFIX]; an IPv6 host comes in brackets. */
static int parse_server(struct kube *k, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *p = k->t->server + 8, *end, *h0, *h1;

	if (strncmp(k->t->server, "https://", 8) != 0)
		return -1;
	if (*p == '[') {
		h0 = p + 1;
		if (!(h1 = strchr(h0, ']')))
			return -1;
		end = h1 + 1;
	} else {
		h0 = p;
		h1 = h0 + strcspn(h0, ":/?#");
		end = h1;
	}
	if (h1 == h0 || (size_t)(h1 - h0) >= hostlen)
		return -1;
	memcpy(host, h0, (size_t)(h1 - h0));
	host[h1 - h0] = '\0';
	snprintf(port, portlen, "443");
	if (*end == ':') {
		size_t n = strspn(end + 1, "0123456789");
		if (n == 0 || n >= portlen || (end[1 + n] != '\0' && end[1 + n] != '/'))
			return -1;
		memcpy(port, end + 1, n);
		port[n] = '\0';
		end += 1 + n;
	}
	if (*end != '\0' && *end != '/')
		return -1;
	if ((size_t)snprintf(k->prefix, sizeof k->prefix, "%s", end) >= sizeof k->prefix)
		return -1;
	for (size_t n = strlen(k->prefix); n > 0 && k->prefix[n - 1] == '/'; n--)
		k->prefix[n - 1] = '\0';
	if (strpbrk(k->prefix, "?# \r\n"))
		return -1;
	return 0;
}

int kube_init(struct kube *k, const struct kube_target *t, volatile sig_atomic_t *stop, char *err,
    size_t errlen)
{
	char host[256], port[8];

	memset(k, 0, sizeof *k);
	k->t = t;
	k->stop = stop;
	if (parse_server(k, host, sizeof host, port, sizeof port) < 0)
		return text_fail(err, errlen, "server '%.256s' is not https://HOST[:PORT][/PATH]", t->server);
	if (tls_load(&k->tls, t->ca_pem, t->ca_len, t->cert_pem, t->cert_len, t->key_pem,
	    t->key_len, err, errlen) < 0)
		return -1;
	/* allocated once here, not in the loop; untouched pages cost no memory until an object needs them */
	if ((k->item = malloc(KUBE_NODE_MAX)) == NULL) {
		text_fail(err, errlen, "out of memory for the %d KiB object buffer", KUBE_NODE_MAX / 1024);
		goto failed;
	}
	if (http_init(&k->http, &k->tls, host, port, t->tls_server_name) < 0) {
		text_fail(err, errlen, "%s", k->http.err);
		goto failed;
	}
	k->http.stop = k->stop;
	if (t->plugin) {
		/* the plugin's credential, from its run at start-up (settings_target) or a later one */
		if (plugin_adopt(k) < 0) {
			text_fail(err, errlen, "%s", k->err);
			goto failed;
		}
	} else if (t->token) {
		size_t n = strlen(t->token);
		if (!target_token_ok(t->token, n)) {
			text_fail(err, errlen, "the kubeconfig's token is empty, longer than %d bytes, or holds a character a bearer token cannot have",
			    KUBE_TOKEN_MAX);
			goto failed;
		}
		memcpy(k->token, t->token, n + 1);
	} else if (load_token(k, 1) < 0) {
		text_fail(err, errlen, "%s", k->err);
		goto failed;
	}
	return 0;
failed:
	kube_close(k);
	return -1;
}

void kube_close(struct kube *k)
{
	http_close(&k->http);
	tls_free(&k->tls);
	free(k->item);
	k->item = NULL;
	explicit_bzero(k->token, sizeof k->token);
}

/*
 * Sends a request and reads the response head, retrying what is worth retrying: a dropped
 * connection or a 5xx with backoff, a 429 or 503 after its Retry-After, a 401 once after
 * reading the token file again (the kubelet may have rotated it). Returns 0 with *r filled
 * and the body unread, HTTP_GATED when b's gate kept it unsent, or -1 with k->err set. A
 * retried PATCH or DELETE is safe: its resourceVersion precondition fails if the first attempt
 * went through.
 */
static int request(struct kube *k, const char *method, const char *path, const char *ctype,
    const char *body, size_t len, const struct http_bounds *b, int retries, struct http_response *r)
{
	char headers[KUBE_TOKEN_MAX + 256];
	int reread = 0;

	for (int attempt = 0;; attempt++) {
		size_t n = 0;
		long wait;

		if (k->stop && *k->stop) {
			TEXT_FAIL(k, "stopped before sending %s %s", method, path);
			return -1;
		}
		if (load_token(k, 0) < 0 || plugin_fresh(k, 0) < 0)
			return -1;
		/* JSON is what json.c reads; http.c knows no media type */
		n = (size_t)snprintf(headers, sizeof headers, "Accept: application/json\r\n");
		if (k->token[0])
			n += (size_t)snprintf(headers + n, sizeof headers - n, "Authorization: Bearer %s\r\n", k->token);
		if (ctype && n < sizeof headers)
			n += (size_t)snprintf(headers + n, sizeof headers - n, "Content-Type: %s\r\n", ctype);
		if (n >= sizeof headers) {
			TEXT_FAIL(k, "request headers too long");
			return -1;
		}
		int sent = http_request(&k->http, method, path, headers, body, len, b, r);
		if (sent == HTTP_GATED) {
			memset(headers, 0, sizeof headers);
			TEXT_FAIL(k, "%s", k->http.err);
			return HTTP_GATED;
		}
		if (sent < 0) {
			char reason[sizeof k->http.err];
			if (k->observe)
				k->observe(k->observe_ctx, method, 0);
			memcpy(reason, k->http.err, sizeof reason);
			memset(headers, 0, sizeof headers);
			/* A refused certificate or a garbage answer will not change in a second, and
			 * a server that let a request time out has had its chance this pass. */
			if (k->http.permanent || k->http.expired || k->http.stopped || attempt >= retries) {
				TEXT_FAIL(k, "%s", k->http.err);
				return -1;
			}
			if (http_sleep(&k->http, 1000L << attempt, b ? b->until : 0) < 0) {
				TEXT_FAIL(k, "%s; before that, %.200s", k->http.err, reason);
				return -1;
			}
			continue;
		}
		memset(headers, 0, sizeof headers);
		if (k->observe)
			k->observe(k->observe_ctx, method, r->status);
		/* a rotated token file, or an exec plugin's credential revoked before its time */
		if (r->status == 401 && (k->t->token_file[0] || k->t->plugin) && !reread) {
			reread = 1;
			http_discard(&k->http);
			if (load_token(k, 1) < 0 || plugin_fresh(k, 1) < 0)
				return -1;
			attempt--;
			continue;
		}
		if (r->status == 429 || r->status == 503)
			wait = r->retry_after >= 0 ? r->retry_after : 1L << attempt;
		else if (r->status == 500 || r->status == 502 || r->status == 504)
			wait = 1L << attempt;
		else
			return 0;
		if (attempt >= retries)
			return 0;
		if (wait < 1)
			wait = 1;
		if (wait > KUBE_RETRY_AFTER_MAX)
			wait = KUBE_RETRY_AFTER_MAX;
		http_discard(&k->http);
		/* a wait that would outlast the request's deadline, or a stop, ends it now */
		if (http_sleep(&k->http, wait * 1000, b ? b->until : 0) < 0) {
			TEXT_FAIL(k, "HTTP %d, asked to wait %lds: %s", r->status, wait, k->http.err);
			return -1;
		}
	}
}

/* Puts what was being done in front of the reason already in k->err. */
static enum kube_result prefix_reason(struct kube *k, const char *what)
{
	char reason[sizeof k->err];

	memcpy(reason, k->err, sizeof reason);
	return TEXT_FAIL(k, "%s: %.400s", what, reason);
}

/*
 * Turns a refused request into one line: what, the status, and the server's reason. Returns
 * KUBE_FAILED, or KUBE_CHANGED for a 422 the API server makes when a JSON patch does not apply
 * (a failed resourceVersion test), which still leaves its line in k->err.
 */
static enum kube_result refusal_reason(struct kube *k, const char *what, const struct http_response *r)
{
	char body[BODY_MAX + 1], reason[64], msg[300], said[400], why[100];
	size_t n = 0;
	long got;
	int changed;

	while (n < BODY_MAX && (got = http_read(&k->http, body + n, BODY_MAX - n)) > 0)
		n += (size_t)got;
	body[n] = '\0';
	http_discard(&k->http);
	if (json_status(body, n, reason, sizeof reason, msg, sizeof msg) < 0 || !msg[0]) {
		/* Not a Status (a 429's body is plain text): its first line, made printable. */
		size_t i;
		for (i = 0; i < n && i < sizeof msg - 1 && body[i] != '\n' && body[i] != '\r'; i++)
			msg[i] = body[i];
		msg[i] = '\0';
		reason[0] = '\0';
	}
	changed = r->status == 422 && strcmp(reason, "Invalid") == 0 && strcmp(msg, PATCH_NOT_APPLIED) == 0;
	/* the server's words may echo the token, or be anything but one line of text */
	kube_clean(k, said, sizeof said, msg);
	kube_clean(k, why, sizeof why, reason);
	TEXT_FAIL(k, "%s: HTTP %d%s%s%s%s", what, r->status, why[0] ? " " : "", why,
	    said[0] ? ": " : "", said);
	return changed ? KUBE_CHANGED : KUBE_FAILED;
}

/* kube_call and kube_call_within: b bounds the request, its retries and its body (NULL: the defaults). */
static int call_bounded(struct kube *k, const struct http_bounds *b, const char *what, const char *method,
    const char *path, const char *body, size_t len, char *out, size_t cap)
{
	char full[TARGET_PATH_MAX];
	struct http_response r;
	size_t n = 0;
	long got = 0;

	if ((size_t)snprintf(full, sizeof full, "%s%s", k->prefix, path) >= sizeof full)
		return TEXT_FAIL(k, "%s: path too long", what);
	if (request(k, method, full, !body ? NULL : strcmp(method, "PATCH") ? "application/json" : "application/json-patch+json",
	    body, len, b, KUBE_RETRIES, &r) < 0)
		return prefix_reason(k, what);
	if (!kube_done(r.status)) {
		refusal_reason(k, what, &r);
		return r.status;
	}
	if (out == NULL || cap == 0) {
		http_discard(&k->http);
		return r.status;
	}
	while (n < cap - 1 && (got = http_read(&k->http, out + n, cap - 1 - n)) > 0)
		n += (size_t)got;
	out[n] = '\0';
	if (got < 0)
		return TEXT_FAIL(k, "%s: reading the answer: %s", what, k->http.err);
	if (n == cap - 1 && http_read(&k->http, full, 1) != 0) {
		http_close(&k->http);
		return TEXT_FAIL(k, "%s: the answer is over %zu bytes", what, cap - 1);
	}
	return r.status;
}

int kube_call(struct kube *k, const char *what, const char *method, const char *path,
    const char *body, size_t len, char *out, size_t cap)
{
	return call_bounded(k, NULL, what, method, path, body, len, out, cap);
}

int kube_call_within(struct kube *k, long ms, const char *what, const char *method, const char *path,
    const char *body, size_t len, char *out, size_t cap)
{
	struct http_bounds b = { .response_ms = ms, .until = clock_after(ms) };

	return call_bounded(k, &b, what, method, path, body, len, out, cap);
}

/* What the list splitter's item callback needs to hand each node's facts up. */
struct yield {
	const struct node_keys *keys;
	kube_node_fn node;
	void *ctx;
	struct node_facts f;
};

/* Reads one item of the list into facts (or a reason it could not be read) and hands them up. */
static int on_item(void *ctx, const struct json_item *it)
{
	struct yield *y = ctx;
	char why[160];

	if (!it->p) {
		memset(&y->f, 0, sizeof y->f);
		snprintf(why, sizeof why, "its object is over %d KiB (%zu bytes), more than noderecover reads",
		    KUBE_NODE_MAX / 1024, it->len);
		return y->node(y->ctx, &y->f, why);
	}
	if (json_node_facts(it, y->keys, &y->f, why, sizeof why) < 0)
		return y->node(y->ctx, &y->f, why);
	return y->node(y->ctx, &y->f, NULL);
}

/* select: "" for every node, or a field selector already escaped for the query. */
static enum kube_result list_pages(struct kube *k, long limit, const char *select,
    const struct http_bounds *b, const struct node_keys *keys, kube_page_fn page, kube_node_fn node, void *ctx,
    char *rv, int first_only)
{
	struct json_list *l = &k->reader;
	struct yield y = { .keys = keys, .node = node, .ctx = ctx };
	char path[TARGET_PATH_MAX + 3 * JSON_CONTINUE_MAX];
	char cont[JSON_CONTINUE_MAX + 1] = "";
	char chunk[READ_CHUNK];
	int restarted = 0;
	long pages = 0;

	for (;;) {
		struct http_response r;
		long got;

		if (k->stop && *k->stop)
			return TEXT_FAIL(k, "listing nodes: stopping");
		if ((size_t)snprintf(path, sizeof path, "%s/api/v1/nodes?limit=%ld%s%s", k->prefix, limit, select,
		    cont[0] ? "&continue=" : "") >= sizeof path || text_query_escape(path, sizeof path, cont) < 0)
			return TEXT_FAIL(k, "listing nodes: continue token too long");
		if (request(k, "GET", path, NULL, NULL, 0, b, KUBE_RETRIES, &r) < 0)
			return prefix_reason(k, "listing nodes");
		if (r.status == 410 && !restarted) {
			/* The continue token expired (etcd compacted): start again, once a pass. */
			http_discard(&k->http);
			restarted = 1;
			cont[0] = '\0';
			continue;
		}
		if (r.status != 200)
			return refusal_reason(k, "listing nodes", &r);
		if (strncmp(r.content_type, "application/json", 16) != 0) {
			char ct[4 * sizeof r.content_type];
			http_close(&k->http);
			text_clean(ct, sizeof ct, r.content_type, strlen(r.content_type), k->token, strlen(k->token));
			return TEXT_FAIL(k, "listing nodes: the server answered with '%s', not JSON", ct);
		}
		page(ctx, &(struct kube_page){ .first = !cont[0], .date = r.date });
		json_list_init(l, k->item, KUBE_NODE_MAX, keys, on_item, &y);
		while ((got = http_read(&k->http, chunk, sizeof chunk)) > 0) {
			int v = json_list_feed(l, chunk, (size_t)got);
			if (v != 0) {
				http_close(&k->http);
				if (v < 0)
					return TEXT_FAIL(k, "reading the node list: %s", l->err);
				return TEXT_FAIL(k, "listing nodes: stopped");
			}
		}
		if (got < 0) {
			http_close(&k->http);
			return TEXT_FAIL(k, "reading the node list: %s", k->http.err);
		}
		if (json_list_end(l) < 0)
			return TEXT_FAIL(k, "reading the node list: %s", l->err);
		if (!l->cont[0] || first_only) {
			if (rv)
				memcpy(rv, l->rv, sizeof l->rv);
			return KUBE_OK;
		}
		/* A server that hands back the token it was given, or pages without end, would
		 * hold the pass forever: a list is never longer than KUBE_PAGES_MAX pages. */
		if (strcmp(cont, l->cont) == 0)
			return TEXT_FAIL(k, "reading the node list: the server gave the same continue token again");
		if (++pages >= KUBE_PAGES_MAX)
			return TEXT_FAIL(k, "reading the node list: more than %d pages", KUBE_PAGES_MAX);
		memcpy(cont, l->cont, sizeof cont);
	}
}

/*
 * A server that trickles bytes, or streams a list without end, must not hold the pass: each
 * page has a deadline of its own and no page outlives the whole list's.
 */
enum kube_result kube_list_nodes(struct kube *k, long limit, const struct node_keys *keys,
    kube_page_fn page, kube_node_fn node, void *ctx, char rv[NODE_RV_MAX + 1])
{
	struct http_bounds b = { .response_ms = KUBE_PAGE_SECONDS * 1000L, .until = clock_after(KUBE_LIST_SECONDS * 1000L) };
	enum kube_result res = list_pages(k, limit, "", &b, keys, page, node, ctx, rv, 0);

	if (res != KUBE_OK && clock_ms() >= b.until)
		return TEXT_FAIL(k, "reading the node list: not done after %ds", KUBE_LIST_SECONDS);
	return res;
}

/* ---- The watch ---- */

/* Ends the stream with end; the reason is kept for kube_watch_read's line. Returns 1 (stop). */
__attribute__((format(printf, 3, 4)))
static int watch_stop(struct kube_watch *w, enum kube_watch_end end, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->why, sizeof w->why, fmt, ap);
	va_end(ap);
	w->end = end;
	return 1;
}

/* One event of the stream to the caller, or the reason the stream must end (w->end). */
static int stream_event(void *ctx, const char *type, const struct json_item *obj)
{
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	struct kube_watch *w = ctx;
	struct kube_event ev = { 0 };
	struct node_facts f;
	char rv[NODE_RV_MAX + 1], kind[16], why[200];
	int t;

	for (t = 0; t < 5 && strcmp(type, types[t]) != 0; t++)
		;
	if (t == 5) {
		char said[40];
		text_clean(said, sizeof said, type, strlen(type), NULL, 0);
		return watch_stop(w, KUBE_WATCH_BROKEN, "event %d has the type '%s', not one a watch sends", w->k->reader.nitems, said);
	}
	if (!obj)
		return watch_stop(w, KUBE_WATCH_BROKEN, "event %d (%s) has no object", w->k->reader.nitems, type);
	ev.type = (enum kube_event_type)t;
	if (!obj->p && (ev.type == KUBE_ERROR || ev.type == KUBE_BOOKMARK))
		return watch_stop(w, KUBE_WATCH_BROKEN, "event %d (%s): its object is over %d KiB (%zu bytes), more than noderecover reads",
		    w->k->reader.nitems, type, KUBE_NODE_MAX / 1024, obj->len);
	if (!obj->p) {
		/* a Node too large to read is skipped, as a list skips it: its name is not known, and
		 * ending the stream for it would make a list of each of its events */
		snprintf(why, sizeof why, "event %d (%s): its object is over %d KiB (%zu bytes), more than noderecover reads",
		    w->k->reader.nitems, type, KUBE_NODE_MAX / 1024, obj->len);
		memset(&f, 0, sizeof f);
		ev.rv = "";
		ev.f = &f;
		ev.why = why;
		w->fn(w->ctx, &ev);
		return 0;
	}
	if (ev.type == KUBE_ERROR) {
		char reason[64], msg[300], reason_said[100], msg_said[400];
		ev.rv = "";
		w->fn(w->ctx, &ev);
		if (json_status(obj->p, obj->len, reason, sizeof reason, msg, sizeof msg) < 0)
			return watch_stop(w, KUBE_WATCH_BROKEN, "event %d: an ERROR whose object is not a Status", w->k->reader.nitems);
		/* the cacher's 410 for a resourceVersion it no longer has: only a new list helps. Known
		 * by its reason or, as client-go's IsResourceExpired does, by its code 410 alone */
		return watch_stop(w, strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0
		    || json_status_code(obj->p, obj->len) == 410 ? KUBE_WATCH_EXPIRED
		    : KUBE_WATCH_FAILED, "the server ended the watch: %s%s%s", kube_clean(w->k, reason_said, sizeof reason_said, reason),
		    reason[0] ? ": " : "", kube_clean(w->k, msg_said, sizeof msg_said, msg));
	}
	if (json_item_string(obj, JSON_KIND, kind, sizeof kind, why, sizeof why) < 0 || strcmp(kind, "Node") != 0)
		return watch_stop(w, KUBE_WATCH_BROKEN, "event %d (%s) is not about a Node (%s)", w->k->reader.nitems, type,
		    kind[0] ? "another kind" : why);
	if (json_item_string(obj, JSON_RV, rv, sizeof rv, why, sizeof why) < 0)
		return watch_stop(w, KUBE_WATCH_BROKEN, "event %d (%s): %s", w->k->reader.nitems, type, why);
	ev.rv = rv;
	if (ev.type != KUBE_BOOKMARK) {
		ev.f = &f;
		if (json_node_facts(obj, w->keys, &f, why, sizeof why) < 0)
			ev.why = why;
	}
	w->fn(w->ctx, &ev);
	return 0;
}

enum kube_watch_end kube_watch_open(struct kube *k, struct kube_watch *w, const char *rv, long timeout_s,
    const struct node_keys *keys, kube_event_fn fn, void *ctx, int64_t *date, long *retry_after)
{
	char path[TARGET_PATH_MAX + 3 * NODE_RV_MAX + 128];
	/* the server ends the stream at timeout_s; a little more for its last bookmark and the close */
	struct http_bounds b = { .response_ms = (timeout_s + KUBE_WATCH_SLACK) * 1000L };
	struct http_response r;

	*retry_after = -1;
	*date = -1;
	if ((size_t)snprintf(path, sizeof path, "%s/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=%ld&resourceVersion=",
	    k->prefix, timeout_s) >= sizeof path || text_query_escape(path, sizeof path, rv) < 0)
		return TEXT_FAIL(k, "watching nodes: resourceVersion too long"), KUBE_WATCH_FAILED;
	/* one try: the caller backs off, so a watch never waits inside a request */
	if (request(k, "GET", path, NULL, NULL, 0, &b, 0, &r) < 0)
		return prefix_reason(k, "watching nodes"), KUBE_WATCH_FAILED;
	if (r.status == 410) {
		http_discard(&k->http);
		TEXT_FAIL(k, "watching nodes from resourceVersion %.64s: HTTP 410, too old", rv);
		return KUBE_WATCH_EXPIRED;
	}
	if (r.status != 200) {
		*retry_after = r.status == 429 || r.status == 503 ? r.retry_after : -1;
		refusal_reason(k, "watching nodes", &r);
		return KUBE_WATCH_FAILED;
	}
	if (strncmp(r.content_type, "application/json", 16) != 0) {
		char ct[4 * sizeof r.content_type];
		http_close(&k->http);
		text_clean(ct, sizeof ct, r.content_type, strlen(r.content_type), k->token, strlen(k->token));
		TEXT_FAIL(k, "watching nodes: the server answered with '%s', not JSON", ct);
		return KUBE_WATCH_BROKEN;
	}
	json_watch_init(&k->reader, k->item, KUBE_NODE_MAX, keys, stream_event, w);
	w->k = k;
	w->keys = keys;
	w->fn = fn;
	w->ctx = ctx;
	w->end = KUBE_WATCH_OPEN;
	*date = r.date;
	return KUBE_WATCH_OPEN;
}

enum kube_watch_end kube_watch_read(struct kube_watch *w, int64_t until)
{
	struct kube *k = w->k;
	struct json_list *l = &k->reader;
	char chunk[READ_CHUNK];
	int seen = l->nitems;

	for (;;) {
		long got = http_read_wait(&k->http, chunk, sizeof chunk, until, KUBE_WATCH_GRACE_MS);

		if (got == HTTP_IDLE)
			return KUBE_WATCH_OPEN;
		if (got < 0) {
			TEXT_FAIL(k, "reading the watch: %s", k->http.err);
			return KUBE_WATCH_FAILED;
		}
		if (got == 0) {
			if (json_list_end(l) < 0) {
				TEXT_FAIL(k, "reading the watch: %s", l->err);
				return KUBE_WATCH_BROKEN;
			}
			return KUBE_WATCH_ENDED;
		}
		if (json_list_feed(l, chunk, (size_t)got) != 0) {
			http_close(&k->http);
			if (w->end == KUBE_WATCH_OPEN) {
				TEXT_FAIL(k, "reading the watch: %s", l->err);
				return KUBE_WATCH_BROKEN;
			}
			TEXT_FAIL(k, "%s", w->why);
			return w->end;
		}
		/* the caller decides on what the events changed, then reads on */
		if (l->nitems != seen || clock_ms() >= until)
			return KUBE_WATCH_OPEN;
	}
}

void kube_watch_close(struct kube_watch *w)
{
	http_close(&w->k->http);
}

/* What kube_get_node keeps of its one-item list. */
struct one {
	struct node_facts *f;
	int found;
	char why[160];
};

static int on_one(void *ctx, const struct node_facts *f, const char *why)
{
	struct one *o = ctx;

	if (o->found++)
		return 1;   /* a name selects one node: a second is the server's error */
	*o->f = *f;
	if (why)
		snprintf(o->why, sizeof o->why, "%s", why);
	return 0;
}

static void on_one_page(void *ctx, const struct kube_page *pg)
{
	if (pg->first)
		((struct one *)ctx)->found = 0;
}

enum kube_result kube_get_node(struct kube *k, const char *name, const struct node_keys *keys,
    struct node_facts *f)
{
	char select[NODE_NAME_MAX + 48];
	struct one o = { .f = f };
	enum kube_result r;

	if (!kube_name_ok(name))
		return TEXT_FAIL(k, "not a node name, not put into a query");
	/* A list with a field selector, not a GET of the object: the same reader, the same facts. */
	snprintf(select, sizeof select, "&fieldSelector=metadata.name%%3D%s", name);
	r = list_pages(k, 2, select, &(struct http_bounds){ .response_ms = KUBE_PAGE_SECONDS * 1000L }, keys, on_one_page, on_one, &o,
	    NULL, 0);
	if (r != KUBE_OK)
		return o.found > 1 ? TEXT_FAIL(k, "reading node %s: the server listed more than one node of that name", name) : r;
	if (!o.found)
		return KUBE_GONE;
	if (o.why[0])
		return TEXT_FAIL(k, "reading node %s: %s", name, o.why);
	if (strcmp(f->name, name) != 0)
		return TEXT_FAIL(k, "reading node %s: the server answered with another node", name);
	return KUBE_OK;
}

static void ignore_page(void *ctx, const struct kube_page *pg)
{
	(void)ctx;
	(void)pg;
}

static int ignore_node(void *ctx, const struct node_facts *f, const char *why)
{
	(void)ctx;
	(void)f;
	(void)why;
	return 0;
}

enum kube_result kube_nodes_rv(struct kube *k, char rv[NODE_RV_MAX + 1])
{
	static const struct node_keys none = { NULL, NULL, NULL };
	enum kube_result r;

	rv[0] = '\0';
	r = list_pages(k, 1, "", &(struct http_bounds){ .response_ms = KUBE_PAGE_SECONDS * 1000L }, &none, ignore_page,
	    ignore_node, NULL, rv, 1);
	if (r == KUBE_OK && !rv[0])
		return TEXT_FAIL(k, "reading the nodes' resourceVersion: the list had none");
	return r;
}

/* Sends one change to a node and sorts the answer. */
static enum kube_result change(struct kube *k, const char *method, const struct node_facts *f,
    const char *ctype, const char *body, size_t len)
{
	char path[TARGET_PATH_MAX], what[NODE_NAME_MAX + 32];
	struct http_response r;

	if (!kube_name_ok(f->name))
		return TEXT_FAIL(k, "not a node name, not put into a path");
	if ((size_t)snprintf(path, sizeof path, "%s/api/v1/nodes/%s%s", k->prefix, f->name,
	    k->dry_run ? "?dryRun=All" : "") >= sizeof path)
		return TEXT_FAIL(k, "path too long");
	snprintf(what, sizeof what, "%s %s", strcmp(method, "DELETE") == 0 ? "deleting" : "patching", f->name);
	switch (request(k, method, path, ctype, body, len, &(struct http_bounds){ .response_ms = HTTP_RESPONSE_MS, .gate = k->gate, .gate_ctx = k->gate_ctx },
	    KUBE_RETRIES, &r)) {
	case 0:
		break;
	case HTTP_GATED:
		prefix_reason(k, what);
		return KUBE_GATED;
	default:
		return prefix_reason(k, what);
	}
	if (r.status >= 200 && r.status < 300) {
		http_discard(&k->http);
		return KUBE_OK;
	}
	/* 409 is a failed delete precondition: the node changed since it was listed. A 422 is
	 * that too only when the patch's test failed; refusal_reason() tells it from a validation
	 * error or an admission denial, which fail the pass with the API's message. */
	if (r.status == 409) {
		refusal_reason(k, what, &r);
		return KUBE_CHANGED;
	}
	if (r.status == 404) {
		http_discard(&k->http);
		return KUBE_GONE;
	}
	return refusal_reason(k, what, &r);
}

/* The guard every patch starts with: act only on the node as it was listed. */
static void test_rv(struct json_buf *b, const struct node_facts *f)
{
	json_raw(b, "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":");
	json_str(b, f->rv);
	json_raw(b, "}");
}

enum kube_result kube_taint(struct kube *k, const struct node_facts *f, const char *annotation,
    time_t now)
{
	char body[PATCH_MAX], when[TEXT_TIME_LEN + 1];
	struct json_buf b;
	int n;

	text_time(when, now);
	json_buf_init(&b, body, sizeof body);
	test_rv(&b, f);
	/* spec.taints and metadata.annotations may be absent: then the patch creates them. */
	json_raw(&b, f->has_taints ? ",{\"op\":\"add\",\"path\":\"/spec/taints/-\",\"value\":"
	    : ",{\"op\":\"add\",\"path\":\"/spec/taints\",\"value\":[");
	json_raw(&b, "{\"key\":\"" NODE_TAINT_KEY "\",\"value\":\"" NODE_TAINT_VALUE "\",\"effect\":\""
	    NODE_TAINT_EFFECT "\",\"timeAdded\":\"");
	json_raw(&b, when);
	json_raw(&b, f->has_taints ? "\"}}" : "\"}]}");
	if (f->has_annotations) {
		json_raw(&b, ",{\"op\":\"add\",\"path\":\"/metadata/annotations/");
		json_ptr(&b, annotation);
		json_raw(&b, "\",\"value\":\"");
		json_raw(&b, when);
		json_raw(&b, "\"}]");
	} else {
		json_raw(&b, ",{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{");
		json_str(&b, annotation);
		json_raw(&b, ":\"");
		json_raw(&b, when);
		json_raw(&b, "\"}}]");
	}
	if ((n = json_buf_end(&b)) < 0)
		return TEXT_FAIL(k, "patch for %s too long", f->name);
	return change(k, "PATCH", f, "application/json-patch+json", body, (size_t)n);
}

enum kube_result kube_clear(struct kube *k, const struct node_facts *f, const char *annotation)
{
	char body[PATCH_MAX], idx[16];
	struct json_buf b;
	int n;

	json_buf_init(&b, body, sizeof body);
	test_rv(&b, f);
	if (f->oos_taint >= 0) {
		snprintf(idx, sizeof idx, "%d", f->oos_taint);
		json_raw(&b, ",{\"op\":\"test\",\"path\":\"/spec/taints/");
		json_raw(&b, idx);
		json_raw(&b, "/key\",\"value\":\"" NODE_TAINT_KEY "\"},{\"op\":\"remove\",\"path\":\"/spec/taints/");
		json_raw(&b, idx);
		json_raw(&b, "\"}");
	}
	if (f->our_annotation) {
		json_raw(&b, ",{\"op\":\"remove\",\"path\":\"/metadata/annotations/");
		json_ptr(&b, annotation);
		json_raw(&b, "\"}");
	}
	json_raw(&b, "]");
	if ((n = json_buf_end(&b)) < 0)
		return TEXT_FAIL(k, "patch for %s too long", f->name);
	return change(k, "PATCH", f, "application/json-patch+json", body, (size_t)n);
}

enum kube_result kube_delete(struct kube *k, const struct node_facts *f)
{
	char body[PATCH_MAX];
	struct json_buf b;
	int n;

	/* kubectl delete cannot send preconditions; they keep a node that came back (or was
	 * relabelled) since it was listed from being deleted on stale facts. */
	json_buf_init(&b, body, sizeof body);
	json_raw(&b, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",");
	/* kube-apiserver reads a DELETE's query parameters only when it has no body: a dryRun in
	 * the query alone would be ignored and the node really deleted. It is in both. */
	if (k->dry_run)
		json_raw(&b, "\"dryRun\":[\"All\"],");
	json_raw(&b, "\"preconditions\":{\"uid\":");
	json_str(&b, f->uid);
	json_raw(&b, ",\"resourceVersion\":");
	json_str(&b, f->rv);
	json_raw(&b, "}}");
	if ((n = json_buf_end(&b)) < 0)
		return TEXT_FAIL(k, "delete options for %s too long", f->name);
	return change(k, "DELETE", f, "application/json", body, (size_t)n);
}
