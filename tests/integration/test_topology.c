/* Topologies: a Redis Cluster (3 masters, 3 replicas), a primary and a
 * replica behind 3 sentinels, and a Redlock over a cluster, a sentinel
 * primary and a standalone server. Every server is started once, by the
 * group; the tests that fail a cluster or a primary over come last. */
#include "cli_runner.h"
#include "helpers.h"
#include "topology.h"

#include <dlock.h>

#include <pthread.h>
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
static unsigned names_seed;

static int group_setup(void **state)
{
    (void)state;
    names_seed = (unsigned)getpid();
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

/* A name of its own for each use: plain, or with a hash tag. */
static const char *fresh_name(char *buf, size_t len, const char *what, int tagged)
{
    int r = rand_r(&names_seed);
    if (tagged)
        snprintf(buf, len, "{%s%d}:%d", what, r % 1000, r);
    else
        snprintf(buf, len, "%s-%d", what, r);
    return buf;
}

static int exists_on(int port, const char *key)
{
    redisReply *r = test_command(port, "EXISTS %s", key);
    int yes = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return yes;
}

static int is_master(int port)
{
    redisReply *r = test_command(port, "ROLE");
    int yes = r && r->type == REDIS_REPLY_ARRAY && strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    return yes;
}

static void must_succeed(int port, const char *what, redisReply *r)
{
    if (!r || r->type == REDIS_REPLY_ERROR)
        fail_msg("%d: %s: %s", port, what, r ? r->str : "no reply");
    freeReplyObject(r);
}

/* 500 names, half of them hash-tagged, each through `dlock run` on a
 * replica, which owns no slot at all: every one is redirected, runs, and
 * leaves only its fencing token, on the master of its slot. */
static void test_cluster_run_names_through_a_replica(void **state)
{
    static char names[NAMES][48];
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    long long start = test_now_ms();
    (void)state;
    assert_true(seed >= 0);
    for (int i = 0; i < NAMES; i++) {
        /* A TTL of 20 s gives each server the command timeout (1 s) to
         * answer in, through a first redirect on a busy machine. */
        const char *args[] = {"-r", cluster.nodes[seed].url, "run", "-t", "20s",
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
        assert_true(exists_on(cluster.nodes[owner].port, aux_key(names[i], "fence")));
        assert_false(exists_on(cluster.nodes[owner].port, names[i]));
        assert_false(exists_on(cluster.nodes[owner].port, aux_key(names[i], "owner")));
    }
    printf("# %d names through a replica: %lld ms\n", NAMES, test_now_ms() - start);
}

struct waiter {
    dlock_client *client;
    const char *name;
    int rc;
    long long acquired_ms;
    pthread_t thread;
};

/* Waits 20 s at most, with polls 10 s apart: waking sooner takes the
 * release message. */
static void *wait_for(void *arg)
{
    struct waiter *w = arg;
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock = NULL;
    opts.wait_ms = 20000LL * test_slowdown();
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

/* Moves every key of `slot` (the name's, and the fence keys earlier tests
 * left there) from master `from` to master `to`, and leaves the slot
 * MIGRATING/IMPORTING: the source answers ASK for it. */
static void migrate_keys(int slot, int from, int to)
{
    int src = cluster.nodes[from].port, dst = cluster.nodes[to].port;
    char src_id[41], dst_id[41];
    redisReply *keys;
    test_cluster_node_id(src, src_id);
    test_cluster_node_id(dst, dst_id);
    must_succeed(dst, "IMPORTING", test_command(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, src_id));
    must_succeed(src, "MIGRATING", test_command(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, dst_id));
    keys = test_command(src, "CLUSTER GETKEYSINSLOT %d 100", slot);
    assert_non_null(keys);
    for (size_t i = 0; i < keys->elements; i++)
        must_succeed(src, "MIGRATE",
                     test_command(src, "MIGRATE 127.0.0.1 %d %s 0 5000", dst, keys->element[i]->str));
    freeReplyObject(keys);
}

/* Ends a migration: every node learns that `to` owns the slot now. */
static void finish_migration(int slot, int to)
{
    char dst_id[41];
    test_cluster_node_id(cluster.nodes[to].port, dst_id);
    for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
        if (!is_master(cluster.nodes[i].port))
            continue;
        must_succeed(cluster.nodes[i].port, "SETSLOT NODE",
                     test_command(cluster.nodes[i].port, "CLUSTER SETSLOT %d NODE %s", slot, dst_id));
    }
}

static int slot_of(const char *name)
{
    redisReply *r = test_command(cluster.nodes[0].port, "CLUSTER KEYSLOT %s", name);
    int slot = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    freeReplyObject(r);
    return slot;
}

static int keys_in_slot(int port, int slot)
{
    redisReply *r = test_command(port, "CLUSTER COUNTKEYSINSLOT %d", slot);
    int n = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    freeReplyObject(r);
    return n;
}

/* A held name's slot migrates to another master while a waiter listens:
 * extend and status work through ASK while it migrates, release through
 * MOVED after; the waiter, subscribed (sharded) on the old master, is told
 * the slot moved, subscribes on the new one and hears the release there.
 * No key stays behind on the source. */
static void test_cluster_slot_migration(void **state)
{
    char name[48], channel[96];
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    dlock_client *holder = open_client(cluster.nodes[seed].url, 0, 0);
    dlock_client *other = open_client(cluster.nodes[seed].url, 0, 0);
    struct waiter w = {.client = other, .name = name};
    dlock_lock *lock;
    dlock_status *st = NULL;
    long long released;
    int from, to, slot;
    (void)state;

    fresh_name(name, sizeof(name), "migrating", 0);
    snprintf(channel, sizeof(channel), "%s", aux_key(name, "released"));
    slot = slot_of(name);
    lock = must_acquire(holder, name, 30000, NULL);
    from = test_cluster_owner(&cluster, name);
    to = test_cluster_node_with_role(&cluster, "master", 0);
    to = to == from ? test_cluster_node_with_role(&cluster, "master", 1) : to;
    assert_int_equal(pthread_create(&w.thread, NULL, wait_for, &w), 0);
    usleep(500000);
    assert_int_equal(subscribers(cluster.nodes[from].port, "SHARDNUMSUB", channel), 1);
    assert_int_equal(subscribers(cluster.nodes[seed].port, "NUMSUB", channel), 0);

    migrate_keys(slot, from, to);
    assert_int_equal(keys_in_slot(cluster.nodes[from].port, slot), 0);
    assert_int_equal(dlock_lock_extend(lock, 30000), 0); /* ASK */
    assert_int_equal(dlock_status_query(&st, holder, name), 0);
    assert_true(dlock_status_held(st));
    dlock_status_free(st);

    finish_migration(slot, to);
    usleep(500000);
    assert_int_equal(subscribers(cluster.nodes[to].port, "SHARDNUMSUB", channel), 1);
    released = test_now_ms();
    assert_int_equal(dlock_lock_release(lock), 0); /* MOVED */
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    if (w.rc != 0)
        fail_msg("the waiter: %s", dlock_client_errmsg(other));
    assert_true(w.acquired_ms - released < 2000LL * test_slowdown());
    dlock_lock_free(lock);

    lock = must_acquire(holder, name, 10000, NULL);
    assert_int_equal(dlock_lock_extend(lock, 10000), 0);
    assert_true(exists_on(cluster.nodes[to].port, name));
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(keys_in_slot(cluster.nodes[from].port, slot), 0);
    assert_false(exists_on(cluster.nodes[to].port, name));
    assert_false(exists_on(cluster.nodes[to].port, aux_key(name, "owner")));
    dlock_lock_free(lock);
    dlock_client_close(other);
    dlock_client_close(holder);
}

/* The renewal thread extends its locks in one batch: on a cluster, names on
 * different masters split it by master. All stay held across several
 * renewals, on the master of each name's slot. */
static void test_cluster_renews_names_on_every_master(void **state)
{
    enum { LOCKS = 12 };
    char names[LOCKS][48];
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    dlock_client *c = open_client(cluster.nodes[seed].url, 0, 0);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *locks[LOCKS];
    int ttl = 300 * test_slowdown();
    (void)state;
    opts.auto_renew = 1;
    for (int i = 0; i < LOCKS; i++)
        locks[i] = must_acquire(c, fresh_name(names[i], sizeof(names[i]), "renew", i % 2), ttl,
                                &opts);
    usleep((useconds_t)ttl * 4 * 1000);
    for (int i = 0; i < LOCKS; i++) {
        int owner = test_cluster_owner(&cluster, names[i]);
        assert_true(dlock_lock_held(locks[i]));
        assert_true(exists_on(cluster.nodes[owner].port, names[i]));
        assert_int_equal(dlock_lock_release(locks[i]), 0);
        assert_false(exists_on(cluster.nodes[owner].port, names[i]));
        dlock_lock_free(locks[i]);
    }
    dlock_client_close(c);
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
        locks[n] = must_acquire(c, fresh_name(names[n], sizeof(names[n]), what, tries % 2),
                                30000, NULL);
        owner = test_cluster_owner(&cluster, names[n]);
        assert_true(owner >= 0);
        if (per_node[owner]++ < OPS_PER_MASTER) {
            n++;
        } else {
            assert_int_equal(dlock_lock_release(locks[n]), 0);
            dlock_lock_free(locks[n]);
        }
    }
}

static void release_all(dlock_lock **locks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(dlock_lock_release(locks[i]), 0);
        dlock_lock_free(locks[i]);
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
    dlock_client *c = open_client(cluster.nodes[seed].url, 0, 0);
    dlock_client *lister = open_client(cluster.nodes[seed].url, 0, 0);
    dlock_names *found = NULL;
    const char *args[] = {"-r", cluster.nodes[seed].url, "list", pattern, NULL};
    cli_proc p;
    (void)state;
    snprintf(what, sizeof(what), "list%u", names_seed);
    snprintf(pattern, sizeof(pattern), "*%s*", what);
    hold_on_every_master(c, what, names, locks);
    assert_int_equal(dlock_list_names(&found, lister, pattern), 0);
    assert_int_equal(dlock_names_count(found), OPS_HELD);
    for (size_t i = 0; i < OPS_HELD; i++) {
        size_t hits = 0;
        for (size_t j = 0; j < OPS_HELD; j++)
            hits += strcmp(dlock_names_at(found, j), names[i]) == 0;
        assert_int_equal(hits, 1);
    }
    dlock_names_free(found);
    if (cli_run(&p, NULL, args, 10000 * test_slowdown()) != 0)
        fail_msg("list: %s", p.err);
    for (size_t i = 0; i < OPS_HELD; i++)
        if (!strstr(p.out, names[i]))
            fail_msg("%s is not in the list:\n%s", names[i], p.out);
    release_all(locks, OPS_HELD);
    dlock_client_close(lister);
    dlock_client_close(c);
}

/* The finding `id` whose server is the one at `port` described by
 * `which` (e.g. "a master of the cluster"), or NULL. */
static const dlock_finding *finding_on(const dlock_report *r, const char *id, int port,
                                       const char *which)
{
    char server[32];
    snprintf(server, sizeof(server), "127.0.0.1:%d, ", port);
    for (size_t i = 0; i < dlock_report_count(r); i++) {
        const dlock_finding *f = dlock_report_finding(r, i);
        if (strcmp(f->id, id) == 0 && strncmp(f->server, server, strlen(server)) == 0 &&
            strstr(f->server, which))
            return f;
    }
    return NULL;
}

/* No scratch key of doctor's is left on the server at `port`. */
static void assert_no_scratch(int port)
{
    redisReply *r = test_command(port, "SCAN 0 MATCH *dlock-doctor* COUNT 100000");
    assert_non_null(r);
    assert_int_equal(r->element[1]->elements, 0);
    freeReplyObject(r);
}

static void assert_all_reached(const dlock_report *r)
{
    for (size_t i = 0; i < dlock_report_count(r); i++)
        assert_string_not_equal(dlock_report_finding(r, i)->id, "UNREACHABLE");
}

/* Doctor through one replica of the cluster: each master is examined and
 * named (the fixture's servers persist nothing, so each has its own
 * NO_PERSISTENCE), no replica is, and the scratch keys are gone. */
static void test_cluster_doctor_checks_every_master(void **state)
{
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    dlock_client *c = open_client(cluster.nodes[seed].url, 0, 0);
    dlock_report *r = NULL;
    (void)state;
    assert_int_equal(dlock_doctor(&r, c, NULL, 0), 0);
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
    dlock_report_free(r);
    dlock_client_close(c);
}

/* Doctor on a sentinel endpoint examines the primary they name, and says
 * so; not a sentinel, not the replica. */
static void test_sentinel_doctor_checks_the_primary(void **state)
{
    int primary = test_sentinels_primary_port(&sentinels);
    dlock_client *c = open_client(sentinels.url, 0, 0);
    dlock_report *r = NULL;
    (void)state;
    assert_true(primary > 0);
    assert_int_equal(dlock_doctor(&r, c, NULL, 0), 0);
    assert_non_null(finding_on(r, "NO_PERSISTENCE", primary, "the primary the sentinels name"));
    assert_all_reached(r);
    assert_no_scratch(primary);
    dlock_report_free(r);
    dlock_client_close(c);
}

struct watcher {
    dlock_client *client;
    const char *name;
    dlock_status *prev, *next;
    int rc;
    long long seen_ms;
    pthread_t thread;
};

/* One change after `prev`, looking only every 20 s: seeing one sooner
 * takes the release message. */
static void *watch_once(void *arg)
{
    struct watcher *w = arg;
    w->rc = dlock_status_watch(&w->next, w->client, w->name, w->prev, 20000LL * test_slowdown());
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
    int seed = test_cluster_node_with_role(&cluster, "slave", 0), owner;
    dlock_client *holder = open_client(cluster.nodes[seed].url, 0, 0);
    struct watcher w = {open_client(cluster.nodes[seed].url, 0, 0), NULL, NULL, NULL, -1, 0, 0};
    char name[48], channel[96];
    dlock_lock *lock;
    long long released;
    (void)state;
    w.name = fresh_name(name, sizeof(name), "watched", 0);
    snprintf(channel, sizeof(channel), "%s", aux_key(name, "released"));
    lock = must_acquire(holder, name, 30000, NULL);
    owner = test_cluster_owner(&cluster, name);
    assert_int_equal(dlock_status_watch(&w.prev, w.client, name, NULL, 0), 0);
    assert_true(dlock_status_held(w.prev));
    assert_int_equal(pthread_create(&w.thread, NULL, watch_once, &w), 0);
    await_shard_subscribers(cluster.nodes[owner].port, channel, 1);
    for (int i = 0; i < TEST_CLUSTER_NODES; i++)
        assert_int_equal(subscribers(cluster.nodes[i].port, "NUMSUB", channel), 0);

    released = test_now_ms();
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    assert_int_equal(w.rc, 0);
    assert_false(dlock_status_held(w.next));
    if (w.seen_ms - released > 2000LL * test_slowdown())
        fail_msg("the release was seen after %lld ms", w.seen_ms - released);
    printf("# release seen by the watcher after %lld ms\n", w.seen_ms - released);
    dlock_lock_free(lock);
    dlock_status_free(w.prev);
    dlock_status_free(w.next);
    dlock_client_close(w.client);
    dlock_client_close(holder);
}

/* Whether `key` exists at `port`, within a second (times the slowdown):
 * a node that a majority did not wait for gets the command all the same,
 * a little later. */
static int settles_to(int port, const char *key, int want)
{
    long long deadline = test_now_ms() + 1000LL * test_slowdown();
    while (exists_on(port, key) != want && test_now_ms() < deadline)
        usleep(10000);
    return exists_on(port, key) == want;
}

static void assert_held_on_all(const char *name, const int *ports, size_t n, int yes)
{
    for (size_t i = 0; i < n; i++)
        if (!settles_to(ports[i], name, yes))
            fail_msg("%s is %sheld on port %d", name, yes ? "not " : "", ports[i]);
}

/* A Redlock of three endpoints: a cluster (through a replica), a
 * sentinel-named primary and a standalone server; then with the standalone
 * server down, when the other two must both vote. */
static void test_redlock_of_three_topologies(void **state)
{
    char name[48];
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    const char *urls[] = {cluster.nodes[seed].url, sentinels.url, standalone.url};
    dlock_client *c = open_nodes(urls, 3, 0, 0);
    dlock_status *st = NULL;
    dlock_lock *lock;
    int ports[3];
    (void)state;

    fresh_name(name, sizeof(name), "mixed", 0);
    /* Every node answers a status: the client learns the slot map and
     * connects to each, so that all three vote below. */
    assert_int_equal(dlock_status_query(&st, c, name), 0);
    assert_int_equal(dlock_status_nodes_answered(st), 3);
    dlock_status_free(st);
    ports[0] = cluster.nodes[test_cluster_owner(&cluster, name)].port;
    ports[1] = test_sentinels_primary_port(&sentinels);
    ports[2] = standalone.port;
    lock = must_acquire(c, name, 10000, NULL);
    assert_held_on_all(name, ports, 3, 1);
    assert_int_equal(dlock_lock_extend(lock, 10000), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_held_on_all(name, ports, 3, 0);
    dlock_lock_free(lock);

    test_redis_kill(&standalone);
    lock = must_acquire(c, name, 10000, NULL);
    assert_held_on_all(name, ports, 2, 1);
    assert_int_equal(dlock_lock_extend(lock, 10000), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_held_on_all(name, ports, 2, 0);
    dlock_lock_free(lock);
    dlock_client_close(c);
    assert_int_equal(test_redis_restart(&standalone), 0);
}

/* Three -r URLs naming the three masters of one cluster: every majority
 * of them reaches the slot's one master, which would be counted twice or
 * more. Refused, and nothing is left behind. */
static void test_cluster_counted_twice_refused(void **state)
{
    char name[48];
    const char *urls[3];
    dlock_client *c;
    dlock_lock *lock = NULL;
    int owner;
    (void)state;
    for (int i = 0; i < 3; i++)
        urls[i] = cluster.nodes[test_cluster_node_with_role(&cluster, "master", i)].url;
    c = open_nodes(urls, 3, 0, 0);
    fresh_name(name, sizeof(name), "twice", 1);
    assert_int_equal(dlock_lock_acquire(&lock, c, name, 10000, NULL), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_client_errmsg(c), "both reached"));
    owner = test_cluster_owner(&cluster, name);
    assert_true(settles_to(cluster.nodes[owner].port, name, 0));
    dlock_client_close(c);
}

/* The user and password of a sentinel URL go to the primary, not to the
 * sentinels (which have none); a user without ROLE still gets the lock
 * (READONLY would tell it a replica); a wrong password is an
 * authentication failure. */
static void test_sentinel_credentials_reach_the_primary(void **state)
{
    char url[300], name[48];
    const char *rest = sentinels.url + strlen("redis-sentinel://");
    test_redis *servers[] = {&sentinels.primary, &sentinels.replica};
    dlock_client *c;
    dlock_lock *lock = NULL;
    (void)state;
    for (size_t i = 0; i < 2; i++) /* ACL users are not replicated */
        must_succeed(servers[i]->port, "ACL SETUSER",
                     test_command(servers[i]->port,
                                  "ACL SETUSER noroler on >s3cret +@all -role ~* &*"));
    fresh_name(name, sizeof(name), "auth", 0);
    snprintf(url, sizeof(url), "redis-sentinel://noroler:s3cret@%s", rest);
    c = open_client(url, 0, 0);
    lock = must_acquire(c, name, 10000, NULL);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);

    snprintf(url, sizeof(url), "redis-sentinel://noroler:wrong@%s", rest);
    c = open_client(url, 0, 0);
    assert_int_equal(dlock_lock_acquire(&lock, c, name, 10000, NULL), DLOCK_EAUTH);
    assert_null(strstr(dlock_client_errmsg(c), "wrong"));
    dlock_client_close(c);
}

/* With every sentinel silent (paused), a client that knows the primary
 * keeps using it: their outage does not move the primary. */
static void test_sentinels_silent_primary_stays(void **state)
{
    char name[48];
    int primary = test_sentinels_primary_port(&sentinels);
    dlock_client *c = open_client(sentinels.url, 0, 0);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock;
    (void)state;
    fresh_name(name, sizeof(name), "silent", 0);
    lock = must_acquire(c, name, 30000, NULL);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    for (int i = 0; i < TEST_SENTINELS; i++)
        test_redis_pause(&sentinels.sentinels[i]);
    usleep(1200 * 1000); /* past the once-a-second question to the sentinels */
    opts.wait_ms = 5000LL * test_slowdown(); /* the call that asks them may run out of time */
    lock = must_acquire(c, name, 30000, &opts);
    assert_true(exists_on(primary, name));
    assert_int_equal(dlock_lock_release(lock), 0);
    for (int i = 0; i < TEST_SENTINELS; i++)
        test_redis_resume(&sentinels.sentinels[i]);
    dlock_lock_free(lock);
    dlock_client_close(c);
}

/* Takes `name` for 60 s through `url` with `dlock acquire` (no renewal);
 * its token into token[33]. */
static void hold(const char *url, const char *name, char *token)
{
    const char *args[] = {"-r", url, "acquire", "-t", "60s", name, NULL};
    cli_proc p;
    if (cli_run(&p, NULL, args, 10000 * test_slowdown()) != 0)
        fail_msg("acquire %s: %s", name, p.err);
    assert_int_equal(sscanf(p.out, "%32s", token), 1);
}

static void release_held(const char *url, const char *name, const char *token)
{
    const char *args[] = {"-r", url, "release", name, token, NULL};
    cli_proc p;
    if (cli_run(&p, NULL, args, 10000 * test_slowdown()) != 0)
        fail_msg("release %s: %s", name, p.err);
}

static int role_is_master(void *arg)
{
    return is_master(*(int *)arg);
}

static int primary_moved(void *arg)
{
    int *before = arg;
    int now = test_sentinels_primary_port(&sentinels);
    return now > 0 && now != *before;
}

/* Polls `done` for up to 20 s (times the slowdown). */
static void wait_for_condition(int (*done)(void *), void *arg, const char *what)
{
    long long deadline = test_now_ms() + 20000LL * test_slowdown();
    while (!done(arg)) {
        if (test_now_ms() > deadline)
            fail_msg("%s did not happen in time", what);
        usleep(50000);
    }
}

/* `dlock run -w 30` waits for a held name while its master fails over to
 * its replica (CLUSTER FAILOVER); the holder releases through the cluster
 * after it, and the waiter acquires, on the new master. */
static void test_cluster_failover_while_run_waits(void **state)
{
    char name[48], token[33];
    int seed = test_cluster_node_with_role(&cluster, "slave", 0), master, replica, port;
    const char *args[] = {"-r", cluster.nodes[seed].url, "run", "-w", "30", name, "--", "true",
                          NULL};
    cli_proc p;
    (void)state;

    fresh_name(name, sizeof(name), "failover", 1);
    hold(cluster.nodes[seed].url, name, token);
    master = test_cluster_owner(&cluster, name);
    replica = test_cluster_replica_of(&cluster, master);
    assert_true(replica >= 0);
    assert_int_equal(cli_start(&p, NULL, args, NULL), 0);
    usleep(300000);
    port = cluster.nodes[replica].port;
    must_succeed(port, "FAILOVER", test_command(port, "CLUSTER FAILOVER"));
    wait_for_condition(role_is_master, &port, "the cluster failover");
    release_held(cluster.nodes[seed].url, name, token);
    assert_int_equal(cli_wait(&p, 40000 * test_slowdown()), 0);
    assert_int_equal(test_cluster_owner(&cluster, name), replica);
    assert_true(exists_on(port, aux_key(name, "fence")));
    assert_false(exists_on(port, name));
    assert_int_equal(test_cluster_wait_ok(&cluster, 20000), 0);
}

/* The same with SENTINEL FAILOVER: the waiter acquires on the new primary,
 * and `dlock status` follows the sentinels there. */
static void test_sentinel_failover_while_run_waits(void **state)
{
    char name[48], token[33], out[64];
    const char *args[] = {"-r", sentinels.url, "run", "-w", "30", name, "--", "true", NULL};
    const char *status[] = {"-r", sentinels.url, "status", name, NULL};
    int before = test_sentinels_primary_port(&sentinels), after;
    dlock_client *c;
    dlock_lock *lock;
    cli_proc p;
    (void)state;

    fresh_name(name, sizeof(name), "sentinel", 0);
    hold(sentinels.url, name, token);
    assert_int_equal(cli_start(&p, NULL, args, NULL), 0);
    usleep(300000);
    must_succeed(sentinels.sentinels[0].port, "SENTINEL FAILOVER",
                 test_command(sentinels.sentinels[0].port, "SENTINEL FAILOVER %s", sentinels.name));
    wait_for_condition(primary_moved, &before, "the sentinel failover");
    after = test_sentinels_primary_port(&sentinels);
    release_held(sentinels.url, name, token);
    assert_int_equal(cli_wait(&p, 40000 * test_slowdown()), 0);
    assert_true(exists_on(after, aux_key(name, "fence")));
    assert_false(exists_on(after, name));

    c = open_client(sentinels.url, 0, 0);
    lock = must_acquire(c, name, 10000, NULL);
    assert_true(exists_on(after, name));
    assert_int_equal(cli_run(&p, NULL, status, 10000 * test_slowdown()), 0);
    snprintf(out, sizeof(out), "%s: held", name);
    assert_non_null(strstr(p.out, out));
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_run_names_through_a_replica),
        cmocka_unit_test(test_cluster_slot_migration),
        cmocka_unit_test(test_cluster_renews_names_on_every_master),
        cmocka_unit_test(test_cluster_counted_twice_refused),
        cmocka_unit_test(test_cluster_list_covers_every_master),
        cmocka_unit_test(test_cluster_doctor_checks_every_master),
        cmocka_unit_test(test_sentinel_doctor_checks_the_primary),
        cmocka_unit_test(test_cluster_watch_sees_a_release),
        cmocka_unit_test(test_redlock_of_three_topologies),
        cmocka_unit_test(test_sentinel_credentials_reach_the_primary),
        cmocka_unit_test(test_sentinels_silent_primary_stays),
        cmocka_unit_test(test_cluster_failover_while_run_waits),
        cmocka_unit_test(test_sentinel_failover_while_run_waits),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
