/* The words the library sends, byte for byte: every script call (EVALSHA,
 * its EVAL fallback, a Redlock connection's SCRIPT LOAD) of a fixed
 * sequence of calls of every kind, as a server's MONITOR saw it, against
 * the record in test_wire.txt. What differs from run to run is named
 * instead: scripts (S1, S2... by SHA1, in order of appearance), tokens (T1,
 * T2...), owner records, the server's clock (fences), and an audit entry's
 * host, pid and milliseconds. A try that a wait repeats with the same
 * words as its connection's call before is left out: how often a waiter
 * tries is a matter of time. A change of the KEYS or ARGV of any call is a
 * change of that file, and of the README's wire contract.
 * DLOCK_WIRE_RECORD=1 writes the record instead of comparing with it. */
#include "helpers.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>

#define LABELS_MAX 64
#define SLOW_MS 60000LL /* a waiter's backoff, a holder's TTL: no try comes from the clock */

/* What the test saw: the lines, the names given so far, and each
 * connection's last line (from where it starts in `text`). */
struct capture {
    char *text;
    size_t len, cap;
    char shas[LABELS_MAX][41];
    char tokens[LABELS_MAX][DLOCK_TOKEN_LEN + 1];
    size_t n_shas, n_tokens;
    char clients[LABELS_MAX][64];
    char *last[LABELS_MAX];
    size_t n_clients;
};

static struct capture seen;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void put(const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    if (seen.len + (size_t)n + 1 > seen.cap) {
        seen.cap = (seen.len + (size_t)n + 1) * 2;
        seen.text = realloc(seen.text, seen.cap);
        assert_non_null(seen.text);
    }
    va_start(ap, fmt);
    vsnprintf(seen.text + seen.len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    seen.len += (size_t)n;
}

/* The label of `value` in `table` (S or T, then its place), added if new. */
static int label_of(char (*table)[41], size_t *n, const char *value)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(table[i], value) == 0)
            return (int)i + 1;
    assert_true(*n < LABELS_MAX);
    snprintf(table[*n], 41, "%s", value);
    return (int)++*n;
}

static int token_label(const char *token)
{
    for (size_t i = 0; i < seen.n_tokens; i++)
        if (strcmp(seen.tokens[i], token) == 0)
            return (int)i + 1;
    assert_true(seen.n_tokens < LABELS_MAX);
    snprintf(seen.tokens[seen.n_tokens], sizeof(seen.tokens[0]), "%s", token);
    return (int)++seen.n_tokens;
}

static int script_label(const char *body, size_t len)
{
    unsigned char md[SHA_DIGEST_LENGTH];
    char hex[41];
    SHA1((const unsigned char *)body, len, md);
    for (size_t i = 0; i < SHA_DIGEST_LENGTH; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return label_of(seen.shas, &seen.n_shas, hex);
}

static bool all(const char *s, const char *set)
{
    return *s && strspn(s, set) == strlen(s);
}

/* One argument of a MONITOR line, unquoted and unescaped (sdscatrepr's
 * escapes) into out; returns where the next one starts, or NULL. */
static const char *next_arg(const char *p, char *out, size_t *len)
{
    *len = 0;
    while (*p == ' ')
        p++;
    if (*p != '"')
        return NULL;
    for (p++; *p && *p != '"'; p++) {
        char ch = *p;
        if (ch == '\\') {
            static const char from[] = "nrtab\\\"", to[] = "\n\r\t\a\b\\\"";
            const char *at = strchr(from, *++p);
            if (*p == 'x') {
                ch = (char)strtol((char[]){p[1], p[2], '\0'}, NULL, 16);
                p += 2;
            } else {
                assert_non_null(at);
                ch = to[at - from];
            }
        }
        out[(*len)++] = ch;
    }
    out[*len] = '\0';
    return *p == '"' ? p + 1 : NULL;
}

/* An argument as the record names it; `audit`: the call ends with the
 * audit's trailer (n words in all, the last "dlock:audit"), whose host,
 * pid, held and left ms are this run's. */
static void put_arg(const char *arg, size_t len, int at, int n, bool audit)
{
    const char *token = strstr(arg, "\"token\":\"");
    if (strncmp(arg, "{\"host\":", 8) == 0 && token) {
        char t[DLOCK_TOKEN_LEN + 1];
        snprintf(t, sizeof(t), "%s", token + 9);
        put(" <owner T%d>", token_label(t));
    } else if (len == DLOCK_TOKEN_LEN && all(arg, "0123456789abcdef")) {
        put(" T%d", token_label(arg));
    } else if (len >= 13 && all(arg, "0123456789")) {
        put(" <clock>");
    } else if (audit && at == n - 7) {
        put(" <host>");
    } else if (audit && at == n - 6) {
        put(" <pid>");
    } else if (audit && (at == n - 4 || at == n - 3) && len) {
        put(" <ms>");
    } else {
        put(" \"%s\"", arg);
    }
}

/* Keeps the line put since `from` unless it repeats the last one of the
 * connection `client`. */
static void keep_unless_repeated(const char *client, size_t client_len, size_t from)
{
    size_t i = 0;
    while (i < seen.n_clients &&
           !(strlen(seen.clients[i]) == client_len &&
             memcmp(seen.clients[i], client, client_len) == 0))
        i++;
    if (i == seen.n_clients) {
        assert_true(seen.n_clients < LABELS_MAX && client_len < sizeof(seen.clients[0]));
        memcpy(seen.clients[i], client, client_len);
        seen.clients[seen.n_clients++][client_len] = '\0';
    }
    if (seen.last[i] && strcmp(seen.last[i], seen.text + from) == 0) {
        seen.len = from;
        seen.text[from] = '\0';
        return;
    }
    free(seen.last[i]);
    seen.last[i] = strdup(seen.text + from);
    assert_non_null(seen.last[i]);
}

/* One MONITOR line: a client's script call goes into the record. */
static void put_line(const char *line)
{
    enum { ARGS_MAX = 64 };
    const char *client = strchr(line, '['), *p = strstr(line, "] ");
    char *args[ARGS_MAX];
    size_t lens[ARGS_MAX], from = seen.len, client_len;
    int n = 0;
    if (!client || !p || strstr(line, " lua] "))
        return;
    client_len = (size_t)(p - client);
    for (p += 2; p && *p && n < ARGS_MAX; n++) {
        args[n] = malloc(strlen(p) + 1);
        assert_non_null(args[n]);
        p = next_arg(p, args[n], &lens[n]);
    }
    if (n >= 2 && (strcasecmp(args[0], "evalsha") == 0 || strcasecmp(args[0], "eval") == 0 ||
                   (strcasecmp(args[0], "script") == 0 && strcasecmp(args[1], "load") == 0))) {
        bool sha = strcasecmp(args[0], "evalsha") == 0;
        int body = strcasecmp(args[0], "script") == 0 ? 2 : 1;
        bool audit = n >= 10 && strcmp(args[n - 1], "dlock:audit") == 0;
        put("%s", args[0]);
        for (int i = 1; i < n; i++) {
            if (i == body && sha)
                put(" S%d", label_of(seen.shas, &seen.n_shas, args[i]));
            else if (i == body)
                put(" S%d", script_label(args[i], lens[i]));
            else
                put_arg(args[i], lens[i], i, n, audit);
        }
        put("\n");
        keep_unless_repeated(client, client_len, from);
    }
    for (int i = 0; i < n; i++)
        free(args[i]);
}

/* MONITOR on `server`, for one part of the record. */
static redisContext *watch(const test_redis *server, const char *title)
{
    redisContext *monitor = test_redis_connect(server, NULL);
    redisReply *r;
    assert_non_null(monitor);
    r = run(monitor, "MONITOR");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    put("## %s\n", title);
    return monitor;
}

/* The end of a part: a status on node 0 alone, which waits for that
 * node's answer, so that every earlier call of `c` to it was served (a
 * Redlock client does not wait for every node); then what MONITOR saw up
 * to an ECHO after it. */
static void unwatch(redisContext *monitor, const test_redis *server, dlock_client *c)
{
    redisContext *plain = test_redis_connect(server, NULL);
    dlock_status *st = NULL;
    assert_int_equal(dlock_status_query_node(&st, c, "wire:end", 0), 0);
    dlock_status_free(st);
    freeReplyObject(run(plain, "ECHO wire:end"));
    for (;;) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(monitor, (void **)&r), REDIS_OK);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        if (strstr(r->str, "\"ECHO\" \"wire:end\"") || strstr(r->str, "\"echo\" \"wire:end\"")) {
            freeReplyObject(r);
            break;
        }
        put_line(r->str);
        freeReplyObject(r);
    }
    redisFree(plain);
    redisFree(monitor);
}

static dlock_acquire_options try_once(void)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    return o;
}

/* A wait whose only wake-ups are messages: its backoff and the holders'
 * TTLs are longer than the test. */
static dlock_acquire_options waiting(int64_t wait_ms)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    o.wait_ms = wait_ms;
    o.backoff_max_ms = SLOW_MS;
    return o;
}

static dlock_acquire_options permits(unsigned n)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    o.permits = n;
    return o;
}

static dlock_acquire_options fair(int64_t wait_ms)
{
    dlock_acquire_options o = waiting(wait_ms);
    o.fair = 1;
    o.lease_ms = SLOW_MS;
    return o;
}

static dlock_acquire_options shared(void)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    o.shared = 1;
    return o;
}

static void status(dlock_client *c, const char *name)
{
    dlock_status *st = NULL;
    assert_int_equal(dlock_status_query(&st, c, name), 0);
    dlock_status_free(st);
}

static void refused(dlock_client *c, const char *name, int64_t ttl_ms,
                    const dlock_acquire_options *o, int rc)
{
    dlock_lock *l = NULL;
    assert_int_equal(dlock_lock_acquire(&l, c, name, ttl_ms, o), rc);
    assert_null(l);
}

/* Adopts `of`'s token, then extends (when ttl_ms) and releases by it. */
static void by_token(dlock_client *c, const dlock_lock *of, int64_t ttl_ms, int rc)
{
    dlock_lock *l = NULL;
    assert_int_equal(dlock_lock_adopt(&l, c, dlock_lock_name(of), dlock_lock_token(of)), 0);
    if (ttl_ms)
        assert_int_equal(dlock_lock_extend(l, ttl_ms), 0);
    assert_int_equal(dlock_lock_release(l), rc);
    dlock_lock_free(l);
}

static void release(dlock_lock *l, int rc)
{
    assert_int_equal(dlock_lock_release(l), rc);
    cleanup_now(l);
}

/* An acquire on a thread of its own, on a client of its own. */
struct waiter {
    dlock_client *c;
    const char *name;
    int64_t ttl_ms;
    dlock_acquire_options o;
    dlock_lock *lock;
    int rc;
    pthread_t thread;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    w->rc = dlock_lock_acquire(&w->lock, w->c, w->name, w->ttl_ms, &w->o);
    return NULL;
}

/* Starts the waiter and returns once it tried twice: once busy, and once
 * more after it subscribed; then it sleeps until a message. */
static void start_waiter(struct waiter *w, redisContext *redis)
{
    long long before = script_calls(redis);
    long long until = test_now_ms() + 10000LL * test_slowdown();
    w->c = client_on(group_server.url);
    assert_int_equal(pthread_create(&w->thread, NULL, wait_thread, w), 0);
    while (script_calls(redis) < before + 2 && test_now_ms() < until)
        usleep(2 * 1000);
    assert_true(script_calls(redis) >= before + 2);
}

static void join_waiter(struct waiter *w, int rc)
{
    assert_int_equal(pthread_join(w->thread, NULL), 0);
    assert_int_equal(w->rc, rc);
}

static void end_waiter(struct waiter *w)
{
    dlock_lock_free(w->lock);
    cleanup_now(w->c);
}

/* The mutex: a try (no waiting writer's mark), an extend, its status, a
 * try that finds it busy, an extend and a release by token, a waiting
 * acquire, then one that waits behind it: refused, it queues; the
 * holder's release leaves the lock to the fair release, which hands it
 * on; its release. */
static void test_wire_mutex(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(group_server.url);
    redisContext *monitor = watch(&group_server, "mutex");
    dlock_acquire_options o = try_once(), w = waiting(1000);
    dlock_lock *l = take(c, "wire:mutex", 30000, &o);
    struct waiter q = {.name = "wire:mutex", .ttl_ms = 30000, .o = waiting(30000)};
    assert_int_equal(dlock_lock_extend(l, 20000), 0);
    status(c, "wire:mutex");
    refused(c, "wire:mutex", 30000, &o, DLOCK_EBUSY);
    by_token(c, l, 20000, 0);
    release(l, DLOCK_ENOTOWNER);
    l = take(c, "wire:mutex", 30000, &w);
    start_waiter(&q, redis);
    release(l, 0);
    join_waiter(&q, 0);
    assert_int_equal(dlock_lock_release(q.lock), 0);
    end_waiter(&q);
    unwatch(monitor, &group_server, c);
    cleanup_now(c);
}

/* The semaphore: two permits, an extend, its status, a mutex refused on
 * it (and told why), an extend and a release by token (first tried as a
 * mutex's), a semaphore refused on a mutex's name. */
static void test_wire_semaphore(void **state)
{
    dlock_client *c = client_on(group_server.url);
    redisContext *monitor = watch(&group_server, "semaphore");
    dlock_acquire_options three = permits(3), o = try_once();
    dlock_lock *p1 = take(c, "wire:sem", 30000, &three);
    dlock_lock *p2 = take(c, "wire:sem", 30000, &three);
    dlock_lock *m;
    (void)state;
    assert_int_equal(dlock_lock_extend(p1, 20000), 0);
    status(c, "wire:sem");
    refused(c, "wire:sem", 30000, &o, DLOCK_EWRONGTYPE);
    by_token(c, p2, 20000, 0);
    release(p1, 0);
    cleanup_now(p2);
    m = take(c, "wire:sem-mutex", 30000, &o);
    refused(c, "wire:sem-mutex", 30000, &three, DLOCK_EWRONGTYPE);
    release(m, 0);
    unwatch(monitor, &group_server, c);
    cleanup_now(c);
}

/* The fair lock: a holder, a waiter that is handed the lock by the
 * release (and claims its TTL with an extend), one that gives up and
 * leaves the queue, its status, a plain try refused, releases. */
static void test_wire_fair(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(group_server.url);
    redisContext *monitor = watch(&group_server, "fair");
    dlock_acquire_options first = fair(0), quitter = fair(300), o = try_once();
    dlock_lock *h = take(c, "wire:fair", SLOW_MS, &first);
    struct waiter w = {.name = "wire:fair", .ttl_ms = 2 * SLOW_MS, .o = fair(30000)};
    start_waiter(&w, redis);
    release(h, 0);
    join_waiter(&w, 0);
    refused(c, "wire:fair", SLOW_MS, &quitter, DLOCK_EBUSY);
    status(c, "wire:fair");
    refused(c, "wire:fair", SLOW_MS, &o, DLOCK_EBUSY);
    by_token(c, w.lock, 0, 0);
    end_waiter(&w);
    unwatch(monitor, &group_server, c);
    cleanup_now(c);
}

/* Shared holders: two, an extend, their status, a waiting writer that
 * keeps new ones out and gets the lock when the last leaves (by token,
 * first tried as a mutex's), a writer that gives up and leaves the
 * writers' set. */
static void test_wire_shared(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = client_on(group_server.url);
    redisContext *monitor = watch(&group_server, "shared");
    dlock_acquire_options o = shared(), quitter = waiting(300);
    dlock_lock *r1 = take(c, "wire:shared", SLOW_MS, &o);
    dlock_lock *r2 = take(c, "wire:shared", SLOW_MS, &o);
    struct waiter w = {.name = "wire:shared", .ttl_ms = 30000, .o = waiting(30000)};
    assert_int_equal(dlock_lock_extend(r1, SLOW_MS), 0);
    status(c, "wire:shared");
    start_waiter(&w, redis);
    release(r1, 0);
    by_token(c, r2, 0, 0);
    join_waiter(&w, 0);
    cleanup_now(r2);
    assert_int_equal(dlock_lock_release(w.lock), 0);
    dlock_lock_free(w.lock);
    w.lock = NULL;
    end_waiter(&w);
    r1 = take(c, "wire:shared-quit", SLOW_MS, &o);
    refused(c, "wire:shared-quit", 30000, &quitter, DLOCK_EBUSY);
    release(r1, 0);
    unwatch(monitor, &group_server, c);
    cleanup_now(c);
}

/* The audit's trailer after each kind's words. */
static void test_wire_audit(void **state)
{
    const char *const urls[] = {group_server.url};
    dlock_client_options co = client_options(urls, 1);
    dlock_acquire_options o = try_once(), three = permits(3), f = fair(0), s = shared();
    dlock_client *c;
    redisContext *monitor;
    (void)state;
    co.audit = 1;
    c = client_with(&co);
    monitor = watch(&group_server, "audit");
    {
        dlock_lock *l = take(c, "wire:audit", 30000, &o);
        assert_int_equal(dlock_lock_extend(l, 20000), 0);
        release(l, 0);
        release(take(c, "wire:audit-sem", 30000, &three), 0);
        release(take(c, "wire:audit-fair", 30000, &f), 0);
        release(take(c, "wire:audit-shared", 30000, &s), 0);
    }
    unwatch(monitor, &group_server, c);
    cleanup_now(c);
}

/* A fair acquire whose grant must pass the restart check takes no
 * hand-over. A server counts as restarted until the whole seconds of its
 * uptime pass the delay (1 ms), and until its marker is set: first one
 * second, then one acquire to set it, then a millisecond. */
static void test_wire_restart_delay(void **state)
{
    redisContext *redis = *state;
    dlock_client *c = durable_client(group_server.url, 0, 1);
    dlock_acquire_options f = fair(0);
    long long until = test_now_ms() + 10000LL * test_slowdown();
    redisContext *monitor;
    dlock_lock *mark = NULL;
    while (info_field(redis, "server", "uptime_in_seconds:") < 1 && test_now_ms() < until)
        usleep(20 * 1000);
    if (dlock_lock_acquire(&mark, c, "wire:durable-mark", 30000, &f) == 0)
        release(mark, 0);
    usleep(10 * 1000);
    monitor = watch(&group_server, "restart delay");
    release(take(c, "wire:durable-fair", 30000, &f), 0);
    unwatch(monitor, &group_server, c);
    cleanup_now(c);
}

/* Three servers: the scripts loaded on connect, the fence write-back (and
 * the epoch), an extend that may repair, a release that records `freed`
 * after it and one that need not (no extend went out), shared holders of
 * several servers. Node 0's view (a status asks one
 * of the servers that hold: not always node 0). */
static void test_wire_redlock(void **state)
{
    test_redis *servers = start_servers(3);
    const char *urls[3];
    dlock_acquire_options o = try_once(), w = waiting(1000), s = shared();
    dlock_client *c;
    redisContext *monitor;
    dlock_lock *l;
    (void)state;
    for (int i = 0; i < 3; i++)
        urls[i] = servers[i].url;
    c = client_on_nodes(urls, 3, 0, 0);
    monitor = watch(&servers[0], "redlock");
    l = take(c, "wire:n3", 30000, &o);
    assert_int_equal(dlock_lock_extend(l, 20000), 0);
    release(l, 0);
    release(take(c, "wire:n3", 30000, &w), 0);
    l = take(c, "wire:n3-shared", 30000, &s);
    assert_int_equal(dlock_lock_extend(l, 20000), 0);
    release(l, 0);
    unwatch(monitor, &servers[0], c);
    cleanup_now(c);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text;
    long len;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return text;
}

/* What the calls above sent, against the record (or into it). */
static void test_wire_matches_the_record(void **state)
{
    const char *record = getenv("DLOCK_WIRE_RECORD");
    char *expected;
    FILE *f;
    (void)state;
    assert_non_null(seen.text);
    if (record && strcmp(record, "1") == 0) {
        f = fopen(WIRE_RECORD, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(seen.text, 1, seen.len, f), seen.len);
        fclose(f);
        return;
    }
    expected = read_file(WIRE_RECORD);
    assert_non_null(expected);
    f = fopen("test_wire.seen", "wb");
    if (f) {
        fwrite(seen.text, 1, seen.len, f);
        fclose(f);
    }
    if (strcmp(expected, seen.text) != 0) {
        size_t line = 1;
        for (size_t i = 0; expected[i] && expected[i] == seen.text[i]; i++)
            line += expected[i] == '\n';
        fail_msg("the words sent differ from %s at line %zu (this run's: test_wire.seen)",
                 WIRE_RECORD, line);
    }
    free(expected);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wire_mutex, setup_group_redis, cleanup_teardown),
        cmocka_unit_test_setup_teardown(test_wire_semaphore, setup_group_redis, cleanup_teardown),
        cmocka_unit_test_setup_teardown(test_wire_fair, setup_group_redis, cleanup_teardown),
        cmocka_unit_test_setup_teardown(test_wire_shared, setup_group_redis, cleanup_teardown),
        cmocka_unit_test_setup_teardown(test_wire_audit, setup_group_redis, cleanup_teardown),
        cmocka_unit_test_setup_teardown(test_wire_restart_delay, setup_group_redis, cleanup_teardown),
        cmocka_unit_test_teardown(test_wire_redlock, cleanup_teardown),
        cmocka_unit_test(test_wire_matches_the_record),
    };
    int rc = cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
    for (size_t i = 0; i < seen.n_clients; i++)
        free(seen.last[i]);
    free(seen.text);
    return rc;
}
