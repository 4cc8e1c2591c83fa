/* dlock: run commands under a lock shared through Redis.
 * main() has the global options parsed (global_options.c) and hands over to a
 * subcommand. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct command {
    const char *name;
    int (*run)(struct cli *cli, int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"run", cmd_run, "run a command while holding the lock, renewing it"},
    {"acquire", cmd_acquire, "take the lock and print its token"},
    {"release", cmd_release, "release a lock taken with acquire"},
    {"extend", cmd_extend, "extend a lock taken with acquire"},
    {"status", cmd_status, "say whether the lock is held, by whom, and its fence"},
    {"list", cmd_list, "list the locks held now, with their holders"},
    {"doctor", cmd_doctor, "check whether the servers can keep a lock"},
    {"check", cmd_check, "say whether a fencing token is still the newest, and held"},
    {"guard", cmd_guard, "load the Redis guard that refuses an older fencing token"},
    {"audit", cmd_audit, "find double holders and late releases in the audit stream"},
};

static const char usage[] =
    "Usage: dlock [global options] COMMAND [options] NAME ...\n"
    "\n"
    "Distributed locks on Redis: one holder at a time across hosts.\n"
    "\n"
    "Commands:\n"
    "%s"
    "\n"
    "Global options (before COMMAND):\n"
    "  -r, --redis URL    server: redis://[[user]:password@]host[:port][/db] (any\n"
    "                     node of a Redis Cluster too), unix:///path[?db=N] or\n"
    "                     redis-sentinel://host[:port][,host[:port]...][/db]#name\n"
    "                     (rediss:// and rediss-sentinel:// for TLS);\n"
    "                     default $DLOCK_REDIS (comma-separated), else\n"
    "                     redis://127.0.0.1:6379. Three or more\n"
    "                     independent servers: Redlock (a majority holds the lock)\n"
    "      --user NAME    ACL user; the password comes from the URL or $DLOCK_PASSWORD\n"
    "      --tls          TLS for every server (rediss:// URLs use it anyway)\n"
    "      --cacert FILE  CA certificates to verify servers with (default: the system's)\n"
    "      --cacertdir DIR   a directory of hashed CA certificates\n"
    "      --cert FILE    client certificate, for servers that ask for one\n"
    "      --key FILE     its private key\n"
    "      --sni NAME     server name to send and verify (default: the URL's host)\n"
    "      --insecure     do not verify certificates or names (testing only)\n"
    "      --audit        record every grant, extend, release and loss in the name's\n"
    "                     audit stream (also $DLOCK_AUDIT=1); read it with 'dlock audit'\n"
    "  -v, --verbose      say what happens, waits too (for whom, how long)\n"
    "  -q, --quiet        no messages but errors\n"
    "  -h, --help         this help; 'dlock COMMAND --help' for a command's\n"
    "      --version      print the version\n"
    "\n"
    "Durations: a bare number is seconds (1.5 too); or 250ms, 30s, 5m, 1h.\n"
    "\n"
    "Exit status:\n";

/* The exit codes, from the one table in exit_codes.h. */
static void print_exit_codes(void)
{
#define CLI_EXIT_LINE(code, name, text) printf("  %-4d %s\n", code, text);
    CLI_EXIT_CODES(CLI_EXIT_LINE)
#undef CLI_EXIT_LINE
    printf("  otherwise, run exits with the command's status (128+N if signal N ended it)\n");
}

static void print_usage(void)
{
    char list[1024] = "";
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof(list) - used, "  %-8s %s\n", commands[i].name,
                 commands[i].summary);
    }
    printf(usage, list);
    print_exit_codes();
}

int main(int argc, char **argv)
{
    struct cli cli = {0};
    const char *name;
    int rc = cli_parse_global(&cli, argc, argv);

    if (rc == CLI_HELP) {
        print_usage();
        rc = EXIT_DONE;
    } else if (rc == CLI_VERSION) {
        printf("dlock %s (libdlock %s)\n", DLOCK_VERSION_STRING, dlock_version());
        rc = EXIT_DONE;
    }
    else if (rc == 0 && optind >= argc)
        rc = cli_usage_error(NULL, "missing COMMAND (run, acquire, release, extend, status, list, doctor, "
                                        "check, guard, audit)");
    else if (rc == 0) {
        name = argv[optind];
        rc = -1;
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
            if (strcmp(name, commands[i].name) == 0) {
                int sub_argc = argc - optind;
                optind = 0; /* the subcommand parses its own options, from scratch */
                rc = commands[i].run(&cli, sub_argc, argv + (argc - sub_argc));
                break;
            }
        }
        if (rc < 0)
            rc = cli_usage_error(NULL, "unknown command '%s'", name);
    }
    cli_free_urls(&cli);
    return rc;
}
