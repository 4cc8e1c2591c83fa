/* What a waiter makes of a message on its process's channel
 * (dlock__queue_message()): its own turn, a hand-over of the lock or of a
 * permit in one of its semaphore's slots, and everything that is not one. */
#include "kinds.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#define TOKEN "0123456789abcdef0123456789abcdef"

/* The message `msg` to a waiter of TOKEN with `permits` (0: a lock) and a
 * lease of 2 s; the hand-over read, if any, into *h. */
static enum dlock__wake told(const char *msg, unsigned permits, dlock__handover *h)
{
    struct dlock__kind_params params = {.permits = permits, .lease_ms = 2000};
    dlock__claim cl = {.params = &params};
    memcpy(cl.token, TOKEN, sizeof(TOKEN));
    memset(h, 0, sizeof(*h));
    return dlock__queue_message(&cl, msg, strlen(msg), h);
}

static void test_queue_message_turns(void **state)
{
    dlock__handover h;
    (void)state;
    assert_int_equal(told("next:" TOKEN, 0, &h), DLOCK__WAKE);
    assert_int_equal(told("next:ffff56789abcdef0123456789abcdef", 0, &h), DLOCK__WAKE_NOT);
    assert_int_equal(told("next:" TOKEN "x", 0, &h), DLOCK__WAKE_NOT);
    assert_int_equal(told("ffff56789abcdef0123456789abcdef", 0, &h), DLOCK__WAKE);
}

static void test_queue_message_hand_over_of_a_lock(void **state)
{
    dlock__handover h;
    (void)state;
    assert_int_equal(told("grant:" TOKEN ":42:1800000000000", 0, &h), DLOCK__WAKE_HANDED);
    assert_int_equal(h.fence, 42);
    assert_int_equal(h.lease_end_ms, 1800000000000LL);
    assert_int_equal(h.lease_ms, 2000);
    assert_int_equal(h.slot, 0);
    assert_int_equal(told("grant:ffff56789abcdef0123456789abcdef:42:1", 0, &h), DLOCK__WAKE_NOT);
}

static void test_queue_message_hand_over_of_a_permit(void **state)
{
    dlock__handover h;
    (void)state;
    assert_int_equal(told("grant:" TOKEN ":42:1800000000000:3", 4, &h), DLOCK__WAKE_HANDED);
    assert_int_equal(h.fence, 42);
    assert_int_equal(h.lease_end_ms, 1800000000000LL);
    assert_int_equal(h.slot, 3);
    /* A slot beyond the permits, or any for a lock: no hand-over of ours. */
    assert_int_equal(told("grant:" TOKEN ":42:1800000000000:4", 4, &h), DLOCK__WAKE);
    assert_int_equal(told("grant:" TOKEN ":42:1800000000000:1", 0, &h), DLOCK__WAKE);
    assert_int_equal(told("grant:" TOKEN ":42:1800000000000:0", 0, &h), DLOCK__WAKE_HANDED);
}

/* What is not a hand-over for our token is a wake-up: we try. */
static void test_queue_message_garbled_hand_over_is_a_wake_up(void **state)
{
    static const char *const garbled[] = {
        "grant:" TOKEN,
        "grant:" TOKEN ":",
        "grant:" TOKEN "42:1",
        "grant:" TOKEN ":42",
        "grant:" TOKEN ":42:",
        "grant:" TOKEN ":-42:1",
        "grant:" TOKEN ":42:-1",
        "grant:" TOKEN ":42:1x",
        "grant:" TOKEN ":42:1:",
        "grant:" TOKEN ":42:1:1x",
        "grant:" TOKEN ":42:1:-1",
        "grant:" TOKEN ":42:1:1024",
        "grant:" TOKEN ":42:1:18446744073709551617",
        "grant:" TOKEN ":18446744073709551617:1",
        "grant:" TOKEN ":42:99999999999999999999",
        "grant:" TOKEN ":42:1:2:3",
        "grant:" TOKEN ":0000000000000000000000000000000000000000000000000000000000000042:1",
    };
    dlock__handover h;
    (void)state;
    for (size_t i = 0; i < sizeof(garbled) / sizeof(garbled[0]); i++)
        if (told(garbled[i], 4, &h) != DLOCK__WAKE)
            fail_msg("%s: not a wake-up", garbled[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_message_turns),
        cmocka_unit_test(test_queue_message_hand_over_of_a_lock),
        cmocka_unit_test(test_queue_message_hand_over_of_a_permit),
        cmocka_unit_test(test_queue_message_garbled_hand_over_is_a_wake_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
