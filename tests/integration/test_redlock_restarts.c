/* Redlock over 5 real redis-server processes that restart empty under a
 * holder: fences still increase, an extend repairs a node that lost the
 * key (and not one whose loss is someone else's or our release's), a
 * holder left with a minority loses the lock, a holder outlives restarts
 * one at a time while a competitor tries, a release reaches a server it
 * had to reconnect to, and dlock_fence_check asks the
 * majority, past servers that granted late. The rest of Redlock: test_redlock.c. */
#include "helpers.h"
#include "nodes.h"

#include <dlock.h>

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define FAR_FUTURE "4503599627370496" /* 2^52 */

/* Acquire and release `rounds` times; between rounds, sometimes restart a
 * random minority of nodes empty. The tokens must strictly increase. */
static void fences_across_restarts(const char *name, int rounds, unsigned seed)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    uint64_t last = 0;
    unsigned rng = seed;
    for (int i = 0; i < rounds; i++) {
        uint64_t fence = take_and_release(c, name, 30000, NULL);
        if (fence <= last)
            fail_msg("round %d (seed %u): fence %" PRIu64 " after %" PRIu64, i, seed, fence, last);
        last = fence;
        if (rand_r(&rng) % 4 == 0) {
            int victims = 1 + (int)(rand_r(&rng) % 2), first = (int)(rand_r(&rng) % NODES);
            for (int v = 0; v < victims; v++)
                assert_int_equal(test_redis_restart(&nodes[(first + v) % NODES]), 0);
        }
    }
}

static void test_redlock_fences_increase_across_restarts(void **state)
{
    (void)state;
    /* The time floor decides. */
    fences_across_restarts("rl:fence-time", 250, 7);
    /* The counter decides: two nodes start far in the future. */
    on_nodes(0, 2, "SET %s " FAR_FUTURE, aux_key("rl:fence-counter", "fence"));
    fences_across_restarts("rl:fence-counter", 250, 11);
}

/* The fence stored at `key` on `r`, or the test fails. */
static uint64_t fence_at(redisContext *r, const char *key)
{
    const char *stored = string_at(r, key);
    assert_non_null(stored);
    return strtoull(stored, NULL, 10);
}

static void test_redlock_extend_repairs_a_restarted_node(void **state)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    dlock_lock *lock = take(c, "rl:repair", 30000, NULL);
    redisContext *r;
    (void)state;
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:repair", dlock_lock_token(lock)), NODES);
    assert_int_equal(test_redis_restart(&nodes[2]), 0); /* comes back empty */
    assert_int_equal(nodes_holding("rl:repair", dlock_lock_token(lock)), NODES - 1);
    assert_int_equal(dlock_lock_extend(lock, 30000), 0); /* four votes */
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:repair", dlock_lock_token(lock)), NODES);
    r = connect_to(&nodes[2]);
    assert_true(fence_at(r, aux_key("rl:repair", "fence")) >= dlock_lock_fence(lock));

    /* A node that lost the key where another client was granted since (a
     * failed attempt of its, cleaned up: the fence above ours) gets it
     * back, and keeps the larger fence. */
    freeReplyObject(run(r, "DEL rl:repair"));
    freeReplyObject(run(r, "SET %s %" PRIu64, aux_key("rl:repair", "fence"),
                        dlock_lock_fence(lock) + 1000));
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    usleep(20 * 1000);
    assert_true(key_exists(r, "rl:repair"));
    assert_int_equal(fence_at(r, aux_key("rl:repair", "fence")), dlock_lock_fence(lock) + 1000);

    /* One where our own release ran (it raised `freed` to our fence; a
     * renewal's late extend on another connection comes after it) is not
     * repaired: no ghost key. */
    freeReplyObject(run(r, "DEL rl:repair"));
    freeReplyObject(run(r, "SET %s %" PRIu64, aux_key("rl:repair", "freed"),
                        dlock_lock_fence(lock)));
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    usleep(20 * 1000);
    assert_false(key_exists(r, "rl:repair"));

    /* A node that lost the key but holds garbage under the fence key is not
     * repaired: the garbage stays (named in the error), the others vote. */
    freeReplyObject(run(r, "DEL rl:repair %s", aux_key("rl:repair", "freed")));
    freeReplyObject(run(r, "SET %s 1e400", aux_key("rl:repair", "fence")));
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    assert_false(key_exists(r, "rl:repair"));
    assert_key_holds(r, aux_key("rl:repair", "fence"), "1e400");
    /* The release records our fence as released on every node, ours there
     * or not. */
    assert_int_equal(dlock_lock_release(lock), 0);
    usleep(20 * 1000);
    for (int i = 0; i < NODES; i++) {
        r = connect_to(&nodes[i]);
        assert_int_equal(fence_at(r, aux_key("rl:repair", "freed")), dlock_lock_fence(lock));
        assert_true(pttl_of(r, aux_key("rl:repair", "freed")) > 3600 * 1000LL);
    }
}

/* `freed` guards against a late extend of our own: a lock that sent none
 * (not renewed, not extended) records nothing at its release, and one
 * that sent one does, on every node. */
static void test_redlock_release_records_freed_only_after_an_extend(void **state)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    dlock_lock *lock = take(c, "rl:freed", 30000, NULL);
    (void)state;
    assert_int_equal(dlock_lock_release(lock), 0);
    cleanup_now(lock);
    usleep(20 * 1000);
    for (int i = 0; i < NODES; i++)
        assert_false(key_exists(connect_to(&nodes[i]), aux_key("rl:freed", "freed")));
    lock = take(c, "rl:freed", 30000, NULL);
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    usleep(20 * 1000);
    for (int i = 0; i < NODES; i++)
        assert_int_equal(fence_at(connect_to(&nodes[i]), aux_key("rl:freed", "freed")),
                         dlock_lock_fence(lock));
}

/* A release decided by the others still reaches a server whose connection
 * broke meanwhile (a restart does that; here CLIENT KILL), slower than the
 * rest (2 ms away): the client reconnects and waits, up to 20 ms, until
 * that server has the call, so that closing the client right after (the
 * process exits) loses nothing. */
static void test_redlock_release_reaches_a_server_it_reconnects_to(void **state)
{
    redisContext *r = connect_to(&nodes[0]);
    char url[64];
    const char *list[NODES] = {url};
    fault_proxy *far = start_proxy(nodes[0].port, url, sizeof(url));
    (void)state;
    for (int i = 1; i < NODES; i++)
        list[i] = nodes[i].url;
    for (int round = 0; round < 3; round++) {
        dlock_client *c = client_on_nodes(list, NODES, 0, 0);
        dlock_lock *lock;
        fault_proxy_set(far, FAULT_PASS, 0);
        lock = take(c, "rl:reconnect", 30000, NULL);
        wait_for_holders("rl:reconnect", dlock_lock_token(lock), NODES);
        fault_proxy_set(far, FAULT_DELAY, 2);
        freeReplyObject(run(r, "CLIENT KILL TYPE normal SKIPME yes"));
        usleep(20 * 1000); /* the proxy closed our side too: the release must reconnect */
        assert_int_equal(dlock_lock_release(lock), 0);
        cleanup_now(lock);
        cleanup_now(c); /* the process that released is gone */
        usleep(50 * 1000);
        if (key_exists(r, "rl:reconnect"))
            fail_msg("round %d: the released key stayed on the server reconnected to", round);
    }
}

struct loss {
    atomic_int calls, reason;
};

static void on_lost(dlock_lock *lock, int reason, void *arg)
{
    struct loss *l = arg;
    (void)lock;
    atomic_store(&l->reason, reason);
    atomic_fetch_add(&l->calls, 1);
}

static void test_redlock_three_node_holder_loses_on_a_restart(void **state)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    dlock_acquire_options opts = wait_options(5000); /* through a busy machine's late replies */
    struct loss *loss = cleanup_alloc(sizeof(*loss)); /* the renewal thread's */
    char token[DLOCK_TOKEN_LEN + 1];
    dlock_lock *lock;
    long long until;
    (void)state;
    test_redis_kill(&nodes[3]);
    test_redis_kill(&nodes[4]);
    opts.auto_renew = 1;
    opts.on_lost = on_lost;
    opts.on_lost_arg = loss;
    lock = take(c, "rl:three", 3000, &opts); /* held on nodes 0, 1, 2 */
    memcpy(token, dlock_lock_token(lock), sizeof(token));
    assert_int_equal(test_redis_restart(&nodes[3]), 0);
    assert_int_equal(test_redis_restart(&nodes[4]), 0);
    assert_int_equal(test_redis_restart(&nodes[0]), 0); /* one of the three, empty */
    until = test_now_ms() + 5000LL * test_slowdown();
    while (atomic_load(&loss->calls) == 0 && test_now_ms() < until)
        usleep(5000);
    assert_int_equal(atomic_load(&loss->calls), 1); /* two votes are no majority */
    assert_int_equal(atomic_load(&loss->reason), DLOCK_ENOTOWNER);
    assert_false(dlock_lock_held(lock));
    usleep(50 * 1000);
    assert_int_equal(nodes_holding("rl:three", token), 0); /* no ghost key, repaired ones too */
    assert_int_equal(dlock_lock_release(lock), DLOCK_ELOST);
}

/* How many of the first three nodes hold `key` at all. */
static int first_three_holding(const char *key)
{
    int held = 0;
    for (int i = 0; i < 3; i++) {
        redisContext *r = connect_to(&nodes[i]);
        held += key_exists(r, key);
        cleanup_now(r);
    }
    return held;
}

/* One try of a competitor that does not wait (acquire -n) on the first
 * three nodes, through a new client, so that it reaches a server that has
 * just restarted at once rather than after a reconnect back-off. Returns
 * 1 if it got the lock (then released). */
static int compete_once(const char *name, int64_t ttl_ms)
{
    dlock_client *c = client_on_servers(nodes, 3, 0, 0);
    dlock_lock *lock = NULL;
    int got = dlock_lock_acquire(&lock, c, name, ttl_ms, NULL) == 0;
    if (got)
        dlock_lock_release(lock);
    dlock_lock_free(lock);
    cleanup_now(c); /* each try is a new client */
    return got;
}

/* Competes every 200 ms until `until_ms`; returns how many tries got it. */
static int compete_until(const char *name, int64_t ttl_ms, long long until_ms)
{
    int got = 0;
    while (test_now_ms() < until_ms) {
        got += compete_once(name, ttl_ms);
        usleep(200 * 1000);
    }
    return got;
}

/* Three servers restart empty one at a time, a TTL apart, while another
 * client tries to take the lock: its try on a restarted server is granted
 * there (a fence above the holder's) and cleaned up. The holder's renewal
 * must still put its key back on that server, or the next restart leaves
 * it one server of three. */
static void test_redlock_holder_survives_restarts_one_at_a_time_with_a_competitor(void **state)
{
    const char *name = "rl:rolling";
    long long slow = test_slowdown(), ttl_ms = 1000 * slow, child_ms = 4000 * slow;
    char ttl[32], sleep_s[32];
    const char *args[16];
    long long started, until;
    int n = 0, got = 0;
    cli_proc *holder;
    (void)state;
    snprintf(ttl, sizeof(ttl), "%lldms", ttl_ms);
    snprintf(sleep_s, sizeof(sleep_s), "%lld", child_ms / 1000);
    for (int i = 0; i < 3; i++) {
        args[n++] = "-r";
        args[n++] = nodes[i].url;
    }
    args[n++] = "run";
    args[n++] = "-t";
    args[n++] = ttl;
    args[n++] = name;
    args[n++] = "--";
    args[n++] = "sleep";
    args[n++] = sleep_s;
    args[n] = NULL;
    holder = start_cli(NULL, args, NULL);
    started = test_now_ms();
    until = started + 10000 * slow;
    while (first_three_holding(name) < 3 && test_now_ms() < until)
        usleep(10 * 1000);
    assert_int_equal(first_three_holding(name), 3);

    assert_int_equal(test_redis_restart(&nodes[0]), 0); /* empty */
    got += compete_until(name, ttl_ms, test_now_ms() + ttl_ms);
    assert_int_equal(test_redis_restart(&nodes[1]), 0); /* empty, a TTL later */
    /* Until shortly before the child ends: the holder's validity lasts. */
    got += compete_until(name, ttl_ms, started + child_ms - 500);
    assert_int_equal(got, 0);
    assert_int_equal(cli_wait(holder, (int)(20000 * slow)), 0);
    assert_int_equal(first_three_holding(name), 0); /* released everywhere */
}

/* dlock_fence_check asks the majority: a holder's fence is current while a
 * majority holds the key and has that fence (the write-back's majority: two
 * servers outside it paused change nothing; a server that granted late may
 * keep a larger number of its own), not once only a minority holds it, nor
 * after another holder took the name. */
static void pause_two_without(dlock_client *c, const char *name, uint64_t fence, int paused[2])
{
    int k = 0;
    for (int i = NODES - 1; i >= 0 && k < 2; i--) { /* those without it first */
        status_view v;
        assert_int_equal(status_of_node(&v, c, name, (size_t)i), 0);
        if (v.fence != fence)
            paused[k++] = i;
    }
    for (int i = NODES - 1; i >= 0 && k < 2; i--)
        if (k == 0 || paused[0] != i)
            paused[k++] = i;
    test_redis_pause(&nodes[paused[0]]);
    test_redis_pause(&nodes[paused[1]]);
}

static void test_redlock_fence_check_by_the_majority(void **state)
{
    int paused[2];
    dlock_client *c = client_on_all_nodes(200, 2000);
    dlock_lock *lock = take(c, "redlock:check", 30000, NULL);
    uint64_t fence = dlock_lock_fence(lock);
    (void)state;
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence), 1);
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence - 1), 0);
    pause_two_without(c, "redlock:check", fence, paused);
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence), 1);
    test_redis_resume(&nodes[paused[0]]);
    test_redis_resume(&nodes[paused[1]]);
    on_nodes(0, 3, "DEL %s", "redlock:check"); /* the key expired on three: a minority holds it */
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence), 0);
    cleanup_now(lock);
    lock = take(c, "redlock:check", 30000, NULL);
    assert_true(dlock_lock_fence(lock) > fence);
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence), 0);
    assert_int_equal(dlock_fence_check(c, "redlock:check", dlock_lock_fence(lock)), 1);
    assert_int_equal(dlock_lock_release(lock), 0);
}

/* Node i's fence key, read straight from the server (0: none yet). */
static uint64_t node_fence(int i, const char *name)
{
    char key[128];
    redisContext *r = connect_to(&nodes[i]);
    snprintf(key, sizeof(key), "{%s}:dlock:fence:%s", name, name);
    const char *stored = string_at(r, key);
    return stored ? strtoull(stored, NULL, 10) : 0;
}

/* Nodes 3 and 4 grant after the decision (their traffic is late), so their
 * own, newer numbers stay; then nodes 0 and 1 are slow, and the status's
 * first answers are nodes 2, 3 and 4: one at the holder's fence, two
 * above. The check asks the others too before it says no: the holder's
 * fence is the newest on nodes 0, 1 and 2. */
static void test_redlock_fence_check_past_late_granters(void **state)
{
    fault_proxy *proxy[NODES];
    char urls[NODES][64];
    const char *list[NODES];
    dlock_client *c;
    dlock_lock *lock;
    uint64_t fence;
    long long until;
    (void)state;
    for (int i = 0; i < NODES; i++) {
        proxy[i] = start_proxy(nodes[i].port, urls[i], sizeof(urls[i]));
        list[i] = urls[i];
    }
    c = client_on_nodes(list, NODES, 2000, 3000);
    fault_proxy_set(proxy[3], FAULT_DELAY, 100);
    fault_proxy_set(proxy[4], FAULT_DELAY, 100);
    lock = take(c, "redlock:late", 30000, NULL);
    fence = dlock_lock_fence(lock);
    until = test_now_ms() + 5000LL * test_slowdown();
    while ((node_fence(3, "redlock:late") <= fence || node_fence(4, "redlock:late") <= fence) &&
           test_now_ms() < until)
        usleep(10 * 1000);
    assert_true(node_fence(3, "redlock:late") > fence && node_fence(4, "redlock:late") > fence);
    fault_proxy_set(proxy[3], FAULT_PASS, 0);
    fault_proxy_set(proxy[4], FAULT_PASS, 0);
    fault_proxy_set(proxy[0], FAULT_DELAY, 150);
    fault_proxy_set(proxy[1], FAULT_DELAY, 150);
    assert_int_equal(dlock_fence_check(c, "redlock:late", fence), 1);
    assert_int_equal(dlock_fence_check(c, "redlock:late", fence - 1), 0);
    fault_proxy_set(proxy[0], FAULT_PASS, 0);
    fault_proxy_set(proxy[1], FAULT_PASS, 0);
    assert_int_equal(dlock_lock_release(lock), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_nodes, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_redlock_fences_increase_across_restarts),
        T(test_redlock_extend_repairs_a_restarted_node),
        T(test_redlock_release_records_freed_only_after_an_extend),
        T(test_redlock_release_reaches_a_server_it_reconnects_to),
        T(test_redlock_three_node_holder_loses_on_a_restart),
        T(test_redlock_holder_survives_restarts_one_at_a_time_with_a_competitor),
        T(test_redlock_fence_check_by_the_majority),
        T(test_redlock_fence_check_past_late_granters),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_nodes, group_teardown_nodes);
}
