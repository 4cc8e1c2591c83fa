/* The Prometheus text of a known workload, read by a real parser
 * (prometheus_client, through tests/metrics/promtext.py): counts per lock
 * name, a wait and a hold of known length in the right buckets, a loss,
 * a fair hand-over, the cap on names, server errors without the password;
 * from the library and from `dlock run --metrics-file` (which writes it
 * on every exit that had a client: done, busy, lost, unreachable). */
#include "helpers.h"
#include "promtext.h"

#include <dlock.h>

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* A client on the group's server whose per-node deadline (a second) no
 * busy machine misses, keeping `max` names apart (0: the default). */
static dlock_client *open_metered(const char *url, unsigned max)
{
    dlock_client_options o = client_options(&url, 1);
    o.node_timeout_ms = 1000;
    o.metrics_names_max = max;
    return client_with(&o);
}

static void free_metrics(void *text)
{
    dlock_metrics_free(text);
}

/* The client's text (kept), as dlock_client_metrics_text() gives it. */
static char *metrics_text(dlock_client *c)
{
    char *text = NULL;
    assert_int_equal(dlock_client_metrics_text(&text, c), 0);
    return cleanup_keep(text, free_metrics);
}

/* The client's text as the parser read it; kept. */
static char *parsed_metrics(dlock_client *c)
{
    return kept_string(promtext_parse(metrics_text(c)));
}

/* A file's text as the parser read it, which names no password; kept. */
static char *parsed_file(const char *path)
{
    char *parsed = kept_string(promtext_parse_file(path));
    assert_null(strstr(parsed, "s3cret"));
    return parsed;
}

/* The count of sample FAMILY{LABELS}, e.g. count(p, "dlock_busy_total",
 * "name=\"a\""); -1: no such sample. */
static long long count(const char *parsed, const char *family, const char *labels)
{
    char sample[512];
    snprintf(sample, sizeof(sample), "%s{%s}", family, labels);
    return promtext_count(parsed, sample);
}

/* A sample that is not a count: a sum, a gauge. */
static double value(const char *parsed, const char *family, const char *labels)
{
    char sample[512];
    snprintf(sample, sizeof(sample), "%s{%s}", family, labels);
    return promtext_value(parsed, sample);
}

static long long bucket(const char *parsed, const char *family, const char *le, const char *name)
{
    char sample[512];
    snprintf(sample, sizeof(sample), "%s_bucket{le=\"%s\",name=\"%s\"}", family, le, name);
    return promtext_count(parsed, sample);
}

struct later_release {
    dlock_lock *lock;
    int delay_ms;
    int rc;
};

static void *release_later(void *arg)
{
    struct later_release *r = arg;
    usleep((useconds_t)r->delay_ms * 1000);
    r->rc = dlock_lock_release(r->lock);
    return NULL;
}

/* 5 acquisitions at once, 2 busy tries, then a wait for a release 1.5 s
 * away (the wait starts within a second of that, however slow the machine:
 * it lasts more than 0.5 s) and a hold of at least 300 ms: counted, and
 * each in its buckets (the 7 quick calls below 0.5 s, the wait above it;
 * 5 quick holds below 0.1 s). */
static void test_prometheus_counts_acquisitions_busy_and_a_wait(void **state)
{
    dlock_client *c = open_metered(group_server.url, 0);
    dlock_client *other = open_metered(group_server.url, 0);
    dlock_acquire_options waiting = wait_options(10000LL * test_slowdown());
    struct later_release *later;
    dlock_lock *lock;
    long long start;
    char *p;
    (void)state;
    for (int i = 0; i < 5; i++)
        take_and_release(c, "m-a", 10000, NULL);
    lock = take(other, "m-a", 10000, NULL);
    for (int i = 0; i < 2; i++)
        expect_acquire(DLOCK_EBUSY, c, "m-a", 10000, NULL);
    start = test_now_ms();
    later = start_thread(release_later, &(struct later_release){lock, 1500, -1},
                         sizeof(struct later_release));
    lock = take(c, "m-a", 10000, &waiting);
    assert_true(test_now_ms() - start >= 1500);
    join_thread(later);
    assert_int_equal(later->rc, 0);
    usleep(300 * 1000);
    assert_int_equal(dlock_lock_release(lock), 0);

    p = parsed_metrics(c);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-a\""), 6);
    assert_int_equal(count(p, "dlock_busy_total", "name=\"m-a\""), 2);
    assert_int_equal(count(p, "dlock_waits_total", "name=\"m-a\""), 1);
    assert_int_equal(count(p, "dlock_losses_total", "name=\"m-a\""), 0);
    assert_int_equal(count(p, "dlock_renewals_total", "name=\"m-a\""), 0);
    assert_int_equal(bucket(p, "dlock_wait_seconds", "0.5", "m-a"), 7);
    assert_int_equal(bucket(p, "dlock_wait_seconds", "60", "m-a"), 8);
    assert_int_equal(count(p, "dlock_wait_seconds_count", "name=\"m-a\""), 8);
    assert_true(value(p, "dlock_wait_seconds_sum", "name=\"m-a\"") >= 0.5);
    assert_int_equal(bucket(p, "dlock_hold_seconds", "0.1", "m-a"), 5);
    assert_int_equal(bucket(p, "dlock_hold_seconds", "60", "m-a"), 6);
    assert_int_equal(count(p, "dlock_hold_seconds_count", "name=\"m-a\""), 6);
    assert_true(value(p, "dlock_hold_seconds_sum", "name=\"m-a\"") >= 0.3);
    assert_int_equal(count(p, "dlock_renewal_margin_min_seconds", "name=\"m-a\""), -1);
}

/* One client waits three times behind another's holds: three waits, each
 * of at least two attempts (a waiter already listening is handed the lock
 * without trying again). A wait for a server that is not there found
 * nothing busy: no wait. */
static void test_prometheus_counts_every_wait_of_a_client(void **state)
{
    dlock_client *c = open_metered(group_server.url, 0);
    dlock_client *other = open_metered(group_server.url, 0);
    dlock_acquire_options waiting = wait_options(10000LL * test_slowdown());
    dlock_acquire_options short_wait = wait_options(300);
    char url[64], *p;
    (void)state;
    for (int i = 0; i < 3; i++) {
        struct later_release *later;
        dlock_lock *lock = take(other, "m-waits", 10000, NULL);
        later = start_thread(release_later, &(struct later_release){lock, 200, -1},
                             sizeof(struct later_release));
        lock = take(c, "m-waits", 10000, &waiting);
        join_thread(later);
        assert_int_equal(later->rc, 0);
        assert_true(dlock_lock_attempts(lock) >= 2);
        assert_int_equal(dlock_lock_release(lock), 0);
    }
    p = parsed_metrics(c);
    assert_int_equal(count(p, "dlock_waits_total", "name=\"m-waits\""), 3);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-waits\""), 3);

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", test_free_port());
    c = open_metered(url, 0);
    expect_acquire(DLOCK_ECONN, c, "m-nowhere", 10000, &short_wait);
    p = parsed_metrics(c);
    assert_int_equal(count(p, "dlock_waits_total", "name=\"m-nowhere\""), 0);
}

/* An auto-renewed lock renewed, then deleted: one loss (the handle is no
 * longer held), the renewal that found it gone failed, the smallest
 * margin is within the TTL, and the hold ended once (at the loss, not
 * again at the release). */
static void test_prometheus_counts_a_loss(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_metered(group_server.url, 0);
    dlock_acquire_options renewed = DLOCK_ACQUIRE_OPTIONS_INIT;
    long long until = test_now_ms() + 5000LL * test_slowdown();
    dlock_lock *lock;
    double margin;
    char *p;
    renewed.auto_renew = 1;
    lock = take(c, "m-b", 1000, &renewed);
    /* Waits for the name's own count: the renewal thread updates it just
     * after the client's, and a stall between the two (under TSan) once
     * outlasted the lock's validity. */
    do
        usleep(5 * 1000);
    while (count(metrics_text(c), "dlock_renewals_total", "name=\"m-b\"") < 1 &&
           test_now_ms() < until);
    freeReplyObject(run(redis, "DEL m-b"));
    for (until = test_now_ms() + 5000LL * test_slowdown();
         dlock_lock_held(lock) && test_now_ms() < until;)
        usleep(5 * 1000);
    assert_false(dlock_lock_held(lock));
    assert_int_equal(dlock_lock_release(lock), DLOCK_ELOST);

    p = parsed_metrics(c);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-b\""), 1);
    assert_int_equal(count(p, "dlock_losses_total", "name=\"m-b\""), 1);
    assert_true(count(p, "dlock_renewals_total", "name=\"m-b\"") >= 1);
    assert_true(count(p, "dlock_renewal_failures_total", "name=\"m-b\"") >= 1);
    margin = value(p, "dlock_renewal_margin_min_seconds", "name=\"m-b\"");
    assert_true(margin >= 0 && margin < 1);
    assert_int_equal(count(p, "dlock_hold_seconds_count", "name=\"m-b\""), 1);
    assert_int_equal(bucket(p, "dlock_hold_seconds", "0.1", "m-b"), 0);
}

struct fair_taker {
    dlock_client *c;
    dlock_lock *lock;
    int rc;
};

static void *take_fair(void *arg)
{
    struct fair_taker *t = arg;
    dlock_acquire_options o = fair_options(0, 20000LL * test_slowdown());
    t->rc = dlock_lock_acquire(&t->lock, t->c, "m-fair", 30000, &o);
    kept_lock(t->lock);
    return NULL;
}

/* A fair waiter, queued and listening (its two tries ran), is handed the
 * lock by the holder's release. */
static void test_prometheus_counts_a_fair_hand_over(void **state)
{
    redisContext *redis = *state;
    dlock_client *holder_client = open_metered(group_server.url, 0);
    dlock_acquire_options o = fair_options(0, 0);
    dlock_lock *holder = take(holder_client, "m-fair", 30000, &o);
    long long before = script_calls(redis), deadline;
    struct fair_taker *t = start_thread(
        take_fair, &(struct fair_taker){open_metered(group_server.url, 0), NULL, -1},
        sizeof(struct fair_taker));
    char *p;
    deadline = test_now_ms() + 10000LL * test_slowdown();
    while (script_calls(redis) < before + 2 && test_now_ms() < deadline)
        usleep(5 * 1000);
    assert_int_equal(dlock_lock_release(holder), 0);
    join_thread(t);
    assert_int_equal(t->rc, 0);
    assert_int_equal(dlock_lock_release(t->lock), 0);

    p = parsed_metrics(t->c);
    assert_int_equal(count(p, "dlock_handovers_total", "name=\"m-fair\""), 1);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-fair\""), 1);
    assert_int_equal(count(p, "dlock_waits_total", "name=\"m-fair\""), 1);
    p = parsed_metrics(holder_client);
    assert_int_equal(count(p, "dlock_handovers_total", "name=\"m-fair\""), 0);
}

static void acquire_and_release(dlock_client *c, const char *name)
{
    take_and_release(c, name, 10000, NULL);
}

/* With room for two names, a name with a quote, a backslash and a newline
 * keeps its own (escaped) lines; the third and later names, and a name
 * that is not UTF-8, are counted under __other__. */
static void test_prometheus_caps_the_names(void **state)
{
    dlock_client *c = open_metered(group_server.url, 2);
    char *p;
    (void)state;
    acquire_and_release(c, "m-\"q\"\\\n");
    acquire_and_release(c, "m-c");
    acquire_and_release(c, "m-d");
    acquire_and_release(c, "m-e");
    acquire_and_release(c, "m-c");
    acquire_and_release(c, "m-\xff");
    p = parsed_metrics(c);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-\\\"q\\\"\\\\\\n\""), 1);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-c\""), 2);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"__other__\""), 3);
    assert_int_equal(count(p, "dlock_wait_seconds_count", "name=\"__other__\""), 3);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-d\""), -1);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-e\""), -1);
}

/* A server that refuses connections: its errors, labelled by host and
 * port, never by the URL's password. */
static void test_prometheus_counts_server_errors_without_the_password(void **state)
{
    char url[128], label[64], *text, *p;
    int port = test_free_port();
    dlock_client *c;
    (void)state;
    snprintf(url, sizeof(url), "redis://:s3cret@127.0.0.1:%d", port);
    snprintf(label, sizeof(label), "server=\"127.0.0.1:%d\"", port);
    c = open_metered(url, 0);
    expect_acquire(DLOCK_ECONN, c, "m-down", 10000, NULL);
    text = metrics_text(c);
    assert_null(strstr(text, "s3cret"));
    p = kept_string(promtext_parse(text));
    assert_true(count(p, "dlock_server_errors_total", label) >= 1);
    assert_int_equal(count(p, "dlock_server_timeouts_total", label), 0);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-down\""), 0);
    assert_int_equal(count(p, "dlock_wait_seconds_count", "name=\"m-down\""), 0);
}

struct reader {
    dlock_client *c;
    atomic_bool stop;
    int texts, failures;
};

static void *read_metrics(void *arg)
{
    struct reader *r = arg;
    while (!atomic_load(&r->stop) && !cleanup_stopping()) {
        char *text = NULL;
        r->failures += dlock_client_metrics_text(&text, r->c) != 0;
        dlock_metrics_free(text);
        r->texts++;
    }
    return NULL;
}

/* The text is read on one thread while the caller's thread adds names and
 * the renewal thread renews (ThreadSanitizer runs this): every read works
 * and the last one has it all. */
static void test_prometheus_text_while_locks_come_and_go(void **state)
{
    dlock_client *c = open_metered(group_server.url, 0);
    dlock_acquire_options renewed = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_stats stats = {.version = DLOCK_STATS_VERSION};
    struct reader *r;
    long long until = test_now_ms() + 5000LL * test_slowdown();
    dlock_lock *lock;
    char *p;
    (void)state;
    renewed.auto_renew = 1;
    lock = take(c, "m-busy-reader", 1000, &renewed);
    r = start_thread(read_metrics, &(struct reader){.c = c}, sizeof(struct reader));
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof(name), "m-many-%02d", i);
        acquire_and_release(c, name);
    }
    while (dlock_client_stats(c, &stats) == 0 && !stats.renewals && test_now_ms() < until)
        usleep(5 * 1000);
    atomic_store(&r->stop, true);
    join_thread(r);
    assert_true(r->texts > 0);
    assert_int_equal(r->failures, 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    p = parsed_metrics(c);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-many-39\""), 1);
    assert_true(count(p, "dlock_renewals_total", "name=\"m-busy-reader\"") >= 1);
    assert_int_equal(count(p, "dlock_hold_seconds_count", "name=\"m-busy-reader\""), 1);
}

/* Nothing but FILE is left in the folder: the temporary was renamed. */
static void assert_only_file(const char *dir, const char *file)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d)))
        assert_null(strstr(e->d_name, ".tmp"));
    closedir(d);
    assert_int_equal(access(file, R_OK), 0);
}

/* A run that held the lock 300 ms: one acquisition, one hold above 0.1 s,
 * the file replaced at once (a file there before is replaced, no temporary
 * left), readable by others as a new file is (0644 under umask 022). A
 * file that cannot be written is reported, and changes no exit status. */
static void test_prometheus_run_writes_the_file(void **state)
{
    char dir[256], path[300], label[64], *p;
    struct stat st;
    FILE *f;
    cli_proc proc;
    (void)state;
    scratch(dir, sizeof(dir), "textfile");
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/dlock.prom", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("old\n", f);
    fclose(f);
    umask(022);
    assert_int_equal(DLOCK(&proc, 10000, "run", "--metrics-file", path, "m-run", "--", "sleep",
                           "0.3"), 0);
    assert_only_file(dir, path);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    p = parsed_file(path);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-run\""), 1);
    assert_int_equal(count(p, "dlock_hold_seconds_count", "name=\"m-run\""), 1);
    assert_int_equal(bucket(p, "dlock_hold_seconds", "0.1", "m-run"), 0);
    assert_int_equal(count(p, "dlock_losses_total", "name=\"m-run\""), 0);
    snprintf(label, sizeof(label), "server=\"127.0.0.1:%d\"", group_server.port);
    assert_int_equal(count(p, "dlock_server_errors_total", label), 0);
    /* A file that cannot be written: said, and the command's status kept. */
    snprintf(path, sizeof(path), "%s/missing/dlock.prom", dir);
    assert_int_equal(DLOCK(&proc, 10000, "run", "--metrics-file", path, "m-run", "--", "sh", "-c",
                           "exit 3"), 3);
    assert_non_null(strstr(proc.err, "--metrics-file"));
    assert_non_null(strstr(proc.err, "No such file or directory"));
}

/* A run that found the lock held, waited more than 0.5 s and got it: one
 * call of the library, so one acquisition, one wait, nothing busy, and one
 * wait observed, above 0.5 s. */
static void test_prometheus_run_that_waited_is_one_wait(void **state)
{
    redisContext *redis = *state;
    dlock_lock *held = take(open_metered(group_server.url, 0), "m-waited", 30000, NULL);
    char path[256], *p;
    cli_proc *proc;

    scratch(path, sizeof(path), "waited.prom");
    proc = start_cli(group_server.url,
                     (const char *const[]){"run", "-w", "30s", "--metrics-file", path, "m-waited",
                                           "--", "true", NULL},
                     NULL);
    wait_for_listener(redis, "m-waited"); /* it found the lock held */
    usleep(500 * 1000);
    assert_int_equal(dlock_lock_release(held), 0);
    assert_int_equal(cli_wait(proc, 20000 * test_slowdown()), 0);
    p = parsed_file(path);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-waited\""), 1);
    assert_int_equal(count(p, "dlock_busy_total", "name=\"m-waited\""), 0);
    assert_int_equal(count(p, "dlock_waits_total", "name=\"m-waited\""), 1);
    assert_int_equal(count(p, "dlock_wait_seconds_count", "name=\"m-waited\""), 1);
    assert_int_equal(bucket(p, "dlock_wait_seconds", "0.5", "m-waited"), 0);
}

/* Busy (75), a wait of more than 0.5 s, lost (70) and unreachable (69):
 * each run writes what it saw. */
static void test_prometheus_run_writes_it_when_it_fails(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = open_metered(group_server.url, 0);
    char path[256], url[128], label[64], *p;
    cli_proc proc, *lost;
    int port = test_free_port();

    take(c, "m-runs", 4000, NULL);

    scratch(path, sizeof(path), "busy.prom");
    assert_int_equal(DLOCK(&proc, 10000, "run", "-n", "--metrics-file", path, "m-runs", "--",
                           "true"), 75);
    p = parsed_file(path);
    assert_int_equal(count(p, "dlock_busy_total", "name=\"m-runs\""), 1);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-runs\""), 0);

    /* The holder's 4 s run out: one call of the run waited more than 0.5 s. */
    scratch(path, sizeof(path), "wait.prom");
    assert_int_equal(DLOCK(&proc, 20000 * test_slowdown(), "run", "-w", "30s", "--metrics-file",
                           path, "m-runs", "--", "true"), 0);
    p = parsed_file(path);
    assert_int_equal(count(p, "dlock_acquisitions_total", "name=\"m-runs\""), 1);
    assert_int_equal(count(p, "dlock_waits_total", "name=\"m-runs\""), 1);
    assert_int_equal(count(p, "dlock_wait_seconds_count", "name=\"m-runs\"") -
                         bucket(p, "dlock_wait_seconds", "0.5", "m-runs"), 1);

    scratch(path, sizeof(path), "lost.prom");
    lost = start_cli(group_server.url,
                     (const char *const[]){"run", "-t", "1s", "--metrics-file", path, "m-lost",
                                           "--", "sleep", "30", NULL},
                     NULL);
    wait_for_key(redis, "m-lost");
    freeReplyObject(run(redis, "DEL m-lost"));
    assert_int_equal(cli_wait(lost, 20000 * test_slowdown()), 70);
    p = parsed_file(path);
    assert_int_equal(count(p, "dlock_losses_total", "name=\"m-lost\""), 1);
    assert_int_equal(count(p, "dlock_hold_seconds_count", "name=\"m-lost\""), 1);

    snprintf(url, sizeof(url), "redis://:s3cret@127.0.0.1:%d", port);
    snprintf(label, sizeof(label), "server=\"127.0.0.1:%d\"", port);
    scratch(path, sizeof(path), "down.prom");
    assert_int_equal(cli_run(&proc, url,
                             (const char *const[]){"run", "-n", "--metrics-file", path, "m-down",
                                                   "--", "true", NULL},
                             10000), 69);
    p = parsed_file(path);
    assert_true(count(p, "dlock_server_errors_total", label) >= 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
#define U(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_prometheus_counts_acquisitions_busy_and_a_wait),
        T(test_prometheus_counts_every_wait_of_a_client),
        T(test_prometheus_counts_a_loss),
        T(test_prometheus_counts_a_fair_hand_over),
        T(test_prometheus_caps_the_names),
        U(test_prometheus_text_while_locks_come_and_go),
        U(test_prometheus_counts_server_errors_without_the_password),
        U(test_prometheus_run_writes_the_file),
        T(test_prometheus_run_that_waited_is_one_wait),
        T(test_prometheus_run_writes_it_when_it_fails),
    };
#undef T
#undef U
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
