/* A lock's holder in words (the library's dlock_status_describe()), and
 * the "is busy" message after a refused acquire. */
#include "holder.h"

#include "messages.h"

#include <stdio.h>
#include <string.h>

bool cli_query_holder(dlock_client *client, const char *name, char *out, size_t len)
{
    dlock_status *st = NULL;
    bool held = dlock_status_query(&st, client, name) == 0 && dlock_status_held(st);
    if (held)
        dlock_status_describe(st, out, len);
    dlock_status_free(st);
    return held;
}

int cli_busy(const struct cli *cli, dlock_client *client, const char *name, int busy_code)
{
    char holder[400];
    /* A server in its restart delay (--restart-delay) answers busy: that
     * is the news, not who holds the lock elsewhere. */
    if (strstr(dlock_client_errmsg(client), "(restart delay)"))
        cli_info(cli, "%s is busy: %s", name, dlock_client_errmsg(client));
    else if (cli_query_holder(client, name, holder, sizeof(holder)))
        cli_info(cli, "%s is busy: %s", name, holder);
    else
        cli_info(cli, "%s is busy (released since)", name);
    return busy_code;
}
