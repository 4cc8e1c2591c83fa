/* The lock handle and the operations the waiting and renewal modules share. */
#ifndef DLOCK_LOCK_H
#define DLOCK_LOCK_H

#include "client.h"
#include "names.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct dlock_lock {
    dlock_client *client;
    dlock__keys keys;
    char token[DLOCK_TOKEN_LEN + 1];
    uint64_t fence;
    _Atomic int64_t ttl_ms;         /* of the last acquire or extend; 0 when adopted */
    _Atomic int64_t valid_until_ns; /* 0: not held */
    atomic_bool lost;               /* the renewal thread gave up on it */
    unsigned attempts;
    int64_t last_pttl_ms; /* PTTL that the last busy attempt reported */

    /* Renewal, guarded by the renewer's mutex. */
    bool auto_renew;
    bool renewing;                /* an extend is in flight */
    bool in_renewal_set;
    int64_t acquired_ns;
    int64_t renew_ttl_ms;         /* the TTL each renewal asks for */
    int64_t hold_until_ns;        /* INT64_MAX: no max_hold */
    bool hold_reached;            /* renewals stopped at hold_until_ns */
    int64_t next_renewal_ns;
    int last_renew_error;
    dlock_lost_fn on_lost;
    void *on_lost_arg;
    size_t heap_index;            /* place in the renewer's heap */
    int64_t heap_due_ns;          /* its key there: changed only with the mutex held */
};

/* Tally of one fan-out: who confirmed, who refused, who failed. */
typedef struct dlock__tally {
    size_t quorum;
    size_t confirmed; /* acquire: granted; release/extend: 1 */
    size_t refused;   /* acquire: held by another; release/extend: 0 */
    size_t repaired;  /* extend: 2 */
    uint64_t fence;   /* acquire: the largest fence granted */
    int64_t pttl;     /* acquire: the smallest PTTL of the refusals */
} dlock__tally;

/* Judges an acquire round that started at `start_ns`, from the replies of
 * the n nodes so far: fills *t (t->quorum set by the caller) and the end of
 * the validity, start + ttl - drift. Returns 0 when a majority granted and
 * that end is still ahead at `now_ns`, else DLOCK_EBUSY (the caller tells
 * busy from failed and late by the tally). */
int dlock__acquire_judge(dlock__tally *t, const dlock__node_result *results, size_t n,
                         int64_t ttl_ms, double drift_factor, int64_t start_ns, int64_t now_ns,
                         int64_t *valid_until_ns);

/* One attempt to acquire, on `lane`. On DLOCK_EBUSY, lock->last_pttl_ms says
 * how long the holder's key still lives (-1: no TTL). */
int dlock__lock_try(dlock_lock *lock, dlock__lane *lane, int64_t ttl_ms);

/* Extend on `lane`; sets the validity on success, clears it on
 * DLOCK_ENOTOWNER. */
int dlock__lock_extend(dlock_lock *lock, dlock__lane *lane, int64_t ttl_ms);

/* The same for locks[0..k) (k <= DLOCK__BATCH_MAX, all of one client) to
 * ttls[j], pipelined: one round trip per node for all of them. rcs[j] is
 * lock j's result. */
void dlock__locks_extend(dlock_lock *const *locks, size_t k, dlock__lane *lane,
                         const int64_t *ttls, int *rcs);

/* Release on `lane`; `publish` wakes waiters (cleanups do not). */
int dlock__lock_release(dlock_lock *lock, dlock__lane *lane, bool publish);

#endif
