/* Five servers for the Redlock tests of a file. See nodes.h. */
#include "nodes.h"

#include "cleanup.h"
#include "clients.h"
#include "fixtures.h"
#include "redis_checks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include <cmocka.h>

test_redis nodes[NODES];

int group_setup_nodes(void **state)
{
    (void)state;
    return test_redis_start_all(nodes, NODES);
}

int group_teardown_nodes(void **state)
{
    (void)state;
    test_redis_stop_all(nodes, NODES);
    return 0;
}

int setup_nodes(void **state)
{
    (void)state;
    for (int i = 0; i < NODES; i++) {
        redisContext *r;
        if (nodes[i].pid <= 0 && test_redis_restart(&nodes[i]) < 0)
            return -1;
        test_redis_resume(&nodes[i]);
        r = test_redis_connect(&nodes[i], NULL);
        if (!r)
            return -1;
        freeReplyObject(redisCommand(r, "FLUSHALL"));
        redisFree(r);
    }
    return 0;
}

dlock_client *client_on_all_nodes(int node_timeout_ms, int command_timeout_ms)
{
    return client_on_servers(nodes, NODES, node_timeout_ms, command_timeout_ms);
}

int nodes_holding(const char *key, const char *value)
{
    int n = 0;
    for (int i = 0; i < NODES; i++) {
        redisContext *r;
        if (nodes[i].pid <= 0)
            continue;
        r = connect_to(&nodes[i]);
        n += value ? key_holds(r, key, value) : key_exists(r, key);
        cleanup_now(r);
    }
    return n;
}

void wait_for_holders(const char *key, const char *value, int n)
{
    long long until = test_now_ms() + 5000LL * test_slowdown();
    while (nodes_holding(key, value) < n && test_now_ms() < until)
        usleep(5000);
}

void on_nodes(int from, int to, const char *fmt, const char *key)
{
    for (int i = from; i < to; i++) {
        redisContext *r = connect_to(&nodes[i]);
        freeReplyObject(run(r, fmt, key));
        cleanup_now(r);
    }
}
