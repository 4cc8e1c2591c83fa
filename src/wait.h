/* Waiting for a busy lock: wake-on-release through pub/sub, jittered
 * backoff bounded by the holder's PTTL, deadlines and cancellation. */
#ifndef DLOCK_WAIT_H
#define DLOCK_WAIT_H

#include "lock.h"

/* Attempts until the lock is ours, opts->wait_ms passed (DLOCK_WAIT_FOREVER:
 * no limit), an error that is not retried, or cancellation. */
int dlock__wait_acquire(dlock_lock *lock, int64_t ttl_ms, const dlock_acquire_options *opts);

#endif
