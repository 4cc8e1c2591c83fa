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

int dlock_status_query(dlock_status *out, dlock_client *c, const char *name)
{
    dlock__node_result results[DLOCK__NODES_MAX];
    dlock__keys keys;
    const char *k[3];
    dlock__call call;
    char why[256];
    int rc;

    if (!c)
        return DLOCK_EINVAL;
    c->main.errmsg[0] = '\0';
    if (!out) {
        dlock__set_error(&c->main, "out is NULL");
        return DLOCK_EINVAL;
    }
    rc = dlock__keys_make(&keys, name, why, sizeof(why));
    if (rc < 0) {
        dlock__set_error(&c->main, "%s", why);
        return rc;
    }
    k[0] = keys.lock;
    k[1] = keys.fence;
    k[2] = keys.owner;
    rc = dlock__script_call(&call, DLOCK__SCRIPT_STATUS, 3, k, 0, NULL);
    if (rc == 0) {
        dlock__fanout(c->main.conns, c->n, &call, dlock__node_deadline(c, 0, dlock__now_ns()),
                      results, NULL, NULL);
        /* One node for now: its view is the answer. */
        rc = results[0].status == DLOCK__REPLIED ? parse_status(out, results[0].reply)
                                                 : results[0].status;
        if (rc < 0) {
            dlock__set_error(&c->main, "%s", dlock_strerror(rc));
            dlock__append_node_errors(c, &c->main, results);
        }
        dlock__results_clear(results, c->n);
        dlock__script_call_free(&call);
    }
    dlock__keys_clear(&keys);
    return rc;
}
