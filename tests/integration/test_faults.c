/* Network faults through the loopback fault proxy, one node and three: a
 * silent node (the command may still land later: no vote, but cleaned up),
 * a slow one, connections reset or cut mid-stream. Each gets a clear error
 * within its deadline, and no key is left behind. Also the chaos suite's
 * clock shim, which must really move a server's clock. */
#include "helpers.h"

#include <dlock.h>


#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define NODES 3

/* Three servers, each behind a proxy. */
struct fixture {
    test_redis *servers;
    fault_proxy *proxies[NODES];
    const char *urls[NODES];
    char url[NODES][64];
};

static int setup(void **state)
{
    struct fixture *f = cleanup_alloc(sizeof(*f));
    f->servers = start_servers(NODES);
    for (int i = 0; i < NODES; i++) {
        f->proxies[i] = start_proxy(f->servers[i].port, f->url[i], sizeof(f->url[i]));
        f->urls[i] = f->url[i];
    }
    *state = f;
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
    return client_on_nodes(f->urls, n, node_timeout_ms, command_timeout_ms);
}

/* Acquire and release: the connections are made, nothing is held. */
static void take_turn(dlock_client *c, const char *name)
{
    take_and_release(c, name, 5000, NULL);
}

static int keys_left(struct fixture *f, const char *name)
{
    int n = 0;
    for (int i = 0; i < NODES; i++) {
        redisContext *r = connect_to(&f->servers[i]);
        n += key_exists(r, name);
        cleanup_now(r);
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
    long long t0, took;

    take_turn(c, "fault:bh");
    fault_proxy_set(f->proxies[0], FAULT_BLACKHOLE, 0);
    t0 = test_now_ms();
    expect_acquire(DLOCK_ETIMEDOUT, c, "fault:bh", 5000, NULL);
    /* The node deadline for the attempt, another for the cleanup. */
    took = test_now_ms() - t0;
    assert_true(took >= node_ms());
    assert_true(took < 2LL * node_ms() + 1000LL * test_slowdown());
    assert_non_null(strstr(dlock_client_errmsg(c), "no reply"));
    assert_true(fault_proxy_hits(f->proxies[0]) > 0);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_int_equal(keys_left_in_the_end(f, "fault:bh"), 0);
    take_turn(c, "fault:bh");
}

/* A node 30 ms slow each way answers within its deadline; one as slow as
 * the deadline each way cannot (its reply comes after twice that). */
static void test_slow_node_within_and_past_its_deadline(void **state)
{
    struct fixture *f = *state;
    dlock_client *c = open_through(f, 1, node_ms(), node_ms());

    fault_proxy_set(f->proxies[0], FAULT_DELAY, 30);
    take_turn(c, "fault:slow");

    fault_proxy_set(f->proxies[0], FAULT_DELAY, node_ms());
    expect_acquire(DLOCK_ETIMEDOUT, c, "fault:slow", 5000, NULL);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_int_equal(keys_left_in_the_end(f, "fault:slow"), 0);
}

/* An extend to a short TTL whose reply comes too late may have run: the
 * handle must not go on believing in the old, longer validity. */
static void test_late_extend_shortens_the_validity(void **state)
{
    struct fixture *f = *state;
    dlock_client *c = open_through(f, 1, 0, 1000);
    dlock_lock *lock = take(c, "fault:late-extend", 30000, NULL);
    int rc;

    fault_proxy_set(f->proxies[0], FAULT_DELAY, 100);
    rc = dlock_lock_extend(lock, DLOCK_TTL_MIN_MS);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_true(rc == DLOCK_ETIMEDOUT || rc == DLOCK_ENOTOWNER);
    usleep(DLOCK_TTL_MIN_MS * 1000); /* at most that: not the 30 s of before */
    assert_false(dlock_lock_held(lock));
}

/* The lock's key on the server behind the first proxy holds its token:
 * nothing released it there. */
static void assert_key_is_ours(struct fixture *f, const dlock_lock *lock)
{
    assert_key_holds(connect_to(&f->servers[0]), dlock_lock_name(lock), dlock_lock_token(lock));
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
    dlock_lock *lock = take(c, "fault:reset", 5000, NULL);

    fault_proxy_set(f->proxies[0], FAULT_RESET, 0);
    assert_int_equal(dlock_lock_release(lock), DLOCK_ECONN);
    assert_true(fault_proxy_hits(f->proxies[0]) > 0);
    assert_key_is_ours(f, lock);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(keys_left(f, "fault:reset"), 0);
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
    while (fault_proxy_hits(r->proxy) == r->hits_before && test_now_ms() < until &&
           !cleanup_stopping())
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
    dlock_lock *lock = take(c, "fault:reset-late", 5000, NULL);
    struct reset_on_arrival r = {.proxy = f->proxies[0]};
    void *resetter;

    fault_proxy_set(f->proxies[0], FAULT_BLACKHOLE, 0);
    r.hits_before = fault_proxy_hits(f->proxies[0]);
    resetter = start_thread(reset_on_arrival, &r, sizeof(r));
    assert_int_equal(dlock_lock_release(lock), DLOCK_ECONN);
    join_thread(resetter);
    assert_false(dlock_lock_held(lock));
    assert_key_is_ours(f, lock);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    assert_int_equal(keys_left(f, "fault:reset-late"), 0);
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
    dlock_lock *lock = take(c, "fault:refused", 5000, NULL);
    status_view view;

    cleanup_now(f->proxies[0]); /* nothing listens there any more */
    f->proxies[0] = NULL;
    assert_int_equal(status_of(&view, c, "fault:refused"), DLOCK_ECONN);
    assert_int_equal(dlock_lock_release(lock), DLOCK_ECONN);
    assert_non_null(strstr(dlock_client_errmsg(c), "refused"));
    assert_true(dlock_lock_held(lock));
    assert_key_is_ours(f, lock);
}

/* Bytes lost mid-stream: the proxy resets such connections when it heals;
 * dlock reports the failure and reconnects for the next call. */
static void test_dropped_bytes_then_reconnect(void **state)
{
    struct fixture *f = *state;
    dlock_client *c = open_through(f, 1, node_ms(), node_ms());

    take_turn(c, "fault:drop");
    fault_proxy_set(f->proxies[0], FAULT_DROP, 0);
    expect_acquire(DLOCK_ETIMEDOUT, c, "fault:drop", 5000, NULL);
    fault_proxy_set(f->proxies[0], FAULT_PASS, 0);
    usleep(50 * 1000);
    take_turn(c, "fault:drop");
    assert_int_equal(keys_left(f, "fault:drop"), 0);
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
    lock = take(c, "fault:rl", 5000, NULL);
    assert_true(test_now_ms() - t0 < 2LL * node_ms());
    assert_true(dlock_lock_held(lock));
    assert_int_equal(dlock_lock_release(lock), 0);
    fault_proxy_set(f->proxies[1], FAULT_PASS, 0);
    assert_int_equal(keys_left_in_the_end(f, "fault:rl"), 0);
}

/* The chaos suite's clock shim, preloaded into a redis-server, moves the
 * clock that server expires keys by, and nothing else's. */
static void test_clock_shim_moves_a_server_clock(void **state)
{
    char shift[64];
    test_redis *server = start_shifted_server(DLOCK_CLOCK_SHIM, shift, sizeof(shift), 0);
    redisContext *r = connect_to(server);
    long long before;
    (void)state;
    freeReplyObject(run(r, "SET shim:key v PX 5000"));
    before = strtoll(kept_reply(run(r, "TIME"))->element[0]->str, NULL, 10);
    write_number_file(shift, 3000);
    usleep(50 * 1000); /* the shim reads its file every 10 ms */
    assert_true(strtoll(kept_reply(run(r, "TIME"))->element[0]->str, NULL, 10) - before >= 3);
    assert_true(pttl_of(r, "shim:key") < 2500);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, cleanup_teardown)
#define U(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_blackholed_node_times_out_and_leaves_nothing),
        T(test_slow_node_within_and_past_its_deadline),
        T(test_late_extend_shortens_the_validity),
        T(test_reset_connections_then_reconnect),
        T(test_reset_after_the_release_left),
        T(test_release_refused_before_it_left),
        T(test_dropped_bytes_then_reconnect),
        T(test_redlock_with_a_blackholed_node),
        U(test_clock_shim_moves_a_server_clock),
    };
#undef T
#undef U
    return cmocka_run_group_tests(tests, NULL, NULL);
}
