/* Five servers for the Redlock tests of a file, started once by the
 * group; every test starts with all five up, running and empty. */
#ifndef TEST_NODES_H
#define TEST_NODES_H

#include "redis_server.h"

#include <dlock.h>

#define NODES 5

extern test_redis nodes[NODES];

/* cmocka group setup/teardown: start and stop the five. */
int group_setup_nodes(void **state);
int group_teardown_nodes(void **state);

/* cmocka setup: each of the five restarted if it was killed, resumed if
 * it was paused, and emptied. */
int setup_nodes(void **state);

/* A client on the five (kept), with a per-node and a command timeout (0:
 * the default). */
dlock_client *client_on_all_nodes(int node_timeout_ms, int command_timeout_ms);

/* How many live nodes hold `value` at `key` (value NULL: hold the key at
 * all). */
int nodes_holding(const char *key, const char *value);

/* Waits until `n` live nodes hold `value` at `key`, at most 5 s (times the
 * slowdown): a call decided by a majority may still be on its way to the
 * rest. */
void wait_for_holders(const char *key, const char *value, int n);

/* Runs `fmt` (one %s: key) on nodes [from, to). */
void on_nodes(int from, int to, const char *fmt, const char *key);

#endif
