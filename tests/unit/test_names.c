/* Lock names and their auxiliary keys (the hash-tag rule). */
#include "names.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static void expect_keys(const char *name, const char *fence, const char *owner,
                        const char *channel)
{
    dlock__keys k;
    char why[128];
    assert_int_equal(dlock__keys_make(&k, name, why, sizeof(why)), 0);
    assert_string_equal(k.lock, name);
    assert_string_equal(k.fence, fence);
    assert_string_equal(k.owner, owner);
    assert_string_equal(k.channel, channel);
    dlock__keys_clear(&k);
}

static void test_names_without_brace_are_wrapped(void **state)
{
    (void)state;
    expect_keys("lock:report", "{lock:report}:fence", "{lock:report}:owner",
                "{lock:report}:released");
    expect_keys("x", "{x}:fence", "{x}:owner", "{x}:released");
    expect_keys("\x01\xff", "{\x01\xff}:fence", "{\x01\xff}:owner", "{\x01\xff}:released");
}

static void test_names_with_hash_tag_keep_it(void **state)
{
    (void)state;
    expect_keys("{user:1}:lock", "{user:1}:lock:fence", "{user:1}:lock:owner",
                "{user:1}:lock:released");
    expect_keys("a{b}c", "a{b}c:fence", "a{b}c:owner", "a{b}c:released");
    /* Only the first tag counts; later braces are ordinary bytes. */
    expect_keys("a{b}c{", "a{b}c{:fence", "a{b}c{:owner", "a{b}c{:released");
    expect_keys("{{x}", "{{x}:fence", "{{x}:owner", "{{x}:released");
}

static void test_names_refused(void **state)
{
    static const char *const bad[] = {
        "",       "{x",         "x}",          "}x{",          "{}x",
        "a{}b{c}", "x:fence",   "x:owner",     "x:released",   "{t}:fence",
        ":fence", "a:released",
    };
    char why[128];
    dlock__keys k;
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = dlock__keys_make(&k, bad[i], why, sizeof(why));
        if (rc != DLOCK_EINVAL)
            fail_msg("name \"%s\" accepted", bad[i]);
        assert_null(k.lock);
    }
    assert_int_equal(dlock__keys_make(&k, NULL, why, sizeof(why)), DLOCK_EINVAL);
}

static void test_names_length_limit(void **state)
{
    char name[DLOCK_NAME_MAX + 2];
    char why[128];
    dlock__keys k;
    (void)state;
    memset(name, 'n', DLOCK_NAME_MAX);
    name[DLOCK_NAME_MAX] = '\0';
    assert_int_equal(dlock__keys_make(&k, name, why, sizeof(why)), 0);
    dlock__keys_clear(&k);
    name[DLOCK_NAME_MAX] = 'n';
    name[DLOCK_NAME_MAX + 1] = '\0';
    assert_int_equal(dlock__keys_make(&k, name, why, sizeof(why)), DLOCK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_without_brace_are_wrapped),
        cmocka_unit_test(test_names_with_hash_tag_keep_it),
        cmocka_unit_test(test_names_refused),
        cmocka_unit_test(test_names_length_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
