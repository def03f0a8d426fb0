/*
 * Settings from flags and environment variables, checked before anything is sent, and the
 * search for the cluster. Allocates only the target's copies of the CA and credentials.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kubeconfig.h"
#include "listen.h"
#include "settings.h"
#include "text.h"

#define DEFAULT_PRUNE_LABEL "github-runner.exadev.io/removable"
#define DEFAULT_ANNOTATION "github-runner.exadev/out-of-service-applied-at"
#define DEFAULT_EXCLUDE_LABEL "github-runner.exadev.io/no-recovery"
#define DEFAULT_MAX_UNKNOWN_PERCENT 50
#define MAX_UNKNOWN_COUNT 1000000000
#define DEFAULT_POLL 15
#define MAX_POLL 86400
#define MAX_RELIST 86400
#define DEFAULT_PAGE_SIZE 500
#define MAX_PAGE_SIZE 10000
#define FILE_MAX (1024 * 1024)

/* One option: its flag and its variable (NULL if none). Every option takes a value, given as
 * --flag VALUE or --flag=VALUE; --dry-run and --leader-elect may also stand alone. */
struct opt {
	const char *flag;
	const char *env;
};

enum {
	O_TAINT, O_PRUNE, O_LABEL, O_ANNOTATION, O_SELF, O_POLL, O_KUBECONFIG, O_SERVER, O_CA,
	O_TOKEN, O_TLS_NAME, O_PAGE, O_MAX_UNKNOWN, O_COOLDOWN, O_EXCLUDE, O_DRY_RUN, O_OUTPUT, O_LEADER,
	O_LEASE_NAME, O_LEASE_NS, O_EVENTS, O_LISTEN, O_CONTEXT, O_WATCH, O_RELIST, O_COUNT
};

static const struct opt opts[O_COUNT] = {
	[O_TAINT] = { "--taint-after", "NODE_RECOVERY_AFTER_SECONDS" },
	[O_PRUNE] = { "--prune-after", "NODE_RECOVERY_PRUNE_AFTER_SECONDS" },
	[O_LABEL] = { "--prune-label", "NODE_RECOVERY_PRUNE_LABEL" },
	[O_ANNOTATION] = { "--annotation", "NODE_RECOVERY_ANNOTATION" },
	[O_SELF] = { "--self-node", "NODE_RECOVERY_SELF_NODE" },
	[O_POLL] = { "--poll", "NODE_RECOVERY_POLL_SECONDS" },
	[O_KUBECONFIG] = { "--kubeconfig", "KUBECONFIG" },
	[O_SERVER] = { "--server", NULL },
	[O_CA] = { "--ca-file", NULL },
	[O_TOKEN] = { "--token-file", NULL },
	[O_TLS_NAME] = { "--tls-server-name", NULL },
	[O_PAGE] = { "--page-size", NULL },
	[O_MAX_UNKNOWN] = { "--max-unknown", "NODE_RECOVERY_MAX_UNKNOWN" },
	[O_COOLDOWN] = { "--storm-cooldown", "NODE_RECOVERY_STORM_COOLDOWN" },
	[O_EXCLUDE] = { "--exclude-label", "NODE_RECOVERY_EXCLUDE_LABEL" },
	[O_DRY_RUN] = { "--dry-run", "NODE_RECOVERY_DRY_RUN" },
	[O_EVENTS] = { "--events", "NODE_RECOVERY_EVENTS" },
	[O_OUTPUT] = { "--output", "NODE_RECOVERY_OUTPUT" },
	[O_LEADER] = { "--leader-elect", "NODE_RECOVERY_LEADER_ELECT" },
	[O_LEASE_NAME] = { "--lease-name", "NODE_RECOVERY_LEASE_NAME" },
	[O_LEASE_NS] = { "--lease-namespace", "NODE_RECOVERY_LEASE_NAMESPACE" },
	[O_LISTEN] = { "--listen", "NODE_RECOVERY_LISTEN" },
	[O_CONTEXT] = { "--context", NULL },   /* as kubectl's: a flag, no variable */
	[O_WATCH] = { "--watch", "NODE_RECOVERY_WATCH" },
	[O_RELIST] = { "--relist", "NODE_RECOVERY_RELIST_SECONDS" },
};

/* A whole number (digits only) no larger than max. */
static int whole(const char *s, int64_t max, int64_t *out)
{
	int64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > max)
			return -1;
	}
	*out = v;
	return 0;
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

/* The storm guard's limit: "N" (at least 1) or "P%" (1 to 100). */
static int max_unknown(const char *v, struct settings *s)
{
	size_t n = strlen(v);
	int64_t x;

	if (n > 1 && v[n - 1] == '%') {
		char digits[8];
		if (n - 1 >= sizeof digits)
			return -1;
		memcpy(digits, v, n - 1);
		digits[n - 1] = '\0';
		if (whole(digits, 100, &x) < 0 || x < 1)
			return -1;
		s->max_unknown = 0;
		s->max_unknown_percent = (int)x;
		return 0;
	}
	if (whole(v, MAX_UNKNOWN_COUNT, &x) < 0 || x < 1)
		return -1;
	s->max_unknown = (long)x;
	s->max_unknown_percent = 0;
	return 0;
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

/* A label or annotation key setting o into out (SETTINGS_KEY_MAX + 1 bytes), or its default. */
static int key(char *out, const char **val, const char **from, int o, const char *dflt,
    const char *what, char *err, size_t errlen)
{
	if (copy(out, SETTINGS_KEY_MAX + 1, val[o] ? val[o] : dflt) < 0 || !qualified_name(out))
		return text_fail(err, errlen, "%s '%.64s' is not %s %s key", from[o] ? from[o] : opts[o].flag,
		    val[o] ? val[o] : dflt, what[0] == 'a' ? "an" : "a", what);
	return 0;
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
	FILE *f = fopen(SETTINGS_SA_DIR "/namespace", "re");
	size_t n = 0;

	out[0] = '\0';
	if (!f)
		return;
	n = fread(out, 1, cap - 1, f);
	/* a file longer than any namespace is no namespace */
	if (fgetc(f) != EOF)
		n = 0;
	fclose(f);
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	out[n] = '\0';
}

/* Leader election: on or off, the Lease's name, and its namespace (run and once need one). */
static int leader(struct settings *s, const char **val, const char **from, char *err, size_t errlen)
{
	const char *v = val[O_LEADER];

	if (v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0))
		s->leader_elect = 1;
	else if (v && strcmp(v, "false") != 0 && strcmp(v, "0") != 0 && *v)
		return text_fail(err, errlen, "%s '%.32s' is neither true nor false", from[O_LEADER], v);
	if (copy(s->lease_name, sizeof s->lease_name, val[O_LEASE_NAME] && *val[O_LEASE_NAME] ? val[O_LEASE_NAME] : "noderecover") < 0 ||
	    !dns_name(s->lease_name, 253, 1))
		return text_fail(err, errlen, "%s '%.64s' is not a valid Lease name (lowercase letters, digits, '-' and '.')",
		    from[O_LEASE_NAME], val[O_LEASE_NAME]);
	if (val[O_LEASE_NS] && *val[O_LEASE_NS]) {
		if (copy(s->lease_namespace, sizeof s->lease_namespace, val[O_LEASE_NS]) < 0 || !dns_name(s->lease_namespace, 63, 0))
			return text_fail(err, errlen, "%s '%.64s' is not a namespace name (a DNS label)", from[O_LEASE_NS], val[O_LEASE_NS]);
		s->lease_ns_source = from[O_LEASE_NS];
	} else {
		pod_namespace(s->lease_namespace, sizeof s->lease_namespace);
		if (s->lease_namespace[0] && !dns_name(s->lease_namespace, 63, 0))
			return text_fail(err, errlen, "%s/namespace does not hold a namespace name", SETTINGS_SA_DIR);
		s->lease_ns_source = "the pod's service account";
	}
	/* manifests put the Lease in the pod's own namespace */
	if (s->leader_elect && !s->lease_namespace[0] && (s->mode == MODE_RUN || s->mode == MODE_ONCE))
		return text_fail(err, errlen, "--leader-elect needs --lease-namespace (or NODE_RECOVERY_LEASE_NAMESPACE) outside a pod: %s/namespace is not there",
		    SETTINGS_SA_DIR);
	return 0;
}

int settings_parse(struct settings *s, int argc, char **argv, settings_env_fn env, char *err,
    size_t errlen)
{
	const char *val[O_COUNT] = { 0 };
	const char *from[O_COUNT] = { 0 };   /* the flag or variable that set it, for messages */
	int i = 1;

	memset(s, 0, sizeof *s);
	s->mode = MODE_RUN;
	if (i < argc && argv[i][0] != '-') {
		const char *m = argv[i++];
		if (strcmp(m, "run") == 0)
			s->mode = MODE_RUN;
		else if (strcmp(m, "once") == 0)
			s->mode = MODE_ONCE;
		else if (strcmp(m, "plan") == 0)
			s->mode = MODE_PLAN;
		else if (strcmp(m, "manifests") == 0)
			s->mode = MODE_MANIFESTS;   /* the same settings as run, checked the same way */
		else if (strcmp(m, "version") == 0)
			s->mode = MODE_VERSION;
		else if (strcmp(m, "help") == 0)
			s->mode = MODE_HELP;
		else
			return text_fail(err, errlen, "unknown command '%.64s' (want run, once, plan, manifests, version or help)", m);
	}
	for (; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t alen = eq ? (size_t)(eq - a) : strlen(a);
		int o;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			s->mode = MODE_HELP;
			return 0;
		}
		for (o = 0; o < O_COUNT; o++)
			if (strlen(opts[o].flag) == alen && strncmp(a, opts[o].flag, alen) == 0)
				break;
		if (o == O_COUNT)
			return text_fail(err, errlen, "unknown option '%.*s' (see 'noderecover help')",
			    (int)(alen > 64 ? 64 : alen), a);
		if (eq) {
			val[o] = eq + 1;
		} else if (o == O_DRY_RUN) {
			/* the one flag that stands alone (as kubectl's); a value needs --dry-run=server */
			val[o] = "client";
		} else if (o == O_LEADER || o == O_WATCH) {
			val[o] = "true";   /* stands alone too, as kube-controller-manager's */
		} else {
			if (i + 1 >= argc)
				return text_fail(err, errlen, "%s needs a value", opts[o].flag);
			val[o] = argv[++i];
		}
		from[o] = opts[o].flag;
	}
	if (s->mode == MODE_HELP || s->mode == MODE_VERSION)
		return 0;
	for (int o = 0; o < O_COUNT; o++) {
		if (!val[o] && opts[o].env && env(opts[o].env)) {
			val[o] = env(opts[o].env);
			from[o] = opts[o].env;
		}
	}

	if (!val[O_TAINT] || !*val[O_TAINT])
		return text_fail(err, errlen, "--taint-after (or NODE_RECOVERY_AFTER_SECONDS) is required: how long (300, 5m) a node's Ready may be Unknown before it is tainted");
	if (settings_seconds(from[O_TAINT], val[O_TAINT], 0, SETTINGS_MAX_SECONDS, &s->taint_after, err, errlen) < 0)
		return -1;
	if (val[O_PRUNE] && *val[O_PRUNE]) {
		if (settings_seconds(from[O_PRUNE], val[O_PRUNE], 0, SETTINGS_MAX_SECONDS, &s->prune_after, err, errlen) < 0)
			return -1;
		if (s->prune_after <= s->taint_after) {
			return text_fail(err, errlen, "%s (%lld) must be greater than the taint threshold (%lld): a node is tainted before it is deleted",
			    from[O_PRUNE], (long long)s->prune_after, (long long)s->taint_after);
		}
	}
	s->poll = DEFAULT_POLL;
	if (val[O_POLL] && settings_seconds(from[O_POLL], val[O_POLL], 1, MAX_POLL, &s->poll, err, errlen) < 0)
		return -1;
	s->page_size = DEFAULT_PAGE_SIZE;
	if (val[O_PAGE]) {
		int64_t n;
		if (whole(val[O_PAGE], MAX_PAGE_SIZE, &n) < 0 || n < 1)
			return text_fail(err, errlen, "--page-size '%.32s' is not a whole number between 1 and %d", val[O_PAGE], MAX_PAGE_SIZE);
		s->page_size = (long)n;
	}
	s->max_unknown_percent = DEFAULT_MAX_UNKNOWN_PERCENT;
	if (val[O_MAX_UNKNOWN] && max_unknown(val[O_MAX_UNKNOWN], s) < 0)
		return text_fail(err, errlen, "%s '%.32s' is neither a number of nodes (1 or more) nor a percentage from 1%% to 100%%",
		    from[O_MAX_UNKNOWN], val[O_MAX_UNKNOWN]);
	s->storm_cooldown = s->taint_after;
	if (val[O_COOLDOWN] && settings_seconds(from[O_COOLDOWN], val[O_COOLDOWN], 0, SETTINGS_MAX_SECONDS, &s->storm_cooldown,
	    err, errlen) < 0)
		return -1;
	if (val[O_DRY_RUN] && dry_run(val[O_DRY_RUN], &s->dry_run) < 0)
		return text_fail(err, errlen, "%s '%.32s' is not one of client, server or none (true or false for the variable)",
		    from[O_DRY_RUN], val[O_DRY_RUN]);
	s->watch = 1;
	if (val[O_WATCH] && *val[O_WATCH] && strcmp(val[O_WATCH], "true") != 0) {
		if (strcmp(val[O_WATCH], "false") != 0)
			return text_fail(err, errlen, "%s '%.32s' is neither true nor false", from[O_WATCH], val[O_WATCH]);
		s->watch = 0;
	}
	s->relist = SETTINGS_RELIST_DEFAULT;
	if (val[O_RELIST] && *val[O_RELIST] && settings_seconds(from[O_RELIST], val[O_RELIST], 1, MAX_RELIST, &s->relist, err, errlen) < 0)
		return -1;
	s->events = 1;   /* empty: the default, as for the other variables */
	if (val[O_EVENTS] && *val[O_EVENTS] && strcmp(val[O_EVENTS], "true") != 0) {
		if (strcmp(val[O_EVENTS], "false") != 0)
			return text_fail(err, errlen, "%s '%.32s' is neither true nor false", from[O_EVENTS], val[O_EVENTS]);
		s->events = 0;
	}
	if (val[O_OUTPUT] && strcmp(val[O_OUTPUT], "json") == 0)
		s->output = OUTPUT_JSON;
	else if (val[O_OUTPUT] && strcmp(val[O_OUTPUT], "table") != 0 && *val[O_OUTPUT])
		return text_fail(err, errlen, "%s '%.32s' is neither table nor json", from[O_OUTPUT], val[O_OUTPUT]);
	if (val[O_LISTEN] && *val[O_LISTEN]) {
		struct sockaddr_storage sa;
		socklen_t salen;
		char why[200];
		int any;
		if (listen_addr(val[O_LISTEN], &sa, &salen, &any, why, sizeof why) < 0)
			return text_fail(err, errlen, "%s %s", from[O_LISTEN], why);
		s->listen = val[O_LISTEN];
	}
	if (key(s->exclude_label, val, from, O_EXCLUDE, DEFAULT_EXCLUDE_LABEL, "label", err, errlen) < 0 ||
	    key(s->prune_label, val, from, O_LABEL, DEFAULT_PRUNE_LABEL, "label", err, errlen) < 0 ||
	    key(s->annotation, val, from, O_ANNOTATION, DEFAULT_ANNOTATION, "annotation", err, errlen) < 0)
		return -1;

	if (leader(s, val, from, err, errlen) < 0)
		return -1;

	if (val[O_SELF] && *val[O_SELF]) {
		if (copy(s->self_node, sizeof s->self_node, val[O_SELF]) < 0)
			return text_fail(err, errlen, "%s is longer than a node name can be", from[O_SELF]);
		s->self_source = from[O_SELF];
	} else if (!env("KUBERNETES_SERVICE_HOST")) {
		/* Outside a pod the host name is the node's name: the kubelet (and so k3s)
		 * registers it lowercased. */
		if (gethostname(s->self_node, sizeof s->self_node - 1) == 0) {
			s->self_node[sizeof s->self_node - 1] = '\0';
			for (char *c = s->self_node; *c; c++)
				if (*c >= 'A' && *c <= 'Z')
					*c = (char)(*c - 'A' + 'a');
			s->self_source = "host name";
		} else {
			s->self_node[0] = '\0';
		}
	}
	s->kubeconfig = val[O_KUBECONFIG] && *val[O_KUBECONFIG] ? val[O_KUBECONFIG] : NULL;
	/* as kubectl: --kubeconfig is one file, KUBECONFIG a list */
	s->kubeconfig_list = s->kubeconfig && from[O_KUBECONFIG] == opts[O_KUBECONFIG].env;
	s->context = val[O_CONTEXT] && *val[O_CONTEXT] ? val[O_CONTEXT] : NULL;
	s->server = val[O_SERVER];
	s->ca_file = val[O_CA];
	s->token_file = val[O_TOKEN];
	s->tls_server_name = val[O_TLS_NAME];
	if (s->server && (!s->ca_file || !s->token_file))
		return text_fail(err, errlen, "--server needs --ca-file and --token-file as well");
	if (!s->server && (s->ca_file || s->token_file))
		return text_fail(err, errlen, "--ca-file and --token-file go with --server");
	if (s->server && s->context)
		return text_fail(err, errlen, "--context picks a kubeconfig context, and --server uses none");
	return 0;
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

int settings_target(const struct settings *s, settings_env_fn env, struct kube_target *t,
    char *err, size_t errlen)
{
	const char *host = env("KUBERNETES_SERVICE_HOST");
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
	} else if (access(SETTINGS_K3S_KUBECONFIG, R_OK) == 0) {
		const char *k3s = SETTINGS_K3S_KUBECONFIG;
		r = kubeconfig_load_files(&k3s, 1, s->context, 0, t, err, errlen);
	} else {
		return text_fail(err, errlen, "no cluster found: give --server, --kubeconfig or KUBECONFIG, run in a pod, or on a k3s server with %s",
		    SETTINGS_K3S_KUBECONFIG);
	}
	if (r == 0 && s->tls_server_name && copy(t->tls_server_name, sizeof t->tls_server_name, s->tls_server_name) < 0)
		r = text_fail(err, errlen, "--tls-server-name is too long");
	if (r == 0 && strncmp(t->server, "https://", 8) != 0)
		r = text_fail(err, errlen, "server '%.128s' is not an https:// URL: noderecover only talks TLS", t->server);
	if (r < 0)
		kube_target_free(t);
	return r;
}
