/* Shared holders (docs/shared.md): NAME holds a marker that is never a
 * token, so a mutex's scripts see a holder that is not them; the holders
 * are the sorted set `readers` with their owner records in `rowners`;
 * `writer`, the exclusive acquirers waiting, and a fair queue's mark in the
 * fence key keep new shared holders out. With several servers their fence
 * is `epoch`, which only fence write-backs raise (fence_max.lua). */
#include "kinds.h"
#include "status_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        dlock__words_keys(w, cl->aux, 4);
        dlock__words_arg(w, cl->client->n > 1 ? "1" : "0"); /* the fence is the epoch */
        break;
    case DLOCK__STEP_RELEASE:
    case DLOCK__STEP_CLEANUP:
        dlock__words_keys(w, &cl->aux[1], 2); /* its readers and their records */
        dlock__words_keys(w, cl->aux, 1);     /* the writers, one of whom the last wakes */
        break;
    case DLOCK__STEP_EXTEND:
    case DLOCK__STEP_REPAIR:
        dlock__words_keys(w, &cl->aux[1], 2);
        break;
    case DLOCK__STEP_FENCE:
        dlock__words_keys(w, &cl->aux[3], 1);
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

static bool found(const dlock_status *st, char *out, size_t len)
{
    if (!st->shared)
        return false;
    snprintf(out, len, "is held shared");
    return true;
}

/* How many, one of them, and when the last one's hold ends. */
static void holders(const dlock_status *st, char *out, size_t len)
{
    const dlock_holder *h = &st->permits[0];
    snprintf(out, len, "held shared by %zu holder%s (%s%s pid %ld), the last to expire in %.1f s",
             st->holders, st->holders == 1 ? "" : "s", st->holders == 1 ? "" : "one: ", h->host,
             h->pid, (double)st->ttl_ms / 1000);
}

/* A held name without an owner record may be held shared. */
static bool reads(const char *type, bool owned)
{
    return strcmp(type, "string") == 0 && !owned;
}

/* The status reply: {owner record or false, PTTL, ...}. Each holder has
 * the name's fence. */
static int read_status(dlock_status *out, const dlock__reply *r)
{
    size_t k;
    if (r->type == DLOCK__REPLY_ERROR)
        return dlock__server_error_code(r);
    if (r->type != DLOCK__REPLY_ARRAY || r->elements % 2 != 0)
        return DLOCK_EPROTO;
    k = r->elements / 2;
    if (k == 0)
        return 0;
    out->permit_owners = calloc(k, sizeof(*out->permit_owners));
    out->permits = calloc(k, sizeof(*out->permits));
    if (!out->permit_owners || !out->permits)
        return DLOCK_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        const dlock__reply *record = r->element[i * 2], *pttl = r->element[i * 2 + 1];
        dlock__owner *owner = &out->permit_owners[i];
        if (pttl->type != DLOCK__REPLY_INTEGER)
            return DLOCK_EPROTO;
        if (record->type != DLOCK__REPLY_STRING || dlock__owner_parse(owner, record->str) < 0)
            memset(owner, 0, sizeof(*owner));
        out->permits[i] = (dlock_holder){.host = owner->host, .pid = owner->pid,
                                         .since_ms = owner->since_ms, .ttl_ms = pttl->integer,
                                         .fence = out->fence};
    }
    out->holders = k;
    out->limit = 1;
    out->shared = true;
    return 0;
}

const dlock__kind dlock__kind_shared = {
    .name = "shared lock",
    .type = "string",
    .acquire = DLOCK__SCRIPT_SHARED_ACQUIRE,
    .release = DLOCK__SCRIPT_SHARED_RELEASE,
    .extend = DLOCK__SCRIPT_SHARED_EXTEND,
    .status = DLOCK__SCRIPT_SHARED_STATUS,
    .aux = {"writer", "readers", "rowners", "epoch", NULL},
    .words = words,
    .message = dlock__writers_message,
    .setup = setup,
    .adopted_on = DLOCK_ENOTOWNER,
    .no_owner_key = true, /* the holders' records are in rowners */
    .found = found,
    .holders = holders,
    .reads = reads,
    .read_status = read_status,
};
