/* What the tests read and wait for on a server. See redis_checks.h. */
#include "redis_checks.h"

#include "cleanup.h"
#include "fixtures.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

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

/* The integer reply to a command on one key. */
static long long integer_of(redisContext *c, const char *command, const char *key)
{
    redisReply *r = run(c, "%s %s", command, key);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

int key_exists(redisContext *c, const char *key)
{
    return (int)integer_of(c, "EXISTS", key);
}

long long pttl_of(redisContext *c, const char *key)
{
    return integer_of(c, "PTTL", key);
}

long long zcard(redisContext *c, const char *key)
{
    return integer_of(c, "ZCARD", key);
}

char *string_at(redisContext *c, const char *key)
{
    redisReply *r = run(c, "GET %s", key);
    char *s = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return kept_string(s);
}

bool key_holds(redisContext *c, const char *key, const char *value)
{
    redisReply *r = run(c, "GET %s", key);
    bool yes = r->type == REDIS_REPLY_STRING && strcmp(r->str, value) == 0;
    freeReplyObject(r);
    return yes;
}

void assert_key_holds(redisContext *c, const char *key, const char *value)
{
    char *v = string_at(c, key);
    assert_non_null(v);
    assert_string_equal(v, value);
}

char *digest_of(redisContext *c)
{
    redisReply *r = run(c, "DEBUG DIGEST");
    char *d = strdup(r->str);
    freeReplyObject(r);
    return kept_string(d);
}

void assert_empty(const test_redis *server)
{
    redisContext *c = connect_to(server);
    redisReply *r = kept_reply(run(c, "DBSIZE"));
    assert_int_equal(r->integer, 0);
    cleanup_now(r);
    cleanup_now(c);
}

long long number_of(const char *s)
{
    char *end;
    long long n = strtoll(s, &end, 10);
    assert_true(end != s && (*end == '\0' || *end == '\n' || *end == ' '));
    return n;
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

long long script_calls(redisContext *c)
{
    return info_count(c, "commandstats", "cmdstat_evalsha:calls=") +
           info_count(c, "commandstats", "cmdstat_eval:calls=");
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

long long queue_length(redisContext *c, const char *name)
{
    return zcard(c, aux_key(name, "queue"));
}

bool held_by_pid(redisContext *c, const char *name, pid_t pid)
{
    redisReply *r = run(c, "GET %s", aux_key(name, "owner"));
    char pid_field[32];
    bool yes;
    snprintf(pid_field, sizeof(pid_field), "\"pid\":%ld,", (long)pid);
    yes = r->type == REDIS_REPLY_STRING && strstr(r->str, pid_field);
    freeReplyObject(r);
    return yes;
}

/* How many listen for releases of `name` (sharded, as waiters listen): on
 * its release channel, and queued waiters' processes on theirs. */
static long long listeners(redisContext *c, const char *name)
{
    const char *channel = aux_key(name, "released");
    redisReply *r = run(c, "PUBSUB SHARDNUMSUB %s", channel);
    long long n = r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer : 0;
    freeReplyObject(r);
    r = run(c, "PUBSUB SHARDCHANNELS %s:*", channel);
    n += r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : 0;
    freeReplyObject(r);
    return n;
}

/* The end of a wait: 10 s from now, times the slowdown. */
static long long ten_seconds(void)
{
    return test_now_ms() + 10000LL * test_slowdown();
}

void wait_for_zcard(redisContext *c, const char *key, long long n)
{
    long long until = ten_seconds();
    while (zcard(c, key) != n && test_now_ms() < until)
        usleep(2000);
    assert_int_equal(zcard(c, key), n);
}

void wait_for_key(redisContext *c, const char *key)
{
    long long until = ten_seconds();
    while (!key_exists(c, key) && test_now_ms() < until)
        usleep(2000);
    assert_true(key_exists(c, key));
}

void wait_for_queued(redisContext *c, const char *name, long long n)
{
    wait_for_zcard(c, aux_key(name, "queue"), n);
}

void wait_for_listener(redisContext *c, const char *name)
{
    long long until = ten_seconds();
    while (listeners(c, name) == 0 && test_now_ms() < until)
        usleep(2000);
    if (listeners(c, name) == 0)
        fail_msg("nobody subscribed to %s", aux_key(name, "released"));
}

void wait_for_script_calls(redisContext *c, long long before, long long n)
{
    long long until = ten_seconds();
    while (script_calls(c) < before + n && test_now_ms() < until)
        usleep(5 * 1000);
    assert_true(script_calls(c) >= before + n);
}
