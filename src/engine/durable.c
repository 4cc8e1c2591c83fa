/* Durability guards: the restart rule's check and WAIT. See durable.h. */
#include "durable.h"

#include "clock.h"
#include "error_text.h"
#include "route.h"
#include "slot.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_MAX 41 /* run_id and replid: 40 hex characters */
#define WAIT_TICK_MS 110 /* a server tick at the default hz (10), and a little */
/* Marker keys tried for one that lives with the grant's server on every
 * cluster endpoint: a master with 1/m of the slots of each of e clusters
 * takes m^e tries on average (9 for two clusters of 3 masters). */
#define MARKER_TRIES 65536

static int encode(dlock__call *call, int argc, const char **argv)
{
    size_t lens[4];
    long long len;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    len = dlock__command_format(&call->cmd, argc, argv, lens);
    if (len < 0)
        return DLOCK_ENOMEM;
    call->len = (size_t)len;
    return 0;
}

/* Does a call about slot `a` go where one about `b` goes, on every node? */
static bool goes_along(const dlock__conn *conns, size_t n, int a, int b)
{
    for (size_t i = 0; i < n; i++)
        if (dlock__route_server(&conns[i], a) != dlock__route_server(&conns[i], b))
            return false;
    return true;
}

size_t dlock__guard_span(const dlock_client *c, const dlock__conn *conns, const int *slots,
                         size_t k)
{
    size_t span = k > 0 ? 1 : 0;
    if (c->replicas == 0)
        return k;
    while (span < k && goes_along(conns, c->n, slots[0], slots[span]))
        span++;
    return span;
}

/* The marker's key: the first candidate (durable.h) that goes where `slot`
 * goes on every node. Standalone servers and sentinel primaries take the
 * first, so the key of a plain server is DLOCK__MARKER_KEY. */
static void choose_marker(dlock__guard *g, const dlock__conn *conns, size_t n, int slot)
{
    for (int t = 0; t < MARKER_TRIES; t++) {
        if (t == 0)
            snprintf(g->marker, sizeof(g->marker), "%s", DLOCK__MARKER_KEY);
        else
            snprintf(g->marker, sizeof(g->marker), "%s{%d}", DLOCK__MARKER_KEY, t);
        g->marker_slot = (int)dlock__key_slot(g->marker, strlen(g->marker));
        if (goes_along(conns, n, g->marker_slot, slot))
            return;
    }
    g->marker[0] = '\0';
}

/* The check's calls all go where `slot` goes, as one group with the script
 * (fanout.h), the GET too: its key lives there. A map that changed in the
 * meantime redirects some of them: dlock__guard_rerouted() sees it. */
static int encode_check(dlock__guard *g, const dlock__conn *conns, size_t n, int slot)
{
    static const char *const commands[DLOCK__CHECK_CALLS][2] = {
        {"INFO", "server"}, {"INFO", "replication"}, {"TIME", NULL}, {"GET", NULL}};
    int rc = 0;
    choose_marker(g, conns, n, slot);
    if (!g->marker[0])
        return DLOCK_EINVAL;
    for (size_t j = 0; rc == 0 && j < DLOCK__CHECK_CALLS; j++) {
        const char *argv[2] = {commands[j][0], commands[j][1] ? commands[j][1] : g->marker};
        rc = encode(&g->check[j], j == 2 ? 1 : 2, argv);
        g->check[j].slot = slot;
    }
    return rc;
}

static int encode_wait(dlock__guard *g, int64_t deadline_ns)
{
    char replicas[16], timeout[24];
    const char *argv[3] = {"WAIT", replicas, timeout};
    int64_t now = dlock__now_ns();
    /* The rest of the node's deadline, less room for the reply (how many
     * confirmed) to come back before the deadline does: a tenth, and a
     * server tick (Redis times WAIT out in its event loop, up to 1/hz =
     * 100 ms late) when there is time for it; never 0. */
    int64_t left = deadline_ns > now ? (deadline_ns - now) / DLOCK__NS_PER_MS : 0;
    int64_t tick = left / 2 < WAIT_TICK_MS ? left / 2 : WAIT_TICK_MS;
    g->wait_ms = left - (left / 10 > tick ? left / 10 : tick);
    g->wait_ms = g->wait_ms > 0 ? g->wait_ms : 1;
    snprintf(replicas, sizeof(replicas), "%d", g->replicas);
    snprintf(timeout, sizeof(timeout), "%" PRId64, g->wait_ms);
    g->wait_call.covers_previous = true;
    return encode(&g->wait_call, 3, argv);
}

int dlock__guard_init(dlock__guard *g, const dlock_client *c, dlock__conn *conns, size_t n,
                      unsigned what, dlock__call *const *scripts, size_t k, int64_t deadline_ns)
{
    int slot = k ? scripts[0]->slot : -1;
    int rc = 0;
    memset(g, 0, sizeof(*g));
    for (size_t i = 0; i < n; i++)
        g->reroutes[i] = dlock__route_reroutes(&conns[i]);
    g->before = what & DLOCK__GUARD_CHECK && c->restart_delay_ms > 0 ? DLOCK__CHECK_CALLS : 0;
    g->k = k;
    g->wait = what & DLOCK__GUARD_WAIT && c->replicas > 0;
    g->replicas = c->replicas;
    g->restart_delay_ms = c->restart_delay_ms;
    g->calls = calloc(g->before + k + 1, sizeof(dlock__call *));
    if (!g->calls)
        return DLOCK_ENOMEM;
    /* The marker is chosen from the whole slot map: one a MOVED made due
     * is loaded now (the batch would load it only after the choice). A
     * failure here shows again in the batch, which prepares too. */
    for (size_t i = 0; g->before && i < n; i++)
        dlock__route_prepare(&conns[i], slot, deadline_ns);
    if (g->before)
        rc = encode_check(g, conns, n, slot);
    if (rc == 0 && g->wait)
        rc = encode_wait(g, deadline_ns);
    /* On a cluster, WAIT goes where the script went: it answers for that
     * server's writes. */
    g->wait_call.slot = slot;
    for (size_t j = 0; j < g->before; j++)
        g->calls[g->n_calls++] = &g->check[j];
    for (size_t j = 0; j < k; j++)
        g->calls[g->n_calls++] = scripts[j];
    if (g->wait)
        g->calls[g->n_calls++] = &g->wait_call;
    return rc;
}

void dlock__guard_free(dlock__guard *g)
{
    for (size_t j = 0; j < DLOCK__CHECK_CALLS; j++)
        dlock__command_free(g->check[j].cmd);
    dlock__command_free(g->wait_call.cmd);
    free(g->calls);
    memset(g, 0, sizeof(*g));
}

/* The value of "field:" in an INFO reply, into out (at most len - 1 bytes);
 * false if absent. */
static bool info_field(const dlock__node_result *r, const char *field, char *out, size_t len)
{
    const char *at, *end;
    size_t flen = strlen(field);
    if (r->status != DLOCK__REPLIED || r->reply->type != DLOCK__REPLY_STRING)
        return false;
    for (at = strstr(r->reply->str, field); at; at = strstr(at + 1, field)) {
        if ((at == r->reply->str || at[-1] == '\n') && at[flen] == ':')
            break;
    }
    if (!at)
        return false;
    at += flen + 1;
    end = at + strcspn(at, "\r\n");
    if ((size_t)(end - at) >= len)
        return false;
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = '\0';
    return true;
}

/* What one server's check replies say. */
struct server_view {
    bool identified; /* INFO allowed: run_id and replid known */
    char run_id[ID_MAX], replid[ID_MAX];
    long long uptime_s; /* -1: unknown */
    int64_t now_ms;     /* the server's TIME */
    const char *marker; /* NULL: missing */
    int error;          /* TIME or GET failed: the code */
};

static const dlock__node_result *result_at(const dlock__node_result *results, size_t n,
                                           size_t call, size_t i)
{
    return &results[call * n + i];
}

static int reply_error(const dlock__node_result *r)
{
    if (r->status != DLOCK__REPLIED)
        return r->status == DLOCK__PENDING ? DLOCK_ETIMEDOUT : r->status;
    return r->reply->type == DLOCK__REPLY_ERROR ? dlock__server_error_code(r->reply) : 0;
}

static int read_time(const dlock__node_result *r, int64_t *now_ms)
{
    const dlock__reply *a = r->reply;
    int rc = reply_error(r);
    if (rc < 0)
        return rc;
    if (a->type != DLOCK__REPLY_ARRAY || a->elements != 2 ||
        a->element[0]->type != DLOCK__REPLY_STRING || a->element[1]->type != DLOCK__REPLY_STRING)
        return DLOCK_EPROTO;
    *now_ms = strtoll(a->element[0]->str, NULL, 10) * 1000 +
              strtoll(a->element[1]->str, NULL, 10) / 1000;
    return 0;
}

static void read_view(const dlock__node_result *results, size_t n, size_t i, struct server_view *v)
{
    const dlock__node_result *marker = result_at(results, n, 3, i);
    char uptime[24];
    memset(v, 0, sizeof(*v));
    /* INFO is @dangerous: a user without it is left with the marker. */
    v->identified = info_field(result_at(results, n, 0, i), "run_id", v->run_id, ID_MAX) &&
                    info_field(result_at(results, n, 1, i), "master_replid", v->replid, ID_MAX);
    v->uptime_s = info_field(result_at(results, n, 0, i), "uptime_in_seconds", uptime, sizeof(uptime))
                      ? strtoll(uptime, NULL, 10)
                      : -1;
    v->error = read_time(result_at(results, n, 2, i), &v->now_ms);
    if (v->error == 0)
        v->error = reply_error(marker);
    if (v->error < 0)
        return;
    if (marker->reply->type == DLOCK__REPLY_STRING)
        v->marker = marker->reply->str;
    else if (marker->reply->type != DLOCK__REPLY_NIL)
        v->error = DLOCK_EWRONGTYPE;
}

int64_t dlock__restart_remaining(int64_t delay_ms, long long uptime_s, const char *run_id,
                                 const char *replid, int64_t now_ms, const char *marker,
                                 bool *mark)
{
    char m_run_id[ID_MAX], m_replid[ID_MAX], *end = NULL;
    long long since_ms = 0;
    int64_t remaining = 0;
    int used = 0;
    /* Whole seconds, rounded down: only that much uptime is certain. */
    if (uptime_s >= 0 && uptime_s <= delay_ms / 1000)
        remaining = delay_ms - uptime_s * 1000;
    if (marker && sscanf(marker, "%40s %40s %n", m_run_id, m_replid, &used) == 2 && used > 0)
        since_ms = strtoll(marker + used, &end, 10);
    *mark = !end || end == marker + used || *end ||
            (run_id && (strcmp(m_run_id, run_id) != 0 || strcmp(m_replid, replid) != 0)) ||
            since_ms > now_ms; /* the server's clock went back: start again */
    if (*mark)
        return delay_ms;
    if (since_ms + delay_ms - now_ms > remaining)
        remaining = since_ms + delay_ms - now_ms;
    return remaining;
}

static dlock__gate restart_gate(const dlock__guard *g, const dlock__node_result *results, size_t n,
                                size_t i)
{
    dlock__gate gate = {DLOCK__GATE_OPEN, 0, 0, 0, false, false};
    struct server_view v;
    read_view(results, n, i, &v);
    if (v.error < 0) {
        gate.kind = DLOCK__GATE_FAILED;
        gate.error = v.error;
        return gate;
    }
    gate.remaining_ms = dlock__restart_remaining(
        g->restart_delay_ms, v.uptime_s, v.identified ? v.run_id : NULL,
        v.identified ? v.replid : NULL, v.now_ms, v.marker, &gate.mark);
    if (gate.remaining_ms > 0)
        gate.kind = DLOCK__GATE_RESTARTING;
    return gate;
}

static dlock__gate wait_gate(const dlock__guard *g, const dlock__node_result *r)
{
    dlock__gate gate = {DLOCK__GATE_OPEN, 0, 0, 0, false, false};
    int rc = r->status == DLOCK__PENDING ? 0 : reply_error(r);
    if (r->status == DLOCK__PENDING) {
        gate.kind = DLOCK__GATE_PENDING;
    } else if (rc == DLOCK_ETIMEDOUT) {
        /* The server times WAIT out on its own clock (within 1/hz): its
         * answer may come after our deadline. Not in time is too few. */
        gate.kind = DLOCK__GATE_UNACKED;
        gate.error = DLOCK_ENOREPLICAS;
        gate.acked = -1;
    } else if (rc < 0) {
        gate.kind = DLOCK__GATE_FAILED;
        gate.error = rc;
    } else if (r->reply->type != DLOCK__REPLY_INTEGER) {
        gate.kind = DLOCK__GATE_FAILED;
        gate.error = DLOCK_EPROTO;
    } else if (r->reply->integer < g->replicas) {
        gate.kind = DLOCK__GATE_UNACKED;
        gate.error = DLOCK_ENOREPLICAS;
        gate.acked = r->reply->integer;
    }
    return gate;
}

bool dlock__guard_rerouted(dlock__guard *g, const dlock__conn *conns, size_t n)
{
    bool any = false;
    for (size_t i = 0; (g->before || g->wait) && i < n; i++) {
        g->rerouted[i] = dlock__route_reroutes(&conns[i]) != g->reroutes[i];
        any |= g->rerouted[i];
    }
    return any;
}

dlock__gate dlock__guard_gate(const dlock__guard *g, const dlock__node_result *results, size_t n,
                              size_t i)
{
    dlock__gate gate = {DLOCK__GATE_OPEN, 0, 0, 0, false, false};
    if (g->rerouted[i]) {
        gate.kind = DLOCK__GATE_FAILED;
        gate.error = DLOCK_ESERVER;
        gate.rerouted = true;
        return gate;
    }
    if (g->before) {
        /* Replies come in order: the checks are in once the last one is. */
        if (result_at(results, n, g->before - 1, i)->status == DLOCK__PENDING)
            gate.kind = DLOCK__GATE_PENDING;
        else
            gate = restart_gate(g, results, n, i);
    }
    if (gate.kind == DLOCK__GATE_OPEN && g->wait)
        gate = wait_gate(g, result_at(results, n, g->before + g->k, i));
    return gate;
}

void dlock__guard_mark(const dlock__guard *g, dlock__lane *lane, const dlock__node_result *results,
                       size_t n, int64_t deadline_ns)
{
    for (size_t i = 0; g->before && i < n; i++) {
        dlock__gate gate = restart_gate(g, results, n, i);
        char value[2 * ID_MAX + 32];
        const char *argv[4] = {"SET", g->marker, value, "NX"};
        dlock__call call = {.slot = g->marker_slot};
        dlock__node_result r = {0};
        struct server_view v;
        /* A rerouted node's view may be another server's. */
        if (!gate.mark || g->rerouted[i])
            continue;
        read_view(results, n, i, &v);
        snprintf(value, sizeof(value), "%s %s %" PRId64, v.identified ? v.run_id : "-",
                 v.identified ? v.replid : "-", v.now_ms);
        /* NX where there was none: two clients that saw it missing agree on
         * the first one's; another server's marker is overwritten. */
        if (encode(&call, v.marker ? 3 : 4, argv) == 0)
            dlock__fanout(&lane->conns[i], 1, &call, deadline_ns, &r, NULL, NULL);
        dlock__results_clear(&r, 1);
        dlock__command_free(call.cmd);
    }
}

void dlock__guard_drop_blocked(const dlock__guard *g, dlock__lane *lane,
                               const dlock__node_result *results, size_t n)
{
    for (size_t i = 0; g->wait && i < n; i++)
        if (result_at(results, n, g->before + g->k, i)->status != DLOCK__REPLIED)
            dlock__conn_close(&lane->conns[i]);
}

bool dlock__guard_restarting(const dlock__guard *g, const dlock__node_result *results, size_t n)
{
    for (size_t i = 0; g->before && i < n; i++)
        if (dlock__guard_gate(g, results, n, i).kind == DLOCK__GATE_RESTARTING)
            return true;
    return false;
}

void dlock__guard_explain(const dlock__guard *g, dlock__lane *lane,
                          const dlock__node_result *results, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dlock__gate gate = dlock__guard_gate(g, results, n, i);
        const char *label = lane->conns[i].ep->label;
        if (gate.kind == DLOCK__GATE_RESTARTING)
            dlock__append_error(lane, "; %s lost its data less than %.1f s ago (restart, FLUSHALL or "
                   "promotion): it grants nothing for %.1f s more (restart delay)",
                   label, (double)g->restart_delay_ms / 1000, (double)gate.remaining_ms / 1000);
        else if (gate.kind == DLOCK__GATE_UNACKED && gate.acked < 0)
            dlock__append_error(lane, "; %s: fewer than %d replicas acknowledged in time (WAIT %d %" PRId64
                   " gave no answer by the node's deadline)", label, g->replicas, g->replicas,
                   g->wait_ms);
        else if (gate.kind == DLOCK__GATE_UNACKED)
            dlock__append_error(lane, "; %s: %lld of %d replicas acknowledged within %" PRId64 " ms", label,
                   gate.acked, g->replicas, g->wait_ms);
        else if (gate.rerouted)
            dlock__append_error(lane, "; %s: the batch was redirected (a slot moved or a failover), so the "
                   "%s may have been another server's", label,
                   g->before ? "restart check" : "WAIT");
        else if (gate.kind == DLOCK__GATE_FAILED)
            dlock__append_error(lane, "; %s: %s failed: %s", label,
                   g->before && restart_gate(g, results, n, i).kind == DLOCK__GATE_FAILED
                       ? "the restart check" : "WAIT",
                   dlock__error_text(gate.error));
    }
}
