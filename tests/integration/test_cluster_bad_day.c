/* A Redis Cluster on a bad day: a slot migrating by hand (CLUSTER SETSLOT,
 * MIGRATE key by key) under locks held and wanted, the node the URL names
 * dying under a running lock, a master killed under a waiter. One cluster
 * (3 masters, a replica each, cluster-node-timeout 1 s) for the group; the
 * tests that kill nodes come last, each killing other nodes. */
#include "cluster_tools.h"
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define NODE_TIMEOUT_MS 1000

static test_cluster cluster;
static unsigned names_seed;

static int group_setup(void **state)
{
    (void)state;
    names_seed = (unsigned)getpid();
    return test_cluster_start_with_timeout(&cluster, NODE_TIMEOUT_MS);
}

static int group_teardown(void **state)
{
    (void)state;
    test_cluster_stop(&cluster);
    return 0;
}

/* A hash tag of its own for each test: every name with it is in one slot. */
static void fresh_tag(char *buf, size_t len, const char *what)
{
    snprintf(buf, len, "%s%d", what, rand_r(&names_seed));
}

/* A name under a hash tag whose slot the master at node index `master`
 * serves. */
static void name_on(char *buf, size_t len, int master, const char *what)
{
    for (int tries = 0; tries < 1000; tries++) {
        snprintf(buf, len, "{%s%d}", what, rand_r(&names_seed));
        if (test_cluster_owner(&cluster, buf) == master)
            return;
    }
    fail_msg("no name found on node %d", master);
}

/* The replica of master `m`, which must have one. */
static int replica_of(int m)
{
    int r = test_cluster_replica_of(&cluster, m);
    assert_true(r >= 0);
    return r;
}

/* Neither ASK, TRYAGAIN nor MOVED, the server's words for a redirect, is
 * in `text`. */
static void no_redirect_text(const char *text)
{
    static const char *const words[] = {"ASK ", "TRYAGAIN", "MOVED", "CLUSTERDOWN"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strstr(text, words[i]))
            fail_msg("a redirect reached the message: %s", text);
}

/* ---- A slot migrating by hand ---- */

/* `dlock acquire -n NAME` through `url`: its exit status; its stderr holds
 * no redirect. */
static int cli_try(const char *url, const char *name, cli_proc *p)
{
    const char *args[] = {"-r", url, "acquire", "-n", "-t", "30s", name, NULL};
    int rc = cli_run(p, NULL, args, 20000 * test_slowdown());
    no_redirect_text(p->err);
    return rc;
}

/* A name none of whose keys exists reads free while its slot migrates,
 * and a release of it is refused as not ours (exit 1): the calls go
 * through ASK to the importing node, naming the name alone. */
static void check_free_name(const char *url, const char *name)
{
    const char *status[] = {"-r", url, "status", name, NULL};
    const char *release[] = {"-r", url, "release", name, "0123456789abcdef0123456789abcdef", NULL};
    cli_proc p;
    if (cli_run(&p, NULL, status, 20000 * test_slowdown()) != 1 || !strstr(p.out, "free"))
        fail_msg("status of a free name mid-migration: exit %d: %s%s", p.status, p.out, p.err);
    no_redirect_text(p.err);
    if (cli_run(&p, NULL, release, 20000 * test_slowdown()) != 1)
        fail_msg("release of a free name mid-migration: exit %d: %s", p.status, p.err);
    no_redirect_text(p.err);
}

/* What a held name and a name never used show at one step of a migration:
 * the held one is busy (75), and not said to be released since (its
 * status cannot run while its keys are split); the free one cannot be
 * taken (its keys cannot be written while the slot migrates) and says so
 * without the server's redirect, but reads free. */
static void check_mid_migration(const char *url, dlock_lock *held, const char *free_name)
{
    cli_proc p;
    assert_int_equal(cli_try(url, dlock_lock_name(held), &p), 75);
    if (strstr(p.err, "released since"))
        fail_msg("a held name mid-migration: %s", p.err);
    if (cli_try(url, free_name, &p) != 69 || !strstr(p.err, "being migrated"))
        fail_msg("a free name mid-migration: exit %d: %s", p.status, p.err);
    check_free_name(url, free_name);
}

/* While the held name's keys are on one node (source or target), its
 * holder extends it and `dlock status` reads it held. */
static void check_whole(const char *url, dlock_client *holder, dlock_lock *held)
{
    const char *status[] = {"-r", url, "status", dlock_lock_name(held), NULL};
    char expect[96];
    cli_proc p;
    if (dlock_lock_extend(held, 30000) != 0)
        fail_msg("extend: %s", dlock_client_errmsg(holder));
    assert_int_equal(cli_run(&p, NULL, status, 20000 * test_slowdown()), 0);
    snprintf(expect, sizeof(expect), "%s: held", dlock_lock_name(held));
    assert_non_null(strstr(p.out, expect));
    no_redirect_text(p.err);
}

struct acquirer {
    dlock_client *client;
    const char *name;
    int64_t wait_ms;
    unsigned permits; /* 0: a mutex */
    bool fair;
    int64_t backoff_max_ms; /* 0: the default */
    atomic_int tries;       /* the tries refused so far */
    int rc;
    long long done_ms;
    dlock_lock *lock;
};

static void count_try(int rc, const char *errmsg, int64_t sleep_ms, void *arg)
{
    struct acquirer *a = arg;
    (void)rc, (void)errmsg, (void)sleep_ms;
    atomic_fetch_add(&a->tries, 1);
}

static void *acquire_in_thread(void *arg)
{
    struct acquirer *a = arg;
    dlock_acquire_options opts = wait_options(a->wait_ms);
    opts.permits = a->permits;
    opts.fair = a->fair;
    opts.backoff_max_ms = a->backoff_max_ms;
    opts.on_retry = count_try;
    opts.on_retry_arg = a;
    a->rc = dlock_lock_acquire(&a->lock, a->client, a->name, 30000, &opts);
    kept_lock(a->lock);
    a->done_ms = test_now_ms();
    return NULL;
}

static struct acquirer *start_acquirer(dlock_client *c, const char *name, int64_t wait_ms)
{
    struct acquirer a = {.client = c, .name = name, .wait_ms = wait_ms};
    return start_thread(acquire_in_thread, &a, sizeof(a));
}

struct extender {
    dlock_lock *lock;
    int rc;
};

static void *extend_in_thread(void *arg)
{
    struct extender *e = arg;
    e->rc = dlock_lock_extend(e->lock, 30000);
    return NULL;
}

static void join_granted(struct acquirer *a)
{
    join_thread(a);
    if (a->rc != 0)
        fail_msg("%s: %s", a->name, dlock_client_errmsg(a->client));
    assert_int_equal(dlock_lock_release(a->lock), 0);
}

/* A slot migrates key by key under a held name, a name never used and two
 * acquires of that one: at each step (nothing moved, the lock key moved,
 * everything moved) the held name reads busy and is extended and read, the
 * free one is refused in our words; an acquire that does not wait is
 * granted once the migration ends within its command timeout, a waiter
 * once it ends within its wait. After it everything works on the target,
 * and the holder releases there. */
static void test_cluster_migration_busy_free_granted(void **state)
{
    char tag[32], held_name[64], free_name[64], later_name[64];
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    const char *url = cluster.nodes[seed].url;
    dlock_client *holder = client_with_timeouts(url, 0, 5000 * test_slowdown());
    dlock_client *patient = client_on(url);
    dlock_client *quick = client_with_timeouts(url, 0, 5000 * test_slowdown());
    struct acquirer *waiter, *at_once;
    struct extender *extender;
    cluster_migration m;
    dlock_lock *held;
    long long finished;
    (void)state;

    fresh_tag(tag, sizeof(tag), "mig");
    snprintf(held_name, sizeof(held_name), "{%s}held", tag);
    snprintf(free_name, sizeof(free_name), "{%s}free", tag);
    snprintf(later_name, sizeof(later_name), "{%s}later", tag);
    held = take(holder, held_name, 30000, NULL);
    migration_start(&cluster, &m, held_name);

    check_mid_migration(url, held, free_name);
    check_whole(url, holder, held);
    /* The lock key moves alone: the name's keys are apart until the rest
     * follows, and an extend meanwhile goes through once they do. */
    migrate_key(&cluster, &m, held_name);
    check_mid_migration(url, held, free_name);
    extender = start_thread(extend_in_thread, &(struct extender){.lock = held},
                            sizeof(struct extender));
    usleep(300000);
    migrate_rest(&cluster, &m);
    join_thread(extender);
    if (extender->rc != 0)
        fail_msg("extend across the move: %s", dlock_client_errmsg(holder));
    check_mid_migration(url, held, free_name);
    check_whole(url, holder, held);

    /* Both ask while the slot still migrates; it ends a second later. */
    waiter = start_acquirer(patient, free_name, 20000LL * test_slowdown());
    at_once = start_acquirer(quick, later_name, 0);
    usleep(1000000);
    finished = test_now_ms();
    migration_finish(&cluster, &m);
    join_granted(at_once);
    join_granted(waiter);
    assert_true(at_once->done_ms >= finished && waiter->done_ms >= finished);

    if (dlock_lock_extend(held, 30000) != 0)
        fail_msg("extend after: %s", dlock_client_errmsg(holder));
    assert_true(exists_at(cluster.nodes[m.to].port, held_name));
    assert_int_equal(dlock_lock_release(held), 0);
    assert_false(exists_at(cluster.nodes[m.to].port, held_name));
    held = take(holder, held_name, 30000, NULL);
    assert_true(exists_at(cluster.nodes[m.to].port, held_name));
    assert_int_equal(dlock_lock_release(held), 0);
}

/* The status of `name` shows `holders` holders, and `dlock status` says
 * it is held, without the server's redirect text. */
static void check_holders(const char *url, dlock_client *c, const char *name, size_t holders)
{
    const char *args[] = {"-r", url, "status", name, NULL};
    dlock_status *st = NULL;
    cli_proc p;
    if (dlock_status_query(&st, c, name) != 0)
        fail_msg("status of %s: %s", name, dlock_client_errmsg(c));
    assert_true(dlock_status_held(st));
    assert_int_equal(dlock_status_holders(st), holders);
    dlock_status_free(st);
    if (cli_run(&p, NULL, args, 20000 * test_slowdown()) != 0 || !strstr(p.out, "held"))
        fail_msg("dlock status %s: exit %d: %s%s", name, p.status, p.out, p.err);
    no_redirect_text(p.err);
}

/* `dlock list` shows both names held. */
static void check_listed(const char *url, const char *one, const char *other)
{
    const char *args[] = {"-r", url, "list", NULL};
    cli_proc p;
    if (cli_run(&p, NULL, args, 20000 * test_slowdown()) != 0 || !strstr(p.out, one) ||
        !strstr(p.out, other))
        fail_msg("dlock list: exit %d: %s%s", p.status, p.out, p.err);
    no_redirect_text(p.err);
}

/* `dlock release NAME TOKEN` (an adopted handle, which tries as a mutex
 * first, naming keys a semaphore has not) releases the permit. */
static void check_adopted_release(const char *url, const char *name, const char *token)
{
    const char *args[] = {"-r", url, "release", name, token, NULL};
    cli_proc p;
    if (cli_run(&p, NULL, args, 20000 * test_slowdown()) != 0)
        fail_msg("dlock release %s TOKEN mid-migration: exit %d: %s", name, p.status, p.err);
    no_redirect_text(p.err);
}

/* A shared hold and a semaphore's permits are extended while their slot
 * migrates, before and after their keys moved, and both shared holders
 * and both permits release meanwhile (one by `dlock release NAME TOKEN`),
 * the last out too: their release and
 * extend name none of the mutex's keys they lack (a key that does not
 * exist makes the cluster answer TRYAGAIN then), and the status and the
 * releases go again naming the keys that exist nowhere (the semaphore's
 * waiters' queue, the waiting writers) as NAME. */
static void test_cluster_migration_keeps_shared_and_permits(void **state)
{
    char tag[32], shared_name[64], sem_name[64];
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    dlock_client *holder =
        client_with_timeouts(cluster.nodes[seed].url, 0, 5000 * test_slowdown());
    dlock_acquire_options shared = DLOCK_ACQUIRE_OPTIONS_INIT, sem = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *reader, *again, *permit, *other;
    cluster_migration m;
    (void)state;

    fresh_tag(tag, sizeof(tag), "migk");
    snprintf(shared_name, sizeof(shared_name), "{%s}shared", tag);
    snprintf(sem_name, sizeof(sem_name), "{%s}sem", tag);
    shared.shared = 1;
    sem.permits = 2;
    reader = take(holder, shared_name, 30000, &shared);
    again = take(holder, shared_name, 30000, &shared);
    permit = take(holder, sem_name, 30000, &sem);
    other = take(holder, sem_name, 30000, &sem);
    migration_start(&cluster, &m, shared_name);
    check_holders(cluster.nodes[seed].url, holder, shared_name, 2);
    check_holders(cluster.nodes[seed].url, holder, sem_name, 2);
    check_listed(cluster.nodes[seed].url, shared_name, sem_name);
    if (dlock_lock_extend(reader, 30000) != 0 || dlock_lock_extend(permit, 30000) != 0)
        fail_msg("extend mid-migration: %s", dlock_client_errmsg(holder));
    if (dlock_lock_release(again) != 0)
        fail_msg("a shared release mid-migration: %s", dlock_client_errmsg(holder));
    check_adopted_release(cluster.nodes[seed].url, sem_name, dlock_lock_token(other));
    check_holders(cluster.nodes[seed].url, holder, sem_name, 1);
    migrate_rest(&cluster, &m);
    check_holders(cluster.nodes[seed].url, holder, shared_name, 1);
    check_holders(cluster.nodes[seed].url, holder, sem_name, 1);
    if (dlock_lock_extend(reader, 30000) != 0 || dlock_lock_extend(permit, 30000) != 0)
        fail_msg("extend once the keys moved: %s", dlock_client_errmsg(holder));
    /* The last holders out delete the keys, all of them, mid-migration. */
    if (dlock_lock_release(reader) != 0)
        fail_msg("the last shared release mid-migration: %s", dlock_client_errmsg(holder));
    assert_false(exists_at(cluster.nodes[m.to].port, shared_name));
    if (dlock_lock_release(permit) != 0)
        fail_msg("the last permit's release mid-migration: %s", dlock_client_errmsg(holder));
    assert_false(exists_at(cluster.nodes[m.to].port, sem_name));
    migration_finish(&cluster, &m);
    permit = take(holder, sem_name, 30000, &sem);
    assert_true(exists_at(cluster.nodes[m.to].port, sem_name));
    assert_int_equal(dlock_lock_release(permit), 0);
    assert_false(exists_at(cluster.nodes[m.to].port, sem_name));
}

/* A waiter queued for `name` (of `permits`, 1: a mutex; fair or not)
 * before its slot began to migrate keeps its place with the tries it
 * makes mid-migration (two of them, past its lease when they do not
 * renew it), and is handed the name by the holder's release then, though
 * the holder's was the name's last hold: the release reads the queue
 * before the waiter leaves it, as a migrating slot's node refuses access
 * to a key a script emptied. A waiter that tries every few ms
 * (`backoff_max_ms`) has tries in flight around the release: one the
 * cluster does not serve does not cost it the hand-over. The waiter gives
 * it back there too, with no queue left (the release goes again naming
 * the queue's keys as NAME), and nothing of the name is left after. */
static void check_handed_mid_migration(const char *tag, unsigned permits, bool fair,
                                       int64_t backoff_max_ms)
{
    char name[64], queue[128];
    int seed = test_cluster_node_with_role(&cluster, "slave", 0);
    dlock_client *holder =
        client_with_timeouts(cluster.nodes[seed].url, 0, 5000 * test_slowdown());
    dlock_client *patient = client_on(cluster.nodes[seed].url);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    struct acquirer *waiter;
    cluster_migration m;
    dlock_lock *held;
    int tries;

    snprintf(name, sizeof(name), "{%s}%s%u", tag, fair ? "fair" : "n", permits);
    snprintf(queue, sizeof(queue), "{%s}:dlock:%s:%s", tag, permits > 1 ? "waiters" : "queue",
             name);
    opts.permits = permits;
    opts.fair = fair;
    held = take(holder, name, 30000, &opts);
    for (unsigned i = 1; i < permits; i++)
        take(holder, name, 30000, &opts);
    waiter = start_thread(acquire_in_thread,
                          &(struct acquirer){.client = patient,
                                             .name = name,
                                             .wait_ms = 20000LL * test_slowdown(),
                                             .permits = permits,
                                             .fair = fair,
                                             .backoff_max_ms = backoff_max_ms},
                          sizeof(struct acquirer));
    for (int i = 0; i < 500 && !exists_at(cluster.nodes[test_cluster_owner(&cluster, name)].port,
                                          queue);
         i++)
        usleep(10000);
    if (!exists_at(cluster.nodes[test_cluster_owner(&cluster, name)].port, queue))
        fail_msg("%s: the waiter did not queue", name);
    migration_start(&cluster, &m, name);
    tries = atomic_load(&waiter->tries);
    for (int i = 0; i < 1000 * test_slowdown() && atomic_load(&waiter->tries) < tries + 2; i++)
        usleep(10000);
    if (atomic_load(&waiter->tries) < tries + 2)
        fail_msg("%s: the waiter did not try mid-migration", name);
    if (dlock_lock_release(held) != 0)
        fail_msg("%s: a release handing over mid-migration: %s", name,
                 dlock_client_errmsg(holder));
    join_thread(waiter);
    if (waiter->rc != 0)
        fail_msg("%s: the waiter: %s", name, dlock_client_errmsg(patient));
    check_holders(cluster.nodes[seed].url, holder, name, permits);
    assert_false(exists_at(cluster.nodes[m.from].port, queue));
    if (dlock_lock_release(waiter->lock) != 0)
        fail_msg("%s: a release with no queue mid-migration: %s", name,
                 dlock_client_errmsg(patient));
    migrate_rest(&cluster, &m);
    migration_finish(&cluster, &m);
    if (permits == 1)
        assert_false(exists_at(cluster.nodes[m.to].port, name));
}

static void test_cluster_migration_hands_over(void **state)
{
    char tag[32];
    (void)state;
    fresh_tag(tag, sizeof(tag), "migh");
    check_handed_mid_migration(tag, 1, false, 0);
    fresh_tag(tag, sizeof(tag), "migf");
    check_handed_mid_migration(tag, 1, true, 0);
    fresh_tag(tag, sizeof(tag), "migs");
    check_handed_mid_migration(tag, 2, false, 0);
    for (int i = 0; i < 5; i++) {
        fresh_tag(tag, sizeof(tag), "migq");
        check_handed_mid_migration(tag, 1, true, 10);
        fresh_tag(tag, sizeof(tag), "migr");
        check_handed_mid_migration(tag, 2, false, 10);
    }
}

/* ---- The node the URL names dies ---- */

/* Kills node `i` and starts it again with neither data nor nodes.conf: a
 * node on its own, that knows no slot and answers CLUSTERDOWN for each. */
static void restart_afresh(int i)
{
    char conf[256];
    test_redis_kill(&cluster.nodes[i]);
    snprintf(conf, sizeof(conf), "%s/nodes.conf", cluster.nodes[i].dir);
    assert_int_equal(unlink(conf), 0);
    assert_int_equal(test_redis_restart(&cluster.nodes[i]), 0);
}

/* A renewed lock taken through a replica (a node with no slot) outlives
 * that node, dead or started afresh out of the cluster: the renewal
 * thread, whose connections never talked to it before, finds the map
 * through the nodes the client learnt. */
static void test_cluster_renewal_outlives_the_seed(void **state)
{
    char name[64];
    int master = test_cluster_node_with_role(&cluster, "master", 0), seed = replica_of(master);
    dlock_client *c = client_on(cluster.nodes[seed].url);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    int ttl = 600 * test_slowdown();
    dlock_lock *lock;
    (void)state;

    name_on(name, sizeof(name), other_master(&cluster, master), "seedlib");
    opts.auto_renew = 1;
    lock = take(c, name, ttl, &opts);
    restart_afresh(seed);
    usleep((useconds_t)ttl * 2 * 1000);
    test_redis_kill(&cluster.nodes[seed]); /* it stays down: the later tests count on that */
    usleep((useconds_t)ttl * 2 * 1000);
    if (!dlock_lock_held(lock))
        fail_msg("lost: %s", dlock_client_errmsg(c));
    assert_true(exists_at(cluster.nodes[test_cluster_owner(&cluster, name)].port, name));
    assert_int_equal(dlock_lock_release(lock), 0);
}

static int key_on_some_node(void *key)
{
    for (int i = 0; i < TEST_CLUSTER_NODES; i++)
        if (cluster.nodes[i].pid > 0 && exists_at(cluster.nodes[i].port, key))
            return 1;
    return 0;
}

/* `dlock -r REPLICA run -t 6s NAME -- sleep 8`, and the replica killed a
 * second after the grant: the run renews through the masters it knows and
 * exits 0. */
static void test_cluster_run_outlives_the_seed(void **state)
{
    char name[64];
    int master = test_cluster_node_with_role(&cluster, "master", 1), seed;
    const char *args[] = {"-r", NULL, "run", "-t", "6s", name, "--", "sleep", "8", NULL};
    cli_proc *p;
    (void)state;

    seed = test_cluster_replica_of(&cluster, master);
    assert_true(seed >= 0 && cluster.nodes[seed].pid > 0);
    args[1] = cluster.nodes[seed].url;
    name_on(name, sizeof(name), other_master(&cluster, master), "seedcli");
    p = start_cli(NULL, args, NULL);
    await_condition(key_on_some_node, name, "the run's grant");
    usleep(1000000);
    test_redis_kill(&cluster.nodes[seed]);
    if (cli_wait(p, 30000 * test_slowdown()) != 0)
        fail_msg("run: exit %d: %s", p->status, p->err);
    assert_false(key_on_some_node(name));
}

/* ---- A master dies under a waiter ---- */

static int promoted(void *port)
{
    return is_master(*(int *)port);
}

struct key_at {
    int port;
    const char *key;
};

/* Does the replica at k->port hold k->key (READONLY: a replica answers
 * for its slots then, not MOVED)? */
static int replica_has(void *arg)
{
    const struct key_at *k = arg;
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", k->port, tv);
    redisReply *r = NULL;
    int yes = 0;
    if (c && !c->err) {
        freeReplyObject(redisCommand(c, "READONLY"));
        r = redisCommand(c, "EXISTS %s", k->key);
        yes = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    }
    freeReplyObject(r);
    redisFree(c);
    return yes;
}

/* Before a replica takes over from dead master `dead`: a try through the
 * URL of master `alive` fails (69), and the message names the dead master
 * and not the live one. */
static void check_blames_the_dead(int alive, int dead, const char *name)
{
    const char *args[] = {"-r", cluster.nodes[alive].url, "acquire", "-n", name, NULL};
    char dead_label[32], alive_label[32];
    cli_proc p;
    snprintf(dead_label, sizeof(dead_label), "127.0.0.1:%d", cluster.nodes[dead].port);
    snprintf(alive_label, sizeof(alive_label), "127.0.0.1:%d", cluster.nodes[alive].port);
    assert_int_equal(cli_run(&p, NULL, args, 20000 * test_slowdown()), 69);
    if (!strstr(p.err, dead_label) || strstr(p.err, alive_label))
        fail_msg("a try while %s is dead: %s", dead_label, p.err);
}

/* Two waiters, the library's and `dlock run -w 30s`, wait for a held name
 * through the URL of the master of its slot; that master is killed and its
 * replica takes over: both follow the new map and get the lock once the
 * holder lets it go through the new master. A `dlock run -t 12s` through
 * that URL, which its master granted without a redirect, renews through
 * the new master and exits 0, though its command outlives the TTL. */
static void test_cluster_waiter_rides_a_master_kill(void **state)
{
    char name[64], renewed[64], token[33];
    int master, replica, port;
    struct acquirer *waiter;
    cli_proc p, *cli_waiter, *runner;
    redisReply *w;
    (void)state;

    /* The only master whose replica is still up. */
    master = -1;
    for (int i = 0; i < TEST_CLUSTER_NODES && master < 0; i++) {
        int r = is_master(cluster.nodes[i].port) ? test_cluster_replica_of(&cluster, i) : -1;
        if (r >= 0 && cluster.nodes[r].pid > 0)
            master = i;
    }
    assert_true(master >= 0);
    replica = replica_of(master);
    port = cluster.nodes[replica].port;
    name_on(name, sizeof(name), master, "killed");
    name_on(renewed, sizeof(renewed), master, "renewed");
    {
        const char *hold[] = {"-r", cluster.nodes[master].url, "run", "-t", "12s", renewed,
                              "--", "sleep", "14", NULL};
        runner = start_cli(NULL, hold, NULL);
        await_condition(replica_has, &(struct key_at){cluster.nodes[replica].port, renewed},
                        "the run's key on the replica");
    }
    {
        const char *hold[] = {"-r", cluster.nodes[master].url, "acquire", "-t", "60s", name,
                              NULL};
        assert_int_equal(cli_run(&p, NULL, hold, 10000 * test_slowdown()), 0);
        assert_int_equal(sscanf(p.out, "%32s", token), 1);
    }
    w = kept_reply(test_command(cluster.nodes[master].port, "WAIT 1 5000"));
    assert_true(w && w->type == REDIS_REPLY_INTEGER && w->integer == 1);

    waiter = start_acquirer(client_on(cluster.nodes[master].url), name, 30000LL * test_slowdown());
    {
        const char *wait[] = {"-r", cluster.nodes[master].url, "run", "-w", "30s", name, "--",
                              "true", NULL};
        cli_waiter = start_cli(NULL, wait, NULL);
    }
    usleep(300000);
    test_redis_kill(&cluster.nodes[master]);
    check_blames_the_dead(other_master(&cluster, master), master, name);
    await_condition(promoted, &port, "the replica's promotion");
    {
        const char *release[] = {"-r", cluster.nodes[replica].url, "release", name, token, NULL};
        assert_int_equal(cli_run(&p, NULL, release, 10000 * test_slowdown()), 0);
    }
    join_granted(waiter);
    if (cli_wait(cli_waiter, 30000 * test_slowdown()) != 0)
        fail_msg("run -w: exit %d: %s", cli_waiter->status, cli_waiter->err);
    assert_int_equal(test_cluster_owner(&cluster, name), replica);
    if (cli_wait(runner, 40000 * test_slowdown()) != 0)
        fail_msg("run -t 12s: exit %d: %s", runner->status, runner->err);
    assert_false(exists_at(port, renewed));
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_cluster_migration_busy_free_granted),
        T(test_cluster_migration_keeps_shared_and_permits),
        T(test_cluster_migration_hands_over),
        T(test_cluster_renewal_outlives_the_seed),
        T(test_cluster_run_outlives_the_seed),
        T(test_cluster_waiter_rides_a_master_kill),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
