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

/* Listens on `channel` (the client's subscribers) and calls check(ctx) once
 * a majority listens (or no majority can), then after every message there
 * and at least every `period_ms`, until it returns nonzero; returns that,
 * or DLOCK_ECANCELED (dlock_client_cancel()). For watching a lock. */
int dlock__listen(dlock_client *c, const char *channel, int64_t period_ms,
                  int (*check)(void *ctx), void *ctx);

#endif
