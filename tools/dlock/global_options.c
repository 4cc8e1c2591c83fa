/* The global options, before the command: servers (with their passwords
 * hidden from ps), user, TLS, verbosity. */
#include "cli.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASSWORD_MASK_LEN 4 /* ps shows "****", whatever the password's length */

/* Removes n bytes at `at`, inside argv[i]: the rest of it, and the arguments
 * after it that lie end to end with it (as the kernel lays them out), move
 * left and the bytes freed at the end become NULs, so that ps shows no gap
 * where the bytes were. The moved arguments' pointers follow. */
static void cut_argument(int argc, char **argv, int i, char *at, size_t n)
{
    char *end = argv[i] + strlen(argv[i]) + 1;
    int last = i + 1;
    while (last < argc && argv[last] == end)
        end += strlen(argv[last++]) + 1;
    memmove(at, at + n, (size_t)(end - at) - n);
    memset(end - n, '\0', n);
    while (--last > i)
        argv[last] -= n;
}

/* The password of a URL given on the command line (argv[i], or its end:
 * -rURL, --redis=URL) must not stay visible in ps: once a copy is taken,
 * it becomes "****" (as many stars as it has characters, if fewer). */
static void hide_password(int argc, char **argv, int i, char *url)
{
    char *auth = strstr(url, "://");
    char *end, *colon;
    if (!auth)
        return;
    auth += 3;
    end = auth + strcspn(auth, "/?#");
    colon = memchr(auth, ':', (size_t)(end - auth));
    for (char *at = end; at > auth; at--) {
        if (at[-1] == '@') {
            size_t len = colon && colon < at - 1 ? (size_t)(at - 1 - colon - 1) : 0;
            size_t stars = len < PASSWORD_MASK_LEN ? len : PASSWORD_MASK_LEN;
            if (stars)
                memset(colon + 1, '*', stars);
            if (len > stars)
                cut_argument(argc, argv, i, colon + 1 + stars, len - stars);
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

/* The length of the first URL of a comma-separated list: up to a comma
 * that a scheme ("name://") follows. A sentinel URL's own commas separate
 * its sentinels, and no host:port looks like a scheme. */
static size_t first_url_length(const char *s)
{
    for (size_t i = 0; s[i]; i++) {
        size_t scheme = s[i] == ',' ? strspn(s + i + 1, "abcdefghijklmnopqrstuvwxyz"
                                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ-") : 0;
        if (scheme && strncmp(s + i + 1 + scheme, "://", 3) == 0)
            return i;
    }
    return strlen(s);
}

/* $DLOCK_REDIS: comma-separated URLs. */
static int urls_from_environment(struct cli *cli)
{
    const char *env = getenv("DLOCK_REDIS");
    char *list;
    int rc = 0;
    if (!env || !*env)
        return 0;
    list = strdup(env);
    if (!list)
        return EXIT_UNAVAILABLE;
    for (char *url = list; *url && rc == 0;) {
        size_t len = first_url_length(url);
        bool last = url[len] == '\0';
        url[len] = '\0';
        if (len > 0)
            rc = add_url(cli, url);
        url += len + !last;
    }
    free(list);
    return rc;
}

enum { OPT_USER = 256, OPT_VERSION, OPT_TLS, OPT_CACERT, OPT_CACERTDIR, OPT_CERT, OPT_KEY,
       OPT_SNI, OPT_INSECURE, OPT_AUDIT };

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
    {"audit", no_argument, NULL, OPT_AUDIT},
    {NULL, 0, NULL, 0},
};

/* What --help calls an option's value. */
static const char *value_name(int opt)
{
    switch (opt) {
    case 'r':
        return " URL";
    case OPT_USER:
    case OPT_SNI:
        return " NAME";
    case OPT_CACERTDIR:
        return " DIR";
    default:
        return " FILE";
    }
}

/* Whether `option`, as typed ("-r", "--redis" or "--redis=URL"), is o. */
static bool typed_as(const struct option *o, const char *option)
{
    size_t n;
    if (strncmp(option, "--", 2) != 0)
        return o->val < 256 && option[0] == '-' && option[1] == o->val && !option[2];
    n = strcspn(option + 2, "=");
    return strlen(o->name) == n && strncmp(o->name, option + 2, n) == 0;
}

bool cli_global_option(const char *option, char *out, size_t len)
{
    const struct option *o = options;
    while (o->name && !typed_as(o, option))
        o++;
    if (!o->name || o->val == 'h') /* -h and --help are every command's own */
        return false;
    if (option[1] == '-')
        snprintf(out, len, "--%s%s", o->name, o->has_arg ? value_name(o->val) : "");
    else
        snprintf(out, len, "-%c%s", o->val, o->has_arg ? value_name(o->val) : "");
    return true;
}

int cli_parse_global(struct cli *cli, int argc, char **argv)
{
    char option[72];
    int opt, rc;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:r:vqh", options, NULL)) != -1) {
        switch (opt) {
        case 'r':
            rc = add_url(cli, optarg);
            hide_password(argc, argv, optind - 1, optarg); /* optind is past the URL */
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
            return CLI_HELP;
        case OPT_VERSION:
            return CLI_VERSION;
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
        case OPT_AUDIT:
            cli->audit = true;
            break;
        case ':':
            cli_offending_option(argv, options, option, sizeof(option));
            return cli_usage_error(NULL, "option '%s' needs a value", option);
        default:
            cli_offending_option(argv, options, option, sizeof(option));
            return cli_usage_error(NULL, "unknown option '%s'", option);
        }
    }
    /* DLOCK_AUDIT=1: the acquire and the release of a script's steps
     * (dlock acquire, then dlock release) both audited. */
    const char *audit = getenv("DLOCK_AUDIT");
    cli->audit |= audit && strcmp(audit, "1") == 0;
    return cli->n_urls ? 0 : urls_from_environment(cli);
}

void cli_free_urls(struct cli *cli)
{
    for (size_t i = 0; i < cli->n_urls; i++) {
        /* A URL may carry a password: leave no copy behind. */
        volatile char *p = cli->owned_urls[i];
        while (*p)
            *p++ = '\0';
        free(cli->owned_urls[i]);
        cli->owned_urls[i] = NULL;
    }
    cli->n_urls = 0;
}
