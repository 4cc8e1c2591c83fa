/* Replica acknowledgement (--replicas) and the restart rule
 * (--restart-delay) on a Redis Cluster of 3 masters and 3 replicas, started
 * once for both tests. Every name shares one hash tag, so one master (and
 * its replica) serves them all; the clients reach the cluster through
 * another node, so each is redirected first. The failover test comes last:
 * it leaves that master a replica. */
#include "cluster_tools.h"
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define DELAY_MS 2000 /* --restart-delay 2s */
#define HOLD_MS 60000 /* the first holders' TTL: longer than each test */
#define TAG "{cdur}"

static test_cluster cluster;
static int master, replica; /* node indexes: the tag's master and its replica */
static const char *seed;    /* the URL of a node that owns none of the tag's slot */
static int seed_port;

/* EXISTS on a node, a replica too (READONLY lets it answer for its
 * master's slots). */
static int exists_on(int node, const char *key)
{
    redisContext *c = connect_to(&cluster.nodes[node]);
    redisReply *r;
    freeReplyObject(run(c, "READONLY"));
    r = kept_reply(run(c, "EXISTS %s", key));
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("EXISTS %s on node %d: %s", key, node, r->str);
    return r->integer == 1;
}

/* Polls until node's INFO replication says `field`:`want`, for up to 20 s
 * (times the slowdown). */
static void await_info(int node, const char *field, const char *want)
{
    long long deadline = test_now_ms() + 20000LL * test_slowdown();
    char line[96];
    snprintf(line, sizeof(line), "%s:%s\r\n", field, want);
    for (;;) {
        redisReply *r = test_command(cluster.nodes[node].port, "INFO replication");
        int yes = r && r->type == REDIS_REPLY_STRING && strstr(r->str, line);
        freeReplyObject(r);
        if (yes)
            return;
        if (test_now_ms() > deadline)
            fail_msg("node %d: %s:%s did not happen in time", node, field, want);
        usleep(50000);
    }
}

/* Polls until the seed sends the tag's slot to node `to` (MOVED), for up
 * to 20 s (times the slowdown): the whole cluster has seen a failover. */
static void await_seed_sends_to(int to)
{
    long long deadline = test_now_ms() + 20000LL * test_slowdown();
    char moved[32];
    snprintf(moved, sizeof(moved), ":%d", cluster.nodes[to].port);
    for (;;) {
        redisReply *r = test_command(seed_port, "GET " TAG);
        int yes = r && r->type == REDIS_REPLY_ERROR && strstr(r->str, moved);
        freeReplyObject(r);
        if (yes)
            return;
        if (test_now_ms() > deadline)
            fail_msg("the seed does not send " TAG " to node %d", to);
        usleep(50000);
    }
}

static int group_setup(void **state)
{
    (void)state;
    if (test_cluster_start(&cluster) < 0)
        return -1;
    master = test_cluster_owner(&cluster, TAG);
    replica = master >= 0 ? test_cluster_replica_of(&cluster, master) : -1;
    for (int i = 0; i < TEST_CLUSTER_NODES && !seed; i++)
        if (i != master && i != replica) {
            seed = cluster.nodes[i].url;
            seed_port = cluster.nodes[i].port;
        }
    return replica >= 0 && seed ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    test_cluster_stop(&cluster);
    return 0;
}

/* An acquire waiting `wait_ms`: its code; the lock, kept, in *out. */
static int try_acquire(dlock_lock **out, dlock_client *c, const char *name, int64_t wait_ms)
{
    dlock_acquire_options o = wait_options(wait_ms);
    int rc = dlock_lock_acquire(out, c, name, HOLD_MS, &o);
    if (rc == 0)
        kept_lock(*out);
    return rc;
}

/* `dlock status --restart-delay 2s NAME` through the seed says the
 * master serving NAME is in its delay. */
static void assert_status_shows_delay(const char *name)
{
    const char *args[] = {"-r", seed, "status", "--restart-delay", "2s", name, NULL};
    cli_proc p;
    cli_run(&p, NULL, args, 10000 * test_slowdown());
    if (!strstr(p.out, "grants nothing for"))
        fail_msg("status shows no restart delay: %s%s", p.out, p.err);
}

/* A name's master loses its data (FLUSHALL) while the name is held. With
 * --restart-delay 2s the master grants nothing for 2 s after that, status
 * says so, and the next holder's fence is above the first's; without it
 * (the control) a second holder at once, while the first's TTL runs. */
static void test_cluster_restart_delay_after_flushall(void **state)
{
    const char *name = TAG ":flushed";
    dlock_client *c = durable_client(seed, 0, DELAY_MS), *plain = durable_client(seed, 0, 0);
    dlock_lock *held = NULL, *taken = NULL, *second = NULL;
    long long lost_ms, taken_ms;
    (void)state;

    /* Before, the option was refused on a cluster (DLOCK_EINVAL). The
     * first acquire finds no marker on the master: the delay starts. */
    assert_int_equal(try_acquire(&held, c, name, 0), DLOCK_EBUSY);
    assert_status_shows_delay(name);
    usleep((DELAY_MS + 200) * 1000);
    assert_int_equal(try_acquire(&held, c, name, 0), 0);

    must_succeed(cluster.nodes[master].port, "FLUSHALL",
                 test_command(cluster.nodes[master].port, "FLUSHALL"));
    lost_ms = test_wall_ms();
    assert_false(exists_on(master, name)); /* the holder's key is gone */
    assert_int_equal(try_acquire(&taken, c, name, 0), DLOCK_EBUSY);
    assert_status_shows_delay(name);
    assert_int_equal(try_acquire(&taken, c, name, 10000LL * test_slowdown()), 0);
    taken_ms = test_wall_ms();
    assert_true(taken_ms >= lost_ms + DELAY_MS);
    assert_true(taken_ms < lost_ms + (DELAY_MS + 8000LL) * test_slowdown());
    assert_true(dlock_lock_fence(taken) > dlock_lock_fence(held));

    /* The control: without the option the flushed master grants at once. */
    must_succeed(cluster.nodes[master].port, "FLUSHALL",
                 test_command(cluster.nodes[master].port, "FLUSHALL"));
    assert_int_equal(try_acquire(&second, plain, name, 0), 0);
    assert_true(dlock_lock_validity_ms(taken) > 0); /* two holders at once */
}

/* `dlock acquire -n -t TTL [--replicas 1] NAME` through the seed: its exit
 * status, its output in *p. */
static int cli_acquire(cli_proc *p, const char *ttl, int replicas, const char *name)
{
    const char *with[] = {"-r", seed, "acquire", "-n", "-t", ttl, "--replicas", "1", name, NULL};
    const char *without[] = {"-r", seed, "acquire", "-n", "-t", ttl, name, NULL};
    return cli_run(p, NULL, replicas ? with : without, 20000 * test_slowdown());
}

/* Cuts a replica off its master for good: the master's default user (the
 * replica's) may no longer sync, and the link is closed. */
static void cut_replication(int of_master, int its_replica)
{
    int port = cluster.nodes[of_master].port;
    must_succeed(port, "ACL SETUSER",
                 test_command(port, "ACL SETUSER default -psync -sync -replconf"));
    must_succeed(port, "CLIENT KILL", test_command(port, "CLIENT KILL TYPE replica"));
    await_info(its_replica, "master_link_status", "down");
}

/* A name whose slot another master than the tag's serves. */
static void name_elsewhere(char *name, size_t size)
{
    for (int i = 0;; i++) {
        snprintf(name, size, "{other%d}:renewed", i);
        if (test_cluster_owner(&cluster, name) != master)
            return;
    }
}

static void on_lost(dlock_lock *lock, int reason, void *arg)
{
    (void)lock;
    (void)reason;
    atomic_store((atomic_int *)arg, 1);
}

/* Two renewed locks with --replicas 1, on two masters, renewed in one
 * batch: after the other master is cut off its replica (for good: the
 * tests after this one use only the tag's master), its lock is lost (no
 * extend there is acknowledged), and the tag's, whose replica
 * acknowledges, is still held. One WAIT for both would vouch for one
 * master's extends with the other's replicas. */
static void test_cluster_renewals_acknowledged_per_master(void **state)
{
    const char *kept = TAG ":renewed";
    char cut[32];
    int cut_master, cut_replica;
    dlock_client *c = durable_client(seed, 1, 0);
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *on_cut, *on_kept;
    /* what the renewal thread records outlives the test's stack */
    atomic_int *cut_lost = cleanup_alloc(sizeof(*cut_lost));
    atomic_int *kept_lost = cleanup_alloc(sizeof(*kept_lost));
    long long until;
    (void)state;

    name_elsewhere(cut, sizeof(cut));
    cut_master = test_cluster_owner(&cluster, cut);
    cut_replica = test_cluster_replica_of(&cluster, cut_master);
    assert_true(cut_replica >= 0);
    o.auto_renew = 1;
    o.on_lost = on_lost;
    o.on_lost_arg = cut_lost;
    on_cut = take(c, cut, 1500, &o);
    o.on_lost_arg = kept_lost;
    on_kept = take(c, kept, 1500, &o);

    cut_replication(cut_master, cut_replica);
    until = test_now_ms() + 10000LL * test_slowdown();
    while (dlock_lock_held(on_cut) && test_now_ms() < until)
        usleep(20000);
    assert_false(dlock_lock_held(on_cut));
    usleep(3000 * 1000); /* two more TTLs of renewals for the other */
    assert_true(dlock_lock_held(on_kept));
    assert_int_equal(atomic_load(kept_lost), 0);
    assert_int_equal(atomic_load(cut_lost), 1);

    assert_int_equal(dlock_lock_release(on_kept), 0);
}

/* A failover after writes the replica missed: the link cut, then CLUSTER
 * FAILOVER TAKEOVER on the replica (a plain CLUSTER FAILOVER would wait
 * for it to catch up). With --replicas 1 a grant either reached the
 * replica (and survives) or was never given (exit 69, no key). Without it
 * the holder's key is lost on the new master and a second holder gets the
 * name at once: the documented unsafe case. The promoted replica, with
 * --restart-delay 2s, grants nothing for 2 s and status says so. */
static void test_cluster_failover_with_the_link_cut(void **state)
{
    const char *acked = TAG ":acked", *unacked = TAG ":unacked", *lost = TAG ":lost";
    const char *later = TAG ":later";
    dlock_client *plain = durable_client(seed, 0, 0), *delayed;
    dlock_lock *holder = NULL, *second = NULL, *third = NULL;
    long long promoted_ms, taken_ms;
    cli_proc p;
    (void)state;

    if (cli_acquire(&p, "30s", 1, acked) != 0)
        fail_msg("acquire --replicas 1 with the link up: %s", p.err);
    assert_true(exists_on(replica, acked));

    cut_replication(master, replica);
    assert_int_equal(cli_acquire(&p, "4s", 1, unacked), 69);
    assert_non_null(strstr(p.err, "replicas acknowledged"));
    assert_false(exists_on(master, unacked));
    assert_int_equal(try_acquire(&holder, plain, lost, 0), 0);
    assert_true(exists_on(master, lost));
    assert_false(exists_on(replica, lost));

    must_succeed(cluster.nodes[replica].port, "TAKEOVER",
                 test_command(cluster.nodes[replica].port, "CLUSTER FAILOVER TAKEOVER"));
    await_info(replica, "role", "master");
    await_info(master, "role", "slave");
    await_seed_sends_to(replica);
    promoted_ms = test_wall_ms();
    assert_true(exists_on(replica, acked));
    assert_false(exists_on(replica, lost));

    /* The control: the lost holder's name goes to a second holder. */
    assert_int_equal(try_acquire(&second, plain, lost, 10000LL * test_slowdown()), 0);
    assert_true(dlock_lock_validity_ms(holder) > 0);
    assert_true(dlock_lock_fence(second) > dlock_lock_fence(holder));

    /* The promoted replica carries its old master's marker: the delay. */
    delayed = durable_client(seed, 0, DELAY_MS);
    assert_status_shows_delay(later);
    assert_int_equal(try_acquire(&third, delayed, later, 10000LL * test_slowdown()), 0);
    taken_ms = test_wall_ms();
    assert_true(taken_ms >= promoted_ms + DELAY_MS);

    must_succeed(cluster.nodes[master].port, "ACL SETUSER",
                 test_command(cluster.nodes[master].port, "ACL SETUSER default +@all"));
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_cluster_restart_delay_after_flushall),
        T(test_cluster_renewals_acknowledged_per_master),
        T(test_cluster_failover_with_the_link_cut),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
