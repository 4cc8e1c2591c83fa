/* Fencing tokens: strictly increasing, across restarts without persistence
 * and from an older snapshot, by the counter when the stored value is ahead
 * of the clock; stored values that are not tokens are refused. */
#include "helpers.h"

#include <dlock.h>

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define FAR_FUTURE 4503599627370496ULL /* 2^52 µs: year 2112, still exact in Lua */

/* The group's server: group_server, from the helpers. */
#define server group_server

static uint64_t acquire_release(dlock_client *c, const char *name)
{
    dlock_lock *lock = NULL;
    uint64_t fence;
    int rc = dlock_lock_acquire(&lock, c, name, 30000, NULL);
    if (rc != 0)
        fail_msg("acquire: %s: %s", dlock_err_name(rc), dlock_client_errmsg(c));
    fence = dlock_lock_fence(lock);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    return fence;
}

static void test_fence_strictly_increases(void **state)
{
    dlock_client *c = open_client(server.url, 0, 0);
    uint64_t last = 0;
    (void)state;
    for (int i = 0; i < 1000; i++) {
        uint64_t fence = acquire_release(c, "fence:many");
        if (fence <= last)
            fail_msg("acquisition %d: fence %" PRIu64 " after %" PRIu64, i, fence, last);
        last = fence;
    }
    dlock_client_close(c);
}

static void test_fence_increases_after_restart_without_persistence(void **state)
{
    dlock_client *c = open_client(server.url, 0, 0);
    redisContext *redis;
    uint64_t before = 0, after;
    (void)state;
    for (int i = 0; i < 10; i++)
        before = acquire_release(c, "fence:restart");
    assert_int_equal(test_redis_restart(&server), 0);
    redis = test_redis_connect(&server, NULL);
    assert_false(key_exists(redis, aux_key("fence:restart", "fence"))); /* the counter is gone */
    after = acquire_release(c, "fence:restart"); /* same client: reconnects */
    assert_true(after > before);
    redisFree(redis);
    dlock_client_close(c);
}

static void test_fence_counter_branch_adds_one(void **state)
{
    dlock_client *c = open_client(server.url, 0, 0);
    redisContext *redis = test_redis_connect(&server, NULL);
    char *stored;
    (void)state;
    freeReplyObject(run(redis, "SET %s %llu", aux_key("fence:counter", "fence"), (unsigned long long)FAR_FUTURE));
    assert_int_equal(acquire_release(c, "fence:counter"), FAR_FUTURE + 1);
    assert_int_equal(acquire_release(c, "fence:counter"), FAR_FUTURE + 2);
    stored = get_string(redis, aux_key("fence:counter", "fence"));
    assert_string_equal(stored, "4503599627370498");
    free(stored);
    redisFree(redis);
    dlock_client_close(c);
}

static void test_fence_key_lifetime_is_an_option(void **state)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    const char *url = server.url;
    dlock_client *c = NULL;
    redisContext *redis = test_redis_connect(&server, NULL);
    long long pttl;
    (void)state;
    opts.urls = &url;
    opts.n_urls = 1;
    opts.fence_ttl_ms = 60000;
    assert_int_equal(dlock_client_open(&c, &opts, NULL, 0), 0);
    acquire_release(c, "fence:ttl");
    pttl = pttl_of(redis, aux_key("fence:ttl", "fence"));
    assert_true(pttl > 0 && pttl <= 60000);
    redisFree(redis);
    dlock_client_close(c);
}

static void test_fence_garbage_refused_before_any_write(void **state)
{
    dlock_client *c = open_client(server.url, 0, 0);
    redisContext *redis = test_redis_connect(&server, NULL);
    dlock_lock *lock = NULL;
    (void)state;
    freeReplyObject(run(redis, "SET %s not-a-number", aux_key("fence:junk", "fence")));
    assert_int_equal(dlock_lock_acquire(&lock, c, "fence:junk", 30000, NULL), DLOCK_ESERVER);
    assert_non_null(strstr(dlock_client_errmsg(c), "not a fencing token"));
    assert_false(key_exists(redis, "fence:junk"));
    assert_false(key_exists(redis, aux_key("fence:junk", "owner")));
    redisFree(redis);
    dlock_client_close(c);
}

/* Acquires `before` times, SAVEs a snapshot, acquires `after` more times,
 * kills the server and restarts it from that snapshot. Returns the largest
 * token handed out before the restart; *next is the first one after it. */
static uint64_t roll_back(test_redis *r, const char *name, int before, int after, uint64_t *next)
{
    dlock_client *c = open_client(r->url, 0, 0);
    redisContext *redis = test_redis_connect(r, NULL);
    uint64_t last = 0;
    for (int i = 0; i < before; i++)
        last = acquire_release(c, name);
    freeReplyObject(run(redis, "SAVE"));
    redisFree(redis);
    for (int i = 0; i < after; i++)
        last = acquire_release(c, name);
    assert_int_equal(test_redis_restart(r), 0); /* SIGKILL: the snapshot is all that is left */
    *next = acquire_release(c, name);
    dlock_client_close(c);
    return last;
}

static void remove_snapshot(test_redis *r)
{
    char path[192];
    snprintf(path, sizeof(path), "%s/dump.rdb", r->dir);
    unlink(path);
}

/* A counter rolled back by a restart from an older snapshot is not a lost
 * counter: the clock floor keeps the next token above every one issued. */
static void test_fence_after_restart_from_an_older_snapshot(void **state)
{
    test_redis r = {0};
    uint64_t last, next;
    (void)state;
    assert_int_equal(test_redis_start(&r, NULL), 0);
    last = roll_back(&r, "fence:snapshot", 3, 5, &next);
    if (next <= last)
        fail_msg("token %" PRIu64 " after a rollback, %" PRIu64 " was handed out before", next, last);
    remove_snapshot(&r);
    test_redis_stop(&r);
}

/* What the rule cannot prevent (docs/fencing.md): a counter that ran ahead
 * of the clock repeats after a rollback to an older snapshot. */
static void test_fence_ahead_of_the_clock_repeats_after_a_rollback(void **state)
{
    test_redis r = {0};
    redisContext *redis;
    uint64_t last, next;
    (void)state;
    assert_int_equal(test_redis_start(&r, NULL), 0);
    redis = test_redis_connect(&r, NULL);
    freeReplyObject(run(redis, "SET %s %llu", aux_key("fence:ahead", "fence"),
                        (unsigned long long)FAR_FUTURE));
    redisFree(redis);
    last = roll_back(&r, "fence:ahead", 3, 5, &next);
    assert_int_equal(last, FAR_FUTURE + 8);
    assert_int_equal(next, FAR_FUTURE + 4); /* handed out once already */
    remove_snapshot(&r);
    test_redis_stop(&r);
}

/* Only a decimal integer from 0 to 2^53 - 2 is a stored token: anything
 * else is an error that names the key, and nothing is written. */
static void test_fence_values_out_of_range_refused(void **state)
{
    static const char *const bad[] = {"9007199254740991", "9007199254740993", "inf", "nan",
                                      "1e400", "-5", "5 ", " 5", "0x10", "1.5", "", "05", "00",
                                      "12345678901234567"};
    dlock_client *c = open_client(server.url, 0, 0);
    redisContext *redis = test_redis_connect(&server, NULL);
    char fence[128];
    (void)state;
    snprintf(fence, sizeof(fence), "%s", aux_key("fence:range", "fence"));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dlock_lock *lock = NULL;
        freeReplyObject(run(redis, "SET %s %b", fence, bad[i], strlen(bad[i])));
        if (dlock_lock_acquire(&lock, c, "fence:range", 30000, NULL) != DLOCK_ESERVER)
            fail_msg("stored fence \"%s\" was accepted", bad[i]);
        assert_non_null(strstr(dlock_client_errmsg(c), fence));
        assert_false(key_exists(redis, "fence:range"));
        assert_false(key_exists(redis, aux_key("fence:range", "owner")));
        {
            char *stored = get_string(redis, fence);
            assert_string_equal(stored, bad[i]);
            free(stored);
        }
    }
    /* The largest stored value accepted: the next token is still exact. */
    freeReplyObject(run(redis, "SET %s 9007199254740990", fence));
    assert_int_equal(acquire_release(c, "fence:range"), 9007199254740991ULL);
    redisFree(redis);
    dlock_client_close(c);
}

/* A stored value that is not a token, for an acquire of each kind: refused
 * with an error that names the key holding it, and the name is not taken. */
static void expect_refused(dlock_client *c, redisContext *redis, const char *name,
                           const char *key, const dlock_acquire_options *o)
{
    dlock_lock *lock = NULL;
    int rc = dlock_lock_acquire(&lock, c, name, 30000, o);
    if (rc != DLOCK_ESERVER)
        fail_msg("%s: %s instead of DLOCK_ESERVER", name, dlock_err_name(rc));
    if (!strstr(dlock_client_errmsg(c), key) || !strstr(dlock_client_errmsg(c), "not a fencing token"))
        fail_msg("%s: the message does not name %s: %s", name, key, dlock_client_errmsg(c));
    assert_false(key_exists(redis, name));
}

/* Every script that reads a fence key shares the one parser: semaphores
 * (a slot's token in a hash), fair locks, shared holds, status. */
static void test_fence_garbage_refused_by_every_kind(void **state)
{
    dlock_client *c = open_client(server.url, 0, 0);
    redisContext *redis = test_redis_connect(&server, NULL);
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_status *st = NULL;
    char key[128];
    (void)state;
    snprintf(key, sizeof(key), "%s", aux_key("fence:sem", "fences"));
    freeReplyObject(run(redis, "HSET %s 0 inf", key));
    o.permits = 3;
    expect_refused(c, redis, "fence:sem", key, &o);
    o.permits = 0;

    snprintf(key, sizeof(key), "%s", aux_key("fence:fair", "fence"));
    freeReplyObject(run(redis, "SET %s 1e400", key));
    o.fair = 1;
    expect_refused(c, redis, "fence:fair", key, &o);
    o.fair = 0;

    snprintf(key, sizeof(key), "%s", aux_key("fence:shared", "fence"));
    freeReplyObject(run(redis, "SET %s -5", key));
    o.shared = 1;
    expect_refused(c, redis, "fence:shared", key, &o);

    snprintf(key, sizeof(key), "%s", aux_key("fence:status", "fence"));
    freeReplyObject(run(redis, "SET %s 05", key));
    assert_int_equal(dlock_status_query(&st, c, "fence:status"), DLOCK_ESERVER);
    assert_non_null(strstr(dlock_client_errmsg(c), key));
    redisFree(redis);
    dlock_client_close(c);
}

/* Redlock's fence write-back and its extend's repair of a node that lost
 * the lock read the stored token too: a node holding garbage gets nothing
 * written, and the majority's lock is unaffected. */
static void test_fence_garbage_refused_by_write_back_and_repair(void **state)
{
    test_redis nodes[3] = {{0}};
    redisContext *redis[3];
    const char *urls[3];
    dlock_client *c;
    dlock_lock *lock;
    char *stored;
    (void)state;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(test_redis_start(&nodes[i], NULL), 0);
        urls[i] = nodes[i].url;
        redis[i] = test_redis_connect(&nodes[i], NULL);
    }
    c = open_nodes(urls, 3, 0, 0);
    /* Write-back: node 2 refuses the grant and the write-back. */
    freeReplyObject(run(redis[2], "SET %s nan", aux_key("fence:back", "fence")));
    lock = must_acquire(c, "fence:back", 30000, NULL);
    assert_false(key_exists(redis[2], "fence:back"));
    stored = get_string(redis[2], aux_key("fence:back", "fence"));
    assert_string_equal(stored, "nan");
    free(stored);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    /* Repair: node 0 lost the lock and holds garbage; the extend holds on
     * nodes 1 and 2 and writes nothing on node 0. */
    lock = must_acquire(c, "fence:repair", 30000, NULL);
    freeReplyObject(run(redis[0], "DEL fence:repair"));
    freeReplyObject(run(redis[0], "SET %s 0x10", aux_key("fence:repair", "fence")));
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    assert_false(key_exists(redis[0], "fence:repair"));
    stored = get_string(redis[0], aux_key("fence:repair", "fence"));
    assert_string_equal(stored, "0x10");
    free(stored);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);
    for (int i = 0; i < 3; i++) {
        redisFree(redis[i]);
        test_redis_stop(&nodes[i]);
    }
}

/* dlock_fence_check: the holder's fence is current; an older one, one never
 * issued, the same after the release or after another holder took the
 * name are not. A semaphore: each held permit's own fence. */
static void test_fence_check_answers_for_the_holder_only(void **state)
{
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options two = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock = must_acquire(c, "fence:check", 30000, NULL), *permits[2];
    uint64_t fence = dlock_lock_fence(lock);
    (void)state;
    assert_int_equal(dlock_fence_check(c, "fence:check", fence), 1);
    assert_int_equal(dlock_fence_check(c, "fence:check", fence - 1), 0);
    assert_int_equal(dlock_fence_check(c, "fence:check", fence + 1), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    assert_int_equal(dlock_fence_check(c, "fence:check", fence), 0);
    lock = must_acquire(c, "fence:check", 30000, NULL);
    assert_int_equal(dlock_fence_check(c, "fence:check", fence), 0);
    assert_int_equal(dlock_fence_check(c, "fence:check", dlock_lock_fence(lock)), 1);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    assert_int_equal(dlock_fence_check(c, "fence:never-taken", 1), 0);
    assert_int_equal(dlock_fence_check(NULL, "fence:check", 1), DLOCK_EINVAL);

    two.permits = 2;
    permits[0] = must_acquire(c, "fence:check-permits", 30000, &two);
    permits[1] = must_acquire(c, "fence:check-permits", 30000, &two);
    for (int i = 0; i < 2; i++)
        assert_int_equal(dlock_fence_check(c, "fence:check-permits",
                                           dlock_lock_fence(permits[i])), 1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dlock_lock_release(permits[i]), 0);
        assert_int_equal(dlock_fence_check(c, "fence:check-permits",
                                           dlock_lock_fence(permits[i])), 0);
        dlock_lock_free(permits[i]);
    }
    dlock_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fence_strictly_increases),
        cmocka_unit_test(test_fence_increases_after_restart_without_persistence),
        cmocka_unit_test(test_fence_counter_branch_adds_one),
        cmocka_unit_test(test_fence_key_lifetime_is_an_option),
        cmocka_unit_test(test_fence_garbage_refused_before_any_write),
        cmocka_unit_test(test_fence_after_restart_from_an_older_snapshot),
        cmocka_unit_test(test_fence_ahead_of_the_clock_repeats_after_a_rollback),
        cmocka_unit_test(test_fence_values_out_of_range_refused),
        cmocka_unit_test(test_fence_garbage_refused_by_every_kind),
        cmocka_unit_test(test_fence_garbage_refused_by_write_back_and_repair),
        cmocka_unit_test(test_fence_check_answers_for_the_holder_only),
    };
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
