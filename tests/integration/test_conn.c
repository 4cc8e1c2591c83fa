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
    *state = start_server(args);
    return 0;
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

/* Tries once; returns the code, and releases the lock if it got it. */
static int try_lock(dlock_client *c, const char *name)
{
    dlock_lock *lock = NULL;
    int rc = dlock_lock_acquire(&lock, c, name, 30000, NULL);
    if (rc != 0) {
        assert_null(lock);
        return rc;
    }
    assert_int_equal(dlock_lock_release(kept_lock(lock)), 0);
    cleanup_now(lock);
    return 0;
}

static void assert_lock_works(dlock_client *c, const char *name)
{
    take_and_release(c, name, 30000, NULL);
}

static void test_conn_refused_is_econn(void **state)
{
    char url[64];
    int port = test_free_port();
    dlock_client *c;
    long long start;
    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    c = client_on(url);
    start = test_now_ms();
    assert_int_equal(try_lock(c, "conn:refused"), DLOCK_ECONN);
    assert_true(test_now_ms() - start < 1000LL * test_slowdown());
    assert_non_null(strstr(dlock_client_errmsg(c), url + strlen("redis://")));
    assert_non_null(strstr(dlock_client_errmsg(c), "refused"));
}

/* A listening socket whose accept queue is full: SYNs go unanswered. */
static int full_listener(int *port, int *fillers, size_t n_fillers)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = kept_fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 0), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    for (size_t i = 0; i < n_fillers; i++) {
        fillers[i] = kept_fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        /* Non-blocking: EINPROGRESS, or a queued connection. */
        (void)connect(fillers[i], (struct sockaddr *)&a, sizeof(a));
    }
    usleep(50 * 1000);
    return fd;
}

static void test_conn_full_accept_queue_times_out(void **state)
{
    int fillers[4], port;
    char url[64];
    dlock_client *c;
    long long start, took;
    (void)state;
    full_listener(&port, fillers, 4);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    c = client_with_timeouts(url, 2000, 300);
    start = test_now_ms();
    assert_int_equal(try_lock(c, "conn:silent"), DLOCK_ETIMEDOUT);
    took = test_now_ms() - start;
    assert_true(took >= 300);
    assert_true(took < 2000LL * test_slowdown()); /* within the connect timeout */
    assert_non_null(strstr(dlock_client_errmsg(c), "no reply within"));
}

/* A server that takes the connection but never answers its AUTH (the
 * connection is in the accept queue, never read): the connect timeout,
 * which covers AUTH/SELECT, ends the call, not the command timeout. */
static void test_conn_silent_auth_ends_at_the_connect_timeout(void **state)
{
    int port;
    char url[96];
    dlock_client *c;
    long long start, took;
    (void)state;
    full_listener(&port, NULL, 0);
    snprintf(url, sizeof(url), "redis://:s3cret-z@127.0.0.1:%d", port);
    c = client_with_timeouts(url, 300, 5000);
    start = test_now_ms();
    assert_int_equal(try_lock(c, "conn:mute"), DLOCK_ETIMEDOUT);
    took = test_now_ms() - start;
    if (took < 300 || took > 2500)
        fail_msg("took %lld ms: %s", took, dlock_client_errmsg(c));
    assert_non_null(strstr(dlock_client_errmsg(c), "AUTH/SELECT: no answer within 300 ms"));
    assert_null(strstr(dlock_client_errmsg(c), "s3cret-z"));
}

static void test_conn_paused_server_times_out_then_recovers(void **state)
{
    test_redis *server = *state;
    dlock_client *c = client_with_timeouts(server->url, 2000, 300);
    redisContext *redis;
    dlock_lock *lock;
    long long start, took;
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
    lock = take(c, "paused:4", 30000, NULL);
    redis = connect_to(server);
    assert_key_holds(redis, "paused:4", dlock_lock_token(lock));
    /* The attempts that timed out were cleaned up once the server woke. */
    assert_false(key_exists(redis, "paused:2"));
    assert_false(key_exists(redis, "paused:3"));
    assert_int_equal(dlock_lock_release(lock), 0);
}

/* CLIENT PAUSE holds every command until it ends: an extend times out, and
 * its late reply (1) must not be taken for the answer to the next acquire,
 * which finds the lock held by another owner. */
static void test_conn_late_reply_never_answers_a_newer_call(void **state)
{
    test_redis *server = *state;
    dlock_client *a = client_with_timeouts(server->url, 2000, 400);
    dlock_client *b = client_with_timeouts(server->url, 2000, 400);
    redisContext *redis = connect_to(server);
    dlock_lock *mine = take(a, "late:mine", 30000, NULL);
    dlock_lock *theirs = take(b, "late:theirs", 30000, NULL);

    /* Timeline: extend times out at 400 ms, the acquire starts then, the
     * pause ends at 600 ms, the acquire's deadline is 800 ms. */
    freeReplyObject(run(redis, "CLIENT PAUSE 600 ALL"));
    assert_int_equal(dlock_lock_extend(mine, 30000), DLOCK_ETIMEDOUT);
    expect_acquire(DLOCK_EBUSY, a, "late:theirs", 30000, NULL);

    assert_int_equal(dlock_lock_release(mine), 0);
    assert_int_equal(dlock_lock_release(theirs), 0);
}

static void test_conn_password(void **state)
{
    test_redis *server = *state;
    char url[128];
    const char *u = url;
    dlock_client_options opts = client_options(&u, 1);
    dlock_client *c;

    snprintf(url, sizeof(url), "redis://:wrong-pw-123@127.0.0.1:%d", server->port);
    c = client_on(url);
    assert_int_equal(try_lock(c, "auth:1"), DLOCK_EAUTH);
    assert_null(strstr(dlock_client_errmsg(c), "wrong-pw-123"));
    assert_non_null(strstr(dlock_client_errmsg(c), "WRONGPASS"));

    c = client_on(server->url); /* no password at all */
    assert_int_equal(try_lock(c, "auth:2"), DLOCK_EAUTH);
    assert_non_null(strstr(dlock_client_errmsg(c), "NOAUTH"));

    snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d", PASSWORD, server->port);
    assert_lock_works(client_on(url), "auth:3");

    /* The password from the options overrides the URL's. */
    snprintf(url, sizeof(url), "redis://:wrong-pw-123@127.0.0.1:%d", server->port);
    opts.password = PASSWORD;
    assert_lock_works(client_with(&opts), "auth:4");
}

static void test_conn_acl_user(void **state)
{
    test_redis *server = *state;
    char url[128];
    dlock_client *c;
    snprintf(url, sizeof(url), "redis://alice:alice-pw@127.0.0.1:%d", server->port);
    assert_lock_works(client_on(url), "acl:1");

    snprintf(url, sizeof(url), "redis://alice:not-hers@127.0.0.1:%d", server->port);
    c = client_on(url);
    assert_int_equal(try_lock(c, "acl:2"), DLOCK_EAUTH);
    assert_null(strstr(dlock_client_errmsg(c), "not-hers"));
}

static int key_in_db(const test_redis *server, int db, const char *key)
{
    redisContext *redis = connect_to(server);
    freeReplyObject(run(redis, "SELECT %d", db));
    return key_exists(redis, key);
}

static void test_conn_unix_socket_and_databases(void **state)
{
    test_redis *server = *state;
    char url[256];
    dlock_client *c;
    dlock_lock *lock;

    snprintf(url, sizeof(url), "%s?db=2", server->unix_url);
    lock = take(client_on(url), "db:unix", 30000, NULL);
    assert_true(key_in_db(server, 2, "db:unix"));
    assert_false(key_in_db(server, 0, "db:unix"));
    assert_int_equal(dlock_lock_release(lock), 0);

    snprintf(url, sizeof(url), "%s/3", server->url);
    lock = take(client_on(url), "db:tcp", 30000, NULL);
    assert_true(key_in_db(server, 3, "db:tcp"));
    assert_int_equal(dlock_lock_release(lock), 0);

    snprintf(url, sizeof(url), "%s/99999", server->url); /* no such database */
    c = client_on(url);
    assert_int_equal(try_lock(c, "db:none"), DLOCK_ESERVER);
    assert_non_null(strstr(dlock_client_errmsg(c), "DB index"));
}

static void test_conn_ipv6_literal(void **state)
{
    test_redis *server = *state;
    char url[128];
    snprintf(url, sizeof(url), "redis://[::1]:%d", server->port);
    assert_lock_works(client_on(url), "ipv6:1");
    /* localhost may resolve to ::1 and 127.0.0.1: either address serves. */
    snprintf(url, sizeof(url), "redis://localhost:%d", server->port);
    assert_lock_works(client_on(url), "ipv6:2");
}

static void test_conn_reconnects_after_restart(void **state)
{
    test_redis *server = *state;
    dlock_client *c = client_on(server->url);
    assert_lock_works(c, "restart:1");
    assert_int_equal(test_redis_restart(server), 0);
    assert_lock_works(c, "restart:2"); /* first call after the restart */
    test_redis_kill(server);
    assert_int_equal(try_lock(c, "restart:3"), DLOCK_ECONN);
    assert_int_equal(test_redis_restart(server), 0);
    assert_lock_works(c, "restart:4");
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
        fake_server *fake = start_fake_server(k->reply, strlen(k->reply), k->close_after);
        dlock_client *c = client_with_timeouts(fake->url, 1000, 500);
        int rc = try_lock(c, "hostile");
        if (rc != k->expected)
            fail_msg("reply %zu (%s): got %s (%s)", i, k->reply, dlock_err_name(rc),
                     dlock_client_errmsg(c));
        if (k->in_message && !strstr(dlock_client_errmsg(c), k->in_message))
            fail_msg("reply %zu: message \"%s\" lacks \"%s\"", i, dlock_client_errmsg(c),
                     k->in_message);
        cleanup_now(c);
        cleanup_now(fake);
    }
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* What the test below changes of the process, put back at teardown too:
 * the next tests must not run with an alarm every millisecond or without
 * descriptors. */
struct process_state {
    struct sigaction alarm;
    struct rlimit files;
};

static void restore_process(void *arg)
{
    struct process_state *saved = arg;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &saved->alarm, NULL);
    setrlimit(RLIMIT_NOFILE, &saved->files);
    free(saved);
}

/* A signal every millisecond (no SA_RESTART: every wait sees EINTR), a
 * server that hangs up while we write (SIGPIPE left at its default, which
 * would kill us), and no file descriptor left: each gives a clear result. */
static void test_conn_signals_and_no_descriptors(void **state)
{
    test_redis *server = *state;
    dlock_client *a = client_on(server->url), *b = client_on(server->url);
    struct sigaction sa = {.sa_handler = on_alarm};
    struct itimerval every_ms = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
    dlock_acquire_options opts = wait_options(3000);
    struct process_state *saved = malloc(sizeof(*saved));
    struct rlimit low;
    dlock_lock *lock;
    fake_server *fake;
    dlock_client *c;

    assert_non_null(saved);
    getrlimit(RLIMIT_NOFILE, &saved->files);
    sigaction(SIGALRM, &sa, &saved->alarm);
    cleanup_keep(saved, restore_process);
    setitimer(ITIMER_REAL, &every_ms, NULL);
    take(a, "conn:eintr", 300, NULL);
    lock = take(b, "conn:eintr", 300, &opts); /* waits through the signals */
    assert_int_equal(dlock_lock_release(lock), 0);
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &saved->alarm, NULL);

    signal(SIGPIPE, SIG_DFL);
    fake = start_fake_server("", 0, true);
    c = client_with_timeouts(fake->url, 1000, 500);
    expect_acquire(DLOCK_ECONN, c, "conn:pipe", 30000, NULL);

    low = saved->files;
    low.rlim_cur = 3; /* stdin, stdout, stderr: no socket possible */
    c = client_on(server->url);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    lock = NULL;
    assert_int_equal(dlock_lock_acquire(&lock, c, "conn:nofd", 30000, NULL), DLOCK_ECONN);
    setrlimit(RLIMIT_NOFILE, &saved->files);
    assert_non_null(strstr(dlock_client_errmsg(c), "socket"));
    take_and_release(c, "conn:nofd", 30000, NULL); /* fine again */
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
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
#define S(name, setup) cmocka_unit_test_setup_teardown(name, setup, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_conn_refused_is_econn),
        T(test_conn_full_accept_queue_times_out),
        T(test_conn_silent_auth_ends_at_the_connect_timeout),
        S(test_conn_paused_server_times_out_then_recovers, setup_server),
        S(test_conn_late_reply_never_answers_a_newer_call, setup_server),
        S(test_conn_password, setup_password_server),
        S(test_conn_acl_user, setup_acl_server),
        S(test_conn_unix_socket_and_databases, setup_server),
        S(test_conn_ipv6_literal, setup_server),
        S(test_conn_reconnects_after_restart, setup_server),
        T(test_conn_hostile_replies),
        T(test_conn_open_refuses_bad_options),
        S(test_conn_signals_and_no_descriptors, setup_server),
    };
#undef T
#undef S
    return cmocka_run_group_tests(tests, NULL, NULL);
}
