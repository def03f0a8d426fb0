/*
 * The README against the tables it describes: its table of settings (flag, variable, default,
 * in order) against settings.c's settings_rows, and its permissions table (resource, API
 * group, verbs, where, when) against access.c's access_rules. The README is read as it is in
 * the tree (../../README.md from tests/unit); each checker is also run on a copy with one fact
 * changed, and must say so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "../../access.h"
#include "../../events.h"
#include "../../settings.h"

#define README "../../README.md"
#define SETTINGS_HEAD "\n| flag | variable | default | meaning |\n|---|---|---|---|\n"
#define RULES_HEAD "\n| resource | API group | verbs | where | when |\n|---|---|---|---|---|\n"
#define CELLS_MAX 8
#define CELL_MAX 512

/* The whole file, NUL-terminated, or NULL. The caller frees it. */
static char *load(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (b = malloc((size_t)n + 1)) != NULL) {
		if (fread(b, 1, (size_t)n, f) == (size_t)n) {
			b[n] = '\0';
		} else {
			free(b);
			b = NULL;
		}
	}
	fclose(f);
	return b;
}

/*
 * The cells of the table row at *p ("| a | b |\n"), trimmed, into cell[] (CELL_MAX bytes each);
 * *p moves past the line. Returns how many, or -1 when the line is not a row (the table ended).
 */
static int row_cells(const char **p, char cell[][CELL_MAX], int max)
{
	const char *s = *p, *end = strchr(s, '\n'), *last;
	int n = 0;

	if (*s != '|')
		return -1;
	if (!end)
		end = s + strlen(s);
	*p = *end ? end + 1 : end;
	for (last = end; last[-1] != '|'; last--)
		;
	last--;   /* the row's closing bar */
	while (s < last && n < max) {
		const char *a = s + 1, *e = memchr(a, '|', (size_t)(last - s));
		const char *b = e;
		while (a < b && *a == ' ')
			a++;
		while (b > a && b[-1] == ' ')
			b--;
		snprintf(cell[n++], CELL_MAX, "%.*s", (int)(b - a), a);
		s = e;
	}
	return n;
}

/* The cell without its backticks: what a reader sees. */
static void plain(const char *cell, char *out, size_t n)
{
	size_t o = 0;

	for (; *cell && o + 1 < n; cell++)
		if (*cell != '`')
			out[o++] = *cell;
	out[o] = '\0';
}

/* The first `code` span of cell whose text is all of chars (NULL: any), cut at the first of stop; "" if none. */
static void code(const char *cell, const char *chars, const char *stop, char *out, size_t n)
{
	const char *p = cell;

	out[0] = '\0';
	while ((p = strchr(p, '`')) != NULL) {
		const char *e = strchr(p + 1, '`');
		size_t len;
		if (!e)
			return;
		len = (size_t)(e - p - 1);
		if (stop)
			len = strcspn(p + 1, stop) < len ? strcspn(p + 1, stop) : len;
		if (len > 0 && (!chars || strspn(p + 1, chars) >= len)) {
			snprintf(out, n, "%.*s", (int)len, p + 1);
			return;
		}
		p = e + 1;
	}
}

/*
 * Whether text's table of settings says what settings_rows says: the same flags in the same
 * order, each with its variable (or none) and its default (the value, or the words for none).
 * Returns 0, or -1 with the first difference in why.
 */
static int settings_differ(const char *text, char *why, size_t n)
{
	const char *p = strstr(text, SETTINGS_HEAD);
	char cell[CELLS_MAX][CELL_MAX], flag[64], var[64], dflt[CELL_MAX];
	size_t row = 0;

	if (!p)
		return snprintf(why, n, "no table of settings (its header line) in the README"), -1;
	for (p += strlen(SETTINGS_HEAD); row_cells(&p, cell, CELLS_MAX) >= 0; row++) {
		code(cell[0], NULL, " =", flag, sizeof flag);
		if (row >= settings_row_count)
			return snprintf(why, n, "the README has %s, which settings_rows has not", flag), -1;
		const struct settings_row *r = &settings_rows[row];
		const char *want = r->dflt ? r->dflt : r->unset ? r->unset : "";
		if (strcmp(flag, r->flag) != 0)
			return snprintf(why, n, "row %zu: the README has %s, settings_rows %s", row + 1, flag, r->flag), -1;
		code(cell[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", NULL, var, sizeof var);
		if (strcmp(var, r->env ? r->env : "") != 0)
			return snprintf(why, n, "%s: the README's variable is '%s', settings_rows' '%s'", r->flag, var,
			    r->env ? r->env : ""), -1;
		plain(cell[2], dflt, sizeof dflt);
		if (strcmp(dflt, want) != 0)
			return snprintf(why, n, "%s: the README's default is '%s', settings_rows' '%s'", r->flag, dflt, want), -1;
	}
	if (row != settings_row_count)
		return snprintf(why, n, "the README lists %zu settings, settings_rows %zu (the next: %s)", row,
		    settings_row_count, settings_rows[row].flag), -1;
	return 0;
}

/* How the README words a rule's condition and its place (its "when" cell starts so). */
static const char *const when_words[] = {
	[ACCESS_ALWAYS] = "always", [ACCESS_PRUNING] = "pruning on",
	[ACCESS_ELECTING] = "leader election", [ACCESS_EVENTS] = "Events on", [ACCESS_FENCING] = "fence on",
};
static const char *const scope_words[] = {
	[ACCESS_CLUSTER] = "cluster-wide", [ACCESS_LEASE_NAMESPACE] = "the Lease's namespace",
	[ACCESS_EVENTS_NAMESPACE] = EVENTS_NAMESPACE, [ACCESS_FENCE_NAMESPACE] = "the fence namespace",
};

/*
 * Whether text's permissions table says what access_rules says: the same rules in the same
 * order, each with its resource, group, verbs, where and when. Returns 0, or -1 with why.
 */
static int rules_differ(const char *text, char *why, size_t n)
{
	const char *p = strstr(text, RULES_HEAD);
	char cell[CELLS_MAX][CELL_MAX], got[CELL_MAX], verbs[CELL_MAX];
	size_t row = 0;

	if (!p)
		return snprintf(why, n, "no permissions table (its header line) in the README"), -1;
	for (p += strlen(RULES_HEAD); row_cells(&p, cell, CELLS_MAX) >= 0; row++) {
		if (row >= access_rule_count)
			return snprintf(why, n, "the README has a rule on %s that access_rules has not", cell[0]), -1;
		const struct access_rule *r = &access_rules[row];
		verbs[0] = '\0';
		for (int v = 0; v < ACCESS_VERBS_MAX && r->verbs[v].verb; v++)
			snprintf(verbs + strlen(verbs), sizeof verbs - strlen(verbs), "%s%s", v ? ", " : "", r->verbs[v].verb);
		const char *want[5] = { r->resource, r->group[0] ? r->group : "core", verbs, scope_words[r->scope],
			when_words[r->when] };
		for (int c = 0; c < 5; c++) {
			plain(cell[c], got, sizeof got);
			/* where and when may say more after the words */
			if (c < 3 ? strcmp(got, want[c]) != 0 : strncmp(got, want[c], strlen(want[c])) != 0)
				return snprintf(why, n, "rule %zu (%s %s): the README says '%s', access_rules '%s'", row + 1,
				    r->resource, verbs, got, want[c]), -1;
		}
	}
	if (row != access_rule_count)
		return snprintf(why, n, "the README lists %zu rules, access_rules %zu", row, access_rule_count), -1;
	return 0;
}

/* text with the first from after the table headed head replaced by to; the caller frees it. */
static char *edited(const char *text, const char *head, const char *from, const char *to)
{
	const char *t = strstr(text, head), *at = t ? strstr(t + strlen(head), from) : NULL;
	size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
	char *out;

	if (!check(at != NULL) || !(out = malloc(n)))
		return NULL;
	snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

static char *readme;

static void t_settings_table(void)
{
	char why[600] = "";

	if (!check(readme != NULL))
		return;
	if (!check(settings_differ(readme, why, sizeof why) == 0))
		fprintf(stderr, "  README.md: %s\n", why);
}

static void t_rules_table(void)
{
	char why[600] = "";

	if (!check(readme != NULL))
		return;
	if (!check(rules_differ(readme, why, sizeof why) == 0))
		fprintf(stderr, "  README.md: %s\n", why);
}

/* must-fail: each checker, run on the README with one fact changed, names what changed. */
static void t_must_fail(void)
{
	static const struct {
		const char *head, *from, *to, *named;
		int (*differ)(const char *, char *, size_t);
	} cases[] = {
		{ SETTINGS_HEAD, "| `15s` |", "| `20s` |", "--poll", settings_differ },
		{ SETTINGS_HEAD, "`NODE_RECOVERY_EVENTS`", "`NODE_RECOVERY_EVENT`", "--events", settings_differ },
		{ SETTINGS_HEAD, "| empty: pruning off |", "| off |", "--prune-after", settings_differ },
		{ SETTINGS_HEAD, "| `--watch=false` |", "| `--wait=false` |", "--watch", settings_differ },
		{ SETTINGS_HEAD, "| `--context NAME` |", "| `--context NAME` | ", "--context", NULL },   /* still agrees */
		{ SETTINGS_HEAD, "| `--tls-server-name NAME` |", "| `--tls-server-name NAME` |\n| `--insecure` | | | |", "--insecure",
		  settings_differ },
		{ RULES_HEAD, "| `delete` | cluster-wide | pruning on |", "| `delete` | cluster-wide | always |", "delete",
		  rules_differ },
		{ RULES_HEAD, "| `default` |", "| `kube-system` |", "kube-system", rules_differ },
		{ RULES_HEAD, "`get`, `list`, `watch`, `patch`", "`get`, `list`, `patch`", "watch", rules_differ },
		{ RULES_HEAD, "| `coordination.k8s.io` |", "| core |", "core", rules_differ },
	};
	char why[600];

	if (!check(readme != NULL))
		return;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *text = edited(readme, cases[i].head, cases[i].from, cases[i].to);
		if (!text)
			continue;
		why[0] = '\0';
		if (!cases[i].differ) {
			/* a space is no fact: the checker must not see one */
			check(settings_differ(text, why, sizeof why) == 0);
		} else if (!check(cases[i].differ(text, why, sizeof why) == -1) || !check(strstr(why, cases[i].named) != NULL)) {
			fprintf(stderr, "  case %zu: '%s'\n", i, why);
		}
		free(text);
	}
	/* a README without the tables says so, rather than agree */
	check(settings_differ("no table here", why, sizeof why) == -1 && strstr(why, "no table"));
	check(rules_differ("no table here", why, sizeof why) == -1 && strstr(why, "no permissions table"));
}

static const struct test tests[] = {
	{ "settings_table", t_settings_table },
	{ "rules_table", t_rules_table },
	{ "must_fail", t_must_fail },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	int rc;

	readme = load(README);
	if (!readme)
		fprintf(stderr, "readme: cannot read %s\n", README);
	rc = run_tests("readme", tests, argc, argv);
	free(readme);
	return rc;
}
