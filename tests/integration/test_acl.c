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
             "+zcount", "+hget", "+hset", "+hdel", \
             "+cluster|keyslot", "+exists", "+asking", "+spublish", "+ssubscribe", "+sunsubscribe", \
             "+wait", "+xadd", "+xrevrange"
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
    cleanup_run(); /* what a failed setup kept */
    test_redis_stop(&server);
    return 0;
}

static dlock_client *as_user(const char *user, const char *password)
{
    char url[128];
    snprintf(url, sizeof(url), "redis://%s:%s@127.0.0.1:%d", user, password, server.port);
    return client_on(url);
}

/* The same with the audit on. */
static dlock_client *audited_user(const char *user, const char *password)
{
    char url[128];
    const char *url_p = url;
    dlock_client_options o;
    snprintf(url, sizeof(url), "redis://%s:%s@127.0.0.1:%d", user, password, server.port);
    o = client_options(&url_p, 1);
    o.audit = 1;
    return client_with(&o);
}

/* A semaphore: two permits, a waiter, status, extend, release by token. */
static void use_a_semaphore(dlock_client *c, dlock_client *other)
{
    dlock_acquire_options opts = permits_options(2);
    dlock_lock *permits[2];
    dlock_status *st = NULL;
    for (int i = 0; i < 2; i++)
        permits[i] = take(c, "lock:acl-sem", 30000, &opts);
    opts.wait_ms = 200;
    expect_acquire(DLOCK_EBUSY, other, "lock:acl-sem", 30000, &opts);
    assert_int_equal(dlock_status_query(&st, c, "lock:acl-sem"), 0);
    assert_int_equal(dlock_status_holders(kept_status(st)), 2);
    assert_int_equal(dlock_lock_extend(permits[0], 30000), 0);
    assert_int_equal(dlock_lock_release(adopt(other, "lock:acl-sem", dlock_lock_token(permits[1]))),
                     0);
    assert_int_equal(dlock_lock_release(permits[0]), 0);
}

/* Shared holds, a writer queued behind them, and the audit: every call
 * audited, and the stream read back. */
static void use_shared_holds_and_the_audit(dlock_client *c, dlock_client *other)
{
    dlock_client *audited = audited_user("locker", "locker-pw");
    dlock_acquire_options shared = shared_options(0), writer = wait_options(200);
    dlock_lock *readers[2];
    dlock_audit *audit = NULL;
    const dlock_audit_hold *holds;
    for (int i = 0; i < 2; i++)
        readers[i] = take(c, "lock:acl-shared", 30000, &shared);
    expect_acquire(DLOCK_EBUSY, other, "lock:acl-shared", 30000, &writer);
    for (int i = 0; i < 2; i++)
        assert_int_equal(dlock_lock_release(readers[i]), 0);
    take_and_release(audited, "lock:acl-audit", 30000, NULL);
    assert_int_equal(dlock_audit_read(&audit, audited, "lock:acl-audit", 0), 0);
    assert_int_equal(dlock_audit_holds(kept_audit(audit), &holds), 1);
}

static void test_acl_exact_rule_is_enough(void **state)
{
    dlock_client *c = as_user("locker", "locker-pw"), *other = as_user("locker", "locker-pw");
    dlock_acquire_options opts = wait_options(200);
    dlock_lock *lock = take(c, "lock:acl", 30000, NULL);
    status_view st;
    redisReply *log;
    (void)state;
    assert_int_equal(dlock_lock_extend(lock, 30000), 0);
    assert_int_equal(status_of(&st, c, "lock:acl"), 0);
    assert_true(st.held && st.has_owner);
    /* A wait subscribes to the release channel. */
    expect_acquire(DLOCK_EBUSY, other, "lock:acl", 30000, &opts);
    assert_int_equal(dlock_lock_release(lock), 0);
    /* Renewal: extends on the renewal thread's own connection. */
    opts.wait_ms = 0;
    opts.auto_renew = 1;
    lock = take(c, "lock:acl-renew", 300, &opts);
    usleep(700 * 1000);
    assert_true(dlock_lock_held(lock));
    assert_int_equal(dlock_lock_release(lock), 0);
    /* With a name in a hash tag of the pattern: {lock:...} keys. */
    take_and_release(c, "{lock:user7}:job", 30000, NULL);
    use_a_semaphore(c, other);
    use_shared_holds_and_the_audit(c, other);
    /* Nothing was denied along the way (SUBSCRIBE, CLUSTER KEYSLOT...). */
    log = kept_reply(run(connect_to(&server), "ACL LOG"));
    for (size_t i = 0; i < log->elements; i++)
        for (size_t j = 0; j + 1 < log->element[i]->elements; j += 2)
            if (strcmp(log->element[i]->element[j]->str, "username") == 0)
                assert_string_not_equal(log->element[i]->element[j + 1]->str, "locker");
}

static void test_acl_missing_command_is_a_permission_error(void **state)
{
    dlock_client *c = as_user("noset", "noset-pw");
    (void)state;
    expect_acquire(DLOCK_EAUTH, c, "lock:acl2", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(c), "can't"));
}

static void test_acl_without_evalsha(void **state)
{
    dlock_client *c = as_user("noevalsha", "noevalsha-pw");
    (void)state;
    expect_acquire(DLOCK_EAUTH, c, "lock:acl4", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(c), "evalsha"));
    assert_null(strstr(dlock_client_errmsg(c), "noevalsha-pw"));
}

static void test_acl_missing_key_pattern_is_a_permission_error(void **state)
{
    dlock_client *c = as_user("otherkeys", "otherkeys-pw");
    cli_proc p;
    char url[128];
    (void)state;
    expect_acquire(DLOCK_EAUTH, c, "lock:acl3", 30000, NULL);
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
    test_redis *bare = start_server(args);
    dlock_client *c;
    char url[128];
    (void)state;
    snprintf(url, sizeof(url), "redis://:Sekr1t-Pass@127.0.0.1:%d", bare->port);
    c = client_on(url);
    expect_acquire(DLOCK_EAUTH, c, "lock:scrub", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(c), "unknown command"));
    if (strstr(dlock_client_errmsg(c), "Sekr1t"))
        fail_msg("the password is in the message: %s", dlock_client_errmsg(c));
}

static dlock_client *as_durable_user(const char *user, const char *password, int replicas,
                                    int64_t restart_delay_ms)
{
    char url[128];
    snprintf(url, sizeof(url), "redis://%s:%s@127.0.0.1:%d", user, password, server.port);
    return durable_client(url, replicas, restart_delay_ms);
}

/* --replicas needs +wait: with it a server without replicas is too few
 * replicas, not a permission error; without it, it is one. */
static void test_acl_replicas_need_wait(void **state)
{
    dlock_client *c = as_durable_user("locker", "locker-pw", 1, 0);
    dlock_client *denied = as_durable_user("nowait", "nowait-pw", 1, 0);
    (void)state;
    expect_acquire(DLOCK_ENOREPLICAS, c, "lock:acl-wait", 30000, NULL);
    expect_acquire(DLOCK_EAUTH, denied, "lock:acl-wait", 30000, NULL);
}

/* The restart rule with the documented rule, INFO left out: the marker
 * alone works (it names no server), and the delay starts when it is
 * written. */
static void test_acl_restart_rule_without_info(void **state)
{
    dlock_client *c = as_durable_user("locker", "locker-pw", 0, 60000);
    redisContext *admin = connect_to(&server);
    int64_t left = 0;
    char *marker;
    (void)state;
    freeReplyObject(run(admin, "DEL dlock:restart-marker"));
    expect_acquire(DLOCK_EBUSY, c, "lock:acl-restart", 30000, NULL);
    marker = string_at(admin, "dlock:restart-marker");
    assert_non_null(marker);
    assert_memory_equal(marker, "- - ", 4);
    assert_int_equal(dlock_restart_remaining(&left, c, 0), 0);
    assert_true(left > 0 && left <= 60000);
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
    kept_report(report);
    for (size_t i = 0; i < dlock_report_count(report); i++)
        if (strcmp(dlock_report_finding(report, i)->id, "NOT_CHECKED") == 0)
            missed = dlock_report_finding(report, i)->evidence;
    assert_non_null(strstr(missed, "one server is checked by address only"));
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
    reply = kept_reply(redisCommandArgv(admin, argc, argv, NULL));
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
}

/* The finding `id` in the doctor's report of `user` on lock:acl-dr (both
 * kept), or NULL. */
static const dlock_finding *doctor_finding(const char *user, const char *password,
                                           const char *id)
{
    dlock_client *c = as_user(user, password);
    dlock_report *report = NULL;
    const dlock_finding *f = NULL;
    assert_int_equal(dlock_doctor(&report, c, "lock:acl-dr", 0), 0);
    kept_report(report);
    for (size_t i = 0; i < dlock_report_count(report); i++)
        if (strcmp(dlock_report_finding(report, i)->id, id) == 0)
            f = dlock_report_finding(report, i);
    return f;
}

/* The finding `id` of `user`, which must be there with `severity`. */
static const dlock_finding *must_find(const char *user, const char *id, dlock_severity severity)
{
    char password[64];
    const dlock_finding *f;
    snprintf(password, sizeof(password), "%s-pw", user);
    f = doctor_finding(user, password, id);
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
    redisContext *admin = connect_to(&server);
    const dlock_finding *f;
    cli_proc p;
    (void)state;
    set_user(admin, "noeval", (const char *const[]){"-eval", NULL});
    set_user(admin, "nokinds", (const char *const[]){"-zadd", "-zcount", "-hset", NULL});
    /* the cache holds the scripts */
    take_and_release(client_on(server.url), "lock:acl-warm", 30000, NULL);
    f = must_find("noeval", "ACL_MISSING", DLOCK_SEVERITY_ERROR);
    assert_non_null(strstr(f->evidence, "EVAL return 1"));
    assert_null(strstr(f->evidence, "EVALSHA"));
    snprintf(url, sizeof(url), "redis://noeval:noeval-pw@127.0.0.1:%d", server.port);
    assert_int_equal(cli_run(&p, url, args, 10000), 78);
    /* what it foretold: with the cache empty, every acquire fails */
    freeReplyObject(run(admin, "SCRIPT FLUSH"));
    expect_acquire(DLOCK_EAUTH, as_user("noeval", "noeval-pw"), "lock:acl-cold", 30000, NULL);
    /* the documented rule: nothing about the user's rights */
    for (size_t i = 0; i < 3; i++) {
        static const char *const ids[] = {"ACL_MISSING", "ACL_KINDS", "ACL_OPTIONAL"};
        assert_null(doctor_finding("locker", "locker-pw", ids[i]));
    }
    f = must_find("nokinds", "ACL_KINDS", DLOCK_SEVERITY_WARNING);
    assert_non_null(strstr(f->evidence, "ZADD"));
    assert_non_null(strstr(f->evidence, "ZCOUNT"));
    assert_non_null(strstr(f->evidence, "HSET"));
    assert_null(strstr(f->evidence, "ZREM "));
}

/* An audited client needs XADD: doctor asks for it when the client has
 * the audit on, and says so as a missing command; a user with the rule
 * but without XADD finds every audited grant refused. */
static void test_acl_doctor_asks_an_audited_client_for_xadd(void **state)
{
    dlock_client *c;
    dlock_report *report = NULL;
    const char *missing = NULL;
    (void)state;
    set_user(connect_to(&server), "noxadd", (const char *const[]){"-xadd", NULL});
    assert_null(doctor_finding("noxadd", "noxadd-pw", "ACL_MISSING")); /* no audit, no need */
    c = audited_user("noxadd", "noxadd-pw");
    assert_int_equal(dlock_doctor(&report, c, "lock:acl-dr", 0), 0);
    kept_report(report);
    for (size_t i = 0; i < dlock_report_count(report); i++)
        if (strcmp(dlock_report_finding(report, i)->id, "ACL_MISSING") == 0)
            missing = dlock_report_finding(report, i)->evidence;
    if (!missing) { /* cmocka's asserts return, as far as the analyser knows */
        fail_msg("no ACL_MISSING for an audited client without XADD");
        return;
    }
    assert_non_null(strstr(missing, "XADD"));
    /* The script the ACL stopped at XADD had set the key: the attempt's
     * cleanup takes it back. */
    expect_acquire(DLOCK_EAUTH, c, "lock:acl-noxadd", 30000, NULL);
    assert_false(key_exists(connect_to(&server), "lock:acl-noxadd"));
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_acl_password_never_in_messages),
        T(test_acl_exact_rule_is_enough),
        T(test_acl_missing_command_is_a_permission_error),
        T(test_acl_missing_key_pattern_is_a_permission_error),
        T(test_acl_without_evalsha),
        T(test_acl_replicas_need_wait),
        T(test_acl_restart_rule_without_info),
        T(test_acl_doctor_without_info_says_what_it_missed),
        T(test_acl_doctor_finds_eval_missing_whatever_the_cache),
        T(test_acl_doctor_asks_an_audited_client_for_xadd),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
