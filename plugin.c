/*
 * Exec credential plugins: the command run as kubectl runs it, its ExecCredential read.
 * Allocates at start-up only (plugin_new, plugin_ready); a run, which may come in the loop when
 * a credential expires or meets a 401, allocates nothing. Never runs a shell, never gives the
 * plugin a terminal or our stdin, never waits on it past its deadline, and never puts a byte of
 * its stdout in a message: that is where the token is.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "plugin.h"
#include "text.h"
#include "yaml.h"

extern char **environ;

#define INFO_VAR "KUBERNETES_EXEC_INFO="

struct plugin *plugin_new(const char *api, const char *command)
{
	struct plugin *p = calloc(1, sizeof *p);

	if (!p)
		return NULL;
	snprintf(p->api_version, sizeof p->api_version, "%s", api);
	if (!(p->command = strdup(command))) {
		free(p);
		return NULL;
	}
	p->argv[p->argc++] = p->command;
	return p;
}

int plugin_add_arg(struct plugin *p, const char *arg, char *err, size_t errlen)
{
	if (p->argc > PLUGIN_ARGS_MAX)
		return text_fail(err, errlen, "more than %d args", PLUGIN_ARGS_MAX);
	if (!(p->argv[p->argc] = strdup(arg)))
		return text_fail(err, errlen, "out of memory");
	p->argc++;
	return 0;
}

int plugin_add_env(struct plugin *p, const char *name, const char *value, char *err, size_t errlen)
{
	size_t n = strlen(name), v = strlen(value);

	if (p->nenv >= PLUGIN_ENV_MAX)
		return text_fail(err, errlen, "more than %d env entries", PLUGIN_ENV_MAX);
	if (n == 0 || strchr(name, '='))
		return text_fail(err, errlen, "an env entry's name is empty or holds '='");
	if (!(p->spec_env[p->nenv] = malloc(n + v + 2)))
		return text_fail(err, errlen, "out of memory");
	memcpy(p->spec_env[p->nenv], name, n);
	p->spec_env[p->nenv][n] = '=';
	memcpy(p->spec_env[p->nenv] + n + 1, value, v + 1);
	p->nenv++;
	return 0;
}

/* Standard base64 of in[0..n) into b, as a JSON string's contents need no escaping. */
static void base64(struct json_buf *b, const unsigned char *in, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < n; i += 3) {
		unsigned long v = (unsigned long)in[i] << 16 | (i + 1 < n ? (unsigned long)in[i + 1] << 8 : 0) |
		    (i + 2 < n ? in[i + 2] : 0);
		char q[5] = { a[v >> 18 & 63], a[v >> 12 & 63], i + 1 < n ? a[v >> 6 & 63] : '=', i + 2 < n ? a[v & 63] : '=', 0 };
		json_raw(b, q);
	}
}

/* Whether entry ("NAME=...") sets a variable named in the spec's env, or KUBERNETES_EXEC_INFO. */
static int overridden(const struct plugin *p, const char *entry)
{
	size_t n = strcspn(entry, "=");

	if (strncmp(entry, INFO_VAR, n + 1) == 0)
		return 1;
	for (int i = 0; i < p->nenv; i++)
		if (strncmp(p->spec_env[i], entry, n + 1) == 0)
			return 1;
	return 0;
}

int plugin_ready(struct plugin *p, const struct kube_target *c, char *err, size_t errlen)
{
	size_t cap = 512 + strlen(c->server) + strlen(c->tls_server_name) + (c->ca_len + 2) / 3 * 4;
	struct json_buf b;
	size_t ours = 0, k = 0;

	p->argv[p->argc] = NULL;
	p->spec_env[p->nenv] = NULL;
	if (!(p->exec_info = malloc(cap)) || !(p->out = malloc(PLUGIN_OUTPUT_MAX + 1)))
		return text_fail(err, errlen, "out of memory");
	/* as kubectl sets it: never interactive here, the cluster only when asked for */
	json_buf_init(&b, p->exec_info, cap);
	json_raw(&b, INFO_VAR "{\"kind\":\"ExecCredential\",\"apiVersion\":");
	json_str(&b, p->api_version);
	json_raw(&b, ",\"spec\":{");
	if (p->cluster_info) {
		json_raw(&b, "\"cluster\":{\"server\":");
		json_str(&b, c->server);
		if (c->tls_server_name[0]) {
			json_raw(&b, ",\"tls-server-name\":");
			json_str(&b, c->tls_server_name);
		}
		json_raw(&b, ",\"certificate-authority-data\":\"");
		base64(&b, (const unsigned char *)c->ca_pem, c->ca_len);
		json_raw(&b, "\"},");
	}
	json_raw(&b, "\"interactive\":false}}");
	if (json_buf_end(&b) < 0)
		return text_fail(err, errlen, "the cluster's server or name cannot be written in KUBERNETES_EXEC_INFO");
	for (char **e = environ; e && *e; e++)
		ours++;
	if (!(p->envp = calloc(ours + (size_t)p->nenv + 2, sizeof *p->envp)))
		return text_fail(err, errlen, "out of memory");
	for (char **e = environ; e && *e; e++)
		if (!overridden(p, *e))
			p->envp[k++] = *e;
	for (int i = 0; i < p->nenv; i++)
		p->envp[k++] = p->spec_env[i];
	p->envp[k] = p->exec_info;
	return 0;
}

int plugin_expired(const struct plugin *p, int64_t now)
{
	return p->expires > 0 && now >= p->expires;
}

/* PEM text is checked by BearSSL when loaded; here only that it is there whole, as kubeconfig.c
 * asks of a file, so a cut-off answer is refused as the plugin's fault. */
static int pem_like(const char *s)
{
	const char *b = strstr(s, "-----BEGIN "), *e = b ? strstr(b, "-----END ") : NULL;

	return b && e && strstr(e + 9, "-----");
}

/* The string under key in mapping m of d: its node, NULL when absent or null; *bad when it is
 * there and not a string. */
static const struct yaml_node *member(const struct yaml_doc *d, int m, const char *key, int *bad)
{
	const struct yaml_node *found = NULL;

	for (int c = d->nodes[m].child; c >= 0; c = d->nodes[c].next)
		if (strcmp(d->nodes[c].key, key) == 0)
			found = &d->nodes[c];
	if (found && found->type == YAML_NULL)
		return NULL;
	if (found && found->type != YAML_STR && found->type != YAML_MAP)
		*bad = 1;
	return found;
}

static char *dup_text(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* Reads the credential of the document into p, replacing the one it had only when all of it
 * is good. */
static int credential(struct plugin *p, const struct yaml_doc *d, char *err, size_t errlen)
{
	const struct yaml_node *kind, *api, *st, *tok = NULL, *cert = NULL, *key = NULL, *exp = NULL;
	int bad = 0, s;
	int64_t expires = 0;
	char *c = NULL, *k = NULL;

	if (d->nodes[d->root].type != YAML_MAP)
		return text_fail(err, errlen, "its output is not an ExecCredential object");
	kind = member(d, d->root, "kind", &bad);
	api = member(d, d->root, "apiVersion", &bad);
	if (!kind || kind->type != YAML_STR || strcmp(kind->str, "ExecCredential") != 0)
		return text_fail(err, errlen, "its output is not an ExecCredential (kind)");
	if (!api || api->type != YAML_STR || strcmp(api->str, p->api_version) != 0)
		return text_fail(err, errlen, "its output's apiVersion is not %s, which the kubeconfig asked for", p->api_version);
	st = member(d, d->root, "status", &bad);
	if (!st || st->type != YAML_MAP)
		return text_fail(err, errlen, "its ExecCredential has no status");
	s = (int)(st - d->nodes);
	tok = member(d, s, "token", &bad);
	cert = member(d, s, "clientCertificateData", &bad);
	key = member(d, s, "clientKeyData", &bad);
	exp = member(d, s, "expirationTimestamp", &bad);
	if (bad || (tok && tok->type != YAML_STR) || (cert && cert->type != YAML_STR) || (key && key->type != YAML_STR) ||
	    (exp && exp->type != YAML_STR))
		return text_fail(err, errlen, "its ExecCredential's status has a member that is not a string");
	if (tok && tok->len == 0)
		tok = NULL;
	if (!!cert != !!key)
		return text_fail(err, errlen, "its ExecCredential has %s without %s", cert ? "clientCertificateData" : "clientKeyData",
		    cert ? "clientKeyData" : "clientCertificateData");
	if (!tok && !cert)
		return text_fail(err, errlen, "its ExecCredential has neither a token nor clientCertificateData and clientKeyData");
	if (tok && !target_token_ok(tok->str, tok->len))
		return text_fail(err, errlen, "its token is longer than %d bytes or holds a byte that cannot go in an HTTP header",
		    TARGET_TOKEN_MAX);
	if (cert && (!pem_like(cert->str) || !pem_like(key->str)))
		return text_fail(err, errlen, "its clientCertificateData or clientKeyData is not whole PEM text");
	if (exp && (expires = text_rfc3339(exp->str, exp->len)) < 0)
		return text_fail(err, errlen, "its expirationTimestamp is not an RFC 3339 time");
	if (cert && (!(c = dup_text(cert->str, cert->len)) || !(k = dup_text(key->str, key->len)))) {
		free(c);
		return text_fail(err, errlen, "out of memory");
	}
	explicit_bzero(p->token, sizeof p->token);
	if (tok)
		memcpy(p->token, tok->str, tok->len + 1);
	if (p->key_pem) {
		explicit_bzero(p->key_pem, p->key_len);
		free(p->key_pem);
	}
	free(p->cert_pem);
	p->cert_pem = c;
	p->key_pem = k;
	p->cert_len = c ? cert->len : 0;
	p->key_len = k ? key->len : 0;
	/* a time of 0 (1970) would read as "never": one second past it is as expired */
	p->expires = exp ? (expires > 0 ? expires : 1) : 0;
	p->gen++;
	return 0;
}

int plugin_parse(struct plugin *p, const char *out, size_t n, char *err, size_t errlen)
{
	struct yaml_doc d;
	char why[200];
	int line, r;

	memset(&d, 0, sizeof d);
	/* the parser's reason never quotes a value; its line is of no use to anyone here */
	if (n == 0)
		return text_fail(err, errlen, "it printed nothing");
	if (yaml_parse(&d, out, n, why, sizeof why, &line) < 0)
		return text_fail(err, errlen, "its output is not JSON: %s", why);
	r = credential(p, &d, err, errlen);
	yaml_free(&d);
	return r;
}

/* The command, cut and cleaned, for a message. */
static const char *named(const struct plugin *p, char *buf, size_t n)
{
	return text_clean(buf, n, p->command, strlen(p->command), NULL, 0);
}

/* Stops the plugin and everything it started (its process group), and reaps it. */
static void kill_all(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * Reads the plugin's stdout (into p->out, at most PLUGIN_OUTPUT_MAX) and stderr (the first
 * PLUGIN_STDERR_MAX bytes into e) until both end, then its exit, by the deadline end (clock_ms).
 * Returns 0 with *status set, or -1 with the reason in err (the plugin killed).
 */
static int collect(struct plugin *p, pid_t pid, int fo, int fe, int64_t end, const volatile sig_atomic_t *stop,
    size_t *on, char *e, size_t *en, int *status, char *err, size_t errlen)
{
	char sink[512];
	struct pollfd fds[2] = { { fo, POLLIN, 0 }, { fe, POLLIN, 0 } };
	int open_fds = 2;

	*on = *en = 0;
	for (;;) {
		int64_t left = end - clock_ms();
		pid_t w;
		if (open_fds == 0) {
			if ((w = waitpid(pid, status, WNOHANG)) == pid)
				return 0;
			if (w < 0 && errno != EINTR)
				return text_fail(err, errlen, "waiting for it failed: %s", strerror(errno));
		}
		if (stop && *stop) {
			kill_all(pid);
			return text_fail(err, errlen, "stopped by a signal before it finished; killed");
		}
		if (left <= 0) {
			kill_all(pid);
			return text_fail(err, errlen, "it did not finish within %ds; killed", (int)(clock_span(PLUGIN_SECONDS * 1000) / 1000));
		}
		if (open_fds == 0) {
			/* both pipes closed, the process not yet gone: look again shortly */
			struct timespec ts = { 0, 20 * 1000000L };
			nanosleep(&ts, NULL);
			continue;
		}
		if (poll(fds, 2, (int)(left < 1000 ? left : 1000)) < 0 && errno != EINTR) {
			kill_all(pid);
			return text_fail(err, errlen, "reading its output failed: %s", strerror(errno));
		}
		for (int i = 0; i < 2; i++) {
			ssize_t r;
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (i == 0 && *on >= PLUGIN_OUTPUT_MAX) {
				kill_all(pid);
				return text_fail(err, errlen, "it printed more than %d bytes; killed", PLUGIN_OUTPUT_MAX);
			}
			if (i == 0)
				r = read(fo, p->out + *on, PLUGIN_OUTPUT_MAX - *on);
			else
				r = read(fe, *en < PLUGIN_STDERR_MAX ? e + *en : sink, *en < PLUGIN_STDERR_MAX ? PLUGIN_STDERR_MAX - *en : sizeof sink);
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				fds[i].fd = -1;
				open_fds--;
			} else if (i == 0) {
				*on += (size_t)r;
			} else if (*en < PLUGIN_STDERR_MAX) {
				*en += (size_t)r;
			}
		}
	}
}

/* The first line of the plugin's stderr e[0..n), cleaned, with the last token redacted. */
static const char *first_line(const struct plugin *p, char *e, size_t n, char *buf, size_t cap)
{
	size_t l = 0;

	while (l < n && e[l] != '\n' && e[l] != '\r')
		l++;
	return text_clean(buf, cap, e, l, p->token, strlen(p->token));
}

int plugin_run(struct plugin *p, const volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	char nb[96], why[300], e[PLUGIN_STDERR_MAX], line[200];
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, status, rc = -1;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, def;
	size_t on = 0, en = 0;
	pid_t pid;

	p->runs++;
	/* close-on-exec, so only the ends dup2'd to 1 and 2 reach the plugin (no other thread
	 * starts a program between the pipe and the flag) */
	if (pipe(out) < 0 || pipe(errp) < 0 || fcntl(out[0], F_SETFD, FD_CLOEXEC) < 0 || fcntl(out[1], F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(errp[0], F_SETFD, FD_CLOEXEC) < 0 || fcntl(errp[1], F_SETFD, FD_CLOEXEC) < 0) {
		text_fail(err, errlen, "exec plugin %s: cannot make a pipe: %s", named(p, nb, sizeof nb), strerror(errno));
		goto done;
	}
	posix_spawn_file_actions_init(&fa);
	/* stdin /dev/null: never ours, never a terminal (interactive is false) */
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	posix_spawnattr_init(&at);
	/* a group of its own, so a deadline kills what it started too; our signal mask and
	 * ignored SIGPIPE are not its to inherit */
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGINT);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	/* a bare name is looked up on the PATH, as kubectl does; a path is run as it is */
	rc = strchr(p->command, '/') ? posix_spawn(&pid, p->command, &fa, &at, p->argv, p->envp)
	    : posix_spawnp(&pid, p->command, &fa, &at, p->argv, p->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(out[1]);
	close(errp[1]);
	out[1] = errp[1] = -1;
	if (rc != 0) {
		text_fail(err, errlen, "exec plugin %s cannot be run: %s%s%s", named(p, nb, sizeof nb), strerror(rc),
		    p->install_hint[0] ? "; " : "", p->install_hint);
		rc = -1;
		goto done;
	}
	rc = -1;
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	if (collect(p, pid, out[0], errp[0], clock_after(PLUGIN_SECONDS * 1000), stop, &on, e, &en, &status, why, sizeof why) < 0) {
		text_fail(err, errlen, "exec plugin %s: %s", named(p, nb, sizeof nb), why);
		goto done;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char st[48];
		if (WIFEXITED(status))
			snprintf(st, sizeof st, "exited with status %d", WEXITSTATUS(status));
		else
			snprintf(st, sizeof st, "was ended by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		first_line(p, e, en, line, sizeof line);
		text_fail(err, errlen, "exec plugin %s %s%s%s", named(p, nb, sizeof nb), st, line[0] ? ": " : "", line);
		goto done;
	}
	p->out[on] = '\0';
	if (plugin_parse(p, p->out, on, why, sizeof why) < 0) {
		text_fail(err, errlen, "exec plugin %s: %s; the credential is not used", named(p, nb, sizeof nb), why);
		goto done;
	}
	rc = 0;
done:
	if (p->out)
		explicit_bzero(p->out, on);
	explicit_bzero(e, sizeof e);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return rc;
}

void plugin_free(struct plugin *p)
{
	if (!p)
		return;
	explicit_bzero(p->token, sizeof p->token);
	if (p->key_pem) {
		explicit_bzero(p->key_pem, p->key_len);
		free(p->key_pem);
	}
	free(p->cert_pem);
	for (int i = 1; i < p->argc; i++)
		free(p->argv[i]);
	for (int i = 0; i < p->nenv; i++) {
		explicit_bzero(p->spec_env[i], strlen(p->spec_env[i]));
		free(p->spec_env[i]);
	}
	free(p->command);
	free(p->envp);
	free(p->exec_info);
	free(p->out);
	free(p);
}
