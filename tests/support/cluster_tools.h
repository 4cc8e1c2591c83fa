/* What the Cluster and Sentinel tests do to the servers of a topology
 * (topology.h) and read from them, by port; each fails the test when a
 * server refuses. */
#ifndef TEST_CLUSTER_TOOLS_H
#define TEST_CLUSTER_TOOLS_H

#include "topology.h"

#include <dlock.h>
#include <hiredis/hiredis.h>
#include <stddef.h>

/* A cluster (test_cluster_start()) and a primary with two replicas behind
 * quick sentinels (test_sentinels_start_quick()) of the test's own, kept
 * until teardown (cleanup.h). */
test_cluster *start_cluster(void);
test_sentinels *start_quick_sentinels(const char *name, int down_after_ms);

/* Fails the test unless `r` (the reply of the server at `port` to `what`,
 * test_command()'s) is one and no error; frees it. */
void must_succeed(int port, const char *what, redisReply *r);

/* Whether `key` exists at the server at `port`; whether that server is a
 * master (ROLE). */
int exists_at(int port, const char *key);
int is_master(int port);

/* The cluster's slot of `key`; how many keys slot `slot` holds at `port`. */
int slot_of(const test_cluster *c, const char *key);
int keys_in_slot(int port, int slot);

/* A master of `c` other than node index `not`. */
int other_master(test_cluster *c, int not);

/* Polls `done` for up to 20 s (times the slowdown); fails the test,
 * naming `what`, if it does not hold by then. */
void await_condition(int (*done)(void *), void *arg, const char *what);

/* A name of its own for each use into buf: plain, or with a hash tag.
 * Returns buf. */
const char *fresh_name(char *buf, size_t len, const char *what, int tagged);

/* `dlock -r URL acquire -t 60s NAME` (no renewal), which must succeed; its
 * token into token[33]. `dlock -r URL release NAME TOKEN`, the same. */
void cli_hold(const char *url, const char *name, char *token);
void cli_release(const char *url, const char *name, const char *token);

/* Doctor's finding `id` whose server is the one at `port` described by
 * `which` (e.g. "a master of the cluster"), or NULL. */
const dlock_finding *finding_on(const dlock_report *r, const char *id, int port,
                                const char *which);

/* No scratch key of doctor's is left on the server at `port`; no server
 * went unreached. */
void assert_no_scratch(int port);
void assert_all_reached(const dlock_report *r);

/* A slot moved by hand from the master serving a key to another. */
typedef struct cluster_migration {
    int slot, from, to;
    char from_id[41], to_id[41];
} cluster_migration;

/* Marks the slot of `key` MIGRATING on its master and IMPORTING on
 * another: the source answers ASK for it. */
void migration_start(test_cluster *c, cluster_migration *m, const char *key);

/* MIGRATEs `key`, or what is left of the slot, from source to target. */
void migrate_key(test_cluster *c, const cluster_migration *m, const char *key);
void migrate_rest(test_cluster *c, const cluster_migration *m);

/* Every master learns that the target owns the slot now: the source first,
 * so that for a moment the source sends MOVED to the target and the
 * target, still importing, MOVED back. */
void migration_finish(test_cluster *c, const cluster_migration *m);

#endif
