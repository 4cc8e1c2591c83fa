/* Fair locks against a real redis-server, the queue: grants in queue
 * order, a dead head costs at most its presence lease, a slow head keeps
 * its place, a release wakes the head only (requests per grant by
 * MONITOR), plain acquires do not pass the queue, waiters that give up
 * leave it, and several servers are refused. The hand-over itself:
 * test_fair_handover.c. */
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

/* `dlock run --fair --lease LEASE NAME -c 'echo ID >>LOG'`, started; with
 * no lease, `dlock run NAME ...`: a plain mutex that waits. */
static cli_proc *start_fair_run(const char *name, const char *lease, int id, const char *log)
{
    char script[600];
    snprintf(script, sizeof(script), "echo %d >>%s", id, log);
    if (!lease)
        return start_cli(server.url, (const char *const[]){"run", name, "-c", script, NULL},
                         NULL);
    return start_cli(server.url,
                     (const char *const[]){"run", "--fair", "--lease", lease, name, "-c", script,
                                           NULL},
                     NULL);
}

/* Two such runs queued on `name` in turn, ids 0 (the head) and 1. */
static void queue_two(redisContext *redis, cli_proc **head, cli_proc **next, const char *name,
                      const char *lease, const char *log)
{
    *head = start_fair_run(name, lease, 0, log);
    wait_for_queued(redis, name, 1);
    *next = start_fair_run(name, lease, 1, log);
    wait_for_queued(redis, name, 2);
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
    dlock_lock *holder = fair_holder(server.url, "fair:fifo", 5000);
    cli_proc *procs[RUNS];
    int ids[RUNS + 1] = {0};
    char log[160];

    scratch(log, sizeof(log), "fair-fifo");
    for (int i = 0; i < RUNS; i++) {
        procs[i] = start_fair_run("fair:fifo", "5s", i, log);
        wait_for_queued(redis, "fair:fifo", i + 1);
    }
    assert_int_equal(dlock_lock_release(holder), 0);
    for (int i = 0; i < RUNS; i++)
        assert_int_equal(cli_wait(procs[i], 30000 * test_slowdown()), 0);
    assert_int_equal(read_ids(log, ids, RUNS + 1), RUNS);
    for (int i = 0; i < RUNS; i++)
        assert_int_equal(ids[i], i);
    assert_int_equal(queue_length(redis, "fair:fifo"), 0);
}

/* The head SIGKILLed while it waits: the next waiter is granted within the
 * head's lease (1 s) and a renewal period after the release, not after the
 * lock's TTL (30 s). */
static void test_fair_dead_head_costs_at_most_its_lease(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder = fair_holder(server.url, "fair:dead", 1000);
    cli_proc *head, *next;
    char log[160];
    int ids[2] = {0};
    long long released, waited;

    scratch(log, sizeof(log), "fair-dead");
    queue_two(redis, &head, &next, "fair:dead", "1s", log);
    kill(head->pid, SIGKILL);
    released = test_now_ms();
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_int_equal(cli_wait(next, 30000), 0);
    waited = next->started_ms + next->took_ms - released;
    assert_true(waited < (1000LL + 1000 / 3 + 1500) * test_slowdown());
    assert_int_equal(cli_wait(head, 1000), 128 + SIGKILL);
    assert_int_equal(read_ids(log, ids, 2), 1);
    assert_int_equal(ids[0], 1);
}

/* A head stopped for half its lease (4 s) across the release keeps its
 * place: the release hands it the lock, which stays the head's while it
 * sleeps (the second waiter does not get it), and the head goes first
 * once it resumes. */
static void test_fair_slow_head_keeps_its_place(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder = fair_holder(server.url, "fair:slow", 4000);
    cli_proc *head, *next;
    char log[160];
    int ids[3] = {0};

    scratch(log, sizeof(log), "fair-slow");
    queue_two(redis, &head, &next, "fair:slow", "4s", log);
    kill(head->pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_true(held_by_pid(redis, "fair:slow", head->pid));
    usleep(1000 * 1000); /* the hand-over holds at least 4 s - 4 s / 3 */
    assert_true(held_by_pid(redis, "fair:slow", head->pid));
    usleep(1000 * 1000);
    kill(head->pid, SIGCONT);
    assert_int_equal(cli_wait(head, 30000), 0);
    assert_int_equal(cli_wait(next, 30000), 0);
    assert_int_equal(read_ids(log, ids, 3), 2);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 1);
}

/* What the waiters of a herd share with the test. */
struct herd {
    atomic_int granted; /* how many got the lock so far */
    atomic_bool go;     /* the first one granted may release */
};

struct waiter {
    dlock_client *c;
    int64_t ttl_ms;
    struct herd *herd;
    int rc;
};

/* Waits for the lock, fairly; the first one granted holds it until go. */
static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    dlock_acquire_options o = fair_options(60000, DLOCK_WAIT_FOREVER);
    dlock_lock *l = NULL;
    w->rc = dlock_lock_acquire(&l, w->c, "fair:herd", w->ttl_ms, &o);
    if (w->rc == 0) {
        if (atomic_fetch_add(&w->herd->granted, 1) == 0)
            while (!atomic_load(&w->herd->go) && !cleanup_stopping())
                usleep(1000);
        w->rc = dlock_lock_release(l);
    }
    dlock_lock_free(l);
    return NULL;
}

/* Reads MONITOR lines until one holds `marker`; counts the script calls
 * (EVALSHA or EVAL) among them. */
static int scripts_until(redisContext *monitor, const char *marker)
{
    int calls = 0;
    for (;;) {
        redisReply *r = NULL;
        int found;
        assert_int_equal(redisGetReply(monitor, (void **)&r), REDIS_OK);
        found = strstr(r->str, marker) != NULL;
        calls += !found && (strstr(r->str, "\"EVALSHA\"") || strstr(r->str, "\"EVAL\"") ||
                            strstr(r->str, "\"evalsha\"") || strstr(r->str, "\"eval\""));
        freeReplyObject(r);
        if (found)
            return calls;
    }
}

/* 64 waiters queued, one release: the requests of that grant, `expected`
 * of them, not one per waiter. The lease (60 s) puts every renewal
 * outside the window. */
static void herd(redisContext *redis, int64_t ttl_ms, int expected)
{
    enum { WAITERS = 64 };
    redisContext *monitor = connect_to(&server);
    dlock_lock *holder = fair_holder(server.url, "fair:herd", 60000);
    struct herd *h = cleanup_alloc(sizeof(*h));
    struct waiter *w[WAITERS];
    long long before, until;
    int calls;

    /* The extend script is cached: a head's claim is one EVALSHA. */
    assert_int_equal(dlock_lock_extend(holder, 30000), 0);
    before = script_calls(redis);
    for (int i = 0; i < WAITERS; i++) {
        struct waiter one = {client_on(server.url), ttl_ms, h, -1};
        w[i] = start_thread(wait_thread, &one, sizeof(one));
    }
    wait_for_queued(redis, "fair:herd", WAITERS);
    wait_for_script_calls(redis, before, 2LL * WAITERS);
    freeReplyObject(run(monitor, "MONITOR"));
    freeReplyObject(run(redis, "ECHO window-start"));
    scripts_until(monitor, "window-start");
    assert_int_equal(dlock_lock_release(holder), 0);
    until = test_now_ms() + 10000LL * test_slowdown();
    while (atomic_load(&h->granted) == 0 && test_now_ms() < until)
        usleep(1000);
    assert_int_equal(atomic_load(&h->granted), 1);
    freeReplyObject(run(redis, "ECHO window-end"));
    calls = scripts_until(monitor, "window-end");
    print_message("requests for one grant among %d waiters: %d\n", WAITERS, calls);
    assert_int_equal(calls, expected);
    atomic_store(&h->go, true);
    for (int i = 0; i < WAITERS; i++) {
        join_thread(w[i]);
        assert_int_equal(w[i]->rc, 0);
    }
    assert_int_equal(atomic_load(&h->granted), WAITERS);
    cleanup_now(monitor); /* left open, it would be fed the next herd's traffic */
}

/* The release hands the lock over: it is the grant's one request when the
 * head's TTL (30 s) is within its lease (60 s). A head that asked for more
 * (90 s) and no renewal claims it with an extend: two. */
static void test_fair_release_wakes_only_the_head(void **state)
{
    herd(*state, 30000, 1);
    herd(*state, 90000, 2);
}

/* A plain acquire does not pass a queue: a plain holder's release hands
 * the lock to the head (the mutex's release leaves it to the fair
 * release), which holds it even while it sleeps, so try-once says busy,
 * and the head gets it. A fair waiter that gives up leaves the queue at
 * once. */
static void test_fair_plain_acquire_does_not_barge(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options gives_up = fair_options(5000, 100);
    dlock_lock *holder = take(c, "fair:barge", 30000, NULL);
    cli_proc *head = start_cli(
        server.url, (const char *const[]){"run", "--fair", "fair:barge", "--", "sleep", "1", NULL},
        NULL);

    wait_for_queued(redis, "fair:barge", 1);
    expect_acquire(DLOCK_EBUSY, c, "fair:barge", 30000, &gives_up);
    assert_int_equal(queue_length(redis, "fair:barge"), 1);
    kill(head->pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_int_equal(key_exists(redis, "fair:barge"), 1); /* the sleeping head's */
    expect_acquire(DLOCK_EBUSY, c, "fair:barge", 30000, NULL);
    kill(head->pid, SIGCONT);
    assert_int_equal(cli_wait(head, 30000), 0);
    assert_int_equal(queue_length(redis, "fair:barge"), 0);
    take_and_release(c, "fair:barge", 30000, NULL);
}

/* Plain mutexes that wait on one server queue once refused, as fair
 * waiters: started one after another behind a holder, each seen in the
 * queue before the next, they are granted in that order. */
static void test_fair_waiting_mutexes_queue_in_order(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder = take(client_on(server.url), "fair:plain-order", 30000, NULL);
    cli_proc *runs[4];
    char log[512];
    int ids[4];

    scratch(log, sizeof(log), "fair-plain-order.log");
    for (int i = 0; i < 4; i++) {
        runs[i] = start_fair_run("fair:plain-order", NULL, i, log);
        wait_for_queued(redis, "fair:plain-order", i + 1);
    }
    assert_int_equal(dlock_lock_release(holder), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(cli_wait(runs[i], 30000), 0);
    assert_int_equal(read_ids(log, ids, 4), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(ids[i], i);
}

/* A plain holder's release with a waiter queued behind it hands the lock
 * on at once (the mutex's release leaves it to the fair release): the key
 * holds the head's token as soon as the release returns, rather than the
 * head finding a free lock at its next renewal. */
static void test_fair_plain_holder_hands_on_to_the_queue(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder = take(client_on(server.url), "fair:hand-on", 30000, NULL);
    char token[DLOCK_TOKEN_LEN + 1];
    cli_proc *head = start_cli(
        server.url, (const char *const[]){"run", "fair:hand-on", "--", "sleep", "1", NULL}, NULL);
    redisReply *r;

    wait_for_queued(redis, "fair:hand-on", 1);
    snprintf(token, sizeof(token), "%s", dlock_lock_token(holder));
    assert_int_equal(dlock_lock_release(holder), 0);
    r = kept_reply(run(redis, "GET fair:hand-on"));
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_not_equal(r->str, token);
    assert_int_equal(queue_length(redis, "fair:hand-on"), 0);
    assert_int_equal(cli_wait(head, 30000), 0);
}

/* A holder whose key expired (no renewal, no release: no script ran) with
 * a waiter queued: the free lock is the head's, to a plain acquire and to
 * a new shared holder alike, which learn of the queue from its mark in the
 * fence key, and a plain acquire names no key of the queue. */
static void test_fair_expired_holder_leaves_the_lock_to_the_queue(void **state)
{
    redisContext *redis = *state, *monitor = connect_to(&server);
    dlock_client *c = client_on(server.url);
    dlock_acquire_options shared = shared_options(0);
    dlock_lock *holder = take(c, "fair:expired", 300LL * test_slowdown(), NULL);
    cli_proc *head = start_cli(
        server.url, (const char *const[]){"run", "--fair", "fair:expired", "--", "true", NULL},
        NULL);
    redisReply *r;

    wait_for_queued(redis, "fair:expired", 1);
    kill(head->pid, SIGSTOP);
    while (key_exists(redis, "fair:expired"))
        usleep(10000);
    freeReplyObject(run(monitor, "MONITOR"));
    expect_acquire(DLOCK_EBUSY, c, "fair:expired", 30000, NULL);
    do { /* the acquire's script, as MONITOR saw it */
        assert_int_equal(redisGetReply(monitor, (void **)&r), REDIS_OK);
        kept_reply(r);
    } while (!strstr(r->str, "\"EVALSHA\""));
    assert_non_null(strstr(r->str, "\"3\" \"fair:expired\""));
    assert_null(strstr(r->str, ":dlock:queue:"));
    expect_acquire(DLOCK_EBUSY, c, "fair:expired", 30000, &shared);
    assert_int_equal(key_exists(redis, "fair:expired"), 0);
    kill(head->pid, SIGCONT);
    assert_int_equal(cli_wait(head, 30000), 0);
    assert_int_equal(dlock_lock_release(holder), DLOCK_ENOTOWNER);
    take_and_release(c, "fair:expired", 30000, NULL);
    take_and_release(c, "fair:expired", 30000, &shared);
}

/* The command: -n on a name a plain holder's release handed to its queue's
 * head (stopped) is busy (75), plain or fair; a bad lease is a usage
 * error. */
static void test_fair_cli_nowait_on_a_queued_name_is_busy(void **state)
{
    redisContext *redis = *state;
    dlock_lock *holder = take(client_on(server.url), "fair:cli", 30000, NULL);
    cli_proc *head = start_cli(
        server.url, (const char *const[]){"run", "--fair", "fair:cli", "--", "true", NULL}, NULL);
    cli_proc p;

    wait_for_queued(redis, "fair:cli", 1);
    kill(head->pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(holder), 0);
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "fair:cli"), 75);
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--fair", "-n", "fair:cli"), 75);
    assert_int_equal(queue_length(redis, "fair:cli"), 0); /* handed to the stopped head */
    kill(head->pid, SIGCONT);
    assert_int_equal(cli_wait(head, 30000), 0);
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--fair", "--lease", "5ms", "fair:cli"), 64);
    assert_non_null(strstr(p.err, "--lease"));
}

/* Fair is one server's queue: refused on three, and a lease too short for
 * renewals is refused on one. */
static void test_fair_several_servers_refused(void **state)
{
    dlock_acquire_options o = fair_options(0, 0);
    dlock_client *c;
    (void)state;
    assert_refused_by_three(&o, "fair:redlock", "one server");
    o.lease_ms = 10;
    c = client_on(server.url);
    expect_acquire(DLOCK_EINVAL, c, "fair:lease", 30000, &o);
    assert_non_null(strstr(dlock_client_errmsg(c), "lease"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
#define U(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_fair_sixteen_granted_in_queue_order),
        T(test_fair_dead_head_costs_at_most_its_lease),
        T(test_fair_slow_head_keeps_its_place),
        T(test_fair_release_wakes_only_the_head),
        T(test_fair_plain_acquire_does_not_barge),
        T(test_fair_expired_holder_leaves_the_lock_to_the_queue),
        T(test_fair_waiting_mutexes_queue_in_order),
        T(test_fair_plain_holder_hands_on_to_the_queue),
        T(test_fair_cli_nowait_on_a_queued_name_is_busy),
        U(test_fair_several_servers_refused),
    };
#undef T
#undef U
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
