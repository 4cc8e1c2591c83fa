/* One clock for deadlines and validity: CLOCK_BOOTTIME is monotonic and,
 * unlike CLOCK_MONOTONIC, keeps counting while the machine is suspended. */
#ifndef DLOCK_CLOCK_H
#define DLOCK_CLOCK_H

#include "dlock.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define DLOCK__NS_PER_MS 1000000LL

static inline int64_t dlock__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Milliseconds from now until `deadline_ns`, rounded up, at least 0: a
 * poll() timeout that never wakes before the deadline. */
static inline int dlock__ms_until(int64_t deadline_ns, int64_t now_ns)
{
    int64_t left = deadline_ns - now_ns;
    if (left <= 0)
        return 0;
    left = (left + DLOCK__NS_PER_MS - 1) / DLOCK__NS_PER_MS;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* A duration of the API: from 0 to DLOCK_DURATION_MAX_MS, so that it fits
 * in nanoseconds with room to spare. */
static inline bool dlock__duration_ok(int64_t ms)
{
    return ms >= 0 && ms <= DLOCK_DURATION_MAX_MS;
}

#endif
