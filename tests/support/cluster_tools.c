/* What the Cluster and Sentinel tests do to a topology. See
 * cluster_tools.h. */
#include "cluster_tools.h"

#include "cleanup.h"
#include "cli_runner.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void stop_cluster(void *c)
{
    test_cluster_stop(c);
    free(c);
}

test_cluster *start_cluster(void)
{
    test_cluster *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    cleanup_keep(c, stop_cluster);
    if (test_cluster_start(c) != 0)
        fail_msg("cannot start a cluster");
    return c;
}

static void stop_sentinels(void *s)
{
    test_sentinels_stop(s);
    free(s);
}

test_sentinels *start_quick_sentinels(const char *name, int down_after_ms)
{
    test_sentinels *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    cleanup_keep(s, stop_sentinels);
    if (test_sentinels_start_quick(s, name, down_after_ms) != 0)
        fail_msg("cannot start the sentinels of %s", name);
    return s;
}

void must_succeed(int port, const char *what, redisReply *r)
{
    if (!r || r->type == REDIS_REPLY_ERROR) {
        char said[256];
        snprintf(said, sizeof(said), "%s", r ? r->str : "no reply");
        freeReplyObject(r);
        fail_msg("%d: %s: %s", port, what, said);
    }
    freeReplyObject(r);
}

/* The integer reply `r` (freed), or `otherwise`. */
static long long integer_or(redisReply *r, long long otherwise)
{
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : otherwise;
    freeReplyObject(r);
    return v;
}

int exists_at(int port, const char *key)
{
    return integer_or(test_command(port, "EXISTS %s", key), 0) == 1;
}

int is_master(int port)
{
    redisReply *r = test_command(port, "ROLE");
    int yes = r && r->type == REDIS_REPLY_ARRAY && strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    return yes;
}

int slot_of(const test_cluster *c, const char *key)
{
    return (int)integer_or(test_command(c->nodes[0].port, "CLUSTER KEYSLOT %s", key), -1);
}

int keys_in_slot(int port, int slot)
{
    return (int)integer_or(test_command(port, "CLUSTER COUNTKEYSINSLOT %d", slot), -1);
}

int other_master(test_cluster *c, int not)
{
    int m = test_cluster_node_with_role(c, "master", 0);
    return m == not ? test_cluster_node_with_role(c, "master", 1) : m;
}

void await_condition(int (*done)(void *), void *arg, const char *what)
{
    long long deadline = test_now_ms() + 20000LL * test_slowdown();
    while (!done(arg)) {
        if (test_now_ms() > deadline)
            fail_msg("%s did not happen in time", what);
        usleep(50000);
    }
}

const char *fresh_name(char *buf, size_t len, const char *what, int tagged)
{
    static unsigned seed;
    int r;
    if (!seed)
        seed = (unsigned)getpid();
    r = rand_r(&seed);
    if (tagged)
        snprintf(buf, len, "{%s%d}:%d", what, r % 1000, r);
    else
        snprintf(buf, len, "%s-%d", what, r);
    return buf;
}

void cli_hold(const char *url, const char *name, char *token)
{
    const char *args[] = {"-r", url, "acquire", "-t", "60s", name, NULL};
    cli_proc p;
    if (cli_run(&p, NULL, args, 10000 * test_slowdown()) != 0)
        fail_msg("acquire %s: %s", name, p.err);
    assert_int_equal(sscanf(p.out, "%32s", token), 1);
}

void cli_release(const char *url, const char *name, const char *token)
{
    const char *args[] = {"-r", url, "release", name, token, NULL};
    cli_proc p;
    if (cli_run(&p, NULL, args, 10000 * test_slowdown()) != 0)
        fail_msg("release %s: %s", name, p.err);
}

const dlock_finding *finding_on(const dlock_report *r, const char *id, int port,
                                const char *which)
{
    char server[32];
    snprintf(server, sizeof(server), "127.0.0.1:%d, ", port);
    for (size_t i = 0; i < dlock_report_count(r); i++) {
        const dlock_finding *f = dlock_report_finding(r, i);
        if (strcmp(f->id, id) == 0 && strncmp(f->server, server, strlen(server)) == 0 &&
            strstr(f->server, which))
            return f;
    }
    return NULL;
}

void assert_no_scratch(int port)
{
    redisReply *r = test_command(port, "SCAN 0 MATCH *dlock-doctor* COUNT 100000");
    size_t left;
    assert_non_null(r);
    left = r->element[1]->elements;
    freeReplyObject(r);
    assert_int_equal(left, 0);
}

void assert_all_reached(const dlock_report *r)
{
    for (size_t i = 0; i < dlock_report_count(r); i++)
        assert_string_not_equal(dlock_report_finding(r, i)->id, "UNREACHABLE");
}

void migration_start(test_cluster *c, cluster_migration *m, const char *key)
{
    int from_port, to_port;
    m->slot = slot_of(c, key);
    m->from = test_cluster_owner(c, key);
    assert_true(m->from >= 0);
    m->to = other_master(c, m->from);
    from_port = c->nodes[m->from].port;
    to_port = c->nodes[m->to].port;
    test_cluster_node_id(from_port, m->from_id);
    test_cluster_node_id(to_port, m->to_id);
    must_succeed(to_port, "IMPORTING",
                 test_command(to_port, "CLUSTER SETSLOT %d IMPORTING %s", m->slot, m->from_id));
    must_succeed(from_port, "MIGRATING",
                 test_command(from_port, "CLUSTER SETSLOT %d MIGRATING %s", m->slot, m->to_id));
}

void migrate_key(test_cluster *c, const cluster_migration *m, const char *key)
{
    int src = c->nodes[m->from].port;
    must_succeed(src, "MIGRATE",
                 test_command(src, "MIGRATE 127.0.0.1 %d %s 0 5000", c->nodes[m->to].port, key));
}

void migrate_rest(test_cluster *c, const cluster_migration *m)
{
    int src = c->nodes[m->from].port;
    redisReply *keys = test_command(src, "CLUSTER GETKEYSINSLOT %d 100", m->slot);
    assert_non_null(keys);
    for (size_t i = 0; i < keys->elements; i++)
        migrate_key(c, m, keys->element[i]->str);
    freeReplyObject(keys);
}

static void set_slot_node(test_cluster *c, const cluster_migration *m, int i)
{
    must_succeed(c->nodes[i].port, "SETSLOT NODE",
                 test_command(c->nodes[i].port, "CLUSTER SETSLOT %d NODE %s", m->slot, m->to_id));
}

void migration_finish(test_cluster *c, const cluster_migration *m)
{
    set_slot_node(c, m, m->from);
    set_slot_node(c, m, m->to);
    for (int i = 0; i < TEST_CLUSTER_NODES; i++)
        if (i != m->from && i != m->to && is_master(c->nodes[i].port))
            set_slot_node(c, m, i);
}
