/* The renewal thread: one per client, started with the first auto-renewed
 * lock, extending each at ttl/3 on connections of its own. It owns the
 * renewal state of every lock it renews; the claim is shared with the lock
 * (its validity fields are atomic). */
#ifndef DLOCK_RENEW_H
#define DLOCK_RENEW_H

#include "attempt.h"

typedef struct dlock__renewal dlock__renewal;

struct dlock__renew_params {
    int64_t max_hold_ms; /* 0: no limit */
    dlock_lost_fn on_lost;
    void *on_lost_arg;
    dlock_lock *lock; /* what on_lost is called with */
};

/* Puts a freshly acquired claim in the renewal set, starting the thread if
 * needed: it renews for the TTL of that acquisition. *out is the entry, for
 * dlock__renew_remove(). Returns 0, DLOCK_ENOMEM or DLOCK_ESYSTEM. */
int dlock__renew_add(dlock__renewal **out, dlock__claim *cl, const struct dlock__renew_params *p);

/* Takes the entry out of the renewal set, waits for an extend of it that is
 * in flight, and frees it. NULL is ignored. */
void dlock__renew_remove(dlock__renewal *r);

/* Stops and joins the thread (at client close). */
void dlock__renew_stop(dlock_client *c);

#endif
