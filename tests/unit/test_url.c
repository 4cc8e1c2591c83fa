/* URL parsing: what is accepted, and a table of what is refused; and the
 * cluster hash slot of a key. */
#include "slot.h"
#include "url.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

/* A part of a URL that may be missing: NULL where `want` is. */
static void assert_optional(const char *got, const char *want)
{
    if (want)
        assert_string_equal(got, want);
    else
        assert_null(got);
}

/* Parses `url`, which must be accepted, into *ep. */
static void parse(dlock__endpoint *ep, const char *url)
{
    char why[128] = "";
    if (dlock__url_parse(ep, url, why, sizeof(why)) != 0)
        fail_msg("%s: %s", url, why);
}

static void test_url_tcp_forms(void **state)
{
    static const struct {
        const char *url, *host, *port, *user, *password, *label;
        int db;
    } cases[] = {
        {"redis://localhost", "localhost", "6379", NULL, NULL, "localhost:6379", 0},
        {"redis://127.0.0.1:7000", "127.0.0.1", "7000", NULL, NULL, "127.0.0.1:7000", 0},
        {"redis://127.0.0.1:7000/", "127.0.0.1", "7000", NULL, NULL, "127.0.0.1:7000", 0},
        {"redis://h:1/15", "h", "1", NULL, NULL, "h:1", 15},
        {"REDIS://h", "h", "6379", NULL, NULL, "h:6379", 0},
        {"redis://:s3cret@h", "h", "6379", NULL, "s3cret", "h:6379", 0},
        {"redis://alice:pw@h:6380/2", "h", "6380", "alice", "pw", "h:6380", 2},
        {"redis://al%40ce:p%3Aw%2F@h", "h", "6379", "al@ce", "p:w/", "h:6379", 0},
        {"redis://[::1]", "::1", "6379", NULL, NULL, "[::1]:6379", 0},
        {"redis://[::1]:6390/3", "::1", "6390", NULL, NULL, "[::1]:6390", 3},
        {"redis://u:p@[fe80::1]:1", "fe80::1", "1", "u", "p", "[fe80::1]:1", 0},
        {"redis://my-host.example_1.com:65535", "my-host.example_1.com", "65535", NULL, NULL,
         "my-host.example_1.com:65535", 0},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dlock__endpoint ep;
        parse(&ep, cases[i].url);
        assert_int_equal(ep.transport, DLOCK__TCP);
        assert_string_equal(ep.host, cases[i].host);
        assert_string_equal(ep.port, cases[i].port);
        assert_string_equal(ep.label, cases[i].label);
        assert_int_equal(ep.db, cases[i].db);
        assert_optional(ep.user, cases[i].user);
        assert_optional(ep.password, cases[i].password);
        dlock__endpoint_clear(&ep);
    }
}

static void test_url_unix_forms(void **state)
{
    dlock__endpoint ep;
    char why[128];
    (void)state;
    assert_int_equal(dlock__url_parse(&ep, "unix:///run/redis.sock", why, sizeof(why)), 0);
    assert_int_equal(ep.transport, DLOCK__UNIX);
    assert_string_equal(ep.path, "/run/redis.sock");
    assert_string_equal(ep.label, "/run/redis.sock");
    assert_int_equal(ep.db, 0);
    dlock__endpoint_clear(&ep);
    assert_int_equal(dlock__url_parse(&ep, "unix:///tmp/r.sock?db=4", why, sizeof(why)), 0);
    assert_string_equal(ep.path, "/tmp/r.sock");
    assert_int_equal(ep.db, 4);
    dlock__endpoint_clear(&ep);
}

/* Longer than sun_path can hold. */
static const char long_unix_path[] =
    "unix:///tmp/"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock";

/* redis-sentinel://[user:pw@]h[:p][,h[:p]...][/db]#name: the first
 * sentinel in host and port, the list as written, the primary's name. */
static void test_url_sentinel_forms(void **state)
{
    static const struct {
        const char *url, *host, *port, *sentinels, *service, *label, *password;
        int db, tls;
    } cases[] = {
        {"redis-sentinel://h#mymaster", "h", "26379", "h", "mymaster", "mymaster@h", NULL, 0, 0},
        {"redis-sentinel://a:1,b:2,[::1]:3/4#p-1", "a", "1", "a:1,b:2,[::1]:3", "p-1",
         "p-1@a:1,b:2,[::1]:3", NULL, 4, 0},
        {"rediss-sentinel://:pw@a,b#m", "a", "26379", "a,b", "m", "m@a,b", "pw", 0, 1},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dlock__endpoint ep;
        parse(&ep, cases[i].url);
        assert_string_equal(ep.host, cases[i].host);
        assert_string_equal(ep.port, cases[i].port);
        assert_string_equal(ep.sentinels, cases[i].sentinels);
        assert_string_equal(ep.service, cases[i].service);
        assert_string_equal(ep.label, cases[i].label);
        assert_int_equal(ep.db, cases[i].db);
        assert_int_equal(ep.tls, cases[i].tls);
        assert_optional(ep.password, cases[i].password);
        dlock__endpoint_clear(&ep);
    }
}

/* Redis Cluster's own examples: CRC16 of "123456789" is 0x31C3; a hash
 * tag is the text between the first '{' and the next '}', if not empty. */
static void test_slot_of_keys(void **state)
{
    (void)state;
    assert_int_equal(dlock__key_slot("123456789", 9), 0x31C3 % 16384);
    assert_int_equal(dlock__key_slot("foo", 3), 12182);
    assert_int_equal(dlock__key_slot("{user1000}.following", 20),
                     dlock__key_slot("{user1000}.followers", 20));
    assert_int_equal(dlock__key_slot("{user1000}.following", 20), dlock__key_slot("user1000", 8));
    assert_int_equal(dlock__key_slot("foo{}{bar}", 10), 8363); /* empty tag: the whole key */
    assert_int_equal(dlock__key_slot("foo{{bar}}zap", 13), dlock__key_slot("{bar", 4));
    assert_int_equal(dlock__key_slot("foo{bar}{zap}", 13), dlock__key_slot("bar", 3));
}

static void test_url_malformed_refused(void **state)
{
    static const char *const bad[] = {
        "",
        "localhost:6379",
        "http://localhost",
        "redis://",
        "redis://:6379",
        "redis://host:",
        "redis://host:0",
        "redis://host:65536",
        "redis://host:99999999",
        "redis://host:12ab",
        "redis://host:-1",
        "redis://host/abc",
        "redis://host/1/2",
        "redis://host/-1",
        "redis://host/1234567890",
        "redis://host?timeout=1",
        "redis://host#frag",
        "redis-sentinel://h",
        "redis-sentinel://h#",
        "redis-sentinel://h#a b",
        "redis-sentinel://h,#m",
        "redis-sentinel://,h#m",
        "redis-sentinel://h:0#m",
        "redis-sentinel://h/x#m",
        "redis-sentinel://h?x=1#m",
        "redis://ho st",
        "redis://host\n",
        "redis://[::1",
        "redis://[::1]x",
        "redis://[not-v6]",
        "redis://[]",
        "redis://user@host",
        "redis://user:@host",
        "redis://:p%zzw@host",
        "redis://:p%00w@host",
        "redis://:p%4@host",
        "redis://h\xc3\xa9st",
        "redis://bad!host",
        "unix://",
        "unix://relative/path",
        "unix:///tmp/x.sock?timeout=3",
        "unix:///tmp/x.sock?db=x",
        "unix:///tmp/x.sock#x",
        long_unix_path,
        "rediss://",
        "rediss://host:0",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dlock__endpoint ep;
        char why[128] = "";
        int rc = dlock__url_parse(&ep, bad[i], why, sizeof(why));
        if (rc != DLOCK_EINVAL)
            fail_msg("accepted or wrong code (%d) for \"%s\"", rc, bad[i]);
        assert_true(strlen(why) > 0);
        assert_null(ep.host);
        assert_null(ep.password);
    }
}

static void test_url_tls(void **state)
{
    dlock__endpoint ep;
    char why[128];
    (void)state;
    assert_int_equal(dlock__url_parse(&ep, "rediss://:pw@cache.example:6380/1", why, sizeof(why)), 0);
    assert_int_equal(ep.tls, 1);
    assert_string_equal(ep.host, "cache.example");
    assert_string_equal(ep.port, "6380");
    assert_int_equal(ep.db, 1);
    dlock__endpoint_clear(&ep);
    assert_int_equal(dlock__url_parse(&ep, "redis://h", why, sizeof(why)), 0);
    assert_int_equal(ep.tls, 0);
    dlock__endpoint_clear(&ep);
}

static void test_url_null_refused(void **state)
{
    dlock__endpoint ep;
    char why[64];
    (void)state;
    assert_int_equal(dlock__url_parse(&ep, NULL, why, sizeof(why)), DLOCK_EINVAL);
}

static void test_url_error_hides_password(void **state)
{
    dlock__endpoint ep;
    char why[256] = "";
    (void)state;
    assert_int_equal(dlock__url_parse(&ep, "redis://:hunter2@host:99999", why, sizeof(why)),
                     DLOCK_EINVAL);
    assert_null(strstr(why, "hunter2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_tcp_forms),
        cmocka_unit_test(test_url_unix_forms),
        cmocka_unit_test(test_url_sentinel_forms),
        cmocka_unit_test(test_slot_of_keys),
        cmocka_unit_test(test_url_malformed_refused),
        cmocka_unit_test(test_url_tls),
        cmocka_unit_test(test_url_null_refused),
        cmocka_unit_test(test_url_error_hides_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
