/* The tests' clients and locks: option builders, and openers and
 * acquires that fail the test with the library's message and keep what
 * they return until teardown (cleanup.h). */
#ifndef TEST_CLIENTS_H
#define TEST_CLIENTS_H

#include "redis_server.h"

#include <dlock.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Clients ---- */

/* The defaults, on the n URLs of `urls` (which must outlive the open). */
dlock_client_options client_options(const char *const *urls, size_t n);

/* A client opened with `o`. */
dlock_client *client_with(const dlock_client_options *o);

/* A client on one URL: with the defaults; with a connect and a command
 * timeout (0: the default). */
dlock_client *client_on(const char *url);
dlock_client *client_with_timeouts(const char *url, int connect_timeout_ms,
                                   int command_timeout_ms);

/* A client on n URLs, a Redlock for n > 1, with a per-node and a command
 * timeout (0: the default). */
dlock_client *client_on_nodes(const char *const *urls, size_t n, int node_timeout_ms,
                              int command_timeout_ms);

/* The same on n servers of the test's. */
dlock_client *client_on_servers(const test_redis *servers, size_t n, int node_timeout_ms,
                                int command_timeout_ms);

/* A client on `url` that asks for `replicas` acknowledgements and keeps
 * the restart delay `restart_delay_ms` (0: off). */
dlock_client *durable_client(const char *url, int replicas, int64_t restart_delay_ms);

/* The URLs of n servers, as an array; as one list "URL,URL,..." (what
 * DLOCK_REDIS takes). Both kept. */
const char **urls_of(const test_redis *servers, size_t n);
const char *url_list(const test_redis *servers, size_t n);

/* ---- Acquire options ---- */

dlock_acquire_options wait_options(int64_t wait_ms);
dlock_acquire_options fair_options(int64_t lease_ms, int64_t wait_ms);
dlock_acquire_options permits_options(unsigned permits);
dlock_acquire_options shared_options(int64_t wait_ms);

/* ---- Locks ---- */

/* Acquires, expecting `want`: the lock if that is 0, else NULL; another
 * outcome fails the test, with the client's message. */
dlock_lock *expect_acquire(int want, dlock_client *c, const char *name, int64_t ttl_ms,
                           const dlock_acquire_options *opts);

/* expect_acquire(0, ...). */
dlock_lock *take(dlock_client *c, const char *name, int64_t ttl_ms,
                 const dlock_acquire_options *opts);

/* A fair lock on `name` for 30 s with the presence lease `lease_ms`, on a
 * client of its own on `url`: the holder a fair queue forms behind. */
dlock_lock *fair_holder(const char *url, const char *name, int64_t lease_ms);

/* Takes the lock and releases it (both must succeed); its fence. */
uint64_t take_and_release(dlock_client *c, const char *name, int64_t ttl_ms,
                          const dlock_acquire_options *opts);

/* A handle on `token`'s hold of `name` (dlock_lock_adopt), which must be
 * a well-formed token. */
dlock_lock *adopt(dlock_client *c, const char *name, const char *token);

/* Keeps what the test got from the library itself (NULL is ignored). */
dlock_lock *kept_lock(dlock_lock *lock);
dlock_status *kept_status(dlock_status *status);
dlock_report *kept_report(dlock_report *report);
dlock_audit *kept_audit(dlock_audit *audit);
dlock_names *kept_names(dlock_names *names);

/* Three servers of the test's own refuse `opts` on `name` (DLOCK_EINVAL,
 * with `says` in the message), and none of them is written. */
void assert_refused_by_three(const dlock_acquire_options *opts, const char *name,
                             const char *says);

/* ---- Status ---- */

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

/* dlock_status_query() (or, for one node, dlock_status_query_node()) into
 * *out. Returns its code; *out is written only on success. */
int status_of(status_view *out, dlock_client *c, const char *name);
int status_of_node(status_view *out, dlock_client *c, const char *name, size_t node);

#endif
