/* The subcommands' options and operands, parsed apart from what the
 * subcommands do: one parser, a table of what each accepts. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TTL_MS 30000
#define DEFAULT_KILL_AFTER_MS 5000

const struct cli_command cli_command_run = {
    "run",
    "Usage: dlock run [options] NAME -- COMMAND [ARG...]\n"
    "       dlock run [options] NAME -c 'shell command'\n"
    "Runs COMMAND while holding the lock NAME, renewing it, and exits with the\n"
    "command's status. If the lock is lost, the command's process group gets\n"
    "SIGTERM (then SIGKILL) and dlock exits 70.\n"
    "  -t, --ttl DUR          lock time to live, 10ms to 24.8 days (default 30s);\n"
    "                         renewed every TTL/3\n"
    "  -w, --wait DUR         wait at most this long for a busy lock, and through\n"
    "                         failing servers (default: forever)\n"
    "  -n, --nowait           do not wait: one try (same as -w 0)\n"
    "  -E, --conflict-exit-code CODE   exit code when busy (default 75)\n"
    "      --kill-after DUR   SIGKILL this long after SIGTERM on loss (default 5s)\n"
    "      --max-hold DUR     hold the lock at most this long (10ms or more), then stop\n"
    "                         the command\n"
    "  -c CMD                 run CMD with /bin/sh -c\n"
    "      --permits N        take one of N permits of the semaphore NAME (1 to 1024;\n"
    "                         1: the lock alone, the default; one server only)\n"
    "      --fair             wait in a queue: first come, first served (one server)\n"
    "      --lease DUR        with --fair: how long a silent waiter keeps its place\n"
    "                         (30ms to 1h, default 2s)\n"
    "  -s, --shared           hold the lock shared: with other shared holders, never\n"
    "                         with an exclusive one (a waiting one keeps new ones out)\n"
    "      --replicas K       a grant or extend counts only once K replicas\n"
    "                         acknowledged it (WAIT)\n"
    "      --restart-delay DUR  a server that lost its data less than DUR ago grants\n"
    "                         nothing (set it to the longest TTL in use)\n"
    "      --stats-json FILE  on exit, write the client's counters to FILE as JSON\n"
    "      --metrics-file FILE  on exit, replace FILE with the client's counters as\n"
    "                         Prometheus text (node_exporter's textfile collector)\n"
    "The command sees DLOCK_NAME, DLOCK_TOKEN, DLOCK_FENCE and DLOCK_SLOT (the\n"
    "permit's slot, 0 to N-1; the fence grows per slot); DLOCK_PASSWORD and\n"
    "URLs with credentials are removed from its environment.\n",
    CLI_OPT_TTL | CLI_OPT_WAIT | CLI_OPT_BUSY_CODE | CLI_OPT_RUN | CLI_OPT_PERMITS |
        CLI_OPT_FAIR | CLI_OPT_SHARED | CLI_OPT_STATS | CLI_OPT_REPLICAS | CLI_OPT_RESTART,
    "NAME -- COMMAND [ARG...] or NAME -c 'COMMAND'",
    1,
};

const struct cli_command cli_command_acquire = {
    "acquire",
    "Usage: dlock acquire [-t TTL] [-w WAIT | -n] [-E CODE] [--json] [--permits N]\n"
    "                     [--fair [--lease DUR]] [-s] [--replicas K]\n"
    "                     [--restart-delay DUR] NAME\n"
    "Takes the lock and prints its token, for a later 'dlock release NAME TOKEN'.\n"
    "The lock is not renewed: extend it, or it expires after TTL.\n"
    "  -t, --ttl DUR     how long the lock lives, 10ms to 24.8 days (default 30s)\n"
    "  -w, --wait DUR    wait at most this long for a busy lock, and through failing\n"
    "                    servers (default: forever)\n"
    "  -n, --nowait      do not wait: one try (same as -w 0)\n"
    "  -E, --conflict-exit-code CODE   exit code when busy (default 75)\n"
    "      --json        print name, token, fence and validity_ms as JSON\n"
    "      --permits N   take one of N permits of the semaphore NAME (1 to 1024;\n"
    "                    1: the lock alone, the default; one server only)\n"
    "      --fair        wait in a queue: first come, first served (one server)\n"
    "      --lease DUR   with --fair: how long a silent waiter keeps its place\n"
    "                    (30ms to 1h, default 2s)\n"
    "  -s, --shared      hold the lock shared: with other shared holders, never\n"
    "                    with an exclusive one (a waiting one keeps new ones out)\n"
    "      --replicas K  the grant counts only once K replicas acknowledged it\n"
    "      --restart-delay DUR  a server that lost its data less than DUR ago grants\n"
    "                    nothing (set it to the longest TTL in use)\n",
    CLI_OPT_TTL | CLI_OPT_WAIT | CLI_OPT_BUSY_CODE | CLI_OPT_JSON | CLI_OPT_PERMITS |
        CLI_OPT_FAIR | CLI_OPT_SHARED | CLI_OPT_REPLICAS | CLI_OPT_RESTART,
    "NAME",
    1,
};

const struct cli_command cli_command_release = {
    "release",
    "Usage: dlock release NAME TOKEN\n"
    "Releases the lock if TOKEN still owns it. Exit 1 if it does not.\n",
    0,
    "NAME TOKEN",
    2,
};

const struct cli_command cli_command_extend = {
    "extend",
    "Usage: dlock extend [-t TTL] [--replicas K] NAME TOKEN\n"
    "Sets the lock's time to live to TTL (default 30s; 10ms to 24.8 days) if TOKEN\n"
    "still owns it.\n"
    "Exit 1 if it does not.\n"
    "      --replicas K  the extend counts only once K replicas acknowledged it\n",
    CLI_OPT_TTL | CLI_OPT_REPLICAS,
    "NAME TOKEN",
    2,
};

const struct cli_command cli_command_status = {
    "status",
    "Usage: dlock status [--json] [--watch] [--restart-delay DUR] NAME\n"
    "Says whether the lock is held, by which host and process (when a dlock\n"
    "client holds it), how long it still lives, and the last fencing token.\n"
    "A semaphore: how many of its permits are held, and one line per holder.\n"
    "Exit 0 when held, 1 when free.\n"
    "      --json        print it as a JSON object\n"
    "      --watch       print a line (with --json, an object) at once and at every\n"
    "                    change of holder, until interrupted: a release is seen\n"
    "                    when it is published, an acquisition or an expiry within\n"
    "                    the check period (250 ms)\n"
    "      --restart-delay DUR  also what is left of each server's restart delay\n",
    CLI_OPT_JSON | CLI_OPT_WATCH | CLI_OPT_RESTART,
    "NAME",
    1,
};

const struct cli_command cli_command_list = {
    "list",
    "Usage: dlock list [--json] [PATTERN]\n"
    "Lists the locks held now whose name matches the glob PATTERN (default: all):\n"
    "holder, time to live, fence. Found with SCAN over the owner records, never\n"
    "KEYS, so a large database is walked in small steps that do not block it.\n"
    "      --json        print a JSON array of objects, one per lock\n",
    CLI_OPT_JSON | CLI_OPT_NAME_OPTIONAL,
    "[PATTERN]",
    1,
};

const struct cli_command cli_command_doctor = {
    "doctor",
    "Usage: dlock doctor [-t TTL] [--json] [--replicas K] [NAME]\n"
    "Checks whether the servers can keep a lock: eviction, persistence, replicas,\n"
    "permissions, clocks, round trips, versions. Prints each finding with its ID,\n"
    "severity, evidence and fix. The commands dlock needs are tried on a scratch\n"
    "lock (NAME-dlock-doctor-..., for a user allowed only NAME's keys), which is\n"
    "removed; nothing else is written.\n"
    "  -t, --ttl DUR     the TTL your locks use, to judge round trips (default 30s)\n"
    "      --json        print {\"findings\":[...]} as JSON\n"
    "      --replicas K  the --replicas your locks use: replicas beyond K are\n"
    "                    reported as asynchronous (ASYNC_REPLICAS)\n"
    "Exit 0 without a finding of severity error, 78 with one, 69 when a server\n"
    "could not be reached.\n",
    CLI_OPT_TTL | CLI_OPT_JSON | CLI_OPT_NAME_OPTIONAL | CLI_OPT_REPLICAS,
    "[NAME]",
    1,
};

const struct cli_command cli_command_check = {
    "check",
    "Usage: dlock check NAME FENCE\n"
    "Says whether FENCE (a holder's $DLOCK_FENCE) is still the newest fencing token\n"
    "issued for NAME and NAME is held: exit 0 if so, 1 if not (the lock is free, or\n"
    "another holder took it since). With several servers, as a majority sees it.\n"
    "A check followed by a write is not atomic: the lock can be lost between the\n"
    "two. The check makes a stale holder fail early; it does not guard the write.\n"
    "A guard at the resource does (dlock guard, docs/fencing.md).\n",
    0,
    "NAME FENCE",
    2,
};

const struct cli_command cli_command_guard = {
    "guard",
    "Usage: dlock guard load-redis\n"
    "Loads the Redis guard into every server given (on a Redis Cluster, into each\n"
    "master), replacing the version loaded before: the Functions library\n"
    "dlock_fence (Redis 7), whose writes refuse an older fencing token:\n"
    "  FCALL dlock_fenced_set    2 KEY FENCEKEY VALUE FENCE\n"
    "  FCALL dlock_fenced_hset   2 KEY FENCEKEY FIELD VALUE FENCE\n"
    "  FCALL dlock_fenced_incrby 2 KEY FENCEKEY INCREMENT FENCE\n"
    "The same library is /usr/share/dlock/dlock_fence.lua, the PostgreSQL guard\n"
    "/usr/share/dlock/dlock_fence.sql (docs/fencing.md).\n",
    0,
    "load-redis",
    1,
};

enum { OPT_KILL_AFTER = 256, OPT_MAX_HOLD, OPT_JSON, OPT_PERMITS, OPT_WATCH, OPT_STATS_JSON, OPT_METRICS_FILE, OPT_FAIR,
       OPT_LEASE, OPT_REPLICAS, OPT_RESTART_DELAY };

static const struct option long_options[] = {
    {"ttl", required_argument, NULL, 't'},
    {"wait", required_argument, NULL, 'w'},
    {"nowait", no_argument, NULL, 'n'},
    {"conflict-exit-code", required_argument, NULL, 'E'},
    {"kill-after", required_argument, NULL, OPT_KILL_AFTER},
    {"max-hold", required_argument, NULL, OPT_MAX_HOLD},
    {"json", no_argument, NULL, OPT_JSON},
    {"permits", required_argument, NULL, OPT_PERMITS},
    {"watch", no_argument, NULL, OPT_WATCH},
    {"stats-json", required_argument, NULL, OPT_STATS_JSON},
    {"metrics-file", required_argument, NULL, OPT_METRICS_FILE},
    {"fair", no_argument, NULL, OPT_FAIR},
    {"lease", required_argument, NULL, OPT_LEASE},
    {"shared", no_argument, NULL, 's'},
    {"replicas", required_argument, NULL, OPT_REPLICAS},
    {"restart-delay", required_argument, NULL, OPT_RESTART_DELAY},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The CLI_OPT_* an option belongs to. */
static unsigned group_of(int opt)
{
    switch (opt) {
    case 't':
        return CLI_OPT_TTL;
    case 'w':
    case 'n':
        return CLI_OPT_WAIT;
    case 'E':
        return CLI_OPT_BUSY_CODE;
    case OPT_KILL_AFTER:
    case OPT_MAX_HOLD:
        return CLI_OPT_RUN;
    case OPT_JSON:
        return CLI_OPT_JSON;
    case OPT_PERMITS:
        return CLI_OPT_PERMITS;
    case OPT_WATCH:
        return CLI_OPT_WATCH;
    case OPT_STATS_JSON:
    case OPT_METRICS_FILE:
        return CLI_OPT_STATS;
    case OPT_FAIR:
    case OPT_LEASE:
        return CLI_OPT_FAIR;
    case 's':
        return CLI_OPT_SHARED;
    case OPT_REPLICAS:
        return CLI_OPT_REPLICAS;
    case OPT_RESTART_DELAY:
        return CLI_OPT_RESTART;
    default:
        return 0;
    }
}

/* getopt's short options for `accepts`: ':' to tell a missing value, and
 * for run '+' to stop at NAME, since what follows is the command's. */
static void short_options(unsigned accepts, char *out, size_t len)
{
    snprintf(out, len, "%s%s%s%s%sh", accepts & CLI_OPT_RUN ? "+:" : ":",
             accepts & CLI_OPT_TTL ? "t:" : "", accepts & CLI_OPT_WAIT ? "w:n" : "",
             accepts & CLI_OPT_BUSY_CODE ? "E:" : "", accepts & CLI_OPT_SHARED ? "s" : "");
}

void cli_offending_option(char **argv, const struct option *longopts, char *out, size_t len)
{
    const char *arg = argv[optind - 1];
    bool as_typed = optopt <= 0 || optopt >= 128 || !isgraph(optopt);
    for (const struct option *l = longopts; !as_typed && l->name; l++)
        as_typed = l->val == optopt && strncmp(arg, "--", 2) == 0 &&
                   strncmp(arg + 2, l->name, strcspn(arg + 2, "=")) == 0;
    if (as_typed)
        snprintf(out, len, "%.64s", arg);
    else
        snprintf(out, len, "-%c", optopt);
}

/* "--ttl" for 't': every option has a long name. */
static const char *long_name(int opt)
{
    const struct option *l = long_options;
    while (l->name && l->val != opt)
        l++;
    return l->name ? l->name : "?";
}

/* --permits: a decimal integer (a sign allowed, for the range's message);
 * 0, or -1 if it is not one. Its range is check_range()'s. */
static int parse_permits(const char *value, long long *n)
{
    char *end;
    errno = 0;
    *n = strtoll(value, &end, 10);
    return *value && !isspace((unsigned char)*value) && *end == '\0' && errno == 0 ? 0 : -1;
}

/* --replicas: 0 to DLOCK_REPLICAS_MAX, digits only. */
static int parse_replicas(const char *value, int *out)
{
    char *end;
    long k = strtol(value, &end, 10);
    if (!isdigit((unsigned char)*value) || *end || k > DLOCK_REPLICAS_MAX)
        return -1;
    *out = (int)k;
    return 0;
}

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
    case OPT_KILL_AFTER:
        return cli_parse_duration_ms(value, &o->kill_after_ms);
    case OPT_MAX_HOLD:
        return cli_parse_duration_ms(value, &o->wait.max_hold_ms);
    case OPT_PERMITS:
        if (parse_permits(value, &o->permits) < 0)
            return -1;
        /* out of range: check_range() refuses it */
        o->wait.permits = o->permits > 0 && o->permits <= DLOCK_PERMITS_MAX ? (unsigned)o->permits : 0;
        return 0;
    case OPT_WATCH:
        o->watch = true;
        return 0;
    case OPT_STATS_JSON:
        o->stats_json = value;
        return 0;
    case OPT_METRICS_FILE:
        o->metrics_file = value;
        return 0;
    case OPT_FAIR:
        o->wait.fair = true;
        return 0;
    case OPT_LEASE:
        return cli_parse_duration_ms(value, &o->wait.lease_ms);
    case 's':
        o->wait.shared = true;
        return 0;
    case OPT_REPLICAS:
        return parse_replicas(value, &o->replicas);
    case OPT_RESTART_DELAY:
        return cli_parse_duration_ms(value, &o->restart_delay_ms);
    default: /* OPT_JSON */
        o->json = true;
        return 0;
    }
}

/* For a global option given after the command, says where it goes and
 * returns EXIT_USAGE; 0 for any other option. Only the option's name is
 * repeated: its value may be a URL with a password. */
static int global_option_hint(const char *usage, const char *command, const char *option)
{
    char global[80];
    if (!cli_global_option(option, global, sizeof(global)))
        return 0;
    return cli_usage_error(usage, "%.*s is a global option: put it before the command (dlock %s %s ...)",
                           (int)strcspn(option, "="), option, global, command);
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
    if (opt == OPT_MAX_HOLD && o->wait.max_hold_ms < DLOCK_TTL_MIN_MS)
        return cli_usage_error(usage, "--max-hold must be at least %lld ms (the shortest TTL), not '%s'",
                               (long long)DLOCK_TTL_MIN_MS, value);
    if (opt == OPT_LEASE && (o->wait.lease_ms < DLOCK_LEASE_MIN_MS ||
                             o->wait.lease_ms > DLOCK_LEASE_MAX_MS))
        return cli_usage_error(usage, "--lease must be from %d ms to %d ms, not '%s'",
                               DLOCK_LEASE_MIN_MS, DLOCK_LEASE_MAX_MS, value);
    if (opt == OPT_PERMITS && (o->permits < 1 || o->permits > DLOCK_PERMITS_MAX))
        return cli_usage_error(usage, "--permits must be from 1 to %d, not '%s'",
                               DLOCK_PERMITS_MAX, value);
    return 0;
}

/* run: NAME -- COMMAND [ARG...] or NAME -c 'COMMAND'. */
static int take_run_operands(const char *usage, const char *run_operands, int argc, char **argv,
                             struct cli_command_opts *o)
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
        return cli_usage_error(usage, "expected %s", run_operands);
    if (o->wait.max_hold_ms && o->wait.max_hold_ms < o->wait.ttl_ms)
        o->wait.ttl_ms = o->wait.max_hold_ms;
    return 0;
}

int cli_parse_command(const struct cli_command *cmd, int argc, char **argv,
                      struct cli_command_opts *o)
{
    char shortopts[16], usage[16], option[72];
    int opt;
    memset(o, 0, sizeof(*o));
    o->wait = (struct cli_wait){.ttl_ms = DEFAULT_TTL_MS, .wait_ms = DLOCK_WAIT_FOREVER};
    o->busy_code = EXIT_BUSY;
    o->kill_after_ms = DEFAULT_KILL_AFTER_MS;
    short_options(cmd->accepts, shortopts, sizeof(shortopts));
    snprintf(usage, sizeof(usage), "%s ", cmd->name);
    opterr = 0;
    while ((opt = getopt_long(argc, argv, shortopts, long_options, NULL)) != -1) {
        if (opt == 'h') {
            fputs(cmd->help, stdout);
            return CLI_HELP;
        }
        if (opt == ':') {
            cli_offending_option(argv, long_options, option, sizeof(option));
            return cli_usage_error(usage, "option '%s' needs a value", option);
        }
        if (opt == '?') {
            cli_offending_option(argv, long_options, option, sizeof(option));
            return unknown_option(usage, cmd->name, option);
        }
        /* Long options are shared: one another subcommand takes. */
        if (!(group_of(opt) & cmd->accepts))
            return cli_usage_error(usage, "unknown option '--%s'", long_name(opt));
        if (take_value(opt, optarg, o) < 0)
            return cli_usage_error(usage, "bad value '%s' for --%s", optarg, long_name(opt));
        if (check_range(usage, opt, optarg, o))
            return EXIT_USAGE;
    }
    /* The library refuses it too; said here in the command's words. */
    if (o->wait.lease_ms && !o->wait.fair)
        return cli_usage_error(usage, "--lease is a fair waiter's presence lease: it needs --fair");
    if (cmd->accepts & CLI_OPT_RUN)
        return take_run_operands(usage, cmd->operands, argc, argv, o);
    if (argc - optind != cmd->n_operands &&
        !((cmd->accepts & CLI_OPT_NAME_OPTIONAL) && argc == optind))
        return cli_usage_error(usage, "expected %s", cmd->operands);
    o->name = argv[optind];
    o->token = cmd->n_operands == 2 ? argv[optind + 1] : NULL;
    return 0;
}
