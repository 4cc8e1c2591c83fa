/* Fair locks against a real redis-server: grants in queue order, a dead
 * head costs at most its presence lease, a slow head keeps its place, a
 * release wakes the head only (requests per grant by MONITOR), plain
 * acquires do not pass the queue, waiters that give up leave it, and
 * several servers are refused. */
#include "cli_runner.h"
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
 * place: the second waiter does not get the lock while it sleeps, and the
 * head goes first once it resumes. */
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
    usleep(2000 * 1000);
    assert_int_equal(key_exists(redis, "fair:slow"), 0);
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
    atomic_int *granted; /* how many got the lock so far */
    atomic_bool *go;     /* the head may release */
    int rc;
};

/* Waits for the lock, fairly; the first one granted holds it until *go. */
static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    dlock_client_options co = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_acquire_options o = fair(60000, DLOCK_WAIT_FOREVER);
    dlock_client *c = NULL;
    dlock_lock *l = NULL;
    co.urls = &w->url;
    co.n_urls = 1;
    w->rc = dlock_client_open(&c, &co, NULL, 0);
    if (w->rc == 0)
        w->rc = dlock_lock_acquire(&l, c, "fair:herd", 30000, &o);
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

/* 64 waiters queued, one release: the release and the head's acquire are
 * all the requests of that grant (at most 3), not one per waiter. The lease
 * (60 s) puts every renewal outside the window. */
static void test_fair_release_wakes_only_the_head(void **state)
{
    enum { WAITERS = 64 };
    redisContext *redis = *state, *monitor = test_redis_connect(&server, NULL);
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(60000, 0);
    dlock_lock *holder = must_acquire(c, "fair:herd", 30000, &o);
    pthread_t threads[WAITERS];
    struct waiter w[WAITERS];
    atomic_int granted = 0;
    atomic_bool go = false;
    redisReply *r;
    long long until;
    int calls;

    for (int i = 0; i < WAITERS; i++) {
        w[i] = (struct waiter){server.url, &granted, &go, -1};
        assert_int_equal(pthread_create(&threads[i], NULL, wait_thread, &w[i]), 0);
    }
    wait_queued(redis, "fair:herd", WAITERS);
    usleep(200 * 1000); /* the last ones' second try (after subscribing) is over */
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
    assert_true(calls >= 2 && calls <= 3);
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

/* A plain acquire does not pass a queue: try-once says busy while the lock
 * is free for the head, and the head gets it. A fair waiter that gives up
 * leaves the queue at once. */
static void test_fair_plain_acquire_does_not_barge(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(5000, 0), gives_up = fair(5000, 100);
    dlock_lock *holder = must_acquire(c, "fair:barge", 30000, &o), *plain = NULL, *late = NULL;
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
 * fair, while the lock itself is free; a bad lease is a usage error. */
static void test_fair_cli_nowait_on_a_queued_name_is_busy(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = fair(5000, 0);
    dlock_lock *holder = must_acquire(c, "fair:cli", 30000, &o);
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
        T(test_fair_plain_acquire_does_not_barge),
        T(test_fair_cli_nowait_on_a_queued_name_is_busy),
        cmocka_unit_test(test_fair_several_servers_refused),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
