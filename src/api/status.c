/* dlock_status_query: a read-only look at a lock name, decided as soon as
 * the answers that came in tell the majority's view. */
#include "attempt.h"
#include "client.h"
#include "clock.h"
#include "kinds.h"
#include "names.h"
#include "owner.h"
#include "scripts.h"
#include "status_record.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One node's view: code 0, or its failure (< 0), or 1 when it was not
 * waited for. */
struct view {
    int code;
    char type[16]; /* of the lock key, when it is not a lock */
    dlock_status st;
};

/* The type the status script says the lock key has, or NULL. */
static const char *type_of(const dlock__reply *r)
{
    if (r->type != DLOCK__REPLY_ARRAY || r->elements != 4 ||
        r->element[0]->type != DLOCK__REPLY_STRING)
        return NULL;
    return r->element[0]->str;
}

static int parse_view(struct view *v, const dlock__reply *r)
{
    const dlock__reply *pttl, *fence, *owner;
    const char *type = type_of(r);
    if (r->type == DLOCK__REPLY_ERROR)
        return dlock__server_error_code(r);
    if (!type || r->element[1]->type != DLOCK__REPLY_INTEGER)
        return DLOCK_EPROTO;
    pttl = r->element[1];
    fence = r->element[2];
    owner = r->element[3];
    if (strcmp(type, "none") != 0 && strcmp(type, "string") != 0) {
        snprintf(v->type, sizeof(v->type), "%s", type);
        return DLOCK_EWRONGTYPE;
    }
    memset(&v->st, 0, sizeof(v->st));
    v->st.held = strcmp(type, "string") == 0;
    v->st.ttl_ms = v->st.held ? pttl->integer : 0;
    /* Lua's false arrives as a nil reply. */
    if (fence->type == DLOCK__REPLY_STRING)
        v->st.fence = strtoull(fence->str, NULL, 10);
    if (owner->type == DLOCK__REPLY_STRING && dlock__owner_parse(&v->st.owner, owner->str) == 0)
        v->st.holders = 1;
    return 0;
}

struct gather {
    size_t quorum;
    int64_t start_ns, known_ns; /* known_ns: 0 until the majority's view is */
};

/* Enough answers to know the majority's view: a majority answered, and
 * either holds the key or so many do not that a majority never will; or so
 * many cannot answer that no majority will. The others then get as long
 * again as that took (1 ms at least) to show their own view. */
static bool known(const dlock__node_result *results, size_t n, size_t k, int64_t *deadline_ns,
                  void *ctx)
{
    struct gather *g = ctx;
    size_t held = 0, free = 0, failed = 0;
    int64_t grace;
    (void)k;
    for (size_t i = 0; i < n; i++) {
        const char *type = results[i].status == DLOCK__REPLIED ? type_of(results[i].reply) : NULL;
        if (results[i].status == DLOCK__PENDING)
            continue;
        if (type && strcmp(type, "string") == 0)
            held++;
        else if (type && strcmp(type, "none") == 0)
            free++;
        else
            failed++; /* no answer, or a key of another type: combine() counts it so */
    }
    if (held + free + failed == n || failed > n - g->quorum)
        return true;
    if (!(held + free >= g->quorum && (held >= g->quorum || free > n - g->quorum)))
        return false;
    if (!g->known_ns)
        g->known_ns = dlock__now_ns();
    grace = g->known_ns - g->start_ns > DLOCK__NS_PER_MS ? g->known_ns - g->start_ns
                                                          : DLOCK__NS_PER_MS;
    if (g->known_ns + grace < *deadline_ns)
        *deadline_ns = g->known_ns + grace;
    return false;
}

/* The majority's view: held if a majority of all nodes hold the key, the
 * shortest TTL among them, the largest fence anyone reported, a holder's
 * record. Needs answers from a majority. */
static int combine(dlock_status *out, const struct view *views, size_t n, size_t quorum)
{
    unsigned answered = 0, held = 0;
    int code = 0;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        const dlock_status *v = &views[i].st;
        if (views[i].code < 0) {
            code = code && code != views[i].code ? DLOCK_ENOQUORUM : views[i].code;
            continue;
        }
        if (views[i].code > 0)
            continue; /* not waited for */
        answered++;
        out->fence = v->fence > out->fence ? v->fence : out->fence;
        if (!v->held)
            continue;
        /* The shortest TTL; a key without one only when none has one. */
        if (held++ == 0 || (v->ttl_ms >= 0 && (out->ttl_ms < 0 || v->ttl_ms < out->ttl_ms)))
            out->ttl_ms = v->ttl_ms;
        if (v->holders && !out->holders) {
            out->owner = v->owner;
            out->holders = 1;
        }
    }
    /* Several servers that cannot be reached are no majority; a failure
     * that all of them report (a wrong password, a hash under the name)
     * is that failure. */
    if (answered < quorum)
        return !code || (n > 1 && (code == DLOCK_ECONN || code == DLOCK_ETIMEDOUT))
                   ? DLOCK_ENOQUORUM
                   : code;
    out->held = held >= quorum;
    if (!out->held) {
        out->ttl_ms = 0;
        out->holders = 0;
    }
    out->nodes_answered = answered;
    out->nodes_held = held;
    return 0;
}

static void explain(dlock_client *c, const char *name, int rc, const struct view *views,
                    const dlock__node_result *results, size_t first, size_t count)
{
    const char *type = "value of another type";
    for (size_t i = 0; i < count; i++)
        type = views[i].type[0] ? views[i].type : type;
    if (rc == DLOCK_EWRONGTYPE)
        dlock__set_error(&c->main, "WRONGTYPE %s holds a %s, not a lock", name, type);
    else if (rc == DLOCK_ENOQUORUM)
        dlock__set_error(&c->main, "no majority of the servers answered");
    else
        dlock__set_error(&c->main, "%s", dlock_strerror(rc));
    dlock__append_node_errors(&c->main, c->main.conns + first, results, count);
}

/* Each node's own answer, for dlock_status_node(). */
static void keep_node_views(dlock_status *out, const struct view *views,
                            const dlock__node_result *results, const dlock__conn *conns,
                            size_t count)
{
    out->n = count;
    for (size_t i = 0; i < count; i++) {
        dlock_node_status *ns = &out->nodes[i];
        const dlock__reply *r = results[i].reply;
        ns->code = views[i].code > 0 ? DLOCK_ETIMEDOUT : views[i].code;
        ns->held = ns->code == 0 && views[i].st.held;
        ns->ttl_ms = ns->code == 0 ? views[i].st.ttl_ms : 0;
        ns->fence = ns->code == 0 ? views[i].st.fence : 0;
        out->errors[i][0] = '\0';
        if (ns->code < 0 && r && r->type == DLOCK__REPLY_ERROR)
            snprintf(out->errors[i], sizeof(out->errors[i]), "%s", r->str);
        else if (ns->code < 0)
            snprintf(out->errors[i], sizeof(out->errors[i]), "%s",
                     conns[i].err[0] ? conns[i].err : dlock_strerror(ns->code));
        ns->error = out->errors[i];
    }
}

/* Runs `kind`'s status script (KEYS: NAME, then the kind's auxiliary keys)
 * on node `node` and gives its reply to the kind's reader. */
static int query_kind(dlock_status *out, dlock_client *c, const dlock__keys *keys, size_t node,
                      const dlock__kind *kind)
{
    char *aux[DLOCK__KIND_AUX_MAX] = {NULL};
    const char *k[1 + DLOCK__KIND_AUX_MAX] = {keys->lock};
    dlock__node_result result;
    dlock__script_call call;
    int nkeys = 1, rc = 0;

    for (size_t i = 0; kind->aux[i] && rc == 0; i++) {
        aux[i] = dlock__aux_key(keys->lock, kind->aux[i]);
        k[nkeys++] = aux[i];
        rc = aux[i] ? 0 : DLOCK_ENOMEM;
    }
    if (rc == 0)
        rc = dlock__script_encode(&call, kind->status, nkeys, k, 0, NULL);
    if (rc == 0) {
        dlock__fanout(c->main.conns + node, 1, &call.call,
                      dlock__node_deadline(c, 0, dlock__now_ns()), &result, NULL, NULL);
        rc = result.status == DLOCK__REPLIED ? kind->read_status(out, result.reply)
                                             : result.status;
        if (rc < 0) {
            dlock__set_error(&c->main, "status of %s %s: %s", kind->name, keys->lock,
                             dlock_strerror(rc));
            dlock__append_node_errors(&c->main, c->main.conns + node, &result, 1);
        }
        dlock__results_clear(&result, 1);
        dlock__script_call_free(&call);
    }
    for (size_t i = 0; i < DLOCK__KIND_AUX_MAX; i++)
        free(aux[i]);
    return rc;
}

/* A name whose key is not a string is of a kind with a status of its own
 * (a semaphore's sorted set, on one server): from its status script on
 * node `node`. */
static int query_alone(dlock_status *out, dlock_client *c, const dlock__keys *keys, size_t node,
                       const dlock__kind *kind)
{
    int rc = query_kind(out, c, keys, node, kind);
    if (rc == 0) {
        out->nodes_answered = 1;
        out->nodes_held = out->held;
        out->n = 1;
        out->nodes[0] = (dlock_node_status){0, out->errors[0], out->held, out->ttl_ms, out->fence};
    }
    return rc;
}

/* A held name whose holders are a kind's to read (held shared, without
 * an owner record): from the first server that holds it. */
static int query_holders(dlock_status *out, dlock_client *c, const dlock__keys *keys,
                         size_t first, size_t count)
{
    const dlock__kind *kind = out->held ? dlock__kinds_reading("string", out->owner.pid != 0)
                                        : NULL;
    for (size_t i = 0; i < count && kind; i++)
        if (out->nodes[i].held)
            return query_kind(out, c, keys, first + i, kind);
    return 0;
}

/* Asks nodes [first, first + count) and combines their views into *out. */
static int query(dlock_status *out, dlock_client *c, const char *name, size_t first, size_t count)
{
    dlock__node_result results[DLOCK__NODES_MAX];
    struct view views[DLOCK__NODES_MAX] = {{0}};
    struct gather g = {count / 2 + 1, dlock__now_ns(), 0};
    dlock__keys keys;
    dlock__script_call call;
    char why[256];
    int rc = dlock__keys_make(&keys, name, why, sizeof(why));
    if (rc < 0) {
        dlock__set_error(&c->main, "%s", why);
        return rc;
    }
    const char *const k[] = {keys.lock, keys.fence, keys.owner};
    rc = dlock__script_encode(&call, DLOCK__SCRIPT_STATUS, 3, k, 0, NULL);
    if (rc == 0) {
        dlock__fanout(c->main.conns + first, count, &call.call,
                      dlock__node_deadline(c, 0, dlock__now_ns()), results, known, &g);
        for (size_t i = 0; i < count; i++)
            views[i].code = results[i].status == DLOCK__REPLIED
                                ? parse_view(&views[i], results[i].reply)
                                : results[i].status == DLOCK__PENDING ? 1 : results[i].status;
        rc = combine(out, views, count, g.quorum);
        /* A name that is no string: a kind whose status is its own. */
        const dlock__kind *own =
            rc == DLOCK_EWRONGTYPE && count == 1 ? dlock__kinds_reading(views[0].type, false) : NULL;
        if (own)
            rc = query_alone(out, c, &keys, first, own);
        else if (rc == 0)
            keep_node_views(out, views, results, c->main.conns + first, count);
        if (rc == 0 && !out->permits)
            rc = query_holders(out, c, &keys, first, count);
        else
            explain(c, name, rc, views, results, first, count);
        dlock__results_clear(results, count);
        dlock__script_call_free(&call);
    }
    dlock__keys_clear(&keys);
    return rc;
}

static int query_into(dlock_status **out, dlock_client *c, const char *name, size_t first,
                      size_t count)
{
    dlock_status *st = calloc(1, sizeof(*st));
    int rc;
    if (!st) {
        dlock__set_error(&c->main, "out of memory");
        return DLOCK_ENOMEM;
    }
    rc = query(st, c, name, first, count);
    if (rc < 0) {
        dlock_status_free(st);
        return rc;
    }
    st->holder.host = st->owner.host;
    st->holder.pid = st->owner.pid;
    st->holder.since_ms = st->owner.since_ms;
    st->holder.ttl_ms = st->ttl_ms;
    st->holder.fence = st->fence;
    st->limit = st->permits ? st->limit : 1;
    *out = st;
    return 0;
}

int dlock_status_query(dlock_status **out, dlock_client *c, const char *name)
{
    int rc = dlock__call_start(c, out);
    return rc < 0 ? rc : query_into(out, c, name, 0, c->n);
}

int dlock_status_query_node(dlock_status **out, dlock_client *c, const char *name, size_t node)
{
    int rc = dlock__call_start(c, out);
    if (rc == 0 && node >= c->n) {
        dlock__set_error(&c->main, "no server number %zu", node);
        rc = DLOCK_EINVAL;
    }
    return rc < 0 ? rc : query_into(out, c, name, node, 1);
}

int dlock_status_held(const dlock_status *st)
{
    return st && st->held;
}

int64_t dlock_status_ttl_ms(const dlock_status *st)
{
    return st ? st->ttl_ms : 0;
}

uint64_t dlock_status_fence(const dlock_status *st)
{
    return st ? st->fence : 0;
}

size_t dlock_status_holders(const dlock_status *st)
{
    return st ? st->holders : 0;
}

const dlock_holder *dlock_status_holder(const dlock_status *st, size_t i)
{
    if (!st || i >= st->holders)
        return NULL;
    return st->permits ? &st->permits[i] : &st->holder;
}

unsigned dlock_status_nodes_answered(const dlock_status *st)
{
    return st ? st->nodes_answered : 0;
}

unsigned dlock_status_nodes_held(const dlock_status *st)
{
    return st ? st->nodes_held : 0;
}

const dlock_node_status *dlock_status_node(const dlock_status *st, size_t node)
{
    return st && node < st->n ? &st->nodes[node] : NULL;
}

unsigned dlock_status_limit(const dlock_status *st)
{
    return st ? st->limit : 0;
}

int dlock_status_shared(const dlock_status *st)
{
    return st && st->shared;
}

int dlock_status_describe(const dlock_status *st, char *out, size_t len)
{
    char found[64];
    const dlock__kind *kind;
    if (!st || !out || !len)
        return DLOCK_EINVAL;
    kind = st->held ? dlock__kinds_found(st, found, sizeof(found)) : NULL;
    if (kind && kind->holders)
        kind->holders(st, out, len);
    else
        snprintf(out, len, "not held");
    return 0;
}

void dlock_status_free(dlock_status *st)
{
    if (st) {
        free(st->permit_owners);
        free(st->permits);
    }
    free(st);
}
