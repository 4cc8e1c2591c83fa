/* A client's lanes: the client struct (its servers, the connections of a
 * lane per thread that talks to them, its last error) and the helpers that
 * work on a lane, in lane.c. The API fills the struct (api/client.c); the
 * engine reads it. */
#ifndef DLOCK_LANE_H
#define DLOCK_LANE_H

#include "conn.h"
#include "dlock.h"
#include "fanout.h"
#include "metrics.h"
#include "owner.h"
#include "stats.h"
#include "url.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DLOCK__ERRMSG_MAX 1024

struct addrinfo;
struct dlock__renewer;
struct dlock__book;

/* The connections one thread uses, one per node, and its last failure. */
typedef struct dlock__lane {
    dlock__conn conns[DLOCK__NODES_MAX];
    char errmsg[DLOCK__ERRMSG_MAX];
    int64_t wait_end_ns; /* a wait's end, which its acquires and its queue's leave keep to
                            (0: none; set by wait.c, ended by the acquire after the leave) */
} dlock__lane;

struct dlock_client {
    size_t n; /* nodes */
    dlock__endpoint endpoints[DLOCK__NODES_MAX];
    struct addrinfo *addrs[DLOCK__NODES_MAX]; /* resolved once, at open */
    /* The cluster nodes each endpoint's lanes learnt (book.h), so that any
     * lane can find the map without the URL's node. */
    struct dlock__book *books[DLOCK__NODES_MAX];
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int64_t node_timeout_ms; /* 0: derived from each call's TTL */
    int64_t fence_ttl_ms;
    double drift_factor;
    int replicas;             /* WAIT for this many after a grant or extend; 0: none */
    int64_t restart_delay_ms; /* the restart rule; 0: off */
    bool audit;               /* grants and ends append to the name's audit stream */
    unsigned audit_maxlen;    /* the stream's cap (XADD MAXLEN ~) */
    char host[DLOCK__HOST_MAX]; /* for owner records */
    /* Every script a connection loads (with several nodes), NULL-terminated:
     * the kinds' (the API's choice; the engine knows no kind). */
    const char *const *scripts;

    dlock__lane main;                     /* the caller's thread */
    dlock__conn subs[DLOCK__NODES_MAX];   /* subscribers, for waiting */
    bool subs_plain[DLOCK__NODES_MAX];    /* subs[i] refused SSUBSCRIBE: SUBSCRIBE there */
    char *kept_channel; /* a queued waiter's channel, still subscribed where kept[i] */
    bool kept[DLOCK__NODES_MAX];
    struct dlock__renewer *renewer;       /* started with the first auto-renewed lock */
    int cancel_fd;                        /* eventfd that dlock_client_cancel() writes */
    atomic_bool cancel_requested;
    uint64_t rng;                         /* jitter, not secrets */
    struct dlock__token_pool *tokens;     /* random bytes for owner tokens */
    struct ssl_ctx_st *tls_ctx;           /* when a server speaks TLS */
    char *tls_name;                       /* tls_sni option, or NULL */
    dlock__stats stats;                   /* dlock_client_stats() */
    dlock__node_counters node_counters[DLOCK__NODES_MAX]; /* each lane's connections count here */
    dlock__metrics metrics;               /* per name: dlock_client_metrics() */
    /* Why these servers cannot hold a lock ("" when they can), and the
     * doctor's ID for it: set only with the `inspect` option, which opens
     * what a lock client refuses. */
    char refusal[DLOCK__ERRMSG_MAX / 4];
    const char *refusal_id;
};

/* Prepares a lane with one closed connection per node. Returns 0 or
 * DLOCK_ENOMEM. */
int dlock__lane_init(dlock_client *c, dlock__lane *lane);
void dlock__lane_destroy(dlock_client *c, dlock__lane *lane);

/* Connections for the client's subscribers (push mode). Returns 0 or
 * DLOCK_ENOMEM. */
int dlock__subscribers_init(dlock_client *c);

/* The start of every API call that takes a client and an out-parameter:
 * clears the client's message; DLOCK_EINVAL if either is NULL. */
int dlock__call_start(dlock_client *c, const void *out);

/* Majority of the client's nodes. */
size_t dlock__quorum(const dlock_client *c);

/* Deadline of one node's reply for a call about a lock with `ttl_ms` (0 when
 * unknown): max(5 ms, ttl/20) unless set, capped by the command timeout. */
int64_t dlock__node_deadline(const dlock_client *c, int64_t ttl_ms, int64_t now_ns);

void dlock__set_error(dlock__lane *lane, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds to the lane's message (it stays cut at its size). */
void dlock__append_error(dlock__lane *lane, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends "; " and the details of every failed node to the lane's message;
 * results[i] is the answer of conns[i]. */
void dlock__append_node_errors(dlock__lane *lane, const dlock__conn *conns,
                               const dlock__node_result *results, size_t n);

/* DLOCK_EINVAL (with the message set) if two of the lane's connections
 * reached one server (the same address after routing, or the same run_id),
 * else 0. Connections whose run_id
 * is still to come are given `grace_ns` for it: a server that answers at
 * all answers that soon. Servers that do not allow INFO are not compared:
 * the check at open, by address, is all there is. */
int dlock__lane_check_distinct(const dlock_client *c, dlock__lane *lane, int64_t grace_ns);

/* A random number in [0, bound), for jitter. */
uint64_t dlock__random_below(dlock_client *c, uint64_t bound);

#endif
