/* A waiting acquire tries first, then listens: a free lock costs what a
 * single try costs (no SSUBSCRIBE at all); a busy one subscribes to the
 * release channel, then tries once more before it sleeps, so a release
 * between its first try and its subscription is not missed; and a
 * sleeping waiter wakes on the release, long before its backoff. */
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

/* A woken waiter is granted within this, even on a busy machine (1.2 s was
 * seen with a load average of 40 on two cores)... */
#define WAKE_BOUND_MS 2000
#define BACKOFF_MS 10000 /* ...and its fallback sleep, 5 s at least, is far longer */
#define WAIT_MS 20000

/* A wait whose fallback sleep (backoff_max_ms / 2 at least) is longer than
 * the bound a wake-up must meet, however slow the build. */
static dlock_acquire_options long_backoff_wait(void)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    o.wait_ms = (int64_t)WAIT_MS * test_slowdown();
    o.backoff_max_ms = (int64_t)BACKOFF_MS * test_slowdown();
    return o;
}

static long long subscribes(redisContext *r)
{
    return info_count(r, "commandstats", "cmdstat_ssubscribe:calls=");
}

/* Counts every command the server ran, the INFO that reads it included:
 * the same in each measurement. */
static long long commands(redisContext *r)
{
    return info_field(r, "stats", "total_commands_processed:");
}

/* What an acquire of the free lock `name` costs the server: its commands
 * and the SUBSCRIBEs among them. The release after it is not counted. */
static void count_acquire(dlock_client *c, redisContext *r, const char *name,
                          const dlock_acquire_options *opts, long long *cmds, long long *subs)
{
    long long subs_before = subscribes(r), cmds_before = commands(r);
    dlock_lock *lock = take(c, name, 30000, opts);
    *cmds = commands(r) - cmds_before;
    *subs = subscribes(r) - subs_before;
    assert_int_equal(dlock_lock_release(lock), 0);
}

static void test_listen_free_lock_costs_one_try(void **state)
{
    dlock_client *c = client_on(group_server.url);
    redisContext *r = connect_to(&group_server);
    dlock_acquire_options wait = wait_options(10000);
    long long try_cmds, try_subs, wait_cmds, wait_subs;
    (void)state;
    take_and_release(c, "listen:warm", 30000, NULL); /* connected, scripts loaded */

    count_acquire(c, r, "listen:try", NULL, &try_cmds, &try_subs);
    count_acquire(c, r, "listen:wait", &wait, &wait_cmds, &wait_subs);
    if (wait_subs != 0)
        fail_msg("a waiting acquire of a free lock sent %lld SSUBSCRIBE", wait_subs);
    if (wait_cmds != try_cmds)
        fail_msg("a waiting acquire of a free lock cost %lld commands, a single try %lld",
                 wait_cmds, try_cmds);
}

struct waiter {
    dlock_client *client;
    const char *name;
    dlock_lock *lock;
    int rc;
    long long granted_ms;
};

static void *wait_for_lock(void *arg)
{
    struct waiter *w = arg;
    dlock_acquire_options o = long_backoff_wait();
    w->rc = dlock_lock_acquire(&w->lock, w->client, w->name, 30000, &o);
    kept_lock(w->lock);
    w->granted_ms = test_now_ms();
    return NULL;
}

static void test_listen_waiter_wakes_on_release(void **state)
{
    dlock_lock *held = take(client_on(group_server.url), "listen:busy", 60000, NULL);
    struct waiter one = {.client = client_on(group_server.url), .name = "listen:busy"};
    struct waiter *w;
    redisContext *redis = connect_to(&group_server);
    long long released_ms, keyslots, spublishes;
    (void)state;
    /* A holder asks once whether its server is a cluster: the waiter's
     * client did, before its grant comes. */
    take_and_release(one.client, "listen:warm", 60000, NULL);
    w = start_thread(wait_for_lock, &one, sizeof(one));
    wait_for_listener(redis, "listen:busy");
    usleep(200 * 1000); /* its try after subscribing is done: it sleeps now */
    keyslots = info_count(redis, "commandstats", "cmdstat_cluster|keyslot:calls=");
    spublishes = info_count(redis, "commandstats", "cmdstat_spublish:calls=");
    released_ms = test_now_ms();
    assert_int_equal(dlock_lock_release(held), 0);
    /* The release's message is sharded without asking whether the server
     * is a cluster. */
    assert_int_equal(info_count(redis, "commandstats", "cmdstat_spublish:calls="), spublishes + 1);
    assert_int_equal(info_count(redis, "commandstats", "cmdstat_cluster|keyslot:calls="),
                     keyslots);
    join_thread(w);
    if (w->rc != 0)
        fail_msg("the waiter: %s", dlock_err_name(w->rc));
    assert_true(w->granted_ms >= released_ms);
    if (w->granted_ms - released_ms >= (long long)WAKE_BOUND_MS * test_slowdown())
        fail_msg("the waiter was granted %lld ms after the release (bound %d ms)",
                 w->granted_ms - released_ms, WAKE_BOUND_MS * test_slowdown());
}

/* A user without the sharded commands (as on a server before Redis 7,
 * which does not know them): the release script falls back to PUBLISH and
 * the waiter to SUBSCRIBE, so the waiter still wakes on the release. */
static void test_listen_plain_channel_where_sharded_is_refused(void **state)
{
    static const char *const extra[] = {"--user", "plain", "on", ">plain-pw", "+@all",
                                        "-spublish", "-ssubscribe", "-sunsubscribe", "~*", "&*",
                                        NULL};
    test_redis *server = start_server(extra);
    redisContext *redis = connect_to(server);
    char url[128];
    dlock_lock *held;
    struct waiter one = {.name = "listen:plain"}, *w;
    long long released_ms, until = test_now_ms() + 10000LL * test_slowdown();
    (void)state;
    snprintf(url, sizeof(url), "redis://plain:plain-pw@127.0.0.1:%d", server->port);
    held = take(client_on(url), "listen:plain", 60000, NULL);
    one.client = client_on(url);
    w = start_thread(wait_for_lock, &one, sizeof(one));
    while (info_count(redis, "commandstats", "cmdstat_subscribe:calls=") < 1 &&
           test_now_ms() < until)
        usleep(5000);
    assert_true(info_count(redis, "commandstats", "cmdstat_subscribe:calls=") >= 1);
    usleep(200 * 1000); /* its try after subscribing is done: it sleeps now */
    released_ms = test_now_ms();
    assert_int_equal(dlock_lock_release(held), 0);
    join_thread(w);
    if (w->rc != 0)
        fail_msg("the waiter: %s", dlock_err_name(w->rc));
    if (w->granted_ms - released_ms >= (long long)WAKE_BOUND_MS * test_slowdown())
        fail_msg("the waiter was granted %lld ms after the release (bound %d ms)",
                 w->granted_ms - released_ms, WAKE_BOUND_MS * test_slowdown());
    assert_true(info_count(redis, "commandstats", "cmdstat_publish:calls=") >= 1);
}

/* The lock is busy on the first try and free on the next: the release
 * came between the try and the subscription, so no message will ever come.
 * A waiter that tries again once it listens is granted at once; one that
 * sleeps first waits out its backoff. An acquire is the script call that
 * carries the owner record (its "pid"); a release names the channel. */
static void test_listen_release_before_subscribe_is_not_missed(void **state)
{
    const char *name = "listen:race";
    char channel[256];
    script_step steps[] = {
        {"EVAL", "\"pid\":", "*2\r\n:0\r\n:60000\r\n", 0, 0},                  /* busy */
        {"EVAL", "\"pid\":", "*2\r\n:1\r\n$16\r\n1700000000000001\r\n", 0, 0}, /* granted */
        {"EVAL", channel, ":1\r\n", 0, 0},
    };
    dlock_acquire_options o = long_backoff_wait();
    script_server *fake;
    dlock_client *c;
    dlock_lock *lock = NULL;
    char log[SCRIPT_LOG_MAX * 24], why[512];
    long long start, took;
    int rc, listened;
    (void)state;
    snprintf(channel, sizeof(channel), "%s", aux_key(name, "released"));
    fake = start_script_server(steps, 3);
    c = client_on(fake->url);
    start = test_now_ms();
    rc = dlock_lock_acquire(&lock, c, name, 30000, &o);
    took = test_now_ms() - start;
    kept_lock(lock);
    snprintf(why, sizeof(why), "%s", dlock_client_errmsg(c));
    if (rc == 0)
        assert_int_equal(dlock_lock_release(lock), 0);
    script_server_stop(fake);

    script_server_log(fake, log, sizeof(log));
    if (rc != 0)
        fail_msg("acquire: %s: %s (commands: %s)", dlock_err_name(rc), why, log);
    if (took >= (long long)WAKE_BOUND_MS * test_slowdown())
        fail_msg("granted after %lld ms (bound %d ms; commands: %s)", took,
                 WAKE_BOUND_MS * test_slowdown(), log);
    if (steps[0].seq < 0 || steps[1].seq < 0)
        fail_msg("not granted by the second try (commands: %s)", log);
    listened = script_server_first(fake, "SSUBSCRIBE");
    if (!(steps[0].seq < listened && listened < steps[1].seq))
        fail_msg("not try, listen, try again (commands: %s)", log);
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_listen_free_lock_costs_one_try),
        T(test_listen_waiter_wakes_on_release),
        T(test_listen_plain_channel_where_sharded_is_refused),
        T(test_listen_release_before_subscribe_is_not_missed),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
