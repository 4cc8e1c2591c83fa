/* The global options, before the command: servers (with their passwords
 * hidden from ps), user, TLS, verbosity. */
#include "global_options.h"

#include "exit_codes.h"
#include "messages.h"
#include "option_table.h"

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

int cli_parse_global(struct cli *cli, int argc, char **argv)
{
    struct cli_getopt g;
    char option[72], why[256];
    int opt, rc;
    cli_getopt_for(CLI_GLOBAL, true, &g);
    opterr = 0;
    while ((opt = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        switch (opt) {
        case 'r':
            rc = add_url(cli, optarg);
            hide_password(argc, argv, optind - 1, optarg); /* optind is past the URL */
            if (rc)
                return rc;
            break;
        case CLI_KEY_USER:
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
        case CLI_KEY_VERSION:
            return CLI_VERSION;
        case CLI_KEY_TLS:
            cli->tls = true;
            break;
        case CLI_KEY_CACERT:
            cli->cacert = optarg;
            break;
        case CLI_KEY_CACERTDIR:
            cli->cacertdir = optarg;
            break;
        case CLI_KEY_CERT:
            cli->cert = optarg;
            break;
        case CLI_KEY_KEY:
            cli->key = optarg;
            break;
        case CLI_KEY_SNI:
            cli->sni = optarg;
            break;
        case CLI_KEY_INSECURE:
            cli->insecure = true;
            break;
        case CLI_KEY_AUDIT:
            cli->audit = true;
            break;
        case ':':
            cli_offending_option(argv, g.longopts, option, sizeof(option));
            return cli_usage_error(NULL, "option '%s' needs a value", option);
        default:
            if (cli_long_option_trouble(argv, g.longopts, why, sizeof(why)))
                return cli_usage_error(NULL, "%s", why);
            cli_offending_option(argv, g.longopts, option, sizeof(option));
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
