/* The RESP reader: normal replies, and limits against broken servers. */
#include "resp.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Feeds `bytes` and returns what dlock__reader_next says. */
static int feed(dlock__reader *r, const char *bytes, size_t len, dlock__reply **out)
{
    int rc = dlock__reader_feed(r, bytes, len);
    return rc < 0 ? rc : dlock__reader_next(r, out);
}

static void test_resp_nested_reply(void **state)
{
    static const char wire[] = "*2\r\n:1\r\n$3\r\nabc\r\n";
    dlock__reader *r = dlock__reader_new();
    dlock__reply *reply = NULL;
    (void)state;
    /* Byte by byte: a reply split anywhere is reassembled. */
    for (size_t i = 0; i + 1 < sizeof(wire) - 1; i++)
        assert_int_equal(feed(r, wire + i, 1, &reply), 0);
    assert_int_equal(feed(r, wire + sizeof(wire) - 2, 1, &reply), 1);
    assert_int_equal(reply->type, DLOCK__REPLY_ARRAY);
    assert_int_equal(reply->elements, 2);
    assert_int_equal(reply->element[0]->type, DLOCK__REPLY_INTEGER);
    assert_int_equal(reply->element[0]->integer, 1);
    assert_int_equal(reply->element[1]->type, DLOCK__REPLY_STRING);
    assert_string_equal(reply->element[1]->str, "abc");
    dlock__reply_free(reply);
    dlock__reader_free(r);
}

static void test_resp_simple_types(void **state)
{
    dlock__reader *r = dlock__reader_new();
    dlock__reply *reply = NULL;
    (void)state;
    assert_int_equal(feed(r, "+OK\r\n", 5, &reply), 1);
    if (!reply) { /* cmocka's asserts return, as far as the analyser knows */
        fail();
        return;
    }
    assert_int_equal(reply->type, DLOCK__REPLY_STATUS);
    dlock__reply_free(reply);
    assert_int_equal(feed(r, "-NOSCRIPT x\r\n", 13, &reply), 1);
    assert_int_equal(reply->type, DLOCK__REPLY_ERROR);
    assert_string_equal(reply->str, "NOSCRIPT x");
    dlock__reply_free(reply);
    assert_int_equal(feed(r, "$-1\r\n", 5, &reply), 1);
    assert_int_equal(reply->type, DLOCK__REPLY_NIL);
    dlock__reply_free(reply);
    dlock__reader_free(r);
}

static void test_resp_long_array_refused(void **state)
{
    dlock__reader *r = dlock__reader_new();
    dlock__reply *reply = NULL;
    (void)state;
    assert_int_equal(feed(r, "*100000000\r\n", 12, &reply), DLOCK_EPROTO);
    dlock__reader_free(r);
}

static void test_resp_huge_bulk_refused(void **state)
{
    dlock__reader *r = dlock__reader_new();
    dlock__reply *reply = NULL;
    char *chunk = malloc(65536);
    int rc = 0;
    (void)state;
    memset(chunk, 'x', 65536);
    /* A bulk string announced larger than the limit: refused at once. */
    assert_int_equal(feed(r, "$2000000000\r\n", 13, &reply), DLOCK_EPROTO);
    dlock__reader_free(r);
    /* One just under it is waited for. */
    r = dlock__reader_new();
    assert_int_equal(feed(r, "$1000000\r\nxx", 13, &reply), 0);
    dlock__reader_free(r);
    /* A line that never ends: refused before much more than the limit is
     * buffered. */
    r = dlock__reader_new();
    assert_int_equal(feed(r, "+", 1, &reply), 0);
    for (size_t sent = 0; rc == 0 && sent < 4 * (size_t)DLOCK__REPLY_BYTES_MAX; sent += 65536)
        rc = feed(r, chunk, 65536, &reply);
    assert_int_equal(rc, DLOCK_EPROTO);
    free(chunk);
    dlock__reader_free(r);
}

static void test_resp_garbage_refused(void **state)
{
    dlock__reader *r = dlock__reader_new();
    dlock__reply *reply = NULL;
    (void)state;
    assert_int_equal(feed(r, "HTTP/1.1 400\r\n", 14, &reply), DLOCK_EPROTO);
    dlock__reader_free(r);
}

static void test_resp_command_format(void **state)
{
    const char *argv[] = {"SET", "k", "a b"};
    const size_t lens[] = {3, 1, 3};
    char *cmd = NULL;
    long long len;
    (void)state;
    len = dlock__command_format(&cmd, 3, argv, lens);
    assert_int_equal(len, (long long)strlen("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na b\r\n"));
    assert_memory_equal(cmd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na b\r\n", (size_t)len);
    dlock__command_free(cmd);
}

/* An error reply as a message may quote it: Redis' words about the script
 * that failed (its SHA1, its Lua line) taken out, in every form Redis 6
 * and 7 write them, and nothing else. */
static void test_resp_error_without_script_internals(void **state)
{
    static const char *const cases[][2] = {
        {"-WRONGTYPE Operation against a key holding the wrong kind of value script: "
         "ceb4ece7de747b0c542dfa679c5e6e087013c3e6, on @user_script:15.\r\n",
         "WRONGTYPE Operation against a key holding the wrong kind of value"},
        {"-ERR user_script:12: Script attempted to access nonexistent global variable 'x' "
         "script: d8352776a3a29d9b43d37fe1c15308496c850944, on @user_script:12.\r\n",
         "ERR Script attempted to access nonexistent global variable 'x'"},
        {"-ERR Error running script (call to f_63e9678bf8519abca429481a227413a7202a22d6): "
         "@user_script:39: WRONGTYPE Operation against a key\r\n",
         "ERR WRONGTYPE Operation against a key"},
        {"-NOSCRIPT No matching script. Please use EVAL.\r\n",
         "NOSCRIPT No matching script. Please use EVAL."},
        /* a name that only looks like the words stays */
        {"-WRONGTYPE user_script:x is a hash, not a lock script: 12\r\n",
         "WRONGTYPE user_script:x is a hash, not a lock script: 12"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dlock__reader *r = dlock__reader_new();
        dlock__reply *reply = NULL;
        assert_int_equal(feed(r, cases[i][0], strlen(cases[i][0]), &reply), 1);
        if (!reply) { /* cmocka's asserts return, as far as the analyser knows */
            fail();
            return;
        }
        assert_int_equal(reply->type, DLOCK__REPLY_ERROR);
        assert_string_equal(reply->str, cases[i][1]);
        assert_int_equal(reply->len, strlen(cases[i][1]));
        dlock__reply_free(reply);
        dlock__reader_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resp_nested_reply),
        cmocka_unit_test(test_resp_simple_types),
        cmocka_unit_test(test_resp_long_array_refused),
        cmocka_unit_test(test_resp_huge_bulk_refused),
        cmocka_unit_test(test_resp_garbage_refused),
        cmocka_unit_test(test_resp_command_format),
        cmocka_unit_test(test_resp_error_without_script_internals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
