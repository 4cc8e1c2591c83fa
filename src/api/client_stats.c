/* dlock_client_stats: a copy of the client's counters. */
#include "lane.h"

#include <string.h>

int dlock_client_stats(const dlock_client *c, dlock_stats *out)
{
    int64_t margin;
    if (!c || !out || out->version != DLOCK_STATS_VERSION)
        return DLOCK_EINVAL;
    margin = atomic_load(&c->stats.min_margin_ms);
    memset(out, 0, sizeof(*out));
    out->version = DLOCK_STATS_VERSION;
    out->acquisitions = atomic_load(&c->stats.acquisitions);
    out->busy = atomic_load(&c->stats.busy);
    out->waits = atomic_load(&c->stats.waits);
    out->wait_ms = atomic_load(&c->stats.wait_ns) / 1000000;
    out->renewals = atomic_load(&c->stats.renewals);
    out->min_renewal_margin_ms = margin == INT64_MAX ? -1 : margin;
    out->losses = atomic_load(&c->stats.losses);
    out->nodes = c->n;
    for (size_t i = 0; i < c->n; i++) {
        out->node[i].errors = atomic_load(&c->node_counters[i].errors);
        out->node[i].timeouts = atomic_load(&c->node_counters[i].timeouts);
    }
    return 0;
}
