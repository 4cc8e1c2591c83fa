/* The cluster nodes a client knows (book.h): each address once, the oldest
 * replaced once the book is full, readers from other threads. */
#include "book.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void add_port(dlock__book *b, int port)
{
    char p[8];
    snprintf(p, sizeof(p), "%d", port);
    dlock__book_add(b, "127.0.0.1", p);
}

static int has_port(const dlock__book_entry *e, size_t n, int port)
{
    char p[8];
    snprintf(p, sizeof(p), "%d", port);
    for (size_t i = 0; i < n; i++)
        if (strcmp(e[i].host, "127.0.0.1") == 0 && strcmp(e[i].port, p) == 0)
            return 1;
    return 0;
}

static void test_book_notes_each_address_once(void **state)
{
    dlock__book *b = dlock__book_new();
    dlock__book_entry e[DLOCK__BOOK_MAX];
    (void)state;
    assert_non_null(b);
    assert_int_equal(dlock__book_read(b, e, DLOCK__BOOK_MAX), 0);
    add_port(b, 7000);
    add_port(b, 7001);
    add_port(b, 7000);
    dlock__book_add(b, "::1", "7000");
    assert_int_equal(dlock__book_read(b, e, DLOCK__BOOK_MAX), 3);
    assert_true(has_port(e, 3, 7000) && has_port(e, 3, 7001));
    assert_int_equal(dlock__book_read(b, e, 1), 1);
    assert_int_equal(dlock__book_read(NULL, e, DLOCK__BOOK_MAX), 0);
    dlock__book_add(NULL, "127.0.0.1", "7000");
    dlock__book_free(b);
    dlock__book_free(NULL);
}

static void test_book_full_replaces_the_oldest(void **state)
{
    dlock__book *b = dlock__book_new();
    dlock__book_entry e[DLOCK__BOOK_MAX];
    char long_host[DLOCK__BOOK_HOST_MAX + 1];
    (void)state;
    for (int i = 0; i < DLOCK__BOOK_MAX + 3; i++)
        add_port(b, 7000 + i);
    assert_int_equal(dlock__book_read(b, e, DLOCK__BOOK_MAX), DLOCK__BOOK_MAX);
    for (int i = 0; i < 3; i++)
        assert_false(has_port(e, DLOCK__BOOK_MAX, 7000 + i));
    for (int i = 3; i < DLOCK__BOOK_MAX + 3; i++)
        assert_true(has_port(e, DLOCK__BOOK_MAX, 7000 + i));
    /* An address that does not fit is not noted cut short. */
    memset(long_host, 'h', sizeof(long_host) - 1);
    long_host[sizeof(long_host) - 1] = '\0';
    dlock__book_add(b, long_host, "7000");
    dlock__book_read(b, e, DLOCK__BOOK_MAX);
    for (size_t i = 0; i < DLOCK__BOOK_MAX; i++)
        assert_int_not_equal(e[i].host[0], 'h');
    dlock__book_free(b);
}

static void *add_many(void *arg)
{
    for (int i = 0; i < 2000; i++)
        add_port(arg, 8000 + i % 64);
    return NULL;
}

static void test_book_shared_by_threads(void **state)
{
    dlock__book *b = dlock__book_new();
    dlock__book_entry e[DLOCK__BOOK_MAX];
    pthread_t writer;
    (void)state;
    assert_int_equal(pthread_create(&writer, NULL, add_many, b), 0);
    for (int i = 0; i < 2000; i++) {
        size_t n = dlock__book_read(b, e, DLOCK__BOOK_MAX);
        for (size_t k = 0; k < n; k++)
            assert_string_equal(e[k].host, "127.0.0.1");
    }
    assert_int_equal(pthread_join(writer, NULL), 0);
    assert_int_equal(dlock__book_read(b, e, DLOCK__BOOK_MAX), DLOCK__BOOK_MAX);
    dlock__book_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_book_notes_each_address_once),
        cmocka_unit_test(test_book_full_replaces_the_oldest),
        cmocka_unit_test(test_book_shared_by_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
