/* The counters per lock name. See metrics.h. */
#include "metrics.h"

#include "clock.h"
#include "dlock.h"
#include "stats.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

#define NS_PER_S 1000000000LL

const int64_t dlock__bucket_ns[DLOCK__BOUNDS] = {
    NS_PER_S / 1000, NS_PER_S / 200, NS_PER_S / 100, NS_PER_S / 20, NS_PER_S / 10,
    NS_PER_S / 2,    NS_PER_S,       5 * NS_PER_S,   10 * NS_PER_S, 30 * NS_PER_S,
    60 * NS_PER_S,   300 * NS_PER_S, 600 * NS_PER_S};
const char *const dlock__bucket_text[DLOCK__BOUNDS] = {
    "0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1", "5", "10", "30", "60", "300", "600"};

static dlock__name_metrics *new_entry(const char *name)
{
    size_t len = strlen(name);
    dlock__name_metrics *e = calloc(1, sizeof(*e) + len + 1);
    if (!e)
        return NULL;
    atomic_init(&e->min_margin_ms, INT64_MAX);
    memcpy(e->name, name, len + 1);
    return e;
}

int dlock__metrics_init(dlock__metrics *m, size_t max)
{
    memset(m, 0, sizeof(*m));
    m->max = max;
    m->other = new_entry(DLOCK_METRICS_OTHER);
    if (!m->other)
        return DLOCK_ENOMEM;
    pthread_mutex_init(&m->mutex, NULL);
    return 0;
}

void dlock__metrics_destroy(dlock__metrics *m)
{
    if (!m->other)
        return; /* never initialised */
    for (size_t i = 0; i < m->n; i++)
        free(m->sorted[i]);
    free(m->sorted);
    free(m->other);
    pthread_mutex_destroy(&m->mutex);
    memset(m, 0, sizeof(*m));
}

/* Where `name` is or would go in m->sorted; *found says which. */
static size_t position(const dlock__metrics *m, const char *name, bool *found)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(m->sorted[mid]->name, name);
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* Makes room for one more entry. */
static bool grow(dlock__metrics *m)
{
    size_t cap = m->cap ? 2 * m->cap : 8;
    dlock__name_metrics **sorted;
    if (m->n < m->cap)
        return true;
    if (cap > m->max)
        cap = m->max;
    sorted = realloc(m->sorted, cap * sizeof(dlock__name_metrics *));
    if (!sorted)
        return false;
    m->sorted = sorted;
    m->cap = cap;
    return true;
}

/* Called with the mutex held. */
static dlock__name_metrics *find_or_add(dlock__metrics *m, const char *name)
{
    bool found;
    size_t at = position(m, name, &found);
    dlock__name_metrics *e;
    if (found)
        return m->sorted[at];
    if (m->n >= m->max || strcmp(name, DLOCK_METRICS_OTHER) == 0 || !dlock__utf8_valid(name) ||
        !grow(m) || !(e = new_entry(name)))
        return NULL;
    memmove(m->sorted + at + 1, m->sorted + at, (m->n - at) * sizeof(dlock__name_metrics *));
    m->sorted[at] = e;
    m->n++;
    return e;
}

dlock__name_metrics *dlock__metrics_of(dlock__metrics *m, const char *name)
{
    dlock__name_metrics *e;
    pthread_mutex_lock(&m->mutex);
    e = find_or_add(m, name);
    if (!e) {
        e = m->other;
        m->other_used = true;
    }
    pthread_mutex_unlock(&m->mutex);
    return e;
}

/* The table's mutex is not part of what a reader reads: it may be taken
 * through a const pointer (dlock_client_metrics() takes a const client). */
void dlock__metrics_lock(const dlock__metrics *m)
{
    pthread_mutex_lock((pthread_mutex_t *)&m->mutex);
}

void dlock__metrics_unlock(const dlock__metrics *m)
{
    pthread_mutex_unlock((pthread_mutex_t *)&m->mutex);
}

size_t dlock__metrics_count(const dlock__metrics *m)
{
    return m->n + (m->other_used ? 1 : 0);
}

const dlock__name_metrics *dlock__metrics_at(const dlock__metrics *m, size_t i)
{
    return i < m->n ? m->sorted[i] : m->other;
}

void dlock__histogram_observe(dlock__histogram *h, int64_t ns)
{
    size_t b = 0;
    if (ns < 0)
        ns = 0;
    while (b < DLOCK__BOUNDS && ns > dlock__bucket_ns[b])
        b++;
    atomic_fetch_add(&h->count[b], 1);
    atomic_fetch_add(&h->sum_ns, ns);
}

void dlock__metrics_acquired(dlock__name_metrics *e, int rc, bool waited, int64_t took_ns)
{
    if (!e)
        return;
    if (rc == 0)
        atomic_fetch_add(&e->acquisitions, 1);
    else if (rc == DLOCK_EBUSY)
        atomic_fetch_add(&e->busy, 1);
    if (waited)
        atomic_fetch_add(&e->waits, 1);
    if (rc == 0 || rc == DLOCK_EBUSY)
        dlock__histogram_observe(&e->wait, took_ns);
}

void dlock__metrics_renewed(dlock__name_metrics *e, int rc, int64_t margin_ms)
{
    if (!e)
        return;
    if (rc < 0) {
        atomic_fetch_add(&e->renewal_failures, 1);
        return;
    }
    atomic_fetch_add(&e->renewals, 1);
    dlock__stats_lower(&e->min_margin_ms, margin_ms);
}

void dlock__metrics_lost(dlock__name_metrics *e)
{
    if (e)
        atomic_fetch_add(&e->losses, 1);
}

void dlock__metrics_handed(dlock__name_metrics *e)
{
    if (e)
        atomic_fetch_add(&e->handovers, 1);
}

void dlock__metrics_hold_ended(dlock__name_metrics *e, _Atomic int64_t *since_ns)
{
    int64_t since = atomic_exchange(since_ns, 0);
    if (e && since)
        dlock__histogram_observe(&e->hold, dlock__now_ns() - since);
}
