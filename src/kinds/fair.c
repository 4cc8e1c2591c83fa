/* The fair lock (docs/fair.md): NAME is the mutex's string (a holder is a
 * mutex holder: it extends and is looked at as one), and its waiters queue
 * (queue.c; the keys queue, presence and wake of helpers.lua). A release
 * wakes the head's process alone, or hands the head the lock and writes
 * its fence. One
 * server only (with several, each could queue the waiters in another
 * order, and the votes could split for ever), so it has no fence
 * write-back. */
#include "kinds.h"

#include <stdio.h>

static void words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        dlock__words_keys(w, cl->aux, 4);
        dlock__words_number(w, cl->params->lease_ms);
        dlock__queue_words_handover(cl, w);
        break;
    case DLOCK__STEP_RELEASE:
    case DLOCK__STEP_CLEANUP:
        dlock__words_keys(w, cl->aux, 4);
        break;
    case DLOCK__STEP_EXTEND: /* the mutex's */
    case DLOCK__STEP_REPAIR:
    case DLOCK__STEP_FENCE:
        break;
    }
}

static int setup(dlock__claim *cl, dlock__lane *lane, const dlock_acquire_options *o)
{
    if (o->permits > 1) {
        dlock__set_error(lane, "a fair lock has one holder: not with permits > 1");
        return DLOCK_EINVAL;
    }
    if (cl->client->n > 1) {
        dlock__set_error(lane,
                         "a fair lock takes one server: with %zu, each could queue the waiters "
                         "in another order, and the votes could split for ever (docs/redlock.md)",
                         cl->client->n);
        return DLOCK_EINVAL;
    }
    dlock__queue_setup(cl, o->lease_ms);
    return 0;
}

/* A waiter that did not get the lock leaves the queue now rather than
 * when its lease ends. */
static bool leaves(const dlock__claim *cl, int rc)
{
    (void)cl;
    (void)rc;
    return true;
}

/* The fair lock and the mutex that queued differ in their setup and name. */
#define FAIR_SCRIPTS_AND_HOOKS                                                                     \
    .type = "string", .acquire = DLOCK__SCRIPT_FAIR_ACQUIRE,                                       \
    .release = DLOCK__SCRIPT_FAIR_RELEASE, .extend = DLOCK__SCRIPT_EXTEND,                         \
    .status = DLOCK__SCRIPT_STATUS, .aux = {"queue", "presence", "wake", "fence", NULL},           \
    .words = words, .channel = dlock__queue_channel, .message = dlock__queue_message,              \
    .away_max_ms = dlock__queue_away_max_ms, .leaves = leaves

const dlock__kind dlock__kind_fair = {
    FAIR_SCRIPTS_AND_HOOKS,
    .name = "fair lock",
    .setup = setup,
};

const dlock__kind dlock__kind_mutex_queued = {
    FAIR_SCRIPTS_AND_HOOKS,
    .name = "mutex",
};
