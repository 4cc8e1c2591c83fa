/* Redlock over 5 real redis-server processes: the majority, node failures
 * and pauses, one server one vote, cleanup of what a failed attempt left,
 * contention, validity and expiry, releases racing renewals, waking, the
 * command and the guard. Servers restarted under a holder:
 * test_redlock_restarts.c. */
#include "helpers.h"
#include "nodes.h"

#include <dlock.h>

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void test_redlock_holds_on_every_node(void **state)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    dlock_lock *lock = take(c, "rl:all", 30000, NULL);
    status_view st;
    (void)state;
    usleep(20 * 1000); /* the nodes not waited for got the command too */
    assert_int_equal(nodes_holding("rl:all", dlock_lock_token(lock)), NODES);
    assert_true(dlock_lock_validity_ms(lock) > 25000);
    assert_int_equal(status_of(&st, c, "rl:all"), 0);
    assert_true(st.held);
    /* Decided as soon as a majority said so. */
    assert_true(st.nodes_held >= NODES / 2 + 1 && st.nodes_held <= NODES);
    /* The token is the largest of the quorum's; a node outside it may have
     * computed a larger one, which only pushes later tokens higher. */
    assert_true(st.fence >= dlock_lock_fence(lock));
    assert_int_equal(dlock_lock_release(lock), 0);
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:all", NULL), 0);
}

static void test_redlock_survives_two_dead_nodes_not_three(void **state)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    dlock_lock *lock;
    long long start;
    (void)state;
    test_redis_kill(&nodes[0]);
    test_redis_kill(&nodes[1]);
    lock = take(c, "rl:dead", 30000, NULL);
    assert_int_equal(nodes_holding("rl:dead", dlock_lock_token(lock)), 3);
    assert_int_equal(dlock_lock_release(lock), 0);

    test_redis_kill(&nodes[2]);
    start = test_now_ms();
    expect_acquire(DLOCK_ENOQUORUM, c, "rl:dead", 30000, NULL);
    assert_true(test_now_ms() - start < 3000LL * test_slowdown()); /* nowhere near the TTL */
    assert_non_null(strstr(dlock_client_errmsg(c), nodes[0].url + strlen("redis://")));
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:dead", NULL), 0); /* cleaned up on the live two */
}

static void test_redlock_decides_without_paused_nodes(void **state)
{
    dlock_client *c = client_on_all_nodes(500, 2000);
    dlock_client *fresh;
    dlock_lock *lock;
    long long start, took;
    (void)state;
    take_and_release(c, "rl:warm", 30000, NULL); /* connections made, scripts loaded */
    test_redis_pause(&nodes[3]);
    test_redis_pause(&nodes[4]);
    start = test_now_ms();
    lock = take(c, "rl:paused", 30000, NULL);
    took = test_now_ms() - start;
    assert_true(took < 500); /* three granted: no waiting for the paused two */
    assert_int_equal(dlock_lock_release(lock), 0);

    /* New connections to the paused nodes do not cost the connect timeout. */
    fresh = client_on_all_nodes(500, 2000);
    start = test_now_ms();
    lock = take(fresh, "rl:paused2", 30000, NULL);
    took = test_now_ms() - start;
    assert_true(took < 500);
    assert_int_equal(dlock_lock_release(lock), 0);
}

/* Three servers, one unreachable (its refusal arrives first), the lock held
 * by another client on the other two: busy, every time, never "no quorum". */
static void test_redlock_busy_not_no_quorum_with_a_node_down(void **state)
{
    dlock_client *holder, *other;
    dlock_acquire_options wait = wait_options(1000);
    dlock_lock *held;
    long long start;
    (void)state;
    test_redis_kill(&nodes[2]);
    holder = client_on_servers(nodes, 3, 0, 0);
    other = client_on_servers(nodes, 3, 0, 0);
    held = take(holder, "rl:busy-down", 30000, NULL);
    for (int i = 0; i < 30; i++)
        expect_acquire(DLOCK_EBUSY, other, "rl:busy-down", 30000, NULL);
    /* A waiter (as `dlock run -w 1`, which ends a wait at an I/O error)
     * waits its whole second: a majority is reachable. */
    wait.no_io_retry = 1;
    start = test_now_ms();
    expect_acquire(DLOCK_EBUSY, other, "rl:busy-down", 30000, &wait);
    assert_true(test_now_ms() - start >= 1000);
    assert_int_equal(dlock_lock_release(held), 0);
}

/* One server is one vote, however it is spelt: refused at open by address
 * and database, at connect by run_id (a Unix socket and a TCP port of one
 * server resolve to nothing in common). */
static void test_redlock_one_server_is_one_vote(void **state)
{
    static const char *const spellings[][3] = {
        {"redis://127.0.0.1:", "redis://localhost:", "redis://127.1:"},
        {"redis://127.0.0.1:", "redis://127.0.0.1:", "redis://127.0.0.1:"},
    };
    static const char *const dbs[][3] = {{"", "", ""}, {"/0", "/1", "/2"}};
    char urls[3][96], why[256];
    const char *list[3] = {urls[0], urls[1], urls[2]};
    dlock_client_options opts = client_options(list, 3);
    dlock_acquire_options wait = wait_options(20000);
    dlock_client *c = NULL;
    dlock_lock *held;
    long long start;
    (void)state;
    for (size_t k = 0; k < 2; k++) {
        for (int i = 0; i < 3; i++)
            snprintf(urls[i], sizeof(urls[i]), "%s%d%s", spellings[k][i], nodes[0].port,
                     dbs[k][i]);
        assert_int_equal(dlock_client_open(&c, &opts, why, sizeof(why)), DLOCK_EINVAL);
        assert_null(c);
        assert_non_null(strstr(why, "one server"));
    }
    assert_non_null(strstr(why, "/0 and ")); /* the databases are named: /0 and /1 */
    list[0] = nodes[0].unix_url;
    list[1] = nodes[0].url;
    list[2] = nodes[1].url;
    c = client_with(&opts);
    expect_acquire(DLOCK_EINVAL, c, "rl:one-vote", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(c), "run_id"));
    assert_int_equal(nodes_holding("rl:one-vote", NULL), 0);
    /* A busy verdict from one server counted twice is refused too, and a
     * waiter does not wait for it (the client that learnt the run_ids: a
     * new one's busy verdict may come before the second run_id, on a
     * loaded machine). */
    held = take(client_on_all_nodes(0, 0), "rl:one-vote-busy", 30000, NULL);
    expect_acquire(DLOCK_EINVAL, c, "rl:one-vote-busy", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(c), "run_id"));
    start = test_now_ms();
    expect_acquire(DLOCK_EINVAL, c, "rl:one-vote-busy", 30000, &wait);
    assert_true(test_now_ms() - start < 5000LL * test_slowdown());
    assert_int_equal(dlock_lock_release(held), 0);
}

/* Status over servers where the key has no TTL on one and a TTL on the
 * others: the shortest TTL, whatever the order of the answers. */
static void test_redlock_status_ttl_of_mixed_keys(void **state)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    status_view st;
    (void)state;
    on_nodes(0, 1, "SET %s foreign", "rl:ttlmix");
    on_nodes(1, NODES, "SET %s foreign PX 60000", "rl:ttlmix");
    assert_int_equal(status_of(&st, c, "rl:ttlmix"), 0);
    assert_true(st.held);
    assert_true(st.pttl_ms > 0 && st.pttl_ms <= 60000);
}

static void test_redlock_partial_attempt_is_cleaned_up(void **state)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    (void)state;
    /* Another client holds the lock on three nodes. */
    on_nodes(0, 3, "SET %s theirs NX PX 30000", "rl:partial");
    expect_acquire(DLOCK_EBUSY, c, "rl:partial", 30000, NULL);
    usleep(20 * 1000);
    assert_int_equal(nodes_holding("rl:partial", "theirs"), 3);
    assert_int_equal(nodes_holding("rl:partial", NULL), 3); /* nothing of ours on the other two */
}

/* Every way another owner can occupy nodes: granted iff at least three of
 * the five are free; theirs untouched either way; ours everywhere free on
 * success, nowhere on failure. */
static void test_redlock_all_occupied_masks(void **state)
{
    dlock_client *c = client_on_all_nodes(0, 0);
    char name[32];
    (void)state;
    for (unsigned mask = 0; mask < (1u << NODES); mask++) {
        int occupied = 0, free_nodes;
        dlock_lock *lock;
        snprintf(name, sizeof(name), "rl:mask:%u", mask);
        for (int i = 0; i < NODES; i++) {
            if (!(mask & (1u << i)))
                continue;
            on_nodes(i, i + 1, "SET %s theirs PX 30000", name);
            occupied++;
        }
        free_nodes = NODES - occupied;
        lock = expect_acquire(free_nodes >= 3 ? 0 : DLOCK_EBUSY, c, name, 30000, NULL);
        if (lock) {
            usleep(20 * 1000); /* the nodes not waited for got the command too */
            assert_int_equal(nodes_holding(name, dlock_lock_token(lock)), free_nodes);
            assert_int_equal(dlock_lock_release(lock), 0);
        } else {
            usleep(10 * 1000); /* the cleanup reaches every node */
        }
        assert_int_equal(nodes_holding(name, "theirs"), occupied);
        assert_int_equal(nodes_holding(name, NULL), occupied);
    }
}

/* A waiter's validity is counted from the attempt that succeeded, not from
 * its first attempt a second earlier. */
static void test_redlock_validity_from_the_successful_attempt(void **state)
{
    dlock_client *holder = client_on_all_nodes(0, 0), *waiter = client_on_all_nodes(0, 0);
    dlock_acquire_options opts = wait_options(5000);
    dlock_lock *first = take(holder, "rl:validity", 2000, NULL), *second;
    long long started;
    (void)state;
    started = test_now_ms();
    /* The holder goes away without releasing: the waiter tries for 2 s. */
    cleanup_now(first);
    second = take(waiter, "rl:validity", 2000, &opts);
    assert_true(test_now_ms() - started >= 1500);
    assert_true(dlock_lock_validity_ms(second) > 2000 - 300);
    assert_int_equal(dlock_lock_release(second), 0);
}

/* After expiry, neither extend nor release touches the next owner's lock. */
static void test_redlock_extend_and_release_after_expiry_refused(void **state)
{
    /* A TTL short enough to outwait, long enough that its node deadline
     * (TTL / 20) covers a first connection under the sanitizers. */
    int ttl_ms = 200 * test_slowdown();
    dlock_client *a = client_on_all_nodes(0, 0), *b = client_on_all_nodes(0, 0);
    dlock_lock *old = take(a, "rl:expired", ttl_ms, NULL), *next;
    (void)state;
    usleep((useconds_t)(ttl_ms + 100) * 1000);
    next = take(b, "rl:expired", 30000, NULL);
    assert_int_equal(dlock_lock_extend(old, 30000), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock_release(old), DLOCK_ENOTOWNER);
    wait_for_holders("rl:expired", dlock_lock_token(next), NODES); /* decided by a majority */
    assert_int_equal(nodes_holding("rl:expired", dlock_lock_token(next)), NODES);
    assert_int_equal(dlock_lock_release(next), 0);
}

/* Releases at random moments of a fast renewal cycle: after each one, no
 * renewal (or repair) puts the key back. */
static void test_redlock_release_while_renewing(void **state)
{
    int ttl_ms = 60 * test_slowdown(); /* renewals every 20 ms, unless slowed down */
    dlock_client *c = client_on_all_nodes(ttl_ms / 3, 0);
    dlock_acquire_options opts = wait_options(5000); /* through a busy machine's late replies */
    unsigned rng = 5; /* the same pauses in every run */
    (void)state;
    opts.auto_renew = 1;
    for (int i = 0; i < 400; i++) {
        dlock_lock *lock = take(c, "rl:renewing", ttl_ms, &opts);
        int rc;
        usleep((useconds_t)(rand_r(&rng) % (2 * ttl_ms / 3)) * 1000);
        rc = dlock_lock_release(lock);
        /* Lost in a renewal that came too late is fine; a key back is not.
         * A release that a loaded machine kept past the per-node deadline
         * may not have reached a majority: then the keys must be gone
         * once the TTL ran out, the renewal having stopped with it. */
        if (rc == DLOCK_ENOQUORUM)
            usleep((useconds_t)ttl_ms * 2 * 1000);
        else if (rc != 0 && rc != DLOCK_ELOST)
            fail_msg("iteration %d: release: %s", i, dlock_strerror(rc));
        cleanup_now(lock); /* out of the renewal set, as each round's is */
        if (nodes_holding("rl:renewing", NULL) != 0)
            fail_msg("iteration %d: a key is back after the release", i);
    }
    usleep(100 * 1000);
    assert_int_equal(nodes_holding("rl:renewing", NULL), 0);
}

/* CLIENT PAUSE holds the acquire past its deadline; the SET lands later,
 * but so does the cleanup behind it: the retry and another client never
 * both hold the lock. */
static void test_redlock_timed_out_acquire_then_retry(void **state)
{
    dlock_client *a = client_on_all_nodes(50, 300), *b = client_on_all_nodes(0, 0);
    dlock_lock *theirs;
    long long until;
    (void)state;
    take_and_release(a, "rl:warm", 1000, NULL); /* the connections are made */
    on_nodes(0, NODES, "CLIENT PAUSE %s WRITE", "400");
    expect_acquire(DLOCK_ENOQUORUM, a, "rl:paused-write", 30000, NULL);
    usleep(600 * 1000); /* the pause is over: the late SETs and the cleanup ran */
    assert_int_equal(nodes_holding("rl:paused-write", NULL), 0);
    theirs = take(b, "rl:paused-write", 30000, NULL);
    expect_acquire(DLOCK_EBUSY, a, "rl:paused-write", 30000, NULL);
    until = test_now_ms() + 5000LL * test_slowdown();
    /* b's grant was decided by a majority; a's try right after may have
     * taken a node b's last SET had not reached yet (on a loaded machine),
     * and then cleaned it up: b holds a majority, and nobody else anything
     * once the cleanup ran. */
    wait_for_holders("rl:paused-write", dlock_lock_token(theirs), NODES);
    assert_true(nodes_holding("rl:paused-write", dlock_lock_token(theirs)) > NODES / 2);
    while (nodes_holding("rl:paused-write", NULL) !=
               nodes_holding("rl:paused-write", dlock_lock_token(theirs)) &&
           test_now_ms() < until)
        usleep(5000);
    assert_int_equal(nodes_holding("rl:paused-write", NULL),
                     nodes_holding("rl:paused-write", dlock_lock_token(theirs)));
    assert_int_equal(dlock_lock_release(theirs), 0);
}

struct contender {
    dlock_client *c;
    const char *path;
    int grants, failures;
};

static void *contend(void *arg)
{
    struct contender *k = arg;
    dlock_acquire_options opts = wait_options(60000);
    for (int i = 0; i < 10 && !cleanup_stopping(); i++) {
        dlock_lock *lock = NULL;
        if (dlock_lock_acquire(&lock, k->c, "rl:counter", 30000, &opts) != 0) {
            k->failures++;
            continue;
        }
        bump_number_file(k->path);
        k->grants++;
        k->failures += dlock_lock_release(lock) != 0;
        dlock_lock_free(lock);
    }
    return NULL;
}

static void test_redlock_contention_is_exclusive(void **state)
{
    enum { THREADS = 4 };
    struct contender *k[THREADS];
    char path[160];
    (void)state;
    scratch_path(path, sizeof(path), nodes[0].dir, "rl-counter");
    write_number_file(path, 0);
    for (int i = 0; i < THREADS; i++) {
        struct contender one = {client_on_all_nodes(0, 0), path, 0, 0};
        k[i] = start_thread(contend, &one, sizeof(one));
    }
    for (int i = 0; i < THREADS; i++) {
        join_thread(k[i]);
        assert_int_equal(k[i]->failures, 0);
        assert_int_equal(k[i]->grants, 10);
    }
    assert_int_equal(read_number_file(path), THREADS * 10);
}

struct waiter {
    dlock_client *c;
    int rc;
    unsigned attempts;
    long long got_at;
};

static void *wait_for(void *arg)
{
    struct waiter *w = arg;
    dlock_acquire_options opts = wait_options(20000);
    dlock_lock *lock = NULL;
    opts.backoff_max_ms = 10000;
    w->rc = dlock_lock_acquire(&lock, w->c, "rl:wake", 30000, &opts);
    w->got_at = test_now_ms();
    if (w->rc == 0) {
        w->attempts = dlock_lock_attempts(lock);
        dlock_lock_release(lock);
    }
    dlock_lock_free(lock);
    return NULL;
}

static void test_redlock_waiter_wakes_on_release(void **state)
{
    dlock_lock *lock = take(client_on_all_nodes(0, 0), "rl:wake", 30000, NULL);
    struct waiter *w = start_thread(wait_for, &(struct waiter){.c = client_on_all_nodes(0, 0)},
                                    sizeof(struct waiter));
    long long released_at;
    (void)state;
    usleep(300 * 1000);
    released_at = test_now_ms();
    assert_int_equal(dlock_lock_release(lock), 0); /* five PUBLISHes, one wake-up */
    join_thread(w);
    assert_int_equal(w->rc, 0);
    assert_int_equal(w->attempts, 3); /* try, listen, try again; the wake-up's try */
    assert_true(w->got_at - released_at < 2000LL * test_slowdown());
}

static void test_redlock_from_the_command(void **state)
{
    const char *args[2 * NODES + 8];
    cli_proc p;
    int n = 0;
    (void)state;
    for (int i = 0; i < NODES; i++) {
        args[n++] = "-r";
        args[n++] = nodes[i].url;
    }
    args[n++] = "run";
    args[n++] = "rl:cli";
    args[n++] = "--";
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = "echo $DLOCK_FENCE";
    args[n] = NULL;
    assert_int_equal(cli_run(&p, NULL, args, 10000), 0);
    assert_true(strtoull(p.out, NULL, 10) > 0);
    args[2 * (size_t)NODES] = "acquire";
    args[2 * NODES + 2] = NULL;
    assert_int_equal(cli_run(&p, NULL, args, 10000), 0);
    args[2 * (size_t)NODES] = "status";
    args[2 * NODES + 1] = "--json";
    args[2 * NODES + 2] = "rl:cli";
    args[2 * NODES + 3] = NULL;
    assert_int_equal(cli_run(&p, NULL, args, 10000), 0);
    assert_non_null(strstr(p.out, "\"nodes\":[{\"server\":"));
    assert_non_null(strstr(p.out, nodes[4].url + strlen("redis://")));
}

/* dlock_guard_load_redis loads the guard into every server: each answers
 * FCALL dlock_fenced_set, and refuses an older token. A server that does
 * not answer is the call's failure, named. */
static void test_redlock_guard_loads_on_every_server(void **state)
{
    dlock_client *c = client_on_all_nodes(200, 500);
    (void)state;
    assert_int_equal(dlock_guard_load_redis(c), 0);
    for (int i = 0; i < NODES; i++) {
        redisContext *r = connect_to(&nodes[i]);
        redisReply *ok = kept_reply(run(r, "FCALL dlock_fenced_set 2 guard:data guard:fence v 34"));
        redisReply *stale =
            kept_reply(run(r, "FCALL dlock_fenced_set 2 guard:data guard:fence v 33"));
        assert_int_equal(ok->type, REDIS_REPLY_STATUS);
        assert_int_equal(stale->type, REDIS_REPLY_ERROR);
        assert_non_null(strstr(stale->str, "STALE fence 33 is older than 34"));
    }
    test_redis_pause(&nodes[3]);
    assert_int_equal(dlock_guard_load_redis(c), DLOCK_ETIMEDOUT);
    assert_non_null(strstr(dlock_client_errmsg(c), nodes[3].url + strlen("redis://")));
    test_redis_resume(&nodes[3]);
}

/* Script calls each node ran so far, into calls[]. */
static void script_calls_of_nodes(long long calls[NODES])
{
    for (int i = 0; i < NODES; i++)
        calls[i] = script_calls(connect_to(&nodes[i]));
}

/* Takes and releases NAME (exclusive), once every node ran each of its
 * calls: each node's script calls since are `per_node` (the acquire and
 * the release; a write-back one more), and a majority's fence key then
 * holds the token, which is returned. */
static uint64_t cycle_on_all(dlock_client *c, const char *name, int per_node)
{
    long long before[NODES], after[NODES];
    char token_text[24];
    dlock_lock *lock;
    uint64_t fence;
    script_calls_of_nodes(before);
    lock = take(c, name, 30000, NULL);
    fence = dlock_lock_fence(lock);
    snprintf(token_text, sizeof(token_text), "%" PRIu64, fence);
    wait_for_holders(name, dlock_lock_token(lock), NODES);
    /* A node that ran the acquire late may have granted a larger token. */
    wait_for_holders(aux_key(name, "fence"), token_text, NODES);
    assert_true(nodes_holding(aux_key(name, "fence"), token_text) >= NODES / 2 + 1);
    assert_int_equal(dlock_lock_release(lock), 0);
    for (int i = 0; i < 1000 && nodes_holding(name, NULL) > 0; i++)
        usleep(5000);
    script_calls_of_nodes(after);
    for (int i = 0; i < NODES; i++)
        assert_int_equal(after[i] - before[i], per_node);
    return fence;
}

/* Sets NAME's fence key on node i to base + i * step. */
static void set_fences(const char *name, uint64_t base, uint64_t step)
{
    for (int i = 0; i < NODES; i++)
        freeReplyObject(redisCommand(connect_to(&nodes[i]), "SET %s %" PRIu64,
                                     aux_key(name, "fence"), base + (uint64_t)i * step));
}

/* A majority that granted one token, the client's proposal, none with an
 * epoch key, stored it already: no write-back, two calls per node and
 * cycle. Tokens that differ, one token that is a stored counter ahead of
 * the clocks (the same stored fence + 1 everywhere: only the nodes that
 * store it keep it, so it goes to every node), or an epoch key to raise,
 * send the write-back to every node. A shared holder after an exclusive
 * one that wrote nothing back gets its token (the stored fence, where
 * there is no epoch). */
static void test_redlock_agreed_token_is_not_written_back(void **state)
{
    const uint64_t ahead = 8000000000000000ULL; /* far ahead of the clocks */
    dlock_client *c = client_on_all_nodes(0, 0);
    dlock_acquire_options shared = shared_options(0);
    uint64_t first, token;
    dlock_lock *reader;
    char value[24];
    (void)state;
    first = cycle_on_all(c, "rl:agree", 2);
    token = cycle_on_all(c, "rl:agree", 2);
    assert_true(token > first);
    reader = take(c, "rl:agree", 30000, &shared);
    assert_true(dlock_lock_fence(reader) >= token);
    assert_int_equal(dlock_lock_release(reader), 0);
    wait_for_holders("rl:agree", NULL, 0);
    on_nodes(0, NODES, "DEL %s", aux_key("rl:agree", "epoch"));

    set_fences("rl:agree", ahead, 0);
    assert_int_equal(cycle_on_all(c, "rl:agree", 3), ahead + 1);
    set_fences("rl:agree", ahead + 100, 10);
    assert_true(cycle_on_all(c, "rl:agree", 3) > ahead + 100);

    set_fences("rl:agree", ahead + 1000, 0);
    on_nodes(0, NODES, "SET %s 1", aux_key("rl:agree", "epoch"));
    assert_int_equal(cycle_on_all(c, "rl:agree", 3), ahead + 1001);
    snprintf(value, sizeof(value), "%" PRIu64, ahead + 1001);
    wait_for_holders(aux_key("rl:agree", "epoch"), value, NODES);
    assert_int_equal(nodes_holding(aux_key("rl:agree", "epoch"), value), NODES);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_nodes, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_redlock_holds_on_every_node),
        T(test_redlock_survives_two_dead_nodes_not_three),
        T(test_redlock_decides_without_paused_nodes),
        T(test_redlock_busy_not_no_quorum_with_a_node_down),
        T(test_redlock_one_server_is_one_vote),
        T(test_redlock_status_ttl_of_mixed_keys),
        T(test_redlock_partial_attempt_is_cleaned_up),
        T(test_redlock_contention_is_exclusive),
        T(test_redlock_all_occupied_masks),
        T(test_redlock_validity_from_the_successful_attempt),
        T(test_redlock_extend_and_release_after_expiry_refused),
        T(test_redlock_release_while_renewing),
        T(test_redlock_timed_out_acquire_then_retry),
        T(test_redlock_waiter_wakes_on_release),
        T(test_redlock_from_the_command),
        T(test_redlock_guard_loads_on_every_server),
        T(test_redlock_agreed_token_is_not_written_back),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_nodes, group_teardown_nodes);
}
