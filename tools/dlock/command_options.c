/* The subcommands' options and operands, parsed apart from what the
 * subcommands do: one parser for all, each taking the options the option
 * table gives it. */
#include "command_options.h"

#include "exit_codes.h"
#include "global_options.h" /* CLI_HELP */
#include "help.h"
#include "messages.h"
#include "option_table.h"
#include "values.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_TTL_MS 30000
#define DEFAULT_KILL_AFTER_MS 5000

/* Takes the value of option `opt`; 0, or -1 if it is not valid. */
static int take_value(int opt, const char *value, struct cli_command_opts *o)
{
    switch (opt) {
    case 't':
        return cli_parse_duration_ms(value, &o->wait.ttl_ms);
    case 'w':
        return cli_parse_duration_ms(value, &o->wait.wait_ms);
    case 'n':
        o->wait.wait_ms = 0;
        return 0;
    case 'E':
        return cli_parse_exit_code(value, &o->busy_code);
    case CLI_KEY_KILL_AFTER:
        return cli_parse_duration_ms(value, &o->kill_after_ms);
    case CLI_KEY_MAX_HOLD:
        return cli_parse_duration_ms(value, &o->wait.max_hold_ms);
    case CLI_KEY_SINCE:
        return cli_parse_duration_ms(value, &o->since_ms);
    case CLI_KEY_PERMITS:
        if (cli_parse_permits(value, &o->permits) < 0)
            return -1;
        /* out of range: check_range() refuses it */
        o->wait.permits = o->permits > 0 && o->permits <= DLOCK_PERMITS_MAX ? (unsigned)o->permits : 0;
        return 0;
    case CLI_KEY_WATCH:
        o->watch = true;
        return 0;
    case CLI_KEY_STATS_JSON:
        o->stats_json = value;
        return 0;
    case CLI_KEY_METRICS_FILE:
        o->metrics_file = value;
        return 0;
    case CLI_KEY_SVG:
        o->svg = value;
        return 0;
    case CLI_KEY_FAIR:
        o->wait.fair = true;
        return 0;
    case CLI_KEY_LEASE:
        return cli_parse_duration_ms(value, &o->wait.lease_ms);
    case 's':
        o->wait.shared = true;
        return 0;
    case CLI_KEY_REPLICAS:
        return cli_parse_replicas(value, &o->replicas);
    case CLI_KEY_RESTART_DELAY:
        return cli_parse_duration_ms(value, &o->restart_delay_ms);
    default: /* CLI_KEY_JSON */
        o->json = true;
        return 0;
    }
}

/* For a global option given after the command, says where it goes and
 * returns EXIT_USAGE; 0 for any other option (-h and --help are every
 * command's own). Only the option's name is repeated: its value may be a
 * URL with a password. */
static int global_option_hint(const char *usage, const char *command, const char *option)
{
    const struct cli_option *g = cli_option_typed(CLI_GLOBAL, option);
    char spelling[40];
    if (!g || g->key == 'h')
        return 0;
    if (option[1] == '-')
        snprintf(spelling, sizeof(spelling), "--%s", g->name);
    else
        snprintf(spelling, sizeof(spelling), "-%c", g->key);
    return cli_usage_error(usage, "%.*s is a global option: put it before the command (dlock %s%s%s %s ...)",
                           (int)strcspn(option, "="), option, spelling, g->value ? " " : "",
                           g->value ? g->value : "", command);
}

static int unknown_option(const char *usage, const char *command, const char *option)
{
    int rc = global_option_hint(usage, command, option);
    return rc ? rc : cli_usage_error(usage, "unknown option '%s'", option);
}

/* run reads no options after NAME: what follows is the command's. */
static int misplaced_after_name(const char *usage, const char *option)
{
    int rc = global_option_hint(usage, "run", option);
    return rc ? rc : cli_usage_error(usage, "option '%s' after NAME: options go before NAME "
                                     "(dlock run [options] NAME -- COMMAND)", option);
}

/* The TTL's bounds are the library's; --max-hold caps the TTL, so it has the
 * same floor. (The others are bounded by cli_parse_duration_ms.) Returns 0,
 * or EXIT_USAGE after saying which bound `value` is past. */
static int check_range(const char *usage, int opt, const char *value,
                       const struct cli_command_opts *o)
{
    if (opt == 't' && (o->wait.ttl_ms < DLOCK_TTL_MIN_MS || o->wait.ttl_ms > DLOCK_TTL_MAX_MS))
        return cli_usage_error(usage, "--ttl must be from %lld ms to %lld ms (24.8 days), not '%s'",
                               (long long)DLOCK_TTL_MIN_MS, (long long)DLOCK_TTL_MAX_MS, value);
    if (opt == CLI_KEY_MAX_HOLD && o->wait.max_hold_ms < DLOCK_TTL_MIN_MS)
        return cli_usage_error(usage, "--max-hold must be at least %lld ms (the shortest TTL), not '%s'",
                               (long long)DLOCK_TTL_MIN_MS, value);
    if (opt == CLI_KEY_LEASE && (o->wait.lease_ms < DLOCK_LEASE_MIN_MS ||
                                 o->wait.lease_ms > DLOCK_LEASE_MAX_MS))
        return cli_usage_error(usage, "--lease must be from %d ms to %d ms, not '%s'",
                               DLOCK_LEASE_MIN_MS, DLOCK_LEASE_MAX_MS, value);
    if (opt == CLI_KEY_PERMITS && (o->permits < 1 || o->permits > DLOCK_PERMITS_MAX))
        return cli_usage_error(usage, "--permits must be from 1 to %d, not '%s'",
                               DLOCK_PERMITS_MAX, value);
    if (opt == CLI_KEY_SINCE && o->since_ms <= 0)
        return cli_usage_error(usage, "--since needs a duration, not '%s'", value);
    return 0;
}

/* run: NAME -- COMMAND [ARG...] or NAME -c 'COMMAND'. */
static int take_run_operands(const char *usage, const struct cli_command *cmd, int argc,
                             char **argv, struct cli_command_opts *o)
{
    int at = optind;
    if (at >= argc)
        return cli_usage_error(usage, "missing NAME");
    o->name = argv[at++];
    if (at + 1 < argc && strcmp(argv[at], "--") == 0)
        o->command = argv + at + 1;
    else if (at + 2 == argc && strcmp(argv[at], "-c") == 0)
        o->shell_command = argv[at + 1];
    else if (at < argc && argv[at][0] == '-' && strcmp(argv[at], "--") != 0 &&
             strcmp(argv[at], "-c") != 0)
        return misplaced_after_name(usage, argv[at]);
    else
        return cli_usage_error(usage, "expected %s or %s", cmd->operands, cmd->operands_too);
    if (o->wait.max_hold_ms && o->wait.max_hold_ms < o->wait.ttl_ms)
        o->wait.ttl_ms = o->wait.max_hold_ms;
    return 0;
}

/* One option getopt gave: 0, CLI_HELP after the help, or EXIT_USAGE. */
static int take_option(const struct cli_command *cmd, const char *usage, int opt,
                       const struct cli_getopt *g, char **argv, struct cli_command_opts *o)
{
    if (opt == 'h') {
        cli_print_command_help(cmd, stdout);
        return CLI_HELP;
    }
    if (opt == ':' || opt == '?') {
        char option[72], why[256];
        const struct cli_option *later =
            opt == '?' && optopt > 0 ? cli_option_find(cli_command_bit(cmd), optopt) : NULL;
        if (opt == '?' && cli_long_option_trouble(argv, g->longopts, why, sizeof(why)))
            return cli_usage_error(usage, "%s", why);
        if (later && (later->flags & CLI_AFTER_NAME))
            return cli_usage_error(usage, "option '-%c' goes after NAME (dlock %s [options] NAME "
                                   "-%c %s)", optopt, cmd->name, optopt, later->value);
        cli_offending_option(argv, g->longopts, option, sizeof(option));
        return opt == ':' ? cli_usage_error(usage, "option '%s' needs a value", option)
                          : unknown_option(usage, cmd->name, option);
    }
    if (take_value(opt, optarg, o) < 0)
        return cli_usage_error(usage, "bad value '%s' for --%s", optarg,
                               cli_option_find(cli_command_bit(cmd), opt)->name);
    return check_range(usage, opt, optarg, o);
}

int cli_parse_command(const struct cli_command *cmd, int argc, char **argv,
                      struct cli_command_opts *o)
{
    struct cli_getopt g;
    char usage[16];
    int opt;
    memset(o, 0, sizeof(*o));
    o->wait = (struct cli_wait){.ttl_ms = DEFAULT_TTL_MS, .wait_ms = DLOCK_WAIT_FOREVER};
    o->busy_code = EXIT_BUSY;
    o->kill_after_ms = DEFAULT_KILL_AFTER_MS;
    /* run stops at NAME: what follows is the command's */
    cli_getopt_for(cli_command_bit(cmd), cmd->flags & CLI_RUN_OPERANDS, &g);
    snprintf(usage, sizeof(usage), "%s ", cmd->name);
    opterr = 0;
    while ((opt = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        int rc = take_option(cmd, usage, opt, &g, argv, o);
        if (rc)
            return rc;
    }
    /* The library refuses it too; said here in the command's words. */
    if (o->wait.lease_ms && !o->wait.fair && o->wait.permits <= 1)
        return cli_usage_error(usage,
                               "--lease is a queued waiter's presence lease: it needs --fair or "
                               "--permits N");
    if (cmd->flags & CLI_RUN_OPERANDS)
        return take_run_operands(usage, cmd, argc, argv, o);
    if (argc - optind != cmd->n_operands &&
        !((cmd->flags & CLI_NAME_OPTIONAL) && argc == optind))
        return cli_usage_error(usage, "expected %s", cmd->operands);
    o->name = argv[optind];
    o->token = cmd->n_operands == 2 ? argv[optind + 1] : NULL;
    return 0;
}
