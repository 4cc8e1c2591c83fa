/* The mutex: NAME is a string holding the holder's token (scripts.h: the
 * mutex's scripts, whose words every kind's start with). Its own keys are
 * the fair queue, which its acquire looks up when the lock is free (a free
 * lock with waiters is the head's), the waiting writers, to which a
 * waiting acquire adds itself when it finds the name held shared
 * (docs/shared.md), and the epoch, which its grant raises with several
 * servers: the shared holders' fence. With several servers its release
 * also records the fence it ends in `freed`, which the extend's repair
 * reads: a repair never brings our key back after our own release. */
#include "kinds.h"
#include "status_record.h"

#include <stdio.h>
#include <time.h>

/* The keys before the epoch (the last of aux): the queue, and for a
 * waiting acquire the writers. */
static size_t before_epoch(const dlock__kind *kind)
{
    size_t n = 0;
    while (kind->aux[n + 1])
        n++;
    return n;
}

static void words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    size_t n = before_epoch(cl->kind);
    const dlock_client *c = cl->client;
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        dlock__words_keys(w, cl->aux, n);
        /* A writer that waits: its grant leaves the waiting writers. */
        if (cl->params->writer)
            dlock__words_arg(w, "1");
        break;
    case DLOCK__STEP_RELEASE:
        dlock__words_keys(w, cl->aux, n);
        /* A lock taken here (an adopted one has no fence) records its
         * release where a late extend of its own could repair it. */
        if (c->n > 1 && cl->fence > 0) {
            dlock__words_keys(w, &cl->keys.freed, 1);
            dlock__words_number(w, cl->fence);
            dlock__words_number(w, (uint64_t)c->fence_ttl_ms);
        }
        break;
    case DLOCK__STEP_CLEANUP:
        dlock__words_keys(w, cl->aux, n);
        break;
    case DLOCK__STEP_EXTEND:
        break;
    case DLOCK__STEP_REPAIR:
        dlock__words_keys(w, &cl->keys.freed, 1);
        break;
    case DLOCK__STEP_FENCE:
        dlock__words_keys(w, &cl->aux[n], 1);
        break;
    }
}

/* A refusal {0, pttl, 1}: we wait among the writers now. */
static void answered(dlock__claim *cl, const dlock__tally *t)
{
    cl->params->writer |= t->writer;
}

/* A writer that waited in vain (busy, canceled) leaves the waiting
 * writers: the release takes its token out of them. */
static bool leaves(const dlock__claim *cl, int rc)
{
    return cl->params->writer && (rc == DLOCK_EBUSY || rc == DLOCK_ECANCELED);
}

/* A holder of a fair lock is a mutex holder: the status cannot tell. */
static bool found(const dlock_status *st, char *out, size_t len)
{
    if (st->limit > 1 || st->shared)
        return false;
    snprintf(out, len, "is a mutex or a fair lock");
    return true;
}

/* Its holder's host, pid and start (UTC), or a key without an owner
 * record; and when its key expires. */
static void holders(const dlock_status *st, char *out, size_t len)
{
    int n;
    if (st->holders) {
        time_t secs = (time_t)(st->holder.since_ms / 1000);
        char since[32];
        struct tm tm;
        gmtime_r(&secs, &tm);
        strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
        n = snprintf(out, len, "held by %s pid %ld since %s", st->holder.host, st->holder.pid,
                     since);
    } else {
        n = snprintf(out, len, "held by another client (no owner record)");
    }
    if (n < 0 || (size_t)n >= len)
        return;
    if (st->ttl_ms >= 0)
        snprintf(out + n, len - (size_t)n, ", expires in %.1f s", (double)st->ttl_ms / 1000);
    else
        snprintf(out + n, len - (size_t)n, ", never expires (no TTL)");
}

/* The two mutexes differ in their keys alone (and only one says what a
 * status shows). */
#define MUTEX_SCRIPTS_AND_HOOKS                                                                    \
    .name = "mutex", .type = "string", .acquire = DLOCK__SCRIPT_ACQUIRE,                           \
    .release = DLOCK__SCRIPT_RELEASE, .extend = DLOCK__SCRIPT_EXTEND,                              \
    .status = DLOCK__SCRIPT_STATUS, .words = words, .answered = answered, .leaves = leaves

const dlock__kind dlock__kind_mutex = {
    MUTEX_SCRIPTS_AND_HOOKS,
    .aux = {"queue", "writer", "epoch", NULL},
    .found = found,
    .holders = holders,
};

/* A mutex acquire that does not wait: the mutex without the writer set,
 * so that finding NAME held shared it is busy without keeping new shared
 * holders out for a lease (it will not try again). */
const dlock__kind dlock__kind_mutex_try = {
    MUTEX_SCRIPTS_AND_HOOKS,
    .aux = {"queue", "epoch", NULL},
};
