/* Shared holds against real redis-servers: shared holders together and
 * never with an exclusive one (an interval log of `dlock run -s` and
 * `dlock run`), a waiting writer is not starved by a stream of readers, a
 * dead writer-in-waiting frees the readers within its mark's lease, the
 * fence of the exclusive epoch, release by token, the wrong kind, and the
 * same exclusion under Redlock with 2 of 5 servers killed. */
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

/* Redlock's per-node deadline in these tests: the default (a twentieth of
 * the TTL) is missed on a busy machine. */
#define NODE_TIMEOUT_MS (250 * test_slowdown())

/* Waits (10 s at most, times the slowdown) until n hold `name` shared. */
static void wait_until(redisContext *redis, const char *name, long long n)
{
    wait_for_zcard(redis, aux_key(name, "readers"), n);
}

/* `dlock run [-s] NAME -c ...` that logs "start K" and "end K" (K s or x)
 * to `log`, holding for `hold` seconds. */
static cli_proc *start_logged(const char *name, bool is_shared, const char *hold,
                              const char *log)
{
    char script[512];
    const char *kind = is_shared ? "s" : "x";
    snprintf(script, sizeof(script),
             "echo \"start %s\" >>%s; sleep %s; echo \"end %s\" >>%s",
             kind, log, hold, kind, log);
    return start_cli(server.url,
                     is_shared ? (const char *const[]){"run", "-s", name, "-c", script, NULL}
                               : (const char *const[]){"run", name, "-c", script, NULL},
                     NULL);
}

/* Walks the log in file order: a start is appended while its hold is
 * held, an end before it is released, so no exclusive interval may overlap
 * any other. (No times in it: a time read before its append is appended
 * after a later one when its run is preempted between.) Returns the most
 * shared holders inside at once. */
static int check_log(const char *log, int intervals)
{
    FILE *f = fopen(log, "r");
    char line[64];
    int in_shared = 0, in_excl = 0, most = 0, lines = 0;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        /* "start K" or "end K" */
        char *kind = strchr(line, ' ');
        bool start = strncmp(line, "start ", 6) == 0, excl;
        assert_non_null(kind);
        excl = strchr(kind, 'x') != NULL;
        lines++;
        if (start) {
            assert_int_equal(in_excl, 0);
            if (excl)
                assert_int_equal(in_shared, 0);
            in_excl += excl;
            in_shared += !excl;
        } else {
            in_excl -= excl;
            in_shared -= !excl;
        }
        most = in_shared > most ? in_shared : most;
    }
    fclose(f);
    assert_int_equal(lines, 2 * intervals);
    return most;
}

/* 8 shared runs all inside at once; 2 exclusive runs that start while they
 * are, and 4 shared runs that start while the exclusive ones wait: no
 * exclusive run overlaps anything, and the late shared runs wait for the
 * exclusive ones. */
static void test_shared_runs_overlap_exclusive_runs_alone(void **state)
{
    enum { FIRST = 8, EXCL = 2, LATE = 4, ALL = FIRST + EXCL + LATE };
    redisContext *redis = *state;
    cli_proc *p[ALL];
    char log[160];
    int k = 0;

    scratch(log, sizeof(log), "shared-intervals");
    for (; k < FIRST; k++)
        p[k] = start_logged("shared:runs", true, "1.5", log);
    wait_until(redis, "shared:runs", FIRST);
    for (; k < FIRST + EXCL; k++)
        p[k] = start_logged("shared:runs", false, "0.2", log);
    wait_for_key(redis, aux_key("shared:runs", "writer"));
    for (; k < ALL; k++)
        p[k] = start_logged("shared:runs", true, "0.2", log);
    for (int i = 0; i < ALL; i++)
        assert_int_equal(cli_wait(p[i], 30000 * test_slowdown()), 0);
    assert_int_equal(check_log(log, ALL), FIRST);
}

struct reader {
    dlock_client *c;
    atomic_bool *stop;
    int grants;
    int rc;
};

/* Takes the name shared for 300 ms, again and again, until told to stop. */
static void *reader_thread(void *arg)
{
    struct reader *r = arg;
    dlock_acquire_options o = shared_options(5000);
    while (r->rc == 0 && !atomic_load(r->stop) && !cleanup_stopping()) {
        dlock_lock *l = NULL;
        r->rc = dlock_lock_acquire(&l, r->c, "shared:stream", 30000, &o);
        if (r->rc == DLOCK_EBUSY && atomic_load(r->stop))
            r->rc = 0;
        if (r->rc != 0)
            break;
        r->grants++;
        usleep(300 * 1000);
        r->rc = dlock_lock_release(l);
        dlock_lock_free(l);
        usleep(20 * 1000);
    }
    return NULL;
}

/* Four readers in a stream of overlapping 300 ms holds: the name is never
 * free. A writer that starts waiting gets in within the longest remaining
 * hold of the readers inside (300 ms), plus a margin, not never. */
static void test_shared_reader_stream_does_not_starve_a_writer(void **state)
{
    enum { READERS = 4 };
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = wait_options(20000);
    struct reader *r[READERS];
    atomic_bool *stop = cleanup_alloc(sizeof(*stop));
    dlock_lock *writer;
    long long asked, waited;
    (void)state;

    for (int i = 0; i < READERS; i++) {
        struct reader one = {client_on(server.url), stop, 0, 0};
        r[i] = start_thread(reader_thread, &one, sizeof(one));
        usleep(80 * 1000);
    }
    usleep(500 * 1000);
    asked = test_now_ms();
    writer = take(c, "shared:stream", 30000, &o);
    waited = test_now_ms() - asked;
    print_message("the writer waited %lld ms\n", waited);
    assert_true(waited < (300LL + 1000) * test_slowdown());
    usleep(100 * 1000);
    assert_int_equal(dlock_lock_release(writer), 0);
    atomic_store(stop, true);
    for (int i = 0; i < READERS; i++) {
        join_thread(r[i]);
        assert_int_equal(r[i]->rc, 0);
        assert_true(r[i]->grants >= 2);
    }
}

/* A writer SIGKILLed while it waits: new shared holders get in once its
 * mark's lease (2 s) ends, not after the readers' TTL. */
static void test_shared_dead_writer_frees_the_readers(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = shared_options(0);
    dlock_lock *first = take(c, "shared:deadwriter", 30000, &o), *second;
    cli_proc *writer = start_cli(
        server.url, (const char *const[]){"run", "shared:deadwriter", "--", "true", NULL}, NULL);
    long long killed, waited;

    wait_for_key(redis, aux_key("shared:deadwriter", "writer"));
    expect_acquire(DLOCK_EBUSY, c, "shared:deadwriter", 30000, &o);
    kill(writer->pid, SIGKILL);
    killed = test_now_ms();
    o.wait_ms = 10000LL * test_slowdown();
    second = take(c, "shared:deadwriter", 30000, &o);
    waited = test_now_ms() - killed;
    assert_true(waited < (2000LL + 1000) * test_slowdown());
    assert_int_equal(cli_wait(writer, 1000), 128 + SIGKILL);
    assert_int_equal(dlock_lock_release(second), 0);
    assert_int_equal(dlock_lock_release(first), 0);
}

/* Two writers wait behind a reader: W2, a `dlock run` stopped (SIGSTOP)
 * once it waits, its lease of 2 s running, and W1, which gets in when the
 * reader leaves. W1 out again, W2's wait still keeps a new reader out;
 * W2, resumed, gets its turn, and then the reader. */
static void test_shared_second_waiting_writer_keeps_readers_out(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = shared_options(0);
    dlock_lock *r = take(c, "shared:writers", 30000, &o);
    cli_proc *w2 = start_cli(
        server.url, (const char *const[]){"run", "shared:writers", "--", "true", NULL}, NULL);

    wait_for_key(redis, aux_key("shared:writers", "writer"));
    kill(w2->pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(r), 0);
    take_and_release(c, "shared:writers", 30000, NULL); /* W1 */
    expect_acquire(DLOCK_EBUSY, c, "shared:writers", 30000, &o);
    kill(w2->pid, SIGCONT);
    assert_int_equal(cli_wait(w2, 10000 * test_slowdown()), 0);
    take_and_release(c, "shared:writers", 30000, &o);
}

struct writer {
    dlock_client *c;
    char token[DLOCK_TOKEN_LEN + 1];
    int rc;
};

/* Takes "shared:woken" (waiting; exclusively unless `shared`), holds it
 * 10 ms, releases. */
static void *woken_thread(void *arg, bool shared)
{
    struct writer *w = arg;
    dlock_acquire_options o = shared ? shared_options(20000LL * test_slowdown())
                                     : wait_options(20000LL * test_slowdown());
    dlock_lock *l = NULL;
    w->rc = dlock_lock_acquire(&l, w->c, "shared:woken", 30000, &o);
    if (w->rc != 0)
        return NULL;
    snprintf(w->token, sizeof(w->token), "%s", dlock_lock_token(l));
    usleep(10 * 1000);
    w->rc = dlock_lock_release(l);
    dlock_lock_free(l);
    return NULL;
}

static void *writer_thread(void *arg)
{
    return woken_thread(arg, false);
}

static void *late_reader_thread(void *arg)
{
    return woken_thread(arg, true);
}

/* How many listen on `channel` (PUBSUB SHARDNUMSUB). */
static long long listeners(redisContext *redis, const char *channel)
{
    redisReply *r = redisCommand(redis, "PUBSUB SHARDNUMSUB %s", channel);
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer : -1;
    freeReplyObject(r);
    return n;
}

/* The next message on `sub`'s channel, into out (empty: none came). */
static void next_message(redisContext *sub, char *out, size_t len)
{
    redisReply *r = NULL;
    out[0] = '\0';
    if (redisGetReply(sub, (void **)&r) == REDIS_OK && r && r->type == REDIS_REPLY_ARRAY &&
        r->elements == 3 && r->element[2]->type == REDIS_REPLY_STRING)
        snprintf(out, len, "%s", r->element[2]->str);
    freeReplyObject(r);
}

/* Eight writers wait behind a reader, and two readers behind them. Each
 * release wakes one writer ("writer:TOKEN" on the release channel: the
 * last reader's, then each writer's while another waits), the last
 * writer's every waiter (its token): the readers, together. The script
 * calls from the reader's release on: the release, each grant and
 * release, and the waiters' own retries (each tries again within 600 ms
 * or 1 s, at most once more per 500 ms of the run), not a busy try of
 * every waiter at every release (44 more). */
static void test_shared_release_wakes_one_waiting_writer(void **state)
{
    enum { WRITERS = 8, READERS = 2, WAITERS = WRITERS + READERS };
    redisContext *redis = *state, *sub;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = shared_options(0);
    dlock_lock *r = take(c, "shared:woken", 30000, &o);
    struct writer *w[WAITERS];
    const char *channel = aux_key("shared:woken", "released");
    char message[128];
    long long before, calls, started, took_ms;
    int woken = 0;

    sub = connect_to(&server);
    redisSetTimeout(sub, (struct timeval){.tv_sec = 10L * test_slowdown()});
    freeReplyObject(redisCommand(sub, "SSUBSCRIBE %s", channel));
    for (int i = 0; i < WAITERS; i++) {
        struct writer one = {.c = client_on(server.url)};
        w[i] = start_thread(i < WRITERS ? writer_thread : late_reader_thread, &one, sizeof(one));
        if (i == WRITERS - 1)
            wait_for_zcard(redis, aux_key("shared:woken", "writer"), WRITERS);
    }
    for (int i = 0; listeners(redis, channel) < WAITERS + 1; i++) {
        assert_true(i < 1000 * test_slowdown());
        usleep(10 * 1000);
    }
    before = script_calls(redis);
    started = test_now_ms();
    assert_int_equal(dlock_lock_release(r), 0);
    for (int i = 0; i < WAITERS; i++) {
        join_thread(w[i]);
        assert_int_equal(w[i]->rc, 0);
    }
    took_ms = test_now_ms() - started;
    calls = script_calls(redis) - before;
    print_message("%lld script calls in %lld ms\n", calls, took_ms);
    assert_true(calls <= 1 + 2 * WAITERS + WAITERS * (1 + took_ms / 500));
    for (int i = 0; i <= WRITERS; i++) {
        next_message(sub, message, sizeof(message));
        if (strncmp(message, "writer:", 7) != 0)
            break;
        for (int k = 0; k < WRITERS; k++)
            woken += strcmp(message + 7, w[k]->token) == 0;
    }
    assert_int_equal(woken, WRITERS);
    assert_int_equal(strlen(message), DLOCK_TOKEN_LEN); /* the last writer's own token */
}

/* A writer whose wait ends without the lock leaves the waiting writers at
 * once (a new reader gets in), not when its lease of 2 s ends; an acquire
 * that does not wait never joins them. */
static void test_shared_writer_that_gives_up_leaves_at_once(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = shared_options(0), w = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *r = take(c, "shared:giveup", 30000, &o);

    expect_acquire(DLOCK_EBUSY, c, "shared:giveup", 30000, &w);
    assert_false(key_exists(redis, aux_key("shared:giveup", "writer")));
    w.wait_ms = 300;
    expect_acquire(DLOCK_EBUSY, c, "shared:giveup", 30000, &w);
    assert_false(key_exists(redis, aux_key("shared:giveup", "writer")));
    take_and_release(c, "shared:giveup", 30000, &o);
    assert_int_equal(dlock_lock_release(r), 0);
}

/* Shared holders between two exclusive ones share the first's fence; the
 * next exclusive one's is larger. A shared token releases by token (the
 * command's adopted handle), and a shared hold on a semaphore's name is
 * the wrong kind. */
static void test_shared_fence_epoch_release_by_token_wrong_kind(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = shared_options(0), sem = permits_options(2);
    dlock_lock *x = take(c, "shared:fence", 30000, NULL), *a, *b, *y, *s;
    uint64_t f = dlock_lock_fence(x);
    cli_proc p;
    char token[33];

    assert_int_equal(dlock_lock_release(x), 0);
    a = take(c, "shared:fence", 30000, &o);
    b = take(c, "shared:fence", 30000, &o);
    assert_int_equal(dlock_lock_fence(a), f);
    assert_int_equal(dlock_lock_fence(b), f);
    assert_int_equal(dlock_lock_release(a), 0);
    assert_int_equal(dlock_lock_release(b), 0);
    y = take(c, "shared:fence", 30000, NULL);
    assert_true(dlock_lock_fence(y) > f);
    assert_int_equal(dlock_lock_release(y), 0);

    assert_int_equal(cli_run(&p, server.url,
                             (const char *const[]){"acquire", "-s", "shared:fence", NULL}, 10000),
                     0);
    memcpy(token, p.out, 32);
    token[32] = '\0';
    assert_int_equal(cli_run(&p, server.url,
                             (const char *const[]){"extend", "shared:fence", token, NULL}, 10000),
                     0);
    assert_int_equal(cli_run(&p, server.url,
                             (const char *const[]){"status", "shared:fence", NULL}, 10000),
                     0);
    assert_non_null(strstr(p.out, "held shared by 1"));
    assert_int_equal(cli_run(&p, server.url,
                             (const char *const[]){"release", "shared:fence", token, NULL}, 10000),
                     0);
    assert_false(key_exists(redis, "shared:fence"));
    assert_false(key_exists(redis, aux_key("shared:fence", "readers")));

    s = take(c, "shared:sem", 30000, &sem);
    expect_acquire(DLOCK_EWRONGTYPE, c, "shared:sem", 30000, &o);
    assert_int_equal(dlock_lock_release(s), 0);
}

/* Redlock of 5 with 2 servers killed: shared holders together, an
 * exclusive one busy while they hold and alone once they left; shared
 * holders busy while it holds. Renewal keeps the shared holds. */
static void test_shared_redlock_two_of_five_killed(void **state)
{
    test_redis *r = start_servers(5);
    dlock_client *c1 = client_on_servers(r, 5, NODE_TIMEOUT_MS, 0);
    dlock_client *c2 = client_on_servers(r, 5, NODE_TIMEOUT_MS, 0);
    dlock_acquire_options o = shared_options(0);
    dlock_lock *a, *b, *x;
    /* Renewed every third of it: a busy machine must not starve it. */
    const int64_t ttl = 1000LL * test_slowdown();
    (void)state;

    test_redis_kill(&r[0]);
    test_redis_kill(&r[3]);
    o.auto_renew = 1;
    a = take(c1, "shared:redlock", ttl, &o);
    b = take(c2, "shared:redlock", ttl, &o);
    assert_int_equal(dlock_lock_fence(a), dlock_lock_fence(b));
    expect_acquire(DLOCK_EBUSY, c1, "shared:redlock", ttl, NULL);
    usleep((useconds_t)(ttl * 1500)); /* past the TTL: renewed */
    assert_true(dlock_lock_held(a) && dlock_lock_held(b));
    expect_acquire(DLOCK_EBUSY, c2, "shared:redlock", ttl, NULL);
    assert_int_equal(dlock_lock_release(a), 0);
    expect_acquire(DLOCK_EBUSY, c1, "shared:redlock", ttl, NULL);
    assert_int_equal(dlock_lock_release(b), 0);
    o.auto_renew = 0;
    x = take(c1, "shared:redlock", 30000, NULL);
    assert_true(dlock_lock_fence(x) > 0);
    expect_acquire(DLOCK_EBUSY, c2, "shared:redlock", 30000, &o);
    assert_int_equal(dlock_lock_release(x), 0);
    a = take(c2, "shared:redlock", 30000, &o);
    assert_int_equal(dlock_lock_fence(a), dlock_lock_fence(x));
    assert_int_equal(dlock_lock_release(a), 0);
}

/* Runs one command on each of servers [from, to). */
static void on_servers(test_redis *r, int from, int to, const char *fmt, const char *key)
{
    for (int i = from; i < to; i++)
        freeReplyObject(run(connect_to(&r[i]), fmt, key));
}

/* Waits until each of servers [from, to) holds `value` at `key` (NULL: has
 * no `key`), 5 s (times the slowdown) at most: a call decided by a
 * majority may still be on its way to the rest. */
static void wait_on_servers(test_redis *r, int from, int to, const char *key, const char *value)
{
    long long until = test_now_ms() + 5000LL * test_slowdown();
    for (int i = from; i < to; i++) {
        redisContext *ri = connect_to(&r[i]);
        while ((value ? !key_holds(ri, key, value) : key_exists(ri, key)) &&
               test_now_ms() < until)
            usleep(5 * 1000);
        if (value)
            assert_key_holds(ri, key, value);
        else
            assert_false(key_exists(ri, key));
    }
}

/* The largest fence stored on servers [from, to). */
static uint64_t largest_fence(test_redis *r, int from, int to, const char *name)
{
    uint64_t largest = 0;
    for (int i = from; i < to; i++) {
        const char *stored = string_at(connect_to(&r[i]), aux_key(name, "fence"));
        uint64_t f = stored ? strtoull(stored, NULL, 10) : 0;
        largest = f > largest ? f : largest;
    }
    return largest;
}

/* Redlock of 5: after an exclusive holder (fence F), an exclusive attempt
 * that failed (servers 2-4 held by someone else) raised the fence counter
 * of servers 0 and 1. A reader granted by servers 2-4 (0 and 1 paused) and
 * one granted by all 5 still share one fence, F's: the epoch the exclusive
 * holder's majority agreed on, not a counter a failed attempt raised. (On
 * a loaded machine, a server whose grant of F came too late to be counted
 * may have taken its own clock instead of the proposal: then the readers
 * share the largest fence of servers 2-4, F or that one.) */
static void test_shared_redlock_readers_of_an_epoch_share_its_fence(void **state)
{
    test_redis *r = start_servers(5);
    dlock_client *c = client_on_servers(r, 5, NODE_TIMEOUT_MS, 0);
    dlock_acquire_options o = shared_options(0);
    dlock_lock *x, *y, *a, *b;
    uint64_t epoch, raised;
    (void)state;

    x = take(c, "shared:epoch", 30000, NULL);
    wait_on_servers(r, 0, 5, "shared:epoch", dlock_lock_token(x));
    assert_int_equal(dlock_lock_release(x), 0);
    wait_on_servers(r, 0, 5, "shared:epoch", NULL);
    epoch = largest_fence(r, 2, 5, "shared:epoch");
    assert_true(epoch >= dlock_lock_fence(x));
    on_servers(r, 2, 5, "SET %s someone-else PX 30000", "shared:epoch");
    expect_acquire(DLOCK_EBUSY, c, "shared:epoch", 30000, NULL);
    on_servers(r, 2, 5, "DEL %s", "shared:epoch");
    raised = largest_fence(r, 0, 2, "shared:epoch");
    assert_true(raised > epoch);
    test_redis_pause(&r[0]);
    test_redis_pause(&r[1]);
    a = take(c, "shared:epoch", 30000, &o);
    test_redis_resume(&r[0]);
    test_redis_resume(&r[1]);
    b = take(c, "shared:epoch", 30000, &o);
    assert_int_equal(dlock_lock_fence(a), epoch);
    assert_int_equal(dlock_lock_fence(b), epoch);

    /* Repair: server 4 saw the readers go and kept the fence (a release
     * that a renewal's late extend could overtake): not repaired. Server 3
     * lost everything (FLUSHALL): it gets the entry back. */
    on_servers(r, 4, 5, "DEL %s", "shared:epoch");
    on_servers(r, 4, 5, "DEL %s", aux_key("shared:epoch", "readers"));
    on_servers(r, 4, 5, "DEL %s", aux_key("shared:epoch", "rowners"));
    {
        redisContext *r4 = connect_to(&r[4]), *r3 = connect_to(&r[3]);
        long long before4 = script_calls(r4);
        freeReplyObject(run(r3, "FLUSHALL"));
        assert_int_equal(dlock_lock_extend(a, 30000), 0);
        /* The extend returns once a majority said yes: servers 3 and 4,
         * no votes, may run it a moment later. */
        wait_for_key(r3, "shared:epoch");
        wait_for_script_calls(r4, before4, 1);
        assert_false(key_exists(r4, "shared:epoch"));
    }
    assert_int_equal(dlock_lock_release(a), 0);
    assert_int_equal(dlock_lock_release(b), 0);
    y = take(c, "shared:epoch", 30000, NULL);
    assert_true(dlock_lock_fence(y) > dlock_lock_fence(x));
    assert_int_equal(dlock_lock_release(y), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
#define U(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_shared_runs_overlap_exclusive_runs_alone),
        T(test_shared_reader_stream_does_not_starve_a_writer),
        T(test_shared_dead_writer_frees_the_readers),
        T(test_shared_second_waiting_writer_keeps_readers_out),
        T(test_shared_writer_that_gives_up_leaves_at_once),
        T(test_shared_release_wakes_one_waiting_writer),
        T(test_shared_fence_epoch_release_by_token_wrong_kind),
        U(test_shared_redlock_two_of_five_killed),
        U(test_shared_redlock_readers_of_an_epoch_share_its_fence),
    };
#undef T
#undef U
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
