/* The audit's judge on several servers when some lost their streams (a
 * restart without persistence): no overlap is judged by the start of a
 * hold whose grant fewer than a majority kept (it is unknown: a no-majority
 * finding); a second holder on a majority is still found. On one server:
 * the ends an adopted handle's release writes (one per kind it tries) do
 * not make an exclusive hold a shared one, and a release that found the
 * key gone is past its validity unless it came before it (but a permit's
 * is, then too). */
#include "audit_judge.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define T0 1700000000000000LL
#define MS 1000LL
#define TOKEN_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TOKEN_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

struct stream {
    dlock__audit_entry e[16];
    size_t n;
};

/* An entry of `server`'s stream at T0 + at_ms. held_ms, ttl_ms: -1 when
 * the entry has none. */
static void entry(struct stream *s, size_t server, const char *event, const char *token,
                  int64_t at_ms, int64_t ttl_ms, const char *reason, int64_t held_ms)
{
    dlock__audit_entry *e = &s->e[s->n++];
    memset(e, 0, sizeof(*e));
    e->server = server;
    snprintf(e->event, sizeof(e->event), "%s", event);
    snprintf(e->token, sizeof(e->token), "%s", token);
    snprintf(e->reason, sizeof(e->reason), "%s", reason);
    e->fence = strcmp(token, TOKEN_A) == 0 ? 100 : 200;
    e->time_us = T0 + at_ms * MS;
    e->ttl_ms = ttl_ms;
    e->held_ms = held_ms;
    e->left_ms = -1;
}

/* The kind the last entry names (the scripts write one in each). */
static void kind(struct stream *s, const char *k)
{
    snprintf(s->e[s->n - 1].kind, sizeof(s->e[s->n - 1].kind), "%s", k);
}

static size_t count(const dlock__audit_verdict *v, dlock_audit_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < v->n_findings; i++)
        n += v->findings[i].kind == kind;
    return n;
}

/* The amount of the one overlap found. */
static int64_t overlap_amount(const dlock__audit_verdict *v)
{
    for (size_t i = 0; i < v->n_findings; i++)
        if (v->findings[i].kind == DLOCK_AUDIT_OVERLAP)
            return v->findings[i].amount_us;
    fail_msg("no overlap found");
    return 0;
}

static void judge(dlock__audit_verdict *v, const struct stream *s)
{
    assert_int_equal(dlock__audit_judge(v, s->e, s->n, 3), 0);
    assert_int_equal(v->n_holds, 2);
}

/* A's grant survived nowhere, its end on server 0 says it held 32 ms. B
 * was granted on server 0 (where A's key was not) 5 ms before A's end
 * there, and on the others, whose streams were lost, after A had let go.
 * B's release counts its hold from its attempt. No overlap; B had no
 * majority on record; its start is what its client says. */
static void test_a_minority_hold_is_no_majority_not_an_overlap(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "release", TOKEN_A, 32, -1, "expired", 32);
    entry(&s, 0, "grant", TOKEN_B, 27, 2000, "", -1);
    entry(&s, 0, "release", TOKEN_B, 46, -1, "release", 13);
    judge(&v, &s);
    assert_int_equal(count(&v, DLOCK_AUDIT_OVERLAP), 0);
    assert_int_equal(count(&v, DLOCK_AUDIT_NO_MAJORITY), 2);
    assert_int_equal(v.holds[1].start_us, T0 + 33 * MS);
    dlock__audit_verdict_clear(&v);
}

/* The same without B's end (still held, renewed on server 0 only): its
 * start is unknown, so no overlap is claimed; it is no-majority. */
static void test_a_minority_hold_without_its_clients_word_is_not_judged(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "release", TOKEN_A, 32, -1, "expired", 32);
    entry(&s, 0, "grant", TOKEN_B, 27, 2000, "", -1);
    entry(&s, 0, "extend", TOKEN_B, 700, 2000, "", -1);
    judge(&v, &s);
    assert_int_equal(count(&v, DLOCK_AUDIT_OVERLAP), 0);
    assert_int_equal(count(&v, DLOCK_AUDIT_NO_MAJORITY), 2);
    dlock__audit_verdict_clear(&v);
}

/* A real second holder: server 1 restarted empty under A (A's grant there
 * lost) and granted B with server 2 while A held on. B's majority record
 * says it began 400 ms before A's release. */
static void test_a_second_holder_on_a_majority_is_found(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "grant", TOKEN_A, 0, 2000, "", -1);
    entry(&s, 1, "grant", TOKEN_B, 100, 2000, "", -1);
    entry(&s, 2, "grant", TOKEN_B, 100, 2000, "", -1);
    entry(&s, 0, "release", TOKEN_A, 500, -1, "release", 500);
    judge(&v, &s);
    assert_int_equal(count(&v, DLOCK_AUDIT_OVERLAP), 1);
    assert_int_equal(overlap_amount(&v), 400 * MS);
    dlock__audit_verdict_clear(&v);
}

/* Even a client's word that its attempt began while the other held is no
 * overlap: the attempt may have waited for that holder's release. */
static void test_a_minority_hold_whose_attempt_began_early_is_no_overlap(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "grant", TOKEN_A, 0, 2000, "", -1);
    entry(&s, 1, "grant", TOKEN_A, 0, 2000, "", -1);
    entry(&s, 0, "release", TOKEN_A, 500, -1, "release", 500);
    entry(&s, 2, "grant", TOKEN_B, 100, 2000, "", -1);
    entry(&s, 2, "release", TOKEN_B, 900, -1, "release", 800);
    judge(&v, &s);
    assert_int_equal(count(&v, DLOCK_AUDIT_OVERLAP), 0);
    assert_int_equal(count(&v, DLOCK_AUDIT_NO_MAJORITY), 1);
    assert_int_equal(v.holds[1].start_us, T0 + 100 * MS);
    dlock__audit_verdict_clear(&v);
}

/* A mutex A whose key went early (a failover); a shared holder B got the
 * name while A was valid; then `dlock release NAME TOKEN` of A found its key
 * gone, as a mutex and then as a shared holder: two ends, kinds grant and
 * shared. A stays exclusive: the overlap is found, and no past-validity
 * (A's release came before its validity ended). */
static void test_an_adopted_release_keeps_an_exclusive_hold_exclusive(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "grant", TOKEN_A, 0, 3000, "", -1);
    kind(&s, "grant");
    entry(&s, 0, "shared", TOKEN_B, 300, 1000, "", -1);
    kind(&s, "shared");
    entry(&s, 0, "release", TOKEN_B, 500, -1, "release", 200);
    kind(&s, "shared");
    entry(&s, 0, "release", TOKEN_A, 800, -1, "expired", -1);
    kind(&s, "grant");
    entry(&s, 0, "release", TOKEN_A, 801, -1, "expired", -1);
    kind(&s, "shared");
    assert_int_equal(dlock__audit_judge(&v, s.e, s.n, 1), 0);
    assert_int_equal(v.n_holds, 2);
    assert_true(v.holds[0].exclusive);
    assert_false(v.holds[1].exclusive);
    assert_int_equal(count(&v, DLOCK_AUDIT_OVERLAP), 1);
    assert_int_equal(overlap_amount(&v), 500 * MS);
    assert_int_equal(count(&v, DLOCK_AUDIT_PAST_VALIDITY), 0);
    dlock__audit_verdict_clear(&v);
}

/* Only ends were read (--since: the grants are older). A shared holder's
 * adopted release: the mutex's try found it not ours, the shared one
 * released it; the end of ours says the kind. An exclusive holder's
 * release that found the key gone, with no validity known: past its
 * validity by an unknown amount. */
static void test_ends_alone_say_the_kind_and_a_late_release(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "release", TOKEN_A, 100, -1, "expired", -1);
    kind(&s, "grant");
    entry(&s, 0, "release", TOKEN_A, 101, -1, "release", -1);
    kind(&s, "shared");
    entry(&s, 0, "release", TOKEN_B, 900, -1, "expired", -1);
    kind(&s, "grant");
    assert_int_equal(dlock__audit_judge(&v, s.e, s.n, 1), 0);
    assert_int_equal(v.n_holds, 2);
    assert_false(v.holds[0].exclusive);
    assert_true(v.holds[1].exclusive);
    assert_int_equal(count(&v, DLOCK_AUDIT_PAST_VALIDITY), 1);
    assert_int_equal(v.findings[0].a, 1);
    assert_int_equal(v.findings[0].amount_us, 0);
    dlock__audit_verdict_clear(&v);
}

/* A release that found the key gone after the validity ended is past it
 * by that much. */
static void test_a_release_after_the_key_expired_is_past_validity(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "grant", TOKEN_A, 0, 300, "", -1);
    kind(&s, "grant");
    entry(&s, 0, "release", TOKEN_A, 2500, -1, "expired", -1);
    kind(&s, "grant");
    assert_int_equal(dlock__audit_judge(&v, s.e, s.n, 1), 0);
    assert_int_equal(v.n_holds, 1);
    assert_int_equal(count(&v, DLOCK_AUDIT_PAST_VALIDITY), 1);
    assert_int_equal(v.findings[0].amount_us, 2200 * MS);
    dlock__audit_verdict_clear(&v);
}

/* Two permits: A's release found its key gone half a second into a
 * validity of 10 s (deleted: more holders than the limit could get in,
 * and no overlap is judged among permits), B's released it. A is past
 * its validity, by no amount; B is not. */
static void test_a_permit_gone_early_is_past_validity(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "grant", TOKEN_A, 0, 10000, "", -1);
    kind(&s, "permit");
    entry(&s, 0, "grant", TOKEN_B, 10, 10000, "", -1);
    kind(&s, "permit");
    entry(&s, 0, "release", TOKEN_A, 500, -1, "expired", -1);
    kind(&s, "permit");
    entry(&s, 0, "release", TOKEN_B, 600, -1, "release", -1);
    kind(&s, "permit");
    assert_int_equal(dlock__audit_judge(&v, s.e, s.n, 1), 0);
    assert_int_equal(v.n_holds, 2);
    assert_false(v.holds[0].exclusive);
    assert_int_equal(v.n_findings, 1);
    assert_int_equal(v.findings[0].kind, DLOCK_AUDIT_PAST_VALIDITY);
    assert_int_equal(v.findings[0].a, 0);
    assert_int_equal(v.findings[0].amount_us, 0);
    dlock__audit_verdict_clear(&v);
}

/* Only the window of --since was read: A's grant is older, its extends
 * (every second, TTL 3 s) are in it, and B was granted in between. A
 * held from its first extend, valid to its last + TTL: B overlaps it. On
 * three servers, A's extends on all of them are no minority. */
static void test_a_renewed_hold_whose_grant_is_older_is_judged(void **state)
{
    (void)state;
    for (size_t servers = 1; servers <= 3; servers += 2) {
        struct stream s = {0};
        dlock__audit_verdict v;
        for (size_t n = 0; n < servers; n++) {
            for (int64_t at = 0; at <= 2000; at += 1000) {
                entry(&s, n, "extend", TOKEN_A, at, 3000, "", -1);
                kind(&s, "grant");
            }
            entry(&s, n, "grant", TOKEN_B, 2100, 5000, "", -1);
            kind(&s, "grant");
        }
        assert_int_equal(dlock__audit_judge(&v, s.e, s.n, servers), 0);
        assert_int_equal(v.n_holds, 2);
        assert_int_equal(v.holds[0].start_us, T0);
        assert_int_equal(v.holds[0].valid_us, T0 + 5000 * MS);
        assert_int_equal(v.holds[0].servers, servers);
        assert_int_equal(v.n_findings, 1);
        assert_int_equal(overlap_amount(&v), 2900 * MS);
        dlock__audit_verdict_clear(&v);
    }
}

/* The window cut A's grant on two of three servers and kept it on the
 * third: the extends stand in for the grants cut, server by server, and
 * A is a majority's hold, no minority. */
static void test_extends_stand_in_for_grants_cut_server_by_server(void **state)
{
    struct stream s = {0};
    dlock__audit_verdict v;
    (void)state;
    entry(&s, 0, "grant", TOKEN_A, 10, 3000, "", -1);
    kind(&s, "grant");
    for (size_t n = 0; n < 3; n++) {
        entry(&s, n, "extend", TOKEN_A, 1000, 3000, "", -1);
        kind(&s, "grant");
    }
    assert_int_equal(dlock__audit_judge(&v, s.e, s.n, 3), 0);
    assert_int_equal(v.n_holds, 1);
    assert_int_equal(v.holds[0].servers, 3);
    assert_int_equal(v.n_findings, 0);
    dlock__audit_verdict_clear(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_minority_hold_is_no_majority_not_an_overlap),
        cmocka_unit_test(test_a_minority_hold_without_its_clients_word_is_not_judged),
        cmocka_unit_test(test_a_second_holder_on_a_majority_is_found),
        cmocka_unit_test(test_a_minority_hold_whose_attempt_began_early_is_no_overlap),
        cmocka_unit_test(test_an_adopted_release_keeps_an_exclusive_hold_exclusive),
        cmocka_unit_test(test_ends_alone_say_the_kind_and_a_late_release),
        cmocka_unit_test(test_a_release_after_the_key_expired_is_past_validity),
        cmocka_unit_test(test_a_permit_gone_early_is_past_validity),
        cmocka_unit_test(test_a_renewed_hold_whose_grant_is_older_is_judged),
        cmocka_unit_test(test_extends_stand_in_for_grants_cut_server_by_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
