/* Fencing tokens: strictly increasing, across restarts without persistence,
 * and by the counter when the stored value is ahead of the clock. */
#include "helpers.h"

#include <dlock.h>

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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
    assert_false(key_exists(redis, "{fence:restart}:fence")); /* the counter is gone */
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
    freeReplyObject(run(redis, "SET {fence:counter}:fence %llu", (unsigned long long)FAR_FUTURE));
    assert_int_equal(acquire_release(c, "fence:counter"), FAR_FUTURE + 1);
    assert_int_equal(acquire_release(c, "fence:counter"), FAR_FUTURE + 2);
    stored = get_string(redis, "{fence:counter}:fence");
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
    pttl = pttl_of(redis, "{fence:ttl}:fence");
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
    freeReplyObject(run(redis, "SET {fence:junk}:fence not-a-number"));
    assert_int_equal(dlock_lock_acquire(&lock, c, "fence:junk", 30000, NULL), DLOCK_ESERVER);
    assert_non_null(strstr(dlock_client_errmsg(c), "does not hold a number"));
    assert_false(key_exists(redis, "fence:junk"));
    assert_false(key_exists(redis, "{fence:junk}:owner"));
    redisFree(redis);
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
    };
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
