/* Messages on stderr, prefixed "dlock: ", one write each. */
#ifndef DLOCK_CLI_MESSAGES_H
#define DLOCK_CLI_MESSAGES_H

struct cli;

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Unless -q. */
void cli_info(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Only with -v. */
void cli_debug(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints a usage error for `command` ("run ", or NULL before a command)
 * and returns EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
