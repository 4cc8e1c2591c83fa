/* The nodes of a chaos run: redis-servers (with or without an append-only
 * file), each behind a fault proxy, each with a clock offset file that the
 * clock shim reads. */
#include "chaos.h"
#include "topology.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const aof_everysec[] = {"--appendonly", "yes", "--appendfsync", "everysec",
                                           NULL};
static const char *const aof_always[] = {"--appendonly", "yes", "--appendfsync", "always", NULL};

static void write_offset(const struct chaos_nodes *ns, int i)
{
    FILE *f = fopen(ns->clock_file[i], "w");
    if (f) {
        fprintf(f, "%lld\n", ns->clock_offset_ms[i]);
        fclose(f);
    }
}

/* The shim's environment is set around the fork of the server only: the
 * clients must keep the real clock. */
static int with_shim(struct chaos_nodes *ns, int i, bool restart)
{
    const char *const *extra = ns->persistence == PERSIST_AOF_ALWAYS     ? aof_always
                               : ns->persistence == PERSIST_AOF_EVERYSEC ? aof_everysec
                                                                         : NULL;
    int rc = -1;
    if (ns->shim[0]) {
        setenv("LD_PRELOAD", ns->shim, 1);
        setenv("DLOCK_CLOCK_SHIFT_FILE", ns->clock_file[i], 1);
    }
    /* The port may have been taken by a client socket meanwhile: retry. */
    for (int attempt = 0; attempt < 50 && rc != 0; attempt++) {
        rc = restart ? test_redis_restart(&ns->servers[i]) : test_redis_start(&ns->servers[i], extra);
        if (rc != 0)
            usleep(20000);
    }
    unsetenv("LD_PRELOAD");
    unsetenv("DLOCK_CLOCK_SHIFT_FILE");
    return rc;
}

int nodes_start(struct chaos_nodes *ns, int n, enum persistence p, const char *shim)
{
    memset(ns, 0, sizeof(*ns));
    ns->n = n;
    ns->persistence = p;
    if (shim)
        snprintf(ns->shim, sizeof(ns->shim), "%s", shim);
    for (int i = 0; i < n; i++) {
        snprintf(ns->clock_file[i], sizeof(ns->clock_file[i]), "/tmp/dlock-chaos-clock-%d-%d",
                 (int)getpid(), i);
        write_offset(ns, i);
        if (with_shim(ns, i, false) != 0)
            return -1;
        ns->proxies[i] = fault_proxy_start(ns->servers[i].port);
        if (!ns->proxies[i])
            return -1;
    }
    return 0;
}

int nodes_start_topology(struct chaos_nodes *ns, enum topology t)
{
    memset(ns, 0, sizeof(*ns));
    ns->n = 1;
    ns->topology = t;
    if (t == TOPO_SENTINEL) {
        ns->sentinels = calloc(1, sizeof(*ns->sentinels));
        return ns->sentinels ? test_sentinels_start(ns->sentinels, "chaos") : -1;
    }
    ns->cluster = calloc(1, sizeof(*ns->cluster));
    return ns->cluster ? test_cluster_start(ns->cluster) : -1;
}

static int succeeded(redisReply *r)
{
    int ok = r && r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

int nodes_failover(struct chaos_nodes *ns, unsigned *rng)
{
    int replica;
    if (ns->sentinels)
        return succeeded(test_command(ns->sentinels->sentinels[0].port, "SENTINEL FAILOVER chaos"));
    replica = test_cluster_node_with_role(ns->cluster, "slave", (int)(rand_r(rng) % 3));
    return replica < 0 ? -1 : succeeded(test_command(ns->cluster->nodes[replica].port,
                                                     "CLUSTER FAILOVER"));
}

/* The servers of a topology, for the check of keys left behind. */
static int topology_servers(const struct chaos_nodes *ns, const test_redis **out)
{
    int n = 0;
    if (ns->sentinels) {
        out[n++] = &ns->sentinels->primary;
        out[n++] = &ns->sentinels->replica;
    }
    for (int i = 0; ns->cluster && i < TEST_CLUSTER_NODES; i++)
        out[n++] = &ns->cluster->nodes[i];
    return n;
}

void nodes_stop(struct chaos_nodes *ns)
{
    if (ns->sentinels)
        test_sentinels_stop(ns->sentinels);
    if (ns->cluster)
        test_cluster_stop(ns->cluster);
    free(ns->sentinels);
    free(ns->cluster);
    ns->sentinels = NULL;
    ns->cluster = NULL;
    if (ns->topology != TOPO_SERVERS)
        return;
    for (int i = 0; i < ns->n; i++) {
        fault_proxy_stop(ns->proxies[i]);
        ns->proxies[i] = NULL;
        test_redis_stop(&ns->servers[i]);
        unlink(ns->clock_file[i]);
    }
}

void nodes_crash(struct chaos_nodes *ns, int i)
{
    test_redis_kill(&ns->servers[i]);
    ns->down[i] = true;
}

int nodes_restart(struct chaos_nodes *ns, int i)
{
    int rc = with_shim(ns, i, true);
    ns->down[i] = rc != 0;
    return rc;
}

void nodes_pause(struct chaos_nodes *ns, int i, bool paused)
{
    if (paused)
        test_redis_pause(&ns->servers[i]);
    else
        test_redis_resume(&ns->servers[i]);
}

void nodes_shift_clock(struct chaos_nodes *ns, int i, long long ms)
{
    ns->clock_offset_ms[i] += ms;
    write_offset(ns, i);
}

int nodes_stray_keys(struct chaos_nodes *ns, int names)
{
    const test_redis *servers[TEST_CLUSTER_NODES + CHAOS_NODES_MAX];
    int stray = 0, n = ns->topology == TOPO_SERVERS ? ns->n : topology_servers(ns, servers);
    for (int i = 0; ns->topology == TOPO_SERVERS && i < n; i++)
        servers[i] = &ns->servers[i];
    for (int i = 0; i < n; i++) {
        /* A cluster node that does not own a key answers MOVED: not there. */
        redisContext *c = test_redis_connect(servers[i], NULL);
        if (!c)
            return -1;
        for (int k = 0; k < names; k++) {
            redisReply *r = redisCommand(c, "EXISTS chaos:%d {chaos:%d}:dlock:owner:chaos:%d", k, k, k);
            if (!r) {
                redisFree(c);
                return -1;
            }
            stray += r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 0;
            freeReplyObject(r);
        }
        redisFree(c);
    }
    return stray;
}

void nodes_urls(const struct chaos_nodes *ns, char urls[][64])
{
    if (ns->sentinels) /* two of the three sentinels: enough, and it fits */
        snprintf(urls[0], 64, "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/#chaos",
                 ns->sentinels->sentinels[0].port, ns->sentinels->sentinels[1].port);
    if (ns->cluster)
        snprintf(urls[0], 64, "redis://127.0.0.1:%d", ns->cluster->nodes[0].port);
    for (int i = 0; ns->topology == TOPO_SERVERS && i < ns->n; i++)
        snprintf(urls[i], 64, "redis://127.0.0.1:%d", fault_proxy_port(ns->proxies[i]));
}
