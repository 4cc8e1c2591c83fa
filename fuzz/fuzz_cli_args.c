/* The command's global option parser, on argument vectors cut from the
 * input at NUL bytes: no crash, no leak, a known outcome, at most
 * CLI_URLS_MAX servers, and no password left readable in argv (ps) for a
 * URL that -r/--redis took (whatever getopt made of the arguments around
 * it): it shows as "****", whatever its length. */
#include "cli.h"

#include <assert.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARGS_MAX 16

/* The password part of a URL's credentials, as typed: after the first ':'
 * and before the last '@' of the authority. */
static void password_span(const char *url, const char **start, size_t *len)
{
    const char *auth = strstr(url, "://"), *end, *colon;
    *start = NULL;
    *len = 0;
    if (!auth)
        return;
    auth += 3;
    end = auth + strcspn(auth, "/?#");
    colon = memchr(auth, ':', (size_t)(end - auth));
    for (const char *at = end; at > auth; at--) {
        if (at[-1] == '@') {
            if (colon && colon < at - 1) {
                *start = colon + 1;
                *len = (size_t)(at - 1 - colon - 1);
            }
            return;
        }
    }
}

/* Usage errors go to stderr with the fuzzer's own output; scripts/fuzz
 * keeps only the latter. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    unsetenv("DLOCK_REDIS");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1), *argv[ARGS_MAX + 2];
    struct cli cli;
    int argc = 1, rc;
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    argv[0] = "dlock";
    for (char *p = copy; p <= copy + size && argc <= ARGS_MAX; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;
    memset(&cli, 0, sizeof(cli));
    optind = 0; /* getopt starts afresh */
    rc = cli_parse_global(&cli, argc, argv);
    assert(rc == 0 || rc == CLI_HELP || rc == CLI_VERSION || rc == EXIT_USAGE ||
           rc == EXIT_UNAVAILABLE);
    assert(cli.n_urls <= CLI_URLS_MAX);
    /* Each URL taken is a copy of an argument, which must now show its
     * password as stars, and the arguments after it moved up to close the
     * gap. */
    for (size_t u = 0; u < cli.n_urls; u++) {
        char *masked = strdup(cli.urls[u]);
        const char *pw;
        size_t len;
        int found = 0;
        password_span(masked, &pw, &len);
        if (pw) {
            /* "****", or fewer stars for a shorter password */
            char *stars = masked + (pw - masked);
            size_t shown = len < 4 ? len : 4;
            memset(stars, '*', shown);
            memmove(stars + shown, stars + len, strlen(stars + len) + 1);
        }
        /* The argument, or its end: -rURL, --redis=URL. */
        for (int i = 1; i < argc && !found; i++) {
            size_t n = strlen(argv[i]), m = strlen(masked);
            found = n >= m && strcmp(argv[i] + n - m, masked) == 0;
        }
        assert(found);
        free(masked);
    }
    cli_free_urls(&cli);
    free(copy);
    return 0;
}
