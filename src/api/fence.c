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

/* The servers' own views: a majority of all of them have `fence` as their
 * last token or an older one, and one has it exactly. A holder's token is
 * written back to a majority (as a maximum), so while it holds the lock
 * that majority has it; a newer holder's token went to a majority too,
 * which leaves at most a minority at `fence` or below. A server that
 * granted after the decision may keep a newer number of its own: not a
 * majority. One server: its last token is `fence`. */
static bool newest_on_a_majority(const dlock_status *st, size_t servers, uint64_t fence)
{
    dlock__read_tally t;
    bool issued = false;
    dlock__read_tally_init(&t, servers);
    for (size_t i = 0; i < servers; i++) {
        const dlock_node_status *ns = dlock_status_node(st, i);
        if (!ns || ns->code != 0)
            continue; /* not waited for, or failed: no evidence */
        dlock__read_tally_add(&t, ns->fence <= fence ? DLOCK__READ_YES : DLOCK__READ_NO);
        issued = issued || ns->fence == fence;
    }
    return issued && dlock__read_agreed(&t);
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
        rc = newest_on_a_majority(st, dlock_client_nodes(c), fence);
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
