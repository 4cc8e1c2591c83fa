/* Waiting for a busy lock: try first, then listen (wake-on-release through
 * pub/sub), jittered backoff bounded by the holder's PTTL, deadlines and
 * cancellation. Over the attempt layer. */
#ifndef DLOCK_WAIT_H
#define DLOCK_WAIT_H

#include "attempt.h"

/* Attempts until the claim is granted, opts->wait_ms passed
 * (DLOCK_WAIT_FOREVER: no limit), an error that is not retried, or
 * cancellation. */
int dlock__wait_acquire(dlock__claim *cl, int64_t ttl_ms, const dlock_acquire_options *opts);

#endif
