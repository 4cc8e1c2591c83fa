/* The subcommands, as `dlock --help` lists them and `dlock COMMAND --help`
 * describes them. The usage line and the options come from the option
 * table (help.c); here is what is said around them. */
#include "command_table.h"

#include <stddef.h>
#include <string.h>

const struct cli_command cli_commands[CLI_CMD_COUNT] = {
    [CLI_CMD_RUN] = {
        .name = "run",
        .summary = "run a command while holding the lock, renewing it",
        .operands = "NAME -- COMMAND [ARG...]",
        .operands_too = "NAME -c 'shell command'",
        .n_operands = 1,
        .flags = CLI_RUN_OPERANDS,
        .about = "Runs COMMAND while holding the lock NAME, renewing it, and exits with the\n"
                 "command's status. If the lock is lost, the command's process group gets\n"
                 "SIGTERM (then SIGKILL) and dlock exits 70.\n",
        .notes = "The command sees DLOCK_NAME, DLOCK_TOKEN, DLOCK_FENCE and DLOCK_SLOT (the\n"
                 "permit's slot, 0 to N-1; the fence grows per slot); DLOCK_PASSWORD and\n"
                 "URLs with credentials are removed from its environment.\n",
    },
    [CLI_CMD_ACQUIRE] = {
        .name = "acquire",
        .summary = "take the lock and print its token",
        .operands = "NAME",
        .n_operands = 1,
        .about = "Takes the lock and prints its token, for a later 'dlock release NAME TOKEN'.\n"
                 "The lock is not renewed: extend it, or it expires after TTL.\n",
    },
    [CLI_CMD_RELEASE] = {
        .name = "release",
        .summary = "release a lock taken with acquire",
        .operands = "NAME TOKEN",
        .n_operands = 2,
        .about = "Releases the lock if TOKEN still owns it. Exit 1 if it does not.\n",
    },
    [CLI_CMD_EXTEND] = {
        .name = "extend",
        .summary = "extend a lock taken with acquire",
        .operands = "NAME TOKEN",
        .n_operands = 2,
        .about = "Sets the lock's time to live anew (-t) if TOKEN still owns it.\n"
                 "Exit 1 if it does not.\n",
    },
    [CLI_CMD_STATUS] = {
        .name = "status",
        .summary = "say whether the lock is held, by whom, and its fence",
        .operands = "NAME",
        .n_operands = 1,
        .about = "Says whether the lock is held, by which host and process (when a dlock\n"
                 "client holds it), how long it still lives, and the last fencing token.\n"
                 "A semaphore: how many of its permits are held, and one line per holder.\n"
                 "Exit 0 when held, 1 when free; with --watch, 0 once SIGINT or SIGTERM ends it.\n",
    },
    [CLI_CMD_LIST] = {
        .name = "list",
        .summary = "list the locks held now, with their holders",
        .operands = "[PATTERN]",
        .n_operands = 1,
        .flags = CLI_NAME_OPTIONAL,
        .about = "Lists the locks held now whose name matches the glob PATTERN (default: all):\n"
                 "holder, time to live, fence. Found with SCAN over the owner records, never\n"
                 "KEYS, so a large database is walked in small steps that do not block it.\n",
    },
    [CLI_CMD_DOCTOR] = {
        .name = "doctor",
        .summary = "check whether the servers can keep a lock",
        .operands = "[NAME]",
        .n_operands = 1,
        .flags = CLI_NAME_OPTIONAL,
        .about = "Checks whether the servers can keep a lock: eviction, persistence, replicas,\n"
                 "permissions, clocks, round trips, versions. Prints each finding with its ID,\n"
                 "severity, evidence and fix. The commands dlock needs are tried on a scratch\n"
                 "lock (NAME-dlock-doctor-..., for a user allowed only NAME's keys), which is\n"
                 "removed; nothing else is written.\n",
        .notes = "Exit 0 without a finding of severity error, 78 with one, 77 when a server\n"
                 "refused the credentials, 69 when a server could not be reached.\n",
    },
    [CLI_CMD_CHECK] = {
        .name = "check",
        .summary = "say whether a fencing token is still the newest, and held",
        .operands = "NAME FENCE",
        .n_operands = 2,
        .about = "Says whether FENCE (a holder's $DLOCK_FENCE) is still the newest fencing token\n"
                 "issued for NAME and NAME is held: exit 0 if so, 1 if not (the lock is free, or\n"
                 "another holder took it since). With several servers, as a majority sees it.\n"
                 "A check followed by a write is not atomic: the lock can be lost between the\n"
                 "two. The check makes a stale holder fail early; it does not guard the write.\n"
                 "A guard at the resource does (dlock guard, docs/fencing.md).\n",
    },
    [CLI_CMD_GUARD] = {
        .name = "guard",
        .summary = "load the Redis guard that refuses an older fencing token",
        .operands = "load-redis",
        .n_operands = 1,
        .about = "Loads the Redis guard into every server given (on a Redis Cluster, into each\n"
                 "master), replacing the version loaded before: the Functions library\n"
                 "dlock_fence (Redis 7), whose writes refuse an older fencing token:\n"
                 "  FCALL dlock_fenced_set    2 KEY FENCEKEY VALUE FENCE\n"
                 "  FCALL dlock_fenced_hset   2 KEY FENCEKEY FIELD VALUE FENCE\n"
                 "  FCALL dlock_fenced_incrby 2 KEY FENCEKEY INCREMENT FENCE\n"
                 "The same library is /usr/share/dlock/dlock_fence.lua, the PostgreSQL guard\n"
                 "/usr/share/dlock/dlock_fence.sql (docs/fencing.md).\n",
    },
    [CLI_CMD_AUDIT] = {
        .name = "audit",
        .summary = "find double holders and late releases in the audit stream",
        .operands = "NAME",
        .n_operands = 1,
        .about = "Reads the audit stream of NAME on every server (written by clients run with\n"
                 "--audit) and reports what went wrong: two holders at once (overlap), a fencing\n"
                 "token that went back (fence-back), a holder that released after its validity\n"
                 "ended (past-validity), and with several servers a hold that no majority\n"
                 "recorded (no-majority). Times are server time; two holds overlap when one\n"
                 "began before the other's end less TTL x 1 % + 2 ms. Exit 0: no finding;\n"
                 "1: findings; 64: the --svg file could not be written (without findings);\n"
                 "69: a server could not be read.\n",
    },
};

const struct cli_command *cli_command_named(const char *name)
{
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        if (strcmp(cli_commands[i].name, name) == 0)
            return &cli_commands[i];
    return NULL;
}

unsigned cli_command_bit(const struct cli_command *cmd)
{
    return CLI_IN((unsigned)(cmd - cli_commands));
}
