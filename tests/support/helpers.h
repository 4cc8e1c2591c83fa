/* Small helpers shared by the integration tests. */
#ifndef TEST_HELPERS_H
#define TEST_HELPERS_H

#include "cli_runner.h"
#include "redis_server.h"

#include <dlock.h>
#include <hiredis/hiredis.h>
#include <stdint.h>

/* Opens a client on `url` with the given timeouts (0: defaults); fails the
 * test on error. */
dlock_client *open_client(const char *url, int connect_timeout_ms, int command_timeout_ms);

/* Opens a client on the n servers of `urls` (a Redlock for n > 1) with the
 * given per-node and command timeouts (0: defaults); fails the test on
 * error. */
dlock_client *open_nodes(const char *const *urls, size_t n, int node_timeout_ms,
                         int command_timeout_ms);

/* Opens a client on `url` that asks for `replicas` acknowledgements and
 * keeps the restart delay `restart_delay_ms` (0: off); fails the test on
 * error. */
dlock_client *open_durable(const char *url, int replicas, int64_t restart_delay_ms);

/* Runs a command on a plain hiredis connection and returns the reply
 * (caller frees); fails the test if there is no reply. */
redisReply *run(redisContext *c, const char *fmt, ...);

/* ZCARD of `key`. */
long long zcard(redisContext *c, const char *key);

/* Waits (10 s at most, times the slowdown) until ZCARD of `key` is n;
 * fails the test if it is not by then. */
void wait_for_zcard(redisContext *c, const char *key, long long n);

/* Waits (10 s at most, times the slowdown) until `key` exists; fails the
 * test if it does not by then. */
void wait_for_key(redisContext *c, const char *key);

/* Waits (10 s at most, times the slowdown) until someone listens on the
 * release channel of lock `name` (a waiter that found it busy); fails the
 * test if nobody does by then. */
void wait_for_listener(redisContext *c, const char *name);

/* The server's whole data set, as DEBUG DIGEST: unchanged means nothing was
 * written. Caller frees. */
char *digest(redisContext *c);

/* The whole decimal number `s` starts with (ended by the end, a newline or
 * a space), or the test fails. */
long long number_of(const char *s);

/* The string value of `key`, or NULL; caller frees. */
char *get_string(redisContext *c, const char *key);

/* PTTL of `key`. */
long long pttl_of(redisContext *c, const char *key);

/* The number after `field` in INFO `section`, separator included:
 * ("stats", "total_reads_processed:"), ("commandstats",
 * "cmdstat_evalsha:calls="). Fails the test if it is missing. */
long long info_field(redisContext *c, const char *section, const char *field);

/* The same for a counter that INFO leaves out while it is 0, as
 * commandstats does for a command never called: 0 when missing. */
long long info_count(redisContext *c, const char *section, const char *field);

/* The auxiliary key of kind `kind` ("fence", "owner", "released") of lock
 * `name`, by the wire contract's rule: "{T}:dlock:KIND:NAME", T being the
 * name's hash tag if it has one, else the name. Returns a static buffer
 * (one of 4 in turn): use it before the fifth call. */
const char *aux_key(const char *name, const char *kind);

/* Fails the test unless `server` holds no key at all: what was refused
 * wrote nothing, what was checked left nothing behind. */
void assert_empty(const test_redis *server);

/* 1 if `key` exists. */
int key_exists(redisContext *c, const char *key);

/* DIR/NAME into `path`, with any file of that name removed: a scratch file
 * in a test server's directory. */
void scratch_path(char *path, size_t len, const char *dir, const char *name);

/* Waits until the file at `path` holds a number (a child wrote it), at most
 * 10 s (times the slowdown); the number, or -1. */
long wait_for_number(const char *path);

/* The number a file starts with, or -1 if it is missing or empty. */
long read_number_file(const char *path);

/* Adds 1 to the number in `path`, slowly: a caller that is not alone in
 * this read-modify-write loses an update. Safe to call from any thread. */
void bump_number_file(const char *path);

/* A plain copy of what a dlock_status says, for assertions. */
typedef struct status_view {
    int held, has_owner;
    int64_t pttl_ms;
    uint64_t fence;
    long pid;
    int64_t since_ms;
    char host[256];
    unsigned nodes_answered, nodes_held;
} status_view;

/* dlock_status_query() (or, for node >= 0, dlock_status_query_node()) into
 * *out. Returns its code; *out is written only on success. */
int status_of(status_view *out, dlock_client *c, const char *name);
int status_of_node(status_view *out, dlock_client *c, const char *name, size_t node);

/* Acquires or fails the test with the client's message. */
dlock_lock *must_acquire(dlock_client *c, const char *name, int64_t ttl_ms,
                         const dlock_acquire_options *opts);

/* cmocka group setup/teardown: one redis-server, group_server, shared by
 * the tests of a file. */
extern test_redis group_server;
int group_setup_server(void **state);
int group_teardown_server(void **state);

/* cmocka setup/teardown: a plain connection to group_server in *state. */
int setup_group_redis(void **state);
int teardown_group_redis(void **state);

/* A scratch file in group_server's directory: scratch_path() there. */
void scratch(char *path, size_t len, const char *name);

/* `dlock ARG...` against group_server into *p, at most timeout_ms; its
 * exit status, as cli_run(). */
#define DLOCK(p, timeout_ms, ...)                                                                  \
    cli_run((p), group_server.url, (const char *const[]){__VA_ARGS__, NULL}, (timeout_ms))

/* cmocka setup/teardown: a redis-server of the test's own in *state. */
int setup_server(void **state);
int teardown_server(void **state);

#endif
