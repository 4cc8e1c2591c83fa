/* The fair lock (docs/fair.md): NAME is the mutex's string (a holder is a
 * mutex holder: it extends and is looked at as one), and its waiters queue
 * in `queue`, each with a presence lease in `presence` and the channel
 * suffix of its process in `wake` (fair_helpers.lua). A release wakes the head's
 * process alone, or hands the head the lock and writes its fence. One
 * server only (with several, each could queue the waiters in another
 * order, and the votes could split for ever), so it has no fence
 * write-back. */
#include "kinds.h"
#include "token.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEXT_PREFIX "next:" /* a release's wake-up of the head: "next:" + its token */
/* A release that handed the head the lock: "grant:TOKEN:FENCE:LEASE_END" */
#define GRANT_PREFIX "grant:"

static void words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    const dlock_client *c = cl->client;
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        dlock__words_keys(w, cl->aux, 4);
        dlock__words_number(w, cl->params->lease_ms);
        /* The release before us may hand us the lock, unless our grant
         * must pass the restart check or WAIT: we take it ourselves then. */
        if (!c->replicas && !c->restart_delay_ms)
            dlock__words_arg(w, "1");
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

/* A waiter listens on its process's channel: the name's channel, ":",
 * then the host and pid of its owner record, where a release wakes the
 * head's process alone (fair_release.lua). malloc'ed, or NULL. */
static char *channel(const dlock__claim *cl)
{
    const dlock_client *c = cl->client;
    size_t len = strlen(cl->keys.channel) + strlen(c->host) + 32;
    char *channel = malloc(len);
    if (channel)
        snprintf(channel, len, "%s:%s:%ld", cl->keys.channel, c->host,
                 (long)dlock__token_pool_pid(c->tokens));
    return channel;
}

static bool has_prefix(const char *msg, size_t len, const char *prefix)
{
    return len >= strlen(prefix) && memcmp(msg, prefix, strlen(prefix)) == 0;
}

/* The rest of a "grant:" message for our token: its fence and lease end,
 * as "FENCE:LEASE_END" in decimal, nothing else. */
static bool read_grant(const char *rest, size_t len, dlock__handover *h)
{
    char text[48], *end;
    unsigned long long fence;
    long long lease_end;
    if (len == 0 || len >= sizeof(text) || !isdigit((unsigned char)rest[0]))
        return false;
    memcpy(text, rest, len);
    text[len] = '\0';
    errno = 0;
    fence = strtoull(text, &end, 10);
    if (errno != 0 || *end != ':' || !isdigit((unsigned char)end[1]))
        return false;
    lease_end = strtoll(end + 1, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    h->fence = fence;
    h->lease_end_ms = lease_end;
    return true;
}

/* A waiter acts on the wake-up of its own turn, on the hand-over of the
 * lock to it, and on a plain release (a token: a mutex holder's on a
 * queued name); the others' turns are not its business. */
static enum dlock__wake message(const dlock__claim *cl, const char *msg, size_t len,
                                dlock__handover *h)
{
    bool next = has_prefix(msg, len, NEXT_PREFIX), grant = has_prefix(msg, len, GRANT_PREFIX);
    size_t token_len = strlen(cl->token), skip;
    if (!next && !grant)
        return DLOCK__WAKE;
    skip = strlen(next ? NEXT_PREFIX : GRANT_PREFIX);
    if (len < skip + token_len || memcmp(msg + skip, cl->token, token_len) != 0)
        return DLOCK__WAKE_NOT;
    if (next)
        return len == skip + token_len ? DLOCK__WAKE : DLOCK__WAKE_NOT;
    skip += token_len;
    h->lease_ms = cl->params->lease_ms;
    if (len > skip && msg[skip] == ':' && read_grant(msg + skip + 1, len - skip - 1, h))
        return DLOCK__WAKE_HANDED;
    return DLOCK__WAKE;
}

/* A waiter that cannot reach its server tries as often as it renews its
 * lease, so that it is back before the lease ends, and keeps its place. */
static int64_t away_max_ms(const dlock__claim *cl)
{
    return (int64_t)cl->params->lease_ms / 3;
}

static int setup(dlock__claim *cl, dlock__lane *lane, const dlock_acquire_options *o)
{
    int64_t lease = o->lease_ms ? o->lease_ms : DLOCK_LEASE_DEFAULT_MS;
    if (lease < DLOCK_LEASE_MIN_MS || lease > DLOCK_LEASE_MAX_MS) {
        dlock__set_error(lane, "the presence lease must be from %d to %d ms, not %lld",
                         DLOCK_LEASE_MIN_MS, DLOCK_LEASE_MAX_MS, (long long)o->lease_ms);
        return DLOCK_EINVAL;
    }
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
    cl->params->lease_ms = (unsigned)lease;
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
    .words = words, .channel = channel, .message = message, .away_max_ms = away_max_ms,            \
    .leaves = leaves

const dlock__kind dlock__kind_fair = {
    FAIR_SCRIPTS_AND_HOOKS,
    .name = "fair lock",
    .setup = setup,
};

const dlock__kind dlock__kind_mutex_queued = {
    FAIR_SCRIPTS_AND_HOOKS,
    .name = "mutex",
};
