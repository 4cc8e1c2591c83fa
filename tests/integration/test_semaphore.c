/* Semaphores through the library against a real redis-server: N holders,
 * slots and per-slot fences, the limit in force, the wrong kind both ways,
 * release and extend by token, reaping, waking, the waiters' queue and the
 * hand-over of a permit, loss, several servers, and each kind's holders in
 * words. */
#include "helpers.h"

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

#define server group_server

static void test_sem_three_holders_distinct_slots_fourth_busy(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(3);
    dlock_lock *l[3], *fourth;
    dlock_status *st = NULL;
    unsigned seen = 0;

    for (int i = 0; i < 3; i++) {
        l[i] = take(c, "sem:three", 30000, &o);
        seen |= 1u << dlock_lock_slot(l[i]);
        assert_true(dlock_lock_fence(l[i]) > 0);
    }
    assert_int_equal(seen, 7);
    assert_int_equal(zcard(redis, "sem:three"), 3);
    expect_acquire(DLOCK_EBUSY, c, "sem:three", 30000, &o);

    assert_int_equal(dlock_status_query(&st, c, "sem:three"), 0);
    kept_status(st);
    assert_string_equal(dlock_client_errmsg(c), ""); /* the busy acquire's is gone */
    assert_int_equal(dlock_status_limit(st), 3);
    assert_int_equal(dlock_status_holders(st), 3);
    for (size_t i = 0; i < 3; i++) {
        const dlock_holder *h = dlock_status_holder(st, i);
        assert_int_equal(h->slot, i);
        assert_int_equal(h->pid, getpid());
        assert_true(h->ttl_ms > 20000 && h->ttl_ms <= 30000);
        assert_true(h->fence > 0);
    }

    /* A released slot is the next holder's. */
    unsigned freed = dlock_lock_slot(l[1]);
    assert_int_equal(dlock_lock_release(l[1]), 0);
    fourth = take(c, "sem:three", 30000, &o);
    assert_int_equal(dlock_lock_slot(fourth), freed);
    for (int i = 0; i < 3; i++)
        assert_int_equal(dlock_lock_release(i == 1 ? fourth : l[i]), 0);
    /* Nothing of an idle semaphore outlives its last permit but the fences. */
    assert_false(key_exists(redis, "sem:three"));
    assert_false(key_exists(redis, aux_key("sem:three", "limit")));
    assert_false(key_exists(redis, aux_key("sem:three", "slots")));
    assert_false(key_exists(redis, aux_key("sem:three", "owners")));
    assert_true(key_exists(redis, aux_key("sem:three", "fences")));
}

static void test_sem_other_limit_refused_naming_the_limit_in_force(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options three = permits_options(3), two = permits_options(2);
    dlock_lock *held = take(c, "sem:limit", 30000, &three);
    char *before = digest_of(redis);

    expect_acquire(DLOCK_ELIMIT, c, "sem:limit", 30000, &two);
    assert_non_null(strstr(dlock_client_errmsg(c), "semaphore of 3 permits"));
    assert_string_equal(before, digest_of(redis));
    assert_true(dlock_lock_held(held));
    assert_int_equal(dlock_lock_release(held), 0);
    /* Once idle, the name takes another limit. */
    take_and_release(c, "sem:limit", 30000, &two);
}

static void test_sem_wrong_kind_both_ways_writes_nothing(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *sem = take(c, "sem:kind-a", 30000, &o);
    dlock_lock *mutex = take(c, "sem:kind-b", 30000, NULL);
    char *before = digest_of(redis);

    expect_acquire(DLOCK_EWRONGTYPE, c, "sem:kind-a", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(c), "not a mutex"));
    expect_acquire(DLOCK_EWRONGTYPE, c, "sem:kind-b", 30000, &o);
    assert_non_null(strstr(dlock_client_errmsg(c), "not a semaphore"));
    assert_string_equal(before, digest_of(redis));
    assert_int_equal(dlock_lock_release(sem), 0);
    assert_int_equal(dlock_lock_release(mutex), 0);
}

/* Release and extend by token, through an adopted handle that does not
 * know the name is a semaphore's; twice, foreign, expired: not the owner,
 * and the permits are untouched. */
static void test_sem_release_extend_by_token(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(3);
    dlock_lock *keep = take(c, "sem:token", 30000, &o);
    dlock_lock *a = take(c, "sem:token", 30000, &o);
    dlock_lock *b = take(c, "sem:token", 100, &o);
    dlock_lock *adopted = adopt(c, "sem:token", dlock_lock_token(a));
    dlock_lock *foreign;
    char *before;

    assert_int_equal(dlock_lock_extend(adopted, 60000), 0);
    assert_true(dlock_lock_validity_ms(adopted) > 50000);
    foreign = adopt(c, "sem:token", "0123456789abcdef0123456789abcdef");
    usleep(200 * 1000); /* b's permit expires */
    assert_int_equal(dlock_lock_extend(b, 30000), DLOCK_ENOTOWNER);
    assert_int_equal(zcard(redis, "sem:token"), 2); /* b's expired permit was reaped */
    assert_int_equal(dlock_lock_release(adopted), 0);

    before = digest_of(redis);
    assert_int_equal(dlock_lock_release(foreign), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock_release(adopted), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock_release(a), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock_extend(b, 30000), DLOCK_ENOTOWNER);
    assert_string_equal(before, digest_of(redis));
    assert_int_equal(zcard(redis, "sem:token"), 1);
    assert_int_equal(dlock_lock_release(keep), 0);
}

/* A crashed holder's permit frees itself after its TTL and is reaped. */
static void test_sem_dead_permit_frees_after_its_ttl(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *next;
    long long before = test_now_ms(), after;

    for (int i = 0; i < 2; i++)
        take(c, "sem:dead", 400, &o);
    after = test_now_ms();
    o.wait_ms = 5000;
    next = take(c, "sem:dead", 30000, &o);
    /* Not before the first dead permit's expiry (server ms: 1 ms of rounding). */
    assert_true(test_now_ms() - before >= 399);
    /* Past both expiries, any script reaps what is left of the dead. */
    while (test_now_ms() - after < 420)
        usleep(10000);
    assert_int_equal(dlock_lock_extend(next, 30000), 0);
    assert_int_equal(zcard(redis, "sem:dead"), 1);
    assert_int_equal(dlock_lock_release(next), 0);
}

struct release_later {
    dlock_lock *lock;
    int rc;
};

static void *release_later(void *arg)
{
    struct release_later *r = arg;
    usleep(300 * 1000);
    r->rc = dlock_lock_release(r->lock);
    return NULL;
}

/* A release wakes a waiter: without the message its next try would come
 * half the backoff cap (15 s) later. */
static void test_sem_release_wakes_a_waiter(void **state)
{
    dlock_client *c = client_on(server.url);
    dlock_client *w = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *h[2], *waiter;
    struct release_later *later;
    long long start;
    (void)state;

    for (int i = 0; i < 2; i++)
        h[i] = take(c, "sem:wake", 60000, &o);
    later = start_thread(release_later, &(struct release_later){h[0], -1},
                         sizeof(struct release_later));
    o.wait_ms = 30000;
    o.backoff_max_ms = 30000;
    start = test_now_ms();
    waiter = take(w, "sem:wake", 20000, &o);
    join_thread(later);
    assert_int_equal(later->rc, 0);
    assert_true(test_now_ms() - start >= 290);
    assert_true(test_now_ms() - start < 300 + 1500LL * test_slowdown());
    assert_int_equal(dlock_lock_slot(waiter), dlock_lock_slot(h[0]));
    assert_int_equal(dlock_lock_release(waiter), 0);
    assert_int_equal(dlock_lock_release(h[1]), 0);
}

/* No waiter's key of `name` is left. */
static void assert_no_queue(redisContext *redis, const char *name)
{
    assert_int_equal(key_exists(redis, aux_key(name, "waiters")), 0);
    assert_int_equal(key_exists(redis, aux_key(name, "waiter-leases")), 0);
    assert_int_equal(key_exists(redis, aux_key(name, "waiter-wake")), 0);
}

/* A waiter of its own: waits for a permit of "sem:queue" on client `c`. */
struct sem_waiter {
    dlock_client *c;
    const char *name;
    dlock_acquire_options o;
    atomic_bool done;
    dlock_lock *lock;
    int rc;
};

static void *wait_for_permit(void *arg)
{
    struct sem_waiter *w = arg;
    w->rc = dlock_lock_acquire(&w->lock, w->c, w->name, 60000, &w->o);
    kept_lock(w->lock);
    atomic_store(&w->done, true);
    return NULL;
}

/* Starts a waiter on client `c` with a presence lease of `lease_ms` and
 * returns once it queued as the n-th and listens (its join and its second
 * try ran). */
static struct sem_waiter *queue_client_waiter(redisContext *redis, dlock_client *c,
                                              const char *name, unsigned permits, long long n,
                                              unsigned lease_ms)
{
    struct sem_waiter w = {.c = c, .name = name, .rc = -1};
    struct sem_waiter *copy;
    long long before = script_calls(redis);
    w.o = permits_options(permits);
    w.o.wait_ms = 30000;
    w.o.backoff_max_ms = 30000;
    w.o.lease_ms = lease_ms;
    copy = start_thread(wait_for_permit, &w, sizeof(w));
    wait_for_zcard(redis, aux_key(name, "waiters"), n);
    wait_for_script_calls(redis, before, 2);
    return copy;
}

/* The same with a lease of 60 s, renewed every 20 s: none of its tries
 * falls in what a test counts afterwards. */
static struct sem_waiter *queue_waiter(redisContext *redis, const char *name, unsigned permits,
                                       long long n)
{
    return queue_client_waiter(redis, client_on(server.url), name, permits, n, 60000);
}

static void wait_done(struct sem_waiter *w)
{
    long long until = test_now_ms() + 10000LL * test_slowdown();
    while (!atomic_load(&w->done) && test_now_ms() < until)
        usleep(2000);
    assert_true(atomic_load(&w->done));
    assert_int_equal(w->rc, 0);
}

/* The server's clock in ms. */
static long long server_ms(redisContext *redis)
{
    redisReply *t = run(redis, "TIME");
    long long now = strtoll(t->element[0]->str, NULL, 10) * 1000 +
                    strtoll(t->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(t);
    return now;
}

/* A release hands its permit to the one waiter it gives it to, the first
 * in the queue, and tells no other: after it the server runs the release
 * alone (the waiter holds the permit, in the slot freed, without a try;
 * its TTL is within its lease), where notify-all would run one script per
 * waiter. */
static void test_sem_release_hands_its_permit_to_the_next_waiter_alone(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *h[2];
    struct sem_waiter *w[3];

    for (int i = 0; i < 2; i++)
        h[i] = take(c, "sem:queue", 60000, &o);
    for (int i = 0; i < 3; i++)
        w[i] = queue_waiter(redis, "sem:queue", 2, i + 1);
    for (int i = 0; i < 3; i++) {
        long long before = script_calls(redis);
        dlock_lock *freed = i < 2 ? h[i] : w[0]->lock;
        assert_int_equal(dlock_lock_release(freed), 0);
        wait_done(w[i]);
        usleep(200 * 1000); /* room for a wrong wake-up's try */
        assert_int_equal(script_calls(redis) - before, 1);
        assert_int_equal(dlock_lock_slot(w[i]->lock), dlock_lock_slot(freed));
        assert_true(dlock_lock_fence(w[i]->lock) > dlock_lock_fence(freed));
        for (int j = i + 1; j < 3; j++)
            assert_false(atomic_load(&w[j]->done));
        assert_int_equal(zcard(redis, aux_key("sem:queue", "waiters")), 2 - i);
    }
    join_thread(w[0]);
    for (int i = 1; i < 3; i++) {
        join_thread(w[i]);
        assert_int_equal(dlock_lock_release(w[i]->lock), 0);
    }
    assert_no_queue(redis, "sem:queue");
    assert_int_equal(key_exists(redis, "sem:queue"), 0);
}

/* A free permit is the first waiter's: an acquire that does not wait is
 * busy, one that waits queues behind. A waiter that died (its entry
 * stays, nobody renews it) keeps the permit only until its lease ends. */
static void test_sem_free_permit_kept_for_a_waiter_until_its_lease_ends(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    long long now = server_ms(redis);
    long long at = test_now_ms(), start; /* the server's `now`, on the test's clock */
    dlock_lock *held = take(c, "sem:dead-waiter", 60000, &o), *late;

    freeReplyObject(run(redis, "ZADD %s 1 %s", aux_key("sem:dead-waiter", "waiters"),
                        "0123456789abcdef0123456789abcdef"));
    freeReplyObject(run(redis, "ZADD %s %lld %s", aux_key("sem:dead-waiter", "waiter-leases"),
                        now + 800, "0123456789abcdef0123456789abcdef"));
    freeReplyObject(run(redis, "HSET %s %s gone:1", aux_key("sem:dead-waiter", "waiter-wake"),
                        "0123456789abcdef0123456789abcdef"));
    expect_acquire(DLOCK_EBUSY, c, "sem:dead-waiter", 30000, &o);
    o.wait_ms = 10000;
    start = test_now_ms();
    late = take(c, "sem:dead-waiter", 30000, &o);
    assert_true(test_now_ms() - at >= 790);
    assert_true(test_now_ms() - start < 800 + 2000LL * test_slowdown());
    assert_int_equal(zcard(redis, aux_key("sem:dead-waiter", "waiters")), 0);
    assert_int_equal(dlock_lock_release(late), 0);
    assert_int_equal(dlock_lock_release(held), 0);
    assert_no_queue(redis, "sem:dead-waiter");
}

/* A waiter whose grant must pass the restart check does not ask for the
 * hand-over (a release cannot run the check for it): its entry keeps no
 * hand-over, the release tells it, and it takes the freed slot with its
 * own try. */
static void test_sem_waiter_with_a_restart_delay_is_told_and_tries(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *holder = take(c, "sem:told", 60000, &o);
    dlock_lock *other = take(c, "sem:told", 60000, &o);
    struct sem_waiter *t =
        queue_client_waiter(redis, durable_client(server.url, 0, 100), "sem:told", 2, 1, 60000);
    redisReply *entry = run(redis, "HVALS %s", aux_key("sem:told", "waiter-wake"));
    long long before;


    assert_int_equal(entry->elements, 1);
    assert_null(strchr(entry->element[0]->str, '\n'));
    freeReplyObject(entry);
    before = script_calls(redis);
    assert_int_equal(dlock_lock_release(holder), 0);
    join_thread(t);
    assert_int_equal(t->rc, 0);
    assert_true(script_calls(redis) - before >= 2); /* the release, the waiter's try */
    assert_int_equal(dlock_lock_slot(t->lock), dlock_lock_slot(holder));
    assert_int_equal(dlock_lock_release(t->lock), 0);
    assert_int_equal(dlock_lock_release(other), 0);
    assert_no_queue(redis, "sem:told");
}

/* A permit handed over is the waiter's for at most its presence lease
 * (3 s) until claimed: a waiter whose TTL (60 s) outlasts it claims the
 * whole TTL with an extend before its acquire returns. */
static void test_sem_hand_over_claimed_when_the_ttl_outlasts_the_lease(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *holder = take(c, "sem:claim", 60000, &o);
    dlock_lock *other = take(c, "sem:claim", 60000, &o);
    struct sem_waiter *t =
        queue_client_waiter(redis, client_on(server.url), "sem:claim", 2, 1, 3000);
    long long before = script_calls(redis);
    redisReply *score;

    assert_int_equal(dlock_lock_release(holder), 0);
    join_thread(t);
    assert_int_equal(t->rc, 0);
    assert_int_equal(script_calls(redis) - before, 2); /* the release, the claim: no try */
    assert_true(dlock_lock_validity_ms(t->lock) > 3000);
    score = run(redis, "ZSCORE sem:claim %s", dlock_lock_token(t->lock));
    assert_true(strtoll(score->str, NULL, 10) - server_ms(redis) > 3000);
    freeReplyObject(score);
    assert_int_equal(dlock_lock_release(t->lock), 0);
    assert_int_equal(dlock_lock_release(other), 0);
    assert_no_queue(redis, "sem:claim");
}

/* A waiter that died while queued, asking for a hand-over, is handed the
 * permit it is owed, and holds it no longer than what was left of its
 * lease (800 ms, longer on a slow build, so that it is still owed the
 * permit when the live waiter behind it has queued): the live waiter
 * (lease 1.5 s, so it tries every 500 ms) gets it then. Two permits: one
 * is a mutex. */
static void test_sem_permit_handed_to_a_dead_waiter_frees_within_its_lease(void **state)
{
    redisContext *redis = *state;
    const char *dead = "0123456789abcdef0123456789abcdef";
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *holder = take(c, "sem:dead-handed", 60000, &o);
    dlock_lock *other = take(c, "sem:dead-handed", 60000, &o);
    long long now = server_ms(redis), at = test_now_ms(), handed_at;
    long long dead_lease = 800LL * test_slowdown();
    struct sem_waiter *live;
    redisReply *score;

    freeReplyObject(run(redis, "ZADD %s 1 %s", aux_key("sem:dead-handed", "waiters"), dead));
    freeReplyObject(run(redis, "ZADD %s %lld %s", aux_key("sem:dead-handed", "waiter-leases"),
                        now + dead_lease, dead));
    freeReplyObject(run(redis, "HSET %s %s %s", aux_key("sem:dead-handed", "waiter-wake"), dead,
                        "gone:1\n30000 60000 2 {\"host\":\"gone\",\"pid\":1,\"since\":5}"));
    live = queue_client_waiter(redis, client_on(server.url), "sem:dead-handed", 2, 2, 1500);
    assert_int_equal(dlock_lock_release(holder), 0);
    handed_at = test_now_ms();
    score = run(redis, "ZSCORE sem:dead-handed %s", dead);
    assert_int_equal(score->type, REDIS_REPLY_STRING);
    assert_true(strtoll(score->str, NULL, 10) <= now + dead_lease);
    freeReplyObject(score);
    assert_false(atomic_load(&live->done));
    wait_done(live);
    assert_true(test_now_ms() - at >= dead_lease - 10);
    assert_true(test_now_ms() - handed_at < dead_lease + 500 + 2000LL * test_slowdown());
    join_thread(live);
    assert_int_equal(dlock_lock_release(live->lock), 0);
    assert_int_equal(dlock_lock_release(other), 0);
    assert_no_queue(redis, "sem:dead-handed");
}

/* A waiter that gives up leaves the queue at once, rather than when its
 * lease ends. */
static void test_sem_waiter_that_gives_up_leaves_the_queue(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *holder = take(c, "sem:give-up", 60000, &o);
    dlock_lock *other = take(c, "sem:give-up", 60000, &o);

    o.wait_ms = 300;
    o.lease_ms = 60000;
    expect_acquire(DLOCK_EBUSY, c, "sem:give-up", 30000, &o);
    assert_no_queue(redis, "sem:give-up");
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_int_equal(dlock_lock_release(other), 0);
}

static atomic_int lost_reason;

static void on_lost(dlock_lock *lock, int reason, void *arg)
{
    (void)lock;
    (void)arg;
    atomic_store(&lost_reason, reason);
}

/* A permit removed behind the holder's back is a loss, told at the next
 * renewal (ttl/3). */
static void test_sem_removed_permit_is_lost(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(2);
    dlock_lock *l;
    long long start;

    o.auto_renew = 1;
    o.on_lost = on_lost;
    l = take(c, "sem:lost", 600, &o);
    freeReplyObject(run(redis, "ZREM sem:lost %s", dlock_lock_token(l)));
    start = test_now_ms();
    while (atomic_load(&lost_reason) == 0 && test_now_ms() - start < 600LL * test_slowdown())
        usleep(5000);
    assert_int_equal(atomic_load(&lost_reason), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock_held(l), 0);
    assert_int_equal(dlock_lock_release(l), DLOCK_ELOST);
}

static void test_sem_bad_permits(void **state)
{
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = permits_options(DLOCK_PERMITS_MAX + 1);
    expect_acquire(DLOCK_EINVAL, c, "sem:bad", 30000, &o);
    assert_non_null(strstr(dlock_client_errmsg(c), "permits must be from 1 to"));
    /* A lease out of range is refused whether the acquire waits or not. */
    o = permits_options(3);
    for (int wait = 0; wait < 2; wait++) {
        o.wait_ms = wait ? 1000 : 0;
        o.lease_ms = DLOCK_LEASE_MIN_MS - 1;
        expect_acquire(DLOCK_EINVAL, c, "sem:bad", 30000, &o);
        assert_non_null(strstr(dlock_client_errmsg(c), "lease_ms must be"));
        o.lease_ms = DLOCK_LEASE_MAX_MS + 1;
        expect_acquire(DLOCK_EINVAL, c, "sem:bad", 30000, &o);
    }
    assert_false(key_exists(*state, "sem:bad"));
}

/* Fences grow per slot: 200 acquisitions, then a restart without
 * persistence, then a restart from an older snapshot. */
static uint64_t last_fence[4];

static void acquire_round(dlock_client *c, int rounds)
{
    dlock_acquire_options o = permits_options(4);
    for (int i = 0; i < rounds; i++) {
        dlock_lock *l[2];
        for (int j = 0; j < 2; j++) {
            unsigned slot;
            l[j] = take(c, "sem:fence", 30000, &o);
            slot = dlock_lock_slot(l[j]);
            if (dlock_lock_fence(l[j]) <= last_fence[slot])
                fail_msg("slot %u: fence %" PRIu64 " after %" PRIu64, slot,
                         dlock_lock_fence(l[j]), last_fence[slot]);
            last_fence[slot] = dlock_lock_fence(l[j]);
        }
        for (int j = 0; j < 2; j++) {
            assert_int_equal(dlock_lock_release(l[j]), 0);
            cleanup_now(l[j]); /* 200 rounds: each gives its locks back */
        }
    }
}

static void test_sem_fences_grow_per_slot_across_restarts(void **state)
{
    test_redis *r = start_servers(1);
    dlock_client *c = client_on(r->url);
    (void)state;
    acquire_round(c, 100); /* 200 acquisitions */
    assert_int_equal(test_redis_restart(r), 0);
    acquire_round(c, 5);
    freeReplyObject(run(connect_to(r), "SAVE"));
    acquire_round(c, 5);
    assert_int_equal(test_redis_restart(r), 0); /* SIGKILL: back to the snapshot */
    acquire_round(c, 5);
}

/* With several servers a semaphore is refused with the reason, and nothing
 * is written anywhere. */
static void test_sem_several_servers_refused(void **state)
{
    dlock_acquire_options o = permits_options(2);
    (void)state;
    assert_refused_by_three(&o, "sem:redlock", "majority");
}

/* `name`'s status in words starts with `start` (what follows is time). */
static void assert_described(dlock_client *c, const char *name, const char *start)
{
    dlock_status *st = NULL;
    char words[256];
    assert_int_equal(dlock_status_query(&st, c, name), 0);
    assert_int_equal(dlock_status_describe(st, words, sizeof(words)), 0);
    if (strncmp(words, start, strlen(start)) != 0)
        fail_msg("%s: \"%s\", not \"%s...\"", name, words, start);
    dlock_status_free(st);
}

/* A semaphore's permits, a mutex's holder, shared holders, a key that
 * another client SET, a free name: each in its kind's words. */
static void test_sem_status_describes_each_kinds_holders(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options three = permits_options(3), one = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_acquire_options shared = shared_options(0);
    char host[256] = "", start[400];
    gethostname(host, sizeof(host) - 1);
    take(c, "describe:sem", 30000, &three);
    take(c, "describe:sem", 30000, &three);
    take(c, "describe:mutex", 30000, &one);
    take(c, "describe:shared", 30000, &shared);
    take(c, "describe:shared", 30000, &shared);
    freeReplyObject(run(redis, "SET describe:other x"));

    assert_described(c, "describe:sem", "2 of its 3 permits held, the first to expire in ");
    snprintf(start, sizeof(start), "held by %s pid %ld since ", host, (long)getpid());
    assert_described(c, "describe:mutex", start);
    snprintf(start, sizeof(start), "held shared by 2 holders (one: %s pid %ld), the last to expire in ",
             host, (long)getpid());
    assert_described(c, "describe:shared", start);
    assert_described(c, "describe:other",
                     "held by another client (no owner record), never expires (no TTL)");
    assert_described(c, "describe:free", "not held");
    assert_int_equal(dlock_status_describe(NULL, start, sizeof(start)), DLOCK_EINVAL);
    freeReplyObject(run(redis, "DEL describe:other"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
#define U(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_sem_three_holders_distinct_slots_fourth_busy),
        T(test_sem_other_limit_refused_naming_the_limit_in_force),
        T(test_sem_wrong_kind_both_ways_writes_nothing),
        T(test_sem_release_extend_by_token),
        T(test_sem_dead_permit_frees_after_its_ttl),
        T(test_sem_release_wakes_a_waiter),
        T(test_sem_release_hands_its_permit_to_the_next_waiter_alone),
        T(test_sem_hand_over_claimed_when_the_ttl_outlasts_the_lease),
        T(test_sem_waiter_with_a_restart_delay_is_told_and_tries),
        T(test_sem_permit_handed_to_a_dead_waiter_frees_within_its_lease),
        T(test_sem_free_permit_kept_for_a_waiter_until_its_lease_ends),
        T(test_sem_waiter_that_gives_up_leaves_the_queue),
        T(test_sem_removed_permit_is_lost),
        T(test_sem_bad_permits),
        U(test_sem_fences_grow_per_slot_across_restarts),
        U(test_sem_several_servers_refused),
        T(test_sem_status_describes_each_kinds_holders),
    };
#undef T
#undef U
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
