/* See example.h. */
#include "example.h"

#include <stdio.h>
#include <stdlib.h>

long example_number(const char *s)
{
    char *end;
    long n = strtol(s, &end, 10);
    return end == s || *end || n < 0 ? -1 : n;
}

dlock_client *example_client(const char *prog, const char *url)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *client;
    char why[256];
    opts.urls = &url;
    opts.n_urls = 1;
    if (dlock_client_open(&client, &opts, why, sizeof(why)) < 0) {
        fprintf(stderr, "%s: %s\n", prog, why);
        return NULL;
    }
    return client;
}
