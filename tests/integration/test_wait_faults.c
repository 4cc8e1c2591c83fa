/* Waits that ride out failing servers: `dlock acquire -w` and `dlock run
 * -w` through a standalone server that is down when they start or
 * restarts while they wait, a wait that gives up on a server that stays
 * down (and says so), -n that makes one try, a fair waiter that keeps its
 * place across a network blip shorter than its lease, a Sentinel primary
 * killed under a waiting command and a waiting library call, and the
 * failures that no wait retries (a wrong password, a reply that is no
 * Redis reply). Servers are real processes, killed by pid. */
#include "cluster_tools.h"
#include "helpers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define CLI_WAIT_MS (40000 * test_slowdown())

/* How many "trying again" lines (-v, one per retry) are in `err`. */
static int retries_told(const char *err)
{
    int n = 0;
    for (const char *p = err; (p = strstr(p, "trying again in ")) != NULL; p++)
        n++;
    return n;
}

/* The seconds in "dlock: faults:gone: gave up after 1.0 s: ...", or -1. */
static double gave_up_after(const char *err)
{
    const char *said = strstr(err, "dlock: faults:gone: gave up after ");
    return said ? strtod(said + strlen("dlock: faults:gone: gave up after "), NULL) : -1;
}

/* A waiter started while the server is down gets the lock once it is back;
 * so does one whose server restarts (empty) while it waits for a holder. */
static void test_wait_cli_rides_out_a_server_restart(void **state)
{
    test_redis *server = *state;
    const char *acquire[] = {"acquire", "-t", "60s", "-w", "20s", "faults:down", NULL};
    const char *run_down[] = {"run", "-w", "20s", "faults:down-run", "--", "true", NULL};
    const char *run_held[] = {"run", "-w", "20s", "faults:held", "--", "true", NULL};
    cli_proc *waiter, *runner;
    dlock_client *c = client_on(server->url);

    test_redis_kill(server);
    waiter = start_cli(server->url, acquire, NULL);
    runner = start_cli(server->url, run_down, NULL);
    usleep(700 * 1000);
    assert_int_equal(test_redis_restart(server), 0);
    assert_int_equal(cli_wait(waiter, CLI_WAIT_MS), 0);
    assert_true(waiter->took_ms >= 700);
    assert_int_equal(cli_wait(runner, CLI_WAIT_MS), 0);
    assert_true(runner->took_ms >= 700);
    /* the token printed is held */
    assert_true(key_exists(connect_to(server), "faults:down"));

    take(c, "faults:held", 60000, NULL);
    runner = start_cli(server->url, run_held, NULL);
    usleep(300 * 1000); /* it found the name held, and listens */
    test_redis_kill(server);
    usleep(500 * 1000);
    assert_int_equal(test_redis_restart(server), 0); /* empty: the holder's key is gone */
    assert_int_equal(cli_wait(runner, CLI_WAIT_MS), 0);
    assert_true(runner->took_ms >= 800);
}

/* A wait for a server that stays down ends at its deadline with 69, says
 * for how long it tried and what it saw last, and with -v each retry; -n
 * and -w 0 make one try and end at once, retrying nothing. */
static void test_wait_cli_gives_up_at_its_deadline(void **state)
{
    char url[96];
    const char *acquire[] = {"-v", "acquire", "-w", "1s", "faults:gone", NULL};
    const char *run_cmd[] = {"run", "-w", "1s", "faults:gone", "--", "true", NULL};
    const char *nowait[] = {"-v", "acquire", "-n", "faults:gone", NULL};
    const char *zero[] = {"-v", "run", "-w", "0", "faults:gone", "--", "true", NULL};
    cli_proc p;
    (void)state;

    /* what -v prints never holds the password */
    snprintf(url, sizeof(url), "redis://:s3cr3t-y@127.0.0.1:%d", test_free_port());
    assert_int_equal(cli_run(&p, url, acquire, CLI_WAIT_MS), 69);
    assert_null(strstr(p.err, "s3cr3t-y"));
    assert_true(p.took_ms >= 1000);
    assert_true(gave_up_after(p.err) >= 1.0);
    assert_non_null(strstr(p.err, " s: "));
    assert_non_null(strstr(p.err, "Connection refused"));
    assert_true(retries_told(p.err) >= 2);

    assert_int_equal(cli_run(&p, url, run_cmd, CLI_WAIT_MS), 69);
    assert_true(p.took_ms >= 1000);
    assert_true(gave_up_after(p.err) >= 1.0);
    assert_int_equal(retries_told(p.err), 0); /* without -v */

    assert_int_equal(cli_run(&p, url, nowait, CLI_WAIT_MS), 69);
    assert_true(p.took_ms < 1000LL * test_slowdown());
    assert_null(strstr(p.err, "gave up"));
    assert_int_equal(retries_told(p.err), 0);
    assert_non_null(strstr(p.err, "Connection refused"));
    assert_int_equal(cli_run(&p, url, zero, CLI_WAIT_MS), 69);
    assert_true(p.took_ms < 1000LL * test_slowdown());
    assert_int_equal(retries_told(p.err), 0);
}

/* A server that never answers (the network to it silent): a wait of
 * 300 ms ends about then, with a try begun at its end cut short, not a
 * command timeout or two (the try, and the cleanup of an acquire that may
 * have landed) after it; the library's wait alike. */
static void test_wait_against_a_silent_server_keeps_its_deadline(void **state)
{
    test_redis *server = *state;
    char url[64];
    fault_proxy *proxy = start_proxy(server->port, url, sizeof(url));
    const char *acquire[] = {"-v", "acquire", "-w", "300ms", "-t", "5s", "faults:silent", NULL};
    dlock_client *c = client_on(url);
    dlock_acquire_options o = wait_options(300);
    dlock_lock *lock = NULL;
    long long start;
    cli_proc p;

    fault_proxy_set(proxy, FAULT_BLACKHOLE, 0);
    assert_int_equal(cli_run(&p, url, acquire, CLI_WAIT_MS), 69);
    if (p.took_ms < 300 || p.took_ms > 1500 || !strstr(p.err, "gave up after"))
        fail_msg("-w 300ms took %lld ms: %s", p.took_ms, p.err);
    start = test_now_ms();
    assert_int_equal(dlock_lock_acquire(&lock, c, "faults:silent", 5000, &o), DLOCK_ETIMEDOUT);
    if (test_now_ms() - start > 1500)
        fail_msg("a wait of 300 ms took %lld ms", test_now_ms() - start);
    assert_true(fault_proxy_hits(proxy) > 0);
}

struct queued_waiter {
    dlock_client *client;
    const char *name;
    unsigned permits;
    int rc;
    long long took_ms;
};

static void *wait_queued(void *arg)
{
    struct queued_waiter *w = arg;
    dlock_acquire_options o = wait_options(1000);
    dlock_lock *lock = NULL;
    long long start = test_now_ms();
    o.fair = w->permits == 0;
    o.permits = w->permits;
    w->rc = dlock_lock_acquire(&lock, w->client, w->name, 5000, &o);
    w->took_ms = test_now_ms() - start;
    kept_lock(lock);
    return NULL;
}

/* A fair waiter and a semaphore's, queued behind holders, whose server
 * goes silent: each wait of a second ends about then, its leave of the
 * queue included (not a command timeout of 5 s later). */
static void test_wait_queued_against_a_silent_server_keeps_its_deadline(void **state)
{
    test_redis *server = *state;
    dlock_client *holder = client_on(server->url);
    dlock_acquire_options fair = DLOCK_ACQUIRE_OPTIONS_INIT, sem = DLOCK_ACQUIRE_OPTIONS_INIT;
    char url[64];
    fault_proxy *proxy = start_proxy(server->port, url, sizeof(url));
    (void)state;
    fair.fair = 1;
    sem.permits = 2;
    take(holder, "faults:fair-silent", 30000, &fair);
    for (int i = 0; i < 2; i++)
        take(holder, "faults:sem-silent", 30000, &sem);
    for (unsigned permits = 0; permits <= 2; permits += 2) {
        struct queued_waiter *w, one = {
            .client = client_with_timeouts(url, 0, 5000 * test_slowdown()),
            .name = permits ? "faults:sem-silent" : "faults:fair-silent", .permits = permits};
        fault_proxy_set(proxy, FAULT_PASS, 0);
        w = start_thread(wait_queued, &one, sizeof(one));
        usleep(300 * 1000); /* it queued, and waits to be told */
        fault_proxy_set(proxy, FAULT_BLACKHOLE, 0);
        join_thread(w);
        assert_true(w->rc == DLOCK_EBUSY || w->rc == DLOCK_ETIMEDOUT);
        if (w->took_ms > 1000 + 1000LL * test_slowdown())
            fail_msg("%s: a wait of 1 s took %lld ms", one.name, w->took_ms);
    }
}

/* A wrong password and a reply that is no Redis reply will be the same on
 * the next try: a wait of an hour ends at once (77, 76; DLOCK_EAUTH,
 * DLOCK_EPROTO from the library). */
static void test_wait_lasting_failures_end_it_at_once(void **state)
{
    static const char *const auth[] = {"--requirepass", "right", NULL};
    const int64_t long_wait = 20000LL * test_slowdown(); /* as good as an hour */
    const char *acquire[] = {"acquire", "-w", "1h", "faults:auth", NULL};
    test_redis *locked = start_server(auth);
    fake_server *fake;
    char url[160];
    dlock_acquire_options o = wait_options(long_wait);
    long long start;
    cli_proc p;
    (void)state;

    snprintf(url, sizeof(url), "redis://:s3cr3t-x@127.0.0.1:%d", locked->port);
    assert_int_equal(cli_run(&p, url, acquire, CLI_WAIT_MS), 77);
    assert_true(p.took_ms < 5000LL * test_slowdown());
    assert_null(strstr(p.err, "s3cr3t-x"));
    start = test_now_ms();
    expect_acquire(DLOCK_EAUTH, client_on(url), "faults:auth", 10000, &o);
    assert_true(test_now_ms() - start < 5000LL * test_slowdown());

    fake = start_fake_server("@garbage\r\n", 10, false);
    assert_int_equal(cli_run(&p, fake->url, acquire, CLI_WAIT_MS), 76);
    assert_true(p.took_ms < 5000LL * test_slowdown());
    start = test_now_ms();
    expect_acquire(DLOCK_EPROTO, client_on(fake->url), "faults:proto", 10000, &o);
    assert_true(test_now_ms() - start < 5000LL * test_slowdown());
}

/* `key`'s score in the sorted set `zset`, or -1. */
static long long score_of(redisContext *redis, const char *zset, const char *member)
{
    redisReply *r = run(redis, "ZSCORE %s %s", zset, member);
    long long score = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return score;
}

static char *queue_head(redisContext *redis, const char *name)
{
    redisReply *r = run(redis, "ZRANGE %s 0 0", aux_key(name, "queue"));
    char *head = r->elements == 1 ? strdup(r->element[0]->str) : NULL;
    freeReplyObject(r);
    return kept_string(head);
}

/* Waits (10 s at most, times the slowdown) until the lease of `token` on
 * `name` ends after `than`. */
static void wait_lease_after(redisContext *redis, const char *name, const char *token,
                             long long than)
{
    long long until = test_now_ms() + 10000LL * test_slowdown();
    while (score_of(redis, aux_key(name, "presence"), token) <= than) {
        if (test_now_ms() > until)
            fail_msg("the lease of %s on %s was not renewed", token, name);
        usleep(20 * 1000);
    }
}

/* Two fair waiters, A through a proxy and B after it; the proxy resets A's
 * connections for 1 s, less than its 5 s lease: A renews its lease once
 * it is back, at the head of the queue, and gets the lock before B. */
static void test_wait_cli_fair_waiter_keeps_its_place(void **state)
{
    test_redis *server = *state;
    char url[64], order[256], cmd_a[300], cmd_b[300];
    fault_proxy *proxy = start_proxy(server->port, url, sizeof(url));
    dlock_acquire_options fair = fair_options(0, 0);
    redisContext *redis = connect_to(server);
    const char *a[] = {"-v", "run", "--fair", "--lease", "5s", "-w", "20s", "faults:fair",
                       "-c", cmd_a, NULL};
    const char *b[] = {"run", "--fair", "--lease", "5s", "-w", "20s", "faults:fair",
                       "-c", cmd_b, NULL};
    cli_proc *pa, *pb;
    dlock_lock *holder;
    long long lease_end;
    char *head;
    FILE *f;

    scratch_path(order, sizeof(order), server->dir, "order");
    snprintf(cmd_a, sizeof(cmd_a), "echo A >> %s", order);
    snprintf(cmd_b, sizeof(cmd_b), "echo B >> %s", order);
    holder = take(client_on(server->url), "faults:fair", 60000, &fair);
    pa = start_cli(url, a, NULL);
    wait_for_queued(redis, "faults:fair", 1);
    head = queue_head(redis, "faults:fair");
    pb = start_cli(server->url, b, NULL);
    wait_for_queued(redis, "faults:fair", 2);

    fault_proxy_set(proxy, FAULT_RESET, 0);
    usleep(100 * 1000);
    lease_end = score_of(redis, aux_key("faults:fair", "presence"), head);
    usleep(900 * 1000);
    fault_proxy_set(proxy, FAULT_PASS, 0);
    wait_lease_after(redis, "faults:fair", head, lease_end);
    /* renewed in its place, not queued again */
    assert_string_equal(queue_head(redis, "faults:fair"), head);
    assert_true(fault_proxy_hits(proxy) > 0);

    assert_int_equal(dlock_lock_release(holder), 0);
    assert_int_equal(cli_wait(pa, CLI_WAIT_MS), 0);
    assert_true(retries_told(pa->err) >= 1);
    assert_int_equal(cli_wait(pb, CLI_WAIT_MS), 0);
    f = fopen(order, "r");
    assert_non_null(f);
    assert_int_equal(fread(cmd_a, 1, sizeof(cmd_a) - 1, f), 4);
    cmd_a[4] = '\0';
    assert_string_equal(cmd_a, "A\nB\n");
    fclose(f);
}

struct library_waiter {
    dlock_client *c;
    const char *name;
    int rc;
    uint64_t fence;
};

static void *library_wait(void *arg)
{
    struct library_waiter *w = arg;
    dlock_acquire_options o = wait_options(30000LL * test_slowdown());
    dlock_lock *lock = NULL;
    w->rc = dlock_lock_acquire(&lock, w->c, w->name, 30000, &o);
    if (w->rc == 0) {
        w->fence = dlock_lock_fence(lock);
        w->rc = dlock_lock_release(lock);
    }
    dlock_lock_free(lock);
    return NULL;
}

/* Holds `name` on the primary for `ttl_ms` (no release: held until its TTL
 * runs out), and waits until both replicas have its key. */
static void hold_replicated(test_sentinels *s, const char *name, int64_t ttl_ms)
{
    test_redis *replicas[] = {&s->replica, &s->replica2};
    take(client_on(s->url), name, ttl_ms, NULL);
    for (size_t i = 0; i < 2; i++)
        wait_for_key(connect_to(replicas[i]), name);
}

/* The fence stored for `name` on the server at `port`. */
static unsigned long long stored_fence(int port, const char *name)
{
    redisReply *r = test_command(port, "GET %s", aux_key(name, "fence"));
    unsigned long long fence = r && r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    return fence;
}

/* A primary with two replicas and three sentinels; names held for 3 s; a
 * `dlock run -w` and a waiting library call. The primary is SIGKILLed:
 * both follow the failover and get their lock on the new primary (whose
 * fence keys hold the fences they were given). */
static void test_wait_follows_a_sentinel_failover(void **state)
{
    test_sentinels *s = start_quick_sentinels("faultsprimary", 500);
    const char *args[] = {"run", "-w", "30s", "faults:sentinel-cli", "-c", "echo $DLOCK_FENCE",
                          NULL};
    struct library_waiter *lib;
    int before, after;
    cli_proc *p;
    (void)state;

    before = test_sentinels_primary_port(s);
    hold_replicated(s, "faults:sentinel-cli", 3000);
    hold_replicated(s, "faults:sentinel-lib", 3000);
    p = start_cli(s->url, args, NULL);
    lib = start_thread(library_wait,
                       &(struct library_waiter){.c = client_on(s->url),
                                                .name = "faults:sentinel-lib"},
                       sizeof(struct library_waiter));
    usleep(300 * 1000); /* both found their name held, and listen */
    test_redis_kill(&s->primary);

    assert_int_equal(cli_wait(p, CLI_WAIT_MS), 0);
    join_thread(lib);
    assert_int_equal(lib->rc, 0);
    after = test_sentinels_primary_port(s);
    assert_true(after > 0 && after != before);
    assert_int_equal(strtoull(p->out, NULL, 10), stored_fence(after, "faults:sentinel-cli"));
    assert_int_equal(lib->fence, stored_fence(after, "faults:sentinel-lib"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_server, cleanup_teardown)
#define U(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_wait_cli_rides_out_a_server_restart),
        U(test_wait_cli_gives_up_at_its_deadline),
        U(test_wait_lasting_failures_end_it_at_once),
        T(test_wait_cli_fair_waiter_keeps_its_place),
        T(test_wait_against_a_silent_server_keeps_its_deadline),
        T(test_wait_queued_against_a_silent_server_keeps_its_deadline),
        U(test_wait_follows_a_sentinel_failover),
    };
#undef T
#undef U
    return cmocka_run_group_tests(tests, NULL, NULL);
}
