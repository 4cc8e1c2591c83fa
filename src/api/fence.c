/* The fence at the resource: dlock_fence_check, from the status a query
 * reads, and the loader of the Redis guard (contrib/redis/dlock_fence.lua,
 * embedded at build time). */
#include "guard_redis_lua.h"
#include "lane.h"
#include "probe.h"
#include "read.h"
#include "route.h"

#include <stdbool.h>

/* A semaphore (one server): one of its held permits has `fence`. */
static bool permit_with(const dlock_status *st, uint64_t fence)
{
    for (size_t i = 0; i < dlock_status_holders(st); i++)
        if (dlock_status_holder(st, i)->fence == fence)
            return true;
    return false;
}

/* Server i's last token: from the status, or, if the status did not wait
 * for it (a majority's view was known first), from the server itself. */
static bool fence_on(dlock_client *c, const char *name, const dlock_status *st, size_t i,
                     bool ask, uint64_t *out)
{
    const dlock_node_status *ns = dlock_status_node(st, i);
    dlock_status *one = NULL;
    bool known;
    if (ns && ns->code == 0) {
        *out = ns->fence;
        return true;
    }
    if (!ask || !ns || ns->code != DLOCK_ETIMEDOUT ||
        dlock_status_query_node(&one, c, name, i) < 0)
        return false;
    ns = dlock_status_node(one, 0);
    known = ns && ns->code == 0;
    *out = known ? ns->fence : 0;
    dlock_status_free(one);
    return known;
}

/* The servers' own views: a majority of all of them have `fence` as their
 * last token or an older one, and one has it exactly. A holder's token is
 * written back to a majority (as a maximum), so while it holds the lock
 * that majority has it; a newer holder's token went to a majority too,
 * which leaves at most a minority at `fence` or below. A server that
 * granted after the decision may keep a newer number of its own: not a
 * majority, but it may be among the first answers of the status, so when
 * those do not settle it the others are asked too. One server: its last
 * token is `fence`. */
static bool newest_on_a_majority(dlock_client *c, const char *name, const dlock_status *st,
                                 uint64_t fence)
{
    size_t servers = dlock_client_nodes(c);
    for (int pass = 0; pass < 2; pass++) {
        dlock__read_tally t;
        bool issued = false;
        uint64_t there;
        dlock__read_tally_init(&t, servers);
        for (size_t i = 0; i < servers; i++) {
            if (!fence_on(c, name, st, i, pass == 1, &there))
                continue; /* failed, or not asked yet: no evidence */
            dlock__read_tally_add(&t, there <= fence ? DLOCK__READ_YES : DLOCK__READ_NO);
            issued = issued || there == fence;
        }
        if (issued && dlock__read_agreed(&t))
            return true;
    }
    return false;
}

int dlock_fence_check(dlock_client *c, const char *name, uint64_t fence)
{
    dlock_status *st = NULL;
    int rc = dlock_status_query(&st, c, name);
    if (rc < 0)
        return rc;
    if (!dlock_status_held(st))
        rc = 0;
    else if (dlock_status_limit(st) > 1)
        rc = permit_with(st, fence);
    else
        rc = newest_on_a_majority(c, name, st, fence);
    dlock_status_free(st);
    return rc;
}

/* FUNCTION LOAD REPLACE on one server (slot -1) or one cluster master. */
static int load_on(dlock_client *c, size_t node, int slot)
{
    const char *argv[] = {"FUNCTION", "LOAD", "REPLACE", dlock__guard_redis_lua};
    dlock__reply *r = NULL;
    char why[300];
    int rc = dlock__probe_slot(c, node, slot, 4, argv, &r, why, sizeof(why));
    if (rc < 0) {
        dlock__set_error(&c->main, "%s: %s", dlock__probe_label(c, node), why);
        return rc;
    }
    if (r->type == DLOCK__REPLY_ERROR) {
        rc = dlock__server_error_code(r);
        dlock__set_error(&c->main, "%s: FUNCTION LOAD: %s", dlock__probe_label(c, node), r->str);
    }
    dlock__reply_free(r);
    return rc;
}

int dlock_guard_load_redis(dlock_client *c)
{
    int rc = dlock__call_start(c, dlock__guard_redis_lua);
    for (size_t i = 0; i < (c ? c->n : 0) && rc == 0; i++) {
        int slots[DLOCK__ROUTE_NODES_MAX];
        size_t masters = dlock__probe_masters(c, i, slots, DLOCK__ROUTE_NODES_MAX);
        rc = masters ? 0 : load_on(c, i, -1);
        for (size_t m = 0; m < masters && rc == 0; m++)
            rc = load_on(c, i, slots[m]);
    }
    return rc;
}
