/*
 * kubeconfig.c: the files kubectl and k3s write (YAML and JSON) read into a kube_target, and
 * every refusal with its message. Fixtures under kubeconfig/ (see kubeconfig/gen.sh); run from
 * tests/unit. No error may carry a token, key or certificate: every failing case checks that.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "kubeconfig.h"
#include "plugin.h"

#define CA64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlQ0EKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
#define CA_PEM "-----BEGIN CERTIFICATE-----\nMIIBfakeCA\n-----END CERTIFICATE-----\n"
#define KEY64 "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY2Zha2VrZXkKLS0tLS1FTkQgRUMgUFJJVkFURSBLRVktLS0tLQo="
#define NOTPEM64 "anVzdCBzb21lIHRleHQsIG5vIFBFTQo="
#define TOKEN "SECRETTOKEN-row-4f1d"

static char err[1024];
static char text[16384];

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = malloc(1 << 21);
	size_t n = 0;

	if (!f || !b) {
		fprintf(stderr, "cannot read fixture %s\n", path);
		exit(2);
	}
	n = fread(b, 1, (1 << 21) - 1, f);
	fclose(f);
	b[n] = '\0';
	*len = n;
	return b;
}

static int same_as_file(const char *buf, size_t len, const char *path)
{
	size_t n;
	char *want = slurp(path, &n);
	int ok = buf && n == len && memcmp(buf, want, n) == 0;

	free(want);
	return ok;
}

/* Nothing from a value: tokens, base64 of PEM, PEM itself, a password. */
static int no_secret(const char *e)
{
	return !strstr(e, "SECRET") && !strstr(e, "LS0t") && !strstr(e, "BEGIN") && !strstr(e, "PRIVATE") &&
	    !strstr(e, "hunter2") && !strstr(e, "MIIB");
}

static int empty(const struct kube_target *t)
{
	return !t->ca_pem && !t->token && !t->cert_pem && !t->key_pem && !t->server[0] && !t->token_file[0] &&
	    !t->source[0];
}

/* Parses s and wants a refusal whose message holds want (and want2 when given), and no secret. */
static int refused_with(const char *s, const char *dir, const char *want, const char *want2)
{
	struct kube_target t;
	int r = kubeconfig_parse(s, strlen(s), dir, "test.yaml", &t, err, sizeof err);
	int ok = r == -1 && strstr(err, "kubeconfig test.yaml: ") == err && strstr(err, want) &&
	    (!want2 || strstr(err, want2)) && no_secret(err) && empty(&t);

	if (!ok)
		fprintf(stderr, "  wanted \"%s\"%s%s, got %d: %s\n", want, want2 ? " and " : "", want2 ? want2 : "",
		    r, err);
	kube_target_free(&t);
	return ok;
}

static int refused(const char *s, const char *want, const char *want2)
{
	return refused_with(s, "kubeconfig", want, want2);
}

/* A kubeconfig with one cluster and one user; the arguments are whole lines (or ""). */
static const char *cfg(const char *cluster_lines, const char *user_lines)
{
	int n = snprintf(text, sizeof text,
	    "apiVersion: v1\n"
	    "clusters:\n"
	    "- cluster:\n"
	    "%s"
	    "  name: c\n"
	    "contexts:\n"
	    "- context:\n"
	    "    cluster: c\n"
	    "    user: u\n"
	    "  name: x\n"
	    "current-context: x\n"
	    "kind: Config\n"
	    "users:\n"
	    "- name: u\n"
	    "  user:\n"
	    "%s", cluster_lines, user_lines);
	if (n < 0 || (size_t)n >= sizeof text)
		abort();
	return text;
}

#define GOOD_CLUSTER "    certificate-authority-data: " CA64 "\n    server: https://10.43.0.1:443\n"
#define GOOD_USER "    token: " TOKEN "\n"

static int parses(const char *s, struct kube_target *t)
{
	int r = kubeconfig_parse(s, strlen(s), "kubeconfig", "test.yaml", t, err, sizeof err);

	if (r)
		fprintf(stderr, "  unexpected refusal: %s\n", err);
	return r == 0;
}

static void t_k3s(void)
{
	struct kube_target t;

	check(kubeconfig_load("kubeconfig/k3s.yaml", &t, err, sizeof err) == 0);
	check(strcmp(t.server, "https://127.0.0.1:6443") == 0);
	check(t.tls_server_name[0] == '\0');
	check(same_as_file(t.ca_pem, t.ca_len, "kubeconfig/ca.crt"));
	check(t.ca_pem && t.ca_pem[t.ca_len] == '\0');
	check(same_as_file(t.cert_pem, t.cert_len, "kubeconfig/client.crt"));
	check(same_as_file(t.key_pem, t.key_len, "kubeconfig/client.key"));
	check(t.token == NULL && t.token_file[0] == '\0');
	check(strcmp(t.source, "kubeconfig kubeconfig/k3s.yaml (context default)") == 0);
	kube_target_free(&t);
	check(empty(&t));
	kube_target_free(&t);  /* twice is harmless */
}

static void t_kubectl(void)
{
	struct kube_target t;

	check(kubeconfig_load("kubeconfig/kubectl.yaml", &t, err, sizeof err) == 0);
	check(strcmp(t.server, "https://api.staging.example:6443") == 0);
	check(strcmp(t.tls_server_name, "kubernetes.default.svc") == 0);
	check(same_as_file(t.ca_pem, t.ca_len, "kubeconfig/ca.crt"));
	check(strcmp(t.token_file, "kubeconfig/token") == 0);
	check(t.token == NULL);  /* tokenFile wins over the inline token */
	check(t.cert_pem == NULL && t.key_pem == NULL);
	check(strcmp(t.source, "kubeconfig kubeconfig/kubectl.yaml (context staging)") == 0);
	kube_target_free(&t);
}

/* The same file with its current context switched to the entry that asks for what we refuse. */
static void t_kubectl_other_context(void)
{
	size_t n;
	char *s = slurp("kubeconfig/kubectl.yaml", &n);
	char *cc = strstr(s, "current-context: 'staging'");

	check(cc != NULL);
	if (!cc)
		return;
	memcpy(cc, "current-context: 'legacy' ", 26);
	check(refused(s, "insecure-skip-tls-verify", "line 16:"));
	/* and with that line gone, the plain-http server */
	char *isv = strstr(s, "    insecure-skip-tls-verify: true\n");
	memset(isv, ' ', 34);
	isv[4] = '#';
	check(refused(s, "plain http://", "cluster \"legacy\""));
	free(s);
}

static void t_crlf_bom(void)
{
	size_t n;
	char *s = slurp("kubeconfig/kubectl.yaml", &n);
	char *d = malloc(2 * n + 4), *o = d;
	struct kube_target t;

	memcpy(o, "\xef\xbb\xbf", 3);
	o += 3;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			*o++ = '\r';
		*o++ = s[i];
	}
	check(kubeconfig_parse(d, (size_t)(o - d), "kubeconfig", "crlf.yaml", &t, err, sizeof err) == 0);
	check(strcmp(t.server, "https://api.staging.example:6443") == 0);
	check(strcmp(t.tls_server_name, "kubernetes.default.svc") == 0);
	check(strcmp(t.token_file, "kubeconfig/token") == 0);
	kube_target_free(&t);
	free(s);
	free(d);
}

static void t_json(void)
{
	struct kube_target t;

	check(kubeconfig_load("kubeconfig/kubeconfig.json", &t, err, sizeof err) == 0);
	check(strcmp(t.server, "https://10.0.0.1:6443/prefix") == 0);
	check(strcmp(t.tls_server_name, "api.prod.example") == 0);
	check(same_as_file(t.ca_pem, t.ca_len, "kubeconfig/ca.crt"));
	check(same_as_file(t.cert_pem, t.cert_len, "kubeconfig/client.crt"));
	check(same_as_file(t.key_pem, t.key_len, "kubeconfig/client.key"));
	check(t.token && strcmp(t.token, "SECRETTOKEN-json-inline") == 0);
	check(strcmp(t.source, "kubeconfig kubeconfig/kubeconfig.json (context prod)") == 0);
	kube_target_free(&t);
}

/* JSON strings are decoded by json.c's decoder: every escape, a surrogate pair as one character. */
static void t_json_escapes(void)
{
	static const char doc[] =
	    "{\"current-context\": \"r\\ud83d\\ude80\",\n"
	    "\"contexts\": [{\"name\": \"r\\ud83d\\ude80\", \"context\": {\"cluster\": \"c\\\"1\", \"user\": \"u\\\\2\"}}],\n"
	    "\"clusters\": [{\"name\": \"c\\\"1\", \"cluster\": {\"server\": \"https:\\/\\/h\\u006fst.example:6443\", "
	    "\"tls-server-name\": \"caf\\u00e9\", \"certificate-authority-data\": \"" CA64 "\"}}],\n"
	    "\"users\": [{\"name\": \"u\\\\2\", \"user\": {\"token\": \"" TOKEN "\"}}]}\n";
	struct kube_target t;

	if (!check(parses(doc, &t)))
		return;
	check(strcmp(t.server, "https://host.example:6443") == 0);
	check(strcmp(t.tls_server_name, "caf\xc3\xa9") == 0);
	check(strstr(t.source, "context r\xf0\x9f\x9a\x80") != NULL);
	kube_target_free(&t);
}

static void t_quoted(void)
{
	struct kube_target t;
	const char *s =
	    "--- # a document marker, as some tools write\n"
	    "\"apiVersion\": v1\n"
	    "clusters:\n"
	    "  # a list indented under its key, as yaml.v3 writes it\n"
	    "  - name: 'it''s a   \n"
	    "      cluster'\n"
	    "    cluster:\n"
	    "      server: \"https://h\\x6fst\\u002eexample:6443\"   # escapes\n"
	    "      'certificate-authority-data': " CA64 "\n"
	    "      tls-server-name: caf\\u00e9\n"
	    "      insecure-skip-tls-verify: false\n"
	    "contexts:\n"
	    "- context:\n"
	    "    cluster: \"it's a cluster\"\n"
	    "    user: plain user\n"
	    "      continued\n"
	    "    namespace: ~\n"
	    "    extensions: []\n"
	    "  name: \"my\n"
	    "\n"
	    "    ctx\"\n"
	    "current-context: \"my\\nctx\"\n"
	    "preferences: {  }\n"
	    "users:\n"
	    "- name: plain user continued\n"
	    "  user:\n"
	    "    exec: null\n"
	    "    token: \"SECRET\\\n"
	    "       TOKEN-x\"\n";

	check(parses(s, &t));
	check(strcmp(t.server, "https://host.example:6443") == 0);
	/* a plain scalar keeps its backslashes: only double quotes have escapes */
	check(strcmp(t.tls_server_name, "caf\\u00e9") == 0);
	check(t.token && strcmp(t.token, "SECRETTOKEN-x") == 0);
	check(strcmp(t.source, "kubeconfig test.yaml (context my?ctx)") == 0);
	kube_target_free(&t);
}

static void t_plain_tls_name(void)
{
	struct kube_target t;

	check(parses(cfg(GOOD_CLUSTER "    tls-server-name: kubernetes # the API's own name\n", GOOD_USER), &t));
	check(strcmp(t.tls_server_name, "kubernetes") == 0);
	check(t.ca_pem && strcmp(t.ca_pem, CA_PEM) == 0 && t.ca_len == strlen(CA_PEM));
	check(t.token && strcmp(t.token, TOKEN) == 0);
	kube_target_free(&t);
}

static void t_client_files(void)
{
	struct kube_target t;

	check(parses(cfg("    certificate-authority: ca.crt\n    server: https://k3s:6443\n",
	    "    client-certificate: client.crt\n    client-key: client.key\n"), &t));
	check(same_as_file(t.ca_pem, t.ca_len, "kubeconfig/ca.crt"));
	check(same_as_file(t.cert_pem, t.cert_len, "kubeconfig/client.crt"));
	check(same_as_file(t.key_pem, t.key_len, "kubeconfig/client.key"));
	check(t.token == NULL && t.token_file[0] == '\0');
	kube_target_free(&t);
	/* data wins over a path, as in kubectl: the path here does not exist */
	check(parses(cfg("    certificate-authority: nowhere.crt\n    certificate-authority-data: " CA64
	    "\n    server: https://k3s:6443\n", GOOD_USER), &t));
	check(t.ca_pem && strcmp(t.ca_pem, CA_PEM) == 0);
	kube_target_free(&t);
}

#define EXEC_V1 "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"

/* An exec plugin's spec, as kubectl reads it: the command (a path from the file's directory, a
 * bare name as it is), args, env, provideClusterInfo in KUBERNETES_EXEC_INFO. */
static void t_exec_spec(void)
{
	struct kube_target t;
	struct plugin *p;

	check(parses(cfg(GOOD_CLUSTER, EXEC_V1 "      command: ./bin/aws\n      args:\n      - eks\n      - get-token\n"
	    "      env:\n      - name: AWS_PROFILE\n        value: prod\n      - name: EMPTY\n"
	    "      provideClusterInfo: true\n      interactiveMode: IfAvailable\n      installHint: brew install aws\n"), &t));
	if (!check((p = t.plugin) != NULL)) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	check(strcmp(p->command, "kubeconfig/./bin/aws") == 0);
	check(p->argc == 3 && strcmp(p->argv[0], p->command) == 0 && strcmp(p->argv[1], "eks") == 0 &&
	    strcmp(p->argv[2], "get-token") == 0 && p->argv[3] == NULL);
	check(p->nenv == 2 && strcmp(p->spec_env[0], "AWS_PROFILE=prod") == 0 && strcmp(p->spec_env[1], "EMPTY=") == 0);
	check(strstr(p->exec_info, "KUBERNETES_EXEC_INFO={\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
	    "\"spec\":{\"cluster\":{\"server\":\"https://10.43.0.1:443\",\"certificate-authority-data\":\"" CA64 "\"},"
	    "\"interactive\":false}}") == p->exec_info);
	check(strcmp(p->install_hint, "brew install aws") == 0);
	check(t.token == NULL && t.token_file[0] == '\0' && t.cert_pem == NULL);
	kube_target_free(&t);
	/* a bare name is looked up on the PATH when it runs; no cluster unless asked */
	check(parses(cfg(GOOD_CLUSTER, "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: gke-gcloud-auth-plugin\n"), &t));
	check(t.plugin && strcmp(t.plugin->command, "gke-gcloud-auth-plugin") == 0 &&
	    strstr(t.plugin->exec_info, "\"spec\":{\"interactive\":false}}") != NULL && !strstr(t.plugin->exec_info, "cluster"));
	kube_target_free(&t);
	check(refused(cfg(GOOD_CLUSTER, "    exec:\n      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x\n"),
	    "v1alpha1 was removed", "user \"u\""));
	check(refused(cfg(GOOD_CLUSTER, EXEC_V1 "      args:\n      - x\n"), "exec has no command", NULL));
	check(refused(cfg(GOOD_CLUSTER, EXEC_V1 "      command: x\n      interactiveMode: Always\n"), "interactiveMode is Always", NULL));
	check(refused(cfg(GOOD_CLUSTER, EXEC_V1 "      command: x\n      env:\n      - value: v\n"), "an env entry has no name", NULL));
	check(refused(cfg(GOOD_CLUSTER, EXEC_V1 "      command: x\n      env:\n      - name: A=B\n"), "holds '='", NULL));
	check(refused(cfg(GOOD_CLUSTER, EXEC_V1 "      command: x\n      args: x\n"), "exec args must be a list", NULL));
	check(refused(cfg(GOOD_CLUSTER, EXEC_V1 "      command: x\n      provideClusterInfo: yes\n"), "must be true or false", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    exec: aws\n"), "exec must be a mapping", NULL));
}

/* What an ExecCredential must be: the one asked for, a token or a certificate and key. */
static void t_exec_credential(void)
{
	struct plugin *p = plugin_new(PLUGIN_V1, "x");
	char e[256];

	if (!check(p != NULL))
		return;
#define EC(status) "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":" status "}"
#define PARSE(s) plugin_parse(p, s, strlen(s), e, sizeof e)
	check(PARSE(EC("{\"token\":\"" TOKEN "\"}")) == 0 && strcmp(p->token, TOKEN) == 0 && p->expires == 0 && p->gen == 1);
	check(PARSE(EC("{\"token\":\"t2-abcdefgh\",\"expirationTimestamp\":\"2026-12-03T10:00:00Z\"}")) == 0);
	check(p->expires == 1796292000 && p->gen == 2 && !plugin_expired(p, 1796291999) && plugin_expired(p, 1796292000));
	check(PARSE(EC("{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\nAA==\\n-----END CERTIFICATE-----\\n\","
	    "\"clientKeyData\":\"-----BEGIN EC PRIVATE KEY-----\\nAA==\\n-----END EC PRIVATE KEY-----\\n\"}")) == 0);
	check(p->cert_pem && strstr(p->cert_pem, "-----BEGIN CERTIFICATE-----\nAA==\n") && p->key_pem && p->token[0] == '\0');
	/* refused: each keeps the credential it had (gen 3) and says why without the output */
	check(PARSE("{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":{\"token\":\"" TOKEN) < 0 &&
	    strstr(e, "not JSON") && no_secret(e));
	check(PARSE("{\"kind\":\"Config\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":{\"token\":\"" TOKEN "\"}}") < 0 &&
	    strstr(e, "not an ExecCredential") && no_secret(e));
	check(PARSE("{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"status\":{\"token\":\"" TOKEN "\"}}") < 0 &&
	    strstr(e, "apiVersion is not client.authentication.k8s.io/v1"));
	check(PARSE(EC("{}")) < 0 && strstr(e, "neither a token nor"));
	check(PARSE(EC("{\"token\":{}}")) < 0 && strstr(e, "not a string"));
	check(PARSE(EC("{\"token\":\"a b\"}")) < 0 && strstr(e, "cannot go in an HTTP header"));
	check(PARSE(EC("{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\n-----END CERTIFICATE-----\"}")) < 0 &&
	    strstr(e, "without clientKeyData"));
	check(PARSE(EC("{\"token\":\"" TOKEN "\",\"expirationTimestamp\":\"tomorrow\"}")) < 0 && strstr(e, "RFC 3339"));
	check(PARSE("") < 0 && strstr(e, "printed nothing"));
	check(p->gen == 3 && p->cert_pem != NULL);
	plugin_free(p);
#undef PARSE
#undef EC
}

static void t_refused_user(void)
{
	check(refused(cfg(GOOD_CLUSTER, GOOD_USER "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
	    "      command: aws\n      args:\n      - eks\n      - get-token\n"),
	    "has an exec plugin and a token, tokenFile or client certificate too", "line 18:"));
	check(refused(cfg(GOOD_CLUSTER, GOOD_USER "    auth-provider:\n      name: oidc\n      config:\n"
	    "        id-token: SECRETTOKEN-oidc\n"), "auth-provider plugins are not supported", "user \"u\""));
	check(refused(cfg(GOOD_CLUSTER, "    username: admin\n    password: hunter2\n"),
	    "basic authentication", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    password: hunter2\n" GOOD_USER), "basic authentication", NULL));
	check(refused(cfg(GOOD_CLUSTER, GOOD_USER "    as: system:admin\n"), "impersonation", NULL));
	check(refused(cfg(GOOD_CLUSTER, GOOD_USER "    as-groups:\n    - system:masters\n"), "impersonation", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    namespace: x\n"), "has no credentials", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    token: \"\"\n"), "has no credentials", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    client-certificate-data: " CA64 "\n"), "no client-key", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    client-key-data: " KEY64 "\n"), "no client-certificate", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    client-certificate-data: " CA64 "\n    client-key-data: " NOTPEM64 "\n"),
	    "client-key-data does not decode to a whole PEM block", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    token: \"SECRETTOKEN with space\"\n"),
	    "cannot go in an HTTP header", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    token: \"SECRETTOKEN\\r\\nX-Evil: 1\"\n"),
	    "cannot go in an HTTP header", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    tokenFile: no-such-token\n"),
	    "cannot read tokenFile kubeconfig/no-such-token", "No such file"));
	check(refused(cfg(GOOD_CLUSTER, "    client-certificate: client.crt\n    client-key: missing.key\n"),
	    "cannot read client-key kubeconfig/missing.key", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    client-certificate: client.crt\n    client-key: token\n"),
	    "client-key kubeconfig/token does not hold a whole PEM block", NULL));
	check(refused(cfg(GOOD_CLUSTER, "    token:\n      nested: SECRETTOKEN-x\n"), "token must be a string", NULL));
}

static void t_refused_cluster(void)
{
	check(refused(cfg("    certificate-authority-data: " CA64 "\n    server: https://x\n"
	    "    insecure-skip-tls-verify: true\n", GOOD_USER), "insecure-skip-tls-verify is set", "line 6:"));
	check(refused(cfg("    certificate-authority-data: " CA64 "\n    server: https://x\n"
	    "    insecure-skip-tls-verify: \"false\"\n", GOOD_USER), "insecure-skip-tls-verify is set", NULL));
	check(refused(cfg(GOOD_CLUSTER "    proxy-url: http://proxy:3128\n", GOOD_USER), "proxy-url", NULL));
	check(refused(cfg("    certificate-authority-data: " CA64 "\n    server: http://10.43.0.1:80\n", GOOD_USER),
	    "plain http://", "cluster \"c\""));
	check(refused(cfg("    certificate-authority-data: " CA64 "\n    server: ftp://x\n", GOOD_USER),
	    "not an https:// URL", NULL));
	check(refused(cfg("    certificate-authority-data: " CA64 "\n    server: https://:6443\n", GOOD_USER),
	    "has no host", NULL));
	check(refused(cfg("    certificate-authority-data: " CA64 "\n    server: https://me:SECRET@h\n", GOOD_USER),
	    "user information", NULL));
	check(refused(cfg("    certificate-authority-data: " CA64 "\n", GOOD_USER), "cluster \"c\" has no server", NULL));
	check(refused(cfg("    server: https://10.43.0.1\n", GOOD_USER),
	    "never falls back to the system's CA roots", NULL));
	check(refused(cfg("    certificate-authority: missing-ca.crt\n    server: https://10.43.0.1\n", GOOD_USER),
	    "cannot read certificate-authority kubeconfig/missing-ca.crt", NULL));
	check(refused(cfg("    certificate-authority-data: LS0tLS1CRUdJTi!BDRVJU\n    server: https://x\n", GOOD_USER),
	    "certificate-authority-data is not valid base64", "line 4:"));
	check(refused(cfg("    certificate-authority-data: LS0tLS1CRUdJTiBDRVJU=\n    server: https://x\n", GOOD_USER),
	    "is not valid base64", NULL));
	check(refused(cfg("    certificate-authority-data: " NOTPEM64 "\n    server: https://x\n", GOOD_USER),
	    "does not decode to a whole PEM block", NULL));
	check(refused(cfg(GOOD_CLUSTER "    server: https://again\n", GOOD_USER), "server appears twice", "line 6:"));
}

static void t_refused_structure(void)
{
	const char *no_cc = "apiVersion: v1\nclusters: []\ncontexts: []\nusers: []\n";
	const char *dangling =
	    "clusters: []\ncontexts:\n- context: {}\n  name: other\ncurrent-context: gone\nusers: []\n";

	check(refused(no_cc, "no current-context is set", NULL));
	check(refused("current-context: \"\"\n", "no current-context is set", NULL));
	check(refused(dangling, "current-context names context \"gone\", which is not in contexts", NULL));
	check(refused("current-context: gone\n", "but the file has no contexts", NULL));
	cfg(GOOD_CLUSTER, GOOD_USER);
	memcpy(strstr(text, "    cluster: c\n"), "    cluster: d\n", 15);
	check(refused(text, "context \"x\" names cluster \"d\", which is not in clusters", NULL));
	cfg(GOOD_CLUSTER, GOOD_USER);
	memcpy(strstr(text, "    user: u\n"), "    user: v\n", 12);
	check(refused(text, "names user \"v\", which is not in users", NULL));
	cfg(GOOD_CLUSTER, GOOD_USER);
	memcpy(strstr(text, "    user: u\n"), "    user: ~\n", 12);
	check(refused(text, "context \"x\" names no user", NULL));
	check(refused(cfg(GOOD_CLUSTER "  name: c\n- cluster:\n" GOOD_CLUSTER, GOOD_USER),
	    "line 7:", "two entries of clusters are named \"c\""));
	cfg(GOOD_CLUSTER, GOOD_USER);
	strcat(text, "- name: u\n  user:\n    token: SECRETTOKEN-2\n");
	check(refused(text, "two entries of users are named \"u\"", NULL));
	check(refused("- a\n- b\n", "the top level is not a mapping", NULL));
	check(refused("clusters: 3\ncurrent-context: x\ncontexts:\n- name: x\n  context:\n    cluster: c\n"
	    "    user: u\n", "clusters must be a list", NULL));
	check(refused("current-context: x\ncontexts:\n- name: x\n", "context \"x\" has no context: mapping", NULL));
}

static void t_refused_yaml(void)
{
	check(refused("", "the file is empty", NULL));
	check(refused("# only a comment\n\n", "the file is empty", NULL));
	check(refused("current-context: x\nusers:\n- name: u\n  user:\n\ttoken: " TOKEN "\n", "line 5:", "tab"));
	check(refused("a: &anchor\n  b: 1\nc: *anchor\n", "line 1:", "anchors"));
	check(refused("a: *x\n", "aliases", NULL));
	check(refused("a: !!binary " CA64 "\n", "tags", NULL));
	check(refused("users:\n- name: u\n  user:\n    token: |\n      " TOKEN "\n", "line 4:", "block scalars"));
	check(refused("users:\n- name: u\n  user:\n    token: >-\n      " TOKEN "\n", "block scalars", NULL));
	check(refused("contexts:\n- context: {cluster: c, user: u}\n", "line 2:", "supported only empty"));
	check(refused("a: [x]\n", "supported only empty", NULL));
	check(refused("users:\n- name: u\n  user:\n    token: \"" TOKEN "\n", "line 4:", "not closed"));
	check(refused("users:\n- name: u\n  user:\n    token: '" TOKEN "\n  # more\n", "line 4:", "not closed"));
	check(refused("a: 1\n  b: 2\n", "line 2:", "unexpected indentation"));
	check(refused("a:\n    b: 1\n  c: 2\n", "line 3:", "unexpected indentation"));
	check(refused("a: b: c\n", "line 1:", "cannot contain \": \""));
	check(refused("a: x\n---\nb: y\n", "line 2:", "expected \"key: value\""));
	check(refused("a: x\n- b\n", "line 2:", "a list item where a key was expected"));
	check(refused("a: x\njust text\n", "line 2:", "expected \"key: value\""));
	check(refused("a: x\n: y\n", "line 2:", "an empty key"));
	check(refused("a: \"x\" trailing\n", "line 1:", "unexpected text after a value"));
	check(refused("a: \"\\q\"\n", "unknown escape", NULL));
	check(refused("a: \"\\u12\"\n", "hex digits", NULL));
	check(refused("a: \"\\0\"\n", "NUL", NULL));
	check(refused("a: \"\\ud800\"\n", "not a character", NULL));
	check(refused("a: x\nb: \"two\nc: three\n", "line 2:", "not closed"));
	check(refused("a: x\rb: y\n", "line 1:", "carriage return"));
	check(refused("a: x\nb: \x01\n", "line 2:", "control character"));
	check(refused("? complex\n: key\n", "complex keys", NULL));
	check(refused("%YAML 1.2\n---\na: b\n", "directives", NULL));
	check(refused("  a: 1\nb: 2\n", "line 2:", "unexpected text after the top-level mapping"));
	{
		struct kube_target t;
		const char nul[] = "a: x\0b: y\n";
		check(kubeconfig_parse(nul, sizeof nul - 1, ".", "n", &t, err, sizeof err) == -1);
		check(strstr(err, "control character (byte 0x00)") != NULL);
	}
	{
		/* nesting deep enough to exhaust a recursive parser's stack if it had no limit */
		size_t n = 0;
		for (int i = 0; i < 5000 && n + 8 < sizeof text; i++)
			text[n++] = '-', text[n++] = ' ';
		text[n++] = 'x', text[n++] = '\n', text[n] = '\0';
		check(refused(text, "nested deeper than", NULL));
		n = 0;
		for (int i = 0; i < 40; i++) {
			memset(text + n, ' ', (size_t)i);
			n += (size_t)i;
			n += (size_t)sprintf(text + n, "k%d:\n", i);
		}
		check(refused(text, "nested deeper than", NULL));
	}
}

static void t_refused_json(void)
{
	check(refused("{\"current-context\": \"x\",}", "not valid JSON", NULL));
	check(refused("{\"current-context\": \"x\"", "ends early", NULL));
	check(refused("{\"current-context\": \"x\"} {\"a\": 1}", "not valid JSON: text after the end of the document", NULL));
	check(refused("{\"current-context\": \"x\" \"contexts\"}", "not valid JSON: expected ',' or '}' after a member", NULL));
	check(refused("{\"current-context\" \"x\"}", "not valid JSON: expected ':' after a key", NULL));
	check(refused("{\"current-context\": \"\\ud800\"}", "not valid JSON: a high surrogate without its low half", NULL));
	check(refused("{\"current-context\": \"a\tb\"}", "not valid JSON: a control character in a string", NULL));
	check(refused("{\"a\": 01, \"current-context\": \"x\"}", "not valid JSON: a number with a leading zero", NULL));
	check(refused("{\"a\": [1 2], \"current-context\": \"x\"}", "not valid JSON", NULL));
	check(refused("{\"a\": [1,, 2], \"current-context\": \"x\"}", "not valid JSON", NULL));
	check(refused("{\"a\": [1, 2,]}", "not valid JSON", NULL));
	check(refused("{\"a\": \"SECRETTOKEN\"\n,}", "line 2:", "not valid JSON"));
	check(refused("{\"current-context\": \"x\", \"current-context\": \"y\"}", "current-context appears twice", NULL));
	check(refused("{\"current-context\": \"\\u0000\"}", "not a character", NULL));
	check(refused("{\n\"users\": [{\"name\": \"u\", \"user\": {\"token\": \"" TOKEN "\", \"exec\": {}}}],\n"
	    "\"contexts\": [{\"name\": \"x\", \"context\": {\"cluster\": \"c\", \"user\": \"u\"}}],\n"
	    "\"clusters\": [{\"name\": \"c\", \"cluster\": {\"server\": \"https://h\", "
	    "\"certificate-authority-data\": \"" CA64 "\"}}],\n\"current-context\": \"x\"}\n",
	    "line 2:", "has an exec plugin and a token"));
	check(refused("{\"clusters\": [{\"name\": \"c\", \"cluster\": {\"server\": \"https://h\", "
	    "\"certificate-authority-data\": \"" CA64 "\", \"insecure-skip-tls-verify\": true}}],"
	    "\"contexts\": [{\"name\": \"x\", \"context\": {\"cluster\": \"c\", \"user\": \"u\"}}],"
	    "\"users\": [{\"name\": \"u\", \"user\": {\"token\": \"" TOKEN "\"}}], \"current-context\": \"x\"}",
	    "insecure-skip-tls-verify is set", NULL));
	{
		char deep[400] = "{\"a\":";
		size_t n = strlen(deep);
		for (int i = 0; i < 100; i++)
			deep[n++] = '[';
		for (int i = 0; i < 100; i++)
			deep[n++] = ']';
		deep[n++] = '}', deep[n] = '\0';
		check(refused(deep, "nested deeper than", NULL));
	}
}

/* Every cut of a real file is refused cleanly, until the cut leaves a whole, valid file. */
static void truncations(const char *path, const char *last_needed)
{
	size_t n;
	char *s = slurp(path, &n);
	const char *tail = strstr(s, last_needed);
	size_t must_fail = tail ? (size_t)(tail - s) + strlen(last_needed) : 0;
	int bad = 0, ok_after = 0;

	check(tail != NULL);
	for (size_t len = 0; len <= n; len++) {
		struct kube_target t;
		char *cut = malloc(len + 1);  /* exactly len bytes, so ASan sees any read past them */
		memcpy(cut, s, len);
		int r = kubeconfig_parse(cut, len, "kubeconfig", path, &t, err, sizeof err);
		if (r == 0 && len < must_fail)
			bad++, fprintf(stderr, "  cut at %zu accepted\n", len);
		if (r == -1 && (!err[0] || !no_secret(err) || !empty(&t)))
			bad++, fprintf(stderr, "  cut at %zu: bad error: %s\n", len, err);
		ok_after += r == 0;
		kube_target_free(&t);
		free(cut);
	}
	check(bad == 0);
	check(ok_after >= 1);  /* the whole file itself */
	free(s);
}

static void t_truncated(void)
{
	/* the END line of the key is the last thing the k3s file needs */
	truncations("kubeconfig/k3s.yaml", "client-key-data: LS0t");
	truncations("kubeconfig/kubeconfig.json", "\"current-context\": \"prod\"");
	truncations("kubeconfig/kubectl.yaml", "    tokenFile: token");
	check(refused(cfg("    certificate-authority-data: " CA64 "\n    server: https://x\n",
	    "    client-certificate-data: " CA64 "\n    client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0t\n"),
	    "client-key-data does not decode to a whole PEM block", NULL));
}

static void t_too_big(void)
{
	char path[] = "/tmp/kubeconfig-big-XXXXXX";
	int fd = mkstemp(path);
	struct kube_target t;
	static char chunk[65536];
	int wrote = 1;

	check(fd >= 0);
	if (fd < 0)
		return;
	memset(chunk, '#', sizeof chunk);
	chunk[sizeof chunk - 1] = '\n';
	for (int i = 0; i < 32; i++)  /* 2 MiB of comment lines */
		wrote &= write(fd, chunk, sizeof chunk) == (ssize_t)sizeof chunk;
	close(fd);
	check(wrote);
	check(kubeconfig_load(path, &t, err, sizeof err) == -1);
	check(strstr(err, "larger than 1048576 bytes") != NULL && strstr(err, path) != NULL);
	check(empty(&t));
	unlink(path);

	char *big = calloc(KUBECONFIG_MAX + 2, 1);
	memset(big, '#', KUBECONFIG_MAX + 1);
	check(kubeconfig_parse(big, KUBECONFIG_MAX + 1, ".", "big", &t, err, sizeof err) == -1);
	check(strstr(err, "larger than") != NULL);
	free(big);
}

/*
 * A JSON kubeconfig near the size limit made of many small values is read in linear time:
 * jsmn without parent links walked back over every token at each ',' and '}' (40 s for 1 MiB).
 */
static void t_json_linear_time(void)
{
	static const char *const unit[] = { "{},", "\"a\":1," };
	struct kube_target t;
	size_t cap = KUBECONFIG_MAX - 16;
	char *s = malloc(cap + 16);

	for (int u = 0; u < 2; u++) {
		size_t ul = strlen(unit[u]), n = 0;
		n += (size_t)sprintf(s, u ? "{" : "{\"a\":[");
		while (n + ul + 4 < cap) {
			memcpy(s + n, unit[u], ul);
			n += ul;
		}
		n--;  /* the last comma */
		n += (size_t)sprintf(s + n, u ? "}" : "]}");
		clock_t t0 = clock();
		check(kubeconfig_parse(s, n, ".", "many.json", &t, err, sizeof err) == -1);
		check(strstr(err, "clusters") != NULL || strstr(err, "context") != NULL);
		check((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0);
		kube_target_free(&t);
	}
	free(s);
}

static void t_load_errors(void)
{
	struct kube_target t;
	char small[24];

	check(kubeconfig_load("kubeconfig/no-such.yaml", &t, err, sizeof err) == -1);
	check(strstr(err, "cannot read kubeconfig kubeconfig/no-such.yaml: No such file") != NULL);
	check(kubeconfig_load("kubeconfig", &t, err, sizeof err) == -1);
	check(strstr(err, "Is a directory") != NULL);
	/* a short error buffer is cut, not overrun; none at all is allowed */
	check(kubeconfig_parse("a: *x\n", 6, ".", "a-rather-long-file-name.yaml", &t, small, sizeof small) == -1);
	check(strlen(small) == sizeof small - 1);
	check(kubeconfig_parse("a: *x\n", 6, ".", "f", &t, NULL, 0) == -1);
}

static void t_base64(void)
{
	unsigned char out[16];
	size_t n = 99;

	check(kubeconfig_base64_decode("", 0, out, sizeof out, &n) == 0 && n == 0);
	check(kubeconfig_base64_decode("Zg==", 4, out, sizeof out, &n) == 0 && n == 1 && out[0] == 'f');
	check(kubeconfig_base64_decode("Zm8=", 4, out, sizeof out, &n) == 0 && n == 2 && !memcmp(out, "fo", 2));
	check(kubeconfig_base64_decode("Zm9v", 4, out, sizeof out, &n) == 0 && n == 3 && !memcmp(out, "foo", 3));
	check(kubeconfig_base64_decode(" Zm9v\r\nYm\tFy\n", 13, out, sizeof out, &n) == 0 && n == 6 &&
	    !memcmp(out, "foobar", 6));
	check(kubeconfig_base64_decode("+/+/", 4, out, sizeof out, &n) == 0 && n == 3 && out[0] == 0xfb &&
	    out[1] == 0xff && out[2] == 0xbf);
	check(kubeconfig_base64_decode("Zg=", 3, out, sizeof out, &n) == -1);
	check(kubeconfig_base64_decode("Zg", 2, out, sizeof out, &n) == -1);
	check(kubeconfig_base64_decode("Zg=a", 4, out, sizeof out, &n) == -1);
	check(kubeconfig_base64_decode("Z===", 4, out, sizeof out, &n) == -1);
	check(kubeconfig_base64_decode("====", 4, out, sizeof out, &n) == -1);
	check(kubeconfig_base64_decode("Zg==Zg==", 8, out, sizeof out, &n) == -1);
	check(kubeconfig_base64_decode("Zm9v!", 5, out, sizeof out, &n) == -1);
	check(kubeconfig_base64_decode("Zm-_", 4, out, sizeof out, &n) == -1);  /* URL alphabet */
	check(kubeconfig_base64_decode("Zm9vYmFy", 8, out, 5, &n) == -1);      /* out too small */
}

/* Bytes of real files overwritten at random (a fixed seed): a refusal with a message, or a result; never a crash. */
static void t_mangled(void)
{
	static const char *const files[] = { "kubeconfig/k3s.yaml", "kubeconfig/kubectl.yaml", "kubeconfig/kubeconfig.json" };
	static const char bytes[] = " \n\t:-'\"#{}[],\\&*|>?!%@x0=";
	unsigned long long seed = 12345;   /* 64 bits on every architecture: armhf runs these too */
	int bad = 0, refusals = 0;

	for (size_t f = 0; f < 3; f++) {
		size_t n;
		char *s = slurp(files[f], &n);
		for (int round = 0; round < 1500; round++) {
			struct kube_target t;
			char *m = malloc(n);
			memcpy(m, s, n);
			for (int j = 0; j < 1 + round % 4; j++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				m[(seed >> 33) % n] = bytes[(seed >> 20) % (sizeof bytes - 1)];
			}
			int r = kubeconfig_parse(m, n, "kubeconfig", files[f], &t, err, sizeof err);
			if (r == -1 && (!err[0] || !no_secret(err) || !empty(&t)))
				bad++, fprintf(stderr, "  mangled %s: bad error: %s\n", files[f], err);
			refusals += r == -1;
			kube_target_free(&t);
			free(m);
		}
		free(s);
	}
	check(bad == 0);
	check(refusals > 1000);
}

/* ---- several files (a KUBECONFIG list) merged as kubectl merges them ---- */

/* A kubeconfig of the given parts (each "" to leave it out). */
#define KC(cc, contexts, clusters, users) \
	"apiVersion: v1\nkind: Config\n" cc contexts clusters users

/* The first file: current-context a; context a uses cluster shared and user u1. The CA and token
 * are named relative to its directory (kubeconfig/merge/, one below the fixtures). */
static const char first[] = KC("current-context: a\n",
    "contexts:\n- name: a\n  context: {cluster: shared, user: u1}\n"
    "- name: b\n  context:\n    cluster: other\n    user: u1\n",
    "clusters:\n- name: shared\n  cluster:\n    server: https://first.example:6443\n    certificate-authority: ../ca.crt\n",
    "users:\n- name: u1\n  user:\n    tokenFile: ../token\n");

static int merged(const char *a, const char *aname, const char *b, const char *bname, const char *context,
    struct kube_target *t)
{
	struct kubeconfig_text x[2] = { { a, strlen(a), NULL, aname }, { b, b ? strlen(b) : 0, NULL, bname } };
	int r = kubeconfig_merge(x, b ? 2 : 1, context, t, err, sizeof err);

	if (r)
		fprintf(stderr, "  merge refused: %s\n", err);
	return r == 0;
}

/* Empty flow mappings are not read: the fixture is written out for the parser we have. */
static char *block(const char *s)
{
	static char out[4][4096];
	static int slot;
	char *o = out[slot++ % 4];
	const char *from = "  context: {cluster: shared, user: u1}\n";
	const char *at = strstr(s, from);

	if (!at) {
		snprintf(o, 4096, "%s", s);
		return o;
	}
	snprintf(o, 4096, "%.*s  context:\n    cluster: shared\n    user: u1\n%s", (int)(at - s), s, at + strlen(from));
	return o;
}

/* must-fail: a second file's current-context, and its entries of the same names, never override the first's */
static void t_merge_first_wins(void)
{
	struct kube_target t;
	const char *second = KC("current-context: c\n",
	    "contexts:\n- name: c\n  context:\n    cluster: other\n    user: u2\n"
	    "- name: a\n  context:\n    cluster: other\n    user: u2\n",
	    "clusters:\n- name: shared\n  cluster:\n    server: https://second.example:6443\n"
	    "    tls-server-name: second.internal\n    certificate-authority-data: " CA64 "\n"
	    "- name: other\n  cluster:\n    server: https://other.example:6443\n    certificate-authority: ../../ca.crt\n",
	    "users:\n- name: u1\n  user:\n    token: " TOKEN "\n- name: u2\n  user:\n    token: " TOKEN "\n");

	if (!check(merged(block(first), "kubeconfig/merge/first.yaml", second, "kubeconfig/merge/sub/second.yaml", NULL, &t)))
		return;
	check(strcmp(t.server, "https://first.example:6443") == 0);
	/* the entry comes whole from the first file: not even a field the first one lacks */
	check(t.tls_server_name[0] == '\0');
	check(same_as_file(t.ca_pem, t.ca_len, "kubeconfig/ca.crt"));
	check(strcmp(t.token_file, "kubeconfig/merge/../token") == 0 && t.token == NULL);
	check(strcmp(t.source, "kubeconfig kubeconfig/merge/first.yaml (context a)") == 0);
	kube_target_free(&t);

	/* the other way round, the other file's values: the order is what decides */
	if (!check(merged(second, "kubeconfig/merge/sub/second.yaml", block(first), "kubeconfig/merge/first.yaml", NULL, &t)))
		return;
	check(strcmp(t.server, "https://other.example:6443") == 0);
	check(t.token && strcmp(t.token, TOKEN) == 0);
	check(strcmp(t.source, "kubeconfig kubeconfig/merge/sub/second.yaml (context c)") == 0);
	kube_target_free(&t);
}

/* A context of one file may name a cluster of another; relative names are each file's own. */
static void t_merge_parts_from_files(void)
{
	struct kube_target t;
	/* the second file has no current-context: the first file's stands */
	const char *second = KC("",
	    "",
	    "clusters:\n- name: other\n  cluster:\n    server: https://other.example:6443\n    certificate-authority: ../../ca.crt\n",
	    "");

	if (!check(merged(block(first), "kubeconfig/merge/first.yaml", second, "kubeconfig/merge/sub/second.yaml", "b", &t)))
		return;
	check(strcmp(t.server, "https://other.example:6443") == 0);
	/* ../../ca.crt from kubeconfig/merge/sub/; from the first file's directory it would be missing */
	check(same_as_file(t.ca_pem, t.ca_len, "kubeconfig/ca.crt"));
	check(strcmp(t.token_file, "kubeconfig/merge/../token") == 0);
	check(strcmp(t.source, "kubeconfig: context b (chosen by --context) from kubeconfig/merge/first.yaml, "
	    "cluster other from kubeconfig/merge/sub/second.yaml, user u1 from kubeconfig/merge/first.yaml") == 0);
	kube_target_free(&t);

	/* the current-context only in the second file is used */
	const char *cc_only = KC("current-context: b\n", "",
	    "clusters:\n- name: other\n  cluster:\n    server: https://other.example:6443\n    certificate-authority: ../../ca.crt\n", "");
	char nocc[4096];
	snprintf(nocc, sizeof nocc, "%s", block(first) + strlen("apiVersion: v1\nkind: Config\ncurrent-context: a\n"));
	if (check(merged(nocc, "kubeconfig/merge/first.yaml", cc_only, "kubeconfig/merge/sub/cc.yaml", NULL, &t)))
		check(strstr(t.source, "context b") != NULL);
	kube_target_free(&t);
}

/* must-fail: --context picks the named context, not the current one */
static void t_merge_context_flag(void)
{
	struct kube_target t;
	const char *one = KC("current-context: a\n",
	    "contexts:\n- name: a\n  context:\n    cluster: ca\n    user: u\n- name: b\n  context:\n    cluster: cb\n    user: u\n",
	    "clusters:\n- name: ca\n  cluster:\n    server: https://a.example\n    certificate-authority-data: " CA64 "\n"
	    "- name: cb\n  cluster:\n    server: https://b.example\n    certificate-authority-data: " CA64 "\n",
	    "users:\n- name: u\n  user:\n    token: " TOKEN "\n");

	if (check(merged(one, "one.yaml", NULL, NULL, "b", &t))) {
		check(strcmp(t.server, "https://b.example") == 0);
		check(strcmp(t.source, "kubeconfig one.yaml (context b, chosen by --context)") == 0);
	}
	kube_target_free(&t);
	if (check(merged(one, "one.yaml", NULL, NULL, NULL, &t)))
		check(strcmp(t.server, "https://a.example") == 0);
	kube_target_free(&t);
	/* a context that is not there: refused, naming --context, in one file or in several */
	struct kubeconfig_text x[2] = { { one, strlen(one), "", "one.yaml" }, { one, strlen(one), "", "two.yaml" } };
	check(kubeconfig_merge(x, 1, "nope", &t, err, sizeof err) == -1 && empty(&t));
	check(strcmp(err, "kubeconfig one.yaml: --context names context \"nope\", which is not in contexts") == 0);
	check(kubeconfig_merge(x, 2, "nope", &t, err, sizeof err) == -1 && empty(&t));
	check(strcmp(err, "kubeconfig one.yaml, two.yaml: --context names context \"nope\", which is not in any file's contexts") == 0);
	check(no_secret(err));
}

/* Every file must parse, even one whose entries are not needed; a bad one is named. */
static void t_merge_refusals(void)
{
	struct kube_target t;
	const char *good = block(first);
	struct kubeconfig_text x[3] = {
		{ good, strlen(good), NULL, "kubeconfig/merge/first.yaml" },
		{ "a: *x\n", 6, NULL, "bad.yaml" },
		{ "clusters: 3\n", 12, NULL, "odd.yaml" },
	};

	check(kubeconfig_merge(x, 2, NULL, &t, err, sizeof err) == -1 && empty(&t));
	check(strcmp(err, "kubeconfig bad.yaml: line 1: aliases (*) are not supported") == 0);
	/* a list looked through on the way must be well-formed: the cluster is searched in odd.yaml
	 * only after first.yaml, which has it, so odd.yaml's clusters is never looked at */
	x[1] = x[2];
	check(kubeconfig_merge(x, 2, NULL, &t, err, sizeof err) == 0);
	kube_target_free(&t);
	/* ... but a cluster first.yaml lacks is looked for there */
	check(kubeconfig_merge(x, 2, "b", &t, err, sizeof err) == -1);
	check(strcmp(err, "kubeconfig odd.yaml: line 1: clusters must be a list") == 0);
	/* none sets a current-context */
	x[0] = x[2];
	check(kubeconfig_merge(x, 2, NULL, &t, err, sizeof err) == -1);
	check(strstr(err, "kubeconfig odd.yaml, odd.yaml: no current-context is set") == err);
	check(kubeconfig_merge(x, 0, NULL, &t, err, sizeof err) == -1);
	check(kubeconfig_merge(x, KUBECONFIG_FILES_MAX + 1, NULL, &t, err, sizeof err) == -1);
	/* must-fail: the list's ceiling is one file's, so several files cost no more memory than one */
	char *half = malloc(KUBECONFIG_MAX / 2 + 1);
	memset(half, '#', KUBECONFIG_MAX / 2 + 1);
	struct kubeconfig_text big[2] = { { half, KUBECONFIG_MAX / 2 + 1, "", "h1" }, { half, KUBECONFIG_MAX / 2 + 1, "", "h2" } };
	check(kubeconfig_merge(big, 2, NULL, &t, err, sizeof err) == -1 && empty(&t));
	check(strcmp(err, "kubeconfig h1, h2: more than 1048576 bytes in all; refusing them") == 0);
	free(half);
}

/* From disk: a file of the list that is not there is skipped, and said; all missing is refused. */
static void t_merge_files(void)
{
	char dir[] = "/tmp/nr-kubeconfig-XXXXXX", a[600], missing[600], b[600];
	struct kube_target t;
	FILE *f;

	if (!check(mkdtemp(dir) != NULL))
		return;
	snprintf(a, sizeof a, "%s/a.yaml", dir);
	snprintf(missing, sizeof missing, "%s/missing.yaml", dir);
	snprintf(b, sizeof b, "%s/sub", dir);
	check(mkdir(b, 0700) == 0);
	snprintf(b, sizeof b, "%s/sub/ca.crt", dir);
	if ((f = fopen(b, "w"))) {
		fputs(CA_PEM, f);
		fclose(f);
	}
	snprintf(b, sizeof b, "%s/sub/b.yaml", dir);
	if ((f = fopen(a, "w"))) {
		fputs("current-context: x\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n", f);
		fclose(f);
	}
	if ((f = fopen(b, "w"))) {
		fputs("clusters:\n- name: c\n  cluster:\n    server: https://c.example\n    certificate-authority: ca.crt\n"
		    "users:\n- name: u\n  user:\n    token: " TOKEN "\n", f);
		fclose(f);
	}
	const char *list[] = { missing, a, b };
	if (check(kubeconfig_load_files(list, 3, NULL, 1, &t, err, sizeof err) == 0)) {
		check(t.ca_pem && strcmp(t.ca_pem, CA_PEM) == 0);   /* ca.crt beside b.yaml, not a.yaml */
		check(strstr(t.source, "context x from ") && strstr(t.source, "/a.yaml, cluster c from ") &&
		    strstr(t.source, "/sub/b.yaml, user u from ") && strstr(t.source, "; not there, skipped: ") &&
		    strstr(t.source, "/missing.yaml"));
	}
	kube_target_free(&t);
	/* must-fail: a named file (--kubeconfig) must exist */
	check(kubeconfig_load_files(list, 3, NULL, 0, &t, err, sizeof err) == -1 && strstr(err, "No such file"));
	check(kubeconfig_load_files(list, 1, NULL, 1, &t, err, sizeof err) == -1 &&
	    strstr(err, "none of the KUBECONFIG files exists (") == err);
	/* a file there but unreadable is not skipped */
	const char *withdir[] = { dir, a, b };
	check(kubeconfig_load_files(withdir, 3, NULL, 1, &t, err, sizeof err) == -1 && strstr(err, "Is a directory"));
	unlink(a);
	unlink(b);
	snprintf(b, sizeof b, "%s/sub/ca.crt", dir);
	unlink(b);
	snprintf(b, sizeof b, "%s/sub", dir);
	rmdir(b);
	rmdir(dir);
}

static const struct test tests[] = {
	{ "k3s", t_k3s },
	{ "kubectl", t_kubectl },
	{ "kubectl_other_context", t_kubectl_other_context },
	{ "crlf_bom", t_crlf_bom },
	{ "json", t_json },
	{ "json_escapes", t_json_escapes },
	{ "quoted", t_quoted },
	{ "plain_tls_name", t_plain_tls_name },
	{ "client_files", t_client_files },
	{ "refused_user", t_refused_user },
	{ "refused_cluster", t_refused_cluster },
	{ "refused_structure", t_refused_structure },
	{ "refused_yaml", t_refused_yaml },
	{ "refused_json", t_refused_json },
	{ "truncated", t_truncated },
	{ "too_big", t_too_big },
	{ "json_linear_time", t_json_linear_time },
	{ "load_errors", t_load_errors },
	{ "base64", t_base64 },
	{ "mangled", t_mangled },
	{ "merge_first_wins", t_merge_first_wins },
	{ "merge_parts_from_files", t_merge_parts_from_files },
	{ "merge_context_flag", t_merge_context_flag },
	{ "merge_refusals", t_merge_refusals },
	{ "merge_files", t_merge_files },
	{ "exec_spec", t_exec_spec },
	{ "exec_credential", t_exec_credential },
	{ 0, 0 }
};

int main(int argc, char **argv)
{
	return run_tests("kubeconfig", tests, argc, argv);
}
