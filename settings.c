/*
 * The table of settings (flag, variable, default, kind, bounds, field, meaning, how the pod
 * gets it), the reading of flags and variables by it, checked before anything is sent; and the
 * search for the cluster. Allocates only the target's copies of the CA and credentials; never
 * sends anything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kubeconfig.h"
#include "listen.h"
#include "plugin.h"
#include "settings.h"
#include "text.h"

#define FILE_MAX (1024 * 1024)
#define F(field) offsetof(struct settings, field)
_Static_assert(sizeof(struct settings) <= UINT16_MAX, "a row's field is 16 bits");

/* Each row's place in settings_rows, for the rules between settings. */
enum {
	O_TAINT, O_PRUNE, O_LABEL, O_POLL, O_WATCH, O_RELIST, O_ANNOTATION, O_MAX_UNKNOWN, O_COOLDOWN,
	O_EXCLUDE, O_DRY_RUN, O_EVENTS, O_SELF, O_LISTEN, O_LEADER, O_LEASE_NAME, O_LEASE_NS, O_FENCE, O_FENCE_NS,
	O_FENCE_MIN_SAFE, O_LOG_FORMAT,
	O_PAGE, O_OUTPUT, O_KUBECONFIG, O_CONTEXT, O_SERVER, O_CA, O_TOKEN, O_TLS_NAME,
	/* the fence agent's (docs/fence.md); --fence-namespace above is the agent's and the watcher's */
	O_FENCE_CHECK, O_FENCE_AFTER, O_FENCE_ISOLATED, O_FENCE_RENEW, O_FENCE_ACTION, O_FENCE_EXEC,
	O_FENCE_EXEC_TIMEOUT, O_FENCE_WATCHDOG, O_FENCE_WATCHDOG_TIMEOUT, O_FENCE_KUBELET, O_FENCE_LISTEN,
	O_FENCE_ADDRESS, O_FENCE_SECRET, O_COUNT
};

/*
 * The settings. The order is the pod's environment's in `manifests` (kept, so its output stays
 * the same), then what is not passed on. The shell watcher's variables (NODE_RECOVERY_AFTER_SECONDS,
 * _POLL_SECONDS, _ANNOTATION, _SELF_NODE, _PRUNE_AFTER_SECONDS, _PRUNE_LABEL) keep their names
 * and defaults: this is a drop-in replacement for it.
 */
const struct settings_row settings_rows[O_COUNT] = {
	[O_TAINT] = { .flag = "--taint-after", .arg = " DURATION", .env = "NODE_RECOVERY_AFTER_SECONDS",
		.unset = "required", .kind = SETTINGS_DURATION, .max = SETTINGS_MAX_SECONDS, .field = F(taint_after),
		.blank_unset = 1, .pod = SETTINGS_POD_ALWAYS,
		.meaning = "how long Ready may stay Unknown before the taint" },
	[O_PRUNE] = { .flag = "--prune-after", .arg = " DURATION", .env = "NODE_RECOVERY_PRUNE_AFTER_SECONDS",
		.unset = "empty: pruning off", .kind = SETTINGS_DURATION, .max = SETTINGS_MAX_SECONDS,
		.field = F(prune_after), .blank_unset = 1, .pod = SETTINGS_POD_PRUNING,
		.meaning = "how long before a removable node is deleted; more than the taint threshold" },
	[O_LABEL] = { .flag = "--prune-label", .arg = " KEY", .env = "NODE_RECOVERY_PRUNE_LABEL",
		.dflt = "github-runner.exadev.io/removable", .kind = SETTINGS_KEY, .field = F(prune_label),
		.what = "a label", .pod = SETTINGS_POD_PRUNING,
		.meaning = "the label whose value true makes a node removable" },
	[O_POLL] = { .flag = "--poll", .arg = " DURATION", .env = "NODE_RECOVERY_POLL_SECONDS", .dflt = "15s",
		.kind = SETTINGS_DURATION, .min = 1, .max = 86400, .field = F(poll), .pod = SETTINGS_POD_ALWAYS,
		.meaning = "time between passes (1s to 24h)" },
	[O_WATCH] = { .flag = "--watch", .arg = "=false", .env = "NODE_RECOVERY_WATCH", .dflt = "true",
		.kind = SETTINGS_BOOL, .field = F(watch), .alone = "true", .blank_unset = 1, .pod = SETTINGS_POD_CHANGED,
		.meaning = "run polls (a whole list every poll) instead of following a watch" },
	[O_RELIST] = { .flag = "--relist", .arg = " DURATION", .env = "NODE_RECOVERY_RELIST_SECONDS", .dflt = "600",
		.kind = SETTINGS_DURATION, .min = 1, .max = 86400, .field = F(relist), .blank_unset = 1,
		.pod = SETTINGS_POD_CHANGED, .meaning = "with the watch, a whole list at least this often" },
	[O_ANNOTATION] = { .flag = "--annotation", .arg = " KEY", .env = "NODE_RECOVERY_ANNOTATION",
		.dflt = "github-runner.exadev/out-of-service-applied-at", .kind = SETTINGS_KEY, .field = F(annotation),
		.what = "an annotation", .pod = SETTINGS_POD_ALWAYS,
		.meaning = "marks a taint as ours (its value: when we tainted)" },
	[O_MAX_UNKNOWN] = { .flag = "--max-unknown", .arg = " N|P%", .env = "NODE_RECOVERY_MAX_UNKNOWN", .dflt = "50%",
		.kind = SETTINGS_LIMIT, .min = 1, .max = 1000000000, .field = F(max_unknown), .pod = SETTINGS_POD_ALWAYS,
		.meaning = "storm guard: more Unknown nodes than this, no new taint and no delete (100% turns it off)" },
	[O_COOLDOWN] = { .flag = "--storm-cooldown", .arg = " DURATION", .env = "NODE_RECOVERY_STORM_COOLDOWN",
		.unset = "the taint threshold", .kind = SETTINGS_DURATION, .max = SETTINGS_MAX_SECONDS,
		.field = F(storm_cooldown), .pod = SETTINGS_POD_ALWAYS,
		.meaning = "the guard keeps holding this long after the count is back within the limit" },
	[O_EXCLUDE] = { .flag = "--exclude-label", .arg = " KEY", .env = "NODE_RECOVERY_EXCLUDE_LABEL",
		.dflt = "github-runner.exadev.io/no-recovery", .kind = SETTINGS_KEY, .field = F(exclude_label),
		.what = "a label", .pod = SETTINGS_POD_ALWAYS,
		.meaning = "a node labelled KEY=true is never tainted or deleted" },
	/* standing alone as kubectl's; a value needs --dry-run=server */
	[O_DRY_RUN] = { .flag = "--dry-run", .arg = "[=server]", .env = "NODE_RECOVERY_DRY_RUN", .unset = "off",
		.kind = SETTINGS_DRY_RUN, .field = F(dry_run), .alone = "client", .blank_unset = 1,
		.pod = SETTINGS_POD_CHANGED,
		.meaning = "decide, log Would ..., send no write; =server: every write with dryRun=All" },
	[O_EVENTS] = { .flag = "--events", .arg = "=false", .env = "NODE_RECOVERY_EVENTS", .dflt = "true",
		.kind = SETTINGS_BOOL, .field = F(events), .blank_unset = 1, .pod = SETTINGS_POD_CHANGED,
		.meaning = "no Events on the Node (none in a dry run either)" },
	/* never the node `manifests` ran on: the one the pod is scheduled to */
	[O_SELF] = { .flag = "--self-node", .arg = " NAME", .env = "NODE_RECOVERY_SELF_NODE",
		.unset = "outside a pod: the host name; in a pod: none", .kind = SETTINGS_NODE,
		.max = sizeof ((struct settings *)0)->self_node - 1, .field = F(self_node), .blank_unset = 1,
		.pod = SETTINGS_POD_FIELD, .pod_value = "spec.nodeName",
		.meaning = "the node the watcher runs on, never acted on" },
	/* in the pod, the port its probes and a scrape reach, whatever --listen `manifests` was given */
	[O_LISTEN] = { .flag = "--listen", .arg = " ADDR", .env = "NODE_RECOVERY_LISTEN", .unset = "empty: off",
		.kind = SETTINGS_ADDRESS, .field = F(listen), .blank_unset = 1, .pod = SETTINGS_POD_FIXED,
		.pod_value = ":" SETTINGS_POD_PORT,
		.meaning = "run serves /metrics, /livez and /readyz over plain HTTP on :PORT, IPv4:PORT or [IPv6]:PORT" },
	/* standing alone as kube-controller-manager's; the pod's two replicas always elect */
	[O_LEADER] = { .flag = "--leader-elect", .arg = "", .env = "NODE_RECOVERY_LEADER_ELECT", .unset = "off",
		.kind = SETTINGS_BOOL01, .field = F(leader_elect), .alone = "true", .blank_unset = 1,
		.pod = SETTINGS_POD_FIXED, .pod_value = "true",
		.meaning = "only the holder of a Lease lists and acts (lease 15s, renew deadline 10s, retry 2s)" },
	[O_LEASE_NAME] = { .flag = "--lease-name", .arg = " NAME", .env = "NODE_RECOVERY_LEASE_NAME",
		.dflt = "noderecover", .kind = SETTINGS_DNS, .max = 253, .field = F(lease_name), .blank_unset = 1,
		.what = "a valid Lease name (lowercase letters, digits, '-' and '.')", .pod = SETTINGS_POD_ALWAYS,
		.meaning = "the coordination.k8s.io/v1 Lease" },
	/* the pod's Lease is in its own namespace */
	[O_LEASE_NS] = { .flag = "--lease-namespace", .arg = " NS", .env = "NODE_RECOVERY_LEASE_NAMESPACE",
		.unset = "in a pod: its own namespace", .kind = SETTINGS_DNS,
		.max = 63, .field = F(lease_namespace), .blank_unset = 1, .what = "a namespace name (a DNS label)",
		.meaning = "the Lease's namespace (in a pod, the service account's namespace file); outside a pod --leader-elect needs it" },
	/* the watcher's side of the fence (docs/fence.md) */
	[O_FENCE] = { .flag = "--fence", .arg = " off|prefer|require", .env = "NODE_RECOVERY_FENCE", .dflt = "prefer",
		.kind = SETTINGS_WORDS, .field = F(fence), .blank_unset = 1, .what = "off prefer require",
		.pod = SETTINGS_POD_CHANGED,
		.meaning = "taint a node with an armed fence agent once it surely fenced; require: never one without" },
	/* the pod's fence Leases are in its own namespace */
	[O_FENCE_NS] = { .flag = "--fence-namespace", .arg = " NS", .env = "NODE_RECOVERY_FENCE_NAMESPACE",
		.unset = "in a pod: its own namespace", .kind = SETTINGS_DNS, .max = 63, .field = F(fence_namespace),
		.blank_unset = 1, .what = "a namespace name (a DNS label)",
		.meaning = "the fence Leases' namespace, the agent's and the watcher's (outside a pod, prefer is off without it)" },
	[O_FENCE_MIN_SAFE] = { .flag = "--fence-min-safe", .arg = " DURATION", .env = "NODE_RECOVERY_FENCE_MIN_SAFE",
		.dflt = "45s", .kind = SETTINGS_DURATION, .min = 1, .max = 86400, .field = F(fence_min_safe), .blank_unset = 1,
		.pod = SETTINGS_POD_CHANGED,
		.meaning = "the least safe time a fence is waited" },
	/* for Loki or Elasticsearch: one JSON object a line, the same words as the text line */
	[O_LOG_FORMAT] = { .flag = "--log-format", .arg = " text|json", .env = "NODE_RECOVERY_LOG_FORMAT", .dflt = "text",
		.kind = SETTINGS_LOG_FORMAT, .field = F(log_format), .blank_unset = 1, .pod = SETTINGS_POD_CHANGED,
		.meaning = "how log lines are written: text, or one JSON object a line" },
	[O_PAGE] = { .flag = "--page-size", .arg = " N", .dflt = "500", .kind = SETTINGS_COUNT, .min = 1, .max = 10000,
		.field = F(page_size), .pod = SETTINGS_POD_ALWAYS, .meaning = "nodes per list request (1 to 10000)" },
	[O_OUTPUT] = { .flag = "--output", .arg = " table|json", .env = "NODE_RECOVERY_OUTPUT", .dflt = "table",
		.kind = SETTINGS_OUTPUT, .field = F(output), .blank_unset = 1, .meaning = "how plan prints" },
	/* as kubectl: --kubeconfig is one file, KUBECONFIG a list */
	[O_KUBECONFIG] = { .flag = "--kubeconfig", .arg = " FILE", .env = "KUBECONFIG", .kind = SETTINGS_TEXT,
		.field = F(kubeconfig), .blank_unset = 1,
		.meaning = "a kubeconfig; the variable is a list a:b, merged as kubectl merges it" },
	/* as kubectl's: a flag, no variable */
	[O_CONTEXT] = { .flag = "--context", .arg = " NAME", .unset = "the kubeconfig's current-context",
		.kind = SETTINGS_TEXT, .field = F(context), .blank_unset = 1,
		.meaning = "the kubeconfig context to use" },
	[O_SERVER] = { .flag = "--server", .arg = " URL", .kind = SETTINGS_TEXT, .field = F(server),
		.meaning = "an explicit API server, with --ca-file and --token-file" },
	[O_CA] = { .flag = "--ca-file", .arg = " FILE", .kind = SETTINGS_TEXT, .field = F(ca_file),
		.meaning = "the CA of --server" },
	[O_TOKEN] = { .flag = "--token-file", .arg = " FILE", .kind = SETTINGS_TEXT, .field = F(token_file),
		.meaning = "the bearer token for --server, read again every minute" },
	[O_TLS_NAME] = { .flag = "--tls-server-name", .arg = " NAME", .kind = SETTINGS_TEXT,
		.field = F(tls_server_name), .meaning = "the name to verify the server's certificate against" },
	/* The fence agent's (docs/fence.md): not passed to the watcher's pod; the agent's DaemonSet sets its own. */
	[O_FENCE_CHECK] = { .flag = "--fence-check", .arg = " DURATION", .env = "NODE_RECOVERY_FENCE_CHECK", .dflt = "5s",
		.kind = SETTINGS_DURATION, .min = 1, .max = 3600, .field = F(fence_check), .blank_unset = 1,
		.meaning = "agent: time between checks" },
	[O_FENCE_AFTER] = { .flag = "--fence-after", .arg = " DURATION", .env = "NODE_RECOVERY_FENCE_AFTER", .dflt = "30s",
		.kind = SETTINGS_DURATION, .min = 1, .max = 86400, .field = F(fence_after), .blank_unset = 1,
		.meaning = "agent: cut off this long, ask the peers; kubelet down this long, fence" },
	[O_FENCE_ISOLATED] = { .flag = "--fence-isolated-after", .arg = " DURATION", .env = "NODE_RECOVERY_FENCE_ISOLATED_AFTER",
		.dflt = "30s", .kind = SETTINGS_DURATION, .min = 1, .max = 86400, .field = F(fence_isolated_after), .blank_unset = 1,
		.meaning = "agent: no peer's answer this long, fence" },
	[O_FENCE_RENEW] = { .flag = "--fence-renew", .arg = " DURATION", .env = "NODE_RECOVERY_FENCE_RENEW", .dflt = "60s",
		.kind = SETTINGS_DURATION, .min = 1, .max = 86400, .field = F(fence_renew), .blank_unset = 1,
		.meaning = "agent: how often its Lease is renewed" },
	[O_FENCE_ACTION] = { .flag = "--fence-action", .arg = " ACTION", .env = "NODE_RECOVERY_FENCE_ACTION",
		.unset = "watchdog if the device exists, else reboot", .kind = SETTINGS_TEXT, .field = F(fence_action),
		.blank_unset = 1, .meaning = "agent: watchdog, reboot or exec" },
	[O_FENCE_EXEC] = { .flag = "--fence-exec", .arg = " PATH", .env = "NODE_RECOVERY_FENCE_EXEC",
		.unset = "needed by exec", .kind = SETTINGS_TEXT, .field = F(fence_exec), .blank_unset = 1,
		.meaning = "agent: exec's program, run as PATH NODE" },
	[O_FENCE_EXEC_TIMEOUT] = { .flag = "--fence-exec-timeout", .arg = " DURATION", .env = "NODE_RECOVERY_FENCE_EXEC_TIMEOUT",
		.dflt = "10s", .kind = SETTINGS_DURATION, .min = 1, .max = 3600, .field = F(fence_exec_timeout), .blank_unset = 1,
		.meaning = "agent: how long that program may run" },
	[O_FENCE_WATCHDOG] = { .flag = "--fence-watchdog", .arg = " PATH", .env = "NODE_RECOVERY_FENCE_WATCHDOG",
		.dflt = "/dev/watchdog", .kind = SETTINGS_TEXT, .field = F(fence_watchdog), .blank_unset = 1,
		.meaning = "agent: the watchdog device" },
	[O_FENCE_WATCHDOG_TIMEOUT] = { .flag = "--fence-watchdog-timeout", .arg = " DURATION",
		.env = "NODE_RECOVERY_FENCE_WATCHDOG_TIMEOUT", .dflt = "10s", .kind = SETTINGS_DURATION, .min = 1, .max = 3600,
		.field = F(fence_watchdog_timeout), .blank_unset = 1,
		.meaning = "agent: the watchdog's timeout, read back" },
	/* an empty value is a value here: the kubelet is not checked */
	[O_FENCE_KUBELET] = { .flag = "--fence-kubelet-url", .arg = " URL", .env = "NODE_RECOVERY_FENCE_KUBELET_URL",
		.dflt = "http://127.0.0.1:10248/healthz", .kind = SETTINGS_TEXT, .field = F(fence_kubelet_url),
		.meaning = "agent: the kubelet's health, http://IP:PORT/PATH; empty: none" },
	[O_FENCE_LISTEN] = { .flag = "--fence-listen", .arg = " ADDR", .env = "NODE_RECOVERY_FENCE_LISTEN", .dflt = ":9466",
		.kind = SETTINGS_ADDRESS, .field = F(fence_listen), .blank_unset = 1,
		.meaning = "agent: where peers, /metrics, /livez, /readyz are served" },
	[O_FENCE_ADDRESS] = { .flag = "--fence-address", .arg = " IP:PORT", .env = "NODE_RECOVERY_FENCE_ADDRESS",
		.unset = "in a pod: POD_IP and the listen port", .kind = SETTINGS_TEXT, .field = F(fence_address),
		.blank_unset = 1, .meaning = "agent: its address for peers, on its Lease" },
	[O_FENCE_SECRET] = { .flag = "--fence-peer-secret-file", .arg = " FILE", .env = "NODE_RECOVERY_FENCE_PEER_SECRET_FILE",
		.unset = "required", .kind = SETTINGS_TEXT, .field = F(fence_peer_secret_file), .blank_unset = 1,
		.meaning = "agent: the peers' secret, 16 bytes or more; never logged" },
};

const size_t settings_row_count = O_COUNT;

const struct settings_row *settings_find(const char *flag)
{
	for (size_t o = 0; o < O_COUNT; o++)
		if (strcmp(settings_rows[o].flag, flag) == 0)
			return &settings_rows[o];
	return NULL;
}

/* max as a person reads it: 24h, 87600h (ten years), or seconds when not whole hours. */
static const char *limit_text(int64_t max, char *out, size_t n)
{
	if (max >= 3600 && max % 3600 == 0)
		snprintf(out, n, "%lldh", (long long)(max / 3600));
	else
		snprintf(out, n, "%llds", (long long)max);
	return out;
}

int settings_seconds(const char *name, const char *text, int64_t min, int64_t max, int64_t *out,
    char *err, size_t errlen)
{
	static const char forms[] = "seconds (90) or hours, minutes and seconds (1h30m, 5m, 90s)";
	char lim[32];
	int64_t v;

	switch (text_duration(text, max, &v)) {
	case TEXT_DURATION_OK:
		break;
	case TEXT_DURATION_FRACTION:
		return text_fail(err, errlen, "%s '%.32s' is not a duration: fractions are not supported, write whole units (1h30m, not 1.5h)",
		    name, text);
	case TEXT_DURATION_SIGN:
		return text_fail(err, errlen, "%s '%.32s' is not a duration: it takes no sign (and is never negative)", name, text);
	case TEXT_DURATION_UNIT:
		return text_fail(err, errlen, "%s '%.32s' is not a duration: the units are h, m and s (no ms, us, ns or d)", name, text);
	case TEXT_DURATION_ORDER:
		return text_fail(err, errlen, "%s '%.32s' is not a duration: h, m and s come in that order, each once (1h30m, not 30m1h)",
		    name, text);
	case TEXT_DURATION_RANGE:
		return text_fail(err, errlen, "%s '%.32s' is longer than %s, the most it takes", name, text,
		    limit_text(max, lim, sizeof lim));
	default:
		return text_fail(err, errlen, "%s '%.32s' is not a duration: write %s", name, text, forms);
	}
	if (v < min)
		return text_fail(err, errlen, "%s '%.32s' is shorter than %llds, the least it takes", name, text, (long long)min);
	*out = v;
	return 0;
}

static int dns_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* A label or annotation key: [DNS-subdomain '/'] name, name 1-63 of [A-Za-z0-9._-], alphanumeric at both ends. */
static int qualified_name(const char *k)
{
	const char *slash = strchr(k, '/');
	const char *name = slash ? slash + 1 : k;
	size_t n = strlen(name);

	if (slash) {
		if (slash == k || slash - k > 253 || strchr(name, '/'))
			return 0;
		for (const char *p = k; p < slash; p++)
			if (!dns_char(*p))
				return 0;
	}
	if (n == 0 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.')))
			return 0;
	}
	return 1;
}

/* "client" or "true": no write sent; "server": writes checked by the server, not stored;
 * "none", "false" or empty: off. */
static int dry_run(const char *v, enum settings_dry_run *out)
{
	if (strcmp(v, "client") == 0 || strcmp(v, "true") == 0)
		*out = DRY_RUN_CLIENT;
	else if (strcmp(v, "server") == 0)
		*out = DRY_RUN_SERVER;
	else if (strcmp(v, "none") == 0 || strcmp(v, "false") == 0 || strcmp(v, "") == 0)
		*out = DRY_RUN_NONE;
	else
		return -1;
	return 0;
}

static int copy(char *dst, size_t n, const char *src)
{
	return (size_t)snprintf(dst, n, "%s", src) < n ? 0 : -1;
}

/* A DNS label (max 63) or, with dots, a DNS subdomain (max 253): lowercase, digits, '-', '.'. */
static int dns_name(const char *v, size_t max, int dots)
{
	size_t n = strlen(v);

	if (n == 0 || n > max || v[0] == '-' || v[0] == '.' || v[n - 1] == '-' || v[n - 1] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!dns_char(v[i]) || (v[i] == '.' && !dots))
			return 0;
	return 1;
}

/* The pod's namespace from its service account's mounted file, without its line end; "" if none. */
static void pod_namespace(char *out, size_t cap)
{
	size_t n;

	/* none, or a file longer than any namespace: no namespace */
	if (file_read(SETTINGS_SA_DIR "/namespace", out, cap, &n) != FILE_OK)
		n = 0;
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	out[n] = '\0';
}

/* The i-th of the words w (one space apart), up to the end of w; "" past the last. */
static const char *word(const char *w, int i)
{
	for (; i > 0 && *w; i--)
		w += strcspn(w, " ") + (w[strcspn(w, " ")] == ' ');
	return w;
}

/*
 * A namespace setting (ns: one of struct settings' 64-byte namespaces): its value, set already
 * (val, from where), or left unset the pod's own (its service account's file; "" outside a pod).
 * source: where it came from, for the start-up line.
 */
static int own_namespace(char *ns, const char *val, const char *from, const char **source, char *err, size_t errlen)
{
	if (val) {
		*source = from;
		return 0;
	}
	pod_namespace(ns, 64);
	if (ns[0] && !dns_name(ns, 63, 0))
		return text_fail(err, errlen, "%s/namespace does not hold a namespace name", SETTINGS_SA_DIR);
	*source = "the pod's service account";
	return 0;
}

/* The storm guard's limit: "N" (r's bounds) or "P%" (1 to 100). */
static int limit(const struct settings_row *r, struct settings *s, const char *v, const char *name, char *err,
    size_t errlen)
{
	size_t n = strlen(v);
	int percent = n > 1 && v[n - 1] == '%';
	int64_t x;

	if (text_decimal(v, n - (size_t)percent, percent ? 100 : r->max, &x) < 0 || x < r->min)
		return text_fail(err, errlen, "%s '%.32s' is neither a number of nodes (1 or more) nor a percentage from 1%% to 100%%",
		    name, v);
	s->max_unknown = percent ? 0 : (long)x;
	s->max_unknown_percent = percent ? (int)x : 0;
	return 0;
}

/* true or false (BOOL01: or 1 or 0) into *out. */
static int parse_bool(const struct settings_row *r, const char *v, int *out)
{
	if (strcmp(v, "true") == 0 || (r->kind == SETTINGS_BOOL01 && strcmp(v, "1") == 0))
		*out = 1;
	else if (strcmp(v, "false") == 0 || (r->kind == SETTINGS_BOOL01 && strcmp(v, "0") == 0))
		*out = 0;
	else
		return -1;
	return 0;
}

int settings_set(const struct settings_row *r, struct settings *s, const char *v, const char *name,
    char *err, size_t errlen)
{
	void *p = (char *)s + r->field;
	struct sockaddr_storage sa;
	socklen_t salen;
	char why[200];
	int64_t x;
	int any;

	switch (r->kind) {
	case SETTINGS_DURATION:
		return settings_seconds(name, v, r->min, r->max, p, err, errlen);
	case SETTINGS_COUNT:
		if (text_decimal(v, strlen(v), r->max, &x) < 0 || x < r->min)
			return text_fail(err, errlen, "%s '%.32s' is not a whole number between %lld and %lld", name, v,
			    (long long)r->min, (long long)r->max);
		*(long *)p = (long)x;
		return 0;
	case SETTINGS_LIMIT:
		return limit(r, s, v, name, err, errlen);
	case SETTINGS_BOOL:
	case SETTINGS_BOOL01:
		if (parse_bool(r, v, p) < 0)
			return text_fail(err, errlen, "%s '%.32s' is neither true nor false", name, v);
		return 0;
	case SETTINGS_KEY:
		if (copy(p, SETTINGS_KEY_MAX + 1, v) < 0 || !qualified_name(p))
			return text_fail(err, errlen, "%s '%.64s' is not %s key", name, v, r->what);
		return 0;
	case SETTINGS_DNS:
		if (copy(p, (size_t)r->max + 1, v) < 0 || !dns_name(p, (size_t)r->max, r->max > 63))
			return text_fail(err, errlen, "%s '%.64s' is not %s", name, v, r->what);
		return 0;
	case SETTINGS_NODE:
		if (copy(p, (size_t)r->max + 1, v) < 0)
			return text_fail(err, errlen, "%s is longer than a node name can be", name);
		return 0;
	case SETTINGS_DRY_RUN:
		if (dry_run(v, p) < 0)
			return text_fail(err, errlen, "%s '%.32s' is not one of client, server or none (true or false for the variable)",
			    name, v);
		return 0;
	case SETTINGS_OUTPUT:
		if (strcmp(v, "json") != 0 && strcmp(v, "table") != 0)
			return text_fail(err, errlen, "%s '%.32s' is neither table nor json", name, v);
		*(enum settings_output *)p = strcmp(v, "json") == 0 ? OUTPUT_JSON : OUTPUT_TABLE;
		return 0;
	case SETTINGS_LOG_FORMAT:
		if (strcmp(v, "json") != 0 && strcmp(v, "text") != 0)
			return text_fail(err, errlen, "%s '%.32s' is neither text nor json", name, v);
		*(enum settings_log_format *)p = strcmp(v, "json") == 0 ? LOG_FORMAT_JSON : LOG_FORMAT_TEXT;
		return 0;
	case SETTINGS_WORDS:
		for (int i = 0; *word(r->what, i); i++)
			if (strlen(v) == strcspn(word(r->what, i), " ") && strncmp(word(r->what, i), v, strlen(v)) == 0) {
				*(int *)p = i;
				return 0;
			}
		return text_fail(err, errlen, "%s '%.32s' is none of: %s", name, v, r->what);
	case SETTINGS_ADDRESS:
		/* checked here, before anything runs; bound by run */
		if (listen_addr(v, &sa, &salen, &any, why, sizeof why) < 0)
			return text_fail(err, errlen, "%s %s", name, why);
		*(const char **)p = v;
		return 0;
	case SETTINGS_TEXT:
		*(const char **)p = v;
		return 0;
	}
	return text_fail(err, errlen, "%s: no such kind of setting", name);
}

const char *settings_value(const struct settings_row *r, const struct settings *s, char *buf, size_t n)
{
	const void *p = (const char *)s + r->field;

	switch (r->kind) {
	case SETTINGS_DURATION:
		snprintf(buf, n, "%lld", (long long)*(const int64_t *)p);
		return buf;
	case SETTINGS_COUNT:
		snprintf(buf, n, "%ld", *(const long *)p);
		return buf;
	case SETTINGS_LIMIT:
		if (s->max_unknown)
			snprintf(buf, n, "%ld", s->max_unknown);
		else
			snprintf(buf, n, "%d%%", s->max_unknown_percent);
		return buf;
	case SETTINGS_BOOL:
	case SETTINGS_BOOL01:
		return *(const int *)p ? "true" : "false";
	case SETTINGS_KEY:
	case SETTINGS_DNS:
	case SETTINGS_NODE:
		return p;
	case SETTINGS_DRY_RUN:
		/* as the variable spells it */
		return s->dry_run == DRY_RUN_SERVER ? "server" : s->dry_run == DRY_RUN_CLIENT ? "true" : "false";
	case SETTINGS_OUTPUT:
		return s->output == OUTPUT_JSON ? "json" : "table";
	case SETTINGS_LOG_FORMAT:
		return s->log_format == LOG_FORMAT_JSON ? "json" : "text";
	case SETTINGS_WORDS:
		snprintf(buf, n, "%.*s", (int)strcspn(word(r->what, *(const int *)p), " "), word(r->what, *(const int *)p));
		return buf;
	case SETTINGS_ADDRESS:
	case SETTINGS_TEXT:
		return *(const char *const *)p ? *(const char *const *)p : "";
	}
	return "";
}

int settings_is_default(const struct settings_row *r, const struct settings *s)
{
	struct settings d;
	char a[32], b[32], err[8];

	memset(&d, 0, sizeof d);
	if (r->dflt && settings_set(r, &d, r->dflt, r->flag, err, sizeof err) < 0)
		return 0;
	return strcmp(settings_value(r, s, a, sizeof a), settings_value(r, &d, b, sizeof b)) == 0;
}

void settings_help(FILE *out)
{
	for (size_t o = 0; o < O_COUNT; o++) {
		const struct settings_row *r = &settings_rows[o];
		const char *d = r->dflt ? r->dflt : r->unset;
		char name[40];

		snprintf(name, sizeof name, "%s%s", r->flag, r->arg);
		if (!r->env && !d)
			fprintf(out, "  %-25s %s\n", name, r->meaning);
		else
			fprintf(out, "  %-25s %s%s%s%s%s\n  %25s %s\n", name, r->env ? r->env : "", d && r->env ? " " : "",
			    d ? "(" : "", d ? d : "", d ? ")" : "", "", r->meaning);
	}
}

/* The command, if the first word is one, into s->mode; *i: the first word after it. */
static int command(struct settings *s, int argc, char **argv, int *i, char *err, size_t errlen)
{
	static const struct { const char *word; enum settings_mode mode; } words[] = {
		{ "run", MODE_RUN }, { "once", MODE_ONCE }, { "plan", MODE_PLAN },
		{ "manifests", MODE_MANIFESTS },   /* the same settings as run, checked the same way */
		{ "version", MODE_VERSION }, { "help", MODE_HELP },
		{ "completion", MODE_COMPLETION },   /* followed by the shell */
		{ "fence", MODE_FENCE },
	};
	const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;

	base = base ? base + 1 : argc > 0 && argv[0] ? argv[0] : "";
	/* the agent's DaemonSet may run the binary under that name, with options only */
	s->mode = strcmp(base, "noderecover-fence") == 0 ? MODE_FENCE : MODE_RUN;
	if (*i >= argc || argv[*i][0] == '-')
		return 0;
	for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
		if (strcmp(argv[*i], words[w].word) == 0) {
			s->mode = words[w].mode;
			++*i;
			if (s->mode != MODE_COMPLETION)
				return 0;
			if (*i >= argc || (strcmp(argv[*i], "bash") != 0 && strcmp(argv[*i], "zsh") != 0))
				return text_fail(err, errlen, "completion needs a shell: bash or zsh");
			s->shell = argv[(*i)++];
			return 0;
		}
	}
	return text_fail(err, errlen, "unknown command '%.64s' (want run, once, plan, manifests, fence, version, completion or help)", argv[*i]);
}

/* The flags from argv[i] on: --flag VALUE, --flag=VALUE, or a flag that may stand alone. */
static int flags(struct settings *s, int argc, char **argv, int i, const char **val, const char **from,
    char *err, size_t errlen)
{
	for (; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t alen = eq ? (size_t)(eq - a) : strlen(a);
		int o;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			s->mode = MODE_HELP;
			return 0;
		}
		if (strcmp(a, "--version") == 0) {
			s->mode = MODE_VERSION;
			return 0;
		}
		for (o = 0; o < O_COUNT; o++)
			if (strlen(settings_rows[o].flag) == alen && strncmp(a, settings_rows[o].flag, alen) == 0)
				break;
		if (o == O_COUNT)
			return text_fail(err, errlen, "unknown option '%.*s' (see 'noderecover help')",
			    (int)(alen > 64 ? 64 : alen), a);
		if (eq)
			val[o] = eq + 1;
		else if (settings_rows[o].alone)
			val[o] = settings_rows[o].alone;
		else if (i + 1 < argc)
			val[o] = argv[++i];
		else
			return text_fail(err, errlen, "%s needs a value", settings_rows[o].flag);
		from[o] = settings_rows[o].flag;
	}
	return 0;
}

/* Outside a pod the host name is the node's name: the kubelet (and so k3s) registers it lowercased. */
static void host_name(struct settings *s)
{
	if (gethostname(s->self_node, sizeof s->self_node - 1) < 0) {
		s->self_node[0] = '\0';
		return;
	}
	s->self_node[sizeof s->self_node - 1] = '\0';
	for (char *c = s->self_node; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	s->self_source = "host name";
}

static int common_settings(struct settings *s, char *err, size_t errlen);

int settings_fence_action(const struct settings *s, const char *name, char *err, size_t errlen)
{
	const char *a = s->fence_action;

	if (a && strcmp(a, "watchdog") != 0 && strcmp(a, "reboot") != 0 && strcmp(a, "exec") != 0)
		return text_fail(err, errlen, "%s '%.32s' is not one of watchdog, reboot or exec", name, a);
	if (a && strcmp(a, "exec") == 0 && !s->fence_exec)
		return text_fail(err, errlen, "%s exec needs %s (or %s): the program to run", name,
		    settings_rows[O_FENCE_EXEC].flag, settings_rows[O_FENCE_EXEC].env);
	return 0;
}

/* The fence agent's own rules (docs/fence.md "Settings"): its node, namespace, action and
 * secret are required, its peers' address defaults to the pod's IP and the listen port. */
static int fence_settings(struct settings *s, const char **val, const char **from, settings_env_fn env, char *err,
    size_t errlen)
{
	const struct settings_row *r = settings_rows;
	const char *node = env("NODE_NAME"), *ip = env("POD_IP");
	struct sockaddr_storage sa;
	socklen_t salen;
	char why[200];
	int any;

	s->kubeconfig_list = s->kubeconfig && from[O_KUBECONFIG] == r[O_KUBECONFIG].env;
	if (val[O_SELF]) {
		s->self_source = from[O_SELF];
	} else if (node && *node && copy(s->self_node, sizeof s->self_node, node) == 0) {
		s->self_source = "NODE_NAME";
	} else {
		return text_fail(err, errlen, "%s (or %s, or NODE_NAME from the downward API) is required: the node this agent fences",
		    r[O_SELF].flag, r[O_SELF].env);
	}
	/* its Lease is noderecover-fence-NODE, a DNS subdomain of at most 253 bytes */
	if (!dns_name(s->self_node, 253 - 18, 1))
		return text_fail(err, errlen, "node '%.64s' (from %s) cannot be armed: its Lease's name would not be a DNS subdomain of at most 253 bytes",
		    s->self_node, s->self_source);
	if (!s->fence_namespace[0])
		return text_fail(err, errlen, "%s (or %s) is required outside a pod: %s/namespace is not there",
		    r[O_FENCE_NS].flag, r[O_FENCE_NS].env, SETTINGS_SA_DIR);
	if (settings_fence_action(s, from[O_FENCE_ACTION], err, errlen) < 0)
		return -1;
	if (!s->fence_peer_secret_file)
		return text_fail(err, errlen, "%s (or %s) is required: the peers' shared secret", r[O_FENCE_SECRET].flag,
		    r[O_FENCE_SECRET].env);
	if (!s->fence_address && ip && *ip) {
		const char *port = strrchr(s->fence_listen, ':') + 1;
		snprintf(s->fence_address_buf, sizeof s->fence_address_buf, strchr(ip, ':') ? "[%.46s]:%s" : "%.46s:%s", ip, port);
		s->fence_address = s->fence_address_buf;
	} else if (!s->fence_address && listen_addr(s->fence_listen, &sa, &salen, &any, why, sizeof why) == 0 && !any) {
		s->fence_address = s->fence_listen;
	}
	if (!s->fence_address)
		return text_fail(err, errlen, "%s (or %s) is required outside a pod when %s listens on every address: where peers reach this agent",
		    r[O_FENCE_ADDRESS].flag, r[O_FENCE_ADDRESS].env, r[O_FENCE_LISTEN].flag);
	if (listen_addr(s->fence_address, &sa, &salen, &any, why, sizeof why) < 0 || any)
		return text_fail(err, errlen, "%s '%.64s' is not IPv4:PORT or [IPv6]:PORT",
		    s->fence_address == s->fence_address_buf ? "POD_IP" : val[O_FENCE_ADDRESS] ? from[O_FENCE_ADDRESS] : r[O_FENCE_LISTEN].flag,
		    s->fence_address);
	return 0;
}

/* What one setting says of another, and the defaults that are not a value but a place to look. */
static int cross_settings(struct settings *s, const char **val, const char **from, settings_env_fn env, char *err,
    size_t errlen)
{
	const struct settings_row *r = settings_rows;

	if (val[O_PRUNE] && s->prune_after <= s->taint_after)
		return text_fail(err, errlen, "%s (%lld) must be greater than the taint threshold (%lld): a node is tainted before it is deleted",
		    from[O_PRUNE], (long long)s->prune_after, (long long)s->taint_after);
	if (!val[O_COOLDOWN])
		s->storm_cooldown = s->taint_after;
	if (own_namespace(s->lease_namespace, val[O_LEASE_NS], from[O_LEASE_NS], &s->lease_ns_source, err, errlen) < 0 ||
	    own_namespace(s->fence_namespace, val[O_FENCE_NS], from[O_FENCE_NS], &s->fence_ns_source, err, errlen) < 0)
		return -1;
	/* manifests put the Lease in the pod's own namespace */
	if (s->leader_elect && !s->lease_namespace[0] && (s->mode == MODE_RUN || s->mode == MODE_ONCE))
		return text_fail(err, errlen, "%s needs %s (or %s) outside a pod: %s/namespace is not there",
		    r[O_LEADER].flag, r[O_LEASE_NS].flag, r[O_LEASE_NS].env, SETTINGS_SA_DIR);
	if (s->mode == MODE_FENCE)
		return fence_settings(s, val, from, env, err, errlen) < 0 ? -1 : common_settings(s, err, errlen);
	/* an upgrade run outside a pod must not stop recovering for a setting it never had */
	if (s->fence != FENCE_OFF && !s->fence_namespace[0] && s->mode != MODE_MANIFESTS) {
		if (s->fence == FENCE_REQUIRE)
			return text_fail(err, errlen, "%s needs %s (or %s) outside a pod: %s/namespace is not there",
			    "--fence=require", r[O_FENCE_NS].flag, r[O_FENCE_NS].env, SETTINGS_SA_DIR);
		s->fence = FENCE_OFF;
		s->fence_unplaced = 1;
	}
	if (val[O_SELF])
		s->self_source = from[O_SELF];
	else if (!env("KUBERNETES_SERVICE_HOST"))
		host_name(s);
	s->kubeconfig_list = s->kubeconfig && from[O_KUBECONFIG] == r[O_KUBECONFIG].env;
	return common_settings(s, err, errlen);
}

/* Where the cluster is: the rules every command that reaches it shares. */
static int common_settings(struct settings *s, char *err, size_t errlen)
{
	if (s->server && (!s->ca_file || !s->token_file))
		return text_fail(err, errlen, "--server needs --ca-file and --token-file as well");
	if (!s->server && (s->ca_file || s->token_file))
		return text_fail(err, errlen, "--ca-file and --token-file go with --server");
	if (s->server && s->context)
		return text_fail(err, errlen, "--context picks a kubeconfig context, and --server uses none");
	return 0;
}

int settings_parse(struct settings *s, int argc, char **argv, settings_env_fn env, char *err,
    size_t errlen)
{
	const char *val[O_COUNT] = { 0 };
	const char *from[O_COUNT] = { 0 };   /* the flag or variable that set it, for messages */
	int i = 1;

	memset(s, 0, sizeof *s);
	if (command(s, argc, argv, &i, err, errlen) < 0 || flags(s, argc, argv, i, val, from, err, errlen) < 0)
		return -1;
	if (s->mode == MODE_HELP || s->mode == MODE_VERSION || s->mode == MODE_COMPLETION)
		return 0;
	for (int o = 0; o < O_COUNT; o++) {
		const struct settings_row *r = &settings_rows[o];
		if (!val[o] && r->env && env(r->env)) {
			val[o] = env(r->env);
			from[o] = r->env;
		}
		if (val[o] && !*val[o] && r->blank_unset)
			val[o] = NULL;
	}
	if (!val[O_TAINT] && s->mode != MODE_FENCE)
		return text_fail(err, errlen, "%s (or %s) is required: how long (300, 5m) a node's Ready may be Unknown before it is tainted",
		    settings_rows[O_TAINT].flag, settings_rows[O_TAINT].env);
	for (int o = 0; o < O_COUNT; o++) {
		const struct settings_row *r = &settings_rows[o];
		if (val[o] ? settings_set(r, s, val[o], from[o], err, errlen) < 0
		    : r->dflt && settings_set(r, s, r->dflt, r->flag, err, errlen) < 0)
			return -1;
	}
	return cross_settings(s, val, from, env, err, errlen);
}
static int read_into(const char *what, const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	int r = file_load(path, FILE_MAX, out, len);

	return r == FILE_OK ? 0 : file_error(err, errlen, what, path, r, FILE_MAX);
}

static int explicit_target(const struct settings *s, struct kube_target *t, char *err, size_t errlen)
{
	if (copy(t->server, sizeof t->server, s->server) < 0)
		return text_fail(err, errlen, "--server is too long");
	if (copy(t->token_file, sizeof t->token_file, s->token_file) < 0)
		return text_fail(err, errlen, "--token-file is too long");
	snprintf(t->source, sizeof t->source, "flags (CA %.256s, token file %.256s)", s->ca_file, s->token_file);
	return read_into("CA file", s->ca_file, &t->ca_pem, &t->ca_len, err, errlen);
}

/* In a pod: the API's service address and the mounted service account. */
static int pod_target(const char *host, const char *port, struct kube_target *t, char *err, size_t errlen)
{
	const char *fmt = strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s";

	if ((size_t)snprintf(t->server, sizeof t->server, fmt, host, port && *port ? port : "443") >= sizeof t->server)
		return text_fail(err, errlen, "KUBERNETES_SERVICE_HOST is too long");
	snprintf(t->token_file, sizeof t->token_file, "%s/token", SETTINGS_SA_DIR);
	snprintf(t->source, sizeof t->source, "the pod's service account (%s)", SETTINGS_SA_DIR);
	return read_into("service account CA", SETTINGS_SA_DIR "/ca.crt", &t->ca_pem, &t->ca_len, err, errlen);
}

/*
 * The flag's one file, or KUBECONFIG's list split as kubectl splits it (':', empty names
 * skipped, a name given twice read once), merged by kubeconfig.c.
 */
static int kubeconfig_target(const struct settings *s, struct kube_target *t, char *err, size_t errlen)
{
	const char *paths[KUBECONFIG_FILES_MAX];
	char *list;
	int n = 0, r;

	if (!s->kubeconfig_list)
		return kubeconfig_load_files(&s->kubeconfig, 1, s->context, 0, t, err, errlen);
	if (!(list = strdup(s->kubeconfig)))
		return text_fail(err, errlen, "out of memory");
	for (char *p = list, *next; p; p = next) {
		int seen = 0;
		if ((next = strchr(p, ':')) != NULL)
			*next++ = '\0';
		for (int i = 0; i < n && !seen; i++)
			seen = strcmp(paths[i], p) == 0;
		if (!*p || seen)
			continue;
		if (n == KUBECONFIG_FILES_MAX) {
			free(list);
			return text_fail(err, errlen, "KUBECONFIG names more than %d files; noderecover merges at most %d",
			    KUBECONFIG_FILES_MAX, KUBECONFIG_FILES_MAX);
		}
		paths[n++] = p;
	}
	r = n ? kubeconfig_load_files(paths, n, s->context, 1, t, err, errlen)
	    : text_fail(err, errlen, "KUBECONFIG '%.64s' names no file", s->kubeconfig);
	free(list);
	return r;
}

/*
 * kubectl's default file, $HOME/.kube/config, into path when it is there (a file there that
 * cannot be read is then refused by the load, with its reason, rather than passed over).
 */
static int home_kubeconfig(settings_env_fn env, char *path, size_t n)
{
	const char *home = env("HOME");

	if (!home || !*home || (size_t)snprintf(path, n, "%s/.kube/config", home) >= n)
		return 0;
	return access(path, F_OK) == 0;
}

int settings_target(const struct settings *s, settings_env_fn env, struct kube_target *t,
    char *err, size_t errlen)
{
	const char *host = env("KUBERNETES_SERVICE_HOST");
	char home[TARGET_PATH_MAX];
	int r;

	memset(t, 0, sizeof *t);
	if (s->server) {
		r = explicit_target(s, t, err, errlen);
	} else if (s->kubeconfig) {
		r = kubeconfig_target(s, t, err, errlen);
	} else if (host && *host) {
		if (s->context)
			return text_fail(err, errlen, "--context picks a kubeconfig context, and in a pod without KUBECONFIG or --kubeconfig none is read");
		r = pod_target(host, env("KUBERNETES_SERVICE_PORT"), t, err, errlen);
	} else if (home_kubeconfig(env, home, sizeof home)) {
		const char *p = home;
		r = kubeconfig_load_files(&p, 1, s->context, 0, t, err, errlen);
	} else if (access(SETTINGS_K3S_KUBECONFIG, R_OK) == 0) {
		const char *k3s = SETTINGS_K3S_KUBECONFIG;
		r = kubeconfig_load_files(&k3s, 1, s->context, 0, t, err, errlen);
	} else {
		return text_fail(err, errlen, "no cluster found: give --server, --kubeconfig or KUBECONFIG, run in a pod, have a "
		    "$HOME/.kube/config, or run on a k3s server with %s", SETTINGS_K3S_KUBECONFIG);
	}
	if (r == 0 && s->tls_server_name && copy(t->tls_server_name, sizeof t->tls_server_name, s->tls_server_name) < 0)
		r = text_fail(err, errlen, "--tls-server-name is too long");
	if (r == 0 && strncmp(t->server, "https://", 8) != 0)
		r = text_fail(err, errlen, "server '%.128s' is not an https:// URL: noderecover only talks TLS", t->server);
	/* the plugin's first credential before anything is sent: one that fails is a bad setting */
	if (r == 0 && t->plugin)
		r = plugin_run(t->plugin, NULL, err, errlen);
	if (r < 0)
		kube_target_free(t);
	return r;
}
