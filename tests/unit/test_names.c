/* Lock names and their auxiliary keys (the hash-tag rule). */
#include "names.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
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
    expect_keys("lock:report", "{lock:report}:dlock:fence:lock:report",
                "{lock:report}:dlock:owner:lock:report",
                "{lock:report}:dlock:released:lock:report");
    expect_keys("x", "{x}:dlock:fence:x", "{x}:dlock:owner:x", "{x}:dlock:released:x");
    expect_keys("\x01\xff", "{\x01\xff}:dlock:fence:\x01\xff", "{\x01\xff}:dlock:owner:\x01\xff",
                "{\x01\xff}:dlock:released:\x01\xff");
    /* Names that end like the old auxiliary keys are ordinary names now. */
    expect_keys("x:fence", "{x:fence}:dlock:fence:x:fence", "{x:fence}:dlock:owner:x:fence",
                "{x:fence}:dlock:released:x:fence");
}

static void test_names_with_hash_tag_keep_it(void **state)
{
    (void)state;
    expect_keys("{user:1}:lock", "{user:1}:dlock:fence:{user:1}:lock",
                "{user:1}:dlock:owner:{user:1}:lock", "{user:1}:dlock:released:{user:1}:lock");
    expect_keys("a{b}c", "{b}:dlock:fence:a{b}c", "{b}:dlock:owner:a{b}c",
                "{b}:dlock:released:a{b}c");
    /* Only the first tag counts; later braces are ordinary bytes. */
    expect_keys("a{b}c{", "{b}:dlock:fence:a{b}c{", "{b}:dlock:owner:a{b}c{",
                "{b}:dlock:released:a{b}c{");
    expect_keys("{{x}", "{{x}:dlock:fence:{{x}", "{{x}:dlock:owner:{{x}",
                "{{x}:dlock:released:{{x}");
}

/* The names that used to share auxiliary keys, and every pair of a small
 * alphabet's names: no two names share one, and no auxiliary key is a name
 * that dlock accepts. */
static void test_names_auxiliary_keys_are_injective(void **state)
{
    static const char alphabet[] = "ab{}:";
    char names[800][8];
    char *aux[800 * 3];
    size_t n = 0, k = 0;
    char why[128];
    (void)state;
    for (size_t len = 1; len <= 4; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= 5;
        for (size_t v = 0; v < total; v++) {
            dlock__keys keys, refused;
            size_t x = v;
            for (size_t i = 0; i < len; i++, x /= 5)
                names[n][i] = alphabet[x % 5];
            names[n][len] = '\0';
            if (dlock__keys_make(&keys, names[n], why, sizeof(why)) != 0)
                continue;
            aux[k++] = strdup(keys.fence);
            aux[k++] = strdup(keys.owner);
            aux[k++] = strdup(keys.channel);
            dlock__keys_clear(&keys);
            assert_int_not_equal(dlock__keys_make(&refused, aux[k - 1], why, sizeof(why)), 0);
            n++;
        }
    }
    assert_true(n > 100);
    for (size_t i = 0; i < k; i++) {
        for (size_t j = i + 1; j < k; j++)
            if (strcmp(aux[i], aux[j]) == 0)
                fail_msg("two names share the auxiliary key %s", aux[i]);
    }
    for (size_t i = 0; i < k; i++)
        free(aux[i]);
}

static void test_names_refused(void **state)
{
    static const char *const bad[] = {
        "", "{x", "x}", "}x{", "{}x", "a{}b{c}", "{t}:dlock:fence:t", "{t}:dlock:",
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
        cmocka_unit_test(test_names_auxiliary_keys_are_injective),
        cmocka_unit_test(test_names_refused),
        cmocka_unit_test(test_names_length_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
