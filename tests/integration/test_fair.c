/* Fair locks against a real redis-server: grants in queue order, a dead
 * head costs at most its presence lease, a slow head keeps its place, a
 * release hands the lock to the head only (requests per grant by MONITOR),
 * the hand-over's validity and claim, a hand-over that lapsed or is not
 * this wait's is not taken, plain acquires do not pass the queue, waiters
 * that give up leave it, and several servers are refused. */
#include "cli_runner.h"
#include "fault_proxy.h"
#include "helpers.h"

#include <pthread.h>
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

static dlock_acquire_options fair(int64_t lease_ms, int64_t wait_ms)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    o.fair = 1;
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    return o;
}

/* How many wait in name's queue. */
static long long queued(redisContext *redis, const char *name)
{
    return zcard(redis, aux_key(name, "queue"));
}

/* Waits (10 s at most, times the slowdown) until n waiters queue on name. */
static void wait_queued(redisContext *redis, const char *name, long long n)
{
    wait_for_zcard(redis, aux_key(name, "queue"), n);
}

/* Script calls the server ran so far (EVALSHA and its EVAL fallback). */
static long long script_calls(redisContext *redis)
{
    return info_count(redis, "commandstats", "cmdstat_evalsha:calls=") +
           info_count(redis, "commandstats", "cmdstat_eval:calls=");
}

/* Waits (10 s at most, times the slowdown) until the server ran `n` script
 * calls since it had run `before`: a waiter's join and its second try,
 * once it listens, are two. */
static void wait_script_calls(redisContext *redis, long long before, long long n)
{
    long long until = test_now_ms() + 10000LL * test_slowdown();
    while (script_calls(redis) < before + n && test_now_ms() < until)
        usleep(5 * 1000);
    assert_true(script_calls(redis) >= before + n);
}

/* `dlock run --fair --lease LEASE NAME -c 'echo ID >>LOG'`, started. */
static void start_fair_run(cli_proc *p, const char *name, const char *lease, int id,
                           const char *log)
{
    char script[256];
    snprintf(script, sizeof(script), "echo %d >>%s", id, log);
    assert_int_equal(cli_start(p, server.url,
                               (const char *const[]){"run", "--fair", "--lease", lease, name, "-c",
                                                     script, NULL},
                               NULL),
                     0);
}

/* Two such runs queued on `name` in turn, ids 0 (the head) and 1. */
static void queue_two(redisContext *redis, cli_proc *head, cli_proc *next, const char *name,
                      const char *lease, const char *log)
{
    start_fair_run(head, name, lease, 0, log);
    wait_queued(redis, name, 1);
    start_fair_run(next, name, lease, 1, log);
    wait_queued(redis, name, 2);
}

/* Does the owner record of name's holder name process `pid`? */
static bool held_by_pid(redisContext *redis, const char *name, pid_t pid)
{
    char *record = get_string(redis, aux_key(name, "owner")), pid_field[32];
    bool yes;
    snprintf(pid_field, sizeof(pid_field), "\"pid\":%ld,", (long)pid);
    yes = record && strstr(record, pid_field);
    free(record);
    return yes;
}

/* The ids the runs wrote to `log`, in order, into ids; how many. */
static int read_ids(const char *log, int *ids, int max)
{
    FILE *f = fopen(log, "r");
    char line[32];
    int n = 0;
    assert_non_null(f);
    while (n < max && fgets(line, sizeof(line), f))
        ids[n++] = (int)strtol(line, NULL, 10);
    fclose(f);
    return n;
}

/* 16 runs, each started once the one before is seen in the queue (a lease
 * of 5 s: a busy machine cannot cost a place): granted in that order. */
static void test_fair_sixteen_granted_in_queue_order(void **state)
{
    enum { RUNS = 16 };
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(5000, 0);
    dlock_lock *holder = must_acquire(c, "fair:fifo", 30000, &o);
    cli_proc procs[RUNS];
    int ids[RUNS + 1] = {0};
    char log[160];

    scratch_path(log, sizeof(log), server.dir, "fair-fifo");
    for (int i = 0; i < RUNS; i++) {
        start_fair_run(&procs[i], "fair:fifo", "5s", i, log);
        wait_queued(redis, "fair:fifo", i + 1);
    }
    assert_int_equal(dlock_lock_release(holder), 0);
    for (int i = 0; i < RUNS; i++)
        assert_int_equal(cli_wait(&procs[i], 30000 * test_slowdown()), 0);
    assert_int_equal(read_ids(log, ids, RUNS + 1), RUNS);
    for (int i = 0; i < RUNS; i++)
        assert_int_equal(ids[i], i);
    assert_int_equal(queued(redis, "fair:fifo"), 0);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* The head SIGKILLed while it waits: the next waiter is granted within the
 * head's lease (1 s) and a renewal period after the release, not after the
 * lock's TTL (30 s). */
static void test_fair_dead_head_costs_at_most_its_lease(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(1000, 0);
    dlock_lock *holder = must_acquire(c, "fair:dead", 30000, &o);
    cli_proc head, next;
    char log[160];
    int ids[2] = {0};
    long long released, waited;

    scratch_path(log, sizeof(log), server.dir, "fair-dead");
    queue_two(redis, &head, &next, "fair:dead", "1s", log);
    kill(head.pid, SIGKILL);
    released = test_now_ms();
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_int_equal(cli_wait(&next, 30000), 0);
    waited = next.started_ms + next.took_ms - released;
    assert_true(waited < (1000LL + 1000 / 3 + 1500) * test_slowdown());
    assert_int_equal(cli_wait(&head, 1000), 128 + SIGKILL);
    assert_int_equal(read_ids(log, ids, 2), 1);
    assert_int_equal(ids[0], 1);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* A head stopped for half its lease (4 s) across the release keeps its
 * place: the release hands it the lock, which stays the head's while it
 * sleeps (the second waiter does not get it), and the head goes first
 * once it resumes. */
static void test_fair_slow_head_keeps_its_place(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(4000, 0);
    dlock_lock *holder = must_acquire(c, "fair:slow", 30000, &o);
    cli_proc head, next;
    char log[160];
    int ids[3] = {0};

    scratch_path(log, sizeof(log), server.dir, "fair-slow");
    queue_two(redis, &head, &next, "fair:slow", "4s", log);
    kill(head.pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_true(held_by_pid(redis, "fair:slow", head.pid));
    usleep(1000 * 1000); /* the hand-over holds at least 4 s - 4 s / 3 */
    assert_true(held_by_pid(redis, "fair:slow", head.pid));
    usleep(1000 * 1000);
    kill(head.pid, SIGCONT);
    assert_int_equal(cli_wait(&head, 30000), 0);
    assert_int_equal(cli_wait(&next, 30000), 0);
    assert_int_equal(read_ids(log, ids, 3), 2);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 1);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

struct waiter {
    const char *url;
    int64_t ttl_ms, lease_ms;
    atomic_int *granted; /* how many got the lock so far */
    atomic_bool *go;     /* the head may release */
    int rc;
};

/* Waits for the lock, fairly; the first one granted holds it until *go. */
static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    dlock_client_options co = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_acquire_options o = fair(w->lease_ms, DLOCK_WAIT_FOREVER);
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    co.urls = &w->url;
    co.n_urls = 1;
    w->rc = dlock_client_open(&c, &co, NULL, 0);
    if (w->rc == 0)
        w->rc = dlock_lock_acquire(&l, c, "fair:herd", w->ttl_ms, &o);
    if (w->rc == 0) {
        if (atomic_fetch_add(w->granted, 1) == 0)
            while (!atomic_load(w->go))
                usleep(1000);
        w->rc = dlock_lock_release(l);
    }
    dlock_lock_free(l);
    dlock_client_close(c);
    return NULL;
}

/* Reads MONITOR lines until one holds `marker`; counts the script calls
 * (EVALSHA or EVAL) among them. */
static int scripts_until(redisContext *monitor, const char *marker)
{
    int calls = 0;
    for (;;) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(monitor, (void **)&r), REDIS_OK);
        if (strstr(r->str, marker)) {
            freeReplyObject(r);
            return calls;
        }
        calls += strstr(r->str, "\"EVALSHA\"") || strstr(r->str, "\"EVAL\"") ||
                 strstr(r->str, "\"evalsha\"") || strstr(r->str, "\"eval\"");
        freeReplyObject(r);
    }
}

/* 64 waiters queued, one release: the requests of that grant, `expected`
 * of them, not one per waiter. The lease (60 s) puts every renewal
 * outside the window. */
static void herd(redisContext *redis, int64_t ttl_ms, int expected)
{
    enum { WAITERS = 64 };
    redisContext *monitor = test_redis_connect(&server, NULL);
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(60000, 0);
    dlock_lock *holder = must_acquire(c, "fair:herd", 30000, &o);
    long long before;
    pthread_t threads[WAITERS];
    struct waiter w[WAITERS];
    atomic_int granted = 0;
    atomic_bool go = false;
    redisReply *r;
    long long until;
    int calls;

    /* The extend script is cached: a head's claim is one EVALSHA. */
    assert_int_equal(dlock_lock_extend(holder, 30000), 0);
    before = script_calls(redis);
    for (int i = 0; i < WAITERS; i++) {
        w[i] = (struct waiter){server.url, ttl_ms, 60000, &granted, &go, -1};
        assert_int_equal(pthread_create(&threads[i], NULL, wait_thread, &w[i]), 0);
    }
    wait_queued(redis, "fair:herd", WAITERS);
    wait_script_calls(redis, before, 2LL * WAITERS);
    r = run(monitor, "MONITOR");
    freeReplyObject(r);
    freeReplyObject(run(redis, "ECHO window-start"));
    scripts_until(monitor, "window-start");
    assert_int_equal(dlock_lock_release(holder), 0);
    until = test_now_ms() + 10000LL * test_slowdown();
    while (atomic_load(&granted) == 0 && test_now_ms() < until)
        usleep(1000);
    assert_int_equal(atomic_load(&granted), 1);
    freeReplyObject(run(redis, "ECHO window-end"));
    calls = scripts_until(monitor, "window-end");
    print_message("requests for one grant among %d waiters: %d\n", WAITERS, calls);
    assert_int_equal(calls, expected);
    atomic_store(&go, true);
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(w[i].rc, 0);
    }
    assert_int_equal(atomic_load(&granted), WAITERS);
    redisFree(monitor);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* The release hands the lock over: it is the grant's one request when the
 * head's TTL (30 s) is within its lease (60 s). A head that asked for more
 * (90 s) and no renewal claims it with an extend: two. */
static void test_fair_release_wakes_only_the_head(void **state)
{
    herd(*state, 30000, 1);
    herd(*state, 90000, 2);
}

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
    atomic_store(&t->done, true);
    return NULL;
}

/* Starts `t` on a thread and waits until it is queued and listens (its
 * join and its second try ran). */
static void start_taker(redisContext *redis, struct taker *t, pthread_t *thread)
{
    long long before = script_calls(redis);
    assert_int_equal(pthread_create(thread, NULL, take_thread, t), 0);
    wait_script_calls(redis, before, 2);
}

/* `t` acquires `name` on a thread, queued behind a fair holder; the
 * holder's release hands it the lock. */
static void hand_over(redisContext *redis, struct taker *t)
{
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(5000, 0);
    dlock_lock *holder = must_acquire(c, t->name, 30000, &o);
    pthread_t thread;
    t->c = open_client(server.url, 0, 0);
    start_taker(redis, t, &thread);
    assert_int_equal(queued(redis, t->name), 1);
    assert_int_equal(dlock_lock_release(holder), 0);
    pthread_join(thread, NULL);
    assert_int_equal(t->rc, 0);
    assert_true(dlock_lock_fence(t->lock) > dlock_lock_fence(holder));
    assert_int_equal(queued(redis, t->name), 0);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

static void release_taker(struct taker *t)
{
    assert_int_equal(dlock_lock_release(t->lock), 0);
    dlock_lock_free(t->lock);
    dlock_client_close(t->c);
}

/* A lock handed over is the head's for at most its presence lease (3 s)
 * until claimed: an auto-renewed head holds it so (validity and key), and
 * its renewal claims the whole TTL (30 s) within a third of that; a head
 * without renewal claims it before its acquire returns; a TTL within the
 * lease (2 s) needs no claim. */
static void test_fair_hand_over_bounded_by_the_lease_until_claimed(void **state)
{
    redisContext *redis = *state;
    struct taker renewed = {.name = "fair:hand", .ttl_ms = 30000, .opts = fair(3000, 20000)};
    struct taker plain = {.name = "fair:hand", .ttl_ms = 30000, .opts = fair(3000, 20000)};
    struct taker short_ttl = {.name = "fair:hand", .ttl_ms = 2000, .opts = fair(3000, 20000)};
    long long until;

    renewed.opts.auto_renew = 1;
    hand_over(redis, &renewed);
    assert_true(dlock_lock_validity_ms(renewed.lock) <= 3000);
    assert_true(pttl_of(redis, "fair:hand") <= 3000);
    until = test_now_ms() + 5000LL * test_slowdown();
    while (pttl_of(redis, "fair:hand") <= 3000 && test_now_ms() < until)
        usleep(20 * 1000);
    assert_true(pttl_of(redis, "fair:hand") > 3000);
    assert_true(dlock_lock_validity_ms(renewed.lock) > 3000);
    release_taker(&renewed);

    hand_over(redis, &plain);
    assert_true(dlock_lock_validity_ms(plain.lock) > 3000);
    assert_true(pttl_of(redis, "fair:hand") > 3000);
    release_taker(&plain);

    hand_over(redis, &short_ttl);
    assert_true(dlock_lock_validity_ms(short_ttl.lock) <= 2000);
    assert_true(pttl_of(redis, "fair:hand") <= 2000);
    release_taker(&short_ttl);
}

/* The URL of the server through `proxy` (which must have started). */
static void proxy_url(const fault_proxy *proxy, char *url, size_t len)
{
    assert_non_null(proxy);
    snprintf(url, len, "redis://127.0.0.1:%d", fault_proxy_port(proxy));
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
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(5000, 0);
    dlock_lock *holder = must_acquire(c, "fair:retry", 30000, &o);
    fault_proxy *proxy = fault_proxy_start(server.port);
    struct taker t = {.name = "fair:retry", .ttl_ms = 30000, .opts = fair(2000, 20000)};
    atomic_int losses = 0;
    pthread_t thread;
    char url[64];
    long long until;

    proxy_url(proxy, url, sizeof(url));
    t.c = open_client(url, 0, 200);
    t.opts.auto_renew = 1;
    t.opts.on_lost = count_loss;
    t.opts.on_lost_arg = &losses;
    start_taker(redis, &t, &thread);
    assert_int_equal(dlock_lock_release(holder), 0);
    pthread_join(thread, NULL);
    assert_int_equal(t.rc, 0);
    assert_true(pttl_of(redis, "fair:retry") <= 2000);
    fault_proxy_set(proxy, FAULT_BLACKHOLE, 0);
    usleep(1000 * 1000);
    fault_proxy_set(proxy, FAULT_PASS, 0);
    until = test_now_ms() + 5000LL * test_slowdown();
    while (dlock_lock_validity_ms(t.lock) <= 2000 && test_now_ms() < until)
        usleep(20 * 1000);
    assert_true(dlock_lock_validity_ms(t.lock) > 2000);
    assert_true(pttl_of(redis, "fair:retry") > 2000);
    assert_int_equal(atomic_load(&losses), 0);
    assert_true(dlock_lock_held(t.lock));
    release_taker(&t);
    fault_proxy_stop(proxy);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* A "grant:" message that is not this wait's (the lease end it names is
 * not the one the waiter was told) is not taken for the lock, although the
 * validity it would give (TTL 3 s, within the lease) has not run out: the
 * waiter tries, finds the lock held and waits on; the holder's release
 * then hands it the lock. */
static void test_fair_foreign_hand_over_not_taken(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(5000, 0);
    dlock_lock *holder = must_acquire(c, "fair:stale", 30000, &o);
    struct taker t = {.name = "fair:stale", .ttl_ms = 3000, .opts = fair(5000, 20000)};
    pthread_t thread;
    redisReply *head, *entry, *sent;
    char channel[512];

    t.c = open_client(server.url, 0, 0);
    start_taker(redis, &t, &thread);
    head = run(redis, "ZRANGE %s 0 0", aux_key("fair:stale", "queue"));
    assert_int_equal(head->elements, 1);
    entry = run(redis, "HGET %s %s", aux_key("fair:stale", "wake"), head->element[0]->str);
    assert_non_null(strchr(entry->str, '\n'));
    snprintf(channel, sizeof(channel), "%s:%.*s", aux_key("fair:stale", "released"),
             (int)(strchr(entry->str, '\n') - entry->str), entry->str);
    sent = run(redis, "PUBLISH %s grant:%s:%llu:12345", channel, head->element[0]->str,
               (unsigned long long)dlock_lock_fence(holder) + 1);
    assert_int_equal(sent->integer, 1); /* the waiter listens */
    usleep(500 * 1000);
    assert_false(atomic_load(&t.done));
    assert_int_equal(queued(redis, "fair:stale"), 1);
    assert_int_equal(dlock_lock_extend(holder, 30000), 0);
    assert_int_equal(dlock_lock_release(holder), 0);
    pthread_join(thread, NULL);
    assert_int_equal(t.rc, 0);
    assert_true(dlock_lock_fence(t.lock) > dlock_lock_fence(holder));
    freeReplyObject(sent);
    freeReplyObject(head);
    freeReplyObject(entry);
    release_taker(&t);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* A waiter whose connections break (reset by the proxy) while the lock is
 * handed to it has lost the message: it tries at once once it can reach
 * the server again, and takes the lock, rather than at its next renewal
 * (a third of its 30 s lease; no backoff poll comes sooner). */
static void test_fair_broken_subscription_tries_at_once(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(30000, 0);
    dlock_lock *holder = must_acquire(c, "fair:reset", 30000, &o);
    fault_proxy *proxy = fault_proxy_start(server.port);
    struct taker t = {.name = "fair:reset", .ttl_ms = 30000, .opts = fair(30000, 60000)};
    pthread_t thread;
    char url[64];
    long long passed;

    proxy_url(proxy, url, sizeof(url));
    t.c = open_client(url, 0, 0);
    t.opts.backoff_max_ms = 30000; /* no poll in between */
    start_taker(redis, &t, &thread);
    fault_proxy_set(proxy, FAULT_RESET, 0);
    usleep(100 * 1000);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_true(held_by_pid(redis, "fair:reset", getpid()));
    fault_proxy_set(proxy, FAULT_PASS, 0);
    passed = test_now_ms();
    pthread_join(thread, NULL);
    assert_int_equal(t.rc, 0);
    assert_true(test_now_ms() - passed < 3000LL * test_slowdown());
    assert_true(fault_proxy_hits(proxy) > 0);
    release_taker(&t);
    fault_proxy_stop(proxy);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* A stored fence that is not a token: the release hands nothing over (and
 * writes no fence); the head's own acquire reports the key. */
static void test_fair_garbled_fence_hands_nothing_over(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(5000, 0);
    dlock_lock *holder = must_acquire(c, "fair:garbled", 30000, &o);
    struct taker t = {.name = "fair:garbled", .ttl_ms = 3000, .opts = fair(5000, 1000)};
    pthread_t thread;
    char fence[128], *stored;

    snprintf(fence, sizeof(fence), "%s", aux_key("fair:garbled", "fence"));
    t.c = open_client(server.url, 0, 0);
    start_taker(redis, &t, &thread);
    freeReplyObject(run(redis, "SET %s nan", fence));
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_false(key_exists(redis, "fair:garbled"));
    pthread_join(thread, NULL);
    assert_int_equal(t.rc, DLOCK_ESERVER);
    assert_non_null(strstr(dlock_client_errmsg(t.c), "fair:garbled"));
    assert_false(key_exists(redis, "fair:garbled"));
    stored = get_string(redis, fence);
    assert_string_equal(stored, "nan");
    free(stored);
    freeReplyObject(run(redis, "DEL %s", fence));
    dlock_client_close(t.c);
    dlock_lock_free(holder);
    dlock_client_close(c);
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
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(6000, 0);
    dlock_lock *holder = must_acquire(c, "fair:failed", 30000, &o);
    fault_proxy *proxy = fault_proxy_start(server.port);
    struct taker head = {.name = "fair:failed", .ttl_ms = 6000, .opts = fair(6000, 60000)};
    struct taker next = {.name = "fair:failed", .ttl_ms = 6000, .opts = fair(6000, 60000)};
    pthread_t threads[2];
    char url[64];

    proxy_url(proxy, url, sizeof(url));
    head.c = open_client(url, 0, 300);
    next.c = open_client(server.url, 0, 0);
    start_taker(redis, &head, &threads[0]);
    start_taker(redis, &next, &threads[1]);
    fault_proxy_set(proxy, FAULT_DELAY, 2500);
    assert_int_equal(dlock_lock_release(holder), 0);
    pthread_join(threads[1], NULL);
    assert_int_equal(next.rc, 0);
    assert_false(atomic_load(&head.done) && head.rc == 0 && dlock_lock_held(head.lock));
    assert_true(fault_proxy_hits(proxy) > 0);
    fault_proxy_set(proxy, FAULT_PASS, 0);
    assert_int_equal(dlock_lock_release(next.lock), 0);
    pthread_join(threads[0], NULL);
    assert_int_equal(head.rc, 0);
    assert_true(dlock_lock_fence(head.lock) > dlock_lock_fence(next.lock));
    dlock_lock_free(next.lock);
    dlock_client_close(next.c);
    release_taker(&head);
    fault_proxy_stop(proxy);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* A head stopped past its lease (1 s) across the release: the lock handed
 * to it lapses, the next waiter gets it, and the head, resumed, does not
 * take the stale hand-over for the lock: it waits its turn again. The two
 * commands' intervals (start and end lines) do not overlap. */
static void test_fair_lapsed_hand_over_not_taken(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(1000, 0);
    dlock_lock *holder = must_acquire(c, "fair:lapsed", 30000, &o);
    cli_proc head, next;
    char log[160], script[2][400], line[32], lines[4][32];
    FILE *f;
    int n = 0;

    scratch_path(log, sizeof(log), server.dir, "fair-lapsed");
    for (int i = 0; i < 2; i++)
        snprintf(script[i], sizeof(script[i]), "echo s%d >>%s; sleep 0.3; echo e%d >>%s", i, log,
                 i, log);
    assert_int_equal(cli_start(&head, server.url,
                               (const char *const[]){"run", "--fair", "--lease", "1s",
                                                     "fair:lapsed", "-c", script[0], NULL},
                               NULL),
                     0);
    wait_queued(redis, "fair:lapsed", 1);
    assert_int_equal(cli_start(&next, server.url,
                               (const char *const[]){"run", "--fair", "--lease", "1s",
                                                     "fair:lapsed", "-c", script[1], NULL},
                               NULL),
                     0);
    wait_queued(redis, "fair:lapsed", 2);
    kill(head.pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_true(held_by_pid(redis, "fair:lapsed", head.pid));
    assert_int_equal(cli_wait(&next, 30000), 0);
    kill(head.pid, SIGCONT);
    assert_int_equal(cli_wait(&head, 30000), 0);
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
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* A plain acquire does not pass a queue: try-once says busy while the lock
 * is free for the head (a plain holder's release hands nothing over), and
 * the head gets it. A fair waiter that gives up leaves the queue at once. */
static void test_fair_plain_acquire_does_not_barge(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options gives_up = fair(5000, 100);
    dlock_lock *holder = must_acquire(c, "fair:barge", 30000, NULL), *plain = NULL, *late = NULL;
    cli_proc head;

    assert_int_equal(cli_start(&head, server.url,
                               (const char *const[]){"run", "--fair", "fair:barge", "--", "sleep",
                                                     "1", NULL},
                               NULL),
                     0);
    wait_queued(redis, "fair:barge", 1);
    assert_int_equal(dlock_lock_acquire(&late, c, "fair:barge", 30000, &gives_up), DLOCK_EBUSY);
    assert_int_equal(queued(redis, "fair:barge"), 1);
    kill(head.pid, SIGSTOP); /* the lock stays free while the head sleeps */
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_int_equal(key_exists(redis, "fair:barge"), 0);
    assert_int_equal(dlock_lock_acquire(&plain, c, "fair:barge", 30000, NULL), DLOCK_EBUSY);
    kill(head.pid, SIGCONT);
    assert_int_equal(cli_wait(&head, 30000), 0);
    assert_int_equal(queued(redis, "fair:barge"), 0);
    plain = must_acquire(c, "fair:barge", 30000, NULL);
    assert_int_equal(dlock_lock_release(plain), 0);
    dlock_lock_free(plain);
    dlock_lock_free(holder);
    dlock_client_close(c);
}

/* The command: -n on a name with waiters queued is busy (75), plain or
 * fair, while the lock itself is free (a plain holder left it); a bad
 * lease is a usage error. */
static void test_fair_cli_nowait_on_a_queued_name_is_busy(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_lock *holder = must_acquire(c, "fair:cli", 30000, NULL);
    cli_proc head, p;

    assert_int_equal(cli_start(&head, server.url,
                               (const char *const[]){"run", "--fair", "fair:cli", "--", "true",
                                                     NULL},
                               NULL),
                     0);
    wait_queued(redis, "fair:cli", 1);
    kill(head.pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_int_equal(cli_run(&p, server.url, (const char *const[]){"acquire", "-n", "fair:cli", NULL},
                             10000),
                     75);
    assert_int_equal(cli_run(&p, server.url,
                             (const char *const[]){"acquire", "--fair", "-n", "fair:cli", NULL},
                             10000),
                     75);
    assert_int_equal(queued(redis, "fair:cli"), 1);
    kill(head.pid, SIGCONT);
    assert_int_equal(cli_wait(&head, 30000), 0);
    assert_int_equal(cli_run(&p, server.url,
                             (const char *const[]){"acquire", "--fair", "--lease", "5ms",
                                                   "fair:cli", NULL},
                             10000),
                     64);
    assert_non_null(strstr(p.err, "--lease"));
    dlock_lock_free(holder);
    dlock_client_close(c);
}

static void test_fair_several_servers_refused(void **state)
{
    test_redis r[3];
    const char *urls[3];
    dlock_client *c;
    dlock_acquire_options o = fair(0, 0);
    dlock_lock *l = NULL;
    (void)state;
    assert_int_equal(test_redis_start_all(r, 3), 0);
    for (int i = 0; i < 3; i++)
        urls[i] = r[i].url;
    c = open_nodes(urls, 3, 0, 0);
    assert_int_equal(dlock_lock_acquire(&l, c, "fair:redlock", 30000, &o), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_client_errmsg(c), "one server"));
    o.lease_ms = 10;
    dlock_client_close(c);
    c = open_client(r[0].url, 0, 0);
    assert_int_equal(dlock_lock_acquire(&l, c, "fair:lease", 30000, &o), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_client_errmsg(c), "lease"));
    dlock_client_close(c);
    test_redis_stop_all(r, 3);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, teardown_group_redis)
    const struct CMUnitTest tests[] = {
        T(test_fair_sixteen_granted_in_queue_order),
        T(test_fair_dead_head_costs_at_most_its_lease),
        T(test_fair_slow_head_keeps_its_place),
        T(test_fair_release_wakes_only_the_head),
        T(test_fair_hand_over_bounded_by_the_lease_until_claimed),
        T(test_fair_hand_over_claim_retried_within_the_lease),
        T(test_fair_foreign_hand_over_not_taken),
        T(test_fair_hand_over_before_a_failed_try_not_taken),
        T(test_fair_garbled_fence_hands_nothing_over),
        T(test_fair_broken_subscription_tries_at_once),
        T(test_fair_lapsed_hand_over_not_taken),
        T(test_fair_plain_acquire_does_not_barge),
        T(test_fair_cli_nowait_on_a_queued_name_is_busy),
        cmocka_unit_test(test_fair_several_servers_refused),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
