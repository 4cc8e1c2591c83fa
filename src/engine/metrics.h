/* The client's counters per lock name, for dlock_client_metrics(): what
 * stats.h counts for the whole client, by name, with the wait and hold
 * times as histograms. A name's entry is found once per acquire (on the
 * caller's thread) and kept in its claim; the renewal thread bumps it
 * through that pointer, so every counter is atomic, and entries live until
 * the client is closed. At most `max` names get an entry of their own: the
 * others, and names that are not valid UTF-8 (a label value must be), share
 * the overflow entry, DLOCK_METRICS_OTHER. */
#ifndef DLOCK_METRICS_H
#define DLOCK_METRICS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Upper bounds of the histograms' buckets, 1 ms to 10 min, then +Inf. */
#define DLOCK__BOUNDS 13
extern const int64_t dlock__bucket_ns[DLOCK__BOUNDS];
extern const char *const dlock__bucket_text[DLOCK__BOUNDS]; /* "0.001" .. "600" */

typedef struct dlock__histogram {
    atomic_uint_fast64_t count[DLOCK__BOUNDS + 1]; /* per bucket, not cumulative; last: +Inf */
    atomic_int_fast64_t sum_ns;
} dlock__histogram;

typedef struct dlock__name_metrics {
    atomic_uint_fast64_t acquisitions, busy, waits, losses, renewals, renewal_failures, handovers;
    atomic_int_fast64_t min_margin_ms; /* INT64_MAX until a renewal succeeded */
    dlock__histogram wait, hold;
    char name[]; /* the label value */
} dlock__name_metrics;

typedef struct dlock__metrics {
    pthread_mutex_t mutex; /* over the table, not the counters */
    size_t max;            /* names with an entry of their own, at most */
    size_t n, cap;
    dlock__name_metrics **sorted; /* by name, for lookups and for the output */
    dlock__name_metrics *other;   /* the overflow */
    bool other_used;
} dlock__metrics;

/* An empty table for up to `max` names. Returns 0 or DLOCK_ENOMEM. */
int dlock__metrics_init(dlock__metrics *m, size_t max);
void dlock__metrics_destroy(dlock__metrics *m);

/* The entry of `name`, made if there is room (else, or without memory, the
 * overflow's). Never NULL after a successful init. */
dlock__name_metrics *dlock__metrics_of(dlock__metrics *m, const char *name);

/* For reading the table: between lock and unlock, entries 0 .. count-1 in
 * name order, the overflow last once a name went there. The lock only
 * keeps new names out: counters go on changing. */
void dlock__metrics_lock(const dlock__metrics *m);
void dlock__metrics_unlock(const dlock__metrics *m);
size_t dlock__metrics_count(const dlock__metrics *m);
const dlock__name_metrics *dlock__metrics_at(const dlock__metrics *m, size_t i);

/* What happened to a name; a NULL entry (a claim not counted) is ignored. */
/* An acquire call as dlock__stats_acquired() counts it; the wait time is
 * observed for calls that got the lock or ended busy. */
void dlock__metrics_acquired(dlock__name_metrics *e, int rc, bool waited, int64_t took_ns);
/* A renewal that returned rc; margin_ms: what was left of the validity. */
void dlock__metrics_renewed(dlock__name_metrics *e, int rc, int64_t margin_ms);
void dlock__metrics_lost(dlock__name_metrics *e);
/* A release handed our waiter the lock or a permit. */
void dlock__metrics_handed(dlock__name_metrics *e);
/* A hold that began at *since_ns (0: none, or already observed) ended now:
 * observed once, however many threads say so. */
void dlock__metrics_hold_ended(dlock__name_metrics *e, _Atomic int64_t *since_ns);

void dlock__histogram_observe(dlock__histogram *h, int64_t ns);

#endif
