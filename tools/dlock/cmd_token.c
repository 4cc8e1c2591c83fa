/* acquire, release, extend: a lock held across commands of a script, by
 * its token. */
#include "cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_TTL_MS 30000

static const char acquire_help[] =
    "Usage: dlock acquire [-t TTL] [-w WAIT | -n] [-E CODE] [--json] NAME\n"
    "Takes the lock and prints its token, for a later 'dlock release NAME TOKEN'.\n"
    "The lock is not renewed: extend it, or it expires after TTL.\n"
    "  -t, --ttl DUR     how long the lock lives (default 30s)\n"
    "  -w, --wait DUR    wait at most this long for a busy lock (default: forever)\n"
    "  -n, --nowait      do not wait (same as -w 0)\n"
    "  -E, --conflict-exit-code CODE   exit code when busy (default 75)\n"
    "      --json        print name, token, fence and validity_ms as JSON\n";

static const char release_help[] =
    "Usage: dlock release NAME TOKEN\n"
    "Releases the lock if TOKEN still owns it. Exit 1 if it does not.\n";

static const char extend_help[] =
    "Usage: dlock extend [-t TTL] NAME TOKEN\n"
    "Sets the lock's time to live to TTL (default 30s) if TOKEN still owns it.\n"
    "Exit 1 if it does not.\n";

/* Parses -t, -w, -n, -E, --json and -h; `shortopts` says which apply. */
struct token_opts {
    struct cli_wait wait;
    int busy_code;
    bool json;
};

static int parse(const char *command, const char *help, const char *shortopts, bool json_ok,
                 int argc, char **argv, struct token_opts *o)
{
    enum { OPT_JSON = 256 };
    static const struct option options[] = {
        {"ttl", required_argument, NULL, 't'},  {"wait", required_argument, NULL, 'w'},
        {"nowait", no_argument, NULL, 'n'},     {"conflict-exit-code", required_argument, NULL, 'E'},
        {"json", no_argument, NULL, OPT_JSON},  {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    o->wait = (struct cli_wait){.ttl_ms = DEFAULT_TTL_MS, .wait_ms = DLOCK_WAIT_FOREVER};
    o->busy_code = EXIT_BUSY;
    o->json = false;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, shortopts, options, NULL)) != -1) {
        if (opt == 'h') {
            fputs(help, stdout);
            return -1;
        }
        if (opt == 't' && cli_parse_duration_ms(optarg, &o->wait.ttl_ms) == 0 && o->wait.ttl_ms > 0)
            continue;
        if (opt == 'w' && strchr(shortopts, 'w') &&
            cli_parse_duration_ms(optarg, &o->wait.wait_ms) == 0)
            continue;
        if (opt == 'n' && strchr(shortopts, 'n')) {
            o->wait.wait_ms = 0;
            continue;
        }
        if (opt == 'E' && strchr(shortopts, 'E') && cli_parse_exit_code(optarg, &o->busy_code) == 0)
            continue;
        if (opt == OPT_JSON && json_ok) {
            o->json = true;
            continue;
        }
        if (opt == 't' || opt == 'w' || opt == 'E')
            return cli_usage_error(command, "bad value '%s' for -%c", optarg, opt);
        return cli_usage_error(command, "unknown option '%s'", argv[optind - 1]);
    }
    return 0;
}

static int expect_args(const char *command, int argc, int want, const char *what)
{
    if (argc - optind == want)
        return 0;
    return cli_usage_error(command, "expected %s", what);
}

int cmd_acquire(struct cli *cli, int argc, char **argv)
{
    struct token_opts o;
    dlock_client *client;
    dlock_lock *lock = NULL;
    int rc = parse("acquire ", acquire_help, "t:w:nE:h", true, argc, argv, &o);
    if (rc)
        return rc < 0 ? EXIT_DONE : rc;
    if ((rc = expect_args("acquire ", argc, 1, "NAME")) || (rc = cli_open_client(cli, &client)))
        return rc;
    rc = cli_acquire(cli, client, argv[optind], &o.wait, &lock);
    if (rc == DLOCK_EBUSY) {
        cli_info(cli, "%s is busy: %s", argv[optind], dlock_client_errmsg(client));
        rc = o.busy_code;
    } else if (rc < 0) {
        rc = cli_fail(client, rc, argv[optind]);
    } else if (o.json) {
        printf("{\"name\":");
        cli_print_json_string(dlock_lock_name(lock));
        printf(",\"token\":\"%s\",\"fence\":%" PRIu64 ",\"validity_ms\":%" PRId64 "}\n",
               dlock_lock_token(lock), dlock_lock_fence(lock), dlock_lock_validity_ms(lock));
    } else {
        printf("%s\n", dlock_lock_token(lock));
        cli_debug(cli, "acquired %s, fence %" PRIu64 ", valid for %" PRId64 " ms", argv[optind],
                  dlock_lock_fence(lock), dlock_lock_validity_ms(lock));
    }
    dlock_lock_free(lock); /* the lock stays: it is released by token later */
    dlock_client_close(client);
    return rc;
}

/* release and extend: adopt the token, act, map "not ours" to exit 1. */
static int by_token(struct cli *cli, const char *command, int argc, char **argv,
                    const struct token_opts *o, bool extend)
{
    dlock_client *client;
    dlock_lock *lock = NULL;
    const char *name = argv[optind], *token = argv[optind + 1];
    int rc = cli_open_client(cli, &client);
    if (rc)
        return rc;
    (void)argc;
    rc = dlock_lock_adopt(&lock, client, name, token);
    if (rc == 0)
        rc = extend ? dlock_lock_extend(lock, o->wait.ttl_ms) : dlock_lock_release(lock);
    if (rc == DLOCK_ENOTOWNER) {
        cli_info(cli, "%s: not released: the token does not own the lock (anymore)", name);
        rc = EXIT_REFUSED;
    } else if (rc < 0) {
        rc = cli_fail(client, rc, command);
    } else {
        cli_debug(cli, "%s %s", extend ? "extended" : "released", name);
    }
    dlock_lock_free(lock);
    dlock_client_close(client);
    return rc;
}

int cmd_release(struct cli *cli, int argc, char **argv)
{
    struct token_opts o;
    int rc = parse("release ", release_help, "h", false, argc, argv, &o);
    if (rc)
        return rc < 0 ? EXIT_DONE : rc;
    if ((rc = expect_args("release ", argc, 2, "NAME TOKEN")))
        return rc;
    return by_token(cli, "release", argc, argv, &o, false);
}

int cmd_extend(struct cli *cli, int argc, char **argv)
{
    struct token_opts o;
    int rc = parse("extend ", extend_help, "t:h", false, argc, argv, &o);
    if (rc)
        return rc < 0 ? EXIT_DONE : rc;
    if ((rc = expect_args("extend ", argc, 2, "NAME TOKEN")))
        return rc;
    return by_token(cli, "extend", argc, argv, &o, true);
}
