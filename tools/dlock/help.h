/* `dlock --help` and `dlock COMMAND --help`, printed from the command and
 * option tables. */
#ifndef DLOCK_CLI_HELP_H
#define DLOCK_CLI_HELP_H

#include "command_table.h"

#include <stdio.h>

/* The global help: usage, the commands, the global options, the exit codes. */
void cli_print_help(FILE *f);

/* A command's help: its usage line, what it does, its options. */
void cli_print_command_help(const struct cli_command *cmd, FILE *f);

#endif
