/* A lock's holder in words (the library's dlock_status_describe()), and
 * the "is busy" message after a refused acquire. */
#include "holder.h"

#include "global_options.h"
#include "messages.h"

#include <stdio.h>
#include <string.h>

/* 1: held, its holder in out; 0: nobody holds it; or the failure to ask. */
static int ask_holder(dlock_client *client, const char *name, char *out, size_t len)
{
    dlock_status *st = NULL;
    int rc = dlock_status_query(&st, client, name);
    if (rc == 0 && (rc = dlock_status_held(st)))
        dlock_status_describe(st, out, len);
    dlock_status_free(st);
    return rc;
}

bool cli_query_holder(dlock_client *client, const char *name, char *out, size_t len)
{
    return ask_holder(client, name, out, len) == 1;
}

int cli_busy(const struct cli *cli, dlock_client *client, const char *name, int busy_code)
{
    char holder[400];
    int held;
    /* A server in its restart delay (--restart-delay) answers busy: that
     * is the news, not who holds the lock elsewhere. Quiet, nothing is
     * said: nothing is asked either. */
    if (cli->quiet)
        return busy_code;
    if (strstr(dlock_client_errmsg(client), "(restart delay)")) {
        cli_info(cli, "%s is busy: %s", name, dlock_client_errmsg(client));
    } else if ((held = ask_holder(client, name, holder, sizeof(holder))) == 1) {
        cli_info(cli, "%s is busy: %s", name, holder);
    } else if (held == 0) {
        cli_info(cli, "%s is busy (released since)", name);
    } else {
        snprintf(holder, sizeof(holder), "%s", dlock_client_errmsg(client));
        cli_info(cli, "%s is busy (its holder could not be read: %s)", name, holder);
    }
    return busy_code;
}
