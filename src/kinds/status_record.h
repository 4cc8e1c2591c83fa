/* What dlock_status_query() found (api/status.c fills it): the majority's
 * view from the mutex's status, and the holders a kind's own status
 * script read (each kind's read_status()). */
#ifndef DLOCK_STATUS_RECORD_H
#define DLOCK_STATUS_RECORD_H

#include "dlock.h"
#include "fanout.h"
#include "owner.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dlock_status {
    bool held;
    int64_t ttl_ms;
    uint64_t fence;
    size_t holders;
    dlock__owner owner;
    dlock_holder holder; /* points into owner */
    unsigned nodes_answered;
    unsigned nodes_held;
    size_t n;
    dlock_node_status nodes[DLOCK__NODES_MAX];
    char errors[DLOCK__NODES_MAX][256]; /* what nodes[i].error points to */
    unsigned limit;                     /* a semaphore's permits, else 1 */
    dlock__owner *permit_owners;        /* a semaphore: one per live permit */
    dlock_holder *permits;              /* points into permit_owners; NULL: a mutex */
    bool shared;                        /* held shared: permits are the shared holders */
};

#endif
