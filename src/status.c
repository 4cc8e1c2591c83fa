/* dlock_status_query: a read-only look at a lock name. */
#include "client.h"
#include "clock.h"
#include "names.h"
#include "scripts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of "field": in our own owner record (see lock.c), or NULL. */
static const char *field(const char *record, const char *name)
{
    char key[32];
    const char *at;
    snprintf(key, sizeof(key), "\"%s\":", name);
    at = strstr(record, key);
    return at ? at + strlen(key) : NULL;
}

static void parse_owner(dlock_status *out, const char *record)
{
    const char *host = field(record, "host"), *pid = field(record, "pid");
    const char *since = field(record, "since");
    size_t j = 0;
    if (!host || *host != '"' || !pid || !since)
        return;
    for (host++; *host && *host != '"' && j + 1 < sizeof(out->host); host++) {
        if (*host == '\\' && host[1])
            host++; /* \" and \\ stand for themselves; \u00XX becomes "u00XX" */
        out->host[j++] = *host;
    }
    out->host[j] = '\0';
    out->pid = strtol(pid, NULL, 10);
    out->since_ms = strtoll(since, NULL, 10);
    out->has_owner = 1;
}

static int parse_status(dlock_status *out, const dlock__reply *r)
{
    const dlock__reply *type, *pttl, *fence, *owner;
    if (r->type == DLOCK__REPLY_ERROR)
        return dlock__server_error_code(r);
    if (r->type != DLOCK__REPLY_ARRAY || r->elements != 4)
        return DLOCK_EPROTO;
    type = r->element[0];
    pttl = r->element[1];
    fence = r->element[2];
    owner = r->element[3];
    if (type->type != DLOCK__REPLY_STRING || pttl->type != DLOCK__REPLY_INTEGER)
        return DLOCK_EPROTO;
    if (strcmp(type->str, "none") != 0 && strcmp(type->str, "string") != 0)
        return DLOCK_EWRONGTYPE;
    memset(out, 0, sizeof(*out));
    out->held = strcmp(type->str, "string") == 0;
    out->pttl_ms = out->held ? pttl->integer : 0;
    /* Lua's false arrives as a nil reply. */
    if (fence->type == DLOCK__REPLY_STRING)
        out->fence = strtoull(fence->str, NULL, 10);
    if (owner->type == DLOCK__REPLY_STRING)
        parse_owner(out, owner->str);
    return 0;
}

/* The majority's view: held if a majority of the nodes that answered hold
 * the key (and they are a majority of all nodes), the shortest TTL among
 * them, the largest fence anyone reported, a holder's record. */
static int combine(dlock_status *out, const dlock_status *views, const int *codes, size_t n,
                   size_t quorum)
{
    unsigned answered = 0, held = 0;
    int code = 0;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        if (codes[i] < 0) {
            code = code && code != codes[i] ? DLOCK_ENOQUORUM : codes[i];
            continue;
        }
        answered++;
        out->fence = views[i].fence > out->fence ? views[i].fence : out->fence;
        if (!views[i].held)
            continue;
        if (held++ == 0 || (views[i].pttl_ms >= 0 && views[i].pttl_ms < out->pttl_ms))
            out->pttl_ms = views[i].pttl_ms;
        if (views[i].has_owner && !out->has_owner) {
            memcpy(out->host, views[i].host, sizeof(out->host));
            out->pid = views[i].pid;
            out->since_ms = views[i].since_ms;
            out->has_owner = 1;
        }
    }
    if (answered < quorum)
        return code ? code : DLOCK_ENOQUORUM;
    out->held = held >= quorum;
    if (!out->held) {
        out->pttl_ms = 0;
        out->has_owner = 0;
    }
    out->nodes_answered = answered;
    out->nodes_held = held;
    return 0;
}

/* Queries nodes [first, first + count) and fills views/codes. */
static int query(dlock_client *c, const char *name, size_t first, size_t count,
                 dlock_status *views, int *codes)
{
    dlock__node_result results[DLOCK__NODES_MAX];
    dlock__keys keys;
    const char *k[3];
    dlock__call call;
    char why[256];
    int rc = dlock__keys_make(&keys, name, why, sizeof(why));
    if (rc < 0) {
        dlock__set_error(&c->main, "%s", why);
        return rc;
    }
    k[0] = keys.lock;
    k[1] = keys.fence;
    k[2] = keys.owner;
    rc = dlock__script_call(&call, DLOCK__SCRIPT_STATUS, 3, k, 0, NULL);
    if (rc == 0) {
        dlock__fanout(c->main.conns + first, count, &call,
                      dlock__node_deadline(c, 0, dlock__now_ns()), results, NULL, NULL);
        for (size_t i = 0; i < count; i++)
            codes[i] = results[i].status == DLOCK__REPLIED ? parse_status(&views[i], results[i].reply)
                                                           : results[i].status;
        dlock__set_error(&c->main, "no answer from enough servers");
        dlock__append_node_errors(&c->main, c->main.conns + first, results, count);
        dlock__results_clear(results, count);
        dlock__script_call_free(&call);
    }
    dlock__keys_clear(&keys);
    return rc;
}

int dlock_status_query(dlock_status *out, dlock_client *c, const char *name)
{
    dlock_status views[DLOCK__NODES_MAX] = {{0}};
    int codes[DLOCK__NODES_MAX] = {0};
    int rc = dlock__call_start(c, out);
    if (rc == 0)
        rc = query(c, name, 0, c->n, views, codes);
    if (rc == 0)
        rc = c->n == 1 ? codes[0] : combine(out, views, codes, c->n, dlock__quorum(c));
    if (rc == 0 && c->n == 1) {
        *out = views[0];
        out->nodes_answered = 1;
        out->nodes_held = (unsigned)out->held;
    }
    if (rc == 0)
        c->main.errmsg[0] = '\0';
    return rc;
}

int dlock_status_query_node(dlock_status *out, dlock_client *c, const char *name, size_t node)
{
    int code = 0;
    int rc = dlock__call_start(c, out);
    if (rc == 0 && node >= c->n) {
        dlock__set_error(&c->main, "no server number %zu", node);
        rc = DLOCK_EINVAL;
    }
    if (rc == 0)
        rc = query(c, name, node, 1, out, &code);
    if (rc == 0 && code == 0) {
        c->main.errmsg[0] = '\0';
        out->nodes_answered = 1;
        out->nodes_held = (unsigned)out->held;
    }
    return rc < 0 ? rc : code;
}
