/* Shared holders (docs/shared.md): NAME holds a marker that is never a
 * token, so a mutex's scripts see a holder that is not them; the holders
 * are the sorted set `readers` with their owner records in `rowners`;
 * `queue` and `writer` are the exclusive acquirers waiting, which keep new
 * shared holders out. With several servers their fence is `epoch`, which
 * only fence write-backs raise (scripts.c). */
#include "kinds.h"

static void words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        dlock__words_keys(w, cl->aux, 5);
        dlock__words_arg(w, cl->client->n > 1 ? "1" : "0"); /* the fence is the epoch */
        break;
    case DLOCK__STEP_RELEASE:
    case DLOCK__STEP_CLEANUP:
        dlock__words_keys(w, cl->aux, 5);
        break;
    case DLOCK__STEP_EXTEND:
    case DLOCK__STEP_REPAIR:
        dlock__words_keys(w, cl->aux, 4); /* its readers and their records */
        break;
    case DLOCK__STEP_FENCE:
        dlock__words_keys(w, &cl->aux[4], 1);
        break;
    }
}

/* A mutex otherwise, so not with permits or fair. */
static int setup(dlock__claim *cl, dlock__lane *lane, const dlock_acquire_options *o)
{
    (void)cl;
    if (o->permits > 1 || o->fair) {
        dlock__set_error(lane, "a shared hold goes with neither permits > 1 nor fair");
        return DLOCK_EINVAL;
    }
    return 0;
}

const dlock__kind dlock__kind_shared = {
    .name = "shared lock",
    .type = "string",
    .acquire = DLOCK__SCRIPT_SHARED_ACQUIRE,
    .release = DLOCK__SCRIPT_SHARED_RELEASE,
    .extend = DLOCK__SCRIPT_SHARED_EXTEND,
    .status = DLOCK__SCRIPT_SHARED_STATUS,
    .aux = {"queue", "writer", "readers", "rowners", "epoch", NULL},
    .words = words,
    .setup = setup,
};
