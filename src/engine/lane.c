/* What the engine's layers share about a client: its lanes of connections,
 * the majority, node deadlines, the last error and jitter. See lane.h. */
#include "lane.h"

#include "book.h"
#include "clock.h"
#include "error_text.h"
#include "route.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MIN_NODE_TIMEOUT_MS 5

static void use_tls(const dlock_client *c, dlock__conn *conn)
{
    if (conn->ep->tls) {
        conn->tls_ctx = c->tls_ctx;
        conn->tls_name = c->tls_name;
    }
}

int dlock__lane_init(dlock_client *c, dlock__lane *lane)
{
    lane->wait_end_ns = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (dlock__conn_init(&lane->conns[i], &c->endpoints[i], c->addrs[i],
                             c->connect_timeout_ms) < 0)
            return DLOCK_ENOMEM;
        /* Redlock: a node whose reply the majority does not wait for must
         * still run our EVALSHA (no NOSCRIPT fallback reaches it). One
         * server is always waited for, and its fallback always runs. */
        lane->conns[i].preload = c->n > 1 ? c->scripts : NULL;
        lane->conns[i].ask_identity = c->n > 1;
        lane->conns[i].back_off_reconnects = c->n > 1;
        lane->conns[i].counters = &c->node_counters[i];
        lane->conns[i].book = c->books[i];
        use_tls(c, &lane->conns[i]);
        if (c->endpoints[i].service && dlock__route_attach_sentinel(&lane->conns[i]) < 0)
            return DLOCK_ENOMEM;
    }
    return 0;
}

void dlock__lane_destroy(dlock_client *c, dlock__lane *lane)
{
    for (size_t i = 0; i < c->n; i++) {
        dlock__route_free(&lane->conns[i]);
        dlock__conn_destroy(&lane->conns[i]);
    }
}

int dlock__subscribers_init(dlock_client *c)
{
    for (size_t i = 0; i < c->n; i++) {
        if (dlock__conn_init(&c->subs[i], &c->endpoints[i], c->addrs[i],
                             c->connect_timeout_ms) < 0)
            return DLOCK_ENOMEM;
        c->subs[i].push_mode = true;
        c->subs[i].book = c->books[i];
        use_tls(c, &c->subs[i]);
        if (c->endpoints[i].service && dlock__route_attach_sentinel(&c->subs[i]) < 0)
            return DLOCK_ENOMEM;
    }
    return 0;
}

int dlock__call_start(dlock_client *c, const void *out)
{
    if (!c)
        return DLOCK_EINVAL;
    c->main.errmsg[0] = '\0';
    if (!out) {
        dlock__set_error(&c->main, "out is NULL");
        return DLOCK_EINVAL;
    }
    return 0;
}

size_t dlock__quorum(const dlock_client *c)
{
    return c->n / 2 + 1;
}

int64_t dlock__node_deadline(const dlock_client *c, int64_t ttl_ms, int64_t now_ns)
{
    int64_t ms = c->node_timeout_ms;
    if (ms == 0) {
        /* Redlock: a slow node must not hold a majority up. One server:
         * nobody else can decide, and a fresh connection to it (connect,
         * handshake) is part of the call. */
        int64_t share = c->n > 1 ? ttl_ms / 20 : ttl_ms / 4;
        ms = share > MIN_NODE_TIMEOUT_MS ? share : MIN_NODE_TIMEOUT_MS;
    }
    if (ms > c->command_timeout_ms || ttl_ms == 0)
        ms = c->command_timeout_ms;
    return now_ns + ms * DLOCK__NS_PER_MS;
}

/* Reads, until `until_ns`, what the connections that still owe their
 * server's run_id have sent: the replies of calls already decided are
 * dropped on the way. Once per connection: a paused server, which owes it
 * for good, must not cost every call the wait. */
static void await_identities(const dlock_client *c, dlock__lane *lane, int64_t until_ns)
{
    struct pollfd fds[DLOCK__NODES_MAX];
    size_t waited[DLOCK__NODES_MAX], index[DLOCK__NODES_MAX], n_waited = 0;
    int64_t now = dlock__now_ns();
    for (size_t i = 0; i < c->n; i++) {
        dlock__conn *conn = &lane->conns[i];
        if (dlock__conn_identity_pending(conn) && !conn->identity_awaited) {
            conn->identity_awaited = true;
            waited[n_waited++] = i;
        }
    }
    while (now < until_ns) {
        size_t k = 0;
        for (size_t w = 0; w < n_waited; w++) {
            dlock__conn *conn = &lane->conns[waited[w]];
            if (!dlock__conn_identity_pending(conn))
                continue;
            fds[k] = (struct pollfd){.fd = conn->fd, .events = dlock__conn_events(conn)};
            index[k++] = waited[w];
        }
        if (k == 0)
            return;
        if (poll(fds, k, dlock__ms_until(until_ns, now)) < 0 && errno != EINTR)
            return;
        for (size_t j = 0; j < k; j++) {
            dlock__conn *conn = &lane->conns[index[j]];
            dlock__reply *unexpected = NULL;
            if (fds[j].revents && dlock__conn_progress(conn, fds[j].revents, &unexpected) == 1) {
                /* Nothing is owed to us here: a server that says more than
                 * it was asked is not to be trusted with the next call. */
                dlock__reply_free(unexpected);
                dlock__conn_close(conn);
            }
        }
        now = dlock__now_ns();
    }
}

/* Two endpoints whose calls went to one address: two nodes of one cluster
 * routed to the slot's master, or two sentinel URLs naming one primary.
 * Caught without INFO. */
static int check_routed_apart(const dlock_client *c, dlock__lane *lane)
{
    for (size_t i = 0; i < c->n; i++) {
        for (size_t j = i + 1; j < c->n; j++) {
            const char *label = lane->conns[i].ep->label;
            if (strcmp(label, lane->conns[j].ep->label) != 0)
                continue;
            dlock__set_error(lane, "servers %s and %s both reached %s: each Redlock vote must be "
                             "an independent server", c->endpoints[i].label,
                             c->endpoints[j].label, label);
            return DLOCK_EINVAL;
        }
    }
    return 0;
}

int dlock__lane_check_distinct(const dlock_client *c, dlock__lane *lane, int64_t grace_ns)
{
    if (check_routed_apart(c, lane) < 0)
        return DLOCK_EINVAL;
    if (c->n > 1)
        await_identities(c, lane, dlock__now_ns() + grace_ns);
    for (size_t i = 0; i < c->n; i++) {
        for (size_t j = i + 1; j < c->n && lane->conns[i].run_id[0]; j++) {
            if (strcmp(lane->conns[i].run_id, lane->conns[j].run_id) != 0)
                continue;
            dlock__set_error(lane, "servers %s and %s are one server (run_id %s): each Redlock "
                             "vote must be an independent server", c->endpoints[i].label,
                             c->endpoints[j].label, lane->conns[i].run_id);
            return DLOCK_EINVAL;
        }
    }
    return 0;
}

void dlock__set_error(dlock__lane *lane, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lane->errmsg, sizeof(lane->errmsg), fmt, ap);
    va_end(ap);
}

void dlock__append_error(dlock__lane *lane, const char *fmt, ...)
{
    size_t used = strlen(lane->errmsg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lane->errmsg + used, sizeof(lane->errmsg) - used, fmt, ap);
    va_end(ap);
}

void dlock__append_node_errors(dlock__lane *lane, const dlock__conn *conns,
                               const dlock__node_result *results, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const dlock__node_result *r = &results[i];
        const dlock__conn *conn = &conns[i];
        if (r->status < 0 && conn->err[0])
            dlock__append_error(lane, "; %s", conn->err);
        else if (r->status < 0)
            dlock__append_error(lane, "; %s: %s", conn->ep->label, dlock__error_text(r->status));
        else if (r->reply && r->reply->type == DLOCK__REPLY_ERROR)
            dlock__append_error(lane, "; %s: %.300s", conn->ep->label, r->reply->str);
    }
}

uint64_t dlock__random_below(dlock_client *c, uint64_t bound)
{
    /* xorshift64: jitter only needs to differ between processes. */
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return bound ? c->rng % bound : 0;
}
