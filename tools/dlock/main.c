/* dlock: run commands under a lock shared through Redis.
 *
 * main() has the global options parsed and hands over to a subcommand.
 * Each file calls only files on the lines below its own (or beside it, for
 * the subcommands), never above (docs/architecture.md):
 *
 *   main.c                     dispatch to a subcommand
 *   cmd_*.c                    the subcommands; stats_json.c, metrics_file.c
 *                              and audit_svg.c write what they report
 *   acquire.c                  the waiting acquire and its status line
 *   holder.c  client_open.c    who holds a lock, in words; a client on the
 *                              servers the options chose
 *   failure.c                  a library error's message and exit code
 *   json.c  times.c            JSON strings; the clock and UTC times
 *   global_options.c           the options before the command, and a
 *   command_options.c          command's options and operands
 *   help.c                     --help and COMMAND --help, from the tables
 *   option_table.c             the one table of options, getopt's arrays
 *   command_table.c            built from it; the commands
 *   values.c  messages.c       option values; messages on stderr
 *
 * The bash completion is generated from the same tables at build time
 * (gen_completion.c, completion.bash.in). */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

typedef int command_fn(struct cli *cli, int argc, char **argv);

static command_fn *const commands[CLI_CMD_COUNT] = {
    [CLI_CMD_RUN] = cmd_run,         [CLI_CMD_ACQUIRE] = cmd_acquire,
    [CLI_CMD_RELEASE] = cmd_release, [CLI_CMD_EXTEND] = cmd_extend,
    [CLI_CMD_STATUS] = cmd_status,   [CLI_CMD_LIST] = cmd_list,
    [CLI_CMD_DOCTOR] = cmd_doctor,   [CLI_CMD_CHECK] = cmd_check,
    [CLI_CMD_GUARD] = cmd_guard,     [CLI_CMD_AUDIT] = cmd_audit,
};

/* "run, acquire, ..., audit": for the usage error without a command. */
static void command_names(char *out, size_t len)
{
    size_t used = 0;
    for (size_t i = 0; i < CLI_CMD_COUNT && used < len; i++) {
        int n = snprintf(out + used, len - used, "%s%s", i ? ", " : "", cli_commands[i].name);
        used += n > 0 ? (size_t)n : 0;
    }
}

static int run_command(struct cli *cli, int argc, char **argv)
{
    const struct cli_command *cmd = cli_command_named(argv[optind]);
    int sub_argc = argc - optind;
    if (!cmd)
        return cli_usage_error(NULL, "unknown command '%s'", argv[optind]);
    optind = 0; /* the subcommand parses its own options, from scratch */
    return commands[cmd - cli_commands](cli, sub_argc, argv + (argc - sub_argc));
}

int main(int argc, char **argv)
{
    struct cli cli = {0};
    char names[160];
    int rc = cli_parse_global(&cli, argc, argv);

    if (rc == CLI_HELP) {
        cli_print_help(stdout);
        rc = EXIT_DONE;
    } else if (rc == CLI_VERSION) {
        printf("dlock %s (libdlock %s)\n", DLOCK_VERSION_STRING, dlock_version());
        rc = EXIT_DONE;
    } else if (rc == 0 && optind >= argc) {
        command_names(names, sizeof(names));
        rc = cli_usage_error(NULL, "missing COMMAND (%s)", names);
    } else if (rc == 0) {
        rc = run_command(&cli, argc, argv);
    }
    cli_free_urls(&cli);
    return rc;
}
