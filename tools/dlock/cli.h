/* What the subcommands of the dlock command share: every header of the
 * layers below them (main.c lists them), and the subcommands themselves.
 * Only the public dlock.h is used: the command knows nothing of sockets. */
#ifndef DLOCK_CLI_H
#define DLOCK_CLI_H

#include "acquire.h"
#include "client_open.h"
#include "command_options.h"
#include "command_table.h"
#include "exit_codes.h"
#include "failure.h"
#include "global_options.h"
#include "help.h"
#include "holder.h"
#include "json.h"
#include "messages.h"
#include "option_table.h"
#include "times.h"
#include "values.h"

#include <dlock.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

/* Writes the holds of `audit` as an SVG timeline to `path` (audit_svg.c).
 * Returns 0, or -1 after saying why. */
int cli_write_audit_svg(const dlock_audit *audit, const char *name, const char *path);

/* The subcommands (cmd_*.c): argv[0] is the command's name. */
int cmd_run(struct cli *cli, int argc, char **argv);
int cmd_acquire(struct cli *cli, int argc, char **argv);
int cmd_release(struct cli *cli, int argc, char **argv);
int cmd_extend(struct cli *cli, int argc, char **argv);
int cmd_status(struct cli *cli, int argc, char **argv);
int cmd_list(struct cli *cli, int argc, char **argv);
int cmd_doctor(struct cli *cli, int argc, char **argv);
int cmd_check(struct cli *cli, int argc, char **argv);
int cmd_guard(struct cli *cli, int argc, char **argv);
int cmd_audit(struct cli *cli, int argc, char **argv);

/* A status as status prints it: "NAME: held by ..., fence N" on a line, or
 * with json the fields of its JSON object ("name", "held", "ttl_ms",
 * "fence", "holder"), without the braces. */
void cli_print_status(const char *name, const dlock_status *st, bool json);

/* Writes the client's counters (dlock_client_stats) to `path` as one JSON
 * object. Returns 0, or -1 after saying why. */
int cli_write_stats(dlock_client *client, const char *path);

/* Replaces the file at `path` with the client's counters as Prometheus text
 * (dlock_client_metrics()), atomically. Returns 0, or -1 after saying why. */
int cli_write_metrics(dlock_client *client, const char *path);

#endif
