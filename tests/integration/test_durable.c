/* Replica acknowledgement (replicas, --replicas) and the restart rule
 * (restart_delay_ms, --restart-delay) on real servers: a primary with a
 * replica, servers killed and restarted empty, replicas promoted with
 * REPLICAOF NO ONE. See docs/durability.md.
 *
 * The restart trials run side by side, one server (or pair) each, so that
 * 20 of them cost one delay of wall time, not twenty. */
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include <cmocka.h>

#define TRIALS 20
#define CONTROLS 2     /* negative controls, beside the trials */
#define TTL_MS 3000
#define DELAY_MS 3000 /* --restart-delay 3s */

static const char *const primary_args[] = {"--repl-diskless-sync-delay", "0", NULL};

/* A primary and its replica, the link up, through a proxy that can cut it. */
struct pair {
    test_redis primary, replica;
    fault_proxy *link;
    char port[8];
    const char *replica_args[6];
};

/* The replica has streamed everything the primary wrote, a write made now
 * included: the link is up and streaming. (After a diskless sync the
 * primary streams only once the replica's first ACK came; until then a
 * key written before the sync can be on the replica, from the snapshot,
 * and a WAIT for it answers 1.) */
static bool link_up(const struct pair *p)
{
    redisContext *primary = connect_to(&p->primary);
    redisContext *replica = connect_to(&p->replica);
    long long written;
    bool up = false;
    freeReplyObject(run(primary, "SET durable-link-check 1"));
    written = info_field(primary, "replication", "master_repl_offset:");
    for (int i = 0; i < 20 && !up; i++) {
        usleep(10000);
        up = written > 0 && info_field(replica, "replication", "slave_repl_offset:") >= written;
    }
    if (up) {
        /* And the primary knows it: the replica's ACK came. */
        redisReply *r = run(primary, "WAIT 1 1000");
        up = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
    }
    cleanup_now(replica);
    cleanup_now(primary);
    return up;
}

/* n pairs, and how many there are before them: kept as one block. */
struct pairs {
    size_t n;
    struct pair p[];
};

static void stop_pairs(void *first)
{
    struct pairs *all = (struct pairs *)((char *)first - offsetof(struct pairs, p));
    for (size_t i = 0; i < all->n; i++) {
        test_redis_stop(&all->p[i].replica);
        fault_proxy_stop(all->p[i].link);
        test_redis_stop(&all->p[i].primary);
    }
    free(all);
}

/* n pairs, each with its link up. */
static struct pair *start_pairs(size_t n)
{
    struct pairs *all = calloc(1, sizeof(*all) + n * sizeof(all->p[0]));
    struct pair *p;
    assert_non_null(all);
    all->n = n;
    p = cleanup_keep(all->p, stop_pairs);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(test_redis_start(&p[i].primary, primary_args), 0);
        p[i].link = fault_proxy_start(p[i].primary.port);
        assert_non_null(p[i].link);
        snprintf(p[i].port, sizeof(p[i].port), "%d", fault_proxy_port(p[i].link));
        p[i].replica_args[0] = "--replicaof";
        p[i].replica_args[1] = "127.0.0.1";
        p[i].replica_args[2] = p[i].port;
        p[i].replica_args[3] = NULL;
        assert_int_equal(test_redis_start(&p[i].replica, p[i].replica_args), 0);
    }
    for (size_t i = 0; i < n; i++) {
        long long until = test_now_ms() + 10000LL * test_slowdown();
        bool up;
        while (!(up = link_up(&p[i])) && test_now_ms() < until)
            ;
        assert_true(up);
    }
    return p;
}

static void assert_no_lock_left(const test_redis *r, const char *name)
{
    redisContext *c = connect_to(r);
    assert_int_equal(key_exists(c, name), 0);
    assert_int_equal(key_exists(c, aux_key(name, "owner")), 0);
}

/* --replicas 1 with the replica paused: exit 69 within the node's
 * deadline (a 3 s TTL on one server: 750 ms), saying how many confirmed;
 * nothing left. */
static void test_durable_replicas_paused(void **state)
{
    struct pair *p = start_pairs(1);
    const char *args[] = {"acquire", "--replicas", "1", "-t", "3s", "-n", "durable-paused", NULL};
    cli_proc proc;
    (void)state;
    test_redis_pause(&p->replica);
    assert_int_equal(cli_run(&proc, p->primary.url, args, 10000 * test_slowdown()), 69);
    test_redis_resume(&p->replica);
    assert_true(proc.took_ms < 1000LL * test_slowdown());
    assert_non_null(strstr(proc.err, "too few replicas acknowledged"));
    assert_true(strstr(proc.err, "0 of 1 replicas") || strstr(proc.err, "fewer than 1 replicas"));
    assert_no_lock_left(&p->primary, "durable-paused");
}

/* doctor on a primary with one replica: ASYNC_REPLICAS, unless told that
 * the locks wait for that replica (--replicas 1). */
static void test_durable_doctor_counts_waited_replicas(void **state)
{
    struct pair *p = start_pairs(1);
    const char *plain[] = {"doctor", NULL};
    const char *waited[] = {"doctor", "--replicas", "1", NULL};
    cli_proc proc;
    (void)state;
    cli_run(&proc, p->primary.url, plain, 10000 * test_slowdown());
    assert_non_null(strstr(proc.out, "ASYNC_REPLICAS"));
    assert_non_null(strstr(proc.out, "0 waited for"));
    cli_run(&proc, p->primary.url, waited, 10000 * test_slowdown());
    assert_null(strstr(proc.out, "ASYNC_REPLICAS"));
    assert_non_null(strstr(proc.out, "NO_PERSISTENCE")); /* it did look at the server */
}

/* With the replica running the grant counts, and it is on the replica as
 * soon as the command returns. */
static void test_durable_replicas_running(void **state)
{
    struct pair *p = start_pairs(1);
    const char *args[] = {"acquire", "--replicas", "1", "-n", "durable-running", NULL};
    cli_proc proc;
    (void)state;
    if (cli_run(&proc, p->primary.url, args, 10000 * test_slowdown()) != 0)
        fail_msg("exit %d: %s", proc.status, proc.err);
    proc.out[strcspn(proc.out, "\n")] = '\0';
    assert_key_holds(connect_to(&p->replica), "durable-running", proc.out);
}

/* A library wait retries a grant too few replicas acknowledged, as it
 * retries a timeout: a replica paused for 500 ms costs about that much,
 * not the whole wait. (The command's wait, like for an unreachable server,
 * ends at once: exit 69.) */
static void test_durable_wait_outlasts_a_paused_replica(void **state)
{
    struct pair *p = start_pairs(1);
    dlock_client *c = durable_client(p->primary.url, 1, 0);
    dlock_acquire_options opts = wait_options(20000);
    dlock_lock *lock;
    long long start;
    pid_t resumer;
    (void)state;
    test_redis_pause(&p->replica);
    start = test_now_ms();
    /* The replica resumes while the wait goes on: a child sends SIGCONT. */
    resumer = fork_child();
    if (resumer == 0) {
        usleep(500 * 1000);
        kill(p->replica.pid, SIGCONT);
        _exit(0);
    }
    /* 3 s: WAIT gives up after 135 ms, well before the replica is back. */
    lock = take(c, "durable-retry", TTL_MS, &opts);
    assert_true(test_now_ms() - start >= 500);
    wait_child(resumer);
    assert_int_equal(dlock_lock_release(lock), 0);
}

/* An extend the replica did not acknowledge does not extend the
 * validity. */
static void test_durable_extend_unacknowledged(void **state)
{
    struct pair *p = start_pairs(1);
    dlock_client *c = durable_client(p->primary.url, 1, 0);
    /* 30 s: a node deadline of 1 s, whatever the server's 1/hz adds to WAIT. */
    dlock_lock *lock = take(c, "durable-extend", 30000, NULL);
    int64_t before;
    (void)state;
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    test_redis_pause(&p->replica);
    before = dlock_lock_validity_ms(lock);
    assert_int_equal(dlock_lock_extend(lock, 60000), DLOCK_ENOREPLICAS);
    test_redis_resume(&p->replica);
    assert_true(dlock_lock_validity_ms(lock) <= before);
    assert_non_null(strstr(dlock_client_errmsg(c), "replicas acknowledged"));
    assert_int_equal(dlock_lock_release(lock), 0);
}

/* NOSCRIPT: the grant is re-sent as EVAL behind the WAIT that was already
 * on its way. That WAIT saw no write (here it answers 1) and must not
 * count: the WAIT sent again after the EVAL answers 0, and the grant is
 * taken back. A scripted server: a real one cannot be made to answer so on
 * cue. */
static void test_durable_wait_follows_fallback(void **state)
{
    script_step steps[] = {
        {"EVALSHA", "\"pid\":", "-NOSCRIPT No matching script.\r\n", 0, 0},
        {"WAIT", NULL, ":1\r\n", 0, 0},
        {"EVAL", "\"pid\":", "*2\r\n:1\r\n$16\r\n1700000000000001\r\n", 0, 0},
        {"WAIT", NULL, ":0\r\n", 0, 0},
        {"EVALSHA", NULL, ":1\r\n", 0, 0}, /* the cleanup */
    };
    script_server *fake = start_script_server(steps, 5);
    dlock_client *c = durable_client(fake->url, 1, 0);
    dlock_lock *lock = NULL;
    char log[SCRIPT_LOG_MAX * 24], why[512];
    int rc;
    (void)state;
    rc = dlock_lock_acquire(&lock, c, "durable-fallback", 30000, NULL);
    kept_lock(lock);
    snprintf(why, sizeof(why), "%s", dlock_client_errmsg(c));
    script_server_stop(fake);
    script_server_log(fake, log, sizeof(log));
    if (rc != DLOCK_ENOREPLICAS)
        fail_msg("%s: %s (commands: %s)", dlock_err_name(rc), why, log);
    assert_non_null(strstr(why, "0 of 1 replicas"));
    assert_true(steps[3].seq > steps[2].seq && steps[4].seq > steps[3].seq);
}

/* One trial: a holder's lock, its node's data lost at `lost_ms`, and a
 * contender trying until it gets the lock. */
struct trial {
    dlock_client *holder, *contender;
    dlock_lock *held, *taken;
    long long lost_ms, taken_ms;
    bool holder_valid_then; /* the holder's validity was still running */
};

/* Tries every trial's contender every 20 ms until each got the lock. */
static void contend(struct trial *t, size_t n, const char *name)
{
    long long until = test_now_ms() + (DELAY_MS + 10000LL) * test_slowdown();
    size_t left = n;
    while (left > 0 && test_now_ms() < until) {
        for (size_t i = 0; i < n; i++) {
            if (t[i].taken || dlock_lock_acquire(&t[i].taken, t[i].contender, name, TTL_MS,
                                                 NULL) != 0)
                continue;
            kept_lock(t[i].taken);
            t[i].taken_ms = test_wall_ms();
            t[i].holder_valid_then = dlock_lock_validity_ms(t[i].held) > 0;
            left--;
        }
        usleep(20000);
    }
    assert_int_equal(left, 0);
}

/* The first acquire with a restart delay finds no marker and writes it:
 * then the delay (and the servers' young uptime) must pass once. */
static void prime(struct trial *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        expect_acquire(DLOCK_EBUSY, t[i].holder, name, TTL_MS, NULL);
    usleep((DELAY_MS + 1100) * 1000); /* uptime: whole seconds, read late */
}

static void finish(struct trial *t, size_t n, bool safe)
{
    for (size_t i = 0; i < n; i++) {
        if (safe) {
            /* No second holder before DELAY_MS after the loss; fences rise. */
            assert_true(t[i].taken_ms >= t[i].lost_ms + DELAY_MS);
            assert_false(t[i].holder_valid_then);
        } else {
            /* The documented unsafe case: two holders at once. */
            assert_true(t[i].taken_ms < t[i].lost_ms + DELAY_MS);
            assert_true(t[i].holder_valid_then);
        }
        assert_true(dlock_lock_fence(t[i].taken) > dlock_lock_fence(t[i].held));
    }
}

/* `dlock status --restart-delay` on a server in its delay shows it. */
static void assert_status_shows_delay(const char *url, const char *name)
{
    const char *args[] = {"status", "--restart-delay", "3s", name, NULL};
    cli_proc proc;
    cli_run(&proc, url, args, 10000 * test_slowdown());
    assert_non_null(strstr(proc.out, "grants nothing for"));
}

/* Killed and restarted without persistence at once: with --restart-delay
 * 3s no second holder before 3 s after the restart, in 20 of 20 trials;
 * without it (the controls) a second holder at once. */
static void test_durable_restart_rule(void **state)
{
    test_redis *servers = start_servers(TRIALS + CONTROLS);
    struct trial t[TRIALS + CONTROLS] = {{0}};
    const char *name = "durable-restart";
    (void)state;
    for (size_t i = 0; i < TRIALS + CONTROLS; i++) {
        int64_t delay = i < TRIALS ? DELAY_MS : 0;
        t[i].holder = durable_client(servers[i].url, 0, delay);
        t[i].contender = durable_client(servers[i].url, 0, delay);
    }
    prime(t, TRIALS, name);
    for (size_t i = 0; i < TRIALS + CONTROLS; i++)
        t[i].held = take(t[i].holder, name, TTL_MS, NULL);
    for (size_t i = 0; i < TRIALS + CONTROLS; i++) {
        assert_int_equal(test_redis_restart(&servers[i]), 0);
        t[i].lost_ms = test_wall_ms();
    }
    assert_status_shows_delay(servers[0].url, name);
    contend(t, TRIALS + CONTROLS, name);
    finish(t, TRIALS, true);
    finish(t + TRIALS, CONTROLS, false);
}

/* A replica that missed the holder's grant (its link cut) is promoted with
 * REPLICAOF NO ONE after its primary died: the marker it has is its old
 * primary's, so with --restart-delay 3s it grants nothing for 3 s; the
 * controls, without it, grant at once. */
static void test_durable_promoted_replica(void **state)
{
    struct pair *p = start_pairs(TRIALS + CONTROLS);
    struct trial t[TRIALS + CONTROLS] = {{0}};
    const char *name = "durable-promoted";
    (void)state;
    for (size_t i = 0; i < TRIALS + CONTROLS; i++) {
        int64_t delay = i < TRIALS ? DELAY_MS : 0;
        t[i].holder = durable_client(p[i].primary.url, 0, delay);
        t[i].contender = durable_client(p[i].replica.url, 0, delay);
    }
    prime(t, TRIALS, name);
    for (size_t i = 0; i < TRIALS + CONTROLS; i++) {
        redisContext *replica = connect_to(&p[i].replica);
        long long until = test_now_ms() + 10000LL * test_slowdown();
        /* The marker reached the replica (only the trials have one). */
        while (i < TRIALS && !key_exists(replica, "dlock:restart-marker") &&
               test_now_ms() < until)
            usleep(20000);
        assert_true(i >= TRIALS || key_exists(replica, "dlock:restart-marker"));
        cleanup_now(replica);
        fault_proxy_set(p[i].link, FAULT_BLACKHOLE, 0);
        t[i].held = take(t[i].holder, name, TTL_MS, NULL);
    }
    for (size_t i = 0; i < TRIALS + CONTROLS; i++) {
        redisContext *replica;
        test_redis_kill(&p[i].primary);
        fault_proxy_stop(p[i].link); /* what it held back is lost */
        p[i].link = NULL;
        replica = connect_to(&p[i].replica);
        freeReplyObject(run(replica, "REPLICAOF NO ONE"));
        cleanup_now(replica);
        t[i].lost_ms = test_wall_ms();
    }
    assert_status_shows_delay(p[0].replica.url, name);
    contend(t, TRIALS + CONTROLS, name);
    finish(t, TRIALS, true);
    finish(t + TRIALS, CONTROLS, false);
}

/* Bad values and commands that do not take the options are usage errors. */
static void test_durable_cli_usage(void **state)
{
    const char *const cases[][6] = {
        {"acquire", "--replicas", "x", "durable-usage", NULL},
        {"acquire", "--replicas", "1001", "durable-usage", NULL},
        {"acquire", "--replicas", "-1", "durable-usage", NULL},
        {"status", "--replicas", "1", "durable-usage", NULL},
        {"release", "--restart-delay", "3s", "durable-usage", "token", NULL},
        {"run", "--restart-delay", "soon", "durable-usage", "--", "true"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[8] = {0};
        cli_proc proc;
        memcpy(args, cases[i], sizeof(cases[i]));
        assert_int_equal(cli_run(&proc, "redis://127.0.0.1:1", args, 10000 * test_slowdown()), 64);
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_durable_cli_usage),
        T(test_durable_replicas_paused),
        T(test_durable_replicas_running),
        T(test_durable_doctor_counts_waited_replicas),
        T(test_durable_wait_outlasts_a_paused_replica),
        T(test_durable_extend_unacknowledged),
        T(test_durable_wait_follows_fallback),
        T(test_durable_restart_rule),
        T(test_durable_promoted_replica),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
