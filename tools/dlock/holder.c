/* A lock's holder described: one holder, a semaphore's permits, shared
 * holders; and the "is busy" message after a refused acquire. */
#include "holder.h"

#include "messages.h"
#include "times.h"

#include <stdio.h>
#include <string.h>

void cli_describe_holder(const dlock_status *st, char *out, size_t len)
{
    const dlock_holder *h = dlock_status_holder(st, 0);
    int64_t ttl_ms = dlock_status_ttl_ms(st);
    int n;
    if (dlock_status_limit(st) > 1) {
        snprintf(out, len, "%zu of its %u permits held, the first to expire in %.1f s",
                 dlock_status_holders(st), dlock_status_limit(st), (double)ttl_ms / 1000);
        return;
    }
    if (h && dlock_status_shared(st)) {
        size_t holders = dlock_status_holders(st);
        snprintf(out, len,
                 "held shared by %zu holder%s (%s%s pid %ld), the last to expire in %.1f s",
                 holders, holders == 1 ? "" : "s", holders == 1 ? "" : "one: ", h->host, h->pid,
                 (double)ttl_ms / 1000);
        return;
    }
    if (h) {
        char since[32];
        cli_format_time(h->since_ms, since, sizeof(since));
        n = snprintf(out, len, "held by %s pid %ld since %s", h->host, h->pid, since);
    } else {
        n = snprintf(out, len, "held by another client (no owner record)");
    }
    if (n < 0 || (size_t)n >= len)
        return;
    if (ttl_ms >= 0)
        snprintf(out + n, len - (size_t)n, ", expires in %.1f s", (double)ttl_ms / 1000);
    else
        snprintf(out + n, len - (size_t)n, ", never expires (no TTL)");
}

bool cli_query_holder(dlock_client *client, const char *name, char *out, size_t len)
{
    dlock_status *st = NULL;
    bool held = dlock_status_query(&st, client, name) == 0 && dlock_status_held(st);
    if (held)
        cli_describe_holder(st, out, len);
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
