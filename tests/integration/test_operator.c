/* What an operator reads: list and status of every kind (mutex, fair,
 * semaphore, shared) on one server, a Redlock and a cluster; options that
 * do not apply refused; the messages for a name of another kind and for
 * a name held shared. */
#include "cluster_tools.h"
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define server group_server

/* `dlock ARGS...` against `url`, which must succeed; the pid of the
 * process, which its owner record names. */
static long must_run(const char *url, const char *const *args)
{
    cli_proc p;
    int status = cli_run(&p, url, args, 10000 * test_slowdown());
    if (status != 0)
        fail_msg("dlock %s %s: exit %d: %s", args[0], args[1], status, p.err);
    return (long)p.pid;
}

/* Holder `pid` named in `text`: "pid N" as text, "pid":N as JSON. */
static void assert_names_pid(const char *text, long pid)
{
    char said[32], json[32];
    snprintf(said, sizeof(said), "pid %ld", pid);
    snprintf(json, sizeof(json), "\"pid\":%ld", pid);
    if (!strstr(text, said) && !strstr(text, json))
        fail_msg("no '%s' in: %s", said, text);
}

static void assert_contains(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("no '%s' in: %s", want, text);
}

static void assert_lacks(const char *text, const char *unwanted)
{
    if (strstr(text, unwanted))
        fail_msg("'%s' in: %s", unwanted, text);
}

/* The holders that `dlock acquire` left, one kind each. */
typedef struct held {
    long mutex, fair, permit[2], reader[2];
} held;

/* Takes a mutex, a shared name twice and, with `one_endpoint` (not a
 * Redlock: a semaphore and a fair lock take one endpoint), a fair lock
 * and two permits of 3, each name under `prefix`. */
static held take_every_kind(const char *url, const char *prefix, int one_endpoint)
{
    char mutex[64], fair[64], sem[64], shared[64];
    held h = {0};
    snprintf(mutex, sizeof(mutex), "%s:mutex", prefix);
    snprintf(fair, sizeof(fair), "%s:fair", prefix);
    snprintf(sem, sizeof(sem), "%s:sem", prefix);
    snprintf(shared, sizeof(shared), "%s:shared", prefix);
    h.mutex = must_run(url, (const char *const[]){"acquire", "-t", "60s", mutex, NULL});
    for (int i = 0; i < 2; i++)
        h.reader[i] =
            must_run(url, (const char *const[]){"acquire", "-s", "-t", "60s", shared, NULL});
    if (!one_endpoint)
        return h;
    h.fair = must_run(url, (const char *const[]){"acquire", "--fair", "-t", "60s", fair, NULL});
    for (int i = 0; i < 2; i++)
        h.permit[i] = must_run(
            url, (const char *const[]){"acquire", "--permits", "3", "-t", "60s", sem, NULL});
    return h;
}

/* `dlock list PATTERN` and `list --json PATTERN` name every holder of
 * every kind taken by take_every_kind(). */
static void assert_lists_every_kind(const char *url, const char *prefix, const held *h)
{
    char pattern[64];
    cli_proc p;
    snprintf(pattern, sizeof(pattern), "%s:*", prefix);
    assert_int_equal(cli_run(&p, url, (const char *const[]){"list", pattern, NULL}, 10000), 0);
    assert_contains(p.out, ":shared: held shared by 2");
    assert_lacks(p.out, "\n\n");
    for (int i = 0; i < 2; i++)
        assert_names_pid(p.out, h->reader[i]);
    assert_names_pid(p.out, h->mutex);
    if (h->fair) {
        assert_contains(p.out, ":sem: 2/3 held (semaphore)");
        assert_names_pid(p.out, h->fair);
        assert_names_pid(p.out, h->permit[0]);
        assert_names_pid(p.out, h->permit[1]);
    }
    assert_int_equal(
        cli_run(&p, url, (const char *const[]){"list", "--json", pattern, NULL}, 10000), 0);
    assert_contains(p.out, ":shared\",\"held\":true");
    assert_contains(p.out, "\"shared\":true");
    for (int i = 0; i < 2; i++)
        assert_names_pid(p.out, h->reader[i]);
    assert_names_pid(p.out, h->mutex);
    if (h->fair) {
        assert_contains(p.out, "\"limit\":3");
        assert_names_pid(p.out, h->fair);
        assert_names_pid(p.out, h->permit[0]);
        assert_names_pid(p.out, h->permit[1]);
    }
}

/* ---- list ---- */

static void test_operator_list_shows_every_kind_on_one_server(void **state)
{
    held h = take_every_kind(server.url, "op:one", 1);
    (void)state;
    assert_lists_every_kind(server.url, "op:one", &h);
}

static void test_operator_list_shows_every_kind_on_a_redlock(void **state)
{
    const char *urls = url_list(start_servers(3), 3);
    held h;
    (void)state;
    h = take_every_kind(urls, "op:redlock", 0);
    assert_lists_every_kind(urls, "op:redlock", &h);
}

static void test_operator_list_shows_every_kind_on_a_cluster(void **state)
{
    test_cluster *cluster = start_cluster();
    held h;
    (void)state;
    /* names of several slots: their records are on several masters */
    h = take_every_kind(cluster->nodes[0].url, "op:cluster", 1);
    assert_lists_every_kind(cluster->nodes[0].url, "op:cluster", &h);
}

/* Servers that all refuse alike (a wrong password): list says so, as
 * status does, rather than that no majority answered. */
static void test_operator_list_on_a_redlock_gives_the_failure_all_servers_share(void **state)
{
    static const char *const auth[] = {"--requirepass", "right-pw", NULL};
    char urls[3][100];
    const char *const list[] = {urls[0], urls[1], urls[2]};
    dlock_names *names = NULL;
    dlock_status *st = NULL;
    dlock_client *c;
    (void)state;
    for (size_t i = 0; i < 3; i++)
        snprintf(urls[i], sizeof(urls[i]), "redis://:wrong-pw@127.0.0.1:%d",
                 start_server(auth)->port);
    c = client_on_nodes(list, 3, 0, 0);
    assert_int_equal(dlock_status_query(&st, c, "op:auth"), DLOCK_EAUTH);
    assert_int_equal(dlock_list_names(&names, c, NULL), DLOCK_EAUTH);
    assert_null(names);
    assert_non_null(strstr(dlock_client_errmsg(c), "WRONGPASS"));
}

/* ---- status: the top-level fields ---- */

/* "holder" is the one holder of a kind that has one, else null; "fence"
 * the last fence issued for the name, the largest of its holders'. */
static void test_operator_status_top_level_fields_per_kind(void **state)
{
    static const char *const kinds[] = {"mutex", "fair", "sem", "shared"};
    held h = take_every_kind(server.url, "op:top", 1);
    (void)state;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        char name[64], top[160];
        dlock_status *st = NULL;
        cli_proc p;
        uint64_t largest = 0;
        snprintf(name, sizeof(name), "op:top:%s", kinds[k]);
        assert_int_equal(dlock_status_query(&st, client_on(server.url), name), 0);
        kept_status(st);
        for (size_t i = 0; i < dlock_status_holders(st); i++) {
            uint64_t f = dlock_status_holder(st, i)->fence;
            largest = f > largest ? f : largest;
        }
        assert_int_equal(
            cli_run(&p, server.url, (const char *const[]){"status", "--json", name, NULL}, 10000),
            0);
        snprintf(top, sizeof(top), "\"fence\":%llu,\"holder\":", (unsigned long long)largest);
        assert_contains(p.out, top);
        if (k < 2) {
            snprintf(top, sizeof(top), "\"holder\":{\"host\":");
            assert_contains(p.out, top);
            assert_names_pid(p.out, k == 0 ? h.mutex : h.fair);
        } else {
            assert_contains(p.out, "\"holder\":null");
        }
    }
}

/* ---- options that do not apply ---- */

static void test_operator_lease_without_fair_is_refused(void **state)
{
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    cli_proc p;
    (void)state;
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "--lease", "1s", "op:lease"), 64);
    assert_contains(p.err, "--lease");
    assert_contains(p.err, "--fair");
    assert_int_equal(DLOCK(&p, 10000, "run", "--lease", "1s", "op:lease", "--", "true"), 64);
    assert_contains(p.err, "--fair");
    o.lease_ms = 1000;
    expect_acquire(DLOCK_EINVAL, c, "op:lease", 30000, &o);
    assert_contains(dlock_client_errmsg(c), "lease_ms");
    assert_contains(dlock_client_errmsg(c), "fair");
    assert_false(key_exists(connect_to(&server), "op:lease"));
    o.fair = 1;
    take_and_release(c, "op:lease", 30000, &o);
}

/* ---- messages ---- */

/* A writer refused by three shared holders hears that the name is held
 * shared, by how many, and one of them. */
static void test_operator_busy_shared_says_how_many_and_one(void **state)
{
    long pid[3];
    char one[64];
    cli_proc p;
    int named = 0;
    (void)state;
    for (int i = 0; i < 3; i++)
        pid[i] = must_run(server.url,
                          (const char *const[]){"acquire", "-s", "-t", "60s", "op:readers", NULL});
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "op:readers"), 75);
    assert_contains(p.err, "dlock: op:readers is busy: held shared by 3 holders (one: ");
    for (int i = 0; i < 3; i++) {
        snprintf(one, sizeof(one), " pid %ld)", pid[i]);
        named += strstr(p.err, one) != NULL;
    }
    assert_int_equal(named, 1);
    assert_int_equal(DLOCK(&p, 10000, "run", "-w", "100ms", "op:readers", "--", "true"), 75);
    assert_contains(p.err, "held shared by 3 holders (one: ");
}

/* Nothing of a script's internals (its SHA1, its Lua line) in `text`. */
static void assert_no_script_internals(const char *text)
{
    assert_lacks(text, "script:");
    assert_lacks(text, "user_script");
}

/* A semaphore's name taken as another kind, and the other way round: the
 * kind found (a semaphore with its permits in force) and the kind asked
 * for, from the command and the library alike, nothing of Redis' script
 * internals. */
static void test_operator_wrong_kind_names_both_kinds(void **state)
{
    static const char *const asked[][3] = {
        {"-n", "op:kind:sem", "mutex"}, {"--fair", "op:kind:sem", "fair lock"},
        {"-s", "op:kind:sem", "shared lock"}};
    dlock_client *c = client_on(server.url);
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    char want[160];
    cli_proc p;
    (void)state;
    must_run(server.url,
             (const char *const[]){"acquire", "--permits", "3", "-t", "60s", "op:kind:sem", NULL});
    must_run(server.url, (const char *const[]){"acquire", "-t", "60s", "op:kind:mutex", NULL});
    must_run(server.url, (const char *const[]){"acquire", "-s", "-t", "60s", "op:kind:shared", NULL});
    for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
        assert_int_equal(DLOCK(&p, 10000, "acquire", "-w", "1s", asked[i][0], asked[i][1]), 69);
        snprintf(want, sizeof(want), "dlock: op:kind:sem is a semaphore of 3 permits, not a %s\n",
                 asked[i][2]);
        assert_string_equal(p.err, want);
    }
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "--permits", "2", "op:kind:mutex"), 69);
    assert_string_equal(p.err,
                        "dlock: op:kind:mutex is a mutex or a fair lock, not a semaphore of 2 "
                        "permits\n");
    assert_int_equal(DLOCK(&p, 10000, "run", "--permits", "2", "op:kind:shared", "--", "true"), 69);
    assert_string_equal(p.err,
                        "dlock: op:kind:shared is held shared, not a semaphore of 2 permits\n");
    o.fair = 1;
    expect_acquire(DLOCK_EWRONGTYPE, c, "op:kind:sem", 30000, &o);
    assert_string_equal(dlock_client_errmsg(c),
                        "op:kind:sem is a semaphore of 3 permits, not a fair lock");
    /* a name that holds no lock: the server's words, for every kind asked */
    freeReplyObject(run(connect_to(&server), "HSET op:kind:hash f v"));
    o.fair = 0;
    o.permits = 2;
    expect_acquire(DLOCK_EWRONGTYPE, c, "op:kind:hash", 30000, &o);
    assert_string_equal(dlock_client_errmsg(c), "WRONGTYPE op:kind:hash holds a hash, not a lock");
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "--permits", "2", "op:kind:hash"), 69);
    assert_string_equal(p.err, "dlock: op:kind:hash holds a hash, not a lock (WRONGTYPE)\n");
    /* with -v: no internals either */
    assert_int_equal(DLOCK(&p, 10000, "-v", "acquire", "-n", "op:kind:sem"), 69);
    assert_no_script_internals(p.err);
}

/* A `dlock run` stopped (SIGSTOP) past its TTL, then continued: the lock
 * is lost (70), and the message says that its validity ran out while dlock
 * was not running, not that a server did not answer. */
static void test_operator_run_stopped_past_its_ttl_says_so(void **state)
{
    char started[160], script[256];
    cli_proc *p;
    (void)state;
    scratch(started, sizeof(started), "stopped-run");
    snprintf(script, sizeof(script), "echo $$ >%s; sleep 30", started);
    p = start_cli(server.url,
                  (const char *const[]){"run", "-t", "1s", "op:stopped", "-c", script, NULL}, NULL);
    /* the command runs: the lock is held and renewed */
    assert_true(wait_for_number(started) > 0);
    assert_int_equal(kill(p->pid, SIGSTOP), 0);
    usleep(2500 * 1000); /* the TTL, and more */
    assert_int_equal(kill(p->pid, SIGCONT), 0);
    assert_int_equal(cli_wait(p, 20000 * test_slowdown()), 70);
    assert_contains(p->err, "lock op:stopped was lost: its validity ran out while dlock was not "
                            "running");
    assert_lacks(p->err, "did not answer");
}

/* ---- run --stats-json ---- */

/* The counters `dlock run --stats-json` wrote for `args` (their exit
 * status `status`) into text. */
static void stats_of_run(const char *const *args, const char *path, int status, char *text,
                         size_t len)
{
    cli_proc p;
    FILE *f;
    size_t got;
    assert_int_equal(cli_run(&p, server.url, args, 10000 * test_slowdown()), status);
    f = fopen(path, "r");
    assert_non_null(f);
    got = fread(text, 1, len - 1, f);
    text[got] = '\0';
    fclose(f);
}

/* A run that waits for a lock held by a token for 0.5 s, and gets it: one
 * acquisition, one wait, nothing busy. A run with -n that finds it held:
 * busy once, no wait. */
static void test_operator_run_stats_a_wait_that_got_the_lock_is_not_busy(void **state)
{
    char path[256], text[1024];
    cli_proc p;
    long long start;
    (void)state;
    scratch(path, sizeof(path), "stats.json");
    start = test_now_ms(); /* the key expires 500 ms after this at the earliest */
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-t", "500ms", "op:stats"), 0);
    stats_of_run((const char *const[]){"run", "--stats-json", path, "op:stats", "--", "true",
                                       NULL},
                 path, 0, text, sizeof(text));
    assert_true(test_now_ms() - start >= 500);
    assert_contains(text, "{\"acquisitions\":1,\"busy\":0,\"waits\":1,");
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-t", "5s", "op:stats"), 0);
    stats_of_run((const char *const[]){"run", "-n", "--stats-json", path, "op:stats", "--",
                                       "true", NULL},
                 path, 75, text, sizeof(text));
    assert_contains(text, "{\"acquisitions\":0,\"busy\":1,\"waits\":0,");
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_operator_list_shows_every_kind_on_one_server),
        T(test_operator_list_shows_every_kind_on_a_redlock),
        T(test_operator_list_shows_every_kind_on_a_cluster),
        T(test_operator_list_on_a_redlock_gives_the_failure_all_servers_share),
        T(test_operator_status_top_level_fields_per_kind),
        T(test_operator_lease_without_fair_is_refused),
        T(test_operator_run_stats_a_wait_that_got_the_lock_is_not_busy),
        T(test_operator_busy_shared_says_how_many_and_one),
        T(test_operator_wrong_kind_names_both_kinds),
        T(test_operator_run_stopped_past_its_ttl_says_so),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
