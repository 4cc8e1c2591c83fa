/* Owner tokens: format, uniqueness, and no shared pool across fork. */
#include "token.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define MANY 100000

static int compare(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void test_token_format_and_uniqueness(void **state)
{
    dlock__token_pool *pool = dlock__token_pool_new();
    char(*tokens)[DLOCK_TOKEN_LEN + 1] = calloc(MANY, sizeof(*tokens));
    (void)state;
    assert_non_null(pool);
    for (int i = 0; i < MANY; i++) {
        /* Half from the pool, half straight from the kernel. */
        assert_int_equal(dlock__token_new(i % 2 ? pool : NULL, tokens[i]), 0);
        assert_true(dlock__token_valid(tokens[i]));
    }
    qsort(tokens, MANY, sizeof(*tokens), compare);
    for (int i = 1; i < MANY; i++)
        assert_string_not_equal(tokens[i - 1], tokens[i]);
    free(tokens);
    dlock__token_pool_free(pool);
}

static void test_token_pool_not_shared_with_a_forked_child(void **state)
{
    dlock__token_pool *pool = dlock__token_pool_new();
    char parent[DLOCK_TOKEN_LEN + 1], child[DLOCK_TOKEN_LEN + 1] = "";
    int fds[2], status;
    pid_t pid;
    (void)state;
    assert_non_null(pool);
    assert_int_equal(dlock__token_new(pool, parent), 0); /* the pool is filled now */
    assert_int_equal(dlock__token_pool_pid(pool), getpid());
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    if (pid == 0) {
        char t[DLOCK_TOKEN_LEN + 1];
        int ok = dlock__token_new(pool, t) == 0 && dlock__token_pool_pid(pool) == getpid();
        (void)!write(fds[1], ok ? t : "fail", ok ? DLOCK_TOKEN_LEN : 4);
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], child, DLOCK_TOKEN_LEN), DLOCK_TOKEN_LEN);
    waitpid(pid, &status, 0);
    assert_int_equal(dlock__token_new(pool, parent), 0);
    /* Same next position in a shared pool would give the same token. */
    assert_string_not_equal(parent, child);
    close(fds[0]);
    dlock__token_pool_free(pool);
}

static void test_token_validity_rule(void **state)
{
    (void)state;
    assert_true(dlock__token_valid("0123456789abcdef0123456789abcdef"));
    assert_false(dlock__token_valid("0123456789ABCDEF0123456789abcdef"));
    assert_false(dlock__token_valid("0123456789abcdef0123456789abcde"));
    assert_false(dlock__token_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_format_and_uniqueness),
        cmocka_unit_test(test_token_pool_not_shared_with_a_forked_child),
        cmocka_unit_test(test_token_validity_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
