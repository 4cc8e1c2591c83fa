/* A subcommand's options and operands, parsed apart from what it does. */
#ifndef DLOCK_CLI_COMMAND_OPTIONS_H
#define DLOCK_CLI_COMMAND_OPTIONS_H

#include "command_table.h"

#include <dlock.h>
#include <stdbool.h>
#include <stdint.h>

/* How to acquire: what cli_acquire() hands the library. */
struct cli_wait {
    int64_t ttl_ms;
    int64_t wait_ms; /* DLOCK_WAIT_FOREVER, 0 or a deadline */
    bool auto_renew;
    int64_t max_hold_ms;
    dlock_lost_fn on_lost;
    void *on_lost_arg;
    unsigned permits; /* --permits: 0 for a mutex */
    bool fair;        /* --fair */
    int64_t lease_ms; /* --lease: 0 for the library's default */
    bool shared;      /* -s, --shared */
};

/* A subcommand's options, defaults filled in. Pointers are into argv. */
struct cli_command_opts {
    struct cli_wait wait; /* ttl_ms, wait_ms, max_hold_ms */
    int busy_code;
    int64_t kill_after_ms;
    bool json;
    long long permits;        /* --permits as given; wait.permits when it is in range */
    bool watch;               /* status --watch */
    const char *stats_json;   /* run --stats-json FILE */
    const char *metrics_file; /* run --metrics-file FILE */
    int64_t since_ms;         /* audit --since; 0: all */
    const char *svg;          /* audit --svg FILE */
    const char *name;         /* NULL when an optional operand was left out */
    const char *token;        /* release, extend; check's FENCE */
    char **command;           /* run: the command's argv, or NULL with shell_command */
    const char *shell_command; /* run -c */
    int replicas;              /* --replicas: WAIT for this many; 0: no WAIT */
    int64_t restart_delay_ms;  /* --restart-delay; 0: off */
};

/* Parses the arguments of subcommand `cmd` (argv[0] is its name). Returns
 * 0, CLI_HELP after printing the help, or EXIT_USAGE after saying why. */
int cli_parse_command(const struct cli_command *cmd, int argc, char **argv,
                      struct cli_command_opts *o);

#endif
