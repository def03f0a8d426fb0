/*
 * Settings: flag beats environment variable beats default; validated before anything is
 * sent. And where the cluster is: explicit flags, a kubeconfig, the pod's service account,
 * or k3s's kubeconfig, in that order.
 */
#ifndef SETTINGS_H
#define SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include "target.h"

enum settings_dry_run {
	DRY_RUN_NONE,
	DRY_RUN_CLIENT,   /* decide everything, send no write */
	DRY_RUN_SERVER    /* send every write with dryRun=All: checked by the server, not stored */
};

enum settings_mode { MODE_RUN, MODE_ONCE, MODE_PLAN, MODE_MANIFESTS, MODE_VERSION, MODE_HELP };

enum settings_output { OUTPUT_TABLE, OUTPUT_JSON };   /* how plan prints */

#define SETTINGS_KEY_MAX 317      /* a qualified name: 253 prefix + '/' + 63 name */
#define SETTINGS_MAX_SECONDS 315360000  /* ten years: anything longer is a typo */
#define SETTINGS_RELIST_DEFAULT 600     /* --relist: seconds between whole lists while watching */

struct settings {
	enum settings_mode mode;
	int64_t taint_after;          /* seconds */
	int64_t prune_after;          /* seconds; 0: pruning off */
	int64_t poll;                 /* seconds between passes */
	long page_size;
	char prune_label[SETTINGS_KEY_MAX + 1];
	char annotation[SETTINGS_KEY_MAX + 1];
	char exclude_label[SETTINGS_KEY_MAX + 1];
	long max_unknown;             /* storm guard: at most this many Unknown nodes; 0: percent */
	int max_unknown_percent;      /* 1..100 when max_unknown is 0; 100: the guard is off */
	int64_t storm_cooldown;       /* seconds the guard holds after it lifts */
	enum settings_dry_run dry_run;
	int watch;                    /* run follows a watch between lists (--watch, default true) */
	int64_t relist;               /* seconds: with the watch, a whole list at least this often */
	int events;                   /* post Events on the Node (--events, default true; never in a dry run) */
	enum settings_output output;
	const char *listen;           /* where to serve /metrics, /livez, /readyz; NULL: nowhere */
	char self_node[256];          /* "" when unknown */
	const char *self_source;      /* where self_node came from, for the start-up line */
	int leader_elect;             /* only the holder of the Lease lists and acts */
	char lease_name[254];         /* a DNS subdomain */
	char lease_namespace[64];     /* a DNS label: the flag, the variable, or the pod's own */
	const char *lease_ns_source;  /* where lease_namespace came from, for the start-up line */
	const char *kubeconfig;       /* flag or KUBECONFIG; NULL if neither */
	int kubeconfig_list;          /* 1: it is KUBECONFIG's list (a:b, merged); 0: the flag's one file */
	const char *context;          /* --context: the kubeconfig context to use; NULL: the current one */
	const char *server, *ca_file, *token_file, *tls_server_name;
};

/*
 * Reads text, the value of the setting called name (its flag or variable, for the message), as
 * a duration (text_duration: 90, 90s, 5m, 1h30m) of min to max seconds into *out. The one call
 * for every seconds setting. Returns 0, or -1 with one line in err naming the setting, quoting
 * the value and saying what is wrong; *out is then untouched.
 */
int settings_seconds(const char *name, const char *text, int64_t min, int64_t max, int64_t *out,
    char *err, size_t errlen);

/* Looks up an environment variable; getenv in the program, a table in the tests. */
typedef const char *(*settings_env_fn)(const char *name);

/*
 * Reads the command line and the environment into *s.
 * Returns 0, or -1 with one line in err naming the setting and what is wrong.
 */
int settings_parse(struct settings *s, int argc, char **argv, settings_env_fn env, char *err,
    size_t errlen);

/*
 * Finds the cluster and reads its CA and credentials into *t (the token file is read, and
 * checked, by kube_init). Returns 0, or -1 with one line in err.
 */
int settings_target(const struct settings *s, settings_env_fn env, struct kube_target *t,
    char *err, size_t errlen);

/* Where the pod's service account is mounted; a macro so the tests can point elsewhere. */
#ifndef SETTINGS_SA_DIR
#define SETTINGS_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#endif
#ifndef SETTINGS_K3S_KUBECONFIG
#define SETTINGS_K3S_KUBECONFIG "/etc/rancher/k3s/k3s.yaml"
#endif

#endif
