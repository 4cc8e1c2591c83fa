/* The lock handle of the public API: a claim (the attempt layer's view of
 * a name and a token) and, when auto-renewed, its entry in the renewal
 * set. */
#ifndef DLOCK_LOCK_H
#define DLOCK_LOCK_H

#include "attempt.h"
#include "kinds.h"
#include "renew.h"

struct dlock_lock {
    dlock__claim claim;
    struct dlock__kind_params params; /* the claim's kind's own */
    bool auto_renew;
    dlock__renewal *renewal; /* while in the renewal set */
    bool adopted;            /* its kind is not known: a mutex until the mutex's answer says not */
};

#endif
