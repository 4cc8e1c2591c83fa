/* The restart rule's arithmetic: what one server's uptime, identity, TIME
 * and marker make of its delay. */
#include "durable.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define DELAY 3000
#define NOW 1800000000000LL
#define RUN_ID "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define REPLID "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define OTHER "cccccccccccccccccccccccccccccccccccccccc"
#define MARKER(ms) RUN_ID " " REPLID " " #ms

static void test_restart_missing_marker_starts_the_delay(void **state)
{
    bool mark = false;
    (void)state;
    assert_int_equal(dlock__restart_remaining(DELAY, 3600, RUN_ID, REPLID, NOW, NULL, &mark),
                     DELAY);
    assert_true(mark);
}

static void test_restart_marker_counts_from_first_sight(void **state)
{
    bool mark = true;
    (void)state;
    /* First seen 1 s ago: 2 s left. */
    assert_int_equal(dlock__restart_remaining(DELAY, 3600, RUN_ID, REPLID, NOW,
                                              MARKER(1799999999000), &mark),
                     2000);
    assert_false(mark);
    assert_int_equal(dlock__restart_remaining(DELAY, 3600, RUN_ID, REPLID, NOW,
                                              MARKER(1799999997000), &mark),
                     0);
}

/* Another run_id (a restart, with persistence too) or replication id (a
 * promotion) is another server; an anonymous marker is one too for a
 * client that can read INFO. */
static void test_restart_other_identity_starts_again(void **state)
{
    bool mark = false;
    (void)state;
    assert_int_equal(dlock__restart_remaining(DELAY, 3600, OTHER, REPLID, NOW,
                                              MARKER(1700000000000), &mark),
                     DELAY);
    assert_true(mark);
    mark = false;
    assert_int_equal(dlock__restart_remaining(DELAY, 3600, RUN_ID, OTHER, NOW,
                                              MARKER(1700000000000), &mark),
                     DELAY);
    assert_true(mark);
    mark = false;
    assert_int_equal(dlock__restart_remaining(DELAY, 3600, RUN_ID, REPLID, NOW,
                                              "- - 1700000000000", &mark),
                     DELAY);
    assert_true(mark);
}

/* Without INFO only the marker works: any well-formed one is taken. */
static void test_restart_without_info_marker_only(void **state)
{
    bool mark = true;
    (void)state;
    assert_int_equal(dlock__restart_remaining(DELAY, -1, NULL, NULL, NOW, "- - 1700000000000",
                                              &mark),
                     0);
    assert_false(mark);
    assert_int_equal(dlock__restart_remaining(DELAY, -1, NULL, NULL, NOW, "garbage", &mark),
                     DELAY);
    assert_true(mark);
}

/* Uptime in whole seconds, rounded down: 1 s up leaves 2 s of 3. */
static void test_restart_young_uptime(void **state)
{
    bool mark = true;
    (void)state;
    assert_int_equal(dlock__restart_remaining(DELAY, 1, RUN_ID, REPLID, NOW,
                                              MARKER(1700000000000), &mark),
                     2000);
    assert_int_equal(dlock__restart_remaining(DELAY, 3, RUN_ID, REPLID, NOW,
                                              MARKER(1700000000000), &mark),
                     0);
}

/* A marker from the future (the server's clock went back) starts again. */
static void test_restart_clock_went_back(void **state)
{
    bool mark = false;
    (void)state;
    assert_int_equal(dlock__restart_remaining(DELAY, 3600, RUN_ID, REPLID, NOW,
                                              MARKER(1800000005000), &mark),
                     DELAY);
    assert_true(mark);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_missing_marker_starts_the_delay),
        cmocka_unit_test(test_restart_marker_counts_from_first_sight),
        cmocka_unit_test(test_restart_other_identity_starts_again),
        cmocka_unit_test(test_restart_without_info_marker_only),
        cmocka_unit_test(test_restart_young_uptime),
        cmocka_unit_test(test_restart_clock_went_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
