/*
 * `noderecover completion bash|zsh`: the shell completion scripts, written from settings_rows,
 * so a flag added to the table is completed without anyone touching this file.
 */
#ifndef COMPLETION_H
#define COMPLETION_H

#include <stdio.h>

/* The commands, in the order help names them: the first word completion offers. */
extern const char *const completion_commands[];

/*
 * Writes the completion script for shell ("bash" or "zsh") to out: the commands, every flag of
 * settings_rows with --help and --version, the choices of a flag that has a few (true|false,
 * table|json, text|json, client|server|none), and file names after a FILE flag. For both
 * `noderecover` and `kubectl-noderecover`. Returns 0, or -1 for another shell or a failed write.
 */
int completion_write(FILE *out, const char *shell);

#endif
