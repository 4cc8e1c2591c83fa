/* The global options, before the command: what they chose. */
#ifndef DLOCK_CLI_GLOBAL_OPTIONS_H
#define DLOCK_CLI_GLOBAL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#define CLI_URLS_MAX 16

struct cli {
    const char *urls[CLI_URLS_MAX];
    char *owned_urls[CLI_URLS_MAX]; /* copies, to free */
    size_t n_urls;
    const char *user;
    bool verbose, quiet;
    /* TLS, named as in redis-cli */
    bool tls, insecure;
    bool audit; /* --audit or DLOCK_AUDIT=1: the client option `audit` */
    const char *cacert, *cacertdir, *cert, *key, *sni;
};

/* The parsers' answer for --help and --version: nothing to run. */
#define CLI_HELP (-2)
#define CLI_VERSION (-3)

/* Parses the global options (and $DLOCK_REDIS when no -r) from argv[1] on,
 * leaving optind at the command. Returns 0, CLI_HELP, CLI_VERSION or an
 * exit code after printing why. URL passwords are overwritten in argv. */
int cli_parse_global(struct cli *cli, int argc, char **argv);

/* Wipes and frees the URL copies. */
void cli_free_urls(struct cli *cli);

#endif
