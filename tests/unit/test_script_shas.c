/* The scripts as the library sends them: prints each script's SHA1 (the one
 * EVALSHA names), so that a change that must leave the scripts' bytes alone
 * can show it did, and checks that each SHA1 is the script text's and that
 * a new connection loads every script. */
#include "scripts.h"

#include <openssl/evp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void sha1_hex(const char *text, char out[41])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    assert_true(EVP_Digest(text, strlen(text), md, &len, EVP_sha1(), NULL));
    assert_int_equal(len, 20);
    for (unsigned int i = 0; i < len; i++)
        snprintf(&out[(size_t)i * 2], 3, "%02x", md[i]);
}

static void test_script_shas_are_the_texts(void **state)
{
    (void)state;
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++) {
        char expected[41];
        const char *source = dlock__script_source(id);
        assert_non_null(source);
        sha1_hex(source, expected);
        assert_string_equal(dlock__script_sha(id), expected);
        printf("script %2d %s\n", id, expected);
    }
}

static void test_script_shas_every_script_is_preloaded(void **state)
{
    const char *const *all = dlock__script_sources();
    (void)state;
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++) {
        assert_ptr_equal(all[id], dlock__script_source(id));
        for (int other = 0; other < id; other++)
            assert_string_not_equal(dlock__script_sha(id), dlock__script_sha(other));
    }
    assert_null(all[DLOCK__SCRIPT_COUNT]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_script_shas_are_the_texts),
        cmocka_unit_test(test_script_shas_every_script_is_preloaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
