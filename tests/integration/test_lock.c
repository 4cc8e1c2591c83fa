/* The lock against a real redis-server: the classic sequence, TTLs, expiry,
 * extend, interop with plain SET, NOSCRIPT recovery and bad input. */
#include "helpers.h"

#include <dlock.h>

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define TOKEN_OF_NOBODY "0123456789abcdef0123456789abcdef"

/* The group's server: group_server, from the helpers. */
#define server group_server

struct fixture {
    dlock_client *a, *b;
    redisContext *redis;
};

static int setup(void **state)
{
    struct fixture *f = cleanup_alloc(sizeof(*f));
    f->a = client_on(server.url);
    f->b = client_on(server.url);
    f->redis = connect_to(&server);
    *state = f;
    return 0;
}

static void test_lock_classic_sequence(void **state)
{
    struct fixture *f = *state;
    dlock_lock *a = take(f->a, "lock:order", 30000, NULL);
    dlock_lock *b_own;

    expect_acquire(DLOCK_EBUSY, f->b, "lock:order", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(f->b), "held by another owner"));

    b_own = adopt(f->b, "lock:order", TOKEN_OF_NOBODY);
    assert_int_equal(dlock_lock_release(b_own), DLOCK_ENOTOWNER);
    assert_key_holds(f->redis, "lock:order", dlock_lock_token(a));
    assert_true(pttl_of(f->redis, "lock:order") > 0);

    assert_int_equal(dlock_lock_release(a), 0);
    assert_false(key_exists(f->redis, "lock:order"));
    assert_false(key_exists(f->redis, aux_key("lock:order", "owner")));
    assert_int_equal(dlock_lock_validity_ms(a), 0);
    /* A second release finds nothing of ours. */
    assert_int_equal(dlock_lock_release(a), DLOCK_ENOTOWNER);
}

static void test_lock_key_has_ttl_and_token(void **state)
{
    struct fixture *f = *state;
    dlock_lock *a = take(f->a, "lock:ttl", 30000, NULL);
    char *owner;
    char pid[32];
    long long pttl = pttl_of(f->redis, "lock:ttl");

    assert_true(pttl > 0 && pttl <= 30000);
    assert_int_equal(strlen(dlock_lock_token(a)), DLOCK_TOKEN_LEN);
    assert_int_equal(strspn(dlock_lock_token(a), "0123456789abcdef"), DLOCK_TOKEN_LEN);
    assert_key_holds(f->redis, "lock:ttl", dlock_lock_token(a));
    assert_string_equal(dlock_lock_name(a), "lock:ttl");

    /* The owner record: host, pid, since, token; it expires with the lock. */
    owner = string_at(f->redis, aux_key("lock:ttl", "owner"));
    assert_non_null(owner);
    snprintf(pid, sizeof(pid), "\"pid\":%ld", (long)getpid());
    assert_non_null(strstr(owner, pid));
    assert_non_null(strstr(owner, dlock_lock_token(a)));
    assert_non_null(strstr(owner, "\"host\":"));
    assert_non_null(strstr(owner, "\"since\":"));
    pttl = pttl_of(f->redis, aux_key("lock:ttl", "owner"));
    assert_true(pttl > 0 && pttl <= 30000);

    /* The fence counter lives a day by default, not forever. */
    pttl = pttl_of(f->redis, aux_key("lock:ttl", "fence"));
    assert_true(pttl > 30000 && pttl <= 24LL * 3600 * 1000);

    /* Two acquisitions never share a token. */
    assert_int_equal(dlock_lock_release(a), 0);
    {
        dlock_lock *again = take(f->a, "lock:ttl", 30000, NULL);
        assert_string_not_equal(dlock_lock_token(again), dlock_lock_token(a));
        assert_int_equal(dlock_lock_release(again), 0);
    }
}

static void test_lock_validity_is_conservative(void **state)
{
    struct fixture *f = *state;
    dlock_lock *a = take(f->a, "lock:validity", 10000, NULL);
    int64_t v = dlock_lock_validity_ms(a);
    /* ttl - elapsed - (ttl * 0.01 + 2 ms) */
    assert_true(v > 0);
    assert_true(v <= 10000 - 100 - 2);
    assert_int_equal(dlock_lock_release(a), 0);
}

static void test_lock_expired_can_be_taken_by_another(void **state)
{
    struct fixture *f = *state;
    dlock_lock *a = take(f->a, "lock:expiry", 100, NULL);
    dlock_lock *b;
    usleep(250 * 1000);
    assert_false(key_exists(f->redis, "lock:expiry"));
    assert_int_equal(dlock_lock_validity_ms(a), 0);

    b = take(f->b, "lock:expiry", 30000, NULL);
    assert_true(dlock_lock_fence(b) > dlock_lock_fence(a));
    assert_int_equal(dlock_lock_release(a), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock_extend(a, 30000), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock_validity_ms(a), 0);
    assert_key_holds(f->redis, "lock:expiry", dlock_lock_token(b));
    assert_true(pttl_of(f->redis, "lock:expiry") > 20000);

    assert_int_equal(dlock_lock_release(b), 0);
}

static void test_lock_extend_only_for_the_owner(void **state)
{
    struct fixture *f = *state;
    dlock_lock *a = take(f->a, "lock:extend", 1000, NULL);
    dlock_lock *stranger;
    long long pttl;

    assert_true(dlock_lock_validity_ms(a) <= 1000);
    assert_int_equal(dlock_lock_extend(a, 60000), 0);
    pttl = pttl_of(f->redis, "lock:extend");
    assert_true(pttl > 50000 && pttl <= 60000);
    assert_true(pttl_of(f->redis, aux_key("lock:extend", "owner")) > 50000);
    assert_true(dlock_lock_validity_ms(a) > 50000);
    assert_true(dlock_lock_validity_ms(a) <= 60000 - 600 - 2);

    stranger = adopt(f->b, "lock:extend", TOKEN_OF_NOBODY);
    assert_int_equal(dlock_lock_extend(stranger, 120000), DLOCK_ENOTOWNER);
    assert_true(pttl_of(f->redis, "lock:extend") <= 60000);
    assert_key_holds(f->redis, "lock:extend", dlock_lock_token(a));

    /* Shorter is allowed too: validity follows. */
    assert_int_equal(dlock_lock_extend(a, 2000), 0);
    assert_true(pttl_of(f->redis, "lock:extend") <= 2000);
    assert_true(dlock_lock_validity_ms(a) <= 2000);

    assert_int_equal(dlock_lock_release(a), 0);
}

static void test_lock_adopted_token_releases(void **state)
{
    struct fixture *f = *state;
    dlock_lock *a = take(f->a, "lock:adopt", 30000, NULL);
    dlock_lock *later = adopt(f->b, "lock:adopt", dlock_lock_token(a));
    assert_int_equal(dlock_lock_validity_ms(later), 0);
    assert_int_equal(dlock_lock_fence(later), 0);
    assert_int_equal(dlock_lock_extend(later, 40000), 0);
    assert_true(dlock_lock_validity_ms(later) > 30000);
    assert_int_equal(dlock_lock_release(later), 0);
    assert_false(key_exists(f->redis, "lock:adopt"));
}

static void test_lock_adopt_refuses_bad_tokens(void **state)
{
    struct fixture *f = *state;
    static const char *const bad[] = {"", "abc", "0123456789ABCDEF0123456789ABCDEF",
                                      "0123456789abcdef0123456789abcdeg",
                                      "0123456789abcdef0123456789abcdef0"};
    dlock_lock *lock = NULL;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(dlock_lock_adopt(&lock, f->a, "lock:x", bad[i]), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_adopt(&lock, f->a, "lock:x", NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_adopt(&lock, f->a, "{x}:dlock:fence:x", TOKEN_OF_NOBODY), DLOCK_EINVAL);
    assert_null(lock);
}

static void test_lock_plain_set_makes_acquire_busy(void **state)
{
    struct fixture *f = *state;
    freeReplyObject(run(f->redis, "SET lock:interop x NX PX 5000"));
    expect_acquire(DLOCK_EBUSY, f->a, "lock:interop", 30000, NULL);
    assert_key_holds(f->redis, "lock:interop", "x");
    assert_true(pttl_of(f->redis, "lock:interop") <= 5000);
    /* A key without a TTL (set by someone else) is busy too. */
    freeReplyObject(run(f->redis, "SET lock:interop2 y"));
    expect_acquire(DLOCK_EBUSY, f->a, "lock:interop2", 30000, NULL);
    assert_int_equal(pttl_of(f->redis, "lock:interop2"), -1);
    assert_key_holds(f->redis, "lock:interop2", "y");
}

static void test_lock_release_survives_script_flush(void **state)
{
    struct fixture *f = *state;
    dlock_lock *a = take(f->a, "lock:noscript", 30000, NULL);
    freeReplyObject(run(f->redis, "SCRIPT FLUSH"));
    assert_int_equal(dlock_lock_release(a), 0);
    assert_false(key_exists(f->redis, "lock:noscript"));
    freeReplyObject(run(f->redis, "SCRIPT FLUSH"));
    a = take(f->a, "lock:noscript", 30000, NULL);
    freeReplyObject(run(f->redis, "SCRIPT FLUSH"));
    assert_int_equal(dlock_lock_extend(a, 30000), 0);
    assert_int_equal(dlock_lock_release(a), 0);
}

static void test_lock_wrong_type_is_not_busy(void **state)
{
    struct fixture *f = *state;
    freeReplyObject(run(f->redis, "RPUSH lock:list item"));
    expect_acquire(DLOCK_EWRONGTYPE, f->a, "lock:list", 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(f->a), "WRONGTYPE"));
    assert_int_equal(kept_reply(run(f->redis, "LLEN lock:list"))->integer, 1);
    assert_false(key_exists(f->redis, aux_key("lock:list", "fence")));
    assert_false(key_exists(f->redis, aux_key("lock:list", "owner")));
    /* A fence key of another type: refused before any write. */
    freeReplyObject(run(f->redis, "HSET %s a b", aux_key("lock:wf", "fence")));
    expect_acquire(DLOCK_EWRONGTYPE, f->a, "lock:wf", 30000, NULL);
    assert_false(key_exists(f->redis, "lock:wf"));
}

static void test_lock_binary_name_works(void **state)
{
    struct fixture *f = *state;
    /* Bytes of every kind, and CRLF, which must not split the command. */
    static const char *const names[] = {"bin:\x01\x7f\xff\xfe name", "crlf:\r\nPING\r\n"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        dlock_lock *a = take(f->a, names[i], 30000, NULL);
        redisReply *r = kept_reply(run(f->redis, "GET %b", names[i], strlen(names[i])));
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, dlock_lock_token(a));
        assert_string_equal(dlock_lock_name(a), names[i]);
        assert_int_equal(dlock_lock_release(a), 0);
        assert_false(key_exists(f->redis, names[i]));
    }
}

static void test_lock_name_limits(void **state)
{
    struct fixture *f = *state;
    static const char *const refused[] = {"", "{x", "x}", "}x{", "{}x", "a{}b{c}",
                                          "{x}:dlock:fence:x", "{lock}:dlock:owner:lock"};
    char *name = cleanup_alloc(DLOCK_NAME_MAX + 2);
    dlock_lock *lock;

    memset(name, 'n', DLOCK_NAME_MAX);
    take_and_release(f->a, name, 30000, NULL);
    name[DLOCK_NAME_MAX] = 'n';
    expect_acquire(DLOCK_EINVAL, f->a, name, 30000, NULL);
    assert_non_null(strstr(dlock_client_errmsg(f->a), "1 to 1024 bytes"));
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        expect_acquire(DLOCK_EINVAL, f->a, refused[i], 30000, NULL);
        assert_true(strlen(dlock_client_errmsg(f->a)) > 0);
    }
    /* A valid hash tag keeps the name as the prefix of its auxiliary keys. */
    lock = take(f->a, "{user:7}:lock", 30000, NULL);
    assert_true(key_exists(f->redis, aux_key("{user:7}:lock", "owner")));
    assert_true(key_exists(f->redis, aux_key("{user:7}:lock", "fence")));
    assert_int_equal(dlock_lock_release(lock), 0);
}

static void test_lock_bad_ttl_refused(void **state)
{
    struct fixture *f = *state;
    static const int64_t bad[] = {0,         1, 2, DLOCK_TTL_MIN_MS - 1, -1, -30000,
                                  DLOCK_TTL_MAX_MS + 1, INT64_MAX, INT64_MIN};
    dlock_lock *lock;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        expect_acquire(DLOCK_EINVAL, f->a, "lock:ttlbad", bad[i], NULL);
        assert_non_null(strstr(dlock_client_errmsg(f->a), "TTL"));
    }
    assert_false(key_exists(f->redis, "lock:ttlbad"));
    lock = take(f->a, "lock:ttlbad", 30000, NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(dlock_lock_extend(lock, bad[i]), DLOCK_EINVAL);
    /* Nothing was sent: the key keeps its TTL (PEXPIRE 0 would delete it). */
    assert_true(pttl_of(f->redis, "lock:ttlbad") > 20000);
    assert_int_equal(dlock_lock_release(lock), 0);
    /* The shortest TTL is one that can be acquired. */
    take(f->a, "lock:ttlbad", DLOCK_TTL_MIN_MS, NULL);
}

/* Durations beyond DLOCK_DURATION_MAX_MS would overflow nanoseconds: an
 * immediate EBUSY for a long wait, a false loss for a long max-hold. */
static void test_lock_durations_bounded(void **state)
{
    struct fixture *f = *state;
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock = NULL, *held;
    opts.wait_ms = DLOCK_DURATION_MAX_MS + 1;
    assert_int_equal(dlock_lock_acquire(&lock, f->a, "lock:long", 30000, &opts), DLOCK_EINVAL);
    opts.wait_ms = 10000000000000LL; /* 1e13 ms */
    assert_int_equal(dlock_lock_acquire(&lock, f->a, "lock:long", 30000, &opts), DLOCK_EINVAL);
    opts.wait_ms = 0;
    opts.auto_renew = 1;
    opts.max_hold_ms = 10000000000000LL;
    assert_int_equal(dlock_lock_acquire(&lock, f->a, "lock:long", 30000, &opts), DLOCK_EINVAL);
    opts.max_hold_ms = 0;
    opts.backoff_max_ms = -1;
    assert_int_equal(dlock_lock_acquire(&lock, f->a, "lock:long", 30000, &opts), DLOCK_EINVAL);
    assert_null(lock);
    {
        dlock_status *untouched = NULL;
        assert_int_equal(dlock_status_watch(&untouched, f->a, "lock:long", NULL,
                                            DLOCK_DURATION_MAX_MS + 1),
                         DLOCK_EINVAL);
        assert_null(untouched);
    }
    /* The longest wait allowed is a wait, not an immediate EBUSY. */
    held = take(f->b, "lock:long", 30000, NULL);
    opts.backoff_max_ms = 0;
    opts.auto_renew = 0;
    opts.wait_ms = DLOCK_DURATION_MAX_MS;
    {
        long long start = test_now_ms();
        cleanup_now(held); /* not released: the waiter gets it after the TTL */
        freeReplyObject(run(f->redis, "PEXPIRE lock:long 300"));
        lock = take(f->a, "lock:long", 30000, &opts);
        assert_true(test_now_ms() - start >= 250);
    }
    assert_int_equal(dlock_lock_release(lock), 0);
    /* The longest hold allowed is no false loss: renewals at TTL/3 go on. */
    opts.wait_ms = 0;
    opts.auto_renew = 1;
    opts.max_hold_ms = DLOCK_DURATION_MAX_MS;
    lock = take(f->a, "lock:long", 3000, &opts);
    usleep(1500 * 1000); /* past the first renewal */
    assert_true(dlock_lock_held(lock));
    assert_int_equal(dlock_lock_release(lock), 0);
}

static void test_lock_null_arguments(void **state)
{
    struct fixture *f = *state;
    dlock_lock *lock = NULL;
    assert_int_equal(dlock_lock_acquire(NULL, f->a, "lock:null", 1000, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_acquire(&lock, NULL, "lock:null", 1000, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_acquire(&lock, f->a, NULL, 1000, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_adopt(NULL, f->a, "lock:null", TOKEN_OF_NOBODY), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_adopt(&lock, NULL, "lock:null", TOKEN_OF_NOBODY), DLOCK_EINVAL);
    assert_null(lock);
    assert_int_equal(dlock_lock_release(NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_extend(NULL, 1000), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_validity_ms(NULL), 0);
    assert_int_equal(dlock_lock_fence(NULL), 0);
    assert_string_equal(dlock_lock_token(NULL), "");
    assert_string_equal(dlock_lock_name(NULL), "");
    assert_non_null(dlock_client_errmsg(NULL));
    dlock_lock_free(NULL);
    dlock_client_close(NULL);
    assert_false(key_exists(f->redis, "lock:null"));
}

static void test_lock_errmsg_cleared_on_success(void **state)
{
    struct fixture *f = *state;
    dlock_lock *lock = NULL;
    assert_int_equal(dlock_lock_acquire(&lock, f->a, "", 1000, NULL), DLOCK_EINVAL);
    assert_true(strlen(dlock_client_errmsg(f->a)) > 0);
    lock = take(f->a, "lock:errmsg", 1000, NULL);
    assert_string_equal(dlock_client_errmsg(f->a), "");
    assert_int_equal(dlock_lock_release(lock), 0);
    /* A wait whose first tries were refused, once it is granted */
    {
        dlock_acquire_options o = wait_options(10000);
        dlock_lock *other = take(f->b, "lock:errmsg", 1000, NULL);
        lock = take(f->a, "lock:errmsg", 1000, &o);
        assert_true(dlock_lock_attempts(lock) > 1);
        assert_string_equal(dlock_client_errmsg(f->a), "");
        assert_int_equal(dlock_lock_release(lock), 0);
        assert_int_equal(dlock_lock_release(other), DLOCK_ENOTOWNER);
    }
}

static void test_lock_status_tells_holder_and_fence(void **state)
{
    struct fixture *f = *state;
    status_view st;
    dlock_lock *a;
    char host[256] = "";
    long long now_ms = 0;

    assert_int_equal(status_of(&st, f->b, "lock:status"), 0);
    assert_false(st.held);
    assert_int_equal(st.pttl_ms, 0);
    assert_int_equal(st.fence, 0);
    assert_false(st.has_owner);

    a = take(f->a, "lock:status", 30000, NULL);
    assert_int_equal(status_of(&st, f->b, "lock:status"), 0);
    assert_true(st.held);
    assert_true(st.pttl_ms > 20000 && st.pttl_ms <= 30000);
    assert_int_equal(st.fence, dlock_lock_fence(a));
    assert_true(st.has_owner);
    assert_int_equal(st.pid, (long)getpid());
    gethostname(host, sizeof(host) - 1);
    assert_string_equal(st.host, host);
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        now_ms = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
    }
    assert_true(st.since_ms <= now_ms && st.since_ms > now_ms - 60000);
    assert_int_equal(dlock_lock_release(a), 0);

    /* Free again, the fence remembered. */
    assert_int_equal(status_of(&st, f->b, "lock:status"), 0);
    assert_false(st.held);
    assert_true(st.fence > 0);

    /* A holder that is not dlock: held, no owner record. */
    freeReplyObject(run(f->redis, "SET lock:status foreign PX 5000"));
    assert_int_equal(status_of(&st, f->b, "lock:status"), 0);
    assert_true(st.held);
    assert_false(st.has_owner);
    freeReplyObject(run(f->redis, "SET lock:status2 forever"));
    assert_int_equal(status_of(&st, f->b, "lock:status2"), 0);
    assert_int_equal(st.pttl_ms, -1);

    /* A foreign value over a dlock holder's key: its owner record is not
     * this holder's (the record is matched by its whole token). */
    a = take(f->a, "lock:status4", 30000, NULL);
    freeReplyObject(run(f->redis, "SET lock:status4 %b", "", (size_t)0));
    assert_int_equal(status_of(&st, f->b, "lock:status4"), 0);
    assert_true(st.held);
    assert_false(st.has_owner);
    freeReplyObject(run(f->redis, "SET lock:status4 %b", dlock_lock_token(a), (size_t)16));
    assert_int_equal(status_of(&st, f->b, "lock:status4"), 0);
    assert_false(st.has_owner);

    freeReplyObject(run(f->redis, "SADD lock:status3 x"));
    assert_int_equal(status_of(&st, f->b, "lock:status3"), DLOCK_EWRONGTYPE);
    assert_non_null(strstr(dlock_client_errmsg(f->b), "holds a set, not a lock"));
    {
        /* *out is written only on success. */
        dlock_status *untouched = (dlock_status *)&st;
        assert_int_equal(dlock_status_query(&untouched, f->b, "lock:status3"), DLOCK_EWRONGTYPE);
        assert_ptr_equal(untouched, (dlock_status *)&st);
    }
    assert_int_equal(status_of(&st, f->b, "{x}:dlock:owner:x"), DLOCK_EINVAL);
    assert_int_equal(dlock_status_query(NULL, f->b, "lock:status"), DLOCK_EINVAL);
    assert_int_equal(status_of(&st, NULL, "lock:status"), DLOCK_EINVAL);
}

/* The keys a name's lock of each kind leaves on an empty server, in order. */
static redisReply *keys_of(redisContext *redis, dlock_client *c, const char *name,
                           const dlock_acquire_options *o)
{
    freeReplyObject(run(redis, "FLUSHALL"));
    take(c, name, 30000, o); /* no release: the keys stay */
    return kept_reply(run(redis, "KEYS *"));
}

/* Issue #12, item 11: "ax" and "{ax}" used to share their fence, owner
 * record and channel. Each name's keys are its own, for every kind. */
static void test_lock_names_share_no_auxiliary_key(void **state)
{
    struct fixture *f = *state;
    status_view st;
    dlock_lock *a, *b;
    freeReplyObject(run(f->redis, "SET %s 4503599627370496", aux_key("ax", "fence")));
    a = take(f->a, "ax", 30000, NULL);
    b = take(f->b, "{ax}", 30000, NULL);
    assert_int_equal(dlock_lock_fence(a), 4503599627370497ULL);
    assert_true(dlock_lock_fence(b) < 4503599627370496ULL); /* its own counter: the clock */
    assert_int_equal(dlock_lock_release(b), 0);
    assert_true(key_exists(f->redis, aux_key("ax", "owner")));
    assert_int_equal(status_of(&st, f->b, "ax"), 0);
    assert_true(st.held && st.has_owner);
    assert_int_equal(st.fence, dlock_lock_fence(a));
    assert_int_equal(dlock_lock_release(a), 0);

    for (int k = 0; k < 4; k++) { /* mutex, semaphore, fair, shared */
        dlock_acquire_options kind = DLOCK_ACQUIRE_OPTIONS_INIT;
        redisReply *plain, *tagged;
        kind.permits = k == 1 ? 3 : 0;
        kind.fair = k == 2;
        kind.shared = k == 3;
        plain = keys_of(f->redis, f->a, "ax", &kind);
        tagged = keys_of(f->redis, f->a, "{ax}", &kind);
        assert_true(plain->elements >= 2 && tagged->elements >= 2);
        for (size_t i = 0; i < plain->elements; i++)
            for (size_t j = 0; j < tagged->elements; j++)
                if (strcmp(plain->element[i]->str, tagged->element[j]->str) == 0)
                    fail_msg("kind %d: ax and {ax} share %s", k, plain->element[i]->str);
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_lock_classic_sequence),
        T(test_lock_key_has_ttl_and_token),
        T(test_lock_validity_is_conservative),
        T(test_lock_expired_can_be_taken_by_another),
        T(test_lock_extend_only_for_the_owner),
        T(test_lock_adopted_token_releases),
        T(test_lock_adopt_refuses_bad_tokens),
        T(test_lock_plain_set_makes_acquire_busy),
        T(test_lock_release_survives_script_flush),
        T(test_lock_wrong_type_is_not_busy),
        T(test_lock_binary_name_works),
        T(test_lock_name_limits),
        T(test_lock_bad_ttl_refused),
        T(test_lock_durations_bounded),
        T(test_lock_null_arguments),
        T(test_lock_errmsg_cleared_on_success),
        T(test_lock_status_tells_holder_and_fence),
        T(test_lock_names_share_no_auxiliary_key),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
