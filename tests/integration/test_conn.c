/* Connections: refused, silent and paused servers, passwords and ACL users,
 * Unix sockets, databases, IPv6, reconnects, and replies a real Redis would
 * not send. */
#include "fake_server.h"
#include "helpers.h"

#include <dlock.h>

#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#define PASSWORD "s3cret-pw"

static int start_with(void **state, const char *const *args)
{
    test_redis *server = calloc(1, sizeof(*server));
    *state = server;
    return test_redis_start(server, args);
}

static int setup_password_server(void **state)
{
    static const char *const args[] = {"--requirepass", PASSWORD, NULL};
    return start_with(state, args);
}

static int setup_acl_server(void **state)
{
    static const char *const args[] = {"--user", "alice", "on", ">alice-pw", "~*", "&*", "+@all",
                                       NULL};
    return start_with(state, args);
}

/* Tries once; returns the code and frees any lock taken. */
static int try_lock(dlock_client *c, const char *name)
{
    dlock_lock *lock = NULL;
    int rc = dlock_lock_acquire(&lock, c, name, 30000, NULL);
    if (rc == 0) {
        assert_int_equal(dlock_lock_release(lock), 0);
        dlock_lock_free(lock);
    } else {
        assert_null(lock);
    }
    return rc;
}

static void assert_lock_works(dlock_client *c, const char *name)
{
    int rc = try_lock(c, name);
    if (rc != 0)
        fail_msg("%s: %s: %s", name, dlock_err_name(rc), dlock_client_errmsg(c));
}

static void test_conn_refused_is_econn(void **state)
{
    char url[64];
    int port = test_free_port();
    dlock_client *c;
    long long start;
    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    c = open_client(url, 0, 0);
    start = test_now_ms();
    assert_int_equal(try_lock(c, "conn:refused"), DLOCK_ECONN);
    assert_true(test_now_ms() - start < 1000LL * test_slowdown());
    assert_non_null(strstr(dlock_client_errmsg(c), url + strlen("redis://")));
    assert_non_null(strstr(dlock_client_errmsg(c), "refused"));
    dlock_client_close(c);
}

/* A listening socket whose accept queue is full: SYNs go unanswered. */
static int full_listener(int *port, int *fillers, size_t n_fillers)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 0), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    for (size_t i = 0; i < n_fillers; i++) {
        fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        /* Non-blocking: EINPROGRESS, or a queued connection. */
        (void)connect(fillers[i], (struct sockaddr *)&a, sizeof(a));
    }
    usleep(50 * 1000);
    return fd;
}

static void test_conn_full_accept_queue_times_out(void **state)
{
    int fillers[4], port, fd = full_listener(&port, fillers, 4);
    char url[64];
    dlock_client *c;
    long long start, took;
    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    c = open_client(url, 2000, 300);
    start = test_now_ms();
    assert_int_equal(try_lock(c, "conn:silent"), DLOCK_ETIMEDOUT);
    took = test_now_ms() - start;
    assert_true(took >= 300);
    assert_true(took < 2000LL * test_slowdown()); /* within the connect timeout */
    assert_non_null(strstr(dlock_client_errmsg(c), "no reply within"));
    dlock_client_close(c);
    for (size_t i = 0; i < 4; i++)
        close(fillers[i]);
    close(fd);
}

static void test_conn_paused_server_times_out_then_recovers(void **state)
{
    test_redis *server = *state;
    dlock_client *c = open_client(server->url, 2000, 300);
    redisContext *redis;
    dlock_lock *lock = NULL;
    long long start, took;
    char *holder;
    assert_lock_works(c, "paused:1");

    test_redis_pause(server);
    start = test_now_ms();
    assert_int_equal(try_lock(c, "paused:2"), DLOCK_ETIMEDOUT);
    took = test_now_ms() - start;
    assert_true(took >= 300);
    assert_true(took < 5000LL * test_slowdown());
    /* A fresh connection to the paused server cannot help either. */
    assert_int_equal(try_lock(c, "paused:3"), DLOCK_ETIMEDOUT);
    test_redis_resume(server);

    /* The late replies of the calls that timed out are discarded, never read
     * as the answer to this one. */
    assert_int_equal(dlock_lock_acquire(&lock, c, "paused:4", 30000, NULL), 0);
    redis = test_redis_connect(server, NULL);
    holder = get_string(redis, "paused:4");
    assert_string_equal(holder, dlock_lock_token(lock));
    free(holder);
    /* The attempts that timed out were cleaned up once the server woke. */
    assert_false(key_exists(redis, "paused:2"));
    assert_false(key_exists(redis, "paused:3"));
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    redisFree(redis);
    dlock_client_close(c);
}

/* CLIENT PAUSE holds every command until it ends: an extend times out, and
 * its late reply (1) must not be taken for the answer to the next acquire,
 * which finds the lock held by another owner. */
static void test_conn_late_reply_never_answers_a_newer_call(void **state)
{
    test_redis *server = *state;
    dlock_client *a = open_client(server->url, 2000, 400);
    dlock_client *b = open_client(server->url, 2000, 400);
    redisContext *redis = test_redis_connect(server, NULL);
    dlock_lock *mine = NULL, *theirs = NULL, *stolen = NULL;
    assert_int_equal(dlock_lock_acquire(&mine, a, "late:mine", 30000, NULL), 0);
    assert_int_equal(dlock_lock_acquire(&theirs, b, "late:theirs", 30000, NULL), 0);

    /* Timeline: extend times out at 400 ms, the acquire starts then, the
     * pause ends at 600 ms, the acquire's deadline is 800 ms. */
    freeReplyObject(run(redis, "CLIENT PAUSE 600 ALL"));
    assert_int_equal(dlock_lock_extend(mine, 30000), DLOCK_ETIMEDOUT);
    assert_int_equal(dlock_lock_acquire(&stolen, a, "late:theirs", 30000, NULL), DLOCK_EBUSY);
    assert_null(stolen);

    assert_int_equal(dlock_lock_release(mine), 0);
    assert_int_equal(dlock_lock_release(theirs), 0);
    dlock_lock_free(mine);
    dlock_lock_free(theirs);
    redisFree(redis);
    dlock_client_close(a);
    dlock_client_close(b);
}

static void test_conn_password(void **state)
{
    test_redis *server = *state;
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    char url[128];
    const char *u = url;
    dlock_client *c;

    snprintf(url, sizeof(url), "redis://:wrong-pw-123@127.0.0.1:%d", server->port);
    c = open_client(url, 0, 0);
    assert_int_equal(try_lock(c, "auth:1"), DLOCK_EAUTH);
    assert_null(strstr(dlock_client_errmsg(c), "wrong-pw-123"));
    assert_non_null(strstr(dlock_client_errmsg(c), "WRONGPASS"));
    dlock_client_close(c);

    c = open_client(server->url, 0, 0); /* no password at all */
    assert_int_equal(try_lock(c, "auth:2"), DLOCK_EAUTH);
    assert_non_null(strstr(dlock_client_errmsg(c), "NOAUTH"));
    dlock_client_close(c);

    snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d", PASSWORD, server->port);
    c = open_client(url, 0, 0);
    assert_lock_works(c, "auth:3");
    dlock_client_close(c);

    /* The password from the options overrides the URL's. */
    snprintf(url, sizeof(url), "redis://:wrong-pw-123@127.0.0.1:%d", server->port);
    opts.urls = &u;
    opts.n_urls = 1;
    opts.password = PASSWORD;
    assert_int_equal(dlock_client_open(&c, &opts, NULL, 0), 0);
    assert_lock_works(c, "auth:4");
    dlock_client_close(c);
}

static void test_conn_acl_user(void **state)
{
    test_redis *server = *state;
    char url[128];
    dlock_client *c;
    snprintf(url, sizeof(url), "redis://alice:alice-pw@127.0.0.1:%d", server->port);
    c = open_client(url, 0, 0);
    assert_lock_works(c, "acl:1");
    dlock_client_close(c);

    snprintf(url, sizeof(url), "redis://alice:not-hers@127.0.0.1:%d", server->port);
    c = open_client(url, 0, 0);
    assert_int_equal(try_lock(c, "acl:2"), DLOCK_EAUTH);
    assert_null(strstr(dlock_client_errmsg(c), "not-hers"));
    dlock_client_close(c);
}

static int key_in_db(const test_redis *server, int db, const char *key)
{
    redisContext *redis = test_redis_connect(server, NULL);
    int exists;
    freeReplyObject(run(redis, "SELECT %d", db));
    exists = key_exists(redis, key);
    redisFree(redis);
    return exists;
}

static void test_conn_unix_socket_and_databases(void **state)
{
    test_redis *server = *state;
    char url[256];
    dlock_client *c;
    dlock_lock *lock;

    snprintf(url, sizeof(url), "%s?db=2", server->unix_url);
    c = open_client(url, 0, 0);
    assert_int_equal(dlock_lock_acquire(&lock, c, "db:unix", 30000, NULL), 0);
    assert_true(key_in_db(server, 2, "db:unix"));
    assert_false(key_in_db(server, 0, "db:unix"));
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);

    snprintf(url, sizeof(url), "%s/3", server->url);
    c = open_client(url, 0, 0);
    assert_int_equal(dlock_lock_acquire(&lock, c, "db:tcp", 30000, NULL), 0);
    assert_true(key_in_db(server, 3, "db:tcp"));
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);

    snprintf(url, sizeof(url), "%s/99999", server->url); /* no such database */
    c = open_client(url, 0, 0);
    assert_int_equal(try_lock(c, "db:none"), DLOCK_ESERVER);
    assert_non_null(strstr(dlock_client_errmsg(c), "DB index"));
    dlock_client_close(c);
}

static void test_conn_ipv6_literal(void **state)
{
    test_redis *server = *state;
    char url[128];
    dlock_client *c;
    snprintf(url, sizeof(url), "redis://[::1]:%d", server->port);
    c = open_client(url, 0, 0);
    assert_lock_works(c, "ipv6:1");
    dlock_client_close(c);
    /* localhost may resolve to ::1 and 127.0.0.1: either address serves. */
    snprintf(url, sizeof(url), "redis://localhost:%d", server->port);
    c = open_client(url, 0, 0);
    assert_lock_works(c, "ipv6:2");
    dlock_client_close(c);
}

static void test_conn_reconnects_after_restart(void **state)
{
    test_redis *server = *state;
    dlock_client *c = open_client(server->url, 0, 0);
    assert_lock_works(c, "restart:1");
    assert_int_equal(test_redis_restart(server), 0);
    assert_lock_works(c, "restart:2"); /* first call after the restart */
    test_redis_kill(server);
    assert_int_equal(try_lock(c, "restart:3"), DLOCK_ECONN);
    assert_int_equal(test_redis_restart(server), 0);
    assert_lock_works(c, "restart:4");
    dlock_client_close(c);
}

struct hostile_case {
    const char *reply;
    bool close_after;
    int expected;
    const char *in_message;
};

static void test_conn_hostile_replies(void **state)
{
    static const struct hostile_case cases[] = {
        {"-LOADING Redis is loading the dataset in memory\r\n", false, DLOCK_ESERVER, "LOADING"},
        {"-BUSY Redis is busy running a script.\r\n", false, DLOCK_ESERVER, "BUSY"},
        {"-READONLY You can't write against a read only replica.\r\n", false, DLOCK_ESERVER,
         "READONLY"},
        {"-OOM command not allowed when used memory > 'maxmemory'.\r\n", false, DLOCK_ESERVER,
         "OOM"},
        {"-NOAUTH Authentication required.\r\n", false, DLOCK_EAUTH, "NOAUTH"},
        {"-ERR The user executing the script can't run this command\r\n", false, DLOCK_EAUTH,
         "can't run"},
        {"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", false,
         DLOCK_EWRONGTYPE, "WRONGTYPE"},
        {"-WRONGPASS invalid username-password pair or user is disabled.\r\n", false,
         DLOCK_EAUTH, "WRONGPASS"},
        {"-NOPERM this user has no permissions to run the 'evalsha' command\r\n", false,
         DLOCK_EAUTH, "NOPERM"},
        /* Followed (a cluster, as far as the client knows), to a port that is closed. */
        {"-MOVED 3999 127.0.0.1:1\r\n", false, DLOCK_ECONN, "127.0.0.1:1:"},
        {"-WHATEVER something no Redis says\r\n", false, DLOCK_ESERVER, "WHATEVER"},
        {"$99999999999\r\n", false, DLOCK_EPROTO, NULL},
        {"\x01\x02\xff garbage\r\n", false, DLOCK_EPROTO, NULL},
        {"+OK\r\n", false, DLOCK_EPROTO, NULL},
        {"*1\r\n:1\r\n", false, DLOCK_EPROTO, NULL},
        {"*2\r\n:1\r\n$3\r\nabc\r\n", false, DLOCK_EPROTO, NULL},
        {"*2\r\n:7\r\n:0\r\n", false, DLOCK_EPROTO, NULL},
        {"*100000\r\n", false, DLOCK_EPROTO, "reply too large"},
        {"HTTP/1.1 400 Bad Request\r\n\r\n", false, DLOCK_EPROTO, "got \"H\" as reply type byte"},
        {"*2\r\n:1\r\n$16\r\n12", true, DLOCK_ECONN, "closed"},
        {"", true, DLOCK_ECONN, "closed"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct hostile_case *k = &cases[i];
        fake_server fake;
        dlock_client *c;
        int rc;
        assert_int_equal(fake_server_start(&fake, k->reply, strlen(k->reply), k->close_after), 0);
        c = open_client(fake.url, 1000, 500);
        rc = try_lock(c, "hostile");
        if (rc != k->expected)
            fail_msg("reply %zu (%s): got %s (%s)", i, k->reply, dlock_err_name(rc),
                     dlock_client_errmsg(c));
        if (k->in_message && !strstr(dlock_client_errmsg(c), k->in_message))
            fail_msg("reply %zu: message \"%s\" lacks \"%s\"", i, dlock_client_errmsg(c),
                     k->in_message);
        dlock_client_close(c);
        fake_server_stop(&fake);
    }
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* A signal every millisecond (no SA_RESTART: every wait sees EINTR), a
 * server that hangs up while we write (SIGPIPE left at its default, which
 * would kill us), and no file descriptor left: each gives a clear result. */
static void test_conn_signals_and_no_descriptors(void **state)
{
    test_redis *server = *state;
    dlock_client *a = open_client(server->url, 0, 0), *b = open_client(server->url, 0, 0);
    struct sigaction sa = {.sa_handler = on_alarm}, old_sa;
    struct itimerval every_ms = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    struct rlimit old_limit, low;
    dlock_lock *held, *lock = NULL;
    fake_server fake;
    dlock_client *c;

    sigaction(SIGALRM, &sa, &old_sa);
    setitimer(ITIMER_REAL, &every_ms, NULL);
    held = must_acquire(a, "conn:eintr", 300, NULL);
    opts.wait_ms = 3000;
    lock = must_acquire(b, "conn:eintr", 300, &opts); /* waits through the signals */
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_lock_free(held);
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old_sa, NULL);

    signal(SIGPIPE, SIG_DFL);
    assert_int_equal(fake_server_start(&fake, "", 0, true), 0);
    c = open_client(fake.url, 1000, 500);
    lock = NULL;
    assert_int_equal(dlock_lock_acquire(&lock, c, "conn:pipe", 30000, NULL), DLOCK_ECONN);
    dlock_client_close(c);
    fake_server_stop(&fake);

    getrlimit(RLIMIT_NOFILE, &old_limit);
    low = old_limit;
    low.rlim_cur = 3; /* stdin, stdout, stderr: no socket possible */
    c = open_client(server->url, 0, 0);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    lock = NULL;
    assert_int_equal(dlock_lock_acquire(&lock, c, "conn:nofd", 30000, NULL), DLOCK_ECONN);
    setrlimit(RLIMIT_NOFILE, &old_limit);
    assert_non_null(strstr(dlock_client_errmsg(c), "socket"));
    lock = must_acquire(c, "conn:nofd", 30000, NULL); /* fine again */
    assert_int_equal(dlock_lock_release(lock), 0);
    dlock_lock_free(lock);
    dlock_client_close(c);
    dlock_client_close(a);
    dlock_client_close(b);
}

static void test_conn_open_refuses_bad_options(void **state)
{
    const char *urls[] = {"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:1"};
    dlock_client_options opts, one_node;
    dlock_client *c = NULL;
    char why[256];
    (void)state;

    assert_int_equal(dlock_client_options_init(&opts, 99), DLOCK_EINVAL);
    assert_int_equal(dlock_client_options_init(NULL, DLOCK_CLIENT_OPTIONS_VERSION), DLOCK_EINVAL);
    assert_int_equal(dlock_client_options_init(&opts, DLOCK_CLIENT_OPTIONS_VERSION), 0);
    assert_int_equal(dlock_client_open(NULL, &opts, why, sizeof(why)), DLOCK_EINVAL);
    one_node = opts;
    one_node.urls = urls;
    one_node.n_urls = 1;

#define EXPECT_REFUSED(field_change, text)                                                         \
    do {                                                                                           \
        opts = one_node;                                                                           \
        field_change;                                                                              \
        assert_int_equal(dlock_client_open(&c, &opts, why, sizeof(why)), DLOCK_EINVAL);            \
        assert_null(c);                                                                            \
        if (!strstr(why, text))                                                                    \
            fail_msg("\"%s\" does not say \"%s\"", why, text);                                     \
    } while (0)
    EXPECT_REFUSED(opts.version = 7, "version");
    EXPECT_REFUSED(opts.n_urls = 2, "two servers");
    EXPECT_REFUSED(opts.n_urls = 3, "one server");
    EXPECT_REFUSED(opts.n_urls = 16, "too many");
    EXPECT_REFUSED(opts.urls = NULL, "urls");
    EXPECT_REFUSED(opts.connect_timeout_ms = -1, "negative");
    EXPECT_REFUSED(opts.command_timeout_ms = -5, "negative");
    EXPECT_REFUSED(opts.node_timeout_ms = -5, "negative");
    EXPECT_REFUSED(opts.command_timeout_ms = DLOCK_DURATION_MAX_MS + 1, "too large");
    /* A client that failed to open closed no descriptor of ours: its
     * connections were never made (fd 0 used to go). */
    assert_true(fcntl(STDIN_FILENO, F_GETFD) >= 0);
    EXPECT_REFUSED(opts.fence_ttl_ms = -1, "negative");
    EXPECT_REFUSED(opts.drift_factor = 0.7, "drift");
    EXPECT_REFUSED(opts.drift_factor = -0.1, "drift");
    EXPECT_REFUSED(opts.user = "bob", "password");
    EXPECT_REFUSED(urls[0] = "redis://:hunter2@h:0", "port");
#undef EXPECT_REFUSED
    assert_null(strstr(why, "hunter2"));
    /* NULL `why` is fine. */
    opts.urls = urls;
    assert_int_equal(dlock_client_open(&c, &opts, NULL, 0), DLOCK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_refused_is_econn),
        cmocka_unit_test(test_conn_full_accept_queue_times_out),
        cmocka_unit_test_setup_teardown(test_conn_paused_server_times_out_then_recovers, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_conn_late_reply_never_answers_a_newer_call, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_conn_password, setup_password_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_conn_acl_user, setup_acl_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_conn_unix_socket_and_databases, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_conn_ipv6_literal, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_conn_reconnects_after_restart, setup_server, teardown_server),
        cmocka_unit_test(test_conn_hostile_replies),
        cmocka_unit_test(test_conn_open_refuses_bad_options),
        cmocka_unit_test_setup_teardown(test_conn_signals_and_no_descriptors, setup_server,
                                        teardown_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
