/*
 * Settings: flag beats variable beats default, and every bad setting is refused with one
 * line naming it. Where the cluster is found, in its order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include "check.h"
#include "../../kubeconfig.h"
#include "../../settings.h"

/* The environment the code under test sees: pairs of name, value. */
static const char *fake_env[32];

static const char *env(const char *name)
{
	for (int i = 0; fake_env[i]; i += 2)
		if (strcmp(fake_env[i], name) == 0)
			return fake_env[i + 1];
	return NULL;
}

static void set_env(const char *const *pairs)
{
	memset(fake_env, 0, sizeof fake_env);
	for (int i = 0; pairs && pairs[i]; i++)
		fake_env[i] = pairs[i];
}

static char err[512];

/* Parses argv (NULL-terminated, without the program name) with the given environment. */
static int parse(struct settings *s, const char *const *env_pairs, const char *const *args)
{
	char *argv[32] = { "noderecover" };
	int argc = 1;

	set_env(env_pairs);
	for (; args && args[argc - 1]; argc++)
		argv[argc] = (char *)args[argc - 1];
	err[0] = '\0';
	return settings_parse(s, argc, argv, env, err, sizeof err);
}

#define ARGS(...) (const char *const[]){ __VA_ARGS__, NULL }

static void t_defaults(void)
{
	struct settings s;

	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), ARGS("once")) == 0);
	check(s.mode == MODE_ONCE);
	check(s.taint_after == 60);
	check(s.prune_after == 0);
	check(s.poll == 15);
	check(s.page_size == 500);
	check(strcmp(s.prune_label, "github-runner.exadev.io/removable") == 0);
	check(strcmp(s.annotation, "github-runner.exadev/out-of-service-applied-at") == 0);
	/* Outside a pod the self node defaults to the host name. */
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	check(strcasecmp(s.self_node, host) == 0);
	for (const char *c = s.self_node; *c; c++)
		check(!(*c >= 'A' && *c <= 'Z'));
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), NULL) == 0);
	check(s.mode == MODE_RUN);
}

static void t_flag_beats_env(void)
{
	struct settings s;
	const char *const e[] = { "NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_POLL_SECONDS", "30",
		"NODE_RECOVERY_PRUNE_LABEL", "a.example/gone", "NODE_RECOVERY_SELF_NODE", "from-env", NULL };

	check(parse(&s, e, ARGS("run", "--taint-after", "90", "--poll=5", "--self-node", "from-flag")) == 0);
	check(s.taint_after == 90);
	check(s.poll == 5);
	check(strcmp(s.self_node, "from-flag") == 0);
	check(strcmp(s.prune_label, "a.example/gone") == 0);
}

/* --dry-run alone is the client's; =server the server's; the variable takes true/false too. */
static void t_dry_run(void)
{
	struct settings s;

	check(parse(&s, NULL, ARGS("--taint-after", "60", "--dry-run")) == 0);
	check(s.dry_run == DRY_RUN_CLIENT && s.taint_after == 60);
	check(parse(&s, NULL, ARGS("once", "--dry-run", "--taint-after", "60")) == 0);
	check(s.dry_run == DRY_RUN_CLIENT && s.taint_after == 60);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--dry-run=server")) == 0);
	check(s.dry_run == DRY_RUN_SERVER);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--dry-run=client")) == 0);
	check(s.dry_run == DRY_RUN_CLIENT);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_DRY_RUN", "true"), NULL) == 0);
	check(s.dry_run == DRY_RUN_CLIENT);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_DRY_RUN", "server"), NULL) == 0);
	check(s.dry_run == DRY_RUN_SERVER);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_DRY_RUN", "false"), NULL) == 0);
	check(s.dry_run == DRY_RUN_NONE);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_DRY_RUN", "server"),
	    ARGS("--dry-run=none")) == 0);
	check(s.dry_run == DRY_RUN_NONE);
}

/* Events are on unless --events=false or NODE_RECOVERY_EVENTS=false; the flag beats the variable. */
static void t_events(void)
{
	struct settings s;

	check(parse(&s, NULL, ARGS("--taint-after", "60")) == 0);
	check(s.events == 1);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--events=false")) == 0);
	check(s.events == 0);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--events", "false")) == 0);
	check(s.events == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_EVENTS", "false"), ARGS("--taint-after", "60")) == 0);
	check(s.events == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_EVENTS", ""), ARGS("--taint-after", "60")) == 0);
	check(s.events == 1);
	check(parse(&s, ARGS("NODE_RECOVERY_EVENTS", "false"), ARGS("--taint-after", "60", "--events=true")) == 0);
	check(s.events == 1);
}

/* plan, and how it prints: a table unless --output (or NODE_RECOVERY_OUTPUT) says json. */
static void t_plan_output(void)
{
	struct settings s;

	check(parse(&s, NULL, ARGS("plan", "--taint-after", "60")) == 0);
	check(s.mode == MODE_PLAN && s.output == OUTPUT_TABLE);
	check(parse(&s, NULL, ARGS("plan", "--taint-after", "60", "--output", "json")) == 0);
	check(s.output == OUTPUT_JSON);
	check(parse(&s, ARGS("NODE_RECOVERY_OUTPUT", "json"), ARGS("plan", "--taint-after", "60")) == 0);
	check(s.output == OUTPUT_JSON);
	check(parse(&s, ARGS("NODE_RECOVERY_OUTPUT", "json"), ARGS("plan", "--taint-after", "60", "--output=table")) == 0);
	check(s.output == OUTPUT_TABLE);
}

/* --listen: off by default and when empty; an address is checked here, before anything runs. */
static void t_listen(void)
{
	struct settings s;

	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), NULL) == 0);
	check(s.listen == NULL);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_LISTEN", ""), NULL) == 0);
	check(s.listen == NULL);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_LISTEN", ":8080"), NULL) == 0);
	check(s.listen && strcmp(s.listen, ":8080") == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_LISTEN", ":8080"),
	    ARGS("--listen", "[::1]:9090")) == 0);
	check(s.listen && strcmp(s.listen, "[::1]:9090") == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_LISTEN", "localhost:8080"), NULL) == -1);
	check(strcmp(err, "NODE_RECOVERY_LISTEN 'localhost:8080' is not :PORT, IPv4:PORT or [IPv6]:PORT with a port from 1 to 65535 (no host names)") == 0);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--listen=:0")) == -1);
	check(strncmp(err, "--listen ':0' is not", 20) == 0);
}

/* The storm guard is on by default at 50%, its cooldown the taint threshold. */
static void t_storm_guard(void)
{
	struct settings s;

	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), NULL) == 0);
	check(s.max_unknown == 0 && s.max_unknown_percent == 50);
	check(s.storm_cooldown == 60);
	check(strcmp(s.exclude_label, "github-runner.exadev.io/no-recovery") == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_EXCLUDE_LABEL", "example.com/keep"), NULL) == 0);
	check(strcmp(s.exclude_label, "example.com/keep") == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_MAX_UNKNOWN", "7"), NULL) == 0);
	check(s.max_unknown == 7 && s.max_unknown_percent == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_MAX_UNKNOWN", "7"),
	    ARGS("--max-unknown", "30%", "--storm-cooldown", "0")) == 0);
	check(s.max_unknown == 0 && s.max_unknown_percent == 30);
	check(s.storm_cooldown == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_STORM_COOLDOWN", "600"),
	    ARGS("--max-unknown=100%")) == 0);
	check(s.max_unknown_percent == 100);
	check(s.storm_cooldown == 600);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--max-unknown", "1%")) == 0);
	check(s.dry_run == DRY_RUN_NONE);
	check(s.max_unknown_percent == 1);
}

static void t_pruning_off_when_empty(void)
{
	struct settings s;

	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_PRUNE_AFTER_SECONDS", ""), NULL) == 0);
	check(s.prune_after == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_PRUNE_AFTER_SECONDS", "61"), NULL) == 0);
	check(s.prune_after == 61);
}

/* Each bad setting: refused, and the message names the setting. */
static void t_refusals(void)
{
	static const struct {
		const char *env_name, *env_value;
		const char *args[6];
		const char *named;
	} bad[] = {
		{ NULL, NULL, { "once" }, "--taint-after" },
		{ "NODE_RECOVERY_AFTER_SECONDS", "", { "once" }, "--taint-after" },
		{ "NODE_RECOVERY_AFTER_SECONDS", "1x", { "once" }, "NODE_RECOVERY_AFTER_SECONDS" },
		{ "NODE_RECOVERY_AFTER_SECONDS", "-5", { "once" }, "NODE_RECOVERY_AFTER_SECONDS" },
		{ "NODE_RECOVERY_AFTER_SECONDS", "60", { "once", "--taint-after", "1.5" }, "--taint-after" },
		{ "NODE_RECOVERY_AFTER_SECONDS", "99999999999999999999", { "once" }, "NODE_RECOVERY_AFTER_SECONDS" },
		{ "NODE_RECOVERY_PRUNE_AFTER_SECONDS", "60", { "--taint-after", "60" }, "NODE_RECOVERY_PRUNE_AFTER_SECONDS" },
		{ "NODE_RECOVERY_PRUNE_AFTER_SECONDS", "30", { "--taint-after", "60" }, "must be greater" },
		{ "NODE_RECOVERY_PRUNE_AFTER_SECONDS", "2d", { "--taint-after", "60" }, "NODE_RECOVERY_PRUNE_AFTER_SECONDS" },
		{ "NODE_RECOVERY_PRUNE_AFTER_SECONDS", "1m", { "--taint-after", "1h" }, "must be greater" },
		{ NULL, NULL, { "--taint-after", "60", "--prune-after", " 90" }, "--prune-after" },
		{ NULL, NULL, { "--taint-after", "60", "--bogus" }, "--bogus" },
		{ NULL, NULL, { "--taint-after" }, "--taint-after" },
		{ NULL, NULL, { "sometimes", "--taint-after", "60" }, "sometimes" },
		{ NULL, NULL, { "--taint-after", "60", "--poll", "0" }, "--poll" },
		{ NULL, NULL, { "--taint-after", "60", "--poll", "0s" }, "--poll" },
		{ NULL, NULL, { "--taint-after", "60", "--poll", "24h0m1s" }, "--poll" },
		{ "NODE_RECOVERY_POLL_SECONDS", "500ms", { "--taint-after", "60" }, "NODE_RECOVERY_POLL_SECONDS" },
		{ NULL, NULL, { "--taint-after", "60", "--page-size", "0" }, "--page-size" },
		{ NULL, NULL, { "--taint-after", "60", "--prune-label", "bad label" }, "--prune-label" },
		{ NULL, NULL, { "--taint-after", "60", "--annotation", "/x" }, "--annotation" },
		{ NULL, NULL, { "--taint-after", "60", "--server", "https://x" }, "--server" },
		{ NULL, NULL, { "--taint-after", "60", "--token-file", "/t" }, "--token-file" },
		{ NULL, NULL, { "--taint-after", "60", "--exclude-label", "no/such/key" }, "--exclude-label" },
		{ "NODE_RECOVERY_EXCLUDE_LABEL", "-x", { "--taint-after", "60" }, "NODE_RECOVERY_EXCLUDE_LABEL" },
		{ NULL, NULL, { "--taint-after", "60", "--dry-run=All" }, "--dry-run" },
		{ "NODE_RECOVERY_DRY_RUN", "yes", { "--taint-after", "60" }, "NODE_RECOVERY_DRY_RUN" },
		{ NULL, NULL, { "--taint-after", "60", "--events=no" }, "--events" },
		{ "NODE_RECOVERY_EVENTS", "0", { "--taint-after", "60" }, "NODE_RECOVERY_EVENTS" },
		{ NULL, NULL, { "--taint-after", "60", "--max-unknown", "0" }, "--max-unknown" },
		{ NULL, NULL, { "--taint-after", "60", "--max-unknown", "150%" }, "--max-unknown" },
		{ NULL, NULL, { "--taint-after", "60", "--max-unknown", "-1" }, "--max-unknown" },
		{ NULL, NULL, { "--taint-after", "60", "--max-unknown", "5%%" }, "--max-unknown" },
		{ NULL, NULL, { "--taint-after", "60", "--max-unknown", "0%" }, "--max-unknown" },
		{ NULL, NULL, { "--taint-after", "60", "--max-unknown", "%" }, "--max-unknown" },
		{ NULL, NULL, { "--taint-after", "60", "--max-unknown", "" }, "--max-unknown" },
		{ NULL, NULL, { "--taint-after", "60", "--max-unknown", "1.5%" }, "--max-unknown" },
		{ "NODE_RECOVERY_MAX_UNKNOWN", "half", { "--taint-after", "60" }, "NODE_RECOVERY_MAX_UNKNOWN" },
		{ NULL, NULL, { "--taint-after", "60", "--storm-cooldown", "1mo" }, "--storm-cooldown" },
		{ NULL, NULL, { "--taint-after", "60", "--storm-cooldown", "-1" }, "--storm-cooldown" },
		{ NULL, NULL, { "--taint-after", "60", "--storm-cooldown", "2.5" }, "--storm-cooldown" },
		{ "NODE_RECOVERY_STORM_COOLDOWN", "soon", { "--taint-after", "60" }, "NODE_RECOVERY_STORM_COOLDOWN" },
		{ NULL, NULL, { "plan", "--taint-after", "60", "--output", "yaml" }, "--output" },
		{ "NODE_RECOVERY_OUTPUT", "JSON", { "plan", "--taint-after", "60" }, "NODE_RECOVERY_OUTPUT" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct settings s;
		const char *e[] = { bad[i].env_name, bad[i].env_value, NULL };
		if (!check(parse(&s, bad[i].env_name ? e : NULL, bad[i].args) == -1) ||
		    !check(strstr(err, bad[i].named) != NULL) || !check(strchr(err, '\n') == NULL))
			fprintf(stderr, "  case %zu: '%s'\n", i, err);
	}
}

/* Every seconds setting takes kubectl's durations as well as bare seconds, flag and variable alike. */
static void t_durations(void)
{
	struct settings s;

	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "5m", "NODE_RECOVERY_PRUNE_AFTER_SECONDS", "2h",
	    "NODE_RECOVERY_POLL_SECONDS", "30s", "NODE_RECOVERY_STORM_COOLDOWN", "1h30m"), NULL) == 0);
	check(s.taint_after == 300 && s.prune_after == 7200 && s.poll == 30 && s.storm_cooldown == 5400);
	check(parse(&s, NULL, ARGS("--taint-after", "90s", "--prune-after=1h0m0s", "--poll", "1m", "--storm-cooldown", "0s")) == 0);
	check(s.taint_after == 90 && s.prune_after == 3600 && s.poll == 60 && s.storm_cooldown == 0);
	/* bare digits stay seconds: the shell watcher's variables keep their meaning */
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "300", "NODE_RECOVERY_PRUNE_AFTER_SECONDS", "7200"), NULL) == 0);
	check(s.taint_after == 300 && s.prune_after == 7200 && s.storm_cooldown == 300);
	check(parse(&s, NULL, ARGS("--taint-after", "87600h")) == 0 && s.taint_after == SETTINGS_MAX_SECONDS);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--poll", "24h")) == 0 && s.poll == 86400);
}

/* The one call other settings use (the lead's --relist): its lines, word for word. */
static void t_settings_seconds(void)
{
	static const struct {
		const char *in;
		const char *msg;      /* NULL: taken */
	} rows[] = {
		{ "10m", NULL },
		{ "600", NULL },
		{ "5x", "--relist '5x' is not a duration: the units are h, m and s (no ms, us, ns or d)" },
		{ "-5m", "--relist '-5m' is not a duration: it takes no sign (and is never negative)" },
		{ "1.5h", "--relist '1.5h' is not a duration: fractions are not supported, write whole units (1h30m, not 1.5h)" },
		{ "30m1h", "--relist '30m1h' is not a duration: h, m and s come in that order, each once (1h30m, not 30m1h)" },
		{ "", "--relist '' is not a duration: write seconds (90) or hours, minutes and seconds (1h30m, 5m, 90s)" },
		{ "5m3", "--relist '5m3' is not a duration: write seconds (90) or hours, minutes and seconds (1h30m, 5m, 90s)" },
		{ "87600h1s", "--relist '87600h1s' is longer than 87600h, the most it takes" },
		{ "9s", "--relist '9s' is shorter than 10s, the least it takes" },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int64_t v = -7;
		int r = settings_seconds("--relist", rows[i].in, 10, SETTINGS_MAX_SECONDS, &v, err, sizeof err);
		if (rows[i].msg ? !check(r == -1 && v == -7 && strcmp(err, rows[i].msg) == 0) : !check(r == 0 && v == 600))
			fprintf(stderr, "  '%s': %d, %lld, '%s'\n", rows[i].in, r, (long long)v, err);
	}
	check(settings_seconds("--poll", "25h", 1, 86400, &(int64_t){ 0 }, err, sizeof err) == -1 &&
	    strcmp(err, "--poll '25h' is longer than 24h, the most it takes") == 0);
}

/* The largest poll and page size are accepted, one more is refused, and the message states
 * the bound the code enforces (it was once written beside the constant, free to drift). */
static void t_bounds_in_messages(void)
{
	struct settings s;

	check(parse(&s, NULL, ARGS("--taint-after", "60", "--poll", "86400")) == 0 && s.poll == 86400);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--poll", "86401")) == -1 &&
	    strstr(err, "longer than 24h") != NULL);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--page-size", "10000")) == 0 && s.page_size == 10000);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--page-size", "10001")) == -1 &&
	    strstr(err, "between 1 and 10000") != NULL);
}

static void t_help_and_version(void)
{
	struct settings s;

	check(parse(&s, NULL, ARGS("help")) == 0 && s.mode == MODE_HELP);
	check(parse(&s, NULL, ARGS("version")) == 0 && s.mode == MODE_VERSION);
	check(parse(&s, NULL, ARGS("--help")) == 0 && s.mode == MODE_HELP);
	/* as every CLI operators know: --version beside the command */
	check(parse(&s, NULL, ARGS("--version")) == 0 && s.mode == MODE_VERSION);
	check(parse(&s, NULL, ARGS("plan", "--version")) == 0 && s.mode == MODE_VERSION);
	check(parse(&s, NULL, ARGS("completion", "bash")) == 0 && s.mode == MODE_COMPLETION && strcmp(s.shell, "bash") == 0);
	check(parse(&s, NULL, ARGS("completion", "zsh")) == 0 && s.mode == MODE_COMPLETION && strcmp(s.shell, "zsh") == 0);
	check(parse(&s, NULL, ARGS("completion", "fish")) < 0 && strstr(err, "bash or zsh"));
	check(parse(&s, NULL, ARGS("completion")) < 0 && strstr(err, "bash or zsh"));
}

/* --log-format: text by default, json by the flag or the variable, anything else refused. */
static void t_log_format(void)
{
	struct settings s;

	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), NULL) == 0);
	check(s.log_format == LOG_FORMAT_TEXT);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60", "NODE_RECOVERY_LOG_FORMAT", "json"), NULL) == 0);
	check(s.log_format == LOG_FORMAT_JSON);
	check(parse(&s, ARGS("NODE_RECOVERY_LOG_FORMAT", "json"), ARGS("--taint-after", "60", "--log-format=text")) == 0);
	check(s.log_format == LOG_FORMAT_TEXT);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--log-format", "logfmt")) < 0);
	check(strstr(err, "--log-format 'logfmt' is neither text nor json") != NULL);
}

/* Writes text to a new file under dir; returns its path (static buffer per slot). */
static const char *put(const char *dir, const char *name, const char *text)
{
	static char paths[4][512];
	static int slot;
	char *p = paths[slot++ % 4];
	FILE *f;

	snprintf(p, 512, "%s/%s", dir, name);
	if ((f = fopen(p, "w"))) {
		fputs(text, f);
		fclose(f);
	}
	return p;
}

static void t_explicit_target(void)
{
	char dir[] = "/tmp/nr-settings-XXXXXX";
	struct settings s;
	struct kube_target t;

	check(mkdtemp(dir) != NULL);
	const char *ca = put(dir, "ca.pem", "-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----\n");
	const char *tok = put(dir, "token", "s3cr3t-token\n");
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--server", "https://127.0.0.1:6443", "--ca-file", ca,
	    "--token-file", tok)) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == 0);
	check(strcmp(t.server, "https://127.0.0.1:6443") == 0);
	check(strcmp(t.token_file, tok) == 0);
	check(t.ca_pem && strstr(t.ca_pem, "BEGIN CERTIFICATE"));
	check(strstr(t.source, "s3cr3t") == NULL);
	kube_target_free(&t);

	/* Unreadable CA, plain http: refused before anything is sent. (The token file is checked
	 * by kube_init; tests/standin/test_settings.py covers an unreadable, empty or hostile one.) */
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--server", "https://h", "--ca-file", "/nonexistent/ca", "--token-file", tok)) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "/nonexistent/ca"));
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--server", "http://h", "--ca-file", ca, "--token-file", tok)) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "https"));
	check(strstr(err, "s3cr3t") == NULL);

	/* A FIFO or a device named as a CA (or token) would block start-up or never end: refused. */
	char fifo[600];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	check(mkfifo(fifo, 0600) == 0);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--server", "https://h", "--ca-file", fifo, "--token-file", tok)) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "not a regular file"));
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--server", "https://h", "--ca-file", "/dev/zero", "--token-file", tok)) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "not a regular file"));
}

/* In a pod without a self node, none is guessed: the pod's host name is not its node's. */
static void t_pod_self_node(void)
{
	struct settings s;

	check(parse(&s, ARGS("KUBERNETES_SERVICE_HOST", "10.43.0.1", "NODE_RECOVERY_AFTER_SECONDS", "60"), NULL) == 0);
	check(s.self_node[0] == '\0');
}


/* In a pod: the service's address and the mounted account (here tests/unit/sa). */
static void t_pod_target(void)
{
	struct settings s;
	struct kube_target t;
	const char *const e[] = { "KUBERNETES_SERVICE_HOST", "10.43.0.1", "KUBERNETES_SERVICE_PORT", "443",
		"NODE_RECOVERY_AFTER_SECONDS", "60", NULL };

	check(parse(&s, e, NULL) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == 0);
	check(strcmp(t.server, "https://10.43.0.1:443") == 0);
	check(strcmp(t.token_file, SETTINGS_SA_DIR "/token") == 0);
	check(t.ca_pem && strstr(t.ca_pem, "BEGIN CERTIFICATE"));
	check(t.token == NULL && t.cert_pem == NULL);
	kube_target_free(&t);

	/* An IPv6 service address goes in brackets. */
	const char *const e6[] = { "KUBERNETES_SERVICE_HOST", "fd00::1", "KUBERNETES_SERVICE_PORT", "6443",
		"NODE_RECOVERY_AFTER_SECONDS", "60", NULL };
	check(parse(&s, e6, NULL) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == 0);
	check(strcmp(t.server, "https://[fd00::1]:6443") == 0);
	kube_target_free(&t);

	/* A kubeconfig beats the pod's account. */
	const char *const ek[] = { "KUBERNETES_SERVICE_HOST", "10.43.0.1", "KUBECONFIG", "kubeconfig/k3s.yaml",
		"NODE_RECOVERY_AFTER_SECONDS", "60", NULL };
	check(parse(&s, ek, NULL) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == 0);
	check(strstr(t.source, "kubeconfig") != NULL);
	check(t.cert_pem != NULL);
	kube_target_free(&t);
}

/* KUBECONFIG is a list merged as kubectl merges it; --kubeconfig is one file; --context picks. */
static void t_kubeconfig_list(void)
{
	char dir[] = "/tmp/nr-settings-XXXXXX", list[2048], pair[1300];
	struct settings s;
	struct kube_target t;

	check(mkdtemp(dir) != NULL);
	put(dir, "ca.crt", "-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----\n");
	const char *a = put(dir, "a.yaml", "current-context: one\ncontexts:\n- name: one\n  context:\n    cluster: c1\n    user: u\n"
	    "- name: two\n  context:\n    cluster: c2\n    user: u\n"
	    "users:\n- name: u\n  user:\n    token: s3cr3t-token\n");
	const char *b = put(dir, "b.yaml", "current-context: two\nclusters:\n- name: c1\n  cluster:\n    server: https://one.example\n"
	    "    certificate-authority: ca.crt\n- name: c2\n  cluster:\n    server: https://two.example\n"
	    "    certificate-authority: ca.crt\n");
	snprintf(pair, sizeof pair, "%s:%s", a, b);
	/* empty names are skipped and a name given twice is read once, as kubectl splits the list */
	snprintf(list, sizeof list, ":%s::%s:%s/none.yaml:%s", a, b, dir, a);
	const char *const e[] = { "NODE_RECOVERY_AFTER_SECONDS", "60", "KUBECONFIG", list, NULL };
	check(parse(&s, e, NULL) == 0 && s.kubeconfig_list && s.context == NULL);
	if (check(settings_target(&s, env, &t, err, sizeof err) == 0)) {
		/* must-fail: b.yaml's current-context (two) does not override a.yaml's (one) */
		check(strcmp(t.server, "https://one.example") == 0);
		check(strstr(t.source, "context one from ") && strstr(t.source, "cluster c1 from ") &&
		    strstr(t.source, "/b.yaml") && strstr(t.source, "/none.yaml"));
		check(strstr(t.source, "s3cr3t") == NULL);
	} else {
		fprintf(stderr, "  %s\n", err);
	}
	kube_target_free(&t);
	/* must-fail: --context picks two, not the current one */
	check(parse(&s, e, ARGS("--context", "two")) == 0 && strcmp(s.context, "two") == 0);
	if (check(settings_target(&s, env, &t, err, sizeof err) == 0))
		check(strcmp(t.server, "https://two.example") == 0 && strstr(t.source, "--context"));
	kube_target_free(&t);
	/* a context that is not there: one line naming --context */
	check(parse(&s, e, ARGS("--context=three")) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "--context") && strstr(err, "\"three\"") &&
	    !strchr(err, '\n'));
	/* --kubeconfig is one file, as kubectl's: a:b is a name, and no such file */
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--kubeconfig", pair)) == 0 && !s.kubeconfig_list);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "No such file"));
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--kubeconfig", a)) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "the file has no clusters"));
	/* the flag beats the variable */
	check(parse(&s, e, ARGS("--kubeconfig", a)) == 0 && !s.kubeconfig_list && s.kubeconfig == a);
	/* a list of no name, or of all missing files */
	const char *const none[] = { "NODE_RECOVERY_AFTER_SECONDS", "60", "KUBECONFIG", "::", NULL };
	check(parse(&s, none, NULL) == 0 && settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "KUBECONFIG"));
	snprintf(list, sizeof list, "%s/none.yaml", dir);
	const char *const missing[] = { "NODE_RECOVERY_AFTER_SECONDS", "60", "KUBECONFIG", list, NULL };
	check(parse(&s, missing, NULL) == 0 && settings_target(&s, env, &t, err, sizeof err) == -1 &&
	    strstr(err, "none of the KUBECONFIG files exists"));
	/* more files than are merged */
	list[0] = '\0';
	for (int i = 0; i <= 16; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s/f%d.yaml", i ? ":" : "", dir, i);
	check(parse(&s, missing, NULL) == 0 && settings_target(&s, env, &t, err, sizeof err) == -1 &&
	    strstr(err, "more than 16 files"));
	/* --context with no kubeconfig to pick from */
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--context", "x", "--server", "https://h", "--ca-file", a,
	    "--token-file", a)) == -1 && strstr(err, "--context"));
	check(parse(&s, ARGS("KUBERNETES_SERVICE_HOST", "10.43.0.1", "NODE_RECOVERY_AFTER_SECONDS", "60"),
	    ARGS("--context", "x")) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "--context"));
	/* and with k3s's kubeconfig (tests/unit/kubeconfig/k3s.yaml): its one context, or none */
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), ARGS("--context", "default")) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == 0);
	kube_target_free(&t);
	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), ARGS("--context", "prod")) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == -1 && strstr(err, "--context names context \"prod\""));
	char path[600];
	for (const char *const *n = (const char *const[]){ "ca.crt", "a.yaml", "b.yaml", NULL }; *n; n++) {
		snprintf(path, sizeof path, "%s/%s", dir, *n);
		unlink(path);
	}
	rmdir(dir);
}

/* Outside a pod with nothing given: k3s's kubeconfig (here tests/unit/kubeconfig/k3s.yaml). */
static void t_k3s_target(void)
{
	struct settings s;
	struct kube_target t;

	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), NULL) == 0);
	check(settings_target(&s, env, &t, err, sizeof err) == 0);
	check(strstr(t.source, SETTINGS_K3S_KUBECONFIG) != NULL);
	check(strncmp(t.server, "https://", 8) == 0);
	check(t.cert_pem != NULL && t.key_pem != NULL);
	kube_target_free(&t);
}


/* As kubectl: $HOME/.kube/config when nothing else says where the cluster is, before k3s's file
 * (an operator's own file is their choice); never in a pod, never over KUBECONFIG. */
static void t_home_kubeconfig(void)
{
	char dir[] = "/tmp/nr-home-XXXXXX", kube[600], ca[700];
	struct settings s;
	struct kube_target t;

	check(mkdtemp(dir) != NULL);
	snprintf(kube, sizeof kube, "%s/.kube", dir);
	check(mkdir(kube, 0700) == 0);
	snprintf(ca, sizeof ca, "%s/ca.crt", kube);
	put(kube, "ca.crt", "-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----\n");
	put(kube, "config", "current-context: laptop\ncontexts:\n- name: laptop\n  context:\n    cluster: c\n    user: u\n"
	    "clusters:\n- name: c\n  cluster:\n    server: https://laptop.example:6443\n    certificate-authority: ca.crt\n"
	    "users:\n- name: u\n  user:\n    token: home-token\n");
	const char *const e[] = { "NODE_RECOVERY_AFTER_SECONDS", "60", "HOME", dir, NULL };
	check(parse(&s, e, NULL) == 0);
	/* must-fail: the old build went on to k3s's file (kubeconfig/k3s.yaml here) */
	if (check(settings_target(&s, env, &t, err, sizeof err) == 0)) {
		check(strcmp(t.server, "https://laptop.example:6443") == 0);
		check(strstr(t.source, "/.kube/config (context laptop)") != NULL);
	} else {
		fprintf(stderr, "  %s\n", err);
	}
	kube_target_free(&t);
	/* KUBECONFIG and the pod's account come first */
	const char *const ek[] = { "NODE_RECOVERY_AFTER_SECONDS", "60", "HOME", dir, "KUBECONFIG", "kubeconfig/k3s.yaml", NULL };
	check(parse(&s, ek, NULL) == 0 && settings_target(&s, env, &t, err, sizeof err) == 0);
	check(strstr(t.source, "k3s.yaml") != NULL);
	kube_target_free(&t);
	const char *const ep[] = { "NODE_RECOVERY_AFTER_SECONDS", "60", "HOME", dir, "KUBERNETES_SERVICE_HOST", "10.43.0.1", NULL };
	check(parse(&s, ep, NULL) == 0 && settings_target(&s, env, &t, err, sizeof err) == 0);
	check(strstr(t.source, "service account") != NULL);
	kube_target_free(&t);
	/* a file there that is not a kubeconfig is refused, not passed over for k3s's */
	put(kube, "config", "not: [a kubeconfig\n");
	check(parse(&s, e, NULL) == 0 && settings_target(&s, env, &t, err, sizeof err) == -1);
	check(strstr(err, "/.kube/config") != NULL);
	/* no HOME, or none there: k3s's file, as before */
	unlink(ca);
	snprintf(ca, sizeof ca, "%s/config", kube);
	unlink(ca);
	check(parse(&s, e, NULL) == 0 && settings_target(&s, env, &t, err, sizeof err) == 0);
	check(strstr(t.source, SETTINGS_K3S_KUBECONFIG) != NULL);
	kube_target_free(&t);
	rmdir(kube);
	rmdir(dir);
}

/* Leader election: off by default; a namespace from the flag, the variable or the pod's file. */
static void t_leader_elect(void)
{
	struct settings s;
	FILE *f;

	check(parse(&s, ARGS("NODE_RECOVERY_AFTER_SECONDS", "60"), NULL) == 0);
	check(!s.leader_elect && strcmp(s.lease_name, "noderecover") == 0);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--leader-elect", "--lease-namespace", "kube-system")) == 0);
	check(s.leader_elect && strcmp(s.lease_namespace, "kube-system") == 0 && strcmp(s.lease_name, "noderecover") == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_LEADER_ELECT", "true", "NODE_RECOVERY_LEASE_NAME", "nr.lock",
	    "NODE_RECOVERY_LEASE_NAMESPACE", "ops"), ARGS("--taint-after", "60")) == 0);
	check(s.leader_elect && strcmp(s.lease_name, "nr.lock") == 0 && strcmp(s.lease_namespace, "ops") == 0);
	check(parse(&s, ARGS("NODE_RECOVERY_LEADER_ELECT", "true"), ARGS("--taint-after", "60", "--leader-elect=false")) == 0 &&
	    !s.leader_elect);
	/* must-fail: outside a pod without a namespace, run and once refuse to start */
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--leader-elect")) == -1 && strstr(err, "--lease-namespace"));
	check(parse(&s, NULL, ARGS("once", "--taint-after", "60", "--leader-elect")) == -1);
	check(parse(&s, NULL, ARGS("manifests", "--taint-after", "60", "--leader-elect")) == 0);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--leader-elect=maybe", "--lease-namespace", "x")) == -1 &&
	    strstr(err, "--leader-elect"));
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--lease-namespace", "Bad_NS")) == -1 && strstr(err, "--lease-namespace"));
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--lease-namespace", "a.b")) == -1);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--lease-name", "-x")) == -1 && strstr(err, "--lease-name"));
	/* in a pod: the service account's namespace file */
	f = fopen("sa/namespace", "w");
	if (!check(f != NULL))
		return;
	fputs("noderecover-ns", f);
	fclose(f);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--leader-elect")) == 0 &&
	    strcmp(s.lease_namespace, "noderecover-ns") == 0);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--leader-elect", "--lease-namespace", "other")) == 0 &&
	    strcmp(s.lease_namespace, "other") == 0);
	f = fopen("sa/namespace", "w");
	fputs("../etc\n", f);
	fclose(f);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--leader-elect")) == -1);
	remove("sa/namespace");
}

/* The fence's settings: prefer by default, off outside a pod without a namespace (an upgrade must
 * not stop recovering), require refused there; the pod's own namespace in a pod. */
static void t_fence(void)
{
	struct settings s;
	char buf[32];
	FILE *f;

	check(parse(&s, NULL, ARGS("--taint-after", "60")) == 0 && s.fence == FENCE_OFF && s.fence_unplaced);
	check(parse(&s, NULL, ARGS("manifests", "--taint-after", "60")) == 0 && s.fence == FENCE_PREFER);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--fence-namespace", "ops")) == 0 && s.fence == FENCE_PREFER &&
	    !s.fence_unplaced && strcmp(s.fence_namespace, "ops") == 0 && s.fence_min_safe == 45);
	check(strcmp(settings_value(settings_find("--fence"), &s, buf, sizeof buf), "prefer") == 0);
	check(settings_is_default(settings_find("--fence"), &s));
	check(parse(&s, ARGS("NODE_RECOVERY_FENCE", "require", "NODE_RECOVERY_FENCE_NAMESPACE", "ops",
	    "NODE_RECOVERY_FENCE_MIN_SAFE", "2m"), ARGS("--taint-after", "60")) == 0 && s.fence == FENCE_REQUIRE &&
	    s.fence_min_safe == 120);
	check(strcmp(settings_value(settings_find("--fence"), &s, buf, sizeof buf), "require") == 0);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--fence=off")) == 0 && s.fence == FENCE_OFF && !s.fence_unplaced);
	/* must-fail: require without a namespace outside a pod is refused, never quietly off */
	check(parse(&s, NULL, ARGS("once", "--taint-after", "60", "--fence", "require")) == -1 &&
	    strstr(err, "--fence=require needs --fence-namespace"));
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--fence", "maybe")) == -1 && strstr(err, "none of: off prefer require"));
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--fence", "prefe")) == -1);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--fence-min-safe", "0")) == -1 && strstr(err, "--fence-min-safe"));
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--fence-namespace", "Bad_NS")) == -1);
	f = fopen("sa/namespace", "w");
	if (!check(f != NULL))
		return;
	fputs("noderecover-ns\n", f);
	fclose(f);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--fence", "require")) == 0 && s.fence == FENCE_REQUIRE &&
	    strcmp(s.fence_namespace, "noderecover-ns") == 0);
	remove("sa/namespace");
}

/* The table: one row a flag and a variable, each default a value its own parser takes and
 * knows for the default, help naming every flag. */
static void t_table(void)
{
	struct settings s, d;
	char buf[64];

	for (size_t i = 0; i < settings_row_count; i++) {
		const struct settings_row *r = &settings_rows[i];
		check(settings_find(r->flag) == r);
		for (size_t j = 0; j < i; j++)
			if (!check(strcmp(settings_rows[j].flag, r->flag) != 0) ||
			    !check(!r->env || !settings_rows[j].env || strcmp(settings_rows[j].env, r->env) != 0))
				fprintf(stderr, "  %s twice\n", r->flag);
		/* a default is a value, or words for what no value means: never both */
		check(!(r->dflt && r->unset));
		memset(&d, 0, sizeof d);
		if (r->dflt && !check(settings_set(r, &d, r->dflt, r->flag, err, sizeof err) == 0))
			fprintf(stderr, "  %s's default: %s\n", r->flag, err);
		check(settings_is_default(r, &d));
		check(r->meaning && *r->meaning && !strchr(r->meaning, '\n'));
	}
	check(settings_find("--bogus") == NULL);
	check(parse(&s, NULL, ARGS("--taint-after", "60")) == 0);
	check(strcmp(settings_value(settings_find("--max-unknown"), &s, buf, sizeof buf), "50%") == 0);
	check(strcmp(settings_value(settings_find("--poll"), &s, buf, sizeof buf), "15") == 0);
	check(settings_is_default(settings_find("--relist"), &s) && settings_is_default(settings_find("--watch"), &s));
	/* must-fail: a value other than the default is not the default, whatever its spelling */
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--relist", "2m", "--watch=false", "--dry-run")) == 0);
	check(!settings_is_default(settings_find("--relist"), &s) && !settings_is_default(settings_find("--watch"), &s));
	check(!settings_is_default(settings_find("--dry-run"), &s));
	check(strcmp(settings_value(settings_find("--dry-run"), &s, buf, sizeof buf), "true") == 0);
	check(parse(&s, NULL, ARGS("--taint-after", "60", "--relist", "10m", "--max-unknown", "7")) == 0);
	check(settings_is_default(settings_find("--relist"), &s));
	check(strcmp(settings_value(settings_find("--max-unknown"), &s, buf, sizeof buf), "7") == 0);
	/* help: every flag, its variable and its default */
	FILE *f = tmpfile();
	char help[8192] = "";
	if (!check(f != NULL))
		return;
	settings_help(f);
	rewind(f);
	help[fread(help, 1, sizeof help - 1, f)] = '\0';
	fclose(f);
	for (size_t i = 0; i < settings_row_count; i++) {
		const struct settings_row *r = &settings_rows[i];
		char line[300];
		snprintf(line, sizeof line, "  %s%s ", r->flag, r->arg);
		if (!check(strstr(help, line) != NULL) || !check(!r->env || strstr(help, r->env)) ||
		    !check(!r->dflt || strstr(help, r->dflt)))
			fprintf(stderr, "  help lacks %s\n", r->flag);
	}
}

static const struct test tests[] = {
	{ "leader_elect", t_leader_elect },
	{ "fence", t_fence },
	{ "defaults", t_defaults },
	{ "flag_beats_env", t_flag_beats_env },
	{ "storm_guard", t_storm_guard },
	{ "listen", t_listen },
	{ "dry_run", t_dry_run },
	{ "events", t_events },
	{ "plan_output", t_plan_output },
	{ "pruning_off_when_empty", t_pruning_off_when_empty },
	{ "refusals", t_refusals },
	{ "durations", t_durations },
	{ "settings_seconds", t_settings_seconds },
	{ "bounds_in_messages", t_bounds_in_messages },
	{ "help_and_version", t_help_and_version },
	{ "log_format", t_log_format },
	{ "table", t_table },
	{ "explicit_target", t_explicit_target },
	{ "pod_self_node", t_pod_self_node },
	{ "pod_target", t_pod_target },
	{ "k3s_target", t_k3s_target },
	{ "home_kubeconfig", t_home_kubeconfig },
	{ "kubeconfig_list", t_kubeconfig_list },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("settings", tests, argc, argv);
}
