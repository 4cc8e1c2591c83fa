/* The kinds of claim: which scripts each primitive sends (see dlock__kind
 * in kinds.h). A new primitive adds its table here and its scripts in
 * src/kinds/lua/ (docs/architecture.md). */
#include "kinds.h"

const dlock__kind dlock__kind_mutex = {
    .name = "mutex",
    .acquire = DLOCK__SCRIPT_ACQUIRE,
    .release = DLOCK__SCRIPT_RELEASE,
    .extend = DLOCK__SCRIPT_EXTEND,
    .status = DLOCK__SCRIPT_STATUS,
    /* The acquire looks the fair queue up (a free lock with waiters is the
     * head's) and, finding NAME held shared, marks its wait in the set
     * `writer`, from which its grant takes it out (mutex_acquire.lua). */
    .aux = {"queue", "writer", NULL},
    .limited = false,
    .extend_aux = 0,
    .epoch = true,
    .freed = true,
};

/* A mutex acquire that does not wait: the mutex without the writer set,
 * so that finding NAME held shared it is busy without keeping new shared
 * holders out for a lease (it will not try again). */
const dlock__kind dlock__kind_mutex_try = {
    .name = "mutex",
    .acquire = DLOCK__SCRIPT_ACQUIRE,
    .release = DLOCK__SCRIPT_RELEASE,
    .extend = DLOCK__SCRIPT_EXTEND,
    .status = DLOCK__SCRIPT_STATUS,
    .aux = {"queue", NULL},
    .limited = false,
    .extend_aux = 0,
    .epoch = true,
    .freed = true,
};

/* The counting semaphore: NAME is a sorted set of permits
 * (sem_helpers.lua). */
const dlock__kind dlock__kind_semaphore = {
    .name = "semaphore",
    .acquire = DLOCK__SCRIPT_SEM_ACQUIRE,
    .release = DLOCK__SCRIPT_SEM_RELEASE,
    .extend = DLOCK__SCRIPT_SEM_EXTEND,
    .status = DLOCK__SCRIPT_SEM_STATUS,
    .aux = {"limit", "slots", "owners", "fences", NULL},
    .limited = true,
    .extend_aux = 3, /* limit, slots, owners: they live as long as a permit */
};

/* The fair lock: NAME is the mutex's string, its waiters queue in `queue`
 * with their presence leases in `presence` and the channel suffix of
 * their process in `wake` (fair_helpers.lua); the release, which may hand
 * the lock to the head, writes the head's fence. The limit is the
 * presence lease in ms. A holder extends and is looked at as a mutex. */
const dlock__kind dlock__kind_fair = {
    .name = "fair lock",
    .acquire = DLOCK__SCRIPT_FAIR_ACQUIRE,
    .release = DLOCK__SCRIPT_FAIR_RELEASE,
    .extend = DLOCK__SCRIPT_EXTEND,
    .status = DLOCK__SCRIPT_STATUS,
    .aux = {"queue", "presence", "wake", "fence", NULL},
    .limited = true,
    .queued = true,
    .extend_aux = 0, /* the mutex's extend */
    .epoch = true,
};

/* Shared holders: NAME holds a marker, the holders are the sorted set
 * `readers` with their owner records in `rowners`; `queue` and `writer`
 * are the exclusive acquirers waiting, which keep new shared holders out;
 * with several servers their fence is `epoch`, which only fence
 * write-backs raise (shared_acquire.lua). The limit is 1 with several
 * servers. */
const dlock__kind dlock__kind_shared = {
    .name = "shared lock",
    .acquire = DLOCK__SCRIPT_SHARED_ACQUIRE,
    .release = DLOCK__SCRIPT_SHARED_RELEASE,
    .extend = DLOCK__SCRIPT_SHARED_EXTEND,
    .status = DLOCK__SCRIPT_SHARED_STATUS,
    .aux = {"queue", "writer", "readers", "rowners", "epoch", NULL},
    .limited = true,
    .extend_aux = 4, /* its readers and their records come after queue and writer */
    .epoch = true,
};
