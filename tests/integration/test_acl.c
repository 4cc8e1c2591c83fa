/* Least privilege: a user restricted to exactly the ACL rule documented in
 * docs/security.md can do everything; with less it fails cleanly, as an
 * authentication/permission error (exit 77 in the command). */
#include "cli_runner.h"
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The rule of docs/security.md for lock names "lock:*", without the
 * optional +info and +script|load (one server sends neither). */
#define RULE "-@all", "+evalsha", "+eval", "+subscribe", "+unsubscribe", \
             "+type", "+get", "+set", "+del", "+pttl", "+pexpire", "+time", "+publish", \
             "+zadd", "+zrem", "+zscore", "+zrange", "+zrangebyscore", "+zremrangebyscore", \
             "+hget", "+hset", "+hdel", \
             "+cluster|keyslot", "+spublish", "+ssubscribe", "+sunsubscribe", "+wait"
#define KEYS "~lock:*", "~{lock:*", "&{lock:*", "~dlock:restart-marker*"

static test_redis server;

static int group_setup(void **state)
{
    static const char *const args[] = {
        "--user", "locker", "on", ">locker-pw", RULE, KEYS,
        "--user", "noset", "on", ">noset-pw", "-@all", "+evalsha", "+eval", "+script|load",
        "+subscribe", "+unsubscribe", "+type", "+get", "+del", "+pttl", "+pexpire", "+time",
        "+publish", KEYS,
        "--user", "otherkeys", "on", ">otherkeys-pw", RULE, "~other:*", "&*",
        "--user", "noevalsha", "on", ">noevalsha-pw", "-@all", "+eval", "+script|load",
        "+subscribe", "+unsubscribe", "+type", "+get", "+set", "+del", "+pttl", "+pexpire",
        "+time", "+publish", KEYS,
        "--user", "nowait", "on", ">nowait-pw", RULE, "-wait", KEYS,
        NULL};
    (void)state;
    return test_redis_start(&server, args);
}

static int group_teardown(void **state)
{
    (void)state;
    test_redis_stop(&server);
    return 0;
}

static dlock_client *as_user(const char *user, const char *password)
{
    char url[128];
    snprintf(url, sizeof(url), "redis://%s:%s@127.0.0.1:%d", user, password, server.port);
    return open_client(url, 0, 0);
}

/* A semaphore: two permits, a waiter, status, extend, release by token. */
static void use_a_semaphore(dlock_client *c, dlock_client *other)
{
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *permits[2], *third = NULL, *adopted = NULL;
    dlock_status *st;
    opts.permits = 2;
    for (int i = 0; i < 2; i++)
        assert_int_equal(dlock_lock_acquire(&permits[i], c, "lock:acl-sem", 30000, &opts), 0);
    opts.wait_ms = 200;
    assert_int_equal(dlock_lock_acquire(&third, other, "lock:acl-sem", 30000, &opts), DLOCK_EBUSY);
    assert_int_equal(dlock_status_query(&st, c, "lock:acl-sem"), 0);
    assert_int_equal(dlock_status_holders(st), 2);
    dlock_status_free(st);
    assert_int_equal(dlock_lock_extend(permits[0], 30000), 0);
    assert_int_equal(dlock_lock_adopt(&adopted, other, "lock:acl-sem", dlock_lock_token(permits[1])),
                     0);
    assert_int_equal(dlock_lock_release(adopted), 0);
    assert_int_equal(dlock_lock_release(permits[0]), 0);
    dlock_lock_free(adopted);
    for (int i = 0; i < 2; i++)
        dlock_lock_free(permits[i]);
}

static void test_acl_exact_rule_is_enough(void **state)
{
    dlock_client *c = as_user("locker", "locker-pw"), *other = as_user("locker", "locker-pw");
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock = NULL, *second = NULL;
    status_view st;
    (void)state;
    assert_int_equal(dlock_lock_acquire(&lock, c, "lock:acl", 30000, NULL), 0);
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    assert_int_equal(status_of(&st, c, "lock:acl"), 0);
    assert_true(st.held && st.has_owner);
    /* A wait subscribes to the release channel. */
    opts.wait_ms = 200;
    assert_int_equal(dlock_lock_acquire(&second, other, "lock:acl", 30000, &opts), DLOCK_EBUSY);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    /* Renewal: extends on the renewal thread's own connection. */
    opts.wait_ms = 0;
    opts.auto_renew = 1;
    assert_int_equal(dlock_lock_acquire(&lock, c, "lock:acl-renew", 300, &opts), 0);
    usleep(700 * 1000);
    assert_true(dlock_lock_held(lock));
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    /* With a name in a hash tag of the pattern: {lock:...} keys. */
    assert_int_equal(dlock_lock_acquire(&lock, c, "{lock:user7}:job", 30000, NULL), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    use_a_semaphore(c, other);
    dlock_client_close(other);
    dlock_client_close(c);
    {
        /* Nothing was denied along the way (SUBSCRIBE, CLUSTER KEYSLOT...). */
        redisContext *admin = test_redis_connect(&server, NULL);
        redisReply *log = run(admin, "ACL LOG");
        for (size_t i = 0; i < log->elements; i++)
            for (size_t j = 0; j + 1 < log->element[i]->elements; j += 2)
                if (strcmp(log->element[i]->element[j]->str, "username") == 0)
                    assert_string_not_equal(log->element[i]->element[j + 1]->str, "locker");
        freeReplyObject(log);
        redisFree(admin);
    }
}

static void test_acl_missing_command_is_a_permission_error(void **state)
{
    dlock_client *c = as_user("noset", "noset-pw");
    dlock_lock *lock = NULL;
    (void)state;
    assert_int_equal(dlock_lock_acquire(&lock, c, "lock:acl2", 30000, NULL), DLOCK_EAUTH);
    assert_non_null(strstr(dlock_client_errmsg(c), "can't"));
    dlock_client_close(c);
}

static void test_acl_without_evalsha(void **state)
{
    dlock_client *c = as_user("noevalsha", "noevalsha-pw");
    dlock_lock *lock = NULL;
    (void)state;
    assert_int_equal(dlock_lock_acquire(&lock, c, "lock:acl4", 30000, NULL), DLOCK_EAUTH);
    assert_non_null(strstr(dlock_client_errmsg(c), "evalsha"));
    assert_null(strstr(dlock_client_errmsg(c), "noevalsha-pw"));
    dlock_client_close(c);
}

static void test_acl_missing_key_pattern_is_a_permission_error(void **state)
{
    dlock_client *c = as_user("otherkeys", "otherkeys-pw");
    dlock_lock *lock = NULL;
    cli_proc p;
    char url[128];
    (void)state;
    assert_int_equal(dlock_lock_acquire(&lock, c, "lock:acl3", 30000, NULL), DLOCK_EAUTH);
    dlock_client_close(c);
    snprintf(url, sizeof(url), "redis://otherkeys:otherkeys-pw@127.0.0.1:%d", server.port);
    {
        const char *args[] = {"run", "-n", "lock:acl3", "--", "true", NULL};
        assert_int_equal(cli_run(&p, url, args, 10000), 77);
        assert_null(strstr(p.err, "otherkeys-pw"));
    }
}

/* A server without AUTH quotes the password it was sent in its error: the
 * message must not. */
static void test_acl_password_never_in_messages(void **state)
{
    static const char *const args[] = {"--rename-command", "AUTH", "", NULL};
    test_redis bare = {0};
    dlock_client *c;
    dlock_lock *lock = NULL;
    char url[128];
    int rc;
    (void)state;
    assert_int_equal(test_redis_start(&bare, args), 0);
    snprintf(url, sizeof(url), "redis://:Sekr1t-Pass@127.0.0.1:%d", bare.port);
    c = open_client(url, 0, 0);
    rc = dlock_lock_acquire(&lock, c, "lock:scrub", 30000, NULL);
    assert_int_equal(rc, DLOCK_EAUTH);
    assert_non_null(strstr(dlock_client_errmsg(c), "unknown command"));
    if (strstr(dlock_client_errmsg(c), "Sekr1t"))
        fail_msg("the password is in the message: %s", dlock_client_errmsg(c));
    dlock_client_close(c);
    test_redis_stop(&bare);
}

static dlock_client *as_durable_user(const char *user, const char *password, int replicas,
                                    int64_t restart_delay_ms)
{
    char url[128];
    snprintf(url, sizeof(url), "redis://%s:%s@127.0.0.1:%d", user, password, server.port);
    return open_durable(url, replicas, restart_delay_ms);
}

/* --replicas needs +wait: with it a server without replicas is too few
 * replicas, not a permission error; without it, it is one. */
static void test_acl_replicas_need_wait(void **state)
{
    dlock_client *c = as_durable_user("locker", "locker-pw", 1, 0);
    dlock_client *denied = as_durable_user("nowait", "nowait-pw", 1, 0);
    dlock_lock *lock = NULL;
    (void)state;
    assert_int_equal(dlock_lock_acquire(&lock, c, "lock:acl-wait", 30000, NULL),
                     DLOCK_ENOREPLICAS);
    assert_int_equal(dlock_lock_acquire(&lock, denied, "lock:acl-wait", 30000, NULL),
                     DLOCK_EAUTH);
    assert_null(lock);
    dlock_client_close(denied);
    dlock_client_close(c);
}

/* The restart rule with the documented rule, INFO left out: the marker
 * alone works (it names no server), and the delay starts when it is
 * written. */
static void test_acl_restart_rule_without_info(void **state)
{
    dlock_client *c = as_durable_user("locker", "locker-pw", 0, 60000);
    redisContext *admin = test_redis_connect(&server, NULL);
    dlock_lock *lock = NULL;
    int64_t left = 0;
    char *marker;
    (void)state;
    freeReplyObject(run(admin, "DEL dlock:restart-marker"));
    assert_int_equal(dlock_lock_acquire(&lock, c, "lock:acl-restart", 30000, NULL), DLOCK_EBUSY);
    marker = get_string(admin, "dlock:restart-marker");
    assert_non_null(marker);
    assert_memory_equal(marker, "- - ", 4);
    assert_int_equal(dlock_restart_remaining(&left, c, 0), 0);
    assert_true(left > 0 && left <= 60000);
    free(marker);
    redisFree(admin);
    dlock_client_close(c);
}

/* A user without INFO: doctor says what it could not check, the one-vote
 * check's limit (addresses only) included. */
static void test_acl_doctor_without_info_says_what_it_missed(void **state)
{
    dlock_client *c = as_user("locker", "locker-pw");
    dlock_report *report = NULL;
    const char *missed = ""; /* NOT_CHECKED's evidence */
    (void)state;
    assert_int_equal(dlock_doctor(&report, c, "lock:acl-doctor", 0), 0);
    for (size_t i = 0; i < dlock_report_count(report); i++)
        if (strcmp(dlock_report_finding(report, i)->id, "NOT_CHECKED") == 0)
            missed = dlock_report_finding(report, i)->evidence;
    assert_non_null(strstr(missed, "one server is checked by address only"));
    dlock_report_free(report);
    dlock_client_close(c);
}

/* ACL SETUSER `name` (password NAME-pw) with the rule, then `less`. */
static void set_user(redisContext *admin, const char *name, const char *const *less)
{
    const char *argv[64] = {"ACL", "SETUSER", name, "on"};
    static const char *const rule[] = {RULE, KEYS, NULL};
    char password[64];
    int argc = 4;
    redisReply *reply;
    snprintf(password, sizeof(password), ">%s-pw", name);
    argv[argc++] = password;
    for (size_t i = 0; rule[i]; i++)
        argv[argc++] = rule[i];
    for (size_t i = 0; less[i]; i++)
        argv[argc++] = less[i];
    reply = redisCommandArgv(admin, argc, argv, NULL);
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
    freeReplyObject(reply);
}

/* The findings of `id` in the doctor's report of `user` on lock:acl-dr. */
static const dlock_finding *doctor_finding(dlock_report **report, const char *user,
                                           const char *password, const char *id)
{
    dlock_client *c = as_user(user, password);
    const dlock_finding *f = NULL;
    assert_int_equal(dlock_doctor(report, c, "lock:acl-dr", 0), 0);
    for (size_t i = 0; i < dlock_report_count(*report); i++)
        if (strcmp(dlock_report_finding(*report, i)->id, id) == 0)
            f = dlock_report_finding(*report, i);
    dlock_client_close(c);
    return f;
}

/* The finding `id` of `user`, which must be there with `severity`. */
static const dlock_finding *must_find(dlock_report **report, const char *user, const char *id,
                                      dlock_severity severity)
{
    char password[64];
    const dlock_finding *f;
    snprintf(password, sizeof(password), "%s-pw", user);
    f = doctor_finding(report, user, password, id);
    if (!f) { /* cmocka's asserts return, as far as the analyser knows */
        fail_msg("no %s for %s", id, user);
        return NULL;
    }
    assert_int_equal(f->severity, severity);
    return f;
}

/* The rule minus +eval works while the script cache is warm, and fails
 * every acquire once it is empty (a restart, SCRIPT FLUSH): doctor finds
 * it either way. The documented rule has no finding about the user at
 * all; without the semaphores' commands, a warning that names them. */
static void test_acl_doctor_finds_eval_missing_whatever_the_cache(void **state)
{
    char url[128];
    const char *args[] = {"doctor", "lock:acl-dr", NULL};
    dlock_client *warm = open_client(server.url, 0, 0), *c;
    redisContext *admin = test_redis_connect(&server, NULL);
    dlock_report *report = NULL;
    const dlock_finding *f;
    dlock_lock *lock = NULL;
    cli_proc p;
    (void)state;
    set_user(admin, "noeval", (const char *const[]){"-eval", NULL});
    set_user(admin, "nokinds", (const char *const[]){"-zadd", "-hset", NULL});
    lock = must_acquire(warm, "lock:acl-warm", 30000, NULL); /* the cache holds the scripts */
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_client_close(warm);
    f = must_find(&report, "noeval", "ACL_MISSING", DLOCK_SEVERITY_ERROR);
    assert_non_null(strstr(f->evidence, "EVAL return 1"));
    assert_null(strstr(f->evidence, "EVALSHA"));
    dlock_report_free(report);
    snprintf(url, sizeof(url), "redis://noeval:noeval-pw@127.0.0.1:%d", server.port);
    assert_int_equal(cli_run(&p, url, args, 10000), 78);
    /* what it foretold: with the cache empty, every acquire fails */
    freeReplyObject(run(admin, "SCRIPT FLUSH"));
    c = as_user("noeval", "noeval-pw");
    assert_int_equal(dlock_lock_acquire(&lock, c, "lock:acl-cold", 30000, NULL), DLOCK_EAUTH);
    dlock_client_close(c);
    /* the documented rule: nothing about the user's rights */
    for (size_t i = 0; i < 3; i++) {
        static const char *const ids[] = {"ACL_MISSING", "ACL_KINDS", "ACL_OPTIONAL"};
        assert_null(doctor_finding(&report, "locker", "locker-pw", ids[i]));
        dlock_report_free(report);
    }
    f = must_find(&report, "nokinds", "ACL_KINDS", DLOCK_SEVERITY_WARNING);
    assert_non_null(strstr(f->evidence, "ZADD"));
    assert_non_null(strstr(f->evidence, "HSET"));
    assert_null(strstr(f->evidence, "ZREM "));
    dlock_report_free(report);
    redisFree(admin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acl_password_never_in_messages),
        cmocka_unit_test(test_acl_exact_rule_is_enough),
        cmocka_unit_test(test_acl_missing_command_is_a_permission_error),
        cmocka_unit_test(test_acl_missing_key_pattern_is_a_permission_error),
        cmocka_unit_test(test_acl_without_evalsha),
        cmocka_unit_test(test_acl_replicas_need_wait),
        cmocka_unit_test(test_acl_restart_rule_without_info),
        cmocka_unit_test(test_acl_doctor_without_info_says_what_it_missed),
        cmocka_unit_test(test_acl_doctor_finds_eval_missing_whatever_the_cache),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
