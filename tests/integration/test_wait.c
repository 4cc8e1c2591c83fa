/* Waiting: wake-on-release, prompt takeover after expiry, deadlines,
 * cancellation, retries through connection errors, and mutual exclusion
 * between threads and processes. */
#include "helpers.h"

#include <dlock.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* A waiter on its own thread and client; the test thread asserts on what it
 * recorded. */
struct waiter {
    const char *name;
    int64_t wait_ms;
    int backoff_max_ms;
    dlock_client *client;
    int rc;
    unsigned attempts;
    long long got_at_ms;
};

static void *wait_for_lock(void *arg)
{
    struct waiter *w = arg;
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock = NULL;
    opts.wait_ms = w->wait_ms;
    opts.backoff_max_ms = w->backoff_max_ms;
    w->rc = dlock_lock_acquire(&lock, w->client, w->name, 30000, &opts);
    w->got_at_ms = test_now_ms();
    if (w->rc == 0) {
        w->attempts = dlock_lock_attempts(lock);
        dlock_lock_release(lock);
        dlock_lock_free(lock);
    }
    return NULL;
}

/* A waiter for `name` on a client of its own on `url`, started. */
static struct waiter *start_waiter(const char *url, const char *name, int64_t wait_ms,
                                   int backoff_max_ms)
{
    struct waiter w = {name, wait_ms, backoff_max_ms, client_on(url), 0, 0, 0};
    return start_thread(wait_for_lock, &w, sizeof(w));
}

static void test_wait_wakes_on_release(void **state)
{
    test_redis *server = *state;
    dlock_lock *lock = take(client_on(server->url), "wait:release", 30000, NULL);
    struct waiter *w;
    long long released_at;

    /* TTL 30 s and a 10 s backoff: only the release message can wake it. */
    w = start_waiter(server->url, "wait:release", 20000, 10000);
    usleep(300 * 1000);
    released_at = test_now_ms();
    assert_int_equal(dlock_lock_release(lock), 0);
    join_thread(w);
    assert_int_equal(w->rc, 0);
    /* A try, a subscription and a try right after it (which queues it:
     * a release may have come before the subscription), then the release
     * hands it the lock: the third. */
    assert_int_equal(w->attempts, 3);
    assert_true(w->got_at_ms >= released_at);
    assert_true(w->got_at_ms - released_at < 2000LL * test_slowdown());
}

static void test_wait_takes_expired_lock_promptly(void **state)
{
    test_redis *server = *state;
    dlock_lock *lock = take(client_on(server->url), "wait:expiry", 500, NULL);
    long long start = test_now_ms();
    struct waiter *w;

    cleanup_now(lock); /* the holder "dies" without releasing */
    w = start_waiter(server->url, "wait:expiry", 20000, 10000);
    join_thread(w);
    assert_int_equal(w->rc, 0);
    assert_true(w->got_at_ms - start >= 400); /* not before the TTL ran out */
    assert_true(w->got_at_ms - start < 5000LL * test_slowdown()); /* the PTTL, not the backoff */
    assert_true(w->attempts >= 2 && w->attempts <= 3);
}

static void test_wait_deadline_returns_busy(void **state)
{
    test_redis *server = *state;
    dlock_lock *lock = take(client_on(server->url), "wait:deadline", 30000, NULL);
    long long start = test_now_ms();
    struct waiter *w = start_waiter(server->url, "wait:deadline", 300, 0);

    join_thread(w);
    assert_int_equal(w->rc, DLOCK_EBUSY); /* not an I/O timeout */
    assert_true(w->got_at_ms - start >= 300);
    assert_true(w->got_at_ms - start < 3000LL * test_slowdown());
    assert_int_equal(dlock_lock_release(lock), 0);
}

static void test_wait_cancel_from_another_thread(void **state)
{
    test_redis *server = *state;
    dlock_lock *lock = take(client_on(server->url), "wait:cancel", 30000, NULL);
    dlock_acquire_options opts = wait_options(100);
    struct waiter *w = start_waiter(server->url, "wait:cancel", DLOCK_WAIT_FOREVER, 0);
    long long canceled_at;

    usleep(200 * 1000);
    canceled_at = test_now_ms();
    dlock_client_cancel(w->client);
    join_thread(w);
    assert_int_equal(w->rc, DLOCK_ECANCELED);
    assert_true(w->got_at_ms - canceled_at < 2000LL * test_slowdown());

    /* A cancel with nobody waiting stops the next wait at once, once. */
    dlock_client_cancel(w->client);
    expect_acquire(DLOCK_ECANCELED, w->client, "wait:cancel", 30000, &opts);
    expect_acquire(DLOCK_EBUSY, w->client, "wait:cancel", 30000, &opts);
    assert_int_equal(dlock_lock_release(lock), 0);
}

static void test_wait_retries_through_connection_errors(void **state)
{
    test_redis *server = *state;
    dlock_acquire_options opts = wait_options(5000);
    struct waiter *w;
    long long start;

    test_redis_kill(server);
    start = test_now_ms();
    w = start_waiter(server->url, "wait:down", 400, 0);
    join_thread(w);
    assert_int_equal(w->rc, DLOCK_ECONN); /* the last cause, after the deadline */
    assert_true(w->got_at_ms - start >= 400);

    /* Unless told to wait for a busy lock only. */
    opts.no_io_retry = 1;
    start = test_now_ms();
    expect_acquire(DLOCK_ECONN, client_on(server->url), "wait:down", 30000, &opts);
    assert_true(test_now_ms() - start < 2000LL * test_slowdown());

    w = start_waiter(server->url, "wait:down", 20000, 0);
    usleep(300 * 1000);
    assert_int_equal(test_redis_restart(server), 0);
    join_thread(w);
    assert_int_equal(w->rc, 0);
    assert_true(w->attempts >= 2);
}

/* What on_retry saw of a wait for a busy lock; the callback asks who
 * holds it with another client, as the command's status line does. */
struct told {
    dlock_client *reader;
    atomic_int busy, others, saw_holder, saw_detail;
    atomic_llong longest_sleep_ms, shortest_sleep_ms;
};

static void tell(int code, const char *detail, int64_t retry_in_ms, void *arg)
{
    struct told *t = arg;
    dlock_status *st = NULL;
    if (code != DLOCK_EBUSY) {
        atomic_fetch_add(&t->others, 1);
        return;
    }
    atomic_fetch_add(&t->busy, 1);
    if (strstr(detail, "held by another owner"))
        atomic_fetch_add(&t->saw_detail, 1);
    if (retry_in_ms > atomic_load(&t->longest_sleep_ms))
        atomic_store(&t->longest_sleep_ms, retry_in_ms);
    if (retry_in_ms < atomic_load(&t->shortest_sleep_ms))
        atomic_store(&t->shortest_sleep_ms, retry_in_ms);
    if (dlock_status_query(&st, t->reader, "wait:told") == 0 && dlock_status_held(st))
        atomic_fetch_add(&t->saw_holder, 1);
    dlock_status_free(st);
}

struct release_when_told {
    struct told *told;
    dlock_lock *lock;
    int rc;
};

/* Releases the lock once the waiter was told of three busy sleeps (or 10
 * s, times the slowdown, if it is not). */
static void *release_when_told(void *arg)
{
    struct release_when_told *r = arg;
    long long until = test_now_ms() + 10000LL * test_slowdown();
    while (atomic_load(&r->told->busy) < 3 && test_now_ms() < until && !cleanup_stopping())
        usleep(10 * 1000);
    r->rc = dlock_lock_release(r->lock);
    return NULL;
}

static void cancel_on_busy(int code, const char *detail, int64_t retry_in_ms, void *arg)
{
    (void)detail;
    (void)retry_in_ms;
    if (code == DLOCK_EBUSY)
        dlock_client_cancel(arg);
}

/* A wait tells on_retry of each sleep after a busy try (DLOCK_EBUSY, the
 * detail, a sleep of at most backoff_max_ms), and the callback may ask
 * another client who holds the lock; the wait is one call in the counters
 * (one acquisition, one wait, nothing busy). The callback may cancel the
 * wait. */
static void test_wait_tells_on_retry_of_each_busy_sleep(void **state)
{
    test_redis *server = *state;
    dlock_client *holder = client_on(server->url);
    dlock_client *c = client_on(server->url);
    struct told *t = cleanup_alloc(sizeof(*t)); /* the callback's, on the waiting thread */
    struct release_when_told *later;
    dlock_acquire_options opts = wait_options(20000LL * test_slowdown());
    dlock_stats stats = {.version = DLOCK_STATS_VERSION};
    dlock_lock *lock;

    t->reader = client_on(server->url);
    t->shortest_sleep_ms = INT64_MAX;
    opts.backoff_max_ms = 200;
    opts.on_retry = tell;
    opts.on_retry_arg = t;
    later = start_thread(release_when_told,
                         &(struct release_when_told){t, take(holder, "wait:told", 30000, NULL), -1},
                         sizeof(struct release_when_told));
    lock = take(c, "wait:told", 30000, &opts);
    join_thread(later);
    assert_int_equal(later->rc, 0);
    assert_true(atomic_load(&t->busy) >= 3);
    assert_int_equal(atomic_load(&t->others), 0);
    assert_int_equal(atomic_load(&t->saw_detail), atomic_load(&t->busy));
    assert_int_equal(atomic_load(&t->saw_holder), atomic_load(&t->busy));
    assert_true(atomic_load(&t->shortest_sleep_ms) >= 1);
    assert_true(atomic_load(&t->longest_sleep_ms) <= 200);
    assert_int_equal(dlock_client_stats(c, &stats), 0);
    assert_int_equal(stats.acquisitions, 1);
    assert_int_equal(stats.busy, 0);
    assert_int_equal(stats.waits, 1);
    assert_int_equal(dlock_lock_release(lock), 0);

    lock = take(holder, "wait:told", 30000, NULL);
    opts.on_retry = cancel_on_busy;
    opts.on_retry_arg = c;
    expect_acquire(DLOCK_ECANCELED, c, "wait:told", 30000, &opts);
    assert_int_equal(dlock_lock_release(lock), 0);
}

static void test_wait_bad_options_refused(void **state)
{
    test_redis *server = *state;
    dlock_client *c = client_on(server->url);
    dlock_acquire_options opts;
    dlock_lock *lock = NULL;
    assert_int_equal(dlock_acquire_options_init(&opts, 42), DLOCK_EINVAL);
    assert_int_equal(dlock_acquire_options_init(&opts, DLOCK_ACQUIRE_OPTIONS_VERSION), 0);
    opts.wait_ms = -5;
    assert_int_equal(dlock_lock_acquire(&lock, c, "wait:opts", 1000, &opts), DLOCK_EINVAL);
    opts.wait_ms = 0;
    opts.backoff_max_ms = -1;
    assert_int_equal(dlock_lock_acquire(&lock, c, "wait:opts", 1000, &opts), DLOCK_EINVAL);
    opts.backoff_max_ms = 0;
    opts.max_hold_ms = 1000; /* without auto_renew */
    assert_int_equal(dlock_lock_acquire(&lock, c, "wait:opts", 1000, &opts), DLOCK_EINVAL);
    opts.auto_renew = 1;
    opts.max_hold_ms = 500; /* shorter than the TTL */
    assert_int_equal(dlock_lock_acquire(&lock, c, "wait:opts", 1000, &opts), DLOCK_EINVAL);
    opts.auto_renew = 0;
    opts.max_hold_ms = 0;
    opts.version = 9;
    assert_int_equal(dlock_lock_acquire(&lock, c, "wait:opts", 1000, &opts), DLOCK_EINVAL);
    assert_null(lock);
}

/* Mutual exclusion: a non-atomic read-sleep-write of a counter in a file,
 * inside the lock, from several threads and several processes. */
#define ROUNDS 15

struct worker {
    dlock_client *c;
    const char *path;
    int grants;
    int failures;
};

static void *work(void *arg)
{
    struct worker *k = arg;
    dlock_acquire_options opts = wait_options(60000);
    for (int i = 0; i < ROUNDS && !cleanup_stopping(); i++) {
        dlock_lock *lock = NULL;
        if (dlock_lock_acquire(&lock, k->c, "wait:counter", 30000, &opts) != 0) {
            k->failures++;
            continue;
        }
        bump_number_file(k->path);
        k->grants++;
        if (dlock_lock_release(lock) != 0)
            k->failures++;
        dlock_lock_free(lock);
    }
    return NULL;
}

/* A process of its own that works through ROUNDS on its own client: exits
 * 0 if every round was granted. */
static void work_in_a_child(const char *url, const char *path)
{
    dlock_client_options copts = client_options(&url, 1);
    struct worker k = {NULL, path, 0, 0};
    if (dlock_client_open(&k.c, &copts, NULL, 0) != 0)
        _exit(1);
    work(&k);
    _exit(k.failures == 0 && k.grants == ROUNDS ? 0 : 1);
}

static void test_wait_mutual_exclusion_threads_and_processes(void **state)
{
    enum { PROCS = 3, THREADS = 4 };
    test_redis *server = *state;
    char path[160];
    pid_t pids[PROCS];
    struct worker *workers[THREADS];
    int grants = 0;

    scratch_path(path, sizeof(path), server->dir, "counter");
    write_number_file(path, 0);
    for (int i = 0; i < PROCS; i++) {
        pids[i] = fork_child();
        if (pids[i] == 0)
            work_in_a_child(server->url, path);
    }
    for (int i = 0; i < THREADS; i++) {
        struct worker k = {client_on(server->url), path, 0, 0};
        workers[i] = start_thread(work, &k, sizeof(k));
    }
    for (int i = 0; i < THREADS; i++) {
        join_thread(workers[i]);
        assert_int_equal(workers[i]->failures, 0);
        grants += workers[i]->grants;
    }
    for (int i = 0; i < PROCS; i++) {
        int status = wait_child(pids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        grants += ROUNDS;
    }
    assert_int_equal(grants, (PROCS + THREADS) * ROUNDS);
    assert_int_equal(read_number_file(path), grants);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_server, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_wait_wakes_on_release),
        T(test_wait_takes_expired_lock_promptly),
        T(test_wait_deadline_returns_busy),
        T(test_wait_cancel_from_another_thread),
        T(test_wait_retries_through_connection_errors),
        T(test_wait_tells_on_retry_of_each_busy_sleep),
        T(test_wait_bad_options_refused),
        T(test_wait_mutual_exclusion_threads_and_processes),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
