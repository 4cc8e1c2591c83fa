/* dlock_status_query: a read-only look at a lock name, decided as soon as
 * the answers that came in tell the majority's view. */
#include "clock.h"
#include "kinds.h"
#include "lane.h"
#include "names.h"
#include "owner.h"
#include "read.h"
#include "status_record.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One node's view, when its part in the read is an answer. */
struct view {
    dlock_status st;
    char type[16]; /* of the lock key, when it is not a lock */
};

static int parse_view(struct view *v, const dlock__reply *r)
{
    const dlock__reply *pttl, *fence, *owner;
    const char *type;
    if (r->type == DLOCK__REPLY_ERROR)
        return dlock__server_error_code(r);
    if (r->type != DLOCK__REPLY_ARRAY || r->elements != 4 ||
        r->element[0]->type != DLOCK__REPLY_STRING || r->element[1]->type != DLOCK__REPLY_INTEGER)
        return DLOCK_EPROTO;
    type = r->element[0]->str;
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

/* The read's judge: a node holds the key (yes) or not (no). */
static int judge_view(const dlock__read *rd, size_t i, void *ctx)
{
    struct view *views = ctx;
    int rc = parse_view(&views[i], rd->results[i].reply);
    return rc < 0 ? rc : views[i].st.held ? DLOCK__READ_YES : DLOCK__READ_NO;
}

/* The majority's view: held if a majority of all nodes hold the key, the
 * shortest TTL among them, the largest fence anyone reported, a holder's
 * record. Needs answers from a majority. */
static int combine(dlock_status *out, const struct view *views, const dlock__read *rd)
{
    bool first = true;
    int rc = dlock__read_verdict(&rd->tally);
    memset(out, 0, sizeof(*out));
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < rd->n; i++) {
        const dlock_status *v = &views[i].st;
        if (rd->parts[i] != DLOCK__READ_YES && rd->parts[i] != DLOCK__READ_NO)
            continue; /* failed, or not waited for */
        out->fence = v->fence > out->fence ? v->fence : out->fence;
        if (!v->held)
            continue;
        /* The shortest TTL; a key without one only when none has one. */
        if (first || (v->ttl_ms >= 0 && (out->ttl_ms < 0 || v->ttl_ms < out->ttl_ms)))
            out->ttl_ms = v->ttl_ms;
        first = false;
        if (v->holders && !out->holders) {
            out->owner = v->owner;
            out->holders = 1;
        }
    }
    out->held = dlock__read_agreed(&rd->tally);
    if (!out->held) {
        out->ttl_ms = 0;
        out->holders = 0;
    }
    out->nodes_answered = (unsigned)(rd->tally.yes + rd->tally.no);
    out->nodes_held = (unsigned)rd->tally.yes;
    return 0;
}

static void explain(dlock_client *c, const char *name, int rc, const struct view *views,
                    const dlock__read *rd)
{
    const char *type = "value of another type";
    for (size_t i = 0; i < rd->n; i++)
        type = views[i].type[0] ? views[i].type : type;
    if (rc == DLOCK_EWRONGTYPE)
        dlock__set_error(&c->main, "WRONGTYPE %s holds a %s, not a lock", name, type);
    else if (rc == DLOCK_ENOQUORUM)
        dlock__set_error(&c->main, "no majority of the servers answered");
    else
        dlock__set_error(&c->main, "%s", dlock_strerror(rc));
    dlock__append_node_errors(&c->main, rd->conns, rd->results, rd->n);
}

/* Each node's own answer, for dlock_status_node(). */
static void keep_node_views(dlock_status *out, const struct view *views, const dlock__read *rd)
{
    out->n = rd->n;
    for (size_t i = 0; i < rd->n; i++) {
        dlock_node_status *ns = &out->nodes[i];
        const dlock__reply *r = rd->results[i].reply;
        int part = rd->parts[i];
        ns->code = part == DLOCK__READ_LATE ? DLOCK_ETIMEDOUT : part < 0 ? part : 0;
        ns->held = ns->code == 0 && views[i].st.held;
        ns->ttl_ms = ns->code == 0 ? views[i].st.ttl_ms : 0;
        ns->fence = ns->code == 0 ? views[i].st.fence : 0;
        out->errors[i][0] = '\0';
        if (ns->code < 0 && r && r->type == DLOCK__REPLY_ERROR)
            snprintf(out->errors[i], sizeof(out->errors[i]), "%s", r->str);
        else if (ns->code < 0)
            snprintf(out->errors[i], sizeof(out->errors[i]), "%s",
                     rd->conns[i].err[0] ? rd->conns[i].err : dlock_strerror(ns->code));
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
    dlock__read rd = {.conns = c->main.conns + node, .n = 1,
                      .deadline_ns = dlock__node_deadline(c, 0, dlock__now_ns())};
    int nkeys = 1, rc = 0;

    for (size_t i = 0; kind->aux[i] && rc == 0; i++) {
        aux[i] = dlock__aux_key(keys->lock, kind->aux[i]);
        k[nkeys++] = aux[i];
        rc = aux[i] ? 0 : DLOCK_ENOMEM;
    }
    if (rc == 0)
        rc = dlock__read_script(&rd, kind->status, nkeys, k);
    if (rc == 0) {
        rc = rd.parts[0] < 0 ? rd.parts[0] : kind->read_status(out, rd.results[0].reply);
        if (rc < 0) {
            dlock__set_error(&c->main, "status of %s %s: %s", kind->name, keys->lock,
                             dlock_strerror(rc));
            dlock__append_node_errors(&c->main, rd.conns, rd.results, 1);
        }
        dlock__read_clear(&rd);
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
    struct view views[DLOCK__NODES_MAX] = {0};
    dlock__read rd = {.conns = c->main.conns + first, .n = count,
                      .deadline_ns = dlock__node_deadline(c, 0, dlock__now_ns()),
                      .majority = true, .judge = judge_view, .ctx = views};
    dlock__keys keys;
    char why[256];
    int rc = dlock__keys_make(&keys, name, why, sizeof(why));
    if (rc < 0) {
        dlock__set_error(&c->main, "%s", why);
        return rc;
    }
    const char *const k[] = {keys.lock, keys.fence, keys.owner};
    rc = dlock__read_script(&rd, DLOCK__SCRIPT_STATUS, 3, k);
    if (rc == 0) {
        rc = combine(out, views, &rd);
        /* A name that is no string: a kind whose status is its own. */
        const dlock__kind *own =
            rc == DLOCK_EWRONGTYPE && count == 1 ? dlock__kinds_reading(views[0].type, false) : NULL;
        if (own)
            rc = query_alone(out, c, &keys, first, own);
        else if (rc == 0)
            keep_node_views(out, views, &rd);
        if (rc == 0 && !out->permits)
            rc = query_holders(out, c, &keys, first, count);
        else if (rc < 0)
            explain(c, name, rc, views, &rd);
        dlock__read_clear(&rd);
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

void dlock_status_free(dlock_status *st)
{
    if (st) {
        free(st->permit_owners);
        free(st->permits);
    }
    free(st);
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
