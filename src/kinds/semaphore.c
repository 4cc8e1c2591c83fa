/* The counting semaphore (docs/semaphores.md): NAME is a sorted set of at
 * most `permits` permits, with its own keys limit, slots, owners and
 * fences (sem_helpers.lua). A waiter queues (queue.c): the free permits are
 * the first waiters', and a release hands a permit to the one it gives it
 * to, or tells it to try.
 * One server only: with several, N holders can each hold a different
 * majority (docs/redlock.md). */
#include "kinds.h"
#include "status_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        dlock__words_keys(w, cl->aux, 7);
        dlock__words_number(w, cl->params->permits);
        if (cl->params->lease_ms) { /* it waits: refused, it queues */
            dlock__words_number(w, cl->params->lease_ms);
            dlock__queue_words_handover(cl, w);
        }
        break;
    case DLOCK__STEP_RELEASE:
    case DLOCK__STEP_CLEANUP:
        dlock__words_keys(w, cl->aux, 7);
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
    if (o->wait_ms)
        dlock__queue_setup(cl, o->lease_ms);
    return 0;
}

/* A waiter that did not get a permit leaves the queue now rather than
 * when its lease ends. */
static bool leaves(const dlock__claim *cl, int rc)
{
    (void)rc;
    return cl->params->lease_ms != 0;
}

static void describe(const dlock__claim *cl, char *out, size_t len)
{
    snprintf(out, len, "a semaphore of %u permits", cl->params->permits);
}

static bool found(const dlock_status *st, char *out, size_t len)
{
    if (st->limit <= 1)
        return false;
    snprintf(out, len, "is a semaphore of %u permits", st->limit);
    return true;
}

static void holders(const dlock_status *st, char *out, size_t len)
{
    snprintf(out, len, "%zu of its %u permits held, the first to expire in %.1f s", st->holders,
             st->limit, (double)st->ttl_ms / 1000);
}

/* A name whose key is a sorted set is a semaphore's. */
static bool reads(const char *type, bool owned)
{
    (void)owned;
    return strcmp(type, "zset") == 0;
}

/* One permit of the status reply: {record or false, PTTL, slot, fence}.
 * Returns 0 or DLOCK_EPROTO. */
static int read_permit(dlock__owner *owner, dlock_holder *h, dlock__reply *const *e)
{
    if (e[1]->type != DLOCK__REPLY_INTEGER || e[2]->type != DLOCK__REPLY_INTEGER ||
        e[2]->integer < 0 || e[2]->integer >= DLOCK_PERMITS_MAX ||
        e[3]->type != DLOCK__REPLY_STRING)
        return DLOCK_EPROTO;
    if (e[0]->type != DLOCK__REPLY_STRING || dlock__owner_parse(owner, e[0]->str) < 0)
        memset(owner, 0, sizeof(*owner)); /* a permit without its record */
    h->host = owner->host;
    h->pid = owner->pid;
    h->since_ms = owner->since_ms;
    h->ttl_ms = e[1]->integer;
    h->slot = (unsigned)e[2]->integer;
    h->fence = strtoull(e[3]->str, NULL, 10);
    return 0;
}

/* The status reply: {limit or false, {permit, permit...}}, each permit
 * four elements, by slot. */
static int read_status(dlock_status *out, const dlock__reply *r)
{
    const dlock__reply *limit, *list;
    size_t k;
    if (r->type == DLOCK__REPLY_ERROR)
        return dlock__server_error_code(r);
    if (r->type != DLOCK__REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != DLOCK__REPLY_ARRAY || r->element[1]->elements % 4 != 0)
        return DLOCK_EPROTO;
    limit = r->element[0];
    list = r->element[1];
    k = list->elements / 4;
    out->limit = limit->type == DLOCK__REPLY_STRING ? (unsigned)strtoul(limit->str, NULL, 10) : 1;
    out->permit_owners = calloc(k ? k : 1, sizeof(*out->permit_owners));
    out->permits = calloc(k ? k : 1, sizeof(*out->permits));
    if (!out->permit_owners || !out->permits)
        return DLOCK_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        dlock_holder *h = &out->permits[i];
        if (read_permit(&out->permit_owners[i], h, &list->element[i * 4]) < 0)
            return DLOCK_EPROTO;
        if (i == 0 || h->ttl_ms < out->ttl_ms)
            out->ttl_ms = h->ttl_ms;
        out->fence = h->fence > out->fence ? h->fence : out->fence;
    }
    out->holders = k;
    out->held = k > 0;
    out->limit = k > 0 ? out->limit : 1;
    return 0;
}

const dlock__kind dlock__kind_semaphore = {
    .name = "semaphore",
    .type = "zset",
    .acquire = DLOCK__SCRIPT_SEM_ACQUIRE,
    .release = DLOCK__SCRIPT_SEM_RELEASE,
    .extend = DLOCK__SCRIPT_SEM_EXTEND,
    .status = DLOCK__SCRIPT_SEM_STATUS,
    .aux = {"limit", "slots", "owners", "fences", "waiters", "waiter-leases", "waiter-wake", NULL},
    .words = words,
    .channel = dlock__queue_channel,
    .message = dlock__queue_message,
    .away_max_ms = dlock__queue_away_max_ms,
    .setup = setup,
    .leaves = leaves,
    .adopted_on = DLOCK_EWRONGTYPE,
    .no_owner_key = true, /* its owners and fences are its own keys */
    .no_fence_key = true,
    .describe = describe,
    .found = found,
    .holders = holders,
    .reads = reads,
    .read_status = read_status,
};
