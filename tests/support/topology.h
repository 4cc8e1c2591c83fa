/* Test topologies of real servers on loopback: a Redis Cluster of three
 * masters with a replica each, and a primary with a replica watched by
 * three sentinels. Each is started once per test group. */
#ifndef TEST_TOPOLOGY_H
#define TEST_TOPOLOGY_H

#include "redis_server.h"

#include <hiredis/hiredis.h>

#define TEST_CLUSTER_NODES 6
#define TEST_SENTINELS 3

typedef struct test_cluster {
    test_redis nodes[TEST_CLUSTER_NODES];
} test_cluster;

/* Starts six cluster-enabled servers and makes them one cluster (three
 * masters, a replica each) with redis-cli --cluster create; returns when
 * every node says cluster_state:ok and every replica is in sync. 0, or -1
 * after printing why. */
int test_cluster_start(test_cluster *c);
/* The same with another cluster-node-timeout than 3000 ms: a small one
 * fails a dead master over within seconds. */
int test_cluster_start_with_timeout(test_cluster *c, int node_timeout_ms);
void test_cluster_stop(test_cluster *c);

/* The node that serves `key` now: the master of its slot, which answers a
 * read of it where the others answer MOVED. -1 if none does. */
int test_cluster_owner(test_cluster *c, const char *key);

/* What the node at `port` says to CLUSTER MYID, into id[41] ("" if it
 * does not answer). */
void test_cluster_node_id(int port, char *id);

/* The index of the replica of the master at node index `master` (the node
 * whose ROLE names its port as master), or -1. */
int test_cluster_replica_of(const test_cluster *c, int master);

/* The index of a node whose ROLE is "slave"/"master" (`want`), the n-th
 * such; -1 if none. */
int test_cluster_node_with_role(test_cluster *c, const char *want, int nth);

/* Waits until every node says cluster_state:ok, at most `ms` (times the
 * slowdown). 0 or -1. */
int test_cluster_wait_ok(test_cluster *c, int ms);

typedef struct test_sentinels {
    test_redis primary, replica;
    test_redis replica2; /* test_sentinels_start_quick() only */
    test_redis sentinels[TEST_SENTINELS];
    int replicas;
    char name[32];
    char url[256]; /* redis-sentinel://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/#name */
} test_sentinels;

/* Starts a primary, its replica (in sync before this returns) and three
 * sentinels that know both. 0, or -1 after printing why. */
int test_sentinels_start(test_sentinels *s, const char *name);

/* The same with two replicas, and sentinels that take a silent primary for
 * down after `down_after_ms` and give a failover 2 s: for tests that kill
 * the primary. */
int test_sentinels_start_quick(test_sentinels *s, const char *name, int down_after_ms);
void test_sentinels_stop(test_sentinels *s);

/* The port of the primary the sentinels name now, or -1. */
int test_sentinels_primary_port(test_sentinels *s);

/* The server among primary and replicas listening on `port`. */
test_redis *test_sentinels_server(test_sentinels *s, int port);

/* A plain hiredis reply to a command on the server at `port` (caller
 * frees); NULL if it did not answer. */
redisReply *test_command(int port, const char *fmt, ...);

#endif
