/* A primary and a replica behind 3 sentinels: doctor examines the primary
 * they name, credentials go to the primary, silent sentinels do not move
 * it, and a failover under a waiting run. The servers are started once, by
 * the group; the failover comes last. Clusters, and a Redlock of a
 * sentinel primary with other topologies: test_cluster.c. */
#include "cluster_tools.h"
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static test_sentinels sentinels;

static int group_setup(void **state)
{
    (void)state;
    return test_sentinels_start(&sentinels, "dlockprimary");
}

static int group_teardown(void **state)
{
    (void)state;
    test_sentinels_stop(&sentinels);
    return 0;
}

/* Doctor on a sentinel endpoint examines the primary they name, and says
 * so; not a sentinel, not the replica. */
static void test_sentinel_doctor_checks_the_primary(void **state)
{
    int primary = test_sentinels_primary_port(&sentinels);
    dlock_report *r = NULL;
    (void)state;
    assert_true(primary > 0);
    assert_int_equal(dlock_doctor(&r, client_on(sentinels.url), NULL, 0), 0);
    kept_report(r);
    assert_non_null(finding_on(r, "NO_PERSISTENCE", primary, "the primary the sentinels name"));
    assert_all_reached(r);
    assert_no_scratch(primary);
}

/* The user and password of a sentinel URL go to the primary, not to the
 * sentinels (which have none); a user without ROLE still gets the lock
 * (READONLY would tell it a replica); a wrong password is an
 * authentication failure. */
static void test_sentinel_credentials_reach_the_primary(void **state)
{
    char url[300], name[48];
    const char *rest = sentinels.url + strlen("redis-sentinel://");
    test_redis *servers[] = {&sentinels.primary, &sentinels.replica};
    dlock_client *c;
    (void)state;
    for (size_t i = 0; i < 2; i++) /* ACL users are not replicated */
        must_succeed(servers[i]->port, "ACL SETUSER",
                     test_command(servers[i]->port,
                                  "ACL SETUSER noroler on >s3cret +@all -role ~* &*"));
    fresh_name(name, sizeof(name), "auth", 0);
    snprintf(url, sizeof(url), "redis-sentinel://noroler:s3cret@%s", rest);
    take_and_release(client_on(url), name, 10000, NULL);

    snprintf(url, sizeof(url), "redis-sentinel://noroler:wrong@%s", rest);
    c = client_on(url);
    expect_acquire(DLOCK_EAUTH, c, name, 10000, NULL);
    assert_null(strstr(dlock_client_errmsg(c), "wrong"));
}

/* Given back at teardown too: the next tests need the sentinels. */
static void resume_sentinels(void *s)
{
    for (int i = 0; i < TEST_SENTINELS; i++)
        test_redis_resume(&((test_sentinels *)s)->sentinels[i]);
}

/* With every sentinel silent (paused), a client that knows the primary
 * keeps using it: their outage does not move the primary. */
static void test_sentinels_silent_primary_stays(void **state)
{
    char name[48];
    int primary = test_sentinels_primary_port(&sentinels);
    dlock_client *c = client_on(sentinels.url);
    /* the call that asks them may run out of time */
    dlock_acquire_options opts = wait_options(5000LL * test_slowdown());
    dlock_lock *lock;
    (void)state;
    fresh_name(name, sizeof(name), "silent", 0);
    take_and_release(c, name, 30000, NULL);
    cleanup_keep(&sentinels, resume_sentinels);
    for (int i = 0; i < TEST_SENTINELS; i++)
        test_redis_pause(&sentinels.sentinels[i]);
    usleep(1200 * 1000); /* past the once-a-second question to the sentinels */
    lock = take(c, name, 30000, &opts);
    assert_true(exists_at(primary, name));
    assert_int_equal(dlock_lock_release(lock), 0);
    cleanup_now(&sentinels); /* resumed */
}

static int primary_moved(void *arg)
{
    int *before = arg;
    int now = test_sentinels_primary_port(&sentinels);
    return now > 0 && now != *before;
}

/* `dlock run -w 30` waits for a held name while SENTINEL FAILOVER moves
 * the primary: the waiter acquires on the new primary, and `dlock status`
 * follows the sentinels there. */
static void test_sentinel_failover_while_run_waits(void **state)
{
    char name[48], token[33], out[64];
    const char *args[] = {"-r", sentinels.url, "run", "-w", "30", name, "--", "true", NULL};
    const char *status[] = {"-r", sentinels.url, "status", name, NULL};
    int before = test_sentinels_primary_port(&sentinels), after;
    dlock_lock *lock;
    cli_proc p, *waiter;
    (void)state;

    fresh_name(name, sizeof(name), "sentinel", 0);
    cli_hold(sentinels.url, name, token);
    waiter = start_cli(NULL, args, NULL);
    usleep(300000);
    must_succeed(sentinels.sentinels[0].port, "SENTINEL FAILOVER",
                 test_command(sentinels.sentinels[0].port, "SENTINEL FAILOVER %s", sentinels.name));
    await_condition(primary_moved, &before, "the sentinel failover");
    after = test_sentinels_primary_port(&sentinels);
    cli_release(sentinels.url, name, token);
    assert_int_equal(cli_wait(waiter, 40000 * test_slowdown()), 0);
    assert_true(exists_at(after, aux_key(name, "fence")));
    assert_false(exists_at(after, name));

    lock = take(client_on(sentinels.url), name, 10000, NULL);
    assert_true(exists_at(after, name));
    assert_int_equal(cli_run(&p, NULL, status, 10000 * test_slowdown()), 0);
    snprintf(out, sizeof(out), "%s: held", name);
    assert_non_null(strstr(p.out, out));
    assert_int_equal(dlock_lock_release(lock), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_sentinel_doctor_checks_the_primary),
        T(test_sentinel_credentials_reach_the_primary),
        T(test_sentinels_silent_primary_stays),
        T(test_sentinel_failover_while_run_waits),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
