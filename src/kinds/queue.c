/* The waiters' queue of the kinds whose waiters queue (the fair lock, a
 * mutex that queued, the semaphore): where a waiter listens, what a
 * release's message there means to it, its presence lease, and how often
 * it tries while its server is away. The queue's keys and rules are the
 * scripts' (helpers.lua). */
#include "kinds.h"
#include "token.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEXT_PREFIX "next:" /* a release's wake-up of one waiter: "next:" + its token */
/* A release that handed the head the lock: "grant:TOKEN:FENCE:LEASE_END";
 * or a permit: "grant:TOKEN:FENCE:LEASE_END:SLOT" */
#define GRANT_PREFIX "grant:"
/* A release's wake-up of one waiting writer of a name held shared
 * (helpers.lua, release_message()): "writer:" + its token */
#define WRITER_PREFIX "writer:"

/* A waiter listens on its process's channel: the name's channel, ":",
 * then the host and pid of its owner record, where a release wakes the
 * process of the waiter it tells alone (fair_release.lua, sem_release.lua).
 * malloc'ed, or NULL. */
char *dlock__queue_channel(const dlock__claim *cl)
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

/* Is it `prefix` and our token, nothing else: a wake-up of ours alone? */
static bool is_our_turn(const dlock__claim *cl, const char *msg, size_t len, const char *prefix)
{
    size_t skip = strlen(prefix), token_len = strlen(cl->token);
    return len == skip + token_len && memcmp(msg + skip, cl->token, token_len) == 0;
}

/* The rest of a "grant:" message for our token: its fence, lease end and
 * slot, as "FENCE:LEASE_END" or "FENCE:LEASE_END:SLOT" in decimal, nothing
 * else. */
static bool read_grant(const char *rest, size_t len, dlock__handover *h)
{
    char text[64], *end;
    unsigned long long fence;
    long long lease_end;
    unsigned long slot = 0;
    if (len == 0 || len >= sizeof(text) || !isdigit((unsigned char)rest[0]))
        return false;
    memcpy(text, rest, len);
    text[len] = '\0';
    errno = 0;
    fence = strtoull(text, &end, 10);
    if (errno != 0 || *end != ':' || !isdigit((unsigned char)end[1]))
        return false;
    lease_end = strtoll(end + 1, &end, 10);
    if (errno == 0 && *end == ':' && isdigit((unsigned char)end[1]))
        slot = strtoul(end + 1, &end, 10);
    if (errno != 0 || *end != '\0' || slot >= DLOCK_PERMITS_MAX)
        return false;
    h->fence = fence;
    h->lease_end_ms = lease_end;
    h->slot = (unsigned)slot;
    return true;
}

/* A waiter acts on the wake-up of its own turn, on the hand-over of the
 * lock or of a permit in one of its semaphore's slots to it (any other is
 * a wake-up: it tries), and on a plain release (a token: a mutex holder's
 * on a queued name); the others' turns are not its business. */
enum dlock__wake dlock__queue_message(const dlock__claim *cl, const char *msg, size_t len,
                                dlock__handover *h)
{
    size_t token_len = strlen(cl->token), skip = strlen(GRANT_PREFIX);
    if (has_prefix(msg, len, NEXT_PREFIX))
        return is_our_turn(cl, msg, len, NEXT_PREFIX) ? DLOCK__WAKE : DLOCK__WAKE_NOT;
    if (!has_prefix(msg, len, GRANT_PREFIX))
        return DLOCK__WAKE;
    if (len < skip + token_len || memcmp(msg + skip, cl->token, token_len) != 0)
        return DLOCK__WAKE_NOT;
    skip += token_len;
    h->lease_ms = cl->params->lease_ms;
    if (len > skip && msg[skip] == ':' && read_grant(msg + skip + 1, len - skip - 1, h) &&
        h->slot < (cl->params->permits > 1 ? cl->params->permits : 1))
        return DLOCK__WAKE_HANDED;
    return DLOCK__WAKE;
}

enum dlock__wake dlock__writers_message(const dlock__claim *cl, const char *msg, size_t len,
                                        dlock__handover *h)
{
    (void)h;
    if (!has_prefix(msg, len, WRITER_PREFIX))
        return DLOCK__WAKE;
    return is_our_turn(cl, msg, len, WRITER_PREFIX) ? DLOCK__WAKE : DLOCK__WAKE_NOT;
}

/* A waiter that cannot reach its server tries as often as it renews its
 * lease, so that it is back before the lease ends, and keeps its place. */
int64_t dlock__queue_away_max_ms(const dlock__claim *cl)
{
    return (int64_t)cl->params->lease_ms / 3;
}

void dlock__queue_words_handover(const dlock__claim *cl, dlock__words *w)
{
    if (!cl->client->replicas && !cl->client->restart_delay_ms)
        dlock__words_arg(w, "1");
}

void dlock__queue_setup(dlock__claim *cl, int64_t lease_ms)
{
    cl->params->lease_ms = (unsigned)(lease_ms ? lease_ms : DLOCK_LEASE_DEFAULT_MS);
}
