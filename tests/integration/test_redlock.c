/* Redlock over 5 real redis-server processes: majority, node failures and
 * pauses, cleanup, contention, fencing across restarts, repair and loss. */
#include "cli_runner.h"
#include "helpers.h"

#include <dlock.h>

#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define NODES 5
#define FAR_FUTURE 4503599627370496ULL /* 2^52 */

static test_redis servers[NODES];

static int group_setup(void **state)
{
    (void)state;
    return test_redis_start_all(servers, NODES);
}

static int group_teardown(void **state)
{
    (void)state;
    test_redis_stop_all(servers, NODES);
    return 0;
}

/* Every test starts with all five up, running and empty. */
static int setup(void **state)
{
    (void)state;
    for (int i = 0; i < NODES; i++) {
        redisContext *r;
        if (servers[i].pid <= 0 && test_redis_restart(&servers[i]) < 0)
            return -1;
        test_redis_resume(&servers[i]);
        r = test_redis_connect(&servers[i], NULL);
        if (!r)
            return -1;
        freeReplyObject(redisCommand(r, "FLUSHALL"));
        redisFree(r);
    }
    return 0;
}

static dlock_client *open_redlock(int node_timeout_ms, int command_timeout_ms)
{
    const char *urls[NODES];
    for (int i = 0; i < NODES; i++)
        urls[i] = servers[i].url;
    return open_nodes(urls, NODES, node_timeout_ms, command_timeout_ms);
}

/* How many live nodes hold `value` at `key` (value NULL: hold the key at all). */
static int nodes_holding(const char *key, const char *value)
{
    int n = 0;
    for (int i = 0; i < NODES; i++) {
        redisContext *r;
        char *v;
        if (servers[i].pid <= 0)
            continue;
        r = test_redis_connect(&servers[i], NULL);
        v = get_string(r, key);
        n += v && (!value || strcmp(v, value) == 0);
        free(v);
        redisFree(r);
    }
    return n;
}

static void test_redlock_holds_on_every_node(void **state)
{
    dlock_client *c = open_redlock(0, 0);
    dlock_lock *lock = must_acquire(c, "rl:all", 30000, NULL);
    status_view st;
    (void)state;
    usleep(20 * 1000); /* the nodes not waited for got the command too */
    assert_int_equal(nodes_holding("rl:all", dlock_lock_token(lock)), NODES);
    assert_true(dlock_lock_validity_ms(lock) > 25000);
    assert_int_equal(status_of(&st, c, "rl:all"), 0);
    assert_true(st.held);
    /* Decided as soon as a majority said so. */
    assert_true(st.nodes_held >= NODES / 2 + 1 && st.nodes_held <= NODES);
    /* The token is the largest of the quorum's; a node outside it may have
     * computed a larger one, which only pushes later tokens higher. */
    assert_true(st.fence >= dlock_lock_fence(lock));
    assert_int_equal(dlock_lock_release(lock), 0);
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:all", NULL), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);
}

static void test_redlock_survives_two_dead_nodes_not_three(void **state)
{
    dlock_client *c = open_redlock(0, 0);
    dlock_lock *lock;
    long long start;
    (void)state;
    test_redis_kill(&servers[0]);
    test_redis_kill(&servers[1]);
    lock = must_acquire(c, "rl:dead", 30000, NULL);
    assert_int_equal(nodes_holding("rl:dead", dlock_lock_token(lock)), 3);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);

    test_redis_kill(&servers[2]);
    lock = NULL;
    start = test_now_ms();
    assert_int_equal(dlock_lock_acquire(&lock, c, "rl:dead", 30000, NULL), DLOCK_ENOQUORUM);
    assert_true(test_now_ms() - start < 3000LL * test_slowdown()); /* nowhere near the TTL */
    assert_non_null(strstr(dlock_client_errmsg(c), servers[0].url + strlen("redis://")));
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:dead", NULL), 0); /* cleaned up on the live two */
    dlock_client_close(c);
}

static void test_redlock_decides_without_paused_nodes(void **state)
{
    dlock_client *c = open_redlock(500, 2000);
    dlock_client *fresh;
    dlock_lock *lock;
    long long start, took;
    (void)state;
    lock = must_acquire(c, "rl:warm", 30000, NULL); /* connections made, scripts loaded */
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    test_redis_pause(&servers[3]);
    test_redis_pause(&servers[4]);
    start = test_now_ms();
    lock = must_acquire(c, "rl:paused", 30000, NULL);
    took = test_now_ms() - start;
    assert_true(took < 500); /* three granted: no waiting for the paused two */
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);

    /* New connections to the paused nodes do not cost the connect timeout. */
    fresh = open_redlock(500, 2000);
    start = test_now_ms();
    lock = must_acquire(fresh, "rl:paused2", 30000, NULL);
    took = test_now_ms() - start;
    assert_true(took < 500);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    test_redis_resume(&servers[3]);
    test_redis_resume(&servers[4]);
    dlock_client_close(fresh);
    dlock_client_close(c);
}

/* Three servers, one unreachable (its refusal arrives first), the lock held
 * by another client on the other two: busy, every time, never "no quorum". */
static void test_redlock_busy_not_no_quorum_with_a_node_down(void **state)
{
    const char *urls[3] = {servers[0].url, servers[1].url, servers[2].url};
    dlock_client *holder, *other;
    dlock_lock *held, *lock = NULL;
    (void)state;
    test_redis_kill(&servers[2]);
    holder = open_nodes(urls, 3, 0, 0);
    other = open_nodes(urls, 3, 0, 0);
    held = must_acquire(holder, "rl:busy-down", 30000, NULL);
    for (int i = 0; i < 30; i++) {
        int rc = dlock_lock_acquire(&lock, other, "rl:busy-down", 30000, NULL);
        if (rc != DLOCK_EBUSY)
            fail_msg("try %d: %s: %s", i, dlock_err_name(rc), dlock_client_errmsg(other));
    }
    /* A waiter (as `dlock run -w 1`, which ends a wait at an I/O error)
     * waits its whole second: a majority is reachable. */
    {
        dlock_acquire_options wait = DLOCK_ACQUIRE_OPTIONS_INIT;
        long long start = test_now_ms();
        int rc;
        wait.wait_ms = 1000;
        wait.no_io_retry = 1;
        rc = dlock_lock_acquire(&lock, other, "rl:busy-down", 30000, &wait);
        if (rc != DLOCK_EBUSY)
            fail_msg("waiter: %s: %s", dlock_err_name(rc), dlock_client_errmsg(other));
        assert_true(test_now_ms() - start >= 1000);
    }
    assert_int_equal(dlock_lock_release(held), 0);
    dlock_lock_free(held);
    dlock_client_close(holder);
    dlock_client_close(other);
}

/* One server is one vote, however it is spelt: refused at open by address
 * and database, at connect by run_id (a Unix socket and a TCP port of one
 * server resolve to nothing in common). */
static void test_redlock_one_server_is_one_vote(void **state)
{
    static const char *const spellings[][3] = {
        {"redis://127.0.0.1:", "redis://localhost:", "redis://127.1:"},
        {"redis://127.0.0.1:", "redis://127.0.0.1:", "redis://127.0.0.1:"},
    };
    static const char *const dbs[][3] = {{"", "", ""}, {"/0", "/1", "/2"}};
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    dlock_lock *lock = NULL;
    char urls[3][96], why[256];
    const char *list[3] = {urls[0], urls[1], urls[2]};
    (void)state;
    opts.urls = list;
    opts.n_urls = 3;
    for (size_t k = 0; k < 2; k++) {
        for (int i = 0; i < 3; i++)
            snprintf(urls[i], sizeof(urls[i]), "%s%d%s", spellings[k][i], servers[0].port,
                     dbs[k][i]);
        assert_int_equal(dlock_client_open(&c, &opts, why, sizeof(why)), DLOCK_EINVAL);
        assert_non_null(strstr(why, "one server"));
    }
    assert_non_null(strstr(why, "/0 and ")); /* the databases are named: /0 and /1 */
    list[0] = servers[0].unix_url;
    list[1] = servers[0].url;
    list[2] = servers[1].url;
    assert_int_equal(dlock_client_open(&c, &opts, why, sizeof(why)), 0);
    assert_int_equal(dlock_lock_acquire(&lock, c, "rl:one-vote", 30000, NULL), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_client_errmsg(c), "run_id"));
    assert_int_equal(nodes_holding("rl:one-vote", NULL), 0);
    dlock_client_close(c);
    /* A busy verdict from one server counted twice is refused too, and a
     * waiter does not wait for it. */
    {
        dlock_client *holder_client = open_redlock(0, 0);
        dlock_lock *held = must_acquire(holder_client, "rl:one-vote-busy", 30000, NULL);
        dlock_acquire_options wait = DLOCK_ACQUIRE_OPTIONS_INIT;
        long long start;
        assert_int_equal(dlock_client_open(&c, &opts, why, sizeof(why)), 0);
        assert_int_equal(dlock_lock_acquire(&lock, c, "rl:one-vote-busy", 30000, NULL),
                         DLOCK_EINVAL);
        assert_non_null(strstr(dlock_client_errmsg(c), "run_id"));
        wait.wait_ms = 20000;
        start = test_now_ms();
        assert_int_equal(dlock_lock_acquire(&lock, c, "rl:one-vote-busy", 30000, &wait),
                         DLOCK_EINVAL);
        assert_true(test_now_ms() - start < 5000LL * test_slowdown());
        dlock_client_close(c);
        assert_int_equal(dlock_lock_release(held), 0);
        dlock_lock_free(held);
        dlock_client_close(holder_client);
    }
}

/* Status over servers where the key has no TTL on one and a TTL on the
 * others: the shortest TTL, whatever the order of the answers. */
static void test_redlock_status_ttl_of_mixed_keys(void **state)
{
    dlock_client *c = open_redlock(0, 0);
    status_view st;
    (void)state;
    for (int i = 0; i < NODES; i++) {
        redisContext *r = test_redis_connect(&servers[i], NULL);
        freeReplyObject(i == 0 ? run(r, "SET rl:ttlmix foreign") : run(r, "SET rl:ttlmix foreign PX 60000"));
        redisFree(r);
    }
    assert_int_equal(status_of(&st, c, "rl:ttlmix"), 0);
    assert_true(st.held);
    assert_true(st.pttl_ms > 0 && st.pttl_ms <= 60000);
    dlock_client_close(c);
}

static void test_redlock_partial_attempt_is_cleaned_up(void **state)
{
    dlock_client *c = open_redlock(0, 0);
    dlock_lock *lock = NULL;
    (void)state;
    /* Another client holds the lock on three nodes. */
    for (int i = 0; i < 3; i++) {
        redisContext *r = test_redis_connect(&servers[i], NULL);
        freeReplyObject(run(r, "SET rl:partial theirs NX PX 30000"));
        redisFree(r);
    }
    assert_int_equal(dlock_lock_acquire(&lock, c, "rl:partial", 30000, NULL), DLOCK_EBUSY);
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:partial", "theirs"), 3);
    assert_int_equal(nodes_holding("rl:partial", NULL), 3); /* nothing of ours on the other two */
    dlock_client_close(c);
}

/* Every way another owner can occupy nodes: granted iff at least three of
 * the five are free; theirs untouched either way; ours everywhere free on
 * success, nowhere on failure. */
static void test_redlock_all_occupied_masks(void **state)
{
    dlock_client *c = open_redlock(0, 0);
    char name[32];
    (void)state;
    for (unsigned mask = 0; mask < (1u << NODES); mask++) {
        dlock_lock *lock = NULL;
        int occupied = 0, rc;
        snprintf(name, sizeof(name), "rl:mask:%u", mask);
        for (int i = 0; i < NODES; i++) {
            redisContext *r;
            if (!(mask & (1u << i)))
                continue;
            r = test_redis_connect(&servers[i], NULL);
            freeReplyObject(run(r, "SET %s theirs PX 30000", name));
            redisFree(r);
            occupied++;
        }
        rc = dlock_lock_acquire(&lock, c, name, 30000, NULL);
        if (NODES - occupied >= 3) {
            if (rc != 0)
                fail_msg("mask %#x: %s", mask, dlock_client_errmsg(c));
            assert_int_equal(nodes_holding(name, dlock_lock_token(lock)), NODES - occupied);
            assert_int_equal(dlock_lock_release(lock), 0);
            dlock_lock_free(lock);
        } else {
            if (rc != DLOCK_EBUSY)
                fail_msg("mask %#x: %s, not busy", mask, dlock_strerror(rc));
            usleep(10 * 1000); /* the cleanup reaches every node */
        }
        assert_int_equal(nodes_holding(name, "theirs"), occupied);
        assert_int_equal(nodes_holding(name, NULL), occupied);
    }
    dlock_client_close(c);
}

/* A waiter's validity is counted from the attempt that succeeded, not from
 * its first attempt a second earlier. */
static void test_redlock_validity_from_the_successful_attempt(void **state)
{
    dlock_client *holder = open_redlock(0, 0), *waiter = open_redlock(0, 0);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *first = must_acquire(holder, "rl:validity", 2000, NULL), *second;
    long long started;
    (void)state;
    opts.wait_ms = 5000;
    started = test_now_ms();
    /* The holder goes away without releasing: the waiter tries for 2 s. */
    dlock_lock_free(first);
    second = must_acquire(waiter, "rl:validity", 2000, &opts);
    assert_true(test_now_ms() - started >= 1500);
    assert_true(dlock_lock_validity_ms(second) > 2000 - 300);
    assert_int_equal(dlock_lock_release(second), 0);
    dlock_lock_free(second);
    dlock_client_close(holder);
    dlock_client_close(waiter);
}

/* After expiry, neither extend nor release touches the next owner's lock. */
static void test_redlock_extend_and_release_after_expiry_refused(void **state)
{
    dlock_client *a = open_redlock(0, 0), *b = open_redlock(0, 0);
    dlock_lock *old = must_acquire(a, "rl:expired", 200, NULL), *next;
    (void)state;
    usleep(300 * 1000);
    next = must_acquire(b, "rl:expired", 30000, NULL);
    assert_int_equal(dlock_lock_extend(old, 30000), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock_release(old), DLOCK_ENOTOWNER);
    assert_int_equal(nodes_holding("rl:expired", dlock_lock_token(next)), NODES);
    assert_int_equal(dlock_lock_release(next), 0);
    dlock_lock_free(old);
    dlock_lock_free(next);
    dlock_client_close(a);
    dlock_client_close(b);
}

/* Releases at random moments of a fast renewal cycle: after each one, no
 * renewal (or repair) puts the key back. */
static void test_redlock_release_while_renewing(void **state)
{
    int ttl_ms = 60 * test_slowdown(); /* renewals every 20 ms, unless slowed down */
    dlock_client *c = open_redlock(ttl_ms / 3, 0);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    unsigned rng = 5; /* the same pauses in every run */
    (void)state;
    opts.auto_renew = 1;
    opts.wait_ms = 5000; /* through a busy machine's late replies */
    for (int i = 0; i < 400; i++) {
        dlock_lock *lock = must_acquire(c, "rl:renewing", ttl_ms, &opts);
        int rc;
        usleep((useconds_t)(rand_r(&rng) % (2 * ttl_ms / 3)) * 1000);
        rc = dlock_lock_release(lock);
        /* Lost in a renewal that came too late is fine; a key back is not.
         * A release that a loaded machine kept past the per-node deadline
         * may not have reached a majority: then the keys must be gone
         * once the TTL ran out, the renewal having stopped with it. */
        if (rc == DLOCK_ENOQUORUM)
            usleep((useconds_t)ttl_ms * 2 * 1000);
        else if (rc != 0 && rc != DLOCK_ELOST)
            fail_msg("iteration %d: release: %s", i, dlock_strerror(rc));
        dlock_lock_free(lock);
        if (nodes_holding("rl:renewing", NULL) != 0)
            fail_msg("iteration %d: a key is back after the release", i);
    }
    usleep(100 * 1000);
    assert_int_equal(nodes_holding("rl:renewing", NULL), 0);
    dlock_client_close(c);
}

/* CLIENT PAUSE holds the acquire past its deadline; the SET lands later,
 * but so does the cleanup behind it: the retry and another client never
 * both hold the lock. */
static void test_redlock_timed_out_acquire_then_retry(void **state)
{
    dlock_client *a = open_redlock(50, 300), *b = open_redlock(0, 0);
    dlock_lock *lock = NULL, *theirs;
    redisContext *r[NODES];
    (void)state;
    lock = must_acquire(a, "rl:warm", 1000, NULL); /* the connections are made */
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    lock = NULL;
    for (int i = 0; i < NODES; i++) {
        r[i] = test_redis_connect(&servers[i], NULL);
        freeReplyObject(run(r[i], "CLIENT PAUSE 400 WRITE"));
    }
    assert_int_equal(dlock_lock_acquire(&lock, a, "rl:paused-write", 30000, NULL),
                     DLOCK_ENOQUORUM);
    usleep(600 * 1000); /* the pause is over: the late SETs and the cleanup ran */
    assert_int_equal(nodes_holding("rl:paused-write", NULL), 0);
    theirs = must_acquire(b, "rl:paused-write", 30000, NULL);
    assert_int_equal(dlock_lock_acquire(&lock, a, "rl:paused-write", 30000, NULL), DLOCK_EBUSY);
    assert_int_equal(nodes_holding("rl:paused-write", dlock_lock_token(theirs)), NODES);
    assert_int_equal(dlock_lock_release(theirs), 0);
    dlock_lock_free(theirs);
    for (int i = 0; i < NODES; i++)
        redisFree(r[i]);
    dlock_client_close(a);
    dlock_client_close(b);
}

struct contender {
    const char *path;
    int grants, failures;
};

static void *contend(void *arg)
{
    struct contender *k = arg;
    dlock_client *c = open_redlock(0, 0);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    opts.wait_ms = 60000;
    for (int i = 0; i < 10; i++) {
        dlock_lock *lock = NULL;
        if (dlock_lock_acquire(&lock, c, "rl:counter", 30000, &opts) != 0) {
            k->failures++;
            continue;
        }
        bump_number_file(k->path);
        k->grants++;
        k->failures += dlock_lock_release(lock) != 0;
        dlock_lock_free(lock);
    }
    dlock_client_close(c);
    return NULL;
}

static void test_redlock_contention_is_exclusive(void **state)
{
    enum { THREADS = 4 };
    struct contender k[THREADS];
    pthread_t t[THREADS];
    char path[160];
    FILE *f;
    long v = -1;
    (void)state;
    snprintf(path, sizeof(path), "%s/rl-counter", servers[0].dir);
    f = fopen(path, "w");
    fputs("0\n", f);
    fclose(f);
    for (int i = 0; i < THREADS; i++) {
        k[i] = (struct contender){path, 0, 0};
        pthread_create(&t[i], NULL, contend, &k[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(k[i].failures, 0);
        assert_int_equal(k[i].grants, 10);
    }
    v = read_number_file(path);
    unlink(path);
    assert_int_equal(v, THREADS * 10);
}

static void preset_fence(int node, const char *key, unsigned long long value)
{
    redisContext *r = test_redis_connect(&servers[node], NULL);
    freeReplyObject(run(r, "SET %s %llu", key, value));
    redisFree(r);
}

/* Acquire and release `rounds` times; between rounds, sometimes restart a
 * random minority of nodes empty. The tokens must strictly increase. */
static void fences_across_restarts(const char *name, int rounds, unsigned seed)
{
    dlock_client *c = open_redlock(0, 0);
    uint64_t last = 0;
    unsigned rng = seed;
    for (int i = 0; i < rounds; i++) {
        dlock_lock *lock = must_acquire(c, name, 30000, NULL);
        uint64_t fence = dlock_lock_fence(lock);
        if (fence <= last)
            fail_msg("round %d (seed %u): fence %" PRIu64 " after %" PRIu64, i, seed, fence, last);
        last = fence;
        assert_int_equal(dlock_lock_release(lock), 0);
        dlock_lock_free(lock);
        if (rand_r(&rng) % 4 == 0) {
            int victims = 1 + (int)(rand_r(&rng) % 2), first = (int)(rand_r(&rng) % NODES);
            for (int v = 0; v < victims; v++)
                assert_int_equal(test_redis_restart(&servers[(first + v) % NODES]), 0);
        }
    }
    dlock_client_close(c);
}

static void test_redlock_fences_increase_across_restarts(void **state)
{
    (void)state;
    /* The time floor decides. */
    fences_across_restarts("rl:fence-time", 250, 7);
    /* The counter decides: two nodes start far in the future. */
    preset_fence(0, aux_key("rl:fence-counter", "fence"), FAR_FUTURE);
    preset_fence(1, aux_key("rl:fence-counter", "fence"), FAR_FUTURE);
    fences_across_restarts("rl:fence-counter", 250, 11);
}

static void test_redlock_extend_repairs_a_restarted_node(void **state)
{
    dlock_client *c = open_redlock(0, 0);
    dlock_lock *lock = must_acquire(c, "rl:repair", 30000, NULL);
    redisContext *r;
    char *stored;
    (void)state;
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:repair", dlock_lock_token(lock)), NODES);
    assert_int_equal(test_redis_restart(&servers[2]), 0); /* comes back empty */
    assert_int_equal(nodes_holding("rl:repair", dlock_lock_token(lock)), NODES - 1);
    assert_int_equal(dlock_lock_extend(lock, 30000), 0); /* four votes */
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:repair", dlock_lock_token(lock)), NODES);
    r = test_redis_connect(&servers[2], NULL);
    stored = get_string(r, aux_key("rl:repair", "fence"));
    assert_non_null(stored);
    assert_true(strtoull(stored, NULL, 10) >= dlock_lock_fence(lock));
    free(stored);

    /* A node that lost the key where another client was granted since (a
     * failed attempt of its, cleaned up: the fence above ours) gets it
     * back, and keeps the larger fence. */
    freeReplyObject(run(r, "DEL rl:repair"));
    freeReplyObject(run(r, "SET %s %" PRIu64, aux_key("rl:repair", "fence"),
                        dlock_lock_fence(lock) + 1000));
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    usleep(20 * 1000);
    assert_true(key_exists(r, "rl:repair"));
    stored = get_string(r, aux_key("rl:repair", "fence"));
    assert_int_equal(strtoull(stored, NULL, 10), dlock_lock_fence(lock) + 1000);
    free(stored);

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
    stored = get_string(r, aux_key("rl:repair", "fence"));
    assert_string_equal(stored, "1e400");
    free(stored);
    redisFree(r);
    /* The release records our fence as released on every node, ours there
     * or not. */
    assert_int_equal(dlock_lock_release(lock), 0);
    usleep(20 * 1000);
    for (int i = 0; i < NODES; i++) {
        r = test_redis_connect(&servers[i], NULL);
        stored = get_string(r, aux_key("rl:repair", "freed"));
        assert_non_null(stored);
        assert_int_equal(strtoull(stored, NULL, 10), dlock_lock_fence(lock));
        assert_true(pttl_of(r, aux_key("rl:repair", "freed")) > 3600 * 1000LL);
        free(stored);
        redisFree(r);
    }
    dlock_lock_free(lock);
    dlock_client_close(c);
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
    dlock_client *c = open_redlock(0, 0);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    struct loss loss = {0};
    char token[DLOCK_TOKEN_LEN + 1];
    dlock_lock *lock;
    long long until;
    (void)state;
    test_redis_kill(&servers[3]);
    test_redis_kill(&servers[4]);
    opts.auto_renew = 1;
    opts.on_lost = on_lost;
    opts.on_lost_arg = &loss;
    opts.wait_ms = 5000; /* through a busy machine's late replies */
    lock = must_acquire(c, "rl:three", 3000, &opts); /* held on nodes 0, 1, 2 */
    memcpy(token, dlock_lock_token(lock), sizeof(token));
    assert_int_equal(test_redis_restart(&servers[3]), 0);
    assert_int_equal(test_redis_restart(&servers[4]), 0);
    assert_int_equal(test_redis_restart(&servers[0]), 0); /* one of the three, empty */
    until = test_now_ms() + 5000LL * test_slowdown();
    while (atomic_load(&loss.calls) == 0 && test_now_ms() < until)
        usleep(5000);
    assert_int_equal(atomic_load(&loss.calls), 1); /* two votes are no majority */
    assert_int_equal(atomic_load(&loss.reason), DLOCK_ENOTOWNER);
    assert_false(dlock_lock_held(lock));
    usleep(50 * 1000);
    assert_int_equal(nodes_holding("rl:three", token), 0); /* no ghost key, repaired ones too */
    assert_int_equal(dlock_lock_release(lock), DLOCK_ELOST);
    dlock_lock_free(lock);
    dlock_client_close(c);
}

/* How many of the first `n` nodes hold `key` at all. */
static int first_nodes_holding(int n, const char *key)
{
    int held = 0;
    for (int i = 0; i < n; i++) {
        redisContext *r = test_redis_connect(&servers[i], NULL);
        held += r && key_exists(r, key);
        redisFree(r);
    }
    return held;
}

/* One try of a competitor that does not wait (acquire -n), through a new
 * client, so that it reaches a server that has just restarted at once
 * rather than after a reconnect back-off. Returns 1 if it got the lock
 * (then released). */
static int compete_once(const char *const *urls, size_t n, const char *name, int64_t ttl_ms)
{
    dlock_client *c = open_nodes(urls, n, 0, 0);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock = NULL;
    int got;
    opts.wait_ms = 0;
    got = dlock_lock_acquire(&lock, c, name, ttl_ms, &opts) == 0;
    if (got)
        dlock_lock_release(lock);
    dlock_lock_free(lock);
    dlock_client_close(c);
    return got;
}

/* Competes every 200 ms until `until_ms`; returns how many tries got it. */
static int compete_until(const char *const *urls, size_t n, const char *name, int64_t ttl_ms,
                         long long until_ms)
{
    int got = 0;
    while (test_now_ms() < until_ms) {
        got += compete_once(urls, n, name, ttl_ms);
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
    const char *urls[3] = {servers[0].url, servers[1].url, servers[2].url};
    long long slow = test_slowdown(), ttl_ms = 1000 * slow, child_ms = 4000 * slow;
    char ttl[32], sleep_s[32];
    const char *args[16];
    long long started, until;
    int n = 0, got = 0;
    cli_proc holder;
    (void)state;
    snprintf(ttl, sizeof(ttl), "%lldms", ttl_ms);
    snprintf(sleep_s, sizeof(sleep_s), "%lld", child_ms / 1000);
    for (int i = 0; i < 3; i++) {
        args[n++] = "-r";
        args[n++] = urls[i];
    }
    args[n++] = "run";
    args[n++] = "-t";
    args[n++] = ttl;
    args[n++] = name;
    args[n++] = "--";
    args[n++] = "sleep";
    args[n++] = sleep_s;
    args[n] = NULL;
    assert_int_equal(cli_start(&holder, NULL, args, NULL), 0);
    started = test_now_ms();
    until = started + 10000 * slow;
    while (first_nodes_holding(3, name) < 3 && test_now_ms() < until)
        usleep(10 * 1000);
    assert_int_equal(first_nodes_holding(3, name), 3);

    assert_int_equal(test_redis_restart(&servers[0]), 0); /* empty */
    got += compete_until(urls, 3, name, ttl_ms, test_now_ms() + ttl_ms);
    assert_int_equal(test_redis_restart(&servers[1]), 0); /* empty, a TTL later */
    /* Until shortly before the child ends: the holder's validity lasts. */
    got += compete_until(urls, 3, name, ttl_ms, started + child_ms - 500);
    assert_int_equal(got, 0);
    assert_int_equal(cli_wait(&holder, (int)(20000 * slow)), 0);
    assert_int_equal(first_nodes_holding(3, name), 0); /* released everywhere */
}

struct waiter {
    dlock_client *c;
    int rc;
    unsigned attempts;
    long long got_at;
};

static void *wait_for(void *arg)
{
    struct waiter *w = arg;
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock = NULL;
    opts.wait_ms = 20000;
    opts.backoff_max_ms = 10000;
    w->rc = dlock_lock_acquire(&lock, w->c, "rl:wake", 30000, &opts);
    w->got_at = test_now_ms();
    if (w->rc == 0) {
        w->attempts = dlock_lock_attempts(lock);
        dlock_lock_release(lock);
    }
    dlock_lock_free(lock);
    return NULL;
}

static void test_redlock_waiter_wakes_on_release(void **state)
{
    dlock_client *holder = open_redlock(0, 0);
    dlock_lock *lock = must_acquire(holder, "rl:wake", 30000, NULL);
    struct waiter w = {.c = open_redlock(0, 0)};
    long long released_at;
    pthread_t t;
    (void)state;
    pthread_create(&t, NULL, wait_for, &w);
    usleep(300 * 1000);
    released_at = test_now_ms();
    assert_int_equal(dlock_lock_release(lock), 0); /* five PUBLISHes, one wake-up */
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.attempts, 3); /* try, listen, try again; the wake-up's try */
    assert_true(w.got_at - released_at < 2000LL * test_slowdown());
    dlock_lock_free(lock);
    dlock_client_close(w.c);
    dlock_client_close(holder);
}

static void test_redlock_from_the_command(void **state)
{
    const char *args[2 * NODES + 8];
    cli_proc p;
    int n = 0;
    (void)state;
    for (int i = 0; i < NODES; i++) {
        args[n++] = "-r";
        args[n++] = servers[i].url;
    }
    args[n++] = "run";
    args[n++] = "rl:cli";
    args[n++] = "--";
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = "echo $DLOCK_FENCE";
    args[n] = NULL;
    assert_int_equal(cli_run(&p, NULL, args, 10000), 0);
    assert_true(strtoull(p.out, NULL, 10) > 0);
    args[2 * (size_t)NODES] = "acquire";
    args[2 * NODES + 2] = NULL;
    assert_int_equal(cli_run(&p, NULL, args, 10000), 0);
    args[2 * (size_t)NODES] = "status";
    args[2 * NODES + 1] = "--json";
    args[2 * NODES + 2] = "rl:cli";
    args[2 * NODES + 3] = NULL;
    assert_int_equal(cli_run(&p, NULL, args, 10000), 0);
    assert_non_null(strstr(p.out, "\"nodes\":[{\"server\":"));
    assert_non_null(strstr(p.out, servers[4].url + strlen("redis://")));
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
    test_redis_pause(&servers[paused[0]]);
    test_redis_pause(&servers[paused[1]]);
}

static void test_redlock_fence_check_by_the_majority(void **state)
{
    int paused[2];
    dlock_client *c = open_redlock(200, 2000);
    dlock_lock *lock = must_acquire(c, "redlock:check", 30000, NULL);
    uint64_t fence = dlock_lock_fence(lock);
    (void)state;
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence), 1);
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence - 1), 0);
    pause_two_without(c, "redlock:check", fence, paused);
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence), 1);
    test_redis_resume(&servers[paused[0]]);
    test_redis_resume(&servers[paused[1]]);
    for (int i = 0; i < 3; i++) { /* the key expired on three: a minority holds it */
        redisContext *r = test_redis_connect(&servers[i], NULL);
        freeReplyObject(run(r, "DEL redlock:check"));
        redisFree(r);
    }
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence), 0);
    dlock_lock_free(lock);
    lock = must_acquire(c, "redlock:check", 30000, NULL);
    assert_true(dlock_lock_fence(lock) > fence);
    assert_int_equal(dlock_fence_check(c, "redlock:check", fence), 0);
    assert_int_equal(dlock_fence_check(c, "redlock:check", dlock_lock_fence(lock)), 1);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);
}

/* dlock_guard_load_redis loads the guard into every server: each answers
 * FCALL dlock_fenced_set, and refuses an older token. A server that does
 * not answer is the call's failure, named. */
static void test_redlock_guard_loads_on_every_server(void **state)
{
    dlock_client *c = open_redlock(200, 500);
    (void)state;
    assert_int_equal(dlock_guard_load_redis(c), 0);
    for (int i = 0; i < NODES; i++) {
        redisContext *r = test_redis_connect(&servers[i], NULL);
        redisReply *ok = run(r, "FCALL dlock_fenced_set 2 guard:data guard:fence v 34");
        redisReply *stale = run(r, "FCALL dlock_fenced_set 2 guard:data guard:fence v 33");
        assert_int_equal(ok->type, REDIS_REPLY_STATUS);
        assert_int_equal(stale->type, REDIS_REPLY_ERROR);
        assert_non_null(strstr(stale->str, "STALE fence 33 is older than 34"));
        freeReplyObject(ok);
        freeReplyObject(stale);
        redisFree(r);
    }
    test_redis_pause(&servers[3]);
    assert_int_equal(dlock_guard_load_redis(c), DLOCK_ETIMEDOUT);
    assert_non_null(strstr(dlock_client_errmsg(c), servers[3].url + strlen("redis://")));
    test_redis_resume(&servers[3]);
    dlock_client_close(c);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, NULL)
    const struct CMUnitTest tests[] = {
        T(test_redlock_holds_on_every_node),
        T(test_redlock_survives_two_dead_nodes_not_three),
        T(test_redlock_decides_without_paused_nodes),
        T(test_redlock_busy_not_no_quorum_with_a_node_down),
        T(test_redlock_one_server_is_one_vote),
        T(test_redlock_status_ttl_of_mixed_keys),
        T(test_redlock_partial_attempt_is_cleaned_up),
        T(test_redlock_contention_is_exclusive),
        T(test_redlock_fences_increase_across_restarts),
        T(test_redlock_all_occupied_masks),
        T(test_redlock_validity_from_the_successful_attempt),
        T(test_redlock_extend_and_release_after_expiry_refused),
        T(test_redlock_release_while_renewing),
        T(test_redlock_timed_out_acquire_then_retry),
        T(test_redlock_extend_repairs_a_restarted_node),
        T(test_redlock_three_node_holder_loses_on_a_restart),
        T(test_redlock_holder_survives_restarts_one_at_a_time_with_a_competitor),
        T(test_redlock_waiter_wakes_on_release),
        T(test_redlock_from_the_command),
        T(test_redlock_fence_check_by_the_majority),
        T(test_redlock_guard_loads_on_every_server),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
