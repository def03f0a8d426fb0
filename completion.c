/*
 * The shell completion scripts, written from settings_rows: nothing here names a flag, so the
 * scripts never drift from what the binary takes. Writes to the caller's stream only; reads no
 * environment and allocates nothing.
 */
#include <string.h>
#include "completion.h"
#include "settings.h"

const char *const completion_commands[] = {
	"run", "once", "plan", "manifests", "fence", "version", "completion", "help", NULL
};

/* The flags that are not settings: help and version. */
static const char *const extra_flags[][2] = {
	{ "--help", "print the commands and options" },
	{ "--version", "print the version" },
};

/* The few values a setting takes, as words ("true false"), or NULL: anything. */
static const char *choices(const struct settings_row *r)
{
	switch (r->kind) {
	case SETTINGS_BOOL:
	case SETTINGS_BOOL01:
		return "true false";
	case SETTINGS_DRY_RUN:
		return "client server none";
	case SETTINGS_OUTPUT:
		return "table json";
	case SETTINGS_LOG_FORMAT:
		return "text json";
	case SETTINGS_WORDS:
		return r->what;
	default:
		return NULL;
	}
}

/* Whether the setting's value names a file (its help says FILE). */
static int takes_file(const struct settings_row *r)
{
	return r->kind == SETTINGS_TEXT && strstr(r->arg, "FILE") != NULL;
}

static void words(FILE *out, const char *const *w)
{
	for (; *w; w++)
		fprintf(out, "%s%s", *w, w[1] ? " " : "");
}

static void bash(FILE *out)
{
	fputs("# bash completion for noderecover and kubectl-noderecover: written by `noderecover completion bash`.\n"
	    "# Load it with: source <(noderecover completion bash)\n"
	    "_noderecover() {\n"
	    "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev= eq=0\n"
	    "\t[ \"$COMP_CWORD\" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	    "\t# bash splits --flag=value at '=': the flag is then two words back\n"
	    "\tif [ \"$cur\" = \"=\" ]; then\n\t\teq=1 cur=\n"
	    "\telif [ \"$prev\" = \"=\" ] && [ \"$COMP_CWORD\" -gt 1 ]; then\n\t\teq=1 prev=${COMP_WORDS[COMP_CWORD-2]}\n\tfi\n"
	    "\tCOMPREPLY=()\n"
	    "\tcase $prev in\n", out);
	for (size_t i = 0; i < settings_row_count; i++) {
		const struct settings_row *r = &settings_rows[i];
		const char *c = choices(r);
		if (c && r->alone)
			fprintf(out, "\t%s) if [ $eq = 1 ]; then COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return; fi ;;\n",
			    r->flag, c);
		else if (c)
			fprintf(out, "\t%s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", r->flag, c);
		else if (takes_file(r))
			fprintf(out, "\t%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", r->flag);
		else if (!r->alone)
			fprintf(out, "\t%s) return ;;   # a value to type\n", r->flag);
	}
	fputs("\tcompletion) if [ \"$COMP_CWORD\" -eq 2 ]; then COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\")); return; fi ;;\n"
	    "\tesac\n"
	    "\tif [ \"$COMP_CWORD\" -eq 1 ] && [ \"${cur#-}\" = \"$cur\" ]; then\n"
	    "\t\tCOMPREPLY=($(compgen -W \"", out);
	words(out, completion_commands);
	fputs("\" -- \"$cur\"))\n\t\treturn\n\tfi\n\tCOMPREPLY=($(compgen -W \"", out);
	for (size_t i = 0; i < settings_row_count; i++)
		fprintf(out, "%s ", settings_rows[i].flag);
	fprintf(out, "%s %s\" -- \"$cur\"))\n}\n", extra_flags[0][0], extra_flags[1][0]);
	fputs("complete -F _noderecover noderecover kubectl-noderecover\n", out);
}

/* A description for zsh's _arguments, inside '[...]' in a single-quoted word: no quote, no
 * bracket, no colon, no backslash. */
static void zsh_words(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(strchr("'[]:\\`$", *s) ? ' ' : *s, out);
}

static void zsh(FILE *out)
{
	fputs("#compdef noderecover kubectl-noderecover\n"
	    "# zsh completion for noderecover and kubectl-noderecover: written by `noderecover completion zsh`.\n"
	    "# Load it with: source <(noderecover completion zsh), or save it as _noderecover in $fpath.\n"
	    "_noderecover() {\n"
	    "\tif (( CURRENT == 2 )); then\n\t\tcompadd -- ", out);
	words(out, completion_commands);
	fputs("\n\t\treturn\n\tfi\n"
	    "\tif [[ ${words[2]} == completion ]] && (( CURRENT == 3 )); then\n\t\tcompadd -- bash zsh\n\t\treturn\n\tfi\n"
	    "\t_arguments -S \\\n", out);
	for (size_t i = 0; i < settings_row_count; i++) {
		const struct settings_row *r = &settings_rows[i];
		const char *c = choices(r);
		fprintf(out, "\t\t'%s%s[", r->flag, r->alone ? "=-" : "");
		zsh_words(out, r->meaning);
		if (r->alone)
			fprintf(out, "]::value:(%s)' \\\n", c ? c : "");
		else if (c)
			fprintf(out, "]:value:(%s)' \\\n", c);
		else if (takes_file(r))
			fputs("]:file:_files' \\\n", out);
		else
			fprintf(out, "]:%s: ' \\\n", r->arg[0] == ' ' ? r->arg + 1 : "value");
	}
	for (size_t i = 0; i < sizeof extra_flags / sizeof extra_flags[0]; i++)
		fprintf(out, "\t\t'%s[%s]' \\\n", extra_flags[i][0], extra_flags[i][1]);
	fputs("\t\t'*:: :'\n}\n"
	    "if [[ $funcstack[1] == _noderecover ]]; then\n\t_noderecover \"$@\"\nelse\n"
	    "\tcompdef _noderecover noderecover kubectl-noderecover\nfi\n", out);
}

int completion_write(FILE *out, const char *shell)
{
	if (strcmp(shell, "bash") == 0)
		bash(out);
	else if (strcmp(shell, "zsh") == 0)
		zsh(out);
	else
		return -1;
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
