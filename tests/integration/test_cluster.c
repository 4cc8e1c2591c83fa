/* A Redis Cluster (3 masters, 3 replicas): names through a replica, a
 * slot migrating under a waiter, renewals split by master, the operators'
 * tools (list, doctor, status --watch), three -r URLs of one cluster
 * refused, a Redlock of a cluster, a sentinel primary and a standalone
 * server, and a failover under a waiting run. Every server is started
 * once, by the group; the failover comes last. Sentinels alone:
 * test_sentinel.c. */
#include "cluster_tools.h"
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define NAMES 500

static test_cluster cluster;
static test_sentinels sentinels;
static test_redis standalone;

static int group_setup(void **state)
{
    (void)state;
    if (test_cluster_start(&cluster) < 0 || test_sentinels_start(&sentinels, "dlockprimary") < 0)
        return -1;
    return test_redis_start(&standalone, NULL);
}

static int group_teardown(void **state)
{
    (void)state;
    test_redis_stop(&standalone);
    test_sentinels_stop(&sentinels);
    test_cluster_stop(&cluster);
    return 0;
}

/* The URL of the first replica: a node that owns no slot at all. */
static const char *replica_url(int *index)
{
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    assert_true(seed >= 0);
    if (index)
        *index = seed;
    return cluster.nodes[seed].url;
}

/* 500 names, half of them hash-tagged, each through `dlock run` on a
 * replica, which owns no slot at all: every one is redirected, runs, and
 * leaves only its fencing token, on the master of its slot. */
static void test_cluster_run_names_through_a_replica(void **state)
{
    static char names[NAMES][48];
    const char *seed = replica_url(NULL);
    long long start = test_now_ms();
    (void)state;
    for (int i = 0; i < NAMES; i++) {
        /* A TTL of 20 s gives each server the command timeout (1 s) to
         * answer in, through a first redirect on a busy machine. */
        const char *args[] = {"-r", seed, "run", "-t", "20s",
                              fresh_name(names[i], sizeof(names[i]), "many", i % 2), "--",
                              "true", NULL};
        cli_proc p;
        int rc = cli_run(&p, NULL, args, 20000 * test_slowdown());
        if (rc != 0)
            fail_msg("%s: exit %d: %s", names[i], rc, p.err);
    }
    for (int i = 0; i < NAMES; i++) {
        int owner = test_cluster_owner(&cluster, names[i]);
        assert_true(owner >= 0);
        assert_true(is_master(cluster.nodes[owner].port));
        assert_true(exists_at(cluster.nodes[owner].port, aux_key(names[i], "fence")));
        assert_false(exists_at(cluster.nodes[owner].port, names[i]));
        assert_false(exists_at(cluster.nodes[owner].port, aux_key(names[i], "owner")));
    }
    printf("# %d names through a replica: %lld ms\n", NAMES, test_now_ms() - start);
}

struct waiter {
    dlock_client *client;
    char name[48];
    int rc;
    long long acquired_ms;
};

/* Waits 20 s at most, with polls 10 s apart: waking sooner takes the
 * release message. */
static void *wait_for(void *arg)
{
    struct waiter *w = arg;
    dlock_acquire_options opts = wait_options(20000LL * test_slowdown());
    dlock_lock *lock = NULL;
    opts.backoff_max_ms = 10000;
    w->rc = dlock_lock_acquire(&lock, w->client, w->name, 5000, &opts);
    w->acquired_ms = test_now_ms();
    if (w->rc == 0)
        w->rc = dlock_lock_release(lock);
    dlock_lock_free(lock);
    return NULL;
}

/* Subscribers of `channel` at the server at `port`: sharded or plain. */
static long long subscribers(int port, const char *kind, const char *channel)
{
    redisReply *r = test_command(port, "PUBSUB %s %s", kind, channel);
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer
                                                                       : -1;
    freeReplyObject(r);
    return n;
}

/* Listeners for releases of the name whose channel is `channel` at the
 * server at `port`, sharded: on the channel, and a queued waiter's process
 * on its own (`channel:HOST:PID`). */
static long long listening(int port, const char *channel)
{
    redisReply *r = test_command(port, "PUBSUB SHARDCHANNELS %s:*", channel);
    long long n = r && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : 0;
    freeReplyObject(r);
    return n + subscribers(port, "SHARDNUMSUB", channel);
}

/* A held name's slot migrates to another master while a waiter listens:
 * extend and status work through ASK while it migrates, release through
 * MOVED after; the waiter, queued and subscribed (sharded, on its process
 * channel) on the old master, is told the slot moved, subscribes on the
 * new one and is handed the lock by the release there.
 * No key stays behind on the source. */
static void test_cluster_slot_migration(void **state)
{
    int seed;
    const char *url = replica_url(&seed);
    dlock_client *holder = client_on(url), *other = client_on(url);
    struct waiter one = {.client = other}, *w;
    cluster_migration m;
    char channel[96];
    dlock_lock *lock;
    dlock_status *st = NULL;
    long long released;
    int from;
    (void)state;

    fresh_name(one.name, sizeof(one.name), "migrating", 0);
    snprintf(channel, sizeof(channel), "%s", aux_key(one.name, "released"));
    lock = take(holder, one.name, 30000, NULL);
    w = start_thread(wait_for, &one, sizeof(one));
    usleep(500000);
    from = test_cluster_owner(&cluster, w->name);
    assert_int_equal(listening(cluster.nodes[from].port, channel), 1);
    assert_int_equal(subscribers(cluster.nodes[seed].port, "NUMSUB", channel), 0);

    migration_start(&cluster, &m, w->name);
    migrate_rest(&cluster, &m);
    assert_int_equal(keys_in_slot(cluster.nodes[m.from].port, m.slot), 0);
    assert_int_equal(dlock_lock_extend(lock, 30000), 0); /* ASK */
    assert_int_equal(dlock_status_query(&st, holder, w->name), 0);
    assert_true(dlock_status_held(kept_status(st)));

    migration_finish(&cluster, &m);
    usleep(500000);
    assert_int_equal(listening(cluster.nodes[m.to].port, channel), 1);
    released = test_now_ms();
    assert_int_equal(dlock_lock_release(lock), 0); /* MOVED */
    join_thread(w);
    if (w->rc != 0)
        fail_msg("the waiter: %s", dlock_client_errmsg(other));
    assert_true(w->acquired_ms - released < 2000LL * test_slowdown());

    lock = take(holder, w->name, 10000, NULL);
    assert_int_equal(dlock_lock_extend(lock, 10000), 0);
    assert_true(exists_at(cluster.nodes[m.to].port, w->name));
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(keys_in_slot(cluster.nodes[m.from].port, m.slot), 0);
    assert_false(exists_at(cluster.nodes[m.to].port, w->name));
    assert_false(exists_at(cluster.nodes[m.to].port, aux_key(w->name, "owner")));
}

/* The renewal thread extends its locks in one batch: on a cluster, names on
 * different masters split it by master. All stay held across several
 * renewals, on the master of each name's slot. */
static void test_cluster_renews_names_on_every_master(void **state)
{
    enum { LOCKS = 12 };
    char names[LOCKS][48];
    dlock_client *c = client_on(replica_url(NULL));
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *locks[LOCKS];
    int ttl = 300 * test_slowdown();
    (void)state;
    opts.auto_renew = 1;
    for (int i = 0; i < LOCKS; i++)
        locks[i] = take(c, fresh_name(names[i], sizeof(names[i]), "renew", i % 2), ttl, &opts);
    usleep((useconds_t)ttl * 4 * 1000);
    for (int i = 0; i < LOCKS; i++) {
        int owner = test_cluster_owner(&cluster, names[i]);
        assert_true(dlock_lock_held(locks[i]));
        assert_true(exists_at(cluster.nodes[owner].port, names[i]));
        assert_int_equal(dlock_lock_release(locks[i]), 0);
        assert_false(exists_at(cluster.nodes[owner].port, names[i]));
    }
}

/* Whether `key` exists at `port`, within a second (times the slowdown):
 * a node that a majority did not wait for gets the command all the same,
 * a little later. */
static int settles_to(int port, const char *key, int want)
{
    long long deadline = test_now_ms() + 1000LL * test_slowdown();
    while (exists_at(port, key) != want && test_now_ms() < deadline)
        usleep(10000);
    return exists_at(port, key) == want;
}

static void assert_held_on_all(const char *name, const int *ports, size_t n, int yes)
{
    for (size_t i = 0; i < n; i++)
        if (!settles_to(ports[i], name, yes))
            fail_msg("%s is %sheld on port %d", name, yes ? "not " : "", ports[i]);
}

/* Three -r URLs naming the three masters of one cluster: every majority
 * of them reaches the slot's one master, which would be counted twice or
 * more. Refused, and nothing is left behind. */
static void test_cluster_counted_twice_refused(void **state)
{
    char name[48];
    const char *urls[3];
    dlock_client *c;
    int owner;
    (void)state;
    for (int i = 0; i < 3; i++)
        urls[i] = cluster.nodes[test_cluster_node_with_role(&cluster, "master", i)].url;
    c = client_on_nodes(urls, 3, 0, 0);
    fresh_name(name, sizeof(name), "twice", 1);
    expect_acquire(DLOCK_EINVAL, c, name, 10000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(c), "both reached"));
    owner = test_cluster_owner(&cluster, name);
    assert_true(settles_to(cluster.nodes[owner].port, name, 0));
}

/* ---- The operators' tools on a cluster ---- */

enum { OPS_PER_MASTER = 2, OPS_HELD = 3 * OPS_PER_MASTER };

/* Names whose slots fall on every master, OPS_PER_MASTER each, into
 * names[OPS_HELD]: a name's slot is known by where a read of its
 * key is served, so each candidate is held first, then kept or let go. */
static void hold_on_every_master(dlock_client *c, const char *what, char (*names)[48],
                                 dlock_lock **locks)
{
    int per_node[TEST_CLUSTER_NODES] = {0};
    size_t n = 0;
    for (int tries = 0; n < OPS_HELD; tries++) {
        int owner;
        assert_true(tries < 200);
        locks[n] = take(c, fresh_name(names[n], sizeof(names[n]), what, tries % 2), 30000, NULL);
        owner = test_cluster_owner(&cluster, names[n]);
        assert_true(owner >= 0);
        if (per_node[owner]++ < OPS_PER_MASTER)
            n++;
        else
            assert_int_equal(dlock_lock_release(locks[n]), 0);
    }
}

/* Locks on all three masters, listed through one master (which sends no
 * MOVED to teach the client it is a cluster): every name, once, from the
 * library and from `dlock list`. */
static void test_cluster_list_covers_every_master(void **state)
{
    char names[OPS_HELD][48], what[24], pattern[32];
    dlock_lock *locks[OPS_HELD];
    int seed = test_cluster_node_with_role(&cluster, "master", 0);
    dlock_names *found = NULL;
    const char *args[] = {"-r", cluster.nodes[seed].url, "list", pattern, NULL};
    cli_proc p;
    (void)state;
    snprintf(what, sizeof(what), "list%ld", (long)getpid());
    snprintf(pattern, sizeof(pattern), "*%s*", what);
    hold_on_every_master(client_on(cluster.nodes[seed].url), what, names, locks);
    assert_int_equal(dlock_list_names(&found, client_on(cluster.nodes[seed].url), pattern), 0);
    assert_int_equal(dlock_names_count(kept_names(found)), OPS_HELD);
    for (size_t i = 0; i < OPS_HELD; i++) {
        size_t hits = 0;
        for (size_t j = 0; j < OPS_HELD; j++)
            hits += strcmp(dlock_names_at(found, j), names[i]) == 0;
        assert_int_equal(hits, 1);
    }
    if (cli_run(&p, NULL, args, 10000 * test_slowdown()) != 0)
        fail_msg("list: %s", p.err);
    for (size_t i = 0; i < OPS_HELD; i++)
        if (!strstr(p.out, names[i]))
            fail_msg("%s is not in the list:\n%s", names[i], p.out);
    for (size_t i = 0; i < OPS_HELD; i++)
        assert_int_equal(dlock_lock_release(locks[i]), 0);
}

/* Doctor through one replica of the cluster: each master is examined and
 * named (the fixture's servers persist nothing, so each has its own
 * NO_PERSISTENCE), no replica is, and the scratch keys are gone. */
static void test_cluster_doctor_checks_every_master(void **state)
{
    dlock_report *r = NULL;
    (void)state;
    assert_int_equal(dlock_doctor(&r, client_on(replica_url(NULL)), NULL, 0), 0);
    kept_report(r);
    for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
        const dlock_finding *f = finding_on(r, "NO_PERSISTENCE", cluster.nodes[i].port,
                                            "a master of the cluster");
        if (is_master(cluster.nodes[i].port) != (f != NULL))
            fail_msg("node %d (%s): %s", cluster.nodes[i].port,
                     is_master(cluster.nodes[i].port) ? "a master" : "a replica",
                     f ? "examined" : "not examined");
        assert_no_scratch(cluster.nodes[i].port);
    }
    assert_all_reached(r);
}

struct watcher {
    dlock_client *client;
    char name[48];
    dlock_status *prev, *next;
    int rc;
    long long seen_ms;
};

/* One change after `prev`, looking only every 20 s: seeing one sooner
 * takes the release message. */
static void *watch_once(void *arg)
{
    struct watcher *w = arg;
    w->rc = dlock_status_watch(&w->next, w->client, w->name, w->prev, 20000LL * test_slowdown());
    kept_status(w->next);
    w->seen_ms = test_now_ms();
    return NULL;
}

/* Sharded subscribers of `channel` at `port` reach `want` within 5 s (times
 * the slowdown). */
static void await_shard_subscribers(int port, const char *channel, long long want)
{
    long long until = test_now_ms() + 5000LL * test_slowdown();
    while (subscribers(port, "SHARDNUMSUB", channel) != want && test_now_ms() < until)
        usleep(20000);
    assert_int_equal(subscribers(port, "SHARDNUMSUB", channel), want);
}

/* status --watch through a replica: the watcher listens with SSUBSCRIBE
 * on the master of the name's slot (no plain SUBSCRIBE anywhere) and sees
 * the release from its message, long before its next look. */
static void test_cluster_watch_sees_a_release(void **state)
{
    const char *url = replica_url(NULL);
    struct watcher one = {.client = client_on(url), .rc = -1}, *w;
    char channel[96];
    dlock_lock *lock;
    long long released;
    int owner;
    (void)state;
    fresh_name(one.name, sizeof(one.name), "watched", 0);
    snprintf(channel, sizeof(channel), "%s", aux_key(one.name, "released"));
    lock = take(client_on(url), one.name, 30000, NULL);
    owner = test_cluster_owner(&cluster, one.name);
    assert_int_equal(dlock_status_watch(&one.prev, one.client, one.name, NULL, 0), 0);
    assert_true(dlock_status_held(kept_status(one.prev)));
    w = start_thread(watch_once, &one, sizeof(one));
    await_shard_subscribers(cluster.nodes[owner].port, channel, 1);
    for (int i = 0; i < TEST_CLUSTER_NODES; i++)
        assert_int_equal(subscribers(cluster.nodes[i].port, "NUMSUB", channel), 0);

    released = test_now_ms();
    assert_int_equal(dlock_lock_release(lock), 0);
    join_thread(w);
    assert_int_equal(w->rc, 0);
    assert_false(dlock_status_held(w->next));
    if (w->seen_ms - released > 2000LL * test_slowdown())
        fail_msg("the release was seen after %lld ms", w->seen_ms - released);
    printf("# release seen by the watcher after %lld ms\n", w->seen_ms - released);
}

/* A Redlock of three endpoints: a cluster (through a replica), a
 * sentinel-named primary and a standalone server; then with the standalone
 * server down, when the other two must both vote. */
static void test_redlock_of_three_topologies(void **state)
{
    char name[48];
    const char *urls[] = {replica_url(NULL), sentinels.url, standalone.url};
    dlock_client *c = client_on_nodes(urls, 3, 0, 0);
    dlock_status *st = NULL;
    dlock_lock *lock;
    int ports[3];
    (void)state;

    fresh_name(name, sizeof(name), "mixed", 0);
    /* Every node answers a status: the client learns the slot map and
     * connects to each, so that all three vote below. */
    assert_int_equal(dlock_status_query(&st, c, name), 0);
    assert_int_equal(dlock_status_nodes_answered(kept_status(st)), 3);
    ports[0] = cluster.nodes[test_cluster_owner(&cluster, name)].port;
    ports[1] = test_sentinels_primary_port(&sentinels);
    ports[2] = standalone.port;
    lock = take(c, name, 10000, NULL);
    assert_held_on_all(name, ports, 3, 1);
    assert_int_equal(dlock_lock_extend(lock, 10000), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_held_on_all(name, ports, 3, 0);

    test_redis_kill(&standalone);
    lock = take(c, name, 10000, NULL);
    assert_held_on_all(name, ports, 2, 1);
    assert_int_equal(dlock_lock_extend(lock, 10000), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_held_on_all(name, ports, 2, 0);
    assert_int_equal(test_redis_restart(&standalone), 0);
}

static int role_is_master(void *port)
{
    return is_master(*(int *)port);
}

/* `dlock run -w 30` waits for a held name while its master fails over to
 * its replica (CLUSTER FAILOVER); the holder releases through the cluster
 * after it, and the waiter acquires, on the new master. */
static void test_cluster_failover_while_run_waits(void **state)
{
    char name[48], token[33];
    const char *seed = replica_url(NULL);
    const char *args[] = {"-r", seed, "run", "-w", "30", name, "--", "true", NULL};
    int master, replica, port;
    cli_proc *p;
    (void)state;

    fresh_name(name, sizeof(name), "failover", 1);
    cli_hold(seed, name, token);
    master = test_cluster_owner(&cluster, name);
    replica = test_cluster_replica_of(&cluster, master);
    assert_true(replica >= 0);
    p = start_cli(NULL, args, NULL);
    usleep(300000);
    port = cluster.nodes[replica].port;
    must_succeed(port, "FAILOVER", test_command(port, "CLUSTER FAILOVER"));
    await_condition(role_is_master, &port, "the cluster failover");
    cli_release(seed, name, token);
    assert_int_equal(cli_wait(p, 40000 * test_slowdown()), 0);
    assert_int_equal(test_cluster_owner(&cluster, name), replica);
    assert_true(exists_at(port, aux_key(name, "fence")));
    assert_false(exists_at(port, name));
    assert_int_equal(test_cluster_wait_ok(&cluster, 20000), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_cluster_run_names_through_a_replica),
        T(test_cluster_slot_migration),
        T(test_cluster_renews_names_on_every_master),
        T(test_cluster_counted_twice_refused),
        T(test_cluster_list_covers_every_master),
        T(test_cluster_doctor_checks_every_master),
        T(test_cluster_watch_sees_a_release),
        T(test_redlock_of_three_topologies),
        T(test_cluster_failover_while_run_waits),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
