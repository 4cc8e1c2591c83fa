/* Shared holds against real redis-servers: shared holders together and
 * never with an exclusive one (an interval log of `dlock run -s` and
 * `dlock run`), a waiting writer is not starved by a stream of readers, a
 * dead writer-in-waiting frees the readers within its mark's lease, the
 * fence of the exclusive epoch, release by token, the wrong kind, and the
 * same exclusion under Redlock with 2 of 5 servers killed. */
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

/* Redlock's per-node deadline in these tests: the default (a twentieth of
 * the TTL) is missed on a busy machine. */
#define NODE_TIMEOUT_MS (250 * test_slowdown())

static dlock_acquire_options shared(int64_t wait_ms)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    o.shared = 1;
    o.wait_ms = wait_ms;
    return o;
}

/* A plain connection to the group's server, from the helpers. */
#define setup setup_group_redis
#define teardown teardown_group_redis

/* Waits (10 s at most, times the slowdown) until n hold `name` shared. */
static void wait_until(redisContext *redis, const char *name, long long n)
{
    wait_for_zcard(redis, aux_key(name, "readers"), n);
}

/* `dlock run [-s] NAME -c ...` that logs "start K" and "end K" (K s or x)
 * to `log`, holding for `hold` seconds. */
static void start_logged(cli_proc *p, const char *name, bool is_shared, const char *hold,
                         const char *log)
{
    char script[512];
    const char *kind = is_shared ? "s" : "x";
    snprintf(script, sizeof(script),
             "echo \"start %s\" >>%s; sleep %s; echo \"end %s\" >>%s",
             kind, log, hold, kind, log);
    assert_int_equal(cli_start(p, server.url,
                               is_shared ? (const char *const[]){"run", "-s", name, "-c", script,
                                                                 NULL}
                                         : (const char *const[]){"run", name, "-c", script, NULL},
                               NULL),
                     0);
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
    cli_proc p[ALL];
    char log[160];
    int k = 0;

    scratch_path(log, sizeof(log), server.dir, "shared-intervals");
    for (; k < FIRST; k++)
        start_logged(&p[k], "shared:runs", true, "1.5", log);
    wait_until(redis, "shared:runs", FIRST);
    for (; k < FIRST + EXCL; k++)
        start_logged(&p[k], "shared:runs", false, "0.2", log);
    wait_for_key(redis, aux_key("shared:runs", "writer"));
    for (; k < ALL; k++)
        start_logged(&p[k], "shared:runs", true, "0.2", log);
    for (int i = 0; i < ALL; i++)
        assert_int_equal(cli_wait(&p[i], 30000 * test_slowdown()), 0);
    assert_int_equal(check_log(log, ALL), FIRST);
}

struct reader {
    const char *url;
    atomic_bool *stop;
    int grants;
    int rc;
};

/* Takes the name shared for 300 ms, again and again, until told to stop. */
static void *reader_thread(void *arg)
{
    struct reader *r = arg;
    dlock_client_options co = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_acquire_options o = shared(DLOCK_WAIT_FOREVER);
    dlock_client *c = NULL;
    co.urls = &r->url;
    co.n_urls = 1;
    r->rc = dlock_client_open(&c, &co, NULL, 0);
    while (r->rc == 0 && !atomic_load(r->stop)) {
        dlock_lock *l = NULL;
        o.wait_ms = 5000;
        r->rc = dlock_lock_acquire(&l, c, "shared:stream", 30000, &o);
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
    dlock_client_close(c);
    return NULL;
}

/* Four readers in a stream of overlapping 300 ms holds: the name is never
 * free. A writer that starts waiting gets in within the longest remaining
 * hold of the readers inside (300 ms), plus a margin, not never. */
static void test_shared_reader_stream_does_not_starve_a_writer(void **state)
{
    enum { READERS = 4 };
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    pthread_t threads[READERS];
    struct reader r[READERS];
    atomic_bool stop = false;
    dlock_lock *writer = NULL;
    long long asked, waited;
    (void)state;

    for (int i = 0; i < READERS; i++) {
        r[i] = (struct reader){server.url, &stop, 0, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, reader_thread, &r[i]), 0);
        usleep(80 * 1000);
    }
    usleep(500 * 1000);
    o.wait_ms = 20000;
    asked = test_now_ms();
    assert_int_equal(dlock_lock_acquire(&writer, c, "shared:stream", 30000, &o), 0);
    waited = test_now_ms() - asked;
    print_message("the writer waited %lld ms\n", waited);
    assert_true(waited < (300LL + 1000) * test_slowdown());
    usleep(100 * 1000);
    assert_int_equal(dlock_lock_release(writer), 0);
    dlock_lock_free(writer);
    atomic_store(&stop, true);
    for (int i = 0; i < READERS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(r[i].rc, 0);
        assert_true(r[i].grants >= 2);
    }
    dlock_client_close(c);
}

/* A writer SIGKILLed while it waits: new shared holders get in once its
 * mark's lease (2 s) ends, not after the readers' TTL. */
static void test_shared_dead_writer_frees_the_readers(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = shared(0);
    dlock_lock *first = must_acquire(c, "shared:deadwriter", 30000, &o), *second = NULL;
    cli_proc writer;
    long long killed, waited;

    assert_int_equal(cli_start(&writer, server.url,
                               (const char *const[]){"run", "shared:deadwriter", "--", "true", NULL},
                               NULL),
                     0);
    wait_for_key(redis, aux_key("shared:deadwriter", "writer"));
    assert_int_equal(dlock_lock_acquire(&second, c, "shared:deadwriter", 30000, &o), DLOCK_EBUSY);
    kill(writer.pid, SIGKILL);
    killed = test_now_ms();
    o.wait_ms = 10000LL * test_slowdown();
    second = must_acquire(c, "shared:deadwriter", 30000, &o);
    waited = test_now_ms() - killed;
    assert_true(waited < (2000LL + 1000) * test_slowdown());
    assert_int_equal(cli_wait(&writer, 1000), 128 + SIGKILL);
    assert_int_equal(dlock_lock_release(second), 0);
    assert_int_equal(dlock_lock_release(first), 0);
    dlock_lock_free(first);
    dlock_lock_free(second);
    dlock_client_close(c);
}

/* Two writers wait behind a reader: W2, a `dlock run` stopped (SIGSTOP)
 * once it waits, its lease of 2 s running, and W1, which gets in when the
 * reader leaves. W1 out again, W2's wait still keeps a new reader out;
 * W2, resumed, gets its turn, and then the reader. */
static void test_shared_second_waiting_writer_keeps_readers_out(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = shared(0);
    dlock_lock *r = must_acquire(c, "shared:writers", 30000, &o), *w1, *late = NULL;
    cli_proc w2;

    assert_int_equal(cli_start(&w2, server.url,
                               (const char *const[]){"run", "shared:writers", "--", "true", NULL},
                               NULL),
                     0);
    wait_for_key(redis, aux_key("shared:writers", "writer"));
    kill(w2.pid, SIGSTOP);
    assert_int_equal(dlock_lock_release(r), 0);
    w1 = must_acquire(c, "shared:writers", 30000, NULL);
    assert_int_equal(dlock_lock_release(w1), 0);
    assert_int_equal(dlock_lock_acquire(&late, c, "shared:writers", 30000, &o), DLOCK_EBUSY);
    kill(w2.pid, SIGCONT);
    assert_int_equal(cli_wait(&w2, 10000 * test_slowdown()), 0);
    late = must_acquire(c, "shared:writers", 30000, &o);
    assert_int_equal(dlock_lock_release(late), 0);
    dlock_lock_free(r);
    dlock_lock_free(w1);
    dlock_lock_free(late);
    dlock_client_close(c);
}

/* A writer whose wait ends without the lock leaves the waiting writers at
 * once (a new reader gets in), not when its lease of 2 s ends; an acquire
 * that does not wait never joins them. */
static void test_shared_writer_that_gives_up_leaves_at_once(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = shared(0), w = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *r = must_acquire(c, "shared:giveup", 30000, &o), *x = NULL, *late;

    assert_int_equal(dlock_lock_acquire(&x, c, "shared:giveup", 30000, &w), DLOCK_EBUSY);
    assert_false(key_exists(redis, aux_key("shared:giveup", "writer")));
    w.wait_ms = 300;
    assert_int_equal(dlock_lock_acquire(&x, c, "shared:giveup", 30000, &w), DLOCK_EBUSY);
    assert_false(key_exists(redis, aux_key("shared:giveup", "writer")));
    late = must_acquire(c, "shared:giveup", 30000, &o);
    assert_int_equal(dlock_lock_release(late), 0);
    assert_int_equal(dlock_lock_release(r), 0);
    dlock_lock_free(late);
    dlock_lock_free(r);
    dlock_client_close(c);
}

/* Shared holders between two exclusive ones share the first's fence; the
 * next exclusive one's is larger. A shared token releases by token (the
 * command's adopted handle), and a shared hold on a semaphore's name is
 * the wrong kind. */
static void test_shared_fence_epoch_release_by_token_wrong_kind(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_client(server.url, 0, 0);
    dlock_acquire_options o = shared(0), sem = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *x = must_acquire(c, "shared:fence", 30000, NULL), *a, *b, *y, *s;
    uint64_t f = dlock_lock_fence(x);
    cli_proc p;
    char token[33];

    assert_int_equal(dlock_lock_release(x), 0);
    a = must_acquire(c, "shared:fence", 30000, &o);
    b = must_acquire(c, "shared:fence", 30000, &o);
    assert_int_equal(dlock_lock_fence(a), f);
    assert_int_equal(dlock_lock_fence(b), f);
    assert_int_equal(dlock_lock_release(a), 0);
    assert_int_equal(dlock_lock_release(b), 0);
    y = must_acquire(c, "shared:fence", 30000, NULL);
    assert_true(dlock_lock_fence(y) > f);
    assert_int_equal(dlock_lock_release(y), 0);
    dlock_lock_free(a);
    dlock_lock_free(b);
    dlock_lock_free(x);
    dlock_lock_free(y);

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

    sem.permits = 2;
    s = must_acquire(c, "shared:sem", 30000, &sem);
    a = NULL;
    assert_int_equal(dlock_lock_acquire(&a, c, "shared:sem", 30000, &o), DLOCK_EWRONGTYPE);
    assert_int_equal(dlock_lock_release(s), 0);
    dlock_lock_free(s);
    dlock_client_close(c);
}

/* Redlock of 5 with 2 servers killed: shared holders together, an
 * exclusive one busy while they hold and alone once they left; shared
 * holders busy while it holds. Renewal keeps the shared holds. */
static void test_shared_redlock_two_of_five_killed(void **state)
{
    test_redis r[5];
    const char *urls[5];
    dlock_client *c1, *c2;
    dlock_acquire_options o = shared(0);
    dlock_lock *a, *b, *x = NULL;
    /* Renewed every third of it: a busy machine must not starve it. */
    const int64_t ttl = 1000LL * test_slowdown();
    (void)state;

    assert_int_equal(test_redis_start_all(r, 5), 0);
    for (int i = 0; i < 5; i++)
        urls[i] = r[i].url;
    c1 = open_nodes(urls, 5, NODE_TIMEOUT_MS, 0);
    c2 = open_nodes(urls, 5, NODE_TIMEOUT_MS, 0);
    test_redis_kill(&r[0]);
    test_redis_kill(&r[3]);
    o.auto_renew = 1;
    a = must_acquire(c1, "shared:redlock", ttl, &o);
    b = must_acquire(c2, "shared:redlock", ttl, &o);
    assert_int_equal(dlock_lock_fence(a), dlock_lock_fence(b));
    assert_int_equal(dlock_lock_acquire(&x, c1, "shared:redlock", ttl, NULL), DLOCK_EBUSY);
    usleep((useconds_t)(ttl * 1500)); /* past the TTL: renewed */
    assert_true(dlock_lock_held(a) && dlock_lock_held(b));
    assert_int_equal(dlock_lock_acquire(&x, c2, "shared:redlock", ttl, NULL), DLOCK_EBUSY);
    assert_int_equal(dlock_lock_release(a), 0);
    assert_int_equal(dlock_lock_acquire(&x, c1, "shared:redlock", ttl, NULL), DLOCK_EBUSY);
    assert_int_equal(dlock_lock_release(b), 0);
    dlock_lock_free(a);
    dlock_lock_free(b);
    o.auto_renew = 0;
    x = must_acquire(c1, "shared:redlock", 30000, NULL);
    assert_true(dlock_lock_fence(x) > 0);
    assert_int_equal(dlock_lock_acquire(&a, c2, "shared:redlock", 30000, &o), DLOCK_EBUSY);
    assert_int_equal(dlock_lock_release(x), 0);
    a = must_acquire(c2, "shared:redlock", 30000, &o);
    assert_int_equal(dlock_lock_fence(a), dlock_lock_fence(x));
    assert_int_equal(dlock_lock_release(a), 0);
    dlock_lock_free(a);
    dlock_lock_free(x);
    dlock_client_close(c1);
    dlock_client_close(c2);
    test_redis_stop_all(r, 5);
}

/* Runs one command on each of servers [from, to). */
static void on_servers(test_redis *r, int from, int to, const char *fmt, const char *key)
{
    for (int i = from; i < to; i++) {
        redisContext *redis = test_redis_connect(&r[i], NULL);
        assert_non_null(redis);
        freeReplyObject(run(redis, fmt, key));
        redisFree(redis);
    }
}

/* Redlock of 5: after an exclusive holder (fence F), an exclusive attempt
 * that failed (servers 2-4 held by someone else) raised the fence counter
 * of servers 0 and 1. A reader granted by servers 2-4 (0 and 1 paused) and
 * one granted by all 5 still share one fence, F's: the epoch the exclusive
 * holder's majority agreed on, not a counter a failed attempt raised. */
static void test_shared_redlock_readers_of_an_epoch_share_its_fence(void **state)
{
    test_redis r[5];
    const char *urls[5];
    dlock_client *c;
    dlock_acquire_options o = shared(0);
    dlock_lock *x, *y = NULL, *a, *b;
    (void)state;

    assert_int_equal(test_redis_start_all(r, 5), 0);
    for (int i = 0; i < 5; i++)
        urls[i] = r[i].url;
    c = open_nodes(urls, 5, NODE_TIMEOUT_MS, 0);
    x = must_acquire(c, "shared:epoch", 30000, NULL);
    assert_int_equal(dlock_lock_release(x), 0);
    on_servers(r, 2, 5, "SET %s someone-else PX 30000", "shared:epoch");
    assert_int_equal(dlock_lock_acquire(&y, c, "shared:epoch", 30000, NULL), DLOCK_EBUSY);
    on_servers(r, 2, 5, "DEL %s", "shared:epoch");
    test_redis_pause(&r[0]);
    test_redis_pause(&r[1]);
    a = must_acquire(c, "shared:epoch", 30000, &o);
    test_redis_resume(&r[0]);
    test_redis_resume(&r[1]);
    b = must_acquire(c, "shared:epoch", 30000, &o);
    assert_int_equal(dlock_lock_fence(a), dlock_lock_fence(x));
    assert_int_equal(dlock_lock_fence(b), dlock_lock_fence(x));

    /* Repair: server 4 saw the readers go and kept the fence (a release
     * that a renewal's late extend could overtake): not repaired. Server 3
     * lost everything (FLUSHALL): it gets the entry back. */
    on_servers(r, 4, 5, "DEL %s", "shared:epoch");
    on_servers(r, 4, 5, "DEL %s", aux_key("shared:epoch", "readers"));
    on_servers(r, 4, 5, "DEL %s", aux_key("shared:epoch", "rowners"));
    {
        redisContext *r4 = test_redis_connect(&r[4], NULL), *r3 = test_redis_connect(&r[3], NULL);
        freeReplyObject(run(r3, "FLUSHALL"));
        assert_int_equal(dlock_lock_extend(a, 30000), 0);
        assert_false(key_exists(r4, "shared:epoch"));
        assert_true(key_exists(r3, "shared:epoch"));
        redisFree(r4);
        redisFree(r3);
    }
    assert_int_equal(dlock_lock_release(a), 0);
    assert_int_equal(dlock_lock_release(b), 0);
    y = must_acquire(c, "shared:epoch", 30000, NULL);
    assert_true(dlock_lock_fence(y) > dlock_lock_fence(x));
    assert_int_equal(dlock_lock_release(y), 0);
    dlock_lock_free(x);
    dlock_lock_free(y);
    dlock_lock_free(a);
    dlock_lock_free(b);
    dlock_client_close(c);
    test_redis_stop_all(r, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shared_runs_overlap_exclusive_runs_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_shared_reader_stream_does_not_starve_a_writer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_shared_dead_writer_frees_the_readers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_shared_second_waiting_writer_keeps_readers_out,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_writer_that_gives_up_leaves_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_shared_fence_epoch_release_by_token_wrong_kind, setup,
                                        teardown),
        cmocka_unit_test(test_shared_redlock_two_of_five_killed),
        cmocka_unit_test(test_shared_redlock_readers_of_an_epoch_share_its_fence),
    };
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
