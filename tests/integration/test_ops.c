/* The operators' tools against real servers: doctor's findings (and that
 * its scratch keys are gone afterwards), list over a large database without
 * KEYS, status --watch following holders, and the client's counters. */
#include "helpers.h"

#include <dlock.h>

#include <poll.h>
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

/* ---- doctor ---- */

/* Runs the library's doctor on `client` and returns the report (kept). */
static dlock_report *doctor(dlock_client *client, const char *name)
{
    dlock_report *report = NULL;
    assert_int_equal(dlock_doctor(&report, client, name, 0), 0);
    return kept_report(report);
}

/* The finding `id` (of any server), or NULL. */
static const dlock_finding *finding(const dlock_report *r, const char *id)
{
    for (size_t i = 0; i < dlock_report_count(r); i++)
        if (strcmp(dlock_report_finding(r, i)->id, id) == 0)
            return dlock_report_finding(r, i);
    return NULL;
}

/* The doctor's report on a server started with `extra`, and the
 * command's exit status for the same server. */
static dlock_report *doctor_of(const char *const *extra, int *exit_status)
{
    const char *args[] = {"doctor", NULL};
    test_redis *server = start_server(extra);
    dlock_report *report = doctor(client_on(server->url), NULL);
    cli_proc p;
    *exit_status = cli_run(&p, server->url, args, 10000);
    assert_empty(server);
    return report;
}

static void test_doctor_evictable_is_an_error(void **state)
{
    static const char *const extra[] = {"--maxmemory", "100mb", "--maxmemory-policy",
                                        "allkeys-lru", NULL};
    int status;
    dlock_report *r = doctor_of(extra, &status);
    const dlock_finding *f = finding(r, "EVICTABLE");
    (void)state;
    assert_non_null(f);
    assert_int_equal(f->severity, DLOCK_SEVERITY_ERROR);
    assert_non_null(strstr(f->evidence, "allkeys-lru"));
    assert_int_equal(status, 78);
}

static void test_doctor_durable_server_is_fine(void **state)
{
    static const char *const extra[] = {"--maxmemory-policy", "noeviction", "--appendonly",
                                        "yes", "--appendfsync", "always", NULL};
    int status;
    dlock_report *r = doctor_of(extra, &status);
    (void)state;
    for (size_t i = 0; i < dlock_report_count(r); i++) /* an informational SLOW is fine */
        print_message("finding: %s %s\n", dlock_report_finding(r, i)->id,
                      dlock_report_finding(r, i)->evidence);
    assert_true(dlock_report_worst(r) <= DLOCK_SEVERITY_INFO);
    assert_int_equal(status, 0);
}

static void test_doctor_no_persistence(void **state)
{
    int status;
    dlock_report *r = doctor_of(NULL, &status);
    const dlock_finding *f = finding(r, "NO_PERSISTENCE");
    (void)state;
    assert_non_null(f);
    assert_int_equal(f->severity, DLOCK_SEVERITY_WARNING);
    assert_null(finding(r, "EVICTABLE"));
    assert_int_equal(status, 0);
}

static void test_doctor_everysec(void **state)
{
    static const char *const extra[] = {"--appendonly", "yes", "--appendfsync", "everysec", NULL};
    int status;
    dlock_report *r = doctor_of(extra, &status);
    (void)state;
    assert_non_null(finding(r, "FSYNC_EVERYSEC"));
    assert_null(finding(r, "NO_PERSISTENCE"));
}

/* A user without SPUBLISH: the scripts' SPUBLISH goes through pcall and
 * fails silently (then PUBLISH), the direct one names it. A user limited
 * to lock:* keys is checked on a name of those. */
static void test_doctor_acl_missing_names_publish(void **state)
{
    static const char *const extra[] = {"--user", "nopub", "on", ">nopub-pw", "+@all",
                                        "-spublish", "~lock:*", "~{lock:*", "&*", NULL};
    const char *args[] = {"doctor", "--json", "lock:report", NULL};
    test_redis *server = start_server(extra);
    char url[128];
    dlock_report *r;
    const dlock_finding *f;
    cli_proc p;
    (void)state;
    snprintf(url, sizeof(url), "redis://nopub:nopub-pw@127.0.0.1:%d", server->port);
    r = doctor(client_on(url), "lock:report");
    f = finding(r, "ACL_MISSING");
    assert_non_null(f);
    assert_int_equal(f->severity, DLOCK_SEVERITY_ERROR);
    assert_non_null(strstr(f->evidence, "SPUBLISH"));
    assert_null(strstr(f->evidence, "SUBSCRIBE")); /* the rest is allowed */
    assert_null(strstr(f->evidence, "SET"));
    assert_int_equal(cli_run(&p, url, args, 10000), 78);
    assert_non_null(strstr(p.out, "\"id\":\"ACL_MISSING\""));
    assert_empty(server);
}

/* One server as two votes: a TCP port and the Unix socket of one server
 * (two spellings of one address are refused when the client opens). */
static void test_doctor_same_node(void **state)
{
    test_redis *servers = start_servers(2);
    const char *urls[3] = {servers[0].url, servers[0].unix_url, servers[1].url};
    dlock_report *r = doctor(client_on_nodes(urls, 3, 0, 0), NULL);
    const dlock_finding *f = finding(r, "SAME_NODE");
    (void)state;
    assert_non_null(f);
    assert_int_equal(f->severity, DLOCK_SEVERITY_ERROR);
    assert_empty(&servers[0]);
    assert_empty(&servers[1]);
}

/* One server spelt two ways (127.0.0.1 and localhost): a lock client
 * refuses the pair at open, and so do run and acquire; doctor looks at both
 * and names them in a SAME_NODE error. */
static void test_doctor_same_node_two_spellings(void **state)
{
    const char *doctor_args[] = {"doctor", NULL};
    const char *acquire_args[] = {"acquire", "-n", "lock:same", NULL};
    test_redis *server = start_servers(1);
    char other[96], both[200];
    const char *urls[2] = {server->url, other};
    dlock_client_options opts = client_options(urls, 2);
    dlock_client *client = NULL;
    dlock_report *r;
    const dlock_finding *f;
    cli_proc p;
    (void)state;
    snprintf(other, sizeof(other), "redis://localhost:%d", server->port);
    snprintf(both, sizeof(both), "%s,%s", server->url, other);
    assert_int_equal(dlock_client_open(&client, &opts, NULL, 0), DLOCK_EINVAL);
    assert_null(client);
    opts.inspect = 1;
    client = client_with(&opts);
    expect_acquire(DLOCK_EINVAL, client, "lock:same", 10000, NULL);
    r = doctor(client, NULL);
    f = finding(r, "SAME_NODE");
    assert_non_null(f);
    assert_int_equal(f->severity, DLOCK_SEVERITY_ERROR);
    assert_non_null(strstr(f->evidence, server->url + strlen("redis://")));
    assert_non_null(strstr(f->evidence, other + strlen("redis://")));

    assert_int_equal(cli_run(&p, both, doctor_args, 10000), 78);
    assert_non_null(strstr(p.out, "error   SAME_NODE: "));
    assert_non_null(strstr(p.out, other + strlen("redis://")));
    assert_int_equal(cli_run(&p, both, acquire_args, 10000), 64);
    assert_empty(server);
}

/* A server whose clock runs 2 s ahead (the clock shim preloaded into it). */
static void test_doctor_clock_skew(void **state)
{
    char shift[64];
    test_redis *server = start_shifted_server(DLOCK_CLOCK_SHIM, shift, sizeof(shift), 2000);
    dlock_report *r = doctor(client_on(server->url), NULL);
    const dlock_finding *f = finding(r, "CLOCK_SKEW");
    (void)state;
    assert_non_null(f);
    print_message("offset %lld ms: %s\n", (long long)f->offset_ms, f->evidence);
    assert_in_range(f->offset_ms, 1950, 2050);
    assert_empty(server);
}

/* Nothing listens there: UNREACHABLE, exit 69, in words. */
static void test_doctor_unreachable(void **state)
{
    const char *args[] = {"doctor", NULL};
    char url[64];
    cli_proc p;
    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", test_free_port());
    assert_int_equal(cli_run(&p, url, args, 10000), 69);
    assert_non_null(strstr(p.out, "error   UNREACHABLE (127.0.0.1:"));
    assert_non_null(strstr(p.out, "        fix: "));
}

/* A wrong password: AUTH_FAILED, exit 77 (as every other command), not
 * UNREACHABLE; the password is not shown. */
static void test_doctor_wrong_password(void **state)
{
    static const char *const auth[] = {"--requirepass", "right-pw", NULL};
    const char *args[] = {"doctor", NULL};
    test_redis *locked = start_server(auth);
    char url[96];
    cli_proc p;
    (void)state;
    snprintf(url, sizeof(url), "redis://:wr0ng-pw@127.0.0.1:%d", locked->port);
    assert_int_equal(cli_run(&p, url, args, 10000), 77);
    assert_non_null(strstr(p.out, "error   AUTH_FAILED (127.0.0.1:"));
    assert_null(strstr(p.out, "UNREACHABLE"));
    assert_null(strstr(p.out, "wr0ng-pw"));
    assert_null(strstr(p.err, "wr0ng-pw"));
}

/* ---- list ---- */

static void test_list_finds_locks_among_many_keys_without_keys(void **state)
{
    const char *args[] = {"list", "--json", NULL};
    test_redis *server = *state;
    dlock_client *client = client_on(server->url);
    redisContext *rc = connect_to(server);
    dlock_lock *locks[5];
    char name[32];
    cli_proc p;
    freeReplyObject(run(rc, "EVAL %s 0",
                        "for i = 1, 100000 do redis.call('SET', 'other:' .. i, 'x') end"));
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "job:%d", i);
        locks[i] = take(client, name, 60000, NULL);
    }
    freeReplyObject(run(rc, "CONFIG RESETSTAT"));
    assert_int_equal(cli_run(&p, server->url, args, 10000), 0);
    print_message("list took %lld ms\n", p.took_ms);
    assert_true(p.took_ms < 2000LL * test_slowdown());
    for (int i = 0; i < 5; i++) {
        char expect[128];
        snprintf(expect, sizeof(expect), "{\"name\":\"job:%d\",\"held\":true,", i);
        assert_non_null(strstr(p.out, expect));
        assert_non_null(strstr(p.out, "\"holder\":{\"host\":"));
    }
    {
        char pid[32];
        int count = 0;
        snprintf(pid, sizeof(pid), "\"pid\":%d,", (int)getpid());
        for (const char *at = p.out; (at = strstr(at, "\"name\":")) != NULL; at++)
            count++;
        assert_int_equal(count, 5);
        assert_non_null(strstr(p.out, pid));
    }
    assert_int_equal(info_count(rc, "commandstats", "cmdstat_keys:calls="), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(dlock_lock_release(locks[i]), 0);
}

static void test_list_pattern_and_text(void **state)
{
    const char *args[] = {"list", "build:*", NULL}, *none[] = {"list", "--json", "x*", NULL};
    test_redis *server = *state;
    dlock_client *client = client_on(server->url);
    dlock_lock *a = take(client, "build:web", 60000, NULL);
    dlock_lock *b = take(client, "deploy:web", 60000, NULL);
    cli_proc p;
    assert_int_equal(cli_run(&p, server->url, args, 10000), 0);
    assert_non_null(strstr(p.out, "build:web: held by "));
    assert_null(strstr(p.out, "deploy:web"));
    assert_int_equal(cli_run(&p, server->url, none, 10000), 0);
    assert_string_equal(p.out, "[]\n");
    assert_int_equal(dlock_lock_release(a), 0);
    assert_int_equal(dlock_lock_release(b), 0);
}

/* ---- watch ---- */

/* Reads one line of the watcher's output; its length, or -1 after
 * timeout_ms. */
static long read_line(cli_proc *p, char *line, size_t cap, long long timeout_ms)
{
    long long deadline = test_now_ms() + timeout_ms;
    size_t used = 0;
    while (used + 1 < cap) {
        struct pollfd pfd = {p->out_fd, POLLIN, 0};
        long long left = deadline - test_now_ms();
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
            return -1;
        if (read(p->out_fd, line + used, 1) != 1)
            return -1;
        if (line[used] == '\n')
            break;
        used++;
    }
    line[used] = '\0';
    return (long)used;
}

/* The next line comes within `within_ms` of `since_ms` and says held with
 * `fence`, or free. */
static void expect_line(cli_proc *p, long long since_ms, long long within_ms, bool held,
                        uint64_t fence)
{
    char line[1024], want[128];
    long long took;
    assert_true(read_line(p, line, sizeof(line), 10000LL * test_slowdown()) > 0);
    took = test_now_ms() - since_ms;
    print_message("after %lld ms: %s\n", took, line);
    assert_true(took <= within_ms * test_slowdown());
    snprintf(want, sizeof(want), "\"held\":%s,", held ? "true" : "false");
    assert_non_null(strstr(line, want));
    snprintf(want, sizeof(want), "\"fence\":%llu,", (unsigned long long)fence);
    assert_non_null(strstr(line, want));
}

/* Three holders one after another, then one that expires: every change, in
 * order; a release within 100 ms, an acquisition or expiry within the check
 * period (and a little for the round trips). */
static void test_watch_follows_holders(void **state)
{
    const char *args[] = {"status", "--watch", "--json", "leader", NULL};
    const long long check_ms = DLOCK_WATCH_PERIOD_MS + 100;
    test_redis *server = *state;
    dlock_client *client = client_on(server->url);
    cli_proc *p = start_cli(server->url, args, NULL);
    char line[1024];
    uint64_t fence = 0;
    assert_true(read_line(p, line, sizeof(line), 10000LL * test_slowdown()) > 0);
    assert_non_null(strstr(line, "\"held\":false,"));
    usleep(100 * 1000); /* let it subscribe */
    for (int i = 0; i < 3; i++) {
        dlock_lock *lock = take(client, "leader", 60000, NULL);
        long long at = test_now_ms();
        fence = dlock_lock_fence(lock);
        expect_line(p, at, check_ms, true, fence);
        usleep(50 * 1000);
        at = test_now_ms();
        assert_int_equal(dlock_lock_release(lock), 0);
        expect_line(p, at, 100, false, fence);
    }
    {
        dlock_lock *lock = take(client, "leader", 400, NULL);
        long long at = test_now_ms();
        fence = dlock_lock_fence(lock);
        expect_line(p, at, check_ms, true, fence);
        expect_line(p, at, 400 + check_ms, false, fence);
    }
    kill(p->pid, SIGINT);
    assert_int_equal(cli_wait(p, 5000), 0);
}

/* ---- counters ---- */

static atomic_int lost;

static void on_lost(dlock_lock *lock, int reason, void *arg)
{
    (void)lock;
    (void)reason;
    (void)arg;
    atomic_store(&lost, 1);
}

/* The counters count what happened: no timeout is to happen, not even on a
 * busy machine, so the clients' per-node deadline is a second, not the
 * default TTL/20 (10 ms for 200 ms). */
static void test_stats_count_acquisitions_and_a_loss(void **state)
{
    test_redis *server = *state;
    const char *url = server->url;
    dlock_client *client = client_on_nodes(&url, 1, 1000, 0);
    redisContext *rc = connect_to(server);
    dlock_client *other = client_on_nodes(&url, 1, 1000, 0);
    dlock_acquire_options renewed = DLOCK_ACQUIRE_OPTIONS_INIT, waiting = wait_options(10000);
    dlock_stats s = {.version = DLOCK_STATS_VERSION};
    long long deadline;
    for (int i = 0; i < 8; i++)
        take_and_release(client, "counted", 10000, NULL);
    /* Busy once, then a wait until the other holder's second runs out (of
     * which the busy try leaves at least 100 ms, however slow). */
    take(other, "counted", 1000, NULL);
    expect_acquire(DLOCK_EBUSY, client, "counted", 10000, NULL);
    take_and_release(client, "counted", 10000, &waiting);
    renewed.auto_renew = 1;
    renewed.on_lost = on_lost;
    /* A TTL that a busy machine renews in time; deleted after a renewal. */
    take(client, "counted", 1000, &renewed);
    deadline = test_now_ms() + 5000LL * test_slowdown();
    while (dlock_client_stats(client, &s) == 0 && s.renewals == 0 && test_now_ms() < deadline)
        usleep(5 * 1000);
    freeReplyObject(run(rc, "DEL counted"));
    deadline = test_now_ms() + 5000LL * test_slowdown();
    while (!atomic_load(&lost) && test_now_ms() < deadline)
        usleep(5 * 1000);
    assert_int_equal(dlock_client_stats(client, &s), 0);
    print_message("waited %lld ms, %llu renewals, smallest margin %lld ms\n",
                  (long long)s.wait_ms, (unsigned long long)s.renewals,
                  (long long)s.min_renewal_margin_ms);
    assert_int_equal(s.acquisitions, 10);
    assert_int_equal(s.losses, 1);
    assert_true(s.renewals >= 1);
    assert_true(s.min_renewal_margin_ms >= 0);
    assert_int_equal(s.busy, 1);
    assert_int_equal(s.waits, 1);
    assert_true(s.wait_ms >= 100 && s.wait_ms < 10000);
    assert_int_equal(s.nodes, 1);
    assert_int_equal(s.node[0].errors, 0);
    assert_int_equal(s.node[0].timeouts, 0);
}

/* A watch that nothing changes ends when another thread cancels it. */
struct canceller {
    dlock_client *client;
};

static void *cancel_later(void *arg)
{
    usleep(100 * 1000);
    dlock_client_cancel(((struct canceller *)arg)->client);
    return NULL;
}

static void test_watch_canceled(void **state)
{
    test_redis *server = *state;
    dlock_client *client = client_on(server->url);
    dlock_status *now = NULL, *next = NULL;
    void *canceller;
    long long start;
    assert_int_equal(dlock_status_watch(&now, client, "quiet", NULL, 0), 0);
    kept_status(now);
    assert_false(dlock_status_held(now));
    start = test_now_ms();
    canceller = start_thread(cancel_later, &(struct canceller){client}, sizeof(struct canceller));
    assert_int_equal(dlock_status_watch(&next, client, "quiet", now, 50), DLOCK_ECANCELED);
    assert_null(next);
    assert_true(test_now_ms() - start >= 100);
    join_thread(canceller);
}

static void test_run_writes_stats_json(void **state)
{
    test_redis *server = *state;
    char path[256], text[1024] = "";
    const char *args[] = {"run", "--stats-json", path, "counted-run", "--", "true", NULL};
    FILE *f;
    cli_proc p;
    scratch_path(path, sizeof(path), server->dir, "stats.json");
    assert_int_equal(cli_run(&p, server->url, args, 10000), 0);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_true(fread(text, 1, sizeof(text) - 1, f) > 0);
    fclose(f);
    assert_non_null(strstr(text, "{\"acquisitions\":1,\"busy\":0,"));
    assert_non_null(strstr(text, "\"losses\":0,"));
    assert_non_null(strstr(text, "\"errors\":0,\"timeouts\":0}"));
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
#define S(name) cmocka_unit_test_setup_teardown(name, setup_server, cleanup_teardown)
    const struct CMUnitTest doctor_tests[] = {
        T(test_doctor_evictable_is_an_error),
        T(test_doctor_durable_server_is_fine),
        T(test_doctor_no_persistence),
        T(test_doctor_everysec),
        T(test_doctor_acl_missing_names_publish),
        T(test_doctor_same_node),
        T(test_doctor_same_node_two_spellings),
        T(test_doctor_clock_skew),
        T(test_doctor_unreachable),
        T(test_doctor_wrong_password),
    };
    const struct CMUnitTest server_tests[] = {
        S(test_list_finds_locks_among_many_keys_without_keys),
        S(test_list_pattern_and_text),
        S(test_watch_follows_holders),
        S(test_stats_count_acquisitions_and_a_loss),
        S(test_watch_canceled),
        S(test_run_writes_stats_json),
    };
#undef T
#undef S
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(doctor_tests, NULL, NULL) |
           cmocka_run_group_tests(server_tests, NULL, NULL);
}
