/* Fan-out of calls to N connections. See fanout.h. */
#include "fanout.h"

#include "clock.h"
#include "dlock.h"
#include "route.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool dlock__acl_stopped_script(const dlock__reply *r)
{
    /* Inside a script an ACL denial is "ERR The user executing the script
     * can't ...", not NOPERM. */
    return r->type == DLOCK__REPLY_ERROR && starts_with(r->str, "ERR The user executing the script");
}

int dlock__server_error_code(const dlock__reply *r)
{
    if (starts_with(r->str, "NOAUTH") || starts_with(r->str, "WRONGPASS") ||
        starts_with(r->str, "NOPERM") || dlock__acl_stopped_script(r))
        return DLOCK_EAUTH;
    if (starts_with(r->str, "WRONGTYPE"))
        return DLOCK_EWRONGTYPE;
    if (starts_with(r->str, "DLOCKLIMIT"))
        return DLOCK_ELIMIT; /* a semaphore's script: live permits under another limit */
    return DLOCK_ESERVER;
}

static bool is_noscript(const dlock__reply *r)
{
    return r->type == DLOCK__REPLY_ERROR && starts_with(r->str, "NOSCRIPT");
}

/* The replies one node owes, in the order it will send them: call indexes,
 * with FALLBACK marking the EVAL re-sent after a NOSCRIPT. */
#define FALLBACK 0x8000u
#define DELIVER_GRACE_MS 20 /* see fanout_direct() */

struct owed {
    uint16_t call[2 * DLOCK__BATCH_MAX + 2]; /* + a WAIT and its re-send */
    size_t head, tail;
    size_t fallback_end; /* `tail` after the last fallback queued; 0: none */
};

struct batch {
    dlock__conn *conns;
    size_t n, k;
    dlock__call *const *calls;
    dlock__node_result *results; /* [call * n + node] */
    struct owed owed[DLOCK__NODES_MAX];
};

static dlock__node_result *result_of(struct batch *b, size_t node, uint16_t entry)
{
    return &b->results[(size_t)(entry & ~FALLBACK) * b->n + node];
}

/* Settles every reply node `i` still owes with `status`. */
static void settle_owed(struct batch *b, size_t i, int status)
{
    struct owed *o = &b->owed[i];
    for (; o->head < o->tail; o->head++) {
        dlock__node_result *res = result_of(b, i, o->call[o->head]);
        res->sent |= b->conns[i].call_sent;
        res->status = status;
    }
}

/* The reply of a WAIT that went out before an EVAL re-sent for a call it
 * covers: it did not see that write. Sent again, after the EVAL. */
static void resend_covering(struct batch *b, size_t i, uint16_t entry, dlock__reply *reply)
{
    struct owed *o = &b->owed[i];
    dlock__call *call = b->calls[entry & ~FALLBACK];
    int rc = dlock__conn_queue(&b->conns[i], call->cmd, call->len);
    dlock__reply_free(reply);
    if (rc == 0)
        rc = dlock__conn_send(&b->conns[i]);
    if (rc < 0) {
        dlock__conn_close(&b->conns[i]);
        result_of(b, i, entry)->status = rc;
        settle_owed(b, i, rc);
        return;
    }
    o->call[o->tail++] = entry;
}

/* Records the next reply of node `i`, or re-sends its call as EVAL after
 * NOSCRIPT (the script cache was flushed or the server restarted): once per
 * node and call. */
static void on_reply(struct batch *b, size_t i, dlock__reply *reply)
{
    struct owed *o = &b->owed[i];
    uint16_t entry = o->call[o->head++];
    dlock__call *call = b->calls[entry & ~FALLBACK];
    dlock__node_result *res = result_of(b, i, entry);

    res->sent = true;
    if (is_noscript(reply) && call->encode_fallback && !(entry & FALLBACK)) {
        int rc;
        dlock__reply_free(reply);
        rc = call->fallback ? 0 : call->encode_fallback(call);
        if (rc == 0)
            rc = dlock__conn_queue(&b->conns[i], call->fallback, call->fallback_len);
        if (rc == 0)
            rc = dlock__conn_send(&b->conns[i]);
        if (rc < 0) {
            /* Replies this node still owes would be misread later. */
            dlock__conn_close(&b->conns[i]);
            res->status = rc;
            settle_owed(b, i, rc);
        } else {
            o->call[o->tail++] = (uint16_t)(entry | FALLBACK);
            o->fallback_end = o->tail;
        }
        return;
    }
    if (call->covers_previous && o->fallback_end > o->head) {
        resend_covering(b, i, entry, reply);
        return;
    }
    res->status = DLOCK__REPLIED;
    res->reply = reply;
}

/* Hands out every reply the node has, or settles what it owes on failure. */
static void take_replies(struct batch *b, size_t i, short revents)
{
    dlock__conn *conn = &b->conns[i];
    struct owed *o = &b->owed[i];
    while (o->head < o->tail) {
        dlock__reply *reply = NULL;
        int rc = dlock__conn_progress(conn, revents, &reply);
        revents = 0; /* then only what the reader holds already */
        if (rc == 0)
            return;
        if (rc < 0) {
            settle_owed(b, i, rc);
            return;
        }
        on_reply(b, i, reply);
    }
}

static size_t poll_pending(const struct batch *b, struct pollfd *fds, size_t *index)
{
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->owed[i].head == b->owed[i].tail)
            continue;
        fds[k].fd = b->conns[i].fd;
        fds[k].events = dlock__conn_events(&b->conns[i]);
        fds[k].revents = 0;
        index[k++] = i;
    }
    return k;
}

/* The first end of a setup among the nodes that still owe replies
 * (a connection's connect timeout), or `deadline` if sooner. */
static int64_t first_setup_end(const struct batch *b, int64_t deadline)
{
    for (size_t i = 0; i < b->n; i++) {
        int64_t end = dlock__conn_setup_deadline(&b->conns[i]);
        if (b->owed[i].head != b->owed[i].tail && end < deadline)
            deadline = end;
    }
    return deadline;
}

/* A node whose connection's setup ran past the connect timeout: its calls
 * fail (the connection says why), whatever the call's deadline. */
static void give_up_on_slow_setups(struct batch *b, int64_t now)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->owed[i].head != b->owed[i].tail && dlock__conn_setup_expired(&b->conns[i], now))
            settle_owed(b, i, DLOCK_ETIMEDOUT);
    }
}

static void give_up_on_late_nodes(struct batch *b, bool timed_out, int64_t waited_ms)
{
    for (size_t i = 0; i < b->n; i++) {
        struct owed *o = &b->owed[i];
        dlock__conn *conn = &b->conns[i];
        if (o->head == o->tail)
            continue;
        for (size_t e = o->head; e < o->tail; e++)
            result_of(b, i, o->call[e])->sent |= conn->call_sent;
        dlock__conn_abandon(conn, (unsigned)(o->tail - o->head));
        if (timed_out) {
            settle_owed(b, i, DLOCK_ETIMEDOUT);
            snprintf(conn->err, sizeof(conn->err), "%s: no reply within %lld ms",
                     conn->ep->label, (long long)waited_ms);
        }
    }
}

/* Sends every call to node `i`, back to back; `rc` < 0: none, the node
 * cannot be reached (its router says why). */
static void send_batch(struct batch *b, size_t i, int64_t now, int rc)
{
    struct owed *o = &b->owed[i];
    o->head = o->tail = o->fallback_end = 0;
    if (rc < 0) {
        for (size_t j = 0; j < b->k; j++)
            b->results[j * b->n + i] = (dlock__node_result){NULL, rc, false, false};
        return;
    }
    for (size_t j = 0; j < b->k && rc == 0; j++) {
        dlock__call *call = b->calls[j];
        dlock__node_result *res = &b->results[j * b->n + i];
        res->status = DLOCK__PENDING;
        res->reply = NULL;
        res->sent = false;
        res->unserved = false;
        rc = j == 0 ? dlock__conn_begin(&b->conns[i], call->cmd, call->len, now)
                    : dlock__conn_queue(&b->conns[i], call->cmd, call->len);
        o->call[o->tail++] = (uint16_t)j;
    }
    if (rc == 0)
        rc = dlock__conn_send(&b->conns[i]);
    if (rc < 0) {
        for (size_t j = o->tail; j < b->k; j++)
            b->results[j * b->n + i] = (dlock__node_result){NULL, rc, false, false};
        settle_owed(b, i, rc);
    }
}

/* Does a call to be delivered still wait for a connection this fan-out
 * (begun at `start`) opened? */
static bool undelivered(const struct batch *b, int64_t start)
{
    for (size_t i = 0; i < b->n; i++) {
        const struct owed *o = &b->owed[i];
        for (size_t e = o->head; e < o->tail; e++)
            if (b->calls[o->call[e] & ~FALLBACK]->deliver &&
                !dlock__conn_delivered(&b->conns[i], start))
                return true;
    }
    return false;
}

/* The batch as it is, to the servers the connections lead to now;
 * routed[i] < 0: node i is not sent to. */
static void fanout_direct(dlock__conn *conns, size_t n, dlock__call *const *calls, size_t k,
                          int64_t deadline_ns, dlock__node_result *results, const int *routed,
                          dlock__enough_fn enough, void *ctx)
{
    struct pollfd fds[DLOCK__NODES_MAX];
    size_t index[DLOCK__NODES_MAX];
    struct batch b; /* not zeroed: send_batch() sets up each node's queue */
    int64_t start = dlock__now_ns(), now = start, delivery_end = 0;
    bool decided = false;
    size_t pending;

    b.conns = conns;
    b.n = n;
    b.k = k;
    b.calls = calls;
    b.results = results;
    for (size_t i = 0; i < n; i++)
        send_batch(&b, i, now, routed[i]);
    while ((pending = poll_pending(&b, fds, index)) > 0) {
        int timeout, ready;
        decided = enough && enough(results, n, k, &deadline_ns, ctx);
        if (decided && delivery_end == 0) {
            /* What a call to deliver may still wait once decided: a
             * server that answers, restarted, needs a few round trips to
             * reconnect; a paused one never answers, and costs this. */
            int64_t took = now - start, grace = DELIVER_GRACE_MS * DLOCK__NS_PER_MS;
            delivery_end = now + (took > grace ? took : grace);
            deadline_ns = delivery_end < deadline_ns ? delivery_end : deadline_ns;
        }
        timeout = dlock__ms_until(deadline_ns, now);
        if ((decided && !undelivered(&b, start)) || timeout == 0)
            break;
        if (pending == 1 && (ready = dlock__conn_await(&conns[index[0]], deadline_ns)) != 0) {
            /* One connection to wait for: its recv() waits (conn.h). */
            if (ready < 0)
                settle_owed(&b, index[0], ready);
            else
                take_replies(&b, index[0], 0);
            now = dlock__now_ns();
            continue;
        }
        now = dlock__now_ns(); /* after an await that did not end it */
        ready = poll(fds, pending, dlock__ms_until(first_setup_end(&b, deadline_ns), now));
        now = dlock__now_ns();
        if (ready < 0 && errno != EINTR)
            break; /* only with invalid descriptors: the pending nodes time out */
        for (size_t f = 0; ready > 0 && f < pending; f++) {
            if (fds[f].revents)
                take_replies(&b, index[f], fds[f].revents);
        }
        give_up_on_slow_setups(&b, now);
    }
    give_up_on_late_nodes(&b, !decided, (now - start) / DLOCK__NS_PER_MS);
    for (size_t r = 0; r < n * k; r++)
        dlock__stats_node(conns[r % n].counters, results[r].status,
                          results[r].status == DLOCK__REPLIED &&
                              results[r].reply->type == DLOCK__REPLY_ERROR);
}

#define HOPS_MAX 5 /* redirects in a row before a pause: a slot that moves twice is rare */

/* Sends `call` again to the one connection the router pointed at, behind
 * ASKING if so told; its answer replaces *res. */
static void resend(dlock__conn *conn, dlock__call *call, bool asking, int64_t deadline_ns,
                   dlock__node_result *res)
{
    static char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
    dlock__call ask = {.cmd = asking_cmd, .len = sizeof(asking_cmd) - 1, .slot = -1};
    dlock__call eval = *call;
    dlock__call *calls[] = {&ask, call};
    /* ASKING holds for one command only: a NOSCRIPT there would send the
     * EVAL fallback without it. So the script goes as EVAL at once. */
    if (asking && call->encode_fallback && (call->fallback || call->encode_fallback(call) == 0)) {
        eval.cmd = call->fallback;
        eval.len = call->fallback_len;
        eval.encode_fallback = NULL;
        calls[1] = &eval;
    }
    dlock__node_result again[2];
    const int routed = 0;
    dlock__results_clear(res, 1);
    fanout_direct(conn, 1, calls + !asking, 1 + asking, deadline_ns, again, &routed, NULL, NULL);
    if (asking)
        dlock__results_clear(again, 1);
    *res = again[asking];
}

/* A call the cluster still did not serve when its redirects ran out (its
 * slot migrating or down): a failure that says so in our words, and a call
 * that did not run. */
static void settle_unserved(dlock__conn *conn, const dlock__call *call, dlock__node_result *res)
{
    if (res->status != DLOCK__REPLIED || !dlock__route_unserved(conn, res->reply, call->slot))
        return;
    dlock__results_clear(res, 1);
    *res = (dlock__node_result){NULL, DLOCK_ESERVER, false, true};
}

static bool is_tryagain(const dlock__node_result *res)
{
    return res->status == DLOCK__REPLIED && res->reply->type == DLOCK__REPLY_ERROR &&
           starts_with(res->reply->str, "TRYAGAIN");
}

/* Follows the redirects of one node's reply as long as the deadline lets
 * it: TRYAGAIN pauses first, and so does a run of HOPS_MAX redirects in a
 * row (nodes that disagree for a moment: the end of a migration told to
 * the source before the target sends MOVED back and forth). With
 * `to_tryagain`, it stops at a TRYAGAIN instead, and says so. */
static bool follow_hops(dlock__conn *conn, dlock__call *call, int64_t deadline_ns,
                        dlock__node_result *res, bool to_tryagain)
{
    for (int hops = 0;;) {
        const dlock__reply *reply = res->status == DLOCK__REPLIED ? res->reply : NULL;
        if (to_tryagain && is_tryagain(res))
            return true;
        enum dlock__reroute how = dlock__route_after(conn, reply, res->status < 0 ? res->status : 0,
                                                     res->sent, call->slot, deadline_ns);
        if (how == DLOCK__ROUTE_DONE)
            return false;
        hops = how == DLOCK__ROUTE_LATER ? 0 : hops + 1;
        if (hops == HOPS_MAX) {
            if (!dlock__route_pause(deadline_ns))
                return false;
            hops = 0;
        }
        resend(conn, call, how == DLOCK__ROUTE_ASKING, deadline_ns, res);
    }
}

#define PROBED_KEYS_MAX 16

/* Asks `conn` for each of the call's keys on its own
 * (EXISTS goes where the key is), and has the call name those that exist
 * nowhere as the first key (fanout.h). Returns whether it did. */
static bool name_absent_keys(dlock__conn *conn, dlock__call *call, int64_t deadline_ns)
{
    dlock__call probes[PROBED_KEYS_MAX] = {0}, *each[PROBED_KEYS_MAX] = {NULL};
    dlock__node_result found[PROBED_KEYS_MAX] = {0};
    bool absent[PROBED_KEYS_MAX] = {false}, some = false, known = true;
    size_t k = call->nkeys;
    int routed;
    if (k > PROBED_KEYS_MAX)
        return false;
    for (size_t i = 0; i < k && known; i++) {
        const char *argv[] = {"EXISTS", call->keys[i]};
        size_t lens[] = {6, strlen(call->keys[i])};
        long long len = dlock__command_format(&probes[i].cmd, 2, argv, lens);
        probes[i].len = len > 0 ? (size_t)len : 0;
        probes[i].slot = call->slot;
        each[i] = &probes[i];
        known = len > 0;
    }
    routed = known ? dlock__route_prepare(conn, call->slot, deadline_ns) : 0;
    if (known && routed == 0) {
        fanout_direct(conn, 1, each, k, deadline_ns, found, &routed, NULL, NULL);
        for (size_t i = 0; i < k; i++)
            follow_hops(conn, each[i], deadline_ns, &found[i], false);
    }
    for (size_t i = 0; i < k; i++) {
        const dlock__reply *r = found[i].status == DLOCK__REPLIED ? found[i].reply : NULL;
        known = known && routed == 0 && r && r->type == DLOCK__REPLY_INTEGER;
        absent[i] = known && r->integer == 0;
        some = some || absent[i];
        dlock__command_free(probes[i].cmd);
    }
    dlock__results_clear(found, k);
    return known && some && call->name_absent(call, absent) == 0;
}

/* Follows the redirects of each node's replies (follow_hops()); a call
 * whose script reads keys named as its first as absent goes again, after
 * a TRYAGAIN, naming those that exist nowhere so, for that node. */
static void follow_redirects(dlock__conn *conns, size_t n, dlock__call *const *calls, size_t k,
                             int64_t deadline_ns, dlock__node_result *results)
{
    for (size_t j = 0; j < k; j++) {
        for (size_t i = 0; i < n; i++) {
            dlock__node_result *res = &results[j * n + i];
            dlock__call *call = calls[j];
            if (follow_hops(&conns[i], call, deadline_ns, res, call->name_absent != NULL)) {
                bool renamed = name_absent_keys(&conns[i], call, deadline_ns);
                follow_hops(&conns[i], call, deadline_ns, res, false);
                if (renamed)
                    call->name_absent(call, NULL);
            }
            settle_unserved(&conns[i], call, res);
        }
    }
}

/* Do calls a and b go to the same server on every node? */
static bool same_route(const dlock__conn *conns, size_t n, const dlock__call *a,
                       const dlock__call *b)
{
    for (size_t i = 0; i < n; i++)
        if (!dlock__route_same(&conns[i], a->slot, b->slot))
            return false;
    return true;
}

void dlock__fanout_batch(dlock__conn *conns, size_t n, dlock__call *const *calls, size_t k,
                         int64_t deadline_ns, dlock__node_result *results,
                         dlock__enough_fn enough, void *ctx)
{
    size_t next;
    for (size_t first = 0; first < k; first = next) {
        int routed[DLOCK__NODES_MAX];
        for (size_t i = 0; i < n; i++)
            routed[i] = dlock__route_prepare(&conns[i], calls[first]->slot, deadline_ns);
        for (next = first + 1; next < k && same_route(conns, n, calls[first], calls[next]); next++)
            ;
        fanout_direct(conns, n, calls + first, next - first, deadline_ns, results + first * n,
                      routed, enough, ctx);
        follow_redirects(conns, n, calls + first, next - first, deadline_ns, results + first * n);
    }
}

void dlock__fanout(dlock__conn *conns, size_t n, dlock__call *call, int64_t deadline_ns,
                   dlock__node_result *results, dlock__enough_fn enough, void *ctx)
{
    dlock__fanout_batch(conns, n, &call, 1, deadline_ns, results, enough, ctx);
}

void dlock__results_clear(dlock__node_result *results, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dlock__reply_free(results[i].reply);
        results[i].reply = NULL;
    }
}
