/*
 * Exec credential plugins, as kubectl runs them (client.authentication.k8s.io/v1 and v1beta1
 * ExecCredential: EKS's, GKE's, AKS's and the OIDC helpers). The kubeconfig names a command, its
 * arguments and environment; this runs it (no shell, stdin /dev/null, in a process group of its
 * own, killed past a deadline), reads its output bounded, and keeps the credential it prints: a
 * bearer token, or a client certificate and key, until its expirationTimestamp.
 * Knows nothing of HTTP or TLS: kube.c asks for the credential and when it changed.
 */
#ifndef PLUGIN_H
#define PLUGIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "target.h"

#define PLUGIN_ARGS_MAX 64            /* arguments of the command; more are refused */
#define PLUGIN_ENV_MAX 64             /* entries of its env: list; more are refused */
#define PLUGIN_OUTPUT_MAX (64 * 1024) /* bytes of its stdout; more and it is killed, the run failed */
#define PLUGIN_STDERR_MAX 512         /* bytes of its stderr kept, for the message when it fails */
#define PLUGIN_SECONDS 30             /* its deadline (clock_span: tests scale it); killed past it */
#define PLUGIN_V1 "client.authentication.k8s.io/v1"
#define PLUGIN_V1BETA1 "client.authentication.k8s.io/v1beta1"

/*
 * One kubeconfig user's plugin and the credential it last printed. Made by kubeconfig.c at
 * start-up (plugin_new and the plugin_add_* calls), owned by the kube_target, freed by
 * plugin_free. Everything it needs to run is allocated then; a run allocates nothing.
 */
struct plugin {
	char api_version[48];          /* PLUGIN_V1 or PLUGIN_V1BETA1 */
	char *command;                 /* as given, or made absolute from the kubeconfig's directory */
	char *argv[PLUGIN_ARGS_MAX + 2];  /* command, the args, NULL */
	int argc;
	char *spec_env[PLUGIN_ENV_MAX + 1]; /* "NAME=VALUE" of the env: list, NULL-terminated */
	int nenv;
	char **envp;                   /* what it runs with: ours, the spec's over ours, KUBERNETES_EXEC_INFO */
	char *exec_info;               /* "KUBERNETES_EXEC_INFO={...}" */
	int cluster_info;              /* provideClusterInfo: the cluster goes in KUBERNETES_EXEC_INFO */
	char install_hint[256];        /* installHint, made one printable line; "" if none */
	char *out;                     /* PLUGIN_OUTPUT_MAX + 1 bytes for its stdout */
	/* the credential of the last run that succeeded */
	char token[TARGET_TOKEN_MAX + 1];   /* "" when it gave a certificate only; never logged */
	char *cert_pem, *key_pem;      /* client certificate and key, PEM; NULL if none */
	size_t cert_len, key_len;
	int64_t expires;               /* Unix seconds from expirationTimestamp; 0: never */
	unsigned gen;                  /* counts successful runs: a connection compares it with its own */
	int runs;                      /* runs started, for the tests and the start-up line */
};

/* A plugin for apiVersion api and command (already resolved): NULL when out of memory. */
struct plugin *plugin_new(const char *api, const char *command);

/* Appends an argument, or an environment entry (name must be non-empty without '='). Returns
 * 0, or -1 (too many, out of memory, a bad name) with one line in err. */
int plugin_add_arg(struct plugin *p, const char *arg, char *err, size_t errlen);
int plugin_add_env(struct plugin *p, const char *name, const char *value, char *err, size_t errlen);

/*
 * Completes p once its spec is read: builds KUBERNETES_EXEC_INFO as kubectl sets it
 * ({"kind":"ExecCredential","apiVersion":API,"spec":{"interactive":false}}, and with
 * provideClusterInfo the cluster's server, tls-server-name and certificate-authority-data) and
 * the environment it runs with (environ, the spec's entries over it, then that variable), and
 * its output buffer. Returns 0, or -1 with one line in err.
 */
int plugin_ready(struct plugin *p, const struct kube_target *cluster, char *err, size_t errlen);

/*
 * Runs the plugin and reads its credential into p (gen counts up) when the output is a whole
 * ExecCredential of p's apiVersion with a token or a certificate and key. Otherwise p keeps the
 * credential it had and err gets one line naming the command and what was wrong (never a byte
 * of its stdout, which may hold a token; its stderr's first line, cleaned, when it failed,
 * with the last token redacted). Waits at most PLUGIN_SECONDS, and no longer once *stop (may be
 * NULL) is set by a signal: the plugin is killed then. Returns 0 or -1.
 */
int plugin_run(struct plugin *p, const volatile sig_atomic_t *stop, char *err, size_t errlen);

/* Whether p's credential has expired at now (Unix seconds); one without a time never does. */
int plugin_expired(const struct plugin *p, int64_t now);

/*
 * Reads an ExecCredential's text (out[0..n)) into p as plugin_run does with the plugin's
 * output, for the tests and the fuzzer. Returns 0, or -1 with one line in err.
 */
int plugin_parse(struct plugin *p, const char *out, size_t n, char *err, size_t errlen);

/* Frees what p holds (the token and key wiped) and p itself. Safe on NULL. */
void plugin_free(struct plugin *p);

#endif
