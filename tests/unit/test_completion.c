/*
 * The completion scripts come from the settings table: every flag the binary takes is in both,
 * with --help and --version, and the commands; the choices of a flag are offered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "../../completion.h"
#include "../../settings.h"

/* The script for shell, in a buffer the caller frees. */
static char *script(const char *shell)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	if (!f)
		return NULL;
	if (completion_write(f, shell) < 0) {
		fclose(f);
		free(text);
		return NULL;
	}
	fclose(f);
	return text;
}

/* Whether text has flag as a whole word (not --poll inside --poll-x). */
static int has_flag(const char *text, const char *flag)
{
	size_t n = strlen(flag);

	for (const char *p = text; (p = strstr(p, flag)) != NULL; p += n)
		if (!(p[n] >= 'a' && p[n] <= 'z') && p[n] != '-')
			return 1;
	return 0;
}

static void every_flag(const char *shell)
{
	char *t = script(shell);

	if (!check(t != NULL))
		return;
	for (size_t i = 0; i < settings_row_count; i++)
		if (!check(has_flag(t, settings_rows[i].flag)))
			fprintf(stderr, "  %s: %s is not completed\n", shell, settings_rows[i].flag);
	check(has_flag(t, "--help") && has_flag(t, "--version"));
	for (const char *const *c = completion_commands; *c; c++)
		check(strstr(t, *c) != NULL);
	/* the choices of a flag that has a few */
	check(strstr(t, "text json") != NULL && strstr(t, "table json") != NULL && strstr(t, "client server none") != NULL);
	check(strstr(t, "kubectl-noderecover") != NULL);
	free(t);
}

static void t_bash(void)
{
	every_flag("bash");
}

static void t_zsh(void)
{
	every_flag("zsh");
}

static void t_other_shell(void)
{
	check(script("fish") == NULL);
}

static const struct test tests[] = {
	{ "bash", t_bash },
	{ "zsh", t_zsh },
	{ "other_shell", t_other_shell },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("completion", tests, argc, argv);
}
