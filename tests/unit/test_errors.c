/* The error table: every code has a distinct name and a description. */
#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static const int codes[] = {
#define XX(name, value, text) DLOCK_##name,
    DLOCK_ERROR_MAP(XX)
#undef XX
};

static void test_errors_every_code_named_and_described(void **state)
{
    size_t n = sizeof(codes) / sizeof(codes[0]);
    (void)state;
    for (size_t i = 0; i < n; i++) {
        assert_true(codes[i] < 0);
        assert_string_not_equal(dlock_strerror(codes[i]), "unknown error");
        assert_string_not_equal(dlock_err_name(codes[i]), "DLOCK_UNKNOWN");
        assert_int_equal(strncmp(dlock_err_name(codes[i]), "DLOCK_E", 7), 0);
        for (size_t j = i + 1; j < n; j++) {
            assert_int_not_equal(codes[i], codes[j]);
            assert_string_not_equal(dlock_err_name(codes[i]), dlock_err_name(codes[j]));
        }
    }
}

static void test_errors_specific_values(void **state)
{
    (void)state;
    assert_string_equal(dlock_err_name(DLOCK_EBUSY), "DLOCK_EBUSY");
    assert_string_equal(dlock_err_name(DLOCK_OK), "DLOCK_OK");
    assert_string_equal(dlock_strerror(0), "success");
    /* Busy and an I/O timeout are different things. */
    assert_int_not_equal(DLOCK_EBUSY, DLOCK_ETIMEDOUT);
}

static void test_errors_unknown_codes(void **state)
{
    (void)state;
    assert_string_equal(dlock_strerror(-9999), "unknown error");
    assert_string_equal(dlock_strerror(42), "unknown error");
    assert_string_equal(dlock_err_name(-9999), "DLOCK_UNKNOWN");
}

static void test_errors_version(void **state)
{
    (void)state;
    assert_string_equal(dlock_version(), DLOCK_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_every_code_named_and_described),
        cmocka_unit_test(test_errors_specific_values),
        cmocka_unit_test(test_errors_unknown_codes),
        cmocka_unit_test(test_errors_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
