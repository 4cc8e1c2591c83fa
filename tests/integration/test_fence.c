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
    return take_and_release(c, name, 30000, NULL);
}

static void test_fence_strictly_increases(void **state)
{
    dlock_client *c = client_on(server.url);
    uint64_t last = 0;
    (void)state;
    for (int i = 0; i < 1000; i++) {
        uint64_t fence = acquire_release(c, "fence:many");
        if (fence <= last)
            fail_msg("acquisition %d: fence %" PRIu64 " after %" PRIu64, i, fence, last);
        last = fence;
    }
}

static void test_fence_increases_after_restart_without_persistence(void **state)
{
    dlock_client *c = client_on(server.url);
    uint64_t before = 0, after;
    (void)state;
    for (int i = 0; i < 10; i++)
        before = acquire_release(c, "fence:restart");
    assert_int_equal(test_redis_restart(&server), 0);
    /* the counter is gone */
    assert_false(key_exists(connect_to(&server), aux_key("fence:restart", "fence")));
    after = acquire_release(c, "fence:restart"); /* same client: reconnects */
    assert_true(after > before);
}

static void test_fence_counter_branch_adds_one(void **state)
{
    dlock_client *c = client_on(server.url);
    redisContext *redis = connect_to(&server);
    (void)state;
    freeReplyObject(run(redis, "SET %s %llu", aux_key("fence:counter", "fence"),
                        (unsigned long long)FAR_FUTURE));
    assert_int_equal(acquire_release(c, "fence:counter"), FAR_FUTURE + 1);
    assert_int_equal(acquire_release(c, "fence:counter"), FAR_FUTURE + 2);
    assert_key_holds(redis, aux_key("fence:counter", "fence"), "4503599627370498");
}

static void test_fence_key_lifetime_is_an_option(void **state)
{
    const char *url = server.url;
    dlock_client_options opts = client_options(&url, 1);
    long long pttl;
    (void)state;
    opts.fence_ttl_ms = 60000;
    acquire_release(client_with(&opts), "fence:ttl");
    pttl = pttl_of(connect_to(&server), aux_key("fence:ttl", "fence"));
    assert_true(pttl > 0 && pttl <= 60000);
}

static void test_fence_garbage_refused_before_any_write(void **state)
{
    dlock_client *c = client_on(server.url);
    redisContext *redis = connect_to(&server);
    (void)state;
    freeReplyObject(run(redis, "SET %s not-a-number", aux_key("fence:junk", "fence")));
    expect_acquire(DLOCK_ESERVER, c, "fence:junk", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(c), "not a fencing token"));
    assert_false(key_exists(redis, "fence:junk"));
    assert_false(key_exists(redis, aux_key("fence:junk", "owner")));
}

/* Acquires `before` times, SAVEs a snapshot, acquires `after` more times,
 * kills the server and restarts it from that snapshot. Returns the largest
 * token handed out before the restart; *next is the first one after it. */
static uint64_t roll_back(test_redis *r, const char *name, int before, int after, uint64_t *next)
{
    dlock_client *c = client_on(r->url);
    uint64_t last = 0;
    for (int i = 0; i < before; i++)
        last = acquire_release(c, name);
    freeReplyObject(run(connect_to(r), "SAVE"));
    for (int i = 0; i < after; i++)
        last = acquire_release(c, name);
    assert_int_equal(test_redis_restart(r), 0); /* SIGKILL: the snapshot is all that is left */
    *next = acquire_release(c, name);
    return last;
}

/* A counter rolled back by a restart from an older snapshot is not a lost
 * counter: the clock floor keeps the next token above every one issued. */
static void test_fence_after_restart_from_an_older_snapshot(void **state)
{
    uint64_t last, next;
    (void)state;
    last = roll_back(start_servers(1), "fence:snapshot", 3, 5, &next);
    if (next <= last)
        fail_msg("token %" PRIu64 " after a rollback, %" PRIu64 " was handed out before", next, last);
}

/* What the rule cannot prevent (docs/fencing.md): a counter that ran ahead
 * of the clock repeats after a rollback to an older snapshot. */
static void test_fence_ahead_of_the_clock_repeats_after_a_rollback(void **state)
{
    test_redis *r = start_servers(1);
    uint64_t last, next;
    (void)state;
    freeReplyObject(run(connect_to(r), "SET %s %llu", aux_key("fence:ahead", "fence"),
                        (unsigned long long)FAR_FUTURE));
    last = roll_back(r, "fence:ahead", 3, 5, &next);
    assert_int_equal(last, FAR_FUTURE + 8);
    assert_int_equal(next, FAR_FUTURE + 4); /* handed out once already */
}

/* Only a decimal integer from 0 to 2^53 - 2 is a stored token: anything
 * else is an error that names the key, and nothing is written. */
static void test_fence_values_out_of_range_refused(void **state)
{
    static const char *const bad[] = {"9007199254740991", "9007199254740993", "inf", "nan",
                                      "1e400", "-5", "5 ", " 5", "0x10", "1.5", "", "05", "00",
                                      "12345678901234567"};
    dlock_client *c = client_on(server.url);
    redisContext *redis = connect_to(&server);
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
        assert_true(key_holds(redis, fence, bad[i]));
    }
    /* The largest stored value accepted: the next token is still exact. */
    freeReplyObject(run(redis, "SET %s 9007199254740990", fence));
    assert_int_equal(acquire_release(c, "fence:range"), 9007199254740991ULL);
}

/* A stored value that is not a token, for an acquire of each kind: refused
 * with an error that names the key holding it, and the name is not taken. */
static void expect_refused(dlock_client *c, redisContext *redis, const char *name,
                           const char *key, const dlock_acquire_options *o)
{
    expect_acquire(DLOCK_ESERVER, c, name, 30000, o);
    if (!strstr(dlock_client_errmsg(c), key) || !strstr(dlock_client_errmsg(c), "not a fencing token"))
        fail_msg("%s: the message does not name %s: %s", name, key, dlock_client_errmsg(c));
    assert_false(key_exists(redis, name));
}

/* Every script that reads a fence key shares the one parser: semaphores
 * (a slot's token in a hash), fair locks, shared holds, status. */
static void test_fence_garbage_refused_by_every_kind(void **state)
{
    dlock_client *c = client_on(server.url);
    redisContext *redis = connect_to(&server);
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
}

/* Redlock's fence write-back and its extend's repair of a node that lost
 * the lock read the stored token too: a node holding garbage gets nothing
 * written, and the majority's lock is unaffected. */
static void test_fence_garbage_refused_by_write_back_and_repair(void **state)
{
    test_redis *nodes = start_servers(3);
    dlock_client *c = client_on_servers(nodes, 3, 0, 0);
    redisContext *first = connect_to(&nodes[0]), *third = connect_to(&nodes[2]);
    dlock_lock *lock;
    (void)state;
    /* Write-back: node 2 refuses the grant and the write-back. */
    freeReplyObject(run(third, "SET %s nan", aux_key("fence:back", "fence")));
    lock = take(c, "fence:back", 30000, NULL);
    assert_false(key_exists(third, "fence:back"));
    assert_key_holds(third, aux_key("fence:back", "fence"), "nan");
    assert_int_equal(dlock_lock_release(lock), 0);
    /* Repair: node 0 lost the lock and holds garbage; the extend holds on
     * nodes 1 and 2 and writes nothing on node 0. */
    lock = take(c, "fence:repair", 30000, NULL);
    freeReplyObject(run(first, "DEL fence:repair"));
    freeReplyObject(run(first, "SET %s 0x10", aux_key("fence:repair", "fence")));
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    assert_false(key_exists(first, "fence:repair"));
    assert_key_holds(first, aux_key("fence:repair", "fence"), "0x10");
    assert_int_equal(dlock_lock_release(lock), 0);
}

/* dlock_fence_check: the holder's fence is current; an older one, one never
 * issued, the same after the release or after another holder took the
 * name are not. A semaphore: each held permit's own fence. */
static void test_fence_check_answers_for_the_holder_only(void **state)
{
    dlock_client *c = client_on(server.url);
    dlock_acquire_options two = permits_options(2);
    dlock_lock *lock = take(c, "fence:check", 30000, NULL), *permits[2];
    uint64_t fence = dlock_lock_fence(lock);
    (void)state;
    assert_int_equal(dlock_fence_check(c, "fence:check", fence), 1);
    assert_int_equal(dlock_fence_check(c, "fence:check", fence - 1), 0);
    assert_int_equal(dlock_fence_check(c, "fence:check", fence + 1), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(dlock_fence_check(c, "fence:check", fence), 0);
    lock = take(c, "fence:check", 30000, NULL);
    assert_int_equal(dlock_fence_check(c, "fence:check", fence), 0);
    assert_int_equal(dlock_fence_check(c, "fence:check", dlock_lock_fence(lock)), 1);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(dlock_fence_check(c, "fence:never-taken", 1), 0);
    assert_int_equal(dlock_fence_check(NULL, "fence:check", 1), DLOCK_EINVAL);

    permits[0] = take(c, "fence:check-permits", 30000, &two);
    permits[1] = take(c, "fence:check-permits", 30000, &two);
    for (int i = 0; i < 2; i++)
        assert_int_equal(dlock_fence_check(c, "fence:check-permits",
                                           dlock_lock_fence(permits[i])), 1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dlock_lock_release(permits[i]), 0);
        assert_int_equal(dlock_fence_check(c, "fence:check-permits",
                                           dlock_lock_fence(permits[i])), 0);
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_fence_strictly_increases),
        T(test_fence_increases_after_restart_without_persistence),
        T(test_fence_counter_branch_adds_one),
        T(test_fence_key_lifetime_is_an_option),
        T(test_fence_garbage_refused_before_any_write),
        T(test_fence_after_restart_from_an_older_snapshot),
        T(test_fence_ahead_of_the_clock_repeats_after_a_rollback),
        T(test_fence_values_out_of_range_refused),
        T(test_fence_garbage_refused_by_every_kind),
        T(test_fence_garbage_refused_by_write_back_and_repair),
        T(test_fence_check_answers_for_the_holder_only),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
