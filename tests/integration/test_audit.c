/* The audit: what the scripts write to a name's stream with the audit on
 * (and that nothing changes with it off), and what dlock audit finds in it:
 * a clean sequence, a paused holder, streams written by hand with two
 * holders at once or a fence that went back, several servers, its JSON
 * and its SVG read by real parsers. */
#include "cli_runner.h"
#include "helpers.h"
#include "python_run.h"

#include <inttypes.h>
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

/* A time for hand-written entries, in server µs. */
#define T0 1700000000000000LL
#define TOKEN_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TOKEN_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static dlock_client *open_audited(const char *const *urls, size_t n)
{
    dlock_client_options o = client_options(urls, n);
    o.audit = 1;
    return client_with(&o);
}

/* What audit_check.py says of `dlock audit --json NAME` (which must exit
 * `status`), kept. */
static char *audit_json(const char *name, int status)
{
    char path[512], *out;
    cli_proc p;
    FILE *f;
    assert_int_equal(DLOCK(&p, 20000, "audit", "--json", name), status);
    scratch(path, sizeof(path), "audit.json");
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(p.out, f);
    assert_int_equal(fclose(f), 0);
    if (python_run(AUDIT_CHECK_SCRIPT, (const char *const[]){"json", path, NULL}, &out) != 0)
        fail_msg("the JSON of dlock audit does not parse: %s", p.out);
    return kept_string(out);
}

/* audit_check.py's lines for NAME must be `want`. */
static void assert_audit(const char *name, int status, const char *want)
{
    assert_string_equal(audit_json(name, status), want);
}

static void xadd(redisContext *redis, const char *name, const char *event, const char *token,
                 const char *fence, long long time_us, const char *ttl, const char *reason)
{
    char time[24];
    snprintf(time, sizeof(time), "%lld", time_us);
    redisReply *r = kept_reply(redisCommand(redis,
                                            "XADD %s * event %s token %s fence %s host h pid 7 "
                                            "time %s ttl %s reason %s held %s left %s",
                                            aux_key(name, "audit"), event, token, fence, time,
                                            ttl, reason, "", ""));
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
}

static long long stream_length(redisContext *redis, const char *name)
{
    return kept_reply(run(redis, "XLEN %s", aux_key(name, "audit")))->integer;
}

/* How many entries of the name's stream have `event`. */
static int count_events(redisContext *redis, const char *name, const char *event)
{
    redisReply *r = kept_reply(run(redis, "XRANGE %s - +", aux_key(name, "audit")));
    int n = 0;
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *fields = r->element[i]->element[1];
        n += fields->elements >= 2 && strcmp(fields->element[1]->str, event) == 0;
    }
    return n;
}

/* The value of `field` in entry `i` of the name's stream. */
static const char *entry_field(redisContext *redis, const char *name, size_t i,
                               const char *field)
{
    redisReply *r = kept_reply(run(redis, "XRANGE %s - +", aux_key(name, "audit")));
    redisReply *fields;
    assert_true(r->elements > i);
    fields = r->element[i]->element[1];
    for (size_t j = 0; j + 1 < fields->elements; j += 2)
        if (strcmp(fields->element[j]->str, field) == 0)
            return fields->element[j + 1]->str;
    fail_msg("entry %zu of %s has no %s", i, name, field);
    return NULL;
}

static void assert_field(redisContext *redis, const char *name, size_t i, const char *field,
                         const char *want)
{
    assert_string_equal(entry_field(redis, name, i, field), want);
}

static void test_audit_records_each_grant_extend_and_release(void **state)
{
    redisContext *redis = *state;
    const char *urls[] = {server.url};
    dlock_client *c = open_audited(urls, 1);
    dlock_lock *lock = take(c, "audit:clean", 5000, NULL);
    char fence[24];

    snprintf(fence, sizeof(fence), "%" PRIu64, dlock_lock_fence(lock));
    assert_int_equal(dlock_lock_extend(lock, 8000), 0);
    assert_int_equal(dlock_lock_release(lock), 0);
    take_and_release(c, "audit:clean", 5000, NULL);

    assert_int_equal(stream_length(redis, "audit:clean"), 5);
    /* It lives as long as the fence key (a day by default). */
    assert_true(pttl_of(redis, aux_key("audit:clean", "audit")) > 86000000);
    assert_field(redis, "audit:clean", 0, "event", "grant");
    assert_field(redis, "audit:clean", 0, "fence", fence);
    assert_field(redis, "audit:clean", 0, "ttl", "5000");
    assert_field(redis, "audit:clean", 1, "event", "extend");
    assert_field(redis, "audit:clean", 1, "ttl", "8000");
    assert_field(redis, "audit:clean", 2, "event", "release");
    assert_field(redis, "audit:clean", 2, "reason", "release");
    assert_int_equal(strtol(entry_field(redis, "audit:clean", 0, "pid"), NULL, 10),
                     (long)getpid());
    assert_true(strtoll(entry_field(redis, "audit:clean", 0, "time"), NULL, 10) > T0);
    assert_audit("audit:clean", 0, "holds 2\n");
}

/* The words of a MONITOR line: "TIME [DB ADDR] "WORD" "WORD" ...". */
static int words_of(const char *line)
{
    int n = 0;
    for (const char *p = strstr(line, "] \""); p; p = strstr(p + 1, "\" \""))
        n++;
    return n;
}

/* Without the audit, the scripts get the words they always got: no
 * trailer, no stream; with it, the trailer comes after them. */
static void test_audit_off_changes_nothing_on_the_wire(void **state)
{
    redisContext *redis = *state, *monitor = connect_to(&server);
    redisReply *r;
    const char *urls[] = {server.url};
    dlock_client *plain = client_on(server.url), *audited = open_audited(urls, 1);
    int saw_plain = 0, saw_audited = 0, words[2][4] = {{0}};

    freeReplyObject(run(monitor, "MONITOR"));
    take_and_release(plain, "audit:wire", 5000, NULL);
    assert_false(key_exists(redis, aux_key("audit:wire", "audit")));
    take_and_release(audited, "audit:wire", 5000, NULL);

    /* Four scripts: the plain acquire and release, then the audited ones,
     * each with the stream and the 9 words of the trailer more. */
    while (saw_plain + saw_audited < 4 && redisGetReply(monitor, (void **)&r) == REDIS_OK) {
        kept_reply(r);
        if (strstr(r->str, "\"EVALSHA\"")) {
            int audit = strstr(r->str, "\"dlock:audit\"") != NULL;
            words[audit][audit ? saw_audited++ : saw_plain++] = words_of(r->str);
            assert_true(audit || strstr(r->str, ":dlock:audit:") == NULL);
        }
        cleanup_now(r);
    }
    assert_int_equal(words[1][0], words[0][0] + 10);
    assert_int_equal(words[1][1], words[0][1] + 10);
    assert_int_equal(saw_plain, 2);
    assert_int_equal(saw_audited, 2);

    /* The plain client's hold is not in the stream: one grant, one release. */
    assert_int_equal(stream_length(redis, "audit:wire"), 2);
}

/* A holder stopped past its TTL while another takes the lock, then
 * resumed: its end comes after its validity. */
static void test_audit_finds_a_paused_holder(void **state)
{
    redisContext *redis = *state;
    char started[512], script[600];
    cli_proc *holder, other;
    char *out;

    /* Stopped only once its command runs: stopped before its grant came
     * back, it would find the grant too old, drop it and wait anew. */
    scratch(started, sizeof(started), "audit-paused-started");
    snprintf(script, sizeof(script), "echo $DLOCK_FENCE > %s; exec sleep 60", started);
    holder = start_cli(server.url,
                       (const char *const[]){"--audit", "run", "-t", "1s", "audit:paused", "--",
                                             "sh", "-c", script, NULL},
                       NULL);
    assert_true(wait_for_number(started) > 0);
    assert_int_equal(kill(holder->pid, SIGSTOP), 0);
    usleep(1500 * 1000);
    assert_int_equal(DLOCK(&other, 20000, "--audit", "run", "-n", "audit:paused", "--", "true"), 0);
    assert_int_equal(kill(holder->pid, SIGCONT), 0);
    if (cli_wait(holder, 20000) != 70) /* lost while the command ran */
        fail_msg("holder: %d, %s", holder->status, holder->err);

    /* The renewal thread's cleanup recorded the loss it found. */
    assert_int_equal(count_events(redis, "audit:paused", "loss"), 1);
    out = audit_json("audit:paused", 1);
    assert_non_null(strstr(out, "holds 2\n"));
    assert_non_null(strstr(out, "past-validity 0 0 "));
    assert_null(strstr(out, "overlap"));
    assert_int_equal(DLOCK(&other, 20000, "audit", "audit:paused"), 1);
    assert_non_null(strstr(other.out, "past-validity"));
    assert_non_null(strstr(other.out, "after its validity"));
}

/* A mutex held by `dlock acquire` loses its key early (a failover without
 * it); a shared holder takes the name meanwhile; `dlock release NAME TOKEN`
 * then finds the key gone, once as a mutex and once as a shared holder
 * (two ends). The hold stays exclusive: the shared holder overlaps it, and
 * the release, before the validity's end, is no past-validity. */
static void test_audit_an_adopted_release_of_a_lost_mutex(void **state)
{
    redisContext *redis = *state;
    char token[DLOCK_TOKEN_LEN + 1];
    cli_proc p;
    char *out;
    assert_int_equal(DLOCK(&p, 20000, "-q", "--audit", "acquire", "-t", "5s", "audit:lost"), 0);
    assert_int_equal(sscanf(p.out, "%32s", token), 1);
    kept_reply(run(redis, "DEL audit:lost"));
    assert_int_equal(DLOCK(&p, 20000, "--audit", "run", "-s", "-t", "1s", "audit:lost", "--",
                           "true"), 0);
    usleep(300 * 1000); /* well past the drift allowance of A's TTL (5 s: 52 ms) */
    assert_int_equal(DLOCK(&p, 20000, "--audit", "release", "audit:lost", token), 1);
    assert_int_equal(count_events(redis, "audit:lost", "release"), 3);
    out = audit_json("audit:lost", 1);
    assert_non_null(strstr(out, "holds 2\noverlap 0 1 "));
    assert_null(strstr(out, "past-validity"));
}

static void test_audit_finds_two_holders_at_once(void **state)
{
    redisContext *redis = *state;
    xadd(redis, "audit:two", "grant", TOKEN_A, "100", T0, "10000", "");
    xadd(redis, "audit:two", "grant", TOKEN_B, "101", T0 + 1000000, "10000", "");
    xadd(redis, "audit:two", "release", TOKEN_A, "100", T0 + 4000000, "", "release");
    /* B's grant came 3 s before A's release. */
    assert_audit("audit:two", 1, "holds 2\noverlap 0 1 3000000\n");
}

/* A stream longer than what is read (DLOCK_AUDIT_READ_MAX) loses its
 * oldest entries, not the newest: two holders at once after 100,100
 * entries of holds apart are found. */
static void test_audit_reads_the_newest_of_a_long_stream(void **state)
{
    static const char pad[] =
        "for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], '*', 'event', 'grant', "
        "'token', string.format('%032x', i), 'fence', tostring(i), 'host', 'h', 'pid', '7', "
        "'time', string.format('%d', ARGV[2] + i * 10000), 'ttl', '1', 'reason', '', 'held', '', "
        "'left', '') end return 1";
    redisContext *redis = *state;
    cli_proc p;
    freeReplyObject(run(redis, "EVAL %s 1 %s 100100 %lld", pad, aux_key("audit:long", "audit"),
                        T0));
    xadd(redis, "audit:long", "grant", TOKEN_A, "200000", T0 + 2000000000LL, "10000", "");
    xadd(redis, "audit:long", "grant", TOKEN_B, "200001", T0 + 2001000000LL, "10000", "");
    assert_int_equal(DLOCK(&p, 60000, "audit", "audit:long"), 1);
    if (!strstr(p.out, "overlap") && !strstr(p.err, "overlap"))
        fail_msg("no overlap found: %s%s", p.out, p.err);
}

/* Within the drift allowance (TTL x 1 % + 2 ms), a grant right at the end
 * of the last validity is no overlap. */
static void test_audit_allows_the_drift(void **state)
{
    redisContext *redis = *state;
    xadd(redis, "audit:drift", "grant", TOKEN_A, "100", T0, "10000", "");
    xadd(redis, "audit:drift", "grant", TOKEN_B, "101", T0 + 10000000 - 100000, "10000", "");
    assert_audit("audit:drift", 0, "holds 2\n");
    xadd(redis, "audit:drift2", "grant", TOKEN_A, "100", T0, "10000", "");
    xadd(redis, "audit:drift2", "grant", TOKEN_B, "101", T0 + 10000000 - 103000, "10000", "");
    assert_audit("audit:drift2", 1, "holds 2\noverlap 0 1 103000\n");
}

static void test_audit_finds_a_fence_that_went_back(void **state)
{
    redisContext *redis = *state;
    xadd(redis, "audit:fence", "grant", TOKEN_A, "500", T0, "1000", "");
    xadd(redis, "audit:fence", "release", TOKEN_A, "500", T0 + 200000, "", "release");
    xadd(redis, "audit:fence", "grant", TOKEN_B, "300", T0 + 2000000, "1000", "");
    assert_audit("audit:fence", 1, "holds 2\nfence-back 0 1 200\n");
}

/* A cleaned-up attempt is no hold; an entry that is not ours is left out. */
static void test_audit_skips_attempts_and_foreign_entries(void **state)
{
    redisContext *redis = *state;
    xadd(redis, "audit:skip", "grant", TOKEN_A, "100", T0, "10000", "");
    xadd(redis, "audit:skip", "release", TOKEN_A, "100", T0 + 100, "", "cleanup");
    xadd(redis, "audit:skip", "grant", TOKEN_B, "101", T0 + 1000, "10000", "");
    freeReplyObject(run(redis, "XADD %s * note hello", aux_key("audit:skip", "audit")));
    assert_audit("audit:skip", 0, "holds 1\n");
}

/* A token granted again after its key expired (a fair lock handed to a
 * waiter that did not take it, then taken by the waiter itself) holds from
 * the second grant: no overlap with the hold between. */
static void test_audit_a_grant_after_expiry_begins_anew(void **state)
{
    redisContext *redis = *state;
    xadd(redis, "audit:anew", "grant", TOKEN_A, "100", T0, "1000", "");
    xadd(redis, "audit:anew", "grant", TOKEN_B, "200", T0 + 1500000, "1000", "");
    xadd(redis, "audit:anew", "release", TOKEN_B, "200", T0 + 1800000, "", "release");
    xadd(redis, "audit:anew", "grant", TOKEN_A, "300", T0 + 3000000, "1000", "");
    xadd(redis, "audit:anew", "release", TOKEN_A, "300", T0 + 3500000, "", "release");
    assert_audit("audit:anew", 0, "holds 2\n");
}

/* Three servers: each keeps its own stream; a hold that a majority
 * recorded is clean, one whose record only one server kept is not. */
static void test_audit_reads_every_server_of_a_redlock(void **state)
{
    test_redis *more = start_servers(2);
    const char *urls[3] = {server.url, more[0].url, more[1].url};
    dlock_client *c = open_audited(urls, 3);
    redisContext *other = connect_to(&more[0]);
    dlock_audit *audit = NULL;
    const dlock_audit_finding *f;
    const dlock_audit_hold *h;

    take_and_release(c, "audit:redlock", 5000, NULL);
    assert_int_equal(stream_length(other, "audit:redlock"), 2);
    assert_int_equal(dlock_audit_read(&audit, c, "audit:redlock", 0), 0);
    kept_audit(audit);
    assert_int_equal(dlock_audit_holds(audit, &h), 1);
    assert_int_equal(h[0].servers, 3);
    assert_int_equal(dlock_audit_findings(audit, &f), 0);
    assert_int_equal(dlock_audit_entries(audit), 6);

    /* Two servers lost the record (a restart without persistence). */
    freeReplyObject(run(*state, "DEL %s", aux_key("audit:redlock", "audit")));
    freeReplyObject(run(other, "DEL %s", aux_key("audit:redlock", "audit")));
    assert_int_equal(dlock_audit_read(&audit, c, "audit:redlock", 0), 0);
    kept_audit(audit);
    assert_int_equal(dlock_audit_findings(audit, &f), 1);
    assert_int_equal(f[0].kind, DLOCK_AUDIT_NO_MAJORITY);
}

static void test_audit_draws_a_timeline(void **state)
{
    redisContext *redis = *state;
    char path[512], *out;
    cli_proc p;
    xadd(redis, "audit:svg<&>", "grant", TOKEN_A, "100", T0, "10000", "");
    xadd(redis, "audit:svg<&>", "grant", TOKEN_B, "101", T0 + 1000000, "10000", "");
    xadd(redis, "audit:svg<&>", "release", TOKEN_B, "101", T0 + 12000000, "", "expired");
    scratch(path, sizeof(path), "timeline.svg");
    assert_int_equal(DLOCK(&p, 20000, "audit", "--svg", path, "audit:svg<&>"), 1);
    if (python_run(AUDIT_CHECK_SCRIPT, (const char *const[]){"svg", path, NULL}, &out) != 0)
        fail_msg("the SVG does not parse");
    kept_string(out);
    assert_non_null(strstr(out, "svg\n"));
    assert_non_null(strstr(out, "text dlock audit: audit:svg<&> (2 holds, 2 findings"));
    assert_non_null(strstr(out, "text h:7 aaaaaaaa\n"));
    assert_non_null(strstr(out, "text h:7 bbbbbbbb\n"));
    assert_non_null(strstr(out, "text overlapping another holder\n"));
    /* A file that cannot be written: said; the findings keep their 1, and
     * without findings it is a usage error. */
    assert_int_equal(DLOCK(&p, 20000, "audit", "--svg", "/nonexistent/x.svg", "audit:svg<&>"),
                     1);
    assert_non_null(strstr(p.err, "/nonexistent/x.svg"));
    assert_int_equal(DLOCK(&p, 20000, "audit", "--svg", "/nonexistent/x.svg", "audit:none"), 64);
    assert_non_null(strstr(p.err, "/nonexistent/x.svg"));
}

static void test_audit_needs_every_server(void **state)
{
    cli_proc p;
    (void)state;
    assert_int_equal(cli_run(&p, "redis://127.0.0.1:1", (const char *const[]){"audit", "x", NULL},
                             20000),
                     69);
    assert_int_equal(DLOCK(&p, 20000, "audit"), 64);
    assert_int_equal(DLOCK(&p, 20000, "audit", "--since", "soon", "x"), 64);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
#define U(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_audit_records_each_grant_extend_and_release),
        T(test_audit_off_changes_nothing_on_the_wire),
        T(test_audit_finds_a_paused_holder),
        T(test_audit_an_adopted_release_of_a_lost_mutex),
        T(test_audit_finds_two_holders_at_once),
        T(test_audit_reads_the_newest_of_a_long_stream),
        T(test_audit_allows_the_drift),
        T(test_audit_finds_a_fence_that_went_back),
        T(test_audit_skips_attempts_and_foreign_entries),
        T(test_audit_a_grant_after_expiry_begins_anew),
        T(test_audit_reads_every_server_of_a_redlock),
        T(test_audit_draws_a_timeline),
        U(test_audit_needs_every_server),
    };
#undef T
#undef U
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
