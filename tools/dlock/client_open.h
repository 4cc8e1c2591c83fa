/* Clients on the servers the global options chose. */
#ifndef DLOCK_CLI_CLIENT_OPEN_H
#define DLOCK_CLI_CLIENT_OPEN_H

#include <dlock.h>

struct cli;
struct cli_command_opts;

/* Opens a client on the servers chosen by the global options. Returns 0 or
 * an exit code (after printing why). */
int cli_open_client(const struct cli *cli, dlock_client **out);

/* cli_open_client() with the command's --replicas and --restart-delay. */
int cli_open_client_for(const struct cli *cli, const struct cli_command_opts *o,
                        dlock_client **out);

/* The same, for looking at the servers (doctor): it opens two of them, or
 * one given twice, which cli_open_client() refuses; `o` as for
 * cli_open_client_for(). */
int cli_open_inspector(const struct cli *cli, const struct cli_command_opts *o,
                       dlock_client **out);

/* A second client like cli_open_client()'s, opened without a word: for
 * asking while the first one waits. Returns 0 or a DLOCK_E... code. */
int cli_open_quietly(const struct cli *cli, dlock_client **out);

#endif
