/* Fair locks against a real redis-server, the hand-over: its validity and
 * claim (retried within the lease when it fails), and the hand-overs that
 * are not taken: one that is not this wait's, one that came before a try
 * that failed, one that lapsed, one that a garbled fence forbids; a
 * waiter whose subscription broke tries at once. The queue itself:
 * test_fair.c. */
#include "helpers.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define server group_server

/* One fair acquire on a thread of its own client: the lock it got. */
struct taker {
    const char *name;
    int64_t ttl_ms;
    dlock_acquire_options opts;
    dlock_client *c;
    dlock_lock *lock;
    int rc;
    atomic_bool done;
};

static void *take_thread(void *arg)
{
    struct taker *t = arg;
    t->rc = dlock_lock_acquire(&t->lock, t->c, t->name, t->ttl_ms, &t->opts);
    kept_lock(t->lock);
    atomic_store(&t->done, true);
    return NULL;
}

/* A taker of `name` for `ttl_ms` with `opts`, on `c`: started on a thread,
 * and waited for until it is queued and listens (its join and its second
 * try ran). */
static struct taker *start_taker(redisContext *redis, const char *name, int64_t ttl_ms,
                                 dlock_acquire_options opts, dlock_client *c)
{
    struct taker t = {.name = name, .ttl_ms = ttl_ms, .opts = opts, .c = c};
    long long before = script_calls(redis);
    struct taker *started = start_thread(take_thread, &t, sizeof(t));
    wait_for_script_calls(redis, before, 2);
    return started;
}

/* A fair holder of `name` (lease 5 s), into *holder, and a taker queued
 * behind it on a client of its own. */
static struct taker *queue_behind(redisContext *redis, dlock_lock **holder, const char *name,
                                  int64_t ttl_ms, dlock_acquire_options opts)
{
    *holder = fair_holder(server.url, name, 5000);
    return start_taker(redis, name, ttl_ms, opts, client_on(server.url));
}

/* The same, and the holder's release hands the taker the lock. */
static struct taker *hand_over(redisContext *redis, const char *name, int64_t ttl_ms,
                               dlock_acquire_options opts)
{
    dlock_lock *holder;
    struct taker *t = queue_behind(redis, &holder, name, ttl_ms, opts);
    assert_int_equal(queue_length(redis, name), 1);
    assert_int_equal(dlock_lock_release(holder), 0);
    join_thread(t);
    assert_int_equal(t->rc, 0);
    assert_true(dlock_lock_fence(t->lock) > dlock_lock_fence(holder));
    assert_int_equal(queue_length(redis, name), 0);
    return t;
}

/* A lock handed over is the head's for at most its presence lease (3 s)
 * until claimed: an auto-renewed head holds it so (validity and key), and
 * its renewal claims the whole TTL (30 s) within a third of that; a head
 * without renewal claims it before its acquire returns; a TTL within the
 * lease (2 s) needs no claim. */
static void test_fair_hand_over_bounded_by_the_lease_until_claimed(void **state)
{
    redisContext *redis = *state;
    dlock_acquire_options renewing = fair_options(3000, 20000);
    struct taker *t;
    long long until;

    renewing.auto_renew = 1;
    t = hand_over(redis, "fair:hand", 30000, renewing);
    assert_true(dlock_lock_validity_ms(t->lock) <= 3000);
    assert_true(pttl_of(redis, "fair:hand") <= 3000);
    until = test_now_ms() + 5000LL * test_slowdown();
    while (pttl_of(redis, "fair:hand") <= 3000 && test_now_ms() < until)
        usleep(20 * 1000);
    assert_true(pttl_of(redis, "fair:hand") > 3000);
    assert_true(dlock_lock_validity_ms(t->lock) > 3000);
    assert_int_equal(dlock_lock_release(t->lock), 0);

    t = hand_over(redis, "fair:hand", 30000, fair_options(3000, 20000));
    assert_true(dlock_lock_validity_ms(t->lock) > 3000);
    assert_true(pttl_of(redis, "fair:hand") > 3000);
    assert_int_equal(dlock_lock_release(t->lock), 0);

    t = hand_over(redis, "fair:hand", 2000, fair_options(3000, 20000));
    assert_true(dlock_lock_validity_ms(t->lock) <= 2000);
    assert_true(pttl_of(redis, "fair:hand") <= 2000);
    assert_int_equal(dlock_lock_release(t->lock), 0);
}

static void count_loss(dlock_lock *lock, int reason, void *arg)
{
    (void)lock;
    (void)reason;
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* An auto-renewed lock handed over holds for the head's lease (2 s) until
 * its renewal claims it: a first renewal that fails (the head's network
 * silent for 1 s) is tried again within what is left of that, not at a
 * tenth of the TTL (3 s), and the lock is not lost. */
static void test_fair_hand_over_claim_retried_within_the_lease(void **state)
{
    redisContext *redis = *state;
    dlock_acquire_options claimed = fair_options(2000, 20000);
    dlock_lock *holder = fair_holder(server.url, "fair:retry", 5000);
    atomic_int *losses = cleanup_alloc(sizeof(*losses)); /* the renewal thread's */
    char url[64];
    fault_proxy *proxy = start_proxy(server.port, url, sizeof(url));
    struct taker *t;
    long long until;

    claimed.auto_renew = 1;
    claimed.on_lost = count_loss;
    claimed.on_lost_arg = losses;
    t = start_taker(redis, "fair:retry", 30000, claimed, client_with_timeouts(url, 0, 200));
    assert_int_equal(dlock_lock_release(holder), 0);
    join_thread(t);
    assert_int_equal(t->rc, 0);
    assert_true(pttl_of(redis, "fair:retry") <= 2000);
    fault_proxy_set(proxy, FAULT_BLACKHOLE, 0);
    usleep(1000 * 1000);
    fault_proxy_set(proxy, FAULT_PASS, 0);
    until = test_now_ms() + 5000LL * test_slowdown();
    while (dlock_lock_validity_ms(t->lock) <= 2000 && test_now_ms() < until)
        usleep(20 * 1000);
    assert_true(dlock_lock_validity_ms(t->lock) > 2000);
    assert_true(pttl_of(redis, "fair:retry") > 2000);
    assert_int_equal(atomic_load(losses), 0);
    assert_true(dlock_lock_held(t->lock));
    assert_int_equal(dlock_lock_release(t->lock), 0);
}

/* A "grant:" message that is not this wait's (the lease end it names is
 * not the one the waiter was told) is not taken for the lock, although the
 * validity it would give (TTL 3 s, within the lease) has not run out: the
 * waiter tries, finds the lock held and waits on; the holder's release
 * then hands it the lock. */
static void test_fair_foreign_hand_over_not_taken(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder;
    struct taker *t = queue_behind(redis, &holder, "fair:stale", 3000, fair_options(5000, 20000));
    redisReply *head, *entry, *sent;
    char channel[512];

    head = kept_reply(run(redis, "ZRANGE %s 0 0", aux_key("fair:stale", "queue")));
    assert_int_equal(head->elements, 1);
    entry = kept_reply(
        run(redis, "HGET %s %s", aux_key("fair:stale", "wake"), head->element[0]->str));
    assert_non_null(strchr(entry->str, '\n'));
    snprintf(channel, sizeof(channel), "%s:%.*s", aux_key("fair:stale", "released"),
             (int)(strchr(entry->str, '\n') - entry->str), entry->str);
    sent = kept_reply(run(redis, "SPUBLISH %s grant:%s:%llu:12345", channel, head->element[0]->str,
                          (unsigned long long)dlock_lock_fence(holder) + 1));
    assert_int_equal(sent->integer, 1); /* the waiter listens */
    usleep(500 * 1000);
    assert_false(atomic_load(&t->done));
    assert_int_equal(queue_length(redis, "fair:stale"), 1);
    assert_int_equal(dlock_lock_extend(holder, 30000), 0);
    assert_int_equal(dlock_lock_release(holder), 0);
    join_thread(t);
    assert_int_equal(t->rc, 0);
    assert_true(dlock_lock_fence(t->lock) > dlock_lock_fence(holder));
    assert_int_equal(dlock_lock_release(t->lock), 0);
}

/* A waiter whose connections break (reset by the proxy) while the lock is
 * handed to it has lost the message: it tries at once once it can reach
 * the server again, and takes the lock, rather than at its next renewal
 * (a third of its 30 s lease; no backoff poll comes sooner). */
static void test_fair_broken_subscription_tries_at_once(void **state)
{
    redisContext *redis = *state;
    dlock_acquire_options waiting = fair_options(30000, 60000);
    dlock_lock *holder = fair_holder(server.url, "fair:reset", 30000);
    char url[64];
    fault_proxy *proxy = start_proxy(server.port, url, sizeof(url));
    struct taker *t;
    long long passed;

    waiting.backoff_max_ms = 30000; /* no poll in between */
    t = start_taker(redis, "fair:reset", 30000, waiting, client_on(url));
    fault_proxy_set(proxy, FAULT_RESET, 0);
    usleep(100 * 1000);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_true(held_by_pid(redis, "fair:reset", getpid()));
    fault_proxy_set(proxy, FAULT_PASS, 0);
    passed = test_now_ms();
    join_thread(t);
    assert_int_equal(t->rc, 0);
    assert_true(test_now_ms() - passed < 3000LL * test_slowdown());
    assert_true(fault_proxy_hits(proxy) > 0);
    assert_int_equal(dlock_lock_release(t->lock), 0);
}

/* A stored fence that is not a token: the release hands nothing over (and
 * writes no fence); the head's own acquire reports the key. */
static void test_fair_garbled_fence_hands_nothing_over(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder;
    struct taker *t = queue_behind(redis, &holder, "fair:garbled", 3000, fair_options(5000, 1000));
    char fence[128];

    snprintf(fence, sizeof(fence), "%s", aux_key("fair:garbled", "fence"));
    freeReplyObject(run(redis, "SET %s nan", fence));
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_false(key_exists(redis, "fair:garbled"));
    join_thread(t);
    assert_int_equal(t->rc, DLOCK_ESERVER);
    assert_non_null(strstr(dlock_client_errmsg(t->c), "fair:garbled"));
    assert_false(key_exists(redis, "fair:garbled"));
    assert_key_holds(redis, fence, "nan");
    freeReplyObject(run(redis, "DEL %s", fence));
}

/* A hand-over that came before a try of the head that failed is not taken:
 * that try's cleanup may have passed the lock on. The head's traffic goes
 * through a proxy that delays it by 2.5 s: the release hands it the lock,
 * its next try times out (0.3 s) and its cleanup follows; the hand-over's
 * message reaches it after that, and the cleanup reaches the server
 * later, handing the lock to the next waiter. When that one holds the
 * lock, the head does not believe it does; it gets the lock after. */
static void test_fair_hand_over_before_a_failed_try_not_taken(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder = fair_holder(server.url, "fair:failed", 6000);
    char url[64];
    fault_proxy *proxy = start_proxy(server.port, url, sizeof(url));
    struct taker *head = start_taker(redis, "fair:failed", 6000, fair_options(6000, 60000),
                                     client_with_timeouts(url, 0, 300));
    struct taker *next = start_taker(redis, "fair:failed", 6000, fair_options(6000, 60000),
                                     client_on(server.url));

    fault_proxy_set(proxy, FAULT_DELAY, 2500);
    assert_int_equal(dlock_lock_release(holder), 0);
    join_thread(next);
    assert_int_equal(next->rc, 0);
    assert_false(atomic_load(&head->done) && head->rc == 0 && dlock_lock_held(head->lock));
    assert_true(fault_proxy_hits(proxy) > 0);
    fault_proxy_set(proxy, FAULT_PASS, 0);
    assert_int_equal(dlock_lock_release(next->lock), 0);
    join_thread(head);
    assert_int_equal(head->rc, 0);
    assert_true(dlock_lock_fence(head->lock) > dlock_lock_fence(next->lock));
    assert_int_equal(dlock_lock_release(head->lock), 0);
}

/* `dlock run --fair --lease 1s fair:lapsed -c SCRIPT`, started. */
static cli_proc *start_lapsing(const char *script)
{
    return start_cli(server.url,
                     (const char *const[]){"run", "--fair", "--lease", "1s", "fair:lapsed", "-c",
                                           script, NULL},
                     NULL);
}

/* A head stopped past its lease (1 s) across the release: the lock handed
 * to it lapses, the next waiter gets it, and the head, resumed, does not
 * take the stale hand-over for the lock: it waits its turn again. The two
 * commands' intervals (start and end lines) do not overlap. */
static void test_fair_lapsed_hand_over_not_taken(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder = fair_holder(server.url, "fair:lapsed", 1000);
    cli_proc *head, *next;
    char log[160], script[2][400], line[32], lines[4][32];
    FILE *f;
    int n = 0;

    scratch(log, sizeof(log), "fair-lapsed");
    for (int i = 0; i < 2; i++)
        snprintf(script[i], sizeof(script[i]), "echo s%d >>%s; sleep 0.3; echo e%d >>%s", i, log,
                 i, log);
    head = start_lapsing(script[0]);
    wait_for_queued(redis, "fair:lapsed", 1);
    next = start_lapsing(script[1]);
    wait_for_queued(redis, "fair:lapsed", 2);
    kill(head->pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_true(held_by_pid(redis, "fair:lapsed", head->pid));
    assert_int_equal(cli_wait(next, 30000), 0);
    kill(head->pid, SIGCONT);
    assert_int_equal(cli_wait(head, 30000), 0);
    f = fopen(log, "r");
    assert_non_null(f);
    while (n < 4 && fgets(line, sizeof(line), f))
        snprintf(lines[n++], sizeof(lines[0]), "%s", line);
    fclose(f);
    assert_int_equal(n, 4);
    assert_string_equal(lines[0], "s1\n");
    assert_string_equal(lines[1], "e1\n");
    assert_string_equal(lines[2], "s0\n");
    assert_string_equal(lines[3], "e0\n");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_fair_hand_over_bounded_by_the_lease_until_claimed),
        T(test_fair_hand_over_claim_retried_within_the_lease),
        T(test_fair_foreign_hand_over_not_taken),
        T(test_fair_hand_over_before_a_failed_try_not_taken),
        T(test_fair_garbled_fence_hands_nothing_over),
        T(test_fair_broken_subscription_tries_at_once),
        T(test_fair_lapsed_hand_over_not_taken),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
