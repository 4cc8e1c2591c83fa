/* Network faults through the loopback fault proxy, one node and three: a
 * silent node (the command may still land later: no vote, but cleaned up),
 * a slow one, connections reset or cut mid-stream. Each gets a clear error
 * within its deadline, and no key is left behind. Also the chaos suite's
 * clock shim, which must really move a server's clock. */
#include "fault_proxy.h"
#include "helpers.h"

#include <dlock.h>

#include <fcntl.h>
#include <pthread.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define NODES 3

struct fixture {
    test_redis servers[NODES];
    fault_proxy *proxies[NODES];
    char urls[NODES][64];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    for (int i = 0; i < NODES; i++) {
        if (test_redis_start(&f->servers[i], NULL) != 0)
            return -1;
        f->proxies[i] = fault_proxy_start(f->servers[i].port);
        if (!f->proxies[i])
            return -1;
        snprintf(f->urls[i], sizeof(f->urls[i]), "redis://127.0.0.1:%d",
                 fault_proxy_port(f->proxies[i]));
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < NODES; i++) {
        fault_proxy_stop(f->proxies[i]);
        test_redis_stop(&f->servers[i]);
    }
    free(f);
    return 0;
}

/* The per-node deadline where a fault must cost at most that: short, yet
 * one that a healthy node behind the proxy makes on a busy machine. */
static int node_ms(void)
{
    return 500 * test_slowdown();
}

/* A client on the first `n` proxies. */
static dlock_client *open_through(struct fixture *f, size_t n, int node_timeout_ms,
                                  int command_timeout_ms)
{
    const char *urls[NODES];
    for (size_t i = 0; i < n; i++)
        urls[i] = f->urls[i];
    return open_nodes(urls, n, node_timeout_ms, command_timeout_ms);
}

/* Acquire and release: the connections are made, nothing is held. */
static void take_turn(dlock_client *c, const char *name)
{
    dlock_lock *lock = must_acquire(c, name, 5000, NULL);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
}

static int keys_left(struct fixture *f, const char *name)
{
    int n = 0;
    for (int i = 0; i < NODES; i++) {
        redisContext *r = test_redis_connect(&f->servers[i], NULL);
        n += key_exists(r, name);
        redisFree(r);
    }
    return n;
}

/* The keys left once what the proxies held back or delayed has landed: a
 * command and the cleanup behind it may land late on a busy machine, but
 * within a few seconds. */
static int keys_left_in_the_end(struct fixture *f, const char *name)
{
    long long until = test_now_ms() + 5000LL * test_slowdown();
    int n;
    while ((n = keys_left(f, name)) > 0 && test_now_ms() < until)
        usleep(20 * 1000);
    return n;
}

/* A silent node: the acquire times out within the node deadline; the
 * command was sent and may land once the network heals, and so does the
 * cleanup behind it: no key is left. */
static void test_blackholed_node_times_out_and_leaves_nothing(void **state)
{
    struct fixture *f = *state;
    dlock_client *c = open_through(f, 1, node_ms(), node_ms());
    dlock_lock *lock = NULL;
    long long t0, took;

    take_turn(c, "fault:bh");
    fault_proxy_set(f->proxies[0], FAULT_BLACKHOLE, 0);
    t0 = test_now_ms();
    assert_int_equal(dlock_lock_acquire(&lock, c, "fault:bh", 5000, NULL), DLOCK_ETIMEDOUT);
    /* The node deadline for the attempt, another for the cleanup. */
    took = test_now_ms() - t0;
    assert_true(took >= node_ms());
    assert_true(took < 2LL * node_ms() + 1000LL * test_slowdown());
    assert_non_null(strstr(dlock_client_errmsg(c), "no reply"));
    assert_true(fault_proxy_hits(f->proxies[0]) > 0);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_int_equal(keys_left_in_the_end(f, "fault:bh"), 0);
    take_turn(c, "fault:bh");
    dlock_client_close(c);
}

/* A node 30 ms slow each way answers within its deadline; one as slow as
 * the deadline each way cannot (its reply comes after twice that). */
static void test_slow_node_within_and_past_its_deadline(void **state)
{
    struct fixture *f = *state;
    dlock_client *c = open_through(f, 1, node_ms(), node_ms());
    dlock_lock *lock;

    fault_proxy_set(f->proxies[0], FAULT_DELAY, 30);
    lock = must_acquire(c, "fault:slow", 5000, NULL);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);

    fault_proxy_set(f->proxies[0], FAULT_DELAY, node_ms());
    lock = NULL;
    assert_int_equal(dlock_lock_acquire(&lock, c, "fault:slow", 5000, NULL), DLOCK_ETIMEDOUT);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_int_equal(keys_left_in_the_end(f, "fault:slow"), 0);
    dlock_client_close(c);
}

/* An extend to a short TTL whose reply comes too late may have run: the
 * handle must not go on believing in the old, longer validity. */
static void test_late_extend_shortens_the_validity(void **state)
{
    struct fixture *f = *state;
    dlock_client *c = open_through(f, 1, 0, 1000);
    dlock_lock *lock = must_acquire(c, "fault:late-extend", 30000, NULL);
    int rc;

    fault_proxy_set(f->proxies[0], FAULT_DELAY, 100);
    rc = dlock_lock_extend(lock, DLOCK_TTL_MIN_MS);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_true(rc == DLOCK_ETIMEDOUT || rc == DLOCK_ENOTOWNER);
    usleep(DLOCK_TTL_MIN_MS * 1000); /* at most that: not the 30 s of before */
    assert_false(dlock_lock_held(lock));
    dlock_lock_free(lock);
    dlock_client_close(c);
}

/* The lock's key on the server behind the first proxy holds its token:
 * nothing released it there. */
static void assert_key_is_ours(struct fixture *f, const dlock_lock *lock)
{
    redisContext *r = test_redis_connect(&f->servers[0], NULL);
    char *value = get_string(r, dlock_lock_name(lock));
    redisFree(r);
    assert_non_null(value);
    assert_string_equal(value, dlock_lock_token(lock));
    free(value);
}

/* Every connection reset, the one in use and the reconnect alike: the
 * release fails with a clear error, and the next call once the network
 * heals reconnects. Whether the release left before its connection was
 * reset is a race (on a busy machine the proxy often resets the reconnect
 * before a byte of it goes out), and so is dlock_lock_held() after it: each
 * side is pinned by a test of its own below. What holds either way: the
 * proxy let nothing through, so the lock is still ours on the server. The
 * deadlines are generous: a proxy thread slow to reset must not turn the
 * reset into a timeout. */
static void test_reset_connections_then_reconnect(void **state)
{
    struct fixture *f = *state;
    int timeout_ms = 2000 * test_slowdown();
    dlock_client *c = open_through(f, 1, timeout_ms, timeout_ms);
    dlock_lock *lock = must_acquire(c, "fault:reset", 5000, NULL);

    fault_proxy_set(f->proxies[0], FAULT_RESET, 0);
    assert_int_equal(dlock_lock_release(lock), DLOCK_ECONN);
    assert_true(fault_proxy_hits(f->proxies[0]) > 0);
    assert_key_is_ours(f, lock);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(keys_left(f, "fault:reset"), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);
}

/* Resets every connection of `proxy` once it has read bytes past
 * `hits_before` (it blackholes them): a call that surely left the client. */
struct reset_on_arrival {
    fault_proxy *proxy;
    unsigned long long hits_before;
};

static void *reset_on_arrival(void *arg)
{
    struct reset_on_arrival *r = arg;
    long long until = test_now_ms() + 5000LL * test_slowdown();
    while (fault_proxy_hits(r->proxy) == r->hits_before && test_now_ms() < until)
        usleep(1000);
    fault_proxy_set(r->proxy, FAULT_RESET, 0);
    return NULL;
}

/* The connection is reset after the release left: it may have run, for all
 * the client can tell, so the lock is no longer certainly held. (The proxy
 * threw it away: the release after the network heals succeeds.) */
static void test_reset_after_the_release_left(void **state)
{
    struct fixture *f = *state;
    int timeout_ms = 5000 * test_slowdown();
    dlock_client *c = open_through(f, 1, timeout_ms, timeout_ms);
    dlock_lock *lock = must_acquire(c, "fault:reset-late", 5000, NULL);
    struct reset_on_arrival r = {.proxy = f->proxies[0]};
    pthread_t thread;

    fault_proxy_set(f->proxies[0], FAULT_BLACKHOLE, 0);
    r.hits_before = fault_proxy_hits(f->proxies[0]);
    assert_int_equal(pthread_create(&thread, NULL, reset_on_arrival, &r), 0);
    assert_int_equal(dlock_lock_release(lock), DLOCK_ECONN);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_false(dlock_lock_held(lock));
    assert_key_is_ours(f, lock);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(keys_left(f, "fault:reset-late"), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);
}

/* The release fails before a byte of it left (nothing listens any more):
 * it did not run, and the lock is still held. A status query first meets
 * the closed connection, seen yet or not, so that the release must
 * connect. */
static void test_release_refused_before_it_left(void **state)
{
    struct fixture *f = *state;
    int timeout_ms = 2000 * test_slowdown();
    dlock_client *c = open_through(f, 1, timeout_ms, timeout_ms);
    dlock_lock *lock = must_acquire(c, "fault:refused", 5000, NULL);
    status_view view;

    fault_proxy_stop(f->proxies[0]);
    f->proxies[0] = NULL;
    assert_int_equal(status_of(&view, c, "fault:refused"), DLOCK_ECONN);
    assert_int_equal(dlock_lock_release(lock), DLOCK_ECONN);
    assert_non_null(strstr(dlock_client_errmsg(c), "refused"));
    assert_true(dlock_lock_held(lock));
    assert_key_is_ours(f, lock);
    dlock_lock_free(lock);
    dlock_client_close(c);
}

/* Bytes lost mid-stream: the proxy resets such connections when it heals;
 * dlock reports the failure and reconnects for the next call. */
static void test_dropped_bytes_then_reconnect(void **state)
{
    struct fixture *f = *state;
    dlock_client *c = open_through(f, 1, node_ms(), node_ms());
    dlock_lock *lock = NULL;

    take_turn(c, "fault:drop");
    fault_proxy_set(f->proxies[0], FAULT_DROP, 0);
    assert_int_equal(dlock_lock_acquire(&lock, c, "fault:drop", 5000, NULL), DLOCK_ETIMEDOUT);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    usleep(50 * 1000);
    lock = must_acquire(c, "fault:drop", 5000, NULL);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    assert_int_equal(keys_left(f, "fault:drop"), 0);
    dlock_client_close(c);
}

/* Redlock with one node silent: granted by the other two without waiting
 * for it (waiting would take the node deadline), released everywhere, and
 * the silent node's copy is cleaned up once it hears again. */
static void test_redlock_with_a_blackholed_node(void **state)
{
    struct fixture *f = *state;
    dlock_client *c = open_through(f, NODES, 2 * node_ms(), 2 * node_ms());
    dlock_lock *lock;
    long long t0;

    take_turn(c, "fault:rl");
    fault_proxy_set(f->proxies[1], FAULT_BLACKHOLE, 0);
    t0 = test_now_ms();
    lock = must_acquire(c, "fault:rl", 5000, NULL);
    assert_true(test_now_ms() - t0 < 2LL * node_ms());
    assert_true(dlock_lock_held(lock));
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    fault_proxy_set(f->proxies[1], FAULT_PASS, 0);
    assert_int_equal(keys_left_in_the_end(f, "fault:rl"), 0);
    dlock_client_close(c);
}

/* The chaos suite's clock shim, preloaded into a redis-server, moves the
 * clock that server expires keys by, and nothing else's. */
static void test_clock_shim_moves_a_server_clock(void **state)
{
    char path[] = "/tmp/dlock-test-clock-XXXXXX";
    int fd = mkstemp(path);
    test_redis server;
    redisContext *r;
    redisReply *t;
    long long before;
    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "0\n", 2), 2);
    close(fd);
    setenv("LD_PRELOAD", DLOCK_CLOCK_SHIM, 1);
    setenv("DLOCK_CLOCK_SHIFT_FILE", path, 1);
    assert_int_equal(test_redis_start(&server, NULL), 0);
    unsetenv("LD_PRELOAD");
    unsetenv("DLOCK_CLOCK_SHIFT_FILE");
    r = test_redis_connect(&server, NULL);
    freeReplyObject(run(r, "SET shim:key v PX 5000"));
    t = run(r, "TIME");
    before = strtoll(t->element[0]->str, NULL, 10);
    freeReplyObject(t);
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "3000\n", 5), 5);
    close(fd);
    usleep(50 * 1000); /* the shim reads its file every 10 ms */
    t = run(r, "TIME");
    assert_true(strtoll(t->element[0]->str, NULL, 10) - before >= 3);
    freeReplyObject(t);
    assert_true(pttl_of(r, "shim:key") < 2500);
    redisFree(r);
    test_redis_stop(&server);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_blackholed_node_times_out_and_leaves_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_slow_node_within_and_past_its_deadline, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_late_extend_shortens_the_validity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_connections_then_reconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_after_the_release_left, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_refused_before_it_left, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_bytes_then_reconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redlock_with_a_blackholed_node, setup, teardown),
        cmocka_unit_test(test_clock_shim_moves_a_server_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
