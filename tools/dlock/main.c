/* dlock: run commands under a lock shared through Redis.
 * main() parses the global options and hands over to a subcommand. */
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
    "  -r, --redis URL    server: redis://[[user]:password@]host[:port][/db] or\n"
    "                     unix:///path[?db=N]; default $DLOCK_REDIS (comma-\n"
    "                     separated), else redis://127.0.0.1:6379. Three or more\n"
    "                     independent servers: Redlock (a majority holds the lock)\n"
    "      --user NAME    ACL user; the password comes from the URL or $DLOCK_PASSWORD\n"
    "      --tls          TLS for every server (rediss:// URLs use it anyway)\n"
    "      --cacert FILE  CA certificates to verify servers with (default: the system's)\n"
    "      --cacertdir DIR   a directory of hashed CA certificates\n"
    "      --cert FILE    client certificate, for servers that ask for one\n"
    "      --key FILE     its private key\n"
    "      --sni NAME     server name to send and verify (default: the URL's host)\n"
    "      --insecure     do not verify certificates or names (testing only)\n"
    "  -v, --verbose      say what happens\n"
    "  -q, --quiet        no messages but errors\n"
    "  -h, --help         this help; 'dlock COMMAND --help' for a command's\n"
    "      --version      print the version\n"
    "\n"
    "Durations: a bare number is seconds (1.5 too); or 250ms, 30s, 5m, 1h.\n"
    "\n"
    "Exit status:\n"
    "  0    done; status: held\n"
    "  1    release/extend refused (not the owner, or gone); status: free\n"
    "  64   usage error\n"
    "  69   Redis unreachable or timed out, or it refused the command\n"
    "  70   run: the lock was lost while the command ran; it was stopped\n"
    "  75   lock busy, or the wait ran out while it stayed busy (-E changes it)\n"
    "  76   protocol error: the server's reply made no sense\n"
    "  77   authentication, ACL or TLS failure\n"
    "  126  run: the command could not be executed\n"
    "  127  run: the command was not found\n"
    "  otherwise, run exits with the command's status (128+N if signal N ended it)\n";

static void print_usage(void)
{
    char list[512] = "";
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof(list) - used, "  %-8s %s\n", commands[i].name,
                 commands[i].summary);
    }
    printf(usage, list);
}

/* The password of a URL given on the command line must not stay visible in
 * ps: overwrite it in argv once a copy is taken. */
static void hide_password(char *arg)
{
    char *auth = strstr(arg, "://");
    char *end, *colon;
    if (!auth)
        return;
    auth += 3;
    end = auth + strcspn(auth, "/?#");
    colon = memchr(auth, ':', (size_t)(end - auth));
    for (char *at = end; at > auth; at--) {
        if (at[-1] == '@') {
            if (colon && colon < at - 1)
                memset(colon + 1, '*', (size_t)(at - 1 - colon - 1));
            return;
        }
    }
}

static int add_url(struct cli *cli, const char *url)
{
    char *copy;
    if (cli->n_urls == CLI_URLS_MAX)
        return cli_usage_error(NULL, "too many servers (at most %d)", CLI_URLS_MAX);
    copy = strdup(url);
    if (!copy) {
        cli_error("out of memory");
        return EXIT_UNAVAILABLE;
    }
    cli->owned_urls[cli->n_urls] = copy;
    cli->urls[cli->n_urls++] = copy;
    return 0;
}

/* $DLOCK_REDIS: comma-separated URLs. */
static int urls_from_environment(struct cli *cli)
{
    const char *env = getenv("DLOCK_REDIS");
    char *list, *save = NULL;
    int rc = 0;
    if (!env || !*env)
        return 0;
    list = strdup(env);
    if (!list)
        return EXIT_UNAVAILABLE;
    for (char *url = strtok_r(list, ",", &save); url && rc == 0; url = strtok_r(NULL, ",", &save))
        rc = add_url(cli, url);
    free(list);
    return rc;
}

#define ANSWERED (-2) /* --help or --version: nothing more to do */

static int parse_global(struct cli *cli, int argc, char **argv)
{
    enum { OPT_USER = 256, OPT_VERSION, OPT_TLS, OPT_CACERT, OPT_CACERTDIR, OPT_CERT, OPT_KEY,
           OPT_SNI, OPT_INSECURE };
    static const struct option options[] = {
        {"redis", required_argument, NULL, 'r'},
        {"user", required_argument, NULL, OPT_USER},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {"tls", no_argument, NULL, OPT_TLS},
        {"cacert", required_argument, NULL, OPT_CACERT},
        {"cacertdir", required_argument, NULL, OPT_CACERTDIR},
        {"cert", required_argument, NULL, OPT_CERT},
        {"key", required_argument, NULL, OPT_KEY},
        {"sni", required_argument, NULL, OPT_SNI},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {NULL, 0, NULL, 0},
    };
    int opt, rc;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:r:vqh", options, NULL)) != -1) {
        switch (opt) {
        case 'r':
            rc = add_url(cli, optarg);
            hide_password(optarg);
            if (rc)
                return rc;
            break;
        case OPT_USER:
            cli->user = optarg;
            break;
        case 'v':
            cli->verbose = true;
            break;
        case 'q':
            cli->quiet = true;
            break;
        case 'h':
            print_usage();
            return ANSWERED;
        case OPT_VERSION:
            printf("dlock %s (libdlock %s)\n", DLOCK_VERSION_STRING, dlock_version());
            return ANSWERED;
        case OPT_TLS:
            cli->tls = true;
            break;
        case OPT_CACERT:
            cli->cacert = optarg;
            break;
        case OPT_CACERTDIR:
            cli->cacertdir = optarg;
            break;
        case OPT_CERT:
            cli->cert = optarg;
            break;
        case OPT_KEY:
            cli->key = optarg;
            break;
        case OPT_SNI:
            cli->sni = optarg;
            break;
        case OPT_INSECURE:
            cli->insecure = true;
            break;
        case ':':
            return cli_usage_error(NULL, "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    return cli->n_urls ? 0 : urls_from_environment(cli);
}

int main(int argc, char **argv)
{
    struct cli cli = {0};
    const char *name;
    int rc = parse_global(&cli, argc, argv);

    if (rc == ANSWERED)
        rc = EXIT_DONE;
    else if (rc == 0 && optind >= argc)
        rc = cli_usage_error(NULL, "missing COMMAND (run, acquire, release, extend, status)");
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
    for (size_t i = 0; i < cli.n_urls; i++) {
        /* A URL may carry a password: leave no copy behind. */
        volatile char *p = cli.owned_urls[i];
        while (*p)
            *p++ = '\0';
        free(cli.owned_urls[i]);
    }
    return rc;
}
