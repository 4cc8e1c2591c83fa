/* The counting semaphore (docs/semaphores.md): NAME is a sorted set of at
 * most `permits` permits, with its own keys limit, slots, owners and
 * fences (scripts.c). One server only: with several, N holders can each
 * hold a different majority (docs/redlock.md). */
#include "kinds.h"

#include <stdio.h>

static void words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        dlock__words_keys(w, cl->aux, 4);
        dlock__words_number(w, cl->params->permits);
        break;
    case DLOCK__STEP_RELEASE:
    case DLOCK__STEP_CLEANUP:
        dlock__words_keys(w, cl->aux, 4);
        break;
    case DLOCK__STEP_EXTEND:
    case DLOCK__STEP_REPAIR:
        /* limit, slots and owners, which live as long as a permit: a key
         * that does not exist makes a cluster answer TRYAGAIN while the
         * slot migrates, and a renewal must go through (ASK) then. */
        dlock__words_keys(w, cl->aux, 3);
        break;
    case DLOCK__STEP_FENCE: /* one server: no write-back */
        break;
    }
}

static int setup(dlock__claim *cl, dlock__lane *lane, const dlock_acquire_options *o)
{
    if (o->permits > DLOCK_PERMITS_MAX) {
        dlock__set_error(lane, "permits must be from 1 to %d, not %u", DLOCK_PERMITS_MAX,
                         o->permits);
        return DLOCK_EINVAL;
    }
    if (cl->client->n > 1) {
        dlock__set_error(lane,
                         "a semaphore (permits > 1) takes one server: with %zu, a majority "
                         "cannot bound its holders (N holders can each hold a different "
                         "majority; docs/redlock.md)",
                         cl->client->n);
        return DLOCK_EINVAL;
    }
    cl->params->permits = o->permits;
    return 0;
}

const dlock__kind dlock__kind_semaphore = {
    .name = "semaphore",
    .type = "zset",
    .acquire = DLOCK__SCRIPT_SEM_ACQUIRE,
    .release = DLOCK__SCRIPT_SEM_RELEASE,
    .extend = DLOCK__SCRIPT_SEM_EXTEND,
    .status = DLOCK__SCRIPT_SEM_STATUS,
    .aux = {"limit", "slots", "owners", "fences", NULL},
    .words = words,
    .setup = setup,
};
