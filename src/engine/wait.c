/* Waiting for a busy lock. A waiter tries at once: a free lock costs what a
 * try costs. Only a busy lock makes it subscribe to the lock's release
 * channel (a majority's confirmation is enough), and then it tries once
 * more before it sleeps, so a release between the first try and the
 * subscription is not missed. Between attempts it sleeps until a release
 * message, the holder's PTTL, a jittered backoff or its deadline.
 *
 * The channel is sharded (SSUBSCRIBE; the release scripts SPUBLISH), on a
 * cluster on the master of the channel's slot: a subscriber asks once
 * whether it talks to a cluster, to know where that is (route.h). A server
 * that refuses SSUBSCRIBE (before Redis 7, or a user not allowed it) gets
 * SUBSCRIBE, as the scripts fall back to PUBLISH. A slot that moves ends a
 * sharded subscription (the server sends sunsubscribe, or MOVED): the
 * waiter subscribes again where the slot went. */
#include "wait.h"

#include "clock.h"
#include "route.h"
#include "slot.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_BACKOFF_MAX_MS 1000
#define FIRST_BACKOFF_MS 10
#define WAKE_JITTER_MS 5 /* Redlock: keep waiters from splitting the vote in step */

struct waiter {
    dlock_client *c;
    const char *channel;
    int slot; /* the channel's hash slot */
    /* Whose wait it is (NULL: a listener's): its kind reads the messages. */
    const dlock__claim *claim;
    bool subscribed[DLOCK__NODES_MAX];
    bool pending[DLOCK__NODES_MAX]; /* SUBSCRIBE sent, not yet confirmed */
    bool woken;
    bool handed; /* a message handed us the lock: */
    dlock__handover handover;
};

static bool take_cancel(dlock_client *c)
{
    uint64_t count;
    (void)!read(c->cancel_fd, &count, sizeof(count));
    return atomic_exchange(&c->cancel_requested, false);
}

static bool is_string(const dlock__reply *r, const char *s)
{
    return r->type == DLOCK__REPLY_STRING && r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

static void subscribe_node(struct waiter *w, size_t i, int64_t now);

/* Whether a message wakes us: what the waiter's kind says of it (a
 * message for another waiter does not, one that hands us the lock says
 * how); every message wakes a listener. */
static bool wakes(struct waiter *w, const dlock__reply *msg)
{
    const dlock__kind *kind = w->claim ? w->claim->kind : NULL;
    enum dlock__wake says;
    dlock__handover h;
    if (!kind || !kind->message || msg->type != DLOCK__REPLY_STRING)
        return true;
    says = kind->message(w->claim, msg->str, msg->len, &h);
    if (says == DLOCK__WAKE_HANDED) {
        w->handed = true;
        w->handover = h;
    }
    return says != DLOCK__WAKE_NOT;
}

/* An SSUBSCRIBE refused for good: a server before Redis 7 does not know
 * it, a user may not be allowed it. */
static bool refuses_sharding(const dlock__reply *r)
{
    return strncmp(r->str, "ERR unknown command", 19) == 0 || strncmp(r->str, "NOPERM", 6) == 0;
}

static void on_push(struct waiter *w, size_t i, const dlock__reply *r)
{
    dlock__conn *sub = &w->c->subs[i];
    if (r->type == DLOCK__REPLY_ERROR) {
        /* SUBSCRIBE refused (an ACL user without the channel): this node
         * will not tell us of releases. MOVED: the slot's master is
         * elsewhere now, subscribe there. */
        int64_t now = dlock__now_ns();
        int64_t until = now + w->c->command_timeout_ms * DLOCK__NS_PER_MS;
        bool plain = w->c->subs_plain[i];
        w->pending[i] = w->subscribed[i] = false;
        if (dlock__route_after(sub, r, 0, true, w->slot, until) == DLOCK__ROUTE_AGAIN) {
            subscribe_node(w, i, now);
        } else if (!plain && refuses_sharding(r)) {
            w->c->subs_plain[i] = true; /* SPUBLISH fails there too: PUBLISH */
            subscribe_node(w, i, now);
        }
        return;
    }
    if (r->type != DLOCK__REPLY_ARRAY || r->elements != 3 || !is_string(r->element[1], w->channel))
        return; /* another channel's: a leftover of an earlier wait */
    if (is_string(r->element[0], "subscribe") || is_string(r->element[0], "ssubscribe")) {
        w->pending[i] = false;
        w->subscribed[i] = true;
    } else if (is_string(r->element[0], "message") || is_string(r->element[0], "smessage")) {
        w->woken |= wakes(w, r->element[2]);
    } else if (is_string(r->element[0], "sunsubscribe") && dlock__route_is_cluster(sub)) {
        /* The slot moved away: subscribe where it went (the old master
         * answers MOVED). */
        w->subscribed[i] = false;
        subscribe_node(w, i, dlock__now_ns());
    }
}

static void read_pushes(struct waiter *w, size_t i, short revents)
{
    dlock__reply *r = NULL;
    int rc;
    while ((rc = dlock__conn_progress(&w->c->subs[i], revents, &r)) == 1) {
        on_push(w, i, r);
        dlock__reply_free(r);
        revents = 0;
    }
    if (rc < 0) {
        /* A release may have been missed (a fair head's hand-over with it):
         * try at once, and subscribe again. */
        w->subscribed[i] = w->pending[i] = false;
        w->woken = true;
    }
}

/* Polls the subscriber connections (and the cancel descriptor) until
 * `until_ns` or until `done` holds. Returns DLOCK_ECANCELED or 0. */
static int poll_subscribers(struct waiter *w, int64_t until_ns, bool (*done)(const struct waiter *))
{
    struct pollfd fds[DLOCK__NODES_MAX + 1];
    size_t index[DLOCK__NODES_MAX + 1];
    int64_t now = dlock__now_ns();

    while (!done(w) && now < until_ns) {
        size_t k = 1;
        fds[0] = (struct pollfd){.fd = w->c->cancel_fd, .events = POLLIN};
        for (size_t i = 0; i < w->c->n; i++) {
            if (!w->subscribed[i] && !w->pending[i])
                continue;
            fds[k] = (struct pollfd){.fd = w->c->subs[i].fd,
                                     .events = dlock__conn_events(&w->c->subs[i])};
            index[k++] = i;
        }
        if (poll(fds, k, dlock__ms_until(until_ns, now)) < 0 && errno != EINTR)
            return 0;
        if ((fds[0].revents & POLLIN) && take_cancel(w->c))
            return DLOCK_ECANCELED;
        for (size_t j = 1; j < k; j++)
            if (fds[j].revents)
                read_pushes(w, index[j], fds[j].revents);
        now = dlock__now_ns();
    }
    return 0;
}

static size_t count_subscribed(const struct waiter *w, size_t *pending)
{
    size_t n = 0;
    *pending = 0;
    for (size_t i = 0; i < w->c->n; i++) {
        n += w->subscribed[i];
        *pending += w->pending[i];
    }
    return n;
}

/* A majority listens, or no majority can any more: the late ones join
 * while we sleep. */
static bool majority_confirmed(const struct waiter *w)
{
    size_t pending, n = count_subscribed(w, &pending);
    return n >= dlock__quorum(w->c) || n + pending < dlock__quorum(w->c);
}

static bool woken(const struct waiter *w)
{
    return w->woken;
}

static int send_command(dlock__conn *conn, const char *verb, const char *channel, int64_t now)
{
    const char *argv[] = {verb, channel};
    size_t lens[] = {strlen(verb), strlen(channel)};
    char *cmd;
    long long len = dlock__command_format(&cmd, 2, argv, lens);
    int rc = len < 0 ? (int)len : dlock__conn_begin(conn, cmd, (size_t)len, now);
    if (rc == 0)
        rc = dlock__conn_send(conn);
    if (len >= 0)
        dlock__command_free(cmd);
    return rc;
}

/* Sends node i's SSUBSCRIBE (SUBSCRIBE where it was refused): first asks,
 * once, whether it is a cluster, and where a sentinel-named primary or the
 * slot's master is. */
static void subscribe_node(struct waiter *w, size_t i, int64_t now)
{
    dlock__conn *sub = &w->c->subs[i];
    int64_t until = now + w->c->command_timeout_ms * DLOCK__NS_PER_MS;
    if (!dlock__route_learn(sub, w->channel, until) ||
        dlock__route_prepare(sub, w->slot, until) < 0)
        return;
    if (send_command(sub, w->c->subs_plain[i] ? "SUBSCRIBE" : "SSUBSCRIBE", w->channel, now) == 0)
        w->pending[i] = true;
}

/* SUBSCRIBE where we are not yet (a node whose subscriber connection
 * broke is asked again). */
static void subscribe_idle(struct waiter *w)
{
    int64_t now = dlock__now_ns();
    for (size_t i = 0; i < w->c->n; i++)
        if (!w->subscribed[i] && !w->pending[i])
            subscribe_node(w, i, now);
}

/* SUBSCRIBE where we are not yet, and read the confirmations of a
 * majority. */
static int subscribe(struct waiter *w, int64_t until_ns)
{
    subscribe_idle(w);
    return poll_subscribers(w, until_ns, majority_confirmed);
}

/* UNSUBSCRIBE without waiting: later waits ignore the confirmation. A
 * subscription still unconfirmed is dropped with its connection, so its
 * late confirmation cannot be mistaken for a later wait's. */
static void unsubscribe(struct waiter *w)
{
    for (size_t i = 0; i < w->c->n; i++) {
        if (w->pending[i]) {
            dlock__conn_close(&w->c->subs[i]);
            w->pending[i] = false;
        }
    }
    for (size_t i = 0; i < w->c->n; i++) {
        dlock__conn *sub = &w->c->subs[i];
        dlock__reply *r = NULL;
        if (!w->subscribed[i])
            continue;
        send_command(sub, w->c->subs_plain[i] ? "UNSUBSCRIBE" : "SUNSUBSCRIBE", w->channel,
                     dlock__now_ns());
        while (dlock__conn_progress(&w->c->subs[i], POLLOUT, &r) == 1)
            dlock__reply_free(r);
        w->subscribed[i] = false;
    }
}

/* A waiter on its kind's own channel (a fair waiter's process channel)
 * stays subscribed after a grant (kept_channel): the holder of a queued
 * name often queues again, and a SUBSCRIBE and an UNSUBSCRIBE per grant
 * would be two requests of three. A wait on that channel starts from
 * there, without reading first what came in since the last one: the
 * process channel carries only wake-ups for one token's turn, which the
 * kind takes from the new token's alone (a token is never used twice), so
 * the old ones are read and dropped with the next messages. That spares a
 * poll() per grant. A wait on another channel first leaves it. */
static void take_kept(struct waiter *w)
{
    dlock_client *c = w->c;
    if (!c->kept_channel)
        return;
    if (strcmp(c->kept_channel, w->channel) == 0) {
        memcpy(w->subscribed, c->kept, sizeof(w->subscribed));
    } else {
        struct waiter old = {.c = c, .channel = c->kept_channel};
        memcpy(old.subscribed, c->kept, sizeof(old.subscribed));
        unsubscribe(&old);
    }
    free(c->kept_channel);
    c->kept_channel = NULL;
}

/* After a wait: a waiter on its kind's channel that got the lock keeps
 * listening (see take_kept()); every other wait ends its subscriptions. */
static void end_wait(struct waiter *w, int rc)
{
    dlock_client *c = w->c;
    if (rc == 0 && w->claim && w->claim->kind->channel &&
        (c->kept_channel = strdup(w->channel)) != NULL) {
        for (size_t i = 0; i < c->n; i++) {
            if (w->pending[i]) { /* its confirmation would be taken for a later one's */
                dlock__conn_close(&c->subs[i]);
                w->pending[i] = false;
            }
            c->kept[i] = w->subscribed[i];
        }
        return;
    }
    unsubscribe(w);
}

/* What a wait tries again: a busy lock, and failures that pass (a server
 * down or restarting, a failover, LOADING or READONLY, too few replicas
 * acknowledging). A reply that made no sense, a refused password, a TLS
 * failure or a name of another type will be the same next time: they end
 * the wait at once, however long it was to be. Every other error reply is
 * DLOCK_ESERVER, which cannot tell LOADING from a garbled fence key: it
 * is retried, and the deadline bounds it. */
static bool retryable(int rc, bool io_retry)
{
    if (rc == DLOCK_EBUSY)
        return true;
    return io_retry && (rc == DLOCK_ETIMEDOUT || rc == DLOCK_ECONN || rc == DLOCK_ENOQUORUM ||
                        rc == DLOCK_ESERVER || rc == DLOCK_ENOREPLICAS);
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static bool listening(const struct waiter *w)
{
    size_t pending;
    return count_subscribed(w, &pending) >= dlock__quorum(w->c);
}

/* How long to sleep after a failed attempt. While a majority of nodes will
 * tell us of a release, the backoff cap (jittered) is only a safety net;
 * without them we poll with a jittered exponential backoff. Either way never
 * past the moment the holder's key expires. */
static int64_t next_sleep_ms(const struct waiter *w, dlock__claim *cl, int rc, int64_t *step_ms,
                             int64_t backoff_max_ms)
{
    int64_t step = listening(w) ? backoff_max_ms : *step_ms;
    int64_t ms = step / 2 + (int64_t)dlock__random_below(cl->client, (uint64_t)step / 2 + 1);
    *step_ms = *step_ms * 2 < backoff_max_ms ? *step_ms * 2 : backoff_max_ms;
    if (rc == DLOCK_EBUSY && cl->last_pttl_ms >= 0 && cl->last_pttl_ms + 1 < ms)
        ms = cl->last_pttl_ms + 1;
    /* A waiter that cannot reach its server may have to be back sooner
     * (a fair waiter, before its place's lease ends). */
    if (rc != DLOCK_EBUSY && cl->kind->away_max_ms) {
        int64_t away = cl->kind->away_max_ms(cl);
        ms = ms > away ? away : ms;
    }
    return ms > 0 ? ms : 1; /* never back to back */
}

/* After a busy try: listen, if we do not yet. Returns 1 when the caller
 * should try again at once (a subscription is new: a release may have
 * slipped in before it), 0 to sleep first, or DLOCK_ECANCELED. */
static int listen_after_busy(struct waiter *w, int64_t ttl_ms, int64_t deadline)
{
    int64_t until = dlock__node_deadline(w->c, ttl_ms, dlock__now_ns());
    int rc;
    if (listening(w))
        return 0;
    rc = subscribe(w, until < deadline ? until : deadline);
    if (rc < 0)
        return rc;
    return listening(w);
}

/* A release handed us the lock: held if the hand-over came after our last
 * try (dlock__attempt_handed()). Unless the renewal thread will, we claim
 * it for the whole TTL at once with an extend, when the hand-over holds it
 * for less (our presence lease). DLOCK_EBUSY: it is not ours (a hand-over
 * before our last try, or one that lapsed while we were slow): try. */
static int take_handed(dlock__claim *cl, struct waiter *w, int64_t ttl_ms,
                       const dlock_acquire_options *opts)
{
    int rc = dlock__attempt_handed(cl, &w->handover, ttl_ms);
    w->handed = false;
    if (rc == 0)
        dlock__metrics_handed(cl->metrics);
    if (rc < 0 || opts->auto_renew || ttl_ms <= w->handover.lease_ms)
        return rc;
    dlock__attempt_extend(&cl, 1, &cl->client->main, &ttl_ms, &rc);
    return rc == DLOCK_ENOTOWNER ? DLOCK_EBUSY : rc;
}

/* The attempt made the claim one of another kind (a mutex that queued):
 * the waiter listens where that kind listens from now on. */
static void follow_kind(struct waiter *w, dlock__claim *cl, char **own)
{
    unsubscribe(w);
    free(*own);
    *own = cl->kind->channel ? cl->kind->channel(cl) : NULL;
    w->channel = *own ? *own : cl->keys.channel;
}

int dlock__wait_acquire(dlock__claim *cl, int64_t ttl_ms, const dlock_acquire_options *opts)
{
    dlock_client *c = cl->client;
    char *own = cl->kind->channel ? cl->kind->channel(cl) : NULL;
    /* A kind's channel shares the name's hash tag, so its slot. */
    struct waiter w = {.c = c, .channel = own ? own : cl->keys.channel,
                       .slot = (int)dlock__key_slot(cl->keys.channel, strlen(cl->keys.channel)),
                       .claim = cl};
    int64_t backoff_max_ms = opts->backoff_max_ms ? opts->backoff_max_ms : DEFAULT_BACKOFF_MAX_MS;
    int64_t deadline = opts->wait_ms == DLOCK_WAIT_FOREVER
                           ? INT64_MAX
                           : dlock__now_ns() + opts->wait_ms * DLOCK__NS_PER_MS;
    int64_t first_step = FIRST_BACKOFF_MS < backoff_max_ms ? FIRST_BACKOFF_MS : backoff_max_ms;
    int64_t step_ms = first_step;
    const dlock__kind *kind = cl->kind;
    int rc;

    take_kept(&w);
    c->main.wait_end_ns = deadline == INT64_MAX ? 0 : deadline;
    for (;;) {
        int64_t now, until;
        if (atomic_load(&c->cancel_requested) && take_cancel(c)) {
            rc = DLOCK_ECANCELED;
            break;
        }
        rc = dlock__attempt_acquire(cl, &c->main, ttl_ms);
        if (cl->kind != kind) {
            follow_kind(&w, cl, &own);
            kind = cl->kind;
        }
        if (rc == 0 || !retryable(rc, !opts->no_io_retry))
            break;
        if (rc == DLOCK_EBUSY) {
            int again = listen_after_busy(&w, ttl_ms, deadline);
            cl->waited = true;
            if (again < 0) {
                rc = again;
                break;
            }
            if (again)
                continue;
        }
        now = dlock__now_ns();
        if (now >= deadline)
            break;
        until = now + next_sleep_ms(&w, cl, rc, &step_ms, backoff_max_ms) * DLOCK__NS_PER_MS;
        if (until > deadline)
            until = deadline;
        if (opts->on_retry)
            opts->on_retry(rc, c->main.errmsg, dlock__ms_until(until, now), opts->on_retry_arg);
        w.woken = false;
        if (poll_subscribers(&w, until, woken) < 0) {
            rc = DLOCK_ECANCELED;
            break;
        }
        if (w.handed && (rc = take_handed(cl, &w, ttl_ms, opts)) != DLOCK_EBUSY &&
            !retryable(rc, !opts->no_io_retry))
            break;
        if (w.woken) {
            step_ms = first_step;
            if (c->n > 1)
                sleep_ms((int64_t)dlock__random_below(c, WAKE_JITTER_MS + 1));
        }
    }
    if (rc == DLOCK_ECANCELED)
        dlock__set_error(&c->main, "the wait was canceled");
    end_wait(&w, rc);
    free(own);
    return rc;
}

int dlock__listen(dlock_client *c, const char *channel, int64_t period_ms,
                  int (*check)(void *ctx), void *ctx)
{
    struct waiter w = {.c = c, .channel = channel,
                       .slot = (int)dlock__key_slot(channel, strlen(channel))};
    int rc = subscribe(&w, dlock__node_deadline(c, 0, dlock__now_ns()));
    while (rc == 0) {
        if (atomic_load(&c->cancel_requested) && take_cancel(c)) {
            rc = DLOCK_ECANCELED;
            break;
        }
        w.woken = false;
        if ((rc = check(ctx)) != 0)
            break;
        subscribe_idle(&w);
        rc = poll_subscribers(&w, dlock__now_ns() + period_ms * DLOCK__NS_PER_MS, woken);
    }
    unsubscribe(&w);
    return rc;
}
