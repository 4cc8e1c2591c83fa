/* The client's counters (dlock_client_stats): bumped by the engine, on the
 * caller's thread and on the renewal thread, so every one is atomic. */
#ifndef DLOCK_STATS_H
#define DLOCK_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* One server's failures, as the fan-out saw them on any lane. */
typedef struct dlock__node_counters {
    atomic_uint_fast64_t errors, timeouts;
} dlock__node_counters;

typedef struct dlock__stats {
    atomic_uint_fast64_t acquisitions, busy, waits, renewals, losses;
    atomic_int_fast64_t wait_ns;
    atomic_int_fast64_t min_margin_ms; /* INT64_MAX until a renewal succeeded */
} dlock__stats;

void dlock__stats_init(dlock__stats *s);

/* An acquire call that returned `rc` after `took_ns`; `waited`: it found
 * the lock busy and waited (not a retry after a server that failed). */
void dlock__stats_acquired(dlock__stats *s, int rc, bool waited, int64_t took_ns);

/* A renewal succeeded with `margin_ms` of the old validity left. */
void dlock__stats_renewed(dlock__stats *s, int64_t margin_ms);

void dlock__stats_lost(dlock__stats *s);

/* Lowers *least to `value` if that is less, from any thread. */
void dlock__stats_lower(atomic_int_fast64_t *least, int64_t value);

/* A call to a server ended with `status` (a negative code: a failure) or an
 * error reply. NULL counters: not counted. */
void dlock__stats_node(dlock__node_counters *n, int status, int error_reply);

#endif
