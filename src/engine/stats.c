/* The client's counters. See stats.h. */
#include "stats.h"

#include "dlock.h"

void dlock__stats_init(dlock__stats *s)
{
    atomic_init(&s->acquisitions, 0);
    atomic_init(&s->busy, 0);
    atomic_init(&s->waits, 0);
    atomic_init(&s->renewals, 0);
    atomic_init(&s->losses, 0);
    atomic_init(&s->wait_ns, 0);
    atomic_init(&s->min_margin_ms, INT64_MAX);
}

void dlock__stats_acquired(dlock__stats *s, int rc, bool waited, int64_t took_ns)
{
    if (rc == 0)
        atomic_fetch_add(&s->acquisitions, 1);
    else if (rc == DLOCK_EBUSY)
        atomic_fetch_add(&s->busy, 1);
    if (waited) {
        atomic_fetch_add(&s->waits, 1);
        atomic_fetch_add(&s->wait_ns, took_ns);
    }
}

void dlock__stats_lower(atomic_int_fast64_t *least, int64_t value)
{
    int_fast64_t now = atomic_load(least);
    while (value < now && !atomic_compare_exchange_weak(least, &now, value))
        ;
}

void dlock__stats_renewed(dlock__stats *s, int64_t margin_ms)
{
    atomic_fetch_add(&s->renewals, 1);
    dlock__stats_lower(&s->min_margin_ms, margin_ms);
}

void dlock__stats_lost(dlock__stats *s)
{
    atomic_fetch_add(&s->losses, 1);
}

void dlock__stats_node(dlock__node_counters *n, int status, int error_reply)
{
    if (!n)
        return;
    if (status == DLOCK_ETIMEDOUT)
        atomic_fetch_add(&n->timeouts, 1);
    else if (status < 0 || error_reply)
        atomic_fetch_add(&n->errors, 1);
}
