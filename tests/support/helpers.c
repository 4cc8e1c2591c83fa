/* Small helpers shared by the integration tests. See helpers.h. */
#include "helpers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

dlock_client *open_client(const char *url, int connect_timeout_ms, int command_timeout_ms)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *client = NULL;
    char why[256];
    int rc;
    opts.urls = &url;
    opts.n_urls = 1;
    opts.connect_timeout_ms = connect_timeout_ms;
    opts.command_timeout_ms = command_timeout_ms;
    rc = dlock_client_open(&client, &opts, why, sizeof(why));
    if (rc != 0)
        fail_msg("dlock_client_open(%s): %s: %s", url, dlock_strerror(rc), why);
    return client;
}

dlock_client *open_nodes(const char *const *urls, size_t n, int node_timeout_ms,
                         int command_timeout_ms)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    char why[256];
    opts.urls = urls;
    opts.n_urls = n;
    opts.node_timeout_ms = node_timeout_ms;
    opts.command_timeout_ms = command_timeout_ms;
    if (dlock_client_open(&c, &opts, why, sizeof(why)) != 0)
        fail_msg("open: %s", why);
    return c;
}

dlock_client *open_durable(const char *url, int replicas, int64_t restart_delay_ms)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    char why[256];
    o.urls = &url;
    o.n_urls = 1;
    o.replicas = replicas;
    o.restart_delay_ms = restart_delay_ms;
    if (dlock_client_open(&c, &o, why, sizeof(why)) < 0)
        fail_msg("dlock_client_open: %s", why);
    return c;
}

redisReply *run(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *reply;
    va_start(ap, fmt);
    reply = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!reply)
        fail_msg("redis command '%s' failed: %s", fmt, c->errstr);
    return reply;
}

long long zcard(redisContext *c, const char *key)
{
    redisReply *r = run(c, "ZCARD %s", key);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

void wait_for_zcard(redisContext *c, const char *key, long long n)
{
    long long until = test_now_ms() + 10000LL * test_slowdown();
    while (zcard(c, key) != n && test_now_ms() < until)
        usleep(2000);
    assert_int_equal(zcard(c, key), n);
}

void wait_for_key(redisContext *c, const char *key)
{
    long long until = test_now_ms() + 10000LL * test_slowdown();
    while (!key_exists(c, key) && test_now_ms() < until)
        usleep(2000);
    assert_true(key_exists(c, key));
}

/* How many listen on the release channel of `name`. */
static long long listeners(redisContext *c, const char *name)
{
    redisReply *r = run(c, "PUBSUB NUMSUB %s", aux_key(name, "released"));
    long long n = r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer : 0;
    freeReplyObject(r);
    return n;
}

void wait_for_listener(redisContext *c, const char *name)
{
    long long until = test_now_ms() + 10000LL * test_slowdown();
    while (listeners(c, name) == 0 && test_now_ms() < until)
        usleep(2000);
    if (listeners(c, name) == 0)
        fail_msg("nobody subscribed to %s", aux_key(name, "released"));
}

char *digest(redisContext *c)
{
    redisReply *r = run(c, "DEBUG DIGEST");
    char *d = strdup(r->str);
    freeReplyObject(r);
    return d;
}

long long number_of(const char *s)
{
    char *end;
    long long n = strtoll(s, &end, 10);
    assert_true(end != s && (*end == '\0' || *end == '\n' || *end == ' '));
    return n;
}

char *get_string(redisContext *c, const char *key)
{
    redisReply *r = run(c, "GET %s", key);
    char *s = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return s;
}

long long pttl_of(redisContext *c, const char *key)
{
    redisReply *r = run(c, "PTTL %s", key);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* The number after `field` in INFO `section`; *found tells if it is there. */
static long long find_info_field(redisContext *c, const char *section, const char *field,
                                 int *found)
{
    redisReply *r = run(c, "INFO %s", section);
    const char *at = r->type == REDIS_REPLY_STRING ? strstr(r->str, field) : NULL;
    long long v = at ? strtoll(at + strlen(field), NULL, 10) : 0;
    freeReplyObject(r);
    *found = at != NULL;
    return v;
}

long long info_field(redisContext *c, const char *section, const char *field)
{
    int found;
    long long v = find_info_field(c, section, field, &found);
    if (!found)
        fail_msg("INFO %s has no %s", section, field);
    return v;
}

long long info_count(redisContext *c, const char *section, const char *field)
{
    int found;
    return find_info_field(c, section, field, &found);
}

int key_exists(redisContext *c, const char *key)
{
    redisReply *r = run(c, "EXISTS %s", key);
    int v = (int)r->integer;
    freeReplyObject(r);
    return v;
}

void assert_empty(const test_redis *server)
{
    redisContext *c = test_redis_connect(server, NULL);
    redisReply *r;
    assert_non_null(c);
    r = run(c, "DBSIZE");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    redisFree(c);
}

dlock_lock *must_acquire(dlock_client *c, const char *name, int64_t ttl_ms,
                         const dlock_acquire_options *opts)
{
    dlock_lock *lock = NULL;
    int rc = dlock_lock_acquire(&lock, c, name, ttl_ms, opts);
    if (rc != 0)
        fail_msg("acquire %s: %s: %s", name, dlock_err_name(rc), dlock_client_errmsg(c));
    return lock;
}

int setup_server(void **state)
{
    test_redis *server = calloc(1, sizeof(*server));
    *state = server;
    return server ? test_redis_start(server, NULL) : -1;
}

int teardown_server(void **state)
{
    test_redis_stop(*state);
    free(*state);
    return 0;
}

test_redis group_server;

int setup_group_redis(void **state)
{
    *state = test_redis_connect(&group_server, NULL);
    return *state ? 0 : -1;
}

int teardown_group_redis(void **state)
{
    redisFree(*state);
    return 0;
}

void scratch(char *path, size_t len, const char *name)
{
    scratch_path(path, len, group_server.dir, name);
}

int group_setup_server(void **state)
{
    (void)state;
    return test_redis_start(&group_server, NULL);
}

int group_teardown_server(void **state)
{
    (void)state;
    test_redis_stop(&group_server);
    return 0;
}

long read_number_file(const char *path)
{
    char buf[32] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = '\0';
    fclose(f);
    return buf[0] ? strtol(buf, NULL, 10) : -1;
}

void bump_number_file(const char *path)
{
    long value = read_number_file(path);
    FILE *f;
    usleep(1000); /* widen the race a missing lock would lose */
    f = fopen(path, "w");
    if (!f)
        return; /* the count comes out short: the caller's test fails */
    fprintf(f, "%ld\n", value + 1);
    fclose(f);
}

const char *aux_key(const char *name, const char *kind)
{
    static char bufs[4][2200];
    static int next;
    char *out = bufs[next++ % 4];
    const char *open = strchr(name, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;
    if (close && close > open + 1)
        snprintf(out, sizeof(bufs[0]), "{%.*s}:dlock:%s:%s", (int)(close - open - 1), open + 1,
                 kind, name);
    else
        snprintf(out, sizeof(bufs[0]), "{%s}:dlock:%s:%s", name, kind, name);
    return out;
}

static void view_of(status_view *out, dlock_status *st)
{
    const dlock_holder *h = dlock_status_holder(st, 0);
    memset(out, 0, sizeof(*out));
    out->held = dlock_status_held(st);
    out->has_owner = h != NULL;
    out->pttl_ms = dlock_status_ttl_ms(st);
    out->fence = dlock_status_fence(st);
    if (h) {
        out->pid = h->pid;
        out->since_ms = h->since_ms;
        snprintf(out->host, sizeof(out->host), "%s", h->host);
    }
    out->nodes_answered = dlock_status_nodes_answered(st);
    out->nodes_held = dlock_status_nodes_held(st);
    dlock_status_free(st);
}

int status_of(status_view *out, dlock_client *c, const char *name)
{
    dlock_status *st = NULL;
    int rc = dlock_status_query(&st, c, name);
    if (rc == 0)
        view_of(out, st);
    return rc;
}

int status_of_node(status_view *out, dlock_client *c, const char *name, size_t node)
{
    dlock_status *st = NULL;
    int rc = dlock_status_query_node(&st, c, name, node);
    if (rc == 0)
        view_of(out, st);
    return rc;
}

void scratch_path(char *path, size_t len, const char *dir, const char *name)
{
    snprintf(path, len, "%s/%s", dir, name);
    unlink(path);
}

long wait_for_number(const char *path)
{
    long long until = test_now_ms() + 10000LL * test_slowdown();
    long v;
    while ((v = read_number_file(path)) < 0 && test_now_ms() < until)
        usleep(10000);
    return v;
}
