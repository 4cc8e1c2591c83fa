/* Fan-out of one call to N connections. See quorum.h. */
#include "quorum.h"

#include "clock.h"
#include "dlock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int dlock__server_error_code(const dlock__reply *r)
{
    /* Inside a script an ACL denial is "ERR The user executing the script
     * can't ...", not NOPERM. */
    if (starts_with(r->str, "NOAUTH") || starts_with(r->str, "WRONGPASS") ||
        starts_with(r->str, "NOPERM") || starts_with(r->str, "ERR The user executing the script"))
        return DLOCK_EAUTH;
    if (starts_with(r->str, "WRONGTYPE"))
        return DLOCK_EWRONGTYPE;
    return DLOCK_ESERVER;
}

static bool is_noscript(const dlock__reply *r)
{
    return r->type == DLOCK__REPLY_ERROR && starts_with(r->str, "NOSCRIPT");
}

/* Records a reply, or re-sends the call as EVAL after NOSCRIPT (the script
 * cache was flushed or the server restarted): once per node and call. */
static void on_reply(dlock__conn *conn, dlock__call *call, dlock__node_result *res,
                     bool *fallback_sent, dlock__reply *reply, int64_t now_ns)
{
    if (is_noscript(reply) && call->encode_fallback && !*fallback_sent) {
        int rc;
        dlock__reply_free(reply);
        *fallback_sent = true;
        rc = call->fallback ? 0 : call->encode_fallback(call);
        if (rc == 0)
            rc = dlock__conn_begin(conn, call->fallback, call->fallback_len, now_ns);
        if (rc < 0)
            res->status = rc;
        return;
    }
    res->status = DLOCK__REPLIED;
    res->reply = reply;
}

static size_t poll_pending(dlock__conn *conns, size_t n, const dlock__node_result *results,
                           struct pollfd *fds, size_t *index)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (results[i].status != DLOCK__PENDING)
            continue;
        fds[k].fd = conns[i].fd;
        fds[k].events = dlock__conn_events(&conns[i]);
        fds[k].revents = 0;
        index[k++] = i;
    }
    return k;
}

static void give_up_on_late_nodes(dlock__conn *conns, size_t n, dlock__node_result *results,
                                  bool timed_out, int64_t waited_ms)
{
    for (size_t i = 0; i < n; i++) {
        if (results[i].status != DLOCK__PENDING)
            continue;
        results[i].sent |= conns[i].call_sent;
        dlock__conn_abandon(&conns[i]);
        if (timed_out) {
            results[i].status = DLOCK_ETIMEDOUT;
            snprintf(conns[i].err, sizeof(conns[i].err), "%s: no reply within %lld ms",
                     conns[i].ep->label, (long long)waited_ms);
        }
    }
}

void dlock__fanout(dlock__conn *conns, size_t n, dlock__call *call, int64_t deadline_ns,
                   dlock__node_result *results, dlock__enough_fn enough, void *ctx)
{
    struct pollfd fds[DLOCK__NODES_MAX];
    size_t index[DLOCK__NODES_MAX];
    bool fallback_sent[DLOCK__NODES_MAX] = {false};
    int64_t start = dlock__now_ns(), now = start;
    bool decided = false;
    size_t pending;

    for (size_t i = 0; i < n; i++) {
        int rc = dlock__conn_begin(&conns[i], call->cmd, call->len, now);
        results[i].status = rc < 0 ? rc : DLOCK__PENDING;
        results[i].reply = NULL;
        results[i].sent = conns[i].call_sent; /* begin may have sent it already */
    }
    while ((pending = poll_pending(conns, n, results, fds, index)) > 0) {
        int timeout = dlock__ms_until(deadline_ns, now);
        int ready;
        decided = enough && enough(results, n, ctx);
        if (decided || timeout == 0)
            break;
        ready = poll(fds, pending, timeout);
        now = dlock__now_ns();
        if (ready < 0 && errno != EINTR)
            break; /* only with invalid descriptors: the pending nodes time out */
        for (size_t k = 0; ready > 0 && k < pending; k++) {
            size_t i = index[k];
            dlock__reply *reply = NULL;
            int rc;
            if (!fds[k].revents)
                continue;
            rc = dlock__conn_progress(&conns[i], fds[k].revents, &reply);
            results[i].sent |= conns[i].call_sent;
            if (rc == 1)
                on_reply(&conns[i], call, &results[i], &fallback_sent[i], reply, now);
            else if (rc < 0)
                results[i].status = rc;
        }
    }
    give_up_on_late_nodes(conns, n, results, !decided, (now - start) / DLOCK__NS_PER_MS);
}

void dlock__results_clear(dlock__node_result *results, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dlock__reply_free(results[i].reply);
        results[i].reply = NULL;
    }
}
