/* The mutex: NAME is a string holding the holder's token (scripts.h: the
 * mutex's scripts, whose words every kind's start with). Its scripts name
 * the keys of no other kind until the name is used by one: a fair queue
 * leaves its mark in the fence key, which the acquire reads anyway
 * (docs/fair.md), and an acquire that waits and finds the name held shared
 * (docs/shared.md) asks again naming the waiting writers, joins them, and
 * names them until it is done. With several servers its grant raises the
 * epoch, the shared holders' fence, and its release records the fence it
 * ends in `freed`, which the extend's repair reads: a repair never brings
 * our key back after our own release. */
#include "kinds.h"
#include "status_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The waiting writers, which the mutex that does not wait has not: then
 * its one auxiliary key is the epoch. */
static bool has_writers(const dlock__kind *kind)
{
    return kind->aux[1] != NULL;
}

/* A Redlock acquire's proposal for the token: the client's clock in µs,
 * PROPOSAL_LEAD_US ahead so that it is above the clocks of servers a
 * little ahead of ours, where it is granted (helpers.lua, next_fence()). */
#define PROPOSAL_LEAD_US 50000

static uint64_t proposal(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000 + PROPOSAL_LEAD_US;
}

static void words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    bool writers = has_writers(cl->kind);
    const dlock_client *c = cl->client;
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        if (writers && cl->params->held_shared)
            dlock__words_keys(w, cl->aux, 1);
        /* A writer that waits: its grant leaves the waiting writers. */
        if (cl->params->writer || c->n > 1)
            dlock__words_arg(w, cl->params->writer ? "1" : "0");
        /* Redlock: a token the servers can agree on, and the epoch the
         * write-back would raise, which a grant says is there
         * (mutex_acquire.lua). */
        if (c->n > 1) {
            dlock__words_number(w, proposal());
            dlock__words_keys(w, &cl->aux[writers ? 1 : 0], 1);
        }
        break;
    case DLOCK__STEP_RELEASE:
        /* With one server, a fair queue's mark in the fence key makes the
         * release leave the lock to the queue's release (answer 2). */
        if (c->n == 1) {
            dlock__words_keys(w, &cl->keys.fence, 1);
            dlock__words_arg(w, "queue");
        }
        /* A writer that gives up leaves them. */
        if (cl->params->writer)
            dlock__words_keys(w, cl->aux, 1);
        /* A lock taken here (an adopted one has no fence) records its
         * release where a late extend of its own could repair it: once
         * such an extend went out (none can run after the release
         * otherwise). */
        if (c->n > 1 && cl->fence > 0 && atomic_load(&cl->repair_sent)) {
            dlock__words_keys(w, &cl->keys.freed, 1);
            dlock__words_number(w, cl->fence);
            dlock__words_number(w, (uint64_t)c->fence_ttl_ms);
        }
        break;
    case DLOCK__STEP_CLEANUP:
        if (cl->params->writer)
            dlock__words_keys(w, cl->aux, 1);
        break;
    case DLOCK__STEP_EXTEND:
        break;
    case DLOCK__STEP_REPAIR:
        dlock__words_keys(w, &cl->keys.freed, 1);
        break;
    case DLOCK__STEP_FENCE:
        dlock__words_keys(w, &cl->aux[writers ? 1 : 0], 1);
        dlock__words_arg(w, "existing"); /* the epoch is the shared holders' */
        break;
    }
}

/* A refusal {0, pttl, 2}: the name is held shared, and a waiter asks again
 * at once, naming the waiting writers; {0, pttl, 1}: it waits among them.
 * Any other refusal of a waiter on one server (an exclusive holder, or a
 * fair queue's mark): it queues, as a fair waiter (docs/fair.md), so that
 * a release hands the lock to one waiter instead of waking them all. */
static void answered(dlock__claim *cl, dlock__lane *lane, const dlock__tally *t)
{
    if (!has_writers(cl->kind) || t->yes > 0 || t->no == 0)
        return;
    if (t->shared && !cl->params->held_shared) {
        cl->params->held_shared = true;
        cl->last_pttl_ms = 0;
    }
    cl->params->writer |= t->writer;
    if (!t->shared && !cl->params->writer && cl->client->n == 1 &&
        dlock__claim_set_kind(cl, lane, cl->kind->queued) == 0)
        cl->last_pttl_ms = 0; /* join the queue now */
}

/* A mutex that waits on one server may queue: its presence lease is the
 * fair lock's default. A client whose last wait queued for this name still
 * listens on its channel there (the holder of a queued name usually comes
 * back): it queues from its first try, as that queue's next waiter. */
static int setup(dlock__claim *cl, dlock__lane *lane, const dlock_acquire_options *o)
{
    const dlock_client *c = cl->client;
    char *own;
    (void)o;
    cl->params->lease_ms = DLOCK_LEASE_DEFAULT_MS;
    if (!has_writers(cl->kind) || c->n != 1 || !c->kept_channel)
        return 0;
    own = dlock__queue_channel(cl);
    if (own && strcmp(own, c->kept_channel) == 0)
        dlock__claim_set_kind(cl, lane, &dlock__kind_mutex_queued);
    free(own);
    return 0;
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
    .status = DLOCK__SCRIPT_STATUS, .words = words, .answered = answered, .leaves = leaves,        \
    .queued = &dlock__kind_mutex_queued, .setup = setup

const dlock__kind dlock__kind_mutex = {
    MUTEX_SCRIPTS_AND_HOOKS,
    .aux = {"writer", "epoch", NULL},
    .message = dlock__writers_message,
    .found = found,
    .holders = holders,
};

/* A mutex acquire that does not wait: the mutex without the writer set,
 * so that finding NAME held shared it is busy without keeping new shared
 * holders out for a lease (it will not try again). */
const dlock__kind dlock__kind_mutex_try = {
    MUTEX_SCRIPTS_AND_HOOKS,
    .aux = {"epoch", NULL},
};
