/* Renewal and loss: a short TTL kept alive, loss detected when the key is
 * deleted or the server stalls past the TTL, max-hold, and no renewal after
 * release or free. Callbacks record into atomics; assertions run here. */
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Per-node deadline of the tests' clients: the default, TTL/20, is 15 ms
 * for a 300 ms TTL, which a busy machine misses (the acquisition fails, a
 * renewal times out). These tests are about renewal, not node deadlines;
 * the command timeout (1 s unless said) caps this. */
#define NODE_TIMEOUT_MS 1000

struct lost_record {
    atomic_int calls;
    atomic_int reason;
    atomic_llong at_ms;
    atomic_int held_inside; /* dlock_lock_held() seen from the callback */
};

static void record_loss(dlock_lock *lock, int reason, void *arg)
{
    struct lost_record *r = arg;
    atomic_store(&r->reason, reason);
    atomic_store(&r->at_ms, test_now_ms());
    atomic_store(&r->held_inside, dlock_lock_held(lock));
    atomic_fetch_add(&r->calls, 1);
}

/* What the renewal thread records, outside the test's stack. */
static struct lost_record *new_record(void)
{
    return cleanup_alloc(sizeof(struct lost_record));
}

static dlock_lock *acquire_renewed(dlock_client *c, const char *name, int64_t ttl_ms,
                                   int64_t max_hold_ms, struct lost_record *record)
{
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    opts.auto_renew = 1;
    opts.max_hold_ms = max_hold_ms;
    opts.on_lost = record ? record_loss : NULL;
    opts.on_lost_arg = record;
    return take(c, name, ttl_ms, &opts);
}

static dlock_client *open_renewing(const test_redis *server, int command_timeout_ms)
{
    const char *url = server->url;
    return client_on_nodes(&url, 1, NODE_TIMEOUT_MS, command_timeout_ms);
}

/* Waits until the callback ran, at most `limit_ms`. */
static void wait_for_loss(struct lost_record *r, long long limit_ms)
{
    long long until = test_now_ms() + limit_ms;
    while (atomic_load(&r->calls) == 0 && test_now_ms() < until)
        usleep(5000);
}

static void test_renew_keeps_a_short_lock_held(void **state)
{
    test_redis *server = *state;
    dlock_client *a = open_renewing(server, 0), *b = open_renewing(server, 0);
    struct lost_record *record = new_record();
    dlock_lock *lock = acquire_renewed(a, "renew:keep", 1000, 0, record);
    redisContext *redis = connect_to(server);

    for (int i = 0; i < 10; i++) { /* 5 s: five TTLs */
        usleep(500 * 1000);
        expect_acquire(DLOCK_EBUSY, b, "renew:keep", 1000, NULL);
        assert_true(dlock_lock_held(lock));
        assert_true(pttl_of(redis, "renew:keep") > 0);
    }
    assert_int_equal(atomic_load(&record->calls), 0);
    /* The caller does not extend what the thread renews. */
    assert_int_equal(dlock_lock_extend(lock, 1000), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_false(key_exists(redis, "renew:keep"));
    assert_false(dlock_lock_held(lock));
}

static void test_renew_loss_when_the_key_is_deleted(void **state)
{
    test_redis *server = *state;
    dlock_client *a = open_renewing(server, 0);
    struct lost_record *record = new_record();
    dlock_lock *lock = acquire_renewed(a, "renew:deleted", 1000, 0, record);
    redisContext *redis = connect_to(server);
    long long deleted_at;

    usleep(100 * 1000);
    deleted_at = test_now_ms();
    freeReplyObject(run(redis, "DEL renew:deleted"));
    /* One renewal interval (333 ms) plus a command timeout (1 s), with room. */
    wait_for_loss(record, (333 + 1000) * 5LL * test_slowdown());
    assert_int_equal(atomic_load(&record->calls), 1);
    assert_int_equal(atomic_load(&record->reason), DLOCK_ENOTOWNER);
    assert_true(atomic_load(&record->at_ms) - deleted_at < (333 + 1000) * 5LL * test_slowdown());
    assert_false(atomic_load(&record->held_inside));
    assert_false(dlock_lock_held(lock));
    assert_int_equal(dlock_lock_validity_ms(lock), 0);

    assert_int_equal(dlock_lock_release(lock), DLOCK_ELOST);
    assert_non_null(strstr(dlock_client_errmsg(a), "lost"));
    usleep(500 * 1000);
    assert_int_equal(atomic_load(&record->calls), 1); /* once */
    assert_false(key_exists(redis, "renew:deleted")); /* never silently re-taken */
}

static void test_renew_loss_when_the_server_stalls(void **state)
{
    test_redis *server = *state;
    dlock_client *a = open_renewing(server, 200);
    dlock_client *b = open_renewing(server, 0);
    struct lost_record *record = new_record();
    dlock_lock *lock = acquire_renewed(a, "renew:stall", 1000, 0, record);
    dlock_lock *taken;
    int reason;

    test_redis_pause(server);
    wait_for_loss(record, 5000LL * test_slowdown());
    test_redis_resume(server);
    assert_int_equal(atomic_load(&record->calls), 1);
    reason = atomic_load(&record->reason);
    /* The validity ran out while every renewal timed out. */
    assert_int_equal(reason, DLOCK_ETIMEDOUT);
    assert_false(dlock_lock_held(lock));
    usleep(1100 * 1000); /* the server's copy of the TTL runs out too */
    taken = take(b, "renew:stall", 30000, NULL);
    assert_int_equal(dlock_lock_release(lock), DLOCK_ELOST);
    assert_int_equal(dlock_lock_release(taken), 0); /* the loser did not touch it */
}

/* The owner hears of a loss when the validity ends, not after the cleanup:
 * with the server stalled, that cleanup would wait a command timeout. */
static void test_renew_loss_signalled_by_the_end_of_validity(void **state)
{
    test_redis *server = *state;
    dlock_client *a = open_renewing(server, 3000);
    struct lost_record *record = new_record();
    long long start = test_now_ms();

    acquire_renewed(a, "renew:signal", 3000, 0, record);
    test_redis_pause(server);
    wait_for_loss(record, 10000LL * test_slowdown());
    test_redis_resume(server);
    assert_int_equal(atomic_load(&record->calls), 1);
    /* The validity ends before start + TTL; slack for the thread on a busy
     * machine, still far from the 3 s a cleanup would add. */
    if (atomic_load(&record->at_ms) > start + 3000 + 1000LL * test_slowdown())
        fail_msg("on_lost %lld ms after the acquisition of a 3000 ms lock",
                 atomic_load(&record->at_ms) - start);
}

static void test_renew_stops_at_max_hold(void **state)
{
    test_redis *server = *state;
    dlock_client *a = open_renewing(server, 0);
    struct lost_record *record = new_record();
    long long start = test_now_ms();
    /* A TTL whose renewals a busy machine keeps up with (667 ms of slack). */
    dlock_lock *lock = acquire_renewed(a, "renew:maxhold", 1000, 3000, record);
    redisContext *redis = connect_to(server);

    usleep(2100 * 1000);
    assert_true(dlock_lock_held(lock)); /* renewed past twice its TTL */
    wait_for_loss(record, 5000LL * test_slowdown());
    assert_int_equal(atomic_load(&record->calls), 1);
    assert_int_equal(atomic_load(&record->reason), DLOCK_ELOST);
    assert_true(atomic_load(&record->at_ms) - start >= 2700);
    /* The loss is signalled first, the key cleaned up after: it goes by
     * that cleanup, or by its TTL at the latest, and no renewal is back. */
    for (long long until = test_now_ms() + 1000LL * test_slowdown();
         key_exists(redis, "renew:maxhold") && test_now_ms() < until;)
        usleep(5000);
    assert_false(key_exists(redis, "renew:maxhold"));
}

static void test_renew_nothing_after_release_or_free(void **state)
{
    test_redis *server = *state;
    dlock_client *a = open_renewing(server, 0);
    redisContext *redis = connect_to(server);
    long long until;

    /* Release racing the renewal thread (TTL 600 ms: a renewal every 200 ms,
     * which a busy machine keeps up with; the sleeps cover one interval). */
    for (int i = 0; i < 30; i++) {
        dlock_lock *lock = acquire_renewed(a, "renew:race", 600, 0, NULL);
        usleep((unsigned)(i % 15) * 14 * 1000);
        assert_int_equal(dlock_lock_release(lock), 0);
        assert_false(key_exists(redis, "renew:race"));
        cleanup_now(lock); /* out of the renewal set, as each round's is */
    }
    usleep(300 * 1000);
    assert_false(key_exists(redis, "renew:race")); /* no ghost key */

    /* Freed without a release: renewals stop, the key expires by itself
     * (a renewal every 100 ms would keep it for good; one still on its way
     * when the lock was freed may land late on a busy machine). */
    cleanup_now(acquire_renewed(a, "renew:freed", 300, 0, NULL));
    until = test_now_ms() + 3000LL * test_slowdown();
    while (key_exists(redis, "renew:freed") && test_now_ms() < until)
        usleep(10 * 1000);
    assert_false(key_exists(redis, "renew:freed"));
}

/* Many locks on one client: their renewals share round trips (Redis reads
 * many commands per read), a script cache flushed in the middle of a batch
 * costs nothing, and the one lock taken away is the only one lost. */
static void test_renew_many_locks_pipelined(void **state)
{
    enum { LOCKS = 300 };
    const int ttl_ms = 1000 * test_slowdown();
    test_redis *server = *state;
    dlock_client *c = open_renewing(server, 0);
    redisContext *redis = connect_to(server);
    struct lost_record *records = cleanup_alloc(LOCKS * sizeof(*records));
    dlock_lock *locks[LOCKS];
    long long reads, renewals;
    char name[32];

    for (int i = 0; i < LOCKS; i++) {
        snprintf(name, sizeof(name), "renew:many:%d", i);
        locks[i] = acquire_renewed(c, name, ttl_ms, 0, &records[i]);
    }
    reads = info_field(redis, "stats", "total_reads_processed:");
    renewals = info_field(redis, "commandstats", "cmdstat_evalsha:calls=");
    freeReplyObject(run(redis, "DEL renew:many:7"));
    usleep((useconds_t)ttl_ms * 1000 / 2);
    freeReplyObject(run(redis, "SCRIPT FLUSH"));
    usleep((useconds_t)ttl_ms * 1000 * 2);
    /* Our own INFO, DEL and SCRIPT calls are reads too; a read per renewal
     * would make this about 1. No EVAL at all when the connection was made
     * anew after the flush (a renewal that timed out on a busy machine):
     * a new connection loads the scripts first. */
    reads = info_field(redis, "stats", "total_reads_processed:") - reads;
    renewals = info_field(redis, "commandstats", "cmdstat_evalsha:calls=") - renewals +
               info_count(redis, "commandstats", "cmdstat_eval:calls=");
    if (renewals < LOCKS * 2LL || renewals < reads * 4)
        fail_msg("%lld renewals in %lld reads: not pipelined", renewals, reads);

    for (int i = 0; i < LOCKS; i++) {
        snprintf(name, sizeof(name), "renew:many:%d", i);
        if (i == 7) {
            assert_int_equal(atomic_load(&records[i].calls), 1);
            assert_int_equal(atomic_load(&records[i].reason), DLOCK_ENOTOWNER);
            assert_false(dlock_lock_held(locks[i]));
            assert_false(key_exists(redis, name));
            assert_int_equal(dlock_lock_release(locks[i]), DLOCK_ELOST);
        } else {
            assert_int_equal(atomic_load(&records[i].calls), 0);
            assert_true(dlock_lock_held(locks[i]));
            assert_true(pttl_of(redis, name) > 0);
            assert_int_equal(dlock_lock_release(locks[i]), 0);
        }
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_server, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_renew_keeps_a_short_lock_held),
        T(test_renew_loss_when_the_key_is_deleted),
        T(test_renew_loss_signalled_by_the_end_of_validity),
        T(test_renew_loss_when_the_server_stalls),
        T(test_renew_stops_at_max_hold),
        T(test_renew_many_locks_pipelined),
        T(test_renew_nothing_after_release_or_free),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
