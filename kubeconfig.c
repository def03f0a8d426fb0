/*
 * Kubeconfig files read into a kube_target: one file, or a KUBECONFIG list merged as kubectl
 * merges it. Runs once at start-up. It fills the target's heap buffers (freed by
 * kube_target_free); the trees yaml.c makes of the files are wiped when it is done. Errors name
 * the file, the line and the key, and never carry the text of a value: a token, key or
 * certificate never reaches a message.
 *
 * The text of each file is a tree first (yaml.h), so the rules here read YAML and JSON the same
 * way and never see a byte of either.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "kubeconfig.h"
#include "plugin.h"
#include "text.h"
#include "yaml.h"

#define KC_SHOWN 68                /* a name from the file is cut to fit this, its NUL included, in a message */
#define KC_PATH_SHOWN 512          /* a file's path is cut to this in the target's source */

/* One file of the merge. */
struct kc {
	const char *name;          /* its path, for messages */
	const char *dir;           /* relative names are taken from here; NULL: name's directory */
	struct yaml_node *nodes;
	int root;
	char *err;                 /* the reason, without the file's name and line */
	size_t errlen;
	int errline;
	int failed;                /* the reason in err is about this file */
};

/* Fails with a reason about the given line of k's file (0: the file as a whole); the merge puts
 * the file's name and the line in front once, when it is over. */
#define kc_fail(k, at, ...) ((k)->errline = (at), (k)->failed = 1, text_fail((k)->err, (k)->errlen, __VA_ARGS__))

/* A name from the file, made safe for a message by text_clean's rules (the one policy for text
 * from outside) and cut to fit buf. */
static const char *shown(const char *s, char *buf, size_t n)
{
	return text_clean(buf, n, s, strlen(s), NULL, 0);
}

/* ---- base64 and files ---- */

int kubeconfig_base64_decode(const char *in, size_t inlen, unsigned char *out, size_t outcap,
    size_t *outlen)
{
	unsigned long acc = 0;
	size_t n = 0, o = 0, pad = 0;

	for (size_t i = 0; i < inlen; i++) {
		unsigned char c = (unsigned char)in[i];
		int v;
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
			v = 0;
		} else {
			if (pad)
				return -1;  /* data after padding */
			if (c >= 'A' && c <= 'Z') v = c - 'A';
			else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
			else if (c >= '0' && c <= '9') v = c - '0' + 52;
			else if (c == '+') v = 62;
			else if (c == '/') v = 63;
			else return -1;
		}
		acc = acc << 6 | (unsigned long)v;
		if (++n % 4)
			continue;
		if (pad > 2 || o + 3 - pad > outcap)
			return -1;
		out[o++] = (unsigned char)(acc >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(acc >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)acc;
		acc = 0;
		if (pad)
			n = 0, pad = 3;  /* padding ends the data: anything but white space after it fails */
	}
	if (n % 4)
		return -1;
	*outlen = o;
	return 0;
}

static int resolve(struct kc *k, int line, const char *what, const char *p, char *out, size_t n)
{
	const char *slash = k->dir ? NULL : strrchr(k->name, '/');
	int w;

	/* as kubectl: relative to the directory of the file that named it */
	if (p[0] == '/' || (k->dir && !k->dir[0]))
		w = snprintf(out, n, "%s", p);
	else if (k->dir)
		w = snprintf(out, n, "%s/%s", k->dir, p);
	else if (!slash)
		w = snprintf(out, n, "./%s", p);
	else if (slash == k->name)
		w = snprintf(out, n, "/%s", p);
	else
		w = snprintf(out, n, "%.*s/%s", (int)(slash - k->name), k->name, p);
	if (w < 0 || (size_t)w >= n)
		return kc_fail(k, line, "%s: the path is longer than %zu bytes", what, n - 1);
	return 0;
}

/* PEM text is not checked here (BearSSL does that), but a cut-off file should not pass as one. */
static int pem_whole(const char *s, size_t n)
{
	const char *end = NULL;
	int begin = 0;

	for (size_t i = 0; i + 9 <= n; i++)
		if (!memcmp(s + i, "-----END ", 9))
			end = s + i + 9;
	if (!end)
		return 0;
	for (size_t i = 0; i + 11 <= n && !begin; i++)
		begin = !memcmp(s + i, "-----BEGIN ", 11);
	if (!begin)
		return 0;
	for (; end + 5 <= s + n && *end != '\n'; end++)
		if (!memcmp(end, "-----", 5))
			return 1;
	return 0;
}

/* ---- the kubeconfig ---- */

/* The value under key in mapping m: its index, -1 when absent or null, -2 on error. */
static int get(struct kc *k, int m, const char *key)
{
	int found = -1;

	for (int c = k->nodes[m].child; c >= 0; c = k->nodes[c].next) {
		if (strcmp(k->nodes[c].key, key) != 0)
			continue;
		if (found >= 0)
			return kc_fail(k, k->nodes[c].line, "%s appears twice", key), -2;
		found = c;
	}
	return found >= 0 && k->nodes[found].type == YAML_NULL ? -1 : found;
}

/* A string under key: *s is its text, or NULL when absent, null or empty. */
static int get_str(struct kc *k, int m, const char *what, const char *key, const char **s)
{
	int v = get(k, m, key);

	*s = NULL;
	if (v == -2)
		return -1;
	if (v < 0)
		return 0;
	if (k->nodes[v].type != YAML_STR)
		return kc_fail(k, k->nodes[v].line, "%s: %s must be a string", what, key);
	if (k->nodes[v].len > 0)
		*s = k->nodes[v].str;
	return 0;
}

/* PEM from datakey (base64, preferred as kubectl does) or the file pathkey names; *out stays NULL when neither is set. */
static int load_pem(struct kc *k, int m, const char *what, const char *datakey,
    const char *pathkey, char **out, size_t *outlen)
{
	const char *p;
	int v = get(k, m, datakey), line;

	*out = NULL;
	*outlen = 0;
	if (v == -2)
		return -1;
	if (v >= 0 && k->nodes[v].type == YAML_STR && k->nodes[v].len > 0) {
		const struct yaml_node *d = &k->nodes[v];
		size_t cap = d->len / 4 * 3 + 3;
		line = d->line;
		if (!(*out = malloc(cap + 1)))
			return kc_fail(k, line, "out of memory");
		if (kubeconfig_base64_decode(d->str, d->len, (unsigned char *)*out, cap, outlen))
			return kc_fail(k, line, "%s: %s is not valid base64", what, datakey);
		(*out)[*outlen] = '\0';
		if (!pem_whole(*out, *outlen))
			return kc_fail(k, line, "%s: %s does not decode to a whole PEM block",
			    what, datakey);
		return 0;
	}
	if (v >= 0 && k->nodes[v].type != YAML_STR)
		return kc_fail(k, k->nodes[v].line, "%s: %s must be a string", what, datakey);
	if (get_str(k, m, what, pathkey, &p))
		return -1;
	if (!p)
		return 0;
	{
		char path[TARGET_PATH_MAX], sb[KC_SHOWN], why[KC_SHOWN + 128];
		int r;
		line = k->nodes[get(k, m, pathkey)].line;
		if (resolve(k, line, what, p, path, sizeof path))
			return -1;
		if ((r = file_load(path, KUBECONFIG_MAX, out, outlen)) != FILE_OK) {
			file_error(why, sizeof why, pathkey, shown(path, sb, sizeof sb), r, KUBECONFIG_MAX);
			return kc_fail(k, line, "%s: %s", what, why);
		}
		if (!pem_whole(*out, *outlen))
			return kc_fail(k, line, "%s: %s %s does not hold a whole PEM block",
			    what, pathkey, shown(path, sb, sizeof sb));
	}
	return 0;
}

/*
 * The entry named name in list lkey of k's file: 1 with *entry set, 0 when the file has no such
 * list or no such entry (the next file may), -1 when the list or a name in it is malformed or
 * the name is there twice.
 */
static int find_in(struct kc *k, const char *lkey, const char *name, int *entry)
{
	char nb[KC_SHOWN];
	int list = get(k, k->root, lkey), found = -1;

	if (list == -2)
		return -1;
	if (list < 0)
		return 0;
	if (k->nodes[list].type != YAML_SEQ)
		return kc_fail(k, k->nodes[list].line, "%s must be a list", lkey);
	for (int e = k->nodes[list].child; e >= 0; e = k->nodes[e].next) {
		const char *n;
		if (k->nodes[e].type != YAML_MAP)
			return kc_fail(k, k->nodes[e].line, "an entry of %s is not a mapping", lkey);
		if (get_str(k, e, lkey, "name", &n))
			return -1;
		if (!n || strcmp(n, name) != 0)
			continue;
		if (found >= 0)
			return kc_fail(k, k->nodes[e].line, "two entries of %s are named \"%s\"", lkey,
			    shown(name, nb, sizeof nb));
		found = e;
	}
	if (found < 0)
		return 0;
	*entry = found;
	return 1;
}

/*
 * The body (the "cluster:", "context:" or "user:" mapping) of the entry named name in list lkey
 * of the first of the n files that has one, as kubectl merges: the first file to name an entry
 * gives all of it, and a later file's entry of that name is never read. *in is that file.
 * all: the files as a whole, for a reason about none of them in particular.
 */
static int find_named(struct kc *f, int n, struct kc *all, const char *lkey, const char *ekey,
    const char *name, const char *who, struct kc **in, int *body)
{
	char nb[KC_SHOWN];
	int e = -1, b, r = 0, i, lists = 0;

	for (i = 0; i < n && r == 0; i++) {
		if ((r = find_in(&f[i], lkey, name, &e)) < 0)
			return -1;
		lists += get(&f[i], f[i].root, lkey) >= 0;
	}
	if (r == 0) {
		struct kc *k = n == 1 ? &f[0] : all;
		if (!lists)
			return kc_fail(k, 0, "%s names %s \"%s\", but %s no %s", who, ekey,
			    shown(name, nb, sizeof nb), n == 1 ? "the file has" : "none of the files has", lkey);
		return kc_fail(k, 0, "%s names %s \"%s\", which is not in %s%s", who, ekey,
		    shown(name, nb, sizeof nb), n == 1 ? "" : "any file's ", lkey);
	}
	*in = &f[--i];
	if ((b = get(*in, e, ekey)) == -2)
		return -1;
	if (b < 0 || (*in)->nodes[b].type != YAML_MAP)
		return kc_fail(*in, (*in)->nodes[e].line, "%s \"%s\" has no %s: mapping", ekey,
		    shown(name, nb, sizeof nb), ekey);
	*body = b;
	return 0;
}

static int check_server(struct kc *k, int line, const char *what, const char *s, size_t cap)
{
	const char *h = s + 8;

	if (!strncasecmp(s, "http://", 7))
		return kc_fail(k, line, "%s: the server is plain http://; noderecover talks to the API only over https://",
		    what);
	if (strncasecmp(s, "https://", 8) != 0)
		return kc_fail(k, line, "%s: the server is not an https:// URL", what);
	if (!*h || *h == '/' || *h == ':')
		return kc_fail(k, line, "%s: the server URL has no host", what);
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f)
			return kc_fail(k, line, "%s: the server URL contains a space or control character", what);
	if (strcspn(h, "/@") < strcspn(h, "/"))
		return kc_fail(k, line, "%s: user information in the server URL (user@host) is not supported", what);
	if (strpbrk(s, "?#"))
		return kc_fail(k, line, "%s: the server URL has a query or fragment", what);
	if (strlen(s) >= cap)
		return kc_fail(k, line, "%s: the server URL is longer than %zu bytes", what, cap - 1);
	return 0;
}

static int read_cluster(struct kc *k, int c, const char *name, struct kube_target *t)
{
	char what[KC_SHOWN + 32], nb[KC_SHOWN];
	const char *s;
	int v;

	snprintf(what, sizeof what, "cluster \"%s\"", shown(name, nb, sizeof nb));
	if (get_str(k, c, what, "proxy-url", &s))
		return -1;
	if (s)
		return kc_fail(k, k->nodes[get(k, c, "proxy-url")].line,
		    "%s: proxy-url is set, and noderecover does not support proxies", what);
	if ((v = get(k, c, "insecure-skip-tls-verify")) == -2)
		return -1;
	if (v >= 0 && !(k->nodes[v].type == YAML_STR && k->nodes[v].plain &&
	    !strcasecmp(k->nodes[v].str, "false")))
		return kc_fail(k, k->nodes[v].line, "%s: insecure-skip-tls-verify is set; noderecover always "
		    "verifies the API server's certificate", what);
	if (get_str(k, c, what, "server", &s))
		return -1;
	if (!s)
		return kc_fail(k, k->nodes[c].line, "%s has no server", what);
	if (check_server(k, k->nodes[get(k, c, "server")].line, what, s, sizeof t->server))
		return -1;
	memcpy(t->server, s, strlen(s) + 1);
	if (get_str(k, c, what, "tls-server-name", &s))
		return -1;
	if (s) {
		int line = k->nodes[get(k, c, "tls-server-name")].line;
		if (strlen(s) >= sizeof t->tls_server_name)
			return kc_fail(k, line, "%s: tls-server-name is longer than %zu bytes", what,
			    sizeof t->tls_server_name - 1);
		for (const char *p = s; *p; p++)
			if ((unsigned char)*p <= 0x20 || *p == 0x7f)
				return kc_fail(k, line, "%s: tls-server-name contains a space or control character", what);
		memcpy(t->tls_server_name, s, strlen(s) + 1);
	}
	if (load_pem(k, c, what, "certificate-authority-data", "certificate-authority", &t->ca_pem, &t->ca_len))
		return -1;
	if (!t->ca_pem)
		return kc_fail(k, k->nodes[c].line, "%s has neither certificate-authority nor certificate-authority-data, "
		    "and noderecover never falls back to the system's CA roots", what);
	return 0;
}

/* A bool written as true or false (plain), into *out; absent or null: 0. */
static int get_bool(struct kc *k, int m, const char *what, const char *key, int *out)
{
	int v = get(k, m, key);

	*out = 0;
	if (v == -2)
		return -1;
	if (v < 0)
		return 0;
	if (k->nodes[v].type != YAML_STR || !k->nodes[v].plain ||
	    (strcmp(k->nodes[v].str, "true") != 0 && strcmp(k->nodes[v].str, "false") != 0))
		return kc_fail(k, k->nodes[v].line, "%s: %s must be true or false", what, key);
	*out = strcmp(k->nodes[v].str, "true") == 0;
	return 0;
}

/*
 * The user's exec: mapping (client.authentication.k8s.io/v1 or v1beta1) into t->plugin: the
 * command (a name with a '/' taken from the file's directory, as kubectl does; a bare name
 * looked up on the PATH when it runs), args, env, provideClusterInfo, installHint. Refused: an
 * older apiVersion, interactiveMode Always (noderecover never has a terminal to give it).
 */
static int read_exec(struct kc *k, int x, const char *what, struct kube_target *t)
{
	char why[160], path[TARGET_PATH_MAX];
	const char *api, *cmd, *mode, *hint;
	int v, line = k->nodes[x].line, ci;

	if (k->nodes[x].type != YAML_MAP)
		return kc_fail(k, line, "%s: exec must be a mapping", what);
	if (get_str(k, x, what, "apiVersion", &api) || get_str(k, x, what, "command", &cmd) ||
	    get_str(k, x, what, "interactiveMode", &mode) || get_str(k, x, what, "installHint", &hint) ||
	    get_bool(k, x, what, "provideClusterInfo", &ci))
		return -1;
	if (!api || (strcmp(api, PLUGIN_V1) != 0 && strcmp(api, PLUGIN_V1BETA1) != 0))
		return kc_fail(k, line, "%s: exec apiVersion must be " PLUGIN_V1 " or " PLUGIN_V1BETA1 "%s", what,
		    api && strstr(api, "v1alpha1") ? " (v1alpha1 was removed in Kubernetes 1.24)" : "");
	if (!cmd)
		return kc_fail(k, line, "%s: exec has no command", what);
	if (mode && strcmp(mode, "Never") != 0 && strcmp(mode, "IfAvailable") != 0)
		return kc_fail(k, line, "%s: exec interactiveMode is %s; noderecover runs plugins without a terminal (Never or IfAvailable)",
		    what, strcmp(mode, "Always") == 0 ? "Always" : "not Never, IfAvailable or Always");
	if (strchr(cmd, '/') && resolve(k, line, what, cmd, path, sizeof path))
		return -1;
	if (!(t->plugin = plugin_new(api, strchr(cmd, '/') ? path : cmd)))
		return kc_fail(k, line, "out of memory");
	t->plugin->cluster_info = ci;
	if (hint)
		text_clean(t->plugin->install_hint, sizeof t->plugin->install_hint, hint, strlen(hint), NULL, 0);
	if ((v = get(k, x, "args")) == -2)
		return -1;
	if (v >= 0 && k->nodes[v].type != YAML_SEQ)
		return kc_fail(k, k->nodes[v].line, "%s: exec args must be a list", what);
	for (int a = v >= 0 ? k->nodes[v].child : -1; a >= 0; a = k->nodes[a].next) {
		if (k->nodes[a].type != YAML_STR)
			return kc_fail(k, k->nodes[a].line, "%s: an exec arg is not a string", what);
		if (plugin_add_arg(t->plugin, k->nodes[a].str, why, sizeof why))
			return kc_fail(k, k->nodes[a].line, "%s: exec: %s", what, why);
	}
	if ((v = get(k, x, "env")) == -2)
		return -1;
	if (v >= 0 && k->nodes[v].type != YAML_SEQ)
		return kc_fail(k, k->nodes[v].line, "%s: exec env must be a list", what);
	for (int e = v >= 0 ? k->nodes[v].child : -1; e >= 0; e = k->nodes[e].next) {
		const char *n, *val;
		if (k->nodes[e].type != YAML_MAP)
			return kc_fail(k, k->nodes[e].line, "%s: an exec env entry is not a mapping", what);
		if (get_str(k, e, what, "name", &n) || get_str(k, e, what, "value", &val))
			return -1;
		if (!n || plugin_add_env(t->plugin, n, val ? val : "", why, sizeof why))
			return kc_fail(k, k->nodes[e].line, "%s: exec: %s", what, n ? why : "an env entry has no name");
	}
	return 0;
}

static int read_user(struct kc *k, int u, const char *name, struct kube_target *t)
{
	static const char *const refused[][2] = {
		{ "auth-provider", "auth-provider plugins are not supported" },
		{ "username", "basic authentication (username and password) is not supported" },
		{ "password", "basic authentication (username and password) is not supported" },
		{ "as", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported" },
		{ "as-uid", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported" },
		{ "as-groups", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported" },
		{ "as-user-extra", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported" },
	};
	char what[KC_SHOWN + 32], nb[KC_SHOWN];
	const char *token, *tfile;
	int v;

	snprintf(what, sizeof what, "user \"%s\"", shown(name, nb, sizeof nb));
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		if ((v = get(k, u, refused[i][0])) == -2)
			return -1;
		if (v >= 0 && !(k->nodes[v].type == YAML_STR && k->nodes[v].len == 0))
			return kc_fail(k, k->nodes[v].line, "%s: %s", what, refused[i][1]);
	}
	if (get_str(k, u, what, "token", &token) || get_str(k, u, what, "tokenFile", &tfile))
		return -1;
	if (load_pem(k, u, what, "client-certificate-data", "client-certificate", &t->cert_pem, &t->cert_len) ||
	    load_pem(k, u, what, "client-key-data", "client-key", &t->key_pem, &t->key_len))
		return -1;
	if ((v = get(k, u, "exec")) == -2)
		return -1;
	if (v >= 0) {
		/* one source of credentials: which one a request carries is never a guess */
		if (token || tfile || t->cert_pem || t->key_pem)
			return kc_fail(k, k->nodes[v].line, "%s has an exec plugin and a token, tokenFile or client certificate too; "
			    "noderecover takes one of them", what);
		return read_exec(k, v, what, t);
	}
	if (t->cert_pem && !t->key_pem)
		return kc_fail(k, k->nodes[u].line, "%s has a client certificate but no client-key or client-key-data", what);
	if (t->key_pem && !t->cert_pem)
		return kc_fail(k, k->nodes[u].line, "%s has a client key but no client-certificate or client-certificate-data",
		    what);
	if (tfile) {
		/* the file wins over an inline token, as in client-go, and is re-read by kube.c */
		char sb[KC_SHOWN];
		int line = k->nodes[get(k, u, "tokenFile")].line;
		struct stat st;
		if (resolve(k, line, what, tfile, t->token_file, sizeof t->token_file))
			return -1;
		/* Only that it is there: kube.c reads it, checks it, and reads it again as the
		 * kubelet rotates it. */
		if (stat(t->token_file, &st) < 0)
			return kc_fail(k, line, "%s: cannot read tokenFile %s: %s", what,
			    shown(t->token_file, sb, sizeof sb), strerror(errno));
		if (st.st_size == 0)
			return kc_fail(k, line, "%s: tokenFile %s is empty", what, shown(t->token_file, sb, sizeof sb));
	} else if (token) {
		int line = k->nodes[get(k, u, "token")].line;
		if (!target_token_ok(token, strlen(token)))
			return kc_fail(k, line, "%s: the token is longer than %d bytes or holds a byte that cannot go in an HTTP header",
			    what, TARGET_TOKEN_MAX);
		if (!(t->token = strdup(token)))
			return kc_fail(k, line, "out of memory");
	} else if (!t->cert_pem) {
		return kc_fail(k, k->nodes[u].line, "%s has no credentials: noderecover needs token, tokenFile, "
		    "or a client certificate and key", what);
	}
	return 0;
}

/*
 * The context (--context, else the first current-context set), its cluster and its user, each
 * from the first file that names it, read into t. all: the files as a whole, for messages.
 */
static int read_config(struct kc *f, int n, struct kc *all, const char *context, struct kube_target *t)
{
	char who[KC_SHOWN + 32], nb[KC_SHOWN], nb2[KC_SHOWN], nb3[KC_SHOWN];
	const char *cc = context, *cl, *us;
	struct kc *fx, *fc, *fu;
	int ctx, clu, usr, w;

	for (int i = 0; i < n; i++) {
		const char *c;
		if (f[i].nodes[f[i].root].type != YAML_MAP)
			return kc_fail(&f[i], f[i].nodes[f[i].root].line, "not a kubeconfig: the top level is not a mapping");
		if (get_str(&f[i], f[i].root, "the file", "current-context", &c))
			return -1;
		/* a later file's current-context never overrides an earlier one's, as in kubectl */
		if (!cc)
			cc = c;
	}
	if (!cc)
		return kc_fail(n == 1 ? &f[0] : all, 0, "no current-context is set; noderecover uses the current context (or the one --context names)");
	if (find_named(f, n, all, "contexts", "context", cc, context ? "--context" : "current-context", &fx, &ctx))
		return -1;
	snprintf(who, sizeof who, "context \"%s\"", shown(cc, nb, sizeof nb));
	if (get_str(fx, ctx, who, "cluster", &cl) || get_str(fx, ctx, who, "user", &us))
		return -1;
	if (!cl)
		return kc_fail(fx, fx->nodes[ctx].line, "%s names no cluster", who);
	if (!us)
		return kc_fail(fx, fx->nodes[ctx].line, "%s names no user", who);
	if (find_named(f, n, all, "clusters", "cluster", cl, who, &fc, &clu) ||
	    find_named(f, n, all, "users", "user", us, who, &fu, &usr))
		return -1;
	if (read_cluster(fc, clu, cl, t) || read_user(fu, usr, us, t))
		return -1;
	if (t->plugin) {
		char why[200];
		if (plugin_ready(t->plugin, t, why, sizeof why))
			return kc_fail(fu, 0, "user \"%s\": exec: %s", shown(us, nb, sizeof nb), why);
	}
	if (fx == fc && fx == fu)
		w = snprintf(t->source, sizeof t->source, "kubeconfig %s (context %s%s)", fx->name,
		    shown(cc, nb, sizeof nb), context ? ", chosen by --context" : "");
	else
		w = snprintf(t->source, sizeof t->source, "kubeconfig: context %s%s from %.*s, cluster %s from %.*s, user %s from %.*s",
		    shown(cc, nb, sizeof nb), context ? " (chosen by --context)" : "", KC_PATH_SHOWN, fx->name,
		    shown(cl, nb2, sizeof nb2), KC_PATH_SHOWN, fc->name, shown(us, nb3, sizeof nb3), KC_PATH_SHOWN, fu->name);
	if (w < 0 || (size_t)w >= sizeof t->source)
		return kc_fail(fx, 0, "the file's name is too long");
	return 0;
}

/* Puts "kubeconfig NAME: line N: " in front of the reason. */
static void put_where(const struct kc *k)
{
	char why[1024];

	if (k->errlen == 0)
		return;
	snprintf(why, sizeof why, "%s", k->err);
	if (k->errline > 0)
		text_fail(k->err, k->errlen, "kubeconfig %s: line %d: %s", k->name, k->errline, why);
	else
		text_fail(k->err, k->errlen, "kubeconfig %s: %s", k->name, why);
}

int kubeconfig_merge(const struct kubeconfig_text *x, int n, const char *context, struct kube_target *t,
    char *err, size_t errlen)
{
	struct kc f[KUBECONFIG_FILES_MAX], all;
	struct yaml_doc docs[KUBECONFIG_FILES_MAX];
	char names[KC_PATH_SHOWN + 8];
	size_t used = 0, total = 0;
	int r = 0, i;

	memset(t, 0, sizeof *t);
	memset(f, 0, sizeof f);
	memset(&all, 0, sizeof all);
	memset(docs, 0, sizeof docs);
	if (errlen)
		err[0] = '\0';
	/* the files as one name, for a reason about none of them alone: "a.yaml, b.yaml" */
	names[0] = '\0';
	for (i = 0; n <= KUBECONFIG_FILES_MAX && i < n && used < KC_PATH_SHOWN; i++) {
		int w = snprintf(names + used, KC_PATH_SHOWN - used, "%s%s", i ? ", " : "", x[i].name ? x[i].name : "(text)");
		used = w < 0 || (size_t)w >= KC_PATH_SHOWN - used ? KC_PATH_SHOWN : used + (size_t)w;
	}
	if (used >= KC_PATH_SHOWN)
		memcpy(names + KC_PATH_SHOWN - 1, "...", 4);
	all.name = names;
	all.err = err;
	all.errlen = errlen;
	if (n < 1 || n > KUBECONFIG_FILES_MAX) {
		r = kc_fail(&all, 0, "%d files; noderecover merges 1 to %d", n, KUBECONFIG_FILES_MAX);
		n = 0;
	}
	for (i = 0; i < n; i++)
		total += x[i].len;
	if (!r && n > 1 && total > KUBECONFIG_MAX)
		r = kc_fail(&all, 0, "more than %d bytes in all; refusing them", KUBECONFIG_MAX);
	for (i = 0; !r && i < n; i++) {
		f[i].name = x[i].name ? x[i].name : "(text)";
		f[i].dir = x[i].dir;
		f[i].err = err;
		f[i].errlen = errlen;
		if (x[i].len > KUBECONFIG_MAX)
			r = kc_fail(&f[i], 0, "larger than %d bytes; refusing it", KUBECONFIG_MAX);
		else if ((r = yaml_parse(&docs[i], x[i].text, x[i].len, err, errlen, &f[i].errline)) != 0)
			f[i].failed = 1;
		f[i].nodes = docs[i].nodes;
		f[i].root = docs[i].root;
	}
	if (!r)
		r = read_config(f, n, &all, context, t);
	for (i = 0; i < n; i++)
		yaml_free(&docs[i]);
	if (r) {
		kube_target_free(t);
		for (i = 0; i < n && !f[i].failed; i++)
			;
		put_where(i < n ? &f[i] : &all);
	}
	return r ? -1 : 0;
}

int kubeconfig_parse(const char *text, size_t len, const char *dir, const char *name,
    struct kube_target *t, char *err, size_t errlen)
{
	const struct kubeconfig_text x = { text, len, dir ? dir : "", name };

	return kubeconfig_merge(&x, 1, NULL, t, err, errlen);
}

int kubeconfig_load_files(const char *const *paths, int n, const char *context, int skip_missing,
    struct kube_target *t, char *err, size_t errlen)
{
	struct kubeconfig_text x[KUBECONFIG_FILES_MAX];
	char skipped[KC_PATH_SHOWN + 8] = "";
	size_t used = 0, total = 0;
	int m = 0, r = 0;

	memset(t, 0, sizeof *t);
	if (n < 1 || n > KUBECONFIG_FILES_MAX)
		return text_fail(err, errlen, "KUBECONFIG names %d files; noderecover merges 1 to %d", n, KUBECONFIG_FILES_MAX);
	for (int i = 0; i < n && !r; i++) {
		char *text;
		size_t len;
		int s = file_load(paths[i], KUBECONFIG_MAX, &text, &len);
		if (s == FILE_UNREADABLE && errno == ENOENT && skip_missing) {
			/* as kubectl: a file of the list that is not there is skipped, and said */
			int w = snprintf(skipped + used, KC_PATH_SHOWN - used, "%s%s", used ? ", " : "", paths[i]);
			used = w < 0 || (size_t)w >= KC_PATH_SHOWN - used ? KC_PATH_SHOWN : used + (size_t)w;
			continue;
		}
		if (s != FILE_OK) {
			r = file_error(err, errlen, "kubeconfig", paths[i], s, KUBECONFIG_MAX);
			break;
		}
		/* the list's ceiling is one file's, so merging never costs more than one big file */
		if ((total += len) > KUBECONFIG_MAX)
			r = text_fail(err, errlen, "kubeconfig %s: the KUBECONFIG files up to it hold more than %d bytes in all; refusing them",
			    paths[i], KUBECONFIG_MAX);
		x[m].text = text;
		x[m].len = len;
		x[m].dir = NULL;   /* the file's own directory */
		x[m++].name = paths[i];
	}
	if (!r && m == 0)
		r = text_fail(err, errlen, "none of the KUBECONFIG files exists (%s)", skipped);
	if (!r && (r = kubeconfig_merge(x, m, context, t, err, errlen)) == 0 && used) {
		size_t l = strlen(t->source);
		snprintf(t->source + l, sizeof t->source - l, "; not there, skipped: %s", skipped);
	}
	for (int i = 0; i < m; i++) {
		explicit_bzero((char *)x[i].text, x[i].len);
		free((char *)x[i].text);
	}
	return r;
}

int kubeconfig_load(const char *path, struct kube_target *t, char *err, size_t errlen)
{
	return kubeconfig_load_files(&path, 1, NULL, 0, t, err, errlen);
}

void kube_target_free(struct kube_target *t)
{
	if (!t)
		return;
	if (t->token) {
		explicit_bzero(t->token, strlen(t->token));
		free(t->token);
	}
	if (t->key_pem) {
		explicit_bzero(t->key_pem, t->key_len);
		free(t->key_pem);
	}
	free(t->cert_pem);
	free(t->ca_pem);
	plugin_free(t->plugin);
	memset(t, 0, sizeof *t);
}
