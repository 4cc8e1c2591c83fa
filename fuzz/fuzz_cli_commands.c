/* The subcommands' option parser, on argument vectors cut from the input
 * at NUL bytes (the first byte picks the subcommand): no crash, a known
 * outcome, and on success options within their ranges, only those the
 * subcommand takes, and operands that are arguments it was given. */
#include "cli.h"

#include <assert.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARGS_MAX 16

static const struct cli_command *const commands[] = {
    &cli_commands[CLI_CMD_RUN],    &cli_commands[CLI_CMD_ACQUIRE], &cli_commands[CLI_CMD_RELEASE],
    &cli_commands[CLI_CMD_EXTEND], &cli_commands[CLI_CMD_STATUS],
};

/* Help goes to stdout, thousands of times; usage errors to stderr, which
 * scripts/fuzz does not keep. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return freopen("/dev/null", "w", stdout) ? 0 : 1;
}

static int is_argument(const char *p, char **argv, int argc)
{
    for (int i = 1; i < argc; i++)
        if (p == argv[i])
            return 1;
    return 0;
}

/* Whether the option table gives cmd the option `key`. */
static int takes(const struct cli_command *cmd, int key)
{
    return cli_option_find(cli_command_bit(cmd), key) != NULL;
}

static void check_options(const struct cli_command *cmd, const struct cli_command_opts *o)
{
    const struct cli_wait *w = &o->wait;
    assert(w->ttl_ms > 0);
    assert(w->wait_ms >= 0 || w->wait_ms == DLOCK_WAIT_FOREVER);
    assert(o->busy_code >= 0 && o->busy_code <= 255);
    assert(o->kill_after_ms >= 0 && w->max_hold_ms >= 0);
    assert(!w->max_hold_ms || w->ttl_ms <= w->max_hold_ms);
    if (!takes(cmd, 't'))
        assert(w->ttl_ms == 30000);
    if (!takes(cmd, 'w') && !takes(cmd, 'n'))
        assert(w->wait_ms == DLOCK_WAIT_FOREVER);
    if (!takes(cmd, 'E'))
        assert(o->busy_code == EXIT_BUSY);
    if (!takes(cmd, CLI_KEY_JSON))
        assert(!o->json);
    if (!takes(cmd, CLI_KEY_KILL_AFTER))
        assert(o->kill_after_ms == 5000);
    if (!takes(cmd, CLI_KEY_MAX_HOLD))
        assert(w->max_hold_ms == 0);
}

static void check_operands(const struct cli_command *cmd, const struct cli_command_opts *o,
                           char **argv, int argc)
{
    assert(is_argument(o->name, argv, argc));
    if (cmd->flags & CLI_RUN_OPERANDS) {
        /* A command to exec, or a shell command: exactly one. */
        assert(!o->command != !o->shell_command);
        assert(!o->command || (o->command > argv && o->command < argv + argc && o->command[0]));
        assert(!o->shell_command || is_argument(o->shell_command, argv, argc));
        assert(!o->token);
    } else {
        assert(!o->command && !o->shell_command);
        assert(cmd->n_operands == 2 ? is_argument(o->token, argv, argc) : !o->token);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct cli_command *cmd;
    struct cli_command_opts o;
    char *copy, *argv[ARGS_MAX + 2];
    int argc = 1, rc;
    if (size < 1)
        return 0;
    cmd = commands[data[0] % (sizeof(commands) / sizeof(commands[0]))];
    copy = malloc(size);
    if (!copy)
        return 0;
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = '\0';
    argv[0] = (char *)cmd->name;
    for (char *p = copy; p < copy + size && argc <= ARGS_MAX; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;
    optind = 0; /* getopt starts afresh */
    rc = cli_parse_command(cmd, argc, argv, &o);
    assert(rc == 0 || rc == CLI_HELP || rc == EXIT_USAGE);
    if (rc == 0) {
        check_options(cmd, &o);
        check_operands(cmd, &o, argv, argc);
    }
    free(copy);
    return 0;
}
