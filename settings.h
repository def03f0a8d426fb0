/*
 * Settings: flag beats environment variable beats default; validated before anything is
 * sent. And where the cluster is: explicit flags, a kubeconfig (--kubeconfig or KUBECONFIG),
 * the pod's service account, $HOME/.kube/config, or k3s's kubeconfig, in that order.
 */
#ifndef SETTINGS_H
#define SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "target.h"

enum settings_dry_run {
	DRY_RUN_NONE,
	DRY_RUN_CLIENT,   /* decide everything, send no write */
	DRY_RUN_SERVER    /* send every write with dryRun=All: checked by the server, not stored */
};

enum settings_mode { MODE_RUN, MODE_ONCE, MODE_PLAN, MODE_MANIFESTS, MODE_VERSION, MODE_HELP, MODE_COMPLETION,
	MODE_FENCE /* the fence agent (docs/fence.md): `fence`, or the binary invoked as noderecover-fence */ };

enum settings_output { OUTPUT_TABLE, OUTPUT_JSON };   /* how plan prints */

enum settings_log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };   /* how the log's lines are written (say.h) */

/* --fence: the watcher's side of the fence (docs/fence.md); the place of its word in its row's words */
enum settings_fence { FENCE_OFF, FENCE_PREFER, FENCE_REQUIRE };

#define SETTINGS_KEY_MAX 317      /* a qualified name: 253 prefix + '/' + 63 name */
#define SETTINGS_MAX_SECONDS 315360000  /* ten years: anything longer is a typo */
#define SETTINGS_POD_PORT "8080"        /* where the pod `manifests` writes listens (--listen :8080) */
#define SETTINGS_POD_NAME "POD_NAME"    /* the variable the pod's name is given in: the election's identity */

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
	enum settings_log_format log_format;
	const char *shell;            /* `completion SHELL`: "bash" or "zsh" */
	const char *listen;           /* where to serve /metrics, /livez, /readyz; NULL: nowhere */
	char self_node[256];          /* "" when unknown */
	const char *self_source;      /* where self_node came from, for the start-up line */
	int leader_elect;             /* only the holder of the Lease lists and acts */
	char lease_name[254];         /* a DNS subdomain */
	char lease_namespace[64];     /* a DNS label: the flag, the variable, or the pod's own */
	const char *lease_ns_source;  /* where lease_namespace came from, for the start-up line */
	enum settings_fence fence;    /* off when prefer has no namespace outside a pod (fence_unplaced) */
	char fence_namespace[64];     /* the fence Leases (the agent's and the watcher's): the flag, the variable, or the pod's own; "" none */
	const char *fence_ns_source;  /* where fence_namespace came from, for the start-up line */
	int fence_unplaced;           /* --fence=prefer was turned off: outside a pod without --fence-namespace */
	int64_t fence_min_safe;       /* seconds: the floor of a fence's safe time */
	const char *kubeconfig;       /* flag or KUBECONFIG; NULL if neither */
	int kubeconfig_list;          /* 1: it is KUBECONFIG's list (a:b, merged); 0: the flag's one file */
	const char *context;          /* --context: the kubeconfig context to use; NULL: the current one */
	const char *server, *ca_file, *token_file, *tls_server_name;
	/* the fence agent's (`fence`); seconds for the durations */
	int64_t fence_check, fence_after, fence_isolated_after, fence_renew, fence_exec_timeout, fence_watchdog_timeout;
	const char *fence_action;     /* "watchdog", "reboot", "exec"; NULL: watchdog if the device exists, else reboot */
	const char *fence_exec, *fence_watchdog, *fence_kubelet_url, *fence_listen, *fence_address, *fence_peer_secret_file;
	char fence_address_buf[72];   /* fence_address made of POD_IP and the listen port */
};

/* Pruning is on: a prune threshold was given. The one test of it, for the rules, the
 * permissions and the pod's placement alike. */
static inline int settings_pruning(const struct settings *s)
{
	return s->prune_after > 0;
}

/* Events are posted: on, and not a dry run (an Event is a write). */
static inline int settings_events_on(const struct settings *s)
{
	return s->events && s->dry_run == DRY_RUN_NONE;
}

/* What a setting's text is read as, and so the type of the field it sets. */
enum settings_kind {
	SETTINGS_DURATION,  /* int64_t seconds: text_duration's forms, min to max */
	SETTINGS_COUNT,     /* long: digits only (text_decimal), min to max */
	SETTINGS_LIMIT,     /* the storm guard's N (min to max) or P% (1% to 100%): max_unknown and
	                       max_unknown_percent */
	SETTINGS_BOOL,      /* int: true or false */
	SETTINGS_BOOL01,    /* int: true or false, or 1 or 0 (as kube-controller-manager's --leader-elect) */
	SETTINGS_KEY,       /* char[SETTINGS_KEY_MAX + 1]: a label or annotation key */
	SETTINGS_DNS,       /* char[max + 1]: a DNS label (max 63) or, with dots, a DNS subdomain (max 253) */
	SETTINGS_NODE,      /* char[max + 1]: a node's name, as given */
	SETTINGS_DRY_RUN,   /* enum settings_dry_run: client (or true), server, none (or false) */
	SETTINGS_OUTPUT,    /* enum settings_output: table or json */
	SETTINGS_LOG_FORMAT,/* enum settings_log_format: text or json */
	SETTINGS_WORDS,     /* int: the place of the value among the words of what ("off prefer require") */
	SETTINGS_ADDRESS,   /* const char *: :PORT, IPv4:PORT or [IPv6]:PORT (listen_addr) */
	SETTINGS_TEXT       /* const char *: a path, a URL or a name, kept as given */
};

/* How `noderecover manifests` hands a setting to the pod: by its variable, or by its flag in
 * the container's args when it has no variable. */
enum settings_pod {
	SETTINGS_POD_NEVER,    /* not passed on: where the cluster is, plan's output, the Lease's namespace */
	SETTINGS_POD_ALWAYS,   /* its value */
	SETTINGS_POD_CHANGED,  /* its value, when it is not the default */
	SETTINGS_POD_PRUNING,  /* its value, when pruning is on */
	SETTINGS_POD_FIXED,    /* pod_value, whatever the settings say */
	SETTINGS_POD_FIELD     /* the pod's own field named by pod_value (the downward API) */
};

/*
 * One setting: everything known about it, written once. settings_parse reads flags and
 * variables by it, settings_help prints it, manifests passes it on by it, and a unit test holds
 * the README's table of settings to it.
 */
struct settings_row {
	const char *flag;        /* "--poll" */
	const char *arg;         /* what follows the flag in help: " DURATION", "=false", "" */
	const char *env;         /* its environment variable; NULL: a flag only */
	const char *dflt;        /* the default, as the flag takes it; NULL: no value (see unset) */
	const char *unset;       /* with no default value, what leaving it unset means ("required",
	                            "the taint threshold"); NULL: nothing to say */
	const char *alone;       /* what the flag means standing alone (--dry-run: client); NULL: it needs a value */
	const char *what;        /* KEY and DNS: what a value must be, for the refusal ("a label");
	                            WORDS: the words it takes, in order, one space apart */
	const char *pod_value;   /* SETTINGS_POD_FIXED: the value; SETTINGS_POD_FIELD: the field's path */
	const char *meaning;     /* one line, for help */
	/* the rest packed after the pointers (a row is read, never written; 42 of them) */
	int32_t min, max;        /* DURATION, COUNT, LIMIT: the bounds; DNS and NODE: the longest */
	uint16_t field;          /* offsetof(struct settings, the field it sets) */
	enum settings_kind kind : 8;
	enum settings_pod pod : 8;
	unsigned blank_unset : 1; /* an empty value means unset (a variable's habit), not a value to check */
};

/* The settings, in the order help, the README and the pod's environment list them. */
extern const struct settings_row settings_rows[];
extern const size_t settings_row_count;

/* The row of a flag ("--self-node"), or NULL. */
const struct settings_row *settings_find(const char *flag);

/*
 * Sets r's field in *s from text, read as the flag would read it; name (the flag or variable
 * it came from) is for the message. Returns 0, or -1 with one line in err.
 */
int settings_set(const struct settings_row *r, struct settings *s, const char *text, const char *name,
    char *err, size_t errlen);

/* r's value in *s as its variable takes it ("300", "50%", "true"): a pointer into *s or buf
 * (n bytes, 32 are enough). */
const char *settings_value(const struct settings_row *r, const struct settings *s, char *buf, size_t n);

/* Whether r's value in *s is its default. */
int settings_is_default(const struct settings_row *r, const struct settings *s);

/* The options part of `noderecover help`, one setting a row, written to out. */
void settings_help(FILE *out);

/*
 * Reads text, the value of the setting called name (its flag or variable, for the message), as
 * a duration (text_duration: 90, 90s, 5m, 1h30m) of min to max seconds into *out. The one call
 * for every seconds setting. Returns 0, or -1 with one line in err naming the setting, quoting
 * the value and saying what is wrong; *out is then untouched.
 */
int settings_seconds(const char *name, const char *text, int64_t min, int64_t max, int64_t *out,
    char *err, size_t errlen);

/*
 * The fence agent's action (docs/fence.md), as `fence` and `manifests --fence` check it: unset,
 * or watchdog, reboot or exec, and exec with its program (--fence-exec). name: the flag or
 * variable the action came from, for the message. Returns 0, or -1 with one line in err.
 */
int settings_fence_action(const struct settings *s, const char *name, char *err, size_t errlen);

/* Looks up an environment variable; getenv in the program, a table in the tests. */
typedef const char *(*settings_env_fn)(const char *name);

/*
 * Reads the command line and the environment into *s, by settings_rows: a flag beats its
 * variable, the variable beats the default. Returns 0, or -1 with one line in err naming the
 * setting and what is wrong.
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
